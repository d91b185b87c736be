// Tools: the tools tab of a backend (a list, and the selected tool's schema and "try it" form),
// and #/tools, a search across every tool of every backend.

import { h, replace, setText, copyButton, icon } from "../dom.js";
import { plural } from "../format.js";
import { schemaTable, rawSchema } from "./schema.js";
import { TryIt } from "./tryit.js";
import { highlighted } from "./history.js";
import { loading, empty, failure } from "./common.js";

/** @typedef {import('../store.js').Store} Store */
/** @typedef {import('../store.js').Change} Change */
/** @typedef {import('../types.js').Tool} Tool */
/** @typedef {import('../types.js').BackendDetail} BackendDetail */

/**
 * @param {string} backend
 * @param {string} tool
 * @returns {string}
 */
export function toolHref(backend, tool) {
  return `#/backend/${encodeURIComponent(backend)}/tools/${encodeURIComponent(tool)}`;
}

/**
 * The name editors see for a tool, when the API says.
 * @param {BackendDetail} detail
 * @param {string} tool
 * @returns {string | null}
 */
function exposedName(detail, tool) {
  return detail.exposed_tools?.[tool] ?? null;
}

/** The tools tab of one backend. */
export class ToolsTab {
  /**
   * @param {Store} store
   * @param {string} name
   * @param {string | null} selected
   */
  constructor(store, name, selected) {
    this.store = store;
    this.name = name;
    this.selected = selected;
    /** @type {{key: string, tryIt: TryIt} | null} the open form, kept across reloads of the same tool */
    this.form = null;
    this.filterInput = h("input", { class: "input input-small", attrs: { type: "search", placeholder: "Filter tools", "aria-label": "Filter this backend's tools", autocomplete: "off" } });
    this.filterInput.addEventListener("input", () => this.renderList());
    this.list = h("ul", { class: "tool-list", attrs: { "aria-label": "Tools" } });
    this.pane = h("div", { class: "tool-pane" });
    this.element = h("div", { class: "tools-layout" },
      h("div", { class: "tool-sidebar" }, this.filterInput, this.list),
      this.pane);
    this.render();
  }

  /** @param {string | null} selected */
  select(selected) {
    this.selected = selected;
    this.render();
  }

  /** @returns {Tool[]} */
  tools() {
    return this.store.details.get(this.name)?.detail?.tools ?? [];
  }

  render() {
    this.renderList();
    this.renderPane();
  }

  renderList() {
    const filter = this.filterInput.value.trim().toLowerCase();
    const tools = this.tools().filter((tool) => !filter || `${tool.name} ${tool.title ?? ""} ${tool.description ?? ""}`.toLowerCase().includes(filter));
    const current = this.current()?.name;
    replace(this.list, tools.length === 0
      ? h("li", { class: "muted small tool-list-empty", text: this.tools().length === 0 ? "No tools" : "No match" })
      : tools.map((tool) => h("li", {},
        h("a", { class: "tool-link", attrs: { href: toolHref(this.name, tool.name), "aria-current": tool.name === current ? "page" : false } },
          h("span", { class: "mono tool-link-name" }, highlighted(tool.name, filter)),
          tool.description ? h("span", { class: "tool-link-desc", text: firstSentence(tool.description) }) : null))));
  }

  /** @returns {Tool | undefined} */
  current() {
    const tools = this.tools();
    return tools.find((tool) => tool.name === this.selected) ?? (this.selected === null ? tools[0] : undefined);
  }

  renderPane() {
    const entry = this.store.details.get(this.name);
    const detail = entry?.detail;
    if (!detail) {
      replace(this.pane, entry?.load.status === "error" ? failure("Could not load the tools", entry.load.error, () => void this.store.loadDetail(this.name)) : loading("Loading tools…"));
      return;
    }
    const tool = this.current();
    if (!tool) {
      this.form = null;
      replace(this.pane, this.tools().length === 0
        ? empty("No tools", detail.state === "ready" ? "This server lists no tools." : "The server lists its tools once it is ready.")
        : empty(`No tool named ${this.selected}`, "It may have been removed from the server's list."));
      return;
    }
    const key = JSON.stringify(tool);
    if (this.form?.key !== key) {
      this.form = { key, tryIt: new TryIt(this.name, tool) };
      // A recorded call opened from the activity page.
      const prefill = this.store.takePrefill(this.name, tool.name);
      if (prefill) this.form.tryIt.prefill(prefill.args, prefill.note);
    } else if (this.pane.contains(this.form.tryIt.element)) return; // same tool, nothing to redraw
    const exposed = exposedName(detail, tool.name);
    const hints = annotationTags(tool);
    replace(this.pane, h("article", { class: "tool-detail", data: { tool: tool.name } },
      h("header", { class: "tool-head" },
        h("h2", { class: "mono tool-title", text: tool.name }),
        tool.title && tool.title !== tool.name ? h("span", { class: "muted", text: tool.title }) : null,
        exposed
          ? h("div", { class: "exposed" }, h("span", { class: "muted small", text: "Editors see it as" }), h("code", { text: exposed }), copyButton(() => exposed, `Copy the exposed name ${exposed}`))
          : h("div", { class: "exposed not-offered", data: { testid: "not-offered" } }, h("span", { class: "muted small", text: "Not offered to editors: the server's tools_allow or tools_deny leaves it out. Try it still calls it." }))),
      tool.description ? h("p", { class: "tool-description", text: tool.description }) : null,
      hints.length > 0 ? h("div", { class: "tags" }, hints) : null,
      h("section", { class: "section", attrs: { "aria-label": "Arguments" } },
        h("h3", { class: "section-title", text: "Arguments" }),
        schemaTable(tool.inputSchema),
        rawSchema(tool.inputSchema ?? {}, "Raw input schema"),
        tool.outputSchema ? rawSchema(tool.outputSchema, "Output schema") : null),
      h("section", { class: "section", attrs: { "aria-label": "Try it" } },
        h("h3", { class: "section-title", text: "Try it" }),
        this.form.tryIt.element)));
  }
}

