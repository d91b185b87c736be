//! Switchboard built for Windows (`x86_64-pc-windows-gnu`) and run under Wine, against real
//! backends built for Windows: its own `demo-server` and `examples/test_server.rs`, which can
//! crash, hang, start a grandchild, hold a file open and report its arguments.
//!
//! `scripts/windows-setup` readies the Wine prefix and `scripts/test` builds both programs and
//! runs these tests alone (they are left out of a plain `cargo nextest run` by
//! `.config/nextest.toml`). Each Windows process is a Linux process too, whose command line is
//! the Windows one: the processes of a test are found by a tag in their arguments.
//!
//! What Wine cannot show: it stores a named pipe's DACL but does not enforce it, lets a second
//! server create an instance of a pipe made with `FILE_FLAG_FIRST_PIPE_INSTANCE`, and runs every
//! process as one user, so the endpoint's refusal of other users is not tested here; nor are
//! console windows, which Wine does not draw for these programs anyway.

mod commands;
mod connect;
mod files;
mod serve;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use control::instance::Instance;
use serde_json::Value;

use crate::support::{EVENT_LIMIT, eventually, poll};

/// The dashboard token the serves of these tests use.
const TOKEN: &str = "wine-test-token-0123456789";

/// The Wine prefix `scripts/windows-setup` made.
fn prefix() -> PathBuf {
    std::env::var_os("WINEPREFIX")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "WINEPREFIX is not set: run scripts/windows-setup, then these tests with its output"
            )
        })
}

/// Where cargo put the programs built for Windows.
fn windows_build() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let build = target.join("x86_64-pc-windows-gnu").join("debug");
    assert!(
        build.join("switchboard.exe").is_file() && build.join("examples/test_server.exe").is_file(),
        "build them first: cargo build --target x86_64-pc-windows-gnu --bin switchboard --example \
         test_server"
    );
    build
}

fn switchboard_exe() -> PathBuf {
    windows_build().join("switchboard.exe")
}

fn test_server_exe() -> PathBuf {
    windows_build().join("examples").join("test_server.exe")
}

/// A Linux path as Windows programs under Wine see it (the `Z:` drive is `/`).
fn win(path: &Path) -> String {
    format!("Z:{}", path.display()).replace('/', "\\")
}

/// `wine EXE` in the tests' prefix, quiet.
fn wine(exe: &Path) -> Command {
    let mut command = Command::new("wine");
    command
        .arg(exe)
        .env("WINEPREFIX", prefix())
        .env("WINEDEBUG", "-all")
        .env("WINEDLLOVERRIDES", "mscoree,mshtml=");
    command
}

/// The live processes whose command line holds `tag`, with their command lines.
fn tagged(tag: &str) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| crate::support::alive(pid))
        .filter_map(|pid| {
            let line = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let line = String::from_utf8_lossy(&line).replace('\0', " ");
            line.contains(tag).then_some((pid, line))
        })
        .collect()
}

/// Waits until no live process carries `tag`; fails naming those left.
async fn none_left(tag: &str, after: &str) {
    let left = poll(EVENT_LIMIT, || async {
        match tagged(tag) {
            left if left.is_empty() => Ok(()),
            left => Err(left),
        }
    })
    .await;
    if let Err(left) = left {
        panic!("{after}, processes are left: {left:#?}");
    }
}

/// A folder of a test's own, whose path has spaces and letters outside ASCII and is longer than
/// Windows' old 260-character limit once Wine names it; and the tag its backends carry.
struct Place {
    dir: tempfile::TempDir,
    root: PathBuf,
    tag: String,
}

impl Place {
    fn new(name: &str) -> Place {
        let dir = tempfile::tempdir().expect("temp dir");
        let tag = format!("sbtag{}{}", name, std::process::id());
        let root = dir
            .path()
            .join("Zoë Ärger's folder")
            .join("a folder with a rather long name to pass the old limit of windows paths")
            .join("and another one just as long, so that the whole is over 260 characters")
            .join("and one more still, because a temporary folder on Linux is short enough");
        std::fs::create_dir_all(&root).expect("the place");
        assert!(win(&root.join("data").join("activity.db")).len() > 260);
        Place { dir, root, tag }
    }

    /// A folder of this place with a short path, for programs.
    fn short_folder(&self, name: &str) -> PathBuf {
        let folder = self.dir.path().join(name);
        std::fs::create_dir_all(&folder).expect("a folder");
        folder
    }

    fn config(&self) -> PathBuf {
        self.root.join("config.toml")
    }

    /// Processes of this place still running: its backends (by tag) and any Switchboard started
    /// over its config.
    fn processes(&self) -> Vec<(u32, String)> {
        let mut found = tagged(&self.tag);
        found.extend(tagged(&win(&self.config())));
        found
    }

    fn runtime(&self) -> PathBuf {
        self.root.join("run")
    }

    fn data(&self) -> PathBuf {
        self.root.join("data")
    }

    fn write_config(&self, text: &str) {
        std::fs::write(self.config(), text).expect("write config");
    }

    /// The environment a Switchboard of this place runs with.
    fn env(&self, command: &mut Command) {
        command
            .env("SWITCHBOARD_TOKEN", TOKEN)
            .env("SWITCHBOARD_RUNTIME_DIR", win(&self.runtime()))
            .env("SWITCHBOARD_DATA_DIR", win(&self.data()))
            .env("NO_COLOR", "1");
    }

