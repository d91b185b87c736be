//! Streamable HTTP at `/mcp` (the default profile) and `/mcp/NAME` (the profile NAME): `POST` a
//! message or a batch, `GET` the session's event stream, `DELETE` the session. A session belongs
//! to the profile it was opened at: its id means nothing at another one's path.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_core::Stream;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::WaitForCancellationFutureOwned;

use super::body::read_body;
use super::events::{EventId, Resumable, Resume, message_event, primed};
use super::messages::ReplyStream;
use super::messages::{
    accepts, error_body, error_object_body, final_response, jsonrpc_error_response,
    missing_session, no_response, prefers_stream, unknown_session, unparsable,
};
use super::sessions::{Activity, CloseUnlessKept, SessionRecord, lock};
use super::stateless::post_stateless;
use super::{HttpState, MCP_PROTOCOL_VERSION, MCP_SESSION_ID, Shutdown};
use crate::guard::{ContentType, content_type, json_response};
use config::DEFAULT_PROFILE;
use hub::rewrite::ObjectEntries;
use hub::{
    Inbound, RequestReply, SUPPORTED_PROTOCOL_VERSIONS, SessionEvents, is_stateless_envelope,
    unsupported_version,
};
use wire::era::{Era, STATELESS_PROTOCOL_VERSION, code};
use wire::jsonrpc::{self, Envelope, ErrorObject, Kind};
use wire::meta;
use wire::method::Method;

pub(super) async fn post_mcp(
    State(state): State<Arc<HttpState>>,
    shutdown: Option<Extension<Shutdown>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    post(&state, DEFAULT_PROFILE, shutdown, headers, body).await
}

pub(super) async fn post_profile(
    State(state): State<Arc<HttpState>>,
    Path(profile): Path<String>,
    shutdown: Option<Extension<Shutdown>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Some(response) = unknown_profile(&state, &profile) {
        return response;
    }
    post(&state, &profile, shutdown, headers, body).await
}

pub(super) async fn get_profile(
    state: State<Arc<HttpState>>,
    Path(profile): Path<String>,
    shutdown: Option<Extension<Shutdown>>,
    headers: HeaderMap,
) -> Response {
    if let Some(response) = unknown_profile(&state, &profile) {
        return response;
    }
    get(&state, &profile, shutdown, headers)
}

pub(super) async fn delete_profile(
    state: State<Arc<HttpState>>,
    Path(profile): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Some(response) = unknown_profile(&state, &profile) {
        return response;
    }
    delete(&state, &profile, &headers)
}

/// 404 for a path under `/mcp/` that names no profile.
fn unknown_profile(state: &HttpState, profile: &str) -> Option<Response> {
    if state.sessions.hub.serves(profile) {
        return None;
    }
    Some(jsonrpc_error_response(
        StatusCode::NOT_FOUND,
        None,
        jsonrpc::INVALID_REQUEST,
        format!(
            "no profile {} is configured; /mcp serves the default one",
            wire::echo(profile)
        ),
    ))
}

