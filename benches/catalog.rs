//! How long the hub takes to build what `tools/list` answers for a profile: the merged catalog
//! of 1,000 tools over 20 servers, named within a budget and filtered by the profile, then the
//! answer itself; and, for a profile in search mode, how long a search takes. Prints numbers;
//! asserts none.
//!
//! `cargo bench --bench catalog`
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use config::{BackendConfig, DEFAULT_PROFILE, Discovery, Pattern, Profile, Tier};
use hub::catalog::{Source, merge};
use serde_json::json;
use serde_json::value::RawValue;
use supervisor::status::Catalog;

const SERVERS: usize = 20;
const TOOLS_PER_SERVER: usize = 50;
const RUNS: usize = 200;

/// A tool the way real servers write one: a description of a few sentences, a schema of a few
/// described parameters, annotations.
fn tool(server: usize, index: usize) -> Box<RawValue> {
    let verb = ["read", "write", "list", "search", "delete"][index % 5];
    let tool = json!({
        "name": format!("{verb}_item_{index}_with_a_longer_descriptive_name_{server}"),
        "title": format!("{verb} item {index}"),
        "description": format!(
            "{verb}s one item of the collection kept by server {server}. Give the item's path \
             relative to the collection root; the answer carries the item's content and its \
             metadata, or an error saying why the item cannot be reached."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path of the item, relative to the root"},
                "limit": {"type": "integer", "description": "Largest number of entries to return"},
                "recursive": {"type": "boolean", "description": "Whether to descend into folders"},
            },
            "required": ["path"],
        },
        "annotations": {"readOnlyHint": verb == "read" || verb == "list" || verb == "search"},
    });
    serde_json::value::to_raw_value(&tool).expect("JSON")
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    sorted[((sorted.len() as f64 * fraction) as usize).min(sorted.len() - 1)]
}

fn main() {
    let configs: Vec<BackendConfig> = (0..SERVERS)
        .map(|server| BackendConfig::new(format!("server{server}"), "sh", Vec::new()))
        .collect();
    let catalogs: Vec<Arc<Catalog>> = (0..SERVERS)
        .map(|server| {
            Arc::new(Catalog {
                tools: (0..TOOLS_PER_SERVER)
                    .map(|index| tool(server, index))
                    .collect(),
                ..Catalog::default()
            })
        })
        .collect();
    let sources: Vec<Source<'_>> = configs
        .iter()
        .zip(&catalogs)
        .map(|(config, catalog)| Source {
            config,
            catalog: Some(catalog.clone()),
            listed: true,
        })
        .collect();
    let pattern = |glob: &str| Pattern {
        glob: glob.to_owned(),
        line: 1,
        column: 1,
    };
    let mut filtered = Profile::everything("filtered");
    filtered.tools = vec![pattern("server1*"), pattern("read_*"), pattern("*search*")];
    filtered.exclude_tools = vec![pattern("*_4_*")];
    filtered.tier = Tier::ReadOnly;
    filtered.max_name_length = 40;
    println!(
        "{} tools over {SERVERS} servers, {RUNS} runs each: merge, names and the tools/list answer",
        SERVERS * TOOLS_PER_SERVER
    );
    let mut search = Profile::everything("search");
    search.discovery = Discovery::Search;
    for profile in [
        Profile::everything(DEFAULT_PROFILE),
        filtered,
        search.clone(),
    ] {
        let mut times = Vec::with_capacity(RUNS);
        let mut listed = 0;
        for _ in 0..RUNS {
            let started = Instant::now();
            let merged = merge(&sources, &profile);
            let answer = merged.tools_result.text();
            times.push(started.elapsed());
            listed = merged.tools.len();
            std::hint::black_box(answer);
        }
        times.sort();
        println!(
            "profile {:<9} {listed:>4} tools listed: p50 {:.2} ms, p99 {:.2} ms (target under 5 ms)",
            profile.name,
            percentile(&times, 0.5).as_secs_f64() * 1000.0,
            percentile(&times, 0.99).as_secs_f64() * 1000.0,
        );
    }
    let merged = merge(&sources, &search);
    let started = Instant::now();
    let index = merged.search.as_ref().expect("search mode").index();
    println!(
        "search index of {} tools, built at the first search: {:.2} ms",
        index.len(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    let queries = [
        "read an item of the collection",
        "search items recursively",
        "delete the item at a path",
        "list the items of server 7",
        "write item 12",
    ];
    let mut times = Vec::with_capacity(RUNS * queries.len());
    for _ in 0..RUNS {
        for query in queries {
            let started = Instant::now();
            let hits = index.search(query, 5);
            times.push(started.elapsed());
            std::hint::black_box(hits);
        }
    }
    times.sort();
    println!(
        "search over {} tools, {} queries: p50 {:.3} ms, p99 {:.3} ms (target under 1 ms)",
        index.len(),
        times.len(),
        percentile(&times, 0.5).as_secs_f64() * 1000.0,
        percentile(&times, 0.99).as_secs_f64() * 1000.0,
    );
}
