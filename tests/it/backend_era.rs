//! Backends of both protocol eras, on the official TypeScript SDK (`tests/backends/sdk_server.mjs`)
//! and Python SDK (`tests/backends/sdk_server.py`): a server of the stateless era only is found so and
//! spoken to with the `_meta` envelope, a server of both eras is spoken to in the session era, and
//! editors of the session era use either alike, its log messages included.

use config::Protocol;
use serde_json::{Value, json};
use supervisor::BackendHandle;
use supervisor::status::BackendState;
use wire::era::Era;
use wire::method::Method;

use crate::support::*;

async fn tool_names(mcp: &McpHttp, session: &str, id: u64) -> Vec<String> {
    sorted_tool_names(&mcp.result(session, id, "tools/list", json!({})).await)
}

/// The methods of the requests the backend's processes reported receiving, up to the last list
/// of its `n`-th handshake (`prompts/list`), without the listen requests, which come whenever
/// a stateless-era backend is ready.
async fn requests_through_handshake(backend: &BackendHandle, n: usize) -> Vec<String> {
    eventually("the handshakes' requests", EVENT_LIMIT, || async {
        let methods: Vec<String> = backend
            .output()
            .tail(usize::MAX)
            .iter()
            .filter_map(|line| line.text.strip_prefix("got "))
            .filter(|method| *method != "subscriptions/listen")
            .map(str::to_owned)
            .collect();
        let ends = methods
            .iter()
            .enumerate()
            .filter(|(_, method)| *method == "prompts/list")
            .map(|(index, _)| index)
            .nth(n - 1);
        match ends {
            Some(end) => Ok(methods[..=end].to_vec()),
            None => Err(methods),
        }
    })
    .await
}

const LISTS: [&str; 4] = [
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
];

#[tokio::test]
async fn a_stateless_only_server_is_ready_in_the_stateless_era_and_callable_by_a_session_era_editor()
 {
    let serve = ServeProcess::start(&[ServedBackend::SdkModernOnly]);

    let modern = serve.backend_summary("modern").await;
    assert_eq!(modern["state"], "ready");
    assert_eq!(modern["era"], "stateless");
    assert_eq!(modern["protocol_version"], "2026-07-28");
    assert_eq!(modern["restarts"], 0);
    assert_eq!(modern["last_exit"], Value::Null);
    assert_eq!(modern["tools"], 5);
    let detail = serve.api_get("/api/backends/modern").await;
    assert_eq!(
        detail["server"]["server_info"],
        json!({ "name": "sdk-fixture", "version": "1.0.0" })
    );
    assert_eq!(
        detail["server"]["instructions"],
        "A test server on the official TypeScript SDK."
    );
    assert_eq!(detail["resources"][0]["uri"], "sdk://greeting");
    assert_eq!(detail["prompts"][0]["name"], "hello");

    let mcp = McpHttp::new(&serve.url());
    let session = mcp
        .open_session("session-era-editor")
        .await
        .expect("a session");
    assert_eq!(
        tool_names(&mcp, &session, 1).await,
        [
            "modern__add_tool",
            "modern__confirm",
            "modern__echo",
            "modern__touch",
            "modern__visit"
        ]
    );
    let echoed = mcp
        .call_tool(
            &session,
            2,
            "modern__echo",
            json!({ "text": "across eras" }),
        )
        .await;
    assert_eq!(
        echoed["content"],
        json!([{ "type": "text", "text": "across eras" }])
    );
    assert_eq!(echoed["resultType"], "complete");
}

#[tokio::test]
async fn a_server_of_both_eras_is_spoken_to_in_the_session_era() {
    let mut config = sdk_server("both", &[]);
    config.health_interval = None;
    let engine = engine(vec![config]);
    let backend = engine.backend("both").expect("configured");
    let status = wait_state(&backend, BackendState::Ready).await;
    let server = status.server.expect("a handshake");
    assert_eq!(server.era, Era::Session);
    assert_eq!(server.protocol_version, "2025-11-25");
    assert_eq!(
        requests_through_handshake(&backend, 1).await,
        [&["initialize"][..], &LISTS].concat()
    );

    let echoed = backend
        .request(
            &Method::ToolsCall,
            Some(&call_params("echo", json!({ "text": "hi" }))),
        )
        .await
        .expect("an answer");
    assert_eq!(
        json(&echoed),
        json!({ "content": [{ "type": "text", "text": "hi" }] })
    );
    engine.shutdown().await;
}

/// A session-era editor of `serve`: its client, session and stream of server messages.
async fn session_era_editor(serve: &ServeProcess) -> (McpHttp, String, McpStream) {
    let mcp = McpHttp::new(&serve.url());
    let session = mcp
        .open_session("session-era-editor")
        .await
        .expect("a session");
    let stream = mcp.stream(&session).await.expect("a stream");
    (mcp, session, stream)
}

