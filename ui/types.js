// JSDoc types of the control API's JSON, mirroring the Rust status structs
// (crates/supervisor/src/status.rs, crates/supervisor/src/output.rs) and the API's own views
// (crates/control/src/api/) as the API serializes them. Nothing here runs; modules import the
// types with `@typedef {import('./types.js').Name} Name`.

/**
 * `needs_sign_in`: a remote server waits for someone to sign in; nothing restarts it meanwhile.
 * A remote server that is `starting` is connecting.
 * @typedef {"stopped" | "starting" | "ready" | "backoff" | "crash_loop" | "stopping" | "needs_sign_in"} BackendState
 */

/**
 * Why a backend's process (or a remote server's link) ended (`StopReason`).
 * @typedef {"crash" | "unresponsive" | "handshake_failed" | "stopped_by_user" | "restarted_by_user" | "config_changed" | "shutdown" | "needs_sign_in"} StopReason
 */

/**
 * How a process ended (`ExitDescription`); for a remote server, `disconnected` says why its link
 * ended, and `code` and `signal` are null.
 * @typedef {object} ExitDescription
 * @property {number | null} code
 * @property {number | null} signal
 * @property {string} [disconnected]
 */

/**
 * One captured line of a backend's output (`OutputLine`): its stderr, what it printed on stdout
 * that is not JSON-RPC, or, for a remote server, what its link saw go wrong (`http`).
 * @typedef {object} OutputLine
 * @property {number} at_ms Milliseconds since the Unix epoch.
 * @property {"stderr" | "stdout_noise" | "http"} stream
 * @property {string} text
 */

/**
 * The last end of a backend's process, as the summary carries it.
 * @typedef {object} LastExit
 * @property {number} at_ms
 * @property {StopReason} reason
 * @property {ExitDescription | null} exit `null` when the process never started.
 * @property {number} uptime_ms
 * @property {string | null} detail
 */

/**
 * One entry of the restart history (`HistoryEntry`).
 * @typedef {LastExit & {output_tail: OutputLine[]}} HistoryEntry
 */

/**
 * What a package runner (`npx`, `uvx`…) installs before it starts the server (`Installing`).
 * @typedef {object} Installing
 * @property {string} runner As the command line names it: "npx", "pnpm dlx", "uv tool run"…
 * @property {string} package As the command line names it.
 * @property {number} since_ms
 */

/**
 * `GET /api/backends` items and the `status` event.
 * @typedef {object} BackendSummary
 * @property {string} name
 * @property {BackendState} state
 * @property {Installing | null} installing While starting: what its package runner is still
 *   installing.
 * @property {number | null} pid Null for a remote server, which has no process.
 * @property {number} restarts Automatic restarts since Switchboard started.
 * @property {number | null} uptime_ms Of the current process, when it has one.
 * @property {number} tools How many tools the backend lists.
 * @property {number} [pending] Requests awaiting the backend's answer (in lists, not in events).
 * @property {number | null} restart_at_ms When the next automatic restart is due (backoff).
 * @property {string | null} last_error
 * @property {boolean} enabled
 * @property {LastExit | null} last_exit
 * @property {ProtocolEra | null} era Found by the last handshake.
 * @property {string | null} protocol_version Of the last handshake.
 * @property {BackendAction[]} actions What the dashboard and the tray offer to do to it now.
 * @property {boolean} failing It crashed and waits to restart, or is in a crash loop.
 * @property {RemoteTransport | null} transport For a remote server, its link's HTTP transport
 *   (`auto` until a link settles it); null for a local server.
 * @property {string | null} version The package version it runs: its command's exact pin, or
 *   what the package runner resolved; null when neither says.
 */

/**
 * What can be done to a backend (`BackendAction`), as its summary offers it.
 * @typedef {"start" | "stop" | "restart" | "sign_in" | "sign_out"} BackendAction
 */

/**
 * A remote server's HTTP transport (`RemoteTransport`): `sse` is the HTTP+SSE transport of MCP
 * 2024-11-05; `auto` tries Streamable HTTP, then that one.
 * @typedef {"auto" | "streamable-http" | "sse"} RemoteTransport
 */

/**
 * The protocol era of a backend (`Era`): the session era (`initialize` and a session, up to
 * 2025-11-25), or the stateless era (2026-07-28 on: the `_meta` envelope in every request).
 * @typedef {"session" | "stateless"} ProtocolEra
 */

