//! Sessions: initialization, each session's own ids and progress tokens, cancellation, bad
//! input, the servers' instructions, and a profile change told only to the sessions it affects.

use crate::support::*;
use config::{Pattern, Profile};
use hub::{Inbound, Session};
use serde_json::{Value, json};

use super::{exchange, hub, initialized, initialized_in, listed_tools, next_event, ready, request};

#[tokio::test]
async fn initialize_negotiates_the_version_and_lists_prefixed_tools_with_unknown_fields_intact() {
    let hub = hub(vec![misbehave("mis", &[]), demo("demo")]);
    ready(&hub, "mis").await;
    ready(&hub, "demo").await;
    let (session, _events) = hub.open_session();
    let answer = request(
        &session,
        json!(1),
        "initialize",
        json!({"protocolVersion": "1999-01-01", "capabilities": {}}),
    )
    .await;
    assert_eq!(
        answer["result"]["protocolVersion"], "2025-11-25",
        "an unknown version gets the newest"
    );
    assert_eq!(answer["result"]["serverInfo"]["name"], "switchboard");
    assert_eq!(
        answer["result"]["capabilities"]["tools"]["listChanged"],
        true
    );

    let tools = request(&session, json!(2), "tools/list", json!({})).await;
    let tools = tools["result"]["tools"].as_array().expect("tools").clone();
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["name"].as_str().expect("name"))
        .collect();
    assert!(
        names.contains(&"mis__echo") && names.contains(&"demo__echo"),
        "{names:?}"
    );
    let echo = tools
        .iter()
        .find(|tool| tool["name"] == "mis__echo")
        .expect("listed");
    assert_eq!(
        echo["x-switchboard-test"],
        json!({"kept": true}),
        "unknown fields arrive unchanged"
    );

    let call = request(
        &session,
        json!("s"),
        "tools/call",
        json!({"name": "demo__add", "arguments": {"a": 2, "b": 40}}),
    )
    .await;
    assert_eq!(call["id"], "s");
    assert_eq!(call["result"]["content"][0]["text"], "42");
    let echo = request(
        &session,
        json!(3),
        "tools/call",
        json!({"name": "mis__echo", "arguments": {"text": "hi"}}),
    )
    .await;
    assert_eq!(
        echo["result"]["x-extra"], 1,
        "unknown fields of results arrive unchanged"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn two_sessions_sending_the_same_ids_each_get_their_own_answers() {
    let hub = hub(vec![misbehave("mis", &[])]);
    ready(&hub, "mis").await;
    let (first, _) = initialized(&hub, json!({})).await;
    let (second, _) = initialized(&hub, json!({})).await;
    let mut calls = Vec::new();
    for i in 0..50 {
        for (label, session) in [("first", first.clone()), ("second", second.clone())] {
            calls.push(tokio::spawn(async move {
                let text = format!("{label} {i}");
                let params = json!({"name": "mis__slow", "arguments": {"ms": i % 7}});
                let slow = request(&session, json!(i), "tools/call", params);
                let echo = request(
                    &session,
                    json!(1000 + i),
                    "tools/call",
                    json!({"name": "mis__echo", "arguments": {"text": text}}),
                );
                let (slow, echo) = tokio::join!(slow, echo);
                assert_eq!(slow["id"], i);
                assert_eq!(echo["id"], 1000 + i);
                assert_eq!(echo["result"]["content"][0]["text"], text);
            }));
        }
    }
    for call in calls {
        call.await.expect("every answer went to the right session");
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn progress_tokens_are_remapped_back_to_the_callers_own() {
    let hub = hub(vec![misbehave("mis", &[])]);
    ready(&hub, "mis").await;
    let (first, _) = initialized(&hub, json!({})).await;
    let (second, _) = initialized(&hub, json!({})).await;
    let params =
        json!({"name": "mis__slow", "arguments": {"ms": 100}, "_meta": {"progressToken": 7}});
    let message =
        |id| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let (a, b) = tokio::join!(exchange(&first, message(1)), exchange(&second, message(1)));
    for messages in [a, b] {
        let (response, progress) = messages.split_last().expect("messages");
        assert_eq!(response["result"]["content"][0]["text"], "slept 100");
        assert!(progress.len() >= 3, "progress arrived: {progress:?}");
        for note in progress {
            assert_eq!(note["method"], "notifications/progress");
            assert_eq!(
                note["params"]["progressToken"], 7,
                "the client's own token, as a number"
            );
        }
    }
    let without = request(
        &first,
        json!(2),
        "tools/call",
        json!({"name": "mis__slow", "arguments": {"ms": 50}}),
    )
    .await;
    assert_eq!(
        without["result"]["content"][0]["text"], "slept 50",
        "no token is injected when none was sent"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_cancelled_call_is_cancelled_at_the_backend_and_gets_no_response() {
    let hub = hub(vec![misbehave("mis", &[])]);
    ready(&hub, "mis").await;
    let (session, _) = initialized(&hub, json!({})).await;
    let Inbound::Request(mut reply) = session.receive(
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "mis__hang"}})
            .to_string()
            .as_bytes(),
    ) else {
        panic!("a request");
    };
    until_in_flight(&session, 1).await;
    let accepted = session.receive(
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}"#,
    );
    assert!(matches!(accepted, Inbound::Accepted));
    let end = tokio::time::timeout(EVENT_LIMIT, reply.messages.recv())
        .await
        .expect("closed in time");
    assert!(
        end.is_none(),
        "no response after a cancellation: {:?}",
        end.map(|m| String::from_utf8_lossy(&m.to_json()).into_owned())
    );

    let ids = tool_ids(&session, "mis__cancelled_ids").await;
    assert_eq!(ids.len(), 1, "the backend was told");

    // A client that goes away mid-call (drops the reply) cancels it too.
    let Inbound::Request(reply) = session.receive(
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "mis__hang"}})
            .to_string()
            .as_bytes(),
    ) else {
        panic!("a request");
    };
    until_in_flight(&session, 1).await;
    drop(reply);
    eventually("the dropped call is cancelled", EVENT_LIMIT, || async {
        let ids = tool_ids(&session, "mis__cancelled_ids").await;
        if ids.len() == 2 { Ok(()) } else { Err(ids) }
    })
    .await;
    hub.shutdown().await;
}

