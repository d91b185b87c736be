//! The HTTP transports of the MCP endpoint: Streamable HTTP (`POST`, `GET` and `DELETE` on
//! `/mcp`) and, for clients that only speak protocol version 2024-11-05, the older HTTP+SSE
//! transport (`GET /sse` and `POST /messages`).
//!
//! [`app`] builds the whole HTTP surface as a `Router` that tests drive without a socket;
//! [`serve`] runs it on a listener until a shutdown token fires. Every request, on every route,
//! first passes the [`Guard`] (Host, Origin or Sec-Fetch-Site, token), which the control API
//! reuses.
//!
//! Both eras of the protocol share `/mcp`: a `POST` whose `MCP-Protocol-Version` is 2026-07-28,
//! or that has no version header and no session but carries the 2026-07-28 envelope, is answered
//! on its own (`stateless.rs`); everything else takes the session path below. Under 2026-07-28,
//! `GET` and `DELETE` get `405`; an unknown version gets `400` with -32022 and the versions
//! spoken.
//!
//! Choices where the Streamable HTTP specification leaves room:
//!
//! - `initialize` is always answered as `application/json`, even when the client accepts
//!   `text/event-stream`. The session is kept only when the answer is a result; after an error
//!   response it is closed and no `Mcp-Session-Id` is sent.
//! - Other requests are answered as an SSE stream when `Accept` prefers `text/event-stream` to
//!   `application/json` (a higher `q`, or listed first), or lists it and the stream may carry
//!   something besides the response: the request asked for progress, or the client can be asked
//!   things (sampling, elicitation, roots) and has no `GET` stream open. Otherwise the answer is
//!   plain JSON, which costs less. In the JSON case, messages that belong
//!   to the request but come before its response go to the session's open `GET` stream; when none
//!   is open they are dropped with a debug log.
//! - A batch (2025-03-26) is accepted whatever the negotiated version, needs a session (so it
//!   cannot carry `initialize`), and is always answered as one JSON array in the order of its
//!   elements; a batch without requests or errors gets `202 Accepted`.
//! - `GET` without `Accept: text/event-stream` gets `406 Not Acceptable`; `405` is reserved for
//!   methods this endpoint does not serve at all. A second `GET` stream for a session gets
//!   `409 Conflict`; when a stream ends, the session's event queue waits for the next one.
//! - A session's streams are resumable (`events.rs`): numbered events, a priming event on a
//!   `POST` stream, a reply stream whose client left kept a few seconds for a `GET` with
//!   `Last-Event-ID`.
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
//!   calls. HTTP+SSE sessions are bounded like Streamable ones (at most `max_sessions` of each
//!   kind; a new one closes, and so ends the stream of, the least recently used) but never
//!   expire while their stream is open. Streams do not carry event ids and cannot be resumed.
//! - `POST /messages?sessionId=<id>` takes one JSON-RPC message and answers `202 Accepted`
//!   before anything is done with it; the answer comes on the stream. An absent `sessionId` gets
//!   `400`, one naming no open stream `404`, a `Content-Type` other than `application/json`
//!   `415` and a body over the limit `413`, each with a JSON-RPC error body like `/mcp`. A body
//!   that is not a message object (invalid JSON, another shape, a batch, which 2024-11-05 does
//!   not have) still gets `202`, and its JSON-RPC error (`id` null) goes on the stream.
//!   `MCP-Protocol-Version` is not looked at: the old transport has no such header.

mod body;
mod events;
mod http_sse;
mod messages;
mod sessions;
mod stateless;
mod streamable;

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::HeaderName;
use axum::middleware;
use axum::routing::{get, post};
use axum::{Extension, Router};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use self::body::DeadlineBody;
use self::http_sse::{get_http_sse, post_http_sse_message};
use self::sessions::{SessionLimits, Sessions};
use self::streamable::{delete_mcp, delete_profile, get_mcp, get_profile, post_mcp, post_profile};
use crate::guard::{EndpointToken, Guard};
use hub::Hub;
use wire::era::header;

/// The path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";
/// Where the profile `NAME` is served: `/mcp/NAME`.
const MCP_PROFILE_PATH: &str = "/mcp/{profile}";

/// The path where a client of the HTTP+SSE transport (2024-11-05) opens its event stream.
pub(crate) const HTTP_SSE_PATH: &str = "/sse";

/// The path where a client of the HTTP+SSE transport posts its messages, with `?sessionId=<id>`.
pub(crate) const HTTP_SSE_MESSAGES_PATH: &str = "/messages";

/// The header that carries the session id after `initialize`.
pub(crate) const MCP_SESSION_ID: HeaderName = HeaderName::from_static(header::SESSION_ID);

/// The header in which a client names the protocol version it speaks.
pub(crate) const MCP_PROTOCOL_VERSION: HeaderName =
    HeaderName::from_static(header::PROTOCOL_VERSION);

/// How many sessions are kept before the least recently used is closed.
pub const DEFAULT_MAX_SESSIONS: usize = 1000;

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

/// What the HTTP endpoint needs to know.
#[derive(Clone)]
pub struct HttpOptions {
    /// The port actually bound; the only one `Host` and `Origin` may name.
    pub port: u16,
    /// When set, every request needs `Authorization: Bearer <token>`; a reload may change it.
    pub token: EndpointToken,
    /// The largest request body taken, in bytes.
    pub max_body_size: usize,
    /// Origins allowed besides the endpoint's own loopback origins (e.g. `tauri://localhost`).
    pub extra_origins: Vec<String>,
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("port", &self.port)
            .field("token", &self.token)
            .field("max_body_size", &self.max_body_size)
            .field("extra_origins", &self.extra_origins)
            .finish()
    }
}

/// The HTTP surface: `/mcp`, `/sse` and `/messages` behind the guard.
pub fn app(hub: Hub, options: HttpOptions) -> Router {
    app_with_limits(hub, options, SessionLimits::default())
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
                "HTTP connections still answering {} s after shutdown; leaving them",
                SHUTDOWN_GRACE.as_secs()
            );
        }
    }
    Ok(())
}

fn app_with_limits(hub: Hub, options: HttpOptions, limits: SessionLimits) -> Router {
    let guard = Arc::new(Guard::new(
        options.port,
        options.token,
        options.extra_origins,
    ));
    let state = Arc::new(HttpState {
        sessions: Sessions::new(hub.clone(), limits),
        http_sse_sessions: Sessions::new(hub, limits),
        max_body_size: options.max_body_size,
    });
    let routes = Router::new()
        .route(MCP_PATH, get(get_mcp).post(post_mcp).delete(delete_mcp))
        .route(
            MCP_PROFILE_PATH,
            get(get_profile).post(post_profile).delete(delete_profile),
        )
        .route(HTTP_SSE_PATH, get(get_http_sse))
        .route(HTTP_SSE_MESSAGES_PATH, post(post_http_sse_message))
        .with_state(state);
    guard.protect(routes)
}

/// The state of the handlers.
struct HttpState {
    /// Sessions of the Streamable HTTP transport (`/mcp`).
    sessions: Sessions,
    /// Sessions of the HTTP+SSE transport, each one alive while its `GET /sse` stream is open.
    http_sse_sessions: Sessions,
    max_body_size: usize,
}

/// Put into every request by [`serve`]: cancelled when the server shuts down.
#[derive(Clone)]
struct Shutdown(CancellationToken);

#[cfg(test)]
mod tests;
