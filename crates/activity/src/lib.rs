//! The activity log: every request that passes through Switchboard to a server (tools, prompts,
//! resources, completions), with when, who asked, where it went, how long it took and how it
//! ended; arguments and results only when the config asks for them, secrets redacted.
//!
//! Nothing here slows a call: [`ActivityLog::record`] puts the record in a bounded queue
//! (`queue.rs`) and returns; when the queue is full the record is dropped and counted (and the
//! dashboard says so). A writer thread of its own, at the lowest priority, takes what arrived
//! within 50 ms, redacts every text it keeps and cuts payloads, sends the records to the
//! dashboard's live view, writes them in batches into SQLite ([`store`]), and keeps the file
//! within its age and size limits. A database that cannot be opened is set aside
//! and a new one started; a write that fails loses that batch, counted, and calls go on.
//!
//! Floor 4 of the workspace (ARCHITECTURE.md). It stands on `platform` and `config`; recording
//! never waits on the store.

mod queue;
pub mod store;

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use tokio::sync::broadcast;

use config::ActivitySettings;
use platform::clock::unix_millis;
use queue::{Payload, Queue, View};
use store::Store;

/// How many bytes of records may wait for the writer: some 100,000 records without payloads.
const QUEUE_CAPACITY: usize = 16 * 1024 * 1024;
/// The most records one transaction writes.
const BATCH: usize = 1024;
/// How long the writer gathers records before it writes them: a busy editor's calls share a
/// transaction, and the writer wakes at most this often.
const BATCH_WINDOW: Duration = Duration::from_millis(50);
/// How often the writer applies the retention limits.
const RETENTION_EVERY: Duration = Duration::from_secs(60);
/// The most of an argument or a result that is kept; longer ones are cut, their size noted.
pub(crate) const MAX_PAYLOAD_BYTES: usize = 64 * 1024;

/// How a request ended, as the activity log records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A result (a tool call's result without `isError`).
    Result,
    /// A tool call's result with `isError: true`.
    ToolError,
    /// A JSON-RPC error (its code is recorded).
    Error,
    /// No answer within the server's `request_timeout`.
    Timeout,
    /// The editor cancelled it, or went away, before the answer.
    Cancelled,
}

impl Outcome {
    /// Every outcome, in the order of their numbers in the database.
    const ALL: [Outcome; 5] = [
        Outcome::Result,
        Outcome::ToolError,
        Outcome::Error,
        Outcome::Timeout,
        Outcome::Cancelled,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Result => "result",
            Outcome::ToolError => "tool_error",
            Outcome::Error => "error",
            Outcome::Timeout => "timeout",
            Outcome::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<Outcome> {
        Outcome::ALL
            .into_iter()
            .find(|outcome| outcome.as_str() == text)
    }

    /// Its number in the database.
    fn code(self) -> i64 {
        Outcome::ALL
            .iter()
            .position(|outcome| *outcome == self)
            .expect("every outcome is in ALL") as i64
    }

    fn from_code(code: i64) -> Option<Outcome> {
        Outcome::ALL.get(usize::try_from(code).ok()?).copied()
    }

    /// Whether the call failed (a result and a cancellation are not failures).
    pub(crate) fn is_failure(self) -> bool {
        !matches!(self, Outcome::Result | Outcome::Cancelled)
    }
}

/// One request and how it ended, as a call leaves it ([`ActivityLog::record`], the live view)
/// and, numbered, as the log reads it back ([`store::Row`]). Taken, its outcome is an
/// [`Outcome`]; read back, it is the outcome's name, which for a record a newer Switchboard
/// wrote may be one this one does not know (`unknown`).
#[derive(Debug, Clone, Serialize)]
pub struct Record<O = Outcome> {
    /// When it arrived, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    pub duration_us: u64,
    /// The editor's session; `None` for a 2026-07-28 request over HTTP, which has none.
    pub session: Option<Arc<str>>,
    /// The editor's name, as its `clientInfo` says.
    pub client: Option<Arc<str>>,
    pub profile: Arc<str>,
    /// The server it went to; `None` when it named nothing Switchboard knows.
    pub server: Option<Arc<str>>,
    pub method: Cow<'static, str>,
    /// The name the editor used (a tool's or prompt's exposed name, or a resource's URI).
    pub name: Option<Arc<str>>,
    /// The server's own name for it.
    pub original: Option<Arc<str>>,
    pub outcome: O,
    pub error_code: Option<i64>,
    pub error: Option<String>,
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// The request's params, when payloads are kept (cut to [`MAX_PAYLOAD_BYTES`]).
    pub arguments: Option<String>,
    /// The answer, when payloads are kept (cut likewise).
    pub result: Option<String>,
    /// For a call that waited for a person's yes: who decided and after how long, in words.
    pub decision: Option<String>,
}

/// What the log has done since Switchboard started, and what went wrong with it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LogHealth {
    /// Whether records are taken now (`[activity] enabled`).
    pub enabled: bool,
    /// Whether arguments and results are kept (`[activity] payloads`).
    pub payloads: bool,
    pub recorded: u64,
    /// Records lost because the channel was full (the writer could not keep up).
    pub dropped: u64,
    /// Records lost because the database refused them.
    pub failed: u64,
    /// The last problem of the database, in words, if any.
    pub problem: Option<String>,
    pub path: PathBuf,
}