/**
 * What the server said about itself in the handshake (`ServerDescription`).
 * @typedef {object} ServerDescription
 * @property {ProtocolEra} era
 * @property {string} protocol_version
 * @property {{name?: string, version?: string, title?: string, [key: string]: unknown}} server_info
 * @property {Record<string, unknown>} capabilities
 * @property {string | null} instructions
 */

/**
 * A JSON Schema, as much of it as the dashboard reads; anything else is kept and shown raw.
 * @typedef {object} JsonSchema
 * @property {string | string[]} [type]
 * @property {string} [title]
 * @property {string} [description]
 * @property {Record<string, JsonSchema>} [properties]
 * @property {string[]} [required]
 * @property {JsonSchema | boolean} [additionalProperties]
 * @property {JsonSchema | JsonSchema[]} [items]
 * @property {unknown[]} [enum]
 * @property {unknown} [const]
 * @property {unknown} [default]
 * @property {unknown[]} [examples]
 * @property {string} [format]
 * @property {number} [minimum]
 * @property {number} [maximum]
 * @property {number} [exclusiveMinimum]
 * @property {number} [exclusiveMaximum]
 * @property {number} [minLength]
 * @property {number} [maxLength]
 * @property {string} [pattern]
 * @property {JsonSchema[]} [anyOf]
 * @property {JsonSchema[]} [oneOf]
 * @property {JsonSchema[]} [allOf]
 * @property {string} [$ref]
 */

/**
 * A tool as its server listed it (MCP `Tool`; unknown fields kept).
 * @typedef {object} Tool
 * @property {string} name
 * @property {string} [title]
 * @property {string} [description]
 * @property {JsonSchema} [inputSchema]
 * @property {JsonSchema} [outputSchema]
 * @property {{title?: string, readOnlyHint?: boolean, destructiveHint?: boolean, idempotentHint?: boolean, openWorldHint?: boolean}} [annotations]
 */

/**
 * A prompt as its server listed it.
 * @typedef {object} Prompt
 * @property {string} name
 * @property {string} [title]
 * @property {string} [description]
 * @property {{name: string, description?: string, required?: boolean}[]} [arguments]
 */

/**
 * A resource (or, with `uriTemplate`, a resource template) as its server listed it.
 * @typedef {object} Resource
 * @property {string} [uri]
 * @property {string} [uriTemplate]
 * @property {string} name
 * @property {string} [title]
 * @property {string} [description]
 * @property {string} [mimeType]
 */

/**
 * A backend's configuration as the API shows it (`ConfigView`; values masked). A local server
 * has a `command`; a remote one a `url` instead.
 * @typedef {object} BackendConfigView
 * @property {string | null} command
 * @property {string[]} args
 * @property {string | null} cwd
 * @property {Record<string, string>} env Values are masked.
 * @property {string | null} url
 * @property {Record<string, string>} headers Sent with every request to a remote server; values are masked.
 * @property {boolean} enabled
 * @property {string} prefix Exposed tool and prompt names start with it and "__"; empty, they are the server's own.
 * @property {boolean} start_on_demand
 * @property {SandboxView | null} sandbox A local server's sandbox.
 * @property {string | null} suggested_sandbox For a local server without a sandbox: the TOML of a first one.
 */

/**
 * What a sandboxed server may reach (`SandboxView`), and what becomes of it on this system.
 * @typedef {object} SandboxView
 * @property {string[]} read
 * @property {string[]} write
 * @property {number[]} connect TCP ports it may connect to.
 * @property {boolean} network
 * @property {boolean} dbus Whether it may reach the desktop session's bus.
 * @property {boolean} required
 * @property {string[]} also_read The system's folders and its program's installation.
 * @property {string[]} also_write
 * @property {string[]} environment The names of its environment's variables.
 * @property {"enforced" | "partial" | "unenforced" | "refused"} enforcement
 * @property {number | null} landlock_abi
 * @property {string[]} shortfalls What this system cannot enforce, each with why.
 */

/**
 * A skill's entry (the Skills extension), as its server lists it.
 * @typedef {object} Skill
 * @property {string} uri its SKILL.md
 * @property {{name?: string, description?: string}} frontmatter
 * @property {{uri: string, digest?: string, size?: number}[] | string} [resources] its files, with their SHA-256 digests
 */

