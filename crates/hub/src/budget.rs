//! The context budget of a profile: what its tool list costs a client on every turn (every tool's
//! definition is sent to the model each time), per server and per tool, and the limits of the
//! clients it would pass.
//!
//! Sizes are the bytes of each tool's definition as `tools/list` sends it (name, description,
//! schemas, annotations). Tokens are estimated at one per 4 bytes, rounded up: the usual rule of
//! thumb for English and JSON, within about 20% of what the models' tokenizers count. Clients'
//! limits are those they document or enforce (see [`CLIENT_LIMITS`]).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::value::RawValue;

use super::catalog::{self, CatalogCache, MergedCatalog, Source};
use config::{Config, Pattern, Profile};

/// Bytes per token in the estimate.
const BYTES_PER_TOKEN: usize = 4;

/// A client's limit on the tools it takes from all its servers together.
pub(crate) struct ClientLimit {
    pub(crate) client: &'static str,
    /// The editor's id, as `/api/clients` gives it.
    pub(crate) id: &'static str,
    /// Whether the limit is only an older version's, which an editor's file does not tell.
    pub(crate) older_versions: bool,
    pub(crate) max_tools: usize,
}

/// The tool counts known clients accept (2026): past them, a client drops tools or refuses the
/// server.
pub(crate) const CLIENT_LIMITS: &[ClientLimit] = &[
    ClientLimit {
        client: "Cursor (before 1.6)",
        id: "cursor",
        older_versions: true,
        max_tools: 40,
    },
    ClientLimit {
        client: "Windsurf",
        id: "windsurf",
        older_versions: false,
        max_tools: 50,
    },
    ClientLimit {
        client: "Cursor",
        id: "cursor",
        older_versions: false,
        max_tools: 80,
    },
    ClientLimit {
        client: "VS Code",
        id: "vscode",
        older_versions: false,
        max_tools: 128,
    },
];

/// A client's limit on one tool's name as it shows it, and what it puts before ours.
pub(crate) struct NameLimit {
    pub(crate) client: &'static str,
    /// The editor's id, as `/api/clients` gives it.
    pub(crate) id: &'static str,
    /// The longest name the client takes, counting what it adds.
    pub(crate) max: usize,
    /// What the client adds to our name when the editor's entry is `switchboard`.
    pub(crate) added: &'static str,
}

/// Clients that cap names: Claude Code names a tool `mcp__<entry>__<tool>` and the model API
/// takes 64 characters; Cursor drops a tool whose server and tool names together pass 60.
pub(crate) const NAME_LIMITS: &[NameLimit] = &[
    NameLimit {
        client: "Claude Code",
        id: "claude-code",
        max: 64,
        added: "mcp__switchboard__",
    },
    NameLimit {
        client: "Cursor",
        id: "cursor",
        max: 60,
        added: "switchboard",
    },
];

/// What one profile costs.
#[derive(Debug, Serialize)]
pub struct Budget {
    pub profile: String,
    pub tools: usize,
    pub bytes: usize,
    pub tokens: usize,
    /// By server, in config order.
    pub servers: Vec<Cost>,
    /// By tool, costliest first.
    pub tool_costs: Vec<ToolCost>,
    /// Names that clash or cannot be told apart, in words.
    pub warnings: Vec<String>,
    /// Limits of known clients this profile passes.
    pub client_warnings: Vec<ClientWarning>,
    /// The profile's tool patterns that match no tool of the servers known now.
    pub unmatched: Vec<Unmatched>,
    /// Every configured server, and whether the profile offers it.
    pub server_switches: Vec<Switch>,
    /// Tools of the profile's servers that its filters leave out.
    pub filtered_out: Vec<Switch>,
}

/// A known client's limit that a profile passes.
#[derive(Debug, Serialize)]
pub struct ClientWarning {
    /// The editor's id, as `/api/clients` gives it.
    pub client: &'static str,
    /// Whether only older versions of the client have the limit.
    pub older_versions: bool,
    /// What passes the limit and what to do, in words.
    pub message: String,
}

/// Something a profile offers or not, as the dashboard's switches show it.
#[derive(Debug, Serialize)]
pub struct Switch {
    /// A server's name, or a tool's exposed name.
    pub name: String,
    /// For a tool: its server, and the server's own name for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) server: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original: Option<String>,
    pub(crate) on: bool,
}

#[derive(Debug, Serialize)]
pub struct Cost {
    pub server: String,
    pub tools: usize,
    pub bytes: usize,
    pub tokens: usize,
}

#[derive(Debug, Serialize)]
pub struct ToolCost {
    /// The name the profile offers it under.
    pub name: String,
    pub(crate) server: String,
    /// The server's own name for it.
    pub original: String,
    pub(crate) bytes: usize,
    pub(crate) tokens: usize,
}

#[derive(Debug, Serialize)]
pub struct Unmatched {
    pub glob: String,
    pub line: usize,
    pub column: usize,
}

