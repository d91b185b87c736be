//! The hub: one MCP server made of every backend.
//!
//! Each editor connection is a [`Session`]. The hub answers `initialize`, `ping` and the list
//! methods itself from a merged catalog, routes calls to the owning backend with the name
//! rewritten, remaps progress tokens and cancellations per session, and routes a backend's
//! requests (sampling, elicitation, roots) to the session that caused them. Client request ids
//! never reach a backend: the connection to each backend has its own id space.

pub mod catalog;
pub mod names;
pub mod rewrite;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use tokio::sync::{broadcast, mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::config::BackendConfig;
use crate::supervisor::rpc::ProgressSink;
use crate::supervisor::spawn::GroupRegistry;
use crate::supervisor::status::BackendState;
use crate::supervisor::{
    BackendHandle, BackendNotification, CallError, Engine, EngineOptions, ServerRequest,
};
use crate::wire::jsonrpc::{self, Envelope, ErrorObject, Kind};
use catalog::{CatalogCache, MergedCatalog, Source};
use rewrite::{ObjectEntries, json_string};

/// The protocol versions editors may speak with the hub, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] = crate::supervisor::SUPPORTED_PROTOCOL_VERSIONS;

const SESSION_EVENTS_CAPACITY: usize = 1024;
/// How long rebuilding the catalog waits for more changes to arrive before it runs.
const CATALOG_SETTLE: Duration = Duration::from_millis(20);
/// How long a call naming something the catalog does not know waits for a rebuild that is due.
const CATALOG_WAIT: Duration = Duration::from_secs(1);

/// Where a call goes: the backend, the params it receives, and the progress token swapped in.
type Routed = (BackendHandle, Box<RawValue>, Option<ProgressToken>);

/// What became of one message a client sent.
pub enum Inbound {
    /// A request: messages related to it (progress, server-to-client requests) and finally its
    /// response arrive on the reply's channel, which closes after the response. Dropping the
    /// receiver before the response cancels the request at the backend.
    Request(RequestReply),
    /// A notification or a response was taken; there is nothing to answer.
    Accepted,
    /// The message cannot be taken; this error response (one JSON text) is the answer.
    Rejected(Vec<u8>),
}

/// The messages belonging to one client request, each one complete JSON text without a newline.
pub struct RequestReply {
    pub messages: mpsc::UnboundedReceiver<Vec<u8>>,
    /// The request's id, as the client wrote it (JSON text).
    pub id: Box<str>,
    /// Whether the request is `initialize`.
    pub initialize: bool,
}

/// Messages for the session not tied to any of its requests (list_changed, resource updates,
/// log messages, server-to-client requests no request explains), each one JSON text.
pub type SessionEvents = mpsc::Receiver<Vec<u8>>;

/// Settings of the hub.
#[derive(Default, Clone)]
pub struct HubOptions {
    /// Where the last known catalog of each backend is kept; `None` keeps nothing.
    pub catalog_cache: Option<PathBuf>,
}

/// The hub shared by every transport. Cheap to clone.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<HubInner>,
}

struct HubInner {
    engine: Arc<Engine>,
    catalog: RwLock<Arc<MergedCatalog>>,
    sessions: Mutex<HashMap<String, Session>>,
    routes: Mutex<Routes>,
    next_id: AtomicU64,
    stop: CancellationToken,
    /// Engine changes since the catalog was last rebuilt: marked seen as each rebuild starts.
    unseen_changes: Mutex<watch::Receiver<()>>,
    /// Told after each rebuild.
    rebuilt: watch::Sender<()>,
}

/// Correlations that outlive one call of `receive`.
#[derive(Default)]
struct Routes {
    /// Our id of a request sent to a client → the backend request it stands for.
    to_clients: HashMap<u64, ClientBound>,
}

struct ClientBound {
    session: String,
    request: ServerRequest,
}

/// One editor's session. Cheap to clone.
#[derive(Clone)]
pub struct Session {
    shared: Arc<SessionShared>,
}

struct SessionShared {
    id: String,
    hub: Weak<HubInner>,
    events: mpsc::Sender<Vec<u8>>,
    state: Mutex<SessionState>,
    closed: CancellationToken,
}

#[derive(Default)]
struct SessionState {
    protocol_version: Option<String>,
    initialized: bool,
    capabilities: ClientCapabilities,
    /// Client request id (its JSON text) → the call in flight.
    in_flight: HashMap<String, InFlight>,
    subscriptions: HashSet<String>,
    last_active: Option<Instant>,
}

#[derive(Default, Clone, Copy)]
struct ClientCapabilities {
    sampling: bool,
    elicitation: bool,
    roots: bool,
}

struct InFlight {
    cancel: CancellationToken,
    backend: Arc<str>,
    started: Instant,
    reply: mpsc::UnboundedSender<Vec<u8>>,
}

