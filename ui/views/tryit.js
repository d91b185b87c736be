// "Try it": a form generated from a tool's input schema (strings, numbers, integers, booleans,
// enums; JSON for anything else, or for the whole arguments object), filled in from a recorded
// call when the activity page opens it, the call through the API, and its result: content blocks
// made readable, the raw JSON a toggle away.

import { h, replace, setText, copyButton } from "../dom.js";
import * as api from "../api.js";
import { asApiError } from "../store.js";
import { duration } from "../format.js";
import { typeText } from "./schema.js";

/** @typedef {import('../types.js').Tool} Tool */
/** @typedef {import('../types.js').JsonSchema} JsonSchema */
/** @typedef {import('../types.js').ToolResult} ToolResult */
/** @typedef {import('../types.js').ContentBlock} ContentBlock */

/**
 * @typedef {"string" | "number" | "integer" | "boolean" | "enum" | "json"} FieldKind
 */

/**
 * @typedef {object} Field
 * @property {string} key
 * @property {JsonSchema} schema
 * @property {boolean} required
 * @property {FieldKind} kind
 * @property {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} control
 * @property {HTMLElement} error
 */

/** Thrown for a value that cannot be sent; names the field. */
class FieldError extends Error {}

let nextFormId = 0;

/**
 * The kind of control for a property; "json" for anything a plain control cannot express.
 * @param {JsonSchema} schema
 * @returns {FieldKind}
 */
export function fieldKind(schema) {
  if (Array.isArray(schema.enum) && schema.enum.length > 0 && schema.enum.every((value) => value === null || typeof value !== "object")) return "enum";
  const types = Array.isArray(schema.type) ? schema.type.filter((type) => type !== "null") : schema.type ? [schema.type] : [];
  if (types.length !== 1 || schema.anyOf || schema.oneOf || schema.allOf) return "json";
  const [type] = types;
  if (type === "string" || type === "number" || type === "integer" || type === "boolean") return type;
  return "json";
}

