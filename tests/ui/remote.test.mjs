// Remote servers and secrets in a real browser, against a real `switchboard serve` started by
// tests/it/ui.rs (`remote_servers_and_secrets_...`) with a keychain of its own, in front of:
// - "remote", a real MCP server (tests/backends/remote_server.py --auth) that a real
//   authorization server (oidc-provider, tests/auth/oidc_server.mjs) protects, with no sign-in yet;
// - "demo", the built-in demo server;
// - "notes", another demo server whose env names ${secret:notes_token}, which the keychain does
//   not hold at the start, so the config has an error and notes is left out until it is set.
//
// The sign-in goes through the authorization server's own pages in the tab the dashboard opens,
// and back to Switchboard's callback. The tests share the page and run in order. Screenshots of
// each view, in the light and the dark theme, go to SWITCHBOARD_SCREENSHOTS (artifacts/ui/).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";

import { assertNoPageErrors, authorization, eventually, openDashboard, requiredEnv, screenshots } from "./browser.mjs";

const DASHBOARD_URL = requiredEnv("SWITCHBOARD_URL");
const SCREENSHOTS = requiredEnv("SWITCHBOARD_SCREENSHOTS");
const REMOTE_URL = requiredEnv("SWITCHBOARD_REMOTE_URL");
const ISSUER = requiredEnv("SWITCHBOARD_ISSUER");
const BASE = new URL(DASHBOARD_URL).origin;

/** The secret typed into the page; it must never come back out of it. */
const NOTES_TOKEN = "notes-token-value-7f3a9c";
const SPARE_VALUE = "spare-value-b81d20";

/** @type {import("playwright-core").BrowserContext} */
let context;
/** @type {import("playwright-core").Page} */
let page;
let closeBrowser;
/** The run's dashboard key. */
let key;
const pageErrors = [];

before(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  ({ context, page, close: closeBrowser, key } = await openDashboard(DASHBOARD_URL, pageErrors));
});

after(async () => {
  await closeBrowser?.();
});

async function open(hash) {
  await page.goto(`${BASE}/${hash}`);
  await page.locator("h1").first().waitFor();
}

function row(name) {
  return page.locator(`tr[data-backend="${name}"]`);
}

function badge() {
  return page.locator(".backend-head").getByTestId("state");
}

function secretRow(name) {
  return page.locator(`tr[data-secret="${name}"]`);
}

/** The backends the API lists, by name. */
async function backends() {
  const response = await fetch(`${BASE}/api/backends`, { headers: authorization(key) });
  return Object.fromEntries((await response.json()).map((summary) => [summary.name, summary]));
}

