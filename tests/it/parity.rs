//! Through Switchboard as direct: the official Python SDK (`tests/clients/py_client.py`) runs the
//! same steps over every feature of the real server-everything once directly over stdio and
//! then through Switchboard, in each of its modes (session era, probe then fall back, 2026-07-28
//! only), over `/mcp` and over `switchboard connect`. Each step must give what it gave directly:
//! the same content (text, images, annotations, resource links, structured output, errors), the
//! same progress, and the same questions of the server (form and URL elicitation, sampling),
//! whose answers reach the server.

use serde_json::Value;

use crate::sdk_clients::{python_connect_target, run_python_client};
use crate::support::*;

/// The steps, with `{p}` where Switchboard puts the server's prefix, and the arguments of the
/// tools and prompts they use.
const STEPS: &[&str] = &[
    "list",
    "call:{p}echo",
    "call:{p}get-sum",
    "call:{p}get-structured-content",
    "call:{p}get-tiny-image",
    "call:{p}get-annotated-message",
    "call:{p}get-resource-reference",
    "call:{p}get-resource-links",
    "read:demo://resource/dynamic/text/2",
    "read:demo://resource/static/document/architecture.md",
    "call:{p}trigger-long-running-operation",
    "call:{p}trigger-elicitation-request",
    "call:{p}trigger-url-elicitation",
    "call:{p}trigger-sampling-request",
    "call:{p}get-roots-list",
    "call:{p}simulate-research-query",
    "resources",
    "templates",
    "prompts",
    "prompt:{p}simple-prompt",
    "prompt:{p}args-prompt",
    "prompt:{p}resource-prompt",
    "complete:{p}completable-prompt:department:En",
    "call:{p}no-such-tool",
];

