//! `switchboard install` and the dashboard's "Install" buttons: the entry that points an editor
//! at Switchboard, written into the editor's own config.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::editor_file::EditorFile;
use super::files;
use super::{Destination, ENTRY_NAME, Editor, EditorError};

/// Which editor to point at which endpoint.
#[derive(Debug, Clone, Copy)]
pub struct InstallRequest<'a> {
    pub editor: Editor,
    /// The editor's file; its usual place when `None`.
    pub to: Option<&'a Path>,
    pub destination: &'a Destination,
    /// Only report what would change; write nothing.
    pub dry_run: bool,
}

/// What an install did (or, in a dry run, would do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstallReport {
    #[serde(serialize_with = "crate::serialize_client_id")]
    pub(crate) editor: Editor,
    /// The editor's file.
    pub path: PathBuf,
    pub outcome: InstallOutcome,
    /// Whether the file did not exist (and is, or would be, created).
    pub(crate) created: bool,
    /// The copy of the file as it was before, when it was changed.
    pub(crate) backup: Option<PathBuf>,
    pub(crate) dry_run: bool,
    /// The change as a unified diff; empty when nothing changes. Not serialized: the editor's
    /// other entries show in it, secrets and all (see [`InstallReport::diff`]).
    #[serde(skip)]
    pub(crate) diff: String,
    /// Whether the file, which now holds `/mcp`'s token, was readable by others and was
    /// narrowed to its owner (0600), with its backup.
    pub(crate) narrowed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum InstallOutcome {
    /// The `switchboard` entry is new.
    Added,
    /// The `switchboard` entry pointed elsewhere (an old binary, another port or token).
    Updated,
    /// An entry (named here) is exactly the one Switchboard would write: nothing to do.
    AlreadyInstalled { name: String },
}

impl InstallReport {
    /// The change as a unified diff, for the person who asked for it; empty when nothing
    /// changes. It shows the editor's file as it is, so it may hold secrets.
    pub fn diff(&self) -> &str {
        &self.diff
    }
}

impl InstallOutcome {
    /// What happened, in a word or two: `added`, `updated`, `already installed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            InstallOutcome::Added => "added",
            InstallOutcome::Updated => "updated",
            InstallOutcome::AlreadyInstalled { .. } => "already installed",
        }
    }
}

impl fmt::Display for InstallReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let title = self.editor.title();
        let path = self.path.display();
        let what = match (&self.outcome, self.dry_run) {
            (InstallOutcome::AlreadyInstalled { name }, _) => {
                return writeln!(
                    f,
                    "{title} already points at Switchboard (entry \"{name}\" in {path}); nothing \
                     to do."
                );
            }
            (InstallOutcome::Added, true) => "would add",
            (InstallOutcome::Updated, true) => "would update",
            (InstallOutcome::Added, false) => "added",
            (InstallOutcome::Updated, false) => "updated",
        };
        if self.dry_run {
            writeln!(f, "Dry run: nothing is written.")?;
        }
        write!(f, "{title}: {what} the \"{ENTRY_NAME}\" entry in {path}")?;
        if self.created {
            f.write_str(" (a new file)")?;
        }
        if self.dry_run {
            return write!(f, ":\n{}", self.diff);
        }
        writeln!(f, ".")?;
        if let Some(backup) = &self.backup {
            writeln!(f, "The file as it was is in {}.", backup.display())?;
        }
        if self.narrowed {
            writeln!(
                f,
                "The file holds Switchboard's /mcp token and was readable by others: it is now \
                 readable by you alone (0600)."
            )?;
        }
        writeln!(
            f,
            "Restart {title} (or reload its MCP servers) to connect it to Switchboard."
        )
    }
}

