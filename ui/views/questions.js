// Servers' questions the person answers here because their editor cannot ask them, over every
// page: a form rendered from the server's schema (its defaults, choices, formats and limits) with
// Submit, Decline and Cancel; or a page to open, with the site it is on and a warning when it is
// not https or not the server's own, which opens only when the person says so.

import { h, replace, icon } from "../dom.js";
import { clockTime } from "../format.js";
import { smallButton as button, toast } from "./common.js";
import * as api from "../api.js";

/** @typedef {import('../types.js').Question} Question */
/** @typedef {{type?: string, title?: string, description?: string, format?: string, default?: unknown, enum?: unknown[], enumNames?: string[], oneOf?: {const: string, title?: string}[], anyOf?: {const: string, title?: string}[], items?: FieldSchema, minLength?: number, maxLength?: number, minimum?: number, maximum?: number, minItems?: number, maxItems?: number}} FieldSchema */

/** The HTML input type of each string format the spec names. */
const INPUT_TYPES = /** @type {Record<string, string>} */ ({ email: "email", uri: "url", date: "date", "date-time": "datetime-local" });

/**
 * @param {HTMLElement} root
 * @param {Question[]} waiting
 */
export function renderQuestions(root, waiting) {
  if (waiting.length === 0) {
    replace(root);
    root.hidden = true;
    return;
  }
  root.hidden = false;
  // A card being filled in stays as it is: only cards of new questions are made.
  const kept = new Map([...root.querySelectorAll("[data-question]")].map((card) => [/** @type {HTMLElement} */ (card).dataset.question, card]));
  replace(root, ...waiting.map((question) => kept.get(String(question.id)) ?? card(question)));
}

/**
 * @param {Question} question
 * @returns {HTMLElement}
 */
function card(question) {
  const who = question.editors.length ? `${question.server}, during a call of ${orList(question.editors)},` : question.server;
  const head = h("div", { class: "approval-head" },
    icon("alert"),
    h("strong", {}, `${who} asks`),
    h("span", { class: "approval-where" }, `${question.profile ? `profile ${question.profile} · ` : ""}asked at ${clockTime(question.asked_at)} · cancelled at ${clockTime(question.deadline)} if nobody answers`));
  const message = h("p", { class: "question-message", text: question.message });
  const body = question.mode === "url" ? urlBody(question) : formBody(question);
  return h("section", { class: "approval question", attrs: { role: "alert", "aria-label": `${question.server} asks: ${question.message}` }, data: { testid: "question", question: String(question.id) } },
    head, message, body);
}

/**
 * "Cursor", "Cursor or Zed", "Cursor, Claude Code or Zed".
 * @param {string[]} names
 * @returns {string}
 */
function orList(names) {
  return names.length > 1 ? `${names.slice(0, -1).join(", ")} or ${names[names.length - 1]}` : names.join("");
}

/**
 * @param {Question} question
 * @returns {HTMLElement}
 */
function urlBody(question) {
  const url = question.url ?? "";
  const warning = question.warning ? h("p", { class: "notice notice-warn", data: { testid: "question-warning" } }, icon("alert"), ` ${question.warning}`) : null;
  /** @type {HTMLButtonElement[]} */
  const buttons = [];
  const open = button(question.warning ? `Open ${question.host} anyway` : `Open ${question.host}`, question.warning ? "btn-danger" : "btn-primary", async () => {
    if (await answer(question, buttons, "accept")) window.open(url, "_blank", "noopener,noreferrer");
  });
  buttons.push(open,
    button("Decline", "", () => void answer(question, buttons, "decline")),
    button("Cancel", "btn-ghost", () => void answer(question, buttons, "cancel")));
  return h("div", { class: "question-body" },
    h("p", { class: "question-url" }, h("span", {}, "It asks you to open a page on ", h("strong", { text: question.host ?? "" }), ":"), h("code", { class: "mono", text: url })),
    warning,
    h("div", { class: "approval-actions" }, ...buttons));
}

/**
 * @param {Question} question
 * @returns {HTMLElement}
 */
function formBody(question) {
  const schema = /** @type {{properties?: Record<string, FieldSchema>, required?: string[]}} */ (question.schema ?? {});
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(schema.properties ?? {}).map(([name, field]) => fieldRow(question.id, name, field, required.has(name)));
  /** @type {HTMLButtonElement[]} */
  const buttons = [];
  const form = /** @type {HTMLFormElement} */ (h("form", { class: "question-form" }, ...fields.map((field) => field.row)));
  const submit = /** @type {HTMLButtonElement} */ (h("button", { class: "btn btn-small btn-primary", attrs: { type: "submit" }, text: "Submit" }));
  buttons.push(submit,
    button("Decline", "", () => void answer(question, buttons, "decline")),
    button("Cancel", "btn-ghost", () => void answer(question, buttons, "cancel")));
  form.append(h("div", { class: "approval-actions" }, ...buttons));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!form.reportValidity()) return;
    /** @type {Record<string, unknown>} */
    const content = {};
    for (const field of fields) {
      const value = field.value();
      if (value !== undefined) content[field.name] = value;
    }
    void answer(question, buttons, "accept", content);
  });
  return form;
}

