//! `switchboard import`: editors' servers joined to our config in place, byte for byte, and
//! files that cannot be used named with their place.

use super::{Home, arg, backend_names, exe, fixture, names_in, problems, read};
use crate::support::switchboard_exe;

#[test]
fn claude_desktop_servers_are_appended_after_every_byte_of_our_config() {
    let home = Home::new();
    let (claude_file, _) = home.place(
        "claude_desktop_config.json",
        ".config/Claude/claude_desktop_config.json",
    );
    let config_path = home.path("config.toml");
    let ours = format!(
        "# My servers. Keep this comment, and the odd spacing below.\n\n\
         [servers.demo]\ncommand   =   {exe:?}   # the built-in one\nargs = [\"demo-server\"]\n\n\
         # [servers.old]\n# command = \"retired\"\n",
        exe = exe()
    );
    std::fs::write(&config_path, &ours).expect("write");
    let before = config::load(&config_path).expect("loads");

    let report = home.succeed(&["import", "claude", "--config", arg(&config_path)], &[]);
    let source = claude_file.display();
    assert_eq!(
        report,
        format!(
            "Imported servers of Claude Desktop ({source}) into {config}:\n  \
             filesystem: added\n  \
             My Notes: added as `My_Notes` (server names use only letters, digits, `_` and `-`)\n  \
             files-again: skipped: `filesystem` runs exactly the same already\n  \
             demo: skipped: its type \"websocket\" is a transport Switchboard does not speak \
             (Switchboard speaks stdio, Streamable HTTP and HTTP+SSE)\n  \
             switchboard: skipped: it points at Switchboard itself (imported, Switchboard would \
             start itself)\n\
             2 server(s) added; a running Switchboard starts them when it sees the change.\n",
            config = config_path.display()
        )
    );
    let origin = format!("# Imported from Claude Desktop ({:?}).", source.to_string());
    assert_eq!(
        read(&config_path),
        format!(
            "{ours}\n{origin}\n[servers.filesystem]\ncommand = \"npx\"\n\
             args = [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/home/ada/notes\"]\n\n\
             {origin}\n[servers.My_Notes]\ncommand = \"python3\"\n\
             args = [\"-m\", \"notes_server\", \"--title\", \"Ada's notes\"]\n\
             env = {{ NOTES_DIR = \"$${{HOME}}/notes\", PAGE_SIZE = \"50\" }}\n"
        )
    );

    let after = config::load(&config_path).expect("loads");
    assert_eq!(problems(&after), problems(&before));
    assert_eq!(backend_names(&after), ["demo", "filesystem", "My_Notes"]);
    // Claude Desktop passes `${HOME}` on as written, and so does Switchboard now.
    assert_eq!(
        after.backends[2].process().expect("local").env["NOTES_DIR"],
        "${HOME}/notes"
    );

    // Importing again adds nothing.
    let merged = read(&config_path);
    let again = home.succeed(&["import", "claude", "--config", arg(&config_path)], &[]);
    assert!(again.contains("  filesystem: skipped: `filesystem` runs exactly the same already\n"));
    assert!(again.contains("  My Notes: skipped: `My_Notes` runs exactly the same already\n"));
    assert!(again.ends_with(&format!(
        "Nothing to add; {} is unchanged.\n",
        config_path.display()
    )));
    assert_eq!(read(&config_path), merged);
}

#[test]
fn a_dry_run_writes_nothing_and_the_import_creates_the_default_config_first() {
    let home = Home::new();
    let (cursor_file, cursor_bytes) = home.place("cursor-mcp.json", ".cursor/mcp.json");
    let config_dir = home.home().join(".config/switchboard");
    let config_path = config_dir.join("config.toml");
    let origin = format!(
        "# Imported from Cursor ({:?}).",
        cursor_file.display().to_string()
    );
    let addition = format!(
        "\n{origin}\n[servers.memory]\ncommand = \"npx\"\n\
         args = [\"-y\", \"@modelcontextprotocol/server-memory\"]\n\
         env = {{ MEMORY_FILE_PATH = \"${{env:HOME}}/.cursor/memory.json\" }}\n\n\
         {origin}\n[servers.remote-docs]\nurl = \"https://docs.example.com/mcp\"\n\
         headers = {{ Authorization = \"Bearer abc\" }}\n"
    );
    let lines = |verb: &str, skipped: &str| {
        format!(
            "servers of Cursor ({}) into {}:\n  \
             memory: {verb}; left out `autoApprove`\n  \
             remote-docs: {verb}; `Authorization` looks like a secret written out: \
             `--move-secrets` keeps it in the keychain instead of the config\n  \
             workspace-files: {skipped}: `${{workspaceFolder}}` in its args is filled in by \
             Cursor, which Switchboard cannot do; add this server by hand with the value written \
             out\n  \
             switchboard: {skipped}: it points at Switchboard itself (imported, Switchboard would \
             start itself)\n",
            cursor_file.display(),
            config_path.display()
        )
    };

    let dry_run = home.succeed(&["import", "cursor", "--dry-run"], &[]);
    let default_text = config::default_config_text(&switchboard_exe());
    let n_default_lines = default_text.lines().count();
    let diff_lines: String = addition.lines().map(|line| format!("+{line}\n")).collect();
    let last_two: String = default_text
        .lines()
        .skip(n_default_lines - 2)
        .map(|line| format!(" {line}\n"))
        .collect();
    assert_eq!(
        dry_run,
        format!(
            "Dry run: nothing is written.\nImporting {}{} did not exist; it would be created from \
             the default config.\nThe config would change like this:\n--- {path}\n+++ {path}\n\
             @@ -{start},2 +{start},{n_after} @@\n{last_two}{diff_lines}",
            lines("would be added", "would be skipped"),
            config_path.display(),
            path = config_path.display(),
            start = n_default_lines - 1,
            n_after = 2 + addition.lines().count(),
        )
    );
    assert!(!home.home().join(".config/switchboard").exists());
    assert_eq!(std::fs::read(&cursor_file).expect("read"), cursor_bytes);

    let report = home.succeed(&["import", "cursor"], &[]);
    assert_eq!(
        report,
        format!(
            "Imported {}{} did not exist; it was created from the default config.\n\
             2 server(s) added; a running Switchboard starts them when it sees the change.\n",
            lines("added", "skipped"),
            config_path.display()
        )
    );
    assert_eq!(read(&config_path), format!("{default_text}{addition}"));
    assert_eq!(names_in(&config_dir), ["config.toml"]);
    let config = config::load(&config_path).expect("loads");
    assert_eq!(problems(&config), Vec::<String>::new());
    assert_eq!(backend_names(&config), ["demo", "memory", "remote-docs"]);
    assert_eq!(std::fs::read(&cursor_file).expect("read"), cursor_bytes);
}

