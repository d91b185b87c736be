//! One editor's session: its state, the answers the hub gives itself (`initialize`, `ping`, the
//! lists, `logging/setLevel`), and the notifications and responses the editor sends.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::capabilities::ClientCapabilities;
use super::cold_start::{self, Waiting};
use super::reply::{Reply, Response, SessionEvent};
use super::rewrite::ObjectEntries;
use super::tasks::ids::{MadeTasks, TaskOwner};
use super::{Hub, HubInner, Inbound, RequestReply, SUPPORTED_PROTOCOL_VERSIONS, response};
use supervisor::status::BackendState;
use supervisor::{BackendHandle, ResourceWatch};
use wire::era::Era;
use wire::jsonrpc::{self, Envelope, ErrorObject, Kind};
use wire::method::Method;
use wire::skills::SKILLS_EXTENSION;

/// One editor's session. Cheap to clone.
#[derive(Clone)]
pub struct Session {
    shared: Arc<SessionShared>,
}

struct SessionShared {
    id: Arc<str>,
    /// A 2026-07-28 request's own session, which lives as long as that request (or its listen
    /// stream): it is never asked anything outside its call.
    stateless: bool,
    /// The profile whose catalog the session sees.
    profile: Arc<str>,
    hub: Weak<HubInner>,
    events: mpsc::Sender<SessionEvent>,
    state: Mutex<SessionState>,
    closed: CancellationToken,
}

#[derive(Default)]
pub(super) struct SessionState {
    protocol_version: Option<String>,
    initialized: bool,
    pub(super) capabilities: ClientCapabilities,
    /// Client request id (its JSON text) → the call in flight.
    pub(super) in_flight: HashMap<String, CallInFlight>,
    pub(super) subscriptions: HashSet<String>,
    /// Of those, the resources of stateless-era backends, each named by its backend's listen while
    /// its watch is held (see [`subscriptions`](super::subscriptions)).
    pub(super) watches: HashMap<String, ResourceWatch>,
    pub(super) last_active: Option<Instant>,
    /// The lowest level of log messages the editor asked for (JSON text): by `logging/setLevel`
    /// in the session era, in each 2026-07-28 request's envelope. Told to 2026-07-28 backends.
    pub(super) log_level: Option<Box<RawValue>>,
    /// The editor's name, as its `clientInfo` says.
    pub(super) client: Option<Arc<str>>,
    /// Tools a person allowed for the rest of this session: each of its server, as pinned.
    pub(super) allowed: HashSet<Allowance>,
    /// The tasks this session made, which its `tasks/list` shows.
    pub(super) made_tasks: MadeTasks,
}

/// What "Allow for this session" allows (see [`approvals`](super::approvals)): one tool of one
/// server, with the definition pinned when the person said yes. Another server offering a tool
/// under the same name, or the same tool with another definition approved since, is asked about
/// again.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Allowance {
    pub(super) backend: Arc<str>,
    /// The server's own name for the tool.
    pub(super) own: Arc<str>,
    /// The SHA-256 of its pinned definition, as
    /// [`Pins::offered_pin`](super::pins::Pins::offered_pin) gives it.
    pub(super) pin: Option<String>,
}

/// A call of this session that a backend has not answered yet.
pub(super) struct CallInFlight {
    pub(super) cancel: CancellationToken,
    pub(super) backend: Arc<str>,
    pub(super) started: Instant,
    /// The number its requests to the backend carry
    /// ([`ClientMeta::call`](supervisor::rpc::ClientMeta::call)), by which the
    /// backend's requests during the call are known when its transport tells.
    pub(super) number: u64,
    /// Where the call's related messages go (progress, and requests the backend makes for it).
    pub(super) reply: mpsc::UnboundedSender<Reply>,
}

impl Session {
    pub(super) fn new(
        id: String,
        hub: Weak<HubInner>,
        events: mpsc::Sender<SessionEvent>,
        closed: CancellationToken,
        stateless: bool,
        profile: Arc<str>,
    ) -> Session {
        let state = SessionState {
            last_active: Some(Instant::now()),
            ..SessionState::default()
        };
        Session {
            shared: Arc::new(SessionShared {
                id: Arc::from(id),
                stateless,
                profile,
                hub,
                events,
                state: Mutex::new(state),
                closed,
            }),
        }
    }

    /// The session's id: random and unguessable (the HTTP transport's `Mcp-Session-Id`).
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// The session's id, shared.
    pub(super) fn shared_id(&self) -> Arc<str> {
        self.shared.id.clone()
    }

