//! The opening of a backend's connection and the discovery of its catalog, list by list and page
//! by page (a list the server declares and answers with "method not found" is empty, with a note).
//!
//! The era tried first is the one the config's `protocol` names, and then no other; else the era
//! the same command was last found to speak (`EraVerdicts`, in memory); else, for a remote server,
//! the stateless era, since over HTTP a `server/discover` a server does not know leaves nothing
//! behind, and a server of both eras then gives stateless-era editors all it offers that era; and
//! for a child's stdio the session era, since the first request fixes a pipe's era and some
//! servers stop at any request before `initialize`. A `server/discover` answered with an error
//! other than "unsupported protocol version" falls back to `initialize`; an `initialize` answered
//! with that error naming the stateless version goes on to `server/discover`.
//!
//! Stateless-era backends get the `_meta` envelope in every request, and one
//! `subscriptions/listen` that stays open for their list changes and for the resources editors
//! want updates of (`keep_listening`). An opening request's timeout counts from when it is sent
//! or, behind a package runner, from when the runner starts the server (`OpeningClock`).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::rpc::{Connection, MetaEnvelope, RpcError};
use crate::runner::INSTALL_TIMEOUT;
use crate::status::{Catalog, ServerDescription};
use crate::subscriptions::Subscriptions;
use config::{Ask, BackendConfig, Launch, Protocol};
use wire::apps;
use wire::era::{Era, STATELESS_PROTOCOL_VERSION, code};
use wire::jsonrpc::{self, ErrorObject};
use wire::meta;
use wire::method::Method;
use wire::skills::SKILLS_EXTENSION;

/// The session-era protocol versions Switchboard speaks with backends, newest first.
pub use wire::era::SESSION_PROTOCOL_VERSIONS as SUPPORTED_PROTOCOL_VERSIONS;
const MAX_LIST_PAGES: usize = 1000;
const DISCOVER: Method = Method::ServerDiscover;
const LISTEN: Method = Method::SubscriptionsListen;
/// The least time between two openings of a backend's listen request.
const LISTEN_MIN_INTERVAL: Duration = Duration::from_secs(1);

/// The `_meta` entries every request to a stateless-era backend carries unless its caller gave its
/// own.
static STATELESS_ENVELOPE: LazyLock<Arc<MetaEnvelope>> = LazyLock::new(|| {
    let raw = |value: serde_json::Value| {
        RawValue::from_string(value.to_string()).expect("a JSON value's text is valid JSON")
    };
    Arc::new(vec![
        (
            meta::PROTOCOL_VERSION,
            raw(STATELESS_PROTOCOL_VERSION.into()),
        ),
        (
            meta::CLIENT_CAPABILITIES,
            raw(client_capabilities(Era::Stateless)),
        ),
        (meta::CLIENT_INFO, raw(client_info())),
    ])
});

/// The catalog lists a server can change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ListKind {
    Tools,
    Resources,
    ResourceTemplates,
    Prompts,
    Skills,
}

impl ListKind {
    pub(super) fn method(self) -> Method {
        match self {
            ListKind::Tools => Method::ToolsList,
            ListKind::Resources => Method::ResourcesList,
            ListKind::ResourceTemplates => Method::ResourceTemplatesList,
            ListKind::Prompts => Method::PromptsList,
            ListKind::Skills => Method::SkillsList,
        }
    }

