//! The hub: one MCP server made of every backend.
//!
//! [`start`] starts an engine and the [`Hub`] over it; the caller owns both. Each editor connection
//! is a [`Session`] (`session.rs`) in one profile, whose `initialize`, `ping` and list methods the
//! hub answers itself (`answers.rs`, for both eras) from the profile's merged catalog
//! ([`catalog`], `names.rs`). A call goes to its owning backend with its name rewritten and its
//! progress token and cancellation remapped (`call/`). What backends send on their own,
//! notifications and requests (sampling, elicitation, roots), goes to the sessions it concerns
//! (`upstream.rs`). Client request ids never reach a backend: the connection to each backend has
//! its own id space.
//!
//! Floor 6 of the workspace (ARCHITECTURE.md). It stands on the floors below and never on a
//! transport: it takes parsed messages and hands back answers.

pub mod approvals;
pub mod catalog;
pub(crate) mod list_result;
pub(crate) mod names;
pub mod rewrite;

mod answers;
pub mod budget;
mod call;
mod capabilities;
mod cold_start;
pub mod pins;
pub mod questions;
mod recorded;
pub mod reply;
pub(crate) mod search;
mod session;
mod stateless;
mod subscriptions;
mod tasks;
mod upstream;
pub mod waitlist;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use tokio::sync::{Notify, mpsc, watch};
use tokio_util::sync::CancellationToken;

use activity::ActivityLog;
use approvals::Approvals;
use catalog::{CatalogCache, MergedCatalog, Source};
use config::{BackendConfig, DEFAULT_PROFILE, Profile};
use pins::Pins;
use questions::Questions;
use reply::{Notification, Response};
use rewrite::json_string;
use stateless::Parked;
use stateless::request_state::Sealer;
use supervisor::spawn::ProcessGroups;
use supervisor::status::{BackendState, Catalog};
use supervisor::{Engine, EngineOptions, ServerRequest};
use tasks::ids::TaskSeal;
use upstream::ForwardedRequest;
use wire::jsonrpc::{self, Envelope, ErrorObject};
use wire::method::Method;

pub use answers::unsupported_version;
pub use reply::{Reply, SessionEvent};
pub use session::Session;
pub use stateless::RequestHeaders;
pub use stateless::{is_stateless, is_stateless_envelope};

/// The protocol versions editors may speak with the hub, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] = supervisor::SUPPORTED_PROTOCOL_VERSIONS;

/// How many times one call may ask its editor for input before it is ended, in either era.
const MAX_INPUT_ROUNDS: u32 = 8;

const SESSION_EVENTS_CAPACITY: usize = 1024;
/// How long rebuilding the catalog waits for more changes to arrive before it runs.
const CATALOG_SETTLE: Duration = Duration::from_millis(20);

/// What became of one message a client sent.
pub enum Inbound {
    /// A request: messages related to it (progress, server-to-client requests) and finally its
    /// response arrive on the reply's channel, which closes after the response. Dropping the
    /// receiver before the response cancels the request at the backend.
    Request(RequestReply),
    /// A notification or a response was taken; there is nothing to answer.
    Accepted,
    /// The message cannot be taken; this error response is the answer.
    Rejected(Response),
}

/// The messages belonging to one client request, its response last.
pub struct RequestReply {
    pub messages: mpsc::UnboundedReceiver<Reply>,
    /// The request's id, as the client wrote it.
    pub id: Box<RawValue>,
    /// Whether the request is `initialize`.
    pub initialize: bool,
    /// Whether the reply is best streamed: a 2026-07-28 request that asked for progress or log
    /// messages, or opened a listen stream. (A session's requests leave it to the transport.)
    pub streamed: bool,
}

/// Messages for the session not tied to any of its requests (list_changed, resource updates,
/// log messages, server-to-client requests no request explains).
pub type SessionEvents = mpsc::Receiver<SessionEvent>;

/// Settings of the hub.
#[derive(Default, Clone)]
pub struct HubOptions {
    /// Where the last known catalog of each backend is kept; `None` keeps nothing.
    pub catalog_cache: Option<PathBuf>,
    /// The profiles served (see [`Hub::set_profiles`]); none serves the default one, offering
    /// everything.
    pub profiles: Vec<Profile>,
    /// Sign-in to remote servers, for the engine's links to them.
    pub auth: Option<Arc<auth::Auth>>,
    /// Where every call routed to a server is recorded; `None` records nothing.
    pub activity: Option<ActivityLog>,
    /// Where each server's tool pins are kept (see [`pins`]); `None` keeps them in memory.
    pub pins_dir: Option<PathBuf>,
    /// A tool never seen before waits for approval (`[security] approve_new_tools`).
    pub approve_new_tools: bool,
}

