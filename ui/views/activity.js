// #/activity — the activity log: every request editors sent through Switchboard to a server,
// newest first, narrowed by window, server, tool, editor and outcome, paged with "Older", and live
// on its first page (each `activity` event that matches the filters is added on top). Above it,
// each tool's calls, error rate and latencies over the window, with a small chart; beside the
// title, the records the filters select as JSON Lines or CSV. A row opens the whole record, and a
// recorded tool call can be opened in its tool's "try it" form with the same arguments.

import { h, icon, replace, setText, announce, copyButton } from "../dom.js";
import * as api from "../api.js";
import { asApiError } from "../store.js";
import { byteSize, clockTime, logTime, micros, plural } from "../format.js";
import { empty, failure, loading, toast } from "./common.js";
import { toolHref } from "./tools.js";

/** @typedef {import('../store.js').Store} Store */
/** @typedef {import('../store.js').Change} Change */
/** @typedef {import('../types.js').ActivityRecord} ActivityRecord */
/** @typedef {import('../types.js').ActivityOutcome} ActivityOutcome */
/** @typedef {import('../types.js').ActivityHealth} ActivityHealth */
/** @typedef {import('../types.js').ActivityToolStats} ActivityToolStats */

/**
 * The windows offered: the figures read every record in the window, which takes a while over a
 * long one on a busy log, so there is no "all time".
 * @typedef {"1h" | "24h" | "7d"} ActivityWindow
 */

/**
 * What the page shows; an empty text is no filter.
 * @typedef {object} ActivityFilters
 * @property {ActivityWindow} window
 * @property {string} server
 * @property {string} tool
 * @property {string} client
 * @property {ActivityOutcome | ""} outcome
 */

/** @type {Record<ActivityWindow, {label: string, words: string, ms: number}>} */
const WINDOWS = {
  "1h": { label: "Last hour", words: "the last hour", ms: 3_600_000 },
  "24h": { label: "Last 24 hours", words: "the last 24 hours", ms: 86_400_000 },
  "7d": { label: "Last 7 days", words: "the last 7 days", ms: 7 * 86_400_000 },
};

/** @type {Record<ActivityOutcome, {label: string, chip: string}>} */
const OUTCOMES = {
  result: { label: "Result", chip: "chip-good" },
  tool_error: { label: "Tool error", chip: "chip-warn" },
  error: { label: "Error", chip: "chip-bad" },
  timeout: { label: "Timeout", chip: "chip-bad" },
  cancelled: { label: "Cancelled", chip: "" },
};

/** Records per page. */
const PAGE_SIZE = 50;
/** Records the first page may grow to with live ones before it is read again from the API. */
const LIVE_LIMIT = 300;
/** The figures are read again at most this often while new records come in. */
const STATS_REFRESH_MS = 4000;
/** Tools shown in the figures before "Show all". */
const STATS_SHOWN = 8;
/** How `kept` in crates/activity/src/lib.rs ends a payload it cut. */
const CUT_NOTE = /… \[(\d+) bytes in all\]$/;

/**
 * The filters of `#/activity?window=&server=&tool=&client=&outcome=`.
 * @param {string} query the part of the hash after "?"
 * @returns {ActivityFilters}
 */
export function parseFilters(query) {
  const params = new URLSearchParams(query);
  const window = params.get("window") ?? "";
  const outcome = params.get("outcome") ?? "";
  return {
    window: window in WINDOWS ? /** @type {ActivityWindow} */ (window) : "24h",
    server: params.get("server") ?? "",
    tool: params.get("tool") ?? "",
    client: params.get("client") ?? "",
    outcome: outcome in OUTCOMES ? /** @type {ActivityOutcome} */ (outcome) : "",
  };
}

/**
 * The address of the page with `filters`; the default window is left out.
 * @param {ActivityFilters} filters
 * @returns {string}
 */
function filtersHash(filters) {
  const params = new URLSearchParams();
  if (filters.window !== "24h") params.set("window", filters.window);
  for (const key of /** @type {const} */ (["server", "tool", "client", "outcome"])) {
    if (filters[key]) params.set(key, filters[key]);
  }
  const query = params.toString();
  return query ? `#/activity?${query}` : "#/activity";
}

/**
 * The API's query for `filters`, from `sinceMs` on.
 * @param {ActivityFilters} filters
 * @param {number} sinceMs
 * @param {{outcome?: boolean}} [options] `outcome: false` leaves the outcome out (the figures
 *   count failures among all calls)
 * @returns {URLSearchParams}
 */
function apiQuery(filters, sinceMs, options = {}) {
  const params = new URLSearchParams({ since: String(Math.floor(sinceMs)) });
  if (filters.server) params.set("server", filters.server);
  if (filters.tool) params.set("tool", filters.tool);
  if (filters.client) params.set("client", filters.client);
  if (filters.outcome && options.outcome !== false) params.set("outcome", filters.outcome);
  return params;
}

/**
 * Whether a live record is one the filters select.
 * @param {ActivityRecord} record
 * @param {ActivityFilters} filters
 * @param {number} sinceMs
 * @returns {boolean}
 */
function selects(record, filters, sinceMs) {
  return record.at_ms >= sinceMs
    && (!filters.server || record.server === filters.server)
    && (!filters.tool || record.name === filters.tool)
    && (!filters.client || record.client === filters.client)
    && (!filters.outcome || record.outcome === filters.outcome);
}

/**
 * What tells a record apart without its id, which a live one lacks.
 * @param {ActivityRecord} record
 * @returns {string}
 */
function recordKey(record) {
  return [record.at_ms, record.duration_us, record.session, record.method, record.name, record.request_bytes, record.response_bytes].join("\u0000");
}

/**
 * @param {ActivityRecord["outcome"]} outcome
 * @returns {HTMLElement}
 */
