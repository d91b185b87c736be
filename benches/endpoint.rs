//! Tool-call latency and throughput through Switchboard's endpoint, against the same fast backend
//! (`switchboard demo-server`) in the same run: a direct stdio client, Streamable HTTP at `/mcp`
//! in a session (2025-11-25) and stateless (2026-07-28, each POST on its own), `/mcp` of a second
//! serve that requires its bearer token, and `switchboard connect`. Then the idle memory of
//! `switchboard serve` with 10 backends.
//!
//! Run: `cargo bench --bench endpoint` (options: `-- --sequential N --concurrent N --in-flight N`).
#![allow(clippy::print_stdout, clippy::disallowed_methods)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::serve::{Serve, rss_kib};
use common::*;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::value::RawValue;

/// How many turns the sequential measurements take.
const ROUNDS: usize = 20;

fn main() {
    let sequential = option("--sequential", 5000);
    let concurrent = option("--concurrent", 50_000);
    let in_flight = option("--in-flight", 64);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(sequential, concurrent, in_flight));
    idle_memory(10);
}

/// `/mcp`'s token in the serve that requires one.
const MCP_TOKEN: &str = "bench-mcp-token-0123456789abcdef0123456789abcdef";

/// The name the hub exposes the demo backend's `echo` under.
const EXPOSED_ECHO: &str = "demo0__echo";

/// The leanest HTTP/1.1 client: one keep-alive connection driven by hyper, no pool. Shows how
/// much of a call over `/mcp` is the server's and how much the client's.
#[derive(Clone)]
struct LeanHttpClient {
    sender: Arc<tokio::sync::Mutex<hyper::client::conn::http1::SendRequest<Full<Bytes>>>>,
    url: String,
    session: String,
}

impl LeanHttpClient {
    async fn start(url: &str, session: &str) -> LeanHttpClient {
        let authority = url
            .trim_start_matches("http://")
            .split('/')
            .next()
            .expect("an authority");
        let stream = tokio::net::TcpStream::connect(authority)
            .await
            .expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .expect("handshake");
        tokio::spawn(connection);
        LeanHttpClient {
            sender: Arc::new(tokio::sync::Mutex::new(sender)),
            url: url.to_owned(),
            session: session.to_owned(),
        }
    }

    async fn call(&self, id: u64, params: &RawValue) {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{}}}"#,
            params.get()
        );
        let request = hyper::Request::post(&self.url)
            .header(
                "host",
                self.url
                    .trim_start_matches("http://")
                    .split('/')
                    .next()
                    .expect("host"),
            )
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", "2025-11-25")
            .body(Full::new(Bytes::from(body)))
            .expect("a request");
        let mut sender = self.sender.lock().await;
        sender.ready().await.expect("the connection is open");
        let response = sender.send_request(request).await.expect("POST");
        let status = response.status().as_u16();
        let text = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        assert!(
            status == 200 && memchr::memmem::find(&text, b"\"result\"").is_some(),
            "HTTP {status}: {}",
            String::from_utf8_lossy(&text)
        );
    }
}

