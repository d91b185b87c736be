//! `/api/clients`: how each editor reaches Switchboard, and installing that entry into an
//! editor's own config.

use std::path::PathBuf;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::{ApiError, ApiState, bad_path, json_ok};
use config::Launch;
use editors::{Editor, EditorError, InstallRequest, MoveReport, MoveRequest, UndoRequest};
use transport::guard::ErrorResponse;

pub(super) async fn clients(State(api): State<ApiState>) -> Response {
    json_ok(&editors::client_setups(&api.destination()))
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
    let destination = api.destination();
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
                outcome = report.outcome.as_str(),
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

/// One detected editor as the dashboard's move buttons and first-run view see it.
#[derive(Serialize)]
struct EditorMove {
    id: &'static str,
    title: &'static str,
    /// What a move would do now; `None` when the editor's file cannot be read (see `error`) or
    /// there is none.
    preview: Option<MoveReport>,
    error: Option<String>,
    /// Why its file was not read (macOS asks the person first): read it with `?read=ID`.
    not_read: Option<String>,
    /// Whether its last move can be undone.
    undo: bool,
}

/// `GET /api/clients/moves?read=ID`: the editor whose guarded file the person asked to read.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct MovesQuery {
    read: Option<String>,
}

/// What `GET /api/clients/moves` answers.
#[derive(Serialize)]
struct Moves {
    /// No server of the person's own runs yet: only the built-in demo server, or none.
    first_run: bool,
    editors: Vec<EditorMove>,
}

