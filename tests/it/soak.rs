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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::support::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;
use tokio::time::Instant;
use wire::jsonrpc;

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

/// What one call asks, and what its answer must say.
#[derive(Debug)]
struct Plan {
    backend: &'static str,
    tool: &'static str,
    arguments: Value,
    /// The text of its result; `None` for a call that can only end in an error.
    expected: Option<String>,
    /// Whether the call asks for progress.
    progress: bool,
    /// The client gives up after this long: drops the HTTP request, or cancels through connect.
    abandon_after: Option<Duration>,
}

impl Plan {
    fn echo(backend: &'static str, text: String) -> Plan {
        Plan {
            backend,
            tool: "echo",
            arguments: json!({ "text": text }),
            expected: Some(text),
            progress: false,
            abandon_after: None,
        }
    }

    fn slow(backend: &'static str, ms: u64, text: String, progress: bool) -> Plan {
        Plan {
            backend,
            tool: "slow",
            arguments: json!({ "ms": ms, "text": text }),
            expected: Some(format!("slept {ms} {text}")),
            progress,
            abandon_after: None,
        }
    }

    fn stderr_flood(backend: &'static str, lines: u64) -> Plan {
        Plan {
            backend,
            tool: "stderr",
            arguments: json!({ "lines": lines }),
            expected: Some(format!("wrote {lines}")),
            progress: false,
            abandon_after: None,
        }
    }

    fn garbage(backend: &'static str) -> Plan {
        Plan {
            backend,
            tool: "garbage",
            arguments: json!({}),
            expected: Some("after garbage".to_owned()),
            progress: false,
            abandon_after: None,
        }
    }

    /// Mostly echoes to any backend, then slow calls (half of them with progress), a few calls
    /// the client abandons, and a few that never get an answer from the backend.
    fn random(rng: &mut StdRng, client: &str) -> Plan {
        let text = format!("{client}-{:016x}", rng.random::<u64>());
        let misbehaving = MISBEHAVING[rng.random_range(0..MISBEHAVING.len())];
        match rng.random_range(0..100) {
            0..70 => Plan::echo(BACKENDS[rng.random_range(0..BACKENDS.len())], text),
            70..94 => {
                let ms = rng.random_range(20..1000);
                Plan::slow(misbehaving, ms, text, rng.random_bool(0.5))
            }
            94..97 => Plan {
                abandon_after: Some(Duration::from_millis(rng.random_range(10..300))),
                ..Plan::slow(misbehaving, rng.random_range(300..1500), text, false)
            },
            _ => Plan {
                backend: misbehaving,
                tool: "hang",
                arguments: json!({}),
                expected: None,
                progress: false,
                abandon_after: None,
            },
        }
    }

    /// Its `tools/call` line.
    fn request(&self, id: u64, progress_token: Option<&str>) -> String {
        let mut params = json!({
            "name": format!("{}__{}", self.backend, self.tool),
            "arguments": self.arguments,
        });
        if let Some(token) = progress_token {
            params["_meta"] = json!({ "progressToken": token });
        }
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }).to_string()
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Ok,
    Failed(ErrorKind),
    /// Its client gave up on it on purpose.
    Abandoned,
    /// Its `connect` process was killed by a fault.
    Disconnected,
    /// It broke an invariant (reported as a violation).
    Violation,
}

/// What a JSON-RPC error says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum ErrorKind {
    /// -32001 naming how the backend ended with the call in flight (exited, closed, stopping).
    BackendEnded,
    /// -32001 otherwise: the backend was not ready (restarting, starting, down).
    BackendDown,
    /// -32004: no answer within the request timeout.
    Timeout,
    /// -32603 "ended without a response": its session closed with the call in flight.
    SessionClosed,
    /// -32600 about the session: it was deleted before the call.
    SessionGone,
}

impl ErrorKind {
    /// The kind of an error, if it is one that faults explain.
    fn of(code: i64, message: &str) -> Option<ErrorKind> {
        match code {
            jsonrpc::BACKEND_UNAVAILABLE if message.contains("before answering") => {
                Some(ErrorKind::BackendEnded)
            }
            jsonrpc::BACKEND_UNAVAILABLE => Some(ErrorKind::BackendDown),
            jsonrpc::REQUEST_TIMEOUT => Some(ErrorKind::Timeout),
            jsonrpc::INTERNAL_ERROR if message.contains("without a response") => {
                Some(ErrorKind::SessionClosed)
            }
            jsonrpc::INVALID_REQUEST if message.contains("session") => Some(ErrorKind::SessionGone),
            _ => None,
        }
    }

    fn label(self) -> &'static str {
        match self {
            ErrorKind::BackendEnded => "backend ended mid-call (-32001)",
            ErrorKind::BackendDown => "backend not ready (-32001)",
            ErrorKind::Timeout => "timeout (-32004)",
            ErrorKind::SessionClosed => "session closed mid-call (-32603)",
            ErrorKind::SessionGone => "session deleted (-32600)",
        }
    }
}

/// Judges everything a call received: exactly one response, to this call, with this call's
/// text or a clear JSON-RPC error, and progress only with this call's token.
fn judge(
    plan: &Plan,
    id: u64,
    token: Option<&str>,
    messages: &[Value],
) -> Result<(Outcome, Option<String>), String> {
    let mut response = None;
    for message in messages {
        if message.get("method").is_some() {
            let progress_token = message["params"]["progressToken"].as_str();
            if message["method"] == "notifications/progress" && progress_token != token {
                return Err(format!("progress of another call: {message}"));
            }
        } else if response.replace(message).is_some() {
            return Err(format!("answered twice: {messages:?}"));
        }
    }
    let Some(response) = response else {
        return Err(format!(
            "no response among {} messages; the last: {:?}",
            messages.len(),
            messages.last()
        ));
    };
    if response["id"] != json!(id) {
        return Err(format!("the answer to id {id} is for another: {response}"));
    }
    if let Some(error) = response.get("error") {
        let (Some(code), Some(message)) = (error["code"].as_i64(), error["message"].as_str())
        else {
            return Err(format!("an error without code and message: {response}"));
        };
        return match ErrorKind::of(code, message) {
            Some(kind) => Ok((Outcome::Failed(kind), Some(message.to_owned()))),
            None => Err(format!("an error that no fault explains: {response}")),
        };
    }
    let text = response["result"]["content"][0]["text"].as_str();
    match &plan.expected {
        Some(expected)
            if text == Some(expected.as_str()) && response["result"]["isError"] != true =>
        {
            Ok((Outcome::Ok, None))
        }
        _ => Err(format!("expected {:?}, got {response}", plan.expected)),
    }
}

