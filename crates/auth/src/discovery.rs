//! Finding who signs Switchboard in to a remote server (MCP authorization, 2026-07-28): the
//! server's protected resource metadata (RFC 9728), then its authorization server's metadata
//! (RFC 8414, or OpenID Connect discovery), each checked before it is believed; and, for a
//! server of the 2025-03-26 revision, which has no protected resource metadata, the
//! authorization server at the server's own origin, else that revision's default endpoints.

use serde::Deserialize;

use super::reach::{Bounds, Reach};
use super::{Auth, AuthError, canonical_resource, same_issuer};
use config::RemoteServer;
use wire::method::Method;

/// What a 401 or 403's `WWW-Authenticate: Bearer …` (or `DPoP …`) says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// Where the server's protected resource metadata is.
    pub(crate) resource_metadata: Option<String>,
    /// The scopes the server asks for.
    pub(crate) scope: Option<String>,
    /// Why the request was refused: `invalid_token`, `insufficient_scope`, `use_dpop_nonce`…
    pub(crate) error: Option<String>,
    /// Whether the server offers the `DPoP` scheme: it takes DPoP-bound tokens (RFC 9449 §7.1).
    pub(crate) dpop: bool,
}

impl Challenge {
    /// Reads the parameters of the first `Bearer` or `DPoP` challenge of a header, which may
    /// hold several challenges (quoted or token values).
    pub(crate) fn parse(header: &str) -> Challenge {
        let challenges = challenges(header);
        let mut challenge = Challenge {
            dpop: challenges
                .iter()
                .any(|(scheme, _)| scheme.eq_ignore_ascii_case("dpop")),
            ..Challenge::default()
        };
        let Some((_, params)) = challenges.into_iter().find(|(scheme, _)| {
            scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("dpop")
        }) else {
            return challenge;
        };
        for (name, value) in params {
            match name.to_ascii_lowercase().as_str() {
                "resource_metadata" => challenge.resource_metadata = Some(value),
                "scope" => challenge.scope = Some(value),
                "error" => challenge.error = Some(value),
                _ => {}
            }
        }
        challenge
    }

    /// The scopes asked for, one by one.
    pub(crate) fn scopes(&self) -> Vec<String> {
        self.scope
            .as_deref()
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }
}

/// The challenges of a `WWW-Authenticate` header: each scheme with its parameters. A new
/// challenge starts where a parameter's name has a word before it (`…", DPoP algs="…"`).
fn challenges(header: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut found: Vec<(String, Vec<(String, String)>)> = Vec::new();
    if !header.contains('=') {
        let scheme = header.trim().trim_end_matches(',').trim();
        if !scheme.is_empty() {
            found.push((scheme.to_owned(), Vec::new()));
        }
        return found;
    }
    for (name, value) in auth_params(header) {
        match name.rsplit_once(char::is_whitespace) {
            Some((before, name)) => {
                let scheme = before.split_whitespace().last().unwrap_or_default();
                found.push((scheme.to_owned(), vec![(name.to_owned(), value)]));
            }
            // A bare parameter before any scheme belongs to none.
            None => {
                if let Some((_, params)) = found.last_mut() {
                    params.push((name, value));
                }
            }
        }
    }
    found
}

/// `name=value` pairs of an auth challenge, values unquoted.
fn auth_params(text: &str) -> Vec<(String, String)> {
    let mut params = Vec::new();
    let mut rest = text.trim_start_matches([' ', ',']);
    while let Some(equals) = rest.find('=') {
        let name = rest[..equals]
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_owned();
        rest = rest[equals + 1..].trim_start();
        let value;
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut text = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((index, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            text.push(escaped);
                        }
                    }
                    '"' => {
                        end = index + 1;
                        break;
                    }
                    c => text.push(c),
                }
            }
            value = text;
            rest = &quoted[end.min(quoted.len())..];
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            value = rest[..end].trim().to_owned();
            rest = &rest[end..];
        }
        params.push((name, value));
        rest = rest.trim_start_matches([' ', ',']);
    }
    params
}

/// A protected resource's metadata (RFC 9728), as much as sign-in uses.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ResourceMetadata {
    pub(crate) resource: Option<String>,
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    pub(crate) scopes_supported: Option<Vec<String>>,
    /// Whether it takes only DPoP-bound tokens.
    #[serde(default)]
    pub(crate) dpop_bound_access_tokens_required: bool,
}

