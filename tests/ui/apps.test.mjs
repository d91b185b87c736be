// An MCP App rendered in a real browser through Switchboard, against a real `switchboard serve`
// started by tests/it/apps.rs (`an_app_renders_and_calls_its_tool_back_in_a_real_browser`) in
// front of the official `@modelcontextprotocol/server-basic-vanillajs` from npm as `clock`. The
// editor is played by the official TypeScript SDK's client (2.x) here in Node, declaring that it
// renders views, connected to `/mcp` and then through `switchboard connect`, and by a page that
// hosts the view with the official `@modelcontextprotocol/ext-apps` bridge (`apps-host.mjs`,
// bundled for the browser by Vite): the client lists the tool, calls it and reads its view; the
// page shows the view in a sandboxed frame with the call's result; the view's button calls its
// tool back (by the server's own name, through the page and the client) and shows the new
// result. Screenshots go to SWITCHBOARD_SCREENSHOTS (artifacts/ui/).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { build } from "vite";

import { assertNoPageErrors, eventually, openPage, requiredEnv, screenshots } from "./browser.mjs";

const MCP_URL = requiredEnv("SWITCHBOARD_MCP_URL");
const SWITCHBOARD = requiredEnv("SWITCHBOARD_EXE");
const SCREENSHOTS = requiredEnv("SWITCHBOARD_SCREENSHOTS");
const VIEW_MIME_TYPE = "text/html;profile=mcp-app";
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/** @type {import("playwright-core").BrowserContext} */
let browser;
let closeBrowser;
const pageErrors = [];
let hostBundle;

before(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  ({ context: browser, close: closeBrowser } = await openPage(pageErrors));
  hostBundle = await bundle();
});

after(async () => {
  await closeBrowser?.();
});

/** The editor's client, which declares that it renders views. */
function editorClient() {
  return new Client(
    { name: "switchboard-apps-test", version: "1.0.0" },
    { capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: [VIEW_MIME_TYPE] } } } },
  );
}

/** `apps-host.mjs` with what it imports, as one module for the page. */
async function bundle() {
  const built = await build({
    configFile: false,
    logLevel: "silent",
    build: {
      write: false,
      minify: false,
      lib: { entry: path.resolve("tests/ui/apps-host.mjs"), formats: ["es"], fileName: "host" },
    },
  });
  const [output] = Array.isArray(built) ? built : [built];
  return output.output[0].code;
}

/**
 * Lists, calls and reads the app's tool through `client`, shows its view in a new page of the
 * browser, clicks its button and checks the view's own call came back; screenshots as `name`.
 */
async function hostTheView(client, name) {
  const { tools } = await client.listTools();
  const tool = tools.find((candidate) => candidate.name === "clock__get-time");
  assert.ok(tool, `clock__get-time in ${tools.map((candidate) => candidate.name)}`);
  const uri = tool._meta?.ui?.resourceUri;
  assert.equal(uri, "ui://get-time/mcp-app.html");

  const result = await client.callTool({ name: tool.name, arguments: {} });
  assert.match(result.structuredContent?.time ?? "", ISO_TIME);
  const { contents } = await client.readResource({ uri });
  assert.equal(contents[0].mimeType, VIEW_MIME_TYPE);

  const page = await browser.newPage();
  page.on("pageerror", (error) => pageErrors.push(`pageerror: ${error.message}`));
  /** The tool calls the view made through the page, as the page passed them on. */
  const callsFromTheView = [];
  await page.exposeFunction("hostCallTool", async (params) => {
    callsFromTheView.push(params.name);
    return client.callTool({ name: params.name, arguments: params.arguments ?? {} });
  });
  await page.setContent("<!doctype html><html><head><title>Host</title></head><body></body></html>");
  await page.addScriptTag({ type: "module", content: hostBundle });
  await page.waitForFunction(() => typeof window.showView === "function");
  await page.evaluate(([html, output]) => window.showView(html, {}, output), [contents[0].text, result]);

  const view = page.frameLocator("#view");
  const shown = view.locator("#server-time");
  await eventually("the view shows the call's result", async () => (await shown.textContent()) === result.structuredContent.time);
  await screenshots(page, SCREENSHOTS, `${name}`, page.locator("#view"));

  await view.locator("#get-time-btn").click();
  const again = await eventually("the view shows its own call's result", async () => {
    const text = (await shown.textContent())?.trim() ?? "";
    return text !== result.structuredContent.time && ISO_TIME.test(text) && text;
  });
  assert.deepEqual(callsFromTheView, ["get-time"], "the view called its tool by the server's own name");
  assert.ok(Date.parse(again) >= Date.parse(result.structuredContent.time), again);
  await screenshots(page, SCREENSHOTS, `${name}-called-back`, page.locator("#view"));
  assertNoPageErrors(pageErrors);
  await page.close();
}

test("an app's view renders and calls its tool back through /mcp", async () => {
  const client = editorClient();
  await client.connect(new StreamableHTTPClientTransport(new URL(MCP_URL)));
  try {
    await hostTheView(client, "app-view");
  } finally {
    await client.close();
  }
});

test("an app's view renders and calls its tool back through connect", async () => {
  const client = editorClient();
  await client.connect(new StdioClientTransport({ command: SWITCHBOARD, args: ["connect"], env: process.env }));
  try {
    await hostTheView(client, "app-view-connect");
  } finally {
    await client.close();
  }
});