/// A client session, over HTTP or through a `connect` process.
#[derive(Clone)]
enum Client {
    Http(Arc<HttpClient>),
    Connect(Arc<ConnectClient>),
}

impl Client {
    fn label(&self) -> &str {
        match self {
            Client::Http(client) => &client.label,
            Client::Connect(client) => &client.label,
        }
    }

    async fn call(&self, plan: &Plan) -> Result<(Outcome, Option<String>), String> {
        match self {
            Client::Http(client) => client.call(plan).await,
            Client::Connect(client) => client.call(plan).await,
        }
    }

    /// Ends the session: DELETE over HTTP, closing stdin for `connect`.
    async fn close(&self) {
        let closed = match self {
            Client::Http(client) => client.close().await,
            Client::Connect(client) => client.close().await,
        };
        if let Err(problem) = closed {
            let label = self.label();
            self.recorder()
                .violation(format!("{label}: closing: {problem}"));
        }
    }

    fn recorder(&self) -> &Recorder {
        match self {
            Client::Http(client) => &client.recorder,
            Client::Connect(client) => &client.recorder,
        }
    }
}

/// An MCP client over Streamable HTTP: one session at a time, several calls in flight on it.
struct HttpClient {
    label: String,
    mcp: McpHttp,
    recorder: Arc<Recorder>,
    /// The current session; locked while one is opened, so that callers share it.
    session: tokio::sync::Mutex<Option<String>>,
    /// Sessions a fault deleted: only their calls may end for want of a session.
    deleted: Mutex<HashSet<String>>,
    next_id: AtomicU64,
}

impl HttpClient {
    fn new(label: String, url: &str, recorder: &Arc<Recorder>) -> Arc<HttpClient> {
        Arc::new(HttpClient {
            label,
            mcp: McpHttp::new(url),
            recorder: recorder.clone(),
            session: tokio::sync::Mutex::new(None),
            deleted: Mutex::new(HashSet::new()),
            next_id: AtomicU64::new(1),
        })
    }

    /// The current session, opened (initialize, then initialized) if there is none.
    async fn session(&self) -> Result<String, String> {
        let mut current = self.session.lock().await;
        if let Some(session) = current.as_ref() {
            return Ok(session.clone());
        }
        let session = self.mcp.open_session(&self.label).await?;
        self.recorder.http_sessions.fetch_add(1, Ordering::Relaxed);
        *current = Some(session.clone());
        Ok(session)
    }

    /// The names `tools/list` gives.
    async fn tool_names(&self) -> Result<Vec<String>, String> {
        let session = self.session().await?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list" });
        let reply = self.mcp.post(Some(&session), request.to_string()).await?;
        let messages = reply.messages()?;
        let tools = messages
            .iter()
            .filter_map(|message| message["result"]["tools"].as_array());
        Ok(tools
            .flatten()
            .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
            .collect())
    }

    async fn call(&self, plan: &Plan) -> Result<(Outcome, Option<String>), String> {
        let session = self.session().await?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let token = plan.progress.then(|| format!("{}-{id}", self.label));
        let exchange = self
            .mcp
            .post(Some(&session), plan.request(id, token.as_deref()));
        let reply = match plan.abandon_after {
            Some(after) => match tokio::time::timeout(after, exchange).await {
                Ok(reply) => reply?,
                Err(_) => return Ok((Outcome::Abandoned, None)),
            },
            None => exchange.await?,
        };
        if reply.status == 404 {
            let mut current = self.session.lock().await;
            if current.as_deref() == Some(session.as_str()) {
                *current = None;
            }
        } else if reply.status != 200 {
            return Err(format!("HTTP {}: {}", reply.status, reply.body));
        }
        let messages = reply.messages()?;
        let deleted = lock(&self.deleted).contains(&session);
        let judged = judge(plan, id, token.as_deref(), &messages)?;
        let for_want_of_session = matches!(
            judged.0,
            Outcome::Failed(ErrorKind::SessionClosed | ErrorKind::SessionGone)
        );
        if for_want_of_session && !deleted {
            return Err(format!(
                "session {session} failed a call though nobody deleted it: {:?}",
                judged.1
            ));
        }
        Ok(judged)
    }

    /// Deletes the current session, as a client that goes away with calls in flight does.
    async fn delete_session(&self) -> Result<bool, String> {
        let Some(session) = self.session.lock().await.take() else {
            return Ok(false);
        };
        lock(&self.deleted).insert(session.clone());
        match self.mcp.delete_session(&session).await? {
            204 => Ok(true),
            status => Err(format!("DELETE of session {session}: HTTP {status}")),
        }
    }

    async fn close(&self) -> Result<(), String> {
        self.delete_session().await.map(drop)
    }
}

