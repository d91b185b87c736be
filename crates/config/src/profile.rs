//! Profiles: the `[profiles.NAME]` tables (in the JSON form, the objects of `"profiles"`), each
//! a view of the servers' tools for some editors, served at `/mcp/NAME` and by
//! `switchboard connect --profile NAME`. The profile `default` is what `/mcp` serves; it offers
//! everything unless the file describes it.

use std::collections::HashSet;
use std::time::Duration;

use super::reader::{Reader, Zero};
use super::report::Reporter;
use super::tree::{Entry, Node, NodeValue};
use super::{Format, is_valid_server_name};

/// The profile `/mcp` and a plain `switchboard connect` serve.
pub const DEFAULT_PROFILE: &str = "default";

/// The name budget of a profile that sets none: 64 minus `mcp__switchboard__`, which Claude Code
/// puts before each tool of the entry `switchboard install` writes.
pub const DEFAULT_NAME_BUDGET: usize = 46;

/// The smallest name budget a profile may set: a shortened name needs 9 characters for `_` and
/// its hash, and a few more to stay readable.
pub const MIN_NAME_BUDGET: usize = 16;

/// The longest name budget: what MCP clients and model APIs accept.
pub const MAX_NAME_BUDGET: usize = 64;

const PROFILE_FIELDS: &[&str] = &[
    "servers",
    "tools",
    "exclude_tools",
    "tier",
    "max_name_length",
    "discovery",
    "always_listed",
    "confirm",
    "confirm_destructive",
    "confirm_timeout",
];

/// How long a call that needs a person's yes waits for one, unless the config says.
pub const DEFAULT_CONFIRM_TIMEOUT: Duration = Duration::from_secs(60);

/// Which calls wait for a person's yes before they run: `confirm` (patterns of tools, by exposed
/// or the server's own name), `confirm_destructive` (every tool whose annotations do not say it
/// only reads), `confirm_timeout` (after which no answer is a no). Of a profile, and of a server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confirm {
    pub tools: Vec<Pattern>,
    pub destructive: bool,
    /// `None`: [`DEFAULT_CONFIRM_TIMEOUT`], or the other side's (server or profile).
    pub timeout: Option<Duration>,
}

impl Confirm {
    /// Whether any call needs a yes under these settings.
    pub fn is_off(&self) -> bool {
        self.tools.is_empty() && !self.destructive
    }
}

/// One profile: which servers and tools it offers, and how long their names may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub name: String,
    /// The servers it offers (their tools, prompts and resources); `None` offers every one.
    pub servers: Option<Vec<String>>,
    /// Glob patterns of tools to offer, matched against the exposed name and the server's own
    /// name; empty offers every tool.
    pub tools: Vec<Pattern>,
    /// Glob patterns of tools never to offer, even if `tools` names them.
    pub exclude_tools: Vec<Pattern>,
    pub tier: Tier,
    /// Longest exposed name of a tool or prompt.
    pub max_name_length: usize,
    /// How editors find the profile's tools.
    pub discovery: Discovery,
    /// Glob patterns of tools listed in search mode too, and pinned for clients that load
    /// tools lazily (`_meta["anthropic/alwaysLoad"]`).
    pub always_listed: Vec<Pattern>,
    /// Which of its calls wait for a person's yes.
    pub confirm: Confirm,
    /// Where the file describes the profile (1-based line and column of its name), so that
    /// `check` can point at it; `None` for a default profile the file does not describe.
    pub written_at: Option<(usize, usize)>,
}

/// How editors find a profile's tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Discovery {
    /// `tools/list` lists every tool.
    #[default]
    List,
    /// `tools/list` lists a tool that searches the profile's tools and one that calls them by
    /// name, and the always-listed ones.
    Search,
}

impl Profile {
    /// The default profile when the file describes none: everything, named to fit.
    pub fn everything(name: &str) -> Profile {
        Profile {
            name: name.to_owned(),
            servers: None,
            tools: Vec::new(),
            exclude_tools: Vec::new(),
            tier: Tier::All,
            max_name_length: DEFAULT_NAME_BUDGET,
            discovery: Discovery::List,
            always_listed: Vec::new(),
            confirm: Confirm::default(),
            written_at: None,
        }
    }

