//! `/api/pins`: what is held back (tools, prompts, a server's instructions) because it changed, is
//! new, cannot be checked, or its pin file cannot be read, with the definitions to compare, and
//! its approval; `/api/attention`:
//! the list of what needs a person.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;

use super::{ApiError, ApiState, bad_path, json_ok};
use crate::attention;
use hub::pins::ApproveError;

/// `GET /api/pins`: what is held, and the pin files' problems.
pub(super) async fn list(State(api): State<ApiState>) -> Response {
    json_ok(&*api.hub().pins().report())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApproveRequest {
    /// The keys of what is approved (a tool's own name, `prompt:NAME`, or `instructions`);
    /// everything held of the server if absent.
    tools: Option<Vec<String>>,
    /// Each one's `sha256` as the reviewer saw it, by key: one that changed since is refused.
    seen: Option<BTreeMap<String, String>>,
}

/// `POST /api/pins/{server}/approve`, with `{"tools": [KEY, …]}` or nothing for all of them.
pub(super) async fn approve(
    State(api): State<ApiState>,
    path: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let Path(server) = path.map_err(bad_path)?;
    let body = body.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let request = if body.iter().all(u8::is_ascii_whitespace) {
        ApproveRequest {
            tools: None,
            seen: None,
        }
    } else {
        serde_json::from_slice(&body).map_err(|error| {
            ApiError::BadRequest(format!(
                "expected {{\"tools\": [\"NAME\", …], \"seen\": {{\"NAME\": \"SHA-256\"}}}} or no \
                 body: {error}"
            ))
        })?
    };
    let approved = api
        .hub()
        .pins()
        .approve(&server, request.tools.as_deref(), request.seen.as_ref())
        .map_err(|error| match error {
            ApproveError::NotHeld(message) => ApiError::NotFound(message),
            ApproveError::ChangedSince(message) => ApiError::Conflict(message),
        })?;
    Ok(json_ok(&serde_json::json!({ "approved": approved })))
}

/// `GET /api/attention`: what needs a person, most pressing first, each with its action.
pub(super) async fn attention(State(api): State<ApiState>) -> Response {
    let config = api.inner.config.borrow().clone();
    json_ok(&attention::now(
        api.hub(),
        api.engine(),
        &config,
        api.in_use(),
    ))
}
