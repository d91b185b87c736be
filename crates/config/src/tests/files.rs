//! The `[endpoint]` table, Claude Desktop JSON, the default config, and loading files.

use super::*;

#[test]
fn the_endpoint_table_is_read() {
    let text = r#"[endpoint]
listen = "[::1]:9000"
token = "s3cret-$${env:literally}"
max_body_size = "1MiB"

[servers.demo]
command = "sh"
"#;
    let config = parse_toml(text);

    assert_eq!(config.diagnostics, vec![]);
    assert_eq!(names(&config), ["demo"]);
    assert_eq!(
        config.endpoint,
        EndpointConfig {
            listen: SocketAddr::from((Ipv6Addr::LOCALHOST, 9000)),
            token: Some("s3cret-${env:literally}".to_owned()),
            require_token: None,
            max_body_size: 1024 * 1024,
        }
    );

    let config = parse_toml("[endpoint]\nmax_body_size = 4096\n");
    assert_eq!(config.diagnostics, vec![]);
    assert_eq!(
        config.endpoint,
        EndpointConfig {
            max_body_size: 4096,
            ..EndpointConfig::default()
        }
    );
    assert_eq!(DEFAULT_LISTEN, "127.0.0.1:8765");
}

#[test]
fn wrong_endpoint_settings_keep_their_defaults_and_spare_the_backends() {
    let text = r#"[servers.demo]
command = "sh"

[endpoint]
listen = "localhost:8765"
token = ""
max_body_size = 0
port = 80
"#;
    let config = parse_toml(text);

    assert_eq!(names(&config), ["demo"]);
    assert_eq!(config.endpoint, EndpointConfig::default());
    assert_eq!(
        positions(&config.diagnostics),
        [
            (Severity::Error, 5, 10, "endpoint.listen"),
            (Severity::Error, 6, 9, "endpoint.token"),
            (Severity::Error, 7, 17, "endpoint.max_body_size"),
            (Severity::Error, 8, 1, "endpoint.port"),
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
            "expected an IP address and a port like \"127.0.0.1:8765\" (not a host name), \
             found \"localhost:8765\"",
            "the token is empty; remove `token` to use the one Switchboard makes",
            "must be larger than zero",
            "unknown field `port`, expected one of `listen`, `token`, `require_token`, `max_body_size`",
        ]
    );
}

#[test]
fn a_wrong_token_is_reported_without_showing_it() {
    let text = "[endpoint]\ntoken = \"two words\"\n\n\
                [servers.demo]\ncommand = \"sh\"\n\n\
                [servers.other]\ncommand = \"sh\"\n";
    let config = parse_toml(text);

    assert_eq!(names(&config), ["demo", "other"]);
    assert_eq!(config.endpoint.token, None);
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Error, 2, 9, "endpoint.token")]
    );
    assert_eq!(
        config.diagnostics[0].message,
        "the token may contain only visible ASCII characters, without spaces"
    );

    let config =
        parse_toml("[endpoint]\ntoken = \"${env:SWITCHBOARD_TEST_UNSET_7F3A}\"\nlisten = 8765\n");
    assert_eq!(config.endpoint, EndpointConfig::default());
    assert_eq!(
        positions(&config.diagnostics),
        [
            (Severity::Error, 2, 9, "endpoint.token"),
            (Severity::Error, 3, 10, "endpoint.listen"),
        ]
    );
    assert_eq!(
        config.diagnostics[0].message,
        "environment variable `SWITCHBOARD_TEST_UNSET_7F3A` is not set in Switchboard's environment"
    );
    assert_eq!(
        config.diagnostics[1].message,
        "expected a string, found an integer"
    );
}

