//! The 2026-07-28 path of the hub (`crates/hub/src/stateless/`: `mod.rs`, `headers.rs`,
//! `request_state.rs`): a message with arbitrary `Mcp-*` headers, taken by a real hub with no
//! backends. The input's first line gives the headers, `|`-separated (version, method, name, then
//! `param=value` pairs); the rest is the message. A second message is made from it with an
//! arbitrary `requestState` spliced into a `tools/call`.
//!
//! Invariants: nothing panics; every message gets exactly one answer, which is one JSON-RPC
//! response; an error's code is one the path gives, never -32002 (which 2026-07-28 forbids);
//! a `tools/call` carrying an arbitrary `requestState` gets -32602 (refused when the state claims
//! to be Switchboard's; for want of the tool otherwise, since no backend runs).

#![no_main]

use std::sync::OnceLock;

use hub::{Hub, HubOptions, Inbound, RequestHeaders};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use supervisor::spawn::ProcessGroups;

/// The codes a 2026-07-28 request may be answered with when nothing behind the hub runs.
const CODES: [i64; 10] = [
    -32700, -32600, -32601, -32602, -32603, -32001, -32004, -32020, -32021, -32022,
];

struct Fixture {
    runtime: tokio::runtime::Runtime,
    hub: Hub,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let hub = runtime.block_on(async {
            let (_engine, hub) = hub::start(
                Vec::new(),
                ProcessGroups::in_memory(),
                HubOptions::default(),
            );
            hub
        });
        Fixture { runtime, hub }
    })
}

fuzz_target!(|input: &str| {
    let (first, message) = input.split_once('\n').unwrap_or((input, ""));
    let mut fields = first.split('|');
    let mut header = || fields.next().map(|value| value.as_bytes().to_vec());
    let headers = RequestHeaders {
        protocol_version: header(),
        method: header(),
        name: header(),
        params: first
            .split('|')
            .skip(3)
            .filter_map(|pair| pair.split_once('='))
            .map(|(name, value)| (name.to_ascii_lowercase(), value.as_bytes().to_vec()))
            .collect(),
    };
    let fixture = fixture();
    check(fixture, message.as_bytes(), Some(&headers));
    check(fixture, message.as_bytes(), None);

    let state = serde_json::to_string(first).expect("a string");
    let retry = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x__y","requestState":{state},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    );
    let answer = check(fixture, retry.as_bytes(), None).expect("a request is answered");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
});

/// Hands `message` to the hub when it takes the 2026-07-28 path; returns its one answer.
fn check(fixture: &Fixture, message: &[u8], headers: Option<&RequestHeaders>) -> Option<Value> {
    if !hub::is_stateless(message) {
        return None;
    }
    let answer = fixture.runtime.block_on(async {
        match fixture.hub.receive_stateless(message, headers, "default") {
            Inbound::Rejected(error) => error.to_json(),
            Inbound::Accepted => panic!("a request was taken as a notification"),
            // The answer is the response; a listen stream that opens answers with its
            // acknowledgement first, and is closed by dropping it.
            Inbound::Request(mut reply) => loop {
                let message = reply.messages.recv().await.expect("an answer").to_json();
                let value: Value = serde_json::from_slice(&message).expect("JSON");
                if value.get("id").is_some()
                    || value["method"] == "notifications/subscriptions/acknowledged"
                {
                    break message;
                }
            },
        }
    });
    let answer: Value = serde_json::from_slice(&answer).expect("an answer is JSON");
    if answer["method"] == "notifications/subscriptions/acknowledged" {
        return Some(answer);
    }
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    if let Some(error) = answer.get("error") {
        let code = error["code"].as_i64().expect("an integer code");
        assert!(CODES.contains(&code), "unexpected code: {answer}");
        assert!(error["message"].is_string(), "{answer}");
    } else {
        assert!(answer.get("result").is_some(), "{answer}");
    }
    Some(answer)
}
