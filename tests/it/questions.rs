//! Servers' questions answered through Switchboard for an editor that cannot ask them, against a
//! real `serve` over real HTTP: the official Python SDK as an editor that declared no
//! elicitation, in the session era and in 2026-07-28, calls tools of a server on the official
//! TypeScript SDK that asks a form question and a URL question (`tests/backends/sdk_server.mjs`),
//! spoken to in either era. Each question is listed by `/api/questions` with what it is, and the
//! answer given there reaches the server; an answer that does not fit, or comes twice, is refused.
//! `ask = "editor"` and `ask = "never"` keep the person out of it.

use serde_json::{Value, json};

use crate::sdk_clients::run_python_client;
use crate::support::{
    EVENT_LIMIT, McpHttp, ServeProcess, ServedBackend, eventually, run_node_suite,
    sdk_server_script,
};
use crate::ui::{NODE_LIMIT, browser_suite};

/// Two entries of the TypeScript SDK's server: `old` spoken to in the session era, `new` in
/// 2026-07-28; and the same again with `ask` set.
fn config() -> String {
    let script = sdk_server_script().to_string_lossy().into_owned();
    let entry = |name: &str, protocol: &str, ask: &str| {
        format!(
            "[servers.{name}]\ncommand = \"node\"\nargs = [{script:?}]\nprotocol = \
             \"{protocol}\"\n{ask}\n"
        )
    };
    [
        entry("old", "session", ""),
        entry("new", "stateless", ""),
        entry("mute", "session", "ask = \"never\""),
        entry("edit", "stateless", "ask = \"editor\""),
    ]
    .concat()
}

/// The questions waiting, once there are `count`.
async fn waiting(serve: &ServeProcess, count: usize) -> Vec<Value> {
    eventually("questions waiting", EVENT_LIMIT, || async {
        let list = serve.api_get("/api/questions").await;
        let list = list.as_array().expect("a list").clone();
        match list.len() == count {
            true => Ok(list),
            false => Err(list),
        }
    })
    .await
}

async fn answer(serve: &ServeProcess, id: &Value, body: Value) -> (u16, Value) {
    serve
        .api_post_body(&format!("/api/questions/{id}"), &body.to_string())
        .await
}