export class TryIt {
  /**
   * @param {string} backend
   * @param {Tool} tool
   */
  constructor(backend, tool) {
    this.backend = backend;
    this.tool = tool;
    this.id = `tryit-${nextFormId++}`;
    const schema = tool.inputSchema ?? { type: "object" };
    /** @type {Field[]} */
    this.fields = Object.entries(schema.properties ?? {})
      .filter(([, property]) => typeof property === "object" && property !== null)
      .map(([key, property]) => this.makeField(key, property, (schema.required ?? []).includes(key)));
    // A schema the form cannot express as fields starts as JSON.
    const formable = !schema.anyOf && !schema.oneOf && !schema.allOf && !schema.$ref;
    this.raw = !formable;

    this.rawArea = h("textarea", { class: "input code-input", attrs: { id: `${this.id}-raw`, rows: 8, spellcheck: "false", "aria-describedby": `${this.id}-raw-error` }, data: { testid: "raw-arguments" } });
    this.rawArea.value = "{}";
    this.rawError = h("div", { class: "field-error", attrs: { id: `${this.id}-raw-error` } });
    this.rawBox = h("div", { class: "field" },
      h("label", { class: "field-label", attrs: { for: `${this.id}-raw` }, text: "Arguments (JSON object)" }),
      this.rawArea, this.rawError);
    this.fieldBox = h("div", { class: "fields" },
      this.fields.map((field) => this.fieldElement(field)));
    this.fieldBox.classList.toggle("fields-none", this.fields.length === 0);

    this.modeButton = h("button", { class: "btn btn-small btn-ghost", attrs: { type: "button", "aria-pressed": String(this.raw) }, on: { click: () => this.toggleMode() } });
    this.modeButton.hidden = !formable;
    this.submit = h("button", { class: "btn btn-primary", attrs: { type: "submit" }, data: { testid: "call" } });
    this.elapsed = h("span", { class: "muted small", attrs: { "aria-hidden": "true" } });
    /** Where the arguments in the form came from, when not from the reader. */
    this.origin = h("p", { class: "tryit-origin", data: { testid: "tryit-origin" } });
    this.origin.hidden = true;
    this.result = h("div", { class: "result-area", attrs: { "aria-live": "polite" }, data: { testid: "result" } });
    this.form = h("form", { class: "tryit", attrs: { novalidate: true, "aria-label": `Try ${tool.name}` } },
      this.origin, this.fieldBox, this.rawBox,
      h("div", { class: "form-actions" }, this.submit, this.elapsed, h("span", { class: "toolbar-spacer" }), this.modeButton));
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.call();
    });
    this.element = h("div", { class: "tryit-wrap" }, this.form, this.result);
    this.busy = false;
    this.renderMode();
    this.renderSubmit();
  }

  /**
   * @param {string} key
   * @param {JsonSchema} schema
   * @param {boolean} required
   * @returns {Field}
   */
  makeField(key, schema, required) {
    const kind = fieldKind(schema);
    const id = `${this.id}-${key.replace(/[^\w-]/g, "_")}`;
    const describedBy = `${id}-help ${id}-error`;
    /** @type {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} */
    let control;
    if (kind === "enum") {
      const select = h("select", { class: "input", attrs: { id, "aria-describedby": describedBy, "aria-required": required } });
      if (!required || schema.default === undefined) select.appendChild(h("option", { attrs: { value: "" }, text: required ? "Choose…" : "— not set —" }));
      (schema.enum ?? []).forEach((value, index) => select.appendChild(h("option", { attrs: { value: String(index), selected: schema.default !== undefined && value === schema.default }, text: typeof value === "string" ? value : JSON.stringify(value) })));
      control = select;
    } else if (kind === "boolean" && (required || schema.default !== undefined)) {
      control = h("input", { class: "checkbox", attrs: { id, type: "checkbox", checked: schema.default === true, "aria-describedby": describedBy } });
    } else if (kind === "boolean") {
      control = h("select", { class: "input", attrs: { id, "aria-describedby": describedBy } },
        h("option", { attrs: { value: "" }, text: "— not set —" }), h("option", { attrs: { value: "true" }, text: "true" }), h("option", { attrs: { value: "false" }, text: "false" }));
    } else if (kind === "number" || kind === "integer") {
      control = h("input", { class: "input input-number", attrs: {
        id, type: "number", step: kind === "integer" ? "1" : "any", inputmode: kind === "integer" ? "numeric" : "decimal",
        min: schema.minimum, max: schema.maximum, placeholder: schema.default !== undefined ? String(schema.default) : undefined,
        "aria-describedby": describedBy, "aria-required": required,
      } });
    } else if (kind === "string") {
      const long = (schema.maxLength ?? 0) > 200 || /text|content|body|query|prompt|message/i.test(key) && !schema.maxLength;
      const attrs = { id, placeholder: schema.default !== undefined ? String(schema.default) : schema.examples?.length ? String(schema.examples[0]) : undefined, "aria-describedby": describedBy, "aria-required": required, spellcheck: "false", autocomplete: "off" };
      control = long ? h("textarea", { class: "input", attrs: { ...attrs, rows: 2 } }) : h("input", { class: "input", attrs: { ...attrs, type: "text" } });
    } else {
      control = h("textarea", { class: "input code-input", attrs: { id, rows: 3, spellcheck: "false", placeholder: schema.default !== undefined ? JSON.stringify(schema.default) : "JSON", "aria-describedby": describedBy, "aria-required": required } });
    }
    control.dataset.field = key;
    return { key, schema, required, kind, control, error: h("div", { class: "field-error", attrs: { id: `${id}-error` } }) };
  }

  /**
   * @param {Field} field
   * @returns {HTMLElement}
   */
  fieldElement(field) {
    const id = field.control.id;
    const label = h("label", { class: "field-label", attrs: { for: id } },
      h("span", { class: "mono", text: field.key }),
      field.required ? h("span", { class: "required-mark", attrs: { title: "required" }, text: "*" }) : null,
      h("span", { class: "field-type mono", text: field.kind === "json" ? `${typeText(field.schema)} · JSON` : typeText(field.schema) }));
    const help = h("div", { class: "field-help", attrs: { id: `${id}-help` }, text: field.schema.description ?? "" });
    if (field.control instanceof HTMLInputElement && field.control.type === "checkbox") {
      return h("div", { class: "field field-check" }, h("div", { class: "check-line" }, field.control, label), help, field.error);
    }
    return h("div", { class: `field${field.kind === "json" ? " field-wide" : ""}` }, label, field.control, help, field.error);
  }

  toggleMode() {
    if (this.raw) {
      // Back to the form: fill it from the JSON, when it is an object.
      let value;
      try {
        value = JSON.parse(this.rawArea.value || "{}");
      } catch (error) {
        setText(this.rawError, `Not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
        this.rawArea.focus();
        return;
      }
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        setText(this.rawError, "The arguments must be a JSON object.");
        return;
      }
      this.fill(value);
      this.raw = false;
    } else {
      this.rawArea.value = JSON.stringify(this.collect(true), null, 2);
      this.raw = true;
    }
    setText(this.rawError, "");
    this.renderMode();
    (this.raw ? this.rawArea : this.fields[0]?.control ?? this.submit).focus();
  }

  renderMode() {
    this.fieldBox.hidden = this.raw;
    this.rawBox.hidden = !this.raw;
    this.modeButton.setAttribute("aria-pressed", String(this.raw));
    setText(this.modeButton, this.raw ? "Edit as form" : "Edit as JSON");
  }

  renderSubmit() {
    this.submit.disabled = this.busy;
    replace(this.submit, this.busy ? h("span", { class: "spinner spinner-small", attrs: { "aria-hidden": "true" } }) : null, this.busy ? "Calling…" : `Call ${this.tool.name}`);
  }

  /**
   * Fills the form from an arguments object.
   * @param {Record<string, unknown>} value
   */
  fill(value) {
    for (const field of this.fields) {
      const item = value[field.key];
      const control = field.control;
      if (control instanceof HTMLInputElement && control.type === "checkbox") {
        control.checked = item === true;
      } else if (field.kind === "enum") {
        const index = (field.schema.enum ?? []).findIndex((option) => option === item);
        control.value = index === -1 ? "" : String(index);
      } else if (item === undefined) {
        control.value = "";
      } else if (field.kind === "json") {
        control.value = JSON.stringify(item, null, 2);
      } else {
        control.value = String(item);
      }
    }
  }

  /**
   * Fills the form with the arguments of a recorded call: as fields when there is one for each
   * argument that holds a value of its kind, else as JSON (nothing is dropped or converted).
   * @param {Record<string, unknown>} args
   * @param {string} note where they come from, shown above the form
   */
  prefill(args, note) {
    const byKey = new Map(this.fields.map((field) => [field.key, field]));
    const formable = !this.modeButton.hidden;
    const fits = formable && Object.entries(args).every(([key, value]) => {
      const field = byKey.get(key);
      return field !== undefined && fitsField(field, value);
    });
    this.rawArea.value = JSON.stringify(args, null, 2);
    if (fits) this.fill(args);
    this.raw = !fits;
    setText(this.rawError, "");
    this.renderMode();
    setText(this.origin, note);
    this.origin.hidden = false;
  }

  /**
   * The arguments the form describes. Throws a FieldError (after marking the field) unless
   * `lenient`, which skips what cannot be read.
   * @param {boolean} [lenient]
   * @returns {Record<string, unknown>}
   */
  collect(lenient = false) {
    /** @type {Record<string, unknown>} */
    const args = {};
    /** @type {Field | null} */
    let firstBad = null;
    for (const field of this.fields) {
      setText(field.error, "");
      field.control.removeAttribute("aria-invalid");
      try {
        const read = readField(field);
        if (read.set) args[field.key] = read.value;
      } catch (error) {
        if (lenient) continue;
        setText(field.error, error instanceof Error ? error.message : String(error));
        field.control.setAttribute("aria-invalid", "true");
        firstBad ??= field;
      }
    }
    if (firstBad) {
      firstBad.control.focus();
      throw new FieldError(`Check ${firstBad.key}`);
    }
    return args;
  }

  async call() {
    if (this.busy) return;
    /** @type {Record<string, unknown>} */
    let args;
    try {
      if (this.raw) {
        setText(this.rawError, "");
        const value = JSON.parse(this.rawArea.value || "{}");
        if (typeof value !== "object" || value === null || Array.isArray(value)) throw new FieldError("The arguments must be a JSON object.");
        args = value;
      } else {
        args = this.collect();
      }
    } catch (error) {
      if (this.raw) {
        setText(this.rawError, error instanceof FieldError ? error.message : `Not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
        this.rawArea.setAttribute("aria-invalid", "true");
        this.rawArea.focus();
      }
      return;
    }
    this.rawArea.removeAttribute("aria-invalid");
    this.busy = true;
    this.renderSubmit();
    this.result.setAttribute("aria-busy", "true");
    const started = performance.now();
    const timer = window.setInterval(() => setText(this.elapsed, duration(performance.now() - started)), 100);
    try {
      const result = await api.callTool(this.backend, this.tool.name, args);
      replace(this.result, resultView(result, performance.now() - started));
    } catch (error) {
      replace(this.result, callError(asApiError(error), performance.now() - started));
    } finally {
      clearInterval(timer);
      setText(this.elapsed, "");
      this.busy = false;
      this.renderSubmit();
      this.result.removeAttribute("aria-busy");
    }
  }
}

