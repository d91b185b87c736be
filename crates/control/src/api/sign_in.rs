//! Signing in to remote servers from the dashboard, and the callback the browser comes back to:
//! `POST /api/backends/{name}/sign-in` answers the URL to open; `GET /oauth/callback/{server}`
//! (a path per authorization server) finishes the sign-in and starts the server; `POST /api/backends/{name}/sign-out` forgets its tokens.

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;

use super::{ApiError, ApiState, bad_path, html_page, json_ok};
use auth::{AuthError, CallbackQuery};
use config::{Launch, RemoteServer};

/// `POST /api/backends/{name}/sign-in`: where to send the browser.
pub(super) async fn begin(
    State(api): State<ApiState>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path(name) = path.map_err(bad_path)?;
    let server = remote_server(&api, &name)?;
    let url = api
        .auth()
        .begin_sign_in(&name, &server)
        .await
        .map_err(|error| match error {
            AuthError::NoBrowser(message) => ApiError::BadRequest(message),
            error => ApiError::Backend(format!("cannot sign in to {name}: {error}")),
        })?;
    tracing::info!(backend = %name, "sign-in started");
    #[derive(Serialize)]
    struct Started {
        url: String,
    }
    Ok(json_ok(&Started { url }))
}

/// `POST /api/backends/{name}/sign-out`: forgets the server's tokens and restarts it, so that it
/// asks for a sign-in again.
pub(super) async fn sign_out(
    State(api): State<ApiState>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path(name) = path.map_err(bad_path)?;
    remote_server(&api, &name)?;
    api.auth()
        .sign_out(&name)
        .await
        .map_err(|error| ApiError::Conflict(error.to_string()))?;
    tracing::info!(backend = %name, "signed out");
    // The restart ends in "needs sign-in": that is the point, not an error of this request.
    let _ = api.backend(&name)?.restart().await;
    #[derive(Serialize)]
    struct Done {
        ok: bool,
    }
    Ok(json_ok(&Done { ok: true }))
}

/// `GET /oauth/callback/{server}`: the browser's return from the authorization server whose
/// path it is.
pub(super) async fn callback(
    State(api): State<ApiState>,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<CallbackQuery>, QueryRejection>,
) -> Response {
    let (Ok(Path(server)), Ok(Query(query))) = (path, query) else {
        return html_page(
            StatusCode::BAD_REQUEST,
            "This is not a sign-in answer Switchboard can read.",
        );
    };
    match api.auth().complete_sign_in(&server, &query).await {
        Ok(backend) => {
            // Started in the background: the page need not wait for the handshake.
            if let Some(handle) = api.engine().backend(&backend) {
                tokio::spawn(async move {
                    if let Err(error) = handle.start().await {
                        tracing::warn!(backend = handle.name(), %error, "start after sign-in failed");
                    }
                });
            }
            html_page(
                StatusCode::OK,
                &format!(
                    "Signed in to <b>{}</b>. Switchboard is connecting to it; you can close this \
                     tab.",
                    escape(&backend)
                ),
            )
        }
        Err(error) => {
            tracing::warn!("a sign-in failed: {error}");
            let status = match error {
                AuthError::Callback(_) => StatusCode::BAD_REQUEST,
                _ => StatusCode::BAD_GATEWAY,
            };
            html_page(
                status,
                &format!(
                    "The sign-in did not complete: {}",
                    escape(&error.to_string())
                ),
            )
        }
    }
}

/// The settings of `name`, which must be a remote server.
fn remote_server(api: &ApiState, name: &str) -> Result<RemoteServer, ApiError> {
    let config = api.backend(name)?.config();
    match &config.launch {
        Launch::Remote(server) => Ok(server.clone()),
        Launch::Process(_) => Err(ApiError::BadRequest(format!(
            "{name} is a local server; only remote servers are signed in to"
        ))),
    }
}

/// `text` safe inside HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
