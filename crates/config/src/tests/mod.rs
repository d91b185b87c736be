//! Reading servers from TOML: defaults, every option, and each mistake reported where it is.

mod files;
mod profiles;
mod remote;
mod sandbox;

use std::net::{Ipv6Addr, SocketAddr};
use std::os::unix::fs::PermissionsExt as _;

use super::*;

/// A command that exists on every machine the tests run on.
const SHELL: &str = "sh";

const MISSING_COMMAND: &str = "switchboard-test-no-such-command-7f3a";

fn parse_toml(text: &str) -> Config {
    parse(Path::new("/etc/switchboard/config.toml"), text).expect("the file as a whole is usable")
}

fn parse_json(text: &str) -> Config {
    parse(Path::new("/etc/claude/claude_desktop_config.json"), text)
        .expect("the file as a whole is usable")
}

fn invalid_diagnostics(result: Result<Config, ConfigError>) -> Vec<Diagnostic> {
    match result {
        Err(ConfigError::Invalid { diagnostics, .. }) => diagnostics,
        other => panic!("expected ConfigError::Invalid, got {other:?}"),
    }
}

/// (severity, line, column, field) of each diagnostic, the parts tests compare exactly.
fn positions(diagnostics: &[Diagnostic]) -> Vec<(Severity, usize, usize, &str)> {
    diagnostics
        .iter()
        .map(|d| (d.severity, d.line, d.column, d.field.as_str()))
        .collect()
}

/// The message of the diagnostic about `field`, or nothing.
fn message_of(config: &Config, field: &str) -> String {
    config
        .diagnostics
        .iter()
        .find(|diagnostic| diagnostic.field == field)
        .map(|diagnostic| diagnostic.message.clone())
        .unwrap_or_default()
}

fn names(config: &Config) -> Vec<&str> {
    config.backends.iter().map(|b| b.name.as_str()).collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| item.to_string()).collect()
}

#[test]
fn a_minimal_backend_gets_every_default() {
    let config = parse_toml("[servers.demo]\ncommand = \"sh\"\n");

    assert_eq!(config.diagnostics, vec![]);
    assert!(!config.has_errors());
    assert_eq!(config.path, Path::new("/etc/switchboard/config.toml"));
    assert_eq!(
        config.backends,
        vec![BackendConfig::new("demo", SHELL, vec![])]
    );
    let backend = &config.backends[0];
    assert!(backend.enabled);
    let process = backend.process().expect("a local server");
    assert_eq!(process.env, BTreeMap::new());
    assert_eq!(process.cwd, None);
    assert_eq!(backend.request_timeout, Duration::from_secs(60));
    assert_eq!(backend.handshake_timeout, Duration::from_secs(30));
    assert_eq!(backend.health_interval, Some(Duration::from_secs(30)));
    assert_eq!(backend.health_timeout, Duration::from_secs(10));
    assert_eq!(backend.max_message_size, 128 * 1024 * 1024);
    assert_eq!(backend.stop_grace, Duration::from_secs(2));
    assert_eq!(backend.prefix, "demo");
    assert_eq!(backend.tools_allow, Vec::<String>::new());
    assert_eq!(backend.tools_deny, Vec::<String>::new());
    assert!(backend.start_on_demand);
    assert_eq!(
        backend.restart,
        RestartPolicy {
            backoff_base: Duration::from_secs(1),
            backoff_cap: Duration::from_secs(60),
            max_restarts: 5,
            window: Duration::from_secs(60),
            stable_after: Duration::from_secs(30),
        }
    );
    assert_eq!(
        config.endpoint,
        EndpointConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8765)),
            token: None,
            require_token: None,
            max_body_size: 16 * 1024 * 1024,
        }
    );
    assert_eq!(config.endpoint, EndpointConfig::default());
}

#[test]
fn every_option_is_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("work")).expect("create cwd");
    let text = r#"
