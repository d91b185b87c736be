//! The control API of the dashboard (browser and desktop window), served beside `/mcp`.
//!
//! [`router`] builds it as one `Router` that tests drive without a socket. Every route reads
//! published status only (`BackendHandle::status`, `watch_status`, the output log) and acts
//! through the backend handles, so the API holds no state of its own about backends.
//!
//! | Route | Answer |
//! |---|---|
//! | `GET /api/backends` | every backend's summary, in config order |
//! | `GET /api/backends/{name}` | summary, history, output, server, catalog, masked config |
//! | `POST /api/backends/{name}/start`, `/stop`, `/restart` | `{ok, backend}` once done |
//! | `POST /api/backends/{name}/tools/{tool}/call` | the tool's result as the backend sent it |
//! | `GET /api/config` | the config file's path, load time, validity and diagnostics |
//! | `GET /api/clients` | what to paste into each editor's config |
//! | `POST /api/clients/{editor}/install` | that entry written into the editor's config (a backup first) |
//! | `GET /api/events` | Server-Sent Events: `status`, `output`, `catalog`, `config` |
//!
//! Errors are `{code, message}` with the matching HTTP status (see [`ApiError`]).
//!
//! Security:
//!
//! - Every request, on every path this router serves (the API, the token exchange, the
//!   dashboard's files), first passes the same [`Guard`] as `/mcp`: `Host` must be this
//!   endpoint's loopback address and `Origin`, when sent, one of its own origins. No CORS headers
//!   are ever sent.
//! - The API can start processes, so it always needs the dashboard token (see [`super::token`]),
//!   as `Authorization: Bearer <token>` or as the cookie `switchboard_token`. `/mcp`'s own
//!   optional token is a different one.
//! - `GET /?token=<token>` (the link `switchboard serve` prints) sets the cookie (`HttpOnly;
//!   SameSite=Strict; Path=/`) and redirects to `/`, so the token leaves the address bar at once.
//! - A request other than `GET` or `HEAD` must also say `Content-Type: application/json`, which
//!   no HTML form can send, and which makes a browser ask (in vain: no CORS) before a foreign
//!   page's script may send it. With SameSite=Strict and the Origin check that makes three
//!   independent defences against a cross-site request riding on the cookie.
//! - The dashboard's files are served only with a valid cookie (or bearer token); without one
//!   every other path gets a small page that says where the link is.
//! - Environment values of backends are never returned (their names are, masked), and no token
//!   is logged. The one deliberate exception: the snippets of `/api/clients` carry `/mcp`'s
//!   bearer token when one is configured, since that is what an editor must be given.
//!
//! The event stream starts with the current state (one `status` event per backend, in config
//! order, and one `config` event), so a client that loaded `/api/backends` first misses nothing
//! in between; after that it sends changes only, with keep-alive comments. It ends when
//! Switchboard shuts down.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path as FilePath, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::SystemTime;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use futures_core::Stream;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::{broadcast, mpsc, watch};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::token::ApiToken;
use crate::config::BackendConfig;
use crate::control::reload::{ConfigState, Reloader};
use crate::editors::{self, Editor, EditorError, Endpoint, InstallRequest};
use crate::hub::Hub;
use crate::hub::catalog::{self, Source};
use crate::hub::rewrite::ObjectEntries;
use crate::supervisor::output::OutputLine;
use crate::supervisor::status::{
    BackendState, BackendStatus, Catalog, ExitDescription, HistoryEntry, ServerDescription,
    StopReason, unix_millis,
};
use crate::supervisor::{BackendHandle, ControlError};
use crate::transport::http::{Guard, MCP_PATH};

/// Every API route starts with this.
pub const API_PREFIX: &str = "/api";

/// The cookie that carries the dashboard token.
pub const TOKEN_COOKIE: &str = "switchboard_token";

/// How many of a backend's recent output lines its detail carries.
const OUTPUT_LINES: usize = 500;

/// Events queued for one event stream before its producers wait for the client.
const EVENTS_CAPACITY: usize = 256;

/// What a masked environment value reads as.
const MASKED: &str = "••••••";

/// What the page without a valid cookie says.
const LOGIN_MESSAGE: &str =
    "Open the dashboard link printed by <code>switchboard serve</code> (or from the tray).";

/// What the page after a wrong dashboard link says.
const INVALID_LINK_MESSAGE: &str = "This dashboard link is not valid. Open the dashboard link \
    printed by <code>switchboard serve</code> (or from the tray).";

/// What the API needs besides the hub.
#[derive(Debug, Clone)]
pub struct ApiOptions {
    /// The address the endpoint is bound to.
    pub address: SocketAddr,
    /// The dashboard token, always required.
    pub token: ApiToken,
    /// `/mcp`'s own bearer token, if the config sets one (for the editors' snippets).
    pub mcp_token: Option<String>,
    /// Origins allowed besides the endpoint's own (e.g. the desktop window's).
    pub extra_origins: Vec<String>,
    /// The `switchboard` binary, which stdio editors launch as `switchboard connect`.
    pub exe: PathBuf,
}

/// The API's shared state. Cheap to clone.
#[derive(Clone)]
pub struct ApiState {
    inner: Arc<ApiInner>,
    /// The dashboard's files, if this build serves them.
    ui: Option<Router>,
}

struct ApiInner {
    hub: Hub,
    reloader: Reloader,
    config: watch::Receiver<ConfigState>,
    guard: Guard,
    token: ApiToken,
    mcp_token: Option<String>,
    base_url: String,
    exe: PathBuf,
    shutdown: CancellationToken,
}

impl ApiState {
    /// The API over `hub`, whose config `reloader` reloads; its event streams end when
    /// `shutdown` is cancelled.
    pub fn new(
        hub: Hub,
        reloader: Reloader,
        options: ApiOptions,
        shutdown: CancellationToken,
    ) -> ApiState {
        let guard = Guard::new(options.address.port(), None, options.extra_origins);
        ApiState {
            inner: Arc::new(ApiInner {
                hub,
                config: reloader.state(),
                reloader,
                guard,
                token: options.token,
                mcp_token: options.mcp_token,
                base_url: local_base_url(options.address),
                exe: options.exe,
                shutdown,
            }),
            ui: None,
        }
    }

    /// Serves the dashboard's files from `ui` behind the cookie: every path outside `/api` that
    /// is not the token exchange goes there once the request carries the token.
    ///
    /// Give the files here rather than adding a fallback to what [`router`] returns: a fallback
    /// added afterwards would not be behind the guard and the cookie.
    pub fn with_ui(mut self, ui: Router) -> ApiState {
        self.ui = Some(ui);
        self
    }

    /// The link that opens the dashboard: `http://127.0.0.1:PORT/?token=…`. It carries the
    /// token, so it is shown once, to the person who started Switchboard, and never logged.
    pub fn dashboard_url(&self) -> String {
        format!(
            "{}/?token={}",
            self.inner.base_url,
            self.inner.token.expose()
        )
    }

    fn hub(&self) -> &Hub {
        &self.inner.hub
    }

