//! `switchboard move` and the dashboard's "Move" buttons: an editor's servers imported into our
//! config, the editor pointed at Switchboard, and the moved entries (and those that run exactly
//! what a server of Switchboard runs) taken out of the editor's file, in one atomic replacement
//! after one backup. An entry that differs from every server Switchboard has in anything it runs
//! (its environment, say) is moved as a server of its own; one that cannot be moved stays in the
//! editor's file, with the reason: nothing is left only in the backup. A record of each move lets [`undo_move`] put the editor's file back and
//! take out of our config the servers the move added, if nobody changed them since.
//!
//! Moves hold a lock file beside their records, so two at once (two editors, or the dashboard
//! and the command line) run one after the other over our config.

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::editor_file::{EditorFile, FileFormat};
use super::files;
use super::import::{self, ImportAction, ImportRequest, SkipReason};
use super::{Destination, ENTRY_NAME, Editor, EditorError};
use config::Format;

/// Which editor to move over, and how.
#[derive(Debug, Clone, Copy)]
pub struct MoveRequest<'a> {
    pub editor: Editor,
    /// The editor's file; its usual place when `None`.
    pub from: Option<&'a Path>,
    /// Our config, which gets the servers.
    pub config_path: &'a Path,
    /// The `switchboard` binary (see [`ImportRequest::exe`]).
    pub exe: &'a Path,
    /// What the editor is pointed at.
    pub destination: &'a Destination,
    /// Only report what would change; write nothing.
    pub dry_run: bool,
    /// Leave the moved entries in the editor's file.
    pub keep_originals: bool,
    /// Keep secrets written out in the editor's `env` in the keychain instead.
    pub move_secrets: bool,
    /// Give each server moved a first sandbox (see [`ImportRequest::sandbox`]).
    pub sandbox: bool,
    /// Only take out the entries Switchboard runs already: import nothing, and leave the
    /// editor's entry for Switchboard as it is.
    pub only_duplicates: bool,
    /// The folder of the records that undo moves (and of their lock).
    pub records: &'a Path,
    /// The fingerprint of the editor's file that a preview showed: the move is refused if the
    /// file changed since.
    pub expect: Option<&'a str>,
}

/// What became of one entry of the editor's file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Fate {
    /// Imported as `server`, and taken out of the editor's file unless asked to keep it.
    Moved {
        server: String,
        /// The name it would have had, when a server that runs something else has it.
        #[serde(skip_serializing_if = "Option::is_none")]
        taken: Option<String>,
        notes: Vec<String>,
    },
    /// Switchboard runs exactly the same already (command, arguments, environment and folder, or
    /// URL and headers), as `server`: a duplicate, taken out likewise.
    Duplicate { server: String },
    /// Stays in the editor's file, for this reason.
    Stays { reason: String },
    /// The entry that points the editor at Switchboard.
    Switchboard,
}

/// One entry of the editor's file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MovedEntry {
    pub name: String,
    #[serde(flatten)]
    pub fate: Fate,
    /// Whether it leaves the editor's file.
    pub(crate) taken_out: bool,
}

/// What a move does to the entry that points the editor at Switchboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryChange {
    Added,
    /// It pointed elsewhere (another binary, port or token).
    Updated,
    /// It was there as it should be.
    Unchanged,
}

/// What a move did (or, in a dry run, would do).
#[derive(Debug, Clone, Serialize)]
pub struct MoveReport {
    #[serde(serialize_with = "crate::serialize_client_id")]
    pub(crate) editor: Editor,
    /// The editor's file.
    pub path: PathBuf,
    pub(crate) config_path: PathBuf,
    pub(crate) dry_run: bool,
    /// Only duplicates were (or would be) taken out.
    pub(crate) only_duplicates: bool,
    pub entries: Vec<MovedEntry>,
    /// What becomes of the entry that points the editor at Switchboard.
    pub(crate) switchboard: EntryChange,
    /// SHA-256 of the editor's file as read, for a move that must find it unchanged.
    pub(crate) fingerprint: String,
    /// The changes to the editor's file and to our config, as unified diffs.
    pub(crate) editor_diff: String,
    pub(crate) config_diff: String,
    /// The copy of the editor's file as it was.
    pub(crate) backup: Option<PathBuf>,
    /// The secrets moved to the keychain, which the backup names instead of holding.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) secrets_in_backup: Vec<String>,
    /// Why the move cannot be undone, if its record could not be written.
    pub(crate) record_problem: Option<String>,
}

