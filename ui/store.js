// What the dashboard knows, all of it given by the API: snapshots from GET requests, kept
// current by the event feed. Views read from here and subscribe to changes; nothing here guesses
// a backend's state.

import * as api from "./api.js";

/** @typedef {import('./types.js').BackendSummary} BackendSummary */
/** @typedef {import('./types.js').BackendDetail} BackendDetail */
/** @typedef {import('./types.js').OutputLine} OutputLine */
/** @typedef {import('./types.js').ConfigStatus} ConfigStatus */
/** @typedef {import('./types.js').ActivityRecord} ActivityRecord */
/** @typedef {import('./events.js').FeedState} FeedState */
/** @typedef {import('./types.js').PinReport} PinReport */
/** @typedef {import('./types.js').Attention} Attention */
/** @typedef {import('./types.js').InstalledServer} InstalledServer */

/**
 * What the dashboard can ask of one backend; one at a time per backend.
 * @typedef {"start" | "stop" | "restart" | "sign-in" | "sign-out" | "update" | "remove"} BackendAction
 */

/**
 * A summary and when it arrived (`performance.now()`), so that uptime can tick from it.
 * @typedef {object} SummaryEntry
 * @property {BackendSummary} summary
 * @property {number} received_at
 */

/**
 * @typedef {{status: "loading"} | {status: "ready"} | {status: "error", error: api.ApiError}} LoadState
 */

/**
 * @typedef {object} DetailEntry
 * @property {BackendDetail | null} detail
 * @property {LoadState} load
 * @property {number} received_at
 * @property {boolean} in_flight
 * @property {boolean} again Another load was asked for while one was in flight.
 * @property {number} events_at_start Output events counted when the load began.
 */

/**
 * @typedef {{kind: "list"}
 *   | {kind: "summary", name: string, previous: BackendSummary | null}
 *   | {kind: "detail", name: string}
 *   | {kind: "output", name: string, line: OutputLine}
 *   | {kind: "output_reset", name: string}
 *   | {kind: "config"}
 *   | {kind: "feed"}
 *   | {kind: "activity", record: ActivityRecord}
 *   | {kind: "action", name: string}
 *   | {kind: "pins", previous: PinReport | null}
 *   | {kind: "approvals"}
 *   | {kind: "questions"}
 *   | {kind: "attention"}
 *   | {kind: "installed"}} Change
 */

/**
 * Arguments for the next "try it" form of one tool: a recorded call, opened from the activity
 * page.
 * @typedef {object} TryItPrefill
 * @property {string} backend
 * @property {string} tool the backend's own name of the tool
 * @property {Record<string, unknown>} args
 * @property {string} note where the arguments come from, in words
 */

/** Lines of output kept per backend in the page. */
export const OUTPUT_LIMIT = 2000;

/** How long the "needs attention" list waits after an event before it is read again. */
const ATTENTION_DELAY_MS = 300;

export class Store {
  constructor() {
    /** @type {string[]} names in the API's order */
    this.order = [];
    /** @type {Map<string, SummaryEntry>} */
    this.summaries = new Map();
    /** @type {LoadState} */
    this.listLoad = { status: "loading" };
    /** @type {Map<string, DetailEntry>} */
    this.details = new Map();
    /** @type {Map<string, OutputLine[]>} */
    this.outputs = new Map();
    /** @type {Map<string, number>} output events received per backend */
    this.outputEvents = new Map();
    /** @type {Map<string, number>} status events received per backend */
    this.statusEvents = new Map();
    /** @type {ConfigStatus | null} */
    this.config = null;
    /** @type {FeedState} */
    this.feed = { phase: "connecting" };
    /** @type {Map<string, BackendAction>} actions in flight */
    this.pending = new Map();
    /** @type {string | null} the backend whose page is open; its detail follows its status */
    this.watched = null;
    /** @type {TryItPrefill | null} */
    this.prefill = null;
    /** @type {PinReport | null} what is held back, from the `pins` events */
    this.pins = null;
    /** @type {import('./types.js').Approval[]} the calls waiting for a yes, oldest first */
    this.approvals = [];
    /** @type {import('./types.js').Question[]} servers' questions waiting for the person, oldest first */
    this.questions = [];
    /** @type {Attention[] | null} the "needs attention" list, read again after events */
    this.attention = null;
    /** @type {{timer: number | undefined, in_flight: boolean, again: boolean}} */
    this.attentionLoad = { timer: undefined, in_flight: false, again: false };
    /**
     * Servers added from a registry (or whose package a source knows), by name; read when a page
     * showing them opens and again after each reload of the config.
     * @type {Map<string, InstalledServer> | null}
     */
    this.installed = null;
    /** @type {{in_flight: boolean, again: boolean}} */
    this.installedLoad = { in_flight: false, again: false };
    /** @type {Set<(change: Change) => void>} */
    this.listeners = new Set();
  }

