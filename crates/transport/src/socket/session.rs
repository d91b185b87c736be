//! One client's session on the socket: lines in, answers and events out, in order; with a
//! handed-off session, the ledger kept as answers are written. Each line is parsed once and its
//! era read from its envelope, as `/mcp` does per request: a 2026-07-28 request goes to the hub
//! on its own, and a session-era message to the connection's session.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::sync::Arc;

use tokio::io::{AsyncBufRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use super::ledger::{LedgerWriter, SharedLedger, ShimSocket, Unanswered};
use super::{CLOSE_LIMIT, DRAIN_LIMIT, OUTGOING_CAPACITY, SOCKET_BUFFER, SocketReader};
use crate::handoff;
use hub::reply::Response;
use hub::rewrite::ObjectEntries;
use hub::{Hub, Inbound, RequestReply, Session, SessionEvents, is_stateless_envelope};
use wire::framing::{Frame, LineReader};
use wire::jsonrpc::{self, Envelope, ErrorObject};
use wire::method::Method;

/// One message or fact for the writer, in the order the client must see them.
pub(super) enum Outgoing {
    /// One complete JSON text for the client.
    Message(Vec<u8>),
    /// The answer to the request recorded here was the message before.
    Answered(Unanswered),
}

/// The 2026-07-28 requests of a connection still being answered, by id (JSON text): each runs
/// on its own, outside the session, and a `notifications/cancelled` naming one ends it.
#[derive(Default)]
pub(super) struct StatelessRequests {
    running: HashMap<Box<str>, AbortHandle>,
}

/// How many requests [`StatelessRequests`] keeps before it forgets those already answered.
const STATELESS_KEPT: usize = 64;

impl StatelessRequests {
    fn insert(&mut self, id: Box<str>, forwarding: AbortHandle) {
        if self.running.len() >= STATELESS_KEPT {
            self.running.retain(|_, handle| !handle.is_finished());
        }
        self.running.insert(id, forwarding);
    }

    /// Ends the request a `notifications/cancelled` names, if it is one of these.
    fn cancel_named(&mut self, envelope: &Envelope<'_>) {
        if self.running.is_empty() || envelope.method != Some(Method::Cancelled) {
            return;
        }
        let named = envelope
            .params
            .and_then(|params| ObjectEntries::parse(params.get()).ok())
            .and_then(|params| params.get("requestId").map(|id| id.get().to_owned()));
        if let Some(handle) = named.and_then(|id| self.running.remove(id.as_str())) {
            handle.abort();
        }
    }
}

/// One client's session, from its first line to its close.
pub(super) struct LineSession {
    pub(super) hub: Hub,
    pub(super) session: Session,
    pub(super) events: Option<SessionEvents>,
    pub(super) max_message_size: usize,
    pub(super) cancel: CancellationToken,
}

impl LineSession {
    /// A session of `profile`; `None` when no such profile is served.
    pub(super) fn new(
        hub: Hub,
        profile: &str,
        max_message_size: usize,
        cancel: CancellationToken,
    ) -> Option<LineSession> {
        let (session, events) = hub.open_session_in(profile)?;
        tracing::debug!(session = session.id(), profile, "socket connection opened");
        Some(LineSession {
            hub,
            session,
            events: Some(events),
            max_message_size,
            cancel,
        })
    }

    /// Reads lines from `input` into the session and writes what it answers or emits to
    /// `output`; with the shim's socket, keeps the ledger as [`handoff`] describes.
    pub(super) async fn run<R, W>(mut self, input: R, output: W, shim: Option<ShimSocket>)
    where
        R: AsyncBufRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (outgoing, outgoing_rx) = mpsc::channel(OUTGOING_CAPACITY);
        let (shared, lifeline, ledger_writer) = match shim.map(ShimSocket::into_parts) {
            Some((shared, lifeline, writer)) => (Some(shared), Some(lifeline), Some(writer)),
            None => (None, None, None),
        };
        let writer = tokio::spawn(write_loop(
            output,
            outgoing_rx,
            ledger_writer,
            self.cancel.clone(),
        ));
        let events = self.events.take().expect("a session runs once");
        let forward_events = tokio::spawn(forward_events(events, outgoing.clone()));
        let mut replies = JoinSet::new();
        let shim_left = shim_left(lifeline);
        tokio::pin!(shim_left);

        let client_finished = self
            .read_lines(
                input,
                &mut replies,
                &outgoing,
                shared.as_ref(),
                &mut shim_left,
            )
            .await;
        // A client that only closed its sending side still gets the answers to what it asked.
        if client_finished {
            if let Some(shared) = &shared {
                shared.record(handoff::Record::InputEnded);
            }
            let drained = tokio::time::timeout(DRAIN_LIMIT, async {
                while replies.join_next().await.is_some() {}
            });
            tokio::select! {
                _ = self.cancel.cancelled() => {}
                _ = &mut shim_left => {}
                _ = drained => {}
            }
        }
        replies.abort_all();
        self.hub.close_session(self.session.id());
        forward_events.abort();
        drop(outgoing);
        drop(shared);
        self.wait_for_writer(writer).await;
        tracing::debug!(session = self.session.id(), "socket connection closed");
    }

    /// Hands each line of `input` to the session until the client finishes (true) or the
    /// connection ends otherwise (false).
    pub(super) async fn read_lines<R: AsyncBufRead + Unpin>(
        &self,
        input: R,
        replies: &mut JoinSet<()>,
        outgoing: &mpsc::Sender<Outgoing>,
        shared: Option<&Arc<SharedLedger>>,
        shim_left: &mut (impl Future<Output = ()> + Unpin),
    ) -> bool {
        let session = &self.session;
        let mut stateless = StatelessRequests::default();
        let mut lines = LineReader::new(input, self.max_message_size);
        loop {
            let frame = tokio::select! {
                _ = self.cancel.cancelled() => return false,
                _ = &mut *shim_left => {
                    tracing::debug!(session = session.id(), "switchboard connect left");
                    return false;
                }
                Some(_) = replies.join_next(), if !replies.is_empty() => continue,
                frame = lines.next_frame() => frame,
            };
            let answer = match frame {
                Ok(Some(Frame::Line(line))) => {
                    let connection = Connection {
                        hub: &self.hub,
                        session,
                        stateless: &mut stateless,
                    };
                    receive_line(connection, &line, replies, outgoing, shared)
                }
                Ok(Some(Frame::Oversized { len, .. })) => {
                    Some(oversized_error(len, self.max_message_size))
                }
                Ok(None) => return true,
                Err(error) => {
                    tracing::debug!(session = session.id(), %error, "reading the client failed");
                    return false;
                }
            };
            if let Some(answer) = answer
                && outgoing.send(Outgoing::Message(answer)).await.is_err()
            {
                return false;
            }
        }
    }

    /// Lets the writer finish what is queued; a client that stopped reading must not keep this
    /// task forever.
    pub(super) async fn wait_for_writer(&self, mut writer: tokio::task::JoinHandle<()>) {
        if tokio::time::timeout(CLOSE_LIMIT, &mut writer)
            .await
            .is_err()
        {
            self.cancel.cancel();
            let _ = writer.await;
        }
    }
}

