//! `/api/backends`: every backend's summary and detail, start, stop and restart, and try-it calls
//! of a backend's tools.

use std::collections::BTreeMap;
use std::path::{Path as FilePath, PathBuf};
use std::time::SystemTime;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use serde_json::value::RawValue;

use super::{ApiError, ApiState, bad_path, json_ok};
use config::{
    BackendConfig, DEFAULT_PROFILE, Launch, MASKED, ProcessLaunch, Profile, RemoteTransport,
    Sandbox, SandboxDraft, Written, shown_url,
};
use hub::catalog::{self, Source};
use hub::rewrite::ObjectEntries;
use platform::clock::unix_millis;
use platform::sandbox;
use supervisor::Engine;
use supervisor::output::OutputLine;
use supervisor::status::{
    BackendAction, BackendState, BackendStatus, Catalog, ExitDescription, HistoryEntry, Installing,
    ServerDescription, StopReason,
};
use transport::guard::json_response;
use wire::era::Era;

/// How many of a backend's recent output lines its detail carries.
const OUTPUT_LINES: usize = 500;

pub(super) async fn list_backends(State(api): State<ApiState>) -> Response {
    let now_ms = unix_millis(SystemTime::now());
    let backends = api.backends_in_order();
    let statuses: Vec<BackendStatus> = backends.iter().map(|backend| backend.status()).collect();
    let configs: Vec<_> = backends.iter().map(|backend| backend.config()).collect();
    let summaries: Vec<BackendSummary<'_>> = configs
        .iter()
        .zip(&statuses)
        .zip(&backends)
        .map(|((config, status), backend)| BackendSummary {
            pending: Some(backend.pending_requests()),
            ..BackendSummary::new(status, config, now_ms)
        })
        .collect();
    json_ok(&summaries)
}

pub(super) async fn backend_detail(
    State(api): State<ApiState>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path(name) = path.map_err(bad_path)?;
    let backend = api.backend(&name)?;
    let status = backend.status();
    let config = backend.config();
    let detail = BackendDetail {
        overview: Overview::new(&status, &config, unix_millis(SystemTime::now())),
        history: &status.history,
        output: backend.output().tail(OUTPUT_LINES),
        server: status.server.as_deref(),
        tools: &status.catalog.tools,
        prompts: &status.catalog.prompts,
        resources: &status.catalog.resources,
        resource_templates: &status.catalog.resource_templates,
        skills: &status.catalog.skills,
        exposed_tools: exposed_tools(api.engine(), &name),
        config: ConfigView::new(&config),
    };
    Ok(json_ok(&detail))
}

pub(super) async fn control_backend(
    State(api): State<ApiState>,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path((name, action)) = path.map_err(bad_path)?;
    let backend = api.backend(&name)?;
    let result = match action.as_str() {
        "start" => backend.start().await,
        "stop" => backend.stop().await,
        "restart" => backend.restart().await,
        _ => {
            return Err(ApiError::NotFound(format!(
                "{action:?} is not an action; use start, stop or restart"
            )));
        }
    };
    if let Err(error) = result {
        tracing::info!(backend = %name, %action, %error, "control API command failed");
        return Err(error.into());
    }
    tracing::info!(backend = %name, %action, "done through the control API");
    #[derive(Serialize)]
    struct Done<'a> {
        ok: bool,
        backend: BackendSummary<'a>,
    }
    let status = backend.status();
    let config = backend.config();
    Ok(json_ok(&Done {
        ok: true,
        backend: BackendSummary::new(&status, &config, unix_millis(SystemTime::now())),
    }))
}