    /// The capability a server declares to offer the list.
    fn capability(self) -> Cow<'static, str> {
        match self {
            ListKind::Tools => "tools".into(),
            ListKind::Resources | ListKind::ResourceTemplates => "resources".into(),
            ListKind::Prompts => "prompts".into(),
            ListKind::Skills => format!("extensions.{SKILLS_EXTENSION:?}").into(),
        }
    }

    fn field(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "resourceTemplates",
            ListKind::Prompts => "prompts",
            ListKind::Skills => "skills",
        }
    }

    pub(super) fn changed_by(method: &Method) -> Option<ListKind> {
        match method {
            Method::ToolsListChanged => Some(ListKind::Tools),
            Method::ResourcesListChanged => Some(ListKind::Resources),
            Method::PromptsListChanged => Some(ListKind::Prompts),
            _ => None,
        }
    }

    pub(super) fn slot(self, catalog: &mut Catalog) -> &mut Vec<Box<RawValue>> {
        match self {
            ListKind::Tools => &mut catalog.tools,
            ListKind::Resources => &mut catalog.resources,
            ListKind::ResourceTemplates => &mut catalog.resource_templates,
            ListKind::Prompts => &mut catalog.prompts,
            ListKind::Skills => &mut catalog.skills,
        }
    }
}

/// What a backend told about itself in a completed handshake.
pub(super) struct Handshake {
    pub(super) server: ServerDescription,
    pub(super) catalog: Catalog,
    /// What is worth telling about a start that worked: lists the server declares and does not
    /// have, taken as empty.
    pub(super) notes: Vec<String>,
}

/// Why a list could not be fetched.
#[derive(Debug, thiserror::Error)]
pub(super) enum ListError {
    /// The server answers the list's method with "method not found" (-32601): it does not have
    /// the list, whatever its capabilities say. Carries the server's error.
    #[error("error {code}: {message}")]
    Missing { code: i64, message: String },
    #[error(transparent)]
    Rpc(RpcError),
    #[error("malformed {method} result: {error}")]
    Malformed {
        method: Method,
        #[source]
        error: serde_json::Error,
    },
    #[error("{method} returned more than {MAX_LIST_PAGES} pages")]
    TooManyPages { method: Method },
}

/// Why a handshake failed: the connection could not be opened, or a list the server offers
/// could not be fetched.
#[derive(Debug, thiserror::Error)]
pub(super) enum HandshakeError {
    #[error(transparent)]
    Opening(#[from] OpeningError),
    #[error(transparent)]
    List(ListError),
}

/// The era a start tries first, and whether the other era may follow when the backend says it
/// does not speak the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct EraPlan {
    pub(super) first: Era,
    pub(super) fallback: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeResult {
    protocol_version: String,
    #[serde(default = "empty_object")]
    capabilities: Box<RawValue>,
    #[serde(default = "empty_object")]
    server_info: Box<RawValue>,
    #[serde(default)]
    instructions: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DiscoverResult {
    #[serde(default)]
    supported_versions: Vec<String>,
    #[serde(default = "empty_object")]
    capabilities: Box<RawValue>,
    #[serde(default)]
    instructions: Option<String>,
    /// Where servers written before `_meta` carried it put their name and version.
    #[serde(default)]
    server_info: Option<Box<RawValue>>,
    #[serde(default, rename = "_meta")]
    meta: BTreeMap<String, Box<RawValue>>,
}

/// What the stateless era's "unsupported protocol version" error carries.
#[derive(Deserialize)]
struct UnsupportedVersionData {
    #[serde(default)]
    supported: Vec<String>,
}

fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).expect("{} is valid JSON")
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ServerCapabilities {
    tools: Option<serde::de::IgnoredAny>,
    resources: Option<serde::de::IgnoredAny>,
    prompts: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    extensions: BTreeMap<String, serde::de::IgnoredAny>,
}

/// Why one way of opening a connection did not work. Each but the first two fails the start.
#[derive(Debug, thiserror::Error)]
pub(super) enum OpeningError {
    /// `initialize` was answered with "unsupported protocol version" naming the stateless
    /// version: a server of the stateless era only.
    #[error(
        "the server speaks only the stateless protocol ({STATELESS_PROTOCOL_VERSION}) and the config asks for the session era"
    )]
    StatelessOnly,
    /// `server/discover` was answered with another error: not a stateless-era server.
    #[error("{DISCOVER} answered error {code}: {message}")]
    NotStateless { code: i64, message: String },
    /// The request itself failed.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    #[error("malformed initialize result: {0}")]
    MalformedInitialize(#[source] serde_json::Error),
    /// The server answered `initialize` with a version Switchboard does not speak.
    #[error(
        "the server speaks protocol version {version}, which Switchboard does not support (supported: {})",
        SUPPORTED_PROTOCOL_VERSIONS.join(", ")
    )]
    UnsupportedVersion { version: String },
    #[error("malformed {DISCOVER} result: {0}")]
    MalformedDiscover(#[source] serde_json::Error),
    /// The versions the server's `server/discover` lists, none of them Switchboard's.
    #[error(
        "the server speaks protocol versions {0:?}, and Switchboard's stateless version is {STATELESS_PROTOCOL_VERSION}"
    )]
    NoStatelessVersion(Vec<String>),
}

