//! `/api/profiles`: each profile with what its tool list costs a client, and the dashboard's
//! switches, which turn a server or a tool on or off for a profile by editing the config file
//! (see [`config::edit`]) through [`Reloader::write`](crate::reload::Reloader::write), which
//! writes only a file that applies.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;

use super::{ApiError, ApiState, bad_path, json_ok};
use crate::reload::LeftOutKind;
use config::Format;
use config::edit::{self, Target};

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

/// Turns a server or a tool on or off for a profile: writes the config file and applies it,
/// provided the file as changed would apply, and answers with the reload's outcome and a
/// `message` that says it in words (what changed, what is still left out and why). A change
/// that would not apply is refused (409) and leaves the file as it was.
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
    // A server the file describes but that is left out for its errors stays in a list the
    // switch writes, so that it is offered again once it is fixed.
    let left_out = api.inner.config.borrow().left_out.clone();
    let all_servers: Vec<&str> = servers
        .iter()
        .copied()
        .chain(
            left_out
                .iter()
                .filter(|part| part.kind == LeftOutKind::Server)
                .map(|part| part.name.as_str()),
        )
        .collect();
    let format = Format::of(api.inner.reloader.path());
    let outcome = api
        .inner
        .reloader
        .write(|text| edit::switch(text, format, &profile, &all_servers, target, request.on))
        .await?;
    let mut answer = serde_json::to_value(&outcome).expect("a reload's outcome serializes");
    answer["message"] = outcome.to_string().into();
    Ok(json_ok(&answer))
}