/// An editor's side of `switchboard connect`: one process at a time (a new one after a fault
/// kills it), several calls in flight on it, with ids that every client uses too.
struct ConnectClient {
    label: String,
    env: Vec<(&'static str, PathBuf)>,
    recorder: Arc<Recorder>,
    next_id: AtomicU64,
    process: tokio::sync::Mutex<Option<ConnectProcess>>,
}

struct ConnectProcess {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    link: Arc<Link>,
}

/// What the reader of one `connect` process shares with the callers.
struct Link {
    pid: u32,
    calls: Mutex<LinkCalls>,
    /// Set when a fault kills the process on purpose.
    killed: AtomicBool,
}

#[derive(Default)]
struct LinkCalls {
    waiting: HashMap<u64, Waiter>,
    /// Calls their caller cancelled: a late answer to one of them is allowed, once.
    abandoned: HashSet<u64>,
    /// Set when stdout ended: no call can be answered any more.
    ended: bool,
}

struct Waiter {
    token: Option<String>,
    messages: Vec<Value>,
    reply: oneshot::Sender<Vec<Value>>,
}

impl Link {
    /// Registers a call; false when the process has already ended.
    fn expect(&self, id: u64, token: Option<String>, reply: oneshot::Sender<Vec<Value>>) -> bool {
        let mut calls = lock(&self.calls);
        if calls.ended {
            return false;
        }
        let waiter = Waiter {
            token,
            messages: Vec::new(),
            reply,
        };
        calls.waiting.insert(id, waiter);
        true
    }

    fn forget(&self, id: u64) {
        lock(&self.calls).waiting.remove(&id);
    }

    /// Gives up on a call still unanswered; false if its answer came first.
    fn abandon(&self, id: u64) -> bool {
        let mut calls = lock(&self.calls);
        let unanswered = calls.waiting.remove(&id).is_some();
        if unanswered {
            calls.abandoned.insert(id);
        }
        unanswered
    }

    /// Sends one message from stdout to the call it belongs to.
    fn route(&self, message: Value, label: &str, recorder: &Recorder) {
        let mut calls = lock(&self.calls);
        if message["method"] == "notifications/progress" {
            let token = message["params"]["progressToken"].as_str().unwrap_or("");
            let waiter = calls
                .waiting
                .values_mut()
                .find(|waiter| waiter.token.as_deref() == Some(token));
            match waiter {
                Some(waiter) => waiter.messages.push(message),
                // Progress of a call this client abandoned may still come.
                None if token.starts_with(&format!("{label}-")) => {}
                None => {
                    recorder.violation(format!("{label}: progress of another session: {message}"))
                }
            }
            return;
        }
        if message.get("method").is_some() {
            return;
        }
        let Some(id) = message["id"].as_u64() else {
            recorder.violation(format!("{label}: an answer with no id of ours: {message}"));
            return;
        };
        match calls.waiting.remove(&id) {
            Some(mut waiter) => {
                waiter.messages.push(message);
                let _ = waiter.reply.send(waiter.messages);
            }
            None if calls.abandoned.remove(&id) => {}
            None => recorder.violation(format!(
                "{label}: an answer to no call in flight (a second one, or another session's): {message}"
            )),
        }
    }

    /// Stdout ended: every call still waiting is lost with the process.
    fn end(&self) {
        let mut calls = lock(&self.calls);
        calls.ended = true;
        calls.waiting.clear();
    }