/**
 * `GET /api/backends/{name}`.
 * @typedef {Omit<BackendSummary, "tools"> & {
 *   history: HistoryEntry[],
 *   output: OutputLine[],
 *   server: ServerDescription | null,
 *   tools: Tool[],
 *   prompts: Prompt[],
 *   resources: Resource[],
 *   resource_templates: Resource[],
 *   skills: Skill[],
 *   exposed_tools?: Record<string, string>,
 *   config: BackendConfigView,
 * }} BackendDetail
 */

/**
 * `POST /api/backends/{name}/sign-in`: the authorization server's page to open in a new tab.
 * @typedef {object} SignInStarted
 * @property {string} url
 */

/**
 * `POST /api/backends/{name}/start|stop|restart`.
 * @typedef {object} ActionResult
 * @property {true} ok
 * @property {BackendSummary} backend
 */

/**
 * A content block of a tool result.
 * @typedef {{type: "text", text: string}
 *   | {type: "image" | "audio", data: string, mimeType: string}
 *   | {type: "resource", resource: {uri: string, mimeType?: string, text?: string, blob?: string}}
 *   | {type: "resource_link", uri: string, name?: string, description?: string, mimeType?: string}
 *   | {type: string, [key: string]: unknown}} ContentBlock
 */

/**
 * What `POST /api/backends/{name}/tools/{tool}/call` answers on success: the raw tool result.
 * @typedef {object} ToolResult
 * @property {ContentBlock[]} content
 * @property {boolean} [isError]
 * @property {unknown} [structuredContent]
 */

/**
 * Every error the API answers with.
 * @typedef {object} ApiErrorBody
 * @property {string} code
 * @property {string} message
 */

/**
 * One config problem, positioned.
 * @typedef {object} Diagnostic
 * @property {"error" | "warning"} severity
 * @property {string} file
 * @property {number} line
 * @property {number} column
 * @property {string} field
 * @property {string} message
 */

/**
 * `GET /api/config` and the `config` event.
 * @typedef {object} ConfigStatus
 * @property {string} path
 * @property {number} loaded_at_ms when the running config was read and applied
 * @property {number} checked_at_ms when the file was last read, applied or not
 * @property {"applied" | "applied_in_part" | "refused" | "unread"} status how what runs relates
 *   to the file as last read: it runs; it runs without its servers and profiles in error
 *   (`left_out`); a reload was refused (a syntax error, or an error in a settings table or the
 *   default profile: the last valid config runs); or it is gone, empty or unreadable (the last
 *   config runs)
 * @property {string | null} problem what is wrong, in the one sentence the tray and the
 *   attention list show too, while the status is not "applied"
 * @property {Diagnostic[]} diagnostics
 * @property {LeftOut[]} left_out the servers and profiles of the running config left out for
 *   their errors
 * @property {boolean} endpoint_open whether /mcp takes requests without a token because the
 *   config predates it (Needs attention offers to require one)
 * @property {string[]} notes what the last reload could not apply, in plain words
 * @property {{notify_crash_loop: boolean}} desktop
 */

/**
 * What a reload did to one backend.
 * @typedef {"added" | "removed" | "restarted" | "started" | "stopped" | "updated" | "unchanged"} Applied
 */

/**
 * A server or a profile the config file describes that does not run for its errors.
 * @typedef {object} LeftOut
 * @property {"server" | "profile"} kind
 * @property {string} name
 * @property {string[]} reasons the messages of its errors, in file order
 */

/**
 * `POST /api/config/reload`: applied (without what `left_out` names), refused (the last valid
 * config runs, `problem` says why) or missing (gone, empty or unreadable).
 * @typedef {{outcome: "applied", backends: Record<string, Applied>, notes: string[], left_out: LeftOut[]}
 *   | {outcome: "refused", problem: string, diagnostics: Diagnostic[]}
 *   | {outcome: "missing", message: string}} ReloadOutcome
 */

/**
 * `POST /api/profiles/{profile}/switch`: the reload's outcome, and what it did in words.
 * @typedef {ReloadOutcome & {message: string}} SwitchOutcome
 */

/**
 * The `backends` event: every backend's name, in config order, after the set changed.
 * @typedef {object} BackendNamesEvent
 * @property {string[]} names
 */

