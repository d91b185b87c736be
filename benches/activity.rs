//! What the activity log costs and holds:
//! 1. `/mcp` with the log on against the log off: two `switchboard serve`s over the same demo
//!    server, sequential calls in interleaved rounds, then 64 calls in flight, each way in turn.
//! 2. How many records a second the log's writer keeps when records come faster than it writes.
//! 3. How long the API's queries take over a log of 1 million records.
//!
//! Run: `cargo bench --bench activity` (options: `-- --sequential N --concurrent N --in-flight N
//! --records N`).
#![allow(clippy::print_stdout, clippy::disallowed_methods)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use activity::store::{Filter, Reader};
use activity::{ActivityLog, Outcome, Record};
use common::serve::Serve;
use common::*;
use config::ActivitySettings;
use serde_json::value::RawValue;

/// How many turns the sequential measurements take.
const ROUNDS: usize = 20;
/// How many turns the measurements with calls in flight take.
const CONCURRENT_ROUNDS: usize = 6;

fn main() {
    let sequential = option("--sequential", 5000);
    let concurrent = option("--concurrent", 60_000);
    let in_flight = option("--in-flight", 64);
    let records = option("--records", 1_000_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(log_on_and_off(sequential, concurrent, in_flight));
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("activity.db");
    runtime.block_on(writer_rate(&path, records));
    queries(&path);
}

fn serve(activity: &str) -> Serve {
    Serve::start(
        &format!(
            "[servers.demo]\ncommand = {SWITCHBOARD:?}\nargs = [\"demo-server\"]\n\
             health_interval = \"off\"\n\n[activity]\n{activity}"
        ),
        1,
    )
}

async fn log_on_and_off(sequential: usize, concurrent: usize, in_flight: usize) {
    let off = serve("enabled = false\n");
    let on = serve("enabled = true\n");
    let with_payloads = serve("enabled = true\npayloads = true\n");
    let params: Arc<RawValue> = Arc::from(
        RawValue::from_string(r#"{"name":"demo__echo","arguments":{"text":"hello"}}"#.to_owned())
            .expect("json"),
    );
    let calls = |client: HttpClient| {
        let params = params.clone();
        let ids = Arc::new(std::sync::atomic::AtomicU64::new(1));
        move || {
            let (client, params, ids) = (client.clone(), params.clone(), ids.clone());
            async move {
                let id = ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                client.call(id, &params).await;
            }
        }
    };
    let off_call = calls(HttpClient::start(&off.url).await);
    let on_call = calls(HttpClient::start(&on.url).await);
    let payload_call = calls(HttpClient::start(&with_payloads.url).await);
    for _ in 0..2 {
        measure_sequential(500, off_call.clone()).await;
        measure_sequential(500, on_call.clone()).await;
        measure_sequential(500, payload_call.clone()).await;
    }
    println!(
        "tools/call `echo` over HTTP /mcp; {sequential} sequential (in {ROUNDS} rounds taking \
         turns), {concurrent} with {in_flight} in flight ({CONCURRENT_ROUNDS} rounds taking turns)"
    );
    print_header();
    let per_round = sequential.div_ceil(ROUNDS);
    let mut runs: [Vec<Figures>; 3] = Default::default();
    for _ in 0..ROUNDS {
        runs[0].push(measure_sequential(per_round, off_call.clone()).await);
        runs[1].push(measure_sequential(per_round, on_call.clone()).await);
        runs[2].push(measure_sequential(per_round, payload_call.clone()).await);
    }
    let [off_seq, on_seq, payload_seq] = runs.map(Figures::combine);
    off_seq.print("log off, sequential");
    on_seq.print("log on, sequential");
    payload_seq.print("log on with payloads, sequential");
    let mut runs: [Vec<Figures>; 3] = Default::default();
    let per_round = concurrent.div_ceil(CONCURRENT_ROUNDS);
    for _ in 0..CONCURRENT_ROUNDS {
        runs[0].push(measure_concurrent(per_round, in_flight, off_call.clone()).await);
        runs[1].push(measure_concurrent(per_round, in_flight, on_call.clone()).await);
        runs[2].push(measure_concurrent(per_round, in_flight, payload_call.clone()).await);
    }
    let [off_par, on_par, payload_par] = runs.map(Figures::combine);
    off_par.print(&format!("log off, {in_flight} in flight"));
    on_par.print(&format!("log on, {in_flight} in flight"));
    payload_par.print(&format!("log on with payloads, {in_flight} in flight"));
    println!();
    println!(
        "log on / off: sequential p50 {:.3}x (with payloads {:.3}x); {in_flight} in flight \
         calls/s {:.1}% (with payloads {:.1}%)",
        on_seq.p50() / off_seq.p50(),
        payload_seq.p50() / off_seq.p50(),
        100.0 * on_par.rate / off_par.rate,
        100.0 * payload_par.rate / off_par.rate,
    );
    let kept: u64 = ["activity.db", "activity.db-wal"]
        .iter()
        .map(|file| std::fs::metadata(on.data_dir().join(file)).map_or(0, |m| m.len()))
        .sum();
    println!(
        "the log that was on holds {:.1} MiB after the run",
        kept as f64 / 1024.0 / 1024.0
    );
}

/// A record as a busy desktop makes them: 10 servers, 20 tools each, 5 editors, mostly results.
fn record(i: u64, at_ms: u64) -> Record {
    let server = format!("server{}", i % 10);
    let tool = format!("tool{}", (i / 10) % 20);
    let outcome = match i % 100 {
        0..=2 => Outcome::ToolError,
        3 => Outcome::Error,
        4 if i % 1000 == 4 => Outcome::Timeout,
        5 if i % 1000 == 5 => Outcome::Cancelled,
        _ => Outcome::Result,
    };
    Record {
        at_ms,
        duration_us: 200 + (i * 7919) % 5000,
        session: Some(Arc::from(format!("session-{}", i % 50))),
        client: Some(Arc::from(format!("editor{}", i % 5))),
        profile: Arc::from("default"),
        server: Some(Arc::from(server.as_str())),
        method: "tools/call".into(),
        name: Some(Arc::from(format!("{server}__{tool}"))),
        original: Some(Arc::from(tool)),
        outcome,
        error_code: (outcome == Outcome::Error).then_some(-32602),
        error: (outcome == Outcome::Error).then(|| "invalid arguments".to_owned()),
        request_bytes: 120,
        response_bytes: 480,
        arguments: None,
        result: None,
        decision: None,
    }
}

/// Offers `count` records to a log as fast as one thread can make them, over the last 30 days;
/// prints how many a second the writer kept while it was saturated.
async fn writer_rate(path: &std::path::Path, count: usize) {
    let settings = ActivitySettings {
        max_size: u64::MAX,
        ..ActivitySettings::default()
    };
    let log = ActivityLog::open(path, settings);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as u64;
    let span = 30 * 24 * 3600 * 1000u64;
    let started = Instant::now();
    let mut offered = 0u64;
    for i in 0..count as u64 {
        let at = now - span + span * i / count as u64;
        log.record(record(i, at));
        offered += 1;
        // Offered faster than written: wait for room (the queue holds some 100,000) rather than
        // count most of them dropped, so that the file ends up holding `count` records.
        while offered - (log.health().recorded + log.health().dropped) > 50_000 {
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
    }
    while log.health().recorded + log.health().dropped < offered {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let elapsed = started.elapsed();
    let health = log.health();
    println!();
    println!(
        "writer: {} records kept in {:.2} s = {:.0} records/s ({} dropped, {} failed); file {:.0} MiB",
        health.recorded,
        elapsed.as_secs_f64(),
        health.recorded as f64 / elapsed.as_secs_f64(),
        health.dropped,
        health.failed,
        std::fs::metadata(path).map_or(0, |m| m.len()) as f64 / 1024.0 / 1024.0
    );
}

/// Times the dashboard's queries over the log `writer_rate` filled: the newest page with each
/// filter, a page deep into the file, and the per-tool figures over a day and over everything.
fn queries(path: &std::path::Path) {
    let reader = Reader::open(path)
        .expect("the log opens")
        .expect("the log has records");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as u64;
    let count: i64 = {
        let page = reader.page(&Filter::default(), None, 1).expect("a page");
        page.first().map_or(0, |row| row.id)
    };
    println!();
    println!("queries over {count} records (median of 20 runs, then the slowest)");
    let time = |label: &str, query: &dyn Fn() -> usize| {
        let mut runs: Vec<(Duration, usize)> = (0..20)
            .map(|_| {
                let started = Instant::now();
                let found = query();
                (started.elapsed(), found)
            })
            .collect();
        runs.sort();
        println!(
            "{label:<58} {:>8.2} ms {:>8.2} ms  ({} rows)",
            runs[10].0.as_secs_f64() * 1000.0,
            runs[19].0.as_secs_f64() * 1000.0,
            runs[10].1
        );
    };
    let reader = &reader;
    let page = |filter: Filter, before: Option<i64>| {
        move || reader.page(&filter, before, 100).expect("a page").len()
    };
    time("newest 100", &page(Filter::default(), None));
    time(
        "newest 100 of one server",
        &page(
            Filter {
                server: Some("server3".to_owned()),
                ..Filter::default()
            },
            None,
        ),
    );
    time(
        "newest 100 of one tool",
        &page(
            Filter {
                tool: Some("server3__tool7".to_owned()),
                ..Filter::default()
            },
            None,
        ),
    );
    time(
        "newest 100 of one editor",
        &page(
            Filter {
                client: Some("editor2".to_owned()),
                ..Filter::default()
            },
            None,
        ),
    );
    time(
        "newest 100 timeouts (1 in 1000)",
        &page(
            Filter {
                outcome: Some(Outcome::Timeout),
                ..Filter::default()
            },
            None,
        ),
    );
    time(
        "newest 100 errors of one tool of one editor",
        &page(
            Filter {
                tool: Some("server3__tool7".to_owned()),
                client: Some("editor3".to_owned()),
                outcome: Some(Outcome::ToolError),
                ..Filter::default()
            },
            None,
        ),
    );
    time(
        "100 from a week ago",
        &page(
            Filter {
                until_ms: Some(now - 7 * 24 * 3600 * 1000),
                ..Filter::default()
            },
            None,
        ),
    );
    time(
        "100 in the middle of the file",
        &page(Filter::default(), Some(count / 2)),
    );
    time(
        "a tool no record has",
        &page(
            Filter {
                tool: Some("nothing".to_owned()),
                ..Filter::default()
            },
            None,
        ),
    );
    let stats = |filter: Filter| move || reader.stats(&filter).expect("figures").len();
    time(
        "per-tool figures, last hour",
        &stats(Filter {
            since_ms: Some(now - 3600 * 1000),
            ..Filter::default()
        }),
    );
    time(
        "per-tool figures, last 24 hours",
        &stats(Filter {
            since_ms: Some(now - 24 * 3600 * 1000),
            ..Filter::default()
        }),
    );
    time(
        "per-tool figures, last 7 days",
        &stats(Filter {
            since_ms: Some(now - 7 * 24 * 3600 * 1000),
            ..Filter::default()
        }),
    );
    time("per-tool figures, everything", &stats(Filter::default()));
}
