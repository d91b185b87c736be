//! Turns one server's entry into a [`BackendConfig`], reporting every problem found.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::launch::{REMOTE_FIELDS, Written};
use super::reader::{LOOKUPS, Reader, Zero, set};
use super::report::Reporter;
use super::tree::{Entry, Node, NodeValue};
use super::values;
use super::{
    Ask, BackendConfig, Format, Launch, MAX_PREFIX_LEN, ProcessLaunch, Protocol, RemoteServer,
    RemoteTransport, RestartPolicy,
};
use wire::era::Era;

const SERVER_FIELDS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "timeout",
    "transport",
    "oauth",
    "enabled",
    "request_timeout",
    "handshake_timeout",
    "health_interval",
    "health_timeout",
    "max_message_size",
    "stop_grace",
    "restart",
    "prefix",
    "tools_allow",
    "tools_deny",
    "start_on_demand",
    "protocol",
    "sandbox",
    "confirm",
    "confirm_destructive",
    "confirm_timeout",
    "ask",
    "registry",
];

const RESTART_FIELDS: &[&str] = &[
    "backoff_base",
    "backoff_cap",
    "max_restarts",
    "window",
    "stable_after",
];

/// The fields of a local server's entry.
const PROCESS_FIELDS: &[&str] = &["command", "args", "env", "cwd", "sandbox"];

/// The backend `server` describes, or `None` if it has any error (each one reported) or is a
/// kind of server that is skipped with a warning.
pub(super) fn read_backend(
    reporter: &mut Reporter<'_>,
    format: Format,
    config_dir: &Path,
    server: &Entry,
) -> Option<BackendConfig> {
    let errors_before = reporter.n_errors();
    let mut reader = Reader {
        reporter,
        format,
        config_dir,
    };
    let backend = reader.read(server)?;
    (reader.reporter.n_errors() == errors_before).then_some(backend)
}

