//! `switchboard connect` as a real process, attached to a real `switchboard serve` that runs the
//! built-in demo server: sessions, shared backends, auto-start, restarts and bad input.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Instant;

use crate::support::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use transport::handoff::{LEDGER_SIZE, Ledger};

/// A place for one Switchboard: config, runtime and data directories. Dropping it stops every
/// `serve` that uses its runtime directory, including one that `connect` started.
struct Place {
    dir: tempfile::TempDir,
}

impl Place {
    fn new() -> Place {
        Place::with_servers("")
    }

    /// A place whose config has the demo server and then `servers` (TOML).
    fn with_servers(servers: &str) -> Place {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = format!(
            "[endpoint]\nlisten = \"127.0.0.1:0\"\n\n[servers.demo]\ncommand = {exe:?}\nargs = [\"demo-server\"]\n\n{servers}",
            exe = switchboard_exe().to_string_lossy(),
        );
        std::fs::write(dir.path().join("config.toml"), config).expect("write config");
        Place { dir }
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    fn runtime_dir(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(switchboard_exe());
        command
            .args(args)
            .arg("--config")
            .arg(self.config())
            .env("SWITCHBOARD_RUNTIME_DIR", self.runtime_dir())
            .env("SWITCHBOARD_DATA_DIR", self.dir.path().join("data"))
            .env("SWITCHBOARD_LOG", "debug");
        command
    }

    /// Starts `switchboard serve` in this place and waits until the demo backend is ready.
    fn serve(&self) -> ServeProcess {
        ServeOptions::in_dir(self.dir.path(), &self.config())
            .ready(&["demo"])
            .env("SWITCHBOARD_LOG", "debug")
            .start()
    }

    /// Starts `switchboard connect` with piped stdio.
    fn connect(&self) -> Connect {
        let mut child = self
            .command(&["connect"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("switchboard connect starts");
        let stdin = child.stdin.take().expect("stdin piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout piped"));
        let (lines, received) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        Connect {
            child,
            stdin: Some(stdin),
            received,
        }
    }

    /// Every `switchboard serve` process using this place's runtime directory.
    fn serve_processes(&self) -> Vec<u32> {
        let marker = format!("SWITCHBOARD_RUNTIME_DIR={}", self.runtime_dir().display());
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
                alive(pid)
                    && cmdline.split(|&b| b == 0).nth(1) == Some(b"serve".as_slice())
                    && environ
                        .split(|&b| b == 0)
                        .any(|item| item == marker.as_bytes())
            })
            .collect()
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        for pid in self.serve_processes() {
            stop(pid);
        }
    }
}

/// SIGTERM, a bounded wait, then SIGKILL.
fn stop(pid: u32) {
    let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
    let _ = poll_blocking(EVENT_LIMIT, || if alive(pid) { Err(()) } else { Ok(()) });
    let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
}

/// The editor's side of a `switchboard connect` process.
struct Connect {
    child: Child,
    stdin: Option<ChildStdin>,
    received: mpsc::Receiver<String>,
}

