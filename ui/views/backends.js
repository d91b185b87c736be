// #/ — every backend in a compact table, updated in place so that focus and hover survive the
// live updates. Each row says what the backend runs (its command line, or a remote server's URL,
// from its detail) and the package version it runs, offers a sign-in to a remote server waiting
// for one, and an update to a server added from a registry whose source has a newer version.

import { h, replace, setText } from "../dom.js";
import { plural, commandLine } from "../format.js";
import { AttentionPanel } from "./attention.js";
import { stateBadge, stateNote, lastExitNote, actionButtons, signInButton, signInOpenedNote, updateOffer, everySecond, loading, empty, failure, toast, uptimeText } from "./common.js";
import { WelcomePanel } from "./welcome.js";

/** @typedef {import('../store.js').Store} Store */
/** @typedef {import('../store.js').Change} Change */

/**
 * @typedef {object} Row
 * @property {HTMLTableRowElement} element
 * @property {() => void} update
 * @property {() => void} tick
 * @property {() => void} updateActions
 */

export class BackendsView {
  /**
   * @param {Store} store
   * @param {HTMLElement} root
   */
  constructor(store, root) {
    this.store = store;
    this.root = root;
    /** @type {Map<string, Row>} */
    this.rows = new Map();
    this.heading = h("h1", { text: "Backends", attrs: { tabindex: "-1" } });
    this.counts = h("p", { class: "page-sub" });
    this.body = h("div", { class: "page-body" });
    /** @type {HTMLTableSectionElement | null} */
    this.tbody = null;
    // On a first run, bringing the editors' servers over comes first.
    const welcome = h("div", { class: "welcome-slot" });
    // What needs a person comes before anything else.
    this.attention = new AttentionPanel(store);
    replace(root, h("header", { class: "page-head" }, h("div", {}, this.heading, this.counts)), this.attention.element, welcome, this.body);
    this.welcome = new WelcomePanel(welcome);
    this.unsubscribe = store.subscribe((change) => this.onChange(change));
    this.stopTicking = everySecond(() => {
      for (const row of this.rows.values()) row.tick();
    });
    this.render();
    void store.loadInstalled();
  }

  /** @param {Change} change */
  onChange(change) {
    if (change.kind === "list" || change.kind === "config") {
      this.render();
    } else if (change.kind === "installed") {
      for (const row of this.rows.values()) row.updateActions();
    } else if (change.kind === "summary") {
      const row = this.rows.get(change.name);
      if (row) row.update();
      else this.render();
      this.renderCounts();
    } else if (change.kind === "action") {
      this.rows.get(change.name)?.updateActions();
    } else if (change.kind === "detail") {
      this.rows.get(change.name)?.update();
    }
  }

  render() {
    const { store } = this;
    this.renderCounts();
    if (store.listLoad.status === "loading" && store.order.length === 0) {
      this.tbody = null;
      replace(this.body, loading("Loading backends…"));
      return;
    }
    if (store.listLoad.status === "error" && store.order.length === 0) {
      this.tbody = null;
      replace(this.body, failure("Could not load the backends", store.listLoad.error, () => void store.loadList()));
      return;
    }
    if (store.order.length === 0) {
      this.tbody = null;
      const path = store.config?.path;
      replace(this.body, empty("No backends configured", h("span", {}, "Add a ", h("code", { text: "[servers.NAME]" }), " table with a ", h("code", { text: "command" }), " (or a remote server's ", h("code", { text: "url" }), ") to ", path ? h("code", { text: path }) : "the config file", ". Switchboard picks it up when the file is saved.")));
      this.rows.clear();
      return;
    }
    if (!this.tbody) {
      this.tbody = h("tbody");
      const table = h("table", { class: "table backends-table" },
        h("caption", { class: "visually-hidden", text: "Backends, their state and actions" }),
        h("colgroup", {}, h("col", { class: "col-name" }), h("col", { class: "col-state" }), h("col", { class: "col-pid" }), h("col", { class: "col-uptime" }), h("col", { class: "col-num" }), h("col", { class: "col-num" }), h("col", { class: "col-actions" })),
        h("thead", {}, h("tr", {},
          h("th", { attrs: { scope: "col" }, text: "Backend" }),
          h("th", { attrs: { scope: "col" }, text: "State" }),
          h("th", { class: "num", attrs: { scope: "col" }, text: "PID" }),
          h("th", { class: "num", attrs: { scope: "col" }, text: "Uptime" }),
          h("th", { class: "num", attrs: { scope: "col" }, text: "Restarts" }),
          h("th", { class: "num", attrs: { scope: "col" }, text: "Tools" }),
          h("th", { class: "actions-head", attrs: { scope: "col" }, text: "Actions" }))),
        this.tbody);
      replace(this.body, h("div", { class: "card table-card" }, table));
      this.rows.clear();
    }
    const tbody = this.tbody;
    for (const [name, row] of this.rows) {
      if (!store.summaries.has(name)) {
        row.element.remove();
        this.rows.delete(name);
      }
    }
    store.order.forEach((name, index) => {
      let row = this.rows.get(name);
      if (!row) {
        row = this.makeRow(name);
        this.rows.set(name, row);
      }
      // Keeps the API's order, moving a row only when it is out of place (a moved row loses focus).
      if (tbody.children[index] !== row.element) tbody.insertBefore(row.element, tbody.children[index] ?? null);
      row.update();
      // What each backend runs is in its detail.
      if (!store.details.has(name)) void store.loadDetail(name);
    });
  }