    fn ended(&self) -> bool {
        lock(&self.calls).ended
    }
}

impl ConnectClient {
    fn new(
        label: String,
        env: &[(&'static str, PathBuf)],
        recorder: &Arc<Recorder>,
    ) -> Arc<ConnectClient> {
        Arc::new(ConnectClient {
            label,
            env: env.to_vec(),
            recorder: recorder.clone(),
            next_id: AtomicU64::new(1),
            process: tokio::sync::Mutex::new(None),
        })
    }

    /// Starts `switchboard connect` and performs the MCP handshake through it.
    async fn spawn(&self) -> Result<ConnectProcess, String> {
        let mut child = tokio::process::Command::new(switchboard_exe())
            .arg("connect")
            .envs(self.env.iter().cloned())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| format!("connect does not start: {error}"))?;
        let link = Arc::new(Link {
            pid: child.id().expect("a child just spawned has a pid"),
            calls: Mutex::new(LinkCalls::default()),
            killed: AtomicBool::new(false),
        });
        let stdout = child.stdout.take().expect("stdout is piped");
        tokio::spawn(read_connect(
            stdout,
            link.clone(),
            self.label.clone(),
            self.recorder.clone(),
        ));
        let mut process = ConnectProcess {
            stdin: child.stdin.take().expect("stdin is piped"),
            child,
            link,
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        process.link.expect(id, None, reply);
        write_line(&mut process.stdin, &initialize(id, &self.label).to_string()).await?;
        let answer = tokio::time::timeout(EVENT_LIMIT, answer).await;
        let Ok(Ok(messages)) = answer else {
            return Err("connect did not answer initialize".to_owned());
        };
        if messages
            .last()
            .is_none_or(|answer| answer["result"]["protocolVersion"].is_null())
        {
            return Err(format!("connect failed initialize: {messages:?}"));
        }
        write_line(&mut process.stdin, INITIALIZED).await?;
        self.recorder
            .connect_processes
            .fetch_add(1, Ordering::Relaxed);
        Ok(process)
    }

    async fn call(&self, plan: &Plan) -> Result<(Outcome, Option<String>), String> {
        let (id, token, link, mut answer) = {
            let mut slot = self.process.lock().await;
            if slot.as_ref().is_some_and(|process| process.link.ended()) {
                let mut ended = slot.take().expect("checked above");
                let _ = ended.child.kill().await;
            }
            if slot.is_none() {
                *slot = Some(self.spawn().await?);
            }
            let process = slot.as_mut().expect("filled above");
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let token = plan.progress.then(|| format!("{}-{id}", self.label));
            let (reply, answer) = oneshot::channel();
            if !process.link.expect(id, token.clone(), reply) {
                return self.lost(&process.link);
            }
            let request = plan.request(id, token.as_deref());
            if write_line(&mut process.stdin, &request).await.is_err() {
                process.link.forget(id);
                return self.lost(&process.link);
            }
            (id, token, process.link.clone(), answer)
        };
        let answered = match plan.abandon_after {
            Some(after) => match tokio::time::timeout(after, &mut answer).await {
                Ok(answered) => answered,
                Err(_) if link.abandon(id) => {
                    let cancel = json!({
                        "jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": { "requestId": id, "reason": "the soak's client gave up" },
                    });
                    let mut slot = self.process.lock().await;
                    if let Some(process) = slot.as_mut().filter(|p| Arc::ptr_eq(&p.link, &link)) {
                        let _ = write_line(&mut process.stdin, &cancel.to_string()).await;
                    }
                    return Ok((Outcome::Abandoned, None));
                }
                Err(_) => answer.await,
            },
            None => answer.await,
        };
        match answered {
            Ok(messages) => judge(plan, id, token.as_deref(), &messages),
            Err(_) => self.lost(&link),
        }
    }

    /// A call lost with its process: expected only when a fault killed it.
    fn lost(&self, link: &Link) -> Result<(Outcome, Option<String>), String> {
        if link.killed.load(Ordering::Relaxed) {
            Ok((Outcome::Disconnected, None))
        } else {
            Err(format!(
                "connect (pid {}) ended with the call in flight",
                link.pid
            ))
        }
    }

    /// Kills the running process, as an editor that crashes with calls in flight.
    async fn kill(&self) -> bool {
        let mut slot = self.process.lock().await;
        let Some(process) = slot.as_mut().filter(|process| !process.link.ended()) else {
            return false;
        };
        process.link.killed.store(true, Ordering::Relaxed);
        process.child.start_kill().is_ok()
    }

    /// Closes stdin, as an editor that quits; `connect` then exits 0.
    async fn close(&self) -> Result<(), String> {
        let Some(process) = self.process.lock().await.take() else {
            return Ok(());
        };
        let ConnectProcess {
            mut child,
            stdin,
            link,
        } = process;
        drop(stdin);
        match tokio::time::timeout(EVENT_LIMIT, child.wait()).await {
            Ok(Ok(status)) if status.success() || link.killed.load(Ordering::Relaxed) => Ok(()),
            Ok(Ok(status)) => Err(format!("connect exited with {status} after stdin closed")),
            _ => Err(format!(
                "connect did not exit within {EVENT_LIMIT:?} of stdin closing"
            )),
        }
    }
}

async fn write_line(stdin: &mut tokio::process::ChildStdin, message: &str) -> Result<(), String> {
    let line = format!("{message}\n");
    stdin
        .write_all(line.as_bytes())
        .await
        .map_err(|error| format!("writing to connect failed: {error}"))
}

/// Reads a `connect` process's stdout, which must carry only JSON, until it ends.
async fn read_connect(
    stdout: tokio::process::ChildStdout,
    link: Arc<Link>,
    label: String,
    recorder: Arc<Recorder>,
) {
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        match serde_json::from_str::<Value>(&line) {
            Ok(message) => link.route(message, &label, &recorder),
            Err(_) => {
                recorder.violation(format!("{label}: connect wrote a non-JSON line: {line:?}"))
            }
        }
    }
    link.end();
}

/// The kinds of fault injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    Kill,
    PauseShort,
    PauseLong,
    HandshakeExit,
    StderrFlood,
    Garbage,
    ConnectKilled,
    SessionDeleted,
}

impl Fault {
    /// Each kind with its weight in the random choice.
    const WEIGHTS: [(Fault, u32); 8] = [
        (Fault::Kill, 20),
        (Fault::PauseShort, 12),
        (Fault::PauseLong, 10),
        (Fault::HandshakeExit, 8),
        (Fault::StderrFlood, 14),
        (Fault::Garbage, 12),
        (Fault::ConnectKilled, 12),
        (Fault::SessionDeleted, 12),
    ];

    fn label(self) -> &'static str {
        match self {
            Fault::Kill => "backend SIGKILLed",
            Fault::PauseShort => "backend SIGSTOPped < health_timeout, resumed",
            Fault::PauseLong => "backend SIGSTOPped > health_timeout, resumed",
            Fault::HandshakeExit => "reload: backend exits in handshake, reload back",
            Fault::StderrFlood => "stderr flood",
            Fault::Garbage => "garbage on stdout",
            Fault::ConnectKilled => "connect process SIGKILLed mid-call",
            Fault::SessionDeleted => "HTTP session DELETEd mid-call",
        }
    }

    /// A random kind; only one lane changes the config, so reloads never overlap.
    fn random(rng: &mut StdRng, may_reload: bool) -> Fault {
        let weights = Fault::WEIGHTS
            .iter()
            .filter(|(fault, _)| may_reload || *fault != Fault::HandshakeExit);
        let total: u32 = weights.clone().map(|(_, weight)| weight).sum();
        let mut pick = rng.random_range(0..total);
        for &(fault, weight) in weights {
            if pick < weight {
                return fault;
            }
            pick -= weight;
        }
        unreachable!("the pick is below the total weight")
    }
}

/// Where to check that service resumed after a fault.
enum Resumes {
    Backend(&'static str),
    Client(Client),
}

/// What the fault lanes act on.
struct Chaos<'a> {
    serve: &'a ServeProcess,
    marker: &'a str,
    recorder: &'a Arc<Recorder>,
    http: &'a [Arc<HttpClient>],
    connects: &'a [Arc<ConnectClient>],
}

