// #/add?q= — servers from the MCP Registry and the other registry sources, searched as one types.
// Each entry says what it is (title, name, description, newest version), whether it is deprecated
// and whether the official registry lists it under its name, what it offers to run (packages and remote
// servers), where it comes from and, once added, under which name. Add opens a form for what the
// entry asks (a secret goes to the keychain, never to the config); what runs is decided by
// Switchboard from the entry, never typed here, and shown exactly (program, arguments,
// environment) for a yes before anything is written or started; its tools wait for review. A source that
// cannot be read is said above the results, which the others still give.

import { h, icon, replace, setText, announce } from "../dom.js";
import * as api from "../api.js";
import { plural } from "../format.js";
import { asApiError } from "../store.js";
import { highlighted } from "./history.js";
import { empty, failure, loading } from "./common.js";

/** @typedef {import('../types.js').RegistryEntry} RegistryEntry */
/** @typedef {import('../types.js').RegistryInput} RegistryInput */
/** @typedef {import('../types.js').RegistrySearch} RegistrySearch */
/** @typedef {import('../types.js').RegistryAdded} RegistryAdded */

/** How long typing may pause before the search is asked for. */
const SEARCH_DELAY_MS = 250;

/** The most entries a search with no words answers with (the API's limit). */
const LIST_LIMIT = 200;

/** Tells the forms' fields apart across the page. */
let formCount = 0;

export class AddView {
  /**
   * @param {HTMLElement} root
   * @param {string} query
   */
  constructor(root, query) {
    this.root = root;
    this.alive = true;
    /** @type {RegistrySearch | null} */
    this.found = null;
    /** Counts the searches asked for, so that only the last one's answer is shown. */
    this.searches = 0;
    /** @type {number | undefined} */
    this.timer = undefined;
    /**
     * The forms opened (or the additions they made), by entry, kept while the entry is listed so
     * that a search typed meanwhile loses nothing.
     * @type {Map<string, AddForm>}
     */
    this.forms = new Map();
    this.heading = h("h1", { text: "Add a server", attrs: { tabindex: "-1" } });
    this.summary = h("p", { class: "add-summary muted", attrs: { "aria-live": "polite" }, data: { testid: "registry-summary" } });
    this.input = h("input", {
      class: "input input-search",
      attrs: { type: "search", placeholder: "Search servers by name or description", "aria-label": "Search the registry's servers", autocomplete: "off", spellcheck: "false" },
      data: { testid: "registry-search" },
    });
    this.input.value = query;
    this.input.addEventListener("input", () => this.onInput());
    this.problems = h("div", { class: "registry-problems" });
    this.results = h("div", { class: "page-body" });
    replace(root,
      h("header", { class: "page-head" }, h("div", {}, this.heading,
        h("p", { class: "page-sub" },
          "Servers listed by the MCP Registry and the other registry sources. Switchboard decides what runs from the entry you choose, keeps the secrets it asks for in the keychain, and holds its tools until you ",
          h("a", { attrs: { href: "#/review" }, text: "review" }), " them."))),
      h("div", { class: "search-bar" }, icon("search"), this.input),
      this.summary,
      this.problems,
      this.results);
    replace(this.results, loading("Searching the registry…"));
    void this.search();
  }

  focusInput() {
    this.input.focus();
  }

  onInput() {
    const value = this.input.value;
    history.replaceState(null, "", value ? `#/add?q=${encodeURIComponent(value)}` : "#/add");
    clearTimeout(this.timer);
    this.timer = window.setTimeout(() => void this.search(), SEARCH_DELAY_MS);
  }

  /** Asks the sources for the words in the box and shows the answer, unless a newer one was asked. */
  async search() {
    this.searches += 1;
    const asked = this.searches;
    const query = this.input.value.trim();
    this.results.setAttribute("aria-busy", "true");
    try {
      const found = await api.searchRegistry(query);
      if (!this.alive || asked !== this.searches) return;
      this.found = found;
      this.render(query);
    } catch (error) {
      if (!this.alive || asked !== this.searches) return;
      this.found = null;
      setText(this.summary, "");
      replace(this.problems);
      replace(this.results, failure("Could not search the registry", asApiError(error), () => void this.search()));
    } finally {
      if (asked === this.searches) this.results.removeAttribute("aria-busy");
    }
  }

