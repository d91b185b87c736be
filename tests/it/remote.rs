//! Remote servers: real MCP servers on the official Python SDK reached over HTTP
//! (`tests/backends/remote_server.py`), as backends like any other: Streamable HTTP with
//! sessions, the older HTTP+SSE transport found on its own, a server of 2026-07-28, editors of
//! both eras over `/mcp` and `connect`, 64 calls in flight over one connection pool, and servers
//! that cannot be reached or answer garbage, each with a clear state and message in bounded time.

use serde_json::{Value, json};

use crate::sdk_clients::{python_connect_target, run_python_client};
use crate::support::*;

/// The config entry of a remote server `name` at `url`, with `extra` lines.
pub(crate) fn remote_entry(name: &str, url: &str, extra: &str) -> String {
    format!("[servers.{name}]\nurl = {url:?}\n{extra}\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_server_serves_editors_of_both_eras_like_a_local_one() {
    let remote = remote_server(&[]);
    let url = remote.field("url");
    let serve = ServeProcess::with_config(&remote_entry("remote", &url, ""), &["remote"]);
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp.open_session("remote-test").await.expect("a session");
    let listed = mcp.result(&session, 1, "tools/list", json!({})).await;
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| tool["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(
        names,
        [
            "remote__echo",
            "remote__whoami",
            "remote__slow",
            "remote__sleeping",
            "remote__count",
            "remote__ask_name",
            "remote__region"
        ]
    );
    let echoed = mcp
        .call_tool(&session, 2, "remote__echo", json!({"text": "over http"}))
        .await;
    assert_eq!(first_text(&echoed), "over http");
    let who = mcp
        .call_tool(&session, 3, "remote__whoami", json!({}))
        .await;
    assert_eq!(first_text(&who), "anonymous");

    // The dashboard shows where it is, and no process.
    let entry = serve.backend_summary("remote").await;
    assert_eq!(entry["state"], "ready", "{entry}");
    assert_eq!(entry["pid"], Value::Null, "{entry}");
    let detail = serve.api_get("/api/backends/remote").await;
    assert_eq!(detail["config"]["url"], url.as_str(), "{detail}");
    assert_eq!(detail["config"]["command"], Value::Null, "{detail}");

    // The official Python SDK in each of its modes, over /mcp and over connect.
    let connect = python_connect_target(&serve);
    let serve_url = serve.url();
    let targets: [Vec<&str>; 2] = [
        vec!["--url", serve_url.as_str()],
        connect.iter().map(String::as_str).collect(),
    ];
    for target in &targets {
        for mode in ["legacy", "auto", "2026-07-28"] {
            let mut args = vec![
                "--steps",
                "call:remote__echo,call:remote__ask_name",
                "--tool-args",
                r#"remote__echo={"text":"from the sdk"}"#,
                "--elicit",
                r#"{"name":"Grace"}"#,
            ];
            args.extend(target);
            let transcript = run_python_client(mode, &args, &serve.env());
            assert_eq!(transcript["error"], Value::Null, "{mode}: {transcript}");
            assert_eq!(
                transcript["steps"][0]["content"][0]["text"], "from the sdk",
                "{mode}: {transcript}"
            );
            // The server's question crosses its HTTP link back to this editor, and the answer
            // goes back the same way.
            let asked = &transcript["steps"][1];
            assert_eq!(
                asked["content"][0]["text"], "hello Grace",
                "{mode}: {asked}"
            );
            assert_eq!(
                asked["elicitations"].as_array().map(Vec::len),
                Some(1),
                "{mode}: {asked}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_servers_question_goes_to_the_editor_whose_call_it_came_with() {
    let remote = remote_server(&[]);
    // In the session era a server asks on the stream of the POST it answers, and that stream is
    // what tells whose call a question belongs to. (In the stateless era a question is part of
    // the call's own answer.)
    let serve = ServeProcess::with_config(
        &remote_entry("remote", &remote.field("url"), "protocol = \"session\""),
        &["remote"],
    );
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let elicitation = json!({"elicitation": {}});
    let busy = mcp
        .open_session_declaring("busy-editor", elicitation.clone())
        .await
        .expect("a session");
    let asked = mcp
        .open_session_declaring("asked-editor", elicitation)
        .await
        .expect("a session");

    // One editor's call waits at the server while another editor's call asks a question.
    let slow = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "remote__slow", "arguments": {"ms": 600_000},
    }});
    let busy_call = mcp.post_streamed(&busy, &slow).await.expect("a stream");
    eventually("the slow call at the server", EVENT_LIMIT, || async {
        let entry = serve.backend_summary("remote").await;
        match entry["pending"].as_u64() {
            Some(1) => Ok(()),
            _ => Err(entry),
        }
    })
    .await;
    let ask = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "remote__ask_name", "arguments": {},
    }});
    let mut reply = mcp.post_streamed(&asked, &ask).await.expect("a stream");

    // The question came on the stream of that call's POST: it is that editor's.
    let accepted = json!({"action": "accept", "content": {"name": "Grace"}});
    let (_, done) = mcp
        .answer_on(&asked, &mut reply, "elicitation/create", accepted)
        .await
        .expect("a question, then the answer");
    assert_eq!(done["id"], 2, "{done}");
    assert_eq!(first_text(&done["result"]), "hello Grace", "{done}");
    drop(busy_call);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_stream_the_server_closes_is_followed_to_its_answer() {
    // The Python SDK closes a request's stream only for a client of 2025-11-25 or later, in
    // the session era.
    let remote = remote_server(&["--resumable"]);
    let url = remote.field("url");
    let entry = remote_entry("remote", &url, "protocol = \"session\"");
    let serve = ServeProcess::with_config(&entry, &["remote"]);
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp.open_session("remote-test").await.expect("a session");
    let paused = mcp
        .call_tool(&session, 2, "remote__pause", json!({"ms": 300}))
        .await;
    assert_eq!(first_text(&paused), "resumed after 300 ms", "{paused}");
    // The link is as good as before.
    let echoed = mcp
        .call_tool(&session, 3, "remote__echo", json!({"text": "after"}))
        .await;
    assert_eq!(first_text(&echoed), "after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_older_http_sse_transport_is_found_on_its_own_or_named() {
    let sse = remote_server(&["--transport", "sse"]);
    let url = sse.field("url");
    let config =
        remote_entry("found", &url, "") + &remote_entry("named", &url, "transport = \"sse\"");
    let serve = ServeProcess::with_config(&config, &["found", "named"]);
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp.open_session("sse-test").await.expect("a session");
    for (id, tool) in [(1, "found__echo"), (2, "named__echo")] {
        let echoed = mcp
            .call_tool(&session, id, tool, json!({"text": "over sse"}))
            .await;
        assert_eq!(first_text(&echoed), "over sse", "{tool}");
    }
    let output = serve.api_get("/api/backends/found").await["output"].to_string();
    assert!(
        output.contains("trying the HTTP+SSE transport of 2024-11-05"),
        "{output}"
    );
    // Each link publishes the transport it speaks, found on its own or named.
    for name in ["found", "named"] {
        let summary = serve.backend_summary(name).await;
        assert_eq!(summary["transport"], "sse", "{summary}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_server_of_2026_07_28_is_spoken_to_in_its_era() {
    let remote = remote_server(&[]);
    let config = remote_entry("modern", &remote.field("url"), "protocol = \"modern\"");
    let serve = ServeProcess::with_config(&config, &["modern"]);
    let entry = serve.backend_summary("modern").await;
    assert_eq!(entry["era"], "stateless", "{entry}");
    assert_eq!(entry["transport"], "streamable-http", "{entry}");
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp.open_session("modern-test").await.expect("a session");
    let echoed = mcp
        .call_tool(&session, 1, "modern__echo", json!({"text": "stateless"}))
        .await;
    assert_eq!(first_text(&echoed), "stateless");
    // An argument the tool mirrors into a header (`x-mcp-header`) goes as `Mcp-Param-Region`,
    // in base64 when it is not plain ASCII; the SDK refuses the call without it.
    for name in ["eu-west", "Zürich"] {
        let answer = mcp
            .call_tool(&session, 2, "modern__region", json!({"name": name}))
            .await;
        assert_eq!(first_text(&answer), name, "{answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_given_up_ends_at_a_remote_server_of_2026_07_28() {
    let remote = remote_server(&[]);
    let config = remote_entry("modern", &remote.field("url"), "protocol = \"modern\"");
    let serve = ServeProcess::with_config(&config, &["modern"]);
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp.open_session("giving-up").await.expect("a session");
    let sleeping = async |expected: u64| {
        eventually(&format!("{expected} sleeping"), EVENT_LIMIT, || async {
            let answer = mcp
                .call_tool(&session, 2, "modern__sleeping", json!({}))
                .await;
            match first_text(&answer).parse::<u64>() {
                Ok(n) if n == expected => Ok(()),
                _ => Err(answer),
            }
        })
        .await
    };

    let caller = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let slow = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "modern__slow", "arguments": {"ms": 600_000},
    }});
    let (in_session, body) = (session.clone(), slow.to_string());
    let call = tokio::spawn(async move { caller.post(Some(&in_session), body).await });
    sleeping(1).await;
    // The editor gives up; the server, which hears no notification in this era, sees the
    // request's stream close.
    let cancelled = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
        "requestId": 1, "reason": "given up",
    }});
    let taken = mcp
        .post(Some(&session), cancelled.to_string())
        .await
        .expect("posted");
    assert_eq!(taken.status, 202, "{}", taken.body);
    sleeping(0).await;
    call.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_calls_in_flight_share_one_connection_pool() {
    let remote = remote_server(&[]);
    let serve =
        ServeProcess::with_config(&remote_entry("pool", &remote.field("url"), ""), &["pool"]);
    let mcp = std::sync::Arc::new(McpHttp::new(&serve.url()).with_token(SERVE_TOKEN));
    let session = mcp.open_session("pool-test").await.expect("a session");
    let calls: Vec<_> = (0..64)
        .map(|n| {
            let mcp = mcp.clone();
            let session = session.clone();
            tokio::spawn(async move {
                mcp.call_tool(&session, 100 + n, "pool__slow", json!({"ms": 300}))
                    .await
            })
        })
        .collect();
    for call in calls {
        let result = call.await.expect("the call's task");
        assert_eq!(first_text(&result), "slept 300", "{result}");
    }
    let counted = mcp.call_tool(&session, 1, "pool__count", json!({})).await;
    assert_eq!(first_text(&counted), "65");
}

