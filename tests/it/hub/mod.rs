//! The hub through its session API, against real backend processes. This file holds the
//! wiring and the exchanges the tests share; the tests are in the modules below, by topic.

mod backends;
mod messages;
mod sessions;
mod tasks;

use std::ops::Deref;
use std::sync::Arc;

use crate::support::*;
use config::{Ask, BackendConfig};
use hub::{Hub, HubOptions, Inbound, Reply, Session, SessionEvents};
use serde_json::{Value, json};
use supervisor::Engine;
use supervisor::spawn::ProcessGroups;
use supervisor::status::BackendState;

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

/// The names in a `tools/list` answer, in order.
fn listed_tools(answer: &Value) -> Vec<String> {
    answer["result"]["tools"]
        .as_array()
        .expect("a tools/list result")
        .iter()
        .map(|tool| tool["name"].as_str().expect("a name").to_owned())
        .collect()
}

/// `config` with its questions put to the editor alone (`ask = "editor"`), as these tests of
/// what reaches editors need.
fn editor_asks(mut config: BackendConfig) -> BackendConfig {
    config.ask = Ask::Editor;
    config
}
