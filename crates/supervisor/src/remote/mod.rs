//! A backend reached over HTTP. Its connection ([`crate::rpc::Connection`]) speaks
//! newline-delimited JSON-RPC to the link's two ends, [`LinkSink`] and [`LinkSource`], exactly as
//! it does to a process's stdin and stdout; each line written to the sink is carried over HTTP,
//! and what comes back is read from the source. So requests, deadlines, cancellation, the
//! handshake and health checks are the same code for local and remote servers.
//!
//! Transports: Streamable HTTP (one POST per message; the answer is JSON or an SSE stream; a GET
//! stream for what the server sends on its own; `Mcp-Session-Id`), with the `Mcp-*` headers of
//! 2026-07-28 for messages that carry its envelope; and the HTTP+SSE transport of 2024-11-05 (a
//! GET stream that names an endpoint for POSTs), used when configured, or when a server answers
//! the first POST the way only such servers do (404 or 405).
//!
//! One `reqwest` client per backend holds its connection pool: every editor's calls to that
//! server share it. An upstream 401 never reaches an editor: the link asks sign-in for a fresh
//! token and tries once more, and otherwise ends as [`LinkEnd::NeedsSignIn`]; so does a 403 for
//! want of a scope that a new sign-in can ask for. A DPoP-bound token goes with a fresh proof
//! on every request, carrying the server's nonce once it has given one.

mod authorized;
mod ends;
mod http_sse;
mod resume;
mod sse;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::{OnceCell, mpsc, watch};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::output::RunOutput;
use crate::status::OutputStream;
use auth::{Auth, Credential};
use config::{RemoteServer, RemoteTransport};
pub(crate) use ends::{LinkSink, LinkSource};
use sse::SseParser;
use wire::era::header;
use wire::http_error;
use wire::jsonrpc::{self, Envelope, ErrorObject, Kind};
use wire::meta;
use wire::method::{Method as McpMethod, Subject};
use wire::mirrored::{HeaderParam, argument_text, header_params, header_safe};

/// How many messages from the server may wait for the connection to read them.
const INCOMING_CAPACITY: usize = 1024;
/// How long a closing link waits for the server to end its session (DELETE).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);
/// Between two attempts to reopen the GET stream.
const STREAM_RETRY: Duration = Duration::from_secs(1);
const STREAM_RETRY_CAP: Duration = Duration::from_secs(30);
/// How many times in a row a request's stream is taken up again without bringing a new event.
const RESUME_TRIES: u32 = 3;
/// The most of a non-JSON-RPC answer quoted in an error.
const QUOTED_BYTES: usize = 200;

/// Why a link ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LinkEnd {
    /// The server cannot be reached, or ended the session; a restart may help.
    Lost(String),
    /// The server wants a sign-in that no token Switchboard holds satisfies; only a person
    /// can help.
    NeedsSignIn(String),
}

impl LinkEnd {
    pub(crate) fn reason(&self) -> &str {
        match self {
            LinkEnd::Lost(reason) | LinkEnd::NeedsSignIn(reason) => reason,
        }
    }
}

/// Why a link could not be opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    /// The server's address (`shown_url`, as the config shows it) does not parse.
    #[error("{shown_url} is not a URL: {error}")]
    NotUrl {
        shown_url: String,
        #[source]
        error: url::ParseError,
    },
    #[error("cannot make an HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

/// What a link needs besides the server's settings.
pub(crate) struct LinkOptions {
    /// Longest message taken from the server (and sent to it), in bytes.
    pub(crate) max_message_size: usize,
    /// Where the link notes what went wrong, beside a local server's stderr.
    pub(crate) output: RunOutput,
    /// Tokens for servers that ask for sign-in.
    pub(crate) auth: Option<Arc<Auth>>,
}

/// An open link to a remote server. Dropping it stops its tasks; [`RemoteLink::close`] also
/// ends the server's session.
pub(crate) struct RemoteLink {
    shared: Arc<Shared>,
    end: watch::Receiver<Option<LinkEnd>>,
}

