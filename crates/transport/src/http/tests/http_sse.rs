//! The HTTP+SSE transport of 2024-11-05.

use super::*;

fn http_sse_get(headers: &[(&str, &str)]) -> Request {
    with_uri(Method::GET, HTTP_SSE_PATH, headers, "")
}

fn http_sse_post(uri: &str, body: &str) -> Request {
    let host = loopback();
    let headers = [
        ("host", host.as_str()),
        ("content-type", "application/json"),
    ];
    with_uri(Method::POST, uri, &headers, body)
}

/// Opens `GET /sse`; returns the stream past its `endpoint` event, and that event's URI.
async fn open_http_sse(app: &Router) -> (SseReader, String) {
    let host = loopback();
    let request = http_sse_get(&[("host", &host), ("accept", "text/event-stream")]);
    let mut stream = SseReader::new(send(app, request).await);
    let (event, uri) = stream.next_event().await.expect("an endpoint event");
    assert_eq!(event, "endpoint", "the first event names the endpoint");
    (stream, uri)
}

fn http_sse_session(uri: &str) -> &str {
    uri.split_once("?sessionId=").expect("a session id").1
}

/// Posts one message, which must get `202` and an empty body.
async fn http_sse_send(app: &Router, uri: &str, body: &str) {
    let response = send(app, http_sse_post(uri, body)).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED, "{body}");
    assert!(body_bytes(response).await.is_empty());
}

/// Posts one message and returns the next message of the stream.
async fn http_sse_exchange(app: &Router, stream: &mut SseReader, uri: &str, body: &str) -> Value {
    http_sse_send(app, uri, body).await;
    stream.next().await.expect("an answer on the stream")
}

/// Opens an HTTP+SSE session and initializes it with protocol version 2024-11-05.
async fn initialize_http_sse(app: &Router) -> (SseReader, String) {
    let (mut stream, uri) = open_http_sse(app).await;
    let answer = http_sse_exchange(app, &mut stream, &uri, INITIALIZE_2024).await;
    assert_eq!(answer["id"], 0);
    assert_eq!(
        answer["result"]["protocolVersion"], "2024-11-05",
        "{answer}"
    );
    http_sse_send(app, &uri, INITIALIZED).await;
    (stream, uri)
}

