// The MCP server the conformance suite's server scenarios (@modelcontextprotocol/conformance)
// are run against, directly and through Switchboard (tests/conformance/servers.mjs). It is
// written for this project on the official TypeScript SDK (@modelcontextprotocol/server 2.x)
// and serves both protocol eras on one URL, the way that SDK's own HTTP entry does:
//
// - a request that carries the 2026-07-28 `_meta` envelope goes to the SDK's stateless handler
//   (`createMcpHandler`, a fresh server per request, `subscriptions/listen` streams on its bus);
// - any other request is the session era: `initialize` opens a session of its own
//   (`WebStandardStreamableHTTPServerTransport` with an event store, so SSE streams carry event
//   ids, a priming event and `retry`, and can be resumed with `Last-Event-ID`).
//
// Every request first passes DNS-rebinding protection (Host and Origin must be this machine).
// The tools, resources and prompts are the fixtures each scenario names in its requirements
// (`node node_modules/@modelcontextprotocol/conformance/dist/index.js list`, and each scenario's
// description); multi-round-trip tools are written once with `inputRequired`, which the SDK
// serves to 2026-07-28 clients as `input_required` results and to session-era clients as real
// server-to-client requests. The Tasks extension (2026-07-28) is served by hand (a task store and
// handlers for tasks/*; see "The Tasks extension" below): the SDK has no server side for it. So is
// the Skills extension (SEP-2640; see "The Skills extension" below), in both eras: one skill whose
// files are resources, listed with their digests.
//
//   node tests/conformance/server.mjs [PORT]      (or CONFORMANCE_SERVER_PORT; default 0, any)
//
// It prints `listening on http://127.0.0.1:PORT/mcp` once it listens; it logs nothing else on
// stdout.

import { createServer } from 'node:http';
import { createHash, randomUUID } from 'node:crypto';
import {
  McpServer,
  ResourceTemplate,
  WebStandardStreamableHTTPServerTransport,
  createMcpHandler,
  createRequestStateCodec,
  completable,
  fromJsonSchema,
  hostHeaderValidationResponse,
  inputRequired,
  inputResponse,
  acceptedContent,
  isLegacyRequest,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  originValidationResponse,
  MissingRequiredClientCapabilityError,
  ProtocolError,
} from '@modelcontextprotocol/server';
import * as z from 'zod';

const PORT = Number(process.argv[2] ?? process.env.CONFORMANCE_SERVER_PORT ?? 0);
const HOST = '127.0.0.1';
const MCP_PATH = '/mcp';

// A 1x1 red PNG and a tiny silent WAV (44-byte header, 2 samples), made here.
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
function silentWav() {
  const samples = 2;
  const buffer = Buffer.alloc(44 + samples * 2);
  buffer.write('RIFF', 0);
  buffer.writeUInt32LE(36 + samples * 2, 4);
  buffer.write('WAVE', 8);
  buffer.write('fmt ', 12);
  buffer.writeUInt32LE(16, 16);
  buffer.writeUInt16LE(1, 20); // PCM
  buffer.writeUInt16LE(1, 22); // mono
  buffer.writeUInt32LE(8000, 24);
  buffer.writeUInt32LE(16000, 28);
  buffer.writeUInt16LE(2, 32);
  buffer.writeUInt16LE(16, 34);
  buffer.write('data', 36);
  buffer.writeUInt32LE(samples * 2, 40);
  return buffer.toString('base64');
}
const WAV = silentWav();

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (value) => ({ content: [{ type: 'text', text: value }] });

/// The HMAC key of this run's `requestState`s: one process serves every round.
const stateCodec = createRequestStateCodec({ key: randomUUID() + randomUUID() });

/// The JSON Schema 2020-12 tool's input schema, with the keywords the scenario looks for.
const RICH_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: {
    address: {
      $anchor: 'addressDef',
      type: 'object',
      properties: { street: { type: 'string' }, city: { type: 'string' } },
    },
  },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] },
    phone: { type: 'string' },
    email: { type: 'string' },
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false,
};

/// What the stateless-era handler publishes list changes through (set once it exists).
let stateless;
/// Every session-era server, for list changes and resource updates.
const sessions = new Map();

/// The capabilities a 2026-07-28 request declares in its envelope.
function clientCapabilities(ctx) {
  const envelope = ctx.mcpReq.envelope ?? {};
  return envelope.clientCapabilities ?? envelope['io.modelcontextprotocol/clientCapabilities'];
}

