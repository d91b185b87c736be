//! What the benchmarks share: `switchboard serve` as a child, a plain stdio JSON-RPC client, a
//! Streamable HTTP client, and the numbers they print.
#![allow(dead_code)]

pub mod serve;

use std::collections::HashMap;
use std::ffi::OsStr;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;

/// The `switchboard` binary under test.
pub const SWITCHBOARD: &str = env!("CARGO_BIN_EXE_switchboard");

/// The plainest correct async client over a child's stdio (or a socket): writes each request
/// straight to the pipe under a lock and matches answers by id in a reader task.
#[derive(Clone)]
pub struct StdioClient {
    stdin: Arc<tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>>,
    pending: Arc<Mutex<HashMap<u64, oneshot::Sender<String>>>>,
    next_id: Arc<AtomicU64>,
    _child: Option<Arc<tokio::process::Child>>,
}

impl StdioClient {
    /// Starts `program args` with `envs` and performs the MCP handshake.
    pub async fn start<I, K, V>(program: &str, args: &[&str], envs: I) -> StdioClient
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .envs(envs)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the client's server starts");
        let stdout = child.stdout.take().expect("piped");
        let stdin = child.stdin.take().expect("piped");
        StdioClient::over(stdout, stdin, Some(child)).await
    }

    /// A client over any byte stream (a unix socket, say), after the MCP handshake.
    pub async fn over<R, W>(
        reader: R,
        writer: W,
        child: Option<tokio::process::Child>,
    ) -> StdioClient
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let stdout = reader;
        let stdin: Box<dyn AsyncWrite + Send + Unpin> = Box::new(writer);
        let pending: Arc<Mutex<HashMap<u64, oneshot::Sender<String>>>> = Arc::default();
        let reader_pending = pending.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let value: serde_json::Value = serde_json::from_str(&line).expect("valid JSON");
                if let Some(id) = value.get("id").and_then(serde_json::Value::as_u64) {
                    let waiter = reader_pending.lock().expect("lock").remove(&id);
                    if let Some(waiter) = waiter {
                        let _ = waiter.send(line);
                    }
                }
            }
        });
        let client = StdioClient {
            stdin: Arc::new(tokio::sync::Mutex::new(stdin)),
            pending,
            next_id: Arc::new(AtomicU64::new(1)),
            _child: child.map(Arc::new),
        };
        let init = RawValue::from_string(INITIALIZE_PARAMS.to_owned()).expect("json");
        client
            .request("initialize", &init)
            .await
            .expect("initialized");
        let mut stdin = client.stdin.lock().await;
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await
            .expect("write");
        drop(stdin);
        client
    }

    /// Sends a request and returns the response line.
    pub async fn request(&self, method: &str, params: &RawValue) -> Option<String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        self.pending.lock().expect("lock").insert(id, reply);
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\",\"params\":{}}}\n",
            params.get()
        );
        {
            let mut stdin = self.stdin.lock().await;
            stdin.write_all(line.as_bytes()).await.ok()?;
            stdin.flush().await.ok()?;
        }
        answer.await.ok()
    }
}

pub const INITIALIZE_PARAMS: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}"#;

/// Latencies and throughput of one measured run.
pub struct Figures {
    latencies: Vec<Duration>,
    elapsed: Duration,
    pub rate: f64,
}

impl Figures {
    pub fn new(mut latencies: Vec<Duration>, elapsed: Duration) -> Figures {
        latencies.sort();
        let rate = latencies.len() as f64 / elapsed.as_secs_f64();
        Figures {
            latencies,
            elapsed,
            rate,
        }
    }

    /// The figures of several runs taken as one.
    pub fn combine(runs: impl IntoIterator<Item = Figures>) -> Figures {
        let (mut latencies, mut elapsed) = (Vec::new(), Duration::ZERO);
        for run in runs {
            latencies.extend(run.latencies);
            elapsed += run.elapsed;
        }
        Figures::new(latencies, elapsed)
    }

