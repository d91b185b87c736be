// #/backend/NAME[/TAB[/TOOL]] — one backend: its status and actions on top, then tabs for the
// overview, the restart history, the live output and the tools. A remote server waiting for a
// sign-in says so with a "Sign in" button; a ready one can be signed out of. A server added from
// a registry says which entry it is and offers its source's newer version; any server can be
// removed from the config, after a confirmation on the page that asks which of its secrets go too.

import { h, icon, replace, setText, announce } from "../dom.js";
import { plural, commandLine } from "../format.js";
import { stateBadge, stateNote, actionButtons, signInButton, signInOpenedNote, updateOffer, confirmAction, everySecond, loading, failure, empty, toast, uptimeText } from "./common.js";
import { historyTimeline, logBlock } from "./history.js";
import { OutputPanel } from "./output.js";
import { ToolsTab } from "./tools.js";

/** @typedef {import('../store.js').Store} Store */
/** @typedef {import('../store.js').Change} Change */
/** @typedef {import('../types.js').BackendDetail} BackendDetail */
/** @typedef {import('../types.js').BackendConfigView} BackendConfigView */
/** @typedef {import('../types.js').SandboxView} SandboxView */
/** @typedef {import('../types.js').RemoteTransport} RemoteTransport */
/** @typedef {import('../types.js').InstalledServer} InstalledServer */
/** @typedef {"overview" | "history" | "output" | "tools"} Tab */

/** @type {{tab: Tab, label: string}[]} */
const TABS = [
  { tab: "overview", label: "Overview" },
  { tab: "history", label: "History" },
  { tab: "output", label: "Output" },
  { tab: "tools", label: "Tools" },
];

/** @type {Record<SandboxView["enforcement"], string>} */
const ENFORCEMENT_LABELS = {
  enforced: "Enforced",
  partial: "Partly enforced",
  unenforced: "Not enforced",
  refused: "Cannot be enforced here: the server does not start",
};

/** @type {Record<RemoteTransport, string>} */
const TRANSPORT_LABELS = {
  auto: "auto (Streamable HTTP, else HTTP+SSE)",
  "streamable-http": "Streamable HTTP",
  sse: "HTTP+SSE (MCP 2024-11-05)",
};

