//! The 2026-07-28 path: requests that carry their protocol version and the editor's
//! capabilities in `params._meta`, each answered on its own.
//!
//! Each such request gets a session of its own for as long as it runs, so routing, progress,
//! cancellation and the refusal of ambiguous backend requests work as for a session's calls.
//! What differs is at the edges:
//! - the envelope is checked (and, over HTTP, the headers that mirror it, see `headers.rs`);
//! - results are stamped with `resultType`, Switchboard's `serverInfo` and, for discover, lists
//!   and reads, caching hints;
//! - log messages reach a request only if it asked for them (`logLevel`);
//! - a backend of the session era that asks the editor something during a call (elicitation,
//!   sampling, roots) cannot send it a request: the call is parked, the editor gets
//!   `input_required` with the question and a sealed `requestState` (see `request_state.rs`; `relay.rs` runs it),
//!   and its retry answers the backend and resumes the same call (multi-round-trip requests);
//! - `subscriptions/listen` is a session told of list changes and resource updates, which it
//!   passes on with its `subscriptionId`, and of the tasks it names (`listen.rs`);
//! - a session-era server's tasks are shown in the Tasks extension's shapes (see
//!   [`bridge`]);
//! - a task id an editor is handed is sealed to the profile the request was sent to, since no
//!   session outlives the request to own it: the id itself is the editor's hold on the task
//!   (see [`ids`](crate::tasks::ids)).
//!

mod headers;
mod listen;
mod relay;
pub(super) mod request_state;

pub use headers::RequestHeaders;
pub(crate) use relay::Parked;

use std::sync::Arc;

use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::answers::{
    self, Needs, discover_result, list_result, not_found, server_info, single_page,
    tasks_extension_missing, unsupported_version, when_settled,
};
use crate::capabilities::{ClientCapabilities, client_name};
use crate::reply::{Reply, invalid_params, rejected, valid_id};
use crate::rewrite::{ObjectEntries, json_string};
use crate::tasks::bridge::{self, NamedTask};
use crate::{HubInner, Inbound, RequestReply, response};
use listen::listen;
use relay::{call, resume};
use wire::era::STATELESS_PROTOCOL_VERSION;
use wire::jsonrpc::{self, Envelope, ErrorObject, Kind};
use wire::meta;
use wire::method::{Method, Subject};

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
        && Envelope::parse(message).is_ok_and(|envelope| is_stateless_envelope(&envelope))
}

/// [`is_stateless`] for a message its transport has parsed already.
pub fn is_stateless_envelope(envelope: &Envelope<'_>) -> bool {
    envelope.kind() == Kind::Request && carries_envelope(envelope)
}

