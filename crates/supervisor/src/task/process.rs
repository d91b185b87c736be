//! Starting, stopping and losing a backend's process (or its link to a remote server): the steps
//! of a start (spawn or connect, handshake, ready), and what follows a stop, a crash, a lost
//! link, a failed health check or a server that wants a sign-in.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::value::RawValue;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::Instrument;

use super::{BackendTask, Flow, Running, State};
use crate::ControlError;
use crate::handle::Command;
use crate::handshake::{Handshake, OpeningClock, handshake, keep_listening};
use crate::output::{OutputStream, RunOutput};
use crate::policy::Decision;
use crate::remote::{LinkEnd, LinkOptions, RemoteLink};
use crate::rpc::{CloseReason, Connection, ConnectionOptions, Incoming, RpcError, Started};
use crate::runner::{self, INSTALL_TIMEOUT, PackageRun};
use crate::spawn::{self, BackendProcess, SandboxSpec, SpawnSpec};
use crate::status::{ExitDescription, Installing, StopReason};
use crate::subscriptions::Subscriptions;
use config::{Launch, ProcessLaunch, RemoteTransport};
use platform::clock::unix_millis;
use wire::era::Era;
use wire::framing::{Frame, LineReader};

const STDERR_MAX_LINE: usize = 64 * 1024;
/// The read buffer of a backend's stderr, which lives as long as the backend: stderr carries
/// short lines, and few of them.
const STDERR_BUFFER: usize = 1024;
/// How long to wait for the exit status once a backend closed its stdout.
const EXIT_AFTER_EOF: Duration = Duration::from_millis(500);
/// How often a package runner that is installing is looked at, to see when it starts the server.
const INSTALL_POLL: Duration = Duration::from_millis(200);
/// How long a stopped process's last stderr lines are waited for, so that its history holds
/// them: its group is gone by then, so only a process that left it still holds the pipe.
const STDERR_DRAIN: Duration = Duration::from_millis(250);

/// What a backend's connection runs over: the pipes of a process Switchboard started, or HTTP to
/// a remote server. Everything above it (the connection, the handshake, the states) is the same.
pub(super) enum Link {
    Process(Box<ProcessLink>),
    Remote(RemoteLink),
}

/// A process Switchboard started, and the task reading its stderr.
pub(super) struct ProcessLink {
    process: BackendProcess,
    stderr: tokio::task::JoinHandle<()>,
}

impl Link {
    /// The process's id; a remote server has none.
    pub(super) fn pid(&self) -> Option<u32> {
        match self {
            Link::Process(link) => Some(link.process.pid()),
            Link::Remote(_) => None,
        }
    }

    /// The HTTP transport of a remote server's link; a process has none.
    pub(super) fn transport(&self) -> Option<RemoteTransport> {
        match self {
            Link::Process(_) => None,
            Link::Remote(link) => Some(link.transport()),
        }
    }

    /// Which of our requests a remote server was answering when it sent the request `id`, if
    /// it sent it on that request's stream; forgotten once told.
    pub(super) fn asked_during(&self, id: &RawValue) -> Option<u64> {
        match self {
            Link::Remote(link) => link.asked_during(id),
            Link::Process(_) => None,
        }
    }

    /// Why a remote server needs a sign-in, if that is how its link ended.
    fn needs_sign_in(&self) -> Option<String> {
        match self {
            Link::Remote(link) => match link.end() {
                Some(LinkEnd::NeedsSignIn(reason)) => Some(reason),
                _ => None,
            },
            Link::Process(_) => None,
        }
    }

    /// Stops the process (close stdin, then signals, within `grace`), and reads what it wrote
    /// on stderr to the end; or closes the link.
    async fn shut_down(self, grace: Duration) -> ExitDescription {
        match self {
            Link::Process(link) => {
                let exit = link.process.shut_down(grace).await;
                let _ = tokio::time::timeout(STDERR_DRAIN, link.stderr).await;
                exit
            }
            Link::Remote(link) => disconnected(&link.close().await),
        }
    }
}

fn disconnected(end: &LinkEnd) -> ExitDescription {
    ExitDescription {
        code: None,
        signal: None,
        disconnected: Some(end.reason().to_owned()),
    }
}

/// How a running process was found to have ended.
pub(super) struct ProcessEnd {
    exit: Option<ExitDescription>,
    /// A remote server's link ended because it wants a sign-in.
    needs_sign_in: Option<String>,
}