# comments allowed
[servers.full]
command = "sh"
args = ["-c", "exec cat"]
env = { GREETING = "hello", SEARCH = "${env:PATH}", LITERAL = "$${env:PATH}" }
cwd = "work"
enabled = false
request_timeout = "90s"
handshake_timeout = "250ms"
health_interval = "5m"
health_timeout = 3
max_message_size = "64MiB"
stop_grace = "0s"
prefix = "fs"
tools_allow = ["read_*", "list_?"]
tools_deny = ["*_secret"]
start_on_demand = false
protocol = "modern"
confirm = ["push", "*delete*"]
confirm_destructive = true
confirm_timeout = "2m"
ask = "switchboard"

[servers.full.restart]
backoff_base = "500ms"
backoff_cap = "1h"
max_restarts = 0
window = "10m"
stable_after = "0s"
"#;
    let config = parse(&dir.path().join("config.toml"), text).expect("usable");

    assert_eq!(config.diagnostics, vec![]);
    let path_variable = std::env::var("PATH").expect("tests run with a PATH");
    let expected = BackendConfig {
        name: "full".to_owned(),
        launch: Launch::Process(ProcessLaunch {
            command: "sh".to_owned(),
            args: strings(&["-c", "exec cat"]),
            env: BTreeMap::from([
                ("GREETING".to_owned(), "hello".to_owned()),
                ("SEARCH".to_owned(), path_variable),
                ("LITERAL".to_owned(), "${env:PATH}".to_owned()),
            ]),
            written: Written {
                args: strings(&["-c", "exec cat"]),
                url: String::new(),
                values: BTreeMap::from([
                    ("GREETING".to_owned(), "hello".to_owned()),
                    ("SEARCH".to_owned(), "${env:PATH}".to_owned()),
                    ("LITERAL".to_owned(), "$${env:PATH}".to_owned()),
                ]),
            },
            cwd: Some(dir.path().join("work")),
            sandbox: None,
        }),
        enabled: false,
        request_timeout: Duration::from_secs(90),
        handshake_timeout: Duration::from_millis(250),
        health_interval: Some(Duration::from_secs(300)),
        health_timeout: Duration::from_secs(3),
        max_message_size: 64 * 1024 * 1024,
        stop_grace: Duration::ZERO,
        restart: RestartPolicy {
            backoff_base: Duration::from_millis(500),
            backoff_cap: Duration::from_secs(3600),
            max_restarts: 0,
            window: Duration::from_secs(600),
            stable_after: Duration::ZERO,
        },
        prefix: "fs".to_owned(),
        tools_allow: strings(&["read_*", "list_?"]),
        tools_deny: strings(&["*_secret"]),
        start_on_demand: false,
        protocol: Protocol::Only(Era::Stateless),
        confirm: Confirm {
            tools: vec![
                Pattern {
                    glob: "push".to_owned(),
                    line: 20,
                    column: 12,
                },
                Pattern {
                    glob: "*delete*".to_owned(),
                    line: 20,
                    column: 20,
                },
            ],
            destructive: true,
            timeout: Some(Duration::from_secs(120)),
        },
        ask: Ask::Switchboard,
    };
    assert_eq!(config.backends, vec![expected]);
}

#[test]
fn protocol_names_an_era_in_todays_words_or_as_configs_once_wrote_it() {
    for (written, protocol) in [
        ("auto", Protocol::Auto),
        ("session", Protocol::Only(Era::Session)),
        ("legacy", Protocol::Only(Era::Session)),
        ("stateless", Protocol::Only(Era::Stateless)),
        ("modern", Protocol::Only(Era::Stateless)),
    ] {
        let config = parse_toml(&format!(
            "[servers.a]\ncommand = \"sh\"\nprotocol = \"{written}\"\n"
        ));
        assert_eq!(config.backends[0].protocol, protocol, "{written}");
    }
}

#[test]
fn backends_keep_file_order() {
    let config = parse_toml(
        "[servers.zeta]\ncommand = \"sh\"\n[servers.alpha]\ncommand = \"sh\"\n\
         [servers.mid]\ncommand = \"sh\"\n",
    );
    assert_eq!(names(&config), ["zeta", "alpha", "mid"]);
}

