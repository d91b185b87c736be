//! Attacks on a real `switchboard serve` over real HTTP on 127.0.0.1: DNS rebinding (Host and
//! Origin), the tokens of `/mcp` and `/api`, cross-site requests riding on the dashboard cookie,
//! oversized bodies, slow or unfinished request headers, thousands of sessions, secrets leaking
//! into answers or logs, and the permissions of the files Switchboard writes.
//!
//! Requests whose headers must be exactly as written go over raw TCP.
//!
//! This file holds the config, the raw requests and the checks the tests share; the tests are in
//! the modules below.

mod access;
mod limits;
mod secrets;

use crate::support::*;
use serde_json::Value;

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

/// The backend `name` as `GET /api/backends/{name}` describes it.
async fn backend(port: u16, name: &str) -> Value {
    let list = format!("GET /api/backends/{name} HTTP/1.1\r\nHost: 127.0.0.1:{port}");
    let reply = exchange(port, &request(&list, &[bearer(SERVE_TOKEN)]), "").await;
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.json()
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
