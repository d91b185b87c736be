//! Requests to a token endpoint: the client proving itself as the authorization server takes it
//! (RFC 6749 §2.3, RFC 7523's `private_key_jwt`), a DPoP proof where the token is to be bound,
//! retried once with the server's nonce when it asks for one (RFC 9449 §8), and the answer read
//! without ever quoting a token.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::discovery::ServerMetadata;
use super::dpop::DpopKey;
use super::jws::SigningKey;
use super::{Auth, AuthError, random_text};
use config::OAuthClient;
use platform::clock::unix_seconds;

/// How long a client assertion is good for.
const ASSERTION_LIFETIME_SECONDS: u64 = 300;

/// How a client proves itself at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum TokenAuth {
    /// A public client: its id in the request, nothing to prove.
    None,
    /// Id and secret in HTTP Basic authentication.
    ClientSecretBasic,
    /// Id and secret in the request's form.
    ClientSecretPost,
    /// An assertion signed with the client's private key.
    PrivateKeyJwt,
}

impl TokenAuth {
    /// The name RFC 7591 and RFC 8414 give it.
    pub(super) fn name(self) -> &'static str {
        match self {
            TokenAuth::None => "none",
            TokenAuth::ClientSecretBasic => "client_secret_basic",
            TokenAuth::ClientSecretPost => "client_secret_post",
            TokenAuth::PrivateKeyJwt => "private_key_jwt",
        }
    }

    pub(super) fn from_name(name: &str) -> Option<TokenAuth> {
        [
            TokenAuth::None,
            TokenAuth::ClientSecretBasic,
            TokenAuth::ClientSecretPost,
            TokenAuth::PrivateKeyJwt,
        ]
        .into_iter()
        .find(|auth| auth.name() == name)
    }

    /// How a client with a secret proves itself at the server of `metadata`: HTTP Basic where
    /// it takes it (its default), else in the form where only that is taken.
    pub(super) fn with_secret(metadata: &ServerMetadata) -> TokenAuth {
        match !metadata.takes_auth_method("client_secret_basic")
            && metadata.takes_auth_method("client_secret_post")
        {
            true => TokenAuth::ClientSecretPost,
            false => TokenAuth::ClientSecretBasic,
        }
    }

    /// What Switchboard asks to register as: a public client where the server takes one (or
    /// does not say), else one with a secret proven the way the server takes.
    pub(super) fn to_register(metadata: &ServerMetadata) -> TokenAuth {
        let Some(methods) = &metadata.token_endpoint_auth_methods_supported else {
            return TokenAuth::None;
        };
        let takes = |method: &str| methods.iter().any(|supported| supported == method);
        if takes("none") {
            TokenAuth::None
        } else if takes("client_secret_basic") {
            TokenAuth::ClientSecretBasic
        } else if takes("client_secret_post") {
            TokenAuth::ClientSecretPost
        } else {
            TokenAuth::None
        }
    }
}

/// A client at an authorization server, and how it proves itself there.
#[derive(Clone)]
pub(super) struct ClientIdentity {
    /// Empty for a JWT assertion grant without a client.
    pub(super) id: String,
    pub(super) secret: Option<String>,
    pub(super) auth: TokenAuth,
}

impl ClientIdentity {
    /// The client the config gives, if it gives one, proving itself as the server of
    /// `metadata` takes it: with its key, else its secret, else as a public client.
    pub(super) fn configured(oauth: &OAuthClient, metadata: &ServerMetadata) -> Option<Self> {
        let id = oauth.client_id.clone()?;
        let auth = match (&oauth.private_key, &oauth.client_secret) {
            (Some(_), _) => TokenAuth::PrivateKeyJwt,
            (None, Some(_)) => TokenAuth::with_secret(metadata),
            (None, None) => TokenAuth::None,
        };
        Some(ClientIdentity {
            id,
            secret: oauth.client_secret.clone(),
            auth,
        })
    }
}

/// One request to a token endpoint.
pub(super) struct TokenRequest<'a> {
    pub(super) endpoint: &'a str,
    /// The authorization server's issuer: the audience of a client assertion.
    pub(super) issuer: &'a str,
    pub(super) client: &'a ClientIdentity,
    /// The client's private key (PEM), for `private_key_jwt`.
    pub(super) private_key: Option<&'a str>,
    /// The grant's parameters; the client's are added.
    pub(super) form: Vec<(&'static str, String)>,
    /// The key to bind the token to, with a DPoP proof.
    pub(super) dpop: Option<&'a DpopKey>,
}

#[derive(Deserialize)]
pub(super) struct TokenAnswer {
    pub(super) access_token: String,
    pub(super) token_type: Option<String>,
    pub(super) refresh_token: Option<String>,
    pub(super) expires_in: Option<u64>,
    /// What a token exchange (RFC 8693) issued.
    pub(super) issued_token_type: Option<String>,
}