#[test]
fn an_unknown_field_leaves_only_its_backend_out() {
    let text = r#"[servers.good]
command = "sh"

[servers.bad]
command = "sh"
colour = "blue"
"#;
    let config = parse_toml(text);

    assert_eq!(names(&config), ["good"]);
    assert!(config.has_errors());
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Error, 6, 1, "servers.bad.colour")]
    );
    assert!(
        config.diagnostics[0]
            .message
            .starts_with("unknown field `colour`, expected one of `command`, `args`,"),
        "{}",
        config.diagnostics[0].message
    );
}

#[test]
fn an_unknown_restart_field_is_an_error() {
    let config = parse_toml("[servers.demo]\ncommand = \"sh\"\nrestart = { max_restart = 3 }\n");

    assert_eq!(names(&config), Vec::<&str>::new());
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Error, 3, 13, "servers.demo.restart.max_restart")]
    );
}

#[test]
fn a_missing_command_points_at_the_server_header() {
    let text = "[servers.first]\ncommand = \"sh\"\n\n[servers.second]\nargs = [\"x\"]\n";
    let config = parse_toml(text);

    assert_eq!(names(&config), ["first"]);
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Error, 4, 10, "servers.second")]
    );
    assert_eq!(
        config.diagnostics[0].message,
        "missing field `command` (the program to start) or `url` (a remote server's address)"
    );
}

#[test]
fn names_that_differ_only_in_case_clash() {
    let text = "[servers.demo]\ncommand = \"sh\"\n\n[servers.Demo]\ncommand = \"sh\"\n";
    let config = parse_toml(text);

    assert_eq!(names(&config), ["demo"]);
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Error, 4, 10, "servers.Demo")]
    );
    assert_eq!(
        config.diagnostics[0].message,
        "server name `Demo` clashes with `demo` on line 1 (names are compared ignoring case); \
         this definition is ignored"
    );
}

#[test]
fn a_repeated_toml_table_is_a_syntax_error() {
    let text = "[servers.demo]\ncommand = \"sh\"\n[servers.demo]\ncommand = \"sh\"\n";
    let diagnostics = invalid_diagnostics(parse(Path::new("config.toml"), text));

    assert_eq!(positions(&diagnostics), [(Severity::Error, 3, 10, "")]);
    assert_eq!(diagnostics[0].message, "duplicate key");
}

#[test]
fn invalid_names_are_errors() {
    let longest = "n".repeat(48);
    let too_long = "x".repeat(49);
    let text = format!(
        "[servers.\"has space\"]\ncommand = \"sh\"\n\n[servers.\"\"]\ncommand = \"sh\"\n\n\
         [servers.{too_long}]\ncommand = \"sh\"\n\n[servers.{longest}]\ncommand = \"sh\"\n\n\
         [servers.\"caf\u{e9}\"]\ncommand = \"sh\"\n\n[servers.ok_name-2]\ncommand = \"sh\"\n"
    );
    let config = parse_toml(&text);

    assert_eq!(names(&config), [longest.as_str(), "ok_name-2"]);
    let too_long_field = format!("servers.{too_long}");
    assert_eq!(
        positions(&config.diagnostics),
        [
            (Severity::Error, 1, 10, "servers.has space"),
            (Severity::Error, 4, 10, "servers."),
            (Severity::Error, 7, 10, too_long_field.as_str()),
            (Severity::Error, 13, 10, "servers.caf\u{e9}"),
        ]
    );
    assert_eq!(
        config.diagnostics[0].message,
        "invalid server name \"has space\": use 1 to 48 ASCII letters, digits, `_` or `-`"
    );
}

#[test]
fn an_unknown_env_reference_is_an_error_at_its_value() {
    let text = "[servers.demo]\ncommand = \"sh\"\nenv = { TOKEN = \"${env:SWITCHBOARD_TEST_UNSET_7F3A}\" }\n";
    let config = parse_toml(text);

    assert_eq!(names(&config), Vec::<&str>::new());
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Error, 3, 17, "servers.demo.env.TOKEN")]
    );
    assert_eq!(
        config.diagnostics[0].message,
        "environment variable `SWITCHBOARD_TEST_UNSET_7F3A` is not set in Switchboard's environment"
    );
}

