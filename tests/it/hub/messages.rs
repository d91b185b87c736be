//! What passes between servers and editors beside calls: a server's requests and questions to
//! the right editor, list changes and updates, completion and log levels, listen streams.

use crate::support::*;
use hub::Inbound;
use serde_json::{Value, json};

use super::{
    accept, approve_when_held, editor_asks, hub, initialized, listed_tools, next_event,
    next_message, ready, request, start_call,
};

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
