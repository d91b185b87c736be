// The Activity page in a real browser, against a real `switchboard serve` started by
// tests/it/ui.rs (`the_activity_page_works_...`) in front of the built-in demo server, with
// `[activity] payloads = true`. Before the browser opens, the Rust side made nine calls through
// /mcp, oldest first:
// - ada-editor: echo "hello 1", "hello 2", "hello 3"; add 2 + 3; fail "no luck" (a tool error);
//   sleep 300 ms;
// - bob-editor: echo "from bob"; demo__nothing (no server has it: an error); echo of 70,000
//   characters (its arguments are cut in the log).
// Calls made while the page is open go through /mcp from here, as a third editor would.
// Another serve (SWITCHBOARD_OFF_URL) has `[activity] enabled = false`, and found its log's file
// unreadable at start (it set it aside and began a new one).
//
// The tests share the page and run in order. Screenshots, in the light and the dark theme, go to
// SWITCHBOARD_SCREENSHOTS (artifacts/ui/).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";

import { assertNoPageErrors, eventually, openDashboard, requiredEnv, screenshots } from "./browser.mjs";

const DASHBOARD_URL = requiredEnv("SWITCHBOARD_URL");
const MCP_URL = requiredEnv("SWITCHBOARD_MCP_URL");
const SCREENSHOTS = requiredEnv("SWITCHBOARD_SCREENSHOTS");
const OFF_URL = requiredEnv("SWITCHBOARD_OFF_URL");
const OFF_MCP_URL = requiredEnv("SWITCHBOARD_OFF_MCP_URL");
const BASE = new URL(DASHBOARD_URL).origin;

/** @type {import("playwright-core").Page} */
let page;
let closeBrowser;
const pageErrors = [];
/** Calls in the log so far; the tests that add some count them here. */
let total = 9;

before(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  ({ page, close: closeBrowser } = await openDashboard(DASHBOARD_URL, pageErrors));
});

after(async () => {
  await closeBrowser?.();
});

async function open(hash) {
  await page.goto(`${BASE}/${hash}`);
  await page.locator("h1").first().waitFor();
}

function rows() {
  return page.locator(".activity-table tbody tr");
}

/** Waits until the table shows exactly `count` rows, and returns them. */
async function expectRows(count, what) {
  await eventually(`${what}: ${count} rows`, async () => (await rows().count()) === count);
  return rows();
}

/**
 * Waits until the log has written all `total` calls: a call's live event goes out before its
 * record is written, so a page read just after a call may not have it yet.
 */
async function logged() {
  await eventually(`${total} calls in the log`, () => page.evaluate(async (count) => {
    const key = sessionStorage.getItem("switchboard.key");
    const answer = await fetch("/api/activity?limit=1000", { headers: { Authorization: `Bearer ${key}` } });
    return (await answer.json()).records.length === count;
  }, total));
}

/** The figures' row of a tool. */
function figures(tool) {
  return page.locator(`.activity-stats-table tr[data-tool="${tool}"]`);
}

async function chooseFilter(name, value) {
  await page.locator(`select[data-filter="${name}"]`).selectOption(value);
}

/** POSTs a JSON-RPC message to /mcp (of `url`), in `session` if given. */
function post(body, session, url = MCP_URL) {
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(session ? { "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" } : {}),
    },
    body: JSON.stringify(body),
  });
}

/** Opens an MCP session over /mcp (of `url`) as the editor `client`; its id. */
async function openSession(client, url = MCP_URL) {
  const init = await post({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: client, version: "1" } } }, undefined, url);
  const session = init.headers.get("mcp-session-id");
  assert.equal(init.status, 200, await init.text());
  const initialized = await post({ jsonrpc: "2.0", method: "notifications/initialized" }, session, url);
  assert.equal(initialized.status, 202);
  return session;
}

let nextId = 1;

/** One tool call in `session`, as an editor makes it; the answer, as sent. */
async function call(session, tool, args, url = MCP_URL) {
  const answer = await post({ jsonrpc: "2.0", id: nextId++, method: "tools/call", params: { name: tool, arguments: args } }, session, url);
  const text = await answer.text();
  assert.equal(answer.status, 200, text);
  assert.match(text, /"result"/);
  return text;
}

/** The session of the editor that calls while the page is open. */
let live;

