//! Supervision: one task owns each backend process; a cheap handle sends it commands.
//!
//! The task's state is an enum whose variants own their resources. Every change of state goes
//! through [`BackendTask::transition`], which also publishes the new status.

pub mod output;
pub mod policy;
pub mod rpc;
pub mod spawn;
pub mod status;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::config::BackendConfig;
use crate::supervisor::output::{OutputLog, OutputStream};
use crate::supervisor::policy::{Decision, RestartBudget};
use crate::supervisor::rpc::{
    CloseReason, Connection, ConnectionOptions, Incoming, ProgressSink, RpcError, Started,
};
use crate::supervisor::spawn::{BackendProcess, GroupRegistry, SpawnSpec};
use crate::supervisor::status::{
    BackendState, BackendStatus, Catalog, ExitDescription, HistoryEntry, ServerDescription,
    StopReason, unix_millis,
};
use crate::wire::framing::{Frame, LineReader};
use crate::wire::jsonrpc::{self, ErrorObject};

/// The protocol versions Switchboard speaks with backends, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

const HISTORY_LIMIT: usize = 50;
const HISTORY_OUTPUT_LINES: usize = 20;
const OUTPUT_RING_LINES: usize = 2000;
const OUTPUT_RING_BYTES: usize = 512 * 1024;
const STDERR_MAX_LINE: usize = 64 * 1024;
const MAX_LIST_PAGES: usize = 1000;
/// How long to wait for the exit status once a backend closed its stdout.
const EXIT_AFTER_EOF: Duration = Duration::from_millis(500);

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
    #[error("backend {backend} is {state}, not ready")]
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

/// A message a backend sent on its own: a notification, in the order it was sent.
#[derive(Debug, Clone)]
pub struct BackendNotification {
    pub backend: Arc<str>,
    pub method: String,
    pub params: Option<Arc<RawValue>>,
}

/// A request a backend sent to its client (sampling, elicitation, roots), to be answered through
/// `connection`.
pub struct ServerRequest {
    pub backend: Arc<str>,
    pub id: Box<RawValue>,
    pub method: String,
    pub params: Option<Box<RawValue>>,
    pub connection: Connection,
}

/// Settings shared by every backend of an engine.
#[derive(Clone)]
pub struct EngineOptions {
    pub groups: Arc<GroupRegistry>,
    /// Where requests from backends go; without it they are answered with an error.
    pub server_requests: Option<mpsc::UnboundedSender<ServerRequest>>,
}

