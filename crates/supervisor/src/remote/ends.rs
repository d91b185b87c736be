//! The link's two ends, which its connection writes to and reads from as it would a process's
//! stdin and stdout: [`LinkSink`] carries each line to the server on its own, [`LinkSource`]
//! gives back what the server sends, one message per line.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;
use tracing::Instrument as _;

use super::{LinkEnd, Shared};

/// Where the connection writes: each line it completes is carried to the server on its own, so
/// that a slow answer holds up nothing else. Dropping it (the connection is gone) ends the link.
pub(crate) struct LinkSink {
    shared: Arc<Shared>,
    /// The line being written.
    line: Vec<u8>,
    /// The line being written is over the size limit: its end is awaited, then it is dropped.
    oversized: bool,
    span: tracing::Span,
}

impl LinkSink {
    pub(super) fn new(shared: Arc<Shared>) -> LinkSink {
        LinkSink {
            shared,
            line: Vec::new(),
            oversized: false,
            span: tracing::Span::current(),
        }
    }
}

impl AsyncWrite for LinkSink {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let sink = &mut *self;
        for part in bytes.split_inclusive(|&byte| byte == b'\n') {
            let (text, ended) = match part.strip_suffix(b"\n") {
                Some(text) => (text, true),
                None => (part, false),
            };
            if !sink.oversized {
                sink.line.extend_from_slice(text);
                sink.oversized = sink.line.len() > sink.shared.max_message_size;
            }
            if !ended {
                continue;
            }
            let line = std::mem::take(&mut sink.line);
            if std::mem::take(&mut sink.oversized) {
                sink.shared.note(&format!(
                    "a message was not sent: over the limit of {} bytes",
                    sink.shared.max_message_size
                ));
            } else if !line.is_empty() {
                let forward = sink.shared.clone().forward(line);
                tokio::spawn(forward.instrument(sink.span.clone()));
            }
        }
        Poll::Ready(Ok(bytes.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl Drop for LinkSink {
    fn drop(&mut self) {
        self.shared
            .finish(LinkEnd::Lost("the connection closed".to_owned()));
    }
}

/// Where the connection reads what the server sends, one message per line; it ends when the
/// link does.
pub(crate) struct LinkSource {
    incoming: mpsc::Receiver<Vec<u8>>,
    /// The line being read out, with its `\n`, and how much of it has been.
    pending: Vec<u8>,
    sent: usize,
    stopped: Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
}

impl LinkSource {
    /// The end reading `incoming`, which ends when `shared`'s link stops.
    pub(super) fn new(shared: &Shared, incoming: mpsc::Receiver<Vec<u8>>) -> LinkSource {
        LinkSource {
            incoming,
            pending: Vec::new(),
            sent: 0,
            stopped: Box::pin(shared.stop.clone().cancelled_owned()),
        }
    }
}

impl AsyncRead for LinkSource {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let source = &mut *self;
        if source.sent == source.pending.len() {
            match source.incoming.poll_recv(context) {
                Poll::Ready(Some(mut line)) => {
                    line.push(b'\n');
                    source.pending = line;
                    source.sent = 0;
                }
                // Every sender is gone: the end of the stream.
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Pending => {
                    return match source.stopped.as_mut().poll(context) {
                        Poll::Ready(()) => Poll::Ready(Ok(())),
                        Poll::Pending => Poll::Pending,
                    };
                }
            }
        }
        let available = &source.pending[source.sent..];
        let n = available.len().min(buffer.remaining());
        buffer.put_slice(&available[..n]);
        source.sent += n;
        Poll::Ready(Ok(()))
    }
}
