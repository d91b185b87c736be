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
//! | `GET /api/clients/moves` | per editor found here: what moving it over would do, and whether a move can be undone |
//! | `POST /api/clients/{editor}/move`, `/undo` | the move (or only its duplicates taken out), or its undo; then a reload |
//! | `GET /api/activity`, `/stats`, `/export` | the activity log's records, figures per tool, all of them as JSONL or CSV |
//! | `GET /api/pins` | what is held back (tools, prompts, instructions: changed, new, unchecked, or of an unreadable pin file), with both definitions |
//! | `POST /api/pins/{server}/approve` | those (all, or `{"tools": [KEY, ...]}`) pinned as they are now |
//! | `GET /api/attention` | what needs a person, each with the action that resolves it |
//! | `POST /api/endpoint/require-token` | `/mcp`'s token turned on: editors' entries given it, then the config |
//! | `GET /api/events` | Server-Sent Events: `status`, `output`, `catalog`, `config`, `pins`, `activity` |
//!
//! Errors are `{code, message}` with the matching HTTP status (see [`ApiError`]).
//!
//! Security:
//!
//! - Every request, on every path this router serves (the API and the dashboard's files), first
//!   passes the same [`Guard`] as `/mcp`: `Host` must be this endpoint's loopback address and
//!   `Origin`, when sent, one of its own origins. No CORS headers are ever sent.
//! - The API can start processes, so it always needs a credential, as
//!   `Authorization: Bearer <credential>`: the API token (see [`transport::token`]), for scripts,
//!   or the dashboard key. Nothing is ever read from a cookie, and none is ever set: browsers send
//!   a cookie of `127.0.0.1` to every port of it, so any other local listener a page can be
//!   made to load would receive it.
//! - The dashboard key is made at random each time Switchboard starts and lives only in memory.
//!   The dashboard link carries it in the fragment (`/#key=…`), which a browser never sends to
//!   any server; the dashboard moves it into `sessionStorage`, which is per origin and so per
//!   port, takes it out of the address bar, and sends it as the header. A leaked key opens
//!   nothing after a restart and is never the API token.
//! - A request other than `GET` or `HEAD` must also say `Content-Type: application/json`, which
//!   no HTML form can send, and which makes a browser ask (in vain: no CORS) before a foreign
//!   page's script may send it.
//! - The dashboard's files hold nothing secret and are served to any request that passes the
//!   guard; everything they show comes from the API.
//! - Environment values of backends are never returned (their names are, masked), arguments,
//!   URLs and headers come back as written (secret references, not their values), and no
//!   credential is logged. The one deliberate exception: the snippets of `/api/clients` carry
//!   `/mcp`'s bearer token, since that is what an editor must be given.
//!
//! The event stream starts with the current state (one `status` event per backend, in config
//! order, one `config` and one `pins` event), so a client that loaded `/api/backends` first misses nothing
//! in between; after that it sends changes only, with keep-alive comments. It ends when
//! Switchboard shuts down.

mod activity;
mod approvals;
mod backends;
mod clients;
mod endpoint;
mod events;
mod profiles;
mod questions;
mod registry;
mod review;
mod secrets;
mod sign_in;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, delete, get, post, put};
use serde::Serialize;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use self::backends::{backend_detail, call_tool, control_backend, list_backends};
use self::clients::{clients, install_client, move_client, moves, undo_client};
use self::events::events;
use self::profiles::{profiles, switch};
use crate::attention::EditorsInUse;
use crate::reload::{ConfigState, Reloader, WriteError};
use auth::{Auth, CALLBACK_ROUTE, is_callback_path};
use editors::Destination;
use hub::Hub;
use supervisor::{BackendHandle, ControlError, Engine};
use transport::guard::{
    ContentType, EndpointToken, ErrorResponse, Guard, bearer_tokens, content_type, json_response,
};
use transport::http::{MCP_PATH, local_base_url};
use transport::token::Token;

/// Every API route starts with this.
pub(crate) const API_PREFIX: &str = "/api";

/// Events queued for one event stream before its producers wait for the client.
pub(super) const EVENTS_CAPACITY: usize = 256;

/// What the API needs besides the hub.
#[derive(Debug, Clone)]
pub struct ApiOptions {
    /// The address the endpoint is bound to.
    pub address: SocketAddr,
    /// The API token, which scripts present.
    pub token: Token,
    /// `/mcp`'s own bearer token as it is now (for the editors' snippets and installs).
    pub mcp_token: EndpointToken,
    /// Origins allowed besides the endpoint's own (e.g. the desktop window's).
    pub extra_origins: Vec<String>,
    /// The `switchboard` binary, which stdio editors launch as `switchboard connect`.
    pub exe: PathBuf,
    /// Sign-in to remote servers.
    pub auth: Arc<Auth>,
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
    engine: Arc<Engine>,
    reloader: Reloader,
    config: watch::Receiver<ConfigState>,
    guard: Guard,
    token: Token,
    /// This run's dashboard key (see the module's notes).
    dashboard_key: Token,
    /// What editors are given to reach `/mcp` (with the token as it is when they ask; see
    /// [`ApiState::destination`]).
    destination: Destination,
    /// The editors whose files point at this Switchboard.
    in_use: EditorsInUse,
    mcp_token: EndpointToken,
    base_url: String,
    auth: Arc<Auth>,
    shutdown: CancellationToken,
}