  /** @param {string} query the words searched for */
  render(query) {
    const found = /** @type {RegistrySearch} */ (this.found);
    const failed = found.sources.filter((source) => source.error !== null);
    const read = found.sources.length - failed.length;
    replace(this.problems, failed.map((source) => h("p", { class: "notice notice-warn registry-problem", data: { testid: "source-error", source: source.url } },
      icon("alert"),
      h("span", {}, "Could not read ", h("code", { text: source.url }), `: ${source.error}`))));
    const count = found.entries.length;
    setText(this.summary, [
      query ? `${plural(count, "server")} match “${query}”` : count >= LIST_LIMIT ? `The first ${count} servers; search to find others` : plural(count, "server"),
      `from ${plural(read, "source")}`,
    ].join(" "));

    // The forms of entries still listed stay as they are.
    const keys = new Set(found.entries.map(entryKey));
    for (const key of [...this.forms.keys()]) if (!keys.has(key)) this.forms.delete(key);

    if (found.sources.length === 0) {
      replace(this.results, empty("No registry source", "Switchboard has no registry source to search."));
      return;
    }
    if (count === 0) {
      replace(this.results, read === 0
        ? empty("No source could be read", "Each source's problem is said above; Switchboard tries them again with the next search.")
        : empty(query ? "No server matches" : "No servers", query ? "Try fewer or shorter words; names, titles and descriptions are searched." : "The sources list no servers."));
      return;
    }
    const needle = query.toLowerCase().split(/\s+/).filter(Boolean).length === 1 ? query.toLowerCase() : "";
    // A form kept across searches is moved into its new card, which takes the focus from it.
    const focused = document.activeElement;
    const refocus = focused instanceof HTMLElement && this.results.contains(focused) ? focused : null;
    replace(this.results, h("ul", { class: "registry-list", attrs: { "aria-label": "Servers" } },
      found.entries.map((entry, index) => this.entryCard(entry, index, needle))));
    if (refocus?.isConnected && document.activeElement !== refocus) refocus.focus();
  }

