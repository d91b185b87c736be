//! The tables that are about Switchboard itself rather than one server: `[endpoint]`,
//! `[desktop]`, `[activity]`, `[security]` and `[registry]`; a setting with an error keeps its
//! default.

use std::net::SocketAddr;
use std::path::Path;

use super::reader::{Reader, Zero, set};
use super::report::Reporter;
use super::tree::{Entry, Node};
use super::values;
use super::{
    ActivitySettings, DEFAULT_LISTEN, DesktopConfig, EndpointConfig, Format, SecuritySettings,
};

const ENDPOINT_FIELDS: &[&str] = &["listen", "token", "require_token", "max_body_size"];
const DESKTOP_FIELDS: &[&str] = &["notify_crash_loop"];
const ACTIVITY_FIELDS: &[&str] = &["enabled", "payloads", "max_age", "max_size"];
const SECURITY_FIELDS: &[&str] = &["approve_new_tools"];
const REGISTRY_FIELDS: &[&str] = &["sources", "review_added"];

/// The endpoint the `[endpoint]` table describes; each setting with an error is reported and
/// keeps its default, and so does everything if the entry is not a table.
pub(super) fn read_endpoint(reporter: &mut Reporter<'_>, endpoint: &Entry) -> EndpointConfig {
    let mut reader = Reader {
        reporter,
        // Only the TOML form has an endpoint, and none of its settings is a path.
        format: Format::Toml,
        config_dir: Path::new(""),
    };
    reader.endpoint(endpoint)
}

/// The `[desktop]` table; a setting with an error keeps its default.
pub(super) fn read_desktop(reporter: &mut Reporter<'_>, desktop: &Entry) -> DesktopConfig {
    let mut reader = Reader {
        reporter,
        format: Format::Toml,
        config_dir: Path::new(""),
    };
    reader.desktop(desktop)
}

/// The `[activity]` table; a setting with an error keeps its default.
pub(super) fn read_activity(reporter: &mut Reporter<'_>, activity: &Entry) -> ActivitySettings {
    let mut reader = Reader {
        reporter,
        format: Format::Toml,
        config_dir: Path::new(""),
    };
    let prefix = activity.key.as_str();
    let mut settings = ActivitySettings::default();
    let Some(entries) = reader.table(&activity.value, prefix) else {
        return settings;
    };
    for entry in reader.unique_entries(entries, prefix) {
        let field = format!("{prefix}.{}", entry.key);
        let value = &entry.value;
        match entry.key.as_str() {
            "enabled" => set(&mut settings.enabled, reader.boolean(value, &field)),
            "payloads" => set(&mut settings.payloads, reader.boolean(value, &field)),
            "max_age" => set(
                &mut settings.max_age,
                reader.duration(value, &field, Zero::Rejected),
            ),
            "max_size" => set(
                &mut settings.max_size,
                reader.size(value, &field).map(|size| size as u64),
            ),
            _ => reader.unknown_field(entry, &field, ACTIVITY_FIELDS),
        }
    }
    settings
}

/// The `[security]` table; a setting with an error keeps its default.
pub(super) fn read_security(reporter: &mut Reporter<'_>, security: &Entry) -> SecuritySettings {
    let mut reader = Reader {
        reporter,
        format: Format::Toml,
        config_dir: Path::new(""),
    };
    let prefix = security.key.as_str();
    let mut settings = SecuritySettings::default();
    let Some(entries) = reader.table(&security.value, prefix) else {
        return settings;
    };
    for entry in reader.unique_entries(entries, prefix) {
        let field = format!("{prefix}.{}", entry.key);
        match entry.key.as_str() {
            "approve_new_tools" => set(
                &mut settings.approve_new_tools,
                reader.boolean(&entry.value, &field),
            ),
            _ => reader.unknown_field(entry, &field, SECURITY_FIELDS),
        }
    }
    settings
}

/// The sources a config without `[registry] sources` reads: the official registry, and
/// GitHub's, which serves the same API.
pub const DEFAULT_SOURCES: &[&str] = &[
    "https://registry.modelcontextprotocol.io",
    "https://api.mcp.github.com",
];

/// Where servers are found, and how one added from there starts: the `[registry]` table (TOML
/// only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrySettings {
    /// Base URLs of the v0.1 registry API, searched in this order (then the built-in set).
    pub sources: Vec<String>,
    /// Whether what an added server offers first waits for review.
    pub review_added: bool,
}

impl Default for RegistrySettings {
    fn default() -> RegistrySettings {
        RegistrySettings {
            sources: DEFAULT_SOURCES
                .iter()
                .map(|url| (*url).to_owned())
                .collect(),
            review_added: true,
        }
    }
}