/// The hub shared by every transport. Cheap to clone.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<HubInner>,
}

struct HubInner {
    engine: Arc<Engine>,
    /// The profiles served, the default one first.
    profiles: RwLock<Arc<[Profile]>>,
    /// Told when the profiles change, so that the catalogs are rebuilt.
    profiles_changed: watch::Sender<()>,
    catalogs: RwLock<Arc<Catalogs>>,
    sessions: Mutex<HashMap<String, Session>>,
    /// Our id of a request sent to a client → the backend's request it stands for.
    forwarded_requests: Mutex<HashMap<u64, ForwardedRequest>>,
    /// Seals the `requestState` of calls parked for a 2026-07-28 editor's answer.
    sealer: Sealer,
    /// Seals the task ids editors see to their owners (see [`tasks::ids`]).
    task_seal: TaskSeal,
    /// Parked calls by id, each waiting for the editor's retry (see [`stateless`]).
    parked: Mutex<HashMap<String, Parked>>,
    /// How many 2026-07-28 listen streams are open.
    listens: AtomicUsize,
    /// Session-era tasks whose questions wait for a 2026-07-28 editor, by exposed task id (see
    /// [`tasks::bridge`]).
    task_inputs: Mutex<HashMap<String, Arc<tasks::bridge::TaskInputs>>>,
    /// Tasks Switchboard holds for session-era backends (see [`tasks::held`]).
    client_tasks: Arc<tasks::held::ClientTasks>,
    next_id: AtomicU64,
    stop: CancellationToken,
    /// Changes since the catalog was last rebuilt: marked seen as each rebuild starts.
    unseen_changes: Mutex<Unseen>,
    /// How many rebuilds have begun: each counts itself as it marks the changes seen.
    rebuilds_begun: AtomicU64,
    /// The count of the last rebuild finished, told after each.
    rebuilt: watch::Sender<u64>,
    /// Told when a list or call waits for a rebuild that is due: it is made at once instead of
    /// after [`CATALOG_SETTLE`].
    rebuild_now: Arc<Notify>,
    activity: Option<ActivityLog>,
    /// Tool definitions pinned; a changed one is left out of every catalog until approved.
    pins: Pins,
    /// Calls waiting for a person's yes.
    approvals: Approvals,
    /// Servers' questions waiting for a person.
    questions: Questions,
}

impl Hub {
    /// The hub over `engine`, which sends the requests of its backends to `server_requests` (the
    /// receiving end of [`EngineOptions::server_requests`]); see [`start`].
    fn new(
        engine: Arc<Engine>,
        server_requests: mpsc::UnboundedReceiver<ServerRequest>,
        options: HubOptions,
    ) -> Hub {
        let pins = Pins::new(options.pins_dir, options.approve_new_tools);
        let profiles_changed = watch::channel(()).0;
        let unseen_changes = Mutex::new(Unseen {
            engine: engine.changes(),
            profiles: profiles_changed.subscribe(),
            pins: pins.revisions(),
        });
        let inner = Arc::new(HubInner {
            activity: options.activity,
            pins,
            approvals: Approvals::default(),
            questions: Questions::default(),
            profiles: RwLock::new(served_profiles(options.profiles).into()),
            profiles_changed,
            catalogs: RwLock::new(Arc::new(Catalogs::default())),
            sessions: Mutex::new(HashMap::new()),
            forwarded_requests: Mutex::new(HashMap::new()),
            sealer: Sealer::new(),
            task_seal: TaskSeal::new(),
            parked: Mutex::new(HashMap::new()),
            listens: AtomicUsize::new(0),
            task_inputs: Mutex::new(HashMap::new()),
            client_tasks: Arc::default(),
            next_id: AtomicU64::new(1),
            stop: CancellationToken::new(),
            unseen_changes,
            rebuilds_begun: AtomicU64::new(0),
            rebuilt: watch::channel(0).0,
            rebuild_now: Arc::new(Notify::new()),
            engine: engine.clone(),
        });
        let cache = CatalogCache::new(options.catalog_cache);
        rebuild_catalog(&inner, &cache, &mut HashMap::new());
        tokio::spawn(maintain_catalog(
            Arc::downgrade(&inner),
            cache,
            inner.stop.clone(),
        ));
        tokio::spawn(upstream::route_notifications(
            Arc::downgrade(&inner),
            engine.notifications(),
            inner.stop.clone(),
        ));
        tokio::spawn(upstream::route_server_requests(
            Arc::downgrade(&inner),
            server_requests,
            inner.stop.clone(),
        ));
        Hub { inner }
    }