  /**
   * @param {RegistryEntry} entry
   * @param {number} index
   * @param {string} needle one word searched for, marked where it is found
   * @returns {HTMLElement}
   */
  entryCard(entry, index, needle) {
    const key = entryKey(entry);
    const titleId = `registry-entry-${index}`;
    const deprecated = entry.status === "deprecated";
    const form = this.forms.get(key) ?? null;
    const slot = h("div", { class: "registry-form-slot" }, form?.element);
    /** @type {HTMLButtonElement | null} */
    let add = null;
    if (entry.installable) {
      add = h("button", {
        class: `btn btn-small ${deprecated ? "" : "btn-primary"} registry-add-button`,
        attrs: { type: "button", "aria-label": `Add ${entry.title ?? entry.name}`, "aria-expanded": String(form !== null && form.open) },
      }, icon("plug"), h("span", { class: "btn-text", text: "Add" }));
      add.addEventListener("click", () => this.openForm(entry, slot));
    }
    const options = [
      ...entry.packages.map((pkg) => h("li", { class: pkg.supported === false ? "is-unsupported" : "", data: { kind: "package" } },
        h("span", { class: "tag", text: pkg.registry_type }),
        h("code", { class: "registry-option-id", text: pkg.version ? `${pkg.identifier} ${pkg.version}` : pkg.identifier }),
        pkg.transport ? h("span", { class: "registry-transport", text: pkg.transport }) : null,
        pkg.supported === false ? h("span", { class: "registry-unsupported", text: pkg.why_not ?? "not supported" }) : null)),
      ...entry.remotes.map((remote) => h("li", { class: remote.supported === false ? "is-unsupported" : "", data: { kind: "remote" } },
        h("span", { class: "tag", text: "remote" }),
        h("code", { class: "registry-option-id", text: remote.url }),
        h("span", { class: "registry-transport", text: remote.transport }),
        remote.supported === false ? h("span", { class: "registry-unsupported", text: remote.why_not ?? "not supported" }) : null)),
    ];
    return h("li", { class: `card registry-entry${deprecated ? " is-deprecated" : ""}`, data: { entry: entry.name, source: entry.source, status: entry.status }, attrs: { "aria-labelledby": titleId } },
      h("div", { class: "registry-entry-body" },
        h("div", { class: "registry-entry-main" },
          h("div", { class: "registry-entry-head" },
            h("h2", { class: `registry-entry-title${entry.title ? "" : " mono"}`, attrs: { id: titleId } }, highlighted(entry.title ?? entry.name, needle)),
            h("span", { class: "chip registry-version mono", data: { testid: "version" }, attrs: { title: "Its newest version in the source" }, text: entry.version }),
            deprecated ? h("span", { class: "chip chip-warn", data: { testid: "deprecated" }, text: "Deprecated" }) : null,
            entry.verified
              ? h("span", { class: "chip chip-good registry-verified", data: { testid: "verified" }, attrs: { title: "The official registry lists this package under this name: it verified that whoever published it owns the name's namespace" } }, icon("check"), "verified name")
              : h("span", { class: "chip registry-unverified", data: { testid: "unverified" }, attrs: { title: `From ${entry.source === "built-in" ? "the set built into Switchboard" : entry.source}, name not verified: the official registry does not list this package under this name` } }, "unverified")),
          entry.title ? h("div", { class: "registry-entry-name mono" }, highlighted(entry.name, needle)) : null,
          deprecated ? h("p", { class: "registry-deprecated", data: { testid: "status-message" } }, icon("alert"), h("span", { text: entry.status_message ?? "Its publisher marked it deprecated." })) : null,
          entry.description ? h("p", { class: "registry-description" }, highlighted(entry.description, needle)) : null,
          options.length ? h("ul", { class: "registry-options", attrs: { "aria-label": "What it can run" } }, options) : null,
          entry.installable ? null : h("p", { class: "registry-why-not", data: { testid: "why-not" } },
            icon("alert"), h("span", {}, h("strong", { text: "Cannot be added: " }), entry.why_not ?? "Switchboard cannot run what this entry offers.")),
          h("div", { class: "registry-meta" },
            entry.repository ? h("a", { attrs: { href: entry.repository, target: "_blank", rel: "noopener" } }, icon("open"), "Repository") : null,
            entry.website && entry.website !== entry.repository ? h("a", { attrs: { href: entry.website, target: "_blank", rel: "noopener" } }, icon("open"), "Website") : null,
            h("span", { class: "registry-source", data: { testid: "source" } }, entry.source === "built-in" ? "built into Switchboard" : ["from ", h("code", { text: entry.source })]))),
        h("div", { class: "registry-entry-side" },
          add,
          entry.added_as ? addedNote(entry.added_as) : null)),
      slot);
  }

  /**
   * Opens the entry's form below it, or moves to the one open.
   * @param {RegistryEntry} entry
   * @param {HTMLElement} slot
   */
  openForm(entry, slot) {
    const key = entryKey(entry);
    let form = this.forms.get(key);
    if (!form || !form.open) {
      // A search drawn meanwhile moves the form into a new card: its card is where it is now.
      const addButton = (/** @type {AddForm} */ made) => /** @type {HTMLElement | null} */ (made.element.closest(".registry-entry")?.querySelector(".registry-add-button") ?? null);
      const made = new AddForm(entry, {
        added: (added) => {
          // The search shows the entry as added from now on.
          const listed = this.found?.entries.find((each) => entryKey(each) === key);
          if (listed) listed.added_as = added.server;
          const side = made.element.closest(".registry-entry")?.querySelector(".registry-entry-side");
          side?.querySelector(".registry-added-note")?.remove();
          side?.append(addedNote(added.server));
          addButton(made)?.setAttribute("aria-expanded", "false");
        },
        closed: () => {
          this.forms.delete(key);
          const button = addButton(made);
          button?.setAttribute("aria-expanded", "false");
          button?.focus();
        },
      });
      form = made;
      this.forms.set(key, form);
      replace(slot, form.element);
      addButton(form)?.setAttribute("aria-expanded", "true");
    }
    form.focus();
  }

