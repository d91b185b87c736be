// Moving an editor over from the dashboard, in a real browser, against a real `switchboard
// serve` started by tests/it/editors.rs (`the_dashboard_moves_an_editor_over_...`). Serve runs
// only the built-in demo server (a first run), with its home in a temporary folder that holds
// Claude Desktop's file (SWITCHBOARD_EDITOR_FILE), a copy of
// tests/fixtures/editors/claude_desktop_config.json (SWITCHBOARD_FIXTURE): filesystem and
// "My Notes" move, files-again runs what filesystem runs, demo stays (a WebSocket server, a
// transport Switchboard does not speak), and its "switchboard" entry points at another binary.
//
// The tests share the page and run in order. Screenshots, in the light and the dark theme, go to
// SWITCHBOARD_SCREENSHOTS (artifacts/ui/).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";

import { assertNoPageErrors, eventually, openDashboard, requiredEnv, screenshots } from "./browser.mjs";

const DASHBOARD_URL = requiredEnv("SWITCHBOARD_URL");
const SCREENSHOTS = requiredEnv("SWITCHBOARD_SCREENSHOTS");
const EDITOR_FILE = requiredEnv("SWITCHBOARD_EDITOR_FILE");
const FIXTURE = fs.readFileSync(requiredEnv("SWITCHBOARD_FIXTURE"));
const CONFIG = requiredEnv("SWITCHBOARD_CONFIG");
const CONFIG_BEFORE = fs.readFileSync(CONFIG, "utf8");

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

/** Claude Desktop's file as JSON (it starts with a byte order mark). */
function editorFile() {
  return JSON.parse(fs.readFileSync(EDITOR_FILE, "utf8").replace(/^\uFEFF/, ""));
}

function card() {
  return page.locator('.move-card[data-editor="claude-desktop"]');
}

/** Waits for the card's outcome of `kind`, and returns its text. */
async function outcome(scope, kind) {
  const element = scope.locator(`[data-testid="move-outcome"][data-outcome="${kind}"]`);
  await element.waitFor();
  return (await element.textContent()) ?? "";
}

/** Each listed entry of `scope` as name → kind. */
async function fates(scope) {
  const items = scope.locator("[data-entry]");
  await items.first().waitFor();
  const pairs = await items.evaluateAll((elements) => elements.map((element) => [element.dataset.entry, element.dataset.kind]));
  return Object.fromEntries(pairs);
}

test("on a first run the dashboard offers to bring Claude Desktop's servers over", async () => {
  const panel = page.locator('[data-testid="first-run"]');
  await panel.waitFor();
  assert.match(await panel.getByRole("heading", { level: 2 }).textContent(), /^\s*Bring your servers over$/);
  const claude = panel.locator('.welcome-editor[data-editor="claude-desktop"]');
  assert.match(await claude.textContent(), /Claude Desktop/);
  assert.match(await claude.textContent(), /claude_desktop_config\.json/);
  assert.deepEqual(await fates(claude), { filesystem: "moved", "My Notes": "moved", "files-again": "duplicate", demo: "stays" });
  assert.equal(await claude.locator('[data-kind="stays"]').getAttribute("title"), "Stays: its type \"websocket\" is a transport Switchboard does not speak (Switchboard speaks stdio, Streamable HTTP and HTTP+SSE)");
  assert.ok(await panel.getByRole("link", { name: "Connect an editor" }).isVisible());
  // The backends are still listed below it.
  await page.locator('.backends-table tr[data-backend="demo"]').waitFor();
  await screenshots(page, SCREENSHOTS, "first-run");
  assertNoPageErrors(pageErrors);
});

