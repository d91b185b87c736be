// A backend's live output: the lines the page holds, followed as events bring more, with a
// pause that freezes the view and a text filter.

import { h, setText, replace } from "../dom.js";
import { plural } from "../format.js";
import { logLine } from "./history.js";

/** @typedef {import('../store.js').Store} Store */
/** @typedef {import('../store.js').Change} Change */
/** @typedef {import('../types.js').OutputLine} OutputLine */

export class OutputPanel {
  /**
   * @param {Store} store
   * @param {string} name
   */
  constructor(store, name) {
    this.store = store;
    this.name = name;
    this.following = true;
    this.filter = "";
    /** Lines that arrived while paused. */
    this.missed = 0;
    /** How many of the store's lines the view shows (the view is frozen while paused). */
    this.shown = 0;

    this.followButton = h("button", { class: "btn btn-small btn-toggle", attrs: { type: "button", "aria-pressed": "true" }, data: { testid: "follow" }, on: { click: () => this.setFollowing(!this.following) } });
    const filterId = `filter-${Math.random().toString(36).slice(2)}`;
    this.filterInput = h("input", { class: "input input-small", attrs: { id: filterId, type: "search", placeholder: "Filter lines", autocomplete: "off", spellcheck: "false" }, data: { testid: "output-filter" } });
    this.filterInput.addEventListener("input", () => {
      this.filter = this.filterInput.value.trim().toLowerCase();
      this.renderAll();
    });
    this.count = h("span", { class: "muted small", attrs: { "aria-live": "polite" } });
    this.missedButton = h("button", { class: "btn btn-small btn-accent", attrs: { type: "button" }, on: { click: () => this.setFollowing(true) } });
    this.missedButton.hidden = true;
    this.log = h("div", { class: "log log-live", attrs: { role: "log", "aria-live": "off", "aria-label": `Output of ${name}`, tabindex: "0" }, data: { testid: "output-log" } });
    this.element = h("section", { class: "output-panel", attrs: { "aria-label": "Output" } },
      h("div", { class: "toolbar" },
        this.followButton,
        h("label", { class: "visually-hidden", attrs: { for: filterId }, text: "Filter output lines" }),
        this.filterInput,
        h("span", { class: "toolbar-spacer" }),
        this.missedButton,
        this.count),
      this.log);
    this.unsubscribe = store.subscribe((change) => this.onChange(change));
    this.updateFollowButton();
    this.renderAll();
  }

  /** @param {Change} change */
  onChange(change) {
    if (change.kind === "output_reset" && change.name === this.name) {
      if (this.following) this.renderAll();
      else this.updateCount();
    } else if (change.kind === "output" && change.name === this.name) {
      if (this.following) this.appendLive(change.line);
      else {
        this.missed += 1;
        this.updateCount();
      }
    }
  }

  /** @param {boolean} following */
  setFollowing(following) {
    this.following = following;
    this.updateFollowButton();
    if (following) {
      this.missed = 0;
      this.renderAll();
    } else {
      this.updateCount();
    }
  }

  updateFollowButton() {
    this.followButton.setAttribute("aria-pressed", String(this.following));
    replace(this.followButton, h("span", { class: `follow-dot${this.following ? " is-live" : ""}`, attrs: { "aria-hidden": "true" } }), this.following ? "Following" : "Paused");
    this.followButton.title = this.following ? "Pause: freeze the view (new lines are counted)" : "Follow new lines";
  }

  /** @returns {OutputLine[]} */
  lines() {
    return this.store.outputs.get(this.name) ?? [];
  }

  /** @param {OutputLine} line */
  matches(line) {
    return this.filter === "" || line.text.toLowerCase().includes(this.filter);
  }

  renderAll() {
    const lines = this.lines().filter((line) => this.matches(line));
    if (lines.length === 0) {
      const nothingYet = this.store.isRemote(this.name)
        ? "No output yet. What the link to this server sees go wrong appears here as it happens."
        : "No output yet. Lines this backend writes to stderr appear here as they come.";
      const text = this.lines().length === 0 ? nothingYet : "No line matches the filter.";
      replace(this.log, h("div", { class: "log-empty", text }));
    } else {
      replace(this.log, lines.map((line) => logLine(line, this.filter)));
    }
    this.missed = 0;
    this.updateCount();
    this.scrollToEnd();
  }

  /** @param {OutputLine} line */
  appendLive(line) {
    if (!this.matches(line)) {
      this.updateCount();
      return;
    }
    this.log.querySelector(".log-empty")?.remove();
    this.log.appendChild(logLine(line, this.filter));
    // The page keeps a bounded number of lines; so does the view.
    while (this.log.childElementCount > this.lines().length) this.log.firstElementChild?.remove();
    this.updateCount();
    this.scrollToEnd();
  }

  updateCount() {
    const total = this.lines().length;
    const shown = this.log.querySelectorAll(".log-line").length;
    setText(this.count, this.filter ? `${shown} of ${plural(total, "line")}` : plural(total, "line"));
    this.missedButton.hidden = this.following || this.missed === 0;
    setText(this.missedButton, `${plural(this.missed, "new line")} — resume`);
  }

  scrollToEnd() {
    if (this.following) this.log.scrollTop = this.log.scrollHeight;
  }

  destroy() {
    this.unsubscribe();
  }
}
