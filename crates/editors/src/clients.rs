//! What the dashboard's "Connect an editor" page shows for each editor it knows: where that
//! editor keeps its MCP config on this machine, and the entry to merge into it.

use std::path::Path;

use serde::Serialize;

use super::editor_file::EditorFile;
use super::{Destination, ENTRY_NAME, Editor, Places};
use platform::System;

/// One editor's way to reach Switchboard.
#[derive(Debug, Serialize)]
pub struct ClientSetup {
    pub(crate) id: &'static str,
    pub(crate) title: &'static str,
    pub(crate) transport: &'static str,
    /// Where that editor keeps its config on this machine, and how to open it.
    pub(crate) config_path_hint: String,
    /// What to merge into that file (JSON, or TOML for Codex CLI).
    pub snippet: String,
    /// Whether the editor seems installed here (its config file or folder exists).
    pub(crate) detected: bool,
}

/// The setups of every editor Switchboard knows (what `switchboard install` writes for each),
/// all reaching `destination`, and whether each seems installed here.
pub fn client_setups(destination: &Destination) -> Vec<ClientSetup> {
    let places = Places::of_this_machine();
    let hint = |editor: Editor| {
        let Some(places) = &places else {
            return editor.how_to_open().to_owned();
        };
        let location = places.locate(editor);
        let shown = shown_path(&location.path, &places.home, places.system);
        match location.note {
            Some(note) => format!("{shown} ({}); {note}", editor.how_to_open()),
            None => format!("{shown} ({})", editor.how_to_open()),
        }
    };
    Editor::ALL
        .into_iter()
        .map(|editor| ClientSetup {
            id: editor.client_id(),
            title: editor.title(),
            transport: editor.transport(),
            config_path_hint: hint(editor),
            snippet: EditorFile::snippet(
                editor.format(),
                editor.servers_key(),
                ENTRY_NAME,
                &editor.switchboard_entry(destination),
            ),
            detected: editor.detected(),
        })
        .collect()
}

/// `path` with the home folder written `~` where that is how people write it (not on Windows).
fn shown_path(path: &Path, home: &Path, system: System) -> String {
    match path.strip_prefix(home) {
        Ok(rest) if system != System::Windows => format!("~/{}", rest.display()),
        _ => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::Value;

    use super::*;

    #[test]
    fn every_known_editor_has_a_setup_with_its_own_file() {
        let destination = Destination {
            exe: PathBuf::from("/opt/switchboard/bin/switchboard"),
            url: "http://127.0.0.1:8765/mcp".to_owned(),
            token: None,
            profile: None,
        };
        let setups = client_setups(&destination);
        let ids: Vec<&str> = setups.iter().map(|setup| setup.id).collect();
        assert_eq!(
            ids,
            [
                "claude-desktop",
                "claude-code",
                "cursor",
                "vscode",
                "zed",
                "windsurf",
                "gemini-cli",
                "codex"
            ]
        );
        let hint = |id: &str| {
            let setup = setups.iter().find(|setup| setup.id == id).expect("listed");
            setup.config_path_hint.clone()
        };
        assert!(hint("claude-desktop").contains("claude_desktop_config.json"));
        assert!(hint("cursor").contains(".cursor/mcp.json"));
        assert!(hint("vscode").contains("mcp.json"));
        assert!(hint("zed").contains("zed/settings.json"));
        assert!(hint("claude-code").contains(".claude.json"));
        assert!(hint("windsurf").contains(".codeium/windsurf/mcp_config.json"));
        assert!(hint("gemini-cli").contains(".gemini/settings.json"));
        assert!(hint("codex").contains(".codex/config.toml"));
        let snippet =
            |index: usize| -> Value { serde_json::from_str(&setups[index].snippet).expect("JSON") };
        let url = "http://127.0.0.1:8765/mcp";
        assert_eq!(snippet(4)["context_servers"][ENTRY_NAME]["url"], url);
        assert_eq!(snippet(1)["mcpServers"][ENTRY_NAME]["type"], "http");
        assert_eq!(snippet(5)["mcpServers"][ENTRY_NAME]["serverUrl"], url);
        assert_eq!(snippet(6)["mcpServers"][ENTRY_NAME]["httpUrl"], url);
        assert_eq!(
            setups[7].snippet,
            "[mcp_servers.switchboard]\nurl = \"http://127.0.0.1:8765/mcp\"\n"
        );
    }

    #[test]
    fn paths_under_home_are_written_with_a_tilde_but_on_windows() {
        let (path, home) = (
            Path::new("/home/ada/.cursor/mcp.json"),
            Path::new("/home/ada"),
        );
        assert_eq!(shown_path(path, home, System::Linux), "~/.cursor/mcp.json");
        assert_eq!(shown_path(path, home, System::MacOs), "~/.cursor/mcp.json");
        assert_eq!(
            shown_path(path, home, System::Windows),
            "/home/ada/.cursor/mcp.json"
        );
        assert_eq!(
            shown_path(Path::new("/etc/x.json"), home, System::Linux),
            "/etc/x.json"
        );
    }
}
