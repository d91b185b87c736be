//! One editor's session: its state, the routing of its requests to the answers the hub gives
//! itself (`initialize`, `ping`, the lists, `logging/setLevel`; made in `answers.rs`) or to a
//! backend (`call/`), and the notifications and responses the editor sends.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::answers::{self, Needs, initialize_result, list_tasks, when_settled};
use super::capabilities::{ClientCapabilities, client_name, ready_with};
use super::reply::{Reply, Response, SessionEvent, invalid_params, rejected, valid_id};
use super::rewrite::ObjectEntries;
use super::tasks::ids::{MadeTasks, TaskOwner};
use super::{Hub, HubInner, Inbound, RequestReply, SUPPORTED_PROTOCOL_VERSIONS, response};
use supervisor::ResourceWatch;
use supervisor::status::BackendState;
use wire::era::Era;
use wire::jsonrpc::{self, Envelope, ErrorObject, Kind};
use wire::method::Method;

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
        let method = envelope.method.as_ref().expect("a request has a method");
        let (reply, messages) = mpsc::unbounded_channel();
        let immediate = match method {
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
                answers::list(
                    hub,
                    self.profile(),
                    views,
                    id,
                    method,
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
            | Method::TasksCancel => self.call(hub, id, method, envelope.params, &reply),
            Method::TasksList => list_tasks(hub, self, id, envelope.params, &reply),
            Method::SkillsList | Method::SkillsGet => answers::skills(
                hub,
                self.profile(),
                id,
                method,
                envelope.params,
                &reply,
                std::convert::identity,
            ),
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
            initialize: *method == Method::Initialize,
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
        match envelope
            .method
            .as_ref()
            .expect("a notification has a method")
        {
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
                            let _ = backend.notify(&Method::RootsListChanged, None).await;
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
                if let Err(error) = backend.request(&method, params.as_deref()).await {
                    tracing::debug!(backend = backend.name(), %error, "{method}");
                }
            }));
        }
    }
    for call in calls {
        let _ = call.await;
    }
}
