//! The MCP configs of the editors Switchboard knows: where Claude Desktop, Claude Code, Cursor,
//! VS Code, Zed, Windsurf, Gemini CLI and Codex CLI keep them, [`import`] of their servers (local
//! and remote) into our config, and [`install`] of the entry that points an editor at Switchboard.
//!
//! Editors' files are JSON with comments and trailing commas (JSONC), sometimes with a byte order
//! mark, in UTF-16, or with CRLF line ends; Codex CLI's is TOML. They are read and edited as a
//! syntax tree (`jsonc-parser`, `toml_edit`), so every byte outside the entry that changes stays
//! as it was, and written back in the encoding they came in. Our own TOML config only ever grows
//! at its end (see [`import`]), so its comments and formatting stay byte for byte.
//!
//! Every write replaces the file atomically (a temporary file beside it, then a rename) with the
//! permissions it had; [`install`] first copies the editor's file to a backup beside it.
//!
//! Floor 8 of the workspace (ARCHITECTURE.md). It stands on `transport` and below (for the
//! endpoint's address); it never talks to a running hub.

mod clients;
mod editor_file;
mod files;
mod import;
mod install;
mod moving;
mod places;

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use config::{ConfigError, EndpointConfig, Severity};
use transport::token::Missing;

pub use clients::{ClientSetup, client_setups};
pub(crate) use editor_file::FileFormat;
pub use import::{
    ImportAction, ImportReport, ImportRequest, InUse, ServerImport, SkipReason, import, in_use,
};
pub use install::{
    EntriesUpdate, InstallOutcome, InstallReport, InstallRequest, install, update_entries,
};
pub use moving::{
    EntryChange, Fate, MoveReport, MoveRequest, MovedEntry, UndoReport, UndoRequest, can_undo,
    move_editor, undo_move,
};
pub use places::{Location, Places};

/// The name of the entry that points an editor at Switchboard.
pub(crate) const ENTRY_NAME: &str = "switchboard";

/// An editor whose MCP config Switchboard can read and write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Editor {
    /// Claude Desktop: `claude_desktop_config.json`, which holds its local servers (connectors
    /// added in the app are kept elsewhere).
    #[value(name = "claude")]
    Claude,
    /// Cursor: `~/.cursor/mcp.json`.
    Cursor,
    /// VS Code: the user `mcp.json`.
    #[value(name = "vscode")]
    VsCode,
    /// Claude Code: `~/.claude.json` (user scope), or a project's `.mcp.json` with --from/--to;
    /// `mcpServers` entries with a `type`.
    #[value(name = "claude-code")]
    ClaudeCode,
    /// Zed: `settings.json`, `context_servers` (`command`/`args`/`env`, or `url`/`headers`).
    Zed,
    /// Windsurf, now Devin Desktop: `~/.codeium/windsurf/mcp_config.json`; a remote server's URL
    /// is `serverUrl`.
    #[value(name = "windsurf", alias = "devin")]
    Windsurf,
    /// Gemini CLI: `~/.gemini/settings.json`; a Streamable HTTP server's URL is `httpUrl`.
    #[value(name = "gemini")]
    Gemini,
    /// Codex CLI: `~/.codex/config.toml` (or under `$CODEX_HOME`), `[mcp_servers.NAME]` tables.
    Codex,
}

impl Editor {
    pub const ALL: [Editor; 8] = [
        Editor::Claude,
        Editor::ClaudeCode,
        Editor::Cursor,
        Editor::VsCode,
        Editor::Zed,
        Editor::Windsurf,
        Editor::Gemini,
        Editor::Codex,
    ];