    /// Whether the profile offers anything of `server`.
    pub fn offers_server(&self, server: &str) -> bool {
        self.servers
            .as_ref()
            .is_none_or(|servers| servers.iter().any(|name| name == server))
    }
}

/// A glob pattern as written, with where it stands in the file so that `check` can point at one
/// that matches nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    pub glob: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
}

/// Which tools a profile offers by what they say of themselves (MCP tool annotations).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Tier {
    /// Every tool.
    #[default]
    All,
    /// Tools that say they only read (`readOnlyHint: true`).
    ReadOnly,
    /// Tools that only read, or say they destroy nothing (`destructiveHint: false`); MCP takes a
    /// tool that says neither as destructive.
    NonDestructive,
}

impl Tier {
    /// Whether a tool with these annotations belongs to the tier.
    pub fn admits(self, read_only: Option<bool>, destructive: Option<bool>) -> bool {
        match self {
            Tier::All => true,
            Tier::ReadOnly => read_only == Some(true),
            Tier::NonDestructive => read_only == Some(true) || destructive == Some(false),
        }
    }
}

/// Reads the `[profiles]` table. A profile with any error is reported and left out; the
/// default profile is added, offering everything, unless the file describes one. A profile may
/// name any server the file describes (`described`), one left out for its own errors too: that
/// server's error is its own, and the profile offers it again once it is fixed.
pub(super) fn read_profiles(
    reporter: &mut Reporter<'_>,
    format: Format,
    profiles: Option<&Entry>,
    described: &[Entry],
) -> Vec<Profile> {
    let mut read = Vec::new();
    if let Some(entry) = profiles {
        let mut reader = Reader {
            reporter,
            format,
            config_dir: std::path::Path::new(""),
        };
        if let Some(entries) = reader.table(&entry.value, "profiles") {
            let servers: HashSet<&str> =
                described.iter().map(|server| server.key.as_str()).collect();
            for profile in reader.unique_entries(entries, "profiles") {
                let errors_before = reader.reporter.n_errors();
                let Some(profile) = reader.profile(profile, &servers) else {
                    continue;
                };
                if reader.reporter.n_errors() == errors_before {
                    read.push(profile);
                }
            }
        }
    }
    if !read.iter().any(|profile| profile.name == DEFAULT_PROFILE) {
        read.insert(0, Profile::everything(DEFAULT_PROFILE));
    }
    read
}

impl Reader<'_, '_> {
    fn profile(&mut self, entry: &Entry, servers: &HashSet<&str>) -> Option<Profile> {
        let prefix = format!("profiles.{}", entry.key);
        if !is_valid_server_name(&entry.key) {
            self.reporter.error(
                entry.key_offset,
                &prefix,
                format!(
                    "invalid profile name {:?}: use ASCII letters, digits, `_` or `-`, as in \
                     server names (it is part of the URL /mcp/NAME)",
                    entry.key
                ),
            );
            return None;
        }
        let entries = self.table(&entry.value, &prefix)?;
        let mut profile = Profile::everything(&entry.key);
        profile.written_at = Some(self.reporter.position(entry.key_offset));
        for field_entry in self.unique_entries(entries, &prefix) {
            let field = format!("{prefix}.{}", field_entry.key);
            let value = &field_entry.value;
            match field_entry.key.as_str() {
                "servers" => profile.servers = self.server_names(value, &field, servers),
                "tools" => profile.tools = self.patterns(value, &field).unwrap_or_default(),
                "exclude_tools" => {
                    profile.exclude_tools = self.patterns(value, &field).unwrap_or_default();
                }
                "tier" => profile.tier = self.tier(value, &field).unwrap_or_default(),
                "discovery" => {
                    profile.discovery = self.discovery(value, &field).unwrap_or_default();
                }
                "always_listed" => {
                    profile.always_listed = self.patterns(value, &field).unwrap_or_default();
                }
                "max_name_length" => {
                    if let Some(length) = self.name_budget(value, &field) {
                        profile.max_name_length = length;
                    }
                }
                key @ ("confirm" | "confirm_destructive" | "confirm_timeout") => {
                    self.confirm(key, value, &field, &mut profile.confirm);
                }
                _ => self.unknown_field(field_entry, &field, PROFILE_FIELDS),
            }
        }
        Some(profile)
    }

