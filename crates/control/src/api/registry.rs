//! `/api/registry`: servers found in the registry sources, added, updated and removed. What runs
//! is always worked out here from the entry itself; a request names only the entry, a version,
//! a source, a server name and the values of the entry's inputs.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::{ApiError, ApiState, bad_path, json_body, json_ok};
use registry::entry::{Record, Status};
use registry::install::{self, AddRequest, InstallError};
use registry::plan::{self, InputSpec};
use registry::{Refresh, Registry, SourceReport};

impl ApiState {
    fn registry(&self) -> Registry {
        let sources = self.inner.config.borrow().registry.sources.clone();
        Registry::new(sources, self.inner.reloader.data_dir())
    }
}

#[derive(Deserialize)]
pub(super) struct SearchQuery {
    #[serde(default)]
    q: String,
    source: Option<String>,
}

/// What `GET /api/registry/search` answers.
#[derive(Serialize)]
struct SearchView {
    entries: Vec<EntryView>,
    sources: Vec<SourceReport>,
}

#[derive(Serialize)]
struct EntryView {
    name: String,
    title: Option<String>,
    description: String,
    version: String,
    status: Status,
    status_message: Option<String>,
    repository: Option<String>,
    website: Option<String>,
    verified: bool,
    source: String,
    packages: Vec<PackageView>,
    remotes: Vec<RemoteView>,
    inputs: Vec<InputSpec>,
    installable: bool,
    why_not: Option<String>,
    added_as: Option<String>,
}

#[derive(Serialize)]
struct PackageView {
    registry_type: String,
    identifier: String,
    version: Option<String>,
    transport: String,
}

#[derive(Serialize)]
struct RemoteView {
    transport: String,
    url: String,
}

fn entry_view(
    record: &Record,
    source: &str,
    verified: bool,
    added: &BTreeMap<String, String>,
) -> EntryView {
    let server = &record.server;
    let choice = plan::choose(server);
    EntryView {
        name: server.name.clone(),
        title: server.title.clone(),
        description: server.description.clone(),
        version: server.version.clone(),
        status: record.status(),
        status_message: record.status_message().map(str::to_owned),
        repository: server
            .repository
            .as_ref()
            .map(|r| r.url.clone())
            .filter(|url| is_web_link(url)),
        website: server.website_url.clone().filter(|url| is_web_link(url)),
        verified,
        source: source.to_owned(),
        packages: server
            .packages
            .iter()
            .map(|p| PackageView {
                registry_type: p.registry_type.clone(),
                identifier: p.identifier.clone(),
                version: p.version.clone(),
                transport: p.transport.kind.clone(),
            })
            .collect(),
        remotes: server
            .remotes
            .iter()
            .map(|r| RemoteView {
                transport: r.kind.clone(),
                url: r.url.clone(),
            })
            .collect(),
        inputs: choice
            .as_ref()
            .map(|choice| plan::inputs(server, *choice))
            .unwrap_or_default(),
        installable: choice.is_ok(),
        why_not: choice.err().map(|why| why.to_string()),
        added_as: added.get(&server.name).cloned(),
    }
}

/// Whether `url` may be offered as a link: an `http` or `https` URL (a source could write a
/// `javascript:` one).
fn is_web_link(url: &str) -> bool {
    reqwest::Url::parse(url).is_ok_and(|url| matches!(url.scheme(), "https" | "http"))
}

/// `GET /api/registry/search?q=&source=`.
pub(super) async fn search(
    State(api): State<ApiState>,
    Query(query): Query<SearchQuery>,
) -> Result<Response, ApiError> {
    let registry = api.registry();
    if let Some(source) = &query.source {
        listed_source(&registry, source)?;
    }
    let loaded = registry
        .load(query.source.as_deref(), Refresh::IfStale)
        .await;
    let added = added_entries(&api, &loaded);
    let entries = loaded
        .search(&query.q)
        .into_iter()
        .map(|(cache, record)| {
            entry_view(
                record,
                &cache.url,
                loaded.is_verified(cache, record),
                &added,
            )
        })
        .collect();
    Ok(json_ok(&SearchView {
        entries,
        sources: loaded.reports,
    }))
}

/// `source` when the config lists it: a request never makes Switchboard read a source the
/// person did not choose, so the entries it adds always come from one they did.
fn listed_source(registry: &Registry, source: &str) -> Result<(), ApiError> {
    match registry.is_source(source) {
        true => Ok(()),
        false => Err(ApiError::BadRequest(format!(
            "{source} is not one of the config's registry sources ([registry] sources)"
        ))),
    }
}

/// The config's servers by the entry each came from.
fn added_entries(api: &ApiState, loaded: &registry::Loaded) -> BTreeMap<String, String> {
    install::installed(api.inner.reloader.path(), loaded, &|_| None)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|installed| Some((installed.entry?, installed.server)))
        .collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AddBody {
    name: String,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    inputs: BTreeMap<String, String>,
    /// The `confirm` of the plan the person said yes to; absent, the plan is only shown.
    #[serde(default)]
    confirm: Option<String>,
}

