//! `switchboard import`: the local (stdio) servers of an editor's config, added to ours.
//!
//! Our TOML config only grows at its end: the new `[servers.NAME]` tables are rendered with
//! `toml_edit` and appended, so every byte before them (comments, blank lines, CRLF line ends)
//! stays as it was. (`toml_edit` inserting into the document itself would move the new tables
//! between existing ones and turn CRLF into LF.) A JSON config (Claude Desktop's shape) gets its
//! new entries added to `mcpServers` in place, comments and formatting kept.
//!
//! Nothing is ever imported twice or over something that exists: a name our config has already
//! (compared ignoring case, as the config does) or a command line one of its servers runs already
//! is skipped, and so is an entry that runs Switchboard itself, which would make it start itself.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table};

use super::editor_file::EditorFile;
use super::files::{self, JsonFile};
use super::{Editor, EditorError};
use config::{Diagnostic, Format, MAX_SERVER_NAME_LEN, SandboxDraft};

/// What to import, from where, into which config.
#[derive(Debug, Clone, Copy)]
pub struct ImportRequest<'a> {
    pub editor: Editor,
    /// The editor's file; its usual place when `None`.
    pub from: Option<&'a Path>,
    /// Our config (TOML, or Claude Desktop style JSON); made from the default config when there
    /// is none and something is added.
    pub config_path: &'a Path,
    /// The `switchboard` binary: the default config's demo server runs it, and an entry that
    /// runs it is not imported.
    pub exe: &'a Path,
    /// Only report what would happen; write nothing.
    pub dry_run: bool,
    /// Keep secrets written out in the editor's config (tokens in `env`) in the OS keychain,
    /// and name them in our config as `${secret:NAME}`.
    pub move_secrets: bool,
    /// Give each server a first sandbox: what its command line names (see [`SandboxDraft`]).
    pub sandbox: bool,
}

/// What an import did (or, in a dry run, would do), server by server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportReport {
    pub(crate) editor: Editor,
    /// The editor's file that was read.
    pub(crate) source: PathBuf,
    pub(crate) config_path: PathBuf,
    pub(crate) dry_run: bool,
    /// Whether our config is (or would be) created from the default config.
    pub(crate) config_created: bool,
    /// One per server of the editor's file, in file order.
    pub(crate) servers: Vec<ServerImport>,
    /// The change to our config as a unified diff; empty when nothing is added.
    pub(crate) diff: String,
}

impl ImportReport {
    /// How many servers are (or would be) added.
    pub(crate) fn n_added(&self) -> usize {
        self.servers
            .iter()
            .filter(|server| matches!(server.action, ImportAction::Added { .. }))
            .count()
    }
}

/// One server of the editor's file and what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerImport {
    /// Its name in the editor's file.
    pub(crate) name: String,
    pub(crate) action: ImportAction,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportAction {
    Added {
        /// Its name in our config: the editor's, made a valid server name if it was not one.
        name: String,
        /// What else to know: fields left out, problems `switchboard check` will report.
        notes: Vec<String>,
    },
    Skipped(SkipReason),
}

/// Why a server of the editor's file is not imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// Our config has a server of that name (the name as our config writes it).
    NameTaken(String),
    /// A server of our config (named here) runs the same command with the same arguments.
    SameCommand(String),
    /// It runs `switchboard connect` or points at our `/mcp`: Switchboard would start itself.
    PointsAtSwitchboard,
    /// It is reached over the network (the transport is named here).
    Remote(String),
    /// Our config cannot say what the entry says (why is the text).
    Unsupported(String),
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::NameTaken(name) => write!(f, "a server named `{name}` exists already"),
            SkipReason::SameCommand(name) => {
                write!(f, "`{name}` runs the same command already")
            }
            SkipReason::PointsAtSwitchboard => f.write_str(
                "it points at Switchboard itself (imported, Switchboard would start itself)",
            ),
            SkipReason::Remote(transport) => write!(
                f,
                "a remote server ({transport}); Switchboard supervises local stdio servers only"
            ),
            SkipReason::Unsupported(why) => f.write_str(why),
        }
    }
}

impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (added, skipped) = if self.dry_run {
            ("would be added", "would be skipped")
        } else {
            ("added", "skipped")
        };
        if self.dry_run {
            writeln!(f, "Dry run: nothing is written.")?;
        }
        writeln!(
            f,
            "{} servers of {} ({}) into {}:",
            if self.dry_run {
                "Importing"
            } else {
                "Imported"
            },
            self.editor.title(),
            self.source.display(),
            self.config_path.display()
        )?;
        if self.servers.is_empty() {
            writeln!(f, "  (the file lists no servers)")?;
        }
        for server in &self.servers {
            match &server.action {
                ImportAction::Added { name, notes } => {
                    write!(f, "  {}: {added}", server.name)?;
                    if *name != server.name {
                        write!(
                            f,
                            " as `{name}` (server names use only letters, digits, `_` and `-`)"
                        )?;
                    }
                    for note in notes {
                        write!(f, "; {note}")?;
                    }
                    writeln!(f)?;
                }
                ImportAction::Skipped(reason) => {
                    writeln!(f, "  {}: {skipped}: {reason}", server.name)?;
                }
            }
        }
        let n_added = self.n_added();
        if self.config_created {
            let created = if self.dry_run {
                "would be created"
            } else {
                "was created"
            };
            writeln!(
                f,
                "{} did not exist; it {created} from the default config.",
                self.config_path.display()
            )?;
        }
        match (n_added, self.dry_run) {
            (0, _) => writeln!(
                f,
                "Nothing to add; {} is unchanged.",
                self.config_path.display()
            ),
            (_, true) => write!(f, "The config would change like this:\n{}", self.diff),
            (n, false) => writeln!(
                f,
                "{n} server(s) added; a running Switchboard starts them when it sees the change."
            ),
        }
    }
}

/// Reads the editor's file and adds each of its local servers that our config lacks.
pub fn import(request: ImportRequest<'_>) -> Result<ImportReport, EditorError> {
    let plan = plan(request)?;
    if !request.dry_run {
        plan.commit()?;
    }
    Ok(plan.report)
}

/// An import worked out and not yet written: the report, and what to write.
pub(super) struct ImportPlan {
    pub(super) report: ImportReport,
    /// Our config's text with the servers added; `None` when nothing is added.
    pub(super) merged: Option<String>,
    /// Our config's text as read (the default config's for a config not made yet).
    pub(super) before: String,
    /// Secrets to keep in the keychain first.
    moves: Vec<secrets::Move>,
}

impl ImportPlan {
    /// The secrets it moves to the keychain: their names and values.
    pub(super) fn moved_secrets(&self) -> impl Iterator<Item = (&str, &str)> {
        self.moves
            .iter()
            .map(|one| (one.name.as_str(), one.value.as_str()))
    }

    /// Keeps the secrets in the keychain, then writes our config.
    pub(super) fn commit(&self) -> Result<(), EditorError> {
        let Some(merged) = &self.merged else {
            return Ok(());
        };
        // The keychain first: a config naming secrets that are not there would not run.
        secrets::store(&self.moves)?;
        let path = &self.report.config_path;
        platform::atomic::write_keeping_permissions(path, merged.as_bytes()).map_err(|source| {
            EditorError::Write {
                path: path.clone(),
                source,
            }
        })
    }
}

