//! The hub through its session API, against real backend processes.

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use config::{Ask, BackendConfig, Pattern, Profile};
use hub::{Hub, HubOptions, Inbound, Reply, Session, SessionEvents};
use serde_json::{Value, json};
use supervisor::Engine;
use supervisor::spawn::ProcessGroups;
use supervisor::status::BackendState;
use wire::method::Method;

/// An engine and the hub over it, started the way the app starts them.
struct Wired {
    engine: Arc<Engine>,
    hub: Hub,
}

impl Wired {
    fn start(configs: Vec<BackendConfig>, options: HubOptions) -> Wired {
        let (engine, hub) = hub::start(configs, ProcessGroups::in_memory(), options);
        Wired { engine, hub }
    }

    fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Closes the hub's sessions, then stops every backend.
    async fn shutdown(&self) {
        self.hub.shutdown();
        self.engine.shutdown().await;
    }
}

impl Deref for Wired {
    type Target = Hub;

    fn deref(&self) -> &Hub {
        &self.hub
    }
}

fn hub(configs: Vec<BackendConfig>) -> Wired {
    Wired::start(configs, HubOptions::default())
}

/// Waits until the backend is ready and the hub lists its tools.
async fn ready(hub: &Wired, name: &str) {
    wait_state(
        &hub.engine().backend(name).expect("configured"),
        BackendState::Ready,
    )
    .await;
    let (session, _) = hub.open_session();
    let prefix = format!("\"{name}__");
    eventually(
        &format!("{name}'s tools are listed"),
        EVENT_LIMIT,
        || async {
            let tools = request(&session, json!(1), "tools/list", json!({})).await;
            if tools.to_string().contains(&prefix) {
                Ok(())
            } else {
                Err(tools)
            }
        },
    )
    .await;
    session.close();
}

/// Approves `key` of `server` once it is held back (a tool added by a server that has pins), as
/// the Review page would.
async fn approve_when_held(hub: &Hub, server: &str, key: &str) {
    eventually(&format!("{key} of {server} held"), EVENT_LIMIT, || async {
        let report = hub.pins().report();
        match report
            .held
            .iter()
            .any(|held| held.server == server && held.key == key)
        {
            true => Ok(()),
            false => Err(format!("{:?}", report.held)),
        }
    })
    .await;
    hub.pins()
        .approve(server, Some(&[key.to_owned()]), None)
        .expect("approved");
}

/// Sends one message; returns every message of its reply (the response last).
async fn exchange(session: &Session, message: Value) -> Vec<Value> {
    match session.receive(message.to_string().as_bytes()) {
        Inbound::Request(mut reply) => {
            let mut messages = Vec::new();
            while let Some(message) = tokio::time::timeout(EVENT_LIMIT, reply.messages.recv())
                .await
                .expect("reply in time")
            {
                messages.push(serde_json::from_slice(&message.to_json()).expect("JSON"));
            }
            messages
        }
        Inbound::Rejected(error) => vec![serde_json::from_slice(&error.to_json()).expect("JSON")],
        Inbound::Accepted => Vec::new(),
    }
}

async fn request(session: &Session, id: Value, method: &str, params: Value) -> Value {
    let messages = exchange(
        session,
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    )
    .await;
    messages.last().cloned().expect("a response")
}

/// Starts a call of `tool` and returns the first message the session gets for it and the rest.
async fn start_call(
    session: &Session,
    id: u64,
    tool: &str,
    arguments: Value,
) -> (Value, tokio::sync::mpsc::UnboundedReceiver<Reply>) {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
    let Inbound::Request(mut reply) = session.receive(call.to_string().as_bytes()) else {
        panic!("a request");
    };
    (next_message(&mut reply.messages).await, reply.messages)
}

/// Answers the request `asked` of a backend, which `editor` got, by accepting with `content`.
fn accept(editor: &Session, asked: &Value, content: Value) {
    let accepted = json!({
        "jsonrpc": "2.0", "id": asked["id"],
        "result": {"action": "accept", "content": content},
    });
    assert!(matches!(
        editor.receive(accepted.to_string().as_bytes()),
        Inbound::Accepted
    ));
}