/// Runs the Python client in `mode` over `serve`'s `/mcp` with `steps`, in a thread of its own;
/// its transcript comes when it ends.
fn python(
    serve: &ServeProcess,
    mode: &'static str,
    steps: String,
) -> tokio::task::JoinHandle<Value> {
    let url = serve.url();
    tokio::task::spawn_blocking(move || {
        let tool_args = [
            r#"confirm={"action":"deploy"}"#,
            r#"visit={"url":"https://accounts.example.com/sign-in?step=1"}"#,
        ];
        let mut args = vec!["--url".to_owned(), url, "--steps".to_owned(), steps];
        for server in ["old", "new", "mute", "edit"] {
            for tool in tool_args {
                args.push("--tool-args".to_owned());
                args.push(format!("{server}__{tool}"));
            }
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_python_client(mode, &args, &[])
    })
}

/// The text of step `n` of a transcript.
fn text(transcript: &Value, n: usize) -> String {
    let step = &transcript["steps"][n];
    assert_eq!(step["error"], Value::Null, "{transcript}");
    step["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_and_a_url_question_are_answered_through_switchboard_in_both_eras() {
    let serve = ServeProcess::with_config(&config(), &["old", "new"]);
    for mode in ["legacy", "2026-07-28"] {
        for server in ["old", "new"] {
            let case = format!("{mode} client, {server} server");
            let steps = format!("call:{server}__confirm,call:{server}__visit,call:{server}__visit");
            let client = python(&serve, mode, steps);

            // A form.
            let asked = waiting(&serve, 1).await[0].clone();
            assert_eq!(asked["server"], server, "{case}: {asked}");
            assert_eq!(
                asked["editors"],
                json!(["switchboard-test-py-client"]),
                "{case}"
            );
            assert_eq!(asked["profile"], "default", "{case}");
            assert_eq!(asked["message"], "Do deploy?", "{case}");
            assert_eq!(asked["mode"], "form", "{case}");
            assert_eq!(
                asked["schema"]["properties"]["ok"]["type"], "boolean",
                "{case}: {asked}"
            );
            assert_eq!(
                asked["deadline"].as_u64().expect("a deadline")
                    - asked["asked_at"].as_u64().expect("a time"),
                60_000,
                "the server's request_timeout"
            );
            let (status, refused) = answer(
                &serve,
                &asked["id"],
                json!({"action": "accept", "content": {"ok": "yes"}}),
            )
            .await;
            assert_eq!(status, 400, "{refused}");
            assert!(
                refused
                    .to_string()
                    .contains("\\\"ok\\\" is not of its type"),
                "{refused}"
            );
            let (status, _) = answer(&serve, &asked["id"], json!({"action": "accept"})).await;
            assert_eq!(status, 400, "accepting a form without its content");
            let (status, _) = answer(
                &serve,
                &asked["id"],
                json!({"action": "accept", "content": {"ok": true}}),
            )
            .await;
            assert_eq!(status, 200, "{case}");
            let (status, _) = answer(&serve, &asked["id"], json!({"action": "decline"})).await;
            assert_eq!(status, 404, "answered twice");

            // A URL to open, accepted; then again, declined.
            for action in ["accept", "decline"] {
                let asked = waiting(&serve, 1).await[0].clone();
                assert_eq!(asked["mode"], "url", "{case}: {asked}");
                assert_eq!(asked["message"], "Sign in to the fixture's account");
                assert_eq!(asked["url"], "https://accounts.example.com/sign-in?step=1");
                assert_eq!(asked["host"], "accounts.example.com");
                assert_eq!(asked["warning"], Value::Null, "https, and a local server");
                let (status, _) = answer(
                    &serve,
                    &asked["id"],
                    json!({"action": action, "content": {"ok": true}}),
                )
                .await;
                assert_eq!(status, 400, "a URL question takes no content");
                let (status, _) = answer(&serve, &asked["id"], json!({"action": action})).await;
                assert_eq!(status, 200, "{case}");
            }

            let transcript = client.await.expect("the client");
            assert_eq!(transcript["error"], Value::Null, "{case}: {transcript}");
            assert!(
                text(&transcript, 0).contains("confirmed deploy"),
                "{case}: {transcript}"
            );
            assert_eq!(text(&transcript, 1), "visit: accept", "{case}");
            assert_eq!(text(&transcript, 2), "visit: decline", "{case}");
            assert_eq!(serve.api_get("/api/questions").await, json!([]));
        }
    }

    // Bad answers.
    let (status, _) = answer(&serve, &json!(999), json!({"action": "cancel"})).await;
    assert_eq!(status, 404);
    let (status, refused) = answer(&serve, &json!(1), json!({"action": "maybe"})).await;
    assert_eq!(status, 400, "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_editor_and_ask_never_keep_the_person_out_of_it() {
    let serve = ServeProcess::with_config(&config(), &["mute", "edit"]);
    for mode in ["legacy", "2026-07-28"] {
        let steps = "call:mute__confirm,call:edit__confirm".to_owned();
        let transcript = python(&serve, mode, steps).await.expect("the client");
        assert_eq!(transcript["error"], Value::Null, "{transcript}");
        // `never`: the server was told at its start that nobody takes its questions.
        let muted = &transcript["steps"][0];
        assert_eq!(muted["isError"], true, "{mode}: {muted}");
        assert!(
            muted
                .to_string()
                .contains("did not declare the required capability"),
            "{mode}: {muted}"
        );
        // `editor`: the server is told what the editor declared, which is no elicitation.
        let edited = &transcript["steps"][1];
        assert_eq!(edited["error"]["code"], -32021, "{mode}: {edited}");
        assert_eq!(
            serve.api_get("/api/questions").await,
            json!([]),
            "never shown to the person"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_leaves_the_list_when_its_editor_gives_up_the_call() {
    let serve = ServeProcess::with_config(&config(), &["old", "new"]);
    let mcp = McpHttp::new(&serve.url());
    let session = mcp
        .open_session("impatient editor")
        .await
        .expect("a session");
    for (id, tool) in [(2, "old__confirm"), (3, "new__confirm")] {
        let call = {
            let (mcp, session) = (mcp.clone(), session.clone());
            tokio::spawn(async move {
                mcp.call_tool(&session, id, tool, json!({"action": "wait"}))
                    .await
            })
        };
        let asked = waiting(&serve, 1).await[0].clone();
        assert_eq!(asked["editors"], json!(["impatient editor"]));
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}});
        mcp.post(Some(&session), cancel.to_string())
            .await
            .expect("the cancellation is taken");
        waiting(&serve, 0).await;
        let (status, _) = answer(
            &serve,
            &asked["id"],
            json!({"action": "accept", "content": {"ok": true}}),
        )
        .await;
        assert_eq!(status, 404, "{tool}: answered after its call ended");
        call.abort();
    }
}

/// Two editors call at once and one of their calls asks (server-everything, a local server,
/// whose request names no call): the question names that editor when the other's call is at
/// another server; when both calls are at the asking server, nothing tells which one asks, and
/// the question names both editors rather than none or a guess.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_names_the_editor_whose_call_asks_while_another_editor_calls() {
    let serve = ServeProcess::start(&[ServedBackend::Everything, ServedBackend::Misbehave]);
    let mcp = McpHttp::new(&serve.url());
    let busy = mcp.open_session("busy editor").await.expect("a session");
    let asking = mcp.open_session("asking editor").await.expect("a session");
    let rounds = [
        (
            "mis",
            "mis__slow",
            json!({"ms": 30_000}),
            json!(["asking editor"]),
        ),
        (
            "everything",
            "everything__trigger-long-running-operation",
            json!({"duration": 30, "steps": 2}),
            json!(["asking editor", "busy editor"]),
        ),
    ];
    for (id, (server, tool, arguments, named)) in (10..).zip(rounds) {
        let busy_call = {
            let (mcp, busy) = (mcp.clone(), busy.clone());
            tokio::spawn(async move { mcp.call_tool(&busy, id, tool, arguments).await })
        };
        eventually("the busy editor's call in flight", EVENT_LIMIT, || async {
            let backends = serve.api_get("/api/backends").await;
            let pending = backends
                .as_array()
                .and_then(|list| list.iter().find(|backend| backend["name"] == server))
                .map(|backend| backend["pending"].clone());
            match pending.as_ref().and_then(Value::as_u64) {
                Some(1..) => Ok(()),
                _ => Err(backends),
            }
        })
        .await;
        let asking_call = {
            let (mcp, asking) = (mcp.clone(), asking.clone());
            tokio::spawn(async move {
                mcp.call_tool(
                    &asking,
                    id,
                    "everything__trigger-elicitation-request",
                    json!({}),
                )
                .await
            })
        };
        let asked = waiting(&serve, 1).await[0].clone();
        assert_eq!(asked["server"], "everything", "{tool}: {asked}");
        assert_eq!(asked["editors"], named, "{tool}: {asked}");
        assert_eq!(asked["profile"], "default", "{tool}");
        let (status, _) = answer(&serve, &asked["id"], json!({"action": "decline"})).await;
        assert_eq!(status, 200, "{tool}");
        let result = asking_call.await.expect("the asking call");
        assert!(result.to_string().contains("decline"), "{tool}: {result}");
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}});
        mcp.post(Some(&busy), cancel.to_string())
            .await
            .expect("the cancellation is taken");
        busy_call.abort();
    }
}

