//! Reading a server's `sandbox`: every field, the defaults, the JSON form, the drafts `import`
//! and the dashboard offer, and each mistake where it is.

use super::*;

#[test]
fn every_sandbox_field_is_read() {
    let dir = tempfile::tempdir().expect("a folder");
    std::fs::create_dir(dir.path().join("notes")).expect("notes");
    let text = "[servers.files]\ncommand = \"sh\"\n\n[servers.files.sandbox]\n\
                read = [\"/usr/share/dict\", \"notes\"]\nwrite = [\"notes\"]\n\
                connect = [443, 8080]\nnetwork = true\ndbus = true\nrequired = false\n\n\
                [servers.offline]\ncommand = \"sh\"\nsandbox = { network = false }\n";
    let config = parse(&dir.path().join("config.toml"), text).expect("usable");
    let warnings: Vec<&Diagnostic> = config
        .diagnostics
        .iter()
        .filter(|diagnostic| !diagnostic.message.contains("does not exist"))
        .collect();
    assert_eq!(warnings, Vec::<&Diagnostic>::new());
    let files = config.backends[0].process().expect("local");
    assert_eq!(
        files.sandbox,
        Some(Sandbox {
            read: vec![PathBuf::from("/usr/share/dict"), dir.path().join("notes")],
            write: vec![dir.path().join("notes")],
            connect: vec![443, 8080],
            network: true,
            dbus: true,
            required: false,
        })
    );
    let offline = config.backends[1].process().expect("local");
    assert_eq!(
        offline.sandbox,
        Some(Sandbox {
            network: false,
            ..Sandbox::default()
        })
    );
    assert!(
        Sandbox::default().required,
        "a sandbox is required unless said otherwise"
    );
    assert_eq!(
        BackendConfig::new("plain", "sh", vec![])
            .process()
            .expect("local")
            .sandbox,
        None
    );
}

#[test]
fn a_changed_sandbox_restarts_its_server() {
    let plain = BackendConfig::new("files", "sh", vec![]);
    let mut sandboxed = plain.clone();
    sandboxed.process_mut().expect("local").sandbox = Some(Sandbox::default());
    assert!(plain.needs_restart_for(&sandboxed));
    let mut wider = sandboxed.clone();
    wider.process_mut().expect("local").sandbox = Some(Sandbox {
        connect: vec![443],
        ..Sandbox::default()
    });
    assert!(sandboxed.needs_restart_for(&wider));
}

#[test]
fn the_json_form_takes_a_sandbox_object() {
    let config = parse_json(
        r#"{"mcpServers": {"files": {"command": "sh", "sandbox": {"write": ["/tmp"], "connect": [443]}}}}"#,
    );
    assert_eq!(config.diagnostics, vec![]);
    let sandbox = config.backends[0]
        .process()
        .expect("local")
        .sandbox
        .clone()
        .expect("a sandbox");
    assert_eq!(sandbox.write, vec![PathBuf::from("/tmp")]);
    assert_eq!(sandbox.connect, vec![443]);
}

#[test]
fn sandbox_mistakes_are_reported_where_they_are() {
    let text = "[servers.offline]\ncommand = \"sh\"\n[servers.offline.sandbox]\n\
                network = false\nconnect = [443]\n\n\
                [servers.port]\ncommand = \"sh\"\nsandbox = { connect = [0] }\n\n\
                [servers.kind]\ncommand = \"sh\"\nsandbox = { read = [1] }\n\n\
                [servers.flag]\ncommand = \"sh\"\nsandbox = { network = \"no\" }\n\n\
                [servers.typo]\ncommand = \"sh\"\nsandbox = { writ = [] }\n\n\
                [servers.empty]\ncommand = \"sh\"\nsandbox = { read = [\"\"] }\n\n\
                [servers.remote]\nurl = \"https://a.example/mcp\"\nsandbox = {}\n\n\
                [servers.missing]\ncommand = \"sh\"\nsandbox = { read = [\"/surely/not/here\"] }\n";
    let config = parse_toml(text);
    assert_eq!(names(&config), ["missing"], "{:#?}", config.diagnostics);
    assert_eq!(
        positions(&config.diagnostics),
        [
            (Severity::Error, 5, 1, "servers.offline.sandbox.connect"),
            (Severity::Error, 9, 24, "servers.port.sandbox.connect[0]"),
            (Severity::Error, 13, 21, "servers.kind.sandbox.read[0]"),
            (Severity::Error, 17, 23, "servers.flag.sandbox.network"),
            (Severity::Error, 21, 13, "servers.typo.sandbox.writ"),
            (Severity::Error, 25, 21, "servers.empty.sandbox.read[0]"),
            (Severity::Error, 29, 1, "servers.remote.sandbox"),
            (Severity::Warning, 33, 21, "servers.missing.sandbox.read[0]"),
        ]
    );
    let message = |field: &str| message_of(&config, field);
    assert_eq!(
        message("servers.port.sandbox.connect[0]"),
        "expected a TCP port from 1 to 65535, found 0"
    );
    assert!(
        message("servers.remote.sandbox").contains("`sandbox` is for a local server"),
        "{}",
        message("servers.remote.sandbox")
    );
    assert_eq!(
        message("servers.missing.sandbox.read[0]"),
        "/surely/not/here does not exist: it grants nothing until the server starts after it does"
    );
}

#[test]
fn a_draft_gives_the_folders_a_command_line_names_and_a_runners_cache() {
    let dir = tempfile::tempdir().expect("a folder");
    let notes = dir.path().join("notes").to_string_lossy().into_owned();
    std::fs::create_dir(&notes).expect("notes");
    let args = strings(&[
        "-y",
        "@modelcontextprotocol/server-filesystem",
        &notes,
        "/surely/not/here",
    ]);
    let draft = SandboxDraft::for_command("npx", &args);
    assert_eq!(
        draft,
        SandboxDraft {
            read: vec![],
            write: vec!["~/.npm".to_owned(), notes.clone()],
            connect: vec![443],
        }
    );
    assert_eq!(
        draft.describe(),
        format!("sandboxed: may write ~/.npm, {notes}; may connect to port 443")
    );
    let uvx = SandboxDraft::for_command("/home/ada/.local/bin/uvx", &strings(&["mcp-server-time"]));
    assert_eq!(uvx.write, ["~/.cache/uv"]);
    assert_eq!(uvx.read, ["~/.local/share/uv"]);
    let own = SandboxDraft::for_command("/opt/server", &[]);
    assert_eq!(own, SandboxDraft::default());
    assert_eq!(own.describe(), "sandboxed: may connect to no TCP port");

    // What the dashboard shows is a config that reads back as the draft.
    let text = format!(
        "[servers.files]\ncommand = \"sh\"\n\n{}",
        draft.to_toml("files")
    );
    let config = parse_toml(&text);
    let sandbox = config.backends[0]
        .process()
        .expect("local")
        .sandbox
        .clone()
        .expect("a sandbox");
    assert_eq!(sandbox.write[1], PathBuf::from(&notes));
    assert_eq!(sandbox.connect, vec![443]);
    assert!(sandbox.network && sandbox.required);
}
