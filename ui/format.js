// How values read on screen. Pure functions of what the API gave.

/** @typedef {import('./types.js').BackendState} BackendState */
/** @typedef {import('./types.js').StopReason} StopReason */
/** @typedef {import('./types.js').ExitDescription} ExitDescription */
/** @typedef {import('./types.js').ReloadOutcome} ReloadOutcome */
/** @typedef {import('./types.js').LeftOut} LeftOut */

/** @type {Record<BackendState, string>} */
export const STATE_LABELS = {
  stopped: "Stopped",
  starting: "Starting",
  ready: "Ready",
  backoff: "Backoff",
  crash_loop: "Crash loop",
  stopping: "Stopping",
  needs_sign_in: "Needs sign-in",
};

/** @type {Record<StopReason, string>} */
export const REASON_LABELS = {
  crash: "Crashed",
  unresponsive: "Stopped answering pings",
  handshake_failed: "Handshake failed",
  stopped_by_user: "Stopped by user",
  restarted_by_user: "Restarted by user",
  config_changed: "Config changed",
  shutdown: "Shutdown",
  needs_sign_in: "Needs sign-in",
};

/**
 * @param {string} state
 * @param {boolean} [remote] whether the backend is a remote server, which connects rather than
 *   starts a process
 * @returns {string}
 */
export function stateLabel(state, remote = false) {
  if (remote && state === "starting") return "Connecting";
  return STATE_LABELS[/** @type {BackendState} */ (state)] ?? state;
}

/**
 * @param {string} reason
 * @returns {string}
 */
export function reasonLabel(reason) {
  return REASON_LABELS[/** @type {StopReason} */ (reason)] ?? reason.replaceAll("_", " ");
}

/** Signal names on Linux, for the numbers a process can die of. */
const SIGNALS = /** @type {Record<number, string>} */ ({
  1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS",
  8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE",
  14: "SIGALRM", 15: "SIGTERM", 24: "SIGXCPU", 25: "SIGXFSZ",
});

/**
 * "exit code 3", "signal 9 (SIGKILL)", "disconnected" (a remote server's link, whose reason is
 * told apart), or "never started".
 * @param {ExitDescription | null} exit
 * @returns {string}
 */
export function exitLabel(exit) {
  if (exit === null) return "never started";
  if (exit.disconnected !== undefined) return "disconnected";
  if (exit.code !== null) return `exit code ${exit.code}`;
  if (exit.signal !== null) {
    const name = SIGNALS[exit.signal];
    return name ? `signal ${exit.signal} (${name})` : `signal ${exit.signal}`;
  }
  return "unknown exit";
}

/**
 * A compact duration: "850 ms", "42 s", "3 m 05 s", "2 h 04 m", "3 d 2 h".
 * @param {number} ms
 * @returns {string}
 */
export function duration(ms) {
  if (ms < 0) ms = 0;
  if (ms > 0 && ms < 1000) return `${Math.round(ms)} ms`;
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} m ${String(seconds % 60).padStart(2, "0")} s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} h ${String(minutes % 60).padStart(2, "0")} m`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/**
 * A duration measured in microseconds, as precise as it is worth: "420 µs", "3.8 ms", "85 ms",
 * "1.24 s", "12.5 s", then as `duration` does.
 * @param {number} us
 * @returns {string}
 */
export function micros(us) {
  if (us < 1000) return `${Math.max(0, Math.round(us))} µs`;
  if (us < 10_000) return `${(us / 1000).toFixed(1)} ms`;
  if (us < 1_000_000) return `${Math.round(us / 1000)} ms`;
  if (us < 10_000_000) return `${(us / 1_000_000).toFixed(2)} s`;
  if (us < 60_000_000) return `${(us / 1_000_000).toFixed(1)} s`;
  return duration(us / 1000);
}

/**
 * A size: "0 B", "812 B", "3.4 KB", "12 KB", "1.5 MB" (of 1024 bytes to the KB).
 * @param {number} n
 * @returns {string}
 */
export function byteSize(n) {
  if (n < 1024) return `${n} B`;
  const units = ["KB", "MB", "GB"];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

/**
 * "14:03:27" today, "Mar 3 14:03:27" otherwise.
 * @param {number} atMs
 * @returns {string}
 */
export function clockTime(atMs) {
  const date = new Date(atMs);
  const time = date.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
  const today = new Date();
  if (date.toDateString() === today.toDateString()) return time;
  return `${date.toLocaleDateString(undefined, { month: "short", day: "numeric" })} ${time}`;
}

/**
 * "14:03:27.512" for log lines.
 * @param {number} atMs
 * @returns {string}
 */
export function logTime(atMs) {
  const date = new Date(atMs);
  const pad = (/** @type {number} */ n, /** @type {number} */ width = 2) => String(n).padStart(width, "0");
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

/**
 * "just now", "5 s ago", "3 m ago", "2 h ago", or a date.
 * @param {number} atMs
 * @param {number} [now]
 * @returns {string}
 */
export function ago(atMs, now = Date.now()) {
  const ms = now - atMs;
  if (ms < 2000) return "just now";
  if (ms < 60_000) return `${Math.floor(ms / 1000)} s ago`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} m ago`;
  if (ms < 86_400_000) return `${Math.floor(ms / 3_600_000)} h ago`;
  return new Date(atMs).toLocaleDateString(undefined, { month: "short", day: "numeric", year: "numeric" });
}

/**
 * @param {number} n
 * @param {string} one
 * @param {string} [many]
 * @returns {string}
 */
export function plural(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * A command line as a person would type it, quoting arguments that need it.
 * @param {string} command
 * @param {string[]} args
 * @returns {string}
 */
export function commandLine(command, args) {
  return [command, ...args].map((part) => (/^[\w@%+=:,./~-]+$/.test(part) ? part : `'${part.replaceAll("'", "'\\''")}'`)).join(" ");
}

/**
 * What a config reload did, in a few words ("notes: added, demo: restarted", "Nothing
 * changed."), with what is left out and why, or why it was not applied.
 * @param {ReloadOutcome} outcome
 * @returns {{applied: boolean, leftOut: boolean, text: string}}
 */
export function reloadSummary(outcome) {
  if (outcome.outcome === "applied") {
    const changed = Object.entries(outcome.backends).filter(([, applied]) => applied !== "unchanged");
    const summary = changed.length === 0
      ? "Nothing changed."
      : changed.map(([name, applied]) => `${name}: ${applied}`).join(", ");
    const leftOut = outcome.left_out.map((part) => `${leftOutName(part)} is left out: ${part.reasons.join("; ")}.`);
    return { applied: true, leftOut: leftOut.length > 0, text: [summary, ...leftOut, ...outcome.notes].join(" ") };
  }
  if (outcome.outcome === "refused") return { applied: false, leftOut: false, text: `${outcome.problem}.` };
  return { applied: false, leftOut: false, text: outcome.message };
}

/**
 * `` `time` `` for a server, `` the profile `work` `` for a profile, as the core says them.
 * @param {LeftOut} part
 * @returns {string}
 */
function leftOutName(part) {
  return part.kind === "server" ? `\`${part.name}\`` : `the profile \`${part.name}\``;
}