  destroy() {
    this.alive = false;
    clearTimeout(this.timer);
  }
}

/**
 * @param {RegistryEntry} entry
 * @returns {string}
 */
function entryKey(entry) {
  return `${entry.source}\u0000${entry.name}`;
}

/**
 * @param {string} server
 * @returns {HTMLElement}
 */
function addedNote(server) {
  return h("p", { class: "registry-added-note", data: { testid: "added-as" } },
    icon("check"), "Added as ", h("a", { class: "mono", attrs: { href: `#/backend/${encodeURIComponent(server)}` }, text: server }));
}

/**
 * What Add would run, in words: the first package or remote server Switchboard supports.
 * @param {RegistryEntry} entry
 * @returns {string | null}
 */
function whatRuns(entry) {
  const pkg = entry.packages.find((each) => each.supported !== false);
  if (pkg) return `the ${pkg.registry_type} package ${pkg.identifier}${pkg.version ? ` ${pkg.version}` : ""}${pkg.transport ? ` over ${pkg.transport}` : ""}`;
  const remote = entry.remotes.find((each) => each.supported !== false);
  if (remote) return `the remote server at ${remote.url} over ${remote.transport}`;
  return null;
}

/**
 * A plan's program, each argument and each environment variable (or a remote's address and
 * headers), one to a line and exactly as they will be passed.
 * @param {import('../types.js').RegistryPlan} plan
 * @returns {HTMLElement}
 */
function planDetails(plan) {
  const launch = plan.launch;
  /** @type {[string, (HTMLElement | string)[]][]} */
  const rows = launch.kind === "command"
    ? [
      ["Program", [h("code", { text: launch.program })]],
      ["Arguments", launch.args.map((arg) => h("code", { text: JSON.stringify(arg) }))],
      ["Environment", Object.entries(launch.env).map(([name, value]) => h("code", { text: `${name}=${JSON.stringify(value)}` }))],
    ]
    : [
      ["Address", [h("code", { text: launch.url })]],
      ["Transport", [h("code", { text: launch.transport })]],
      ["Headers", Object.entries(launch.headers).map(([name, value]) => h("code", { text: `${name}: ${JSON.stringify(value)}` }))],
    ];
  return h("dl", { class: "registry-plan-details" },
    rows.flatMap(([label, values]) => [
      h("dt", { text: label }),
      h("dd", { data: { testid: `plan-${label.toLowerCase()}` } },
        values.length ? h("ul", {}, values.map((value) => h("li", {}, value))) : h("span", { class: "muted", text: "none" })),
    ]));
}

/**
 * @typedef {object} FormField
 * @property {RegistryInput} input
 * @property {HTMLElement} row
 * @property {HTMLInputElement | HTMLSelectElement} control
 * @property {HTMLElement} error
 */

/**
 * The form that adds one entry: a field for each of its inputs, an optional server name, and
 * what runs; once added, what was added with the way to it and to the Review page.
 */
