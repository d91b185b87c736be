//! `/api/profiles`: each profile with what its tool list costs a client, and the dashboard's
//! switches, which turn a server or a tool on or off for a profile by editing the config file
//! (see [`config::edit`]) and reloading it.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;

use super::{ApiError, ApiState, bad_path, json_ok};
use config::Format;
use config::edit::{self, EditError, Target};

pub(super) async fn profiles(State(api): State<ApiState>) -> Response {
    json_ok(&api.hub().budgets())
}

/// What to turn on or off: a server by name, or a tool by the name the profile gives it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SwitchRequest {
    server: Option<String>,
    tool: Option<String>,
    on: bool,
}

/// Turns a server or a tool on or off for a profile: writes the config file, then reloads it
/// and answers with the reload's outcome.
pub(super) async fn switch(
    State(api): State<ApiState>,
    path: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let Path(profile) = path.map_err(bad_path)?;
    let body = body.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let request: SwitchRequest = serde_json::from_slice(&body)
        .map_err(|error| ApiError::BadRequest(format!("not a switch request: {error}")))?;
    let budgets = api.hub().budgets();
    let budget = budgets
        .iter()
        .find(|budget| budget.profile == profile)
        .ok_or_else(|| ApiError::NotFound(format!("no profile {profile:?} is configured")))?;
    let servers: Vec<&str> = budget
        .server_switches
        .iter()
        .map(|server| server.name.as_str())
        .collect();
    let target = match (&request.server, &request.tool) {
        (Some(server), None) if servers.contains(&server.as_str()) => Target::Server(server),
        (Some(server), None) => {
            return Err(ApiError::NotFound(format!(
                "no server {server:?} is configured"
            )));
        }
        (None, Some(tool)) => {
            let original = budget
                .tool_costs
                .iter()
                .find(|cost| &cost.name == tool)
                .map(|cost| cost.original.as_str())
                .or_else(|| {
                    budget
                        .filtered_out
                        .iter()
                        .find(|switch| &switch.name == tool)
                        .and_then(|switch| switch.original.as_deref())
                })
                .ok_or_else(|| {
                    ApiError::NotFound(format!("profile {profile} has no tool {tool:?}"))
                })?;
            Target::Tool {
                exposed: tool,
                original,
            }
        }
        _ => {
            return Err(ApiError::BadRequest(
                "name either a server or a tool, with `on`".to_owned(),
            ));
        }
    };
    let reloader = &api.inner.reloader;
    let config = reloader.path().to_owned();
    let text = std::fs::read_to_string(&config).map_err(|error| {
        ApiError::Conflict(format!("cannot read {}: {error}", config.display()))
    })?;
    let edited = edit::switch(
        &text,
        Format::of(&config),
        &profile,
        &servers,
        target,
        request.on,
    )
    .map_err(|error| match error {
        EditError::Shape(_) | EditError::Pattern(_) => ApiError::Conflict(error.to_string()),
    })?;
    platform::atomic::write_keeping_permissions(&config, edited.as_bytes()).map_err(|error| {
        ApiError::Conflict(format!("cannot write {}: {error}", config.display()))
    })?;
    Ok(json_ok(&reloader.reload().await))
}