export class BackendView {
  /**
   * @param {Store} store
   * @param {HTMLElement} root
   * @param {string} name
   * @param {Tab} tab
   * @param {string | null} tool
   */
  constructor(store, root, name, tab, tool) {
    this.store = store;
    this.root = root;
    this.name = name;
    /** @type {Tab} */
    this.tab = tab;
    this.tool = tool;
    /** @type {OutputPanel | null} */
    this.output = null;
    /** @type {ToolsTab | null} */
    this.tools = null;
    /** @type {string | null} the newest history entry drawn so far */
    this.newestSeen = null;
    /** @type {HTMLElement} */
    this.factList = h("dl");
    /** @type {HTMLElement} */
    this.tabNav = h("nav");

    this.badge = stateBadge();
    this.note = h("span", { class: "state-note" });
    this.heading = h("h1", { class: "backend-title", attrs: { tabindex: "-1" } }, h("span", { class: "mono", text: name }));
    this.facts = {
      pid: h("dd", { class: "mono", data: { fact: "pid" } }),
      uptime: h("dd", { class: "mono", data: { fact: "uptime" } }),
      restarts: h("dd", { data: { fact: "restarts" } }),
      tools: h("dd", { data: { fact: "tools" } }),
      version: h("dd", { class: "mono", data: { fact: "version" } }),
      server: h("dd", { data: { fact: "server" } }),
    };
    this.offer = updateOffer(store, name);
    /** @type {string | null} the registry entry the Process card names */
    this.entryShown = null;
    this.removeButton = h("button", {
      class: "btn btn-small btn-delete",
      data: { action: "remove" },
      attrs: { type: "button", "aria-label": `Remove ${name}…`, "aria-expanded": "false", "aria-controls": "remove-confirm" },
      on: { click: () => void this.askRemove() },
    }, icon("trash"), h("span", { class: "btn-text", text: "Remove…" }));
    this.removePanel = h("section", { class: "notice remove-confirm", data: { testid: "remove-confirm" }, attrs: { id: "remove-confirm", "aria-labelledby": "remove-title" } });
    this.removePanel.hidden = true;
    /** @type {HTMLElement | null} the question's heading, while it is asked */
    this.removeTitle = null;
    this.removePanel.addEventListener("keydown", (event) => {
      if (event.key === "Escape") this.closeRemove();
    });
    this.actions = actionButtons(store, name);
    this.signOutButton = h("button", {
      class: "btn btn-small btn-sign-out",
      data: { action: "sign-out" },
      attrs: { type: "button", "aria-label": `Sign out of ${name}` },
      on: { click: () => void this.signOut() },
    }, icon("signOut"), h("span", { class: "btn-text", text: "Sign out" }));
    this.alert = h("div", { class: "notice notice-error", attrs: { role: "alert" } });
    this.alert.hidden = true;
    this.signIn = signInButton(store, name, (url) => replace(this.signInNote, signInOpenedNote(name, url)));
    this.signInReason = h("p", { class: "sign-in-reason" });
    this.signInNote = h("p", { class: "sign-in-note" });
    this.signInCallout = h("section", { class: "notice sign-in-callout", data: { testid: "sign-in" }, attrs: { "aria-labelledby": "sign-in-title" } },
      h("div", { class: "sign-in-body" },
        h("h2", { class: "sign-in-title", attrs: { id: "sign-in-title" } }, icon("key"), `${name} needs a sign-in`),
        this.signInReason,
        this.signInNote),
      this.signIn.element);
    this.signInCallout.hidden = true;
    this.tabLinks = TABS.map(({ tab: each, label }) => h("a", { class: "tab", data: { tab: each }, attrs: { href: `#/backend/${encodeURIComponent(name)}${each === "overview" ? "" : `/${each}`}` } }, label, h("span", { class: "tab-count" })));
    this.panel = h("div", { class: "tab-panel" });
    replace(root,
      h("header", { class: "page-head backend-head" },
        h("div", { class: "backend-head-main" },
          h("nav", { class: "crumbs", attrs: { "aria-label": "Breadcrumb" } }, h("a", { attrs: { href: "#/" }, text: "Backends" }), h("span", { attrs: { "aria-hidden": "true" }, text: " / " })),
          h("div", { class: "title-line" }, this.heading, this.badge.element, this.note),
          this.factList = h("dl", { class: "facts" },
            this.pidFact = h("div", {}, h("dt", { text: "PID" }), this.facts.pid),
            h("div", {}, h("dt", { text: "Uptime" }), this.facts.uptime),
            h("div", {}, h("dt", { text: "Restarts" }), this.facts.restarts),
            h("div", {}, h("dt", { text: "Tools" }), this.facts.tools),
            this.versionFact = h("div", {}, h("dt", { text: "Version" }), this.facts.version),
            h("div", { class: "fact-wide" }, h("dt", { text: "Server" }), this.facts.server)),
          this.offer.element),
        h("div", { class: "head-actions" }, this.actions.element, this.signOutButton, this.removeButton)),
      this.removePanel,
      this.alert,
      this.signInCallout,
      this.tabNav = h("nav", { class: "tabs", attrs: { "aria-label": `${name} sections` } }, this.tabLinks),
      this.panel);

    this.unsubscribe = store.subscribe((change) => this.onChange(change));
    this.stopTicking = everySecond(() => this.tick());
    store.watched = name;
    this.renderSummary();
    this.renderDetailFacts();
    this.renderTab();
    void store.loadDetail(name);
    void store.loadInstalled();
  }

  /**
   * Moves to another tab (or tool) of the same backend without rebuilding the page.
   * @param {Tab} tab
   * @param {string | null} tool
   */
  route(tab, tool) {
    const sameTab = tab === this.tab;
    this.tab = tab;
    this.tool = tool;
    if (sameTab && tab === "tools" && this.tools) {
      this.tools.select(tool);
      return;
    }
    this.renderTab();
  }

