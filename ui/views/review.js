// #/review — what is held back from editors until someone approves it: each tool, prompt or
// server's instructions whose definition changed since it was approved (or that is new from a
// server that has pins or with `approve_new_tools` on, cannot be checked, or whose server's pin
// file cannot be read), grouped by server, with what changed: the old and the new
// description in plain text, then a line diff of the two definitions as pretty JSON; for
// instructions, which are text alone, the old and the new text with the words that changed. "Approve"
// pins a tool as it is now and offers it to editors again; the `pins` event confirms it.

import { h, icon, replace, setText, announce } from "../dom.js";
import * as api from "../api.js";
import { plural } from "../format.js";
import { asApiError } from "../store.js";
import { empty, loading, toast } from "./common.js";

/** @typedef {import('../store.js').Store} Store */
/** @typedef {import('../store.js').Change} Change */
/** @typedef {import('../types.js').HeldTool} HeldTool */
/** @typedef {import('../types.js').HeldReason} HeldReason */
/** @typedef {import('../types.js').PinReport} PinReport */

/**
 * One step of a diff: a line (or word) both sides share, or one only the old (`del`) or the new
 * (`add`) side has; `a` and `b` are its indexes in each side, -1 where it is absent.
 * @typedef {{op: "same" | "del" | "add", a: number, b: number}} DiffOp
 */

/** Cells of the table the diff fills at most; past it, the differing middle is all replaced. */
const MAX_CELLS = 4_000_000;
/** Unchanged lines kept around each change while the rest is folded away. */
const CONTEXT = 3;

/** @type {Record<HeldReason, {chip: string, label: string}>} */
const REASONS = {
  changed: { chip: "chip-warn", label: "changed" },
  new: { chip: "", label: "new" },
  unreadable: { chip: "chip-bad", label: "pin file unreadable" },
  unchecked: { chip: "chip-bad", label: "cannot be checked" },
};

/** What each kind of held thing is called on its card. */
const KINDS = {
  tool: "tool",
  prompt: "prompt",
  instructions: "instructions",
  skill: "skill",
};

/**
 * What a model reads of a held thing, and the words its card uses for it: a server's
 * instructions are their text alone; a tool, a prompt or a skill has a description.
 * @typedef {{field: string, title: string, approved: string, now: string, none: string, same: string, neither: string}} Prose
 */

/** @type {Prose} */
const DESCRIPTION = {
  field: "description",
  title: "Description",
  approved: "Approved description",
  now: "Description now",
  none: "No description",
  same: "The description is unchanged.",
  neither: "Neither definition has a description.",
};

/** @type {Prose} */
const INSTRUCTIONS = {
  field: "instructions",
  title: "Instructions",
  approved: "Approved instructions",
  now: "Instructions now",
  none: "No instructions",
  same: "The instructions are unchanged.",
  neither: "Neither has instructions.",
};

/**
 * @param {HeldTool} tool
 * @returns {Prose}
 */
function proseOf(tool) {
  return tool.kind === "instructions" ? INSTRUCTIONS : DESCRIPTION;
}

/**
 * What is held, by kind: "2 tools", "1 prompt and instructions", "instructions".
 * @param {HeldTool[]} held
 * @returns {string}
 */
function heldWords(held) {
  const count = (/** @type {string} */ kind) => held.filter((item) => item.kind === kind).length;
  const instructions = count("instructions");
  const parts = [
    ...["tool", "prompt", "skill"].filter((kind) => count(kind) > 0).map((kind) => plural(count(kind), kind)),
    ...(instructions === 0 ? [] : [instructions === 1 ? "instructions" : `${instructions} sets of instructions`]),
  ];
  return parts.length > 1 ? `${parts.slice(0, -1).join(", ")} and ${parts[parts.length - 1]}` : parts.join("");
}

/**
 * The edits that turn `a` into `b`, keeping their longest common subsequence; deletions come
 * before the additions that replace them. Quadratic in the differing middle (the common start
 * and end are trimmed first), which for tool definitions is a few hundred lines at most.
 * @param {string[]} a
 * @param {string[]} b
 * @returns {DiffOp[]}
 */