/// The `[registry]` table; a setting with an error keeps its default.
pub(super) fn read_registry(reporter: &mut Reporter<'_>, registry: &Entry) -> RegistrySettings {
    let mut reader = Reader {
        reporter,
        format: Format::Toml,
        config_dir: Path::new(""),
    };
    let prefix = registry.key.as_str();
    let mut settings = RegistrySettings::default();
    let Some(entries) = reader.table(&registry.value, prefix) else {
        return settings;
    };
    for entry in reader.unique_entries(entries, prefix) {
        let field = format!("{prefix}.{}", entry.key);
        match entry.key.as_str() {
            "sources" => {
                if let Some(urls) = reader.strings(&entry.value, &field) {
                    match urls.iter().find(|url| !is_source_url(url)) {
                        Some(bad) => reader.reporter.error(
                            entry.value.offset,
                            &field,
                            format!(
                                "{bad:?} is not a registry's base URL (https://HOST, or \
                                 http://127.0.0.1:PORT for one on this machine)"
                            ),
                        ),
                        None => {
                            settings.sources = urls
                                .into_iter()
                                .map(|url| url.trim_end_matches('/').to_owned())
                                .collect();
                        }
                    }
                }
            }
            "review_added" => set(
                &mut settings.review_added,
                reader.boolean(&entry.value, &field),
            ),
            _ => reader.unknown_field(entry, &field, REGISTRY_FIELDS),
        }
    }
    settings
}

/// Whether `url` can be a registry source: https, or http on this machine.
fn is_source_url(url: &str) -> bool {
    match url::Url::parse(url) {
        Ok(parsed) => match parsed.scheme() {
            "https" => parsed.host().is_some(),
            "http" => matches!(parsed.host_str(), Some("127.0.0.1" | "localhost" | "[::1]")),
            _ => false,
        },
        Err(_) => false,
    }
}

impl Reader<'_, '_> {
    fn endpoint(&mut self, endpoint_entry: &Entry) -> EndpointConfig {
        let prefix = endpoint_entry.key.as_str();
        let mut endpoint = EndpointConfig::default();
        let Some(entries) = self.table(&endpoint_entry.value, prefix) else {
            return endpoint;
        };
        for entry in self.unique_entries(entries, prefix) {
            let field = format!("{prefix}.{}", entry.key);
            let value = &entry.value;
            match entry.key.as_str() {
                "listen" => set(&mut endpoint.listen, self.listen(value, &field)),
                "token" => endpoint.token = self.token(value, &field),
                "require_token" => {
                    endpoint.require_token = self.boolean(value, &field).or(endpoint.require_token);
                }
                "max_body_size" => set(&mut endpoint.max_body_size, self.size(value, &field)),
                _ => self.unknown_field(entry, &field, ENDPOINT_FIELDS),
            }
        }
        endpoint
    }

    fn desktop(&mut self, desktop_entry: &Entry) -> DesktopConfig {
        let prefix = desktop_entry.key.as_str();
        let mut desktop = DesktopConfig::default();
        let Some(entries) = self.table(&desktop_entry.value, prefix) else {
            return desktop;
        };
        for entry in self.unique_entries(entries, prefix) {
            let field = format!("{prefix}.{}", entry.key);
            match entry.key.as_str() {
                "notify_crash_loop" => set(
                    &mut desktop.notify_crash_loop,
                    self.boolean(&entry.value, &field),
                ),
                _ => self.unknown_field(entry, &field, DESKTOP_FIELDS),
            }
        }
        desktop
    }

    /// An address that is not loopback is allowed, with a warning about what it exposes.
    fn listen(&mut self, node: &Node, field: &str) -> Option<SocketAddr> {
        let text = self.string(node, field)?;
        let Ok(address) = text.parse::<SocketAddr>() else {
            self.reporter.error(
                node.offset,
                field,
                format!(
                    "expected an IP address and a port like \"{DEFAULT_LISTEN}\" (not a host \
                     name), found {text:?}"
                ),
            );
            return None;
        };
        if !address.ip().to_canonical().is_loopback() {
            self.reporter.warning(
                node.offset,
                field,
                format!(
                    "{address} is not a loopback address: other machines that can reach it can \
                     use the endpoint, and through it every server configured here; listen on \
                     127.0.0.1 unless that is intended, and then set a `token`"
                ),
            );
        }
        Some(address)
    }

    /// The token with `${env:NAME}` expanded. Messages never show it: it is a secret.
    fn token(&mut self, node: &Node, field: &str) -> Option<String> {
        let written = self.string(node, field)?;
        let env_only = values::Lookups {
            env: &|name| std::env::var_os(name),
            secret: None,
        };
        let token = match values::expand_references(&written, &env_only, values::Other::Refused) {
            Ok(token) => token,
            Err(error) => {
                self.value_error(node, field, &error);
                return None;
            }
        };
        if token.is_empty() {
            self.reporter.error(
                node.offset,
                field,
                "the token is empty; remove `token` to use the one Switchboard makes",
            );
            return None;
        }
        // It travels in an `Authorization` header, which holds visible ASCII.
        if !token.bytes().all(|byte| byte.is_ascii_graphic()) {
            self.reporter.error(
                node.offset,
                field,
                "the token may contain only visible ASCII characters, without spaces",
            );
            return None;
        }
        Some(token)
    }
}
