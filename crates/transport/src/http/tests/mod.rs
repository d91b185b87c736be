mod guard;
mod http_sse;
mod listener;
mod streamable;

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;
use tower::ServiceExt;

use super::sessions::DEFAULT_SESSION_IDLE_TIMEOUT;
use super::*;
use crate::guard::constant_time_eq;
use config::BackendConfig;
use hub::{HubOptions, Inbound};
use supervisor::status::BackendState;

/// Generous bound for an event that should come within milliseconds.
const EVENT_LIMIT: Duration = Duration::from_secs(20);
const PORT: u16 = 4242;
const BOTH: &str = "application/json, text/event-stream";
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#;
const INITIALIZE_2024: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn hub(configs: Vec<BackendConfig>) -> Hub {
    hub::start(
        configs,
        supervisor::spawn::ProcessGroups::in_memory(),
        HubOptions::default(),
    )
    .1
}

fn options() -> HttpOptions {
    HttpOptions {
        port: PORT,
        token: EndpointToken::default(),
        max_body_size: 64 * 1024,
        extra_origins: Vec::new(),
    }
}

fn loopback() -> String {
    format!("127.0.0.1:{PORT}")
}

/// A hub over the misbehaving test server, once the hub lists its tools.
/// Approves `key` of `server` once it is held back (a tool added by a server that has pins).
async fn approve_when_held(hub: &Hub, server: &str, key: &str) {
    let deadline = Instant::now() + EVENT_LIMIT;
    while !hub
        .pins()
        .report()
        .held
        .iter()
        .any(|held| held.server == server && held.key == key)
    {
        assert!(
            Instant::now() < deadline,
            "{key} of {server} was never held"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    hub.pins()
        .approve(server, Some(&[key.to_owned()]), None)
        .expect("approved");
}

async fn misbehave_hub() -> Hub {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/backends/misbehave.py"
    );
    let mut config = BackendConfig::new("mis", "python3", vec![script.to_owned()]);
    config.handshake_timeout = Duration::from_secs(10);
    let (engine, hub) = hub::start(
        vec![config],
        supervisor::spawn::ProcessGroups::in_memory(),
        HubOptions::default(),
    );
    let mut status = engine.backend("mis").expect("configured").watch_status();
    tokio::time::timeout(
        EVENT_LIMIT,
        status.wait_for(|s| s.state == BackendState::Ready),
    )
    .await
    .expect("the backend is ready in time")
    .expect("the backend task lives");
    // The catalog is merged a moment later; an initialized session hears when it changes.
    let (session, mut events) = hub.open_session();
    let exchange = |message: &str| {
        let Inbound::Request(mut reply) = session.receive(message.as_bytes()) else {
            panic!("a request");
        };
        async move {
            let mut last = None;
            while let Some(message) = reply.messages.recv().await {
                last = Some(message);
            }
            String::from_utf8(last.expect("a response").to_json()).expect("UTF-8")
        }
    };
    exchange(INITIALIZE).await;
    session.receive(INITIALIZED.as_bytes());
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    while !exchange(list).await.contains("mis__slow") {
        tokio::time::timeout(EVENT_LIMIT, events.recv())
            .await
            .expect("the catalog changes in time")
            .expect("the session is open");
    }
    hub.close_session(session.id());
    hub
}

async fn send(app: &Router, request: Request) -> Response {
    app.clone().oneshot(request).await.expect("infallible")
}

fn with_headers(method: Method, headers: &[(&str, &str)], body: &str) -> Request {
    with_uri(method, MCP_PATH, headers, body)
}

fn with_uri(method: Method, uri: &str, headers: &[(&str, &str)], body: &str) -> Request {
    let mut builder = Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder
        .body(Body::from(body.to_owned()))
        .expect("a valid request")
}

fn post(session: Option<&str>, accept: &str, body: &str) -> Request {
    let host = loopback();
    let mut headers = vec![
        ("host", host.as_str()),
        ("content-type", "application/json"),
        ("accept", accept),
    ];
    if let Some(session) = session {
        headers.push(("mcp-session-id", session));
    }
    with_headers(Method::POST, &headers, body)
}

fn get_stream(session: &str) -> Request {
    with_headers(
        Method::GET,
        &[
            ("host", &loopback()),
            ("accept", "text/event-stream"),
            ("mcp-session-id", session),
        ],
        "",
    )
}

/// A `GET` that resumes after the event `last_event_id`.
fn resume_stream(session: &str, last_event_id: &str) -> Request {
    with_headers(
        Method::GET,
        &[
            ("host", &loopback()),
            ("accept", "text/event-stream"),
            ("mcp-session-id", session),
            ("last-event-id", last_event_id),
        ],
        "",
    )
}

fn delete(session: &str) -> Request {
    with_headers(
        Method::DELETE,
        &[("host", &loopback()), ("mcp-session-id", session)],
        "",
    )
}

fn ping(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string()
}

async fn body_bytes(response: Response) -> Bytes {
    tokio::time::timeout(EVENT_LIMIT, response.into_body().collect())
        .await
        .expect("the body ends in time")
        .expect("a readable body")
        .to_bytes()
}

async fn body_json(response: Response) -> Value {
    let bytes = body_bytes(response).await;
    serde_json::from_slice(&bytes).unwrap_or_else(|_| panic!("JSON body: {bytes:?}"))
}

fn content_type(response: &Response) -> &str {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
}

/// Opens a session over HTTP and returns its id.
async fn initialize(app: &Router) -> String {
    initialize_as(app, INITIALIZE).await
}

/// Opens a session with the `initialize` request `request`.
async fn initialize_as(app: &Router, request: &str) -> String {
    let response = send(app, post(None, BOTH, request)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        content_type(&response),
        "application/json",
        "initialize is answered as JSON"
    );
    let session = response
        .headers()
        .get(MCP_SESSION_ID)
        .expect("a session id")
        .to_str()
        .expect("visible ASCII")
        .to_owned();
    let answer = body_json(response).await;
    assert_eq!(answer["id"], 0);
    let asked: Value = serde_json::from_str(request).expect("JSON");
    assert_eq!(
        answer["result"]["protocolVersion"],
        asked["params"]["protocolVersion"]
    );
    let response = send(app, post(Some(&session), BOTH, INITIALIZED)).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    session
}

/// Reads the `message` events of an SSE body.
struct SseReader {
    body: Body,
    buffer: String,
    /// The ids of the events read, in turn, those of events without data included.
    ids: Vec<String>,
    /// The last `retry` the stream sent, in milliseconds.
    retry: Option<u64>,
}

impl SseReader {
    fn new(response: Response) -> SseReader {
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(content_type(&response), "text/event-stream");
        SseReader {
            body: response.into_body(),
            buffer: String::new(),
            ids: Vec::new(),
            retry: None,
        }
    }

    /// The next message, or `None` when the stream ends.
    async fn next(&mut self) -> Option<Value> {
        let (event, data) = self.next_event().await?;
        assert_eq!(event, "message", "{data:?}");
        Some(serde_json::from_str(&data).expect("JSON data"))
    }

    /// The next event's type and data, or `None` when the stream ends.
    async fn next_event(&mut self) -> Option<(String, String)> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                if let Some(id) = block.lines().find_map(|line| line.strip_prefix("id: ")) {
                    self.ids.push(id.to_owned());
                }
                if let Some(retry) = block.lines().find_map(|line| line.strip_prefix("retry: ")) {
                    self.retry = Some(retry.parse().expect("retry in milliseconds"));
                }
                let data: Vec<&str> = block
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(|data| data.strip_prefix(' ').unwrap_or(data))
                    .collect();
                if data.concat().is_empty() {
                    continue; // a keep-alive comment, or a priming event
                }
                let event = block
                    .lines()
                    .find_map(|line| line.strip_prefix("event: "))
                    .unwrap_or("")
                    .to_owned();
                return Some((event, data.join("\n")));
            }
            let frame = tokio::time::timeout(EVENT_LIMIT, self.body.frame())
                .await
                .expect("an event in time")?
                .expect("a readable body");
            if let Ok(data) = frame.into_data() {
                self.buffer
                    .push_str(std::str::from_utf8(&data).expect("UTF-8"));
            }
        }
    }
}