/// The log's handle: cheap to clone, shared by every session.
#[derive(Clone)]
pub struct ActivityLog {
    inner: Arc<Inner>,
}

struct Inner {
    queue: Queue,
    settings: Mutex<ActivitySettings>,
    /// `settings.enabled` and `settings.payloads`, read on every call without a lock.
    enabled: AtomicBool,
    payloads: AtomicBool,
    /// Values never to store, in every form they may take (see [`redaction_forms`]): secrets
    /// of the config (environment and header values)…
    redacted: Mutex<Arc<Vec<String>>>,
    /// …and those that change while running (the tokens of signed-in remote servers).
    changing: Mutex<Option<ChangingSecrets>>,
    recorded: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicU64,
    problem: Mutex<Option<String>>,
    path: PathBuf,
    /// Each record as it is taken, for the dashboard's live view.
    live: broadcast::Sender<Record>,
}

impl ActivityLog {
    /// Starts the log's writer over the database at `path`.
    pub fn open(path: &Path, settings: ActivitySettings) -> ActivityLog {
        let log = ActivityLog {
            inner: Arc::new(Inner {
                queue: Queue::new(QUEUE_CAPACITY),
                enabled: AtomicBool::new(settings.enabled),
                payloads: AtomicBool::new(settings.enabled && settings.payloads),
                settings: Mutex::new(settings),
                redacted: Mutex::new(Arc::new(Vec::new())),
                changing: Mutex::new(None),
                recorded: AtomicU64::new(0),
                dropped: AtomicU64::new(0),
                failed: AtomicU64::new(0),
                problem: Mutex::new(None),
                path: path.to_path_buf(),
                live: broadcast::channel(256).0,
            }),
        };
        let writer = log.clone();
        std::thread::Builder::new()
            .name("activity-log".to_owned())
            .spawn(move || writer.write())
            .expect("the activity log's thread starts");
        log
    }

    /// The database's file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Takes new settings and the values to redact (from a reloaded config).
    pub fn configure(&self, settings: ActivitySettings, redacted: Vec<String>) {
        self.inner
            .enabled
            .store(settings.enabled, Ordering::Relaxed);
        self.inner
            .payloads
            .store(settings.enabled && settings.payloads, Ordering::Relaxed);
        *self.inner.settings.lock().expect("settings lock") = settings;
        *self.inner.redacted.lock().expect("redacted lock") = Arc::new(redaction_forms(redacted));
    }

    /// Where the secrets that change while running come from (the sign-in's tokens): asked for
    /// each batch the log writes.
    pub fn redact_also(&self, changing: ChangingSecrets) {
        *self.inner.changing.lock().expect("changing lock") = Some(changing);
    }

    /// Every value to redact from the next batch.
    fn redactions(&self) -> Arc<Vec<String>> {
        let configured = self.inner.redacted.lock().expect("redacted lock").clone();
        let changing = self.inner.changing.lock().expect("changing lock").clone();
        match changing.map(|changing| changing()) {
            Some(values) if !values.is_empty() => {
                let mut all = redaction_forms(values);
                all.extend(configured.iter().cloned());
                all.sort_by_key(|value| std::cmp::Reverse(value.len()));
                Arc::new(all)
            }
            _ => configured,
        }
    }

    /// Whether records are taken, and whether with payloads.
    pub fn wants(&self) -> (bool, bool) {
        (
            self.inner.enabled.load(Ordering::Relaxed),
            self.inner.payloads.load(Ordering::Relaxed),
        )
    }

