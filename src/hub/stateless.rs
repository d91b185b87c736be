//! The 2026-07-28 path: requests that carry their protocol version and the editor's
//! capabilities in `params._meta`, each answered on its own.
//!
//! Each such request gets a session of its own for as long as it runs, so routing, progress,
//! cancellation and the refusal of ambiguous backend requests work as for a session's calls.
//! What differs is at the edges:
//! - the envelope is checked (and, over HTTP, the headers that mirror it, see [`headers`]);
//! - results are stamped with `resultType`, Switchboard's `serverInfo` and, for discover, lists
//!   and reads, caching hints;
//! - log messages reach a request only if it asked for them (`logLevel`);
//! - a backend of the session era that asks the editor something during a call (elicitation,
//!   sampling, roots) cannot send it a request: the call is parked, the editor gets
//!   `input_required` with the question and a sealed `requestState` (see [`request_state`]),
//!   and its retry answers the backend and resumes the same call (multi-round-trip requests);
//! - `subscriptions/listen` is a session told of list changes and resource updates, which it
//!   passes on with its `subscriptionId`, and of the tasks it names;
//! - a session-era server's tasks are shown in the Tasks extension's shapes (see
//!   [`bridge`]).
//!
//! [`headers`]: super::headers
//! [`request_state`]: super::request_state

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

use super::capabilities::ClientCapabilities;
use super::headers::{self, RequestHeaders};
use super::request_state::{self, Binding};
use super::rewrite::{ObjectEntries, json_string};
use super::session::{
    Needs, Session, capabilities, instructions, invalid_params, list_result, ready_with, rejected,
    server_info, single_page, valid_id, when_settled,
};
use super::tasks::{bridge, ids};
use super::{HubInner, Inbound, RequestReply, SessionEvents, notification, random_id, response};
use crate::supervisor::BackendHandle;
use crate::wire::era::{
    LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSION, TASKS_EXTENSION, code, meta,
};
use crate::wire::jsonrpc::{self, Envelope, ErrorObject, Kind};

/// How long a parked call waits for the editor's retry.
const PARK_TTL: Duration = Duration::from_secs(300);
/// How many times one call may ask its editor for input.
const MAX_ROUNDS: u32 = 8;
/// How many resource URIs one listen stream may name.
const MAX_LISTEN_URIS: usize = 1000;
/// How many listen streams may be open at once, and how many calls may be parked: each holds a
/// little memory (and a parked call, a backend's request) until it ends.
const MAX_LISTENS: usize = 1000;
/// How many tasks one listen stream may name.
const MAX_LISTEN_TASKS: usize = 100;
/// Shortest and longest wait between two polls of a task a listen stream names.
const TASK_POLL_BOUNDS: (Duration, Duration) = (Duration::from_millis(250), Duration::from_secs(5));
const MAX_PARKED: usize = 1000;

/// The levels of `notifications/message`, lowest first.
const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// Whether a request carries the 2026-07-28 envelope: a protocol version in `params._meta`.
pub(super) fn carries_envelope(envelope: &Envelope<'_>) -> bool {
    let Some(params) = envelope.params else {
        return false;
    };
    if !params.get().contains(meta::PROTOCOL_VERSION) {
        return false;
    }
    ObjectEntries::parse(params.get())
        .ok()
        .and_then(|params| params.get("_meta").map(|meta| meta.get().to_owned()))
        .is_some_and(|meta| {
            ObjectEntries::parse(&meta).is_ok_and(|meta| meta.get(meta::PROTOCOL_VERSION).is_some())
        })
}

/// Whether `message` is a request that carries the 2026-07-28 envelope.
pub fn is_stateless(message: &[u8]) -> bool {
    memchr::memmem::find(message, meta::PROTOCOL_VERSION.as_bytes()).is_some()
        && Envelope::parse(message)
            .is_ok_and(|envelope| envelope.kind() == Kind::Request && carries_envelope(&envelope))
}

/// A parked call, waiting for the editor to retry its request with the answers.
pub(super) struct Parked {
    resume: oneshot::Sender<Resume>,
}

/// The retry of a parked call's request.
struct Resume {
    id: Box<RawValue>,
    reply: mpsc::UnboundedSender<Vec<u8>>,
    responses: Option<Box<RawValue>>,
}

/// What one 2026-07-28 request says about itself in `params._meta`.
#[derive(Clone)]
struct Envelope2026<'a> {
    id: &'a RawValue,
    method: String,
    params: ObjectEntries<'a>,
    capabilities: ClientCapabilities,
    log_level: Option<usize>,
    wants_progress: bool,
    /// The editor's name, as `_meta`'s `clientInfo` says.
    client: Option<Arc<str>>,
    /// The profile the request was sent to.
    profile: Arc<str>,
}