impl Connect {
    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{line}").expect("write to connect");
        stdin.flush().expect("flush");
    }

    fn send(&mut self, message: Value) {
        self.send_line(&message.to_string());
    }

    /// Writes `text`, the start of a line, and waits until the instance has read all of it and
    /// noted in the ledger it shares with this `connect` that a line with `id` is half-read.
    fn send_part(&mut self, text: &str, id: &str) {
        use std::os::fd::AsRawFd;
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(text.as_bytes()).expect("write to connect");
        stdin.flush().expect("flush");
        eventually_blocking("the instance reads the editor's pipe", EVENT_LIMIT, || {
            let mut unread: libc::c_int = 0;
            // SAFETY: FIONREAD writes one int, the bytes still in the pipe, into `unread`.
            let status = unsafe { libc::ioctl(stdin.as_raw_fd(), libc::FIONREAD, &mut unread) };
            assert_eq!(status, 0, "FIONREAD on the editor's pipe");
            if unread == 0 { Ok(()) } else { Err(unread) }
        });
        let noted = Some(Some(Box::from(id)));
        eventually_blocking("the ledger notes the half-read line", EVENT_LIMIT, || {
            let partial = self.ledger().partial_input();
            if partial == noted {
                Ok(())
            } else {
                Err(partial)
            }
        });
    }

    /// A copy of the ledger this `connect` shares with its instance, read from its memory.
    fn ledger(&self) -> Ledger {
        use std::os::unix::fs::FileExt;
        let pid = self.child.id();
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).expect("maps");
        let start = maps
            .lines()
            .rfind(|line| line.contains("/memfd:switchboard-ledger"))
            .and_then(|line| line.split('-').next())
            .and_then(|start| u64::from_str_radix(start, 16).ok())
            .unwrap_or_else(|| panic!("connect maps no ledger:\n{maps}"));
        let mut bytes = vec![0; LEDGER_SIZE];
        std::fs::File::open(format!("/proc/{pid}/mem"))
            .and_then(|memory| memory.read_exact_at(&mut bytes, start))
            .expect("the test may read the memory of its own child");
        let scratch = tempfile::tempdir().expect("temp dir");
        let (copy, fd) = Ledger::create(scratch.path()).expect("a ledger");
        std::fs::File::from(fd)
            .write_all_at(&bytes, 0)
            .expect("the copy is written");
        copy
    }

    /// The next message on stdout; every line must be JSON.
    fn next(&mut self) -> Value {
        let line = self
            .received
            .recv_timeout(EVENT_LIMIT)
            .expect("a message from connect in time");
        serde_json::from_str(&line)
            .unwrap_or_else(|error| panic!("stdout carries only JSON ({error}): {line:?}"))
    }

    /// Skips messages until one satisfies `check`.
    fn next_matching(&mut self, check: impl Fn(&Value) -> bool) -> Value {
        loop {
            let message = self.next();
            if check(&message) {
                return message;
            }
        }
    }

    fn response(&mut self, id: &Value) -> Value {
        self.next_matching(|message| {
            &message["id"] == id
                && (message.get("result").is_some() || message.get("error").is_some())
        })
    }

    fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(&id)
    }

    fn handshake(&mut self) -> Value {
        let answer = self.request(
            json!(0),
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "connect-test", "version": "1"}}),
        );
        assert_eq!(
            answer["result"]["protocolVersion"], "2025-06-18",
            "{answer}"
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        answer
    }

    /// Waits until `tools/list` names `tool`, re-listing whenever the hub says the list changed.
    fn wait_for_tool(&mut self, tool: &str) {
        for n in 0.. {
            let id = json!(format!("list-{n}"));
            let tools = self.request(id, "tools/list", json!({}));
            let names: Vec<&str> = tools["result"]["tools"]
                .as_array()
                .expect("a tool list")
                .iter()
                .filter_map(|tool| tool["name"].as_str())
                .collect();
            if names.contains(&tool) {
                return;
            }
            self.next_matching(|message| message["method"] == "notifications/tools/list_changed");
        }
    }

    fn echo(&mut self, id: Value, text: &str) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": "demo__echo", "arguments": {"text": text}}),
        )
    }

    fn close_stdin(&mut self) {
        self.stdin = None;
    }

    fn wait_exit(&mut self) -> std::process::ExitStatus {
        let child = &mut self.child;
        eventually_blocking("switchboard connect exits", EVENT_LIMIT, || {
            child.try_wait().expect("wait").ok_or("still running")
        })
    }
}

impl Drop for Connect {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn echoed(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {answer}"))
}

#[test]
fn connect_carries_a_session_to_the_running_instance() {
    let place = Place::new();
    let _serve = place.serve();
    let mut editor = place.connect();

    let answer = editor.handshake();
    assert!(
        answer["result"]["serverInfo"]["name"].is_string(),
        "{answer}"
    );
    editor.wait_for_tool("demo__echo");
    let tools = editor.request(json!(1), "tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    for expected in ["demo__echo", "demo__add", "demo__sleep"] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    let answer = editor.echo(json!(2), "hello through the socket");
    assert_eq!(echoed(&answer), "hello through the socket");
}

#[test]
fn two_editors_using_the_same_ids_each_get_their_own_answers() {
    let place = Place::new();
    let _serve = place.serve();
    let mut first = place.connect();
    let mut second = place.connect();
    first.handshake();
    second.handshake();
    first.wait_for_tool("demo__echo");

    for round in 0..20 {
        let call = |text: String| json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "demo__echo", "arguments": {"text": text}}});
        first.send(call(format!("first {round}")));
        second.send(call(format!("second {round}")));
        assert_eq!(echoed(&first.response(&json!(7))), format!("first {round}"));
        assert_eq!(
            echoed(&second.response(&json!(7))),
            format!("second {round}")
        );
    }
}