test("Move in the panel moves the servers over, backs the file up and says what to do next", async () => {
  const claude = page.locator('.welcome-editor[data-editor="claude-desktop"]');
  await claude.getByRole("button", { name: "Move 2 servers over" }).click();
  const said = await outcome(claude, "moved");
  assert.match(said, /^Moved 2 servers over to Switchboard: filesystem, My_Notes; 3 entries taken out of Claude Desktop's file\./);
  assert.match(said, /The file as it was is in .*claude_desktop_config\.json\.switchboard-backup-/);
  assert.match(said, /Restart Claude Desktop \(or reload its MCP servers\) to connect it to Switchboard\./);

  const moved = editorFile();
  assert.deepEqual(Object.keys(moved.mcpServers), ["demo", "switchboard"], "the moved entries and the duplicate are taken out; demo stays");
  assert.deepEqual(moved.mcpServers.switchboard.args, ["connect"]);
  assert.notEqual(moved.mcpServers.switchboard.command, "/usr/local/bin/switchboard", "the entry points at this Switchboard");
  assert.equal(moved.globalShortcut, "Ctrl+Space", "the rest of the file stays");
  const config = fs.readFileSync(CONFIG, "utf8");
  assert.ok(config.startsWith(CONFIG_BEFORE), "our config keeps every byte it had");
  assert.match(config, /\[servers\.filesystem\]/);
  assert.match(config, /\[servers\.My_Notes\]/);
  // The config is read again: the moved servers join the list.
  await page.locator('.backends-table tr[data-backend="filesystem"]').waitFor();
  await page.locator('.backends-table tr[data-backend="My_Notes"]').waitFor();
  // The panel stays, with nothing more to move, until the page is left.
  assert.equal(await claude.getByRole("button", { name: /Move/ }).count(), 0);
  await screenshots(page, SCREENSHOTS, "first-run-moved");
  assertNoPageErrors(pageErrors);
});

test("the Connect page shows the move and Undo puts the file back byte for byte", async () => {
  await page.locator('.welcome-editor[data-editor="claude-desktop"]').getByRole("link", { name: "Undo it on the Connect page" }).click();
  await page.waitForURL(/#\/connect$/);
  const claude = card();
  assert.match(await outcome(claude, "moved"), /The file as it was is in/, "the move's message is still shown");
  await claude.locator('[data-testid="nothing-to-move"]').waitFor();
  assert.deepEqual(await fates(claude), { demo: "stays" });
  assert.match(await claude.locator('[data-testid="switchboard-entry"]').textContent(), /points at Switchboard already/);
  await screenshots(page, SCREENSHOTS, "connect-moved", claude);

  // By keyboard.
  const undo = claude.getByRole("button", { name: "Undo the last move" });
  await undo.focus();
  await page.keyboard.press("Enter");
  assert.match(await outcome(claude, "undone"), /Claude Desktop \(.*claude_desktop_config\.json\) is back as it was before the move\./);
  assert.ok(fs.readFileSync(EDITOR_FILE).equals(FIXTURE), "the editor's file is the sample again, byte for byte");
  assert.equal(fs.readFileSync(CONFIG, "utf8"), CONFIG_BEFORE, "our config is as it was");
  // The preview is back, and Undo is gone.
  await claude.getByRole("button", { name: "Move 2 servers over" }).waitFor();
  assert.equal(await claude.getByRole("button", { name: "Undo the last move" }).count(), 0);
  assertNoPageErrors(pageErrors);
});

test("each entry is said in words, with the duplicates and both diffs", async () => {
  const claude = card();
  const entry = (name) => claude.locator(`.move-entries [data-entry="${name}"]`);
  assert.equal(await entry("filesystem").textContent(), "filesystem becomes Switchboard server filesystem, taken out of the editor");
  assert.equal(await entry("My Notes").textContent(), "My Notes becomes Switchboard server My_Notes, taken out of the editor");
  assert.equal(await entry("files-again").textContent(), "files-again runs what filesystem runs, which moves over, taken out of the editor");
  assert.equal(await entry("demo").textContent(), "demo stays in the editor: its type \"websocket\" is a transport Switchboard does not speak (Switchboard speaks stdio, Streamable HTTP and HTTP+SSE)");
  assert.match(await claude.locator('[data-testid="switchboard-entry"]').textContent(), /entry switchboard is changed to point at this Switchboard/);
  assert.match(await claude.locator('[data-testid="duplicates"]').textContent(), /1 entry runs what Switchboard runs already, or gets in this move: files-again \(same as filesystem\)/);

  // Keeping the originals says so.
  const keep = claude.getByLabel("Keep the originals in the editor");
  await keep.check();
  assert.equal(await entry("filesystem").textContent(), "filesystem becomes Switchboard server filesystem, and stays in the editor too");
  assert.ok(await claude.getByRole("button", { name: "Take out duplicates only" }).isDisabled());
  await keep.uncheck();

  // The changes, opened by keyboard.
  const summary = claude.locator("summary", { hasText: "Show the changes" });
  await summary.focus();
  await page.keyboard.press("Enter");
  const diffs = claude.locator("pre.move-diff");
  await diffs.first().waitFor();
  assert.equal(await diffs.count(), 2);
  const removed = await diffs.nth(0).locator(".move-diff-del").allTextContents();
  assert.ok(removed.includes('-    "filesystem": {\n'), removed.join(""));
  const added = await diffs.nth(1).locator(".move-diff-add").allTextContents();
  assert.ok(added.includes("+[servers.filesystem]\n"), added.join(""));
  // Added and removed lines are told apart by color too.
  const colors = await Promise.all([diffs.nth(0).locator(".move-diff-del").first(), diffs.nth(1).locator(".move-diff-add").first()]
    .map((line) => line.evaluate((element) => getComputedStyle(element).backgroundColor)));
  assert.notEqual(colors[0], colors[1]);
  await screenshots(page, SCREENSHOTS, "connect-move", claude);
  assertNoPageErrors(pageErrors);
});

test("a file changed after the preview is not moved; the preview shown again moves it", async () => {
  const claude = card();
  // Someone edits the file while the page shows its preview.
  const changed = FIXTURE.toString("utf8").replace("Ctrl+Space", "Ctrl+K");
  fs.writeFileSync(EDITOR_FILE, changed);
  await claude.getByRole("button", { name: "Move 2 servers over" }).click();
  assert.match(await outcome(claude, "changed"), /the file changed since the preview; nothing was written/);
  assert.equal(fs.readFileSync(EDITOR_FILE, "utf8"), changed, "nothing was written");
  assert.equal(fs.readFileSync(CONFIG, "utf8"), CONFIG_BEFORE);
  await screenshots(page, SCREENSHOTS, "connect-move-changed", claude);

  // The preview was read again: it shows the file as it is now, and moves it.
  await claude.locator("summary", { hasText: "Show the changes" }).click();
  await claude.locator(".move-diff-context", { hasText: "Ctrl+K" }).first().waitFor();
  await claude.getByRole("button", { name: "Move 2 servers over" }).click();
  assert.match(await outcome(claude, "moved"), /The file as it was is in/);
  const moved = editorFile();
  assert.deepEqual(Object.keys(moved.mcpServers), ["demo", "switchboard"]);
  assert.equal(moved.globalShortcut, "Ctrl+K");
  assertNoPageErrors(pageErrors);
});

test("an undo over a file changed since the move asks first, and Undo anyway puts it back", async () => {
  const claude = card();
  const before = FIXTURE.toString("utf8").replace("Ctrl+Space", "Ctrl+K");
  const edited = fs.readFileSync(EDITOR_FILE, "utf8").replace('"quickEntryShortcut": "off"', '"quickEntryShortcut": "on"');
  fs.writeFileSync(EDITOR_FILE, edited);
  await claude.getByRole("button", { name: "Undo the last move" }).click();
  assert.match(await outcome(claude, "undo_refused"), /changed since the move; putting the old file back would lose that change/);
  assert.equal(fs.readFileSync(EDITOR_FILE, "utf8"), edited, "nothing was written");
  const anyway = claude.getByRole("button", { name: "Undo anyway" });
  await screenshots(page, SCREENSHOTS, "connect-undo-refused", claude);
  await anyway.click();
  assert.match(await outcome(claude, "undone"), /is back as it was before the move/);
  assert.equal(fs.readFileSync(EDITOR_FILE, "utf8"), before, "the file as it was before the move");
  assert.equal(fs.readFileSync(CONFIG, "utf8"), CONFIG_BEFORE);
  assertNoPageErrors(pageErrors);
});

test("Take out duplicates only leaves the rest and imports nothing", async () => {
  const claude = card();
  fs.writeFileSync(EDITOR_FILE, FIXTURE);
  await page.reload();
  await claude.getByRole("button", { name: "Take out duplicates only" }).click();
  await outcome(claude, "moved");
  assert.deepEqual(Object.keys(editorFile().mcpServers), ["filesystem", "My Notes", "demo", "switchboard"]);
  assert.equal(fs.readFileSync(CONFIG, "utf8"), CONFIG_BEFORE, "nothing is imported");
  await claude.getByRole("button", { name: "Undo the last move" }).click();
  await outcome(claude, "undone");
  assert.ok(fs.readFileSync(EDITOR_FILE).equals(FIXTURE));
  assertNoPageErrors(pageErrors);
});

test("a file that is not valid is shown with its error and no buttons", async () => {
  fs.writeFileSync(EDITOR_FILE, '{ "mcpServers": { ');
  await page.reload();
  const claude = card();
  const error = claude.locator('[data-testid="move-error"]');
  await error.waitFor();
  assert.match(await error.textContent(), /claude_desktop_config\.json:1:\d+: not valid JSON/);
  assert.equal(await claude.getByRole("button").count(), 0);
  await screenshots(page, SCREENSHOTS, "connect-move-invalid", claude);
  fs.writeFileSync(EDITOR_FILE, FIXTURE);
  assertNoPageErrors(pageErrors);
});