const TOOL_ARGS: &[(&str, &str)] = &[
    ("echo", r#"{"message":"the same either way"}"#),
    ("get-sum", r#"{"a":19,"b":23}"#),
    ("get-structured-content", r#"{"location":"Chicago"}"#),
    (
        "get-annotated-message",
        r#"{"messageType":"error","includeImage":true}"#,
    ),
    (
        "get-resource-reference",
        r#"{"resourceType":"Text","resourceId":4}"#,
    ),
    ("get-resource-links", r#"{"count":3}"#),
    (
        "trigger-long-running-operation",
        r#"{"duration":1,"steps":4}"#,
    ),
    (
        "trigger-url-elicitation",
        r#"{"url":"https://example.com/consent","elicitationId":"consent-1"}"#,
    ),
    (
        "trigger-sampling-request",
        r#"{"prompt":"hi","maxTokens":5}"#,
    ),
    (
        "simulate-research-query",
        r#"{"topic":"tides","ambiguous":true}"#,
    ),
];

const PROMPT_ARGS: &[(&str, &str)] = &[
    ("args-prompt", r#"{"city":"Lyon","state":"Rhone"}"#),
    (
        "resource-prompt",
        r#"{"resourceType":"Text","resourceId":"2"}"#,
    ),
];

/// The driver's arguments for the steps, with names carrying `prefix`.
fn arguments(prefix: &str) -> Vec<String> {
    let named = |pairs: &[(&str, &str)], flag: &str| -> Vec<String> {
        pairs
            .iter()
            .flat_map(|(name, json)| [flag.to_owned(), format!("{prefix}{name}={json}")])
            .collect()
    };
    let mut arguments = vec!["--steps".to_owned(), STEPS.join(",").replace("{p}", prefix)];
    arguments.extend(named(TOOL_ARGS, "--tool-args"));
    arguments.extend(named(PROMPT_ARGS, "--prompt-args"));
    arguments.extend(
        [
            "--elicit",
            r#"{"name":"Ada Lovelace","check":true}"#,
            "--sample",
            "the model's words",
            "--roots",
            "file:///work/alpha,file:///work/beta",
        ]
        .map(str::to_owned),
    );
    arguments
}

/// `text` with every clock time (`12:02:56`, `1:02:56`) replaced by `h:mm:ss`: server-everything
/// stamps dynamic resources with the time they were read.
fn without_clock_times(text: &str) -> String {
    let bytes = text.as_bytes();
    let digits_from = |at: usize| {
        bytes[at..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let starts_number = bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_digit());
        if starts_number {
            let hours = digits_from(i);
            let rest = i + hours;
            let minutes_and_seconds = bytes.get(rest) == Some(&b':')
                && digits_from(rest + 1) == 2
                && bytes.get(rest + 3) == Some(&b':')
                && digits_from(rest + 4) == 2;
            if minutes_and_seconds {
                out.push_str(&text[copied..i]);
                out.push_str("h:mm:ss");
                i = rest + 6;
                copied = i;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    out
}

/// What a step gave that must be the same either way: everything but the server's log messages
/// (which follow the connection: direct, server-everything logs the roots it got at connect) and
/// with the prefix and clock times taken out.
fn comparable(transcript: &Value, prefix: &str) -> Vec<Value> {
    assert_eq!(transcript["error"], Value::Null, "{transcript}");
    let steps = transcript["steps"].as_array().expect("steps");
    steps
        .iter()
        .map(|step| {
            let mut step = step.clone();
            step.as_object_mut().expect("a step").remove("logs");
            let text = without_clock_times(&step.to_string()).replace(prefix, "");
            serde_json::from_str(&text).expect("still JSON")
        })
        .collect()
}

#[test]
fn every_feature_of_server_everything_behaves_through_switchboard_as_it_does_direct() {
    let everything = everything_server();
    let mut direct_args = arguments("");
    direct_args.extend(
        [
            "--command",
            "node",
            "--args",
            everything.to_str().expect("a UTF-8 path"),
            "stdio",
        ]
        .map(str::to_owned),
    );
    let direct_args: Vec<&str> = direct_args.iter().map(String::as_str).collect();
    let direct = run_python_client("legacy", &direct_args, &[]);
    let expected = comparable(&direct, "everything__");
    // The direct run itself did what the steps ask, so that equality below means something.
    let step = |name: &str| {
        expected
            .iter()
            .find(|step| step["step"] == name)
            .unwrap_or_else(|| panic!("no step {name}"))
    };
    assert_eq!(
        step("call:echo")["content"][0]["text"],
        "Echo: the same either way"
    );
    assert_eq!(
        step("call:get-structured-content")["structuredContent"]["temperature"],
        36
    );
    assert_eq!(step("call:get-tiny-image")["content"][1]["type"], "image");
    assert_eq!(
        step("call:get-resource-links")["content"][1]["type"],
        "resource_link"
    );
    assert_eq!(
        step("call:trigger-long-running-operation")["progress"]
            .as_array()
            .map(Vec::len),
        Some(4)
    );
    assert_eq!(
        step("call:trigger-url-elicitation")["elicitations"][0]["mode"],
        "url"
    );
    assert!(
        step("call:get-roots-list")
            .to_string()
            .contains("file:///work/beta")
    );
    assert_eq!(
        step("call:no-such-tool")["isError"],
        true,
        "{}",
        step("call:no-such-tool")
    );
    for step in &expected {
        if !["call:no-such-tool", "call:simulate-research-query"]
            .contains(&step["step"].as_str().expect("a step name"))
        {
            assert_eq!(step["error"], Value::Null, "{step}");
        }
    }

    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let through_args = arguments("everything__");
    let url = serve.url();
    let over_http = ["--url", url.as_str()];
    let connect_target = python_connect_target(&serve);
    let over_connect: Vec<&str> = connect_target.iter().map(String::as_str).collect();
    for (transport, target) in [("/mcp", &over_http[..]), ("connect", &over_connect[..])] {
        for (mode, era) in [
            ("legacy", "legacy"),
            ("auto", "modern"),
            ("2026-07-28", "modern"),
        ] {
            let mut args: Vec<&str> = through_args.iter().map(String::as_str).collect();
            args.extend(target);
            let through = run_python_client(mode, &args, &serve.env());
            assert_eq!(through["era"], era, "{mode} over {transport}: {through}");
            let got = comparable(&through, "everything__");
            assert_eq!(got.len(), expected.len(), "{mode} over {transport}");
            for (got, expected) in got.iter().zip(&expected) {
                if expected["step"] == "call:simulate-research-query" {
                    // The one difference, and on purpose: server-everything runs this tool only
                    // as a task, which the SDK's client does not hold, so directly it fails;
                    // Switchboard holds the task for it, and the server's question reaches it.
                    assert!(
                        expected["content"][0]["text"]
                            .as_str()
                            .is_some_and(|text| text.contains("requires task augmentation")),
                        "{expected}"
                    );
                    assert!(
                        got["content"][0]["text"].as_str().is_some_and(|text| {
                            text.starts_with("# Research Report: tides (User accepted")
                        }),
                        "{mode} over {transport}: {got}"
                    );
                    assert_eq!(got["elicitations"].as_array().map(Vec::len), Some(1));
                    continue;
                }
                if expected["step"] == "call:no-such-tool" {
                    // Directly the SDK server answers an unknown tool with a tool error;
                    // Switchboard, which knows every tool the server offers, answers as the spec
                    // says, with -32602.
                    assert_eq!(expected["isError"], true, "{expected}");
                    assert_eq!(
                        got["error"]["code"], -32602,
                        "{mode} over {transport}: {got}"
                    );
                    continue;
                }
                if expected["step"] == "list" {
                    // Switchboard tells the server it can run sampling and elicitation as tasks,
                    // so the server also offers its two task-based tools; every other tool is
                    // listed, in the same order.
                    let tools = got["tools"].as_array().expect("tools");
                    let extra = [
                        "trigger-sampling-request-async",
                        "trigger-elicitation-request-async",
                    ];
                    let common: Vec<&Value> = tools
                        .iter()
                        .filter(|tool| !extra.contains(&tool.as_str().expect("a name")))
                        .collect();
                    let direct: Vec<&Value> = expected["tools"]
                        .as_array()
                        .expect("tools")
                        .iter()
                        .collect();
                    assert_eq!(common, direct, "{mode} over {transport}");
                    continue;
                }
                assert_eq!(got, expected, "{mode} over {transport}");
            }
        }
    }
}