export function diff(a, b) {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start += 1;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA -= 1;
    endB -= 1;
  }
  /** @type {DiffOp[]} */
  const ops = [];
  for (let i = 0; i < start; i += 1) ops.push({ op: "same", a: i, b: i });
  const n = endA - start;
  const m = endB - start;
  if (n * m > MAX_CELLS) {
    for (let i = start; i < endA; i += 1) ops.push({ op: "del", a: i, b: -1 });
    for (let j = start; j < endB; j += 1) ops.push({ op: "add", a: -1, b: j });
  } else {
    // lengths[i * width + j]: the longest common subsequence of the middles' tails from i and j.
    const width = m + 1;
    const lengths = new Uint32Array((n + 1) * width);
    for (let i = n - 1; i >= 0; i -= 1) {
      for (let j = m - 1; j >= 0; j -= 1) {
        lengths[i * width + j] = a[start + i] === b[start + j]
          ? lengths[(i + 1) * width + j + 1] + 1
          : Math.max(lengths[(i + 1) * width + j], lengths[i * width + j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n && j < m) {
      if (a[start + i] === b[start + j]) {
        ops.push({ op: "same", a: start + i, b: start + j });
        i += 1;
        j += 1;
      } else if (lengths[(i + 1) * width + j] >= lengths[i * width + j + 1]) {
        ops.push({ op: "del", a: start + i, b: -1 });
        i += 1;
      } else {
        ops.push({ op: "add", a: -1, b: start + j });
        j += 1;
      }
    }
    for (; i < n; i += 1) ops.push({ op: "del", a: start + i, b: -1 });
    for (; j < m; j += 1) ops.push({ op: "add", a: -1, b: start + j });
  }
  for (let k = 0; k < a.length - endA; k += 1) ops.push({ op: "same", a: endA + k, b: endB + k });
  return ops;
}

/**
 * Words, runs of spaces and single marks, so that a diff of them reads as a diff of prose.
 * @param {string} text
 * @returns {string[]}
 */
function words(text) {
  return text.match(/\s+|[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu) ?? [];
}

/**
 * `old` and `now` with what each lacks of the other marked: removed words in `del`, added ones
 * in `ins`. Lines that share too little are not marked word by word (all of it changed).
 * @param {string} old
 * @param {string} now
 * @returns {{old: Node[], now: Node[], similar: boolean}}
 */
function wordDiff(old, now) {
  const a = words(old);
  const b = words(now);
  const ops = diff(a, b);
  const shared = ops.filter((step) => step.op === "same").reduce((sum, step) => sum + a[step.a].length, 0);
  const similar = shared * 2 >= Math.min(old.length, now.length) && shared > 0;
  if (!similar) return { old: [document.createTextNode(old)], now: [document.createTextNode(now)], similar };
  /** @type {Node[]} */
  const left = [];
  /** @type {Node[]} */
  const right = [];
  for (const step of ops) {
    if (step.op === "same") {
      left.push(document.createTextNode(a[step.a]));
      right.push(document.createTextNode(b[step.b]));
    } else if (step.op === "del") {
      left.push(h("del", { class: "diff-word", text: a[step.a] }));
    } else {
      right.push(h("ins", { class: "diff-word", text: b[step.b] }));
    }
  }
  return { old: merge(left), now: merge(right), similar };
}

/**
 * Joins neighbouring marks of the same kind, so that a changed phrase is one mark.
 * @param {Node[]} nodes
 * @returns {Node[]}
 */
function merge(nodes) {
  /** @type {Node[]} */
  const merged = [];
  for (const node of nodes) {
    const last = merged.at(-1);
    if (last && last.nodeName === node.nodeName) last.textContent = `${last.textContent ?? ""}${node.textContent ?? ""}`;
    else merged.push(node);
  }
  // A space between two marks reads as part of the change.
  for (let i = 1; i + 1 < merged.length; i += 1) {
    const [before, between, after] = [merged[i - 1], merged[i], merged[i + 1]];
    if (between.nodeType === Node.TEXT_NODE && /^\s+$/.test(between.textContent ?? "") && before.nodeName !== "#text" && before.nodeName === after.nodeName) {
      before.textContent = `${before.textContent ?? ""}${between.textContent ?? ""}${after.textContent ?? ""}`;
      merged.splice(i, 2);
      i -= 1;
    }
  }
  return merged;
}

/**
 * A definition as the diff compares it: pretty JSON, one key or value per line.
 * @param {unknown} value
 * @returns {string[]}
 */
function jsonLines(value) {
  return (JSON.stringify(value, null, 2) ?? "null").split("\n");
}

/**
 * The pinned fields whose values differ, in the definitions' (sorted) order.
 * @param {Record<string, unknown>} pinned
 * @param {Record<string, unknown>} current
 * @returns {string[]}
 */
function changedFields(pinned, current) {
  const keys = [...new Set([...Object.keys(pinned), ...Object.keys(current)])].sort();
  return keys.filter((key) => JSON.stringify(pinned[key]) !== JSON.stringify(current[key]));
}

/**
 * The text a model reads of a definition (its `prose.field`), if it has one.
 * @param {Record<string, unknown> | null} definition
 * @param {Prose} prose
 * @returns {string | null}
 */
function textOf(definition, prose) {
  const text = definition?.[prose.field];
  return typeof text === "string" ? text : null;
}

/**
 * @param {HeldTool} tool
 * @returns {string}
 */
function keyOf(tool) {
  return `${tool.server}\u0000${tool.key}`;
}

/**
 * A held tool and the definition it is held with: approving it approves that definition only.
 * @param {HeldTool} tool
 * @returns {string}
 */
function heldKey(tool) {
  return `${keyOf(tool)}\u0000${JSON.stringify(tool.current)}`;
}

export class ReviewView {
  /**
   * @param {Store} store
   * @param {HTMLElement} root
   */
  constructor(store, root) {
    this.store = store;
    this.root = root;
    /**
     * Tools approved here, as they were approved (`heldKey`), that the `pins` events have not
     * taken away yet; one held again with another definition is shown again.
     * @type {Set<string>}
     */
    this.approved = new Set();
    /** @type {Set<string>} tools whose diff shows every line */
    this.unfolded = new Set();
    /** @type {Set<string>} new tools whose definition is open */
    this.opened = new Set();
    /** @type {Set<string>} approvals in flight, by focus key */
    this.busy = new Set();
    this.heading = h("h1", { text: "Review", attrs: { tabindex: "-1" } });
    this.counts = h("p", { class: "review-counts", data: { testid: "review-counts" } });
    this.body = h("div", { class: "review-body" });
    replace(root,
      h("header", { class: "page-head" }, h("div", {}, this.heading,
        h("p", { class: "page-sub" },
          "Switchboard pins each tool's definition the first time it sees it. A tool that changes afterwards is held back from editors until you approve it here: ",
          "its description is what a model reads, so a changed one can carry new instructions."),
        this.counts)),
      this.body);
    this.unsubscribe = store.subscribe((change) => this.onChange(change));
    this.render();
    // The feed sends what is held as it connects; until then (or if it is down), ask.
    if (store.pins === null) void this.load();
  }

  async load() {
    try {
      const report = await api.getPins();
      if (this.store.pins === null) this.store.onPins(report);
    } catch (error) {
      if (this.store.pins === null) replace(this.body, empty("Could not load what is held back", asApiError(error).message));
    }
  }

  /** @param {Change} change */
  onChange(change) {
    if (change.kind !== "pins") return;
    const report = this.store.pins;
    if (report) {
      // What the event no longer holds needs no hiding; what it holds again must show.
      const held = new Set(report.held.map(heldKey));
      for (const key of this.approved) if (!held.has(key)) this.approved.delete(key);
    }
    this.render();
  }

  /**
   * The held tools still to review, grouped by server in the API's order.
   * @param {PinReport} report
   * @returns {Map<string, HeldTool[]>}
   */
  pending(report) {
    /** @type {Map<string, HeldTool[]>} */
    const servers = new Map();
    for (const tool of report.held) {
      if (this.approved.has(heldKey(tool))) continue;
      const list = servers.get(tool.server) ?? [];
      list.push(tool);
      servers.set(tool.server, list);
    }
    return servers;
  }

  render() {
    const report = this.store.pins;
    // Focus stays on the control it was on when the list is drawn again.
    const focused = /** @type {HTMLElement | null} */ (document.activeElement);
    const focusKey = focused && this.body.contains(focused) ? focused.dataset.focus ?? null : null;
    if (report === null) {
      setText(this.counts, "");
      replace(this.body, loading("Loading what is held back…"));
      return;
    }
    const servers = this.pending(report);
    const held = [...servers.values()].flat();
    setText(this.counts, held.length === 0 ? "" : `${heldWords(held)} of ${plural(servers.size, "server")} held back from editors`);
    // A pin file's problem with nothing held (its pins could not be written) is said on its own.
    const problems = Object.entries(report.problems).filter(([server]) => !servers.has(server));
    const problemList = problems.length === 0 ? null : h("div", { class: "notice notice-error review-problems", attrs: { role: "alert" }, data: { testid: "pin-problems" } },
      h("strong", {}, icon("alert"), ` ${problems.length === 1 ? "A pin file has a problem" : `${problems.length} pin files have problems`}`),
      h("ul", { class: "review-problem-list" }, problems.map(([server, message]) => h("li", { data: { server } }, h("code", { class: "review-problem-server", text: server }), " ", h("span", { class: "review-problem", text: message })))));
    if (servers.size === 0) {
      replace(this.body, problemList, empty("Nothing is held back", h("span", {},
        "Every tool editors could be offered matches the definition approved for it. ",
        "When a server changes a tool's description or schema, a prompt or its instructions after they were pinned, or offers something new once it has pins (or at first sight while ",
        h("code", { text: "approve_new_tools" }), " is on), that is left out of every editor's list and waits here for your approval.")));
    } else {
      replace(this.body, problemList, [...servers].map(([server, tools]) => this.serverCard(server, tools, report.problems[server] ?? null)));
    }
    if (focusKey !== null) {
      const again = /** @type {HTMLElement | null} */ (this.body.querySelector(`[data-focus="${CSS.escape(focusKey)}"]`));
      if (again) again.focus();
      else this.heading.focus();
    }
  }

  /**
   * @param {string} server
   * @param {HeldTool[]} tools
   * @param {string | null} problem
   * @returns {HTMLElement}
   */
  serverCard(server, tools, problem) {
    const titleId = `review-server-${encodeURIComponent(server)}`;
    const reasons = new Set(tools.map((tool) => tool.reason));
    const unreadable = reasons.has("unreadable");
    const allKey = `approve-all:${server}`;
    return h("section", { class: "card review-server", data: { server }, attrs: { "aria-labelledby": titleId } },
      h("div", { class: "review-server-head" },
        h("h2", { class: "review-server-title", attrs: { id: titleId } },
          icon("server"),
          h("a", { class: "review-server-link", attrs: { href: `#/backend/${encodeURIComponent(server)}` }, text: server }),
          h("span", { class: "muted review-server-count", text: `${heldWords(tools)} held` })),
        this.approveButton({
          label: `Approve all of ${server}`,
          focus: allKey,
          primary: true,
          run: () => this.approve(server, tools, true, allKey),
        })),
      h("ul", { class: "review-reasons" }, [...reasons].map((reason) => h("li", { data: { reason } }, reasonText(reason, server)))),
      problem ? h("p", { class: "review-pin-problem", data: { testid: "pin-problem" } }, icon("alert"), h("span", { text: problem })) : null,
      h("div", { class: "review-tools" }, tools.map((tool) => this.toolCard(tool, unreadable))));
  }

  /**
   * @param {HeldTool} tool
   * @param {boolean} unreadable whether only the whole server can be approved
   * @returns {HTMLElement}
   */
  toolCard(tool, unreadable) {
    const key = keyOf(tool);
    const reason = REASONS[tool.reason];
    const approveKey = `approve:${tool.server}:${tool.key}`;
    const titleId = `review-tool-${encodeURIComponent(tool.server)}-${encodeURIComponent(tool.key)}`;
    // Instructions have one field, their text.
    const fields = tool.pinned && tool.kind !== "instructions" ? changedFields(tool.pinned, tool.current) : [];
    return h("article", { class: "review-tool", data: { tool: tool.key, kind: tool.kind, reason: tool.reason }, attrs: { "aria-labelledby": titleId } },
      h("div", { class: "review-tool-head" },
        h("h3", { class: "review-tool-title", attrs: { id: titleId } }, icon("tool"), h("code", { text: tool.name })),
        tool.kind === "tool" ? null : h("span", { class: "chip", text: KINDS[tool.kind] }),
        h("span", { class: `chip ${reason.chip}`, text: reason.label }),
        tool.detail ? h("span", { class: "muted review-detail", text: tool.detail }) : null,
        fields.length ? h("span", { class: "review-fields" }, h("span", { class: "muted", text: "in" }), fields.map((field) => h("span", { class: "tag", text: field }))) : null,
        h("span", { class: "toolbar-spacer" }),
        unreadable ? null : this.approveButton({
          label: "Approve",
          ariaLabel: `Approve ${tool.name} of ${tool.server}`,
          focus: approveKey,
          run: () => this.approve(tool.server, [tool], false, approveKey),
        })),
      tool.pinned ? this.changes(tool, tool.pinned, key) : this.definition(tool));
  }

  /**
   * What changed in a tool that was approved before: the descriptions, then the definitions.
   * Instructions are their text alone: the two texts are all there is to compare.
   * @param {HeldTool} tool
   * @param {Record<string, unknown>} pinned
   * @param {string} key
   * @returns {HTMLElement[]}
   */
  changes(tool, pinned, key) {
    const prose = proseOf(tool);
    const old = textOf(pinned, prose);
    const now = textOf(tool.current, prose);
    /** @type {HTMLElement} */
    let texts;
    if (old === now) {
      texts = h("p", { class: "review-same muted", text: old === null ? prose.neither : prose.same });
    } else {
      const marked = wordDiff(old ?? "", now ?? "");
      texts = h("div", { class: "review-descriptions", data: { testid: "descriptions" } },
        h("figure", { class: "review-text review-text-old", data: { side: "old" } },
          h("figcaption", { class: "section-title", text: prose.approved }),
          old === null ? h("p", { class: "muted review-none", text: prose.none }) : h("p", { class: "review-prose" }, marked.old)),
        h("figure", { class: "review-text review-text-new", data: { side: "new" } },
          h("figcaption", { class: "section-title", text: prose.now }),
          now === null ? h("p", { class: "muted review-none", text: prose.none }) : h("p", { class: "review-prose" }, marked.now)));
    }
    return tool.kind === "instructions" ? [texts] : [texts, this.diffBlock(tool, pinned, key)];
  }

  /**
   * The line diff of the two definitions as pretty JSON, unchanged stretches folded away.
   * @param {HeldTool} tool
   * @param {Record<string, unknown>} pinned
   * @param {string} key
   * @returns {HTMLElement}
   */
  diffBlock(tool, pinned, key) {
    const a = jsonLines(pinned);
    const b = jsonLines(tool.current);
    const ops = diff(a, b);
    const removed = ops.filter((step) => step.op === "del").length;
    const added = ops.filter((step) => step.op === "add").length;
    const folded = !this.unfolded.has(key);
    const foldable = ops.some((step, index) => step.op === "same" && !nearChange(ops, index));
    const toggleKey = `unfold:${tool.server}:${tool.name}`;
    const toggle = foldable ? h("button", {
      class: "btn btn-small btn-ghost",
      data: { focus: toggleKey },
      attrs: { type: "button", "aria-pressed": String(!folded) },
      text: folded ? `Show all ${b.length} lines` : "Show changes only",
      on: {
        click: () => {
          if (folded) this.unfolded.add(key);
          else this.unfolded.delete(key);
          this.render();
        },
      },
    }) : null;
    return h("section", { class: "review-diff", attrs: { "aria-label": `Definition of ${tool.name}, approved and now` } },
      h("div", { class: "review-diff-head" },
        h("span", { class: "section-title", text: "Definition" }),
        h("span", { class: "diff-stat" },
          h("span", { class: "diff-stat-del", text: `−${removed}` }),
          h("span", { class: "diff-stat-add", text: `+${added}` }),
          h("span", { class: "visually-hidden", text: ` ${plural(removed, "line")} removed, ${plural(added, "line")} added` })),
        h("span", { class: "toolbar-spacer" }),
        toggle),
      h("div", { class: "diff-scroll" }, diffTable(ops, a, b, folded, tool.name)));
  }

  /**
   * A tool approved for the first time: its description and definition as they are;
   * instructions, their text.
   * @param {HeldTool} tool
   * @returns {HTMLElement[]}
   */
  definition(tool) {
    const prose = proseOf(tool);
    const text = textOf(tool.current, prose);
    const shown = h("figure", { class: "review-text review-text-plain", data: { testid: "review-text" } },
      h("figcaption", { class: "section-title", text: prose.title }),
      text === null ? h("p", { class: "muted review-none", text: prose.none }) : h("p", { class: "review-prose", text }));
    if (tool.kind === "instructions") return [shown];
    const lines = jsonLines(tool.current);
    const key = keyOf(tool);
    return [
      shown,
      // The description is what a model reads first; the schemas are a click away.
      h("details", { class: "raw review-definition", attrs: { open: this.opened.has(key) }, on: { toggle: (event) => {
        if (/** @type {HTMLDetailsElement} */ (event.currentTarget).open) this.opened.add(key);
        else this.opened.delete(key);
      } } },
        h("summary", { text: `Definition as JSON (${plural(lines.length, "line")})` }),
        h("pre", { class: "code review-json", text: lines.join("\n") })),
    ];
  }

  /**
   * @param {{label: string, ariaLabel?: string, focus: string, primary?: boolean, run: () => Promise<void>}} spec
   * @returns {HTMLButtonElement}
   */
  approveButton(spec) {
    const busy = this.busy.has(spec.focus);
    const button = h("button", {
      class: `btn btn-small ${spec.primary ? "btn-primary" : "btn-accent"} review-approve${busy ? " is-busy" : ""}`,
      data: { focus: spec.focus },
      attrs: { type: "button", "aria-label": spec.ariaLabel, "aria-disabled": busy ? "true" : undefined },
    }, icon("check"), h("span", { class: "btn-text", text: busy ? "Approving…" : spec.label }));
    button.addEventListener("click", () => void spec.run());
    return button;
  }

  /**
   * Pins `tools` of `server` as they are now (with `all`, every held tool of the server, which is
   * the only approval an unreadable pin file takes). They leave the list at once; the `pins`
   * event that follows confirms it.
   * @param {string} server
   * @param {HeldTool[]} tools the ones shown
   * @param {boolean} all
   * @param {string} focusKey the button's
   */
  async approve(server, tools, all, focusKey) {
    if (this.busy.has(focusKey)) return;
    // Where focus goes once they are gone: the control that takes the button's place.
    const controls = [...this.body.querySelectorAll(".review-approve")];
    const at = controls.findIndex((element) => /** @type {HTMLElement} */ (element).dataset.focus === focusKey);
    const names = tools.map((tool) => tool.key);
    const what = names.length === 1 ? `${tools[0].name} of ${server}` : `${plural(names.length, "definition")} of ${server}`;
    this.busy.add(focusKey);
    this.render();
    let approved = false;
    try {
      await api.approvePins(server, all ? null : names, Object.fromEntries(tools.map((tool) => [tool.key, tool.sha256])));
      for (const tool of tools) this.approved.add(heldKey(tool));
      approved = true;
      toast(`Approved ${what}`, names.length === 1 ? "Pinned as it is now; editors are offered it again." : "Pinned as they are now; editors are offered them again.");
      announce(`Approved ${what}`);
    } catch (error) {
      toast(`Could not approve ${what}`, asApiError(error).message, "error");
      // What is held may have changed meanwhile (a 404: none of it is held any more).
      void api.getPins().then((report) => this.store.onPins(report), () => {});
    } finally {
      this.busy.delete(focusKey);
    }
    this.render();
    if (!this.alive() || !approved) return;
    // The button had focus; drawing the list again without it left focus on the heading.
    if (document.activeElement !== this.heading && document.activeElement !== document.body) return;
    const next = /** @type {HTMLElement | undefined} */ ([...this.body.querySelectorAll(".review-approve")][Math.max(0, at)]);
    (next ?? this.heading).focus();
  }

  /** @returns {boolean} whether this page is still the one shown */
  alive() {
    return this.root.contains(this.heading);
  }

  destroy() {
    this.unsubscribe();
  }
}

/**
 * A server's reason in words.
 * @param {HeldReason} reason
 * @param {string} server
 * @returns {Node}
 */
function reasonText(reason, server) {
  switch (reason) {
    case "changed":
      return h("span", {}, h("strong", { text: "Changed since approved. " }), `What ${server} offers now differs from the definition approved. Read the change before you approve it.`);
    case "new":
      return h("span", {}, h("strong", { text: "New. " }), `${server} offers something never seen from it before. It waits for your approval before editors are offered it.`);
    case "unreadable":
      return h("span", {}, h("strong", { text: "Pin file unreadable. " }), `None of ${server}'s tools can be checked against what was approved. Approving pins every tool of ${server} as it is now and writes its pin file again.`);
    case "unchecked":
      return h("span", {}, h("strong", { text: "Cannot be checked. " }), `Switchboard cannot tell later whether this definition from ${server} changed. Approve it only if you trust it as it is.`);
  }
}

/**
 * Whether the step at `index` is within CONTEXT steps of a change.
 * @param {DiffOp[]} ops
 * @param {number} index
 * @returns {boolean}
 */
function nearChange(ops, index) {
  for (let k = Math.max(0, index - CONTEXT); k <= Math.min(ops.length - 1, index + CONTEXT); k += 1) {
    if (ops[k].op !== "same") return true;
  }
  return false;
}

/**
 * A unified diff as a table: old and new line numbers, the kind of line, its text. A changed
 * line that replaces a similar one has its changed words marked.
 * @param {DiffOp[]} ops
 * @param {string[]} a
 * @param {string[]} b
 * @param {boolean} folded whether unchanged stretches far from a change are folded away
 * @param {string} name the tool's, for the caption
 * @returns {HTMLTableElement}
 */
function diffTable(ops, a, b, folded, name) {
  // Pairs each run of removed lines with the added lines that follow it, for word marks.
  /** @type {Map<number, Node[]>} */
  const marked = new Map();
  for (let index = 0; index < ops.length;) {
    if (ops[index].op !== "del") {
      index += 1;
      continue;
    }
    let dels = index;
    while (dels < ops.length && ops[dels].op === "del") dels += 1;
    let adds = dels;
    while (adds < ops.length && ops[adds].op === "add") adds += 1;
    for (let k = 0; k < Math.min(dels - index, adds - dels); k += 1) {
      const removed = ops[index + k];
      const added = ops[dels + k];
      const words = wordDiff(a[removed.a], b[added.b]);
      if (words.similar) {
        marked.set(index + k, words.old);
        marked.set(dels + k, words.now);
      }
    }
    index = adds;
  }
  /** @type {HTMLTableRowElement[]} */
  const rows = [];
  let hidden = 0;
  const flush = () => {
    if (hidden === 0) return;
    rows.push(h("tr", { class: "diff-gap" }, h("td", { class: "diff-num", attrs: { "aria-hidden": "true" }, text: "⋯" }), h("td", { class: "diff-num" }), h("td", { class: "diff-sign" }),
      h("td", { class: "diff-text", text: `${plural(hidden, "unchanged line")}` })));
    hidden = 0;
  };
  ops.forEach((step, index) => {
    if (folded && step.op === "same" && !nearChange(ops, index)) {
      hidden += 1;
      return;
    }
    flush();
    const text = step.op === "add" ? b[step.b] : a[step.a];
    const sign = step.op === "add" ? "+" : step.op === "del" ? "−" : "";
    rows.push(h("tr", { class: `diff-line diff-${step.op}` },
      h("td", { class: "diff-num", text: step.a >= 0 ? String(step.a + 1) : "" }),
      h("td", { class: "diff-num", text: step.b >= 0 ? String(step.b + 1) : "" }),
      h("td", { class: "diff-sign" }, h("span", { attrs: { "aria-hidden": "true" }, text: sign }), step.op === "same" ? null : h("span", { class: "visually-hidden", text: step.op === "add" ? "added" : "removed" })),
      h("td", { class: "diff-text" }, marked.get(index) ?? text)));
  });
  flush();
  return h("table", { class: "diff", data: { testid: "diff" } },
    h("caption", { class: "visually-hidden", text: `Changes to the definition of ${name}: approved line number, current line number, change, text` }),
    h("colgroup", {}, h("col", { class: "diff-col-num" }), h("col", { class: "diff-col-num" }), h("col", { class: "diff-col-sign" }), h("col")),
    h("tbody", {}, rows));
}
