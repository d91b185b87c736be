// A backend's restart history as a timeline, newest first. Each entry's last output lines fold
// out with <details>, so they are reachable from the keyboard without any script.

import { h } from "../dom.js";
import { reasonLabel, exitLabel, duration, clockTime, ago, logTime, plural } from "../format.js";
import { empty } from "./common.js";

/** @typedef {import('../types.js').HistoryEntry} HistoryEntry */
/** @typedef {import('../types.js').OutputLine} OutputLine */

/** Reasons that mean something went wrong, drawn in the danger colour. */
const BAD_REASONS = new Set(["crash", "unresponsive", "handshake_failed"]);

/**
 * @param {HistoryEntry[]} history oldest first, as the API sends it
 * @param {{limit?: number, openNewest?: boolean, opened?: Set<string>}} [options]
 * @returns {HTMLElement}
 */
export function historyTimeline(history, options = {}) {
  if (history.length === 0) {
    return empty("No restarts yet", "When this backend's process ends — a crash, a restart, a stop — it is recorded here with its exit status and its last output lines.");
  }
  const newestFirst = [...history].reverse().slice(0, options.limit ?? history.length);
  return h("ol", { class: "timeline", attrs: { "aria-label": "Restart history, newest first" } },
    newestFirst.map((entry, index) => timelineItem(entry, (index === 0 && options.openNewest === true) || (options.opened?.has(String(entry.at_ms)) ?? false))));
}

/**
 * @param {HistoryEntry} entry
 * @param {boolean} open
 * @returns {HTMLElement}
 */
function timelineItem(entry, open) {
  const bad = BAD_REASONS.has(entry.reason);
  const tail = entry.output_tail ?? [];
  // Why a remote server's link ended explains the entry when nothing else does (a lost stream);
  // beside a detail it is mostly "closed by Switchboard", which the chip's title keeps.
  const disconnected = entry.exit?.disconnected;
  const explanation = entry.detail ?? disconnected ?? null;
  return h("li", { class: `timeline-item ${bad ? "is-bad" : "is-calm"}`, data: { reason: entry.reason, at: String(entry.at_ms) } },
    h("span", { class: "timeline-marker", attrs: { "aria-hidden": "true" } }),
    h("div", { class: "timeline-body" },
      h("div", { class: "timeline-head" },
        h("strong", { class: "timeline-reason", text: reasonLabel(entry.reason) }),
        h("span", { class: `chip mono${bad ? " chip-bad" : ""}`, attrs: { title: disconnected }, text: exitLabel(entry.exit) }),
        h("span", { class: "muted", text: `after ${duration(entry.uptime_ms)} up` }),
        h("time", { class: "timeline-time muted", attrs: { datetime: new Date(entry.at_ms).toISOString(), title: new Date(entry.at_ms).toLocaleString() }, text: `${clockTime(entry.at_ms)} · ${ago(entry.at_ms)}` })),
      explanation ? h("p", { class: "timeline-detail", text: explanation }) : null,
      tail.length > 0
        ? h("details", { class: "timeline-output", attrs: { open } },
          h("summary", {}, `Output before it ended (${plural(tail.length, "line")})`),
          logBlock(tail))
        : h("p", { class: "muted small", text: "No output before it ended." })));
}

/**
 * A static block of log lines.
 * @param {OutputLine[]} lines
 * @returns {HTMLElement}
 */
export function logBlock(lines) {
  // The inner block in a reversed flex column makes the view start at the newest line.
  return h("div", { class: "log log-static" }, h("div", {}, lines.map((line) => logLine(line))));
}

/** How lines that are not a process's stderr are marked. */
const STREAM_TAGS = {
  stdout_noise: { text: "stdout", title: "Printed on stdout, where only protocol messages belong" },
  http: { text: "http", title: "What the link to this remote server saw go wrong" },
};

/**
 * One log line: time, then text; stdout noise and a remote server's link are marked.
 * @param {OutputLine} line
 * @param {string} [highlight] lower-case text to mark
 * @returns {HTMLElement}
 */
export function logLine(line, highlight) {
  const tag = line.stream === "stderr" ? null : STREAM_TAGS[line.stream];
  return h("div", { class: `log-line stream-${line.stream}` },
    h("span", { class: "log-time", text: logTime(line.at_ms) }),
    tag ? h("span", { class: "log-stream", attrs: { title: tag.title }, text: tag.text }) : null,
    h("span", { class: "log-text" }, highlighted(line.text, highlight)));
}

/**
 * `text` with every occurrence of `needle` (lower case) in a <mark>.
 * @param {string} text
 * @param {string} [needle]
 * @returns {(string | HTMLElement)[]}
 */
export function highlighted(text, needle) {
  if (!needle) return [text];
  const lower = text.toLowerCase();
  /** @type {(string | HTMLElement)[]} */
  const parts = [];
  let at = 0;
  for (let found = lower.indexOf(needle); found !== -1; found = lower.indexOf(needle, at)) {
    if (found > at) parts.push(text.slice(at, found));
    parts.push(h("mark", { text: text.slice(found, found + needle.length) }));
    at = found + needle.length;
  }
  if (at < text.length) parts.push(text.slice(at));
  return parts;
}
