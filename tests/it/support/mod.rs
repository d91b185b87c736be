//! Shared helpers of the integration tests: real processes, real pipes, no mocks.

mod eventually;
mod fixture;
mod mcp;
mod raw_http;
mod serve;

pub use eventually::{eventually, eventually_blocking, poll, poll_blocking};
pub use fixture::{Fixture, keychain_service, oidc_server, python, remote_server};
pub use mcp::{INITIALIZED, McpHttp, McpStream, initialize};
pub use raw_http::{Reply, exchange, read_reply};
pub use serve::{SERVE_TOKEN, ServeOptions, ServeProcess, ServedBackend};

use std::path::PathBuf;
use std::time::Duration;

use config::{BackendConfig, RestartPolicy};
use supervisor::status::{BackendState, BackendStatus};
use supervisor::{BackendHandle, Engine, EngineOptions};

/// Generous bound for waiting on an event that should come within milliseconds; only a broken
/// implementation ever reaches it.
pub const EVENT_LIMIT: Duration = Duration::from_secs(20);

/// A test server of `tests/backends/`.
pub fn backend_script(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/backends")
        .join(file)
}

pub fn misbehave_script() -> PathBuf {
    backend_script("misbehave.py")
}

pub fn sdk_server_script() -> PathBuf {
    backend_script("sdk_server.mjs")
}

/// A backend running `tests/backends/sdk_server.mjs` (the official TypeScript SDK) with `flags`,
/// with quick restarts.
pub fn sdk_server(name: &str, flags: &[&str]) -> BackendConfig {
    node_module("@modelcontextprotocol/server");
    let mut args = vec![sdk_server_script().to_string_lossy().into_owned()];
    args.extend(flags.iter().map(|flag| flag.to_string()));
    let mut config = BackendConfig::new(name, "node", args);
    config.restart = fast_restarts();
    config
}

pub fn switchboard_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_switchboard"))
}

/// A backend running the misbehaving test server with `flags`, with quick restarts.
pub fn misbehave(name: &str, flags: &[&str]) -> BackendConfig {
    let mut args = vec![misbehave_script().to_string_lossy().into_owned()];
    args.extend(flags.iter().map(|flag| flag.to_string()));
    let mut config = BackendConfig::new(name, "python3", args);
    config.restart = fast_restarts();
    config.stop_grace = Duration::from_millis(500);
    config.handshake_timeout = Duration::from_secs(10);
    config.request_timeout = Duration::from_secs(20);
    config
}

pub fn demo(name: &str) -> BackendConfig {
    let mut config = BackendConfig::new(
        name,
        switchboard_exe().to_string_lossy().into_owned(),
        vec!["demo-server".to_owned()],
    );
    config.restart = fast_restarts();
    config
}

/// A backend running `tests/backends/tasks_server.py` (2026-07-28 with the Tasks extension).
pub fn tasks_server(name: &str) -> BackendConfig {
    let mut config = BackendConfig::new(
        name,
        "python3",
        vec![
            backend_script("tasks_server.py")
                .to_string_lossy()
                .into_owned(),
        ],
    );
    config.restart = fast_restarts();
    config
}

/// A backend running server-everything from npm over stdio, with quick restarts.
pub fn everything(name: &str) -> BackendConfig {
    let mut config = BackendConfig::new(
        name,
        everything_server().to_string_lossy().into_owned(),
        vec!["stdio".to_owned()],
    );
    config.restart = fast_restarts();
    config
}

pub fn fast_restarts() -> RestartPolicy {
    RestartPolicy {
        backoff_base: Duration::from_millis(20),
        backoff_cap: Duration::from_millis(200),
        max_restarts: 5,
        window: Duration::from_secs(60),
        stable_after: Duration::from_secs(30),
    }
}

/// Starts an engine over the given backends with its process groups kept in memory only.
pub fn engine(configs: Vec<BackendConfig>) -> Engine {
    let groups = supervisor::spawn::ProcessGroups::in_memory();
    Engine::start(
        configs,
        EngineOptions {
            groups,
            server_requests: None,
            auth: None,
        },
    )
}

/// Waits until the backend's published status satisfies `check`, and returns that status.
pub async fn wait_status(
    handle: &BackendHandle,
    check: impl Fn(&BackendStatus) -> bool,
) -> BackendStatus {
    let mut status = handle.watch_status();
    let found = tokio::time::timeout(EVENT_LIMIT, status.wait_for(|status| check(status))).await;
    match found {
        Ok(Ok(status)) => status.clone(),
        _ => panic!("status never matched; last: {:?}", handle.status()),
    }
}

