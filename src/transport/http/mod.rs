//! The HTTP transports of the MCP endpoint: Streamable HTTP (`POST`, `GET` and `DELETE` on
//! `/mcp`) and, for clients that only speak protocol version 2024-11-05, the older HTTP+SSE
//! transport (`GET /sse` and `POST /messages`).
//!
//! [`app`] builds the whole HTTP surface as a `Router` that tests drive without a socket;
//! [`serve`] runs it on a listener until a shutdown token fires. Every request, on every route,
//! first passes the [`Guard`] (Host, Origin or Sec-Fetch-Site, token), which the control API
//! reuses.
//!
//! Choices where the Streamable HTTP specification leaves room:
//!
//! - `initialize` is always answered as `application/json`, even when the client accepts
//!   `text/event-stream`. The session is kept only when the answer is a result; after an error
//!   response it is closed and no `Mcp-Session-Id` is sent.
//! - Other requests are answered as an SSE stream when `Accept` lists `text/event-stream` and the
//!   stream may carry something besides the response: the request asked for progress, or the
//!   client can be asked things (sampling, elicitation, roots) and has no `GET` stream open.
//!   Otherwise the answer is plain JSON, which costs less. In the JSON case, messages that belong
//!   to the request but come before its response go to the session's open `GET` stream; when none
//!   is open they are dropped with a debug log.
//! - A batch (2025-03-26) is accepted whatever the negotiated version, needs a session (so it
//!   cannot carry `initialize`), and is always answered as one JSON array in the order of its
//!   elements; a batch without requests or errors gets `202 Accepted`.
//! - `GET` without `Accept: text/event-stream` gets `406 Not Acceptable`; `405` is reserved for
//!   methods this endpoint does not serve at all. A second `GET` stream for a session gets
//!   `409 Conflict`; when a stream ends, the session's event queue waits for the next one.
//!   Streams do not carry event ids and cannot be resumed with `Last-Event-ID`.
//! - A `Content-Type` other than `application/json` gets `415`; an absent one is tolerated.
//! - Errors meant for an editor are JSON-RPC error responses (`id` null unless known); errors of
//!   the guard are `{code, message}` like the rest of the HTTP API.
//! - Sessions expire lazily: one idle (nothing in flight, no `GET` stream) for longer than the
//!   idle timeout is closed when it is next looked up or when a new session is opened. At most
//!   `max_sessions` are kept; a new one closes the least recently used, idle ones first.
//! - On shutdown, SSE streams end (which cancels their requests) and connections get a short
//!   grace to finish what they are answering.
//!
//! The HTTP+SSE transport of 2024-11-05:
//!
//! - `GET /sse` (with `Accept: text/event-stream`, else `406`) opens a hub session that lives
//!   exactly as long as this stream. Its first event is `endpoint`, whose data is the relative URI
//!   `/messages?sessionId=<id>`; every later event is a `message` carrying one JSON-RPC message:
//!   the session's own events and every message of the replies to what the client posted,
//!   responses included. When the client goes away, the session is closed, which cancels its
//!   calls. Legacy sessions are bounded like Streamable ones (at most `max_sessions` of each
//!   kind; a new one closes, and so ends the stream of, the least recently used) but never
//!   expire while their stream is open. Streams do not carry event ids and cannot be resumed.
//! - `POST /messages?sessionId=<id>` takes one JSON-RPC message and answers `202 Accepted`
//!   before anything is done with it; the answer comes on the stream. An absent `sessionId` gets
//!   `400`, one naming no open stream `404`, a `Content-Type` other than `application/json`
//!   `415` and a body over the limit `413`, each with a JSON-RPC error body like `/mcp`. A body
//!   that is not a message object (invalid JSON, another shape, a batch, which 2024-11-05 does
//!   not have) still gets `202`, and its JSON-RPC error (`id` null) goes on the stream.
//!   `MCP-Protocol-Version` is not looked at: the old transport has no such header.

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use futures_core::Stream;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use serde_json::value::RawValue;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::hub::rewrite::ObjectEntries;
use crate::hub::{Hub, Inbound, SUPPORTED_PROTOCOL_VERSIONS, Session, SessionEvents};
use crate::wire::jsonrpc::{self, Envelope, ErrorObject, Kind};

/// The path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// The path where a client of the HTTP+SSE transport (2024-11-05) opens its event stream.
pub const LEGACY_SSE_PATH: &str = "/sse";

/// The path where a client of the HTTP+SSE transport posts its messages, with `?sessionId=<id>`.
pub const LEGACY_MESSAGES_PATH: &str = "/messages";

/// The header that carries the session id after `initialize`.
pub const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// The header in which a client names the protocol version it speaks.
pub const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// How many sessions are kept before the least recently used is closed.
pub const DEFAULT_MAX_SESSIONS: usize = 1000;

/// How long a session with nothing in flight and no `GET` stream is kept.
const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// How long [`serve`] waits, after shutdown, for connections still answering a request.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How long a connection may take to send a request's headers. Clients on this machine send them
/// at once; a connection idle between requests for this long is closed too.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a request's body may take to arrive, counted from when its headers did. Clients on
/// this machine send a body of the largest size allowed in milliseconds.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long [`serve`] waits after failing to accept a connection.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// The header in which browsers say which site's page made a request.
const SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");

/// How much of a header value an error message repeats.
const MAX_ECHOED_CHARS: usize = 120;

/// What the HTTP endpoint needs to know.
#[derive(Clone)]
pub struct HttpOptions {
    /// The port actually bound; the only one `Host` and `Origin` may name.
    pub port: u16,
    /// When set, every request needs `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// The largest request body taken, in bytes.
    pub max_body_size: usize,
    /// Origins allowed besides the endpoint's own loopback origins (e.g. `tauri://localhost`).
    pub extra_origins: Vec<String>,
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("port", &self.port)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("max_body_size", &self.max_body_size)
            .field("extra_origins", &self.extra_origins)
            .finish()
    }
}

/// The HTTP surface: `/mcp`, `/sse` and `/messages` behind the guard.
pub fn app(hub: Hub, options: HttpOptions) -> Router {
    app_with_limits(hub, options, SessionLimits::default())
}

/// Serves `router` on `listener` until `shutdown` is cancelled.
///
/// A connection must send a request's headers within [`HEADER_READ_TIMEOUT`] (counted from when
/// it connects or finishes its previous exchange), else it is closed, and then the body within
/// [`BODY_READ_TIMEOUT`], else the request fails: a client that never finishes cannot hold a
/// connection and a task for ever.
///
/// On shutdown it stops accepting connections, ends every SSE stream (which cancels the requests
/// they carry) and waits up to a few seconds for connections still answering a request.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let router =
        router
            .layer(Extension(Shutdown(shutdown.clone())))
            .layer(middleware::map_request(|request: Request| async move {
                request.map(|body| Body::new(DeadlineBody::new(body, BODY_READ_TIMEOUT)))
            }));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    let connections = GracefulShutdown::new();
    loop {
        let stream = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of file descriptors, say: wait a moment rather than spin.
                    tracing::warn!(%error, "could not accept an HTTP connection");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                    continue;
                }
            },
        };
        // Without TCP_NODELAY a small response waits for the client's delayed ACK (about 40 ms).
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
        let service = TowerToHyperService::new(router.clone());
        let connection = connections.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "HTTP connection ended with an error");
            }
        });
    }
    drop(listener);
    tokio::select! {
        () = connections.shutdown() => {}
        () = tokio::time::sleep(SHUTDOWN_GRACE) => {
            tracing::warn!(
                "HTTP connections still answering {SHUTDOWN_GRACE:?} after shutdown; leaving them"
            );
        }
    }
    Ok(())
}

/// Checks every request against DNS rebinding and, when a token is configured, for the token.
///
/// The MCP endpoint and the control API share it: wrap a router with [`Guard::protect`], or call
/// the checks directly.
pub struct Guard {
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    token: Option<String>,
    port: u16,
}

/// Why the guard refused a request.
#[derive(Debug, thiserror::Error)]
pub enum Rejection {
    #[error("{0}")]
    ForbiddenHost(String),
    #[error("{0}")]
    ForbiddenOrigin(String),
    #[error("{0}")]
    Unauthorized(String),
}

impl Guard {
    /// A guard for an endpoint on loopback `port`.
    ///
    /// `Host` must name a loopback address with exactly this port; `Origin`, when present, must
    /// be one of the endpoint's own loopback origins or one of `extra_origins` (never `null`);
    /// without it, `Sec-Fetch-Site`, when present, must not name another site.
    pub fn new(port: u16, token: Option<String>, extra_origins: Vec<String>) -> Guard {
        let mut allowed_hosts: Vec<String> = ["127.0.0.1", "localhost", "[::1]"]
            .iter()
            .map(|name| format!("{name}:{port}"))
            .collect();
        if port == 80 {
            allowed_hosts.extend(["127.0.0.1", "localhost", "[::1]"].map(str::to_owned));
        }
        let mut allowed_origins: Vec<String> = allowed_hosts
            .iter()
            .map(|host| format!("http://{host}"))
            .collect();
        allowed_origins.extend(
            extra_origins
                .into_iter()
                .filter(|origin| !origin.eq_ignore_ascii_case("null")),
        );
        Guard {
            allowed_hosts,
            allowed_origins,
            token,
            port,
        }
    }

    /// Runs every check: Host and Origin first, so that a foreign page learns nothing about the
    /// token.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), Rejection> {
        self.check_host_origin(headers)?;
        self.check_token(headers)
    }

    /// Refuses requests whose `Host` is not this endpoint's loopback address, and browser
    /// requests from foreign pages (DNS rebinding, cross-site requests).
    pub fn check_host_origin(&self, headers: &HeaderMap) -> Result<(), Rejection> {
        let expected = || {
            format!(
                "only 127.0.0.1:{port}, localhost:{port} and [::1]:{port} are served",
                port = self.port
            )
        };
        let host = match single_value(headers, &header::HOST) {
            Single::Absent => {
                return Err(Rejection::ForbiddenHost(format!(
                    "the request has no Host header; {}",
                    expected()
                )));
            }
            Single::Several => {
                return Err(Rejection::ForbiddenHost(format!(
                    "the request has several Host headers; {}",
                    expected()
                )));
            }
            Single::One(host) => host,
        };
        if !matches_any(host, &self.allowed_hosts) {
            return Err(Rejection::ForbiddenHost(format!(
                "Host {} is not this endpoint; {} (DNS rebinding protection)",
                echo(host),
                expected()
            )));
        }
        match single_value(headers, &header::ORIGIN) {
            Single::Absent => check_fetch_site(headers),
            Single::Several => Err(Rejection::ForbiddenOrigin(
                "the request has several Origin headers".to_owned(),
            )),
            Single::One(origin) if matches_any(origin, &self.allowed_origins) => Ok(()),
            Single::One(origin) => Err(Rejection::ForbiddenOrigin(format!(
                "requests from Origin {} are refused; only pages of this endpoint may call it",
                echo(origin)
            ))),
        }
    }

    /// Refuses requests without the configured bearer token; passes everything when none is set.
    pub fn check_token(&self, headers: &HeaderMap) -> Result<(), Rejection> {
        let Some(expected) = &self.token else {
            return Ok(());
        };
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(bearer_token);
        match presented {
            None => Err(Rejection::Unauthorized(
                "this endpoint needs `Authorization: Bearer <token>`".to_owned(),
            )),
            Some(token) if constant_time_eq(token.as_bytes(), expected.as_bytes()) => Ok(()),
            Some(_) => Err(Rejection::Unauthorized(
                "the bearer token does not match".to_owned(),
            )),
        }
    }

    /// Puts every route of `router` behind this guard.
    pub fn protect<S>(self: Arc<Self>, router: Router<S>) -> Router<S>
    where
        S: Clone + Send + Sync + 'static,
    {
        router.layer(middleware::from_fn_with_state(self, guard_requests))
    }
}