#[test]
fn a_command_that_cannot_be_found_is_an_error_at_its_value() {
    let text = format!(
        "[servers.by_name]\ncommand = \"{MISSING_COMMAND}\"\n\n\
         [servers.by_path]\ncommand = \"/nonexistent/bin/server\"\n\n\
         [servers.empty]\ncommand = \"\"\n"
    );
    let config = parse_toml(&text);

    assert_eq!(names(&config), Vec::<&str>::new());
    assert_eq!(
        positions(&config.diagnostics),
        [
            (Severity::Error, 2, 11, "servers.by_name.command"),
            (Severity::Error, 5, 11, "servers.by_path.command"),
            (Severity::Error, 8, 11, "servers.empty.command"),
        ]
    );
    assert_eq!(
        config.diagnostics[0].message,
        format!("`{MISSING_COMMAND}` was not found on PATH")
    );
    assert_eq!(
        config.diagnostics[1].message,
        "`/nonexistent/bin/server` does not exist or is not executable"
    );
    assert_eq!(config.diagnostics[2].message, "the command is empty");
}

#[test]
fn a_command_is_looked_up_in_the_path_the_backend_sets() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tool = dir.path().join("switchboard-test-tool");
    std::fs::write(&tool, "#!/bin/sh\n").expect("write tool");
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let bin = dir.path().display();
    let text = format!(
        "[servers.own_path]\ncommand = \"switchboard-test-tool\"\nenv = {{ PATH = \"{bin}\" }}\n\n\
         [servers.inherited_path]\ncommand = \"switchboard-test-tool\"\n"
    );
    let config = parse_toml(&text);

    assert_eq!(names(&config), ["own_path"]);
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Error, 6, 11, "servers.inherited_path.command")]
    );
}

#[test]
fn cwd_expands_home_and_must_exist() {
    let home = directories::BaseDirs::new()
        .expect("tests run with a home directory")
        .home_dir()
        .to_path_buf();
    let text = "[servers.home]\ncommand = \"sh\"\ncwd = \"~\"\n\n\
                [servers.nowhere]\ncommand = \"sh\"\ncwd = \"/nonexistent/switchboard-test\"\n";
    let config = parse_toml(text);

    assert_eq!(names(&config), ["home"]);
    assert_eq!(config.backends[0].process().expect("local").cwd, Some(home));
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Error, 7, 7, "servers.nowhere.cwd")]
    );
    assert_eq!(
        config.diagnostics[0].message,
        "/nonexistent/switchboard-test is not an existing directory"
    );
}

#[test]
fn wrong_values_are_each_reported_at_their_position() {
    let text = r#"[servers.demo]
command = "sh"
args = ["a", 1]
enabled = "yes"
request_timeout = 1.5
handshake_timeout = "0s"
health_timeout = "soon"
max_message_size = 0
stop_grace = -2
protocol = "2026"
ask = "sometimes"
[servers.demo.restart]
max_restarts = -1
backoff_base = "2m"
"#;
    let config = parse_toml(text);

    assert_eq!(names(&config), Vec::<&str>::new());
    assert_eq!(
        positions(&config.diagnostics),
        [
            (Severity::Error, 3, 14, "servers.demo.args[1]"),
            (Severity::Error, 4, 11, "servers.demo.enabled"),
            (Severity::Error, 5, 19, "servers.demo.request_timeout"),
            (Severity::Error, 6, 21, "servers.demo.handshake_timeout"),
            (Severity::Error, 7, 18, "servers.demo.health_timeout"),
            (Severity::Error, 8, 20, "servers.demo.max_message_size"),
            (Severity::Error, 9, 14, "servers.demo.stop_grace"),
            (Severity::Error, 10, 12, "servers.demo.protocol"),
            (Severity::Error, 11, 7, "servers.demo.ask"),
            (Severity::Error, 13, 16, "servers.demo.restart.max_restarts"),
            (Severity::Error, 14, 16, "servers.demo.restart.backoff_cap"),
        ]
    );
    let messages: Vec<&str> = config
        .diagnostics
        .iter()
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "expected a string, found an integer",
            "expected true or false, found a string",
            "expected a duration like \"30s\", found a float",
            "must be longer than zero",
            "expected a duration like \"250ms\", \"30s\", \"5m\", \"1h\" or \"7d\", found \"soon\"",
            "must be larger than zero",
            "expected a duration, found the integer -2",
            "unknown protocol \"2026\"; expected \"auto\", \"session\" or \"stateless\"",
            "unknown ask \"sometimes\"; expected \"auto\", \"editor\", \"switchboard\" or \"never\"",
            "expected a whole number from 0 to 4294967295, found -1",
            "backoff_cap (60s) is shorter than backoff_base (120s)",
        ]
    );
}