struct Shared {
    backend: Arc<str>,
    server: RemoteServer,
    url: reqwest::Url,
    client: reqwest::Client,
    auth: Option<Arc<Auth>>,
    max_message_size: usize,
    output: RunOutput,
    /// Messages for the connection, one per line.
    incoming: mpsc::Sender<Vec<u8>>,
    end: watch::Sender<Option<LinkEnd>>,
    stop: CancellationToken,
    /// `Mcp-Session-Id` of a Streamable HTTP session, once the server gave one.
    session: Mutex<Option<String>>,
    /// The protocol version `initialize` settled on, sent as `MCP-Protocol-Version`.
    negotiated_version: Mutex<Option<String>>,
    /// The transport the link speaks: the config's until the server's answers settle it.
    transport: Mutex<RemoteTransport>,
    /// Where to POST over the HTTP+SSE transport, once its event stream has named it.
    http_sse_endpoint: OnceCell<reqwest::Url>,
    /// The arguments each tool (by the server's own name) mirrors into `Mcp-Param-*` headers,
    /// as its `tools/list` said.
    mirrored: Mutex<HashMap<String, Vec<HeaderParam>>>,
    /// The DPoP nonce the server last gave, for the next proof.
    dpop_nonce: Mutex<Option<String>>,
    /// Requests the server sent on the stream answering one of ours, until the connection has
    /// read them: their id (JSON text) → the id of ours.
    asked_during: Mutex<HashMap<String, u64>>,
    /// Our requests on their way, by id (JSON text): cancelled when the connection gives one up.
    carried: Mutex<HashMap<String, CancellationToken>>,
}

impl RemoteLink {
    /// Opens a link to `server` for `backend`; returns it and the connection's end of the pipe.
    pub(crate) fn open(
        backend: &str,
        server: &RemoteServer,
        options: LinkOptions,
    ) -> Result<(RemoteLink, LinkSink, LinkSource), OpenError> {
        let url = reqwest::Url::parse(&server.url).map_err(|error| OpenError::NotUrl {
            shown_url: server.shown_url(),
            error,
        })?;
        let client = reqwest::Client::builder()
            .connect_timeout(server.timeout)
            // A redirect would carry the token to wherever it points: none is followed.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(OpenError::Client)?;
        let (incoming_tx, incoming_rx) = mpsc::channel(INCOMING_CAPACITY);
        let (end_tx, end_rx) = watch::channel(None);
        let shared = Arc::new(Shared {
            backend: Arc::from(backend),
            server: server.clone(),
            url,
            client,
            auth: options.auth,
            max_message_size: options.max_message_size,
            output: options.output,
            incoming: incoming_tx,
            end: end_tx,
            stop: CancellationToken::new(),
            session: Mutex::new(None),
            negotiated_version: Mutex::new(None),
            transport: Mutex::new(server.transport),
            http_sse_endpoint: OnceCell::new(),
            mirrored: Mutex::new(HashMap::new()),
            dpop_nonce: Mutex::new(None),
            asked_during: Mutex::new(HashMap::new()),
            carried: Mutex::new(HashMap::new()),
        });
        let sink = LinkSink::new(shared.clone());
        let source = LinkSource::new(&shared, incoming_rx);
        Ok((
            RemoteLink {
                shared,
                end: end_rx,
            },
            sink,
            source,
        ))
    }

    /// Completes when the link has ended, and says why.
    pub(crate) async fn ended(&mut self) -> LinkEnd {
        loop {
            if let Some(end) = self.end.borrow_and_update().clone() {
                return end;
            }
            if self.end.changed().await.is_err() {
                return LinkEnd::Lost("the link stopped".to_owned());
            }
        }
    }

    /// Which of our requests the server was answering when it sent the request `id`, if it
    /// sent it on that request's stream; forgotten once told.
    pub(crate) fn asked_during(&self, id: &RawValue) -> Option<u64> {
        let mut asked = self.shared.asked_during.lock().expect("asked-during lock");
        asked.remove(id.get())
    }

    /// The transport the link speaks: the config's until the server's answers settle it.
    pub(crate) fn transport(&self) -> RemoteTransport {
        self.shared.transport()
    }

