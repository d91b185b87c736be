//! The task that owns one backend: its state machine, the events it waits for, the commands it
//! carries out, and the one place where its state changes and is published.
//!
//! Each variant of `State` owns what exists in that state, so nothing outlives the state it
//! belongs to; `BackendTask::transition` is the only place the state changes, and it publishes
//! the status everyone else reads. What a new config does to a backend is decided by
//! `reconfigured`, a pure function tested without processes.

mod process;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::value::RawValue;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::Instrument;

use crate::handle::{Ack, BackendHandle, Command};
use crate::handshake::{EraVerdicts, ListKind, fetch_list, health_method};
use crate::output::OutputLog;
use crate::policy::RestartBudget;
use crate::rpc::{Connection, Incoming, RpcError};
use crate::spawn::ProcessGroups;
use crate::status::{
    BackendState, BackendStatus, Catalog, ExitDescription, HistoryEntry, Installing,
    ServerDescription, StopReason,
};
use crate::subscriptions::Subscriptions;
use crate::{Applied, BackendNotification, ControlError, EngineOptions, ServerRequest};
use config::{BackendConfig, Launch};
use platform::clock::unix_millis;
use process::{Link, ProcessEnd, wait_for_end};
use wire::era::Era;
use wire::jsonrpc::{self, ErrorObject};
use wire::method::Method;

const HISTORY_LIMIT: usize = 50;
const HISTORY_OUTPUT_LINES: usize = 20;
const OUTPUT_RING_LINES: usize = 2000;
const OUTPUT_RING_BYTES: usize = 512 * 1024;

/// What a backend task is doing. Each variant owns what exists in that state.
enum State {
    Stopped,
    /// With what a package runner is installing, until it starts the server.
    Starting {
        installing: Option<Installing>,
    },
    Ready(Box<Running>),
    Backoff {
        until: tokio::time::Instant,
    },
    CrashLoop,
    Stopping,
    /// A remote server wants a sign-in; nothing restarts it until someone signs in.
    NeedsSignIn,
}

impl State {
    fn kind(&self) -> BackendState {
        match self {
            State::Stopped => BackendState::Stopped,
            State::Starting { .. } => BackendState::Starting,
            State::Ready(_) => BackendState::Ready,
            State::Backoff { .. } => BackendState::Backoff,
            State::CrashLoop => BackendState::CrashLoop,
            State::Stopping => BackendState::Stopping,
            State::NeedsSignIn => BackendState::NeedsSignIn,
        }
    }
}

