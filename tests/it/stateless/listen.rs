//! Listen streams: acknowledged, then told of list changes, progress, logs and resource
//! updates as the client asked.

use serde_json::{Value, json};

use super::{Answer, Listen, call, post, request};
use crate::backend_era::listened_for;
use crate::support::{ServeProcess, ServedBackend, first_text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_stream_is_acknowledged_then_told_of_list_changes() {
    let serve = ServeProcess::start(&[ServedBackend::Misbehave]);
    let listen = request(
        9,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "promptsListChanged": false}}),
        json!({}),
    );
    let mut stream = Listen::open(&serve, &listen).await;
    let acknowledged = stream.next().await;
    assert_eq!(
        acknowledged["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert_eq!(
        acknowledged["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        9
    );
    assert_eq!(
        acknowledged["params"]["notifications"]["toolsListChanged"],
        true
    );
    assert_eq!(
        acknowledged["params"]["notifications"]["promptsListChanged"],
        false
    );

    let changed = post(
        &serve,
        &call(10, "mis__change_tools", json!({}), json!({})),
        &[],
    )
    .await;
    assert_eq!(
        changed.last()["result"]["resultType"],
        "complete",
        "{}",
        changed.last()
    );
    // A tool added by a server that has pins is offered once approved.
    serve.approve_when_held("mis", "added_later").await;
    // A rebuild of the catalog already under way may announce itself first: each announcement
    // is checked, until the list has the new tool.
    for id in 11.. {
        let changed = stream.next().await;
        assert_eq!(changed["method"], "notifications/tools/list_changed");
        assert_eq!(
            changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            9
        );
        let tools = post(
            &serve,
            &request(id, "tools/list", json!({}), json!({})),
            &[],
        )
        .await;
        let listed = tools.last()["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .any(|tool| tool["name"] == "mis__added_later");
        if listed {
            break;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_logs_and_resource_updates_reach_a_2026_client_as_it_asked() {
    let serve = ServeProcess::start(&[ServedBackend::Misbehave]);

    let mut slow = call(1, "mis__slow", json!({"ms": 300}), json!({}));
    slow["params"]["_meta"]["progressToken"] = json!("p1");
    let answer = post(&serve, &slow, &[]).await;
    let progress: Vec<&Value> = answer
        .messages
        .iter()
        .filter(|message| message["method"] == "notifications/progress")
        .collect();
    assert!(!progress.is_empty(), "{:?}", answer.messages);
    assert!(
        progress
            .iter()
            .all(|note| note["params"]["progressToken"] == "p1")
    );
    assert_eq!(answer.last()["result"]["content"][0]["text"], "slept 300");

    let logged = |id: u64, level: Option<&str>| {
        let mut request = call(id, "mis__log", json!({"text": "hello"}), json!({}));
        if let Some(level) = level {
            request["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!(level);
        }
        request
    };
    let logs = |answer: &Answer| -> Vec<Value> {
        answer
            .messages
            .iter()
            .filter(|message| message["method"] == "notifications/message")
            .map(|message| message["params"]["data"].clone())
            .collect()
    };
    let info = post(&serve, &logged(2, Some("info")), &[]).await;
    assert_eq!(logs(&info), [json!("hello")], "{:?}", info.messages);
    assert_eq!(info.last()["result"]["resultType"], "complete");
    let above = post(&serve, &logged(3, Some("error")), &[]).await;
    assert!(
        logs(&above).is_empty(),
        "below the level asked: {:?}",
        above.messages
    );
    let none = post(&serve, &logged(4, None), &[]).await;
    assert!(
        logs(&none).is_empty(),
        "no level, no logs: {:?}",
        none.messages
    );
    let bad = post(&serve, &logged(5, Some("loud")), &[]).await;
    assert_eq!(
        (bad.status, &bad.last()["error"]["code"]),
        (400, &json!(-32602))
    );

    let mut stream = Listen::for_resource(&serve, 6, "test://a").await;
    let other = post(
        &serve,
        &call(7, "mis__update", json!({"uri": "test://b"}), json!({})),
        &[],
    )
    .await;
    assert_eq!(other.last()["result"]["resultType"], "complete");
    let updated = post(
        &serve,
        &call(8, "mis__update", json!({"uri": "test://a"}), json!({})),
        &[],
    )
    .await;
    assert_eq!(updated.last()["result"]["resultType"], "complete");
    let update = stream.next().await;
    assert_eq!(update["method"], "notifications/resources/updated");
    assert_eq!(
        update["params"]["uri"], "test://a",
        "test://b was not asked for: {update}"
    );
    assert_eq!(
        update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        6
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_naming_a_modern_servers_resource_is_carried_by_that_servers_listen() {
    let serve = ServeProcess::start(&[ServedBackend::SdkModernOnly]);
    let mut stream = Listen::for_resource(&serve, 1, "sdk://greeting").await;
    listened_for(&serve, "modern", "sdk://greeting").await;
    let touched = post(&serve, &call(2, "modern__touch", json!({}), json!({})), &[]).await;
    assert_eq!(first_text(&touched.last()["result"]), "touched");
    let update = stream.next().await;
    assert_eq!(
        update,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {
            "uri": "sdk://greeting", "_meta": {"io.modelcontextprotocol/subscriptionId": 1},
        }})
    );

    // Once the stream is closed, the server's listen names the resource no more.
    drop(stream);
    listened_for(&serve, "modern", "").await;
}