/// What [`undo_move`] needs.
#[derive(Debug, Clone, Copy)]
pub struct UndoRequest<'a> {
    pub editor: Editor,
    pub config_path: &'a Path,
    pub records: &'a Path,
    /// Put the old file back even though it changed since the move.
    pub force: bool,
}

/// What an undo did.
#[derive(Debug, Clone, Serialize)]
pub struct UndoReport {
    #[serde(serialize_with = "crate::serialize_client_id")]
    pub(crate) editor: Editor,
    pub(crate) path: PathBuf,
    pub(crate) config_path: PathBuf,
    /// Servers taken out of our config.
    pub(crate) removed: Vec<String>,
    /// Servers the move added that were changed since, and so stay.
    pub(crate) kept: Vec<String>,
}

/// What undoes a move: kept as `<records>/<editor>.json`.
#[derive(Serialize, Deserialize)]
struct Record {
    path: PathBuf,
    /// The copy of the file before the move; `None` when the move created the file.
    backup: Option<PathBuf>,
    /// SHA-256 of the file the move wrote.
    written: String,
    config_path: PathBuf,
    /// The servers added to our config, as they were written.
    added: Vec<(String, Value)>,
    /// Our config's text before the move (`None`: the move created it), and the SHA-256 of
    /// what the move wrote: unchanged since, it goes back byte for byte.
    config_before: Option<String>,
    config_written: Option<String>,
    /// The secrets the move kept in the keychain: the backup has `${secret:NAME}` where the
    /// file had each one's value, and an undo puts the value back from the keychain.
    #[serde(default)]
    secrets: Vec<String>,
}

/// The editor's file as its backup keeps it, with the values of `secrets` put back from the
/// keychain where the backup names them.
fn backed_up_file(
    backup: &Path,
    editor: Editor,
    secrets: &[String],
) -> Result<Vec<u8>, EditorError> {
    let gone = || EditorError::Unsupported {
        path: backup.to_path_buf(),
        reason: "the backup of the editor's file is gone; nothing was changed".to_owned(),
    };
    if secrets.is_empty() {
        return files::read_if_exists(backup)?.ok_or_else(gone);
    }
    let file = EditorFile::read(backup, editor.format())?.ok_or_else(gone)?;
    let mut text = file.text().to_owned();
    for name in secrets {
        let value = platform::secrets::Keychain::secrets()
            .get(name)?
            .ok_or_else(|| EditorError::Unsupported {
                path: backup.to_path_buf(),
                reason: format!(
                    "the keychain no longer has {name}, whose value the backup names; nothing \
                     was changed"
                ),
            })?;
        text = text.replace(&format!("${{secret:{name}}}"), &json_escaped(&value));
    }
    Ok(file.encode(&text))
}

/// `text` with each moved secret's value (as a JSON string writes it) named `${secret:NAME}`.
fn with_references(text: &str, moved: &[(&str, &str)]) -> String {
    let mut text = text.to_owned();
    for (name, value) in moved {
        text = text.replace(&json_escaped(value), &format!("${{secret:{name}}}"));
    }
    text
}

/// A value as a JSON string writes it, without its quotes.
fn json_escaped(value: &str) -> String {
    let quoted = serde_json::to_string(value).expect("a string serializes");
    quoted[1..quoted.len() - 1].to_owned()
}

