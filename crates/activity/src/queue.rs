//! The records on their way to the writer. A call's thread encodes its record into one shared
//! byte buffer (a few dozen bytes copied under a lock held for as long) and keeps every handle
//! the record held; the writer takes the whole buffer a window at a time by swapping it for an
//! empty one. Once the two buffers have grown nothing is allocated per record, and the writer
//! never touches what the calls share (no reference counts move between the threads).

use std::sync::{Condvar, Mutex};

use super::{Outcome, Record};

/// The most a payload is copied for the writer: the kept length, and room for a secret that
/// straddles the cut to be found whole and redacted before the writer cuts it.
const PAYLOAD_COPY: usize = super::MAX_PAYLOAD_BYTES + 4096;

/// The most of a buffer's room kept between turns.
const KEPT_CAPACITY: usize = 1024 * 1024;

/// The encoded records not yet taken by the writer.
pub(super) struct Queue {
    pending: Mutex<Pending>,
    /// Told when the first record arrives in an empty queue.
    arrived: Condvar,
    /// The most bytes that may wait; a record beyond is dropped.
    capacity: usize,
}

#[derive(Default)]
pub(super) struct Pending {
    bytes: Vec<u8>,
    count: usize,
}

impl Queue {
    pub(super) fn new(capacity: usize) -> Queue {
        Queue {
            pending: Mutex::new(Pending::default()),
            arrived: Condvar::new(),
            capacity,
        }
    }

    /// Adds `record`; `false` if the queue is full and it was not taken.
    pub(super) fn push(&self, record: &Record) -> bool {
        let mut pending = self.pending.lock().expect("queue lock");
        if pending.bytes.len() >= self.capacity {
            return false;
        }
        let was_empty = pending.count == 0;
        encode(record, &mut pending.bytes);
        pending.count += 1;
        drop(pending);
        if was_empty {
            self.arrived.notify_one();
        }
        true
    }

    /// Waits until a record has arrived.
    pub(super) fn wait(&self) {
        let pending = self.pending.lock().expect("queue lock");
        let _pending = self
            .arrived
            .wait_while(pending, |pending| pending.count == 0)
            .expect("queue lock");
    }

    /// Takes everything waiting into `taken` (which must be empty), leaving its buffer behind
    /// for the next records.
    pub(super) fn take(&self, taken: &mut Pending) {
        let mut pending = self.pending.lock().expect("queue lock");
        std::mem::swap(&mut *pending, taken);
    }
}

impl Pending {
    /// The records, decoded one by one.
    pub(super) fn records(&self) -> impl Iterator<Item = View<'_>> {
        let mut reader = Reader {
            bytes: &self.bytes,
            at: 0,
        };
        (0..self.count).map(move |_| reader.view())
    }

    /// Empties the buffer for its next turn; one a burst of payloads made large is let go.
    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.bytes.shrink_to(KEPT_CAPACITY);
        self.count = 0;
    }
}

/// A payload as copied: its text, cut if longer than [`PAYLOAD_COPY`], and its full size.
#[derive(Clone, Copy)]
pub(super) struct Payload<'a> {
    pub(super) text: &'a str,
    pub(super) size: usize,
}

/// One record as the writer reads it, borrowing the queue's buffer.
pub(super) struct View<'a> {
    pub(super) at_ms: u64,
    pub(super) duration_us: u64,
    pub(super) session: Option<&'a str>,
    pub(super) client: Option<&'a str>,
    pub(super) profile: &'a str,
    pub(super) server: Option<&'a str>,
    pub(super) method: &'a str,
    pub(super) name: Option<&'a str>,
    pub(super) original: Option<&'a str>,
    pub(super) outcome: Outcome,
    pub(super) error_code: Option<i64>,
    pub(super) error: Option<&'a str>,
    pub(super) request_bytes: u64,
    pub(super) response_bytes: u64,
    pub(super) arguments: Option<Payload<'a>>,
    pub(super) result: Option<Payload<'a>>,
    pub(super) decision: Option<&'a str>,
}

const NONE: u32 = u32::MAX;

fn put_u64(bytes: &mut Vec<u8>, value: u64) {
    bytes.extend_from_slice(&value.to_le_bytes());
}

fn put_text(bytes: &mut Vec<u8>, text: Option<&str>) {
    match text {
        None => bytes.extend_from_slice(&NONE.to_le_bytes()),
        Some(text) => {
            bytes.extend_from_slice(&(text.len() as u32).to_le_bytes());
            bytes.extend_from_slice(text.as_bytes());
        }
    }
}

fn put_payload(bytes: &mut Vec<u8>, payload: Option<&str>) {
    let cut = payload.map(|payload| {
        let mut end = payload.len().min(PAYLOAD_COPY);
        while !payload.is_char_boundary(end) {
            end -= 1;
        }
        &payload[..end]
    });
    put_text(bytes, cut);
    put_u64(bytes, payload.map_or(0, str::len) as u64);
}

fn encode(record: &Record, bytes: &mut Vec<u8>) {
    put_u64(bytes, record.at_ms);
    put_u64(bytes, record.duration_us);
    put_text(bytes, record.session.as_deref());
    put_text(bytes, record.client.as_deref());
    put_text(bytes, Some(&record.profile));
    put_text(bytes, record.server.as_deref());
    put_text(bytes, Some(&record.method));
    put_text(bytes, record.name.as_deref());
    put_text(bytes, record.original.as_deref());
    bytes.push(record.outcome.code() as u8);
    bytes.push(u8::from(record.error_code.is_some()));
    put_u64(bytes, record.error_code.unwrap_or(0) as u64);
    put_text(bytes, record.error.as_deref());
    put_u64(bytes, record.request_bytes);
    put_u64(bytes, record.response_bytes);
    put_payload(bytes, record.arguments.as_deref());
    put_payload(bytes, record.result.as_deref());
    put_text(bytes, record.decision.as_deref());
}

/// Reads what [`encode`] wrote; only ever over a buffer it wrote, so it trusts its lengths.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> &'a [u8] {
        let taken = &self.bytes[self.at..self.at + len];
        self.at += len;
        taken
    }

    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().expect("eight bytes"))
    }

    fn u8(&mut self) -> u8 {
        self.take(1)[0]
    }

    fn text(&mut self) -> Option<&'a str> {
        let len = u32::from_le_bytes(self.take(4).try_into().expect("four bytes"));
        (len != NONE)
            .then(|| std::str::from_utf8(self.take(len as usize)).expect("encoded from a str"))
    }

    fn payload(&mut self) -> Option<Payload<'a>> {
        let text = self.text();
        let size = self.u64() as usize;
        text.map(|text| Payload { text, size })
    }

    fn view(&mut self) -> View<'a> {
        View {
            at_ms: self.u64(),
            duration_us: self.u64(),
            session: self.text(),
            client: self.text(),
            profile: self.text().unwrap_or_default(),
            server: self.text(),
            method: self.text().unwrap_or_default(),
            name: self.text(),
            original: self.text(),
            outcome: Outcome::from_code(i64::from(self.u8())).unwrap_or(Outcome::Result),
            error_code: {
                let present = self.u8() == 1;
                let code = self.u64() as i64;
                present.then_some(code)
            },
            error: self.text(),
            request_bytes: self.u64(),
            response_bytes: self.u64(),
            arguments: self.payload(),
            result: self.payload(),
            decision: self.text(),
        }
    }
}
