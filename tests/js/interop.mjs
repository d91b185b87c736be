// Interoperability with the official TypeScript MCP SDK as the editor, against a real
// `switchboard serve` (started by tests/it/interop_js.rs) in front of the built-in demo server, the
// official "everything" server and tests/backends/misbehave.py. Every editor scenario runs over
// Streamable HTTP (SWITCHBOARD_URL) and over stdio through `switchboard connect`
// (SWITCHBOARD_EXE, attached through SWITCHBOARD_RUNTIME_DIR).
//
// The backends are shared by every test in this file, and node:test runs them one after the
// other, so tests that read backend state (cancelled ids, the tool list) compare before and after.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  StdioClientTransport,
  getDefaultEnvironment,
} from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

/** Generous bound for an event that should come within milliseconds. */
const EVENT_LIMIT_MS = 20_000;
const ELICITED_NAME = "Grace Hopper";
const ROOT_URI = "file:///tmp/switchboard-interop-root";

const URL_ = requiredEnv("SWITCHBOARD_URL");
const EXE = requiredEnv("SWITCHBOARD_EXE");
const RUNTIME_DIR = requiredEnv("SWITCHBOARD_RUNTIME_DIR");

function requiredEnv(name) {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set; run this through tests/it/interop_js.rs`);
  }
  return value;
}

/**
 * Approves `key` of `server` through the control API once it is held back.
 * @param {string} server
 * @param {string} key
 */
async function approveWhenHeld(server, key) {
  const api = new URL("/api/", URL_);
  const headers = { Authorization: `Bearer ${requiredEnv("SWITCHBOARD_TOKEN")}`, "Content-Type": "application/json" };
  const deadline = Date.now() + 20_000;
  for (;;) {
    const report = await (await fetch(new URL("pins", api), { headers })).json();
    if (report.held.some((held) => held.server === server && held.key === key)) break;
    assert.ok(Date.now() < deadline, `${key} of ${server} was never held: ${JSON.stringify(report)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const answer = await fetch(new URL(`pins/${server}/approve`, api), { method: "POST", headers, body: JSON.stringify({ tools: [key] }) });
  assert.equal(answer.status, 200, await answer.text());
}

/** A queue of events with bounded waits. */
class Inbox {
  constructor(name) {
    this.name = name;
    this.items = [];
    this.waiters = [];
  }

  push(item) {
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter(item);
    } else {
      this.items.push(item);
    }
  }

  /** The next item; fails after EVENT_LIMIT_MS naming `what`. */
  next(what) {
    if (this.items.length > 0) {
      return Promise.resolve(this.items.shift());
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((waiter) => waiter !== deliver);
        reject(new Error(`${what} (${this.name}) did not arrive within ${EVENT_LIMIT_MS} ms`));
      }, EVENT_LIMIT_MS);
      const deliver = (item) => {
        clearTimeout(timer);
        resolve(item);
      };
      this.waiters.push(deliver);
    });
  }

  drain() {
    this.items = [];
  }
}

/**
 * An SDK client that answers like an editor: sampling with `cannedSample`, elicitation with a
 * filled form, roots with one root; and records what it is asked and told.
 */
async function connectEditor(kind, cannedSample = `canned answer over ${kind}`) {
  const client = new Client(
    { name: `switchboard-interop-js-${kind}`, version: "1.0.0" },
    { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } },
  );
  const editor = {
    kind,
    client,
    cannedSample,
    samplingRequests: new Inbox(`${kind} sampling requests`),
    elicitationRequests: new Inbox(`${kind} elicitation requests`),
    resourceUpdates: new Inbox(`${kind} resource updates`),
    toolsChanged: new Inbox(`${kind} tools list_changed`),
  };
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    editor.samplingRequests.push(request.params);
    return {
      role: "assistant",
      content: { type: "text", text: cannedSample },
      model: "interop-model",
      stopReason: "endTurn",
    };
  });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    editor.elicitationRequests.push(request.params);
    return { action: "accept", content: { name: ELICITED_NAME, check: true } };
  });
  client.setRequestHandler(ListRootsRequestSchema, async () => ({
    roots: [{ uri: ROOT_URI, name: "interop root" }],
  }));
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
    editor.resourceUpdates.push(notification.params.uri);
  });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    editor.toolsChanged.push(true);
  });

  const transport =
    kind === "http"
      ? new StreamableHTTPClientTransport(new URL(URL_))
      : new StdioClientTransport({
          command: EXE,
          args: ["connect"],
          env: {
            ...getDefaultEnvironment(),
            SWITCHBOARD_RUNTIME_DIR: RUNTIME_DIR,
            ...optionalEnv("SWITCHBOARD_DATA_DIR", "SWITCHBOARD_CONFIG"),
            SWITCHBOARD_LOG: "warn",
          },
          stderr: "inherit",
        });
  editor.transport = transport;
  await client.connect(transport, { timeout: EVENT_LIMIT_MS });
  await waitForTools(editor, ["demo__echo", "everything__echo", "mis__echo"]);
  return editor;
}

