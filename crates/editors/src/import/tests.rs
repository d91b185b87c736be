use std::collections::BTreeMap;

use serde_json::json;

use super::entry::reference;
use super::*;

fn reader(editor: Editor) -> EntryReader<'static> {
    EntryReader {
        editor,
        exe: Path::new("/opt/switchboard/bin/switchboard"),
        port: 8765,
        sandbox: false,
    }
}

fn read(editor: Editor, entry: Value) -> Result<Server, SkipReason> {
    reader(editor).read(&entry)
}

fn skip_reason(editor: Editor, entry: Value) -> String {
    read(editor, entry).expect_err("skipped").to_string()
}

#[test]
fn invalid_names_become_valid_ones_the_same_way_every_time() {
    assert_eq!(server_name("github"), "github");
    assert_eq!(server_name("My Notes (work)"), "My_Notes__work_");
    assert_eq!(server_name("café.io"), "caf__io");
    assert_eq!(server_name(""), "server");
    let long = "x".repeat(60);
    assert_eq!(server_name(&long).len(), MAX_SERVER_NAME_LEN);
}

#[test]
fn stdio_entries_keep_command_args_env_and_cwd() {
    let server = read(
        Editor::Cursor,
        json!({ "type": "stdio", "command": "npx", "args": ["-y", "pkg"],
                "env": { "KEY": "${env:KEY}", "PORT": 8080, "DEBUG": true },
                "cwd": "~/work", "autoApprove": ["x"], "disabled": false }),
    )
    .expect("imported");
    assert_eq!(
        server.run,
        Run::Local {
            command: "npx".to_owned(),
            args: vec!["-y".to_owned(), "pkg".to_owned()],
            env: BTreeMap::from([
                ("DEBUG".to_owned(), "true".to_owned()),
                ("KEY".to_owned(), "${env:KEY}".to_owned()),
                ("PORT".to_owned(), "8080".to_owned()),
            ]),
            cwd: Some("~/work".to_owned()),
        }
    );
    assert_eq!(server.notes, ["left out `autoApprove`, `disabled`"]);
}

fn remote(run: Run) -> (String, BTreeMap<String, String>, Option<&'static str>) {
    match run {
        Run::Remote {
            url,
            headers,
            transport,
        } => (url, headers, transport),
        Run::Local { .. } => panic!("read as a local server"),
    }
}

#[test]
fn remote_entries_keep_their_url_headers_and_transport() {
    let read_remote = |editor, entry| remote(read(editor, entry).expect("imported").run);
    let (url, headers, transport) = read_remote(
        Editor::VsCode,
        json!({ "type": "http", "url": "https://x.dev/mcp",
                "headers": { "Authorization": "Bearer ${env:X_TOKEN}" } }),
    );
    assert_eq!(url, "https://x.dev/mcp");
    assert_eq!(headers["Authorization"], "Bearer ${env:X_TOKEN}");
    assert_eq!(transport, Some("streamable-http"));
    assert_eq!(
        read_remote(Editor::Cursor, json!({ "url": "https://x.dev/sse" })).2,
        None,
        "Cursor finds out the transport itself, as Switchboard does"
    );
    assert_eq!(
        read_remote(
            Editor::Windsurf,
            json!({ "serverUrl": "https://x.dev/mcp" })
        )
        .0,
        "https://x.dev/mcp"
    );
    assert_eq!(
        read_remote(Editor::Gemini, json!({ "url": "https://x.dev/sse" })).2,
        Some("sse")
    );
    assert_eq!(
        read_remote(Editor::Gemini, json!({ "httpUrl": "https://x.dev/mcp" })).2,
        Some("streamable-http")
    );
    let (_, headers, _) = read_remote(
        Editor::Codex,
        json!({ "url": "https://x.dev/mcp", "bearer_token_env_var": "X_TOKEN",
                "http_headers": { "X-Org": "acme" }, "env_http_headers": { "X-Key": "X_KEY" } }),
    );
    assert_eq!(
        headers,
        BTreeMap::from([
            (
                "Authorization".to_owned(),
                "Bearer ${env:X_TOKEN}".to_owned()
            ),
            ("X-Key".to_owned(), "${env:X_KEY}".to_owned()),
            ("X-Org".to_owned(), "acme".to_owned()),
        ])
    );
}

