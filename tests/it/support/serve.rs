//! The one way the tests start `switchboard serve`: [`ServeProcess`], ready once its control API
//! says so.

use std::ffi::OsString;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use control::instance::Instance;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::eventually::{eventually, eventually_blocking, poll_blocking};
use super::{
    EVENT_LIMIT, alive, backend_script, everything_server, misbehave_script, sdk_server_script,
    switchboard_exe,
};

/// The dashboard token of every [`ServeProcess`] unless its options remove `SWITCHBOARD_TOKEN`.
pub const SERVE_TOKEN: &str = "serve-test-token-0123456789";

/// A backend that [`ServeProcess`] can put behind `switchboard serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServedBackend {
    /// `switchboard demo-server`, as `demo`.
    Demo,
    /// The official `@modelcontextprotocol/server-everything` from node_modules, as `everything`.
    Everything,
    /// `tests/backends/misbehave.py`, as `mis`.
    Misbehave,
    /// `tests/backends/sdk_server.mjs --modern-only`, as `modern`.
    SdkModernOnly,
    /// `tests/backends/tasks_server.py` (2026-07-28 with the Tasks extension), as `tasks`.
    Tasks,
}

impl ServedBackend {
    /// The backend's name in the config, which prefixes its tools.
    pub fn name(self) -> &'static str {
        match self {
            ServedBackend::Demo => "demo",
            ServedBackend::Everything => "everything",
            ServedBackend::Misbehave => "mis",
            ServedBackend::SdkModernOnly => "modern",
            ServedBackend::Tasks => "tasks",
        }
    }

    /// Its `[servers.NAME]` table, to which a test may add settings.
    pub fn config_entry(self) -> String {
        let (command, args) = match self {
            ServedBackend::Demo => (switchboard_exe(), vec!["demo-server".to_owned()]),
            ServedBackend::Everything => (everything_server(), vec!["stdio".to_owned()]),
            ServedBackend::Misbehave => (
                PathBuf::from("python3"),
                vec![misbehave_script().to_string_lossy().into_owned()],
            ),
            ServedBackend::SdkModernOnly => (
                PathBuf::from("node"),
                vec![
                    sdk_server_script().to_string_lossy().into_owned(),
                    "--modern-only".to_owned(),
                ],
            ),
            ServedBackend::Tasks => (
                PathBuf::from("python3"),
                vec![
                    backend_script("tasks_server.py")
                        .to_string_lossy()
                        .into_owned(),
                ],
            ),
        };
        format!(
            "[servers.{name}]\ncommand = {command:?}\nargs = {args:?}\n\n",
            name = self.name(),
            command = command.to_string_lossy(),
        )
    }
}

/// Where a serve keeps its files: a directory of its own, or a place the test shares with other
/// processes (`switchboard connect`, an earlier serve).
enum Home {
    Own(tempfile::TempDir),
    Shared(PathBuf),
}

impl Home {
    fn path(&self) -> &Path {
        match self {
            Home::Own(dir) => dir.path(),
            Home::Shared(path) => path,
        }
    }
}

/// How to start a [`ServeProcess`].
pub struct ServeOptions {
    home: Home,
    config: PathBuf,
    ready: Vec<String>,
    /// Changes to serve's environment, in order: a value sets, `None` removes.
    env: Vec<(String, Option<OsString>)>,
    /// A descriptor serve inherits open (a copy of its stderr), as from a careless launcher.
    inherited_descriptor: Option<i32>,
}

impl ServeOptions {
    /// Serve over the config `text` (TOML), in a new directory of its own.
    pub fn new(text: &str) -> ServeOptions {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("config.toml");
        std::fs::write(&config, text).expect("write config");
        ServeOptions {
            home: Home::Own(dir),
            config,
            ready: Vec::new(),
            env: Vec::new(),
            inherited_descriptor: None,
        }
    }