function outcomeChip(outcome) {
  const known = OUTCOMES[/** @type {ActivityOutcome} */ (outcome)];
  return h("span", { class: `chip outcome-chip ${known?.chip ?? ""}`, data: { testid: "outcome", outcome }, text: known?.label ?? outcome });
}

/**
 * "12%", "<1%", "0%".
 * @param {number} errors
 * @param {number} calls
 * @returns {string}
 */
function errorRate(errors, calls) {
  if (calls === 0 || errors === 0) return "0%";
  const percent = (errors / calls) * 100;
  return percent < 1 ? "<1%" : `${Math.round(percent)}%`;
}

/**
 * A payload as it reads best: pretty JSON when it parses, else the text as it is.
 * @param {string} text
 * @returns {{text: string, json: unknown, parsed: boolean, cutFrom: number | null}}
 */
function readPayload(text) {
  const cut = CUT_NOTE.exec(text);
  try {
    const json = JSON.parse(text);
    return { text: JSON.stringify(json, null, 2), json, parsed: true, cutFrom: null };
  } catch {
    return { text, json: undefined, parsed: false, cutFrom: cut ? Number(cut[1]) : null };
  }
}

/**
 * Where a recorded tool call's arguments can be tried again, or why they cannot.
 * @param {Store} store
 * @param {ActivityRecord} record
 * @returns {{ok: true, backend: string, tool: string, args: Record<string, unknown>} | {ok: false, reason: string}}
 */
export function replayOf(store, record) {
  if (record.server === null || record.original === null) {
    return { ok: false, reason: "No server took this call, so there is no tool to try." };
  }
  if (store.listLoad.status === "ready" && !store.order.includes(record.server)) {
    return { ok: false, reason: `${record.server} is no longer configured.` };
  }
  if (record.arguments === null) {
    // With payloads kept, a call without arguments still has its result.
    if (record.result !== null) return { ok: true, backend: record.server, tool: record.original, args: {} };
    return { ok: false, reason: "Its arguments were not kept: the log keeps them only with [activity] payloads = true." };
  }
  const payload = readPayload(record.arguments);
  if (payload.cutFrom !== null) {
    return { ok: false, reason: `Its arguments were cut when recorded (${byteSize(payload.cutFrom)} in all), so they cannot be filled in.` };
  }
  if (!payload.parsed || typeof payload.json !== "object" || payload.json === null || Array.isArray(payload.json)) {
    return { ok: false, reason: "Its recorded arguments are not a JSON object." };
  }
  return { ok: true, backend: record.server, tool: record.original, args: /** @type {Record<string, unknown>} */ (payload.json) };
}

const SVG_NS = "http://www.w3.org/2000/svg";

/**
 * @template {keyof SVGElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, string | number>} attrs
 * @param {...(SVGElement | string)} children
 * @returns {SVGElementTagNameMap[K]}
 */
function svg(tag, attrs, ...children) {
  const element = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) element.setAttribute(key, String(value));
  element.append(...children);
  return element;
}

/** The latency chart's width, in pixels. */
const CHART_WIDTH = 200;
/** About how wide a character of the axis's 10px labels is, and the least room between two. */
const LABEL_CHAR_WIDTH = 6;
const LABEL_GAP = 8;

/**
 * A log scale from a power of ten below the fastest median to one above the slowest 99th
 * percentile, so that tools a thousand times apart are both readable.
 * @param {ActivityToolStats[]} tools
 * @returns {{x: (us: number) => number, ticks: number[]}}
 */
function latencyScale(tools) {
  const fastest = Math.max(1, Math.min(...tools.map((tool) => tool.p50_us)));
  const slowest = Math.max(fastest * 10, ...tools.map((tool) => tool.p99_us));
  const low = Math.floor(Math.log10(fastest));
  const high = Math.max(low + 1, Math.ceil(Math.log10(slowest)));
  const ticks = [];
  for (let power = low; power <= high; power += 1) ticks.push(10 ** power);
  return {
    x: (us) => (Math.min(Math.max(Math.log10(Math.max(us, 1)), low), high) - low) / (high - low) * CHART_WIDTH,
    ticks,
  };
}

/**
 * "100 µs", "1 ms", "10 s": a tick of the latency scale.
 * @param {number} us a power of ten
 * @returns {string}
 */
function tickLabel(us) {
  if (us < 1000) return `${us} µs`;
  if (us < 1_000_000) return `${us / 1000} ms`;
  return `${us / 1_000_000} s`;
}

/**
 * The scale's ticks, labelled as far as the labels fit, for the head of the chart's column.
 * @param {{x: (us: number) => number, ticks: number[]}} scale
 * @returns {SVGSVGElement}
 */
function latencyAxis(scale) {
  const last = scale.ticks.length - 1;
  /** @type {SVGTextElement[]} */
  const labels = [];
  // Where the last label drawn ends; a label that would touch it is left out.
  let end = -Infinity;
  scale.ticks.forEach((tick, index) => {
    const text = tickLabel(tick);
    const width = text.length * LABEL_CHAR_WIDTH;
    const x = scale.x(tick);
    const anchor = index === 0 ? "start" : index === last ? "end" : "middle";
    const start = anchor === "start" ? x : anchor === "end" ? x - width : x - width / 2;
    if (start < end + LABEL_GAP) return;
    end = start + width;
    labels.push(svg("text", { x, y: 11, "text-anchor": anchor }, text));
  });
  return svg("svg", { class: "latency-axis", width: CHART_WIDTH, height: 14, viewBox: `0 0 ${CHART_WIDTH} 14`, "aria-hidden": "true", focusable: "false" }, ...labels);
}

/**
 * One tool's bar: the median solid, the 99th percentile lighter beyond it, on the scale's grid.
 * @param {ActivityToolStats} tool
 * @param {{x: (us: number) => number, ticks: number[]}} scale
 * @returns {SVGSVGElement}
 */
