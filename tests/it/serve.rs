//! `switchboard serve` and `switchboard check` as real processes: no backend process outlives
//! Switchboard, however it ends.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;

/// Writes a config with one misbehaving backend whose grandchild ignores SIGTERM.
fn write_family_config(dir: &Path) -> PathBuf {
    let config = dir.join("config.toml");
    let text = format!(
        r#"
[servers.family]
command = "python3"
args = [{script:?}, "--grandchild", "--ignore-sigterm", "--pidfile", {pidfile:?}]
stop_grace = "300ms"
"#,
        script = misbehave_script().to_string_lossy(),
        pidfile = dir.join("pids").to_string_lossy(),
    );
    std::fs::write(&config, text).expect("write config");
    config
}

/// Starts serve over `config` in `dir`, which outlives it, and waits until `backend` is ready.
fn start_serve(dir: &Path, config: &Path, backend: &str) -> ServeProcess {
    ServeOptions::in_dir(dir, config)
        .ready(&[backend])
        .env("SWITCHBOARD_LOG", "debug")
        .start()
}

/// The guardian process that this serve started.
fn guardian_of(serve: u32) -> u32 {
    for entry in std::fs::read_dir("/proc").expect("proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<i32>().ok());
        if ppid == Some(serve as i32) && cmdline.windows(10).any(|w| w == b"__guardian") {
            return pid;
        }
    }
    panic!("no guardian process found for {serve}");
}

#[tokio::test]
async fn sigterm_stops_every_backend_process_including_the_grandchild() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_family_config(dir.path());
    let mut serve = start_serve(dir.path(), &config, "family");
    let (pid, grandchild) = read_pidfile(&dir.path().join("pids")).await;

    serve.signal(Signal::SIGTERM);
    let status = serve.wait_exit();
    assert!(status.success(), "clean exit after SIGTERM: {status:?}");
    assert!(!alive(pid), "the backend leader is gone when serve exits");
    assert!(
        wait_gone(grandchild).await,
        "the grandchild that ignores SIGTERM is gone"
    );
}

#[tokio::test]
async fn sigkill_of_serve_still_leaves_no_backend_process() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_family_config(dir.path());
    let mut serve = start_serve(dir.path(), &config, "family");
    let (pid, grandchild) = read_pidfile(&dir.path().join("pids")).await;

    serve.signal(Signal::SIGKILL);
    serve.wait_exit();
    assert!(wait_gone(pid).await, "the leader dies with its parent");
    assert!(
        wait_gone(grandchild).await,
        "the guardian kills the rest of the group"
    );
}

#[tokio::test]
async fn groups_left_by_a_run_that_died_are_reaped_on_the_next_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_family_config(dir.path());
    let mut first = start_serve(dir.path(), &config, "family");
    let (pid, grandchild) = read_pidfile(&dir.path().join("pids")).await;

    // The worst case: the guardian dies too, so only the record on disk is left.
    let guardian = guardian_of(first.pid());
    kill(Pid::from_raw(guardian as i32), Signal::SIGKILL).expect("kill guardian");
    assert!(wait_gone(guardian).await);
    first.signal(Signal::SIGKILL);
    first.wait_exit();
    assert!(
        wait_gone(pid).await,
        "the leader dies with its parent (parent-death signal)"
    );
    assert!(
        alive(grandchild),
        "without the guardian the grandchild is orphaned, for now"
    );

    std::fs::remove_file(dir.path().join("pids")).expect("remove old pidfile");
    let mut second = start_serve(dir.path(), &config, "family");
    assert!(
        wait_gone(grandchild).await,
        "the next start reaps the orphaned group"
    );
    second.wait_for_log("left behind by an earlier run");
    second.signal(Signal::SIGTERM);
    assert!(second.wait_exit().success());
}

#[tokio::test]
async fn first_run_writes_a_default_config_with_the_demo_server() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("fresh/config.toml");
    let mut serve = start_serve(dir.path(), &config, "demo");
    let text = std::fs::read_to_string(&config).expect("default config written");
    assert!(
        text.contains("[servers.demo]") && text.contains("demo-server"),
        "{text}"
    );
    serve.signal(Signal::SIGTERM);
    assert!(serve.wait_exit().success());
}

