//! The hub's own answers, in both eras: what it says of itself (`initialize`, `server/discover`,
//! its capabilities, name and instructions), the lists it answers from the merged catalog and
//! from its backends' tasks, and the errors that are its own (a cursor it never gave out, a
//! version it does not speak, a method an era lacks). `session.rs` and `stateless/` route each
//! request to one of these or to a backend; what they answer is made here.

use std::sync::Arc;

use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::capabilities::ready_with;
use super::cold_start::{self, Waiting};
use super::reply::{Reply, invalid_params};
use super::rewrite::ObjectEntries;
use super::session::Session;
use super::{HubInner, response};
use wire::era::{SESSION_PROTOCOL_VERSIONS, STATELESS_PROTOCOL_VERSION, TASKS_EXTENSION, code};
use wire::jsonrpc::{self, ErrorObject};
use wire::method::Method;
use wire::skills::SKILLS_EXTENSION;

/// What an answer is made of.
pub(super) enum Needs {
    /// The backends' published statuses (their instructions).
    Statuses,
    /// The merged catalog, which follows the statuses by a rebuild.
    Catalog,
}

/// `answer` at once unless backends nothing is known of are still starting (or, for an answer
/// from the catalog, a rebuild is due): then once they are ready (or have failed), so that the
/// first `initialize` and list are whole (see [`cold_start`]).
pub(super) fn when_settled(
    hub: &Arc<HubInner>,
    id: &RawValue,
    reply: &mpsc::UnboundedSender<Reply>,
    needs: Needs,
    answer: impl FnOnce(&HubInner) -> Result<String, ErrorObject> + Send + 'static,
) -> Option<Result<String, ErrorObject>> {
    let ready = match needs {
        Needs::Statuses => cold_start::starting(hub, &Waiting::All).is_empty(),
        Needs::Catalog => cold_start::settled(hub, &Waiting::All),
    };
    if ready {
        return Some(answer(hub));
    }
    let starting = cold_start::starting(hub, &Waiting::All);
    let (hub, id, reply) = (hub.clone(), id.to_owned(), reply.clone());
    tokio::spawn(async move {
        cold_start::settle(&hub, starting).await;
        let _ = reply.send(response(&id, answer(&hub)));
    });
    None
}

/// What the hub answers `initialize` with: its own capabilities and instructions.
pub(super) fn initialize_result(hub: &HubInner, profile: &str, version: &str) -> String {
    let mut capabilities = capabilities();
    capabilities["tasks"] =
        serde_json::json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } });
    with_skills(hub, profile, &mut capabilities);
    serde_json::json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "serverInfo": server_info(),
        "instructions": instructions(hub, profile),
    })
    .to_string()
}

/// What `server/discover` answers: the versions and capabilities of the endpoint (the Tasks
/// extension while a backend of `profile` offers it), and the merged instructions.
pub(super) fn discover_result(hub: &HubInner, profile: &str) -> String {
    let mut capabilities = capabilities();
    let with_tasks = hub.engine.backends().iter().any(|backend| {
        hub.offers(profile, backend.name()) && ready_with(backend, &["extensions", TASKS_EXTENSION])
    });
    if with_tasks {
        capabilities["extensions"] = serde_json::json!({ TASKS_EXTENSION: {} });
    }
    with_skills(hub, profile, &mut capabilities);
    serde_json::json!({
        "supportedVersions": supported_versions(),
        "capabilities": capabilities,
        "instructions": instructions(hub, profile),
    })
    .to_string()
}

/// What the endpoint offers in both eras (the session era adds its tasks).
fn capabilities() -> serde_json::Value {
    serde_json::json!({
        "tools": { "listChanged": true },
        "prompts": { "listChanged": true },
        "resources": { "subscribe": true, "listChanged": true },
        "logging": {},
        "completions": {},
    })
}

/// `capabilities` with the Skills extension when a server of `profile` lists skills.
fn with_skills(hub: &HubInner, profile: &str, capabilities: &mut serde_json::Value) {
    if !hub.catalog(profile).skills.is_empty() {
        capabilities["extensions"][SKILLS_EXTENSION] = serde_json::json!({});
    }
}

