//! The 2026-07-28 path of `/mcp` over real HTTP, with the real server-everything behind it:
//! `server/discover`, stamped results, the header rules, errors with their codes and statuses,
//! multi-round-trip requests over a session-era backend, and listen streams. This file holds the
//! client the tests (and other modules' tests) speak 2026-07-28 with; the tests are in the
//! modules below, by topic.

mod discovery;
mod everything;
mod listen;
mod questions;
mod tasks;

use serde_json::{Value, json};

use crate::support::ServeProcess;

const VERSION: &str = "2026-07-28";

/// A 2026-07-28 request: `params` with the envelope added to its `_meta`.
pub(crate) fn request(id: u64, method: &str, mut params: Value, capabilities: Value) -> Value {
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(VERSION);
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    params["_meta"]["io.modelcontextprotocol/clientInfo"] = json!({"name": "it", "version": "1"});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The answer to one POST: status, `Mcp-Session-Id` if any, and the JSON body (or the SSE
/// events' messages).
pub(crate) struct Answer {
    pub(crate) status: u16,
    session: Option<String>,
    pub(crate) messages: Vec<Value>,
}

impl Answer {
    pub(crate) fn last(&self) -> &Value {
        self.messages.last().expect("at least one message")
    }
}

/// POSTs `body` with the headers a conforming client sends (method, name or URI, version),
/// then `extra`, which replace them.
pub(crate) async fn post(serve: &ServeProcess, body: &Value, extra: &[(&str, &str)]) -> Answer {
    post_to(serve, "/mcp", body, extra).await
}

/// [`post`] to `path`, `/mcp/PROFILE` say.
pub(crate) async fn post_to(
    serve: &ServeProcess,
    path: &str,
    body: &Value,
    extra: &[(&str, &str)],
) -> Answer {
    let response = send_to(serve, path, body, extra).await;
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|value| value.to_str().expect("ASCII").to_owned());
    let streamed = response
        .headers()
        .get("content-type")
        .is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"));
    let text = response.text().await.expect("a body");
    let messages = if streamed {
        sse_messages(&text)
    } else {
        vec![serde_json::from_str(&text).expect("a JSON body")]
    };
    Answer {
        status,
        session,
        messages,
    }
}

/// [`post_to`]'s request, answered with the HTTP response, for tests that read its body as text.
pub(crate) async fn send_to(
    serve: &ServeProcess,
    path: &str,
    body: &Value,
    extra: &[(&str, &str)],
) -> reqwest::Response {
    let mut headers = vec![("mcp-protocol-version".to_owned(), VERSION.to_owned())];
    if let Some(method) = body["method"].as_str() {
        headers.push(("mcp-method".to_owned(), method.to_owned()));
    }
    let name = body["params"]["name"]
        .as_str()
        .or(body["params"]["uri"].as_str())
        .or(body["params"]["taskId"].as_str());
    if let Some(name) = name {
        headers.push(("mcp-name".to_owned(), name.to_owned()));
    }
    for (name, value) in extra {
        headers.retain(|(existing, _)| existing != name);
        if !value.is_empty() {
            headers.push(((*name).to_owned(), (*value).to_owned()));
        }
    }
    let mut builder = serve
        .client()
        .post(serve.http_url(path))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in &headers {
        builder = builder.header(name, value);
    }
    builder
        .body(body.to_string())
        .send()
        .await
        .expect("POST /mcp")
}

/// The status of an error answer, its code and the id it answers.
fn status_code_id(answer: &Answer) -> (u16, Value, Value) {
    let message = answer.last();
    (
        answer.status,
        message["error"]["code"].clone(),
        message["id"].clone(),
    )
}

fn sse_messages(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            (!data.is_empty()).then(|| serde_json::from_str(&data.join("\n")).expect("JSON data"))
        })
        .collect()
}

/// A listen stream over HTTP, read one message at a time.
pub(crate) struct Listen {
    response: reqwest::Response,
    seen: String,
}

impl Listen {
    /// POSTs the listen request `body`; the stream must open with 200.
    async fn open(serve: &ServeProcess, body: &Value) -> Listen {
        Listen::open_at(serve, "/mcp", body).await
    }

    /// [`Listen::open`] at `path`, `/mcp/PROFILE` say.
    pub(crate) async fn open_at(serve: &ServeProcess, path: &str, body: &Value) -> Listen {
        let response = serve
            .client()
            .post(serve.http_url(path))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", VERSION)
            .header("mcp-method", "subscriptions/listen")
            .body(body.to_string())
            .send()
            .await
            .expect("POST listen");
        assert_eq!(response.status().as_u16(), 200);
        Listen {
            response,
            seen: String::new(),
        }
    }

    /// Opens the listen `id` for updates of `uri`, which its acknowledgement must name.
    async fn for_resource(serve: &ServeProcess, id: u64, uri: &str) -> Listen {
        let notifications = json!({"notifications": {"resourceSubscriptions": [uri]}});
        let listen = request(id, "subscriptions/listen", notifications, json!({}));
        let mut stream = Listen::open(serve, &listen).await;
        let acknowledged = stream.next().await;
        assert_eq!(
            acknowledged["params"]["notifications"]["resourceSubscriptions"],
            json!([uri]),
            "{acknowledged}"
        );
        stream
    }

    /// The stream's next message; a minute of silence fails the test.
    pub(crate) async fn next(&mut self) -> Value {
        loop {
            if let Some(end) = self.seen.find("\n\n") {
                let event: String = self.seen.drain(..end + 2).collect();
                if let Some(message) = sse_messages(&event).pop() {
                    return message;
                }
                continue;
            }
            let chunk =
                tokio::time::timeout(std::time::Duration::from_secs(60), self.response.chunk())
                    .await
                    .expect("the listen stream stayed silent for a minute")
                    .expect("the stream")
                    .expect("more");
            self.seen
                .push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
        }
    }
}

/// A 2026-07-28 request `method` about `task`, with `extra` params.
pub(crate) fn about_task(
    id: u64,
    method: &str,
    task: &str,
    extra: Value,
    capabilities: &Value,
) -> Value {
    let mut params = json!({"taskId": task});
    if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
        params.extend(extra.clone());
    }
    request(id, method, params, capabilities.clone())
}

pub(crate) fn call(id: u64, tool: &str, arguments: Value, capabilities: Value) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
        capabilities,
    )
}

/// The one question of an `input_required` result: its key and request.
pub(crate) fn only_question(result: &Value) -> (String, Value) {
    let (key, asked) = result["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("input requests in {result}"))
        .iter()
        .next()
        .expect("one question");
    (key.clone(), asked.clone())
}