function optionalEnv(...names) {
  return Object.fromEntries(
    names.filter((name) => process.env[name]).map((name) => [name, process.env[name]]),
  );
}

async function toolNames(client) {
  const names = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    names.push(...page.tools.map((tool) => tool.name));
    cursor = page.nextCursor;
  } while (cursor);
  return names;
}

/** Waits until tools/list offers every name in `expected`, re-listing on each list_changed. */
async function waitForTools(editor, expected) {
  for (;;) {
    const names = await toolNames(editor.client);
    if (expected.every((name) => names.includes(name))) {
      return;
    }
    await editor.toolsChanged.next(`tools ${expected.join(", ")} (listed: ${names.join(", ")})`);
  }
}

async function call(editor, name, args = {}, options = {}) {
  return editor.client.callTool({ name, arguments: args }, undefined, {
    timeout: EVENT_LIMIT_MS,
    ...options,
  });
}

function textOf(result) {
  return result.content
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("\n");
}

async function cancelledIds(editor) {
  return JSON.parse(textOf(await call(editor, "mis__cancelled_ids")));
}

for (const kind of ["http", "stdio"]) {
  describe(`the TypeScript SDK over ${kind}`, () => {
    let editor;
    before(async () => {
      editor = await connectEditor(kind);
    });
    after(async () => {
      await editor?.client.close();
    });

    test("initialize names Switchboard and its capabilities", () => {
      const server = editor.client.getServerVersion();
      assert.equal(server.name, "switchboard");
      const capabilities = editor.client.getServerCapabilities();
      assert.deepEqual(capabilities.tools, { listChanged: true });
      assert.equal(capabilities.resources.subscribe, true);
      if (kind === "http") {
        assert.equal(editor.transport.protocolVersion, "2025-11-25");
      }
    });

    test("lists and calls tools of every backend", async () => {
      const names = await toolNames(editor.client);
      for (const name of ["demo__echo", "demo__add", "everything__echo", "mis__echo"]) {
        assert.ok(names.includes(name), `${name} is listed: ${names}`);
      }
      assert.equal(textOf(await call(editor, "demo__echo", { text: "hello demo" })), "hello demo");
      assert.equal(
        textOf(await call(editor, "everything__echo", { message: "hello everything" })),
        "Echo: hello everything",
      );
      assert.equal(textOf(await call(editor, "demo__add", { a: 2, b: 40 })), "42");
      const echoed = await call(editor, "mis__echo", { text: "x" });
      assert.equal(echoed["x-extra"], 1, "unknown result fields pass through");
      const failed = await call(editor, "mis__fail");
      assert.equal(failed.isError, true);
      await assert.rejects(call(editor, "nobody__nothing"), /nobody__nothing/);
    });

    test("progress notifications reach the caller, in order", async () => {
      // The backend sends its last notification right before its response. Switchboard keeps
      // that order on the wire (tests/it/connect.rs reads the raw lines), but the SDK handles a
      // notification a microtask later than a response read in the same chunk, so over a pipe
      // it drops every notification that arrives with the response. Only the HTTP stream, one
      // event per chunk, shows them all always. Over a pipe the steps lie 100 ms apart, so that
      // a loaded host holding the backend back for 10 ms does not merge them all into one read.
      const [rounds, duration, steps] = editor.kind === "http" ? [50, 0.02, 2] : [10, 0.3, 3];
      const all = Array.from({ length: steps }, (_, step) => [step + 1, steps]);
      for (let round = 0; round < rounds; round += 1) {
        const progress = [];
        const result = await call(
          editor,
          "everything__trigger-long-running-operation",
          { duration, steps },
          { onprogress: (update) => progress.push([update.progress, update.total]) },
        );
        assert.match(textOf(result), /Long running operation completed/);
        const expected = editor.kind === "http" ? all : all.slice(0, progress.length);
        assert.ok(progress.length >= 1, `round ${round}: no progress at all`);
        assert.deepEqual(progress, expected, `round ${round}`);
      }
    });

    test("sampling requests of a backend reach this editor and its answer goes back", async () => {
      const result = await call(editor, "everything__trigger-sampling-request", {
        prompt: "what is switchboard?",
        maxTokens: 20,
      });
      const request = await editor.samplingRequests.next("the sampling request");
      assert.equal(
        request.messages[0].content.text,
        "Resource trigger-sampling-request context: what is switchboard?",
      );
      assert.equal(request.maxTokens, 20);
      assert.ok(textOf(result).includes(editor.cannedSample), textOf(result));

      const asked = await call(editor, "mis__ask", {
        method: "sampling/createMessage",
        params: {
          messages: [{ role: "user", content: { type: "text", text: "ping?" } }],
          maxTokens: 5,
        },
      });
      const second = await editor.samplingRequests.next("the second sampling request");
      assert.equal(second.messages[0].content.text, "ping?");
      const reply = JSON.parse(textOf(asked));
      assert.equal(reply.content.text, editor.cannedSample);
      assert.equal(reply.model, "interop-model");
    });

    test("elicitation requests of a backend reach this editor and its answer goes back", async () => {
      const result = await call(editor, "everything__trigger-elicitation-request");
      const request = await editor.elicitationRequests.next("the elicitation request");
      assert.equal(request.message, "Please provide inputs for the following fields:");
      assert.deepEqual(request.requestedSchema.required, ["name"]);
      const text = textOf(result);
      assert.ok(text.includes(`- Name: ${ELICITED_NAME}`), text);
      assert.ok(text.includes("- Agreed to terms: true"), text);
    });

    test("roots come from the editor", async () => {
      const text = textOf(await call(editor, "everything__get-roots-list"));
      assert.ok(text.includes(ROOT_URI), text);
    });

    test("cancelling a call cancels it at the backend", async () => {
      const cancelledBefore = await cancelledIds(editor);
      const controller = new AbortController();
      let started;
      const running = new Promise((resolve) => {
        started = resolve;
      });
      const slow = call(
        editor,
        "mis__slow",
        { ms: 60_000 },
        // The first progress notification proves the call runs at the backend.
        { signal: controller.signal, onprogress: () => started() },
      );
      const outcome = assert.rejects(slow, /abort|cancel/i);
      await Promise.race([
        running,
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error("mis__slow never reported progress")), EVENT_LIMIT_MS),
        ),
      ]);
      controller.abort(new Error("cancelled by the interop test"));
      await outcome;

      // notifications/cancelled is not answered: ask the backend until it reports it.
      const deadline = Date.now() + EVENT_LIMIT_MS;
      let cancelledAfter = cancelledBefore;
      while (cancelledAfter.length === cancelledBefore.length && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        cancelledAfter = await cancelledIds(editor);
      }
      assert.equal(
        cancelledAfter.length,
        cancelledBefore.length + 1,
        `one more cancellation: ${JSON.stringify(cancelledAfter)}`,
      );
      assert.equal(textOf(await call(editor, "mis__echo", { text: "still here" })), "still here");
    });

    test("resource updates follow this session's subscriptions", async () => {
      editor.resourceUpdates.drain();
      await editor.client.subscribeResource({ uri: "test://a" });
      // The backend sends these in order; only the subscribed one may arrive.
      await call(editor, "mis__update", { uri: "test://b" });
      await call(editor, "mis__update", { uri: "test://a" });
      assert.equal(await editor.resourceUpdates.next("the update of test://a"), "test://a");

      await editor.client.unsubscribeResource({ uri: "test://a" });
      await editor.client.subscribeResource({ uri: "test://b" });
      await call(editor, "mis__update", { uri: "test://a" });
      await call(editor, "mis__update", { uri: "test://b" });
      assert.equal(await editor.resourceUpdates.next("the update of test://b"), "test://b");
      await editor.client.unsubscribeResource({ uri: "test://b" });
    });
  });
}

