//! The merged catalog: every backend's tools, prompts, resources and templates under the names
//! editors see, with the route back to the owning backend.
//!
//! Each profile has one [`MergedCatalog`], made by [`merge`]: the servers it offers and the tools
//! it admits, named within its budget before its tool filters apply (so turning one tool off
//! never renames another), with the names its servers' tools would have shared reported as
//! clashes. Its lists are [`ListResult`]s whose items point into the backends' catalogs, so that
//! every profile shares one copy of each definition. A tool only an MCP App's view may call is in
//! no list the model sees and never found by search, but is in the list editors that render
//! views get, and callable by name. [`CatalogCache`] keeps each backend's last catalog on disk,
//! so that the next start lists it before the backend is ready (`cold_start.rs`).

pub(crate) mod skills;
pub(crate) mod views;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::list_result::{ItemKind, ListResult, Listed};
use super::names::{self, Clash, Offered};
use super::rewrite::{ObjectEntries, json_string};
use super::search::rank::ToolIndex;
use super::search::tools;
use config::{BackendConfig, Confirm, DEFAULT_CONFIRM_TIMEOUT, Discovery, Pattern, Profile, Tier};
pub(crate) use skills::Skills;
use supervisor::status::{BackendState, BackendStatus, Catalog};
pub use views::{View, Views};
use wire::apps;
use wire::mirrored::{HeaderParam, header_params};

/// Where an exposed tool or prompt goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub backend: Arc<str>,
    /// The name the backend knows it by.
    pub name: Arc<str>,
    /// The name editors call it by.
    pub(crate) exposed: Arc<str>,
}

/// What every session sees, rebuilt whenever a backend's status or catalog changes.
#[derive(Default)]
pub struct MergedCatalog {
    /// `{"tools":[…]}` with exposed names, as the model may see them: without the tools only an
    /// MCP App's view may call.
    pub tools_result: ListResult,
    /// The same with those tools too, for editors that render views (which keep such tools from
    /// their model themselves); `None` when the profile has none.
    pub(crate) tools_for_views: Option<ListResult>,
    pub(crate) prompts_result: ListResult,
    pub(crate) resources_result: String,
    pub(crate) templates_result: String,
    pub tools: HashMap<String, Route>,
    pub(crate) prompts: HashMap<String, Route>,
    /// Tools and prompts of backends that are down and not listed now, so that a call to one gets
    /// a clear "backend is down" error instead of "unknown tool".
    pub unlisted_tools: HashMap<String, Route>,
    pub(crate) unlisted_prompts: HashMap<String, Route>,
    /// Resource URI → the backends listing it.
    pub(crate) resources: HashMap<String, Vec<Arc<str>>>,
    /// Literal prefix of a URI template (before its first `{`) → backend.
    pub(crate) templates: Vec<(String, Arc<str>)>,
    /// Backends that offer resources at all.
    pub(crate) resource_backends: Vec<Arc<str>>,
    /// MCP Apps' views (`ui://`), renamed where two servers name the same one.
    pub(crate) views: Views,
    /// Skills (`skill://`), renamed likewise.
    pub(crate) skills: Skills,
    /// The tools whose calls wait for a person's yes (the profile's and their servers' `confirm`
    /// settings), by exposed name, with how long they wait.
    pub(crate) confirm: HashMap<String, Duration>,
    /// The tools of servers that serve views, by their servers' own names, as a view calls them
    /// (it knows no prefix): the exposed name, or `None` when two such servers have the name.
    pub(crate) view_calls: HashMap<String, Option<String>>,
    /// Backends whose catalog, live or last known, is merged here.
    pub(crate) catalogued: HashSet<Arc<str>>,
    /// Exposed tool name → the arguments it mirrors into `Mcp-Param-*` headers, for the tools
    /// that mirror any.
    pub(crate) mirrored: HashMap<String, Vec<HeaderParam>>,
    /// The profile's tool patterns (to offer, then to exclude) that match no tool of the servers
    /// catalogued now.
    pub(crate) unmatched: Vec<Pattern>,
    /// Tools of the profile's servers that its filters leave out, by the name it would give them.
    pub(crate) filtered_out: Vec<(String, Route)>,
    /// In search mode: the index of the profile's tools and their definitions.
    pub search: Option<Arc<Search>>,
    /// Exposed names of the tools that run only as a task (`execution.taskSupport` is
    /// `required`, MCP 2025-11-25).
    pub(crate) task_required: HashSet<String>,
    /// Exposed names of the tools only an MCP App's view may call (`wire::apps`): callable,
    /// but in no list the model sees and never found by search.
    pub(crate) app_only: HashSet<String>,
    /// Names that tools of different servers (or a tool and one of Switchboard's own) would have
    /// had, which none of them has; see [`names`].
    pub(crate) tool_clashes: Vec<Clash>,
    /// The same for prompts.
    pub(crate) prompt_clashes: Vec<Clash>,
}

