//! Chaos and load: a real `switchboard serve` with three backends, many client sessions over
//! `/mcp` and through `switchboard connect`, and faults injected at random moments: a backend
//! SIGKILLed; SIGSTOPped and resumed, briefly or past its health timeout; made to exit during its
//! handshake by a config reload; flooding stderr; printing garbage on stdout; a `connect` process
//! killed and an HTTP session deleted with calls in flight; requests dropped or cancelled by their
//! client. It checks that every call ends within its deadline with its own result or a clear
//! JSON-RPC error (never twice, never in another session), that service resumes after each fault,
//! and that at the end nothing leaks: no pending request, no zombie or orphan process, the same
//! file descriptors, memory back near where it started. Then it prints the figures. Timings are
//! printed, never asserted.
//!
//! The short version runs with the other tests. A long one, by hand:
//!
//! ```sh
//! SOAK_SECONDS=600 cargo test --release --test it soak:: -- --nocapture
//! ```
//!
//! Settings from the environment: `SOAK_SECONDS` (seconds of load, default 20), `SOAK_SEED`
//! (replays the random choices of a run, which prints its seed), `SOAK_HTTP_SESSIONS` (default
//! 4), `SOAK_CONNECTS` (`switchboard connect` processes, default 2), `SOAK_IN_FLIGHT` (calls in
//! flight per session, default 3).
//!
//! This file holds the test, its settings and the run's course; the callers, the faults, the
//! checks at the end and the figures are in the modules below.

mod calls;
mod chaos;
mod checks;
mod clients;
mod figures;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::support::*;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use tokio::time::Instant;

use calls::{Outcome, Plan};
use chaos::Chaos;
use checks::{end_checks, run_marker, run_processes, settled_fds, status_kib};
use clients::{Client, ConnectClient, HttpClient};
use figures::{Figures, Recorder};

/// Every backend, as named in the config (and so the prefix of its tools).
const BACKENDS: [&str; 3] = ["alpha", "beta", "demo"];
/// The backends running `misbehave.py`, which have `slow`, `hang`, `stderr` and `garbage`.
/// `alpha` forks a grandchild that ignores SIGTERM; `beta` is the one a reload breaks.
const MISBEHAVING: [&str; 2] = ["alpha", "beta"];