/// What one 2026-07-28 request says about itself in `params._meta`.
#[derive(Clone)]
struct Envelope2026<'a> {
    id: &'a RawValue,
    method: Method,
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
    /// Reads the envelope; with the headers of its HTTP request, a version they contradict is a
    /// mismatch before it is an unsupported version.
    fn parse(
        envelope: &Envelope<'a>,
        headers: Option<&RequestHeaders>,
        profile: Arc<str>,
    ) -> Result<Envelope2026<'a>, ErrorObject> {
        let id = envelope.id.expect("a request has an id");
        let method = envelope.method.clone().expect("a request has a method");
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
        if let Some(headers) = headers {
            headers::check_version(headers, &version)?;
        }
        if version != STATELESS_PROTOCOL_VERSION {
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
        let wants_progress = meta.get(meta::PROGRESS_TOKEN).is_some();
        let client = client_name(meta.get(meta::CLIENT_INFO));
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
    /// methods of 2026-07-28 that have one ([`Method::subject`]): not `skills/get`, whose URI no
    /// header mirrors, nor the methods of the session era alone, refused once the headers are
    /// checked.
    fn target(&self) -> Option<String> {
        let unmirrored = matches!(
            self.method,
            Method::SkillsGet
                | Method::ResourcesSubscribe
                | Method::ResourcesUnsubscribe
                | Method::TasksResult
        );
        let subject = self.method.subject().filter(|_| !unmirrored)?;
        Some(
            self.params
                .get_str(subject.field())
                .unwrap_or_default()
                .into_owned(),
        )
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
    envelope: &Envelope<'_>,
    headers: Option<&RequestHeaders>,
    profile: Arc<str>,
) -> Inbound {
    let id = valid_id(envelope.id);
    let outcome = match (envelope.jsonrpc.as_deref(), envelope.kind(), id) {
        (Some("2.0"), Kind::Request, Some(id)) => {
            start(hub, envelope, headers, profile).map(|Started { messages, streamed }| {
                RequestReply {
                    messages,
                    id: id.to_owned(),
                    initialize: false,
                    streamed,
                }
            })
        }
        (Some("2.0"), Kind::Request, None) => Err(ErrorObject::new(
            jsonrpc::INVALID_REQUEST,
            "a request id must be a string or a number",
        )),
        (Some("2.0"), _, _) => Err(ErrorObject::new(
            jsonrpc::INVALID_REQUEST,
            "only requests carry the 2026-07-28 envelope",
        )),
        _ => Err(ErrorObject::new(
            jsonrpc::INVALID_REQUEST,
            "the message must carry \"jsonrpc\": \"2.0\"",
        )),
    };
    match outcome {
        Ok(reply) => Inbound::Request(reply),
        Err(error) => rejected(id, error),
    }
}

/// A request under way: its messages, and whether they are best streamed.
struct Started {
    messages: mpsc::UnboundedReceiver<Reply>,
    streamed: bool,
}

fn start(
    hub: &Arc<HubInner>,
    envelope: &Envelope<'_>,
    headers: Option<&RequestHeaders>,
    profile: Arc<str>,
) -> Result<Started, ErrorObject> {
    let request = Envelope2026::parse(envelope, headers, profile)?;
    if let Some(headers) = headers {
        let target = request.target();
        let mirrored = match (&request.method, &target) {
            (Method::ToolsCall, Some(name)) => {
                hub.catalog(&request.profile).mirrored.get(name).cloned()
            }
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
            STATELESS_PROTOCOL_VERSION,
            request.method.as_str(),
            target.as_deref(),
            mirrored.as_deref().unwrap_or_default(),
            arguments.as_ref(),
        )?;
    }
    let (reply, messages) = mpsc::unbounded_channel();
    let streamed = request.wants_progress || request.log_level.is_some();
    let id = request.id;
    match &request.method {
        Method::ServerDiscover => {
            let profile = request.profile.clone();
            answer_when_settled(hub, id, &reply, Needs::Statuses, move |hub| {
                stamp(&discover_result(hub, &profile), true)
            });
        }
        Method::ToolsList
        | Method::PromptsList
        | Method::ResourcesList
        | Method::ResourceTemplatesList => {
            single_page(envelope.params)?;
            let (method, profile) = (request.method.clone(), request.profile.clone());
            let views = request.capabilities.apps;
            answer_when_settled(hub, id, &reply, Needs::Catalog, move |hub| {
                stamp(&list_result(hub, &profile, &method, views), true)
            });
        }
        Method::SkillsList | Method::SkillsGet => {
            if request.method == Method::SkillsList {
                single_page(envelope.params)?;
            }
            let finish = |result: String| stamp(&result, true);
            let (method, profile) = (&request.method, &request.profile);
            if let Some(result) =
                answers::skills(hub, profile, id, method, envelope.params, &reply, finish)
            {
                let _ = reply.send(response(id, result));
            }
        }
        Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => {
            if !request.capabilities.tasks_extension {
                return Err(tasks_extension_missing(request.method.as_str()));
            }
            match session_era_task(hub, &request) {
                Some(task) => answer_task(hub, &request, task, reply),
                // A 2026-07-28 server's task, or no task of the editor's: routed as any call,
                // which refuses an id not sealed to the profile.
                None => call(hub, &request, reply),
            }
        }
        Method::ToolsCall
        | Method::PromptsGet
        | Method::ResourcesRead
        | Method::CompletionComplete => {
            match request.params.get_str("requestState") {
                Some(sealed) if request_state::is_ours(&sealed) => {
                    resume(hub, &request, &sealed, reply)?
                }
                // A 2026-07-28 backend's own state goes back to it with the retry.
                _ => call(hub, &request, reply),
            }
        }
        Method::SubscriptionsListen => {
            listen(hub, &request, reply)?;
            return Ok(Started {
                messages,
                streamed: true,
            });
        }
        Method::Initialize
        | Method::Ping
        | Method::LoggingSetLevel
        | Method::ResourcesSubscribe
        | Method::ResourcesUnsubscribe => {
            return Err(not_found(format!(
                "{} is not part of {STATELESS_PROTOCOL_VERSION}",
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
    reply: &mpsc::UnboundedSender<Reply>,
    needs: Needs,
    answer: impl FnOnce(&HubInner) -> String + Send + 'static,
) {
    if let Some(result) = when_settled(hub, id, reply, needs, move |hub| Ok(answer(hub))) {
        let _ = reply.send(response(id, result));
    }
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

/// For a task request about a session-era server's task the editor was handed (see
/// [`ids`](crate::tasks::ids)): that task.
fn session_era_task(hub: &HubInner, request: &Envelope2026<'_>) -> Option<NamedTask> {
    let exposed = request.params.get_str(Subject::TaskId.field())?;
    NamedTask::open(hub, &request.profile, &exposed).filter(|task| !task.backend.is_stateless_era())
}

/// Answers a task request about a session-era server's task in the Tasks extension's shapes
/// (see [`bridge`]).
fn answer_task(
    hub: &Arc<HubInner>,
    request: &Envelope2026<'_>,
    task: NamedTask,
    reply: mpsc::UnboundedSender<Reply>,
) {
    let hub = hub.clone();
    let id = request.id.to_owned();
    let method = request.method.clone();
    let responses = request.params.get("inputResponses").map(ToOwned::to_owned);
    let capabilities = request.capabilities;
    tokio::spawn(async move {
        let answer = bridge::answer(&hub, &task, &method, responses.as_deref(), capabilities);
        let result = tokio::select! {
            _ = reply.closed() => return,
            result = answer => result,
        };
        let _ = reply.send(response(&id, result.map(|result| stamp(&result, false))));
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
        let stateless = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert!(is_stateless(stateless));
        let in_arguments = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"io.modelcontextprotocol/protocolVersion":"x"}}}"#;
        assert!(!is_stateless(in_arguments));
        let notification = br#"{"jsonrpc":"2.0","method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert!(!is_stateless(notification));
        assert!(!is_stateless(b"{"));
    }
}
