//! Supervision: one task owns each backend process; a cheap handle sends it commands.
//!
//! [`Engine`] holds every backend and applies a new config as a diff. `handle` is the
//! [`BackendHandle`] and the commands it sends; `task` is the task that owns one backend, whose
//! state is an enum whose variants own their resources and changes only in
//! `BackendTask::transition`, which also publishes it; `handshake` is the opening of a backend's
//! connection in its protocol era and the discovery of its catalog; `subscriptions` is the
//! resources editors want updates of from a stateless-era backend, which its listen names; `runner`
//! knows package runners (`npx`, `uvx`…), whose install precedes the server.
//!
//! Floor 5 of the workspace (ARCHITECTURE.md). It stands on `platform`, `wire`, `config` and
//! `auth`; it knows no editor session.

pub mod output;
pub(crate) mod policy;
mod remote;
pub mod rpc;
pub mod spawn;
pub mod status;

mod handle;
mod handshake;
pub mod runner;
mod subscriptions;
mod task;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::value::RawValue;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::handle::Command;
use crate::handshake::EraVerdicts;
use crate::rpc::{Connection, RpcError};
use crate::spawn::ProcessGroups;
use crate::status::BackendState;
use crate::task::BackendTask;
use config::BackendConfig;
use wire::jsonrpc::{self, ErrorObject};
use wire::method::Method;

pub use handle::BackendHandle;
pub use handshake::SUPPORTED_PROTOCOL_VERSIONS;
pub use subscriptions::ResourceWatch;

/// Why a command to a backend failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    #[error("backend {backend} could not start: {message}")]
    StartFailed { backend: String, message: String },
    #[error("backend {backend} was stopped before it became ready")]
    Interrupted { backend: String },
    #[error("backend {backend} was removed from the config")]
    Removed { backend: String },
    #[error("switchboard is shutting down")]
    ShuttingDown,
}

/// Why a request could not be sent to a backend.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    #[error("{}", unavailable_message(backend, *state))]
    Unavailable {
        backend: String,
        state: BackendState,
    },
    #[error(transparent)]
    Rpc(#[from] RpcError),
}

impl CallError {
    /// The JSON-RPC error object an editor should receive.
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            CallError::Unavailable { .. } => {
                ErrorObject::new(jsonrpc::BACKEND_UNAVAILABLE, self.to_string())
            }
            CallError::Rpc(error) => error.to_error_object(),
        }
    }
}

/// What an editor is told of a backend that is not ready: for one waiting for a sign-in, what to
/// do about it.
pub fn unavailable_message(backend: &str, state: BackendState) -> String {
    match state {
        BackendState::NeedsSignIn => format!(
            "{backend} needs a sign-in: open Switchboard's dashboard (or its tray menu) and \
             choose \"Sign in to {backend}\""
        ),
        state => format!("backend {backend} is {state}, not ready"),
    }
}

/// A message a backend sent on its own: a notification, in the order it was sent.
#[derive(Debug, Clone)]
pub struct BackendNotification {
    pub backend: Arc<str>,
    pub method: Method,
    pub params: Option<Arc<RawValue>>,
}

/// A request a backend sent to its client (sampling, elicitation, roots), to be answered through
/// `connection`.
pub struct ServerRequest {
    pub backend: Arc<str>,
    pub id: Box<RawValue>,
    pub method: Method,
    pub params: Option<Box<RawValue>>,
    pub connection: Connection,
    /// The call this request was sent during ([`rpc::ClientMeta::call`]), when the transport
    /// tells: a remote server sends it on the stream that answers one of our requests.
    pub call: Option<u64>,
}

/// Settings shared by every backend of an engine.
#[derive(Clone)]
pub struct EngineOptions {
    pub groups: Arc<ProcessGroups>,
    /// Where requests from backends go; without it they are answered with an error.
    pub server_requests: Option<mpsc::UnboundedSender<ServerRequest>>,
    /// Sign-in to remote servers; without it a server that asks for one needs sign-in.
    pub auth: Option<Arc<auth::Auth>>,
}

/// All supervised backends. The set changes only through [`Engine::apply`].
pub struct Engine {
    backends: watch::Sender<Arc<BTreeMap<String, BackendHandle>>>,
    options: EngineOptions,
    notifications: broadcast::Sender<BackendNotification>,
    changes: Arc<watch::Sender<()>>,
    /// The era each backend's command was last found to speak, kept across restarts and reloads.
    verdicts: Arc<EraVerdicts>,
    /// Serializes `apply` and `shutdown`; true once shut down.
    closed: tokio::sync::Mutex<bool>,
}

/// What [`Engine::apply`] did to one backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Applied {
    /// New in the config: launched (and started when enabled).
    Added,
    /// Gone from the config: stopped and forgotten.
    Removed,
    /// Its process settings changed while it ran: stopped and started again.
    Restarted,
    /// Enabled again (or given a new command while in a crash loop): started.
    Started,
    /// Disabled while it ran: stopped.
    Stopped,
    /// Settings that apply to the running process (or to a stopped backend) changed.
    Updated,
    /// Same config: the process, its PID and its in-flight calls are untouched.
    Unchanged,
}

