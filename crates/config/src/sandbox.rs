//! What a sandboxed server may reach ([`Sandbox`], a server's `sandbox` table), the first
//! sandbox offered for a command ([`SandboxDraft`]), and the reading of the table.

use std::path::{Path, PathBuf};

use super::reader::Reader;
use super::tree::{Entry, Node, NodeValue};
use super::values;
use platform::sandbox::{self, Enforcement, Rules};

const SANDBOX_FIELDS: &[&str] = &["read", "write", "connect", "network", "dbus", "required"];

/// What a sandboxed server may reach: `[servers.NAME.sandbox]`. Beyond it, only what a program
/// needs to run at all (the system's folders, its own installation), read-only, and an
/// environment of only `PATH`, `HOME`, the locale and the server's `env`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Sandbox {
    /// Files and folders it may read (and run programs from), absolute: `~` is expanded and a
    /// relative path is taken from the config file's directory.
    pub read: Vec<PathBuf>,
    /// Files and folders it may read and change, absolute.
    pub write: Vec<PathBuf>,
    /// TCP ports it may connect to, on any host (loopback included).
    pub connect: Vec<u16>,
    /// Whether it has a network at all; without, it runs in a network namespace of its own.
    pub network: bool,
    /// Whether it may reach the desktop session's bus (and the rest of `$XDG_RUNTIME_DIR`);
    /// without, that folder is an empty one to it.
    pub dbus: bool,
    /// Whether a sandbox this system cannot enforce in full keeps the server from starting.
    pub required: bool,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox {
            read: Vec::new(),
            write: Vec::new(),
            connect: Vec::new(),
            network: true,
            dbus: false,
            required: true,
        }
    }
}

impl Sandbox {
    /// The rules the system enforces.
    pub fn rules(&self) -> Rules<'_> {
        Rules {
            read: &self.read,
            write: &self.write,
            connect: &self.connect,
            network: self.network,
            bus: self.dbus,
        }
    }
}

/// A first sandbox for a server that is not sandboxed yet, in the words a person writes: the
/// folders its arguments name, to write (a file server's roots, a repository); for a package
/// runner, its cache to write (and the folder of the Pythons uv installs, to read) and the
/// registries' port, 443.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxDraft {
    pub(crate) read: Vec<String>,
    pub(crate) write: Vec<String>,
    pub(crate) connect: Vec<u16>,
}

/// The caches package runners install into, by the runner's file name: (to write, to read).
const RUNNER_CACHES: &[(&[&str], &[&str], &[&str])] = &[
    (&["npx", "npm"], &["~/.npm"], &[]),
    (
        &["pnpm", "pnpx"],
        &["~/.cache/pnpm", "~/.local/share/pnpm"],
        &[],
    ),
    (&["bunx", "bun"], &["~/.bun/install/cache"], &[]),
    (&["uvx", "uv"], &["~/.cache/uv"], &["~/.local/share/uv"]),
];