#[test]
fn transports_switchboard_does_not_speak_and_entries_that_run_switchboard_are_skipped() {
    assert_eq!(
        skip_reason(Editor::Cursor, json!({ "url": "ws://x.dev/mcp" })),
        "its URL ws://x.dev/mcp is not http:// or https://, so it is not a transport \
         Switchboard speaks (Switchboard speaks stdio, Streamable HTTP and HTTP+SSE)"
    );
    assert_eq!(
        skip_reason(Editor::VsCode, json!({ "type": "sse", "command": "x" })),
        "its type is \"sse\" but it has no `url`"
    );
    for loop_entry in [
        json!({ "url": "http://127.0.0.1:8765/mcp" }),
        json!({ "url": "HTTP://localhost:8765/mcp/" }),
        json!({ "type": "http", "url": "http://[::1]:8765/mcp?x=1" }),
        json!({ "url": "http://127.0.0.1:8765/mcp/review" }),
        json!({ "url": "http://127.0.0.1:8765/sse" }),
        json!({ "command": "/opt/switchboard/bin/switchboard", "args": ["connect"] }),
        json!({ "command": "switchboard", "args": ["connect", "--config", "x"] }),
        json!({ "command": "C:\\Tools\\Switchboard.exe", "args": ["connect"] }),
    ] {
        assert_eq!(
            read(Editor::Cursor, loop_entry.clone()).err(),
            Some(SkipReason::PointsAtSwitchboard),
            "{loop_entry}"
        );
    }
    for other in [
        json!({ "url": "http://127.0.0.1:9999/mcp" }),
        json!({ "url": "https://127.0.0.1:8765/mcp" }),
    ] {
        assert!(
            matches!(
                read(Editor::Cursor, other.clone()).map(|server| server.run),
                Ok(Run::Remote { .. })
            ),
            "{other}"
        );
    }
    assert!(
        read(
            Editor::Claude,
            json!({ "command": "switchboard", "args": ["serve"] })
        )
        .is_ok()
    );
}

#[test]
fn references_are_kept_where_our_config_can_say_them() {
    let server = read(
        Editor::VsCode,
        json!({ "type": "stdio", "command": "x", "env": { "A": "${env:A}-${env:B}" } }),
    )
    .expect("imported");
    assert_eq!(local(server).2["A"], "${env:A}-${env:B}");

    assert_eq!(
        skip_reason(
            Editor::VsCode,
            json!({ "command": "x", "env": { "TOKEN": "${input:token}" } })
        ),
        "`${input:token}` in its env TOKEN is filled in by VS Code, which Switchboard cannot \
         do; add this server by hand with the value written out"
    );
    assert!(
        skip_reason(
            Editor::Cursor,
            json!({ "command": "x", "args": ["${workspaceFolder}/src"] })
        )
        .starts_with("`${workspaceFolder}` in its args is filled in by Cursor")
    );
    // Switchboard expands env references in args as Cursor does, so they are kept.
    let server = read(
        Editor::Cursor,
        json!({ "command": "x", "args": ["--key=${env:KEY}"] }),
    )
    .expect("imported");
    assert_eq!(local(server).1, ["--key=${env:KEY}"]);
    assert!(
        skip_reason(
            Editor::VsCode,
            json!({ "command": "x", "envFile": "${workspaceFolder}/.env" })
        )
        .starts_with("it loads variables from envFile")
    );

    // Claude Desktop passes values as written: a literal `${` stays literal.
    let server = read(
        Editor::Claude,
        json!({ "command": "x", "args": ["${HOME}"], "env": { "A": "${HOME}" } }),
    )
    .expect("imported");
    let (_, args, env) = local(server);
    assert_eq!(args, ["$${HOME}"]);
    assert_eq!(env["A"], "$${HOME}");
}

