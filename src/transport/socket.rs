//! The local socket that `switchboard connect` attaches to.
//!
//! Each connection is one hub session speaking newline-delimited JSON-RPC both ways, exactly like
//! MCP over stdio; or, when `switchboard connect` hands over the editor's stdio with its first
//! bytes ([`handoff`]), the session reads and writes those directly and the socket carries the
//! ledger. The socket lives in the runtime directory
//! (0700) and is itself 0600; a peer of another user is refused anyway.

use std::io::{self, Cursor};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use nix::fcntl::{Flock, FlockArg};
use serde_json::value::RawValue;
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
    Interest,
};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf, pipe};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::hub::{Hub, Inbound, RequestReply, Session, SessionEvents};
use crate::transport::handoff;
use crate::wire::framing::{Frame, LineReader};
use crate::wire::jsonrpc::{self, Envelope, ErrorObject};

/// The socket's file name in the runtime directory.
pub const SOCKET_NAME: &str = "switchboard.sock";

/// How many outgoing messages of one connection may wait for its writer before the producers
/// (the hub's reply and event streams) wait in turn.
const OUTGOING_CAPACITY: usize = 256;
const SOCKET_BUFFER: usize = 64 * 1024;
/// After a client closes its side, how long its unanswered requests may still finish.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);
/// How long shutdown waits for the connections to close their sessions.
const CLOSE_LIMIT: Duration = Duration::from_secs(2);
/// How long `switchboard connect` may take to send its handoff header and prefix.
const HANDOFF_LIMIT: Duration = Duration::from_secs(10);
/// Pause after a failed accept (for example, out of file descriptors) before trying again.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// Where the socket of the instance using `runtime_dir` lives.
pub fn socket_path(runtime_dir: &Path) -> PathBuf {
    runtime_dir.join(SOCKET_NAME)
}

/// Binds the socket at `path`, replacing a stale socket file left by an instance that died.
///
/// Fails with [`io::ErrorKind::AddrInUse`] when a live instance answers on `path`. The check
/// and the bind happen under a lock file next to the socket, so two instances starting at the
/// same moment cannot both decide the socket is stale. Must be called inside a tokio runtime.
pub fn bind(path: &Path) -> io::Result<UnixListener> {
    let lock_path = path.with_extension("sock.lock");
    let lock_file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&lock_path)?;
    let _lock = Flock::lock(lock_file, FlockArg::LockExclusive)
        .map_err(|(_, errno)| io::Error::from(errno))?;
    match std::os::unix::net::UnixStream::connect(path) {
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!(
                    "another Switchboard is already listening on {}",
                    path.display()
                ),
            ));
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) if error.kind() == io::ErrorKind::ConnectionRefused => {
            remove_stale_socket(path)?
        }
        Err(error) => return Err(error),
    }
    let listener = UnixListener::bind(path)?;
    // The directory is 0700 already, so the moment between bind and chmod exposes nothing.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Removes a socket file nobody listens on; refuses to remove anything that is not a socket.
fn remove_stale_socket(path: &Path) -> io::Result<()> {
    let file_type = std::fs::symlink_metadata(path)?.file_type();
    if !file_type.is_socket() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} exists and is not a socket", path.display()),
        ));
    }
    tracing::debug!(path = %path.display(), "removing a stale socket");
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// Accepts connections until `shutdown` is cancelled; each one is a hub session.
///
/// On shutdown the socket file is removed before the listener closes (so a new instance can
/// bind at once), and every connection closes its session, which cancels its calls.
pub async fn serve_socket(
    listener: UnixListener,
    hub: Hub,
    max_message_size: usize,
    shutdown: CancellationToken,
) {
    let own_uid = nix::unistd::getuid().as_raw();
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let peer_uid = stream.peer_cred().map(|cred| cred.uid());
                    if peer_uid.as_ref().ok() != Some(&own_uid) {
                        tracing::warn!(?peer_uid, "refused a socket connection from another user");
                        continue;
                    }
                    let connection = serve_connection(
                        stream,
                        hub.clone(),
                        max_message_size,
                        shutdown.child_token(),
                    );
                    connections.spawn(connection);
                }
                Err(error) => {
                    tracing::warn!(%error, "accepting a socket connection failed");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                }
            },
            Some(finished) = connections.join_next(), if !connections.is_empty() => {
                if let Err(error) = finished {
                    tracing::error!(%error, "a socket connection task failed");
                }
            }
        }
    }
    if let Some(path) = listener
        .local_addr()
        .ok()
        .and_then(|addr| addr.as_pathname().map(Path::to_path_buf))
    {
        let _ = std::fs::remove_file(path);
    }
    drop(listener);
    let closed = tokio::time::timeout(CLOSE_LIMIT, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if closed.is_err() {
        tracing::warn!("socket connections did not close in time");
    }
}