    /// Why the link ended, if it has.
    pub(crate) fn end(&self) -> Option<LinkEnd> {
        self.end.borrow().clone()
    }

    /// Stops the link, first ending the server's session if it has one (bounded in time); what
    /// the history says of its end.
    pub(crate) async fn close(self) -> LinkEnd {
        let shared = &self.shared;
        let session = shared.session.lock().expect("session lock").clone();
        if let Some(session) = session {
            let credential = match &shared.auth {
                Some(auth) => auth
                    .token(&shared.backend, &shared.server)
                    .await
                    .ok()
                    .flatten(),
                None => None,
            };
            let request = shared
                .request(Method::DELETE, shared.url.clone(), credential.as_ref())
                .header(header::SESSION_ID, session);
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, request.send()).await;
        }
        let stopped = LinkEnd::Lost("closed by Switchboard".to_owned());
        shared.finish(stopped.clone());
        stopped
    }
}

impl Drop for RemoteLink {
    fn drop(&mut self) {
        self.shared.stop.cancel();
    }
}

/// What the link reads of one outgoing message.
struct Outgoing {
    /// The id of a request (its JSON text), which gets an answer whatever happens.
    id: Option<Box<RawValue>>,
    method: Option<McpMethod>,
    /// For a message carrying the 2026-07-28 envelope: its version and the `Mcp-Name` value.
    stateless: Option<(String, Option<String>)>,
    /// A tool call's arguments, for the headers that mirror them.
    arguments: Option<Box<RawValue>>,
    /// For `notifications/cancelled`, the id of the request of ours it gives up (JSON text).
    cancels: Option<String>,
}

impl Outgoing {
    fn of(line: &[u8]) -> Outgoing {
        #[derive(Deserialize)]
        struct Params {
            name: Option<String>,
            uri: Option<String>,
            #[serde(rename = "taskId")]
            task_id: Option<String>,
            #[serde(rename = "_meta")]
            meta: Option<serde_json::Map<String, serde_json::Value>>,
            arguments: Option<Box<RawValue>>,
            #[serde(rename = "requestId")]
            request_id: Option<Box<RawValue>>,
        }
        let Ok(envelope) = Envelope::parse(line) else {
            return Outgoing::nothing();
        };
        let is_request = envelope.method.is_some();
        let id = match is_request {
            true => envelope.id.map(|id| id.to_owned()),
            false => None,
        };
        let params: Option<Params> = envelope
            .params
            .and_then(|params| serde_json::from_str(params.get()).ok());
        let method = envelope.method;
        let cancelling = method == Some(McpMethod::Cancelled);
        let (stateless, arguments, cancels) = match params {
            Some(params) => {
                let version = params
                    .meta
                    .as_ref()
                    .and_then(|meta| meta.get(meta::PROTOCOL_VERSION)?.as_str())
                    .map(str::to_owned);
                let name = match method.as_ref().and_then(McpMethod::subject) {
                    Some(Subject::Name) => params.name,
                    Some(Subject::Uri) => params.uri,
                    Some(Subject::TaskId) => params.task_id,
                    None => None,
                };
                let cancels = params
                    .request_id
                    .filter(|_| cancelling)
                    .map(|id| id.get().to_owned());
                (
                    version.map(|version| (version, name)),
                    params.arguments,
                    cancels,
                )
            }
            None => (None, None, None),
        };
        Outgoing {
            id,
            method,
            stateless,
            arguments,
            cancels,
        }
    }

    /// What the server sends on its own: no request of ours.
    fn nothing() -> Outgoing {
        Outgoing {
            id: None,
            method: None,
            stateless: None,
            arguments: None,
            cancels: None,
        }
    }
}

/// A request of ours on its way: while it is, the connection may give it up
/// (`notifications/cancelled`), which ends its POST. For a 2026-07-28 server that is how a
/// request is cancelled (it hears no notification), and a listen stream given up closes.
struct Carried<'a> {
    shared: &'a Shared,
    id: String,
    given_up: CancellationToken,
}