function latencyBar(tool, scale) {
  const p50 = Math.max(2, scale.x(tool.p50_us));
  const p99 = Math.max(p50, scale.x(tool.p99_us));
  return svg("svg", { class: "latency-bar", width: CHART_WIDTH, height: 16, viewBox: `0 0 ${CHART_WIDTH} 16`, "aria-hidden": "true", focusable: "false" },
    ...scale.ticks.map((tick) => svg("line", { class: "latency-grid", x1: scale.x(tick), x2: scale.x(tick), y1: 0, y2: 16 })),
    svg("rect", { class: "latency-p99", x: 0, y: 4, width: p99, height: 8, rx: 2 }),
    svg("rect", { class: "latency-p50", x: 0, y: 4, width: p50, height: 8, rx: 2 }));
}

export class ActivityView {
  /**
   * @param {Store} store
   * @param {HTMLElement} root
   * @param {ActivityFilters} filters
   */
  constructor(store, root, filters) {
    this.store = store;
    this.root = root;
    this.filters = filters;
    this.alive = true;
    /** @type {(number | null)[]} the `before` of each page walked to; the last is shown */
    this.cursors = [null];
    /** @type {ActivityRecord[]} */
    this.records = [];
    /** @type {Set<string>} keys of the records shown */
    this.shownKeys = new Set();
    /** @type {number | null} */
    this.nextBefore = null;
    /** Where the window began when the first page was read; older pages keep it. */
    this.sinceMs = Date.now() - WINDOWS[filters.window].ms;
    /** Tells a load's answer from an older one's. */
    this.loads = 0;
    /** @type {ActivityRecord[] | null} live records that came while the first page loads */
    this.arrivedWhileLoading = null;
    /** @type {"loading" | "ready" | "error"} */
    this.recordsState = "loading";
    /** @type {ActivityToolStats[] | null} */
    this.stats = null;
    this.statsLoads = 0;
    this.showAllStats = false;
    /** @type {number | undefined} */
    this.statsTimer = undefined;
    /** What the filters' lists offer besides the backends: learned from figures and records. */
    this.known = {
      /** @type {Set<string>} */ servers: new Set(),
      /** @type {Map<string, string | null>} name → its server */ tools: new Map(),
      /** @type {Set<string>} */ clients: new Set(),
    };
    /** @type {HTMLDialogElement | null} */
    this.dialog = null;
    this.feedWasDown = false;

    this.heading = h("h1", { text: "Activity", attrs: { tabindex: "-1" } });
    this.exports = h("div", { class: "actions", attrs: { role: "group", "aria-label": "Export" } },
      this.exportLink("jsonl", "JSONL"),
      this.exportLink("csv", "CSV"));
    /** @type {boolean | undefined} whether the log takes records, from the last page's health */
    this.enabled = undefined;
    this.healthNotice = h("div", { class: "notice notice-warn activity-health", attrs: { role: "status" }, data: { testid: "activity-health" } });
    this.healthNotice.hidden = true;

    this.selects = {
      window: this.select("window", "Window", "activity-window"),
      server: this.select("server", "Server", "activity-server"),
      tool: this.select("tool", "Tool", "activity-tool"),
      client: this.select("client", "Editor", "activity-client"),
      outcome: this.select("outcome", "Outcome", "activity-outcome"),
    };
    this.clearButton = h("button", { class: "btn btn-small btn-ghost", attrs: { type: "button" }, text: "Clear filters", on: { click: () => this.setFilters({ ...this.filters, server: "", tool: "", client: "", outcome: "" }) } });
    const filterBar = h("form", { class: "activity-filters", attrs: { role: "search", "aria-label": "Filter the activity" } },
      Object.values(this.selects).map((select) => select.field),
      h("div", { class: "activity-filter-actions" }, this.clearButton));
    filterBar.addEventListener("submit", (event) => event.preventDefault());

    this.statsSub = h("span", { class: "muted small", data: { testid: "stats-window" } });
    this.legend = h("span", { class: "latency-legend muted small", attrs: { "aria-hidden": "true" } },
      h("span", { class: "legend-swatch latency-p50" }), "median",
      h("span", { class: "legend-swatch latency-p99" }), "99th percentile");
    this.statsBody = h("div", { class: "activity-stats-body" });
    this.countText = h("span", { class: "muted small", data: { testid: "activity-count" } });
    this.liveBadge = h("span", { class: "activity-live", data: { testid: "activity-live" } }, h("span", { class: "follow-dot is-live", attrs: { "aria-hidden": "true" } }), "Live");
    this.recordsBody = h("div", { class: "activity-records-body" });
    /** @type {HTMLTableSectionElement | null} */
    this.tbody = null;
    this.newestButton = h("button", { class: "btn btn-small", attrs: { type: "button" }, text: "Newest", on: { click: () => void this.goNewest() } });
    this.newerButton = h("button", { class: "btn btn-small", attrs: { type: "button" }, text: "Newer", on: { click: () => void this.goNewer() } });
    this.olderButton = h("button", { class: "btn btn-small", attrs: { type: "button" }, text: "Older", on: { click: () => void this.goOlder() } });
    this.pageText = h("span", { class: "muted small", data: { testid: "activity-page" } });
    this.pager = h("nav", { class: "activity-pager", attrs: { "aria-label": "Pages of the activity" } },
      this.pageText, h("span", { class: "toolbar-spacer" }), this.newestButton, this.newerButton, this.olderButton);

    replace(root,
      h("header", { class: "page-head" },
        h("div", {}, this.heading,
          h("p", { class: "page-sub", text: "Every request editors sent through Switchboard to a server: when, from which editor, where it went, how long it took and how it ended. Newest first; new calls appear as they happen." })),
        h("div", { class: "head-actions activity-exports" }, h("span", { class: "muted small", text: "Export" }), this.exports)),
      this.healthNotice,
      filterBar,
      h("section", { class: "card table-card activity-stats", attrs: { "aria-labelledby": "activity-stats-title" } },
        h("div", { class: "card-head activity-card-head" },
          h("h2", { class: "card-title", attrs: { id: "activity-stats-title" }, text: "Per tool" }),
          this.statsSub,
          h("span", { class: "toolbar-spacer" }),
          this.legend),
        this.statsBody),
      h("section", { class: "card table-card activity-records", attrs: { "aria-labelledby": "activity-records-title" } },
        h("div", { class: "card-head activity-card-head" },
          h("h2", { class: "card-title", attrs: { id: "activity-records-title", tabindex: "-1" }, text: "Calls" }),
          this.countText,
          h("span", { class: "toolbar-spacer" }),
          this.liveBadge),
        this.recordsBody,
        this.pager));

    this.unsubscribe = store.subscribe((change) => this.onChange(change));
    this.renderFilters();
    void this.reload();
  }