/// When the handshake timeout of an opening request (`initialize`, `server/discover`) starts.
pub(super) enum OpeningClock {
    /// When the request is sent.
    Sent,
    /// When a package runner started the server (`None` until it has), or when the request is
    /// sent if that is later: the runner's install does not count, up to [`INSTALL_TIMEOUT`]
    /// (which is all the request waits if the runner's start is never seen).
    Handover(watch::Receiver<Option<Instant>>),
}

/// Opens the connection in the era `plan` says (each step bounded by the handshake timeout,
/// counted as `clock` says), then fetches every list the server offers (each page bounded by
/// the request timeout). A list the server answers with "method not found" is empty, with a
/// note; any other error fails the handshake.
pub(super) async fn handshake(
    connection: &Connection,
    config: &BackendConfig,
    plan: EraPlan,
    clock: &OpeningClock,
) -> Result<Handshake, HandshakeError> {
    let server = describe(connection, config, plan, clock).await?;
    let capabilities: ServerCapabilities =
        serde_json::from_str(server.capabilities.get()).unwrap_or_default();
    let mut catalog = Catalog::default();
    let offered = [
        (ListKind::Tools, capabilities.tools.is_some()),
        (ListKind::Resources, capabilities.resources.is_some()),
        (
            ListKind::ResourceTemplates,
            capabilities.resources.is_some(),
        ),
        (ListKind::Prompts, capabilities.prompts.is_some()),
        (
            ListKind::Skills,
            capabilities.extensions.contains_key(SKILLS_EXTENSION),
        ),
    ];
    let mut notes = Vec::new();
    for (list, is_offered) in offered {
        if !is_offered {
            continue;
        }
        match fetch_list(connection, list, config.request_timeout).await {
            Ok(items) => *list.slot(&mut catalog) = items,
            Err(missing @ ListError::Missing { .. }) => notes.push(format!(
                "the server declares {} but does not have {} ({missing}): taken as empty",
                list.capability(),
                list.method()
            )),
            Err(failed) => return Err(HandshakeError::List(failed)),
        }
    }
    Ok(Handshake {
        server,
        catalog,
        notes,
    })
}

/// The server's description, from the era `plan` tries first or, if the server says it speaks
/// the other and `plan` allows it, from that one.
async fn describe(
    connection: &Connection,
    config: &BackendConfig,
    plan: EraPlan,
    clock: &OpeningClock,
) -> Result<ServerDescription, OpeningError> {
    if plan.first == Era::Stateless {
        match discover(connection, config, clock).await {
            Ok(server) => return Ok(server),
            Err(not_stateless @ OpeningError::NotStateless { .. }) if plan.fallback => {
                tracing::info!(
                    "not a stateless-era server after all ({not_stateless}); sending initialize"
                );
            }
            Err(error) => return Err(error),
        }
    }
    match initialize(connection, config, clock).await {
        Ok(server) => Ok(server),
        Err(OpeningError::StatelessOnly) if plan.fallback && plan.first == Era::Session => {
            tracing::info!(
                "the server speaks only the stateless protocol; sending server/discover"
            );
            discover(connection, config, clock).await
        }
        Err(error) => Err(error),
    }
}