    /// The editor's name as people know it.
    pub fn title(self) -> &'static str {
        match self {
            Editor::Claude => "Claude Desktop",
            Editor::Cursor => "Cursor",
            Editor::VsCode => "VS Code",
            Editor::ClaudeCode => "Claude Code",
            Editor::Zed => "Zed",
            Editor::Windsurf => "Windsurf (Devin Desktop)",
            Editor::Gemini => "Gemini CLI",
            Editor::Codex => "Codex CLI",
        }
    }

    /// The editor's name on the command line (`switchboard install NAME`).
    pub fn cli_name(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .expect("every editor has a name")
            .get_name()
            .to_owned()
    }

    /// The id `/api/clients` gives this editor.
    pub fn client_id(self) -> &'static str {
        match self {
            Editor::Claude => "claude-desktop",
            Editor::Cursor => "cursor",
            Editor::VsCode => "vscode",
            Editor::ClaudeCode => "claude-code",
            Editor::Zed => "zed",
            Editor::Windsurf => "windsurf",
            Editor::Gemini => "gemini-cli",
            Editor::Codex => "codex",
        }
    }

    pub fn from_client_id(id: &str) -> Option<Editor> {
        Editor::ALL
            .into_iter()
            .find(|editor| editor.client_id() == id)
    }

    /// The key of the file's top-level object that maps server names to servers.
    pub(crate) fn servers_key(self) -> &'static str {
        match self {
            Editor::Claude
            | Editor::Cursor
            | Editor::ClaudeCode
            | Editor::Windsurf
            | Editor::Gemini => "mcpServers",
            Editor::VsCode => "servers",
            Editor::Zed => "context_servers",
            Editor::Codex => "mcp_servers",
        }
    }

    /// How the editor's config file is written.
    pub(crate) fn format(self) -> FileFormat {
        match self {
            Editor::Codex => FileFormat::Toml,
            _ => FileFormat::Json,
        }
    }

    /// Where the editor keeps its user-wide MCP config on this machine (see [`Places`]).
    pub fn location(self) -> Result<Location, EditorError> {
        let places = Places::of_this_machine().ok_or(EditorError::NoHome { editor: self })?;
        Ok(places.locate(self))
    }

    /// The path of [`Editor::location`].
    pub(crate) fn config_path(self) -> Result<PathBuf, EditorError> {
        self.location().map(|location| location.path)
    }

    /// `given`, or the editor's usual config file when there is none.
    fn file(self, given: Option<&Path>) -> Result<PathBuf, EditorError> {
        match given {
            Some(path) => Ok(path.to_path_buf()),
            None => self.config_path(),
        }
    }

    /// Whether the editor seems installed here: its config file, or the folder it keeps it in,
    /// exists. Only ever looks whether they exist, never inside (see [`Location::guarded`]).
    pub fn detected(self) -> bool {
        self.config_path().is_ok_and(|path| {
            path.exists()
                || path
                    .parent()
                    .is_some_and(|dir| dir != Path::new("") && dir.is_dir() && !is_home(dir))
        })
    }

    /// How an editor reaches Switchboard: Claude Desktop launches `switchboard connect` (stdio),
    /// the others call `/mcp` (Streamable HTTP).
    pub(crate) fn transport(self) -> &'static str {
        match self {
            Editor::Claude => "stdio",
            _ => "http",
        }
    }

    /// How to open the editor's config, and where else it reads servers from.
    fn how_to_open(self) -> &'static str {
        match self {
            Editor::Claude => "Settings → Developer → Edit Config",
            Editor::Cursor => "or .cursor/mcp.json in a project",
            Editor::VsCode => "MCP: Open User Configuration; or .vscode/mcp.json in a workspace",
            Editor::ClaudeCode => "or .mcp.json in a project; `claude mcp list` shows them",
            Editor::Zed => "zed: open settings file",
            Editor::Windsurf => "Windsurf Settings → Cascade → MCP servers",
            Editor::Gemini => "or .gemini/settings.json in a project",
            Editor::Codex => {
                "or .codex/config.toml in a trusted project; `codex mcp list` shows them"
            }
        }
    }

    /// Whether the editor replaces `${…}` references in a server's values before starting it.
    /// Claude Desktop passes values on as written.
    fn expands_references(self) -> bool {
        match self {
            Editor::Claude | Editor::Zed | Editor::Codex => false,
            Editor::Cursor
            | Editor::VsCode
            | Editor::ClaudeCode
            | Editor::Windsurf
            | Editor::Gemini => true,
        }
    }

    /// The entry that points this editor at Switchboard: `switchboard connect` over stdio for
    /// Claude Desktop, the `/mcp` URL for the others.
    pub(crate) fn switchboard_entry(self, endpoint: &Destination) -> Value {
        match self {
            Editor::Claude => endpoint.stdio_entry(),
            Editor::Cursor | Editor::Zed => endpoint.http_entry(None, "url"),
            Editor::VsCode | Editor::ClaudeCode => endpoint.http_entry(Some("http"), "url"),
            Editor::Windsurf => endpoint.http_entry(None, "serverUrl"),
            Editor::Gemini => endpoint.http_entry(None, "httpUrl"),
            // Codex takes static headers as `http_headers` (it refuses an inline bearer token).
            Editor::Codex => endpoint.http_entry_with(None, "url", "http_headers"),
        }
    }
}