#[test]
fn durations_and_sizes_take_several_spellings() {
    let text = r#"[servers.integers]
command = "sh"
request_timeout = 5
health_interval = 0
max_message_size = 1048576

[servers.strings]
command = "sh"
request_timeout = "1h"
health_interval = "off"
max_message_size = "512KiB"

[servers.zero]
command = "sh"
health_interval = "0s"
"#;
    let config = parse_toml(text);

    assert_eq!(config.diagnostics, vec![]);
    let [integers, strings, zero] = &config.backends[..] else {
        panic!("expected three backends, got {:?}", config.backends);
    };
    assert_eq!(integers.request_timeout, Duration::from_secs(5));
    assert_eq!(integers.health_interval, None);
    assert_eq!(integers.max_message_size, 1024 * 1024);
    assert_eq!(strings.request_timeout, Duration::from_secs(3600));
    assert_eq!(strings.health_interval, None);
    assert_eq!(strings.max_message_size, 512 * 1024);
    assert_eq!(zero.health_interval, None);
}

#[test]
fn a_server_that_is_not_a_table_is_an_error() {
    let config = parse_toml("[servers]\ndemo = \"sh\"\n\n[servers.good]\ncommand = \"sh\"\n");

    assert_eq!(names(&config), ["good"]);
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Error, 2, 8, "servers.demo")]
    );
    assert_eq!(
        config.diagnostics[0].message,
        "expected a table, found a string"
    );
}

#[test]
fn only_the_first_syntax_error_is_reported() {
    // The parser would also complain about `"sh"`, a consequence of the same mistake.
    let text = "[servers.good]\ncommand = \"sh\"\n\n[servers.demo]\ncommand = = \"sh\"\n";
    let result = parse(Path::new("/etc/switchboard/config.toml"), text);
    let error = result.expect_err("a syntax error rejects the file");

    assert_eq!(
        error.to_string(),
        "config file /etc/switchboard/config.toml cannot be used:\n\
         /etc/switchboard/config.toml:5:11: error: extra `=`, expected nothing"
    );
    let diagnostics = invalid_diagnostics(Err(error));
    assert_eq!(positions(&diagnostics), [(Severity::Error, 5, 11, "")]);
}

#[test]
fn a_wrong_top_level_structure_makes_the_file_invalid() {
    let diagnostics = invalid_diagnostics(parse(
        Path::new("config.toml"),
        "[server.demo]\ncommand = \"sh\"\n",
    ));
    assert_eq!(positions(&diagnostics), [(Severity::Error, 1, 2, "server")]);
    assert_eq!(
        diagnostics[0].message,
        "unknown top-level field `server`; the file holds only [servers.NAME] and [profiles.NAME] \
         sections, and [endpoint], [desktop], [activity], [security] and [registry] tables"
    );

    let diagnostics = invalid_diagnostics(parse(Path::new("config.toml"), "servers = 1\n"));
    assert_eq!(
        positions(&diagnostics),
        [(Severity::Error, 1, 11, "servers")]
    );

    let diagnostics = invalid_diagnostics(parse(
        Path::new("config.toml"),
        "[[servers]]\ncommand = \"sh\"\n",
    ));
    assert_eq!(
        positions(&diagnostics),
        [(Severity::Error, 1, 1, "servers")]
    );
}

#[test]
fn an_empty_file_has_no_backends_and_no_complaints() {
    let config = parse_toml("# nothing yet\n");
    assert_eq!(config.backends, vec![]);
    assert_eq!(config.diagnostics, vec![]);
}