    /// The session's profile's name, shared.
    pub(super) fn shared_profile(&self) -> Arc<str> {
        self.shared.profile.clone()
    }

    /// The editor's name, as its `clientInfo` said.
    pub(super) fn client_name(&self) -> Option<Arc<str>> {
        self.lock_state().client.clone()
    }

    /// The profile whose catalog the session sees.
    pub fn profile(&self) -> &str {
        &self.shared.profile
    }

    /// The protocol version agreed in `initialize`, once it happened.
    pub fn protocol_version(&self) -> Option<String> {
        self.lock_state().protocol_version.clone()
    }

    /// Whether the client declared it can be asked things (sampling, elicitation or roots).
    pub fn can_be_asked(&self) -> bool {
        self.lock_state().capabilities.any()
    }

    /// Ends the session: cancels its requests at the backends and fails what it was asked.
    pub fn close(&self) {
        match self.shared.hub.upgrade() {
            Some(hub) => {
                Hub { inner: hub }.close_session(self.id());
            }
            None => self.cancel_outstanding(),
        }
    }

    /// Takes one JSON-RPC message (a single object, not a batch) from the client.
    pub fn receive(&self, message: &[u8]) -> Inbound {
        match Envelope::parse(message) {
            Ok(envelope) => self.receive_envelope(&envelope),
            Err(error) => Inbound::Rejected(Response::parse_error(&error)),
        }
    }

    /// [`Session::receive`] for a message its transport has parsed already.
    pub fn receive_envelope(&self, envelope: &Envelope<'_>) -> Inbound {
        let Some(hub) = self.shared.hub.upgrade() else {
            return rejected(
                None,
                ErrorObject::new(jsonrpc::INTERNAL_ERROR, "switchboard is shutting down"),
            );
        };
        self.lock_state().last_active = Some(Instant::now());
        if envelope.jsonrpc.as_deref() != Some("2.0") {
            let error = ErrorObject::new(
                jsonrpc::INVALID_REQUEST,
                "the message must carry \"jsonrpc\": \"2.0\"",
            );
            return rejected(valid_id(envelope.id), error);
        }
        match envelope.kind() {
            Kind::Request => self.on_request(&hub, envelope),
            Kind::Notification => {
                self.on_notification(&hub, envelope);
                Inbound::Accepted
            }
            Kind::Response => {
                self.on_response(&hub, envelope);
                Inbound::Accepted
            }
            Kind::Invalid => rejected(
                valid_id(envelope.id),
                ErrorObject::new(
                    jsonrpc::INVALID_REQUEST,
                    "not a JSON-RPC request, notification or response",
                ),
            ),
        }
    }

    fn on_request(&self, hub: &Arc<HubInner>, envelope: &Envelope<'_>) -> Inbound {
        let id = envelope.id.expect("a request has an id");
        if valid_id(Some(id)).is_none() {
            return rejected(
                None,
                ErrorObject::new(
                    jsonrpc::INVALID_REQUEST,
                    "a request id must be a string or a number",
                ),
            );
        }
        let method = envelope.method().expect("a request has a method");
        let (reply, messages) = mpsc::unbounded_channel();
        let immediate = match &method {
            Method::Initialize => match self.initialize(envelope.params) {
                Ok(version) => {
                    let profile = self.shared.profile.clone();
                    when_settled(hub, id, &reply, Needs::Statuses, move |hub| {
                        Ok(initialize_result(hub, &profile, &version))
                    })
                }
                Err(error) => Some(Err(error)),
            },
            Method::Ping => Some(Ok("{}".to_owned())),
            Method::ToolsList
            | Method::PromptsList
            | Method::ResourcesList
            | Method::ResourceTemplatesList => {
                let views = self.lock_state().capabilities.apps;
                list(
                    hub,
                    self.profile(),
                    views,
                    id,
                    &method,
                    envelope.params,
                    &reply,
                )
            }
            Method::ToolsCall
            | Method::PromptsGet
            | Method::ResourcesRead
            | Method::ResourcesSubscribe
            | Method::ResourcesUnsubscribe
            | Method::CompletionComplete
            | Method::TasksGet
            | Method::TasksResult
            | Method::TasksCancel => self.call(hub, id, &method, envelope.params, &reply),
            Method::TasksList => list_tasks(hub, self, id, envelope.params, &reply),
            Method::SkillsList | Method::SkillsGet => {
                skills(hub, self.profile(), id, &method, envelope.params, &reply)
            }
            Method::LoggingSetLevel => {
                // A 2026-07-28 backend has no such method: the level goes with each call instead.
                if let Some(level) = envelope
                    .params
                    .and_then(|params| ObjectEntries::parse(params.get()).ok())
                    .and_then(|params| params.get("level").map(ToOwned::to_owned))
                    .filter(|level| level.get().starts_with('"'))
                {
                    self.lock_state().log_level = Some(level);
                }
                let params = envelope.params.map(ToOwned::to_owned);
                let reply_id = id.to_owned();
                let (hub, profile) = (hub.clone(), self.shared_profile());
                let reply = reply.clone();
                tokio::spawn(async move {
                    set_log_level(&hub, &profile, params.as_deref()).await;
                    let _ = reply.send(response(&reply_id, Ok("{}".to_owned())));
                });
                None
            }
            other => Some(Err(ErrorObject::new(
                jsonrpc::METHOD_NOT_FOUND,
                format!("method not found: {other}"),
            ))),
        };
        if let Some(result) = immediate {
            let _ = reply.send(response(id, result));
        }
        Inbound::Request(RequestReply {
            messages,
            id: id.to_owned(),
            initialize: method == Method::Initialize,
            streamed: false,
        })
    }