/// Waits until `name` has left `starting` and says why it is not ready; returns its summary.
async fn failed(serve: &ServeProcess, name: &str) -> Value {
    eventually("the server fails with a reason", EVENT_LIMIT, || async {
        let entry = serve.backend_summary(name).await;
        match entry["last_error"].as_str() {
            Some(_) if entry["state"] != "ready" => Ok(entry),
            _ => Err(entry),
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_tls_html_and_silent_servers_each_get_a_clear_state_in_bounded_time() {
    let html = remote_server(&["--garbage", "html"]);
    let hang = remote_server(&["--garbage", "hang"]);
    let plain = remote_server(&[]);
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.local_addr().expect("an address").port()
    };
    let tls_to_plain = plain.field("url").replace("http://", "https://");
    let config = [
        remote_entry("refused", &format!("http://127.0.0.1:{closed}/mcp"), ""),
        remote_entry("tls", &tls_to_plain, ""),
        remote_entry("html", &html.field("url"), ""),
        remote_entry("silent", &hang.field("url"), "timeout = \"1s\""),
        format!(
            "[servers.demo]\ncommand = {:?}\nargs = [\"demo-server\"]\n",
            switchboard_exe().to_string_lossy()
        ),
    ]
    .concat();
    let serve = ServeProcess::with_config(&config, &["demo"]);
    for (name, expected) in [
        (
            "refused",
            format!("cannot reach http://127.0.0.1:{closed}/mcp"),
        ),
        ("tls", format!("cannot reach {tls_to_plain}")),
        ("html", "answered HTTP 200 (text/html".to_owned()),
        ("silent", "did not answer within 1000 ms".to_owned()),
    ] {
        let entry = failed(&serve, name).await;
        let error = entry["last_error"].as_str().expect("a reason");
        assert!(error.contains(&expected), "{name}: {error}");
        assert!(
            matches!(
                entry["state"].as_str(),
                Some("backoff" | "crash_loop" | "starting")
            ),
            "{name}: {entry}"
        );
    }
    // The local server next to them runs all along.
    assert_eq!(serve.backend_summary("demo").await["state"], "ready");
}
