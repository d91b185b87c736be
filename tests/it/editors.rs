//! `switchboard import` and `switchboard install` against sample configs of Claude Desktop, Claude
//! Code, Cursor, VS Code, Zed, Windsurf, Gemini CLI and Codex CLI (`tests/fixtures/editors/`:
//! comments, trailing commas, unknown keys, a UTF-8 byte order mark, UTF-16, CRLF, TOML, remote
//! servers, entries pointing at Switchboard, duplicates). The real
//! binary runs with its home folder (`HOME`, `XDG_CONFIG_HOME`, `APPDATA`) in a temporary folder,
//! so editors' files are found where the editors keep them, and nothing outside is touched.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{keychain_service, switchboard_exe};
use config::Config;

/// A temporary home folder for the binary.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// A file outside the home folder (our configs given with `--config`, say).
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs `switchboard ARGS` with this home and `extra_env`.
    fn run(&self, args: &[&str], extra_env: &[(&str, &str)]) -> Output {
        let home = self.home();
        Command::new(switchboard_exe())
            .args(args)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("APPDATA", home.join("AppData/Roaming"))
            .env_remove("SWITCHBOARD_CONFIG")
            .env_remove("CODEX_HOME")
            .envs(extra_env.iter().copied())
            .output()
            .expect("switchboard runs")
    }

    /// Runs `switchboard ARGS`, asserts that it succeeded, and returns what it printed.
    fn succeed(&self, args: &[&str], extra_env: &[(&str, &str)]) -> String {
        let output = self.run(args, extra_env);
        let stderr = String::from_utf8(output.stderr).expect("UTF-8");
        assert!(output.status.success(), "{args:?} failed:\n{stderr}");
        assert!(output.stdout.is_empty(), "stdout is empty");
        stderr
    }

    /// Runs `switchboard ARGS`, asserts that it failed, and returns what it printed.
    fn fail(&self, args: &[&str], extra_env: &[(&str, &str)]) -> String {
        let output = self.run(args, extra_env);
        let stderr = String::from_utf8(output.stderr).expect("UTF-8");
        assert_eq!(output.status.code(), Some(1), "{args:?}:\n{stderr}");
        stderr
    }

    /// Copies a sample into the home folder at `relative` and returns its bytes.
    fn place(&self, sample: &str, relative: &str) -> (PathBuf, Vec<u8>) {
        let path = self.home().join(relative);
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
        let bytes = std::fs::read(fixture(sample)).expect("read the sample");
        std::fs::write(&path, &bytes).expect("write");
        (path, bytes)
    }
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/editors")
        .join(name)
}

fn exe() -> String {
    switchboard_exe().to_string_lossy().into_owned()
}

fn arg(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("read")
}

/// The names in a folder, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

fn backend_names(config: &Config) -> Vec<&str> {
    config
        .backends
        .iter()
        .map(|backend| backend.name.as_str())
        .collect()
}

