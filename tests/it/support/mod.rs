//! Shared helpers of the integration tests: real processes, real pipes, no mocks.

use std::path::PathBuf;
use std::time::Duration;

use switchboard::config::{BackendConfig, RestartPolicy};
use switchboard::supervisor::status::{BackendState, BackendStatus};
use switchboard::supervisor::{BackendHandle, Engine, EngineOptions};

/// Generous bound for waiting on an event that should come within milliseconds; only a broken
/// implementation ever reaches it.
pub const EVENT_LIMIT: Duration = Duration::from_secs(20);

/// The dashboard token of every [`ServeProcess`].
pub const SERVE_TOKEN: &str = "serve-test-token-0123456789";

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
    let groups = switchboard::supervisor::spawn::GroupRegistry::in_memory();
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

/// A backend that [`ServeProcess`] can put behind `switchboard serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServedBackend {
    /// `switchboard demo-server`, as `demo`.
    Demo,
    /// The official `@modelcontextprotocol/server-everything` from node_modules, as `everything`.
    Everything,
    /// `tests/backends/misbehave.py`, as `mis`.
    Misbehave,
}

impl ServedBackend {
    /// The backend's name in the config, which prefixes its tools.
    pub fn name(self) -> &'static str {
        match self {
            ServedBackend::Demo => "demo",
            ServedBackend::Everything => "everything",
            ServedBackend::Misbehave => "mis",
        }
    }

    fn config_entry(self) -> String {
        let (command, args) = match self {
            ServedBackend::Demo => (switchboard_exe(), vec!["demo-server".to_owned()]),
            ServedBackend::Everything => (everything_server(), vec!["stdio".to_owned()]),
            ServedBackend::Misbehave => (
                PathBuf::from("python3"),
                vec![misbehave_script().to_string_lossy().into_owned()],
            ),
        };
        format!(
            "[servers.{name}]\ncommand = {command:?}\nargs = {args:?}\n\n",
            name = self.name(),
            command = command.to_string_lossy(),
        )
    }
}

/// The repository's node_modules (installed by `npm ci`, as `scripts/test` does).
pub fn node_modules() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("node_modules")
}

/// The official "everything" MCP server; fails the test clearly when npm packages are missing.
pub fn everything_server() -> PathBuf {
    let path = node_modules().join(".bin/mcp-server-everything");
    assert!(
        path.exists(),
        "{} is missing: run `npm ci` in {} first",
        path.display(),
        env!("CARGO_MANIFEST_DIR")
    );
    path
}

/// A real `switchboard serve` on a free loopback port, with its own config, runtime and data
/// directories. Dropping it stops it with SIGTERM (SIGKILL if it does not exit in time), so no
/// backend outlives the test.
pub struct ServeProcess {
    child: std::process::Child,
    url: String,
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    dir: tempfile::TempDir,
}

impl ServeProcess {
    /// Starts `switchboard serve` over `backends` and waits until it listens and every backend
    /// is ready.
    pub fn start(backends: &[ServedBackend]) -> ServeProcess {
        let config: String = backends
            .iter()
            .map(|backend| backend.config_entry())
            .collect();
        let names: Vec<&str> = backends.iter().map(|backend| backend.name()).collect();
        Self::with_config(&config, &names)
    }

    /// Starts `switchboard serve` over the config `text` (TOML) and waits until it listens and
    /// the backends named in `ready` are ready. Its dashboard token is [`SERVE_TOKEN`].
    pub fn with_config(text: &str, ready: &[&str]) -> ServeProcess {
        Self::with_config_and_env(text, ready, &[])
    }

    /// Like [`ServeProcess::with_config`], with `env` added to serve's environment (after the
    /// directories, the log level and the token, which it may override; an empty value removes
    /// the variable).
    pub fn with_config_and_env(text: &str, ready: &[&str], env: &[(&str, &str)]) -> ServeProcess {
        use std::io::BufRead;

        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("config.toml"), text).expect("write config");
        let mut command = std::process::Command::new(switchboard_exe());
        command.envs(Self::env_in(dir.path()));
        for (name, value) in env {
            if value.is_empty() {
                command.env_remove(name);
            } else {
                command.env(name, value);
            }
        }
        let mut child = command
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(dir.path().join("config.toml"))
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("switchboard serve starts");