    /// Takes the client's `initialize`: its version and capabilities; returns the version the
    /// session speaks.
    fn initialize(&self, params: Option<&RawValue>) -> Result<String, ErrorObject> {
        let params = params.ok_or_else(|| invalid_params("initialize needs params"))?;
        let entries = ObjectEntries::parse(params.get())
            .map_err(|_| invalid_params("params must be an object"))?;
        let requested = entries
            .get_str("protocolVersion")
            .map(|version| version.into_owned())
            .unwrap_or_default();
        let version = if SUPPORTED_PROTOCOL_VERSIONS.contains(&requested.as_str()) {
            requested
        } else {
            SUPPORTED_PROTOCOL_VERSIONS[0].to_owned()
        };
        let capabilities = entries
            .get("capabilities")
            .map(ClientCapabilities::parse)
            .unwrap_or_default();
        let client = client_name(entries.get("clientInfo"));
        {
            let mut state = self.lock_state();
            state.protocol_version = Some(version.clone());
            state.capabilities = capabilities;
            state.client = client;
        }
        Ok(version)
    }

    fn on_notification(&self, hub: &Arc<HubInner>, envelope: &Envelope<'_>) {
        match envelope.method().expect("a notification has a method") {
            Method::Initialized => self.lock_state().initialized = true,
            Method::Cancelled => {
                let Some(params) = envelope
                    .params
                    .and_then(|params| ObjectEntries::parse(params.get()).ok())
                else {
                    return;
                };
                let Some(request_id) = params.get("requestId") else {
                    return;
                };
                let state = self.lock_state();
                if let Some(call) = state.in_flight.get(request_id.get()) {
                    call.cancel.cancel();
                }
            }
            Method::RootsListChanged => {
                for backend in hub.engine.backends() {
                    if backend.status().state == BackendState::Ready {
                        tokio::spawn(async move {
                            let _ = backend
                                .notify(Method::RootsListChanged.as_str(), None)
                                .await;
                        });
                    }
                }
            }
            other => tracing::debug!(session = self.id(), method = %other, "notification ignored"),
        }
    }

    /// Takes the editor's answer to a request a backend made, and passes it to that backend.
    fn on_response(&self, hub: &HubInner, envelope: &Envelope<'_>) {
        let id = envelope.id.expect("a response has an id");
        let Ok(our_id) = id.get().parse::<u64>() else {
            return;
        };
        let outcome = match (envelope.result, envelope.error) {
            (Some(result), _) => Ok(result.to_owned()),
            (None, Some(raw)) => Err(serde_json::from_str::<ErrorObject>(raw.get())
                .unwrap_or_else(|_| {
                    ErrorObject::new(jsonrpc::INTERNAL_ERROR, "the editor sent a malformed error")
                })),
            (None, None) => return,
        };
        self.answered(hub, our_id, outcome);
    }

    /// Passes the editor's answer to the request `our_id` on to whoever asked it.
    pub(super) fn answered(
        &self,
        hub: &HubInner,
        our_id: u64,
        outcome: Result<Box<RawValue>, ErrorObject>,
    ) {
        let Some(request) = hub.take_forwarded_request(self.id(), our_id) else {
            tracing::debug!(
                session = self.id(),
                our_id,
                "response to no request of ours"
            );
            return;
        };
        request.answer(outcome);
    }