/**
 * `GET /api/clients`: how to point one editor at Switchboard.
 * @typedef {object} ClientSnippet
 * @property {string} id
 * @property {string} title
 * @property {"stdio" | "http"} transport
 * @property {string} config_path_hint
 * @property {string} snippet
 * @property {boolean} detected whether the editor's config file or folder exists on this machine
 */

/**
 * `POST /api/clients/{id}/install` (`InstallReport` in crates/editors/src/install.rs).
 * @typedef {object} InstallResult
 * @property {string} editor the client's id
 * @property {string} path the editor's config file
 * @property {{kind: "added"} | {kind: "updated"} | {kind: "already_installed", name: string}} outcome
 * @property {boolean} created whether the file did not exist before
 * @property {string | null} backup the file as it was, when it was changed
 * @property {string} message what happened, in plain words
 */

/**
 * What a move does to one entry of the editor's file (`MovedEntry` and `Fate` in
 * crates/editors/src/moving.rs): imported as `server`; a duplicate of what Switchboard runs as
 * `server`; left where it is, for `reason`; or the entry that points the editor at Switchboard.
 * `notes` say what the import left out or found wrong ("left out `timeout`").
 * @typedef {{name: string, taken_out: boolean} & (
 *   {kind: "moved", server: string, notes: string[]}
 *   | {kind: "duplicate", server: string}
 *   | {kind: "stays", reason: string}
 *   | {kind: "switchboard"})} MovedEntry
 */

/**
 * What moving an editor over does, or in a preview (`dry_run`) would do (`MoveReport`).
 * @typedef {object} MoveReport
 * @property {string} editor the editor's id
 * @property {string} path the editor's file
 * @property {string} config_path Switchboard's config
 * @property {boolean} dry_run
 * @property {boolean} only_duplicates
 * @property {MovedEntry[]} entries
 * @property {"added" | "updated" | "unchanged"} switchboard what becomes of the editor's entry for Switchboard
 * @property {string} fingerprint of the editor's file as read; a move is refused if it changed since
 * @property {string} editor_diff unified diff of the editor's file
 * @property {string} config_diff unified diff of Switchboard's config
 * @property {string | null} backup the editor's file as it was, after a move
 * @property {string | null} record_problem why the move cannot be undone, if it cannot
 */

/**
 * One editor found on this machine, as `GET /api/clients/moves` lists it (`EditorMove`).
 * @typedef {object} EditorMove
 * @property {string} id
 * @property {string} title
 * @property {MoveReport | null} preview null when its file cannot be read (`error`) or there is none
 * @property {string | null} error
 * @property {string | null} not_read why its file was not read yet (macOS asks the person first); `listMoves(id)` reads it
 * @property {boolean} undo whether its last move can be undone
 */

/**
 * `GET /api/clients/moves`. `first_run`: Switchboard runs no server of the person's own yet
 * (only the built-in demo server, or none).
 * @typedef {object} EditorMoves
 * @property {boolean} first_run
 * @property {EditorMove[]} editors
 */

/**
 * `POST /api/clients/{id}/move`.
 * @typedef {MoveReport & {message: string}} MoveResult
 */

/**
 * `POST /api/clients/{id}/undo` (`UndoReport`).
 * @typedef {object} UndoResult
 * @property {string} editor
 * @property {string} path
 * @property {string} config_path
 * @property {string[]} removed servers taken out of Switchboard's config
 * @property {string[]} kept servers the move added that changed since, and so stay
 * @property {string} message
 */

/**
 * The `output` event.
 * @typedef {object} OutputEvent
 * @property {string} backend
 * @property {OutputLine} line
 */

/**
 * The `catalog` event.
 * @typedef {object} CatalogEvent
 * @property {string} backend
 */

export {};

/**
 * `GET /api/profiles`: what one profile's tool list costs a client (`Budget` in
 * crates/hub/src/budget.rs).
 * @typedef {object} ProfileBudget
 * @property {string} profile
 * @property {number} tools
 * @property {number} bytes
 * @property {number} tokens estimated, one per 4 bytes
 * @property {{server: string, tools: number, bytes: number, tokens: number}[]} servers
 * @property {{name: string, server: string, original: string, bytes: number, tokens: number}[]} tool_costs costliest first
 * @property {string[]} warnings names that clash or cannot be told apart
 * @property {{client: string, older_versions: boolean, message: string}[]} client_warnings limits of known clients the profile passes, whichever editors use it
 * @property {{glob: string, line: number, column: number}[]} unmatched patterns matching no tool
 * @property {ProfileSwitch[]} server_switches every configured server
 * @property {ProfileSwitch[]} filtered_out tools of its servers the profile leaves out
 */

