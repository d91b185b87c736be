//! One JSON-RPC connection to a backend over its pipes.
//!
//! Senders write the backend's stdin themselves (`stdin.rs`), and a reader task owns its stdout.
//! Requests get ids from
//! our own space, wait in a pending map with a deadline, and tell the backend when they are
//! abandoned. Closing the connection wakes every waiter at once with an error that says why. Once
//! told the `_meta` envelope of a stateless-era backend, it puts that envelope into every request.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::output::{OutputStream, RunOutput};
use crate::status::ExitDescription;
use stdin::Stdin;
use wire::era;
use wire::framing::{Frame, LineReader};
use wire::jsonrpc::{self, Envelope, ErrorObject, Kind};
use wire::meta;
use wire::method::Method;

/// How many incoming notifications and requests may wait for the consumer before the reader
/// stops reading (and so the backend blocks on its stdout).
const INCOMING_CAPACITY: usize = 1024;

/// Why a connection stopped carrying requests.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CloseReason {
    #[error("exited ({0})")]
    Exited(ExitDescription),
    #[error("closed its stdout")]
    StdoutClosed,
    #[error("is stopping")]
    Stopping,
}

/// Why a request failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RpcError {
    #[error("{}", remote_error_message(backend, method, error))]
    Remote {
        backend: Arc<str>,
        method: String,
        error: ErrorObject,
    },
    #[error("backend {backend} {reason} before answering {method}")]
    Closed {
        backend: Arc<str>,
        method: String,
        reason: CloseReason,
    },
    #[error("backend {backend} did not answer {method} within {} ms", timeout.as_millis())]
    Timeout {
        backend: Arc<str>,
        method: String,
        timeout: Duration,
    },
    #[error(
        "backend {backend} answered {method} with {len} bytes, over the limit of {limit} bytes"
    )]
    TooLarge {
        backend: Arc<str>,
        method: String,
        len: usize,
        limit: usize,
    },
}

/// How a backend's error answer reads: Switchboard's own "unavailable" answer (from the link to a
/// remote server) says what went wrong, without pretending the server said it.
fn remote_error_message(backend: &str, method: &str, error: &ErrorObject) -> String {
    match error.code {
        jsonrpc::BACKEND_UNAVAILABLE => {
            format!("{backend} could not be asked {method}: {}", error.message)
        }
        code => format!(
            "backend {backend} answered {method} with error {code}: {}",
            error.message
        ),
    }
}

impl RpcError {
    /// The JSON-RPC error object an editor should receive for this failure.
    pub(crate) fn to_error_object(&self) -> ErrorObject {
        match self {
            RpcError::Remote { error, .. } => error.clone(),
            RpcError::Closed { .. } => {
                ErrorObject::new(jsonrpc::BACKEND_UNAVAILABLE, self.to_string())
            }
            RpcError::Timeout { .. } => {
                ErrorObject::new(jsonrpc::REQUEST_TIMEOUT, self.to_string())
            }
            RpcError::TooLarge { .. } => {
                ErrorObject::new(jsonrpc::MESSAGE_TOO_LARGE, self.to_string())
            }
        }
    }
}

/// A message the backend sent that is not an answer to us.
#[derive(Debug)]
pub(crate) enum Incoming {
    Notification {
        method: Method,
        params: Option<Box<RawValue>>,
    },
    Request {
        id: Box<RawValue>,
        method: Method,
        params: Option<Box<RawValue>>,
    },
}

/// The `_meta` entries (key and JSON value) every request to a stateless-era backend carries,
/// unless its caller gave its own.
pub(crate) type MetaEnvelope = Vec<(&'static str, Box<RawValue>)>;

/// What the connection is told about the client of one request: what a stateless-era backend hears
/// of it, in place of what the connection's envelope says by default (a session-era backend
/// hears none of it), and which of the client's calls the request is part of.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClientMeta<'a> {
    /// What the client can be asked during this request (`io.modelcontextprotocol/clientCapabilities`).
    pub capabilities: Option<&'a RawValue>,
    /// The lowest level of log messages wanted with this request (`io.modelcontextprotocol/logLevel`).
    pub log_level: Option<&'a RawValue>,
    /// The caller's number for the call the request is part of, which a request the backend
    /// sends while answering it is known by, when its transport tells ([`Connection::call_of`]).
    pub call: Option<u64>,
}