test("a remote server waiting for a sign-in shows its URL, its reason and a Sign in button", async () => {
  await open("#/");
  await page.locator('tr[data-backend="remote"][data-state="needs_sign_in"]').waitFor();
  await page.locator('tr[data-backend="demo"][data-state="ready"]').waitFor();
  const remote = row("remote");
  assert.equal((await remote.getByTestId("state").textContent()).trim(), "Needs sign-in");
  await eventually("the row shows the URL", async () => (await remote.getByTestId("target").textContent()) === REMOTE_URL);
  assert.match(await remote.locator(".row-error").textContent(), /remote asks for a sign-in/);
  assert.equal(await remote.locator('[data-col="pid"]').textContent(), "—", "a remote server has no process");
  assert.ok(await remote.getByRole("button", { name: "Sign in to remote" }).isVisible());
  assert.equal(await row("demo").getByRole("button", { name: "Sign in to demo" }).isVisible(), false);
  assert.match(await page.locator(".page-sub").textContent(), /1 needs a sign-in/);
  await screenshots(page, SCREENSHOTS, "backends-remote");

  await remote.getByRole("link", { name: "remote" }).click();
  await page.waitForURL(/#\/backend\/remote$/);
  const callout = page.getByTestId("sign-in");
  await callout.waitFor();
  assert.match(await callout.textContent(), /remote needs a sign-in/);
  assert.match(await callout.textContent(), /remote asks for a sign-in/);
  assert.match(await callout.textContent(), /your browser comes back to Switchboard/);
  const connection = page.getByTestId("connection");
  await connection.waitFor();
  assert.match(await connection.textContent(), new RegExp(`URL${REMOTE_URL.replaceAll(".", "\\.")}`));
  assert.match(await connection.textContent(), /X-Team: ••••••/, "header names with masked values");
  assert.doesNotMatch(await page.content(), /core-team-header-value/, "no header value reaches the page");
  assert.equal(await page.locator('[data-fact="pid"]').isVisible(), false);
  assert.equal(await page.getByRole("button", { name: "Sign out of remote" }).isVisible(), false);
  await screenshots(page, SCREENSHOTS, "backend-sign-in");
  assertNoPageErrors(pageErrors);
});

test("Sign in opens the authorization server's pages in a new tab, and the server comes up live", async () => {
  const opened = context.waitForEvent("page");
  await page.getByTestId("sign-in").getByRole("button", { name: "Sign in to remote" }).click();
  const signIn = await opened;
  await signIn.waitForLoadState();
  // In case no tab opened (a blocked pop-up), the page links to the same sign-in.
  const again = page.getByTestId("sign-in").getByRole("link", { name: "Open the sign-in page" });
  assert.ok((await again.getAttribute("href")).startsWith(ISSUER));
  assert.ok(signIn.url().startsWith(ISSUER), `the new tab is at the authorization server: ${signIn.url()}`);

  // oidc-provider's development pages: any login name and password, then consent.
  await signIn.locator('input[name="login"]').fill("ada");
  await signIn.locator('input[name="password"]').fill("any password");
  await signIn.locator('button[type="submit"]').click();
  await signIn.getByRole("button", { name: "Continue" }).click();
  await signIn.waitForURL((url) => url.href.startsWith(`${BASE}/oauth/callback`));
  assert.match(await signIn.locator("body").textContent(), /Signed in to remote/);
  await screenshots(signIn, SCREENSHOTS, "sign-in-callback");
  await signIn.close();

  // The dashboard follows on its own, through its event feed.
  await page.locator('.backend-head [data-testid="state"][data-state="ready"]').waitFor();
  assert.equal((await badge().textContent()).trim(), "Ready");
  assert.equal(await page.getByTestId("sign-in").isVisible(), false);
  assert.ok(await page.getByRole("button", { name: "Sign out of remote" }).isVisible());

  await page.locator('a.tab[data-tab="tools"]').click();
  await page.waitForURL(/#\/backend\/remote\/tools/);
  await eventually("remote's tools are listed", async () => {
    const names = await page.locator(".tool-list .tool-link-name").allTextContents();
    return ["echo", "whoami", "slow", "count"].every((name) => names.includes(name));
  });
  await page.locator(".tool-list a", { hasText: "whoami" }).click();
  const detail = page.locator('.tool-detail[data-tool="whoami"]');
  await detail.getByTestId("call").click();
  const result = detail.locator('.result[data-outcome="ok"]');
  await result.waitFor();
  assert.equal((await result.locator(".result-text").textContent()).trim(), "ada", "the token is the one ada signed in for");
  await screenshots(page, SCREENSHOTS, "backend-remote-tools");
  assertNoPageErrors(pageErrors);
});

test("Sign out asks first, then the server waits for a sign-in again", async () => {
  await open("#/backend/remote");
  await page.locator('.backend-head [data-testid="state"][data-state="ready"]').waitFor();
  const signOut = page.getByRole("button", { name: "Sign out of remote" });
  await signOut.click();
  const dialog = page.getByRole("dialog", { name: "Sign out of remote?" });
  await dialog.waitFor();
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Cancel", "the safe choice has focus");
  await screenshots(page, SCREENSHOTS, "sign-out-confirm");
  await page.keyboard.press("Escape");
  await dialog.waitFor({ state: "detached" });
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("aria-label")), "Sign out of remote", "focus goes back");
  assert.equal((await backends()).remote.state, "ready", "cancelled: nothing changed");

  await signOut.click();
  await dialog.getByRole("button", { name: "Sign out" }).click();
  await page.locator('.backend-head [data-testid="state"][data-state="needs_sign_in"]').waitFor();
  await page.getByTestId("sign-in").waitFor();
  assertNoPageErrors(pageErrors);
});