/// Switchboard's name and version, as it gives them to editors.
pub(super) fn server_info() -> serde_json::Value {
    serde_json::json!({ "name": "switchboard", "title": "Switchboard", "version": env!("CARGO_PKG_VERSION") })
}

/// A word on names, then the instructions of every server of `profile` that gave some (and
/// whose instructions are not held back, see `pins`), one section each.
fn instructions(hub: &HubInner, profile: &str) -> String {
    let backends: Vec<_> = hub
        .engine
        .backends()
        .into_iter()
        .filter(|backend| hub.offers(profile, backend.name()))
        .collect();
    let mut instructions = String::from(
        "Switchboard offers the tools, prompts and resources of several MCP servers; tool and \
         prompt names are prefixed with the server's name and two underscores",
    );
    let unprefixed: Vec<&str> = backends
        .iter()
        .filter(|backend| backend.config().prefix.is_empty())
        .map(|backend| backend.name())
        .collect();
    match unprefixed.as_slice() {
        [] => instructions.push('.'),
        names => instructions.push_str(&format!(
            ", but those of {} keep their own names.",
            names.join(", ")
        )),
    }
    for backend in backends {
        let status = backend.status();
        let Some(text) = status
            .server
            .as_ref()
            .and_then(|server| server.instructions.as_deref())
            .filter(|text| !text.trim().is_empty())
        else {
            continue;
        };
        // Instructions that changed since they were approved stay out until approved again.
        if !hub.pins.vet_instructions(backend.name(), text) {
            continue;
        }
        let text = text.trim();
        let name = backend.name();
        let names = match super::names::exposed_prefix(&backend.config().prefix) {
            prefix if prefix.is_empty() => "whose names are its own".to_owned(),
            prefix => format!("whose names start with `{prefix}`"),
        };
        instructions.push_str(&format!(
            "\n\n## {name}\nFrom the server {name}, {names}:\n{text}"
        ));
    }
    instructions
}

/// Answers a list method from the merged catalog, once no backend it waits for is starting;
/// `views`: for an editor that renders MCP Apps' views.
pub(super) fn list(
    hub: &Arc<HubInner>,
    profile: &str,
    views: bool,
    id: &RawValue,
    method: &Method,
    params: Option<&RawValue>,
    reply: &mpsc::UnboundedSender<Reply>,
) -> Option<Result<String, ErrorObject>> {
    if let Err(error) = single_page(params) {
        return Some(Err(error));
    }
    let method = method.clone();
    let profile = profile.to_owned();
    when_settled(hub, id, reply, Needs::Catalog, move |hub| {
        Ok(list_result(hub, &profile, &method, views))
    })
}

/// The merged list a list method answers with; `views`: for an editor that renders MCP Apps'
/// views.
pub(super) fn list_result(hub: &HubInner, profile: &str, method: &Method, views: bool) -> String {
    let catalog = hub.catalog(profile);
    match method {
        Method::ToolsList => catalog.tools_list(views).text(),
        Method::PromptsList => catalog.prompts_result.text(),
        Method::ResourcesList => catalog.resources_result.clone(),
        _ => catalog.templates_result.clone(),
    }
}

/// The answer to `skills/list` (one page) or `skills/get`, from the merged catalog, once no
/// backend it waits for is starting; `finish` makes it what the era answers.
pub(super) fn skills(
    hub: &Arc<HubInner>,
    profile: &str,
    id: &RawValue,
    method: &Method,
    params: Option<&RawValue>,
    reply: &mpsc::UnboundedSender<Reply>,
    finish: fn(String) -> String,
) -> Option<Result<String, ErrorObject>> {
    if *method == Method::SkillsList
        && let Err(error) = single_page(params)
    {
        return Some(Err(error));
    }
    let (profile, method) = (profile.to_owned(), method.clone());
    let params = params.map(ToOwned::to_owned);
    when_settled(hub, id, reply, Needs::Catalog, move |hub| {
        let answer = hub
            .catalog(&profile)
            .skills
            .answer(&method, params.as_deref());
        answer.map(finish)
    })
}