#[test]
fn malformed_entries_say_what_is_wrong() {
    let reasons: Vec<String> = [
        json!("npx"),
        json!({ "args": [] }),
        json!({ "command": "" }),
        json!({ "command": "x", "args": [1] }),
        json!({ "command": "x", "args": "a b" }),
        json!({ "command": "x", "env": { "A": null } }),
        json!({ "command": "x", "type": "websocket" }),
    ]
    .into_iter()
    .map(|entry| skip_reason(Editor::Cursor, entry))
    .collect();
    assert_eq!(
        reasons,
        [
            "its entry is not an object",
            "it has no `command` or `url`",
            "its `command` is not a program name",
            "its `args` are not all strings",
            "its `args` are not a list",
            "its env A is not a string",
            "its type \"websocket\" is a transport Switchboard does not speak (Switchboard \
             speaks stdio, Streamable HTTP and HTTP+SSE)",
        ]
    );
}

#[test]
fn references_are_found_with_their_braces() {
    assert_eq!(reference("a ${x} b", false), Some("${x}"));
    assert_eq!(reference("${env:A} ${input:b}", true), Some("${input:b}"));
    assert_eq!(reference("${env:A}", false), Some("${env:A}"));
    assert_eq!(reference("${env:}", true), Some("${env:}"));
    assert_eq!(reference("${env:A}$HOME", true), None);
    assert_eq!(
        reference("cost: $5 ${unterminated", true),
        Some("${unterminated")
    );
}

fn target(text: &str) -> Target {
    Target {
        path: PathBuf::from("config.toml"),
        format: Format::Toml,
        exists: true,
        text: text.to_owned(),
        diagnostics: Vec::new(),
        port: 8765,
        servers: Vec::new(),
    }
}

fn report() -> ImportReport {
    ImportReport {
        editor: Editor::Cursor,
        source: PathBuf::from("/home/ada/.cursor/mcp.json"),
        config_path: PathBuf::from("config.toml"),
        dry_run: false,
        config_created: false,
        servers: Vec::new(),
        diff: String::new(),
    }
}

fn server(command: &str, args: &[&str]) -> Server {
    Server {
        run: Run::Local {
            command: command.to_owned(),
            args: args.iter().map(|arg| arg.to_string()).collect(),
            env: BTreeMap::new(),
            cwd: None,
        },
        sandbox: None,
        notes: Vec::new(),
    }
}

/// A local server's command, arguments and environment.
fn local(server: Server) -> (String, Vec<String>, BTreeMap<String, String>) {
    match server.run {
        Run::Local {
            command, args, env, ..
        } => (command, args, env),
        Run::Remote { .. } => panic!("read as a remote server"),
    }
}

#[test]
fn tables_are_appended_after_every_byte_of_the_file() {
    let original = "# mine\r\n[servers.a] # keep\r\ncommand = \"a\"\r\n# trailing note";
    let mut with_env = server("npx", &["-y", "say \"hi\""]);
    if let Run::Local { env, cwd, .. } = &mut with_env.run {
        env.insert("API KEY".to_owned(), "${env:K}".to_owned());
        *cwd = Some("~/x".to_owned());
    }
    let text = target(original).toml_with(
        &[
            ("b".to_owned(), with_env),
            ("c".to_owned(), server("uvx", &[])),
        ],
        &report(),
    );
    assert_eq!(
        text,
        "# mine\r\n[servers.a] # keep\r\ncommand = \"a\"\r\n# trailing note\r\n\
         \r\n# Imported from Cursor (\"/home/ada/.cursor/mcp.json\").\r\n[servers.b]\r\n\
         command = \"npx\"\r\nargs = [\"-y\", 'say \"hi\"']\r\n\
         env = { \"API KEY\" = \"${env:K}\" }\r\ncwd = \"~/x\"\r\n\
         \r\n# Imported from Cursor (\"/home/ada/.cursor/mcp.json\").\r\n[servers.c]\r\n\
         command = \"uvx\"\r\n"
    );
    let empty = target("").toml_with(&[("c".to_owned(), server("uvx", &[]))], &report());
    assert_eq!(
        empty,
        "# Imported from Cursor (\"/home/ada/.cursor/mcp.json\").\n[servers.c]\ncommand = \"uvx\"\n"
    );
}

