//! Commands that act on the running Switchboard from the command line, over its local socket
//! (a named pipe on Windows): the system tells the instance that the command runs as the same
//! user, and the socket's key from the data directory tells it that the command is not a
//! sandboxed server's; no address is taken from a file.

use std::path::Path;

use anyhow::Context;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::reload::ReloadOutcome;
use transport::handoff::{Command, Header, Key};

/// Asks the running instance to reload its config file, and returns what it did.
pub async fn reload(runtime_dir: &Path, data_dir: &Path) -> anyhow::Result<ReloadOutcome> {
    let answer = ask(runtime_dir, data_dir, Command::Reload).await?;
    serde_json::from_str(&answer).context("Switchboard answered something unexpected")
}

/// Sends `command` on the socket of the instance using `runtime_dir`; returns its answer.
async fn ask(runtime_dir: &Path, data_dir: &Path, command: Command) -> anyhow::Result<String> {
    let socket = transport::socket::socket_path(runtime_dir);
    let mut stream =
        platform::ipc::connect(&socket).await.map_err(
            |error| match platform::ipc::nothing_listens(&error) {
                true => anyhow::anyhow!(
                    "no running Switchboard answers on {}; start one with `switchboard serve` or \
                 the desktop app",
                    socket.display()
                ),
                false => {
                    anyhow::anyhow!("cannot reach Switchboard on {}: {error}", socket.display())
                }
            },
        )?;
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
        anyhow::bail!("Switchboard refused the command: {}", reason.trim());
    }
    Ok(answer)
}