/// Settings of one connection.
#[derive(Clone)]
pub(crate) struct ConnectionOptions {
    /// Largest message accepted from the backend, in bytes.
    pub(crate) max_message_size: usize,
    /// Where lines on stdout that are not JSON-RPC are recorded.
    pub(crate) log: RunOutput,
}

/// The parts of a started connection that its owner keeps.
pub(crate) struct Started {
    pub(crate) connection: Connection,
    /// Notifications and requests from the backend, in the order it sent them.
    pub(crate) incoming: mpsc::Receiver<Incoming>,
    /// Cancelled when the backend's stdout reaches end of file.
    pub(crate) stdout_closed: CancellationToken,
}

/// A cheap, cloneable handle for sending requests to one backend.
#[derive(Clone)]
pub struct Connection {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Arc<str>,
    next_id: AtomicU64,
    pending: Mutex<Pending>,
    /// Progress token (its JSON text) → where that request's progress notifications go.
    progress: Mutex<HashMap<String, mpsc::UnboundedSender<Box<RawValue>>>>,
    stdin: Stdin,
    max_message_size: usize,
    /// Set while the backend is spoken to in the stateless era.
    envelope: Mutex<Option<Arc<MetaEnvelope>>>,
}

enum Pending {
    Open(HashMap<u64, Waiter>),
    Closed(CloseReason),
}

struct Waiter {
    method: Method,
    reply: oneshot::Sender<Result<Box<RawValue>, RpcError>>,
    /// The caller's number for the call the request is part of ([`ClientMeta::call`]).
    call: Option<u64>,
}

impl Connection {
    /// Starts the reader and writer tasks over a backend's stdout and stdin.
    pub(crate) fn start<W, R>(
        backend: &str,
        stdin: W,
        stdout: R,
        options: ConnectionOptions,
    ) -> Started
    where
        W: AsyncWrite + Send + 'static,
        R: AsyncRead + Send + Unpin + 'static,
    {
        let (incoming_tx, incoming) = mpsc::channel(INCOMING_CAPACITY);
        let inner = Arc::new(Inner {
            backend: Arc::from(backend),
            next_id: AtomicU64::new(1),
            pending: Mutex::new(Pending::Open(HashMap::new())),
            progress: Mutex::new(HashMap::new()),
            stdin: Stdin::new(stdin),
            max_message_size: options.max_message_size,
            envelope: Mutex::new(None),
        });
        let inner_for_reader = inner.clone();
        let stdout_closed = CancellationToken::new();
        let closed_on_exit = stdout_closed.clone().drop_guard();
        tokio::spawn(async move {
            let _closed_on_exit = closed_on_exit;
            read_loop(inner_for_reader, stdout, incoming_tx, options).await;
        });
        Started {
            connection: Connection { inner },
            incoming,
            stdout_closed,
        }
    }

    /// Sends a request and waits for its answer, at most `timeout`.
    ///
    /// If the answer does not come in time, or the returned future is dropped first, the
    /// backend receives `notifications/cancelled` for it.
    pub(crate) async fn request(
        &self,
        method: &Method,
        params: Option<&RawValue>,
        timeout: Duration,
    ) -> Result<Box<RawValue>, RpcError> {
        self.request_for_client(method, params, timeout, None, ClientMeta::default())
            .await
    }

    /// Like [`Connection::request`], and the backend's progress notifications for this request
    /// go to `progress` — in the order the backend sent them, and all of them before the
    /// answer is returned; a stateless-era backend is told what `client` says about the client of
    /// this request.
    pub(crate) async fn request_for_client(
        &self,
        method: &Method,
        params: Option<&RawValue>,
        timeout: Duration,
        progress: Option<ProgressSink>,
        client: ClientMeta<'_>,
    ) -> Result<Box<RawValue>, RpcError> {
        self.exchange(method, params, Some(timeout), progress, client)
            .await
    }

    /// Sends a request that has no deadline: it ends when the backend answers it, when the
    /// connection closes, or when the returned future is dropped (then the backend is told).
    /// Only for requests that are meant to stay open, as `subscriptions/listen` is.
    pub(crate) async fn request_until_closed(
        &self,
        method: &Method,
        params: Option<&RawValue>,
    ) -> Result<Box<RawValue>, RpcError> {
        self.exchange(method, params, None, None, ClientMeta::default())
            .await
    }

