//! `switchboard connect`: the stdio shim an editor launches. It attaches to the running
//! Switchboard through its socket in the runtime directory (starting a headless instance when none
//! runs) and carries the editor's stdio to it.
//!
//! Two threads copy lines with blocking IO, so a message crosses the shim with one read and one
//! write and no executor hop. The *up* thread carries stdin to the socket. The *down* thread
//! carries the socket to stdout and owns the connection: when the socket closes under a live
//! editor (Switchboard restarted or died), it fails the calls in flight at once, attaches again,
//! replays the editor's handshake under an id of its own, and then sends what the editor wrote
//! meanwhile. Only the envelope of each line is read, to remember the handshake and which
//! requests are waiting for an answer.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::net::Shutdown;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::jsonrpc::{self, Envelope, ErrorObject, Kind};
use crate::serve::socket::socket_path;

/// Where to find (or how to start) the running Switchboard.
pub struct ConnectOptions {
    /// The runtime directory, where the socket lives.
    pub runtime_dir: PathBuf,
    /// The Switchboard binary to start headless when none runs.
    pub exe: PathBuf,
    /// A config file to pass to that headless instance.
    pub config: Option<PathBuf>,
}

/// The log of a headless instance started by `connect`, in the runtime directory.
pub const SERVE_LOG_NAME: &str = "serve.log";

/// The message of the error that fails a call lost with the connection.
pub const RESTARTED_MESSAGE: &str = "Switchboard restarted; this call was lost, please retry";

/// The ids under which the shim replays `initialize` start with this.
pub const REINIT_ID_PREFIX: &str = "switchboard-connect-reinit-";

/// How long attaching may take in all, including starting an instance.
const ATTACH_LIMIT: Duration = Duration::from_secs(20);
/// After the connection closed, how long to wait for an instance to come back before starting one.
const START_AFTER: Duration = Duration::from_secs(2);
const ATTACH_POLL: Duration = Duration::from_millis(50);
/// After the editor closed stdin, how long the remaining answers may take.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);
/// Longest line the shim reads in either direction; Switchboard enforces its own, smaller limit.
const LINE_LIMIT: usize = 256 * 1024 * 1024;
const PIPE_BUFFER: usize = 64 * 1024;

/// Runs the shim until the editor closes stdin.
pub async fn run(options: ConnectOptions) -> anyhow::Result<()> {
    let mut dialer = SocketDialer::new(&options);
    let (dialer, first) = tokio::task::spawn_blocking(move || {
        let now = Instant::now();
        let stream = dialer
            .dial(now, now + ATTACH_LIMIT, &|| false)?
            .expect("dialing only gives up early when the editor is gone");
        anyhow::Ok((dialer, stream))
    })
    .await
    .context("attaching to Switchboard panicked")??;
    let shim = Shim::start(io::stdin(), io::stdout(), first, dialer)?;
    shim.wait(DRAIN_LIMIT).await
}

/// Reaches Switchboard's socket: once at start, and again after the connection closed.
trait Dial: Send + 'static {
    /// A connected stream, or an error once `deadline` passes. When nothing answers at
    /// `start_at` or later, an instance may be started. `None` once `editor_gone` says the
    /// editor has left: then no instance is started for nobody.
    fn dial(
        &mut self,
        start_at: Instant,
        deadline: Instant,
        editor_gone: &dyn Fn() -> bool,
    ) -> anyhow::Result<Option<UnixStream>>;
}

/// Dials the socket in the runtime directory and starts `<exe> serve` when nothing answers.
struct SocketDialer {
    runtime_dir: PathBuf,
    socket: PathBuf,
    log: PathBuf,
    exe: PathBuf,
    config: Option<PathBuf>,
}