    /// Opens a new session of the default profile and returns it with its stream of unrelated
    /// messages.
    pub fn open_session(&self) -> (Session, SessionEvents) {
        self.inner.open_session(false, DEFAULT_PROFILE.into())
    }

    /// Opens a new session of `profile`; `None` when no such profile is served.
    pub fn open_session_in(&self, profile: &str) -> Option<(Session, SessionEvents)> {
        self.inner
            .serves(profile)
            .then(|| self.inner.open_session(false, profile.into()))
    }

    /// Whether `profile` is served.
    pub fn serves(&self, profile: &str) -> bool {
        self.inner.serves(profile)
    }

    /// What each profile's tool list costs a client, in the order of the profiles.
    pub fn budgets(&self) -> Vec<budget::Budget> {
        let backends = self.inner.engine.backends();
        let servers: Vec<&str> = backends.iter().map(|backend| backend.name()).collect();
        self.inner
            .profiles()
            .iter()
            .map(|profile| budget::measure(profile, &self.inner.catalog(&profile.name), &servers))
            .collect()
    }

    /// Serves `profiles` from now on (the default one is added if missing): the catalogs are
    /// rebuilt, and sessions whose profile's lists changed are told. A session of a profile
    /// that is gone sees empty lists.
    pub fn set_profiles(&self, profiles: Vec<Profile>) {
        let profiles: Arc<[Profile]> = served_profiles(profiles).into();
        let mut current = self
            .inner
            .profiles
            .write()
            .expect("profiles lock is never poisoned");
        if **current == *profiles {
            return;
        }
        *current = profiles;
        drop(current);
        self.inner.profiles_changed.send_replace(());
    }

    /// Takes one 2026-07-28 request (see [`is_stateless`]) to `profile` with the `Mcp-*`
    /// headers it came with over HTTP (none over stdio); dropping the reply's receiver ends it.
    pub fn receive_stateless(
        &self,
        message: &[u8],
        headers: Option<&RequestHeaders>,
        profile: &str,
    ) -> Inbound {
        match Envelope::parse(message) {
            Ok(envelope) => self.receive_stateless_envelope(&envelope, headers, profile),
            Err(error) => Inbound::Rejected(Response::parse_error(&error)),
        }
    }

    /// [`Hub::receive_stateless`] for a message its transport has parsed already.
    pub fn receive_stateless_envelope(
        &self,
        envelope: &Envelope<'_>,
        headers: Option<&RequestHeaders>,
        profile: &str,
    ) -> Inbound {
        stateless::receive(&self.inner, envelope, headers, profile.into())
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
                session.cancel_outstanding();
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
        call::ready_backend(&handle, deadline).await?;
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
            .request_with_timeout(&Method::ToolsCall, Some(&params), remaining)
            .await
            .map_err(|error| error.to_error_object())
    }

    /// Closes every session and stops routing; the engine, and so every backend, is its owner's
    /// to shut down.
    pub fn shutdown(&self) {
        let sessions: Vec<Session> = self
            .inner
            .lock_sessions()
            .drain()
            .map(|(_, session)| session)
            .collect();
        for session in sessions {
            session.cancel_outstanding();
        }
        self.inner.stop.cancel();
    }
}

/// Starts an engine for `configs` and a hub over it, wired so that the backends' requests reach
/// the hub. The caller owns both: it hands the engine to whatever else controls backends, and
/// shuts it down after the hub.
pub fn start(
    configs: Vec<BackendConfig>,
    groups: Arc<ProcessGroups>,
    options: HubOptions,
) -> (Arc<Engine>, Hub) {
    let (server_requests, from_backends) = mpsc::unbounded_channel();
    let engine = Arc::new(Engine::start(
        configs,
        EngineOptions {
            groups,
            server_requests: Some(server_requests),
            auth: options.auth.clone(),
        },
    ));
    (engine.clone(), Hub::new(engine, from_backends, options))
}

impl Hub {
    /// The activity log the hub records calls in, if it has one.
    pub fn activity(&self) -> Option<&ActivityLog> {
        self.inner.activity.as_ref()
    }

