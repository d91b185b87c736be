// Runs every server scenario of the MCP conformance suite (@modelcontextprotocol/conformance,
// from node_modules) against tests/conformance/server.mjs twice over: directly, and through
// Switchboard's `/mcp` with that server as a remote server, once per `protocol` setting
// (`auto`, `session`, `stateless`). A scenario that passes directly must pass through Switchboard in
// every one of them. Each target gets two passes: the suite's own choice of revision per
// scenario (2025-11-25 for session-era scenarios, 2026-07-28 for the stateless era's own,
// extensions once), and every scenario the 2026-07-28 revision has, at 2026-07-28, so that the
// common ones (tools, resources, prompts…) are run in both eras (a stateless-era scenario is not
// repeated). Prints a table and exits 1 on a regression: a scenario that passes directly and
// fails through /mcp, unless tests/conformance/known-differences.txt names it (and on a named one
// that passes now), or on a scenario the server fails directly. `pass~` marks one that passes through /mcp with checks that succeed
// directly not succeeding there (found not applicable, or only a warning); these are listed, not
// counted as regressions. The four targets run at once, each with a server.mjs of its own; a full
// run takes about two minutes, most of it the scenarios' own waits.
//
//   node tests/conformance/servers.mjs [--direct-only] [--protocol auto|session|stateless]... [SCENARIO]...
//
// Run it with the Node the suite needs (22). Switchboard is target/debug/switchboard
// (SWITCHBOARD_BIN overrides it), built beforehand. Output goes to target/conformance/servers/.
//
// The server is configured with `prefix = ""`, so that Switchboard offers its tools and prompts
// under their own names, the ones the scenarios call, and with `ask = "editor"`: the suite's
// client is the editor, and its scenarios check what a server asks a client that did or did not
// declare elicitation, so its questions go to that client alone. Switchboard answering them for an
// editor that cannot (`ask = "auto"`, the default) is tested in tests/it/questions.rs.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const SUITE = join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const SERVER = join(ROOT, 'tests/conformance/server.mjs');
const SWITCHBOARD = process.env.SWITCHBOARD_BIN ?? join(ROOT, 'target/debug/switchboard');
const LOGS = join(ROOT, 'target/conformance/servers');
const PROTOCOLS = ['auto', 'session', 'stateless'];
/// The two passes of every target: the suite's own revision per scenario, and 2026-07-28.
const PASSES = [
  { name: 'default', args: [] },
  { name: '2026-07-28', args: ['--spec-version', '2026-07-28'] },
];
/// How long Switchboard may take to start and reach the server.
const SETTLE_MS = 20_000;

const args = process.argv.slice(2);
const directOnly = args.includes('--direct-only');
const protocols = [];
const only = new Set();
for (let i = 0; i < args.length; i += 1) {
  if (args[i] === '--protocol') protocols.push(args[(i += 1)]);
  else if (args[i] !== '--direct-only') only.add(args[i]);
}
if (protocols.length === 0) protocols.push(...PROTOCOLS);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const toml = (text) => JSON.stringify(text);

function note(message) {
  process.stderr.write(`servers: ${message}\n`);
}

function run(command, argv, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, argv, { cwd: ROOT, ...options });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (data) => (stdout += data));
    child.stderr?.on('data', (data) => (stderr += data));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
}

/// Starts server.mjs; resolves to its child and URL.
function startServer() {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SERVER, '0'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    child.stderr.on('data', (data) => (log += data));
    child.stdout.on('data', (data) => {
      const url = /listening on (\S+)/.exec(String(data))?.[1];
      if (url) resolve({ child, url, log: () => log });
    });
    child.on('exit', (code) => reject(new Error(`server.mjs exited (${code}): ${log}`)));
  });
}

/// The results of one suite run: scenario -> { status, failures: [{ id, message }] }.
function readResults(dir) {
  const results = new Map();
  for (const entry of readdirSync(dir)) {
    const scenario = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(entry)?.[1];
    if (!scenario) continue;
    let checks;
    try {
      checks = JSON.parse(readFileSync(join(dir, entry, 'checks.json'), 'utf8'));
    } catch {
      continue;
    }
    const failures = checks
      .filter((check) => check.status === 'FAILURE')
      .map((check) => ({ id: check.id, message: check.errorMessage ?? '' }));
    const succeeded = new Set(checks.filter((check) => check.status === 'SUCCESS').map((check) => check.id));
    results.set(scenario, { status: failures.length > 0 ? 'FAIL' : 'pass', failures, succeeded });
  }
  return results;
}

