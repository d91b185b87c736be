//! Newline-delimited framing of a byte stream, bounded per line.
//!
//! Real servers print banners, very large results and bytes that are not UTF-8, so a line is
//! read as bytes in linear time; a line over the limit is skipped (without buffering it) and
//! reported with its length and the first and last bytes, which are enough to tell whose answer
//! it was.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// How many bytes of an oversized line are kept at each end.
pub const OVERSIZED_KEPT_BYTES: usize = 4096;

/// One frame read from the stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line without its terminating `\n` (a trailing `\r` is removed too).
    Line(Vec<u8>),
    /// A line longer than the limit: its length, and its first and last bytes.
    Oversized {
        len: usize,
        head: Vec<u8>,
        tail: Vec<u8>,
    },
}

/// Reads frames from `reader`, never holding more than `max_line` bytes of one line.
pub struct LineReader<R> {
    reader: R,
    max_line: usize,
    /// The line read so far, kept here so that a cancelled read loses nothing.
    line: Vec<u8>,
    oversized: Option<Oversized>,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(reader: R, max_line: usize) -> LineReader<R> {
        LineReader {
            reader,
            max_line,
            line: Vec::new(),
            oversized: None,
        }
    }

    /// The next frame, or `None` at end of stream. A last line without `\n` still counts.
    ///
    /// Cancel-safe: dropping the future keeps what it read for the next call.
    pub async fn next_frame(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                return Ok(self.finish(true));
            }
            let (chunk, found_newline) = match memchr::memchr(b'\n', available) {
                Some(pos) => (&available[..pos], true),
                None => (available, false),
            };
            let consumed = chunk.len() + usize::from(found_newline);
            match self.oversized.as_mut() {
                Some(over) => over.push(chunk),
                None if self.line.len() + chunk.len() > self.max_line => {
                    let mut over = Oversized::start(std::mem::take(&mut self.line));
                    over.push(chunk);
                    self.oversized = Some(over);
                }
                None => self.line.extend_from_slice(chunk),
            }
            self.reader.consume(consumed);
            if found_newline {
                return Ok(self.finish(false));
            }
        }
    }

    fn finish(&mut self, at_eof: bool) -> Option<Frame> {
        let mut line = std::mem::take(&mut self.line);
        if let Some(over) = self.oversized.take() {
            return Some(Frame::Oversized {
                len: over.len,
                head: over.head,
                tail: over.tail,
            });
        }
        if at_eof && line.is_empty() {
            return None;
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        platform::memory::passed(line.len());
        Some(Frame::Line(line))
    }
}

struct Oversized {
    len: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl Oversized {
    fn start(mut prefix: Vec<u8>) -> Oversized {
        let len = prefix.len();
        let tail = prefix[len.saturating_sub(OVERSIZED_KEPT_BYTES)..].to_vec();
        prefix.truncate(OVERSIZED_KEPT_BYTES);
        Oversized {
            len,
            head: prefix,
            tail,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.len += chunk.len();
        if self.head.len() < OVERSIZED_KEPT_BYTES {
            let room = OVERSIZED_KEPT_BYTES - self.head.len();
            self.head.extend_from_slice(&chunk[..room.min(chunk.len())]);
        }
        if chunk.len() >= OVERSIZED_KEPT_BYTES {
            self.tail.clear();
            self.tail
                .extend_from_slice(&chunk[chunk.len() - OVERSIZED_KEPT_BYTES..]);
        } else {
            self.tail.extend_from_slice(chunk);
            let excess = self.tail.len().saturating_sub(OVERSIZED_KEPT_BYTES);
            self.tail.drain(..excess);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max_line: usize, chunk: usize) -> Vec<Frame> {
        let reader = tokio::io::BufReader::with_capacity(chunk, input);
        let mut lines = LineReader::new(reader, max_line);
        let mut out = Vec::new();
        while let Some(frame) = lines
            .next_frame()
            .await
            .expect("reading from memory cannot fail")
        {
            out.push(frame);
        }
        out
    }

    #[tokio::test]
    async fn a_cancelled_read_keeps_the_part_of_the_line_it_read() {
        let (mut writer, reader) = tokio::io::duplex(64);
        let mut lines = LineReader::new(tokio::io::BufReader::new(reader), 1024);
        tokio::io::AsyncWriteExt::write_all(&mut writer, b"{\"first\":")
            .await
            .expect("write");
        let waited =
            tokio::time::timeout(std::time::Duration::from_millis(20), lines.next_frame()).await;
        assert!(waited.is_err(), "half a line is not a frame yet");
        tokio::io::AsyncWriteExt::write_all(&mut writer, b"\"half\"}\n")
            .await
            .expect("write");
        let frame = lines.next_frame().await.expect("read");
        assert_eq!(frame, Some(Frame::Line(b"{\"first\":\"half\"}".to_vec())));
    }

    #[tokio::test]
    async fn splits_lines_across_small_reads() {
        let got = frames(b"{\"a\":1}\r\n\n{\"b\":2}\npartial", 1024, 3).await;
        assert_eq!(
            got,
            vec![
                Frame::Line(b"{\"a\":1}".to_vec()),
                Frame::Line(Vec::new()),
                Frame::Line(b"{\"b\":2}".to_vec()),
                Frame::Line(b"partial".to_vec()),
            ]
        );
    }

    #[tokio::test]
    async fn oversized_line_is_skipped_with_its_ends_and_the_next_line_survives() {
        let mut input = b"{\"id\":7,\"result\":\"".to_vec();
        input.extend(std::iter::repeat_n(b'x', 20_000));
        input.extend_from_slice(b"\"}\nnext\n");
        let got = frames(&input, 10_000, 1000).await;
        assert_eq!(got.len(), 2);
        match &got[0] {
            Frame::Oversized { len, head, tail } => {
                assert_eq!(*len, input.len() - b"\nnext\n".len());
                assert!(head.starts_with(b"{\"id\":7,"));
                assert_eq!(head.len(), OVERSIZED_KEPT_BYTES);
                assert!(tail.ends_with(b"xx\"}"));
                assert_eq!(tail.len(), OVERSIZED_KEPT_BYTES);
            }
            other => panic!("expected an oversized frame, got {other:?}"),
        }
        assert_eq!(got[1], Frame::Line(b"next".to_vec()));
    }

    #[tokio::test]
    async fn non_utf8_bytes_pass_as_bytes() {
        let got = frames(b"\xff\xfe garbage \x80\nok\n", 1024, 4).await;
        assert_eq!(got[0], Frame::Line(b"\xff\xfe garbage \x80".to_vec()));
        assert_eq!(got[1], Frame::Line(b"ok".to_vec()));
    }

    #[tokio::test]
    async fn a_line_of_exactly_the_limit_is_kept() {
        let got = frames(b"abcd\nabcde\n", 4, 2).await;
        assert_eq!(got[0], Frame::Line(b"abcd".to_vec()));
        assert!(matches!(got[1], Frame::Oversized { len: 5, .. }));
    }
}
