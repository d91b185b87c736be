//! `switchboard import`: the servers of an editor's config, added to ours: local ones (a
//! command line) and remote ones (a URL with its headers; Switchboard signs in with OAuth when
//! the server asks).
//!
//! Our TOML config only grows at its end: the new `[servers.NAME]` tables are rendered with
//! `toml_edit` and appended, so every byte before them (comments, blank lines, CRLF line ends)
//! stays as it was. (`toml_edit` inserting into the document itself would move the new tables
//! between existing ones and turn CRLF into LF.) A JSON config (Claude Desktop's shape) gets its
//! new entries added to `mcpServers` in place, comments and formatting kept.
//!
//! Nothing is ever imported twice or over something that exists. An entry is a duplicate only
//! when it runs exactly what a server of our config runs (see [`run`]): the same command,
//! arguments, environment and folder, or the same URL and headers, values compared as they would
//! be given. One that differs in anything is added as a server of its own, under a name our
//! config does not have yet (compared ignoring case, as the config does). An entry that runs
//! Switchboard itself is left out, since Switchboard would start itself.

pub use in_use::{InUse, in_use};

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};
use serde_json::Value;
use toml_edit::{DocumentMut, Item, Table};

use super::editor_file::{self, EditorFile};
use super::files::{self, JsonFile};
use super::{Editor, EditorError};
use config::{Diagnostic, Format, MAX_SERVER_NAME_LEN};
use entry::{EntryReader, Server};
use run::Run;

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

/// What an import did (or, in a dry run, would do), server by server. Serialized, it is what
/// `switchboard import --json` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    #[serde(serialize_with = "crate::serialize_client_id")]
    pub(crate) editor: Editor,
    /// The editor's file that was read.
    pub(crate) source: PathBuf,
    #[serde(rename = "config")]
    pub(crate) config_path: PathBuf,
    pub(crate) dry_run: bool,
    /// Whether our config is (or would be) created from the default config.
    pub(crate) config_created: bool,
    /// One per server of the editor's file, in file order.
    #[serde(rename = "entries")]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerImport {
    /// Its name in the editor's file.
    pub(crate) name: String,
    #[serde(flatten)]
    pub(crate) action: ImportAction,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ImportAction {
    Added {
        /// Its name in our config: the editor's, made a valid server name if it was not one, or
        /// another when that name is taken.
        server: String,
        /// The name it would have had, when a server of our config that runs something else
        /// has it.
        #[serde(skip_serializing_if = "Option::is_none")]
        taken: Option<String>,
        /// What else to know: fields left out, problems `switchboard check` will report.
        notes: Vec<String>,
    },
    /// A server of our config (named here) runs exactly what the entry runs.
    Duplicate {
        server: String,
    },
    Skipped {
        reason: SkipReason,
    },
}

/// Why a server of the editor's file is not imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// It runs `switchboard connect` or points at our `/mcp`: Switchboard would start itself.
    PointsAtSwitchboard,
    /// Our config cannot say what the entry says (why is the text).
    Unsupported(String),
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::PointsAtSwitchboard => f.write_str(
                "it points at Switchboard itself (imported, Switchboard would start itself)",
            ),
            SkipReason::Unsupported(why) => f.write_str(why),
        }
    }
}