/**
 * A server or tool a profile offers or not.
 * @typedef {object} ProfileSwitch
 * @property {string} name a server's name, or a tool's exposed name
 * @property {string} [server] for a tool
 * @property {string} [original] for a tool: the server's own name for it
 * @property {boolean} on
 */

/**
 * `GET /api/secrets`: the secrets Switchboard keeps in the OS keychain and those the config names
 * as `${secret:NAME}`. Values never leave Switchboard.
 * @typedef {object} SecretsList
 * @property {string | null} unavailable why the keychain cannot be used, when it cannot
 * @property {SecretEntry[]} secrets
 */

/**
 * @typedef {object} SecretEntry
 * @property {string} name
 * @property {boolean} set whether the keychain holds it
 * @property {boolean} used whether the config names it
 */

/**
 * How a request the activity log recorded ended (`Outcome` in crates/activity/src/lib.rs).
 * @typedef {"result" | "tool_error" | "error" | "timeout" | "cancelled"} ActivityOutcome
 */

/**
 * One request an editor sent through Switchboard to a server: `GET /api/activity` items (`Row`
 * in crates/activity/src/store.rs) and the `activity` event (`Record` in
 * crates/activity/src/lib.rs, which has no `id`: the event goes out before the record is written).
 * @typedef {object} ActivityRecord
 * @property {number} [id] Absent from the live event.
 * @property {number} at_ms When it arrived, in milliseconds since the Unix epoch.
 * @property {number} duration_us
 * @property {string | null} session Null for a 2026-07-28 request over HTTP, which has none.
 * @property {string | null} client The editor's name, as its `clientInfo` says.
 * @property {string} profile
 * @property {string | null} server Null when the request named nothing Switchboard knows.
 * @property {string} method
 * @property {string | null} name The name the editor used: a tool's or prompt's exposed name, a
 *   resource's URI, a task id.
 * @property {string | null} original The server's own name of the tool or prompt.
 * @property {ActivityOutcome | "unknown"} outcome
 * @property {number | null} error_code The JSON-RPC error's code.
 * @property {string | null} error
 * @property {number} request_bytes
 * @property {number} response_bytes
 * @property {string | null} arguments `params.arguments` as the editor sent it, secrets
 *   redacted, only when `[activity] payloads = true`; longer than 64 KiB it is cut and ends with
 *   "… [N bytes in all]".
 * @property {string | null} result The answer, likewise.
 * @property {string | null} decision For a call that waited for a person's yes: who decided and
 *   after how long; null for every other call.
 */

/**
 * What the activity log has done since Switchboard started (`LogHealth`).
 * @typedef {object} ActivityHealth
 * @property {boolean} enabled whether records are taken now (`[activity] enabled`)
 * @property {boolean} payloads whether arguments and results are kept
 * @property {number} recorded
 * @property {number} dropped records lost because the writer could not keep up
 * @property {number} failed records lost because the database refused them
 * @property {string | null} problem the database's last problem, in words
 * @property {string} path the database file
 */

/**
 * `GET /api/activity`: records newest first, and the `before` of the next page.
 * @typedef {object} ActivityPage
 * @property {ActivityRecord[]} records
 * @property {number | null} next_before null when this page is the last
 * @property {ActivityHealth} health
 */

/**
 * Calls and latencies of one server's tool (or prompt, or resource) over a window
 * (`ToolStats`). A failure is an outcome other than a result or a cancellation.
 * @typedef {object} ActivityToolStats
 * @property {string | null} server
 * @property {string | null} name
 * @property {number} calls
 * @property {number} errors
 * @property {number} p50_us
 * @property {number} p99_us
 */

/**
 * `GET /api/activity/stats`, sorted by server and name.
 * @typedef {object} ActivityStats
 * @property {ActivityToolStats[]} tools
 */

/**
 * Why something is held back from editors (`HeldReason` in crates/hub/src/pins/): its definition
 * changed since it was approved, it is new (from a server that already has pins, or with
 * `approve_new_tools` on), its server's pin file cannot be read, or it cannot be checked.
 * @typedef {"changed" | "new" | "unreadable" | "unchecked"} HeldReason
 */