/// An authorization server's metadata (RFC 8414 / OpenID Connect discovery).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ServerMetadata {
    pub(crate) issuer: String,
    /// Absent from servers that grant no authorization codes (client credentials only).
    #[serde(default)]
    pub(crate) authorization_endpoint: String,
    pub(crate) token_endpoint: String,
    pub(crate) registration_endpoint: Option<String>,
    pub(crate) scopes_supported: Option<Vec<String>>,
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) authorization_response_iss_parameter_supported: bool,
    /// How clients may authenticate at the token endpoint; RFC 8414's default when absent is
    /// `client_secret_basic`.
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// The algorithms of DPoP proofs it takes (RFC 9449); absent: no DPoP.
    pub(crate) dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Whether it takes a Client ID Metadata Document's URL as a client id.
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: bool,
}

/// Where the protected resource metadata of the server at `url` may be, in the order to try:
/// under the path of its endpoint, then at the root.
pub(crate) fn resource_metadata_urls(url: &reqwest::Url) -> Vec<reqwest::Url> {
    let mut urls = Vec::new();
    let path = url.path().trim_end_matches('/');
    let mut base = url.clone();
    base.set_query(None);
    base.set_fragment(None);
    if !path.is_empty() {
        let mut at_path = base.clone();
        at_path.set_path(&format!("/.well-known/oauth-protected-resource{path}"));
        urls.push(at_path);
    }
    let mut at_root = base;
    at_root.set_path("/.well-known/oauth-protected-resource");
    urls.push(at_root);
    urls
}

/// Where the metadata of the authorization server `issuer` may be, in the order the MCP spec
/// gives: RFC 8414 and OpenID Connect with the path inserted, then OpenID Connect appended.
pub(crate) fn server_metadata_urls(issuer: &reqwest::Url) -> Vec<reqwest::Url> {
    let path = issuer.path().trim_end_matches('/');
    let at = |path: String| {
        let mut url = issuer.clone();
        url.set_path(&path);
        url.set_query(None);
        url
    };
    if path.is_empty() {
        vec![
            at("/.well-known/oauth-authorization-server".to_owned()),
            at("/.well-known/openid-configuration".to_owned()),
        ]
    } else {
        vec![
            at(format!("/.well-known/oauth-authorization-server{path}")),
            at(format!("/.well-known/openid-configuration{path}")),
            at(format!("{path}/.well-known/openid-configuration")),
        ]
    }
}

impl ServerMetadata {
    /// What a server of the 2025-03-26 revision without metadata has: its origin as the
    /// authorization server, with `/authorize`, `/token` and `/register` there.
    pub(crate) fn defaults(origin: &reqwest::Url) -> ServerMetadata {
        let at = |path: &str| {
            let mut url = origin.clone();
            url.set_path(path);
            url.set_query(None);
            url.set_fragment(None);
            url.to_string()
        };
        ServerMetadata {
            issuer: origin.origin().ascii_serialization(),
            authorization_endpoint: at("/authorize"),
            token_endpoint: at("/token"),
            registration_endpoint: Some(at("/register")),
            scopes_supported: None,
            // That revision requires PKCE with S256 of every client and server.
            code_challenge_methods_supported: Some(vec!["S256".to_owned()]),
            authorization_response_iss_parameter_supported: false,
            token_endpoint_auth_methods_supported: None,
            dpop_signing_alg_values_supported: None,
            client_id_metadata_document_supported: false,
        }
    }