/// Carries one connection. A client that sends its stdio with the first bytes ([`handoff`]) is
/// read and answered through those; any other speaks newline-delimited JSON-RPC on the socket.
async fn serve_connection(
    stream: UnixStream,
    hub: Hub,
    max_message_size: usize,
    cancel: CancellationToken,
) {
    let mut opening = vec![0; SOCKET_BUFFER];
    let received = tokio::select! {
        _ = cancel.cancelled() => return,
        received = stream.async_io(Interest::READABLE, || {
            handoff::recv_with_fds(stream.as_raw_fd(), &mut opening)
        }) => received,
    };
    let (n_read, fds) = match received {
        Ok(received) => received,
        Err(error) => {
            tracing::debug!(%error, "reading the socket failed");
            return;
        }
    };
    opening.truncate(n_read);
    let (read_half, write_half) = stream.into_split();
    let socket = BufReader::with_capacity(SOCKET_BUFFER, Cursor::new(opening).chain(read_half));
    if fds.is_empty() {
        let session = Carry::new(hub, max_message_size, cancel);
        session.run(socket, write_half, None).await;
        return;
    }
    let accepted =
        tokio::time::timeout(HANDOFF_LIMIT, accept_handoff(socket, fds, max_message_size))
            .await
            .unwrap_or_else(|_| {
                Err(anyhow::anyhow!(
                    "the handoff did not arrive within {HANDOFF_LIMIT:?}"
                ))
            });
    match accepted {
        Ok(accepted) => {
            let mut write_half = write_half;
            let mut accepted_line = Vec::new();
            handoff::Record::Accepted.encode(&mut accepted_line);
            // Said before stdin is read: from here on, what the editor wrote is ours to answer.
            if let Err(error) = write_half.write_all(&accepted_line).await {
                tracing::debug!(%error, "switchboard connect left during the handoff");
                return;
            }
            let session = Carry::new(hub, max_message_size, cancel);
            if let Some(replay) = &accepted.replay {
                session.replay_initialize(replay);
            }
            let ledger = Ledger {
                socket: write_half,
                lifeline: accepted.lifeline,
                handed: accepted.handed,
                records: accepted.records,
            };
            session
                .run(accepted.input, accepted.output, Some(ledger))
                .await;
        }
        Err(error) => {
            tracing::warn!(%error, "refused a handoff from switchboard connect");
            let mut refused = Vec::new();
            handoff::Record::Refused(&format!("{error:#}")).encode(&mut refused);
            let mut write_half = write_half;
            let _ = write_half.write_all(&refused).await;
        }
    }
}

type SocketReader = BufReader<tokio::io::Chain<Cursor<Vec<u8>>, OwnedReadHalf>>;
type HandoffInput = BufReader<tokio::io::Chain<Cursor<Vec<u8>>, MarkingReader<pipe::Receiver>>>;

/// A handoff read off the socket: the editor's stdio and what to do first.
struct Accepted {
    input: HandoffInput,
    output: pipe::Sender,
    replay: Option<Box<RawValue>>,
    /// The socket's reading side; the shim never writes after the header, so this only ends.
    lifeline: SocketReader,
    /// The shared ledger, and records for the socket.
    handed: Arc<Handed>,
    records: mpsc::UnboundedReceiver<Vec<u8>>,
}

