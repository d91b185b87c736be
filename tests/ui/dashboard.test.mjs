// The dashboard in a real browser (Debian's Chromium, driven by playwright-core) against a real
// `switchboard serve` started by tests/it/ui.rs, in front of the built-in demo server ("demo"), the
// official "everything" server ("everything") and a server that exits during every start
// ("flaky"), with one invalid server entry in the config.
//
// The tests share the browser page and the backends and run one after the other, in order: each
// leaves the backends ready (or says what it changed). Screenshots of every main view, in the
// light and the dark theme, go to SWITCHBOARD_SCREENSHOTS (artifacts/ui/).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";

import {
  assertNoPageErrors as sharedAssertNoPageErrors,
  eventually,
  openDashboard,
  requiredEnv,
  screenshots as takeScreenshots,
} from "./browser.mjs";

const DASHBOARD_URL = requiredEnv("SWITCHBOARD_URL");
const SCREENSHOTS = requiredEnv("SWITCHBOARD_SCREENSHOTS");
const BASE = new URL(DASHBOARD_URL).origin;

/** @type {import("playwright-core").BrowserContext} */
let context;
/** @type {import("playwright-core").Page} */
let page;
let closeBrowser;
/** The run's dashboard key, which the page keeps in its tab's sessionStorage. */
let key;
/** Errors the page reported; every test ends with none. */
const pageErrors = [];

before(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  ({ context, page, close: closeBrowser, key } = await openDashboard(DASHBOARD_URL, pageErrors));
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: BASE });
});

after(async () => {
  await closeBrowser?.();
});

function assertNoPageErrors() {
  sharedAssertNoPageErrors(pageErrors);
}

/** Whether a process exists and is not a zombie. */
function alive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return !stat.slice(stat.lastIndexOf(")") + 1).trim().startsWith("Z");
  } catch {
    return false;
  }
}

async function open(hash) {
  await page.goto(`${BASE}/${hash}`);
  await page.locator("h1").first().waitFor();
}

/** A start, stop or restart button, by its accessible name ("Stop demo"). */
function actionButton(name) {
  return page.getByRole("button", { name, exact: true });
}

function row(name) {
  return page.locator(`tr[data-backend="${name}"]`);
}

async function waitForState(name, state) {
  await page.locator(`tr[data-backend="${name}"][data-state="${state}"]`).waitFor();
}

async function pidOf(name) {
  const text = await row(name).locator('[data-col="pid"]').textContent();
  const pid = Number(text);
  assert.ok(Number.isInteger(pid) && pid > 0, `a PID for ${name}, not ${JSON.stringify(text)}`);
  return pid;
}

/** Screenshots of the page in both themes (see `browser.mjs`). */
async function screenshots(name, focus) {
  await takeScreenshots(page, SCREENSHOTS, name, focus);
}

test("the list shows both backends ready, with PIDs, tools and ticking uptime", async () => {
  await open("#/");
  await waitForState("demo", "ready");
  await waitForState("everything", "ready");
  assert.equal(await page.locator("tbody tr[data-backend]").count(), 3);
  // The failing one says so, whichever step of its restarts it is at.
  await page.locator('tr[data-backend="flaky"]:is([data-state="backoff"], [data-state="crash_loop"])').waitFor();
  assert.match(await row("flaky").textContent(), /Handshake failed · exit code 2/);
  assert.equal(await row("demo").locator('[data-col="tools"]').textContent(), "5");
  assert.ok(Number(await row("everything").locator('[data-col="tools"]').textContent()) > 5);
  await pidOf("demo");
  assert.equal(await page.getByTestId("feed-status").getAttribute("data-phase"), "live");

  // Uptime ticks in the page between status events.
  const uptime = row("demo").locator('[data-col="uptime"]');
  const before = await uptime.textContent();
  await eventually("the uptime to tick", async () => (await uptime.textContent()) !== before);

  // Start is pointless for a ready backend; Stop and Restart are offered.
  assert.ok(await actionButton("Start demo").isDisabled());
  assert.ok(await actionButton("Stop demo").isEnabled());
  await screenshots("backends");
  assertNoPageErrors();
});

