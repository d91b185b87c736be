// The control API, same-origin, with the dashboard's key as a bearer token (session.js). Every
// call resolves to parsed JSON or throws an ApiError carrying the API's `{code, message}` (or a
// description of what failed).

import { authorization, refused } from "./session.js";

/** @typedef {import('./types.js').BackendSummary} BackendSummary */
/** @typedef {import('./types.js').BackendDetail} BackendDetail */
/** @typedef {import('./types.js').ActionResult} ActionResult */
/** @typedef {import('./types.js').ToolResult} ToolResult */
/** @typedef {import('./types.js').ConfigStatus} ConfigStatus */
/** @typedef {import('./types.js').ClientSnippet} ClientSnippet */
/** @typedef {import('./types.js').InstallResult} InstallResult */
/** @typedef {import('./types.js').ReloadOutcome} ReloadOutcome */
/** @typedef {import('./types.js').SwitchOutcome} SwitchOutcome */
/** @typedef {import('./types.js').SignInStarted} SignInStarted */
/** @typedef {import('./types.js').SecretsList} SecretsList */
/** @typedef {import('./types.js').ActivityPage} ActivityPage */
/** @typedef {import('./types.js').ActivityStats} ActivityStats */

/** A failed API call: `code` is the API's code, or `network` / `http_<status>` / `bad_json`. */
export class ApiError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {number} status HTTP status; 0 when no answer came.
   * @param {Record<string, unknown>} [body] the API's whole error answer, for codes that carry
   *   more than a message (`missing_required_input` names the inputs)
   */
  constructor(code, message, status, body = {}) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.status = status;
    this.body = body;
  }
}

/** Where the API lives: `/api/` of the origin that served the page. */
const API_ROOT = new URL("/api/", location.href);

/**
 * @param {string} path below /api/, already encoded
 * @returns {string}
 */
export function apiUrl(path) {
  return new URL(path, API_ROOT).href;
}

/**
 * @param {string} name
 * @returns {string}
 */
function seg(name) {
  return encodeURIComponent(name);
}

/**
 * @param {string} path
 * @param {RequestInit} [init]
 * @returns {Promise<unknown>}
 */
async function request(path, init) {
  let response;
  try {
    response = await fetch(apiUrl(path), {
      credentials: "omit",
      headers: { Accept: "application/json", ...authorization(), ...(init?.body !== undefined ? { "Content-Type": "application/json" } : {}) },
      ...init,
    });
  } catch (error) {
    throw new ApiError("network", `Switchboard did not answer (${String(error)})`, 0);
  }
  const text = await response.text();
  /** @type {unknown} */
  let body = null;
  if (text !== "") {
    try {
      body = JSON.parse(text);
    } catch {
      if (response.ok) throw new ApiError("bad_json", `The answer of ${path} is not JSON`, response.status);
    }
  }
  if (!response.ok) {
    if (response.status === 401) refused();
    if (isErrorBody(body)) throw new ApiError(body.code, body.message, response.status, /** @type {Record<string, unknown>} */ (body));
    const hint = response.status === 401 || response.status === 403
      ? "Not authorized: open the dashboard from the Switchboard tray menu or with the link `switchboard serve` prints."
      : `${response.status} ${response.statusText}`.trim();
    throw new ApiError(`http_${response.status}`, hint, response.status);
  }
  return body;
}

/**
 * @param {unknown} body
 * @returns {body is import('./types.js').ApiErrorBody}
 */
function isErrorBody(body) {
  return typeof body === "object" && body !== null
    && typeof (/** @type {{code?: unknown}} */ (body).code) === "string"
    && typeof (/** @type {{message?: unknown}} */ (body).message) === "string";
}

/** @returns {Promise<BackendSummary[]>} */
export async function listBackends() {
  return /** @type {BackendSummary[]} */ (await request("backends"));
}

/**
 * @param {string} name
 * @returns {Promise<BackendDetail>}
 */
export async function getBackend(name) {
  return /** @type {BackendDetail} */ (await request(`backends/${seg(name)}`));
}

/**
 * @param {string} name
 * @param {"start" | "stop" | "restart"} action
 * @returns {Promise<ActionResult>}
 */
export async function backendAction(name, action) {
  return /** @type {ActionResult} */ (await request(`backends/${seg(name)}/${action}`, { method: "POST", body: "{}" }));
}

/**
 * Starts a sign-in to a remote server.
 * @param {string} name
 * @returns {Promise<SignInStarted>} the authorization server's page to open
 */
export async function signIn(name) {
  return /** @type {SignInStarted} */ (await request(`backends/${seg(name)}/sign-in`, { method: "POST", body: "{}" }));
}

/**
 * Forgets a remote server's tokens; it then waits for a new sign-in.
 * @param {string} name
 * @returns {Promise<{ok: true}>}
 */
export async function signOut(name) {
  return /** @type {{ok: true}} */ (await request(`backends/${seg(name)}/sign-out`, { method: "POST", body: "{}" }));
}

/**
 * @param {string} backend
 * @param {string} tool the backend's own tool name
 * @param {Record<string, unknown>} args
 * @returns {Promise<ToolResult>}
 */