/// Ends when `switchboard connect` closes the socket of a handed-off session; never without one.
pub(super) async fn shim_left(lifeline: Option<SocketReader>) {
    match lifeline {
        Some(mut lifeline) => {
            let mut sink = [0; 64];
            while let Ok(1..) = lifeline.read(&mut sink).await {}
        }
        None => std::future::pending().await,
    }
}

/// Where a connection's lines go: its session, or the hub for a 2026-07-28 request.
pub(super) struct Connection<'a> {
    pub(super) hub: &'a Hub,
    pub(super) session: &'a Session,
    pub(super) stateless: &'a mut StatelessRequests,
}

/// Hands one line to the session, or a 2026-07-28 request to the hub; returns what must be
/// written back at once, if anything.
pub(super) fn receive_line(
    connection: Connection<'_>,
    line: &[u8],
    replies: &mut JoinSet<()>,
    outgoing: &mpsc::Sender<Outgoing>,
    shared: Option<&Arc<SharedLedger>>,
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
    let session = connection.session;
    let envelope = match Envelope::parse(line) {
        Ok(envelope) => envelope,
        Err(error) => return Some(Response::parse_error(&error).to_json()),
    };
    let stateless = is_stateless_envelope(&envelope);
    let inbound = match stateless {
        true => connection
            .hub
            .receive_stateless_envelope(&envelope, None, session.profile()),
        false => {
            connection.stateless.cancel_named(&envelope);
            session.receive_envelope(&envelope)
        }
    };
    match inbound {
        Inbound::Request(reply) => {
            let entry = shared.map(|shared| {
                if reply.initialize {
                    shared.record(handoff::Record::Initialize(line));
                }
                shared.request(reply.id.get())
            });
            let id = reply.id.get().into();
            let forwarding = replies.spawn(forward_reply(reply, outgoing.clone(), entry));
            if stateless {
                connection.stateless.insert(id, forwarding);
            }
            None
        }
        Inbound::Accepted => None,
        Inbound::Rejected(error) => Some(error.to_json()),
    }
}

