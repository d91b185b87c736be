//! `/api/secrets`: the secrets the config names as `${secret:NAME}`, kept in the OS keychain.
//! Write-only: names go out, values only come in. A change makes Switchboard read its config
//! again, so the servers using that secret restart with it.

use std::collections::BTreeSet;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::response::Response;
use serde::{Deserialize, Serialize};

use super::{ApiError, ApiState, bad_path, json_ok};
use platform::secrets::{Keychain, SecretError};

/// What `GET /api/secrets` answers.
#[derive(Serialize)]
struct SecretsView {
    /// Why the keychain cannot be used, if it cannot: one plain sentence, what this system
    /// needs (the platform's own words are in the log).
    unavailable: Option<String>,
    /// Every secret the keychain holds for Switchboard, and every one the config names.
    secrets: Vec<SecretView>,
}

#[derive(Serialize)]
struct SecretView {
    name: String,
    /// Whether the keychain holds it.
    set: bool,
    /// Whether the config names it.
    used: bool,
}

pub(super) async fn list(State(api): State<ApiState>) -> Response {
    let used = platform::secrets::referenced_names(
        &std::fs::read_to_string(api.inner.reloader.path()).unwrap_or_default(),
    );
    let kept = tokio::task::spawn_blocking(|| Keychain::secrets().names())
        .await
        .expect("the keychain call does not panic");
    let (kept, unavailable) = match kept {
        Ok(kept) => (kept, None),
        Err(SecretError::Unavailable(unreachable)) => {
            unreachable.log_cause();
            (BTreeSet::new(), Some(sentence(&unreachable.to_string())))
        }
        Err(error) => (BTreeSet::new(), Some(sentence(&error.to_string()))),
    };
    let secrets = kept
        .union(&used)
        .map(|name| SecretView {
            name: name.clone(),
            set: kept.contains(name),
            used: used.contains(name),
        })
        .collect();
    json_ok(&SecretsView {
        unavailable,
        secrets,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetRequest {
    value: String,
}

/// `PUT /api/secrets/{name}` with `{"value": …}`.
pub(super) async fn set(
    State(api): State<ApiState>,
    path: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let Path(name) = path.map_err(bad_path)?;
    let body = body.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let SetRequest { value } = serde_json::from_slice(&body)
        .map_err(|error| ApiError::BadRequest(format!("expected {{\"value\": \"…\"}}: {error}")))?;
    if value.is_empty() {
        return Err(ApiError::BadRequest("the value is empty".to_owned()));
    }
    let key = name.clone();
    keychain(move || Keychain::secrets().set(&key, &value)).await?;
    tracing::info!(secret = %name, "secret set through the control API");
    Ok(json_ok(&api.inner.reloader.reload().await))
}

/// `DELETE /api/secrets/{name}`.
pub(super) async fn delete(
    State(api): State<ApiState>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path(name) = path.map_err(bad_path)?;
    let key = name.clone();
    if !keychain(move || Keychain::secrets().delete(&key)).await? {
        return Err(ApiError::NotFound(format!(
            "the keychain holds no secret {name}"
        )));
    }
    tracing::info!(secret = %name, "secret deleted through the control API");
    Ok(json_ok(&api.inner.reloader.reload().await))
}

/// `text` as a sentence on its own: its first letter a capital, a full stop at its end.
fn sentence(text: &str) -> String {
    let mut characters = text.chars();
    let first = characters
        .next()
        .map(|first| first.to_uppercase().collect::<String>());
    format!("{}{}.", first.unwrap_or_default(), characters.as_str())
}

/// Runs a keychain call off the async threads; its errors as the API's.
async fn keychain<T: Send + 'static>(
    call: impl FnOnce() -> Result<T, SecretError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(call)
        .await
        .expect("the keychain call does not panic")
        .map_err(|error| match error {
            SecretError::BadName(_) => ApiError::BadRequest(error.to_string()),
            SecretError::Unavailable(_) | SecretError::NotText(_) => {
                ApiError::Conflict(error.to_string())
            }
        })
}
