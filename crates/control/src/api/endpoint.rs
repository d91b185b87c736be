//! `POST /api/endpoint/require-token`: the one action that closes `/mcp` to other programs for a
//! config from before its token. It gives every editor entry that reaches `/mcp` the token
//! Switchboard generates (each file backed up first), then writes `require_token = true` into
//! the config and applies it, which makes `/mcp` require the token at once; when the config as
//! changed would not apply, it changes nothing at all. Editors come first: an entry that carries
//! a token `/mcp` does not ask for yet still works.

use axum::extract::State;
use axum::response::Response;
use serde::Serialize;

use super::{ApiError, ApiState, json_ok};
use crate::reload::ReloadOutcome;
use config::{EndpointConfig, Format, edit};
use editors::{Editor, EntriesUpdate, update_entries};

/// What requiring the token did: the config's reload, and the editors' files given the token
/// or not.
#[derive(Serialize)]
struct TokenRollout {
    reload: ReloadOutcome,
    /// The editors' files that now carry the token.
    updated: Vec<Updated>,
    /// The editors whose file could not be read or written, with why.
    failed: Vec<Failure>,
}

#[derive(Serialize)]
struct Updated {
    /// The editor's name, as people know it.
    title: &'static str,
    #[serde(flatten)]
    update: EntriesUpdate,
}

#[derive(Serialize)]
struct Failure {
    title: &'static str,
    message: String,
}

pub(super) async fn require_token(State(api): State<ApiState>) -> Result<Response, ApiError> {
    let reloader = &api.inner.reloader;
    let config = reloader.path().to_owned();
    if Format::of(&config) == Format::Json {
        return Err(ApiError::Conflict(format!(
            "{} is in the JSON form, which has no [endpoint]: move it to a TOML config to \
             require a token",
            config.display()
        )));
    }
    // The editors are given the token only if the config as changed would apply.
    reloader.check(edit::require_token)?;
    let endpoint = EndpointConfig {
        require_token: Some(true),
        ..EndpointConfig::default()
    };
    let token = transport::token::endpoint_token(
        &endpoint,
        reloader.data_dir(),
        transport::token::Missing::Make,
    )
    .map_err(|error| ApiError::Write(error.to_string()))?;
    let mut destination = api.destination();
    destination.token = token;
    let (mut updated, mut failed) = (Vec::new(), Vec::new());
    for editor in Editor::ALL {
        // A file macOS guards is Claude Desktop's, whose entry launches `connect`: nothing to do.
        let Ok(location) = editor.location() else {
            continue;
        };
        if location.guarded {
            continue;
        }
        match update_entries(editor, &location.path, &destination) {
            Ok(Some(update)) => updated.push(Updated {
                title: editor.title(),
                update,
            }),
            Ok(None) => {}
            Err(error) => failed.push(Failure {
                title: editor.title(),
                message: error.to_string(),
            }),
        }
    }
    let reload = reloader.write(edit::require_token).await?;
    tracing::info!(
        editors = updated.len(),
        "/mcp's token turned on from the dashboard"
    );
    Ok(json_ok(&TokenRollout {
        reload,
        updated,
        failed,
    }))
}
