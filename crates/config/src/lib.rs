//! The config file, parsed and validated once into typed backends plus diagnostics.
//!
//! The file is TOML (`[servers.NAME]` tables and an optional `[endpoint]` table) or, when its
//! name ends in `.json`, the Claude Desktop `mcpServers` shape. Both are turned into the same
//! position-aware tree and checked by the same code, so every diagnostic points at a line and
//! column of the user's file.
//!
//! A syntax error or a wrong top-level shape rejects the whole file ([`ConfigError::Invalid`]),
//! so that a caller can keep running on the last good config. A problem inside one server only
//! leaves that server out: the others still load, and the problem is listed in
//! [`Config::diagnostics`]. A problem inside `[endpoint]` leaves that one setting at its
//! default.
//!
//! Floor 3 of the workspace (ARCHITECTURE.md). It stands on `platform` and `wire`; it never starts
//! a server or reaches one. Where a command is and what a secret holds it asks `platform`.

mod default;
pub mod edit;
mod glob;
mod launch;
mod profile;
mod reader;
mod report;
mod sandbox;
mod server;
mod settings;
pub use settings::{DEFAULT_SOURCES, RegistrySettings};
mod tree;
mod values;

pub use default::{default_config_text, load_or_create_default};
pub use glob::glob_match;
pub use launch::{
    DEFAULT_REMOTE_TIMEOUT, IdentityProvider, Launch, MASKED, OAuthClient, OAuthGrant,
    ProcessLaunch, RemoteServer, RemoteTransport, Written, shown_url,
};
pub use profile::{
    Confirm, DEFAULT_CONFIRM_TIMEOUT, DEFAULT_NAME_BUDGET, DEFAULT_PROFILE, Discovery,
    MAX_NAME_BUDGET, MIN_NAME_BUDGET, Pattern, Profile, Tier,
};
pub use sandbox::{Sandbox, SandboxDraft};
pub use values::filled_in;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::value::RawValue;
use toml::de::DeTable;

use report::Reporter;
use tree::{Entry, Node, NodeValue};
use wire::era::Era;

/// Default deadline of one request forwarded to a backend.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Default deadline of the MCP `initialize` handshake after a backend starts.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time between two health pings.
pub const DEFAULT_HEALTH_INTERVAL: Duration = Duration::from_secs(30);
/// Default deadline of one health ping.
pub const DEFAULT_HEALTH_TIMEOUT: Duration = Duration::from_secs(10);
/// Default limit of one line (one JSON-RPC message) read from a backend.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 128 * 1024 * 1024;
/// Default wait after closing a backend's stdin, and again after SIGTERM.
pub const DEFAULT_STOP_GRACE: Duration = Duration::from_secs(2);
/// Longest server name: names become prefixes of tool names, which MCP clients limit to 64.
pub const MAX_SERVER_NAME_LEN: usize = 48;
/// Longest `prefix` of tool and prompt names, for the same reason.
pub const MAX_PREFIX_LEN: usize = MAX_SERVER_NAME_LEN;
/// Default address of the endpoint editors connect to.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8765";
/// What `check`, the log and the dashboard say of a config whose `/mcp` takes requests without a
/// token (see [`Config::endpoint_open_by_default`]).
pub const OPEN_ENDPOINT_WARNING: &str = "/mcp takes requests from any program on this machine, \
    and through it uses every server here; set `require_token = true` under [endpoint] (Needs \
    attention on the dashboard does it and updates your editors' entries)";

/// Default limit of one request body sent to the endpoint.
pub const DEFAULT_MAX_BODY_SIZE: usize = 16 * 1024 * 1024;

