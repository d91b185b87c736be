// Moving an editor's own servers over to Switchboard, for the "Move over" cards of #/connect and
// the first-run panel of #/ (welcome.js): what a move would do to each entry of the editor's
// file, in plain words and as diffs (GET /api/clients/moves), the move itself, and its undo. A
// move is sent with the fingerprint of the preview the person saw: if the file changed since,
// the API refuses it (409), and the page says so and reads the preview again.

import { h, icon, replace, setText, announce } from "../dom.js";
import * as api from "../api.js";
import { plural } from "../format.js";
import { asApiError } from "../store.js";
import { empty, failure, loading } from "./common.js";

/** @typedef {import('../types.js').EditorMove} EditorMove */
/** @typedef {import('../types.js').EditorMoves} EditorMoves */
/** @typedef {import('../types.js').MoveReport} MoveReport */
/** @typedef {import('../types.js').MovedEntry} MovedEntry */

/**
 * What the last move or undo of an editor said. `changed`: refused because the file changed
 * since the preview; `undo_refused`: the file changed since the move, and "Undo anyway" may
 * put it back all the same.
 * @typedef {object} Outcome
 * @property {"moved" | "undone" | "changed" | "undo_refused" | "error"} kind
 * @property {string} message
 */

/** The name of the entry that points an editor at Switchboard (`ENTRY_NAME`). */
const ENTRY_NAME = "switchboard";

/**
 * The last outcome of each editor, by id. It outlives the page that showed it, so that the
 * Connect page still says what a move from the first-run panel did, with its undo.
 * @type {Map<string, Outcome>}
 */
const outcomes = new Map();

/**
 * The entries a preview moves, takes out as duplicates, and leaves, without the entry for
 * Switchboard.
 * @param {MoveReport} preview
 */
export function entriesOf(preview) {
  const listed = preview.entries.filter((entry) => entry.kind !== "switchboard");
  return {
    listed,
    moved: listed.filter((entry) => entry.kind === "moved"),
    duplicates: listed.filter((entry) => entry.kind === "duplicate"),
  };
}

/**
 * Whether moving would change anything at all.
 * @param {MoveReport} preview
 * @returns {boolean}
 */
export function hasChanges(preview) {
  return preview.editor_diff !== "" || preview.config_diff !== "";
}

/**
 * The label of the button that moves an editor over.
 * @param {MoveReport} preview
 * @returns {string}
 */
export function moveLabel(preview) {
  const moved = entriesOf(preview).moved.length;
  return moved > 0 ? `Move ${plural(moved, "server")} over` : "Move over";
}

/**
 * Moves `editor` over as its preview showed it, and keeps what happened as its outcome.
 * @param {EditorMove} editor
 * @param {MoveReport} preview
 * @param {{keepOriginals?: boolean, onlyDuplicates?: boolean, sandbox?: boolean}} [choice]
 * @returns {Promise<Outcome>}
 */
export async function moveOver(editor, preview, choice = {}) {
  /** @type {Outcome} */
  let outcome;
  try {
    const moved = await api.moveEditor(editor.id, {
      fingerprint: preview.fingerprint,
      keep_originals: choice.keepOriginals ?? false,
      only_duplicates: choice.onlyDuplicates ?? false,
      sandbox: choice.sandbox ?? false,
    });
    outcome = { kind: "moved", message: [movedLead(editor, moved), ...afterEntries(moved.message)].join("\n") };
  } catch (error) {
    const apiError = asApiError(error);
    // A conflict: the file changed since the preview, or cannot be edited as it is now.
    outcome = apiError.status === 409
      ? { kind: "changed", message: `${apiError.message}\nWhat is shown now is the file as it is.` }
      : { kind: "error", message: apiError.message };
  }
  outcomes.set(editor.id, outcome);
  announce(outcome.kind === "moved" ? `Moved ${editor.title} over` : `${editor.title} was not moved: ${outcome.message}`);
  return outcome;
}

/**
 * What a move did, in one sentence.
 * @param {EditorMove} editor
 * @param {MoveReport} moved
 * @returns {string}
 */
