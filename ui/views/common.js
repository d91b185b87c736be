// Pieces several views share: state badges, the start/stop/restart buttons, signing in to a
// remote server, updating a server added from a registry, the once-a-second ticker, toasts,
// confirmations, and loading, empty and error states.

import { h, icon, announce, setText } from "../dom.js";
import { stateLabel, duration, exitLabel, reasonLabel, ago } from "../format.js";
import { asApiError } from "../store.js";

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
 * A badge showing a state; `update` changes it in place (`remote`: the backend is a remote
 * server, which connects rather than starts).
 * @returns {{element: HTMLSpanElement, update: (state: string, remote?: boolean) => void}}
 */
export function stateBadge() {
  const label = h("span", { class: "badge-label" });
  const element = h("span", { class: "badge", data: { testid: "state" } }, h("span", { class: "badge-dot", attrs: { "aria-hidden": "true" } }), label);
  return {
    element,
    update(state, remote = false) {
      element.className = `badge state-${state}`;
      element.dataset.state = state;
      setText(label, stateLabel(state, remote));
    },
  };
}

/**
 * What a summary says beyond its state, in a few words: what a starting server's package runner
 * installs, when the next restart is due, or how the last process ended.
 * @param {BackendSummary} summary
 * @returns {string}
 */
export function stateNote(summary) {
  if (summary.state === "starting" && summary.installing) {
    return `installing ${summary.installing.package} with ${summary.installing.runner}…`;
  }
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
  const failed = last.reason === "crash" || last.reason === "unresponsive" || last.reason === "handshake_failed";
  // A remote server's link has no exit code; its ending is worth a word only when it failed.
  const unusual = last.exit !== null && last.exit.disconnected === undefined && last.exit.code !== 0;
  if (last.exit !== null && (failed || unusual)) parts.push(exitLabel(last.exit));
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
      // The buttons offer what the summary offers; the API decides what is allowed.
      const offered = summary === undefined || summary.actions.includes(action);
      button.disabled = pending !== undefined || !offered;
    }
  };
  update();
  return { element, update };
}

// --- signing in -----------------------------------------------------------------------------------

/**
 * Starts a sign-in to a remote server: the API names the authorization server's page, which
 * opens in a new tab (a new window in the desktop app). The browser comes back to Switchboard's
 * callback from there and the server connects on its own, which the events show.
 * @param {Store} store
 * @param {string} name
 * @returns {Promise<string | null>} the page that was opened, for a link in case nothing opened
 *   (a blocked pop-up); null when the sign-in did not start, which a toast says
 */
export async function startSignIn(store, name) {
  let url;
  try {
    url = await store.signIn(name);
    if (url === null) return null;
    // The address comes from Switchboard, but nothing but a web page is ever opened from here.
    const protocol = new URL(url).protocol;
    if (protocol !== "https:" && protocol !== "http:") throw new Error(`the sign-in page is not a web address (${protocol})`);
  } catch (error) {
    toast(`Could not sign in to ${name}`, asApiError(error).message, "error");
    return null;
  }
  // noopener: the authorization server's page gets no handle on the dashboard.
  window.open(url, "_blank", "noopener");
  announce(`Opened the sign-in page of ${name} in a new tab`);
  return url;
}

/**
 * A remote server's "Sign in" button, busy while the API prepares the sign-in.
 * @param {Store} store
 * @param {string} name
 * @param {(url: string) => void} opened told the page that was opened
 * @param {{compact?: boolean}} [options]
 * @returns {{element: HTMLButtonElement, update: () => void}}
 */
export function signInButton(store, name, opened, options = {}) {
  const label = h("span", { class: "btn-text", text: "Sign in" });
  const element = h("button", {
    class: `btn btn-primary btn-sign-in${options.compact ? " btn-small" : ""}`,
    data: { action: "sign-in" },
    attrs: { type: "button", "aria-label": `Sign in to ${name}`, title: "Opens the server's sign-in page in a new tab; when you are done there, your browser comes back to Switchboard" },
    on: {
      click: async () => {
        const url = await startSignIn(store, name);
        if (url !== null) opened(url);
      },
    },
  }, icon("key"), label);
  const update = () => {
    const busy = store.pending.get(name) === "sign-in";
    element.classList.toggle("is-busy", busy);
    setText(label, busy ? "Opening…" : "Sign in");
    element.disabled = store.pending.has(name);
  };
  update();
  return { element, update };
}

/**
 * What to do once the sign-in page opened, with a link to it in case no tab opened.
 * @param {string} name
 * @param {string} url
 * @returns {HTMLElement}
 */
export function signInOpenedNote(name, url) {
  return h("span", { class: "sign-in-opened" },
    `Finish signing in on the page that opened; your browser then comes back to Switchboard and ${name} connects. Nothing opened? `,
    h("a", { attrs: { href: url, target: "_blank", rel: "noopener noreferrer" }, text: "Open the sign-in page" }),
    ".");
}

// --- updates from a registry ----------------------------------------------------------------------

/**
 * "Update to X available" with its Update button, for a server added from a registry whose
 * source has a newer version (as `GET /api/registry/installed` says); hidden otherwise. Compact,
 * for a table row, it is one button, "Update to X". The new version and state follow from the
 * events; tools that changed wait on the Review page.
 * @param {Store} store
 * @param {string} name
 * @param {{compact?: boolean}} [options]
 * @returns {{element: HTMLElement, update: () => void}}
 */
