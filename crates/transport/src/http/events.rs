//! The SSE events the HTTP transports send ([`message_event`]), and what makes a session's
//! streams resumable (SEP-1699, Streamable HTTP 2025-11-25): every event of a
//! session's streams carries an id unique in the session (`STREAM-SEQ`, stream 0 being the `GET`
//! stream), a `POST` stream opens with a priming event (an id, `retry`, no data), and a reply
//! stream whose client goes away before its response is parked for [`PARK_GRACE`]: a `GET` with
//! `Last-Event-ID` naming one of its events takes it up again, replaying what came after that
//! event. A parked stream nobody takes up is dropped, which cancels its request, as a client that
//! goes away did before.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, BodyDataStream, Bytes};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::response::sse::Event;
use futures_core::Stream;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use hub::reply::Reply;

/// One JSON-RPC message as an SSE `message` event.
pub(super) fn message_event(message: &[u8]) -> Event {
    platform::memory::passed(message.len());
    let event = Event::default().event("message");
    match std::str::from_utf8(message) {
        Ok(text) => event.data(text),
        Err(_) => event.data(String::from_utf8_lossy(message)),
    }
}

/// The first version whose clients are sent a priming event.
const PRIMED_SINCE: &str = "2025-11-25";

/// How long a client is told to wait before it reconnects.
const RETRY: Duration = Duration::from_secs(1);

/// How long a reply stream whose client went away waits to be taken up again.
pub(super) const PARK_GRACE: Duration = Duration::from_secs(5);

/// The events of a stream kept for a replay, at most this many and this many bytes (an event
/// larger than that is not kept); older ones are not replayed. A session keeps its `GET`
/// stream's for as long as it lives.
const KEPT: usize = 64;
const KEPT_BYTES: usize = 256 * 1024;

/// The number of a session's `GET` stream; reply streams count from 1.
const GET_STREAM: u64 = 0;

/// An event id of this module's making.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct EventId {
    stream: u64,
    seq: u64,
}

impl EventId {
    /// The id a client sent in `Last-Event-ID`, if it is one of ours.
    pub(super) fn last(headers: &HeaderMap) -> Option<EventId> {
        let text = headers.get("last-event-id")?.to_str().ok()?;
        let (stream, seq) = text.trim().split_once('-')?;
        Some(EventId {
            stream: stream.parse().ok()?,
            seq: seq.parse().ok()?,
        })
    }

    fn text(self) -> String {
        format!("{}-{}", self.stream, self.seq)
    }
}

/// The events one stream sent, numbered, the last [`KEPT`] of them kept.
pub(super) struct History {
    stream: u64,
    next: u64,
    kept: VecDeque<(u64, Arc<[u8]>)>,
    kept_bytes: usize,
}

impl History {
    fn new(stream: u64) -> History {
        History {
            stream,
            next: 1,
            kept: VecDeque::new(),
            kept_bytes: 0,
        }
    }

    /// The next event of this stream, kept for a replay when `keep` says so.
    pub(super) fn event(&mut self, message: &[u8], keep: bool) -> Event {
        let seq = self.next;
        self.next += 1;
        if keep && message.len() <= KEPT_BYTES {
            self.kept_bytes += message.len();
            self.kept.push_back((seq, Arc::from(message)));
            while self.kept.len() > KEPT || self.kept_bytes > KEPT_BYTES {
                let Some((_, old)) = self.kept.pop_front() else {
                    break;
                };
                self.kept_bytes -= old.len();
            }
        }
        message_event(message).id(EventId {
            stream: self.stream,
            seq,
        }
        .text())
    }

    /// The kept events after `seq`, again with their ids.
    fn after(&self, seq: u64) -> VecDeque<Event> {
        self.kept
            .iter()
            .filter(|(kept, _)| *kept > seq)
            .map(|(kept, message)| {
                message_event(message).id(EventId {
                    stream: self.stream,
                    seq: *kept,
                }
                .text())
            })
            .collect()
    }