impl ApiState {
    /// The API over `engine` and the `hub` made of it, whose config `reloader` reloads; its
    /// event streams end when `shutdown` is cancelled.
    pub fn new(
        hub: Hub,
        engine: Arc<Engine>,
        reloader: Reloader,
        options: ApiOptions,
        shutdown: CancellationToken,
    ) -> ApiState {
        let guard = Guard::new(
            options.address.port(),
            EndpointToken::default(),
            options.extra_origins,
        );
        ApiState {
            inner: Arc::new(ApiInner {
                hub,
                engine,
                config: reloader.state(),
                reloader,
                guard,
                token: options.token,
                dashboard_key: Token::generate(),
                in_use: EditorsInUse::new(options.exe.clone(), options.address),
                destination: Destination {
                    exe: options.exe,
                    url: format!("{}{MCP_PATH}", local_base_url(options.address)),
                    token: None,
                    profile: None,
                },
                mcp_token: options.mcp_token,
                base_url: local_base_url(options.address),
                auth: options.auth,
                shutdown,
            }),
            ui: None,
        }
    }

    /// Serves the dashboard's files from `ui`: every path outside `/api` goes there.
    ///
    /// Give the files here rather than adding a fallback to what [`router`] returns: a fallback
    /// added afterwards would not be behind the guard.
    pub fn with_ui(mut self, ui: Router) -> ApiState {
        self.ui = Some(ui);
        self
    }

    /// The link that opens the dashboard: `http://127.0.0.1:PORT/#key=…`. It carries this run's
    /// dashboard key, so it is shown once, to the person who started Switchboard, and never
    /// logged.
    pub fn dashboard_url(&self) -> String {
        format!(
            "{}/#key={}",
            self.inner.base_url,
            self.inner.dashboard_key.expose()
        )
    }

    /// What an editor is given to reach `/mcp` now: a reload may have turned its token on.
    fn destination(&self) -> Destination {
        Destination {
            token: self.inner.mcp_token.get().map(|token| token.to_string()),
            ..self.inner.destination.clone()
        }
    }

    /// The editors whose files point at this Switchboard, as the list of what needs attention
    /// reads them (shared with the tray's).
    pub fn in_use(&self) -> &EditorsInUse {
        &self.inner.in_use
    }

    fn hub(&self) -> &Hub {
        &self.inner.hub
    }

    fn auth(&self) -> &Auth {
        &self.inner.auth
    }

    fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    fn backend(&self, name: &str) -> Result<BackendHandle, ApiError> {
        self.engine()
            .backend(name)
            .ok_or_else(|| ApiError::NotFound(format!("no backend is named {name:?}")))
    }

