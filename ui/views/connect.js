// #/connect — how to point each editor at Switchboard, with the snippet to paste.

import { h, replace, copyButton } from "../dom.js";
import * as api from "../api.js";
import { asApiError } from "../store.js";
import { loading, empty, failure } from "./common.js";

/** @typedef {import('../types.js').ClientSnippet} ClientSnippet */

export class ConnectView {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
    this.heading = h("h1", { text: "Connect an editor", attrs: { tabindex: "-1" } });
    this.body = h("div", { class: "page-body" });
    replace(root,
      h("header", { class: "page-head" }, h("div", {}, this.heading,
        h("p", { class: "page-sub", text: "Every editor shares the same running servers. Paste one of these into the editor's config, then restart the editor or reload its MCP servers." }))),
      this.body);
    void this.load();
  }

  async load() {
    replace(this.body, loading("Loading editor snippets…"));
    /** @type {ClientSnippet[]} */
    let clients;
    try {
      clients = await api.listClients();
    } catch (error) {
      replace(this.body, failure("Could not load the editor snippets", asApiError(error), () => void this.load()));
      return;
    }
    if (clients.length === 0) {
      replace(this.body, empty("No editors to show", "The API lists no client snippets."));
      return;
    }
    replace(this.body, h("div", { class: "client-grid" }, clients.map((client) => clientCard(client))));
  }

  destroy() {}
}

/**
 * @param {ClientSnippet} client
 * @returns {HTMLElement}
 */
function clientCard(client) {
  const titleId = `client-${client.id.replace(/[^\w-]/g, "_")}`;
  return h("section", { class: "card client-card", data: { client: client.id }, attrs: { "aria-labelledby": titleId } },
    h("div", { class: "card-head" },
      h("h2", { class: "card-title", attrs: { id: titleId }, text: client.title }),
      h("span", { class: `chip chip-${client.transport}`, text: client.transport === "stdio" ? "stdio" : "HTTP" })),
    h("p", { class: "client-hint" },
      h("span", { class: "muted", text: "Add to " }),
      h("code", { text: client.config_path_hint })),
    h("div", { class: "snippet" },
      h("pre", { class: "code", attrs: { tabindex: "0", "aria-label": `Snippet for ${client.title}` }, text: client.snippet }),
      h("div", { class: "snippet-copy" }, copyButton(() => client.snippet, `Copy the snippet for ${client.title}`))));
}