/// All supervised backends. The set changes only through [`Engine::apply`].
pub struct Engine {
    backends: watch::Sender<Arc<BTreeMap<String, BackendHandle>>>,
    options: EngineOptions,
    notifications: broadcast::Sender<BackendNotification>,
    changes: Arc<watch::Sender<()>>,
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
            let verb = match applied {
                Applied::Added => "added",
                Applied::Removed => "removed",
                Applied::Restarted => "restarted",
                Applied::Started => "started",
                Applied::Stopped => "stopped",
                Applied::Updated => "updated",
                Applied::Unchanged => continue,
            };
            groups.entry(verb).or_default().push(name);
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
        let mut backends = BTreeMap::new();
        for config in configs {
            let handle = BackendTask::launch(config, &options, &notifications, &changes);
            backends.insert(handle.name().to_owned(), handle);
        }
        Engine {
            backends: watch::channel(Arc::new(backends)).0,
            options,
            notifications,
            changes,
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

/// A cheap, cloneable handle to one backend.
#[derive(Clone)]
pub struct BackendHandle {
    name: Arc<str>,
    commands: mpsc::UnboundedSender<Command>,
    status: watch::Receiver<BackendStatus>,
    connection: watch::Receiver<Option<Connection>>,
    output: Arc<OutputLog>,
    config: watch::Receiver<Arc<BackendConfig>>,
}

type Ack = oneshot::Sender<Result<(), ControlError>>;

enum Command {
    Start(Option<Ack>),
    Stop(Ack),
    Restart(Ack),
    Reconfigure(Box<BackendConfig>, oneshot::Sender<Applied>),
    /// Like `Shutdown`, for a backend removed from the config.
    Remove(Ack),
    Shutdown(Ack),
}

impl BackendHandle {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether both handles reach the same backend task (a backend removed and added again by
    /// reloads is a new one).
    pub fn same_backend(&self, other: &BackendHandle) -> bool {
        self.commands.same_channel(&other.commands)
    }

    /// The config the backend runs with (a reload may replace it).
    pub fn config(&self) -> Arc<BackendConfig> {
        self.config.borrow().clone()
    }

    /// Starts the backend (and resets its restart budget); returns once it is ready.
    pub async fn start(&self) -> Result<(), ControlError> {
        self.command(|ack| Command::Start(Some(ack))).await
    }

    /// Stops the backend and its whole process group; returns once nothing of it runs.
    pub async fn stop(&self) -> Result<(), ControlError> {
        self.command(Command::Stop).await
    }

    /// Stops (if running) and starts again; returns once it is ready.
    pub async fn restart(&self) -> Result<(), ControlError> {
        self.command(Command::Restart).await
    }

    /// The current status.
    pub fn status(&self) -> BackendStatus {
        self.status.borrow().clone()
    }

    /// A receiver that sees every published status.
    pub fn watch_status(&self) -> watch::Receiver<BackendStatus> {
        self.status.clone()
    }

    /// Requests sent to the running process and not answered yet (0 when none runs).
    pub fn pending_requests(&self) -> usize {
        self.connection
            .borrow()
            .as_ref()
            .map_or(0, Connection::pending_count)
    }

    /// The backend's captured stderr and stdout noise.
    pub fn output(&self) -> &Arc<OutputLog> {
        &self.output
    }

    /// Sends a request to the backend with its configured deadline.
    pub async fn request(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Box<RawValue>, CallError> {
        let timeout = self.config.borrow().request_timeout;
        self.request_with_timeout(method, params, timeout).await
    }

    /// Sends a request whose progress notifications go to `progress` (see
    /// [`Connection::request_with_progress`]).
    pub async fn request_with_progress(
        &self,
        method: &str,
        params: Option<&RawValue>,
        timeout: Duration,
        progress: Option<ProgressSink>,
    ) -> Result<Box<RawValue>, CallError> {
        let connection = self.ready_connection()?;
        Ok(connection
            .request_with_progress(method, params, timeout, progress)
            .await?)
    }

    /// Sends a request with an explicit deadline.
    pub async fn request_with_timeout(
        &self,
        method: &str,
        params: Option<&RawValue>,
        timeout: Duration,
    ) -> Result<Box<RawValue>, CallError> {
        Ok(self
            .ready_connection()?
            .request(method, params, timeout)
            .await?)
    }

    /// Sends a notification to the backend, if it is ready.
    pub async fn notify(&self, method: &str, params: Option<&RawValue>) -> Result<(), CallError> {
        Ok(self.ready_connection()?.notify(method, params).await?)
    }

    /// The connection of the running process, or why there is none.
    fn ready_connection(&self) -> Result<Connection, CallError> {
        let connection = self.connection.borrow().clone();
        connection.ok_or_else(|| CallError::Unavailable {
            backend: self.name.to_string(),
            state: self.status.borrow().state,
        })
    }

    fn send(&self, command: Command) {
        // A closed channel means the task is gone, which only happens after shutdown.
        let _ = self.commands.send(command);
    }

    async fn command(&self, make: impl FnOnce(Ack) -> Command) -> Result<(), ControlError> {
        let (ack, done) = oneshot::channel();
        self.send(make(ack));
        done.await.unwrap_or(Err(ControlError::ShuttingDown))
    }
}

/// What a backend task is doing. Each variant owns what exists in that state.
enum State {
    Stopped,
    Starting,
    Ready(Box<Running>),
    Backoff { until: tokio::time::Instant },
    CrashLoop,
    Stopping,
}

impl State {
    fn kind(&self) -> BackendState {
        match self {
            State::Stopped => BackendState::Stopped,
            State::Starting => BackendState::Starting,
            State::Ready(_) => BackendState::Ready,
            State::Backoff { .. } => BackendState::Backoff,
            State::CrashLoop => BackendState::CrashLoop,
            State::Stopping => BackendState::Stopping,
        }
    }
}

/// A process that completed its handshake.
struct Running {
    process: BackendProcess,
    connection: Connection,
    incoming: mpsc::Receiver<Incoming>,
    stdout_closed: CancellationToken,
    started_at: Instant,
    ready_since: SystemTime,
    health: Option<tokio::time::Interval>,
    ping_in_flight: bool,
}

/// Results of work the task handed to helper tasks, tagged with the process generation so that
/// news about an earlier process is ignored.
enum Report {
    CatalogRefreshed {
        generation: u64,
        list: ListKind,
        items: Vec<Box<RawValue>>,
    },
    PingFailed {
        generation: u64,
        error: RpcError,
    },
    PingAnswered {
        generation: u64,
    },
}

enum Event {
    Command(Option<Command>),
    Exited(ProcessEnd),
    Incoming(Incoming),
    HealthTick,
    Report(Report),
    BackoffOver,
}

/// How a running process was found to have ended.
struct ProcessEnd {
    exit: Option<ExitDescription>,
}

struct BackendTask {
    config: BackendConfig,
    /// What handles read as the config; replaced on reconfiguration.
    shared_config: watch::Sender<Arc<BackendConfig>>,
    /// The engine-wide change signal, marked on every publish.
    changes: Arc<watch::Sender<()>>,
    name: Arc<str>,
    state: State,
    status: watch::Sender<BackendStatus>,
    connection: watch::Sender<Option<Connection>>,
    commands: mpsc::UnboundedReceiver<Command>,
    reports_tx: mpsc::UnboundedSender<Report>,
    reports: mpsc::UnboundedReceiver<Report>,
    notifications: broadcast::Sender<BackendNotification>,
    output: Arc<OutputLog>,
    groups: Arc<GroupRegistry>,
    server_requests: Option<mpsc::UnboundedSender<ServerRequest>>,
    budget: RestartBudget,
    generation: u64,
    restarts: u32,
    history: Vec<HistoryEntry>,
    last_error: Option<String>,
    server: Option<Arc<ServerDescription>>,
    catalog: Arc<Catalog>,
    /// Callers of `start` waiting for the current start attempt.
    start_waiters: Vec<Ack>,
}

/// What the main loop does after a step.
#[derive(PartialEq)]
enum Flow {
    Continue,
    Exit,
}

impl BackendTask {
    /// Spawns the task for `config` and starts the backend if it is enabled.
    fn launch(
        config: BackendConfig,
        options: &EngineOptions,
        notifications: &broadcast::Sender<BackendNotification>,
        changes: &Arc<watch::Sender<()>>,
    ) -> BackendHandle {
        let name: Arc<str> = Arc::from(config.name.as_str());
        let (commands_tx, commands) = mpsc::unbounded_channel();
        let (reports_tx, reports) = mpsc::unbounded_channel();
        let (status, status_rx) = watch::channel(BackendStatus::new(&name));
        let (connection, connection_rx) = watch::channel(None);
        let (shared_config, config_rx) = watch::channel(Arc::new(config.clone()));
        let output = Arc::new(OutputLog::new(OUTPUT_RING_LINES, OUTPUT_RING_BYTES));
        let handle = BackendHandle {
            name: name.clone(),
            commands: commands_tx,
            status: status_rx,
            connection: connection_rx,
            output: output.clone(),
            config: config_rx,
        };
        if config.enabled {
            handle.send(Command::Start(None));
        }
        let task = BackendTask {
            budget: RestartBudget::new(config.restart),
            config,
            shared_config,
            changes: changes.clone(),
            name: name.clone(),
            state: State::Stopped,
            status,
            connection,
            commands,
            reports_tx,
            reports,
            notifications: notifications.clone(),
            output,
            groups: options.groups.clone(),
            server_requests: options.server_requests.clone(),
            generation: 0,
            restarts: 0,
            history: Vec::new(),
            last_error: None,
            server: None,
            catalog: Arc::default(),
            start_waiters: Vec::new(),
        };
        let span = tracing::info_span!("backend", name = %name);
        tokio::spawn(task.run().instrument(span));
        handle
    }

    async fn run(mut self) {
        loop {
            let event = self.next_event().await;
            if self.handle_event(event).await == Flow::Exit {
                break;
            }
        }
    }

    async fn next_event(&mut self) -> Event {
        match &mut self.state {
            State::Ready(running) => {
                let ping_in_flight = running.ping_in_flight;
                let interval = running.health.as_mut().filter(|_| !ping_in_flight);
                let health = async {
                    match interval {
                        Some(interval) => interval.tick().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    end = wait_for_end(&mut running.process, &running.stdout_closed) => Event::Exited(end),
                    Some(message) = running.incoming.recv() => Event::Incoming(message),
                    Some(report) = self.reports.recv() => Event::Report(report),
                    _ = health => Event::HealthTick,
                    command = self.commands.recv() => Event::Command(command),
                }
            }
            State::Backoff { until } => {
                let until = *until;
                tokio::select! {
                    _ = tokio::time::sleep_until(until) => Event::BackoffOver,
                    command = self.commands.recv() => Event::Command(command),
                }
            }
            State::Stopped | State::CrashLoop | State::Starting | State::Stopping => {
                Event::Command(self.commands.recv().await)
            }
        }
    }

    async fn handle_event(&mut self, event: Event) -> Flow {
        match event {
            Event::Command(None) => {
                self.shut_down(None).await;
                Flow::Exit
            }
            Event::Command(Some(command)) => self.handle_command(command).await,
            Event::Exited(end) => {
                self.on_process_end(end).await;
                Flow::Continue
            }
            Event::Incoming(message) => {
                self.on_incoming(message).await;
                Flow::Continue
            }
            Event::HealthTick => {
                self.send_ping();
                Flow::Continue
            }
            Event::Report(report) => {
                self.on_report(report).await;
                Flow::Continue
            }
            Event::BackoffOver => {
                self.restarts += 1;
                self.start_process().await
            }
        }
    }

    async fn handle_command(&mut self, command: Command) -> Flow {
        match command {
            Command::Start(ack) => {
                self.start_waiters.extend(ack);
                if let State::Ready(_) = self.state {
                    self.answer_start_waiters(Ok(()));
                    return Flow::Continue;
                }
                self.budget.reset();
                self.start_process().await
            }
            Command::Stop(ack) => {
                self.stop_process(StopReason::StoppedByUser).await;
                self.transition(State::Stopped);
                let _ = ack.send(Ok(()));
                Flow::Continue
            }
            Command::Restart(ack) => {
                self.stop_process(StopReason::RestartedByUser).await;
                self.budget.reset();
                self.start_waiters.push(ack);
                self.start_process().await
            }
            Command::Reconfigure(config, ack) => {
                let active = !matches!(self.state, State::Stopped | State::CrashLoop);
                self.reconfigure(*config, ack, active).await
            }
            Command::Remove(ack) => {
                self.stop_process(StopReason::ConfigChanged).await;
                self.transition(State::Stopped);
                self.answer_start_waiters(Err(ControlError::Removed {
                    backend: self.name.to_string(),
                }));
                let _ = ack.send(Ok(()));
                Flow::Exit
            }
            Command::Shutdown(ack) => {
                self.shut_down(Some(ack)).await;
                Flow::Exit
            }
        }
    }

    /// Takes a new config. `active` tells whether the backend was running or about to (ready,
    /// starting, or waiting to restart) when the command arrived.
    async fn reconfigure(
        &mut self,
        config: BackendConfig,
        ack: oneshot::Sender<Applied>,
        active: bool,
    ) -> Flow {
        let needs_restart = self.config.needs_restart_for(&config);
        let was_enabled = self.config.enabled;
        let in_crash_loop = matches!(self.state, State::CrashLoop);
        if config.restart != self.config.restart {
            self.budget = RestartBudget::new(config.restart);
        }
        if config.health_interval != self.config.health_interval
            && let State::Ready(running) = &mut self.state
        {
            running.health = health_interval(config.health_interval);
        }
        self.config = config;
        self.shared_config
            .send_replace(Arc::new(self.config.clone()));
        let applied = match (self.config.enabled, active) {
            (false, true) => Applied::Stopped,
            (true, false) if !was_enabled => Applied::Started,
            (true, false) if in_crash_loop && needs_restart => Applied::Started,
            (true, true) if needs_restart => Applied::Restarted,
            _ => Applied::Updated,
        };
        tracing::info!(?applied, "config changed");
        match applied {
            Applied::Stopped => {
                self.stop_process(StopReason::ConfigChanged).await;
                self.transition(State::Stopped);
            }
            Applied::Restarted => self.stop_process(StopReason::ConfigChanged).await,
            _ => self.publish(),
        }
        let _ = ack.send(applied);
        match applied {
            Applied::Started | Applied::Restarted => {
                self.budget.reset();
                self.start_process().await
            }
            _ => Flow::Continue,
        }
    }

    async fn shut_down(&mut self, ack: Option<Ack>) {
        self.stop_process(StopReason::Shutdown).await;
        self.transition(State::Stopped);
        self.answer_start_waiters(Err(ControlError::ShuttingDown));
        if let Some(ack) = ack {
            let _ = ack.send(Ok(()));
        }
    }

    /// Spawns the process and runs the handshake, answering any command that arrives meanwhile.
    async fn start_process(&mut self) -> Flow {
        self.transition(State::Starting);
        self.generation += 1;
        let spec = SpawnSpec {
            backend: &self.config.name,
            command: &self.config.command,
            args: &self.config.args,
            env: &self.config.env,
            cwd: self.config.cwd.as_deref(),
        };
        let (mut process, pipes) = match spawn::spawn_backend(&spec, &self.groups) {
            Ok(spawned) => spawned,
            Err(spawn::SpawnError::ShuttingDown) => {
                self.transition(State::Stopped);
                self.answer_start_waiters(Err(ControlError::ShuttingDown));
                return Flow::Continue;
            }
            Err(error) => {
                self.after_failed_start(
                    StopReason::HandshakeFailed,
                    None,
                    Duration::ZERO,
                    error.to_string(),
                );
                return Flow::Continue;
            }
        };
        let pid = process.pid();
        tracing::info!(pid, "started");
        self.status.send_modify(|status| status.pid = Some(pid));
        self.changes.send_replace(());
        tokio::spawn(
            read_stderr(pipes.stderr, self.output.clone()).instrument(tracing::Span::current()),
        );
        let options = ConnectionOptions {
            max_message_size: self.config.max_message_size,
            log: self.output.clone(),
        };
        let Started {
            connection,
            mut incoming,
            stdout_closed,
        } = Connection::start(&self.config.name, pipes.stdin, pipes.stdout, options);
        let started_at = Instant::now();

        let (outcome, interrupted_by, early_messages) = {
            let handshake = handshake(&connection, &self.config);
            tokio::pin!(handshake);
            let mut interrupted_by = None;
            let mut early_messages = Vec::new();
            let outcome = loop {
                tokio::select! {
                    result = &mut handshake => break result,
                    end = wait_for_end(&mut process, &stdout_closed) => {
                        let reason = match &end.exit {
                            Some(exit) => CloseReason::Exited(exit.clone()),
                            None => CloseReason::StdoutClosed,
                        };
                        connection.close(reason.clone());
                        break Err(format!("the process {reason} during the handshake"));
                    }
                    Some(message) = incoming.recv() => early_messages.push(message),
                    command = self.commands.recv() => match command {
                        Some(Command::Start(ack)) => self.start_waiters.extend(ack),
                        other => {
                            interrupted_by = Some(other);
                            break Err("interrupted".to_owned());
                        }
                    },
                }
            };
            (outcome, interrupted_by, early_messages)
        };

        match (outcome, interrupted_by) {
            (Ok(handshake), None) => {
                let health = health_interval(self.config.health_interval);
                self.server = Some(Arc::new(handshake.server));
                self.catalog = Arc::new(handshake.catalog);
                self.last_error = None;
                let running = Running {
                    process,
                    connection: connection.clone(),
                    incoming,
                    stdout_closed,
                    started_at,
                    ready_since: SystemTime::now(),
                    health,
                    ping_in_flight: false,
                };
                self.connection.send_replace(Some(connection));
                self.transition(State::Ready(Box::new(running)));
                tracing::info!(pid, tools = self.catalog.tools.len(), "ready");
                self.answer_start_waiters(Ok(()));
                for message in early_messages {
                    self.on_incoming(message).await;
                }
                Flow::Continue
            }
            (_, Some(command)) => {
                connection.close(CloseReason::Stopping);
                self.transition(State::Stopping);
                process.shut_down(self.config.stop_grace).await;
                self.transition(State::Stopped);
                self.answer_start_waiters(Err(ControlError::Interrupted {
                    backend: self.name.to_string(),
                }));
                match command {
                    Some(Command::Reconfigure(config, ack)) => {
                        Box::pin(self.reconfigure(*config, ack, true)).await
                    }
                    Some(command) => Box::pin(self.handle_command(command)).await,
                    None => {
                        self.shut_down(None).await;
                        Flow::Exit
                    }
                }
            }
            (Err(message), None) => {
                connection.close(CloseReason::Stopping);
                let uptime = started_at.elapsed();
                let exit = process.shut_down(self.config.stop_grace).await;
                tracing::warn!(%exit, "handshake failed: {message}");
                self.after_failed_start(StopReason::HandshakeFailed, Some(exit), uptime, message);
                Flow::Continue
            }
        }
    }

    /// Records a failed start and schedules the next attempt (or gives up).
    fn after_failed_start(
        &mut self,
        reason: StopReason,
        exit: Option<ExitDescription>,
        uptime: Duration,
        message: String,
    ) {
        self.record(reason, exit, uptime, Some(message.clone()));
        self.last_error = Some(message.clone());
        self.answer_start_waiters(Err(ControlError::StartFailed {
            backend: self.name.to_string(),
            message,
        }));
        self.schedule_restart(uptime);
    }

    fn schedule_restart(&mut self, uptime: Duration) {
        let jitter: f64 = rand::random();
        match self.budget.on_exit(Instant::now(), uptime, jitter) {
            Decision::RestartAfter(delay) => {
                tracing::info!(
                    delay_ms = delay.as_millis() as u64,
                    "restarting after backoff"
                );
                self.transition(State::Backoff {
                    until: tokio::time::Instant::now() + delay,
                });
            }
            Decision::CrashLoop => {
                tracing::error!("restart budget spent; crash loop until started by hand");
                self.transition(State::CrashLoop);
            }
        }
    }

    /// Stops the running process, if any, recording why.
    async fn stop_process(&mut self, reason: StopReason) {
        let State::Ready(running) = std::mem::replace(&mut self.state, State::Stopping) else {
            return;
        };
        self.transition(State::Stopping);
        let running = *running;
        let uptime = running.started_at.elapsed();
        self.connection.send_replace(None);
        running.connection.close(CloseReason::Stopping);
        let exit = running.process.shut_down(self.config.stop_grace).await;
        tracing::info!(%exit, %reason, "stopped");
        self.record(reason, Some(exit), uptime, None);
    }

    async fn on_process_end(&mut self, end: ProcessEnd) {
        let State::Ready(running) = std::mem::replace(&mut self.state, State::Stopping) else {
            return;
        };
        let running = *running;
        let uptime = running.started_at.elapsed();
        self.connection.send_replace(None);
        let reason = match &end.exit {
            Some(exit) => CloseReason::Exited(exit.clone()),
            None => CloseReason::StdoutClosed,
        };
        // Waiters learn at once; cleaning up the rest of the group may take the grace period.
        running.connection.close(reason);
        self.transition(State::Stopping);
        let exit = running.process.shut_down(self.config.stop_grace).await;
        tracing::warn!(%exit, uptime_ms = uptime.as_millis() as u64, "crashed");
        self.record(StopReason::Crash, Some(exit), uptime, None);
        self.schedule_restart(uptime);
    }

    async fn kill_unresponsive(&mut self, error: &RpcError) {
        let State::Ready(running) = std::mem::replace(&mut self.state, State::Stopping) else {
            return;
        };
        let running = *running;
        let uptime = running.started_at.elapsed();
        self.connection.send_replace(None);
        running.connection.close(CloseReason::Stopping);
        self.transition(State::Stopping);
        let exit = running.process.shut_down(Duration::ZERO).await;
        tracing::warn!(%error, "unresponsive; restarting");
        self.record(
            StopReason::Unresponsive,
            Some(exit),
            uptime,
            Some(error.to_string()),
        );
        self.schedule_restart(uptime);
    }

    async fn on_incoming(&mut self, message: Incoming) {
        match message {
            Incoming::Notification { method, params } => {
                if let Some(list) = ListKind::changed_by(&method) {
                    self.refresh_list(list);
                }
                let params = params.map(Arc::from);
                let _ = self.notifications.send(BackendNotification {
                    backend: self.name.clone(),
                    method,
                    params,
                });
            }
            Incoming::Request { id, method, params } => {
                let State::Ready(running) = &self.state else {
                    return;
                };
                let request = ServerRequest {
                    backend: self.name.clone(),
                    id,
                    method,
                    params,
                    connection: running.connection.clone(),
                };
                let unrouted = match &self.server_requests {
                    Some(router) => router.send(request).err().map(|error| error.0),
                    None => Some(request),
                };
                if let Some(request) = unrouted {
                    let error = ErrorObject::new(
                        jsonrpc::METHOD_NOT_FOUND,
                        format!(
                            "no connected editor can answer {} for backend {}",
                            request.method, self.name
                        ),
                    );
                    let _ = request.connection.respond(&request.id, Err(&error)).await;
                }
            }
        }
    }

    fn refresh_list(&self, list: ListKind) {
        let State::Ready(running) = &self.state else {
            return;
        };
        let connection = running.connection.clone();
        let reports = self.reports_tx.clone();
        let generation = self.generation;
        let timeout = self.config.request_timeout;
        let refresh = async move {
            match fetch_list(&connection, list, timeout).await {
                Ok(items) => {
                    let _ = reports.send(Report::CatalogRefreshed {
                        generation,
                        list,
                        items,
                    });
                }
                Err(error) => tracing::warn!(
                    list = list.method(),
                    "refreshing after list_changed failed: {error}"
                ),
            }
        };
        tokio::spawn(refresh.instrument(tracing::Span::current()));
    }

    fn send_ping(&mut self) {
        let State::Ready(running) = &mut self.state else {
            return;
        };
        running.ping_in_flight = true;
        let connection = running.connection.clone();
        let reports = self.reports_tx.clone();
        let generation = self.generation;
        let timeout = self.config.health_timeout;
        tokio::spawn(async move {
            let report = match connection.request("ping", None, timeout).await {
                Ok(_) => Report::PingAnswered { generation },
                Err(error) => Report::PingFailed { generation, error },
            };
            let _ = reports.send(report);
        });
    }

    async fn on_report(&mut self, report: Report) {
        match report {
            Report::CatalogRefreshed {
                generation,
                list,
                items,
            } if generation == self.generation => {
                let mut catalog = Catalog {
                    tools: self.catalog.tools.clone(),
                    resources: self.catalog.resources.clone(),
                    resource_templates: self.catalog.resource_templates.clone(),
                    prompts: self.catalog.prompts.clone(),
                };
                *list.slot(&mut catalog) = items;
                self.catalog = Arc::new(catalog);
                self.publish();
            }
            Report::PingAnswered { generation } if generation == self.generation => {
                if let State::Ready(running) = &mut self.state {
                    running.ping_in_flight = false;
                }
            }
            Report::PingFailed { generation, error } if generation == self.generation => {
                match error {
                    RpcError::Timeout { .. } => self.kill_unresponsive(&error).await,
                    // Any other failure means the process is ending; its exit is handled on its own.
                    _ => {
                        if let State::Ready(running) = &mut self.state {
                            running.ping_in_flight = false;
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn record(
        &mut self,
        reason: StopReason,
        exit: Option<ExitDescription>,
        uptime: Duration,
        detail: Option<String>,
    ) {
        if self.history.len() == HISTORY_LIMIT {
            self.history.remove(0);
        }
        self.history.push(HistoryEntry {
            at_ms: unix_millis(SystemTime::now()),
            reason,
            exit,
            uptime_ms: uptime.as_millis() as u64,
            detail,
            output_tail: self.output.tail(HISTORY_OUTPUT_LINES),
        });
    }

    fn answer_start_waiters(&mut self, result: Result<(), ControlError>) {
        for waiter in self.start_waiters.drain(..) {
            let _ = waiter.send(result.clone());
        }
    }

    /// The one place where the state changes. Publishes the new status.
    fn transition(&mut self, state: State) {
        let from = self.state.kind();
        self.state = state;
        let to = self.state.kind();
        if from != to {
            tracing::info!(from = %from, to = %to, "state");
        }
        self.publish();
    }

    fn publish(&self) {
        let (pid, ready_since_ms) = match &self.state {
            State::Ready(running) => (
                Some(running.process.pid()),
                Some(unix_millis(running.ready_since)),
            ),
            State::Starting | State::Stopping => (self.status.borrow().pid, None),
            _ => (None, None),
        };
        let restart_at_ms = match &self.state {
            State::Backoff { until } => {
                let remaining = until.saturating_duration_since(tokio::time::Instant::now());
                Some(unix_millis(SystemTime::now() + remaining))
            }
            _ => None,
        };
        let status = BackendStatus {
            name: self.name.to_string(),
            state: self.state.kind(),
            pid,
            ready_since_ms,
            restart_at_ms,
            restarts: self.restarts,
            last_error: self.last_error.clone(),
            history: Arc::new(self.history.clone()),
            server: self.server.clone(),
            catalog: self.catalog.clone(),
        };
        self.status.send_replace(status);
        self.changes.send_replace(());
    }
}

/// The health-ping timer for a process that just became ready (or got a new interval).
fn health_interval(period: Option<Duration>) -> Option<tokio::time::Interval> {
    period.map(|period| {
        let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        interval
    })
}

/// Completes when the process has ended: its leader exited, or it closed stdout (then the exit
/// status is awaited briefly, since the leader normally exits right after).
async fn wait_for_end(
    process: &mut BackendProcess,
    stdout_closed: &CancellationToken,
) -> ProcessEnd {
    tokio::select! {
        exit = process.wait() => ProcessEnd { exit: Some(exit) },
        _ = stdout_closed.cancelled() => {
            let exit = tokio::time::timeout(EXIT_AFTER_EOF, process.wait()).await.ok();
            ProcessEnd { exit }
        }
    }
}

async fn read_stderr(stderr: tokio::process::ChildStderr, output: Arc<OutputLog>) {
    let mut lines = LineReader::new(tokio::io::BufReader::new(stderr), STDERR_MAX_LINE);
    while let Ok(Some(frame)) = lines.next_frame().await {
        let text = match frame {
            Frame::Line(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Frame::Oversized { len, head, .. } => {
                format!(
                    "{}… [line of {len} bytes cut]",
                    String::from_utf8_lossy(&head)
                )
            }
        };
        tracing::debug!(target: "switchboard::stderr", "{text}");
        output.push(OutputStream::Stderr, &text);
    }
}

/// The catalog lists a server can change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListKind {
    Tools,
    Resources,
    ResourceTemplates,
    Prompts,
}

impl ListKind {
    fn method(self) -> &'static str {
        match self {
            ListKind::Tools => "tools/list",
            ListKind::Resources => "resources/list",
            ListKind::ResourceTemplates => "resources/templates/list",
            ListKind::Prompts => "prompts/list",
        }
    }

    fn field(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "resourceTemplates",
            ListKind::Prompts => "prompts",
        }
    }

    fn changed_by(method: &str) -> Option<ListKind> {
        match method {
            "notifications/tools/list_changed" => Some(ListKind::Tools),
            "notifications/resources/list_changed" => Some(ListKind::Resources),
            "notifications/prompts/list_changed" => Some(ListKind::Prompts),
            _ => None,
        }
    }

    fn slot(self, catalog: &mut Catalog) -> &mut Vec<Box<RawValue>> {
        match self {
            ListKind::Tools => &mut catalog.tools,
            ListKind::Resources => &mut catalog.resources,
            ListKind::ResourceTemplates => &mut catalog.resource_templates,
            ListKind::Prompts => &mut catalog.prompts,
        }
    }
}

struct Handshake {
    server: ServerDescription,
    catalog: Catalog,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeResult {
    protocol_version: String,
    #[serde(default = "empty_object")]
    capabilities: Box<RawValue>,
    #[serde(default = "empty_object")]
    server_info: Box<RawValue>,
    #[serde(default)]
    instructions: Option<String>,
}

fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).expect("{} is valid JSON")
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ServerCapabilities {
    tools: Option<serde::de::IgnoredAny>,
    resources: Option<serde::de::IgnoredAny>,
    prompts: Option<serde::de::IgnoredAny>,
}

/// `initialize` (bounded by the handshake timeout), `notifications/initialized`, then every list
/// the server offers (each page bounded by the request timeout).
async fn handshake(connection: &Connection, config: &BackendConfig) -> Result<Handshake, String> {
    let params = serde_json::json!({
        "protocolVersion": SUPPORTED_PROTOCOL_VERSIONS[0],
        "capabilities": { "sampling": {}, "elicitation": {}, "roots": { "listChanged": true } },
        "clientInfo": { "name": "switchboard", "version": env!("CARGO_PKG_VERSION") },
    });
    let params = RawValue::from_string(params.to_string()).expect("json! output is valid JSON");
    let answer = connection
        .request("initialize", Some(&params), config.handshake_timeout)
        .await
        .map_err(|error| error.to_string())?;
    let initialized: InitializeResult = serde_json::from_str(answer.get())
        .map_err(|error| format!("malformed initialize result: {error}"))?;
    if !SUPPORTED_PROTOCOL_VERSIONS.contains(&initialized.protocol_version.as_str()) {
        return Err(format!(
            "the server speaks protocol version {}, which Switchboard does not support (supported: {})",
            initialized.protocol_version,
            SUPPORTED_PROTOCOL_VERSIONS.join(", ")
        ));
    }
    connection
        .notify("notifications/initialized", None)
        .await
        .map_err(|error| error.to_string())?;
    let capabilities: ServerCapabilities =
        serde_json::from_str(initialized.capabilities.get()).unwrap_or_default();
    let mut catalog = Catalog::default();
    let offered = [
        (ListKind::Tools, capabilities.tools.is_some()),
        (ListKind::Resources, capabilities.resources.is_some()),
        (
            ListKind::ResourceTemplates,
            capabilities.resources.is_some(),
        ),
        (ListKind::Prompts, capabilities.prompts.is_some()),
    ];
    for (list, is_offered) in offered {
        if is_offered {
            *list.slot(&mut catalog) = fetch_list(connection, list, config.request_timeout).await?;
        }
    }
    let server = ServerDescription {
        protocol_version: initialized.protocol_version,
        server_info: initialized.server_info,
        capabilities: initialized.capabilities,
        instructions: initialized.instructions,
    };
    Ok(Handshake { server, catalog })
}

/// Fetches every page of one list, following `nextCursor`.
async fn fetch_list(
    connection: &Connection,
    list: ListKind,
    timeout: Duration,
) -> Result<Vec<Box<RawValue>>, String> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = match &cursor {
            Some(cursor) => serde_json::json!({ "cursor": cursor }),
            None => serde_json::json!({}),
        };
        let params = RawValue::from_string(params.to_string()).expect("json! output is valid JSON");
        let page = connection
            .request(list.method(), Some(&params), timeout)
            .await
            .map_err(|error| error.to_string())?;
        let mut fields: BTreeMap<String, Box<RawValue>> = serde_json::from_str(page.get())
            .map_err(|error| format!("malformed {} result: {error}", list.method()))?;
        if let Some(page_items) = fields.remove(list.field()) {
            let page_items: Vec<Box<RawValue>> = serde_json::from_str(page_items.get())
                .map_err(|error| format!("malformed {} result: {error}", list.method()))?;
            items.extend(page_items);
        }
        let next: Option<String> = fields
            .get("nextCursor")
            .and_then(|raw| serde_json::from_str(raw.get()).ok());
        match next {
            Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
            _ => return Ok(items),
        }
    }
    Err(format!(
        "{} returned more than {MAX_LIST_PAGES} pages",
        list.method()
    ))
}