  // --- filters ---------------------------------------------------------------------------------

  /**
   * A labelled select of the filter bar.
   * @param {keyof ActivityFilters} key
   * @param {string} label
   * @param {string} id
   * @returns {{field: HTMLElement, select: HTMLSelectElement, options: string}}
   */
  select(key, label, id) {
    const select = h("select", { class: "input input-small", attrs: { id, name: key }, data: { filter: key } });
    select.addEventListener("change", () => this.setFilters({ ...this.filters, [key]: select.value }));
    return { field: h("div", { class: "activity-filter" }, h("label", { class: "field-label small", attrs: { for: id }, text: label }), select), select, options: "" };
  }

  /**
   * Fills each select with what is known, keeping focus and choices; a list is redrawn only when
   * its options changed.
   */
  renderFilters() {
    const { filters, known, store } = this;
    const sorted = (/** @type {Iterable<string>} */ values) => [...new Set(values)].filter(Boolean).sort((a, b) => a.localeCompare(b));
    const servers = sorted([...store.order, ...known.servers, filters.server]);
    const tools = sorted([...[...known.tools].filter(([, server]) => !filters.server || server === filters.server).map(([name]) => name), filters.tool]);
    const clients = sorted([...known.clients, filters.client]);
    /** @type {Record<keyof ActivityFilters, [string, string][]>} */
    const lists = {
      window: Object.entries(WINDOWS).map(([value, { label }]) => [value, label]),
      server: [["", "All servers"], ...servers.map((name) => /** @type {[string, string]} */ ([name, name]))],
      tool: [["", "All tools"], ...tools.map((name) => /** @type {[string, string]} */ ([name, name]))],
      client: [["", "All editors"], ...clients.map((name) => /** @type {[string, string]} */ ([name, name]))],
      outcome: [["", "Any outcome"], ...Object.entries(OUTCOMES).map(([value, { label }]) => /** @type {[string, string]} */ ([value, label]))],
    };
    for (const key of /** @type {(keyof ActivityFilters)[]} */ (Object.keys(lists))) {
      const entry = this.selects[key];
      const signature = JSON.stringify(lists[key]);
      if (entry.options !== signature) {
        entry.options = signature;
        replace(entry.select, lists[key].map(([value, label]) => h("option", { attrs: { value }, text: label })));
      }
      entry.select.value = filters[key];
    }
    this.clearButton.disabled = !filters.server && !filters.tool && !filters.client && !filters.outcome;
  }

  /** @param {ActivityFilters} filters */
  setFilters(filters) {
    this.filters = filters;
    history.replaceState(null, "", filtersHash(filters));
    this.renderFilters();
    void this.reload();
  }

  // --- loading ---------------------------------------------------------------------------------

  /**
   * Back to the first page, with a window that ends now, and the figures again.
   * @returns {Promise<void>} the first page is shown
   */
  reload() {
    this.cursors = [null];
    this.sinceMs = Date.now() - WINDOWS[this.filters.window].ms;
    void this.loadStats();
    return this.loadRecords();
  }

  /**
   * Reads the page the cursors point at.
   * @param {{quiet?: boolean, older?: boolean}} [options] `quiet`: keep what is shown until the
   *   answer; `older`: the page after the one shown, which stays if nothing older matches
   */
  async loadRecords(options = {}) {
    const load = ++this.loads;
    const before = this.cursors[this.cursors.length - 1];
    const query = apiQuery(this.filters, this.sinceMs);
    query.set("limit", String(PAGE_SIZE));
    if (before !== null) query.set("before", String(before));
    this.arrivedWhileLoading = before === null ? [] : null;
    this.recordsState = "loading";
    if (!options.quiet) {
      this.tbody = null;
      replace(this.recordsBody, loading("Loading the activity…"));
    }
    this.renderPager();
    let page;
    try {
      page = await api.listActivity(query);
    } catch (error) {
      if (!this.alive || load !== this.loads) return;
      this.recordsState = "error";
      this.tbody = null;
      this.arrivedWhileLoading = null;
      replace(this.recordsBody, failure("Could not load the activity", asApiError(error), () => void this.loadRecords()));
      this.renderPager();
      return;
    }
    if (!this.alive || load !== this.loads) return;
    if (options.older && page.records.length === 0) {
      // `next_before` only says that the page shown was full; nothing older matched after all.
      this.cursors.pop();
      this.nextBefore = null;
      this.recordsState = "ready";
      this.renderPager();
      announce("No older calls");
      return;
    }
    const arrived = this.arrivedWhileLoading ?? [];
    this.arrivedWhileLoading = null;
    const keys = new Set(page.records.map(recordKey));
    // The live event goes out before the record is written: one may be in both, or only live.
    const newer = arrived.filter((record) => !keys.has(recordKey(record))).reverse();
    this.records = [...newer, ...page.records];
    this.shownKeys = new Set(this.records.map(recordKey));
    this.nextBefore = page.next_before;
    this.recordsState = "ready";
    this.learn(this.records);
    this.renderHealth(page.health);
    this.renderRecords();
  }