impl From<&Pattern> for Unmatched {
    fn from(pattern: &Pattern) -> Unmatched {
        Unmatched {
            glob: pattern.glob.clone(),
            line: pattern.line,
            column: pattern.column,
        }
    }
}

fn tokens(bytes: usize) -> usize {
    bytes.div_ceil(BYTES_PER_TOKEN)
}

/// Measures `catalog`, the merged catalog of `profile`; `servers` gives the config order.
pub(crate) fn measure(profile: &Profile, catalog: &MergedCatalog, servers: &[&str]) -> Budget {
    #[derive(serde::Deserialize)]
    struct Listed<'a> {
        #[serde(borrow)]
        tools: Vec<&'a RawValue>,
    }
    #[derive(serde::Deserialize)]
    struct Named<'a> {
        #[serde(borrow)]
        name: std::borrow::Cow<'a, str>,
    }
    let tools_result = catalog.tools_result.text();
    let listed: Vec<&RawValue> = serde_json::from_str::<Listed<'_>>(&tools_result)
        .map(|listed| listed.tools)
        .unwrap_or_default();
    let mut tool_costs: Vec<ToolCost> = listed
        .iter()
        .filter_map(|tool| {
            let name = serde_json::from_str::<Named<'_>>(tool.get()).ok()?.name;
            // Search mode's own two tools have no route: Switchboard answers them.
            let (server, original) = match catalog.tools.get(&*name) {
                Some(route) => (route.backend.to_string(), route.name.to_string()),
                None => ("switchboard".to_owned(), name.to_string()),
            };
            Some(ToolCost {
                server,
                original,
                name: name.into_owned(),
                bytes: tool.get().len(),
                tokens: tokens(tool.get().len()),
            })
        })
        .collect();
    let mut by_server: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for tool in &tool_costs {
        let entry = by_server.entry(tool.server.as_str()).or_default();
        entry.0 += 1;
        entry.1 += tool.bytes;
    }
    let costs: Vec<Cost> = servers
        .iter()
        .filter_map(|server| {
            let (tools, bytes) = by_server.get(server)?;
            Some(Cost {
                server: (*server).to_owned(),
                tools: *tools,
                bytes: *bytes,
                tokens: tokens(*bytes),
            })
        })
        .collect();
    let bytes = tool_costs.iter().map(|tool| tool.bytes).sum();
    let mut warnings = alike_warnings(profile, &tool_costs);
    warnings.extend(catalog.clash_warnings());
    let client_warnings = client_warnings(profile, &tool_costs);
    tool_costs.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    Budget {
        profile: profile.name.clone(),
        tools: tool_costs.len(),
        bytes,
        tokens: tokens(bytes),
        servers: costs,
        tool_costs,
        warnings,
        client_warnings,
        unmatched: catalog.unmatched.iter().map(Unmatched::from).collect(),
        server_switches: servers
            .iter()
            .map(|server| Switch {
                name: (*server).to_owned(),
                server: None,
                original: None,
                on: profile.offers_server(server),
            })
            .collect(),
        filtered_out: catalog
            .filtered_out
            .iter()
            .map(|(name, route)| Switch {
                name: name.clone(),
                server: Some(route.backend.to_string()),
                original: Some(route.name.to_string()),
                on: false,
            })
            .collect(),
    }
}

/// What each profile of `config` would cost, from the catalogs last cached in `cache` (what
/// `switchboard check` reports without starting any server).
pub fn cached(config: &Config, cache: &CatalogCache) -> Vec<Budget> {
    let catalogs: Vec<_> = config
        .backends
        .iter()
        .map(|backend| cache.load(&backend.name))
        .collect();
    let sources: Vec<Source<'_>> = config
        .backends
        .iter()
        .zip(catalogs)
        .map(|(config, catalog)| Source {
            config,
            catalog,
            listed: true,
        })
        .collect();
    let servers: Vec<&str> = config
        .backends
        .iter()
        .map(|backend| backend.name.as_str())
        .collect();
    config
        .profiles
        .iter()
        .map(|profile| measure(profile, &catalog::merge(&sources, profile), &servers))
        .collect()
}

/// The limits of known clients that `profile`, offering `tools`, passes: one warning per client.
fn client_warnings(profile: &Profile, tools: &[ToolCost]) -> Vec<ClientWarning> {
    let mut warnings: Vec<ClientWarning> = CLIENT_LIMITS
        .iter()
        .filter(|limit| tools.len() > limit.max_tools)
        .map(|limit| ClientWarning {
            client: limit.id,
            older_versions: limit.older_versions,
            message: format!(
                "{} tools: over {}'s {}; narrow the profile or use fewer servers",
                tools.len(),
                limit.client,
                limit.max_tools
            ),
        })
        .collect();
    for limit in NAME_LIMITS {
        let room = limit.max.saturating_sub(limit.added.len());
        let long = tools.iter().filter(|tool| tool.name.len() > room).count();
        if long > 0 {
            warnings.push(ClientWarning {
                client: limit.id,
                older_versions: false,
                message: format!(
                    "{long} tool name(s) longer than the {room} characters {} leaves; lower \
                     max_name_length (now {}) to {room}",
                    limit.client, profile.max_name_length
                ),
            });
        }
    }
    warnings
}