    /// Serve over the config file at `config` (which may not exist yet), with its runtime and
    /// data directories in `dir`, which the caller owns.
    pub fn in_dir(dir: &Path, config: &Path) -> ServeOptions {
        ServeOptions {
            home: Home::Shared(dir.to_owned()),
            config: config.to_owned(),
            ready: Vec::new(),
            env: Vec::new(),
            inherited_descriptor: None,
        }
    }

    /// The directory serve's runtime and data directories are in.
    pub fn dir(&self) -> &Path {
        self.home.path()
    }

    /// The backends that must be ready before [`ServeOptions::start`] returns.
    pub fn ready(mut self, names: &[&str]) -> ServeOptions {
        self.ready = names.iter().map(|name| (*name).to_owned()).collect();
        self
    }

    /// Sets a variable of serve's environment (over the defaults: the directories, the log level
    /// `info` and the token [`SERVE_TOKEN`]).
    pub fn env(mut self, name: &str, value: impl Into<OsString>) -> ServeOptions {
        self.env.push((name.to_owned(), Some(value.into())));
        self
    }

    /// Starts serve with descriptor `fd` open and inheritable, as a launching shell may leave one.
    pub fn inherit_descriptor(mut self, fd: i32) -> ServeOptions {
        self.inherited_descriptor = Some(fd);
        self
    }

    /// Removes a variable from serve's environment, a default or inherited one.
    pub fn env_remove(mut self, name: &str) -> ServeOptions {
        self.env.push((name.to_owned(), None));
        self
    }

    /// Starts serve and waits until its control API answers and lists every backend named in
    /// [`ServeOptions::ready`] as ready.
    pub fn start(self) -> ServeProcess {
        let mut command = std::process::Command::new(switchboard_exe());
        command.envs(ServeProcess::env_in(self.home.path(), SERVE_TOKEN));
        for (name, value) in &self.env {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        if let Some(fd) = self.inherited_descriptor {
            use std::os::unix::process::CommandExt as _;
            // SAFETY: dup2 is async-signal-safe and takes integers only; its copy has no
            // close-on-exec flag, so serve inherits it.
            unsafe {
                command.pre_exec(move || match libc::dup2(2, fd) {
                    -1 => Err(std::io::Error::last_os_error()),
                    _ => Ok(()),
                });
            }
        }
        let mut child = command
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&self.config)
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("switchboard serve starts");

        // A thread reads the log for as long as serve runs, so serve never blocks on a full pipe
        // and a failing test can show what serve said.
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().expect("stderr piped");
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                kept.lock().expect("log lock").push(strip_ansi(&line));
            }
        });

        let token_removed = self
            .env
            .iter()
            .rev()
            .find(|(name, _)| name == "SWITCHBOARD_TOKEN")
            .is_some_and(|(_, value)| value.is_none());
        let mut serve = ServeProcess {
            child,
            base: String::new(),
            token: String::new(),
            config: self.config,
            log,
            home: self.home,
        };
        let (base, token) = block_on(serve.until_ready(&self.ready, token_removed));
        serve.base = base;
        serve.token = token;
        serve
    }
}

