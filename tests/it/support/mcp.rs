//! An MCP client of the Streamable HTTP endpoint for tests that check the exchange itself:
//! statuses, session ids, JSON or Server-Sent Events answers. Tests that act as an editor use
//! rmcp's client instead; tests whose bytes must be exactly as written use raw TCP.

use serde_json::{Value, json};

/// The protocol version the tests' own clients speak.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// `notifications/initialized`.
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// The `initialize` request of a client named `client`.
pub fn initialize(id: u64, client: &str) -> Value {
    initialize_declaring(id, client, json!({}))
}

/// The `initialize` request of a client named `client` that declares `capabilities`.
fn initialize_declaring(id: u64, client: &str, capabilities: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": capabilities,
            "clientInfo": { "name": client, "version": "1" },
        },
    })
}

/// Requests to one MCP endpoint, with its bearer token if it needs one. Failures to talk HTTP
/// at all are `Err` with a description, for callers that record rather than panic.
#[derive(Clone)]
pub struct McpHttp {
    url: String,
    token: Option<String>,
    http: reqwest::Client,
}

/// An HTTP answer of the endpoint, read whole.
pub struct McpReply {
    pub status: u16,
    pub content_type: String,
    /// The `Mcp-Session-Id` header.
    pub session: Option<String>,
    pub body: String,
}

impl McpReply {
    /// The JSON-RPC messages of the body: one JSON value, or the events of an SSE stream.
    pub fn messages(&self) -> Result<Vec<Value>, String> {
        if !self.content_type.starts_with("text/event-stream") {
            return parse_message(&self.body).map(|message| vec![message]);
        }
        self.body.split("\n\n").filter_map(event_message).collect()
    }
}

/// The session's stream of server messages (`GET /mcp`), read as they come.
pub struct McpStream {
    response: reqwest::Response,
    buffer: String,
}

impl McpStream {
    /// The next JSON-RPC message on the stream; `Err` when the stream ends or breaks.
    pub async fn next_message(&mut self) -> Result<Value, String> {
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                if let Some(message) = event_message(&event) {
                    return message;
                }
            }
            let chunk = self
                .response
                .chunk()
                .await
                .map_err(|error| format!("reading the stream failed: {error:?}"))?
                .ok_or("the stream ended")?;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

fn parse_message(text: &str) -> Result<Value, String> {
    serde_json::from_str::<Value>(text).map_err(|error| format!("not JSON ({error}): {text:?}"))
}

/// The JSON-RPC message one SSE event carries in its `data:` lines, if it has any (an event
/// whose data is empty, such as a priming event, is not dispatched).
fn event_message(event: &str) -> Option<Result<Value, String>> {
    let data: Vec<&str> = event
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.strip_prefix(' ').unwrap_or(data))
        .collect();
    let data = data.join("\n");
    (!data.is_empty()).then(|| parse_message(&data))
}

impl McpHttp {
    /// A client of the endpoint at `url`, `http://127.0.0.1:PORT/mcp`.
    pub fn new(url: &str) -> McpHttp {
        McpHttp {
            url: url.to_owned(),
            token: None,
            http: reqwest::Client::new(),
        }
    }

    /// Sends `token` as `Authorization: Bearer` with every request.
    pub fn with_token(mut self, token: &str) -> McpHttp {
        self.token = Some(token.to_owned());
        self
    }