#[test]
fn connect_starts_an_instance_when_none_runs() {
    let place = Place::new();
    assert!(place.serve_processes().is_empty());
    let mut editor = place.connect();

    editor.handshake();
    editor.wait_for_tool("demo__echo");
    assert_eq!(echoed(&editor.echo(json!(1), "auto")), "auto");

    let started = place.serve_processes();
    assert_eq!(
        started.len(),
        1,
        "exactly one instance was started: {started:?}"
    );
    let log = std::fs::read_to_string(place.runtime_dir().join("serve.log")).expect("its log");
    assert!(log.contains("listening"), "{log}");
    assert!(
        log.contains(&place.config().display().to_string()),
        "the instance uses the config passed to connect: {log}"
    );

    // A second editor attaches to the same instance instead of starting another.
    let mut other = place.connect();
    other.handshake();
    assert_eq!(echoed(&other.echo(json!(1), "shared")), "shared");
    assert_eq!(place.serve_processes(), started);

    // The instance outlives the editors that started it; it ends only when told to.
    drop(editor);
    drop(other);
    assert!(alive(started[0]));
    stop(started[0]);
    assert!(!alive(started[0]));
}

#[test]
fn status_shows_the_instance_connect_started_and_stop_ends_it() {
    let place = Place::new();
    let mut editor = place.connect();
    editor.handshake();
    editor.wait_for_tool("demo__echo");
    let started = place.serve_processes();
    assert_eq!(started.len(), 1, "{started:?}");

    // Its dashboard link, otherwise only in its log file, is one command away.
    let run = |args: &[&str]| {
        Command::new(switchboard_exe())
            .args(args)
            .env("SWITCHBOARD_RUNTIME_DIR", place.runtime_dir())
            .env("SWITCHBOARD_DATA_DIR", place.dir.path().join("data"))
            .output()
            .expect("switchboard runs")
    };
    let shown = run(&["status", "--json"]);
    assert_eq!(shown.status.code(), Some(0));
    let status: Value = serde_json::from_slice(&shown.stdout).expect("one JSON document");
    assert_eq!(status["pid"], started[0], "{status}");
    let log = std::fs::read_to_string(place.runtime_dir().join("serve.log")).expect("its log");
    let link = status["dashboard"].as_str().expect("a link");
    assert!(link.contains("/#key="), "{link}");
    assert!(log.contains(link), "the link its log has: {log}");
    assert_eq!(status["backends"][0]["state"], "ready", "{status}");

    // The editor leaves first: a live one would carry its session to a new instance.
    drop(editor);
    let stopped = run(&["stop"]);
    assert_eq!(
        stopped.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&stopped.stderr)
    );
    // Its record is gone once every backend is stopped; the process ends right after.
    let gone = poll_blocking(EVENT_LIMIT, || match alive(started[0]) {
        true => Err(()),
        false => Ok(()),
    });
    assert!(gone.is_ok(), "the instance ended");
    assert!(place.serve_processes().is_empty());
}

#[test]
fn the_first_list_through_a_cold_start_is_whole() {
    // What the MCP Inspector CLI does: start, list once, call what it found.
    let place = Place::with_servers(&format!(
        "[servers.slow]\ncommand = \"python3\"\nargs = [{script:?}, \"--slow-start\", \"1500\"]\n",
        script = misbehave_script().to_string_lossy(),
    ));
    assert!(place.serve_processes().is_empty());
    let mut editor = place.connect();
    editor.handshake();
    let tools = editor.request(json!(1), "tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(
        names.contains(&"demo__echo") && names.contains(&"slow__echo"),
        "the first list has every server's tools: {names:?}"
    );
    let call = editor.request(
        json!(2),
        "tools/call",
        json!({"name": "slow__echo", "arguments": {"text": "found"}}),
    );
    assert_eq!(call["result"]["content"][0]["text"], "found", "{call}");
}