/// A real `switchboard serve` on a free loopback port, with its own config, runtime and data
/// directories. Dropping it stops it with SIGTERM (SIGKILL if it does not exit in time), so no
/// backend outlives the test.
pub struct ServeProcess {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT`
    base: String,
    token: String,
    config: PathBuf,
    log: Arc<Mutex<Vec<String>>>,
    home: Home,
}

/// What serve showed while it was not yet ready, with its log.
struct NotReady {
    seen: String,
    log: String,
}

impl std::fmt::Debug for NotReady {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}\nlog:\n{}", self.seen, self.log)
    }
}

impl ServeProcess {
    /// Starts `switchboard serve` over `backends` and waits until every one is ready.
    pub fn start(backends: &[ServedBackend]) -> ServeProcess {
        let config: String = backends
            .iter()
            .map(|backend| backend.config_entry())
            .collect();
        let names: Vec<&str> = backends.iter().map(|backend| backend.name()).collect();
        Self::with_config(&config, &names)
    }

    /// Starts `switchboard serve` over the config `text` (TOML) and waits until the backends
    /// named in `ready` are ready. Its dashboard token is [`SERVE_TOKEN`].
    pub fn with_config(text: &str, ready: &[&str]) -> ServeProcess {
        ServeOptions::new(text).ready(ready).start()
    }

    /// Waits until the instance file names this process, and then until its control API lists
    /// every backend in `ready` as ready; returns the API's base address and token.
    async fn until_ready(&self, ready: &[String], token_removed: bool) -> (String, String) {
        let pid = self.pid();
        let instance_file = Instance::path(&self.home.path().join("run"));
        let token_file = self.home.path().join("data/token");
        let client = reqwest::Client::new();
        let not_ready = |seen: String| NotReady {
            seen,
            log: self.log(),
        };
        eventually("serve is ready", EVENT_LIMIT, || async {
            assert!(
                alive(pid),
                "serve exited before it was ready:\n{}",
                self.log()
            );
            let instance = Instance::read(&instance_file)
                .ok()
                .filter(|instance| instance.pid == pid)
                .ok_or_else(|| not_ready(format!("no instance file of pid {pid}")))?;
            let token = match token_removed {
                false => SERVE_TOKEN.to_owned(),
                true => std::fs::read_to_string(&token_file)
                    .map_err(|error| not_ready(format!("no token file: {error}")))?
                    .trim()
                    .to_owned(),
            };
            let base = format!("http://{}", instance.address);
            let answer = client
                .get(format!("{base}/api/backends"))
                .bearer_auth(&token)
                .send()
                .await
                .map_err(|error| not_ready(format!("the API does not answer: {error}")))?;
            let list: serde_json::Value = answer
                .json()
                .await
                .map_err(|error| not_ready(format!("the API's answer is not JSON: {error}")))?;
            let is_ready = |name: &String| {
                list.as_array().is_some_and(|backends| {
                    backends
                        .iter()
                        .any(|backend| backend["name"] == **name && backend["state"] == "ready")
                })
            };
            match ready.iter().all(is_ready) {
                true => Ok((base, token)),
                false => Err(not_ready(format!("waiting for {ready:?}: {list:#}"))),
            }
        })
        .await
    }

    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        self.http_url("/mcp")
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub fn http_url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The port of the endpoint and the control API.
    pub fn port(&self) -> u16 {
        self.base
            .rsplit(':')
            .next()
            .and_then(|port| port.parse().ok())
            .expect("the address names its port")
    }

    /// The dashboard link serve prints at startup.
    pub fn dashboard_link(&self) -> String {
        let line = self.wait_for_log("dashboard: ");
        line.trim_start_matches("dashboard: ").trim().to_owned()
    }

    /// Waits until serve has logged a line containing `needle`, and returns the first such line.
    pub fn wait_for_log(&self, needle: &str) -> String {
        eventually_blocking(&format!("serve logs {needle:?}"), EVENT_LIMIT, || {
            let log = self.log.lock().expect("log lock");
            log.iter()
                .find(|line| line.contains(needle))
                .cloned()
                .ok_or_else(|| log.join("\n"))
        })
    }

    pub fn config_path(&self) -> PathBuf {
        self.config.clone()
    }

    /// The directory serve's runtime and data directories are in.
    pub fn dir(&self) -> &Path {
        self.home.path()
    }

    /// What `switchboard connect` needs in its environment to attach to this serve.
    pub fn env(&self) -> Vec<(&'static str, PathBuf)> {
        let mut env = Self::env_in(self.home.path(), &self.token);
        env.push(("SWITCHBOARD_CONFIG", self.config_path()));
        env
    }

    fn env_in(dir: &Path, token: &str) -> Vec<(&'static str, PathBuf)> {
        vec![
            ("SWITCHBOARD_RUNTIME_DIR", dir.join("run")),
            ("SWITCHBOARD_DATA_DIR", dir.join("data")),
            ("SWITCHBOARD_LOG", PathBuf::from("info")),
            ("SWITCHBOARD_TOKEN", PathBuf::from(token)),
        ]
    }

    /// A client for the control API, which follows no redirects.
    pub fn client(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("a client")
    }

    /// GET `path` of the control API; panics unless the answer is 200 with JSON.
    pub async fn api_get(&self, path: &str) -> serde_json::Value {
        let response = self
            .client()
            .get(self.http_url(path))
            .bearer_auth(&self.token)
            .send()
            .await
            .expect("the API answers");
        assert_eq!(response.status(), 200, "GET {path}");
        let body = response.text().await.expect("a body");
        serde_json::from_str(&body).expect("a JSON answer")
    }

    /// `/api/backends`'s entry for `name`; panics if it is not listed.
    pub async fn backend_summary(&self, name: &str) -> serde_json::Value {
        let list = self.api_get("/api/backends").await;
        list.as_array()
            .expect("an array")
            .iter()
            .find(|backend| backend["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} is not listed: {list}"))
    }

    /// The rest of the last line the backend `name` wrote (its stderr, as the control API keeps
    /// it) that starts with `prefix`, trimmed.
    pub async fn last_output(&self, name: &str, prefix: &str) -> Option<String> {
        let detail = self.api_get(&format!("/api/backends/{name}")).await;
        detail["output"]
            .as_array()
            .expect("output lines")
            .iter()
            .filter_map(|line| line["text"].as_str()?.strip_prefix(prefix))
            .next_back()
            .map(|rest| rest.trim().to_owned())
    }

    /// POST `body` (JSON) to `path` of the control API; the status and the JSON answer.
    pub async fn api_post_body(&self, path: &str, body: &str) -> (u16, serde_json::Value) {
        let response = self
            .client()
            .post(self.http_url(path))
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .await
            .expect("the API answers");
        let status = response.status().as_u16();
        let body = response.text().await.expect("a body");
        (status, serde_json::from_str(&body).expect("a JSON answer"))
    }

    /// POST `{}` to `path` of the control API; panics unless the answer is 200 with JSON.
    pub async fn api_post(&self, path: &str) -> serde_json::Value {
        let (status, answer) = self.api_post_body(path, "{}").await;
        assert_eq!(status, 200, "POST {path}: {answer}");
        answer
    }

    /// Waits until `key` of `server` is held back (a tool the server added while it has pins,
    /// say), then approves it as it is now, as the Review page would.
    pub async fn approve_when_held(&self, server: &str, key: &str) {
        eventually(&format!("{key} of {server} held"), EVENT_LIMIT, || async {
            let report = self.api_get("/api/pins").await;
            let held = report["held"].as_array().is_some_and(|held| {
                held.iter()
                    .any(|one| one["server"] == server && one["key"] == key)
            });
            if held { Ok(()) } else { Err(report) }
        })
        .await;
        let body = serde_json::json!({ "tools": [key] }).to_string();
        let (status, answer) = self
            .api_post_body(&format!("/api/pins/{server}/approve"), &body)
            .await;
        assert_eq!(status, 200, "{answer}");
    }

    /// Everything serve has logged so far.
    pub fn log(&self) -> String {
        self.log.lock().expect("log lock").join("\n")
    }

    /// The pid of the `switchboard serve` process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` to serve.
    pub fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.pid() as i32), signal).expect("serve can be signalled");
    }

    /// Waits until serve has exited.
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        let child = &mut self.child;
        eventually_blocking("switchboard serve exits", EVENT_LIMIT, || {
            child.try_wait().expect("wait").ok_or("still running")
        })
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

/// Runs `future` on a runtime of its own, on a thread of its own, so that code with or without a
/// runtime may block on it.
fn block_on<F: Future<Output: Send> + Send>(future: F) -> F::Output {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime")
                    .block_on(future)
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// `line` without ANSI colour sequences (`ESC [ ... m`).
fn strip_ansi(line: &str) -> String {
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

/// Sends SIGTERM to `child` and waits for it to exit; SIGKILL if it has not within the limit.
fn terminate(child: &mut std::process::Child) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
    let exited = poll_blocking(EVENT_LIMIT, || child.try_wait().ok().flatten().ok_or(()));
    if exited.is_err() {
        let _ = child.kill();
        let _ = child.wait();
    }
}