impl SandboxDraft {
    /// The draft for `command args`.
    pub fn for_command(command: &str, args: &[String]) -> SandboxDraft {
        let mut draft = SandboxDraft::default();
        let name = Path::new(command)
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or(command);
        if let Some((_, write, read)) = RUNNER_CACHES
            .iter()
            .find(|(runners, _, _)| runners.contains(&name))
        {
            draft
                .write
                .extend(write.iter().map(|path| (*path).to_owned()));
            draft
                .read
                .extend(read.iter().map(|path| (*path).to_owned()));
            draft.connect.push(443);
        }
        let home = directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf());
        for arg in args {
            let named_folder = (arg.starts_with('/') || arg.starts_with('~'))
                && values::expand_home(arg, home.as_deref()).is_ok_and(|path| path.is_dir());
            if named_folder && !draft.write.contains(arg) {
                draft.write.push(arg.clone());
            }
        }
        draft
    }

    /// The draft as a TOML table (`[servers.NAME.sandbox]` once inserted under a server).
    pub fn to_table(&self) -> toml_edit::Table {
        let mut table = toml_edit::Table::new();
        let paths = |paths: &[String]| toml_edit::value(paths.iter().collect::<toml_edit::Array>());
        table.insert("read", paths(&self.read));
        table.insert("write", paths(&self.write));
        table.insert(
            "connect",
            toml_edit::value(
                self.connect
                    .iter()
                    .map(|&port| i64::from(port))
                    .collect::<toml_edit::Array>(),
            ),
        );
        table.insert("network", toml_edit::value(true));
        table
    }

    /// The draft as the JSON form's `sandbox` object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "read": self.read,
            "write": self.write,
            "connect": self.connect,
            "network": true,
        })
    }

    /// The draft as the TOML a person adds to the config for server `name`.
    pub fn to_toml(&self, name: &str) -> String {
        let mut server = toml_edit::Table::new();
        server.set_implicit(true);
        server.insert("sandbox", toml_edit::Item::Table(self.to_table()));
        let mut servers = toml_edit::Table::new();
        servers.set_implicit(true);
        servers.insert(name, toml_edit::Item::Table(server));
        let mut document = toml_edit::DocumentMut::new();
        document.insert("servers", toml_edit::Item::Table(servers));
        document.to_string()
    }

    /// What the draft lets the server do, in a sentence: `may write ~/notes, ~/.npm; may connect
    /// to port 443`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.read.is_empty() {
            parts.push(format!("may read {}", self.read.join(", ")));
        }
        if !self.write.is_empty() {
            parts.push(format!("may write {}", self.write.join(", ")));
        }
        match self.connect.as_slice() {
            [] => parts.push("may connect to no TCP port".to_owned()),
            ports => parts.push(format!(
                "may connect to port {}",
                ports
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
        format!("sandboxed: {}", parts.join("; "))
    }
}

impl Reader<'_, '_> {
    /// A server's `sandbox` table; a system that cannot enforce all of it is warned about where
    /// the table starts.
    pub(super) fn sandbox(&mut self, sandbox_entry: &Entry, field: &str) -> Option<Sandbox> {
        let entries = self.table(&sandbox_entry.value, field)?;
        let mut sandbox = Sandbox::default();
        let mut connect_offset = None;
        for entry in self.unique_entries(entries, field) {
            let field = format!("{field}.{}", entry.key);
            let value = &entry.value;
            match entry.key.as_str() {
                "read" => sandbox.read = self.sandbox_paths(value, &field, Missing::Read)?,
                "write" => sandbox.write = self.sandbox_paths(value, &field, Missing::Made)?,
                "connect" => {
                    sandbox.connect = self.ports(value, &field)?;
                    connect_offset = Some(entry.key_offset);
                }
                "network" => sandbox.network = self.boolean(value, &field)?,
                "dbus" => sandbox.dbus = self.boolean(value, &field)?,
                "required" => sandbox.required = self.boolean(value, &field)?,
                _ => self.unknown_field(entry, &field, SANDBOX_FIELDS),
            }
        }
        if let Some(offset) = connect_offset
            && !sandbox.network
            && !sandbox.connect.is_empty()
        {
            self.reporter.error(
                offset,
                &format!("{field}.connect"),
                "`connect` names ports to reach, but `network = false` leaves the server no \
                 network to reach them on; keep one of the two",
            );
            return None;
        }
        let assessment = sandbox::assess(&sandbox.rules());
        let shortfalls = assessment.shortfalls.join("; ");
        let warning = match assessment.enforcement(sandbox.required) {
            Enforcement::Full => None,
            Enforcement::Refused => Some(format!(
                "this system cannot enforce all of this sandbox ({shortfalls}), so the server \
                 will not start; set `required = false` to run it with what can be enforced"
            )),
            Enforcement::Partial => Some(format!(
                "this system cannot enforce all of this sandbox ({shortfalls}); the server runs \
                 with the rest, as `required = false` allows"
            )),
            Enforcement::Unenforced => Some(format!(
                "this system cannot enforce this sandbox ({shortfalls}); the server runs without \
                 one, as `required = false` allows"
            )),
        };
        if let Some(warning) = warning {
            self.reporter
                .warning(sandbox_entry.key_offset, field, warning);
        }
        Some(sandbox)
    }

    /// Paths with `~` expanded, relative ones taken from the config file's folder. One that does
    /// not exist is warned about: what becomes of it is `missing`.
    fn sandbox_paths(
        &mut self,
        node: &Node,
        field: &str,
        missing: Missing,
    ) -> Option<Vec<PathBuf>> {
        let written = self.strings(node, field)?;
        let NodeValue::Array(items) = &node.value else {
            return None;
        };
        let home = directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf());
        let mut paths = Vec::with_capacity(written.len());
        for (index, (text, item)) in written.iter().zip(items).enumerate() {
            let field = format!("{field}[{index}]");
            if text.is_empty() {
                self.reporter
                    .error(item.offset, &field, "the path is empty");
                return None;
            }
            let path = match values::expand_home(text, home.as_deref()) {
                Ok(path) => self.config_dir.join(path),
                Err(error) => {
                    self.value_error(item, &field, &error);
                    return None;
                }
            };
            if !path.exists() {
                let fate = match missing {
                    Missing::Read => "it grants nothing until the server starts after it does",
                    Missing::Made => "it is made, as a folder, when the server starts",
                };
                self.reporter.warning(
                    item.offset,
                    &field,
                    format!("{} does not exist: {fate}", path.display()),
                );
            }
            paths.push(path);
        }
        Some(paths)
    }

    /// TCP port numbers, 1 to 65535.
    fn ports(&mut self, node: &Node, field: &str) -> Option<Vec<u16>> {
        let NodeValue::Array(items) = &node.value else {
            self.type_error(node, field, "an array of TCP ports, like [443]");
            return None;
        };
        let mut ports = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let field = format!("{field}[{index}]");
            let NodeValue::Integer(number) = item.value else {
                self.type_error(item, &field, "a TCP port, like 443");
                return None;
            };
            match u16::try_from(number) {
                Ok(port) if port > 0 => ports.push(port),
                _ => {
                    self.reporter.error(
                        item.offset,
                        &field,
                        format!("expected a TCP port from 1 to 65535, found {number}"),
                    );
                    return None;
                }
            }
        }
        Some(ports)
    }
}

/// What becomes of a sandbox's path that does not exist.
#[derive(Clone, Copy)]
enum Missing {
    /// To read: nothing, until it exists when the server starts.
    Read,
    /// To write: it is made, as a folder, when the server starts.
    Made,
}