    fn server_names(
        &mut self,
        node: &Node,
        field: &str,
        servers: &HashSet<&str>,
    ) -> Option<Vec<String>> {
        let names = self.strings(node, field)?;
        let NodeValue::Array(items) = &node.value else {
            return None;
        };
        for (name, item) in names.iter().zip(items) {
            if !servers.contains(name.as_str()) {
                self.reporter.error(
                    item.offset,
                    field,
                    match self.format {
                        Format::Toml => {
                            format!("unknown server `{name}`: no [servers.{name}] is configured")
                        }
                        Format::Json => {
                            format!("unknown server `{name}`: \"mcpServers\" has no {name:?}")
                        }
                    },
                );
            }
        }
        Some(names)
    }

    /// Reads one of [`Confirm`]'s fields, `key`, into `confirm`.
    pub(super) fn confirm(&mut self, key: &str, node: &Node, field: &str, confirm: &mut Confirm) {
        match key {
            "confirm" => confirm.tools = self.patterns(node, field).unwrap_or_default(),
            "confirm_destructive" => {
                confirm.destructive = self.boolean(node, field).unwrap_or(false)
            }
            _ => confirm.timeout = self.duration(node, field, Zero::Rejected),
        }
    }

    fn patterns(&mut self, node: &Node, field: &str) -> Option<Vec<Pattern>> {
        let globs = self.strings(node, field)?;
        let NodeValue::Array(items) = &node.value else {
            return None;
        };
        let mut patterns = Vec::with_capacity(globs.len());
        for (glob, item) in globs.into_iter().zip(items) {
            if glob.is_empty() {
                self.reporter
                    .error(item.offset, field, "an empty pattern matches no tool");
                continue;
            }
            let (line, column) = self.reporter.position(item.offset);
            patterns.push(Pattern { glob, line, column });
        }
        Some(patterns)
    }

    fn tier(&mut self, node: &Node, field: &str) -> Option<Tier> {
        let text = self.string(node, field)?;
        match text.as_str() {
            "all" => Some(Tier::All),
            "read-only" => Some(Tier::ReadOnly),
            "non-destructive" => Some(Tier::NonDestructive),
            _ => {
                self.reporter.error(
                    node.offset,
                    field,
                    format!(
                        "unknown tier {text:?}; expected \"all\", \"read-only\" or \
                         \"non-destructive\""
                    ),
                );
                None
            }
        }
    }

    fn discovery(&mut self, node: &Node, field: &str) -> Option<Discovery> {
        let text = self.string(node, field)?;
        match text.as_str() {
            "list" => Some(Discovery::List),
            "search" => Some(Discovery::Search),
            _ => {
                self.reporter.error(
                    node.offset,
                    field,
                    format!("unknown discovery {text:?}; expected \"list\" or \"search\""),
                );
                None
            }
        }
    }

    fn name_budget(&mut self, node: &Node, field: &str) -> Option<usize> {
        let NodeValue::Integer(length) = node.value else {
            self.type_error(node, field, "an integer");
            return None;
        };
        match usize::try_from(length) {
            Ok(length) if (MIN_NAME_BUDGET..=MAX_NAME_BUDGET).contains(&length) => Some(length),
            _ => {
                self.reporter.error(
                    node.offset,
                    field,
                    format!(
                        "{length} cannot keep names unique and readable: a shortened name \
                         needs 9 characters for its hash; use {MIN_NAME_BUDGET} to \
                         {MAX_NAME_BUDGET}"
                    ),
                );
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_follow_the_annotations_and_mcps_defaults() {
        assert!(Tier::All.admits(None, None));
        assert!(Tier::ReadOnly.admits(Some(true), None));
        assert!(!Tier::ReadOnly.admits(None, Some(false)));
        assert!(Tier::NonDestructive.admits(Some(false), Some(false)));
        assert!(Tier::NonDestructive.admits(Some(true), None));
        assert!(
            !Tier::NonDestructive.admits(Some(false), None),
            "a tool that says nothing counts as destructive"
        );
    }
}