/// Tools, resources and prompts shared by both eras; `era` is 'session' or 'stateless'.
function makeServer(era) {
  const server = new McpServer(
    { name: 'switchboard-conformance-server', version: '1.0.0' },
    {
      capabilities: {
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { listChanged: true, subscribe: true },
        logging: {},
        completions: {},
        extensions: { [SKILLS]: {}, ...(era === 'stateless' ? { [TASKS]: {} } : {}) },
      },
      cacheHints: {
        'tools/list': { ttlMs: 60_000, cacheScope: 'public' },
        'prompts/list': { ttlMs: 60_000, cacheScope: 'public' },
        'resources/list': { ttlMs: 60_000, cacheScope: 'public' },
        'resources/templates/list': { ttlMs: 60_000, cacheScope: 'public' },
        'resources/read': { ttlMs: 10_000, cacheScope: 'private' },
      },
      requestState: { verify: stateCodec.verify },
    },
  );

  // --- Content tools -------------------------------------------------------------------------
  server.registerTool('test_simple_text', { description: 'Returns simple text' }, async () =>
    text('This is a simple text response for testing.'),
  );
  server.registerTool('test_image_content', { description: 'Returns an image' }, async () => ({
    content: [{ type: 'image', data: PNG, mimeType: 'image/png' }],
  }));
  server.registerTool('test_audio_content', { description: 'Returns audio' }, async () => ({
    content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }],
  }));
  server.registerTool('test_embedded_resource', { description: 'Returns an embedded resource' }, async () => ({
    content: [
      {
        type: 'resource',
        resource: {
          uri: 'test://embedded-resource',
          mimeType: 'text/plain',
          text: 'This is an embedded resource content.',
        },
      },
    ],
  }));
  server.registerTool('test_multiple_content_types', { description: 'Returns text, image and resource' }, async () => ({
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
      {
        type: 'resource',
        resource: {
          uri: 'test://mixed-content-resource',
          mimeType: 'application/json',
          text: JSON.stringify({ test: 'data', value: 123 }),
        },
      },
    ],
  }));
  server.registerTool('test_error_handling', { description: 'Always fails' }, async () => ({
    isError: true,
    content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }],
  }));

  // --- Notifications during a call ------------------------------------------------------------
  server.registerTool('test_tool_with_logging', { description: 'Logs three messages' }, async (ctx) => {
    await ctx.mcpReq.log('info', 'Tool execution started');
    await sleep(50);
    await ctx.mcpReq.log('info', 'Tool processing data');
    await sleep(50);
    await ctx.mcpReq.log('info', 'Tool execution completed');
    return text('Logging tool finished');
  });
  server.registerTool('test_logging_tool', { description: 'Logs one message at info' }, async (ctx) => {
    await ctx.mcpReq.log('info', 'Logging tool ran');
    return text('logged');
  });
  server.registerTool('test_tool_with_progress', { description: 'Reports progress' }, async (ctx) => {
    const progressToken = ctx.mcpReq._meta?.progressToken;
    for (const progress of [0, 50, 100]) {
      if (progressToken !== undefined) {
        await ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken, progress, total: 100, message: `${progress}%` },
        });
      }
      if (progress < 100) await sleep(50);
    }
    return text('Progress tool finished');
  });

  // --- Asking the client (sampling, elicitation) ---------------------------------------------
  // A 2026-07-28 client gets `input_required`; a session-era one a server-to-client request
  // straight away (not the SDK's shim for `input_required`, which asks only clients that
  // declared the capability: these scenarios' clients declare none and still answer).
  const ask = (key, request, answered) => async (...given) => {
    const ctx = given.at(-1);
    const args = given.length > 1 ? given[0] : {};
    const { method, params } = request(args);
    if (era === 'session') {
      if (method === 'sampling/createMessage') {
        return answered({ kind: 'sampling', result: await ctx.mcpReq.requestSampling(params) });
      }
      const { action, content } = await ctx.mcpReq.elicitInput(params);
      return answered({ kind: 'elicit', action, content });
    }
    const view = inputResponse(ctx.mcpReq.inputResponses, key);
    if (view.kind === 'missing') return inputRequired({ inputRequests: { [key]: { method, params } } });
    return answered(view);
  };
  const elicited = (view) =>
    text(`Elicitation completed: action=${view.action}, content=${JSON.stringify(view.content ?? {})}`);
  server.registerTool(
    'test_sampling',
    { description: 'Asks the client to sample', inputSchema: z.object({ prompt: z.string() }) },
    ask(
      'llm',
      ({ prompt }) =>
        inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
          maxTokens: 100,
        }),
      (view) => {
        if (view.kind !== 'sampling') return text(`LLM response: (none: ${view.kind})`);
        const content = Array.isArray(view.result.content) ? view.result.content[0] : view.result.content;
        return text(`LLM response: ${content?.type === 'text' ? content.text : JSON.stringify(content)}`);
      },
    ),
  );
  server.registerTool(
    'test_elicitation',
    { description: 'Asks the user', inputSchema: z.object({ message: z.string() }) },
    ask(
      'user',
      ({ message }) =>
        inputRequired.elicit({
          message,
          requestedSchema: {
            type: 'object',
            properties: {
              username: { type: 'string', description: "User's response" },
              email: { type: 'string', description: "User's email address" },
            },
            required: ['username', 'email'],
          },
        }),
      (view) => text(`User response: action=${view.action}, content=${JSON.stringify(view.content ?? {})}`),
    ),
  );
  server.registerTool(
    'test_elicitation_sep1034_defaults',
    { description: 'Elicits with defaults' },
    ask(
      'details',
      () =>
        inputRequired.elicit({
          message: 'Please review your details',
          requestedSchema: {
            type: 'object',
            properties: {
              name: { type: 'string', description: 'Name', default: 'John Doe' },
              age: { type: 'integer', description: 'Age', default: 30 },
              score: { type: 'number', description: 'Score', default: 95.5 },
              status: {
                type: 'string',
                description: 'Status',
                enum: ['active', 'inactive', 'pending'],
                default: 'active',
              },
              verified: { type: 'boolean', description: 'Verified', default: true },
            },
          },
        }),
      elicited,
    ),
  );
  server.registerTool(
    'test_elicitation_sep1330_enums',
    { description: 'Elicits every enum form' },
    ask(
      'choices',
      () =>
        inputRequired.elicit({
          message: 'Pick some options',
          requestedSchema: {
            type: 'object',
            properties: {
              untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
              titledSingle: {
                type: 'string',
                oneOf: [
                  { const: 'value1', title: 'First Option' },
                  { const: 'value2', title: 'Second Option' },
                  { const: 'value3', title: 'Third Option' },
                ],
              },
              legacyEnum: {
                type: 'string',
                enum: ['opt1', 'opt2', 'opt3'],
                enumNames: ['Option One', 'Option Two', 'Option Three'],
              },
              untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
              titledMulti: {
                type: 'array',
                items: {
                  anyOf: [
                    { const: 'value1', title: 'First Choice' },
                    { const: 'value2', title: 'Second Choice' },
                    { const: 'value3', title: 'Third Choice' },
                  ],
                },
              },
            },
          },
        }),
      elicited,
    ),
  );
  server.registerTool('test_reconnection', { description: 'Closes its SSE stream before answering' }, async (ctx) => {
    await sleep(50);
    ctx.http?.closeSSE?.();
    await sleep(200);
    return text('Reconnection test completed');
  });

  // --- JSON Schema 2020-12, custom headers -----------------------------------------------------
  server.registerTool(
    'json_schema_2020_12_tool',
    { description: 'Tool with JSON Schema 2020-12 features', inputSchema: fromJsonSchema(RICH_SCHEMA) },
    async (args) => text(`received ${JSON.stringify(args)}`),
  );
  server.registerTool(
    'test_header_param',
    {
      description: 'Mirrors its region into the Mcp-Param-Region header',
      inputSchema: fromJsonSchema({
        type: 'object',
        properties: { region: { type: 'string', 'x-mcp-header': 'Region' } },
        required: ['region'],
      }),
    },
    async ({ region }) => text(`region ${region}`),
  );

  // --- 2026-07-28 diagnostics ------------------------------------------------------------------
  // Asking for a sampling the client did not declare is answered -32021 by the SDK.
  server.registerTool('test_missing_capability', { description: 'Needs the sampling capability' }, async (ctx) => {
    if (inputResponse(ctx.mcpReq.inputResponses, 'sample').kind === 'sampling') return text('sampled');
    return inputRequired({
      inputRequests: {
        sample: inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: 'Say something' } }],
          maxTokens: 10,
        }),
      },
    });
  });
  server.registerTool('test_streaming_elicitation', { description: 'Asks for a name' }, async (ctx) => {
    const name = acceptedContent(ctx.mcpReq.inputResponses, 'name');
    if (!name) {
      await ctx.mcpReq.notify({
        method: 'notifications/progress',
        params: { progressToken: ctx.mcpReq._meta?.progressToken ?? 'stream', progress: 1 },
      }).catch(() => {});
      return inputRequired({
        inputRequests: {
          name: inputRequired.elicit({
            message: 'What is your name?',
            requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
          }),
        },
      });
    }
    return text(`Hello, ${name.name}!`);
  });
  server.registerTool('test_trigger_tool_change', { description: 'Adds a tool' }, async () => {
    added.tools += 1;
    toolsChanged();
    return text(`tools changed: ${added.tools} added`);
  });
  server.registerTool('test_trigger_prompt_change', { description: 'Adds a prompt' }, async () => {
    added.prompts += 1;
    promptsChanged();
    return text(`prompts changed: ${added.prompts} added`);
  });
  for (let n = 1; n <= added.tools; n += 1) {
    server.registerTool(`test_added_tool_${n}`, { description: 'Added by test_trigger_tool_change' }, async () =>
      text(`added tool ${n}`),
    );
  }
  for (let n = 1; n <= added.prompts; n += 1) {
    server.registerPrompt(`test_added_prompt_${n}`, { description: 'Added by test_trigger_prompt_change' }, () => ({
      messages: [{ role: 'user', content: { type: 'text', text: `added prompt ${n}` } }],
    }));
  }

  registerInputRequiredFixtures(server);
  registerTaskFixtures(server, era);

  // --- Resources -------------------------------------------------------------------------------
  server.registerResource(
    'static-text',
    'test://static-text',
    { description: 'A static text resource', mimeType: 'text/plain' },
    async (uri) => ({
      contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }],
    }),
  );
  server.registerResource(
    'static-binary',
    'test://static-binary',
    { description: 'A static binary resource', mimeType: 'image/png' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'image/png', blob: PNG }] }),
  );
  server.registerResource(
    'watched-resource',
    'test://watched-resource',
    { description: 'A resource that can be subscribed to', mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: `watched at ${Date.now()}` }] }),
  );
  server.registerResource(
    'template-data',
    new ResourceTemplate('test://template/{id}/data', {
      list: undefined,
      complete: { id: (value) => ['123', '456', '789'].filter((id) => id.startsWith(value)) },
    }),
    { description: 'Data for an id', mimeType: 'application/json' },
    async (uri, ctx) => {
      const id = /^test:\/\/template\/([^/]+)\/data$/.exec(uri.href)?.[1] ?? '';
      return {
        contents: [
          {
            uri: uri.href,
            mimeType: 'application/json',
            text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }),
          },
        ],
      };
    },
  );
  if (era === 'session') {
    const subscriptions = new Set();
    server.server.setRequestHandler('resources/subscribe', async (request) => {
      subscriptions.add(request.params.uri);
      return {};
    });
    server.server.setRequestHandler('resources/unsubscribe', async (request) => {
      subscriptions.delete(request.params.uri);
      return {};
    });
  }

  // --- Prompts ---------------------------------------------------------------------------------
  server.registerPrompt('test_simple_prompt', { description: 'A prompt without arguments' }, () => ({
    messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
  }));
  server.registerPrompt(
    'test_prompt_with_arguments',
    {
      description: 'A prompt with two arguments',
      argsSchema: z.object({
        arg1: completable(z.string().describe('First test argument'), (value) =>
          ['paris', 'park', 'party'].filter((word) => word.startsWith(value)),
        ),
        arg2: z.string().describe('Second test argument'),
      }),
    },
    ({ arg1, arg2 }) => ({
      messages: [{ role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_embedded_resource',
    {
      description: 'A prompt that embeds a resource',
      argsSchema: z.object({ resourceUri: z.string().describe('URI of the resource to embed') }),
    },
    ({ resourceUri }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'resource',
            resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' },
          },
        },
        { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
      ],
    }),
  );
  server.registerPrompt('test_prompt_with_image', { description: 'A prompt with an image' }, () => ({
    messages: [
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
    ],
  }));
  server.registerPrompt('test_input_required_result_prompt', { description: 'Asks for context first' }, (ctx) => {
    const answer = acceptedContent(ctx.mcpReq.inputResponses, 'user_context');
    if (!answer) {
      return inputRequired({
        inputRequests: {
          user_context: inputRequired.elicit({
            message: 'What context should the prompt use?',
            requestedSchema: { type: 'object', properties: { context: { type: 'string' } }, required: ['context'] },
          }),
        },
      });
    }
    return {
      messages: [{ role: 'user', content: { type: 'text', text: `Use this context: ${answer.context}` } }],
    };
  });

  serveSkills(server);
  return server;
}