  async loadStats() {
    clearTimeout(this.statsTimer);
    this.statsTimer = undefined;
    const load = ++this.statsLoads;
    const sinceMs = Date.now() - WINDOWS[this.filters.window].ms;
    if (this.stats === null) replace(this.statsBody, loading("Adding up the calls…"));
    let stats;
    try {
      // Failures are counted among all calls, whatever outcome the table shows.
      stats = await api.activityStats(apiQuery(this.filters, sinceMs, { outcome: false }));
    } catch (error) {
      if (!this.alive || load !== this.statsLoads) return;
      this.stats = null;
      this.legend.hidden = true;
      replace(this.statsBody, failure("Could not add up the calls", asApiError(error), () => void this.loadStats()));
      return;
    }
    if (!this.alive || load !== this.statsLoads) return;
    this.stats = stats.tools;
    for (const tool of stats.tools) {
      if (tool.server) this.known.servers.add(tool.server);
      if (tool.name) this.known.tools.set(tool.name, tool.server);
    }
    this.renderFilters();
    this.renderStats(new Date());
  }

  /** Reads the figures again soon, once, however many records arrive meanwhile. */
  refreshStatsSoon() {
    if (this.statsTimer !== undefined) return;
    this.statsTimer = window.setTimeout(() => void this.loadStats(), STATS_REFRESH_MS);
  }

  /**
   * What records say about the filters' choices (editors are in no figure).
   * @param {ActivityRecord[]} records
   */
  learn(records) {
    const before = this.known.clients.size + this.known.servers.size + this.known.tools.size;
    for (const record of records) {
      if (record.client) this.known.clients.add(record.client);
      if (record.server) this.known.servers.add(record.server);
      if (record.name && record.method === "tools/call") this.known.tools.set(record.name, record.server);
    }
    if (this.known.clients.size + this.known.servers.size + this.known.tools.size !== before) this.renderFilters();
  }

  // --- live ------------------------------------------------------------------------------------

  /** @param {Change} change */
  onChange(change) {
    if (change.kind === "activity") {
      this.onRecord(change.record);
    } else if (change.kind === "list") {
      this.renderFilters();
    } else if (change.kind === "feed") {
      // Records taken while the feed was down were never sent: read the page again.
      const phase = this.store.feed.phase;
      if (phase === "reconnecting") this.feedWasDown = true;
      if (phase === "live" && this.feedWasDown) {
        this.feedWasDown = false;
        if (this.cursors.length === 1) void this.loadRecords({ quiet: true });
        void this.loadStats();
      }
      this.renderPager();
    }
  }

  /** @param {ActivityRecord} record */
  onRecord(record) {
    this.learn([record]);
    if (record.at_ms >= Date.now() - WINDOWS[this.filters.window].ms) this.refreshStatsSoon();
    if (this.cursors.length !== 1 || !selects(record, this.filters, this.sinceMs)) return;
    if (this.arrivedWhileLoading !== null) {
      this.arrivedWhileLoading.push(record);
      return;
    }
    if (this.recordsState !== "ready") return;
    const key = recordKey(record);
    if (this.shownKeys.has(key)) return;
    if (this.records.length >= LIVE_LIMIT) {
      // A page this long is read again, so that "Older" goes on from what it shows.
      void this.loadRecords({ quiet: true });
      return;
    }
    this.shownKeys.add(key);
    this.records.unshift(record);
    if (this.tbody) {
      this.tbody.insertBefore(this.row(record, true), this.tbody.firstChild);
      this.renderCount();
    } else {
      this.renderRecords();
    }
  }

  // --- paging ----------------------------------------------------------------------------------

  async goOlder() {
    if (this.nextBefore === null) return;
    this.cursors.push(this.nextBefore);
    const pages = this.cursors.length;
    await this.loadRecords({ quiet: true, older: true });
    // With nothing older, the page stays and "No older calls" was said.
    this.focusTable(this.cursors.length === pages);
  }

  async goNewer() {
    if (this.cursors.length <= 1) return;
    this.cursors.pop();
    await this.loadRecords({ quiet: true });
    this.focusTable();
  }

  /** Says which page is shown, once the reader asked for another. */
  announcePage() {
    if (this.recordsState !== "ready") return;
    const page = this.cursors.length;
    announce(`Page ${page}${page === 1 ? ", the newest" : ""}: ${plural(this.records.length, "call")}`);
  }

  async goNewest() {
    await this.reload();
    this.focusTable();
  }

  /**
   * After a page change, the reader continues from the table's title.
   * @param {boolean} [changed] whether another page is shown, which is said
   */
  focusTable(changed = true) {
    if (!this.alive) return;
    if (changed) this.announcePage();
    const title = this.root.querySelector("#activity-records-title");
    if (title instanceof HTMLElement) title.focus();
  }

  // --- drawing ---------------------------------------------------------------------------------

  /** @param {ActivityHealth} health */
  renderHealth(health) {
    this.enabled = health.enabled;
    const lines = [];
    if (health.dropped > 0) {
      lines.push(`${plural(health.dropped, "record")} ${health.dropped === 1 ? "was" : "were"} dropped because the log could not keep up with the calls.`);
    }
    if (health.failed > 0) {
      lines.push(`${plural(health.failed, "record")} ${health.failed === 1 ? "was" : "were"} lost because the log's database refused ${health.failed === 1 ? "it" : "them"}.`);
    }
    this.healthNotice.hidden = lines.length === 0 && !health.problem;
    if (this.healthNotice.hidden) return;
    replace(this.healthNotice,
      h("strong", {}, icon("alert"), lines.length > 0 ? " The activity log is missing calls" : " The activity log had a problem"),
      lines.map((line) => h("p", { text: line })),
      health.problem ? h("p", {}, "The last problem: ", h("span", { class: "activity-problem", text: health.problem })) : null,
      h("p", { class: "muted small" }, "The log is ", h("code", { text: health.path }), "."));
  }

