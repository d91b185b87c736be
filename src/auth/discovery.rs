//! Finding who signs Switchboard in to a remote server (MCP authorization, 2026-07-28): the
//! server's protected resource metadata (RFC 9728), then its authorization server's metadata
//! (RFC 8414, or OpenID Connect discovery), each checked before it is believed.

use serde::Deserialize;

use super::{AuthError, http_url_is_safe};

/// What a 401's `WWW-Authenticate: Bearer …` says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// Where the server's protected resource metadata is.
    pub(crate) resource_metadata: Option<String>,
    /// The scopes the server asks for.
    pub(crate) scope: Option<String>,
}

impl Challenge {
    /// Reads the parameters of a `Bearer` challenge (quoted or token values).
    pub(crate) fn parse(header: &str) -> Challenge {
        let mut challenge = Challenge::default();
        let Some(rest) = header
            .trim_start()
            .strip_prefix("Bearer")
            .or_else(|| header.trim_start().strip_prefix("bearer"))
        else {
            return challenge;
        };
        for (name, value) in auth_params(rest) {
            match name.to_ascii_lowercase().as_str() {
                "resource_metadata" => challenge.resource_metadata = Some(value),
                "scope" => challenge.scope = Some(value),
                _ => {}
            }
        }
        challenge
    }
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
}

/// An authorization server's metadata (RFC 8414 / OpenID Connect discovery).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ServerMetadata {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: String,
    pub(crate) token_endpoint: String,
    pub(crate) registration_endpoint: Option<String>,
    pub(crate) scopes_supported: Option<Vec<String>>,
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) authorization_response_iss_parameter_supported: bool,
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
    /// Checks the metadata fetched for `issuer`: the same issuer, endpoints that are https (or
    /// on this machine), and PKCE with S256.
    pub(crate) fn checked(self, issuer: &str) -> Result<ServerMetadata, AuthError> {
        if self.issuer != issuer {
            return Err(AuthError::Metadata(format!(
                "the authorization server's metadata names the issuer {:?}, not {issuer:?}, \
                 whose metadata it claims to be; refused",
                self.issuer
            )));
        }
        for (what, endpoint) in [
            ("authorization_endpoint", Some(&self.authorization_endpoint)),
            ("token_endpoint", Some(&self.token_endpoint)),
            ("registration_endpoint", self.registration_endpoint.as_ref()),
        ] {
            let Some(endpoint) = endpoint else { continue };
            let safe = reqwest::Url::parse(endpoint).is_ok_and(|url| http_url_is_safe(&url));
            if !safe {
                return Err(AuthError::Metadata(format!(
                    "the authorization server's {what} {endpoint:?} is not an https:// URL (nor \
                     one on this machine); refused"
                )));
            }
        }
        let s256 = self
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|methods| methods.iter().any(|method| method == "S256"));
        if !s256 {
            return Err(AuthError::Metadata(format!(
                "the authorization server {issuer} does not say it supports PKCE with S256 \
                 (code_challenge_methods_supported), which MCP sign-in requires"
            )));
        }
        Ok(self)
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
            }
        );
        assert_eq!(
            Challenge::parse("Bearer realm=x,scope=read"),
            Challenge {
                resource_metadata: None,
                scope: Some("read".to_owned()),
            }
        );
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
            registration_endpoint: None,
            scopes_supported: None,
            code_challenge_methods_supported: pkce
                .map(|methods| methods.iter().map(|m| (*m).to_owned()).collect()),
            authorization_response_iss_parameter_supported: true,
        }
    }

    #[test]
    fn malicious_or_unusable_metadata_is_refused() {
        let issuer = "https://auth.example";
        let token = "https://auth.example/token";
        assert!(
            metadata(issuer, token, Some(&["S256"]))
                .checked(issuer)
                .is_ok()
        );
        let wrong = metadata("https://honest.example", token, Some(&["S256"])).checked(issuer);
        assert!(matches!(&wrong, Err(AuthError::Metadata(m)) if m.contains("honest.example")));
        let plain = metadata(issuer, "http://auth.example/token", Some(&["S256"])).checked(issuer);
        assert!(matches!(&plain, Err(AuthError::Metadata(m)) if m.contains("token_endpoint")));
        let loopback = "http://127.0.0.1:9000";
        assert!(
            metadata(loopback, "http://127.0.0.1:9000/token", Some(&["S256"]))
                .checked(loopback)
                .is_ok()
        );
        let plain_pkce = metadata(issuer, token, Some(&["plain"])).checked(issuer);
        assert!(matches!(&plain_pkce, Err(AuthError::Metadata(m)) if m.contains("S256")));
        assert!(metadata(issuer, token, None).checked(issuer).is_err());
    }
}
