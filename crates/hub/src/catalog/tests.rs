use serde_json::{Value, json};

use super::*;
use std::time::Duration;

use config::{DEFAULT_CONFIRM_TIMEOUT, DEFAULT_NAME_BUDGET, DEFAULT_PROFILE};

fn raw(value: Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(&value).expect("JSON")
}

/// A backend offering tools with these names and annotations.
fn backend(name: &str, tools: &[(&str, Value)]) -> (BackendConfig, Arc<Catalog>) {
    let catalog = Catalog {
        tools: tools
            .iter()
            .map(|(tool, annotations)| raw(json!({"name": tool, "annotations": annotations})))
            .collect(),
        resources: vec![raw(json!({"uri": format!("{name}://readme")}))],
        resource_templates: Vec::new(),
        prompts: vec![raw(json!({"name": "hello"}))],
        skills: Vec::new(),
    };
    (
        BackendConfig::new(name, "sh", Vec::new()),
        Arc::new(catalog),
    )
}

fn merged(backends: &[(BackendConfig, Arc<Catalog>)], profile: &Profile) -> MergedCatalog {
    let sources: Vec<Source<'_>> = backends
        .iter()
        .map(|(config, catalog)| Source {
            config,
            catalog: Some(catalog.clone()),
            listed: true,
        })
        .collect();
    merge(&sources, profile)
}

fn tool_names(catalog: &MergedCatalog) -> Vec<String> {
    names_in(&catalog.tools_result)
}

fn patterns(globs: &[&str]) -> Vec<Pattern> {
    globs
        .iter()
        .map(|glob| Pattern {
            glob: (*glob).to_owned(),
            line: 1,
            column: 1,
        })
        .collect()
}

fn servers() -> Vec<(BackendConfig, Arc<Catalog>)> {
    vec![
        backend(
            "fs",
            &[
                ("read_file", json!({"readOnlyHint": true})),
                ("write_file", json!({"destructiveHint": false})),
                ("delete_file", json!({})),
            ],
        ),
        backend("git", &[("git_status", json!({"readOnlyHint": true}))]),
    ]
}