impl Chaos<'_> {
    /// Injects random faults one after another until `until`, checking after each that service
    /// resumed. Two lanes run at once, so faults overlap. Lane 0 begins with every kind once, in
    /// random order, so that every run has all of them; only it reloads the config.
    async fn lane(&self, lane: usize, seed: u64, until: Instant) {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut first: Vec<Fault> = match lane {
            0 => Fault::WEIGHTS.iter().map(|(fault, _)| *fault).collect(),
            _ => Vec::new(),
        };
        first.shuffle(&mut rng);
        let client = Client::Http(HttpClient::new(
            format!("lane{lane}"),
            &self.serve.url(),
            self.recorder,
        ));
        while Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(rng.random_range(300..2500))).await;
            let fault = first
                .pop()
                .unwrap_or_else(|| Fault::random(&mut rng, lane == 0));
            let injected = Instant::now();
            let Some(resumes) = self.inject(fault, &mut rng, &client).await else {
                continue;
            };
            self.resume(fault, resumes, &client).await;
            lock(&self.recorder.faults).push(FaultRecord {
                fault,
                injected,
                resumed: Instant::now(),
            });
        }
        client.close().await;
    }

    /// Injects `fault`; `None` when there was nothing to inject it into.
    async fn inject(&self, fault: Fault, rng: &mut StdRng, client: &Client) -> Option<Resumes> {
        let any_backend = BACKENDS[rng.random_range(0..BACKENDS.len())];
        let misbehaving = MISBEHAVING[rng.random_range(0..MISBEHAVING.len())];
        match fault {
            Fault::Kill => {
                let pid = self.backend_pid(any_backend).await?;
                self.signal(pid, Signal::SIGKILL);
                Some(Resumes::Backend(any_backend))
            }
            Fault::PauseShort | Fault::PauseLong => {
                let pid = self.backend_pid(any_backend).await?;
                let paused = if fault == Fault::PauseShort {
                    rng.random_range(50..HEALTH_TIMEOUT.as_millis() as u64 / 2)
                } else {
                    let detected = HEALTH_TIMEOUT + HEALTH_INTERVAL;
                    detected.as_millis() as u64 + rng.random_range(300..1500)
                };
                self.signal(pid, Signal::SIGSTOP);
                tokio::time::sleep(Duration::from_millis(paused)).await;
                self.signal(pid, Signal::SIGCONT);
                Some(Resumes::Backend(any_backend))
            }
            Fault::HandshakeExit => {
                self.reload(&config_text(true)).await;
                tokio::time::sleep(Duration::from_millis(rng.random_range(1000..3000))).await;
                self.reload(&config_text(false)).await;
                Some(Resumes::Backend("beta"))
            }
            Fault::StderrFlood => {
                let plan = Plan::stderr_flood(misbehaving, rng.random_range(2000..20_000));
                self.recorder.call(client, &plan).await;
                Some(Resumes::Backend(misbehaving))
            }
            Fault::Garbage => {
                self.recorder
                    .call(client, &Plan::garbage(misbehaving))
                    .await;
                Some(Resumes::Backend(misbehaving))
            }
            Fault::ConnectKilled => {
                let connects = self.connects;
                let chosen = connects.get(rng.random_range(0..connects.len().max(1)))?;
                let killed = chosen.kill().await;
                killed.then(|| Resumes::Client(Client::Connect(chosen.clone())))
            }
            Fault::SessionDeleted => {
                let http = self.http;
                let chosen = http.get(rng.random_range(0..http.len().max(1)))?;
                match chosen.delete_session().await {
                    Ok(deleted) => deleted.then(|| Resumes::Client(Client::Http(chosen.clone()))),
                    Err(problem) => {
                        self.recorder
                            .violation(format!("{}: {problem}", chosen.label));
                        None
                    }
                }
            }
        }
    }

    /// Waits until service resumed after `fault`: the backend answers an echo again, or the
    /// client gets an answer (any: the backend it asks may be down for another fault).
    async fn resume(&self, fault: Fault, resumes: Resumes, lane_client: &Client) {
        let (client, backend, any_answer) = match resumes {
            Resumes::Backend(backend) => (lane_client.clone(), backend, false),
            Resumes::Client(client) => (client, "demo", true),
        };
        let resumed = poll(EVENT_LIMIT, || async {
            let list = self.serve.api_get("/api/backends").await;
            let ready = list.as_array().is_some_and(|list| {
                list.iter()
                    .any(|summary| summary["name"] == backend && summary["state"] == "ready")
            });
            if !ready {
                return Err(());
            }
            let serial = self.recorder.serial.fetch_add(1, Ordering::Relaxed);
            let plan = Plan::echo(backend, format!("{}-again-{serial}", client.label()));
            match self.recorder.call(&client, &plan).await {
                Outcome::Ok => Ok(()),
                Outcome::Failed(_) if any_answer => Ok(()),
                _ => Err(()),
            }
        })
        .await;
        if resumed.is_err() {
            self.recorder.violation(format!(
                "service did not resume within {EVENT_LIMIT:?} after: {} ({})",
                fault.label(),
                client.label()
            ));
        }
    }

    /// The pid of `backend`'s process, if it has one that belongs to this run.
    async fn backend_pid(&self, backend: &str) -> Option<u32> {
        let list = self.serve.api_get("/api/backends").await;
        let pid = list
            .as_array()?
            .iter()
            .find(|summary| summary["name"] == backend)?["pid"]
            .as_u64()? as u32;
        carries(pid, self.marker).then_some(pid)
    }

    /// Signals `pid` if it is still a process of this run (never a stranger that reused it).
    fn signal(&self, pid: u32, signal: Signal) {
        if carries(pid, self.marker) {
            let _ = kill(Pid::from_raw(pid as i32), signal);
        }
    }

    /// Saves `text` as the config, the way editors do (a temporary file renamed over it), and
    /// has serve reload it now.
    async fn reload(&self, text: &str) {
        let path = self.serve.config_path();
        let temporary = path.with_extension("toml.tmp");
        std::fs::write(&temporary, text).expect("the temporary config is written");
        std::fs::rename(&temporary, &path).expect("the config is replaced");
        let outcome = self.serve.api_post("/api/config/reload").await;
        if outcome["outcome"] != "applied" {
            self.recorder
                .violation(format!("a valid config did not apply: {outcome}"));
        }
    }
}

/// Everything the soak records, shared by callers and fault lanes.
struct Recorder {
    start: Instant,
    calls: Mutex<Vec<CallRecord>>,
    faults: Mutex<Vec<FaultRecord>>,
    violations: Mutex<Vec<String>>,
    /// The first message of each kind of error, to show what callers saw.
    error_samples: Mutex<BTreeMap<ErrorKind, String>>,
    http_sessions: AtomicU64,
    connect_processes: AtomicU64,
    /// Makes the texts of calls that are not random unique.
    serial: AtomicU64,
}