impl<'a> Envelope2026<'a> {
    fn parse(envelope: &Envelope<'a>, profile: Arc<str>) -> Result<Envelope2026<'a>, ErrorObject> {
        let id = envelope.id.expect("a request has an id");
        let method = envelope.method.as_deref().unwrap_or_default().to_owned();
        let params = envelope
            .params
            .and_then(|params| ObjectEntries::parse(params.get()).ok())
            .ok_or_else(|| invalid_params("params must be an object carrying _meta"))?;
        let meta_raw = params
            .get("_meta")
            .ok_or_else(|| invalid_params("params._meta is missing"))?;
        let meta = ObjectEntries::parse(meta_raw.get())
            .map_err(|_| invalid_params("params._meta must be an object"))?;
        let version = meta.get_str(meta::PROTOCOL_VERSION).ok_or_else(|| {
            invalid_params(format!("_meta.{} must be a string", meta::PROTOCOL_VERSION))
        })?;
        if version != MODERN_PROTOCOL_VERSION {
            return Err(unsupported_version(&version));
        }
        let capabilities = meta.get(meta::CLIENT_CAPABILITIES).ok_or_else(|| {
            invalid_params(format!("_meta.{} is missing", meta::CLIENT_CAPABILITIES))
        })?;
        if ObjectEntries::parse(capabilities.get()).is_err() {
            return Err(invalid_params(format!(
                "_meta.{} must be an object",
                meta::CLIENT_CAPABILITIES
            )));
        }
        let capabilities = ClientCapabilities::parse(capabilities);
        let log_level = match meta.get(meta::LOG_LEVEL) {
            None => None,
            Some(_) => {
                let level = meta.get_str(meta::LOG_LEVEL).unwrap_or_default();
                Some(
                    LOG_LEVELS
                        .iter()
                        .position(|known| *known == level)
                        .ok_or_else(|| {
                            invalid_params(format!(
                                "_meta.{} must be one of {}",
                                meta::LOG_LEVEL,
                                LOG_LEVELS.join(", ")
                            ))
                        })?,
                )
            }
        };
        let wants_progress = meta.get("progressToken").is_some();
        let client = super::session::client_name(meta.get(meta::CLIENT_INFO));
        Ok(Envelope2026 {
            id,
            method,
            params,
            capabilities,
            log_level,
            wants_progress,
            client,
            profile,
        })
    }

    /// The name, URI or task id the request is about (what `Mcp-Name` mirrors), for the
    /// methods that have one.
    fn target(&self) -> Option<String> {
        let key = match self.method.as_str() {
            "tools/call" | "prompts/get" => "name",
            "resources/read" => "uri",
            "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
            _ => return None,
        };
        Some(self.params.get_str(key).unwrap_or_default().into_owned())
    }

    /// The params a backend receives: without the 2026-07-28 keys of `_meta` (a dual-era
    /// server refuses them on a session; a 2026-07-28 backend is told the editor's
    /// capabilities and log level by the connection).
    fn forwarded_params(&self) -> Box<RawValue> {
        let mut params = self.params.clone();
        if let Some(meta) = params.get("_meta").map(|meta| meta.get().to_owned()) {
            match ObjectEntries::parse(&meta) {
                Ok(mut meta) => {
                    for key in [
                        meta::PROTOCOL_VERSION,
                        meta::CLIENT_CAPABILITIES,
                        meta::CLIENT_INFO,
                        meta::LOG_LEVEL,
                    ] {
                        meta.remove(key);
                    }
                    if meta.is_empty() {
                        params.remove("_meta");
                    } else {
                        params.set("_meta", meta.into_raw());
                    }
                }
                Err(_) => {
                    params.remove("_meta");
                }
            }
        }
        params.into_raw()
    }
}

/// Takes one message that carries the 2026-07-28 envelope; `headers` are those of its HTTP
/// request, if it came over HTTP. Dropping the reply's receiver ends the request.
pub(super) fn receive(
    hub: &Arc<HubInner>,
    message: &[u8],
    headers: Option<&RequestHeaders>,
    profile: Arc<str>,
) -> Inbound {
    let envelope = match Envelope::parse(message) {
        Ok(envelope) => envelope,
        Err(error) => {
            return rejected(
                None,
                ErrorObject::new(jsonrpc::PARSE_ERROR, format!("parse error: {error}")),
            );
        }
    };
    let id = valid_id(envelope.id);
    let outcome = match (envelope.jsonrpc.as_deref(), envelope.kind()) {
        (Some("2.0"), Kind::Request) if id.is_some() => start(hub, &envelope, headers, profile),
        (Some("2.0"), Kind::Request) => Err(ErrorObject::new(
            jsonrpc::INVALID_REQUEST,
            "a request id must be a string or a number",
        )),
        (Some("2.0"), _) => Err(ErrorObject::new(
            jsonrpc::INVALID_REQUEST,
            "only requests carry the 2026-07-28 envelope",
        )),
        _ => Err(ErrorObject::new(
            jsonrpc::INVALID_REQUEST,
            "the message must carry \"jsonrpc\": \"2.0\"",
        )),
    };
    match outcome {
        Ok(Started { messages, streamed }) => Inbound::Request(RequestReply {
            messages,
            id: id.map_or("null", RawValue::get).into(),
            initialize: false,
            streamed,
        }),
        Err(error) => rejected(id, error),
    }
}

/// A request under way: its messages, and whether they are best streamed.
struct Started {
    messages: mpsc::UnboundedReceiver<Vec<u8>>,
    streamed: bool,
}

fn start(
    hub: &Arc<HubInner>,
    envelope: &Envelope<'_>,
    headers: Option<&RequestHeaders>,
    profile: Arc<str>,
) -> Result<Started, ErrorObject> {
    let request = Envelope2026::parse(envelope, profile)?;
    if let Some(headers) = headers {
        let target = request.target();
        let mirrored = match (request.method.as_str(), &target) {
            ("tools/call", Some(name)) => hub.catalog(&request.profile).mirrored.get(name).cloned(),
            _ => None,
        };
        let arguments = match &mirrored {
            Some(_) => request
                .params
                .get("arguments")
                .and_then(|arguments| serde_json::from_str(arguments.get()).ok()),
            None => None,
        };
        headers::check(
            headers,
            MODERN_PROTOCOL_VERSION,
            &request.method,
            target.as_deref(),
            mirrored.as_deref().unwrap_or_default(),
            arguments.as_ref(),
        )?;
    }
    let (reply, messages) = mpsc::unbounded_channel();
    let streamed = request.wants_progress || request.log_level.is_some();
    let id = request.id;
    match request.method.as_str() {
        "server/discover" => {
            let profile = request.profile.clone();
            answer_when_settled(hub, id, &reply, Needs::Statuses, move |hub| {
                stamp(&discover_result(hub, &profile), true)
            });
        }
        "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => {
            single_page(envelope.params)?;
            let (method, profile) = (request.method.clone(), request.profile.clone());
            answer_when_settled(hub, id, &reply, Needs::Catalog, move |hub| {
                stamp(&list_result(hub, &profile, &method), true)
            });
        }
        "tasks/get" | "tasks/update" | "tasks/cancel" => {
            if !request.capabilities.tasks_extension {
                return Err(tasks_extension_missing(&request.method));
            }
            match session_era_task(hub, &request) {
                Some((backend, exposed, own)) => {
                    answer_task(hub, &request, backend, exposed, own, reply);
                }
                None => call(hub, &request, reply),
            }
        }
        "tools/call" | "prompts/get" | "resources/read" | "completion/complete" => {
            match request.params.get_str("requestState") {
                Some(sealed) if request_state::is_ours(&sealed) => {
                    resume(hub, &request, &sealed, reply)?
                }
                // A 2026-07-28 backend's own state goes back to it with the retry.
                _ => call(hub, &request, reply),
            }
        }
        "subscriptions/listen" => {
            listen(hub, &request, reply)?;
            return Ok(Started {
                messages,
                streamed: true,
            });
        }
        "initialize"
        | "ping"
        | "logging/setLevel"
        | "resources/subscribe"
        | "resources/unsubscribe" => {
            return Err(not_found(format!(
                "{} is not part of {MODERN_PROTOCOL_VERSION}",
                request.method
            )));
        }
        other => return Err(not_found(format!("method not found: {other}"))),
    }
    Ok(Started { messages, streamed })
}

