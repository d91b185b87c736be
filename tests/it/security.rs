//! Attacks on a real `switchboard serve` over real HTTP on 127.0.0.1: DNS rebinding (Host and
//! Origin), the tokens of `/mcp` and `/api`, cross-site requests riding on the dashboard cookie,
//! oversized bodies, slow or unfinished request headers, thousands of sessions, secrets leaking
//! into answers or logs, and the permissions of the files Switchboard writes.
//!
//! Requests whose headers must be exactly as written go over raw TCP.

use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::*;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use transport::http::{BODY_READ_TIMEOUT, DEFAULT_MAX_SESSIONS, HEADER_READ_TIMEOUT};

/// The value of a backend's `API_KEY` in its config `env`.
const SECRET: &str = "sekrit-4f1e9c2b7d";
/// `[endpoint] token`, which `/mcp` requires.
const MCP_TOKEN: &str = "mcp-endpoint-token-8d3a6b1e";
/// `[endpoint] max_body_size` of these tests.
const MAX_BODY: usize = 64 * 1024;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"security","version":"1"}}}"#;

/// A config with the endpoint token and a small body limit; `mis` runs the misbehaving server
/// with the secret in its environment (printing it to its own stderr), and `quitter`, with the
/// same secret, exits during every handshake.
fn config() -> String {
    let script = misbehave_script();
    format!(
        "[endpoint]\ntoken = {MCP_TOKEN:?}\nmax_body_size = \"{MAX_BODY}\"\n\n\
         [servers.mis]\ncommand = \"python3\"\nargs = [{script:?}, \"--print-env\", \"API_KEY\"]\n\
         env = {{ API_KEY = {SECRET:?} }}\nstop_grace = \"300ms\"\n\n\
         [servers.mis.restart]\nbackoff_base = \"50ms\"\n\n\
         [servers.quitter]\ncommand = \"python3\"\nargs = [{script:?}, \"--exit-during-handshake\", \"3\"]\n\
         env = {{ API_KEY = {SECRET:?} }}\n\n\
         [servers.quitter.restart]\nbackoff_base = \"50ms\"\nbackoff_cap = \"100ms\"\n",
    )
}

fn start(log_level: &str) -> ServeProcess {
    ServeOptions::new(&config())
        .ready(&["mis"])
        .env("SWITCHBOARD_LOG", log_level)
        .start()
}

/// `POST /mcp` with `initialize` and the given header lines.
fn mcp_initialize(headers: &[String]) -> String {
    request(
        "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream",
        headers,
    )
}

/// `GET /api/backends` with the given header lines.
fn api_list(headers: &[String]) -> String {
    request("GET /api/backends HTTP/1.1", headers)
}

fn request(start: &str, headers: &[String]) -> String {
    let mut request = start.to_owned();
    for line in headers {
        request.push_str("\r\n");
        request.push_str(line);
    }
    request
}

fn bearer(token: &str) -> String {
    format!("Authorization: Bearer {token}")
}

/// What a case expects.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Served: 200.
    Served,
    /// Refused with this status and `{code}` (an API error) before any handler ran.
    Refused(u16, &'static str),
}

/// Notes in `failures` what differs from `expect`.
fn check_case(failures: &mut Vec<String>, what: &str, expect: Expect, reply: &Reply) {
    let as_expected = match expect {
        Expect::Served => reply.status == 200,
        Expect::Refused(status, code) => {
            reply.status == status
                && serde_json::from_str::<Value>(&reply.body).is_ok_and(|body| body["code"] == code)
        }
    };
    if !as_expected {
        failures.push(format!(
            "{what}: expected {expect:?}, got {} {}",
            reply.status, reply.body
        ));
    }
}