    /// From now on, every request carries `envelope` in its `_meta` (`None`: no envelope, as
    /// for a session-era backend).
    pub(crate) fn set_envelope(&self, envelope: Option<Arc<MetaEnvelope>>) {
        *self
            .inner
            .envelope
            .lock()
            .expect("envelope lock is never poisoned") = envelope;
    }

    async fn exchange(
        &self,
        method: &Method,
        params: Option<&RawValue>,
        timeout: Option<Duration>,
        progress: Option<ProgressSink>,
        client: ClientMeta<'_>,
    ) -> Result<Box<RawValue>, RpcError> {
        let enveloped = self.inner.enveloped(params, client);
        let params = enveloped.as_deref().or(params);
        let _progress = progress.map(|sink| ProgressGuard::register(&self.inner, sink));
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        {
            let mut pending = self
                .inner
                .pending
                .lock()
                .expect("pending map lock is never poisoned");
            match &mut *pending {
                Pending::Closed(reason) => {
                    return Err(self.inner.closed_error(method.as_str(), reason.clone()));
                }
                Pending::Open(waiters) => {
                    waiters.insert(
                        id,
                        Waiter {
                            method: method.clone(),
                            reply,
                            call: client.call,
                        },
                    );
                }
            }
        }
        let mut guard = AbandonGuard {
            inner: &self.inner,
            id,
            reason: "request abandoned by the caller",
        };
        let line = jsonrpc::request_line(&id.to_string(), method, params);
        let exchange = async {
            if self.inner.stdin.send(line).await.is_err() {
                return Err(self
                    .inner
                    .closed_error(method.as_str(), CloseReason::Stopping));
            }
            answer.await.unwrap_or_else(|_| {
                Err(self
                    .inner
                    .closed_error(method.as_str(), CloseReason::Stopping))
            })
        };
        let Some(timeout) = timeout else {
            return exchange.await;
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => {
                guard.reason = "timeout";
                Err(RpcError::Timeout {
                    backend: self.inner.backend.clone(),
                    method: method.to_string(),
                    timeout,
                })
            }
        }
    }

    /// Sends a notification.
    pub(crate) async fn notify(
        &self,
        method: &Method,
        params: Option<&RawValue>,
    ) -> Result<(), RpcError> {
        self.send_line(method.as_str(), jsonrpc::notification_line(method, params))
            .await
    }

    /// Answers a request the backend sent us.
    pub async fn respond(
        &self,
        id: &RawValue,
        result: Result<&RawValue, &ErrorObject>,
    ) -> Result<(), RpcError> {
        let line = match result {
            Ok(result) => jsonrpc::result_line(id, result),
            Err(error) => jsonrpc::error_line(Some(id), error),
        };
        self.send_line("response", line).await
    }

    /// Stops accepting requests, wakes every waiter with `reason`, and closes the backend's stdin.
    pub(crate) fn close(&self, reason: CloseReason) {
        let waiters = {
            let mut pending = self
                .inner
                .pending
                .lock()
                .expect("pending map lock is never poisoned");
            match std::mem::replace(&mut *pending, Pending::Closed(reason.clone())) {
                Pending::Open(waiters) => waiters,
                Pending::Closed(earlier) => {
                    *pending = Pending::Closed(earlier);
                    HashMap::new()
                }
            }
        };
        for waiter in waiters.into_values() {
            let error = self
                .inner
                .closed_error(waiter.method.as_str(), reason.clone());
            let _ = waiter.reply.send(Err(error));
        }
        self.inner.stdin.close();
    }

    /// The caller's number for the call that our request `id`, still unanswered, is part of
    /// ([`ClientMeta::call`]).
    pub(crate) fn call_of(&self, id: u64) -> Option<u64> {
        match &*self
            .inner
            .pending
            .lock()
            .expect("pending map lock is never poisoned")
        {
            Pending::Open(waiters) => waiters.get(&id)?.call,
            Pending::Closed(_) => None,
        }
    }

    /// How many requests are waiting for an answer.
    pub(crate) fn pending_count(&self) -> usize {
        match &*self
            .inner
            .pending
            .lock()
            .expect("pending map lock is never poisoned")
        {
            Pending::Open(waiters) => waiters.len(),
            Pending::Closed(_) => 0,
        }
    }