    pub fn percentile(&self, p: f64) -> f64 {
        let index = ((self.latencies.len() as f64 - 1.0) * p).round() as usize;
        self.latencies[index].as_secs_f64() * 1e6
    }

    pub fn p50(&self) -> f64 {
        self.percentile(0.50)
    }

    pub fn p99(&self) -> f64 {
        self.percentile(0.99)
    }

    pub fn print(&self, label: &str) {
        println!(
            "{label:<34} {:>10.1} {:>10.1} {:>12.0}",
            self.p50(),
            self.p99(),
            self.rate
        );
    }
}

pub fn print_header() {
    println!(
        "{:<34} {:>10} {:>10} {:>12}",
        "path", "p50 µs", "p99 µs", "calls/s"
    );
}

/// Times `n` calls one after another.
pub async fn measure_sequential<F, Fut>(n: usize, call: F) -> Figures
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut latencies = Vec::with_capacity(n);
    let start = Instant::now();
    for _ in 0..n {
        let began = Instant::now();
        call().await;
        latencies.push(began.elapsed());
    }
    Figures::new(latencies, start.elapsed())
}

/// Times `n` calls made by `in_flight` workers at once.
pub async fn measure_concurrent<F, Fut>(n: usize, in_flight: usize, call: F) -> Figures
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let remaining = Arc::new(AtomicU64::new(n as u64));
    let start = Instant::now();
    let workers: Vec<_> = (0..in_flight)
        .map(|_| {
            let call = call.clone();
            let remaining = remaining.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while remaining
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                        left.checked_sub(1)
                    })
                    .is_ok()
                {
                    let began = Instant::now();
                    call().await;
                    latencies.push(began.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(n);
    for worker in workers {
        latencies.extend(worker.await.expect("worker finished"));
    }
    Figures::new(latencies, start.elapsed())
}

/// Reads `--name N` options from the command line, with defaults.
pub fn option(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|arg| arg == name)
        .and_then(|index| args.get(index + 1))
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// A Streamable HTTP client as editors use it: JSON or SSE answers on keep-alive connections;
/// in a session, or (with none) sending 2026-07-28 requests, each with its `Mcp-*` headers.
#[derive(Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    url: String,
    pub session: Option<String>,
    /// The tool a stateless client's `Mcp-Name` names.
    stateless_tool: String,
    /// `/mcp`'s bearer token, when it requires one.
    token: Option<String>,
}

impl HttpClient {
    pub async fn start(url: &str) -> HttpClient {
        HttpClient::start_with(url, None).await
    }

    /// A session at `url`, every request carrying `token` as `Authorization: Bearer`.
    pub async fn start_with(url: &str, token: Option<&str>) -> HttpClient {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .build()
            .expect("client");
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{INITIALIZE_PARAMS}}}"#
        );
        let mut request = client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.body(body).send().await.expect("initialize");
        let session = response.headers()["mcp-session-id"]
            .to_str()
            .expect("ascii")
            .to_owned();
        let http = HttpClient {
            client,
            url: url.to_owned(),
            session: Some(session),
            stateless_tool: String::new(),
            token: token.map(str::to_owned),
        };
        let status = http
            .post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned())
            .await
            .0;
        assert_eq!(status, 202);
        http
    }

    /// A client of the same connections that sends 2026-07-28 requests calling `tool`.
    pub fn stateless(&self, tool: &str) -> HttpClient {
        HttpClient {
            session: None,
            stateless_tool: tool.to_owned(),
            ..self.clone()
        }
    }

    pub async fn post(&self, body: String) -> (u16, String) {
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let request = match &self.session {
            Some(session) => request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25"),
            None => request
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", &self.stateless_tool),
        };
        let response = request.body(body).send().await.expect("POST");
        let status = response.status().as_u16();
        (status, response.text().await.expect("body"))
    }

    /// Calls a tool; panics with what came back unless it is a result.
    pub async fn call(&self, id: u64, params: &RawValue) {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{}}}"#,
            params.get()
        );
        let (status, text) = self.post(body).await;
        assert!(
            status == 200 && text.contains("\"result\""),
            "HTTP {status}: {text}"
        );
    }
}
