// The server page's Sandbox card in a real browser, against a real `switchboard serve` started by
// tests/it/sandbox.rs (`the_server_page_shows_each_servers_sandbox_in_a_real_browser`) in front
// of two copies of tests/backends/sandbox_probe.py: `probe`, sandboxed (it may write WORK_FOLDER,
// connect to port 443, and has a network), and `open`, without a sandbox. Screenshots, in the
// light and the dark theme, go to SWITCHBOARD_SCREENSHOTS (artifacts/ui/).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";

import { assertNoPageErrors, openDashboard, requiredEnv, screenshots } from "./browser.mjs";

const DASHBOARD_URL = requiredEnv("SWITCHBOARD_URL");
const SCREENSHOTS = requiredEnv("SWITCHBOARD_SCREENSHOTS");
const WORK_FOLDER = requiredEnv("WORK_FOLDER");
const BASE = new URL(DASHBOARD_URL).origin;

/** @type {import("playwright-core").Page} */
let page;
let closeBrowser;
const pageErrors = [];

before(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  ({ page, close: closeBrowser } = await openDashboard(DASHBOARD_URL, pageErrors));
});

after(async () => {
  await closeBrowser?.();
});

async function sandboxCard(server) {
  await page.goto(`${BASE}/#/backend/${server}`);
  const card = page.locator('[data-testid="sandbox"]');
  await card.waitFor();
  return card;
}

test("a sandboxed server's page says what it may reach and that it is enforced", async () => {
  const card = await sandboxCard("probe");
  const enforcement = await card.locator('[data-testid="sandbox-enforcement"]').textContent();
  assert.match(enforcement ?? "", /^Enforced \(Landlock ABI \d+\)$/);
  assert.equal(await card.locator('[data-testid="sandbox-write"]').textContent(), WORK_FOLDER);
  assert.equal(await card.locator('[data-testid="sandbox-connect"]').textContent(), "TCP port 443");
  assert.equal(await card.locator('[data-testid="sandbox-network"]').textContent(), "yes");
  assert.equal(await card.locator('[data-testid="sandbox-dbus"]').textContent(), "out of reach, as is Switchboard's socket");
  assert.match(await card.textContent() ?? "", /PATH HOME LANG LC_\* PROBE_GIVEN/);
  await screenshots(page, SCREENSHOTS, "sandbox-enforced", card);
  assertNoPageErrors(pageErrors);
});

test("a server without a sandbox says it runs with your rights, and offers one", async () => {
  const card = await sandboxCard("open");
  assert.match(await card.textContent() ?? "", /runs with your full rights/);
  const suggested = await card.locator('[data-testid="suggested-sandbox"]').textContent();
  assert.match(suggested ?? "", /^\[servers\.open\.sandbox\]\n/m);
  assert.match(suggested ?? "", /connect = \[\]/);
  await screenshots(page, SCREENSHOTS, "sandbox-none", card);
  assertNoPageErrors(pageErrors);
});