#[tokio::test]
async fn a_tool_added_on_a_modern_server_reaches_editors_through_its_listen_stream() {
    let serve = ServeProcess::start(&[ServedBackend::SdkModernOnly]);
    let (mcp, session, mut stream) = session_era_editor(&serve).await;
    assert_eq!(
        tool_names(&mcp, &session, 1).await,
        [
            "modern__add_tool",
            "modern__confirm",
            "modern__echo",
            "modern__touch",
            "modern__visit"
        ]
    );

    let added = mcp
        .call_tool(&session, 2, "modern__add_tool", json!({}))
        .await;
    assert_eq!(added["content"][0]["text"], "added extra");
    // A server that has pins has a new tool approved before editors see it.
    serve.approve_when_held("modern", "extra").await;

    // The session may also have been told of the catalog built as it opened; the list that
    // follows the last notification has the new tool.
    for id in 3.. {
        let message = tokio::time::timeout(EVENT_LIMIT, stream.next_message())
            .await
            .expect("a message in time")
            .expect("a message");
        if message["method"] != "notifications/tools/list_changed" {
            continue;
        }
        assert_eq!(
            message,
            json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" })
        );
        let names = tool_names(&mcp, &session, id).await;
        if names.iter().any(|name| name == "modern__extra") {
            assert_eq!(
                names,
                [
                    "modern__add_tool",
                    "modern__confirm",
                    "modern__echo",
                    "modern__extra",
                    "modern__touch",
                    "modern__visit"
                ]
            );
            return;
        }
    }
}

/// The resources the last `subscriptions/listen` the backend `name` of `serve` received
/// names, once it names `expected`.
pub(crate) async fn listened_for(serve: &ServeProcess, name: &str, expected: &str) {
    eventually("the backend's listen", EVENT_LIMIT, || async {
        let last = serve.last_output(name, "listens for resources:").await;
        match last {
            Some(resources) if resources == expected => Ok(()),
            _ => Err(last),
        }
    })
    .await;
}

#[tokio::test]
async fn a_session_era_editor_subscribes_to_a_modern_servers_resource_over_its_listen() {
    let serve = ServeProcess::start(&[ServedBackend::SdkModernOnly]);
    let (mcp, session, mut stream) = session_era_editor(&serve).await;
    let greeting = json!({ "uri": "sdk://greeting" });

    let subscribed = mcp
        .result(&session, 1, "resources/subscribe", greeting.clone())
        .await;
    assert_eq!(subscribed, json!({}));
    listened_for(&serve, "modern", "sdk://greeting").await;
    let touched = mcp.call_tool(&session, 2, "modern__touch", json!({})).await;
    assert_eq!(first_text(&touched), "touched");
    let update = loop {
        let message = tokio::time::timeout(EVENT_LIMIT, stream.next_message())
            .await
            .expect("a message in time")
            .expect("a message");
        if message["method"] == "notifications/resources/updated" {
            break message;
        }
    };
    // The update names the resource, and not the listen it came on, which is Switchboard's.
    assert_eq!(
        update,
        json!({
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": { "uri": "sdk://greeting" },
        })
    );

    let unsubscribed = mcp
        .result(&session, 3, "resources/unsubscribe", greeting)
        .await;
    assert_eq!(unsubscribed, json!({}));
    listened_for(&serve, "modern", "").await;
    let methods: Vec<String> = serve.api_get("/api/backends/modern").await["output"]
        .as_array()
        .expect("output lines")
        .iter()
        .filter_map(|line| line["text"].as_str()?.strip_prefix("got resources/"))
        .map(str::to_owned)
        .collect();
    assert!(
        methods
            .iter()
            .all(|method| method == "list" || method == "templates/list"),
        "the server is never sent resources/subscribe or resources/unsubscribe: {methods:?}"
    );
}