/// Without an `Origin` (a link followed, an image, a script or a frame loaded), a browser still
/// says in `Sec-Fetch-Site` whether another site's page made the request; such requests are
/// refused like a foreign `Origin`. Clients other than browsers send neither header.
fn check_fetch_site(headers: &HeaderMap) -> Result<(), Rejection> {
    match single_value(headers, &SEC_FETCH_SITE) {
        Single::Absent => Ok(()),
        Single::One(site)
            if site.eq_ignore_ascii_case("same-origin") || site.eq_ignore_ascii_case("none") =>
        {
            Ok(())
        }
        Single::One(site) => Err(Rejection::ForbiddenOrigin(format!(
            "requests from another site's page (Sec-Fetch-Site: {}) are refused; only pages of \
             this endpoint may call it",
            echo(site)
        ))),
        Single::Several => Err(Rejection::ForbiddenOrigin(
            "the request has several Sec-Fetch-Site headers".to_owned(),
        )),
    }
}

/// The guard as middleware (see [`Guard::protect`]).
pub async fn guard_requests(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    if let Err(rejection) = guard.check(request.headers()) {
        tracing::debug!(
            code = rejection.code(),
            "refused an HTTP request: {rejection}"
        );
        return rejection.into_response();
    }
    next.run(request).await
}

impl Rejection {
    /// The stable error code of the `{code, message}` body.
    pub fn code(&self) -> &'static str {
        match self {
            Rejection::ForbiddenHost(_) => "forbidden_host",
            Rejection::ForbiddenOrigin(_) => "forbidden_origin",
            Rejection::Unauthorized(_) => "unauthorized",
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Rejection::ForbiddenHost(_) | Rejection::ForbiddenOrigin(_) => StatusCode::FORBIDDEN,
            Rejection::Unauthorized(_) => StatusCode::UNAUTHORIZED,
        }
    }
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        #[derive(serde::Serialize)]
        struct ApiError<'a> {
            code: &'a str,
            message: String,
        }
        let body = serde_json::to_vec(&ApiError {
            code: self.code(),
            message: self.to_string(),
        })
        .expect("an API error always serializes");
        let mut response = json_response(self.status(), body);
        if let Rejection::Unauthorized(_) = self {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// Limits on the sessions one endpoint keeps.
#[derive(Debug, Clone, Copy)]
struct SessionLimits {
    max_sessions: usize,
    idle_timeout: Duration,
}

impl Default for SessionLimits {
    fn default() -> SessionLimits {
        SessionLimits {
            max_sessions: DEFAULT_MAX_SESSIONS,
            idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
        }
    }
}

fn app_with_limits(hub: Hub, options: HttpOptions, limits: SessionLimits) -> Router {
    let guard = Arc::new(Guard::new(
        options.port,
        options.token,
        options.extra_origins,
    ));
    let endpoint = Arc::new(Endpoint {
        sessions: Sessions::new(hub.clone(), limits),
        legacy_sessions: Sessions::new(hub, limits),
        max_body_size: options.max_body_size,
    });
    let routes = Router::new()
        .route(MCP_PATH, get(get_mcp).post(post_mcp).delete(delete_mcp))
        .route(LEGACY_SSE_PATH, get(get_legacy_sse))
        .route(LEGACY_MESSAGES_PATH, post(post_legacy_message))
        .with_state(endpoint);
    guard.protect(routes)
}

/// The state of the handlers.
struct Endpoint {
    /// Sessions of the Streamable HTTP transport (`/mcp`).
    sessions: Sessions,
    /// Sessions of the HTTP+SSE transport, each one alive while its `GET /sse` stream is open.
    legacy_sessions: Sessions,
    max_body_size: usize,
}

/// Put into every request by [`serve`]: cancelled when the server shuts down.
#[derive(Clone)]
struct Shutdown(CancellationToken);

async fn post_mcp(
    State(endpoint): State<Arc<Endpoint>>,
    shutdown: Option<Extension<Shutdown>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Some(response) = unsupported_protocol_version(&headers) {
        return response;
    }
    if !content_type_is_json(&headers) {
        return jsonrpc_error_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            jsonrpc::INVALID_REQUEST,
            "the body must be JSON (Content-Type: application/json)",
        );
    }
    let body = match read_body(&headers, body, endpoint.max_body_size).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let session_id = session_id(&headers);
    match body.iter().find(|byte| !byte.is_ascii_whitespace()) {
        Some(b'{') => {
            let answer = if accepts(&headers, "text/event-stream") {
                Answer::Stream(shutdown.map(|s| s.0))
            } else {
                Answer::Json
            };
            post_message(&endpoint, session_id, &body, answer).await
        }
        Some(b'[') => post_batch(&endpoint, session_id, &body).await,
        _ => unparsable(&body),
    }
}

/// How a request is answered.
enum Answer {
    /// The response alone, as `application/json`.
    Json,
    /// Every message of the reply as an SSE stream, which ends with the server.
    Stream(Option<Shutdown>),
}

/// Answers one message.
async fn post_message(
    endpoint: &Endpoint,
    session_id: Option<&str>,
    body: &[u8],
    answer: Answer,
) -> Response {
    let Ok(envelope) = Envelope::parse(body) else {
        return unparsable(body);
    };
    let id = envelope.id;
    let Some(session_id) = session_id else {
        if envelope.kind() == Kind::Request && envelope.method.as_deref() == Some("initialize") {
            return initialize(endpoint, body, id).await;
        }
        return missing_session(id);
    };
    let Some(record) = endpoint.sessions.find(session_id) else {
        return unknown_session(id);
    };
    let answer = match answer {
        Answer::Stream(_) if !may_relate_messages(&envelope, &record) => Answer::Json,
        answer => answer,
    };
    let activity = Activity::begin(record);
    match activity.record().session.receive(body) {
        Inbound::Accepted => StatusCode::ACCEPTED.into_response(),
        Inbound::Rejected(error) => json_response(StatusCode::OK, error),
        Inbound::Request(reply) => match answer {
            Answer::Stream(shutdown) => {
                let stream = ReplyStream {
                    messages: reply.messages,
                    shutdown: shutdown.map(|s| Box::pin(s.0.cancelled_owned())),
                    unanswered: Some(id.map(ToOwned::to_owned)),
                    _activity: activity,
                };
                Sse::new(stream)
                    .keep_alive(KeepAlive::default())
                    .into_response()
            }
            Answer::Json => {
                let response = final_message(reply.messages, Some(activity.record())).await;
                json_response(StatusCode::OK, response.unwrap_or_else(|| no_response(id)))
            }
        },
    }
}

/// Whether answering this request may involve more than its response on the POST stream:
/// progress it asked for, or requests to a client that has no `GET` stream to receive them.
fn may_relate_messages(envelope: &Envelope<'_>, record: &SessionRecord) -> bool {
    let wants_progress = envelope
        .params
        .and_then(|params| ObjectEntries::parse(params.get()).ok())
        .and_then(|params| params.get("_meta").map(|meta| meta.get().to_owned()))
        .and_then(|meta| {
            ObjectEntries::parse(&meta)
                .ok()
                .map(|meta| meta.get("progressToken").is_some())
        })
        .unwrap_or(false);
    wants_progress || (record.session.can_be_asked() && !record.has_get_stream())
}

/// Opens a session for an `initialize` sent without a session id, and keeps it if it succeeds.
async fn initialize(endpoint: &Endpoint, body: &[u8], id: Option<&RawValue>) -> Response {
    let hub = &endpoint.sessions.hub;
    let (session, events) = hub.open_session();
    // Closes the new session if it is not kept, including when the client goes away.
    let mut unkept = CloseUnlessKept {
        hub,
        session: session.clone(),
        keep: false,
    };
    let response = match session.receive(body) {
        Inbound::Request(reply) => match final_message(reply.messages, None).await {
            Some(response) => response,
            None => return json_response(StatusCode::OK, no_response(id)),
        },
        Inbound::Rejected(error) => return json_response(StatusCode::OK, error),
        Inbound::Accepted => {
            return jsonrpc_error_response(
                StatusCode::OK,
                id,
                jsonrpc::INTERNAL_ERROR,
                "initialize was taken as a notification",
            );
        }
    };
    let failed = Envelope::parse(&response).map_or(true, |envelope| envelope.error.is_some());
    if failed {
        return json_response(StatusCode::OK, response);
    }
    let Ok(session_header) = HeaderValue::from_str(session.id()) else {
        return jsonrpc_error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            id,
            jsonrpc::INTERNAL_ERROR,
            "the session id cannot be sent as a header",
        );
    };
    unkept.keep = true;
    tracing::debug!(session = session.id(), "HTTP session opened");
    endpoint.sessions.insert(session, events);
    let mut response = json_response(StatusCode::OK, response);
    response
        .headers_mut()
        .insert(MCP_SESSION_ID, session_header);
    response
}

/// Answers a batch: every element is taken, then the answers are collected in order.
async fn post_batch(endpoint: &Endpoint, session_id: Option<&str>, body: &[u8]) -> Response {
    let Ok(elements) = serde_json::from_slice::<Vec<&RawValue>>(body) else {
        return unparsable(body);
    };
    if elements.is_empty() {
        return jsonrpc_error_response(
            StatusCode::BAD_REQUEST,
            None,
            jsonrpc::INVALID_REQUEST,
            "the batch is empty",
        );
    }
    let Some(session_id) = session_id else {
        return missing_session(None);
    };
    let Some(record) = endpoint.sessions.find(session_id) else {
        return unknown_session(None);
    };
    let activity = Activity::begin(record);

    enum Answer<'a> {
        Ready(Vec<u8>),
        Pending(&'a RawValue, mpsc::UnboundedReceiver<Vec<u8>>),
    }
    let mut answers = Vec::new();
    for element in &elements {
        let text = element.get();
        if !text.starts_with('{') {
            answers.push(Answer::Ready(error_body(
                None,
                jsonrpc::INVALID_REQUEST,
                "a batch element must be a JSON-RPC message object",
            )));
            continue;
        }
        match activity.record().session.receive(text.as_bytes()) {
            Inbound::Request(reply) => answers.push(Answer::Pending(element, reply.messages)),
            Inbound::Accepted => {}
            Inbound::Rejected(error) => answers.push(Answer::Ready(error)),
        }
    }
    if answers.is_empty() {
        return StatusCode::ACCEPTED.into_response();
    }
    let mut out = Vec::with_capacity(256 * answers.len());
    out.push(b'[');
    for (index, answer) in answers.into_iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        let message = match answer {
            Answer::Ready(message) => message,
            Answer::Pending(element, messages) => final_message(messages, Some(activity.record()))
                .await
                .unwrap_or_else(|| {
                    let id = Envelope::parse(element.get().as_bytes())
                        .ok()
                        .and_then(|envelope| envelope.id);
                    no_response(id)
                }),
        };
        out.extend_from_slice(&message);
    }
    out.push(b']');
    json_response(StatusCode::OK, out)
}

