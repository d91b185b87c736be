// A server's skills on its page in a real browser, against a real `switchboard serve` started by
// tests/it/skills.rs (`the_server_page_shows_its_skills_in_a_real_browser`) in front of two
// copies of tests/backends/skills_server.py. Screenshots, in the light and the dark theme, go to
// SWITCHBOARD_SCREENSHOTS (artifacts/ui/).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";

import { assertNoPageErrors, openDashboard, requiredEnv, screenshots } from "./browser.mjs";

const DASHBOARD_URL = requiredEnv("SWITCHBOARD_URL");
const SCREENSHOTS = requiredEnv("SWITCHBOARD_SCREENSHOTS");
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

test("a server's page lists its skills with what each is and its files", async () => {
  await page.goto(`${BASE}/#/backend/alpha`);
  const card = page.getByTestId("skills");
  await card.waitFor();
  await card.getByText("shared-notes", { exact: true }).waitFor();
  const shown = (await card.textContent()) ?? "";
  assert.match(shown, /pdf-processing — The pdf-processing skill of alpha · 2 files, each with its digest pinned/);
  assert.match(shown, /shared-notes — The shared-notes skill of alpha/);
  await screenshots(page, SCREENSHOTS, "server-skills", card);
  assertNoPageErrors(pageErrors);
});