impl Hub {
    /// Starts the engine for `configs` and the hub over it.
    pub fn start(
        configs: Vec<BackendConfig>,
        groups: Arc<GroupRegistry>,
        options: HubOptions,
    ) -> Hub {
        let (server_requests_tx, server_requests) = mpsc::unbounded_channel();
        let engine = Engine::start(
            configs,
            EngineOptions {
                groups,
                server_requests: Some(server_requests_tx),
            },
        );
        let engine = Arc::new(engine);
        let inner = Arc::new(HubInner {
            catalog: RwLock::new(Arc::new(MergedCatalog::default())),
            sessions: Mutex::new(HashMap::new()),
            routes: Mutex::new(Routes::default()),
            next_id: AtomicU64::new(1),
            stop: CancellationToken::new(),
            unseen_changes: Mutex::new(engine.changes()),
            rebuilt: watch::channel(()).0,
            engine: engine.clone(),
        });
        let cache = CatalogCache::new(options.catalog_cache);
        rebuild_catalog(&inner, &cache, &mut HashMap::new());
        tokio::spawn(maintain_catalog(
            Arc::downgrade(&inner),
            cache,
            inner.stop.clone(),
        ));
        tokio::spawn(route_notifications(
            Arc::downgrade(&inner),
            engine.notifications(),
            inner.stop.clone(),
        ));
        tokio::spawn(route_server_requests(
            Arc::downgrade(&inner),
            server_requests,
            inner.stop.clone(),
        ));
        Hub { inner }
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.inner.engine
    }

    /// Opens a new session and returns it with its stream of unrelated messages.
    pub fn open_session(&self) -> (Session, SessionEvents) {
        let (events, events_rx) = mpsc::channel(SESSION_EVENTS_CAPACITY);
        let session = Session {
            shared: Arc::new(SessionShared {
                id: random_id(),
                hub: Arc::downgrade(&self.inner),
                events,
                state: Mutex::new(SessionState {
                    last_active: Some(Instant::now()),
                    ..SessionState::default()
                }),
                closed: self.inner.stop.child_token(),
            }),
        };
        self.inner
            .lock_sessions()
            .insert(session.id().to_owned(), session.clone());
        (session, events_rx)
    }

    /// The open session with this id.
    pub fn session(&self, id: &str) -> Option<Session> {
        self.inner.lock_sessions().get(id).cloned()
    }

    /// Closes and forgets a session.
    pub fn close_session(&self, id: &str) -> bool {
        let session = self.inner.lock_sessions().remove(id);
        match session {
            Some(session) => {
                session.shut();
                true
            }
            None => false,
        }
    }

    /// How many sessions are open.
    pub fn session_count(&self) -> usize {
        self.inner.lock_sessions().len()
    }

    /// Calls `tool`, the backend's own name for it (not the exposed one), the way an editor's
    /// call goes: the backend is started on demand and the whole call has its request deadline.
    /// For the control API; no session, no progress.
    pub async fn call_tool(
        &self,
        backend: &str,
        tool: &str,
        arguments: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let handle = self.inner.engine.backend(backend).ok_or_else(|| {
            ErrorObject::new(
                jsonrpc::BACKEND_UNAVAILABLE,
                format!("backend {backend} is not configured"),
            )
        })?;
        let deadline = handle.config().request_timeout;
        let started = Instant::now();
        ready_backend(&handle, deadline).await?;
        let params = match &arguments {
            Some(arguments) => format!(
                r#"{{"name":{},"arguments":{}}}"#,
                json_string(tool).get(),
                arguments.get()
            ),
            None => format!(r#"{{"name":{}}}"#, json_string(tool).get()),
        };
        let params = RawValue::from_string(params).expect("a name and a JSON value are valid JSON");
        let remaining = deadline.saturating_sub(started.elapsed());
        handle
            .request_with_timeout("tools/call", Some(&params), remaining)
            .await
            .map_err(|error| error.to_error_object())
    }

    /// Closes every session and stops every backend.
    pub async fn shutdown(&self) {
        let sessions: Vec<Session> = self
            .inner
            .lock_sessions()
            .drain()
            .map(|(_, session)| session)
            .collect();
        for session in sessions {
            session.shut();
        }
        self.inner.stop.cancel();
        self.inner.engine.shutdown().await;
    }
}

impl HubInner {
    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.sessions
            .lock()
            .expect("session map lock is never poisoned")
    }

    fn lock_routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().expect("routes lock is never poisoned")
    }

    /// Whether the engine changed since the catalog was last rebuilt, so a rebuild is due.
    fn catalog_due(&self) -> bool {
        self.unseen_changes
            .lock()
            .expect("the change receiver lock is never poisoned")
            .has_changed()
            .unwrap_or(false)
    }

    fn catalog(&self) -> Arc<MergedCatalog> {
        self.catalog
            .read()
            .expect("catalog lock is never poisoned")
            .clone()
    }

    fn sessions(&self) -> Vec<Session> {
        self.lock_sessions().values().cloned().collect()
    }
}

impl Session {
    /// The session's id: random and unguessable (the HTTP transport's `Mcp-Session-Id`).
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// The protocol version agreed in `initialize`, once it happened.
    pub fn protocol_version(&self) -> Option<String> {
        self.lock_state().protocol_version.clone()
    }

