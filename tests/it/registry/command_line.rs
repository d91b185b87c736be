//! `search`, `add` and `remove` as programs other programs run, with no `serve` and no keychain:
//! results on stdout and `--json` that parses, an add refused before anything is written when
//! `serve` would not run what it writes, and an add and a remove that need no keychain when no
//! secret is involved.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

use super::{path_with_uv, source};
use crate::support::*;

/// A config file whose only registry source is `url`, then `servers` (TOML), and the
/// directories of a Switchboard that does not run.
struct Place {
    dir: tempfile::TempDir,
}

impl Place {
    fn new(url: &str, servers: &str) -> Place {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            format!("[registry]\nsources = [{url:?}]\n\n{servers}"),
        )
        .unwrap();
        Place { dir }
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    fn text(&self) -> String {
        std::fs::read_to_string(self.config()).unwrap()
    }

    /// Runs `switchboard ARGS --config CONFIG` with `path` as its PATH and no D-Bus session, so
    /// no keychain.
    fn run(&self, args: &[&str], path: &str) -> Output {
        Command::new(switchboard_exe())
            .args(args)
            .arg("--config")
            .arg(self.config())
            .env("PATH", path)
            .env("SWITCHBOARD_RUNTIME_DIR", self.dir.path().join("run"))
            .env("SWITCHBOARD_DATA_DIR", self.dir.path().join("data"))
            .env("XDG_RUNTIME_DIR", self.dir.path().join("run"))
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("switchboard runs")
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A folder with nothing in it, as a PATH on which no runner is found.
fn empty_path(place: &Place) -> String {
    let empty = place.dir.path().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    empty.display().to_string()
}

const TIME: &str = "io.github.modelcontextprotocol/server-time";

#[test]
fn search_results_are_on_stdout_and_its_json_parses() {
    let source = source(&[]);
    let url = source.field("url");
    let place = Place::new(&url, "");
    let found = place.run(&["search", "time", "--source", &url], &path_with_uv());
    assert_eq!(found.status.code(), Some(0), "{}", text(&found.stderr));
    assert!(
        text(&found.stdout).contains(&format!("{TIME}@2026.10.19")),
        "what `2>/dev/null` keeps: {}",
        text(&found.stdout)
    );
    let found = place.run(
        &["search", "time", "--source", &url, "--json"],
        &path_with_uv(),
    );
    assert_eq!(found.status.code(), Some(0));
    let document: Value = serde_json::from_slice(&found.stdout).expect("one JSON document");
    let time = document["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["name"] == TIME)
        .unwrap_or_else(|| panic!("{document}"));
    assert_eq!(time["version"], "2026.10.19");
    assert_eq!(time["packages"][0]["registry_type"], "pypi");
    assert_eq!(time["packages"][0]["identifier"], "mcp-server-time");
    assert_eq!(time["source"], url.as_str());
    assert_eq!(time["cannot_add"], Value::Null);
    assert_eq!(document["failed_sources"], serde_json::json!([]));

    // Nothing found is no failure: an empty list.
    let found = place.run(
        &[
            "search",
            "surely-no-such-server",
            "--source",
            &url,
            "--json",
        ],
        &path_with_uv(),
    );
    assert_eq!(found.status.code(), Some(0));
    let document: Value = serde_json::from_slice(&found.stdout).expect("one JSON document");
    assert_eq!(document["entries"], serde_json::json!([]));
}

#[test]
fn add_refuses_a_runner_that_is_not_installed_and_a_name_in_use_writing_nothing() {
    let source = source(&[]);
    let url = source.field("url");
    let place = Place::new(&url, "");
    let before = place.text();

    // No `uvx` on PATH: serve would leave the server out, so nothing is written.
    let added = place.run(&["add", TIME, "--yes"], &empty_path(&place));
    let stderr = text(&added.stderr);
    assert_eq!(added.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "Switchboard would not run `server-time` as written: servers.server-time.command: \
             `uvx` was not found on PATH; install uv: \
             https://docs.astral.sh/uv/getting-started/installation/; nothing was added"
        ),
        "{stderr}"
    );
    assert!(added.stdout.is_empty(), "{}", text(&added.stdout));
    assert_eq!(place.text(), before, "the file is unchanged");
    assert!(!place.dir.path().join("data/pins/server-time.json").exists());

    // A name in use: refused, saying how to choose another.
    let taken = Place::new(&url, "[servers.server-time]\ncommand = \"python3\"\n");
    let before = taken.text();
    let added = taken.run(&["add", TIME, "--yes"], &path_with_uv());
    let stderr = text(&added.stderr);
    assert_eq!(added.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "a server named `server-time` exists already; give another name with --name NAME; \
             nothing was added"
        ),
        "{stderr}"
    );
    assert_eq!(taken.text(), before);

    // --json without --yes: the plan as one document, and nothing written.
    let planned = taken.run(&["add", TIME, "--name", "time2", "--json"], &path_with_uv());
    assert_eq!(planned.status.code(), Some(0), "{}", text(&planned.stderr));
    let document: Value = serde_json::from_slice(&planned.stdout).expect("one JSON document");
    let plan = &document["plan"];
    assert_eq!(plan["server"], "time2", "{document}");
    assert_eq!(plan["launch"]["kind"], "command");
    assert_eq!(plan["launch"]["program"], "uvx");
    assert_eq!(
        plan["launch"]["args"],
        serde_json::json!(["mcp-server-time==2026.10.19"]),
        "{document}"
    );
    assert_eq!(plan["held"], true, "review_added is on by default");
    assert!(plan["confirm"].as_str().is_some_and(|c| c.len() == 64));
    assert_eq!(document["added"], Value::Null);
    assert_eq!(taken.text(), before, "a plan writes nothing");
}

#[test]
fn remove_without_a_keychain_succeeds_unless_a_secret_cannot_be_deleted() {
    let source = source(&[]);
    let place = Place::new(
        &source.field("url"),
        "[servers.plain]\ncommand = \"python3\"\n\n\
         [servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\n\n\
         [servers.kept]\ncommand = \"python3\"\nenv = { TOKEN = \"${secret:kept_token}\" }\n\n\
         [servers.holder]\ncommand = \"python3\"\nenv = { TOKEN = \"${secret:held_token}\" }\n",
    );
    let path = std::env::var("PATH").unwrap();
    let no_zbus = |said: &str| {
        assert!(
            !said.contains("zbus") && !said.contains("org.freedesktop"),
            "no raw keychain error: {said}"
        );
    };

    // No secret involved: removed, exit 0.
    let removed = place.run(&["remove", "plain"], &path);
    assert_eq!(removed.status.code(), Some(0), "{}", text(&removed.stderr));
    assert!(
        text(&removed.stdout).contains("`plain` is removed, with its pins and cached tools"),
        "{}",
        text(&removed.stdout)
    );
    no_zbus(&text(&removed.stderr));
    assert!(!place.text().contains("[servers.plain]"));

    // A remote server's sign-in tokens cannot be looked for: said, and it is removed.
    let removed = place.run(&["remove", "remote"], &path);
    let stderr = text(&removed.stderr);
    assert_eq!(removed.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "note: its sign-in tokens, if any, are not deleted: no keychain is available"
        ),
        "{stderr}"
    );
    no_zbus(&stderr);
    assert!(!place.text().contains("[servers.remote]"));

