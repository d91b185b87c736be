//! Moving an editor over: its servers into our config and the editor pointed at Switchboard in
//! one step, undone byte for byte, from the command line and the dashboard, and refused where
//! a file changed or cannot be written.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Home, arg, backend_names, exe, fixture, names_in, read};
use crate::support::switchboard_exe;

/// `switchboard move` and its undo for every editor: (editor, sample, entries moved or taken out
/// as duplicates, entries that stay with the reason said).
const MOVES: [(&str, &str, &[&str], &[&str]); 8] = [
    (
        "claude",
        "claude_desktop_config.json",
        &["filesystem", "My Notes", "files-again"],
        &["demo"],
    ),
    ("claude-code", "claude.json", &["git", "docs"], &[]),
    (
        "cursor",
        "cursor-mcp.json",
        &["memory", "remote-docs"],
        &["workspace-files"],
    ),
    (
        "vscode",
        "vscode-mcp.utf16.json",
        &["fetch", "not-installed", "github", "events"],
        &["perplexity", "dotenv"],
    ),
    ("zed", "zed-settings.json", &["fetch", "linear"], &[]),
    (
        "windsurf",
        "windsurf-mcp_config.json",
        &["memory", "remote"],
        &[],
    ),
    ("gemini", "gemini-settings.json", &["time", "search"], &[]),
    ("codex", "codex-config.toml", &["context7", "figma"], &[]),
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

        let said = home.succeed_json(&args(&[]), &env);
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
                preview.contains(&format!("  {name}: stays: ")),
                "{editor}: {preview}"
            );
        }
        assert_every_entry_is_live(&said, &after, &read(&config_path));
        assert!(has_entry(&after, "switchboard"), "{editor}: {after}");
        assert!(said["backup"].is_string(), "{editor}: {said}");
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