/// Works out what [`import`] would do, writing nothing.
pub(super) fn plan(request: ImportRequest<'_>) -> Result<ImportPlan, EditorError> {
    let editor = request.editor;
    let source = editor.file(request.from)?;
    let file =
        EditorFile::read(&source, editor.format())?.ok_or_else(|| EditorError::NotFound {
            editor,
            path: source.clone(),
        })?;
    let entries = file.entries(editor.servers_key())?;

    let target = Target::read(request.config_path, request.exe)?;
    let reader = EntryReader {
        editor,
        exe: request.exe,
        port: target.port,
        sandbox: request.sandbox,
    };
    let (servers, mut added) = reader.sort_out(entries, target.servers.clone());
    let mut report = ImportReport {
        editor,
        source,
        config_path: request.config_path.to_path_buf(),
        dry_run: request.dry_run,
        config_created: false,
        servers,
        diff: String::new(),
    };
    if added.is_empty() {
        return Ok(ImportPlan {
            report,
            merged: None,
            before: target.text,
            moves: Vec::new(),
        });
    }
    let moves = secrets::find(
        &mut added,
        &mut report.servers,
        request.move_secrets,
        &|name| platform::secrets::Keychain::secrets().get(name),
    )?;
    let merged = target.with_servers(&added, &report)?;
    let config =
        config::parse(request.config_path, &merged).map_err(|error| EditorError::Unsupported {
            path: request.config_path.to_path_buf(),
            reason: format!(
                "adding the servers would make the file unusable; nothing is written:\n{error}"
            ),
        })?;
    // Nothing is stored yet, so the secrets it would move are missing from the keychain.
    let would_be_stored = |diagnostic: &&Diagnostic| {
        moves.iter().any(|secret| {
            diagnostic
                .message
                .contains(&format!("secret `{}` is not in the keychain", secret.name))
        })
    };
    let after: Vec<Diagnostic> = config
        .diagnostics
        .iter()
        .filter(|diagnostic| !would_be_stored(diagnostic))
        .cloned()
        .collect();
    note_new_problems(
        &mut report.servers,
        target.format.servers_key(),
        &target.diagnostics,
        &after,
    );
    report.config_created = !target.exists;
    report.diff = files::diff(
        &request.config_path.display().to_string(),
        &target.text,
        &merged,
    );
    Ok(ImportPlan {
        report,
        merged: Some(merged),
        before: target.text,
        moves,
    })
}

/// Adds to each added server the problems of `after` about it that `before` did not have, as
/// `switchboard check` would report them.
fn note_new_problems(
    servers: &mut [ServerImport],
    servers_key: &str,
    before: &[Diagnostic],
    after: &[Diagnostic],
) {
    let new_problems: Vec<&Diagnostic> = after
        .iter()
        .filter(|diagnostic| {
            !before
                .iter()
                .any(|old| old.field == diagnostic.field && old.message == diagnostic.message)
        })
        .collect();
    for server in servers {
        if let ImportAction::Added { name, notes } = &mut server.action {
            let field = format!("{servers_key}.{name}");
            notes.extend(
                new_problems
                    .iter()
                    .filter(|diagnostic| {
                        diagnostic.field == field
                            || diagnostic.field.starts_with(&format!("{field}."))
                    })
                    .map(|diagnostic| format!("{}: {}", diagnostic.severity, diagnostic.message)),
            );
        }
    }
}

/// `name` as a valid server name: each character other than an ASCII letter, digit, `_` or `-`
/// becomes `_`, and the name is cut to the longest length allowed.
fn server_name(name: &str) -> String {
    let valid: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_SERVER_NAME_LEN)
        .collect();
    if valid.is_empty() {
        "server".to_owned()
    } else {
        valid
    }
}

/// A server of our config, as far as duplicates go.
#[derive(Debug, Clone)]
struct Existing {
    name: String,
    command: Option<String>,
    args: Vec<String>,
}

/// One local server of the editor's file, in our config's terms.
#[derive(Debug, Clone)]
struct Server {
    command: String,
    args: Vec<String>,
    /// Values in our config's syntax (`${env:NAME}` references, `$${` for a literal `${`).
    env: BTreeMap<String, String>,
    cwd: Option<String>,
    sandbox: Option<SandboxDraft>,
    notes: Vec<String>,
}

/// The fields of an editor's stdio entry that are imported.
const IMPORTED_FIELDS: &[&str] = &["type", "command", "args", "env", "cwd"];

/// `type` values of servers reached over the network.
const REMOTE_TYPES: &[&str] = &["http", "sse", "streamable-http", "streamableHttp"];