/// `tasks/list`: the tasks `session` made, of the servers its profile offers. Each such ready
/// backend that lists tasks is asked, and the tasks of the session kept from their lists, each
/// with its id exposed (see [`ids`](super::tasks::ids)). A backend that fails to answer is left
/// out of the list rather than failing it.
pub(super) fn list_tasks(
    hub: &Arc<HubInner>,
    session: &Session,
    id: &RawValue,
    params: Option<&RawValue>,
    reply: &mpsc::UnboundedSender<Reply>,
) -> Option<Result<String, ErrorObject>> {
    if let Err(error) = single_page(params) {
        return Some(Err(error));
    }
    let listing: Vec<_> = hub
        .engine
        .backends()
        .into_iter()
        .filter(|backend| {
            hub.offers(session.profile(), backend.name()) && ready_with(backend, &["tasks", "list"])
        })
        .collect();
    let (hub, session) = (hub.clone(), session.clone());
    let (id, reply) = (id.to_owned(), reply.clone());
    tokio::spawn(async move {
        let mut all = Vec::new();
        for backend in listing {
            let method = Method::TasksList;
            let answer = match backend.request(&method, None).await {
                Ok(answer) => answer,
                Err(error) => {
                    tracing::debug!(backend = backend.name(), %error, "{method}");
                    continue;
                }
            };
            let Some(tasks) = ObjectEntries::parse(answer.get())
                .ok()
                .and_then(|answer| answer.get("tasks").map(|tasks| tasks.get().to_owned()))
            else {
                continue;
            };
            let exposer = hub.task_seal.exposer(session.task_owner(), backend.name());
            let made = exposer.made_list(&tasks, &session.lock_state().made_tasks);
            all.extend(made.unwrap_or_default());
        }
        let result = format!(r#"{{"tasks":[{}]}}"#, all.join(","));
        let _ = reply.send(response(&id, Ok(result)));
    });
    None
}

/// Every list is sent in one page: a cursor we never gave out is an error.
pub(super) fn single_page(params: Option<&RawValue>) -> Result<(), ErrorObject> {
    let has_cursor = params
        .and_then(|params| ObjectEntries::parse(params.get()).ok())
        .is_some_and(|params| {
            params
                .get("cursor")
                .is_some_and(|cursor| cursor.get() != "null")
        });
    if has_cursor {
        return Err(invalid_params(
            "invalid cursor: the whole list is sent in one page",
        ));
    }
    Ok(())
}

/// Every version the endpoint speaks, newest first.
fn supported_versions() -> Vec<&'static str> {
    let mut versions = vec![STATELESS_PROTOCOL_VERSION];
    versions.extend(SESSION_PROTOCOL_VERSIONS);
    versions
}

/// The error for a request in a version this endpoint does not speak.
pub fn unsupported_version(requested: &str) -> ErrorObject {
    let supported = supported_versions();
    ErrorObject {
        code: code::UNSUPPORTED_PROTOCOL_VERSION,
        message: format!(
            "unsupported protocol version {}; this endpoint speaks {}",
            wire::echo(requested),
            supported.join(", ")
        ),
        data: Some(Box::new(serde_json::json!({
            "supported": supported,
            "requested": requested,
        }))),
    }
}

/// An error answered with HTTP 404: the method does not exist in this revision.
pub(super) fn not_found(message: String) -> ErrorObject {
    ErrorObject::new(jsonrpc::METHOD_NOT_FOUND, message)
}

/// The -32021 error for a task request, or a listen for tasks, that does not declare the Tasks
/// extension.
pub(super) fn tasks_extension_missing(what: &str) -> ErrorObject {
    ErrorObject {
        code: code::MISSING_CLIENT_CAPABILITY,
        message: format!("{what} needs the {TASKS_EXTENSION} extension, which was not declared"),
        data: Some(Box::new(serde_json::json!({
            "requiredCapabilities": { "extensions": { TASKS_EXTENSION: {} } },
        }))),
    }
}