/// `GET /api/clients/moves`: for each editor found on this machine, what moving it over would
/// do (entries moved, duplicates taken out, entries that stay and why, both diffs, the file's
/// fingerprint), and whether a move can be undone. A file macOS guards (another app's, under
/// `~/Library`) is read only for the editor `read` names: the person clicked for it.
pub(super) async fn moves(
    State(api): State<ApiState>,
    query: Result<Query<MovesQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let asked = query.read.as_deref().map(editor_by_id).transpose()?;
    let config_path = api.inner.reloader.path().to_path_buf();
    let destination = api.destination();
    let first_run = api.engine().backends().iter().all(|backend| {
        let config = backend.config();
        matches!(&config.launch, Launch::Process(process)
            if process.command == destination.exe && process.args == ["demo-server"])
    });
    let records = records();
    let editors = tokio::task::spawn_blocking(move || {
        Editor::ALL
            .into_iter()
            .filter(|editor| editor.detected() || editors::can_undo(&records, *editor))
            .map(|editor| {
                let location = editor.location().ok();
                if let Some(location) = location.filter(|at| at.guarded && asked != Some(editor)) {
                    return EditorMove {
                        id: editor.client_id(),
                        title: editor.title(),
                        preview: None,
                        error: None,
                        not_read: Some(format!(
                            "macOS asks you before Switchboard reads another app's files: {} \
                             has not been read yet",
                            location.path.display()
                        )),
                        undo: editors::can_undo(&records, editor),
                    };
                }
                let preview = editors::move_editor(MoveRequest {
                    editor,
                    from: None,
                    config_path: &config_path,
                    exe: &destination.exe,
                    destination: &destination,
                    dry_run: true,
                    keep_originals: false,
                    move_secrets: false,
                    sandbox: false,
                    only_duplicates: false,
                    records: &records,
                    expect: None,
                });
                let (preview, error) = match preview {
                    Ok(preview) => (Some(preview), None),
                    Err(EditorError::NotFound { .. }) => (None, None),
                    Err(error) => (None, Some(error.to_string())),
                };
                EditorMove {
                    id: editor.client_id(),
                    title: editor.title(),
                    preview,
                    error,
                    not_read: None,
                    undo: editors::can_undo(&records, editor),
                }
            })
            .collect::<Vec<_>>()
    })
    .await
    .expect("previews do not panic");
    Ok(json_ok(&Moves { first_run, editors }))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct MoveBody {
    /// The fingerprint of the preview the person saw: refused if the file changed since.
    fingerprint: Option<String>,
    #[serde(default)]
    keep_originals: bool,
    #[serde(default)]
    only_duplicates: bool,
    /// Give each server moved a first sandbox.
    #[serde(default)]
    sandbox: bool,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct UndoBody {
    #[serde(default)]
    force: bool,
}

/// `POST /api/clients/{editor}/move`: moves the editor over as `switchboard move` does, then
/// reads the config again. The answer is the [`MoveReport`] plus a `message`.
pub(super) async fn move_client(
    State(api): State<ApiState>,
    path: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let editor = editor_of(path)?;
    let body: MoveBody = json_body(body)?;
    let config_path = api.inner.reloader.path().to_path_buf();
    let destination = api.destination();
    let report = tokio::task::spawn_blocking(move || {
        editors::move_editor(MoveRequest {
            editor,
            from: None,
            config_path: &config_path,
            exe: &destination.exe,
            destination: &destination,
            dry_run: false,
            keep_originals: body.keep_originals,
            move_secrets: false,
            sandbox: body.sandbox,
            only_duplicates: body.only_duplicates,
            records: &records(),
            expect: body.fingerprint.as_deref(),
        })
    })
    .await
    .expect("a move does not panic")
    .map_err(editor_error)?;
    tracing::info!(
        editor = editor.client_id(),
        "moved over through the control API"
    );
    api.inner.reloader.reload().await;
    let mut answer = serde_json::to_value(&report).expect("a move report serializes");
    answer["message"] = report.to_string().trim_end().into();
    Ok(json_ok(&answer))
}

/// `POST /api/clients/{editor}/undo`: undoes the editor's last move as `switchboard move
/// EDITOR --undo` does (`{"force": true}` even if the file changed since), then reads the
/// config again.
pub(super) async fn undo_client(
    State(api): State<ApiState>,
    path: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let editor = editor_of(path)?;
    let body: UndoBody = json_body(body)?;
    let config_path = api.inner.reloader.path().to_path_buf();
    let report = tokio::task::spawn_blocking(move || {
        editors::undo_move(UndoRequest {
            editor,
            config_path: &config_path,
            records: &records(),
            force: body.force,
        })
    })
    .await
    .expect("an undo does not panic")
    .map_err(editor_error)?;
    tracing::info!(
        editor = editor.client_id(),
        "move undone through the control API"
    );
    api.inner.reloader.reload().await;
    let mut answer = serde_json::to_value(&report).expect("an undo report serializes");
    answer["message"] = report.to_string().trim_end().into();
    Ok(json_ok(&answer))
}

/// Where the records that undo moves are kept.
fn records() -> PathBuf {
    platform::dirs::data_dir().join("moves")
}

fn editor_of(path: Result<Path<String>, PathRejection>) -> Result<Editor, ApiError> {
    let Path(id) = path.map_err(bad_path)?;
    editor_by_id(&id)
}

fn editor_by_id(id: &str) -> Result<Editor, ApiError> {
    Editor::from_client_id(id)
        .ok_or_else(|| ApiError::NotFound(format!("Switchboard does not know the editor {id:?}")))
}

/// The body as JSON of type `T`; an empty body is `T`'s default.
fn json_body<T: serde::de::DeserializeOwned + Default>(
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let body = body.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(&body).map_err(|error| ApiError::BadRequest(error.to_string()))
}

/// An editor error as the API's: a file that changed or cannot be edited is a conflict the
/// person resolves.
fn editor_error(error: EditorError) -> ApiError {
    match error {
        EditorError::NothingToUndo { .. } | EditorError::NotFound { .. } => {
            ApiError::NotFound(error.to_string())
        }
        EditorError::ChangedSinceMove { .. }
        | EditorError::Invalid { .. }
        | EditorError::Unsupported { .. } => ApiError::Conflict(error.to_string()),
        _ => ApiError::Write(error.to_string()),
    }
}
