// Small DOM helpers: building elements, announcing changes to screen readers, copying text.

/**
 * @typedef {string | number | Node | null | undefined | false} Child
 * @typedef {Child | Child[]} Children
 */

/**
 * @typedef {object} Props
 * @property {string} [class]
 * @property {string} [text] textContent (instead of children)
 * @property {Record<string, string>} [data] data-* attributes
 * @property {Record<string, string | number | boolean | null | undefined>} [attrs] other attributes; false/null/undefined leave one out
 * @property {Record<string, EventListener>} [on] event listeners by event name
 */

/**
 * Creates an element. `props` are the few things every view needs; anything else goes through
 * `attrs`, so that what ends up in the DOM is plain to see.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Props} [props]
 * @param {...Children} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  if (props.class) element.className = props.class;
  if (props.text !== undefined) element.textContent = props.text;
  for (const [key, value] of Object.entries(props.data ?? {})) element.dataset[key] = value;
  for (const [key, value] of Object.entries(props.attrs ?? {})) {
    if (value === false || value === null || value === undefined) continue;
    element.setAttribute(key, value === true ? "" : String(value));
  }
  for (const [type, listener] of Object.entries(props.on ?? {})) element.addEventListener(type, listener);
  append(element, children);
  return element;
}

/**
 * @param {Node} parent
 * @param {Children[]} children
 */
export function append(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "object" ? /** @type {Node} */ (child) : document.createTextNode(String(child)));
  }
}

/**
 * Replaces every child of `parent`.
 * @param {Node} parent
 * @param {...Children} children
 */
export function replace(parent, ...children) {
  /** @type {Element} */ (parent).replaceChildren();
  append(parent, children);
}

/**
 * Sets an element's text only when it changed, so that screen readers and selections are not
 * disturbed by identical updates.
 * @param {Element} element
 * @param {string} text
 */
export function setText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}

/**
 * Says `message` through the page's polite live region.
 * @param {string} message
 */
export function announce(message) {
  const region = document.getElementById("announcer");
  if (!region) return;
  // Clearing first makes a repeated message be read again.
  region.textContent = "";
  window.setTimeout(() => { region.textContent = message; }, 30);
}

/**
 * Copies `text` to the clipboard; falls back to a selection and `execCommand` where the async
 * clipboard is not allowed (some webviews).
 * @param {string} text
 * @returns {Promise<boolean>}
 */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h("textarea", { class: "offscreen", attrs: { readonly: true, "aria-hidden": "true" } });
    area.value = text;
    document.body.appendChild(area);
    area.select();
    let copied = false;
    try {
      copied = document.execCommand("copy");
    } catch {
      copied = false;
    }
    area.remove();
    return copied;
  }
}

/**
 * A button that copies `getText()` and says so for a moment.
 * @param {() => string} getText
 * @param {string} label accessible name, e.g. "Copy snippet for Cursor"
 * @returns {HTMLButtonElement}
 */
export function copyButton(getText, label) {
  const button = h("button", { class: "btn btn-small", attrs: { type: "button", "aria-label": label } }, icon("copy"), h("span", { text: "Copy" }));
  /** @type {number | undefined} */
  let timer;
  button.addEventListener("click", async () => {
    const copied = await copyText(getText());
    const span = /** @type {HTMLElement} */ (button.lastElementChild);
    span.textContent = copied ? "Copied" : "Copy failed";
    button.classList.toggle("btn-done", copied);
    announce(copied ? "Copied to the clipboard" : "Could not copy to the clipboard");
    clearTimeout(timer);
    timer = window.setTimeout(() => {
      span.textContent = "Copy";
      button.classList.remove("btn-done");
    }, 1600);
  });
  return button;
}

const ICONS = {
  play: "M5 3.5v9l8-4.5z",
  stop: "M4 4h8v8H4z",
  restart: "M13 8a5 5 0 1 1-1.46-3.54M13 2.5v3h-3",
  copy: "M5.5 5.5h7v8h-7zM3.5 10.5v-8h7",
  search: "M7 12A5 5 0 1 0 7 2a5 5 0 0 0 0 10zM10.5 10.5 14 14",
  chevron: "M6 4l4 4-4 4",
  server: "M2.5 3h11v4h-11zM2.5 9h11v4h-11zM5 5h.01M5 11h.01",
  plug: "M6 2v3M10 2v3M4 5h8v3a4 4 0 0 1-8 0zM8 12v2.5",
  tool: "M10.5 2.5a3 3 0 0 0-2.8 4L3 11.2 4.8 13l4.7-4.7a3 3 0 0 0 4-2.8l-1.8 1.8-1.8-.5-.5-1.8z",
  alert: "M8 2 14.5 13.5h-13zM8 6.5v3M8 11.5h.01",
  list: "M3 4h10M3 8h10M3 12h10",
  key: "M13.5 5.5a3 3 0 1 1-6 0 3 3 0 0 1 6 0zM8.4 7.6 2.5 13.5M4.5 11.5 6 13M6.5 9.5 8 11",
  signOut: "M6.5 2.5h-3v11h3M10 5l3 3-3 3M13 8H6",
  trash: "M3 4.5h10M6.5 4.5V3h3v1.5M4.5 4.5l.5 9h6l.5-9",
  download: "M8 2.5v8M4.5 7 8 10.5 11.5 7M3 13.5h10",
  activity: "M1.5 8.5h3l2-5 3 9 2-4h3",
  open: "M9.5 2.5h4v4M13.5 2.5 7.5 8.5M11.5 9.5v4h-9v-9h4",
  check: "M3 8.5 6.5 12 13 4.5",
  shield: "M8 1.8 13.5 4v4c0 3.2-2.3 5.4-5.5 6.4C4.8 13.4 2.5 11.2 2.5 8V4z",
};

/**
 * A 16px line icon, hidden from assistive technology (its button or link has the name).
 * @param {keyof typeof ICONS} name
 * @returns {SVGSVGElement}
 */
export function icon(name) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 16 16");
  svg.setAttribute("class", `icon icon-${name}`);
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", ICONS[name]);
  svg.appendChild(path);
  return svg;
}