#[test]
fn vscode_servers_in_utf16_join_a_json_config_in_place() {
    let home = Home::new();
    let config_path = home.path("switchboard.json");
    std::fs::copy(fixture("switchboard-config.json"), &config_path).expect("copy");
    let before = config::load(&config_path).expect("loads");
    let source = fixture("vscode-mcp.utf16.json");

    let report = home.succeed(
        &[
            "import",
            "vscode",
            "--from",
            arg(&source),
            "--config",
            arg(&config_path),
        ],
        &[],
    );
    assert_eq!(
        report,
        format!(
            "Imported servers of VS Code ({}) into {}:\n  \
             fetch: added\n  \
             perplexity: skipped: `${{input:perplexity-key}}` in its env PERPLEXITY_API_KEY is \
             filled in by VS Code, which Switchboard cannot do; add this server by hand with the \
             value written out\n  \
             not-installed: added; error: `mcp-server-not-installed-anywhere` was not found on \
             PATH\n  \
             github: added\n  \
             events: added\n  \
             dotenv: skipped: it loads variables from envFile \"${{workspaceFolder}}/.env\", which \
             Switchboard cannot; add it by hand with those variables in `env`\n  \
             switchboard: skipped: it points at Switchboard itself (imported, Switchboard would \
             start itself)\n\
             4 server(s) added; a running Switchboard starts them when it sees the change.\n",
            source.display(),
            config_path.display()
        )
    );
    assert_eq!(
        read(&config_path),
        "{\n  \"mcpServers\": {\n    \"time\": {\n      \"command\": \"python3\",\n      \
         \"args\": [\"-m\", \"mcp_server_time\"]\n    },\n    \"fetch\": {\n      \
         \"command\": \"python3\",\n      \"args\": [\"-m\", \"mcp_server_fetch\"],\n      \
         \"cwd\": \"/tmp\"\n    },\n    \"not-installed\": {\n      \
         \"command\": \"mcp-server-not-installed-anywhere\"\n    },\n    \"github\": {\n      \
         \"url\": \"https://api.githubcopilot.com/mcp/\",\n      \
         \"transport\": \"streamable-http\"\n    },\n    \"events\": {\n      \
         \"url\": \"http://localhost:3001/sse\",\n      \"transport\": \"sse\"\n    }\n  },\n  \
         \"globalShortcut\": \"\"\n}\n"
    );
    let after = config::load(&config_path).expect("loads");
    // The one new problem is the one the report named.
    let new: Vec<String> = problems(&after)
        .into_iter()
        .filter(|problem| !problems(&before).contains(problem))
        .collect();
    assert_eq!(
        new,
        [
            "mcpServers.not-installed.command: `mcp-server-not-installed-anywhere` was not found on PATH"
        ]
    );
    assert_eq!(backend_names(&after), ["time", "fetch", "github", "events"]);
}

#[test]
fn files_that_cannot_be_used_are_named_with_their_place_and_nothing_is_written() {
    let home = Home::new();
    let config_path = home.path("config.toml");
    let broken = fixture("broken.json");
    let error = home.fail(
        &[
            "import",
            "cursor",
            "--from",
            arg(&broken),
            "--config",
            arg(&config_path),
        ],
        &[],
    );
    assert_eq!(
        error,
        format!(
            "switchboard: {}:3:30: not valid JSON: Expected comma\n",
            broken.display()
        )
    );
    assert!(!config_path.exists());

    let error = home.fail(&["import", "vscode", "--config", arg(&config_path)], &[]);
    assert_eq!(
        error,
        format!(
            "switchboard: VS Code has no MCP config at {} (give its path with --from)\n",
            home.home().join(".config/Code/User/mcp.json").display()
        )
    );

    std::fs::write(&config_path, "[servers.a\ncommand = \"x\"\n").expect("write");
    let error = home.fail(
        &[
            "import",
            "cursor",
            "--from",
            arg(&fixture("cursor-mcp.json")),
            "--config",
            arg(&config_path),
        ],
        &[],
    );
    assert!(
        error.starts_with(&format!(
            "switchboard: config file {} cannot be used:\n{}:1:",
            config_path.display(),
            config_path.display()
        )),
        "{error}"
    );
    assert_eq!(read(&config_path), "[servers.a\ncommand = \"x\"\n");

    let (claude_file, _) = home.place("broken.json", ".config/Claude/claude_desktop_config.json");
    let error = home.fail(&["install", "claude"], &[]);
    assert!(
        error.starts_with(&format!(
            "switchboard: {}:3:30: not valid JSON",
            claude_file.display()
        )),
        "{error}"
    );
    assert_eq!(
        names_in(claude_file.parent().expect("a folder")),
        ["claude_desktop_config.json"]
    );
}