/// Answers with `answer` once the backends it depends on have settled (see `when_settled`).
fn answer_when_settled(
    hub: &Arc<HubInner>,
    id: &RawValue,
    reply: &mpsc::UnboundedSender<Vec<u8>>,
    needs: Needs,
    answer: impl FnOnce(&HubInner) -> String + Send + 'static,
) {
    if let Some(result) = when_settled(hub, id, reply, needs, move |hub| Ok(answer(hub))) {
        let _ = reply.send(response(id, result));
    }
}

/// What `server/discover` answers: the versions and capabilities of the endpoint (the Tasks
/// extension while a backend offers it), and the merged instructions.
fn discover_result(hub: &HubInner, profile: &str) -> String {
    let mut capabilities = capabilities();
    let with_tasks = hub
        .engine
        .backends()
        .iter()
        .any(|backend| ready_with(backend, &["extensions", TASKS_EXTENSION]));
    if with_tasks {
        capabilities["extensions"] = serde_json::json!({ TASKS_EXTENSION: {} });
    }
    serde_json::json!({
        "supportedVersions": supported_versions(),
        "capabilities": capabilities,
        "instructions": instructions(hub, profile),
    })
    .to_string()
}

/// `result` with what a 2026-07-28 result carries: `resultType` (`complete` unless the backend
/// said otherwise), Switchboard's `serverInfo` in `_meta`, and with `cacheable` the caching
/// hints: fresh for no time (lists change with backends; list_changed says when), private.
fn stamp(result: &str, cacheable: bool) -> String {
    let Ok(mut entries) = ObjectEntries::parse(result) else {
        return result.to_owned();
    };
    let complete = match entries.get_str("resultType") {
        None => {
            entries.set("resultType", json_string("complete"));
            true
        }
        Some(kind) => kind == "complete",
    };
    let mut meta = entries
        .get("_meta")
        .map(|meta| meta.get().to_owned())
        .unwrap_or_else(|| "{}".to_owned());
    if let Ok(mut fields) = ObjectEntries::parse(&meta)
        && fields.get(meta::SERVER_INFO).is_none()
    {
        fields.set(
            meta::SERVER_INFO,
            serde_json::value::to_raw_value(&server_info()).expect("server info serializes"),
        );
        meta = fields.to_json();
    }
    if let Ok(meta) = RawValue::from_string(meta) {
        entries.set("_meta", meta);
    }
    if cacheable && complete {
        if entries.get("ttlMs").is_none() {
            entries.set("ttlMs", RawValue::from_string("0".into()).expect("JSON"));
        }
        if entries.get("cacheScope").is_none() {
            entries.set("cacheScope", json_string("private"));
        }
    }
    entries.to_json()
}

/// Every version the endpoint speaks, newest first.
fn supported_versions() -> Vec<&'static str> {
    let mut versions = vec![MODERN_PROTOCOL_VERSION];
    versions.extend(LEGACY_PROTOCOL_VERSIONS);
    versions
}

/// An error answered with HTTP 404: the method does not exist in this revision.
fn not_found(message: String) -> ErrorObject {
    ErrorObject::new(jsonrpc::METHOD_NOT_FOUND, message)
}

/// The error for a request in a version this endpoint does not speak.
pub fn unsupported_version(requested: &str) -> ErrorObject {
    let supported = supported_versions();
    ErrorObject {
        code: code::UNSUPPORTED_PROTOCOL_VERSION,
        message: format!(
            "unsupported protocol version {}; this endpoint speaks {}",
            crate::guard::echo(requested),
            supported.join(", ")
        ),
        data: Some(Box::new(serde_json::json!({
            "supported": supported,
            "requested": requested,
        }))),
    }
}