pub(super) async fn call_tool(
    State(api): State<ApiState>,
    path: Result<Path<(String, String)>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let Path((name, tool)) = path.map_err(bad_path)?;
    let backend = api.backend(&name)?;
    let body = body.map_err(|rejection| match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::TooLarge(rejection.body_text()),
        _ => ApiError::BadRequest(rejection.body_text()),
    })?;
    let arguments = tool_arguments(&body)?;
    let unknown_tool = || {
        ApiError::NotFound(format!(
            "backend {name} has no tool named {tool:?} (use the backend's own name)"
        ))
    };
    // A ready backend's catalog is authoritative; a stopped one may be started by the call.
    let status = backend.status();
    if status.state == BackendState::Ready && !lists_tool(&status.catalog, &tool) {
        return Err(unknown_tool());
    }
    match api.hub().call_tool(&name, &tool, arguments).await {
        Ok(result) => Ok(json_response(
            StatusCode::OK,
            result.get().as_bytes().to_vec(),
        )),
        Err(error) => {
            let status = backend.status();
            if status.state == BackendState::Ready && !lists_tool(&status.catalog, &tool) {
                return Err(unknown_tool());
            }
            Err(ApiError::Backend(format!(
                "{} (JSON-RPC error {})",
                error.message, error.code
            )))
        }
    }
}

/// The fields every view of a backend shares.
#[derive(Serialize)]
pub(super) struct Overview<'a> {
    pub(super) name: &'a str,
    pub(super) state: BackendState,
    /// While starting: what its package runner (`npx`, `uvx`…) is still installing.
    pub(super) installing: Option<&'a Installing>,
    pub(super) pid: Option<u32>,
    pub(super) restarts: u32,
    /// How long the current process has been ready, while it is.
    pub(super) uptime_ms: Option<u64>,
    pub(super) restart_at_ms: Option<u64>,
    pub(super) last_error: Option<&'a str>,
    pub(super) enabled: bool,
    pub(super) last_exit: Option<LastExit<'a>>,
    /// The protocol era its last handshake found, until it has had one.
    pub(super) era: Option<Era>,
    /// The protocol version of its last handshake.
    pub(super) protocol_version: Option<&'a str>,
    /// What the dashboard and the tray offer to do to it now.
    pub(super) actions: Vec<BackendAction>,
    /// It crashed and waits to restart, or is in a crash loop.
    pub(super) failing: bool,
    /// For a remote server, the HTTP transport of its link (`auto` until a link settles it);
    /// `null` for a local server.
    pub(super) transport: Option<RemoteTransport>,
    /// The version of the package its runner runs (`npx`, `uvx`…), pinned or resolved.
    pub(super) version: Option<&'a str>,
}

/// The newest history entry, without its output tail.
#[derive(Serialize)]
pub(super) struct LastExit<'a> {
    pub(super) at_ms: u64,
    pub(super) reason: StopReason,
    pub(super) exit: Option<&'a ExitDescription>,
    pub(super) uptime_ms: u64,
    pub(super) detail: Option<&'a str>,
}

impl<'a> Overview<'a> {
    pub(super) fn new(
        status: &'a BackendStatus,
        config: &BackendConfig,
        now_ms: u64,
    ) -> Overview<'a> {
        let uptime_ms = match status.state {
            BackendState::Ready => status
                .ready_since_ms
                .map(|since| now_ms.saturating_sub(since)),
            _ => None,
        };
        Overview {
            name: &status.name,
            state: status.state,
            installing: status.installing.as_ref(),
            pid: status.pid,
            restarts: status.restarts,
            uptime_ms,
            restart_at_ms: status.restart_at_ms,
            last_error: status.last_error.as_deref(),
            enabled: config.enabled,
            last_exit: status.history.last().map(|entry| LastExit {
                at_ms: entry.at_ms,
                reason: entry.reason,
                exit: entry.exit.as_ref(),
                uptime_ms: entry.uptime_ms,
                detail: entry.detail.as_deref(),
            }),
            era: status.server.as_ref().map(|server| server.era),
            protocol_version: status
                .server
                .as_ref()
                .map(|server| server.protocol_version.as_str()),
            actions: status.actions(),
            failing: status.state.is_failing(),
            transport: status.transport,
            version: status.version.as_deref(),
        }
    }
}

/// One entry of `/api/backends` and the data of a `status` event.
#[derive(Serialize)]
pub(super) struct BackendSummary<'a> {
    #[serde(flatten)]
    pub(super) overview: Overview<'a>,
    /// How many tools the backend lists.
    pub(super) tools: usize,
    /// Requests sent to the backend and not answered yet. Read when listing; status events,
    /// which follow state changes only, leave it out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) pending: Option<usize>,
}

