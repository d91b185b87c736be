// Servers' questions answered in the dashboard in a real browser, against a real
// `switchboard serve` with the real server-everything behind it, started by tests/it/questions.rs
// (`the_dashboard_answers_a_servers_questions_in_a_real_browser`). The editor is the official
// TypeScript SDK's client in Node, which declares no elicitation, as Claude Desktop does: the
// server's form (every kind of field the spec has) shows as a card with its defaults and
// choices, and what the person fills in reaches the server; a page to open that is not https
// is shown with a warning and declined; an https one opens in a new window only on the
// person's click. Screenshots, in the light and the dark theme, go to SWITCHBOARD_SCREENSHOTS.

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
const editor = new Client({ name: "desktop editor", version: "1.0.0" });

before(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await editor.connect(new StreamableHTTPClientTransport(new URL(MCP_URL)));
  ({ page, close: closeBrowser } = await openDashboard(DASHBOARD_URL, pageErrors));
});

after(async () => {
  await closeBrowser?.();
  await editor.close();
});

/** The text of every block of a tool result. */
function text(result) {
  return (result.content ?? []).map((block) => block.text ?? "").join("\n");
}

test("a server's form is rendered from its schema and the answer reaches the server", async () => {
  const card = page.getByTestId("question");
  const called = editor.callTool({ name: "everything__trigger-elicitation-request", arguments: {} });
  await card.waitFor();
  const shown = (await card.textContent()) ?? "";
  assert.match(shown, /everything, during a call of desktop editor, asks/);
  assert.match(shown, /asked at \d\d:\d\d:\d\d · cancelled at \d\d:\d\d:\d\d if nobody answers/);
  assert.match(shown, /Please provide inputs for the following fields:/);
  // Defaults, choices and formats, as the schema gives them.
  assert.equal(await card.getByLabel("String with default", { exact: true }).inputValue(), "It was a dark and stormy night.");
  assert.equal(await card.getByLabel("Integer", { exact: true }).inputValue(), "42");
  assert.equal(await card.getByLabel("String with email format", { exact: true }).getAttribute("type"), "email");
  assert.equal(await card.getByLabel("String with date format", { exact: true }).getAttribute("type"), "date");
  assert.equal(await card.getByLabel("Titled Single Select Enum", { exact: true }).inputValue(), "hero-1");
  assert.equal(await card.getByLabel("Legacy Titled Single Select Enum", { exact: true }).locator("option:checked").textContent(), "Cats");
  assert.equal(await card.getByRole("checkbox", { name: "Guitar" }).isChecked(), true);
  assert.equal(await card.getByRole("checkbox", { name: "Tuna" }).isChecked(), true);

  // The required name is asked for before anything is sent.
  await card.getByRole("button", { name: "Submit" }).click();
  assert.equal(await card.getByLabel("String", { exact: true }).evaluate((input) => /** @type {HTMLInputElement} */ (input).validity.valueMissing), true);

  await card.getByLabel("String", { exact: true }).fill("Ada Lovelace");
  await card.getByLabel("String with email format", { exact: true }).fill("ada@example.com");
  await card.getByLabel("Boolean", { exact: true }).check();
  await card.getByLabel("Untitled Single Select Enum", { exact: true }).selectOption("Joey");
  await card.getByLabel("Legacy Titled Single Select Enum", { exact: true }).selectOption({ label: "Birds" });
  await card.getByRole("checkbox", { name: "Piano" }).check();
  await screenshots(page, SCREENSHOTS, "question-form", card);
  await card.getByRole("button", { name: "Submit" }).click();
  const answer = text(await called);
  assert.match(answer, /User provided the requested information/);
  assert.match(answer, /Name: Ada Lovelace/);
  assert.match(answer, /Agreed to terms: true/);
  assert.match(answer, /Email: ada@example.com/);
  assert.match(answer, /Favorite Integer: 42/);
  assert.match(answer, /"untitledMultipleSelectEnum":\s*\[\s*"Guitar",\s*"Piano"\s*\]/);
  assert.match(answer, /"legacyTitledEnum":\s*"pet-3"/);
  await card.waitFor({ state: "detached" });
  assertNoPageErrors(pageErrors);
});

test("a page to open is shown with its site, warned about when not https, and opened only on a click", async () => {
  const card = page.getByTestId("question");
  const plain = editor.callTool({
    name: "everything__trigger-url-elicitation",
    arguments: { url: "http://pay.example.com/checkout", message: "Pay for the pro plan" },
  });
  await card.waitFor();
  assert.match((await card.textContent()) ?? "", /Pay for the pro plan/);
  assert.match((await card.getByTestId("question-warning").textContent()) ?? "", /not https/);
  await card.getByRole("button", { name: "Open pay.example.com anyway" }).waitFor();
  await screenshots(page, SCREENSHOTS, "question-url", card);
  await card.getByRole("button", { name: "Decline" }).click();
  assert.match(text(await plain), /decline/i);
  await card.waitFor({ state: "detached" });

  const secure = editor.callTool({
    name: "everything__trigger-url-elicitation",
    arguments: { url: "https://accounts.example.com/sign-in", message: "Sign in to your account" },
  });
  await card.waitFor();
  assert.equal(await card.getByTestId("question-warning").count(), 0);
  // This machine reaches no such site: the page it opens is served here.
  await page.context().route("https://accounts.example.com/**", (route) => route.fulfill({ contentType: "text/html", body: "<title>Sign in</title>signed in" }));
  const popup = page.waitForEvent("popup");
  await card.getByRole("button", { name: "Open accounts.example.com" }).click();
  const opened = await popup;
  assert.equal(opened.url(), "https://accounts.example.com/sign-in");
  await opened.close();
  assert.match(text(await secure), /accept/i);
  await card.waitFor({ state: "detached" });
  assertNoPageErrors(pageErrors);
});