async fn run(sequential: usize, concurrent: usize, in_flight: usize) {
    let serve = start_serve(1);
    let guarded = start_serve_with(1, &format!("[endpoint]\ntoken = {MCP_TOKEN:?}\n\n"));
    // A second serve like the first, so that what two processes differ by anyway is seen beside
    // what the token costs.
    let twin = start_serve(1);
    let direct = StdioClient::start(
        SWITCHBOARD,
        &["demo-server"],
        std::iter::empty::<(&str, &str)>(),
    )
    .await;
    let connect = StdioClient::start(
        SWITCHBOARD,
        &["connect"],
        [("SWITCHBOARD_RUNTIME_DIR", serve.runtime_dir.as_os_str())],
    )
    .await;
    let http = HttpClient::start(&serve.url).await;
    let with_token = HttpClient::start_with(&guarded.url, Some(MCP_TOKEN)).await;
    let twin_http = HttpClient::start(&twin.url).await;
    let profile = HttpClient::start(&format!("{}/bench", serve.url)).await;
    let stateless = http.stateless(EXPOSED_ECHO);
    let lean = LeanHttpClient::start(&serve.url, http.session.as_deref().expect("a session")).await;

    let direct_params: Arc<RawValue> = Arc::from(
        RawValue::from_string(r#"{"name":"echo","arguments":{"text":"hello"}}"#.to_owned())
            .expect("json"),
    );
    let hub_params: Arc<RawValue> = Arc::from(
        RawValue::from_string(r#"{"name":"demo0__echo","arguments":{"text":"hello"}}"#.to_owned())
            .expect("json"),
    );
    let stateless_params: Arc<RawValue> = Arc::from(
        RawValue::from_string(format!(
            r#"{{"name":"{EXPOSED_ECHO}","arguments":{{"text":"hello"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"bench","version":"1"}}}}}}"#
        ))
        .expect("json"),
    );
    let stdio_call = |client: &StdioClient, params: &Arc<RawValue>| {
        let (client, params) = (client.clone(), params.clone());
        move || {
            let (client, params) = (client.clone(), params.clone());
            async move {
                let answer = client
                    .request("tools/call", &params)
                    .await
                    .expect("answered");
                assert!(answer.contains("\"result\""), "{answer}");
            }
        }
    };
    let direct_call = stdio_call(&direct, &direct_params);
    let connect_call = stdio_call(&connect, &hub_params);
    let lean_call = {
        let (lean, params) = (lean.clone(), hub_params.clone());
        let ids = Arc::new(std::sync::atomic::AtomicU64::new(1_000_000_000));
        move || {
            let (lean, params, ids) = (lean.clone(), params.clone(), ids.clone());
            async move {
                let id = ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                lean.call(id, &params).await;
            }
        }
    };
    let http_calls = |http: &HttpClient, params: &Arc<RawValue>| {
        let (http, params) = (http.clone(), params.clone());
        let ids = Arc::new(std::sync::atomic::AtomicU64::new(1));
        move || {
            let (http, params, ids) = (http.clone(), params.clone(), ids.clone());
            async move {
                let id = ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                http.call(id, &params).await;
            }
        }
    };
    let http_call = http_calls(&http, &hub_params);
    let token_call = http_calls(&with_token, &hub_params);
    let twin_call = http_calls(&twin_http, &hub_params);
    let profile_call = http_calls(&profile, &hub_params);
    let stateless_call = http_calls(&stateless, &stateless_params);

    for _ in 0..2 {
        measure_sequential(500, direct_call.clone()).await;
        measure_sequential(500, http_call.clone()).await;
        measure_sequential(500, connect_call.clone()).await;
        measure_sequential(500, lean_call.clone()).await;
        measure_sequential(500, stateless_call.clone()).await;
        measure_sequential(500, profile_call.clone()).await;
        measure_sequential(500, token_call.clone()).await;
        measure_sequential(500, twin_call.clone()).await;
    }
    println!(
        "tools/call `echo` on `switchboard demo-server`; {sequential} sequential (in {ROUNDS} rounds taking turns), {concurrent} with {in_flight} in flight"
    );
    print_header();
    // The paths take turns in short rounds, so that whatever else the machine does in the
    // meantime weighs on each of them alike.
    let per_round = sequential.div_ceil(ROUNDS);
    let mut runs: [Vec<Figures>; 8] = Default::default();
    for _ in 0..ROUNDS {
        runs[0].push(measure_sequential(per_round, direct_call.clone()).await);
        runs[1].push(measure_sequential(per_round, http_call.clone()).await);
        runs[2].push(measure_sequential(per_round, connect_call.clone()).await);
        runs[3].push(measure_sequential(per_round, lean_call.clone()).await);
        runs[4].push(measure_sequential(per_round, stateless_call.clone()).await);
        runs[5].push(measure_sequential(per_round, profile_call.clone()).await);
        runs[6].push(measure_sequential(per_round, token_call.clone()).await);
        runs[7].push(measure_sequential(per_round, twin_call.clone()).await);
    }
    let [
        direct_seq,
        http_seq,
        connect_seq,
        lean_seq,
        stateless_seq,
        profile_seq,
        token_seq,
        twin_seq,
    ] = runs.map(Figures::combine);
    direct_seq.print("direct stdio, sequential");
    http_seq.print("HTTP /mcp, sequential");
    connect_seq.print("switchboard connect, sequential");
    lean_seq.print("HTTP /mcp, lean client, sequential");
    stateless_seq.print("HTTP /mcp 2026-07-28, sequential");
    profile_seq.print("HTTP /mcp/bench (a profile), sequential");
    token_seq.print("HTTP /mcp with its token, sequential");
    twin_seq.print("HTTP /mcp of a second serve, sequential");
    let direct_par = measure_concurrent(concurrent, in_flight, direct_call).await;
    let http_par = measure_concurrent(concurrent, in_flight, http_call).await;
    let connect_par = measure_concurrent(concurrent, in_flight, connect_call).await;
    let stateless_par = measure_concurrent(concurrent, in_flight, stateless_call).await;
    let token_par = measure_concurrent(concurrent, in_flight, token_call).await;
    let twin_par = measure_concurrent(concurrent, in_flight, twin_call).await;
    direct_par.print(&format!("direct stdio, {in_flight} in flight"));
    http_par.print(&format!("HTTP /mcp, {in_flight} in flight"));
    connect_par.print(&format!("switchboard connect, {in_flight} in flight"));
    stateless_par.print(&format!("HTTP /mcp 2026-07-28, {in_flight} in flight"));
    token_par.print(&format!("HTTP /mcp with its token, {in_flight} in flight"));
    twin_par.print(&format!(
        "HTTP /mcp of a second serve, {in_flight} in flight"
    ));
    println!();
    println!(
        "sequential p50 / direct:   HTTP {:.2}x (lean client {:.2}x), connect {:.2}x",
        http_seq.p50() / direct_seq.p50(),
        lean_seq.p50() / direct_seq.p50(),
        connect_seq.p50() / direct_seq.p50()
    );
    println!(
        "{in_flight} in flight calls/s / direct: HTTP {:.0}%, connect {:.0}%",
        100.0 * http_par.rate / direct_par.rate,
        100.0 * connect_par.rate / direct_par.rate
    );
    println!(
        "2026-07-28 / session (HTTP): sequential p50 {:.2}x, p99 {:.2}x; {in_flight} in flight calls/s {:.0}%",
        stateless_seq.p50() / http_seq.p50(),
        stateless_seq.p99() / http_seq.p99(),
        100.0 * stateless_par.rate / http_par.rate
    );
    println!(
        "profile / default (HTTP): sequential p50 {:.3}x, p99 {:.3}x",
        profile_seq.p50() / http_seq.p50(),
        profile_seq.p99() / http_seq.p99()
    );
    println!(
        "token on / off (HTTP): sequential p50 {:.3}x, p99 {:.3}x; {in_flight} in flight calls/s {:.1}%",
        token_seq.p50() / http_seq.p50(),
        token_seq.p99() / http_seq.p99(),
        100.0 * token_par.rate / http_par.rate
    );
    println!(
        "token on / a second serve without it: sequential p50 {:.3}x, p99 {:.3}x; {in_flight} in flight calls/s {:.1}%",
        token_seq.p50() / twin_seq.p50(),
        token_seq.p99() / twin_seq.p99(),
        100.0 * token_par.rate / twin_par.rate
    );
    println!(
        "second serve / first, both without a token (what two processes differ by): sequential p50 {:.3}x, p99 {:.3}x; {in_flight} in flight calls/s {:.1}%",
        twin_seq.p50() / http_seq.p50(),
        twin_seq.p99() / http_seq.p99(),
        100.0 * twin_par.rate / http_par.rate
    );
    println!("serve RSS after the load: {} KiB", serve.rss_kib());
}

/// Serve with `backends` demo servers (`demo0`, …), and a profile with a tool filter and a name
/// budget, for the cost of a profile per call.
fn start_serve(backends: usize) -> Serve {
    start_serve_with(backends, "")
}

/// [`start_serve`] with `endpoint` (an `[endpoint]` table) first in its config.
fn start_serve_with(backends: usize, endpoint: &str) -> Serve {
    let mut text = endpoint.to_owned();
    for i in 0..backends {
        text.push_str(&format!(
            "[servers.demo{i}]\ncommand = {SWITCHBOARD:?}\nargs = [\"demo-server\"]\nhealth_interval = \"off\"\n\n"
        ));
    }
    text.push_str("[profiles.bench]\ntools = [\"demo0__*\"]\nmax_name_length = 40\n");
    Serve::start(&text, backends)
}

fn idle_memory(backends: usize) {
    let serve = start_serve(backends);
    std::thread::sleep(Duration::from_secs(2));
    let own = serve.rss_kib();
    let children: u64 = children_of(serve.child.id()).into_iter().map(rss_kib).sum();
    println!();
    println!(
        "idle `switchboard serve` with {backends} backends: {:.1} MiB RSS (backends not counted; they use {:.1} MiB)",
        own as f64 / 1024.0,
        children as f64 / 1024.0
    );
}

fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat"))
                .ok()
                .and_then(|stat| {
                    stat.rsplit_once(')')
                        .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                })
                == Some(parent)
        })
        .collect()
}