    /// Sends a message that belongs to no request of this session.
    pub(super) fn send_event(&self, event: SessionEvent) {
        if self.shared.events.try_send(event).is_err() {
            tracing::warn!(
                session = self.id(),
                "session event queue full or closed; message dropped"
            );
        }
    }

    /// Cancels every call in flight and fails what this session was asked.
    pub(super) fn cancel_outstanding(&self) {
        self.shared.closed.cancel();
        self.lock_state().watches.clear();
        if let Some(hub) = self.shared.hub.upgrade() {
            hub.fail_requests_forwarded_to(self.id());
        }
    }

    /// Whether the client sent `notifications/initialized`.
    pub(super) fn is_initialized(&self) -> bool {
        self.lock_state().initialized
    }

    /// From now on the session is told when lists change, as an initialized one is.
    pub(super) fn mark_initialized(&self) {
        self.lock_state().initialized = true;
    }

    /// Whether this is a 2026-07-28 request's own session.
    pub(super) fn is_stateless(&self) -> bool {
        self.shared.stateless
    }

    /// Who the task ids this session is handed are sealed to: the session itself, or for a
    /// 2026-07-28 request, which is a session of its own, its profile (see [`ids`](super::tasks::ids)).
    pub(super) fn task_owner(&self) -> TaskOwner<'_> {
        match self.shared.stateless {
            true => TaskOwner::Profile(&self.shared.profile),
            false => TaskOwner::Session(&self.shared.id),
        }
    }

    /// A token for one call of this session, cancelled when the session closes.
    pub(super) fn call_token(&self) -> CancellationToken {
        self.shared.closed.child_token()
    }

    pub(super) fn lock_state(&self) -> std::sync::MutexGuard<'_, SessionState> {
        self.shared
            .state
            .lock()
            .expect("session state lock is never poisoned")
    }
}

/// Whether `backend` is ready and its server declared the capability at `path` (say,
/// `["tasks", "list"]`).
pub(super) fn ready_with(backend: &BackendHandle, path: &[&str]) -> bool {
    let status = backend.status();
    let Some(server) = status
        .server
        .as_ref()
        .filter(|_| status.state == BackendState::Ready)
    else {
        return false;
    };
    let mut object = server.capabilities.get().to_owned();
    for key in path {
        let Some(inner) = ObjectEntries::parse(&object)
            .ok()
            .and_then(|entries| entries.get(key).map(|inner| inner.get().to_owned()))
        else {
            return false;
        };
        object = inner;
    }
    true
}

/// Passes `logging/setLevel` to every ready backend of the session era that logs and that
/// `profile` offers (2026-07-28 backends take a level per request); returns once all have
/// answered.
async fn set_log_level(hub: &HubInner, profile: &str, params: Option<&RawValue>) {
    let mut calls = Vec::new();
    for backend in hub.engine.backends() {
        let session_era = backend
            .status()
            .server
            .is_some_and(|server| server.era == Era::Session);
        if session_era && hub.offers(profile, backend.name()) && ready_with(&backend, &["logging"])
        {
            let backend = backend.clone();
            let params = params.map(ToOwned::to_owned);
            calls.push(tokio::spawn(async move {
                let method = Method::LoggingSetLevel;
                if let Err(error) = backend.request(method.as_str(), params.as_deref()).await {
                    tracing::debug!(backend = backend.name(), %error, "{method}");
                }
            }));
        }
    }
    for call in calls {
        let _ = call.await;
    }
}

