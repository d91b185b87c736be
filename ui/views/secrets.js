// #/secrets — the secrets the config names as ${secret:NAME}, kept in the OS keychain: which ones
// the keychain holds, which ones the config uses (a used one the keychain lacks keeps the servers
// naming it from starting), a form to set one and a button to delete one. Values only go in: the
// API never sends one back, and this page never shows one, not even while it is typed. Every
// change makes Switchboard read its config again; the page says what that did.

import { h, icon, replace, setText } from "../dom.js";
import * as api from "../api.js";
import { plural, reloadSummary } from "../format.js";
import { asApiError } from "../store.js";
import { confirmAction, empty, failure, loading, toast } from "./common.js";

/** @typedef {import('../types.js').SecretsList} SecretsList */
/** @typedef {import('../types.js').SecretEntry} SecretEntry */
/** @typedef {import('../types.js').ReloadOutcome} ReloadOutcome */

/** The names the keychain accepts (`is_valid_name` in crates/platform/src/secrets.rs). */
const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

export class SecretsView {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
    this.alive = true;
    /** @type {SecretsList | null} */
    this.secrets = null;
    this.heading = h("h1", { text: "Secrets", attrs: { tabindex: "-1" } });
    this.unavailable = h("div", { class: "notice notice-error keychain-unavailable", attrs: { role: "alert" }, data: { testid: "keychain-unavailable" } });
    this.unavailable.hidden = true;

