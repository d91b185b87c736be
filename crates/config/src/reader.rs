//! Reads typed values out of a config tree, reporting each problem at its position: the
//! [`Reader`] every table's reader (servers, launches, sandboxes, profiles, settings) shares.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::Duration;

use super::Format;
use super::report::Reporter;
use super::tree::{Entry, Node, NodeValue};
use super::values::{self, ValueError};

/// Reads typed values out of the tree, reporting each problem at its position.
pub(super) struct Reader<'r, 't> {
    pub(super) reporter: &'r mut Reporter<'t>,
    pub(super) format: Format,
    pub(super) config_dir: &'r Path,
}

/// Whether a duration of zero makes sense for a field.
#[derive(Clone, Copy)]
pub(super) enum Zero {
    Allowed,
    Rejected,
}

impl Reader<'_, '_> {
    pub(super) fn duration(&mut self, node: &Node, field: &str, zero: Zero) -> Option<Duration> {
        let duration = match &node.value {
            NodeValue::String(text) => match values::parse_duration(text) {
                Ok(duration) => duration,
                Err(error) => {
                    self.value_error(node, field, &error);
                    return None;
                }
            },
            NodeValue::Integer(seconds) => match u64::try_from(*seconds) {
                Ok(seconds) => Duration::from_secs(seconds),
                Err(_) => {
                    self.reporter.error(
                        node.offset,
                        field,
                        format!("expected a duration, found the integer {seconds}"),
                    );
                    return None;
                }
            },
            _ => {
                self.type_error(node, field, "a duration like \"30s\"");
                return None;
            }
        };
        if duration.is_zero() && matches!(zero, Zero::Rejected) {
            self.reporter
                .error(node.offset, field, "must be longer than zero");
            return None;
        }
        Some(duration)
    }

    pub(super) fn size(&mut self, node: &Node, field: &str) -> Option<usize> {
        let size = match &node.value {
            NodeValue::String(text) => match values::parse_size(text) {
                Ok(size) => size,
                Err(error) => {
                    self.value_error(node, field, &error);
                    return None;
                }
            },
            NodeValue::Integer(bytes) => match usize::try_from(*bytes) {
                Ok(bytes) => bytes,
                Err(_) => {
                    self.reporter.error(
                        node.offset,
                        field,
                        format!("expected a size in bytes, found the integer {bytes}"),
                    );
                    return None;
                }
            },
            _ => {
                self.type_error(node, field, "a size like \"64MiB\"");
                return None;
            }
        };
        if size == 0 {
            self.reporter
                .error(node.offset, field, "must be larger than zero");
            return None;
        }
        Some(size)
    }

    pub(super) fn count(&mut self, node: &Node, field: &str) -> Option<u32> {
        let NodeValue::Integer(count) = &node.value else {
            self.type_error(node, field, "a whole number");
            return None;
        };
        match u32::try_from(*count) {
            Ok(count) => Some(count),
            Err(_) => {
                self.reporter.error(
                    node.offset,
                    field,
                    format!(
                        "expected a whole number from 0 to {}, found {count}",
                        u32::MAX
                    ),
                );
                None
            }
        }
    }

    pub(super) fn string(&mut self, node: &Node, field: &str) -> Option<String> {
        match &node.value {
            NodeValue::String(text) => Some(text.clone()),
            _ => {
                self.type_error(node, field, "a string");
                None
            }
        }
    }

