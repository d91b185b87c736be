// Adding servers from a registry in a real browser, against a real `switchboard serve` started by
// tests/it/registry.rs, whose `[registry] sources` are SWITCHBOARD_REGISTRY_URL (a
// tests/registry/source.py serving tests/registry/entries.json, standing for the official
// registry: serve is told it is, so its names count as verified) and SWITCHBOARD_FAILING_SOURCE
// (a source that cannot be read), with a keychain of its own. Before the dashboard first reads
// the sources, the suite marks time-mcp-pypi deprecated at the source. The tests share the page
// and run in order: the Add page searched as one types, with its badges and the failing source
// said above the results; a remote entry added with a secret, through the plan shown for a
// yes; server-everything added, its version on its page; a server added at an older version
// updated from its page; and a server removed with its secret. Screenshots, in the light and the dark theme, go to
// SWITCHBOARD_SCREENSHOTS (artifacts/ui/).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";

import { assertNoPageErrors, eventually, openDashboard, requiredEnv, screenshots } from "./browser.mjs";

const DASHBOARD_URL = requiredEnv("SWITCHBOARD_URL");
const SCREENSHOTS = requiredEnv("SWITCHBOARD_SCREENSHOTS");
const REGISTRY_URL = requiredEnv("SWITCHBOARD_REGISTRY_URL");
const FAILING_SOURCE = requiredEnv("SWITCHBOARD_FAILING_SOURCE");
const BASE = new URL(DASHBOARD_URL).origin;

const EVERYTHING = "io.github.modelcontextprotocol/server-everything";
const EVERYTHING_LATEST = "2026.8.31";
const EVERYTHING_OLDER = "2026.8.18";
const DEPRECATED = "io.github.domdomegg/time-mcp-pypi";
const DEPRECATION = "Moved to io.github.domdomegg/time-mcp; this one gets no fixes.";
const NUGET = "io.github.domdomegg/time-mcp-nuget";
const REMOTE = "io.github.switchboard-tests/remote-echo";
const API_KEY = "echo-api-key-0123456789";
/** How long a server's first `npx` install may take before it lists its tools (as tests/it/registry.rs allows). */
const INSTALL_LIMIT_MS = 240_000;

/** @type {import("playwright-core").Page} */
let page;
let closeBrowser;
const pageErrors = [];

before(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  // Sources are read into a cache on the first search: this happens before any.
  const marked = await fetch(`${REGISTRY_URL}/_set_status`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: DEPRECATED, version: "1.0.6", status: "deprecated", statusMessage: DEPRECATION }),
  });
  assert.equal(marked.status, 200, await marked.text());
  ({ page, close: closeBrowser } = await openDashboard(DASHBOARD_URL, pageErrors));
});

after(async () => {
  await closeBrowser?.();
});

async function open(hash) {
  await page.goto(`${BASE}/${hash}`);
  await page.locator("h1").first().waitFor();
}

/** A control API call from the page, with the key the page keeps. */
function api(path, init) {
  return page.evaluate(async ([path, init]) => {
    const key = sessionStorage.getItem("switchboard.key");
    const answer = await fetch(path, { ...init, headers: { ...init.headers, Authorization: `Bearer ${key}` } });
    return { status: answer.status, body: await answer.json() };
  }, [path, init ?? {}]);
}

const card = (name) => page.locator(`.registry-entry[data-entry="${name}"]`);
const listed = () => page.locator(".registry-entry").evaluateAll((cards) => cards.map((card) => card.dataset.entry));
const fact = (name) => page.locator(`[data-fact="${name}"]`);

/**
 * Waits for the notice that `server`'s tools are new and held back for review (an added server's
 * tools wait for it), then dismisses it: it would cover the screenshots.
 */
