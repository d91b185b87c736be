//! Tool-call latency and throughput through the engine versus a plain direct client, against the
//! same backend binary (`switchboard demo-server`) in the same run.
//!
//! Run: `cargo bench --bench engine` (options: `-- --sequential N --concurrent N --in-flight N`).
#![allow(clippy::print_stdout, clippy::disallowed_methods)]

mod common;

use std::sync::Arc;

use common::*;
use config::BackendConfig;
use serde_json::value::RawValue;
use supervisor::status::BackendState;
use supervisor::{Engine, EngineOptions};
use wire::method::Method;

fn main() {
    let sequential = option("--sequential", 5000);
    let concurrent = option("--concurrent", 50_000);
    let in_flight = option("--in-flight", 64);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(sequential, concurrent, in_flight));
}

async fn run(sequential: usize, concurrent: usize, in_flight: usize) {
    let direct = StdioClient::start(
        SWITCHBOARD,
        &["demo-server"],
        std::iter::empty::<(&str, &str)>(),
    )
    .await;
    let groups = supervisor::spawn::ProcessGroups::in_memory();
    let mut config = BackendConfig::new("demo", SWITCHBOARD, vec!["demo-server".to_owned()]);
    config.health_interval = None;
    let engine = Engine::start(
        vec![config],
        EngineOptions {
            groups,
            server_requests: None,
            auth: None,
        },
    );
    let backend = engine.backend("demo").expect("configured");
    let mut status = backend.watch_status();
    status
        .wait_for(|status| status.state == BackendState::Ready)
        .await
        .expect("demo backend ready");

    let params: Arc<RawValue> = Arc::from(
        RawValue::from_string(r#"{"name":"echo","arguments":{"text":"hello"}}"#.to_owned())
            .expect("json"),
    );
    let direct_call = {
        let (client, params) = (direct.clone(), params.clone());
        move || {
            let (client, params) = (client.clone(), params.clone());
            async move {
                assert!(client.request("tools/call", &params).await.is_some());
            }
        }
    };
    let engine_call = {
        let (backend, params) = (backend.clone(), params.clone());
        move || {
            let (backend, params) = (backend.clone(), params.clone());
            async move {
                assert!(
                    backend
                        .request(&Method::ToolsCall, Some(&params))
                        .await
                        .is_ok()
                );
            }
        }
    };

    // Warm both paths up before measuring.
    measure_sequential(500, direct_call.clone()).await;
    measure_sequential(500, engine_call.clone()).await;

    println!(
        "tools/call `echo` on `switchboard demo-server`; {sequential} sequential, {concurrent} with {in_flight} in flight"
    );
    print_header();
    let direct_seq = measure_sequential(sequential, direct_call.clone()).await;
    let engine_seq = measure_sequential(sequential, engine_call.clone()).await;
    direct_seq.print("direct, sequential");
    engine_seq.print("engine, sequential");
    let direct_par = measure_concurrent(concurrent, in_flight, direct_call).await;
    let engine_par = measure_concurrent(concurrent, in_flight, engine_call).await;
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
