//! The sessions one HTTP transport keeps: lookup, idle expiry, the bound on their number, and
//! what is in flight on each.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::DEFAULT_MAX_SESSIONS;
use super::events::{EventId, PARK_GRACE, Parked, Resume, Streams};
use hub::{Hub, Session, SessionEvents};

/// How long a session with nothing in flight and no `GET` stream is kept.
pub(super) const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Limits on the sessions one endpoint keeps.
#[derive(Debug, Clone, Copy)]
pub(super) struct SessionLimits {
    pub(super) max_sessions: usize,
    pub(super) idle_timeout: Duration,
}

impl Default for SessionLimits {
    fn default() -> SessionLimits {
        SessionLimits {
            max_sessions: DEFAULT_MAX_SESSIONS,
            idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
        }
    }
}

/// The sessions of one endpoint, by id.
pub(super) struct Sessions {
    pub(super) hub: Hub,
    pub(super) limits: SessionLimits,
    pub(super) by_id: Mutex<HashMap<String, Arc<SessionRecord>>>,
}

pub(super) struct SessionRecord {
    pub(super) session: Session,
    /// Cancelled when this endpoint closes the session; ends its `GET` stream.
    pub(super) closed: CancellationToken,
    pub(super) live: Mutex<Liveness>,
}

pub(super) struct Liveness {
    pub(super) last_used: Instant,
    /// Requests in flight plus the open `GET` stream.
    pub(super) n_active: usize,
    /// The session's unrelated messages; `None` while a `GET` stream holds them.
    pub(super) events: Option<SessionEvents>,
    /// While a `GET` stream is open: where messages related to a request answered as plain JSON
    /// go.
    pub(super) related: Option<mpsc::UnboundedSender<Vec<u8>>>,
    /// Event ids and what a resumption needs (SEP-1699).
    pub(super) streams: Streams,
}

impl Sessions {
    pub(super) fn new(hub: Hub, limits: SessionLimits) -> Sessions {
        Sessions {
            hub,
            limits,
            by_id: Mutex::new(HashMap::new()),
        }
    }

    /// The session with this id, unless it is unknown or has expired (then it is closed).
    /// The session `id` if it belongs to `profile`.
    pub(super) fn find_in(&self, id: &str, profile: &str) -> Option<Arc<SessionRecord>> {
        self.find(id)
            .filter(|record| record.session.profile() == profile)
    }

    pub(super) fn find(&self, id: &str) -> Option<Arc<SessionRecord>> {
        let now = Instant::now();
        let expired = {
            let mut by_id = lock(&self.by_id);
            let record = by_id.get(id)?;
            if !record.idle_longer_than(self.limits.idle_timeout, now) {
                return Some(Arc::clone(record));
            }
            by_id.remove(id)?
        };
        self.close(&expired, "expired");
        None
    }

    /// Keeps a new session, first closing expired ones and, when full, the least recently used.
    pub(super) fn insert(&self, session: Session, events: SessionEvents) -> Arc<SessionRecord> {
        let now = Instant::now();
        let record = Arc::new(SessionRecord {
            session,
            closed: CancellationToken::new(),
            live: Mutex::new(Liveness {
                last_used: now,
                n_active: 0,
                events: Some(events),
                related: None,
                streams: Streams::default(),
            }),
        });
        let mut expired = Vec::new();
        let mut evicted = Vec::new();
        {
            let mut by_id = lock(&self.by_id);
            by_id.retain(|_, record| {
                let keep = !record.idle_longer_than(self.limits.idle_timeout, now);
                if !keep {
                    expired.push(Arc::clone(record));
                }
                keep
            });
            while by_id.len() >= self.limits.max_sessions.max(1) {
                let least_recently_used = by_id
                    .iter()
                    .min_by_key(|(_, record)| {
                        let live = lock(&record.live);
                        (live.n_active > 0, live.last_used)
                    })
                    .map(|(id, _)| id.clone())
                    .expect("a full map has a least recently used session");
                evicted.push(
                    by_id
                        .remove(&least_recently_used)
                        .expect("the id was just found"),
                );
            }
            by_id.insert(record.session.id().to_owned(), Arc::clone(&record));
        }
        for record in expired {
            self.close(&record, "expired");
        }
        for record in evicted {
            self.close(&record, "evicted: too many sessions");
        }
        record
    }