/**
 * Whether the field's control can show `value` exactly as it is.
 * @param {Field} field
 * @param {unknown} value
 * @returns {boolean}
 */
function fitsField(field, value) {
  switch (field.kind) {
    case "string":
      return typeof value === "string";
    case "number":
      return typeof value === "number";
    case "integer":
      return Number.isInteger(value);
    case "boolean":
      return typeof value === "boolean";
    case "enum":
      return (field.schema.enum ?? []).includes(value);
    case "json":
      return true;
  }
}

/**
 * @param {Field} field
 * @returns {{set: false} | {set: true, value: unknown}}
 */
function readField(field) {
  const control = field.control;
  if (control instanceof HTMLInputElement && control.type === "checkbox") return { set: true, value: control.checked };
  const text = control.value;
  if (text === "" || (field.kind !== "string" && text.trim() === "")) {
    if (field.required) throw new FieldError("Required.");
    return { set: false };
  }
  switch (field.kind) {
    case "string":
      return { set: true, value: text };
    case "number":
    case "integer": {
      const value = Number(text);
      if (!Number.isFinite(value)) throw new FieldError("Not a number.");
      if (field.kind === "integer" && !Number.isInteger(value)) throw new FieldError("Must be a whole number.");
      return { set: true, value };
    }
    case "boolean":
      return { set: true, value: text === "true" };
    case "enum":
      return { set: true, value: (field.schema.enum ?? [])[Number(text)] };
    case "json":
      try {
        return { set: true, value: JSON.parse(text) };
      } catch (error) {
        throw new FieldError(`Not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
      }
  }
}

/**
 * A tool's result: its content blocks, readable, with the raw JSON a toggle away.
 * @param {ToolResult} result
 * @param {number} elapsedMs
 * @returns {HTMLElement}
 */
export function resultView(result, elapsedMs) {
  const isError = result.isError === true;
  const readable = h("div", { class: "result-blocks" },
    Array.isArray(result.content) && result.content.length > 0
      ? result.content.map((block) => contentBlock(block))
      : h("p", { class: "muted", text: "The result has no content blocks." }),
    result.structuredContent !== undefined
      ? h("div", { class: "result-block" }, h("div", { class: "block-label", text: "Structured content" }), h("pre", { class: "code", text: JSON.stringify(result.structuredContent, null, 2) }))
      : null);
  const rawText = JSON.stringify(result, null, 2);
  const raw = h("pre", { class: "code result-raw", text: rawText });
  raw.hidden = true;
  const toggle = h("button", { class: "btn btn-small btn-ghost", attrs: { type: "button", "aria-pressed": "false" }, text: "Raw JSON" });
  toggle.addEventListener("click", () => {
    const showRaw = raw.hidden;
    raw.hidden = !showRaw;
    readable.hidden = showRaw;
    toggle.setAttribute("aria-pressed", String(showRaw));
  });
  return h("section", { class: `result${isError ? " result-error" : " result-ok"}`, attrs: { "aria-label": "Result" }, data: { outcome: isError ? "tool_error" : "ok" } },
    h("div", { class: "result-head" },
      h("span", { class: `chip${isError ? " chip-bad" : " chip-good"}`, text: isError ? "Tool error" : "Result" }),
      h("span", { class: "muted small", text: duration(elapsedMs) }),
      h("span", { class: "toolbar-spacer" }),
      toggle,
      copyButton(() => rawText, "Copy the result as JSON")),
    readable, raw);
}

/**
 * @param {ContentBlock} block
 * @returns {HTMLElement}
 */
function contentBlock(block) {
  if (block.type === "text" && typeof block.text === "string") {
    return h("div", { class: "result-block" }, h("pre", { class: "result-text", text: prettyIfJson(block.text) }));
  }
  if (block.type === "image" && typeof block.data === "string") {
    const mime = typeof block.mimeType === "string" && /^image\/[\w.+-]+$/.test(block.mimeType) ? block.mimeType : "image/png";
    return h("div", { class: "result-block" }, h("div", { class: "block-label", text: `Image (${mime})` }), h("img", { class: "result-image", attrs: { src: `data:${mime};base64,${block.data}`, alt: `Image returned by the tool (${mime})` } }));
  }
  if (block.type === "audio" && typeof block.data === "string") {
    return h("div", { class: "result-block" }, h("div", { class: "block-label", text: `Audio (${String(block.mimeType ?? "unknown type")}, ${Math.round(block.data.length * 0.75)} bytes)` }));
  }
  if (block.type === "resource" && typeof block.resource === "object" && block.resource !== null) {
    const resource = /** @type {{uri?: string, mimeType?: string, text?: string, blob?: string}} */ (block.resource);
    return h("div", { class: "result-block" },
      h("div", { class: "block-label" }, "Resource ", h("code", { text: resource.uri ?? "" }), resource.mimeType ? ` (${resource.mimeType})` : ""),
      typeof resource.text === "string" ? h("pre", { class: "result-text", text: resource.text }) : h("p", { class: "muted", text: `Binary, ${Math.round((resource.blob ?? "").length * 0.75)} bytes` }));
  }
  if (block.type === "resource_link" && typeof block.uri === "string") {
    return h("div", { class: "result-block" },
      h("div", { class: "block-label" }, "Link to resource ", h("code", { text: block.uri })),
      typeof block.description === "string" ? h("p", { text: block.description }) : null);
  }
  return h("div", { class: "result-block" }, h("div", { class: "block-label", text: `Block of type ${String(block.type)}` }), h("pre", { class: "code", text: JSON.stringify(block, null, 2) }));
}

/**
 * Text that is a JSON object or array, pretty-printed; anything else as it is.
 * @param {string} text
 * @returns {string}
 */
function prettyIfJson(text) {
  const trimmed = text.trim();
  if (!(trimmed.startsWith("{") || trimmed.startsWith("["))) return text;
  try {
    return JSON.stringify(JSON.parse(trimmed), null, 2);
  } catch {
    return text;
  }
}

/**
 * @param {api.ApiError} error
 * @param {number} elapsedMs
 * @returns {HTMLElement}
 */
function callError(error, elapsedMs) {
  return h("section", { class: "result result-failed", attrs: { role: "alert", "aria-label": "Call failed" }, data: { outcome: "failed" } },
    h("div", { class: "result-head" },
      h("span", { class: "chip chip-bad", text: "Call failed" }),
      h("code", { class: "small", text: error.code }),
      h("span", { class: "muted small", text: duration(elapsedMs) })),
    h("p", { class: "result-message", text: error.message }));
}
