//! The ledger side of a handed-off session: the handoff read off the socket, the ledger both
//! directions share (requests in flight, half-read lines), and the records that go to the shim.

use std::io::{self, Cursor};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader, Interest};
use tokio::net::unix::pipe;
use tokio::sync::mpsc;

use tokio_util::sync::CancellationToken;

use super::session::LineSession;
use super::{SOCKET_BUFFER, SocketReader, WriteHalf, no_profile, refuse};
use crate::config::DEFAULT_PROFILE;
use crate::hub::Hub;
use crate::platform::ipc::Connection;
use crate::platform::passing;
use crate::transport::handoff;
use crate::wire::jsonrpc;

/// How long `switchboard connect` may take to send its handoff header and prefix.
const HANDOFF_LIMIT: Duration = Duration::from_secs(10);

/// What came with a connection's first bytes: the descriptors of a handoff.
pub(super) type Passed = Vec<OwnedFd>;

/// The connection's first bytes, read into `buf`, and the descriptors that came with them, if
/// any.
pub(super) async fn read_opening(
    stream: &mut Connection,
    buf: &mut [u8],
) -> io::Result<(usize, Option<Passed>)> {
    let (n, fds) = stream
        .async_io(Interest::READABLE, || {
            passing::recv_with_fds(stream.as_raw_fd(), buf)
        })
        .await?;
    Ok((n, (!fds.is_empty()).then_some(fds)))
}

pub(super) type HandoffInput =
    BufReader<tokio::io::Chain<Cursor<Vec<u8>>, MarkingReader<pipe::Receiver>>>;

/// A handoff read off the socket: the editor's stdio and what to do first.
struct Accepted {
    pub(super) input: HandoffInput,
    pub(super) output: pipe::Sender,
    pub(super) replay: Option<Box<RawValue>>,
    /// The profile the editor asked for; the default one when `None`.
    pub(super) profile: Option<String>,
    /// The socket's reading side; the shim never writes after the header, so this only ends.
    pub(super) lifeline: SocketReader,
    /// The shared ledger, and records for the socket.
    pub(super) shared: Arc<SharedLedger>,
    pub(super) records: mpsc::UnboundedReceiver<Vec<u8>>,
}

/// Reads the header and the prefix, and takes the two descriptors that came with them.
async fn accept_handoff(
    mut socket: SocketReader,
    fds: Passed,
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
        passing::set_nonblocking(fd.as_fd(), true)?;
    }
    let (records, records_rx) = mpsc::unbounded_channel();
    let shared = Arc::new(SharedLedger::new(ledger, records));
    let input = pipe::Receiver::from_owned_fd_unchecked(input)?;
    let marking = MarkingReader::new(input, &prefix, shared.clone());
    Ok(Accepted {
        input: BufReader::with_capacity(SOCKET_BUFFER, Cursor::new(prefix).chain(marking)),
        output: pipe::Sender::from_owned_fd_unchecked(output)?,
        replay: header.replay,
        profile: header.profile,
        lifeline: socket,
        shared,
        records: records_rx,
    })
}

/// The socket of a handed-off session: records go out on it, and its end means the shim left.
pub(super) struct ShimSocket {
    socket: WriteHalf,
    lifeline: SocketReader,
    shared: Arc<SharedLedger>,
    records: mpsc::UnboundedReceiver<Vec<u8>>,
}

impl ShimSocket {
    /// What the session's reader shares, the lifeline whose end means the shim left, and the
    /// writer of records.
    pub(super) fn into_parts(self) -> (Arc<SharedLedger>, SocketReader, LedgerWriter) {
        let writer = LedgerWriter {
            socket: self.socket,
            shared: self.shared.clone(),
            records: self.records,
            pending: Vec::new(),
        };
        (self.shared, self.lifeline, writer)
    }
}

/// Takes a handoff whose header, prefix and descriptors arrive on `socket`, and runs its session
/// until the editor or the shim leaves; a handoff that cannot be taken is refused with the
/// reason.
pub(super) async fn serve_handoff(
    socket: SocketReader,
    mut write_half: WriteHalf,
    passed: Passed,
    hub: Hub,
    max_message_size: usize,
    cancel: CancellationToken,
) {
    let accepted = tokio::time::timeout(
        HANDOFF_LIMIT,
        accept_handoff(socket, passed, max_message_size),
    )
    .await
    .unwrap_or_else(|_| {
        Err(anyhow::anyhow!(
            "the handoff did not arrive within {HANDOFF_LIMIT:?}"
        ))
    })
    .and_then(|accepted| {
        let profile = accepted.profile.as_deref().unwrap_or(DEFAULT_PROFILE);
        match LineSession::new(hub, profile, max_message_size, cancel) {
            Some(session) => Ok((accepted, session)),
            None => Err(anyhow::anyhow!(no_profile(profile))),
        }
    });
    let (accepted, session) = match accepted {
        Ok(accepted) => accepted,
        Err(error) => {
            tracing::warn!(%error, "refused a handoff from switchboard connect");
            refuse(write_half, &format!("{error:#}")).await;
            return;
        }
    };
    let mut accepted_line = Vec::new();
    handoff::Record::Accepted.encode(&mut accepted_line);
    // Said before stdin is read: from here on, what the editor wrote is ours to answer.
    if let Err(error) = write_half.write_all(&accepted_line).await {
        tracing::debug!(%error, "switchboard connect left during the handoff");
        return;
    }
    if let Some(replay) = &accepted.replay {
        // The editor's `initialize` again under an id of our own; the answer is dropped.
        for line in handoff::replayed_initialize(replay) {
            drop(session.session.receive(&line));
        }
    }
    let ledger = ShimSocket {
        socket: write_half,
        lifeline: accepted.lifeline,
        shared: accepted.shared,
        records: accepted.records,
    };
    session
        .run(accepted.input, accepted.output, Some(ledger))
        .await;
}