/// What search mode answers from: every tool of the profile, ranked by [`ToolIndex`]. The index
/// is built on the first search after each rebuild, so that a rebuild (and the lists it answers)
/// stays as quick as in list mode.
pub struct Search {
    index: OnceLock<ToolIndex>,
    /// Exposed name → what is known of the tool.
    pub(crate) definitions: HashMap<String, Searchable>,
}

/// One tool of a profile in search mode.
pub(crate) struct Searchable {
    /// Its server's own name for it.
    pub(crate) own: Arc<str>,
    /// Its definition as `tools/list` would send it.
    pub(crate) json: String,
}

impl Search {
    /// The index of the profile's tools, built now if no search has needed it yet.
    pub fn index(&self) -> &ToolIndex {
        self.index.get_or_init(|| {
            ToolIndex::build(self.definitions.iter().filter_map(|(name, tool)| {
                let definition = serde_json::from_str::<&RawValue>(&tool.json).ok()?;
                Some((name.as_str(), &*tool.own, definition))
            }))
        })
    }
}

/// Which lists differ between two catalogs.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Changes {
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
}

impl MergedCatalog {
    /// Each clash of names, in words that name the servers, their own names and what they are
    /// offered as: tools first, then prompts.
    pub(crate) fn clash_warnings(&self) -> Vec<String> {
        let tools = self.tool_clashes.iter().map(|clash| ("tool", clash));
        let prompts = self.prompt_clashes.iter().map(|clash| ("prompt", clash));
        tools
            .chain(prompts)
            .map(|(kind, clash)| {
                let claims: Vec<String> = clash
                    .claimants
                    .iter()
                    .map(|claimant| {
                        format!(
                            "{} offers `{}` as `{}`",
                            claimant.backend, claimant.name, claimant.exposed
                        )
                    })
                    .collect();
                let claims = claims.join(", ");
                let name = &clash.name;
                if clash.reserved {
                    format!("the {kind} name `{name}` is Switchboard's own in search mode, so {claims}")
                } else {
                    format!(
                        "the {kind} name `{name}` clashes between servers, so none keeps it: {claims}"
                    )
                }
            })
            .collect()
    }

    /// The tool list for an editor that renders MCP Apps' views (`views`) or not.
    pub(crate) fn tools_list(&self, views: bool) -> &ListResult {
        match &self.tools_for_views {
            Some(list) if views => list,
            _ => &self.tools_result,
        }
    }

    pub(crate) fn changes_from(&self, before: &MergedCatalog) -> Changes {
        Changes {
            tools: self.tools_result != before.tools_result
                || self.tools_for_views != before.tools_for_views,
            prompts: self.prompts_result != before.prompts_result,
            resources: self.resources_result != before.resources_result
                || self.templates_result != before.templates_result,
        }
    }

