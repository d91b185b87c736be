//! Plain data that the endpoint, API, UI and tray read. Nothing here owns a process or a task.
//!
//! [`BackendStatus::actions`] and [`BackendState::is_failing`] are the one rule of what a backend
//! offers and whether it counts as failing: the API publishes them, and the dashboard and the
//! tray use them as they are instead of working them out again from the state.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use config::RemoteTransport;
use wire::era::Era;

/// The states of a backend, as published.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendState {
    Stopped,
    Starting,
    Ready,
    /// Waiting before an automatic restart.
    Backoff,
    /// The restart budget is spent; waits for a manual start or a config change.
    CrashLoop,
    Stopping,
    /// A remote server wants a sign-in that Switchboard holds no token for; waits for one.
    NeedsSignIn,
}

impl BackendState {
    /// Whether a backend in this state is failing: it crashed and waits to restart, or is in a
    /// crash loop. (One waiting for a sign-in waits for a person, and is not counted.)
    pub fn is_failing(self) -> bool {
        matches!(self, BackendState::Backoff | BackendState::CrashLoop)
    }
}

/// What a person can do to a backend, from the dashboard or the tray.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendAction {
    Start,
    Stop,
    Restart,
    /// Opens a remote server's sign-in page.
    SignIn,
    /// Forgets the tokens Switchboard keeps for a remote server, which then waits for a sign-in.
    SignOut,
}

impl std::fmt::Display for BackendState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match self {
            BackendState::Stopped => "stopped",
            BackendState::Starting => "starting",
            BackendState::Ready => "ready",
            BackendState::Backoff => "backoff",
            BackendState::CrashLoop => "crash_loop",
            BackendState::Stopping => "stopping",
            BackendState::NeedsSignIn => "needs_sign_in",
        };
        f.write_str(text)
    }
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExitDescription {
    pub code: Option<i32>,
    pub(crate) signal: Option<i32>,
    /// For a remote server, why its link ended (there is no process to exit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) disconnected: Option<String>,
}

impl ExitDescription {
    pub(crate) fn from_status(status: std::process::ExitStatus) -> ExitDescription {
        let (code, signal) = platform::process::exit_of(status);
        ExitDescription {
            code,
            signal,
            disconnected: None,
        }
    }
}

impl std::fmt::Display for ExitDescription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(reason) = &self.disconnected {
            return write!(f, "disconnected: {reason}");
        }
        match (self.code, self.signal) {
            (Some(code), _) => write!(f, "exit code {code}"),
            (None, Some(signal)) => match platform::process::signal_name(signal) {
                Some(name) => write!(f, "signal {signal} ({name})"),
                None => write!(f, "signal {signal}"),
            },
            (None, None) => f.write_str("unknown exit status"),
        }
    }
}

/// Why a backend's process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    Crash,
    Unresponsive,
    HandshakeFailed,
    StoppedByUser,
    RestartedByUser,
    ConfigChanged,
    Shutdown,
    /// A remote server refused every token Switchboard holds.
    NeedsSignIn,
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match self {
            StopReason::Crash => "crashed",
            StopReason::Unresponsive => "stopped answering pings",
            StopReason::HandshakeFailed => "handshake failed",
            StopReason::StoppedByUser => "stopped by user",
            StopReason::RestartedByUser => "restarted by user",
            StopReason::ConfigChanged => "config changed",
            StopReason::Shutdown => "shutdown",
            StopReason::NeedsSignIn => "needs sign-in",
        };
        f.write_str(text)
    }
}

/// One entry of a backend's restart history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryEntry {
    /// When the process ended, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    pub reason: StopReason,
    /// How the process ended; `None` when it never started.
    pub exit: Option<ExitDescription>,
    /// How long it had been running, in milliseconds.
    pub uptime_ms: u64,
    /// A description of what went wrong, when there is more to say than the reason.
    pub detail: Option<String>,
    /// The last lines this run of the backend printed before it ended, none of an earlier
    /// run's.
    pub output_tail: Vec<OutputLine>,
}

/// Where a captured line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputStream {
    Stderr,
    /// Something on stdout that was not JSON-RPC (a banner, a log line, garbage).
    StdoutNoise,
    /// What the link to a remote server saw go wrong: refused requests, lost streams.
    Http,
}

/// One line a backend printed: on stderr, or on stdout but not JSON-RPC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutputLine {
    /// Milliseconds since the Unix epoch.
    pub(crate) at_ms: u64,
    /// The run (start of the backend) that printed it: the backend's own count of starts.
    #[serde(skip)]
    pub(crate) run: u64,
    pub stream: OutputStream,
    pub text: String,
}

/// What a backend offers, as its server listed it (raw JSON, unknown fields kept).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Catalog {
    pub tools: Vec<Box<RawValue>>,
    pub resources: Vec<Box<RawValue>>,
    pub resource_templates: Vec<Box<RawValue>>,
    pub prompts: Vec<Box<RawValue>>,
    /// The Skills extension's entries (`skills/list`), as the server wrote them.
    pub skills: Vec<Box<RawValue>>,
}