    /// The event that primes a client to reconnect: an id, `retry`, and empty data (which
    /// axum's `Event` cannot write, hence bytes).
    fn priming(&self) -> Bytes {
        let id = EventId {
            stream: self.stream,
            seq: 0,
        }
        .text();
        Bytes::from(format!(
            "id: {id}\nretry: {}\ndata: \n\n",
            RETRY.as_millis()
        ))
    }
}

/// What a reply stream of a session keeps so that it can be resumed.
pub(super) struct Resumable {
    pub(super) history: History,
    /// Events to send before anything new: a replay.
    pub(super) first: VecDeque<Event>,
}

impl Resumable {
    /// The priming event of this stream, for a client of 2025-11-25 or later (`version`; an
    /// earlier one may take an event without data for a broken message).
    pub(super) fn priming(&self, version: Option<&str>) -> Option<Bytes> {
        version
            .is_some_and(|version| version >= PRIMED_SINCE)
            .then(|| self.history.priming())
    }
}

/// `response`, an SSE answer, with the event `first` before the rest.
pub(super) fn primed(response: Response, first: Option<Bytes>) -> Response {
    let Some(first) = first else {
        return response;
    };
    let (parts, body) = response.into_parts();
    let body = Primed {
        first: Some(first),
        rest: body.into_data_stream(),
    };
    Response::from_parts(parts, Body::from_stream(body))
}

/// An SSE body with one more event first.
struct Primed {
    first: Option<Bytes>,
    rest: BodyDataStream,
}

impl Stream for Primed {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(first)));
        }
        Pin::new(&mut this.rest).poll_next(cx)
    }
}

/// A reply stream whose client went away before its response.
pub(super) struct Parked {
    pub(super) messages: mpsc::UnboundedReceiver<Reply>,
    pub(super) unanswered: Box<RawValue>,
    pub(super) history: History,
}

/// What a session keeps to resume its streams.
pub(super) struct Streams {
    /// The number of the last reply stream opened.
    next_stream: u64,
    parked: HashMap<u64, Parked>,
    /// The `GET` streams' events (they share one numbering, across reconnections).
    pub(super) get: History,
}

impl Default for Streams {
    fn default() -> Streams {
        Streams {
            next_stream: GET_STREAM,
            parked: HashMap::new(),
            get: History::new(GET_STREAM),
        }
    }
}

/// What `Last-Event-ID` asks of a `GET`.
pub(super) enum Resume {
    /// A parked reply stream, with the events to replay first.
    Reply(Parked, VecDeque<Event>),
    /// The `GET` stream, with the kept events after the one named.
    Get(VecDeque<Event>),
    /// Nothing this session can resume: the `GET` stream, from now on.
    Nothing,
}

impl Streams {
    /// A new reply stream.
    pub(super) fn open(&mut self) -> Resumable {
        self.next_stream += 1;
        Resumable {
            history: History::new(self.next_stream),
            first: VecDeque::new(),
        }
    }

    /// Keeps a reply stream whose client went away; returns its number.
    pub(super) fn park(&mut self, parked: Parked) -> u64 {
        let stream = parked.history.stream;
        self.parked.insert(stream, parked);
        stream
    }

    /// The parked stream `stream`, no longer kept.
    pub(super) fn unpark(&mut self, stream: u64) -> Option<Parked> {
        self.parked.remove(&stream)
    }

    /// Takes up the stream `last` names, if it can be.
    pub(super) fn resume(&mut self, last: Option<EventId>) -> Resume {
        let Some(last) = last else {
            return Resume::Nothing;
        };
        if last.stream == GET_STREAM {
            return Resume::Get(self.get.after(last.seq));
        }
        match self.parked.remove(&last.stream) {
            Some(parked) => {
                let replay = parked.history.after(last.seq);
                Resume::Reply(parked, replay)
            }
            None => Resume::Nothing,
        }
    }
}