    /// The calls waiting for a person's yes, and answering them.
    pub fn approvals(&self) -> &Approvals {
        &self.inner.approvals
    }

    pub fn questions(&self) -> &Questions {
        &self.inner.questions
    }

    /// The tool pins: what is held back, and approving it.
    pub fn pins(&self) -> &Pins {
        &self.inner.pins
    }
}

impl HubInner {
    /// Opens a session; a stateless one belongs to one 2026-07-28 request.
    fn open_session(
        self: &Arc<Self>,
        stateless: bool,
        profile: Arc<str>,
    ) -> (Session, SessionEvents) {
        let (events, events_rx) = mpsc::channel(SESSION_EVENTS_CAPACITY);
        let session = Session::new(
            random_id(),
            Arc::downgrade(self),
            events,
            self.stop.child_token(),
            stateless,
            profile,
        );
        self.lock_sessions()
            .insert(session.id().to_owned(), session.clone());
        (session, events_rx)
    }

    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.sessions
            .lock()
            .expect("session map lock is never poisoned")
    }

    fn lock_task_inputs(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, Arc<tasks::bridge::TaskInputs>>> {
        self.task_inputs
            .lock()
            .expect("task inputs lock is never poisoned")
    }

    /// Whether the engine changed since the catalog was last rebuilt, so a rebuild is due.
    fn catalog_due(&self) -> bool {
        self.unseen_changes
            .lock()
            .expect("the change receiver lock is never poisoned")
            .any()
    }

    /// The merged catalog `profile` serves; empty for a profile that does not exist (any more).
    fn catalog(&self, profile: &str) -> Arc<MergedCatalog> {
        self.catalogs
            .read()
            .expect("catalog lock is never poisoned")
            .by_profile
            .get(profile)
            .cloned()
            .unwrap_or_else(|| Arc::new(catalog::merge(&[], &Profile::everything(profile))))
    }

    /// Whether anything is known of `backend`'s catalog, live or cached.
    fn catalogued(&self, backend: &str) -> bool {
        self.catalogs
            .read()
            .expect("catalog lock is never poisoned")
            .catalogued
            .contains(backend)
    }

    fn profiles(&self) -> Arc<[Profile]> {
        self.profiles
            .read()
            .expect("profiles lock is never poisoned")
            .clone()
    }

    /// Whether `profile` is served.
    fn serves(&self, profile: &str) -> bool {
        self.profiles().iter().any(|served| served.name == profile)
    }

    /// Whether `profile` is served and offers anything of the server `backend`.
    fn offers(&self, profile: &str, backend: &str) -> bool {
        self.profiles()
            .iter()
            .find(|served| served.name == profile)
            .is_some_and(|served| served.offers_server(backend))
    }

    fn sessions(&self) -> Vec<Session> {
        self.lock_sessions().values().cloned().collect()
    }
}

/// What changes the catalogs and has not been seen by a rebuild yet: the backends' statuses, the
/// profiles, and what the pins hold (an approval, say). A list or call that finds one due waits
/// for the rebuild instead of reading a catalog from before it.
struct Unseen {
    engine: watch::Receiver<()>,
    profiles: watch::Receiver<()>,
    pins: watch::Receiver<()>,
}

impl Unseen {
    fn any(&self) -> bool {
        [&self.engine, &self.profiles, &self.pins]
            .into_iter()
            .any(|changes| changes.has_changed().unwrap_or(false))
    }

    fn mark_seen(&mut self) {
        self.engine.mark_unchanged();
        self.profiles.mark_unchanged();
        self.pins.mark_unchanged();
    }
}

