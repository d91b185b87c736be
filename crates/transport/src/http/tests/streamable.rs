//! Streamable HTTP at `/mcp`, with and without a hub behind it.

use super::*;

#[tokio::test]
async fn invalid_json_is_a_parse_error() {
    let app = guarded_app(options());
    for body in ["{not json", "[1,", "", "nope"] {
        let response = send(&app, post(None, BOTH, body)).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body:?}");
        let answer = body_json(response).await;
        assert_eq!(answer["error"]["code"], -32700, "{body:?}");
        assert_eq!(answer["id"], Value::Null);
    }
}

#[tokio::test]
async fn json_that_is_not_a_message_is_an_invalid_request() {
    let app = guarded_app(options());
    for body in [
        "42",
        "\"ping\"",
        "null",
        r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
    ] {
        let response = send(&app, post(None, BOTH, body)).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body:?}");
        assert_eq!(
            body_json(response).await["error"]["code"],
            -32600,
            "{body:?}"
        );
    }
}

#[tokio::test]
async fn a_request_without_a_session_is_400() {
    let app = guarded_app(options());
    let response = send(&app, post(None, BOTH, &ping(3))).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let answer = body_json(response).await;
    assert_eq!(answer["id"], 3);
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Mcp-Session-Id")),
        "{answer}"
    );
    let response = send(&app, post(None, BOTH, &format!("[{}]", ping(4)))).await;
    assert_eq!(
        response.status(),
        StatusCode::BAD_REQUEST,
        "a batch cannot open a session"
    );
}

#[tokio::test]
async fn an_unknown_session_is_404() {
    let app = guarded_app(options());
    let response = send(&app, post(Some("no-such-session"), BOTH, &ping(1))).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(body_json(response).await["id"], 1);
    let response = send(&app, get_stream("no-such-session")).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response = send(&app, delete("no-such-session")).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_unsupported_protocol_version_is_400() {
    let app = guarded_app(options());
    let host = loopback();
    for method in [Method::POST, Method::GET, Method::DELETE] {
        let request = with_headers(
            method.clone(),
            &[
                ("host", &host),
                ("accept", BOTH),
                ("mcp-protocol-version", "1999-01-01"),
            ],
            INITIALIZE,
        );
        let response = send(&app, request).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{method}");
        let answer = body_json(response).await;
        let message = answer["error"]["message"].as_str().expect("a message");
        assert!(
            message.contains("1999-01-01") && message.contains("2025-06-18"),
            "{message}"
        );
        // A POST's answer is to its request; GET and DELETE send none.
        let id = if method == Method::POST {
            json!(0)
        } else {
            json!(null)
        };
        assert_eq!(answer["id"], id, "{method}");
    }
}

#[tokio::test]
async fn other_methods_get_405_with_allow() {
    let app = guarded_app(options());
    for method in [Method::PUT, Method::PATCH, Method::OPTIONS] {
        let response = send(
            &app,
            with_headers(method.clone(), &[("host", &loopback())], ""),
        )
        .await;
        assert_eq!(
            response.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{method}"
        );
        let allow = response
            .headers()
            .get(header::ALLOW)
            .and_then(|value| value.to_str().ok())
            .expect("an Allow header");
        for allowed in ["GET", "POST", "DELETE"] {
            assert!(allow.contains(allowed), "{allow}");
        }
    }
}

#[tokio::test]
async fn get_without_event_stream_accept_is_406() {
    let app = guarded_app(options());
    for accept in [None, Some("application/json")] {
        let host = loopback();
        let mut headers = vec![("host", host.as_str()), ("mcp-session-id", "whatever")];
        if let Some(accept) = accept {
            headers.push(("accept", accept));
        }
        let response = send(&app, with_headers(Method::GET, &headers, "")).await;
        assert_eq!(response.status(), StatusCode::NOT_ACCEPTABLE, "{accept:?}");
    }
}

#[tokio::test]
async fn a_body_that_is_not_json_is_415() {
    let app = guarded_app(options());
    let request = with_headers(
        Method::POST,
        &[("host", &loopback()), ("content-type", "text/plain")],
        INITIALIZE,
    );
    let response = send(&app, request).await;
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

// --- /mcp with the hub -------------------------------------------------------------------

#[tokio::test]
async fn initialize_opens_a_session_and_requests_are_answered_as_json_or_sse() {
    let hub = hub(Vec::new());
    let app = app(hub.clone(), options());
    let session = initialize(&app).await;
    assert!(hub.session(&session).is_some(), "the hub knows the session");

    let response = send(&app, post(Some(&session), "application/json", &ping(1))).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(content_type(&response), "application/json");
    assert_eq!(
        body_json(response).await,
        json!({"jsonrpc": "2.0", "id": 1, "result": {}})
    );

    // Nothing but the response can come (no progress asked for, the client cannot be asked
    // anything), so even a client that accepts both gets plain JSON.
    let response = send(&app, post(Some(&session), BOTH, &ping(2))).await;
    assert_eq!(content_type(&response), "application/json");
    assert_eq!(
        body_json(response).await,
        json!({"jsonrpc": "2.0", "id": 2, "result": {}})
    );

    let response = send(
        &app,
        post(
            Some(&session),
            BOTH,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"progressToken":"t"}}}"#,
        ),
    )
    .await;
    let mut events = SseReader::new(response);
    let tools = events.next().await.expect("the response");
    assert_eq!(tools["id"], 3);
    assert_eq!(tools["result"]["tools"], json!([]));
    assert_eq!(
        events.next().await,
        None,
        "the stream ends after the response"
    );

    let response = send(
        &app,
        post(
            Some(&session),
            BOTH,
            r#"{"jsonrpc":"2.0","id":4,"method":"no/such"}"#,
        ),
    )
    .await;
    assert_eq!(body_json(response).await["error"]["code"], -32601);
}