impl<'a> Carried<'a> {
    fn new(shared: &'a Shared, id: &RawValue) -> Carried<'a> {
        let given_up = CancellationToken::new();
        let id = id.get().to_owned();
        let mut carried = shared.carried.lock().expect("carried lock");
        carried.insert(id.clone(), given_up.clone());
        Carried {
            shared,
            id,
            given_up,
        }
    }
}

impl Drop for Carried<'_> {
    fn drop(&mut self) {
        let mut carried = self.shared.carried.lock().expect("carried lock");
        carried.remove(&self.id);
    }
}

/// Why a message could not be delivered; a request then gets this as its error.
enum Failure {
    /// Reported to the caller as it is.
    Error(String),
    /// The server wants a sign-in Switchboard cannot give.
    NeedsSignIn(String),
}

impl Shared {
    /// Carries one message to the server and what it answers back; a request that cannot be
    /// carried gets an error answer naming the server and why.
    async fn forward(self: Arc<Self>, line: Vec<u8>) {
        let outgoing = Outgoing::of(&line);
        if let Some(given_up) = &outgoing.cancels
            && let Some(carried) = self.carried.lock().expect("carried lock").get(given_up)
        {
            carried.cancel();
        }
        let carried = outgoing.id.as_ref().map(|id| Carried::new(&self, id));
        let given_up = async {
            match &carried {
                Some(carried) => carried.given_up.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            _ = self.stop.cancelled() => return,
            _ = given_up => return,
            outcome = self.send(&line, &outgoing) => outcome,
        };
        let (message, sign_in) = match outcome {
            Ok(()) => return,
            Err(Failure::Error(message)) => (message, false),
            Err(Failure::NeedsSignIn(message)) => (message, true),
        };
        self.note(&message);
        if let Some(id) = &outgoing.id {
            let error = ErrorObject::new(jsonrpc::BACKEND_UNAVAILABLE, message.clone());
            self.deliver(jsonrpc::error_line(Some(id), &error)).await;
        }
        if sign_in {
            self.finish(LinkEnd::NeedsSignIn(message));
        }
    }

    /// The transport the link speaks: the config's until the server's answers settle it.
    fn transport(&self) -> RemoteTransport {
        *self.transport.lock().expect("transport lock")
    }

    async fn send(self: &Arc<Self>, line: &[u8], outgoing: &Outgoing) -> Result<(), Failure> {
        if self.transport() == RemoteTransport::HttpSse {
            return self.send_http_sse(line).await;
        }
        let response = self
            .authorized(|credential| self.post_streamable(line, outgoing, credential))
            .await?;
        let status = response.status();
        let first = outgoing.method == Some(McpMethod::Initialize);
        if first
            && self.server.transport == RemoteTransport::Auto
            && matches!(
                status,
                StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED
            )
        {
            // Only servers of the older HTTP+SSE transport refuse a POST of `initialize` so.
            *self.transport.lock().expect("transport lock") = RemoteTransport::HttpSse;
            self.note(&format!(
                "{} answered HTTP {} to a POST: trying the HTTP+SSE transport of 2024-11-05",
                self.server.shown_url(),
                status.as_u16()
            ));
            return self.send_http_sse(line).await;
        }
        if status.is_success() {
            let mut transport = self.transport.lock().expect("transport lock");
            if *transport == RemoteTransport::Auto {
                *transport = RemoteTransport::StreamableHttp;
            }
        }
        let had_session = self.session.lock().expect("session lock").is_some();
        if status == StatusCode::NOT_FOUND && had_session {
            let reason = format!("{} ended the session (HTTP 404)", self.server.shown_url());
            self.finish(LinkEnd::Lost(reason.clone()));
            return Err(Failure::Error(reason));
        }
        if first && let Some(session) = header_text(response.headers(), header::SESSION_ID) {
            *self.session.lock().expect("session lock") = Some(session);
        }
        let answered = self.read_answer(response, outgoing).await?;
        if outgoing.id.is_some() && !answered {
            return Err(Failure::Error(format!(
                "{} ended its answer to {} without answering",
                self.server.shown_url(),
                outgoing
                    .method
                    .as_ref()
                    .map_or("the request", McpMethod::as_str)
            )));
        }
        if outgoing.method == Some(McpMethod::Initialized) {
            let span = tracing::Span::current();
            tokio::spawn(self.clone().keep_stream_open().instrument(span));
        }
        Ok(())
    }

    async fn post_streamable(
        &self,
        line: &[u8],
        outgoing: &Outgoing,
        credential: Option<Credential>,
    ) -> Result<reqwest::Response, Failure> {
        let mut request = self
            .request(Method::POST, self.url.clone(), credential.as_ref())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(line.to_vec());
        if let Some(session) = self.session.lock().expect("session lock").clone() {
            request = request.header(header::SESSION_ID, session);
        }
        match &outgoing.stateless {
            Some((version, name)) => {
                request = request.header(header::PROTOCOL_VERSION, version.as_str());
                if let Some(method) = &outgoing.method {
                    request = request.header(header::METHOD, method.as_str());
                }
                if let Some(name) = name {
                    request = request.header(header::NAME, header_value(name));
                    for (header, value) in self.mirrored_arguments(name, outgoing) {
                        request =
                            request.header(format!("{}{header}", header::PARAM_PREFIX), value);
                    }
                }
            }
            None => {
                let version = self
                    .negotiated_version
                    .lock()
                    .expect("version lock")
                    .clone();
                if let Some(version) = version {
                    request = request.header(header::PROTOCOL_VERSION, version);
                }
            }
        }
        self.send_request(request).await
    }

    /// The `Mcp-Param-*` headers of a call of tool `name`: each argument the tool mirrors.
    fn mirrored_arguments(&self, name: &str, outgoing: &Outgoing) -> Vec<(String, HeaderValue)> {
        if outgoing.method != Some(McpMethod::ToolsCall) {
            return Vec::new();
        }
        let params = match self.mirrored.lock().expect("mirrored lock").get(name) {
            Some(params) if !params.is_empty() => params.clone(),
            _ => return Vec::new(),
        };
        let Some(arguments) = outgoing
            .arguments
            .as_ref()
            .and_then(|arguments| serde_json::from_str::<serde_json::Value>(arguments.get()).ok())
        else {
            return Vec::new();
        };
        params
            .iter()
            .filter_map(|param| {
                let value = param
                    .path
                    .iter()
                    .try_fold(&arguments, |value, key| value.get(key))?;
                Some((param.header.clone(), header_value(&argument_text(value)?)))
            })
            .collect()
    }

    /// Sends `request`, bounded by the server's `timeout` until the answer's headers.
    async fn send_request(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, Failure> {
        match tokio::time::timeout(self.server.timeout, request.send()).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(error)) => Err(Failure::Error(format!(
                "cannot reach {}: {}",
                self.server.shown_url(),
                http_error::describe(&error)
            ))),
            Err(_) => Err(Failure::Error(format!(
                "{} did not answer within {} ms",
                self.server.shown_url(),
                self.server.timeout.as_millis()
            ))),
        }
    }