impl Applied {
    /// What was done, as a verb in the past: `added`, `restarted`…, or `unchanged`.
    pub fn as_str(self) -> &'static str {
        match self {
            Applied::Added => "added",
            Applied::Removed => "removed",
            Applied::Restarted => "restarted",
            Applied::Started => "started",
            Applied::Stopped => "stopped",
            Applied::Updated => "updated",
            Applied::Unchanged => "unchanged",
        }
    }
}

impl std::fmt::Display for Applied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Per backend, in name order, what a reload did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ApplyReport {
    pub backends: BTreeMap<String, Applied>,
}

impl std::fmt::Display for ApplyReport {
    /// `added a, b; restarted c` (unchanged backends are not named).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut groups: BTreeMap<&'static str, Vec<&str>> = BTreeMap::new();
        for (name, applied) in &self.backends {
            if *applied != Applied::Unchanged {
                groups.entry(applied.as_str()).or_default().push(name);
            }
        }
        if groups.is_empty() {
            return f.write_str("nothing changed");
        }
        let parts: Vec<String> = groups
            .iter()
            .map(|(verb, names)| format!("{verb} {}", names.join(", ")))
            .collect();
        f.write_str(&parts.join("; "))
    }
}

impl Engine {
    /// Starts a task for every backend and starts the enabled ones (without waiting for them).
    pub fn start(configs: Vec<BackendConfig>, options: EngineOptions) -> Engine {
        let (notifications, _) = broadcast::channel(4096);
        let changes = Arc::new(watch::channel(()).0);
        let verdicts = Arc::new(EraVerdicts::default());
        let mut backends = BTreeMap::new();
        for config in configs {
            let handle = BackendTask::launch(config, &options, &notifications, &changes, &verdicts);
            backends.insert(handle.name().to_owned(), handle);
        }
        Engine {
            backends: watch::channel(Arc::new(backends)).0,
            options,
            notifications,
            changes,
            verdicts,
            closed: tokio::sync::Mutex::new(false),
        }
    }

    pub fn backend(&self, name: &str) -> Option<BackendHandle> {
        self.backends.borrow().get(name).cloned()
    }

    /// Every backend, in name order.
    pub fn backends(&self) -> Vec<BackendHandle> {
        self.backends.borrow().values().cloned().collect()
    }

    /// Notifications from every backend.
    pub fn notifications(&self) -> broadcast::Receiver<BackendNotification> {
        self.notifications.subscribe()
    }

    /// Marked changed whenever any backend publishes a status, and when the set of backends or
    /// a backend's config changes: one signal to rebuild whatever is derived from all of them.
    pub fn changes(&self) -> watch::Receiver<()> {
        self.changes.subscribe()
    }

    /// Brings the running backends in line with `configs`: new ones are launched, missing ones
    /// stopped and forgotten, changed ones reconfigured (restarted only when their process
    /// settings changed, see [`BackendConfig::needs_restart_for`]). Backends whose config is
    /// unchanged are not touched. Returns once removed backends are down and changed ones have
    /// taken their new config (without waiting for restarted ones to be ready).
    pub async fn apply(&self, configs: Vec<BackendConfig>) -> ApplyReport {
        let closed = self.closed.lock().await;
        let mut report = ApplyReport::default();
        if *closed {
            return report;
        }
        let current = self.backends.borrow().clone();
        let mut next = BTreeMap::new();
        let mut reconfigured = Vec::new();
        for config in configs {
            let name = config.name.clone();
            match current.get(&name) {
                Some(handle) if *handle.config() == config => {
                    report.backends.insert(name.clone(), Applied::Unchanged);
                    next.insert(name, handle.clone());
                }
                Some(handle) => {
                    let (ack, done) = oneshot::channel();
                    handle.send(Command::Reconfigure(Box::new(config), ack));
                    reconfigured.push((name.clone(), done));
                    next.insert(name, handle.clone());
                }
                None => {
                    let handle = BackendTask::launch(
                        config,
                        &self.options,
                        &self.notifications,
                        &self.changes,
                        &self.verdicts,
                    );
                    report.backends.insert(name.clone(), Applied::Added);
                    next.insert(name, handle);
                }
            }
        }
        for (name, done) in reconfigured {
            let applied = done.await.unwrap_or(Applied::Updated);
            report.backends.insert(name, applied);
        }
        let removed: Vec<(String, oneshot::Receiver<Result<(), ControlError>>)> = current
            .iter()
            .filter(|(name, _)| !next.contains_key(*name))
            .map(|(name, handle)| {
                let (ack, done) = oneshot::channel();
                handle.send(Command::Remove(ack));
                (name.clone(), done)
            })
            .collect();
        self.backends.send_replace(Arc::new(next));
        self.changes.send_replace(());
        for (name, done) in removed {
            let _ = done.await;
            report.backends.insert(name, Applied::Removed);
        }
        report
    }

    /// Stops every backend (concurrently) and refuses further spawns and reloads. Returns when
    /// all are down.
    pub async fn shutdown(&self) {
        let mut closed = self.closed.lock().await;
        *closed = true;
        self.options.groups.close();
        let acks: Vec<_> = self
            .backends()
            .iter()
            .map(|handle| {
                let (ack, done) = oneshot::channel();
                handle.send(Command::Shutdown(ack));
                done
            })
            .collect();
        for done in acks {
            let _ = done.await;
        }
    }
}
