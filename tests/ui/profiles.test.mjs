// The Profiles page in a real browser against a real `switchboard serve` started by
// tests/it/ui.rs (`the_profiles_page_...`), over a valid config with the demo and "everything"
// servers and a profile `review`. Its switches edit the config file (SWITCHBOARD_CONFIG); each test
// checks the file after, and that Switchboard serves what the file now says.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";

import { assertNoPageErrors, authorization, eventually, openDashboard, requiredEnv, screenshots } from "./browser.mjs";

const DASHBOARD_URL = requiredEnv("SWITCHBOARD_URL");
const SCREENSHOTS = requiredEnv("SWITCHBOARD_SCREENSHOTS");
const CONFIG = requiredEnv("SWITCHBOARD_CONFIG");
const BASE = new URL(DASHBOARD_URL).origin;

/** @type {import("playwright-core").Page} */
let page;
let closeBrowser;
/** The run's dashboard key. */
let key;
const pageErrors = [];

before(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  ({ page, close: closeBrowser, key } = await openDashboard(DASHBOARD_URL, pageErrors));
});

after(async () => {
  await closeBrowser?.();
});

function card(profile) {
  return page.locator(`section[data-profile="${profile}"]`);
}

function toolRow(profile, tool) {
  return card(profile).locator(`tr[data-tool="${tool}"]`);
}

/** The tools `review` offers, as an editor sees them at /mcp/review. */
async function servedTools() {
  const response = await fetch(`${BASE}/api/profiles`, { headers: authorization(key) });
  const budgets = await response.json();
  return budgets.find((budget) => budget.profile === "review").tool_costs.map((tool) => tool.name).sort();
}

test("each profile shows its cost, its servers and its tools with both names", async () => {
  await page.goto(`${BASE}/#/profiles`);
  await card("review").waitFor();
  await eventually("review lists its tools", async () => (await card("review").locator("tbody tr").count()) > 2);
  const total = await card("review").locator('[data-testid="total"]').textContent();
  assert.match(total ?? "", /^\d+ tools · [\d,]+ bytes · about [\d,]+ tokens on every turn$/);
  assert.ok(await card("default").isVisible(), "the default profile is shown too");
  const echo = toolRow("review", "everything__echo");
  assert.equal(await echo.locator("input").isChecked(), true);
  assert.match((await echo.textContent()) ?? "", /everything__echo.*everything · echo/);
  assert.equal(await card("review").locator('input[aria-label="Offer demo in review"]').isChecked(), false);
  await screenshots(page, SCREENSHOTS, "profiles", card("review"));
  assertNoPageErrors(pageErrors);
});

test("turning a tool off writes the file, keeps its comments, and the profile stops offering it", async () => {
  const before = fs.readFileSync(CONFIG, "utf8");
  await toolRow("review", "everything__echo").locator("input").uncheck();
  await eventually("the switch settles off", async () => !(await toolRow("review", "everything__echo").locator("input").isChecked()) && await toolRow("review", "everything__echo").locator("input").isEnabled());
  const after = fs.readFileSync(CONFIG, "utf8");
  assert.match(after, /exclude_tools = \["everything__echo"\]/);
  assert.ok(after.startsWith(before.split("[profiles.review]")[0]), "everything before the profile is as it was");
  assert.match(after, /# Reviewers see the read-only tools\./, "the comment survives");
  assert.ok(!(await servedTools()).includes("everything__echo"));

  await toolRow("review", "everything__echo").locator("input").check();
  await eventually("the switch settles on", async () => await toolRow("review", "everything__echo").locator("input").isChecked() && await toolRow("review", "everything__echo").locator("input").isEnabled());
  assert.ok((await servedTools()).includes("everything__echo"));
  assert.match(fs.readFileSync(CONFIG, "utf8"), /exclude_tools = \[\]/);
  assertNoPageErrors(pageErrors);
});

test("turning a server on lists it in the profile's servers and offers its tools", async () => {
  const demo = card("review").locator('input[aria-label="Offer demo in review"]');
  await demo.check();
  await eventually("demo's tools are offered", async () => (await servedTools()).some((tool) => tool.startsWith("demo__")));
  assert.match(fs.readFileSync(CONFIG, "utf8"), /servers = \["everything", "demo"\]/);
  assert.equal(await demo.isChecked(), true);
  assertNoPageErrors(pageErrors);
});