/// The next message of a call, in time.
async fn next_message(messages: &mut tokio::sync::mpsc::UnboundedReceiver<Reply>) -> Value {
    let message = tokio::time::timeout(EVENT_LIMIT, messages.recv())
        .await
        .expect("in time")
        .expect("a message");
    serde_json::from_slice(&message.to_json()).expect("JSON")
}

async fn initialized(hub: &Hub, capabilities: Value) -> (Session, SessionEvents) {
    initialized_in(hub, "default", capabilities).await
}

/// A session of `profile`, initialized.
async fn initialized_in(hub: &Hub, profile: &str, capabilities: Value) -> (Session, SessionEvents) {
    let (session, events) = hub.open_session_in(profile).expect("a served profile");
    let answer = request(
        &session,
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": capabilities, "clientInfo": {"name": "test", "version": "1"}}),
    )
    .await;
    assert_eq!(answer["result"]["protocolVersion"], "2025-06-18");
    session.receive(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    (session, events)
}

async fn next_event(events: &mut SessionEvents) -> Value {
    let message = tokio::time::timeout(EVENT_LIMIT, events.recv())
        .await
        .expect("event in time")
        .expect("open");
    serde_json::from_slice(&message.to_json()).expect("JSON")
}

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
async fn a_call_to_a_backend_that_is_down_names_it_and_its_state() {
    let mut manual = misbehave("manual", &[]);
    manual.start_on_demand = false;
    let hub = hub(vec![manual]);
    ready(&hub, "manual").await;
    let (session, _) = initialized(&hub, json!({})).await;
    hub.engine()
        .backend("manual")
        .expect("configured")
        .stop()
        .await
        .expect("stops");
    let call = request(
        &session,
        json!(1),
        "tools/call",
        json!({"name": "manual__echo", "arguments": {"text": "x"}}),
    )
    .await;
    assert_eq!(call["error"]["code"], -32001);
    let message = call["error"]["message"].as_str().expect("message");
    assert!(
        message.contains("manual") && message.contains("stopped"),
        "{message}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_call_to_a_stopped_backend_starts_it_on_demand_and_its_tools_stay_listed() {
    let cache = tempfile::tempdir().expect("temp dir");
    let mut lazy = misbehave("lazy", &[]);
    lazy.start_on_demand = true;
    let mut manual = misbehave("manual", &[]);
    manual.start_on_demand = false;
    let options = HubOptions {
        catalog_cache: Some(cache.path().to_owned()),
        ..HubOptions::default()
    };
    let hub = Wired::start(vec![lazy, manual], options);
    ready(&hub, "lazy").await;
    ready(&hub, "manual").await;
    let (session, mut events) = initialized(&hub, json!({})).await;
    for name in ["lazy", "manual"] {
        hub.engine()
            .backend(name)
            .expect("configured")
            .stop()
            .await
            .expect("stops");
    }
    // Each rebuild of the catalog that changes it is announced. The one that drops manual's
    // tools ran after manual began to stop, so after lazy had stopped.
    let names = loop {
        let tools = request(&session, json!(1), "tools/list", json!({})).await;
        let names: Vec<String> = tools["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().expect("name").to_owned())
            .collect();
        if !names.iter().any(|name| name.starts_with("manual__")) {
            break names;
        }
        next_event(&mut events).await;
    };
    assert!(
        names.contains(&"lazy__echo".to_owned()),
        "a stopped on-demand backend stays listed: {names:?}"
    );
    let file = cache.path().join("lazy.json");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&file).expect("cached").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);

    let call = request(
        &session,
        json!(2),
        "tools/call",
        json!({"name": "lazy__echo", "arguments": {"text": "woke"}}),
    )
    .await;
    assert_eq!(call["result"]["content"][0]["text"], "woke");
    assert_eq!(
        hub.engine()
            .backend("lazy")
            .expect("configured")
            .status()
            .state,
        BackendState::Ready
    );
    hub.shutdown().await;

    // A new hub lists the cached tools before the backend has even started.
    let mut lazy = misbehave("lazy", &["--slow-start", "3000"]);
    lazy.handshake_timeout = Duration::from_secs(20);
    let options = HubOptions {
        catalog_cache: Some(cache.path().to_owned()),
        ..HubOptions::default()
    };
    let hub = Wired::start(vec![lazy], options);
    let (session, _) = initialized(&hub, json!({})).await;
    let tools = request(&session, json!(1), "tools/list", json!({})).await;
    assert!(
        tools["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .any(|t| t["name"] == "lazy__echo")
    );
    assert_ne!(
        hub.engine()
            .backend("lazy")
            .expect("configured")
            .status()
            .state,
        BackendState::Ready
    );
    let call = request(
        &session,
        json!(2),
        "tools/call",
        json!({"name": "lazy__echo", "arguments": {"text": "waited"}}),
    )
    .await;
    assert_eq!(
        call["result"]["content"][0]["text"], "waited",
        "the call waits for the start"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn server_to_client_requests_go_to_the_session_whose_call_caused_them() {
    let hub = hub(vec![misbehave("mis", &[])]);
    ready(&hub, "mis").await;
    let (_bystander, _) = initialized(&hub, json!({"sampling": {}})).await;
    let (caller, _) = initialized(&hub, json!({"sampling": {}, "elicitation": {}})).await;
    let arguments =
        json!({"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}});
    let (asked, mut rest) = start_call(&caller, 1, "mis__ask", arguments).await;
    assert_eq!(asked["method"], "sampling/createMessage");
    assert_eq!(asked["params"]["maxTokens"], 5);
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "m"}});
    assert!(matches!(
        caller.receive(answer.to_string().as_bytes()),
        Inbound::Accepted
    ));
    let response = next_message(&mut rest).await;
    let relayed: Value = serde_json::from_str(
        response["result"]["content"][0]["text"]
            .as_str()
            .expect("text"),
    )
    .expect("JSON");
    assert_eq!(
        relayed["content"]["text"], "sampled",
        "the backend got the editor's answer"
    );

    // Without a capable session the backend gets a proper JSON-RPC error.
    let asked = request(
        &caller,
        json!(2),
        "tools/call",
        json!({"name": "mis__ask", "arguments": {"method": "roots/list"}}),
    )
    .await;
    let relayed: Value = serde_json::from_str(
        asked["result"]["content"][0]["text"]
            .as_str()
            .expect("text"),
    )
    .expect("JSON");
    assert_eq!(relayed["code"], -32601);
    hub.shutdown().await;
}

#[tokio::test]
async fn list_changed_and_subscribed_updates_reach_the_right_sessions() {
    let hub = hub(vec![misbehave("mis", &[])]);
    ready(&hub, "mis").await;
    let (subscriber, mut subscriber_events) = initialized(&hub, json!({})).await;
    let (other, mut other_events) = initialized(&hub, json!({})).await;
    let subscribed = request(
        &subscriber,
        json!(1),
        "resources/subscribe",
        json!({"uri": "test://a"}),
    )
    .await;
    assert_eq!(subscribed["result"], json!({}));
    let read = request(
        &other,
        json!(1),
        "resources/read",
        json!({"uri": "test://items/9"}),
    )
    .await;
    assert_eq!(
        read["result"]["contents"][0]["text"], "content of test://items/9",
        "templates route too"
    );

    request(
        &other,
        json!(2),
        "tools/call",
        json!({"name": "mis__update", "arguments": {"uri": "test://a"}}),
    )
    .await;
    let update = next_event(&mut subscriber_events).await;
    assert_eq!(update["method"], "notifications/resources/updated");
    assert_eq!(update["params"]["uri"], "test://a");

    request(
        &other,
        json!(3),
        "tools/call",
        json!({"name": "mis__change_tools"}),
    )
    .await;
    approve_when_held(&hub, "mis", "added_later").await;
    for events in [&mut subscriber_events, &mut other_events] {
        let changed = next_event(events).await;
        assert_eq!(changed["method"], "notifications/tools/list_changed");
    }
    let tools = request(&other, json!(4), "tools/list", json!({})).await;
    assert!(
        tools["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .any(|tool| tool["name"] == "mis__added_later")
    );
    assert!(
        other_events.try_recv().is_err(),
        "the non-subscriber got no resource update"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn completion_and_log_levels_reach_the_backends_with_names_rewritten() {
    let hub = hub(vec![misbehave("mis", &[]), misbehave("other", &[])]);
    ready(&hub, "mis").await;
    ready(&hub, "other").await;
    let (session, _) = initialized(&hub, json!({})).await;
    let completed = request(
        &session,
        json!(1),
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "mis__hello"}, "argument": {"name": "name", "value": "Ad"}}),
    )
    .await;
    assert_eq!(
        completed["result"]["completion"]["values"],
        json!(["hello:Ad"]),
        "the backend saw its own prompt name"
    );
    let by_uri = request(
        &session,
        json!(2),
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": "test://items/{id}"}, "argument": {"name": "id", "value": "4"}}),
    )
    .await;
    assert_eq!(
        by_uri["error"]["code"], -32002,
        "two backends serve that template: {by_uri}"
    );

    let set = request(
        &session,
        json!(3),
        "logging/setLevel",
        json!({"level": "debug"}),
    )
    .await;
    assert_eq!(set["result"], json!({}));
    for name in ["mis", "other"] {
        let level = request(
            &session,
            json!(4),
            "tools/call",
            json!({"name": format!("{name}__log_level")}),
        )
        .await;
        assert_eq!(
            level["result"]["content"][0]["text"], "debug",
            "{name} got the level"
        );
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn a_call_made_as_soon_as_a_backend_is_ready_finds_its_tool() {
    // No catalog cache: the hub learns the demo's tools only when it becomes ready.
    let hub = hub(vec![demo("fresh")]);
    let (session, _) = initialized(&hub, json!({})).await;
    wait_state(
        &hub.engine().backend("fresh").expect("configured"),
        BackendState::Ready,
    )
    .await;
    let answer = request(
        &session,
        json!(1),
        "tools/call",
        json!({"name": "fresh__echo", "arguments": {"text": "first thing"}}),
    )
    .await;
    assert_eq!(
        answer["result"]["content"][0]["text"], "first thing",
        "{answer}"
    );
    let unknown = request(
        &session,
        json!(2),
        "tools/call",
        json!({"name": "fresh__nothing", "arguments": {}}),
    )
    .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    hub.shutdown().await;
}

/// The names in a `tools/list` answer, in order.
fn listed_tools(answer: &Value) -> Vec<String> {
    answer["result"]["tools"]
        .as_array()
        .expect("a tools/list result")
        .iter()
        .map(|tool| tool["name"].as_str().expect("a name").to_owned())
        .collect()
}

#[tokio::test]
async fn the_first_list_and_call_wait_for_backends_still_starting() {
    // No catalog cache: nothing is known of the slow backend until its handshake ends.
    let both = hub(vec![
        misbehave("quick", &[]),
        misbehave("slow", &["--slow-start", "1500"]),
    ]);
    // Listed before anything else (initialize waits the same way; see the instructions test).
    let (session, _) = both.open_session();
    assert_ne!(
        both.engine()
            .backend("slow")
            .expect("configured")
            .status()
            .state,
        BackendState::Ready,
        "the list below is asked while the slow backend is still starting"
    );
    let first = listed_tools(&request(&session, json!(1), "tools/list", json!({})).await);
    assert!(
        first.iter().any(|name| name == "quick__echo")
            && first.iter().any(|name| name == "slow__echo"),
        "the first list is whole: {first:?}"
    );
    let again = listed_tools(&request(&session, json!(2), "tools/list", json!({})).await);
    assert_eq!(first, again, "the order of the tools is stable");
    both.shutdown().await;

    // A call to a starting backend's tool, before anything was listed, reaches it.
    let slow = hub(vec![misbehave("slow", &["--slow-start", "1500"])]);
    let (session, _) = slow.open_session();
    let call = request(
        &session,
        json!(3),
        "tools/call",
        json!({"name": "slow__echo", "arguments": {"text": "cold"}}),
    )
    .await;
    assert_eq!(call["result"]["content"][0]["text"], "cold", "{call}");
    let unknown = request(
        &session,
        json!(4),
        "tools/call",
        json!({"name": "nobody__echo", "arguments": {}}),
    )
    .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    slow.shutdown().await;
}

#[tokio::test]
async fn lists_never_wait_for_a_backend_in_backoff() {
    let mut failing = misbehave("failing", &["--exit-during-handshake", "3"]);
    failing.handshake_timeout = Duration::from_secs(600);
    failing.restart.backoff_base = Duration::from_secs(600);
    failing.restart.backoff_cap = Duration::from_secs(600);
    let hub = hub(vec![misbehave("quick", &[]), failing]);
    wait_state(
        &hub.engine().backend("failing").expect("configured"),
        BackendState::Backoff,
    )
    .await;
    let (session, _) = initialized(&hub, json!({})).await;
    // Answered at all within the test's limit, which is far below the backoff of 600 s.
    let listed = tokio::time::timeout(
        EVENT_LIMIT,
        request(&session, json!(1), "tools/list", json!({})),
    )
    .await
    .expect("the list does not wait for a backend in backoff");
    assert!(
        listed_tools(&listed)
            .iter()
            .any(|name| name == "quick__echo"),
        "{listed}"
    );
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

/// `config` with its questions put to the editor alone (`ask = "editor"`), as these tests of
/// what reaches editors need.
fn editor_asks(mut config: BackendConfig) -> BackendConfig {
    config.ask = Ask::Editor;
    config
}

#[tokio::test]
async fn servers_offer_what_editors_can_be_asked_and_requests_reach_only_editors_that_can_answer() {
    // server-everything offers its URL-elicitation tool only to clients that declare URL mode.
    // Only the editor asks here (`ask = "editor"`); the person answering instead is
    // `questions.rs`'s.
    let hub = hub(vec![editor_asks(everything("everything"))]);
    ready(&hub, "everything").await;
    let (form_only, _) = initialized(&hub, json!({"elicitation": {}})).await;
    let tools = listed_tools(&request(&form_only, json!(1), "tools/list", json!({})).await);
    assert!(
        tools
            .iter()
            .any(|name| name == "everything__trigger-url-elicitation"),
        "the server offers its URL-elicitation tool, since Switchboard can pass the request on: {tools:?}"
    );

    // An editor that declared form elicitation only is never shown a URL request.
    let arguments = json!({"url": "https://example.com/sign-in", "message": "Sign in"});
    let (answer, _) = start_call(
        &form_only,
        2,
        "everything__trigger-url-elicitation",
        arguments.clone(),
    )
    .await;
    let said = answer.to_string();
    assert!(
        said.contains("does not support URL-mode elicitation"),
        "the call ends with an error that says what the editor lacks: {said}"
    );

    // An editor that declared URL mode gets the request, and its answer reaches the server.
    let (with_url, _) = initialized(&hub, json!({"elicitation": {"form": {}, "url": {}}})).await;
    let (asked, mut rest) = start_call(
        &with_url,
        3,
        "everything__trigger-url-elicitation",
        arguments,
    )
    .await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["mode"], "url");
    assert_eq!(asked["params"]["url"], "https://example.com/sign-in");
    let accepted = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}});
    assert!(matches!(
        with_url.receive(accepted.to_string().as_bytes()),
        Inbound::Accepted
    ));
    let result = next_message(&mut rest).await;
    assert!(result["result"]["content"].is_array(), "{result}");
    assert_ne!(result["result"]["isError"], true, "{result}");
    hub.shutdown().await;
}

#[tokio::test]
async fn tasks_route_by_their_ids_alone() {
    let hub = hub(vec![everything("everything")]);
    ready(&hub, "everything").await;
    let (session, _) = initialized(&hub, json!({})).await;
    let started = request(
        &session,
        json!(1),
        "tools/call",
        json!({"name": "everything__simulate-research-query", "arguments": {"topic": "tides"}, "task": {"ttl": 60000}}),
    )
    .await;
    let task_id = started["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task was created: {started}"))
        .to_owned();
    assert!(
        task_id.starts_with("sb1.everything."),
        "the id names its backend: {task_id}"
    );

    let listed = request(&session, json!(2), "tasks/list", json!({})).await;
    let ids: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("a list: {listed}"))
        .iter()
        .filter_map(|task| task["taskId"].as_str())
        .collect();
    assert!(ids.contains(&task_id.as_str()), "{listed}");

    eventually("the task completes", EVENT_LIMIT, || async {
        let task = request(&session, json!(3), "tasks/get", json!({"taskId": task_id})).await;
        match task["result"]["status"].as_str() {
            Some("completed") => Ok(task),
            _ => Err(task),
        }
    })
    .await;
    let result = request(
        &session,
        json!(4),
        "tasks/result",
        json!({"taskId": task_id}),
    )
    .await;
    assert!(
        result["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("tides")),
        "{result}"
    );
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        json!(task_id),
        "ids in results are exposed too"
    );

    // A second task is cancelled through its exposed id.
    let second = request(
        &session,
        json!(5),
        "tools/call",
        json!({"name": "everything__simulate-research-query", "arguments": {"topic": "waves"}, "task": {"ttl": 60000}}),
    )
    .await;
    let second_id = second["result"]["task"]["taskId"]
        .as_str()
        .expect("a task id");
    let cancelled = request(
        &session,
        json!(6),
        "tasks/cancel",
        json!({"taskId": second_id}),
    )
    .await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["result"]["taskId"], second_id);

    // Ids Switchboard did not make get clear errors.
    let forged = request(
        &session,
        json!(7),
        "tasks/get",
        json!({"taskId": "made-up"}),
    )
    .await;
    assert_eq!(forged["error"]["code"], -32602, "{forged}");
    let elsewhere = request(
        &session,
        json!(8),
        "tasks/get",
        json!({"taskId": "sb1.nobody.1"}),
    )
    .await;
    assert_eq!(elsewhere["error"]["code"], -32602, "{elsewhere}");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_modern_servers_questions_reach_an_editor_of_the_session_era_as_requests() {
    let hub = hub(vec![editor_asks(sdk_server("modern", &["--modern-only"]))]);
    ready(&hub, "modern").await;
    let (editor, _) = initialized(&hub, json!({"elicitation": {}})).await;
    let (asked, mut rest) =
        start_call(&editor, 1, "modern__confirm", json!({"action": "deploy"})).await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["message"], "Do deploy?");
    accept(&editor, &asked, json!({"ok": true}));
    let result = next_message(&mut rest).await;
    assert_eq!(result["id"], 1);
    assert_eq!(
        first_text(&result["result"]),
        "confirmed deploy (state asked:deploy)",
        "the retry carried the answer and the server's own state: {result}"
    );

    let (declines, _) = initialized(&hub, json!({"elicitation": {}})).await;
    let (asked, mut rest) =
        start_call(&declines, 2, "modern__confirm", json!({"action": "drop"})).await;
    let declined = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}});
    drop(declines.receive(declined.to_string().as_bytes()));
    let asked_again = next_message(&mut rest).await;
    assert_eq!(
        asked_again["method"], "elicitation/create",
        "a server that still needs the answer asks again: {asked_again}"
    );

    let (mute, _) = initialized(&hub, json!({})).await;
    let answer = request(
        &mute,
        json!(3),
        "tools/call",
        json!({"name": "modern__confirm", "arguments": {"action": "x"}}),
    )
    .await;
    // The server is told what this editor declared, and refuses itself, naming what it needs.
    assert_eq!(answer["error"]["code"], -32021, "{answer}");
    assert!(
        answer["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{answer}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_tool_that_runs_only_as_a_task_answers_an_editor_that_holds_no_task() {
    let hub = hub(vec![everything("everything")]);
    ready(&hub, "everything").await;
    let (editor, _) = initialized(&hub, json!({"elicitation": {}})).await;
    // No `task` in the call: Switchboard makes the task and waits for its result. The server's
    // question, asked during the task, reaches the editor as a request of the call.
    let (asked, mut rest) = start_call(
        &editor,
        1,
        "everything__simulate-research-query",
        json!({"topic": "python", "ambiguous": true}),
    )
    .await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert!(
        asked["params"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("python")),
        "{asked}"
    );
    accept(&editor, &asked, json!({"interpretation": "snake"}));
    let result = next_message(&mut rest).await;
    assert_eq!(result["id"], 1, "{result}");
    let report = first_text(&result["result"]);
    assert!(
        report.contains("# Research Report: python (snake)"),
        "the answer reached the task: {report}"
    );
    assert!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"].is_null(),
        "the editor never saw the task, so the result does not name it: {result}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_modern_servers_task_is_polled_to_its_end_for_an_editor_of_the_session_era() {
    let hub = hub(vec![editor_asks(tasks_server("tasks"))]);
    ready(&hub, "tasks").await;
    let (editor, _) = initialized(&hub, json!({"elicitation": {}})).await;
    // The server makes a task, as the call now declares the extension; the task needs input,
    // which reaches the editor as a request, and its result is the call's answer.
    let (asked, mut rest) = start_call(&editor, 1, "tasks__report", json!({"title": "Q4"})).await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["message"], "Approve report Q4?");
    accept(&editor, &asked, json!({"name": "Ada"}));
    let result = next_message(&mut rest).await;
    assert_eq!(result["id"], 1, "{result}");
    assert_eq!(first_text(&result["result"]), "report Q4 approved by Ada");

    // An editor that cannot be asked gets a clear error, and the task is cancelled.
    let (mute, _) = initialized(&hub, json!({})).await;
    let answer = request(
        &mute,
        json!(2),
        "tools/call",
        json!({"name": "tasks__report", "arguments": {"title": "Q1"}}),
    )
    .await;
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("form elicitation")),
        "{answer}"
    );
    let backend = hub.engine().backend("tasks").expect("configured");
    let params = serde_json::value::to_raw_value(&json!({"taskId": "task-2"})).expect("JSON");
    eventually("the abandoned task is cancelled", EVENT_LIMIT, || async {
        let state = backend
            .request(&Method::TasksGet, Some(&params))
            .await
            .map(|state| json(&state));
        match &state {
            Ok(state) if state["status"] == "cancelled" => Ok(()),
            _ => Err(format!("{state:?}")),
        }
    })
    .await;
    hub.shutdown().await;
}