/// Answers a `POST` to `profile`'s path.
async fn post(
    state: &HttpState,
    profile: &str,
    shutdown: Option<Extension<Shutdown>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let era = match era(&headers) {
        Ok(era) => era,
        Err(error) => {
            // The answer carries the request's id, when the body is one request.
            let body = read_body(&headers, body, state.max_body_size).await;
            let id = body.as_deref().ok().and_then(request_id);
            return json_response(StatusCode::BAD_REQUEST, error_object_body(id, &error));
        }
    };
    if content_type(&headers) == ContentType::Other {
        return jsonrpc_error_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            jsonrpc::INVALID_REQUEST,
            "the body must be JSON (Content-Type: application/json)",
        );
    }
    let body = match read_body(&headers, body, state.max_body_size).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let session_id = session_id(&headers);
    // A message is parsed here, once, and handed on as parsed; a batch is parsed as one.
    let first = body
        .iter()
        .find(|byte| !byte.is_ascii_whitespace())
        .copied();
    let envelope = match first {
        Some(b'{') => Envelope::parse(&body).ok(),
        _ => None,
    };
    let carries_envelope = || envelope.as_ref().is_some_and(is_stateless_envelope);
    let stateless = match era {
        Some(Era::Stateless) => true,
        Some(Era::Session) => {
            if carries_envelope() {
                let id = envelope.as_ref().and_then(|envelope| envelope.id);
                return jsonrpc_error_response(
                    StatusCode::BAD_REQUEST,
                    id,
                    code::HEADER_MISMATCH,
                    format!(
                        "header mismatch: MCP-Protocol-Version names a session-era version, \
                         but the body carries the {STATELESS_PROTOCOL_VERSION} envelope"
                    ),
                );
            }
            false
        }
        None => session_id.is_none() && carries_envelope(),
    };
    if stateless {
        let hub = &state.sessions.hub;
        let shutdown = shutdown.map(|s| s.0);
        return post_stateless(hub, profile, &headers, &body, envelope.as_ref(), shutdown).await;
    }
    match (first, envelope) {
        (_, Some(envelope)) => {
            let answer = if accepts(&headers, "text/event-stream") {
                Answer::Stream {
                    shutdown: shutdown.map(|s| s.0),
                    preferred: prefers_stream(&headers),
                }
            } else {
                Answer::Json
            };
            post_message(state, profile, session_id, &envelope, answer).await
        }
        (Some(b'['), None) => post_batch(state, profile, session_id, &body).await,
        _ => unparsable(&body),
    }
}

/// The id of the one request `body` holds, if it holds one (not a batch, nor what is not JSON).
fn request_id(body: &[u8]) -> Option<&RawValue> {
    Envelope::parse(body)
        .ok()
        .filter(|envelope| envelope.kind() == Kind::Request)?
        .id
}

/// The era `MCP-Protocol-Version` names; for a version this endpoint does not speak, the -32022
/// error (answered with 400) that lists the versions it does.
pub(super) fn era(headers: &HeaderMap) -> Result<Option<Era>, ErrorObject> {
    let Some(value) = headers.get(MCP_PROTOCOL_VERSION) else {
        return Ok(None);
    };
    let version = value.to_str().map(str::trim).unwrap_or_default();
    if version == STATELESS_PROTOCOL_VERSION {
        return Ok(Some(Era::Stateless));
    }
    if SUPPORTED_PROTOCOL_VERSIONS.contains(&version) {
        return Ok(Some(Era::Session));
    }
    Err(unsupported_version(&String::from_utf8_lossy(
        value.as_bytes(),
    )))
}

/// How a request is answered.
pub(super) enum Answer {
    /// The response alone, as `application/json`.
    Json,
    /// Every message of the reply as an SSE stream, which ends with the server; unless the
    /// client accepts JSON as much and the reply can hold nothing but the response.
    Stream {
        shutdown: Option<Shutdown>,
        /// The client prefers a stream (`Accept`), so it gets one even then.
        preferred: bool,
    },
}

/// Answers one message, parsed.
pub(super) async fn post_message(
    state: &HttpState,
    profile: &str,
    session_id: Option<&str>,
    envelope: &Envelope<'_>,
    answer: Answer,
) -> Response {
    let id = envelope.id;
    let Some(session_id) = session_id else {
        if envelope.kind() == Kind::Request && envelope.method == Some(Method::Initialize) {
            return initialize(state, profile, envelope).await;
        }
        return missing_session(id);
    };
    let Some(record) = state.sessions.find_in(session_id, profile) else {
        return unknown_session(id);
    };
    let answer = match answer {
        Answer::Stream {
            preferred: false, ..
        } if !may_relate_messages(envelope, &record) => Answer::Json,
        answer => answer,
    };
    let activity = Activity::begin(record);
    match activity.record().session.receive_envelope(envelope) {
        Inbound::Accepted => StatusCode::ACCEPTED.into_response(),
        Inbound::Rejected(error) => json_response(StatusCode::OK, error.to_json()),
        Inbound::Request(reply) => match answer {
            Answer::Stream { shutdown, .. } => {
                let record = activity.record();
                let resumable = lock(&record.live).streams.open();
                let priming = resumable.priming(record.session.protocol_version().as_deref());
                let stream = ReplyStream {
                    messages: reply.messages,
                    shutdown: shutdown.map(|s| Box::pin(s.0.cancelled_owned())),
                    unanswered: Some(reply.id),
                    activity: Some(activity),
                    resumable: Some(resumable),
                };
                let response = Sse::new(stream)
                    .keep_alive(KeepAlive::default())
                    .into_response();
                primed(response, priming)
            }
            Answer::Json => {
                let response = final_response(reply.messages, Some(activity.record())).await;
                let body = match response {
                    Some(response) => response.to_json(),
                    None => no_response(Some(&reply.id)),
                };
                json_response(StatusCode::OK, body)
            }
        },
    }
}