impl SocketDialer {
    fn new(options: &ConnectOptions) -> SocketDialer {
        SocketDialer {
            runtime_dir: options.runtime_dir.clone(),
            socket: socket_path(&options.runtime_dir),
            log: options.runtime_dir.join(SERVE_LOG_NAME),
            exe: options.exe.clone(),
            config: options.config.clone(),
        }
    }

    /// Starts a headless instance in its own session, logging to the runtime directory.
    fn start_instance(&self) -> anyhow::Result<u32> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.runtime_dir)
            .with_context(|| format!("cannot create {}", self.runtime_dir.display()))?;
        let mut args = vec![OsString::from("serve")];
        if let Some(config) = &self.config {
            let config = std::path::absolute(config).unwrap_or_else(|_| config.clone());
            args.extend([OsString::from("--config"), config.into_os_string()]);
        }
        let env = [(
            OsString::from(crate::dirs::RUNTIME_DIR_ENV),
            self.runtime_dir.clone().into_os_string(),
        )];
        let pid = crate::spawn::spawn_detached(&self.exe, &args, &env, &self.log)
            .with_context(|| format!("cannot start {} serve", self.exe.display()))?;
        tracing::info!(pid, log = %self.log.display(), "started a headless Switchboard");
        Ok(pid)
    }

    fn not_answering(&self, started: Option<u32>) -> anyhow::Error {
        let waited = ATTACH_LIMIT.as_secs();
        let socket = self.socket.display();
        let log = self.log.display();
        let tail = log_tail(&self.log);
        match started {
            Some(pid) if !process_exists(pid) => anyhow::anyhow!(
                "the Switchboard started here (pid {pid}) exited before answering on {socket}; \
                 see {log}{tail}"
            ),
            Some(pid) => anyhow::anyhow!(
                "the Switchboard started here (pid {pid}) did not answer on {socket} within \
                 {waited} s; see {log}{tail}"
            ),
            None => anyhow::anyhow!("nothing answered on {socket} within {waited} s"),
        }
    }
}

impl Dial for SocketDialer {
    fn dial(
        &mut self,
        start_at: Instant,
        deadline: Instant,
        editor_gone: &dyn Fn() -> bool,
    ) -> anyhow::Result<Option<UnixStream>> {
        let mut started = None;
        loop {
            if editor_gone() {
                return Ok(None);
            }
            match UnixStream::connect(&self.socket) {
                Ok(stream) => return Ok(Some(stream)),
                Err(error) if nothing_listens(&error) => {}
                Err(error) => {
                    return Err(error)
                        .with_context(|| format!("cannot connect to {}", self.socket.display()));
                }
            }
            let now = Instant::now();
            if started.is_none() && now >= start_at {
                started = Some(self.start_instance()?);
            }
            let gave_up = started.is_some_and(|pid| !process_exists(pid));
            if now >= deadline || gave_up {
                return Err(self.not_answering(started));
            }
            std::thread::sleep(ATTACH_POLL);
        }
    }
}

fn nothing_listens(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
    )
}

fn process_exists(pid: u32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_ok()
}

/// The last lines of a log, to put in an error message.
fn log_tail(log: &Path) -> String {
    const LINES: usize = 8;
    let Ok(text) = std::fs::read_to_string(log) else {
        return String::new();
    };
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(LINES)..].join("\n  ");
    if tail.is_empty() {
        String::new()
    } else {
        format!("; it ends with:\n  {tail}")
    }
}

/// A running shim: two threads, and the news of how they ended.
struct Shim {
    events: mpsc::UnboundedReceiver<Event>,
}

enum Event {
    /// The editor closed stdin; the down thread still delivers the remaining answers.
    EditorClosed,
    /// The down thread ended: the socket closed after the editor left, stdout broke, or
    /// Switchboard could not be reached again.
    Finished(anyhow::Result<()>),
}