  /** @param {Date} asOf */
  renderStats(asOf) {
    const tools = this.stats ?? [];
    // The figures count failures among every outcome, whichever the table shows.
    const outcomes = this.filters.outcome ? " · every outcome" : "";
    setText(this.statsSub, `${WINDOWS[this.filters.window].words}${outcomes} · as of ${logTime(asOf.getTime()).slice(0, 8)}`);
    this.legend.hidden = tools.length === 0;
    if (tools.length === 0) {
      replace(this.statsBody, h("p", { class: "activity-stats-empty muted", text: `No calls in ${WINDOWS[this.filters.window].words}${this.filtersNarrow() ? " that match the filters" : ""}.` }));
      return;
    }
    const ranked = [...tools].sort((a, b) => b.calls - a.calls || (a.name ?? "").localeCompare(b.name ?? ""));
    const shown = this.showAllStats ? ranked : ranked.slice(0, STATS_SHOWN);
    const scale = latencyScale(shown);
    const more = ranked.length - shown.length;
    replace(this.statsBody,
      h("table", { class: "table activity-stats-table" },
        h("caption", { class: "visually-hidden", text: `Calls, error rate and latency per tool over ${WINDOWS[this.filters.window].words}` }),
        h("colgroup", {}, h("col", {}), h("col", { class: "col-calls" }), h("col", { class: "col-rate" }), h("col", { class: "col-latency" }), h("col", { class: "col-latency" }), h("col", { class: "col-chart" })),
        h("thead", {}, h("tr", {},
          h("th", { attrs: { scope: "col" }, text: "Tool" }),
          h("th", { class: "num", attrs: { scope: "col" }, text: "Calls" }),
          h("th", { class: "num", attrs: { scope: "col" }, text: "Errors" }),
          h("th", { class: "num", attrs: { scope: "col" }, text: "p50" }),
          h("th", { class: "num", attrs: { scope: "col" }, text: "p99" }),
          h("th", { class: "chart-head", attrs: { scope: "col" } }, h("span", { class: "visually-hidden", text: "Latency chart" }), latencyAxis(scale)))),
        h("tbody", {}, shown.map((tool) => this.statsRow(tool, scale)))),
      more > 0 || this.showAllStats && ranked.length > STATS_SHOWN
        ? h("div", { class: "activity-stats-more" }, h("button", {
          class: "btn btn-small btn-ghost",
          attrs: { type: "button", "aria-expanded": String(this.showAllStats) },
          text: this.showAllStats ? "Show the busiest only" : `Show all ${ranked.length} tools`,
          on: { click: () => { this.showAllStats = !this.showAllStats; this.renderStats(asOf); } },
        }))
        : null);
  }

  /**
   * @param {ActivityToolStats} tool
   * @param {{x: (us: number) => number, ticks: number[]}} scale
   * @returns {HTMLElement}
   */
  statsRow(tool, scale) {
    const name = tool.name;
    const failing = tool.errors > 0;
    return h("tr", { data: { tool: name ?? "", server: tool.server ?? "" } },
      h("th", { class: "activity-stats-name", attrs: { scope: "row" } },
        name
          ? h("button", {
            class: "link-button mono",
            attrs: { type: "button", title: `Show only the calls of ${name}`, "aria-label": `${name}: show only its calls` },
            text: name,
            on: { click: () => this.setFilters({ ...this.filters, tool: name }) },
          })
          : h("span", { class: "muted", text: "(no name)" }),
        h("span", { class: "row-sub", text: tool.server ?? "no server" })),
      h("td", { class: "num", data: { col: "calls" }, text: String(tool.calls) }),
      h("td", { class: `num${failing ? " is-failing" : ""}`, data: { col: "errors" }, attrs: { title: `${plural(tool.errors, "failed call")} of ${tool.calls}` } }, errorRate(tool.errors, tool.calls),
        failing ? h("span", { class: "visually-hidden", text: ` (${tool.errors} of ${tool.calls})` }) : null),
      h("td", { class: "num", data: { col: "p50" }, text: micros(tool.p50_us) }),
      h("td", { class: "num", data: { col: "p99" }, text: micros(tool.p99_us) }),
      h("td", { class: "chart-cell" }, latencyBar(tool, scale)));
  }

  /** Whether filters other than the window narrow what is shown. */
  filtersNarrow() {
    const { server, tool, client, outcome } = this.filters;
    return Boolean(server || tool || client || outcome);
  }

  renderRecords() {
    this.renderPager();
    if (this.records.length === 0) {
      this.tbody = null;
      replace(this.recordsBody, this.emptyState());
      this.renderCount();
      return;
    }
    this.tbody = h("tbody", {}, this.records.map((record) => this.row(record, false)));
    replace(this.recordsBody, h("div", { class: "table-scroll" }, h("table", { class: "table activity-table" },
      h("caption", { class: "visually-hidden", text: "Calls, newest first; each row's time opens the whole record" }),
      h("colgroup", {},
        h("col", { class: "col-time" }), h("col", { class: "col-client" }), h("col", { class: "col-server" }),
        h("col", { class: "col-name" }), h("col", { class: "col-outcome" }), h("col", { class: "col-duration" }), h("col", { class: "col-sizes" })),
      h("thead", {}, h("tr", {},
        h("th", { attrs: { scope: "col" }, text: "Time" }),
        h("th", { attrs: { scope: "col" }, text: "Editor · profile" }),
        h("th", { attrs: { scope: "col" }, text: "Server" }),
        h("th", { attrs: { scope: "col" }, text: "Name · method" }),
        h("th", { attrs: { scope: "col" }, text: "Outcome" }),
        h("th", { class: "num", attrs: { scope: "col" }, text: "Duration" }),
        h("th", { class: "num", attrs: { scope: "col", title: "Request → response" }, text: "Sizes" }))),
      this.tbody)));
    this.renderCount();
  }