    // Its secrets kept on request: nothing to ask the keychain.
    let removed = place.run(&["remove", "kept", "--keep-secrets"], &path);
    assert_eq!(removed.status.code(), Some(0), "{}", text(&removed.stderr));
    assert!(
        text(&removed.stdout).contains("its secret kept_token stays in the keychain"),
        "{}",
        text(&removed.stdout)
    );
    assert!(!place.text().contains("[servers.kept]"));

    // Its secret to be deleted, and no keychain: the server goes, the secret's fate is said.
    let removed = place.run(&["remove", "holder", "--delete-secrets"], &path);
    let stderr = text(&removed.stderr);
    assert_eq!(removed.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "its secrets held_token are not deleted: no keychain is available; delete them \
             later, once the keychain can be used, with `switchboard secret delete NAME` for \
             each"
        ),
        "{stderr}"
    );
    no_zbus(&stderr);
    assert!(
        !place.text().contains("[servers.holder]"),
        "{}",
        place.text()
    );
}

#[test]
fn add_without_a_keychain_adds_what_needs_no_secret_and_refuses_what_does() {
    let source = source(&[]);
    let url = source.field("url");
    let place = Place::new(&url, "");

    // server-time needs no secret: added, with no keychain to ask.
    let added = place.run(&["add", TIME, "--yes"], &path_with_uv());
    assert_eq!(added.status.code(), Some(0), "{}", text(&added.stderr));
    assert!(
        place.text().contains("[servers.server-time]"),
        "{}",
        place.text()
    );

    // remote-echo's API key is a secret, kept only in a keychain: refused, nothing written,
    // in plain words.
    let before = place.text();
    let refused = place.run(
        &[
            "add",
            "io.github.switchboard-tests/remote-echo",
            "--input",
            "port=1234",
            "--input",
            "X-Api-Key=k-7f3",
            "--yes",
        ],
        &path_with_uv(),
    );
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no keychain is available") && stderr.contains("nothing was added"),
        "{stderr}"
    );
    assert!(!stderr.contains("zbus"), "{stderr}");
    assert!(
        !stderr.contains("k-7f3"),
        "the secret is never echoed: {stderr}"
    );
    assert_eq!(place.text(), before, "the file is unchanged");
}