  /**
   * @param {(change: Change) => void} listener
   * @returns {() => void} unsubscribes
   */
  subscribe(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** @param {Change} change */
  emit(change) {
    for (const listener of [...this.listeners]) {
      try {
        listener(change);
      } catch (error) {
        console.error("switchboard: a view failed to update", error);
      }
    }
  }

  // --- snapshots -----------------------------------------------------------------------------

  async loadList() {
    if (this.order.length === 0) {
      this.listLoad = { status: "loading" };
      this.emit({ kind: "list" });
    }
    try {
      const list = await api.listBackends();
      const now = performance.now();
      this.order = list.map((summary) => summary.name);
      this.summaries = new Map(list.map((summary) => [summary.name, { summary, received_at: now }]));
      for (const name of [...this.details.keys()]) {
        if (!this.summaries.has(name)) this.details.delete(name);
      }
      this.listLoad = { status: "ready" };
    } catch (error) {
      this.listLoad = { status: "error", error: asApiError(error) };
    }
    this.emit({ kind: "list" });
  }

  async loadConfig() {
    try {
      this.setConfig(await api.getConfig());
    } catch (error) {
      console.warn("switchboard: cannot read the config status", error);
    }
  }

  /**
   * Loads (or reloads) a backend's detail. Loads asked for while one is in flight coalesce into
   * one more after it.
   * @param {string} name
   */
  async loadDetail(name) {
    let entry = this.details.get(name);
    if (!entry) {
      entry = { detail: null, load: { status: "loading" }, received_at: 0, in_flight: false, again: false, events_at_start: 0 };
      this.details.set(name, entry);
      this.emit({ kind: "detail", name });
    }
    if (entry.in_flight) {
      entry.again = true;
      return;
    }
    entry.in_flight = true;
    entry.events_at_start = this.outputEvents.get(name) ?? 0;
    const statusEventsAtStart = this.statusEvents.get(name) ?? 0;
    try {
      const detail = await api.getBackend(name);
      entry.detail = detail;
      entry.load = { status: "ready" };
      entry.received_at = performance.now();
      this.mergeOutput(name, detail.output, entry.events_at_start);
      // A status event that came while this was loading is at least as new as the detail.
      if ((this.statusEvents.get(name) ?? 0) === statusEventsAtStart) {
        const { history: _h, output: _o, server: _s, tools, prompts: _p, resources: _r, resource_templates: _t, exposed_tools: _e, config: _c, ...summary } = detail;
        this.setSummary({ ...summary, tools: tools.length });
      }
    } catch (error) {
      entry.load = { status: "error", error: asApiError(error) };
    }
    entry.in_flight = false;
    this.emit({ kind: "detail", name });
    if (entry.again && this.details.get(name) === entry) {
      entry.again = false;
      void this.loadDetail(name);
    }
  }

  /** Loads the detail of every backend not loaded yet (the tool search needs all tools). */
  async loadAllDetails() {
    await Promise.all(this.order.filter((name) => !this.details.get(name)?.detail).map((name) => this.loadDetail(name)));
  }

  /**
   * The detail's output, then whatever arrived live since the load began and is not in it.
   * @param {string} name
   * @param {OutputLine[]} snapshot
   * @param {number} eventsAtStart
   */
  mergeOutput(name, snapshot, eventsAtStart) {
    const live = this.outputs.get(name) ?? [];
    const newSince = Math.max(0, (this.outputEvents.get(name) ?? 0) - eventsAtStart);
    const arrived = newSince > 0 ? live.slice(-newSince) : [];
    const key = (/** @type {OutputLine} */ line) => `${line.at_ms}\u0000${line.stream}\u0000${line.text}`;
    const known = new Set(snapshot.slice(-Math.max(arrived.length, 1) * 2).map(key));
    const lines = [...snapshot, ...arrived.filter((line) => !known.has(key(line)))];
    this.outputs.set(name, lines.slice(-OUTPUT_LIMIT));
    this.emit({ kind: "output_reset", name });
  }

  // --- events ----------------------------------------------------------------------------------

  /** @param {BackendSummary} summary */
  onStatus(summary) {
    this.refreshAttention();
    this.statusEvents.set(summary.name, (this.statusEvents.get(summary.name) ?? 0) + 1);
    const previous = this.summaries.get(summary.name)?.summary ?? null;
    const isNew = previous === null;
    this.setSummary(summary);
    if (isNew) {
      this.emit({ kind: "list" });
      return;
    }
    // The open page shows history and server info, which only the detail carries.
    if (this.watched === summary.name && previous !== null && (previous.state !== summary.state || previous.last_exit?.at_ms !== summary.last_exit?.at_ms)) {
      void this.loadDetail(summary.name);
    }
  }

  /**
   * @param {string} name
   * @param {OutputLine} line
   */
  onOutput(name, line) {
    this.outputEvents.set(name, (this.outputEvents.get(name) ?? 0) + 1);
    let lines = this.outputs.get(name);
    if (!lines) {
      lines = [];
      this.outputs.set(name, lines);
    }
    lines.push(line);
    if (lines.length > OUTPUT_LIMIT + 200) lines.splice(0, lines.length - OUTPUT_LIMIT);
    this.emit({ kind: "output", name, line });
  }

  /** @param {string} name */
  onCatalog(name) {
    this.refreshAttention();
    if (this.details.has(name)) void this.loadDetail(name);
  }

  /** @param {ConfigStatus} config */
  setConfig(config) {
    const reloaded = this.config !== null && this.config.loaded_at_ms !== config.loaded_at_ms;
    this.config = config;
    this.emit({ kind: "config" });
    this.refreshAttention();
    // A reload may add or remove backends, and change the config a detail shows (a command, a
    // URL); the list and the details say what is now.
    if (reloaded) {
      void this.loadList();
      for (const name of this.details.keys()) void this.loadDetail(name);
      if (this.installed !== null) void this.loadInstalled();
    }
  }

  /**
   * A request the activity log recorded; the activity page shows it if it matches its filters.
   * The store keeps none: the log is the API's.
   * @param {ActivityRecord} record
   */
  onActivity(record) {
    this.refreshAttention();
    this.emit({ kind: "activity", record });
  }

  /** @param {FeedState} feed */
  setFeed(feed) {
    this.feed = feed;
    this.emit({ kind: "feed" });
  }

  /** After a (re)connection: everything may have changed while the feed was down. */
  resync() {
    void this.loadList();
    void this.loadConfig();
    for (const name of this.details.keys()) void this.loadDetail(name);
    this.refreshAttention();
  }

  /**
   * Servers' questions waiting for the person changed (the `questions` event, first on every
   * connection).
   * @param {import('./types.js').Question[]} waiting
   */
  onQuestions(waiting) {
    this.questions = waiting;
    this.emit({ kind: "questions" });
  }

  /**
   * The calls waiting for a person's yes changed (the `approvals` event, first on every
   * connection).
   * @param {import('./types.js').Approval[]} waiting
   */
  onApprovals(waiting) {
    this.approvals = waiting;
    this.emit({ kind: "approvals" });
  }

  /**
   * What is held back from editors changed (the `pins` event, first on every connection).
   * @param {PinReport} report
   */
  onPins(report) {
    const previous = this.pins;
    this.pins = report;
    this.emit({ kind: "pins", previous });
    this.refreshAttention();
  }

  /**
   * Reads the "needs attention" list again soon: it has no event of its own, and one burst of
   * events is one read.
   */
  refreshAttention() {
    const load = this.attentionLoad;
    if (load.timer !== undefined) return;
    load.timer = window.setTimeout(() => {
      load.timer = undefined;
      void this.loadAttention();
    }, ATTENTION_DELAY_MS);
  }

  /** Reads the "needs attention" list; a read asked for while one is in flight follows it. */
  async loadAttention() {
    const load = this.attentionLoad;
    if (load.in_flight) {
      load.again = true;
      return;
    }
    load.in_flight = true;
    try {
      this.attention = await api.getAttention();
      this.emit({ kind: "attention" });
    } catch (error) {
      // The list is a summary of what other pages show; the next event reads it again.
      console.warn("switchboard: cannot read what needs attention", error);
    }
    load.in_flight = false;
    if (load.again) {
      load.again = false;
      this.refreshAttention();
    }
  }

  /** @param {BackendSummary} summary */
  setSummary(summary) {
    const previous = this.summaries.get(summary.name)?.summary ?? null;
    this.summaries.set(summary.name, { summary, received_at: performance.now() });
    if (!this.order.includes(summary.name)) this.order.push(summary.name);
    this.emit({ kind: "summary", name: summary.name, previous });
  }

  /**
   * Reads which servers came from a registry and which of them can be updated; a read asked for
   * while one is in flight follows it. It has no event of its own: the config's reloads say when
   * it may have changed.
   */
  async loadInstalled() {
    const load = this.installedLoad;
    if (load.in_flight) {
      load.again = true;
      return;
    }
    load.in_flight = true;
    try {
      const list = await api.listInstalled();
      this.installed = new Map(list.map((installed) => [installed.server, installed]));
      this.emit({ kind: "installed" });
    } catch (error) {
      // Versions and updates add to a page; the page works without them.
      console.warn("switchboard: cannot read the servers added from a registry", error);
    }
    load.in_flight = false;
    if (load.again) {
      load.again = false;
      void this.loadInstalled();
    }
  }

  // --- actions ---------------------------------------------------------------------------------

  /**
   * Asks the API to start, stop or restart a backend. The state shown changes only when the API
   * says so (its answer, then the events).
   * @param {string} name
   * @param {"start" | "stop" | "restart"} action
   * @returns {Promise<api.ApiError | null>}
   */
  async act(name, action) {
    try {
      const result = await this.inFlight(name, action, () => api.backendAction(name, action));
      if (result && typeof result === "object" && result.backend) this.setSummary(result.backend);
      return null;
    } catch (error) {
      return asApiError(error);
    }
  }

  /**
   * Asks the API to start a sign-in to a remote server.
   * @param {string} name
   * @returns {Promise<string | null>} the authorization server's page to open; null when another
   *   action on this backend is in flight
   * @throws {api.ApiError}
   */
  async signIn(name) {
    try {
      const started = await this.inFlight(name, "sign-in", () => api.signIn(name));
      return started?.url ?? null;
    } catch (error) {
      throw asApiError(error);
    }
  }

  /**
   * Asks the API to forget a remote server's sign-in; its state follows through the events.
   * @param {string} name
   * @returns {Promise<api.ApiError | null>}
   */
  async signOut(name) {
    try {
      await this.inFlight(name, "sign-out", () => api.signOut(name));
      return null;
    } catch (error) {
      return asApiError(error);
    }
  }

  /**
   * Moves a server added from a registry to its source's newest version. Its new version and
   * state follow through the events.
   * @param {string} name
   * @returns {Promise<import('./types.js').RegistryUpdated | null>} null when another action on
   *   this backend is in flight
   * @throws {api.ApiError}
   */
  async update(name) {
    try {
      return await this.inFlight(name, "update", () => api.updateServer(name));
    } catch (error) {
      throw asApiError(error);
    } finally {
      void this.loadInstalled();
    }
  }

  /**
   * Removes a server from the config, and the secrets named from the keychain.
   * @param {string} name
   * @param {string[]} deleteSecrets
   * @returns {Promise<import('./types.js').ServerRemoved | null>} null when another action on
   *   this backend is in flight
   * @throws {api.ApiError}
   */
  async remove(name, deleteSecrets) {
    try {
      const removed = await this.inFlight(name, "remove", () => api.removeServer(name, deleteSecrets));
      if (removed) void this.loadList();
      return removed;
    } catch (error) {
      throw asApiError(error);
    }
  }

  /**
   * Runs `call` as the one action in flight on a backend, so that its buttons show it.
   * @template T
   * @param {string} name
   * @param {BackendAction} action
   * @param {() => Promise<T>} call
   * @returns {Promise<T | null>} null, without calling, when another action is in flight
   */
  async inFlight(name, action, call) {
    if (this.pending.has(name)) return null;
    this.pending.set(name, action);
    this.emit({ kind: "action", name });
    try {
      return await call();
    } finally {
      this.pending.delete(name);
      this.emit({ kind: "action", name });
    }
  }

  // --- reading ---------------------------------------------------------------------------------

  /**
   * The arguments waiting for the try-it form of `tool` of `backend`, taken once.
   * @param {string} backend
   * @param {string} tool
   * @returns {TryItPrefill | null}
   */
  takePrefill(backend, tool) {
    const prefill = this.prefill;
    if (prefill === null || prefill.backend !== backend || prefill.tool !== tool) return null;
    this.prefill = null;
    return prefill;
  }

  /**
   * Whether a backend is a remote server, reached by URL: its summary names a transport.
   * @param {string} name
   * @returns {boolean}
   */
  isRemote(name) {
    const transport = this.summaries.get(name)?.summary.transport;
    return transport !== undefined && transport !== null;
  }

  /**
   * The current process's uptime, ticking from the last summary, or null when it has none.
   * @param {string} name
   * @returns {number | null}
   */
  uptime(name) {
    const entry = this.summaries.get(name);
    if (!entry || entry.summary.uptime_ms === null) return null;
    return entry.summary.uptime_ms + (performance.now() - entry.received_at);
  }
}

/**
 * @param {unknown} error
 * @returns {api.ApiError}
 */
export function asApiError(error) {
  if (error instanceof api.ApiError) return error;
  return new api.ApiError("internal", String(error), 0);
}
