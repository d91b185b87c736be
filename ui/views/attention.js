// What needs a person, as `GET /api/attention` lists it: the panel at the top of the backends
// page (each entry's message and the action that resolves it), the counts in the sidebar (things
// needing attention, tools held back), and the notice that a `pins` event held a tool back that
// was offered before.

import { h, icon, replace, setText, announce } from "../dom.js";
import * as api from "../api.js";
import { plural } from "../format.js";
import { asApiError } from "../store.js";
import { signInOpenedNote, startSignIn, toast } from "./common.js";

/** @typedef {import('../store.js').Store} Store */
/** @typedef {import('../store.js').Change} Change */
/** @typedef {import('../types.js').Attention} Attention */
/** @typedef {import('../types.js').AttentionKind} AttentionKind */
/** @typedef {import('../types.js').HeldTool} HeldTool */
/** @typedef {import('../types.js').PinReport} PinReport */

/** @type {Record<AttentionKind, {icon: "alert" | "key" | "shield" | "list" | "activity", tone: "bad" | "warn"}>} */
const KINDS = {
  crash_loop: { icon: "alert", tone: "bad" },
  needs_sign_in: { icon: "key", tone: "warn" },
  held_tools: { icon: "shield", tone: "warn" },
  pin_store: { icon: "shield", tone: "bad" },
  config: { icon: "alert", tone: "bad" },
  open_endpoint: { icon: "key", tone: "warn" },
  profile: { icon: "list", tone: "warn" },
  activity: { icon: "activity", tone: "warn" },
};

/** Tells the entries' messages apart, for the buttons that describe themselves with them. */
let entryCount = 0;

/** The "Needs attention" panel; hidden while nothing does. */
export class AttentionPanel {
  /** @param {Store} store */
  constructor(store) {
    this.store = store;
    this.count = h("span", { class: "attention-count" });
    this.list = h("ul", { class: "attention-list" });
    this.element = h("section", { class: "card attention", data: { testid: "attention" }, attrs: { "aria-labelledby": "attention-title" } },
      h("div", { class: "attention-head" },
        h("h2", { class: "attention-title", attrs: { id: "attention-title" } }, icon("alert"), "Needs attention"),
        this.count),
      this.list);
    this.element.hidden = true;
    /** @type {Set<string>} actions in flight, by entry */
    this.busy = new Set();
    this.unsubscribe = store.subscribe((change) => {
      if (change.kind === "attention") this.render();
    });
    this.render();
  }

  render() {
    const entries = this.store.attention ?? [];
    this.element.hidden = entries.length === 0;
    setText(this.count, entries.length > 1 ? String(entries.length) : "");
    // Focus stays on the action it was on when the list is drawn again.
    const focused = /** @type {HTMLElement | null} */ (document.activeElement);
    const focusKey = focused && this.list.contains(focused) ? focused.dataset.entry ?? null : null;
    replace(this.list, entries.map((entry) => this.item(entry)));
    if (focusKey !== null) {
      const again = /** @type {HTMLElement | null} */ (this.list.querySelector(`[data-entry="${CSS.escape(focusKey)}"]`));
      again?.focus();
    }
  }

  /**
   * @param {Attention} entry
   * @returns {HTMLElement}
   */
  item(entry) {
    const kind = KINDS[entry.kind] ?? { icon: "alert", tone: "warn" };
    entryCount += 1;
    const messageId = `attention-message-${entryCount}`;
    const key = `${entry.kind}:${entry.subject ?? ""}:${entry.action.label}`;
    return h("li", { class: `attention-item attention-${kind.tone}`, data: { kind: entry.kind, subject: entry.subject ?? "" } },
      h("span", { class: "attention-icon" }, icon(kind.icon)),
      // A message that does not start with a name starts a sentence.
      h("span", { class: "attention-message", attrs: { id: messageId }, text: entry.subject === null ? capitalized(entry.message) : entry.message }),
      this.action(entry, key, messageId));
  }

