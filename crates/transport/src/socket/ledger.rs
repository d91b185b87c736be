//! The ledger of a handed-off session: what both directions share (requests in flight,
//! half-read lines), the records that go to the shim, and the socket they go on.

use std::io;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncWriteExt};
use tokio::sync::mpsc;

use super::{SocketReader, WriteHalf};
use crate::handoff;
use wire::jsonrpc;

/// The socket of a handed-off session: records go out on it, and its end means the shim left.
pub(super) struct ShimSocket {
    socket: WriteHalf,
    lifeline: SocketReader,
    shared: Arc<SharedLedger>,
    records: mpsc::UnboundedReceiver<Vec<u8>>,
}

impl ShimSocket {
    pub(super) fn new(
        socket: WriteHalf,
        lifeline: SocketReader,
        shared: Arc<SharedLedger>,
        records: mpsc::UnboundedReceiver<Vec<u8>>,
    ) -> ShimSocket {
        ShimSocket {
            socket,
            lifeline,
            shared,
            records,
        }
    }

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