/// Calls `tool` of the misbehaving server, which answers a JSON array of request ids.
async fn tool_ids(session: &Session, tool: &str) -> Vec<Value> {
    let answer = request(session, json!("ids"), "tools/call", json!({"name": tool})).await;
    let text = answer["result"]["content"][0]["text"].as_str();
    serde_json::from_str(text.expect("a text result")).expect("ids")
}

/// Waits until the misbehaving backend has received `calls` calls it has neither answered nor
/// seen cancelled.
async fn until_in_flight(session: &Session, calls: usize) {
    let what = format!("the backend has {calls} calls in flight");
    eventually(&what, EVENT_LIMIT, || async {
        let ids = tool_ids(session, "mis__in_flight").await;
        if ids.len() == calls { Ok(()) } else { Err(ids) }
    })
    .await;
}

#[tokio::test]
async fn bad_input_gets_the_right_json_rpc_errors() {
    let hub = hub(vec![misbehave("mis", &[])]);
    ready(&hub, "mis").await;
    let (session, _) = initialized(&hub, json!({})).await;
    let raw = |text: &str| match session.receive(text.as_bytes()) {
        Inbound::Rejected(error) => {
            serde_json::from_slice::<Value>(&error.to_json()).expect("JSON")
        }
        _ => panic!("{text} should be rejected"),
    };
    assert_eq!(raw("{not json")["error"]["code"], -32700);
    assert_eq!(raw("{not json")["id"], Value::Null);
    assert_eq!(raw(r#"{"jsonrpc":"2.0","id":1}"#)["error"]["code"], -32600);
    assert_eq!(raw(r#"{"id":1,"method":"ping"}"#)["error"]["code"], -32600);
    assert_eq!(raw(r#"[1,2]"#)["error"]["code"], -32700);
    assert_eq!(
        raw(r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#)["error"]["code"],
        -32600
    );

    let unknown = request(&session, json!(1), "no/such/method", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);
    let tool = request(
        &session,
        json!(2),
        "tools/call",
        json!({"name": "mis__nope"}),
    )
    .await;
    assert_eq!(tool["error"]["code"], -32602);
    assert!(
        tool["error"]["message"]
            .as_str()
            .expect("message")
            .contains("mis__nope")
    );
    let no_params = request(&session, json!(3), "tools/call", json!(null)).await;
    assert_eq!(no_params["error"]["code"], -32602);

    let ping = request(&session, json!(4), "ping", json!({})).await;
    assert_eq!(ping["result"], json!({}), "the hub itself keeps answering");
    hub.shutdown().await;
}

#[tokio::test]
async fn initialize_carries_each_servers_instructions_in_a_section_of_its_own() {
    let hub = hub(vec![demo("demo"), misbehave("mis", &[])]);
    // Asked before either server is ready: the answer waits for both, like the first list.
    let (session, _) = hub.open_session();
    let answer = request(
        &session,
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
    )
    .await;
    let instructions = answer["result"]["instructions"]
        .as_str()
        .expect("instructions");
    assert!(
        instructions.starts_with("Switchboard offers the tools"),
        "{instructions}"
    );
    let demo_section = instructions
        .split_once("\n\n## demo\n")
        .map(|(_, section)| section)
        .unwrap_or_else(|| panic!("a section for demo: {instructions}"));
    assert!(
        demo_section.contains("`demo__`") && demo_section.contains("Demo server for switchboard"),
        "the section names the server's prefix and carries its own words: {demo_section}"
    );
    assert!(
        !instructions.contains("## mis"),
        "a server without instructions gets no section: {instructions}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_profile_change_tells_only_the_sessions_it_affects() {
    let hub = hub(vec![everything("everything"), demo("demo")]);
    ready(&hub, "everything").await;
    ready(&hub, "demo").await;
    let profile = |name: &str, servers: &[&str]| {
        let mut profile = Profile::everything(name);
        profile.servers = Some(servers.iter().map(|server| (*server).to_owned()).collect());
        profile
    };
    hub.set_profiles(vec![
        profile("docs", &["demo"]),
        profile("lab", &["everything"]),
    ]);
    let (docs, mut docs_events) = initialized_in(&hub, "docs", json!({})).await;
    let (lab, mut lab_events) = initialized_in(&hub, "lab", json!({})).await;
    eventually("both profiles are built", EVENT_LIMIT, || async {
        let docs_tools = listed_tools(&request(&docs, json!(1), "tools/list", json!({})).await);
        let lab_tools = listed_tools(&request(&lab, json!(1), "tools/list", json!({})).await);
        let fits = |tools: &[String], prefix: &str| {
            !tools.is_empty() && tools.iter().all(|tool| tool.starts_with(prefix))
        };
        if fits(&docs_tools, "demo__") && fits(&lab_tools, "everything__") {
            Ok(())
        } else {
            Err(format!("{docs_tools:?} {lab_tools:?}"))
        }
    })
    .await;
    assert!(hub.open_session_in("nope").is_none(), "no such profile");

    // Only lab changes: only lab's session is told.
    let mut narrowed = profile("lab", &["everything"]);
    narrowed.exclude_tools = vec![Pattern {
        glob: "echo".to_owned(),
        line: 1,
        column: 1,
    }];
    hub.set_profiles(vec![profile("docs", &["demo"]), narrowed]);
    let told = next_event(&mut lab_events).await;
    assert_eq!(told["method"], "notifications/tools/list_changed", "{told}");
    // The rebuild that told lab ran to its end on this single-threaded runtime before lab's
    // session could read its event: anything docs was sent is already queued.
    assert!(
        docs_events.try_recv().is_err(),
        "docs' lists did not change, so it was told nothing"
    );
    let lab_tools = listed_tools(&request(&lab, json!(2), "tools/list", json!({})).await);
    assert!(
        !lab_tools.contains(&"everything__echo".to_owned()),
        "{lab_tools:?}"
    );
    assert!(
        lab_tools.contains(&"everything__get-sum".to_owned()),
        "{lab_tools:?}"
    );

    // A profile that is gone serves empty lists to the sessions it had.
    hub.set_profiles(vec![profile("docs", &["demo"])]);
    let told = next_event(&mut lab_events).await;
    assert_eq!(told["method"], "notifications/tools/list_changed", "{told}");
    let gone = request(&lab, json!(3), "tools/list", json!({})).await;
    assert_eq!(gone["result"]["tools"], json!([]), "{gone}");
    hub.shutdown().await;
}