export async function callTool(backend, tool, args) {
  const path = `backends/${seg(backend)}/tools/${seg(tool)}/call`;
  return /** @type {ToolResult} */ (await request(path, { method: "POST", body: JSON.stringify(args) }));
}

/** @returns {Promise<ConfigStatus>} */
export async function getConfig() {
  return /** @type {ConfigStatus} */ (await request("config"));
}

/** @returns {Promise<ReloadOutcome>} */
export async function reloadConfig() {
  return /** @type {ReloadOutcome} */ (await request("config/reload", { method: "POST", body: "{}" }));
}

/** @returns {Promise<ClientSnippet[]>} */
export async function listClients() {
  return /** @type {ClientSnippet[]} */ (await request("clients"));
}

/**
 * Writes the entry that points the editor at Switchboard into the editor's own config.
 * @param {string} id a client id of `listClients`
 * @returns {Promise<InstallResult>}
 */
export async function installClient(id) {
  return /** @type {InstallResult} */ (await request(`clients/${seg(id)}/install`, { method: "POST", body: "{}" }));
}

/**
 * What moving each editor found would do. A file macOS guards is read only for the editor
 * `read` names, when the person asked for it.
 * @param {string} [read] an editor's id
 * @returns {Promise<import('./types.js').EditorMoves>}
 */
export async function listMoves(read) {
  const query = read === undefined ? "" : `?read=${encodeURIComponent(read)}`;
  return /** @type {import('./types.js').EditorMoves} */ (await request(`clients/moves${query}`));
}

/**
 * Moves the editor's servers over; refused (409) if its file changed since the preview whose
 * `fingerprint` is given. The config is then read again.
 * @param {string} id an editor's id of `listMoves`
 * @param {{fingerprint: string, keep_originals: boolean, only_duplicates: boolean, sandbox: boolean}} choice
 * @returns {Promise<import('./types.js').MoveResult>}
 */
export async function moveEditor(id, choice) {
  return /** @type {import('./types.js').MoveResult} */ (await request(`clients/${seg(id)}/move`, { method: "POST", body: JSON.stringify(choice) }));
}

/**
 * Undoes the editor's last move; refused (409) if its file changed since, unless `force`.
 * @param {string} id
 * @param {boolean} force
 * @returns {Promise<import('./types.js').UndoResult>}
 */
export async function undoMove(id, force) {
  return /** @type {import('./types.js').UndoResult} */ (await request(`clients/${seg(id)}/undo`, { method: "POST", body: JSON.stringify(force ? { force: true } : {}) }));
}

/** @returns {Promise<import('./types.js').ProfileBudget[]>} */
export async function listProfiles() {
  return /** @type {import('./types.js').ProfileBudget[]} */ (await request("profiles"));
}

/**
 * Turns a server or a tool on or off for a profile: the API edits the config file and applies
 * it, or refuses (409) a change the config would not apply with, leaving the file as it was.
 * @param {string} profile
 * @param {{server: string, on: boolean} | {tool: string, on: boolean}} change
 * @returns {Promise<SwitchOutcome>}
 */
export async function switchInProfile(profile, change) {
  return /** @type {SwitchOutcome} */ (await request(`profiles/${seg(profile)}/switch`, { method: "POST", body: JSON.stringify(change) }));
}

/** @returns {Promise<SecretsList>} */
export async function listSecrets() {
  return /** @type {SecretsList} */ (await request("secrets"));
}

/**
 * Keeps `value` in the keychain as the secret `name`; the config is then read again.
 * @param {string} name
 * @param {string} value
 * @returns {Promise<ReloadOutcome>}
 */
export async function setSecret(name, value) {
  return /** @type {ReloadOutcome} */ (await request(`secrets/${seg(name)}`, { method: "PUT", body: JSON.stringify({ value }) }));
}

/**
 * Removes the secret `name` from the keychain; the config is then read again.
 * @param {string} name
 * @returns {Promise<ReloadOutcome>}
 */
export async function deleteSecret(name) {
  return /** @type {ReloadOutcome} */ (await request(`secrets/${seg(name)}`, { method: "DELETE", body: "{}" }));
}

/**
 * A page of the activity log, newest first.
 * @param {URLSearchParams} query filters (`since`, `until`, `server`, `tool`, `client`,
 *   `outcome`), `before` (the previous page's `next_before`) and `limit`
 * @returns {Promise<ActivityPage>}
 */
export async function listActivity(query) {
  return /** @type {ActivityPage} */ (await request(`activity?${query}`));
}

/**
 * Calls and latencies per server and name for the records the filters select.
 * @param {URLSearchParams} query
 * @returns {Promise<ActivityStats>}
 */
export async function activityStats(query) {
  return /** @type {ActivityStats} */ (await request(`activity/stats?${query}`));
}

/**
 * The records the filters select, as a file to save (the key goes as a header, so this is a
 * request, not a plain link).
 * @param {"jsonl" | "csv"} format
 * @param {URLSearchParams} query
 * @returns {Promise<Blob>}
 */
