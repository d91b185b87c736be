//! Commands that act on the running Switchboard from the command line, through its control API:
//! the instance file in the runtime directory says where it listens, and the dashboard token
//! (from `SWITCHBOARD_TOKEN` or the data directory) lets the command in.

use std::path::Path;

use anyhow::Context;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;

use crate::control::instance::Instance;
use crate::control::reload::ReloadOutcome;
use crate::control::token;

/// Asks the running instance to reload its config file, and returns what it did.
pub async fn reload(runtime_dir: &Path, data_dir: &Path) -> anyhow::Result<ReloadOutcome> {
    let body = post(runtime_dir, data_dir, "/api/config/reload").await?;
    serde_json::from_slice(&body).context("the control API answered something unexpected")
}

/// POSTs to `path` on the running instance; returns the body of a 200 answer.
async fn post(runtime_dir: &Path, data_dir: &Path, path: &str) -> anyhow::Result<Bytes> {
    let instance_file = Instance::path(runtime_dir);
    let instance = Instance::read(&instance_file).with_context(|| {
        format!(
            "no running Switchboard found (no readable {}); start one with `switchboard serve` \
             or the desktop app",
            instance_file.display()
        )
    })?;
    let token = token::load_or_create(data_dir).context("cannot read the dashboard token")?;
    let stream = tokio::net::TcpStream::connect(instance.address)
        .await
        .with_context(|| {
            format!(
                "Switchboard (pid {}) does not answer on {}",
                instance.pid, instance.address
            )
        })?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .context("cannot talk HTTP to Switchboard")?;
    tokio::spawn(connection);
    let request = hyper::Request::post(path)
        .header(hyper::header::HOST, instance.address.to_string())
        .header(
            hyper::header::AUTHORIZATION,
            format!("Bearer {}", token.expose()),
        )
        // The API takes changes only as JSON, which a cross-site form cannot send.
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Empty::<Bytes>::new())
        .context("cannot build the request")?;
    let response = sender
        .send_request(request)
        .await
        .context("Switchboard closed the connection")?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .context("cannot read Switchboard's answer")?
        .to_bytes();
    if !status.is_success() {
        anyhow::bail!(
            "Switchboard answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
    }
    Ok(body)
}