#[test]
fn the_mcp_inspector_cli_finds_and_calls_a_tool_through_a_cold_connect() {
    // The official MCP Inspector CLI, started with `connect` as its server, when nothing runs
    // yet and one server takes a second and a half to start: it lists, finds the tool, calls it.
    let place = Place::with_servers(&format!(
        "[servers.slow]\ncommand = \"python3\"\nargs = [{script:?}, \"--slow-start\", \"1500\"]\n",
        script = misbehave_script().to_string_lossy(),
    ));
    assert!(place.serve_processes().is_empty());
    let env = |name: &str, path: PathBuf| format!("{name}={}", path.display());
    let output = Command::new("node")
        .arg(node_module(
            "@modelcontextprotocol/inspector/clients/launcher/build/index.js",
        ))
        .arg("--cli")
        .args(["-e", &env("SWITCHBOARD_RUNTIME_DIR", place.runtime_dir())])
        .args([
            "-e",
            &env("SWITCHBOARD_DATA_DIR", place.dir.path().join("data")),
        ])
        .args(["--method", "tools/call", "--tool-name", "slow__echo"])
        .args(["--tool-arg", "text=found"])
        .arg("--")
        .arg(switchboard_exe())
        .arg("connect")
        .arg("--config")
        .arg(place.config())
        .output()
        .expect("the Inspector CLI runs");
    let started = place.serve_processes();
    for pid in &started {
        stop(*pid);
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the Inspector CLI succeeds: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json_start = stdout.find('{').expect("a JSON result");
    let result: Value = serde_json::from_str(&stdout[json_start..]).expect("JSON");
    assert_eq!(result["content"][0]["text"], "found", "{result}");
    assert_eq!(
        started.len(),
        1,
        "connect started one instance: {started:?}"
    );
}

#[test]
fn a_2026_client_speaks_through_connect_with_no_handshake_and_cancels_by_notification() {
    let place = Place::with_servers(&format!(
        "[servers.mis]\ncommand = \"python3\"\nargs = [{script:?}]\n",
        script = misbehave_script().to_string_lossy(),
    ));
    let _serve = place.serve();
    let mut editor = place.connect();
    let envelope = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });

    let discover = editor.request(json!(1), "server/discover", json!({"_meta": envelope}));
    assert_eq!(
        discover["result"]["supportedVersions"][0], "2026-07-28",
        "{discover}"
    );
    let echo = editor.request(
        json!(2),
        "tools/call",
        json!({"name": "demo__echo", "arguments": {"text": "modern"}, "_meta": envelope}),
    );
    assert_eq!(echo["result"]["resultType"], "complete", "{echo}");
    assert_eq!(echo["result"]["content"][0]["text"], "modern");

    let mut sleeping = envelope.clone();
    sleeping["progressToken"] = json!("nap");
    editor.send(json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "mis__slow", "arguments": {"ms": 30000}, "_meta": sleeping},
    }));
    editor.next_matching(|message| message["method"] == "notifications/progress");
    let cancelled_at = Instant::now();
    editor.send(json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3},
    }));
    // A cancelled request gets no answer; the next one is answered while the sleep would still
    // run, and the connection carries on.
    let after = editor.request(
        json!(4),
        "tools/call",
        json!({"name": "demo__echo", "arguments": {"text": "after"}, "_meta": envelope}),
    );
    assert_eq!(after["result"]["content"][0]["text"], "after", "{after}");
    let cancelled = editor.request(
        json!(6),
        "tools/call",
        json!({"name": "mis__cancelled_ids", "arguments": {}, "_meta": envelope}),
    );
    let ids = cancelled["result"]["content"][0]["text"]
        .as_str()
        .expect("the ids the server saw cancelled");
    assert_ne!(
        ids, "[]",
        "the server was told its call was cancelled: {cancelled}"
    );
    assert!(cancelled_at.elapsed() < EVENT_LIMIT);
    let ping = editor.request(json!(5), "ping", json!({"_meta": envelope}));
    assert_eq!(ping["error"]["code"], -32601, "{ping}");
}

