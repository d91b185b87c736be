// JSON Schemas made readable: a table of properties (nested ones indented under their parent)
// with type, constraints, whether each is required, its default and its description.

import { h } from "../dom.js";

/** @typedef {import('../types.js').JsonSchema} JsonSchema */

/** Deeper levels are left to the raw schema. */
const MAX_DEPTH = 4;

/**
 * A short description of a schema's type: "string", "integer ≥ 1", "array of string",
 * "\"a\" | \"b\"", "string | null".
 * @param {JsonSchema | boolean | undefined} schema
 * @returns {string}
 */
export function typeText(schema) {
  if (schema === undefined || schema === true) return "any";
  if (schema === false) return "never";
  if (schema.enum) return schema.enum.map((value) => JSON.stringify(value)).join(" | ");
  if ("const" in schema) return `= ${JSON.stringify(schema.const)}`;
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return variants.map((variant) => typeText(variant)).join(" | ");
  if (schema.allOf) return schema.allOf.map((part) => typeText(part)).join(" & ");
  if (schema.$ref) return schema.$ref.replace(/^#\/(\$defs|definitions)\//, "");
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  const text = types.map((type) => {
    if (type === "array") {
      const items = Array.isArray(schema.items) ? "tuple" : typeText(schema.items);
      return items === "any" ? "array" : `array of ${items}`;
    }
    return type;
  }).join(" | ") || (schema.properties ? "object" : "any");
  return [text, ...constraints(schema)].join(" ");
}

/**
 * @param {JsonSchema} schema
 * @returns {string[]}
 */
function constraints(schema) {
  const parts = [];
  if (schema.format) parts.push(`(${schema.format})`);
  if (schema.minimum !== undefined) parts.push(`≥ ${schema.minimum}`);
  if (schema.exclusiveMinimum !== undefined) parts.push(`> ${schema.exclusiveMinimum}`);
  if (schema.maximum !== undefined) parts.push(`≤ ${schema.maximum}`);
  if (schema.exclusiveMaximum !== undefined) parts.push(`< ${schema.exclusiveMaximum}`);
  if (schema.minLength !== undefined || schema.maxLength !== undefined) {
    parts.push(`length ${schema.minLength ?? 0}…${schema.maxLength ?? "∞"}`);
  }
  if (schema.pattern) parts.push(`/${schema.pattern}/`);
  return parts;
}

/**
 * @typedef {object} PropertyRow
 * @property {string} path dotted path, "items[]" for array items
 * @property {number} depth
 * @property {JsonSchema} schema
 * @property {boolean} required
 */

/**
 * The properties of an object schema, nested ones after their parent.
 * @param {JsonSchema} schema
 * @returns {PropertyRow[]}
 */
export function propertyRows(schema) {
  /** @type {PropertyRow[]} */
  const rows = [];
  /**
   * @param {JsonSchema} object
   * @param {string} prefix
   * @param {number} depth
   */
  const walk = (object, prefix, depth) => {
    const required = new Set(object.required ?? []);
    for (const [key, property] of Object.entries(object.properties ?? {})) {
      if (typeof property !== "object" || property === null) continue;
      const path = prefix ? `${prefix}.${key}` : key;
      rows.push({ path, depth, schema: property, required: required.has(key) });
      if (depth + 1 >= MAX_DEPTH) continue;
      if (property.properties) walk(property, path, depth + 1);
      const items = property.items;
      if (items && !Array.isArray(items) && items.properties) walk(items, `${path}[]`, depth + 1);
    }
  };
  walk(schema, "", 0);
  return rows;
}

/**
 * The input schema of a tool as a table, or a note when it takes no arguments.
 * @param {JsonSchema | undefined} schema
 * @returns {HTMLElement}
 */
export function schemaTable(schema) {
  const rows = schema ? propertyRows(schema) : [];
  if (rows.length === 0) {
    const open = !schema || (!schema.anyOf && !schema.oneOf && !schema.allOf && !schema.$ref);
    return h("p", { class: "muted", text: open ? "Takes no arguments." : "The schema has no plain properties; see the raw schema." });
  }
  return h("table", { class: "table schema-table" },
    h("thead", {}, h("tr", {},
      h("th", { attrs: { scope: "col" }, text: "Argument" }),
      h("th", { attrs: { scope: "col" }, text: "Type" }),
      h("th", { attrs: { scope: "col" }, text: "Description" }))),
    h("tbody", {}, rows.map((row) => h("tr", { data: { property: row.path } },
      h("th", { attrs: { scope: "row" }, class: "schema-name" },
        h("span", { class: "mono schema-key", data: { depth: String(row.depth) } }, row.path.split(".").pop() ?? row.path),
        row.required ? h("span", { class: "tag tag-required", text: "required" }) : null),
      h("td", { class: "mono schema-type", text: typeText(row.schema) }),
      h("td", { class: "schema-description" },
        row.schema.description ? h("span", { text: row.schema.description }) : h("span", { class: "muted", text: "—" }),
        row.schema.default !== undefined ? h("div", { class: "muted small" }, "Default: ", h("code", { text: JSON.stringify(row.schema.default) })) : null,
        row.schema.examples?.length ? h("div", { class: "muted small" }, "Example: ", h("code", { text: JSON.stringify(row.schema.examples[0]) })) : null)))));
}

/**
 * The schema as pretty JSON in a <details>.
 * @param {unknown} schema
 * @param {string} label
 * @returns {HTMLElement}
 */
export function rawSchema(schema, label) {
  return h("details", { class: "raw" }, h("summary", { text: label }), h("pre", { class: "code", text: JSON.stringify(schema, null, 2) }));
}