/// A process (or a link to a remote server) that completed its handshake.
struct Running {
    link: Link,
    connection: Connection,
    incoming: mpsc::Receiver<Incoming>,
    stdout_closed: CancellationToken,
    started_at: Instant,
    ready_since: SystemTime,
    era: Era,
    health: Option<tokio::time::Interval>,
    /// Whether a health check (`ping`, or `server/discover` for a stateless-era backend) is
    /// unanswered.
    ping_in_flight: bool,
    /// Stops the task keeping a stateless-era backend's `subscriptions/listen` open.
    _listening: Option<DropGuard>,
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

pub(super) struct BackendTask {
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
    groups: Arc<ProcessGroups>,
    auth: Option<Arc<auth::Auth>>,
    server_requests: Option<mpsc::UnboundedSender<ServerRequest>>,
    verdicts: Arc<EraVerdicts>,
    budget: RestartBudget,
    generation: u64,
    restarts: u32,
    history: Vec<HistoryEntry>,
    last_error: Option<String>,
    /// The version of the package a runner runs, read when it was last ready.
    version: Option<String>,
    server: Option<Arc<ServerDescription>>,
    catalog: Arc<Catalog>,
    /// Callers of `start` waiting for the current start attempt.
    start_waiters: Vec<Ack>,
    /// The resources editors want updates of, which a stateless-era backend's listen names.
    subscriptions: Arc<Subscriptions>,
}

/// What the main loop does after a step.
#[derive(PartialEq)]
enum Flow {
    Continue,
    Exit,
}

impl BackendTask {
    /// Spawns the task for `config` and starts the backend if it is enabled.
    pub(super) fn launch(
        config: BackendConfig,
        options: &EngineOptions,
        notifications: &broadcast::Sender<BackendNotification>,
        changes: &Arc<watch::Sender<()>>,
        verdicts: &Arc<EraVerdicts>,
    ) -> BackendHandle {
        let name: Arc<str> = Arc::from(config.name.as_str());
        let (commands_tx, commands) = mpsc::unbounded_channel();
        let (reports_tx, reports) = mpsc::unbounded_channel();
        let (status, status_rx) = watch::channel(BackendStatus::new(&name));
        let (connection, connection_rx) = watch::channel(None);
        let (shared_config, config_rx) = watch::channel(Arc::new(config.clone()));
        let output = Arc::new(OutputLog::new(OUTPUT_RING_LINES, OUTPUT_RING_BYTES));
        let subscriptions = Arc::new(Subscriptions::default());
        let handle = BackendHandle {
            name: name.clone(),
            commands: commands_tx,
            status: status_rx,
            connection: connection_rx,
            output: output.clone(),
            config: config_rx,
            subscriptions: subscriptions.clone(),
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
            auth: options.auth.clone(),
            server_requests: options.server_requests.clone(),
            verdicts: verdicts.clone(),
            generation: 0,
            restarts: 0,
            history: Vec::new(),
            last_error: None,
            version: None,
            server: None,
            catalog: Arc::default(),
            start_waiters: Vec::new(),
            subscriptions,
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
                    end = wait_for_end(&mut running.link, &running.stdout_closed) => Event::Exited(end),
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
            State::Stopped
            | State::CrashLoop
            | State::Starting { .. }
            | State::Stopping
            | State::NeedsSignIn => Event::Command(self.commands.recv().await),
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
                let activity = match self.state {
                    State::Stopped => Activity::Stopped,
                    // Both wait for a person; a changed config is a reason to try again.
                    State::CrashLoop | State::NeedsSignIn => Activity::CrashLoop,
                    _ => Activity::Active,
                };
                self.reconfigure(*config, ack, activity).await
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

    /// Takes a new config, and starts, stops or restarts the backend as [`reconfigured`] says.
    async fn reconfigure(
        &mut self,
        config: BackendConfig,
        ack: oneshot::Sender<Applied>,
        activity: Activity,
    ) -> Flow {
        let applied = reconfigured(&self.config, &config, activity);
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
        tracing::info!(%applied, "config changed");
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

    async fn on_incoming(&mut self, message: Incoming) {
        match message {
            Incoming::Notification {
                method: Method::SubscriptionsAcknowledged,
                params,
            } => {
                tracing::debug!("the backend listens for list changes and resource updates");
                self.subscriptions.acknowledge(params.as_deref());
            }
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
                let call = running
                    .link
                    .asked_during(&id)
                    .and_then(|ours| running.connection.call_of(ours));
                let request = ServerRequest {
                    backend: self.name.clone(),
                    id,
                    method,
                    params,
                    connection: running.connection.clone(),
                    call,
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
                    list = %list.method(),
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
        let method = health_method(running.era);
        let connection = running.connection.clone();
        let reports = self.reports_tx.clone();
        let generation = self.generation;
        let timeout = self.config.health_timeout;
        tokio::spawn(async move {
            let report = match connection.request(&method, None, timeout).await {
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
                let mut catalog = Catalog::clone(&self.catalog);
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
            output_tail: self
                .output
                .tail_of_run(self.generation, HISTORY_OUTPUT_LINES),
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
            State::Ready(running) => (running.link.pid(), Some(unix_millis(running.ready_since))),
            State::Starting { .. } | State::Stopping => (self.status.borrow().pid, None),
            _ => (None, None),
        };
        let restart_at_ms = match &self.state {
            State::Backoff { until } => {
                let remaining = until.saturating_duration_since(tokio::time::Instant::now());
                Some(unix_millis(SystemTime::now() + remaining))
            }
            _ => None,
        };
        let installing = match &self.state {
            State::Starting { installing } => installing.clone(),
            _ => None,
        };
        let transport = match (&self.state, &self.config.launch) {
            (State::Ready(running), _) => running.link.transport(),
            (_, Launch::Remote(remote)) => Some(remote.transport),
            (_, Launch::Process(_)) => None,
        };
        let status = BackendStatus {
            name: self.name.to_string(),
            state: self.state.kind(),
            installing,
            pid,
            ready_since_ms,
            restart_at_ms,
            restarts: self.restarts,
            last_error: self.last_error.clone(),
            history: Arc::new(self.history.clone()),
            server: self.server.clone(),
            catalog: self.catalog.clone(),
            transport,
            version: self.version.clone(),
        };
        self.status.send_replace(status);
        self.changes.send_replace(());
    }
}

/// Where a backend stands when a new config arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Activity {
    /// Ready, starting, or waiting to restart.
    Active,
    Stopped,
    CrashLoop,
}

/// What taking `new` in place of `old` does to a backend in `activity`: a disabled backend stops,
/// an enabled one starts if it was disabled (or left its crash loop with a new command), and a
/// running one restarts only when its process settings changed.
fn reconfigured(old: &BackendConfig, new: &BackendConfig, activity: Activity) -> Applied {
    let needs_restart = old.needs_restart_for(new);
    match (new.enabled, activity) {
        (false, Activity::Active) => Applied::Stopped,
        (true, Activity::Stopped | Activity::CrashLoop) if !old.enabled => Applied::Started,
        (true, Activity::CrashLoop) if needs_restart => Applied::Started,
        (true, Activity::Active) if needs_restart => Applied::Restarted,
        _ => Applied::Updated,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> BackendConfig {
        BackendConfig::new("files", "node", vec!["server.js".to_owned()])
    }

    fn disabled(mut config: BackendConfig) -> BackendConfig {
        config.enabled = false;
        config
    }

    /// The same backend with a different command line: its process must be started again.
    fn new_args(mut config: BackendConfig) -> BackendConfig {
        config
            .process_mut()
            .expect("a local server")
            .args
            .push("--verbose".to_owned());
        config
    }

    /// The same backend with only a setting the running process does not depend on changed.
    fn new_timeout(mut config: BackendConfig) -> BackendConfig {
        config.request_timeout *= 2;
        config
    }

    #[test]
    fn a_running_backend_restarts_only_when_its_process_settings_change() {
        let old = config();
        assert_eq!(
            reconfigured(&old, &new_args(config()), Activity::Active),
            Applied::Restarted
        );
        assert_eq!(
            reconfigured(&old, &new_timeout(config()), Activity::Active),
            Applied::Updated
        );
    }

    #[test]
    fn disabling_stops_only_a_backend_that_runs() {
        let old = config();
        assert_eq!(
            reconfigured(&old, &disabled(config()), Activity::Active),
            Applied::Stopped
        );
        assert_eq!(
            reconfigured(&old, &disabled(config()), Activity::Stopped),
            Applied::Updated
        );
        assert_eq!(
            reconfigured(&old, &disabled(config()), Activity::CrashLoop),
            Applied::Updated
        );
    }

    #[test]
    fn enabling_a_disabled_backend_starts_it() {
        let old = disabled(config());
        assert_eq!(
            reconfigured(&old, &config(), Activity::Stopped),
            Applied::Started
        );
        assert_eq!(
            reconfigured(&old, &config(), Activity::CrashLoop),
            Applied::Started
        );
    }

    #[test]
    fn a_new_command_lifts_a_crash_loop_but_not_a_stop_by_hand() {
        let old = config();
        assert_eq!(
            reconfigured(&old, &new_args(config()), Activity::CrashLoop),
            Applied::Started
        );
        assert_eq!(
            reconfigured(&old, &new_timeout(config()), Activity::CrashLoop),
            Applied::Updated
        );
        assert_eq!(
            reconfigured(&old, &new_args(config()), Activity::Stopped),
            Applied::Updated
        );
    }
}