/// Adds (or corrects) the `switchboard` entry in the editor's config, after copying the file to
/// a backup beside it. Installing twice changes nothing the second time.
pub fn install(request: InstallRequest<'_>) -> Result<InstallReport, EditorError> {
    let editor = request.editor;
    let path = editor.file(request.to)?;
    let mut file = EditorFile::read_or_new(&path, editor.format())?;
    let entry = editor.switchboard_entry(request.destination);
    let existing = file.entries(editor.servers_key())?;
    let same = existing
        .iter()
        .find(|(name, value)| *name == ENTRY_NAME && *value == entry)
        .or_else(|| existing.iter().find(|(_, value)| *value == entry));
    let mut report = InstallReport {
        editor,
        path,
        outcome: InstallOutcome::Added,
        created: file.original().is_none(),
        backup: None,
        dry_run: request.dry_run,
        diff: String::new(),
        narrowed: false,
    };
    if let Some((name, _)) = same {
        report.outcome = InstallOutcome::AlreadyInstalled { name: name.clone() };
        return Ok(report);
    }

    if file.set_entry(editor.servers_key(), ENTRY_NAME, &entry)? {
        report.outcome = InstallOutcome::Updated;
    }
    let text = file.current_text();
    report.diff = files::diff(&report.path.display().to_string(), file.text(), &text);
    if request.dry_run {
        return Ok(report);
    }
    let write_error = |source| EditorError::Write {
        path: report.path.clone(),
        source,
    };
    if let Some(original) = file.original() {
        report.backup = Some(files::back_up(&report.path, original).map_err(write_error)?);
    }
    platform::atomic::write_keeping_permissions(&report.path, &file.encode(&text))
        .map_err(write_error)?;
    if holds_token(&text, request.destination) {
        report.narrowed =
            narrow_holding_token(&report.path, report.backup.as_deref()).map_err(write_error)?;
    }
    Ok(report)
}

/// Whether `text` carries `destination`'s token (an entry of a stdio editor, which launches
/// `connect`, carries none).
fn holds_token(text: &str, destination: &Destination) -> bool {
    destination
        .token
        .as_deref()
        .is_some_and(|token| text.contains(token))
}

/// Narrows a file that holds `/mcp`'s token, and its backup, to their owner when others may
/// read them (an editor's file is often 0644); whether the file was.
fn narrow_holding_token(path: &Path, backup: Option<&Path>) -> std::io::Result<bool> {
    let mut narrowed = false;
    for (index, path) in std::iter::once(path).chain(backup).enumerate() {
        if platform::files::open_to_others(path)? {
            platform::files::restrict_to_owner(path)?;
            narrowed |= index == 0;
        }
    }
    Ok(narrowed)
}

/// What [`update_entries`] changed in one editor's config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntriesUpdate {
    #[serde(serialize_with = "crate::serialize_client_id")]
    pub(crate) editor: Editor,
    pub(crate) path: PathBuf,
    /// The entries given the new endpoint, by their names in the file.
    pub(crate) entries: Vec<String>,
    /// The copy of the file as it was before.
    pub(crate) backup: PathBuf,
}

/// Gives every entry of the editor's config (at `path`) that reaches `/mcp`, or one of its
/// profiles, at `destination`'s address what `destination` makes now (say, with a new token),
/// keeping each entry's name and profile; after a backup. `None` when no entry needs it, or
/// there is no file. Entries that launch `switchboard connect` need nothing: the socket checks
/// the peer instead.
pub fn update_entries(
    editor: Editor,
    path: &Path,
    destination: &Destination,
) -> Result<Option<EntriesUpdate>, EditorError> {
    let Some(mut file) = EditorFile::read(path, editor.format())? else {
        return Ok(None);
    };
    let mut entries = Vec::new();
    for (name, value) in file.entries(editor.servers_key())? {
        let Some(profile) = profile_reached(&value, &destination.url) else {
            continue;
        };
        let target = match profile {
            Some(profile) => destination.clone().for_profile(profile)?,
            None => destination.clone(),
        };
        let entry = editor.switchboard_entry(&target);
        if entry != value {
            file.set_entry(editor.servers_key(), &name, &entry)?;
            entries.push(name);
        }
    }
    let Some(original) = file.original().filter(|_| !entries.is_empty()) else {
        return Ok(None);
    };
    let write_error = |source| EditorError::Write {
        path: path.to_path_buf(),
        source,
    };
    let backup = files::back_up(path, original).map_err(write_error)?;
    let text = file.current_text();
    platform::atomic::write_keeping_permissions(path, &file.encode(&text)).map_err(write_error)?;
    if holds_token(&text, destination) {
        narrow_holding_token(path, Some(&backup)).map_err(write_error)?;
    }
    Ok(Some(EntriesUpdate {
        editor,
        path: path.to_path_buf(),
        entries,
        backup,
    }))
}