/// Starts a call in a session of its own and relays its messages.
fn call(hub: &Arc<HubInner>, request: &Envelope2026<'_>, reply: mpsc::UnboundedSender<Vec<u8>>) {
    let (session, events) = hub.open_session(true, request.profile.clone());
    {
        let mut state = session.lock_state();
        state.capabilities = request.capabilities;
        state.client = request.client.clone();
        state.log_level = request
            .log_level
            .map(|level| json_string(LOG_LEVELS[level]));
    }
    let (inner, messages) = mpsc::unbounded_channel();
    let params = request.forwarded_params();
    if let Some(result) = session.call(hub, request.id, &request.method, Some(&params), &inner) {
        let _ = inner.send(response(request.id, result));
    }
    let binding = request.target().and_then(|target| {
        matches!(
            request.method.as_str(),
            "tools/call" | "prompts/get" | "resources/read"
        )
        .then(|| {
            let arguments = request.params.get("arguments").map(RawValue::get);
            Binding::new(&request.method, &target, arguments)
        })
    });
    let relay = Relay {
        hub: hub.clone(),
        session,
        events,
        messages,
        capabilities: request.capabilities,
        binding,
        log_level: request.log_level,
        cacheable: request.method == "resources/read",
        rounds: 0,
    };
    tokio::spawn(relay.run(request.id.to_owned(), reply));
}

/// The -32021 error for a task request, or a listen for tasks, that does not declare the Tasks
/// extension.
fn tasks_extension_missing(what: &str) -> ErrorObject {
    ErrorObject {
        code: code::MISSING_CLIENT_CAPABILITY,
        message: format!("{what} needs the {TASKS_EXTENSION} extension, which was not declared"),
        data: Some(Box::new(serde_json::json!({
            "requiredCapabilities": { "extensions": { TASKS_EXTENSION: {} } },
        }))),
    }
}

/// For a task request about a session-era server's task: that server, the exposed task id and
/// the server's own.
fn session_era_task(
    hub: &HubInner,
    request: &Envelope2026<'_>,
) -> Option<(BackendHandle, String, String)> {
    let exposed = request.params.get_str("taskId")?.into_owned();
    let (backend, own) = ids::backend_id(&exposed)?;
    let backend = hub
        .engine
        .backend(backend)
        .filter(|backend| !backend.is_modern())?;
    let own = own.to_owned();
    Some((backend, exposed, own))
}

/// Answers a task request about a session-era server's task in the Tasks extension's shapes
/// (see [`bridge`]).
fn answer_task(
    hub: &Arc<HubInner>,
    request: &Envelope2026<'_>,
    backend: BackendHandle,
    exposed: String,
    own: String,
    reply: mpsc::UnboundedSender<Vec<u8>>,
) {
    let hub = hub.clone();
    let id = request.id.to_owned();
    let method = request.method.clone();
    let responses = request.params.get("inputResponses").map(ToOwned::to_owned);
    let capabilities = request.capabilities;
    tokio::spawn(async move {
        let answer = bridge::answer(
            &hub,
            &backend,
            &method,
            &exposed,
            &own,
            responses.as_deref(),
            capabilities,
        );
        let result = tokio::select! {
            _ = reply.closed() => return,
            result = answer => result,
        };
        let _ = reply.send(response(&id, result.map(|result| stamp(&result, false))));
    });
}

/// Takes the retry of a parked call's request: checks its `requestState` and hands the call
/// the retry's answers and reply.
fn resume(
    hub: &Arc<HubInner>,
    request: &Envelope2026<'_>,
    sealed: &str,
    reply: mpsc::UnboundedSender<Vec<u8>>,
) -> Result<(), ErrorObject> {
    let target = request
        .target()
        .ok_or_else(|| invalid_params(format!("{} takes no requestState", request.method)))?;
    let arguments = request.params.get("arguments").map(RawValue::get);
    let binding = Binding::new(&request.method, &target, arguments);
    let call = hub
        .sealer
        .open(sealed, &binding, unix_millis())
        .map_err(|refusal| invalid_params(refusal.to_string()))?;
    if call == RERUN {
        let mut again = request.clone();
        again.params.remove("requestState");
        again.params.remove("inputResponses");
        self::call(hub, &again, reply);
        return Ok(());
    }
    let ended = || {
        invalid_params(
            "requestState was already used, or its call has ended (it waited too long, or the \
             server stopped); send the request again without it",
        )
    };
    let parked = hub
        .parked
        .lock()
        .expect("parked calls lock is never poisoned")
        .remove(&call)
        .ok_or_else(ended)?;
    parked
        .resume
        .send(Resume {
            id: request.id.to_owned(),
            reply,
            responses: request.params.get("inputResponses").map(ToOwned::to_owned),
        })
        .map_err(|_| ended())
}

fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as u64)
}

/// Relays one call's messages to the editor's current request, parking the call while the
/// editor answers a question of its backend.
struct Relay {
    hub: Arc<HubInner>,
    session: Session,
    events: SessionEvents,
    messages: mpsc::UnboundedReceiver<Vec<u8>>,
    capabilities: ClientCapabilities,
    /// The request a parked call must come back with; `None` for methods that cannot ask.
    binding: Option<Binding>,
    log_level: Option<usize>,
    cacheable: bool,
    rounds: u32,
}

/// A backend's request to the editor, sent on under our id.
struct Question {
    our_id: u64,
    method: String,
    params: Option<Box<RawValue>>,
}

