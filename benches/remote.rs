//! What a remote server costs through Switchboard: the same client calls `echo` on the same fast
//! Streamable HTTP MCP server on loopback directly, and through `switchboard serve` (`/mcp`, the
//! server configured by `url`), in interleaved rounds; then 64 calls in flight through it, with
//! the errors and the connections the server saw counted.
//!
//! The server is this benchmark's own: a few lines of hyper answering JSON at once, so that what
//! is measured is the HTTP hops, not a server's work.
//!
//! Run: `cargo bench --bench remote` (options: `-- --sequential N --concurrent N --in-flight N`).
#![allow(clippy::print_stdout, clippy::disallowed_methods)]

mod common;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use common::serve::Serve;
use common::*;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use serde_json::value::RawValue;

/// How many turns the sequential measurements take.
const ROUNDS: usize = 20;

fn main() {
    if std::env::args().any(|arg| arg == SERVER_MODE) {
        return run_server();
    }
    let sequential = option("--sequential", 4000);
    let concurrent = option("--concurrent", 20_000);
    let in_flight = option("--in-flight", 64);
    // The server is a process of its own (this benchmark run again), as a remote one would be.
    let mut server = Command::new(std::env::current_exe().expect("this benchmark's path"))
        .arg(SERVER_MODE)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the server starts");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.stdout.take().expect("piped")),
        &mut line,
    )
    .expect("the server says where it listens");
    let address: SocketAddr = line.trim().parse().expect("an address");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(address, sequential, concurrent, in_flight));
    let _ = server.kill();
    let _ = server.wait();
}

/// The argument that makes this benchmark the server.
const SERVER_MODE: &str = "--serve-mcp";

/// Serves until killed, after printing where it listens.
fn run_server() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let address = serve_mcp(Arc::new(Counts::default())).await;
        println!("{address}");
        std::future::pending::<()>().await;
    });
}

/// Connections the server accepted, and calls it answered.
#[derive(Default)]
struct Counts {
    connections: AtomicU64,
    calls: AtomicU64,
}

/// Serves MCP over Streamable HTTP at `/mcp` with one tool, `echo`, answering JSON at once.
async fn serve_mcp(counts: Arc<Counts>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            counts.connections.fetch_add(1, Ordering::Relaxed);
            let counts = counts.clone();
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |request| answer(request, counts.clone()));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    address
}

async fn answer(
    request: Request<hyper::body::Incoming>,
    counts: Arc<Counts>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let respond = |status: StatusCode, body: String| {
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        response
            .headers_mut()
            .insert("content-type", "application/json".parse().expect("a value"));
        response
            .headers_mut()
            .insert("mcp-session-id", "bench".parse().expect("a value"));
        Ok(response)
    };
    if request.method() != hyper::Method::POST {
        return respond(StatusCode::METHOD_NOT_ALLOWED, String::new());
    }
    let body = request
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    let message: serde_json::Value = serde_json::from_slice(&body).expect("JSON-RPC");
    let Some(id) = message.get("id") else {
        return respond(StatusCode::ACCEPTED, String::new());
    };
    let result = match message["method"].as_str() {
        Some("initialize") => serde_json::json!({
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "bench-remote", "version": "1"},
        }),
        Some("tools/list") => serde_json::json!({"tools": [{
            "name": "echo",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        }]}),
        Some("tools/call") if message["params"]["name"] == "counts" => {
            let counts = serde_json::json!({
                "connections": counts.connections.load(Ordering::Relaxed),
                "calls": counts.calls.load(Ordering::Relaxed),
            });
            serde_json::json!({"content": [{"type": "text", "text": counts.to_string()}]})
        }
        Some("tools/call") => {
            counts.calls.fetch_add(1, Ordering::Relaxed);
            serde_json::json!({"content": [{"type": "text", "text": message["params"]["arguments"]["text"]}]})
        }
        _ => serde_json::json!({}),
    };
    respond(
        StatusCode::OK,
        serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
    )
}

/// The server's counts of connections and echo calls, asked of it directly.
async fn counts(direct: &HttpClient) -> (u64, u64) {
    let params =
        RawValue::from_string(r#"{"name":"counts","arguments":{}}"#.to_owned()).expect("JSON");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{}}}"#,
        params.get()
    );
    let (_, answer) = direct.post(body).await;
    let answer: serde_json::Value = serde_json::from_str(&answer).expect("JSON");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    let counts: serde_json::Value = serde_json::from_str(text).expect("JSON");
    (
        counts["connections"].as_u64().expect("a count"),
        counts["calls"].as_u64().expect("a count"),
    )
}

async fn run(address: SocketAddr, sequential: usize, concurrent: usize, in_flight: usize) {
    let remote = format!("http://{address}/mcp");
    let serve = Serve::start(
        &format!("[servers.remote]\nurl = {remote:?}\nhealth_interval = \"off\"\n"),
        1,
    );
    let direct = HttpClient::start(&remote).await;
    // The first session may wait for the server to become ready (cold start).
    let through = HttpClient::start(&serve.url).await;
    let params = |tool: &str| -> Arc<RawValue> {
        RawValue::from_string(format!(
            r#"{{"name":"{tool}","arguments":{{"text":"hi"}}}}"#
        ))
        .expect("JSON")
        .into()
    };
    let calls = |client: &HttpClient, params: Arc<RawValue>| {
        let client = client.clone();
        let ids = Arc::new(AtomicU64::new(1));
        move || {
            let client = client.clone();
            let params = params.clone();
            let id = ids.fetch_add(1, Ordering::Relaxed);
            async move { client.call(id, &params).await }
        }
    };
    let direct_call = calls(&direct, params("echo"));
    let through_call = calls(&through, params("remote__echo"));
    // Warm both paths (connections, the pool) before measuring.
    measure_sequential(500, direct_call.clone()).await;
    measure_sequential(500, through_call.clone()).await;

    let per_round = sequential / ROUNDS;
    let mut direct_runs = Vec::new();
    let mut through_runs = Vec::new();
    for _ in 0..ROUNDS {
        direct_runs.push(measure_sequential(per_round, direct_call.clone()).await);
        through_runs.push(measure_sequential(per_round, through_call.clone()).await);
    }
    let direct_seq = Figures::combine(direct_runs);
    let through_seq = Figures::combine(through_runs);

    let (connections_before, calls_before) = counts(&direct).await;
    let through_many = measure_concurrent(concurrent, in_flight, through_call.clone()).await;
    let (connections_after, calls_after) = counts(&direct).await;
    let connections = connections_after - connections_before;
    let answered = calls_after - calls_before;
    let direct_many = measure_concurrent(concurrent, in_flight, direct_call.clone()).await;

    println!(
        "tools/call `echo` on a fast Streamable HTTP server on loopback; {sequential} sequential \
         (in {ROUNDS} rounds taking turns), {concurrent} with {in_flight} in flight"
    );
    print_header();
    direct_seq.print("direct, sequential");
    through_seq.print("through Switchboard, sequential");
    direct_many.print(&format!("direct, {in_flight} in flight"));
    through_many.print(&format!("through Switchboard, {in_flight} in flight"));
    println!();
    println!(
        "added by Switchboard: sequential p50 {:+.1} µs (target at most +150), p99 {:+.1} µs",
        through_seq.p50() - direct_seq.p50(),
        through_seq.p99() - direct_seq.p99()
    );
    println!(
        "{in_flight} in flight through Switchboard: {answered} of {concurrent} calls answered by \
         the server (every one checked), over {connections} new upstream connection(s) from \
         one pool; {:.0}% of direct's calls/s",
        100.0 * through_many.rate / direct_many.rate
    );
}
