// The live feed: one EventSource on /api/events, reopened with exponential backoff (and jitter)
// whenever it fails. EventSource's own retry gives up for good on an HTTP error and never backs
// off, so every error closes it and this module decides when to try again.

import { apiUrl } from "./api.js";

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
    /** @type {EventSource | null} */
    this.source = null;
    /** @type {number | undefined} */
    this.timer = undefined;
    this.attempt = 0;
    this.connections = 0;
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
    const source = new EventSource(apiUrl("events"), { withCredentials: true });
    this.source = source;
    source.addEventListener("open", () => {
      this.attempt = 0;
      this.connections += 1;
      this.handlers.state({ phase: "live" });
      this.handlers.opened(this.connections === 1);
    });
    source.addEventListener("error", () => {
      source.close();
      if (this.source !== source) return;
      this.source = null;
      this.scheduleRetry();
    });
    this.listen(source, "status", (data) => this.handlers.status(/** @type {BackendSummary} */ (data)));
    this.listen(source, "output", (data) => this.handlers.output(/** @type {OutputEvent} */ (data)));
    this.listen(source, "catalog", (data) => this.handlers.catalog(/** @type {CatalogEvent} */ (data)));
    this.listen(source, "config", (data) => this.handlers.config(/** @type {ConfigStatus} */ (data)));
    this.listen(source, "backends", (data) => this.handlers.backends(/** @type {BackendNamesEvent} */ (data)));
    this.listen(source, "activity", (data) => this.handlers.activity(/** @type {ActivityRecord} */ (data)));
    this.listen(source, "pins", (data) => this.handlers.pins(/** @type {import('./types.js').PinReport} */ (data)));
  }

  scheduleRetry() {
    const base = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** this.attempt);
    const delay = Math.round(base / 2 + Math.random() * (base / 2));
    this.attempt += 1;
    this.handlers.state({ phase: "reconnecting", retry_at_ms: Date.now() + delay, attempt: this.attempt });
    this.timer = window.setTimeout(() => this.connect(), delay);
  }

  /**
   * @param {EventSource} source
   * @param {string} type
   * @param {(data: unknown) => void} handle
   */
  listen(source, type, handle) {
    source.addEventListener(type, (event) => {
      let data;
      try {
        data = JSON.parse(/** @type {MessageEvent<string>} */ (event).data);
      } catch {
        console.warn(`switchboard: ignoring a ${type} event that is not JSON`);
        return;
      }
      handle(data);
    });
  }
}