/// Runs every server scenario (or those asked for) in one pass against `url`.
async function suite(url, pass, dir) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const scenarios = only.size > 0 ? [...only] : [undefined];
  let output = '';
  for (const scenario of scenarios) {
    const picked = scenario ? ['--scenario', scenario] : ['--suite', 'all'];
    const { stdout, stderr } = await run(process.execPath, [
      SUITE,
      'server',
      '--url',
      url,
      ...picked,
      ...pass.args,
      '-o',
      dir,
    ]);
    output += `${stdout}\n${stderr}\n`;
  }
  writeFileSync(join(dir, 'suite.log'), output);
  // A scenario the suite skipped at this revision left no results.
  return readResults(dir);
}

/// Starts `switchboard serve` with `serverUrl` as the remote server `conf`; resolves once the
/// server is ready (or has settled in another state, which the table then shows as failures).
async function startSwitchboard(home, serverUrl, protocol) {
  const token = randomBytes(24).toString('base64url');
  const config = join(home, `config-${protocol}.toml`);
  writeFileSync(
    config,
    `[endpoint]\nrequire_token = false\n\n[servers.conf]\nurl = ${toml(serverUrl)}\nprotocol = ${toml(protocol)}\nprefix = ""\nask = "editor"\n`,
  );
  const run = join(home, `run-${protocol}`);
  const child = spawn(SWITCHBOARD, ['serve', '--listen', '127.0.0.1:0', '--config', config], {
    env: {
      ...process.env,
      SWITCHBOARD_RUNTIME_DIR: run,
      SWITCHBOARD_DATA_DIR: join(home, `data-${protocol}`),
      SWITCHBOARD_TOKEN: token,
      SWITCHBOARD_LOG: process.env.SWITCHBOARD_LOG ?? 'info',
      NO_COLOR: '1',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (data) => (log += data));
  let base;
  for (let waited = 0; waited < SETTLE_MS && !base; waited += 50) {
    try {
      const instance = JSON.parse(readFileSync(join(run, 'instance.json'), 'utf8'));
      if (instance.pid === child.pid) base = `http://${instance.address}`;
    } catch {
      // Not written yet.
    }
    if (child.exitCode !== null) break;
    await sleep(50);
  }
  if (!base) {
    await stop(child);
    throw new Error(`switchboard serve did not start:\n${log}`);
  }
  let state;
  for (let waited = 0; waited < SETTLE_MS; waited += 100) {
    const response = await fetch(`${base}/api/backends`, { headers: { authorization: `Bearer ${token}` } });
    const backend = (await response.json()).find((summary) => summary.name === 'conf');
    state = backend?.state;
    if (state === 'ready') break;
    await sleep(100);
  }
  if (state !== 'ready') note(`conf is ${state} under protocol ${protocol}`);
  return { child, url: `${base}/mcp`, log: () => log };
}

// --- The runs ----------------------------------------------------------------------------------

/// Runs both passes against one target with a server.mjs of its own, so that the targets run
/// at once without one's scenarios seeing another's state: `direct`, or a protocol setting
/// through Switchboard.
async function runTarget(target, home) {
  const server = await startServer();
  note(`server.mjs for ${target} at ${server.url}`);
  let switchboard;
  try {
    switchboard = target === 'direct' ? undefined : await startSwitchboard(home, server.url, target);
    const url = switchboard?.url ?? server.url;
    const passes = new Map();
    for (const pass of PASSES) passes.set(pass.name, await suite(url, pass, join(LOGS, `${target}@${pass.name}`)));
    return passes;
  } finally {
    if (switchboard) {
      await stop(switchboard.child);
      writeFileSync(join(LOGS, `switchboard-${target}.log`), switchboard.log());
    }
    await stop(server.child);
    writeFileSync(join(LOGS, `server-${target}.log`), server.log());
  }
}

mkdirSync(LOGS, { recursive: true });
const started = Date.now();
const home = mkdtempSync(join(tmpdir(), 'switchboard-conformance-servers-'));
const targets = directOnly ? ['direct'] : ['direct', ...protocols];
/// target name -> pass name -> results
const results = new Map();
try {
  const runs = await Promise.all(targets.map((target) => runTarget(target, home)));
  targets.forEach((target, i) => results.set(target, runs[i]));
} finally {
  rmSync(home, { recursive: true, force: true });
}

// --- The table ---------------------------------------------------------------------------------

/// Scenarios the suite runs at 2026-07-28 in its default pass already (the stateless era's own,
/// `[2026-07-28]` in its list): their 2026-07-28 pass repeats that run and is left out.
const { stdout: listed } = await run(process.execPath, [SUITE, 'list', '--server']);
const statelessOnly = new Set([...listed.matchAll(/^\s+- (\S+) \[2026-07-28\]$/gm)].map((match) => match[1]));

const rows = [];
for (const pass of PASSES) {
  const names = new Set();
  for (const target of targets) for (const name of results.get(target).get(pass.name).keys()) names.add(name);
  for (const name of [...names].sort()) {
    if (pass.name === '2026-07-28' && statelessOnly.has(name)) continue;
    const cells = targets.map((target) => results.get(target).get(pass.name).get(name));
    rows.push({ label: `${name} @ ${pass.name}`, cells });
  }
}
const width = Math.max(...rows.map((row) => row.label.length), 8);
process.stdout.write(`${'scenario @ pass'.padEnd(width)}  ${targets.map((cell) => cell.padEnd(7)).join(' ')}\n`);
const regressions = [];
const weaker = [];
/// The checks that succeed directly and not through Switchboard (a scenario can pass with
/// fewer of them: a check the suite finds not applicable is not a failure).
const lost = (direct, cell) => [...(direct?.succeeded ?? [])].filter((id) => !cell?.succeeded.has(id));
for (const row of rows) {
  const [direct, ...through] = row.cells;
  const marks = row.cells.map((cell, index) =>
    !cell ? '-' : index > 0 && cell.status === 'pass' && lost(direct, cell).length > 0 ? 'pass~' : cell.status,
  );
  process.stdout.write(`${row.label.padEnd(width)}  ${marks.map((mark) => mark.padEnd(7)).join(' ')}\n`);
  through.forEach((cell, index) => {
    if (direct?.status === 'pass' && cell?.status !== 'pass') {
      regressions.push({ label: row.label, target: targets[index + 1], failures: cell?.failures ?? [] });
    } else if (cell?.status === 'pass' && lost(direct, cell).length > 0) {
      weaker.push({ label: row.label, target: targets[index + 1], checks: lost(direct, cell) });
    }
  });
}
const directFailures = rows.filter((row) => row.cells[0]?.status === 'FAIL');
process.stdout.write(
  `\n${rows.length} scenario runs per target; directly ${rows.length - directFailures.length} pass` +
    (directFailures.length > 0 ? ` (failing: ${directFailures.map((row) => row.label).join(', ')})` : '') +
    `; ${((Date.now() - started) / 1000).toFixed(0)} s in all\n`,
);
if (weaker.length > 0) {
  process.stdout.write(`\npass~: passes through /mcp, but checks that succeed directly did not succeed there:\n`);
  for (const { label, target, checks } of weaker) process.stdout.write(`  ${label} [protocol ${target}]: ${checks.join(', ')}\n`);
}
/// The differences Switchboard is known to have, each `scenario @ pass [protocol]` on a line of
/// tests/conformance/known-differences.txt under the reason it has; a run fails on any other, and
/// on one of these that no longer happens, so that the list stays true.
const known = new Set(
  readFileSync(join(ROOT, 'tests/conformance/known-differences.txt'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#')),
);
const key = ({ label, target }) => `${label} [${target}]`;
const unknown = regressions.filter((regression) => !known.has(key(regression)));
const ranAll = only.size === 0 && protocols.length === PROTOCOLS.length && !directOnly;
const gone = ranAll ? [...known].filter((line) => !regressions.some((regression) => key(regression) === line)) : [];
if (regressions.length > 0) {
  process.stdout.write(`\n${regressions.length} scenario runs pass directly and fail through /mcp:\n`);
  for (const regression of regressions) {
    const { failures } = regression;
    process.stdout.write(`  ${key(regression)}${known.has(key(regression)) ? ' (known)' : ''}\n`);
    for (const { id, message } of failures) process.stdout.write(`      ${id}: ${message.slice(0, 400)}\n`);
  }
}
if (gone.length > 0) {
  process.stdout.write(`\nknown differences that no longer happen (take them out of known-differences.txt):\n`);
  for (const line of gone) process.stdout.write(`  ${line}\n`);
}
if (unknown.length > 0 || gone.length > 0 || directFailures.length > 0) process.exit(1);