// --- The Skills extension (SEP-2640) -----------------------------------------------------------
// One skill, `release-notes`, whose SKILL.md and one reference are resources (text/markdown, the
// manifest named and described as its frontmatter says), listed by `skills/list` with each file's
// SHA-256 digest and size, and named by `skills/get` (-32602 for any other URI).

const SKILLS = 'io.modelcontextprotocol/skills';
const SKILL_NAME = 'release-notes';
const SKILL_DESCRIPTION = 'Write release notes from a list of merged changes';
const SKILL_MANIFEST = `skill://${SKILL_NAME}/SKILL.md`;
const SKILL_FILES = {
  [SKILL_MANIFEST]:
    `---\nname: ${SKILL_NAME}\ndescription: ${SKILL_DESCRIPTION}\n---\n\n# Release notes\n\n` +
    'Group the changes as references/STYLE.md says.\n',
  [`skill://${SKILL_NAME}/references/STYLE.md`]: 'Features first, then fixes, one line each.\n',
};
const SKILL_ENTRY = {
  uri: SKILL_MANIFEST,
  frontmatter: { name: SKILL_NAME, description: SKILL_DESCRIPTION },
  resources: Object.entries(SKILL_FILES).map(([uri, text]) => ({
    uri,
    digest: `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`,
    size: Buffer.byteLength(text),
  })),
};

