//! How long a search of the registry takes from the cache, over a real source of 1,000 entries
//! and more (`tests/registry/source.py --generate 1000`, the test entries besides): read once
//! through the v0.1 API into a cache on disk, then each search reads that cache and ranks it,
//! as `switchboard search` and `/api/registry/search` do within the hour a cache is fresh. Also
//! the whole `switchboard search` command, a process started per search. Prints numbers;
//! asserts none.
//!
//! `cargo bench --bench registry`
#![allow(clippy::print_stdout, clippy::disallowed_methods)]

use std::io::BufRead as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use registry::{Refresh, Registry};

const RUNS: usize = 100;
const QUERIES: &[&str] = &["", "time", "server 42", "everything", "no such thing"];

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    sorted[((sorted.len() as f64 * fraction) as usize).min(sorted.len() - 1)]
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = root.join("target/py/bin/python");
    let python = if python.exists() {
        python
    } else {
        PathBuf::from("python3")
    };
    let mut source = Command::new(python)
        .arg(root.join("tests/registry/source.py"))
        .args(["--generate", "1000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the source starts");
    let mut line = String::new();
    std::io::BufReader::new(source.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("the source says where it listens");
    let url = serde_json::from_str::<serde_json::Value>(&line).expect("JSON")["url"]
        .as_str()
        .expect("a URL")
        .to_owned();
    let data = tempfile::tempdir().expect("a temp dir");
    let registry = Registry::new(vec![url.clone()], data.path());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");

    let started = Instant::now();
    let first = runtime.block_on(registry.load(None, Refresh::Always));
    let entries = first.reports[0].entries;
    assert!(
        first.reports[0].error.is_none(),
        "{:?}",
        first.reports[0].error
    );
    println!(
        "first read of the source: {entries} entries in {:.0} ms (11 pages of the v0.1 API)",
        started.elapsed().as_secs_f64() * 1000.0
    );

    println!("search from the cache ({RUNS} runs each; cache read from disk + ranking):");
    for query in QUERIES {
        let mut times = Vec::with_capacity(RUNS);
        let mut found = 0;
        for _ in 0..RUNS {
            let started = Instant::now();
            let loaded = runtime.block_on(registry.load(None, Refresh::IfStale));
            found = loaded.search(query).len();
            times.push(started.elapsed());
        }
        times.sort();
        println!(
            "  {query:>15?}: {found:>4} found, median {:.2} ms, p99 {:.2} ms",
            percentile(&times, 0.5).as_secs_f64() * 1000.0,
            percentile(&times, 0.99).as_secs_f64() * 1000.0
        );
    }

    let exe = root.join("target/release/switchboard");
    if exe.exists() {
        let config = data.path().join("config.toml");
        std::fs::write(&config, format!("[registry]\nsources = [{url:?}]\n")).expect("config");
        let mut times = Vec::with_capacity(20);
        for _ in 0..20 {
            let started = Instant::now();
            let status = Command::new(&exe)
                .args(["search", "time", "--config"])
                .arg(&config)
                .env("SWITCHBOARD_DATA_DIR", data.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("switchboard runs");
            assert!(status.success());
            times.push(started.elapsed());
        }
        times.sort();
        println!(
            "`switchboard search time` (a process each, 20 runs): median {:.1} ms, p99 {:.1} ms",
            percentile(&times, 0.5).as_secs_f64() * 1000.0,
            percentile(&times, 0.99).as_secs_f64() * 1000.0
        );
    } else {
        println!("(build target/release/switchboard to time the command itself)");
    }
    let _ = source.kill();
    let _ = source.wait();
}