async fn get_mcp(
    State(endpoint): State<Arc<Endpoint>>,
    shutdown: Option<Extension<Shutdown>>,
    headers: HeaderMap,
) -> Response {
    if let Some(response) = unsupported_protocol_version(&headers) {
        return response;
    }
    if !accepts(&headers, "text/event-stream") {
        return jsonrpc_error_response(
            StatusCode::NOT_ACCEPTABLE,
            None,
            jsonrpc::INVALID_REQUEST,
            "GET opens a server-sent event stream; send Accept: text/event-stream",
        );
    }
    let Some(session_id) = session_id(&headers) else {
        return missing_session(None);
    };
    let Some(record) = endpoint.sessions.find(session_id) else {
        return unknown_session(None);
    };
    let Some(stream) = EventStream::open(record, shutdown.map(|s| s.0)) else {
        return jsonrpc_error_response(
            StatusCode::CONFLICT,
            None,
            jsonrpc::INVALID_REQUEST,
            "this session already has an open GET stream",
        );
    };
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn delete_mcp(State(endpoint): State<Arc<Endpoint>>, headers: HeaderMap) -> Response {
    if let Some(response) = unsupported_protocol_version(&headers) {
        return response;
    }
    let Some(session_id) = session_id(&headers) else {
        return missing_session(None);
    };
    match endpoint.sessions.remove(session_id) {
        Some(record) => {
            endpoint.sessions.close(&record, "deleted by the client");
            StatusCode::NO_CONTENT.into_response()
        }
        None => unknown_session(None),
    }
}

/// Opens a session of the HTTP+SSE transport and streams everything it says.
async fn get_legacy_sse(
    State(endpoint): State<Arc<Endpoint>>,
    shutdown: Option<Extension<Shutdown>>,
    headers: HeaderMap,
) -> Response {
    if !accepts(&headers, "text/event-stream") {
        return jsonrpc_error_response(
            StatusCode::NOT_ACCEPTABLE,
            None,
            jsonrpc::INVALID_REQUEST,
            "GET /sse opens a server-sent event stream; send Accept: text/event-stream",
        );
    }
    let sessions = &endpoint.legacy_sessions;
    let (session, events) = sessions.hub.open_session();
    let messages_uri = format!("{LEGACY_MESSAGES_PATH}?sessionId={}", session.id());
    tracing::debug!(session = session.id(), "HTTP+SSE session opened");
    let record = sessions.insert(session, events);
    let messages = EventStream::open(record, shutdown.map(|s| s.0))
        .expect("nothing took the events of a session just opened");
    let stream = LegacyStream {
        endpoint_event: Some(Event::default().event("endpoint").data(messages_uri)),
        messages,
        endpoint: Arc::clone(&endpoint),
    };
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// Takes one message for a session of the HTTP+SSE transport; whatever answers it goes on the
/// session's stream.
async fn post_legacy_message(
    State(endpoint): State<Arc<Endpoint>>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Some(session_id) = legacy_session_id(&uri) else {
        return jsonrpc_error_response(
            StatusCode::BAD_REQUEST,
            None,
            jsonrpc::INVALID_REQUEST,
            "missing sessionId: open GET /sse first and post to the endpoint it names",
        );
    };
    if !content_type_is_json(&headers) {
        return jsonrpc_error_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            jsonrpc::INVALID_REQUEST,
            "the body must be JSON (Content-Type: application/json)",
        );
    }
    // A session whose stream has just ended has no sender any more: it is as good as gone.
    let Some((record, stream)) = endpoint
        .legacy_sessions
        .find(session_id)
        .and_then(|record| record.stream_sender().map(|stream| (record, stream)))
    else {
        return jsonrpc_error_response(
            StatusCode::NOT_FOUND,
            None,
            jsonrpc::INVALID_REQUEST,
            "unknown or closed session: open GET /sse for a new one",
        );
    };
    let body = match read_body(&headers, body, endpoint.max_body_size).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let activity = Activity::begin(record);
    let error = match body.iter().find(|byte| !byte.is_ascii_whitespace()) {
        Some(b'{') if Envelope::parse(&body).is_ok() => {
            match activity.record().session.receive(&body) {
                Inbound::Request(reply) => {
                    // Ends with the reply, or when the stream goes away (which cancels the call).
                    tokio::spawn(forward_legacy_reply(reply.messages, stream, activity));
                    return StatusCode::ACCEPTED.into_response();
                }
                Inbound::Accepted => None,
                Inbound::Rejected(error) => Some(error),
            }
        }
        Some(b'[') => Some(error_body(
            None,
            jsonrpc::INVALID_REQUEST,
            "batches are not supported on the HTTP+SSE transport; post one message at a time",
        )),
        _ => Some(unparsable_body(&body)),
    };
    if let Some(error) = error
        && stream.send(error).is_err()
    {
        tracing::debug!(
            session = activity.record().session.id(),
            "the SSE stream ended before an error could be sent on it"
        );
    }
    StatusCode::ACCEPTED.into_response()
}

/// The `sessionId` of a `/messages` URI. Session ids are plain hex, so it is not decoded.
fn legacy_session_id(uri: &Uri) -> Option<&str> {
    uri.query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("sessionId="))
}

/// Sends every message of one reply to the session's stream, its response last.
///
/// Returns when the reply ends or when the stream is gone; dropping the reply then cancels the
/// request at the backend.
async fn forward_legacy_reply(
    mut messages: mpsc::UnboundedReceiver<Vec<u8>>,
    stream: mpsc::UnboundedSender<Vec<u8>>,
    _activity: Activity,
) {
    loop {
        let message = tokio::select! {
            () = stream.closed() => return,
            message = messages.recv() => message,
        };
        let Some(message) = message else {
            return;
        };
        if stream.send(message).is_err() {
            return;
        }
    }
}

/// The sessions of one endpoint, by id.
struct Sessions {
    hub: Hub,
    limits: SessionLimits,
    by_id: Mutex<HashMap<String, Arc<SessionRecord>>>,
}

struct SessionRecord {
    session: Session,
    /// Cancelled when this endpoint closes the session; ends its `GET` stream.
    closed: CancellationToken,
    live: Mutex<Liveness>,
}

struct Liveness {
    last_used: Instant,
    /// Requests in flight plus the open `GET` stream.
    n_active: usize,
    /// The session's unrelated messages; `None` while a `GET` stream holds them.
    events: Option<SessionEvents>,
    /// While a `GET` stream is open: where messages related to a request answered as plain JSON
    /// go.
    related: Option<mpsc::UnboundedSender<Vec<u8>>>,
}

impl Sessions {
    fn new(hub: Hub, limits: SessionLimits) -> Sessions {
        Sessions {
            hub,
            limits,
            by_id: Mutex::new(HashMap::new()),
        }
    }

    /// The session with this id, unless it is unknown or has expired (then it is closed).
    fn find(&self, id: &str) -> Option<Arc<SessionRecord>> {
        let now = Instant::now();
        let expired = {
            let mut by_id = lock(&self.by_id);
            let record = by_id.get(id)?;
            if !record.idle_longer_than(self.limits.idle_timeout, now) {
                return Some(Arc::clone(record));
            }
            by_id.remove(id)?
        };
        self.close(&expired, "expired");
        None
    }

    /// Keeps a new session, first closing expired ones and, when full, the least recently used.
    fn insert(&self, session: Session, events: SessionEvents) -> Arc<SessionRecord> {
        let now = Instant::now();
        let record = Arc::new(SessionRecord {
            session,
            closed: CancellationToken::new(),
            live: Mutex::new(Liveness {
                last_used: now,
                n_active: 0,
                events: Some(events),
                related: None,
            }),
        });
        let mut expired = Vec::new();
        let mut evicted = Vec::new();
        {
            let mut by_id = lock(&self.by_id);
            by_id.retain(|_, record| {
                let keep = !record.idle_longer_than(self.limits.idle_timeout, now);
                if !keep {
                    expired.push(Arc::clone(record));
                }
                keep
            });
            while by_id.len() >= self.limits.max_sessions.max(1) {
                let least_recently_used = by_id
                    .iter()
                    .min_by_key(|(_, record)| {
                        let live = lock(&record.live);
                        (live.n_active > 0, live.last_used)
                    })
                    .map(|(id, _)| id.clone())
                    .expect("a full map has a least recently used session");
                evicted.push(
                    by_id
                        .remove(&least_recently_used)
                        .expect("the id was just found"),
                );
            }
            by_id.insert(record.session.id().to_owned(), Arc::clone(&record));
        }
        for record in expired {
            self.close(&record, "expired");
        }
        for record in evicted {
            self.close(&record, "evicted: too many sessions");
        }
        record
    }

    fn remove(&self, id: &str) -> Option<Arc<SessionRecord>> {
        lock(&self.by_id).remove(id)
    }

    /// Ends a session that is no longer in the map.
    fn close(&self, record: &SessionRecord, why: &str) {
        record.closed.cancel();
        self.hub.close_session(record.session.id());
        tracing::debug!(session = record.session.id(), "HTTP session closed: {why}");
    }
}

impl Drop for Sessions {
    fn drop(&mut self) {
        let by_id = std::mem::take(self.by_id.get_mut().unwrap_or_else(PoisonError::into_inner));
        for record in by_id.values() {
            self.close(record, "the HTTP endpoint is gone");
        }
    }
}

impl SessionRecord {
    /// Whether a `GET` stream of this session is open.
    fn has_get_stream(&self) -> bool {
        lock(&self.live).related.is_some()
    }

    fn idle_longer_than(&self, timeout: Duration, now: Instant) -> bool {
        let live = lock(&self.live);
        live.n_active == 0 && now.saturating_duration_since(live.last_used) > timeout
    }

    /// Where messages for the open `GET` stream go; `None` while none is open.
    fn stream_sender(&self) -> Option<mpsc::UnboundedSender<Vec<u8>>> {
        lock(&self.live).related.clone()
    }

    /// Passes a message related to a request answered as plain JSON to the open `GET` stream.
    fn send_related(&self, message: Vec<u8>) {
        let live = lock(&self.live);
        let sent = live
            .related
            .as_ref()
            .is_some_and(|related| related.send(message).is_ok());
        if !sent {
            tracing::debug!(
                session = self.session.id(),
                "no GET stream is open; dropped a message related to a request answered as JSON"
            );
        }
    }
}

/// Marks a session busy while it lives: it does not expire and is evicted last.
struct Activity(Arc<SessionRecord>);

impl Activity {
    fn begin(record: Arc<SessionRecord>) -> Activity {
        {
            let mut live = lock(&record.live);
            live.n_active += 1;
            live.last_used = Instant::now();
        }
        Activity(record)
    }

    fn record(&self) -> &SessionRecord {
        &self.0
    }
}

impl Drop for Activity {
    fn drop(&mut self) {
        let mut live = lock(&self.0.live);
        live.n_active -= 1;
        live.last_used = Instant::now();
    }
}

struct CloseUnlessKept<'a> {
    hub: &'a Hub,
    session: Session,
    keep: bool,
}

impl Drop for CloseUnlessKept<'_> {
    fn drop(&mut self) {
        if !self.keep {
            self.hub.close_session(self.session.id());
        }
    }
}

/// The SSE body answering one request: its messages, the response last.
///
/// It owns the reply's receiver, so a client that goes away cancels the request.
struct ReplyStream {
    messages: mpsc::UnboundedReceiver<Vec<u8>>,
    shutdown: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    /// The request's id until its response has gone out: if the messages end without one (the
    /// session was deleted mid-call), an error response takes its place, as over JSON.
    unanswered: Option<Option<Box<RawValue>>>,
    _activity: Activity,
}