export function updateOffer(store, name, options = {}) {
  const text = h("span", { class: "update-text" });
  text.hidden = options.compact === true;
  const label = h("span", { class: "btn-text", text: "Update" });
  const button = h("button", {
    class: "btn btn-small btn-accent btn-update",
    data: { action: "update" },
    attrs: { type: "button" },
  }, icon("download"), label);
  const element = h("span", { class: `update-offer${options.compact ? " update-offer-compact" : ""}`, data: { testid: "update" } }, text, button);
  button.addEventListener("click", async () => {
    try {
      const updated = await store.update(name);
      if (!updated) return;
      toast(`Updated ${name} to ${updated.to}`, h("span", {},
        `${updated.from ? `From ${updated.from}. ` : ""}It restarts; tools that changed wait for your `,
        h("a", { attrs: { href: "#/review" }, text: "review" }), "."));
      announce(`Updated ${name} to ${updated.to}`);
    } catch (error) {
      toast(`Could not update ${name}`, asApiError(error).message, "error");
    }
  });
  const update = () => {
    const installed = store.installed?.get(name);
    const latest = (installed?.update_available ? installed.latest : null) ?? "";
    element.hidden = latest === "";
    setText(text, `Update to ${latest} available`);
    button.setAttribute("aria-label", `Update ${name} to ${latest}`);
    button.title = options.compact ? `Update to ${latest} available` : "";
    const pending = store.pending.get(name);
    button.disabled = pending !== undefined;
    button.classList.toggle("is-busy", pending === "update");
    setText(label, pending === "update" ? "Updating…" : options.compact ? `Update to ${latest}` : "Update");
  };
  update();
  return { element, update };
}

// --- confirmations -----------------------------------------------------------------------------

/** Tells the dialogs' headings apart. */
let dialogCount = 0;

/**
 * Asks the reader to confirm an action in a modal dialog; Cancel is focused first, and Escape
 * cancels. Focus goes back where it was.
 * @param {{title: string, message: string, confirm: string}} question
 * @returns {Promise<boolean>}
 */
export function confirmAction({ title, message, confirm }) {
  const returnTo = document.activeElement;
  dialogCount += 1;
  const titleId = `dialog-title-${dialogCount}`;
  const messageId = `dialog-message-${dialogCount}`;
  const dialog = h("dialog", { class: "dialog", attrs: { "aria-labelledby": titleId, "aria-describedby": messageId } },
    h("form", { attrs: { method: "dialog" } },
      h("h2", { class: "dialog-title", attrs: { id: titleId }, text: title }),
      h("p", { class: "dialog-message", attrs: { id: messageId }, text: message }),
      h("div", { class: "dialog-actions" },
        h("button", { class: "btn", attrs: { value: "cancel", autofocus: true }, text: "Cancel" }),
        h("button", { class: "btn btn-danger", attrs: { value: "confirm" }, text: confirm }))));
  document.body.appendChild(dialog);
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "confirm");
      dialog.remove();
      if (returnTo instanceof HTMLElement && returnTo.isConnected) returnTo.focus();
    });
    dialog.showModal();
  });
}

// --- toasts ----------------------------------------------------------------------------------------

/**
 * Shows a short message in the corner; errors stay until dismissed or replaced.
 * @param {string} title
 * @param {string | Node} message
 * @param {"error" | "info"} kind
 */
export function toast(title, message, kind = "info") {
  const area = document.getElementById("toasts");
  if (!area) return;
  const close = h("button", { class: "btn-icon", attrs: { type: "button", "aria-label": "Dismiss" }, text: "×" });
  const element = h("div", { class: `toast toast-${kind}`, attrs: { role: kind === "error" ? "alert" : "status" } },
    h("div", { class: "toast-body" }, h("strong", { text: title }), message ? h("div", { class: "toast-message" }, message) : null),
    close);
  close.addEventListener("click", () => element.remove());
  area.appendChild(element);
  while (area.children.length > 4) area.firstElementChild?.remove();
  // Errors, and messages the reader may act on (a link), stay long enough to be read and used.
  const lasting = kind === "error" || typeof message !== "string";
  window.setTimeout(() => element.remove(), lasting ? 12_000 : 4000);
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
 * @param {boolean} remote whether the backend is a remote server
 */
export function announceState(summary, previous, remote) {
  if (!previous || previous.state === summary.state) return;
  announce(`${summary.name} ${summary.state === "needs_sign_in" ? "needs a sign-in" : `is ${stateLabel(summary.state, remote).toLowerCase()}`}`);
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

/**
 * A small button of `kind` (`btn-primary`, `btn-danger`, `btn-ghost` or "") that runs `onClick`.
 * @param {string} text
 * @param {string} kind
 * @param {() => void} onClick
 * @returns {HTMLButtonElement}
 */
export function smallButton(text, kind, onClick) {
  const element = /** @type {HTMLButtonElement} */ (h("button", { class: `btn btn-small ${kind}`, attrs: { type: "button" }, text }));
  element.addEventListener("click", onClick);
  return element;
}