class AddForm {
  /**
   * @param {RegistryEntry} entry
   * @param {{added: (added: RegistryAdded) => void, closed: () => void}} on
   */
  constructor(entry, on) {
    this.entry = entry;
    this.on = on;
    /** Whether it is still a form (not yet what it added). */
    this.open = true;
    /** @type {HTMLElement | null} the plan shown for a yes, while it is */
    this.plan = null;
    formCount += 1;
    const prefix = `add-${formCount}`;
    const title = entry.title ?? entry.name;
    /** @type {FormField[]} */
    this.fields = entry.inputs.map((input, index) => inputField(input, `${prefix}-input-${index}`));
    this.serverInput = h("input", {
      class: "input mono",
      attrs: { id: `${prefix}-server`, name: "server", type: "text", autocomplete: "off", spellcheck: "false", maxlength: 64, "aria-describedby": `${prefix}-server-help ${prefix}-server-error` },
    });
    this.serverError = h("span", { class: "field-error", attrs: { id: `${prefix}-server-error` } });
    this.error = h("p", { class: "registry-add-error", attrs: { role: "alert" } });
    this.submitLabel = h("span", { class: "btn-text", text: "Add server" });
    this.submit = h("button", { class: "btn btn-primary", attrs: { type: "submit" } }, icon("plug"), this.submitLabel);
    const runs = whatRuns(entry);
    this.fieldset = h("fieldset", { class: "registry-add-fields" },
      h("legend", { class: "registry-add-title" }, `Add ${title}`, h("span", { class: "muted", text: ` ${entry.version}` })),
      this.fields.length === 0 ? h("p", { class: "muted registry-no-inputs", text: "It asks for nothing." }) : null,
      this.fields.map((field) => field.row),
      h("div", { class: "field" },
        h("label", { class: "field-label", attrs: { for: `${prefix}-server` } }, "Server name", h("span", { class: "field-type", text: "optional" })),
        this.serverInput,
        h("span", { class: "field-help", attrs: { id: `${prefix}-server-help` }, text: "Its name in the config, which prefixes its tools. Left empty, Switchboard makes one from the entry's name." }),
        this.serverError),
      h("p", { class: "registry-runs", data: { testid: "what-runs" } },
        icon("shield"),
        h("span", {}, "Switchboard decides what runs from the entry, not from this form",
          runs ? [": ", h("strong", { text: runs })] : null,
          ". Its tools are held back from editors until you review them.")),
      this.error,
      h("div", { class: "form-actions" },
        this.submit,
        h("button", { class: "btn", attrs: { type: "button" }, text: "Cancel", on: { click: () => this.close() } })));
    this.form = h("form", { class: "registry-add", attrs: { novalidate: true, "aria-label": `Add ${title}` } }, this.fieldset);
    // What was said missing stops being so as it is typed.
    for (const field of this.fields) {
      field.control.addEventListener("input", () => {
        if (field.control.value.trim() === "") return;
        this.markInvalid(field.control, field.error, "");
        if (this.fields.every((each) => each.control.getAttribute("aria-invalid") !== "true")) setText(this.error, "");
      });
    }
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.send();
    });
    this.form.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && this.open) this.close();
    });
    this.element = h("div", { class: "registry-add-area" }, this.form);
  }

  focus() {
    if (!this.open) {
      /** @type {HTMLElement | null} */ (this.element.querySelector("a"))?.focus();
      return;
    }
    if (this.plan) {
      this.plan.querySelector("button")?.focus();
      return;
    }
    (this.fields[0]?.control ?? this.serverInput).focus();
  }

  close() {
    this.open = false;
    this.on.closed();
    this.element.remove();
  }

  async send() {
    setText(this.error, "");
    this.markInvalid(this.serverInput, this.serverError, "");
    /** @type {Record<string, string>} */
    const inputs = {};
    /** @type {FormField[]} */
    const missing = [];
    for (const field of this.fields) {
      const value = field.control.value;
      const empty = value.trim() === "";
      this.markInvalid(field.control, field.error, field.input.required && empty ? "Required." : "");
      if (field.input.required && empty) missing.push(field);
      else if (!empty) inputs[field.input.key] = value;
    }
    if (missing.length > 0) {
      setText(this.error, `Fill in ${missing.map((field) => field.input.label || field.input.key).join(", ")}.`);
      missing[0].control.focus();
      return;
    }
    const server = this.serverInput.value.trim();
    const entry = this.entry;
    /** @type {import('../types.js').RegistryChoice} */
    const choice = {
      name: entry.name,
      version: entry.version,
      source: entry.source === "built-in" ? null : entry.source,
      server: server === "" ? null : server,
      inputs,
    };
    this.setBusy(true);
    /** @type {import('../types.js').RegistryPlan} */
    let plan;
    try {
      plan = await api.planFromRegistry(choice);
    } catch (caught) {
      this.setBusy(false);
      this.showFailure(asApiError(caught));
      return;
    }
    this.setBusy(false);
    this.showPlan(choice, plan, "");
  }

  /**
   * Shows exactly what adding would run (or reach), for a yes: nothing is written or started
   * before Confirm and add. The form stays, disabled, above it; Back returns to it.
   * @param {import('../types.js').RegistryChoice} choice
   * @param {import('../types.js').RegistryPlan} plan
   * @param {string} said why the plan is shown again, when it changed
   */
  showPlan(choice, plan, said) {
    this.plan?.remove();
    this.fieldset.disabled = true;
    const confirmLabel = h("span", { class: "btn-text", text: "Confirm and add" });
    const confirm = h("button", { class: "btn btn-primary", attrs: { type: "button" } }, icon("plug"), confirmLabel);
    const back = h("button", { class: "btn", attrs: { type: "button" }, text: "Back" });
    const error = h("p", { class: "registry-add-error", attrs: { role: "alert" } });
    const command = plan.launch.kind === "command";
    const panel = h("section", { class: "registry-plan", data: { testid: "plan" }, attrs: { "aria-label": "What adding it does" } },
      h("p", { class: "registry-plan-title" }, icon("shield"),
        h("span", {}, h("strong", { text: command ? `${plan.server} will run exactly this` : `${plan.server} will connect to exactly this` }),
          ". Nothing is written or started until you confirm.")),
      said ? h("p", { class: "notice notice-warn", text: said }) : null,
      planDetails(plan),
      plan.secrets.length ? h("p", { class: "registry-plan-secrets", data: { testid: "plan-secrets" } }, icon("key"),
        h("span", {}, "Kept in the keychain as ", plan.secrets.flatMap((name, index) => [index ? ", " : "", h("code", { text: name })]))) : null,
      plan.notes.length ? h("ul", { class: "registry-added-notes" }, plan.notes.map((note) => h("li", { text: note }))) : null,
      error,
      h("div", { class: "form-actions" }, confirm, back));
    confirm.addEventListener("click", () => void this.commit(choice, plan, { confirm, confirmLabel, error }));
    back.addEventListener("click", () => this.back());
    panel.addEventListener("keydown", (event) => {
      if (event.key === "Escape") this.back();
    });
    this.plan = panel;
    this.element.append(panel);
    confirm.focus();
  }

  /** Leaves the plan for the form, as it was. */
  back() {
    this.plan?.remove();
    this.plan = null;
    this.fieldset.disabled = false;
    this.submit.focus();
  }

  /**
   * Adds exactly what `plan` showed; if adding it would now do anything else, the new plan is
   * shown for a yes instead.
   * @param {import('../types.js').RegistryChoice} choice
   * @param {import('../types.js').RegistryPlan} plan
   * @param {{confirm: HTMLButtonElement, confirmLabel: HTMLElement, error: HTMLElement}} parts
   */
  async commit(choice, plan, parts) {
    const entry = this.entry;
    setText(parts.error, "");
    parts.confirm.disabled = true;
    parts.confirm.classList.add("is-busy");
    setText(parts.confirmLabel, "Adding…");
    /** @type {RegistryAdded} */
    let added;
    try {
      added = await api.addFromRegistry(choice, plan.confirm);
    } catch (caught) {
      const error = asApiError(caught);
      parts.confirm.disabled = false;
      parts.confirm.classList.remove("is-busy");
      setText(parts.confirmLabel, "Confirm and add");
      if (error.code === "plan_changed") {
        try {
          this.showPlan(choice, await api.planFromRegistry(choice), error.message);
        } catch (again) {
          this.back();
          this.showFailure(asApiError(again));
        }
        return;
      }
      if (error.code === "missing_required_input" || error.code === "name_taken") {
        this.back();
        this.showFailure(error);
        return;
      }
      setText(parts.error, error.message);
      return;
    }
    this.open = false;
    this.plan = null;
    this.on.added(added);
    const link = h("a", { class: "btn btn-small", attrs: { href: `#/backend/${encodeURIComponent(added.server)}` } }, icon("server"), `Open ${added.server}`);
    replace(this.element, h("div", { class: "registry-added", attrs: { role: "status" }, data: { testid: "added" } },
      h("p", { class: "registry-added-line" }, icon("check"),
        h("span", {}, h("strong", { text: `Added as ${added.server}` }), added.held ? "; its tools wait for your review." : ".")),
      h("p", { class: "registry-added-command" }, h("span", { class: "muted", text: "Runs " }), h("code", { text: added.command })),
      added.notes?.length ? h("ul", { class: "registry-added-notes" }, added.notes.map((note) => h("li", { text: note }))) : null,
      h("div", { class: "registry-added-actions" },
        link,
        added.held ? h("a", { class: "btn btn-small btn-accent", attrs: { href: "#/review" } }, icon("shield"), "Review its tools") : null)));
    announce(`Added ${entry.title ?? entry.name} as ${added.server}`);
    link.focus();
  }

  /**
   * Says why the API refused: the required inputs it missed are marked on their fields; a name
   * already taken on the name's.
   * @param {api.ApiError} error
   */
  showFailure(error) {
    const missing = Array.isArray(error.body.missing) ? error.body.missing.filter((key) => typeof key === "string") : [];
    if (error.code === "missing_required_input" && missing.length > 0) {
      const fields = this.fields.filter((field) => missing.includes(field.input.key));
      for (const field of fields) this.markInvalid(field.control, field.error, "Required.");
      setText(this.error, error.message);
      (fields[0]?.control ?? this.submit).focus();
      return;
    }
    if (error.code === "name_taken") {
      this.markInvalid(this.serverInput, this.serverError, error.message);
      this.serverInput.focus();
      return;
    }
    setText(this.error, error.message);
  }

  /**
   * @param {HTMLInputElement | HTMLSelectElement} control
   * @param {HTMLElement} message
   * @param {string} problem empty when there is none
   */
  markInvalid(control, message, problem) {
    setText(message, problem);
    if (problem) control.setAttribute("aria-invalid", "true");
    else control.removeAttribute("aria-invalid");
  }

  /** @param {boolean} busy */
  setBusy(busy) {
    this.fieldset.disabled = busy;
    this.submit.classList.toggle("is-busy", busy);
    setText(this.submitLabel, busy ? "Adding…" : "Add server");
  }
}