/// `initialize`, then `notifications/initialized`.
async fn initialize(
    connection: &Connection,
    config: &BackendConfig,
    clock: &OpeningClock,
) -> Result<ServerDescription, OpeningError> {
    let params = serde_json::json!({
        "protocolVersion": SUPPORTED_PROTOCOL_VERSIONS[0],
        "capabilities": session_capabilities(config.ask),
        "clientInfo": client_info(),
    });
    let params = RawValue::from_string(params.to_string()).expect("json! output is valid JSON");
    let answer = match opening_request(
        connection,
        &Method::Initialize,
        Some(&params),
        config,
        clock,
    )
    .await
    {
        Ok(answer) => answer,
        Err(RpcError::Remote { error, .. }) if names_stateless_version(&error) => {
            return Err(OpeningError::StatelessOnly);
        }
        Err(error) => return Err(OpeningError::Rpc(error)),
    };
    let initialized: InitializeResult =
        serde_json::from_str(answer.get()).map_err(OpeningError::MalformedInitialize)?;
    if !SUPPORTED_PROTOCOL_VERSIONS.contains(&initialized.protocol_version.as_str()) {
        return Err(OpeningError::UnsupportedVersion {
            version: initialized.protocol_version,
        });
    }
    connection.notify(&Method::Initialized, None).await?;
    Ok(ServerDescription {
        era: Era::Session,
        protocol_version: initialized.protocol_version,
        server_info: initialized.server_info,
        capabilities: initialized.capabilities,
        instructions: initialized.instructions,
    })
}

/// Puts the stateless era's envelope on the connection and asks `server/discover`; takes the
/// envelope off again if the server is not of that era.
async fn discover(
    connection: &Connection,
    config: &BackendConfig,
    clock: &OpeningClock,
) -> Result<ServerDescription, OpeningError> {
    connection.set_envelope(Some(STATELESS_ENVELOPE.clone()));
    let outcome = describe_stateless(connection, config, clock).await;
    if outcome.is_err() {
        connection.set_envelope(None);
    }
    outcome
}

async fn describe_stateless(
    connection: &Connection,
    config: &BackendConfig,
    clock: &OpeningClock,
) -> Result<ServerDescription, OpeningError> {
    let answer = match opening_request(connection, &DISCOVER, None, config, clock).await {
        Ok(answer) => answer,
        Err(RpcError::Remote { error, .. }) if error.code != code::UNSUPPORTED_PROTOCOL_VERSION => {
            return Err(OpeningError::NotStateless {
                code: error.code,
                message: error.message,
            });
        }
        Err(error) => return Err(OpeningError::Rpc(error)),
    };
    let mut discovered: DiscoverResult =
        serde_json::from_str(answer.get()).map_err(OpeningError::MalformedDiscover)?;
    if !discovered
        .supported_versions
        .iter()
        .any(|version| version == STATELESS_PROTOCOL_VERSION)
    {
        return Err(OpeningError::NoStatelessVersion(
            discovered.supported_versions,
        ));
    }
    let server_info = discovered
        .meta
        .remove(meta::SERVER_INFO)
        .or(discovered.server_info)
        .unwrap_or_else(empty_object);
    Ok(ServerDescription {
        era: Era::Stateless,
        protocol_version: STATELESS_PROTOCOL_VERSION.to_owned(),
        server_info,
        capabilities: discovered.capabilities,
        instructions: discovered.instructions,
    })
}

