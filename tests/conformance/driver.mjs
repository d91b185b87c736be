// The client under test of the MCP conformance suite's authorization scenarios
// (@modelcontextprotocol/conformance): Switchboard's real sign-in, end to end.
//
//   MCP_CONFORMANCE_SCENARIO=auth/… [MCP_CONFORMANCE_CONTEXT=JSON] node tests/conformance/driver.mjs SERVER_URL
//
// The suite starts it with the URL of its MCP server. It starts `switchboard serve`
// (SWITCHBOARD_BIN, else target/debug/switchboard) with directories, a config and a keychain
// service of its own, the suite's server as the remote server `remote` (in the protocol era of
// the revision the suite asks for, MCP_CONFORMANCE_PROTOCOL_VERSION); a client the scenario
// gives in MCP_CONFORMANCE_CONTEXT goes into `[servers.remote.oauth]` as a person would write it
// (with `issuer`, the authorization server the server's metadata names, for a client secret or
// key). Then it plays the person: while the server is in `needs_sign_in`, it asks the control
// API for the sign-in URL (POST /api/backends/remote/sign-in) and follows the authorization
// page's redirects back to Switchboard's callback as a browser would (the suite's pages approve
// at once; a page that asks for anything is a failure); then it calls a tool of the server
// through `/mcp`, as an editor would. A tool error that says to sign in (a step-up to wider
// scopes) leads to another sign-in, at most MAX_SIGN_INS in all.
//
// It exits 0 once a tool call succeeds, 1 otherwise, saying why on stderr; Switchboard's log
// goes to stderr too. The suite keeps both.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const SWITCHBOARD = process.env.SWITCHBOARD_BIN ?? join(ROOT, 'target/debug/switchboard');
/// A person tries a few times; Switchboard's own limits are what the suite judges.
const MAX_SIGN_INS = 5;
const MAX_REDIRECTS = 10;
/// How long Switchboard may take to settle after a start or a sign-in.
const SETTLE_MS = 15_000;
/// The Client ID Metadata Document URL the suite's authorization servers take as Switchboard's.
const CLIENT_METADATA_URL = 'https://conformance-test.local/client-metadata.json';

const serverUrl = process.argv[2];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
/// 2026-07-28 is the stateless era, the dated revisions before it the session era.
const protocol = process.env.MCP_CONFORMANCE_PROTOCOL_VERSION === '2026-07-28' ? 'modern' : 'legacy';
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}');
if (!serverUrl) fail('usage: MCP_CONFORMANCE_SCENARIO=… node tests/conformance/driver.mjs SERVER_URL');

function fail(message) {
  process.stderr.write(`driver: ${message}\n`);
  process.exit(1);
}