#[tokio::test]
async fn a_polled_tasks_result_reaches_the_editor_as_the_server_wrote_it() {
    let hub = hub(vec![tasks_server("tasks")]);
    ready(&hub, "tasks").await;
    let (editor, _) = initialized(&hub, json!({"elicitation": {}})).await;
    let arguments = json!({"title": "Q2", "figures": true});
    let (asked, mut rest) = start_call(&editor, 1, "tasks__report", arguments).await;
    accept(&editor, &asked, json!({"name": "Ada"}));
    let answer = tokio::time::timeout(EVENT_LIMIT, rest.recv())
        .await
        .expect("in time")
        .expect("the answer");
    let answer = String::from_utf8(answer.to_json()).expect("UTF-8");
    // `1.50` read as a number is `1.5`, and no double holds `1e400`: only the server's bytes
    // carry them.
    assert!(
        answer.contains(r#""structuredContent": {"total": 1.50, "huge": 1e400}"#),
        "{answer}"
    );
    assert!(answer.contains("report Q2 approved by Ada"), "{answer}");
    hub.shutdown().await;
}

#[tokio::test]
async fn listen_streams_are_bounded_and_a_closed_one_frees_its_place() {
    let hub = hub(vec![]);
    let listen = |id: usize| {
        json!({
            "jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
            "params": {
                "notifications": {"toolsListChanged": true},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        })
        .to_string()
    };
    let mut open = Vec::new();
    for id in 0..1000 {
        match hub.receive_stateless(listen(id).as_bytes(), None, "default") {
            Inbound::Request(reply) => open.push(reply),
            _ => panic!("listen {id} is refused"),
        }
    }
    let Inbound::Rejected(refused) =
        hub.receive_stateless(listen(1000).as_bytes(), None, "default")
    else {
        panic!("the listen over the bound is taken");
    };
    let refused: Value = serde_json::from_slice(&refused.to_json()).expect("JSON");
    assert!(
        refused["error"]["message"]
            .as_str()
            .expect("a message")
            .contains("listen streams are open already"),
        "{refused}"
    );
    // Dropping a stream's receiver closes it; its place is free once its task has seen that.
    drop(open.pop());
    eventually("a freed place", EVENT_LIMIT, || async {
        match hub.receive_stateless(listen(1001).as_bytes(), None, "default") {
            Inbound::Request(reply) => Ok(reply),
            _ => Err("still refused"),
        }
    })
    .await;
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

#[tokio::test]
async fn switchboard_holds_the_tasks_a_server_asks_it_to_run_and_the_editor_answers_them() {
    let hub = hub(vec![everything("everything")]);
    ready(&hub, "everything").await;
    let (editor, _) = initialized(&hub, json!({"sampling": {}, "elicitation": {}})).await;
    let tools = listed_tools(&request(&editor, json!(1), "tools/list", json!({})).await);
    assert!(
        tools.contains(&"everything__trigger-sampling-request-async".to_owned()),
        "the server offers its task tools, as Switchboard declares tasks: {tools:?}"
    );

    // The server sends sampling with a task; Switchboard answers the handle, asks the editor,
    // and the server polls until the editor's answer is the task's result.
    let (asked, mut rest) = start_call(
        &editor,
        2,
        "everything__trigger-sampling-request-async",
        json!({"prompt": "hi", "maxTokens": 5}),
    )
    .await;
    assert_eq!(asked["method"], "sampling/createMessage", "{asked}");
    assert!(
        asked["params"]["task"].is_null(),
        "the editor is not asked to hold a task: {asked}"
    );
    let sampled = json!({
        "jsonrpc": "2.0", "id": asked["id"],
        "result": {"role": "assistant", "content": {"type": "text", "text": "a sampled answer"}, "model": "m"},
    });
    assert!(matches!(
        editor.receive(sampled.to_string().as_bytes()),
        Inbound::Accepted
    ));
    let result = next_message(&mut rest).await;
    let text = first_text(&result["result"]);
    assert!(
        text.starts_with("[COMPLETED] Async sampling completed!"),
        "{text}"
    );
    assert!(
        text.contains("a sampled answer"),
        "the editor's answer is the result: {text}"
    );
    assert!(text.contains("Task created"), "{text}");

    // The same with elicitation, and an editor that declines.
    let (asked, mut rest) = start_call(
        &editor,
        3,
        "everything__trigger-elicitation-request-async",
        json!({}),
    )
    .await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let declined = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}});
    drop(editor.receive(declined.to_string().as_bytes()));
    let result = next_message(&mut rest).await;
    let text = result["result"]["content"].to_string();
    assert!(text.contains("[DECLINED]"), "{text}");
    assert!(
        !text.contains("[SYNC]"),
        "a task, not an answer at once: {text}"
    );

    // An editor that cannot sample: the server learns at once, and no task is made.
    let (mute, _) = initialized(&hub, json!({})).await;
    let answer = request(
        &mute,
        json!(4),
        "tools/call",
        json!({"name": "everything__trigger-sampling-request-async", "arguments": {"prompt": "x"}}),
    )
    .await;
    assert!(
        answer.to_string().contains("does not support sampling"),
        "the server reports the refusal: {answer}"
    );
    hub.shutdown().await;
}