/// Reads the header and the prefix, and takes the two descriptors that came with them.
async fn accept_handoff(
    mut socket: SocketReader,
    fds: Vec<OwnedFd>,
    max_message_size: usize,
) -> anyhow::Result<Accepted> {
    let mut line = Vec::new();
    (&mut socket)
        .take(max_message_size as u64 + 1024)
        .read_until(b'\n', &mut line)
        .await?;
    let header: handoff::Header =
        serde_json::from_slice(&line).context("the first line is not a handoff header")?;
    anyhow::ensure!(
        header.version == handoff::VERSION,
        "handoff version {} is not {}; the connect and serve binaries differ",
        header.version,
        handoff::VERSION
    );
    let [input, output, ledger]: [OwnedFd; 3] = fds
        .try_into()
        .map_err(|fds: Vec<OwnedFd>| anyhow::anyhow!("{} descriptors instead of 3", fds.len()))?;
    let ledger = handoff::Ledger::open(&ledger).context("cannot map the ledger")?;
    anyhow::ensure!(
        header.prefix <= handoff::PREFIX_LIMIT,
        "a prefix of {} bytes is over the limit of {}",
        header.prefix,
        handoff::PREFIX_LIMIT
    );
    let mut prefix = vec![0; header.prefix];
    socket.read_exact(&mut prefix).await?;
    for fd in [&input, &output] {
        handoff::set_nonblocking(fd.as_raw_fd(), true)?;
    }
    let (records, records_rx) = mpsc::unbounded_channel();
    let handed = Arc::new(Handed::new(ledger, records));
    let input = pipe::Receiver::from_owned_fd_unchecked(input)?;
    let marking = MarkingReader::new(input, &prefix, handed.clone());
    Ok(Accepted {
        input: BufReader::with_capacity(SOCKET_BUFFER, Cursor::new(prefix).chain(marking)),
        output: pipe::Sender::from_owned_fd_unchecked(output)?,
        replay: header.replay,
        lifeline: socket,
        handed,
        records: records_rx,
    })
}

/// The socket of a handed-off session: records go out on it, and its end means the shim left.
struct Ledger {
    socket: OwnedWriteHalf,
    lifeline: SocketReader,
    handed: Arc<Handed>,
    records: mpsc::UnboundedReceiver<Vec<u8>>,
}

/// What the reading and writing sides of a handed-off session share: the ledger in memory, its
/// free slots, and records for the socket.
struct Handed {
    ledger: handoff::Ledger,
    free: Mutex<Vec<usize>>,
    records: mpsc::UnboundedSender<Vec<u8>>,
}

/// Where a request read from the editor is recorded as unanswered.
enum Entry {
    Slot(usize),
    Record(Box<str>),
}

impl Handed {
    fn new(ledger: handoff::Ledger, records: mpsc::UnboundedSender<Vec<u8>>) -> Handed {
        Handed {
            ledger,
            free: Mutex::new((0..handoff::SLOTS).rev().collect()),
            records,
        }
    }

    fn free(&self) -> std::sync::MutexGuard<'_, Vec<usize>> {
        self.free
            .lock()
            .expect("the slot list lock is never poisoned")
    }

    fn record(&self, record: handoff::Record<'_>) {
        let mut line = Vec::new();
        record.encode(&mut line);
        let _ = self.records.send(line);
    }

    /// Records a request read from the editor: in a slot, or on the socket when none fits.
    fn request(&self, id: &str) -> Entry {
        let slot = self.free().pop();
        if let Some(slot) = slot {
            if self.ledger.claim(slot, id) {
                return Entry::Slot(slot);
            }
            self.free().push(slot);
        }
        self.record(handoff::Record::Request(id));
        Entry::Record(id.into())
    }
}

/// One message or fact for the writer, in the order the client must see them.
enum Out {
    /// One complete JSON text for the client.
    Message(Vec<u8>),
    /// The answer to the request recorded here was the message before.
    Answered(Entry),
}

/// One client's session, from its first line to its close.
struct Carry {
    hub: Hub,
    session: Session,
    events: Option<SessionEvents>,
    max_message_size: usize,
    cancel: CancellationToken,
}