/// What editors are given to reach Switchboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// The `switchboard` binary, which stdio editors launch as `switchboard connect`.
    pub exe: PathBuf,
    /// `/mcp`'s URL, like `http://127.0.0.1:8765/mcp`.
    pub url: String,
    /// `/mcp`'s bearer token, when it requires one.
    pub token: Option<String>,
    /// The profile the editor is given (see `[profiles.NAME]`): `url` is then `/mcp/NAME`, and
    /// stdio editors launch `switchboard connect --profile NAME`.
    pub profile: Option<String>,
}

impl Destination {
    /// The endpoint the config file at `path` describes (its `[endpoint]` table, defaults for
    /// what it leaves out), with the token `/mcp` requires under it, generated in `data_dir` if
    /// it is Switchboard's (see [`Missing`] for one not made yet). Without a file, the endpoint of the config Switchboard writes on its
    /// first start, which requires that token.
    ///
    /// A setting with an error (say, a token from an unset `${env:…}`) is refused rather than
    /// left at its default: an editor given no token, or the wrong port, would only fail.
    pub fn for_config_file(
        path: &Path,
        exe: PathBuf,
        data_dir: &Path,
        missing: Missing,
    ) -> Result<Destination, EditorError> {
        if !path.exists() {
            let endpoint = EndpointConfig {
                require_token: Some(true),
                ..EndpointConfig::default()
            };
            return Destination::for_endpoint(exe, &endpoint, data_dir, missing);
        }
        let config = config::load(path)?;
        let invalid = config.diagnostics.iter().any(|diagnostic| {
            diagnostic.severity == Severity::Error && diagnostic.field.starts_with("endpoint")
        });
        if invalid {
            return Err(EditorError::EndpointInvalid {
                path: config.path.clone(),
            });
        }
        Destination::for_endpoint(exe, &config.endpoint, data_dir, missing)
    }

    fn for_endpoint(
        exe: PathBuf,
        endpoint: &EndpointConfig,
        data_dir: &Path,
        missing: Missing,
    ) -> Result<Destination, EditorError> {
        let token = transport::token::endpoint_token(endpoint, data_dir, missing)?;
        Ok(Destination::new(exe, endpoint.listen, token))
    }

    /// `/mcp` of an endpoint listening on `listen`, which requires `token` if there is one.
    pub(crate) fn new(exe: PathBuf, listen: SocketAddr, token: Option<String>) -> Destination {
        Destination {
            exe,
            url: format!(
                "{}{}",
                transport::http::local_base_url(listen),
                transport::http::MCP_PATH
            ),
            token,
            profile: None,
        }
    }

    /// The same endpoint for the profile `profile`, whose name must be one a profile can have.
    pub fn for_profile(mut self, profile: &str) -> Result<Destination, EditorError> {
        if !config::is_valid_profile_name(profile) {
            return Err(EditorError::BadProfile {
                profile: profile.to_owned(),
            });
        }
        self.url = format!("{}/{profile}", self.url);
        self.profile = Some(profile.to_owned());
        Ok(self)
    }