impl Stream for ReplyStream {
    type Item = Result<Event, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(shutdown) = &mut this.shutdown
            && shutdown.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(None);
        }
        match this.messages.poll_recv(cx) {
            Poll::Ready(Some(message)) => {
                let is_response = Envelope::parse(&message)
                    .is_ok_and(|envelope| envelope.kind() == Kind::Response);
                if is_response {
                    this.unanswered = None;
                }
                Poll::Ready(Some(Ok(message_event(&message))))
            }
            Poll::Ready(None) => Poll::Ready(
                this.unanswered
                    .take()
                    .map(|id| Ok(message_event(&no_response(id.as_deref())))),
            ),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The SSE body of a `GET`: the session's unrelated messages, plus messages related to requests
/// answered as plain JSON. On drop, the session's queue goes back to its record.
struct EventStream {
    events: Option<SessionEvents>,
    related: mpsc::UnboundedReceiver<Vec<u8>>,
    closed: Pin<Box<WaitForCancellationFutureOwned>>,
    shutdown: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    activity: Activity,
}

impl EventStream {
    /// `None` when another stream holds the session's queue.
    fn open(record: Arc<SessionRecord>, shutdown: Option<Shutdown>) -> Option<EventStream> {
        let closed = Box::pin(record.closed.clone().cancelled_owned());
        let activity = Activity::begin(record);
        let (related_sender, related) = mpsc::unbounded_channel();
        let events = {
            let mut live = lock(&activity.record().live);
            let events = live.events.take()?;
            live.related = Some(related_sender);
            events
        };
        Some(EventStream {
            events: Some(events),
            related,
            closed,
            shutdown: shutdown.map(|s| Box::pin(s.0.cancelled_owned())),
            activity,
        })
    }
}

impl Stream for EventStream {
    type Item = Result<Event, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.closed.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        if let Some(shutdown) = &mut this.shutdown
            && shutdown.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(None);
        }
        if let Poll::Ready(Some(message)) = this.related.poll_recv(cx) {
            return Poll::Ready(Some(Ok(message_event(&message))));
        }
        let Some(events) = &mut this.events else {
            return Poll::Ready(None);
        };
        events
            .poll_recv(cx)
            .map(|message| message.map(|message| Ok(message_event(&message))))
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        let mut live = lock(&self.activity.record().live);
        live.related = None;
        live.events = self.events.take();
    }
}

/// The SSE body of `GET /sse`: the `endpoint` event, then every message for the session.
///
/// The session lives as long as this stream: dropping it (the client went away, the server shut
/// down, or the session was evicted) closes the session, which cancels its calls.
struct LegacyStream {
    /// Sent before anything else; `None` once sent.
    endpoint_event: Option<Event>,
    messages: EventStream,
    endpoint: Arc<Endpoint>,
}

impl Stream for LegacyStream {
    type Item = Result<Event, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(event) = this.endpoint_event.take() {
            return Poll::Ready(Some(Ok(event)));
        }
        Pin::new(&mut this.messages).poll_next(cx)
    }
}

impl Drop for LegacyStream {
    fn drop(&mut self) {
        let sessions = &self.endpoint.legacy_sessions;
        let id = self.messages.activity.record().session.id();
        // Already gone when it was evicted; then it was closed at that moment.
        if let Some(record) = sessions.remove(id) {
            sessions.close(&record, "its SSE stream ended");
        }
    }
}

/// Returns the reply's response; the messages before it go to the session's `GET` stream.
async fn final_message(
    mut messages: mpsc::UnboundedReceiver<Vec<u8>>,
    record: Option<&SessionRecord>,
) -> Option<Vec<u8>> {
    // Everything before the response goes on at once: a request to the client among it must be
    // answered before the response can come.
    while let Some(message) = messages.recv().await {
        let is_response =
            Envelope::parse(&message).is_ok_and(|envelope| envelope.kind() == Kind::Response);
        if is_response {
            return Some(message);
        }
        match record {
            Some(record) => record.send_related(message),
            None => tracing::debug!("dropped a message related to a request answered as JSON"),
        }
    }
    None
}

fn message_event(message: &[u8]) -> Event {
    let event = Event::default().event("message");
    match std::str::from_utf8(message) {
        Ok(text) => event.data(text),
        Err(_) => event.data(String::from_utf8_lossy(message)),
    }
}

/// A request body that fails once its time to arrive has passed.
struct DeadlineBody {
    inner: Body,
    deadline: Pin<Box<tokio::time::Sleep>>,
    limit: Duration,
}

/// The error of a [`DeadlineBody`] that took too long.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {} s", .0.as_secs())]
struct BodyTimedOut(Duration);

impl DeadlineBody {
    fn new(inner: Body, limit: Duration) -> DeadlineBody {
        DeadlineBody {
            inner,
            deadline: Box::pin(tokio::time::sleep(limit)),
            limit,
        }
    }
}

impl hyper::body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimedOut(self.limit))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// Whether `error`, or an error it wraps, is a body that took too long.
fn body_timed_out(error: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(error), |error| error.source())
        .any(|error| error.is::<BodyTimedOut>())
}

/// Reads the body, refusing it past `limit` bytes with 413, and one that takes too long with 408.
async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, Response> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if let Some(declared) = declared
        && declared > limit as u64
    {
        return Err(too_large(Some(declared), limit));
    }
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.downcast_ref::<LengthLimitError>().is_some() => {
            Err(too_large(None, limit))
        }
        Err(error) if body_timed_out(&*error) => Err(jsonrpc_error_response(
            StatusCode::REQUEST_TIMEOUT,
            None,
            jsonrpc::INVALID_REQUEST,
            error.to_string(),
        )),
        Err(error) => Err(jsonrpc_error_response(
            StatusCode::BAD_REQUEST,
            None,
            jsonrpc::INVALID_REQUEST,
            format!("could not read the request body: {error}"),
        )),
    }
}

fn too_large(declared: Option<u64>, limit: usize) -> Response {
    let message = match declared {
        Some(size) => format!("request body of {size} bytes exceeds the limit of {limit} bytes"),
        None => format!("request body of undeclared size exceeds the limit of {limit} bytes"),
    };
    jsonrpc_error_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        None,
        jsonrpc::INVALID_REQUEST,
        message,
    )
}

/// The 400 answer to an `MCP-Protocol-Version` this endpoint does not speak.
fn unsupported_protocol_version(headers: &HeaderMap) -> Option<Response> {
    let value = headers.get(MCP_PROTOCOL_VERSION)?;
    if let Ok(version) = value.to_str()
        && SUPPORTED_PROTOCOL_VERSIONS.contains(&version.trim())
    {
        return None;
    }
    Some(jsonrpc_error_response(
        StatusCode::BAD_REQUEST,
        None,
        jsonrpc::INVALID_REQUEST,
        format!(
            "unsupported MCP-Protocol-Version {}; this endpoint speaks {}",
            echo_bytes(value.as_bytes()),
            SUPPORTED_PROTOCOL_VERSIONS.join(", ")
        ),
    ))
}

/// The `Mcp-Session-Id` sent, if any. A value that is not visible ASCII names no session.
fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(MCP_SESSION_ID)
        .map(|value| value.to_str().unwrap_or(""))
}

/// Whether an `Accept` header lists `media_type` (parameters and weights are not weighed).
fn accepts(headers: &HeaderMap, media_type: &str) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|item| essence(item).eq_ignore_ascii_case(media_type))
}

fn content_type_is_json(headers: &HeaderMap) -> bool {
    match headers.get(header::CONTENT_TYPE) {
        None => true,
        Some(value) => value
            .to_str()
            .is_ok_and(|value| essence(value).eq_ignore_ascii_case("application/json")),
    }
}

/// A media type without its parameters.
fn essence(media_type: &str) -> &str {
    media_type.split(';').next().unwrap_or("").trim()
}

/// The answer to a body that is not a message object or a batch: invalid JSON (-32700) or valid
/// JSON of another shape (-32600).
fn unparsable(body: &[u8]) -> Response {
    json_response(StatusCode::BAD_REQUEST, unparsable_body(body))
}

/// The JSON-RPC error (`id` null) for a body that is not a message object or a batch.
fn unparsable_body(body: &[u8]) -> Vec<u8> {
    let (code, message) = match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
        Ok(_) => (
            jsonrpc::INVALID_REQUEST,
            "the body must be a JSON-RPC message object or a batch array".to_owned(),
        ),
        Err(error) => (
            jsonrpc::PARSE_ERROR,
            format!("the body is not valid JSON: {error}"),
        ),
    };
    error_body(None, code, message)
}

fn missing_session(id: Option<&RawValue>) -> Response {
    jsonrpc_error_response(
        StatusCode::BAD_REQUEST,
        id,
        jsonrpc::INVALID_REQUEST,
        "missing Mcp-Session-Id header: send initialize alone first, then repeat the \
         Mcp-Session-Id it returns on every request",
    )
}

fn unknown_session(id: Option<&RawValue>) -> Response {
    jsonrpc_error_response(
        StatusCode::NOT_FOUND,
        id,
        jsonrpc::INVALID_REQUEST,
        "unknown or expired session: send initialize to start a new one",
    )
}

fn no_response(id: Option<&RawValue>) -> Vec<u8> {
    error_body(
        id,
        jsonrpc::INTERNAL_ERROR,
        "the request ended without a response",
    )
}

fn jsonrpc_error_response(
    status: StatusCode,
    id: Option<&RawValue>,
    code: i64,
    message: impl Into<String>,
) -> Response {
    json_response(status, error_body(id, code, message))
}

/// A JSON-RPC error response as one JSON text (without the newline of the stdio framing).
fn error_body(id: Option<&RawValue>, code: i64, message: impl Into<String>) -> Vec<u8> {
    let mut body = jsonrpc::error_line(id, &ErrorObject::new(code, message));
    if body.last() == Some(&b'\n') {
        body.pop();
    }
    body
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

enum Single<'a> {
    Absent,
    One(&'a str),
    Several,
}

/// The one value of a header; a value that is not visible ASCII reads as empty.
fn single_value<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Single<'a> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (None, _) => Single::Absent,
        (Some(value), None) => Single::One(value.to_str().unwrap_or("")),
        (Some(_), Some(_)) => Single::Several,
    }
}

fn matches_any(value: &str, allowed: &[String]) -> bool {
    allowed
        .iter()
        .any(|allowed| allowed.eq_ignore_ascii_case(value))
}

fn bearer_token(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// Compares without stopping at the first difference, so timing does not reveal a prefix of the
/// token. (A token's length is not treated as a secret.)
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut difference = 0u8;
    for (x, y) in a.iter().zip(b) {
        difference = std::hint::black_box(difference | (x ^ y));
    }
    difference == 0
}

/// A header value quoted for an error message, cut short.
fn echo(value: &str) -> String {
    let cut: String = value.chars().take(MAX_ECHOED_CHARS).collect();
    format!("{cut:?}")
}