function movedLead(editor, moved) {
  const out = moved.entries.filter((entry) => entry.taken_out).length;
  const servers = moved.only_duplicates ? [] : moved.entries.flatMap((entry) => entry.kind === "moved" ? [`\`${entry.server}\``] : []);
  const takenOut = out > 0 ? `${plural(out, "entry", "entries")} taken out of ${editor.title}'s file` : "";
  if (moved.only_duplicates) return `Took ${plural(out, "duplicate")} out of ${editor.title}'s file.`;
  if (servers.length === 0) return `Moved ${editor.title} over${takenOut ? `: ${takenOut}` : ""}.`;
  return `Moved ${plural(servers.length, "server")} over to Switchboard: ${servers.join(", ")}${takenOut ? `; ${takenOut}` : ""}.`;
}

/**
 * The lines of a move's message after its first line and the entries (which the page shows
 * already): the backup, the undo, what to do next.
 * @param {string} message
 * @returns {string[]}
 */
function afterEntries(message) {
  return message.split("\n").slice(1).filter((line) => line.trim() !== "" && !line.startsWith(" "));
}

/**
 * Undoes the last move of `editor` (even though its file changed since, with `force`).
 * @param {EditorMove} editor
 * @param {boolean} force
 * @returns {Promise<Outcome>}
 */
export async function undoLastMove(editor, force) {
  /** @type {Outcome} */
  let outcome;
  try {
    outcome = { kind: "undone", message: (await api.undoMove(editor.id, force)).message };
  } catch (error) {
    const apiError = asApiError(error);
    outcome = { kind: apiError.status === 409 && !force ? "undo_refused" : "error", message: apiError.message };
  }
  outcomes.set(editor.id, outcome);
  announce(outcome.kind === "undone" ? `Undid the move of ${editor.title}` : `The move of ${editor.title} was not undone: ${outcome.message}`);
  return outcome;
}

/**
 * What an outcome says, in a live region; `extra` goes after the message (an "Undo anyway"
 * button, a link). The API's messages come a sentence a line, with `code` in backticks.
 * @param {Outcome | undefined} outcome
 * @param {...import('../dom.js').Children} extra
 * @returns {HTMLElement}
 */
export function outcomeView(outcome, ...extra) {
  const element = h("div", { class: "move-outcome", attrs: { role: "status" }, data: { testid: "move-outcome" } });
  if (!outcome) return element;
  element.dataset.outcome = outcome.kind;
  const failed = outcome.kind !== "moved" && outcome.kind !== "undone";
  replace(element,
    h("div", { class: "move-outcome-lines" },
      failed ? icon("alert") : null,
      h("div", {}, outcome.message.split("\n").map((line, index) => h(index === 0 && !failed ? "strong" : "div", { class: "move-outcome-line" }, withCode(line.trim()))))),
    ...extra);
  return element;
}

/**
 * The outcome kept for an editor, if any.
 * @param {string} id
 * @returns {Outcome | undefined}
 */
export function outcomeOf(id) {
  return outcomes.get(id);
}

/**
 * Text with `code` in backticks as code elements.
 * @param {string} text
 * @returns {(string | HTMLElement)[]}
 */
