//! The HTTP+SSE transport of protocol version 2024-11-05: `GET /sse` opens a session that lives
//! as long as its stream, `POST /messages?sessionId=…` feeds it.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_core::Stream;
use tokio::sync::mpsc;

use super::body::read_body;
use super::messages::{accepts, error_body, jsonrpc_error_response, unparsable_body};
use super::sessions::Activity;
use super::streamable::EventStream;
use super::{HTTP_SSE_MESSAGES_PATH, HttpState, Shutdown};
use crate::guard::{ContentType, content_type};
use hub::{Inbound, Reply};
use wire::jsonrpc::{self, Envelope};

/// Opens a session of the HTTP+SSE transport and streams everything it says.
pub(super) async fn get_http_sse(
    State(state): State<Arc<HttpState>>,
    shutdown: Option<Extension<Shutdown>>,
    headers: HeaderMap,
) -> Response {
    if !accepts(&headers, "text/event-stream") {
        return jsonrpc_error_response(
            StatusCode::NOT_ACCEPTABLE,
            None,
            jsonrpc::INVALID_REQUEST,
            "GET /sse opens a server-sent event stream; send Accept: text/event-stream",
        );
    }
    let sessions = &state.http_sse_sessions;
    let (session, events) = sessions.hub.open_session();
    let messages_uri = format!("{HTTP_SSE_MESSAGES_PATH}?sessionId={}", session.id());
    tracing::debug!(session = session.id(), "HTTP+SSE session opened");
    let record = sessions.insert(session, events);
    let messages = EventStream::open(record, shutdown.map(|s| s.0), None)
        .expect("nothing took the events of a session just opened");
    let stream = HttpSseStream {
        endpoint_event: Some(Event::default().event("endpoint").data(messages_uri)),
        messages,
        state: Arc::clone(&state),
    };
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// Takes one message for a session of the HTTP+SSE transport; whatever answers it goes on the
/// session's stream.
pub(super) async fn post_http_sse_message(
    State(state): State<Arc<HttpState>>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Some(session_id) = http_sse_session_id(&uri) else {
        return jsonrpc_error_response(
            StatusCode::BAD_REQUEST,
            None,
            jsonrpc::INVALID_REQUEST,
            "missing sessionId: open GET /sse first and post to the endpoint it names",
        );
    };
    if content_type(&headers) == ContentType::Other {
        return jsonrpc_error_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            jsonrpc::INVALID_REQUEST,
            "the body must be JSON (Content-Type: application/json)",
        );
    }
    // A session whose stream has just ended has no sender any more: it is as good as gone.
    let Some((record, stream)) = state
        .http_sse_sessions
        .find(session_id)
        .and_then(|record| record.stream_sender().map(|stream| (record, stream)))
    else {
        return jsonrpc_error_response(
            StatusCode::NOT_FOUND,
            None,
            jsonrpc::INVALID_REQUEST,
            "unknown or closed session: open GET /sse for a new one",
        );
    };
    let body = match read_body(&headers, body, state.max_body_size).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let activity = Activity::begin(record);
    let first = body.iter().find(|byte| !byte.is_ascii_whitespace());
    let envelope = match first {
        Some(b'{') => Envelope::parse(&body).ok(),
        _ => None,
    };
    let error = match (first, envelope) {
        (_, Some(envelope)) => match activity.record().session.receive_envelope(&envelope) {
            Inbound::Request(reply) => {
                // Ends with the reply, or when the stream goes away (which cancels the call).
                tokio::spawn(forward_http_sse_reply(reply.messages, stream, activity));
                return StatusCode::ACCEPTED.into_response();
            }
            Inbound::Accepted => None,
            Inbound::Rejected(error) => Some(error.to_json()),
        },
        (Some(b'['), None) => Some(error_body(
            None,
            jsonrpc::INVALID_REQUEST,
            "batches are not supported on the HTTP+SSE transport; post one message at a time",
        )),
        _ => Some(unparsable_body(&body)),
    };
    if let Some(error) = error
        && stream.send(error).is_err()
    {
        tracing::debug!(
            session = activity.record().session.id(),
            "the SSE stream ended before an error could be sent on it"
        );
    }
    StatusCode::ACCEPTED.into_response()
}

/// The `sessionId` of a `/messages` URI. Session ids are plain hex, so it is not decoded.
pub(super) fn http_sse_session_id(uri: &Uri) -> Option<&str> {
    uri.query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("sessionId="))
}

/// Sends every message of one reply to the session's stream, its response last.
///
/// Returns when the reply ends or when the stream is gone; dropping the reply then cancels the
/// request at the backend.
pub(super) async fn forward_http_sse_reply(
    mut messages: mpsc::UnboundedReceiver<Reply>,
    stream: mpsc::UnboundedSender<Vec<u8>>,
    _activity: Activity,
) {
    loop {
        let message = tokio::select! {
            () = stream.closed() => return,
            message = messages.recv() => message,
        };
        let Some(message) = message else {
            return;
        };
        if stream.send(message.to_json()).is_err() {
            return;
        }
    }
}

/// The SSE body of `GET /sse`: the `endpoint` event, then every message for the session.
///
/// The session lives as long as this stream: dropping it (the client went away, the server shut
/// down, or the session was evicted) closes the session, which cancels its calls.
pub(super) struct HttpSseStream {
    /// Sent before anything else; `None` once sent.
    pub(super) endpoint_event: Option<Event>,
    pub(super) messages: EventStream,
    pub(super) state: Arc<HttpState>,
}

impl Stream for HttpSseStream {
    type Item = Result<Event, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(event) = this.endpoint_event.take() {
            return Poll::Ready(Some(Ok(event)));
        }
        Pin::new(&mut this.messages).poll_next(cx)
    }
}

impl Drop for HttpSseStream {
    fn drop(&mut self) {
        let sessions = &self.state.http_sse_sessions;
        let id = self.messages.activity.record().session.id();
        // Already gone when it was evicted; then it was closed at that moment.
        if let Some(record) = sessions.remove(id) {
            sessions.close(&record, "its SSE stream ended");
        }
    }
}