/// A loaded config: the backends that are valid, and everything worth telling the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub path: PathBuf,
    /// Valid backends, in file order. A backend with any error is left out.
    pub backends: Vec<BackendConfig>,
    /// The `[endpoint]` table; a setting with an error keeps its default.
    pub endpoint: EndpointConfig,
    /// The `[desktop]` table: settings of the desktop app only.
    pub desktop: DesktopConfig,
    /// The `[activity]` table: the activity log.
    pub activity: ActivitySettings,
    /// The `[security]` table: how tools are trusted.
    pub security: SecuritySettings,
    /// The `[registry]` table: where servers are found and how added ones start.
    pub registry: RegistrySettings,
    /// Valid profiles, in file order; the default one first unless the file describes it.
    pub profiles: Vec<Profile>,
    /// The keychain's values that `${secret:NAME}` references put into the config.
    pub secrets: SecretValues,
    /// Errors (each one left a backend out, or an endpoint setting at its default) and
    /// warnings, ordered by position in the file.
    pub diagnostics: Vec<Diagnostic>,
}

impl Config {
    /// Whether `/mcp` takes requests without a token only because this config predates the
    /// token: a TOML config (the JSON form has no `[endpoint]`) that neither gives a token nor
    /// says `require_token`. Not a mistake in the file, so not among its diagnostics.
    pub fn endpoint_open_by_default(&self) -> bool {
        Format::of(&self.path) == Format::Toml && self.endpoint.is_open_by_default()
    }

    /// Every value that may be a secret: servers' environment and header values, their OAuth
    /// client secrets, the keychain's secrets referenced anywhere, and the endpoint's token. The
    /// activity log never stores them.
    pub fn secret_values(&self) -> Vec<String> {
        let mut values: Vec<String> = self.endpoint.token.iter().cloned().collect();
        values.extend(self.secrets.0.iter().cloned());
        for backend in &self.backends {
            match &backend.launch {
                Launch::Process(process) => values.extend(process.env.values().cloned()),
                Launch::Remote(remote) => {
                    values.extend(remote.headers.values().cloned());
                    values.extend(remote.oauth.secret_values().cloned());
                }
            }
        }
        values
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|diagnostic| diagnostic.severity == Severity::Error)
    }
}

/// One backend MCP server, as the config describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendConfig {
    pub name: String,
    /// A program to start, or a remote server to reach.
    pub launch: Launch,
    pub enabled: bool,
    pub request_timeout: Duration,
    pub handshake_timeout: Duration,
    /// `None` when health pings are off.
    pub health_interval: Option<Duration>,
    pub health_timeout: Duration,
    /// Longest line (one message) accepted from the backend, in bytes.
    pub max_message_size: usize,
    pub stop_grace: Duration,
    pub restart: RestartPolicy,
    /// Tools and prompts are offered as `<prefix>__<name>`; the backend's name by default. Empty:
    /// they are offered under their own names.
    pub prefix: String,
    /// Glob patterns (`*`, `?`) of the backend's own tool names to offer; empty offers all.
    pub tools_allow: Vec<String>,
    /// Glob patterns of the backend's own tool names never to offer, even if allowed.
    pub tools_deny: Vec<String>,
    /// Whether a call to the backend while it is stopped starts it.
    pub start_on_demand: bool,
    /// Which protocol era Switchboard speaks with the backend.
    pub protocol: Protocol,
    /// Which of its tools' calls wait for a person's yes.
    pub confirm: Confirm,
    /// Who puts its questions (`elicitation/create`) to the person.
    pub ask: Ask,
}

/// Who puts a server's questions to the person (`ask = "auto"`, `"editor"`, `"switchboard"` or
/// `"never"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Ask {
    /// The editor when it declared it can, else Switchboard (the dashboard and desktop app).
    #[default]
    Auto,
    /// Only the editor: a question it cannot take is refused.
    Editor,
    /// Always Switchboard, even when the editor could ask.
    Switchboard,
    /// Nobody: the server is told its questions are turned off.
    Never,
}

