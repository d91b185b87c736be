// What the browser suites share: Chromium with a fresh profile, let in by the dashboard link, the page's errors collected, polling and screenshots in both themes.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { chromium } from "playwright-core";

/** Generous bound for an event that should come within milliseconds. */
export const EVENT_LIMIT_MS = 20_000;

/** Bound for Chromium to start: on two busy cores it can take far longer than any event. */
const LAUNCH_LIMIT_MS = 120_000;

export function requiredEnv(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set; run this through tests/it/ui.rs`);
  return value;
}

/**
 * A new headless Chromium with a fresh profile and one blank page, which reports its errors to
 * `errors`; `close` ends it and removes the profile.
 * @param {string[]} errors
 */
export async function openPage(errors) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-ui-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
    ],
    viewport: { width: 1024, height: 768 },
    colorScheme: "light",
    timeout: LAUNCH_LIMIT_MS,
  });
  context.setDefaultTimeout(EVENT_LIMIT_MS);
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`console: ${message.text()}`);
  });
  const close = async () => {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  };
  return { context, page, close };
}

/**
 * Opens the dashboard link in a new headless Chromium; the page reports its errors to `errors`.
 * @param {string} dashboardUrl the link with the run's key in its fragment
 * @param {string[]} errors
 */
export async function openDashboard(dashboardUrl, errors) {
  const { context, page, close } = await openPage(errors);
  // The page moves the key from the fragment into the tab's sessionStorage.
  const key = new URL(dashboardUrl).hash.replace(/^#key=/, "");
  const response = await page.goto(dashboardUrl);
  await page.locator("#view, [data-testid=locked]").first().waitFor();
  if ((await page.locator("#view").count()) === 0) {
    const body = (await page.locator("body").textContent())?.trim();
    throw new Error(`${page.url()} is not the dashboard (HTTP ${response?.status()}): ${body}`);
  }
  assert.ok(!page.url().includes(key), "the key leaves the address bar");
  assert.equal(await page.evaluate(() => sessionStorage.getItem("switchboard.key")), key);
  assert.deepEqual(await context.cookies(), [], "the dashboard sets no cookie");
  return { context, page, close, key };
}

/**
 * The header the dashboard sends, for a test's own request to the API.
 * @param {string} key the run's key, as openDashboard returns it
 */
export function authorization(key) {
  return { Authorization: `Bearer ${key}` };
}

/** Fails with the page's errors since the last check, if any. */
export function assertNoPageErrors(errors) {
  // The browser reports every HTTP error answer on the console; the API's error answers (a
  // crashed backend's 502, say) are expected, and the page shows them itself.
  const real = errors.filter((text) => !/Failed to load resource: the server responded with a status of/.test(text));
  errors.length = 0;
  assert.deepEqual(real, [], "the page reported errors");
}

/**
 * Polls `check` until it returns a truthy value; fails naming `what` after EVENT_LIMIT_MS.
 * @template T
 * @param {string} what
 * @param {() => Promise<T> | T} check
 * @returns {Promise<T>}
 */
export async function eventually(what, check) {
  const deadline = Date.now() + EVENT_LIMIT_MS;
  let last;
  for (;;) {
    try {
      last = await check();
      if (last) return last;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${EVENT_LIMIT_MS} ms (last: ${last})`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Saves the page as `<theme>-<name>.png` in `dir`, in the light theme and then the dark one, with
 * `focus` (a locator) scrolled into view if given.
 */
export async function screenshots(page, dir, name, focus) {
  if (focus) await focus.scrollIntoViewIfNeeded();
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    // Let the theme apply and any spinner settle before the picture is taken.
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    await page.screenshot({ path: path.join(dir, `${scheme}-${name}.png`) });
  }
  await page.emulateMedia({ colorScheme: "light" });
}