pub async fn wait_state(handle: &BackendHandle, state: BackendState) -> BackendStatus {
    wait_status(handle, |status| status.state == state).await
}

/// Whether a process exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Polls until `pid` is gone (processes reparented to init are reaped asynchronously); false if
/// it is still there after [`EVENT_LIMIT`].
pub async fn wait_gone(pid: u32) -> bool {
    let gone = || async { if alive(pid) { Err(()) } else { Ok(()) } };
    poll(EVENT_LIMIT, gone).await.is_ok()
}

/// Reads `<pid> <grandchild pid>` written by the misbehaving server's `--pidfile`.
pub async fn read_pidfile(path: &std::path::Path) -> (u32, u32) {
    eventually("the pidfile names both processes", EVENT_LIMIT, || async {
        let text = std::fs::read_to_string(path).map_err(|error| error.to_string())?;
        let mut parts = text
            .split_whitespace()
            .map(|part| part.parse::<u32>().expect("a pid"));
        match (parts.next(), parts.next()) {
            (Some(pid), Some(grandchild)) => Ok((pid, grandchild)),
            _ => Err(text),
        }
    })
    .await
}

/// Parses a raw JSON-RPC result.
pub fn json(raw: &serde_json::value::RawValue) -> serde_json::Value {
    serde_json::from_str(raw.get()).expect("results are valid JSON")
}

/// The params of `tools/call` for `name` with `arguments`.
pub fn call_params(name: &str, arguments: serde_json::Value) -> Box<serde_json::value::RawValue> {
    let params = serde_json::json!({ "name": name, "arguments": arguments });
    serde_json::value::RawValue::from_string(params.to_string()).expect("valid JSON")
}

/// The text of the first content block of a tool result.
pub fn first_text(result: &serde_json::Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .expect("a text content block")
        .to_owned()
}

/// The names in a `tools/list` result, sorted.
pub fn sorted_tool_names(list: &serde_json::Value) -> Vec<String> {
    let mut names: Vec<String> = list["tools"]
        .as_array()
        .expect("a list of tools")
        .iter()
        .map(|tool| tool["name"].as_str().expect("a name").to_owned())
        .collect();
    names.sort();
    names
}

/// A file of the repository's node_modules (installed by `npm ci`, as `scripts/test` does);
/// fails the test clearly when npm packages are missing.
pub fn node_module(path: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("node_modules")
        .join(path);
    assert!(
        path.exists(),
        "{} is missing: run `npm ci` in {} first",
        path.display(),
        env!("CARGO_MANIFEST_DIR")
    );
    path
}

/// The official "everything" MCP server.
pub fn everything_server() -> PathBuf {
    node_module(".bin/mcp-server-everything")
}

/// Runs a `node --test …` command (arguments and environment set by the caller) in its own
/// process group, bounded by `limit`, and asserts that it passed tests and failed none. Whatever
/// node leaves in its group (a browser, a `switchboard connect` of a client never closed) is
/// killed before the caller stops its Switchboard: a shim that loses its Switchboard would start
/// another.
pub fn run_node_suite(
    mut node: std::process::Command,
    limit: Duration,
    serve_log: &dyn Fn() -> String,
) {
    use std::os::unix::process::CommandExt;
    node.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    let child = match node.spawn() {
        Ok(child) => child,
        Err(error) => panic!("cannot run node ({error}); scripts/test installs Node.js"),
    };
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let (done_tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(child.wait_with_output());
    });
    let output = match done.recv_timeout(limit) {
        Ok(output) => output.expect("node's output is readable"),
        Err(_) => {
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
            panic!(
                "node --test did not finish within {limit:?}; serve log:\n{}",
                serve_log()
            );
        }
    };
    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);

    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let count = |prefix: &str| {
        stdout
            .lines()
            .find_map(|line| line.strip_prefix(prefix))
            .and_then(|count| count.trim().parse::<u32>().ok())
            .unwrap_or(0)
    };
    let (passed, failed) = (count("# pass "), count("# fail "));
    assert!(
        output.status.success() && passed > 0 && failed == 0,
        "node --test failed ({status}, {passed} passed, {failed} failed)\n\
         --- node stdout ---\n{stdout}\n--- node stderr ---\n{stderr}\n--- serve log ---\n{log}",
        status = output.status,
        log = serve_log(),
    );
}