/// Names that `profile` cuts to the same first characters.
fn alike_warnings(profile: &Profile, tools: &[ToolCost]) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut stems: BTreeMap<&str, usize> = BTreeMap::new();
    for tool in tools {
        if let Some(stem) = super::names::cut_stem(&tool.name, &tool.original) {
            *stems.entry(stem).or_default() += 1;
        }
    }
    let alike: Vec<(&str, usize)> = stems.into_iter().filter(|(_, n)| *n > 1).collect();
    if let Some((stem, _)) = alike.first() {
        let n: usize = alike.iter().map(|(_, n)| n).sum();
        warnings.push(format!(
            "{n} tool names are cut to the same first characters and differ only in their \
             hash (like `{stem}_…`), so a model cannot tell them apart; raise max_name_length \
             (now {})",
            profile.max_name_length
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use config::DEFAULT_NAME_BUDGET;

    fn costs(names: &[&str]) -> Vec<ToolCost> {
        names
            .iter()
            .map(|name| ToolCost {
                name: (*name).to_owned(),
                server: "s".to_owned(),
                original: (*name).to_owned(),
                bytes: 100,
                tokens: 25,
            })
            .collect()
    }

    #[test]
    fn the_default_budget_passes_every_known_name_limit() {
        for limit in NAME_LIMITS {
            assert!(
                DEFAULT_NAME_BUDGET <= limit.max - limit.added.len(),
                "{}",
                limit.client
            );
        }
        let profile = Profile::everything("default");
        let fitting = "a".repeat(DEFAULT_NAME_BUDGET);
        assert!(client_warnings(&profile, &costs(&[&fitting])).is_empty());
    }

    #[test]
    fn counts_and_names_past_clients_limits_are_warned_about() {
        let names: Vec<String> = (0..51).map(|n| format!("s__tool{n}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let profile = Profile::everything("wide");
        let messages = |warned: Vec<ClientWarning>| -> Vec<(&'static str, bool, String)> {
            warned
                .into_iter()
                .map(|warning| (warning.client, warning.older_versions, warning.message))
                .collect()
        };
        assert_eq!(
            messages(client_warnings(&profile, &costs(&names))),
            [
                (
                    "cursor",
                    true,
                    "51 tools: over Cursor (before 1.6)'s 40; narrow the profile or use fewer \
                     servers"
                        .to_owned()
                ),
                (
                    "windsurf",
                    false,
                    "51 tools: over Windsurf's 50; narrow the profile or use fewer servers"
                        .to_owned()
                ),
            ]
        );
        let mut long = profile.clone();
        long.max_name_length = 64;
        let name = "s__".to_owned() + &"x".repeat(50);
        let warned = messages(client_warnings(&long, &costs(&[&name])));
        assert_eq!(warned.len(), 2, "{warned:?}");
        assert_eq!(warned[0].0, "claude-code");
        assert!(
            warned[0].2.contains("46 characters Claude Code leaves"),
            "{warned:?}"
        );
        assert_eq!(warned[1].0, "cursor");
        assert!(
            warned[1].2.contains("49 characters Cursor leaves"),
            "{warned:?}"
        );
        assert_eq!(tokens(101), 26);
    }

    #[test]
    fn names_cut_to_the_same_first_characters_are_warned_about() {
        let originals = [
            "list_pull_request_comments",
            "list_pull_request_reviews",
            "create_issue",
        ];
        let tools_within = |budget: usize| -> Vec<ToolCost> {
            let offered: Vec<crate::names::Offered<'_>> = originals
                .iter()
                .map(|name| crate::names::Offered {
                    backend: "github",
                    prefix: "github",
                    name,
                })
                .collect();
            crate::names::expose(&offered, &[], budget)
                .names
                .into_iter()
                .zip(originals)
                .map(|(name, original)| ToolCost {
                    name,
                    server: "github".to_owned(),
                    original: original.to_owned(),
                    bytes: 100,
                    tokens: 25,
                })
                .collect()
        };
        let mut narrow = Profile::everything("narrow");
        narrow.max_name_length = 24;
        let warned = alike_warnings(&narrow, &tools_within(24));
        assert_eq!(
            warned,
            [
                "2 tool names are cut to the same first characters and differ only in their hash \
              (like `github__list_pu_…`), so a model cannot tell them apart; raise \
              max_name_length (now 24)"
            ]
        );
        let wide = Profile::everything("wide");
        assert_eq!(
            alike_warnings(&wide, &tools_within(DEFAULT_NAME_BUDGET)),
            Vec::<String>::new()
        );
    }
}
