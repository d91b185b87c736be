//! Server-Sent Events as they arrive in chunks: the `text/event-stream` answers of Streamable
//! HTTP and the stream of the older HTTP+SSE transport.

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field; `None` means the default, `message`.
    pub(crate) event: Option<String>,
    /// The `data:` lines, joined by `\n`.
    pub(crate) data: String,
    /// The `id:` field, if the event has one.
    pub(crate) id: Option<String>,
}

/// An event longer than the limit the parser was made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventTooLarge {
    pub(crate) limit: usize,
}

/// Splits a stream into events, whatever the chunks' boundaries; lines may end in `\n`, `\r\n`
/// or `\r`.
pub(crate) struct SseParser {
    /// Bytes of a line not yet ended.
    line: Vec<u8>,
    /// The last chunk ended in `\r`: a `\n` starting the next one belongs to that line end.
    after_cr: bool,
    event: Option<String>,
    data: String,
    /// Whether the event being read has a `data:` line at all.
    has_data: bool,
    id: Option<String>,
    /// The last `retry:` field, in milliseconds.
    retry: Option<u64>,
    limit: usize,
}

impl SseParser {
    /// A parser that refuses events (and lines) longer than `limit` bytes.
    pub(crate) fn new(limit: usize) -> SseParser {
        SseParser {
            line: Vec::new(),
            after_cr: false,
            event: None,
            data: String::new(),
            has_data: false,
            id: None,
            retry: None,
            limit,
        }
    }

    /// The id of the last event, set by its `id:` field even on an event without data (a
    /// priming event): what `Last-Event-ID` sends to resume after it.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// How long the stream asked a client to wait before reconnecting (`retry:`).
    pub(crate) fn retry(&self) -> Option<std::time::Duration> {
        self.retry.map(std::time::Duration::from_millis)
    }

    /// Reads `chunk`; returns the events it completed.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, EventTooLarge> {
        let mut events = Vec::new();
        for &byte in chunk {
            let after_cr = std::mem::replace(&mut self.after_cr, false);
            match byte {
                b'\n' if after_cr => {}
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.end_line(&line)? {
                        events.push(event);
                    }
                }
                _ => {
                    if self.line.len() + self.data.len() >= self.limit {
                        return Err(EventTooLarge { limit: self.limit });
                    }
                    self.line.push(byte);
                }
            }
        }
        Ok(events)
    }

    fn end_line(&mut self, line: &[u8]) -> Result<Option<SseEvent>, EventTooLarge> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            // A comment (a keep-alive, usually).
            "" => {}
            "event" => self.event = Some(value.to_owned()),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                if self.data.len() > self.limit {
                    return Err(EventTooLarge { limit: self.limit });
                }
            }
            "id" if !value.contains('\0') => self.id = Some(value.to_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry = value.parse().ok();
            }
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if !std::mem::replace(&mut self.has_data, false) {
            return None;
        }
        Some(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
            id: self.id.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events_of(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new(1024);
        chunks
            .iter()
            .flat_map(|chunk| parser.feed(chunk).expect("within the limit"))
            .collect()
    }

    #[test]
    fn a_priming_event_leaves_its_id_and_retry() {
        let mut parser = SseParser::new(1024);
        let events = parser
            .feed(b"id: 7-0\nretry: 250\ndata:\n\n")
            .expect("within the limit");
        assert_eq!(
            events,
            [SseEvent {
                event: None,
                data: String::new(),
                id: Some("7-0".to_owned()),
            }]
        );
        assert_eq!(parser.last_event_id(), Some("7-0"));
        assert_eq!(parser.retry(), Some(std::time::Duration::from_millis(250)));
        parser
            .feed(b"retry: soon\nid: 7-1\n\n")
            .expect("within the limit");
        assert_eq!(parser.last_event_id(), Some("7-1"), "an event without data");
        assert_eq!(
            parser.retry(),
            Some(std::time::Duration::from_millis(250)),
            "not a number"
        );
    }

    #[test]
    fn events_come_whole_whatever_the_chunks_and_line_ends() {
        let stream: &[u8] =
            b": keep-alive\r\nevent: endpoint\r\ndata: /messages?s=1\r\n\r\nid: 7\ndata: {\"a\":\ndata: 1}\n\n\
              data: last\r\r";
        let whole = events_of(&[stream]);
        assert_eq!(
            whole,
            [
                SseEvent {
                    event: Some("endpoint".to_owned()),
                    data: "/messages?s=1".to_owned(),
                    id: None
                },
                SseEvent {
                    event: None,
                    data: "{\"a\":\n1}".to_owned(),
                    id: Some("7".to_owned())
                },
                SseEvent {
                    event: None,
                    data: "last".to_owned(),
                    id: Some("7".to_owned())
                },
            ]
        );
        // Byte by byte, a `\r\n` split between chunks included, gives the same events.
        let single_bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(events_of(&single_bytes), whole);
    }

    #[test]
    fn an_event_without_data_is_not_dispatched_and_a_long_one_is_refused() {
        assert_eq!(events_of(&[b"event: ping\n\n: only a comment\n\n"]), []);
        let mut parser = SseParser::new(8);
        assert_eq!(
            parser.feed(b"data: 123456789\n\n"),
            Err(EventTooLarge { limit: 8 })
        );
        let mut parser = SseParser::new(8);
        assert_eq!(
            parser.feed(b"data: 1234\ndata: 5678\n\n"),
            Err(EventTooLarge { limit: 8 })
        );
    }
}
