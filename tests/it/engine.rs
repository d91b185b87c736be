//! The engine against real backend processes: the misbehaving test server and the demo server.

use std::time::Duration;

use crate::support::*;
use config::BackendConfig;
use supervisor::rpc::{CloseReason, RpcError};
use supervisor::status::{BackendState, StopReason};
use supervisor::{Applied, BackendHandle, CallError, ControlError};
use wire::method::Method;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_requests_over_one_pipe_are_all_correlated() {
    let engine = engine(vec![misbehave("many", &[])]);
    let backend = engine.backend("many").expect("configured");
    wait_state(&backend, BackendState::Ready).await;

    let calls = (0..1000).map(|i| {
        let backend = backend.clone();
        tokio::spawn(async move {
            let (tool, arguments) = if i % 2 == 0 {
                ("echo", serde_json::json!({ "text": format!("call {i}") }))
            } else {
                ("slow", serde_json::json!({ "ms": i % 17 }))
            };
            let result = backend
                .request(&Method::ToolsCall, Some(&call_params(tool, arguments)))
                .await;
            (i, result)
        })
    });
    let mut answered = 0;
    for call in calls.collect::<Vec<_>>() {
        let (i, result) = call.await.expect("task finished");
        let text = first_text(&json(&result.expect("every call succeeds")));
        let expected = if i % 2 == 0 {
            format!("call {i}")
        } else {
            format!("slept {}", i % 17)
        };
        assert_eq!(
            text, expected,
            "answer of call {i} went to the wrong caller"
        );
        answered += 1;
    }
    assert_eq!(answered, 1000);
    engine.shutdown().await;
}

#[tokio::test]
async fn a_crash_mid_call_releases_every_waiter_with_the_exit_status() {
    let engine = engine(vec![misbehave("crashy", &[])]);
    let backend = engine.backend("crashy").expect("configured");
    wait_state(&backend, BackendState::Ready).await;

    let hanging: Vec<_> = (0..5)
        .map(|_| {
            let backend = backend.clone();
            tokio::spawn(async move {
                backend
                    .request(
                        &Method::ToolsCall,
                        Some(&call_params("hang", serde_json::json!({}))),
                    )
                    .await
            })
        })
        .collect();
    // The crash comes once the backend has every hanging call; it never answers the crash call
    // either.
    eventually("the backend has the hanging calls", EVENT_LIMIT, || async {
        let ids = tool_ids(&backend, "in_flight").await;
        if ids.len() == 5 { Ok(()) } else { Err(ids) }
    })
    .await;
    let crash = backend
        .request(
            &Method::ToolsCall,
            Some(&call_params("crash", serde_json::json!({ "code": 3 }))),
        )
        .await;

    for error in std::iter::once(crash.expect_err("the crash is never answered")) {
        assert_exit_error(&error, 3);
    }
    for call in hanging {
        let result = tokio::time::timeout(EVENT_LIMIT, call)
            .await
            .expect("released, not hung")
            .expect("joined");
        assert_exit_error(
            &result.expect_err("a hanging call fails when the backend dies"),
            3,
        );
    }

    let status = wait_status(&backend, |status| {
        status.state == BackendState::Ready && status.restarts == 1
    })
    .await;
    let crash_entry = status
        .history
        .iter()
        .find(|entry| entry.reason == StopReason::Crash)
        .expect("recorded");
    assert_eq!(
        crash_entry.exit.as_ref().and_then(|exit| exit.code),
        Some(3)
    );
    assert!(
        crash_entry
            .output_tail
            .iter()
            .any(|line| line.text.contains("misbehave: crashing now")),
        "history keeps the stderr lines before the crash: {:?}",
        crash_entry.output_tail
    );
    engine.shutdown().await;
}

/// Calls `tool` of the misbehaving server, which answers a JSON array of request ids.
async fn tool_ids(backend: &BackendHandle, tool: &str) -> Vec<u64> {
    let params = call_params(tool, serde_json::json!({}));
    let result = backend.request(&Method::ToolsCall, Some(&params)).await;
    serde_json::from_str(&first_text(&json(&result.expect("answered")))).expect("ids")
}