    this.nameInput = h("input", {
      class: "input mono",
      attrs: { id: "secret-name", name: "name", type: "text", required: true, maxlength: 64, autocomplete: "off", spellcheck: "false", list: "secret-names", "aria-describedby": "secret-name-help secret-name-error" },
    });
    this.valueInput = h("input", {
      class: "input",
      attrs: { id: "secret-value", name: "value", type: "password", required: true, autocomplete: "off", spellcheck: "false", "aria-describedby": "secret-value-help secret-value-error" },
    });
    this.nameError = h("span", { class: "field-error", attrs: { id: "secret-name-error" } });
    this.valueError = h("span", { class: "field-error", attrs: { id: "secret-value-error" } });
    this.knownNames = h("datalist", { attrs: { id: "secret-names" } });
    this.saveLabel = h("span", { class: "btn-text", text: "Save to keychain" });
    this.saveButton = h("button", { class: "btn btn-primary", attrs: { type: "submit" } }, icon("key"), this.saveLabel);
    this.fields = h("fieldset", { class: "secret-fields" },
      h("legend", { class: "visually-hidden", text: "New secret" }),
      h("div", { class: "field" },
        h("label", { class: "field-label", attrs: { for: "secret-name" }, text: "Name" }),
        this.nameInput,
        h("span", { class: "field-help", attrs: { id: "secret-name-help" }, text: "Letters, digits and _ . -" }),
        this.nameError),
      h("div", { class: "field" },
        h("label", { class: "field-label", attrs: { for: "secret-value" }, text: "Value" }),
        this.valueInput,
        h("span", { class: "field-help", attrs: { id: "secret-value-help" } }, "Never shown again, here or anywhere."),
        this.valueError),
      h("div", { class: "secret-submit" }, this.saveButton));
    this.form = h("form", { class: "card secret-form", attrs: { "aria-labelledby": "secret-form-title", novalidate: true } },
      h("h2", { class: "card-title", attrs: { id: "secret-form-title" }, text: "Set a secret" }),
      this.fields,
      this.knownNames);
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.save();
    });
    this.outcome = h("div", { class: "secret-outcome", attrs: { role: "status" }, data: { testid: "secret-outcome" } });
    this.listTitle = h("h2", { class: "card-title", attrs: { id: "secret-list-title", tabindex: "-1" }, text: "In the keychain and in the config" });
    this.counts = h("span", { class: "muted small" });
    this.list = h("div", { class: "secret-list" });

    replace(root,
      h("header", { class: "page-head" }, h("div", {}, this.heading,
        h("p", { class: "page-sub" }, "Values the config names as ", h("code", { text: "${secret:NAME}" }), " in a server's env, args or headers, kept in the OS keychain. Switchboard never shows a value again and never writes one to a file."))),
      this.unavailable,
      this.form,
      this.outcome,
      h("section", { class: "card table-card secret-card", attrs: { "aria-labelledby": "secret-list-title" } },
        h("div", { class: "card-head secret-card-head" }, this.listTitle, this.counts),
        this.list));
    replace(this.list, loading("Loading secrets…"));
    void this.load();
  }

  /** Reads the list again and shows it. */
  async load() {
    try {
      this.secrets = await api.listSecrets();
    } catch (error) {
      if (!this.alive) return;
      replace(this.list, failure("Could not load the secrets", asApiError(error), () => void this.load()));
      return;
    }
    if (this.alive) this.render(this.secrets);
  }

  /** @param {SecretsList} secrets */
  render(secrets) {
    const unavailable = secrets.unavailable;
    this.unavailable.hidden = unavailable === null;
    if (unavailable !== null) {
      replace(this.unavailable,
        h("strong", {}, icon("alert"), ` ${unavailable}`),
        h("p", { text: "Until then secrets can be neither stored nor read: Switchboard never keeps one in a file instead. Once the keychain can be reached, reload this page." }));
    }
    this.fields.disabled = unavailable !== null;
    replace(this.knownNames, secrets.secrets.map((secret) => h("option", { attrs: { value: secret.name } })));
    const missing = unavailable === null ? secrets.secrets.filter((secret) => secret.used && !secret.set).length : 0;
    setText(this.counts, [plural(secrets.secrets.length, "secret"), missing > 0 ? `${missing} missing` : ""].filter(Boolean).join(" · "));
    if (secrets.secrets.length === 0) {
      replace(this.list, empty("No secrets yet", h("span", {}, "Name one in the config as ", h("code", { text: "${secret:NAME}" }), " and set its value above, or with ", h("code", { text: "switchboard secret set NAME" }), ".")));
      return;
    }
    replace(this.list, h("table", { class: "table secrets-table" },
      h("caption", { class: "visually-hidden", text: "Secrets, whether the keychain holds each and whether the config uses it" }),
      h("thead", {}, h("tr", {},
        h("th", { attrs: { scope: "col" }, text: "Name" }),
        h("th", { attrs: { scope: "col" }, text: "Keychain" }),
        h("th", { attrs: { scope: "col" }, text: "Config" }),
        h("th", { class: "actions-head", attrs: { scope: "col" }, text: "Actions" }))),
      h("tbody", {}, secrets.secrets.map((secret) => this.row(secret, unavailable === null)))));
  }

  /**
   * @param {SecretEntry} secret
   * @param {boolean} writable whether the keychain can be reached
   * @returns {HTMLElement}
   */
  row(secret, writable) {
    // Without a keychain, whether it holds a secret cannot be told.
    const missing = writable && secret.used && !secret.set;
    return h("tr", { class: missing ? "is-missing" : "", data: { secret: secret.name, set: String(secret.set), used: String(secret.used) } },
      h("th", { attrs: { scope: "row" } },
        h("code", { class: "secret-name", text: secret.name }),
        missing ? h("div", { class: "secret-missing", text: "The config names it, but the keychain does not hold it: the servers using it cannot start." }) : null),
      h("td", {}, !writable
        ? h("span", { class: "muted", text: "unknown" })
        : secret.set
          ? h("span", { class: "chip chip-good", text: "set" })
          : h("span", { class: `chip${missing ? " chip-bad" : ""}`, text: missing ? "missing" : "not set" })),
      h("td", {}, secret.used ? h("span", { text: "used" }) : h("span", { class: "muted", text: "not used" })),
      h("td", { class: "actions-cell" }, h("div", { class: "actions" },
        h("button", {
          class: `btn btn-small${missing ? " btn-accent" : ""}`,
          attrs: { type: "button", disabled: !writable, "aria-label": `${secret.set ? "Replace" : "Set"} ${secret.name}` },
          on: { click: () => this.fillName(secret.name) },
        }, icon("key"), h("span", { class: "btn-text", text: secret.set ? "Replace…" : "Set…" })),
        secret.set ? h("button", {
          class: "btn btn-small btn-delete",
          attrs: { type: "button", disabled: !writable, "aria-label": `Delete ${secret.name}` },
          on: { click: () => void this.remove(secret) },
        }, icon("trash"), h("span", { class: "btn-text", text: "Delete" })) : null)));
  }

  /**
   * Puts `name` in the form and moves to the value.
   * @param {string} name
   */
  fillName(name) {
    this.nameInput.value = name;
    this.markInvalid(this.nameInput, this.nameError, "");
    this.valueInput.focus();
  }

  async save() {
    const name = this.nameInput.value.trim();
    const value = this.valueInput.value;
    const nameProblem = NAME_PATTERN.test(name) ? "" : "Use 1 to 64 letters, digits, _ . or -.";
    const valueProblem = value === "" ? "Type the value to keep." : "";
    this.markInvalid(this.nameInput, this.nameError, nameProblem);
    this.markInvalid(this.valueInput, this.valueError, valueProblem);
    if (nameProblem || valueProblem) {
      (nameProblem ? this.nameInput : this.valueInput).focus();
      return;
    }
    this.setBusy(true);
    try {
      const outcome = await api.setSecret(name, value);
      this.form.reset();
      this.showOutcome(`Saved ${name} in the keychain.`, outcome);
      await this.load();
    } catch (error) {
      this.showFailure(`Could not save ${name}`, asApiError(error).message);
    } finally {
      this.setBusy(false);
    }
    this.nameInput.focus();
  }

  /** @param {SecretEntry} secret */
  async remove(secret) {
    const confirmed = await confirmAction({
      title: `Delete ${secret.name}?`,
      message: secret.used
        ? `The keychain forgets its value. The config names it, so the servers using it cannot start until it is set again.`
        : `The keychain forgets its value. The config does not name it.`,
      confirm: "Delete",
    });
    if (!confirmed) return;
    try {
      const outcome = await api.deleteSecret(secret.name);
      this.showOutcome(`Deleted ${secret.name} from the keychain.`, outcome);
    } catch (error) {
      this.showFailure(`Could not delete ${secret.name}`, asApiError(error).message);
    }
    await this.load();
    // Its row, which had focus, is gone.
    this.listTitle.focus();
  }

  /**
   * @param {HTMLInputElement} input
   * @param {HTMLElement} message
   * @param {string} problem empty when there is none
   */
  markInvalid(input, message, problem) {
    setText(message, problem);
    if (problem) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  }

  /** @param {boolean} busy */
  setBusy(busy) {
    this.fields.disabled = busy || this.secrets?.unavailable != null;
    this.saveButton.classList.toggle("is-busy", busy);
    setText(this.saveLabel, busy ? "Saving…" : "Save to keychain");
  }

  /**
   * Says what a change did, with what reading the config again did to the servers.
   * @param {string} done
   * @param {ReloadOutcome} outcome
   */
  showOutcome(done, outcome) {
    const summary = reloadSummary(outcome);
    this.outcome.dataset.outcome = summary.applied ? "applied" : "not_applied";
    replace(this.outcome,
      h("strong", { text: done }),
      " ",
      summary.applied ? `Config read again. ${summary.text}` : `Config read again, not applied: ${summary.text}`);
  }

  /**
   * @param {string} title
   * @param {string} message
   */
  showFailure(title, message) {
    this.outcome.dataset.outcome = "error";
    replace(this.outcome, h("strong", { text: `${title}:` }), " ", message);
    toast(title, message, "error");
  }

  destroy() {
    this.alive = false;
  }
}