    /// Takes `record` without waiting: a full queue drops it, counted.
    pub fn record(&self, record: Record) {
        if !self.inner.queue.push(&record) {
            self.inner.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The record as it is kept, every text redacted and payloads cut; each one goes to the
    /// dashboard's live view too (as a record of its own, made only when someone watches).
    fn finished<'a>(&self, view: View<'a>, redacted: &[String], live: bool) -> Entry<'a> {
        let entry = Entry {
            client: view
                .client
                .map(|client| redact(Cow::Borrowed(client), redacted)),
            name: view.name.map(|name| redact(Cow::Borrowed(name), redacted)),
            arguments: view.arguments.map(|payload| kept(payload, redacted)),
            result: view.result.map(|payload| kept(payload, redacted)),
            error: view
                .error
                .map(|error| redact(Cow::Borrowed(error), redacted)),
            view,
        };
        if live {
            let _ = self.inner.live.send(entry.to_record());
        }
        entry
    }

    /// Records as they are taken.
    pub fn live(&self) -> broadcast::Receiver<Record> {
        self.inner.live.subscribe()
    }

    pub fn health(&self) -> LogHealth {
        let (enabled, payloads) = self.wants();
        LogHealth {
            enabled,
            payloads,
            recorded: self.inner.recorded.load(Ordering::Relaxed),
            dropped: self.inner.dropped.load(Ordering::Relaxed),
            failed: self.inner.failed.load(Ordering::Relaxed),
            problem: self.inner.problem.lock().expect("problem lock").clone(),
            path: self.inner.path.clone(),
        }
    }

    /// The writer thread: batches of records into the database, the retention limits every
    /// minute, and any failure said once in `problem`, never passed on to a call.
    fn write(self) {
        // The writer yields to every call: a call waits for nothing of the log's.
        platform::priority::lower_this_thread();
        let mut store = self.open_store();
        let mut last_retention = Instant::now() - RETENTION_EVERY;
        let mut taken = queue::Pending::default();
        loop {
            self.inner.queue.wait();
            // What arrives within the window goes into the same transaction.
            std::thread::sleep(BATCH_WINDOW);
            self.inner.queue.take(&mut taken);
            let redacted = self.redactions();
            let live = self.inner.live.receiver_count() > 0;
            let entries: Vec<Entry<'_>> = taken
                .records()
                .map(|view| self.finished(view, &redacted, live))
                .collect();
            for batch in entries.chunks(BATCH) {
                if store.is_none() {
                    store = self.open_store();
                }
                let Some(open) = store.as_mut() else {
                    self.inner
                        .failed
                        .fetch_add(batch.len() as u64, Ordering::Relaxed);
                    continue;
                };
                match open.insert(batch) {
                    Ok(()) => {
                        self.inner
                            .recorded
                            .fetch_add(batch.len() as u64, Ordering::Relaxed);
                    }
                    Err(error) => {
                        self.inner
                            .failed
                            .fetch_add(batch.len() as u64, Ordering::Relaxed);
                        self.note(format!("{error}; {} record(s) were lost", batch.len()));
                        // A full disk: make room now. Anything else: start again from the file.
                        if is_full(&error) {
                            last_retention = Instant::now() - RETENTION_EVERY;
                        } else {
                            store = None;
                        }
                    }
                }
            }
            drop(entries);
            taken.clear();
            let Some(store) = store.as_mut() else {
                continue;
            };
            let settings = self.inner.settings.lock().expect("settings lock").clone();
            let over_size = store
                .size_bytes()
                .is_ok_and(|size| size > settings.max_size);
            if over_size || last_retention.elapsed() >= RETENTION_EVERY {
                last_retention = Instant::now();
                let before = unix_millis(SystemTime::now() - settings.max_age);
                if let Err(error) = store.retain(before, settings.max_size) {
                    self.note(error.to_string());
                }
            }
        }
    }

    fn open_store(&self) -> Option<Store> {
        match Store::open(&self.inner.path) {
            Ok((store, note)) => {
                if let Some(note) = note {
                    self.note(note);
                }
                Some(store)
            }
            Err(error) => {
                self.note(error.to_string());
                None
            }
        }
    }

    fn note(&self, problem: String) {
        tracing::warn!("{problem}");
        *self.inner.problem.lock().expect("problem lock") = Some(problem);
    }
}

fn is_full(error: &store::StoreError) -> bool {
    matches!(
        std::error::Error::source(error).and_then(|source| source.downcast_ref::<rusqlite::Error>()),
        Some(rusqlite::Error::SqliteFailure(failure, _)) if failure.code == rusqlite::ErrorCode::DiskFull
    )
}