struct CallRecord {
    echo: bool,
    started: Instant,
    ended: Instant,
    outcome: Outcome,
}

struct FaultRecord {
    fault: Fault,
    injected: Instant,
    resumed: Instant,
}

impl Recorder {
    fn new() -> Recorder {
        Recorder {
            start: Instant::now(),
            calls: Mutex::new(Vec::new()),
            faults: Mutex::new(Vec::new()),
            violations: Mutex::new(Vec::new()),
            error_samples: Mutex::new(BTreeMap::new()),
            http_sessions: AtomicU64::new(0),
            connect_processes: AtomicU64::new(0),
            serial: AtomicU64::new(0),
        }
    }

    /// Makes one call through `client` within [`CALL_LIMIT`], and records how it ended.
    async fn call(&self, client: &Client, plan: &Plan) -> Outcome {
        let started = Instant::now();
        let outcome = match tokio::time::timeout(CALL_LIMIT, client.call(plan)).await {
            Ok(Ok((outcome, message))) => {
                if let (Outcome::Failed(kind), Some(message)) = (outcome, message) {
                    lock(&self.error_samples).entry(kind).or_insert(message);
                }
                outcome
            }
            Ok(Err(problem)) => {
                self.violation(format!("{} {plan:?}: {problem}", client.label()));
                Outcome::Violation
            }
            Err(_) => {
                self.violation(format!(
                    "{} {plan:?}: no answer within {CALL_LIMIT:?}",
                    client.label()
                ));
                Outcome::Violation
            }
        };
        lock(&self.calls).push(CallRecord {
            echo: plan.tool == "echo",
            started,
            ended: Instant::now(),
            outcome,
        });
        outcome
    }

    fn violation(&self, text: String) {
        let at = self.start.elapsed().as_secs_f64();
        lock(&self.violations).push(format!("[{at:8.3} s] {text}"));
    }

    /// The violations and the error samples so far, for a failure message.
    fn explain(&self) -> String {
        format!(
            "violations: {:?}; errors: {:?}",
            lock(&self.violations),
            lock(&self.error_samples)
        )
    }

    fn violations(&self) -> Vec<String> {
        lock(&self.violations).clone()
    }

    fn fault_timeline(&self) -> String {
        let mut timeline = String::new();
        for record in lock(&self.faults).iter() {
            let _ = writeln!(
                timeline,
                "[{:8.3} s → {:8.3} s] {}",
                (record.injected - self.start).as_secs_f64(),
                (record.resumed - self.start).as_secs_f64(),
                record.fault.label()
            );
        }
        timeline
    }
}

/// What the end of the run measured.
struct End {
    fds: usize,
    rss_kib: u64,
    hwm_kib: u64,
    /// Requests awaiting an answer per backend, if `/api/backends` reports them.
    pending: Option<u64>,
    activity: LogFigures,
    restarts: BTreeMap<String, u64>,
}

/// What the activity log says it did.
#[derive(Debug, Clone, Copy)]
struct LogFigures {
    recorded: u64,
    dropped: u64,
    failed: u64,
}

/// The activity log's figures once it has kept at least `answered` records (or the limit
/// passes): its writer stores a batch every 50 ms.
async fn settled_activity(serve: &ServeProcess, answered: u64) -> LogFigures {
    let reading = poll(EVENT_LIMIT, || async {
        let health = &serve.api_get("/api/activity?limit=1").await["health"];
        let figure = |name: &str| health[name].as_u64().unwrap_or(0);
        let figures = LogFigures {
            recorded: figure("recorded"),
            dropped: figure("dropped"),
            failed: figure("failed"),
        };
        if figures.recorded >= answered {
            Ok(figures)
        } else {
            Err(figures)
        }
    })
    .await;
    reading.unwrap_or_else(|last| last)
}

/// After the load: every backend ready and answering through fresh sessions of both kinds, no
/// pending request, no zombie, no process of the run outside the backends' groups, the run's
/// record of its process groups matching the backends, and serve's file descriptors and memory
/// back to about where they were after the warm-up (`start`).
async fn end_checks(
    serve: &ServeProcess,
    recorder: &Arc<Recorder>,
    marker: &str,
    (fds_start, rss_start): (usize, u64),
    problems: &mut Vec<String>,
) -> End {
    let serve_pid = serve.pid();
    let list = match all_ready(serve).await {
        Ok(list) => list,
        Err(list) => {
            problems.push(format!("not every backend is ready again: {list:#}"));
            list
        }
    };
    for client in fresh_clients(serve, recorder, "final") {
        for backend in BACKENDS {
            let plan = Plan::echo(backend, format!("{}-{backend}", client.label()));
            let outcome = recorder.call(&client, &plan).await;
            if outcome != Outcome::Ok {
                problems.push(format!(
                    "{}: {backend} did not answer: {outcome:?}",
                    client.label()
                ));
            }
        }
        client.close().await;
    }

    let pending = settled_pending(serve).await;
    if pending.is_some_and(|pending| pending > 0) {
        problems.push(format!("{pending:?} requests still pending"));
    }
    let answered = lock(&recorder.calls)
        .iter()
        .filter(|call| call.outcome == Outcome::Ok)
        .count() as u64;
    let activity = settled_activity(serve, answered).await;
    if activity.recorded < answered || activity.dropped + activity.failed > 0 {
        problems.push(format!(
            "the activity log kept {} records for {answered} answered calls, dropped {}, failed {}",
            activity.recorded, activity.dropped, activity.failed
        ));
    }
    let zombies = settled(|| zombie_children(serve_pid), Vec::is_empty).await;
    if !zombies.is_empty() {
        problems.push(format!("zombie children of serve: {zombies:?}"));
    }
    let groups: HashSet<i32> = list
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|summary| summary["pid"].as_i64())
        .map(|pid| pid as i32)
        .collect();
    check_processes(serve, marker, &groups, problems);

    let fds = settled(|| fd_count(serve_pid), |&fds| fds <= fds_start).await;
    if fds > fds_start + FD_SLACK {
        problems.push(format!(
            "serve holds {fds} file descriptors, {fds_start} after the warm-up"
        ));
    }
    let rss_kib = status_kib(serve_pid, "VmRSS");
    if rss_kib > rss_start + RSS_SLACK_KIB {
        problems.push(format!(
            "serve's RSS grew from {rss_start} KiB to {rss_kib} KiB"
        ));
    }
    End {
        fds,
        rss_kib,
        hwm_kib: status_kib(serve_pid, "VmHWM"),
        pending,
        activity,
        restarts: list
            .as_array()
            .into_iter()
            .flatten()
            .map(|summary| {
                let name = summary["name"].as_str().unwrap_or("?").to_owned();
                (name, summary["restarts"].as_u64().unwrap_or(0))
            })
            .collect(),
    }
}