impl Relay {
    async fn run(mut self, mut id: Box<RawValue>, mut reply: mpsc::UnboundedSender<Vec<u8>>) {
        loop {
            // Events first: a log message the backend wrote before its answer is routed before
            // the answer arrives, and must go out before it.
            let message = tokio::select! {
                biased;
                _ = reply.closed() => break,
                Some(event) = self.events.recv() => {
                    self.relay_event(&event, &reply);
                    continue;
                }
                message = self.messages.recv() => match message {
                    Some(message) => message,
                    None => break,
                },
            };
            let Ok(envelope) = Envelope::parse(&message) else {
                continue;
            };
            match envelope.kind() {
                Kind::Response => {
                    let _ = reply.send(self.final_response(&envelope, &id));
                    break;
                }
                Kind::Request => {
                    let question = Question {
                        our_id: envelope
                            .id
                            .and_then(|id| id.get().parse().ok())
                            .unwrap_or(0),
                        method: envelope.method.as_deref().unwrap_or_default().to_owned(),
                        params: envelope.params.map(ToOwned::to_owned),
                    };
                    match self.ask(question, &id, reply).await {
                        Some((next_id, next_reply)) => {
                            id = next_id;
                            reply = next_reply;
                        }
                        None => break,
                    }
                }
                _ => {
                    let _ = reply.send(message);
                }
            }
        }
        self.session.close();
    }

    /// The backend's response as the editor's current request's: its id, the result stamped,
    /// and codes of the session era replaced by this revision's.
    fn final_response(&self, envelope: &Envelope<'_>, id: &RawValue) -> Vec<u8> {
        let error = envelope
            .error
            .and_then(|error| serde_json::from_str::<ErrorObject>(error.get()).ok());
        if let Some(error) = &error
            && error.code == URL_ELICITATION_REQUIRED
            && let Some(asked) = self.url_elicitation(error, id)
        {
            return asked;
        }
        let mut line = match (envelope.result, envelope.error) {
            (Some(result), _) => {
                let stamped = stamp(result.get(), self.cacheable);
                let stamped = RawValue::from_string(stamped).expect("stamped results are JSON");
                jsonrpc::result_line(id, &stamped)
            }
            (None, Some(error)) => {
                let mut error =
                    serde_json::from_str::<ErrorObject>(error.get()).unwrap_or_else(|_| {
                        ErrorObject::new(
                            jsonrpc::INTERNAL_ERROR,
                            "the server sent a malformed error",
                        )
                    });
                error.code = match error.code {
                    jsonrpc::RESOURCE_NOT_FOUND => jsonrpc::INVALID_PARAMS,
                    URL_ELICITATION_REQUIRED => jsonrpc::INTERNAL_ERROR,
                    other => other,
                };
                jsonrpc::error_line(Some(id), &error)
            }
            (None, None) => jsonrpc::error_line(
                Some(id),
                &ErrorObject::new(jsonrpc::INTERNAL_ERROR, "the server sent an empty response"),
            ),
        };
        line.pop();
        line
    }

