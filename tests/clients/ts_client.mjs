// A client driver on the official TypeScript SDK (`@modelcontextprotocol/client` 2.x) for
// Switchboard's tests. It connects to one MCP server, runs a fixed set of steps and prints ONE
// JSON object (the transcript) on stdout; nothing is thrown past main.
//
//   ts_client.mjs MODE --url URL
//   ts_client.mjs MODE --command CMD [ARG...]
//
// MODE is `legacy` (initialize only), `auto` (probe with server/discover, else initialize) or
// `modern` (2026-07-28 only). The steps: list the tools, call `everything__echo`, call
// `everything__trigger-elicitation-request` (answering the form with a fixed name) and
// `everything__trigger-sampling-request` (answering with a fixed text). Elicitation and sampling
// reach the client as real requests in the session era and as `input_required` under
// 2026-07-28, which the SDK fulfils with the same handlers.

import { Client } from "@modelcontextprotocol/client";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [mode, how, ...rest] = process.argv.slice(2);
const transcript = { client: "ts", mode, protocolVersion: null, steps: [], error: null };
const negotiation = { legacy: "legacy", auto: "auto", modern: { pin: "2026-07-28" } }[mode];

function errorOf(error) {
  return { code: error?.code ?? null, message: String(error?.message ?? error) };
}

async function main() {
  const client = new Client(
    { name: "switchboard-test-ts-client", version: "1.0.0" },
    {
      capabilities: { elicitation: { form: {} }, sampling: {} },
      versionNegotiation: { mode: negotiation },
    },
  );
  const asked = { elicitations: 0, samplings: 0 };
  client.setRequestHandler("elicitation/create", async () => {
    asked.elicitations += 1;
    return { action: "accept", content: { name: "Grace Hopper", check: true } };
  });
  client.setRequestHandler("sampling/createMessage", async () => {
    asked.samplings += 1;
    return {
      model: "fixed",
      role: "assistant",
      content: { type: "text", text: "hello from the model" },
    };
  });
  const transport =
    how === "--url"
      ? new StreamableHTTPClientTransport(new URL(rest[0]))
      : new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: process.env });
  await client.connect(transport);
  transcript.protocolVersion = client.getNegotiatedProtocolVersion() ?? null;
  const step = async (name, run) => {
    const before = { ...asked };
    const record = { step: name };
    try {
      Object.assign(record, await run());
    } catch (error) {
      record.error = errorOf(error);
    }
    record.elicitations = asked.elicitations - before.elicitations;
    record.samplings = asked.samplings - before.samplings;
    transcript.steps.push(record);
  };
  await step("list", async () => ({
    tools: (await client.listTools()).tools.map((tool) => tool.name),
  }));
  const call = (name, args) => async () => {
    const result = await client.callTool({ name, arguments: args });
    return { content: result.content, isError: Boolean(result.isError) };
  };
  await step("echo", call("everything__echo", { message: "from typescript" }));
  await step("elicit", call("everything__trigger-elicitation-request", {}));
  await step("sample", call("everything__trigger-sampling-request", { prompt: "hi", maxTokens: 5 }));
  await client.close();
}

const timer = setTimeout(() => {
  transcript.error = { code: null, message: "timed out after 30 s" };
  console.log(JSON.stringify(transcript));
  process.exit(0);
}, 30_000);
try {
  await main();
} catch (error) {
  transcript.error = errorOf(error);
}
clearTimeout(timer);
console.log(JSON.stringify(transcript));
process.exit(0);
