//! The callers' clients: HTTP sessions over `/mcp`, and `switchboard connect` processes spoken
//! to over their standard input and output.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::support::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;

use super::calls::{ErrorKind, Outcome, Plan, judge};
use super::figures::Recorder;
use super::lock;

/// A client session, over HTTP or through a `connect` process.
#[derive(Clone)]
pub(super) enum Client {
    Http(Arc<HttpClient>),
    Connect(Arc<ConnectClient>),
}

impl Client {
    pub(super) fn label(&self) -> &str {
        match self {
            Client::Http(client) => &client.label,
            Client::Connect(client) => &client.label,
        }
    }

    pub(super) async fn call(&self, plan: &Plan) -> Result<(Outcome, Option<String>), String> {
        match self {
            Client::Http(client) => client.call(plan).await,
            Client::Connect(client) => client.call(plan).await,
        }
    }

    /// Ends the session: DELETE over HTTP, closing stdin for `connect`.
    pub(super) async fn close(&self) {
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
pub(super) struct HttpClient {
    pub(super) label: String,
    mcp: McpHttp,
    recorder: Arc<Recorder>,
    /// The current session; locked while one is opened, so that callers share it.
    session: tokio::sync::Mutex<Option<String>>,
    /// Sessions a fault deleted: only their calls may end for want of a session.
    deleted: Mutex<HashSet<String>>,
    next_id: AtomicU64,
}

impl HttpClient {
    pub(super) fn new(label: String, url: &str, recorder: &Arc<Recorder>) -> Arc<HttpClient> {
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
    pub(super) async fn tool_names(&self) -> Result<Vec<String>, String> {
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

    pub(super) async fn call(&self, plan: &Plan) -> Result<(Outcome, Option<String>), String> {
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
    pub(super) async fn delete_session(&self) -> Result<bool, String> {
        let Some(session) = self.session.lock().await.take() else {
            return Ok(false);
        };
        lock(&self.deleted).insert(session.clone());
        match self.mcp.delete_session(&session).await? {
            204 => Ok(true),
            status => Err(format!("DELETE of session {session}: HTTP {status}")),
        }
    }

    pub(super) async fn close(&self) -> Result<(), String> {
        self.delete_session().await.map(drop)
    }
}

/// An editor's side of `switchboard connect`: one process at a time (a new one after a fault
/// kills it), several calls in flight on it, with ids that every client uses too.
pub(super) struct ConnectClient {
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
    pub(super) fn new(
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

    pub(super) async fn call(&self, plan: &Plan) -> Result<(Outcome, Option<String>), String> {
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
    pub(super) async fn kill(&self) -> bool {
        let mut slot = self.process.lock().await;
        let Some(process) = slot.as_mut().filter(|process| !process.link.ended()) else {
            return false;
        };
        process.link.killed.store(true, Ordering::Relaxed);
        process.child.start_kill().is_ok()
    }

    /// Closes stdin, as an editor that quits; `connect` then exits 0.
    pub(super) async fn close(&self) -> Result<(), String> {
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
