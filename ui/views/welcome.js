// The first-run panel at the top of #/: while Switchboard runs none of the person's own servers
// (only the built-in demo server, or none), it lists the editors found on this machine with their
// servers and moves each over in one click (moving.js); the Connect page has the details, the
// diffs and the undo. "Not now" hides it in this browser.

import { h, icon, replace } from "../dom.js";
import * as api from "../api.js";
import { asApiError } from "../store.js";
import { busy, entriesOf, entryChip, hasChanges, moveLabel, moveOver, outcomeOf, outcomeView } from "./moving.js";

/** @typedef {import('../types.js').EditorMove} EditorMove */

/** Where "Not now" is remembered. */
const DISMISSED_KEY = "switchboard.welcome.dismissed";

export class WelcomePanel {
  /** @param {HTMLElement} root an empty element at the top of the page; hidden while unused */
  constructor(root) {
    this.root = root;
    this.alive = true;
    /** Whether the panel showed: it stays after a move, though that ends the first run. */
    this.shown = false;
    root.hidden = true;
    if (!dismissed()) void this.load();
  }

  /** @param {string} [focusOn] an editor whose row gets focus after */
  async load(focusOn) {
    let moves;
    try {
      moves = await api.listMoves(focusOn);
    } catch (error) {
      // The panel is a suggestion: without it the page works as before.
      console.warn("switchboard: cannot look at the editors' servers", asApiError(error).message);
      return;
    }
    if (!this.alive || (!moves.first_run && !this.shown)) return;
    this.shown = true;
    this.render(moves.editors);
    if (focusOn) /** @type {HTMLElement | null} */ (this.root.querySelector(`[data-editor="${CSS.escape(focusOn)}"] .welcome-editor-title`))?.focus();
  }

  /** @param {EditorMove[]} editors */
  render(editors) {
    const connect = h("a", { attrs: { href: "#/connect" }, text: "Connect an editor" });
    const notNow = h("button", { class: "btn btn-small btn-ghost", attrs: { type: "button" }, text: "Not now", on: { click: () => this.dismiss() } });
    const found = editors.filter((editor) => editor.error !== null || editor.preview !== null || editor.not_read !== null);
    this.root.hidden = false;
    replace(this.root, h("section", { class: "card welcome", attrs: { "aria-labelledby": "welcome-title" }, data: { testid: "first-run" } },
      h("div", { class: "welcome-head" },
        h("h2", { class: "welcome-title", attrs: { id: "welcome-title" } }, icon("download"), " Bring your servers over"),
        notNow),
      found.length === 0
        ? h("p", { class: "welcome-intro", data: { testid: "no-editors" } },
          "Switchboard runs none of your own servers yet, and no editor on this machine has MCP servers to bring over. Point your editors at Switchboard with a snippet from ", connect, ", then add servers to its config.")
        : [
          h("p", { class: "welcome-intro" }, "Switchboard runs none of your own servers yet. These editors on this machine have some: move them over, and every editor shares one running copy of each. Their files are backed up first, and a move can be undone."),
          h("ul", { class: "welcome-editors" }, found.map((editor) => this.row(editor))),
          h("p", { class: "welcome-more" }, "Each entry in words, the exact changes, and undo: ", h("a", { attrs: { href: "#/connect" }, text: "Connect an editor" }), "."),
        ]));
  }

  /**
   * @param {EditorMove} editor
   * @returns {HTMLElement}
   */
  row(editor) {
    const preview = editor.preview;
    const outcome = outcomeOf(editor.id);
    const titleId = `welcome-${editor.id.replace(/[^\w-]/g, "_")}`;
    /** @type {import('../dom.js').Children} */
    let body;
    /** @type {HTMLButtonElement | null} */
    let button = null;
    if (editor.error !== null) {
      body = h("p", { class: "welcome-error" }, icon("alert"), ` Its file cannot be read: ${editor.error}`);
    } else if (editor.not_read !== null) {
      body = h("p", { class: "muted", text: editor.not_read });
      button = h("button", { class: "btn btn-small", attrs: { type: "button", "aria-describedby": titleId }, data: { action: "read" }, on: { click: () => void this.load(editor.id) } },
        h("span", { class: "btn-text", text: "Look at its servers" }));
    } else if (preview !== null) {
      const listed = entriesOf(preview).listed;
      body = [
        h("code", { class: "welcome-path muted", text: preview.path }),
        listed.length > 0
          ? h("ul", { class: "move-chips", attrs: { "aria-label": `Servers of ${editor.title}` } }, listed.map((entry) => entryChip(entry)))
          : h("p", { class: "muted", text: "Its file lists no servers." }),
      ];
      if (hasChanges(preview)) {
        const moveButton = h("button", { class: "btn btn-primary btn-small", attrs: { type: "button", "aria-describedby": titleId }, data: { action: "move" } }, icon("download"), h("span", { class: "btn-text", text: moveLabel(preview) }));
        moveButton.addEventListener("click", async () => {
          busy(moveButton, "Moving…");
          await moveOver(editor, preview);
          if (this.alive) await this.load(editor.id);
        });
        button = moveButton;
      } else if (!outcome) {
        body.push(h("p", { class: "muted", text: "Nothing to move." }));
      }
    }
    const undoLink = outcome?.kind === "moved"
      ? h("a", { attrs: { href: "#/connect" }, text: "Undo it on the Connect page" })
      : null;
    return h("li", { class: "welcome-editor", data: { editor: editor.id } },
      h("div", { class: "welcome-editor-main" },
        h("strong", { class: "welcome-editor-title", attrs: { id: titleId, tabindex: "-1" }, text: editor.title }),
        body),
      button ? h("div", { class: "welcome-editor-action" }, button) : null,
      outcomeView(outcome, undoLink));
  }

  dismiss() {
    try {
      localStorage.setItem(DISMISSED_KEY, "1");
    } catch {
      // Storage refused: hidden for this page only.
    }
    this.root.hidden = true;
    replace(this.root);
    /** @type {HTMLElement | null} */ (document.querySelector("#view h1"))?.focus();
  }

  destroy() {
    this.alive = false;
  }
}

/** @returns {boolean} whether "Not now" was chosen in this browser */
function dismissed() {
  try {
    return localStorage.getItem(DISMISSED_KEY) === "1";
  } catch {
    return false;
  }
}
