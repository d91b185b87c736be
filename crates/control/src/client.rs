//! Commands that act on the running Switchboard from the command line, over its local socket
//! (a named pipe on Windows): the system tells the instance that the command runs as the same
//! user, and the socket's key from the data directory tells it that the command is not a
//! sandboxed server's; no address is taken from a file.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::instance::{Instance, Running};
use crate::reload::ReloadOutcome;
use transport::handoff::{Command, Header, Key};

/// How often [`stop`] looks whether the instance is gone.
const GONE_POLL: Duration = Duration::from_millis(50);

/// Why a command did not reach a running instance.
#[derive(Debug, thiserror::Error)]
pub enum Unreached {
    /// Nothing listens on the socket: no instance runs with this runtime directory.
    #[error(
        "no running Switchboard answers on {}; start one with `switchboard serve` or the \
         desktop app",
        .socket.display()
    )]
    NotRunning { socket: PathBuf },
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

/// Asks the running instance to reload its config file, and returns what it did.
pub async fn reload(runtime_dir: &Path, data_dir: &Path) -> Result<ReloadOutcome, Unreached> {
    let answer = ask(runtime_dir, data_dir, Command::Reload).await?;
    Ok(serde_json::from_str(&answer).context("Switchboard answered something unexpected")?)
}

/// What the running instance says of itself.
pub async fn status(runtime_dir: &Path, data_dir: &Path) -> Result<Running, Unreached> {
    let answer = ask(runtime_dir, data_dir, Command::Status).await?;
    Ok(serde_json::from_str(&answer).context("Switchboard answered something unexpected")?)
}

/// How a [`stop`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// The instance with this pid shut down (its backends stopped) and is gone.
    Gone { pid: u32 },
    /// It was asked, and still runs after `waited`.
    StillRunning { pid: u32, waited: Duration },
}

/// Asks the running instance to shut down as on SIGTERM, then waits at most `limit` until it has
/// (its instance record is taken out once every backend is stopped) or its process is gone.
pub async fn stop(
    runtime_dir: &Path,
    data_dir: &Path,
    limit: Duration,
) -> Result<Stopped, Unreached> {
    let answer = ask(runtime_dir, data_dir, Command::Stop).await?;
    let stopping: Instance =
        serde_json::from_str(&answer).context("Switchboard answered something unexpected")?;
    let pid = stopping.pid;
    let record = Instance::path(runtime_dir);
    let started = Instant::now();
    loop {
        let recorded = Instance::read(&record).is_ok_and(|instance| instance.pid == pid);
        if !recorded || !platform::process::exists(pid) {
            return Ok(Stopped::Gone { pid });
        }
        if started.elapsed() >= limit {
            return Ok(Stopped::StillRunning {
                pid,
                waited: started.elapsed(),
            });
        }
        tokio::time::sleep(GONE_POLL).await;
    }
}

/// Sends `command` on the socket of the instance using `runtime_dir`; returns its answer.
async fn ask(runtime_dir: &Path, data_dir: &Path, command: Command) -> Result<String, Unreached> {
    let socket = transport::socket::socket_path(runtime_dir);
    let mut stream = match platform::ipc::connect(&socket).await {
        Ok(stream) => stream,
        Err(error) if platform::ipc::nothing_listens(&error) => {
            return Err(Unreached::NotRunning { socket });
        }
        Err(error) => {
            return Err(anyhow::anyhow!(
                "cannot reach Switchboard on {}: {error}",
                socket.display()
            )
            .into());
        }
    };
    let key = transport::token::read_socket_key(data_dir)
        .context("cannot read the key of Switchboard's socket")?;
    stream
        .write_all(&Header::control(Key::new(&key), command).to_line())
        .await
        .context("Switchboard closed the connection")?;
    let mut answer = String::new();
    BufReader::new(stream)
        .read_line(&mut answer)
        .await
        .context("cannot read Switchboard's answer")?;
    if let Some(reason) = answer.strip_prefix('R') {
        return Err(anyhow::anyhow!("Switchboard refused the command: {}", reason.trim()).into());
    }
    Ok(answer)
}