/// Diagnostics as `field: message`, positions left out (they move as a file grows).
fn problems(config: &Config) -> Vec<String> {
    config
        .diagnostics
        .iter()
        .map(|diagnostic| format!("{}: {}", diagnostic.field, diagnostic.message))
        .collect()
}

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
             files-again: skipped: `filesystem` runs the same command already\n  \
             demo: skipped: a server named `demo` exists already\n  \
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
    assert!(again.contains("  filesystem: skipped: `filesystem` runs the same command already\n"));
    assert!(again.contains("  My Notes: skipped: `My_Notes` runs the same command already\n"));
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
         env = {{ MEMORY_FILE_PATH = \"${{env:HOME}}/.cursor/memory.json\" }}\n"
    );
    let lines = |verb: &str, skipped: &str| {
        format!(
            "servers of Cursor ({}) into {}:\n  \
             memory: {verb}; left out `autoApprove`\n  \
             remote-docs: {skipped}: a remote server (http); Switchboard supervises local stdio \
             servers only\n  \
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
             1 server(s) added; a running Switchboard starts them when it sees the change.\n",
            lines("added", "skipped"),
            config_path.display()
        )
    );
    assert_eq!(read(&config_path), format!("{default_text}{addition}"));
    assert_eq!(names_in(&config_dir), ["config.toml"]);
    let config = config::load(&config_path).expect("loads");
    assert_eq!(problems(&config), Vec::<String>::new());
    assert_eq!(backend_names(&config), ["demo", "memory"]);
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
             github: skipped: a remote server (http); Switchboard supervises local stdio servers \
             only\n  \
             events: skipped: a remote server (sse); Switchboard supervises local stdio servers \
             only\n  \
             dotenv: skipped: it loads variables from envFile \"${{workspaceFolder}}/.env\", which \
             Switchboard cannot; add it by hand with those variables in `env`\n  \
             switchboard: skipped: it points at Switchboard itself (imported, Switchboard would \
             start itself)\n\
             2 server(s) added; a running Switchboard starts them when it sees the change.\n",
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
         \"command\": \"mcp-server-not-installed-anywhere\"\n    }\n  },\n  \
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
    assert_eq!(backend_names(&after), ["time", "fetch"]);
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

#[test]
fn install_points_claude_desktop_at_this_binary_with_a_backup_keeping_bom_and_crlf() {
    let home = Home::new();
    let (claude_file, original) = home.place(
        "claude_desktop_config.json",
        ".config/Claude/claude_desktop_config.json",
    );
    let folder = claude_file.parent().expect("a folder").to_path_buf();
    let installed = String::from_utf8(original.clone())
        .expect("UTF-8")
        .replace("/usr/local/bin/switchboard", &exe());
    assert_ne!(installed.as_bytes(), original);

    let dry_run = home.succeed(&["install", "claude", "--dry-run"], &[]);
    assert_eq!(
        dry_run,
        format!(
            "Dry run: nothing is written.\nClaude Desktop: would update the \"switchboard\" entry \
             in {path}:\n--- {path}\n+++ {path}\n@@ -17,5 +17,5 @@\n     \"demo\": {{ \"command\": \
             \"node\", \"args\": [\"demo.js\"] }},\n     \"switchboard\": {{\n-      \"command\": \
             \"/usr/local/bin/switchboard\",\n+      \"command\": \"{exe}\",\n       \"args\": \
             [\"connect\"]\n     }}\n",
            path = claude_file.display(),
            exe = exe()
        )
    );
    assert_eq!(std::fs::read(&claude_file).expect("read"), original);
    assert_eq!(names_in(&folder), ["claude_desktop_config.json"]);

    let report = home.succeed(&["install", "claude"], &[]);
    let names = names_in(&folder);
    assert_eq!(names.len(), 2, "{names:?}");
    let backup = folder.join(&names[1]);
    assert!(
        names[1].starts_with("claude_desktop_config.json.switchboard-backup-"),
        "{names:?}"
    );
    assert_eq!(
        report,
        format!(
            "Claude Desktop: updated the \"switchboard\" entry in {}.\nThe file as it was is in \
             {}.\nRestart Claude Desktop (or reload its MCP servers) to connect it to Switchboard.\n",
            claude_file.display(),
            backup.display()
        )
    );
    // The byte order mark, the CRLF line ends and every other key are as they were.
    assert_eq!(
        std::fs::read(&claude_file).expect("read"),
        installed.as_bytes()
    );
    assert_eq!(std::fs::read(&backup).expect("read"), original);

    let again = home.succeed(&["install", "claude"], &[]);
    assert_eq!(
        again,
        format!(
            "Claude Desktop already points at Switchboard (entry \"switchboard\" in {}); nothing \
             to do.\n",
            claude_file.display()
        )
    );
    assert_eq!(names_in(&folder), names);
    assert_eq!(
        std::fs::read(&claude_file).expect("read"),
        installed.as_bytes()
    );
}

#[test]
fn install_gives_cursor_and_vscode_our_url_and_token() {
    let home = Home::new();
    let config_path = home.path("config.toml");
    std::fs::write(
        &config_path,
        "[endpoint]\nlisten = \"127.0.0.1:18765\"\ntoken = \"${env:SB_EDITORS_TEST_TOKEN}\"\n",
    )
    .expect("write");
    let token = [("SB_EDITORS_TEST_TOKEN", "s3cret")];
    let url = "http://127.0.0.1:18765/mcp";

    // Cursor's entry for the default endpoint is replaced; comments and trailing commas stay.
    let (cursor_file, original) = home.place("cursor-mcp.json", ".cursor/mcp.json");
    let report = home.succeed(
        &["install", "cursor", "--config", arg(&config_path)],
        &token,
    );
    assert!(
        report.starts_with(&format!(
            "Cursor: updated the \"switchboard\" entry in {}.\n",
            cursor_file.display()
        )),
        "{report}"
    );
    assert_eq!(
        read(&cursor_file),
        String::from_utf8(original)
            .expect("UTF-8")
            .replace(
                "    \"switchboard\": { \"url\": \"http://127.0.0.1:8765/mcp\" },\n",
                &format!(
                    "    \"switchboard\": {{\n      \"url\": \"{url}\",\n      \"headers\": {{\n        \
                     \"Authorization\": \"Bearer s3cret\"\n      }}\n    }},\n"
                )
            )
    );

    // VS Code has no file yet: it is made, folders and all, readable by its owner only.
    let vscode_file = home.home().join(".config/Code/User/mcp.json");
    let report = home.succeed(
        &["install", "vscode", "--config", arg(&config_path)],
        &token,
    );
    assert_eq!(
        report,
        format!(
            "VS Code: added the \"switchboard\" entry in {} (a new file).\nRestart VS Code (or \
             reload its MCP servers) to connect it to Switchboard.\n",
            vscode_file.display()
        )
    );
    assert_eq!(
        read(&vscode_file),
        format!(
            "{{\n  \"servers\": {{\n    \"switchboard\": {{\n      \"type\": \"http\",\n      \
             \"url\": \"{url}\",\n      \"headers\": {{\n        \"Authorization\": \
             \"Bearer s3cret\"\n      }}\n    }}\n  }}\n}}\n"
        )
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&vscode_file).expect("stat").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);

    // A UTF-16 file stays UTF-16 with its byte order mark and CRLF line ends.
    let utf16_file = home.path("vscode-mcp.utf16.json");
    std::fs::copy(fixture("vscode-mcp.utf16.json"), &utf16_file).expect("copy");
    home.succeed(
        &[
            "install",
            "vscode",
            "--to",
            arg(&utf16_file),
            "--config",
            arg(&config_path),
        ],
        &token,
    );
    let bytes = std::fs::read(&utf16_file).expect("read");
    let units: Vec<u16> = bytes[2..]
        .chunks(2)
        .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
        .collect();
    let text = String::from_utf16(&units).expect("UTF-16");
    assert_eq!(&bytes[..2], b"\xFF\xFE");
    assert!(
        text.contains(&format!(
            "\t\t\"switchboard\": {{\r\n\t\t\t\"type\": \"http\",\r\n\t\t\t\"url\": \"{url}\",\r\n"
        )),
        "{text}"
    );
    assert!(text.contains("\t\"inputs\": [\r\n"), "{text}");

    // Without its variable the token is invalid: nothing is written rather than no token.
    let before = read(&cursor_file);
    let error = home.fail(&["install", "cursor", "--config", arg(&config_path)], &[]);
    assert!(
        error.contains("the [endpoint] table of") && error.contains("switchboard check"),
        "{error}"
    );
    assert_eq!(read(&cursor_file), before);
}