impl Shim {
    fn start<R, W, D>(input: R, output: W, first: UnixStream, mut dial: D) -> io::Result<Shim>
    where
        R: Read + Send + 'static,
        W: Write + Send + 'static,
        D: Dial,
    {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                connection: Some(Arc::new(first.try_clone()?)),
                initialize: None,
                initialized: false,
                in_flight: HashSet::new(),
                waiting: Vec::new(),
                editor_closed: false,
            }),
            output: Mutex::new(BufWriter::with_capacity(PIPE_BUFFER, output)),
        });
        let (events, events_rx) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("connect-up".to_owned())
            .spawn({
                let shared = shared.clone();
                let events = events.clone();
                move || {
                    carry_up(input, &shared);
                    let _ = events.send(Event::EditorClosed);
                }
            })?;
        std::thread::Builder::new()
            .name("connect-down".to_owned())
            .spawn(move || {
                let result = carry_down(&shared, first, &mut dial);
                let _ = events.send(Event::Finished(result));
            })?;
        Ok(Shim { events: events_rx })
    }

    /// Waits until the shim is done: the down thread ended, or the editor closed stdin and the
    /// remaining answers were delivered (or `drain_limit` passed).
    async fn wait(mut self, drain_limit: Duration) -> anyhow::Result<()> {
        match self.events.recv().await {
            Some(Event::Finished(result)) => return result,
            Some(Event::EditorClosed) => {}
            None => return Ok(()),
        }
        match tokio::time::timeout(drain_limit, self.events.recv()).await {
            Ok(Some(Event::Finished(result))) => result,
            Ok(_) => Ok(()),
            Err(_) => {
                tracing::warn!(
                    "answers still missing {} s after the editor closed stdin; exiting",
                    drain_limit.as_secs()
                );
                Ok(())
            }
        }
    }
}

/// What both threads share. The state lock is never held across IO; the output lock is held
/// only while writing to the editor.
struct Shared<W: Write> {
    state: Mutex<State>,
    output: Mutex<BufWriter<W>>,
}

struct State {
    /// The socket to write to; `None` while the down thread attaches again.
    connection: Option<Arc<UnixStream>>,
    /// The editor's `initialize` request, to replay on a new connection.
    initialize: Option<Initialize>,
    /// Whether the editor sent `notifications/initialized` after it.
    initialized: bool,
    /// Ids (raw JSON) of the editor's requests not answered yet.
    in_flight: HashSet<Box<str>>,
    /// Lines the editor wrote while there was no connection, each ending in `\n`.
    waiting: Vec<Vec<u8>>,
    editor_closed: bool,
}

struct Initialize {
    /// The line as the editor sent it, ending in `\n`.
    line: Vec<u8>,
    /// Its id (raw JSON).
    id: Box<str>,
}

impl<W: Write> Shared<W> {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .expect("the shim's state lock is never poisoned")
    }

    fn output(&self) -> MutexGuard<'_, BufWriter<W>> {
        self.output
            .lock()
            .expect("the shim's output lock is never poisoned")
    }

    /// Answers each of `ids` (raw JSON) with the error for a call lost with the connection.
    fn fail_lost(&self, ids: &[Box<str>]) -> io::Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let error = ErrorObject::new(jsonrpc::BACKEND_UNAVAILABLE, RESTARTED_MESSAGE);
        let mut output = self.output();
        for id in ids {
            let id: &RawValue = serde_json::from_str(id).expect("ids were read as JSON");
            output.write_all(&jsonrpc::error_line(Some(id), &error))?;
        }
        output.flush()
    }
}

/// What the shim remembers of one line from the editor.
enum Note {
    Request { id: Box<str>, initialize: bool },
    Initialized,
    Other,
}

impl Note {
    fn of(line: &[u8]) -> Note {
        let Ok(envelope) = Envelope::parse(line) else {
            return Note::Other;
        };
        match (envelope.kind(), envelope.id, envelope.method.as_deref()) {
            (Kind::Request, Some(id), method) => Note::Request {
                id: id.get().into(),
                initialize: method == Some("initialize"),
            },
            (Kind::Notification, _, Some("notifications/initialized")) => Note::Initialized,
            _ => Note::Other,
        }
    }