function note(message) {
  process.stderr.write(`driver: ${message}\n`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/// A TOML basic string (JSON's escapes are TOML's).
const toml = (text) => JSON.stringify(text);

/// The issuer the server's protected resource metadata names, as a person setting up a client
/// would look it up.
async function issuerOf(url) {
  const mcp = new URL(url);
  const path = mcp.pathname.replace(/\/$/, '');
  for (const where of [`/.well-known/oauth-protected-resource${path}`, '/.well-known/oauth-protected-resource']) {
    const response = await fetch(new URL(where, mcp.origin), { redirect: 'manual' });
    if (response.ok) {
      const metadata = await response.json();
      if (metadata.authorization_servers?.[0]) return metadata.authorization_servers[0];
    }
  }
  return mcp.origin;
}

/// `[servers.remote.oauth]` for the scenario's context.
async function oauthSettings(home) {
  const lines = [];
  const set = (key, value) => lines.push(`${key} = ${toml(value)}`);
  const file = (name, text) => {
    const path = join(home, name);
    writeFileSync(path, text, { mode: 0o600 });
    return path;
  };
  if (scenario === 'auth/basic-cimd') set('client_metadata_url', CLIENT_METADATA_URL);
  if (scenario.startsWith('auth/client-credentials')) set('grant', 'client_credentials');
  if (context.idp_token_endpoint) {
    set('grant', 'identity_assertion');
    set('idp_token_endpoint', context.idp_token_endpoint);
    if (context.idp_client_id) set('idp_client_id', context.idp_client_id);
    set('id_token_file', file('id-token.jwt', context.idp_id_token));
  } else if (context.valid_jwt) {
    set('grant', 'jwt_bearer');
    set('assertion_file', file('workload.jwt', context.valid_jwt));
  }
  if (context.client_id) set('client_id', context.client_id);
  if (context.client_secret) set('client_secret', context.client_secret);
  if (context.private_key_pem) set('private_key', context.private_key_pem);
  if (context.client_secret || context.private_key_pem) set('issuer', await issuerOf(serverUrl));
  return lines.length > 0 ? `\n[servers.remote.oauth]\n${lines.join('\n')}\n` : '';
}

/// Starts `switchboard serve`; resolves to its base URL once its instance file names it.
async function startSwitchboard(home, token) {
  const config = join(home, 'config.toml');
  const oauth = await oauthSettings(home);
  writeFileSync(config, `[servers.remote]\nurl = ${toml(serverUrl)}\nprotocol = ${toml(protocol)}\n${oauth}`);
  const child = spawn(SWITCHBOARD, ['serve', '--listen', '127.0.0.1:0', '--config', config], {
    env: {
      ...process.env,
      SWITCHBOARD_RUNTIME_DIR: join(home, 'run'),
      SWITCHBOARD_DATA_DIR: join(home, 'data'),
      SWITCHBOARD_TOKEN: token,
      SWITCHBOARD_LOG: 'info',
      SWITCHBOARD_KEYCHAIN_SERVICE: `switchboard-conformance-${randomBytes(6).toString('hex')}`,
      NO_COLOR: '1',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  child.on('exit', (code, signal) => note(`switchboard exited (${signal ?? code})`));
  for (let waited = 0; waited < SETTLE_MS; waited += 50) {
    try {
      const instance = JSON.parse(readFileSync(join(home, 'run', 'instance.json'), 'utf8'));
      if (instance.pid === child.pid) return { child, base: `http://${instance.address}` };
    } catch {
      // Not written yet.
    }
    if (child.exitCode !== null) break;
    await sleep(50);
  }
  child.kill();
  return fail('switchboard serve did not start');
}

function api(base, token) {
  return async (method, path) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: method === 'POST' ? '{}' : undefined,
    });
    return { status: response.status, body: await response.json() };
  };
}

/// The backend's summary once it has settled (not starting), or the last one seen.
async function settled(call) {
  let summary;
  for (let waited = 0; waited < SETTLE_MS; waited += 100) {
    const { body } = await call('GET', '/api/backends');
    summary = body.find((backend) => backend.name === 'remote');
    if (summary && !['starting', 'stopped', 'stopping'].includes(summary.state)) return summary;
    await sleep(100);
  }
  return summary;
}

/// Whether the backend goes to `needs_sign_in` (a call that failed for want of a sign-in
/// ends its link, and the state follows).
async function signInAsked(call) {
  for (let waited = 0; waited < SETTLE_MS; waited += 100) {
    const { body } = await call('GET', '/api/backends');
    const summary = body.find((backend) => backend.name === 'remote');
    if (summary?.state === 'needs_sign_in') return true;
    if (summary?.state !== 'ready' && summary?.state !== 'starting') return false;
    await sleep(100);
  }
  return false;
}

/// Waits until Switchboard has taken a sign-in up: the backend has left `needs_sign_in`, or
/// come back to it (its last exit is newer than `before`'s).
async function takenUp(call, before) {
  for (let waited = 0; waited < SETTLE_MS; waited += 100) {
    const { body } = await call('GET', '/api/backends');
    const summary = body.find((backend) => backend.name === 'remote');
    if (summary?.state !== 'needs_sign_in' || summary.last_exit?.at_ms !== before.last_exit?.at_ms) return;
    await sleep(100);
  }
}

/// Follows the authorization URL as a browser would, until a redirect comes back to
/// Switchboard (`base`), and requests that callback.
async function browse(url, base) {
  let next = new URL(url);
  for (let step = 0; step < MAX_REDIRECTS; step += 1) {
    if (next.origin === new URL(base).origin) {
      const callback = await fetch(next, { redirect: 'manual' });
      const page = await callback.text();
      if (callback.status !== 200) {
        throw new Error(`the callback answered ${callback.status}: ${page.replace(/<[^>]*>/g, '')}`);
      }
      return;
    }
    const response = await fetch(next, { redirect: 'manual' });
    const location = response.headers.get('location');
    if (response.status < 300 || response.status >= 400 || !location) {
      throw new Error(
        `the authorization page at ${next.origin}${next.pathname} answered ${response.status} instead of approving`,
      );
    }
    next = new URL(location, next);
  }
  throw new Error(`no way back to Switchboard after ${MAX_REDIRECTS} redirects`);
}

/// An MCP client of `/mcp`: one session, JSON or SSE answers.
function mcpClient(base) {
  let session;
  let id = 0;
  return async (method, params) => {
    id += 1;
    const headers = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
    if (session) Object.assign(headers, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
    const response = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
    });
    session ??= response.headers.get('mcp-session-id') ?? undefined;
    const text = await response.text();
    const messages = (response.headers.get('content-type') ?? '').startsWith('text/event-stream')
      ? text.split('\n').filter((line) => line.startsWith('data:')).map((line) => JSON.parse(line.slice(5)))
      : [JSON.parse(text)];
    const answer = messages.find((message) => message.id === id);
    if (!answer) throw new Error(`no answer to ${method} (HTTP ${response.status})`);
    if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
    if (method === 'initialize') {
      await fetch(`${base}/mcp`, {
        method: 'POST',
        headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      });
    }
    return answer.result;
  };
}

/// Calls the first tool of `remote` through `/mcp`; the tool's result.
async function callTool(base) {
  const mcp = mcpClient(base);
  await mcp('initialize', {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'conformance-driver', version: '1.0.0' },
  });
  const { tools } = await mcp('tools/list', {});
  const tool = tools.find((tool) => tool.name.startsWith('remote__'));
  if (!tool) throw new Error(`remote lists no tools (${JSON.stringify(tools.map((tool) => tool.name))})`);
  return mcp('tools/call', { name: tool.name, arguments: {} });
}