    fn backend(&self, name: &str) -> Result<BackendHandle, ApiError> {
        self.hub()
            .engine()
            .backend(name)
            .ok_or_else(|| ApiError::NotFound(format!("no backend is named {name:?}")))
    }

    /// Every backend, in config order (any the config does not name last, by name).
    fn backends_in_order(&self) -> Vec<BackendHandle> {
        let mut backends = self.hub().engine().backends();
        let config = self.inner.config.borrow();
        let position = |name: &str| {
            config
                .backend_order
                .iter()
                .position(|ordered| ordered == name)
                .unwrap_or(usize::MAX)
        };
        backends.sort_by_key(|backend| position(backend.name()));
        backends
    }

    /// Whether the request carries the token, as a bearer token or as the cookie.
    fn authorized(&self, headers: &HeaderMap) -> bool {
        let token = &self.inner.token;
        let bearer = headers
            .get_all(header::AUTHORIZATION)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .filter_map(bearer_token)
            .any(|presented| token.matches(presented));
        bearer || cookie_values(headers, TOKEN_COOKIE).any(|presented| token.matches(presented))
    }
}

/// `http://HOST:PORT` for reaching an endpoint bound to `address` from this machine: its own
/// loopback address, or the loopback address of its family when bound to another one.
pub fn local_base_url(address: SocketAddr) -> String {
    let ip = match address.ip() {
        ip if ip.is_loopback() => ip,
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        _ => IpAddr::V4(Ipv4Addr::LOCALHOST),
    };
    format!("http://{}", SocketAddr::new(ip, address.port()))
}

/// The control API, the token exchange, and the dashboard's files (see [`ApiState::with_ui`]),
/// all behind the guard and the token. Merge it beside `/mcp`; add no fallback to it.
pub fn router(state: ApiState) -> Router {
    let routes = Router::new()
        .route("/api/backends", get(list_backends))
        .route("/api/backends/{name}", get(backend_detail))
        .route("/api/backends/{name}/{action}", post(control_backend))
        .route("/api/backends/{name}/tools/{tool}/call", post(call_tool))
        .route("/api/config", get(config_state))
        .route("/api/config/reload", post(reload_config))
        .route("/api/clients", get(clients))
        .route("/api/clients/{editor}/install", post(install_client))
        .route("/api/events", get(events))
        .route("/api", any(unknown_api_path))
        .route("/api/{*rest}", any(unknown_api_path))
        .with_state(state.clone());
    let routes = match &state.ui {
        Some(ui) => routes.fallback_service(ui.clone()),
        None => routes.fallback(no_dashboard),
    };
    routes.layer(middleware::from_fn_with_state(state, gate))
}

/// Why an API request failed; the body is `{code, message}`.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Unauthorized(String),
    /// The engine refused or abandoned the command (e.g. a stop arrived during the start).
    #[error("{0}")]
    Conflict(String),
    /// The backend could not start, or answered with an error.
    #[error("{0}")]
    Backend(String),
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    TooLarge(String),
    #[error("requests that change something need `Content-Type: application/json`")]
    UnsupportedMediaType,
}

impl ApiError {
    /// The stable error code of the body.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::NotFound(_) => "not_found",
            ApiError::Unauthorized(_) => "unauthorized",
            ApiError::Conflict(_) => "conflict",
            ApiError::Backend(_) => "backend_error",
            ApiError::BadRequest(_) | ApiError::UnsupportedMediaType => "bad_request",
            ApiError::TooLarge(_) => "too_large",
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Backend(_) => StatusCode::BAD_GATEWAY,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        }
    }
}