impl<'a> BackendSummary<'a> {
    pub(super) fn new(
        status: &'a BackendStatus,
        config: &BackendConfig,
        now_ms: u64,
    ) -> BackendSummary<'a> {
        BackendSummary {
            overview: Overview::new(status, config, now_ms),
            tools: status.catalog.tools.len(),
            pending: None,
        }
    }
}

/// `/api/backends/{name}`.
#[derive(Serialize)]
pub(super) struct BackendDetail<'a> {
    #[serde(flatten)]
    pub(super) overview: Overview<'a>,
    /// Newest last.
    pub(super) history: &'a [HistoryEntry],
    pub(super) output: Vec<OutputLine>,
    pub(super) server: Option<&'a ServerDescription>,
    pub(super) tools: &'a [Box<RawValue>],
    pub(super) prompts: &'a [Box<RawValue>],
    pub(super) resources: &'a [Box<RawValue>],
    pub(super) resource_templates: &'a [Box<RawValue>],
    /// The Skills extension's entries, as the server listed them.
    pub(super) skills: &'a [Box<RawValue>],
    /// The backend's own tool name → the name editors see, for the tools that are offered.
    pub(super) exposed_tools: BTreeMap<String, String>,
    pub(super) config: ConfigView<'a>,
}

/// A backend's config as the dashboard may see it: values of the environment and of headers
/// masked. A local server has a `command`, a remote one a `url`.
#[derive(Serialize, Default)]
pub(super) struct ConfigView<'a> {
    pub(super) command: Option<&'a str>,
    /// As written: a secret stands as its `${secret:NAME}`.
    pub(super) args: &'a [String],
    pub(super) cwd: Option<&'a FilePath>,
    /// As written where the config names what a value stands for, masked where it writes the
    /// value itself.
    pub(super) env: BTreeMap<&'a str, &'a str>,
    /// As written, the value of every query parameter masked.
    pub(super) url: Option<String>,
    /// As `env`.
    pub(super) headers: BTreeMap<&'a str, &'a str>,
    pub(super) enabled: bool,
    pub(super) prefix: &'a str,
    pub(super) start_on_demand: bool,
    /// A local server's sandbox, and how much of it this system enforces.
    pub(super) sandbox: Option<SandboxView<'a>>,
    /// For a local server without a sandbox: a first one, as the TOML to add to the config.
    pub(super) suggested_sandbox: Option<String>,
}

/// What a sandboxed server may reach, and what becomes of it here.
#[derive(Serialize)]
pub(super) struct SandboxView<'a> {
    pub(super) read: &'a [PathBuf],
    pub(super) write: &'a [PathBuf],
    pub(super) connect: &'a [u16],
    pub(super) network: bool,
    /// Whether it may reach the desktop session's bus; Switchboard's own socket it never does.
    pub(super) dbus: bool,
    pub(super) required: bool,
    /// Readable too, for it to run at all: the system's folders and its program's installation.
    pub(super) also_read: Vec<PathBuf>,
    /// Writable too: the null device.
    pub(super) also_write: Vec<PathBuf>,
    /// Its environment's variables: `PATH`, `HOME`, the locale and what its `env` adds.
    pub(super) environment: Vec<String>,
    /// `enforced` (every rule), `partial` (it runs with what this system enforces),
    /// `unenforced` (it runs without a sandbox: none is built here) or `refused` (it does not
    /// start: its sandbox is required and this system cannot enforce all of it).
    pub(super) enforcement: &'static str,
    /// The Landlock ABI the kernel offers (Linux).
    pub(super) landlock_abi: Option<u32>,
    /// What this system cannot enforce of it, each with why.
    pub(super) shortfalls: Vec<String>,
}

