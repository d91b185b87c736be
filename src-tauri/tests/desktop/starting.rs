//! Starting the app: a first run's default config and demo server, the app as the `switchboard`
//! command, and a refusal to start beside a running `serve`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::{Desktop, prepare, quit, send_signal, wait_until};

#[test]
fn a_first_run_writes_the_default_config_and_its_demo_server_runs() {
    let Some((_one_app, _notifications, mut desktop)) = prepare(&[]) else {
        return;
    };
    std::fs::remove_file(desktop.path("config.toml")).expect("start without a config");
    desktop.launch(&["--listen", "127.0.0.1:0"]);
    desktop.wait_for_state("demo", "ready");
    let config = std::fs::read_to_string(desktop.path("config.toml")).expect("the default config");
    let cli = desktop.cli().display().to_string();
    assert!(config.contains(&format!("command = {cli:?}")), "{config}");
    let tray = desktop.wait_for_tray();
    tray.wait_for_layout("the demo server", |root| {
        root.label_starting("demo: ready").is_some()
    });
    quit(&mut desktop, &tray);
}

/// Installed on macOS or Windows, the app is the only program: started with a `switchboard`
/// command it runs that command, no window, no tray, no display needed.
#[test]
fn the_app_is_the_switchboard_command_too() {
    let mut server = Command::new(Desktop::app_exe())
        .arg("demo-server")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the app starts");
    let mut stdin = server.stdin.take().expect("stdin piped");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "desktop-test", "version": "1"}}});
    writeln!(stdin, "{initialize}").expect("write");
    let mut line = String::new();
    BufReader::new(server.stdout.take().expect("stdout piped"))
        .read_line(&mut line)
        .expect("an answer");
    let answer: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(
        answer["result"]["serverInfo"]["name"].is_string(),
        "{answer}"
    );
    drop(stdin);
    let status = server.wait().expect("the demo server ends with its input");
    assert!(status.success(), "{status}");
}

#[test]
fn the_app_refuses_to_start_beside_a_running_serve_and_says_why() {
    let Some((_one_app, notifications, mut desktop)) = prepare(&["demo"]) else {
        return;
    };
    desktop.launch_serve();
    desktop.wait_for_state("demo", "ready");

    let output = desktop.command().output().expect("the app runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "the app started beside serve");
    assert!(
        stderr.contains("is another Switchboard running?"),
        "{stderr}"
    );
    let notice = notifications.wait_for("the startup failure", |(summary, _)| {
        summary == "Switchboard could not start"
    });
    assert!(
        notice.1.contains("is another Switchboard running?"),
        "{notice:?}"
    );

    send_signal(desktop.pid(), "TERM");
    assert!(desktop.wait_for_exit().success(), "serve failed");
    wait_until("serve's backends to be gone", || {
        desktop.processes_left().is_empty().then_some(())
    });
}
