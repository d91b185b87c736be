//! Tokens Switchboard gets on its own, without a person: the client credentials grant (the
//! MCP extension `io.modelcontextprotocol/oauth-client-credentials`), a JWT assertion from a
//! file (RFC 7523, workload identity federation), and enterprise-managed authorization: the
//! person's ID token from their identity provider, exchanged there (RFC 8693) for an identity
//! assertion grant (ID-JAG) that the authorization server takes as a JWT assertion.

use std::path::Path;

use super::reach::Reach;
use super::token::{ClientIdentity, TokenAuth, TokenRequest};
use super::{Auth, AuthError, TokenOrigin, TokenRecord};
use config::{IdentityProvider, OAuthGrant, RemoteServer};

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";

impl Auth {
    /// Gets a token for `server` with its config's grant, which needs no person. Each attempt
    /// is one request per step: a refused assertion is not sent again until someone starts the
    /// server again.
    pub(super) async fn acquire(
        &self,
        backend: &str,
        server: &RemoteServer,
    ) -> Result<TokenRecord, AuthError> {
        let found = self.discover(backend, server, false).await?;
        let http = self.http(found.bounds.reach());
        let metadata = &found.metadata;
        let oauth = &server.oauth;
        let scopes = found.scopes(server);
        let client = ClientIdentity::configured(oauth, metadata).unwrap_or(ClientIdentity {
            id: String::new(),
            secret: None,
            auth: TokenAuth::None,
        });
        let mut form = match oauth.grant {
            OAuthGrant::ClientCredentials => vec![
                ("grant_type", "client_credentials".to_owned()),
                ("resource", found.resource.clone()),
            ],
            OAuthGrant::JwtBearer => {
                let file = oauth
                    .assertion_file
                    .as_deref()
                    .expect("the config checks that a jwt_bearer grant has its file");
                vec![
                    ("grant_type", JWT_BEARER.to_owned()),
                    ("assertion", read_token_file(file, "assertion").await?),
                    ("resource", found.resource.clone()),
                ]
            }
            OAuthGrant::IdentityAssertion => {
                let provider = oauth
                    .identity_provider
                    .as_ref()
                    .expect("the config checks that an identity_assertion grant has its provider");
                let grant = self
                    .identity_assertion(provider, &metadata.issuer, &found.resource, &scopes)
                    .await?;
                // The grant names the resource itself.
                vec![("grant_type", JWT_BEARER.to_owned()), ("assertion", grant)]
            }
            OAuthGrant::AuthorizationCode => {
                return Err(AuthError::NoBrowser(format!(
                    "{backend} needs a person to sign in in the browser"
                )));
            }
        };
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        let dpop = found.dpop_key();
        let answer = self
            .token_request(
                http,
                TokenRequest {
                    endpoint: &metadata.token_endpoint,
                    issuer: &metadata.issuer,
                    client: &client,
                    private_key: oauth.private_key.as_deref(),
                    form,
                    dpop: dpop.as_ref(),
                },
            )
            .await?;
        let origin = TokenOrigin {
            url: server.url.clone(),
            issuer: metadata.issuer.clone(),
            token_endpoint: metadata.token_endpoint.clone(),
            client,
            resource: found.resource,
            scopes,
        };
        Ok(TokenRecord::issued(origin, answer, dpop))
    }

    /// Exchanges the person's ID token at their identity provider for an identity assertion
    /// grant for `resource` at the authorization server `audience`.
    async fn identity_assertion(
        &self,
        provider: &IdentityProvider,
        audience: &str,
        resource: &str,
        scopes: &[String],
    ) -> Result<String, AuthError> {
        let client = match (&provider.client_id, &provider.client_secret) {
            (Some(id), Some(secret)) => ClientIdentity {
                id: id.clone(),
                secret: Some(secret.clone()),
                auth: TokenAuth::ClientSecretBasic,
            },
            (id, _) => ClientIdentity {
                id: id.clone().unwrap_or_default(),
                secret: None,
                auth: TokenAuth::None,
            },
        };
        let mut form = vec![
            ("grant_type", TOKEN_EXCHANGE.to_owned()),
            ("requested_token_type", ID_JAG.to_owned()),
            ("audience", audience.to_owned()),
            ("resource", resource.to_owned()),
            (
                "subject_token",
                read_token_file(&provider.id_token_file, "ID token").await?,
            ),
            ("subject_token_type", ID_TOKEN.to_owned()),
        ];
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        // The provider is the one the config names, wherever it is.
        let answer = self
            .token_request(
                self.http(Reach::Machine),
                TokenRequest {
                    endpoint: &provider.token_endpoint,
                    issuer: &provider.token_endpoint,
                    client: &client,
                    private_key: None,
                    form,
                    dpop: None,
                },
            )
            .await?;
        match answer.issued_token_type.as_deref() {
            None | Some(ID_JAG) => Ok(answer.access_token),
            Some(other) => Err(AuthError::Request(format!(
                "the identity provider {} issued a {other}, not an identity assertion grant",
                provider.token_endpoint
            ))),
        }
    }
}

/// A token kept in a file (`what` names it in errors, never its content).
async fn read_token_file(path: &Path, what: &str) -> Result<String, AuthError> {
    let text = tokio::fs::read_to_string(path).await.map_err(|error| {
        AuthError::Request(format!(
            "cannot read the {what} file {}: {error}",
            path.display()
        ))
    })?;
    let token = text.trim();
    if token.is_empty() {
        return Err(AuthError::Request(format!(
            "the {what} file {} is empty",
            path.display()
        )));
    }
    Ok(token.to_owned())
}