    /// The backend serving `uri`: a view of MCP Apps' (see [`views`]), a skill's file (see
    /// [`skills`]; any other `skill://` URI is refused), an exact listing, else the longest
    /// template prefix, else the only backend with resources.
    pub(crate) fn resource_owner(&self, uri: &str) -> Result<Arc<str>, NoOwner> {
        if let Some(view) = self.views.get(uri) {
            return Ok(view.backend.clone());
        }
        if let Some(file) = self.skills.file(uri)? {
            return Ok(file.backend);
        }
        if let Some(owners) = self.resources.get(uri) {
            return match owners.as_slice() {
                [owner] => Ok(owner.clone()),
                many => Err(ambiguous(uri, many)),
            };
        }
        let longest = self
            .templates
            .iter()
            .filter(|(prefix, _)| !prefix.is_empty() && uri.starts_with(prefix.as_str()))
            .map(|(prefix, _)| prefix.len())
            .max();
        if let Some(longest) = longest {
            let mut owners: Vec<Arc<str>> = self
                .templates
                .iter()
                .filter(|(prefix, _)| prefix.len() == longest && uri.starts_with(prefix.as_str()))
                .map(|(_, backend)| backend.clone())
                .collect();
            owners.dedup();
            return match owners.as_slice() {
                [owner] => Ok(owner.clone()),
                many => Err(ambiguous(uri, many)),
            };
        }
        match self.resource_backends.as_slice() {
            [only] => Ok(only.clone()),
            _ => Err(NoOwner::Unserved {
                uri: uri.to_owned(),
            }),
        }
    }
}

/// Why no one backend serves a resource.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NoOwner {
    /// A `skill://` URI that is not read (see [`skills`]).
    #[error(transparent)]
    Skill(#[from] skills::NotReadable),
    /// More than one backend serves it.
    #[error("the resource {uri} is ambiguous: it is served by {}", owners.join(", "))]
    Ambiguous { uri: String, owners: Vec<Arc<str>> },
    #[error("no backend serves the resource {uri}")]
    Unserved { uri: String },
}

fn ambiguous(uri: &str, owners: &[Arc<str>]) -> NoOwner {
    NoOwner::Ambiguous {
        uri: uri.to_owned(),
        owners: owners.to_vec(),
    }
}

/// One backend's contribution: its routing config and its catalog.
pub struct Source<'a> {
    pub config: &'a BackendConfig,
    /// The live catalog, or else the last known one.
    pub catalog: Option<Arc<Catalog>>,
    /// Whether the catalog is listed now (see [`is_listed`]).
    pub listed: bool,
}

/// Whether a backend's tools are offered in its current state: when ready, while it is on its
/// way there, when stopped but a call would start it, and while it waits for a sign-in (a call
/// then says what to do).
pub fn is_listed(config: &BackendConfig, status: &BackendStatus) -> bool {
    match status.state {
        BackendState::Ready
        | BackendState::Starting
        | BackendState::Backoff
        | BackendState::NeedsSignIn => true,
        BackendState::Stopped => config.enabled && config.start_on_demand,
        BackendState::CrashLoop | BackendState::Stopping => false,
    }
}