impl Carry {
    fn new(hub: Hub, max_message_size: usize, cancel: CancellationToken) -> Carry {
        let (session, events) = hub.open_session();
        tracing::debug!(session = session.id(), "socket connection opened");
        Carry {
            hub,
            session,
            events: Some(events),
            max_message_size,
            cancel,
        }
    }

    /// Takes the editor's `initialize` again under an id of our own, and drops the answer.
    fn replay_initialize(&self, initialize: &RawValue) {
        let params = Envelope::parse(initialize.get().as_bytes())
            .ok()
            .and_then(|envelope| envelope.params);
        let request = jsonrpc::request_line(handoff::REPLAY_ID, "initialize", params);
        drop(self.session.receive(&request));
        let initialized = jsonrpc::notification_line("notifications/initialized", None);
        drop(self.session.receive(&initialized));
    }

    /// Reads lines from `input` into the session and writes what it answers or emits to
    /// `output`; with a ledger, keeps it as [`handoff`] describes.
    async fn run<R, W>(mut self, input: R, output: W, ledger: Option<Ledger>)
    where
        R: AsyncBufRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let session = self.session.clone();
        let cancel = self.cancel.clone();
        let max_message_size = self.max_message_size;
        let (outgoing, outgoing_rx) = mpsc::channel(OUTGOING_CAPACITY);
        let (records, mut lifeline, writer) = match ledger {
            Some(Ledger {
                socket,
                lifeline,
                handed,
                records,
            }) => {
                let ledger = LedgerWriter {
                    socket,
                    handed: handed.clone(),
                    records,
                    pending: Vec::new(),
                };
                let writer = write_loop(output, outgoing_rx, Some(ledger), cancel.clone());
                (Some(handed), Some(lifeline), tokio::spawn(writer))
            }
            None => (
                None,
                None,
                tokio::spawn(write_loop(output, outgoing_rx, None, cancel.clone())),
            ),
        };
        let events = self.events.take().expect("a session runs once");
        let forward_events = tokio::spawn(forward_events(events, outgoing.clone()));
        let mut replies = JoinSet::new();
        let mut lines = LineReader::new(input, max_message_size);
        let lifeline_ended = async {
            match lifeline.as_mut() {
                Some(lifeline) => {
                    let mut sink = [0; 64];
                    while let Ok(1..) = lifeline.read(&mut sink).await {}
                }
                None => std::future::pending().await,
            }
        };
        tokio::pin!(lifeline_ended);

        let client_finished = loop {
            let frame = tokio::select! {
                _ = cancel.cancelled() => break false,
                _ = &mut lifeline_ended => {
                    tracing::debug!(session = session.id(), "switchboard connect left");
                    break false;
                }
                Some(_) = replies.join_next(), if !replies.is_empty() => continue,
                frame = lines.next_frame() => frame,
            };
            let answer = match frame {
                Ok(Some(Frame::Line(line))) => {
                    receive_line(&session, &line, &mut replies, &outgoing, records.as_ref())
                }
                Ok(Some(Frame::Oversized { len, .. })) => {
                    Some(oversized_error(len, max_message_size))
                }
                Ok(None) => break true,
                Err(error) => {
                    tracing::debug!(session = session.id(), %error, "reading the client failed");
                    break false;
                }
            };
            if let Some(answer) = answer
                && outgoing.send(Out::Message(answer)).await.is_err()
            {
                break false;
            }
        };

        // A client that only closed its sending side still gets the answers to what it asked.
        if client_finished {
            if let Some(handed) = &records {
                handed.record(handoff::Record::InputEnded);
            }
            let drained = tokio::time::timeout(DRAIN_LIMIT, async {
                while replies.join_next().await.is_some() {}
            });
            tokio::select! {
                _ = cancel.cancelled() => {}
                _ = &mut lifeline_ended => {}
                _ = drained => {}
            }
        }
        replies.abort_all();
        self.hub.close_session(session.id());
        forward_events.abort();
        drop(outgoing);
        drop(records);
        // A client that stopped reading must not keep this task forever.
        let mut writer = writer;
        if tokio::time::timeout(CLOSE_LIMIT, &mut writer)
            .await
            .is_err()
        {
            cancel.cancel();
            let _ = writer.await;
        }
        tracing::debug!(session = session.id(), "socket connection closed");
    }
}