/// Turns the entries of one editor's file into servers.
struct EntryReader<'a> {
    editor: Editor,
    exe: &'a Path,
    /// The port of our own endpoint, to recognise entries that point at it.
    port: u16,
    /// Whether each server gets a first sandbox.
    sandbox: bool,
}

impl EntryReader<'_> {
    /// What becomes of each entry, in order, given the servers our config has (`taken`); and
    /// the servers to add, with their names in our config.
    fn sort_out(
        &self,
        entries: Vec<(String, Value)>,
        mut taken: Vec<Existing>,
    ) -> (Vec<ServerImport>, Vec<(String, Server)>) {
        let mut added = Vec::new();
        let mut outcomes = Vec::with_capacity(entries.len());
        for (name, value) in entries {
            let server = match self.read(&value) {
                Ok(server) => server,
                Err(reason) => {
                    outcomes.push(ServerImport {
                        name,
                        action: ImportAction::Skipped(reason),
                    });
                    continue;
                }
            };
            let our_name = server_name(&name);
            let same_name = taken
                .iter()
                .find(|existing| existing.name.eq_ignore_ascii_case(&our_name));
            let same_command = taken.iter().find(|existing| {
                existing.command.as_deref() == Some(server.command.as_str())
                    && existing.args == server.args
            });
            let action = match (same_name, same_command) {
                // The same server under the same name: Switchboard runs it already.
                (Some(named), Some(running)) if named.name == running.name => {
                    ImportAction::Skipped(SkipReason::SameCommand(running.name.clone()))
                }
                (Some(existing), _) => {
                    ImportAction::Skipped(SkipReason::NameTaken(existing.name.clone()))
                }
                (None, Some(existing)) => {
                    ImportAction::Skipped(SkipReason::SameCommand(existing.name.clone()))
                }
                (None, None) => {
                    taken.push(Existing {
                        name: our_name.clone(),
                        command: Some(server.command.clone()),
                        args: server.args.clone(),
                    });
                    let notes = server.notes.clone();
                    added.push((our_name.clone(), server));
                    ImportAction::Added {
                        name: our_name,
                        notes,
                    }
                }
            };
            outcomes.push(ServerImport { name, action });
        }
        (outcomes, added)
    }

    fn read(&self, entry: &Value) -> Result<Server, SkipReason> {
        let unsupported = |why: String| Err(SkipReason::Unsupported(why));
        let Value::Object(fields) = entry else {
            return unsupported("its entry is not an object".to_owned());
        };
        let kind = match fields.get("type") {
            None => None,
            Some(Value::String(kind)) => Some(kind.as_str()),
            Some(_) => return unsupported("its `type` is not a string".to_owned()),
        };
        // Windsurf names a remote server's URL `serverUrl`, Gemini CLI a Streamable HTTP one's
        // `httpUrl`.
        let url = ["url", "serverUrl", "httpUrl"]
            .iter()
            .find_map(|key| fields.get(*key));
        if let Some(url) = url {
            if url.as_str().is_some_and(|url| self.is_own_url(url)) {
                return Err(SkipReason::PointsAtSwitchboard);
            }
            return Err(SkipReason::Remote(kind.unwrap_or("http").to_owned()));
        }
        match kind {
            None | Some("stdio") => {}
            Some(kind) if REMOTE_TYPES.contains(&kind) => {
                return Err(SkipReason::Remote(kind.to_owned()));
            }
            Some(kind) => return unsupported(format!("its type {kind:?} is unknown")),
        }
        let command = match fields.get("command") {
            Some(Value::String(command)) if !command.is_empty() => command.clone(),
            Some(_) => return unsupported("its `command` is not a program name".to_owned()),
            None => return unsupported("it has no `command`".to_owned()),
        };
        let args = match fields.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                let strings: Option<Vec<String>> = items
                    .iter()
                    .map(|item| item.as_str().map(str::to_owned))
                    .collect();
                match strings {
                    Some(strings) => strings,
                    None => return unsupported("its `args` are not all strings".to_owned()),
                }
            }
            Some(_) => return unsupported("its `args` are not a list".to_owned()),
        };
        if self.runs_switchboard(&command, &args) {
            return Err(SkipReason::PointsAtSwitchboard);
        }
        if let Some(env_file) = fields.get("envFile") {
            return unsupported(format!(
                "it loads variables from envFile {env_file}, which Switchboard cannot; add it by \
                 hand with those variables in `env`"
            ));
        }
        let cwd = match fields.get("cwd") {
            None | Some(Value::Null) => None,
            Some(Value::String(cwd)) => Some(cwd.clone()),
            Some(_) => return unsupported("its `cwd` is not a string".to_owned()),
        };
        let mut env = BTreeMap::new();
        match fields.get("env") {
            None | Some(Value::Null) => {}
            Some(Value::Object(variables)) => {
                for (name, value) in variables {
                    let value = match value {
                        Value::String(text) => text.clone(),
                        Value::Number(number) => number.to_string(),
                        Value::Bool(flag) => flag.to_string(),
                        _ => return unsupported(format!("its env {name} is not a string")),
                    };
                    env.insert(name.clone(), self.env_value(name, value)?);
                }
            }
            Some(_) => return unsupported("its `env` is not an object".to_owned()),
        }
        if self.editor.expands_references() {
            let places = std::iter::once(("command", &command))
                .chain(args.iter().map(|arg| ("args", arg)))
                .chain(cwd.iter().map(|cwd| ("cwd", cwd)));
            for (place, text) in places {
                // Our config expands `${env:…}` in arguments as the editor does, not elsewhere.
                if let Some(reference) = reference(text, place == "args") {
                    return Err(self.unexpressible(place, reference));
                }
            }
        }

        let mut left_out: Vec<String> = fields
            .keys()
            .filter(|key| !IMPORTED_FIELDS.contains(&key.as_str()))
            .map(|key| format!("`{key}`"))
            .collect();
        left_out.sort();
        let mut notes = if left_out.is_empty() {
            Vec::new()
        } else {
            vec![format!("left out {}", left_out.join(", "))]
        };
        let sandbox = self
            .sandbox
            .then(|| SandboxDraft::for_command(&command, &args));
        notes.extend(sandbox.as_ref().map(SandboxDraft::describe));
        // Our config reads `${env:…}` and `${secret:…}` in arguments; this editor passes them on
        // as written, so they are written as literal text.
        let args = match self.editor.expands_references() {
            true => args,
            false => args.iter().map(|arg| arg.replace("${", "$${")).collect(),
        };
        Ok(Server {
            command,
            args,
            env,
            cwd,
            sandbox,
            notes,
        })
    }

    /// `value` in our config's syntax, where `${env:NAME}` is expanded and `$${` is a literal
    /// `${`.
    fn env_value(&self, name: &str, value: String) -> Result<String, SkipReason> {
        if !self.editor.expands_references() {
            return Ok(value.replace("${", "$${"));
        }
        match reference(&value, true) {
            Some(reference) => Err(self.unexpressible(&format!("env {name}"), reference)),
            None => Ok(value),
        }
    }

    fn unexpressible(&self, place: &str, reference: &str) -> SkipReason {
        SkipReason::Unsupported(format!(
            "`{reference}` in its {place} is filled in by {}, which Switchboard cannot do; add \
             this server by hand with the value written out",
            self.editor.title()
        ))
    }

    /// Whether `command args` runs `switchboard connect`.
    /// Whether `command args` runs `switchboard connect` (the command written as a path of any
    /// platform, since editors' files travel between machines).
    fn runs_switchboard(&self, command: &str, args: &[String]) -> bool {
        let file_name = command.rsplit(['/', '\\']).next().unwrap_or(command);
        let file_name = file_name.to_ascii_lowercase();
        let stem = file_name.strip_suffix(".exe").unwrap_or(&file_name);
        let own_stem = self
            .exe
            .file_stem()
            .map(|stem| stem.to_string_lossy().to_ascii_lowercase());
        let is_switchboard = Path::new(command) == self.exe
            || stem == "switchboard"
            || own_stem.as_deref() == Some(stem);
        is_switchboard && args.first().is_some_and(|arg| arg == "connect")
    }

    /// Whether `url` is our `/mcp` on this machine.
    fn is_own_url(&self, url: &str) -> bool {
        let Some(rest) = url
            .get(.."http://".len())
            .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
            .map(|_| &url["http://".len()..])
        else {
            return false;
        };
        let (authority, path) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
        let Some((host, port)) = authority.rsplit_once(':') else {
            return false;
        };
        let loopback = ["127.0.0.1", "localhost", "[::1]"]
            .iter()
            .any(|name| host.eq_ignore_ascii_case(name));
        let path = path.split(['?', '#']).next().unwrap_or_default();
        loopback
            && port.parse::<u16>().ok() == Some(self.port)
            && path.trim_end_matches('/') == transport::http::MCP_PATH
    }
}