/// Whether answering this request may involve more than its response on the POST stream:
/// progress it asked for, or requests to a client that has no `GET` stream to receive them.
pub(super) fn may_relate_messages(envelope: &Envelope<'_>, record: &SessionRecord) -> bool {
    let wants_progress = envelope
        .params
        .and_then(|params| ObjectEntries::parse(params.get()).ok())
        .and_then(|params| params.get("_meta").map(|meta| meta.get().to_owned()))
        .and_then(|meta| {
            ObjectEntries::parse(&meta)
                .ok()
                .map(|meta| meta.get(meta::PROGRESS_TOKEN).is_some())
        })
        .unwrap_or(false);
    wants_progress || (record.session.can_be_asked() && !record.has_get_stream())
}

/// Opens a session for an `initialize` sent without a session id, and keeps it if it succeeds.
pub(super) async fn initialize(
    state: &HttpState,
    profile: &str,
    envelope: &Envelope<'_>,
) -> Response {
    let id = envelope.id;
    let hub = &state.sessions.hub;
    let Some((session, events)) = hub.open_session_in(profile) else {
        return jsonrpc_error_response(
            StatusCode::NOT_FOUND,
            id,
            jsonrpc::INVALID_REQUEST,
            format!("the profile {profile} is no longer configured"),
        );
    };
    // Closes the new session if it is not kept, including when the client goes away.
    let mut unkept = CloseUnlessKept {
        hub,
        session: session.clone(),
        keep: false,
    };
    let response = match session.receive_envelope(envelope) {
        Inbound::Request(reply) => match final_response(reply.messages, None).await {
            Some(response) => response,
            None => return json_response(StatusCode::OK, no_response(id)),
        },
        Inbound::Rejected(error) => return json_response(StatusCode::OK, error.to_json()),
        Inbound::Accepted => {
            return jsonrpc_error_response(
                StatusCode::OK,
                id,
                jsonrpc::INTERNAL_ERROR,
                "initialize was taken as a notification",
            );
        }
    };
    if response.outcome.is_err() {
        return json_response(StatusCode::OK, response.to_json());
    }
    let Ok(session_header) = HeaderValue::from_str(session.id()) else {
        return jsonrpc_error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            id,
            jsonrpc::INTERNAL_ERROR,
            "the session id cannot be sent as a header",
        );
    };
    unkept.keep = true;
    tracing::debug!(session = session.id(), "HTTP session opened");
    state.sessions.insert(session, events);
    let mut response = json_response(StatusCode::OK, response.to_json());
    response
        .headers_mut()
        .insert(MCP_SESSION_ID, session_header);
    response
}