#[tokio::test]
async fn a_killed_modern_server_comes_back_modern_without_a_second_initialize() {
    let mut config = sdk_server("modern", &["--modern-only"]);
    config.health_interval = None;
    let engine = engine(vec![config]);
    let backend = engine.backend("modern").expect("configured");
    let first = wait_state(&backend, BackendState::Ready).await;
    assert_eq!(
        first.server.as_ref().expect("a handshake").era,
        Era::Stateless
    );
    let pid = first.pid.expect("a pid");

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("the backend can be killed");
    let again = wait_status(&backend, |status| {
        status.state == BackendState::Ready && status.pid.is_some_and(|new| new != pid)
    })
    .await;

    assert_eq!(again.restarts, 1);
    let server = again.server.expect("a handshake");
    assert_eq!(server.era, Era::Stateless);
    assert_eq!(server.protocol_version, "2026-07-28");
    // The verdict of the first start sent the second straight to server/discover.
    assert_eq!(
        requests_through_handshake(&backend, 2).await,
        [
            &["initialize", "server/discover"][..],
            &LISTS,
            &["server/discover"],
            &LISTS
        ]
        .concat()
    );
    let echoed = backend
        .request(
            &Method::ToolsCall,
            Some(&call_params("echo", json!({ "text": "back" }))),
        )
        .await
        .expect("an answer");
    assert_eq!(json(&echoed)["content"][0]["text"], "back");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_modern_server_is_health_checked_with_server_discover() {
    let mut config = sdk_server("modern", &["--modern-only"]);
    config.health_interval = Some(std::time::Duration::from_millis(50));
    let engine = engine(vec![config]);
    let backend = engine.backend("modern").expect("configured");
    let ready = wait_state(&backend, BackendState::Ready).await;

    let checks = eventually("three health checks", EVENT_LIMIT, || async {
        let discovers = backend
            .output()
            .tail(usize::MAX)
            .iter()
            .filter(|line| line.text == "got server/discover")
            .count();
        // The first is the handshake's.
        if discovers > 3 {
            Ok(discovers)
        } else {
            Err(discovers)
        }
    })
    .await;
    assert!(checks > 3);
    let status = backend.status();
    assert_eq!(status.state, BackendState::Ready);
    assert_eq!(status.pid, ready.pid);
    assert_eq!(status.restarts, 0);
    assert!(
        !backend
            .output()
            .tail(usize::MAX)
            .iter()
            .any(|line| line.text == "got ping"),
        "a stateless-era backend is never pinged"
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn the_config_can_name_the_only_protocol_era_to_speak() {
    let mut both = sdk_server("both", &[]);
    both.protocol = Protocol::Only(Era::Stateless);
    both.health_interval = None;
    let mut modern_only = sdk_server("modern", &["--modern-only"]);
    modern_only.protocol = Protocol::Only(Era::Session);
    let engine = engine(vec![both, modern_only]);

    let both = engine.backend("both").expect("configured");
    let status = wait_state(&both, BackendState::Ready).await;
    assert_eq!(status.server.expect("a handshake").era, Era::Stateless);
    assert_eq!(
        requests_through_handshake(&both, 1).await,
        [&["server/discover"][..], &LISTS].concat()
    );

    let modern_only = engine.backend("modern").expect("configured");
    let failed = wait_status(&modern_only, |status| status.last_error.is_some()).await;
    assert_eq!(
        failed.last_error.as_deref(),
        Some(
            "the server speaks only the stateless protocol (2026-07-28) and the config asks for the session era"
        )
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn a_session_era_editor_gets_a_stateless_era_servers_log_messages_at_the_level_it_sets() {
    let config = format!(
        "[servers.py]\ncommand = {python:?}\nargs = [{script:?}]\nprotocol = \"modern\"\n",
        python = python().to_string_lossy(),
        script = backend_script("sdk_server.py").to_string_lossy(),
    );
    let serve = ServeProcess::with_config(&config, &["py"]);
    assert_eq!(serve.backend_summary("py").await["era"], "stateless");
    let mcp = McpHttp::new(&serve.url());
    let session = mcp
        .open_session("session-era-editor")
        .await
        .expect("a session");
    let mut stream = mcp.stream(&session).await.expect("a stream");

    // Under 2025-11-25 a server logs before any logging/setLevel; a 2026-07-28 server logs only
    // for a request that names a level, so Switchboard names one for this editor.
    let done = mcp
        .call_tool(&session, 1, "py__work", json!({ "steps": 1 }))
        .await;
    assert_eq!(done["content"][0]["text"], "done 1");
    let message = next_log_message(&mut stream).await;
    assert_eq!(message["params"]["level"], "info", "{message}");
    assert_eq!(message["params"]["data"], "working on 1 steps", "{message}");

    // The level the editor sets is the one the server is told with each call: at `warning` the
    // server's info message of the next call is not sent, at `info` again the one after is.
    for (id, level, steps) in [(2, "warning", 2), (3, "info", 3)] {
        let set = mcp
            .result(&session, id, "logging/setLevel", json!({ "level": level }))
            .await;
        assert_eq!(set, json!({}));
        let done = mcp
            .call_tool(&session, id + 10, "py__work", json!({ "steps": steps }))
            .await;
        assert_eq!(done["content"][0]["text"], format!("done {steps}"));
    }
    let message = next_log_message(&mut stream).await;
    assert_eq!(
        message["params"]["data"], "working on 3 steps",
        "the call made at warning sent no info message: {message}"
    );
}

/// The next log message on `stream`, past whatever else comes before it.
async fn next_log_message(stream: &mut McpStream) -> Value {
    loop {
        let message = tokio::time::timeout(EVENT_LIMIT, stream.next_message())
            .await
            .expect("a log message in time")
            .expect("a message");
        if message["method"] == "notifications/message" {
            return message;
        }
    }
}