  /**
   * The entry's action: its request to the API when it has one (a sign-in opens the page the API
   * names, as the backends' Sign in buttons do), else a link to the page that shows it.
   * @param {Attention} entry
   * @param {string} key
   * @param {string} messageId
   * @returns {HTMLElement}
   */
  action(entry, key, messageId) {
    const { action } = entry;
    if (action.post === null) {
      const link = h("a", { class: "btn btn-small attention-action", data: { entry: key }, attrs: { href: action.page, "aria-describedby": messageId } },
        h("span", { class: "btn-text", text: action.label }), icon("chevron"));
      link.addEventListener("click", (event) => {
        // The page it names may be this one (the config's errors are in the banner above).
        if (samePage(action.page)) {
          event.preventDefault();
          revealBanner();
        }
      });
      return link;
    }
    const busy = this.busy.has(key);
    const button = h("button", {
      class: `btn btn-small attention-action${entry.kind === "needs_sign_in" ? " btn-primary" : ""}${busy ? " is-busy" : ""}`,
      data: { entry: key },
      attrs: { type: "button", "aria-describedby": messageId, "aria-disabled": busy ? "true" : undefined },
    }, icon(entry.kind === "needs_sign_in" ? "key" : entry.kind === "crash_loop" ? "restart" : "play"), h("span", { class: "btn-text", text: action.label }));
    button.addEventListener("click", () => void this.run(entry, key));
    return button;
  }

  /**
   * @param {Attention} entry
   * @param {string} key
   */
  async run(entry, key) {
    if (this.busy.has(key)) return;
    const { action, subject } = entry;
    const what = `${action.label.toLowerCase()}${subject ? ` ${subject}` : ""}`;
    this.busy.add(key);
    this.render();
    try {
      if (entry.kind === "needs_sign_in" && subject !== null) {
        const url = await startSignIn(this.store, subject);
        if (url !== null) toast(`Signing in to ${subject}`, signInOpenedNote(subject, url));
      } else if (entry.kind === "open_endpoint" && action.post !== null) {
        tokenRequired(/** @type {import('../types.js').RequireTokenOutcome} */ (await api.postAction(action.post)));
      } else if (action.post !== null) {
        await api.postAction(action.post);
        announce(`Asked to ${what}`);
      }
    } catch (error) {
      toast(`Could not ${what}`, asApiError(error).message, "error");
    } finally {
      this.busy.delete(key);
    }
    this.render();
    this.store.refreshAttention();
  }

  destroy() {
    this.unsubscribe();
  }
}

/**
 * Says what turning the token on did: which editors now carry it (and must reconnect), and
 * which could not be changed.
 * @param {import('../types.js').RequireTokenOutcome} outcome
 */
function tokenRequired(outcome) {
  const titles = outcome.updated.map((update) => update.title);
  const updated = titles.length === 0
    ? "No editor had an entry for /mcp to update."
    : `Gave the token to ${titles.join(", ")}; restart ${titles.length === 1 ? "it" : "them"} (or reload ${titles.length === 1 ? "its" : "their"} MCP servers) to reconnect.`;
  const failed = outcome.failed.map((failure) => `${failure.title}: ${failure.message}`);
  const applied = outcome.reload.outcome === "applied";
  toast(applied ? "/mcp now requires its token" : "The config was written but not applied",
    [updated, ...failed].join(" "), applied && failed.length === 0 ? "info" : "error");
}

/**
 * Keeps the sidebar's counts and the "held back" notices current; for the life of the page.
 * @param {Store} store
 */
export function followAttention(store) {
  store.subscribe((change) => {
    if (change.kind === "attention") renderAttentionCount(store);
    else if (change.kind === "pins") {
      renderHeldCount(store);
      if (change.previous !== null && store.pins !== null) noticeNewlyHeld(change.previous, store.pins);
      if (store.pins !== null) withdrawNotices(store.pins);
    }
  });
  renderAttentionCount(store);
  renderHeldCount(store);
}

/** @param {Store} store */
function renderAttentionCount(store) {
  const badge = document.getElementById("nav-attention");
  if (!badge) return;
  const n = store.attention?.length ?? 0;
  badge.hidden = n === 0;
  const text = `${n} ${n === 1 ? "needs" : "need"} attention`;
  badge.title = text;
  replace(badge, icon("alert"), h("span", { attrs: { "aria-hidden": "true" }, text: String(n) }), h("span", { class: "visually-hidden", text: `, ${text}` }));
}

/**
 * @param {string} text
 * @returns {string}
 */
