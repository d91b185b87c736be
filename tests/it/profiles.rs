//! Profiles through a real `switchboard serve`: the official SDKs on two profiles at once, over
//! `/mcp/NAME` and `connect --profile`, served by the same backend processes; names within a
//! profile's budget; an unknown profile refused; a profile edited live.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::sdk_clients::{run_python_client, run_ts_client};
use crate::support::*;

/// The everything server and the demo server; `full` offers both, `narrow` two everything tools
/// by their exposed and their own names, and one more whose name does not fit its budget.
fn config(narrow_tools: &str) -> String {
    format!(
        "[servers.everything]\ncommand = {everything:?}\nargs = [\"stdio\"]\n\n\
         [servers.demo]\ncommand = {demo:?}\nargs = [\"demo-server\"]\n\n\
         [profiles.full]\n\n\
         [profiles.narrow]\nservers = [\"everything\"]\ntools = [{narrow_tools}]\n\
         max_name_length = 20\n",
        everything = everything_server().to_string_lossy(),
        demo = switchboard_exe().to_string_lossy(),
    )
}

const NARROW_TOOLS: &str = r#""everything__echo", "get-sum", "get-annotated-message""#;

/// The pid of every backend, by name.
async fn pids(serve: &ServeProcess) -> BTreeMap<String, u64> {
    let backends = serve.api_get("/api/backends").await;
    backends
        .as_array()
        .expect("backends")
        .iter()
        .map(|backend| {
            let pid = backend["pid"]
                .as_u64()
                .unwrap_or_else(|| panic!("a pid: {backend}"));
            (backend["name"].as_str().expect("a name").to_owned(), pid)
        })
        .collect()
}