#[test]
fn an_address_beyond_this_machine_is_a_warning() {
    for loopback in [
        "127.0.0.1:1",
        "127.0.0.2:8765",
        "[::1]:8765",
        "[::ffff:127.0.0.1]:8765",
    ] {
        let config = parse_toml(&format!("[endpoint]\nlisten = \"{loopback}\"\n"));
        assert_eq!(config.diagnostics, vec![], "{loopback}");
        assert_eq!(
            config.endpoint.listen,
            loopback.parse().expect("an address")
        );
    }

    let config = parse_toml("[endpoint]\nlisten = \"0.0.0.0:8765\"\n");
    assert!(!config.has_errors());
    assert_eq!(
        config.endpoint.listen,
        SocketAddr::from(([0, 0, 0, 0], 8765))
    );
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Warning, 2, 10, "endpoint.listen")]
    );
    assert_eq!(
        config.diagnostics[0].message,
        "0.0.0.0:8765 is not a loopback address: other machines that can reach it can use the \
         endpoint, and through it every server configured here; listen on 127.0.0.1 unless that \
         is intended, and then set a `token`"
    );

    let config = parse_toml("[endpoint]\nlisten = \"[2001:db8::1]:80\"\n");
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Warning, 2, 10, "endpoint.listen")]
    );
}

#[test]
fn an_endpoint_that_is_not_a_table_is_an_error() {
    let config = parse_toml("endpoint = \"127.0.0.1:1\"\n\n[servers.demo]\ncommand = \"sh\"\n");

    assert_eq!(names(&config), ["demo"]);
    assert_eq!(config.endpoint, EndpointConfig::default());
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Error, 1, 12, "endpoint")]
    );
    assert_eq!(
        config.diagnostics[0].message,
        "expected a table, found a string"
    );
}

#[test]
fn json_reads_tool_settings_and_ignores_an_endpoint() {
    let text = r#"{
  "endpoint": {"listen": "nonsense", "colour": 1},
  "mcpServers": {
    "files": {
      "command": "sh",
      "prefix": "fs",
      "tools_allow": ["read_*"],
      "tools_deny": ["read_secret"],
      "start_on_demand": false
    },
    "bad": {"command": "sh", "prefix": "f s"}
  }
}"#;
    let config = parse_json(text);

    assert_eq!(names(&config), ["files"]);
    assert_eq!(config.endpoint, EndpointConfig::default());
    let files = &config.backends[0];
    assert_eq!(files.prefix, "fs");
    assert_eq!(files.tools_allow, strings(&["read_*"]));
    assert_eq!(files.tools_deny, strings(&["read_secret"]));
    assert!(!files.start_on_demand);
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Error, 11, 40, "mcpServers.bad.prefix")]
    );
}

#[test]
fn a_claude_desktop_file_is_accepted_unchanged() {
    let text = r#"{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "files": {
      "command": "sh",
      "args": ["-c", "exec cat"],
      "env": {"GREETING": "hello"}
    },
    "remote": {"url": "https://example.com/mcp"},
    "events": {"type": "sse", "url": "https://example.com/sse"},
    "cline": {"command": "sh", "disabled": false, "autoApprove": []},
    "typed": {"type": "stdio", "command": "sh", "health_interval": "off"}
  },
  "preferences": {"nested": [1, 2.5, {"deep": null}]}
}"#;
    let config = parse_json(text);

    assert_eq!(
        names(&config),
        ["files", "remote", "events", "cline", "typed"]
    );
    let mut files = BackendConfig::new("files", SHELL, strings(&["-c", "exec cat"]));
    let process = files.process_mut().expect("a local server");
    process
        .env
        .insert("GREETING".to_owned(), "hello".to_owned());
    process
        .written
        .values
        .insert("GREETING".to_owned(), "hello".to_owned());
    assert_eq!(config.backends[0], files);
    assert_eq!(
        config.backends[1].launch,
        Launch::Remote(RemoteServer::new("https://example.com/mcp"))
    );
    let mut events = RemoteServer::new("https://example.com/sse");
    events.transport = RemoteTransport::HttpSse;
    assert_eq!(config.backends[2].launch, Launch::Remote(events));
    assert_eq!(config.backends[4].health_interval, None);
    assert!(!config.has_errors());
    assert_eq!(
        positions(&config.diagnostics),
        [
            (Severity::Warning, 11, 32, "mcpServers.cline.disabled"),
            (Severity::Warning, 11, 51, "mcpServers.cline.autoApprove"),
        ]
    );
    assert_eq!(
        config.diagnostics[0].message,
        "unknown field `disabled` is ignored"
    );
}