/// Whether a tool call's result says the tool failed (`isError: true`).
pub fn is_tool_error(result: &str) -> bool {
    // Most results never say `"isError"` followed by `true`, and need no parse.
    static IS_ERROR: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(b"\"isError\""));
    let says_true = IS_ERROR.find_iter(result.as_bytes()).any(|at| {
        let rest = result[at + b"\"isError\"".len()..].trim_start();
        rest.strip_prefix(':')
            .is_some_and(|value| value.trim_start().starts_with("true"))
    });
    #[derive(serde::Deserialize)]
    struct Flag {
        #[serde(rename = "isError", default)]
        is_error: bool,
    }
    says_true && serde_json::from_str::<Flag>(result).is_ok_and(|flag| flag.is_error)
}

/// Secrets that change while running, asked for when the log writes.
pub(crate) type ChangingSecrets = Arc<dyn Fn() -> Vec<String> + Send + Sync>;

/// Every form in which `values` may appear in what is stored, longest first: as they are, as a
/// JSON string writes them (escaped), as an ASCII-only JSON writer does (`\uXXXX`, `\/`), and
/// each long word of a value (the token of `Bearer TOKEN`). Forms shorter than 4 are left out:
/// redacting them would only garble the log.
fn redaction_forms(values: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut forms = std::collections::BTreeSet::new();
    for value in values {
        let escaped = serde_json::to_string(&value).expect("a string serializes");
        let escaped = escaped[1..escaped.len() - 1].to_owned();
        let ascii: String = escaped
            .chars()
            .map(|c| match c {
                '/' => "\\/".to_owned(),
                c if c.is_ascii() => c.to_string(),
                c => c
                    .encode_utf16(&mut [0; 2])
                    .iter()
                    .map(|unit| format!("\\u{unit:04x}"))
                    .collect(),
            })
            .collect();
        forms.extend(
            value
                .split_whitespace()
                .filter(|word| word.len() >= 8)
                .map(str::to_owned),
        );
        forms.extend([value, escaped, ascii]);
    }
    let mut forms: Vec<String> = forms.into_iter().filter(|form| form.len() >= 4).collect();
    forms.sort_by_key(|form| std::cmp::Reverse(form.len()));
    forms
}

/// `text` with every one of `redacted` replaced.
fn redact<'a>(mut text: Cow<'a, str>, redacted: &[String]) -> Cow<'a, str> {
    for secret in redacted {
        if text.contains(secret.as_str()) {
            text = Cow::Owned(text.replace(secret.as_str(), "[redacted]"));
        }
    }
    text
}

/// A payload as it is kept: secrets redacted, then cut to [`MAX_PAYLOAD_BYTES`] with its size
/// said.
fn kept<'a>(payload: Payload<'a>, redacted: &[String]) -> Cow<'a, str> {
    let text = redact(Cow::Borrowed(payload.text), redacted);
    if text.len() <= MAX_PAYLOAD_BYTES && payload.size == payload.text.len() {
        return text;
    }
    let mut end = text.len().min(MAX_PAYLOAD_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}… [{} bytes in all]", &text[..end], payload.size))
}

/// A record ready for the database: its view, and what a client or server chose (its name for
/// itself, the name it called, the payloads, the error) as kept.
struct Entry<'a> {
    view: View<'a>,
    client: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    arguments: Option<Cow<'a, str>>,
    result: Option<Cow<'a, str>>,
    error: Option<Cow<'a, str>>,
}

impl Entry<'_> {
    fn to_record(&self) -> Record {
        let view = &self.view;
        Record {
            at_ms: view.at_ms,
            duration_us: view.duration_us,
            session: view.session.map(Arc::from),
            client: self.client.as_deref().map(Arc::from),
            profile: Arc::from(view.profile),
            server: view.server.map(Arc::from),
            method: Cow::Owned(view.method.to_owned()),
            name: self.name.as_deref().map(Arc::from),
            original: view.original.map(Arc::from),
            outcome: view.outcome,
            error_code: view.error_code,
            error: self.error.as_deref().map(str::to_owned),
            request_bytes: view.request_bytes,
            response_bytes: view.response_bytes,
            arguments: self.arguments.as_deref().map(str::to_owned),
            result: self.result.as_deref().map(str::to_owned),
            decision: view.decision.map(str::to_owned),
        }
    }
}