    /// Records the note; `line` is the line it was taken from.
    fn record(self, state: &mut State, line: &[u8]) {
        match self {
            Note::Request { id, initialize } => {
                if initialize {
                    state.initialize = Some(Initialize {
                        line: line.to_vec(),
                        id: id.clone(),
                    });
                    state.initialized = false;
                }
                state.in_flight.insert(id);
            }
            Note::Initialized => state.initialized = true,
            Note::Other => {}
        }
    }
}

/// The id (raw JSON) of a response, if `line` is one.
fn response_id(line: &[u8]) -> Option<&str> {
    let envelope = Envelope::parse(line).ok()?;
    match envelope.kind() {
        Kind::Response => envelope.id.map(RawValue::get),
        _ => None,
    }
}

/// Carries the editor's lines to the socket until stdin ends, then closes the socket's
/// sending side so that Switchboard answers what is left and closes.
fn carry_up<R: Read, W: Write>(input: R, shared: &Shared<W>) {
    let mut reader = BufReader::with_capacity(PIPE_BUFFER, input);
    // Consecutive lines already read are written to the socket together.
    let mut batch = Vec::new();
    let mut target: Option<Arc<UnixStream>> = None;
    loop {
        match read_line(&mut reader, LINE_LIMIT) {
            Ok(Some(Line::Complete(mut line))) if !is_blank(&line) => {
                let note = Note::of(&line);
                line.push(b'\n');
                let mut state = shared.state();
                note.record(&mut state, &line);
                match &state.connection {
                    None => state.waiting.push(line),
                    Some(connection) => {
                        // Lines meant for a connection that has since closed were failed with it.
                        if !target.as_ref().is_some_and(|t| Arc::ptr_eq(t, connection)) {
                            batch.clear();
                            target = Some(connection.clone());
                        }
                        batch.extend_from_slice(&line);
                    }
                }
            }
            Ok(Some(Line::Complete(_))) => {}
            Ok(Some(Line::TooLong(len))) => {
                let error = ErrorObject::new(
                    jsonrpc::INVALID_REQUEST,
                    format!(
                        "a message of {len} bytes was dropped: the limit is {LINE_LIMIT} bytes"
                    ),
                );
                let mut output = shared.output();
                let answered = output
                    .write_all(&jsonrpc::error_line(None, &error))
                    .and_then(|()| output.flush());
                if answered.is_err() {
                    break;
                }
            }
            Ok(None) => break,
            Err(error) => {
                tracing::debug!(%error, "reading stdin failed");
                break;
            }
        }
        let more_ready = memchr::memchr(b'\n', reader.buffer()).is_some();
        if !more_ready || batch.len() >= PIPE_BUFFER {
            send_batch(&mut batch, target.as_deref());
        }
    }
    send_batch(&mut batch, target.as_deref());
    let connection = {
        let mut state = shared.state();
        state.editor_closed = true;
        state.connection.clone()
    };
    if let Some(connection) = connection {
        let _ = connection.shutdown(Shutdown::Write);
    }
}

