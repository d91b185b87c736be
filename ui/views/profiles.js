// #/profiles — each profile: what its tool list costs a client on every turn (tools, bytes,
// estimated tokens, per server and per tool), the client limits it passes, and switches that turn
// a server or a tool on or off for it. A switch edits the config file, which stays the one truth;
// the page then shows the profile as Switchboard serves it.

import { h, replace } from "../dom.js";
import * as api from "../api.js";
import { asApiError } from "../store.js";
import { loading, empty, failure, toast } from "./common.js";
import { reloadSummary } from "../format.js";

/** @typedef {import('../types.js').ProfileBudget} ProfileBudget */

/** How long a switch waits for the reloaded profile to show the change. */
const SETTLE_MS = 3000;

export class ProfilesView {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
    this.heading = h("h1", { text: "Profiles", attrs: { tabindex: "-1" } });
    this.body = h("div", { class: "page-body" });
    replace(root,
      h("header", { class: "page-head" }, h("div", {}, this.heading,
        h("p", { class: "page-sub", text: "Every tool's definition is sent to the model on every turn. Each profile is a view of the servers for some editors, at /mcp/NAME or with connect --profile NAME; /mcp serves the default one." }))),
      this.body);
    this.alive = true;
    void this.load();
  }

  async load() {
    replace(this.body, loading("Loading profiles…"));
    /** @type {ProfileBudget[]} */
    let budgets;
    try {
      budgets = await api.listProfiles();
    } catch (error) {
      replace(this.body, failure("Could not load the profiles", asApiError(error), () => void this.load()));
      return;
    }
    this.render(budgets);
  }

  /** @param {ProfileBudget[]} budgets */
  render(budgets) {
    if (!this.alive) return;
    if (budgets.length === 0) {
      replace(this.body, empty("No profiles", "The API lists none."));
      return;
    }
    replace(this.body, h("div", { class: "profiles" }, budgets.map((budget) => this.card(budget))));
  }

  /**
   * @param {ProfileBudget} budget
   * @returns {HTMLElement}
   */
  card(budget) {
    const titleId = `profile-${budget.profile.replace(/[^\w-]/g, "_")}`;
    const path = budget.profile === "default" ? "/mcp" : `/mcp/${budget.profile}`;
    const fmt = new Intl.NumberFormat();
    const servers = budget.server_switches.map((server) => {
      const cost = budget.servers.find((each) => each.server === server.name);
      return h("li", { class: "profile-server" },
        this.switchControl(budget.profile, { server: server.name }, server.on, `Offer ${server.name} in ${budget.profile}`),
        h("span", { class: "profile-server-name", text: server.name }),
        h("span", { class: "muted", text: cost ? `${cost.tools} tools · ~${fmt.format(cost.tokens)} tokens` : server.on ? "no tools listed" : "off" }));
    });
    const rows = [
      ...budget.tool_costs.map((tool) => ({ ...tool, on: true })),
      ...budget.filtered_out.map((tool) => ({ name: tool.name, server: tool.server ?? "", original: tool.original ?? "", bytes: 0, tokens: 0, on: false })),
    ];
    return h("section", { class: "card profile-card", data: { profile: budget.profile }, attrs: { "aria-labelledby": titleId } },
      h("div", { class: "card-head" },
        h("h2", { class: "card-title", attrs: { id: titleId }, text: budget.profile }),
        h("code", { class: "muted", text: path })),
      h("p", { class: "profile-total", data: { testid: "total" } },
        h("strong", { text: `${budget.tools} tools` }),
        ` · ${fmt.format(budget.bytes)} bytes · about ${fmt.format(budget.tokens)} tokens on every turn`),
      [...budget.warnings, ...budget.client_warnings.map((warning) => warning.message)]
        .map((warning) => h("p", { class: "profile-warning", attrs: { role: "note" }, text: warning })),
      budget.unmatched.map((pattern) => h("p", { class: "profile-warning", text: `\`${pattern.glob}\` (line ${pattern.line}, column ${pattern.column}) matches no tool` })),
      h("h3", { class: "profile-sub", text: "Servers" }),
      h("ul", { class: "profile-servers" }, servers),
      h("h3", { class: "profile-sub", text: "Tools" }),
      rows.length === 0 ? h("p", { class: "muted", text: "No tools." }) :
        h("table", { class: "table profile-tools" },
          h("thead", {}, h("tr", {},
            h("th", { attrs: { scope: "col" }, text: "On" }),
            h("th", { attrs: { scope: "col" }, text: "Exposed name" }),
            h("th", { attrs: { scope: "col" }, text: "Server's name" }),
            h("th", { class: "num", attrs: { scope: "col" }, text: "Tokens" }))),
          h("tbody", {}, rows.map((tool) => h("tr", { data: { tool: tool.name } },
            h("td", {}, this.switchControl(budget.profile, { tool: tool.name }, tool.on, `Offer ${tool.name} in ${budget.profile}`)),
            h("th", { attrs: { scope: "row" } }, h("code", { text: tool.name })),
            h("td", {}, h("span", { class: "muted", text: `${tool.server} · ` }), h("code", { text: tool.original })),
            h("td", { class: "num", text: tool.on ? fmt.format(tool.tokens) : "—" }))))));
  }

  /**
   * A checkbox that turns `target` on or off for `profile`.
   * @param {string} profile
   * @param {{server: string} | {tool: string}} target
   * @param {boolean} on
   * @param {string} label
   * @returns {HTMLInputElement}
   */
  switchControl(profile, target, on, label) {
    const box = /** @type {HTMLInputElement} */ (h("input", { class: "profile-switch", attrs: { type: "checkbox", "aria-label": label } }));
    box.checked = on;
    box.addEventListener("change", async () => {
      box.disabled = true;
      const wanted = box.checked;
      try {
        const outcome = await api.switchInProfile(profile, { ...target, on: wanted });
        const summary = reloadSummary(outcome);
        if (!summary.applied) throw new Error(`The change was not applied: ${summary.text}`);
        await this.settle(profile, target, wanted);
        // Applied; what the file still leaves out is worth a word, as the API says it.
        if (summary.leftOut) toast(`${profile} changed`, outcome.message);
      } catch (error) {
        box.checked = !wanted;
        box.disabled = false;
        toast(`Could not change ${profile}`, asApiError(error).message, "error");
      }
    });
    return box;
  }

  /**
   * Waits until the profile as served shows the change (the catalogs are rebuilt just after a
   * reload), then shows it.
   * @param {string} profile
   * @param {{server: string} | {tool: string}} target
   * @param {boolean} wanted
   */
  async settle(profile, target, wanted) {
    const deadline = Date.now() + SETTLE_MS;
    for (;;) {
      const budgets = await api.listProfiles();
      const budget = budgets.find((each) => each.profile === profile);
      const shows = budget !== undefined && ("server" in target
        ? budget.server_switches.some((server) => server.name === target.server && server.on === wanted)
        : budget.tool_costs.some((tool) => tool.name === target.tool) === wanted);
      if (shows || Date.now() > deadline) {
        this.render(budgets);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  destroy() {
    this.alive = false;
  }
}