const home = mkdtempSync(join(tmpdir(), 'switchboard-conformance-'));
const token = randomBytes(24).toString('base64url');
const { child, base } = await startSwitchboard(home, token);
const call = api(base, token);
let outcome = 1;
try {
  let signIns = 0;
  for (;;) {
    const summary = await settled(call);
    if (summary?.state === 'needs_sign_in') {
      if (signIns === MAX_SIGN_INS) throw new Error(`still asked to sign in after ${MAX_SIGN_INS} sign-ins`);
      signIns += 1;
      note(`sign-in ${signIns}: ${summary.last_error ?? ''}`);
      const { status, body } = await call('POST', '/api/backends/remote/sign-in');
      if (status !== 200) throw new Error(`Switchboard refused to sign in: ${body.message}`);
      await browse(body.url, base);
      await takenUp(call, summary);
      continue;
    }
    if (summary?.state !== 'ready') note(`remote is ${summary?.state}: ${summary?.last_error ?? ''}`);
    // A JSON-RPC error is as much an answer as a tool error: either may say to sign in again.
    const result = await callTool(base).catch((error) => ({ isError: true, content: [{ text: error.message }] }));
    const text = result.content?.map((part) => part.text ?? '').join(' ') ?? '';
    if (result.isError) {
      if (/Sign in to remote/.test(text) && (await signInAsked(call))) continue;
      throw new Error(`the tool call failed: ${text}`);
    }
    note(`the tool answered: ${text}`);
    outcome = 0;
    break;
  }
} catch (error) {
  note(error.message);
} finally {
  child.kill('SIGTERM');
  await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.on('exit', resolve)));
  rmSync(home, { recursive: true, force: true });
}
process.exit(outcome);