impl<'a> SandboxView<'a> {
    fn new(sandbox: &'a Sandbox, process: &ProcessLaunch) -> SandboxView<'a> {
        let assessment = sandbox::assess(&sandbox.rules());
        let search_path = match process.env.get("PATH") {
            Some(path) => std::ffi::OsString::from(path),
            None => platform::command::search_path(),
        };
        let (mut also_read, also_write) = sandbox::system_grants();
        if let Some(program) = platform::command::find(&process.command, &search_path) {
            also_read.extend(sandbox::program_roots(&program, &search_path));
        }
        let mut environment: Vec<String> = ["PATH", "HOME", "LANG", "LC_*"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        environment.extend(
            process
                .env
                .keys()
                .filter(|name| !sandbox::kept_variable(std::ffi::OsStr::new(name), sandbox.dbus))
                .cloned(),
        );
        SandboxView {
            read: &sandbox.read,
            write: &sandbox.write,
            connect: &sandbox.connect,
            network: sandbox.network,
            dbus: sandbox.dbus,
            required: sandbox.required,
            also_read,
            also_write,
            environment,
            enforcement: assessment.enforcement(sandbox.required).as_str(),
            landlock_abi: assessment.landlock_abi,
            shortfalls: assessment.shortfalls,
        }
    }
}

impl<'a> ConfigView<'a> {
    pub(super) fn new(config: &'a BackendConfig) -> ConfigView<'a> {
        // Every name the server is given; a value as written where the config has one.
        let shown = |values: &'a BTreeMap<String, String>, written: &'a Written| {
            values
                .keys()
                .map(|name| {
                    let value = written
                        .values
                        .get(name)
                        .map_or(MASKED, |value| Written::shown_value(value));
                    (name.as_str(), value)
                })
                .collect()
        };
        let view = ConfigView {
            enabled: config.enabled,
            prefix: &config.prefix,
            start_on_demand: config.start_on_demand,
            ..ConfigView::default()
        };
        match &config.launch {
            Launch::Process(process) => ConfigView {
                command: Some(&process.command),
                args: &process.written.args,
                cwd: process.cwd.as_deref(),
                env: shown(&process.env, &process.written),
                sandbox: process
                    .sandbox
                    .as_ref()
                    .map(|sandbox| SandboxView::new(sandbox, process)),
                // From the arguments as written: an expanded secret is never shown.
                suggested_sandbox: process.sandbox.is_none().then(|| {
                    SandboxDraft::for_command(&process.command, &process.written.args)
                        .to_toml(&config.name)
                }),
                ..view
            },
            Launch::Remote(remote) => ConfigView {
                url: Some(shown_url(&remote.written.url)),
                headers: shown(&remote.headers, &remote.written),
                ..view
            },
        }
    }
}

/// The exposed names of `backend`'s tools, merged the way the hub merges every backend's.
pub(super) fn exposed_tools(engine: &Engine, backend: &str) -> BTreeMap<String, String> {
    let handles = engine.backends();
    let statuses: Vec<BackendStatus> = handles.iter().map(|handle| handle.status()).collect();
    let configs: Vec<_> = handles.iter().map(|handle| handle.config()).collect();
    let sources: Vec<Source<'_>> = configs
        .iter()
        .zip(&statuses)
        .map(|(config, status)| Source {
            config,
            catalog: Some(status.catalog.clone()),
            listed: catalog::is_listed(config, status),
        })
        .collect();
    let merged = catalog::merge(&sources, &Profile::everything(DEFAULT_PROFILE));
    merged
        .tools
        .iter()
        .chain(&merged.unlisted_tools)
        .filter(|(_, route)| &*route.backend == backend)
        .map(|(exposed, route)| (route.name.to_string(), exposed.clone()))
        .collect()
}

pub(super) fn lists_tool(catalog: &Catalog, tool: &str) -> bool {
    catalog.tools.iter().any(|listed| {
        ObjectEntries::parse(listed.get())
            .ok()
            .and_then(|entries| entries.get_str("name").map(|name| name == tool))
            .unwrap_or(false)
    })
}

/// The body of a tool call: a JSON object of arguments, or nothing.
pub(super) fn tool_arguments(body: &[u8]) -> Result<Option<Box<RawValue>>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let invalid = |detail: String| {
        ApiError::BadRequest(format!(
            "the body must be a JSON object of the tool's arguments: {detail}"
        ))
    };
    let arguments: Box<RawValue> =
        serde_json::from_slice(body).map_err(|error| invalid(error.to_string()))?;
    if !arguments.get().starts_with('{') {
        return Err(invalid("it is not an object".to_owned()));
    }
    Ok(Some(arguments))
}
