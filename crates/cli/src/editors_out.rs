//! What `import`, `install` and `move` take and print: the editors each one lists in its help,
//! and their results, on stdout as text or as one JSON document (`--json`), while notes and
//! errors go to stderr. The JSON documents are the reports the dashboard's API answers with
//! (`editors::ImportReport`, `InstallReport`, `MoveReport`, `UndoReport`), so their field names
//! are the API's.

use clap::ValueEnum;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use serde::Serialize;
use std::fmt::Display;

use editors::Editor;

/// Writes a command's result on stdout (`crate::output`): `report` as text, or as JSON with
/// `json`.
pub(crate) fn print_result<T: Serialize + Display>(report: &T, json: bool) {
    match json {
        true => crate::output::json(report),
        false => crate::output::text(&report.to_string()),
    }
}

/// An install's report with its diff, which the dashboard's API leaves out and the person at the
/// command line asked for.
#[derive(Serialize)]
pub(crate) struct InstallResult<'a> {
    #[serde(flatten)]
    report: &'a editors::InstallReport,
    diff: &'a str,
}

impl<'a> InstallResult<'a> {
    pub(crate) fn new(report: &'a editors::InstallReport) -> InstallResult<'a> {
        InstallResult {
            report,
            diff: report.diff(),
        }
    }
}

impl Display for InstallResult<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.report.fmt(f)
    }
}

/// The editors `import` and `move` read, each with the file its servers are read from.
pub(crate) fn editor_to_read() -> impl TypedValueParser<Value = Editor> {
    editor_parser(|editor| match editor {
        Editor::Claude => {
            "Claude Desktop: claude_desktop_config.json (its local servers; connectors added in \
             the app are not in that file)"
        }
        Editor::ClaudeCode => {
            "Claude Code: ~/.claude.json (user scope), or a project's .mcp.json given with --from"
        }
        Editor::Cursor => "Cursor: ~/.cursor/mcp.json",
        Editor::VsCode => "VS Code: the user mcp.json",
        Editor::Zed => "Zed: settings.json, `context_servers`",
        Editor::Windsurf => "Windsurf (Devin Desktop): ~/.codeium/windsurf/mcp_config.json",
        Editor::Gemini => "Gemini CLI: ~/.gemini/settings.json",
        Editor::Codex => "Codex CLI: ~/.codex/config.toml (or under $CODEX_HOME)",
    })
}

/// The editors `install` points at Switchboard, each with the entry it is given and where.
pub(crate) fn editor_to_install() -> impl TypedValueParser<Value = Editor> {
    editor_parser(|editor| match editor {
        Editor::Claude => {
            "Claude Desktop: an entry that launches `switchboard connect` (stdio), in \
             claude_desktop_config.json"
        }
        Editor::ClaudeCode => {
            "Claude Code: /mcp's URL (type http) in ~/.claude.json, or in a project's .mcp.json \
             given with --to"
        }
        Editor::Cursor => "Cursor: /mcp's URL in ~/.cursor/mcp.json",
        Editor::VsCode => "VS Code: /mcp's URL (type http) in the user mcp.json",
        Editor::Zed => "Zed: /mcp's URL in settings.json, `context_servers`",
        Editor::Windsurf => {
            "Windsurf (Devin Desktop): /mcp's URL as `serverUrl` in \
             ~/.codeium/windsurf/mcp_config.json"
        }
        Editor::Gemini => "Gemini CLI: /mcp's URL as `httpUrl` in ~/.gemini/settings.json",
        Editor::Codex => {
            "Codex CLI: /mcp's URL, its token in `http_headers`, in ~/.codex/config.toml"
        }
    })
}

/// Every editor by its command-line name, each with `help`.
fn editor_parser(help: fn(Editor) -> &'static str) -> impl TypedValueParser<Value = Editor> {
    let values = Editor::ALL.into_iter().map(move |editor| {
        editor
            .to_possible_value()
            .expect("every editor has a name")
            .help(help(editor))
    });
    PossibleValuesParser::new(values).map(|name| {
        Editor::from_str(&name, false).expect("the parser takes only editors' names and aliases")
    })
}
