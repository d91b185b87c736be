// The calls waiting for a person's yes, over every page: which editor wants to run which tool of
// which server, with what arguments, and until when; Allow, Allow for this session, Deny.

import { h, replace, icon } from "../dom.js";
import { clockTime } from "../format.js";
import { smallButton as button, toast } from "./common.js";
import * as api from "../api.js";

/** @typedef {import('../types.js').Approval} Approval */

/**
 * @param {HTMLElement} root
 * @param {Approval[]} waiting
 */
export function renderApprovals(root, waiting) {
  if (waiting.length === 0) {
    replace(root);
    root.hidden = true;
    return;
  }
  root.hidden = false;
  replace(root, ...waiting.map((approval) => card(approval)));
}

/**
 * @param {Approval} approval
 * @returns {HTMLElement}
 */
function card(approval) {
  const who = approval.editor ?? "An editor";
  const buttons = [
    button("Allow", "btn-primary", () => decide(approval, "allow", false, buttons)),
    button("Allow for this session", "", () => decide(approval, "allow", true, buttons)),
    button("Deny", "btn-danger", () => decide(approval, "deny", false, buttons)),
  ];
  const args = JSON.stringify(approval.arguments ?? {}, null, 2);
  return h("section", { class: "approval", attrs: { role: "alert", "aria-label": `${who} asks to run ${approval.tool}` }, data: { testid: "approval" } },
    h("div", { class: "approval-head" },
      icon("alert"),
      h("strong", {}, `${who} wants to run `, h("code", { text: approval.tool })),
      h("span", { class: "approval-where" }, `${approval.own} of ${approval.server} · profile ${approval.profile} · asked ${clockTime(approval.asked_at)}, denied at ${clockTime(approval.deadline)} without an answer`)),
    h("pre", { class: "approval-args mono", text: args.length > 2000 ? `${args.slice(0, 2000)}…` : args }),
    h("div", { class: "approval-actions" }, ...buttons));
}

/**
 * @param {Approval} approval
 * @param {"allow" | "deny"} decision
 * @param {boolean} forSession
 * @param {HTMLButtonElement[]} buttons
 */
async function decide(approval, decision, forSession, buttons) {
  for (const element of buttons) element.disabled = true;
  try {
    await api.decideApproval(approval.id, decision, forSession);
  } catch (error) {
    toast(`Could not answer ${approval.tool}`, error instanceof Error ? error.message : String(error), "error");
    for (const element of buttons) element.disabled = false;
  }
}