  /** @param {Change} change */
  onChange(change) {
    if (change.kind === "summary" && change.name === this.name) this.renderSummary();
    else if (change.kind === "action" && change.name === this.name) this.updateActions();
    else if (change.kind === "detail" && change.name === this.name) {
      // Whether it is a remote server is known from the detail on.
      this.renderSummary();
      this.renderDetailFacts();
      if (this.tab === "tools") this.tools?.render();
      else if (this.tab !== "output") this.renderTab();
    } else if (change.kind === "list" && !this.store.summaries.has(this.name) && this.store.listLoad.status === "ready") {
      this.renderTab();
      this.renderSummary();
    } else if (change.kind === "installed") {
      this.offer.update();
      // The Process card names the registry entry: drawn again only when that changes, so that
      // what the page shows stays put while a background read comes back.
      const entry = this.store.installed?.get(this.name)?.entry ?? null;
      if (this.tab === "overview" && entry !== this.entryShown) this.renderTab();
    }
  }

  tick() {
    setText(this.facts.uptime, uptimeText(this.store, this.name));
    const summary = this.store.summaries.get(this.name)?.summary;
    if (summary) setText(this.note, stateNote(summary));
  }

  renderSummary() {
    const summary = this.store.summaries.get(this.name)?.summary;
    // A name the API does not know gets no facts, actions or tabs, only the note saying so.
    for (const part of [this.badge.element, this.factList, this.actions.element, this.removeButton, this.tabNav]) part.hidden = !summary;
    if (!summary) {
      this.signOutButton.hidden = true;
      this.signInCallout.hidden = true;
      this.offer.element.hidden = true;
      this.closeRemove();
      return;
    }
    const remote = this.store.isRemote(this.name);
    this.badge.update(summary.state, remote);
    // A remote server has no process.
    this.pidFact.hidden = remote;
    setText(this.facts.pid, summary.pid === null ? "—" : String(summary.pid));
    setText(this.facts.restarts, String(summary.restarts));
    setText(this.facts.tools, String(summary.tools));
    this.versionFact.hidden = !summary.version;
    setText(this.facts.version, summary.version ?? "");
    const needsSignIn = summary.actions.includes("sign_in");
    // Each wait for a sign-in starts with what the button will do.
    if (this.signInCallout.hidden && needsSignIn) setText(this.signInNote, `Sign in opens the server's sign-in page in a new tab. When you are done there, your browser comes back to Switchboard and ${this.name} connects on its own.`);
    this.signInCallout.hidden = !needsSignIn;
    setText(this.signInReason, summary.last_error ?? "");
    this.alert.hidden = !summary.last_error || needsSignIn;
    setText(this.alert, summary.last_error ? `Last error: ${summary.last_error}` : "");
    this.signOutButton.hidden = !summary.actions.includes("sign_out");
    this.updateActions();
    this.tick();
    setText(/** @type {HTMLElement} */ (this.tabLinks[3].lastElementChild), String(summary.tools));
  }

  updateActions() {
    this.actions.update();
    this.signIn.update();
    this.offer.update();
    const pending = this.store.pending.get(this.name);
    this.signOutButton.disabled = pending !== undefined;
    this.signOutButton.classList.toggle("is-busy", pending === "sign-out");
    this.removeButton.disabled = pending !== undefined;
    for (const button of this.removePanel.querySelectorAll("button")) button.disabled = pending !== undefined;
  }