/// Answers a batch: every element is taken, then the answers are collected in order.
pub(super) async fn post_batch(
    state: &HttpState,
    profile: &str,
    session_id: Option<&str>,
    body: &[u8],
) -> Response {
    let Ok(elements) = serde_json::from_slice::<Vec<&RawValue>>(body) else {
        return unparsable(body);
    };
    if elements.is_empty() {
        return jsonrpc_error_response(
            StatusCode::BAD_REQUEST,
            None,
            jsonrpc::INVALID_REQUEST,
            "the batch is empty",
        );
    }
    let Some(session_id) = session_id else {
        return missing_session(None);
    };
    let Some(record) = state.sessions.find_in(session_id, profile) else {
        return unknown_session(None);
    };
    let activity = Activity::begin(record);

    enum Answer {
        Ready(Vec<u8>),
        Pending(RequestReply),
    }
    let mut answers = Vec::new();
    for element in &elements {
        let text = element.get();
        if !text.starts_with('{') {
            answers.push(Answer::Ready(error_body(
                None,
                jsonrpc::INVALID_REQUEST,
                "a batch element must be a JSON-RPC message object",
            )));
            continue;
        }
        match activity.record().session.receive(text.as_bytes()) {
            Inbound::Request(reply) => answers.push(Answer::Pending(reply)),
            Inbound::Accepted => {}
            Inbound::Rejected(error) => answers.push(Answer::Ready(error.to_json())),
        }
    }
    if answers.is_empty() {
        return StatusCode::ACCEPTED.into_response();
    }
    let mut out = Vec::with_capacity(256 * answers.len());
    out.push(b'[');
    for (index, answer) in answers.into_iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        let message = match answer {
            Answer::Ready(message) => message,
            Answer::Pending(reply) => {
                match final_response(reply.messages, Some(activity.record())).await {
                    Some(response) => response.to_json(),
                    None => no_response(Some(&reply.id)),
                }
            }
        };
        out.extend_from_slice(&message);
    }
    out.push(b']');
    json_response(StatusCode::OK, out)
}

pub(super) async fn get_mcp(
    State(state): State<Arc<HttpState>>,
    shutdown: Option<Extension<Shutdown>>,
    headers: HeaderMap,
) -> Response {
    get(&state, DEFAULT_PROFILE, shutdown, headers)
}