/// The values of the editor's entries' `env` and `headers` (and their kin), which a preview
/// does not show.
fn entry_values(entries: &[(String, Value)]) -> Vec<String> {
    let mut values: Vec<String> = entries
        .iter()
        .flat_map(|(_, entry)| {
            ["env", "headers", "http_headers"]
                .iter()
                .filter_map(|key| entry.get(*key)?.as_object())
                .flat_map(|object| object.values().filter_map(Value::as_str))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|value| value.len() >= 4)
        .collect();
    values.sort_by_key(|value| std::cmp::Reverse(value.len()));
    values
}

/// `diff` with every one of `values` masked.
fn masked(diff: &str, values: &[String]) -> String {
    let mut diff = diff.to_owned();
    for value in values {
        for form in [value.clone(), json_escaped(value)] {
            if diff.contains(&form) {
                diff = diff.replace(&form, config::MASKED);
            }
        }
    }
    diff
}

/// Moves the editor's local servers over (see the module's documentation).
pub fn move_editor(request: MoveRequest<'_>) -> Result<MoveReport, EditorError> {
    // A dry run writes nothing, not even the lock.
    let _lock = match request.dry_run {
        true => None,
        false => Some(lock(request.records)?),
    };
    let editor = request.editor;
    let path = editor.file(request.from)?;
    let mut file =
        EditorFile::read(&path, editor.format())?.ok_or_else(|| EditorError::NotFound {
            editor,
            path: path.clone(),
        })?;
    let original = file.original().unwrap_or_default().to_vec();
    let fingerprint = digest(&original);
    if request.expect.is_some_and(|expect| expect != fingerprint) {
        return Err(changed_since(&path, "the preview"));
    }
    let mut plan = import::plan(ImportRequest {
        editor,
        from: Some(&path),
        config_path: request.config_path,
        exe: request.exe,
        dry_run: request.dry_run,
        move_secrets: request.move_secrets,
        sandbox: request.sandbox,
    })?;

    if request.only_duplicates {
        plan.merged = None;
        plan.report.diff.clear();
    }
    let key = editor.servers_key();
    let entry = editor.switchboard_entry(request.destination);
    let existing = file.entries(key)?;
    let already = existing.iter().any(|(_, value)| *value == entry);
    let mut entries = Vec::with_capacity(plan.report.servers.len());
    for server in &plan.report.servers {
        let fate = match &server.action {
            ImportAction::Added {
                server: name,
                taken,
                notes,
            } => Fate::Moved {
                server: name.clone(),
                taken: taken.clone(),
                notes: notes.clone(),
            },
            // With only duplicates taken out, a copy of an entry of this file that is not moved
            // leaves too: its twin stays in the file.
            ImportAction::Duplicate { server: name } => Fate::Duplicate {
                server: name.clone(),
            },
            ImportAction::Skipped {
                reason: SkipReason::PointsAtSwitchboard,
            } if server.name == ENTRY_NAME => Fate::Switchboard,
            ImportAction::Skipped { reason } => Fate::Stays {
                reason: reason.to_string(),
            },
        };
        let taken_out = match &fate {
            Fate::Moved { .. } => !request.keep_originals && !request.only_duplicates,
            Fate::Duplicate { .. } => !request.keep_originals,
            Fate::Stays { .. } | Fate::Switchboard => false,
        };
        entries.push(MovedEntry {
            name: server.name.clone(),
            fate,
            taken_out,
        });
    }
    for entry in entries.iter().filter(|entry| entry.taken_out) {
        file.remove_entry(key, &entry.name)?;
    }
    let switchboard = match already || request.only_duplicates {
        true => EntryChange::Unchanged,
        false => match file.set_entry(key, ENTRY_NAME, &entry)? {
            true => EntryChange::Updated,
            false => EntryChange::Added,
        },
    };
    let text = file.current_text();
    // The values of the editor's entries never show in a preview: they may be secrets.
    let hidden = entry_values(&existing);
    let mut report = MoveReport {
        editor,
        path: path.clone(),
        config_path: request.config_path.to_path_buf(),
        dry_run: request.dry_run,
        only_duplicates: request.only_duplicates,
        entries,
        switchboard,
        fingerprint,
        editor_diff: masked(
            &files::diff(&path.display().to_string(), file.text(), &text),
            &hidden,
        ),
        config_diff: masked(&plan.report.diff, &hidden),
        backup: None,
        secrets_in_backup: Vec::new(),
        record_problem: None,
    };
    if request.dry_run || (report.editor_diff.is_empty() && plan.merged.is_none()) {
        return Ok(report);
    }

    let write_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| EditorError::Write { path, source }
    };
    // The backup first: without it, nothing is written. Secrets moved to the keychain are not
    // left in it: it names them instead, as the config does.
    let moved: Vec<(&str, &str)> = plan.moved_secrets().collect();
    let backed_up = match moved.is_empty() {
        true => original.clone(),
        false => file.encode(&with_references(file.text(), &moved)),
    };
    let backup = files::back_up(&path, &backed_up).map_err(write_error(&path))?;
    report.secrets_in_backup = moved.iter().map(|(name, _)| (*name).to_owned()).collect();
    report.backup = Some(backup.clone());
    plan.commit()?;
    let bytes = file.encode(&text);
    let written = (|| {
        // Whatever changed the editor's file meanwhile is not overwritten.
        if files::read_if_exists(&path)?.as_deref() != Some(original.as_slice()) {
            return Err(changed_since(&path, "this move read it"));
        }
        platform::atomic::write_keeping_permissions(&path, &bytes).map_err(write_error(&path))
    })();
    if let Err(error) = written {
        if plan.merged.is_some() {
            // Our config goes back to what it was: nothing is half done.
            restore_config(
                request.config_path,
                &plan.before,
                plan.report.config_created,
            )?;
        }
        return Err(error);
    }
    let added: Vec<String> = report
        .entries
        .iter()
        .filter_map(|entry| match &entry.fate {
            Fate::Moved { server, .. } if !request.only_duplicates => Some(server.clone()),
            _ => None,
        })
        .collect();
    let record = Record {
        path,
        backup: Some(backup),
        written: digest(&bytes),
        config_path: request.config_path.to_path_buf(),
        added: our_entries(request.config_path)?
            .into_iter()
            .filter(|(name, _)| added.contains(name))
            .collect(),
        config_before: (!plan.report.config_created).then(|| plan.before.clone()),
        config_written: plan
            .merged
            .as_deref()
            .map(|merged| digest(merged.as_bytes())),
        secrets: moved.iter().map(|(name, _)| (*name).to_owned()).collect(),
    };
    let record_path = record_path(request.records, editor);
    let text = serde_json::to_vec_pretty(&record).expect("records serialize");
    if let Err(error) = platform::atomic::write_private(&record_path, &text) {
        report.record_problem = Some(format!(
            "cannot keep the record that undoes this move ({}: {error}); the backup {} has the \
             file as it was",
            record_path.display(),
            report.backup.as_ref().expect("made above").display()
        ));
    }
    Ok(report)
}