pub(super) fn oversized_error(len: usize, limit: usize) -> Vec<u8> {
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
pub(super) async fn forward_reply(
    reply: RequestReply,
    outgoing: mpsc::Sender<Outgoing>,
    entry: Option<Unanswered>,
) {
    let mut messages = reply.messages;
    let mut forwarded = false;
    while let Some(message) = messages.recv().await {
        if outgoing
            .send(Outgoing::Message(message.to_json()))
            .await
            .is_err()
        {
            return;
        }
        forwarded = true;
    }
    if let Some(entry) = entry.filter(|_| forwarded) {
        let _ = outgoing.send(Outgoing::Answered(entry)).await;
    }
}

pub(super) async fn forward_events(mut events: SessionEvents, outgoing: mpsc::Sender<Outgoing>) {
    while let Some(event) = events.recv().await {
        if outgoing
            .send(Outgoing::Message(event.to_json()))
            .await
            .is_err()
        {
            return;
        }
    }
}

/// Owns the client's writing side: one message per line, batching whatever is queued into one
/// write. With a ledger, a request's answer is recorded only once it is written, and a write
/// that may reach the client in pieces is announced first. Stops at once when the connection is
/// cancelled, and cancels it when writing fails.
pub(super) async fn write_loop<W: AsyncWrite + Unpin>(
    mut output: W,
    mut outgoing: mpsc::Receiver<Outgoing>,
    mut ledger: Option<LedgerWriter>,
    cancel: CancellationToken,
) {
    let mut batch = Vec::new();
    let mut answered: Vec<Unanswered> = Vec::new();
    let result: io::Result<()> = async {
        loop {
            let recorded = async {
                match ledger.as_mut() {
                    Some(ledger) => ledger.next_record().await,
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
                        ledger.keep(&record);
                    }
                    None
                }
            };
            let mut next = first;
            while let Some(out) = next.take().or_else(|| outgoing.try_recv().ok()) {
                match out {
                    Outgoing::Message(message) => {
                        batch.extend_from_slice(&message);
                        if message.last() != Some(&b'\n') {
                            batch.push(b'\n');
                        }
                        if batch.len() >= SOCKET_BUFFER {
                            write_batch(&mut output, &mut batch, ledger.as_mut(), &cancel).await?;
                        }
                    }
                    Outgoing::Answered(entry) => answered.push(entry),
                }
            }
            write_batch(&mut output, &mut batch, ledger.as_mut(), &cancel).await?;
            if let Some(ledger) = ledger.as_mut() {
                ledger.take_records();
                for entry in answered.drain(..) {
                    ledger.answered(entry);
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
pub(super) async fn write_batch<W: AsyncWrite + Unpin>(
    output: &mut W,
    batch: &mut Vec<u8>,
    mut ledger: Option<&mut LedgerWriter>,
    cancel: &CancellationToken,
) -> io::Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    platform::memory::passed(batch.len());
    let split = batch.len() > handoff::ATOMIC_WRITE;
    if split && let Some(ledger) = ledger.as_mut() {
        ledger.set_partial_output(true);
    }
    tokio::select! {
        biased;
        _ = cancel.cancelled() => return Ok(()),
        written = output.write_all(batch) => written?,
    }
    batch.clear();
    if split && let Some(ledger) = ledger {
        ledger.set_partial_output(false);
    }
    Ok(())
}