    /// A `[servers.NAME]` running the test server with the tag and `args`.
    fn test_server(&self, name: &str, args: &[&str]) -> String {
        let mut all = vec!["--tag", &self.tag];
        all.extend_from_slice(args);
        format!(
            "[servers.{name}]\ncommand = {}\nargs = {}\nstop_grace = \"1s\"\n\n",
            toml_string(&win(&test_server_exe())),
            toml_strings(&all)
        )
    }

    /// A `[servers.NAME]` running Switchboard's own demo server.
    fn demo(&self, name: &str) -> String {
        format!(
            "[servers.{name}]\ncommand = {}\nargs = [\"demo-server\"]\n\n",
            toml_string(&win(&switchboard_exe()))
        )
    }
}

/// Whatever a failed test left running is killed with its place.
impl Drop for Place {
    fn drop(&mut self) {
        for (pid, _) in self.processes() {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

/// A TOML string (a JSON string is one, for what these tests write).
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

/// A TOML array of strings.
fn toml_strings(items: &[&str]) -> String {
    serde_json::to_string(items).expect("strings serialize")
}

/// `switchboard.exe serve` under Wine on a free port, over a place's config.
struct WineServe {
    child: Child,
    base: String,
    log: Arc<Mutex<Vec<String>>>,
    http: reqwest::Client,
}

impl WineServe {
    /// Starts serve and waits until its control API lists every backend in `ready` as ready.
    async fn start(place: &Place, ready: &[&str]) -> WineServe {
        WineServe::start_with(place, ready, &[]).await
    }

    /// [`WineServe::start`] with more variables in serve's environment.
    async fn start_with(place: &Place, ready: &[&str], env: &[(&str, String)]) -> WineServe {
        let mut command = wine(&switchboard_exe());
        place.env(&mut command);
        command.envs(env.iter().map(|(name, value)| (name, value)));
        let mut child = command
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(win(&place.config()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("wine starts");
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().expect("stderr piped");
        let kept = log.clone();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                kept.lock().expect("log lock").push(line);
            }
        });
        let mut serve = WineServe {
            child,
            base: String::new(),
            log,
            http: reqwest::Client::new(),
        };
        let instance_file = Instance::path(&place.runtime());
        let ready: Vec<String> = ready.iter().map(|name| (*name).to_owned()).collect();
        let pid = serve.child.id();
        serve.base = eventually("serve under Wine is ready", EVENT_LIMIT * 3, || async {
            assert!(crate::support::alive(pid), "serve exited:\n{}", serve.log());
            let instance = Instance::read(&instance_file).map_err(|error| error.to_string())?;
            let base = format!("http://{}", instance.address);
            let list = serve.get_at(&base, "/api/backends").await?;
            let all_ready = ready.iter().all(|name| {
                list.as_array().is_some_and(|backends| {
                    backends
                        .iter()
                        .any(|backend| backend["name"] == **name && backend["state"] == "ready")
                })
            });
            match all_ready {
                true => Ok(base),
                false => Err(format!("waiting for {ready:?}: {list:#}")),
            }
        })
        .await;
        serve
    }

    fn log(&self) -> String {
        self.log.lock().expect("log lock").join("\n")
    }

    async fn get_at(&self, base: &str, path: &str) -> Result<Value, String> {
        let answer = self
            .http
            .get(format!("{base}{path}"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .map_err(|error| format!("GET {path}: {error}"))?;
        answer
            .json()
            .await
            .map_err(|error| format!("GET {path}: not JSON: {error}"))
    }

    /// `GET /api/…`, which must answer JSON.
    async fn get(&self, path: &str) -> Value {
        self.get_at(&self.base, path)
            .await
            .unwrap_or_else(|error| panic!("{error}\n{}", self.log()))
    }

    /// `POST /api/…` with a JSON body; its status and body.
    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let answer = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|error| panic!("POST {path}: {error}\n{}", self.log()));
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(Value::Null))
    }

    fn mcp(&self) -> crate::support::McpHttp {
        crate::support::McpHttp::new(&format!("{}/mcp", self.base))
    }

    /// A backend's status, once `check` holds for it.
    async fn backend_when(&self, name: &str, check: impl Fn(&Value) -> bool) -> Value {
        eventually(&format!("backend {name}"), EVENT_LIMIT, || async {
            let status = self.get(&format!("/api/backends/{name}")).await;
            match check(&status) {
                true => Ok(status),
                false => Err(status),
            }
        })
        .await
    }

    /// Sends SIGINT, which Wine delivers to a Windows program as Ctrl-C; the exit status.
    async fn interrupt(&mut self) -> std::process::ExitStatus {
        signal(self.child.id(), "-INT");
        self.wait().await
    }

    /// SIGKILL: Switchboard ends with no chance to stop anything.
    async fn kill(&mut self) {
        signal(self.child.id(), "-KILL");
        self.wait().await;
    }

    async fn wait(&mut self) -> std::process::ExitStatus {
        exit_of(&mut self.child)
    }
}

impl Drop for WineServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until a child exits; its status.
fn exit_of(child: &mut Child) -> std::process::ExitStatus {
    crate::support::eventually_blocking("the program under Wine exits", EVENT_LIMIT, || {
        child.try_wait().expect("wait").ok_or("still running")
    })
}

fn signal(pid: u32, signal: &str) {
    let sent = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success(), "kill {signal} {pid}");
}

/// Opens an MCP session on `/mcp` and calls `tool` with `arguments`; the call's result.
async fn call_tool(serve: &WineServe, tool: &str, arguments: Value) -> Value {
    let mcp = serve.mcp();
    let session = mcp.open_session("wine-test").await.expect("a session");
    mcp.call_tool(&session, 2, tool, arguments).await
}

/// The text of a tool result's first content item.
fn text(result: &Value) -> String {
    crate::support::first_text(result)
}