/// Puts the editor's file back as it was before its last move, and takes the servers that move
/// added out of our config unless they changed since.
pub fn undo_move(request: UndoRequest<'_>) -> Result<UndoReport, EditorError> {
    let _lock = lock(request.records)?;
    let editor = request.editor;
    let record_path = record_path(request.records, editor);
    let record: Record = match files::read_if_exists(&record_path)? {
        None => return Err(EditorError::NothingToUndo { editor }),
        Some(bytes) => serde_json::from_slice(&bytes).map_err(|error| EditorError::Invalid {
            path: record_path.clone(),
            position: None,
            message: format!("not a record of a move: {error}"),
        })?,
    };
    let now = files::read_if_exists(&record.path)?.unwrap_or_default();
    if digest(&now) != record.written && !request.force {
        return Err(EditorError::ChangedSinceMove {
            path: record.path.clone(),
        });
    }
    let before = match &record.backup {
        Some(backup) => Some(backed_up_file(backup, editor, &record.secrets)?),
        None => None,
    };

    let format = match Format::of(request.config_path) {
        Format::Toml => FileFormat::Toml,
        Format::Json => FileFormat::Json,
    };
    let key = Format::of(request.config_path).servers_key();
    let mut config =
        EditorFile::read(request.config_path, format)?.ok_or_else(|| EditorError::NotFound {
            editor,
            path: request.config_path.to_path_buf(),
        })?;
    let current = config.entries(key)?;
    let (mut removed, mut kept) = (Vec::new(), Vec::new());
    let config_before = config.original().unwrap_or_default().to_vec();
    let untouched = record.config_written.as_deref() == Some(&digest(&config_before));
    for (name, value) in &record.added {
        match current.iter().find(|(now, _)| now == name) {
            Some((_, now)) if now == value => {
                config.remove_entry(key, name)?;
                removed.push(name.clone());
            }
            Some(_) => kept.push(name.clone()),
            None => {}
        }
    }
    let config_error = |source| EditorError::Write {
        path: request.config_path.to_path_buf(),
        source,
    };
    match (untouched, &record.config_before) {
        // Nobody changed our config since: it goes back as it was, byte for byte.
        (true, Some(before)) => {
            platform::atomic::write_keeping_permissions(request.config_path, before.as_bytes())
                .map_err(config_error)?;
        }
        _ if !removed.is_empty() => {
            let text = config.current_text();
            platform::atomic::write_keeping_permissions(request.config_path, &config.encode(&text))
                .map_err(config_error)?;
        }
        _ => {}
    }
    let restored = match &before {
        Some(bytes) => platform::atomic::write_keeping_permissions(&record.path, bytes),
        None => std::fs::remove_file(&record.path),
    };
    if let Err(source) = restored {
        if !removed.is_empty() {
            platform::atomic::write_keeping_permissions(request.config_path, &config_before)
                .map_err(config_error)?;
        }
        return Err(EditorError::Write {
            path: record.path.clone(),
            source,
        });
    }
    // A record left behind would undo a move that is undone already: say so, but it is done.
    if let Err(error) = std::fs::remove_file(&record_path) {
        tracing::warn!(%error, path = %record_path.display(), "cannot remove the move's record");
    }
    Ok(UndoReport {
        editor,
        path: record.path,
        config_path: request.config_path.to_path_buf(),
        removed,
        kept,
    })
}