export function withCode(text) {
  return text.split(/`([^`]*)`/).map((part, index) => index % 2 === 1 ? h("code", { text: part }) : part).filter((part) => part !== "");
}

/**
 * A unified diff with its added and removed lines marked (by color and by their + and -).
 * @param {string} diff
 * @param {string} label what the diff is of, for screen readers
 * @returns {HTMLElement}
 */
export function diffView(diff, label) {
  if (diff === "") return h("p", { class: "muted move-diff-none", text: "No change." });
  const lines = diff.replace(/\n$/, "").split("\n");
  return h("pre", { class: "code move-diff", attrs: { tabindex: "0", "aria-label": label } },
    lines.map((line) => {
      const kind = line.startsWith("+++") || line.startsWith("---") ? "file"
        : line.startsWith("@@") ? "hunk"
          : line.startsWith("+") ? "add"
            : line.startsWith("-") ? "del"
              : "context";
      return h("span", { class: `move-diff-line move-diff-${kind}`, text: `${line}\n` });
    }));
}

/**
 * What becomes of one entry, in plain words.
 * @param {MovedEntry} entry
 * @param {MoveReport} preview
 * @param {boolean} keep whether the originals stay in the editor
 * @returns {HTMLElement}
 */
function fateOf(entry, preview, keep) {
  const out = entry.taken_out && !keep;
  const where = out ? ", taken out of the editor" : entry.kind === "stays" ? "" : ", and stays in the editor too";
  switch (entry.kind) {
    case "moved":
      return h("span", { class: "move-fate" },
        "becomes Switchboard server ", h("code", { text: entry.server }), where,
        entry.notes.length ? h("span", { class: "move-notes" }, entry.notes.map((note) => h("span", { class: "move-note" }, withCode(note)))) : null);
    case "duplicate": {
      // A duplicate of another entry that moves in the same step is not in Switchboard yet.
      const sibling = preview.entries.some((other) => other.kind === "moved" && other.server === entry.server);
      return h("span", { class: "move-fate" },
        sibling ? "runs what " : "Switchboard runs it already as ",
        h("code", { text: entry.server }),
        sibling ? " runs, which moves over" : "",
        where);
    }
    case "stays":
      return h("span", { class: "move-fate" }, "stays in the editor: ", withCode(entry.reason));
    case "switchboard":
      return h("span", { class: "move-fate", text: "points the editor at Switchboard" });
  }
}

/** @type {Record<MovedEntry["kind"], string>} */
const FATE_LABELS = { moved: "moves", duplicate: "duplicate", stays: "stays", switchboard: "Switchboard" };

/**
 * One entry as a chip: its name and, unless it moves, what happens to it.
 * @param {MovedEntry} entry
 * @returns {HTMLElement}
 */
export function entryChip(entry) {
  const title = entry.kind === "stays" ? `Stays: ${entry.reason}`
    : entry.kind === "duplicate" ? `Runs what ${entry.server} runs; taken out of the editor`
      : entry.kind === "moved" ? `Becomes Switchboard server ${entry.server}` : "";
  return h("li", { class: `move-chip move-chip-${entry.kind}`, data: { entry: entry.name, kind: entry.kind }, attrs: { title } },
    h("span", { class: "move-chip-name", text: entry.name }),
    entry.kind === "moved" ? null : h("span", { class: "move-chip-fate", text: FATE_LABELS[entry.kind] }));
}

/**
 * What happens to the editor's entry for Switchboard.
 * @param {MoveReport} preview
 * @returns {(string | HTMLElement)[]}
 */
function switchboardLine(preview) {
  const name = h("code", { text: ENTRY_NAME });
  switch (preview.switchboard) {
    case "added": return ["The editor gets an entry ", name, " that points it at Switchboard."];
    case "updated": return ["The editor's entry ", name, " is changed to point at this Switchboard."];
    case "unchanged": return ["The editor's entry ", name, " points at Switchboard already."];
  }
}

/**
 * "1 entry runs what Switchboard runs already: files-again", or null when none does.
 * @param {MoveReport} preview
 * @returns {HTMLElement | null}
 */
export function duplicatesLine(preview) {
  const { duplicates } = entriesOf(preview);
  if (duplicates.length === 0) return null;
  const verb = duplicates.length === 1 ? "runs" : "run";
  return h("p", { class: "move-duplicates", data: { testid: "duplicates" } },
    icon("copy"),
    h("span", {}, `${plural(duplicates.length, "entry", "entries")} ${verb} what Switchboard runs already, or gets in this move: `,
      duplicates.flatMap((entry, index) => [index > 0 ? ", " : "", h("code", { text: entry.name }), " (same as ", h("code", { text: entry.server }), ")"])));
}

/**
 * The "Move over" cards of #/connect, one per editor found on this machine.
 */
export class MoveCards {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
    this.alive = true;
    replace(root, loading("Looking for editors' servers…"));
    void this.load();
  }

  /**
   * Reads the previews again and shows them; `focusOn` (an editor's id) gets focus after, and
   * its file is read even where macOS asks the person first (they clicked for it).
   * @param {string} [focusOn]
   */
  async load(focusOn) {
    /** @type {EditorMoves} */
    let moves;
    try {
      moves = await api.listMoves(focusOn);
    } catch (error) {
      if (this.alive) replace(this.root, failure("Could not look at the editors' servers", asApiError(error), () => void this.load()));
      return;
    }
    if (!this.alive) return;
    if (moves.editors.length === 0) {
      replace(this.root, empty("No editor's servers found", "None of the editors Switchboard knows keeps an MCP config on this machine. Point one at Switchboard with a snippet below."));
      return;
    }
    replace(this.root, h("div", { class: "move-list" }, moves.editors.map((editor) => this.card(editor))));
    if (focusOn) /** @type {HTMLElement | null} */ (this.root.querySelector(`[data-editor="${CSS.escape(focusOn)}"] .card-title`))?.focus();
  }

  /**
   * @param {EditorMove} editor
   * @returns {HTMLElement}
   */
  card(editor) {
    const titleId = `move-${editor.id.replace(/[^\w-]/g, "_")}`;
    const preview = editor.preview;
    const undo = editor.undo ? this.undoButton(editor) : null;
    const outcome = outcomeOf(editor.id);
    const anyway = outcome?.kind === "undo_refused" && editor.undo
      ? h("button", { class: "btn btn-small btn-danger", attrs: { type: "button" }, data: { action: "undo-anyway" }, on: { click: () => void this.undo(editor, true, anyway) } }, icon("restart"), h("span", { class: "btn-text", text: "Undo anyway" }))
      : null;
    const head = h("div", { class: "card-head" },
      h("h3", { class: "card-title", attrs: { id: titleId, tabindex: "-1" }, text: editor.title }),
      editor.undo ? h("span", { class: "chip chip-good", text: "moved over" }) : null);
    /** @type {HTMLElement[]} */
    const parts = [head];
    if (editor.error !== null) {
      parts.push(h("div", { class: "notice notice-error move-error", data: { testid: "move-error" } },
        h("strong", {}, icon("alert"), " Switchboard cannot read this editor's file as it is"),
        h("p", { text: editor.error }),
        h("p", { class: "muted", text: "Fix the file in the editor (or a text editor), then reload this page." })));
    } else if (editor.not_read !== null) {
      parts.push(h("div", { class: "move-not-read", data: { testid: "move-not-read" } },
        h("p", { class: "muted", text: editor.not_read }),
        h("button", { class: "btn btn-small", attrs: { type: "button" }, data: { action: "read" }, on: { click: () => void this.load(editor.id) } },
          h("span", { class: "btn-text", text: `Look at ${editor.title}'s servers` }))));
    } else if (preview === null) {
      parts.push(h("p", { class: "muted move-path", text: "It has no MCP config file: nothing to move." }));
    } else {
      parts.push(...this.previewParts(editor, preview));
    }
    if (undo) parts.push(h("div", { class: "move-actions move-undo" }, undo, h("span", { class: "muted", text: "puts the editor's file back and takes the servers it added out of Switchboard's config." })));
    parts.push(outcomeView(outcome, anyway));
    return h("section", { class: "card move-card", data: { editor: editor.id }, attrs: { "aria-labelledby": titleId } }, parts);
  }

  /**
   * The entries, the diffs and the buttons of an editor whose file was read.
   * @param {EditorMove} editor
   * @param {MoveReport} preview
   * @returns {HTMLElement[]}
   */
  previewParts(editor, preview) {
    const { listed, moved, duplicates } = entriesOf(preview);
    const changes = hasChanges(preview);
    const list = h("ul", { class: "move-entries" });
    const keep = h("input", { class: "checkbox", attrs: { type: "checkbox", id: `keep-${editor.id}` }, data: { testid: "keep-originals" } });
    const renderList = () => replace(list, listed.map((entry) => h("li", { data: { entry: entry.name, kind: entry.kind } },
      h("code", { class: "move-entry-name", text: entry.name }), " ", fateOf(entry, preview, keep.checked))));
    renderList();
    /** @type {HTMLElement[]} */
    const parts = [
      h("p", { class: "move-path" }, h("span", { class: "muted", text: "Its file: " }), h("code", { text: preview.path })),
    ];
    if (listed.length === 0) parts.push(h("p", { class: "muted", text: "The file lists no servers of its own." }));
    else parts.push(list);
    parts.push(h("p", { class: "move-switchboard", data: { testid: "switchboard-entry" } }, switchboardLine(preview)));
    const duplicatesNote = duplicatesLine(preview);
    if (duplicatesNote) parts.push(duplicatesNote);
    if (!changes) {
      parts.push(h("p", { class: "move-nothing", data: { testid: "nothing-to-move" } }, icon("list"), " Nothing to move: Switchboard has what this file offers."));
      return parts;
    }
    const keepNote = h("p", { class: "muted move-keep-note", text: "With the originals kept, the editor's file keeps the entries the changes take out; only its entry for Switchboard changes." });
    keepNote.hidden = true;
    parts.push(h("details", { class: "move-changes" },
      h("summary", { text: "Show the changes" }),
      keepNote,
      h("h4", { class: "move-diff-title" }, `${editor.title}'s file`),
      diffView(preview.editor_diff, `Changes to ${editor.title}'s file`),
      h("h4", { class: "move-diff-title" }, "Switchboard's config ", h("code", { class: "muted", text: preview.config_path })),
      diffView(preview.config_diff, "Changes to Switchboard's config")));

    const moveButton = h("button", { class: "btn btn-primary", attrs: { type: "button" }, data: { action: "move" } }, icon("download"), h("span", { class: "btn-text", text: moveLabel(preview) }));
    const sandbox = h("input", { class: "checkbox", attrs: { type: "checkbox", id: `sandbox-${editor.id}` }, data: { testid: "sandbox-servers" } });
    moveButton.addEventListener("click", () => void this.move(editor, preview, moveButton, { keepOriginals: keep.checked, sandbox: sandbox.checked }));
    const onlyDuplicates = duplicates.length > 0
      ? h("button", { class: "btn", attrs: { type: "button" }, data: { action: "only-duplicates" } }, icon("trash"), h("span", { class: "btn-text", text: "Take out duplicates only" }))
      : null;
    onlyDuplicates?.addEventListener("click", () => void this.move(editor, preview, onlyDuplicates, { onlyDuplicates: true }));
    keep.addEventListener("change", () => {
      renderList();
      keepNote.hidden = !keep.checked;
      // Kept originals leave the duplicates too: taking out only those would do nothing.
      if (onlyDuplicates) onlyDuplicates.disabled = keep.checked;
    });
    parts.push(h("div", { class: "move-actions" },
      moveButton,
      moved.length > 0 || duplicates.length > 0
        ? h("label", { class: "move-keep", attrs: { for: keep.id } }, keep, "Keep the originals in the editor")
        : null,
      moved.length > 0
        ? h("label", { class: "move-keep", attrs: { for: sandbox.id, title: "Each server may then read and write only the folders its command line names (and a package runner's cache), besides what it needs to run; see its Sandbox card after the move" } }, sandbox, "Sandbox each server")
        : null,
      onlyDuplicates));
    return parts;
  }

  /**
   * @param {EditorMove} editor
   * @returns {HTMLButtonElement}
   */
  undoButton(editor) {
    const button = h("button", { class: "btn", attrs: { type: "button" }, data: { action: "undo" } }, icon("restart"), h("span", { class: "btn-text", text: "Undo the last move" }));
    button.addEventListener("click", () => void this.undo(editor, false, button));
    return button;
  }

  /**
   * @param {EditorMove} editor
   * @param {MoveReport} preview
   * @param {HTMLButtonElement} button
   * @param {{keepOriginals?: boolean, onlyDuplicates?: boolean, sandbox?: boolean}} choice
   */
  async move(editor, preview, button, choice) {
    busy(button, "Moving…");
    await moveOver(editor, preview, choice);
    // Whatever happened, the preview is read again: after a move there is less to move, and
    // after a refusal the file is shown as it is now.
    if (this.alive) await this.load(editor.id);
  }

  /**
   * @param {EditorMove} editor
   * @param {boolean} force
   * @param {HTMLButtonElement | null} button
   */
  async undo(editor, force, button) {
    if (button) busy(button, "Undoing…");
    await undoLastMove(editor, force);
    if (this.alive) await this.load(editor.id);
  }

  destroy() {
    this.alive = false;
  }
}

/**
 * Shows a button's call in flight.
 * @param {HTMLButtonElement} button
 * @param {string} text
 */
export function busy(button, text) {
  button.disabled = true;
  button.classList.add("is-busy");
  const label = button.querySelector(".btn-text");
  if (label) setText(label, text);
}