impl Reader<'_, '_> {
    fn read(&mut self, server: &Entry) -> Option<BackendConfig> {
        let prefix = format!("{}.{}", self.format.servers_key(), server.key);
        let entries = self.table(&server.value, &prefix)?;

        let mut backend = BackendConfig::new(server.key.as_str(), "", Vec::new());
        let mut process = ProcessLaunch {
            command: String::new(),
            args: Vec::new(),
            env: BTreeMap::new(),
            written: Written::default(),
            cwd: None,
            sandbox: None,
        };
        let mut remote = RemoteServer::new("");
        // Offset of the command's value, kept to point at it if the command cannot be found.
        let mut command_offset = None;
        // The first field of each kind of server, to report a mix of the two.
        let mut local_field = None;
        let mut remote_field = None;
        for entry in self.unique_entries(entries, &prefix) {
            let field = format!("{prefix}.{}", entry.key);
            let value = &entry.value;
            if PROCESS_FIELDS.contains(&entry.key.as_str()) {
                local_field.get_or_insert(entry);
            } else if REMOTE_FIELDS.contains(&entry.key.as_str()) {
                remote_field.get_or_insert(entry);
            }
            match entry.key.as_str() {
                "command" => {
                    if let Some(command) = self.string(value, &field) {
                        if command.is_empty() {
                            self.reporter
                                .error(value.offset, &field, "the command is empty");
                        } else {
                            process.command = command;
                            command_offset = Some(value.offset);
                        }
                    }
                }
                "args" => {
                    if let Some((args, written)) = self.args(value, &field) {
                        (process.args, process.written.args) = (args, written);
                    }
                }
                "env" => {
                    if let Some((env, written)) = self.env(value, &field) {
                        (process.env, process.written.values) = (env, written);
                    }
                }
                "cwd" => process.cwd = self.cwd(value, &field),
                "sandbox" => process.sandbox = self.sandbox(entry, &field),
                "url" => {
                    if let Some((url, written)) = self.remote_url(value, &field) {
                        (remote.url, remote.written.url) = (url, written);
                    }
                }
                "headers" => {
                    if let Some((headers, written)) = self.headers(value, &field) {
                        (remote.headers, remote.written.values) = (headers, written);
                    }
                }
                "timeout" => set(
                    &mut remote.timeout,
                    self.duration(value, &field, Zero::Rejected),
                ),
                "transport" => set(&mut remote.transport, self.remote_transport(value, &field)),
                "oauth" => set(&mut remote.oauth, self.oauth(value, &field)),
                "enabled" => set(&mut backend.enabled, self.boolean(value, &field)),
                "request_timeout" => {
                    set(
                        &mut backend.request_timeout,
                        self.duration(value, &field, Zero::Rejected),
                    );
                }
                "handshake_timeout" => {
                    set(
                        &mut backend.handshake_timeout,
                        self.duration(value, &field, Zero::Rejected),
                    );
                }
                "health_interval" => {
                    set(
                        &mut backend.health_interval,
                        self.health_interval(value, &field),
                    );
                }
                "health_timeout" => {
                    set(
                        &mut backend.health_timeout,
                        self.duration(value, &field, Zero::Rejected),
                    );
                }
                "max_message_size" => set(&mut backend.max_message_size, self.size(value, &field)),
                "stop_grace" => {
                    set(
                        &mut backend.stop_grace,
                        self.duration(value, &field, Zero::Allowed),
                    );
                }
                "restart" => set(&mut backend.restart, self.restart(entry, &field)),
                "prefix" => set(&mut backend.prefix, self.prefix(value, &field)),
                "tools_allow" => set(&mut backend.tools_allow, self.strings(value, &field)),
                "tools_deny" => set(&mut backend.tools_deny, self.strings(value, &field)),
                "start_on_demand" => {
                    set(&mut backend.start_on_demand, self.boolean(value, &field));
                }
                "protocol" => set(&mut backend.protocol, self.protocol(value, &field)),
                "ask" => set(&mut backend.ask, self.ask(value, &field)),
                // Where a server added from a registry came from (`NAME@VERSION`): read by the
                // registry's commands, not by the engine.
                "registry" => {
                    self.string(value, &field);
                }
                key @ ("confirm" | "confirm_destructive" | "confirm_timeout") => {
                    self.confirm(key, value, &field, &mut backend.confirm);
                }
                // Editors' configs say what kind of server an entry is this way.
                "type" if self.format == Format::Json => {
                    if let Some(kind) = self.string(value, &field) {
                        match json_type(&kind) {
                            Some(None) => {}
                            Some(Some(transport)) => {
                                remote.transport = transport;
                                remote_field.get_or_insert(entry);
                            }
                            None => self.reporter.error(
                                value.offset,
                                &field,
                                format!(
                                    "unknown server type {kind:?}; expected \"stdio\", \"http\" \
                                     or \"sse\""
                                ),
                            ),
                        }
                    }
                }
                _ => self.unknown_field(entry, &field, SERVER_FIELDS),
            }
        }

        match (local_field, remote_field) {
            (Some(local), Some(remote)) => {
                let (earlier, later) = match local.key_offset < remote.key_offset {
                    true => (local, remote),
                    false => (remote, local),
                };
                self.reporter.error(
                    later.key_offset,
                    &format!("{prefix}.{}", later.key),
                    format!(
                        "`{}` is for a {} server and `{}` for a {} one; a server has a \
                         `command` or a `url`, not both",
                        later.key,
                        kind_of_field(&later.key),
                        earlier.key,
                        kind_of_field(&earlier.key)
                    ),
                );
            }
            (None, Some(_)) if remote.url.is_empty() => {
                // Unless the URL was there but wrong, which has been reported already.
                if !entries.iter().any(|entry| entry.key == "url") {
                    self.reporter.error(
                        server.key_offset,
                        &prefix,
                        "missing field `url`: the address of the remote server",
                    );
                }
            }
            (None, Some(_)) => backend.launch = Launch::Remote(remote),
            (_, None) => {
                match command_offset {
                    Some(offset) => self.check_command(&process, offset, &prefix),
                    // Unless the command was there but wrong, which has been reported already.
                    None if !entries.iter().any(|entry| entry.key == "command") => {
                        self.reporter.error(
                            server.key_offset,
                            &prefix,
                            "missing field `command` (the program to start) or `url` (a remote \
                             server's address)",
                        );
                    }
                    None => {}
                }
                backend.launch = Launch::Process(process);
            }
        }
        Some(backend)
    }