function serveSkills(server) {
  for (const [uri, text] of Object.entries(SKILL_FILES)) {
    const manifest = uri === SKILL_MANIFEST;
    server.registerResource(
      manifest ? SKILL_NAME : 'STYLE.md',
      uri,
      { mimeType: 'text/markdown', ...(manifest ? { description: SKILL_DESCRIPTION } : {}) },
      async () => ({ contents: [{ uri, mimeType: 'text/markdown', text }] }),
    );
  }
  const cache = { ttlMs: 60_000, cacheScope: 'public' };
  server.server.setRequestHandler('skills/list', { params: z.object({ cursor: z.string().optional() }).passthrough() }, async () => ({
    skills: [SKILL_ENTRY],
    ...cache,
  }));
  server.server.setRequestHandler('skills/get', { params: z.object({ uri: z.string() }).passthrough() }, async ({ uri }) => {
    if (uri !== SKILL_MANIFEST) throw new ProtocolError(-32602, `No skill ${uri} here`, { uri });
    return { skill: SKILL_ENTRY, ...cache };
  });
}

const nameSchema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };

/// The SEP-2322 multi-round-trip tools (`test_input_required_result_*`).
function registerInputRequiredFixtures(server) {
  const askName = (message = 'What is your name?') =>
    inputRequired.elicit({ message, requestedSchema: nameSchema });
  const capital = () =>
    inputRequired.createMessage({
      messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
      maxTokens: 100,
    });
  const samplingText = (view) => {
    if (view.kind !== 'sampling') return undefined;
    const content = Array.isArray(view.result.content) ? view.result.content[0] : view.result.content;
    return content?.type === 'text' ? content.text : JSON.stringify(content);
  };

  server.registerTool('test_input_required_result_elicitation', { description: 'Asks for a name' }, async (ctx) => {
    const answer = acceptedContent(ctx.mcpReq.inputResponses, 'user_name');
    if (typeof answer?.name !== 'string') return inputRequired({ inputRequests: { user_name: askName() } });
    return text(`Hello, ${answer.name}!`);
  });
  server.registerTool('test_input_required_result_sampling', { description: 'Asks the client to sample' }, async (ctx) => {
    const answer = samplingText(inputResponse(ctx.mcpReq.inputResponses, 'capital_question'));
    if (answer === undefined) return inputRequired({ inputRequests: { capital_question: capital() } });
    return text(`The model said: ${answer}`);
  });
  server.registerTool('test_input_required_result_list_roots', { description: 'Asks for roots' }, async (ctx) => {
    const view = inputResponse(ctx.mcpReq.inputResponses, 'client_roots');
    if (view.kind !== 'roots') return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
    return text(`Roots: ${view.roots.map((root) => root.uri).join(', ') || '(none)'}`);
  });
  server.registerTool('test_input_required_result_request_state', { description: 'Round-trips state' }, async (ctx) => {
    const state = ctx.mcpReq.requestState();
    const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm');
    if (state?.step === 'confirm' && answer !== undefined) return text(`state-ok: confirmed ${answer.ok}`);
    return inputRequired({
      inputRequests: {
        confirm: inputRequired.elicit({
          message: 'Please confirm',
          requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
        }),
      },
      requestState: await stateCodec.mint({ step: 'confirm' }),
    });
  });
  server.registerTool('test_input_required_result_multiple_inputs', { description: 'Asks three things' }, async (ctx) => {
    const responses = ctx.mcpReq.inputResponses;
    const name = acceptedContent(responses, 'user_name');
    const greeting = samplingText(inputResponse(responses, 'greeting'));
    const roots = inputResponse(responses, 'client_roots');
    if (ctx.mcpReq.requestState()?.step === 'all' && name && greeting !== undefined && roots.kind === 'roots') {
      return text(`${greeting} ${name.name} (${roots.roots.length} roots)`);
    }
    return inputRequired({
      inputRequests: {
        user_name: askName(),
        greeting: inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }],
          maxTokens: 50,
        }),
        client_roots: inputRequired.listRoots(),
      },
      requestState: await stateCodec.mint({ step: 'all' }),
    });
  });
  server.registerTool('test_input_required_result_multi_round', { description: 'Asks twice' }, async (ctx) => {
    const state = ctx.mcpReq.requestState();
    const responses = ctx.mcpReq.inputResponses;
    if (state?.round === 2) {
      const color = acceptedContent(responses, 'step2');
      if (color) return text(`${state.name} likes ${color.color}`);
    }
    if (state?.round === 1) {
      const name = acceptedContent(responses, 'step1');
      if (name) {
        return inputRequired({
          inputRequests: {
            step2: inputRequired.elicit({
              message: 'Step 2: What is your favorite color?',
              requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] },
            }),
          },
          requestState: await stateCodec.mint({ round: 2, name: name.name }),
        });
      }
    }
    return inputRequired({
      inputRequests: { step1: askName('Step 1: What is your name?') },
      requestState: await stateCodec.mint({ round: 1 }),
    });
  });
  server.registerTool('test_input_required_result_tampered_state', { description: 'Signs its state' }, async (ctx) => {
    const state = ctx.mcpReq.requestState();
    const answer = acceptedContent(ctx.mcpReq.inputResponses, 'user_name');
    if (state?.step === 'signed' && answer) return text(`Hello, ${answer.name}! (state verified)`);
    return inputRequired({
      inputRequests: { user_name: askName() },
      requestState: await stateCodec.mint({ step: 'signed' }),
    });
  });
  server.registerTool('test_input_required_result_capabilities', { description: 'Asks only what the client can do' }, async (ctx) => {
    const caps = clientCapabilities(ctx) ?? {};
    const responses = ctx.mcpReq.inputResponses;
    if (responses && Object.keys(responses).length > 0) return text('thanks');
    const inputRequests = {};
    if (caps.sampling) inputRequests.capital_question = capital();
    if (caps.elicitation) inputRequests.user_name = askName();
    if (caps.roots) inputRequests.client_roots = inputRequired.listRoots();
    if (Object.keys(inputRequests).length === 0) return text('the client declared nothing to ask through');
    return inputRequired({ inputRequests });
  });
}