    /// Puts on the pipe what a Streamable HTTP answer carries (JSON, or an SSE stream);
    /// whether it held the answer to `outgoing`'s request.
    async fn read_answer(
        &self,
        mut response: reqwest::Response,
        outgoing: &Outgoing,
    ) -> Result<bool, Failure> {
        let status = response.status();
        let content_type = header_text(response.headers(), CONTENT_TYPE.as_str())
            .unwrap_or_default()
            .to_ascii_lowercase();
        if content_type.starts_with("text/event-stream") {
            let mut parser = SseParser::new(self.max_message_size);
            let answered = self
                .read_events(&mut response, &mut parser, outgoing)
                .await?;
            if answered || outgoing.id.is_none() {
                return Ok(answered);
            }
            return self.resume_answer(parser, outgoing).await;
        }
        let body = self.read_body(response).await?;
        if content_type.starts_with("application/json")
            && !body.is_empty()
            && let Some(answered) = self.deliver_json(&body, outgoing).await
        {
            return Ok(answered);
        }
        if status.is_success() && body.is_empty() {
            return Ok(false);
        }
        Err(Failure::Error(format!(
            "{} answered HTTP {} ({}) instead of JSON-RPC: {}",
            self.server.shown_url(),
            status.as_u16(),
            if content_type.is_empty() {
                "no content type"
            } else {
                content_type.as_str()
            },
            quoted(&body)
        )))
    }

