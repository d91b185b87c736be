//! `/api/questions`: servers' questions waiting for a person (`hub::questions`), and answering
//! one.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{ApiError, ApiState, bad_path, json_body, json_ok};
use hub::questions::Action;
use hub::waitlist::NotTaken;

/// `GET /api/questions`: the questions waiting, oldest first.
pub(super) async fn list(State(api): State<ApiState>) -> Response {
    json_ok(&api.hub().questions().waiting())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerRequest {
    action: Action,
    /// With `accept` of a form: the fields, as its schema describes them.
    #[serde(default)]
    content: Option<Map<String, Value>>,
}

/// `POST /api/questions/{id}` with `{"action": "accept"|"decline"|"cancel", "content": {…}}`.
pub(super) async fn answer(
    State(api): State<ApiState>,
    path: Result<Path<u64>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let Path(id) = path.map_err(bad_path)?;
    let request: AnswerRequest = json_body(
        body,
        "{\"action\": \"accept\", \"decline\" or \"cancel\", \"content\": {…}}",
    )?;
    let answered =
        api.hub()
            .questions()
            .answer(id, request.action, request.content, "the dashboard");
    match answered {
        Ok(()) => Ok(json_ok(&serde_json::json!({ "answered": id }))),
        Err(NotTaken::Rejected(why)) => Err(ApiError::BadRequest(format!(
            "this answer does not fit question {id}: {why}"
        ))),
        Err(NotTaken::NotWaiting) => Err(ApiError::NotFound(format!(
            "question {id} is not waiting for an answer: it was answered already, the call it \
             was for ended, or its time ran out"
        ))),
    }
}