#[test]
fn claude_code_zed_windsurf_gemini_and_codex_are_imported_from_and_installed_into_in_place() {
    let home = Home::new();
    let config_path = home.path("config.toml");
    std::fs::write(&config_path, "[endpoint]\nlisten = \"127.0.0.1:18766\"\n").expect("write");
    let url = "http://127.0.0.1:18766/mcp";
    // (editor, sample, where the editor keeps it, its stdio server, its remote one, the key
    // and URL of the entry install writes)
    let editors = [
        (
            "claude-code",
            "claude.json",
            ".claude.json",
            "git",
            "docs",
            "url",
            format!("{url}/review"),
        ),
        (
            "zed",
            "zed-settings.json",
            ".config/zed/settings.json",
            "fetch",
            "linear",
            "url",
            url.to_owned(),
        ),
        (
            "windsurf",
            "windsurf-mcp_config.json",
            ".codeium/windsurf/mcp_config.json",
            "memory",
            "remote",
            "serverUrl",
            url.to_owned(),
        ),
        (
            "gemini",
            "gemini-settings.json",
            ".gemini/settings.json",
            "time",
            "search",
            "httpUrl",
            url.to_owned(),
        ),
        (
            "codex",
            "codex-config.toml",
            ".codex/config.toml",
            "context7",
            "figma",
            "url",
            url.to_owned(),
        ),
    ];
    for (editor, sample, place, stdio, remote, key, entry_url) in editors {
        let (file, original) = home.place(sample, place);
        let original = String::from_utf8(original).expect("UTF-8");
        let report = home.succeed(&["import", editor, "--config", arg(&config_path)], &[]);
        assert!(
            report.contains(&format!("{stdio}: added")),
            "{editor}: {report}"
        );
        assert!(
            report.contains(&format!("{remote}: skipped")),
            "{editor}: {report}"
        );
        assert!(
            read(&config_path).contains(&format!("[servers.{stdio}]")),
            "{editor}"
        );

        let mut args = vec!["install", editor, "--config", arg(&config_path)];
        if editor == "claude-code" {
            args.extend(["--profile", "review"]);
        }
        home.succeed(&args, &[]);
        let written = read(&file);
        if editor == "codex" {
            // TOML: the new table joins the other servers' tables; every other byte stays.
            let servers_end = original
                .find("[profiles.fast]")
                .expect("the sample's profile");
            assert_eq!(
                written,
                format!(
                    "{}[mcp_servers.switchboard]\n{key} = \"{entry_url}\"\n\n{}",
                    &original[..servers_end],
                    &original[servers_end..]
                ),
                "{editor}"
            );
        } else {
            let entry_start = written
                .find("\"switchboard\"")
                .unwrap_or_else(|| panic!("{editor}: {written}"));
            let entry = &written[entry_start..];
            assert!(
                entry.contains(&format!("\"{key}\": \"{entry_url}\"")),
                "{editor} gets its own shape: {written}"
            );
        }
        // Every line of the editor's file is still there, comments included.
        for line in original.lines().filter(|line| !line.trim().is_empty()) {
            let line = line.trim().trim_end_matches(',');
            assert!(written.contains(line), "{editor} lost {line:?}: {written}");
        }
        let backups: Vec<String> = names_in(file.parent().expect("a folder"))
            .into_iter()
            .filter(|name| name.contains("switchboard-backup"))
            .collect();
        assert_eq!(backups.len(), 1, "{editor}: {backups:?}");
        // A second install changes nothing, and makes no second backup.
        let again = home.succeed(&args, &[]);
        assert!(again.contains("already"), "{editor}: {again}");
        assert_eq!(read(&file), written, "{editor}");
        // What Switchboard imported it does not import again, nor the entry pointing at it.
        let second = home.succeed(&["import", editor, "--config", arg(&config_path)], &[]);
        assert!(!second.contains(": added"), "{editor}: {second}");
    }
    let refused = home.fail(
        &[
            "install",
            "zed",
            "--profile",
            "no/such",
            "--config",
            arg(&config_path),
        ],
        &[],
    );
    assert!(refused.contains("cannot be a profile's name"), "{refused}");
}