fn send_batch(batch: &mut Vec<u8>, connection: Option<&UnixStream>) {
    let Some(mut connection) = connection.filter(|_| !batch.is_empty()) else {
        return;
    };
    if let Err(error) = connection.write_all(batch) {
        // The down thread sees the socket end too, and fails what was in flight.
        tracing::debug!(%error, "writing to the socket failed");
    }
    batch.clear();
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// Carries the socket's lines to the editor, attaching again whenever the socket closes while
/// the editor is still there. Ends when the socket closes after the editor left (`Ok`), when the
/// editor's stdout breaks (`Ok`: nobody is left to tell), or when Switchboard cannot be reached
/// again (`Err`, after failing every waiting call).
fn carry_down<W: Write, D: Dial>(
    shared: &Shared<W>,
    first: UnixStream,
    dial: &mut D,
) -> anyhow::Result<()> {
    let mut reader = BufReader::with_capacity(PIPE_BUFFER, first);
    let mut n_attached = 0u64;
    loop {
        let copied = copy_down(shared, &mut reader, None);
        if let Err(error) = copied {
            tracing::debug!(%error, "writing to stdout failed; the editor is gone");
            return Ok(());
        }
        let (lost, done) = connection_lost(&mut shared.state());
        if shared.fail_lost(&lost).is_err() {
            return Ok(());
        }
        if done {
            return Ok(());
        }
        tracing::warn!("the connection to Switchboard closed; attaching again");
        n_attached += 1;
        match reattach(shared, dial, n_attached) {
            Ok(Some(new_reader)) => reader = new_reader,
            Ok(None) => return Ok(()),
            Err(error) => {
                let lost: Vec<Box<str>> = {
                    let mut state = shared.state();
                    state.waiting.clear();
                    state.in_flight.drain().collect()
                };
                let _ = shared.fail_lost(&lost);
                return Err(error);
            }
        }
    }
}

/// Marks the connection gone. Returns the calls it took with it, and whether the shim is done
/// (the editor left and nothing waits to be sent). An `initialize` not answered yet is not lost:
/// it is sent again as it was.
fn connection_lost(state: &mut State) -> (Vec<Box<str>>, bool) {
    state.connection = None;
    let done = state.editor_closed && state.waiting.is_empty();
    let keep = match &state.initialize {
        Some(initialize) if !done && state.in_flight.contains(&initialize.id) => {
            Some(initialize.id.clone())
        }
        _ => None,
    };
    let lost = state
        .in_flight
        .drain()
        .filter(|id| Some(id) != keep.as_ref())
        .collect();
    state.in_flight.extend(keep);
    (lost, done)
}

/// Why copying toward the editor stopped.
enum Copied {
    /// The socket reached its end or failed.
    SocketEnded,
    /// The response awaited arrived (and was not passed on).
    Answered,
}

/// Copies lines from the socket to the editor until the socket ends or, with `until` (a raw
/// JSON id), until the response with that id arrives, which is kept from the editor. Fails only
/// when writing to the editor fails.
fn copy_down<W: Write, R: Read>(
    shared: &Shared<W>,
    reader: &mut BufReader<R>,
    until: Option<&str>,
) -> io::Result<Copied> {
    loop {
        let read = read_line(reader, LINE_LIMIT);
        let more_ready = memchr::memchr(b'\n', reader.buffer()).is_some();
        match read {
            Ok(Some(Line::Complete(line))) => {
                if let Some(id) = response_id(&line) {
                    if until == Some(id) {
                        shared.output().flush()?;
                        return Ok(Copied::Answered);
                    }
                    shared.state().in_flight.remove(id);
                }
                let mut output = shared.output();
                output.write_all(&line)?;
                output.write_all(b"\n")?;
            }
            Ok(Some(Line::TooLong(len))) => {
                tracing::warn!(
                    len,
                    "dropped a message from Switchboard over the line limit"
                );
            }
            Ok(None) => {
                shared.output().flush()?;
                return Ok(Copied::SocketEnded);
            }
            Err(error) => {
                tracing::debug!(%error, "reading the socket failed");
                shared.output().flush()?;
                return Ok(Copied::SocketEnded);
            }
        }
        if !more_ready {
            shared.output().flush()?;
        }
    }
}

/// Attaches again: dials (starting an instance when none comes back), replays the handshake,
/// sends what the editor wrote meanwhile, and hands the connection to the up thread. `None`
/// when the editor's stdout broke meanwhile.
fn reattach<W: Write, D: Dial>(
    shared: &Shared<W>,
    dial: &mut D,
    n_attached: u64,
) -> anyhow::Result<Option<BufReader<UnixStream>>> {
    let started = Instant::now();
    let deadline = started + ATTACH_LIMIT;
    loop {
        // Nothing is in flight any more (those calls failed when the socket closed), so an
        // editor that closed stdin needs no new connection.
        let editor_gone = || shared.state().editor_closed;
        let Some(stream) = dial.dial(started + START_AFTER, deadline, &editor_gone)? else {
            tracing::info!("the editor left while Switchboard was away; not attaching again");
            return Ok(None);
        };
        match replay(shared, stream, n_attached, deadline) {
            Ok(Replayed::Attached(reader)) => {
                tracing::info!("attached to Switchboard again");
                return Ok(Some(reader));
            }
            Ok(Replayed::EditorGone) => return Ok(None),
            Err(error) => {
                tracing::warn!(%error, "the new connection failed during the handshake");
                if Instant::now() >= deadline {
                    return Err(error.context("cannot attach to Switchboard again"));
                }
                std::thread::sleep(ATTACH_POLL);
            }
        }
    }
}

enum Replayed {
    Attached(BufReader<UnixStream>),
    EditorGone,
}

/// Replays the handshake on a new connection and then hands it over; an error means this
/// connection failed and another may be tried.
fn replay<W: Write>(
    shared: &Shared<W>,
    stream: UnixStream,
    n_attached: u64,
    deadline: Instant,
) -> anyhow::Result<Replayed> {
    let mut reader = BufReader::with_capacity(PIPE_BUFFER, stream.try_clone()?);
    let (initialize, unanswered, initialized) = {
        let state = shared.state();
        let unanswered = state
            .initialize
            .as_ref()
            .is_some_and(|initialize| state.in_flight.contains(&initialize.id));
        let line = state.initialize.as_ref().map(|init| init.line.clone());
        (line, unanswered, state.initialized)
    };
    match initialize {
        None => {}
        // The editor still waits for this answer, so it is sent as it was and passed on.
        Some(line) if unanswered => (&stream).write_all(&line)?,
        Some(line) => {
            let id = format!("\"{REINIT_ID_PREFIX}{n_attached}\"");
            let params = Envelope::parse(&line)
                .expect("the stored initialize was parsed before")
                .params;
            (&stream).write_all(&jsonrpc::request_line(&id, "initialize", params))?;
            let patience = deadline.saturating_duration_since(Instant::now());
            stream.set_read_timeout(Some(patience.max(Duration::from_millis(1))))?;
            match copy_down(shared, &mut reader, Some(&id)) {
                Ok(Copied::Answered) => {}
                Ok(Copied::SocketEnded) => anyhow::bail!("no answer to the replayed initialize"),
                Err(_) => return Ok(Replayed::EditorGone),
            }
            stream.set_read_timeout(None)?;
            if initialized {
                let note = jsonrpc::notification_line("notifications/initialized", None);
                (&stream).write_all(&note)?;
            }
        }
    }
    let connection = Arc::new(stream);
    loop {
        let waiting = {
            let mut state = shared.state();
            if state.waiting.is_empty() {
                state.connection = Some(connection.clone());
                if state.editor_closed {
                    let _ = connection.shutdown(Shutdown::Write);
                }
                return Ok(Replayed::Attached(reader));
            }
            std::mem::take(&mut state.waiting)
        };
        if let Err(error) = (&*connection).write_all(&waiting.concat()) {
            // Kept for the next connection, in order.
            let mut state = shared.state();
            let later = std::mem::replace(&mut state.waiting, waiting);
            state.waiting.extend(later);
            return Err(error.into());
        }
    }
}

/// One line read by [`read_line`].
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// A line without its `\n`.
    Complete(Vec<u8>),
    /// A line longer than the limit, skipped without being kept; its length.
    TooLong(usize),
}