    /// Checks the metadata fetched for `issuer`: the same issuer, endpoints within the sign-in's
    /// `bounds`, and, when a person signs in in the browser (`pkce`), PKCE with S256.
    pub(crate) fn checked(
        self,
        issuer: &str,
        bounds: &Bounds,
        pkce: bool,
    ) -> Result<ServerMetadata, AuthError> {
        if self.issuer != issuer {
            return Err(AuthError::Metadata(format!(
                "the authorization server's metadata names the issuer {:?}, not {issuer:?}, \
                 whose metadata it claims to be; refused",
                self.issuer
            )));
        }
        let authorization = (pkce || !self.authorization_endpoint.is_empty())
            .then_some(&self.authorization_endpoint);
        for (what, endpoint) in [
            ("authorization_endpoint", authorization),
            ("token_endpoint", Some(&self.token_endpoint)),
            ("registration_endpoint", self.registration_endpoint.as_ref()),
        ] {
            let Some(endpoint) = endpoint else { continue };
            let what = format!("the authorization server's {what}");
            let url = reqwest::Url::parse(endpoint).map_err(|_| {
                AuthError::Metadata(format!("{what} {endpoint:?} is not a URL; refused"))
            })?;
            bounds.check(&url, &what)?;
        }
        let s256 = self
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|methods| methods.iter().any(|method| method == "S256"));
        if pkce && !s256 {
            return Err(AuthError::Metadata(format!(
                "the authorization server {issuer} does not say it supports PKCE with S256 \
                 (code_challenge_methods_supported), which MCP sign-in requires"
            )));
        }
        Ok(self)
    }

    /// Whether the token endpoint takes client authentication `method`.
    pub(crate) fn takes_auth_method(&self, method: &str) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(methods) => methods.iter().any(|supported| supported == method),
            None => method == "client_secret_basic",
        }
    }

    /// Whether its token endpoint takes DPoP proofs signed the way Switchboard signs them.
    pub(crate) fn takes_dpop(&self) -> bool {
        self.dpop_signing_alg_values_supported
            .as_ref()
            .is_some_and(|algorithms| {
                algorithms
                    .iter()
                    .any(|algorithm| algorithm == super::dpop::DPOP_ALGORITHM)
            })
    }
}

/// What discovery found for a server: where it signs in, and for what.
pub(crate) struct Discovered {
    pub(crate) bounds: Bounds,
    /// The resource indicator of the server.
    pub(crate) resource: String,
    pub(crate) metadata: ServerMetadata,
    /// The challenge discovery started from.
    pub(crate) challenge: Challenge,
    /// The scopes the protected resource metadata lists.
    pub(crate) scopes_supported: Option<Vec<String>>,
    /// Whether the server takes DPoP-bound tokens (its challenge offers the `DPoP` scheme, or its
    /// metadata requires them).
    pub(crate) takes_dpop: bool,
}

impl Discovered {
    /// A DPoP key to bind the tokens to, where both the server and its authorization server
    /// take DPoP: a token bound to a key would be refused by a server that takes only bearer
    /// tokens.
    pub(crate) fn dpop_key(&self) -> Option<super::dpop::DpopKey> {
        (self.takes_dpop && self.metadata.takes_dpop()).then(super::dpop::DpopKey::generate)
    }

    /// The scopes to ask for: the config's, else those the server's challenge names, else all
    /// the server supports; with those a step-up asked for added.
    pub(crate) fn scopes(&self, server: &RemoteServer) -> Vec<String> {
        let mut scopes = match (&server.oauth.scopes, &self.challenge.scope) {
            (Some(configured), _) => configured.clone(),
            (None, Some(_)) => self.challenge.scopes(),
            (None, None) => self.scopes_supported.clone().unwrap_or_default(),
        };
        if self.challenge.error.as_deref() == Some("insufficient_scope") {
            for scope in self.challenge.scopes() {
                if !scopes.contains(&scope) {
                    scopes.push(scope);
                }
            }
        }
        scopes
    }
}