/**
 * One field of a form: its row, and its value as the schema types it (`undefined` when left
 * empty and not required).
 * @param {number} id
 * @param {string} name
 * @param {FieldSchema} field
 * @param {boolean} required
 * @returns {{name: string, row: HTMLElement, value: () => unknown}}
 */
function fieldRow(id, name, field, required) {
  const inputId = `question-${id}-${name}`;
  // The mark of a required field stays out of the label: the field's name is its title alone.
  const label = h("span", { class: "question-label" }, h("label", { attrs: { for: inputId }, text: field.title ?? name }),
    required ? h("span", { class: "question-required", text: " *", attrs: { title: "required" } }) : null);
  const hint = field.description ? h("span", { class: "question-hint", text: field.description }) : null;
  const choices = choicesOf(field);
  if (field.type === "array") {
    const options = choicesOf(field.items ?? {}) ?? [];
    const chosen = new Set(Array.isArray(field.default) ? field.default : []);
    const boxes = options.map((option) => {
      const box = /** @type {HTMLInputElement} */ (h("input", { attrs: { type: "checkbox", value: option.value, checked: chosen.has(option.value) } }));
      return { box, row: h("label", { class: "question-choice" }, box, ` ${option.title}`) };
    });
    const group = h("fieldset", { class: "question-field", attrs: { id: inputId } }, h("legend", {}, field.title ?? name), ...boxes.map((box) => box.row), hint);
    return { name, row: group, value: () => boxes.filter((box) => box.box.checked).map((box) => box.box.value) };
  }
  if (field.type === "boolean") {
    const box = /** @type {HTMLInputElement} */ (h("input", { attrs: { type: "checkbox", id: inputId, checked: field.default === true } }));
    return { name, row: h("div", { class: "question-field question-check" }, box, label, hint), value: () => box.checked };
  }
  if (choices) {
    const select = /** @type {HTMLSelectElement} */ (h("select", { class: "input", attrs: { id: inputId, required } },
      required && field.default === undefined ? h("option", { attrs: { value: "" }, text: "Choose…" }) : null,
      !required ? h("option", { attrs: { value: "" }, text: "—" }) : null,
      ...choices.map((option) => h("option", { attrs: { value: option.value, selected: option.value === field.default }, text: option.title }))));
    return { name, row: h("div", { class: "question-field" }, label, select, hint), value: () => select.value === "" ? undefined : select.value };
  }
  const numeric = field.type === "number" || field.type === "integer";
  const input = /** @type {HTMLInputElement} */ (h("input", { class: "input", attrs: {
    id: inputId,
    type: numeric ? "number" : INPUT_TYPES[field.format ?? ""] ?? "text",
    required,
    step: field.type === "integer" ? 1 : numeric ? "any" : null,
    min: field.minimum ?? null,
    max: field.maximum ?? null,
    minlength: field.minLength ?? null,
    maxlength: field.maxLength ?? null,
    value: field.default === undefined ? null : String(field.default),
  } }));
  const value = () => {
    if (input.value === "") return undefined;
    if (numeric) return Number(input.value);
    // The spec's date-time has seconds and a zone; the browser's field has neither.
    if (field.format === "date-time") return new Date(input.value).toISOString();
    return input.value;
  };
  return { name, row: h("div", { class: "question-field" }, label, input, hint), value };
}

/**
 * The options of a field that is one of a list, with what each is shown as.
 * @param {FieldSchema} field
 * @returns {{value: string, title: string}[] | null}
 */
function choicesOf(field) {
  if (Array.isArray(field.enum)) return field.enum.map((value, index) => ({ value: String(value), title: field.enumNames?.[index] ?? String(value) }));
  const titled = field.oneOf ?? field.anyOf;
  if (Array.isArray(titled)) return titled.map((option) => ({ value: option.const, title: option.title ?? option.const }));
  return null;
}

/**
 * Sends the answer; whether it was taken.
 * @param {Question} question
 * @param {HTMLButtonElement[]} buttons
 * @param {"accept" | "decline" | "cancel"} action
 * @param {Record<string, unknown>} [content]
 * @returns {Promise<boolean>}
 */
async function answer(question, buttons, action, content) {
  for (const element of buttons) element.disabled = true;
  try {
    await api.answerQuestion(question.id, action, content);
    return true;
  } catch (error) {
    toast(`Could not answer ${question.server}`, error instanceof Error ? error.message : String(error), "error");
    for (const element of buttons) element.disabled = false;
    return false;
  }
}
