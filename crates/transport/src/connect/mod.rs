//! `switchboard connect`: the stdio shim an editor launches. It attaches to the running
//! Switchboard through the local socket in the runtime directory (a named pipe on Windows;
//! starting a headless instance when none runs), and then either hands it the editor's stdin
//! and stdout ([`handoff`], on Unix, when both are pipes or sockets), so that calls travel
//! between the editor and Switchboard with no process in between; or relays the editor's lines
//! over the connection itself ([`relay`]: on Windows, which cannot pass descriptors, and for a
//! terminal or a file). Either way, when the instance restarts or dies, the calls in flight
//! fail at once with -32001, what the editor writes meanwhile waits, and the session carries on
//! with the next instance, the editor's handshake replayed unseen.

#[cfg(unix)]
mod handoff;
mod relay;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

/// Where to find (or how to start) the running Switchboard.
pub struct ConnectOptions {
    /// The runtime directory, where the socket lives.
    pub runtime_dir: PathBuf,
    /// The data directory, where the socket's key is.
    pub data_dir: PathBuf,
    /// The Switchboard binary to start headless when none runs.
    pub exe: PathBuf,
    /// A config file to pass to that headless instance.
    pub config: Option<PathBuf>,
    /// The profile to serve the editor; the default one when `None`.
    pub profile: Option<String>,
}

/// The log of a headless instance started by `connect`, in the runtime directory.
pub(crate) const SERVE_LOG_NAME: &str = "serve.log";

/// The message of the error that fails a call lost with the connection.
pub const RESTARTED_MESSAGE: &str = "Switchboard restarted; this call was lost, please retry";

/// The message of the error that fails a call still unanswered when Switchboard closed the
/// session after the editor closed stdin.
const UNANSWERED_MESSAGE: &str =
    "Switchboard closed the session before answering; the editor had closed stdin";

/// How long attaching may take in all, including starting an instance.
const ATTACH_LIMIT: Duration = Duration::from_secs(20);
/// After the connection closed, how long to wait for an instance to come back before starting one.
const START_AFTER: Duration = Duration::from_secs(2);
const ATTACH_POLL: Duration = Duration::from_millis(50);

/// Runs the shim until the editor closes stdin and its answers are delivered.
pub fn run(options: ConnectOptions) -> anyhow::Result<()> {
    #[cfg(unix)]
    if handoff::stdio_can_be_handed_over() {
        return handoff::run(options);
    }
    relay::run(options)
}

/// Starts a headless instance when none answers, and says why none did.
struct Starter {
    runtime_dir: PathBuf,
    data_dir: PathBuf,
    socket: PathBuf,
    log: PathBuf,
    exe: PathBuf,
    config: Option<PathBuf>,
}

impl Starter {
    fn new(options: &ConnectOptions) -> Starter {
        Starter {
            runtime_dir: options.runtime_dir.clone(),
            data_dir: options.data_dir.clone(),
            socket: crate::socket::socket_path(&options.runtime_dir),
            log: options.runtime_dir.join(SERVE_LOG_NAME),
            exe: options.exe.clone(),
            config: options.config.clone(),
        }
    }

    /// Starts a headless instance detached from us, logging to the runtime directory.
    ///
    /// Not from inside an app package (Claude Desktop's MSIX install on Windows): the instance
    /// would run in that package too, its files redirected to a copy of the package's own, a
    /// second Switchboard with another token, other pins and another log.
    fn start_instance(&self) -> anyhow::Result<u32> {
        if let Some(package) = platform::process::app_package() {
            anyhow::bail!(
                "Switchboard is not running, and it cannot be started from inside the app package \
                 {package} (it would keep its files apart from yours): start the Switchboard app \
                 (it can start at login)"
            );
        }
        platform::files::create_private_dir(&self.runtime_dir)
            .with_context(|| format!("cannot create {}", self.runtime_dir.display()))?;
        let mut args = vec![OsString::from("serve")];
        if let Some(config) = &self.config {
            let config = std::path::absolute(config).unwrap_or_else(|_| config.clone());
            args.extend([OsString::from("--config"), config.into_os_string()]);
        }
        let env = [
            (
                OsString::from(platform::dirs::RUNTIME_DIR_ENV),
                self.runtime_dir.clone().into_os_string(),
            ),
            (
                OsString::from(platform::dirs::DATA_DIR_ENV),
                self.data_dir.clone().into_os_string(),
            ),
        ];
        let pid = supervisor::spawn::spawn_detached(&self.exe, &args, &env, &self.log)
            .with_context(|| format!("cannot start {} serve", self.exe.display()))?;
        tracing::info!(pid, log = %self.log.display(), "started a headless Switchboard");
        Ok(pid)
    }

    /// The socket's key, read from the data directory once an instance answers (it makes the
    /// key before it listens).
    fn key(&self) -> anyhow::Result<crate::handoff::Key> {
        let key = crate::token::read_socket_key(&self.data_dir)
            .context("cannot read the key of Switchboard's socket")?;
        Ok(crate::handoff::Key::new(&key))
    }

    /// Whether an instance this shim started has given up.
    fn gave_up(started: Option<u32>) -> bool {
        started.is_some_and(|pid| !platform::process::exists(pid))
    }

    fn not_answering(&self, started: Option<u32>) -> anyhow::Error {
        let waited = ATTACH_LIMIT.as_secs();
        let socket = self.socket.display();
        let log = self.log.display();
        let tail = log_tail(&self.log);
        match started {
            Some(pid) if !platform::process::exists(pid) => anyhow::anyhow!(
                "the Switchboard started here (pid {pid}) exited before answering on {socket}; \
                 see {log}{tail}"
            ),
            Some(pid) => anyhow::anyhow!(
                "the Switchboard started here (pid {pid}) did not answer on {socket} within \
                 {waited} s; see {log}{tail}"
            ),
            None => anyhow::anyhow!("nothing answered on {socket} within {waited} s"),
        }
    }
}

/// The last lines of a log, to put in an error message.
fn log_tail(log: &Path) -> String {
    const LINES: usize = 8;
    let Ok(text) = std::fs::read_to_string(log) else {
        return String::new();
    };
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(LINES)..].join("\n  ");
    if tail.is_empty() {
        String::new()
    } else {
        format!("; it ends with:\n  {tail}")
    }
}

/// The ids (JSON text) of the requests among the complete lines of `bytes`.
fn request_ids(bytes: &[u8]) -> Vec<Box<str>> {
    use wire::jsonrpc::{Envelope, Kind};
    let complete = match memchr::memrchr(b'\n', bytes) {
        Some(pos) => &bytes[..pos],
        None => return Vec::new(),
    };
    complete
        .split(|&byte| byte == b'\n')
        .filter_map(|line| {
            let envelope = Envelope::parse(line).ok()?;
            match envelope.kind() {
                Kind::Request => envelope.id.map(|id| Box::from(id.get())),
                _ => None,
            }
        })
        .collect()
}

/// Lines answering each of `ids` (JSON text) with an error carrying `message`.
fn error_lines(ids: impl IntoIterator<Item = Box<str>>, message: &str) -> Vec<u8> {
    use wire::jsonrpc::{self, ErrorObject};
    let error = ErrorObject::new(jsonrpc::BACKEND_UNAVAILABLE, message);
    let mut lines = Vec::new();
    for id in ids {
        if let Ok(id) = serde_json::from_str::<&serde_json::value::RawValue>(&id) {
            lines.extend_from_slice(&jsonrpc::error_line(Some(id), &error));
        }
    }
    lines
}