describe("several editors at once", () => {
  let http;
  let stdio;
  before(async () => {
    [http, stdio] = await Promise.all([
      connectEditor("http", "answer for the HTTP editor"),
      connectEditor("stdio", "answer for the stdio editor"),
    ]);
  });
  after(async () => {
    await Promise.all([http?.client.close(), stdio?.client.close()]);
  });

  test("a tool definition with an unknown field arrives unchanged", async () => {
    // The SDK's Tool schema drops unknown fields, so read tools/list off the wire.
    const headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    };
    const post = async (message, sessionId) => {
      const response = await fetch(URL_, {
        method: "POST",
        headers: sessionId
          ? { ...headers, "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" }
          : headers,
        body: JSON.stringify(message),
      });
      assert.ok(response.ok, `${message.method}: HTTP ${response.status}`);
      return response;
    };
    const initialized = await post({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "raw-fetch", version: "1.0.0" },
      },
    });
    const sessionId = initialized.headers.get("mcp-session-id");
    assert.ok(sessionId, "initialize opens a session");
    await initialized.text();
    await (await post({ jsonrpc: "2.0", method: "notifications/initialized" }, sessionId)).text();

    const tools = [];
    let cursor;
    let id = 2;
    do {
      const response = await post(
        { jsonrpc: "2.0", id: id++, method: "tools/list", params: cursor ? { cursor } : {} },
        sessionId,
      );
      const message = await readResponse(response);
      assert.ok(message.result, JSON.stringify(message));
      tools.push(...message.result.tools);
      cursor = message.result.nextCursor;
    } while (cursor);
    await fetch(URL_, { method: "DELETE", headers: { "mcp-session-id": sessionId } });

    const echo = tools.find((tool) => tool.name === "mis__echo");
    assert.ok(echo, "mis__echo is listed");
    assert.deepEqual(echo["x-switchboard-test"], { kept: true });
    assert.deepEqual(echo.inputSchema, {
      type: "object",
      properties: { text: { type: "string" } },
    });
    assert.equal(echo.description, "Echo the text back");
  });

  test("a tools list_changed reaches every session, over both transports", async () => {
    const listed = await toolNames(http.client);
    if (listed.includes("mis__added_later")) {
      assert.fail("mis__added_later exists before mis__change_tools; the backend was restarted?");
    }
    http.toolsChanged.drain();
    stdio.toolsChanged.drain();
    await call(http, "mis__change_tools");
    // A tool added by a server that has pins is offered once approved, as the Review page does.
    await approveWhenHeld("mis", "added_later");
    await Promise.all([
      waitForTools(http, ["mis__added_later"]),
      waitForTools(stdio, ["mis__added_later"]),
    ]);
    assert.equal(textOf(await call(stdio, "mis__added_later")), "added later");
  });

  test("concurrent calls of two editors each get their own answers", async () => {
    // Both SDKs number their requests from the same small integers.
    const calls = [];
    for (const editor of [http, stdio]) {
      for (let i = 0; i < 20; i += 1) {
        const text = `${editor.kind} ${i}`;
        const backend = i % 2 === 0 ? "demo" : "mis";
        calls.push(
          call(editor, `${backend}__echo`, { text }).then((result) => [text, textOf(result)]),
        );
      }
    }
    for (const [sent, received] of await Promise.all(calls)) {
      assert.equal(received, sent);
    }
  });

  test("sampling requests go to the editor whose call caused them", async () => {
    // One after the other: each call is the only one in flight when its backend asks.
    for (const editor of [http, stdio, http]) {
      const result = await call(editor, "everything__trigger-sampling-request", {
        prompt: `from ${editor.kind}`,
      });
      const request = await editor.samplingRequests.next(`the sampling request of ${editor.kind}`);
      assert.equal(
        request.messages[0].content.text,
        `Resource trigger-sampling-request context: from ${editor.kind}`,
      );
      assert.ok(textOf(result).includes(editor.cannedSample), textOf(result));
    }
  });

  test("a sampling request is never shown to an editor that did not cause it", async () => {
    // Both calls are in flight at the same backend when it asks. Nothing in a stdio request says
    // which call caused it, so each call must get its own editor's answer or a refusal — never
    // the other editor's answer.
    const ask = (editor) =>
      call(editor, "mis__ask", {
        method: "sampling/createMessage",
        params: {
          messages: [{ role: "user", content: { type: "text", text: `for ${editor.kind}` } }],
          maxTokens: 5,
        },
      });
    for (let round = 0; round < 20; round += 1) {
      const answers = await Promise.all([ask(http), ask(stdio)]);
      for (const [editor, answer] of [[http, answers[0]], [stdio, answers[1]]]) {
        const relayed = JSON.parse(textOf(answer));
        if (relayed.content !== undefined) {
          assert.equal(relayed.content.text, editor.cannedSample, `round ${round}`);
        } else {
          assert.match(relayed.message, /editors have calls in flight/, `round ${round}`);
        }
      }
    }
    // One editor alone is always answered.
    const alone = await ask(http);
    assert.equal(JSON.parse(textOf(alone)).content.text, http.cannedSample);
  });
});

/** The JSON-RPC response in a POST answer, whether plain JSON or an SSE stream. */
async function readResponse(response) {
  const body = await response.text();
  if (!(response.headers.get("content-type") ?? "").includes("text/event-stream")) {
    return JSON.parse(body);
  }
  for (const event of body.split(/\r?\n\r?\n/)) {
    const data = event
      .split(/\r?\n/)
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trimStart())
      .join("\n");
    if (data) {
      const message = JSON.parse(data);
      if ("result" in message || "error" in message) {
        return message;
      }
    }
  }
  throw new Error(`no response in the stream: ${body}`);
}
