// A small MCP server on the official TypeScript SDK (`@modelcontextprotocol/server` 2.x), over
// stdio. By default it serves both protocol eras, the way `serveStdio` does out of the box: a
// client opening with `initialize` gets the session era, one sending the `_meta` envelope gets
// the stateless era. With `--modern-only` it answers `initialize` with "unsupported protocol
// version" and speaks only the stateless era (2026-07-28).
//
// Tools: `echo` (returns its `text`), `add_tool` (registers a tool `extra`, so the server
// announces that its tool list changed), `confirm` (asks "Do ACTION?" as a 2026-07-28
// multi-round-trip request: it answers `input_required` with a form elicitation and a
// `requestState` until a retry brings `ok: true`, then says what it confirmed and which state
// came back), `visit` (asks the client to open `url` as a URL-mode elicitation, the same way,
// and says how it answered), `touch` (tells whoever subscribed that `sdk://greeting` changed). One resource
// (`sdk://greeting`, which clients may subscribe to) and one prompt (`hello`).
// It reports the method of every request it receives on stderr (`got <method>`), the
// resources each `subscriptions/listen` names (`listens for resources: <uri> …`), and the
// extensions the client declared with `initialize`, `tools/list` and `tools/call`
// (`<method> declares extensions: <name> …`), so that tests can see what a client asked.

import { McpServer, acceptedContent, inputRequired } from "@modelcontextprotocol/server";
import { StdioServerTransport, serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";

const modernOnly = process.argv.includes("--modern-only");

function makeServer() {
  const server = new McpServer(
    { name: "sdk-fixture", version: "1.0.0" },
    {
      instructions: "A test server on the official TypeScript SDK.",
      capabilities: { resources: { subscribe: true } },
    },
  );
  server.registerTool(
    "echo",
    { description: "Returns its text", inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  server.registerTool(
    "add_tool",
    { description: "Adds the tool `extra`" },
    async () => {
      server.registerTool(
        "extra",
        { description: "Added by add_tool" },
        async () => ({ content: [{ type: "text", text: "extra" }] }),
      );
      return { content: [{ type: "text", text: "added extra" }] };
    },
  );
  const answer = z.object({ ok: z.boolean() });
  server.registerTool(
    "confirm",
    { description: "Asks before doing `action`", inputSchema: z.object({ action: z.string() }) },
    async ({ action }, ctx) => {
      const confirmed = acceptedContent(ctx.mcpReq.inputResponses, "ok", answer);
      if (confirmed?.ok !== true) {
        return inputRequired({
          inputRequests: {
            ok: inputRequired.elicit({ message: `Do ${action}?`, requestedSchema: answer }),
          },
          requestState: `asked:${action}`,
        });
      }
      const state = ctx.mcpReq.requestState();
      return { content: [{ type: "text", text: `confirmed ${action} (state ${state})` }] };
    },
  );
  server.registerTool(
    "visit",
    { description: "Asks the person to open `url`", inputSchema: z.object({ url: z.string() }) },
    async ({ url }, ctx) => {
      const answer = ctx.mcpReq.inputResponses?.visit;
      if (answer === undefined) {
        return inputRequired({
          inputRequests: {
            visit: inputRequired.elicitUrl({ message: "Sign in to the fixture's account", url }),
          },
          requestState: "visit",
        });
      }
      return { content: [{ type: "text", text: `visit: ${answer.action}` }] };
    },
  );
  server.registerTool(
    "touch",
    { description: "Tells subscribers that sdk://greeting changed" },
    async () => {
      await server.server.sendResourceUpdated({ uri: "sdk://greeting" });
      return { content: [{ type: "text", text: "touched" }] };
    },
  );
  server.registerResource(
    "greeting",
    "sdk://greeting",
    { mimeType: "text/plain" },
    async (uri) => ({ contents: [{ uri: uri.href, text: "hello from the SDK" }] }),
  );
  server.registerPrompt(
    "hello",
    { description: "Says hello" },
    () => ({ messages: [{ role: "user", content: { type: "text", text: "hello" } }] }),
  );
  return server;
}

// `serveStdio` sets the transport's `onmessage`; what it sets is called after the report.
const transport = new StdioServerTransport();
let deliver;
Object.defineProperty(transport, "onmessage", {
  get: () => (message, extra) => {
    if (message.method !== undefined && message.id !== undefined) {
      process.stderr.write(`got ${message.method}\n`);
    }
    if (["initialize", "tools/list", "tools/call"].includes(message.method)) {
      const declared =
        message.method === "initialize"
          ? message.params?.capabilities
          : message.params?._meta?.["io.modelcontextprotocol/clientCapabilities"];
      const extensions = Object.keys(declared?.extensions ?? {}).join(" ");
      process.stderr.write(`${message.method} declares extensions: ${extensions}\n`);
    }
    if (message.method === "subscriptions/listen") {
      const resources = message.params?.notifications?.resourceSubscriptions ?? [];
      process.stderr.write(`listens for resources: ${resources.join(" ")}\n`);
    }
    deliver?.(message, extra);
  },
  set: (handler) => {
    deliver = handler;
  },
});

serveStdio(makeServer, { legacy: modernOnly ? "reject" : "serve", transport });