  /** @returns {HTMLElement} */
  emptyState() {
    const window = WINDOWS[this.filters.window].words;
    if (this.cursors.length > 1) return empty("No older calls");
    if (this.filtersNarrow()) {
      return empty("No calls match", h("span", {}, `Nothing in ${window} matches these filters. `,
        h("button", { class: "link-button", attrs: { type: "button" }, text: "Clear the filters", on: { click: () => this.clearButton.click() } }), "."));
    }
    const explanation = this.enabled === false
      ? h("span", {}, "Nothing new is recorded: the activity log is off: set ", h("code", { text: "[activity] enabled = true" }), " in the config file.")
      : h("span", {}, "Requests that editors send through Switchboard to a server appear here as they happen.");
    return h("div", { class: "activity-empty", data: { testid: "activity-empty" } }, empty(`No calls in ${window}`, explanation));
  }

  renderCount() {
    const n = this.records.length;
    const page = this.cursors.length;
    setText(this.countText, n === 0 ? "" : page === 1 ? `${plural(n, "call")}, newest first` : `${plural(n, "call")} on page ${page}`);
  }

  renderPager() {
    const first = this.cursors.length === 1;
    const ready = this.recordsState === "ready";
    this.liveBadge.hidden = !first || this.store.feed.phase !== "live" || this.recordsState === "error";
    this.pager.hidden = first && this.nextBefore === null;
    setText(this.pageText, first ? "Page 1 (live)" : `Page ${this.cursors.length}`);
    this.newestButton.disabled = first;
    this.newerButton.disabled = first;
    this.olderButton.disabled = !ready || this.nextBefore === null;
    this.newestButton.hidden = this.cursors.length < 3;
  }

  /**
   * @param {ActivityRecord} record
   * @param {boolean} fresh whether it came live (it is marked for a moment)
   * @returns {HTMLTableRowElement}
   */
  row(record, fresh) {
    const time = clockTime(record.at_ms);
    const at = new Date(record.at_ms);
    // Another day's date goes under the time, which keeps the column narrow.
    const day = at.toDateString() === new Date().toDateString() ? null : at.toLocaleDateString(undefined, { month: "short", day: "numeric" });
    const label = record.name ?? record.method;
    const open = h("button", {
      class: "link-button mono activity-time",
      attrs: { type: "button", "aria-haspopup": "dialog", "aria-label": `${time}: ${label}, ${OUTCOMES[/** @type {ActivityOutcome} */ (record.outcome)]?.label ?? record.outcome}. Show the whole record` },
      text: logTime(record.at_ms).slice(0, 8),
    });
    const dash = (/** @type {string} */ col) => h("span", { class: "muted", data: { col }, text: "—" });
    const element = h("tr", {
      class: `activity-row${fresh ? " is-new" : ""}`,
      data: { outcome: record.outcome, name: label, method: record.method, ...(record.id !== undefined ? { id: String(record.id) } : {}) },
    },
      h("th", { attrs: { scope: "row" } }, open, day ? h("div", { class: "row-sub", text: day }) : null),
      h("td", { class: "cell-clip", attrs: { title: `${record.client ?? "an editor without a name"}, profile ${record.profile}` } },
        record.client === null ? dash("client") : h("div", { class: "cell-clip", data: { col: "client" }, text: record.client }),
        h("div", { class: "row-sub", data: { col: "profile" }, text: record.profile })),
      h("td", { class: "cell-clip", attrs: { title: record.server ?? "" } }, record.server === null ? dash("server") : h("span", { data: { col: "server" }, text: record.server })),
      h("td", { class: "cell-clip", data: { col: "name" }, attrs: { title: record.name ?? "" } },
        h("div", { class: "mono activity-name", text: record.name ?? "—" }),
        h("div", { class: "row-sub mono", text: record.method })),
      h("td", { data: { col: "outcome" } }, outcomeChip(record.outcome)),
      h("td", { class: "num", data: { col: "duration" }, text: micros(record.duration_us) }),
      h("td", { class: "num activity-sizes", data: { col: "sizes" }, attrs: { title: `${record.request_bytes} bytes in the request, ${record.response_bytes} in the response` } },
        byteSize(record.request_bytes), h("span", { class: "muted", text: " → " }), byteSize(record.response_bytes)));
    element.addEventListener("click", (event) => {
      // Selecting text in a row is not asking for its record.
      if (event.target !== open && (window.getSelection()?.toString() ?? "") !== "") return;
      this.openDetail(record);
    });
    return element;
  }

  // --- one record ------------------------------------------------------------------------------