    /// `{"command": <exe>, "args": ["connect"]}` (with `--profile NAME` for a profile).
    pub(crate) fn stdio_entry(&self) -> Value {
        let mut args = vec!["connect".to_owned()];
        if let Some(profile) = &self.profile {
            args.extend(["--profile".to_owned(), profile.clone()]);
        }
        json!({ "command": self.exe.to_string_lossy(), "args": args })
    }

    /// `{"type": kind, url_key: …}`, with an `Authorization` header when there is a token.
    pub(crate) fn http_entry(&self, kind: Option<&str>, url_key: &str) -> Value {
        self.http_entry_with(kind, url_key, "headers")
    }

    /// As [`Destination::http_entry`], the headers under `headers_key`.
    fn http_entry_with(&self, kind: Option<&str>, url_key: &str, headers_key: &str) -> Value {
        let mut entry = json!({});
        if let Some(kind) = kind {
            entry["type"] = json!(kind);
        }
        entry[url_key] = json!(self.url);
        if let Some(token) = &self.token {
            entry[headers_key] = json!({ "Authorization": format!("Bearer {token}") });
        }
        entry
    }
}

/// Why reading or changing an editor's config, or ours, failed.
#[derive(Debug, thiserror::Error)]
pub enum EditorError {
    #[error("cannot locate {}'s config: the home directory is unknown", editor.title())]
    NoHome { editor: Editor },
    #[error(
        "{} has no MCP config at {} (give its path with --from)",
        editor.title(),
        path.display()
    )]
    NotFound { editor: Editor, path: PathBuf },
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    /// macOS refused to let Switchboard read another app's file.
    #[error(
        "cannot read {}: blocked by macOS privacy settings; allow Switchboard in System \
         Settings › Privacy & Security › App Management, or run `tccutil reset \
         SystemPolicyAppData dev.switchboard.desktop` to be asked again, then try again",
        path.display()
    )]
    BlockedByPrivacy { path: PathBuf },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
    /// The file is not JSON (comments allowed), or not shaped as the editor's config.
    #[error("{}{}: {message}", path.display(), at_position(*position))]
    Invalid {
        path: PathBuf,
        /// 1-based line and column, when the problem is at one place.
        position: Option<(usize, usize)>,
        message: String,
    },
    /// Our config cannot be read, or cannot be merged into (see the message).
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{}: {reason}", path.display())]
    Unsupported { path: PathBuf, reason: String },
    #[error(
        "the [endpoint] table of {} has errors (run `switchboard check`); fix them first, or \
         editors would be given an address or token that does not work",
        path.display()
    )]
    EndpointInvalid { path: PathBuf },
    #[error(transparent)]
    Token(#[from] transport::token::TokenError),
    #[error(
        "{profile:?} cannot be a profile's name: use ASCII letters, digits, `_` or `-`, as in \
         [profiles.NAME]"
    )]
    BadProfile { profile: String },
    #[error("{} has no move to undo", editor.title())]
    NothingToUndo { editor: Editor },
    #[error(
        "{} changed since the move; putting the old file back would lose that change (use \
         --force to do it anyway)",
        path.display()
    )]
    ChangedSinceMove { path: PathBuf },
    /// Secrets could not be kept in the keychain; nothing was written.
    #[error("{0}; nothing was written")]
    Keychain(#[from] platform::secrets::SecretError),
}

/// Whether `dir` is the home folder itself, which every editor's folder test would find.
fn is_home(dir: &Path) -> bool {
    directories::BaseDirs::new().is_some_and(|dirs| dirs.home_dir() == dir)
}

/// An editor as the id `/api/clients` gives it, in what is serialized.
pub(crate) fn serialize_client_id<S: serde::Serializer>(
    editor: &Editor,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(editor.client_id())
}