fn names_in(list: &ListResult) -> Vec<String> {
    let result: Value = serde_json::from_str(&list.text()).expect("JSON");
    result["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| tool["name"].as_str().expect("a name").to_owned())
        .collect()
}

/// A server of MCP Apps: a tool with a view, and one only that view may call.
fn monitor() -> (BackendConfig, Arc<Catalog>) {
    let view = json!({"resourceUri": "ui://monitor/app.html"});
    let catalog = Catalog {
        tools: vec![
            raw(json!({"name": "info", "_meta": {"ui": view}})),
            raw(json!({"name": "poll", "_meta": {"ui": {"visibility": ["app"]}}})),
            raw(json!({"name": "both", "_meta": {"ui": {"visibility": ["model", "app"]}}})),
        ],
        resources: Vec::new(),
        resource_templates: Vec::new(),
        prompts: Vec::new(),
        skills: Vec::new(),
    };
    (
        BackendConfig::new("mon", "sh", Vec::new()),
        Arc::new(catalog),
    )
}

#[test]
fn tools_only_a_view_may_call_reach_only_editors_that_render_views() {
    let apps = vec![monitor()];
    let catalog = merged(&apps, &Profile::everything(DEFAULT_PROFILE));
    assert_eq!(
        names_in(catalog.tools_list(false)),
        ["mon__info", "mon__both"]
    );
    assert_eq!(
        names_in(catalog.tools_list(true)),
        ["mon__info", "mon__poll", "mon__both"]
    );
    assert!(catalog.tools.contains_key("mon__poll"), "still callable");
    assert_eq!(
        catalog.view_calls.get("poll"),
        Some(&Some("mon__poll".to_owned())),
        "as its view calls it, by the server's own name"
    );
    let with_others = merged(
        &[monitor(), servers().remove(1)],
        &Profile::everything(DEFAULT_PROFILE),
    );
    assert!(
        !with_others.view_calls.contains_key("git_status"),
        "a server without views is called by exposed names only"
    );
    assert_eq!(catalog.app_only, HashSet::from(["mon__poll".to_owned()]));

    let mut search = Profile::everything("search");
    search.discovery = Discovery::Search;
    let catalog = merged(&apps, &search);
    let model = names_in(catalog.tools_list(false));
    assert_eq!(model, [tools::SEARCH_TOOL, tools::CALL_TOOL]);
    let hits: Vec<String> = catalog
        .search
        .as_ref()
        .expect("search mode")
        .index()
        .search("poll info both", 10)
        .into_iter()
        .map(|hit| hit.name)
        .collect();
    assert!(hits.contains(&"mon__info".to_owned()), "{hits:?}");
    assert!(!hits.contains(&"mon__poll".to_owned()), "{hits:?}");
    assert_eq!(
        names_in(catalog.tools_list(true)),
        [tools::SEARCH_TOOL, tools::CALL_TOOL, "mon__poll"]
    );

    let without_views = merged(&servers(), &Profile::everything(DEFAULT_PROFILE));
    assert!(without_views.tools_for_views.is_none());
    assert_eq!(
        names_in(without_views.tools_list(true)),
        names_in(&without_views.tools_result)
    );
}

#[test]
fn a_profile_offers_only_its_servers_and_their_tools_it_admits() {
    let servers = servers();
    let everything = merged(&servers, &Profile::everything(DEFAULT_PROFILE));
    assert_eq!(
        tool_names(&everything),
        [
            "fs__read_file",
            "fs__write_file",
            "fs__delete_file",
            "git__git_status"
        ]
    );

    let mut only_git = Profile::everything("git");
    only_git.servers = Some(vec!["git".to_owned()]);
    let catalog = merged(&servers, &only_git);
    assert_eq!(tool_names(&catalog), ["git__git_status"]);
    assert!(
        !catalog.prompts.contains_key("fs__hello"),
        "prompts follow servers"
    );
    assert!(
        !catalog.resources.contains_key("fs://readme"),
        "so do resources"
    );

    let mut globbed = Profile::everything("globbed");
    // One pattern on an exposed name, one on a server's own name.
    globbed.tools = patterns(&["fs__*", "git_status"]);
    globbed.exclude_tools = patterns(&["delete_*"]);
    assert_eq!(
        tool_names(&merged(&servers, &globbed)),
        ["fs__read_file", "fs__write_file", "git__git_status"]
    );

    let mut read_only = Profile::everything("read");
    read_only.tier = Tier::ReadOnly;
    assert_eq!(
        tool_names(&merged(&servers, &read_only)),
        ["fs__read_file", "git__git_status"]
    );
    read_only.tier = Tier::NonDestructive;
    assert_eq!(
        tool_names(&merged(&servers, &read_only)),
        ["fs__read_file", "fs__write_file", "git__git_status"],
        "a tool that says nothing counts as destructive"
    );
}

/// `backend(name, tools)` offering its tools under their own names.
fn unprefixed(name: &str, tools: &[&str]) -> (BackendConfig, Arc<Catalog>) {
    let tools: Vec<(&str, Value)> = tools.iter().map(|tool| (*tool, json!({}))).collect();
    let (mut config, catalog) = backend(name, &tools);
    config.prefix = String::new();
    (config, catalog)
}

#[test]
fn a_server_without_a_prefix_is_offered_and_routed_under_its_own_names() {
    let servers = vec![
        unprefixed("plain", &["read_file"]),
        backend("fs", &[("read_file", json!({}))]),
    ];
    let mut profile = Profile::everything(DEFAULT_PROFILE);
    // A server's own name matches both; an exposed one only the prefixed tool.
    profile.exclude_tools = patterns(&["fs__read_file"]);
    let catalog = merged(&servers, &profile);
    assert_eq!(tool_names(&catalog), ["read_file"]);
    let route = &catalog.tools["read_file"];
    assert_eq!((&*route.backend, &*route.name), ("plain", "read_file"));
    assert_eq!(&*catalog.prompts["hello"].backend, "plain");
    assert_eq!(&*catalog.prompts["fs__hello"].backend, "fs");
    assert_eq!(catalog.tool_clashes, []);
    assert_eq!(catalog.clash_warnings(), Vec::<String>::new());
}

#[test]
fn a_clash_keeps_routes_apart_and_is_told_in_words() {
    let servers = vec![
        unprefixed("conformance", &["github__create_issue"]),
        backend("github", &[("create_issue", json!({}))]),
    ];
    let catalog = merged(&servers, &Profile::everything(DEFAULT_PROFILE));
    let names = tool_names(&catalog);
    assert_eq!(
        names,
        [
            "github__create_issue_93bee394",
            "github__create_issue_9e372030"
        ]
    );
    let routes: Vec<(&str, &str)> = names
        .iter()
        .map(|name| (&*catalog.tools[name].backend, &*catalog.tools[name].name))
        .collect();
    assert_eq!(
        routes,
        [
            ("conformance", "github__create_issue"),
            ("github", "create_issue")
        ]
    );
    assert_eq!(
        catalog.clash_warnings(),
        [
            "the tool name `github__create_issue` clashes between servers, so none keeps it: \
             conformance offers `github__create_issue` as `github__create_issue_93bee394`, \
             github offers `create_issue` as `github__create_issue_9e372030`"
        ]
    );
}

#[test]
fn in_search_mode_no_tool_takes_switchboards_own_names() {
    let servers = vec![unprefixed("plain", &["search_tools", "read_file"])];
    let mut search = Profile::everything("search");
    search.discovery = Discovery::Search;
    let catalog = merged(&servers, &search);
    assert_eq!(
        tool_names(&catalog),
        [tools::SEARCH_TOOL, tools::CALL_TOOL],
        "only Switchboard's own are listed"
    );
    let definitions = &catalog.search.as_ref().expect("search mode").definitions;
    let mut names: Vec<&str> = definitions.keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(names, ["read_file", "search_tools_09d848d7"]);
    assert_eq!(
        &*catalog.tools["search_tools_09d848d7"].name,
        "search_tools"
    );
    assert_eq!(&*definitions["search_tools_09d848d7"].own, "search_tools");
    assert_eq!(
        catalog.clash_warnings(),
        [
            "the tool name `search_tools` is Switchboard's own in search mode, so plain \
             offers `search_tools` as `search_tools_09d848d7`"
        ]
    );
    let listed = merged(&servers, &Profile::everything(DEFAULT_PROFILE));
    assert_eq!(tool_names(&listed), ["search_tools", "read_file"]);
    assert_eq!(listed.clash_warnings(), Vec::<String>::new());
}

#[test]
fn names_fit_the_budget_and_filters_never_rename_other_tools() {
    let long = "summarize_the_repository_history_for_a_release";
    let servers = vec![backend(
        "git",
        &[(long, json!({})), ("git_status", json!({}))],
    )];
    let mut tight = Profile::everything("tight");
    tight.max_name_length = 20;
    let names = tool_names(&merged(&servers, &tight));
    assert!(names.iter().all(|name| name.len() <= 20), "{names:?}");
    assert_eq!(names[1], "git__git_status");
    let shortened = names[0].clone();
    assert!(shortened.starts_with("git__summar_"), "{shortened}");

    tight.exclude_tools = patterns(&["git_status"]);
    assert_eq!(
        tool_names(&merged(&servers, &tight)),
        [shortened],
        "the same name with its neighbour filtered out"
    );
    let default = tool_names(&merged(&servers, &Profile::everything(DEFAULT_PROFILE)));
    assert!(default[0].len() <= DEFAULT_NAME_BUDGET && default[0].len() > 20);
}

#[test]
fn calls_wait_for_a_yes_as_the_profile_and_each_server_say() {
    let mut servers = servers();
    // git: every call of git_status (by its own name) waits 30 s.
    servers[1].0.confirm = Confirm {
        tools: patterns(&["git_status"]),
        destructive: false,
        timeout: Some(Duration::from_secs(30)),
    };
    let nothing = merged(&servers[..1], &Profile::everything(DEFAULT_PROFILE));
    assert!(nothing.confirm.is_empty(), "no setting asks");

    let mut careful = Profile::everything("careful");
    careful.confirm = Confirm {
        tools: patterns(&["*write*"]),
        destructive: true,
        timeout: Some(Duration::from_secs(10)),
    };
    let catalog = merged(&servers, &careful);
    let mut asking: Vec<(&str, u64)> = catalog
        .confirm
        .iter()
        .map(|(name, timeout)| (name.as_str(), timeout.as_secs()))
        .collect();
    asking.sort_unstable();
    assert_eq!(
        asking,
        [
            ("fs__delete_file", 10),
            ("fs__write_file", 10),
            ("git__git_status", 30)
        ],
        "read_file says it only reads; git_status is its server's"
    );

    let mut default_timeout = Profile::everything("default-timeout");
    default_timeout.confirm.tools = patterns(&["fs__read_file"]);
    let catalog = merged(&servers, &default_timeout);
    assert_eq!(
        catalog.confirm.get("fs__read_file"),
        Some(&DEFAULT_CONFIRM_TIMEOUT)
    );
}

/// A server that is stopping or crash-looping is not listed, but a call may still be routed to
/// its tools (and run, if it comes back before the call does): such a call asks all the same.
#[test]
fn calls_to_tools_of_servers_not_listed_now_wait_for_a_yes_too() {
    let servers = servers();
    let mut careful = Profile::everything("careful");
    careful.confirm = Confirm {
        tools: patterns(&["fs__write_file", "git_status"]),
        destructive: false,
        timeout: None,
    };
    let sources: Vec<Source<'_>> = servers
        .iter()
        .map(|(config, catalog)| Source {
            config,
            catalog: Some(catalog.clone()),
            listed: config.name == "git",
        })
        .collect();
    let catalog = merge(&sources, &careful);
    assert!(catalog.unlisted_tools.contains_key("fs__write_file"));
    assert!(!catalog.tools.contains_key("fs__write_file"));
    let mut asking: Vec<&str> = catalog.confirm.keys().map(String::as_str).collect();
    asking.sort_unstable();
    assert_eq!(asking, ["fs__write_file", "git__git_status"]);
}