// --- The Tasks extension (SEP-2663, 2026-07-28) --------------------------------------------------
// The SDK has no server side for it: its tools/call returns whatever the handler returns, and
// `tasks/get`, `tasks/update` and `tasks/cancel` take handlers with schemas of our own, so the
// store and the fixtures are here. Tasks outlive the per-request servers of the stateless era.

const TASKS = 'io.modelcontextprotocol/tasks';
const TASK_TTL_MS = 300_000;
const POLL_MS = 100;
const tasks = new Map();

function declaresTasks(ctx) {
  return clientCapabilities(ctx)?.extensions?.[TASKS] !== undefined;
}

function missingTasks() {
  return new MissingRequiredClientCapabilityError(
    { requiredCapabilities: { extensions: { [TASKS]: {} } } },
    `This needs the ${TASKS} extension`,
  );
}

/// Creates a task that `run(task)` settles; resolves to the CreateTaskResult.
function startTask(run) {
  const now = new Date().toISOString();
  const task = {
    taskId: randomUUID(),
    status: 'working',
    createdAt: now,
    lastUpdatedAt: now,
    ttlMs: TASK_TTL_MS,
    pollIntervalMs: POLL_MS,
    abort: new AbortController(),
    inputRequests: undefined,
    answers: new Map(),
    waiters: [],
  };
  tasks.set(task.taskId, task);
  setTimeout(() => tasks.delete(task.taskId), TASK_TTL_MS * 2).unref();
  const settle = (status, outcome) => {
    if (['completed', 'failed', 'cancelled'].includes(task.status)) return;
    Object.assign(task, { status, ...outcome, inputRequests: undefined, lastUpdatedAt: new Date().toISOString() });
  };
  task.settle = settle;
  Promise.resolve()
    .then(() => run(task))
    .then(
      (result) => settle('completed', { result }),
      (error) =>
        task.abort.signal.aborted
          ? settle('cancelled', {})
          : settle('failed', { error: { code: -32603, message: String(error?.message ?? error) } }),
    );
  return taskView(task, 'task');
}