/// Every process of the run is in the group of a running backend, the run's record of its
/// process groups on disk names exactly those groups, and the grandchild of `alpha` is among them (so the final check
/// that none outlives serve covers a grandchild).
fn check_processes(
    serve: &ServeProcess,
    marker: &str,
    groups: &HashSet<i32>,
    problems: &mut Vec<String>,
) {
    let members = run_processes(marker);
    for &pid in &members {
        let group = stat(pid).and_then(|fields| fields.get(2)?.parse::<i32>().ok());
        if !group.is_some_and(|group| groups.contains(&group)) {
            problems.push(format!(
                "process {pid} of the run is outside every backend's group (group {group:?}): {:?}",
                std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default()
            ));
        }
    }
    let grandchildren = members
        .iter()
        .filter(|pid| !groups.contains(&(**pid as i32)))
        .count();
    if grandchildren == 0 {
        problems.push("alpha's grandchild is not running".to_owned());
    }
    let run_id = marker
        .split_once('=')
        .map_or("", |(_, run_id)| run_id)
        .to_owned();
    let runtime_dir = serve
        .env()
        .into_iter()
        .find(|(name, _)| *name == "SWITCHBOARD_RUNTIME_DIR")
        .map(|(_, dir)| dir)
        .expect("serve has a runtime directory");
    let record =
        std::fs::read_to_string(runtime_dir.join("groups").join(run_id)).unwrap_or_default();
    let recorded: HashSet<i32> = record
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect();
    if &recorded != groups {
        problems.push(format!(
            "the record of process groups names {recorded:?}, the backends run {groups:?}"
        ));
    }
}

/// Waits until every backend is ready; the last list either way.
async fn all_ready(serve: &ServeProcess) -> Result<Value, Value> {
    poll(EVENT_LIMIT, || async {
        let list = serve.api_get("/api/backends").await;
        let ready = list.as_array().is_some_and(|list| {
            list.len() == BACKENDS.len() && list.iter().all(|summary| summary["state"] == "ready")
        });
        if ready { Ok(list) } else { Err(list) }
    })
    .await
}

/// The requests pending at all backends once health pings in flight are answered, if
/// `/api/backends` reports them.
async fn settled_pending(serve: &ServeProcess) -> Option<u64> {
    let settled = poll(EVENT_LIMIT, || async {
        let list = serve.api_get("/api/backends").await;
        let counts: Option<Vec<u64>> = list.as_array().and_then(|list| {
            list.iter()
                .map(|summary| summary.get("pending").and_then(Value::as_u64))
                .collect()
        });
        match counts.map(|counts| counts.iter().sum()) {
            Some(0) => Ok(Some(0)),
            Some(total) => Err(total),
            None => Ok(None),
        }
    })
    .await;
    settled.unwrap_or_else(Some)
}

/// Polls `read` until `done` holds for its reading (or the limit passes); the last reading.
async fn settled<T>(read: impl Fn() -> T, done: impl Fn(&T) -> bool) -> T {
    let reading = poll(EVENT_LIMIT, || async {
        let value = read();
        if done(&value) { Ok(value) } else { Err(value) }
    })
    .await;
    reading.unwrap_or_else(|last| last)
}

/// serve's file descriptors once their count has held still for a second.
async fn settled_fds(pid: u32) -> usize {
    let deadline = Instant::now() + EVENT_LIMIT;
    let mut count = fd_count(pid);
    let mut still_since = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = fd_count(pid);
        if now != count {
            (count, still_since) = (now, Instant::now());
        } else if still_since.elapsed() >= Duration::from_secs(1) || Instant::now() > deadline {
            return count;
        }
    }
}

/// `SWITCHBOARD_RUN_ID=<run id>`, as every backend process of this serve carries it.
fn run_marker(serve_pid: u32) -> String {
    let started = stat(serve_pid)
        .and_then(|fields| fields.get(19).cloned())
        .expect("serve's start time");
    format!("{}={serve_pid}-{started}", supervisor::spawn::RUN_ID_ENV)
}

/// The fields of `/proc/PID/stat` after the command name: 0 is the state, 1 the parent, 2 the
/// process group, 19 the start time.
fn stat(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, fields) = stat.rsplit_once(')')?;
    Some(fields.split_whitespace().map(str::to_owned).collect())
}

fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .expect("/proc lists")
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .collect()
}

/// Whether `pid` is alive and its environment carries `marker`.
fn carries(pid: u32, marker: &str) -> bool {
    alive(pid)
        && std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
            environ
                .split(|&byte| byte == 0)
                .any(|entry| entry == marker.as_bytes())
        })
}

/// Every live process of the run: backends and whatever they started.
fn run_processes(marker: &str) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|&pid| carries(pid, marker))
        .collect()
}

