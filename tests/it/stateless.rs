//! The 2026-07-28 path of `/mcp` over real HTTP, with the real server-everything behind it:
//! `server/discover`, stamped results, the header rules, errors with their codes and statuses,
//! multi-round-trip requests over a session-era backend, and listen streams.

use serde_json::{Value, json};

use crate::backend_era::listened_for;
use crate::support::{EVENT_LIMIT, McpHttp, ServeProcess, ServedBackend, eventually, first_text};

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
    let response = builder
        .body(body.to_string())
        .send()
        .await
        .expect("POST /mcp");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_discovers_lists_and_calls_without_a_session() {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);

    let discover = post(
        &serve,
        &request(1, "server/discover", json!({}), json!({})),
        &[],
    )
    .await;
    assert_eq!(discover.status, 200);
    assert_eq!(discover.session, None, "no session in 2026-07-28");
    let result = &discover.last()["result"];
    assert_eq!(result["supportedVersions"][0], VERSION);
    assert!(
        result["supportedVersions"]
            .as_array()
            .expect("versions")
            .contains(&json!("2025-11-25"))
    );
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["ttlMs"], 0);
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "switchboard"
    );
    assert!(result["capabilities"]["tools"].is_object());
    assert!(
        result["instructions"]
            .as_str()
            .expect("instructions")
            .contains("## everything"),
        "{result}"
    );

    let tools = post(&serve, &request(2, "tools/list", json!({}), json!({})), &[]).await;
    let result = &tools.last()["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["cacheScope"], "private");
    let names: Vec<&str> = result["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(names.contains(&"everything__echo"), "{names:?}");

    let echo = post(
        &serve,
        &call(3, "everything__echo", json!({"message": "hi"}), json!({})),
        &[],
    )
    .await;
    assert_eq!(echo.status, 200);
    let result = &echo.last()["result"];
    assert_eq!(echo.last()["id"], 3);
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["content"][0]["text"], "Echo: hi");
    assert!(
        result.get("ttlMs").is_none(),
        "a call's result is not cached"
    );

    let missing = post(
        &serve,
        &request(
            4,
            "resources/read",
            json!({"uri": "demo://resource/static/document/nothing.md"}),
            json!({}),
        ),
        &[],
    )
    .await;
    let error = &missing.last()["error"];
    assert_ne!(error["code"], -32002, "-32002 is not sent in 2026-07-28");
    assert_eq!(error["code"], -32602, "{error}");

    let ping = post(&serve, &request(5, "ping", json!({}), json!({})), &[]).await;
    assert_eq!(ping.status, 404);
    assert_eq!(ping.last()["error"]["code"], -32601);

    let get = serve
        .client()
        .get(serve.url())
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .send()
        .await
        .expect("GET");
    assert_eq!(get.status().as_u16(), 405);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_envelopes_and_mismatched_headers_get_their_codes_and_ids_and_nothing_breaks() {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let echo = call(1, "everything__echo", json!({"message": "x"}), json!({}));

    let mut no_capabilities = echo.clone();
    no_capabilities["params"]["_meta"]
        .as_object_mut()
        .expect("meta")
        .remove("io.modelcontextprotocol/clientCapabilities");
    let answer = post(&serve, &no_capabilities, &[]).await;
    assert_eq!(status_code_id(&answer), (400, json!(-32602), json!(1)));

    let mut unknown_version = echo.clone();
    unknown_version["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] =
        json!("2099-01-01");
    let answer = post(
        &serve,
        &unknown_version,
        &[("mcp-protocol-version", "2099-01-01")],
    )
    .await;
    let error = &answer.last()["error"];
    assert_eq!(status_code_id(&answer), (400, json!(-32022), json!(1)));
    assert_eq!(error["data"]["requested"], "2099-01-01");
    assert_eq!(error["data"]["supported"][0], VERSION);
    // A header that contradicts the body is a mismatch, whatever version the body names.
    let answer = post(&serve, &unknown_version, &[]).await;
    let error = &answer.last()["error"];
    assert_eq!((answer.status, &error["code"]), (400, &json!(-32020)));
    assert!(
        error["message"]
            .as_str()
            .expect("message")
            .contains("MCP-Protocol-Version"),
        "{error}"
    );

    let answer = post(&serve, &echo, &[("mcp-protocol-version", "1999-01-01")]).await;
    assert_eq!(status_code_id(&answer), (400, json!(-32022), json!(1)));

    let answer = post(&serve, &echo, &[("mcp-name", "everything__other")]).await;
    let error = &answer.last()["error"];
    assert_eq!(status_code_id(&answer), (400, json!(-32020), json!(1)));
    assert!(
        error["message"]
            .as_str()
            .expect("message")
            .contains("Mcp-Name")
    );

    let answer = post(&serve, &echo, &[("mcp-method", "")]).await;
    assert_eq!(status_code_id(&answer), (400, json!(-32020), json!(1)));

    let answer = post(&serve, &echo, &[("mcp-protocol-version", "2025-11-25")]).await;
    assert_eq!(status_code_id(&answer), (400, json!(-32020), json!(1)));

    let answer = post(&serve, &echo, &[("mcp-protocol-version", "")]).await;
    assert_eq!(status_code_id(&answer), (400, json!(-32020), json!(1)));

    let batch = json!([echo.clone()]);
    let answer = post(&serve, &batch, &[]).await;
    assert_eq!(
        (answer.status, &answer.last()["error"]["code"]),
        (400, &json!(-32600))
    );

    let mut forged = echo.clone();
    forged["params"]["requestState"] = json!("sb1.eyJjIjoieCJ9.AAAA");
    let answer = post(&serve, &forged, &[]).await;
    let error = &answer.last()["error"];
    assert_eq!(status_code_id(&answer), (400, json!(-32602), json!(1)));
    assert!(
        error["message"]
            .as_str()
            .expect("message")
            .contains("does not verify"),
        "{error}"
    );

    let answer = post(&serve, &echo, &[]).await;
    assert_eq!(answer.last()["result"]["content"][0]["text"], "Echo: x");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_question_becomes_input_required_and_the_retry_resumes_the_same_call() {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let tool = "everything__trigger-elicitation-request";
    let form = json!({"elicitation": {"form": {}}});

    let first = post(&serve, &call(1, tool, json!({}), form.clone()), &[]).await;
    assert_eq!(first.status, 200);
    let result = &first.last()["result"];
    assert_eq!(result["resultType"], "input_required", "{result}");
    let requests = result["inputRequests"].as_object().expect("input requests");
    assert_eq!(requests.len(), 1);
    let (key, asked) = requests.iter().next().expect("one request");
    assert_eq!(asked["method"], "elicitation/create");
    assert!(asked["params"]["requestedSchema"]["properties"]["name"].is_object());
    let state = result["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned();

    let mut retry = call(2, tool, json!({}), form.clone());
    retry["params"]["requestState"] = json!(state);
    retry["params"]["inputResponses"] = json!({
        key: {"action": "accept", "content": {"name": "Ada Lovelace", "check": true}},
    });
    let resumed = post(&serve, &retry, &[]).await;
    assert_eq!(resumed.status, 200);
    assert_eq!(resumed.last()["id"], 2);
    let result = &resumed.last()["result"];
    assert_eq!(result["resultType"], "complete");
    assert!(result.to_string().contains("Ada Lovelace"), "{result}");

    let replayed = post(&serve, &retry, &[]).await;
    let error = &replayed.last()["error"];
    assert_eq!((replayed.status, &error["code"]), (400, &json!(-32602)));
    assert!(
        error["message"]
            .as_str()
            .expect("message")
            .contains("already used"),
        "{error}"
    );

    let other = post(&serve, &call(3, tool, json!({}), form.clone()), &[]).await;
    let state = other.last()["result"]["requestState"]
        .as_str()
        .expect("a second call parks too")
        .to_owned();
    let mut elsewhere = call(4, "everything__echo", json!({"message": "x"}), form.clone());
    elsewhere["params"]["requestState"] = json!(state);
    let answer = post(&serve, &elsewhere, &[]).await;
    assert!(
        answer.last()["error"]["message"]
            .as_str()
            .expect("message")
            .contains("another request"),
        "{}",
        answer.last()
    );
    // An answer to a question not asked (the first call's key) leaves the question open: it
    // is asked again, under a new state.
    let mut unanswered = call(5, tool, json!({}), form.clone());
    unanswered["params"]["requestState"] = json!(state);
    unanswered["params"]["inputResponses"] = json!({ key: {"action": "decline"} });
    let answer = post(&serve, &unanswered, &[]).await;
    let result = &answer.last()["result"];
    assert_eq!(result["resultType"], "input_required", "{result}");
    let (open_key, _) = result["inputRequests"]
        .as_object()
        .expect("input requests")
        .iter()
        .next()
        .expect("the question again");
    let mut declined = call(6, tool, json!({}), form.clone());
    declined["params"]["requestState"] = result["requestState"].clone();
    declined["params"]["inputResponses"] = json!({ open_key: {"action": "decline"} });
    let answer = post(&serve, &declined, &[]).await;
    assert_eq!(
        answer.last()["result"]["resultType"],
        "complete",
        "{}",
        answer.last()
    );

    // An editor that declared no elicitation: the person answers through Switchboard instead
    // (`ask = "auto"`), and the same call ends with what they said.
    let body = call(7, tool, json!({}), json!({}));
    let undeclared = post(&serve, &body, &[]);
    let person = async {
        let asked = eventually("the question for the person", EVENT_LIMIT, || async {
            let list = serve.api_get("/api/questions").await;
            match list[0]["id"].as_u64() {
                Some(id) => Ok(id),
                None => Err(list),
            }
        })
        .await;
        let answer = json!({"action": "accept", "content": {"name": "Grace Hopper"}});
        let (status, _) = serve
            .api_post_body(&format!("/api/questions/{asked}"), &answer.to_string())
            .await;
        assert_eq!(status, 200);
    };
    let (undeclared, ()) = tokio::join!(undeclared, person);
    let said = undeclared.last().to_string();
    assert!(said.contains("Name: Grace Hopper"), "{said}");

    let answer = post(
        &serve,
        &call(
            8,
            "everything__echo",
            json!({"message": "still here"}),
            json!({}),
        ),
        &[],
    )
    .await;
    assert_eq!(
        answer.last()["result"]["content"][0]["text"],
        "Echo: still here"
    );
}

/// The arguments of misbehave's `ask` that ask for a name with `message` (form elicitation).
fn name_question(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
    }})
}

/// A call of misbehave's `ask` that asks for a name with `message`, by a 2026-07-28 editor that
/// can answer it.
fn asking_for_a_name(id: u64, message: &str) -> Value {
    let form = json!({"elicitation": {"form": {}}});
    call(id, "mis__ask", name_question(message), form)
}

/// The `input_required` result `request` is answered with.
async fn parked(serve: &ServeProcess, request: &Value) -> Value {
    let answer = post(serve, request, &[]).await;
    let result = answer.last()["result"].clone();
    assert_eq!(result["resultType"], "input_required", "{result}");
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_call_its_editor_walked_away_from_leaves_the_next_question_to_its_own_editor() {
    let serve = ServeProcess::start(&[ServedBackend::Misbehave]);

    // A 2026-07-28 editor's call asks; the editor is told, and never comes back.
    parked(&serve, &asking_for_a_name(1, "Who walked away?")).await;

    // The backend asks again during a session-era editor's call: that editor is the one asked.
    let mcp = McpHttp::new(&serve.url());
    let session = mcp
        .open_session_declaring("session-editor", json!({"elicitation": {}}))
        .await
        .expect("a session");
    let asking = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "mis__ask", "arguments": name_question("Who stayed?"),
    }});
    let mut reply = mcp
        .post_streamed(&session, &asking)
        .await
        .expect("a stream");
    let accepted = json!({"action": "accept", "content": {"name": "Ada"}});
    let (asked, done) = mcp
        .answer_on(&session, &mut reply, "elicitation/create", accepted)
        .await
        .expect("a question, then the answer");
    assert_eq!(asked["params"]["message"], "Who stayed?", "{asked}");
    assert_eq!(done["id"], 2, "{done}");
    let relayed: Value = serde_json::from_str(&first_text(&done["result"])).expect("JSON text");
    assert_eq!(relayed["content"]["name"], "Ada", "{done}");

    // So does another 2026-07-28 editor's call: its question comes back as its own.
    let mut retry = asking_for_a_name(3, "Who else?");
    let result = parked(&serve, &retry).await;
    let (key, asked) = only_question(&result);
    assert_eq!(asked["params"]["message"], "Who else?", "{result}");
    retry["id"] = json!(4);
    retry["params"]["requestState"] = result["requestState"].clone();
    retry["params"]["inputResponses"] =
        json!({ key: {"action": "accept", "content": {"name": "Grace"}} });
    let resumed = post(&serve, &retry, &[]).await;
    let text = first_text(&resumed.last()["result"]);
    let relayed: Value = serde_json::from_str(&text).expect("JSON text");
    assert_eq!(relayed["content"]["name"], "Grace", "{}", resumed.last());
}

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
async fn a_modern_servers_own_input_required_passes_through_with_its_state() {
    let serve = ServeProcess::start(&[ServedBackend::SdkModernOnly, ServedBackend::Everything]);
    let form = json!({"elicitation": {"form": {}}});
    let arguments = json!({"action": "deploy"});

    let first = post(
        &serve,
        &call(1, "modern__confirm", arguments.clone(), form.clone()),
        &[],
    )
    .await;
    let result = &first.last()["result"];
    assert_eq!(result["resultType"], "input_required", "{result}");
    assert_eq!(
        result["requestState"], "asked:deploy",
        "the server's state, untouched"
    );
    assert_eq!(
        result["inputRequests"]["ok"]["method"],
        "elicitation/create"
    );

    let mut retry = call(2, "modern__confirm", arguments, form.clone());
    retry["params"]["requestState"] = json!("asked:deploy");
    retry["params"]["inputResponses"] =
        json!({"ok": {"action": "accept", "content": {"ok": true}}});
    let done = post(&serve, &retry, &[]).await;
    let result = &done.last()["result"];
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(
        result["content"][0]["text"],
        "confirmed deploy (state asked:deploy)"
    );

    let mut foreign = call(3, "everything__echo", json!({"message": "x"}), json!({}));
    foreign["params"]["requestState"] = json!("asked:deploy");
    let answer = post(&serve, &foreign, &[]).await;
    assert!(
        answer.last()["error"]["message"]
            .as_str()
            .expect("message")
            .contains("not one Switchboard issued"),
        "a session-era server has no state of its own to take back: {}",
        answer.last()
    );
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_of_the_2026_extension_route_by_their_ids_with_input_along_the_way() {
    let serve = ServeProcess::start(&[ServedBackend::Tasks, ServedBackend::Everything]);
    let with_tasks =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}});

    let discover = post(
        &serve,
        &request(1, "server/discover", json!({}), json!({})),
        &[],
    )
    .await;
    let extensions = &discover.last()["result"]["capabilities"]["extensions"];
    assert!(
        extensions["io.modelcontextprotocol/tasks"].is_object(),
        "a server offers the extension, so the endpoint does: {}",
        discover.last()
    );

    let refused = post(
        &serve,
        &call(2, "tasks__report", json!({"title": "Q3"}), json!({})),
        &[],
    )
    .await;
    let error = &refused.last()["error"];
    assert_eq!(
        (refused.status, &error["code"]),
        (400, &json!(-32021)),
        "{error}"
    );
    assert!(
        error["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"]
            .is_object()
    );

    let created = post(
        &serve,
        &call(
            3,
            "tasks__report",
            json!({"title": "Q3"}),
            with_tasks.clone(),
        ),
        &[],
    )
    .await;
    let result = &created.last()["result"];
    assert_eq!(result["resultType"], "task", "{result}");
    let task = result["taskId"].as_str().expect("a task id").to_owned();
    assert!(
        task.starts_with("sb1.tasks.task-1."),
        "the id names its server and task, sealed: {task}"
    );

    let task_request =
        |id: u64, method: &str, extra: Value| about_task(id, method, &task, extra, &with_tasks);
    let pending = post(
        &serve,
        &task_request(4, "tasks/get", json!({})),
        &[("mcp-name", &task)],
    )
    .await;
    let state = &pending.last()["result"];
    assert_eq!(state["status"], "input_required", "{state}");
    assert_eq!(state["taskId"], task.as_str());
    assert_eq!(
        state["inputRequests"]["approve"]["method"],
        "elicitation/create"
    );

    let wrong_name = post(
        &serve,
        &task_request(5, "tasks/get", json!({})),
        &[("mcp-name", "sb1.tasks.other")],
    )
    .await;
    assert_eq!(
        (wrong_name.status, &wrong_name.last()["error"]["code"]),
        (400, &json!(-32020))
    );

    let answers =
        json!({"inputResponses": {"approve": {"action": "accept", "content": {"name": "Grace"}}}});
    let updated = post(
        &serve,
        &task_request(6, "tasks/update", answers),
        &[("mcp-name", &task)],
    )
    .await;
    assert_eq!(
        updated.last()["result"]["resultType"],
        "complete",
        "{}",
        updated.last()
    );
    let done = post(
        &serve,
        &task_request(7, "tasks/get", json!({})),
        &[("mcp-name", &task)],
    )
    .await;
    let state = &done.last()["result"];
    assert_eq!(state["status"], "completed", "{state}");
    assert_eq!(
        state["result"]["content"][0]["text"],
        "report Q3 approved by Grace"
    );

    let mut unknown = task_request(8, "tasks/cancel", json!({}));
    unknown["params"]["taskId"] = json!("sb1.nowhere.1");
    let answer = post(&serve, &unknown, &[]).await;
    assert_eq!(answer.last()["error"]["code"], -32602, "{}", answer.last());
    let mut foreign = task_request(9, "tasks/get", json!({}));
    foreign["params"]["taskId"] = json!("task-1");
    let answer = post(&serve, &foreign, &[]).await;
    assert_eq!(answer.last()["error"]["code"], -32602, "{}", answer.last());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_elicitation_required_becomes_input_required_and_the_retry_runs_the_call_again() {
    // Only the editor asks: a question it cannot take is refused at once rather than put to a
    // person on the dashboard until the server's request timeout (questions.rs tests that).
    let config = format!(
        "{}ask = \"editor\"\n",
        ServedBackend::Everything.config_entry()
    );
    let serve = ServeProcess::with_config(&config, &["everything"]);
    let tool = "everything__trigger-url-elicitation";
    let url = json!({"elicitation": {"form": {}, "url": {}}});
    let arguments = json!({"url": "https://example.com/sign-in", "errorPath": true});

    let first = post(&serve, &call(1, tool, arguments.clone(), url.clone()), &[]).await;
    let result = &first.last()["result"];
    assert_eq!(result["resultType"], "input_required", "{}", first.last());
    let (key, asked) = result["inputRequests"]
        .as_object()
        .expect("input requests")
        .iter()
        .next()
        .expect("one");
    assert_eq!(asked["method"], "elicitation/create");
    assert_eq!(asked["params"]["mode"], "url");
    assert!(asked["params"]["url"].is_string(), "{asked}");
    assert!(asked["params"]["elicitationId"].is_string(), "{asked}");

    // The retry runs the call again; the server now asks on the request path, which parks it.
    let mut retry = call(2, tool, arguments.clone(), url.clone());
    retry["params"]["requestState"] = result["requestState"].clone();
    retry["params"]["inputResponses"] = json!({ key: {"action": "accept"} });
    let second = post(&serve, &retry, &[]).await;
    let result = &second.last()["result"];
    assert_eq!(result["resultType"], "input_required", "{}", second.last());
    let (key, asked) = result["inputRequests"]
        .as_object()
        .expect("input requests")
        .iter()
        .next()
        .expect("one");
    assert_eq!(asked["params"]["mode"], "url");
    assert_eq!(asked["params"]["url"], "https://example.com/sign-in");
    let mut last = call(3, tool, arguments.clone(), url.clone());
    last["params"]["requestState"] = result["requestState"].clone();
    last["params"]["inputResponses"] = json!({ key: {"action": "accept"} });
    let done = post(&serve, &last, &[]).await;
    assert_eq!(
        done.last()["result"]["resultType"],
        "complete",
        "{}",
        done.last()
    );
    assert_ne!(done.last()["result"]["isError"], true, "{}", done.last());

    let form_only = json!({"elicitation": {"form": {}}});
    let refused = post(&serve, &call(4, tool, arguments, form_only), &[]).await;
    let error = &refused.last()["error"];
    assert_eq!(
        (refused.status, &error["code"]),
        (400, &json!(-32021)),
        "{error}"
    );
    assert!(error["data"]["requiredCapabilities"]["elicitation"]["url"].is_object());
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

/// The roots server-everything is given.
fn project_roots() -> Value {
    json!({"roots": [{"uri": "file:///work/project", "name": "project"}]})
}

/// Posts `request` and, while the server's only questions are for the roots (server-everything
/// asks for them when it starts, and its question comes with whatever call is open then), answers
/// them and goes on; the completed result.
async fn settled(serve: &ServeProcess, mut request: Value) -> Value {
    for _ in 0..3 {
        let answer = post(serve, &request, &[]).await;
        let last = answer.last().clone();
        let result = &last["result"];
        let questions = result["inputRequests"].as_object();
        let only_roots = questions.is_some_and(|questions| {
            questions
                .values()
                .all(|asked| asked["method"] == "roots/list")
        });
        if result["resultType"] != "input_required" || !only_roots {
            assert_eq!(result["resultType"], "complete", "{last}");
            return result.clone();
        }
        let answers: serde_json::Map<String, Value> = questions
            .into_iter()
            .flatten()
            .map(|(key, _)| (key.clone(), project_roots()))
            .collect();
        request["params"]["requestState"] = result["requestState"].clone();
        request["params"]["inputResponses"] = Value::Object(answers);
    }
    panic!("the roots were asked for again and again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everythings_features_reach_a_2026_client() {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let all = json!({"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {}});

    let image = settled(
        &serve,
        call(1, "everything__get-tiny-image", json!({}), all.clone()),
    )
    .await;
    assert!(
        image["content"]
            .as_array()
            .expect("content")
            .iter()
            .any(|block| block["type"] == "image"),
        "{image}"
    );
    let structured = settled(
        &serve,
        call(
            2,
            "everything__get-structured-content",
            json!({"location": "New York"}),
            all.clone(),
        ),
    )
    .await;
    assert!(structured["structuredContent"].is_object(), "{structured}");
    let annotated = settled(
        &serve,
        call(
            3,
            "everything__get-annotated-message",
            json!({"messageType": "error", "includeImage": false}),
            all.clone(),
        ),
    )
    .await;
    assert!(
        annotated["content"][0]["annotations"].is_object(),
        "{annotated}"
    );
    let links = settled(
        &serve,
        call(
            4,
            "everything__get-resource-links",
            json!({"count": 2}),
            all.clone(),
        ),
    )
    .await;
    let link = links["content"]
        .as_array()
        .expect("content")
        .iter()
        .find(|block| block["type"] == "resource_link")
        .unwrap_or_else(|| panic!("a resource link in {links}"))["uri"]
        .as_str()
        .expect("a URI")
        .to_owned();
    let read = settled(
        &serve,
        request(5, "resources/read", json!({"uri": link}), all.clone()),
    )
    .await;
    assert_eq!(read["contents"][0]["uri"], link.as_str(), "{read}");
    assert_eq!(read["ttlMs"], 0, "a read carries caching hints: {read}");

    let templates = settled(
        &serve,
        request(6, "resources/templates/list", json!({}), all.clone()),
    )
    .await;
    assert!(
        !templates["resourceTemplates"]
            .as_array()
            .expect("templates")
            .is_empty()
    );
    let prompt = settled(
        &serve,
        request(
            7,
            "prompts/get",
            json!({"name": "everything__simple-prompt"}),
            all.clone(),
        ),
    )
    .await;
    assert!(
        !prompt["messages"].as_array().expect("messages").is_empty(),
        "{prompt}"
    );
    let completion = settled(&serve, request(
                8,
                "completion/complete",
                json!({"ref": {"type": "ref/prompt", "name": "everything__completable-prompt"}, "argument": {"name": "department", "value": "En"}}),
                all.clone(),
            )).await;
    assert_eq!(
        completion["completion"]["values"],
        json!(["Engineering"]),
        "{completion}"
    );

    // Sampling and roots, asked by a session-era server, come back as questions. The roots
    // server-everything asks for when it starts may come first, in a round of their own, or in
    // the same round as the sampling (see `settled`): an editor answers each round as it comes.
    let arguments = json!({"prompt": "Say hi", "maxTokens": 10});
    let mut request = call(
        9,
        "everything__trigger-sampling-request",
        arguments.clone(),
        all.clone(),
    );
    let mut sampling_asked = false;
    let mut sampled = Value::Null;
    for round in 20..24 {
        let answer = post(&serve, &request, &[]).await;
        let result = answer.last()["result"].clone();
        if result["resultType"] != "input_required" {
            sampled = result;
            break;
        }
        let mut answers = serde_json::Map::new();
        let questions = result["inputRequests"].as_object().expect("questions");
        for (key, question) in questions {
            let answer = match question["method"].as_str() {
                Some("sampling/createMessage") => {
                    sampling_asked = true;
                    json!({
                        "role": "assistant", "content": {"type": "text", "text": "hi from the model"},
                        "model": "test-model", "stopReason": "endTurn",
                    })
                }
                Some("roots/list") => project_roots(),
                _ => panic!("an unexpected question: {question}"),
            };
            answers.insert(key.clone(), answer);
        }
        request = call(
            round,
            "everything__trigger-sampling-request",
            arguments.clone(),
            all.clone(),
        );
        request["params"]["requestState"] = result["requestState"].clone();
        request["params"]["inputResponses"] = Value::Object(answers);
    }
    assert!(sampling_asked, "the server's sampling came as a question");
    assert_eq!(sampled["resultType"], "complete", "{sampled}");
    assert!(
        sampled.to_string().contains("hi from the model"),
        "{sampled}"
    );

    let asked = post(
        &serve,
        &call(11, "everything__get-roots-list", json!({}), all.clone()),
        &[],
    )
    .await;
    // server-everything asks for the roots when it starts and again from the tool while it has
    // none: when its first question is still open as the call comes, the call carries both, one
    // round after the other. An editor answers each round, as the protocol allows.
    let mut answer = asked;
    for round in 12..15 {
        let last = answer.last()["result"].clone();
        if last["resultType"] != "input_required" {
            break;
        }
        let (key, question) = only_question(&last);
        assert_eq!(question["method"], "roots/list", "{question}");
        let mut retry = call(round, "everything__get-roots-list", json!({}), all.clone());
        retry["params"]["requestState"] = last["requestState"].clone();
        retry["params"]["inputResponses"] = json!({ key: project_roots() });
        answer = post(&serve, &retry, &[]).await;
    }
    let rooted = answer.last()["result"].clone();
    assert_eq!(rooted["resultType"], "complete", "{rooted}");
    assert!(
        rooted.to_string().contains("file:///work/project"),
        "{rooted}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_era_servers_task_reaches_a_2026_client_in_the_extensions_shapes() {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let tool = "everything__simulate-research-query";
    let with_tasks =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {"form": {}}});

    // A client without the extension cannot hold the task: Switchboard waits for its result.
    let plain = post(
        &serve,
        &call(1, tool, json!({"topic": "tides"}), json!({})),
        &[],
    )
    .await;
    let result = &plain.last()["result"];
    assert_eq!(result["resultType"], "complete", "{}", plain.last());
    assert!(
        first_text(result).contains("# Research Report: tides"),
        "{result}"
    );

    let created = post(
        &serve,
        &call(
            2,
            tool,
            json!({"topic": "python", "ambiguous": true}),
            with_tasks.clone(),
        ),
        &[],
    )
    .await;
    let handle = &created.last()["result"];
    assert_eq!(handle["resultType"], "task", "{handle}");
    let task = handle["taskId"].as_str().expect("a task id").to_owned();
    assert!(task.starts_with("sb1.everything."), "{task}");
    assert_eq!(handle["status"], "working");
    assert!(
        handle["ttlMs"].is_u64() && handle["pollIntervalMs"].is_u64(),
        "{handle}"
    );
    assert!(
        handle["ttl"].is_null() && handle["task"].is_null(),
        "{handle}"
    );

    let task_request = |id: u64, method: &str, extra: Value, capabilities: &Value| {
        about_task(id, method, &task, extra, capabilities)
    };
    let undeclared = post(
        &serve,
        &task_request(3, "tasks/get", json!({}), &json!({})),
        &[],
    )
    .await;
    assert_eq!(
        (undeclared.status, &undeclared.last()["error"]["code"]),
        (400, &json!(-32021)),
        "{}",
        undeclared.last()
    );

    let listen = request(
        4,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [task, "sb1.nowhere.1"]}}),
        with_tasks.clone(),
    );
    let mut stream = Listen::open(&serve, &listen).await;
    let acknowledged = stream.next().await;
    assert_eq!(
        acknowledged["params"]["notifications"]["taskIds"],
        json!([task]),
        "a task of no configured server is not honoured: {acknowledged}"
    );

    let mut asked = None;
    for id in 5.. {
        let state = post(
            &serve,
            &task_request(id, "tasks/get", json!({}), &with_tasks),
            &[],
        )
        .await;
        let state = state.last()["result"].clone();
        assert_eq!(state["taskId"], task.as_str(), "{state}");
        match state["status"].as_str() {
            Some("working") => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
            Some("input_required") => {
                asked = Some(only_question(&state));
                break;
            }
            _ => panic!("a task that asks before it ends: {state}"),
        }
        assert!(id < 300, "the task never asked");
    }
    let (key, question) = asked.expect("a question");
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert!(
        question["params"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("python")),
        "{question}"
    );
    // The stream tells of the question too, before anyone answers it.
    let mut statuses = Vec::new();
    let mut told_of = |notice: &Value| {
        assert_eq!(notice["method"], "notifications/tasks", "{notice}");
        assert_eq!(
            notice["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            4
        );
        assert_eq!(notice["params"]["taskId"], task.as_str());
        let status = notice["params"]["status"]
            .as_str()
            .expect("a status")
            .to_owned();
        statuses.push(status.clone());
        status
    };
    loop {
        let notice = stream.next().await;
        match told_of(&notice).as_str() {
            "input_required" => break,
            "working" => {}
            other => panic!("the stream told of {other} before the question: {notice}"),
        }
    }
    let answers = json!({"inputResponses": {
        key: {"action": "accept", "content": {"interpretation": "comedy"}},
    }});
    let updated = post(
        &serve,
        &task_request(400, "tasks/update", answers, &with_tasks),
        &[],
    )
    .await;
    assert_eq!(
        updated.last()["result"]["resultType"],
        "complete",
        "{}",
        updated.last()
    );

    let completed = loop {
        let notice = stream.next().await;
        if told_of(&notice) == "completed" {
            break notice["params"].clone();
        }
    };
    assert_eq!(
        statuses.last().map(String::as_str),
        Some("completed"),
        "{statuses:?}"
    );
    let report = first_text(&completed["result"]);
    assert!(
        report.contains("# Research Report: python (comedy)"),
        "{report}"
    );
    let done = post(
        &serve,
        &task_request(401, "tasks/get", json!({}), &with_tasks),
        &[],
    )
    .await;
    let done = &done.last()["result"];
    assert_eq!(
        (&done["status"], &done["result"]["content"]),
        (&json!("completed"), &completed["result"]["content"]),
        "{done}"
    );
    assert!(done["result"]["_meta"]["io.modelcontextprotocol/related-task"].is_null());

    // Cancelling is acknowledged, and the server's task ends cancelled.
    let second = post(
        &serve,
        &call(402, tool, json!({"topic": "waves"}), with_tasks.clone()),
        &[],
    )
    .await;
    let second = second.last()["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let mut cancel = task_request(403, "tasks/cancel", json!({}), &with_tasks);
    cancel["params"]["taskId"] = json!(second);
    let cancelled = post(&serve, &cancel, &[]).await;
    assert_eq!(
        cancelled.last()["result"]["resultType"],
        "complete",
        "{}",
        cancelled.last()
    );
    let mut get = task_request(404, "tasks/get", json!({}), &with_tasks);
    get["params"]["taskId"] = json!(second);
    let state = post(&serve, &get, &[]).await;
    assert_eq!(
        state.last()["result"]["status"],
        "cancelled",
        "{}",
        state.last()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_a_session_era_server_asks_switchboard_to_run_is_answered_by_a_2026_client() {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let tool = "everything__trigger-sampling-request-async";
    let sampling = json!({"sampling": {}});
    let arguments = json!({"prompt": "hi", "maxTokens": 5});

    // The server's task-augmented sampling reaches the client as input_required, like any
    // question; its retry completes the task Switchboard holds, and the server's polling ends.
    let first = post(
        &serve,
        &call(1, tool, arguments.clone(), sampling.clone()),
        &[],
    )
    .await;
    let result = &first.last()["result"];
    assert_eq!(result["resultType"], "input_required", "{result}");
    let (key, asked) = only_question(result);
    assert_eq!(asked["method"], "sampling/createMessage");
    assert!(asked["params"]["task"].is_null(), "{asked}");
    let mut retry = call(2, tool, arguments, sampling);
    retry["params"]["requestState"] = result["requestState"].clone();
    retry["params"]["inputResponses"] = json!({
        key: {"role": "assistant", "content": {"type": "text", "text": "sampled for 2026"}, "model": "m"},
    });
    let resumed = post(&serve, &retry, &[]).await;
    let result = &resumed.last()["result"];
    assert_eq!(result["resultType"], "complete", "{}", resumed.last());
    let text = first_text(result);
    assert!(
        text.starts_with("[COMPLETED] Async sampling completed!"),
        "{text}"
    );
    assert!(text.contains("sampled for 2026"), "{text}");
}
