//! What a registry source serves: `server.json` entries (schema 2025-12-11) with the registry's
//! `_meta`, read leniently (an unknown field is ignored, a missing list is empty) since sources
//! other than the official one write what they like. Nothing here is trusted: `plan.rs` checks
//! what it uses.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One entry of a source: a server at one version, and what the registry says of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub server: ServerJson,
    #[serde(rename = "_meta", default)]
    pub(crate) meta: RecordMeta,
}

/// The registry's metadata of an entry.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct RecordMeta {
    #[serde(rename = "io.modelcontextprotocol.registry/official", default)]
    pub(crate) official: Option<Official>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Official {
    #[serde(default)]
    pub(crate) status: Status,
    #[serde(default)]
    pub(crate) status_message: Option<String>,
    #[serde(default)]
    pub(crate) published_at: Option<String>,
    #[serde(default)]
    pub(crate) updated_at: Option<String>,
    #[serde(default)]
    pub(crate) is_latest: bool,
}

/// An entry's status: a `deleted` one (a takedown) is never offered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    #[default]
    Active,
    Deprecated,
    Deleted,
    /// A status this version does not know: offered as active, since only `deleted` removes.
    #[serde(other)]
    Unknown,
}

impl Record {
    pub fn status(&self) -> Status {
        self.meta
            .official
            .as_ref()
            .map_or(Status::Active, |o| o.status)
    }

    pub fn status_message(&self) -> Option<&str> {
        self.meta.official.as_ref()?.status_message.as_deref()
    }

    pub(crate) fn is_latest(&self) -> bool {
        self.meta.official.as_ref().is_some_and(|o| o.is_latest)
    }

    /// When the source last changed the entry (RFC 3339), if it says.
    pub(crate) fn updated_at(&self) -> Option<&str> {
        let official = self.meta.official.as_ref()?;
        official
            .updated_at
            .as_deref()
            .or(official.published_at.as_deref())
    }

    /// Whether the entry carries the official registry's metadata, which it has only after the
    /// registry verified that its publisher owns the name's namespace.
    pub(crate) fn has_official_meta(&self) -> bool {
        self.meta.official.is_some()
    }
}

/// `server.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerJson {
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: String,
    pub version: String,
    #[serde(default)]
    pub repository: Option<Repository>,
    #[serde(default)]
    pub website_url: Option<String>,
    #[serde(default)]
    pub packages: Vec<Package>,
    #[serde(default)]
    pub remotes: Vec<Remote>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Repository {
    #[serde(default)]
    pub url: String,
}

/// A package a server can be run from.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Package {
    pub registry_type: String,
    pub identifier: String,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub(crate) file_sha256: Option<String>,
    #[serde(default)]
    pub transport: Transport,
    #[serde(default)]
    pub(crate) runtime_arguments: Vec<Argument>,
    #[serde(default)]
    pub(crate) package_arguments: Vec<Argument>,
    #[serde(default)]
    pub(crate) environment_variables: Vec<Input>,
}

/// How a package's server is spoken to once it runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Transport {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub(crate) url: Option<String>,
}

impl Default for Transport {
    fn default() -> Transport {
        Transport {
            kind: "stdio".to_owned(),
            url: None,
        }
    }
}

/// A server reached over the network.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Remote {
    #[serde(rename = "type")]
    pub kind: String,
    pub url: String,
    #[serde(default)]
    pub(crate) headers: Vec<Input>,
    #[serde(default)]
    pub(crate) variables: BTreeMap<String, Input>,
}

/// A command-line argument: `positional` (a value) or `named` (`--flag` and maybe a value).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Argument {
    #[serde(rename = "type", default = "positional")]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) value_hint: Option<String>,
    #[serde(flatten)]
    pub(crate) input: Input,
}

fn positional() -> String {
    "positional".to_owned()
}