    /// Whether the client declared it can be asked things (sampling, elicitation or roots).
    pub fn can_be_asked(&self) -> bool {
        let capabilities = self.lock_state().capabilities;
        capabilities.sampling || capabilities.elicitation || capabilities.roots
    }

    /// Ends the session: cancels its requests at the backends and fails what it was asked.
    pub fn close(&self) {
        match self.shared.hub.upgrade() {
            Some(hub) => {
                Hub { inner: hub }.close_session(self.id());
            }
            None => self.shut(),
        }
    }

    /// Takes one JSON-RPC message (a single object, not a batch) from the client.
    pub fn receive(&self, message: &[u8]) -> Inbound {
        let Some(hub) = self.shared.hub.upgrade() else {
            return rejected(
                None,
                ErrorObject::new(jsonrpc::INTERNAL_ERROR, "switchboard is shutting down"),
            );
        };
        let envelope = match Envelope::parse(message) {
            Ok(envelope) => envelope,
            Err(error) => {
                return rejected(
                    None,
                    ErrorObject::new(jsonrpc::PARSE_ERROR, format!("parse error: {error}")),
                );
            }
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
            Kind::Request => self.on_request(&hub, &envelope),
            Kind::Notification => {
                self.on_notification(&hub, &envelope);
                Inbound::Accepted
            }
            Kind::Response => {
                self.on_response(&hub, &envelope);
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
        let method = envelope.method.as_deref().expect("a request has a method");
        let (reply, messages) = mpsc::unbounded_channel();
        let immediate = match method {
            "initialize" => Some(self.initialize(envelope.params)),
            "ping" => Some(Ok("{}".to_owned())),
            "tools/list" => Some(list(envelope.params, || hub.catalog().tools_result.clone())),
            "prompts/list" => Some(list(envelope.params, || {
                hub.catalog().prompts_result.clone()
            })),
            "resources/list" => Some(list(envelope.params, || {
                hub.catalog().resources_result.clone()
            })),
            "resources/templates/list" => Some(list(envelope.params, || {
                hub.catalog().templates_result.clone()
            })),
            "tools/call"
            | "prompts/get"
            | "resources/read"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "completion/complete" => self.call(hub, id, method, envelope.params, &reply),
            "logging/setLevel" => {
                let params = envelope.params.map(ToOwned::to_owned);
                let reply_id = id.to_owned();
                let engine = hub.engine.clone();
                let reply = reply.clone();
                tokio::spawn(async move {
                    set_log_level(&engine, params.as_deref()).await;
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
            id: id.get().into(),
            initialize: method == "initialize",
        })
    }

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
            .and_then(|raw| ObjectEntries::parse(raw.get()).ok())
            .map(|caps| ClientCapabilities {
                sampling: caps.get("sampling").is_some(),
                elicitation: caps.get("elicitation").is_some(),
                roots: caps.get("roots").is_some(),
            })
            .unwrap_or_default();
        {
            let mut state = self.lock_state();
            state.protocol_version = Some(version.clone());
            state.capabilities = capabilities;
        }
        let result = serde_json::json!({
            "protocolVersion": version,
            "capabilities": {
                "tools": { "listChanged": true },
                "prompts": { "listChanged": true },
                "resources": { "subscribe": true, "listChanged": true },
                "logging": {},
                "completions": {},
            },
            "serverInfo": { "name": "switchboard", "title": "Switchboard", "version": env!("CARGO_PKG_VERSION") },
            "instructions": "Switchboard offers the tools, prompts and resources of several MCP servers; \
                tool and prompt names are prefixed with the server's name and two underscores.",
        });
        Ok(result.to_string())
    }

    /// Routes a call to its owning backend and starts it. A name the catalog does not know
    /// while a rebuild is due (a backend just became ready) waits for that rebuild first.
    fn call(
        &self,
        hub: &Arc<HubInner>,
        id: &RawValue,
        method: &str,
        params: Option<&RawValue>,
        reply: &mpsc::UnboundedSender<Vec<u8>>,
    ) -> Option<Result<String, ErrorObject>> {
        let mut rebuilt = hub.rebuilt.subscribe();
        match self.route(hub, method, params) {
            Ok(routed) => {
                self.start_routed(id, method, params, routed, reply.clone());
                None
            }
            Err(_) if hub.catalog_due() => {
                let session = self.clone();
                let hub = hub.clone();
                let id = id.to_owned();
                let method = method.to_owned();
                let params = params.map(ToOwned::to_owned);
                let reply = reply.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(CATALOG_WAIT, rebuilt.changed()).await;
                    match session.route(&hub, &method, params.as_deref()) {
                        Ok(routed) => {
                            session.start_routed(&id, &method, params.as_deref(), routed, reply)
                        }
                        Err(error) => {
                            let _ = reply.send(response(&id, Err(error)));
                        }
                    }
                });
                None
            }
            Err(error) => Some(Err(error)),
        }
    }

    fn start_routed(
        &self,
        id: &RawValue,
        method: &str,
        params: Option<&RawValue>,
        (backend, rewritten, progress): Routed,
        reply: mpsc::UnboundedSender<Vec<u8>>,
    ) {
        let subscription = match method {
            "resources/subscribe" | "resources/unsubscribe" => params
                .and_then(|params| ObjectEntries::parse(params.get()).ok())
                .and_then(|params| params.get_str("uri").map(|uri| uri.into_owned()))
                .map(|uri| (method == "resources/subscribe", uri)),
            _ => None,
        };
        let call = Call {
            method: method.to_owned(),
            backend,
            params: rewritten,
            progress,
            subscription,
        };
        self.start_call(id, call, reply);
    }

    /// Finds the owning backend and rewrites the params it will receive.
    fn route(
        &self,
        hub: &Arc<HubInner>,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Routed, ErrorObject> {
        let params = params.ok_or_else(|| invalid_params(format!("{method} needs params")))?;
        let mut entries = ObjectEntries::parse(params.get())
            .map_err(|_| invalid_params("params must be an object"))?;
        let catalog = hub.catalog();
        let backend_name: Arc<str> = match method {
            "tools/call" | "prompts/get" => {
                let (routes, unlisted, kind) = if method == "tools/call" {
                    (&catalog.tools, &catalog.unlisted_tools, "tool")
                } else {
                    (&catalog.prompts, &catalog.unlisted_prompts, "prompt")
                };
                let name = entries
                    .get_str("name")
                    .ok_or_else(|| invalid_params(format!("{method} needs a name")))?;
                let route = routes
                    .get(&*name)
                    .or_else(|| unlisted.get(&*name))
                    .ok_or_else(|| invalid_params(format!("unknown {kind}: {name}")))?;
                let backend = route.backend.clone();
                entries.set("name", json_string(&route.name));
                backend
            }
            "completion/complete" => {
                let reference = entries
                    .get("ref")
                    .ok_or_else(|| invalid_params("completion/complete needs a ref"))?;
                let mut reference = ObjectEntries::parse(reference.get())
                    .map_err(|_| invalid_params("ref must be an object"))?;
                let backend = match reference.get_str("type").as_deref() {
                    Some("ref/prompt") => {
                        let name = reference
                            .get_str("name")
                            .ok_or_else(|| invalid_params("ref/prompt needs a name"))?;
                        let route = catalog
                            .prompts
                            .get(&*name)
                            .ok_or_else(|| invalid_params(format!("unknown prompt: {name}")))?;
                        let backend = route.backend.clone();
                        reference.set("name", json_string(&route.name));
                        backend
                    }
                    Some("ref/resource") => {
                        let uri = reference
                            .get_str("uri")
                            .ok_or_else(|| invalid_params("ref/resource needs a uri"))?;
                        catalog
                            .resource_owner(&uri)
                            .map_err(|message| ErrorObject::new(RESOURCE_NOT_FOUND, message))?
                    }
                    _ => {
                        return Err(invalid_params(
                            "ref.type must be ref/prompt or ref/resource",
                        ));
                    }
                };
                let reference = RawValue::from_string(reference.to_json())
                    .expect("rewritten objects are valid JSON");
                entries.set("ref", reference);
                backend
            }
            _ => {
                let uri = entries
                    .get_str("uri")
                    .ok_or_else(|| invalid_params(format!("{method} needs a uri")))?;
                catalog
                    .resource_owner(&uri)
                    .map_err(|message| ErrorObject::new(RESOURCE_NOT_FOUND, message))?
            }
        };
        let backend = hub.engine.backend(&backend_name).ok_or_else(|| {
            ErrorObject::new(
                jsonrpc::BACKEND_UNAVAILABLE,
                format!("backend {backend_name} is not configured"),
            )
        })?;
        let progress = self.rewrite_progress_token(hub, &mut entries);
        let params =
            RawValue::from_string(entries.to_json()).expect("rewritten objects are valid JSON");
        Ok((backend, params, progress))
    }

    /// Replaces the client's progress token (only if it sent one) with one unique to the hub.
    fn rewrite_progress_token(
        &self,
        hub: &Arc<HubInner>,
        entries: &mut ObjectEntries<'_>,
    ) -> Option<ProgressToken> {
        let (ours, original) = rewrite::replace_progress_token(entries, || {
            format!(
                "switchboard-{}-{}",
                self.id(),
                hub.next_id.fetch_add(1, Ordering::Relaxed)
            )
        })?;
        Some(ProgressToken { ours, original })
    }

    fn start_call(&self, id: &RawValue, call: Call, reply: mpsc::UnboundedSender<Vec<u8>>) {
        let id_key = id.get().to_owned();
        let cancel = self.shared.closed.child_token();
        {
            let mut state = self.lock_state();
            if state.in_flight.contains_key(&id_key) {
                let error = ErrorObject::new(
                    jsonrpc::INVALID_REQUEST,
                    format!("request id {id_key} is already in use"),
                );
                let _ = reply.send(response(id, Err(error)));
                return;
            }
            state.in_flight.insert(
                id_key.clone(),
                InFlight {
                    cancel: cancel.clone(),
                    backend: Arc::from(call.backend.name()),
                    started: Instant::now(),
                    reply: reply.clone(),
                },
            );
        }
        let id = id.to_owned();
        let session = self.clone();
        tokio::spawn(async move {
            let outcome = tokio::select! {
                biased;
                _ = cancel.cancelled() => None,
                _ = reply.closed() => None,
                result = call.run(&reply) => Some(result),
            };
            {
                let mut state = session.lock_state();
                state.in_flight.remove(&id_key);
                if let (Some(Ok(_)), Some((subscribe, uri))) = (&outcome, &call.subscription) {
                    if *subscribe {
                        state.subscriptions.insert(uri.clone());
                    } else {
                        state.subscriptions.remove(uri);
                    }
                }
            }
            if let Some(result) = outcome {
                let _ = reply.send(response(&id, result));
            }
        });
    }

    fn on_notification(&self, hub: &Arc<HubInner>, envelope: &Envelope<'_>) {
        match envelope
            .method
            .as_deref()
            .expect("a notification has a method")
        {
            "notifications/initialized" => self.lock_state().initialized = true,
            "notifications/cancelled" => {
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
            "notifications/roots/list_changed" => {
                for backend in hub.engine.backends() {
                    if backend.status().state == BackendState::Ready {
                        tokio::spawn(async move {
                            let _ = backend
                                .notify("notifications/roots/list_changed", None)
                                .await;
                        });
                    }
                }
            }
            other => tracing::debug!(session = self.id(), method = other, "notification ignored"),
        }
    }

    fn on_response(&self, hub: &Arc<HubInner>, envelope: &Envelope<'_>) {
        let id = envelope.id.expect("a response has an id");
        let Ok(our_id) = id.get().parse::<u64>() else {
            return;
        };
        let bound = {
            let mut routes = hub.lock_routes();
            match routes.to_clients.get(&our_id) {
                Some(bound) if bound.session == self.id() => routes.to_clients.remove(&our_id),
                _ => None,
            }
        };
        let Some(ClientBound { request, .. }) = bound else {
            tracing::debug!(
                session = self.id(),
                id = id.get(),
                "response to no request of ours"
            );
            return;
        };
        let result = envelope.result.map(ToOwned::to_owned);
        let error = envelope.error.map(|raw| {
            serde_json::from_str::<ErrorObject>(raw.get()).unwrap_or_else(|_| {
                ErrorObject::new(jsonrpc::INTERNAL_ERROR, "the editor sent a malformed error")
            })
        });
        tokio::spawn(async move {
            let outcome = match (&result, &error) {
                (Some(result), _) => Ok(&**result),
                (None, Some(error)) => Err(error),
                (None, None) => return,
            };
            let _ = request.connection.respond(&request.id, outcome).await;
        });
    }

    /// Sends a message that belongs to no request of this session.
    fn send_event(&self, message: Vec<u8>) {
        if self.shared.events.try_send(message).is_err() {
            tracing::warn!(
                session = self.id(),
                "session event queue full or closed; message dropped"
            );
        }
    }

    /// Cancels every call in flight and fails what this session was asked.
    fn shut(&self) {
        self.shared.closed.cancel();
        let Some(hub) = self.shared.hub.upgrade() else {
            return;
        };
        let abandoned: Vec<ClientBound> = {
            let mut routes = hub.lock_routes();
            let ids: Vec<u64> = routes
                .to_clients
                .iter()
                .filter(|(_, bound)| bound.session == self.id())
                .map(|(id, _)| *id)
                .collect();
            ids.into_iter()
                .filter_map(|id| routes.to_clients.remove(&id))
                .collect()
        };
        for bound in abandoned {
            tokio::spawn(async move {
                let error = ErrorObject::new(
                    jsonrpc::INTERNAL_ERROR,
                    "the editor session that was asked has closed",
                );
                let _ = bound
                    .request
                    .connection
                    .respond(&bound.request.id, Err(&error))
                    .await;
            });
        }
    }

    fn lock_state(&self) -> std::sync::MutexGuard<'_, SessionState> {
        self.shared
            .state
            .lock()
            .expect("session state lock is never poisoned")
    }
}

/// The resource was not found (MCP's code for it).
const RESOURCE_NOT_FOUND: i64 = -32002;

/// A client's progress token and the one the backend sees instead.
struct ProgressToken {
    ours: String,
    original: Box<RawValue>,
}

/// One call routed to a backend.
struct Call {
    method: String,
    backend: BackendHandle,
    params: Box<RawValue>,
    progress: Option<ProgressToken>,
    /// For `resources/subscribe` (true) and `resources/unsubscribe` (false): the URI.
    subscription: Option<(bool, String)>,
}

impl Call {
    /// Sends the call once the backend is ready, starting it on demand, within its deadline.
    /// Its progress notifications go to `reply` with the client's own token, all before the
    /// answer.
    async fn run(&self, reply: &mpsc::UnboundedSender<Vec<u8>>) -> Result<String, ErrorObject> {
        let deadline = self.backend.config().request_timeout;
        let started = Instant::now();
        ready_backend(&self.backend, deadline).await?;
        let remaining = deadline.saturating_sub(started.elapsed());
        let (sink, mut progress) = match &self.progress {
            Some(token) => {
                let (sender, progress) = mpsc::unbounded_channel();
                let token_json = json_string(&token.ours).get().to_owned();
                (
                    Some(ProgressSink {
                        token: token_json,
                        sender,
                    }),
                    Some(progress),
                )
            }
            None => (None, None),
        };
        let call =
            self.backend
                .request_with_progress(&self.method, Some(&self.params), remaining, sink);
        tokio::pin!(call);
        let result = loop {
            let next_progress = async {
                match progress.as_mut() {
                    Some(progress) => progress.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                result = &mut call => break result,
                Some(params) = next_progress => self.forward_progress(reply, &params),
            }
        };
        // Progress sent before the answer was queued before it too.
        if let Some(progress) = progress.as_mut() {
            while let Ok(params) = progress.try_recv() {
                self.forward_progress(reply, &params);
            }
        }
        match result {
            Ok(result) => Ok(result.get().to_owned()),
            Err(error) => Err(error.to_error_object()),
        }
    }

    /// Sends a progress notification on with the client's own token.
    fn forward_progress(&self, reply: &mpsc::UnboundedSender<Vec<u8>>, params: &RawValue) {
        let Some(token) = &self.progress else { return };
        let Some(params) = rewrite::replace_field(params, "progressToken", token.original.clone())
        else {
            return;
        };
        let _ = reply.send(notification("notifications/progress", Some(&params)));
    }
}

/// Waits until `backend` is ready (starting it if it is stopped and may start on demand).
async fn ready_backend(backend: &BackendHandle, deadline: Duration) -> Result<(), ErrorObject> {
    let status = backend.status();
    let unavailable = |state: BackendState| {
        CallError::Unavailable {
            backend: backend.name().to_owned(),
            state,
        }
        .to_error_object()
    };
    match status.state {
        BackendState::Ready => return Ok(()),
        BackendState::Stopped if backend.config().start_on_demand => {
            return match tokio::time::timeout(deadline, backend.start()).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(error)) => Err(ErrorObject::new(
                    jsonrpc::BACKEND_UNAVAILABLE,
                    error.to_string(),
                )),
                Err(_) => Err(unavailable(BackendState::Starting)),
            };
        }
        BackendState::Starting | BackendState::Backoff => {}
        other => return Err(unavailable(other)),
    }
    let mut watch = backend.watch_status();
    let ready = watch.wait_for(|status| {
        matches!(
            status.state,
            BackendState::Ready | BackendState::Stopped | BackendState::CrashLoop
        )
    });
    match tokio::time::timeout(deadline, ready).await {
        Ok(Ok(status)) if status.state == BackendState::Ready => Ok(()),
        Ok(Ok(status)) => Err(unavailable(status.state)),
        _ => Err(unavailable(backend.status().state)),
    }
}

async fn set_log_level(engine: &Engine, params: Option<&RawValue>) {
    let mut calls = Vec::new();
    for backend in engine.backends() {
        let status = backend.status();
        let logs = status.server.as_ref().is_some_and(|server| {
            ObjectEntries::parse(server.capabilities.get())
                .is_ok_and(|caps| caps.get("logging").is_some())
        });
        if status.state == BackendState::Ready && logs {
            let backend = backend.clone();
            let params = params.map(ToOwned::to_owned);
            calls.push(tokio::spawn(async move {
                if let Err(error) = backend.request("logging/setLevel", params.as_deref()).await {
                    tracing::debug!(backend = backend.name(), %error, "logging/setLevel");
                }
            }));
        }
    }
    for call in calls {
        let _ = call.await;
    }
}

/// A list method's answer: everything in one page (a cursor we never gave out is an error).
fn list(params: Option<&RawValue>, result: impl FnOnce() -> String) -> Result<String, ErrorObject> {
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
    Ok(result())
}

fn invalid_params(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(jsonrpc::INVALID_PARAMS, message)
}

/// A request id worth echoing: a string or a number.
fn valid_id(id: Option<&RawValue>) -> Option<&RawValue> {
    id.filter(|id| {
        let text = id.get();
        text.starts_with('"')
            || text.starts_with('-')
            || text.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// One response, as JSON text without a newline.
fn response(id: &RawValue, result: Result<String, ErrorObject>) -> Vec<u8> {
    let mut line = match result {
        Ok(result) => {
            let result = RawValue::from_string(result).expect("results are valid JSON");
            jsonrpc::result_line(id, &result)
        }
        Err(error) => jsonrpc::error_line(Some(id), &error),
    };
    line.pop();
    line
}

fn rejected(id: Option<&RawValue>, error: ErrorObject) -> Inbound {
    let mut line = jsonrpc::error_line(id, &error);
    line.pop();
    Inbound::Rejected(line)
}

fn notification(method: &str, params: Option<&RawValue>) -> Vec<u8> {
    let mut line = jsonrpc::notification_line(method, params);
    line.pop();
    line
}

/// 128 random bits as hex.
fn random_id() -> String {
    let bits: u128 = rand::random();
    format!("{bits:032x}")
}

/// Rebuilds the merged catalog from every backend's status; tells sessions what changed.
fn rebuild_catalog(
    hub: &HubInner,
    cache: &CatalogCache,
    known: &mut HashMap<String, Arc<crate::supervisor::status::Catalog>>,
) {
    hub.unseen_changes
        .lock()
        .expect("the change receiver lock is never poisoned")
        .mark_unchanged();
    let handles = hub.engine.backends();
    let statuses: Vec<_> = handles.iter().map(|handle| handle.status()).collect();
    let configs: Vec<_> = handles.iter().map(|handle| handle.config()).collect();
    for (handle, status) in handles.iter().zip(&statuses) {
        let name = handle.name();
        if status.state == BackendState::Ready {
            let changed = known
                .get(name)
                .is_none_or(|previous| !Arc::ptr_eq(previous, &status.catalog));
            if changed {
                cache.store(name, &status.catalog);
                known.insert(name.to_owned(), status.catalog.clone());
            }
        } else if !known.contains_key(name)
            && let Some(cached) = cache.load(name)
        {
            known.insert(name.to_owned(), cached);
        }
    }
    let sources: Vec<Source<'_>> = configs
        .iter()
        .zip(&statuses)
        .map(|(config, status)| Source {
            config,
            catalog: known.get(&config.name).cloned(),
            listed: catalog::is_listed(config, status),
        })
        .collect();
    let merged = Arc::new(catalog::merge(&sources));
    let changes = {
        let mut current = hub.catalog.write().expect("catalog lock is never poisoned");
        let changes = merged.changes_from(&current);
        *current = merged;
        changes
    };
    hub.rebuilt.send_replace(());
    let methods = [
        (changes.tools, "notifications/tools/list_changed"),
        (changes.prompts, "notifications/prompts/list_changed"),
        (changes.resources, "notifications/resources/list_changed"),
    ];
    for (changed, method) in methods {
        if !changed {
            continue;
        }
        for session in hub.sessions() {
            if session.lock_state().initialized {
                session.send_event(notification(method, None));
            }
        }
    }
}

/// Rebuilds the catalog whenever a backend publishes a new status or the set of backends changes.
async fn maintain_catalog(hub: Weak<HubInner>, cache: CatalogCache, stop: CancellationToken) {
    let mut changes = {
        let Some(hub) = hub.upgrade() else { return };
        hub.engine.changes()
    };
    let mut known = HashMap::new();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            changed = changes.changed() => if changed.is_err() { break },
        }
        tokio::time::sleep(CATALOG_SETTLE).await;
        changes.mark_unchanged();
        let Some(hub) = hub.upgrade() else { break };
        rebuild_catalog(&hub, &cache, &mut known);
    }
}

/// Delivers backends' notifications to the sessions they concern.
async fn route_notifications(
    hub: Weak<HubInner>,
    mut notifications: broadcast::Receiver<BackendNotification>,
    stop: CancellationToken,
) {
    loop {
        let note = tokio::select! {
            _ = stop.cancelled() => break,
            note = notifications.recv() => note,
        };
        let note = match note {
            Ok(note) => note,
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "notifications from backends were dropped under load"
                );
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => break,
        };
        let Some(hub) = hub.upgrade() else { break };
        route_notification(&hub, &note);
    }
}

fn route_notification(hub: &HubInner, note: &BackendNotification) {
    let params = note.params.as_deref();
    let entries = params.and_then(|params| ObjectEntries::parse(params.get()).ok());
    match note.method.as_str() {
        // Progress of a call in flight goes straight to its caller (see `Call::run`); what
        // arrives here belongs to no call any more.
        "notifications/progress" => {}
        "notifications/resources/updated" => {
            let Some(uri) = entries.as_ref().and_then(|entries| entries.get_str("uri")) else {
                return;
            };
            for session in hub.sessions() {
                if session.lock_state().subscriptions.contains(&*uri) {
                    session.send_event(notification(&note.method, params));
                }
            }
        }
        "notifications/tools/list_changed"
        | "notifications/prompts/list_changed"
        | "notifications/resources/list_changed" => {}
        "notifications/cancelled" => {
            let Some(request_id) = entries
                .as_ref()
                .and_then(|entries| entries.get("requestId"))
            else {
                return;
            };
            let routes = hub.lock_routes();
            let found = routes.to_clients.iter().find(|(_, bound)| {
                bound.request.backend == note.backend && bound.request.id.get() == request_id.get()
            });
            let Some((our_id, bound)) = found else { return };
            // Only the id changes: the reason and anything else go to the client as they came.
            let our_id = RawValue::from_string(our_id.to_string()).expect("a number is valid JSON");
            let Some(params) =
                params.and_then(|params| rewrite::replace_field(params, "requestId", our_id))
            else {
                return;
            };
            if let Some(session) = hub.lock_sessions().get(&bound.session) {
                session.send_event(notification(&note.method, Some(&params)));
            }
        }
        _ => {
            // Log messages and anything newer: to the sessions waiting on this backend, else to all.
            let sessions = hub.sessions();
            let waiting: Vec<&Session> = sessions
                .iter()
                .filter(|session| {
                    session
                        .lock_state()
                        .in_flight
                        .values()
                        .any(|call| call.backend == note.backend)
                })
                .collect();
            let targets: Vec<&Session> = if waiting.is_empty() {
                sessions.iter().collect()
            } else {
                waiting
            };
            for session in targets {
                session.send_event(notification(&note.method, params));
            }
        }
    }
}

/// Sends backends' requests (sampling, elicitation, roots) to the session best placed to answer.
async fn route_server_requests(
    hub: Weak<HubInner>,
    mut requests: mpsc::UnboundedReceiver<ServerRequest>,
    stop: CancellationToken,
) {
    loop {
        let request = tokio::select! {
            _ = stop.cancelled() => break,
            request = requests.recv() => match request {
                Some(request) => request,
                None => break,
            },
        };
        let Some(hub) = hub.upgrade() else { break };
        route_server_request(&hub, request);
    }
}

/// A session to ask, and the reply channel of its call that caused the request, if known.
type ChosenSession = (Session, Option<mpsc::UnboundedSender<Vec<u8>>>);

/// Picks the session that should answer a backend's request.
///
/// Over stdio nothing in the request says which call caused it. If exactly one session has
/// calls in flight at that backend, it caused the request. If several do, the hub cannot tell
/// which, and guessing could show one editor's prompt to another: the backend gets an error
/// instead. With no call in flight (roots/list after a start, say), any session that declared
/// the capability answers, the most recently active first.
fn choose_session(hub: &HubInner, request: &ServerRequest) -> Result<ChosenSession, ErrorObject> {
    let capable = |capabilities: ClientCapabilities| match request.method.as_str() {
        "sampling/createMessage" => capabilities.sampling,
        "elicitation/create" => capabilities.elicitation,
        "roots/list" => capabilities.roots,
        _ => true,
    };
    let mut callers = Vec::new();
    let mut idle: Option<(Instant, Session)> = None;
    for session in hub.sessions() {
        let state = session.lock_state();
        let latest = state
            .in_flight
            .values()
            .filter(|call| call.backend == request.backend)
            .max_by_key(|call| call.started)
            .map(|call| call.reply.clone());
        let active = state.last_active;
        let able = capable(state.capabilities);
        drop(state);
        match latest {
            Some(reply) => callers.push((session, able, reply)),
            None if able => {
                let active = active.unwrap_or_else(Instant::now);
                if idle.as_ref().is_none_or(|(best, _)| active > *best) {
                    idle = Some((active, session));
                }
            }
            None => {}
        }
    }
    match callers.len() {
        0 => idle.map(|(_, session)| (session, None)).ok_or_else(|| {
            ErrorObject::new(
                jsonrpc::METHOD_NOT_FOUND,
                format!(
                    "no connected editor supports {} (asked by backend {})",
                    request.method, request.backend
                ),
            )
        }),
        1 => {
            let (session, able, reply) = callers.pop().expect("one caller");
            if able {
                Ok((session, Some(reply)))
            } else {
                Err(ErrorObject::new(
                    jsonrpc::METHOD_NOT_FOUND,
                    format!(
                        "the editor calling backend {} does not support {}",
                        request.backend, request.method
                    ),
                ))
            }
        }
        n => {
            tracing::warn!(backend = %request.backend, method = %request.method, editors = n,
                "cannot tell which editor's call caused this request; refusing it");
            Err(ErrorObject::new(
                jsonrpc::INTERNAL_ERROR,
                format!(
                    "{n} editors have calls in flight at backend {}, and nothing tells which one {} is for",
                    request.backend, request.method
                ),
            ))
        }
    }
}

fn route_server_request(hub: &HubInner, request: ServerRequest) {
    let (session, related) = match choose_session(hub, &request) {
        Ok(chosen) => chosen,
        Err(error) => {
            tokio::spawn(async move {
                let _ = request.connection.respond(&request.id, Err(&error)).await;
            });
            return;
        }
    };
    let our_id = hub.next_id.fetch_add(1, Ordering::Relaxed);
    let id = RawValue::from_string(our_id.to_string()).expect("a number is valid JSON");
    let mut message = jsonrpc::request_line(id.get(), &request.method, request.params.as_deref());
    message.pop();
    hub.lock_routes().to_clients.insert(
        our_id,
        ClientBound {
            session: session.id().to_owned(),
            request,
        },
    );
    match related {
        Some(reply) if reply.send(message.clone()).is_ok() => {}
        _ => session.send_event(message),
    }
}
