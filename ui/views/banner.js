// The banner over every page when the config file has problems: what is wrong and where
// (file:line:column field message), as the API reports it.

import { h, replace } from "../dom.js";
import { plural, clockTime } from "../format.js";
import { icon } from "../dom.js";

/** @typedef {import('../types.js').ConfigStatus} ConfigStatus */
/** @typedef {import('../types.js').Diagnostic} Diagnostic */

/** Whether the reader folded the list away; kept across updates of the banner. */
let folded = false;

/**
 * @param {HTMLElement} root
 * @param {ConfigStatus | null} config
 */
export function renderBanner(root, config) {
  const diagnostics = config?.diagnostics ?? [];
  const errors = diagnostics.filter((diagnostic) => diagnostic.severity === "error");
  const warnings = diagnostics.filter((diagnostic) => diagnostic.severity === "warning");
  const notes = config?.notes ?? [];
  if (!config || (config.status === "applied" && diagnostics.length === 0 && notes.length === 0)) {
    replace(root);
    root.hidden = true;
    return;
  }
  root.hidden = false;
  const invalid = config.status !== "applied" || errors.length > 0;
  const title = config.problem
    ?? (warnings.length > 0 ? `The config file has ${plural(warnings.length, "warning")}` : "Config reloaded");
  const counts = [errors.length ? plural(errors.length, "error") : "", warnings.length ? plural(warnings.length, "warning") : "", notes.length ? plural(notes.length, "note") : ""].filter(Boolean).join(", ");
  const listId = "config-diagnostics";
  const list = h("table", { class: "diagnostics", attrs: { id: listId } },
    h("caption", { class: "visually-hidden", text: "Config problems" }),
    h("tbody", {}, [...diagnostics.map((diagnostic) => diagnosticRow(diagnostic)), ...notes.map((note) => noteRow(note))]));
  list.hidden = folded;
  const toggle = h("button", { class: "btn btn-small btn-ghost banner-toggle", attrs: { type: "button", "aria-expanded": String(!folded), "aria-controls": listId }, text: folded ? `Show ${counts}` : "Hide details" });
  toggle.addEventListener("click", () => {
    folded = !folded;
    list.hidden = folded;
    toggle.setAttribute("aria-expanded", String(!folded));
    toggle.textContent = folded ? `Show ${counts}` : "Hide details";
  });
  replace(root, h("div", { class: `banner ${invalid ? "banner-error" : "banner-warn"}`, attrs: { role: invalid ? "alert" : "status" }, data: { testid: "config-banner" } },
    h("div", { class: "banner-head" },
      icon("alert"),
      h("strong", { text: title }),
      h("span", { class: "banner-path" }, h("code", { text: config.path }), ` · read ${clockTime(config.checked_at_ms)} · ${counts}`),
      h("span", { class: "toolbar-spacer" }),
      toggle),
    list));
}

/**
 * A statement about the last reload, such as a setting that needs a restart.
 * @param {string} note
 * @returns {HTMLElement}
 */
function noteRow(note) {
  return h("tr", { class: "diagnostic diagnostic-note" },
    h("td", { class: "diagnostic-where" }),
    h("td", {}, h("span", { class: "chip chip-warn", text: "note" })),
    h("td", { class: "diagnostic-message", attrs: { colspan: "2" }, text: note }));
}

/**
 * `file:line:column  error  field  message`, as `switchboard check` prints it.
 * @param {Diagnostic} diagnostic
 * @returns {HTMLElement}
 */
function diagnosticRow(diagnostic) {
  return h("tr", { class: `diagnostic diagnostic-${diagnostic.severity}` },
    h("td", { class: "diagnostic-where mono", text: `${diagnostic.file}:${diagnostic.line}:${diagnostic.column}` }),
    h("td", {}, h("span", { class: `chip ${diagnostic.severity === "error" ? "chip-bad" : "chip-warn"}`, text: diagnostic.severity })),
    h("td", { class: "diagnostic-field mono", text: diagnostic.field }),
    h("td", { class: "diagnostic-message", text: diagnostic.message }));
}