/// `POST /api/registry/add`: without `confirm`, the plan (what would run, exactly) and
/// nothing written or started; with the `confirm` that plan gave, the server added, provided
/// what adding it would do is still exactly that plan.
pub(super) async fn add(
    State(api): State<ApiState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Response> {
    let body: AddBody = json_body(
        body,
        "{\"name\": \"…\", \"version\", \"source\", \"server\", \"inputs\": {…}, \"confirm\"}",
    )
    .map_err(IntoResponse::into_response)?;
    let registry = api.registry();
    if let Some(source) = &body.source {
        listed_source(&registry, source).map_err(IntoResponse::into_response)?;
    }
    let review = api.inner.config.borrow().registry.review_added;
    let approve_new_tools = api.hub().pins().approves_new();
    let request = AddRequest {
        name: &body.name,
        version: body.version.as_deref(),
        source: body.source.as_deref(),
        server: body.server.as_deref(),
        inputs: body.inputs.clone(),
        config_path: api.inner.reloader.path(),
        data_dir: api.inner.reloader.data_dir(),
        review,
        approve_new_tools,
    };
    let planned = install::plan(&registry, &request)
        .await
        .map_err(install_error)?;
    let Some(confirm) = &body.confirm else {
        return Ok(json_ok(&planned.plan));
    };
    if *confirm != planned.plan.confirm {
        return Err(install_error(InstallError::PlanChanged));
    }
    let added = install::commit(planned, &request)
        .await
        .map_err(install_error)?;
    tracing::info!(server = %added.server, entry = %added.entry, "server added from a registry");
    Ok(applied(&api, &added).await)
}

/// The config as changed, read again now; then `body`.
async fn applied(api: &ApiState, body: &impl Serialize) -> Response {
    api.inner.reloader.reload().await;
    json_ok(body)
}

/// An install error as the API's answer: its status, a stable code, and the inputs missing.
fn install_error(error: InstallError) -> Response {
    #[derive(Serialize)]
    struct Body {
        code: &'static str,
        message: String,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        missing: Vec<String>,
    }
    let message = error.to_string();
    let (status, code, missing) = match error {
        InstallError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found", Vec::new()),
        InstallError::NotInstallable(_) => (StatusCode::BAD_REQUEST, "not_installable", Vec::new()),
        InstallError::MissingInputs(keys) => {
            (StatusCode::BAD_REQUEST, "missing_required_input", keys)
        }
        InstallError::NameTaken(_) => (StatusCode::CONFLICT, "name_taken", Vec::new()),
        InstallError::WouldNotRun(_) => (StatusCode::BAD_REQUEST, "would_not_run", Vec::new()),
        InstallError::Source(_) => (StatusCode::BAD_GATEWAY, "source_failed", Vec::new()),
        InstallError::Refused(_) => (StatusCode::BAD_REQUEST, "refused", Vec::new()),
        InstallError::PlanChanged => (StatusCode::CONFLICT, "plan_changed", Vec::new()),
        InstallError::Write(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "write_failed",
            Vec::new(),
        ),
    };
    let body = Body {
        code,
        message,
        missing,
    };
    transport::guard::json_response(
        status,
        serde_json::to_vec(&body).expect("API bodies always serialize"),
    )
}

/// `GET /api/registry/installed`.
pub(super) async fn installed(State(api): State<ApiState>) -> Response {
    // Answered from the caches at once; stale ones are read again meanwhile, for next time.
    let registry = api.registry();
    let loaded = registry.load(None, Refresh::Never).await;
    tokio::spawn(async move {
        registry.load(None, Refresh::IfStale).await;
    });
    let running = |server: &str| api.backend(server).ok().and_then(|b| b.status().version);
    match install::installed(api.inner.reloader.path(), &loaded, &running) {
        Ok(list) => json_ok(&list),
        Err(error) => install_error(error),
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct UpdateBody {
    #[serde(default)]
    version: Option<String>,
}

/// `POST /api/registry/update/{server}`.
pub(super) async fn update(
    State(api): State<ApiState>,
    path: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Response> {
    let Path(server) = path.map_err(|rejection| bad_path(rejection).into_response())?;
    let body: UpdateBody =
        json_body(body, "{} or {\"version\": \"…\"}").map_err(IntoResponse::into_response)?;
    let registry = api.registry();
    let config = api.inner.reloader.path();
    let updated = install::update(&registry, config, &server, body.version.as_deref())
        .await
        .map_err(install_error)?;
    tracing::info!(server = %updated.server, from = %updated.from, to = %updated.to, "server updated");
    Ok(applied(&api, &updated).await)
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RemoveBody {
    #[serde(default)]
    delete_secrets: Vec<String>,
}

/// `DELETE /api/servers/{server}`.
pub(super) async fn remove(
    State(api): State<ApiState>,
    path: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Response> {
    let Path(server) = path.map_err(|rejection| bad_path(rejection).into_response())?;
    let body: RemoveBody = match body {
        Ok(bytes) if bytes.is_empty() => RemoveBody::default(),
        other => json_body(other, "{\"delete_secrets\": [\"…\"]}")
            .map_err(IntoResponse::into_response)?,
    };
    let reloader = &api.inner.reloader;
    let removed = install::remove(
        reloader.path(),
        reloader.data_dir(),
        &server,
        &body.delete_secrets,
    )
    .await
    .map_err(install_error)?;
    // What sign-in keeps of it in memory goes too (the keychain's copy went with it).
    if let Err(error) = api.auth().sign_out(&server).await {
        tracing::warn!(%server, "its sign-in is not forgotten: {error}");
    }
    tracing::info!(server = %removed.server, "server removed");
    Ok(applied(&api, &removed).await)
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_web_addresses_become_links() {
        assert!(super::is_web_link(
            "https://github.com/modelcontextprotocol/servers"
        ));
        assert!(super::is_web_link("http://example.com/x"));
        for bad in [
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            "data:text/html,x",
            "",
            "//x",
        ] {
            assert!(!super::is_web_link(bad), "{bad}");
        }
    }
}