test("the table lists every call, newest first, with who made it and how it ended", async () => {
  await page.getByRole("link", { name: "Activity" }).click();
  await page.waitForURL(/#\/activity$/);
  assert.equal(await page.locator('[data-nav="activity"]').getAttribute("aria-current"), "page");
  await expectRows(total, "every call");

  const names = await rows().evaluateAll((trs) => trs.map((tr) => tr.dataset.name));
  assert.deepEqual(names, ["demo__echo", "demo__nothing", "demo__echo", "demo__sleep", "demo__fail", "demo__add", "demo__echo", "demo__echo", "demo__echo"], "newest first");

  const fail = page.locator('.activity-table tr[data-name="demo__fail"]');
  assert.equal(await fail.getAttribute("data-outcome"), "tool_error");
  assert.equal((await fail.getByTestId("outcome").textContent()).trim(), "Tool error");
  assert.equal(await fail.locator('[data-col="client"]').textContent(), "ada-editor");
  assert.equal(await fail.locator('[data-col="server"]').textContent(), "demo");
  assert.equal(await fail.locator('[data-col="profile"]').textContent(), "default");
  assert.match(await fail.locator('[data-col="name"]').textContent(), /tools\/call/, "the method under the name");

  const nothing = page.locator('.activity-table tr[data-name="demo__nothing"]');
  assert.equal(await nothing.getAttribute("data-outcome"), "error");
  assert.equal(await nothing.locator('[data-col="server"]').textContent(), "—", "no server took it");
  assert.equal(await page.locator('.activity-table tr[data-outcome="result"]').count(), total - 2);

  const sleep = page.locator('.activity-table tr[data-name="demo__sleep"]');
  const slept = await sleep.locator('[data-col="duration"]').textContent();
  assert.match(slept, /^3\d\d ms$/, `the sleep took about 300 ms: ${slept}`);
  assert.match(await page.locator('.activity-table tr[data-name="demo__echo"]').first().locator('[data-col="sizes"]').textContent(), /KB → \d+(\.\d)? KB/, "the long echo's sizes");
  assert.ok(await page.getByTestId("activity-live").isVisible(), "the first page is live");
  assert.equal(await page.getByTestId("activity-health").isVisible(), false, "nothing was dropped");
  await screenshots(page, SCREENSHOTS, "activity");
  assertNoPageErrors(pageErrors);
});

test("the figures count each tool's calls and failures, with their latencies", async () => {
  await figures("demo__echo").waitFor();
  assert.equal(await figures("demo__echo").locator('[data-col="calls"]').textContent(), "5");
  assert.equal(await figures("demo__echo").locator('[data-col="errors"]').textContent(), "0%");
  assert.equal(await figures("demo__fail").locator('[data-col="calls"]').textContent(), "1");
  assert.match(await figures("demo__fail").locator('[data-col="errors"]').textContent(), /^100%/);
  assert.equal(await figures("demo__nothing").locator('[data-col="calls"]').textContent(), "1");
  assert.match(await figures("demo__nothing").textContent(), /no server/);
  assert.equal(await figures("demo__add").locator('[data-col="calls"]').textContent(), "1");
  assert.match(await figures("demo__sleep").locator('[data-col="p50"]').textContent(), /^3\d\d ms$/);
  assert.equal(await figures("demo__echo").locator("svg.latency-bar rect").count(), 2, "a bar for the median and the 99th percentile");
  assert.match(await page.getByTestId("stats-window").textContent(), /the last 24 hours/);
  // The busiest first.
  assert.equal(await page.locator(".activity-stats-table tbody tr").first().getAttribute("data-tool"), "demo__echo");
  assertNoPageErrors(pageErrors);
});

test("filters narrow the table and the figures, and stay in the address", async () => {
  await chooseFilter("client", "bob-editor");
  await expectRows(3, "bob's calls");
  await page.waitForURL(/#\/activity\?client=bob-editor$/);
  await eventually("the figures follow", async () => (await figures("demo__echo").locator('[data-col="calls"]').textContent()) === "2");
  assert.equal(await figures("demo__fail").count(), 0, "ada's failure is not bob's");

  await chooseFilter("outcome", "error");
  await expectRows(1, "bob's errors");
  assert.equal(await rows().first().getAttribute("data-name"), "demo__nothing");

  await page.getByRole("button", { name: "Clear filters" }).click();
  await expectRows(total, "every call again");
  await page.waitForURL(/#\/activity$/);

  await chooseFilter("tool", "demo__echo");
  await expectRows(5, "the echoes");
  await chooseFilter("server", "demo");
  await expectRows(5, "the echoes of demo");
  await chooseFilter("tool", "");
  await expectRows(total - 1, "demo's calls (the unknown name went to no server)");
  await chooseFilter("outcome", "tool_error");
  await expectRows(1, "the tool error");
  await screenshots(page, SCREENSHOTS, "activity-filtered");

  // A tool's name in the figures narrows the table to it.
  await page.getByRole("button", { name: "Clear filters" }).click();
  await expectRows(total, "every call again");
  await figures("demo__add").getByRole("button", { name: /demo__add/ }).click();
  await expectRows(1, "the addition");
  assert.equal(await page.locator('select[data-filter="tool"]').inputValue(), "demo__add");

  // Nothing matches: it says so, with a way back.
  await open("#/activity?client=nobody");
  await page.getByText("No calls match").waitFor();
  await page.getByRole("button", { name: "Clear the filters" }).click();
  await expectRows(total, "every call again");
  assertNoPageErrors(pageErrors);
});

test("a call made while the page is open appears on top, if the filters take it", async () => {
  await open("#/activity");
  await expectRows(total, "every call");
  await figures("demo__add").waitFor();
  live = await openSession("live-editor");
  await call(live, "demo__add", { a: 40, b: 2 });
  total += 1;
  await expectRows(total, "the live call added");
  const top = rows().first();
  assert.equal(await top.getAttribute("data-name"), "demo__add");
  assert.equal(await top.locator('[data-col="client"]').textContent(), "live-editor");
  assert.equal(await top.getAttribute("data-outcome"), "result");
  await eventually("the figures count it", async () => (await figures("demo__add").locator('[data-col="calls"]').textContent()) === "2");
  await eventually("the editor can be chosen", async () => (await page.locator('select[data-filter="client"] option').allTextContents()).includes("live-editor"));

  // With a filter, only what it selects is added.
  await chooseFilter("outcome", "tool_error");
  await expectRows(1, "the tool error");
  await call(live, "demo__echo", { text: "not an error" });
  await call(live, "demo__fail", { message: "live failure" });
  total += 2;
  await expectRows(2, "the live failure added, the echo not");
  assert.equal(await rows().first().locator('[data-col="client"]').textContent(), "live-editor");
  assertNoPageErrors(pageErrors);
});

test("the export links download what the filters select", async () => {
  await logged();
  await open("#/activity");
  await expectRows(total, "every call");
  const [jsonl] = await Promise.all([page.waitForEvent("download"), page.getByTestId("export-jsonl").click()]);
  assert.equal(jsonl.suggestedFilename(), "switchboard-activity.jsonl");
  const lines = fs.readFileSync(await jsonl.path(), "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line));
  assert.equal(lines.length, total);
  assert.equal(lines.filter((record) => record.outcome === "tool_error").length, 2);
  assert.ok(lines.every((record) => typeof record.id === "number"));

  await chooseFilter("tool", "demo__echo");
  await expectRows(6, "the echoes");
  const [csv] = await Promise.all([page.waitForEvent("download"), page.getByTestId("export-csv").click()]);
  assert.equal(csv.suggestedFilename(), "switchboard-activity.csv");
  const csvLines = fs.readFileSync(await csv.path(), "utf8").split("\n").filter(Boolean);
  assert.match(csvLines[0], /^id,at_ms,duration_us,/);
  assert.equal(csvLines.length, 1 + 6, "a header and the six echoes");
  assertNoPageErrors(pageErrors);
});

test("a row opens the whole record, from the keyboard too", async () => {
  await open("#/activity?client=ada-editor&tool=demo__fail");
  await expectRows(1, "ada's failure");
  const time = rows().first().locator("th button");
  await time.focus();
  await page.keyboard.press("Enter");
  const detail = page.getByTestId("activity-detail");
  await detail.waitFor();
  assert.match(await detail.locator('[data-fact="client"]').textContent(), /ada-editor/);
  assert.match(await detail.locator('[data-fact="server"]').textContent(), /demo calls it fail/);
  assert.deepEqual(JSON.parse(await detail.getByTestId("detail-arguments").textContent()), { message: "no luck" });
  const result = JSON.parse(await detail.getByTestId("detail-result").textContent());
  assert.equal(result.isError, true);
  assert.match(await detail.getByTestId("detail-arguments").textContent(), /\n {2}"message"/, "pretty-printed");
  assert.ok(await detail.getByRole("button", { name: "Open in try-it" }).isEnabled());
  await screenshots(page, SCREENSHOTS, "activity-detail");
  await page.keyboard.press("Escape");
  await detail.waitFor({ state: "detached" });
  assert.equal(await page.evaluate(() => document.activeElement?.classList.contains("activity-time")), true, "focus goes back to the row");

  // A name no server has: its error, and nothing to try.
  await open("#/activity?outcome=error");
  await expectRows(1, "the error");
  await rows().first().click();
  await detail.waitFor();
  assert.match(await detail.getByTestId("detail-error").textContent(), /demo__nothing/);
  assert.ok(await detail.getByRole("button", { name: "Open in try-it" }).isDisabled());
  assert.match(await detail.locator(".activity-replay-reason").textContent(), /No server took this call/);
  await detail.getByRole("button", { name: "Close", exact: true }).click();
  await detail.waitFor({ state: "detached" });

  // Arguments too long to be kept whole: shown cut, and not offered to try again.
  await open("#/activity?client=bob-editor&tool=demo__echo");
  await expectRows(2, "bob's echoes");
  await rows().first().click();
  await detail.waitFor();
  assert.match(await detail.textContent(), /cut: 68 KB in all/);
  const tryIt = detail.getByRole("button", { name: "Open in try-it" });
  assert.ok(await tryIt.isDisabled());
  assert.match(await detail.locator(".activity-replay-reason").textContent(), /cut when recorded/);
  assert.equal(await tryIt.getAttribute("aria-describedby"), "activity-replay-reason", "the reason is the button's description");
  await page.keyboard.press("Escape");
  assertNoPageErrors(pageErrors);
});

test("Open in try-it fills the tool's form with the recorded arguments", async () => {
  await open("#/activity?client=ada-editor&tool=demo__echo");
  await expectRows(3, "ada's echoes");
  await rows().nth(1).click();
  const detail = page.getByTestId("activity-detail");
  await detail.waitFor();
  assert.deepEqual(JSON.parse(await detail.getByTestId("detail-arguments").textContent()), { text: "hello 2" });
  await detail.getByRole("button", { name: "Open in try-it" }).click();
  await page.waitForURL(/#\/backend\/demo\/tools\/echo$/);
  const form = page.locator('.tool-detail[data-tool="echo"]');
  await form.waitFor();
  assert.equal(await form.locator('[data-field="text"]').inputValue(), "hello 2");
  assert.match(await form.getByTestId("tryit-origin").textContent(), /Filled in from the call by ada-editor at/);
  await screenshots(page, SCREENSHOTS, "activity-try-it", form);

  await form.getByTestId("call").click();
  const result = form.locator('.result[data-outcome="ok"]');
  await result.waitFor();
  assert.equal((await result.locator(".result-text").textContent()).trim(), "hello 2");

  // The arguments were for that visit only.
  await open("#/backend/demo/tools/add");
  await open("#/backend/demo/tools/echo");
  await page.locator('.tool-detail[data-tool="echo"]').waitFor();
  assert.equal(await page.locator('.tool-detail [data-field="text"]').inputValue(), "");
  assert.equal(await page.getByTestId("tryit-origin").isVisible(), false);
  assertNoPageErrors(pageErrors);
});

test("Older and Newer walk the log a page at a time", async () => {
  // Enough calls for two pages of 50.
  const pager = await openSession("pager-editor");
  for (let i = 0; i < 45; i += 1) await call(pager, "demo__add", { a: i, b: 1 });
  total += 45;
  await logged();
  await open("#/activity");
  await expectRows(50, "the first page");
  const first = await rows().first().getAttribute("data-id");
  await page.getByRole("button", { name: "Older" }).click();
  await expectRows(total - 50, "the rest");
  assert.match(await page.getByTestId("activity-page").textContent(), /Page 2/);
  assert.equal(await page.getByTestId("activity-live").isVisible(), false, "an older page is not live");
  assert.ok(await page.getByRole("button", { name: "Older" }).isDisabled());
  const lastIds = await rows().evaluateAll((trs) => trs.map((tr) => Number(tr.dataset.id)));
  assert.ok(lastIds.every((id) => id < Number(first)), "older records");

  // A call now is not added to an older page.
  await call(live, "demo__echo", { text: "while on page 2" });
  total += 1;
  // An older page takes no live call; the first one reads it from the log.
  await logged();
  await page.getByRole("button", { name: "Newer" }).click();
  await expectRows(50, "the first page again");
  assert.equal(await rows().first().getAttribute("data-name"), "demo__echo", "the newest call on top");
  assert.ok(await page.getByTestId("activity-live").isVisible());
  assertNoPageErrors(pageErrors);
});

test("with the log off the page says how to turn it on, and shows the log's problem", async () => {
  const session = await openSession("unlogged-editor", OFF_MCP_URL);
  await call(session, "demo__echo", { text: "not recorded" }, OFF_MCP_URL);
  const errors = [];
  const { page: other, close } = await openDashboard(OFF_URL, errors);
  try {
    await other.goto(`${new URL(OFF_URL).origin}/#/activity`);
    const emptyState = other.getByTestId("activity-empty");
    await emptyState.waitFor();
    assert.match(await emptyState.textContent(), /No calls in the last 24 hours/);
    assert.match(await emptyState.textContent(), /the activity log is off: set \[activity\] enabled = true/);
    await other.getByText("No calls in the last 24 hours.").waitFor();
    const health = other.getByTestId("activity-health");
    await health.waitFor();
    assert.match(await health.textContent(), /The activity log had a problem/);
    assert.match(await health.textContent(), /set aside as .*activity\.db\.unreadable-/);
    assert.equal(await other.locator(".activity-table").count(), 0);
    await screenshots(other, SCREENSHOTS, "activity-off");
    assertNoPageErrors(errors);
  } finally {
    await close();
  }
});