  /**
   * Shows the whole record in a dialog; Escape or Close returns to the row.
   * @param {ActivityRecord} record
   */
  openDetail(record) {
    this.dialog?.close();
    const returnTo = document.activeElement;
    const label = record.name ?? record.method;
    const date = new Date(record.at_ms);
    const fact = (/** @type {string} */ term, /** @type {import('../dom.js').Children} */ value, /** @type {string} */ key) =>
      h("div", { data: { fact: key } }, h("dt", { text: term }), h("dd", {}, value));
    const text = (/** @type {string | null} */ value, mono = false) => value === null ? h("span", { class: "muted", text: "—" }) : h("span", { class: mono ? "mono" : "", text: value });
    const replay = record.method === "tools/call" ? replayOf(this.store, record) : null;
    const tryIt = replay ? h("button", {
      class: "btn btn-primary",
      attrs: { type: "button", disabled: !replay.ok, "aria-describedby": replay.ok ? undefined : "activity-replay-reason" },
      data: { testid: "open-try-it" },
      on: { click: () => { if (replay.ok) this.openInTryIt(record, replay); } },
    }, icon("open"), "Open in try-it") : null;
    const bothMissing = record.arguments === null && record.result === null;
    const closeButton = h("button", { class: "btn", attrs: { value: "close", autofocus: true }, text: "Close" });
    const dialog = h("dialog", { class: "dialog activity-detail", attrs: { "aria-labelledby": "activity-detail-title" }, data: { testid: "activity-detail" } },
      h("form", { attrs: { method: "dialog" } },
        h("header", { class: "activity-detail-head" },
          h("h2", { class: "dialog-title mono", attrs: { id: "activity-detail-title" }, text: label }),
          outcomeChip(record.outcome),
          h("span", { class: "toolbar-spacer" }),
          h("button", { class: "btn-icon", attrs: { value: "close", "aria-label": "Close the record", title: "Close (Escape)" }, text: "×" })),
        h("dl", { class: "kv activity-facts" },
          fact("When", `${date.toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" })} ${logTime(record.at_ms)}`, "when"),
          fact("Duration", micros(record.duration_us), "duration"),
          fact("Method", text(record.method, true), "method"),
          fact("Name", text(record.name, true), "name"),
          fact("Server", record.server === null ? text(null) : h("span", {}, h("a", { attrs: { href: `#/backend/${encodeURIComponent(record.server)}` }, text: record.server }),
            record.original !== null ? h("span", { class: "muted" }, " calls it ", h("code", { text: record.original })) : null), "server"),
          fact("Outcome", h("span", {}, OUTCOMES[/** @type {ActivityOutcome} */ (record.outcome)]?.label ?? record.outcome,
            record.error_code !== null ? h("span", { class: "muted" }, " · code ", h("code", { text: String(record.error_code) })) : null), "outcome"),
          record.decision ? fact("Decided", text(record.decision), "decision") : null,
          fact("Editor", text(record.client), "client"),
          fact("Profile", text(record.profile), "profile"),
          fact("Session", text(record.session, true), "session"),
          fact("Sizes", `${byteSize(record.request_bytes)} request · ${byteSize(record.response_bytes)} response`, "sizes"),
          record.id !== undefined ? fact("Record", `#${record.id}`, "id") : null),
        record.error !== null ? h("section", { class: "activity-detail-section" },
          h("h3", { class: "section-title", text: "Error" }),
          h("p", { class: "result-message", data: { testid: "detail-error" }, text: record.error })) : null,
        bothMissing
          ? h("p", { class: "muted activity-payloads-off", text: record.outcome === "result" || record.outcome === "tool_error"
            ? "Arguments and results are not kept: set [activity] payloads = true to keep them (secrets redacted)."
            : "No arguments or result were kept for this call." })
          : [this.payloadSection("Arguments", record.arguments, "detail-arguments"), this.payloadSection("Result", record.result, "detail-result")],
        h("div", { class: "dialog-actions activity-detail-actions" },
          replay && !replay.ok ? h("span", { class: "muted small activity-replay-reason", attrs: { id: "activity-replay-reason" }, text: replay.reason }) : null,
          tryIt,
          closeButton)));
    document.body.appendChild(dialog);
    this.dialog = dialog;
    dialog.addEventListener("close", () => {
      dialog.remove();
      if (this.dialog === dialog) this.dialog = null;
      if (returnTo instanceof HTMLElement && returnTo.isConnected && !dialog.dataset.leaving) returnTo.focus();
    });
    dialog.showModal();
  }

  /**
   * @param {string} title
   * @param {string | null} payload
   * @param {string} testid
   * @returns {HTMLElement}
   */
  payloadSection(title, payload, testid) {
    if (payload === null) {
      return h("section", { class: "activity-detail-section" }, h("h3", { class: "section-title", text: title }), h("p", { class: "muted", text: "None." }));
    }
    const read = readPayload(payload);
    return h("section", { class: "activity-detail-section" },
      h("div", { class: "activity-payload-head" },
        h("h3", { class: "section-title", text: title }),
        read.cutFrom !== null ? h("span", { class: "chip chip-warn", text: `cut: ${byteSize(read.cutFrom)} in all` }) : null,
        !read.parsed && read.cutFrom === null ? h("span", { class: "muted small", text: "not JSON" }) : null,
        h("span", { class: "toolbar-spacer" }),
        copyButton(() => payload, `Copy the ${title.toLowerCase()}`)),
      h("pre", { class: "code activity-payload", data: { testid }, attrs: { tabindex: "0", "aria-label": title }, text: read.text }),
      payload.includes("[redacted]") ? h("p", { class: "muted small", text: "Secrets of the config were replaced by [redacted] before the log kept this." }) : null);
  }

  /**
   * Hands the recorded arguments to the tool's try-it form and goes there.
   * @param {ActivityRecord} record
   * @param {{backend: string, tool: string, args: Record<string, unknown>}} replay
   */
  openInTryIt(record, replay) {
    this.store.prefill = {
      backend: replay.backend,
      tool: replay.tool,
      args: replay.args,
      note: `Filled in from the call ${record.client ? `by ${record.client} ` : ""}at ${clockTime(record.at_ms)}.`,
    };
    if (this.dialog) {
      this.dialog.dataset.leaving = "true";
      this.dialog.close();
    }
    location.hash = toolHref(replay.backend, replay.tool);
  }

  /**
   * A button that downloads what the filters select; the window ends when it is pressed.
   * @param {"jsonl" | "csv"} format
   * @param {string} label
   * @returns {HTMLButtonElement}
   */
  exportLink(format, label) {
    const button = h("button", {
      class: "btn btn-small",
      attrs: { type: "button", "aria-label": `Export the calls as ${label}` },
      data: { testid: `export-${format}` },
    }, icon("download"), label);
    button.addEventListener("click", async () => {
      const query = apiQuery(this.filters, Date.now() - WINDOWS[this.filters.window].ms);
      let blob;
      try {
        blob = await api.activityExport(format, query);
      } catch (error) {
        toast("Could not export the calls", asApiError(error).message, "error");
        return;
      }
      const url = URL.createObjectURL(blob);
      const save = h("a", { attrs: { href: url, download: `switchboard-activity.${format}` } });
      document.body.append(save);
      save.click();
      save.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    });
    return button;
  }

  destroy() {
    this.alive = false;
    this.unsubscribe();
    clearTimeout(this.statsTimer);
    this.dialog?.close();
  }
}