/// Whether the entry `value` reaches `mcp_url` (`Some(None)`) or one of its profiles
/// (`Some(Some(name))`), by any of its string fields (editors name the URL differently).
fn profile_reached<'v>(value: &'v serde_json::Value, mcp_url: &str) -> Option<Option<&'v str>> {
    value.as_object()?.values().find_map(|field| {
        let rest = field.as_str()?.strip_prefix(mcp_url)?;
        match rest {
            "" => Some(None),
            _ => rest
                .strip_prefix('/')
                .filter(|profile| config::is_valid_profile_name(profile))
                .map(Some),
        }
    })
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::files::Encoding;

    fn endpoint(token: Option<&str>) -> Destination {
        Destination {
            exe: PathBuf::from("/opt/sb/switchboard"),
            url: "http://127.0.0.1:8765/mcp".to_owned(),
            token: token.map(str::to_owned),
            profile: None,
        }
    }

    fn run(editor: Editor, path: &Path, endpoint: &Destination, dry_run: bool) -> InstallReport {
        install(InstallRequest {
            editor,
            to: Some(path),
            destination: endpoint,
            dry_run,
        })
        .expect("installs")
    }

    #[test]
    fn a_second_install_changes_nothing_and_a_changed_endpoint_updates_the_entry() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("mcp.json");
        let original =
            "{\n  // mine\n  \"servers\": {\n    \"a\": { \"command\": \"x\" },\n  },\n}\n";
        fs::write(&path, original).expect("write");

        let first = run(Editor::VsCode, &path, &endpoint(None), false);
        assert_eq!(first.outcome, InstallOutcome::Added);
        let installed = fs::read_to_string(&path).expect("read");
        assert_eq!(
            installed,
            "{\n  // mine\n  \"servers\": {\n    \"a\": { \"command\": \"x\" },\n    \
             \"switchboard\": {\n      \"type\": \"http\",\n      \
             \"url\": \"http://127.0.0.1:8765/mcp\",\n    },\n  },\n}\n"
        );
        let backup = first.backup.expect("a backup");
        assert_eq!(fs::read_to_string(&backup).expect("read"), original);

        let second = run(Editor::VsCode, &path, &endpoint(None), false);
        assert_eq!(
            second.outcome,
            InstallOutcome::AlreadyInstalled {
                name: "switchboard".to_owned()
            }
        );
        assert_eq!(second.backup, None);
        assert_eq!(fs::read_to_string(&path).expect("read"), installed);

        let third = run(Editor::VsCode, &path, &endpoint(Some("t0ken")), true);
        assert_eq!(third.outcome, InstallOutcome::Updated);
        assert_eq!(fs::read_to_string(&path).expect("read"), installed);
        assert!(
            third
                .diff
                .contains("+      \"headers\": {\n+        \"Authorization\": \"Bearer t0ken\""),
            "{}",
            third.diff
        );
        let updated = run(Editor::VsCode, &path, &endpoint(Some("t0ken")), false);
        assert_eq!(updated.outcome, InstallOutcome::Updated);
        let file = EditorFile::read(&path, Editor::VsCode.format())
            .expect("JSONC")
            .expect("a file");
        let servers = file.entries("servers").expect("valid");
        assert_eq!(servers[1].1["headers"]["Authorization"], "Bearer t0ken");
    }

    #[test]
    fn an_entry_under_another_name_counts_as_installed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("claude_desktop_config.json");
        let text = "{\"mcpServers\": {\"sb\": {\"args\": [\"connect\"], \"command\": \"/opt/sb/switchboard\"}}}";
        fs::write(&path, text).expect("write");
        let report = run(Editor::Claude, &path, &endpoint(None), false);
        assert_eq!(
            report.outcome,
            InstallOutcome::AlreadyInstalled {
                name: "sb".to_owned()
            }
        );
        assert_eq!(fs::read_to_string(&path).expect("read"), text);
    }

    #[test]
    fn the_file_is_written_back_in_its_own_encoding() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("mcp.json");
        let text = "{\r\n\t\"mcpServers\": {}\r\n}\r\n";
        fs::write(&path, files::encode(text, Encoding::Utf16Be)).expect("write");
        run(Editor::Cursor, &path, &endpoint(None), false);
        let (written, encoding) =
            files::decode(&path, &fs::read(&path).expect("read")).expect("decodes");
        assert_eq!(encoding, Encoding::Utf16Be);
        assert_eq!(
            written,
            "{\r\n\t\"mcpServers\": {\r\n\t\t\"switchboard\": {\r\n\t\t\t\
             \"url\": \"http://127.0.0.1:8765/mcp\"\r\n\t\t}\r\n\t}\r\n}\r\n"
        );
    }

    #[test]
    fn a_file_that_is_not_json_is_left_alone() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("mcp.json");
        fs::write(&path, "{ \"mcpServers\": { \"a\": } }").expect("write");
        let error = install(InstallRequest {
            editor: Editor::Cursor,
            to: Some(&path),
            destination: &endpoint(None),
            dry_run: false,
        })
        .expect_err("refused");
        assert!(
            matches!(
                error,
                EditorError::Invalid {
                    position: Some((1, 24)),
                    ..
                }
            ),
            "{error}"
        );
        assert_eq!(
            fs::read_dir(dir.path()).expect("list").count(),
            1,
            "no backup, no temporary file"
        );
    }

    #[test]
    fn the_report_serializes_for_the_dashboard() {
        let report = InstallReport {
            editor: Editor::Claude,
            path: PathBuf::from("/h/c.json"),
            outcome: InstallOutcome::AlreadyInstalled {
                name: "switchboard".to_owned(),
            },
            created: false,
            backup: None,
            dry_run: false,
            diff: String::new(),
            narrowed: false,
        };
        assert_eq!(
            serde_json::to_value(&report).expect("serializes"),
            serde_json::json!({
                "editor": "claude-desktop",
                "path": "/h/c.json",
                "outcome": { "kind": "already_installed", "name": "switchboard" },
                "created": false,
                "backup": null,
                "dry_run": false,
                "narrowed": false,
            })
        );
    }

    /// Cursor's file is often 0644: once it holds `/mcp`'s token, it (and the backup) are the
    /// person's alone, and the report says so; without a token, or for an editor whose entry
    /// launches `connect` and carries none, nothing is narrowed.
    #[test]
    fn a_file_given_the_token_is_narrowed_to_its_owner() {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |path: &Path| fs::metadata(path).expect("metadata").permissions().mode() & 0o777;
        for (token, expected) in [(None, 0o644), (Some("a-token-of-sixteen-chars"), 0o600)] {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("mcp.json");
            fs::write(&path, "{ \"mcpServers\": {} }").expect("write");
            fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
            let report = run(Editor::Cursor, &path, &endpoint(token), false);
            assert_eq!(mode(&path), expected, "{token:?}");
            assert_eq!(report.narrowed, token.is_some());
            let backup = report.backup.as_deref().expect("a backup");
            assert_eq!(mode(backup), expected, "the backup too");
            let said = report.to_string();
            assert_eq!(said.contains("0600"), token.is_some(), "{said}");
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("claude_desktop_config.json");
        fs::write(&path, "{ \"mcpServers\": {} }").expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
        let token = endpoint(Some("a-token-of-sixteen-chars"));
        let report = run(Editor::Claude, &path, &token, false);
        assert!(!report.narrowed, "a stdio entry carries no token");
        assert_eq!(mode(&path), 0o644);
    }
}