fn echo_bytes(value: &[u8]) -> String {
    echo(&String::from_utf8_lossy(value))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use axum::http::Method;
    use http_body_util::BodyExt;
    use serde_json::{Value, json};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tower::ServiceExt;

    use super::*;
    use crate::config::BackendConfig;
    use crate::hub::HubOptions;
    use crate::supervisor::spawn::GroupRegistry;
    use crate::supervisor::status::BackendState;

    /// Generous bound for an event that should come within milliseconds.
    const EVENT_LIMIT: Duration = Duration::from_secs(20);
    const PORT: u16 = 4242;
    const BOTH: &str = "application/json, text/event-stream";
    const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#;
    const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

    fn hub(configs: Vec<BackendConfig>) -> Hub {
        Hub::start(configs, GroupRegistry::in_memory(), HubOptions::default())
    }

    fn options() -> HttpOptions {
        HttpOptions {
            port: PORT,
            token: None,
            max_body_size: 64 * 1024,
            extra_origins: Vec::new(),
        }
    }

    fn loopback() -> String {
        format!("127.0.0.1:{PORT}")
    }

    /// A hub over the misbehaving test server, once the hub lists its tools.
    async fn misbehave_hub() -> Hub {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/backends/misbehave.py");
        let mut config = BackendConfig::new("mis", "python3", vec![script.to_owned()]);
        config.handshake_timeout = Duration::from_secs(10);
        let hub = hub(vec![config]);
        let mut status = hub
            .engine()
            .backend("mis")
            .expect("configured")
            .watch_status();
        tokio::time::timeout(
            EVENT_LIMIT,
            status.wait_for(|s| s.state == BackendState::Ready),
        )
        .await
        .expect("the backend is ready in time")
        .expect("the backend task lives");
        // The catalog is merged a moment later; an initialized session hears when it changes.
        let (session, mut events) = hub.open_session();
        let exchange = |message: &str| {
            let Inbound::Request(mut reply) = session.receive(message.as_bytes()) else {
                panic!("a request");
            };
            async move {
                let mut last = None;
                while let Some(message) = reply.messages.recv().await {
                    last = Some(message);
                }
                String::from_utf8(last.expect("a response")).expect("UTF-8")
            }
        };
        exchange(INITIALIZE).await;
        session.receive(INITIALIZED.as_bytes());
        let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        while !exchange(list).await.contains("mis__slow") {
            tokio::time::timeout(EVENT_LIMIT, events.recv())
                .await
                .expect("the catalog changes in time")
                .expect("the session is open");
        }
        hub.close_session(session.id());
        hub
    }

    async fn send(app: &Router, request: Request) -> Response {
        app.clone().oneshot(request).await.expect("infallible")
    }

    fn with_headers(method: Method, headers: &[(&str, &str)], body: &str) -> Request {
        with_uri(method, MCP_PATH, headers, body)
    }

    fn with_uri(method: Method, uri: &str, headers: &[(&str, &str)], body: &str) -> Request {
        let mut builder = Request::builder().method(method).uri(uri);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder
            .body(Body::from(body.to_owned()))
            .expect("a valid request")
    }

    fn post(session: Option<&str>, accept: &str, body: &str) -> Request {
        let host = loopback();
        let mut headers = vec![
            ("host", host.as_str()),
            ("content-type", "application/json"),
            ("accept", accept),
        ];
        if let Some(session) = session {
            headers.push(("mcp-session-id", session));
        }
        with_headers(Method::POST, &headers, body)
    }

    fn get_stream(session: &str) -> Request {
        with_headers(
            Method::GET,
            &[
                ("host", &loopback()),
                ("accept", "text/event-stream"),
                ("mcp-session-id", session),
            ],
            "",
        )
    }

    fn delete(session: &str) -> Request {
        with_headers(
            Method::DELETE,
            &[("host", &loopback()), ("mcp-session-id", session)],
            "",
        )
    }

    fn ping(id: u64) -> String {
        json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string()
    }

    async fn body_bytes(response: Response) -> Bytes {
        tokio::time::timeout(EVENT_LIMIT, response.into_body().collect())
            .await
            .expect("the body ends in time")
            .expect("a readable body")
            .to_bytes()
    }

    async fn body_json(response: Response) -> Value {
        let bytes = body_bytes(response).await;
        serde_json::from_slice(&bytes).unwrap_or_else(|_| panic!("JSON body: {bytes:?}"))
    }

    fn content_type(response: &Response) -> &str {
        response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
    }

    /// Opens a session over HTTP and returns its id.
    async fn initialize(app: &Router) -> String {
        let response = send(app, post(None, BOTH, INITIALIZE)).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            content_type(&response),
            "application/json",
            "initialize is answered as JSON"
        );
        let session = response
            .headers()
            .get(MCP_SESSION_ID)
            .expect("a session id")
            .to_str()
            .expect("visible ASCII")
            .to_owned();
        let answer = body_json(response).await;
        assert_eq!(answer["id"], 0);
        assert_eq!(answer["result"]["protocolVersion"], "2025-06-18");
        let response = send(app, post(Some(&session), BOTH, INITIALIZED)).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        session
    }

    /// Reads the `message` events of an SSE body.
    struct SseReader {
        body: Body,
        buffer: String,
    }

    impl SseReader {
        fn new(response: Response) -> SseReader {
            assert_eq!(response.status(), StatusCode::OK);
            assert_eq!(content_type(&response), "text/event-stream");
            SseReader {
                body: response.into_body(),
                buffer: String::new(),
            }
        }

        /// The next message, or `None` when the stream ends.
        async fn next(&mut self) -> Option<Value> {
            let (event, data) = self.next_event().await?;
            assert_eq!(event, "message", "{data:?}");
            Some(serde_json::from_str(&data).expect("JSON data"))
        }

        /// The next event's type and data, or `None` when the stream ends.
        async fn next_event(&mut self) -> Option<(String, String)> {
            loop {
                if let Some(end) = self.buffer.find("\n\n") {
                    let block: String = self.buffer.drain(..end + 2).collect();
                    let data: Vec<&str> = block
                        .lines()
                        .filter_map(|line| line.strip_prefix("data: "))
                        .collect();
                    if data.is_empty() {
                        continue; // a keep-alive comment
                    }
                    let event = block
                        .lines()
                        .find_map(|line| line.strip_prefix("event: "))
                        .unwrap_or("")
                        .to_owned();
                    return Some((event, data.join("\n")));
                }
                let frame = tokio::time::timeout(EVENT_LIMIT, self.body.frame())
                    .await
                    .expect("an event in time")?
                    .expect("a readable body");
                if let Ok(data) = frame.into_data() {
                    self.buffer
                        .push_str(std::str::from_utf8(&data).expect("UTF-8"));
                }
            }
        }
    }

    // --- The guard: Host ---------------------------------------------------------------------

    /// A request the handler refuses without asking the hub (DELETE without a session), so that
    /// getting its 400 proves the guard let it through.
    fn probe(headers: &[(&str, &str)]) -> Request {
        with_headers(Method::DELETE, headers, "")
    }

    async fn assert_reaches_handler(app: &Router, request: Request) {
        let response = send(app, request).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        assert_no_cors(&response);
        let body = body_json(response).await;
        assert_eq!(body["jsonrpc"], "2.0", "the handler answered: {body}");
    }

    async fn assert_refused(app: &Router, request: Request, status: StatusCode, code: &str) {
        let response = send(app, request).await;
        assert_eq!(response.status(), status);
        assert_no_cors(&response);
        assert_eq!(content_type(&response), "application/json");
        let body = body_json(response).await;
        assert_eq!(body["code"], code, "{body}");
        assert!(
            body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{body}"
        );
    }

    fn assert_no_cors(response: &Response) {
        let cors: Vec<_> = response
            .headers()
            .keys()
            .filter(|name| name.as_str().starts_with("access-control-"))
            .collect();
        assert!(cors.is_empty(), "no CORS headers: {cors:?}");
    }

    fn guarded_app(options: HttpOptions) -> Router {
        app(hub(Vec::new()), options)
    }

    #[tokio::test]
    async fn loopback_hosts_are_allowed() {
        let app = guarded_app(options());
        for host in [
            format!("127.0.0.1:{PORT}"),
            format!("localhost:{PORT}"),
            format!("[::1]:{PORT}"),
            format!("LocalHost:{PORT}"),
        ] {
            assert_reaches_handler(&app, probe(&[("host", &host)])).await;
        }
    }

    #[tokio::test]
    async fn localhost_evil_com_host_is_rejected() {
        let app = guarded_app(options());
        let host = format!("localhost.evil.com:{PORT}");
        let request = probe(&[("host", &host)]);
        assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_host").await;
    }

    #[tokio::test]
    async fn host_127_0_0_10_is_rejected() {
        let app = guarded_app(options());
        let host = format!("127.0.0.10:{PORT}");
        let request = probe(&[("host", &host)]);
        assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_host").await;
    }

    #[tokio::test]
    async fn evil_com_host_is_rejected() {
        let app = guarded_app(options());
        for host in ["evil.com", "evil.com:4242", "127.0.0.1.evil.com:4242"] {
            let request = probe(&[("host", host)]);
            assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_host").await;
        }
    }

    #[tokio::test]
    async fn loopback_host_with_another_port_is_rejected() {
        let app = guarded_app(options());
        for host in [
            "127.0.0.1:4243",
            "localhost:80",
            "localhost",
            "[::1]",
            "127.0.0.1",
        ] {
            let request = probe(&[("host", host)]);
            assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_host").await;
        }
    }

    #[tokio::test]
    async fn missing_host_is_rejected() {
        let app = guarded_app(options());
        assert_refused(&app, probe(&[]), StatusCode::FORBIDDEN, "forbidden_host").await;
    }

    #[tokio::test]
    async fn two_host_headers_are_rejected() {
        let app = guarded_app(options());
        let good = loopback();
        let request = probe(&[("host", &good), ("host", "evil.com")]);
        assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_host").await;
    }

    // --- The guard: Origin -------------------------------------------------------------------

    #[tokio::test]
    async fn missing_origin_is_allowed() {
        let app = guarded_app(options());
        assert_reaches_handler(&app, probe(&[("host", &loopback())])).await;
    }

    #[tokio::test]
    async fn loopback_origins_are_allowed() {
        let app = guarded_app(options());
        for origin in [
            format!("http://127.0.0.1:{PORT}"),
            format!("http://localhost:{PORT}"),
            format!("http://[::1]:{PORT}"),
        ] {
            let request = probe(&[("host", &loopback()), ("origin", &origin)]);
            assert_reaches_handler(&app, request).await;
        }
    }

    #[tokio::test]
    async fn null_origin_is_rejected() {
        let mut options = options();
        options.extra_origins = vec!["null".to_owned()];
        let app = guarded_app(options);
        let request = probe(&[("host", &loopback()), ("origin", "null")]);
        assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_origin").await;
    }

    #[tokio::test]
    async fn foreign_origin_is_rejected() {
        let app = guarded_app(options());
        for origin in [
            "http://evil.com".to_owned(),
            format!("http://localhost.evil.com:{PORT}"),
            format!("http://127.0.0.10:{PORT}"),
            format!("https://localhost:{PORT}"),
            format!("http://localhost:{}", PORT + 1),
            "http://localhost".to_owned(),
            "tauri://localhost".to_owned(),
        ] {
            let request = probe(&[("host", &loopback()), ("origin", &origin)]);
            assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_origin").await;
        }
    }

    #[tokio::test]
    async fn another_sites_page_is_rejected_even_without_origin() {
        let app = guarded_app(options());
        for site in ["cross-site", "same-site", "Cross-Site", ""] {
            let request = probe(&[("host", &loopback()), ("sec-fetch-site", site)]);
            assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_origin").await;
        }
        for site in ["same-origin", "none"] {
            let request = probe(&[("host", &loopback()), ("sec-fetch-site", site)]);
            assert_reaches_handler(&app, request).await;
        }
    }

    #[tokio::test]
    async fn tauri_origin_is_allowed_when_configured() {
        let mut options = options();
        options.extra_origins = vec![
            "tauri://localhost".to_owned(),
            "http://tauri.localhost".to_owned(),
        ];
        let app = guarded_app(options);
        for origin in ["tauri://localhost", "http://tauri.localhost"] {
            let request = probe(&[("host", &loopback()), ("origin", origin)]);
            assert_reaches_handler(&app, request).await;
        }
        let request = probe(&[("host", &loopback()), ("origin", "tauri://evil")]);
        assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_origin").await;
    }

    #[tokio::test]
    async fn cross_site_preflight_is_rejected_without_cors_headers() {
        let app = guarded_app(options());
        let request = with_headers(
            Method::OPTIONS,
            &[
                ("host", &loopback()),
                ("origin", "http://evil.com"),
                ("access-control-request-method", "POST"),
            ],
            "",
        );
        assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_origin").await;
    }

    // --- The guard: token --------------------------------------------------------------------

    fn token_options() -> HttpOptions {
        HttpOptions {
            token: Some("s3cret-token".to_owned()),
            ..options()
        }
    }

    #[tokio::test]
    async fn missing_token_is_unauthorized() {
        let app = guarded_app(token_options());
        let response = send(&app, probe(&[("host", &loopback())])).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            response.headers().get(header::WWW_AUTHENTICATE),
            Some(&HeaderValue::from_static("Bearer"))
        );
        assert_eq!(body_json(response).await["code"], "unauthorized");
    }

    #[tokio::test]
    async fn wrong_token_is_unauthorized() {
        let app = guarded_app(token_options());
        for authorization in [
            "Bearer s3cret-tokeN",
            "Bearer s3cret-token-and-more",
            "Bearer ",
            "Basic s3cret-token",
            "s3cret-token",
        ] {
            let request = probe(&[("host", &loopback()), ("authorization", authorization)]);
            assert_refused(&app, request, StatusCode::UNAUTHORIZED, "unauthorized").await;
        }
    }

    #[tokio::test]
    async fn right_token_is_allowed() {
        let app = guarded_app(token_options());
        for authorization in ["Bearer s3cret-token", "bearer s3cret-token"] {
            let request = probe(&[("host", &loopback()), ("authorization", authorization)]);
            assert_reaches_handler(&app, request).await;
        }
    }

    #[tokio::test]
    async fn foreign_host_is_rejected_before_the_token_is_looked_at() {
        let app = guarded_app(token_options());
        let request = probe(&[
            ("host", "evil.com"),
            ("authorization", "Bearer s3cret-token"),
        ]);
        assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_host").await;
        let request = probe(&[("host", "evil.com")]);
        assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_host").await;
    }

    #[test]
    fn constant_time_eq_compares_whole_values() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(constant_time_eq(b"", b""));
    }

    // --- Body limit --------------------------------------------------------------------------

    #[tokio::test]
    async fn declared_oversized_body_is_rejected_with_413() {
        let app = guarded_app(HttpOptions {
            max_body_size: 100,
            ..options()
        });
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
            "x".repeat(200)
        );
        let length = body.len().to_string();
        let request = with_headers(
            Method::POST,
            &[("host", &loopback()), ("content-length", &length)],
            &body,
        );
        let response = send(&app, request).await;
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let answer = body_json(response).await;
        assert_eq!(
            answer,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message":
                format!("request body of {} bytes exceeds the limit of 100 bytes", body.len())}})
        );
    }

    #[tokio::test]
    async fn undeclared_oversized_body_is_rejected_with_413() {
        let app = guarded_app(HttpOptions {
            max_body_size: 100,
            ..options()
        });
        let body = "x".repeat(101);
        let request = with_headers(Method::POST, &[("host", &loopback())], &body);
        let response = send(&app, request).await;
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let answer = body_json(response).await;
        assert_eq!(answer["error"]["code"], -32600);
        assert_eq!(
            answer["error"]["message"],
            "request body of undeclared size exceeds the limit of 100 bytes"
        );
    }

    // --- /mcp without a hub behind it --------------------------------------------------------

    #[tokio::test]
    async fn invalid_json_is_a_parse_error() {
        let app = guarded_app(options());
        for body in ["{not json", "[1,", "", "nope"] {
            let response = send(&app, post(None, BOTH, body)).await;
            assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body:?}");
            let answer = body_json(response).await;
            assert_eq!(answer["error"]["code"], -32700, "{body:?}");
            assert_eq!(answer["id"], Value::Null);
        }
    }

    #[tokio::test]
    async fn json_that_is_not_a_message_is_an_invalid_request() {
        let app = guarded_app(options());
        for body in [
            "42",
            "\"ping\"",
            "null",
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
        ] {
            let response = send(&app, post(None, BOTH, body)).await;
            assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body:?}");
            assert_eq!(
                body_json(response).await["error"]["code"],
                -32600,
                "{body:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_request_without_a_session_is_400() {
        let app = guarded_app(options());
        let response = send(&app, post(None, BOTH, &ping(3))).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let answer = body_json(response).await;
        assert_eq!(answer["id"], 3);
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("Mcp-Session-Id")),
            "{answer}"
        );
        let response = send(&app, post(None, BOTH, &format!("[{}]", ping(4)))).await;
        assert_eq!(
            response.status(),
            StatusCode::BAD_REQUEST,
            "a batch cannot open a session"
        );
    }

    #[tokio::test]
    async fn an_unknown_session_is_404() {
        let app = guarded_app(options());
        let response = send(&app, post(Some("no-such-session"), BOTH, &ping(1))).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        assert_eq!(body_json(response).await["id"], 1);
        let response = send(&app, get_stream("no-such-session")).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        let response = send(&app, delete("no-such-session")).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn an_unsupported_protocol_version_is_400() {
        let app = guarded_app(options());
        let host = loopback();
        for method in [Method::POST, Method::GET, Method::DELETE] {
            let request = with_headers(
                method.clone(),
                &[
                    ("host", &host),
                    ("accept", BOTH),
                    ("mcp-protocol-version", "1999-01-01"),
                ],
                INITIALIZE,
            );
            let response = send(&app, request).await;
            assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{method}");
            let answer = body_json(response).await;
            let message = answer["error"]["message"].as_str().expect("a message");
            assert!(
                message.contains("1999-01-01") && message.contains("2025-06-18"),
                "{message}"
            );
        }
    }

    #[tokio::test]
    async fn other_methods_get_405_with_allow() {
        let app = guarded_app(options());
        for method in [Method::PUT, Method::PATCH, Method::OPTIONS] {
            let response = send(
                &app,
                with_headers(method.clone(), &[("host", &loopback())], ""),
            )
            .await;
            assert_eq!(
                response.status(),
                StatusCode::METHOD_NOT_ALLOWED,
                "{method}"
            );
            let allow = response
                .headers()
                .get(header::ALLOW)
                .and_then(|value| value.to_str().ok())
                .expect("an Allow header");
            for allowed in ["GET", "POST", "DELETE"] {
                assert!(allow.contains(allowed), "{allow}");
            }
        }
    }

    #[tokio::test]
    async fn get_without_event_stream_accept_is_406() {
        let app = guarded_app(options());
        for accept in [None, Some("application/json")] {
            let host = loopback();
            let mut headers = vec![("host", host.as_str()), ("mcp-session-id", "whatever")];
            if let Some(accept) = accept {
                headers.push(("accept", accept));
            }
            let response = send(&app, with_headers(Method::GET, &headers, "")).await;
            assert_eq!(response.status(), StatusCode::NOT_ACCEPTABLE, "{accept:?}");
        }
    }

    #[tokio::test]
    async fn a_body_that_is_not_json_is_415() {
        let app = guarded_app(options());
        let request = with_headers(
            Method::POST,
            &[("host", &loopback()), ("content-type", "text/plain")],
            INITIALIZE,
        );
        let response = send(&app, request).await;
        assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }

    // --- /mcp with the hub -------------------------------------------------------------------

    #[tokio::test]
    async fn initialize_opens_a_session_and_requests_are_answered_as_json_or_sse() {
        let hub = hub(Vec::new());
        let app = app(hub.clone(), options());
        let session = initialize(&app).await;
        assert!(hub.session(&session).is_some(), "the hub knows the session");

        let response = send(&app, post(Some(&session), "application/json", &ping(1))).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(content_type(&response), "application/json");
        assert_eq!(
            body_json(response).await,
            json!({"jsonrpc": "2.0", "id": 1, "result": {}})
        );

        // Nothing but the response can come (no progress asked for, the client cannot be asked
        // anything), so even a client that accepts both gets plain JSON.
        let response = send(&app, post(Some(&session), BOTH, &ping(2))).await;
        assert_eq!(content_type(&response), "application/json");
        assert_eq!(
            body_json(response).await,
            json!({"jsonrpc": "2.0", "id": 2, "result": {}})
        );

        let response = send(
            &app,
            post(
                Some(&session),
                BOTH,
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"progressToken":"t"}}}"#,
            ),
        )
        .await;
        let mut events = SseReader::new(response);
        let tools = events.next().await.expect("the response");
        assert_eq!(tools["id"], 3);
        assert_eq!(tools["result"]["tools"], json!([]));
        assert_eq!(
            events.next().await,
            None,
            "the stream ends after the response"
        );

        let response = send(
            &app,
            post(
                Some(&session),
                BOTH,
                r#"{"jsonrpc":"2.0","id":4,"method":"no/such"}"#,
            ),
        )
        .await;
        assert_eq!(body_json(response).await["error"]["code"], -32601);
    }

    #[tokio::test]
    async fn a_failed_initialize_keeps_no_session() {
        let hub = hub(Vec::new());
        let app = app(hub.clone(), options());
        let response = send(
            &app,
            post(
                None,
                BOTH,
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#,
            ),
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK);
        assert!(response.headers().get(MCP_SESSION_ID).is_none());
        assert_eq!(body_json(response).await["error"]["code"], -32602);
        assert_eq!(
            hub.session_count(),
            0,
            "the session opened for it was closed"
        );
    }

    #[tokio::test]
    async fn a_rejected_message_is_answered_with_its_error() {
        let app = app(hub(Vec::new()), options());
        let session = initialize(&app).await;
        let response = send(
            &app,
            post(
                Some(&session),
                BOTH,
                r#"{"jsonrpc":"1.0","id":9,"method":"ping"}"#,
            ),
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK);
        let answer = body_json(response).await;
        assert_eq!(answer["id"], 9);
        assert_eq!(answer["error"]["code"], -32600);
    }

    #[tokio::test]
    async fn a_batch_is_answered_as_one_array_in_order() {
        let app = app(hub(Vec::new()), options());
        let session = initialize(&app).await;
        let batch = format!("[{}, {INITIALIZED}, {}, 7]", ping(4), ping(5));
        let response = send(&app, post(Some(&session), BOTH, &batch)).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(content_type(&response), "application/json");
        let answers = body_json(response).await;
        let answers = answers.as_array().expect("an array");
        assert_eq!(answers.len(), 3, "{answers:?}");
        assert_eq!(answers[0], json!({"jsonrpc": "2.0", "id": 4, "result": {}}));
        assert_eq!(answers[1], json!({"jsonrpc": "2.0", "id": 5, "result": {}}));
        assert_eq!(answers[2]["error"]["code"], -32600);

        let response = send(
            &app,
            post(Some(&session), BOTH, &format!("[{INITIALIZED}]")),
        )
        .await;
        assert_eq!(
            response.status(),
            StatusCode::ACCEPTED,
            "a batch without requests"
        );
        assert!(body_bytes(response).await.is_empty());

        let response = send(&app, post(Some(&session), BOTH, "[]")).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        assert_eq!(body_json(response).await["error"]["code"], -32600);
    }

    #[tokio::test]
    async fn one_get_stream_per_session_and_a_reconnect_continues() {
        let app = app(hub(Vec::new()), options());
        let session = initialize(&app).await;
        let first = send(&app, get_stream(&session)).await;
        assert_eq!(first.status(), StatusCode::OK);
        assert_eq!(content_type(&first), "text/event-stream");
        let second = send(&app, get_stream(&session)).await;
        assert_eq!(second.status(), StatusCode::CONFLICT);
        drop(first);
        let third = send(&app, get_stream(&session)).await;
        assert_eq!(
            third.status(),
            StatusCode::OK,
            "the queue went back to the session"
        );
    }

    #[tokio::test]
    async fn delete_closes_the_session_and_ends_its_get_stream() {
        let hub = hub(Vec::new());
        let app = app(hub.clone(), options());
        let session = initialize(&app).await;
        let mut stream = SseReader::new(send(&app, get_stream(&session)).await);
        let response = send(&app, delete(&session)).await;
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
        assert_eq!(stream.next().await, None, "the GET stream ended");
        assert!(hub.session(&session).is_none(), "the hub closed it");
        let response = send(&app, post(Some(&session), BOTH, &ping(1))).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        let response = send(&app, delete(&session)).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }

    #[tokio::test(start_paused = true)]
    async fn the_least_recently_used_session_is_closed_when_full() {
        let hub = hub(Vec::new());
        let limits = SessionLimits {
            max_sessions: 2,
            ..SessionLimits::default()
        };
        let app = app_with_limits(hub.clone(), options(), limits);
        let first = initialize(&app).await;
        tokio::time::advance(Duration::from_secs(1)).await;
        let second = initialize(&app).await;
        tokio::time::advance(Duration::from_secs(1)).await;
        let response = send(&app, post(Some(&first), BOTH, &ping(1))).await;
        assert_eq!(response.status(), StatusCode::OK);
        tokio::time::advance(Duration::from_secs(1)).await;
        let third = initialize(&app).await;

        let response = send(&app, post(Some(&second), BOTH, &ping(2))).await;
        assert_eq!(
            response.status(),
            StatusCode::NOT_FOUND,
            "the least recently used went"
        );
        assert!(hub.session(&second).is_none());
        for session in [&first, &third] {
            let response = send(&app, post(Some(session), "application/json", &ping(3))).await;
            assert_eq!(response.status(), StatusCode::OK);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn idle_sessions_expire_but_not_while_a_get_stream_is_open() {
        let hub = hub(Vec::new());
        let app = app(hub.clone(), options());
        let idle = initialize(&app).await;
        let listening = initialize(&app).await;
        let stream = send(&app, get_stream(&listening)).await;
        assert_eq!(stream.status(), StatusCode::OK);
        tokio::time::advance(DEFAULT_SESSION_IDLE_TIMEOUT + Duration::from_secs(1)).await;

        let response = send(&app, post(Some(&idle), BOTH, &ping(1))).await;
        assert_eq!(
            response.status(),
            StatusCode::NOT_FOUND,
            "idle for too long"
        );
        assert!(hub.session(&idle).is_none(), "and closed at the hub");
        let response = send(&app, post(Some(&listening), "application/json", &ping(2))).await;
        assert_eq!(
            response.status(),
            StatusCode::OK,
            "an open GET stream keeps it"
        );

        drop(stream);
        tokio::time::advance(DEFAULT_SESSION_IDLE_TIMEOUT + Duration::from_secs(1)).await;
        initialize(&app).await;
        assert!(
            hub.session(&listening).is_none(),
            "swept when a new session opened"
        );
    }

    // --- /mcp with a real backend ------------------------------------------------------------

    fn call(id: u64, tool: &str, arguments: Value, progress_token: Option<u64>) -> String {
        let mut params = json!({"name": tool, "arguments": arguments});
        if let Some(token) = progress_token {
            params["_meta"] = json!({"progressToken": token});
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
    }

    #[tokio::test]
    async fn progress_streams_before_the_response_over_sse() {
        let app = app(misbehave_hub().await, options());
        let session = initialize(&app).await;
        let request = call(1, "mis__slow", json!({"ms": 100}), Some(7));
        let mut events = SseReader::new(send(&app, post(Some(&session), BOTH, &request)).await);
        let mut messages = Vec::new();
        while let Some(message) = events.next().await {
            messages.push(message);
        }
        let (response, progress) = messages.split_last().expect("messages");
        assert_eq!(response["id"], 1);
        assert_eq!(
            response["result"]["content"][0]["text"], "slept 100",
            "{response}"
        );
        assert!(!progress.is_empty(), "progress came first: {messages:?}");
        for note in progress {
            assert_eq!(note["method"], "notifications/progress");
            assert_eq!(note["params"]["progressToken"], 7);
        }
    }

    #[tokio::test]
    async fn progress_of_a_call_answered_as_json_goes_to_the_get_stream() {
        let app = app(misbehave_hub().await, options());
        let session = initialize(&app).await;
        let mut stream = SseReader::new(send(&app, get_stream(&session)).await);
        let request = call(1, "mis__slow", json!({"ms": 100}), Some(8));
        let response = send(&app, post(Some(&session), "application/json", &request)).await;
        assert_eq!(content_type(&response), "application/json");
        let answer = body_json(response).await;
        assert_eq!(
            answer["result"]["content"][0]["text"], "slept 100",
            "{answer}"
        );
        let note = stream.next().await.expect("progress on the GET stream");
        assert_eq!(note["method"], "notifications/progress");
        assert_eq!(note["params"]["progressToken"], 8);
    }

    #[tokio::test]
    async fn session_events_reach_the_get_stream() {
        let app = app(misbehave_hub().await, options());
        let session = initialize(&app).await;
        let mut stream = SseReader::new(send(&app, get_stream(&session)).await);
        let request = call(1, "mis__change_tools", json!({}), None);
        let response = send(&app, post(Some(&session), "application/json", &request)).await;
        assert_eq!(response.status(), StatusCode::OK);
        let changed = stream.next().await.expect("an event");
        assert_eq!(changed["method"], "notifications/tools/list_changed");
    }

    #[tokio::test]
    async fn dropping_an_sse_response_cancels_the_call() {
        let app = app(misbehave_hub().await, options());
        let session = initialize(&app).await;
        let request = call(1, "mis__slow", json!({"ms": 600_000}), Some(9));
        let mut events = SseReader::new(send(&app, post(Some(&session), BOTH, &request)).await);
        let progress = events
            .next()
            .await
            .expect("progress: the backend is running the call");
        assert_eq!(progress["method"], "notifications/progress");
        drop(events);

        let deadline = Instant::now() + EVENT_LIMIT;
        loop {
            let request = call(2, "mis__cancelled_ids", json!({}), None);
            let answer =
                body_json(send(&app, post(Some(&session), "application/json", &request)).await)
                    .await;
            let text = answer["result"]["content"][0]["text"]
                .as_str()
                .expect("text");
            let ids: Vec<Value> = serde_json::from_str(text).expect("ids");
            if ids.len() == 1 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the dropped call was never cancelled"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    // --- The HTTP+SSE transport (2024-11-05) -----------------------------------------------

    const INITIALIZE_2024: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}"#;

    fn legacy_get(headers: &[(&str, &str)]) -> Request {
        with_uri(Method::GET, LEGACY_SSE_PATH, headers, "")
    }

    fn legacy_post(uri: &str, body: &str) -> Request {
        let host = loopback();
        let headers = [
            ("host", host.as_str()),
            ("content-type", "application/json"),
        ];
        with_uri(Method::POST, uri, &headers, body)
    }

    /// Opens `GET /sse`; returns the stream past its `endpoint` event, and that event's URI.
    async fn open_legacy(app: &Router) -> (SseReader, String) {
        let host = loopback();
        let request = legacy_get(&[("host", &host), ("accept", "text/event-stream")]);
        let mut stream = SseReader::new(send(app, request).await);
        let (event, uri) = stream.next_event().await.expect("an endpoint event");
        assert_eq!(event, "endpoint", "the first event names the endpoint");
        (stream, uri)
    }

    fn legacy_session(uri: &str) -> &str {
        uri.split_once("?sessionId=").expect("a session id").1
    }

    /// Posts one message, which must get `202` and an empty body.
    async fn legacy_send(app: &Router, uri: &str, body: &str) {
        let response = send(app, legacy_post(uri, body)).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED, "{body}");
        assert!(body_bytes(response).await.is_empty());
    }

    /// Posts one message and returns the next message of the stream.
    async fn legacy_exchange(app: &Router, stream: &mut SseReader, uri: &str, body: &str) -> Value {
        legacy_send(app, uri, body).await;
        stream.next().await.expect("an answer on the stream")
    }

    /// Opens a legacy session and initializes it with protocol version 2024-11-05.
    async fn initialize_legacy(app: &Router) -> (SseReader, String) {
        let (mut stream, uri) = open_legacy(app).await;
        let answer = legacy_exchange(app, &mut stream, &uri, INITIALIZE_2024).await;
        assert_eq!(answer["id"], 0);
        assert_eq!(
            answer["result"]["protocolVersion"], "2024-11-05",
            "{answer}"
        );
        legacy_send(app, &uri, INITIALIZED).await;
        (stream, uri)
    }

    #[tokio::test]
    async fn legacy_sse_first_names_a_relative_endpoint_with_the_session_id() {
        let hub = hub(Vec::new());
        let app = app(hub.clone(), options());
        let (mut stream, uri) = open_legacy(&app).await;
        let session = legacy_session(&uri);
        assert_eq!(uri, format!("/messages?sessionId={session}"), "relative");
        assert!(hub.session(session).is_some(), "the hub knows the session");
        let answer = legacy_exchange(&app, &mut stream, &uri, &ping(1)).await;
        assert_eq!(answer, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    }

    #[tokio::test]
    async fn legacy_initialize_list_and_call_are_answered_on_the_stream() {
        let app = app(misbehave_hub().await, options());
        let (mut stream, uri) = initialize_legacy(&app).await;

        let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        let tools = legacy_exchange(&app, &mut stream, &uri, list).await;
        assert_eq!(tools["id"], 1);
        let names: Vec<&str> = tools["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|tool| tool["name"].as_str())
            .collect();
        assert!(names.contains(&"mis__echo"), "{names:?}");

        let request = call(2, "mis__echo", json!({"text": "over HTTP+SSE"}), None);
        let result = legacy_exchange(&app, &mut stream, &uri, &request).await;
        assert_eq!(result["id"], 2);
        assert_eq!(
            result["result"]["content"][0]["text"], "over HTTP+SSE",
            "{result}"
        );

        // Every message of a reply comes on the stream: progress first, then the response.
        legacy_send(
            &app,
            &uri,
            &call(3, "mis__slow", json!({"ms": 100}), Some(5)),
        )
        .await;
        let mut progress = 0;
        let response = loop {
            let message = stream.next().await.expect("a message");
            if message["method"] == "notifications/progress" {
                assert_eq!(message["params"]["progressToken"], 5);
                progress += 1;
                continue;
            }
            break message;
        };
        assert_eq!(response["id"], 3);
        assert_eq!(response["result"]["content"][0]["text"], "slept 100");
        assert!(progress > 0, "progress came before the response");

        // Requests run side by side: one that never ends does not hold up the next.
        legacy_send(&app, &uri, &call(4, "mis__hang", json!({}), None)).await;
        let request = call(5, "mis__echo", json!({"text": "meanwhile"}), None);
        let result = legacy_exchange(&app, &mut stream, &uri, &request).await;
        assert_eq!(result["id"], 5, "{result}");
    }

    #[tokio::test]
    async fn legacy_session_events_reach_the_stream() {
        let app = app(misbehave_hub().await, options());
        let (mut stream, uri) = initialize_legacy(&app).await;
        legacy_send(&app, &uri, &call(1, "mis__change_tools", json!({}), None)).await;
        let mut methods = Vec::new();
        while methods.len() < 2 {
            let message = stream.next().await.expect("a message");
            methods.push(message["method"].as_str().unwrap_or("response").to_owned());
        }
        assert!(
            methods
                .iter()
                .any(|m| m == "notifications/tools/list_changed"),
            "{methods:?}"
        );
    }

    #[tokio::test]
    async fn legacy_bad_bodies_are_answered_on_the_stream_after_202() {
        let app = app(hub(Vec::new()), options());
        let (mut stream, uri) = open_legacy(&app).await;
        for (body, code) in [
            ("{not json", -32700),
            ("", -32700),
            ("42", -32600),
            (r#"{"jsonrpc":"2.0","id":1,"method":5}"#, -32600),
            (&format!("[{}]", ping(1)), -32600),
        ] {
            let answer = legacy_exchange(&app, &mut stream, &uri, body).await;
            assert_eq!(answer["error"]["code"], code, "{body:?}: {answer}");
            assert_eq!(answer["id"], Value::Null, "{body:?}");
        }
        let rejected = r#"{"jsonrpc":"1.0","id":9,"method":"ping"}"#;
        let answer = legacy_exchange(&app, &mut stream, &uri, rejected).await;
        assert_eq!(answer["id"], 9);
        assert_eq!(answer["error"]["code"], -32600);
    }

    #[tokio::test]
    async fn legacy_oversized_and_non_json_bodies_are_refused_over_http() {
        let app = app(
            hub(Vec::new()),
            HttpOptions {
                max_body_size: 100,
                ..options()
            },
        );
        let (_stream, uri) = open_legacy(&app).await;
        let response = send(&app, legacy_post(&uri, &"x".repeat(101))).await;
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(body_json(response).await["error"]["code"], -32600);

        let host = loopback();
        let headers = [("host", host.as_str()), ("content-type", "text/plain")];
        let request = with_uri(Method::POST, &uri, &headers, &ping(1));
        let response = send(&app, request).await;
        assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }

    #[tokio::test]
    async fn legacy_unknown_or_missing_session_is_refused() {
        let app = app(hub(Vec::new()), options());
        let response = send(&app, legacy_post("/messages?sessionId=no-such", &ping(1))).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        assert_eq!(body_json(response).await["error"]["code"], -32600);
        for uri in ["/messages", "/messages?session=x", "/messages?sessionId"] {
            let response = send(&app, legacy_post(uri, &ping(1))).await;
            assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{uri}");
        }
        let response = send(&app, legacy_post("/messages?sessionId=", &ping(1))).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);

        let host = loopback();
        let response = send(&app, legacy_get(&[("host", &host)])).await;
        assert_eq!(response.status(), StatusCode::NOT_ACCEPTABLE);
        let request = with_uri(Method::GET, LEGACY_MESSAGES_PATH, &[("host", &host)], "");
        let response = send(&app, request).await;
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    }

    #[tokio::test]
    async fn legacy_routes_sit_behind_the_guard() {
        let hub = hub(Vec::new());
        let app = app(hub.clone(), options());
        let evil_host = format!("localhost.evil.com:{PORT}");
        let request = legacy_get(&[("host", &evil_host), ("accept", "text/event-stream")]);
        assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_host").await;
        assert_eq!(hub.session_count(), 0, "no session was opened");

        let (mut stream, uri) = open_legacy(&app).await;
        let host = loopback();
        for (name, value, code) in [
            ("host", evil_host.as_str(), "forbidden_host"),
            ("origin", "http://evil.com", "forbidden_origin"),
        ] {
            let mut headers = vec![("content-type", "application/json")];
            if name == "origin" {
                headers.push(("host", &host));
            }
            headers.push((name, value));
            let request = with_uri(Method::POST, &uri, &headers, &ping(1));
            assert_refused(&app, request, StatusCode::FORBIDDEN, code).await;
        }
        let answer = legacy_exchange(&app, &mut stream, &uri, &ping(2)).await;
        assert_eq!(
            answer["id"], 2,
            "the refused messages never reached the session"
        );

        let app = guarded_app(token_options());
        let request = legacy_get(&[("host", &host), ("accept", "text/event-stream")]);
        assert_refused(&app, request, StatusCode::UNAUTHORIZED, "unauthorized").await;
    }

    #[tokio::test]
    async fn dropping_the_legacy_stream_closes_the_session_and_cancels_its_calls() {
        let hub = misbehave_hub().await;
        let app = app(hub.clone(), options());
        let (mut stream, uri) = initialize_legacy(&app).await;
        let session = legacy_session(&uri).to_owned();
        let request = call(1, "mis__slow", json!({"ms": 600_000}), Some(9));
        legacy_send(&app, &uri, &request).await;
        let progress = stream.next().await.expect("progress: the call runs");
        assert_eq!(progress["method"], "notifications/progress");

        drop(stream);
        assert!(hub.session(&session).is_none(), "the hub closed it");
        let response = send(&app, legacy_post(&uri, &ping(2))).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);

        let (mut stream, uri) = initialize_legacy(&app).await;
        let deadline = Instant::now() + EVENT_LIMIT;
        for id in 10.. {
            let request = call(id, "mis__cancelled_ids", json!({}), None);
            let answer = legacy_exchange(&app, &mut stream, &uri, &request).await;
            let text = answer["result"]["content"][0]["text"]
                .as_str()
                .expect("text");
            let ids: Vec<Value> = serde_json::from_str(text).expect("ids");
            if ids.len() == 1 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the call of the closed session was never cancelled"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn legacy_sessions_are_bounded_apart_from_streamable_ones() {
        let hub = hub(Vec::new());
        let limits = SessionLimits {
            max_sessions: 1,
            ..SessionLimits::default()
        };
        let app = app_with_limits(hub.clone(), options(), limits);
        let streamable = initialize(&app).await;
        let (mut first, first_uri) = open_legacy(&app).await;
        let (mut second, second_uri) = open_legacy(&app).await;

        assert_eq!(
            first.next().await,
            None,
            "the evicted session's stream ended"
        );
        assert!(hub.session(legacy_session(&first_uri)).is_none());
        let response = send(&app, legacy_post(&first_uri, &ping(1))).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);

        let answer = legacy_exchange(&app, &mut second, &second_uri, &ping(2)).await;
        assert_eq!(answer["id"], 2);
        let response = send(&app, post(Some(&streamable), "application/json", &ping(3))).await;
        assert_eq!(
            response.status(),
            StatusCode::OK,
            "the Streamable session stayed"
        );
    }

    // --- A real socket -----------------------------------------------------------------------

    /// Serves a fresh endpoint on an ephemeral loopback port.
    async fn serve_on_loopback(
        hub: Hub,
    ) -> (
        SocketAddr,
        CancellationToken,
        tokio::task::JoinHandle<io::Result<()>>,
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("bound");
        let router = app(
            hub,
            HttpOptions {
                port: address.port(),
                ..options()
            },
        );
        let shutdown = CancellationToken::new();
        let server = tokio::spawn(serve(listener, router, shutdown.clone()));
        (address, shutdown, server)
    }

    fn raw_post(host: &str, headers: &str, body: &str) -> String {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n{headers}\
             Connection: close\r\n\r\n{body}",
            body.len()
        )
    }

    async fn raw_exchange(address: SocketAddr, request: &str) -> String {
        let mut socket = tokio::net::TcpStream::connect(address)
            .await
            .expect("connect");
        socket.write_all(request.as_bytes()).await.expect("write");
        let mut response = Vec::new();
        tokio::time::timeout(EVENT_LIMIT, socket.read_to_end(&mut response))
            .await
            .expect("answered in time")
            .expect("read");
        String::from_utf8(response).expect("UTF-8")
    }

    async fn stopped(shutdown: CancellationToken, server: tokio::task::JoinHandle<io::Result<()>>) {
        shutdown.cancel();
        tokio::time::timeout(EVENT_LIMIT, server)
            .await
            .expect("the server stops in time")
            .expect("the server task did not panic")
            .expect("the server ran without error");
    }

    #[tokio::test]
    async fn an_rmcp_client_lists_and_calls_tools_over_a_real_socket() {
        use rmcp::ServiceExt as _;
        use rmcp::model::CallToolRequestParams;
        use rmcp::transport::StreamableHttpClientTransport;

        let hub = misbehave_hub().await;
        let (address, shutdown, server) = serve_on_loopback(hub.clone()).await;
        let transport =
            StreamableHttpClientTransport::from_uri(format!("http://{address}{MCP_PATH}"));
        let client = tokio::time::timeout(EVENT_LIMIT, ().serve(transport))
            .await
            .expect("initialized in time")
            .expect("initialized");
        assert_eq!(hub.session_count(), 1);

        let tools = client.list_all_tools().await.expect("tools listed");
        assert!(
            tools.iter().any(|tool| tool.name == "mis__echo"),
            "{tools:?}"
        );
        let arguments = json!({"text": "over HTTP"})
            .as_object()
            .expect("an object")
            .clone();
        let result = client
            .call_tool(CallToolRequestParams::new("mis__echo").with_arguments(arguments))
            .await
            .expect("called");
        let text = result.content[0].as_text().expect("text").text.clone();
        assert_eq!(text, "over HTTP");

        client.cancel().await.expect("closed");
        assert_eq!(hub.session_count(), 0, "the client deleted its session");
        stopped(shutdown, server).await;
    }

    /// Reads from `socket` into `seen` until `pattern` shows up.
    async fn read_until(socket: &mut tokio::net::TcpStream, seen: &mut String, pattern: &str) {
        while !seen.contains(pattern) {
            let mut chunk = [0u8; 4096];
            let n = tokio::time::timeout(EVENT_LIMIT, socket.read(&mut chunk))
                .await
                .unwrap_or_else(|_| panic!("{pattern:?} in time; got {seen:?}"))
                .expect("read");
            assert!(n > 0, "the server closed before {pattern:?}; got {seen:?}");
            seen.push_str(std::str::from_utf8(&chunk[..n]).expect("UTF-8"));
        }
    }

    #[tokio::test]
    async fn a_legacy_client_is_served_over_a_real_socket() {
        let hub = hub(Vec::new());
        let (address, shutdown, server) = serve_on_loopback(hub.clone()).await;
        let host = address.to_string();
        let mut sse = tokio::net::TcpStream::connect(address)
            .await
            .expect("connect");
        let request =
            format!("GET /sse HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n");
        sse.write_all(request.as_bytes()).await.expect("write");
        let mut seen = String::new();
        read_until(&mut sse, &mut seen, "event: endpoint\ndata: ").await;
        assert!(seen.starts_with("HTTP/1.1 200 "), "{seen}");
        let start = seen.find("data: ").expect("data") + "data: ".len();
        read_until(&mut sse, &mut seen, "\n\n").await;
        let uri = seen[start..].lines().next().expect("a line").to_owned();
        assert!(uri.starts_with("/messages?sessionId="), "{uri}");

        let body = INITIALIZE_2024;
        let post = format!(
            "POST {uri} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let response = raw_exchange(address, &post).await;
        assert!(response.starts_with("HTTP/1.1 202 "), "{response}");
        read_until(&mut sse, &mut seen, r#""protocolVersion":"2024-11-05""#).await;
        assert!(seen.contains("event: message\ndata: {"), "{seen}");
        assert_eq!(hub.session_count(), 1);

        stopped(shutdown, server).await;
        let mut rest = Vec::new();
        tokio::time::timeout(EVENT_LIMIT, sse.read_to_end(&mut rest))
            .await
            .expect("the stream ends on shutdown")
            .expect("read");
        assert_eq!(
            hub.session_count(),
            0,
            "the ended stream closed its session"
        );
    }

    #[tokio::test]
    async fn a_foreign_host_is_refused_over_a_real_socket() {
        let (address, shutdown, server) = serve_on_loopback(hub(Vec::new())).await;
        let host = format!("localhost.evil.com:{}", address.port());
        let response = raw_exchange(address, &raw_post(&host, "", INITIALIZE)).await;
        assert!(response.starts_with("HTTP/1.1 403 "), "{response}");
        assert!(
            response.contains(r#""code":"forbidden_host""#),
            "{response}"
        );
        assert!(
            !response.to_ascii_lowercase().contains("mcp-session-id"),
            "{response}"
        );
        stopped(shutdown, server).await;
    }

    #[tokio::test]
    async fn shutdown_ends_open_get_streams_over_a_real_socket() {
        let (address, shutdown, server) = serve_on_loopback(hub(Vec::new())).await;
        let host = address.to_string();
        let response = raw_exchange(address, &raw_post(&host, "", INITIALIZE)).await;
        assert!(response.starts_with("HTTP/1.1 200 "), "{response}");
        let session = response
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| value.trim().to_owned())
            })
            .expect("a session id");

        let mut socket = tokio::net::TcpStream::connect(address)
            .await
            .expect("connect");
        let request = format!(
            "GET /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\r\n"
        );
        socket.write_all(request.as_bytes()).await.expect("write");
        let mut head = Vec::new();
        while !head.windows(4).any(|window| window == b"\r\n\r\n") {
            let mut chunk = [0u8; 1024];
            let n = tokio::time::timeout(EVENT_LIMIT, socket.read(&mut chunk))
                .await
                .expect("headers in time")
                .expect("read");
            assert!(n > 0, "the server closed before answering");
            head.extend_from_slice(&chunk[..n]);
        }
        let head = String::from_utf8_lossy(&head);
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
        assert!(head.contains("text/event-stream"), "{head}");

        stopped(shutdown, server).await;
        let mut rest = Vec::new();
        tokio::time::timeout(EVENT_LIMIT, socket.read_to_end(&mut rest))
            .await
            .expect("the stream ends on shutdown")
            .expect("read");
    }
}
