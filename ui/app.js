// The dashboard's entry point: the shell (sidebar, banner, live-feed indicator), the hash
// router, and the wiring from the event feed to the store.
//
// Routes: #/ (backends), #/backend/NAME[/overview|history|output|tools[/TOOL]], #/tools?q=,
// #/add?q=, #/profiles, #/secrets, #/review, #/activity?window=&server=&tool=&client=&outcome=,
// #/connect.

import { h, replace, setText, announce } from "./dom.js";
import { Store } from "./store.js";
import { EventFeed } from "./events.js";
import { stateLabel, duration, reloadSummary } from "./format.js";
import { announceState, everySecond, toast } from "./views/common.js";
import * as api from "./api.js";
import { BackendsView } from "./views/backends.js";
import { BackendView } from "./views/backend.js";
import { SearchView } from "./views/tools.js";
import { AddView } from "./views/add.js";
import { ConnectView } from "./views/connect.js";
import { ProfilesView } from "./views/profiles.js";
import { SecretsView } from "./views/secrets.js";
import { ActivityView, parseFilters } from "./views/activity.js";
import { renderBanner } from "./views/banner.js";
import { renderApprovals } from "./views/approvals.js";
import { renderQuestions } from "./views/questions.js";
import { ReviewView } from "./views/review.js";
import { followAttention } from "./views/attention.js";
import { sessionKey, takeKeyFromAddress, whenLocked } from "./session.js";

/** @typedef {import('./views/backend.js').Tab} Tab */
/** @typedef {import('./views/activity.js').ActivityFilters} ActivityFilters */

/**
 * @typedef {{view: "backends"}
 *   | {view: "backend", name: string, tab: Tab, tool: string | null}
 *   | {view: "tools", query: string}
 *   | {view: "add", query: string}
 *   | {view: "connect"}
 *   | {view: "profiles"}
 *   | {view: "secrets"}
 *   | {view: "review"}
 *   | {view: "activity", filters: ActivityFilters}
 *   | {view: "missing", hash: string}} Route
 */

/** @typedef {{destroy: () => void}} View */

/**
 * @param {string} hash location.hash
 * @returns {Route}
 */
