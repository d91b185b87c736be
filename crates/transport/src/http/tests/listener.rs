//! The endpoint on a real loopback socket.

use super::*;

/// Serves a fresh endpoint on an ephemeral loopback port.
async fn serve_on_loopback(
    hub: Hub,
) -> (
    SocketAddr,
    CancellationToken,
    tokio::task::JoinHandle<io::Result<()>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("bound");
    let router = app(
        hub,
        HttpOptions {
            port: address.port(),
            ..options()
        },
    );
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(serve(listener, router, shutdown.clone()));
    (address, shutdown, server)
}

fn raw_post(host: &str, headers: &str, body: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n{headers}\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
}

async fn raw_exchange(address: SocketAddr, request: &str) -> String {
    let mut socket = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    socket.write_all(request.as_bytes()).await.expect("write");
    let mut response = Vec::new();
    tokio::time::timeout(EVENT_LIMIT, socket.read_to_end(&mut response))
        .await
        .expect("answered in time")
        .expect("read");
    String::from_utf8(response).expect("UTF-8")
}

async fn stopped(shutdown: CancellationToken, server: tokio::task::JoinHandle<io::Result<()>>) {
    shutdown.cancel();
    tokio::time::timeout(EVENT_LIMIT, server)
        .await
        .expect("the server stops in time")
        .expect("the server task did not panic")
        .expect("the server ran without error");
}

#[tokio::test]
async fn an_rmcp_client_lists_and_calls_tools_over_a_real_socket() {
    use rmcp::ServiceExt as _;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::StreamableHttpClientTransport;

    let hub = misbehave_hub().await;
    let (address, shutdown, server) = serve_on_loopback(hub.clone()).await;
    let transport = StreamableHttpClientTransport::from_uri(format!("http://{address}{MCP_PATH}"));
    let client = tokio::time::timeout(EVENT_LIMIT, ().serve(transport))
        .await
        .expect("initialized in time")
        .expect("initialized");
    assert_eq!(hub.session_count(), 1);

    let tools = client.list_all_tools().await.expect("tools listed");
    assert!(
        tools.iter().any(|tool| tool.name == "mis__echo"),
        "{tools:?}"
    );
    let arguments = json!({"text": "over HTTP"})
        .as_object()
        .expect("an object")
        .clone();
    let result = client
        .call_tool(CallToolRequestParams::new("mis__echo").with_arguments(arguments))
        .await
        .expect("called");
    let text = result.content[0].as_text().expect("text").text.clone();
    assert_eq!(text, "over HTTP");

    client.cancel().await.expect("closed");
    assert_eq!(hub.session_count(), 0, "the client deleted its session");
    stopped(shutdown, server).await;
}

/// Reads from `socket` into `seen` until `pattern` shows up.
async fn read_until(socket: &mut tokio::net::TcpStream, seen: &mut String, pattern: &str) {
    while !seen.contains(pattern) {
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout(EVENT_LIMIT, socket.read(&mut chunk))
            .await
            .unwrap_or_else(|_| panic!("{pattern:?} in time; got {seen:?}"))
            .expect("read");
        assert!(n > 0, "the server closed before {pattern:?}; got {seen:?}");
        seen.push_str(std::str::from_utf8(&chunk[..n]).expect("UTF-8"));
    }
}

#[tokio::test]
async fn an_http_sse_client_is_served_over_a_real_socket() {
    let hub = hub(Vec::new());
    let (address, shutdown, server) = serve_on_loopback(hub.clone()).await;
    let host = address.to_string();
    let mut sse = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    let request = format!("GET /sse HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n");
    sse.write_all(request.as_bytes()).await.expect("write");
    let mut seen = String::new();
    read_until(&mut sse, &mut seen, "event: endpoint\ndata: ").await;
    assert!(seen.starts_with("HTTP/1.1 200 "), "{seen}");
    let start = seen.find("data: ").expect("data") + "data: ".len();
    read_until(&mut sse, &mut seen, "\n\n").await;
    let uri = seen[start..].lines().next().expect("a line").to_owned();
    assert!(uri.starts_with("/messages?sessionId="), "{uri}");

    let body = INITIALIZE_2024;
    let post = format!(
        "POST {uri} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let response = raw_exchange(address, &post).await;
    assert!(response.starts_with("HTTP/1.1 202 "), "{response}");
    read_until(&mut sse, &mut seen, r#""protocolVersion":"2024-11-05""#).await;
    assert!(seen.contains("event: message\ndata: {"), "{seen}");
    assert_eq!(hub.session_count(), 1);

    stopped(shutdown, server).await;
    let mut rest = Vec::new();
    tokio::time::timeout(EVENT_LIMIT, sse.read_to_end(&mut rest))
        .await
        .expect("the stream ends on shutdown")
        .expect("read");
    assert_eq!(
        hub.session_count(),
        0,
        "the ended stream closed its session"
    );
}

#[tokio::test]
async fn a_foreign_host_is_refused_over_a_real_socket() {
    let (address, shutdown, server) = serve_on_loopback(hub(Vec::new())).await;
    let host = format!("localhost.evil.com:{}", address.port());
    let response = raw_exchange(address, &raw_post(&host, "", INITIALIZE)).await;
    assert!(response.starts_with("HTTP/1.1 403 "), "{response}");
    assert!(
        response.contains(r#""code":"forbidden_host""#),
        "{response}"
    );
    assert!(
        !response.to_ascii_lowercase().contains("mcp-session-id"),
        "{response}"
    );
    stopped(shutdown, server).await;
}

#[tokio::test]
async fn shutdown_ends_open_get_streams_over_a_real_socket() {
    let (address, shutdown, server) = serve_on_loopback(hub(Vec::new())).await;
    let host = address.to_string();
    let response = raw_exchange(address, &raw_post(&host, "", INITIALIZE)).await;
    assert!(response.starts_with("HTTP/1.1 200 "), "{response}");
    let session = response
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .expect("a session id");

    let mut socket = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    let request = format!(
        "GET /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\r\n"
    );
    socket.write_all(request.as_bytes()).await.expect("write");
    let mut head = Vec::new();
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        let mut chunk = [0u8; 1024];
        let n = tokio::time::timeout(EVENT_LIMIT, socket.read(&mut chunk))
            .await
            .expect("headers in time")
            .expect("read");
        assert!(n > 0, "the server closed before answering");
        head.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert!(head.contains("text/event-stream"), "{head}");

    stopped(shutdown, server).await;
    let mut rest = Vec::new();
    tokio::time::timeout(EVENT_LIMIT, socket.read_to_end(&mut rest))
        .await
        .expect("the stream ends on shutdown")
        .expect("read");
}

#[test]
fn the_local_url_is_always_a_loopback_address() {
    let url = |address: &str| local_base_url(address.parse().expect("an address"));
    assert_eq!(url("127.0.0.1:8765"), "http://127.0.0.1:8765");
    assert_eq!(url("[::1]:8765"), "http://[::1]:8765");
    assert_eq!(url("0.0.0.0:8765"), "http://127.0.0.1:8765");
    assert_eq!(url("[::]:8765"), "http://[::1]:8765");
    assert_eq!(url("192.168.1.5:80"), "http://127.0.0.1:80");
}