    /// Delivers a JSON body: one message or a batch; `None` if it is not JSON-RPC.
    async fn deliver_json(&self, body: &[u8], outgoing: &Outgoing) -> Option<bool> {
        if body.trim_ascii_start().starts_with(b"[") {
            let batch: Vec<&RawValue> = serde_json::from_slice(body).ok()?;
            let mut answered = false;
            for message in batch {
                answered |= self
                    .deliver_message(message.get().as_bytes(), outgoing)
                    .await;
            }
            return Some(answered);
        }
        Envelope::parse(body).ok()?;
        Some(self.deliver_message(body, outgoing).await)
    }

    /// Delivers one message from the server; whether it answers `outgoing`'s request. The
    /// answer to `initialize` also gives the protocol version later requests must name.
    async fn deliver_message(&self, message: &[u8], outgoing: &Outgoing) -> bool {
        let envelope = Envelope::parse(message).ok();
        let answers = match (&envelope, &outgoing.id) {
            (Some(envelope), Some(id)) => {
                envelope.method.is_none() && envelope.id.is_some_and(|sent| sent.get() == id.get())
            }
            _ => false,
        };
        let ours = outgoing.id.as_ref().and_then(|id| id.get().parse().ok());
        if let (Some(envelope), Some(ours)) = (&envelope, ours)
            && envelope.kind() == Kind::Request
            && let Some(id) = envelope.id
        {
            let mut asked = self.asked_during.lock().expect("asked-during lock");
            asked.insert(id.get().to_owned(), ours);
        }
        if answers && outgoing.method == Some(McpMethod::ToolsList) {
            self.remember_mirrored(message);
        }
        if answers && outgoing.method == Some(McpMethod::Initialize) {
            #[derive(Deserialize)]
            struct Answer {
                result: Option<Initialized>,
            }
            #[derive(Deserialize)]
            struct Initialized {
                #[serde(rename = "protocolVersion")]
                protocol_version: String,
            }
            if let Ok(Answer {
                result: Some(result),
            }) = serde_json::from_slice(message)
            {
                *self.negotiated_version.lock().expect("version lock") =
                    Some(result.protocol_version);
            }
        }
        self.deliver(one_line(message)).await;
        answers
    }