/**
 * What a pin is of (`PinnedKind`): a tool, a prompt, or the server's instructions.
 * @typedef {"tool" | "prompt" | "instructions" | "skill"} PinnedKind
 */

/**
 * A tool, prompt or the instructions of a server, held back until someone approves it
 * (`Held`). `pinned` and `current` are the pinned parts of its definition (a tool's name, title,
 * description, inputSchema, outputSchema, annotations; a prompt's name, title, description,
 * arguments; `{instructions}`), keys sorted.
 * @typedef {object} HeldTool
 * @property {string} server
 * @property {PinnedKind} kind
 * @property {string} name the server's own name of it
 * @property {string} key what an approval names it by (`prompt:NAME`, `instructions`, a tool's name)
 * @property {HeldReason} reason
 * @property {string} [detail] why it cannot be checked
 * @property {Record<string, unknown> | null} pinned the definition approved before, for a changed tool
 * @property {Record<string, unknown>} current the definition the server offers now
 * @property {string} sha256 of `current`: an approval names it, so that only what was shown is approved
 */

/**
 * `GET /api/pins` and the `pins` event (`PinReport`).
 * @typedef {object} PinReport
 * @property {HeldTool[]} held
 * @property {Record<string, string>} problems per server: why its pin file cannot be read or written
 */

/**
 * A call waiting for a person's yes: `GET /api/approvals` and the `approvals` event.
 * @typedef {object} Approval
 * @property {number} id
 * @property {string} server
 * @property {string} tool its name as editors call it
 * @property {string} own the server's own name for it
 * @property {string} profile
 * @property {string | null} editor
 * @property {string | null} arguments_text the exact JSON text the server will receive; null: none
 * @property {boolean} session_lasts whether "Allow for this session" outlasts this call (not for an
 *   editor of 2026-07-28, whose every request is a session of its own)
 * @property {number} asked_at Unix milliseconds
 * @property {number} deadline Unix milliseconds: no answer by then is a no
 */

/**
 * A server's question for the person: `GET /api/questions` and the `questions` event.
 * @typedef {object} Question
 * @property {number} id
 * @property {string} server
 * @property {string[]} editors whose call the server asks during: one when known; each editor
 *   with a call in flight at the server when that cannot be told; none without a call
 * @property {string | null} profile of those calls, when they share one
 * @property {string} message
 * @property {"form" | "url"} mode
 * @property {unknown} [schema] the form's JSON schema (form)
 * @property {string} [url] the page to open (url)
 * @property {string} [host] the site it is on (url)
 * @property {string | null} [warning] why it deserves a second look (url)
 * @property {number} asked_at Unix milliseconds
 * @property {number} deadline Unix milliseconds: no answer by then cancels it
 */

/**
 * @typedef {"crash_loop" | "needs_sign_in" | "held_tools" | "pin_store" | "config" | "open_endpoint" | "profile" | "activity"} AttentionKind
 */

/**
 * What `POST /api/endpoint/require-token` did.
 * @typedef {object} RequireTokenOutcome
 * @property {ReloadOutcome} reload
 * @property {{title: string, editor: string, path: string, entries: string[], backup: string}[]} updated the editors' files given the token
 * @property {{title: string, message: string}[]} failed
 */

/**
 * One thing that needs a person (`Attention` in crates/control/src/attention.rs), with what
 * resolves it: a `POST` of `{}` to a control API path when one request does, and the dashboard
 * page showing it.
 * @typedef {object} Attention
 * @property {AttentionKind} kind
 * @property {string | null} subject the server or profile it concerns
 * @property {string} message
 * @property {{label: string, post: string | null, page: string}} action
 */

/**
 * A package of a registry entry, as a source lists it, and whether Switchboard can run it.
 * @typedef {object} RegistryPackage
 * @property {string} registry_type "npm", "pypi", "oci", "nuget"…
 * @property {string} identifier
 * @property {string | null} version
 * @property {string} transport "stdio", "streamable-http", "sse"
 * @property {boolean} [supported] absent: not said (taken as supported)
 * @property {string | null} [why_not] why it cannot run, when it cannot
 */

/**
 * A remote server of a registry entry, reached by URL.
 * @typedef {object} RegistryRemote
 * @property {string} transport "streamable-http" or "sse"
 * @property {string} url may hold `{variables}` that inputs fill in
 * @property {boolean} [supported] absent: not said (taken as supported)
 * @property {string | null} [why_not]
 */

