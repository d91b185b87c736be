// Runs every authorization scenario of the MCP conformance suite (@modelcontextprotocol/
// conformance, from node_modules) against Switchboard's real sign-in, through
// tests/conformance/driver.mjs: each scenario at every revision the suite has it for
// (2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28), and the extensions' scenarios, which are on
// no revision's timeline, once. Exits 1 if any run fails.
//
//   node tests/conformance/run.mjs [SCENARIO]...     (default: every auth/ scenario)
//
// Run it with the Node the suite needs (22); the driver runs with the same. Switchboard is
// target/debug/switchboard (SWITCHBOARD_BIN overrides it), built beforehand, and needs a Secret
// Service (scripts/with-keyring). Each run's output goes to target/conformance/.
// CONFORMANCE_JOBS runs that many at once (default 4).

import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const SUITE = join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const DRIVER = join(ROOT, 'tests/conformance/driver.mjs');
const LOGS = join(ROOT, 'target/conformance');
const VERSIONS = ['2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28'];
const JOBS = Number(process.env.CONFORMANCE_JOBS ?? 4);
/// Per run: Switchboard starts, signs in (twice for a step-up) and calls a tool.
const TIMEOUT_MS = 60_000;

const only = new Set(process.argv.slice(2));

function suite(args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [SUITE, ...args], { cwd: ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (data) => (stdout += data));
    child.stderr.on('data', (data) => (stderr += data));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/// The `auth/` client scenarios the suite lists, at `version` if given.
async function authScenarios(version) {
  const { stdout } = await suite(['list', '--client', ...(version ? ['--spec-version', version] : [])]);
  return [...stdout.matchAll(/^\s+- (auth\/\S+)/gm)].map((match) => match[1]);
}

const runs = [];
const onTimeline = new Set();
for (const version of VERSIONS) {
  for (const scenario of await authScenarios(version)) {
    runs.push({ scenario, version });
    onTimeline.add(scenario);
  }
}
for (const scenario of await authScenarios()) {
  if (!onTimeline.has(scenario)) runs.push({ scenario, version: undefined });
}
const selected = runs.filter(({ scenario }) => only.size === 0 || only.has(scenario));
if (selected.length === 0) {
  process.stderr.write(`no authorization scenario matches ${[...only].join(', ')}\n`);
  process.exit(1);
}

mkdirSync(LOGS, { recursive: true });
const started = Date.now();
const failed = [];
let next = 0;
async function worker() {
  while (next < selected.length) {
    const run = selected[next++];
    const label = `${run.scenario} @ ${run.version ?? 'extension'}`;
    const begun = Date.now();
    const { code, stdout, stderr } = await suite([
      'client',
      '--command',
      `${process.execPath} ${DRIVER}`,
      '--scenario',
      run.scenario,
      ...(run.version ? ['--spec-version', run.version] : []),
      '--timeout',
      String(TIMEOUT_MS),
    ]);
    const seconds = ((Date.now() - begun) / 1000).toFixed(1);
    const log = join(LOGS, `${run.scenario.replace('/', '_')}@${run.version ?? 'extension'}.log`);
    writeFileSync(log, `${stdout}\n${stderr}`);
    if (code === 0) {
      process.stdout.write(`ok    ${label} (${seconds} s)\n`);
      continue;
    }
    failed.push(label);
    // The suite lists what failed after these headings.
    const findings = stderr
      .split('\n')
      .filter((line) => /^\s+- |^\s+(Error|Warning):|TIMED OUT|EXITED WITH ERROR/.test(line))
      .join('\n');
    process.stdout.write(`FAIL  ${label} (${seconds} s; ${log})\n${findings}\n`);
  }
}
await Promise.all(Array.from({ length: JOBS }, worker));
const seconds = ((Date.now() - started) / 1000).toFixed(0);
const scenarios = new Set(selected.map(({ scenario }) => scenario));
const failing = new Set(failed.map((label) => label.split(' @ ')[0]));
process.stdout.write(
  `\n${scenarios.size - failing.size} of ${scenarios.size} scenarios passed at every revision ` +
    `(${selected.length - failed.length} of ${selected.length} runs) in ${seconds} s\n`,
);
if (failed.length > 0) {
  process.stdout.write(`failed:\n${failed.map((label) => `  ${label}`).join('\n')}\n`);
  process.exit(1);
}
