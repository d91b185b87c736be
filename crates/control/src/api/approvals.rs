//! `/api/approvals`: the calls waiting for a person's yes (`hub::approvals`), and answering one.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;

use super::{ApiError, ApiState, bad_path, json_body, json_ok};
use hub::approvals::Decision;

/// `GET /api/approvals`: the calls waiting, oldest first.
pub(super) async fn list(State(api): State<ApiState>) -> Response {
    json_ok(&api.hub().approvals().waiting())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
enum Answer {
    Allow,
    Deny,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DecideRequest {
    decision: Answer,
    /// With `allow`: the same tool runs for the rest of the editor's session without asking.
    #[serde(default)]
    for_session: bool,
}

/// `POST /api/approvals/{id}` with `{"decision": "allow"|"deny", "for_session": bool}`.
pub(super) async fn decide(
    State(api): State<ApiState>,
    path: Result<Path<u64>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let Path(id) = path.map_err(bad_path)?;
    let request: DecideRequest = json_body(
        body,
        "{\"decision\": \"allow\" or \"deny\", \"for_session\": true or false}",
    )?;
    let by = "the dashboard".to_owned();
    let decision = match request.decision {
        Answer::Allow => Decision::Allow {
            for_session: request.for_session,
            by,
        },
        Answer::Deny => Decision::Deny { by },
    };
    api.hub().approvals().decide(id, decision).map_err(|_| {
        ApiError::NotFound(format!(
            "call {id} is not waiting for an answer: it was answered already, its editor gave it \
             up, or its time ran out"
        ))
    })?;
    Ok(json_ok(&serde_json::json!({ "decided": id })))
}
