//! How Switchboard reaches a server: a program it starts ([`ProcessLaunch`]), or a remote server
//! at a URL ([`RemoteServer`]); and the reading of a remote server's fields.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::server::Reader;
use super::tree::Node;
use super::values;

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
    /// `args` and `env` as the config writes them, references unexpanded: what is shown.
    pub written: Written,
    /// Absolute when the config gave one: `~` is expanded and a relative path is taken from the
    /// config file's directory.
    pub cwd: Option<PathBuf>,
}

/// A server reached over HTTP: Streamable HTTP, or the older HTTP+SSE transport.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RemoteServer {
    /// Its MCP endpoint (for the HTTP+SSE transport, the URL of its event stream): an absolute
    /// `http` or `https` URL, references expanded (hosted servers often take a key in it).
    pub url: String,
    /// Sent with every request, references expanded.
    pub headers: BTreeMap<String, String>,
    /// `url` and `headers` as the config writes them, references unexpanded: what is shown.
    pub written: Written,
    /// How long to wait for a connection and for the headers of each answer.
    pub timeout: Duration,
    pub transport: RemoteTransport,
    /// How Switchboard signs in when the server asks for it (HTTP 401).
    pub oauth: OAuthClient,
}

/// Values as the config writes them, `${env:NAME}` and `${secret:NAME}` unexpanded: what the
/// control API and the dashboard show, never the values they stand for.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Written {
    pub args: Vec<String>,
    pub url: String,
    /// Environment values (a local server's) or header values (a remote server's), by name.
    pub values: BTreeMap<String, String>,
}

impl Written {
    /// A value fit to show: as written when it names what it stands for (`${…}`), masked when
    /// the config writes the value itself (it may be a secret).
    pub fn shown_value(value: &str) -> &str {
        if value.contains("${") { value } else { MASKED }
    }
}

/// What stands for a value that is not shown.
pub const MASKED: &str = "••••••";

/// What stands for a masked part of a URL (plain ASCII, so that it needs no escaping).
const URL_MASK: &str = "***";

/// `url` fit to show, log or keep: the value of every query parameter and a password masked, as
/// hosted servers often take a key there.
pub fn shown_url(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return url.split(['?', '#']).next().unwrap_or_default().to_owned();
    };
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some(URL_MASK));
    }
    if parsed.query().is_some() {
        let names: Vec<String> = parsed
            .query_pairs()
            .map(|(name, _)| name.into_owned())
            .collect();
        let mut query = parsed.query_pairs_mut();
        query.clear();
        for name in names {
            query.append_pair(&name, URL_MASK);
        }
    }
    parsed.to_string()
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
    /// Its URL fit to show, log or keep (see [`shown_url`]).
    pub fn shown_url(&self) -> String {
        shown_url(&self.url)
    }

    /// A server at `url` with every other setting at its default.
    pub fn new(url: impl Into<String>) -> RemoteServer {
        let url = url.into();
        RemoteServer {
            written: Written {
                url: url.clone(),
                ..Written::default()
            },
            url,
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
            .finish()
    }
}

impl fmt::Debug for RemoteServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteServer")
            .field("url", &shown_url(&self.url))
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

impl Reader<'_, '_> {
    /// A remote server's URL: absolute, `http` or `https`; plain `http` beyond this machine is
    /// allowed with a warning, since tokens would cross the network in clear.
    /// The URL with its references expanded (a secret may stand in it), and as written.
    pub(super) fn remote_url(&mut self, node: &Node, field: &str) -> Option<(String, String)> {
        let written = self.string(node, field)?;
        let text = match values::expand_references(
            &written,
            &super::server::LOOKUPS,
            values::Other::Refused,
        ) {
            Ok(text) => text,
            Err(error) => {
                self.value_error(node, field, &error);
                return None;
            }
        };
        let url = match url::Url::parse(&text) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => url,
            Ok(_) | Err(_) => {
                self.reporter.error(
                    node.offset,
                    field,
                    format!(
                        "expected an http:// or https:// URL, found {:?}",
                        shown_url(&written)
                    ),
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
        Some((text, written))
    }

    /// Header names and values, values with `${env:NAME}` and `${secret:NAME}` expanded, and
    /// as written.
    pub(super) fn headers(
        &mut self,
        node: &Node,
        field: &str,
    ) -> Option<(BTreeMap<String, String>, BTreeMap<String, String>)> {
        let entries = self.table(node, field)?;
        let mut headers = BTreeMap::new();
        let mut written_values = BTreeMap::new();
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
            written_values.insert(entry.key.clone(), written);
        }
        Some((headers, written_values))
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

fn is_loopback_host(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(address)) => address.is_loopback(),
        Some(url::Host::Ipv6(address)) => address.is_loopback(),
        None => false,
    }
}