  renderCounts() {
    const summaries = [...this.store.summaries.values()].map((entry) => entry.summary);
    if (summaries.length === 0) {
      setText(this.counts, "");
      return;
    }
    const ready = summaries.filter((summary) => summary.state === "ready").length;
    const failing = summaries.filter((summary) => summary.failing).length;
    const waiting = summaries.filter((summary) => summary.state === "needs_sign_in").length;
    const parts = [plural(summaries.length, "backend"), `${ready} ready`];
    if (failing > 0) parts.push(`${failing} failing`);
    if (waiting > 0) parts.push(`${waiting} ${waiting === 1 ? "needs" : "need"} a sign-in`);
    setText(this.counts, parts.join(" · "));
  }

  /**
   * @param {string} name
   * @returns {Row}
   */
  makeRow(name) {
    const { store } = this;
    const href = `#/backend/${encodeURIComponent(name)}`;
    const badge = stateBadge();
    const note = h("span", { class: "state-note" });
    const disabled = h("span", { class: "tag", text: "disabled" });
    const version = h("span", { class: "row-version mono", data: { testid: "version" }, attrs: { title: "The package version it runs" } });
    const offer = updateOffer(store, name, { compact: true });
    const versionLine = h("div", { class: "row-version-line" }, version, offer.element);
    const target = h("div", { class: "row-target mono", data: { testid: "target" } });
    const sub = h("div", { class: "row-sub" });
    const error = h("div", { class: "row-error" });
    const pid = h("td", { class: "num mono", data: { col: "pid" } });
    const uptime = h("td", { class: "num mono", data: { col: "uptime" } });
    const restarts = h("td", { class: "num", data: { col: "restarts" } });
    const tools = h("td", { class: "num", data: { col: "tools" } });
    const actions = actionButtons(store, name, { compact: true });
    const signIn = signInButton(store, name, (url) => toast(`Signing in to ${name}`, signInOpenedNote(name, url)), { compact: true });
    const element = h("tr", { data: { backend: name } },
      h("th", { attrs: { scope: "row" }, class: "name-cell" },
        h("div", { class: "name-line" }, h("a", { class: "backend-link", attrs: { href }, text: name }), disabled),
        target, versionLine, sub, error),
      h("td", { data: { col: "state" } }, h("div", { class: "state-cell" }, badge.element, note, signIn.element)),
      pid, uptime, restarts, tools,
      h("td", { class: "actions-cell" }, actions.element));
    const tick = () => {
      setText(uptime, uptimeText(store, name));
      const summary = store.summaries.get(name)?.summary;
      if (summary) {
        setText(note, stateNote(summary));
        // Waiting for a sign-in is how the last connection ended; the state already says so.
        setText(sub, summary.state === "needs_sign_in" ? "" : lastExitNote(summary));
        sub.title = sub.textContent ?? "";
      }
    };
    const updateActions = () => {
      actions.update();
      signIn.update();
      offer.update();
      versionLine.hidden = version.hidden && offer.element.hidden;
    };
    const update = () => {
      const summary = store.summaries.get(name)?.summary;
      if (!summary) return;
      const config = store.details.get(name)?.detail?.config;
      badge.update(summary.state, store.isRemote(name));
      signIn.element.hidden = !summary.actions.includes("sign_in");
      disabled.hidden = summary.enabled;
      setText(version, summary.version ?? "");
      version.hidden = !summary.version;
      // In a narrow column the program's own name says more than the start of its path; the
      // whole command line is in the title.
      const program = config?.command?.split("/").pop() ?? "";
      setText(target, config ? config.url ?? commandLine(program, config.args) : "");
      target.title = config ? config.url ?? commandLine(config.command ?? "", config.args) : "";
      setText(pid, summary.pid === null ? "—" : String(summary.pid));
      setText(restarts, String(summary.restarts));
      setText(tools, String(summary.tools));
      setText(error, summary.last_error ?? "");
      error.hidden = !summary.last_error;
      if (summary.last_error) error.setAttribute("title", summary.last_error);
      element.dataset.state = summary.state;
      tick();
      updateActions();
    };
    return { element, update, tick, updateActions };
  }

  destroy() {
    this.unsubscribe();
    this.stopTicking();
    this.welcome.destroy();
    this.attention.destroy();
  }
}
