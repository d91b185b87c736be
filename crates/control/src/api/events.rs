//! `/api/events`: Server-Sent Events that start with the current state and then follow every
//! change of status, output, catalog, config and the set of backends, and every record of the
//! activity log.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::SystemTime;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_core::Stream;
use serde::Serialize;
use tokio::sync::{broadcast, mpsc, watch};
use tokio_util::sync::WaitForCancellationFutureOwned;

use super::backends::BackendSummary;
use super::{ApiState, EVENTS_CAPACITY};
use crate::reload::ConfigState;
use activity::Record;
use config::BackendConfig;
use platform::clock::unix_millis;
use supervisor::BackendHandle;
use supervisor::output::OutputLine;
use supervisor::status::{BackendStatus, Catalog};

pub(super) async fn events(State(api): State<ApiState>) -> Response {
    let backends = api.backends_in_order();
    let (sender, receiver) = mpsc::channel(EVENTS_CAPACITY.max(backends.len() + 4));
    for backend in &backends {
        follow_backend(backend, &sender);
    }
    let mut config = api.inner.config.clone();
    let _ = sender.try_send(config_event(&config.borrow_and_update()));
    tokio::spawn(forward_changes(config, sender.clone(), config_event));
    let mut pins = api.hub().pins().watch_report();
    let _ = sender.try_send(json_event("pins", &**pins.borrow_and_update()));
    // What is held back, and the pin files' problems.
    tokio::spawn(forward_changes(pins, sender.clone(), |report| {
        json_event("pins", &**report)
    }));
    // The calls waiting for a person's yes, and the servers' questions waiting for an answer.
    let hub = api.hub().clone();
    follow_waiting(
        "approvals",
        hub.approvals().subscribe(),
        &sender,
        move || hub.approvals().waiting(),
    );
    let hub = api.hub().clone();
    follow_waiting(
        "questions",
        hub.questions().subscribe(),
        &sender,
        move || hub.questions().waiting(),
    );
    if let Some(log) = api.hub().activity() {
        tokio::spawn(forward_activity(log.live(), sender.clone()));
    }
    tokio::spawn(forward_membership(api.clone(), backends, sender));
    let feed = EventFeed {
        events: receiver,
        shutdown: Box::pin(api.inner.shutdown.clone().cancelled_owned()),
    };
    Sse::new(feed)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// Sends a `name` event with what `waiting` lists now, and again whenever `changes` says it
/// changed.
fn follow_waiting<T: Serialize>(
    name: &'static str,
    mut changes: watch::Receiver<u64>,
    sender: &mpsc::Sender<Event>,
    waiting: impl Fn() -> Vec<T> + Send + 'static,
) {
    changes.borrow_and_update();
    let _ = sender.try_send(json_event(name, &waiting()));
    tokio::spawn(forward_changes(changes, sender.clone(), move |_| {
        json_event(name, &waiting())
    }));
}

/// Sends an `activity` event for each record the activity log takes; a stream too slow for them
/// skips some, which the dashboard's next query finds anyway.
async fn forward_activity(mut records: broadcast::Receiver<Record>, events: mpsc::Sender<Event>) {
    loop {
        let record = tokio::select! {
            () = events.closed() => return,
            record = records.recv() => match record {
                Ok(record) => record,
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            },
        };
        if events.send(json_event("activity", &record)).await.is_err() {
            return;
        }
    }
}

/// Sends the backend's status now, then follows it (see [`forward_backend`]).
pub(super) fn follow_backend(backend: &BackendHandle, events: &mpsc::Sender<Event>) {
    let mut statuses = backend.watch_status();
    let lines = backend.output().follow();
    let status = statuses.borrow_and_update().clone();
    let _ = events.try_send(status_event(
        &status,
        &backend.config(),
        unix_millis(SystemTime::now()),
    ));
    tokio::spawn(forward_backend(
        backend.clone(),
        statuses,
        lines,
        status.catalog.clone(),
        events.clone(),
    ));
}

/// Follows backends a reload adds, and sends a `backends` event with every name, in config
/// order, whenever the set or its order changes. A removed backend's own stream just ends.
pub(super) async fn forward_membership(
    api: ApiState,
    mut known: Vec<BackendHandle>,
    events: mpsc::Sender<Event>,
) {
    let mut changes = api.engine().changes();
    let mut config = api.inner.config.clone();
    loop {
        tokio::select! {
            () = events.closed() => return,
            changed = changes.changed() => if changed.is_err() { return },
            changed = config.changed() => if changed.is_err() { return },
        }
        let current = api.backends_in_order();
        let same = current.len() == known.len()
            && current
                .iter()
                .zip(&known)
                .all(|(now, before)| now.same_backend(before));
        if same {
            continue;
        }
        for backend in &current {
            if !known.iter().any(|before| before.same_backend(backend)) {
                follow_backend(backend, &events);
            }
        }
        let names: Vec<&str> = current.iter().map(|backend| backend.name()).collect();
        if events
            .send(json_event("backends", &BackendNames { names }))
            .await
            .is_err()
        {
            return;
        }
        known = current;
    }
}

/// Sends a backend's status changes, catalog changes and output lines until the stream ends.
pub(super) async fn forward_backend(
    backend: BackendHandle,
    mut statuses: watch::Receiver<BackendStatus>,
    mut lines: broadcast::Receiver<OutputLine>,
    mut catalog: Arc<Catalog>,
    events: mpsc::Sender<Event>,
) {
    enum Update {
        Status(BackendStatus),
        Line(OutputLine),
        Nothing,
    }
    let name = backend.name();
    let mut lines_open = true;
    loop {
        let update = tokio::select! {
            () = events.closed() => return,
            changed = statuses.changed() => match changed {
                Ok(()) => Update::Status(statuses.borrow_and_update().clone()),
                Err(_) => return,
            },
            line = lines.recv(), if lines_open => match line {
                Ok(line) => Update::Line(line),
                Err(broadcast::error::RecvError::Lagged(skipped)) => {
                    tracing::debug!(backend = name, skipped, "an event stream skipped output");
                    Update::Nothing
                }
                Err(broadcast::error::RecvError::Closed) => {
                    lines_open = false;
                    Update::Nothing
                }
            },
        };
        let mut outgoing = Vec::with_capacity(2);
        match update {
            Update::Status(status) => {
                let now_ms = unix_millis(SystemTime::now());
                outgoing.push(status_event(&status, &backend.config(), now_ms));
                if !Arc::ptr_eq(&catalog, &status.catalog) {
                    catalog = status.catalog.clone();
                    outgoing.push(json_event("catalog", &BackendRef { backend: name }));
                }
            }
            Update::Line(line) => outgoing.push(json_event(
                "output",
                &OutputEvent {
                    backend: name,
                    line: &line,
                },
            )),
            Update::Nothing => {}
        }
        for event in outgoing {
            if events.send(event).await.is_err() {
                return;
            }
        }
    }
}

/// Sends `event` of what `changes` watches whenever it changes, until the stream ends.
async fn forward_changes<T>(
    mut changes: watch::Receiver<T>,
    events: mpsc::Sender<Event>,
    event: impl Fn(&T) -> Event,
) {
    loop {
        tokio::select! {
            () = events.closed() => return,
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
                let event = event(&changes.borrow_and_update());
                if events.send(event).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The events of one `/api/events` stream; ends when Switchboard shuts down.
pub(super) struct EventFeed {
    pub(super) events: mpsc::Receiver<Event>,
    pub(super) shutdown: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl Stream for EventFeed {
    type Item = Result<Event, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.shutdown.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        self.events.poll_recv(cx).map(|event| event.map(Ok))
    }
}

#[derive(Serialize)]
pub(super) struct BackendRef<'a> {
    pub(super) backend: &'a str,
}

#[derive(Serialize)]
pub(super) struct BackendNames<'a> {
    pub(super) names: Vec<&'a str>,
}

#[derive(Serialize)]
pub(super) struct OutputEvent<'a> {
    pub(super) backend: &'a str,
    pub(super) line: &'a OutputLine,
}

pub(super) fn status_event(status: &BackendStatus, config: &BackendConfig, now_ms: u64) -> Event {
    json_event("status", &BackendSummary::new(status, config, now_ms))
}

pub(super) fn config_event(config: &ConfigState) -> Event {
    json_event("config", config)
}

pub(super) fn json_event(name: &str, data: &impl Serialize) -> Event {
    let data = serde_json::to_string(data).expect("API bodies always serialize");
    Event::default().event(name).data(data)
}