/// Which protocol era Switchboard speaks with a backend (`protocol = "auto"`, `"session"` or
/// `"stateless"`; `"legacy"` and `"modern"` are read as the last two, as configs once wrote them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Protocol {
    /// `initialize` first, and the stateless era if the server answers that it speaks only
    /// that one (remembered for the next start of the same command).
    #[default]
    Auto,
    /// Only this era: `initialize` for the session era; `server/discover` and the `_meta`
    /// envelope for the stateless era (2026-07-28).
    Only(Era),
}

impl BackendConfig {
    /// A backend started as `command args`, with every optional setting at its default.
    pub fn new(name: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        BackendConfig::with_launch(
            name,
            Launch::Process(ProcessLaunch {
                command: command.into(),
                written: Written {
                    args: args.clone(),
                    ..Written::default()
                },
                args,
                env: BTreeMap::new(),
                cwd: None,
                sandbox: None,
            }),
        )
    }

    /// A backend reached as `launch`, with every optional setting at its default.
    pub fn with_launch(name: impl Into<String>, launch: Launch) -> Self {
        let name = name.into();
        BackendConfig {
            prefix: name.clone(),
            name,
            launch,
            enabled: true,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            health_interval: Some(DEFAULT_HEALTH_INTERVAL),
            health_timeout: DEFAULT_HEALTH_TIMEOUT,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            stop_grace: DEFAULT_STOP_GRACE,
            restart: RestartPolicy::default(),
            tools_allow: Vec::new(),
            tools_deny: Vec::new(),
            start_on_demand: true,
            protocol: Protocol::Auto,
            confirm: Confirm::default(),
            ask: Ask::Auto,
        }
    }

    /// The program, if this backend is a local one.
    pub fn process(&self) -> Option<&ProcessLaunch> {
        self.launch.process()
    }

    /// The program, for code that knows this backend is a local one (tests, mostly).
    pub fn process_mut(&mut self) -> Option<&mut ProcessLaunch> {
        match &mut self.launch {
            Launch::Process(process) => Some(process),
            Launch::Remote(_) => None,
        }
    }

    /// Whether a process started with `self` must be replaced to run with `new`: the process's
    /// command line, environment, working directory or framing differ (for a remote server, its
    /// URL, headers, transport or sign-in settings). Everything else applies to a running one.
    pub fn needs_restart_for(&self, new: &BackendConfig) -> bool {
        // Destructured so that a new field must be sorted into one group or the other.
        let BackendConfig {
            name: _,
            launch,
            enabled: _,
            request_timeout: _,
            handshake_timeout: _,
            health_interval: _,
            health_timeout: _,
            max_message_size,
            stop_grace: _,
            restart: _,
            prefix: _,
            tools_allow: _,
            tools_deny: _,
            start_on_demand: _,
            protocol,
            confirm: _,
            ask: _,
        } = self;
        *launch != new.launch
            || *max_message_size != new.max_message_size
            || *protocol != new.protocol
    }
}

/// Secret values, which `Debug` never shows.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecretValues(Vec<String>);

impl std::fmt::Debug for SecretValues {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "SecretValues({} hidden)", self.0.len())
    }
}

/// Settings of the activity log: the `[activity]` table (TOML only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivitySettings {
    pub enabled: bool,
    /// Keep requests' arguments and answers too, secrets redacted.
    pub payloads: bool,
    /// Records older than this are removed.
    pub max_age: Duration,
    /// The file is kept under this size, oldest records first out.
    pub max_size: u64,
}

impl Default for ActivitySettings {
    fn default() -> Self {
        ActivitySettings {
            enabled: true,
            payloads: false,
            max_age: Duration::from_secs(30 * 24 * 3600),
            max_size: 256 * 1024 * 1024,
        }
    }
}

/// How tools are trusted: the `[security]` table (TOML only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecuritySettings {
    /// A tool never seen before is held until someone approves it, instead of being trusted
    /// on first sight.
    pub approve_new_tools: bool,
}

