//! Windows has no way to hand an editor's stdio over (`transport/handoff`): no connection ever
//! brings a handoff, so the types that stand for it here cannot be made, and a session never
//! keeps a ledger.

use std::io;
use std::sync::Arc;

use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::{SocketReader, WriteHalf};
use crate::hub::Hub;
use crate::platform::ipc::Connection;
use crate::transport::handoff;

/// What a handoff would bring; nothing can.
pub(super) enum Passed {}

/// The connection's first bytes, read into `buf`; never a handoff.
pub(super) async fn read_opening(
    stream: &mut Connection,
    buf: &mut [u8],
) -> io::Result<(usize, Option<Passed>)> {
    Ok((stream.read(buf).await?, None))
}

pub(super) async fn serve_handoff(
    _socket: SocketReader,
    _write_half: WriteHalf,
    passed: Passed,
    _hub: Hub,
    _max_message_size: usize,
    _cancel: CancellationToken,
) {
    match passed {}
}

pub(super) enum ShimSocket {}

impl ShimSocket {
    pub(super) fn into_parts(self) -> (Arc<SharedLedger>, SocketReader, LedgerWriter) {
        match self {}
    }
}

pub(super) enum SharedLedger {}

impl SharedLedger {
    pub(super) fn record(&self, _record: handoff::Record<'_>) {
        match *self {}
    }

    pub(super) fn request(&self, _id: &str) -> Unanswered {
        match *self {}
    }
}

pub(super) enum Unanswered {}

pub(super) enum LedgerWriter {}

impl LedgerWriter {
    pub(super) async fn next_record(&mut self) -> Option<Vec<u8>> {
        match *self {}
    }

    pub(super) fn keep(&mut self, _record: &[u8]) {
        match *self {}
    }

    pub(super) fn answered(&mut self, entry: Unanswered) {
        match entry {}
    }

    pub(super) fn set_partial_output(&self, _partial: bool) {
        match *self {}
    }

    pub(super) fn take_records(&mut self) {
        match *self {}
    }

    pub(super) async fn flush(&mut self) -> io::Result<()> {
        match *self {}
    }
}