/// Sends an opening request and waits for its answer for the handshake timeout, counted as
/// `clock` says.
async fn opening_request(
    connection: &Connection,
    method: &Method,
    params: Option<&RawValue>,
    config: &BackendConfig,
    clock: &OpeningClock,
) -> Result<Box<RawValue>, RpcError> {
    let timeout = config.handshake_timeout;
    let OpeningClock::Handover(handover) = clock else {
        return connection.request(method, params, timeout).await;
    };
    let mut handover = handover.clone();
    let sent = Instant::now();
    let request = connection.request(method, params, timeout + INSTALL_TIMEOUT);
    tokio::pin!(request);
    loop {
        let deadline = handover
            .borrow_and_update()
            .map(|started| started.max(sent) + timeout);
        let expiry = async move {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            answer = &mut request => return answer,
            () = expiry => {
                return Err(RpcError::Timeout {
                    backend: Arc::from(config.name.as_str()),
                    method: method.to_string(),
                    timeout,
                });
            }
            changed = handover.changed() => {
                if changed.is_err() {
                    // Nobody watches the runner any more: the request's own deadline stands.
                    return request.await;
                }
            }
        }
    }
}

/// Whether `error` is the stateless era's "unsupported protocol version" naming the version
/// Switchboard speaks in that era.
fn names_stateless_version(error: &ErrorObject) -> bool {
    error.code == code::UNSUPPORTED_PROTOCOL_VERSION
        && error
            .data
            .as_deref()
            .and_then(|data| UnsupportedVersionData::deserialize(data).ok())
            .is_some_and(|data| {
                data.supported
                    .iter()
                    .any(|version| version == STATELESS_PROTOCOL_VERSION)
            })
}

/// The health check of a backend in `era`: a request that any live server answers at once.
pub(super) fn health_method(era: Era) -> Method {
    match era {
        Era::Session => Method::Ping,
        Era::Stateless => DISCOVER,
    }
}

/// Keeps one `subscriptions/listen` open on a stateless-era backend's connection for its list
/// changes and for updates of the resources editors want (`subscriptions`), which then arrive
/// among its other notifications. Opens it again when the server ends it, and when the wanted
/// resources change (the listen naming the old ones is given up); returns when the connection
/// closes or the server refuses to listen.
pub(super) async fn keep_listening(connection: Connection, subscriptions: Arc<Subscriptions>) {
    let mut wanted = subscriptions.wanted();
    loop {
        let resources: Vec<String> = wanted.borrow_and_update().keys().cloned().collect();
        let params = listen_params(&resources);
        subscriptions.reopening();
        let opened = tokio::time::Instant::now();
        tokio::select! {
            ended = connection.request_until_closed(&LISTEN, Some(&params)) => match ended {
                Ok(_) => tracing::debug!("the server ended {LISTEN}; listening again"),
                Err(RpcError::Remote { error, .. }) => {
                    tracing::warn!(
                        "{LISTEN} answered error {}: {}; list changes and resource updates will \
                         not be seen",
                        error.code,
                        error.message
                    );
                    return;
                }
                Err(RpcError::Closed { .. }) => return,
                Err(error) => tracing::debug!("{LISTEN} ended: {error}; listening again"),
            },
            changed = wanted.changed() => match changed {
                Ok(()) => continue,
                Err(_) => return,
            },
        }
        // A server that ends every listen at once is not asked again in a tight loop.
        tokio::time::sleep_until(opened + LISTEN_MIN_INTERVAL).await;
    }
}

/// The params of the listen that names `resources`.
fn listen_params(resources: &[String]) -> Box<RawValue> {
    let mut notifications = serde_json::json!({
        "toolsListChanged": true,
        "promptsListChanged": true,
        "resourcesListChanged": true,
    });
    if !resources.is_empty() {
        notifications["resourceSubscriptions"] = serde_json::json!(resources);
    }
    let params = serde_json::json!({ "notifications": notifications });
    RawValue::from_string(params.to_string()).expect("json! output is valid JSON")
}

/// What a session-era server is told Switchboard can be asked: all of it, but questions when its
/// `ask = "never"` turns them off.
fn session_capabilities(ask: Ask) -> serde_json::Value {
    let mut capabilities = client_capabilities(Era::Session);
    if ask == Ask::Never {
        let without = |value: Option<&mut serde_json::Value>| {
            if let Some(object) = value.and_then(serde_json::Value::as_object_mut) {
                object.remove("elicitation");
            }
        };
        without(Some(&mut capabilities));
        without(capabilities.pointer_mut("/tasks/requests"));
    }
    capabilities
}