#[test]
fn secrets_written_out_in_an_editor_are_moved_to_the_keychain_on_request() {
    let home = Home::new();
    home.place(
        "claude_desktop_tokens.json",
        ".config/Claude/claude_desktop_config.json",
    );
    let config_path = home.path("config.toml");
    let service = keychain_service();
    let keychain = [("SWITCHBOARD_KEYCHAIN_SERVICE", service.as_str())];
    let token = "ghp_sample0123456789abcdef";

    let suggested = home.succeed(
        &[
            "import",
            "claude",
            "--dry-run",
            "--config",
            arg(&config_path),
        ],
        &keychain,
    );
    assert!(
        suggested.contains(
            "`GITHUB_PERSONAL_ACCESS_TOKEN` looks like a secret written out: `--move-secrets` \
             keeps it in the keychain instead of the config"
        ),
        "{suggested}"
    );
    let dry = home.succeed(
        &[
            "import",
            "claude",
            "--move-secrets",
            "--dry-run",
            "--config",
            arg(&config_path),
        ],
        &keychain,
    );
    assert!(
        dry.contains(
            "`GITHUB_PERSONAL_ACCESS_TOKEN` is kept in the keychain as \
             `github_github_personal_access_token`"
        ),
        "{dry}"
    );
    assert!(!dry.contains("is not in the keychain"), "{dry}");
    assert!(!config_path.exists(), "a dry run writes nothing");
    let listed = home.succeed(&["secret", "list"], &keychain);
    assert!(listed.is_empty(), "nor stores anything: {listed}");

    let moved = home.succeed(
        &[
            "import",
            "claude",
            "--move-secrets",
            "--config",
            arg(&config_path),
        ],
        &keychain,
    );
    assert!(moved.contains("4 server(s) added"), "{moved}");
    let written = read(&config_path);
    assert!(
        written.contains(
            "env = { GITHUB_PERSONAL_ACCESS_TOKEN = \"${secret:github_github_personal_access_token}\" }"
        ),
        "{written}"
    );
    assert!(
        !written.contains(token),
        "the token is not in the config: {written}"
    );
    let listed = home.succeed(&["secret", "list"], &keychain);
    assert_eq!(listed, "github_github_personal_access_token\n");
    let checked = home.run(&["check", "--config", arg(&config_path)], &keychain);
    let said = String::from_utf8_lossy(&checked.stderr);
    assert!(
        !said.contains("secret"),
        "the config reads the secret back: {said}"
    );

    // Without a keychain, moving is refused and nothing is written.
    let other = home.path("other.toml");
    let refused = home.fail(
        &[
            "import",
            "claude",
            "--move-secrets",
            "--config",
            arg(&other),
        ],
        &[
            ("SWITCHBOARD_KEYCHAIN_SERVICE", service.as_str()),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent"),
        ],
    );
    assert!(
        refused.contains("no keychain is available") && refused.contains("nothing was written"),
        "{refused}"
    );
    assert!(!other.exists());
}