    async fn send_line(&self, what: &str, line: Vec<u8>) -> Result<(), RpcError> {
        if let Pending::Closed(reason) = &*self
            .inner
            .pending
            .lock()
            .expect("pending map lock is never poisoned")
        {
            return Err(self.inner.closed_error(what, reason.clone()));
        }
        self.inner
            .stdin
            .send(line)
            .await
            .map_err(|_| self.inner.closed_error(what, CloseReason::Stopping))
    }
}

impl Inner {
    /// `params` with the envelope in its `_meta`, while there is one; `None` when `params` is to
    /// be sent as it is (no envelope, or params a backend will refuse anyway).
    fn enveloped(
        &self,
        params: Option<&RawValue>,
        client: ClientMeta<'_>,
    ) -> Option<Box<RawValue>> {
        let envelope = self
            .envelope
            .lock()
            .expect("envelope lock is never poisoned")
            .clone()?;
        let from_client = [
            (meta::CLIENT_CAPABILITIES, client.capabilities),
            (meta::LOG_LEVEL, client.log_level),
        ];
        let entries: Vec<(&str, &RawValue)> = from_client
            .into_iter()
            .filter_map(|(key, value)| Some((key, value?)))
            .chain(envelope.iter().map(|(key, value)| (*key, &**value)))
            .collect();
        era::add_meta_entries(params, &entries)
    }

    /// The error of a request or message (`what`) the connection could not carry.
    fn closed_error(&self, what: &str, reason: CloseReason) -> RpcError {
        RpcError::Closed {
            backend: self.backend.clone(),
            method: what.to_owned(),
            reason,
        }
    }

    fn take_waiter(&self, id: u64) -> Option<Waiter> {
        match &mut *self
            .pending
            .lock()
            .expect("pending map lock is never poisoned")
        {
            Pending::Open(waiters) => waiters.remove(&id),
            Pending::Closed(_) => None,
        }
    }

    fn deliver(&self, id: &RawValue, result: Result<&RawValue, &RawValue>) {
        let Some(waiter) = id
            .get()
            .parse::<u64>()
            .ok()
            .and_then(|id| self.take_waiter(id))
        else {
            tracing::debug!(backend = %self.backend, id = id.get(), "answer to no waiting request");
            return;
        };
        let outcome = match result {
            Ok(result) => Ok(result.to_owned()),
            Err(error) => {
                let error = serde_json::from_str::<ErrorObject>(error.get()).unwrap_or_else(|_| {
                    ErrorObject::new(
                        jsonrpc::INTERNAL_ERROR,
                        format!("malformed error object: {}", error.get()),
                    )
                });
                Err(RpcError::Remote {
                    backend: self.backend.clone(),
                    method: waiter.method.to_string(),
                    error,
                })
            }
        };
        let _ = waiter.reply.send(outcome);
    }

    fn deliver_too_large(&self, id: u64, len: usize) -> bool {
        let Some(waiter) = self.take_waiter(id) else {
            return false;
        };
        let error = RpcError::TooLarge {
            backend: self.backend.clone(),
            method: waiter.method.to_string(),
            len,
            limit: self.max_message_size,
        };
        let _ = waiter.reply.send(Err(error));
        true
    }
}

/// Where the progress notifications of one request go, and the token that marks them.
pub struct ProgressSink {
    /// The progress token as JSON text (`"abc"` with its quotes, or `7`).
    pub token: String,
    pub sender: mpsc::UnboundedSender<Box<RawValue>>,
}

/// Keeps a progress sink registered for as long as its request runs.
struct ProgressGuard<'a> {
    inner: &'a Inner,
    token: String,
}

impl<'a> ProgressGuard<'a> {
    fn register(inner: &'a Inner, sink: ProgressSink) -> ProgressGuard<'a> {
        let mut routes = inner
            .progress
            .lock()
            .expect("progress lock is never poisoned");
        routes.insert(sink.token.clone(), sink.sender);
        ProgressGuard {
            inner,
            token: sink.token,
        }
    }
}

impl Drop for ProgressGuard<'_> {
    fn drop(&mut self) {
        let mut routes = self
            .inner
            .progress
            .lock()
            .expect("progress lock is never poisoned");
        routes.remove(&self.token);
    }
}