/// Reads the next line of at most `limit` bytes, in time linear in its length. `None` at end of
/// stream; a last line without `\n` still counts.
fn read_line<R: BufRead>(reader: &mut R, limit: usize) -> io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut skipped: Option<usize> = None;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if available.is_empty() {
            return Ok(match skipped {
                Some(len) => Some(Line::TooLong(len)),
                None if line.is_empty() => None,
                None => Some(Line::Complete(line)),
            });
        }
        let (len, found_newline) = match memchr::memchr(b'\n', available) {
            Some(pos) => (pos, true),
            None => (available.len(), false),
        };
        match skipped.as_mut() {
            Some(skipped) => *skipped += len,
            None if line.len() + len > limit => {
                skipped = Some(line.len() + len);
                line = Vec::new();
            }
            None => line.extend_from_slice(&available[..len]),
        }
        reader.consume(len + usize::from(found_newline));
        if found_newline {
            return Ok(Some(match skipped {
                Some(len) => Line::TooLong(len),
                None => Line::Complete(line),
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATIENCE: Duration = Duration::from_secs(10);

    /// Hands out prepared streams, as if an instance came back each time.
    struct Queue(std::sync::mpsc::Receiver<UnixStream>);

    impl Dial for Queue {
        fn dial(
            &mut self,
            _start_at: Instant,
            deadline: Instant,
            _editor_gone: &dyn Fn() -> bool,
        ) -> anyhow::Result<Option<UnixStream>> {
            let patience = deadline.saturating_duration_since(Instant::now());
            self.0
                .recv_timeout(patience)
                .context("no stream came")
                .map(Some)
        }
    }

    /// One end of a connection, read line by line with a bound on every wait.
    struct Peer {
        reader: BufReader<UnixStream>,
        writer: UnixStream,
    }

    impl Peer {
        fn new(stream: UnixStream) -> Peer {
            stream
                .set_read_timeout(Some(PATIENCE))
                .expect("set a read timeout");
            Peer {
                reader: BufReader::new(stream.try_clone().expect("clone a stream")),
                writer: stream,
            }
        }

        fn send(&mut self, message: serde_json::Value) {
            let mut line = message.to_string().into_bytes();
            line.push(b'\n');
            self.writer.write_all(&line).expect("write a line");
        }

        fn receive(&mut self) -> serde_json::Value {
            let mut line = String::new();
            let read = self
                .reader
                .read_line(&mut line)
                .expect("read a line in time");
            assert!(read > 0, "the stream ended");
            serde_json::from_str(&line).expect("a JSON line")
        }

        fn at_end(&mut self) -> bool {
            let mut line = String::new();
            self.reader.read_line(&mut line).expect("read in time") == 0
        }
    }

    fn pair() -> (UnixStream, UnixStream) {
        UnixStream::pair().expect("a socket pair")
    }

    fn start_shim(first: UnixStream) -> (Peer, Shim, std::sync::mpsc::Sender<UnixStream>) {
        let (editor, stdio) = pair();
        let (streams, queue) = std::sync::mpsc::channel();
        let input = stdio.try_clone().expect("clone a stream");
        let shim = Shim::start(input, stdio, first, Queue(queue)).expect("the shim starts");
        (Peer::new(editor), shim, streams)
    }

    fn initialize(id: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        })
    }

    fn answer(id: &serde_json::Value, result: serde_json::Value) -> serde_json::Value {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result})
    }

    #[tokio::test]
    async fn a_restart_fails_calls_in_flight_and_replays_the_handshake_unseen() {
        let (server, shim_end) = pair();
        let (mut editor, shim, streams) = start_shim(shim_end);
        let mut server = Peer::new(server);

        editor.send(initialize(1.into()));
        let request = server.receive();
        assert_eq!(
            request,
            initialize(1.into()),
            "lines pass through unchanged"
        );
        server.send(answer(&request["id"], serde_json::json!({"ok": true})));
        assert_eq!(editor.receive()["id"], 1);
        editor.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(server.receive()["method"], "notifications/initialized");
        editor.send(serde_json::json!({"jsonrpc": "2.0", "id": "a", "method": "tools/call"}));
        editor.send(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call"}));
        assert_eq!(server.receive()["id"], "a");
        assert_eq!(server.receive()["id"], 2);
        server.send(answer(&2.into(), serde_json::json!({})));
        assert_eq!(editor.receive()["id"], 2);

        drop(server);
        let lost = editor.receive();
        assert_eq!(lost["id"], "a", "only the unanswered call is lost: {lost}");
        assert_eq!(lost["error"]["code"], jsonrpc::BACKEND_UNAVAILABLE);
        assert_eq!(lost["error"]["message"], RESTARTED_MESSAGE);

        // Written while no instance runs: it waits for the next one.
        editor.send(serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}));
        let (server, shim_end) = pair();
        streams.send(shim_end).expect("the shim dials");
        let mut server = Peer::new(server);
        let replayed = server.receive();
        let private_id = format!("{REINIT_ID_PREFIX}1");
        assert_eq!(replayed["id"], private_id.as_str());
        assert_eq!(replayed["params"], initialize(1.into())["params"]);
        server.send(answer(&replayed["id"], serde_json::json!({"ok": true})));
        assert_eq!(server.receive()["method"], "notifications/initialized");
        assert_eq!(server.receive()["id"], 3);
        server.send(answer(&3.into(), serde_json::json!({"tools": []})));
        let next = editor.receive();
        assert_eq!(
            next["id"], 3,
            "the replayed handshake's answer is not passed on: {next}"
        );

        // The editor leaves with a call in flight: its answer still arrives.
        editor.send(serde_json::json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}));
        editor
            .writer
            .shutdown(Shutdown::Write)
            .expect("close stdin");
        assert_eq!(server.receive()["id"], 4);
        assert!(
            server.at_end(),
            "the socket's sending side closes after stdin"
        );
        server.send(answer(&4.into(), serde_json::json!({})));
        assert_eq!(editor.receive()["id"], 4);
        drop(server);
        shim.wait(PATIENCE).await.expect("the shim ends cleanly");
        assert!(editor.at_end(), "stdout closes");
    }

    #[tokio::test]
    async fn an_unanswered_initialize_is_sent_again_as_it_was() {
        let (server, shim_end) = pair();
        let (mut editor, shim, streams) = start_shim(shim_end);
        let mut server = Peer::new(server);
        editor.send(initialize("init".into()));
        assert_eq!(server.receive()["method"], "initialize");
        drop(server);

        let (server, shim_end) = pair();
        streams.send(shim_end).expect("the shim dials");
        let mut server = Peer::new(server);
        assert_eq!(server.receive(), initialize("init".into()));
        server.send(answer(&"init".into(), serde_json::json!({"ok": true})));
        let answered = editor.receive();
        assert_eq!(
            answered["id"], "init",
            "no error, just the answer: {answered}"
        );
        assert!(answered.get("error").is_none());

        editor
            .writer
            .shutdown(Shutdown::Write)
            .expect("close stdin");
        assert!(server.at_end());
        drop(server);
        shim.wait(PATIENCE).await.expect("the shim ends cleanly");
    }

    #[test]
    fn read_line_skips_lines_over_the_limit_and_keeps_the_rest() {
        let input: &[u8] = b"short\r\n0123456789abcdef\n\nlast";
        let mut reader = BufReader::with_capacity(4, input);
        let mut lines = Vec::new();
        while let Some(line) = read_line(&mut reader, 8).expect("memory reads") {
            lines.push(line);
        }
        assert_eq!(
            lines,
            [
                Line::Complete(b"short\r".to_vec()),
                Line::TooLong(16),
                Line::Complete(Vec::new()),
                Line::Complete(b"last".to_vec()),
            ]
        );
    }
}