/// Settings of the desktop app: the `[desktop]` table (TOML only).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DesktopConfig {
    /// Whether a backend entering a crash loop raises a desktop notification.
    pub notify_crash_loop: bool,
}

impl Default for DesktopConfig {
    fn default() -> Self {
        DesktopConfig {
            notify_crash_loop: true,
        }
    }
}

/// The endpoint editors connect to: the `[endpoint]` table (TOML only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointConfig {
    pub listen: SocketAddr,
    /// When set, every request to `/mcp` must carry `Authorization: Bearer <token>`.
    /// `${env:NAME}` references are expanded.
    pub token: Option<String>,
    /// Without `token`, whether `/mcp` requires the token Switchboard generates (see
    /// `transport::token::endpoint_token`). A new config says `true`; one from before says nothing
    /// (`None`) and keeps working without a token, with a warning; `false` is a choice, and
    /// gets none.
    pub require_token: Option<bool>,
    /// Longest request body accepted, in bytes.
    pub max_body_size: usize,
}

impl EndpointConfig {
    /// Whether `/mcp` takes requests without a token only because the config predates the
    /// token (it neither gives one nor says `require_token`).
    pub fn is_open_by_default(&self) -> bool {
        self.token.is_none() && self.require_token.is_none()
    }
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            listen: DEFAULT_LISTEN
                .parse()
                .expect("DEFAULT_LISTEN is a valid socket address"),
            token: None,
            require_token: None,
            max_body_size: DEFAULT_MAX_BODY_SIZE,
        }
    }
}

/// When and how often a backend that exited on its own is started again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Delay before the first restart; it doubles for each further one.
    pub backoff_base: Duration,
    /// Longest delay between two restarts.
    pub backoff_cap: Duration,
    /// Restarts allowed within `window` before the backend counts as crash-looping.
    pub max_restarts: u32,
    pub window: Duration,
    /// Uptime after which the restart budget and the backoff start over.
    pub stable_after: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            backoff_base: Duration::from_secs(1),
            backoff_cap: Duration::from_secs(60),
            max_restarts: 5,
            window: Duration::from_secs(60),
            stable_after: Duration::from_secs(30),
        }
    }
}

/// A problem found in the config file, with its position, as a compiler would report it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub file: PathBuf,
    /// 1-based.
    pub line: usize,
    /// 1-based, counted in characters.
    pub column: usize,
    /// Dotted path of the offending field, like `servers.demo.command`; empty for syntax errors.
    pub field: String,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Severity::Error => f.write_str("error"),
            Severity::Warning => f.write_str("warning"),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}: ",
            self.file.display(),
            self.line,
            self.column,
            self.severity
        )?;
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot write config file {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
    /// The file as a whole cannot be used: a syntax error or a wrong top-level structure.
    #[error("config file {} cannot be used:\n{}", path.display(), render_diagnostics(diagnostics))]
    Invalid {
        path: PathBuf,
        diagnostics: Vec<Diagnostic>,
    },
}

fn render_diagnostics(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(Diagnostic::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads and parses the config file at `path`.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let bytes = std::fs::read(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    from_bytes(path, bytes)
}

/// Parses the bytes of a config file read from `path` (see [`parse`]).
pub fn from_bytes(path: &Path, bytes: Vec<u8>) -> Result<Config, ConfigError> {
    match String::from_utf8(bytes) {
        Ok(text) => parse(path, &text),
        Err(error) => {
            let valid_len = error.utf8_error().valid_up_to();
            let valid_text = std::str::from_utf8(&error.as_bytes()[..valid_len])
                .expect("valid_up_to() marks the end of valid UTF-8");
            let mut reporter = Reporter::new(path, valid_text);
            reporter.error(valid_len, "", "the file is not valid UTF-8");
            Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                diagnostics: reporter.into_diagnostics(),
            })
        }
    }
}

