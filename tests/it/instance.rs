//! `switchboard status` and `switchboard stop` against a real `serve`: what runs, with its
//! dashboard link and backends, and a stop that shuts it down as SIGTERM would, leaving no
//! backend process.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::*;

/// Runs `switchboard ARGS` with `env` (the runtime and data directories of a serve).
fn switchboard(env: &[(&'static str, PathBuf)], args: &[&str]) -> Output {
    Command::new(switchboard_exe())
        .args(args)
        .envs(env.iter().map(|(name, value)| (name, value)))
        .output()
        .expect("switchboard runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn status_shows_a_running_serve_and_stop_ends_it_with_its_backends() {
    let mut serve = ServeProcess::start(&[ServedBackend::Demo]);
    let env = serve.env();

    let shown = switchboard(&env, &["status"]);
    let stdout = text(&shown.stdout);
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    assert!(
        stdout.contains(&format!("running:   pid {}\n", serve.pid())),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("dashboard: {}\n", serve.dashboard_link())),
        "the link the dashboard opens with, key and all: {stdout}"
    );
    assert!(
        stdout.contains(&format!("config:    {}\n", serve.config_path().display())),
        "{stdout}"
    );
    assert!(stdout.contains("  demo: ready (pid "), "{stdout}");

    let shown = switchboard(&env, &["status", "--json"]);
    assert_eq!(shown.status.code(), Some(0));
    let status: Value = serde_json::from_slice(&shown.stdout).expect("one JSON document");
    assert_eq!(status["running"], true, "{status}");
    assert_eq!(status["pid"], serve.pid(), "{status}");
    assert_eq!(status["dashboard"], serve.dashboard_link().as_str());
    assert_eq!(status["mcp"], serve.url().as_str());
    assert_eq!(
        status["config"],
        serve.config_path().display().to_string().as_str()
    );
    assert_eq!(status["backends"][0]["name"], "demo", "{status}");
    assert_eq!(status["backends"][0]["state"], "ready", "{status}");
    assert_eq!(status["backends"][0]["failing"], false, "{status}");
    let backend = status["backends"][0]["pid"].as_u64().expect("its pid") as u32;
    assert!(alive(backend));

    let stopped = switchboard(&env, &["stop"]);
    let stderr = text(&stopped.stderr);
    assert_eq!(stopped.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "Switchboard (pid {}) stopped, and every server it ran with it",
            serve.pid()
        )),
        "{stderr}"
    );
    assert!(stopped.stdout.is_empty());
    assert!(serve.wait_exit().success(), "{}", serve.log());
    assert!(
        serve
            .log()
            .contains("`switchboard stop` asks this instance to shut down"),
        "{}",
        serve.log()
    );
    assert!(!alive(backend), "the backend was stopped with it");

    // None runs now: `status` says so with 3, `stop` has nothing to do and succeeds.
    let shown = switchboard(&env, &["status"]);
    assert_eq!(shown.status.code(), Some(3));
    assert!(shown.stdout.is_empty());
    assert!(
        text(&shown.stderr).contains("no Switchboard is running"),
        "{}",
        text(&shown.stderr)
    );
    let shown = switchboard(&env, &["status", "--json"]);
    assert_eq!(shown.status.code(), Some(3));
    let status: Value = serde_json::from_slice(&shown.stdout).expect("one JSON document");
    assert_eq!(status, serde_json::json!({"running": false}));
    let stopped = switchboard(&env, &["stop"]);
    assert_eq!(stopped.status.code(), Some(0));
    assert!(
        text(&stopped.stderr).contains("no Switchboard was running; nothing to stop"),
        "{}",
        text(&stopped.stderr)
    );
}