#[tokio::test]
async fn a_failed_initialize_keeps_no_session() {
    let hub = hub(Vec::new());
    let app = app(hub.clone(), options());
    let response = send(
        &app,
        post(
            None,
            BOTH,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().get(MCP_SESSION_ID).is_none());
    assert_eq!(body_json(response).await["error"]["code"], -32602);
    assert_eq!(
        hub.session_count(),
        0,
        "the session opened for it was closed"
    );
}

#[tokio::test]
async fn a_rejected_message_is_answered_with_its_error() {
    let app = app(hub(Vec::new()), options());
    let session = initialize(&app).await;
    let response = send(
        &app,
        post(
            Some(&session),
            BOTH,
            r#"{"jsonrpc":"1.0","id":9,"method":"ping"}"#,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let answer = body_json(response).await;
    assert_eq!(answer["id"], 9);
    assert_eq!(answer["error"]["code"], -32600);
}

#[tokio::test]
async fn a_batch_is_answered_as_one_array_in_order() {
    let app = app(hub(Vec::new()), options());
    let session = initialize(&app).await;
    let batch = format!("[{}, {INITIALIZED}, {}, 7]", ping(4), ping(5));
    let response = send(&app, post(Some(&session), BOTH, &batch)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(content_type(&response), "application/json");
    let answers = body_json(response).await;
    let answers = answers.as_array().expect("an array");
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert_eq!(answers[0], json!({"jsonrpc": "2.0", "id": 4, "result": {}}));
    assert_eq!(answers[1], json!({"jsonrpc": "2.0", "id": 5, "result": {}}));
    assert_eq!(answers[2]["error"]["code"], -32600);

    let response = send(
        &app,
        post(Some(&session), BOTH, &format!("[{INITIALIZED}]")),
    )
    .await;
    assert_eq!(
        response.status(),
        StatusCode::ACCEPTED,
        "a batch without requests"
    );
    assert!(body_bytes(response).await.is_empty());

    let response = send(&app, post(Some(&session), BOTH, "[]")).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(body_json(response).await["error"]["code"], -32600);
}

#[tokio::test]
async fn one_get_stream_per_session_and_a_reconnect_continues() {
    let app = app(hub(Vec::new()), options());
    let session = initialize(&app).await;
    let first = send(&app, get_stream(&session)).await;
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(content_type(&first), "text/event-stream");
    let second = send(&app, get_stream(&session)).await;
    assert_eq!(second.status(), StatusCode::CONFLICT);
    drop(first);
    let third = send(&app, get_stream(&session)).await;
    assert_eq!(
        third.status(),
        StatusCode::OK,
        "the queue went back to the session"
    );
}

#[tokio::test]
async fn delete_closes_the_session_and_ends_its_get_stream() {
    let hub = hub(Vec::new());
    let app = app(hub.clone(), options());
    let session = initialize(&app).await;
    let mut stream = SseReader::new(send(&app, get_stream(&session)).await);
    let response = send(&app, delete(&session)).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert_eq!(stream.next().await, None, "the GET stream ended");
    assert!(hub.session(&session).is_none(), "the hub closed it");
    let response = send(&app, post(Some(&session), BOTH, &ping(1))).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response = send(&app, delete(&session)).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

#[tokio::test(start_paused = true)]
async fn the_least_recently_used_session_is_closed_when_full() {
    let hub = hub(Vec::new());
    let limits = SessionLimits {
        max_sessions: 2,
        ..SessionLimits::default()
    };
    let app = app_with_limits(hub.clone(), options(), limits);
    let first = initialize(&app).await;
    tokio::time::advance(Duration::from_secs(1)).await;
    let second = initialize(&app).await;
    tokio::time::advance(Duration::from_secs(1)).await;
    let response = send(&app, post(Some(&first), BOTH, &ping(1))).await;
    assert_eq!(response.status(), StatusCode::OK);
    tokio::time::advance(Duration::from_secs(1)).await;
    let third = initialize(&app).await;

    let response = send(&app, post(Some(&second), BOTH, &ping(2))).await;
    assert_eq!(
        response.status(),
        StatusCode::NOT_FOUND,
        "the least recently used went"
    );
    assert!(hub.session(&second).is_none());
    for session in [&first, &third] {
        let response = send(&app, post(Some(session), "application/json", &ping(3))).await;
        assert_eq!(response.status(), StatusCode::OK);
    }
}

#[tokio::test(start_paused = true)]
async fn idle_sessions_expire_but_not_while_a_get_stream_is_open() {
    let hub = hub(Vec::new());
    let app = app(hub.clone(), options());
    let idle = initialize(&app).await;
    let listening = initialize(&app).await;
    let stream = send(&app, get_stream(&listening)).await;
    assert_eq!(stream.status(), StatusCode::OK);
    tokio::time::advance(DEFAULT_SESSION_IDLE_TIMEOUT + Duration::from_secs(1)).await;

    let response = send(&app, post(Some(&idle), BOTH, &ping(1))).await;
    assert_eq!(
        response.status(),
        StatusCode::NOT_FOUND,
        "idle for too long"
    );
    assert!(hub.session(&idle).is_none(), "and closed at the hub");
    let response = send(&app, post(Some(&listening), "application/json", &ping(2))).await;
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "an open GET stream keeps it"
    );

    drop(stream);
    tokio::time::advance(DEFAULT_SESSION_IDLE_TIMEOUT + Duration::from_secs(1)).await;
    initialize(&app).await;
    assert!(
        hub.session(&listening).is_none(),
        "swept when a new session opened"
    );
}

// --- /mcp with a real backend ------------------------------------------------------------

#[tokio::test]
async fn progress_streams_before_the_response_over_sse() {
    let app = app(misbehave_hub().await, options());
    let session = initialize(&app).await;
    let request = call(1, "mis__slow", json!({"ms": 100}), Some(7));
    let mut events = SseReader::new(send(&app, post(Some(&session), BOTH, &request)).await);
    let mut messages = Vec::new();
    while let Some(message) = events.next().await {
        messages.push(message);
    }
    let (response, progress) = messages.split_last().expect("messages");
    assert_eq!(response["id"], 1);
    assert_eq!(
        response["result"]["content"][0]["text"], "slept 100",
        "{response}"
    );
    assert!(!progress.is_empty(), "progress came first: {messages:?}");
    for note in progress {
        assert_eq!(note["method"], "notifications/progress");
        assert_eq!(note["params"]["progressToken"], 7);
    }
}

#[tokio::test]
async fn progress_of_a_call_answered_as_json_goes_to_the_get_stream() {
    let app = app(misbehave_hub().await, options());
    let session = initialize(&app).await;
    let mut stream = SseReader::new(send(&app, get_stream(&session)).await);
    let request = call(1, "mis__slow", json!({"ms": 100}), Some(8));
    let response = send(&app, post(Some(&session), "application/json", &request)).await;
    assert_eq!(content_type(&response), "application/json");
    let answer = body_json(response).await;
    assert_eq!(
        answer["result"]["content"][0]["text"], "slept 100",
        "{answer}"
    );
    let note = stream.next().await.expect("progress on the GET stream");
    assert_eq!(note["method"], "notifications/progress");
    assert_eq!(note["params"]["progressToken"], 8);
}

#[tokio::test]
async fn session_events_reach_the_get_stream() {
    let hub = misbehave_hub().await;
    let app = app(hub.clone(), options());
    let session = initialize(&app).await;
    let mut stream = SseReader::new(send(&app, get_stream(&session)).await);
    let request = call(1, "mis__change_tools", json!({}), None);
    let response = send(&app, post(Some(&session), "application/json", &request)).await;
    assert_eq!(response.status(), StatusCode::OK);
    approve_when_held(&hub, "mis", "added_later").await;
    let changed = stream.next().await.expect("an event");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
}

#[tokio::test]
async fn a_client_that_prefers_a_stream_gets_one_even_for_a_lone_response() {
    let app = app(misbehave_hub().await, options());
    let session = initialize(&app).await;
    for (accept, stream) in [
        ("text/event-stream, application/json", true),
        ("application/json;q=0.5, text/event-stream", true),
        ("application/json, text/event-stream", false),
        ("text/event-stream;q=0.8, application/json", false),
        ("application/json", false),
    ] {
        let response = send(&app, post(Some(&session), accept, &ping(3))).await;
        let answer = if stream {
            let mut events = SseReader::new(response);
            let answer = events.next().await.expect("the response");
            assert!(
                events.next().await.is_none(),
                "{accept}: the response alone"
            );
            answer
        } else {
            assert_eq!(content_type(&response), "application/json", "{accept}");
            body_json(response).await
        };
        assert_eq!(
            answer,
            json!({"jsonrpc": "2.0", "id": 3, "result": {}}),
            "{accept}"
        );
    }
}

/// A session of 2025-11-25, whose client is sent priming events; it can be asked for elicitation.
const INITIALIZE_2025_11: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"test","version":"1"}}}"#;

#[tokio::test]
async fn a_reply_stream_primes_its_client_and_numbers_its_events() {
    let app = app(misbehave_hub().await, options());
    let session = initialize_as(&app, INITIALIZE_2025_11).await;
    let request = call(1, "mis__slow", json!({"ms": 50}), Some(7));
    let mut events = SseReader::new(send(&app, post(Some(&session), BOTH, &request)).await);
    let mut messages = Vec::new();
    while let Some(message) = events.next().await {
        messages.push(message);
    }
    assert_eq!(messages.last().expect("a response")["id"], 1);
    assert_eq!(
        events.retry,
        Some(1000),
        "the client is told when to reconnect"
    );
    assert_eq!(
        events.ids.len(),
        messages.len() + 1,
        "every event has an id"
    );
    let stream = events.ids[0]
        .strip_suffix("-0")
        .expect("a priming event without data comes first");
    for (seq, id) in events.ids.iter().enumerate() {
        assert_eq!(*id, format!("{stream}-{seq}"), "ids {:?}", events.ids);
    }

    // A client of 2025-06-18 gets ids but no priming event, which it might take for a message.
    let session = initialize(&app).await;
    let request = call(2, "mis__slow", json!({"ms": 20}), Some(8));
    let mut events = SseReader::new(send(&app, post(Some(&session), BOTH, &request)).await);
    let first = events.next().await.expect("a message");
    assert_eq!(first["method"], "notifications/progress", "{first}");
    assert!(
        events.ids[0].ends_with("-1"),
        "no priming: {:?}",
        events.ids
    );
    assert_eq!(events.retry, None);
}

#[tokio::test]
async fn a_reply_stream_its_client_left_is_taken_up_again_after_last_event_id() {
    let app = app(misbehave_hub().await, options());
    let session = initialize_as(&app, INITIALIZE_2025_11).await;
    let question = json!({
        "method": "elicitation/create",
        "params": {"message": "Your name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
    });
    let request = call(1, "mis__ask", question, None);
    let mut events = SseReader::new(send(&app, post(Some(&session), BOTH, &request)).await);
    let asked = events.next().await.expect("the server's question");
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let priming = events.ids[0].clone();
    // The connection goes before the question is answered.
    drop(events);

    // Taken up again after the priming event: the question comes again, with its own id.
    let mut resumed = SseReader::new(send(&app, resume_stream(&session, &priming)).await);
    let again = resumed.next().await.expect("the question, replayed");
    assert_eq!(again, asked);
    let stream = priming.strip_suffix("-0").expect("a priming id");
    assert_eq!(resumed.ids, [format!("{stream}-1")]);
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "Ada"}}});
    let accepted = send(&app, post(Some(&session), BOTH, &answer.to_string())).await;
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
    let response = resumed.next().await.expect("the call's response");
    assert_eq!(response["id"], 1, "{response}");
    let text = response["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert!(
        text.contains("Ada"),
        "the call ran on with the answer: {response}"
    );
    assert_eq!(resumed.ids.last(), Some(&format!("{stream}-2")));
    assert!(
        resumed.next().await.is_none(),
        "the stream ends with the response"
    );
}