function taskView(task, resultType) {
  const view = {
    resultType,
    taskId: task.taskId,
    status: task.status,
    createdAt: task.createdAt,
    lastUpdatedAt: task.lastUpdatedAt,
    ttlMs: task.ttlMs,
    pollIntervalMs: task.pollIntervalMs,
  };
  if (resultType === 'complete') {
    if (task.status === 'input_required') view.inputRequests = task.inputRequests;
    if (task.status === 'completed') view.result = task.result;
    if (task.status === 'failed') view.error = task.error;
  }
  return view;
}

/// Parks `task` until every one of `requests` (key -> input request) is answered; resolves to
/// the answers by key.
function askInTask(task, requests) {
  task.inputRequests = { ...requests };
  task.status = 'input_required';
  task.lastUpdatedAt = new Date().toISOString();
  return new Promise((resolve, reject) => {
    const check = () => {
      if (Object.keys(task.inputRequests ?? {}).length > 0) return false;
      task.status = 'working';
      task.lastUpdatedAt = new Date().toISOString();
      resolve(Object.fromEntries(task.answers));
      return true;
    };
    task.waiters.push(check);
    task.abort.signal.addEventListener('abort', () => reject(new Error('cancelled')));
  });
}

const pause = (ms, signal) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(new Error('cancelled'));
    });
  });