fn assert_exit_error(error: &CallError, code: i32) {
    match error {
        CallError::Rpc(RpcError::Closed {
            backend,
            reason: CloseReason::Exited(exit),
            ..
        }) => {
            assert_eq!(&**backend, "crashy");
            assert_eq!(exit.code, Some(code));
            assert!(
                error.to_string().contains(&format!("exit code {code}")),
                "{error}"
            );
        }
        other => panic!("expected an exit error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_request_past_its_deadline_is_cancelled_at_the_backend() {
    let engine = engine(vec![misbehave("slowpoke", &[])]);
    let backend = engine.backend("slowpoke").expect("configured");
    wait_state(&backend, BackendState::Ready).await;

    let error = backend
        .request_with_timeout(
            &Method::ToolsCall,
            Some(&call_params("hang", serde_json::json!({}))),
            Duration::from_millis(100),
        )
        .await
        .expect_err("hang never answers");
    assert!(
        matches!(error, CallError::Rpc(RpcError::Timeout { .. })),
        "{error:?}"
    );

    let cancelled = tool_ids(&backend, "cancelled_ids").await;
    assert_eq!(
        cancelled.len(),
        1,
        "the backend received notifications/cancelled for the timed-out call"
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn banners_garbage_and_non_utf8_on_stdout_are_recorded_and_skipped() {
    let engine = engine(vec![misbehave("noisy", &["--banner"])]);
    let backend = engine.backend("noisy").expect("configured");
    wait_state(&backend, BackendState::Ready).await;

    let result = backend
        .request(
            &Method::ToolsCall,
            Some(&call_params("garbage", serde_json::json!({}))),
        )
        .await;
    assert_eq!(
        first_text(&json(&result.expect("answered after garbage"))),
        "after garbage"
    );
    let echo = backend
        .request(
            &Method::ToolsCall,
            Some(&call_params(
                "echo",
                serde_json::json!({ "text": "still fine" }),
            )),
        )
        .await;
    assert_eq!(first_text(&json(&echo.expect("answered"))), "still fine");

    let noise: Vec<String> = backend
        .output()
        .tail(100)
        .into_iter()
        .filter(|line| line.stream == supervisor::output::OutputStream::StdoutNoise)
        .map(|line| line.text)
        .collect();
    assert!(
        noise
            .iter()
            .any(|line| line.contains("misbehave server starting")),
        "{noise:?}"
    );
    assert!(
        noise.iter().any(|line| line == "this is not json"),
        "{noise:?}"
    );
    assert!(
        noise
            .iter()
            .any(|line| line.contains('\u{fffd}') && line.contains("garbage")),
        "{noise:?}"
    );
    assert_eq!(backend.status().state, BackendState::Ready);
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_70_mib_answer_passes_and_one_over_the_limit_fails_alone() {
    let mut limited = misbehave("limited", &[]);
    limited.max_message_size = 1024 * 1024;
    let engine = engine(vec![misbehave("roomy", &[]), limited]);
    let roomy = engine.backend("roomy").expect("configured");
    let limited = engine.backend("limited").expect("configured");
    wait_state(&roomy, BackendState::Ready).await;
    wait_state(&limited, BackendState::Ready).await;

    let size = 70 * 1024 * 1024;
    let result = roomy
        .request(
            &Method::ToolsCall,
            Some(&call_params("huge", serde_json::json!({ "bytes": size }))),
        )
        .await;
    assert_eq!(
        first_text(&json(&result.expect("a 70 MiB answer arrives"))).len(),
        size
    );

    let error = limited
        .request(
            &Method::ToolsCall,
            Some(&call_params(
                "huge",
                serde_json::json!({ "bytes": 2 * 1024 * 1024 }),
            )),
        )
        .await
        .expect_err("over the limit");
    match &error {
        CallError::Rpc(RpcError::TooLarge { limit, len, .. }) => {
            assert_eq!(*limit, 1024 * 1024);
            assert!(*len > 2 * 1024 * 1024);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    let echo = limited
        .request(
            &Method::ToolsCall,
            Some(&call_params("echo", serde_json::json!({ "text": "next" }))),
        )
        .await;
    assert_eq!(
        first_text(&json(&echo.expect("the connection survives"))),
        "next"
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn handshake_failures_are_reported_clearly() {
    let mut silent = misbehave("silent", &["--no-initialize"]);
    silent.handshake_timeout = Duration::from_millis(300);
    let engine = engine(vec![
        silent,
        misbehave("ancient", &["--protocol-version", "1999-01-01"]),
        misbehave("quitter", &["--exit-during-handshake", "9"]),
    ]);
    for (name, expected) in [
        ("silent", "did not answer initialize within 300 ms"),
        (
            "ancient",
            "protocol version 1999-01-01, which Switchboard does not support",
        ),
        ("quitter", "exit code 9"),
    ] {
        let backend = engine.backend(name).expect("configured");
        let error = backend.start().await.expect_err("cannot become ready");
        match &error {
            ControlError::StartFailed { message, .. } => {
                assert!(message.contains(expected), "{name}: {message}")
            }
            other => panic!("{name}: expected StartFailed, got {other:?}"),
        }
        let status = backend.status();
        let entry = status.history.last().expect("a history entry");
        assert_eq!(entry.reason, StopReason::HandshakeFailed);
        assert!(
            entry
                .detail
                .as_deref()
                .unwrap_or_default()
                .contains(expected)
        );
    }
    let quitter = engine.backend("quitter").expect("configured").status();
    let entry = quitter.history.last().expect("entry");
    assert!(
        entry
            .output_tail
            .iter()
            .any(|line| line.text.contains("exiting during handshake"))
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn a_declared_list_the_server_does_not_have_is_empty_with_a_note_and_other_errors_fail() {
    let engine = engine(vec![
        misbehave("lacking", &["--refuse", "resources/templates/list=-32601"]),
        misbehave("broken", &["--refuse", "resources/templates/list=-32603"]),
    ]);
    let lacking = engine.backend("lacking").expect("configured");
    let status = wait_state(&lacking, BackendState::Ready).await;
    assert_eq!(status.catalog.resources.len(), 2);
    assert!(status.catalog.resource_templates.is_empty());
    assert_eq!(status.catalog.prompts.len(), 1);
    assert_eq!(
        status.last_error.as_deref(),
        Some(
            "the server declares resources but does not have resources/templates/list \
             (error -32601: Refused: resources/templates/list): taken as empty"
        )
    );
    assert_eq!((status.restarts, status.history.len()), (0, 0));

    let broken = engine.backend("broken").expect("configured");
    let error = broken.start().await.expect_err("cannot become ready");
    match &error {
        ControlError::StartFailed { message, .. } => assert_eq!(
            message,
            "backend broken answered resources/templates/list with error -32603: Refused: \
             resources/templates/list"
        ),
        other => panic!("expected StartFailed, got {other:?}"),
    }
    let status = broken.status();
    assert_eq!(
        status.history.last().map(|entry| entry.reason),
        Some(StopReason::HandshakeFailed)
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn a_spent_restart_budget_ends_in_a_crash_loop_until_started_by_hand() {
    let mut config = misbehave("loop", &["--exit-during-handshake", "4"]);
    config.restart.max_restarts = 2;
    let engine = engine(vec![config]);
    let backend = engine.backend("loop").expect("configured");
    let status = wait_state(&backend, BackendState::CrashLoop).await;
    assert_eq!(
        status.history.len(),
        3,
        "first start plus two restarts: {:?}",
        status.history
    );
    assert_eq!(status.restarts, 2);
    assert!(status.pid.is_none());

    // A manual start is allowed again (and fails again, clearly).
    let error = backend
        .start()
        .await
        .expect_err("still exits during the handshake");
    assert!(error.to_string().contains("exit code 4"), "{error}");
    engine.shutdown().await;
}

/// A crash loop's history shows under each run what that run printed, and nothing of the runs
/// before it: a real child that says which run it is on stderr, then exits.
#[tokio::test]
async fn each_run_in_a_crash_loops_history_shows_only_its_own_output() {
    let dir = tempfile::tempdir().expect("temp dir");
    let count = dir.path().join("runs");
    let script = format!(
        "n=$(( $(cat '{count}' 2>/dev/null || echo 0) + 1 )); echo $n > '{count}'; \
         echo \"run $n starts\" >&2; echo \"run $n fails\" >&2; exit 5",
        count = count.display()
    );
    let mut config = BackendConfig::new("looping", "sh", vec!["-c".to_owned(), script]);
    config.restart = fast_restarts();
    config.restart.max_restarts = 3;
    let engine = engine(vec![config]);
    let backend = engine.backend("looping").expect("configured");
    let status = wait_state(&backend, BackendState::CrashLoop).await;
    let outputs: Vec<Vec<String>> = status
        .history
        .iter()
        .map(|entry| {
            entry
                .output_tail
                .iter()
                .map(|line| line.text.clone())
                .collect()
        })
        .collect();
    let own: Vec<Vec<String>> = (1..=4)
        .map(|run| vec![format!("run {run} starts"), format!("run {run} fails")])
        .collect();
    assert_eq!(outputs, own, "the first start and three restarts");
    engine.shutdown().await;
}

#[tokio::test]
async fn stop_during_backoff_cancels_the_restart_at_once() {
    let mut config = misbehave("patient", &[]);
    config.restart.backoff_base = Duration::from_secs(3600);
    config.restart.backoff_cap = Duration::from_secs(3600);
    let engine = engine(vec![config]);
    let backend = engine.backend("patient").expect("configured");
    wait_state(&backend, BackendState::Ready).await;
    let _ = backend
        .request(
            &Method::ToolsCall,
            Some(&call_params("crash", serde_json::json!({}))),
        )
        .await;
    let status = wait_state(&backend, BackendState::Backoff).await;
    assert!(status.restart_at_ms.is_some());

    tokio::time::timeout(EVENT_LIMIT, backend.stop())
        .await
        .expect("stop does not wait for the backoff")
        .expect("ok");
    assert_eq!(backend.status().state, BackendState::Stopped);
    assert!(backend.status().pid.is_none());

    // The same for shutdown: no process is spawned afterwards.
    backend.start().await.expect("starts");
    let _ = backend
        .request(
            &Method::ToolsCall,
            Some(&call_params("crash", serde_json::json!({}))),
        )
        .await;
    wait_state(&backend, BackendState::Backoff).await;
    tokio::time::timeout(EVENT_LIMIT, engine.shutdown())
        .await
        .expect("shutdown interrupts the backoff");
    assert_eq!(backend.status().state, BackendState::Stopped);
    let error = backend.start().await.expect_err("no start after shutdown");
    assert_eq!(error, ControlError::ShuttingDown);
}

#[tokio::test]
async fn discovery_follows_pagination_keeps_unknown_fields_and_refreshes_on_list_changed() {
    let engine = engine(vec![misbehave("lists", &[])]);
    let backend = engine.backend("lists").expect("configured");
    let status = wait_state(&backend, BackendState::Ready).await;
    let tool_names: Vec<String> = status
        .catalog
        .tools
        .iter()
        .map(|tool| json(tool)["name"].as_str().expect("name").to_owned())
        .collect();
    assert!(
        tool_names.len() > 2,
        "more than one page of tools: {tool_names:?}"
    );
    assert!(tool_names.contains(&"echo".to_owned()) && tool_names.contains(&"fail".to_owned()));
    assert!(
        status
            .catalog
            .tools
            .iter()
            .all(|tool| json(tool)["x-switchboard-test"]["kept"] == true)
    );
    assert_eq!(
        status.catalog.resources.len(),
        2,
        "two pages of one resource each"
    );
    assert_eq!(status.catalog.resource_templates.len(), 1);
    assert_eq!(status.catalog.prompts.len(), 1);
    let server = status.server.expect("server description");
    assert_eq!(json(&server.server_info)["name"], "misbehave");

    let mut notifications = engine.notifications();
    backend
        .request(
            &Method::ToolsCall,
            Some(&call_params("change_tools", serde_json::json!({}))),
        )
        .await
        .expect("ok");
    let status = wait_status(&backend, |status| {
        status
            .catalog
            .tools
            .iter()
            .any(|tool| json(tool)["name"] == "added_later")
    })
    .await;
    assert_eq!(status.catalog.tools.len(), tool_names.len() + 1);
    let note = tokio::time::timeout(EVENT_LIMIT, notifications.recv())
        .await
        .expect("in time")
        .expect("received");
    assert_eq!(note.method.as_str(), "notifications/tools/list_changed");
    assert_eq!(&*note.backend, "lists");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_stderr_flood_stays_bounded_and_the_backend_keeps_serving() {
    let engine = engine(vec![misbehave("chatty", &["--stderr-spam", "1000"])]);
    let backend = engine.backend("chatty").expect("configured");
    wait_state(&backend, BackendState::Ready).await;
    let result = backend
        .request(
            &Method::ToolsCall,
            Some(&call_params(
                "stderr",
                serde_json::json!({ "lines": 50000 }),
            )),
        )
        .await;
    assert_eq!(first_text(&json(&result.expect("answered"))), "wrote 50000");
    let tail = backend.output().tail(usize::MAX);
    assert!(tail.len() <= 2000, "ring bounded in lines: {}", tail.len());
    assert!(backend.output().held_bytes() <= 512 * 1024);
    engine.shutdown().await;
}

#[tokio::test]
async fn a_backend_that_stops_answering_pings_is_restarted() {
    let mut config = misbehave("frozen", &[]);
    config.health_interval = Some(Duration::from_millis(100));
    config.health_timeout = Duration::from_millis(300);
    let engine = engine(vec![config]);
    let backend = engine.backend("frozen").expect("configured");
    let status = wait_state(&backend, BackendState::Ready).await;
    let pid = status.pid.expect("running");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGSTOP,
    )
    .expect("stop it");

    let status = wait_status(&backend, |status| {
        status.state == BackendState::Ready && status.pid != Some(pid)
    })
    .await;
    let entry = status
        .history
        .iter()
        .find(|entry| entry.reason == StopReason::Unresponsive)
        .expect("recorded");
    assert!(entry.detail.as_deref().unwrap_or_default().contains("ping"));
    assert!(wait_gone(pid).await, "the frozen process was killed");
    engine.shutdown().await;
}

#[tokio::test]
async fn stop_kills_a_grandchild_that_ignores_sigterm() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pidfile = dir.path().join("pids");
    let pidfile_arg = pidfile.to_string_lossy().into_owned();
    let engine = engine(vec![misbehave(
        "family",
        &[
            "--grandchild",
            "--ignore-sigterm",
            "--pidfile",
            &pidfile_arg,
        ],
    )]);
    let backend = engine.backend("family").expect("configured");
    wait_state(&backend, BackendState::Ready).await;
    let (pid, grandchild) = read_pidfile(&pidfile).await;
    assert!(alive(pid) && alive(grandchild));

    backend.stop().await.expect("stops");
    assert!(!alive(pid), "the leader is reaped when stop returns");
    assert!(wait_gone(grandchild).await, "the grandchild is gone");
    let entry = backend.status().history.last().cloned().expect("entry");
    assert_eq!(entry.reason, StopReason::StoppedByUser);
    assert_eq!(
        entry.exit.and_then(|exit| exit.code),
        Some(0),
        "the leader exits when its stdin closes"
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn the_demo_server_is_supervised_end_to_end() {
    let engine = engine(vec![demo("demo")]);
    let backend = engine.backend("demo").expect("configured");
    let status = wait_state(&backend, BackendState::Ready).await;
    let names: Vec<String> = status
        .catalog
        .tools
        .iter()
        .map(|tool| json(tool)["name"].as_str().expect("name").to_owned())
        .collect();
    for expected in ["echo", "add", "sleep", "fail", "crash"] {
        assert!(names.contains(&expected.to_owned()), "{names:?}");
    }
    assert_eq!(status.catalog.resources.len(), 1);
    assert_eq!(status.catalog.prompts.len(), 1);
    let sum = backend
        .request(
            &Method::ToolsCall,
            Some(&call_params("add", serde_json::json!({ "a": 2, "b": 3 }))),
        )
        .await;
    assert_eq!(first_text(&json(&sum.expect("answered"))), "5");
    let failed = backend
        .request(
            &Method::ToolsCall,
            Some(&call_params(
                "fail",
                serde_json::json!({ "message": "nope" }),
            )),
        )
        .await;
    assert_eq!(
        json(&failed.expect("a tool error is a result"))["isError"],
        true
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn server_everything_from_npm_is_supervised_end_to_end() {
    let engine = engine(vec![everything("everything")]);
    let backend = engine.backend("everything").expect("configured");
    let status = wait_state(&backend, BackendState::Ready).await;
    let names: Vec<String> = status
        .catalog
        .tools
        .iter()
        .map(|tool| json(tool)["name"].as_str().expect("name").to_owned())
        .collect();
    assert!(names.iter().any(|name| name == "echo"), "{names:?}");
    assert!(!status.catalog.resources.is_empty() && !status.catalog.prompts.is_empty());
    let echo = backend
        .request(
            &Method::ToolsCall,
            Some(&call_params("echo", serde_json::json!({ "message": "hi" }))),
        )
        .await;
    assert!(first_text(&json(&echo.expect("answered"))).contains("hi"));
    let pid = status.pid.expect("running");
    backend.stop().await.expect("stops");
    assert!(!alive(pid));
    engine.shutdown().await;
}

#[tokio::test]
async fn restart_by_hand_replaces_the_process_and_records_why() {
    let engine = engine(vec![misbehave("again", &[])]);
    let backend = engine.backend("again").expect("configured");
    let first = wait_state(&backend, BackendState::Ready)
        .await
        .pid
        .expect("running");
    backend.restart().await.expect("restarts");
    let status = backend.status();
    assert_eq!(status.state, BackendState::Ready);
    let second = status.pid.expect("running again");
    assert_ne!(first, second);
    assert!(!alive(first), "the old process is gone");
    assert_eq!(
        status.history.last().expect("entry").reason,
        StopReason::RestartedByUser
    );
    assert_eq!(
        status.restarts, 0,
        "a manual restart is not counted as an automatic one"
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn an_older_supported_protocol_version_is_accepted() {
    let engine = engine(vec![misbehave(
        "old",
        &["--protocol-version", "2024-11-05"],
    )]);
    let backend = engine.backend("old").expect("configured");
    let status = wait_state(&backend, BackendState::Ready).await;
    assert_eq!(
        status.server.expect("described").protocol_version,
        "2024-11-05"
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn progress_notifications_arrive_in_order_with_the_tokens_the_caller_chose() {
    let engine = engine(vec![demo("progress")]);
    let backend = engine.backend("progress").expect("configured");
    wait_state(&backend, BackendState::Ready).await;
    let mut notifications = engine.notifications();
    let params = serde_json::json!({
        "name": "sleep",
        "arguments": { "ms": 100 },
        "_meta": { "progressToken": "token-7" },
    });
    let params = serde_json::value::RawValue::from_string(params.to_string()).expect("json");
    let result = backend
        .request(&Method::ToolsCall, Some(&params))
        .await
        .expect("answered");
    assert_eq!(first_text(&json(&result)), "slept 100 ms");

    let mut progress = Vec::new();
    while progress.len() < 10 {
        let note = tokio::time::timeout(EVENT_LIMIT, notifications.recv())
            .await
            .expect("in time")
            .expect("open");
        if note.method.as_str() == "notifications/progress" {
            let params = json(note.params.as_deref().expect("params"));
            assert_eq!(params["progressToken"], "token-7");
            progress.push(params["progress"].as_f64().expect("a number"));
        }
    }
    assert!(
        progress.windows(2).all(|pair| pair[0] < pair[1]),
        "in order: {progress:?}"
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn apply_restarts_only_what_needs_it_and_says_what_it_did() {
    let mut looping = misbehave("looping", &["--exit-during-handshake", "4"]);
    looping.restart.max_restarts = 0;
    let engine = engine(vec![demo("renamed"), demo("running"), looping.clone()]);
    let renamed = engine.backend("renamed").expect("configured");
    let running = engine.backend("running").expect("configured");
    let first = wait_state(&renamed, BackendState::Ready).await;
    wait_state(&running, BackendState::Ready).await;
    wait_state(
        &engine.backend("looping").expect("configured"),
        BackendState::CrashLoop,
    )
    .await;

    // A new prefix only changes names: the process stays. Disabling stops; fixing the command
    // of a crash-looping backend starts it again.
    let mut new_prefix = demo("renamed");
    new_prefix.prefix = "other".to_owned();
    let mut disabled = demo("running");
    disabled.enabled = false;
    let mut fixed = demo("looping");
    fixed.restart = looping.restart;
    let report = engine
        .apply(vec![new_prefix, disabled, fixed.clone()])
        .await;
    let applied: Vec<(&str, Applied)> = report
        .backends
        .iter()
        .map(|(name, applied)| (name.as_str(), *applied))
        .collect();
    assert_eq!(
        applied,
        [
            ("looping", Applied::Started),
            ("renamed", Applied::Updated),
            ("running", Applied::Stopped),
        ]
    );
    assert_eq!(
        report.to_string(),
        "started looping; stopped running; updated renamed"
    );
    let kept = renamed.status();
    assert_eq!(kept.pid, first.pid, "a routing change keeps the process");
    assert_eq!(renamed.config().prefix, "other");
    assert_eq!(running.status().state, BackendState::Stopped);
    let entry = running.status().history.last().cloned().expect("an entry");
    assert_eq!(entry.reason, StopReason::ConfigChanged);
    wait_state(
        &engine.backend("looping").expect("configured"),
        BackendState::Ready,
    )
    .await;

    // The same configs again change nothing; a missing one is removed and its handle refuses.
    let report = engine.apply(vec![fixed]).await;
    assert_eq!(report.backends["looping"], Applied::Unchanged);
    assert_eq!(report.backends["renamed"], Applied::Removed);
    assert!(engine.backend("renamed").is_none());
    assert!(wait_gone(first.pid.expect("a pid")).await);
    assert_eq!(
        renamed.start().await,
        Err(ControlError::ShuttingDown),
        "the removed backend's task is gone"
    );
    engine.shutdown().await;
    assert_eq!(
        engine.apply(vec![demo("late")]).await.backends.len(),
        0,
        "nothing is applied after shutdown"
    );
}