#[test]
fn a_json_syntax_error_has_its_line_and_column() {
    let text = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"sh\",}\n  }\n}\n";
    let diagnostics = invalid_diagnostics(parse(Path::new("servers.json"), text));

    assert_eq!(positions(&diagnostics), [(Severity::Error, 3, 27, "")]);
    assert_eq!(diagnostics[0].message, "key must be a string");
}

#[test]
fn json_columns_count_characters_not_bytes() {
    let text = r#"{"mcpServers": {"café": {"command": "sh"}, "ok": {"command": 1}}}"#;
    let config = parse_json(text);

    assert_eq!(names(&config), Vec::<&str>::new());
    assert_eq!(
        positions(&config.diagnostics),
        [
            (Severity::Error, 1, 17, "mcpServers.café"),
            (Severity::Error, 1, 62, "mcpServers.ok.command"),
        ]
    );
}

#[test]
fn json_duplicates_and_missing_commands_are_errors() {
    let text = r#"{"mcpServers": {
  "demo": {"command": "sh"},
  "demo": {"command": "sh"},
  "Demo": {"args": []},
  "nocommand": {"args": ["x"]},
  "twice": {"command": "sh", "command": "cat"}
}}"#;
    let config = parse_json(text);

    assert_eq!(names(&config), ["demo"]);
    assert_eq!(
        positions(&config.diagnostics),
        [
            (Severity::Error, 3, 3, "mcpServers.demo"),
            (Severity::Error, 4, 3, "mcpServers.Demo"),
            (Severity::Error, 5, 3, "mcpServers.nocommand"),
            (Severity::Error, 6, 30, "mcpServers.twice.command"),
        ]
    );
    assert_eq!(
        config.diagnostics[0].message,
        "duplicate server name `demo` (first defined on line 2); this definition is ignored"
    );
    assert_eq!(
        config.diagnostics[3].message,
        "`command` is given more than once"
    );
}

#[test]
fn a_json_file_without_servers_loads_with_a_warning() {
    let config = parse_json(r#"{"globalShortcut": ""}"#);

    assert_eq!(config.backends, vec![]);
    assert!(!config.has_errors());
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Warning, 1, 1, "")]
    );
}