/// What the server said about itself in the handshake (`initialize`, or `server/discover` for a
/// stateless-era backend).
#[derive(Debug, Clone, Serialize)]
pub struct ServerDescription {
    /// The era the backend was found to speak.
    pub era: Era,
    pub protocol_version: String,
    pub server_info: Box<RawValue>,
    pub capabilities: Box<RawValue>,
    pub instructions: Option<String>,
}

/// What a package runner (`npx`, `uvx`…) is doing while its backend starts: installing the
/// package, not yet running the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Installing {
    /// The runner, as the command line names it: `npx`, `uvx`, `pnpm dlx`, `pipx run`…
    pub(crate) runner: String,
    /// The package, as the command line names it (with its version or source, if given).
    pub(crate) package: String,
    /// When the runner started, in milliseconds since the Unix epoch.
    pub(crate) since_ms: u64,
}

/// The published status of one backend.
#[derive(Debug, Clone, Serialize)]
pub struct BackendStatus {
    pub name: String,
    pub state: BackendState,
    /// While `starting`: the package runner is still installing the server's package.
    pub installing: Option<Installing>,
    pub pid: Option<u32>,
    /// Since when the current process has been ready, in milliseconds since the Unix epoch.
    pub ready_since_ms: Option<u64>,
    /// When the next automatic restart is due, while in backoff.
    pub restart_at_ms: Option<u64>,
    /// Automatic restarts since Switchboard started.
    pub restarts: u32,
    /// The last thing that went wrong (a failed start, for instance), cleared when ready; or,
    /// while ready, what went wrong without stopping the start (a list the server declares and
    /// does not have, taken as empty).
    pub last_error: Option<String>,
    /// Newest last; bounded.
    pub history: Arc<Vec<HistoryEntry>>,
    pub server: Option<Arc<ServerDescription>>,
    pub catalog: Arc<Catalog>,
    /// For a remote server, the HTTP transport of its link: as the config sets it, and once a
    /// link is ready, the one it speaks. `None` for a local server.
    pub transport: Option<RemoteTransport>,
    /// The version of the package a runner (`npx`, `uvx`…) runs, as its command pins it or the
    /// runner resolved it; kept from the last start.
    pub version: Option<String>,
}

impl BackendStatus {
    pub fn new(name: &str) -> BackendStatus {
        BackendStatus {
            name: name.to_owned(),
            state: BackendState::Stopped,
            installing: None,
            pid: None,
            ready_since_ms: None,
            restart_at_ms: None,
            restarts: 0,
            last_error: None,
            history: Arc::default(),
            server: None,
            catalog: Arc::default(),
            transport: None,
            version: None,
        }
    }

    /// The actions worth offering now, the one rule the dashboard's buttons and the tray's menu
    /// both follow: start unless ready or starting, stop unless stopped, restart always; a
    /// sign-in while a remote server waits for one, and a sign-out while one is ready (it has
    /// tokens to forget). The control API decides what is allowed.
    pub fn actions(&self) -> Vec<BackendAction> {
        let state = self.state;
        let remote = self.transport.is_some();
        [
            (BackendAction::SignIn, state == BackendState::NeedsSignIn),
            (
                BackendAction::Start,
                !matches!(state, BackendState::Ready | BackendState::Starting),
            ),
            (BackendAction::Stop, state != BackendState::Stopped),
            (BackendAction::Restart, true),
            (
                BackendAction::SignOut,
                remote && state == BackendState::Ready,
            ),
        ]
        .into_iter()
        .filter_map(|(action, offered)| offered.then_some(action))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(state: BackendState, transport: Option<RemoteTransport>) -> BackendStatus {
        BackendStatus {
            state,
            transport,
            ..BackendStatus::new("files")
        }
    }

    #[test]
    fn the_actions_offered_follow_the_state_and_a_sign_out_needs_a_remote_server() {
        use BackendAction::*;
        let local = |state| status(state, None).actions();
        assert_eq!(local(BackendState::Stopped), [Start, Restart]);
        assert_eq!(local(BackendState::Starting), [Stop, Restart]);
        assert_eq!(local(BackendState::Ready), [Stop, Restart]);
        assert_eq!(local(BackendState::CrashLoop), [Start, Stop, Restart]);
        let remote = |state| status(state, Some(RemoteTransport::StreamableHttp)).actions();
        assert_eq!(remote(BackendState::Ready), [Stop, Restart, SignOut]);
        assert_eq!(
            remote(BackendState::NeedsSignIn),
            [SignIn, Start, Stop, Restart]
        );
    }

    #[test]
    fn only_a_backend_waiting_to_restart_or_in_a_crash_loop_is_failing() {
        let failing: Vec<BackendState> = [
            BackendState::Stopped,
            BackendState::Starting,
            BackendState::Ready,
            BackendState::Backoff,
            BackendState::CrashLoop,
            BackendState::Stopping,
            BackendState::NeedsSignIn,
        ]
        .into_iter()
        .filter(|state| state.is_failing())
        .collect();
        assert_eq!(failing, [BackendState::Backoff, BackendState::CrashLoop]);
    }
}
