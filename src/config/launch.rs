//! How Switchboard reaches a server: a program it starts ([`ProcessLaunch`]), perhaps in a
//! [`Sandbox`], or a remote server at a URL ([`RemoteServer`]); and the reading of a remote
//! server's and a sandbox's fields.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::server::Reader;
use super::tree::{Entry, Node, NodeValue};
use super::values;
use crate::platform::sandbox::{self, Enforcement, Rules};

/// How long a remote server has to accept a connection and send the headers of an answer,
/// unless its `timeout` says otherwise.
pub const DEFAULT_REMOTE_TIMEOUT: Duration = Duration::from_secs(30);

/// How Switchboard reaches one server.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Launch {
    /// A program Switchboard starts, and speaks to over its stdin and stdout.
    Process(ProcessLaunch),
    /// A server reached over HTTP at a URL.
    Remote(RemoteServer),
}

/// A program to start.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ProcessLaunch {
    /// As written: a path, or a name looked up in `PATH` when the backend starts.
    pub command: String,
    /// With `${env:NAME}` and `${secret:NAME}` expanded.
    pub args: Vec<String>,
    /// Added to the environment Switchboard passes on; references are expanded.
    pub env: BTreeMap<String, String>,
    /// Absolute when the config gave one: `~` is expanded and a relative path is taken from the
    /// config file's directory.
    pub cwd: Option<PathBuf>,
    /// What the program may reach, when it runs sandboxed (`[servers.NAME.sandbox]`).
    pub sandbox: Option<Sandbox>,
}

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
        }
    }
}

/// A first sandbox for a server that is not sandboxed yet, in the words a person writes: the
/// folders its arguments name, to write (a file server's roots, a repository); for a package
/// runner, its cache to write (and the folder of the Pythons uv installs, to read) and the
/// registries' port, 443.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxDraft {
    pub read: Vec<String>,
    pub write: Vec<String>,
    pub connect: Vec<u16>,
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

/// A server reached over HTTP: Streamable HTTP, or the older HTTP+SSE transport.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RemoteServer {
    /// Its MCP endpoint (for the HTTP+SSE transport, the URL of its event stream): an absolute
    /// `http` or `https` URL.
    pub url: String,
    /// Sent with every request, references expanded.
    pub headers: BTreeMap<String, String>,
    /// How long to wait for a connection and for the headers of each answer.
    pub timeout: Duration,
    pub transport: RemoteTransport,
    /// How Switchboard signs in when the server asks for it (HTTP 401).
    pub oauth: OAuthClient,
}

/// Which HTTP transport a remote server speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum RemoteTransport {
    /// Streamable HTTP, or HTTP+SSE if the server answers the first POST as only such servers
    /// do (404 or 405).
    #[default]
    Auto,
    StreamableHttp,
    /// The HTTP+SSE transport of MCP 2024-11-05: a GET stream, and POSTs to the endpoint it names.
    Sse,
}

/// Settings of sign-in (OAuth) to a remote server. Without a `client_id`, Switchboard registers
/// itself with the authorization server (dynamic client registration).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct OAuthClient {
    /// A client id registered beforehand with the server's authorization server.
    pub client_id: Option<String>,
    /// Its secret, for a confidential client (references expanded).
    pub client_secret: Option<String>,
    /// Scopes to ask for; by default those the server names, else all it supports.
    pub scopes: Option<Vec<String>>,
}

impl Launch {
    /// The program, if this is a local server.
    pub fn process(&self) -> Option<&ProcessLaunch> {
        match self {
            Launch::Process(process) => Some(process),
            Launch::Remote(_) => None,
        }
    }
}

impl RemoteServer {
    /// A server at `url` with every other setting at its default.
    pub fn new(url: impl Into<String>) -> RemoteServer {
        RemoteServer {
            url: url.into(),
            headers: BTreeMap::new(),
            timeout: DEFAULT_REMOTE_TIMEOUT,
            transport: RemoteTransport::Auto,
            oauth: OAuthClient::default(),
        }
    }
}

// Values of the environment and headers may be secrets: `Debug` shows their names only.
impl fmt::Debug for ProcessLaunch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessLaunch")
            .field("command", &self.command)
            .field("args", &self.args.len())
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .field("sandbox", &self.sandbox)
            .finish()
    }
}

impl fmt::Debug for RemoteServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteServer")
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("timeout", &self.timeout)
            .field("transport", &self.transport)
            .field("oauth", &self.oauth)
            .finish()
    }
}

impl fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClient")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("scopes", &self.scopes)
            .finish()
    }
}

