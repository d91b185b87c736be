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
    assert_eq!(server.command, "npx");
    assert_eq!(server.args, ["-y", "pkg"]);
    assert_eq!(
        server.env,
        BTreeMap::from([
            ("DEBUG".to_owned(), "true".to_owned()),
            ("KEY".to_owned(), "${env:KEY}".to_owned()),
            ("PORT".to_owned(), "8080".to_owned()),
        ])
    );
    assert_eq!(server.cwd.as_deref(), Some("~/work"));
    assert_eq!(server.notes, ["left out `autoApprove`, `disabled`"]);
}

#[test]
fn remote_entries_and_entries_that_run_switchboard_are_skipped() {
    assert_eq!(
        skip_reason(
            Editor::VsCode,
            json!({ "type": "http", "url": "https://x.dev/mcp" })
        ),
        "a remote server (http); Switchboard supervises local stdio servers only"
    );
    assert_eq!(
        skip_reason(Editor::Cursor, json!({ "url": "https://x.dev/sse" })),
        "a remote server (http); Switchboard supervises local stdio servers only"
    );
    assert_eq!(
        read(Editor::VsCode, json!({ "type": "sse", "command": "x" })).err(),
        Some(SkipReason::Remote("sse".to_owned()))
    );
    for loop_entry in [
        json!({ "url": "http://127.0.0.1:8765/mcp" }),
        json!({ "url": "HTTP://localhost:8765/mcp/" }),
        json!({ "type": "http", "url": "http://[::1]:8765/mcp?x=1" }),
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
        json!({ "url": "http://127.0.0.1:8765/other" }),
        json!({ "url": "https://127.0.0.1:8765/mcp" }),
    ] {
        assert!(matches!(
            read(Editor::Cursor, other.clone()),
            Err(SkipReason::Remote(_))
        ));
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
    assert_eq!(server.env["A"], "${env:A}-${env:B}");

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
    assert_eq!(server.args, ["--key=${env:KEY}"]);
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
    assert_eq!(server.args, ["$${HOME}"]);
    assert_eq!(server.env["A"], "$${HOME}");
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
            "it has no `command`",
            "its `command` is not a program name",
            "its `args` are not all strings",
            "its `args` are not a list",
            "its env A is not a string",
            "its type \"websocket\" is unknown",
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
        command: command.to_owned(),
        args: args.iter().map(|arg| arg.to_string()).collect(),
        env: BTreeMap::new(),
        cwd: None,
        sandbox: None,
        notes: Vec::new(),
    }
}

#[test]
fn tables_are_appended_after_every_byte_of_the_file() {
    let original = "# mine\r\n[servers.a] # keep\r\ncommand = \"a\"\r\n# trailing note";
    let mut with_env = server("npx", &["-y", "say \"hi\""]);
    with_env
        .env
        .insert("API KEY".to_owned(), "${env:K}".to_owned());
    with_env.cwd = Some("~/x".to_owned());
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
    let found: Vec<(&str, Option<&str>, &[String])> = existing
        .iter()
        .map(|server| {
            (
                server.name.as_str(),
                server.command.as_deref(),
                server.args.as_slice(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("a", Some("x"), &[][..]),
            ("b", Some("y"), &["1".to_owned()][..])
        ]
    );
}