impl TokenAnswer {
    /// Whether the token is bound to the DPoP key of its request.
    pub(super) fn is_dpop(&self) -> bool {
        self.token_type
            .as_deref()
            .is_some_and(|kind| kind.eq_ignore_ascii_case("dpop"))
    }
}

#[derive(Deserialize)]
struct OAuthError {
    error: String,
    error_description: Option<String>,
}

impl Auth {
    /// POSTs a token request; the answer, or why there is none (never with a token in it).
    pub(super) async fn token_request(
        &self,
        http: &reqwest::Client,
        request: TokenRequest<'_>,
    ) -> Result<TokenAnswer, AuthError> {
        let endpoint = request.endpoint;
        let url = reqwest::Url::parse(endpoint).map_err(|_| {
            AuthError::Metadata(format!("the token endpoint {endpoint:?} is not a URL"))
        })?;
        let mut form = request.form.clone();
        let mut basic = None;
        let client = request.client;
        match client.auth {
            TokenAuth::None => {
                if !client.id.is_empty() {
                    form.push(("client_id", client.id.clone()));
                }
            }
            TokenAuth::ClientSecretPost => {
                form.push(("client_id", client.id.clone()));
                form.push(("client_secret", client.secret.clone().unwrap_or_default()));
            }
            TokenAuth::ClientSecretBasic => {
                // RFC 6749 §2.3.1: each part form-encoded before they are joined.
                let encode = |text: &str| {
                    url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>()
                };
                let secret = client.secret.as_deref().unwrap_or_default();
                basic = Some(format!(
                    "Basic {}",
                    STANDARD.encode(format!("{}:{}", encode(&client.id), encode(secret)))
                ));
            }
            TokenAuth::PrivateKeyJwt => {
                let pem = request.private_key.ok_or_else(|| {
                    AuthError::Request(
                        "the client proves itself with `private_key_jwt`, but the config gives \
                         no `private_key`"
                            .to_owned(),
                    )
                })?;
                let key = SigningKey::from_pem(pem)?;
                let now = unix_seconds(std::time::SystemTime::now());
                let assertion = key.sign(
                    serde_json::Map::new(),
                    &json!({
                        "iss": client.id,
                        "sub": client.id,
                        "aud": request.issuer,
                        "jti": random_text(),
                        "iat": now,
                        "exp": now + ASSERTION_LIFETIME_SECONDS,
                    }),
                );
                form.push(("client_id", client.id.clone()));
                form.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
                ));
                form.push(("client_assertion", assertion));
            }
        }
        // A server that wants a nonce in the proof says so once; then the request is made again.
        let mut asked_for_nonce = false;
        loop {
            let mut post = http
                .post(url.clone())
                .header(reqwest::header::ACCEPT, "application/json")
                .form(&form);
            if let Some(basic) = &basic {
                post = post.header(reqwest::header::AUTHORIZATION, basic.as_str());
            }
            if let Some(key) = request.dpop {
                let nonce = self.token_nonce(endpoint);
                post = post.header("dpop", key.proof("POST", &url, None, nonce.as_deref()));
            }
            let response = post.send().await.map_err(|error| {
                AuthError::Request(format!(
                    "the token endpoint {endpoint} did not answer: {}",
                    wire::http_error::describe(&error)
                ))
            })?;
            if let Some(nonce) = response
                .headers()
                .get("dpop-nonce")
                .and_then(|value| value.to_str().ok())
            {
                self.token_nonces
                    .lock()
                    .expect("nonces lock")
                    .insert(endpoint.to_owned(), nonce.to_owned());
            }
            let status = response.status();
            let body = response.bytes().await.map_err(|error| {
                AuthError::Request(format!("the token endpoint's answer broke off: {error}"))
            })?;
            if status.is_success() {
                return serde_json::from_slice(&body).map_err(|_| {
                    AuthError::Request(format!(
                        "the token endpoint {endpoint} answered something other than a token"
                    ))
                });
            }
            let error = serde_json::from_slice::<OAuthError>(&body).ok();
            let wants_nonce = error
                .as_ref()
                .is_some_and(|error| error.error == "use_dpop_nonce");
            if wants_nonce && request.dpop.is_some() && !asked_for_nonce {
                asked_for_nonce = true;
                continue;
            }
            let why = match error {
                Some(OAuthError {
                    error,
                    error_description: Some(description),
                }) => format!("{error}: {description}"),
                Some(OAuthError { error, .. }) => error,
                None => format!("HTTP {}", status.as_u16()),
            };
            return Err(AuthError::Request(format!(
                "the token endpoint {endpoint} refused: {why}"
            )));
        }
    }

    /// The DPoP nonce `endpoint` last gave.
    fn token_nonce(&self, endpoint: &str) -> Option<String> {
        self.token_nonces
            .lock()
            .expect("nonces lock")
            .get(endpoint)
            .cloned()
    }
}