function registerTaskFixtures(server, era) {
  const statelessTasks = era === 'stateless';
  /// A task-supporting tool: a task for a client that declared the extension, else `sync` (or
  /// -32021 when the tool requires a task).
  const taskTool = (name, description, inputSchema, support, work) => {
    const registered = server.registerTool(name, { description, ...(inputSchema ? { inputSchema } : {}) }, async (...given) => {
      const ctx = given.at(-1);
      const args = given.length > 1 ? given[0] : {};
      if (statelessTasks && declaresTasks(ctx)) return startTask((task) => work(args, task));
      if (support === 'required') throw missingTasks();
      const task = { abort: new AbortController(), answers: new Map(), waiters: [] };
      return work(args, task);
    });
    registered.execution = { taskSupport: support };
    return registered;
  };

  server.registerTool(
    'greet',
    { description: 'Greets synchronously', inputSchema: z.object({ name: z.string().optional() }) },
    async ({ name }) => text(`Hello, ${name ?? 'world'}!`),
  );
  taskTool(
    'slow_compute',
    'Sleeps for `seconds`, then answers',
    z.object({ seconds: z.number().optional() }),
    'optional',
    async ({ seconds = 1 }, task) => {
      await pause(seconds * 1000, task.abort.signal);
      return text(`computed after ${seconds} s`);
    },
  );
  taskTool('failing_job', 'Fails as a tool after a second', undefined, 'required', async (_args, task) => {
    await pause(1000, task.abort.signal);
    return { isError: true, content: [{ type: 'text', text: 'the job failed' }] };
  });
  taskTool('protocol_error_job', 'Fails as a protocol error', undefined, 'optional', async () => {
    throw new Error('the job crashed');
  });
  const confirm = (message) =>
    inputRequired.elicit({
      message,
      requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
    });
  taskTool('confirm_delete', 'Asks before deleting', undefined, 'optional', async (_args, task) => {
    const answers = await askInTask(task, { [`confirm-${randomUUID()}`]: confirm('Delete it?') });
    const [answer] = Object.values(answers);
    return text(answer?.action === 'accept' && answer.content?.ok ? 'deleted' : 'kept');
  });
  taskTool('multi_input', 'Asks two things at once', undefined, 'optional', async (_args, task) => {
    const answers = await askInTask(task, {
      [`first-${randomUUID()}`]: askFor('First?'),
      [`second-${randomUUID()}`]: askFor('Second?'),
    });
    return text(`answered ${Object.keys(answers).length}`);
  });
  server.registerTool('test_tool_with_task', { description: 'Asks a name, then works on it as a task' }, async (ctx) => {
    const answer = acceptedContent(ctx.mcpReq.inputResponses, 'user_name');
    if (typeof answer?.name !== 'string') {
      return inputRequired({ inputRequests: { user_name: inputRequired.elicit({ message: 'What is your name?', requestedSchema: nameSchema }) } });
    }
    if (!(statelessTasks && declaresTasks(ctx))) throw missingTasks();
    return startTask(async (task) => {
      await pause(200, task.abort.signal);
      return text(`Hello, ${answer.name}! (from a task)`);
    });
  }).execution = { taskSupport: 'required' };

  // A tool that requires a task is refused before it runs when the client did not declare the
  // extension. A handler's own throw becomes a tool error (`isError`), not this JSON-RPC error,
  // so McpServer's tools/call handler is wrapped (through its server's handler table, which the
  // SDK does not expose otherwise).
  const requiresTask = new Set(['failing_job', 'test_tool_with_task']);
  const handlers = server.server._requestHandlers;
  const callTool = handlers.get('tools/call');
  handlers.set('tools/call', async (request, ctx) => {
    const name = request.params?.name;
    if (requiresTask.has(name) && !(statelessTasks && declaresTasks(ctx))) {
      const round = ctx.mcpReq.inputResponses;
      if (name === 'failing_job' || (round && Object.keys(round).length > 0)) throw missingTasks();
    }
    return callTool(request, ctx);
  });

  if (!statelessTasks) return;
  const byId = (ctx, taskId) => {
    if (!declaresTasks(ctx)) throw missingTasks();
    const task = tasks.get(taskId);
    if (!task) throw new ProtocolError(-32602, `Unknown task ${taskId}`, { taskId });
    return task;
  };
  const idParams = z.object({ taskId: z.string() }).passthrough();
  server.server.setRequestHandler('tasks/get', { params: idParams }, async ({ taskId }, ctx) =>
    taskView(byId(ctx, taskId), 'complete'),
  );
  server.server.setRequestHandler(
    'tasks/update',
    { params: z.object({ taskId: z.string(), inputResponses: z.record(z.string(), z.unknown()).optional() }).passthrough() },
    async ({ taskId, inputResponses }, ctx) => {
      const task = byId(ctx, taskId);
      // The SDK lifts `inputResponses` out of the params into the context.
      const answers = { ...ctx.mcpReq.inputResponses, ...inputResponses };
      for (const [key, value] of Object.entries(answers)) {
        if (task.inputRequests && key in task.inputRequests) {
          task.answers.set(key, value);
          delete task.inputRequests[key];
        }
      }
      task.waiters = task.waiters.filter((check) => !check());
      return { resultType: 'complete' };
    },
  );
  server.server.setRequestHandler('tasks/cancel', { params: idParams }, async ({ taskId }, ctx) => {
    const task = byId(ctx, taskId);
    if (!['completed', 'failed', 'cancelled'].includes(task.status)) {
      task.abort.abort();
      task.settle('cancelled', {});
    }
    return { resultType: 'complete' };
  });
}

const askFor = (message) =>
  inputRequired.elicit({ message, requestedSchema: { type: 'object', properties: { value: { type: 'string' } } } });

// --- List changes across eras -------------------------------------------------------------------

/// How many tools and prompts the trigger tools have added; every server built after has them.
/// A session's server gets them on the spot.
const added = { tools: 0, prompts: 0 };