/**
 * The field of one input: a list of its choices, a password field for a secret, else a line of
 * text; its default filled in.
 * @param {RegistryInput} input
 * @param {string} id
 * @returns {FormField}
 */
function inputField(input, id) {
  /** @type {HTMLInputElement | HTMLSelectElement} */
  let control;
  const described = `${id}-help ${id}-error`;
  if (input.choices.length > 0) {
    control = h("select", { class: "input", attrs: { id, name: input.key, required: input.required, "aria-describedby": described } },
      // A choice must be made when there is no default; one that is not required may be left out.
      input.default === null ? h("option", { attrs: { value: "" }, text: input.required ? "Choose…" : "None" }) : null,
      input.choices.map((choice) => h("option", { attrs: { value: choice, selected: choice === input.default }, text: choice })));
  } else {
    control = h("input", {
      class: `input${input.secret ? "" : " mono"}`,
      attrs: { id, name: input.key, type: input.secret ? "password" : "text", required: input.required, autocomplete: "off", spellcheck: "false", "aria-describedby": described },
    });
    if (input.default !== null) control.value = input.default;
  }
  const error = h("span", { class: "field-error", attrs: { id: `${id}-error` } });
  const label = input.label || input.key;
  const row = h("div", { class: "field", data: { input: input.key } },
    h("label", { class: "field-label", attrs: { for: id } },
      label,
      input.required ? h("span", { class: "required-mark", attrs: { "aria-hidden": "true" }, text: "*" }) : null,
      label !== input.key ? h("code", { class: "field-type", text: input.key }) : null,
      input.secret ? h("span", { class: "tag registry-secret" }, icon("key"), "secret") : null),
    control,
    h("span", { class: "field-help", attrs: { id: `${id}-help` } },
      input.description ?? "",
      input.secret ? h("span", { class: "registry-keychain", text: "Kept in the keychain, never in the config file." }) : null),
    error);
  return { input, row, control, error };
}