/// Opens the event stream of a session of `profile`.
fn get(
    state: &HttpState,
    profile: &str,
    shutdown: Option<Extension<Shutdown>>,
    headers: HeaderMap,
) -> Response {
    if let Some(response) = sessions_only(&headers) {
        return response;
    }
    if !accepts(&headers, "text/event-stream") {
        return jsonrpc_error_response(
            StatusCode::NOT_ACCEPTABLE,
            None,
            jsonrpc::INVALID_REQUEST,
            "GET opens a server-sent event stream; send Accept: text/event-stream",
        );
    }
    let Some(session_id) = session_id(&headers) else {
        return missing_session(None);
    };
    let Some(record) = state.sessions.find_in(session_id, profile) else {
        return unknown_session(None);
    };
    let shutdown = shutdown.map(|s| s.0);
    let replay = match record.resume(EventId::last(&headers)) {
        Resume::Reply(parked, replay) => {
            let stream = ReplyStream {
                messages: parked.messages,
                shutdown: shutdown.map(|s| Box::pin(s.0.cancelled_owned())),
                unanswered: Some(parked.unanswered),
                activity: Some(Activity::begin(record)),
                resumable: Some(Resumable {
                    history: parked.history,
                    first: replay,
                }),
            };
            return Sse::new(stream)
                .keep_alive(KeepAlive::default())
                .into_response();
        }
        Resume::Get(replay) => replay,
        Resume::Nothing => VecDeque::new(),
    };
    let Some(stream) = EventStream::open(record, shutdown, Some(replay)) else {
        return jsonrpc_error_response(
            StatusCode::CONFLICT,
            None,
            jsonrpc::INVALID_REQUEST,
            "this session already has an open GET stream",
        );
    };
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

pub(super) async fn delete_mcp(
    State(state): State<Arc<HttpState>>,
    headers: HeaderMap,
) -> Response {
    delete(&state, DEFAULT_PROFILE, &headers)
}

/// Ends a session of `profile`.
fn delete(state: &HttpState, profile: &str, headers: &HeaderMap) -> Response {
    if let Some(response) = sessions_only(headers) {
        return response;
    }
    let Some(session_id) = session_id(headers) else {
        return missing_session(None);
    };
    if state.sessions.find_in(session_id, profile).is_none() {
        return unknown_session(None);
    }
    match state.sessions.remove(session_id) {
        Some(record) => {
            state.sessions.close(&record, "deleted by the client");
            StatusCode::NO_CONTENT.into_response()
        }
        None => unknown_session(None),
    }
}

/// The SSE body of a `GET`: the session's unrelated messages, plus messages related to requests
/// answered as plain JSON. On drop, the session's queue goes back to its record.
pub(super) struct EventStream {
    /// Kept events a `Last-Event-ID` asked to be replayed, sent first.
    pub(super) replay: VecDeque<Event>,
    /// Whether its events carry ids and are kept for a replay (Streamable HTTP, not HTTP+SSE).
    pub(super) numbered: bool,
    pub(super) events: Option<SessionEvents>,
    /// Lines only this stream reads, whatever their kind: it writes them as they are.
    pub(super) related: mpsc::UnboundedReceiver<Vec<u8>>,
    pub(super) closed: Pin<Box<WaitForCancellationFutureOwned>>,
    pub(super) shutdown: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    pub(super) activity: Activity,
}

impl EventStream {
    /// `None` when another stream holds the session's queue. With `replay`, a stream whose
    /// events carry ids, those events first; without, one whose events carry none.
    pub(super) fn open(
        record: Arc<SessionRecord>,
        shutdown: Option<Shutdown>,
        replay: Option<VecDeque<Event>>,
    ) -> Option<EventStream> {
        let closed = Box::pin(record.closed.clone().cancelled_owned());
        let activity = Activity::begin(record);
        let (related_sender, related) = mpsc::unbounded_channel();
        let events = {
            let mut live = lock(&activity.record().live);
            let events = live.events.take()?;
            live.related = Some(related_sender);
            events
        };
        Some(EventStream {
            numbered: replay.is_some(),
            replay: replay.unwrap_or_default(),
            events: Some(events),
            related,
            closed,
            shutdown: shutdown.map(|s| Box::pin(s.0.cancelled_owned())),
            activity,
        })
    }
}

impl Stream for EventStream {
    type Item = Result<Event, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.closed.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        if let Some(shutdown) = &mut this.shutdown
            && shutdown.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(None);
        }
        if let Some(event) = this.replay.pop_front() {
            return Poll::Ready(Some(Ok(event)));
        }
        let message = match this.related.poll_recv(cx) {
            Poll::Ready(Some(message)) => message,
            _ => {
                let Some(events) = &mut this.events else {
                    return Poll::Ready(None);
                };
                match events.poll_recv(cx) {
                    Poll::Ready(Some(event)) => event.to_json(),
                    Poll::Ready(None) => return Poll::Ready(None),
                    Poll::Pending => return Poll::Pending,
                }
            }
        };
        if !this.numbered {
            return Poll::Ready(Some(Ok(message_event(&message))));
        }
        let mut live = lock(&this.activity.record().live);
        Poll::Ready(Some(Ok(live.streams.get.event(&message, true))))
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        let mut live = lock(&self.activity.record().live);
        live.related = None;
        live.events = self.events.take();
    }
}

/// The answer to a `GET` or `DELETE` that is not for a session: 405 under 2026-07-28, which
/// has neither, and 400 for a version this endpoint does not speak.
fn sessions_only(headers: &HeaderMap) -> Option<Response> {
    match era(headers) {
        Ok(Some(Era::Stateless)) => Some(jsonrpc_error_response(
            StatusCode::METHOD_NOT_ALLOWED,
            None,
            jsonrpc::INVALID_REQUEST,
            format!("{STATELESS_PROTOCOL_VERSION} has no GET or DELETE on the MCP endpoint"),
        )),
        Ok(_) => None,
        Err(error) => Some(json_response(
            StatusCode::BAD_REQUEST,
            error_object_body(None, &error),
        )),
    }
}

/// The `Mcp-Session-Id` sent, if any. A value that is not visible ASCII names no session.
pub(super) fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(MCP_SESSION_ID)
        .map(|value| value.to_str().unwrap_or(""))
}