    /// Every backend, in config order (any the config does not name last, by name).
    fn backends_in_order(&self) -> Vec<BackendHandle> {
        let mut backends = self.engine().backends();
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

    /// Whether the request carries the API token or the dashboard key as its bearer token.
    fn authorized(&self, headers: &HeaderMap) -> bool {
        let inner = &self.inner;
        bearer_tokens(headers).any(|presented| {
            // Both are compared, so the time taken says nothing about which one was close.
            let token = inner.token.matches(presented);
            let key = inner.dashboard_key.matches(presented);
            token | key
        })
    }
}

/// The control API behind the guard and a credential, and the dashboard's files behind the
/// guard (see [`ApiState::with_ui`]). Merge it beside `/mcp`; add no fallback to it.
pub fn router(state: ApiState) -> Router {
    let routes = Router::new()
        .route("/api/backends", get(list_backends))
        .route("/api/backends/{name}", get(backend_detail))
        .route("/api/backends/{name}/sign-in", post(sign_in::begin))
        .route("/api/backends/{name}/sign-out", post(sign_in::sign_out))
        .route("/api/backends/{name}/{action}", post(control_backend))
        .route("/api/backends/{name}/tools/{tool}/call", post(call_tool))
        .route("/api/config", get(config_state))
        .route("/api/profiles", get(profiles))
        .route("/api/profiles/{profile}/switch", post(switch))
        .route("/api/config/reload", post(reload_config))
        .route("/api/endpoint/require-token", post(endpoint::require_token))
        .route("/api/clients", get(clients))
        .route("/api/clients/moves", get(moves))
        .route("/api/clients/{editor}/install", post(install_client))
        .route("/api/clients/{editor}/move", post(move_client))
        .route("/api/clients/{editor}/undo", post(undo_client))
        .route("/api/events", get(events))
        .route("/api/activity", get(activity::list))
        .route("/api/activity/stats", get(activity::stats))
        .route("/api/activity/export", get(activity::export))
        .route("/api/approvals", get(approvals::list))
        .route("/api/approvals/{id}", post(approvals::decide))
        .route("/api/questions", get(questions::list))
        .route("/api/questions/{id}", post(questions::answer))
        .route("/api/attention", get(review::attention))
        .route("/api/pins", get(review::list))
        .route("/api/pins/{server}/approve", post(review::approve))
        .route("/api/registry/search", get(registry::search))
        .route("/api/registry/add", post(registry::add))
        .route("/api/registry/installed", get(registry::installed))
        .route("/api/registry/update/{server}", post(registry::update))
        .route("/api/servers/{server}", delete(registry::remove))
        .route("/api/secrets", get(secrets::list))
        .route(
            "/api/secrets/{name}",
            put(secrets::set).delete(secrets::delete),
        )
        .route(CALLBACK_ROUTE, get(sign_in::callback))
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
pub(crate) enum ApiError {
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
    /// A file could not be written (a full or read-only disk).
    #[error("{0}")]
    Write(String),
}

/// A write the reloader refused: the file stays as it was.
impl From<WriteError> for ApiError {
    fn from(error: WriteError) -> ApiError {
        match error {
            WriteError::Write { .. } => ApiError::Write(error.to_string()),
            WriteError::Read { .. } | WriteError::Edit(_) | WriteError::WouldNotApply { .. } => {
                ApiError::Conflict(error.to_string())
            }
        }
    }
}

impl ApiError {
    /// The stable error code of the body.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            ApiError::NotFound(_) => "not_found",
            ApiError::Unauthorized(_) => "unauthorized",
            ApiError::Conflict(_) => "conflict",
            ApiError::Backend(_) => "backend_error",
            ApiError::BadRequest(_) | ApiError::UnsupportedMediaType => "bad_request",
            ApiError::TooLarge(_) => "too_large",
            ApiError::Write(_) => "write_failed",
        }
    }

    pub(crate) fn status(&self) -> StatusCode {
        match self {
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Backend(_) => StatusCode::BAD_GATEWAY,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Write(_) => StatusCode::INTERNAL_SERVER_ERROR,
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
        ErrorResponse::new(self.status(), self.code(), self.to_string()).into_response()
    }
}

/// Runs before every route: the guard, then for the API a credential and, for requests that
/// change something, the content type.
async fn gate(State(api): State<ApiState>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    // The browser comes back from an authorization server's page: a cross-site navigation
    // without the dashboard's key. Only the `state` of a sign-in in progress lets it in.
    if is_callback_path(request.uri().path()) && request.method() == Method::GET {
        return match api.inner.guard.check_host(headers) {
            Ok(()) => next.run(request).await,
            Err(rejection) => rejection.into_response(),
        };
    }
    if let Err(rejection) = api.inner.guard.check_host_origin(headers) {
        tracing::debug!(
            code = rejection.code(),
            "refused a dashboard request: {rejection}"
        );
        return rejection.into_response();
    }
    let path = request.uri().path();
    if path != API_PREFIX && !path.starts_with("/api/") {
        return next.run(request).await;
    }
    if !api.authorized(headers) {
        return ApiError::Unauthorized(
            "the control API needs `Authorization: Bearer` with the API token, or the key \
             of the dashboard link"
                .to_owned(),
        )
        .into_response();
    }
    let safe_method = matches!(*request.method(), Method::GET | Method::HEAD);
    if !safe_method && content_type(headers) != ContentType::Json {
        return ApiError::UnsupportedMediaType.into_response();
    }
    next.run(request).await
}

async fn config_state(State(api): State<ApiState>) -> Response {
    let config = api.inner.config.borrow().clone();
    json_ok(&config)
}

/// Reads the config file now and applies what of it can apply. A file refused or missing is
/// not an error of the request: the outcome says what happened.
async fn reload_config(State(api): State<ApiState>) -> Response {
    tracing::info!("config reload asked for through the control API");
    json_ok(&api.inner.reloader.reload().await)
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

fn bad_path(rejection: PathRejection) -> ApiError {
    ApiError::BadRequest(rejection.body_text())
}

/// A request's body as JSON of type `T`, or a 400 that says what was `expected` and why not.
fn json_body<T: serde::de::DeserializeOwned>(
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
    expected: &str,
) -> Result<T, ApiError> {
    let body = body.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    serde_json::from_slice(&body)
        .map_err(|error| ApiError::BadRequest(format!("expected {expected}: {error}")))
}

fn json_ok(body: &impl Serialize) -> Response {
    let body = serde_json::to_vec(body).expect("API bodies always serialize");
    json_response(StatusCode::OK, body)
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

#[cfg(test)]
mod tests;