    /// Remembers which arguments each tool of a `tools/list` answer mirrors into headers.
    fn remember_mirrored(&self, answer: &[u8]) {
        #[derive(Deserialize)]
        struct Answer<'a> {
            #[serde(borrow)]
            result: Option<Listed<'a>>,
        }
        #[derive(Deserialize)]
        struct Listed<'a> {
            #[serde(borrow)]
            tools: Vec<&'a RawValue>,
        }
        #[derive(Deserialize)]
        struct Named {
            name: String,
        }
        let Ok(Answer {
            result: Some(listed),
        }) = serde_json::from_slice(answer)
        else {
            return;
        };
        let mut mirrored = self.mirrored.lock().expect("mirrored lock");
        for tool in listed.tools {
            if let Ok(Named { name }) = serde_json::from_str(tool.get()) {
                mirrored.insert(name, header_params(tool.get()));
            }
        }
    }

    async fn deliver(&self, line: Vec<u8>) {
        let _ = self.incoming.send(line).await;
    }

    /// Keeps the Streamable HTTP GET stream open, for what the server sends on its own; a
    /// server that offers none (405) is left alone.
    async fn keep_stream_open(self: Arc<Self>) {
        let mut delay = STREAM_RETRY;
        let mut last_event: Option<String> = None;
        let nothing = Outgoing::nothing();
        loop {
            let session = self.session.lock().expect("session lock").clone();
            let opened = self.open_get(last_event.as_deref()).await;
            let mut response = match opened {
                Ok(response) => response,
                Err(Failure::NeedsSignIn(message)) => {
                    self.finish(LinkEnd::NeedsSignIn(message));
                    return;
                }
                Err(Failure::Error(message)) => {
                    self.note(&message);
                    if self.wait(delay).await {
                        return;
                    }
                    delay = (delay * 2).min(STREAM_RETRY_CAP);
                    continue;
                }
            };
            match response.status() {
                StatusCode::OK => {}
                StatusCode::METHOD_NOT_ALLOWED => return,
                StatusCode::NOT_FOUND if session.is_some() => {
                    self.finish(LinkEnd::Lost(format!(
                        "{} ended the session (HTTP 404)",
                        self.server.shown_url()
                    )));
                    return;
                }
                status => {
                    self.note(&format!(
                        "{} answered HTTP {} to the GET stream",
                        self.server.shown_url(),
                        status.as_u16()
                    ));
                    if self.wait(delay).await {
                        return;
                    }
                    delay = (delay * 2).min(STREAM_RETRY_CAP);
                    continue;
                }
            }
            delay = STREAM_RETRY;
            let mut parser = SseParser::new(self.max_message_size);
            loop {
                let chunk = match self.next_chunk(&mut response).await {
                    Ok(Some(chunk)) => chunk,
                    Ok(None) | Err(_) => break,
                };
                let Ok(events) = parser.feed(&chunk) else {
                    self.note("the GET stream sent a message over the size limit; reopened");
                    break;
                };
                if let Some(id) = parser.last_event_id() {
                    last_event = Some(id.to_owned());
                }
                for event in events.iter().filter(|event| !event.data.is_empty()) {
                    self.deliver_message(event.data.as_bytes(), &nothing).await;
                }
            }
            if self.wait(delay).await {
                return;
            }
        }
    }

    /// The next chunk of an answer's body; `None` at its end.
    async fn next_chunk(
        &self,
        response: &mut reqwest::Response,
    ) -> Result<Option<hyper::body::Bytes>, Failure> {
        response.chunk().await.map_err(|error| {
            Failure::Error(format!(
                "the answer of {} broke off: {}",
                self.server.shown_url(),
                http_error::describe(&error)
            ))
        })
    }

    /// A whole answer body, at most the message size limit.
    async fn read_body(&self, mut response: reqwest::Response) -> Result<Vec<u8>, Failure> {
        let mut body = Vec::new();
        while let Some(chunk) = self.next_chunk(&mut response).await? {
            if body.len() + chunk.len() > self.max_message_size {
                return Err(Failure::Error(format!(
                    "{} sent an answer over the limit of {} bytes",
                    self.server.shown_url(),
                    self.max_message_size
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// Waits `delay`; whether the link stopped meanwhile.
    async fn wait(&self, delay: Duration) -> bool {
        tokio::select! {
            _ = self.stop.cancelled() => true,
            _ = tokio::time::sleep(delay) => false,
        }
    }

    /// Records the end of the link (the first reason wins) and stops its tasks.
    fn finish(&self, end: LinkEnd) {
        self.end.send_if_modified(|current| {
            if current.is_some() {
                return false;
            }
            *current = Some(end);
            true
        });
        self.stop.cancel();
    }

    /// Notes what went wrong where the dashboard shows a server's output.
    fn note(&self, text: &str) {
        tracing::debug!(target: "switchboard::remote", "{text}");
        self.output.push(OutputStream::Http, text);
    }
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// `text` as a header value, in base64 when it is not plain visible ASCII (2026-07-28).
fn header_value(text: &str) -> HeaderValue {
    HeaderValue::from_str(&header_safe(text)).expect("visible ASCII is a valid header value")
}

/// A message on one line: a raw line end inside JSON can only be whitespace between tokens.
fn one_line(message: &[u8]) -> Vec<u8> {
    message
        .iter()
        .map(|&byte| match byte {
            b'\n' | b'\r' => b' ',
            byte => byte,
        })
        .collect()
}

/// The start of a body that was not JSON-RPC, as text on one line.
fn quoted(body: &[u8]) -> String {
    let head = &body[..body.len().min(QUOTED_BYTES)];
    let text: String = String::from_utf8_lossy(head)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match body.len() > QUOTED_BYTES {
        true => format!("{:?}…", text.trim()),
        false => format!("{:?}", text.trim()),
    }
}