/// Hands one line to the session; returns what must be written back at once, if anything.
fn receive_line(
    session: &Session,
    line: &[u8],
    replies: &mut JoinSet<()>,
    outgoing: &mpsc::Sender<Out>,
    handed: Option<&Arc<Handed>>,
) -> Option<Vec<u8>> {
    let first = line.iter().find(|byte| !byte.is_ascii_whitespace())?;
    if *first == b'[' {
        return Some(jsonrpc::error_line(
            None,
            &ErrorObject::new(
                jsonrpc::INVALID_REQUEST,
                "batches are not supported on stdio; send one message per line",
            ),
        ));
    }
    match session.receive(line) {
        Inbound::Request(reply) => {
            let entry = handed.map(|handed| {
                if reply.initialize {
                    handed.record(handoff::Record::Initialize(line));
                }
                handed.request(&reply.id)
            });
            replies.spawn(forward_reply(reply, outgoing.clone(), entry));
            None
        }
        Inbound::Accepted => None,
        Inbound::Rejected(error) => Some(error),
    }
}

fn oversized_error(len: usize, limit: usize) -> Vec<u8> {
    jsonrpc::error_line(
        None,
        &ErrorObject::new(
            jsonrpc::INVALID_REQUEST,
            format!("a message of {len} bytes was dropped: the limit is {limit} bytes per message"),
        ),
    )
}

/// Forwards everything belonging to one request, ending after its response; with an `entry`
/// in the ledger, then says the request was answered.
async fn forward_reply(reply: RequestReply, outgoing: mpsc::Sender<Out>, entry: Option<Entry>) {
    let mut messages = reply.messages;
    let mut forwarded = false;
    while let Some(message) = messages.recv().await {
        if outgoing.send(Out::Message(message)).await.is_err() {
            return;
        }
        forwarded = true;
    }
    if let Some(entry) = entry.filter(|_| forwarded) {
        let _ = outgoing.send(Out::Answered(entry)).await;
    }
}

async fn forward_events(mut events: SessionEvents, outgoing: mpsc::Sender<Out>) {
    while let Some(message) = events.recv().await {
        if outgoing.send(Out::Message(message)).await.is_err() {
            return;
        }
    }
}

/// The writing side of a ledger: records from the reader wait in `records`, and go out in
/// `pending` ahead of anything that depends on them.
struct LedgerWriter {
    socket: OwnedWriteHalf,
    handed: Arc<Handed>,
    records: mpsc::UnboundedReceiver<Vec<u8>>,
    pending: Vec<u8>,
}

impl LedgerWriter {
    /// Moves what the reader recorded into `pending`.
    fn take_records(&mut self) {
        while let Ok(record) = self.records.try_recv() {
            self.pending.extend_from_slice(&record);
        }
    }

    fn push(&mut self, record: handoff::Record<'_>) {
        record.encode(&mut self.pending);
    }

    async fn flush(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            self.socket.write_all(&self.pending).await?;
            self.pending.clear();
        }
        Ok(())
    }
}