#[test]
fn a_move_of_secrets_leaves_no_plain_value_behind_and_its_undo_brings_them_back() {
    let home = Home::new();
    let (editor_file, original) = home.place(
        "claude_desktop_tokens.json",
        ".config/Claude/claude_desktop_config.json",
    );
    let config_path = home.path("config.toml");
    let service = keychain_service();
    let keychain = [("SWITCHBOARD_KEYCHAIN_SERVICE", service.as_str())];
    let token = "ghp_sample0123456789abcdef";
    let secret = "github_github_personal_access_token";
    let move_args = [
        "move",
        "claude",
        "--move-secrets",
        "--config",
        arg(&config_path),
    ];

    let preview = home.succeed(&[&move_args[..], &["--dry-run"]].concat(), &keychain);
    assert!(!preview.contains(token), "the preview masks it: {preview}");
    assert!(
        preview.contains("GITHUB_PERSONAL_ACCESS_TOKEN"),
        "{preview}"
    );
    assert!(preview.contains("••••••"), "{preview}");

    let moved = home.succeed(&move_args, &keychain);
    assert!(
        moved.contains(&format!(
            "It names the secrets moved to the keychain ({secret}) instead of holding their values"
        )),
        "{moved}"
    );
    assert!(!moved.contains(token), "{moved}");
    // Nowhere on disk: not the editor's file, not its backup, not our config or records.
    let mut pending = vec![home.dir.path().to_path_buf()];
    let mut files = 0;
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            pending.extend(
                std::fs::read_dir(&path)
                    .unwrap()
                    .map(|entry| entry.unwrap().path()),
            );
        } else {
            files += 1;
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes
                    .windows(token.len())
                    .any(|window| window == token.as_bytes()),
                "{} holds the token",
                path.display()
            );
        }
    }
    assert!(
        files >= 4,
        "the editor's file, its backup, our config, the move's record"
    );
    let backup = std::fs::read_dir(editor_file.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.to_string_lossy().contains(".switchboard-backup-"))
        .expect("a backup");
    assert!(read(&backup).contains(&format!("${{secret:{secret}}}")));

    // The undo puts the file back as it was, the value read back from the keychain.
    home.succeed(
        &["move", "claude", "--undo", "--config", arg(&config_path)],
        &keychain,
    );
    assert_eq!(std::fs::read(&editor_file).unwrap(), original);
    home.succeed(&["secret", "delete", secret], &keychain);
}

/// `switchboard move` and its undo for every editor: (editor, sample, entries moved or taken out
/// as duplicates, entries that stay with the reason said).
const MOVES: [(&str, &str, &[&str], &[&str]); 8] = [
    (
        "claude",
        "claude_desktop_config.json",
        &["filesystem", "My Notes", "files-again"],
        &["demo"],
    ),
    ("claude-code", "claude.json", &["git"], &["docs"]),
    (
        "cursor",
        "cursor-mcp.json",
        &["memory"],
        &["remote-docs", "workspace-files"],
    ),
    (
        "vscode",
        "vscode-mcp.utf16.json",
        &["fetch", "not-installed"],
        &["perplexity", "github", "events", "dotenv"],
    ),
    ("zed", "zed-settings.json", &["fetch"], &["linear"]),
    (
        "windsurf",
        "windsurf-mcp_config.json",
        &["memory"],
        &["remote"],
    ),
    ("gemini", "gemini-settings.json", &["time"], &["search"]),
    ("codex", "codex-config.toml", &["context7"], &["figma"]),
];

/// Whether the editor's file (JSON or TOML) has an entry named `name`.
fn has_entry(text: &str, name: &str) -> bool {
    text.contains(&format!("\"{name}\":")) || text.contains(&format!("[mcp_servers.{name}]"))
}

#[test]
fn every_editor_is_moved_over_in_one_step_and_undone_byte_for_byte() {
    for (editor, sample, moved, stay) in MOVES {
        let home = Home::new();
        let config_path = home.path("config.toml");
        let ours = format!(
            "# my servers\n[endpoint]\nlisten = \"127.0.0.1:18767\"\n\n[servers.demo]\n\
             command = {exe:?}\nargs = [\"demo-server\"]\n",
            exe = exe()
        );
        std::fs::write(&config_path, &ours).expect("write");
        let (path, original) = home.place(sample, &format!("editor/{sample}"));
        let data = home.path("data");
        let env = [("SWITCHBOARD_DATA_DIR", arg(&data))];
        let args = |extra: &[&'static str]| {
            let mut args = vec!["move", editor, "--from", arg(&path), "--config"];
            args.push(arg(&config_path));
            args.extend_from_slice(extra);
            args
        };

        let preview = home.succeed(&args(&["--dry-run"]), &env);
        assert!(
            preview.starts_with("Dry run: nothing is written."),
            "{preview}"
        );
        assert_eq!(std::fs::read(&path).expect("read"), original, "{editor}");
        assert_eq!(read(&config_path), ours, "{editor}");
        assert_eq!(
            names_in(&home.home().join("editor")),
            [sample],
            "{editor}: no backup"
        );

        let said = home.succeed(&args(&[]), &env);
        let after = files_text(&path);
        for name in moved {
            assert!(
                !has_entry(&after, name),
                "{editor}: {name} is taken out:\n{after}\n{said}"
            );
        }
        for name in stay {
            assert!(has_entry(&after, name), "{editor}: {name} stays:\n{after}");
            assert!(
                said.contains(&format!("  {name}: stays: ")),
                "{editor}: {said}"
            );
        }
        assert!(has_entry(&after, "switchboard"), "{editor}: {after}");
        assert!(
            said.contains("The file as it was is in "),
            "{editor}: {said}"
        );
        let config = config::load(&config_path).expect("our config stays valid");
        assert!(config.has_errors() || !config.backends.is_empty());
        let backup_dir = names_in(&home.home().join("editor"));
        assert_eq!(backup_dir.len(), 2, "{editor}: one backup: {backup_dir:?}");

        let undone = home.succeed(
            &["move", editor, "--undo", "--config", arg(&config_path)],
            &env,
        );
        assert!(
            undone.contains("is back as it was before the move"),
            "{undone}"
        );
        assert_eq!(
            std::fs::read(&path).expect("read"),
            original,
            "{editor}: byte for byte"
        );
        assert_eq!(
            read(&config_path),
            ours,
            "{editor}: our config byte for byte"
        );
        let again = home.fail(
            &["move", editor, "--undo", "--config", arg(&config_path)],
            &env,
        );
        assert!(again.contains("has no move to undo"), "{again}");
    }
}

