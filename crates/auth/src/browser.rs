//! A person's sign-in in the browser: the authorization code grant with PKCE. Its start
//! (discovery, the client, the authorization URL), its end (the browser's return to the
//! callback, checked, and the code traded for tokens), and the client Switchboard is at each
//! authorization server: one from the config, a Client ID Metadata Document, or one it
//! registers (RFC 7591), kept in the keychain per authorization server and redirect URI.

use std::time::Instant;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use super::discovery::ServerMetadata;
use super::dpop::DpopKey;
use super::reach::Reach;
use super::token::{ClientIdentity, TokenAuth, TokenRequest};
use super::{
    Auth, AuthError, CALLBACK_PATH, MAX_PENDING, SIGN_IN_LIFETIME, TokenOrigin, TokenRecord,
    callback_id, keychain_name, random_text,
};
use config::RemoteServer;

/// The query of the browser's return.
#[derive(Debug, Default, Deserialize)]
pub struct CallbackQuery {
    pub(crate) code: Option<String>,
    pub(crate) state: Option<String>,
    pub(crate) iss: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) error_description: Option<String>,
}

/// A sign-in between its start and the browser's return.
pub(super) struct PendingSignIn {
    backend: String,
    url: String,
    reach: Reach,
    issuer: String,
    /// The last segment of the callback path it must come back on.
    callback_id: String,
    iss_supported: bool,
    token_endpoint: String,
    client: ClientIdentity,
    private_key: Option<String>,
    resource: String,
    scopes: Vec<String>,
    redirect_uri: String,
    verifier: String,
    dpop: Option<DpopKey>,
    started: Instant,
}

