//! What both HTTP transports answer with: JSON-RPC error responses, SSE message events, the SSE
//! body of one request's reply, and the response of a reply.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use axum::response::sse::Event;
use futures_core::Stream;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::WaitForCancellationFutureOwned;

use super::events::{Parked, Resumable, message_event};
use super::sessions::{Activity, SessionRecord};
use crate::guard::{essence, json_response};
use hub::reply::{self, Reply};
use wire::jsonrpc::{self, ErrorObject};

/// Returns the reply's response; the messages before it go to the session's `GET` stream.
pub(super) async fn final_response(
    mut messages: mpsc::UnboundedReceiver<Reply>,
    record: Option<&SessionRecord>,
) -> Option<reply::Response> {
    // Everything before the response goes on at once: a request to the client among it must be
    // answered before the response can come.
    while let Some(message) = messages.recv().await {
        let related = match message {
            Reply::Response(response) => return Some(response),
            related @ (Reply::Request(_) | Reply::Notification(_)) => related,
        };
        match record {
            Some(record) => record.send_related(related.to_json()),
            None => tracing::debug!("dropped a message related to a request answered as JSON"),
        }
    }
    None
}

/// Whether an `Accept` header lists `media_type` (parameters and weights are not weighed).
pub(super) fn accepts(headers: &HeaderMap, media_type: &str) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|item| essence(item).eq_ignore_ascii_case(media_type))
}

/// Whether an `Accept` header that lists `text/event-stream` prefers it to `application/json`:
/// by a higher weight (`q`), or the same weight and listed first, or without JSON listed.
pub(super) fn prefers_stream(headers: &HeaderMap) -> bool {
    // (weight, position) of the first mention of each.
    let mut stream = None;
    let mut json = None;
    let items = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','));
    for (position, item) in items.enumerate() {
        let weight = item
            .split(';')
            .skip(1)
            .filter_map(|parameter| parameter.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        let essence = essence(item);
        if essence.eq_ignore_ascii_case("text/event-stream") {
            stream.get_or_insert((weight, position));
        } else if essence.eq_ignore_ascii_case("application/json") {
            json.get_or_insert((weight, position));
        }
    }
    match (stream, json) {
        (Some((stream, first)), Some((json, second))) => {
            stream > json || (stream == json && first < second)
        }
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// The answer to a body that is not a message object or a batch: invalid JSON (-32700) or valid
/// JSON of another shape (-32600).
pub(super) fn unparsable(body: &[u8]) -> Response {
    json_response(StatusCode::BAD_REQUEST, unparsable_body(body))
}

/// The JSON-RPC error (`id` null) for a body that is not a message object or a batch.
pub(super) fn unparsable_body(body: &[u8]) -> Vec<u8> {
    let (code, message) = match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
        Ok(_) => (
            jsonrpc::INVALID_REQUEST,
            "the body must be a JSON-RPC message object or a batch array".to_owned(),
        ),
        Err(error) => (
            jsonrpc::PARSE_ERROR,
            format!("the body is not valid JSON: {error}"),
        ),
    };
    error_body(None, code, message)
}

pub(super) fn missing_session(id: Option<&RawValue>) -> Response {
    jsonrpc_error_response(
        StatusCode::BAD_REQUEST,
        id,
        jsonrpc::INVALID_REQUEST,
        "missing Mcp-Session-Id header: send initialize alone first, then repeat the \
         Mcp-Session-Id it returns on every request",
    )
}

pub(super) fn unknown_session(id: Option<&RawValue>) -> Response {
    jsonrpc_error_response(
        StatusCode::NOT_FOUND,
        id,
        jsonrpc::INVALID_REQUEST,
        "unknown or expired session: send initialize to start a new one",
    )
}

pub(super) fn no_response(id: Option<&RawValue>) -> Vec<u8> {
    error_body(
        id,
        jsonrpc::INTERNAL_ERROR,
        "the request ended without a response",
    )
}

pub(super) fn jsonrpc_error_response(
    status: StatusCode,
    id: Option<&RawValue>,
    code: i64,
    message: impl Into<String>,
) -> Response {
    json_response(status, error_body(id, code, message))
}

/// A JSON-RPC error response as one JSON text (without the newline of the stdio framing).
pub(super) fn error_body(id: Option<&RawValue>, code: i64, message: impl Into<String>) -> Vec<u8> {
    error_object_body(id, &ErrorObject::new(code, message))
}

/// [`error_body`] for an error object of any shape (with `data`, say).
pub(super) fn error_object_body(id: Option<&RawValue>, error: &ErrorObject) -> Vec<u8> {
    jsonrpc::without_newline(jsonrpc::error_line(id, error))
}

/// The SSE body answering one request: its messages, the response last.
///
/// It owns the reply's receiver, so a client that goes away cancels the request; for a session's
/// stream, once the stream has been left for [`super::events::PARK_GRACE`] without being taken up again.
pub(super) struct ReplyStream {
    pub(super) messages: mpsc::UnboundedReceiver<Reply>,
    pub(super) shutdown: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    /// The request's id until its response has gone out: if the messages end without one (the
    /// session was deleted mid-call), an error response takes its place, as over JSON.
    pub(super) unanswered: Option<Box<RawValue>>,
    /// The session's activity, for a request of a session.
    pub(super) activity: Option<Activity>,
    /// For a session's stream: its events' ids and what a resumption replays.
    pub(super) resumable: Option<Resumable>,
}

impl Stream for ReplyStream {
    type Item = Result<Event, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(shutdown) = &mut this.shutdown
            && shutdown.as_mut().poll(cx).is_ready()
        {
            this.resumable = None;
            return Poll::Ready(None);
        }
        if let Some(first) = this.resumable.as_mut().and_then(|r| r.first.pop_front()) {
            return Poll::Ready(Some(Ok(first)));
        }
        let (message, response) = match this.messages.poll_recv(cx) {
            Poll::Ready(Some(message)) => {
                let response = matches!(message, Reply::Response(_));
                if response {
                    this.unanswered = None;
                }
                (message.to_json(), response)
            }
            Poll::Ready(None) => match this.unanswered.take() {
                Some(id) => (no_response(Some(&id)), true),
                None => return Poll::Ready(None),
            },
            Poll::Pending => return Poll::Pending,
        };
        let event = match &mut this.resumable {
            Some(resumable) => resumable.history.event(&message, !response),
            None => message_event(&message),
        };
        Poll::Ready(Some(Ok(event)))
    }
}

impl Drop for ReplyStream {
    /// Parks a session's stream whose client went away before its response.
    fn drop(&mut self) {
        let (Some(resumable), Some(unanswered), Some(activity)) = (
            self.resumable.take(),
            self.unanswered.take(),
            &self.activity,
        ) else {
            return;
        };
        if activity.record().closed.is_cancelled() {
            return;
        }
        let messages = std::mem::replace(&mut self.messages, mpsc::unbounded_channel().1);
        activity.shared().park(Parked {
            messages,
            unanswered,
            history: resumable.history,
        });
    }
}