    fn request(&self, method: reqwest::Method, session: Option<&str>) -> reqwest::RequestBuilder {
        let mut request = self.http.request(method, &self.url);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", PROTOCOL_VERSION);
        }
        request
    }

    /// POSTs `body` (JSON-RPC), in `session` if given, and reads the whole answer.
    pub async fn post(&self, session: Option<&str>, body: String) -> Result<McpReply, String> {
        let response = self
            .request(reqwest::Method::POST, session)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
            .send()
            .await
            .map_err(|error| format!("POST failed: {error:?}"))?;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        let (content_type, session) = (header("content-type"), header("mcp-session-id"));
        let status = response.status().as_u16();
        let body = response
            .text()
            .await
            .map_err(|error| format!("reading the answer failed: {error:?}"))?;
        Ok(McpReply {
            status,
            content_type: content_type.unwrap_or_default(),
            session,
            body,
        })
    }

    /// The `result` of the answer to request `id` (`method` with `params`) in `session`;
    /// panics on anything else.
    pub async fn result(&self, session: &str, id: u64, method: &str, params: Value) -> Value {
        let request = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let reply = self
            .post(Some(session), request.to_string())
            .await
            .expect("an answer");
        assert_eq!(reply.status, 200, "{method}: {}", reply.body);
        let messages = reply.messages().expect("JSON-RPC messages");
        let answer = messages
            .iter()
            .find(|message| message["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {method} in {messages:?}"));
        answer["result"].clone()
    }

    /// The result of calling `tool` with `arguments` in `session`.
    pub async fn call_tool(&self, session: &str, id: u64, tool: &str, arguments: Value) -> Value {
        let params = json!({ "name": tool, "arguments": arguments });
        self.result(session, id, "tools/call", params).await
    }

    /// Opens a session as `client` (initialize, then initialized) and returns its id.
    pub async fn open_session(&self, client: &str) -> Result<String, String> {
        self.open_session_declaring(client, json!({})).await
    }

    /// Opens a session as `client` that declares `capabilities` (it can be asked what they
    /// name), and returns its id.
    pub async fn open_session_declaring(
        &self,
        client: &str,
        capabilities: Value,
    ) -> Result<String, String> {
        let opening = initialize_declaring(0, client, capabilities);
        let reply = self.post(None, opening.to_string()).await?;
        let Some(session) = reply.session.filter(|_| reply.status == 200) else {
            return Err(format!("initialize: HTTP {}: {}", reply.status, reply.body));
        };
        let reply = self.post(Some(&session), INITIALIZED.to_owned()).await?;
        if reply.status != 202 {
            return Err(format!(
                "initialized: HTTP {}: {}",
                reply.status, reply.body
            ));
        }
        Ok(session)
    }

    /// POSTs the request `request` in `session` and reads its answer as it comes: the
    /// requests the server makes for it, then its response.
    pub async fn post_streamed(&self, session: &str, request: &Value) -> Result<McpStream, String> {
        let response = self
            .request(reqwest::Method::POST, Some(session))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(request.to_string())
            .send()
            .await
            .map_err(|error| format!("POST failed: {error:?}"))?;
        let streamed = response
            .headers()
            .get("content-type")
            .is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"));
        if response.status() != 200 || !streamed {
            return Err(format!("POST: HTTP {}, not a stream", response.status()));
        }
        Ok(McpStream {
            response,
            buffer: String::new(),
        })
    }

    /// Takes the next message on `reply`, the stream of a call in `session`, which must be the
    /// server's `method` request, answers it with `result`, and returns it with the message
    /// that follows (the call's answer).
    pub async fn answer_on(
        &self,
        session: &str,
        reply: &mut McpStream,
        method: &str,
        result: Value,
    ) -> Result<(Value, Value), String> {
        let asked = reply.next_message().await?;
        if asked["method"] != method {
            return Err(format!("not a {method} request: {asked}"));
        }
        let answer = json!({ "jsonrpc": "2.0", "id": asked["id"], "result": result });
        let taken = self.post(Some(session), answer.to_string()).await?;
        if taken.status != 202 {
            return Err(format!("answer: HTTP {}: {}", taken.status, taken.body));
        }
        Ok((asked, reply.next_message().await?))
    }

    /// Opens the session's stream of server messages (GET) to read from.
    pub async fn stream(&self, session: &str) -> Result<McpStream, String> {
        let response = self.get_stream(session).await?;
        if response.status() != 200 {
            return Err(format!("GET: HTTP {}", response.status()));
        }
        Ok(McpStream {
            response,
            buffer: String::new(),
        })
    }

    /// Opens the session's stream of server messages (GET); the status.
    pub async fn open_stream(&self, session: &str) -> Result<u16, String> {
        Ok(self.get_stream(session).await?.status().as_u16())
    }

    async fn get_stream(&self, session: &str) -> Result<reqwest::Response, String> {
        self.request(reqwest::Method::GET, Some(session))
            .header("accept", "text/event-stream")
            .send()
            .await
            .map_err(|error| format!("GET failed: {error:?}"))
    }

    /// Ends the session (DELETE); the status.
    pub async fn delete_session(&self, session: &str) -> Result<u16, String> {
        let response = self
            .request(reqwest::Method::DELETE, Some(session))
            .send()
            .await
            .map_err(|error| format!("DELETE failed: {error:?}"))?;
        Ok(response.status().as_u16())
    }
}
