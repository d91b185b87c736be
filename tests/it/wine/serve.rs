//! `switchboard.exe serve` under Wine: Windows backends served on `/mcp` and called from Linux,
//! and the process-tree cases of `docs/reliability.md`, each with a grandchild.

use serde_json::json;

use super::{Place, WineServe, call_tool, none_left, tagged, text};

/// Arguments a shell or `cmd.exe` would mangle: spaces, quotes, `&`, `%`, `^`, letters outside
/// ASCII.
const AWKWARD: &[&str] = &["a b", "\"quoted\"", "x&y", "%PATH%", "^caret", "Zoë", ""];

#[tokio::test]
async fn windows_backends_are_served_and_called_from_linux() {
    let place = Place::new("served");
    place.write_config(&format!(
        "{}{}",
        place.demo("demo"),
        place.test_server("test", AWKWARD)
    ));
    let serve = WineServe::start(&place, &["demo", "test"]).await;

    let mcp = serve.mcp();
    let session = mcp.open_session("wine-test").await.expect("a session");
    let tools = mcp.result(&session, 2, "tools/list", json!({})).await;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    for name in [
        "demo__echo",
        "demo__add",
        "test__echo",
        "test__argv",
        "test__crash",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let echoed = mcp
        .call_tool(&session, 3, "demo__echo", json!({"text": "from Linux"}))
        .await;
    assert_eq!(text(&echoed), "from Linux", "{echoed}");
    let argv = mcp.call_tool(&session, 4, "test__argv", json!({})).await;
    let received: Vec<String> = serde_json::from_str(&text(&argv)).expect("a JSON list");
    let mut sent = vec!["--tag".to_owned(), place.tag.clone()];
    sent.extend(AWKWARD.iter().map(|arg| (*arg).to_owned()));
    assert_eq!(received, sent, "every argument arrives as written");
}

/// A grandchild of the `test` backend, started through a tool call; its pid.
async fn grandchild(serve: &WineServe) -> u32 {
    let started = call_tool(serve, "test__spawn_grandchild", json!({})).await;
    text(&started).parse().expect("a pid")
}

#[tokio::test]
async fn stopping_a_backend_ends_its_grandchild_too() {
    let place = Place::new("stop");
    place.write_config(&place.test_server("test", &[]));
    let serve = WineServe::start(&place, &["test"]).await;
    grandchild(&serve).await;
    let running = tagged(&place.tag);
    assert!(
        running
            .iter()
            .any(|(_, line)| line.contains("--grandchild")),
        "the grandchild runs: {running:#?}"
    );
    let (status, _) = serve.post("/api/backends/test/stop", json!({})).await;
    assert_eq!(status, 200);
    none_left(&place.tag, "after a stop").await;
    serve
        .backend_when("test", |status| status["state"] == "stopped")
        .await;
}

#[tokio::test]
async fn removing_a_backend_from_the_config_ends_its_tree() {
    let place = Place::new("removed");
    place.write_config(&format!(
        "{}{}",
        place.demo("demo"),
        place.test_server("test", &[])
    ));
    let serve = WineServe::start(&place, &["demo", "test"]).await;
    grandchild(&serve).await;
    place.write_config(&place.demo("demo"));
    let (status, outcome) = serve.post("/api/config/reload", json!({})).await;
    assert_eq!(status, 200, "{outcome}");
    none_left(&place.tag, "after the backend left the config").await;
    serve
        .backend_when("demo", |status| status["state"] == "ready")
        .await;
}

#[tokio::test]
async fn killing_switchboard_ends_every_backend() {
    let place = Place::new("killed");
    place.write_config(&place.test_server("test", &[]));
    let mut serve = WineServe::start(&place, &["test"]).await;
    grandchild(&serve).await;
    serve.kill().await;
    none_left(&place.tag, "after Switchboard was killed").await;
}

#[tokio::test]
async fn a_crashed_backend_takes_its_grandchild_with_it_and_restarts() {
    let place = Place::new("crashed");
    place.write_config(&place.test_server("test", &[]));
    let serve = WineServe::start(&place, &["test"]).await;
    let first = serve.get("/api/backends/test").await["pid"].clone();
    let mcp = serve.mcp();
    let session = mcp.open_session("wine-test").await.expect("a session");
    let crashed = mcp
        .post(
            Some(&session),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "test__crash", "arguments": {}}})
            .to_string(),
        )
        .await
        .expect("an answer");
    let answer = &crashed.messages().expect("JSON-RPC")[0];
    assert!(answer["error"].is_object(), "the call fails: {answer}");
    let restarted = serve
        .backend_when("test", |status| {
            status["state"] == "ready" && status["pid"] != first && status["restarts"] == 1
        })
        .await;
    let left = tagged(&place.tag);
    assert!(
        !left.iter().any(|(_, line)| line.contains("--grandchild")),
        "the crashed backend's grandchild died with it: {left:#?}"
    );
    assert_eq!(
        left.iter()
            .filter(|(_, line)| line.contains("test_server.exe"))
            .count(),
        1,
        "only the restarted backend runs (pid {}): {left:#?}",
        restarted["pid"]
    );
}

#[tokio::test]
async fn ctrl_c_stops_every_backend_and_exits() {
    let place = Place::new("ctrlc");
    place.write_config(&format!(
        "{}{}",
        place.test_server("test", &[]),
        place.test_server("other", &[])
    ));
    let mut serve = WineServe::start(&place, &["test", "other"]).await;
    grandchild(&serve).await;
    let status = serve.interrupt().await;
    assert!(status.success(), "{status}\n{}", serve.log());
    assert!(
        serve.log().contains("request=\"Ctrl-C\""),
        "{}",
        serve.log()
    );
    none_left(&place.tag, "after Ctrl-C").await;
}