#[cfg(test)]
mod update_tests {
    use std::fs;

    use serde_json::{Value, json};

    use super::*;

    fn destination(token: Option<&str>) -> Destination {
        Destination {
            exe: PathBuf::from("/opt/sb/switchboard"),
            url: "http://127.0.0.1:8765/mcp".to_owned(),
            token: token.map(str::to_owned),
            profile: None,
        }
    }

    #[test]
    fn entries_that_reach_mcp_get_the_token_under_their_own_names() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("mcp.json");
        let original = r#"{
  // the person's comment
  "servers": {
    "mine": { "type": "http", "url": "http://127.0.0.1:8765/mcp" },
    "reading": { "type": "http", "url": "http://127.0.0.1:8765/mcp/reading" },
    "elsewhere": { "type": "http", "url": "http://127.0.0.1:9999/mcp" },
    "local": { "command": "/opt/sb/switchboard", "args": ["connect"] }
  }
}
"#;
        fs::write(&path, original).expect("write");
        let update = update_entries(Editor::VsCode, &path, &destination(Some("t0ken")))
            .expect("updated")
            .expect("something to update");
        assert_eq!(update.entries, ["mine", "reading"]);
        assert_eq!(
            fs::read_to_string(&update.backup).expect("backup"),
            original
        );
        let text = fs::read_to_string(&path).expect("read");
        assert!(text.contains("// the person's comment"), "{text}");
        let file = EditorFile::read(&path, Editor::VsCode.format())
            .expect("read")
            .expect("a file");
        let entries: std::collections::BTreeMap<String, Value> = file
            .entries("servers")
            .expect("entries")
            .into_iter()
            .collect();
        let headers = json!({ "Authorization": "Bearer t0ken" });
        assert_eq!(
            entries["mine"],
            json!({ "type": "http", "url": "http://127.0.0.1:8765/mcp", "headers": headers })
        );
        assert_eq!(
            entries["reading"],
            json!({ "type": "http", "url": "http://127.0.0.1:8765/mcp/reading", "headers": headers })
        );
        assert_eq!(entries["elsewhere"]["headers"], Value::Null);
        assert_eq!(entries["local"]["args"], json!(["connect"]));

        // Done twice, nothing more changes; no file, nothing to do.
        let again = update_entries(Editor::VsCode, &path, &destination(Some("t0ken")));
        assert_eq!(again.expect("read"), None);
        let missing = dir.path().join("none.json");
        assert_eq!(
            update_entries(Editor::VsCode, &missing, &destination(Some("t0ken"))).expect("fine"),
            None
        );
    }

    #[test]
    fn codex_gets_its_own_header_table() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("config.toml");
        fs::write(
            &path,
            "model = \"o3\"\n\n[mcp_servers.switchboard]\nurl = \"http://127.0.0.1:8765/mcp\"\n",
        )
        .expect("write");
        let update = update_entries(Editor::Codex, &path, &destination(Some("t0ken")))
            .expect("updated")
            .expect("something to update");
        assert_eq!(update.entries, ["switchboard"]);
        let text = fs::read_to_string(&path).expect("read");
        assert!(text.starts_with("model = \"o3\""), "{text}");
        assert!(text.contains("Bearer t0ken"), "{text}");
        assert!(text.contains("http_headers"), "{text}");
    }
}
