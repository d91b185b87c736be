//! `/api/clients`: how each editor reaches Switchboard, and installing that entry into an
//! editor's own config.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::{ApiError, ApiState, bad_path, json_ok};
use crate::editors::{self, Editor, EditorError, InstallRequest};
use crate::guard::ErrorResponse;

pub(super) async fn clients(State(api): State<ApiState>) -> Response {
    json_ok(&editors::client_setups(&api.inner.destination))
}

/// `POST /api/clients/{editor}/install`: writes the entry that points the editor (an id of
/// `/api/clients`) at this Switchboard into the editor's own config, after a backup, as
/// `switchboard install` does. The answer is the [`editors::InstallReport`] plus a `message`.
pub(super) async fn install_client(
    State(api): State<ApiState>,
    path: Result<Path<String>, PathRejection>,
) -> Response {
    let id = match path {
        Ok(Path(id)) => id,
        Err(rejection) => return bad_path(rejection).into_response(),
    };
    let Some(editor) = Editor::from_client_id(&id) else {
        return ApiError::NotFound(format!(
            "Switchboard cannot install itself into {id:?}; paste its snippet instead"
        ))
        .into_response();
    };
    let destination = api.inner.destination.clone();
    let request = move || {
        editors::install(InstallRequest {
            editor,
            to: None,
            destination: &destination,
            dry_run: false,
        })
    };
    let error = match tokio::task::spawn_blocking(request).await {
        Ok(Ok(report)) => {
            tracing::info!(
                editor = editor.client_id(),
                path = %report.path.display(),
                outcome = ?report.outcome,
                "installed through the control API"
            );
            let mut body =
                serde_json::to_value(&report).expect("an install report always serializes");
            body["message"] = report.to_string().trim_end().into();
            return json_ok(&body);
        }
        Ok(Err(error)) => error,
        Err(panicked) => {
            return ErrorResponse::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "install_failed",
                format!("the install stopped: {panicked}"),
            )
            .into_response();
        }
    };
    tracing::info!(editor = editor.client_id(), %error, "install through the control API failed");
    let (status, code) = match error {
        // The file is there but cannot be edited as it is: the person has to fix it.
        EditorError::Invalid { .. } | EditorError::Unsupported { .. } => {
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_editor_config")
        }
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "install_failed"),
    };
    ErrorResponse::new(status, code, error.to_string()).into_response()
}