/// Runs each `(what, header lines, expectation)` against `/mcp` and `/api`, each with its right
/// token, and reports every case that went otherwise.
async fn check_matrix(port: u16, cases: &[(String, Vec<String>, Expect)]) {
    let mut failures = Vec::new();
    for (what, headers, expect) in cases {
        let with_token = |token: &str| [headers.clone(), vec![bearer(token)]].concat();
        let reply = exchange(port, &mcp_initialize(&with_token(MCP_TOKEN)), INITIALIZE).await;
        check_case(&mut failures, &format!("/mcp, {what}"), *expect, &reply);
        let reply = exchange(port, &api_list(&with_token(SERVE_TOKEN)), "").await;
        check_case(&mut failures, &format!("/api, {what}"), *expect, &reply);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A port that is not `port`.
fn other_port(port: u16) -> u16 {
    if port == u16::MAX { port - 1 } else { port + 1 }
}

#[tokio::test]
async fn dns_rebinding_hosts_are_refused_and_loopback_names_served() {
    let serve = start("info");
    let port = serve.port();
    let served = [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        // Bound to 127.0.0.1, but a client that names the loopback by its IPv6 address is on
        // this machine all the same, and no foreign page can have that host.
        format!("[::1]:{port}"),
        // Host names are case-insensitive.
        format!("LocalHost:{port}"),
    ];
    let refused = [
        format!("localhost.evil.com:{port}"),
        format!("127.0.0.10:{port}"),
        format!("evil.com:{port}"),
        "evil.com".to_owned(),
        "127.0.0.1".to_owned(),
        "[::1]".to_owned(),
        format!("localhost:{}", other_port(port)),
        format!("0.0.0.0:{port}"),
        format!("[::ffff:127.0.0.1]:{port}"),
        format!("127.0.0.1:{port}.evil.com"),
    ];
    let forbidden = Expect::Refused(403, "forbidden_host");
    let mut cases: Vec<(String, Vec<String>, Expect)> = Vec::new();
    for (hosts, expect) in [(&served[..], Expect::Served), (&refused[..], forbidden)] {
        for value in hosts {
            cases.push((
                format!("Host {value:?}"),
                vec![format!("Host: {value}")],
                expect,
            ));
        }
    }
    cases.push(("no Host".to_owned(), Vec::new(), forbidden));
    let two = vec![
        format!("Host: 127.0.0.1:{port}"),
        "Host: evil.com".to_owned(),
    ];
    cases.push(("two Host headers".to_owned(), two, forbidden));
    check_matrix(port, &cases).await;
}

#[tokio::test]
async fn foreign_origins_are_refused_and_own_or_absent_ones_served() {
    let serve = start("info");
    let port = serve.port();
    let served = [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ];
    let refused = [
        // A sandboxed frame or a file:// page.
        "null".to_owned(),
        "http://evil.com".to_owned(),
        format!("http://localhost.evil.com:{port}"),
        format!("http://127.0.0.10:{port}"),
        format!("https://127.0.0.1:{port}"),
        format!("http://localhost:{}", other_port(port)),
        format!("http://127.0.0.1:{port}/"),
        String::new(),
    ];
    // Browsers send Sec-Fetch-Site where they send no Origin: `none` for a typed address.
    let sites = [
        ("none", Expect::Served),
        ("same-origin", Expect::Served),
        ("cross-site", Expect::Refused(403, "forbidden_origin")),
        // Another port of localhost is the same site, and a foreign page all the same.
        ("same-site", Expect::Refused(403, "forbidden_origin")),
    ];
    let host = format!("Host: 127.0.0.1:{port}");
    let forbidden = Expect::Refused(403, "forbidden_origin");
    let mut cases = vec![(
        "no Origin (editors, curl)".to_owned(),
        vec![host.clone()],
        Expect::Served,
    )];
    for (origins, expect) in [(&served[..], Expect::Served), (&refused[..], forbidden)] {
        for value in origins {
            let headers = vec![host.clone(), format!("Origin: {value}")];
            cases.push((format!("Origin {value:?}"), headers, expect));
        }
    }
    for (site, expect) in sites {
        let headers = vec![host.clone(), format!("Sec-Fetch-Site: {site}")];
        cases.push((format!("Sec-Fetch-Site {site}"), headers, expect));
    }
    let own = format!("Origin: {}", served[0]);
    let headers = vec![
        host.clone(),
        own.clone(),
        "Sec-Fetch-Site: same-origin".to_owned(),
    ];
    cases.push((
        "own Origin, same-origin".to_owned(),
        headers,
        Expect::Served,
    ));
    let headers = vec![host.clone(), own, "Origin: http://evil.com".to_owned()];
    cases.push(("two Origin headers".to_owned(), headers, forbidden));
    check_matrix(port, &cases).await;
}

#[tokio::test]
async fn each_endpoint_takes_its_own_token_only() {
    let serve = start("info");
    let port = serve.port();
    let link = serve.dashboard_link();
    let (_, key) = link.split_once("#key=").expect("the key in the link");
    let key = key.to_owned();
    let host = format!("Host: 127.0.0.1:{port}");
    let unauthorized = Expect::Refused(401, "unauthorized");
    let with = |line: String| vec![host.clone(), line];
    let api_cases = [
        ("no credentials", vec![host.clone()], unauthorized),
        (
            "a wrong token",
            with(bearer("wrong-token-0123456789abcdef")),
            unauthorized,
        ),
        (
            "the dashboard token",
            with(bearer(SERVE_TOKEN)),
            Expect::Served,
        ),
        (
            "a lower-case scheme",
            with(format!("Authorization: bearer {SERVE_TOKEN}")),
            Expect::Served,
        ),
        (
            "a longer token",
            with(bearer(&format!("{SERVE_TOKEN}x"))),
            unauthorized,
        ),
        (
            "a shorter token",
            with(bearer(&SERVE_TOKEN[..SERVE_TOKEN.len() - 1])),
            unauthorized,
        ),
        (
            "Basic",
            with(format!("Authorization: Basic {SERVE_TOKEN}")),
            unauthorized,
        ),
        ("the /mcp token", with(bearer(MCP_TOKEN)), unauthorized),
        ("the dashboard key", with(bearer(&key)), Expect::Served),
        (
            "the token as a cookie",
            with(format!("Cookie: switchboard_token={SERVE_TOKEN}")),
            unauthorized,
        ),
        (
            "the key as a cookie",
            with(format!("Cookie: theme=dark; switchboard_key={key}")),
            unauthorized,
        ),
    ];
    let mut failures = Vec::new();
    for (what, headers, expect) in &api_cases {
        let reply = exchange(port, &api_list(headers), "").await;
        check_case(&mut failures, &format!("/api, {what}"), *expect, &reply);
    }
    let in_query = request(
        &format!("GET /api/backends?token={SERVE_TOKEN} HTTP/1.1"),
        std::slice::from_ref(&host),
    );
    let reply = exchange(port, &in_query, "").await;
    check_case(
        &mut failures,
        "/api, the token in the query",
        unauthorized,
        &reply,
    );

    let mcp_cases = [
        ("no credentials", vec![host.clone()], unauthorized),
        (
            "a wrong token",
            with(bearer("wrong-token-0123456789abcdef")),
            unauthorized,
        ),
        (
            "the dashboard token",
            with(bearer(SERVE_TOKEN)),
            unauthorized,
        ),
        ("the dashboard key", with(bearer(&key)), unauthorized),
        (
            "the API token as a cookie",
            with(format!("Cookie: switchboard_token={SERVE_TOKEN}")),
            unauthorized,
        ),
        ("the /mcp token", with(bearer(MCP_TOKEN)), Expect::Served),
    ];
    for (what, headers, expect) in &mcp_cases {
        let reply = exchange(port, &mcp_initialize(headers), INITIALIZE).await;
        check_case(&mut failures, &format!("/mcp, {what}"), *expect, &reply);
        if reply.status == 401 && reply.header("www-authenticate") != Some("Bearer") {
            failures.push(format!(
                "/mcp, {what}: a 401 names the Bearer scheme: {reply:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The backend `name` as `GET /api/backends/{name}` describes it.
async fn backend(port: u16, name: &str) -> Value {
    let list = format!("GET /api/backends/{name} HTTP/1.1\r\nHost: 127.0.0.1:{port}");
    let reply = exchange(port, &request(&list, &[bearer(SERVE_TOKEN)]), "").await;
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.json()
}

#[tokio::test]
async fn a_cross_site_request_changes_nothing() {
    let serve = start("info");
    let port = serve.port();
    let before = backend(port, "mis").await;
    assert_eq!(before["state"], "ready");
    // Even a request that carries the credential (which no form can) is refused.
    let stop = format!(
        "POST /api/backends/mis/stop HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{}",
        bearer(SERVE_TOKEN)
    );
    let form = "Content-Type: application/x-www-form-urlencoded";
    let json = "Content-Type: application/json";
    let foreign = Expect::Refused(403, "forbidden_origin");
    let not_json = Expect::Refused(415, "bad_request");
    let cases: [(&str, &[&str], Expect); 8] = [
        (
            "a foreign page's form",
            &["Origin: http://evil.com", form],
            foreign,
        ),
        ("a sandboxed frame's form", &["Origin: null", form], foreign),
        // A browser that sends no Origin still says where the request came from.
        (
            "a cross-site form, no Origin",
            &["Sec-Fetch-Site: cross-site", form],
            foreign,
        ),
        (
            "another localhost port's page",
            &["Sec-Fetch-Site: same-site", json],
            foreign,
        ),
        // With neither header (an old browser): no HTML form can send JSON.
        ("a form, no Origin", &[form], not_json),
        (
            "a multipart form",
            &["Content-Type: multipart/form-data; boundary=x"],
            not_json,
        ),
        ("a text/plain form", &["Content-Type: text/plain"], not_json),
        ("no Content-Type", &[], not_json),
    ];
    let mut failures = Vec::new();
    for (what, headers, expect) in cases {
        let lines: Vec<String> = headers.iter().map(|line| line.to_string()).collect();
        let reply = exchange(port, &request(&stop, &lines), "x=1").await;
        check_case(&mut failures, what, expect, &reply);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let after = backend(port, "mis").await;
    assert_eq!(after["state"], "ready", "nothing was stopped: {after}");
    assert_eq!(after["pid"], before["pid"], "nothing was restarted");

    // The dashboard's own request, with the same credential, does stop it.
    let own = [
        format!("Origin: http://127.0.0.1:{port}"),
        "Sec-Fetch-Site: same-origin".to_owned(),
        json.to_owned(),
    ];
    let reply = exchange(port, &request(&stop, &own), "{}").await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.json()["backend"]["state"], "stopped");
}

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

/// GET `path` with the dashboard token; the status and the body.
async fn api_text(port: u16, path: &str) -> (u16, String) {
    let get = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}");
    let reply = exchange(port, &request(&get, &[bearer(SERVE_TOKEN)]), "").await;
    (reply.status, reply.body)
}

/// Polls the backend's detail until `check` holds.
async fn wait_for_backend(port: u16, name: &str, check: impl Fn(&Value) -> bool) -> Value {
    eventually(&format!("{name} gets there"), EVENT_LIMIT, || async {
        let detail = backend(port, name).await;
        if check(&detail) {
            Ok(detail)
        } else {
            Err(detail)
        }
    })
    .await
}

/// The dashboard's files below `ui/`, as the paths they are served at.
fn ui_paths() -> Vec<String> {
    fn walk(dir: &Path, base: &Path, paths: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("ui/ is readable") {
            let path = entry.expect("an entry").path();
            let relative = path
                .strip_prefix(base)
                .expect("below ui/")
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                if relative != "dev" {
                    walk(&path, base, paths);
                }
            } else if relative != "tsconfig.json" {
                paths.push(format!("/{relative}"));
            }
        }
    }
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ui");
    let mut paths = Vec::new();
    walk(&base, &base, &mut paths);
    paths
}

#[tokio::test]
async fn secrets_stay_out_of_answers_pages_logs_and_history() {
    let serve = start("debug");
    let port = serve.port();
    let host = format!("Host: 127.0.0.1:{port}");

    // Tokens in headers and cookies, right and wrong.
    let wrong = "wrong-token-in-a-header-5b9e03";
    for headers in [
        vec![host.clone(), bearer(wrong)],
        vec![host.clone(), format!("Cookie: switchboard_token={wrong}")],
    ] {
        assert_eq!(exchange(port, &api_list(&headers), "").await.status, 401);
    }
    for token in [wrong, MCP_TOKEN] {
        let reply = exchange(
            port,
            &mcp_initialize(&[host.clone(), bearer(token)]),
            INITIALIZE,
        )
        .await;
        assert_eq!(reply.status, if token == MCP_TOKEN { 200 } else { 401 });
    }
    // A crash, and handshakes that fail, make history.
    let crash = request(
        "POST /api/backends/mis/tools/crash/call HTTP/1.1",
        &[
            host.clone(),
            bearer(SERVE_TOKEN),
            "Content-Type: application/json".to_owned(),
        ],
    );
    assert_eq!(exchange(port, &crash, r#"{"code":5}"#).await.status, 502);
    let mis = wait_for_backend(port, "mis", |detail| {
        detail["state"] == "ready" && detail["history"].as_array().is_some_and(|h| !h.is_empty())
    })
    .await;
    let quitter = wait_for_backend(port, "quitter", |detail| {
        detail["history"].as_array().is_some_and(|h| h.len() >= 2)
    })
    .await;

    // What the backend prints is its own output, kept verbatim for its owner (it may be the
    // very message that explains a crash); Switchboard's own words never carry the secret.
    let own_line = format!("API_KEY={SECRET}");
    let output = mis["output"].as_array().expect("output lines");
    assert!(
        output.iter().any(|line| line["text"] == own_line.as_str()),
        "the backend printed its secret to its own stderr: {output:?}"
    );
    for detail in [&mis, &quitter] {
        assert_eq!(
            detail["config"]["env"]["API_KEY"], "••••••",
            "masked: {detail}"
        );
        let mut own_words = vec![detail["last_error"].clone()];
        for entry in detail["history"].as_array().expect("history") {
            own_words.extend([
                entry["reason"].clone(),
                entry["detail"].clone(),
                entry["exit"].clone(),
            ]);
            for line in entry["output_tail"].as_array().expect("an output tail") {
                let text = line["text"].as_str().unwrap_or_default();
                assert!(!text.contains(SECRET) || text == own_line, "{text}");
            }
        }
        for words in own_words {
            assert!(!words.to_string().contains(SECRET), "{words}");
        }
        for line in detail["output"].as_array().expect("output") {
            let text = line["text"].as_str().unwrap_or_default();
            assert!(!text.contains(SECRET) || text == own_line, "{text}");
        }
    }

    // Every answer of the API but the backends' output.
    for path in ["/api/backends", "/api/config", "/api/clients"] {
        let (status, body) = api_text(port, path).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert!(!body.contains(SECRET), "{path}: {body}");
        // The one deliberate exception: the snippet an editor needs carries /mcp's token.
        assert_eq!(
            body.contains(MCP_TOKEN),
            path == "/api/clients",
            "{path}: {body}"
        );
    }
    let mut events = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let get_events = request(
        "GET /api/events HTTP/1.1",
        &[host.clone(), bearer(SERVE_TOKEN)],
    );
    events
        .write_all(format!("{get_events}\r\n\r\n").as_bytes())
        .await
        .expect("write");
    let mut seen = String::new();
    while !seen.contains("event: config") {
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout(EVENT_LIMIT, events.read(&mut chunk))
            .await
            .expect("the first events in time")
            .expect("read");
        assert!(n > 0, "the event stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&chunk[..n]));
    }
    assert!(seen.contains("event: status"), "{seen}");
    assert!(
        !seen.contains(SECRET) && !seen.contains(MCP_TOKEN),
        "{seen}"
    );

    // The dashboard's files, which anyone who passes the guard may load.
    for path in ui_paths() {
        let reply = exchange(
            port,
            &request(&format!("GET {path} HTTP/1.1"), std::slice::from_ref(&host)),
            "",
        )
        .await;
        assert_eq!(reply.status, 200, "{path}");
        for secret in [SECRET, MCP_TOKEN, SERVE_TOKEN] {
            assert!(!reply.body.contains(secret), "{path} carries a secret");
        }
    }

    // The log: the backend's stderr is relayed at debug level as it came; nothing else carries
    // a secret, and the API token is never printed.
    let log = serve.log();
    for line in log.lines() {
        if line.contains(SECRET) {
            assert!(line.ends_with(&format!(": {own_line}")), "{line}");
        }
        for token in [MCP_TOKEN, wrong, SERVE_TOKEN] {
            assert!(!line.contains(token), "{line}");
        }
    }
    assert!(
        log.contains(&own_line),
        "the debug log relays the backend's stderr:\n{log}"
    );
}

/// Every directory and file below `roots` whose permissions let anyone but the owner in:
/// directories must be 0700, files and sockets 0600. Also returns what was looked at.
fn exposed_files(roots: &[PathBuf]) -> (Vec<String>, Vec<PathBuf>) {
    let mut exposed = Vec::new();
    let mut seen = Vec::new();
    let mut pending: Vec<PathBuf> = roots.to_vec();
    while let Some(path) = pending.pop() {
        let metadata = std::fs::symlink_metadata(&path).expect("metadata");
        let mode = metadata.permissions().mode() & 0o777;
        let file_type = metadata.file_type();
        let expected = if file_type.is_dir() { 0o700 } else { 0o600 };
        if mode != expected {
            let kind = if file_type.is_socket() {
                "socket"
            } else if file_type.is_dir() {
                "directory"
            } else {
                "file"
            };
            exposed.push(format!(
                "{kind} {} is {mode:o}, not {expected:o}",
                path.display()
            ));
        }
        if file_type.is_dir() {
            for entry in std::fs::read_dir(&path).expect("readable") {
                pending.push(entry.expect("an entry").path());
            }
        }
        seen.push(path);
    }
    (exposed, seen)
}

#[tokio::test]
async fn files_switchboard_writes_are_for_its_owner_only() {
    // Without SWITCHBOARD_TOKEN, so that serve makes the token file.
    let mut serve = ServeOptions::new(&config())
        .ready(&["mis"])
        .env_remove("SWITCHBOARD_TOKEN")
        .start();
    let dir_of = |name: &str| {
        serve
            .env()
            .into_iter()
            .find(|(key, _)| *key == name)
            .expect("a directory")
            .1
    };
    let (data, runtime) = (
        dir_of("SWITCHBOARD_DATA_DIR"),
        dir_of("SWITCHBOARD_RUNTIME_DIR"),
    );
    let catalog = data.join("catalog").join("mis.json");
    eventually("the catalog of mis is cached", EVENT_LIMIT, || async {
        catalog.exists().then_some(()).ok_or("no catalog file")
    })
    .await;

    // A move writes its lock and its record; an old lock open to others is narrowed.
    let editor_file = serve.dir().join("vscode-mcp.json");
    std::fs::write(
        &editor_file,
        r#"{"servers": {"notes": {"command": "python3", "args": ["-V"]}}}"#,
    )
    .unwrap();
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(data.join("moves"))
        .unwrap();
    std::fs::write(data.join("moves/lock"), "").unwrap();
    std::fs::set_permissions(
        data.join("moves/lock"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let moved = std::process::Command::new(switchboard_exe())
        .args(["move", "vscode", "--from"])
        .arg(&editor_file)
        .arg("--config")
        .arg(serve.config_path())
        .env("SWITCHBOARD_DATA_DIR", &data)
        .env("SWITCHBOARD_RUNTIME_DIR", &runtime)
        .output()
        .expect("move runs");
    assert!(
        moved.status.success(),
        "{}",
        String::from_utf8_lossy(&moved.stderr)
    );

    let roots = [data.clone(), runtime.clone()];
    let (exposed, seen) = exposed_files(&roots);
    assert!(exposed.is_empty(), "while serving:\n{}", exposed.join("\n"));
    for expected in [
        data.join("token"),
        catalog.clone(),
        data.join("pins/mis.json"),
        data.join("moves/lock"),
        data.join("moves/vscode.json"),
        runtime.join("switchboard.sock"),
    ] {
        assert!(
            seen.contains(&expected),
            "{} was looked at: {seen:?}",
            expected.display()
        );
    }

    serve.stop();
    let (exposed, _) = exposed_files(&roots);
    assert!(exposed.is_empty(), "after serving:\n{}", exposed.join("\n"));
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