fn at_position(position: Option<(usize, usize)>) -> String {
    match position {
        Some((line, column)) => format!(":{line}:{column}"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_ids_name_the_editors_of_the_dashboard() {
        for editor in Editor::ALL {
            assert_eq!(Editor::from_client_id(editor.client_id()), Some(editor));
        }
        assert_eq!(Editor::from_client_id("emacs"), None);
        assert_eq!(Editor::from_client_id("claude"), None);
    }

    #[test]
    fn entries_list_their_keys_in_the_order_people_write_them() {
        let endpoint = Destination {
            exe: PathBuf::from("/opt/switchboard"),
            url: "http://127.0.0.1:9000/mcp".to_owned(),
            token: Some("s3cret".to_owned()),
            profile: None,
        };
        let text = |entry: Value| serde_json::to_string(&entry).expect("JSON");
        assert_eq!(
            text(endpoint.stdio_entry()),
            r#"{"command":"/opt/switchboard","args":["connect"]}"#
        );
        assert_eq!(
            text(endpoint.http_entry(Some("http"), "url")),
            r#"{"type":"http","url":"http://127.0.0.1:9000/mcp","headers":{"Authorization":"Bearer s3cret"}}"#
        );
    }

    #[test]
    fn entries_point_at_the_binary_or_the_url_with_the_token() {
        let endpoint = Destination::new(
            PathBuf::from("/opt/switchboard"),
            "0.0.0.0:9000".parse().expect("an address"),
            Some("s3cret".to_owned()),
        );
        assert_eq!(endpoint.url, "http://127.0.0.1:9000/mcp");
        assert_eq!(
            Editor::Claude.switchboard_entry(&endpoint),
            json!({ "command": "/opt/switchboard", "args": ["connect"] })
        );
        let headers = json!({ "Authorization": "Bearer s3cret" });
        assert_eq!(
            Editor::Cursor.switchboard_entry(&endpoint),
            json!({ "url": "http://127.0.0.1:9000/mcp", "headers": headers })
        );
        assert_eq!(
            Editor::VsCode.switchboard_entry(&Destination {
                token: None,
                ..endpoint
            }),
            json!({ "type": "http", "url": "http://127.0.0.1:9000/mcp" })
        );
    }

    #[test]
    fn the_endpoint_comes_from_the_config_file_and_an_invalid_token_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("config.toml");
        let data = dir.path().join("data");
        let exe = || PathBuf::from("/sb");
        let destination =
            |path: &Path| Destination::for_config_file(path, exe(), &data, Missing::Make);
        // No config yet: the one Switchboard will write requires its token.
        let endpoint = destination(&path).expect("defaults");
        assert_eq!(endpoint.url, "http://127.0.0.1:8765/mcp");
        let generated = std::fs::read_to_string(data.join(transport::token::MCP_TOKEN_FILE))
            .expect("the generated token");
        assert_eq!(endpoint.token.as_deref(), Some(generated.trim()));

        // A config from before the token says nothing, and gets none.
        std::fs::write(&path, "[endpoint]\nlisten = \"127.0.0.1:4000\"\n").expect("write");
        let endpoint = destination(&path).expect("valid");
        assert_eq!(endpoint.url, "http://127.0.0.1:4000/mcp");
        assert_eq!(endpoint.token, None);
        std::fs::write(&path, "[endpoint]\nrequire_token = true\n").expect("write");
        assert_eq!(
            destination(&path).expect("valid").token.as_deref(),
            Some(generated.trim())
        );
        std::fs::write(&path, "[endpoint]\nrequire_token = false\n").expect("write");
        assert_eq!(destination(&path).expect("valid").token, None);

        std::fs::write(
            &path,
            "[endpoint]\ntoken = \"${env:SWITCHBOARD_EDITORS_TEST_UNSET_VARIABLE}\"\n",
        )
        .expect("write");
        let error = destination(&path).expect_err("refused");
        assert!(matches!(error, EditorError::EndpointInvalid { .. }));
        assert!(error.to_string().contains("switchboard check"));

        std::fs::write(&path, "[endpoint\n").expect("write");
        let error = destination(&path).expect_err("refused");
        assert!(matches!(error, EditorError::Config(_)), "{error}");
    }
}
