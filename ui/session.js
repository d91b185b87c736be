// The dashboard's key: a secret of this run of Switchboard, given in the address's fragment
// (`/#key=…`, which no browser sends to a server) and kept in sessionStorage, which belongs to
// this page's origin (so its port) alone. Every API request sends it as a bearer token. There is
// no cookie: browsers send cookies to every port of a host, so another program listening on
// 127.0.0.1 could be handed one; and the key is not the command line's token.

const STORAGE_KEY = "switchboard.key";

/**
 * Takes the key out of the address (where the dashboard link carries it) into this tab's
 * storage, keeping it out of the history, bookmarks and screenshots.
 */
export function takeKeyFromAddress() {
  const match = /^#key=([A-Za-z0-9._~-]+)$/.exec(location.hash);
  if (match === null) return;
  try {
    sessionStorage.setItem(STORAGE_KEY, match[1]);
  } catch {
    // Storage refused: the key lives in this page only.
    fallback = match[1];
  }
  history.replaceState(null, "", `${location.pathname}${location.search}#/`);
}

/** @type {string | null} */
let fallback = null;

/** @returns {string | null} the key, when this tab was opened with one */
export function sessionKey() {
  try {
    return sessionStorage.getItem(STORAGE_KEY) ?? fallback;
  } catch {
    return fallback;
  }
}

/** @returns {Record<string, string>} the header that carries the key */
export function authorization() {
  const key = sessionKey();
  return key === null ? {} : { Authorization: `Bearer ${key}` };
}

/** @type {(() => void)[]} */
const lockListeners = [];

/**
 * Calls `listener` once the API refuses the key (none was given, or it is from an earlier run
 * of Switchboard, which makes a new one each time it starts).
 * @param {() => void} listener
 */
export function whenLocked(listener) {
  lockListeners.push(listener);
}

/** Says that the API refused the key. */
export function refused() {
  for (const listener of lockListeners) listener();
}