#[test]
fn a_wrong_json_top_level_makes_the_file_invalid() {
    let diagnostics = invalid_diagnostics(parse(Path::new("a.json"), "\n  [1, 2]"));
    assert_eq!(positions(&diagnostics), [(Severity::Error, 2, 3, "")]);

    let diagnostics = invalid_diagnostics(parse(Path::new("a.json"), r#"{"mcpServers": []}"#));
    assert_eq!(
        positions(&diagnostics),
        [(Severity::Error, 1, 16, "mcpServers")]
    );
    assert_eq!(
        diagnostics[0].message,
        "expected an object of servers, found an array"
    );

    let diagnostics = invalid_diagnostics(parse(Path::new("a.json"), ""));
    assert_eq!(positions(&diagnostics), [(Severity::Error, 1, 1, "")]);
}

#[test]
fn the_default_config_has_one_demo_backend() {
    let exe = std::env::current_exe().expect("test binary path");
    let text = default_config_text(&exe);
    let config = parse_toml(&text);

    assert_eq!(config.diagnostics, vec![]);
    let command = exe.to_str().expect("test binary path is UTF-8");
    assert_eq!(
        config.backends,
        vec![BackendConfig::new(
            "demo",
            command,
            strings(&["demo-server"])
        )]
    );
    assert!(text.contains("apply live"), "{text}");
}

#[test]
fn the_default_config_shows_the_true_defaults() {
    let exe = std::env::current_exe().expect("test binary path");
    // Uncomment every option whose value can apply anywhere (not the env and cwd examples).
    let options = [
        "listen",
        "max_body_size",
        "enabled",
        "start_on_demand",
        "prefix",
        "tools_allow",
        "tools_deny",
        "request_timeout",
        "handshake_timeout",
        "protocol",
        "health_interval",
        "health_timeout",
        "max_message_size",
        "stop_grace",
        "[servers.demo.restart]",
        "backoff_base",
        "backoff_cap",
        "max_restarts",
        "window",
        "stable_after",
    ];
    let mut n_uncommented = 0;
    let text: String = default_config_text(&exe)
        .lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(option) if options.contains(&option.split(' ').next().unwrap_or_default()) => {
                n_uncommented += 1;
                format!("{option}\n")
            }
            _ => format!("{line}\n"),
        })
        .collect();
    assert_eq!(n_uncommented, options.len(), "{text}");
    assert!(text.contains("\n# env = "), "{text}");
    assert!(text.contains("\n# cwd = "), "{text}");
    assert!(text.contains("\n# token = "), "{text}");

    let config = parse_toml(&text);
    let command = exe.to_str().expect("test binary path is UTF-8");
    assert_eq!(config.diagnostics, vec![]);
    assert_eq!(
        config.endpoint,
        EndpointConfig {
            require_token: Some(true),
            ..EndpointConfig::default()
        },
        "a new config requires /mcp's token"
    );
    assert!(!config.endpoint_open_by_default());
    assert_eq!(
        config.backends,
        vec![BackendConfig::new(
            "demo",
            command,
            strings(&["demo-server"])
        )]
    );
}

#[test]
fn load_or_create_default_writes_the_file_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir
        .path()
        .join("nested")
        .join("switchboard")
        .join("config.toml");

    let exe = std::env::current_exe().expect("test binary path");
    let config = load_or_create_default(&path, &exe).expect("default config loads");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&path).expect("written").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "the config may hold secrets");
    assert_eq!(config.path, path);
    assert_eq!(names(&config), ["demo"]);
    assert_eq!(config.diagnostics, vec![]);
    assert_eq!(
        config.backends[0].process().expect("local").command,
        exe.to_str().expect("UTF-8 path")
    );

    std::fs::write(&path, "[servers.mine]\ncommand = \"sh\"\n").expect("edit the file");
    let config = load_or_create_default(&path, &exe).expect("edited config loads");
    assert_eq!(names(&config), ["mine"]);
}

#[test]
fn load_reports_a_missing_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("absent.toml");

    match load(&path) {
        Err(ConfigError::Read {
            path: error_path,
            source,
        }) => {
            assert_eq!(error_path, path);
            assert_eq!(source.kind(), io::ErrorKind::NotFound);
        }
        other => panic!("expected ConfigError::Read, got {other:?}"),
    }
}

#[test]
fn load_reports_where_a_file_stops_being_utf8() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("config.toml");
    std::fs::write(&path, b"# ok\n# caf\xff\n").expect("write file");

    let diagnostics = invalid_diagnostics(load(&path));
    assert_eq!(positions(&diagnostics), [(Severity::Error, 2, 6, "")]);
    assert_eq!(diagnostics[0].message, "the file is not valid UTF-8");
}

#[test]
fn load_reads_json_by_extension() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("claude_desktop_config.JSON");
    std::fs::write(&path, r#"{"mcpServers": {"demo": {"command": "sh"}}}"#).expect("write");

    let config = load(&path).expect("usable");
    assert_eq!(
        config.backends,
        vec![BackendConfig::new("demo", SHELL, vec![])]
    );
}