/// Parses config `text` as if read from `path` (a `.json` name selects the JSON form).
///
/// Pure except for what validation must look at: Switchboard's own environment for
/// `${env:NAME}`, the `PATH` search for each command, and the existence of each `cwd`.
pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
    reader::take_secrets_read();
    let format = Format::of(path);
    let mut reporter = Reporter::new(path, text);
    let Sections {
        servers,
        endpoint,
        desktop,
        activity,
        security,
        registry,
        profiles,
    } = match format {
        Format::Toml => toml_sections(text, &mut reporter),
        // The rest of a JSON file belongs to other programs; the other tables keep defaults.
        Format::Json => json_sections(text, &mut reporter),
    };
    if reporter.n_errors() > 0 {
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            diagnostics: reporter.into_diagnostics(),
        });
    }
    // A relative `cwd` is meant relative to the file, not to wherever Switchboard was started.
    let config_dir = path.parent().unwrap_or(Path::new(""));
    let backends = read_servers(&mut reporter, format, config_dir, &servers);
    let endpoint = match endpoint {
        Some(entry) => settings::read_endpoint(&mut reporter, &entry),
        None => EndpointConfig::default(),
    };
    let desktop = match desktop {
        Some(entry) => settings::read_desktop(&mut reporter, &entry),
        None => DesktopConfig::default(),
    };
    let activity = match activity {
        Some(entry) => settings::read_activity(&mut reporter, &entry),
        None => ActivitySettings::default(),
    };
    let security = match security {
        Some(entry) => settings::read_security(&mut reporter, &entry),
        None => SecuritySettings::default(),
    };
    let registry = match registry {
        Some(entry) => settings::read_registry(&mut reporter, &entry),
        None => RegistrySettings::default(),
    };
    let profiles = profile::read_profiles(&mut reporter, format, profiles.as_ref(), &servers);
    Ok(Config {
        path: path.to_path_buf(),
        backends,
        endpoint,
        desktop,
        activity,
        security,
        registry,
        profiles,
        secrets: SecretValues(reader::take_secrets_read()),
        diagnostics: reporter.into_diagnostics(),
    })
}

/// Which of the two accepted shapes a file has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Toml,
    Json,
}

impl Format {
    pub fn of(path: &Path) -> Format {
        let is_json = path
            .extension()
            .is_some_and(|extension| extension.eq_ignore_ascii_case("json"));
        if is_json { Format::Json } else { Format::Toml }
    }

    /// The key that holds the servers, first part of every diagnostic's field path.
    pub fn servers_key(self) -> &'static str {
        match self {
            Format::Toml => "servers",
            Format::Json => "mcpServers",
        }
    }
}

/// The top-level parts of a config file.
#[derive(Default)]
struct Sections {
    servers: Vec<Entry>,
    endpoint: Option<Entry>,
    desktop: Option<Entry>,
    activity: Option<Entry>,
    security: Option<Entry>,
    registry: Option<Entry>,
    profiles: Option<Entry>,
}

