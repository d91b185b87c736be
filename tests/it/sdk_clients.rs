//! The official MCP SDKs of 2026 as editors: Python (`mcp` 2.x, `tests/clients/py_client.py`) and
//! TypeScript (`@modelcontextprotocol/client` 2.x, `tests/clients/ts_client.mjs`), each in each
//! of its modes (session era only, probe then fall back, 2026-07-28 only), over `/mcp` and over
//! `switchboard connect`, with the real server-everything behind Switchboard: the era each mode
//! ends up in, and tools, elicitation, sampling, prompts, completion and resources in that era.

use std::process::Command;

use serde_json::Value;

use crate::support::*;

/// The steps every run takes, and what answers the server's questions.
const STEPS: &[&str] = &[
    "--steps",
    "list,call:everything__echo,call:everything__trigger-elicitation-request,\
     call:everything__trigger-sampling-request,prompt:everything__simple-prompt,\
     complete:everything__completable-prompt:department:En,resources,\
     call:everything__simulate-research-query",
    "--tool-args",
    r#"everything__echo={"message":"from python"}"#,
    "--tool-args",
    r#"everything__simulate-research-query={"topic":"python","ambiguous":true}"#,
    "--tool-args",
    r#"everything__trigger-sampling-request={"prompt":"hi","maxTokens":5}"#,
    "--elicit",
    r#"{"name":"Ada Lovelace","check":true}"#,
    "--sample",
    "hello from the model",
];

/// Runs the driver in `mode` with the steps every run takes, `args` and its environment `env`;
/// returns its transcript.
fn run_client(mode: &str, args: &[&str], env: &[(&str, std::path::PathBuf)]) -> Value {
    let args: Vec<&str> = STEPS.iter().chain(args).copied().collect();
    run_python_client(mode, &args, env)
}