export async function activityExport(format, query) {
  const params = new URLSearchParams(query);
  params.set("format", format);
  let response;
  try {
    response = await fetch(apiUrl(`activity/export?${params}`), { credentials: "omit", headers: authorization() });
  } catch (error) {
    throw new ApiError("network", `Switchboard did not answer (${String(error)})`, 0);
  }
  if (response.status === 401) refused();
  if (!response.ok) throw new ApiError(`http_${response.status}`, `${response.status} ${response.statusText}`.trim(), response.status);
  return await response.blob();
}

/** @returns {Promise<import('./types.js').PinReport>} */
export async function getPins() {
  return /** @type {import('./types.js').PinReport} */ (await request("pins"));
}

/**
 * Pins held tools of `server` as they were shown, which offers them to editors again; refused
 * (409) if one changed since.
 * @param {string} server
 * @param {string[] | null} tools the server's own names; null for every held tool of the server
 * @param {Record<string, string>} seen each shown tool's `sha256`
 * @returns {Promise<{approved: number}>}
 */
export async function approvePins(server, tools, seen) {
  const body = JSON.stringify(tools === null ? { seen } : { tools, seen });
  return /** @type {{approved: number}} */ (await request(`pins/${seg(server)}/approve`, { method: "POST", body }));
}

/**
 * Answers a call waiting for a yes; refused (404) once it is not waiting any more.
 * @param {number} id
 * @param {"allow" | "deny"} decision
 * @param {boolean} forSession with allow: the same tool runs for the rest of that session
 * @returns {Promise<unknown>}
 */
export async function decideApproval(id, decision, forSession) {
  return await request(`approvals/${id}`, { method: "POST", body: JSON.stringify({ decision, for_session: forSession }) });
}

/**
 * @param {number} id
 * @param {"accept" | "decline" | "cancel"} action
 * @param {Record<string, unknown>} [content] an accepted form's fields
 */
export async function answerQuestion(id, action, content) {
  return await request(`questions/${id}`, { method: "POST", body: JSON.stringify(content === undefined ? { action } : { action, content }) });
}

/**
 * The registry sources' entries that match `query` (every entry, up to 200, when it is empty),
 * and how each source's last read went.
 * @param {string} query
 * @returns {Promise<import('./types.js').RegistrySearch>}
 */
export async function searchRegistry(query) {
  return /** @type {import('./types.js').RegistrySearch} */ (await request(`registry/search?q=${encodeURIComponent(query)}`));
}

/**
 * What adding a registry entry would do, exactly (the program, its arguments and environment, or
 * the address and headers), worked out by Switchboard from the entry; nothing is written or
 * started.
 * @param {import('./types.js').RegistryChoice} choice
 * @returns {Promise<import('./types.js').RegistryPlan>}
 */
export async function planFromRegistry(choice) {
  return /** @type {import('./types.js').RegistryPlan} */ (await request("registry/add", { method: "POST", body: JSON.stringify(choice) }));
}

/**
 * Adds a registry entry to the config as a server, exactly as the plan `confirm` names showed
 * it (refused with `plan_changed` if adding it would now do anything else). Secret inputs go to
 * the keychain, never to the config.
 * @param {import('./types.js').RegistryChoice} choice
 * @param {string} confirm the plan's `confirm`
 * @returns {Promise<import('./types.js').RegistryAdded>}
 */
export async function addFromRegistry(choice, confirm) {
  return /** @type {import('./types.js').RegistryAdded} */ (await request("registry/add", { method: "POST", body: JSON.stringify({ ...choice, confirm }) }));
}

/** @returns {Promise<import('./types.js').InstalledServer[]>} */
export async function listInstalled() {
  return /** @type {import('./types.js').InstalledServer[]} */ (await request("registry/installed"));
}

/**
 * Moves a server added from a registry to its source's newest version; it restarts, and tools
 * that changed are held for review.
 * @param {string} server
 * @returns {Promise<import('./types.js').RegistryUpdated>}
 */
export async function updateServer(server) {
  return /** @type {import('./types.js').RegistryUpdated} */ (await request(`registry/update/${seg(server)}`, { method: "POST", body: "{}" }));
}

/**
 * Removes a server from the config, with its pins and cache, and the named secrets from the
 * keychain.
 * @param {string} server
 * @param {string[]} deleteSecrets
 * @returns {Promise<import('./types.js').ServerRemoved>}
 */
export async function removeServer(server, deleteSecrets) {
  return /** @type {import('./types.js').ServerRemoved} */ (await request(`servers/${seg(server)}`, { method: "DELETE", body: JSON.stringify({ delete_secrets: deleteSecrets }) }));
}

/** @returns {Promise<import('./types.js').Attention[]>} */
export async function getAttention() {
  return /** @type {import('./types.js').Attention[]} */ (await request("attention"));
}

/**
 * POSTs `{}` to a path of the control API that an attention entry names (`/api/…`).
 * @param {string} path
 * @returns {Promise<unknown>}
 */
export async function postAction(path) {
  if (!path.startsWith("/api/")) throw new ApiError("bad_path", `Not a control API path: ${path}`, 0);
  return await request(path.slice("/api/".length), { method: "POST", body: "{}" });
}
