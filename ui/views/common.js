// Pieces several views share: state badges, the start/stop/restart buttons, the once-a-second
// ticker, toasts, and loading, empty and error states.

import { h, icon, announce, setText } from "../dom.js";
import { stateLabel, duration, exitLabel, reasonLabel, ago } from "../format.js";

/** @typedef {import('../types.js').BackendSummary} BackendSummary */
/** @typedef {import('../store.js').Store} Store */
/** @typedef {import('../api.js').ApiError} ApiError */

// --- the ticker ----------------------------------------------------------------------------------

/** @type {Set<() => void>} */
const tickers = new Set();
/** @type {number | undefined} */
let tickTimer;

/**
 * Calls `tick` about once a second until the returned function is called.
 * @param {() => void} tick
 * @returns {() => void}
 */
export function everySecond(tick) {
  tickers.add(tick);
  if (tickTimer === undefined) {
    tickTimer = window.setInterval(() => {
      for (const each of [...tickers]) each();
    }, 1000);
  }
  return () => {
    tickers.delete(tick);
    if (tickers.size === 0) {
      clearInterval(tickTimer);
      tickTimer = undefined;
    }
  };
}

// --- state -----------------------------------------------------------------------------------------

/**
 * A badge showing a state; `update` changes it in place.
 * @returns {{element: HTMLSpanElement, update: (state: string) => void}}
 */
export function stateBadge() {
  const label = h("span", { class: "badge-label" });
  const element = h("span", { class: "badge", data: { testid: "state" } }, h("span", { class: "badge-dot", attrs: { "aria-hidden": "true" } }), label);
  return {
    element,
    update(state) {
      element.className = `badge state-${state}`;
      element.dataset.state = state;
      setText(label, stateLabel(state));
    },
  };
}

/**
 * What a summary says beyond its state, in a few words: when the next restart is due, or how the
 * last process ended.
 * @param {BackendSummary} summary
 * @returns {string}
 */
export function stateNote(summary) {
  if (summary.state === "backoff" && summary.restart_at_ms !== null) {
    const left = summary.restart_at_ms - Date.now();
    return left > 0 ? `restart in ${duration(Math.ceil(left / 1000) * 1000)}` : "restarting";
  }
  if (summary.state === "crash_loop") return "waiting for a manual start";
  return "";
}

/**
 * "Crashed · exit code 3 · 2 m ago"
 * @param {BackendSummary} summary
 * @returns {string}
 */
export function lastExitNote(summary) {
  const last = summary.last_exit;
  if (!last) return "";
  const parts = [reasonLabel(last.reason)];
  if (last.exit !== null && (last.reason === "crash" || last.reason === "unresponsive" || last.reason === "handshake_failed" || last.exit.code !== 0)) parts.push(exitLabel(last.exit));
  parts.push(ago(last.at_ms));
  return parts.join(" · ");
}

// --- actions ---------------------------------------------------------------------------------------

/** @type {Record<"start" | "stop" | "restart", {label: string, busy: string, done: string, icon: "play" | "stop" | "restart"}>} */
const ACTIONS = {
  start: { label: "Start", busy: "Starting…", done: "started", icon: "play" },
  stop: { label: "Stop", busy: "Stopping…", done: "stopped", icon: "stop" },
  restart: { label: "Restart", busy: "Restarting…", done: "restarted", icon: "restart" },
};

/**
 * Start, Stop and Restart buttons for one backend. They call the API and show the call in
 * flight; what the backend's state becomes is shown from the API's answer and events.
 * @param {Store} store
 * @param {string} name
 * @param {{compact?: boolean}} [options]
 * @returns {{element: HTMLElement, update: () => void}}
 */
