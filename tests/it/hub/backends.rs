//! Backends that are down, stopped, starting or in backoff: what a call and a list meet.

use std::time::Duration;

use crate::support::*;
use hub::HubOptions;
use serde_json::json;
use supervisor::status::BackendState;

use super::{Wired, hub, initialized, listed_tools, next_event, ready, request};

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