function toolsChanged() {
  stateless?.notify.toolsChanged();
  for (const { server } of sessions.values()) {
    const n = added.tools;
    server.registerTool(`test_added_tool_${n}`, { description: 'Added by test_trigger_tool_change' }, async () =>
      text(`added tool ${n}`),
    );
  }
}
function promptsChanged() {
  stateless?.notify.promptsChanged();
  for (const { server } of sessions.values()) {
    const n = added.prompts;
    server.registerPrompt(`test_added_prompt_${n}`, { description: 'Added by test_trigger_prompt_change' }, () => ({
      messages: [{ role: 'user', content: { type: 'text', text: `added prompt ${n}` } }],
    }));
  }
}

// --- The session era ---------------------------------------------------------------------------

/// Keeps every SSE event of this process so a stream can be resumed (SEP-1699).
class MemoryEventStore {
  #events = new Map();
  #next = 0;
  async storeEvent(streamId, message) {
    const eventId = `${streamId}_${(this.#next += 1)}`;
    this.#events.set(eventId, { streamId, message });
    return eventId;
  }
  async getStreamIdForEventId(eventId) {
    return this.#events.get(eventId)?.streamId;
  }
  async replayEventsAfter(lastEventId, { send }) {
    const streamId = this.#events.get(lastEventId)?.streamId;
    if (!streamId) return '';
    let after = false;
    for (const [eventId, event] of this.#events) {
      if (eventId === lastEventId) {
        after = true;
        continue;
      }
      if (after && event.streamId === streamId) await send(eventId, event.message);
    }
    return streamId;
  }
}
const eventStore = new MemoryEventStore();

async function openSessionEraSession() {
  const server = makeServer('session');
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    eventStore,
    retryInterval: 500,
    onsessioninitialized: (id) => sessions.set(id, { server, transport }),
    onsessionclosed: (id) => sessions.delete(id),
  });
  transport.onclose = () => {
    if (transport.sessionId) sessions.delete(transport.sessionId);
  };
  await server.connect(transport);
  return transport;
}

function jsonError(status, code, message) {
  return new Response(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }), {
    status,
    headers: { 'content-type': 'application/json' },
  });
}

async function serveSessionEra(request, body) {
  const sessionId = request.headers.get('mcp-session-id');
  if (sessionId) {
    const session = sessions.get(sessionId);
    if (!session) return jsonError(404, -32001, 'Session not found');
    return session.transport.handleRequest(request, body === undefined ? {} : { parsedBody: body });
  }
  const opens = Array.isArray(body)
    ? body.some((message) => message?.method === 'initialize')
    : body?.method === 'initialize';
  if (request.method === 'POST' && opens) {
    const transport = await openSessionEraSession();
    return transport.handleRequest(request, { parsedBody: body });
  }
  if (request.method === 'POST' && body === undefined) return jsonError(400, -32700, 'Parse error');
  return jsonError(400, -32000, 'Bad Request: no session; send initialize first');
}

// --- HTTP --------------------------------------------------------------------------------------

stateless = createMcpHandler(() => makeServer('stateless'), { legacy: 'reject' });
const allowedHosts = localhostAllowedHostnames();
const allowedOrigins = localhostAllowedOrigins();

async function handle(request) {
  const url = new URL(request.url);
  if (url.pathname !== MCP_PATH) return new Response('not found', { status: 404 });
  const rejected =
    hostHeaderValidationResponse(request, allowedHosts) ?? originValidationResponse(request, allowedOrigins);
  if (rejected) return rejected;
  let body;
  if (request.method === 'POST') {
    const raw = await request.text();
    try {
      body = JSON.parse(raw);
    } catch {
      body = undefined;
    }
    request = new Request(request.url, { method: 'POST', headers: request.headers, body: raw, signal: request.signal });
  }
  if (await isLegacyRequest(request.clone(), body)) return serveSessionEra(request, body);
  return stateless.fetch(request);
}

/// node:http to web-standard Request/Response and back, streaming both ways.
const http = createServer(async (req, res) => {
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
  let body;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    body = Buffer.concat(chunks);
  }
  let response;
  try {
    const request = new Request(`http://${req.headers.host ?? `${HOST}`}${req.url}`, {
      method: req.method,
      headers,
      body,
      signal: abort.signal,
    });
    response = await handle(request);
  } catch (error) {
    process.stderr.write(`server: ${error.stack ?? error}\n`);
    response = jsonError(500, -32603, 'Internal error');
  }
  const outHeaders = {};
  response.headers.forEach((value, key) => {
    outHeaders[key] = value;
  });
  res.writeHead(response.status, outHeaders);
  if (!response.body) {
    res.end();
    return;
  }
  res.flushHeaders();
  const reader = response.body.getReader();
  abort.signal.addEventListener('abort', () => reader.cancel().catch(() => {}));
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      res.write(value);
    }
  } catch {
    // The client went away.
  }
  res.end();
});

http.listen(PORT, HOST, () => {
  const { port } = http.address();
  process.stdout.write(`listening on http://${HOST}:${port}${MCP_PATH}\n`);
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    http.close();
    process.exit(0);
  });
}
