//! What a sandbox costs a server's calls: the same backend run by the engine twice, once in its
//! sandbox (Landlock, with only its folders) and once without, measured in interleaved rounds in
//! one run, sequential and then 64 calls in flight:
//! 1. `switchboard demo-server`'s `echo` (the protocol alone);
//! 2. the official `server-filesystem`'s `read_text_file` of a small file in its folder (every
//!    call opens a file, which Landlock checks).
//!
//! Run: `cargo bench --bench sandbox` (options: `-- --sequential N --concurrent N --in-flight N`);
//! the second needs `npm ci` first.
#![allow(clippy::print_stdout, clippy::disallowed_methods)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;
use config::{BackendConfig, Sandbox};
use serde_json::value::RawValue;
use supervisor::status::BackendState;
use supervisor::{BackendHandle, Engine, EngineOptions};
use wire::method::Method;

/// How many turns the sequential measurements take.
const ROUNDS: usize = 20;
/// How many turns the measurements with calls in flight take.
const CONCURRENT_ROUNDS: usize = 6;

fn main() {
    let sequential = option("--sequential", 5000);
    let concurrent = option("--concurrent", 60_000);
    let in_flight = option("--in-flight", 64);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("note.txt"), "a small note").expect("a file");
    let demo = BackendConfig::new("demo", SWITCHBOARD, vec!["demo-server".to_owned()]);
    runtime.block_on(compare(
        "`switchboard demo-server`, tools/call `echo`",
        demo,
        r#"{"name":"echo","arguments":{"text":"hello"}}"#.to_owned(),
        dir.path(),
        [sequential, concurrent, in_flight],
    ));
    let filesystem =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("node_modules/.bin/mcp-server-filesystem");
    assert!(
        filesystem.exists(),
        "{} is missing: run `npm ci` first",
        filesystem.display()
    );
    let files = BackendConfig::new(
        "files",
        filesystem.to_string_lossy(),
        vec![dir.path().to_string_lossy().into_owned()],
    );
    let note = dir.path().join("note.txt");
    runtime.block_on(compare(
        "`server-filesystem`, tools/call `read_text_file` of a small file",
        files,
        serde_json::json!({"name": "read_text_file", "arguments": {"path": note}}).to_string(),
        dir.path(),
        [sequential / 4, concurrent / 4, in_flight],
    ));
}

/// Starts `config` with and without a sandbox that gives it `folder`, and measures `params`.
async fn compare(
    title: &str,
    config: BackendConfig,
    params: String,
    folder: &Path,
    [sequential, concurrent, in_flight]: [usize; 3],
) {
    let mut plain = config.clone();
    plain.name = format!("{}-plain", config.name);
    plain.health_interval = None;
    let mut sandboxed = config;
    sandboxed.name = format!("{}-sandboxed", sandboxed.name);
    sandboxed.health_interval = None;
    sandboxed.process_mut().expect("a local server").sandbox = Some(Sandbox {
        write: vec![folder.to_path_buf()],
        ..Sandbox::default()
    });
    let engine = Engine::start(
        vec![plain.clone(), sandboxed.clone()],
        EngineOptions {
            groups: supervisor::spawn::ProcessGroups::in_memory(),
            server_requests: None,
            auth: None,
        },
    );
    let plain = ready(&engine, &plain.name).await;
    let sandboxed = ready(&engine, &sandboxed.name).await;
    let params: Arc<RawValue> = Arc::from(RawValue::from_string(params).expect("json"));
    let calls = |backend: BackendHandle| {
        let params = params.clone();
        move || {
            let (backend, params) = (backend.clone(), params.clone());
            async move {
                let result = backend.request(&Method::ToolsCall, Some(&params)).await;
                let result = result.expect("an answer");
                assert!(
                    !result.get().contains("\"isError\":true"),
                    "{}",
                    result.get()
                );
            }
        }
    };
    let plain_call = calls(plain);
    let sandboxed_call = calls(sandboxed);
    for _ in 0..2 {
        measure_sequential(500, plain_call.clone()).await;
        measure_sequential(500, sandboxed_call.clone()).await;
    }
    println!(
        "{title}; {sequential} sequential (in {ROUNDS} rounds taking turns), {concurrent} with \
         {in_flight} in flight ({CONCURRENT_ROUNDS} rounds taking turns)"
    );
    print_header();
    let per_round = sequential.div_ceil(ROUNDS);
    let mut runs: [Vec<Figures>; 2] = Default::default();
    for _ in 0..ROUNDS {
        runs[0].push(measure_sequential(per_round, plain_call.clone()).await);
        runs[1].push(measure_sequential(per_round, sandboxed_call.clone()).await);
    }
    let [plain_seq, sandboxed_seq] = runs.map(Figures::combine);
    plain_seq.print("without sandbox, sequential");
    sandboxed_seq.print("sandboxed, sequential");
    let per_round = concurrent.div_ceil(CONCURRENT_ROUNDS);
    let mut runs: [Vec<Figures>; 2] = Default::default();
    for _ in 0..CONCURRENT_ROUNDS {
        runs[0].push(measure_concurrent(per_round, in_flight, plain_call.clone()).await);
        runs[1].push(measure_concurrent(per_round, in_flight, sandboxed_call.clone()).await);
    }
    let [plain_par, sandboxed_par] = runs.map(Figures::combine);
    plain_par.print(&format!("without sandbox, {in_flight} in flight"));
    sandboxed_par.print(&format!("sandboxed, {in_flight} in flight"));
    println!(
        "sandboxed / without: sequential p50 {:.3}x; {in_flight} in flight p50 {:.3}x, calls/s \
         {:.1}%",
        sandboxed_seq.p50() / plain_seq.p50(),
        sandboxed_par.p50() / plain_par.p50(),
        100.0 * sandboxed_par.rate / plain_par.rate,
    );
    println!();
    engine.shutdown().await;
}

async fn ready(engine: &Engine, name: &str) -> BackendHandle {
    let backend = engine.backend(name).expect("configured");
    let mut status = backend.watch_status();
    let ready = status
        .wait_for(|status| status.state == BackendState::Ready || status.last_error.is_some())
        .await
        .expect("a status")
        .clone();
    assert_eq!(ready.state, BackendState::Ready, "{name}: {ready:?}");
    backend
}