/// What Switchboard can be asked in `era`: everything the hub can pass on to an editor
/// (`hub::capabilities`), so that servers offer what needs it; a request the editor of the
/// call cannot answer is refused there.
fn client_capabilities(era: Era) -> serde_json::Value {
    let roots = match era {
        Era::Session => serde_json::json!({ "listChanged": true }),
        // Roots have no change notification in the stateless era.
        Era::Stateless => serde_json::json!({}),
    };
    // Views of MCP Apps reach the editors that render them (the others never see the tools
    // only a view may call, `hub::catalog`), so a server may offer them.
    let mut capabilities = serde_json::json!({
        "sampling": { "context": {}, "tools": {} },
        "elicitation": { "form": {}, "url": {} },
        "roots": roots,
        "extensions": { apps::UI_EXTENSION: apps::declared() },
    });
    // Switchboard holds the tasks a session-era server asks it to run (`hub::tasks::held`).
    if era == Era::Session {
        capabilities["tasks"] = serde_json::json!({
            "list": {},
            "cancel": {},
            "requests": { "sampling": { "createMessage": {} }, "elicitation": { "create": {} } },
        });
    }
    capabilities
}

fn client_info() -> serde_json::Value {
    serde_json::json!({ "name": "switchboard", "version": env!("CARGO_PKG_VERSION") })
}

/// Fetches every page of one list, following `nextCursor`.
pub(super) async fn fetch_list(
    connection: &Connection,
    list: ListKind,
    timeout: Duration,
) -> Result<Vec<Box<RawValue>>, ListError> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = match &cursor {
            Some(cursor) => serde_json::json!({ "cursor": cursor }),
            None => serde_json::json!({}),
        };
        let params = RawValue::from_string(params.to_string()).expect("json! output is valid JSON");
        let page = match connection
            .request(&list.method(), Some(&params), timeout)
            .await
        {
            Ok(page) => page,
            Err(RpcError::Remote { error, .. })
                if error.code == jsonrpc::METHOD_NOT_FOUND && cursor.is_none() =>
            {
                return Err(ListError::Missing {
                    code: error.code,
                    message: error.message,
                });
            }
            Err(error) => return Err(ListError::Rpc(error)),
        };
        let malformed = |error| ListError::Malformed {
            method: list.method(),
            error,
        };
        let mut fields: BTreeMap<String, Box<RawValue>> =
            serde_json::from_str(page.get()).map_err(malformed)?;
        if let Some(page_items) = fields.remove(list.field()) {
            let page_items: Vec<Box<RawValue>> =
                serde_json::from_str(page_items.get()).map_err(malformed)?;
            items.extend(page_items);
        }
        let next: Option<String> = fields
            .get("nextCursor")
            .and_then(|raw| serde_json::from_str(raw.get()).ok());
        match next {
            Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
            _ => return Ok(items),
        }
    }
    Err(ListError::TooManyPages {
        method: list.method(),
    })
}

/// The era each backend's process was last found to speak, with a fingerprint of the command
/// it ran, so that the next start of the same command goes to that era first. In memory only.
#[derive(Default)]
pub(crate) struct EraVerdicts {
    /// Backend name → (fingerprint of its command, era).
    verdicts: Mutex<HashMap<String, (u64, Era)>>,
}

