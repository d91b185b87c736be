//! A backend's stdin, written by whoever sends.
//!
//! A line goes into the pipe from the sender's own task, at once, when the pipe has room for it,
//! which it nearly always has: no writer task stands between a call and the backend, so a call
//! costs no task switch on its way out. A line the pipe cannot take whole is finished by a task
//! of its own, which holds the pipe until it is done, so that lines never interleave and the
//! next sender waits its turn (the backpressure of a backend that does not read).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{Mutex, OwnedMutexGuard};
use tokio_util::sync::CancellationToken;

type Pipe = Pin<Box<dyn AsyncWrite + Send>>;

/// The pipe, `None` once it is closed.
type Held = OwnedMutexGuard<Option<Pipe>>;

/// The pipe is closed: the line was not sent.
#[derive(Debug)]
pub(super) struct Closed;

pub(super) struct Stdin {
    pipe: Arc<Mutex<Option<Pipe>>>,
    /// Cancelled by [`Stdin::close`]; whoever holds the pipe then closes it.
    closing: CancellationToken,
}

impl Stdin {
    pub(super) fn new(pipe: impl AsyncWrite + Send + 'static) -> Stdin {
        Stdin {
            pipe: Arc::new(Mutex::new(Some(Box::pin(pipe)))),
            closing: CancellationToken::new(),
        }
    }

    /// Sends `line` after the lines sent before it. Cancel-safe: a sender dropped while it
    /// waits for its turn has written nothing.
    pub(super) async fn send(&self, line: Vec<u8>) -> Result<(), Closed> {
        let held = self.pipe.clone().lock_owned().await;
        write(held, line, &self.closing)
    }

    /// Sends `line` without waiting: at once if the pipe is free, else from a task of its own
    /// when its turn comes. For senders that must never wait for the backend to read: its own
    /// reader (whose waiting could deadlock against a backend blocked on its stdout) and
    /// destructors.
    pub(super) fn send_detached(&self, line: Vec<u8>) {
        match self.pipe.clone().try_lock_owned() {
            Ok(held) => {
                let _ = write(held, line, &self.closing);
            }
            Err(_) => {
                let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                    return;
                };
                let pipe = self.pipe.clone();
                let closing = self.closing.clone();
                runtime.spawn(async move {
                    let held = pipe.lock_owned().await;
                    let _ = write(held, line, &closing);
                });
            }
        }
    }

    /// Closes the pipe (which asks a well-behaved server to exit): now if it is free, else as
    /// soon as the line being written lets go of it. Lines sent later are refused.
    pub(super) fn close(&self) {
        self.closing.cancel();
        if let Ok(mut pipe) = self.pipe.try_lock() {
            *pipe = None;
        }
    }
}

/// Writes what the pipe takes of `line` now, and hands the rest to a task that keeps the pipe
/// until it is written.
fn write(mut held: Held, line: Vec<u8>, closing: &CancellationToken) -> Result<(), Closed> {
    if closing.is_cancelled() {
        *held = None;
    }
    let Some(pipe) = held.as_mut() else {
        return Err(Closed);
    };
    let mut context = Context::from_waker(Waker::noop());
    let mut written = 0;
    while written < line.len() {
        match pipe.as_mut().poll_write(&mut context, &line[written..]) {
            Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => {
                *held = None;
                return Err(Closed);
            }
            Poll::Ready(Ok(taken)) => written += taken,
            Poll::Pending => break,
        }
    }
    let flushed = written == line.len()
        && matches!(pipe.as_mut().poll_flush(&mut context), Poll::Ready(Ok(())));
    if flushed {
        if closing.is_cancelled() {
            *held = None;
        }
        return Ok(());
    }
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            runtime.spawn(finish(held, line, written, closing.clone()));
            Ok(())
        }
        // No runtime is left to finish it (a destructor at the very end): a line cut short would
        // garble the next one, so the pipe closes instead.
        Err(_) => {
            *held = None;
            Err(Closed)
        }
    }
}

/// Writes the rest of a line the pipe could not take at once, holding the pipe meanwhile; a
/// pipe that fails, or is being closed, is closed.
async fn finish(mut held: Held, line: Vec<u8>, written: usize, closing: CancellationToken) {
    let Some(pipe) = held.as_mut() else {
        return;
    };
    let rest = async {
        pipe.write_all(&line[written..]).await?;
        pipe.flush().await
    };
    let done = tokio::select! {
        biased;
        () = closing.cancelled() => false,
        result = rest => result.is_ok(),
    };
    if !done || closing.is_cancelled() {
        *held = None;
    }
}
