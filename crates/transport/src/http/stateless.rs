//! 2026-07-28 requests at `/mcp`: each `POST` is self-contained (no session), carries its
//! version, capabilities and method in `params._meta` and mirrors them in `Mcp-*` headers, and is
//! answered as JSON or as an SSE stream of its own.

use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};

use super::messages::ReplyStream;
use super::messages::{accepts, final_response, jsonrpc_error_response, no_response, unparsable};
use super::{MCP_PROTOCOL_VERSION, Shutdown};
use crate::guard::json_response;
use hub::{Hub, Inbound, RequestHeaders, reply};
use wire::era::{code, header};
use wire::jsonrpc::{self, Envelope};
use wire::method::Method;

/// Answers one 2026-07-28 `POST`.
pub(super) async fn post_stateless(
    hub: &Hub,
    profile: &str,
    headers: &HeaderMap,
    body: &[u8],
    envelope: Option<&Envelope<'_>>,
    shutdown: Option<Shutdown>,
) -> Response {
    let Some(envelope) = envelope else {
        if body.iter().find(|byte| !byte.is_ascii_whitespace()) == Some(&b'[') {
            return jsonrpc_error_response(
                StatusCode::BAD_REQUEST,
                None,
                jsonrpc::INVALID_REQUEST,
                "2026-07-28 has no batches: send one request per POST",
            );
        }
        return unparsable(body);
    };
    let listen = envelope.method == Some(Method::SubscriptionsListen);
    let sent = request_headers(headers);
    match hub.receive_stateless_envelope(envelope, Some(&sent), profile) {
        Inbound::Accepted => StatusCode::ACCEPTED.into_response(),
        Inbound::Rejected(error) => json_response(rejection_status(&error), error.to_json()),
        Inbound::Request(reply) => {
            let stream = accepts(headers, "text/event-stream");
            if reply.streamed && stream {
                let stream = ReplyStream {
                    messages: reply.messages,
                    shutdown: shutdown.map(|s| Box::pin(s.0.cancelled_owned())),
                    unanswered: Some(reply.id),
                    activity: None,
                    resumable: None,
                };
                let mut response = Sse::new(stream)
                    .keep_alive(KeepAlive::default())
                    .into_response();
                response.headers_mut().insert(
                    "x-accel-buffering",
                    axum::http::HeaderValue::from_static("no"),
                );
                return response;
            }
            if listen {
                return jsonrpc_error_response(
                    StatusCode::NOT_ACCEPTABLE,
                    Some(&reply.id),
                    jsonrpc::INVALID_REQUEST,
                    "subscriptions/listen answers with an event stream; send Accept: \
                     text/event-stream",
                );
            }
            match final_response(reply.messages, None).await {
                Some(response) => json_response(answer_status(&response), response.to_json()),
                None => json_response(StatusCode::OK, no_response(Some(&reply.id))),
            }
        }
    }
}

/// The `Mcp-*` headers of a request, as they came.
fn request_headers(headers: &HeaderMap) -> RequestHeaders {
    let value = |name: &str| headers.get(name).map(|value| value.as_bytes().to_vec());
    RequestHeaders {
        protocol_version: value(MCP_PROTOCOL_VERSION.as_str()),
        method: value(header::METHOD),
        name: value(header::NAME),
        params: headers
            .iter()
            .filter_map(|(name, value)| {
                let param = name.as_str().strip_prefix(header::PARAM_PREFIX)?;
                Some((param.to_owned(), value.as_bytes().to_vec()))
            })
            .collect(),
    }
}

/// The status of a request refused before it ran: 404 for a method this revision does not
/// have, 400 for the rest (a bad envelope, header or version, or a refused `requestState`).
fn rejection_status(error: &reply::Response) -> StatusCode {
    match error.error_code() {
        Some(jsonrpc::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        _ => StatusCode::BAD_REQUEST,
    }
}

/// The status of a request's answer: 400 for the errors this revision gives that status.
fn answer_status(response: &reply::Response) -> StatusCode {
    match response.error_code() {
        Some(
            code::HEADER_MISMATCH
            | code::MISSING_CLIENT_CAPABILITY
            | code::UNSUPPORTED_PROTOCOL_VERSION,
        ) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}