impl EraVerdicts {
    /// What a start of `config` tries: the era its config names, or else the era its command
    /// was last found to speak, else the newest era the way to it allows.
    ///
    /// Over HTTP every request stands alone, so a `server/discover` that a session-era server
    /// does not know costs one error answer and leaves nothing behind: a remote server is asked
    /// in the stateless era first, and one that speaks both eras gives a stateless-era editor
    /// everything it offers that era. On a child's stdio the first request fixes the
    /// connection's era, and some session-era servers stop at any request before `initialize`:
    /// there `initialize` comes first (its `-32022` tells a stateless-only server).
    pub(super) fn plan(&self, config: &BackendConfig) -> EraPlan {
        let only = |era| EraPlan {
            first: era,
            fallback: false,
        };
        match config.protocol {
            Protocol::Only(era) => return only(era),
            Protocol::Auto => {}
        }
        let known = self
            .lock()
            .get(&config.name)
            .filter(|(fingerprint, _)| *fingerprint == command_fingerprint(config))
            .map(|(_, era)| *era);
        let newest = match config.launch {
            Launch::Remote(_) => Era::Stateless,
            Launch::Process(_) => Era::Session,
        };
        EraPlan {
            first: known.unwrap_or(newest),
            fallback: true,
        }
    }

    /// Remembers how a start of `config` ended: the era it was found to speak, or `None` when
    /// the start failed (the next one finds out again).
    pub(super) fn record(&self, config: &BackendConfig, era: Option<Era>) {
        let mut verdicts = self.lock();
        match era {
            Some(era) => {
                verdicts.insert(config.name.clone(), (command_fingerprint(config), era));
            }
            None => {
                verdicts.remove(&config.name);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, Era)>> {
        self.verdicts
            .lock()
            .expect("era verdicts lock is never poisoned")
    }
}

/// What decides which program runs, and so which era it speaks.
fn command_fingerprint(config: &BackendConfig) -> u64 {
    let mut hasher = DefaultHasher::new();
    config.launch.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use config::RemoteServer;

    fn config() -> BackendConfig {
        BackendConfig::new("sdk", "node", vec!["server.mjs".to_owned()])
    }

    fn plan(first: Era, fallback: bool) -> EraPlan {
        EraPlan { first, fallback }
    }

    #[test]
    fn a_start_tries_the_era_the_same_command_was_found_to_speak_first() {
        let verdicts = EraVerdicts::default();
        let config = config();
        assert_eq!(verdicts.plan(&config), plan(Era::Session, true));

        verdicts.record(&config, Some(Era::Stateless));
        assert_eq!(verdicts.plan(&config), plan(Era::Stateless, true));
        let mut other_command = config.clone();
        other_command
            .process_mut()
            .expect("local")
            .args
            .push("--legacy".to_owned());
        assert_eq!(verdicts.plan(&other_command), plan(Era::Session, true));
        let mut other_env = config.clone();
        other_env
            .process_mut()
            .expect("local")
            .env
            .insert("MODE".to_owned(), "x".to_owned());
        assert_eq!(verdicts.plan(&other_env), plan(Era::Session, true));
        let mut other_backend = config.clone();
        other_backend.name = "other".to_owned();
        assert_eq!(verdicts.plan(&other_backend), plan(Era::Session, true));

        verdicts.record(&config, None);
        assert_eq!(verdicts.plan(&config), plan(Era::Session, true));
    }

    #[test]
    fn a_remote_server_is_asked_in_the_stateless_era_first_and_a_process_in_the_session_era() {
        let verdicts = EraVerdicts::default();
        let mut remote = config();
        remote.launch = Launch::Remote(RemoteServer::new("http://127.0.0.1:9/mcp"));
        assert_eq!(verdicts.plan(&remote), plan(Era::Stateless, true));
        assert_eq!(verdicts.plan(&config()), plan(Era::Session, true));

        verdicts.record(&remote, Some(Era::Session));
        assert_eq!(verdicts.plan(&remote), plan(Era::Session, true));
    }

    #[test]
    fn a_protocol_named_in_the_config_is_the_only_one_tried() {
        let verdicts = EraVerdicts::default();
        let mut config = config();
        verdicts.record(&config, Some(Era::Stateless));
        config.protocol = Protocol::Only(Era::Session);
        assert_eq!(verdicts.plan(&config), plan(Era::Session, false));
        config.protocol = Protocol::Only(Era::Stateless);
        assert_eq!(verdicts.plan(&config), plan(Era::Stateless, false));
    }
}
