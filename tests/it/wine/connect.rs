//! `switchboard.exe connect` under Wine: an editor's stdio relayed over the named pipe, through
//! a restart of the instance behind it.

use std::io::{BufRead, Write};
use std::process::{Child, Stdio};
use std::sync::mpsc;

use serde_json::{Value, json};

use super::{Place, WineServe, none_left, switchboard_exe, tagged, win, wine};
use crate::support::{EVENT_LIMIT, eventually};

/// `switchboard.exe connect` with an editor's pipes.
struct Editor {
    child: Child,
    received: mpsc::Receiver<String>,
}

impl Editor {
    fn start(place: &Place) -> Editor {
        let mut command = wine(&switchboard_exe());
        place.env(&mut command);
        let mut child = command
            .args(["connect", "--config"])
            .arg(win(&place.config()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("wine starts");
        let stdout = child.stdout.take().expect("stdout piped");
        let (sender, received) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Editor { child, received }
    }

    fn send(&mut self, message: Value) {
        let stdin = self.child.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write to connect");
        stdin.flush().expect("flush");
    }

    fn next(&self) -> Value {
        let line = self
            .received
            .recv_timeout(EVENT_LIMIT * 2)
            .expect("a message from connect in time");
        serde_json::from_str(&line).unwrap_or_else(|error| panic!("JSON ({error}): {line:?}"))
    }

    /// The answer to the request `id`, skipping notifications.
    fn answer(&self, id: Value) -> Value {
        loop {
            let message = self.next();
            if message["id"] == id {
                return message;
            }
        }
    }
}

impl Drop for Editor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn an_editor_is_relayed_through_the_pipe_and_carries_on_after_a_restart() {
    let place = Place::new("connect");
    // The instance connect starts takes its address from the config: any free port.
    place.write_config(&format!(
        "[endpoint]\nlisten = \"127.0.0.1:0\"\n\n{}",
        place.test_server("test", &[])
    ));
    let mut serve = WineServe::start(&place, &["test"]).await;
    let mut editor = Editor::start(&place);
    editor.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "wine-editor", "version": "1"}}}),
    );
    let initialized = editor.answer(json!(1));
    assert_eq!(initialized["result"]["serverInfo"]["name"], "switchboard");
    editor.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    editor.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "test__echo", "arguments": {"text": "over the pipe"}}}));
    let echoed = editor.answer(json!(2));
    assert_eq!(
        echoed["result"]["content"][0]["text"], "over the pipe",
        "{echoed}"
    );

    editor.send(
        json!({"jsonrpc": "2.0", "id": "held", "method": "tools/call",
        "params": {"name": "test__hang", "arguments": {}}}),
    );
    // Lines are relayed in order: once the ping is answered, the hanging call went before it.
    editor.send(json!({"jsonrpc": "2.0", "id": "after", "method": "ping"}));
    editor.answer(json!("after"));
    serve.kill().await;
    let lost = editor.answer(json!("held"));
    assert_eq!(lost["error"]["code"], -32001, "{lost}");

    // Written while no instance runs: connect starts one itself, and the session carries on.
    editor.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}));
    let listed = editor.answer(json!(3));
    let tools = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools: {listed}"));
    assert!(
        tools.iter().any(|tool| tool["name"] == "test__echo"),
        "{listed}"
    );

    let config = win(&place.config());
    let started: Vec<u32> = eventually("the instance connect started", EVENT_LIMIT, || async {
        let serves: Vec<u32> = tagged(&config)
            .into_iter()
            .filter(|(_, line)| line.contains(" serve "))
            .map(|(pid, _)| pid)
            .collect();
        if serves.is_empty() {
            Err("none")
        } else {
            Ok(serves)
        }
    })
    .await;
    drop(editor.child.stdin.take());
    let exited = super::exit_of(&mut editor.child);
    assert!(exited.success(), "{exited}");
    // It runs in a process group of its own, which Ctrl-C does not reach: it is ended the way
    // a logoff ends it, its jobs taking its backends with it.
    for pid in started {
        super::signal(pid, "-KILL");
    }
    none_left(&place.tag, "after the instance connect started ended").await;
}