    pub(super) fn strings(&mut self, node: &Node, field: &str) -> Option<Vec<String>> {
        let NodeValue::Array(items) = &node.value else {
            self.type_error(node, field, "an array of strings");
            return None;
        };
        let mut strings = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            strings.push(self.string(item, &format!("{field}[{index}]"))?);
        }
        Some(strings)
    }

    pub(super) fn boolean(&mut self, node: &Node, field: &str) -> Option<bool> {
        match node.value {
            NodeValue::Boolean(flag) => Some(flag),
            _ => {
                self.type_error(node, field, "true or false");
                None
            }
        }
    }

    pub(super) fn table<'n>(&mut self, node: &'n Node, field: &str) -> Option<&'n [Entry]> {
        match &node.value {
            NodeValue::Table(entries) => Some(entries),
            _ => {
                let expected = match self.format {
                    Format::Toml => "a table",
                    Format::Json => "an object",
                };
                self.type_error(node, field, expected);
                None
            }
        }
    }

    /// The entries of a table with repeated keys (possible only in JSON) reported and dropped.
    pub(super) fn unique_entries<'e>(
        &mut self,
        entries: &'e [Entry],
        field: &str,
    ) -> Vec<&'e Entry> {
        let mut keys_seen = HashSet::new();
        let mut unique = Vec::with_capacity(entries.len());
        for entry in entries {
            if keys_seen.insert(entry.key.as_str()) {
                unique.push(entry);
            } else {
                self.reporter.error(
                    entry.key_offset,
                    &format!("{field}.{}", entry.key),
                    format!("`{}` is given more than once", entry.key),
                );
            }
        }
        unique
    }

    /// A table of names and values that a server is given (a process's `env`, a remote
    /// server's `headers`), read by one rule: a name `name_problem` finds fault with is
    /// reported and left out; each value has its `${env:NAME}` and `${secret:NAME}` expanded
    /// (any other `${…}` is an error) and is then checked by `value_problem`, which says what is
    /// wrong without showing the value (it may be a secret). The values come back expanded, and
    /// as written.
    pub(super) fn expanded_table(
        &mut self,
        node: &Node,
        field: &str,
        name_problem: impl Fn(&str) -> Option<String>,
        value_problem: impl Fn(&str) -> Option<&'static str>,
    ) -> Option<(BTreeMap<String, String>, BTreeMap<String, String>)> {
        let entries = self.table(node, field)?;
        let mut expanded = BTreeMap::new();
        let mut written = BTreeMap::new();
        for entry in self.unique_entries(entries, field) {
            let field = format!("{field}.{}", entry.key);
            if let Some(problem) = name_problem(&entry.key) {
                self.reporter.error(entry.key_offset, &field, problem);
                continue;
            }
            let Some(as_written) = self.string(&entry.value, &field) else {
                continue;
            };
            let value =
                match values::expand_references(&as_written, &LOOKUPS, values::Other::Refused) {
                    Ok(value) => value,
                    Err(error) => {
                        self.value_error(&entry.value, &field, &error);
                        continue;
                    }
                };
            if let Some(problem) = value_problem(&value) {
                self.reporter.error(entry.value.offset, &field, problem);
                continue;
            }
            expanded.insert(entry.key.clone(), value);
            written.insert(entry.key.clone(), as_written);
        }
        Some((expanded, written))
    }

    /// An error in our own TOML format; a warning in JSON, a foreign format whose other tools
    /// add fields of their own.
    pub(super) fn unknown_field(&mut self, entry: &Entry, field: &str, known: &[&str]) {
        match self.format {
            Format::Toml => self.reporter.error(
                entry.key_offset,
                field,
                format!(
                    "unknown field `{}`, expected one of {}",
                    entry.key,
                    known
                        .iter()
                        .map(|name| format!("`{name}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            Format::Json => self.reporter.warning(
                entry.key_offset,
                field,
                format!("unknown field `{}` is ignored", entry.key),
            ),
        }
    }

    pub(super) fn type_error(&mut self, node: &Node, field: &str, expected: &str) {
        let found = node.describe(self.format);
        self.reporter.error(
            node.offset,
            field,
            format!("expected {expected}, found {found}"),
        );
    }

    pub(super) fn value_error(&mut self, node: &Node, field: &str, error: &ValueError) {
        self.reporter.error(node.offset, field, error.to_string());
    }
}

/// Where `${env:NAME}` and `${secret:NAME}` in servers' values get their text: Switchboard's
/// environment and the OS keychain. Each secret read is noted (see [`take_secrets_read`]).
pub(super) const LOOKUPS: values::Lookups<'static> = values::Lookups {
    env: &|name| std::env::var_os(name),
    secret: Some(&|name| {
        let value = platform::secrets::Keychain::secrets().get(name);
        if let Ok(Some(secret)) = &value {
            SECRETS_READ.with(|read| read.borrow_mut().push(secret.clone()));
        }
        value
    }),
};

thread_local! {
    /// The secrets [`LOOKUPS`] read on this thread since [`take_secrets_read`] last took them.
    static SECRETS_READ: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The secrets read for `${secret:NAME}` since the last call, on this thread: a config is
/// parsed on one thread, so what one parse read is what it takes at its end.
pub(super) fn take_secrets_read() -> Vec<String> {
    SECRETS_READ.with(|read| std::mem::take(&mut *read.borrow_mut()))
}

/// Overwrites a default with a value that was read; a value that was not read has been
/// reported, and the default stays so that the other fields can still be checked.
pub(super) fn set<T>(target: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *target = value;
    }
}
