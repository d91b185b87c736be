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

use super::sessions::{Activity, SessionRecord};
use crate::guard::{essence, json_response};
use crate::hub::reply::{self, Reply};
use crate::wire::jsonrpc::{self, ErrorObject};

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

pub(super) fn message_event(message: &[u8]) -> Event {
    let event = Event::default().event("message");
    match std::str::from_utf8(message) {
        Ok(text) => event.data(text),
        Err(_) => event.data(String::from_utf8_lossy(message)),
    }
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
/// It owns the reply's receiver, so a client that goes away cancels the request.
pub(super) struct ReplyStream {
    pub(super) messages: mpsc::UnboundedReceiver<Reply>,
    pub(super) shutdown: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    /// The request's id until its response has gone out: if the messages end without one (the
    /// session was deleted mid-call), an error response takes its place, as over JSON.
    pub(super) unanswered: Option<Box<RawValue>>,
    /// The session's activity, for a request of a session.
    pub(super) _activity: Option<Activity>,
}

impl Stream for ReplyStream {
    type Item = Result<Event, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(shutdown) = &mut this.shutdown
            && shutdown.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(None);
        }
        match this.messages.poll_recv(cx) {
            Poll::Ready(Some(message)) => {
                if let Reply::Response(_) = message {
                    this.unanswered = None;
                }
                Poll::Ready(Some(Ok(message_event(&message.to_json()))))
            }
            Poll::Ready(None) => Poll::Ready(
                this.unanswered
                    .take()
                    .map(|id| Ok(message_event(&no_response(Some(&id))))),
            ),
            Poll::Pending => Poll::Pending,
        }
    }
}
