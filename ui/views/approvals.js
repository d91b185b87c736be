// The calls waiting for a person's yes, over every page: which editor wants to run which tool of
// which server, with what arguments (the exact text the server will receive), and until when;
// Allow, Allow for this session, Deny.

import { h, replace, icon } from "../dom.js";
import { clockTime } from "../format.js";
import { smallButton as button, toast } from "./common.js";
import * as api from "../api.js";

/** @typedef {import('../types.js').Approval} Approval */

/** Arguments longer than this (characters, or lines) show cut at first, in a scrolling box. */
const CUT_CHARACTERS = 600;
const CUT_LINES = 12;

/** The calls whose cut arguments the person expanded, kept over renders of the list. */
const expanded = new Set();

/**
 * @param {HTMLElement} root
 * @param {Approval[]} waiting
 */
export function renderApprovals(root, waiting) {
  const ids = new Set(waiting.map((approval) => approval.id));
  for (const id of expanded) if (!ids.has(id)) expanded.delete(id);
  if (waiting.length === 0) {
    replace(root);
    root.hidden = true;
    return;
  }
  root.hidden = false;
  replace(root, ...waiting.map((approval) => card(approval)));
}

/**
 * A call's card. Its arguments are the exact text its server will receive, in full; long ones
 * show cut in a scrolling box, and the call cannot be allowed until they are expanded.
 * @param {Approval} approval
 * @returns {HTMLElement}
 */
function card(approval) {
  const who = approval.editor ?? "An editor";
  const text = approval.arguments_text;
  const long = text !== null && (text.length > CUT_CHARACTERS || text.split("\n").length > CUT_LINES);
  const cut = () => long && !expanded.has(approval.id);
  let busy = false;
  const setBusy = (/** @type {boolean} */ now) => {
    busy = now;
    refresh();
  };
  const allow = button("Allow", "btn-primary", () => decide(approval, "allow", false, setBusy));
  // A 2026-07-28 editor's every request is a session of its own: "for this session" would be once.
  const allowForSession = approval.session_lasts
    ? button("Allow for this session", "", () => decide(approval, "allow", true, setBusy))
    : null;
  const deny = button("Deny", "btn-danger", () => decide(approval, "deny", false, setBusy));
  const args = text === null
    ? h("p", { class: "approval-where", text: "No arguments." })
    : h("pre", { class: "approval-args mono", text, data: { testid: "approval-arguments" } });
  const showAll = long
    ? button(`Show all ${text.length.toLocaleString()} characters`, "", () => {
      expanded.add(approval.id);
      refresh();
    })
    : null;
  const cutNote = h("span", { class: "approval-where", text: "Only part of the arguments shows: read them all before allowing." });
  function refresh() {
    const isCut = cut();
    args.classList.toggle("approval-args-cut", isCut);
    cutNote.hidden = !isCut;
    if (showAll) showAll.hidden = !isCut;
    for (const element of [allow, allowForSession]) {
      if (!element) continue;
      element.disabled = busy || isCut;
      element.title = isCut ? "Show all the arguments first" : "";
    }
    deny.disabled = busy;
  }
  refresh();
  return h("section", { class: "approval", attrs: { role: "alert", "aria-label": `${who} asks to run ${approval.tool}` }, data: { testid: "approval" } },
    h("div", { class: "approval-head" },
      icon("alert"),
      h("strong", {}, `${who} wants to run `, h("code", { text: approval.tool })),
      h("span", { class: "approval-where" }, `${approval.own} of ${approval.server} · profile ${approval.profile} · asked at ${clockTime(approval.asked_at)} · denied at ${clockTime(approval.deadline)} if nobody answers`)),
    args,
    long ? h("div", { class: "approval-cut" }, showAll, cutNote) : null,
    h("div", { class: "approval-actions" }, allow, allowForSession, deny));
}

/**
 * @param {Approval} approval
 * @param {"allow" | "deny"} decision
 * @param {boolean} forSession
 * @param {(busy: boolean) => void} setBusy
 */
async function decide(approval, decision, forSession, setBusy) {
  setBusy(true);
  try {
    await api.decideApproval(approval.id, decision, forSession);
  } catch (error) {
    toast(`Could not answer ${approval.tool}`, error instanceof Error ? error.message : String(error), "error");
    setBusy(false);
  }
}