/// That every entry a move's JSON report lists is live somewhere: still in the editor's file
/// (`after`), or run by a server of our config (`config`, as TOML) exactly as the entry ran.
fn assert_every_entry_is_live(report: &serde_json::Value, after: &str, config: &str) {
    let entries = report["entries"].as_array().expect("a list of entries");
    for entry in entries {
        let name = entry["name"].as_str().expect("a name");
        let taken_out = entry["taken_out"].as_bool().expect("taken_out");
        match entry["kind"].as_str().expect("a kind") {
            "moved" | "duplicate" if taken_out => {
                let server = entry["server"].as_str().expect("its server");
                assert!(
                    config.contains(&format!("[servers.{server}]")),
                    "{name} lives on as {server}:\n{config}"
                );
                assert!(!has_entry(after, name), "{name} is taken out:\n{after}");
            }
            kind => assert!(
                has_entry(after, name),
                "{name} ({kind}) stays in the editor's file:\n{after}"
            ),
        }
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
    let checked = home.run(&["check", "--config", cfg], &env);
    assert!(checked.status.success());
    let check = String::from_utf8_lossy(&checked.stdout);
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

/// The issue's Cursor: entries that run almost what a server of Switchboard runs (the same
/// command with a token in `env`, or other arguments; the same URL with other headers). Only the
/// exact one is a duplicate; the others are moved as servers of their own, one under a name that
/// does not clash; the one that cannot be moved stays; and the undo puts both files back.
#[test]
fn near_duplicates_are_moved_as_servers_of_their_own_and_nothing_is_lost() {
    let home = Home::new();
    let config_path = home.path("config.toml");
    let ours = "[endpoint]\nlisten = \"127.0.0.1:18768\"\n\n[servers.git]\ncommand = \"uvx\"\n\
                args = [\"mcp-server-git\"]\n\n[servers.docs]\n\
                url = \"https://docs.example.com/mcp\"\n";
    std::fs::write(&config_path, ours).expect("write");
    let path = home.home().join("editor/mcp.json");
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
    let original = r#"{
  "mcpServers": {
    "git": { "command": "uvx", "args": ["mcp-server-git"] },
    "gitcursor": { "command": "uvx", "args": ["mcp-server-git"], "env": { "GITHUB_TOKEN": "ghp_near1" } },
    "git-repo": { "command": "uvx", "args": ["mcp-server-git", "--repository", "/src"] },
    "docs": { "url": "https://docs.example.com/mcp", "headers": { "Authorization": "Bearer near2" } },
    "workspace": { "command": "npx", "args": ["${workspaceFolder}"] }
  }
}
"#;
    std::fs::write(&path, original).expect("write");
    let data = home.path("data");
    let env = [("SWITCHBOARD_DATA_DIR", arg(&data))];
    let from = ["--from", arg(&path), "--config", arg(&config_path)];
    let fates = |report: &serde_json::Value| -> Vec<(String, String, String)> {
        let entries = report["entries"].as_array().expect("entries");
        entries
            .iter()
            .map(|entry| {
                let text = |key: &str| entry[key].as_str().unwrap_or_default().to_owned();
                (text("name"), text("kind"), text("server"))
            })
            .collect()
    };
    let fate = |name: &str, kind: &str, server: &str| {
        (name.to_owned(), kind.to_owned(), server.to_owned())
    };

    // `import --json`, `install --dry-run --json` and `move --dry-run --json` each print one
    // JSON document on stdout (their notes go to stderr, which `succeed_json` leaves out).
    let imported = home.succeed_json(
        &[&["import", "cursor", "--dry-run"], &from[..]].concat(),
        &[],
    );
    assert_eq!(
        fates(&imported),
        [
            fate("git", "duplicate", "git"),
            fate("gitcursor", "added", "gitcursor"),
            fate("git-repo", "added", "git-repo"),
            fate("docs", "added", "docs-cursor"),
            fate("workspace", "skipped", ""),
        ]
    );
    assert_eq!(imported["entries"][3]["taken"], "docs");
    let reason = imported["entries"][4]["reason"].as_str().expect("a reason");
    assert!(reason.contains("${workspaceFolder}"), "{reason}");
    let install = home.succeed_json(
        &[
            "install",
            "cursor",
            "--to",
            arg(&path),
            "--dry-run",
            "--config",
            arg(&config_path),
        ],
        &env,
    );
    assert_eq!(install["outcome"]["kind"], "added");
    assert!(
        install["diff"]
            .as_str()
            .is_some_and(|diff| diff.contains("+    \"switchboard\""))
    );
    let preview = home.succeed_json(
        &[&["move", "cursor", "--dry-run"], &from[..]].concat(),
        &env,
    );
    assert_eq!(
        fates(&preview),
        [
            fate("git", "duplicate", "git"),
            fate("gitcursor", "moved", "gitcursor"),
            fate("git-repo", "moved", "git-repo"),
            fate("docs", "moved", "docs-cursor"),
            fate("workspace", "stays", ""),
        ]
    );
    assert_eq!(preview["switchboard"], "added");
    assert_eq!(read(&path), original, "a dry run writes nothing");
    assert_eq!(read(&config_path), ours);

    let moved = home.succeed_json(&[&["move", "cursor"], &from[..]].concat(), &env);
    let after = read(&path);
    let config = read(&config_path);
    assert_every_entry_is_live(&moved, &after, &config);
    assert!(
        config.contains("[servers.gitcursor]\ncommand = \"uvx\"\nargs = [\"mcp-server-git\"]\nenv = { GITHUB_TOKEN = \"ghp_near1\" }\n"),
        "the token lives on in Switchboard's config:\n{config}"
    );
    assert!(
        config.contains("[servers.docs-cursor]\nurl = \"https://docs.example.com/mcp\"\nheaders = { Authorization = \"Bearer near2\" }\n"),
        "{config}"
    );
    assert!(after.contains("\"workspace\""), "{after}");
    for gone in ["\"git\"", "\"gitcursor\"", "\"git-repo\"", "\"docs\""] {
        assert!(!after.contains(gone), "{gone} is taken out:\n{after}");
    }

    home.succeed(
        &["move", "cursor", "--undo", "--config", arg(&config_path)],
        &env,
    );
    assert_eq!(read(&path), original, "the editor's file byte for byte");
    assert_eq!(read(&config_path), ours, "our config byte for byte");
}