test("the config banner shows the invalid entry with file, line, column and field", async () => {
  const banner = page.getByTestId("config-banner");
  await banner.waitFor();
  const text = await banner.textContent();
  assert.match(text, /The config file has 1 error; `broken` is left out/);
  assert.match(text, /config\.toml:\d+:\d+/);
  assert.match(text, /servers\.broken\.command/);
  // The reader can fold the list away and back, from the keyboard.
  const toggle = banner.getByRole("button", { name: "Hide details" });
  await toggle.focus();
  await page.keyboard.press("Enter");
  assert.equal(await banner.locator("table").isVisible(), false);
  await banner.getByRole("button", { name: /Show/ }).press("Enter");
  assert.equal(await banner.locator("table").isVisible(), true);
  assertNoPageErrors();
});

test("an action the API refuses shows its message", async () => {
  await open("#/");
  await actionButton("Start flaky").click();
  const alert = page.locator('.toast[role="alert"]');
  await alert.waitFor();
  assert.match(await alert.textContent(), /Could not start flaky/);
  assert.match(await alert.textContent(), /exit code 2/);
  await alert.getByRole("button", { name: "Dismiss" }).click();
  assert.equal(await alert.count(), 0);
  assertNoPageErrors();
});

test("Stop makes demo stopped and its process disappear; Restart brings it back", async () => {
  await open("#/");
  await waitForState("demo", "ready");
  const pid = await pidOf("demo");
  assert.ok(alive(pid), `demo's process ${pid} runs`);

  await actionButton("Stop demo").click();
  await waitForState("demo", "stopped");
  assert.equal(await row("demo").locator('[data-col="pid"]').textContent(), "—");
  await eventually(`process ${pid} to be gone`, () => !alive(pid));
  assert.ok(await actionButton("Stop demo").isDisabled());
  // The other backend is untouched.
  await waitForState("everything", "ready");
  await screenshots("backends-stopped");

  await actionButton("Restart demo").click();
  await waitForState("demo", "ready");
  const newPid = await pidOf("demo");
  assert.notEqual(newPid, pid);
  assert.ok(alive(newPid), `demo's new process ${newPid} runs`);
  assertNoPageErrors();
});