function capitalized(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** @param {Store} store */
function renderHeldCount(store) {
  const badge = document.getElementById("nav-review-count");
  if (!badge) return;
  const n = store.pins?.held.length ?? 0;
  badge.hidden = n === 0;
  const text = `${plural(n, "tool")} held back`;
  badge.title = text;
  replace(badge, h("span", { attrs: { "aria-hidden": "true" }, text: String(n) }), h("span", { class: "visually-hidden", text: `, ${text}` }));
}

/**
 * @param {HeldTool} tool
 * @returns {string}
 */
function keyOf(tool) {
  return `${tool.server}\u0000${tool.name}`;
}

/**
 * Says which tools a `pins` event held back that the one before did not, one notice per server
 * and reason; each stays until dismissed, followed, or the tools are offered again.
 * @param {PinReport} previous
 * @param {PinReport} report
 */
function noticeNewlyHeld(previous, report) {
  const before = new Set(previous.held.map(keyOf));
  /** @type {Map<string, HeldTool[]>} */
  const groups = new Map();
  for (const tool of report.held) {
    if (before.has(keyOf(tool))) continue;
    const group = `${tool.server}\u0000${tool.reason}`;
    groups.set(group, [...(groups.get(group) ?? []), tool]);
  }
  const area = document.getElementById("toasts");
  // The review page shows them as they come.
  if (!area || groups.size === 0 || location.hash.startsWith("#/review")) return;
  for (const tools of groups.values()) {
    const { server, reason } = tools[0];
    const names = tools.map((tool) => tool.name);
    const subject = names.length === 1 ? `${names[0]} of ${server}` : `${plural(names.length, "tool")} of ${server}`;
    const verb = names.length === 1 ? "is" : "are";
    const title = reason === "changed"
      ? `${subject} changed and ${verb} held back from editors`
      : reason === "new"
        ? `${subject} ${verb} new and held back from editors`
        : `${server}'s pin file cannot be read: ${subject} ${verb} held back from editors`;
    const close = h("button", { class: "btn-icon", attrs: { type: "button", "aria-label": "Dismiss" }, text: "×" });
    const review = h("a", { class: "btn btn-small btn-primary held-notice-review", attrs: { href: "#/review" } }, icon("shield"), h("span", { text: "Review" }));
    const element = h("div", { class: "toast toast-warn held-notice", attrs: { role: "status" }, data: { testid: "held-notice", server, tools: JSON.stringify(names) } },
      h("div", { class: "toast-body" },
        h("strong", { text: title }),
        h("div", { class: "toast-message" }, names.length > 1 ? h("span", {}, names.join(", "), ". ") : null, "Editors are not offered ", names.length === 1 ? "it" : "them", " until you review the change and approve it."),
        h("div", { class: "held-notice-actions" }, review)),
      close);
    close.addEventListener("click", () => element.remove());
    review.addEventListener("click", () => element.remove());
    area.appendChild(element);
    announce(title);
  }
}

/**
 * Removes the notices whose tools are all offered again.
 * @param {PinReport} report
 */
function withdrawNotices(report) {
  const held = new Set(report.held.map(keyOf));
  for (const notice of document.querySelectorAll(".held-notice")) {
    const element = /** @type {HTMLElement} */ (notice);
    const server = element.dataset.server ?? "";
    /** @type {string[]} */
    const names = JSON.parse(element.dataset.tools ?? "[]");
    if (!names.some((name) => held.has(`${server}\u0000${name}`))) element.remove();
  }
}

/**
 * Whether `page` (a `#/…` route) is the page shown now.
 * @param {string} page
 * @returns {boolean}
 */
function samePage(page) {
  const normal = (/** @type {string} */ hash) => hash.replace(/^#?\/?/, "").replace(/\/$/, "");
  return normal(page) === normal(location.hash);
}

/** Shows the config banner above the page, unfolded, and moves focus to it. */
function revealBanner() {
  const banner = document.getElementById("banner");
  if (!banner || banner.hidden) return;
  const toggle = /** @type {HTMLButtonElement | null} */ (banner.querySelector(".banner-toggle"));
  if (toggle && toggle.getAttribute("aria-expanded") === "false") toggle.click();
  banner.scrollIntoView({ block: "nearest" });
  (toggle ?? banner).focus();
}