/// Owns the client's writing side: one message per line, batching whatever is queued into one
/// write. With a ledger, a request's answer is recorded only once it is written, and a write
/// that may reach the client in pieces is announced first. Stops at once when the connection is
/// cancelled, and cancels it when writing fails.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut output: W,
    mut outgoing: mpsc::Receiver<Out>,
    mut ledger: Option<LedgerWriter>,
    cancel: CancellationToken,
) {
    let mut batch = Vec::new();
    let mut answered: Vec<Entry> = Vec::new();
    let result: io::Result<()> = async {
        loop {
            let recorded = async {
                match ledger.as_mut() {
                    Some(ledger) => ledger.records.recv().await,
                    None => std::future::pending().await,
                }
            };
            let first = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Ok(()),
                out = outgoing.recv() => match out {
                    Some(out) => Some(out),
                    None => break,
                },
                Some(record) = recorded => {
                    if let Some(ledger) = ledger.as_mut() {
                        ledger.pending.extend_from_slice(&record);
                    }
                    None
                }
            };
            let mut next = first;
            while let Some(out) = next.take().or_else(|| outgoing.try_recv().ok()) {
                match out {
                    Out::Message(message) => {
                        batch.extend_from_slice(&message);
                        if message.last() != Some(&b'\n') {
                            batch.push(b'\n');
                        }
                        if batch.len() >= SOCKET_BUFFER {
                            write_batch(&mut output, &mut batch, ledger.as_mut(), &cancel).await?;
                        }
                    }
                    Out::Answered(entry) => answered.push(entry),
                }
            }
            write_batch(&mut output, &mut batch, ledger.as_mut(), &cancel).await?;
            if let Some(ledger) = ledger.as_mut() {
                ledger.take_records();
                for entry in answered.drain(..) {
                    match entry {
                        Entry::Slot(slot) => {
                            ledger.handed.ledger.release(slot);
                            ledger.handed.free().push(slot);
                        }
                        Entry::Record(id) => ledger.push(handoff::Record::Answered(&id)),
                    }
                }
                ledger.flush().await?;
            }
        }
        if let Some(ledger) = ledger.as_mut() {
            ledger.take_records();
            ledger.flush().await?;
        }
        Ok(())
    }
    .await;
    if let Err(error) = result {
        tracing::debug!(%error, "writing to the client failed");
        cancel.cancel();
    }
    let _ = output.shutdown().await;
}

/// Writes `batch` whole, unless the connection is cancelled meanwhile.
async fn write_batch<W: AsyncWrite + Unpin>(
    output: &mut W,
    batch: &mut Vec<u8>,
    mut ledger: Option<&mut LedgerWriter>,
    cancel: &CancellationToken,
) -> io::Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let split = batch.len() > handoff::ATOMIC_WRITE;
    if split && let Some(ledger) = ledger.as_mut() {
        ledger.handed.ledger.set_partial_output(true);
    }
    tokio::select! {
        biased;
        _ = cancel.cancelled() => return Ok(()),
        written = output.write_all(batch) => written?,
    }
    batch.clear();
    if split && let Some(ledger) = ledger {
        ledger.handed.ledger.set_partial_output(false);
    }
    Ok(())
}

/// Watches the editor's stdin on its way in and keeps in the ledger whether it stopped in the
/// middle of a line, so the shim knows whether a piece of a line is lost with a dying instance.
struct MarkingReader<R> {
    inner: R,
    handed: Arc<Handed>,
    /// The first bytes of the line under way, to find its id.
    head: Vec<u8>,
}

/// How many bytes of a line under way are kept to find its id.
const HEAD_KEPT: usize = 512;

impl<R> MarkingReader<R> {
    /// `prefix` is what comes before `inner`'s bytes.
    fn new(inner: R, prefix: &[u8], handed: Arc<Handed>) -> MarkingReader<R> {
        let mut reader = MarkingReader {
            inner,
            handed,
            head: Vec::new(),
        };
        reader.observe(prefix);
        reader
    }