const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);
const HEALTH_INTERVAL: Duration = Duration::from_millis(250);
const HEALTH_TIMEOUT: Duration = Duration::from_millis(800);
/// A call with no answer this long after it was sent hangs: 5 s past its deadline.
const CALL_LIMIT: Duration = Duration::from_secs(REQUEST_TIMEOUT.as_secs() + 5);
/// How long after a fault's window the calls still count as "during faults".
const AFTERGLOW: Duration = Duration::from_secs(1);
/// How many more file descriptors serve may hold at the end than after the warm-up.
const FD_SLACK: usize = 1;
/// How much more resident memory serve may hold at the end than after the warm-up: bounded rings
/// of output and history fill up during the run, and the allocator keeps some of what was freed.
const RSS_SLACK_KIB: u64 = 16 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_ends_cleanly_service_resumes_and_nothing_leaks_under_faults() {
    let settings = Settings::from_env();
    eprintln!("{settings}");
    let mut seeds = StdRng::seed_from_u64(settings.seed);
    let serve = ServeProcess::with_config(&config_text(false), &BACKENDS);
    let serve_pid = serve.pid();
    let marker = run_marker(serve_pid);
    let recorder = Arc::new(Recorder::new());
    let env = serve.env();

    warm_up(&serve, &recorder).await;
    let fds_start = settled_fds(serve_pid).await;
    let rss_start = status_kib(serve_pid, "VmRSS");

    let http: Vec<Arc<HttpClient>> = (0..settings.http_sessions)
        .map(|n| HttpClient::new(format!("http{n}"), &serve.url(), &recorder))
        .collect();
    let connects: Vec<Arc<ConnectClient>> = (0..settings.connects)
        .map(|n| ConnectClient::new(format!("connect{n}"), &env, &recorder))
        .collect();
    let clients: Vec<Client> = http
        .iter()
        .cloned()
        .map(Client::Http)
        .chain(connects.iter().cloned().map(Client::Connect))
        .collect();
    let load_start = Instant::now();
    let until = load_start + settings.load;
    let mut callers = tokio::task::JoinSet::new();
    for client in &clients {
        for _ in 0..settings.in_flight {
            let caller = run_caller(client.clone(), recorder.clone(), seeds.random(), until);
            callers.spawn(caller);
        }
    }
    let chaos = Chaos {
        serve: &serve,
        marker: &marker,
        recorder: &recorder,
        http: &http,
        connects: &connects,
    };
    let lane_seeds: [u64; 2] = [seeds.random(), seeds.random()];
    tokio::join!(
        chaos.lane(0, lane_seeds[0], until),
        chaos.lane(1, lane_seeds[1], until)
    );
    while let Some(joined) = callers.join_next().await {
        joined.expect("a caller does not panic");
    }
    let load_time = load_start.elapsed();
    for client in &clients {
        client.close().await;
    }
    // Their connection pools hold connections to serve open.
    drop((clients, http, connects));

    let mut problems = Vec::new();
    let start = (fds_start, rss_start);
    let end = end_checks(&serve, &recorder, &marker, start, &mut problems).await;
    let log = serve.log();
    let family = run_processes(&marker);
    drop(serve);
    for pid in family {
        if !wait_gone(pid).await {
            problems.push(format!("process {pid} of the run outlived serve's SIGTERM"));
        }
    }

    let figures = Figures {
        settings: &settings,
        load_time,
        fds: (fds_start, end.fds),
        rss_kib: (rss_start, end.rss_kib, end.hwm_kib),
        pending: end.pending,
        activity: end.activity,
        restarts: end.restarts,
    };
    eprintln!("{}", figures.render(&recorder));
    problems.extend(recorder.violations());
    assert!(
        problems.is_empty(),
        "{} problems (replay with SOAK_SEED={}):\n{}\nfaults:\n{}\nserve log (last 80 lines):\n{}",
        problems.len(),
        settings.seed,
        problems.join("\n"),
        recorder.fault_timeline(),
        tail(&log, 80),
    );
}

/// What the environment asks of this run.
struct Settings {
    load: Duration,
    seed: u64,
    http_sessions: usize,
    connects: usize,
    in_flight: usize,
}

impl Settings {
    fn from_env() -> Settings {
        let number = |name: &str, default: u64| match std::env::var(name) {
            Ok(text) => text
                .parse::<u64>()
                .unwrap_or_else(|_| panic!("{name} must be a whole number, not {text:?}")),
            Err(_) => default,
        };
        Settings {
            load: Duration::from_secs(number("SOAK_SECONDS", 20)),
            seed: number("SOAK_SEED", rand::random()),
            http_sessions: number("SOAK_HTTP_SESSIONS", 4) as usize,
            connects: number("SOAK_CONNECTS", 2) as usize,
            in_flight: number("SOAK_IN_FLIGHT", 3).max(1) as usize,
        }
    }
}

impl std::fmt::Display for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "soak: seed {seed} (SOAK_SEED={seed} replays its choices), {load} s of load, \
             {http} HTTP sessions and {connects} connect processes, {in_flight} calls in flight each",
            seed = self.seed,
            load = self.load.as_secs(),
            http = self.http_sessions,
            connects = self.connects,
            in_flight = self.in_flight,
        )
    }
}