impl Auth {
    /// Finds where `server` signs in: its protected resource metadata (where its last challenge
    /// says, else where the spec says), the authorization server it names (the pinned one, if
    /// the config pins one), and that server's metadata; for a server without protected
    /// resource metadata (2025-03-26), the authorization server at its origin. `pkce`: a person
    /// signs in in the browser.
    pub(crate) async fn discover(
        &self,
        backend: &str,
        server: &RemoteServer,
        pkce: bool,
    ) -> Result<Discovered, AuthError> {
        let url = reqwest::Url::parse(&server.url)
            .map_err(|error| AuthError::Metadata(format!("{}: {error}", server.shown_url())))?;
        let bounds = Bounds::of(&url).await;
        let http = self.http(bounds.reach());
        let kept = self
            .challenges
            .lock()
            .expect("challenges lock")
            .get(backend)
            .cloned()
            .unwrap_or_default();
        let challenge = match kept.resource_metadata {
            Some(_) => kept,
            None => self.probe(server).await.unwrap_or(kept),
        };
        let pinned = server.oauth.issuer.as_deref();
        let Some(resource_metadata) = self
            .resource_metadata(http, &url, &challenge, &bounds)
            .await?
        else {
            // The 2025-03-26 revision: the server's origin is its authorization server.
            let origin = url.origin().ascii_serialization();
            if let Some(pinned) = pinned.filter(|pinned| !same_issuer(pinned, &origin)) {
                return Err(AuthError::Metadata(format!(
                    "{} publishes no protected resource metadata, so its authorization server \
                     is at its origin, {origin}, not at {pinned}, which `oauth.issuer` pins; \
                     refused",
                    server.shown_url()
                )));
            }
            let metadata = match self.find_server_metadata(http, &origin, &bounds).await? {
                Some(metadata) => metadata.checked(&origin, &bounds, pkce)?,
                None => ServerMetadata::defaults(&url),
            };
            return Ok(Discovered {
                bounds,
                resource: canonical_resource(&url, None)?,
                metadata,
                takes_dpop: challenge.dpop,
                challenge,
                scopes_supported: None,
            });
        };
        let resource = canonical_resource(&url, resource_metadata.resource.as_deref())?;
        let listed = &resource_metadata.authorization_servers;
        let issuer = match pinned {
            Some(pinned) => listed
                .iter()
                .find(|issuer| same_issuer(issuer, pinned))
                .cloned()
                .ok_or_else(|| {
                    AuthError::Metadata(format!(
                        "{} names the authorization server {}, not {pinned}, which \
                         `oauth.issuer` pins: the client's secret or key goes nowhere else; \
                         refused. If the server has moved to another authorization server, \
                         check that it has and change `oauth.issuer`",
                        server.shown_url(),
                        match listed.is_empty() {
                            true => "(none)".to_owned(),
                            false => listed.join(", "),
                        }
                    ))
                })?,
            None => listed.first().cloned().ok_or_else(|| {
                AuthError::Metadata(format!(
                    "{}'s protected resource metadata names no authorization server",
                    server.shown_url()
                ))
            })?,
        };
        let issuer_url = reqwest::Url::parse(&issuer).map_err(|_| {
            AuthError::Metadata(format!("the authorization server {issuer:?} is not a URL"))
        })?;
        bounds.check(&issuer_url, "the authorization server")?;
        let metadata = self
            .find_server_metadata(http, &issuer, &bounds)
            .await?
            .ok_or_else(|| {
                AuthError::Metadata(format!(
                    "the authorization server {issuer} publishes no metadata where OAuth and \
                     OpenID Connect say it should"
                ))
            })?
            .checked(&issuer, &bounds, pkce)?;
        Ok(Discovered {
            bounds,
            resource,
            metadata,
            takes_dpop: challenge.dpop || resource_metadata.dpop_bound_access_tokens_required,
            challenge,
            scopes_supported: resource_metadata.scopes_supported,
        })
    }