    fn observe(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let tail = match memchr::memrchr(b'\n', bytes) {
            Some(pos) => {
                self.head.clear();
                &bytes[pos + 1..]
            }
            None if self.head.len() >= HEAD_KEPT => return,
            None => bytes,
        };
        let room = HEAD_KEPT.saturating_sub(self.head.len());
        self.head.extend_from_slice(&tail[..room.min(tail.len())]);
        let partial = (!self.head.is_empty()).then(|| jsonrpc::sniff_id(&self.head));
        self.handed.ledger.set_partial_input(partial);
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for MarkingReader<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut this.inner).poll_read(cx, buf);
        if let std::task::Poll::Ready(Ok(())) = &polled {
            this.observe(&buf.filled()[before..]);
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bind_replaces_a_stale_socket_and_refuses_a_live_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = socket_path(dir.path());

        let first = bind(&path).expect("binds a fresh path");
        let mode = std::fs::metadata(&path)
            .expect("socket exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let error = bind(&path).expect_err("a live socket is not replaced");
        assert_eq!(error.kind(), io::ErrorKind::AddrInUse);

        drop(first);
        assert!(path.exists(), "a dropped listener leaves its file behind");
        let second = bind(&path).expect("a stale socket is replaced");
        let (client, server) = tokio::join!(UnixStream::connect(&path), second.accept());
        client.expect("the new socket answers");
        server.expect("and accepts");
    }

    /// A client of the socket, reading answers line by line.
    struct Client {
        lines: tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
        writer: OwnedWriteHalf,
    }

    impl Client {
        async fn connect(path: &Path) -> Client {
            let stream = UnixStream::connect(path).await.expect("the socket answers");
            let (read_half, writer) = stream.into_split();
            Client {
                lines: tokio::io::AsyncBufReadExt::lines(BufReader::new(read_half)),
                writer,
            }
        }

        async fn send(&mut self, line: &[u8]) {
            self.writer.write_all(line).await.expect("write");
            self.writer.write_all(b"\n").await.expect("write");
        }

        async fn next(&mut self) -> Option<serde_json::Value> {
            let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
                .await
                .expect("an answer in time")
                .expect("read");
            line.map(|line| serde_json::from_str(&line).expect("a JSON line"))
        }

        /// Pings with `id` and checks that the answer carries it.
        async fn ping(&mut self, id: u64) {
            let ping = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            self.send(ping.as_bytes()).await;
            assert_eq!(self.next().await.expect("an answer")["id"], id);
        }
    }

    /// `serve_socket` on a socket in a temporary directory, over a hub without backends.
    struct Served {
        _dir: tempfile::TempDir,
        path: PathBuf,
        hub: Hub,
        shutdown: CancellationToken,
        server: tokio::task::JoinHandle<()>,
    }

    impl Served {
        fn start(max_message_size: usize) -> Served {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = socket_path(dir.path());
            let listener = bind(&path).expect("binds");
            let hub = Hub::start(
                Vec::new(),
                crate::supervisor::spawn::GroupRegistry::in_memory(),
                crate::hub::HubOptions::default(),
            );
            let shutdown = CancellationToken::new();
            let server = tokio::spawn(serve_socket(
                listener,
                hub.clone(),
                max_message_size,
                shutdown.clone(),
            ));
            Served {
                _dir: dir,
                path,
                hub,
                shutdown,
                server,
            }
        }
    }

    #[tokio::test]
    async fn each_line_is_one_message_and_bad_lines_get_errors_without_closing() {
        let served = Served::start(256);
        let path = served.path.clone();
        let mut client = Client::connect(&path).await;

        client
            .send(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#)
            .await;
        let batch = client.next().await.expect("an answer");
        assert_eq!(batch["error"]["code"], jsonrpc::INVALID_REQUEST);
        assert!(
            batch["error"]["message"]
                .as_str()
                .expect("text")
                .contains("batches")
        );

        let padding = "x".repeat(300);
        let long =
            format!(r#"{{"jsonrpc":"2.0","id":2,"method":"ping","params":{{"p":"{padding}"}}}}"#);
        client.send(long.as_bytes()).await;
        let oversized = client.next().await.expect("an answer");
        assert_eq!(oversized["error"]["code"], jsonrpc::INVALID_REQUEST);
        assert_eq!(oversized["id"], serde_json::Value::Null);
        assert!(
            oversized["error"]["message"]
                .as_str()
                .expect("text")
                .contains("256 bytes")
        );

        client.send(b"").await;
        client
            .send(br#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
            .await;
        let initialized = client.next().await.expect("an answer");
        assert_eq!(initialized["id"], 3, "{initialized}");
        assert!(initialized["result"]["protocolVersion"].is_string());
        client
            .send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        client.ping(4).await;

        // Two connections are two sessions, so the same ids do not collide.
        let mut other = Client::connect(&path).await;
        other.ping(4).await;

        served.shutdown.cancel();
        assert_eq!(
            client.next().await,
            None,
            "shutdown closes every connection"
        );
        assert_eq!(other.next().await, None);
        served.server.await.expect("serve_socket ends");
        assert!(!path.exists(), "the socket file is removed on shutdown");
        served.hub.shutdown().await;
    }

    #[test]
    fn the_ledger_says_when_stdin_stops_mid_line_and_which_id_that_line_has() {
        let (shim_side, fd) = handoff::Ledger::create().expect("a ledger");
        let (records, _records) = mpsc::unbounded_channel();
        let handed = Arc::new(Handed::new(
            handoff::Ledger::open(&fd).expect("maps"),
            records,
        ));
        let mut reader = MarkingReader::new(
            tokio::io::empty(),
            br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"a":""#,
            handed,
        );
        assert_eq!(shim_side.partial_input(), Some(Some(Box::from("12"))));
        reader.observe(b"\"}}\n");
        assert_eq!(shim_side.partial_input(), None, "the line is whole again");
        reader.observe(b"{\"jsonrpc\":\"2.0\",");
        assert_eq!(shim_side.partial_input(), Some(None), "no id seen yet");
        reader.observe(b"\"id\":\"a str");
        assert_eq!(
            shim_side.partial_input(),
            Some(None),
            "a string not closed yet is not taken"
        );
        reader.observe(b"ing\",");
        assert_eq!(
            shim_side.partial_input(),
            Some(Some(Box::from("\"a string\"")))
        );
        reader.observe(b"\"method\":\"ping\"}\n{\"id\":3");
        assert_eq!(
            shim_side.partial_input(),
            Some(None),
            "a number that may go on is not taken"
        );
        reader.observe(b"4,");
        assert_eq!(shim_side.partial_input(), Some(Some(Box::from("34"))));
    }

    #[tokio::test]
    async fn a_bad_handoff_is_refused_with_its_reason_and_others_are_served() {
        let served = Served::start(1024);
        let path = served.path.clone();

        let cases = [
            (
                handoff::Header::new(None, handoff::PREFIX_LIMIT + 1).to_line(),
                "over the limit",
            ),
            (
                br#"{"switchboard":"handoff","version":99,"prefix":0}"#.to_vec(),
                &format!("handoff version 99 is not {}", handoff::VERSION),
            ),
            (b"{\"jsonrpc\":\"2.0\"}\n".to_vec(), "not a handoff header"),
        ];
        for (mut header, reason) in cases {
            if header.last() != Some(&b'\n') {
                header.push(b'\n');
            }
            let path = path.clone();
            let answer = tokio::task::spawn_blocking(move || {
                let stream = std::os::unix::net::UnixStream::connect(&path).expect("connects");
                let (input, output) = std::io::pipe().expect("a pipe");
                let (_ledger, ledger_fd) = handoff::Ledger::create().expect("a ledger");
                let fds = [input.as_raw_fd(), output.as_raw_fd(), ledger_fd.as_raw_fd()];
                handoff::send_with_fds(&stream, &header, &fds).expect("sent");
                stream
                    .set_read_timeout(Some(Duration::from_secs(10)))
                    .expect("timeout");
                let mut answer = String::new();
                std::io::Read::read_to_string(&mut &stream, &mut answer).expect("read");
                answer
            })
            .await
            .expect("the client ran");
            assert!(answer.starts_with('R'), "refused: {answer:?}");
            assert!(answer.contains(reason), "{answer:?} says {reason:?}");
        }

        let mut client = Client::connect(&path).await;
        client.ping(1).await;
        served.shutdown.cancel();
        served.server.await.expect("serve_socket ends");
        served.hub.shutdown().await;
    }

    #[tokio::test]
    async fn bind_does_not_remove_a_file_that_is_not_a_socket() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = socket_path(dir.path());
        std::fs::write(&path, "precious").expect("write file");
        let error = bind(&path).expect_err("a regular file is not a stale socket");
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&path).expect("kept"), "precious");
    }
}