/**
 * @param {Tool} tool
 * @returns {HTMLElement[]}
 */
function annotationTags(tool) {
  const hints = tool.annotations ?? {};
  const tags = [];
  if (hints.readOnlyHint) tags.push(h("span", { class: "tag", text: "read-only" }));
  if (hints.destructiveHint) tags.push(h("span", { class: "tag tag-warn", text: "destructive" }));
  if (hints.idempotentHint) tags.push(h("span", { class: "tag", text: "idempotent" }));
  if (hints.openWorldHint) tags.push(h("span", { class: "tag", text: "open world" }));
  return tags;
}

/**
 * @param {string} text
 * @returns {string}
 */
function firstSentence(text) {
  const line = text.split("\n")[0];
  const end = line.search(/\.\s/);
  return end === -1 ? line : line.slice(0, end + 1);
}

/** #/tools?q= — every tool of every backend, searched by name and description. */
export class SearchView {
  /**
   * @param {Store} store
   * @param {HTMLElement} root
   * @param {string} query
   */
  constructor(store, root, query) {
    this.store = store;
    this.root = root;
    this.heading = h("h1", { text: "Tools", attrs: { tabindex: "-1" } });
    this.summary = h("p", { class: "page-sub", attrs: { "aria-live": "polite" } });
    this.input = h("input", { class: "input input-search", attrs: { type: "search", placeholder: "Search tools by name or description", "aria-label": "Search tools of all backends", autocomplete: "off", spellcheck: "false" }, data: { testid: "tool-search" } });
    this.input.value = query;
    this.input.addEventListener("input", () => {
      const value = this.input.value;
      history.replaceState(null, "", value ? `#/tools?q=${encodeURIComponent(value)}` : "#/tools");
      this.renderResults();
    });
    this.results = h("div", { class: "page-body" });
    replace(root,
      h("header", { class: "page-head" }, h("div", {}, this.heading, this.summary)),
      h("div", { class: "search-bar" }, icon("search"), this.input),
      this.results);
    this.unsubscribe = store.subscribe((change) => {
      if (change.kind === "list") void store.loadAllDetails();
      if (change.kind === "detail" || change.kind === "list") this.renderResults();
    });
    this.renderResults();
    void store.loadAllDetails();
  }

  focusInput() {
    this.input.focus();
  }

  renderResults() {
    const { store } = this;
    const names = store.order;
    const loaded = names.filter((name) => store.details.get(name)?.detail);
    const failed = names.filter((name) => store.details.get(name)?.load.status === "error");
    if (names.length === 0 && store.listLoad.status !== "ready") {
      replace(this.results, loading("Loading backends…"));
      return;
    }
    if (loaded.length === 0 && failed.length === 0 && names.length > 0) {
      replace(this.results, loading("Loading the tools of every backend…"));
      return;
    }
    const terms = this.input.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    /** @type {{backend: string, tool: Tool, exposed: string | null, score: number}[]} */
    const matches = [];
    let total = 0;
    for (const name of loaded) {
      const detail = /** @type {BackendDetail} */ (store.details.get(name)?.detail);
      for (const tool of detail.tools) {
        total += 1;
        const exposed = exposedName(detail, tool.name);
        const haystack = `${name} ${tool.name} ${exposed ?? ""} ${tool.title ?? ""} ${tool.description ?? ""}`.toLowerCase();
        if (!terms.every((term) => haystack.includes(term))) continue;
        const inName = terms.filter((term) => `${tool.name} ${exposed ?? ""}`.toLowerCase().includes(term)).length;
        matches.push({ backend: name, tool, exposed, score: inName });
      }
    }
    matches.sort((a, b) => b.score - a.score || a.tool.name.localeCompare(b.tool.name));
    setText(this.summary, terms.length === 0
      ? `${plural(total, "tool")} across ${plural(loaded.length, "backend")}`
      : `${plural(matches.length, "match", "matches")} among ${plural(total, "tool")}`);
    const problems = failed.length > 0 ? h("p", { class: "notice notice-warn", text: `Could not load the tools of ${failed.join(", ")}.` }) : null;
    if (matches.length === 0) {
      replace(this.results, problems, empty(terms.length ? "No tool matches" : "No tools", terms.length ? "Try fewer or shorter words; names, exposed names and descriptions are searched." : "None of the backends lists a tool yet."));
      return;
    }
    const needle = terms.length === 1 ? terms[0] : "";
    replace(this.results, problems, h("div", { class: "card table-card" }, h("table", { class: "table search-table" },
      h("thead", {}, h("tr", {},
        h("th", { attrs: { scope: "col" }, text: "Tool" }),
        h("th", { attrs: { scope: "col" }, text: "Backend" }),
        h("th", { attrs: { scope: "col" }, text: "Description" }))),
      h("tbody", {}, matches.map((match) => h("tr", { data: { backend: match.backend, tool: match.tool.name } },
        h("th", { attrs: { scope: "row" } },
          h("a", { class: "mono", attrs: { href: toolHref(match.backend, match.tool.name) } }, highlighted(match.tool.name, needle)),
          match.exposed && match.exposed !== match.tool.name ? h("div", { class: "muted small mono", text: match.exposed }) : null),
        h("td", {}, h("a", { class: "muted", attrs: { href: `#/backend/${encodeURIComponent(match.backend)}` }, text: match.backend })),
        h("td", { class: "clamp" }, highlighted(match.tool.description ?? "", needle))))))));
  }

  destroy() {
    this.unsubscribe();
  }
}