/// The fields of a remote server's entry; the others (`command`, `args`, `env`, `cwd`) belong to
/// a local one.
pub(super) const REMOTE_FIELDS: &[&str] = &["url", "headers", "timeout", "transport", "oauth"];
const OAUTH_FIELDS: &[&str] = &["client_id", "client_secret", "scopes"];
const SANDBOX_FIELDS: &[&str] = &["read", "write", "connect", "network", "required"];

impl Reader<'_, '_> {
    /// A remote server's URL: absolute, `http` or `https`; plain `http` beyond this machine is
    /// allowed with a warning, since tokens would cross the network in clear.
    pub(super) fn remote_url(&mut self, node: &Node, field: &str) -> Option<String> {
        let text = self.string(node, field)?;
        let url = match url::Url::parse(&text) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => url,
            Ok(_) | Err(_) => {
                self.reporter.error(
                    node.offset,
                    field,
                    format!("expected an http:// or https:// URL, found {text:?}"),
                );
                return None;
            }
        };
        if url.fragment().is_some() {
            self.reporter
                .error(node.offset, field, "a server's URL has no #fragment");
            return None;
        }
        if url.scheme() == "http" && !is_loopback_host(&url) {
            self.reporter.warning(
                node.offset,
                field,
                "plain http:// beyond this machine: requests, and tokens with them, cross the \
                 network unencrypted; use https://",
            );
        }
        Some(text)
    }

    /// Header names and values, values with `${env:NAME}` and `${secret:NAME}` expanded.
    pub(super) fn headers(&mut self, node: &Node, field: &str) -> Option<BTreeMap<String, String>> {
        let entries = self.table(node, field)?;
        let mut headers = BTreeMap::new();
        for entry in self.unique_entries(entries, field) {
            let field = format!("{field}.{}", entry.key);
            if http::HeaderName::from_bytes(entry.key.as_bytes()).is_err() {
                self.reporter.error(
                    entry.key_offset,
                    &field,
                    format!("{:?} is not a valid HTTP header name", entry.key),
                );
                continue;
            }
            let Some(written) = self.string(&entry.value, &field) else {
                continue;
            };
            let value = match values::expand_references(
                &written,
                &super::server::LOOKUPS,
                values::Other::Refused,
            ) {
                Ok(value) => value,
                Err(error) => {
                    self.value_error(&entry.value, &field, &error);
                    continue;
                }
            };
            // Checked after expansion, and never shown: it may be a secret.
            if http::HeaderValue::from_str(&value).is_err() {
                self.reporter.error(
                    entry.value.offset,
                    &field,
                    "the value cannot be sent in an HTTP header (control characters or line ends)",
                );
                continue;
            }
            headers.insert(entry.key.clone(), value);
        }
        Some(headers)
    }

    pub(super) fn remote_transport(&mut self, node: &Node, field: &str) -> Option<RemoteTransport> {
        let text = self.string(node, field)?;
        match text.as_str() {
            "auto" => Some(RemoteTransport::Auto),
            "streamable-http" => Some(RemoteTransport::StreamableHttp),
            "sse" => Some(RemoteTransport::Sse),
            _ => {
                self.reporter.error(
                    node.offset,
                    field,
                    format!(
                        "unknown transport {text:?}; expected \"auto\", \"streamable-http\" or \
                         \"sse\""
                    ),
                );
                None
            }
        }
    }

    pub(super) fn oauth(&mut self, node: &Node, field: &str) -> Option<OAuthClient> {
        let entries = self.table(node, field)?;
        let mut oauth = OAuthClient::default();
        for entry in self.unique_entries(entries, field) {
            let field = format!("{field}.{}", entry.key);
            let value = &entry.value;
            match entry.key.as_str() {
                "client_id" => oauth.client_id = self.string(value, &field),
                "client_secret" => {
                    let Some(written) = self.string(value, &field) else {
                        continue;
                    };
                    match values::expand_references(
                        &written,
                        &super::server::LOOKUPS,
                        values::Other::Refused,
                    ) {
                        Ok(secret) => oauth.client_secret = Some(secret),
                        Err(error) => self.value_error(value, &field, &error),
                    }
                }
                "scopes" => oauth.scopes = self.strings(value, &field),
                _ => self.unknown_field(entry, &field, OAUTH_FIELDS),
            }
        }
        if oauth.client_secret.is_some() && oauth.client_id.is_none() {
            self.reporter.error(
                node.offset,
                field,
                "a `client_secret` needs the `client_id` it belongs to",
            );
        }
        Some(oauth)
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

fn is_loopback_host(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(address)) => address.is_loopback(),
        Some(url::Host::Ipv6(address)) => address.is_loopback(),
        None => false,
    }
}