/// What a client registration leaves in the keychain, per authorization server and redirect.
#[derive(Serialize, Deserialize)]
struct Registration {
    client_id: String,
    client_secret: Option<String>,
    /// As registered; registrations kept before it was noted have none.
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

impl Auth {
    /// Starts signing in to `backend` at `server`: finds its authorization server, registers
    /// with it if needed, and returns the URL to open in the browser.
    pub async fn begin_sign_in(
        &self,
        backend: &str,
        server: &RemoteServer,
    ) -> Result<String, AuthError> {
        let grant = server.oauth.grant;
        if !grant.needs_a_person() {
            return Err(AuthError::NoBrowser(format!(
                "{backend} gets its tokens on its own (`grant = \"{}\"`), without a browser: \
                 start it instead",
                grant.name()
            )));
        }
        let base = self
            .callback_base
            .lock()
            .expect("callback lock")
            .clone()
            .ok_or(AuthError::NoCallback)?;
        let found = self.discover(backend, server, true).await?;
        let http = self.http(found.bounds.reach());
        let metadata = &found.metadata;
        let callback_id = callback_id(&metadata.issuer);
        let redirect_uri = format!("{base}{CALLBACK_PATH}/{callback_id}");
        let client = self
            .browser_client(http, server, metadata, &redirect_uri)
            .await?;
        let mut scopes = found.scopes(server);
        // A refresh token needs offline_access where the authorization server offers it.
        let offline = metadata
            .scopes_supported
            .as_ref()
            .is_some_and(|supported| supported.iter().any(|scope| scope == "offline_access"));
        if offline && !scopes.iter().any(|scope| scope == "offline_access") {
            scopes.push("offline_access".to_owned());
        }
        let verifier = random_text();
        let state = random_text();
        let challenge_code = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()));
        let mut authorize = reqwest::Url::parse(&metadata.authorization_endpoint)
            .map_err(|error| AuthError::Metadata(format!("authorization_endpoint: {error}")))?;
        {
            let mut query = authorize.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &challenge_code)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state)
                .append_pair("resource", &found.resource);
            if !scopes.is_empty() {
                query.append_pair("scope", &scopes.join(" "));
            }
            if offline {
                // Some servers issue refresh tokens only after consent was asked for.
                query.append_pair("prompt", "consent");
            }
        }
        let pending = PendingSignIn {
            backend: backend.to_owned(),
            url: server.url.clone(),
            reach: found.bounds.reach(),
            issuer: metadata.issuer.clone(),
            callback_id,
            iss_supported: metadata.authorization_response_iss_parameter_supported,
            token_endpoint: metadata.token_endpoint.clone(),
            client,
            private_key: server.oauth.private_key.clone(),
            resource: found.resource.clone(),
            scopes,
            redirect_uri,
            verifier,
            dpop: found.dpop_key(),
            started: Instant::now(),
        };
        let mut sign_ins = self.pending.lock().expect("pending lock");
        sign_ins.retain(|_, sign_in| sign_in.started.elapsed() < SIGN_IN_LIFETIME);
        if sign_ins.len() >= MAX_PENDING {
            return Err(AuthError::Callback(format!(
                "{MAX_PENDING} sign-ins are in progress already; finish one, or wait ten minutes"
            )));
        }
        sign_ins.insert(state, pending);
        Ok(authorize.into())
    }

    /// Finishes the sign-in the browser came back from, on the callback path of the
    /// authorization server `server_id`: checks it, trades the code for tokens and keeps them.
    /// Returns the backend signed in to.
    pub async fn complete_sign_in(
        &self,
        server_id: &str,
        query: &CallbackQuery,
    ) -> Result<String, AuthError> {
        let state = query.state.as_deref().unwrap_or_default();
        let pending = self
            .pending
            .lock()
            .expect("pending lock")
            .remove(state)
            .filter(|pending| pending.started.elapsed() < SIGN_IN_LIFETIME)
            .ok_or_else(|| {
                AuthError::Callback(
                    "this sign-in is unknown or has expired (it is good for ten minutes, once); \
                     start it again from Switchboard's dashboard"
                        .to_owned(),
                )
            })?;
        // Each authorization server has its own callback path: an answer on another one's path
        // comes from a server other than the one the sign-in was sent to (a mix-up attack).
        if server_id != pending.callback_id {
            return Err(AuthError::Callback(format!(
                "the answer came back on the callback path of another authorization server than \
                 {}, where the sign-in was sent; refused",
                pending.issuer
            )));
        }
        // RFC 9207: an `iss` must be the issuer asked; a server that says it sends one must.
        match (&query.iss, pending.iss_supported) {
            (Some(iss), _) if *iss != pending.issuer => {
                return Err(AuthError::Callback(format!(
                    "the answer says it comes from {iss:?}, not from {:?}, where the sign-in was \
                     sent; refused",
                    pending.issuer
                )));
            }
            (None, true) => {
                return Err(AuthError::Callback(format!(
                    "the answer lacks the `iss` that {} says it always sends; refused",
                    pending.issuer
                )));
            }
            _ => {}
        }
        if let Some(error) = &query.error {
            return Err(AuthError::Callback(format!(
                "{} refused the sign-in: {error}{}",
                pending.issuer,
                query
                    .error_description
                    .as_deref()
                    .map(|description| format!(" ({description})"))
                    .unwrap_or_default()
            )));
        }
        let code = query.code.as_deref().ok_or_else(|| {
            AuthError::Callback("the answer carries no authorization code".to_owned())
        })?;
        let answer = self
            .token_request(
                self.http(pending.reach),
                TokenRequest {
                    endpoint: &pending.token_endpoint,
                    issuer: &pending.issuer,
                    client: &pending.client,
                    private_key: pending.private_key.as_deref(),
                    form: vec![
                        ("grant_type", "authorization_code".to_owned()),
                        ("code", code.to_owned()),
                        ("redirect_uri", pending.redirect_uri.clone()),
                        ("code_verifier", pending.verifier.clone()),
                        ("resource", pending.resource.clone()),
                    ],
                    dpop: pending.dpop.as_ref(),
                },
            )
            .await?;
        let origin = TokenOrigin {
            url: pending.url,
            issuer: pending.issuer,
            token_endpoint: pending.token_endpoint,
            client: pending.client,
            resource: pending.resource,
            scopes: pending.scopes,
        };
        let record = TokenRecord::issued(origin, answer, pending.dpop);
        self.keep(&pending.backend, record).await?;
        tracing::info!(backend = pending.backend, "signed in");
        Ok(pending.backend)
    }

    /// The client Switchboard is at the authorization server of `metadata`: the one the config
    /// gives, else its Client ID Metadata Document where the server takes one, else one it
    /// registers.
    async fn browser_client(
        &self,
        http: &reqwest::Client,
        server: &RemoteServer,
        metadata: &ServerMetadata,
        redirect_uri: &str,
    ) -> Result<ClientIdentity, AuthError> {
        if let Some(client) = ClientIdentity::configured(&server.oauth, metadata) {
            return Ok(client);
        }
        if let Some(document) = &server.oauth.client_metadata_url
            && metadata.client_id_metadata_document_supported
        {
            return Ok(ClientIdentity {
                id: document.clone(),
                secret: None,
                auth: TokenAuth::None,
            });
        }
        self.registration(http, metadata, redirect_uri).await
    }

    /// The client Switchboard registered at this authorization server for this redirect,
    /// registering (RFC 7591) if it has none yet: a public client where the server takes one,
    /// else with a secret it proves as the server takes it.
    async fn registration(
        &self,
        http: &reqwest::Client,
        metadata: &ServerMetadata,
        redirect_uri: &str,
    ) -> Result<ClientIdentity, AuthError> {
        let name = keychain_name(&format!("{}\n{redirect_uri}", metadata.issuer));
        let clients = self.clients.clone();
        let lookup = name.clone();
        let known = tokio::task::spawn_blocking(move || clients.get(&lookup))
            .await
            .expect("the keychain call does not panic")?;
        if let Some(registration) =
            known.and_then(|text| serde_json::from_str::<Registration>(&text).ok())
        {
            return Ok(registration.identity(TokenAuth::ClientSecretPost));
        }
        let endpoint = metadata.registration_endpoint.as_deref().ok_or_else(|| {
            AuthError::Metadata(format!(
                "{} offers no dynamic client registration: register Switchboard with it (redirect \
                 URI {redirect_uri}) and give the client id as `oauth.client_id`",
                metadata.issuer
            ))
        })?;
        let asked = TokenAuth::to_register(metadata);
        let request = serde_json::json!({
            "client_name": "Switchboard",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": asked.name(),
            "application_type": "native",
        });
        let response = http
            .post(endpoint)
            .json(&request)
            .send()
            .await
            .map_err(|error| {
                AuthError::Request(format!(
                    "the registration endpoint {endpoint} did not answer: {}",
                    wire::http_error::describe(&error)
                ))
            })?;
        let status = response.status();
        let body = response.bytes().await.unwrap_or_default();
        let registration = serde_json::from_slice::<Registration>(&body)
            .ok()
            .filter(|_| status.is_success())
            .ok_or_else(|| {
                AuthError::Request(format!(
                    "the registration endpoint {endpoint} refused Switchboard (HTTP {})",
                    status.as_u16()
                ))
            })?;
        let identity = registration.identity(asked);
        let kept = Registration {
            client_id: identity.id.clone(),
            client_secret: identity.secret.clone(),
            token_endpoint_auth_method: Some(identity.auth.name().to_owned()),
        };
        let text = serde_json::to_string(&kept).expect("a registration serializes");
        let clients = self.clients.clone();
        tokio::task::spawn_blocking(move || clients.set(&name, &text))
            .await
            .expect("the keychain call does not panic")?;
        Ok(identity)
    }
}