/// The editor's file as text, whatever its encoding (VS Code's sample is UTF-16).
fn files_text(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("read");
    match bytes.as_slice() {
        [0xFF, 0xFE, rest @ ..] => String::from_utf16_lossy(
            &rest
                .chunks(2)
                .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
                .collect::<Vec<_>>(),
        ),
        _ => String::from_utf8_lossy(&bytes).into_owned(),
    }
}

#[test]
fn the_issue_s_claude_desktop_moves_with_its_entries_counted_and_kept_on_request() {
    let home = Home::new();
    let config_path = home.path("config.toml");
    let (path, original) = home.place(
        "claude_desktop_config.json",
        ".config/Claude/claude_desktop_config.json",
    );
    let data = home.path("data");
    let env = [("SWITCHBOARD_DATA_DIR", arg(&data))];
    let cfg = arg(&config_path);

    // Kept originals: the entry for Switchboard is set, nothing else leaves.
    let kept = home.succeed(
        &["move", "claude", "--keep-originals", "--config", cfg],
        &env,
    );
    assert!(kept.contains("  filesystem: moved\n"), "{kept}");
    let text = read(&path);
    for name in ["filesystem", "My Notes", "files-again", "demo"] {
        assert!(has_entry(&text, name), "{name}: {text}");
    }
    assert!(text.contains(&exe()), "points at this binary: {text}");
    // `check` now sees every one of them twice.
    let check = home.succeed(&["check", "--config", cfg], &env);
    for (entry, server) in [("filesystem", "filesystem"), ("files-again", "filesystem")] {
        assert!(
            check.contains(&format!(
                "Claude Desktop runs \"{entry}\", which Switchboard runs as `{server}`"
            )),
            "{check}"
        );
    }
    home.succeed(&["move", "claude", "--undo", "--config", cfg], &env);
    assert_eq!(std::fs::read(&path).expect("read"), original);
    assert!(!config_path.exists() || config::load(&config_path).is_ok());

    // The editor's file changed after the move: undo refuses, unless forced.
    home.succeed(&["move", "claude", "--config", cfg], &env);
    let moved = read(&path);
    let edited = moved.replace("\"preferences\"", "\"extra\": 1,\n  \"preferences\"");
    std::fs::write(&path, &edited).expect("write");
    let refused = home.fail(&["move", "claude", "--undo", "--config", cfg], &env);
    assert!(refused.contains("changed since the move"), "{refused}");
    assert!(refused.contains("--force"), "{refused}");
    assert_eq!(read(&path), edited, "nothing written");
    home.succeed(
        &["move", "claude", "--undo", "--force", "--config", cfg],
        &env,
    );
    assert_eq!(std::fs::read(&path).expect("read"), original);
}

#[test]
fn a_file_that_cannot_be_moved_is_left_as_it_was_with_the_reason() {
    let home = Home::new();
    let config_path = home.path("config.toml");
    let (path, original) = home.place("broken.json", "editor/broken.json");
    let data = home.path("data");
    let env = [("SWITCHBOARD_DATA_DIR", arg(&data))];
    let said = home.fail(
        &[
            "move",
            "cursor",
            "--from",
            arg(&path),
            "--config",
            arg(&config_path),
        ],
        &env,
    );
    assert!(said.contains("broken.json:"), "{said}");
    assert_eq!(std::fs::read(&path).expect("read"), original);
    assert!(!config_path.exists(), "our config is not made either");
    assert_eq!(names_in(&home.home().join("editor")), ["broken.json"]);
}