test("the backend page shows the process, the server and its last exit", async () => {
  await page.getByRole("link", { name: "demo", exact: true }).first().click();
  await page.waitForURL(/#\/backend\/demo$/);
  await page.locator('.title-line [data-state="ready"]').waitFor();
  const overview = page.locator(".overview-grid");
  await overview.waitFor();
  assert.match(await overview.textContent(), /demo-server/);
  assert.match(await page.locator('[data-fact="server"]').textContent(), /MCP 2025-11-25/);
  // The stop and the restart of the previous test are its history.
  await overview.locator('.timeline-item[data-reason="stopped_by_user"]').waitFor();
  await screenshots("backend-overview");
  assertNoPageErrors();
});

test("tool search finds tools of every backend and leads to them", async () => {
  await open("#/tools");
  const search = page.getByTestId("tool-search");
  await search.fill("annotated");
  await page.locator('tr[data-backend="everything"][data-tool="get-annotated-message"]').waitFor();
  assert.equal(await page.locator("tbody tr[data-tool]").count(), 1);

  await search.fill("echo");
  await page.locator('tr[data-backend="demo"][data-tool="echo"]').waitFor();
  await page.locator('tr[data-backend="everything"][data-tool="echo"]').waitFor();
  assert.match(page.url(), /#\/tools\?q=echo$/);
  await screenshots("tools-search");

  await search.fill("no tool is called like this");
  await page.getByText("No tool matches").waitFor();

  // "/" focuses the search from anywhere.
  await open("#/");
  await page.keyboard.press("/");
  await page.waitForURL(/#\/tools$/);
  await eventually("the search field to have focus", () => page.evaluate(() => document.activeElement?.getAttribute("data-testid") === "tool-search"));
  await page.keyboard.type("echo");
  await page.locator('tr[data-backend="demo"][data-tool="echo"] a').first().click();
  await page.waitForURL(/#\/backend\/demo\/tools\/echo$/);
  await page.locator('.tool-detail[data-tool="echo"]').waitFor();
  assertNoPageErrors();
});

test("try it calls demo's echo and shows the result, readable and raw", async () => {
  await open("#/backend/demo/tools/echo");
  const detail = page.locator('.tool-detail[data-tool="echo"]');
  await detail.waitFor();
  // The schema is shown: the argument, its type, that it is required.
  const argument = detail.locator('.schema-table tr[data-property="text"]');
  assert.match(await argument.textContent(), /string/);
  assert.match(await argument.textContent(), /required/);
  assert.match(await detail.textContent(), /demo__echo/);

  // A required field left empty is refused before any call.
  await detail.getByTestId("call").click();
  assert.equal(await detail.locator('[data-field="text"]').getAttribute("aria-invalid"), "true");

  await detail.locator('[data-field="text"]').fill("hello from the dashboard");
  await detail.getByTestId("call").click();
  const result = detail.locator('.result[data-outcome="ok"]');
  await result.waitFor();
  assert.equal((await result.locator(".result-text").textContent()).trim(), "hello from the dashboard");

  await result.getByRole("button", { name: "Raw JSON" }).click();
  const raw = JSON.parse(await result.locator(".result-raw").textContent());
  assert.deepEqual(raw.content, [{ type: "text", text: "hello from the dashboard" }]);
  await result.getByRole("button", { name: "Raw JSON" }).click();

  // The same arguments as JSON.
  await detail.getByRole("button", { name: "Edit as JSON" }).click();
  const rawArguments = detail.getByTestId("raw-arguments");
  assert.deepEqual(JSON.parse(await rawArguments.inputValue()), { text: "hello from the dashboard" });
  await rawArguments.fill('{"text": "typed as JSON"}');
  await detail.getByTestId("call").click();
  await eventually("the JSON call's result", async () => (await detail.locator(".result-text").textContent())?.trim() === "typed as JSON");
  await detail.getByRole("button", { name: "Edit as form" }).click();
  assert.equal(await detail.locator('[data-field="text"]').inputValue(), "typed as JSON");
  await screenshots("tool-try-it", detail.locator(".result"));
  assertNoPageErrors();
});

test("a tool the config keeps from editors says so, and one it offers shows its exposed name", async () => {
  await open("#/backend/everything/tools/get-tiny-image");
  const denied = page.locator('.tool-detail[data-tool="get-tiny-image"]');
  await denied.getByTestId("not-offered").waitFor();
  assert.match(await denied.getByTestId("not-offered").textContent(), /Not offered to editors/);
  assert.equal(await denied.locator(".exposed code").count(), 0);
  await screenshots("tool-not-offered", denied);

  await open("#/backend/everything/tools/get-sum");
  const offered = page.locator('.tool-detail[data-tool="get-sum"]');
  await offered.locator(".exposed code").waitFor();
  assert.equal(await offered.locator(".exposed code").textContent(), "everything__get-sum");
  assert.equal(await offered.getByTestId("not-offered").count(), 0);
});

test("try it builds enum and number fields, and shows tool errors as such", async () => {
  await open("#/backend/everything/tools/get-structured-content");
  const detail = page.locator('.tool-detail[data-tool="get-structured-content"]');
  await detail.waitFor();
  await detail.locator('select[data-field="location"]').selectOption({ label: "Chicago" });
  await detail.getByTestId("call").click();
  const result = detail.locator('.result[data-outcome="ok"]');
  await result.waitFor();
  assert.match(await result.textContent(), /Structured content/);

  await open("#/backend/demo/tools/add");
  const add = page.locator('.tool-detail[data-tool="add"]');
  await add.locator('[data-field="a"]').fill("2.5");
  await add.locator('[data-field="b"]').fill("4");
  await add.getByTestId("call").click();
  await eventually("the sum", async () => (await add.locator('.result[data-outcome="ok"] .result-text').textContent())?.includes("6.5"));

  await open("#/backend/demo/tools/fail");
  const fail = page.locator('.tool-detail[data-tool="fail"]');
  await fail.getByTestId("call").click();
  await fail.locator('.result[data-outcome="tool_error"]').waitFor();
  assert.match(await fail.locator(".result").textContent(), /Tool error/);
  assertNoPageErrors();
});

test("calling demo's crash from try it adds a history entry with its stderr line", async () => {
  await open("#/backend/demo/history");
  await page.locator(".timeline, .placeholder").first().waitFor();
  const crashesBefore = await page.locator('.timeline-item[data-reason="crash"]').count();

  await open("#/backend/demo/tools/crash");
  const detail = page.locator('.tool-detail[data-tool="crash"]');
  await detail.locator('[data-field="code"]').fill("7");
  await detail.getByTestId("call").click();
  // The call cannot succeed: the process exits before it answers.
  await detail.locator('.result[data-outcome="failed"]').waitFor();

  await page.getByRole("link", { name: /^History/ }).click();
  await page.waitForURL(/#\/backend\/demo\/history$/);
  await eventually("a new crash entry", async () => (await page.locator('.timeline-item[data-reason="crash"]').count()) > crashesBefore);
  const newest = page.locator(".timeline-item").first();
  assert.equal(await newest.getAttribute("data-reason"), "crash");
  assert.match(await newest.textContent(), /exit code 7/);
  // Its output is open and holds the line the server printed before it crashed.
  const output = newest.locator("details.timeline-output");
  assert.equal(await output.getAttribute("open"), "");
  assert.match(await output.textContent(), /demo-server: crashing on request/);

  // The supervisor brings it back by itself.
  await page.locator('.title-line [data-state="ready"]').waitFor();
  await screenshots("backend-history");
  assertNoPageErrors();
});

test("the stderr tail follows live, pauses, and filters", async () => {
  await open("#/backend/demo/output");
  const log = page.getByTestId("output-log");
  await log.locator(".log-line").first().waitFor();
  const follow = page.getByTestId("follow");
  assert.equal(await follow.getAttribute("aria-pressed"), "true");

  // Live: a restart makes the new process print, and the lines arrive through the events.
  const startsBefore = await log.locator(".log-line", { hasText: "demo server listening" }).count();
  await actionButton("Restart demo").click();
  await eventually("the new process's first line", async () => (await log.locator(".log-line", { hasText: "demo server listening" }).count()) > startsBefore);

  // Paused: the view stands still and counts what it missed.
  await follow.click();
  assert.equal(await follow.getAttribute("aria-pressed"), "false");
  const shown = await log.locator(".log-line").count();
  await actionButton("Restart demo").click();
  const missed = page.getByRole("button", { name: /new lines? — resume/ });
  await missed.waitFor();
  assert.equal(await log.locator(".log-line").count(), shown, "a paused view does not grow");
  await missed.click();
  assert.equal(await follow.getAttribute("aria-pressed"), "true");
  await eventually("the missed lines", async () => (await log.locator(".log-line").count()) > shown);

  // The filter keeps matching lines only.
  await page.getByTestId("output-filter").fill("listening");
  await eventually("the filter", async () => {
    const texts = await log.locator(".log-line").allTextContents();
    return texts.length >= 2 && texts.every((text) => /listening/i.test(text));
  });
  assert.ok(await log.locator("mark").count() >= 2, "matches are marked");
  await page.getByTestId("output-filter").fill("");
  await screenshots("backend-output");
  assertNoPageErrors();
});

test("the tools tab renders schemas readably and filters the list", async () => {
  await open("#/backend/everything/tools/get-annotated-message");
  const detail = page.locator('.tool-detail[data-tool="get-annotated-message"]');
  await detail.waitFor();
  const messageType = detail.locator('.schema-table tr[data-property="messageType"]');
  assert.match(await messageType.textContent(), /"error" \| "success" \| "debug"/);
  // An enum becomes a select, a boolean with a default a checkbox.
  assert.equal(await detail.locator('select[data-field="messageType"]').count(), 1);
  assert.equal(await detail.locator('input[type="checkbox"][data-field="includeImage"]').count(), 1);

  await page.getByRole("searchbox", { name: "Filter this backend's tools" }).fill("sum");
  assert.deepEqual(await page.locator(".tool-list .tool-link-name").allTextContents(), ["get-sum"]);
  await screenshots("backend-tools");
  assertNoPageErrors();
});

test("Connect an editor lists every client with a working copy button", async () => {
  await page.getByRole("link", { name: "Connect an editor" }).click();
  await page.waitForURL(/#\/connect$/);
  const cards = page.locator(".client-card");
  await cards.first().waitFor();
  assert.ok(await cards.count() >= 2);
  const claude = page.locator('.client-card[data-client="claude-desktop"]');
  const snippet = await claude.locator("pre").textContent();
  assert.match(snippet, /"connect"/);
  const copy = claude.getByRole("button", { name: "Copy the snippet for Claude Desktop" });
  await copy.click();
  await eventually("the button to say so", async () => (await copy.textContent()).includes("Copied"));
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), snippet);
  const cursor = await page.locator('.client-card[data-client="cursor"] pre').textContent();
  assert.ok(cursor.includes(`${BASE}/mcp`), "the HTTP snippet names this endpoint");
  await screenshots("connect");
  assertNoPageErrors();
});

test("the live feed reconnects with backoff and shows it meanwhile", async () => {
  // Every connection to the event stream fails until the route is lifted.
  const refuse = (route) => route.abort("connectionfailed");
  await open("#/");
  await page.route("**/api/events", refuse);
  await page.reload();
  const feed = page.getByTestId("feed-status");
  await page.locator('[data-testid="feed-status"][data-phase="reconnecting"]').waitFor();
  assert.match(await feed.textContent(), /Reconnecting/);
  // What the snapshots say is still shown.
  await waitForState("demo", "ready");
  await screenshots("reconnecting");

  await page.unroute("**/api/events", refuse);
  // "Retry now" reconnects at once; the feed's own timer may get there first, which is as good
  // (the button is gone then).
  const live = page.locator('[data-testid="feed-status"][data-phase="live"]');
  const retry = feed.getByRole("button", { name: "Retry now" }).click().catch(() => live.waitFor());
  await Promise.race([retry, live.waitFor()]);
  await live.waitFor();
  assert.match(await feed.textContent(), /Live/);
  // The refused connections were reported on the console; nothing else was.
  const refused = pageErrors.filter((text) => /ERR_CONNECTION_FAILED|ERR_FAILED/.test(text)).length;
  assert.ok(refused > 0);
  pageErrors.splice(0, pageErrors.length, ...pageErrors.filter((text) => !/ERR_CONNECTION_FAILED|ERR_FAILED/.test(text)));
  assertNoPageErrors();
});

test("another program on 127.0.0.1 receives no credential of the dashboard's", async () => {
  /** @type {{url: string | undefined, headers: import("node:http").IncomingHttpHeaders}[]} */
  const seen = [];
  const listener = http.createServer((request, response) => {
    seen.push({ url: request.url, headers: request.headers });
    response.writeHead(200, { "content-type": "text/html" });
    response.end("<!doctype html><title>another program</title><p>another program</p>");
  });
  await new Promise((resolve) => listener.listen(0, "127.0.0.1", resolve));
  const other = `http://127.0.0.1:${/** @type {import("node:net").AddressInfo} */ (listener.address()).port}`;
  try {
    await open("#/");
    await waitForState("demo", "ready");
    // What the browser sends another port after the dashboard was opened: a new tab there, its
    // subresource and its fetch with credentials, and this very tab navigating away. (The
    // dashboard's own page cannot even try: its Content-Security-Policy allows only itself.)
    const tab = await context.newPage();
    await tab.goto(`${other}/tab`);
    await tab.evaluate(async () => {
      const image = new Image();
      image.src = "/image";
      await fetch("/fetch", { credentials: "include" });
    });
    const inTab = await tab.evaluate(() => JSON.stringify({ ...sessionStorage }) + JSON.stringify({ ...localStorage }) + document.cookie);
    await tab.close();
    await page.goto(`${other}/same-tab`);
    const inSameTab = await page.evaluate(() => JSON.stringify({ ...sessionStorage }) + JSON.stringify({ ...localStorage }) + document.cookie);
    await eventually("the image request", () => seen.some((request) => request.url === "/image"));
    const asked = seen.map((request) => request.url).filter((url) => url !== "/favicon.ico");
    assert.deepEqual(asked.sort(), ["/fetch", "/image", "/same-tab", "/tab"]);
    for (const request of seen) {
      assert.equal(request.headers.cookie, undefined, `${request.url} carries no cookie`);
      assert.equal(request.headers.authorization, undefined, `${request.url} carries no authorization`);
      assert.ok(!JSON.stringify(request.headers).includes(key), `${request.url} carries the key`);
    }
    for (const storage of [inTab, inSameTab]) assert.ok(!storage.includes(key), "the other origin's storage holds no key");
    // Back on the dashboard, the tab still has its key: the page and its live feed work.
    await open("#/");
    await waitForState("demo", "ready");
    await page.locator('[data-testid="feed-status"][data-phase="live"]').waitFor();
  } finally {
    listener.close();
  }
  assertNoPageErrors();
});

test("a tab opened without the link says where the link is, and asks the API for nothing it gets", async () => {
  const tab = await context.newPage();
  /** @type {number[]} */
  const statuses = [];
  /** @type {string[]} */
  const errors = [];
  tab.on("pageerror", (error) => errors.push(error.message));
  tab.on("response", (response) => {
    if (new URL(response.url()).pathname.startsWith("/api/")) statuses.push(response.status());
  });
  try {
    await tab.goto(`${BASE}/#/`);
    const locked = tab.getByTestId("locked");
    await locked.waitFor();
    assert.match(await locked.textContent(), /Open dashboard in the tray menu, or open the link that switchboard serve printed/);
    assert.deepEqual(statuses, [], "no API request without a key");
    // A key from an earlier run is refused, and the page says so instead of retrying forever.
    await tab.evaluate(() => sessionStorage.setItem("switchboard.key", "a-key-from-an-earlier-run-0123456789"));
    await tab.reload();
    await locked.waitFor();
    assert.ok(statuses.length > 0 && statuses.every((status) => status === 401), JSON.stringify(statuses));
    await takeScreenshots(tab, SCREENSHOTS, "locked");
    assert.deepEqual(errors, [], "the page threw nothing");
  } finally {
    await tab.close();
  }
});

test("every control is reachable from the keyboard and focus is visible", async () => {
  await open("#/");
  await waitForState("demo", "ready");
  // Tab from the top of a fresh page: the skip link first, then the navigation, the config banner
  // and what needs attention, then the table.
  await page.reload();
  await waitForState("demo", "ready");
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement?.id), "skip-link");
  const seen = [];
  for (let i = 0; i < 20; i += 1) {
    await page.keyboard.press("Tab");
    seen.push(await page.evaluate(() => {
      const element = document.activeElement;
      if (!element || element === document.body) return "BODY::true";
      const style = getComputedStyle(element);
      return `${element.tagName}:${element.getAttribute("aria-label") ?? element.textContent?.trim()}:${style.outlineStyle !== "none" || style.boxShadow !== "none"}`;
    }));
  }
  assert.ok(seen.some((entry) => entry.startsWith("A:demo")), `the backend link is reachable: ${seen.join(" | ")}`);
  assert.ok(seen.some((entry) => entry.startsWith("BUTTON:Restart demo")), `the actions are reachable: ${seen.join(" | ")}`);
  assert.ok(seen.every((entry) => entry.endsWith(":true")), `focus is visible everywhere: ${seen.join(" | ")}`);

  // Enter on a focused action runs it; the announcement region says what changed.
  await actionButton("Restart demo").focus();
  await page.keyboard.press("Enter");
  await waitForState("demo", "ready");
  await eventually("a state announcement", async () => /demo is/.test((await page.locator("#announcer").textContent()) ?? ""));
  assertNoPageErrors();
});

test("Install writes an editor's config in serve's home, once, and says why when it cannot", async () => {
  const home = requiredEnv("SWITCHBOARD_TEST_HOME");
  const cursorFile = path.join(home, ".cursor", "mcp.json");
  const mine = '{\n  // my servers\n  "mcpServers": {\n    "notes": { "command": "npx", "args": ["notes"] },\n  },\n}\n';
  fs.mkdirSync(path.dirname(cursorFile), { recursive: true });
  fs.writeFileSync(cursorFile, mine);
  await open("#/connect");
  const cursor = page.locator('.client-card[data-client="cursor"]');
  const install = cursor.getByRole("button", { name: "Install into Cursor" });
  await install.click();
  const result = cursor.locator(".install-result");
  await cursor.locator('.install-result[data-outcome="added"]').waitFor();
  assert.match(await result.textContent(), /Cursor: added the "switchboard" entry in .*mcp\.json\./);
  assert.match(await result.textContent(), /The file as it was is in .*mcp\.json\.switchboard-backup-/);
  // The rest of the file is as it was, comment and trailing comma included.
  const written = fs.readFileSync(cursorFile, "utf8");
  assert.equal(written, mine.replace(
    '"args": ["notes"] },\n',
    `"args": ["notes"] },\n    "switchboard": {\n      "url": "${BASE}/mcp",\n    },\n`,
  ));
  const backups = fs.readdirSync(path.dirname(cursorFile)).filter((name) => name.startsWith("mcp.json.switchboard-backup-"));
  assert.equal(backups.length, 1);
  assert.equal(fs.readFileSync(path.join(path.dirname(cursorFile), backups[0]), "utf8"), mine);
  await screenshots("connect-installed", cursor);

  // A second click finds it there and changes nothing.
  await install.click();
  await cursor.locator('.install-result[data-outcome="already_installed"]').waitFor();
  assert.match(await result.textContent(), /already points at Switchboard/);
  assert.equal(fs.readFileSync(cursorFile, "utf8"), written);
  assert.equal(fs.readdirSync(path.dirname(cursorFile)).length, 2, "no second backup");

  // VS Code has no file yet: it is created, folders and all.
  const vscode = page.locator('.client-card[data-client="vscode"]');
  await vscode.getByRole("button", { name: "Install into VS Code" }).click();
  await vscode.locator('.install-result[data-outcome="added"]').waitFor();
  const vscodeFile = path.join(home, ".config", "Code", "User", "mcp.json");
  assert.deepEqual(JSON.parse(fs.readFileSync(vscodeFile, "utf8")), { servers: { switchboard: { type: "http", url: `${BASE}/mcp` } } });

  // A file that is not JSON is left alone, and the page says where it is wrong.
  const claudeFile = path.join(home, ".config", "Claude", "claude_desktop_config.json");
  fs.mkdirSync(path.dirname(claudeFile), { recursive: true });
  fs.writeFileSync(claudeFile, '{ "mcpServers": { ');
  const claude = page.locator('.client-card[data-client="claude-desktop"]');
  await claude.getByRole("button", { name: "Install into Claude Desktop" }).click();
  await claude.locator('.install-result[data-outcome="error"]').waitFor();
  assert.match(await claude.locator(".install-result").textContent(), /claude_desktop_config\.json:1:\d+: not valid JSON/);
  await page.locator('.toast[role="alert"]', { hasText: "Could not install into Claude Desktop" }).waitFor();
  assert.equal(fs.readFileSync(claudeFile, "utf8"), '{ "mcpServers": { ');
  assert.deepEqual(fs.readdirSync(path.dirname(claudeFile)), ["claude_desktop_config.json"]);
  await page.locator('.toast[role="alert"]').getByRole("button", { name: "Dismiss" }).click();

  // Zed keeps its servers in its settings, under context_servers; nothing else there changes.
  const zedFile = path.join(home, ".config", "zed", "settings.json");
  fs.mkdirSync(path.dirname(zedFile), { recursive: true });
  fs.writeFileSync(zedFile, '{\n  // my theme\n  "theme": "One Dark"\n}\n');
  await page.reload();
  const zed = page.locator('.client-card[data-client="zed"]');
  await zed.locator('[data-testid="detected"]').waitFor();
  await zed.getByRole("button", { name: "Install into Zed" }).click();
  await eventually("Zed's settings to name Switchboard", () => fs.readFileSync(zedFile, "utf8").includes("context_servers"));
  const zedText = fs.readFileSync(zedFile, "utf8");
  assert.match(zedText, /\/\/ my theme\n  "theme": "One Dark"/, "the rest of the file stays");
  assert.match(zedText, /"switchboard": \{\s*"url": "http:\/\/127\.0\.0\.1:\d+\/mcp"/);
  assertNoPageErrors();
});