#[test]
fn the_dashboard_answers_a_servers_questions_in_a_real_browser() {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let mut node = browser_suite("questions.test.mjs", &serve);
    node.env("SWITCHBOARD_MCP_URL", serve.url());
    run_node_suite(node, NODE_LIMIT, &|| serve.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_a_call_requires_first_is_opened_through_switchboard_and_the_call_made_again() {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let mcp = McpHttp::new(&serve.url());
    let session = mcp.open_session("desktop editor").await.expect("a session");
    let call = {
        let (mcp, session) = (mcp.clone(), session.clone());
        tokio::spawn(async move {
            let arguments = json!({"url": "https://accounts.example.com/link", "errorPath": true});
            mcp.call_tool(
                &session,
                2,
                "everything__trigger-url-elicitation",
                arguments,
            )
            .await
        })
    };
    // The server fails the call with "URL elicitation required" (-32042): the page is put to
    // the person, and once they accept, the call is made again, which asks for it as a request.
    let mut answered = Value::Null;
    for (round, url) in [
        ("the error's page", "https://modelcontextprotocol.io/"),
        ("the retry's request", "https://accounts.example.com/link"),
    ] {
        let asked = eventually("the next question", EVENT_LIMIT, || async {
            let list = serve.api_get("/api/questions").await;
            match list.get(0) {
                Some(asked) if asked["id"] != answered => Ok(asked.clone()),
                _ => Err(list),
            }
        })
        .await;
        assert_eq!(asked["mode"], "url", "{round}: {asked}");
        assert_eq!(asked["url"], url, "{round}");
        assert_eq!(asked["editors"], json!(["desktop editor"]), "{round}");
        let (status, _) = answer(&serve, &asked["id"], json!({"action": "accept"})).await;
        assert_eq!(status, 200, "{round}");
        answered = asked["id"].clone();
    }
    let result = call.await.expect("the call");
    assert_ne!(result["isError"], true, "{result}");
    assert!(result.to_string().contains("accept"), "{result}");
}
