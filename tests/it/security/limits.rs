//! What a request may cost: oversized bodies, slow or unfinished headers, bodies that trickle
//! in, and thousands of sessions, each bounded without holding up others.

use std::time::Duration;

use crate::support::*;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use transport::http::{BODY_READ_TIMEOUT, DEFAULT_MAX_SESSIONS, HEADER_READ_TIMEOUT};

use super::{INITIALIZE, MAX_BODY, MCP_TOKEN, api_list, backend, bearer, mcp_initialize, start};

#[tokio::test]
async fn oversized_bodies_get_413_and_the_server_keeps_serving() {
    let serve = start("info");
    let port = serve.port();
    let post = |path: &str| {
        format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{}",
            bearer(MCP_TOKEN)
        )
    };
    let padding = "x".repeat(MAX_BODY);
    let too_large =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{padding}"}}}}"#);
    let limit = format!("exceeds the limit of {MAX_BODY} bytes");

    // Declared, and sent.
    let reply = exchange(port, &post("/mcp"), &too_large).await;
    assert_eq!(reply.status, 413, "{reply:?}");
    let message = reply.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains(&format!("request body of {} bytes", too_large.len())),
        "{message}"
    );
    assert!(message.contains(&limit), "{message}");

    // Declared as huge but never sent: refused from the headers alone.
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let head = format!(
        "{}\r\nContent-Length: 1073741824\r\nConnection: close\r\n\r\n",
        post("/mcp")
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    let reply = read_reply(&mut stream).await;
    assert_eq!(reply.status, 413, "{reply:?}");
    assert!(
        reply.body.contains("request body of 1073741824 bytes"),
        "{reply:?}"
    );

    // Chunked, so that only reading tells.
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let mut chunked = format!(
        "{}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        post("/mcp")
    );
    for chunk in too_large.as_bytes().chunks(8192) {
        chunked.push_str(&format!(
            "{:x}\r\n{}\r\n",
            chunk.len(),
            String::from_utf8_lossy(chunk)
        ));
    }
    chunked.push_str("0\r\n\r\n");
    stream.write_all(chunked.as_bytes()).await.expect("write");
    let reply = read_reply(&mut stream).await;
    assert_eq!(reply.status, 413, "{reply:?}");
    assert!(
        reply.body.contains("request body of undeclared size"),
        "{reply:?}"
    );
    assert!(reply.body.contains(&limit), "{reply:?}");

    // Headers far beyond any real request are refused too, and nothing is left half-read.
    let huge_header = format!("{}\r\nX-Filler: {}", post("/mcp"), "y".repeat(1024 * 1024));
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let _ = stream
        .write_all(format!("{huge_header}\r\n\r\n").as_bytes())
        .await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(EVENT_LIMIT, stream.read_to_end(&mut answer))
        .await
        .expect("the connection is answered or closed in time");
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431"),
        "{answer}"
    );

    let reply = exchange(port, &post("/mcp"), INITIALIZE).await;
    assert_eq!(reply.status, 200, "still serving: {reply:?}");
    assert_eq!(backend(port, "mis").await["state"], "ready");
}

/// Reads until the server closes the connection; what it sent before, if anything.
async fn until_closed(
    stream: &mut (impl AsyncRead + Unpin),
    deadline: tokio::time::Instant,
) -> String {
    let mut answer = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Err(_) => panic!("a connection is still open after {HEADER_READ_TIMEOUT:?} and more"),
            Ok(Ok(0)) | Ok(Err(_)) => return String::from_utf8_lossy(&answer).into_owned(),
            Ok(Ok(n)) => answer.extend_from_slice(&chunk[..n]),
        }
    }
}