/// `tasks/list`: the tasks this session made, of the servers its profile offers. Each such
/// ready backend that lists tasks is asked, and the tasks of the session kept from their lists,
/// each with its id exposed (see [`ids`](super::tasks::ids)). A backend that fails to answer is left out of the list
/// rather than failing it.
fn list_tasks(
    hub: &Arc<HubInner>,
    session: &Session,
    id: &RawValue,
    params: Option<&RawValue>,
    reply: &mpsc::UnboundedSender<Reply>,
) -> Option<Result<String, ErrorObject>> {
    if let Err(error) = single_page(params) {
        return Some(Err(error));
    }
    let listing: Vec<_> = hub
        .engine
        .backends()
        .into_iter()
        .filter(|backend| {
            hub.offers(session.profile(), backend.name()) && ready_with(backend, &["tasks", "list"])
        })
        .collect();
    let (hub, session) = (hub.clone(), session.clone());
    let (id, reply) = (id.to_owned(), reply.clone());
    tokio::spawn(async move {
        let mut all = Vec::new();
        for backend in listing {
            let method = Method::TasksList;
            let answer = match backend.request(method.as_str(), None).await {
                Ok(answer) => answer,
                Err(error) => {
                    tracing::debug!(backend = backend.name(), %error, "{method}");
                    continue;
                }
            };
            let Some(tasks) = ObjectEntries::parse(answer.get())
                .ok()
                .and_then(|answer| answer.get("tasks").map(|tasks| tasks.get().to_owned()))
            else {
                continue;
            };
            let exposer = hub.task_seal.exposer(session.task_owner(), backend.name());
            let made = exposer.made_list(&tasks, &session.lock_state().made_tasks);
            all.extend(made.unwrap_or_default());
        }
        let result = format!(r#"{{"tasks":[{}]}}"#, all.join(","));
        let _ = reply.send(response(&id, Ok(result)));
    });
    None
}

/// Answers a list method from the merged catalog, once no backend it waits for is starting;
/// `views`: for an editor that renders MCP Apps' views.
fn list(
    hub: &Arc<HubInner>,
    profile: &str,
    views: bool,
    id: &RawValue,
    method: &Method,
    params: Option<&RawValue>,
    reply: &mpsc::UnboundedSender<Reply>,
) -> Option<Result<String, ErrorObject>> {
    if let Err(error) = single_page(params) {
        return Some(Err(error));
    }
    let method = method.clone();
    let profile = profile.to_owned();
    when_settled(hub, id, reply, Needs::Catalog, move |hub| {
        Ok(list_result(hub, &profile, &method, views))
    })
}

/// The merged list a list method answers with; `views`: for an editor that renders MCP Apps'
/// views.
pub(super) fn list_result(hub: &HubInner, profile: &str, method: &Method, views: bool) -> String {
    let catalog = hub.catalog(profile);
    match method {
        Method::ToolsList => catalog.tools_list(views).text(),
        Method::PromptsList => catalog.prompts_result.text(),
        Method::ResourcesList => catalog.resources_result.clone(),
        _ => catalog.templates_result.clone(),
    }
}

/// The answer to `skills/list` (one page) or `skills/get`, from the merged catalog.
pub(super) fn skills(
    hub: &Arc<HubInner>,
    profile: &str,
    id: &RawValue,
    method: &Method,
    params: Option<&RawValue>,
    reply: &mpsc::UnboundedSender<Reply>,
) -> Option<Result<String, ErrorObject>> {
    if *method == Method::SkillsList
        && let Err(error) = single_page(params)
    {
        return Some(Err(error));
    }
    let (profile, method) = (profile.to_owned(), method.clone());
    let params = params.map(ToOwned::to_owned);
    when_settled(hub, id, reply, Needs::Catalog, move |hub| {
        hub.catalog(&profile)
            .skills
            .answer(&method, params.as_deref())
    })
}

/// `capabilities` with the Skills extension when a server of `profile` lists skills.
pub(super) fn with_skills(hub: &HubInner, profile: &str, capabilities: &mut serde_json::Value) {
    if !hub.catalog(profile).skills.is_empty() {
        capabilities["extensions"][SKILLS_EXTENSION] = serde_json::json!({});
    }
}

/// What an answer is made of.
pub(super) enum Needs {
    /// The backends' published statuses (their instructions).
    Statuses,
    /// The merged catalog, which follows the statuses by a rebuild.
    Catalog,
}

/// `answer` at once unless backends nothing is known of are still starting (or, for an answer
/// from the catalog, a rebuild is due): then once they are ready (or have failed), so that the
/// first `initialize` and list are whole (see [`cold_start`]).
pub(super) fn when_settled(
    hub: &Arc<HubInner>,
    id: &RawValue,
    reply: &mpsc::UnboundedSender<Reply>,
    needs: Needs,
    answer: impl FnOnce(&HubInner) -> Result<String, ErrorObject> + Send + 'static,
) -> Option<Result<String, ErrorObject>> {
    let ready = match needs {
        Needs::Statuses => cold_start::starting(hub, &Waiting::All).is_empty(),
        Needs::Catalog => cold_start::settled(hub, &Waiting::All),
    };
    if ready {
        return Some(answer(hub));
    }
    let starting = cold_start::starting(hub, &Waiting::All);
    let (hub, id, reply) = (hub.clone(), id.to_owned(), reply.clone());
    tokio::spawn(async move {
        cold_start::settle(&hub, starting).await;
        let _ = reply.send(response(&id, answer(&hub)));
    });
    None
}

/// What the hub answers `initialize` with: its own capabilities and instructions.
fn initialize_result(hub: &HubInner, profile: &str, version: &str) -> String {
    let mut capabilities = capabilities();
    capabilities["tasks"] =
        serde_json::json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } });
    with_skills(hub, profile, &mut capabilities);
    serde_json::json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "serverInfo": server_info(),
        "instructions": instructions(hub, profile),
    })
    .to_string()
}