  /**
   * Asks, on the page, whether to remove the server and which of its secrets to delete with it
   * (none unless ticked).
   */
  async askRemove() {
    if (!this.removePanel.hidden) {
      this.removeTitle?.focus();
      return;
    }
    if (this.store.installed === null) await this.store.loadInstalled();
    const secrets = this.store.installed?.get(this.name)?.secrets ?? [];
    const boxes = secrets.map((secret) => h("input", { class: "checkbox", attrs: { type: "checkbox", name: "delete-secret", value: secret } }));
    const error = h("p", { class: "remove-error", attrs: { role: "alert" } });
    this.removeTitle = h("h2", { class: "remove-title", attrs: { id: "remove-title", tabindex: "-1" } }, icon("trash"), `Remove ${this.name}?`);
    const removeNow = h("button", { class: "btn btn-small btn-danger", data: { action: "confirm-remove" }, attrs: { type: "submit" } }, h("span", { class: "btn-text", text: `Remove ${this.name}` }));
    const form = h("form", { class: "remove-form" },
      this.removeTitle,
      h("p", { class: "remove-what", text: `Its entry leaves the config file, with its pinned tool definitions and its cache; editors are no longer offered its tools.` }),
      secrets.length > 0
        ? h("fieldset", { class: "remove-secrets" },
          h("legend", { text: "Also delete from the keychain:" }),
          secrets.map((secret, index) => h("label", { class: "remove-secret" }, boxes[index], h("code", { text: secret }))),
          h("p", { class: "field-help", text: "Left unticked, a secret stays in the keychain for another server or a later add." }))
        : null,
      error,
      h("div", { class: "remove-actions" },
        removeNow,
        h("button", { class: "btn btn-small", attrs: { type: "button" }, text: "Cancel", on: { click: () => this.closeRemove() } })));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const chosen = boxes.filter((box) => box.checked).map((box) => box.value);
      void this.remove(chosen, removeNow, error);
    });
    replace(this.removePanel, form);
    this.removePanel.hidden = false;
    this.removeButton.setAttribute("aria-expanded", "true");
    this.updateActions();
    this.removeTitle.focus();
  }

  closeRemove() {
    if (this.removePanel.hidden) return;
    const hadFocus = this.removePanel.contains(document.activeElement);
    this.removePanel.hidden = true;
    replace(this.removePanel);
    this.removeTitle = null;
    this.removeButton.setAttribute("aria-expanded", "false");
    if (hadFocus) this.removeButton.focus();
  }

  /**
   * @param {string[]} deleteSecrets
   * @param {HTMLButtonElement} button
   * @param {HTMLElement} error
   */
  async remove(deleteSecrets, button, error) {
    setText(error, "");
    button.classList.add("is-busy");
    try {
      const removed = await this.store.remove(this.name, deleteSecrets);
      if (!removed) return;
      const deleted = removed.deleted_secrets.length ? ` Deleted from the keychain: ${removed.deleted_secrets.join(", ")}.` : "";
      const kept = removed.kept_secrets.length ? ` Kept in the keychain: ${removed.kept_secrets.join(", ")}.` : "";
      const undeleted = removed.undeleted_secrets.length ? ` Not deleted (${removed.keychain_problem}): ${removed.undeleted_secrets.join(", ")}; delete them on the Secrets page once the keychain can be used.` : "";
      toast(`Removed ${this.name}`, `It is no longer in the config.${deleted}${kept}${undeleted}`);
      announce(`Removed ${this.name}`);
      location.hash = "#/";
    } catch (caught) {
      const message = caught instanceof Error ? caught.message : String(caught);
      setText(error, `Could not remove ${this.name}: ${message}`);
    } finally {
      button.classList.remove("is-busy");
    }
  }

  async signOut() {
    const confirmed = await confirmAction({
      title: `Sign out of ${this.name}?`,
      message: `Switchboard forgets the tokens it keeps for ${this.name} and disconnects from it. Editors' calls to its tools fail until someone signs in again.`,
      confirm: "Sign out",
    });
    if (!confirmed) return;
    const error = await this.store.signOut(this.name);
    if (error) toast(`Could not sign out of ${this.name}`, error.message, "error");
  }

  renderDetailFacts() {
    const detail = this.store.details.get(this.name)?.detail;
    const server = detail?.server;
    setText(this.facts.server, server ? `${server.server_info.name ?? "unnamed"} ${server.server_info.version ?? ""} · MCP ${server.protocol_version}`.trim() : "—");
    setText(/** @type {HTMLElement} */ (this.tabLinks[1].lastElementChild), detail ? String(detail.history.length) : "");
  }

  renderTab() {
    for (const link of this.tabLinks) {
      if (link.dataset.tab === this.tab) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    const entry = this.store.details.get(this.name);
    if (this.tab !== "output" && this.output) {
      this.output.destroy();
      this.output = null;
    }
    if (this.tab !== "tools") this.tools = null;
    if (this.store.listLoad.status === "ready" && !this.store.summaries.has(this.name)) {
      replace(this.panel, empty(`No backend named ${this.name}`, h("span", {}, "It is not in the config (any more). ", h("a", { attrs: { href: "#/" }, text: "See all backends" }))));
      return;
    }
    if (this.tab === "output") {
      if (!this.output) {
        this.output = new OutputPanel(this.store, this.name);
        replace(this.panel, this.output.element);
      }
      return;
    }
    if (this.tab === "tools") {
      if (!this.tools) {
        this.tools = new ToolsTab(this.store, this.name, this.tool);
        replace(this.panel, this.tools.element);
      } else {
        this.tools.select(this.tool);
      }
      return;
    }
    const detail = entry?.detail;
    if (!detail) {
      replace(this.panel, entry?.load.status === "error" ? failure(`Could not load ${this.name}`, entry.load.error, () => void this.store.loadDetail(this.name)) : loading(`Loading ${this.name}…`));
      return;
    }
    if (this.tab === "history") {
      // Entries the reader opened stay open when the history is redrawn.
      const opened = new Set([...this.panel.querySelectorAll(".timeline-item")].filter((item) => item.querySelector("details")?.open).map((item) => /** @type {HTMLElement} */ (item).dataset.at ?? ""));
      // A newly recorded exit opens by itself.
      const newest = detail.history.at(-1);
      if (newest && String(newest.at_ms) !== this.newestSeen) opened.add(String(newest.at_ms));
      this.newestSeen = newest ? String(newest.at_ms) : null;
      replace(this.panel, h("section", { class: "section", attrs: { "aria-label": "Restart history" } }, historyTimeline(detail.history, { opened })));
      return;
    }
    replace(this.panel, this.overview(detail));
  }

  /**
   * @param {BackendDetail} detail
   * @returns {HTMLElement}
   */
  overview(detail) {
    const base = `#/backend/${encodeURIComponent(this.name)}`;
    const config = detail.config;
    const installed = this.store.installed?.get(this.name) ?? null;
    const recentOutput = (this.store.outputs.get(this.name) ?? detail.output).slice(-8);
    const server = detail.server;
    const capabilities = server ? Object.keys(server.capabilities ?? {}) : [];
    return h("div", { class: "overview-grid" },
      this.configCard(config, detail.transport, installed),
      config && config.url === null ? this.sandboxCard(config) : null,
      h("section", { class: "card" },
        h("h2", { class: "card-title", text: "Server" }),
        server ? h("dl", { class: "kv" },
          h("dt", { text: "Name" }), h("dd", {}, h("code", { text: `${server.server_info.name ?? "unnamed"} ${server.server_info.version ?? ""}`.trim() })),
          h("dt", { text: "Protocol" }), h("dd", {}, h("code", { text: server.protocol_version })),
          h("dt", { text: "Offers" }), h("dd", { text: [plural(detail.tools.length, "tool"), plural(detail.prompts.length, "prompt"), plural(detail.resources.length + detail.resource_templates.length, "resource"), ...(detail.skills.length ? [plural(detail.skills.length, "skill")] : [])].join(" · ") }),
          h("dt", { text: "Capabilities" }), h("dd", {}, capabilities.length ? h("div", { class: "tags" }, capabilities.map((key) => h("span", { class: "tag", text: key }))) : h("span", { class: "muted", text: "none" })),
          server.instructions ? h("dt", { text: "Instructions" }) : null,
          server.instructions ? h("dd", { class: "instructions", text: server.instructions }) : null)
          : h("p", { class: "muted", text: "No handshake yet: the server describes itself once it is ready." })),
      h("section", { class: "card card-wide" },
        h("div", { class: "card-head" }, h("h2", { class: "card-title", text: "Recent output" }), h("a", { class: "small", attrs: { href: `${base}/output` }, text: "Live output →" })),
        recentOutput.length ? logBlock(recentOutput) : h("p", { class: "muted", text: "No output yet." })),
      h("section", { class: "card card-wide" },
        h("div", { class: "card-head" }, h("h2", { class: "card-title", text: "Last exits" }), h("a", { class: "small", attrs: { href: `${base}/history` }, text: "Full history →" })),
        historyTimeline(detail.history, { limit: 3 })),
      detail.skills.length > 0
        ? h("section", { class: "card card-wide", data: { testid: "skills" } },
          h("h2", { class: "card-title", text: "Skills" }),
          h("ul", { class: "plain-list" },
            detail.skills.map((skill) => h("li", {},
              h("span", { class: "tag", text: "skill" }),
              h("code", { text: skill.frontmatter.name ?? skill.uri }),
              h("span", { class: "muted", text: [
                skill.frontmatter.description ? ` — ${skill.frontmatter.description}` : "",
                Array.isArray(skill.resources) ? ` · ${plural(skill.resources.length, "file")}, each with its digest pinned` : "",
              ].join("") })))))
        : null,
      detail.prompts.length + detail.resources.length + detail.resource_templates.length > 0
        ? h("section", { class: "card card-wide" },
          h("h2", { class: "card-title", text: "Prompts and resources" }),
          h("ul", { class: "plain-list" },
            detail.prompts.map((prompt) => h("li", {}, h("span", { class: "tag", text: "prompt" }), h("code", { text: prompt.name }), prompt.description ? h("span", { class: "muted", text: ` — ${prompt.description}` }) : null)),
            detail.resources.map((resource) => h("li", {}, h("span", { class: "tag", text: "resource" }), h("code", { text: resource.uri ?? resource.name }), resource.description ? h("span", { class: "muted", text: ` — ${resource.description}` }) : null)),
            detail.resource_templates.map((resource) => h("li", {}, h("span", { class: "tag", text: "template" }), h("code", { text: resource.uriTemplate ?? resource.name }), resource.description ? h("span", { class: "muted", text: ` — ${resource.description}` }) : null))))
        : null,
      null);
  }

  /**
   * How the backend is reached: a process's command line, directory and environment, or a remote
   * server's URL, its link's transport and headers (values masked by the API).
   * @param {BackendConfigView | undefined} config
   * @param {RemoteTransport | null} transport
   * @param {InstalledServer | null} installed the registry entry it was added from
   * @returns {HTMLElement}
   */
  configCard(config, transport, installed) {
    this.entryShown = installed?.entry ?? null;
    if (!config) return h("section", { class: "card" }, h("h2", { class: "card-title", text: "Process" }), h("p", { class: "muted", text: "No config details." }));
    /**
     * @param {Record<string, string>} values
     * @param {string} separator
     * @param {string} none
     */
    const masked = (values, separator, none) => {
      const names = Object.keys(values);
      return names.length === 0
        ? h("span", { class: "muted", text: none })
        : h("ul", { class: "env-list" }, names.map((key) => h("li", {}, h("code", { text: `${key}${separator}${values[key]}` }))));
    };
    const common = [
      installed?.entry ? h("dt", { text: "Registry entry" }) : null,
      installed?.entry ? h("dd", { data: { testid: "registry-entry" } }, h("code", { text: installed.entry }), installed.source ? h("span", { class: "muted", text: ` from ${installed.source}` }) : null) : null,
      h("dt", { text: "Tool prefix" }), h("dd", {}, config.prefix === ""
        ? h("span", { class: "muted", text: "none: tools and prompts keep their own names" })
        : h("code", { text: `${config.prefix}__` })),
      h("dt", { text: "Starts on demand" }), h("dd", { text: config.start_on_demand ? "yes" : "no" }),
      h("dt", { text: "Enabled" }), h("dd", { text: config.enabled ? "yes" : "no" }),
    ];
    if (config.url !== null) {
      return h("section", { class: "card", data: { testid: "connection" } },
        h("h2", { class: "card-title", text: "Connection" }),
        h("dl", { class: "kv" },
          h("dt", { text: "URL" }), h("dd", {}, h("code", { class: "wrap", text: config.url })),
          h("dt", { text: "Transport" }), h("dd", { text: TRANSPORT_LABELS[transport ?? "auto"] }),
          h("dt", { text: "Headers" }), h("dd", {}, masked(config.headers, ": ", "none added")),
          common));
    }
    return h("section", { class: "card" },
      h("h2", { class: "card-title", text: "Process" }),
      h("dl", { class: "kv" },
        h("dt", { text: "Command" }), h("dd", {}, h("code", { class: "wrap", text: commandLine(config.command ?? "", config.args) })),
        h("dt", { text: "Directory" }), h("dd", {}, config.cwd ? h("code", { text: config.cwd }) : h("span", { class: "muted", text: "Switchboard's own" })),
        h("dt", { text: "Environment" }), h("dd", {}, masked(config.env, "=", "nothing added")),
        common));
  }

  /**
   * What a local server may reach: its sandbox, enforced or not and why; or, without one, that it
   * runs with the person's full rights, and a first sandbox to add to the config.
   * @param {BackendConfigView} config
   * @returns {HTMLElement}
   */
  sandboxCard(config) {
    const sandbox = config.sandbox;
    if (!sandbox) {
      return h("section", { class: "card", data: { testid: "sandbox" } },
        h("h2", { class: "card-title", text: "Sandbox" }),
        h("p", { text: "None: this server runs with your full rights, and can read, write and reach whatever you can." }),
        config.suggested_sandbox
          ? h("div", {},
            h("p", { class: "muted", text: "Add this to the config to give it only what its command line names (edit to taste):" }),
            h("pre", { class: "log", data: { testid: "suggested-sandbox" }, text: config.suggested_sandbox }))
          : null);
    }
    /**
     * @param {string[]} paths
     * @param {string} none
     */
    const paths = (paths, none) => paths.length === 0
      ? h("span", { class: "muted", text: none })
      : h("ul", { class: "env-list" }, paths.map((path) => h("li", {}, h("code", { text: path }))));
    const abi = sandbox.landlock_abi === null ? "no Landlock" : `Landlock ABI ${sandbox.landlock_abi}`;
    return h("section", { class: "card", data: { testid: "sandbox" } },
      h("h2", { class: "card-title", text: "Sandbox" }),
      h("dl", { class: "kv" },
        h("dt", { text: "Enforcement" }), h("dd", { data: { testid: "sandbox-enforcement" } }, h("strong", { text: ENFORCEMENT_LABELS[sandbox.enforcement] }), h("span", { class: "muted", text: ` (${abi})` })),
        sandbox.shortfalls.length ? h("dt", { text: "Not enforced" }) : null,
        sandbox.shortfalls.length ? h("dd", {}, h("ul", { class: "plain-list" }, sandbox.shortfalls.map((why) => h("li", { text: why })))) : null,
        h("dt", { text: "May read" }), h("dd", { data: { testid: "sandbox-read" } }, paths(sandbox.read, "nothing of yours")),
        h("dt", { text: "May write" }), h("dd", { data: { testid: "sandbox-write" } }, paths(sandbox.write, "nothing")),
        h("dt", { text: "May connect to" }), h("dd", { data: { testid: "sandbox-connect" }, text: !sandbox.network ? "nothing: it has no network" : sandbox.connect.length ? `TCP ${sandbox.connect.length === 1 ? "port" : "ports"} ${sandbox.connect.join(", ")}` : "no TCP port" }),
        h("dt", { text: "Network" }), h("dd", { data: { testid: "sandbox-network" }, text: sandbox.network ? "yes" : "none (a network namespace of its own)" }),
        h("dt", { text: "Session bus" }), h("dd", { data: { testid: "sandbox-dbus" }, text: sandbox.dbus ? "yes (dbus = true)" : "out of reach, as is Switchboard's socket" }),
        h("dt", { text: "Environment" }), h("dd", {}, h("code", { class: "wrap", text: sandbox.environment.join(" ") })),
        h("dt", { text: "Also readable" }), h("dd", {}, h("details", {}, h("summary", { text: `${plural(sandbox.also_read.length, "system folder")} it needs to run` }), paths(sandbox.also_read, "none"))),
        h("dt", { text: "Required" }), h("dd", { text: sandbox.required ? "yes: it does not start without all of it" : "no: it runs with what this system enforces" })));
  }

  destroy() {
    this.unsubscribe();
    this.stopTicking();
    this.output?.destroy();
    if (this.store.watched === this.name) this.store.watched = null;
  }
}