    pub(super) fn remove(&self, id: &str) -> Option<Arc<SessionRecord>> {
        lock(&self.by_id).remove(id)
    }

    /// Ends a session that is no longer in the map.
    pub(super) fn close(&self, record: &SessionRecord, why: &str) {
        record.closed.cancel();
        self.hub.close_session(record.session.id());
        tracing::debug!(session = record.session.id(), "HTTP session closed: {why}");
    }
}

impl Drop for Sessions {
    fn drop(&mut self) {
        let by_id = std::mem::take(self.by_id.get_mut().unwrap_or_else(PoisonError::into_inner));
        for record in by_id.values() {
            self.close(record, "the HTTP endpoint is gone");
        }
    }
}

impl SessionRecord {
    /// Whether a `GET` stream of this session is open.
    pub(super) fn has_get_stream(&self) -> bool {
        lock(&self.live).related.is_some()
    }

    pub(super) fn idle_longer_than(&self, timeout: Duration, now: Instant) -> bool {
        let live = lock(&self.live);
        live.n_active == 0 && now.saturating_duration_since(live.last_used) > timeout
    }

    /// Where messages for the open `GET` stream go; `None` while none is open.
    pub(super) fn stream_sender(&self) -> Option<mpsc::UnboundedSender<Vec<u8>>> {
        lock(&self.live).related.clone()
    }

    /// Passes a message related to a request answered as plain JSON to the open `GET` stream.
    pub(super) fn send_related(&self, message: Vec<u8>) {
        let live = lock(&self.live);
        let sent = live
            .related
            .as_ref()
            .is_some_and(|related| related.send(message).is_ok());
        if !sent {
            tracing::debug!(
                session = self.session.id(),
                "no GET stream is open; dropped a message related to a request answered as JSON"
            );
        }
    }
}

impl SessionRecord {
    /// Keeps a reply stream whose client went away for [`PARK_GRACE`], for a `GET` with
    /// `Last-Event-ID` to take up; then drops it, which cancels its request.
    pub(super) fn park(self: &Arc<Self>, parked: Parked) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let stream = lock(&self.live).streams.park(parked);
        let record = Arc::downgrade(self);
        runtime.spawn(async move {
            tokio::time::sleep(PARK_GRACE).await;
            if let Some(record) = record.upgrade() {
                let dropped = lock(&record.live).streams.unpark(stream);
                if dropped.is_some() {
                    tracing::debug!(
                        session = record.session.id(),
                        stream,
                        "a reply stream was not taken up again; its request is cancelled"
                    );
                }
            }
        });
    }

    /// Takes up the stream `last` names, if it can be.
    pub(super) fn resume(&self, last: Option<EventId>) -> Resume {
        lock(&self.live).streams.resume(last)
    }
}

/// Marks a session busy while it lives: it does not expire and is evicted last.
pub(super) struct Activity(Arc<SessionRecord>);

impl Activity {
    pub(super) fn begin(record: Arc<SessionRecord>) -> Activity {
        {
            let mut live = lock(&record.live);
            live.n_active += 1;
            live.last_used = Instant::now();
        }
        Activity(record)
    }

    pub(super) fn record(&self) -> &SessionRecord {
        &self.0
    }

    pub(super) fn shared(&self) -> &Arc<SessionRecord> {
        &self.0
    }
}

impl Drop for Activity {
    fn drop(&mut self) {
        let mut live = lock(&self.0.live);
        live.n_active -= 1;
        live.last_used = Instant::now();
    }
}

pub(super) struct CloseUnlessKept<'a> {
    pub(super) hub: &'a Hub,
    pub(super) session: Session,
    pub(super) keep: bool,
}

impl Drop for CloseUnlessKept<'_> {
    fn drop(&mut self) {
        if !self.keep {
            self.hub.close_session(self.session.id());
        }
    }
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