/// A value the entry gives or asks for: an environment variable, a header, an argument's value
/// or a variable of one of these.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Input {
    /// The variable's or header's name, or a named argument's flag (absent for a positional
    /// argument and a variable).
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) is_required: bool,
    #[serde(default)]
    pub(crate) is_secret: bool,
    #[serde(default)]
    pub(crate) default: Option<String>,
    #[serde(default)]
    pub(crate) choices: Vec<String>,
    #[serde(default)]
    pub(crate) placeholder: Option<String>,
    /// A fixed value, with `{NAME}` for each of `variables`.
    #[serde(default)]
    pub(crate) value: Option<String>,
    #[serde(default)]
    pub(crate) variables: BTreeMap<String, Input>,
}

/// A page of `GET /v0.1/servers`.
#[derive(Debug, Deserialize)]
pub(crate) struct Page {
    pub(crate) servers: Vec<serde_json::Value>,
    #[serde(default)]
    pub(crate) metadata: PageMeta,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PageMeta {
    /// `nextCursor`; `next_cursor` as GitHub's registry has written it.
    #[serde(default, alias = "next_cursor")]
    pub(crate) next_cursor: Option<String>,
}

/// An entry of a page that is not one: its name (or "an entry" when it has none), and why.
#[derive(Debug, thiserror::Error)]
#[error("{name}: {error}")]
pub(crate) struct UnreadableEntry {
    pub(crate) name: String,
    #[source]
    pub(crate) error: serde_json::Error,
}

/// Reads one entry of a page; an entry that is not one is skipped by the caller with the reason.
pub(crate) fn record(value: serde_json::Value) -> Result<Record, UnreadableEntry> {
    let name = value
        .pointer("/server/name")
        .and_then(|name| name.as_str())
        .unwrap_or("an entry")
        .to_owned();
    serde_json::from_value(value).map_err(|error| UnreadableEntry { name, error })
}

/// Whether `version` names one release exactly: not empty, not `latest`, no range, wildcard or
/// comparison.
pub fn is_exact_version(version: &str) -> bool {
    let version = version.trim();
    !version.is_empty()
        && !version.eq_ignore_ascii_case("latest")
        && version.len() <= 64
        && version.starts_with(|c: char| c.is_ascii_digit())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_'))
        && !version
            .split(['.', '-', '+'])
            .any(|part| part.eq_ignore_ascii_case("x") || part.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_names_its_next_cursor_either_way() {
        for text in [
            r#"{"servers": [], "metadata": {"nextCursor": "a:1"}}"#,
            r#"{"servers": [], "metadata": {"next_cursor": "a:1"}}"#,
        ] {
            let page: Page = serde_json::from_str(text).unwrap();
            assert_eq!(page.metadata.next_cursor.as_deref(), Some("a:1"), "{text}");
        }
    }

    #[test]
    fn versions_that_name_one_release_are_exact() {
        for exact in [
            "1.7.2",
            "2026.8.31",
            "0.6.2",
            "1.0.0-rc.1",
            "1.2.3+build.5",
            "2.0b1",
        ] {
            assert!(is_exact_version(exact), "{exact}");
        }
        for loose in [
            "",
            "latest",
            "LATEST",
            "^1.2.0",
            "~1.2",
            ">=1.0",
            "1.x",
            "1.2.*",
            "1.2 || 2",
            "*",
            "v1.2.3",
            "1..2",
            "1.2.3; rm",
        ] {
            assert!(!is_exact_version(loose), "{loose}");
        }
    }

    #[test]
    fn an_entry_reads_with_what_it_leaves_out_defaulted() {
        let record: Record = serde_json::from_str(
            r#"{"server": {"name": "io.github.a/b", "version": "1.0.0",
                "packages": [{"registryType": "npm", "identifier": "b", "version": "1.0.0"}]},
               "_meta": {"io.modelcontextprotocol.registry/official":
                   {"status": "deprecated", "statusMessage": "use c", "isLatest": true}}}"#,
        )
        .unwrap();
        assert_eq!(record.status(), Status::Deprecated);
        assert_eq!(record.status_message(), Some("use c"));
        assert_eq!(record.server.packages[0].transport.kind, "stdio");
        assert!(record.has_official_meta());
        let odd: Record = serde_json::from_str(
            r#"{"server": {"name": "a", "version": "1"}, "_meta": {"io.modelcontextprotocol.registry/official": {"status": "quarantined"}}}"#,
        )
        .unwrap();
        assert_eq!(odd.status(), Status::Unknown);
    }
}