#[tokio::test]
async fn slow_or_unfinished_headers_are_cut_off_without_holding_up_others() {
    let serve = start("info");
    let port = serve.port();
    let started = tokio::time::Instant::now();
    let host = format!("Host: 127.0.0.1:{port}");
    let partials = [
        String::new(),
        "POST /mcp HT".to_owned(),
        format!("GET /api/backends HTTP/1.1\r\n{host}\r\n"),
        format!("POST /mcp HTTP/1.1\r\n{host}\r\nContent-Length: 10\r\n"),
    ];
    let mut stalled = Vec::new();
    for _ in 0..10 {
        for partial in &partials {
            let mut stream = TcpStream::connect(("127.0.0.1", port))
                .await
                .expect("connect");
            stream.write_all(partial.as_bytes()).await.expect("write");
            stalled.push(stream);
        }
    }
    // One more sends a byte of a header every half second, for longer than the timeout.
    let trickle = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let (mut trickle_read, mut trickle_write) = trickle.into_split();
    let trickler = tokio::spawn(async move {
        let start = format!("GET /api/backends HTTP/1.1\r\n{host}\r\nX-Slow: ");
        trickle_write.write_all(start.as_bytes()).await?;
        for _ in 0..2 * (HEADER_READ_TIMEOUT.as_secs() + 10) {
            tokio::time::sleep(Duration::from_millis(500)).await;
            trickle_write.write_all(b"a").await?;
        }
        Ok::<(), std::io::Error>(())
    });

    for _ in 0..20 {
        let reply = exchange(
            port,
            &api_list(&[format!("Host: 127.0.0.1:{port}"), bearer(SERVE_TOKEN)]),
            "",
        )
        .await;
        assert_eq!(reply.status, 200, "others are served meanwhile: {reply:?}");
    }

    let deadline = started + HEADER_READ_TIMEOUT + Duration::from_secs(10);
    for stream in &mut stalled {
        let answer = until_closed(stream, deadline).await;
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
            "{answer}"
        );
    }
    let answer = until_closed(&mut trickle_read, deadline).await;
    assert!(
        !answer.contains(" 200 "),
        "the trickle was never served: {answer}"
    );
    trickler.abort();
}

#[tokio::test]
async fn thousands_of_sessions_are_bounded_and_the_least_recently_used_expire() {
    const N_SESSIONS: usize = 3000;
    let serve = start("info");
    let mcp = McpHttp::new(&serve.url()).with_token(MCP_TOKEN);
    let mut sessions = Vec::with_capacity(N_SESSIONS);
    for _ in 0..N_SESSIONS {
        let reply = mcp
            .post(None, INITIALIZE.to_owned())
            .await
            .expect("an answer");
        assert_eq!(reply.status, 200);
        sessions.push(reply.session.expect("a session id"));
    }

    let (evicted, kept) = sessions.split_at(N_SESSIONS - DEFAULT_MAX_SESSIONS);
    const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    for id in kept {
        let reply = mcp
            .post(Some(id), PING.to_owned())
            .await
            .expect("an answer");
        assert_eq!(
            reply.status, 200,
            "the {DEFAULT_MAX_SESSIONS} most recent sessions live"
        );
    }
    for id in evicted {
        let reply = mcp
            .post(Some(id), PING.to_owned())
            .await
            .expect("an answer");
        assert_eq!(reply.status, 404, "an evicted session is gone");
        let body: Value = serde_json::from_str(&reply.body).expect("JSON");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("send initialize to start a new one"),
            "{body}"
        );
    }
    let oldest = &evicted[0];
    let stream = mcp.open_stream(oldest).await.expect("an answer");
    assert_eq!(stream, 404, "no stream for an evicted session");
    let deleted = mcp.delete_session(oldest).await.expect("an answer");
    assert_eq!(deleted, 404, "nothing to delete for an evicted session");
}

#[tokio::test]
async fn a_body_that_trickles_in_is_cut_off_without_holding_up_others() {
    let serve = start("info");
    let port = serve.port();
    let started = tokio::time::Instant::now();
    let headers = mcp_initialize(&[
        format!("Host: 127.0.0.1:{port}"),
        bearer(MCP_TOKEN),
        format!("Content-Length: {}", INITIALIZE.len()),
    ]);
    let trickle = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let (mut trickle_read, mut trickle_write) = trickle.into_split();
    // The headers at once, then the body a byte every half second: it would take far longer
    // than the limit.
    let trickler = tokio::spawn(async move {
        trickle_write
            .write_all(format!("{headers}\r\n\r\n").as_bytes())
            .await?;
        for byte in INITIALIZE.bytes() {
            trickle_write.write_all(&[byte]).await?;
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        Ok::<(), std::io::Error>(())
    });

    for _ in 0..20 {
        let reply = exchange(
            port,
            &mcp_initialize(&[format!("Host: 127.0.0.1:{port}"), bearer(MCP_TOKEN)]),
            INITIALIZE,
        )
        .await;
        assert_eq!(reply.status, 200, "others are served meanwhile: {reply:?}");
    }

    let answer = until_closed(
        &mut trickle_read,
        started + BODY_READ_TIMEOUT + Duration::from_secs(10),
    )
    .await;
    assert!(
        answer.starts_with("HTTP/1.1 408"),
        "the trickle gets 408 and its connection closes: {answer}"
    );
    assert!(answer.contains("did not arrive within"), "{answer}");
    assert!(
        started.elapsed() >= BODY_READ_TIMEOUT,
        "not cut off before its time"
    );
    trickler.abort();
}