/// What the endpoint offers in both eras (the session era adds its tasks).
pub(super) fn capabilities() -> serde_json::Value {
    serde_json::json!({
        "tools": { "listChanged": true },
        "prompts": { "listChanged": true },
        "resources": { "subscribe": true, "listChanged": true },
        "logging": {},
        "completions": {},
    })
}

/// Switchboard's name and version, as it gives them to editors.
pub(super) fn server_info() -> serde_json::Value {
    serde_json::json!({ "name": "switchboard", "title": "Switchboard", "version": env!("CARGO_PKG_VERSION") })
}

/// A word on names, then the instructions of every server of `profile` that gave some (and
/// whose instructions are not held back, see `pins`), one section each.
pub(super) fn instructions(hub: &HubInner, profile: &str) -> String {
    let backends: Vec<_> = hub
        .engine
        .backends()
        .into_iter()
        .filter(|backend| hub.offers(profile, backend.name()))
        .collect();
    let mut instructions = String::from(
        "Switchboard offers the tools, prompts and resources of several MCP servers; tool and \
         prompt names are prefixed with the server's name and two underscores",
    );
    let unprefixed: Vec<&str> = backends
        .iter()
        .filter(|backend| backend.config().prefix.is_empty())
        .map(|backend| backend.name())
        .collect();
    match unprefixed.as_slice() {
        [] => instructions.push('.'),
        names => instructions.push_str(&format!(
            ", but those of {} keep their own names.",
            names.join(", ")
        )),
    }
    for backend in backends {
        let status = backend.status();
        let Some(text) = status
            .server
            .as_ref()
            .and_then(|server| server.instructions.as_deref())
            .filter(|text| !text.trim().is_empty())
        else {
            continue;
        };
        // Instructions that changed since they were approved stay out until approved again.
        if !hub.pins.vet_instructions(backend.name(), text) {
            continue;
        }
        let text = text.trim();
        let name = backend.name();
        let names = match super::names::exposed_prefix(&backend.config().prefix) {
            prefix if prefix.is_empty() => "whose names are its own".to_owned(),
            prefix => format!("whose names start with `{prefix}`"),
        };
        instructions.push_str(&format!(
            "\n\n## {name}\nFrom the server {name}, {names}:\n{text}"
        ));
    }
    instructions
}

/// Every list is sent in one page: a cursor we never gave out is an error.
pub(super) fn single_page(params: Option<&RawValue>) -> Result<(), ErrorObject> {
    let has_cursor = params
        .and_then(|params| ObjectEntries::parse(params.get()).ok())
        .is_some_and(|params| {
            params
                .get("cursor")
                .is_some_and(|cursor| cursor.get() != "null")
        });
    if has_cursor {
        return Err(invalid_params(
            "invalid cursor: the whole list is sent in one page",
        ));
    }
    Ok(())
}

pub(super) fn invalid_params(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(jsonrpc::INVALID_PARAMS, message)
}

/// A request id worth echoing: a string or a number.
pub(super) fn valid_id(id: Option<&RawValue>) -> Option<&RawValue> {
    id.filter(|id| {
        let text = id.get();
        text.starts_with('"')
            || text.starts_with('-')
            || text.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// The answer to a message that cannot be taken: this error response.
pub(super) fn rejected(id: Option<&RawValue>, error: ErrorObject) -> Inbound {
    Inbound::Rejected(Response::error(id, error))
}

/// The `name` of a `clientInfo` object.
pub(super) fn client_name(info: Option<&RawValue>) -> Option<Arc<str>> {
    let info = ObjectEntries::parse(info?.get()).ok()?;
    Some(Arc::from(&*info.get_str("name")?))
}