fn listed(transcript: &Value) -> Vec<String> {
    assert_eq!(transcript["error"], Value::Null, "{transcript}");
    let steps = transcript["steps"].as_array().expect("steps");
    steps[0]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools: {transcript}"))
        .iter()
        .map(|tool| tool.as_str().expect("a name").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_profiles_serve_different_tools_from_the_same_processes() {
    node_module("@modelcontextprotocol/client");
    let serve = ServeProcess::with_config(&config(NARROW_TOOLS), &["everything", "demo"]);
    let before = pids(&serve).await;
    let full_url = serve.http_url("/mcp/full");
    let narrow_url = serve.http_url("/mcp/narrow");
    let exe = switchboard_exe();
    let exe = exe.to_str().expect("a UTF-8 path");
    let config_path = serve.config_path();
    let config_path = config_path.to_str().expect("a UTF-8 path");
    let env = serve.env();

    // Three official clients at once: TypeScript on full, Python on narrow over HTTP and over
    // connect --profile.
    let (full, narrow, connected) = std::thread::scope(|scope| {
        let full = scope.spawn(|| run_ts_client("legacy", &["--url", &full_url], &env));
        let narrow = scope.spawn(|| {
            run_python_client(
                "legacy",
                &[
                    "--url",
                    &narrow_url,
                    "--steps",
                    "list,call:everything__echo",
                    "--tool-args",
                    r#"everything__echo={"message":"narrow"}"#,
                ],
                &env,
            )
        });
        let connected = scope.spawn(|| {
            run_python_client(
                "2026-07-28",
                &[
                    "--steps",
                    "list",
                    "--command",
                    exe,
                    "--args",
                    "connect",
                    "--config",
                    config_path,
                    "--profile",
                    "narrow",
                ],
                &env,
            )
        });
        (
            full.join().expect("the TypeScript client"),
            narrow.join().expect("the Python client"),
            connected.join().expect("the Python client over connect"),
        )
    });

    let full_tools = listed(&full);
    assert!(
        full_tools.contains(&"everything__echo".to_owned()),
        "{full_tools:?}"
    );
    assert!(
        full_tools.iter().any(|tool| tool.starts_with("demo__")),
        "{full_tools:?}"
    );
    assert_eq!(
        full["steps"][1]["content"][0]["text"],
        "Echo: from typescript"
    );

    let narrow_tools = listed(&narrow);
    assert_eq!(narrow_tools.len(), 3, "{narrow_tools:?}");
    assert!(narrow_tools.contains(&"everything__echo".to_owned()));
    assert!(narrow_tools.contains(&"everything__get-sum".to_owned()));
    assert!(
        narrow_tools.iter().all(|tool| tool.len() <= 20),
        "every name within the budget: {narrow_tools:?}"
    );
    let shortened = narrow_tools
        .iter()
        .find(|tool| !tool.contains("echo") && !tool.contains("get-sum"))
        .expect("the long one");
    assert!(shortened.starts_with("everything_"), "{shortened}");
    assert_eq!(narrow["steps"][1]["content"][0]["text"], "Echo: narrow");
    assert_eq!(
        listed(&connected),
        narrow_tools,
        "connect --profile serves the same profile"
    );

    let shortened_call = run_python_client(
        "legacy",
        &[
            "--url",
            &narrow_url,
            "--steps",
            &format!("call:{shortened}"),
            "--tool-args",
            &format!(r#"{shortened}={{"messageType":"error","includeImage":false}}"#),
        ],
        &env,
    );
    let called = &shortened_call["steps"][0];
    assert_eq!(called["error"], Value::Null, "{called}");
    assert!(
        called["content"].to_string().contains("Error"),
        "the shortened name reaches get-annotated-message: {called}"
    );

    assert_eq!(
        pids(&serve).await,
        before,
        "every profile is served by the same processes"
    );
}

#[test]
fn an_unknown_profile_is_refused_over_http_and_connect() {
    let serve = ServeProcess::with_config(&config(NARROW_TOOLS), &["everything"]);
    let transcript = run_python_client(
        "legacy",
        &["--url", &serve.http_url("/mcp/nope")],
        &serve.env(),
    );
    assert!(
        transcript["error"]["message"]
            .to_string()
            .contains(r#"no profile \"nope\" is configured"#),
        "{transcript}"
    );

    let exe = switchboard_exe();
    let output = std::process::Command::new(&exe)
        .args(["connect", "--profile", "nope", "--config"])
        .arg(serve.config_path())
        .envs(serve.env())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("connect runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no profile nope is configured"),
        "the reason reaches the editor's log: {stderr}"
    );
}

#[test]
fn a_profile_edited_in_the_file_applies_live_and_a_bad_edit_leaves_only_it_out() {
    let serve = ServeProcess::with_config(&config(NARROW_TOOLS), &["everything"]);
    let narrow_url = serve.http_url("/mcp/narrow");
    let list = || {
        listed(&run_python_client(
            "legacy",
            &["--url", &narrow_url],
            &serve.env(),
        ))
    };
    assert_eq!(list().len(), 3);

    std::fs::write(serve.config_path(), config(r#""everything__echo""#)).expect("write");
    eventually_blocking("the edited profile is served", EVENT_LIMIT, || {
        let tools = list();
        if tools == ["everything__echo"] {
            Ok(())
        } else {
            Err(tools)
        }
    });

    let bad = config(r#""everything__echo""#).replace(
        "servers = [\"everything\"]",
        "servers = [\"everything\", \"nowhere\"]",
    );
    std::fs::write(serve.config_path(), bad).expect("write");
    serve.wait_for_log("unknown server `nowhere`");
    // Left out, as at startup; every other profile is served as the file says.
    eventually_blocking("the profile in error is left out", EVENT_LIMIT, || {
        let transcript = run_python_client("legacy", &["--url", &narrow_url], &serve.env());
        match transcript["error"].is_null() {
            false => Ok(()),
            true => Err(transcript),
        }
    });
    let full = run_python_client(
        "legacy",
        &["--url", &serve.http_url("/mcp/full")],
        &serve.env(),
    );
    assert!(listed(&full).contains(&"everything__echo".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_profiles_budget_is_measured_live_and_by_check() {
    let tools = format!("{NARROW_TOOLS}, \"nothing_*\"");
    // A budget so small that every name of the server is cut to the same 7 characters.
    let text =
        config(&tools) + "\n[profiles.tiny]\nservers = [\"everything\"]\nmax_name_length = 16\n";
    let tiny_line = text
        .lines()
        .position(|line| line == "[profiles.tiny]")
        .expect("tiny")
        + 1;
    let mut serve = ServeProcess::with_config(&text, &["everything", "demo"]);
    // Ready servers are in the catalogs a moment later, when they are rebuilt.
    let budgets = eventually("narrow's tools are catalogued", EVENT_LIMIT, || async {
        let budgets = serve.api_get("/api/profiles").await;
        let names: Vec<&str> = budgets
            .as_array()
            .expect("profiles")
            .iter()
            .map(|budget| budget["profile"].as_str().expect("a name"))
            .collect();
        assert_eq!(names, ["default", "full", "narrow", "tiny"]);
        if budgets[2]["tools"] == 3 {
            Ok(budgets)
        } else {
            Err(budgets)
        }
    })
    .await;
    let narrow = &budgets[2];
    let bytes = narrow["bytes"].as_u64().expect("bytes");
    assert!(bytes > 200, "{narrow}");
    assert_eq!(narrow["tokens"].as_u64(), Some(bytes.div_ceil(4)));
    assert_eq!(narrow["servers"][0]["server"], "everything");
    assert_eq!(narrow["servers"][0]["bytes"].as_u64(), Some(bytes));
    let shortened = narrow["tool_costs"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|tool| tool["original"] == "get-annotated-message")
        .unwrap_or_else(|| panic!("{narrow}"));
    assert!(
        shortened["name"]
            .as_str()
            .is_some_and(|name| name.len() <= 20),
        "original and exposed names side by side: {shortened}"
    );
    assert_eq!(
        narrow["unmatched"],
        serde_json::json!([{"glob": "nothing_*", "line": 13, "column": 66}]),
        "{narrow}"
    );
    let default = &budgets[0];
    assert_eq!(default["profile"], "default");
    assert!(
        default["tools"].as_u64() > narrow["tools"].as_u64(),
        "{default}"
    );

    // check measures the same from the catalogs serve cached, without starting anything.
    serve.stop();
    let output = std::process::Command::new(switchboard_exe())
        .args(["check", "--config"])
        .arg(serve.config_path())
        .envs(serve.env())
        .output()
        .expect("check runs");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{report}");
    assert!(
        report.contains(&format!(
            "profile narrow (/mcp/narrow): 3 tools, {bytes} bytes, about {} tokens",
            bytes.div_ceil(4)
        )),
        "{report}"
    );
    assert!(
        report.contains(":13:66: warning: profiles.narrow: `nothing_*` matches no tool"),
        "{report}"
    );
    let place = format!(":{tiny_line}:11: warning: profiles.tiny: ");
    assert!(
        report.lines().any(|line| line.contains(&place)
            && line.contains(
                "tool names are cut to the same first characters and differ only in their hash \
                 (like `everyth_…`)"
            )),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_switch_edits_a_json_config_in_place_and_the_tool_leaves_the_profile() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("config.json");
    let original = format!(
        "{{\n  \"mcpServers\": {{\n    \"demo\": {{ \"command\": {demo:?}, \"args\": [\"demo-server\"] }}\n  }},\n  \
         \"globalShortcut\": \"Ctrl+Alt+Space\"\n}}\n",
        demo = switchboard_exe().to_string_lossy(),
    );
    std::fs::write(&config, &original).expect("write");
    let serve = ServeOptions::in_dir(dir.path(), &config)
        .ready(&["demo"])
        .start();
    let tools = |budgets: &Value| -> Vec<String> {
        budgets[0]["tool_costs"]
            .as_array()
            .expect("tool costs")
            .iter()
            .map(|tool| tool["name"].as_str().expect("a name").to_owned())
            .collect()
    };
    eventually("demo's tools are catalogued", EVENT_LIMIT, || async {
        let budgets = serve.api_get("/api/profiles").await;
        match tools(&budgets).contains(&"demo__echo".to_owned()) {
            true => Ok(()),
            false => Err(budgets),
        }
    })
    .await;

    let (status, answer) = serve
        .api_post_body(
            "/api/profiles/default/switch",
            r#"{"tool": "demo__echo", "on": false}"#,
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let before = original.strip_suffix("\n}\n").expect("the end of the file");
    assert_eq!(
        std::fs::read_to_string(&config).expect("read"),
        format!(
            "{before},\n  \"profiles\": {{\n    \"default\": {{\n      \
             \"exclude_tools\": [\"demo__echo\"]\n    }}\n  }}\n}}\n"
        ),
        "the file gains the profile; every other byte stays"
    );
    eventually("the tool leaves the profile", EVENT_LIMIT, || async {
        let budgets = serve.api_get("/api/profiles").await;
        let listed = tools(&budgets);
        match !listed.contains(&"demo__echo".to_owned()) && listed.contains(&"demo__add".to_owned())
        {
            true => Ok(()),
            false => Err(listed),
        }
    })
    .await;
}