impl Registration {
    /// The client registered: its way to prove itself is the one registered, else `asked` (for
    /// registrations kept before the way was noted, `client_secret_post`, as it then was); a
    /// way that needs a secret it was not given falls back to none.
    fn identity(self, asked: TokenAuth) -> ClientIdentity {
        let auth = self
            .token_endpoint_auth_method
            .as_deref()
            .and_then(TokenAuth::from_name)
            .unwrap_or(asked);
        let auth = match (auth, &self.client_secret) {
            (TokenAuth::ClientSecretBasic | TokenAuth::ClientSecretPost, None) => TokenAuth::None,
            (auth, _) => auth,
        };
        ClientIdentity {
            id: self.client_id,
            secret: self.client_secret,
            auth,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_answer_on_another_authorization_servers_path_is_refused() {
        let auth = Auth::new();
        let issuer = "https://auth.example";
        auth.pending.lock().expect("pending lock").insert(
            "state-1".to_owned(),
            PendingSignIn {
                backend: "remote".to_owned(),
                url: "https://mcp.example/mcp".to_owned(),
                reach: Reach::Public,
                issuer: issuer.to_owned(),
                callback_id: callback_id(issuer),
                iss_supported: false,
                token_endpoint: format!("{issuer}/token"),
                client: ClientIdentity {
                    id: "c".to_owned(),
                    secret: None,
                    auth: TokenAuth::None,
                },
                private_key: None,
                resource: "https://mcp.example/mcp".to_owned(),
                scopes: Vec::new(),
                redirect_uri: format!("http://127.0.0.1:1{CALLBACK_PATH}/{}", callback_id(issuer)),
                verifier: "v".to_owned(),
                dpop: None,
                started: Instant::now(),
            },
        );
        // The browser comes back from a sign-in at https://auth.example on the path of
        // another authorization server: a mix-up, refused before any code is traded.
        let refused = auth
            .complete_sign_in(
                &callback_id("https://attacker.example"),
                &CallbackQuery {
                    code: Some("c".to_owned()),
                    state: Some("state-1".to_owned()),
                    ..CallbackQuery::default()
                },
            )
            .await;
        assert!(
            matches!(&refused, Err(AuthError::Callback(message)) if message.contains("another authorization server")),
            "{refused:?}"
        );
        // Once: the state is spent.
        assert!(auth.pending.lock().expect("pending lock").is_empty());
    }
}
