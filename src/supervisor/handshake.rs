//! The MCP handshake with a backend (`initialize`, `notifications/initialized`) and the discovery
//! of its catalog, list by list and page by page.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::config::BackendConfig;
use crate::supervisor::rpc::Connection;
use crate::supervisor::status::{Catalog, ServerDescription};

/// The session-era protocol versions Switchboard speaks with backends, newest first.
pub use crate::wire::era::LEGACY_PROTOCOL_VERSIONS as SUPPORTED_PROTOCOL_VERSIONS;
const MAX_LIST_PAGES: usize = 1000;

/// The catalog lists a server can change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ListKind {
    Tools,
    Resources,
    ResourceTemplates,
    Prompts,
}

impl ListKind {
    pub(super) fn method(self) -> &'static str {
        match self {
            ListKind::Tools => "tools/list",
            ListKind::Resources => "resources/list",
            ListKind::ResourceTemplates => "resources/templates/list",
            ListKind::Prompts => "prompts/list",
        }
    }

    fn field(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "resourceTemplates",
            ListKind::Prompts => "prompts",
        }
    }

    pub(super) fn changed_by(method: &str) -> Option<ListKind> {
        match method {
            "notifications/tools/list_changed" => Some(ListKind::Tools),
            "notifications/resources/list_changed" => Some(ListKind::Resources),
            "notifications/prompts/list_changed" => Some(ListKind::Prompts),
            _ => None,
        }
    }

    pub(super) fn slot(self, catalog: &mut Catalog) -> &mut Vec<Box<RawValue>> {
        match self {
            ListKind::Tools => &mut catalog.tools,
            ListKind::Resources => &mut catalog.resources,
            ListKind::ResourceTemplates => &mut catalog.resource_templates,
            ListKind::Prompts => &mut catalog.prompts,
        }
    }
}

/// What a backend told about itself in a completed handshake.
pub(super) struct Handshake {
    pub(super) server: ServerDescription,
    pub(super) catalog: Catalog,
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

fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).expect("{} is valid JSON")
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ServerCapabilities {
    tools: Option<serde::de::IgnoredAny>,
    resources: Option<serde::de::IgnoredAny>,
    prompts: Option<serde::de::IgnoredAny>,
}

/// `initialize` (bounded by the handshake timeout), `notifications/initialized`, then every list
/// the server offers (each page bounded by the request timeout).
pub(super) async fn handshake(
    connection: &Connection,
    config: &BackendConfig,
) -> Result<Handshake, String> {
    let params = serde_json::json!({
        "protocolVersion": SUPPORTED_PROTOCOL_VERSIONS[0],
        // Everything the hub can pass on to an editor (`hub/capabilities.rs`), so that servers
        // offer what needs it; a request the editor of the call cannot answer is refused there.
        "capabilities": {
            "sampling": { "context": {}, "tools": {} },
            "elicitation": { "form": {}, "url": {} },
            "roots": { "listChanged": true },
        },
        "clientInfo": { "name": "switchboard", "version": env!("CARGO_PKG_VERSION") },
    });
    let params = RawValue::from_string(params.to_string()).expect("json! output is valid JSON");
    let answer = connection
        .request("initialize", Some(&params), config.handshake_timeout)
        .await
        .map_err(|error| error.to_string())?;
    let initialized: InitializeResult = serde_json::from_str(answer.get())
        .map_err(|error| format!("malformed initialize result: {error}"))?;
    if !SUPPORTED_PROTOCOL_VERSIONS.contains(&initialized.protocol_version.as_str()) {
        return Err(format!(
            "the server speaks protocol version {}, which Switchboard does not support (supported: {})",
            initialized.protocol_version,
            SUPPORTED_PROTOCOL_VERSIONS.join(", ")
        ));
    }
    connection
        .notify("notifications/initialized", None)
        .await
        .map_err(|error| error.to_string())?;
    let capabilities: ServerCapabilities =
        serde_json::from_str(initialized.capabilities.get()).unwrap_or_default();
    let mut catalog = Catalog::default();
    let offered = [
        (ListKind::Tools, capabilities.tools.is_some()),
        (ListKind::Resources, capabilities.resources.is_some()),
        (
            ListKind::ResourceTemplates,
            capabilities.resources.is_some(),
        ),
        (ListKind::Prompts, capabilities.prompts.is_some()),
    ];
    for (list, is_offered) in offered {
        if is_offered {
            *list.slot(&mut catalog) = fetch_list(connection, list, config.request_timeout).await?;
        }
    }
    let server = ServerDescription {
        protocol_version: initialized.protocol_version,
        server_info: initialized.server_info,
        capabilities: initialized.capabilities,
        instructions: initialized.instructions,
    };
    Ok(Handshake { server, catalog })
}

/// Fetches every page of one list, following `nextCursor`.
pub(super) async fn fetch_list(
    connection: &Connection,
    list: ListKind,
    timeout: Duration,
) -> Result<Vec<Box<RawValue>>, String> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = match &cursor {
            Some(cursor) => serde_json::json!({ "cursor": cursor }),
            None => serde_json::json!({}),
        };
        let params = RawValue::from_string(params.to_string()).expect("json! output is valid JSON");
        let page = connection
            .request(list.method(), Some(&params), timeout)
            .await
            .map_err(|error| error.to_string())?;
        let mut fields: BTreeMap<String, Box<RawValue>> = serde_json::from_str(page.get())
            .map_err(|error| format!("malformed {} result: {error}", list.method()))?;
        if let Some(page_items) = fields.remove(list.field()) {
            let page_items: Vec<Box<RawValue>> = serde_json::from_str(page_items.get())
                .map_err(|error| format!("malformed {} result: {error}", list.method()))?;
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
    Err(format!(
        "{} returned more than {MAX_LIST_PAGES} pages",
        list.method()
    ))
}