impl ProcessEnd {
    /// What the process's connection tells its waiters.
    fn close_reason(&self) -> CloseReason {
        match &self.exit {
            Some(exit) => CloseReason::Exited(exit.clone()),
            None => CloseReason::StdoutClosed,
        }
    }
}

/// A process that was spawned (or a link opened) and has not completed its handshake yet.
struct Spawned {
    link: Link,
    connection: Connection,
    incoming: mpsc::Receiver<Incoming>,
    stdout_closed: CancellationToken,
    started_at: Instant,
    /// Set when the process is a package runner (`npx`, `uvx`…).
    install: Option<Install>,
}

/// A package runner's start, watched (while the state says it is installing) until the runner
/// starts the server.
struct Install {
    run: PackageRun,
    pid: u32,
    since: Instant,
    /// When the runner started the server: the handshake timeout counts from then.
    handed_over: watch::Sender<Option<tokio::time::Instant>>,
    poll: tokio::time::Interval,
}

/// How waiting for the handshake ended.
enum HandshakeOutcome {
    /// The handshake completed; what the backend sent meanwhile waits to be handled.
    Completed(Box<Handshake>, Vec<Incoming>),
    /// The handshake failed, or the process ended before it completed.
    Failed(String),
    /// A command other than `start` came first (`None`: every handle is gone).
    Interrupted(Option<Command>),
}

impl BackendTask {
    /// Spawns the process and runs the handshake, answering any command that arrives meanwhile.
    pub(super) async fn start_process(&mut self) -> Flow {
        self.transition(State::Starting { installing: None });
        self.generation += 1;
        let Some(mut spawned) = self.spawn_process().await else {
            return Flow::Continue;
        };
        match self.await_handshake(&mut spawned).await {
            HandshakeOutcome::Completed(handshake, early_messages) => {
                self.become_ready(spawned, *handshake, early_messages).await;
                Flow::Continue
            }
            HandshakeOutcome::Failed(message) => {
                self.fail_start(spawned, message).await;
                Flow::Continue
            }
            HandshakeOutcome::Interrupted(command) => self.interrupt_start(spawned, command).await,
        }
    }

    /// Spawns the process with a reader of its stderr and a connection over its stdio, or opens
    /// the link to a remote server. When it cannot, records why and returns `None`.
    async fn spawn_process(&mut self) -> Option<Spawned> {
        // What this start prints is its own, apart from earlier starts' (the history shows it).
        let output = self.output.run(self.generation);
        let options = ConnectionOptions {
            max_message_size: self.config.max_message_size,
            log: output.clone(),
        };
        let launch = self.config.launch.clone();
        let opened = match &launch {
            Launch::Process(process) => {
                self.spawn(process, &output)
                    .await
                    .map(|(process, stdin, stdout)| {
                        let started = Connection::start(&self.config.name, stdin, stdout, options);
                        (Link::Process(Box::new(process)), started)
                    })
            }
            Launch::Remote(server) => {
                let link_options = LinkOptions {
                    max_message_size: self.config.max_message_size,
                    output,
                    auth: self.auth.clone(),
                };
                match RemoteLink::open(&self.config.name, server, link_options) {
                    Ok((link, sink, source)) => {
                        tracing::info!(url = %server.shown_url(), "connecting");
                        let started = Connection::start(&self.config.name, sink, source, options);
                        Some((Link::Remote(link), started))
                    }
                    Err(error) => {
                        self.after_failed_start(
                            StopReason::HandshakeFailed,
                            None,
                            Duration::ZERO,
                            error.to_string(),
                        );
                        None
                    }
                }
            }
        };
        let (
            link,
            Started {
                connection,
                incoming,
                stdout_closed,
            },
        ) = opened?;
        let install = match (&launch, link.pid()) {
            (Launch::Process(process), Some(pid)) => {
                runner::package_run(&process.command, &process.args)
                    .map(|run| self.watch_install(run, pid))
            }
            _ => None,
        };
        Some(Spawned {
            link,
            connection,
            incoming,
            stdout_closed,
            started_at: Instant::now(),
            install,
        })
    }

