//! Tool-call latency and throughput through the engine versus a plain direct client, against the
//! same backend binary (`switchboard demo-server`) in the same run.
//!
//! Run: `cargo bench --bench engine` (options: `-- --sequential N --concurrent N --in-flight N`).
#![allow(clippy::print_stdout, clippy::disallowed_methods)]

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use switchboard::config::BackendConfig;
use switchboard::status::BackendState;
use switchboard::supervisor::{BackendHandle, Engine, EngineOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;

const DEMO: &str = env!("CARGO_BIN_EXE_switchboard");

fn main() {
    let mut sequential = 5000usize;
    let mut concurrent = 50_000usize;
    let mut in_flight = 64usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .and_then(|v| v.parse().ok())
                .expect("a number after the option")
        };
        match arg.as_str() {
            "--sequential" => sequential = value(),
            "--concurrent" => concurrent = value(),
            "--in-flight" => in_flight = value(),
            _ => {}
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(sequential, concurrent, in_flight));
}

async fn run(sequential: usize, concurrent: usize, in_flight: usize) {
    let direct = DirectClient::start().await;
    let groups = switchboard::spawn::GroupRegistry::in_memory();
    let mut config = BackendConfig::new("demo", DEMO, vec!["demo-server".to_owned()]);
    config.health_interval = None;
    let engine = Engine::start(
        vec![config],
        EngineOptions {
            groups,
            server_requests: None,
        },
    );
    let backend = engine.backend("demo").expect("configured").clone();
    let mut status = backend.watch_status();
    status
        .wait_for(|status| status.state == BackendState::Ready)
        .await
        .expect("demo backend ready");

    let params =
        RawValue::from_string(r#"{"name":"echo","arguments":{"text":"hello"}}"#.to_owned())
            .expect("json");
    let params: Arc<RawValue> = Arc::from(params);

    // Warm both paths up before measuring.
    measure_sequential(&Target::Direct(direct.clone()), &params, 500).await;
    measure_sequential(&Target::Engine(backend.clone()), &params, 500).await;

    println!(
        "tools/call `echo` on `switchboard demo-server`; {sequential} sequential, {concurrent} with {in_flight} in flight"
    );
    println!(
        "{:<28} {:>10} {:>10} {:>12}",
        "path", "p50 µs", "p99 µs", "calls/s"
    );
    let direct_seq = measure_sequential(&Target::Direct(direct.clone()), &params, sequential).await;
    let engine_seq =
        measure_sequential(&Target::Engine(backend.clone()), &params, sequential).await;
    direct_seq.print("direct, sequential");
    engine_seq.print("engine, sequential");
    let direct_par = measure_concurrent(
        &Target::Direct(direct.clone()),
        &params,
        concurrent,
        in_flight,
    )
    .await;
    let engine_par = measure_concurrent(
        &Target::Engine(backend.clone()),
        &params,
        concurrent,
        in_flight,
    )
    .await;
    direct_par.print(&format!("direct, {in_flight} in flight"));
    engine_par.print(&format!("engine, {in_flight} in flight"));
    println!();
    println!(
        "sequential p50, engine / direct:      {:.2}x",
        engine_seq.p50() / direct_seq.p50()
    );
    println!(
        "throughput {in_flight} in flight, engine / direct: {:.0}%",
        100.0 * engine_par.rate / direct_par.rate
    );
    engine.shutdown().await;
}

#[derive(Clone)]
enum Target {
    Direct(DirectClient),
    Engine(BackendHandle),
}

impl Target {
    async fn call(&self, params: &RawValue) {
        let ok = match self {
            Target::Direct(client) => client.request("tools/call", params).await.is_some(),
            Target::Engine(backend) => backend.request("tools/call", Some(params)).await.is_ok(),
        };
        assert!(ok, "every benchmark call succeeds");
    }
}

struct Figures {
    latencies: Vec<Duration>,
    rate: f64,
}

impl Figures {
    fn new(mut latencies: Vec<Duration>, elapsed: Duration) -> Figures {
        latencies.sort();
        let rate = latencies.len() as f64 / elapsed.as_secs_f64();
        Figures { latencies, rate }
    }

    fn percentile(&self, p: f64) -> f64 {
        let index = ((self.latencies.len() as f64 - 1.0) * p).round() as usize;
        self.latencies[index].as_secs_f64() * 1e6
    }

    fn p50(&self) -> f64 {
        self.percentile(0.50)
    }

    fn print(&self, label: &str) {
        println!(
            "{label:<28} {:>10.1} {:>10.1} {:>12.0}",
            self.p50(),
            self.percentile(0.99),
            self.rate
        );
    }
}

async fn measure_sequential(target: &Target, params: &RawValue, n: usize) -> Figures {
    let mut latencies = Vec::with_capacity(n);
    let start = Instant::now();
    for _ in 0..n {
        let began = Instant::now();
        target.call(params).await;
        latencies.push(began.elapsed());
    }
    Figures::new(latencies, start.elapsed())
}

async fn measure_concurrent(
    target: &Target,
    params: &Arc<RawValue>,
    n: usize,
    in_flight: usize,
) -> Figures {
    let remaining = Arc::new(AtomicU64::new(n as u64));
    let start = Instant::now();
    let workers: Vec<_> = (0..in_flight)
        .map(|_| {
            let target = target.clone();
            let params = params.clone();
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
                    target.call(&params).await;
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

/// The plainest correct async client: writes each request straight to the pipe under a lock and
/// matches answers by id in a reader task.
#[derive(Clone)]
struct DirectClient {
    stdin: Arc<tokio::sync::Mutex<tokio::process::ChildStdin>>,
    pending: Arc<Mutex<HashMap<u64, oneshot::Sender<String>>>>,
    next_id: Arc<AtomicU64>,
    _child: Arc<tokio::process::Child>,
}

impl DirectClient {
    async fn start() -> DirectClient {
        let mut child = tokio::process::Command::new(DEMO)
            .arg("demo-server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("demo server starts");
        let stdout = child.stdout.take().expect("piped");
        let stdin = child.stdin.take().expect("piped");
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
        let client = DirectClient {
            stdin: Arc::new(tokio::sync::Mutex::new(stdin)),
            pending,
            next_id: Arc::new(AtomicU64::new(1)),
            _child: Arc::new(child),
        };
        let init = RawValue::from_string(
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}"#.into(),
        )
        .expect("json");
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

    async fn request(&self, method: &str, params: &RawValue) -> Option<String> {
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