/// Builds the merged catalog of `profile` from every backend (in config order): the servers it
/// offers, their tools it admits, named within its budget. Names are given before the profile's
/// tool filters apply, so turning one tool off never renames another.
pub fn merge(sources: &[Source<'_>], profile: &Profile) -> MergedCatalog {
    let mut merged = MergedCatalog::default();
    let mut tool_items = Vec::new();
    let mut prompt_items = Vec::new();
    let mut resource_items: Vec<(Arc<str>, &RawValue)> = Vec::new();
    let mut template_items: Vec<&RawValue> = Vec::new();
    let mut skill_lists: Vec<(Arc<str>, &[Box<RawValue>])> = Vec::new();
    for source in sources {
        let Some(catalog) = &source.catalog else {
            continue;
        };
        if !profile.offers_server(&source.config.name) {
            continue;
        }
        let backend: Arc<str> = Arc::from(source.config.name.as_str());
        merged.catalogued.insert(backend.clone());
        let prefix = source.config.prefix.as_str();
        for (index, tool) in catalog.tools.iter().enumerate() {
            if let Some(name) = item_str(tool, "name")
                && names::tool_allowed(&name, &source.config.tools_allow, &source.config.tools_deny)
            {
                tool_items.push(Item {
                    backend: backend.clone(),
                    prefix,
                    name,
                    raw: tool,
                    catalog,
                    kind: ItemKind::Tool,
                    index,
                    listed: source.listed,
                });
            }
        }
        for (index, prompt) in catalog.prompts.iter().enumerate() {
            if let Some(name) = item_str(prompt, "name") {
                prompt_items.push(Item {
                    backend: backend.clone(),
                    prefix,
                    name,
                    raw: prompt,
                    catalog,
                    kind: ItemKind::Prompt,
                    index,
                    listed: source.listed,
                });
            }
        }
        if !source.listed {
            continue;
        }
        if !catalog.resources.is_empty() || !catalog.resource_templates.is_empty() {
            merged.resource_backends.push(backend.clone());
        }
        for resource in &catalog.resources {
            resource_items.push((backend.clone(), resource));
        }
        if !catalog.skills.is_empty() {
            skill_lists.push((backend.clone(), catalog.skills.as_slice()));
        }
        for template in &catalog.resource_templates {
            if let Some(uri_template) = item_str(template, "uriTemplate") {
                let prefix = uri_template
                    .split('{')
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                merged.templates.push((prefix, backend.clone()));
            }
            template_items.push(template);
        }
    }
    let views = Views::new(
        tool_items
            .iter()
            .filter(|item| item.listed)
            .filter_map(|item| Some((item.backend.clone(), apps::view_uri(item.raw)?, true)))
            .chain(resource_items.iter().filter_map(|(backend, resource)| {
                let uri = item_str(resource, "uri")?;
                uri.starts_with(apps::VIEW_SCHEME)
                    .then(|| (backend.clone(), uri, false))
            })),
    );
    let skills = Skills::new(skill_lists);
    let mut resource_texts: Vec<Cow<'_, str>> = Vec::with_capacity(resource_items.len());
    for (backend, resource) in &resource_items {
        let uri = item_str(resource, "uri");
        let renamed = uri.as_deref().and_then(|uri| {
            (views.renamed(backend, uri).map(str::to_owned))
                .or_else(|| skills.renamed(backend, uri))
        });
        let text = renamed
            .as_deref()
            .and_then(|renamed| views::with_uri(resource.get(), renamed));
        let uri = renamed.or(uri);
        // What is not read (a held skill's SKILL.md, say) is not listed either.
        if uri.as_deref().is_some_and(|uri| skills.file(uri).is_err()) {
            continue;
        }
        if let Some(uri) = uri {
            merged
                .resources
                .entry(uri)
                .or_default()
                .push(backend.clone());
        }
        resource_texts.push(text.map_or(Cow::Borrowed(resource.get()), Cow::Owned));
    }
    let budget = profile.max_name_length;
    let patterns: Vec<&Pattern> = profile.tools.iter().chain(&profile.exclude_tools).collect();
    let matched = std::cell::RefCell::new(vec![false; patterns.len()]);
    let filtered_out = std::cell::RefCell::new(Vec::new());
    // Search mode's own tools are answered before routing, so no tool may take their names.
    let reserved: &[&str] = match profile.discovery {
        Discovery::List => &[],
        Discovery::Search => &[tools::SEARCH_TOOL, tools::CALL_TOOL],
    };
    let tool_listing = expose(&tool_items, reserved, budget, |item, exposed| {
        let mut matched = matched.borrow_mut();
        let (mut allowed, mut excluded) = (profile.tools.is_empty(), false);
        for (index, pattern) in patterns.iter().enumerate() {
            if names::glob_match(&pattern.glob, exposed)
                || names::glob_match(&pattern.glob, &item.name)
            {
                matched[index] = true;
                if index < profile.tools.len() {
                    allowed = true;
                } else {
                    excluded = true;
                }
            }
        }
        let admitted = allowed && !excluded && in_tier(profile.tier, item.raw);
        if !admitted && item.listed {
            let route = Route {
                backend: item.backend.clone(),
                name: Arc::from(item.name.as_str()),
                exposed: Arc::from(exposed),
            };
            filtered_out.borrow_mut().push((exposed.to_owned(), route));
        }
        admitted
    });
    merged.filtered_out = filtered_out.into_inner();
    merged.unmatched = patterns
        .iter()
        .zip(matched.into_inner())
        .filter(|(_, matched)| !matched)
        .map(|(pattern, _)| (*pattern).clone())
        .collect();
    let prompt_listing = expose(&prompt_items, &[], budget, |_, _| true);
    let tools = tool_listing.routes;
    // The exposed name of a (rare) tool picked out below.
    let exposed = |item: &Item<'_>| {
        tools
            .iter()
            .find(|(_, route)| route.backend == item.backend && *route.name == *item.name)
            .map(|(exposed, _)| exposed.clone())
    };
    merged.mirrored = tool_items
        .iter()
        .filter(|item| item.raw.get().contains("x-mcp-header"))
        .filter_map(|item| Some((exposed(item)?, header_params(item.raw.get()))))
        .collect();
    merged.task_required = tool_items
        .iter()
        .filter(|item| requires_task(item.raw))
        .filter_map(exposed)
        .collect();
    merged.app_only = tool_items
        .iter()
        .filter(|item| apps::app_only(item.raw))
        .filter_map(exposed)
        .collect();
    merged.tools = tools;
    merged.prompts = prompt_listing.routes;
    merged.unlisted_tools = tool_listing.unlisted;
    merged.unlisted_prompts = prompt_listing.unlisted;
    merged.tool_clashes = tool_listing.clashes;
    merged.prompt_clashes = prompt_listing.clashes;
    // (exposed name, item, whether it is always listed)
    let tools_json: Vec<(String, Listed, bool)> = tool_listing
        .json
        .into_iter()
        .map(|(name, listed)| {
            let route = &merged.tools[&name];
            let listed = with_renamed_view(listed, &route.backend, &views);
            let pinned = profile.always_listed.iter().any(|pattern| {
                names::glob_match(&pattern.glob, &name)
                    || names::glob_match(&pattern.glob, &route.name)
            });
            let listed = if pinned {
                Listed::Rewritten(tools::always_loaded(&listed.text()))
            } else {
                listed
            };
            (name, listed, pinned)
        })
        .collect();
    // What the model may see, and what an editor that renders views sees (the same, with the
    // tools only a view may call where they are in the list).
    let mut for_model: Vec<Listed> = Vec::with_capacity(tools_json.len());
    let mut for_views: Vec<Listed> = Vec::new();
    match profile.discovery {
        Discovery::List => {
            for (name, listed, _) in tools_json {
                if merged.app_only.is_empty() {
                    for_model.push(listed);
                    continue;
                }
                if !merged.app_only.contains(&name) {
                    for_model.push(listed.clone());
                }
                for_views.push(listed);
            }
        }
        Discovery::Search => {
            let meta = tools::meta_tools(tools_json.len().saturating_sub(merged.app_only.len()));
            for_model.extend(meta.into_iter().map(Listed::Rewritten));
            let mut definitions = HashMap::with_capacity(tools_json.len());
            let mut app_only = Vec::new();
            for (name, item, pinned) in tools_json {
                if merged.app_only.contains(&name) {
                    app_only.push(item);
                    continue;
                }
                let json = item.text();
                if pinned {
                    for_model.push(Listed::Rewritten(json.clone()));
                }
                let own = merged.tools[&name].name.clone();
                definitions.insert(name, Searchable { own, json });
            }
            if !app_only.is_empty() {
                for_views = for_model.clone();
                for_views.extend(app_only);
            }
            merged.search = Some(Arc::new(Search {
                index: OnceLock::new(),
                definitions,
            }));
        }
    }
    merged.tools_result = ListResult::new("tools", for_model);
    merged.tools_for_views =
        (!merged.app_only.is_empty()).then(|| ListResult::new("tools", for_views));
    merged.prompts_result = ListResult::new(
        "prompts",
        prompt_listing
            .json
            .into_iter()
            .map(|(_, listed)| listed)
            .collect(),
    );
    merged.resources_result = list_result("resources", resource_texts.iter().map(|text| &**text));
    merged.confirm = confirmed(
        sources,
        profile,
        &tool_items,
        merged.tools.iter().chain(&merged.unlisted_tools),
    );
    for (exposed, route) in &merged.tools {
        if views.serves(&route.backend) {
            merged
                .view_calls
                .entry(route.name.to_string())
                .and_modify(|only| *only = None)
                .or_insert_with(|| Some(exposed.clone()));
        }
    }
    merged.views = views;
    merged.skills = skills;
    merged.templates_result = list_result(
        "resourceTemplates",
        template_items.iter().map(|item| item.get()),
    );
    merged
}

