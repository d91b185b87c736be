// Calls waiting for a person's yes, answered in the dashboard in a real browser, against a real
// `switchboard serve` started by tests/it/approvals.rs
// (`the_dashboard_answers_calls_waiting_for_a_yes_in_a_real_browser`) whose default profile asks
// before `demo__add`. The editor is the official TypeScript SDK's client here in Node: its call
// shows as a card over the page (editor, tool, server, arguments), Allow runs it, Deny gives the
// editor a tool error that says so, "Allow for this session" lets the next call run without a
// card. A call whose arguments are padded past a glance, with a command at their end and numbers
// no JavaScript number holds, shows their exact text, in full, and cannot be allowed until the
// person has expanded it. Screenshots, in the light and the dark theme, go to
// SWITCHBOARD_SCREENSHOTS.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

import { assertNoPageErrors, openDashboard, requiredEnv, screenshots } from "./browser.mjs";

const DASHBOARD_URL = requiredEnv("SWITCHBOARD_URL");
const MCP_URL = requiredEnv("SWITCHBOARD_MCP_URL");
const SCREENSHOTS = requiredEnv("SWITCHBOARD_SCREENSHOTS");

/** @type {import("playwright-core").Page} */
let page;
let closeBrowser;
const pageErrors = [];
const editor = new Client({ name: "careful editor", version: "1.0.0" });

before(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await editor.connect(new StreamableHTTPClientTransport(new URL(MCP_URL)));
  ({ page, close: closeBrowser } = await openDashboard(DASHBOARD_URL, pageErrors));
});

after(async () => {
  await closeBrowser?.();
  await editor.close();
});

/** Calls `demo__add` with `a` and 3; the promise settles when the call is answered. */
function add(a) {
  return editor.callTool({ name: "demo__add", arguments: { a, b: 3 } });
}

/** The text of a tool result's first block. */
function text(result) {
  return result.content?.[0]?.text ?? "";
}

test("a call waits for a yes in the dashboard, and runs or not as the person says", async () => {
  const card = page.getByTestId("approval");

  const allowed = add(2);
  await card.waitFor();
  await assertCard(card, 2);
  await screenshots(page, SCREENSHOTS, "approval", card);
  await card.getByRole("button", { name: "Allow", exact: true }).click();
  assert.equal(text(await allowed), "5");
  await card.waitFor({ state: "detached" });

  const denied = add(4);
  await card.waitFor();
  await card.getByRole("button", { name: "Deny" }).click();
  const answer = await denied;
  assert.equal(answer.isError, true);
  assert.match(text(answer), /the dashboard denied this call/);
  await card.waitFor({ state: "detached" });

  const forSession = add(5);
  await card.waitFor();
  await card.getByRole("button", { name: "Allow for this session" }).click();
  assert.equal(text(await forSession), "8");
  assert.equal(text(await add(6)), "9", "the same tool again, without asking");
  assert.equal(await card.count(), 0);
  assertNoPageErrors(pageErrors);
});

test("a padded call shows its exact arguments in full, and Allow waits until they are expanded", async () => {
  const post = await rawSession("padding editor");
  const args = `{"a": 1e400, "b": 12345678901234567890, "note": "${"harmless ".repeat(300)}", "command": "rm -rf ~"}`;
  const answer = post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo__add","arguments":${args}}}`);
  const card = page.getByTestId("approval");
  await card.waitFor();
  const shown = card.getByTestId("approval-arguments");
  assert.equal(await shown.textContent(), args, "the exact text, every character of it");
  const allow = card.getByRole("button", { name: "Allow", exact: true });
  assert.equal(await allow.isDisabled(), true, "cut, so Allow waits");
  assert.equal(await card.getByRole("button", { name: "Allow for this session" }).isDisabled(), true);
  await card.getByRole("button", { name: /^Show all/ }).click();
  assert.equal(await allow.isEnabled(), true);
  assert.equal(await shown.isVisible(), true);
  const box = await shown.evaluate((element) => ({
    hiddenDown: element.scrollHeight - element.clientHeight,
    hiddenAcross: element.scrollWidth - element.clientWidth,
  }));
  assert.deepEqual(box, { hiddenDown: 0, hiddenAcross: 0 }, "nothing of the text is scrolled out of view");
  assert.equal(await card.getByText("rm -rf ~").isVisible(), true);
  await screenshots(page, SCREENSHOTS, "approval-padded", card);
  await card.getByRole("button", { name: "Deny" }).click();
  assert.match(await answer, /the dashboard denied this call/);
  await card.waitFor({ state: "detached" });
  assertNoPageErrors(pageErrors);
});

/**
 * Opens a session of its own with the MCP endpoint, as an editor named `name`; gives a function
 * that posts a message's text exactly as written (an SDK would re-render its numbers) and
 * settles with the answer's text.
 * @param {string} name
 * @returns {Promise<(body: string) => Promise<string>>}
 */
async function rawSession(name) {
  /** @type {Record<string, string>} */
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  const opening = await fetch(MCP_URL, {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name, version: "1" } } }),
  });
  await opening.text();
  headers["mcp-session-id"] = opening.headers.get("mcp-session-id") ?? "";
  headers["mcp-protocol-version"] = "2025-11-25";
  const initialized = await fetch(MCP_URL, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) });
  await initialized.text();
  return async (body) => await (await fetch(MCP_URL, { method: "POST", headers, body })).text();
}

/** The card says who asks, for what, of which server, with which arguments. */
async function assertCard(card, a) {
  const shown = (await card.textContent()) ?? "";
  assert.match(shown, /careful editor wants to run demo__add/);
  assert.match(shown, /add of demo · profile default/);
  // What will happen, not what happened: the card waits.
  assert.match(shown, /asked at \d\d:\d\d:\d\d · denied at \d\d:\d\d:\d\d if nobody answers/);
  assert.doesNotMatch(shown, /without an answer/);
  const args = JSON.parse((await card.locator("pre").textContent()) ?? "{}");
  assert.deepEqual(args, { a, b: 3 });
}