/// The first `${…}` reference in `text` (an unterminated `${` runs to the end), leaving out
/// `${env:NAME}` when `env_allowed`.
fn reference(text: &str, env_allowed: bool) -> Option<&str> {
    let mut from = 0;
    while let Some(start) = text[from..].find("${").map(|start| from + start) {
        let Some(length) = text[start..].find('}') else {
            return Some(&text[start..]);
        };
        let end = start + length + 1;
        let inner = &text[start + 2..end - 1];
        let is_env = inner
            .strip_prefix("env:")
            .is_some_and(|name| !name.is_empty());
        if !(env_allowed && is_env) {
            return Some(&text[start..end]);
        }
        from = end;
    }
    None
}

/// The text a JSON config starts from when there is none.
const EMPTY_JSON_CONFIG: &str = "{\n  \"mcpServers\": {}\n}\n";

/// Our config before the import.
struct Target {
    path: PathBuf,
    format: Format,
    exists: bool,
    /// As read; the default config's text if there is no file yet.
    text: String,
    diagnostics: Vec<Diagnostic>,
    /// The port of the endpoint the config sets.
    port: u16,
    servers: Vec<Existing>,
}

impl Target {
    fn read(path: &Path, exe: &Path) -> Result<Target, EditorError> {
        let format = Format::of(path);
        let exists = path.exists();
        let (config, text) = if exists {
            // Loaded first: that refuses a file that is not UTF-8, with its position.
            let config = config::load(path)?;
            let text = std::fs::read_to_string(path).map_err(|source| EditorError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            (config, text)
        } else {
            let text = match format {
                Format::Toml => config::default_config_text(exe),
                Format::Json => EMPTY_JSON_CONFIG.to_owned(),
            };
            (config::parse(path, &text)?, text)
        };
        let mut target = Target {
            path: path.to_path_buf(),
            format,
            exists,
            text,
            diagnostics: config.diagnostics,
            port: config.endpoint.listen.port(),
            servers: Vec::new(),
        };
        target.servers = match format {
            Format::Toml => target.toml_servers()?,
            Format::Json => target.json_file()?.1,
        };
        Ok(target)
    }

    fn toml_servers(&self) -> Result<Vec<Existing>, EditorError> {
        let document = self.toml_document()?;
        let servers = match document.get("servers") {
            None => return Ok(Vec::new()),
            Some(Item::Table(servers)) => servers,
            Some(_) => {
                return Err(EditorError::Unsupported {
                    path: self.path.clone(),
                    reason: "`servers` is written inline; to import, write each server as its \
                             own [servers.NAME] section"
                        .to_owned(),
                });
            }
        };
        Ok(servers
            .iter()
            .map(|(name, server)| Existing {
                name: name.to_owned(),
                command: server
                    .get("command")
                    .and_then(Item::as_str)
                    .map(str::to_owned),
                args: server
                    .get("args")
                    .and_then(Item::as_array)
                    .map(|args| {
                        args.iter()
                            .filter_map(|arg| arg.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect())
    }

    fn toml_document(&self) -> Result<DocumentMut, EditorError> {
        self.text
            .parse()
            .map_err(|error: toml_edit::TomlError| EditorError::Invalid {
                path: self.path.clone(),
                position: None,
                message: error.message().to_owned(),
            })
    }

    /// The JSON config as a tree, with the servers it has.
    fn json_file(&self) -> Result<(JsonFile, Vec<Existing>), EditorError> {
        let file = JsonFile::from_text(&self.path, self.text.clone())?;
        let servers = match file.servers(self.format.servers_key())? {
            Some(servers) => files::properties(&servers),
            None => Vec::new(),
        };
        let existing = servers
            .into_iter()
            .map(|(name, server)| Existing {
                command: server["command"].as_str().map(str::to_owned),
                args: server["args"]
                    .as_array()
                    .map(|args| {
                        args.iter()
                            .filter_map(|arg| arg.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
                name,
            })
            .collect();
        Ok((file, existing))
    }

    /// The config's text with `servers` added.
    fn with_servers(
        &self,
        servers: &[(String, Server)],
        report: &ImportReport,
    ) -> Result<String, EditorError> {
        match self.format {
            Format::Toml => Ok(self.toml_with(servers, report)),
            Format::Json => {
                let (file, _) = self.json_file()?;
                let object = file.servers_or_create(self.format.servers_key())?;
                for (name, server) in servers {
                    let mut entry = json!({ "command": server.command });
                    if !server.args.is_empty() {
                        entry["args"] = json!(server.args);
                    }
                    if !server.env.is_empty() {
                        entry["env"] = json!(server.env);
                    }
                    if let Some(cwd) = &server.cwd {
                        entry["cwd"] = json!(cwd);
                    }
                    if let Some(sandbox) = &server.sandbox {
                        entry["sandbox"] = sandbox.to_json();
                    }
                    object.append(name, files::cst_value(&entry));
                }
                Ok(file.current_text())
            }
        }
    }

    /// The TOML text with a `[servers.NAME]` table per server appended, each under a comment
    /// that says where it came from, in the file's own line ends.
    fn toml_with(&self, servers: &[(String, Server)], report: &ImportReport) -> String {
        let origin = format!(
            "# Imported from {} ({:?}).\n",
            report.editor.title(),
            report.source.display().to_string()
        );
        let mut tables = Table::new();
        tables.set_implicit(true);
        for (name, server) in servers {
            let mut table = Table::new();
            table.decor_mut().set_prefix(format!("\n{origin}"));
            table.insert("command", toml_edit::value(&server.command));
            if !server.args.is_empty() {
                table.insert(
                    "args",
                    toml_edit::value(server.args.iter().collect::<Array>()),
                );
            }
            if !server.env.is_empty() {
                let env: InlineTable = server
                    .env
                    .iter()
                    .map(|(name, value)| (name.as_str(), toml_edit::Value::from(value)))
                    .collect();
                table.insert("env", toml_edit::value(env));
            }
            if let Some(cwd) = &server.cwd {
                table.insert("cwd", toml_edit::value(cwd));
            }
            if let Some(sandbox) = &server.sandbox {
                table.insert("sandbox", Item::Table(sandbox.to_table()));
            }
            tables.insert(name, Item::Table(table));
        }
        let mut document = DocumentMut::new();
        document.insert("servers", Item::Table(tables));
        let addition = document.to_string();

        let crlf = self.text.contains("\r\n");
        let mut text = self.text.clone();
        let addition = if text.is_empty() {
            addition.trim_start_matches('\n')
        } else {
            if !text.ends_with('\n') {
                text.push_str(if crlf { "\r\n" } else { "\n" });
            }
            &addition
        };
        for line in addition.split_inclusive('\n') {
            match line.strip_suffix('\n') {
                Some(line) if crlf => {
                    text.push_str(line);
                    text.push_str("\r\n");
                }
                _ => text.push_str(line),
            }
        }
        text
    }
}

mod secrets;
#[cfg(test)]
mod tests;