#[test]
fn a_sandboxed_import_gives_each_server_a_sandbox_of_what_its_command_line_names() {
    let folder = tempfile::tempdir().expect("a folder");
    let notes = folder.path().to_string_lossy().into_owned();
    let entry =
        json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", notes]});
    let sandboxing = EntryReader {
        sandbox: true,
        ..reader(Editor::Cursor)
    };
    let server = sandboxing.read(&entry).expect("imported");
    assert_eq!(
        server.notes,
        [format!(
            "sandboxed: may write ~/.npm, {notes}; may connect to port 443"
        )]
    );
    let text = target("").toml_with(&[("files".to_owned(), server)], &report());
    let config = config::parse(Path::new("/home/ada/config.toml"), &text).expect("usable");
    let sandbox = config.backends[0]
        .process()
        .expect("local")
        .sandbox
        .clone()
        .expect("a sandbox");
    assert_eq!(sandbox.write.last(), Some(&PathBuf::from(&notes)));
    assert_eq!(sandbox.connect, [443]);
    assert!(sandbox.required);
    let unsandboxed = read(Editor::Cursor, entry).expect("imported");
    assert_eq!(unsandboxed.sandbox, None);
}

#[test]
fn an_inline_servers_table_is_refused_with_what_to_do() {
    let error = target("servers = { a = { command = \"x\" } }\n")
        .toml_servers()
        .expect_err("refused");
    assert!(error.to_string().contains("[servers.NAME]"), "{error}");
    let existing =
        target("[servers]\na.command = \"x\"\n[servers.b]\ncommand = \"y\"\nargs = [\"1\"]\n")
            .toml_servers()
            .expect("read");
    let found: Vec<(&str, Option<Run>)> = existing
        .iter()
        .map(|server| (server.name.as_str(), server.run.clone()))
        .collect();
    assert_eq!(
        found,
        [
            ("a", Some(server("x", &[]).run)),
            ("b", Some(server("y", &["1"]).run)),
        ]
    );
}

#[test]
fn only_an_entry_that_runs_exactly_the_same_is_a_duplicate_and_others_get_free_names() {
    let git = json!({ "command": "uvx", "args": ["mcp-server-git"] });
    let taken = vec![Existing::of("git".to_owned(), &git)];
    let entries = vec![
        ("git".to_owned(), git.clone()),
        (
            "gitcursor".to_owned(),
            json!({ "command": "uvx", "args": ["mcp-server-git"],
                    "env": { "GITHUB_TOKEN": "ghp_1" } }),
        ),
        (
            "GIT".to_owned(),
            json!({ "command": "uvx", "args": ["mcp-server-git", "--repository", "."] }),
        ),
        ("same".to_owned(), git),
    ];
    let (outcomes, added) = sort_out(&reader(Editor::Cursor), entries, taken);
    let actions: Vec<(&str, &ImportAction)> = outcomes
        .iter()
        .map(|outcome| (outcome.name.as_str(), &outcome.action))
        .collect();
    let added_as = |server: &str, taken: Option<&str>| ImportAction::Added {
        server: server.to_owned(),
        taken: taken.map(str::to_owned),
        notes: Vec::new(),
    };
    let duplicate = ImportAction::Duplicate {
        server: "git".to_owned(),
    };
    assert_eq!(
        actions,
        [
            ("git", &duplicate),
            ("gitcursor", &added_as("gitcursor", None)),
            ("GIT", &added_as("GIT-cursor", Some("GIT"))),
            ("same", &duplicate),
        ]
    );
    assert_eq!(added.len(), 2);
    assert_eq!(
        free_name(&"x".repeat(48), Editor::Cursor, &[]),
        "x".repeat(48)
    );
    let long = Existing::of("x".repeat(48), &json!({}));
    let free = free_name(&"x".repeat(48), Editor::Cursor, &[long]);
    assert_eq!(free, format!("{}-cursor", "x".repeat(41)));
}