        // A thread reads the log for as long as serve runs, so serve never blocks on a full pipe
        // and a failing test can show what serve said.
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (lines_tx, lines) = std::sync::mpsc::channel::<String>();
        let stderr = child.stderr.take().expect("stderr piped");
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let line = strip_ansi(&line);
                kept.lock().expect("log lock").push(line.clone());
                let _ = lines_tx.send(line);
            }
        });

        let mut serve = ServeProcess {
            child,
            url: String::new(),
            log,
            dir,
        };
        let mut waiting_for: Vec<String> = ready
            .iter()
            .map(|name| format!("backend{{name={name}}}: ready"))
            .collect();
        let deadline = std::time::Instant::now() + EVENT_LIMIT;
        while serve.url.is_empty() || !waiting_for.is_empty() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let Ok(line) = lines.recv_timeout(left) else {
                panic!(
                    "serve did not listen with {waiting_for:?} ready within {EVENT_LIMIT:?}; log:\n{}",
                    serve.log()
                );
            };
            if line.contains("listening")
                && let Some((_, rest)) = line.split_once("url=")
            {
                serve.url = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
            }
            waiting_for.retain(|needle| !line.contains(needle.as_str()));
        }
        serve
    }

    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    /// What `switchboard connect` needs in its environment to attach to this serve.
    pub fn env(&self) -> Vec<(&'static str, PathBuf)> {
        let mut env = Self::env_in(self.dir.path());
        env.push(("SWITCHBOARD_CONFIG", self.config_path()));
        env
    }

    fn env_in(dir: &std::path::Path) -> Vec<(&'static str, PathBuf)> {
        vec![
            ("SWITCHBOARD_RUNTIME_DIR", dir.join("run")),
            ("SWITCHBOARD_DATA_DIR", dir.join("data")),
            ("SWITCHBOARD_LOG", PathBuf::from("info")),
            ("SWITCHBOARD_TOKEN", PathBuf::from(SERVE_TOKEN)),
        ]
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub fn http_url(&self, path: &str) -> String {
        let base = self
            .url
            .strip_suffix("/mcp")
            .expect("the endpoint ends in /mcp");
        format!("{base}{path}")
    }

    /// GET `path` of the control API; panics unless the answer is 200 with JSON.
    pub async fn api_get(&self, path: &str) -> serde_json::Value {
        let response = reqwest::Client::new()
            .get(self.http_url(path))
            .bearer_auth(SERVE_TOKEN)
            .send()
            .await
            .expect("the API answers");
        assert_eq!(response.status(), 200, "GET {path}");
        let body = response.text().await.expect("a body");
        serde_json::from_str(&body).expect("a JSON answer")
    }

    /// POST `{}` to `path` of the control API; panics unless the answer is 200 with JSON.
    pub async fn api_post(&self, path: &str) -> serde_json::Value {
        let response = reqwest::Client::new()
            .post(self.http_url(path))
            .bearer_auth(SERVE_TOKEN)
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .expect("the API answers");
        assert_eq!(response.status(), 200, "POST {path}");
        let body = response.text().await.expect("a body");
        serde_json::from_str(&body).expect("a JSON answer")
    }

    /// Everything serve has logged so far.
    pub fn log(&self) -> String {
        self.log.lock().expect("log lock").join("\n")
    }

    /// Stops serve as dropping it would, and keeps its directories for a look.
    pub fn stop(&mut self) {
        terminate(&mut self.child);
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        terminate(&mut self.child);
    }
}

/// `line` without ANSI colour sequences (`ESC [ ... m`).
pub fn strip_ansi(line: &str) -> String {
    let mut plain = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
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
        Err(error) => panic!("cannot run node ({error}); install Node.js (see README.md)"),
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

/// Sends SIGTERM to `child` and waits for it to exit; SIGKILL if it has not within the limit.
pub fn terminate(child: &mut std::process::Child) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let deadline = std::time::Instant::now() + EVENT_LIMIT;
    while std::time::Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

impl ServeProcess {
    /// The pid of the `switchboard serve` process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}