#[test]
fn a_restart_fails_the_call_in_flight_and_the_session_carries_on() {
    let place = Place::new();
    let mut serve = place.serve();
    let mut editor = place.connect();
    editor.handshake();
    editor.wait_for_tool("demo__sleep");

    editor.send(json!({
        "jsonrpc": "2.0", "id": 10, "method": "tools/call",
        "params": {"name": "demo__sleep", "arguments": {"ms": 30000}, "_meta": {"progressToken": "nap"}}
    }));
    // The first progress notification shows the call is running at the backend.
    editor.next_matching(|message| message["method"] == "notifications/progress");
    let signalled = Instant::now();
    serve.signal(Signal::SIGTERM);
    let lost = editor.response(&json!(10));
    assert_eq!(lost["error"]["code"], -32001, "{lost}");
    // The first progress came a tenth into the sleep: its end is far beyond this bound.
    assert!(
        signalled.elapsed() < EVENT_LIMIT,
        "the call fails at once, not when the sleep would end: {:?}",
        signalled.elapsed()
    );

    let _second = place.serve();
    assert!(serve.wait_exit().success());
    let socket = transport::socket::socket_path(&place.runtime_dir());
    assert!(
        socket.exists(),
        "the old instance, exiting, leaves the new instance's socket alone"
    );
    let answer = editor.echo(json!(11), "after the restart");
    assert_eq!(echoed(&answer), "after the restart", "{answer}");
    let tools = editor.request(json!(12), "tools/list", json!({}));
    assert!(
        tools["result"]["tools"].is_array(),
        "still initialized: {tools}"
    );
}

#[test]
fn malformed_input_gets_a_parse_error_and_the_session_carries_on() {
    let place = Place::new();
    let _serve = place.serve();
    let mut editor = place.connect();
    editor.handshake();

    editor.send_line("not json");
    let error = editor.next();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert_eq!(error["id"], Value::Null, "{error}");

    editor.wait_for_tool("demo__echo");
    assert_eq!(echoed(&editor.echo(json!(1), "still here")), "still here");
}

#[test]
fn closing_stdin_delivers_the_answers_still_due_and_exits_0() {
    let place = Place::new();
    let _serve = place.serve();
    let mut editor = place.connect();
    editor.handshake();
    editor.wait_for_tool("demo__sleep");

    editor.send(json!({
        "jsonrpc": "2.0", "id": "last", "method": "tools/call",
        "params": {"name": "demo__sleep", "arguments": {"ms": 300}}
    }));
    editor.close_stdin();
    let answer = editor.response(&json!("last"));
    assert_eq!(echoed(&answer), "slept 300 ms", "{answer}");
    assert!(editor.wait_exit().success());
}

/// The socket file is private to the user.
#[test]
fn the_socket_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let place = Place::new();
    let _serve = place.serve();
    let socket = transport::socket::socket_path(&place.runtime_dir());
    let mode = std::fs::metadata(&socket)
        .expect("the socket exists")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let mode = std::fs::metadata(place.runtime_dir())
        .expect("runtime dir")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
}

#[test]
fn an_editor_that_leaves_while_switchboard_is_away_starts_nothing() {
    let place = Place::new();
    let mut serve = place.serve();
    let mut editor = place.connect();
    editor.handshake();
    serve.signal(Signal::SIGTERM);
    assert!(serve.wait_exit().success());
    editor.close_stdin();
    assert!(editor.wait_exit().success());
    assert!(
        place.serve_processes().is_empty(),
        "no headless instance was started for an editor that is gone"
    );
}

#[test]
fn every_progress_notification_comes_before_its_response() {
    let place = Place::new();
    let _serve = place.serve();
    let mut editor = place.connect();
    editor.handshake();
    editor.wait_for_tool("demo__sleep");
    for round in 0..30 {
        let id = json!(100 + round);
        editor.send(json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "demo__sleep", "arguments": {"ms": 20}, "_meta": {"progressToken": round}}
        }));
        let mut progress = Vec::new();
        loop {
            let message = editor.next();
            if message["method"] == "notifications/progress" {
                assert_eq!(
                    message["params"]["progressToken"], round,
                    "the editor's own token"
                );
                progress.push(message["params"]["progress"].as_f64().expect("a number"));
            } else if message["id"] == id {
                assert_eq!(message["result"]["content"][0]["text"], "slept 20 ms");
                break;
            }
        }
        assert_eq!(
            progress,
            (1..=10).map(f64::from).collect::<Vec<_>>(),
            "round {round}"
        );
    }
}

