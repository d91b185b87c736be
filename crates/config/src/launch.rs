//! How Switchboard reaches a server: a program it starts ([`ProcessLaunch`]), perhaps in a
//! [`Sandbox`], or a remote server at a URL ([`RemoteServer`]); and the reading of a remote
//! server's fields.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::reader::{LOOKUPS, Reader};
use super::sandbox::Sandbox;
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
    /// What the program may reach, when it runs sandboxed (`[servers.NAME.sandbox]`).
    pub sandbox: Option<Sandbox>,
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
    /// How Switchboard signs in when the server asks for it (HTTP 401); boxed, since it is
    /// large and most servers leave it at its default.
    pub oauth: Box<OAuthClient>,
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

/// Which HTTP transport a remote server speaks: as its config sets it (`transport`), and as its
/// link finds it (the backend's status publishes this value, spelled as the config spells it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
pub enum RemoteTransport {
    /// Not settled: Streamable HTTP, or HTTP+SSE if the server answers an `initialize` POST as
    /// only such servers do (404 or 405).
    #[default]
    #[serde(rename = "auto")]
    Auto,
    #[serde(rename = "streamable-http")]
    StreamableHttp,
    /// The HTTP+SSE transport of MCP 2024-11-05: a GET stream, and POSTs to the endpoint it names.
    #[serde(rename = "sse")]
    HttpSse,
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
    /// The authorization server the client was registered with: the only one its secret, key or
    /// assertions go to. Required with a `client_secret` or `private_key`.
    pub issuer: Option<String>,
    /// A Client ID Metadata Document (an https URL) used as the client id where the
    /// authorization server accepts one, instead of registering.
    pub client_metadata_url: Option<String>,
    /// How Switchboard gets a token: through a person in the browser, or on its own.
    pub grant: OAuthGrant,
    /// A PEM private key (PKCS#8, or SEC 1 for EC) that signs client assertions
    /// (`private_key_jwt`) instead of sending a secret (references expanded).
    pub private_key: Option<String>,
    /// For `grant = "jwt_bearer"`: the file holding the JWT assertion (a workload identity
    /// token), read at each token request since such tokens are rotated.
    pub assertion_file: Option<PathBuf>,
    /// For `grant = "identity_assertion"`: the enterprise identity provider.
    pub identity_provider: Option<IdentityProvider>,
}

/// How Switchboard gets a token for a remote server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum OAuthGrant {
    /// A person signs in in the browser (authorization code with PKCE).
    #[default]
    AuthorizationCode,
    /// The client's own credentials (OAuth client credentials).
    ClientCredentials,
    /// A JWT assertion from a file (RFC 7523), such as a workload identity token.
    JwtBearer,
    /// An ID token from the enterprise identity provider, exchanged there for an identity
    /// assertion grant (RFC 8693) that the authorization server takes as a JWT bearer grant.
    IdentityAssertion,
}

/// The enterprise identity provider of `grant = "identity_assertion"`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct IdentityProvider {
    /// Its token endpoint, where the ID token is exchanged.
    pub token_endpoint: String,
    /// Switchboard's client id there.
    pub client_id: Option<String>,
    /// Its secret there (references expanded).
    pub client_secret: Option<String>,
    /// The file holding the person's ID token from that provider.
    pub id_token_file: PathBuf,
}

impl OAuthGrant {
    /// Whether a person must sign in in the browser, rather than Switchboard on its own.
    pub fn needs_a_person(self) -> bool {
        self == OAuthGrant::AuthorizationCode
    }

    /// As written in the config.
    pub fn name(self) -> &'static str {
        match self {
            OAuthGrant::AuthorizationCode => "authorization_code",
            OAuthGrant::ClientCredentials => "client_credentials",
            OAuthGrant::JwtBearer => "jwt_bearer",
            OAuthGrant::IdentityAssertion => "identity_assertion",
        }
    }
}

impl OAuthClient {
    /// The values of these settings that are secrets.
    pub(crate) fn secret_values(&self) -> impl Iterator<Item = &String> {
        let identity = self
            .identity_provider
            .as_ref()
            .and_then(|provider| provider.client_secret.as_ref());
        self.client_secret
            .iter()
            .chain(self.private_key.iter())
            .chain(identity)
    }
}