async function heldNotice(server) {
  const notice = page.locator(`[data-testid="held-notice"][data-server="${server}"]`);
  await notice.waitFor({ timeout: INSTALL_LIMIT_MS });
  assert.match(await notice.locator("strong").textContent(), new RegExp(`tools? of ${server} (is|are) new and held back from editors`));
  await notice.getByRole("button", { name: "Dismiss" }).click();
}

/** Dismisses the notices of held tools shown now (their screenshots are review.test.mjs's). */
async function dismissNotices() {
  for (const close of await page.getByTestId("held-notice").getByRole("button", { name: "Dismiss" }).all()) await close.click();
}

/** Types `words` into the search box, as a person does, and waits for their answer. */
async function search(words) {
  const box = page.getByTestId("registry-search");
  await box.fill("");
  await box.pressSequentially(words);
  await page.getByTestId("registry-summary").filter({ hasText: `“${words}”` }).waitFor();
}

test("the Add page searches the sources as one types and says what each server is", async () => {
  await open("#/");
  await page.getByRole("link", { name: "Add a server" }).click();
  await page.waitForURL(/#\/add$/);
  assert.equal(await page.title(), "Add a server · Switchboard");
  assert.equal(await page.locator('[data-nav="add"]').getAttribute("aria-current"), "page");
  await card(EVERYTHING).waitFor();

  // The source that cannot be read is said above the results, which the other one gives.
  const problem = page.locator(`[data-testid="source-error"][data-source="${FAILING_SOURCE}"]`);
  await problem.waitFor();
  assert.match(await problem.textContent(), new RegExp(`Could not read ${FAILING_SOURCE.replaceAll(".", "\\.")}: \\S`));
  assert.equal(await page.getByTestId("source-error").count(), 1, "only the failing source is said");
  assert.match(await card(EVERYTHING).getByTestId("source").textContent(), new RegExp(REGISTRY_URL.replaceAll(".", "\\.")));
  await screenshots(page, SCREENSHOTS, "add");

  // Searched as one types; the words go into the address.
  await search("time");
  await page.waitForURL(/#\/add\?q=time$/);
  const timeServers = await eventually("the servers about time", async () => {
    const names = await listed();
    return names.includes(DEPRECATED) && !names.includes(EVERYTHING) ? names : null;
  });
  assert.ok(timeServers.includes(NUGET) && timeServers.includes("io.github.modelcontextprotocol/server-time"), timeServers.join(", "));
  assert.match(await page.getByTestId("registry-summary").textContent(), new RegExp(`^${timeServers.length} servers? match “time” from`));

  // A deprecated server says so, and why.
  const deprecated = card(DEPRECATED);
  assert.equal(await deprecated.getAttribute("data-status"), "deprecated");
  assert.equal(await deprecated.getByTestId("deprecated").textContent(), "Deprecated");
  assert.equal(await deprecated.getByTestId("status-message").textContent(), DEPRECATION);
  // One Switchboard cannot run says why, in place of Add.
  const nuget = card(NUGET);
  assert.equal(await nuget.getByRole("button", { name: /^Add/ }).count(), 0);
  assert.match(await nuget.getByTestId("why-not").textContent(), /^Cannot be added: .*NuGet/);
  // A verified name, its repository opening in a new window with no handle on this one.
  const time = card("io.github.modelcontextprotocol/server-time");
  assert.equal(await time.getByTestId("verified").textContent(), "verified name");
  assert.equal(await time.getByTestId("unverified").count(), 0);
  const repository = time.getByRole("link", { name: "Repository" });
  assert.equal(await repository.getAttribute("href"), "https://github.com/modelcontextprotocol/servers");
  assert.equal(await repository.getAttribute("target"), "_blank");
  assert.equal(await repository.getAttribute("rel"), "noopener");
  assert.match(await time.locator(".registry-options").textContent(), /pypi\s*mcp-server-time 2026\.10\.19\s*stdio/);
  await screenshots(page, SCREENSHOTS, "add-search", deprecated);

  // An entry without the official registry's metadata is unverified.
  const all = await api("/api/registry/search?q=");
  assert.equal(all.status, 200, JSON.stringify(all.body));
  const unverified = all.body.entries.find((entry) => !entry.verified);
  assert.ok(unverified, `the sources need an entry without the official registry's metadata: ${all.body.entries.map((entry) => entry.name).join(", ")}`);
  await search(unverified.name);
  await card(unverified.name).getByTestId("unverified").waitFor();
  assert.equal(await card(unverified.name).getByTestId("verified").count(), 0);
  assert.equal(await card(unverified.name).getByTestId("unverified").textContent(), "unverified");

  // The address's words are the search's when the page is opened with them.
  await open("#/add?q=time");
  assert.equal(await page.getByTestId("registry-search").inputValue(), "time");
  await eventually("the same servers", async () => JSON.stringify(await listed()) === JSON.stringify(timeServers));
  assertNoPageErrors(pageErrors);
});

test("Add asks for what the entry needs, marks what is missing and keeps the secret out of sight", async () => {
  await open("#/add");
  await search("remote-echo");
  const remote = card(REMOTE);
  await remote.waitFor();
  await remote.getByRole("button", { name: /^Add/ }).click();
  const form = remote.locator("form.registry-add");
  await form.waitFor();
  const port = form.getByLabel("port");
  const key = form.getByLabel("X-Api-Key");
  assert.equal(await port.evaluate((input) => document.activeElement === input), true, "the first field has focus");
  assert.equal(await key.getAttribute("type"), "password");
  assert.match(await form.locator('[data-input="X-Api-Key"]').textContent(), /Kept in the keychain/);
  assert.match(await form.getByTestId("what-runs").textContent(), /Switchboard decides what runs from the entry.*http:\/\/127\.0\.0\.1:\{port\}\/mcp/);

  // Nothing goes while a required field is empty; each one says so.
  await form.getByRole("button", { name: "Add server" }).click();
  assert.equal(await port.getAttribute("aria-invalid"), "true");
  assert.equal(await key.getAttribute("aria-invalid"), "true");
  assert.match(await form.locator(".registry-add-error").textContent(), /Fill in port, X-Api-Key/);
  await screenshots(page, SCREENSHOTS, "add-form", remote);
  // Typing a value clears its mark; once none is left, the summary goes too.
  await port.fill("65535");
  assert.equal(await port.getAttribute("aria-invalid"), null);
  assert.equal(await key.getAttribute("aria-invalid"), "true");
  await key.fill(API_KEY);
  assert.equal(await form.locator(".registry-add-error").isVisible(), false);
  await form.getByLabel(/Server name/).fill("echo");

  // Add shows exactly what it would do, the secret as the keychain name it gets, and adds
  // nothing until it is confirmed.
  await form.getByRole("button", { name: "Add server" }).click();
  const plan = remote.getByTestId("plan");
  await plan.waitFor();
  assert.equal(await plan.getByTestId("plan-address").textContent(), "http://127.0.0.1:65535/mcp");
  assert.equal(await plan.getByTestId("plan-headers").textContent(), 'X-Api-Key: "${secret:echo_X-Api-Key}"');
  assert.match(await plan.getByTestId("plan-secrets").textContent(), /Kept in the keychain as echo_X-Api-Key/);
  assert.equal((await api("/api/backends")).body.some((backend) => backend.name === "echo"), false, "nothing added before the yes");
  await screenshots(page, SCREENSHOTS, "add-plan", remote);
  // Back returns to the form as it was; Add shows the plan again.
  await plan.getByRole("button", { name: "Back" }).click();
  assert.equal(await plan.isVisible(), false);
  assert.equal(await key.inputValue(), API_KEY);
  await form.getByRole("button", { name: "Add server" }).click();
  await remote.getByTestId("plan").getByRole("button", { name: "Confirm and add" }).click();
  const added = remote.getByTestId("added");
  await added.waitFor();
  assert.match(await added.textContent(), /Added as echo; its tools wait for your review\./);
  assert.equal(await added.getByRole("link", { name: "Open echo" }).getAttribute("href"), "#/backend/echo");
  assert.equal(await added.getByRole("link", { name: "Review its tools" }).getAttribute("href"), "#/review");
  assert.equal(await remote.getByTestId("added-as").getByRole("link", { name: "echo" }).getAttribute("href"), "#/backend/echo");
  // The value went to the keychain: the page shows it nowhere, and the config names it.
  assert.equal(await page.evaluate((value) => document.documentElement.outerHTML.includes(value), API_KEY), false);
  const secrets = await api("/api/secrets");
  assert.ok(secrets.body.secrets.some((secret) => secret.set && secret.used), JSON.stringify(secrets.body));
  await screenshots(page, SCREENSHOTS, "add-added", remote);
  assertNoPageErrors(pageErrors);
});

test("Add adds server-everything, and its page shows the version it runs", async () => {
  await open("#/add?q=everything");
  const everything = card(EVERYTHING);
  await everything.waitFor();
  assert.equal(await everything.getByTestId("version").textContent(), EVERYTHING_LATEST);
  await everything.getByRole("button", { name: /^Add/ }).click();
  const form = everything.locator("form.registry-add");
  await form.waitFor();
  assert.match(await form.textContent(), /It asks for nothing\./);
  assert.match(await form.getByTestId("what-runs").textContent(), new RegExp(`npm package @modelcontextprotocol/server-everything ${EVERYTHING_LATEST.replaceAll(".", "\\.")} over stdio`));
  await form.getByRole("button", { name: "Add server" }).click();
  const plan = everything.getByTestId("plan");
  await plan.waitFor();
  assert.equal(await plan.getByTestId("plan-program").textContent(), "npx");
  assert.deepEqual(await plan.getByTestId("plan-arguments").locator("li").allTextContents(),
    ['"-y"', `"@modelcontextprotocol/server-everything@${EVERYTHING_LATEST}"`, '"stdio"']);
  await plan.getByRole("button", { name: "Confirm and add" }).click();
  const added = everything.getByTestId("added");
  await added.waitFor();
  const text = await added.textContent();
  const [, server] = /Added as (\S+); its tools wait for your review\./.exec(text) ?? [];
  assert.ok(server, text);
  assert.match(text, new RegExp(`@modelcontextprotocol/server-everything@${EVERYTHING_LATEST.replaceAll(".", "\\.")}`));

  await added.getByRole("link", { name: `Open ${server}` }).click();
  await page.waitForURL(new RegExp(`#/backend/${server}$`));
  await eventually(`${server}'s version`, async () => (await fact("version").isVisible()) && (await fact("version").textContent()) === EVERYTHING_LATEST);
  await page.getByTestId("registry-entry").waitFor();
  assert.match(await page.getByTestId("registry-entry").textContent(), new RegExp(EVERYTHING));
  // Its tools wait for review: held back from editors, and said so.
  await heldNotice(server);
  assert.ok((await api("/api/pins")).body.held.some((held) => held.server === server), "its tools are held");
  // It is the newest: nothing to update.
  assert.equal(await page.getByTestId("update").isVisible(), false);
  assertNoPageErrors(pageErrors);
});

test("a server added at an older version offers the newer one, and Update moves it there", async () => {
  // The page is live before it is added, so that the notice of its held tools reaches it.
  await open("#/");
  await page.locator('body[data-feed="live"]').waitFor();
  // The API's add answers the plan first, then adds with the plan's confirmation.
  const choice = { name: EVERYTHING, version: EVERYTHING_OLDER, source: null, server: "everything-old", inputs: {} };
  const plan = await api("/api/registry/add", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(choice) });
  assert.equal(plan.status, 200, JSON.stringify(plan.body));
  const added = await api("/api/registry/add", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...choice, confirm: plan.body.confirm }),
  });
  assert.equal(added.status, 200, JSON.stringify(added.body));

  // The backends list says it too, compactly.
  await heldNotice("everything-old");
  const row = page.locator('tr[data-backend="everything-old"]');
  await eventually("everything-old's version in the list", async () => (await row.getByTestId("version").textContent()) === EVERYTHING_OLDER);
  await row.getByRole("button", { name: `Update everything-old to ${EVERYTHING_LATEST}` }).waitFor();
  await screenshots(page, SCREENSHOTS, "backends-update", row);

  await row.getByRole("link", { name: "everything-old" }).click();
  await page.waitForURL(/#\/backend\/everything-old$/);
  const offer = page.getByTestId("update");
  await offer.waitFor();
  assert.equal(await fact("version").textContent(), EVERYTHING_OLDER);
  assert.match(await offer.textContent(), new RegExp(`^Update to ${EVERYTHING_LATEST.replaceAll(".", "\\.")} available`));
  await dismissNotices();
  await screenshots(page, SCREENSHOTS, "backend-update");

  await offer.getByRole("button", { name: `Update everything-old to ${EVERYTHING_LATEST}` }).click();
  await page.locator(".toast", { hasText: `Updated everything-old to ${EVERYTHING_LATEST}` }).waitFor();
  await eventually("the version to move", async () => (await fact("version").textContent()) === EVERYTHING_LATEST);
  await eventually("the offer to go", async () => !(await offer.isVisible()));
  const installed = await api("/api/registry/installed");
  const old = installed.body.find((each) => each.server === "everything-old");
  assert.equal(old.update_available, false, JSON.stringify(old));
  assertNoPageErrors(pageErrors);
});