    /// Reports a command that cannot be started, looking it up the way spawning will: in the
    /// backend's own `PATH` if its `env` sets one.
    fn check_command(&mut self, backend: &ProcessLaunch, offset: usize, prefix: &str) {
        let search_path = match backend.env.get("PATH") {
            Some(path) => OsString::from(path),
            None => platform::command::search_path(),
        };
        if platform::command::find(&backend.command, &search_path).is_some() {
            return;
        }
        let command = &backend.command;
        let advice = platform::command::install_advice(command);
        let message = if command.contains('/') {
            format!("`{command}` does not exist or is not executable{advice}")
        } else if backend.env.contains_key("PATH") {
            format!("`{command}` was not found in the PATH set in `env`{advice}")
        } else {
            format!("`{command}` was not found on PATH{advice}")
        };
        self.reporter
            .error(offset, &format!("{prefix}.command"), message);
    }

    /// A prefix, or the empty one, with which the server's names are its own.
    fn prefix(&mut self, node: &Node, field: &str) -> Option<String> {
        let prefix = self.string(node, field)?;
        if !prefix.is_empty() && !super::is_valid_identifier(&prefix, MAX_PREFIX_LEN) {
            self.reporter.error(
                node.offset,
                field,
                format!(
                    "invalid prefix {prefix:?}: use 1 to {MAX_PREFIX_LEN} ASCII letters, digits, \
                     `_` or `-`, or \"\" for the server's own names"
                ),
            );
            return None;
        }
        Some(prefix)
    }

    fn restart(&mut self, restart_entry: &Entry, field: &str) -> Option<RestartPolicy> {
        let entries = self.table(&restart_entry.value, field)?;
        let mut restart = RestartPolicy::default();
        // Where the cap or the base was written, to point at it if they contradict each other.
        let mut backoff_offset = None;
        for entry in self.unique_entries(entries, field) {
            let field = format!("{field}.{}", entry.key);
            let value = &entry.value;
            match entry.key.as_str() {
                "backoff_base" => {
                    set(
                        &mut restart.backoff_base,
                        self.duration(value, &field, Zero::Rejected),
                    );
                    backoff_offset = backoff_offset.or(Some(value.offset));
                }
                "backoff_cap" => {
                    set(
                        &mut restart.backoff_cap,
                        self.duration(value, &field, Zero::Rejected),
                    );
                    backoff_offset = Some(value.offset);
                }
                "max_restarts" => set(&mut restart.max_restarts, self.count(value, &field)),
                "window" => set(
                    &mut restart.window,
                    self.duration(value, &field, Zero::Rejected),
                ),
                "stable_after" => {
                    set(
                        &mut restart.stable_after,
                        self.duration(value, &field, Zero::Allowed),
                    );
                }
                _ => self.unknown_field(entry, &field, RESTART_FIELDS),
            }
        }
        if restart.backoff_cap < restart.backoff_base {
            self.reporter.error(
                backoff_offset.unwrap_or(restart_entry.key_offset),
                &format!("{field}.backoff_cap"),
                format!(
                    "backoff_cap ({}) is shorter than backoff_base ({})",
                    values::format_duration(restart.backoff_cap),
                    values::format_duration(restart.backoff_base)
                ),
            );
        }
        Some(restart)
    }

    /// The environment's values with their references expanded, and as written.
    fn env(
        &mut self,
        node: &Node,
        field: &str,
    ) -> Option<(BTreeMap<String, String>, BTreeMap<String, String>)> {
        let name_problem = |name: &str| {
            (name.is_empty() || name.contains(['=', '\0'])).then(|| {
                format!(
                    "invalid environment variable name {name:?}: it must be non-empty and \
                     contain neither `=` nor NUL"
                )
            })
        };
        self.expanded_table(node, field, name_problem, |_| None)
    }