/// What the reading and writing sides of a handed-off session share: the ledger in memory, its
/// free slots, and records for the socket.
pub(super) struct SharedLedger {
    ledger: handoff::Ledger,
    free: Mutex<Vec<usize>>,
    records: mpsc::UnboundedSender<Vec<u8>>,
}

/// Where a request read from the editor is recorded as unanswered.
pub(super) enum Unanswered {
    /// In this slot of the ledger.
    Slot(usize),
    /// On the socket, by its id.
    Record(Box<str>),
}

impl SharedLedger {
    pub(super) fn new(
        ledger: handoff::Ledger,
        records: mpsc::UnboundedSender<Vec<u8>>,
    ) -> SharedLedger {
        SharedLedger {
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

    pub(super) fn record(&self, record: handoff::Record<'_>) {
        let mut line = Vec::new();
        record.encode(&mut line);
        let _ = self.records.send(line);
    }

    /// Records a request read from the editor: in a slot, or on the socket when none fits.
    pub(super) fn request(&self, id: &str) -> Unanswered {
        let slot = self.free().pop();
        if let Some(slot) = slot {
            if self.ledger.claim(slot, id) {
                return Unanswered::Slot(slot);
            }
            self.free().push(slot);
        }
        self.record(handoff::Record::Request(id));
        Unanswered::Record(id.into())
    }
}

/// The writing side of a ledger: records from the reader wait in `records`, and go out in
/// `pending` ahead of anything that depends on them.
pub(super) struct LedgerWriter {
    socket: WriteHalf,
    shared: Arc<SharedLedger>,
    records: mpsc::UnboundedReceiver<Vec<u8>>,
    pending: Vec<u8>,
}

impl LedgerWriter {
    /// The next record the reader made.
    pub(super) async fn next_record(&mut self) -> Option<Vec<u8>> {
        self.records.recv().await
    }

    /// Keeps a record for the next flush.
    pub(super) fn keep(&mut self, record: &[u8]) {
        self.pending.extend_from_slice(record);
    }

    /// The answer to the request recorded as `entry` was written to the editor.
    pub(super) fn answered(&mut self, entry: Unanswered) {
        match entry {
            Unanswered::Slot(slot) => {
                self.shared.ledger.release(slot);
                self.shared.free().push(slot);
            }
            Unanswered::Record(id) => self.push(handoff::Record::Answered(&id)),
        }
    }

    /// Whether a write to the editor that may be split is under way.
    pub(super) fn set_partial_output(&self, partial: bool) {
        self.shared.ledger.set_partial_output(partial);
    }

    /// Moves what the reader recorded into `pending`.
    pub(super) fn take_records(&mut self) {
        while let Ok(record) = self.records.try_recv() {
            self.pending.extend_from_slice(&record);
        }
    }

    fn push(&mut self, record: handoff::Record<'_>) {
        record.encode(&mut self.pending);
    }

    pub(super) async fn flush(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            self.socket.write_all(&self.pending).await?;
            self.pending.clear();
        }
        Ok(())
    }
}

/// Watches the editor's stdin on its way in and keeps in the ledger whether it stopped in the
/// middle of a line, so the shim knows whether a piece of a line is lost with a dying instance.
pub(super) struct MarkingReader<R> {
    pub(super) inner: R,
    pub(super) shared: Arc<SharedLedger>,
    /// The first bytes of the line under way, to find its id.
    pub(super) head: Vec<u8>,
}

/// How many bytes of a line under way are kept to find its id.
pub(super) const HEAD_KEPT: usize = 512;

impl<R> MarkingReader<R> {
    /// `prefix` is what comes before `inner`'s bytes.
    pub(super) fn new(inner: R, prefix: &[u8], shared: Arc<SharedLedger>) -> MarkingReader<R> {
        let mut reader = MarkingReader {
            inner,
            shared,
            head: Vec::new(),
        };
        reader.observe(prefix);
        reader
    }

    pub(super) fn observe(&mut self, bytes: &[u8]) {
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
        self.shared.ledger.set_partial_input(partial);
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