/// A reason is written as its sentence.
impl Serialize for SkipReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
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
                ImportAction::Added {
                    server: name,
                    taken,
                    notes,
                } => {
                    write!(f, "  {}: {added}", server.name)?;
                    if let Some(why) = renamed(&server.name, name, taken.as_deref()) {
                        write!(f, " as `{name}` ({why})")?;
                    }
                    for note in notes {
                        write!(f, "; {note}")?;
                    }
                    writeln!(f)?;
                }
                ImportAction::Duplicate { server: name } => writeln!(
                    f,
                    "  {}: {skipped}: `{name}` runs exactly the same already",
                    server.name
                )?,
                ImportAction::Skipped { reason } => {
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

/// Why an entry named `entry` in the editor's file is `server` in our config, if it is named
/// otherwise; `taken` is the name a server that runs something else has already.
pub(crate) fn renamed(entry: &str, server: &str, taken: Option<&str>) -> Option<String> {
    match taken {
        Some(taken) => Some(format!(
            "`{taken}` is the name of a server that runs something else"
        )),
        None if entry != server => {
            Some("server names use only letters, digits, `_` and `-`".to_owned())
        }
        None => None,
    }
}

/// Reads the editor's file and adds each of its servers that our config lacks.
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
    let (servers, mut added) = sort_out(&reader, entries, target.servers.clone());
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
        if let ImportAction::Added {
            server: name,
            notes,
            ..
        } = &mut server.action
        {
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

/// What becomes of each entry, in order, given the servers our config has (`taken`); and the
/// servers to add, with their names in our config.
fn sort_out(
    reader: &EntryReader<'_>,
    entries: Vec<(String, Value)>,
    mut taken: Vec<Existing>,
) -> (Vec<ServerImport>, Vec<(String, Server)>) {
    let mut added = Vec::new();
    let mut outcomes = Vec::with_capacity(entries.len());
    for (name, value) in entries {
        let server = match reader.read(&value) {
            // The entry Switchboard writes, pointing at an endpoint it had before (another
            // port, say): never a server of its own.
            Ok(Server {
                run: Run::Remote { .. },
                ..
            }) if name == crate::ENTRY_NAME => {
                outcomes.push(ServerImport {
                    name,
                    action: ImportAction::Skipped {
                        reason: SkipReason::PointsAtSwitchboard,
                    },
                });
                continue;
            }
            Ok(server) => server,
            Err(reason) => {
                outcomes.push(ServerImport {
                    name,
                    action: ImportAction::Skipped { reason },
                });
                continue;
            }
        };
        let same = taken.iter().find(|existing| {
            existing
                .run
                .as_ref()
                .is_some_and(|run| run.same_as(&server.run))
        });
        if let Some(same) = same {
            outcomes.push(ServerImport {
                name,
                action: ImportAction::Duplicate {
                    server: same.name.clone(),
                },
            });
            continue;
        }
        let wanted = server_name(&name);
        let our_name = free_name(&wanted, reader.editor, &taken);
        taken.push(Existing {
            name: our_name.clone(),
            run: Some(server.run.clone()),
        });
        let notes = server.notes.clone();
        added.push((our_name.clone(), server));
        outcomes.push(ServerImport {
            name,
            action: ImportAction::Added {
                taken: (our_name != wanted).then_some(wanted),
                server: our_name,
                notes,
            },
        });
    }
    (outcomes, added)
}

/// `wanted`, or when a server has that name (ignoring case, as the config does), the first of
/// `wanted-EDITOR`, `wanted-EDITOR-2`… that none has.
fn free_name(wanted: &str, editor: Editor, taken: &[Existing]) -> String {
    let is_free = |name: &str| {
        !taken
            .iter()
            .any(|existing| existing.name.eq_ignore_ascii_case(name))
    };
    if is_free(wanted) {
        return wanted.to_owned();
    }
    (1u32..)
        .map(|n| {
            let suffix = match n {
                1 => format!("-{}", editor.cli_name()),
                n => format!("-{}-{n}", editor.cli_name()),
            };
            let stem: String = wanted
                .chars()
                .take(MAX_SERVER_NAME_LEN.saturating_sub(suffix.len()))
                .collect();
            format!("{stem}{suffix}")
        })
        .find(|name| is_free(name))
        .expect("some number is free")
}

/// A server of our config, as far as duplicates go.
#[derive(Debug, Clone)]
struct Existing {
    name: String,
    /// `None` for an entry that is neither a local nor a remote server.
    run: Option<Run>,
}

impl Existing {
    fn of(name: String, entry: &Value) -> Existing {
        Existing {
            run: Run::of_ours(entry),
            name,
        }
    }
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
            .map(|(name, server)| Existing::of(name.to_owned(), &editor_file::item_json(server)))
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
            .map(|(name, server)| Existing::of(name, &server))
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
                    let mut entry = server.our_entry();
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
            let Value::Object(fields) = server.our_entry() else {
                unreachable!("an entry is an object")
            };
            for (key, value) in &fields {
                table.insert(key, toml_edit::value(editor_file::toml_value(value)));
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

mod entry;
mod in_use;
mod run;
mod secrets;
#[cfg(test)]
mod tests;
