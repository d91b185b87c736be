//! Windows has no way to hand an editor's stdio over (`transport::handoff`): no connection ever
//! brings a handoff, so what stands for one here cannot be made.

use std::io;

use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::{SocketReader, WriteHalf};
use crate::token::Token;
use hub::Hub;
use platform::ipc::Connection;

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
    _key: &Token,
    _max_message_size: usize,
    _cancel: CancellationToken,
) {
    match passed {}
}