#[test]
fn a_killed_instance_fails_the_calls_it_held_and_the_session_carries_on() {
    let place = Place::new();
    let mut serve = place.serve();
    let mut editor = place.connect();
    editor.handshake();
    editor.wait_for_tool("demo__sleep");

    for id in [json!(20), json!("twenty-one")] {
        editor.send(json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "demo__sleep", "arguments": {"ms": 5000}, "_meta": {"progressToken": id}}
        }));
        editor.next_matching(|message| {
            message["method"] == "notifications/progress"
                && message["params"]["progressToken"] == id
        });
    }
    // Half a request, longer than the instance reads at once, read when the instance dies.
    let long = "x".repeat(100_000);
    editor.send_part(
        &format!(
            r#"{{"jsonrpc":"2.0","id":"half-read","method":"tools/call","params":{{"name":"demo__echo","arguments":{{"text":"{long}"#
        ),
        r#""half-read""#,
    );
    serve.signal(Signal::SIGKILL);
    // Nothing of the instance answers now: the shim learns the calls in flight, and the id of
    // the half-read line, from the ledger the two shared.
    let mut lost_ids = Vec::new();
    while lost_ids.len() < 3 {
        let lost = editor.next_matching(|message| message.get("id").is_some());
        assert_eq!(lost["error"]["code"], -32001, "{lost}");
        assert_eq!(
            lost["error"]["message"],
            transport::connect::RESTARTED_MESSAGE
        );
        lost_ids.push(lost["id"].to_string());
    }
    lost_ids.sort();
    assert_eq!(lost_ids, ["\"half-read\"", "\"twenty-one\"", "20"]);
    serve.wait_exit();
    // The rest of the half-read line goes nowhere: its start died with the instance.
    editor.send_line(&format!("{long}\"}}}}}}"));

    // Written while no instance runs: kept, and sent to the next one.
    editor.send(json!({
        "jsonrpc": "2.0", "id": 22, "method": "tools/call",
        "params": {"name": "demo__echo", "arguments": {"text": "waited"}}
    }));
    let _second = place.serve();
    assert_eq!(echoed(&editor.response(&json!(22))), "waited");
    let tools = editor.request(json!(23), "tools/list", json!({}));
    assert!(
        tools["result"]["tools"].is_array(),
        "the handshake was replayed unseen: {tools}"
    );
}

#[test]
fn a_killed_connect_closes_the_editors_stdout_and_leaves_the_instance_running() {
    let place = Place::new();
    let _serve = place.serve();
    let mut editor = place.connect();
    editor.handshake();
    editor.child.kill().expect("kill connect");
    match editor.received.recv_timeout(EVENT_LIMIT) {
        Err(mpsc::RecvTimeoutError::Disconnected) => {}
        Ok(line) => panic!("nothing more after the kill: {line}"),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("Switchboard did not let go of the editor's stdout")
        }
    }
    let mut other = place.connect();
    other.handshake();
    other.wait_for_tool("demo__echo");
    assert_eq!(
        echoed(&other.echo(json!(1), "still serving")),
        "still serving"
    );
}

#[test]
fn stdio_that_cannot_be_handed_over_is_relayed() {
    let place = Place::new();
    let _serve = place.serve();
    let input = place.dir.path().join("input.jsonl");
    let output = place.dir.path().join("output.jsonl");
    let lines = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "file", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    ];
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(&input, text).expect("write input");
    let status = place
        .command(&["connect"])
        .stdin(std::fs::File::open(&input).expect("open input"))
        .stdout(std::fs::File::create(&output).expect("create output"))
        .status()
        .expect("connect runs");
    assert!(status.success());
    let written = std::fs::read_to_string(&output).expect("read output");
    // A list_changed may come too, when the catalog is rebuilt as the session starts.
    let answers: Vec<Value> = written
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("JSON lines only"))
        .filter(|message| message.get("id").is_some())
        .collect();
    assert_eq!(answers.len(), 2, "{written}");
    assert_eq!(answers[0]["id"], 0);
    assert_eq!(answers[0]["result"]["serverInfo"]["name"], "switchboard");
    assert_eq!(answers[1], json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
}

