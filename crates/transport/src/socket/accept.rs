//! Taking a handed-off session: the connection's opening with its descriptors, the handoff read
//! off the socket, and its session run with the ledger (`ledger.rs`).

use std::io::{self, Cursor};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Interest};
use tokio::net::unix::pipe;
use tokio::sync::mpsc;

use tokio_util::sync::CancellationToken;

use super::ledger::{MarkingReader, SharedLedger, ShimSocket};
use super::session::LineSession;
use super::{SOCKET_BUFFER, SocketReader, WriteHalf, no_profile, refuse};
use crate::handoff;
use crate::token::Token;
use config::DEFAULT_PROFILE;
use hub::Hub;
use platform::ipc::Connection;
use platform::passing;

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
    key: &Token,
    max_message_size: usize,
) -> anyhow::Result<Accepted> {
    let mut line = Vec::new();
    (&mut socket)
        .take(max_message_size as u64 + 1024)
        .read_until(b'\n', &mut line)
        .await?;
    let header: handoff::Header =
        serde_json::from_slice(&line).context("the first line is not a handoff header")?;
    if let Some(refusal) = header.refusal(key) {
        anyhow::bail!(refusal);
    }
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
    platform::pipes::widen(output.as_fd());
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

/// Takes a handoff whose header, prefix and descriptors arrive on `socket`, and runs its session
/// until the editor or the shim leaves; a handoff that cannot be taken is refused with the
/// reason.
pub(super) async fn serve_handoff(
    socket: SocketReader,
    mut write_half: WriteHalf,
    passed: Passed,
    hub: Hub,
    key: &Token,
    max_message_size: usize,
    cancel: CancellationToken,
) {
    let accepted = tokio::time::timeout(
        HANDOFF_LIMIT,
        accept_handoff(socket, passed, key, max_message_size),
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
            tracing::warn!(
                error = format!("{error:#}"),
                "refused a handoff on the socket"
            );
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
    let ledger = ShimSocket::new(
        write_half,
        accepted.lifeline,
        accepted.shared,
        accepted.records,
    );
    session
        .run(accepted.input, accepted.output, Some(ledger))
        .await;
}