/// The `[servers]` entries and the `[endpoint]` and `[desktop]` entries of a TOML document;
/// anything else at the top level is an error. What is wrong inside a table is reported when it
/// is read.
fn toml_sections(text: &str, reporter: &mut Reporter<'_>) -> Sections {
    // Only the first syntax error: the parser can go on, but what it finds after one mistake
    // is mostly the same mistake seen again from further along.
    let document = match DeTable::parse(text) {
        Ok(document) => document,
        Err(error) => {
            let offset = error.span().map_or(0, |span| span.start);
            reporter.error(offset, "", error.message());
            return Sections::default();
        }
    };
    let mut sections = Sections::default();
    for entry in tree::toml_entries(document.get_ref()) {
        match entry.key.as_str() {
            "endpoint" => {
                sections.endpoint = Some(entry);
                continue;
            }
            "desktop" => {
                sections.desktop = Some(entry);
                continue;
            }
            "activity" => {
                sections.activity = Some(entry);
                continue;
            }
            "security" => {
                sections.security = Some(entry);
                continue;
            }
            "registry" => {
                sections.registry = Some(entry);
                continue;
            }
            "profiles" => {
                sections.profiles = Some(entry);
                continue;
            }
            _ => {}
        }
        match (entry.key.as_str(), entry.value.value) {
            ("servers", NodeValue::Table(entries)) => sections.servers = entries,
            ("servers", _) => reporter.error(
                entry.value.offset,
                "servers",
                "expected a table of servers, written as [servers.NAME] sections",
            ),
            (key, _) => reporter.error(
                entry.key_offset,
                key,
                format!(
                    "unknown top-level field `{key}`; the file holds only [servers.NAME] \
                     and [profiles.NAME] sections, and [endpoint], [desktop], [activity], \
                     [security] and [registry] tables"
                ),
            ),
        }
    }
    sections
}

/// The `mcpServers` entries and the `profiles` entry of a JSON document; other top-level keys
/// are someone else's.
fn json_sections(text: &str, reporter: &mut Reporter<'_>) -> Sections {
    let document: &RawValue = match serde_json::from_str(text) {
        Ok(document) => document,
        Err(error) => {
            let offset = reporter.offset_of_json_position(error.line(), error.column());
            reporter.error(offset, "", tree::json_error_message(&error));
            return Sections::default();
        }
    };
    let top_level = match tree::json_entries(text, document) {
        Ok(Some(entries)) => entries,
        Ok(None) => {
            reporter.error(
                tree::offset_in(text, document.get()),
                "",
                "expected a JSON object with an \"mcpServers\" object in it",
            );
            return Sections::default();
        }
        Err(error) => {
            reporter.error(error.offset, "", error.message);
            return Sections::default();
        }
    };
    let mut sections = Sections::default();
    let mut servers_seen = false;
    for entry in &top_level {
        let key = entry.key.as_str();
        if key != "mcpServers" && key != "profiles" {
            continue;
        }
        let seen = match key {
            "mcpServers" => std::mem::replace(&mut servers_seen, true),
            _ => sections.profiles.is_some(),
        };
        if seen {
            reporter.error(entry.key_offset, key, format!("\"{key}\" is given twice"));
            continue;
        }
        let node = match tree::json_node(text, entry.value) {
            Ok(node) => node,
            Err(error) => {
                reporter.error(error.offset, key, error.message);
                continue;
            }
        };
        match (key, node) {
            (
                "mcpServers",
                Node {
                    value: NodeValue::Table(entries),
                    ..
                },
            ) => sections.servers = entries,
            ("mcpServers", node) => reporter.error(
                node.offset,
                "mcpServers",
                format!(
                    "expected an object of servers, found {}",
                    node.describe(Format::Json)
                ),
            ),
            (_, node) => {
                sections.profiles = Some(Entry {
                    key: key.to_owned(),
                    key_offset: entry.key_offset,
                    value: node,
                });
            }
        }
    }
    if !servers_seen {
        reporter.warning(0, "", "no \"mcpServers\" object; no servers are configured");
    }
    sections
}