/// `connect` proves itself to the socket with the key in the data directory: one that reads
/// another data directory than `serve`'s (so has no key, or another one) is refused, whether it
/// hands its stdio over (pipes) or relays (a file): nothing is answered, and the shim exits
/// saying why.
#[test]
fn connect_without_serves_key_is_refused_saying_why() {
    let place = Place::new();
    let _serve = place.serve();
    let elsewhere = place.dir.path().join("another-data-dir");
    std::fs::create_dir_all(&elsewhere).expect("a data directory");
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "keyless", "version": "1"}}});
    let input = place.dir.path().join("input.jsonl");
    std::fs::write(&input, format!("{initialize}\n")).expect("write input");
    for relayed in [false, true] {
        let mut command = place.command(&["connect"]);
        command.env("SWITCHBOARD_DATA_DIR", &elsewhere);
        let mut child = match relayed {
            true => command.stdin(std::fs::File::open(&input).expect("open input")),
            false => command.stdin(Stdio::piped()),
        }
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("connect runs");
        if let Some(mut stdin) = child.stdin.take() {
            // The shim may have left already: the pipe's end may be closed.
            let _ = writeln!(stdin, "{initialize}");
        }
        let finished = child.wait_with_output().expect("connect ends");
        assert!(!finished.status.success(), "relayed {relayed}: refused");
        let stderr = String::from_utf8_lossy(&finished.stderr);
        assert!(
            stderr.contains("cannot read the key of Switchboard's socket"),
            "relayed {relayed}: {stderr}"
        );
        let stdout = String::from_utf8_lossy(&finished.stdout);
        assert!(
            !stdout.contains("\"result\""),
            "relayed {relayed}: nothing is answered: {stdout}"
        );
    }
}

#[test]
fn a_large_message_crosses_whole_both_ways() {
    let place = Place::new();
    let _serve = place.serve();
    let mut editor = place.connect();
    editor.handshake();
    editor.wait_for_tool("demo__echo");
    let text: String = (0..300_000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let answer = editor.echo(json!("big"), &text);
    assert_eq!(echoed(&answer).len(), text.len());
    assert_eq!(echoed(&answer), text);
    assert_eq!(echoed(&editor.echo(json!("small"), "after")), "after");
}

#[test]
fn stdio_is_left_blocking_for_whoever_shares_it() {
    let place = Place::new();
    let _serve = place.serve();
    // A wrapper shell shares connect's stdin and stdout, and looks at their flags afterwards.
    let exe = switchboard_exe();
    let config = place.config();
    let script = format!(
        "{exe:?} connect --config {config:?}; grep -h '^flags' /proc/self/fdinfo/0 /proc/self/fdinfo/1"
    );
    let mut shell = Command::new("sh")
        .arg("-c")
        .arg(script)
        .env("SWITCHBOARD_RUNTIME_DIR", place.runtime_dir())
        .env("SWITCHBOARD_DATA_DIR", place.dir.path().join("data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sh starts");
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "wrapped", "version": "1"}}});
    let mut stdin = shell.stdin.take().expect("piped");
    writeln!(stdin, "{initialize}").expect("write");
    drop(stdin);
    let output = shell.wait_with_output().expect("sh ends");
    let text = String::from_utf8(output.stdout).expect("text");
    let mut lines = text.lines();
    let answer: Value = serde_json::from_str(lines.next().expect("the answer")).expect("JSON");
    assert_eq!(answer["id"], 0, "{text}");
    let flags: Vec<u32> = lines
        .map(|line| {
            let octal = line.trim_start_matches("flags:").trim();
            u32::from_str_radix(octal, 8).expect("octal flags")
        })
        .collect();
    assert_eq!(flags.len(), 2, "{text}");
    for flag in flags {
        assert_eq!(flag & 0o4000, 0, "O_NONBLOCK is cleared: {text}");
    }
}