/**
 * What Add asks for, for the option Add would use: an environment variable, an argument, a
 * header or a URL variable.
 * @typedef {object} RegistryInput
 * @property {string} key what `POST /api/registry/add` names it by
 * @property {string} [label] absent: the key is its label
 * @property {string | null} description
 * @property {boolean} required
 * @property {boolean} secret kept in the keychain, never in the config
 * @property {string | null} default
 * @property {string[]} choices the only values it takes, when not empty
 */

/**
 * A server a registry source lists (`GET /api/registry/search` entries), at its newest version.
 * @typedef {object} RegistryEntry
 * @property {string} name e.g. "io.github.modelcontextprotocol/server-everything"
 * @property {string | null} title
 * @property {string | null} description
 * @property {string} version
 * @property {"active" | "deprecated"} status
 * @property {string | null} status_message why it is deprecated, for one that is
 * @property {string | null} repository
 * @property {string | null} website
 * @property {boolean} verified whether the official registry lists this package under this name
 * @property {string} source the source's base URL, or "built-in"
 * @property {RegistryPackage[]} packages
 * @property {RegistryRemote[]} remotes
 * @property {RegistryInput[]} inputs
 * @property {boolean} installable
 * @property {string | null} why_not why Add cannot add it, when it cannot
 * @property {string | null} added_as the config's server name, once it is added
 */

/**
 * One registry source and how its last read went.
 * @typedef {object} RegistrySource
 * @property {string} url
 * @property {number} entries
 * @property {number | null} refreshed_at Unix milliseconds
 * @property {string | null} error why it could not be read, in a sentence; the others still answer
 */

/**
 * `GET /api/registry/search?q=`.
 * @typedef {object} RegistrySearch
 * @property {RegistryEntry[]} entries
 * @property {RegistrySource[]} sources
 */

/**
 * What `POST /api/registry/add` is asked to add.
 * @typedef {object} RegistryChoice
 * @property {string} name
 * @property {string | null} version
 * @property {string | null} source
 * @property {string | null} server
 * @property {Record<string, string>} inputs
 */

/**
 * What runs: a program with its arguments and environment, or a remote server's address and
 * headers, as the config will say them (a secret as `${secret:NAME}`).
 * @typedef {{kind: "command", program: string, args: string[], env: Record<string, string>} | {kind: "remote", url: string, transport: string, headers: Record<string, string>}} RegistryLaunch
 */

/**
 * `POST /api/registry/add` without `confirm`: what adding it would do; nothing is written or
 * started until the same request comes with `confirm`.
 * @typedef {object} RegistryPlan
 * @property {string} server its name in the config
 * @property {string} entry
 * @property {string} version
 * @property {string} source
 * @property {RegistryLaunch} launch
 * @property {string} command what runs, in one line
 * @property {boolean} held
 * @property {string[]} secrets the names its secrets get in the keychain
 * @property {string[]} notes
 * @property {string} confirm the digest to send back to add exactly this
 */

/**
 * `POST /api/registry/add` with `confirm`: the server is in the config and starting; its tools
 * are held for review.
 * @typedef {object} RegistryAdded
 * @property {string} server its name in the config
 * @property {string} version
 * @property {string} command what runs, in words (a remote server's URL)
 * @property {boolean} held
 * @property {string[]} [notes] worth telling: a deprecated entry, an ownership not checked
 */

/**
 * `GET /api/registry/installed` items: each server of the config, with the registry entry it was
 * added from or whose package it runs, when there is one.
 * @typedef {object} InstalledServer
 * @property {string} server
 * @property {string | null} entry the registry entry's name
 * @property {string} [source] the source that lists the entry
 * @property {string | null} version what its command pins
 * @property {string | null} latest the newest version its source has
 * @property {boolean} update_available
 * @property {string[]} secrets the keychain secrets its config names
 */

/**
 * `POST /api/registry/update/{server}`.
 * @typedef {object} RegistryUpdated
 * @property {string} server
 * @property {string | null} from
 * @property {string} to
 */

/**
 * `DELETE /api/servers/{server}`.
 * @typedef {object} ServerRemoved
 * @property {string} server
 * @property {string[]} deleted_secrets
 * @property {string[]} kept_secrets
 * @property {string[]} undeleted_secrets secrets to delete that the keychain could not delete
 * @property {string | null} keychain_problem why the keychain could not be used, when it could not
 */
