//! What a caller asks for, and how each answer is judged: its own result, or a clear JSON-RPC
//! error of the kind the fault explains.

use std::time::Duration;

use rand::RngExt;
use rand::rngs::StdRng;
use serde_json::{Value, json};
use wire::jsonrpc;

use super::{BACKENDS, MISBEHAVING};

/// What one call asks, and what its answer must say.
#[derive(Debug)]
pub(super) struct Plan {
    backend: &'static str,
    pub(super) tool: &'static str,
    arguments: Value,
    /// The text of its result; `None` for a call that can only end in an error.
    expected: Option<String>,
    /// Whether the call asks for progress.
    pub(super) progress: bool,
    /// The client gives up after this long: drops the HTTP request, or cancels through connect.
    pub(super) abandon_after: Option<Duration>,
}

impl Plan {
    pub(super) fn echo(backend: &'static str, text: String) -> Plan {
        Plan {
            backend,
            tool: "echo",
            arguments: json!({ "text": text }),
            expected: Some(text),
            progress: false,
            abandon_after: None,
        }
    }

    pub(super) fn slow(backend: &'static str, ms: u64, text: String, progress: bool) -> Plan {
        Plan {
            backend,
            tool: "slow",
            arguments: json!({ "ms": ms, "text": text }),
            expected: Some(format!("slept {ms} {text}")),
            progress,
            abandon_after: None,
        }
    }

    pub(super) fn stderr_flood(backend: &'static str, lines: u64) -> Plan {
        Plan {
            backend,
            tool: "stderr",
            arguments: json!({ "lines": lines }),
            expected: Some(format!("wrote {lines}")),
            progress: false,
            abandon_after: None,
        }
    }

    pub(super) fn garbage(backend: &'static str) -> Plan {
        Plan {
            backend,
            tool: "garbage",
            arguments: json!({}),
            expected: Some("after garbage".to_owned()),
            progress: false,
            abandon_after: None,
        }
    }

    /// Mostly echoes to any backend, then slow calls (half of them with progress), a few calls
    /// the client abandons, and a few that never get an answer from the backend.
    pub(super) fn random(rng: &mut StdRng, client: &str) -> Plan {
        let text = format!("{client}-{:016x}", rng.random::<u64>());
        let misbehaving = MISBEHAVING[rng.random_range(0..MISBEHAVING.len())];
        match rng.random_range(0..100) {
            0..70 => Plan::echo(BACKENDS[rng.random_range(0..BACKENDS.len())], text),
            70..94 => {
                let ms = rng.random_range(20..1000);
                Plan::slow(misbehaving, ms, text, rng.random_bool(0.5))
            }
            94..97 => Plan {
                abandon_after: Some(Duration::from_millis(rng.random_range(10..300))),
                ..Plan::slow(misbehaving, rng.random_range(300..1500), text, false)
            },
            _ => Plan {
                backend: misbehaving,
                tool: "hang",
                arguments: json!({}),
                expected: None,
                progress: false,
                abandon_after: None,
            },
        }
    }

    /// Its `tools/call` line.
    pub(super) fn request(&self, id: u64, progress_token: Option<&str>) -> String {
        let mut params = json!({
            "name": format!("{}__{}", self.backend, self.tool),
            "arguments": self.arguments,
        });
        if let Some(token) = progress_token {
            params["_meta"] = json!({ "progressToken": token });
        }
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }).to_string()
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Outcome {
    Ok,
    Failed(ErrorKind),
    /// Its client gave up on it on purpose.
    Abandoned,
    /// Its `connect` process was killed by a fault.
    Disconnected,
    /// It broke an invariant (reported as a violation).
    Violation,
}

/// What a JSON-RPC error says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum ErrorKind {
    /// -32001 naming how the backend ended with the call in flight (exited, closed, stopping).
    BackendEnded,
    /// -32001 otherwise: the backend was not ready (restarting, starting, down).
    BackendDown,
    /// -32004: no answer within the request timeout.
    Timeout,
    /// -32603 "ended without a response": its session closed with the call in flight.
    SessionClosed,
    /// -32600 about the session: it was deleted before the call.
    SessionGone,
}

impl ErrorKind {
    /// The kind of an error, if it is one that faults explain.
    fn of(code: i64, message: &str) -> Option<ErrorKind> {
        match code {
            jsonrpc::BACKEND_UNAVAILABLE if message.contains("before answering") => {
                Some(ErrorKind::BackendEnded)
            }
            jsonrpc::BACKEND_UNAVAILABLE => Some(ErrorKind::BackendDown),
            jsonrpc::REQUEST_TIMEOUT => Some(ErrorKind::Timeout),
            jsonrpc::INTERNAL_ERROR if message.contains("without a response") => {
                Some(ErrorKind::SessionClosed)
            }
            jsonrpc::INVALID_REQUEST if message.contains("session") => Some(ErrorKind::SessionGone),
            _ => None,
        }
    }

    pub(super) fn label(self) -> &'static str {
        match self {
            ErrorKind::BackendEnded => "backend ended mid-call (-32001)",
            ErrorKind::BackendDown => "backend not ready (-32001)",
            ErrorKind::Timeout => "timeout (-32004)",
            ErrorKind::SessionClosed => "session closed mid-call (-32603)",
            ErrorKind::SessionGone => "session deleted (-32600)",
        }
    }
}

/// Judges everything a call received: exactly one response, to this call, with this call's
/// text or a clear JSON-RPC error, and progress only with this call's token.
pub(super) fn judge(
    plan: &Plan,
    id: u64,
    token: Option<&str>,
    messages: &[Value],
) -> Result<(Outcome, Option<String>), String> {
    let mut response = None;
    for message in messages {
        if message.get("method").is_some() {
            let progress_token = message["params"]["progressToken"].as_str();
            if message["method"] == "notifications/progress" && progress_token != token {
                return Err(format!("progress of another call: {message}"));
            }
        } else if response.replace(message).is_some() {
            return Err(format!("answered twice: {messages:?}"));
        }
    }
    let Some(response) = response else {
        return Err(format!(
            "no response among {} messages; the last: {:?}",
            messages.len(),
            messages.last()
        ));
    };
    if response["id"] != json!(id) {
        return Err(format!("the answer to id {id} is for another: {response}"));
    }
    if let Some(error) = response.get("error") {
        let (Some(code), Some(message)) = (error["code"].as_i64(), error["message"].as_str())
        else {
            return Err(format!("an error without code and message: {response}"));
        };
        return match ErrorKind::of(code, message) {
            Some(kind) => Ok((Outcome::Failed(kind), Some(message.to_owned()))),
            None => Err(format!("an error that no fault explains: {response}")),
        };
    }
    let text = response["result"]["content"][0]["text"].as_str();
    match &plan.expected {
        Some(expected)
            if text == Some(expected.as_str()) && response["result"]["isError"] != true =>
        {
            Ok((Outcome::Ok, None))
        }
        _ => Err(format!("expected {:?}, got {response}", plan.expected)),
    }
}