export function actionButtons(store, name, options = {}) {
  /** @type {Map<"start" | "stop" | "restart", HTMLButtonElement>} */
  const buttons = new Map();
  const element = h("div", { class: `actions${options.compact ? " actions-compact" : ""}`, attrs: { role: "group", "aria-label": `Actions for ${name}` } });
  for (const action of /** @type {const} */ (["start", "stop", "restart"])) {
    const spec = ACTIONS[action];
    const button = h("button", {
      class: `btn btn-small btn-${action}`,
      data: { action },
      attrs: { type: "button", "aria-label": `${spec.label} ${name}`, title: options.compact ? `${spec.label} ${name}` : undefined },
      on: {
        click: async () => {
          const error = await store.act(name, action);
          if (error) {
            toast(`Could not ${action} ${name}`, error.message, "error");
          }
        },
      },
    }, icon(spec.icon), h("span", { class: "btn-text", text: spec.label }));
    buttons.set(action, button);
    element.appendChild(button);
  }
  const update = () => {
    const summary = store.summaries.get(name)?.summary;
    const pending = store.pending.get(name);
    element.setAttribute("aria-busy", pending ? "true" : "false");
    for (const [action, button] of buttons) {
      const spec = ACTIONS[action];
      const busy = pending === action;
      button.classList.toggle("is-busy", busy);
      setText(/** @type {Element} */ (button.querySelector(".btn-text")), busy ? spec.busy : spec.label);
      // What the buttons offer follows the published state; the API decides what is allowed.
      const state = summary?.state;
      const pointless = (action === "start" && (state === "ready" || state === "starting"))
        || (action === "stop" && state === "stopped");
      button.disabled = pending !== undefined || pointless;
    }
  };
  update();
  return { element, update };
}

// --- toasts ----------------------------------------------------------------------------------------

/**
 * Shows a short message in the corner; errors stay until dismissed or replaced.
 * @param {string} title
 * @param {string} message
 * @param {"error" | "info"} kind
 */
export function toast(title, message, kind = "info") {
  const area = document.getElementById("toasts");
  if (!area) return;
  const close = h("button", { class: "btn-icon", attrs: { type: "button", "aria-label": "Dismiss" }, text: "×" });
  const element = h("div", { class: `toast toast-${kind}`, attrs: { role: kind === "error" ? "alert" : "status" } },
    h("div", { class: "toast-body" }, h("strong", { text: title }), message ? h("div", { class: "toast-message", text: message }) : null),
    close);
  close.addEventListener("click", () => element.remove());
  area.appendChild(element);
  while (area.children.length > 4) area.firstElementChild?.remove();
  window.setTimeout(() => element.remove(), kind === "error" ? 12_000 : 4000);
}

// --- states of a page ------------------------------------------------------------------------------

/**
 * @param {string} text
 * @returns {HTMLElement}
 */
export function loading(text) {
  return h("div", { class: "placeholder", attrs: { role: "status" } }, h("span", { class: "spinner", attrs: { "aria-hidden": "true" } }), h("span", { text }));
}

/**
 * @param {string} title
 * @param {string | Node} [body]
 * @returns {HTMLElement}
 */
export function empty(title, body) {
  return h("div", { class: "placeholder placeholder-empty" }, h("strong", { text: title }), body ? h("div", { class: "placeholder-body" }, body) : null);
}

/**
 * @param {string} title
 * @param {ApiError} error
 * @param {() => void} [retry]
 * @returns {HTMLElement}
 */
export function failure(title, error, retry) {
  return h("div", { class: "placeholder placeholder-error", attrs: { role: "alert" } },
    h("strong", {}, icon("alert"), " ", title),
    h("div", { class: "placeholder-body", text: error.message }),
    retry ? h("button", { class: "btn", attrs: { type: "button" }, text: "Try again", on: { click: retry } }) : null);
}

/**
 * Says a state change out loud (for screen readers) when it is one worth hearing.
 * @param {BackendSummary} summary
 * @param {BackendSummary | null} previous
 */
export function announceState(summary, previous) {
  if (!previous || previous.state === summary.state) return;
  announce(`${summary.name} is ${stateLabel(summary.state).toLowerCase()}`);
}

/**
 * Uptime text for a backend, ticking from its summary.
 * @param {Store} store
 * @param {string} name
 * @returns {string}
 */
export function uptimeText(store, name) {
  const uptime = store.uptime(name);
  // Whole seconds: a ticking millisecond count is noise.
  return uptime === null ? "—" : duration(Math.floor(uptime / 1000) * 1000);
}