#[test]
fn tool_settings_are_read() {
    let text = r#"[servers.filtered]
command = "sh"
prefix = "Files-2_x"
tools_allow = []
tools_deny = ["delete_*", "*"]
start_on_demand = true
"#;
    let config = parse_toml(text);

    assert_eq!(config.diagnostics, vec![]);
    let backend = &config.backends[0];
    assert_eq!(backend.prefix, "Files-2_x");
    assert_eq!(backend.tools_allow, Vec::<String>::new());
    assert_eq!(backend.tools_deny, strings(&["delete_*", "*"]));
    assert!(backend.start_on_demand);
}

#[test]
fn wrong_tool_settings_are_reported_at_their_values() {
    let longest = "p".repeat(48);
    let too_long = "p".repeat(49);
    let text = format!(
        "[servers.dotted]\ncommand = \"sh\"\nprefix = \"fs.v2\"\n\n\
         [servers.empty]\ncommand = \"sh\"\nprefix = \"\"\n\n\
         [servers.long]\ncommand = \"sh\"\nprefix = \"{too_long}\"\n\n\
         [servers.longest]\ncommand = \"sh\"\nprefix = \"{longest}\"\n\n\
         [servers.lists]\ncommand = \"sh\"\nprefix = 7\ntools_allow = \"read_*\"\n\
         tools_deny = [\"ok\", 1]\nstart_on_demand = \"yes\"\n"
    );
    let config = parse_toml(&text);

    // An empty prefix is valid: that server's names are its own.
    assert_eq!(names(&config), ["empty", "longest"]);
    assert_eq!(config.backends[0].prefix, "");
    assert_eq!(config.backends[1].prefix, longest);
    assert_eq!(
        positions(&config.diagnostics),
        [
            (Severity::Error, 3, 10, "servers.dotted.prefix"),
            (Severity::Error, 11, 10, "servers.long.prefix"),
            (Severity::Error, 19, 10, "servers.lists.prefix"),
            (Severity::Error, 20, 15, "servers.lists.tools_allow"),
            (Severity::Error, 21, 21, "servers.lists.tools_deny[1]"),
            (Severity::Error, 22, 19, "servers.lists.start_on_demand"),
        ]
    );
    let messages: Vec<&str> = config
        .diagnostics
        .iter()
        .map(|d| d.message.as_str())
        .collect();
    let invalid = |prefix: &str| {
        format!(
            "invalid prefix {prefix:?}: use 1 to 48 ASCII letters, digits, `_` or `-`, or \"\" \
             for the server's own names"
        )
    };
    assert_eq!(messages[..2], [invalid("fs.v2"), invalid(&too_long)]);
    assert_eq!(
        messages[2..],
        [
            "expected a string, found an integer",
            "expected an array of strings, found a string",
            "expected a string, found an integer",
            "expected true or false, found a string",
        ]
    );
}

#[test]
fn the_registry_table_names_sources_and_whether_added_servers_wait() {
    let defaults = parse_toml("");
    assert_eq!(defaults.registry.sources, strings(DEFAULT_SOURCES));
    assert!(defaults.registry.review_added);
    let config = parse_toml(
        "[registry]\nsources = [\"https://registry.example.com/\", \"http://127.0.0.1:9000\"]\n\
         review_added = false\n\n[servers.a]\ncommand = \"sh\"\nregistry = \"io.github.a/b@1.0.0\"\n",
    );
    assert_eq!(
        config.registry.sources,
        strings(&["https://registry.example.com", "http://127.0.0.1:9000"])
    );
    assert!(!config.registry.review_added);
    assert!(config.diagnostics.is_empty(), "{:?}", config.diagnostics);
    let plain = parse_toml("[registry]\nsources = [\"http://registry.example.com\"]\n");
    assert!(
        message_of(&plain, "registry.sources").contains("is not a registry's base URL"),
        "{:?}",
        plain.diagnostics
    );
    assert_eq!(
        plain.registry.sources,
        strings(DEFAULT_SOURCES),
        "an error keeps the default"
    );
}