/// Removes an unanswered request from the pending map and tells the backend it was cancelled.
struct AbandonGuard<'a> {
    inner: &'a Inner,
    id: u64,
    reason: &'static str,
}

impl Drop for AbandonGuard<'_> {
    fn drop(&mut self) {
        if self.inner.take_waiter(self.id).is_none() {
            return;
        }
        let params = serde_json::json!({ "requestId": self.id, "reason": self.reason });
        let params = RawValue::from_string(params.to_string()).expect("json! output is valid JSON");
        let line = jsonrpc::notification_line(&Method::Cancelled, Some(&params));
        self.inner.stdin.send_detached(line);
    }
}

async fn read_loop<R: AsyncRead + Unpin>(
    inner: Arc<Inner>,
    stdout: R,
    incoming: mpsc::Sender<Incoming>,
    options: ConnectionOptions,
) {
    // The default buffer (8 KiB): it lives as long as the backend, and a larger one saves only
    // a few reads of the rare long message.
    let mut lines = LineReader::new(BufReader::new(stdout), options.max_message_size);
    loop {
        match lines.next_frame().await {
            Ok(Some(Frame::Line(line))) => {
                handle_line(&inner, &line, &incoming, &options.log).await
            }
            Ok(Some(Frame::Oversized { len, head, tail })) => {
                let id = jsonrpc::sniff_numeric_id(&head)
                    .or_else(|| jsonrpc::sniff_trailing_numeric_id(&tail));
                let delivered = id.is_some_and(|id| inner.deliver_too_large(id, len));
                options.log.push(
                    OutputStream::StdoutNoise,
                    &format!(
                        "dropped a {len}-byte message over the {}-byte limit{}",
                        inner.max_message_size,
                        if delivered {
                            "; its request failed"
                        } else {
                            ""
                        }
                    ),
                );
            }
            Ok(None) => break,
            Err(error) => {
                tracing::debug!(backend = %inner.backend, %error, "reading stdout failed");
                break;
            }
        }
    }
}

async fn handle_line(
    inner: &Inner,
    line: &[u8],
    incoming: &mpsc::Sender<Incoming>,
    log: &RunOutput,
) {
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let Ok(envelope) = Envelope::parse(line) else {
        log.push(OutputStream::StdoutNoise, &String::from_utf8_lossy(line));
        return;
    };
    match (envelope.kind(), envelope.method) {
        (Kind::Response, _) => {
            let id = envelope.id.expect("a response has an id");
            match (envelope.result, envelope.error) {
                (Some(result), _) => inner.deliver(id, Ok(result)),
                (None, Some(error)) => inner.deliver(id, Err(error)),
                (None, None) => unreachable!("a response has a result or an error"),
            }
        }
        (Kind::Request, Some(Method::Ping)) => {
            let id = envelope.id.expect("a request has an id");
            let empty = RawValue::from_string("{}".into()).expect("{} is valid JSON");
            inner.stdin.send_detached(jsonrpc::result_line(id, &empty));
        }
        (Kind::Request, method) => {
            let message = Incoming::Request {
                id: envelope.id.expect("a request has an id").to_owned(),
                method: method.expect("a request has a method"),
                params: envelope.params.map(ToOwned::to_owned),
            };
            let _ = incoming.send(message).await;
        }
        (Kind::Notification, method) => {
            let method = method.expect("a notification has a method");
            // Progress for a request that asked for it goes straight to its caller, from this
            // task, so that it cannot fall behind the answer.
            if method == Method::Progress
                && let Some(params) = envelope.params
                && let Some(token) = meta::progress_token(params)
            {
                let routes = inner
                    .progress
                    .lock()
                    .expect("progress lock is never poisoned");
                if let Some(sink) = routes.get(token.get()) {
                    let _ = sink.send(params.to_owned());
                    return;
                }
            }
            let message = Incoming::Notification {
                method,
                params: envelope.params.map(ToOwned::to_owned),
            };
            let _ = incoming.send(message).await;
        }
        (Kind::Invalid, _) => log.push(OutputStream::StdoutNoise, &String::from_utf8_lossy(line)),
    }
}

mod stdin;
#[cfg(test)]
mod tests;