/// Rebuilds the merged catalog from every backend's status; tells sessions what changed.
fn rebuild_catalog(
    hub: &HubInner,
    cache: &CatalogCache,
    known: &mut HashMap<String, Arc<Catalog>>,
) {
    let rebuild = {
        let mut unseen = hub
            .unseen_changes
            .lock()
            .expect("the change receiver lock is never poisoned");
        unseen.mark_seen();
        hub.rebuilds_begun
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel)
            + 1
    };
    let handles = hub.engine.backends();
    let statuses: Vec<_> = handles.iter().map(|handle| handle.status()).collect();
    let configs: Vec<_> = handles.iter().map(|handle| handle.config()).collect();
    for (handle, status) in handles.iter().zip(&statuses) {
        let name = handle.name();
        if let Some(instructions) = status
            .server
            .as_ref()
            .and_then(|server| server.instructions.as_deref())
            .filter(|text| !text.trim().is_empty())
        {
            // Vetted here too, so that held instructions show before an editor asks for them.
            hub.pins.vet_instructions(name, instructions);
        }
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
    hub.pins
        .retain_servers(&|name| configs.iter().any(|config| config.name == name));
    let sources: Vec<Source<'_>> = configs
        .iter()
        .zip(&statuses)
        .map(|(config, status)| Source {
            config,
            catalog: known
                .get(&config.name)
                .map(|catalog| hub.pins.vet(&config.name, catalog)),
            listed: catalog::is_listed(config, status),
        })
        .collect();
    let profiles = hub.profiles();
    let rebuilt = Arc::new(Catalogs {
        by_profile: profiles
            .iter()
            .map(|profile| {
                let merged = Arc::new(catalog::merge(&sources, profile));
                (profile.name.clone(), merged)
            })
            .collect(),
        catalogued: known.keys().map(|name| Arc::from(name.as_str())).collect(),
    });
    let before = std::mem::replace(
        &mut *hub
            .catalogs
            .write()
            .expect("catalog lock is never poisoned"),
        rebuilt.clone(),
    );
    hub.rebuilt.send_replace(rebuild);
    for (profile, merged) in &rebuilt.by_profile {
        let told = before
            .by_profile
            .get(profile)
            .map(|then| then.clash_warnings())
            .unwrap_or_default();
        for warning in merged.clash_warnings() {
            if !told.contains(&warning) {
                tracing::warn!(profile = %profile, "{warning}");
            }
        }
    }
    let names: HashSet<&String> = rebuilt
        .by_profile
        .keys()
        .chain(before.by_profile.keys())
        .collect();
    for profile in names {
        let (now, then) = (hub.catalog(profile), before.by_profile.get(profile));
        let changes = match then {
            Some(then) => now.changes_from(then),
            // A profile new to this rebuild has no sessions yet.
            None => continue,
        };
        let methods = [
            (changes.tools, Method::ToolsListChanged),
            (changes.prompts, Method::PromptsListChanged),
            (changes.resources, Method::ResourcesListChanged),
        ];
        for (changed, method) in methods {
            if !changed {
                continue;
            }
            for session in hub.sessions() {
                if session.is_initialized() && session.profile() == profile {
                    session.send_event(Notification::new(method.clone(), None).into());
                }
            }
        }
    }
}

/// The merged catalog of every profile, and which backends anything is known of.
#[derive(Default)]
struct Catalogs {
    by_profile: HashMap<String, Arc<MergedCatalog>>,
    catalogued: HashSet<Arc<str>>,
}

/// `profiles` as served: the default one first, offering everything unless `profiles` has it.
fn served_profiles(mut profiles: Vec<Profile>) -> Vec<Profile> {
    if !profiles
        .iter()
        .any(|profile| profile.name == DEFAULT_PROFILE)
    {
        profiles.insert(0, Profile::everything(DEFAULT_PROFILE));
    }
    profiles
}

/// Rebuilds the catalogs whenever a backend publishes a new status, the set of backends changes,
/// or the profiles do.
async fn maintain_catalog(hub: Weak<HubInner>, cache: CatalogCache, stop: CancellationToken) {
    let (mut changes, mut profiles_changed, mut pins_revised, rebuild_now) = {
        let Some(hub) = hub.upgrade() else { return };
        (
            hub.engine.changes(),
            hub.profiles_changed.subscribe(),
            hub.pins.revisions(),
            Arc::clone(&hub.rebuild_now),
        )
    };
    let mut known = HashMap::new();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            changed = changes.changed() => if changed.is_err() { break },
            changed = profiles_changed.changed() => if changed.is_err() { break },
            changed = pins_revised.changed() => if changed.is_err() { break },
        }
        profiles_changed.mark_unchanged();
        pins_revised.mark_unchanged();
        tokio::select! {
            () = tokio::time::sleep(CATALOG_SETTLE) => {}
            () = rebuild_now.notified() => {}
        }
        changes.mark_unchanged();
        let Some(hub) = hub.upgrade() else { break };
        rebuild_catalog(&hub, &cache, &mut known);
    }
}

/// The response to the request `id`.
fn response(id: &RawValue, result: Result<String, ErrorObject>) -> Reply {
    Reply::Response(Response::new(id, result))
}

/// 128 random bits as hex.
pub(crate) fn random_id() -> String {
    let bits: u128 = rand::random();
    format!("{bits:032x}")
}
