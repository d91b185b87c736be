//! What a config file's bytes would do if applied now: applied, with the servers and profiles
//! in error left out ([`Verdict::Applies`]); refused, so that the last valid config keeps running
//! ([`Verdict::Refused`]); or not a config at all yet ([`Verdict::Unread`]). The reloader acts
//! on it, and the control API asks it before it writes the file.
//!
//! An error inside one server or one profile leaves only that one out, as at startup. An error
//! anywhere else refuses the file whole: in a settings table (`[endpoint]`, `[security]`,
//! `[activity]`, `[registry]`, `[desktop]`) or in the `default` profile. Those have no "left out":
//! a setting in error would take its default, and the `default` profile in error would become
//! the profile that offers everything, either of which can be weaker than what runs (a token
//! `/mcp` no longer requires, new tools no longer held for review, destructive tools offered).
//! Applying the servers under the running settings instead would run a mix of two files, the
//! drift a person could not see; so the last valid config keeps running, whole, and the state
//! says which table to fix.

use std::fmt;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use config::{Config, ConfigError, DEFAULT_PROFILE, Diagnostic, Format, Severity};

/// What a config file would do if applied now.
#[derive(Debug)]
pub enum Verdict {
    /// It applies: `config` runs, without what `left_out` names.
    Applies {
        config: Box<Config>,
        left_out: Vec<LeftOut>,
    },
    /// It cannot be read as a config (a syntax error), or has an error outside its servers and
    /// profiles: the last valid config keeps running.
    Refused {
        /// What is wrong, as "the config file has 1 error in [security]".
        reason: String,
        diagnostics: Vec<Diagnostic>,
    },
    /// It is gone, empty or unreadable: the last config keeps running until it is back.
    Unread {
        problem: &'static str,
        message: String,
    },
}

impl Verdict {
    /// The one sentence the tray, the attention list and the banner show for a refused file.
    pub fn refused_problem(reason: &str) -> String {
        format!(
            "{}; the last valid config keeps running",
            capitalized(reason)
        )
    }
}

/// Judges the config file at `path` as `read` from it.
pub fn judge(path: &Path, read: io::Result<Vec<u8>>) -> Verdict {
    let (problem, message) = match read {
        // An editor that saves in place empties the file before it writes it: an empty file is
        // a save still under way, never a config without servers.
        Ok(bytes) if bytes.is_empty() => (
            "The config file is empty; the last config keeps running",
            format!(
                "{} is empty; the running config stays until the file has content again",
                path.display()
            ),
        ),
        Ok(bytes) => match config::from_bytes(path, bytes) {
            Ok(config) => return judge_config(config),
            Err(ConfigError::Invalid { diagnostics, .. }) => {
                return Verdict::Refused {
                    reason: format!(
                        "the config file has {}",
                        errors_said(error_count(&diagnostics))
                    ),
                    diagnostics,
                };
            }
            Err(error) => (
                "Cannot read the config file; the last config keeps running",
                format!("{error}; the running config stays"),
            ),
        },
        Err(error) if error.kind() == io::ErrorKind::NotFound => (
            "The config file is gone; the last config keeps running",
            format!(
                "{} is gone; the running config stays until the file is back",
                path.display()
            ),
        ),
        Err(error) => (
            "Cannot read the config file; the last config keeps running",
            format!(
                "cannot read {}: {error}; the running config stays",
                path.display()
            ),
        ),
    };
    Verdict::Unread { problem, message }
}

fn judge_config(config: Config) -> Verdict {
    let format = Format::of(&config.path);
    let mut tables: Vec<String> = Vec::new();
    let mut shared_errors = 0;
    for diagnostic in errors(&config.diagnostics) {
        if let Part::Shared(table) = Part::of(&diagnostic.field, format) {
            shared_errors += 1;
            if !tables.contains(&table) {
                tables.push(table);
            }
        }
    }
    if shared_errors > 0 {
        return Verdict::Refused {
            reason: format!(
                "the config file has {} in {}",
                errors_said(shared_errors),
                and_list(&tables)
            ),
            diagnostics: config.diagnostics,
        };
    }
    let left_out = left_out(&config);
    Verdict::Applies {
        config: Box::new(config),
        left_out,
    }
}

/// A server or a profile the file describes that does not run for its errors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    pub kind: LeftOutKind,
    pub name: String,
    /// Why: the messages of its errors, in file order.
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeftOutKind {
    Server,
    Profile,
}