#[test]
fn check_reports_every_problem_with_its_position_and_exits_1() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("broken.toml");
    std::fs::write(
        &config,
        "[servers.good]\ncommand = \"python3\"\n\n[servers.nocommand]\nargs = []\n\n[servers.typo]\ncommand = \"python3\"\nargz = []\n\n[servers.missing]\ncommand = \"surely-not-a-command-xyz\"\n\n[servers.env]\ncommand = \"python3\"\nenv = { KEY = \"${env:SWITCHBOARD_TEST_UNSET_VARIABLE}\" }\n",
    )
    .expect("write config");
    let output = Command::new(switchboard_exe())
        .args(["check", "--config"])
        .arg(&config)
        .output()
        .expect("runs");
    let report = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{report}");
    let path = config.display().to_string();
    for expected in [
        format!("{path}:4:10: error: servers.nocommand: missing field `command`"),
        format!("{path}:9:1: error: servers.typo.argz"),
        format!("{path}:12:11: error: servers.missing.command"),
        format!("{path}:16:"),
    ] {
        assert!(
            report.contains(&expected),
            "missing {expected:?} in:\n{report}"
        );
    }
    assert!(report.contains("surely-not-a-command-xyz"), "{report}");
    assert!(
        report.contains("SWITCHBOARD_TEST_UNSET_VARIABLE"),
        "{report}"
    );
    assert!(report.contains("1 valid backend(s): good"), "{report}");

    std::fs::write(&config, "[servers.good\ncommand = 1").expect("write config");
    let output = Command::new(switchboard_exe())
        .args(["check", "--config"])
        .arg(&config)
        .output()
        .expect("runs");
    let report = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        report.contains(&format!("{path}:1:")),
        "a syntax error names its line: {report}"
    );
}

/// A login shell that answers only once the file `SLOW_SHELL_ANSWER` names exists, putting the
/// folder that file names first in its PATH.
const SLOW_SHELL: &str = "#!/bin/sh\n\
    while [ ! -e \"$SLOW_SHELL_ANSWER\" ]; do sleep 0.02; done\n\
    printf '\\n__switchboard_path__%s:%s\\n' \"$(cat \"$SLOW_SHELL_ANSWER\")\" \"$PATH\"\n";

#[tokio::test]
async fn a_start_after_the_first_does_not_wait_for_the_login_shell() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("temp dir");
    let shell = dir.path().join("slow-shell");
    std::fs::write(&shell, SLOW_SHELL).expect("shell written");
    std::fs::set_permissions(&shell, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let answer = dir.path().join("answer");
    let kept = dir.path().join("data/session-path");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[servers.demo]\ncommand = {:?}\nargs = [\"demo-server\"]\n",
            switchboard_exe().to_string_lossy()
        ),
    )
    .expect("config written");
    let start = || {
        ServeOptions::in_dir(dir.path(), &config)
            .ready(&["demo"])
            .env("SHELL", &shell)
            .env("SLOW_SHELL_ANSWER", &answer)
            .start()
    };

    // The first start ever asks the shell and waits for it; what it says is kept.
    std::fs::write(&answer, "/first-session-folder").expect("answered");
    drop(start());
    let first = std::fs::read_to_string(&kept).expect("the session's PATH is kept");
    assert!(first.starts_with("/first-session-folder:"), "{first}");

    // The next start uses what was kept: it is ready while the shell has not answered yet
    // (it cannot before the answer file exists), and keeps what the shell says later.
    std::fs::remove_file(&answer).expect("no answer yet");
    let serve = start();
    assert_eq!(
        std::fs::read_to_string(&kept).expect("kept"),
        first,
        "nothing new is kept before the shell answers"
    );
    std::fs::write(&answer, "/second-session-folder").expect("answered");
    let kept_now = eventually("the shell's new answer kept", EVENT_LIMIT, || async {
        let text = std::fs::read_to_string(&kept).unwrap_or_default();
        match text.starts_with("/second-session-folder:") {
            true => Ok(text),
            false => Err(text),
        }
    })
    .await;
    assert!(!kept_now.contains("/first-session-folder"), "{kept_now}");
    serve.wait_for_log("the login shell's PATH changed");
}

/// `serve`'s anonymous memory, in KiB.
fn anonymous_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("RssAnon:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("RssAnon")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_large_results_took_is_given_back_once_they_stop() {
    let serve = ServeProcess::start(&[ServedBackend::Misbehave]);
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp.open_session("memory").await.expect("a session");
    let small = mcp
        .call_tool(&session, 1, "mis__echo", json!({"text": "small"}))
        .await;
    assert_eq!(first_text(&small), "small");
    let before = anonymous_kib(serve.pid());

    // The heap keeps what large results freed while they come (so that the next one takes no
    // page faults), and gives it back once they stop.
    for id in 2..6 {
        let huge = mcp
            .call_tool(&session, id, "mis__huge", json!({"bytes": 4_000_000}))
            .await;
        assert_eq!(first_text(&huge).len(), 4_000_000);
    }
    let after = eventually("the freed memory given back", EVENT_LIMIT, || async {
        let now = anonymous_kib(serve.pid());
        if now <= before + 2048 {
            Ok(now)
        } else {
            Err(format!("{before} KiB before, {now} KiB now"))
        }
    })
    .await;
    assert!(after <= before + 2048);
}