fn zombie_children(parent: u32) -> Vec<u32> {
    let parent = parent.to_string();
    all_pids()
        .into_iter()
        .filter(|&pid| stat(pid).is_some_and(|fields| fields[0] == "Z" && fields[1] == parent))
        .collect()
}

fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|entries| entries.count())
        .unwrap_or(0)
}

/// A `kB` field of `/proc/PID/status` (`VmRSS`, `VmHWM`).
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().expect("no holder panics")
}

fn tail(log: &str, lines: usize) -> String {
    let all: Vec<&str> = log.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The figures printed at the end.
struct Figures<'a> {
    settings: &'a Settings,
    load_time: Duration,
    fds: (usize, usize),
    rss_kib: (u64, u64, u64),
    pending: Option<u64>,
    activity: LogFigures,
    restarts: BTreeMap<String, u64>,
}

impl Figures<'_> {
    fn render(&self, recorder: &Recorder) -> String {
        let calls = lock(&recorder.calls);
        let faults = lock(&recorder.faults);
        let mut outcomes: BTreeMap<Outcome, u64> = BTreeMap::new();
        for call in calls.iter() {
            *outcomes.entry(call.outcome).or_default() += 1;
        }
        let count = |outcome: Outcome| outcomes.get(&outcome).copied().unwrap_or(0);
        let errors: u64 = outcomes
            .iter()
            .filter(|(outcome, _)| matches!(outcome, Outcome::Failed(_)))
            .map(|(_, n)| n)
            .sum();
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.settings);
        let _ = writeln!(
            out,
            "duration     {:.1} s of load",
            self.load_time.as_secs_f64()
        );
        let _ = writeln!(
            out,
            "calls        {} — ok {}, errors {errors}, abandoned by their client {}, lost with a \
             killed connect {}, violations {}",
            calls.len(),
            count(Outcome::Ok),
            count(Outcome::Abandoned),
            count(Outcome::Disconnected),
            count(Outcome::Violation),
        );
        let samples = lock(&recorder.error_samples);
        for (outcome, n) in &outcomes {
            if let Outcome::Failed(kind) = outcome {
                let sample = samples.get(kind).map_or("", String::as_str);
                let _ = writeln!(out, "  {:>7}  {:<34} e.g. {sample}", n, kind.label());
            }
        }
        let mut by_fault: BTreeMap<Fault, Vec<Duration>> = BTreeMap::new();
        for record in faults.iter() {
            by_fault
                .entry(record.fault)
                .or_default()
                .push(record.resumed - record.injected);
        }
        let _ = writeln!(
            out,
            "faults       {} injected (kind: count, time until service resumed p50 / max)",
            faults.len()
        );
        for (fault, mut times) in by_fault {
            times.sort();
            let _ = writeln!(
                out,
                "  {:>7}  {:<48} {:>8} / {:>8}",
                times.len(),
                fault.label(),
                millis(percentile(&times, 0.5)),
                millis(times.last().copied()),
            );
        }
        let windows = fault_windows(&faults);
        let (mut all, mut during, mut outside) = (Vec::new(), Vec::new(), Vec::new());
        for call in calls.iter().filter(|call| call.echo) {
            let latency = call.ended - call.started;
            all.push(latency);
            if overlaps(&windows, call.started, call.ended) {
                during.push(latency);
            } else {
                outside.push(latency);
            }
        }
        let _ = writeln!(
            out,
            "echo latency (sent → answered, ok or error); a call is during faults when it \
             overlaps a fault's window (injection until service resumed) or the {} s after it",
            AFTERGLOW.as_secs()
        );
        for (name, mut latencies) in [
            ("all", all),
            ("during faults", during),
            ("outside", outside),
        ] {
            latencies.sort();
            let _ = writeln!(
                out,
                "  {name:<14} p50 {:>9} p99 {:>9} (n = {})",
                millis(percentile(&latencies, 0.5)),
                millis(percentile(&latencies, 0.99)),
                latencies.len()
            );
        }
        let (rss_start, rss_end, hwm) = self.rss_kib;
        let _ = writeln!(
            out,
            "serve        fds {} → {}; RSS {:.1} MiB → {:.1} MiB, max {:.1} MiB (VmHWM)",
            self.fds.0,
            self.fds.1,
            rss_start as f64 / 1024.0,
            rss_end as f64 / 1024.0,
            hwm as f64 / 1024.0
        );
        let _ = writeln!(
            out,
            "sessions     {} HTTP sessions opened, {} connect processes started",
            recorder.http_sessions.load(Ordering::Relaxed),
            recorder.connect_processes.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "activity     {} records kept, {} dropped, {} failed",
            self.activity.recorded, self.activity.dropped, self.activity.failed
        );
        let _ = writeln!(out, "restarts     {:?}", self.restarts);
        let _ = write!(
            out,
            "pending      {}",
            match self.pending {
                Some(pending) => format!("{pending} at the end"),
                None => "not reported by /api/backends".to_owned(),
            }
        );
        out
    }
}

/// The faults' windows, widened by [`AFTERGLOW`], merged and in order.
fn fault_windows(faults: &[FaultRecord]) -> Vec<(Instant, Instant)> {
    let mut windows: Vec<(Instant, Instant)> = faults
        .iter()
        .map(|record| (record.injected, record.resumed + AFTERGLOW))
        .collect();
    windows.sort();
    let mut merged: Vec<(Instant, Instant)> = Vec::new();
    for (start, end) in windows {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// Whether `[start, end]` overlaps one of the merged, ordered `windows`.
fn overlaps(windows: &[(Instant, Instant)], start: Instant, end: Instant) -> bool {
    let before = windows.partition_point(|window| window.0 <= end);
    before > 0 && windows[before - 1].1 >= start
}

fn percentile(sorted: &[Duration], quantile: f64) -> Option<Duration> {
    let rank = (quantile * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len().max(1)) - 1).copied()
}

fn millis(duration: Option<Duration>) -> String {
    duration.map_or("-".to_owned(), |duration| {
        format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
    })
}