impl LeftOut {
    /// `` `time` `` for a server, `` the profile `work` `` for a profile.
    fn named(&self) -> String {
        match self.kind {
            LeftOutKind::Server => format!("`{}`", self.name),
            LeftOutKind::Profile => format!("the profile `{}`", self.name),
        }
    }
}

impl fmt::Display for LeftOut {
    /// `` `time` is left out: `uvx` was not found on PATH ``.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is left out: {}",
            self.named(),
            self.reasons.join("; ")
        )
    }
}

/// The servers and profiles `config`'s errors left out, in file order. A name that runs all
/// the same (a second definition of it was ignored) is not left out.
pub(crate) fn left_out(config: &Config) -> Vec<LeftOut> {
    let format = Format::of(&config.path);
    let mut left_out: Vec<LeftOut> = Vec::new();
    for diagnostic in errors(&config.diagnostics) {
        let (kind, name) = match Part::of(&diagnostic.field, format) {
            Part::Server(name) if !config.backends.iter().any(|b| b.name == name) => {
                (LeftOutKind::Server, name)
            }
            Part::Profile(name) if !config.profiles.iter().any(|p| p.name == name) => {
                (LeftOutKind::Profile, name)
            }
            _ => continue,
        };
        match left_out
            .iter_mut()
            .find(|part| part.kind == kind && part.name == name)
        {
            Some(part) => part.reasons.push(diagnostic.message.clone()),
            None => left_out.push(LeftOut {
                kind,
                name: name.to_owned(),
                reasons: vec![diagnostic.message.clone()],
            }),
        }
    }
    left_out
}

/// The one sentence about a config that runs with errors in it, or `None` without errors:
/// what is left out, and (at startup only, when nothing ran before) the settings tables whose
/// settings in error took their defaults.
pub(crate) fn applied_problem(config: &Config, left_out: &[LeftOut]) -> Option<String> {
    let n_errors = error_count(&config.diagnostics);
    if n_errors == 0 {
        return None;
    }
    let format = Format::of(&config.path);
    let mut parts = Vec::new();
    if !left_out.is_empty() {
        let names: Vec<String> = left_out.iter().map(LeftOut::named).collect();
        let verb = if left_out.len() == 1 { "is" } else { "are" };
        parts.push(format!("{} {verb} left out", and_list(&names)));
    }
    let mut tables: Vec<String> = Vec::new();
    for diagnostic in errors(&config.diagnostics) {
        if let Part::Shared(table) = Part::of(&diagnostic.field, format)
            && !tables.contains(&table)
        {
            tables.push(table);
        }
    }
    if !tables.is_empty() {
        parts.push(format!(
            "settings with errors in {} keep their defaults",
            and_list(&tables)
        ));
    }
    if parts.is_empty() {
        parts.push("the definitions with errors are ignored".to_owned());
    }
    Some(format!(
        "The config file has {}; {}",
        errors_said(n_errors),
        parts.join("; ")
    ))
}

/// Which part of the file a diagnostic's field is about.
#[derive(Debug, PartialEq, Eq)]
enum Part<'a> {
    Server(&'a str),
    Profile(&'a str),
    /// Anything an error in cannot be left out of alone, as `[security]` says it.
    Shared(String),
}

impl<'a> Part<'a> {
    fn of(field: &'a str, format: Format) -> Part<'a> {
        let mut segments = field.splitn(3, '.');
        let first = segments.next().unwrap_or_default();
        match (first, segments.next()) {
            (key, Some(name)) if key == format.servers_key() => Part::Server(name),
            ("profiles", Some(name)) if name != DEFAULT_PROFILE => Part::Profile(name),
            ("profiles", Some(name)) => Part::Shared(format!("[profiles.{name}]")),
            ("", _) => Part::Shared("the file".to_owned()),
            (table, _) => Part::Shared(format!("[{table}]")),
        }
    }
}

fn errors(diagnostics: &[Diagnostic]) -> impl Iterator<Item = &Diagnostic> {
    diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.severity == Severity::Error)
}

pub(crate) fn error_count(diagnostics: &[Diagnostic]) -> usize {
    errors(diagnostics).count()
}

fn errors_said(errors: usize) -> String {
    if errors == 1 {
        "1 error".to_owned()
    } else {
        format!("{errors} errors")
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