/// The config: two misbehaving backends and the demo server, with short deadlines, quick health
/// checks and quick restarts that never end in a crash loop during the run.
fn config_text(beta_exits_during_handshake: bool) -> String {
    let script = misbehave_script().to_string_lossy().into_owned();
    let mut beta_args = vec![script.clone()];
    if beta_exits_during_handshake {
        beta_args.extend(["--exit-during-handshake".to_owned(), "5".to_owned()]);
    }
    [
        server_table("alpha", "python3", &[script, "--grandchild".to_owned()]),
        server_table("beta", "python3", &beta_args),
        server_table(
            "demo",
            &switchboard_exe().to_string_lossy(),
            &["demo-server".to_owned()],
        ),
        // The activity log runs through the whole soak, payloads and all.
        "[activity]\npayloads = true\n\n".to_owned(),
    ]
    .concat()
}

fn server_table(name: &str, command: &str, args: &[String]) -> String {
    format!(
        "[servers.{name}]\ncommand = {command:?}\nargs = {args:?}\n\
         request_timeout = \"{request}ms\"\nhandshake_timeout = \"{request}ms\"\n\
         health_interval = \"{interval}ms\"\nhealth_timeout = \"{health}ms\"\n\
         stop_grace = \"300ms\"\n\n[servers.{name}.restart]\nbackoff_base = \"50ms\"\n\
         backoff_cap = \"500ms\"\nmax_restarts = 1000\nwindow = \"60s\"\nstable_after = \"2s\"\n\n",
        request = REQUEST_TIMEOUT.as_millis(),
        interval = HEALTH_INTERVAL.as_millis(),
        health = HEALTH_TIMEOUT.as_millis(),
    )
}

/// Runs every kind of call once through each transport, so that what serve allocates once (rings
/// of output, connections, caches) is there before the starting figures are taken.
async fn warm_up(serve: &ServeProcess, recorder: &Arc<Recorder>) {
    let lister = HttpClient::new("warm-list".into(), &serve.url(), recorder);
    until_listed(&lister).await;
    lister.close().await.expect("the session closes");
    for client in fresh_clients(serve, recorder, "warm") {
        for backend in MISBEHAVING {
            for plan in [
                Plan::echo(backend, format!("{}-warm", client.label())),
                Plan::stderr_flood(backend, 2500),
                Plan::garbage(backend),
                Plan::slow(backend, 30, "warm".into(), true),
            ] {
                let outcome = recorder.call(&client, &plan).await;
                assert_eq!(outcome, Outcome::Ok, "{plan:?}: {}", recorder.explain());
            }
        }
        let plan = Plan::echo("demo", format!("{}-warm", client.label()));
        let outcome = recorder.call(&client, &plan).await;
        assert_eq!(outcome, Outcome::Ok, "{plan:?}: {}", recorder.explain());
        client.close().await;
    }
}

/// Waits until the hub lists every backend's tools: serve logs a backend ready a moment before.
async fn until_listed(client: &HttpClient) {
    eventually(
        "the hub lists every backend's tools",
        EVENT_LIMIT,
        || async {
            let names = client.tool_names().await.expect("tools/list is answered");
            let listed = BACKENDS
                .iter()
                .all(|backend| names.contains(&format!("{backend}__echo")));
            if listed { Ok(()) } else { Err(names) }
        },
    )
    .await
}

/// A new session of each kind, named `{prefix}-http` and `{prefix}-connect`.
fn fresh_clients(serve: &ServeProcess, recorder: &Arc<Recorder>, prefix: &str) -> [Client; 2] {
    [
        Client::Http(HttpClient::new(
            format!("{prefix}-http"),
            &serve.url(),
            recorder,
        )),
        Client::Connect(ConnectClient::new(
            format!("{prefix}-connect"),
            &serve.env(),
            recorder,
        )),
    ]
}

/// One caller: random calls, one at a time, until `until`.
async fn run_caller(client: Client, recorder: Arc<Recorder>, seed: u64, until: Instant) {
    let mut rng = StdRng::seed_from_u64(seed);
    while Instant::now() < until {
        let plan = Plan::random(&mut rng, client.label());
        recorder.call(&client, &plan).await;
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..20))).await;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().expect("no holder panics")
}

fn tail(log: &str, lines: usize) -> String {
    let all: Vec<&str> = log.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
