// The live feed: one stream of Server-Sent Events from /api/events, read with fetch (which, unlike
// EventSource, can send the dashboard's key as a header), reopened with exponential backoff (and
// jitter) whenever it ends or fails.

import { apiUrl } from "./api.js";
import { authorization, refused } from "./session.js";

/** @typedef {import('./types.js').BackendSummary} BackendSummary */
/** @typedef {import('./types.js').OutputEvent} OutputEvent */
/** @typedef {import('./types.js').CatalogEvent} CatalogEvent */
/** @typedef {import('./types.js').ConfigStatus} ConfigStatus */
/** @typedef {import('./types.js').BackendNamesEvent} BackendNamesEvent */
/** @typedef {import('./types.js').ActivityRecord} ActivityRecord */

/**
 * @typedef {{phase: "connecting"} | {phase: "live"} | {phase: "reconnecting", retry_at_ms: number, attempt: number}} FeedState
 */

/**
 * @typedef {object} FeedHandlers
 * @property {(summary: BackendSummary) => void} status
 * @property {(event: OutputEvent) => void} output
 * @property {(event: CatalogEvent) => void} catalog
 * @property {(config: ConfigStatus) => void} config
 * @property {(event: BackendNamesEvent) => void} backends A reload added or removed backends.
 * @property {(record: ActivityRecord) => void} activity A request the activity log recorded.
 * @property {(report: import('./types.js').PinReport) => void} pins What is held back from
 *   editors; sent first and on every change.
 * @property {(waiting: import('./types.js').Question[]) => void} questions Servers' questions
 *   waiting for the person, oldest first
 * @property {(waiting: import('./types.js').Approval[]) => void} approvals The calls waiting for
 *   a person's yes; sent first and on every change.
 * @property {(state: FeedState) => void} state
 * @property {(first: boolean) => void} opened Called on every connection; after the first, what
 *   happened while the feed was down was missed.
 */

const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 15_000;

export class EventFeed {
  /** @param {FeedHandlers} handlers */
  constructor(handlers) {
    this.handlers = handlers;
    /** @type {AbortController | null} the open stream's */
    this.source = null;
    /** @type {number | undefined} */
    this.timer = undefined;
    this.attempt = 0;
    this.connections = 0;
    /** Whether the feed gave up for good: the key was refused. */
    this.stopped = false;
  }

  start() {
    this.connect();
  }

  /** Skips the rest of the backoff delay. */
  retryNow() {
    if (this.source !== null) return;
    clearTimeout(this.timer);
    this.connect();
  }

  connect() {
    this.timer = undefined;
    if (this.attempt === 0) this.handlers.state({ phase: "connecting" });
    const source = new AbortController();
    this.source = source;
    void this.read(source).finally(() => {
      if (this.source !== source || this.stopped) return;
      this.source = null;
      this.scheduleRetry();
    });
  }

  /**
   * Reads the stream until it ends or fails, handing each event to its handler.
   * @param {AbortController} source
   */
  async read(source) {
    let response;
    try {
      response = await fetch(apiUrl("events"), {
        credentials: "omit",
        headers: { Accept: "text/event-stream", ...authorization() },
        signal: source.signal,
      });
    } catch {
      return;
    }
    if (response.status === 401) {
      this.stopped = true;
      refused();
      return;
    }
    if (!response.ok || response.body === null) return;
    this.attempt = 0;
    this.connections += 1;
    this.handlers.state({ phase: "live" });
    this.handlers.opened(this.connections === 1);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value.replace(/\r\n?/g, "\n");
        let end;
        while ((end = buffer.indexOf("\n\n")) !== -1) {
          this.dispatch(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
      }
    } catch {
      // The stream broke: the caller schedules the next attempt.
    }
  }

  /**
   * One event of the stream: its `event:` type and its `data:` lines.
   * @param {string} block
   */
  dispatch(block) {
    let type = "message";
    /** @type {string[]} */
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) type = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (data.length === 0) return;
    let parsed;
    try {
      parsed = JSON.parse(data.join("\n"));
    } catch {
      console.warn(`switchboard: ignoring a ${type} event that is not JSON`);
      return;
    }
    const handle = /** @type {Record<string, (data: any) => void>} */ ({
      status: this.handlers.status,
      output: this.handlers.output,
      catalog: this.handlers.catalog,
      config: this.handlers.config,
      backends: this.handlers.backends,
      activity: this.handlers.activity,
      pins: this.handlers.pins,
      approvals: this.handlers.approvals,
      questions: this.handlers.questions,
    })[type];
    handle?.(parsed);
  }

  scheduleRetry() {
    const base = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** this.attempt);
    const delay = Math.round(base / 2 + Math.random() * (base / 2));
    this.attempt += 1;
    this.handlers.state({ phase: "reconnecting", retry_at_ms: Date.now() + delay, attempt: this.attempt });
    this.timer = window.setTimeout(() => this.connect(), delay);
  }
}