/// Checks names (validity, clashes) and reads each server; returns the valid ones in order.
fn read_servers(
    reporter: &mut Reporter<'_>,
    format: Format,
    config_dir: &Path,
    servers: &[Entry],
) -> Vec<BackendConfig> {
    // Lower-cased name -> the name as first written and where. Names differing only in case
    // would be confusing in tool prefixes, so they clash.
    let mut first_uses: HashMap<String, (&str, usize)> = HashMap::new();
    let mut backends = Vec::new();
    for server in servers {
        let field = format!("{}.{}", format.servers_key(), server.key);
        if !is_valid_server_name(&server.key) {
            reporter.error(
                server.key_offset,
                &field,
                format!(
                    "invalid server name {:?}: use 1 to {MAX_SERVER_NAME_LEN} ASCII letters, \
                     digits, `_` or `-`",
                    server.key
                ),
            );
            continue;
        }
        let folded_name = server.key.to_ascii_lowercase();
        if let Some(&(first_name, first_offset)) = first_uses.get(&folded_name) {
            let first_line = reporter.line_of(first_offset);
            let message = if first_name == server.key {
                format!(
                    "duplicate server name `{first_name}` (first defined on line {first_line}); \
                     this definition is ignored"
                )
            } else {
                format!(
                    "server name `{}` clashes with `{first_name}` on line {first_line} (names \
                     are compared ignoring case); this definition is ignored",
                    server.key
                )
            };
            reporter.error(server.key_offset, &field, message);
            continue;
        }
        first_uses.insert(folded_name, (&server.key, server.key_offset));
        if let Some(backend) = server::read_backend(reporter, format, config_dir, server) {
            backends.push(backend);
        }
    }
    check_shared_prefixes(reporter, format, servers, backends)
}

/// Two servers may offer tools under one prefix (names that clash then end in `_2`, `_3`, …),
/// but that is rarely meant, so it is worth a warning on the later one. Two servers without a
/// prefix are an error on the later one, which is left out: they offer tools and prompts under
/// their own names, which a clash would change, and any name both offer clashes.
fn check_shared_prefixes(
    reporter: &mut Reporter<'_>,
    format: Format,
    servers: &[Entry],
    backends: Vec<BackendConfig>,
) -> Vec<BackendConfig> {
    let entry = |name: &str| servers.iter().find(|server| server.key == name);
    let mut owners: HashMap<String, String> = HashMap::new();
    let mut kept = Vec::with_capacity(backends.len());
    for backend in backends {
        let field = format!("{}.{}", format.servers_key(), backend.name);
        let Some(owner) = owners.get(&backend.prefix) else {
            owners.insert(backend.prefix.clone(), backend.name.clone());
            kept.push(backend);
            continue;
        };
        if backend.prefix.is_empty() {
            let owner_line = reporter.line_of(entry(owner).map_or(0, prefix_offset));
            reporter.error(
                entry(&backend.name).map_or(0, prefix_offset),
                &format!("{field}.prefix"),
                format!(
                    "`{}` has an empty prefix, as `{owner}` has on line {owner_line}: both offer \
                     tools and prompts under their own names, so a name both offer would clash; \
                     give one of them a prefix. This server is left out",
                    backend.name
                ),
            );
            continue;
        }
        reporter.warning(
            entry(&backend.name).map_or(0, |server| server.key_offset),
            &field,
            format!(
                "`{}` offers its tools and prompts under the prefix `{}`, as `{owner}` does: \
                 a name both offer is told apart only by `_2`, `_3`, … at its end",
                backend.name, backend.prefix
            ),
        );
        kept.push(backend);
    }
    kept
}

/// Where `server` sets its `prefix` (where its name is, if it sets none).
fn prefix_offset(server: &Entry) -> usize {
    match &server.value.value {
        NodeValue::Table(fields) => fields
            .iter()
            .find(|field| field.key == "prefix")
            .map(|field| field.value.offset),
        _ => None,
    }
    .unwrap_or(server.key_offset)
}

/// Whether `name` can name a profile (`[profiles.NAME]`, `/mcp/NAME`): as a server's name.
pub fn is_valid_profile_name(name: &str) -> bool {
    is_valid_server_name(name)
}

pub(crate) fn is_valid_server_name(name: &str) -> bool {
    is_valid_identifier(name, MAX_SERVER_NAME_LEN)
}

/// 1 to `max_len` ASCII letters, digits, `_` or `-`: safe inside tool names as they are.
fn is_valid_identifier(text: &str, max_len: usize) -> bool {
    (1..=max_len).contains(&text.len())
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}