test("the Secrets page flags the secret the config names and the keychain lacks", async () => {
  await page.getByRole("link", { name: "Secrets" }).click();
  await page.waitForURL(/#\/secrets$/);
  const notes = secretRow("notes_token");
  await notes.waitFor();
  assert.ok(await notes.evaluate((element) => element.classList.contains("is-missing")));
  assert.match(await notes.textContent(), /missing/);
  assert.match(await notes.textContent(), /the servers using it cannot start/);
  assert.equal(await notes.getByRole("button", { name: "Delete notes_token" }).count(), 0, "nothing to delete");
  assert.equal(await page.getByTestId("keychain-unavailable").isVisible(), false);
  assert.equal((await backends()).notes, undefined, "notes is left out while its secret is missing");
  await screenshots(page, SCREENSHOTS, "secrets");
  assertNoPageErrors(pageErrors);
});

test("setting a secret keeps its value out of the page and starts the server that needed it", async () => {
  // "Set…" fills in the name and moves to the value.
  await secretRow("notes_token").getByRole("button", { name: "Set notes_token" }).click();
  assert.equal(await page.getByLabel("Name", { exact: true }).inputValue(), "notes_token");
  const value = page.getByLabel("Value", { exact: true });
  assert.equal(await value.getAttribute("type"), "password");
  assert.equal(await page.evaluate(() => document.activeElement?.id), "secret-value");
  await page.keyboard.type(NOTES_TOKEN);
  await page.keyboard.press("Enter");

  const outcome = page.getByTestId("secret-outcome");
  await eventually("the outcome", async () => /Saved notes_token in the keychain\./.test(await outcome.textContent()));
  assert.match(await outcome.textContent(), /notes: added/, "which servers the reload changed");
  await eventually("notes_token is set", async () => (await secretRow("notes_token").getAttribute("data-set")) === "true");
  assert.ok(!(await secretRow("notes_token").evaluate((element) => element.classList.contains("is-missing"))));
  assert.equal(await value.inputValue(), "", "the value is cleared");
  assert.ok(!(await page.content()).includes(NOTES_TOKEN), "the value appears nowhere in the page");
  await eventually("notes is ready", async () => (await backends()).notes?.state === "ready");

  // A name the keychain would refuse is caught in the page.
  await page.getByLabel("Name", { exact: true }).fill("not a name");
  await value.fill("x");
  await page.getByRole("button", { name: "Save to keychain" }).click();
  assert.equal(await page.getByLabel("Name", { exact: true }).getAttribute("aria-invalid"), "true");
  assert.match(await page.locator("#secret-name-error").textContent(), /letters, digits/);
  await value.fill("");

  // One the config does not use.
  await page.getByLabel("Name", { exact: true }).fill("spare");
  await value.fill(SPARE_VALUE);
  await page.getByRole("button", { name: "Save to keychain" }).click();
  await secretRow("spare").waitFor();
  assert.equal(await secretRow("spare").getAttribute("data-used"), "false");
  assert.match(await outcome.textContent(), /Saved spare in the keychain\. Config read again\. Nothing changed\./);
  assert.ok(!(await page.content()).includes(SPARE_VALUE));
  await screenshots(page, SCREENSHOTS, "secrets-set");
  assertNoPageErrors(pageErrors);
});

test("deleting a secret asks first, then removes it", async () => {
  await secretRow("spare").getByRole("button", { name: "Delete spare" }).click();
  const dialog = page.getByRole("dialog", { name: "Delete spare?" });
  await dialog.waitFor();
  assert.match(await dialog.textContent(), /The config does not name it/);
  await dialog.getByRole("button", { name: "Delete" }).click();
  await secretRow("spare").waitFor({ state: "detached" });
  assert.match(await page.getByTestId("secret-outcome").textContent(), /Deleted spare from the keychain\./);
  assert.equal(await secretRow("notes_token").getAttribute("data-set"), "true", "the other one stays");
  assertNoPageErrors(pageErrors);
});