impl Launch {
    /// The program, if this is a local server.
    pub(crate) fn process(&self) -> Option<&ProcessLaunch> {
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
            oauth: Box::default(),
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
            .field("issuer", &self.issuer)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("grant", &self.grant)
            .field("private_key", &self.private_key.as_ref().map(|_| "…"))
            .field("assertion_file", &self.assertion_file)
            .field("identity_provider", &self.identity_provider)
            .finish()
    }
}

impl fmt::Debug for IdentityProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdentityProvider")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("id_token_file", &self.id_token_file)
            .finish()
    }
}

/// The fields of a remote server's entry; the others (`command`, `args`, `env`, `cwd`) belong to
/// a local one.
pub(super) const REMOTE_FIELDS: &[&str] = &["url", "headers", "timeout", "transport", "oauth"];
const OAUTH_FIELDS: &[&str] = &[
    "client_id",
    "client_secret",
    "scopes",
    "issuer",
    "client_metadata_url",
    "grant",
    "private_key",
    "assertion_file",
    "idp_token_endpoint",
    "idp_client_id",
    "idp_client_secret",
    "id_token_file",
];

impl Reader<'_, '_> {
    /// A remote server's URL: absolute, `http` or `https`; plain `http` beyond this machine is
    /// allowed with a warning, since tokens would cross the network in clear.
    /// The URL with its references expanded (a secret may stand in it), and as written.
    pub(super) fn remote_url(&mut self, node: &Node, field: &str) -> Option<(String, String)> {
        let written = self.string(node, field)?;
        let text = match values::expand_references(&written, &LOOKUPS, values::Other::Refused) {
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
        let name_problem = |name: &str| {
            http::HeaderName::from_bytes(name.as_bytes())
                .is_err()
                .then(|| format!("{name:?} is not a valid HTTP header name"))
        };
        // Checked after expansion.
        let value_problem = |value: &str| {
            http::HeaderValue::from_str(value).is_err().then_some(
                "the value cannot be sent in an HTTP header (control characters or line ends)",
            )
        };
        self.expanded_table(node, field, name_problem, value_problem)
    }

    pub(super) fn remote_transport(&mut self, node: &Node, field: &str) -> Option<RemoteTransport> {
        let text = self.string(node, field)?;
        match text.as_str() {
            "auto" => Some(RemoteTransport::Auto),
            "streamable-http" => Some(RemoteTransport::StreamableHttp),
            "sse" => Some(RemoteTransport::HttpSse),
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

    pub(super) fn oauth(&mut self, node: &Node, field: &str) -> Option<Box<OAuthClient>> {
        let entries = self.table(node, field)?;
        let errors_before = self.reporter.n_errors();
        let mut oauth = OAuthClient::default();
        let mut idp_token_endpoint = None;
        let mut idp_client_id = None;
        let mut idp_client_secret = None;
        let mut id_token_file = None;
        // Where each field's key is, to point at the one that does not fit the others.
        let mut keys: BTreeMap<&str, usize> = BTreeMap::new();
        for entry in self.unique_entries(entries, field) {
            let field = format!("{field}.{}", entry.key);
            let value = &entry.value;
            keys.insert(entry.key.as_str(), entry.key_offset);
            match entry.key.as_str() {
                "client_id" => oauth.client_id = self.string(value, &field),
                "client_secret" => oauth.client_secret = self.expanded(value, &field),
                "scopes" => oauth.scopes = self.strings(value, &field),
                "issuer" => oauth.issuer = self.secure_url(value, &field, "the issuer"),
                "client_metadata_url" => {
                    oauth.client_metadata_url = self.client_metadata_url(value, &field);
                }
                "grant" => {
                    if let Some(grant) = self.grant(value, &field) {
                        oauth.grant = grant;
                    }
                }
                "private_key" => oauth.private_key = self.private_key(value, &field),
                "assertion_file" => oauth.assertion_file = self.file(value, &field),
                "idp_token_endpoint" => {
                    idp_token_endpoint = self.secure_url(value, &field, "a token endpoint");
                }
                "idp_client_id" => idp_client_id = self.string(value, &field),
                "idp_client_secret" => idp_client_secret = self.expanded(value, &field),
                "id_token_file" => id_token_file = self.file(value, &field),
                _ => self.unknown_field(entry, &field, OAUTH_FIELDS),
            }
        }
        if self.reporter.n_errors() > errors_before {
            return Some(Box::new(oauth));
        }
        if let (Some(token_endpoint), Some(id_token_file)) = (&idp_token_endpoint, &id_token_file) {
            oauth.identity_provider = Some(IdentityProvider {
                token_endpoint: token_endpoint.clone(),
                client_id: idp_client_id.clone(),
                client_secret: idp_client_secret.clone(),
                id_token_file: id_token_file.clone(),
            });
        }
        if let Some(message) = oauth_mismatch(&oauth, &keys) {
            let offset = message.key.and_then(|key| keys.get(key)).copied();
            let field = match message.key {
                Some(key) if offset.is_some() => format!("{field}.{key}"),
                _ => field.to_owned(),
            };
            self.reporter
                .error(offset.unwrap_or(node.offset), &field, message.text);
        }
        Some(Box::new(oauth))
    }

    /// A string with `${env:NAME}` and `${secret:NAME}` expanded.
    fn expanded(&mut self, node: &Node, field: &str) -> Option<String> {
        let written = self.string(node, field)?;
        match values::expand_references(&written, &LOOKUPS, values::Other::Refused) {
            Ok(value) => Some(value),
            Err(error) => {
                self.value_error(node, field, &error);
                None
            }
        }
    }

    /// A URL that secrets go to: https, or http on this machine; no query or fragment.
    fn secure_url(&mut self, node: &Node, field: &str, what: &str) -> Option<String> {
        let text = self.string(node, field)?;
        let secure = url::Url::parse(&text).is_ok_and(|url| {
            let scheme_ok =
                url.scheme() == "https" || (url.scheme() == "http" && is_loopback_host(&url));
            scheme_ok && url.has_host() && url.query().is_none() && url.fragment().is_none()
        });
        if !secure {
            self.reporter.error(
                node.offset,
                field,
                format!(
                    "expected {what}, an https:// URL (http:// only on this machine) without a \
                     query, found {text:?}"
                ),
            );
            return None;
        }
        Some(text)
    }

    /// A Client ID Metadata Document's URL: https, with a path (the client id it stands for).
    fn client_metadata_url(&mut self, node: &Node, field: &str) -> Option<String> {
        let text = self.string(node, field)?;
        let valid = url::Url::parse(&text).is_ok_and(|url| {
            url.scheme() == "https"
                && url.has_host()
                && url.path() != "/"
                && url.fragment().is_none()
        });
        if !valid {
            self.reporter.error(
                node.offset,
                field,
                format!(
                    "expected the https:// URL of Switchboard's client metadata document, with a \
                     path, found {text:?}"
                ),
            );
            return None;
        }
        Some(text)
    }

    fn grant(&mut self, node: &Node, field: &str) -> Option<OAuthGrant> {
        let text = self.string(node, field)?;
        let grants = [
            OAuthGrant::AuthorizationCode,
            OAuthGrant::ClientCredentials,
            OAuthGrant::JwtBearer,
            OAuthGrant::IdentityAssertion,
        ];
        if let Some(grant) = grants.into_iter().find(|grant| grant.name() == text) {
            return Some(grant);
        }
        self.reporter.error(
            node.offset,
            field,
            format!(
                "unknown grant {text:?}; expected {}",
                grants
                    .iter()
                    .map(|grant| format!("\"{}\"", grant.name()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
        None
    }

    /// A PEM private key, references expanded; checked for its markers only (never shown).
    fn private_key(&mut self, node: &Node, field: &str) -> Option<String> {
        let key = self.expanded(node, field)?;
        let pem = [
            "-----BEGIN PRIVATE KEY-----",
            "-----BEGIN EC PRIVATE KEY-----",
        ]
        .iter()
        .any(|marker| key.contains(marker));
        if !pem {
            self.reporter.error(
                node.offset,
                field,
                "expected a PEM private key: PKCS#8 (`-----BEGIN PRIVATE KEY-----`) or SEC 1 \
                 (`-----BEGIN EC PRIVATE KEY-----`); `openssl pkcs8 -topk8 -nocrypt` converts \
                 others",
            );
            return None;
        }
        Some(key)
    }

    /// A file's path: `~` expanded, a relative path taken from the config file's directory. It
    /// need not exist yet: it is read when a token is requested.
    fn file(&mut self, node: &Node, field: &str) -> Option<PathBuf> {
        let written = self.string(node, field)?;
        let home = directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf());
        match values::expand_home(&written, home.as_deref()) {
            Ok(expanded) => Some(self.config_dir.join(expanded)),
            Err(error) => {
                self.value_error(node, field, &error);
                None
            }
        }
    }
}

/// What does not fit together in an `oauth` table, and at which field's key (else the table).
struct Mismatch {
    key: Option<&'static str>,
    text: String,
}

fn oauth_mismatch(oauth: &OAuthClient, keys: &BTreeMap<&str, usize>) -> Option<Mismatch> {
    let at = |key: &'static str, text: String| {
        Some(Mismatch {
            key: Some(key),
            text,
        })
    };
    let table = |text: &str| {
        Some(Mismatch {
            key: None,
            text: text.to_owned(),
        })
    };
    let grant = oauth.grant;
    if oauth.client_secret.is_some() && oauth.client_id.is_none() {
        return table("a `client_secret` needs the `client_id` it belongs to");
    }
    if oauth.private_key.is_some() && oauth.client_id.is_none() {
        return table("a `private_key` needs the `client_id` whose assertions it signs");
    }
    if (oauth.client_secret.is_some() || oauth.private_key.is_some()) && oauth.issuer.is_none() {
        return table(
            "a client's secret or key goes only to the authorization server it was registered \
             with: add `issuer = \"https://…\"`, that server's issuer (the `issuer` of its \
             metadata)",
        );
    }
    if oauth.client_metadata_url.is_some() && oauth.client_id.is_some() {
        return at(
            "client_metadata_url",
            "a server has a `client_id` or a `client_metadata_url` (which is a client id), not \
             both"
                .to_owned(),
        );
    }
    let only_for = |key: &'static str, wanted: OAuthGrant| {
        (keys.contains_key(key) && grant != wanted).then(|| Mismatch {
            key: Some(key),
            text: format!("`{key}` is for `grant = \"{}\"`", wanted.name()),
        })
    };
    let misplaced = [
        only_for("client_metadata_url", OAuthGrant::AuthorizationCode),
        only_for("assertion_file", OAuthGrant::JwtBearer),
        only_for("idp_token_endpoint", OAuthGrant::IdentityAssertion),
        only_for("idp_client_id", OAuthGrant::IdentityAssertion),
        only_for("idp_client_secret", OAuthGrant::IdentityAssertion),
        only_for("id_token_file", OAuthGrant::IdentityAssertion),
    ];
    if let Some(mismatch) = misplaced.into_iter().flatten().next() {
        return Some(mismatch);
    }
    let needs = |what: &str| table(&format!("`grant = \"{}\"` needs {what}", grant.name()));
    match grant {
        OAuthGrant::AuthorizationCode => None,
        OAuthGrant::ClientCredentials => {
            let credential = oauth.client_secret.is_some() || oauth.private_key.is_some();
            match oauth.client_id.is_some() && credential {
                true => None,
                false => needs("`client_id` and its `client_secret` or `private_key`"),
            }
        }
        OAuthGrant::JwtBearer => match oauth.assertion_file {
            Some(_) => None,
            None => needs("`assertion_file`, the file holding the JWT assertion"),
        },
        OAuthGrant::IdentityAssertion => {
            let provider = oauth.identity_provider.as_ref();
            if provider.is_none() {
                return needs(
                    "`idp_token_endpoint` (the identity provider's token endpoint) and \
                     `id_token_file` (the file holding your ID token from it)",
                );
            }
            if provider.is_some_and(|provider| {
                provider.client_secret.is_some() && provider.client_id.is_none()
            }) {
                return at(
                    "idp_client_secret",
                    "an `idp_client_secret` needs the `idp_client_id` it belongs to".to_owned(),
                );
            }
            match oauth.client_id {
                Some(_) => None,
                None => needs("`client_id`, Switchboard's client at the authorization server"),
            }
        }
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