#[tokio::test]
async fn http_sse_first_names_a_relative_endpoint_with_the_session_id() {
    let hub = hub(Vec::new());
    let app = app(hub.clone(), options());
    let (mut stream, uri) = open_http_sse(&app).await;
    let session = http_sse_session(&uri);
    assert_eq!(uri, format!("/messages?sessionId={session}"), "relative");
    assert!(hub.session(session).is_some(), "the hub knows the session");
    let answer = http_sse_exchange(&app, &mut stream, &uri, &ping(1)).await;
    assert_eq!(answer, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
}

#[tokio::test]
async fn http_sse_initialize_list_and_call_are_answered_on_the_stream() {
    let app = app(misbehave_hub().await, options());
    let (mut stream, uri) = initialize_http_sse(&app).await;

    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let tools = http_sse_exchange(&app, &mut stream, &uri, list).await;
    assert_eq!(tools["id"], 1);
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(names.contains(&"mis__echo"), "{names:?}");

    let request = call(2, "mis__echo", json!({"text": "over HTTP+SSE"}), None);
    let result = http_sse_exchange(&app, &mut stream, &uri, &request).await;
    assert_eq!(result["id"], 2);
    assert_eq!(
        result["result"]["content"][0]["text"], "over HTTP+SSE",
        "{result}"
    );

    // Every message of a reply comes on the stream: progress first, then the response.
    http_sse_send(
        &app,
        &uri,
        &call(3, "mis__slow", json!({"ms": 100}), Some(5)),
    )
    .await;
    let mut progress = 0;
    let response = loop {
        let message = stream.next().await.expect("a message");
        if message["method"] == "notifications/progress" {
            assert_eq!(message["params"]["progressToken"], 5);
            progress += 1;
            continue;
        }
        break message;
    };
    assert_eq!(response["id"], 3);
    assert_eq!(response["result"]["content"][0]["text"], "slept 100");
    assert!(progress > 0, "progress came before the response");

    // Requests run side by side: one that never ends does not hold up the next.
    http_sse_send(&app, &uri, &call(4, "mis__hang", json!({}), None)).await;
    let request = call(5, "mis__echo", json!({"text": "meanwhile"}), None);
    let result = http_sse_exchange(&app, &mut stream, &uri, &request).await;
    assert_eq!(result["id"], 5, "{result}");
}

#[tokio::test]
async fn http_sse_session_events_reach_the_stream() {
    let hub = misbehave_hub().await;
    let app = app(hub.clone(), options());
    let (mut stream, uri) = initialize_http_sse(&app).await;
    http_sse_send(&app, &uri, &call(1, "mis__change_tools", json!({}), None)).await;
    approve_when_held(&hub, "mis", "added_later").await;
    let mut methods = Vec::new();
    while methods.len() < 2 {
        let message = stream.next().await.expect("a message");
        methods.push(message["method"].as_str().unwrap_or("response").to_owned());
    }
    assert!(
        methods
            .iter()
            .any(|m| m == "notifications/tools/list_changed"),
        "{methods:?}"
    );
}

#[tokio::test]
async fn http_sse_bad_bodies_are_answered_on_the_stream_after_202() {
    let app = app(hub(Vec::new()), options());
    let (mut stream, uri) = open_http_sse(&app).await;
    for (body, code) in [
        ("{not json", -32700),
        ("", -32700),
        ("42", -32600),
        (r#"{"jsonrpc":"2.0","id":1,"method":5}"#, -32600),
        (&format!("[{}]", ping(1)), -32600),
    ] {
        let answer = http_sse_exchange(&app, &mut stream, &uri, body).await;
        assert_eq!(answer["error"]["code"], code, "{body:?}: {answer}");
        assert_eq!(answer["id"], Value::Null, "{body:?}");
    }
    let rejected = r#"{"jsonrpc":"1.0","id":9,"method":"ping"}"#;
    let answer = http_sse_exchange(&app, &mut stream, &uri, rejected).await;
    assert_eq!(answer["id"], 9);
    assert_eq!(answer["error"]["code"], -32600);
}

#[tokio::test]
async fn http_sse_oversized_and_non_json_bodies_are_refused_over_http() {
    let app = app(
        hub(Vec::new()),
        HttpOptions {
            max_body_size: 100,
            ..options()
        },
    );
    let (_stream, uri) = open_http_sse(&app).await;
    let response = send(&app, http_sse_post(&uri, &"x".repeat(101))).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(body_json(response).await["error"]["code"], -32600);

    let host = loopback();
    let headers = [("host", host.as_str()), ("content-type", "text/plain")];
    let request = with_uri(Method::POST, &uri, &headers, &ping(1));
    let response = send(&app, request).await;
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

#[tokio::test]
async fn http_sse_unknown_or_missing_session_is_refused() {
    let app = app(hub(Vec::new()), options());
    let response = send(&app, http_sse_post("/messages?sessionId=no-such", &ping(1))).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(body_json(response).await["error"]["code"], -32600);
    for uri in ["/messages", "/messages?session=x", "/messages?sessionId"] {
        let response = send(&app, http_sse_post(uri, &ping(1))).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{uri}");
    }
    let response = send(&app, http_sse_post("/messages?sessionId=", &ping(1))).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);

    let host = loopback();
    let response = send(&app, http_sse_get(&[("host", &host)])).await;
    assert_eq!(response.status(), StatusCode::NOT_ACCEPTABLE);
    let request = with_uri(Method::GET, HTTP_SSE_MESSAGES_PATH, &[("host", &host)], "");
    let response = send(&app, request).await;
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn http_sse_routes_sit_behind_the_guard() {
    let hub = hub(Vec::new());
    let app = app(hub.clone(), options());
    let evil_host = format!("localhost.evil.com:{PORT}");
    let request = http_sse_get(&[("host", &evil_host), ("accept", "text/event-stream")]);
    assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_host").await;
    assert_eq!(hub.session_count(), 0, "no session was opened");

    let (mut stream, uri) = open_http_sse(&app).await;
    let host = loopback();
    for (name, value, code) in [
        ("host", evil_host.as_str(), "forbidden_host"),
        ("origin", "http://evil.com", "forbidden_origin"),
    ] {
        let mut headers = vec![("content-type", "application/json")];
        if name == "origin" {
            headers.push(("host", &host));
        }
        headers.push((name, value));
        let request = with_uri(Method::POST, &uri, &headers, &ping(1));
        assert_refused(&app, request, StatusCode::FORBIDDEN, code).await;
    }
    let answer = http_sse_exchange(&app, &mut stream, &uri, &ping(2)).await;
    assert_eq!(
        answer["id"], 2,
        "the refused messages never reached the session"
    );

    let app = guarded_app(token_options());
    let request = http_sse_get(&[("host", &host), ("accept", "text/event-stream")]);
    assert_refused(&app, request, StatusCode::UNAUTHORIZED, "unauthorized").await;
}

#[tokio::test]
async fn dropping_the_http_sse_stream_closes_the_session_and_cancels_its_calls() {
    let hub = misbehave_hub().await;
    let app = app(hub.clone(), options());
    let (mut stream, uri) = initialize_http_sse(&app).await;
    let session = http_sse_session(&uri).to_owned();
    let request = call(1, "mis__slow", json!({"ms": 600_000}), Some(9));
    http_sse_send(&app, &uri, &request).await;
    let progress = stream.next().await.expect("progress: the call runs");
    assert_eq!(progress["method"], "notifications/progress");

    drop(stream);
    assert!(hub.session(&session).is_none(), "the hub closed it");
    let response = send(&app, http_sse_post(&uri, &ping(2))).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);

    let (mut stream, uri) = initialize_http_sse(&app).await;
    let deadline = Instant::now() + EVENT_LIMIT;
    for id in 10.. {
        let request = call(id, "mis__cancelled_ids", json!({}), None);
        let answer = http_sse_exchange(&app, &mut stream, &uri, &request).await;
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .expect("text");
        let ids: Vec<Value> = serde_json::from_str(text).expect("ids");
        if ids.len() == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the call of the closed session was never cancelled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn http_sse_sessions_are_bounded_apart_from_streamable_ones() {
    let hub = hub(Vec::new());
    let limits = SessionLimits {
        max_sessions: 1,
        ..SessionLimits::default()
    };
    let app = app_with_limits(hub.clone(), options(), limits);
    let streamable = initialize(&app).await;
    let (mut first, first_uri) = open_http_sse(&app).await;
    let (mut second, second_uri) = open_http_sse(&app).await;

    assert_eq!(
        first.next().await,
        None,
        "the evicted session's stream ended"
    );
    assert!(hub.session(http_sse_session(&first_uri)).is_none());
    let response = send(&app, http_sse_post(&first_uri, &ping(1))).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);

    let answer = http_sse_exchange(&app, &mut second, &second_uri, &ping(2)).await;
    assert_eq!(answer["id"], 2);
    let response = send(&app, post(Some(&streamable), "application/json", &ping(3))).await;
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "the Streamable session stayed"
    );
}