    /// A session-era server's "URL elicitation required" (-32042) as this revision puts it:
    /// `input_required` with the URL elicitations, and a sealed state whose retry runs the call
    /// again (nothing is parked: the server ended the call). `None` when the error carries no
    /// elicitations or the request cannot take input.
    fn url_elicitation(&self, error: &ErrorObject, id: &RawValue) -> Option<Vec<u8>> {
        let binding = self.binding.as_ref()?;
        let elicitations = error.data.as_ref()?.get("elicitations")?.as_array()?;
        if !self.capabilities.elicitation_url {
            return Some(missing_capability(
                id,
                "URL-mode elicitation",
                "elicitation/create",
            ));
        }
        let requests: serde_json::Map<String, serde_json::Value> = elicitations
            .iter()
            .enumerate()
            .map(|(index, elicitation)| {
                let request = serde_json::json!({
                    "method": "elicitation/create",
                    "params": elicitation,
                });
                (format!("switchboard-url-{index}"), request)
            })
            .collect();
        let expires = unix_millis() + PARK_TTL.as_millis() as u64;
        let result = serde_json::json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": self.hub.sealer.seal(RERUN, binding, expires),
            "_meta": { meta::SERVER_INFO: server_info() },
        });
        Some(response(id, Ok(result.to_string())))
    }

    /// Log messages the request asked for, at or above its level; nothing else of the
    /// session's events concerns a single request.
    fn relay_event(&self, event: &[u8], reply: &mpsc::UnboundedSender<Vec<u8>>) {
        let Some(minimum) = self.log_level else {
            return;
        };
        let Ok(envelope) = Envelope::parse(event) else {
            return;
        };
        if envelope.method.as_deref() != Some("notifications/message") {
            return;
        }
        let level = envelope
            .params
            .and_then(|params| ObjectEntries::parse(params.get()).ok())
            .and_then(|params| params.get_str("level").map(|level| level.into_owned()))
            .and_then(|level| LOG_LEVELS.iter().position(|known| *known == level));
        if level.is_some_and(|level| level >= minimum) {
            let _ = reply.send(event.to_vec());
        }
    }

    /// Puts a backend's question to the editor as `input_required`, parks the call until the
    /// editor retries, and answers the backend with what the retry brings. Returns the retry's
    /// id and reply, or `None` once the call is over.
    async fn ask(
        &mut self,
        question: Question,
        id: &RawValue,
        reply: mpsc::UnboundedSender<Vec<u8>>,
    ) -> Option<(Box<RawValue>, mpsc::UnboundedSender<Vec<u8>>)> {
        let Some(binding) = self.binding.clone() else {
            self.refuse(
                &question,
                "the editor's request cannot carry questions (only tools/call, prompts/get and \
                 resources/read can)",
            );
            return Some((id.to_owned(), reply));
        };
        if let Some(missing) = self
            .capabilities
            .lacks(&question.method, question.params.as_deref())
        {
            self.refuse(&question, "the editor did not declare the capability");
            // Roots are context a server asks for on its own schedule (server-everything does
            // after it starts), not input the call needs: the server hears no, the call goes on.
            if question.method == "roots/list" {
                return Some((id.to_owned(), reply));
            }
            let _ = reply.send(missing_capability(id, missing, &question.method));
            return None;
        }
        let key = format!("switchboard-{}", question.our_id);
        let input_request = serde_json::json!({
            "method": question.method,
            "params": question.params.as_deref(),
        });
        let (mut id, mut reply) = (id.to_owned(), reply);
        loop {
            if self.rounds >= MAX_ROUNDS {
                self.refuse(&question, "the call asked the editor too many times");
                let error = ErrorObject::new(
                    jsonrpc::INTERNAL_ERROR,
                    format!("the call asked for input more than {MAX_ROUNDS} times; it was ended"),
                );
                let _ = reply.send(response(&id, Err(error)));
                return None;
            }
            self.rounds += 1;
            let call = random_id();
            let (resume, resumed) = oneshot::channel();
            {
                let mut parked = self
                    .hub
                    .parked
                    .lock()
                    .expect("parked calls lock is never poisoned");
                if parked.len() >= MAX_PARKED {
                    drop(parked);
                    self.refuse(&question, "too many calls are waiting for editors' answers");
                    let error = ErrorObject::new(
                        jsonrpc::INTERNAL_ERROR,
                        format!(
                            "{MAX_PARKED} calls are waiting for answers already; this one was ended"
                        ),
                    );
                    let _ = reply.send(response(&id, Err(error)));
                    return None;
                }
                parked.insert(call.clone(), Parked { resume });
            }
            let expires = unix_millis() + PARK_TTL.as_millis() as u64;
            let result = serde_json::json!({
                "resultType": "input_required",
                "inputRequests": { key.clone(): input_request },
                "requestState": self.hub.sealer.seal(&call, &binding, expires),
                "_meta": { meta::SERVER_INFO: server_info() },
            });
            let _ = reply.send(response(&id, Ok(result.to_string())));
            drop(reply);
            let retry = self.wait_for_retry(resumed).await;
            self.hub
                .parked
                .lock()
                .expect("parked calls lock is never poisoned")
                .remove(&call);
            let retry = retry?;
            (id, reply) = (retry.id, retry.reply);
            let answer = retry.responses.as_deref().and_then(|responses| {
                ObjectEntries::parse(responses.get())
                    .ok()?
                    .get(&key)
                    .map(ToOwned::to_owned)
            });
            if let Some(answer) = answer {
                self.answer(&question, Ok(&answer));
                return Some((id, reply));
            }
        }
    }

    /// Waits for the retry of a parked call, while the backend is still on it.
    async fn wait_for_retry(&mut self, resumed: oneshot::Receiver<Resume>) -> Option<Resume> {
        let closed = self.session.call_token();
        tokio::select! {
            retry = resumed => retry.ok(),
            _ = tokio::time::sleep(PARK_TTL) => None,
            _ = closed.cancelled() => None,
        }
    }

    /// Tells the backend its question will not be answered.
    fn refuse(&self, question: &Question, why: &str) {
        let error = ErrorObject::new(
            jsonrpc::INTERNAL_ERROR,
            format!("{} cannot be put to the editor: {why}", question.method),
        );
        self.answer(question, Err(&error));
    }

    fn answer(&self, question: &Question, outcome: Result<&RawValue, &ErrorObject>) {
        if let Some(asker) = self
            .hub
            .take_forwarded_request(self.session.id(), question.our_id)
        {
            asker.answer(outcome.map(ToOwned::to_owned).map_err(Clone::clone));
        }
    }
}

/// 2025-11-25's "URL elicitation required", which this revision does not have.
const URL_ELICITATION_REQUIRED: i64 = -32042;

/// The call a sealed state names when nothing is parked and its retry runs the call again.
const RERUN: &str = "rerun";

/// The -32021 answer to a request whose backend asked what the editor did not declare.
fn missing_capability(id: &RawValue, missing: &str, method: &str) -> Vec<u8> {
    let required = match method {
        "sampling/createMessage" => serde_json::json!({ "sampling": {} }),
        _ if missing.starts_with("URL") => serde_json::json!({ "elicitation": { "url": {} } }),
        _ => serde_json::json!({ "elicitation": { "form": {} } }),
    };
    let error = ErrorObject {
        code: code::MISSING_CLIENT_CAPABILITY,
        message: format!("the server asked for {missing}, which this request did not declare"),
        data: Some(Box::new(
            serde_json::json!({ "requiredCapabilities": required }),
        )),
    };
    response(id, Err(error))
}