test("Remove asks on the page which of the server's secrets go too, then removes it", async () => {
  await open("#/backend/echo");
  const remove = page.getByRole("button", { name: "Remove echo…" });
  await remove.click();
  const confirm = page.getByTestId("remove-confirm");
  await confirm.waitFor();
  assert.equal(await remove.getAttribute("aria-expanded"), "true");
  const boxes = confirm.getByRole("checkbox");
  assert.equal(await boxes.count(), 1, "one secret: the API key");
  assert.equal(await boxes.first().isChecked(), false, "a secret stays unless ticked");
  const secret = await boxes.first().getAttribute("value");
  await dismissNotices();
  await screenshots(page, SCREENSHOTS, "backend-remove", confirm);

  // Cancel leaves everything as it was; Escape does too.
  await confirm.getByRole("button", { name: "Cancel" }).click();
  assert.equal(await confirm.isVisible(), false);
  assert.equal(await remove.evaluate((button) => document.activeElement === button), true, "focus goes back to Remove…");
  await remove.click();
  await confirm.waitFor();
  await page.keyboard.press("Escape");
  assert.equal(await confirm.isVisible(), false);
  assert.equal((await api("/api/backends")).body.some((backend) => backend.name === "echo"), true);

  await remove.click();
  await confirm.getByRole("checkbox").first().check();
  await confirm.getByRole("button", { name: "Remove echo" }).click();
  await page.waitForURL(/#\/$/);
  await page.locator(".toast", { hasText: "Removed echo" }).waitFor();
  assert.match(await page.locator(".toast", { hasText: "Removed echo" }).textContent(), new RegExp(`Deleted from the keychain: ${secret}`));
  await eventually("echo to leave the list", async () => (await page.locator('tr[data-backend="echo"]').count()) === 0);
  const secrets = await api("/api/secrets");
  assert.equal(secrets.body.secrets.some((each) => each.name === secret && each.set), false, JSON.stringify(secrets.body));
  assert.equal((await api("/api/backends")).body.some((backend) => backend.name === "echo"), false);
  assertNoPageErrors(pageErrors);
});