/// The exposed names of the tools `routes` routes whose calls wait for a yes under `profile`'s
/// settings or their server's, with how long: the shortest timeout of the settings that ask.
/// The routes are the listed tools' and the unlisted ones' alike, since a call may take either.
fn confirmed<'r>(
    sources: &[Source<'_>],
    profile: &Profile,
    items: &[Item<'_>],
    routes: impl Iterator<Item = (&'r String, &'r Route)>,
) -> HashMap<String, Duration> {
    let servers: HashMap<&str, &Confirm> = sources
        .iter()
        .filter(|source| !source.config.confirm.is_off())
        .map(|source| (source.config.name.as_str(), &source.config.confirm))
        .collect();
    if profile.confirm.is_off() && servers.is_empty() {
        return HashMap::new();
    }
    let exposed: HashMap<(&str, &str), &str> = routes
        .map(|(exposed, route)| ((&*route.backend, &*route.name), exposed.as_str()))
        .collect();
    let mut confirmed = HashMap::new();
    for item in items {
        let Some(name) = exposed.get(&(&*item.backend, item.name.as_str())) else {
            continue;
        };
        let asks = |confirm: &Confirm| {
            let named = confirm.tools.iter().any(|pattern| {
                names::glob_match(&pattern.glob, name)
                    || names::glob_match(&pattern.glob, &item.name)
            });
            (named || (confirm.destructive && !in_tier(Tier::ReadOnly, item.raw)))
                .then(|| confirm.timeout.unwrap_or(DEFAULT_CONFIRM_TIMEOUT))
        };
        let server = servers
            .get(&*item.backend)
            .and_then(|confirm| asks(confirm));
        let timeout = match (asks(&profile.confirm), server) {
            (Some(profile), Some(server)) => Some(profile.min(server)),
            (profile, server) => profile.or(server),
        };
        if let Some(timeout) = timeout {
            confirmed.insert((*name).to_owned(), timeout);
        }
    }
    confirmed
}

/// `listed` (a tool of `backend`) naming its view by the URI editors see, where it is renamed.
fn with_renamed_view(listed: Listed, backend: &str, views: &Views) -> Listed {
    if !views.renames(backend) {
        return listed;
    }
    let text = listed.text();
    let renamed = serde_json::from_str::<&RawValue>(&text)
        .ok()
        .and_then(apps::view_uri)
        .and_then(|own| views.renamed(backend, &own))
        .and_then(|uri| views::tool_with_view(&text, uri));
    match renamed {
        Some(text) => Listed::Rewritten(text),
        None => listed,
    }
}

/// Whether a tool declares `"execution": {"taskSupport": "required"}`.
fn requires_task(tool: &RawValue) -> bool {
    tool.get().contains("taskSupport")
        && serde_json::from_str::<serde_json::Value>(tool.get())
            .is_ok_and(|tool| tool["execution"]["taskSupport"] == "required")
}

/// Whether a tool's annotations put it in `tier`; only the annotations are read.
fn in_tier(tier: Tier, tool: &RawValue) -> bool {
    #[derive(Deserialize, Default)]
    struct Annotations {
        #[serde(rename = "readOnlyHint")]
        read_only: Option<bool>,
        #[serde(rename = "destructiveHint")]
        destructive: Option<bool>,
    }
    #[derive(Deserialize)]
    struct Annotated {
        #[serde(default)]
        annotations: Option<Annotations>,
    }
    if tier == Tier::All {
        return true;
    }
    let annotations = serde_json::from_str::<Annotated>(tool.get())
        .ok()
        .and_then(|tool| tool.annotations)
        .unwrap_or_default();
    tier.admits(annotations.read_only, annotations.destructive)
}

/// A tool or prompt as one backend offers it.
struct Item<'a> {
    backend: Arc<str>,
    prefix: &'a str,
    name: String,
    raw: &'a RawValue,
    /// The catalog it is item `index` of, in the list of its `kind`.
    catalog: &'a Arc<Catalog>,
    kind: ItemKind,
    index: usize,
    listed: bool,
}

