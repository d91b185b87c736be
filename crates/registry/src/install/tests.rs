use super::*;
use crate::plan::Values;

fn record(name: &str, version: &str) -> Record {
    let records: Vec<Record> =
        serde_json::from_str(include_str!("../../../../tests/registry/entries.json")).unwrap();
    records
        .into_iter()
        .find(|r| r.server.name == name && r.server.version == version)
        .unwrap()
}

fn derived(record: &Record, server: &str, values: &[(&str, &str)]) -> Derived {
    let given: BTreeMap<String, String> = values
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let choice = crate::plan::choose(&record.server).unwrap();
    crate::plan::derive(
        &record.server,
        choice,
        &Values {
            given: &given,
            server,
            taken: &std::collections::BTreeSet::new(),
        },
    )
    .unwrap()
}

const MINE: &str = "# My servers.\r\n[servers.git]\r\ncommand = \"sh\" # mine\r\n\r\n\
                    [profiles.work]\r\nservers = [\"git\", \"everything\"]\r\n";

/// [`MINE`] with server-everything 2026.8.18 added as `everything`.
fn mine_with_everything() -> String {
    let everything = record(
        "io.github.modelcontextprotocol/server-everything",
        "2026.8.18",
    );
    let plan = derived(&everything, "everything", &[]);
    with_server(MINE, Format::Toml, "everything", &everything, &plan).unwrap()
}

#[test]
fn an_added_server_is_appended_under_where_it_came_from_and_the_rest_is_kept() {
    let text = mine_with_everything();
    assert!(
        text.starts_with(MINE),
        "every byte before it stays: {text:?}"
    );
    let added = &text[MINE.len()..];
    assert_eq!(
        added,
        "\r\n# Added from the MCP Registry: io.github.modelcontextprotocol/server-everything 2026.8.18. \
         Source code: https://github.com/modelcontextprotocol/servers\r\n\
         [servers.everything]\r\ncommand = \"npx\"\r\n\
         args = [\"-y\", \"@modelcontextprotocol/server-everything@2026.8.18\", \"stdio\"]\r\n\
         registry = \"io.github.modelcontextprotocol/server-everything@2026.8.18\"\r\n"
    );
    let config = config::parse(Path::new("c.toml"), &text).unwrap();
    assert!(config.diagnostics.is_empty(), "{:?}", config.diagnostics);
    assert_eq!(config.backends.len(), 2);

    // Removing it takes out its table, its comment and its name in the profile.
    let removed = config::edit::remove_server(&text, Format::Toml, "everything").unwrap();
    assert_eq!(removed, MINE.replace("\"git\", \"everything\"", "\"git\""));
}

#[test]
fn a_json_config_gets_its_entry_in_mcp_servers() {
    let remote = record("io.github.switchboard-tests/remote-echo", "1.0.0");
    let before = "{\n  \"mcpServers\": {\n    \"git\": { \"command\": \"git-mcp\" }\n  }\n}\n";
    let text = with_server(
        before,
        Format::Json,
        "echo",
        &remote,
        &derived(&remote, "echo", &[("port", "4100"), ("X-Api-Key", "k")]),
    )
    .unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        value["mcpServers"]["echo"],
        serde_json::json!({
            "url": "http://127.0.0.1:4100/mcp",
            "transport": "streamable-http",
            "headers": {"X-Api-Key": "${secret:echo_X-Api-Key}"},
            "registry": "io.github.switchboard-tests/remote-echo@1.0.0"
        })
    );
    assert_eq!(
        secret_names(&value["mcpServers"]["echo"]),
        ["echo_X-Api-Key"]
    );
    let removed = config::edit::remove_server(&text, Format::Json, "echo").unwrap();
    let value: serde_json::Value = serde_json::from_str(&removed).unwrap();
    assert_eq!(value["mcpServers"].as_object().unwrap().len(), 1);
}

#[test]
fn a_runners_package_and_pin_are_read_from_its_command_line() {
    let args = |list: &[&str]| list.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    let npm = pinned_in(
        "npx",
        &args(&[
            "-y",
            "@modelcontextprotocol/server-everything@2026.8.18",
            "stdio",
        ]),
    )
    .unwrap();
    assert_eq!(
        (
            npm.registry_type,
            npm.identifier.as_str(),
            npm.version.as_deref(),
            npm.at
        ),
        (
            "npm",
            "@modelcontextprotocol/server-everything",
            Some("2026.8.18"),
            1
        )
    );
    let pypi = pinned_in("/usr/bin/uvx", &args(&["mcp-server-time==2026.10.19"])).unwrap();
    assert_eq!(
        (
            pypi.registry_type,
            pypi.identifier.as_str(),
            pypi.version.as_deref()
        ),
        ("pypi", "mcp-server-time", Some("2026.10.19"))
    );
    let loose = pinned_in("npx", &args(&["-y", "server-memory@^1.2"])).unwrap();
    assert_eq!(
        (loose.identifier.as_str(), loose.version),
        ("server-memory", None)
    );
    assert!(pinned_in("node", &args(&["server.js"])).is_none());
}

#[test]
fn an_update_moves_the_pin_in_place() {
    let text = mine_with_everything();
    let moved = config::edit::set_server_arg(
        &text,
        Format::Toml,
        "everything",
        1,
        "@modelcontextprotocol/server-everything@2026.8.31",
        Some("io.github.modelcontextprotocol/server-everything@2026.8.31"),
    )
    .unwrap();
    assert_eq!(
        moved,
        text.replace("server-everything@2026.8.18", "server-everything@2026.8.31"),
        "only the pin and the origin change (the comment says what was added)"
    );
    assert!(config::edit::set_server_arg(&text, Format::Toml, "everything", 9, "x", None).is_err());
}

#[test]
fn default_names_come_from_the_entrys_last_part() {
    assert_eq!(
        default_server_name("io.github.modelcontextprotocol/server-time"),
        "server-time"
    );
    assert_eq!(default_server_name("kbag"), "kbag");
    assert_eq!(default_server_name("io.x/a.b c"), "a-b-c");
    assert!(!valid_server_name("a b"));
}