/// Whether `editor` has a move that can be undone.
pub fn can_undo(records: &Path, editor: Editor) -> bool {
    record_path(records, editor).exists()
}

fn record_path(records: &Path, editor: Editor) -> PathBuf {
    records.join(format!("{}.json", editor.client_id()))
}

/// Waits for any other move to end; held until dropped.
fn lock(records: &Path) -> Result<File, EditorError> {
    let path = records.join("lock");
    let io_error = |source| EditorError::Write {
        path: path.clone(),
        source,
    };
    platform::dirs::create_private_dir(records).map_err(io_error)?;
    let file = platform::files::private_options(&mut std::fs::OpenOptions::new())
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io_error)?;
    // One made by an earlier version was open to others.
    if platform::files::open_to_others(&path).map_err(io_error)? {
        platform::files::restrict_to_owner(&path).map_err(io_error)?;
    }
    file.lock().map_err(io_error)?;
    Ok(file)
}

/// Our config's server entries as plain JSON.
fn our_entries(config_path: &Path) -> Result<Vec<(String, Value)>, EditorError> {
    let format = match Format::of(config_path) {
        Format::Toml => FileFormat::Toml,
        Format::Json => FileFormat::Json,
    };
    match EditorFile::read(config_path, format)? {
        Some(file) => file.entries(Format::of(config_path).servers_key()),
        None => Ok(Vec::new()),
    }
}

/// Writes our config back as it was before a move that could not finish.
fn restore_config(path: &Path, text: &str, created: bool) -> Result<(), EditorError> {
    let restored = match created {
        true => std::fs::remove_file(path),
        false => platform::atomic::write_keeping_permissions(path, text.as_bytes()),
    };
    restored.map_err(|source| EditorError::Write {
        path: path.to_path_buf(),
        source,
    })
}

fn changed_since(path: &Path, since: &str) -> EditorError {
    EditorError::Unsupported {
        path: path.to_path_buf(),
        reason: format!(
            "the file changed since {since}; nothing was written. Look at the change again and \
             move once more"
        ),
    }
}

fn digest(bytes: &[u8]) -> String {
    platform::hex::encode(&Sha256::digest(bytes))
}