/// Runs the Python driver in `mode` with `args` and its environment `env`; returns its
/// transcript.
pub(crate) fn run_python_client(
    mode: &str,
    args: &[&str],
    env: &[(&str, std::path::PathBuf)],
) -> Value {
    let output = Command::new(python())
        .arg(
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients/py_client.py"),
        )
        .args(["--mode", mode])
        .args(args)
        .envs(env.iter().map(|(name, value)| (*name, value)))
        .output()
        .expect("the Python client runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|error| {
        panic!(
            "no transcript ({error}): {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// Checks one transcript: the era, then every step.
fn check(transcript: &Value, era: &str) {
    assert_eq!(transcript["error"], Value::Null, "{transcript}");
    assert_eq!(transcript["era"], era, "{transcript}");
    let step = |name: &str| -> &Value {
        let found = transcript["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .find(|step| {
                step["step"]
                    .as_str()
                    .is_some_and(|step| step.starts_with(name))
            })
            .unwrap_or_else(|| panic!("no step {name}: {transcript}"));
        assert_eq!(found["error"], Value::Null, "{name}: {found}");
        found
    };
    let tools = step("list")["tools"].as_array().expect("tools");
    assert!(
        tools.contains(&Value::from("everything__echo")),
        "{tools:?}"
    );
    assert_eq!(
        step("call:everything__echo")["content"][0]["text"],
        "Echo: from python"
    );
    let elicited = step("call:everything__trigger-elicitation");
    assert_eq!(
        elicited["elicitations"].as_array().map(Vec::len),
        Some(1),
        "{elicited}"
    );
    assert!(
        elicited["content"].to_string().contains("Ada Lovelace"),
        "{elicited}"
    );
    let sampled = step("call:everything__trigger-sampling");
    assert_eq!(
        sampled["samplings"].as_array().map(Vec::len),
        Some(1),
        "{sampled}"
    );
    assert!(
        sampled["content"]
            .to_string()
            .contains("hello from the model"),
        "{sampled}"
    );
    assert!(
        !step("prompt:")["messages"]
            .as_array()
            .expect("messages")
            .is_empty()
    );
    assert_eq!(
        step("complete:")["values"],
        serde_json::json!(["Engineering"])
    );
    assert!(
        !step("resources")["resources"]
            .as_array()
            .expect("resources")
            .is_empty()
    );
    // A tool that runs only as a task, for a client that holds none: Switchboard holds it, and
    // the question the server asks during the task reaches the client.
    let researched = step("call:everything__simulate-research-query");
    assert_eq!(
        researched["elicitations"].as_array().map(Vec::len),
        Some(1),
        "{researched}"
    );
    assert!(
        researched["content"]
            .to_string()
            .contains("Research Report: python (User accepted without selection)"),
        "{researched}"
    );
}

#[test]
fn the_python_sdk_in_each_mode_over_http() {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let url = serve.url();
    for (mode, era) in [
        ("legacy", "legacy"),
        ("auto", "modern"),
        ("2026-07-28", "modern"),
    ] {
        let transcript = run_client(mode, &["--url", &url], &[]);
        check(&transcript, era);
    }
}

/// The Python driver's arguments that make it launch `switchboard connect` for `serve`.
pub(crate) fn python_connect_target(serve: &ServeProcess) -> Vec<String> {
    let exe = switchboard_exe();
    let config = serve.config_path();
    [
        "--command",
        exe.to_str().expect("a UTF-8 path"),
        "--args",
        "connect",
        "--config",
        config.to_str().expect("a UTF-8 path"),
    ]
    .map(str::to_owned)
    .to_vec()
}

#[test]
fn the_python_sdk_in_each_mode_over_connect() {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let target = python_connect_target(&serve);
    let args: Vec<&str> = target.iter().map(String::as_str).collect();
    for (mode, era) in [
        ("legacy", "legacy"),
        ("auto", "modern"),
        ("2026-07-28", "modern"),
    ] {
        let transcript = run_client(mode, &args, &serve.env());
        check(&transcript, era);
    }
}

/// Runs the TypeScript driver in `mode` against `target`; returns its transcript.
pub(crate) fn run_ts_client(
    mode: &str,
    target: &[&str],
    env: &[(&str, std::path::PathBuf)],
) -> Value {
    let output = Command::new("node")
        .arg(
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("tests/clients/ts_client.mjs"),
        )
        .arg(mode)
        .args(target)
        .envs(env.iter().map(|(name, value)| (*name, value)))
        .output()
        .expect("the TypeScript client runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|error| {
        panic!(
            "no transcript ({error}): {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

#[test]
fn the_typescript_sdk_in_each_mode_over_http_and_connect() {
    node_module("@modelcontextprotocol/client");
    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let url = serve.url();
    let exe = switchboard_exe();
    let config = serve.config_path();
    let over_connect = [
        "--command",
        exe.to_str().expect("a UTF-8 path"),
        "connect",
        "--config",
        config.to_str().expect("a UTF-8 path"),
    ];
    let targets: [&[&str]; 2] = [&["--url", &url], &over_connect];
    for target in targets {
        for (mode, version) in [
            ("legacy", "2025-11-25"),
            ("auto", "2026-07-28"),
            ("modern", "2026-07-28"),
        ] {
            let transcript = run_ts_client(mode, target, &serve.env());
            assert_eq!(transcript["error"], Value::Null, "{transcript}");
            assert_eq!(transcript["protocolVersion"], version, "{transcript}");
            let steps = transcript["steps"].as_array().expect("steps");
            for step in steps {
                assert_eq!(step["error"], Value::Null, "{step}");
            }
            assert!(
                steps[0]["tools"]
                    .as_array()
                    .expect("tools")
                    .contains(&Value::from("everything__echo"))
            );
            assert_eq!(steps[1]["content"][0]["text"], "Echo: from typescript");
            assert_eq!(steps[2]["elicitations"], 1, "{}", steps[2]);
            assert!(
                steps[2]["content"].to_string().contains("Grace Hopper"),
                "{}",
                steps[2]
            );
            assert_eq!(steps[3]["samplings"], 1, "{}", steps[3]);
            assert!(
                steps[3]["content"]
                    .to_string()
                    .contains("hello from the model"),
                "{}",
                steps[3]
            );
        }
    }
}

/// A backend on the official Python SDK (`tests/backends/sdk_server.py`), spoken to in the era
/// `protocol` names (`auto` finds the session era: the SDK serves `initialize` in full).
fn python_backend(name: &str, protocol: &str) -> String {
    format!(
        "[servers.{name}]\ncommand = {python:?}\nargs = [{script:?}]\nprotocol = {protocol:?}\n\n",
        python = python().to_string_lossy(),
        script = backend_script("sdk_server.py").to_string_lossy(),
    )
}

#[test]
fn a_python_sdk_server_of_either_era_serves_python_clients_of_either_era() {
    let config = python_backend("py", "auto") + &python_backend("pymodern", "modern");
    let serve = ServeProcess::with_config(&config, &["py", "pymodern"]);
    let url = serve.url();
    let steps = |server: &str| {
        format!(
            "call:{server}__echo,call:{server}__add,call:{server}__ask_name,call:{server}__ask_llm,\
             call:{server}__work,prompt:{server}__greet,complete:{server}__greet:name:a"
        )
    };
    for (server, era) in [("py", "legacy"), ("pymodern", "modern")] {
        for mode in ["legacy", "2026-07-28"] {
            let tool_args = [
                format!(r#"{server}__echo={{"text":"hi"}}"#),
                format!(r#"{server}__add={{"a":2,"b":3}}"#),
                format!(r#"{server}__ask_llm={{"prompt":"hi"}}"#),
                format!(r#"{server}__work={{"steps":3}}"#),
            ];
            let prompt_args = format!(r#"{server}__greet={{"name":"bob"}}"#);
            let mut args = vec!["--mode", mode, "--url", &url, "--steps"];
            let steps = steps(server);
            args.push(&steps);
            for tool_args in &tool_args {
                args.extend(["--tool-args", tool_args]);
            }
            args.extend(["--prompt-args", &prompt_args]);
            args.extend([
                "--elicit",
                r#"{"name":"Ada","age":36}"#,
                "--sample",
                "a model's words",
            ]);
            args.extend(["--log-level", "info"]);
            let output = Command::new(python())
                .arg(backend_script("../clients/py_client.py"))
                .args(&args)
                .output()
                .expect("the Python client runs");
            let transcript: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
                panic!("no transcript: {}", String::from_utf8_lossy(&output.stderr))
            });
            let context = format!("{server} ({era}) for a {mode} client: {transcript}");
            assert_eq!(transcript["error"], Value::Null, "{context}");
            let steps = transcript["steps"].as_array().expect("steps");
            for step in steps {
                assert_eq!(step["error"], Value::Null, "{context}");
            }
            assert_eq!(steps[0]["content"][0]["text"], "hi", "{context}");
            assert_eq!(steps[1]["structuredContent"]["sum"], 5, "{context}");
            assert_eq!(steps[2]["content"][0]["text"], "hello Ada, 36", "{context}");
            assert_eq!(
                steps[2]["elicitations"].as_array().map(Vec::len),
                Some(1),
                "{context}"
            );
            assert_eq!(
                steps[3]["content"][0]["text"], "sampled: a model's words",
                "{context}"
            );
            assert_eq!(steps[4]["content"][0]["text"], "done 3", "{context}");
            assert_eq!(
                steps[4]["progress"].as_array().map(Vec::len),
                Some(3),
                "{context}"
            );
            assert!(
                steps[5]["messages"]
                    .to_string()
                    .contains("Say hello to bob."),
                "{context}"
            );
            assert_eq!(
                steps[6]["values"],
                serde_json::json!(["alice"]),
                "{context}"
            );
        }
    }
}
