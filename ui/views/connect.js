// #/connect — moving each editor's own servers over to Switchboard (moving.js: what a move does
// to each entry, the diffs, the move and its undo), then how to point each editor at Switchboard:
// the snippet to paste, or a button that writes it into the editor's config.

import { h, replace, copyButton, icon } from "../dom.js";
import * as api from "../api.js";
import { asApiError } from "../store.js";
import { loading, empty, failure, toast } from "./common.js";
import { MoveCards } from "./moving.js";

/** @typedef {import('../types.js').ClientSnippet} ClientSnippet */

export class ConnectView {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
    this.heading = h("h1", { text: "Connect an editor", attrs: { tabindex: "-1" } });
    this.body = h("div", { class: "page-body" });
    const movesRoot = h("div", { class: "move-root" });
    replace(root,
      h("header", { class: "page-head" }, h("div", {}, this.heading,
        h("p", { class: "page-sub", text: "Every editor shares the same running servers. Move an editor's own servers over, or paste a snippet into the editor's config, then restart the editor or reload its MCP servers." }))),
      h("section", { class: "connect-section", attrs: { "aria-labelledby": "moves-title" } },
        h("h2", { class: "connect-section-title", attrs: { id: "moves-title" }, text: "Move your servers over" }),
        h("p", { class: "connect-section-sub muted", text: "Servers an editor runs on its own become Switchboard's: they leave the editor's file, and the editor gets one entry for Switchboard instead. The file is backed up first; Undo puts it back." }),
        movesRoot),
      h("section", { class: "connect-section", attrs: { "aria-labelledby": "snippets-title" } },
        h("h2", { class: "connect-section-title", attrs: { id: "snippets-title" }, text: "Point an editor at Switchboard" }),
        this.body));
    this.moves = new MoveCards(movesRoot);
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

  destroy() {
    this.moves.destroy();
  }
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
      h("span", { class: `chip chip-${client.transport}`, text: client.transport === "stdio" ? "stdio" : "HTTP" }),
      client.detected ? h("span", { class: "chip chip-detected", data: { testid: "detected" }, text: "on this machine" }) : null),
    h("p", { class: "client-hint" },
      h("span", { class: "muted", text: "Add to " }),
      h("code", { text: client.config_path_hint })),
    h("div", { class: "snippet" },
      h("pre", { class: "code", attrs: { tabindex: "0", "aria-label": `Snippet for ${client.title}` }, text: client.snippet }),
      h("div", { class: "snippet-copy" }, copyButton(() => client.snippet, `Copy the snippet for ${client.title}`))),
    installControl(client));
}

/**
 * A button that writes the snippet into the editor's config (the API keeps a backup), and the
 * API's account of what it did.
 * @param {ClientSnippet} client
 * @returns {HTMLElement}
 */
function installControl(client) {
  const result = h("p", { class: "install-result", attrs: { role: "status" } });
  const label = h("span", { class: "btn-text", text: `Install into ${client.title}` });
  const button = h("button", { class: "btn btn-small btn-accent", attrs: { type: "button" } }, icon("plug"), label);
  button.addEventListener("click", async () => {
    button.disabled = true;
    button.classList.add("is-busy");
    label.textContent = "Installing…";
    delete result.dataset.outcome;
    result.textContent = "";
    try {
      const installed = await api.installClient(client.id);
      result.dataset.outcome = installed.outcome.kind;
      result.textContent = installed.message;
    } catch (error) {
      const apiError = asApiError(error);
      result.dataset.outcome = "error";
      result.textContent = apiError.message;
      toast(`Could not install into ${client.title}`, apiError.message, "error");
    } finally {
      button.disabled = false;
      button.classList.remove("is-busy");
      label.textContent = `Install into ${client.title}`;
    }
  });
  return h("div", { class: "client-install" },
    h("div", { class: "client-install-row" },
      button,
      h("span", { class: "muted", text: "or let Switchboard add it; the file is backed up first." })),
    result);
}