    /// The arguments with their `${env:NAME}` and `${secret:NAME}` expanded (any other `${…}`
    /// is the program's to read, and stays), and as written. A secret in an argument is a
    /// warning: every local user sees a process's arguments.
    fn args(&mut self, node: &Node, field: &str) -> Option<(Vec<String>, Vec<String>)> {
        let written = self.strings(node, field)?;
        let NodeValue::Array(items) = &node.value else {
            return None;
        };
        let mut args = Vec::with_capacity(written.len());
        for (arg, item) in written.iter().zip(items) {
            match values::expand_references(arg, &LOOKUPS, values::Other::Kept) {
                Ok(expanded) => {
                    if arg.contains("${secret:") {
                        self.reporter.warning(
                            item.offset,
                            field,
                            "a secret in `args` is visible to every user of this machine in the \
                             process list; give it to the server in `env` instead",
                        );
                    }
                    args.push(expanded);
                }
                Err(error) => {
                    self.value_error(item, field, &error);
                    return None;
                }
            }
        }
        Some((args, written))
    }

    fn cwd(&mut self, node: &Node, field: &str) -> Option<PathBuf> {
        let written = self.string(node, field)?;
        let home = directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf());
        let expanded = match values::expand_home(&written, home.as_deref()) {
            Ok(expanded) => expanded,
            Err(error) => {
                self.value_error(node, field, &error);
                return None;
            }
        };
        let cwd = self.config_dir.join(expanded);
        if !cwd.is_dir() {
            self.reporter.error(
                node.offset,
                field,
                format!("{} is not an existing directory", cwd.display()),
            );
            return None;
        }
        Some(cwd)
    }

    /// `Some(None)` when pings are turned off with "off" or a zero interval.
    fn health_interval(&mut self, node: &Node, field: &str) -> Option<Option<Duration>> {
        if let NodeValue::String(text) = &node.value
            && text.trim() == "off"
        {
            return Some(None);
        }
        let interval = self.duration(node, field, Zero::Allowed)?;
        Some((!interval.is_zero()).then_some(interval))
    }

    fn ask(&mut self, node: &Node, field: &str) -> Option<Ask> {
        let text = self.string(node, field)?;
        match text.as_str() {
            "auto" => Some(Ask::Auto),
            "editor" => Some(Ask::Editor),
            "switchboard" => Some(Ask::Switchboard),
            "never" => Some(Ask::Never),
            _ => {
                self.reporter.error(
                    node.offset,
                    field,
                    format!(
                        "unknown ask {text:?}; expected \"auto\", \"editor\", \"switchboard\" \
                         or \"never\""
                    ),
                );
                None
            }
        }
    }

    fn protocol(&mut self, node: &Node, field: &str) -> Option<Protocol> {
        let text = self.string(node, field)?;
        match text.as_str() {
            "auto" => Some(Protocol::Auto),
            // "legacy" and "modern" are how configs wrote the eras before.
            "session" | "legacy" => Some(Protocol::Only(Era::Session)),
            "stateless" | "modern" => Some(Protocol::Only(Era::Stateless)),
            _ => {
                self.reporter.error(
                    node.offset,
                    field,
                    format!(
                        "unknown protocol {text:?}; expected \"auto\", \"session\" or \"stateless\""
                    ),
                );
                None
            }
        }
    }
}

/// What a JSON entry's `type` says: `None` if unknown, `Some(None)` for a local server, and
/// `Some(Some(transport))` for a remote one.
fn json_type(kind: &str) -> Option<Option<RemoteTransport>> {
    match kind {
        "stdio" => Some(None),
        "http" | "streamable-http" | "streamableHttp" => {
            Some(Some(RemoteTransport::StreamableHttp))
        }
        "sse" => Some(Some(RemoteTransport::HttpSse)),
        _ => None,
    }
}

fn kind_of_field(key: &str) -> &'static str {
    match PROCESS_FIELDS.contains(&key) {
        true => "local",
        false => "remote",
    }
}
