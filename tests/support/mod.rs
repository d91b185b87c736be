//! Shared helpers of the integration tests: real processes, real pipes, no mocks.
#![allow(dead_code, clippy::disallowed_methods)]

use std::path::PathBuf;
use std::time::Duration;

use switchboard::config::{BackendConfig, RestartPolicy};
use switchboard::status::{BackendState, BackendStatus};
use switchboard::supervisor::{BackendHandle, Engine, EngineOptions};

/// Generous bound for waiting on an event that should come within milliseconds; only a broken
/// implementation ever reaches it.
pub const EVENT_LIMIT: Duration = Duration::from_secs(20);

pub fn misbehave_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/backends/misbehave.py")
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

pub fn fast_restarts() -> RestartPolicy {
    RestartPolicy {
        backoff_base: Duration::from_millis(20),
        backoff_cap: Duration::from_millis(200),
        max_restarts: 5,
        window: Duration::from_secs(60),
        stable_after: Duration::from_secs(30),
    }
}

/// Starts an engine over the given backends with an in-memory process-group registry.
pub fn engine(configs: Vec<BackendConfig>) -> Engine {
    let groups = switchboard::spawn::GroupRegistry::in_memory();
    Engine::start(
        configs,
        EngineOptions {
            groups,
            server_requests: None,
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

/// Polls until `pid` is gone (processes reparented to init are reaped asynchronously).
pub async fn wait_gone(pid: u32) -> bool {
    let deadline = tokio::time::Instant::now() + EVENT_LIMIT;
    while tokio::time::Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// Reads `<pid> <grandchild pid>` written by the misbehaving server's `--pidfile`.
pub async fn read_pidfile(path: &std::path::Path) -> (u32, u32) {
    let deadline = tokio::time::Instant::now() + EVENT_LIMIT;
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            let mut parts = text
                .split_whitespace()
                .map(|part| part.parse::<u32>().expect("a pid"));
            if let (Some(pid), Some(grandchild)) = (parts.next(), parts.next()) {
                return (pid, grandchild);
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "pidfile {} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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
