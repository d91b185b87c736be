//! Newline framing (`crates/wire/src/framing.rs`): the same bytes read in one piece and split at
//! the points the fuzzer chooses, with a line limit it chooses.
//!
//! Invariants: nothing panics; both reads give exactly the frames of a plain reference split on
//! `\n`; a line over the limit is reported as oversized, with its length and its first and last
//! bytes.

#![no_main]

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncBufRead, AsyncRead, ReadBuf};
use wire::framing::{Frame, LineReader, OVERSIZED_KEPT_BYTES};

/// As `arbitrary` reads it (and the seeds in `fuzz/corpus/framing/` are written): one byte of
/// line limit, then for each piece the byte 1 and its length as two little-endian bytes, then
/// the byte 0, then the stream's bytes as they are.
#[derive(Debug, Arbitrary)]
struct Input<'a> {
    /// The line limit, kept small so that oversized lines are common.
    max_line: u8,
    /// Lengths of the pieces the stream delivers; the rest comes in one last piece.
    splits: Vec<u16>,
    bytes: &'a [u8],
}

fuzz_target!(|input: Input<'_>| {
    let max_line = usize::from(input.max_line);
    let expected = reference_frames(input.bytes, max_line);
    let joined = read_all(Pieces::new(input.bytes, &[]), max_line);
    assert_eq!(joined, expected, "read in one piece");
    let split = read_all(Pieces::new(input.bytes, &input.splits), max_line);
    assert_eq!(split, expected, "read in pieces {:?}", input.splits);
});

/// What the framing must produce: the input split on `\n` (a last line without one counts; a
/// trailing `\r` is dropped), each line over `max_line` bytes, `\r` included, as oversized.
fn reference_frames(bytes: &[u8], max_line: usize) -> Vec<Frame> {
    let mut lines: Vec<&[u8]> = bytes.split(|&byte| byte == b'\n').collect();
    if lines.last().is_some_and(|last| last.is_empty()) {
        lines.pop();
    }
    lines
        .into_iter()
        .map(|line| {
            if line.len() > max_line {
                let kept = line.len().min(OVERSIZED_KEPT_BYTES);
                Frame::Oversized {
                    len: line.len(),
                    head: line[..kept].to_vec(),
                    tail: line[line.len() - kept..].to_vec(),
                }
            } else {
                Frame::Line(line.strip_suffix(b"\r").unwrap_or(line).to_vec())
            }
        })
        .collect()
}

/// Every frame until the end of the stream. The reader never fails and never waits for long, so
/// the future is polled in place.
fn read_all(pieces: Pieces<'_>, max_line: usize) -> Vec<Frame> {
    let mut lines = LineReader::new(pieces, max_line);
    let mut frames = Vec::new();
    let mut context = Context::from_waker(Waker::noop());
    loop {
        let mut next = std::pin::pin!(lines.next_frame());
        let frame = loop {
            if let Poll::Ready(frame) = next.as_mut().poll(&mut context) {
                break frame.expect("reading from memory cannot fail");
            }
        };
        match frame {
            Some(frame) => frames.push(frame),
            None => return frames,
        }
    }
}

/// A stream that delivers its bytes in the given pieces, and is not ready once before each.
struct Pieces<'a> {
    rest: &'a [u8],
    piece_lengths: std::slice::Iter<'a, u16>,
    piece: &'a [u8],
    ready: bool,
}

impl<'a> Pieces<'a> {
    fn new(bytes: &'a [u8], piece_lengths: &'a [u16]) -> Pieces<'a> {
        Pieces {
            rest: bytes,
            piece_lengths: piece_lengths.iter(),
            piece: &[],
            ready: false,
        }
    }
}

impl AsyncBufRead for Pieces<'_> {
    fn poll_fill_buf(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<std::io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.piece.is_empty() && !this.rest.is_empty() {
            if !this.ready {
                this.ready = true;
                context.waker().wake_by_ref();
                return Poll::Pending;
            }
            this.ready = false;
            let length = match this.piece_lengths.next() {
                Some(&length) => usize::from(length).clamp(1, this.rest.len()),
                None => this.rest.len(),
            };
            (this.piece, this.rest) = this.rest.split_at(length);
        }
        Poll::Ready(Ok(this.piece))
    }

    fn consume(self: Pin<&mut Self>, amount: usize) {
        let this = self.get_mut();
        this.piece = &this.piece[amount..];
    }
}

impl AsyncRead for Pieces<'_> {
    fn poll_read(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let mut this = self;
        let available = match this.as_mut().poll_fill_buf(context) {
            Poll::Ready(Ok(available)) => available,
            other => return other.map_ok(drop),
        };
        let amount = available.len().min(buffer.remaining());
        buffer.put_slice(&available[..amount]);
        this.consume(amount);
        Poll::Ready(Ok(()))
    }
}