    /// Starts watching the package runner `run` just spawned as `pid`, and publishes what it
    /// installs until it starts the server, if `/proc` can tell.
    fn watch_install(&mut self, run: PackageRun, pid: u32) -> Install {
        let (handed_over, _) = watch::channel(None);
        let mut poll =
            tokio::time::interval_at(tokio::time::Instant::now() + INSTALL_POLL, INSTALL_POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let install = Install {
            run,
            pid,
            since: Instant::now(),
            handed_over,
            poll,
        };
        match install.run.server_started(pid) {
            Some(false) => {
                tracing::info!(runner = %install.run.runner, package = %install.run.package, "installing");
                self.transition(State::Starting {
                    installing: Some(Installing {
                        runner: install.run.runner.clone(),
                        package: install.run.package.clone(),
                        since_ms: unix_millis(SystemTime::now()),
                    }),
                });
            }
            Some(true) => {
                install
                    .handed_over
                    .send_replace(Some(tokio::time::Instant::now()));
            }
            None => tracing::debug!(
                runner = %install.run.runner,
                "cannot see when the runner starts the server; the handshake may take up to {} minutes longer",
                INSTALL_TIMEOUT.as_secs() / 60
            ),
        }
        install
    }

    /// Spawns `process` and the reader of its stderr into `output`; `None` (recorded) if it
    /// cannot start.
    async fn spawn(
        &mut self,
        process: &ProcessLaunch,
        output: &RunOutput,
    ) -> Option<(
        ProcessLink,
        tokio::process::ChildStdin,
        tokio::process::ChildStdout,
    )> {
        let spec = SpawnSpec {
            backend: &self.config.name,
            command: &process.command,
            args: &process.args,
            env: &process.env,
            cwd: process.cwd.as_deref(),
            sandbox: process.sandbox.as_ref().map(|sandbox| SandboxSpec {
                rules: sandbox.rules(),
                required: sandbox.required,
            }),
        };
        let (process, pipes) = match spawn::spawn_backend(&spec, &self.groups).await {
            Ok(spawned) => spawned,
            Err(spawn::SpawnError::ShuttingDown) => {
                self.transition(State::Stopped);
                self.answer_start_waiters(Err(ControlError::ShuttingDown));
                return None;
            }
            Err(error) => {
                self.after_failed_start(
                    StopReason::HandshakeFailed,
                    None,
                    Duration::ZERO,
                    error.to_string(),
                );
                return None;
            }
        };
        let pid = process.pid();
        tracing::info!(pid, "started");
        self.status.send_modify(|status| status.pid = Some(pid));
        self.changes.send_replace(());
        let spawn::Pipes {
            stdin,
            stdout,
            stderr,
        } = pipes;
        let stderr =
            tokio::spawn(read_stderr(stderr, output.clone()).instrument(tracing::Span::current()));
        Some((ProcessLink { process, stderr }, stdin, stdout))
    }

    /// Runs the handshake until it completes, the process ends, or a command other than `start`
    /// arrives. Callers of `start` join the waiters; messages from the backend are kept. A
    /// package runner is looked at meanwhile, until it starts the server.
    async fn await_handshake(&mut self, spawned: &mut Spawned) -> HandshakeOutcome {
        let plan = self.verdicts.plan(&self.config);
        let config = self.shared_config.borrow().clone();
        let clock = match &spawned.install {
            Some(install) => OpeningClock::Handover(install.handed_over.subscribe()),
            None => OpeningClock::Sent,
        };
        let handshake = handshake(&spawned.connection, &config, plan, &clock);
        tokio::pin!(handshake);
        let mut early_messages = Vec::new();
        loop {
            let polled = tokio::select! {
                result = &mut handshake => {
                    let era = result.as_ref().ok().map(|handshake| handshake.server.era);
                    self.verdicts.record(&self.config, era);
                    break match result {
                        Ok(handshake) => {
                            HandshakeOutcome::Completed(Box::new(handshake), early_messages)
                        }
                        Err(error) => HandshakeOutcome::Failed(error.to_string()),
                    };
                }
                end = wait_for_end(&mut spawned.link, &spawned.stdout_closed) => {
                    let reason = end.close_reason();
                    spawned.connection.close(reason.clone());
                    break HandshakeOutcome::Failed(match &spawned.link {
                        Link::Process(_) => format!("the process {reason} during the handshake"),
                        Link::Remote(_) => format!("the link {reason} during the handshake"),
                    });
                }
                Some(message) = spawned.incoming.recv() => {
                    early_messages.push(message);
                    false
                }
                command = self.commands.recv() => match command {
                    Some(Command::Start(ack)) => {
                        self.start_waiters.extend(ack);
                        false
                    }
                    other => break HandshakeOutcome::Interrupted(other),
                },
                () = next_install_poll(&mut spawned.install, &self.state) => true,
            };
            if let (true, Some(install)) = (polled, spawned.install.as_ref())
                && let Some(message) = self.follow_install(install)
            {
                break HandshakeOutcome::Failed(message);
            }
        }
    }

    /// Looks again at a package runner that was installing: publishes that it started the
    /// server (or that this can no longer be seen, as when it ends), or returns why the start
    /// fails if it has been installing for too long.
    fn follow_install(&mut self, install: &Install) -> Option<String> {
        match install.run.server_started(install.pid) {
            Some(false) if install.since.elapsed() < INSTALL_TIMEOUT => None,
            Some(false) => Some(format!(
                "{} was still installing {} after {} minutes",
                install.run.runner,
                install.run.package,
                INSTALL_TIMEOUT.as_secs() / 60
            )),
            started => {
                if started == Some(true) {
                    tracing::info!(
                        runner = %install.run.runner,
                        install_ms = install.since.elapsed().as_millis() as u64,
                        "the runner started the server"
                    );
                    install
                        .handed_over
                        .send_replace(Some(tokio::time::Instant::now()));
                }
                self.transition(State::Starting { installing: None });
                None
            }
        }
    }

    async fn become_ready(
        &mut self,
        spawned: Spawned,
        handshake: Handshake,
        early_messages: Vec<Incoming>,
    ) {
        let pid = spawned.link.pid();
        let era = handshake.server.era;
        self.server = Some(Arc::new(handshake.server));
        self.catalog = Arc::new(handshake.catalog);
        for note in &handshake.notes {
            tracing::warn!("{note}");
        }
        self.last_error = (!handshake.notes.is_empty()).then(|| handshake.notes.join("; "));
        if let (Launch::Process(process), Some(pid)) = (&self.config.launch, pid) {
            self.version = runner::package_run(&process.command, &process.args)
                .and_then(|run| run.version(pid));
        }
        let running = Running {
            link: spawned.link,
            connection: spawned.connection.clone(),
            incoming: spawned.incoming,
            stdout_closed: spawned.stdout_closed,
            started_at: spawned.started_at,
            ready_since: SystemTime::now(),
            era,
            health: super::health_interval(self.config.health_interval),
            ping_in_flight: false,
            _listening: (era == Era::Stateless)
                .then(|| listen(spawned.connection.clone(), self.subscriptions.clone())),
        };
        self.connection.send_replace(Some(spawned.connection));
        self.transition(State::Ready(Box::new(running)));
        let tools = self.catalog.tools.len();
        match pid {
            Some(pid) => tracing::info!(pid, %era, tools, "ready"),
            None => tracing::info!(%era, tools, "ready"),
        }
        self.answer_start_waiters(Ok(()));
        for message in early_messages {
            self.on_incoming(message).await;
        }
    }

    async fn fail_start(&mut self, spawned: Spawned, message: String) {
        spawned.connection.close(CloseReason::Stopping);
        let uptime = spawned.started_at.elapsed();
        let needs_sign_in = spawned.link.needs_sign_in();
        let exit = spawned.link.shut_down(self.config.stop_grace).await;
        if let Some(reason) = needs_sign_in {
            self.await_sign_in(Some(exit), uptime, reason);
            return;
        }
        tracing::warn!(%exit, "handshake failed: {message}");
        self.after_failed_start(StopReason::HandshakeFailed, Some(exit), uptime, message);
    }

    /// Records that a remote server wants a sign-in; it stays so until a start (after one).
    fn await_sign_in(&mut self, exit: Option<ExitDescription>, uptime: Duration, reason: String) {
        tracing::warn!("needs sign-in: {reason}");
        self.record(StopReason::NeedsSignIn, exit, uptime, Some(reason.clone()));
        self.last_error = Some(reason.clone());
        self.answer_start_waiters(Err(ControlError::StartFailed {
            backend: self.name.to_string(),
            message: reason,
        }));
        self.transition(State::NeedsSignIn);
    }

    /// Stops the process that was starting, fails the start, then carries out the command.
    async fn interrupt_start(&mut self, spawned: Spawned, command: Option<Command>) -> Flow {
        spawned.connection.close(CloseReason::Stopping);
        self.transition(State::Stopping);
        spawned.link.shut_down(self.config.stop_grace).await;
        self.transition(State::Stopped);
        self.answer_start_waiters(Err(ControlError::Interrupted {
            backend: self.name.to_string(),
        }));
        match command {
            Some(Command::Reconfigure(config, ack)) => {
                Box::pin(self.reconfigure(*config, ack, super::Activity::Active)).await
            }
            Some(command) => Box::pin(self.handle_command(command)).await,
            None => {
                self.shut_down(None).await;
                Flow::Exit
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

    /// Takes the running process out of the `Ready` state (leaving `Stopping` in its place, not
    /// yet published) and withdraws its connection from handles.
    fn take_running(&mut self) -> Option<Running> {
        let State::Ready(running) = std::mem::replace(&mut self.state, State::Stopping) else {
            return None;
        };
        self.connection.send_replace(None);
        Some(*running)
    }

    /// Stops the running process, if any, recording why.
    pub(super) async fn stop_process(&mut self, reason: StopReason) {
        let Some(running) = self.take_running() else {
            return;
        };
        self.transition(State::Stopping);
        let uptime = running.started_at.elapsed();
        running.connection.close(CloseReason::Stopping);
        let exit = running.link.shut_down(self.config.stop_grace).await;
        tracing::info!(%exit, %reason, "stopped");
        self.record(reason, Some(exit), uptime, None);
    }

    pub(super) async fn on_process_end(&mut self, end: ProcessEnd) {
        let Some(running) = self.take_running() else {
            return;
        };
        let uptime = running.started_at.elapsed();
        // Waiters learn at once; cleaning up the rest of the group may take the grace period.
        running.connection.close(end.close_reason());
        self.transition(State::Stopping);
        let exit = running.link.shut_down(self.config.stop_grace).await;
        if let Some(reason) = end.needs_sign_in {
            self.await_sign_in(Some(exit), uptime, reason);
            return;
        }
        tracing::warn!(%exit, uptime_ms = uptime.as_millis() as u64, "crashed");
        self.record(StopReason::Crash, Some(exit), uptime, None);
        self.schedule_restart(uptime);
    }

    pub(super) async fn kill_unresponsive(&mut self, error: &RpcError) {
        let Some(running) = self.take_running() else {
            return;
        };
        let uptime = running.started_at.elapsed();
        running.connection.close(CloseReason::Stopping);
        self.transition(State::Stopping);
        let exit = running.link.shut_down(Duration::ZERO).await;
        tracing::warn!(%error, "unresponsive; restarting");
        self.record(
            StopReason::Unresponsive,
            Some(exit),
            uptime,
            Some(error.to_string()),
        );
        self.schedule_restart(uptime);
    }
}

/// Completes at the next look at a package runner, while `state` says it is installing.
async fn next_install_poll(install: &mut Option<Install>, state: &State) {
    match install {
        Some(install)
            if matches!(
                state,
                State::Starting {
                    installing: Some(_)
                }
            ) =>
        {
            install.poll.tick().await;
        }
        _ => std::future::pending().await,
    }
}

/// Keeps a `subscriptions/listen` open on a stateless-era backend's `connection`, naming the
/// resources of `subscriptions`, until the returned guard is dropped (or the connection closes).
fn listen(connection: Connection, subscriptions: Arc<Subscriptions>) -> DropGuard {
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    let listening = async move {
        tokio::select! {
            _ = stopped.cancelled() => {}
            _ = keep_listening(connection, subscriptions) => {}
        }
    };
    tokio::spawn(listening.instrument(tracing::Span::current()));
    stop.drop_guard()
}

/// Completes when the process has ended: its leader exited, or it closed stdout (then the exit
/// status is awaited briefly, since the leader normally exits right after); or when the link to
/// a remote server ended.
pub(super) async fn wait_for_end(link: &mut Link, stdout_closed: &CancellationToken) -> ProcessEnd {
    let process = match link {
        Link::Process(link) => &mut link.process,
        Link::Remote(link) => {
            let end = link.ended().await;
            return ProcessEnd {
                exit: Some(disconnected(&end)),
                needs_sign_in: match end {
                    LinkEnd::NeedsSignIn(reason) => Some(reason),
                    LinkEnd::Lost(_) => None,
                },
            };
        }
    };
    tokio::select! {
        exit = process.wait() => ProcessEnd { exit: Some(exit), needs_sign_in: None },
        _ = stdout_closed.cancelled() => {
            let exit = tokio::time::timeout(EXIT_AFTER_EOF, process.wait()).await.ok();
            ProcessEnd { exit, needs_sign_in: None }
        }
    }
}

async fn read_stderr(stderr: tokio::process::ChildStderr, output: RunOutput) {
    let mut lines = LineReader::new(
        tokio::io::BufReader::with_capacity(STDERR_BUFFER, stderr),
        STDERR_MAX_LINE,
    );
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