#[tokio::test]
async fn the_get_stream_numbers_its_events_and_replays_them_after_last_event_id() {
    let app = app(misbehave_hub().await, options());
    let session = initialize(&app).await;
    let mut stream = SseReader::new(send(&app, get_stream(&session)).await);
    let request = call(1, "mis__slow", json!({"ms": 30}), Some(8));
    let answer =
        body_json(send(&app, post(Some(&session), "application/json", &request)).await).await;
    assert_eq!(answer["id"], 1, "{answer}");
    let note = stream.next().await.expect("progress on the GET stream");
    assert_eq!(note["method"], "notifications/progress");
    assert_eq!(stream.ids, ["0-1"]);
    drop(stream);

    let mut again = SseReader::new(send(&app, resume_stream(&session, "0-0")).await);
    assert_eq!(again.next().await.expect("the progress, replayed"), note);
    assert_eq!(again.ids, ["0-1"]);
    // An id of a stream this session never had opens the GET stream as it is.
    drop(again);
    let mut plain = SseReader::new(send(&app, resume_stream(&session, "99-3")).await);
    let request = call(2, "mis__slow", json!({"ms": 30}), Some(9));
    send(&app, post(Some(&session), "application/json", &request)).await;
    let next = plain.next().await.expect("new progress");
    assert_eq!(next["params"]["progressToken"], 9, "{next}");
}

#[tokio::test]
async fn dropping_an_sse_response_cancels_the_call() {
    let app = app(misbehave_hub().await, options());
    let session = initialize(&app).await;
    let request = call(1, "mis__slow", json!({"ms": 600_000}), Some(9));
    let mut events = SseReader::new(send(&app, post(Some(&session), BOTH, &request)).await);
    let progress = events
        .next()
        .await
        .expect("progress: the backend is running the call");
    assert_eq!(progress["method"], "notifications/progress");
    drop(events);

    let deadline = Instant::now() + EVENT_LIMIT;
    loop {
        let request = call(2, "mis__cancelled_ids", json!({}), None);
        let answer =
            body_json(send(&app, post(Some(&session), "application/json", &request)).await).await;
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .expect("text");
        let ids: Vec<Value> = serde_json::from_str(text).expect("ids");
        if ids.len() == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the dropped call was never cancelled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