/// What [`expose`] gives.
struct Listing {
    /// The exposed name and the item of each listed item.
    json: Vec<(String, Listed)>,
    routes: HashMap<String, Route>,
    /// The routes of the items not listed now.
    unlisted: HashMap<String, Route>,
    clashes: Vec<Clash>,
}

/// Renames items to their exposed names within `budget`, none of them in `reserved` (all
/// together, so names do not depend on which backends are up), and keeps those `keep` admits.
fn expose(
    items: &[Item<'_>],
    reserved: &[&str],
    budget: usize,
    keep: impl Fn(&Item<'_>, &str) -> bool,
) -> Listing {
    let offered: Vec<Offered<'_>> = items
        .iter()
        .map(|item| Offered {
            backend: &item.backend,
            prefix: item.prefix,
            name: &item.name,
        })
        .collect();
    let exposed = names::expose(&offered, reserved, budget);
    let mut json = Vec::with_capacity(items.len());
    let mut routes = HashMap::with_capacity(items.len());
    let mut unlisted = HashMap::new();
    for (item, exposed) in items.iter().zip(exposed.names) {
        if !keep(item, &exposed) {
            continue;
        }
        let route = Route {
            backend: item.backend.clone(),
            name: Arc::from(item.name.as_str()),
            exposed: Arc::from(exposed.as_str()),
        };
        if !item.listed {
            unlisted.insert(exposed, route);
            continue;
        }
        let name = json_string(&exposed);
        let Some(listed) = Listed::renamed(item.catalog, item.kind, item.index, name) else {
            continue;
        };
        json.push((exposed.clone(), listed));
        routes.insert(exposed, route);
    }
    Listing {
        json,
        routes,
        unlisted,
        clashes: exposed.clashes,
    }
}

fn list_result<'a>(field: &str, items: impl Iterator<Item = &'a str> + Clone) -> String {
    // Sized first: the result lives until the next rebuild, and a string grown by doubling would
    // keep up to twice the room it needs.
    let length = items.clone().map(|item| item.len() + 1).sum::<usize>() + field.len() + 8;
    let mut out = String::with_capacity(length);
    out.push_str(&format!("{{\"{field}\":["));
    for (index, item) in items.enumerate() {
        if index > 0 {
            out.push(',');
        }
        out.push_str(item);
    }
    out.push_str("]}");
    out
}

fn item_str(item: &RawValue, key: &str) -> Option<String> {
    ObjectEntries::parse(item.get())
        .ok()?
        .get_str(key)
        .map(|value| value.into_owned())
}

/// The last known catalogs of backends, kept on disk so tools stay listed while a backend is down.
pub struct CatalogCache {
    dir: Option<PathBuf>,
}

#[derive(Serialize, Deserialize)]
struct CachedCatalog {
    tools: Vec<Box<RawValue>>,
    prompts: Vec<Box<RawValue>>,
    resources: Vec<Box<RawValue>>,
    #[serde(rename = "resourceTemplates")]
    resource_templates: Vec<Box<RawValue>>,
    /// Absent from the files of versions before Skills.
    #[serde(default)]
    skills: Vec<Box<RawValue>>,
}

impl CatalogCache {
    pub fn new(dir: Option<PathBuf>) -> CatalogCache {
        CatalogCache { dir }
    }

    fn path(&self, backend: &str) -> Option<PathBuf> {
        Some(self.dir.as_ref()?.join(format!("{backend}.json")))
    }

    pub fn load(&self, backend: &str) -> Option<Arc<Catalog>> {
        let text = std::fs::read_to_string(self.path(backend)?).ok()?;
        let cached: CachedCatalog = serde_json::from_str(&text).ok()?;
        Some(Arc::new(Catalog {
            tools: cached.tools,
            resources: cached.resources,
            resource_templates: cached.resource_templates,
            prompts: cached.prompts,
            skills: cached.skills,
        }))
    }

    /// Writes the catalog with owner-only permissions, unless the file already holds it (as
    /// after most restarts); failures are logged, never fatal.
    pub(crate) fn store(&self, backend: &str, catalog: &Catalog) {
        let Some(path) = self.path(backend) else {
            return;
        };
        let cached = CachedCatalog {
            tools: catalog.tools.clone(),
            prompts: catalog.prompts.clone(),
            resources: catalog.resources.clone(),
            resource_templates: catalog.resource_templates.clone(),
            skills: catalog.skills.clone(),
        };
        let text = serde_json::to_string(&cached).expect("raw JSON values serialize");
        if std::fs::read(&path).is_ok_and(|kept| kept == text.as_bytes()) {
            return;
        }
        if let Err(error) = platform::atomic::write_private(&path, text.as_bytes()) {
            tracing::warn!(%error, path = %path.display(), "could not cache the catalog");
        }
    }
}

#[cfg(test)]
mod tests;