export function parseRoute(hash) {
  const [path, query = ""] = hash.replace(/^#/, "").split("?", 2);
  const parts = path.split("/").filter(Boolean).map((part) => {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  });
  if (parts.length === 0) return { view: "backends" };
  if (parts[0] === "backend" && parts.length >= 2) {
    const tab = parts[2] ?? "overview";
    if (tab === "overview" || tab === "history" || tab === "output" || tab === "tools") {
      return { view: "backend", name: parts[1], tab, tool: tab === "tools" ? parts[3] ?? null : null };
    }
  }
  if (parts[0] === "tools" && parts.length === 1) return { view: "tools", query: new URLSearchParams(query).get("q") ?? "" };
  if (parts[0] === "add" && parts.length === 1) return { view: "add", query: new URLSearchParams(query).get("q") ?? "" };
  if (parts[0] === "connect" && parts.length === 1) return { view: "connect" };
  if (parts[0] === "profiles" && parts.length === 1) return { view: "profiles" };
  if (parts[0] === "secrets" && parts.length === 1) return { view: "secrets" };
  if (parts[0] === "review" && parts.length === 1) return { view: "review" };
  if (parts[0] === "activity" && parts.length === 1) return { view: "activity", filters: parseFilters(query) };
  return { view: "missing", hash };
}

class App {
  constructor() {
    this.store = new Store();
    this.main = /** @type {HTMLElement} */ (document.getElementById("main"));
    this.viewRoot = /** @type {HTMLElement} */ (document.getElementById("view"));
    this.banner = /** @type {HTMLElement} */ (document.getElementById("banner"));
    this.approvals = /** @type {HTMLElement} */ (document.getElementById("approvals"));
    this.questions = /** @type {HTMLElement} */ (document.getElementById("questions"));
    this.navBackends = /** @type {HTMLElement} */ (document.getElementById("nav-backends"));
    this.feedStatus = /** @type {HTMLElement} */ (document.getElementById("feed-status"));
    /** @type {View | null} */
    this.view = null;
    /** @type {Route | null} */
    this.route = null;
    /** Whether the feed was lost since it was last live. */
    this.wasDown = false;
    /** @type {{dot: HTMLElement, spinner: HTMLElement, text: HTMLElement, retry: HTMLButtonElement} | null} */
    this.feedParts = null;

    this.feed = new EventFeed({
      status: (summary) => this.store.onStatus(summary),
      output: (event) => this.store.onOutput(event.backend, event.line),
      catalog: (event) => this.store.onCatalog(event.backend),
      config: (config) => this.store.setConfig(config),
      backends: () => void this.store.loadList(),
      activity: (record) => this.store.onActivity(record),
      pins: (report) => this.store.onPins(report),
      approvals: (waiting) => this.store.onApprovals(waiting),
      questions: (waiting) => this.store.onQuestions(waiting),
      state: (state) => this.store.setFeed(state),
      // The stream starts with every backend's status and the config; what it cannot carry
      // (history, output, backends added or removed meanwhile) is loaded again after a
      // reconnection.
      opened: (first) => {
        if (!first) this.store.resync();
      },
    });
    this.store.subscribe((change) => {
      if (change.kind === "summary") {
        const summary = this.store.summaries.get(change.name)?.summary;
        if (summary) announceState(summary, change.previous, this.store.isRemote(change.name));
        this.renderNav();
      } else if (change.kind === "list") {
        this.renderNav();
      } else if (change.kind === "config") {
        renderBanner(this.banner, this.store.config);
      } else if (change.kind === "questions") {
        renderQuestions(this.questions, this.store.questions);
      } else if (change.kind === "approvals") {
        renderApprovals(this.approvals, this.store.approvals);
      } else if (change.kind === "feed") {
        this.renderFeed();
      }
    });
    everySecond(() => {
      if (this.store.feed.phase === "reconnecting") this.renderFeed();
    });
  }

  start() {
    takeKeyFromAddress();
    whenLocked(() => this.showLocked());
    if (sessionKey() === null) {
      this.showLocked();
      return;
    }
    window.addEventListener("hashchange", () => this.navigate(true));
    document.getElementById("skip-link")?.addEventListener("click", (event) => {
      event.preventDefault();
      this.focusMain();
    });
    document.addEventListener("keydown", (event) => this.onKey(event));
    const reload = /** @type {HTMLButtonElement} */ (document.getElementById("reload-config"));
    reload.addEventListener("click", () => void this.reloadConfig(reload));
    this.renderNav();
    this.renderFeed();
    this.navigate(false);
    void this.store.loadList();
    void this.store.loadConfig();
    followAttention(this.store);
    void this.store.loadAttention();
    this.feed.start();
  }

  /**
   * Without a key the API opens to nothing: say where the link is, in place of everything else.
   */
  showLocked() {
    if (document.body.dataset.locked !== undefined) return;
    document.body.dataset.locked = "";
    this.view?.destroy();
    this.view = null;
    document.title = "Open the dashboard link · Switchboard";
    replace(document.body, h("main", { class: "locked", attrs: { "data-testid": "locked" } },
      h("img", { class: "brand-mark", attrs: { src: "icon.svg", alt: "", width: 40, height: 40 } }),
      h("h1", { text: "Open the dashboard from Switchboard" }),
      h("p", { text: "This page needs the key of the current run of Switchboard. Choose Open dashboard in the tray menu, or open the link that switchboard serve printed when it started." }),
      h("p", { class: "muted", text: "Switchboard makes a new key each time it starts, so a link or tab from an earlier run no longer opens it." })));
  }

  /**
   * Asks for a reload and says what it did; the banner and the list follow through the events.
   * @param {HTMLButtonElement} button
   */
  async reloadConfig(button) {
    button.disabled = true;
    try {
      const summary = reloadSummary(await api.reloadConfig());
      if (summary.applied) toast("Config reloaded", summary.text);
      else toast("Config not applied", summary.text, "error");
    } catch (error) {
      toast("Reload failed", error instanceof Error ? error.message : String(error), "error");
    } finally {
      button.disabled = false;
    }
  }

  /** @param {KeyboardEvent} event */
  onKey(event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    const target = /** @type {HTMLElement | null} */ (event.target);
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
    event.preventDefault();
    if (this.view instanceof SearchView) this.view.focusInput();
    else location.hash = "#/tools";
  }

  /** @param {boolean} moveFocus whether this navigation was the reader's (not the first load) */
  navigate(moveFocus) {
    const route = parseRoute(location.hash);
    const previous = this.route;
    this.route = route;
    if (route.view === "backend" && previous?.view === "backend" && previous.name === route.name && this.view instanceof BackendView) {
      this.view.route(route.tab, route.tool);
      this.updateNavCurrent();
      return;
    }
    this.view?.destroy();
    // Arguments handed to a try-it form are for the page they were opened for only.
    if (route.view !== "backend" || route.tab !== "tools") this.store.prefill = null;
    this.view = this.makeView(route);
    this.updateNavCurrent();
    document.title = `${this.titleOf(route)} · Switchboard`;
    if (moveFocus) this.focusMain();
    if ((this.view instanceof SearchView || this.view instanceof AddView) && moveFocus) this.view.focusInput();
  }

  /**
   * @param {Route} route
   * @returns {View}
   */
  makeView(route) {
    switch (route.view) {
      case "backends":
        return new BackendsView(this.store, this.viewRoot);
      case "backend":
        return new BackendView(this.store, this.viewRoot, route.name, route.tab, route.tool);
      case "tools":
        return new SearchView(this.store, this.viewRoot, route.query);
      case "add":
        return new AddView(this.viewRoot, route.query);
      case "connect":
        return new ConnectView(this.viewRoot);
      case "profiles":
        return new ProfilesView(this.viewRoot);
      case "secrets":
        return new SecretsView(this.viewRoot);
      case "review":
        return new ReviewView(this.store, this.viewRoot);
      case "activity":
        return new ActivityView(this.store, this.viewRoot, route.filters);
      case "missing":
        replace(this.viewRoot, h("header", { class: "page-head" }, h("div", {}, h("h1", { text: "Nothing here", attrs: { tabindex: "-1" } }),
          h("p", { class: "page-sub" }, "No page at ", h("code", { text: route.hash }), ". ", h("a", { attrs: { href: "#/" }, text: "Go to the backends" })))));
        return { destroy() {} };
    }
  }

  /**
   * @param {Route} route
   * @returns {string}
   */
  titleOf(route) {
    switch (route.view) {
      case "backends": return "Backends";
      case "backend": return route.name;
      case "tools": return "Tools";
      case "add": return "Add a server";
      case "connect": return "Connect an editor";
      case "profiles": return "Profiles";
      case "secrets": return "Secrets";
      case "review": return "Review";
      case "activity": return "Activity";
      case "missing": return "Not found";
    }
  }

  focusMain() {
    const heading = this.viewRoot.querySelector("h1");
    (heading ?? this.main).focus({ preventScroll: false });
  }

  updateNavCurrent() {
    const route = this.route;
    for (const link of document.querySelectorAll("[data-nav]")) {
      const nav = /** @type {HTMLElement} */ (link).dataset.nav;
      const current = route !== null && (nav === route.view || (route.view === "backend" && nav === `backend:${route.name}`));
      if (current) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
  }

  renderNav() {
    const { store } = this;
    // Focus stays on the backend's link it was on when a state change draws the list again.
    const focused = /** @type {HTMLElement | null} */ (document.activeElement);
    const focusKey = focused && this.navBackends.contains(focused) ? focused.dataset.nav ?? null : null;
    replace(this.navBackends, store.order.map((name) => {
      const summary = store.summaries.get(name)?.summary;
      const state = summary?.state ?? "stopped";
      const label = stateLabel(state, store.isRemote(name));
      return h("li", {}, h("a", { class: "nav-backend", data: { nav: `backend:${name}` }, attrs: { href: `#/backend/${encodeURIComponent(name)}`, title: `${name}: ${label}` } },
        h("span", { class: `dot state-${state}`, attrs: { "aria-hidden": "true" } }),
        h("span", { class: "nav-backend-name", text: name }),
        h("span", { class: "visually-hidden", text: `, ${label}` })));
    }));
    if (focusKey !== null) {
      /** @type {HTMLElement | null} */ (this.navBackends.querySelector(`[data-nav="${CSS.escape(focusKey)}"]`))?.focus();
    }
    const count = document.getElementById("nav-count");
    if (count) setText(count, store.order.length ? String(store.order.length) : "");
    this.updateNavCurrent();
  }

  renderFeed() {
    const feed = this.store.feed;
    const element = this.feedStatus;
    if (!this.feedParts) {
      this.feedParts = {
        dot: h("span", { class: "feed-dot", attrs: { "aria-hidden": "true" } }),
        spinner: h("span", { class: "spinner spinner-small", attrs: { "aria-hidden": "true" } }),
        text: h("span", { class: "feed-text" }),
        retry: h("button", { class: "btn btn-small btn-ghost", attrs: { type: "button" }, text: "Retry now", on: { click: () => this.feed.retryNow() } }),
      };
      replace(element, this.feedParts.dot, this.feedParts.spinner, this.feedParts.text, this.feedParts.retry);
    }
    const parts = this.feedParts;
    element.dataset.phase = feed.phase;
    document.body.dataset.feed = feed.phase;
    parts.dot.hidden = feed.phase !== "live";
    parts.spinner.hidden = feed.phase === "live";
    parts.retry.hidden = feed.phase !== "reconnecting";
    if (feed.phase === "live") {
      setText(parts.text, "Live");
      if (this.wasDown) announce("Reconnected; the dashboard is live again");
      this.wasDown = false;
    } else if (feed.phase === "connecting") {
      setText(parts.text, "Connecting…");
    } else {
      const left = Math.max(0, feed.retry_at_ms - Date.now());
      setText(parts.text, left > 0 ? `Reconnecting in ${duration(Math.ceil(left / 1000) * 1000)}` : "Reconnecting…");
      if (!this.wasDown) announce("Lost the connection to Switchboard; reconnecting");
      this.wasDown = true;
    }
  }
}

new App().start();
