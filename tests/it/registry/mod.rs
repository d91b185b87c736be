//! Servers added from a registry: a real source of the v0.1 API (`tests/registry/source.py`)
//! serving real `server.json` entries (`tests/registry/entries.json`), a real `serve`, the real
//! packages from npm (`@modelcontextprotocol/server-everything`) and PyPI (`mcp-server-time`,
//! run by `uvx`), the real keychain (gnome-keyring, through `scripts/with-keyring`) and a real
//! remote server that wants a secret header. Adding pins an exact version and holds the first
//! tools for review; updating moves the pin; removing leaves nothing behind; every bad entry or
//! source is refused saying why.
//! This file holds the source, the `serve` and the calls the tests share; the tests are in the
//! modules below.

mod adding;
mod command_line;
mod safeguards;
mod sources;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// How long a first `npx`/`uvx` install may take.
const INSTALL_LIMIT: Duration = Duration::from_secs(240);

fn source(args: &[&str]) -> Fixture {
    let mut command = Command::new(python());
    command
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/registry/source.py"))
        .args(args);
    Fixture::start(command)
}

/// `target/py/bin` (where `uv` is installed) first on a PATH.
fn path_with_uv() -> String {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/py/bin");
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A serve whose only registry source is `url` (and the built-in set), with a keychain service
/// of its own.
fn serve_with_source(url: &str, service: &str) -> ServeProcess {
    ServeOptions::new(&format!("[registry]\nsources = [{url:?}]\n"))
        .env("SWITCHBOARD_KEYCHAIN_SERVICE", service)
        .env("PATH", path_with_uv())
        .start()
}

/// Runs `switchboard ARGS` beside `serve` with `stdin`; whether it succeeded, its stdout and
/// its stderr.
fn cli(serve: &ServeProcess, service: &str, args: &[&str], stdin: &str) -> (bool, String, String) {
    use std::io::Write as _;
    let mut child = Command::new(switchboard_exe())
        .args(args)
        .envs(serve.env())
        .env("SWITCHBOARD_KEYCHAIN_SERVICE", service)
        .env("PATH", path_with_uv())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("switchboard runs");
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(stdin.as_bytes())
        .expect("stdin");
    let output = child.wait_with_output().expect("switchboard ends");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `POST /api/registry/add` as the dashboard makes it: first without `confirm`, which answers
/// the plan and writes nothing (checked here), then with the plan's `confirm`. The plan, and
/// the status and answer of the confirmation.
async fn add_confirmed(serve: &ServeProcess, body: Value) -> (Value, u16, Value) {
    let before = std::fs::read_to_string(serve.config_path()).unwrap();
    let (status, plan) = serve
        .api_post_body("/api/registry/add", &body.to_string())
        .await;
    assert_eq!(status, 200, "{body}: {plan}");
    assert!(plan["confirm"].is_string(), "{plan}");
    assert_eq!(
        std::fs::read_to_string(serve.config_path()).unwrap(),
        before,
        "a plan writes nothing"
    );
    let mut confirmed = body;
    confirmed["confirm"] = plan["confirm"].clone();
    let (status, added) = serve
        .api_post_body("/api/registry/add", &confirmed.to_string())
        .await;
    (plan, status, added)
}

/// Approves everything of `server` that is held (as the Review page's "approve all" would),
/// once something is.
async fn approve_all(serve: &ServeProcess, server: &str) -> Vec<String> {
    let keys = eventually(&format!("{server}'s tools held"), INSTALL_LIMIT, || async {
        let report = serve.api_get("/api/pins").await;
        let keys: Vec<String> = report["held"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|one| one["server"] == server)
            .filter_map(|one| one["key"].as_str().map(str::to_owned))
            .collect();
        if keys
            .iter()
            .any(|key| !key.contains(':') && key != "instructions")
        {
            Ok(keys)
        } else {
            Err(report)
        }
    })
    .await;
    let body = json!({ "tools": keys }).to_string();
    let (status, answer) = serve
        .api_post_body(&format!("/api/pins/{server}/approve"), &body)
        .await;
    assert_eq!(status, 200, "{answer}");
    keys
}

/// The exposed names `/mcp`'s `tools/list` gives a new session.
async fn listed_tools(serve: &ServeProcess) -> Vec<String> {
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp.open_session("registry-test").await.expect("a session");
    let list = mcp.result(&session, 2, "tools/list", json!({})).await;
    sorted_tool_names(&list)
}

/// `DELETE /api/servers/NAME`, as the dashboard's Remove does; panics unless it is done.
async fn remove_server(serve: &ServeProcess, name: &str) {
    let response = serve
        .client()
        .delete(serve.http_url(&format!("/api/servers/{name}")))
        .bearer_auth(SERVE_TOKEN)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

async fn wait_version(serve: &ServeProcess, server: &str, version: &str) -> Value {
    eventually(
        &format!("{server} ready at {version}"),
        INSTALL_LIMIT,
        || async {
            let summary = serve.backend_summary(server).await;
            if summary["state"] == "ready" && summary["version"] == version {
                Ok(summary)
            } else {
                Err(summary)
            }
        },
    )
    .await
}

/// A source with the hostile entries (`tests/registry/hostile.json` and the bundles
/// `source.py --hostile` makes), whose marker bundle writes `marker` when it runs.
fn hostile_source(marker: &std::path::Path) -> Fixture {
    source(&["--hostile", "--marker", &marker.display().to_string()])
}

/// The names of the backends serve runs.
async fn backend_names(serve: &ServeProcess) -> Vec<String> {
    serve
        .api_get("/api/backends")
        .await
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|backend| backend["name"].as_str().map(str::to_owned))
        .collect()
}
