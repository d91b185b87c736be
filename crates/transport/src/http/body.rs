//! Request bodies: a deadline for the whole body, and reading it under the size limit.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use http_body_util::{BodyExt, LengthLimitError, Limited};

use super::messages::jsonrpc_error_response;
use wire::jsonrpc;

/// A request body that fails once its time to arrive has passed.
pub(super) struct DeadlineBody {
    pub(super) inner: Body,
    pub(super) deadline: Pin<Box<tokio::time::Sleep>>,
    pub(super) limit: Duration,
}

/// The error of a [`DeadlineBody`] that took too long.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {} s", .0.as_secs())]
pub(super) struct BodyTimedOut(Duration);

impl DeadlineBody {
    pub(super) fn new(inner: Body, limit: Duration) -> DeadlineBody {
        DeadlineBody {
            inner,
            deadline: Box::pin(tokio::time::sleep(limit)),
            limit,
        }
    }
}

impl hyper::body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimedOut(self.limit))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// Whether `error`, or an error it wraps, is a body that took too long.
pub(super) fn body_timed_out(error: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(error), |error| error.source())
        .any(|error| error.is::<BodyTimedOut>())
}

/// Reads the body, refusing it past `limit` bytes with 413, and one that takes too long with 408.
pub(super) async fn read_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Bytes, Response> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if let Some(declared) = declared
        && declared > limit as u64
    {
        return Err(too_large(Some(declared), limit));
    }
    match Limited::new(body, limit).collect().await {
        Ok(collected) => {
            let body = collected.to_bytes();
            platform::memory::passed(body.len());
            Ok(body)
        }
        Err(error) if error.downcast_ref::<LengthLimitError>().is_some() => {
            Err(too_large(None, limit))
        }
        Err(error) if body_timed_out(&*error) => Err(jsonrpc_error_response(
            StatusCode::REQUEST_TIMEOUT,
            None,
            jsonrpc::INVALID_REQUEST,
            error.to_string(),
        )),
        Err(error) => Err(jsonrpc_error_response(
            StatusCode::BAD_REQUEST,
            None,
            jsonrpc::INVALID_REQUEST,
            format!("could not read the request body: {error}"),
        )),
    }
}

pub(super) fn too_large(declared: Option<u64>, limit: usize) -> Response {
    let message = match declared {
        Some(size) => format!("request body of {size} bytes exceeds the limit of {limit} bytes"),
        None => format!("request body of undeclared size exceeds the limit of {limit} bytes"),
    };
    jsonrpc_error_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        None,
        jsonrpc::INVALID_REQUEST,
        message,
    )
}
