//! Which editors use this Switchboard, and through which profile: read from each editor's own
//! file, the entries `install` and `move` wrote there or a person wrote by hand. What needs a
//! person warns about a client's limits only for these editors.

use std::path::Path;

use serde_json::Value;

use super::entry::EntryReader;
use crate::editor_file::EditorFile;
use crate::{Editor, Places};

/// An editor whose file has an entry that reaches this Switchboard, and the profile it reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InUse {
    pub editor: Editor,
    pub profile: String,
}

/// Every editor whose usual file, on this machine, has an entry that reaches the Switchboard
/// that `exe` runs, listening on `port`: one that runs `exe connect`, or calls a loopback URL at
/// `port`. A file that is missing or cannot be read has none; a file that macOS guards is not
/// read (reading it would ask the person).
pub fn in_use(exe: &Path, port: u16) -> Vec<InUse> {
    let Some(places) = Places::of_this_machine() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for editor in Editor::ALL {
        let location = places.locate(editor);
        if location.guarded {
            continue;
        }
        let Ok(Some(file)) = EditorFile::read(&location.path, editor.format()) else {
            continue;
        };
        let Ok(entries) = file.entries(editor.servers_key()) else {
            continue;
        };
        let reader = EntryReader {
            editor,
            exe,
            port,
            sandbox: false,
        };
        for (_, entry) in entries {
            if let Some(profile) = profile_reached(&reader, &entry) {
                found.push(InUse { editor, profile });
            }
        }
    }
    found.sort_by(|a, b| {
        (a.editor.client_id(), &a.profile).cmp(&(b.editor.client_id(), &b.profile))
    });
    found.dedup();
    found
}

/// The profile `entry` reaches when it reaches this Switchboard.
fn profile_reached(reader: &EntryReader<'_>, entry: &Value) -> Option<String> {
    let fields = entry.as_object()?;
    let url = ["url", "serverUrl", "httpUrl"]
        .iter()
        .find_map(|key| fields.get(*key)?.as_str());
    let named = match url {
        Some(url) => {
            if !reader.is_own_url(url) {
                return None;
            }
            let path = url.split(['?', '#']).next().unwrap_or(url);
            path.split_once("/mcp/")
                .map(|(_, profile)| profile.trim_end_matches('/').to_owned())
        }
        None => {
            let command = fields.get("command")?.as_str()?;
            let args = super::run::string_list(fields.get("args"));
            if !reader.runs_switchboard(command, &args) {
                return None;
            }
            profile_argument(&args)
        }
    };
    Some(
        named
            .filter(|profile| config::is_valid_profile_name(profile))
            .unwrap_or_else(|| config::DEFAULT_PROFILE.to_owned()),
    )
}

/// The value of `--profile NAME` or `--profile=NAME` in `connect`'s arguments.
fn profile_argument(args: &[String]) -> Option<String> {
    args.iter()
        .enumerate()
        .find_map(|(index, arg)| match arg.strip_prefix("--profile") {
            Some("") => args.get(index + 1).cloned(),
            Some(rest) => rest.strip_prefix('=').map(str::to_owned),
            None => None,
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_entry_reaches_a_profile_of_this_switchboard_by_its_url_or_its_connect_arguments() {
        let exe = Path::new("/opt/sb/switchboard");
        let reader = EntryReader {
            editor: Editor::Cursor,
            exe,
            port: 8765,
            sandbox: false,
        };
        let reached = |entry: Value| profile_reached(&reader, &entry);
        assert_eq!(
            reached(json!({"url": "http://127.0.0.1:8765/mcp"})).as_deref(),
            Some("default")
        );
        assert_eq!(
            reached(json!({"serverUrl": "http://localhost:8765/mcp/work?x=1"})).as_deref(),
            Some("work")
        );
        assert_eq!(
            reached(json!({"url": "http://127.0.0.1:9999/mcp"})),
            None,
            "another port"
        );
        assert_eq!(reached(json!({"url": "https://example.com/mcp"})), None);
        assert_eq!(
            reached(
                json!({"command": "/opt/sb/switchboard", "args": ["connect", "--profile", "work"]})
            )
            .as_deref(),
            Some("work")
        );
        assert_eq!(
            reached(json!({"command": "switchboard.exe", "args": ["connect", "--profile=review"]}))
                .as_deref(),
            Some("review")
        );
        assert_eq!(
            reached(json!({"command": "switchboard", "args": ["connect"]})).as_deref(),
            Some("default")
        );
        assert_eq!(
            reached(json!({"command": "npx", "args": ["connect"]})),
            None
        );
        assert_eq!(
            reached(json!({"command": "switchboard", "args": ["serve"]})),
            None
        );
    }
}