/// Opens a listen stream: a session told of list changes and of updates to the resources it
/// names, which passes on those the editor opted in to.
fn listen(
    hub: &Arc<HubInner>,
    request: &Envelope2026<'_>,
    reply: mpsc::UnboundedSender<Vec<u8>>,
) -> Result<(), ErrorObject> {
    let filter = Filter::parse(request.params.get("notifications"))?;
    if !filter.task_ids.is_empty() && !request.capabilities.tasks_extension {
        return Err(tasks_extension_missing("a listen for tasks"));
    }
    if hub.listens.fetch_add(1, Ordering::Relaxed) >= MAX_LISTENS {
        hub.listens.fetch_sub(1, Ordering::Relaxed);
        return Err(ErrorObject::new(
            jsonrpc::INTERNAL_ERROR,
            format!("{MAX_LISTENS} listen streams are open already; close one first"),
        ));
    }
    let catalog = hub.catalog(&request.profile);
    let honoured: Vec<String> = filter
        .resources
        .iter()
        .filter(|uri| {
            catalog.resource_owner(uri).is_ok_and(|owner| {
                hub.engine
                    .backend(&owner)
                    .is_some_and(|backend| ready_with(&backend, &["resources", "subscribe"]))
            })
        })
        .cloned()
        .collect();
    let tasks_honoured: Vec<String> = filter
        .task_ids
        .iter()
        .filter(|task| {
            ids::backend_id(task).is_some_and(|(backend, _)| hub.engine.backend(backend).is_some())
        })
        .cloned()
        .collect();
    let (session, events) = hub.open_session(true, request.profile.clone());
    session.mark_initialized();
    session.lock_state().subscriptions = honoured.iter().cloned().collect();
    for uri in &honoured {
        subscribe_at_owner(hub, &request.profile, uri, "resources/subscribe");
    }
    let subscription = request.id.to_owned();
    let acknowledged = serde_json::json!({
        "_meta": { "io.modelcontextprotocol/subscriptionId": &*subscription },
        "notifications": {
            "toolsListChanged": filter.tools,
            "promptsListChanged": filter.prompts,
            "resourcesListChanged": filter.resource_list,
            "resourceSubscriptions": honoured,
            "taskIds": tasks_honoured,
        },
    });
    let acknowledged = RawValue::from_string(acknowledged.to_string()).expect("JSON");
    let _ = reply.send(notification(
        "notifications/subscriptions/acknowledged",
        Some(&acknowledged),
    ));
    let mut watched = JoinSet::new();
    for task in tasks_honoured {
        watched.spawn(watch_task(
            hub.clone(),
            task,
            request.capabilities,
            subscription.clone(),
            reply.clone(),
        ));
    }
    let listen = Listen {
        hub: hub.clone(),
        session,
        events,
        filter,
        subscription,
        reply,
        watched,
    };
    tokio::spawn(listen.run());
    Ok(())
}

/// What a listen stream opted in to.
struct Filter {
    tools: bool,
    prompts: bool,
    resource_list: bool,
    resources: Vec<String>,
    task_ids: Vec<String>,
}

impl Filter {
    fn parse(notifications: Option<&RawValue>) -> Result<Filter, ErrorObject> {
        let Some(notifications) = notifications else {
            return Ok(Filter {
                tools: false,
                prompts: false,
                resource_list: false,
                resources: Vec::new(),
                task_ids: Vec::new(),
            });
        };
        let entries = ObjectEntries::parse(notifications.get())
            .map_err(|_| invalid_params("notifications must be an object"))?;
        let flag = |key: &str| entries.get(key).is_some_and(|value| value.get() == "true");
        let resources = match entries.get("resourceSubscriptions") {
            None => Vec::new(),
            Some(uris) => serde_json::from_str::<Vec<String>>(uris.get()).map_err(|_| {
                invalid_params("notifications.resourceSubscriptions must be an array of URIs")
            })?,
        };
        if resources.len() > MAX_LISTEN_URIS {
            return Err(invalid_params(format!(
                "a listen stream may name at most {MAX_LISTEN_URIS} resources"
            )));
        }
        let resources = resources
            .into_iter()
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let task_ids = match entries.get("taskIds") {
            None => Vec::new(),
            Some(ids) => serde_json::from_str::<Vec<String>>(ids.get()).map_err(|_| {
                invalid_params("notifications.taskIds must be an array of task ids")
            })?,
        };
        if task_ids.len() > MAX_LISTEN_TASKS {
            return Err(invalid_params(format!(
                "a listen stream may name at most {MAX_LISTEN_TASKS} tasks"
            )));
        }
        let task_ids = task_ids
            .into_iter()
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        Ok(Filter {
            tools: flag("toolsListChanged"),
            prompts: flag("promptsListChanged"),
            resource_list: flag("resourcesListChanged"),
            resources,
            task_ids,
        })
    }

    fn wants(&self, method: &str) -> bool {
        match method {
            "notifications/tools/list_changed" => self.tools,
            "notifications/prompts/list_changed" => self.prompts,
            "notifications/resources/list_changed" => self.resource_list,
            "notifications/resources/updated" => !self.resources.is_empty(),
            _ => false,
        }
    }
}

/// An open listen stream.
struct Listen {
    hub: Arc<HubInner>,
    /// Told of list changes and of updates to the resources the stream names.
    session: Session,
    events: SessionEvents,
    filter: Filter,
    subscription: Box<RawValue>,
    reply: mpsc::UnboundedSender<Vec<u8>>,
    /// Reporting the tasks the stream names; they end with it.
    watched: JoinSet<()>,
}