impl From<ControlError> for ApiError {
    fn from(error: ControlError) -> ApiError {
        match error {
            ControlError::StartFailed { .. } => ApiError::Backend(error.to_string()),
            ControlError::Interrupted { .. }
            | ControlError::Removed { .. }
            | ControlError::ShuttingDown => ApiError::Conflict(error.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        #[derive(Serialize)]
        struct Body<'a> {
            code: &'a str,
            message: String,
        }
        let body = serde_json::to_vec(&Body {
            code: self.code(),
            message: self.to_string(),
        })
        .expect("an API error always serializes");
        let mut response = json_response(self.status(), body);
        if let ApiError::Unauthorized(_) = self {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// Runs before every route: the guard, then the token (or the exchange of a dashboard link),
/// then, for requests that change something, the content type.
async fn gate(State(api): State<ApiState>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    if let Err(rejection) = api.inner.guard.check_host_origin(headers) {
        tracing::debug!(
            code = rejection.code(),
            "refused a dashboard request: {rejection}"
        );
        return rejection.into_response();
    }
    let path = request.uri().path();
    let is_api = path == API_PREFIX || path.starts_with("/api/");
    if !is_api
        && path == "/"
        && request.method() == Method::GET
        && let Some(presented) = query_token(request.uri())
    {
        return exchange_link(&api, presented);
    }
    if !api.authorized(headers) {
        if is_api {
            return ApiError::Unauthorized(
                "the control API needs the dashboard token, as `Authorization: Bearer <token>` \
                 or as the cookie the dashboard link sets"
                    .to_owned(),
            )
            .into_response();
        }
        return html_page(StatusCode::UNAUTHORIZED, LOGIN_MESSAGE);
    }
    let safe_method = matches!(*request.method(), Method::GET | Method::HEAD);
    if !safe_method && !content_type_is_json(headers) {
        return ApiError::UnsupportedMediaType.into_response();
    }
    next.run(request).await
}

/// `GET /?token=…`: a valid token becomes the cookie and the address bar loses it.
fn exchange_link(api: &ApiState, presented: &str) -> Response {
    if !api.inner.token.matches(presented) {
        tracing::info!("refused a dashboard link with a wrong token");
        return html_page(StatusCode::UNAUTHORIZED, INVALID_LINK_MESSAGE);
    }
    let cookie = format!(
        "{TOKEN_COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
        api.inner.token.expose()
    );
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SEE_OTHER;
    let headers = response.headers_mut();
    headers.insert(header::LOCATION, HeaderValue::from_static("/"));
    headers.insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&cookie).expect("a token is made of header-safe characters"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

async fn list_backends(State(api): State<ApiState>) -> Response {
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

async fn backend_detail(
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
        exposed_tools: exposed_tools(api.hub(), &name),
        config: ConfigView::new(&config),
    };
    Ok(json_ok(&detail))
}

async fn control_backend(
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

async fn call_tool(
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

async fn config_state(State(api): State<ApiState>) -> Response {
    let config = api.inner.config.borrow().clone();
    json_ok(&config)
}

/// Reads the config file now and applies it if valid. An invalid or missing file is not an
/// error of the request: the outcome says what happened, and nothing changed.
async fn reload_config(State(api): State<ApiState>) -> Response {
    tracing::info!("config reload asked for through the control API");
    json_ok(&api.inner.reloader.reload().await)
}

async fn clients(State(api): State<ApiState>) -> Response {
    let url = format!("{}{MCP_PATH}", api.inner.base_url);
    json_ok(&client_setups(
        &api.inner.exe,
        &url,
        api.inner.mcp_token.as_deref(),
    ))
}

/// `POST /api/clients/{editor}/install`: writes the entry that points the editor (an id of
/// `/api/clients`) at this Switchboard into the editor's own config, after a backup, as
/// `switchboard install` does. The answer is the [`editors::InstallReport`] plus a `message`.
async fn install_client(
    State(api): State<ApiState>,
    path: Result<Path<String>, PathRejection>,
) -> Response {
    let id = match path {
        Ok(Path(id)) => id,
        Err(rejection) => return bad_path(rejection).into_response(),
    };
    let Some(editor) = Editor::from_client_id(&id) else {
        return ApiError::NotFound(format!(
            "Switchboard cannot install itself into {id:?}; paste its snippet instead"
        ))
        .into_response();
    };
    let endpoint = Endpoint {
        exe: api.inner.exe.clone(),
        url: format!("{}{MCP_PATH}", api.inner.base_url),
        token: api.inner.mcp_token.clone(),
    };
    let request = move || {
        editors::install(InstallRequest {
            editor,
            to: None,
            endpoint: &endpoint,
            dry_run: false,
        })
    };
    let error = match tokio::task::spawn_blocking(request).await {
        Ok(Ok(report)) => {
            tracing::info!(
                editor = editor.client_id(),
                path = %report.path.display(),
                outcome = ?report.outcome,
                "installed through the control API"
            );
            let mut body =
                serde_json::to_value(&report).expect("an install report always serializes");
            body["message"] = report.to_string().trim_end().into();
            return json_ok(&body);
        }
        Ok(Err(error)) => error,
        Err(panicked) => {
            return install_failure(
                StatusCode::INTERNAL_SERVER_ERROR,
                "install_failed",
                format!("the install stopped: {panicked}"),
            );
        }
    };
    tracing::info!(editor = editor.client_id(), %error, "install through the control API failed");
    let (status, code) = match error {
        // The file is there but cannot be edited as it is: the person has to fix it.
        EditorError::Invalid { .. } | EditorError::Unsupported { .. } => {
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_editor_config")
        }
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "install_failed"),
    };
    install_failure(status, code, error.to_string())
}

/// The `{code, message}` body of a failed install (`ApiError` has no code for either case).
fn install_failure(status: StatusCode, code: &str, message: String) -> Response {
    let body = serde_json::to_vec(&serde_json::json!({ "code": code, "message": message }))
        .expect("an error body always serializes");
    json_response(status, body)
}

async fn events(State(api): State<ApiState>) -> Response {
    let backends = api.backends_in_order();
    let (sender, receiver) = mpsc::channel(EVENTS_CAPACITY.max(backends.len() + 1));
    for backend in &backends {
        follow_backend(backend, &sender);
    }
    let mut config = api.inner.config.clone();
    let _ = sender.try_send(config_event(&config.borrow_and_update()));
    tokio::spawn(forward_config(config, sender.clone()));
    tokio::spawn(forward_membership(api.clone(), backends, sender));
    let feed = EventFeed {
        events: receiver,
        shutdown: Box::pin(api.inner.shutdown.clone().cancelled_owned()),
    };
    Sse::new(feed)
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn unknown_api_path(uri: Uri) -> ApiError {
    ApiError::NotFound(format!("{} is not an API route", uri.path()))
}

/// Without dashboard files (`ApiState::with_ui`), there is nothing to show.
async fn no_dashboard() -> Response {
    html_page(
        StatusCode::NOT_FOUND,
        "The dashboard is not part of this build; the control API is at <code>/api</code>.",
    )
}

/// Sends the backend's status now, then follows it (see [`forward_backend`]).
fn follow_backend(backend: &BackendHandle, events: &mpsc::Sender<Event>) {
    let mut statuses = backend.watch_status();
    let lines = backend.output().follow();
    let status = statuses.borrow_and_update().clone();
    let _ = events.try_send(status_event(
        &status,
        &backend.config(),
        unix_millis(SystemTime::now()),
    ));
    tokio::spawn(forward_backend(
        backend.clone(),
        statuses,
        lines,
        status.catalog.clone(),
        events.clone(),
    ));
}

/// Follows backends a reload adds, and sends a `backends` event with every name, in config
/// order, whenever the set or its order changes. A removed backend's own stream just ends.
async fn forward_membership(
    api: ApiState,
    mut known: Vec<BackendHandle>,
    events: mpsc::Sender<Event>,
) {
    let mut changes = api.hub().engine().changes();
    let mut config = api.inner.config.clone();
    loop {
        tokio::select! {
            () = events.closed() => return,
            changed = changes.changed() => if changed.is_err() { return },
            changed = config.changed() => if changed.is_err() { return },
        }
        let current = api.backends_in_order();
        let same = current.len() == known.len()
            && current
                .iter()
                .zip(&known)
                .all(|(now, before)| now.same_backend(before));
        if same {
            continue;
        }
        for backend in &current {
            if !known.iter().any(|before| before.same_backend(backend)) {
                follow_backend(backend, &events);
            }
        }
        let names: Vec<&str> = current.iter().map(|backend| backend.name()).collect();
        if events
            .send(json_event("backends", &BackendNames { names }))
            .await
            .is_err()
        {
            return;
        }
        known = current;
    }
}

/// Sends a backend's status changes, catalog changes and output lines until the stream ends.
async fn forward_backend(
    backend: BackendHandle,
    mut statuses: watch::Receiver<BackendStatus>,
    mut lines: broadcast::Receiver<OutputLine>,
    mut catalog: Arc<Catalog>,
    events: mpsc::Sender<Event>,
) {
    enum Update {
        Status(BackendStatus),
        Line(OutputLine),
        Nothing,
    }
    let name = backend.name();
    let mut lines_open = true;
    loop {
        let update = tokio::select! {
            () = events.closed() => return,
            changed = statuses.changed() => match changed {
                Ok(()) => Update::Status(statuses.borrow_and_update().clone()),
                Err(_) => return,
            },
            line = lines.recv(), if lines_open => match line {
                Ok(line) => Update::Line(line),
                Err(broadcast::error::RecvError::Lagged(skipped)) => {
                    tracing::debug!(backend = name, skipped, "an event stream skipped output");
                    Update::Nothing
                }
                Err(broadcast::error::RecvError::Closed) => {
                    lines_open = false;
                    Update::Nothing
                }
            },
        };
        let mut outgoing = Vec::with_capacity(2);
        match update {
            Update::Status(status) => {
                let now_ms = unix_millis(SystemTime::now());
                outgoing.push(status_event(&status, &backend.config(), now_ms));
                if !Arc::ptr_eq(&catalog, &status.catalog) {
                    catalog = status.catalog.clone();
                    outgoing.push(json_event("catalog", &BackendRef { backend: name }));
                }
            }
            Update::Line(line) => outgoing.push(json_event(
                "output",
                &OutputEvent {
                    backend: name,
                    line: &line,
                },
            )),
            Update::Nothing => {}
        }
        for event in outgoing {
            if events.send(event).await.is_err() {
                return;
            }
        }
    }
}

/// Sends the config state whenever it changes, until the stream ends.
async fn forward_config(mut config: watch::Receiver<ConfigState>, events: mpsc::Sender<Event>) {
    loop {
        tokio::select! {
            () = events.closed() => return,
            changed = config.changed() => {
                if changed.is_err() {
                    return;
                }
                let event = config_event(&config.borrow_and_update());
                if events.send(event).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The events of one `/api/events` stream; ends when Switchboard shuts down.
struct EventFeed {
    events: mpsc::Receiver<Event>,
    shutdown: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl Stream for EventFeed {
    type Item = Result<Event, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.shutdown.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        self.events.poll_recv(cx).map(|event| event.map(Ok))
    }
}

#[derive(Serialize)]
struct BackendRef<'a> {
    backend: &'a str,
}

#[derive(Serialize)]
struct BackendNames<'a> {
    names: Vec<&'a str>,
}

#[derive(Serialize)]
struct OutputEvent<'a> {
    backend: &'a str,
    line: &'a OutputLine,
}

fn status_event(status: &BackendStatus, config: &BackendConfig, now_ms: u64) -> Event {
    json_event("status", &BackendSummary::new(status, config, now_ms))
}

fn config_event(config: &ConfigState) -> Event {
    json_event("config", config)
}

fn json_event(name: &str, data: &impl Serialize) -> Event {
    let data = serde_json::to_string(data).expect("API bodies always serialize");
    Event::default().event(name).data(data)
}

/// The fields every view of a backend shares.
#[derive(Serialize)]
struct Overview<'a> {
    name: &'a str,
    state: BackendState,
    pid: Option<u32>,
    restarts: u32,
    /// How long the current process has been ready, while it is.
    uptime_ms: Option<u64>,
    restart_at_ms: Option<u64>,
    last_error: Option<&'a str>,
    enabled: bool,
    last_exit: Option<LastExit<'a>>,
}

/// The newest history entry, without its output tail.
#[derive(Serialize)]
struct LastExit<'a> {
    at_ms: u64,
    reason: StopReason,
    exit: Option<&'a ExitDescription>,
    uptime_ms: u64,
    detail: Option<&'a str>,
}

impl<'a> Overview<'a> {
    fn new(status: &'a BackendStatus, config: &BackendConfig, now_ms: u64) -> Overview<'a> {
        let uptime_ms = match status.state {
            BackendState::Ready => status
                .ready_since_ms
                .map(|since| now_ms.saturating_sub(since)),
            _ => None,
        };
        Overview {
            name: &status.name,
            state: status.state,
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
        }
    }
}

/// One entry of `/api/backends` and the data of a `status` event.
#[derive(Serialize)]
struct BackendSummary<'a> {
    #[serde(flatten)]
    overview: Overview<'a>,
    /// How many tools the backend lists.
    tools: usize,
    /// Requests sent to the backend and not answered yet. Read when listing; status events,
    /// which follow state changes only, leave it out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pending: Option<usize>,
}

impl<'a> BackendSummary<'a> {
    fn new(status: &'a BackendStatus, config: &BackendConfig, now_ms: u64) -> BackendSummary<'a> {
        BackendSummary {
            overview: Overview::new(status, config, now_ms),
            tools: status.catalog.tools.len(),
            pending: None,
        }
    }
}

/// `/api/backends/{name}`.
#[derive(Serialize)]
struct BackendDetail<'a> {
    #[serde(flatten)]
    overview: Overview<'a>,
    /// Newest last.
    history: &'a [HistoryEntry],
    output: Vec<OutputLine>,
    server: Option<&'a ServerDescription>,
    tools: &'a [Box<RawValue>],
    prompts: &'a [Box<RawValue>],
    resources: &'a [Box<RawValue>],
    resource_templates: &'a [Box<RawValue>],
    /// The backend's own tool name → the name editors see, for the tools that are offered.
    exposed_tools: BTreeMap<String, String>,
    config: ConfigView<'a>,
}

/// A backend's config as the dashboard may see it: environment values masked.
#[derive(Serialize)]
struct ConfigView<'a> {
    command: &'a str,
    args: &'a [String],
    cwd: Option<&'a FilePath>,
    env: BTreeMap<&'a str, &'static str>,
    enabled: bool,
    prefix: &'a str,
    start_on_demand: bool,
}

impl<'a> ConfigView<'a> {
    fn new(config: &'a BackendConfig) -> ConfigView<'a> {
        ConfigView {
            command: &config.command,
            args: &config.args,
            cwd: config.cwd.as_deref(),
            env: config
                .env
                .keys()
                .map(|name| (name.as_str(), MASKED))
                .collect(),
            enabled: config.enabled,
            prefix: &config.prefix,
            start_on_demand: config.start_on_demand,
        }
    }
}

/// The exposed names of `backend`'s tools, merged the way the hub merges every backend's.
fn exposed_tools(hub: &Hub, backend: &str) -> BTreeMap<String, String> {
    let handles = hub.engine().backends();
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
    let merged = catalog::merge(&sources);
    merged
        .tools
        .iter()
        .chain(&merged.unlisted_tools)
        .filter(|(_, route)| &*route.backend == backend)
        .map(|(exposed, route)| (route.name.clone(), exposed.clone()))
        .collect()
}

fn lists_tool(catalog: &Catalog, tool: &str) -> bool {
    catalog.tools.iter().any(|listed| {
        ObjectEntries::parse(listed.get())
            .ok()
            .and_then(|entries| entries.get_str("name").map(|name| name == tool))
            .unwrap_or(false)
    })
}

/// The body of a tool call: a JSON object of arguments, or nothing.
fn tool_arguments(body: &[u8]) -> Result<Option<Box<RawValue>>, ApiError> {
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

/// One editor's way to reach Switchboard.
#[derive(Debug, Serialize)]
struct ClientSetup {
    id: &'static str,
    title: &'static str,
    transport: &'static str,
    /// Where that editor keeps its config on this operating system.
    config_path_hint: &'static str,
    /// JSON to merge into that file.
    snippet: String,
}

/// Snippets for Claude Desktop (stdio through `switchboard connect`), Cursor, VS Code and Zed
/// (Streamable HTTP at `url`, with `/mcp`'s bearer token when there is one).
fn client_setups(exe: &FilePath, url: &str, mcp_token: Option<&str>) -> Vec<ClientSetup> {
    use serde_json::json;
    let endpoint = Endpoint {
        exe: exe.to_path_buf(),
        url: url.to_owned(),
        token: mcp_token.map(str::to_owned),
    };
    let pretty = |value: serde_json::Value| {
        serde_json::to_string_pretty(&value).expect("JSON values always serialize")
    };
    // What `switchboard install` writes, and the dashboard's Install buttons.
    let snippet = |editor: Editor| {
        pretty(json!({
            editor.servers_key(): { editors::ENTRY_NAME: editor.switchboard_entry(&endpoint) }
        }))
    };
    vec![
        ClientSetup {
            id: Editor::Claude.client_id(),
            title: Editor::Claude.title(),
            transport: "stdio",
            config_path_hint: path_hint(PathHints {
                linux: "~/.config/Claude/claude_desktop_config.json",
                macos: "~/Library/Application Support/Claude/claude_desktop_config.json",
                windows: r"%APPDATA%\Claude\claude_desktop_config.json",
            }),
            snippet: snippet(Editor::Claude),
        },
        ClientSetup {
            id: Editor::Cursor.client_id(),
            title: Editor::Cursor.title(),
            transport: "http",
            config_path_hint: path_hint(PathHints {
                linux: "~/.cursor/mcp.json (or .cursor/mcp.json in a project)",
                macos: "~/.cursor/mcp.json (or .cursor/mcp.json in a project)",
                windows: r"%USERPROFILE%\.cursor\mcp.json (or .cursor\mcp.json in a project)",
            }),
            snippet: snippet(Editor::Cursor),
        },
        ClientSetup {
            id: Editor::VsCode.client_id(),
            title: Editor::VsCode.title(),
            transport: "http",
            config_path_hint: path_hint(PathHints {
                linux: "~/.config/Code/User/mcp.json (MCP: Open User Configuration), \
                        or .vscode/mcp.json in a workspace",
                macos: "~/Library/Application Support/Code/User/mcp.json \
                        (MCP: Open User Configuration), or .vscode/mcp.json in a workspace",
                windows: "%APPDATA%\\Code\\User\\mcp.json (MCP: Open User Configuration), \
                          or .vscode\\mcp.json in a workspace",
            }),
            snippet: snippet(Editor::VsCode),
        },
        ClientSetup {
            id: "zed",
            title: "Zed",
            transport: "http",
            config_path_hint: path_hint(PathHints {
                linux: "~/.config/zed/settings.json (zed: open settings file)",
                macos: "~/.config/zed/settings.json (zed: open settings file)",
                windows: r"%APPDATA%\Zed\settings.json (zed: open settings file)",
            }),
            snippet: pretty(json!({
                "context_servers": { editors::ENTRY_NAME: endpoint.http_entry(None) }
            })),
        },
    ]
}

struct PathHints {
    linux: &'static str,
    macos: &'static str,
    windows: &'static str,
}

fn path_hint(hints: PathHints) -> &'static str {
    if cfg!(target_os = "macos") {
        hints.macos
    } else if cfg!(windows) {
        hints.windows
    } else {
        hints.linux
    }
}

fn bad_path(rejection: PathRejection) -> ApiError {
    ApiError::BadRequest(rejection.body_text())
}

fn json_ok(body: &impl Serialize) -> Response {
    let body = serde_json::to_vec(body).expect("API bodies always serialize");
    json_response(StatusCode::OK, body)
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A minimal page (`message` is trusted HTML) that loads nothing and cannot be framed.
fn html_page(status: StatusCode, message: &str) -> Response {
    let html = format!(
        "<!doctype html>\n<html lang=\"en\">\n<meta charset=\"utf-8\">\n\
         <title>Switchboard</title>\n<h1>Switchboard</h1>\n<p>{message}</p>\n</html>\n"
    );
    let mut response = Response::new(Body::from(html));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

fn content_type_is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split(';').next().unwrap_or_default().trim();
            essence.eq_ignore_ascii_case("application/json")
        })
}

fn bearer_token(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// Every value of the cookie `name` in the request's `Cookie` headers.
fn cookie_values<'a>(headers: &'a HeaderMap, name: &'a str) -> impl Iterator<Item = &'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(move |pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key.trim() == name).then_some(value.trim())
        })
}

/// The `token` parameter of the query, as sent (tokens need no percent-decoding).
fn query_token(uri: &Uri) -> Option<&str> {
    uri.query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::http::Request as HttpRequest;
    use http_body_util::BodyExt;
    use serde_json::{Value, json};
    use tower::ServiceExt;

    use super::*;
    use crate::hub::HubOptions;
    use crate::supervisor::spawn::GroupRegistry;

    /// Generous bound for an event that should come within milliseconds.
    const EVENT_LIMIT: Duration = Duration::from_secs(20);
    const PORT: u16 = 4242;
    const TOKEN: &str = "test-token-0123456789abcdef";
    const SECRET: &str = "sk-secret-value";

    struct Fixture {
        app: Router,
        hub: Hub,
        /// Holds the config file, which starts out missing.
        folder: tempfile::TempDir,
    }

    fn misbehave(name: &str) -> BackendConfig {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/backends/misbehave.py");
        let mut config = BackendConfig::new(name, "python3", vec![script.to_owned()]);
        config.handshake_timeout = Duration::from_secs(10);
        config.stop_grace = Duration::from_millis(500);
        config.restart.backoff_base = Duration::from_millis(20);
        config.restart.backoff_cap = Duration::from_millis(200);
        config
    }

    fn fixture(backends: Vec<BackendConfig>, mcp_token: Option<&str>) -> Fixture {
        let folder = tempfile::tempdir().expect("a temporary folder");
        let config = crate::config::Config {
            path: folder.path().join("config.toml"),
            backends: backends.clone(),
            endpoint: Default::default(),
            desktop: Default::default(),
            diagnostics: Vec::new(),
        };
        let hub = Hub::start(backends, GroupRegistry::in_memory(), HubOptions::default());
        let reloader = Reloader::new(hub.clone(), &config, config.endpoint.clone(), false);
        let options = ApiOptions {
            address: SocketAddr::from(([127, 0, 0, 1], PORT)),
            token: ApiToken::new(TOKEN).expect("a valid token"),
            mcp_token: mcp_token.map(str::to_owned),
            extra_origins: Vec::new(),
            exe: PathBuf::from("/opt/switchboard/bin/switchboard"),
        };
        let ui = Router::new().fallback(|| async { "the dashboard's files" });
        let state =
            ApiState::new(hub.clone(), reloader, options, CancellationToken::new()).with_ui(ui);
        Fixture {
            app: router(state),
            hub,
            folder,
        }
    }

    async fn ready(fixture: &Fixture, name: &str) -> BackendStatus {
        let mut status = fixture
            .hub
            .engine()
            .backend(name)
            .expect("configured")
            .watch_status();
        tokio::time::timeout(
            EVENT_LIMIT,
            status.wait_for(|status| status.state == BackendState::Ready),
        )
        .await
        .expect("the backend is ready in time")
        .expect("the backend task lives")
        .clone()
    }

    fn request(method: Method, uri: &str, headers: &[(&str, &str)], body: &str) -> Request {
        let mut builder = HttpRequest::builder().method(method).uri(uri);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder
            .body(Body::from(body.to_owned()))
            .expect("a valid request")
    }

    fn host() -> String {
        format!("127.0.0.1:{PORT}")
    }

    fn bearer() -> String {
        format!("Bearer {TOKEN}")
    }

    /// A request as the dashboard's own script sends it.
    fn api(method: Method, uri: &str, body: &str) -> Request {
        let (host, bearer) = (host(), bearer());
        let mut headers = vec![("host", host.as_str()), ("authorization", bearer.as_str())];
        if method == Method::POST {
            headers.push(("content-type", "application/json"));
        }
        request(method, uri, &headers, body)
    }

    async fn send(fixture: &Fixture, request: Request) -> Response {
        fixture
            .app
            .clone()
            .oneshot(request)
            .await
            .expect("infallible")
    }

    async fn body_text(response: Response) -> String {
        let bytes = tokio::time::timeout(EVENT_LIMIT, response.into_body().collect())
            .await
            .expect("the body ends in time")
            .expect("a readable body")
            .to_bytes();
        String::from_utf8(bytes.to_vec()).expect("UTF-8")
    }

    async fn body_json(response: Response) -> Value {
        let text = body_text(response).await;
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("JSON body: {text}"))
    }

    async fn expect_error(response: Response, status: StatusCode, code: &str) -> String {
        assert_eq!(response.status(), status);
        let body = body_json(response).await;
        assert_eq!(body["code"], code, "{body}");
        body["message"].as_str().expect("a message").to_owned()
    }

    fn header(response: &Response, name: header::HeaderName) -> &str {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
    }

    #[tokio::test]
    async fn requests_without_the_token_are_refused() {
        let fixture = fixture(Vec::new(), None);
        let host = host();
        let cases: [&[(&str, &str)]; 5] = [
            &[("host", &host)],
            &[
                ("host", &host),
                ("authorization", "Bearer wrong-token-0123456789"),
            ],
            &[("host", &host), ("authorization", TOKEN)],
            &[("host", &host), ("cookie", "switchboard_token=wrong")],
            &[("host", &host), ("cookie", &format!("other={TOKEN}"))],
        ];
        for headers in cases {
            let response = send(&fixture, request(Method::GET, "/api/backends", headers, "")).await;
            assert_eq!(header(&response, header::WWW_AUTHENTICATE), "Bearer");
            let message = expect_error(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
            assert!(!message.contains(TOKEN));
        }
        let cookie = format!("theme=dark; switchboard_token={TOKEN}");
        for headers in [
            [("host", host.as_str()), ("authorization", &bearer())],
            [("host", host.as_str()), ("cookie", &cookie)],
        ] {
            let response = send(
                &fixture,
                request(Method::GET, "/api/backends", &headers, ""),
            )
            .await;
            assert_eq!(response.status(), StatusCode::OK);
            assert_eq!(body_json(response).await, json!([]));
        }
    }

    #[tokio::test]
    async fn foreign_hosts_and_origins_are_refused_even_with_the_token() {
        let fixture = fixture(Vec::new(), None);
        let bearer = bearer();
        for bad_host in [
            "localhost.evil.com:4242",
            "127.0.0.10:4242",
            "evil.example",
            "127.0.0.1:4243",
            "127.0.0.1",
        ] {
            for path in ["/api/backends", "/", "/?token=x", "/app.js"] {
                let headers = [("host", bad_host), ("authorization", &bearer)];
                let response = send(&fixture, request(Method::GET, path, &headers, "")).await;
                expect_error(response, StatusCode::FORBIDDEN, "forbidden_host").await;
            }
        }
        for origin in ["http://evil.example", "null", "http://localhost:4243"] {
            let headers = [
                ("host", host()),
                ("authorization", bearer.clone()),
                ("origin", origin.to_owned()),
            ];
            let headers: Vec<(&str, &str)> = headers
                .iter()
                .map(|(name, value)| (*name, value.as_str()))
                .collect();
            let response = send(
                &fixture,
                request(Method::GET, "/api/backends", &headers, ""),
            )
            .await;
            expect_error(response, StatusCode::FORBIDDEN, "forbidden_origin").await;
        }
        let own_origin = format!("http://{}", host());
        let headers = [
            ("host", host()),
            ("authorization", bearer.clone()),
            ("origin", own_origin),
        ];
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(name, value)| (*name, value.as_str()))
            .collect();
        let response = send(
            &fixture,
            request(Method::GET, "/api/backends", &headers, ""),
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK);
        assert!(
            response
                .headers()
                .get("access-control-allow-origin")
                .is_none()
        );
    }

    #[tokio::test]
    async fn a_cross_site_form_post_carrying_the_cookie_changes_nothing() {
        let fixture = fixture(vec![misbehave("mis")], None);
        let pid = ready(&fixture, "mis").await.pid.expect("a pid");
        let host = host();
        let cookie = format!("{TOKEN_COOKIE}={TOKEN}");
        let form = "application/x-www-form-urlencoded";
        let cross_site = [
            ("host", host.as_str()),
            ("cookie", &cookie),
            ("origin", "http://evil.example"),
            ("content-type", form),
        ];
        let response = send(
            &fixture,
            request(Method::POST, "/api/backends/mis/stop", &cross_site, "a=b"),
        )
        .await;
        expect_error(response, StatusCode::FORBIDDEN, "forbidden_origin").await;
        // A browser that sends no Origin still cannot send JSON from a form.
        for content_type in [form, "multipart/form-data; boundary=x", "text/plain", ""] {
            let mut headers = vec![("host", host.as_str()), ("cookie", cookie.as_str())];
            if !content_type.is_empty() {
                headers.push(("content-type", content_type));
            }
            let response = send(
                &fixture,
                request(Method::POST, "/api/backends/mis/stop", &headers, "a=b"),
            )
            .await;
            expect_error(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "bad_request").await;
        }
        let status = fixture
            .hub
            .engine()
            .backend("mis")
            .expect("configured")
            .status();
        assert_eq!(status.state, BackendState::Ready);
        assert_eq!(status.pid, Some(pid));
    }

    #[tokio::test]
    async fn the_dashboard_link_becomes_a_strict_cookie_and_a_clean_url() {
        let fixture = fixture(Vec::new(), None);
        let host = host();
        let link = format!("/?token={TOKEN}");
        let response = send(
            &fixture,
            request(Method::GET, &link, &[("host", &host)], ""),
        )
        .await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        assert_eq!(header(&response, header::LOCATION), "/");
        assert_eq!(
            header(&response, header::SET_COOKIE),
            format!("switchboard_token={TOKEN}; HttpOnly; SameSite=Strict; Path=/")
        );
        assert_eq!(header(&response, header::REFERRER_POLICY), "no-referrer");

        let wrong = "/?token=wrong-token-0123456789abcdef";
        let response = send(
            &fixture,
            request(Method::GET, wrong, &[("host", &host)], ""),
        )
        .await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert!(response.headers().get(header::SET_COOKIE).is_none());
        assert!(body_text(response).await.contains("not valid"));

        for path in ["/", "/app.js", "/index.html"] {
            let response = send(&fixture, request(Method::GET, path, &[("host", &host)], "")).await;
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{path}");
            assert!(header(&response, header::CONTENT_TYPE).starts_with("text/html"));
            let page = body_text(response).await;
            assert!(
                page.contains("Open the dashboard link printed by"),
                "{page}"
            );
            assert!(!page.contains("the dashboard's files"));
        }
        let cookie = format!("{TOKEN_COOKIE}={TOKEN}");
        let headers = [("host", host.as_str()), ("cookie", cookie.as_str())];
        let response = send(&fixture, request(Method::GET, "/app.js", &headers, "")).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(body_text(response).await, "the dashboard's files");
    }

    #[tokio::test]
    async fn unknown_routes_get_json_errors() {
        let fixture = fixture(Vec::new(), None);
        for path in ["/api", "/api/nothing", "/api/backends/nobody"] {
            let response = send(&fixture, api(Method::GET, path, "")).await;
            expect_error(response, StatusCode::NOT_FOUND, "not_found").await;
        }
        for path in [
            "/api/backends/nobody/start",
            "/api/backends/nobody/tools/echo/call",
        ] {
            let response = send(&fixture, api(Method::POST, path, "")).await;
            expect_error(response, StatusCode::NOT_FOUND, "not_found").await;
        }
    }

    #[tokio::test]
    async fn list_detail_and_commands_follow_the_engine() {
        let fixture = fixture(vec![misbehave("mis"), misbehave("alpha")], None);
        let first = ready(&fixture, "mis").await.pid.expect("a pid");
        ready(&fixture, "alpha").await;

        let list = body_json(send(&fixture, api(Method::GET, "/api/backends", "")).await).await;
        let names: Vec<&str> = list
            .as_array()
            .expect("an array")
            .iter()
            .map(|backend| backend["name"].as_str().expect("a name"))
            .collect();
        assert_eq!(names, ["mis", "alpha"], "config order, not name order");
        let mis = &list[0];
        assert_eq!(mis["state"], "ready");
        assert_eq!(mis["pid"], first);
        assert!(mis["uptime_ms"].is_u64());
        assert!(mis["tools"].as_u64().expect("a count") > 5);
        assert_eq!(mis["enabled"], true);
        assert_eq!(mis["last_exit"], Value::Null);
        assert_eq!(mis["restart_at_ms"], Value::Null);

        let stopped = send(&fixture, api(Method::POST, "/api/backends/mis/stop", "")).await;
        assert_eq!(stopped.status(), StatusCode::OK);
        let stopped = body_json(stopped).await;
        assert_eq!(stopped["ok"], true);
        assert_eq!(stopped["backend"]["state"], "stopped");
        assert_eq!(stopped["backend"]["pid"], Value::Null);
        assert_eq!(stopped["backend"]["uptime_ms"], Value::Null);
        assert_eq!(stopped["backend"]["last_exit"]["reason"], "stopped_by_user");

        let started =
            body_json(send(&fixture, api(Method::POST, "/api/backends/mis/start", "{}")).await)
                .await;
        assert_eq!(started["backend"]["state"], "ready");
        let second = started["backend"]["pid"].as_u64().expect("a pid");
        assert_ne!(second, u64::from(first));

        let restarted =
            body_json(send(&fixture, api(Method::POST, "/api/backends/mis/restart", "")).await)
                .await;
        assert_eq!(restarted["backend"]["state"], "ready");
        assert_ne!(restarted["backend"]["pid"], second);
        assert_eq!(
            restarted["backend"]["last_exit"]["reason"],
            "restarted_by_user"
        );

        let response = send(&fixture, api(Method::POST, "/api/backends/mis/explode", "")).await;
        expect_error(response, StatusCode::NOT_FOUND, "not_found").await;

        let detail =
            body_json(send(&fixture, api(Method::GET, "/api/backends/mis", "")).await).await;
        assert_eq!(detail["state"], "ready");
        let reasons: Vec<&str> = detail["history"]
            .as_array()
            .expect("history")
            .iter()
            .map(|entry| entry["reason"].as_str().expect("a reason"))
            .collect();
        assert_eq!(
            reasons,
            ["stopped_by_user", "restarted_by_user"],
            "newest last"
        );
        let tools = detail["tools"].as_array().expect("raw tools");
        assert!(tools.iter().any(|tool| tool["name"] == "echo"));
        assert_eq!(detail["exposed_tools"]["echo"], "mis__echo");
        assert!(detail["server"]["protocol_version"].is_string());
        assert!(detail["output"].is_array());
        assert_eq!(detail["config"]["command"], "python3");
        assert_eq!(detail["config"]["prefix"], "mis");
    }

    #[tokio::test]
    async fn tools_are_called_by_their_own_names() {
        let fixture = fixture(vec![misbehave("mis")], None);
        ready(&fixture, "mis").await;
        let call = |tool: &str, body: &str| {
            api(
                Method::POST,
                &format!("/api/backends/mis/tools/{tool}/call"),
                body,
            )
        };
        let response = send(&fixture, call("echo", r#"{"text":"hello"}"#)).await;
        assert_eq!(response.status(), StatusCode::OK);
        let result = body_json(response).await;
        assert_eq!(result["content"][0]["text"], "hello");
        assert_eq!(
            result["x-extra"], 1,
            "the result is passed on as the backend sent it"
        );

        let result = body_json(send(&fixture, call("fail", "")).await).await;
        assert_eq!(result["isError"], true, "a tool's own error is a result");

        let stopped = send(&fixture, api(Method::POST, "/api/backends/mis/stop", "")).await;
        assert_eq!(stopped.status(), StatusCode::OK);
        let response = send(&fixture, call("echo", r#"{"text":"on demand"}"#)).await;
        assert_eq!(
            response.status(),
            StatusCode::OK,
            "a call starts a stopped backend"
        );
        assert_eq!(body_json(response).await["content"][0]["text"], "on demand");

        let response = send(&fixture, call("mis__echo", "{}")).await;
        expect_error(response, StatusCode::NOT_FOUND, "not_found").await;
        for body in ["[1]", "\"text\"", "{not json"] {
            let response = send(&fixture, call("echo", body)).await;
            expect_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
        }
        let huge = format!(r#"{{"text":"{}"}}"#, "x".repeat(3 * 1024 * 1024));
        let response = send(&fixture, call("echo", &huge)).await;
        expect_error(response, StatusCode::PAYLOAD_TOO_LARGE, "too_large").await;

        let message = expect_error(
            send(&fixture, call("crash", "{}")).await,
            StatusCode::BAD_GATEWAY,
            "backend_error",
        )
        .await;
        assert!(message.contains("mis"), "{message}");
        let status = fixture
            .hub
            .engine()
            .backend("mis")
            .expect("configured")
            .status();
        let last = status.history.last().expect("the crash is in the history");
        assert_eq!(last.reason, StopReason::Crash);
        assert_eq!(last.exit.as_ref().and_then(|exit| exit.code), Some(3));
    }

    #[tokio::test]
    async fn environment_values_never_leave() {
        let mut backend = misbehave("mis");
        backend.env.insert("API_KEY".to_owned(), SECRET.to_owned());
        let fixture = fixture(vec![backend], None);
        ready(&fixture, "mis").await;
        let detail =
            body_text(send(&fixture, api(Method::GET, "/api/backends/mis", "")).await).await;
        assert!(!detail.contains(SECRET));
        let detail: Value = serde_json::from_str(&detail).expect("JSON");
        assert_eq!(detail["config"]["env"], json!({ "API_KEY": MASKED }));
        for path in ["/api/backends", "/api/config", "/api/clients"] {
            let body = body_text(send(&fixture, api(Method::GET, path, "")).await).await;
            assert!(!body.contains(SECRET), "{path}");
        }
    }

    #[tokio::test]
    async fn config_and_client_snippets() {
        let fixture = fixture(Vec::new(), Some("mcp-secret"));
        let config = body_json(send(&fixture, api(Method::GET, "/api/config", "")).await).await;
        let path = fixture.folder.path().join("config.toml");
        assert_eq!(config["path"], path.to_str().expect("a UTF-8 path"));
        assert_eq!(config["valid"], true);
        assert_eq!(config["missing"], false);
        assert_eq!(config["desktop"]["notify_crash_loop"], true);
        assert_eq!(config["diagnostics"], json!([]));
        assert!(config["loaded_at_ms"].as_u64().expect("a time") > 0);
        assert!(config.get("backend_order").is_none());

        let clients = body_json(send(&fixture, api(Method::GET, "/api/clients", "")).await).await;
        let clients = clients.as_array().expect("an array");
        let ids: Vec<&str> = clients
            .iter()
            .map(|c| c["id"].as_str().expect("id"))
            .collect();
        assert_eq!(ids, ["claude-desktop", "cursor", "vscode", "zed"]);
        let snippet = |index: usize| -> Value {
            serde_json::from_str(clients[index]["snippet"].as_str().expect("a string"))
                .expect("the snippet is JSON")
        };
        let url = "http://127.0.0.1:4242/mcp";
        assert_eq!(clients[0]["transport"], "stdio");
        assert_eq!(
            snippet(0),
            json!({ "mcpServers": { "switchboard": {
                "command": "/opt/switchboard/bin/switchboard", "args": ["connect"] } } })
        );
        let headers = json!({ "Authorization": "Bearer mcp-secret" });
        assert_eq!(
            snippet(1),
            json!({ "mcpServers": { "switchboard": { "url": url, "headers": headers } } })
        );
        assert_eq!(
            snippet(2),
            json!({ "servers": { "switchboard": { "type": "http", "url": url, "headers": headers } } })
        );
        assert_eq!(
            snippet(3),
            json!({ "context_servers": { "switchboard": { "url": url, "headers": headers } } })
        );
        for client in clients {
            assert!(
                !client["config_path_hint"]
                    .as_str()
                    .expect("a hint")
                    .is_empty()
            );
            assert!(client["title"].is_string());
        }

        let without_token = client_setups(FilePath::new("/sb"), url, None);
        assert!(!without_token[1].snippet.contains("headers"));
    }

    #[test]
    fn the_local_url_is_always_a_loopback_address() {
        let url = |address: &str| local_base_url(address.parse().expect("an address"));
        assert_eq!(url("127.0.0.1:8765"), "http://127.0.0.1:8765");
        assert_eq!(url("[::1]:8765"), "http://[::1]:8765");
        assert_eq!(url("0.0.0.0:8765"), "http://127.0.0.1:8765");
        assert_eq!(url("[::]:8765"), "http://[::1]:8765");
        assert_eq!(url("192.168.1.5:80"), "http://127.0.0.1:80");
    }

    /// Reads Server-Sent Events from a response body.
    struct EventReader {
        body: Body,
        buffer: String,
    }

    impl EventReader {
        fn new(response: Response) -> EventReader {
            assert_eq!(response.status(), StatusCode::OK);
            assert!(header(&response, header::CONTENT_TYPE).starts_with("text/event-stream"));
            EventReader {
                body: response.into_body(),
                buffer: String::new(),
            }
        }

        /// The next event (name and JSON data), skipping comments.
        async fn next(&mut self) -> (String, Value) {
            loop {
                if let Some(end) = self.buffer.find("\n\n") {
                    let block: String = self.buffer.drain(..end + 2).collect();
                    let mut name = None;
                    let mut data = String::new();
                    for line in block.lines() {
                        if let Some(value) = line.strip_prefix("event:") {
                            name = Some(value.trim().to_owned());
                        } else if let Some(value) = line.strip_prefix("data:") {
                            data.push_str(value.trim_start());
                        }
                    }
                    if let Some(name) = name {
                        let data = serde_json::from_str(&data).expect("JSON data");
                        return (name, data);
                    }
                    continue;
                }
                let frame = tokio::time::timeout(EVENT_LIMIT, self.body.frame())
                    .await
                    .expect("an event in time")
                    .expect("the stream is open")
                    .expect("a readable frame");
                if let Ok(data) = frame.into_data() {
                    self.buffer
                        .push_str(std::str::from_utf8(&data).expect("UTF-8"));
                }
            }
        }

        /// Skips events until one matches.
        async fn until(&mut self, check: impl Fn(&str, &Value) -> bool) -> Value {
            loop {
                let (name, data) = self.next().await;
                if check(&name, &data) {
                    return data;
                }
            }
        }
    }

    #[tokio::test]
    async fn the_event_stream_starts_with_the_state_and_follows_every_change() {
        let fixture = fixture(vec![misbehave("mis")], None);
        ready(&fixture, "mis").await;
        let mut events =
            EventReader::new(send(&fixture, api(Method::GET, "/api/events", "")).await);
        let (name, first) = events.next().await;
        assert_eq!(
            (name.as_str(), &first["name"], &first["state"]),
            ("status", &json!("mis"), &json!("ready"))
        );
        let (name, config) = events.next().await;
        assert_eq!(name, "config");
        assert_eq!(config["valid"], true);

        let response = send(&fixture, api(Method::POST, "/api/backends/mis/stop", "")).await;
        assert_eq!(response.status(), StatusCode::OK);
        events
            .until(|name, data| name == "status" && data["state"] == "stopped")
            .await;

        let response = send(&fixture, api(Method::POST, "/api/backends/mis/start", "")).await;
        assert_eq!(response.status(), StatusCode::OK);
        events
            .until(|name, data| name == "status" && data["state"] == "ready")
            .await;
        let call = api(
            Method::POST,
            "/api/backends/mis/tools/stderr/call",
            r#"{"lines":3}"#,
        );
        assert_eq!(send(&fixture, call).await.status(), StatusCode::OK);
        let output = events.until(|name, _| name == "output").await;
        assert_eq!(output["backend"], "mis");
        assert_eq!(output["line"]["stream"], "stderr");
        assert!(output["line"]["text"].is_string());

        let call = api(
            Method::POST,
            "/api/backends/mis/tools/change_tools/call",
            "{}",
        );
        assert_eq!(send(&fixture, call).await.status(), StatusCode::OK);
        let catalog = events.until(|name, _| name == "catalog").await;
        assert_eq!(catalog, json!({ "backend": "mis" }));

        std::fs::write(
            fixture.folder.path().join("config.toml"),
            "[servers.broken]\nargs = []\n",
        )
        .expect("the config file is written");
        let reload =
            body_json(send(&fixture, api(Method::POST, "/api/config/reload", "")).await).await;
        assert_eq!(reload["outcome"], "invalid");
        assert_eq!(reload["diagnostics"][0]["field"], "servers.broken");
        let config = events.until(|name, _| name == "config").await;
        assert_eq!(config["valid"], false);
        assert_eq!(config["diagnostics"][0]["line"], 1);
    }
}