#[test]
fn diagnostics_print_like_a_compiler() {
    let mut diagnostic = Diagnostic {
        severity: Severity::Error,
        file: PathBuf::from("/etc/switchboard/config.toml"),
        line: 3,
        column: 11,
        field: "servers.demo.command".to_owned(),
        message: "`nope` was not found on PATH".to_owned(),
    };
    assert_eq!(
        diagnostic.to_string(),
        "/etc/switchboard/config.toml:3:11: error: servers.demo.command: `nope` was not found on PATH"
    );
    let json = serde_json::to_value(&diagnostic).expect("serializable");
    assert_eq!(json["severity"], "error");
    assert_eq!(json["line"], 3);

    diagnostic.severity = Severity::Warning;
    diagnostic.field.clear();
    assert_eq!(
        diagnostic.to_string(),
        "/etc/switchboard/config.toml:3:11: warning: `nope` was not found on PATH"
    );
}

#[test]
fn a_prefix_two_servers_share_is_a_warning_on_the_later_one() {
    let config = parse_toml(
        "[servers.files]\ncommand = \"sh\"\n\n\
         [servers.other]\ncommand = \"sh\"\nprefix = \"files\"\n\n\
         [servers.third]\ncommand = \"sh\"\nprefix = \"own\"\n",
    );
    assert!(!config.has_errors());
    assert_eq!(names(&config), ["files", "other", "third"]);
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Warning, 4, 10, "servers.other")]
    );
    assert_eq!(
        config.diagnostics[0].message,
        "`other` offers its tools and prompts under the prefix `files`, as `files` does: a name \
         both offer is told apart only by `_2`, `_3`, … at its end"
    );
}

/// `conformance` without a prefix (line 3), `files` with its own, then `third` from line 8.
fn beside_an_unprefixed_server(third: &str) -> Config {
    parse_toml(&format!(
        "[servers.conformance]\ncommand = \"sh\"\nprefix = \"\"\n\n\
         [servers.files]\ncommand = \"sh\"\n\n{third}"
    ))
}

#[test]
fn two_servers_without_a_prefix_are_an_error_naming_both() {
    let config = beside_an_unprefixed_server("[servers.plain]\ncommand = \"sh\"\nprefix = \"\"\n");
    assert!(config.has_errors());
    assert_eq!(
        names(&config),
        ["conformance", "files"],
        "the later one is left out, the first runs"
    );
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Error, 10, 10, "servers.plain.prefix")]
    );
    assert_eq!(
        message_of(&config, "servers.plain.prefix"),
        "`plain` has an empty prefix, as `conformance` has on line 3: both offer tools and \
         prompts under their own names, so a name both offer would clash; give one of them a \
         prefix. This server is left out"
    );

    let json = parse_json(
        r#"{"mcpServers": {
  "conformance": {"command": "sh", "prefix": ""},
  "files": {"command": "sh", "prefix": ""}
}}"#,
    );
    assert_eq!(names(&json), ["conformance"]);
    assert_eq!(
        positions(&json.diagnostics),
        [(Severity::Error, 3, 40, "mcpServers.files.prefix")]
    );
    assert!(
        message_of(&json, "mcpServers.files.prefix").contains("as `conformance` has on line 2"),
        "{:?}",
        json.diagnostics
    );
}

#[test]
fn one_server_without_a_prefix_beside_prefixed_ones_is_valid() {
    let config =
        beside_an_unprefixed_server("[servers.other]\ncommand = \"sh\"\nprefix = \"files\"\n");
    assert!(!config.has_errors(), "{:?}", config.diagnostics);
    assert_eq!(names(&config), ["conformance", "files", "other"]);
    assert_eq!(config.backends[0].prefix, "");
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Warning, 8, 10, "servers.other")],
        "a shared prefix is still only a warning"
    );
}