impl Listen {
    /// Passes on list changes and resource updates until the stream ends.
    async fn run(self) {
        let Listen {
            hub,
            session,
            mut events,
            filter,
            subscription,
            reply,
            watched,
        } = self;
        let closed = session.call_token();
        let subscription_meta = format!(
            r#"{{"io.modelcontextprotocol/subscriptionId":{}}}"#,
            subscription.get()
        );
        let subscription_meta = RawValue::from_string(subscription_meta).expect("JSON");
        loop {
            tokio::select! {
                _ = reply.closed() => break,
                _ = closed.cancelled() => {
                    let result = format!(
                        r#"{{"resultType":"complete","_meta":{}}}"#,
                        subscription_meta.get()
                    );
                    let _ = reply.send(response(&subscription, Ok(result)));
                    break;
                }
                event = events.recv() => {
                    let Some(event) = event else { break };
                    let Ok(envelope) = Envelope::parse(&event) else { continue };
                    let Some(method) = envelope.method.as_deref().filter(|method| filter.wants(method))
                    else {
                        continue;
                    };
                    let mut params = envelope
                        .params
                        .and_then(|params| ObjectEntries::parse(params.get()).ok())
                        .unwrap_or_else(|| ObjectEntries::parse("{}").expect("an empty object"));
                    params.set("_meta", subscription_meta.clone());
                    let _ = reply.send(notification(method, Some(&params.into_raw())));
                }
            }
        }
        drop(watched);
        hub.listens.fetch_sub(1, Ordering::Relaxed);
        let uris: Vec<String> = session.lock_state().subscriptions.drain().collect();
        session.close();
        for uri in uris {
            let still_wanted = hub
                .sessions()
                .iter()
                .any(|other| other.lock_state().subscriptions.contains(&uri));
            if !still_wanted {
                subscribe_at_owner(&hub, session.profile(), &uri, "resources/unsubscribe");
            }
        }
    }
}

/// Reports the task `exposed` on a listen stream: its state as `tasks/get` shows it
/// (`notifications/tasks`), first at once and then whenever its status, message or questions
/// change, polled at its `pollIntervalMs` (within [`TASK_POLL_BOUNDS`]) until it ends. A task
/// that cannot be read any more (its server forgot it, or is gone) is reported no further.
async fn watch_task(
    hub: Arc<HubInner>,
    exposed: String,
    capabilities: ClientCapabilities,
    subscription: Box<RawValue>,
    reply: mpsc::UnboundedSender<Vec<u8>>,
) {
    let Some((backend, own)) = ids::backend_id(&exposed) else {
        return;
    };
    let own = own.to_owned();
    let subscription: serde_json::Value =
        serde_json::from_str(subscription.get()).expect("an id is JSON");
    let mut reported = None;
    loop {
        let Some(backend) = hub.engine.backend(backend) else {
            return;
        };
        let task = match bridge::detailed(&hub, &backend, &exposed, &own, capabilities).await {
            Ok(task) => task,
            Err(error) => {
                tracing::debug!(task = %exposed, error = %error.message, "a listened task cannot be read");
                return;
            }
        };
        let questions: Vec<&String> = task["inputRequests"]
            .as_object()
            .map(|questions| questions.keys().collect())
            .unwrap_or_default();
        let state = serde_json::json!([task["status"], task["statusMessage"], questions]);
        if reported.as_ref() != Some(&state) {
            let mut params = task.clone();
            params["_meta"] =
                serde_json::json!({ "io.modelcontextprotocol/subscriptionId": subscription });
            let params = serde_json::value::to_raw_value(&params).expect("JSON");
            if reply
                .send(notification("notifications/tasks", Some(&params)))
                .is_err()
            {
                return;
            }
            reported = Some(state);
        }
        if matches!(
            task["status"].as_str(),
            Some("completed" | "failed" | "cancelled")
        ) {
            return;
        }
        let wait = task["pollIntervalMs"]
            .as_u64()
            .map_or(Duration::from_secs(1), Duration::from_millis)
            .clamp(TASK_POLL_BOUNDS.0, TASK_POLL_BOUNDS.1);
        tokio::time::sleep(wait).await;
    }
}

/// Sends `resources/subscribe` or `resources/unsubscribe` for `uri` to the backend owning it.
fn subscribe_at_owner(hub: &HubInner, profile: &str, uri: &str, method: &'static str) {
    let Ok(owner) = hub.catalog(profile).resource_owner(uri) else {
        return;
    };
    let Some(backend) = hub.engine.backend(&owner) else {
        return;
    };
    let params = format!(r#"{{"uri":{}}}"#, json_string(uri).get());
    let params = RawValue::from_string(params).expect("JSON");
    tokio::spawn(async move {
        if let Err(error) = backend.request(method, Some(&params)).await {
            tracing::debug!(backend = backend.name(), %error, method, "listen subscription");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_stamped_without_touching_what_they_carry() {
        let stamped = stamp(r#"{"tools":[{"name":"a","x":1.50}],"_meta":{"k":1}}"#, true);
        let value: serde_json::Value = serde_json::from_str(&stamped).expect("JSON");
        assert_eq!(value["resultType"], "complete");
        assert_eq!(value["ttlMs"], 0);
        assert_eq!(value["cacheScope"], "private");
        assert_eq!(value["_meta"]["k"], 1);
        assert_eq!(value["_meta"][meta::SERVER_INFO]["name"], "switchboard");
        assert!(stamped.contains(r#""x":1.50"#), "{stamped}");

        let from_backend = r#"{"resultType":"input_required","requestState":"s","ttlMs":5}"#;
        let value: serde_json::Value =
            serde_json::from_str(&stamp(from_backend, true)).expect("JSON");
        assert_eq!(value["resultType"], "input_required");
        assert_eq!(value["ttlMs"], 5);
        assert!(value.get("cacheScope").is_none());
        assert_eq!(stamp("[1]", true), "[1]");
    }

    #[test]
    fn the_envelope_is_recognised_only_in_params_meta() {
        let modern = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert!(is_stateless(modern));
        let in_arguments = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"io.modelcontextprotocol/protocolVersion":"x"}}}"#;
        assert!(!is_stateless(in_arguments));
        let notification = br#"{"jsonrpc":"2.0","method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert!(!is_stateless(notification));
        assert!(!is_stateless(b"{"));
    }
}