/// A request the handler refuses without asking the hub (DELETE without a session), so that
/// getting its 400 proves the guard let it through.
fn probe(headers: &[(&str, &str)]) -> Request {
    with_headers(Method::DELETE, headers, "")
}

async fn assert_reaches_handler(app: &Router, request: Request) {
    let response = send(app, request).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_no_cors(&response);
    let body = body_json(response).await;
    assert_eq!(body["jsonrpc"], "2.0", "the handler answered: {body}");
}

async fn assert_refused(app: &Router, request: Request, status: StatusCode, code: &str) {
    let response = send(app, request).await;
    assert_eq!(response.status(), status);
    assert_no_cors(&response);
    assert_eq!(content_type(&response), "application/json");
    let body = body_json(response).await;
    assert_eq!(body["code"], code, "{body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
}

fn assert_no_cors(response: &Response) {
    let cors: Vec<_> = response
        .headers()
        .keys()
        .filter(|name| name.as_str().starts_with("access-control-"))
        .collect();
    assert!(cors.is_empty(), "no CORS headers: {cors:?}");
}

fn guarded_app(options: HttpOptions) -> Router {
    app(hub(Vec::new()), options)
}

fn call(id: u64, tool: &str, arguments: Value, progress_token: Option<u64>) -> String {
    let mut params = json!({"name": tool, "arguments": arguments});
    if let Some(token) = progress_token {
        params["_meta"] = json!({"progressToken": token});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
}

fn token_options() -> HttpOptions {
    HttpOptions {
        token: EndpointToken::new(Some("s3cret-token".to_owned())),
        ..options()
    }
}