#[test]
fn two_editors_moved_at_once_both_land_in_our_config() {
    let home = Home::new();
    let config_path = home.path("config.toml");
    std::fs::write(&config_path, "# mine\n").expect("write");
    let (claude, _) = home.place("claude_desktop_config.json", "a/claude.json");
    let (codex, _) = home.place("codex-config.toml", "b/config.toml");
    let data = home.path("data");
    let run = |editor: &'static str, path: PathBuf| {
        let home_dir = home.home();
        let config_path = config_path.clone();
        let data = data.clone();
        std::thread::spawn(move || {
            Command::new(switchboard_exe())
                .args(["move", editor, "--from"])
                .arg(&path)
                .arg("--config")
                .arg(&config_path)
                .env("HOME", &home_dir)
                .env("SWITCHBOARD_DATA_DIR", &data)
                .env_remove("SWITCHBOARD_CONFIG")
                .output()
                .expect("switchboard runs")
        })
    };
    let (first, second) = (run("claude", claude), run("codex", codex));
    for output in [first.join().expect("ran"), second.join().expect("ran")] {
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let config = config::load(&config_path).expect("valid");
    let names = backend_names(&config);
    for name in ["filesystem", "My_Notes", "context7"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_dashboard_s_move_refuses_a_changed_file_then_moves_and_undoes() {
    let options = crate::support::ServeOptions::new(&format!(
        "[servers.demo]\ncommand = {:?}\nargs = [\"demo-server\"]\n",
        exe()
    ));
    let home = options.dir().join("home");
    let file = home.join(".config/Claude/claude_desktop_config.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let original = std::fs::read(fixture("claude_desktop_config.json")).unwrap();
    std::fs::write(&file, &original).unwrap();
    let serve = options
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .ready(&["demo"])
        .start();

    let moves = serve.api_get("/api/clients/moves").await;
    assert_eq!(
        moves["first_run"], true,
        "only the demo server runs: {moves}"
    );
    let claude = moves["editors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|editor| editor["id"] == "claude-desktop")
        .unwrap_or_else(|| panic!("Claude Desktop is found: {moves}"))
        .clone();
    assert_eq!(claude["undo"], false);
    let preview = &claude["preview"];
    let fates: Vec<(String, String)> = preview["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            let name = entry["name"].as_str().unwrap().to_owned();
            (name, entry["kind"].as_str().unwrap().to_owned())
        })
        .collect();
    let fate = |name: &str| {
        fates
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, k)| k.as_str())
    };
    assert_eq!(fate("filesystem"), Some("moved"), "{preview}");
    assert_eq!(fate("files-again"), Some("duplicate"), "{preview}");
    assert_eq!(fate("demo"), Some("stays"), "{preview}");
    assert!(
        preview["editor_diff"]
            .as_str()
            .unwrap()
            .contains("-    \"filesystem\": {")
    );
    let fingerprint = preview["fingerprint"].as_str().unwrap().to_owned();

    // The file changes after the preview: the move is refused and nothing is written.
    let changed = String::from_utf8_lossy(&original).replace("Ctrl+Space", "Ctrl+K");
    std::fs::write(&file, &changed).unwrap();
    let body = serde_json::json!({ "fingerprint": fingerprint }).to_string();
    let (status, answer) = serve
        .api_post_body("/api/clients/claude-desktop/move", &body)
        .await;
    assert_eq!(status, 409, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("changed since the preview")
    );
    assert_eq!(read(&file), changed);

    // Against the file as it is now, the move goes through and the config is read again.
    let fingerprint = serve.api_get("/api/clients/moves").await["editors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|editor| editor["id"] == "claude-desktop")
        .unwrap()["preview"]["fingerprint"]
        .clone();
    let body = serde_json::json!({ "fingerprint": fingerprint }).to_string();
    let (status, answer) = serve
        .api_post_body("/api/clients/claude-desktop/move", &body)
        .await;
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("The file as it was is in")
    );
    assert!(!has_entry(&read(&file), "filesystem"));
    crate::support::eventually(
        "the moved servers run",
        crate::support::EVENT_LIMIT,
        || async {
            let list = serve.api_get("/api/backends").await;
            let names: Vec<String> = list
                .as_array()
                .unwrap()
                .iter()
                .map(|backend| backend["name"].as_str().unwrap().to_owned())
                .collect();
            if names.contains(&"filesystem".to_owned()) {
                Ok(())
            } else {
                Err(names)
            }
        },
    )
    .await;
    let moves = serve.api_get("/api/clients/moves").await;
    assert_eq!(moves["first_run"], false, "{moves}");

    let (status, answer) = serve
        .api_post_body("/api/clients/claude-desktop/undo", "{}")
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(read(&file), changed, "back as it was before the move");
    let (status, answer) = serve
        .api_post_body("/api/clients/claude-desktop/undo", "{}")
        .await;
    assert_eq!(status, 404, "{answer}");
}

/// Makes a folder immutable (`chattr +i`: not even root may add a file to it) until dropped.
struct Immutable(PathBuf);

impl Immutable {
    fn new(dir: &Path) -> Immutable {
        let status = Command::new("chattr")
            .arg("+i")
            .arg(dir)
            .status()
            .expect("chattr runs");
        assert!(status.success(), "chattr +i {}", dir.display());
        Immutable(dir.to_path_buf())
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

#[test]
fn a_backup_that_cannot_be_written_stops_the_move_before_anything_is_written() {
    let home = Home::new();
    let config_path = home.path("config.toml");
    std::fs::write(&config_path, "# mine\n").expect("write");
    let (path, original) = home.place("claude_desktop_config.json", "locked/claude.json");
    let data = home.path("data");
    let env = [("SWITCHBOARD_DATA_DIR", arg(&data))];
    let said = {
        let _locked = Immutable::new(path.parent().expect("a folder"));
        home.fail(
            &[
                "move",
                "claude",
                "--from",
                arg(&path),
                "--config",
                arg(&config_path),
            ],
            &env,
        )
    };
    assert!(said.contains("cannot write"), "{said}");
    assert_eq!(std::fs::read(&path).expect("read"), original);
    assert_eq!(read(&config_path), "# mine\n", "our config is untouched");
    assert_eq!(names_in(&home.home().join("locked")), ["claude.json"]);
}

/// The dashboard's "Move over" in a real browser (`tests/ui/move.test.mjs`, playwright-core
/// driving Debian's Chromium): the first-run panel lists Claude Desktop's servers and moves them
/// over, the Connect page shows the move and undoes it byte for byte, a file changed after the
/// preview is refused and moved once shown again, an undo over a changed file asks first, and a
/// file that is not JSON is shown with its error.
#[test]
fn the_dashboard_moves_an_editor_over_and_undoes_it_in_a_real_browser() {
    let options = crate::support::ServeOptions::new(&format!(
        "[servers.demo]\ncommand = {:?}\nargs = [\"demo-server\"]\n",
        exe()
    ));
    let home = options.dir().join("home");
    let file = home.join(".config/Claude/claude_desktop_config.json");
    std::fs::create_dir_all(file.parent().expect("a folder")).expect("mkdir");
    std::fs::copy(fixture("claude_desktop_config.json"), &file).expect("copy the sample");
    let serve = options
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("APPDATA", home.join("AppData/Roaming"))
        .env_remove("SWITCHBOARD_LOG")
        .env_remove("SWITCHBOARD_TOKEN")
        .ready(&["demo"])
        .start();
    let mut node = crate::ui::browser_suite("move.test.mjs", &serve);
    node.env("SWITCHBOARD_EDITOR_FILE", &file)
        .env("SWITCHBOARD_FIXTURE", fixture("claude_desktop_config.json"))
        .env("SWITCHBOARD_CONFIG", serve.config_path());
    crate::support::run_node_suite(node, crate::ui::NODE_LIMIT, &|| serve.log());
}

#[test]
fn a_move_of_what_a_dry_run_showed_is_refused_once_the_file_changed() {
    let home = Home::new();
    let config_path = home.path("config.toml");
    std::fs::write(&config_path, "# mine\n").expect("write");
    let (path, original) = home.place("cursor-mcp.json", "editor/mcp.json");
    let data = home.path("data");
    let env = [("SWITCHBOARD_DATA_DIR", arg(&data))];
    let cfg = arg(&config_path);
    let preview = home.succeed(
        &[
            "move",
            "cursor",
            "--from",
            arg(&path),
            "--config",
            cfg,
            "--dry-run",
        ],
        &env,
    );
    let expect = preview
        .lines()
        .find_map(|line| {
            line.split_once(" --expect ")
                .map(|(_, fingerprint)| fingerprint)
        })
        .unwrap_or_else(|| panic!("the dry run prints its fingerprint: {preview}"))
        .to_owned();
    let edited = String::from_utf8_lossy(&original).replace("memory.json", "memory2.json");
    std::fs::write(&path, &edited).expect("write");
    let args = [
        "move",
        "cursor",
        "--from",
        arg(&path),
        "--config",
        cfg,
        "--expect",
        &expect,
    ];
    let refused = home.fail(&args, &env);
    assert!(refused.contains("changed since the preview"), "{refused}");
    assert_eq!(read(&path), edited, "nothing written");
    assert_eq!(read(&config_path), "# mine\n");
    assert_eq!(
        names_in(&home.home().join("editor")),
        ["mcp.json"],
        "no backup"
    );

    std::fs::write(&path, &original).expect("write");
    let moved = home.succeed(&args, &env);
    assert!(
        moved.contains("  memory: moved, taken out of the editor's file"),
        "{moved}"
    );
}