    /// The challenge of an unauthenticated request to the server, if it answers 401 with one.
    async fn probe(&self, server: &RemoteServer) -> Option<Challenge> {
        let probe = serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": Method::Initialize,
            "params": {
                "protocolVersion": wire::era::SESSION_PROTOCOL_VERSIONS[0],
                "capabilities": {},
                "clientInfo": {"name": "switchboard", "version": env!("CARGO_PKG_VERSION")},
            },
        });
        // The server's own URL, as the config gives it.
        let response = self
            .http(Reach::Machine)
            .post(&server.url)
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .json(&probe)
            .send()
            .await
            .ok()?;
        let header = response.headers().get(reqwest::header::WWW_AUTHENTICATE)?;
        Some(Challenge::parse(header.to_str().ok()?))
    }

    /// The server's protected resource metadata: where its challenge says (which must be
    /// there), else where the spec says; `None` if it publishes none.
    async fn resource_metadata(
        &self,
        http: &reqwest::Client,
        url: &reqwest::Url,
        challenge: &Challenge,
        bounds: &Bounds,
    ) -> Result<Option<ResourceMetadata>, AuthError> {
        let Some(named) = &challenge.resource_metadata else {
            for candidate in resource_metadata_urls(url) {
                if let Some(metadata) = self.fetch_json(http, &candidate).await? {
                    return Ok(Some(metadata));
                }
            }
            return Ok(None);
        };
        let candidate = reqwest::Url::parse(named).map_err(|_| {
            AuthError::Metadata(format!(
                "{url} named resource metadata at {named:?}, which is not a URL"
            ))
        })?;
        bounds.check(&candidate, "the protected resource metadata")?;
        match self.fetch_json(http, &candidate).await? {
            Some(metadata) => Ok(Some(metadata)),
            None => Err(AuthError::Metadata(format!(
                "{url} named its protected resource metadata at {candidate}, which has none, so \
                 Switchboard cannot tell where to sign in"
            ))),
        }
    }

    /// The metadata of the authorization server `issuer`, where OAuth and OpenID Connect say it
    /// is; `None` if there is none.
    async fn find_server_metadata(
        &self,
        http: &reqwest::Client,
        issuer: &str,
        bounds: &Bounds,
    ) -> Result<Option<ServerMetadata>, AuthError> {
        let issuer_url = reqwest::Url::parse(issuer).map_err(|_| {
            AuthError::Metadata(format!("the authorization server {issuer:?} is not a URL"))
        })?;
        for candidate in server_metadata_urls(&issuer_url) {
            bounds.check(&candidate, "the authorization server's metadata")?;
            if let Some(metadata) = self.fetch_json(http, &candidate).await? {
                return Ok(Some(metadata));
            }
        }
        Ok(None)
    }

    /// GETs JSON from `url`: `None` if there is none there (404 and the like), an error if
    /// what is there is unusable.
    async fn fetch_json<T: serde::de::DeserializeOwned>(
        &self,
        http: &reqwest::Client,
        url: &reqwest::Url,
    ) -> Result<Option<T>, AuthError> {
        let response = http
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|error| {
                AuthError::Request(format!(
                    "{url} did not answer: {}",
                    wire::http_error::describe(&error)
                ))
            })?;
        let status = response.status();
        if status.is_redirection() {
            return Err(AuthError::Metadata(format!(
                "{url} redirects elsewhere (HTTP {}), and metadata is taken only from where it \
                 was asked for; refused",
                status.as_u16()
            )));
        }
        if !status.is_success() {
            return Ok(None);
        }
        let body = response
            .bytes()
            .await
            .map_err(|error| AuthError::Request(format!("{url}: {error}")))?;
        serde_json::from_slice(&body)
            .map(Some)
            .map_err(|error| AuthError::Metadata(format!("{url} is not valid metadata: {error}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_give_their_metadata_url_and_scope() {
        let challenge = Challenge::parse(
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read files:write", error="invalid_token""#,
        );
        assert_eq!(
            challenge,
            Challenge {
                resource_metadata: Some(
                    "https://mcp.example.com/.well-known/oauth-protected-resource".to_owned()
                ),
                scope: Some("files:read files:write".to_owned()),
                error: Some("invalid_token".to_owned()),
                dpop: false,
            }
        );
        assert_eq!(
            Challenge::parse("Bearer realm=x,scope=read"),
            Challenge {
                resource_metadata: None,
                scope: Some("read".to_owned()),
                error: None,
                dpop: false,
            }
        );
        // DPoP challenges, and several challenges in one header.
        let dpop = Challenge::parse(
            r#"DPoP error="use_dpop_nonce", resource_metadata="https://mcp.example/prm""#,
        );
        assert_eq!(dpop.error.as_deref(), Some("use_dpop_nonce"));
        assert!(
            dpop.dpop,
            "a server that offers DPoP takes DPoP-bound tokens"
        );
        assert_eq!(
            dpop.resource_metadata.as_deref(),
            Some("https://mcp.example/prm")
        );
        let both = Challenge::parse(
            r#"Basic realm="old", Bearer error="insufficient_scope", scope="a b", DPoP algs="ES256""#,
        );
        assert_eq!(both.error.as_deref(), Some("insufficient_scope"));
        assert!(both.dpop);
        assert_eq!(both.scopes(), ["a", "b"]);
        assert_eq!(Challenge::parse(r#"Basic realm="x""#), Challenge::default());
        assert_eq!(
            Challenge::parse(r#"Bearer scope="a \"quoted\" b""#)
                .scope
                .as_deref(),
            Some(r#"a "quoted" b"#)
        );
    }

    #[test]
    fn metadata_is_looked_for_where_the_specs_say() {
        let url = |text: &str| reqwest::Url::parse(text).expect("a URL");
        let texts = |urls: Vec<reqwest::Url>| -> Vec<String> {
            urls.into_iter().map(String::from).collect()
        };
        assert_eq!(
            texts(resource_metadata_urls(&url(
                "https://a.example/public/mcp?x=1"
            ))),
            [
                "https://a.example/.well-known/oauth-protected-resource/public/mcp",
                "https://a.example/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            texts(server_metadata_urls(&url("https://auth.example/tenant1"))),
            [
                "https://auth.example/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example/.well-known/openid-configuration/tenant1",
                "https://auth.example/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            texts(server_metadata_urls(&url("https://auth.example"))),
            [
                "https://auth.example/.well-known/oauth-authorization-server",
                "https://auth.example/.well-known/openid-configuration",
            ]
        );
    }

    fn metadata(issuer: &str, token_endpoint: &str, pkce: Option<&[&str]>) -> ServerMetadata {
        ServerMetadata {
            issuer: issuer.to_owned(),
            authorization_endpoint: format!("{issuer}/auth"),
            token_endpoint: token_endpoint.to_owned(),
            code_challenge_methods_supported: pkce
                .map(|methods| methods.iter().map(|m| (*m).to_owned()).collect()),
            authorization_response_iss_parameter_supported: true,
            ..ServerMetadata::defaults(&reqwest::Url::parse(issuer).expect("a URL"))
        }
    }

    #[test]
    fn malicious_or_unusable_metadata_is_refused() {
        let issuer = "https://auth.example";
        let token = "https://auth.example/token";
        let public = Bounds::fixed("https://mcp.example/mcp", Reach::Public);
        assert!(
            metadata(issuer, token, Some(&["S256"]))
                .checked(issuer, &public, true)
                .is_ok()
        );
        let wrong = metadata("https://honest.example", token, Some(&["S256"]))
            .checked(issuer, &public, true);
        assert!(matches!(&wrong, Err(AuthError::Metadata(m)) if m.contains("honest.example")));
        let plain = metadata(issuer, "http://auth.example/token", Some(&["S256"]))
            .checked(issuer, &public, true);
        assert!(matches!(&plain, Err(AuthError::Metadata(m)) if m.contains("token_endpoint")));
        let loopback = "http://127.0.0.1:9000";
        let on_this_machine = Bounds::fixed("http://127.0.0.1:8000/mcp", Reach::Machine);
        assert!(
            metadata(loopback, "http://127.0.0.1:9000/token", Some(&["S256"]))
                .checked(loopback, &on_this_machine, true)
                .is_ok()
        );
        // The same metadata, named by a server on the internet: a way into this machine.
        let into_this_machine = metadata(loopback, "http://127.0.0.1:9000/token", Some(&["S256"]))
            .checked(loopback, &public, true);
        assert!(
            matches!(&into_this_machine, Err(AuthError::Metadata(m)) if m.contains("refused")),
            "{into_this_machine:?}"
        );
        let plain_pkce = metadata(issuer, token, Some(&["plain"])).checked(issuer, &public, true);
        assert!(matches!(&plain_pkce, Err(AuthError::Metadata(m)) if m.contains("S256")));
        assert!(
            metadata(issuer, token, None)
                .checked(issuer, &public, true)
                .is_err()
        );
        // No browser, no PKCE: a client credentials server need not offer it.
        assert!(
            metadata(issuer, token, None)
                .checked(issuer, &public, false)
                .is_ok()
        );
    }

    #[test]
    fn a_server_without_metadata_gets_the_default_endpoints_of_2025_03_26() {
        let origin = reqwest::Url::parse("http://localhost:3000/mcp").expect("a URL");
        let defaults = ServerMetadata::defaults(&origin);
        assert_eq!(defaults.issuer, "http://localhost:3000");
        assert_eq!(
            defaults.authorization_endpoint,
            "http://localhost:3000/authorize"
        );
        assert_eq!(defaults.token_endpoint, "http://localhost:3000/token");
        assert_eq!(
            defaults.registration_endpoint.as_deref(),
            Some("http://localhost:3000/register")
        );
    }
}