impl fmt::Display for MoveReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let title = self.editor.title();
        if self.dry_run {
            writeln!(f, "Dry run: nothing is written.")?;
        }
        writeln!(
            f,
            "{title} ({}) to Switchboard ({}):",
            self.path.display(),
            self.config_path.display()
        )?;
        if self.entries.is_empty() {
            writeln!(f, "  (the file lists no servers)")?;
        }
        for entry in &self.entries {
            let out = match (entry.taken_out, self.dry_run) {
                (true, true) => ", would be taken out of the editor's file",
                (true, false) => ", taken out of the editor's file",
                (false, _) => "",
            };
            match &entry.fate {
                Fate::Moved { .. } if self.only_duplicates => {
                    writeln!(f, "  {}: stays (only duplicates are taken out)", entry.name)?;
                }
                Fate::Moved {
                    server,
                    taken,
                    notes,
                } => {
                    write!(f, "  {}: moved", entry.name)?;
                    if let Some(why) = import::renamed(&entry.name, server, taken.as_deref()) {
                        write!(f, " as `{server}` ({why})")?;
                    }
                    f.write_str(out)?;
                    for note in notes {
                        write!(f, "; {note}")?;
                    }
                    writeln!(f)?;
                }
                Fate::Duplicate { server } => writeln!(
                    f,
                    "  {}: Switchboard runs exactly the same already as `{server}`{out}",
                    entry.name
                )?,
                Fate::Stays { reason } => writeln!(f, "  {}: stays: {reason}", entry.name)?,
                Fate::Switchboard => {}
            }
        }
        let (added, updated) = match self.dry_run {
            true => ("would be added", "would be updated"),
            false => ("added", "updated"),
        };
        match self.switchboard {
            EntryChange::Added => writeln!(f, "  {ENTRY_NAME}: {added}, pointing at Switchboard")?,
            EntryChange::Updated => {
                writeln!(f, "  {ENTRY_NAME}: {updated} to point at this Switchboard")?
            }
            EntryChange::Unchanged => writeln!(f, "  {ENTRY_NAME}: points at Switchboard already")?,
        }
        if self.dry_run {
            if !self.editor_diff.is_empty() {
                write!(
                    f,
                    "{title}'s file would change like this:\n{}",
                    self.editor_diff
                )?;
            }
            if !self.config_diff.is_empty() {
                write!(
                    f,
                    "Switchboard's config would change like this:\n{}",
                    self.config_diff
                )?;
            }
            if self.editor_diff.is_empty() && self.config_diff.is_empty() {
                writeln!(f, "Nothing to change.")?;
            } else {
                writeln!(
                    f,
                    "To make exactly this change (refused if {title}'s file changes meanwhile): \
                     switchboard move {} --expect {}",
                    self.editor.cli_name(),
                    self.fingerprint
                )?;
            }
            return Ok(());
        }
        match &self.backup {
            Some(backup) => {
                writeln!(f, "The file as it was is in {}.", backup.display())?;
                if !self.secrets_in_backup.is_empty() {
                    writeln!(
                        f,
                        "It names the secrets moved to the keychain ({}) instead of holding their \
                         values; an undo puts the values back from the keychain.",
                        self.secrets_in_backup.join(", ")
                    )?;
                }
                match &self.record_problem {
                    Some(problem) => writeln!(f, "{problem}.")?,
                    None => writeln!(
                        f,
                        "`switchboard move {} --undo` puts it back.",
                        self.editor.cli_name()
                    )?,
                }
                writeln!(
                    f,
                    "Restart {title} (or reload its MCP servers) to connect it to Switchboard."
                )
            }
            None => writeln!(f, "Nothing to change."),
        }
    }
}

impl fmt::Display for UndoReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} ({}) is back as it was before the move.",
            self.editor.title(),
            self.path.display()
        )?;
        if !self.removed.is_empty() {
            writeln!(
                f,
                "Taken out of {}: {}.",
                self.config_path.display(),
                self.removed.join(", ")
            )?;
        }
        if !self.kept.is_empty() {
            writeln!(
                f,
                "Kept in {}, changed since the move: {}.",
                self.config_path.display(),
                self.kept.join(", ")
            )?;
        }
        writeln!(
            f,
            "Restart {} to use its own servers again.",
            self.editor.title()
        )
    }
}
