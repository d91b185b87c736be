//! Signing in to remote servers (the MCP authorization spec, 2026-07-28, with what clients of
//! 2025-11-25 servers need): discovery of the server's authorization server, dynamic client
//! registration or a client id from the config, PKCE (S256), resource indicators, the `iss` of
//! the authorization response, and tokens kept in the OS keychain and refreshed before they
//! expire and after a 401.
//!
//! The browser comes back to Switchboard's own loopback endpoint
//! (`http://127.0.0.1:PORT/oauth/callback`), one callback for every server, so sign-ins never
//! race for a port. A sign-in in progress is known by its `state` only, in memory, for ten
//! minutes.
//!
//! Tokens are read from the keychain once and kept in memory; a refresh is done once however
//! many requests want it at that moment. No token, code or secret is ever logged or put in an
//! error.

mod discovery;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use sha2::Digest as _;
use tokio::sync::watch;

use crate::config::RemoteServer;
use crate::secrets::{Keychain, SecretError};
pub(crate) use discovery::Challenge;
use discovery::{ResourceMetadata, ServerMetadata};

/// The path of the callback every sign-in comes back to.
pub const CALLBACK_PATH: &str = "/oauth/callback";
/// How long a sign-in may take, from its start to the browser's return.
const SIGN_IN_LIFETIME: Duration = Duration::from_secs(600);
/// How many sign-ins may be in progress at once.
const MAX_PENDING: usize = 64;
/// Bound of every request to an authorization server.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// A token is refreshed when less than this share of its lifetime is left…
const REFRESH_SHARE: f64 = 0.2;
/// …or less than this.
const REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// Why sign-in cannot go on; the message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// A metadata document is missing, malformed or untrustworthy.
    #[error("{0}")]
    Metadata(String),
    /// A request to the server or its authorization server failed.
    #[error("{0}")]
    Request(String),
    /// The callback does not belong to any sign-in in progress, or fails its checks.
    #[error("{0}")]
    Callback(String),
    #[error(transparent)]
    Keychain(#[from] SecretError),
    /// Switchboard's endpoint is not listening, so the browser cannot come back to it.
    #[error("sign-in needs Switchboard's endpoint to be listening; it is not yet")]
    NoCallback,
}

/// A server refused Switchboard and no token it holds (or can refresh) will do: a person must
/// sign in. The text names the server and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unauthorized(pub String);

/// Signs Switchboard in to remote servers and keeps their tokens.
pub struct Auth {
    http: reqwest::Client,
    tokens: Arc<Keychain>,
    clients: Arc<Keychain>,
    /// The redirect URI: `http://127.0.0.1:PORT/oauth/callback`, once the endpoint listens.
    callback: Mutex<Option<String>>,
    pending: Mutex<HashMap<String, PendingSignIn>>,
    keepers: Mutex<HashMap<String, Keeper>>,
    /// The last challenge each server sent, to sign in where it says.
    challenges: Mutex<HashMap<String, Challenge>>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("callback", &self.callback)
            .finish_non_exhaustive()
    }
}

/// One server's token, as read from the keychain (once), and a refresh under way.
#[derive(Default)]
struct Keeper {
    /// `None` until read; `Some(None)` when there is none.
    record: Option<Option<TokenRecord>>,
    refreshing: Option<watch::Receiver<Option<Result<String, Unauthorized>>>>,
}

/// What a sign-in leaves in the keychain for one server.
#[derive(Clone, Serialize, Deserialize)]
struct TokenRecord {
    /// The server URL the token was issued for: a changed URL needs a new sign-in.
    url: String,
    issuer: String,
    token_endpoint: String,
    client_id: String,
    client_secret: Option<String>,
    resource: String,
    access_token: String,
    refresh_token: Option<String>,
    /// Seconds since the Unix epoch.
    expires_at: Option<u64>,
    /// Seconds the access token was given.
    lifetime: Option<u64>,
}

/// A sign-in between its start and the browser's return.
struct PendingSignIn {
    backend: String,
    url: String,
    issuer: String,
    iss_supported: bool,
    token_endpoint: String,
    client_id: String,
    client_secret: Option<String>,
    resource: String,
    redirect_uri: String,
    verifier: String,
    started: Instant,
}

/// What a client registration leaves in the keychain, per authorization server and redirect.
#[derive(Serialize, Deserialize)]
struct Registration {
    client_id: String,
    client_secret: Option<String>,
}

/// The query of the browser's return.
#[derive(Debug, Default, Deserialize)]
pub struct CallbackQuery {
    pub code: Option<String>,
    pub state: Option<String>,
    pub iss: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    refresh_token: Option<String>,
    expires_in: Option<u64>,
}

impl Auth {
    pub fn new() -> Arc<Auth> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(REQUEST_TIMEOUT)
            // Metadata and tokens come from where they were asked for, never via a redirect.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("an HTTP client with no unusual settings builds");
        Arc::new(Auth {
            http,
            tokens: Arc::new(Keychain::of_sign_in("tokens")),
            clients: Arc::new(Keychain::of_sign_in("clients")),
            callback: Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
            keepers: Mutex::new(HashMap::new()),
            challenges: Mutex::new(HashMap::new()),
        })
    }

    /// The tokens and client secrets held in memory for signed-in servers: values the activity
    /// log never stores.
    pub fn secret_values(&self) -> Vec<String> {
        let keepers = self
            .keepers
            .lock()
            .expect("the keepers lock is never poisoned");
        keepers
            .values()
            .filter_map(|keeper| keeper.record.as_ref()?.as_ref())
            .flat_map(|record| {
                [
                    Some(&record.access_token),
                    record.refresh_token.as_ref(),
                    record.client_secret.as_ref(),
                ]
            })
            .flatten()
            .cloned()
            .collect()
    }

    /// Sets where the browser comes back to, once the endpoint listens on `base`
    /// (`http://127.0.0.1:PORT`).
    pub fn set_callback_base(&self, base: &str) {
        *self.callback.lock().expect("callback lock") = Some(format!("{base}{CALLBACK_PATH}"));
    }

    /// Whether Switchboard holds a token for `backend` at `server` (read from the keychain once).
    pub async fn is_signed_in(&self, backend: &str, server: &RemoteServer) -> bool {
        self.record(backend, server).await.is_some()
    }

    /// The access token to send to `server`, refreshed first when it is about to expire; `None`
    /// if Switchboard holds none (the server may need none).
    pub(crate) async fn token(
        &self,
        backend: &str,
        server: &RemoteServer,
    ) -> Result<Option<String>, Unauthorized> {
        let Some(record) = self.record(backend, server).await else {
            return Ok(None);
        };
        if !needs_refresh(&record, SystemTime::now()) {
            return Ok(Some(record.access_token));
        }
        self.refresh(backend, server, record).await.map(Some)
    }

    /// After `server` refused `sent` (401, with the `challenge` it gave): a fresh token if a
    /// refresh gives one, else what the person must do.
    pub(crate) async fn after_refusal(
        &self,
        backend: &str,
        server: &RemoteServer,
        sent: Option<&str>,
        challenge: Option<&str>,
    ) -> Result<String, Unauthorized> {
        if let Some(challenge) = challenge {
            self.challenges
                .lock()
                .expect("challenges lock")
                .insert(backend.to_owned(), Challenge::parse(challenge));
        }
        let not_signed_in = || {
            Unauthorized(format!(
                "{backend} asks for a sign-in: open Switchboard's dashboard (or its tray menu) \
                 and choose \"Sign in to {backend}\""
            ))
        };
        let record = self
            .record(backend, server)
            .await
            .ok_or_else(not_signed_in)?;
        // Another request may have refreshed it already.
        if sent != Some(record.access_token.as_str()) && !needs_refresh(&record, SystemTime::now())
        {
            return Ok(record.access_token);
        }
        self.refresh(backend, server, record).await
    }

    /// Forgets the token of `backend` (the server refused even a fresh one), in memory and in
    /// the keychain.
    pub(crate) async fn forget_token(&self, backend: &str, challenge: Option<&str>) {
        if let Some(challenge) = challenge {
            self.challenges
                .lock()
                .expect("challenges lock")
                .insert(backend.to_owned(), Challenge::parse(challenge));
        }
        let _ = self.sign_out(backend).await;
    }

    /// Removes what sign-in holds for `backend`.
    pub async fn sign_out(&self, backend: &str) -> Result<(), AuthError> {
        self.keepers.lock().expect("keepers lock").insert(
            backend.to_owned(),
            Keeper {
                record: Some(None),
                refreshing: None,
            },
        );
        let name = keychain_name(backend);
        let tokens = self.tokens.clone();
        tokio::task::spawn_blocking(move || tokens.delete(&name))
            .await
            .expect("the keychain call does not panic")?;
        Ok(())
    }

    /// The token record of `backend`, read from the keychain the first time; `None` if there is
    /// none, or it was issued for another URL.
    async fn record(&self, backend: &str, server: &RemoteServer) -> Option<TokenRecord> {
        let known = self
            .keepers
            .lock()
            .expect("keepers lock")
            .get(backend)
            .and_then(|keeper| keeper.record.clone());
        let record = match known {
            Some(record) => record,
            None => {
                let name = keychain_name(backend);
                let tokens = self.tokens.clone();
                let read = tokio::task::spawn_blocking(move || tokens.get(&name))
                    .await
                    .expect("the keychain call does not panic");
                let record = match read {
                    Ok(Some(text)) => serde_json::from_str::<TokenRecord>(&text).ok(),
                    Ok(None) => None,
                    Err(error) => {
                        tracing::warn!(backend, "cannot read its sign-in: {error}");
                        None
                    }
                };
                self.keepers
                    .lock()
                    .expect("keepers lock")
                    .entry(backend.to_owned())
                    .or_default()
                    .record
                    .get_or_insert(record)
                    .clone()
            }
        };
        record.filter(|record| record.url == server.url)
    }

    /// Refreshes `record`'s token, once for everyone asking at the same time.
    async fn refresh(
        &self,
        backend: &str,
        server: &RemoteServer,
        record: TokenRecord,
    ) -> Result<String, Unauthorized> {
        let (sender, receiver) = watch::channel(None);
        let waiting = {
            let mut keepers = self.keepers.lock().expect("keepers lock");
            let keeper = keepers.entry(backend.to_owned()).or_default();
            match &keeper.refreshing {
                Some(refreshing) => Some(refreshing.clone()),
                None => {
                    keeper.refreshing = Some(receiver);
                    None
                }
            }
        };
        if let Some(mut refreshing) = waiting {
            let answer = refreshing
                .wait_for(Option::is_some)
                .await
                .map(|answer| answer.clone());
            return match answer {
                Ok(Some(result)) => result,
                _ => Err(Unauthorized(format!(
                    "the refresh of {backend}'s token stopped"
                ))),
            };
        }
        let result = self.refresh_now(backend, server, record).await;
        {
            let mut keepers = self.keepers.lock().expect("keepers lock");
            let keeper = keepers.entry(backend.to_owned()).or_default();
            keeper.refreshing = None;
            match &result {
                Ok((stored, _)) => keeper.record = Some(Some(stored.clone())),
                Err(_) => keeper.record = Some(None),
            }
        }
        let result = result.map(|(record, _)| record.access_token);
        sender.send_replace(Some(result.clone()));
        result
    }

    async fn refresh_now(
        &self,
        backend: &str,
        server: &RemoteServer,
        record: TokenRecord,
    ) -> Result<(TokenRecord, ()), Unauthorized> {
        let expired = |why: String| {
            Unauthorized(format!(
                "the sign-in to {backend} has expired ({why}): open Switchboard's dashboard (or \
                 its tray menu) and choose \"Sign in to {backend}\""
            ))
        };
        let Some(refresh_token) = record.refresh_token.clone() else {
            return Err(expired("no refresh token was issued".to_owned()));
        };
        let mut form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.clone()),
            ("client_id", record.client_id.clone()),
            ("resource", record.resource.clone()),
        ];
        if let Some(secret) = &record.client_secret {
            form.push(("client_secret", secret.clone()));
        }
        let answer = self
            .token_request(&record.token_endpoint, &form)
            .await
            .map_err(|error| expired(error.to_string()))?;
        let refreshed = TokenRecord {
            access_token: answer.access_token,
            refresh_token: answer.refresh_token.or(Some(refresh_token)),
            expires_at: answer
                .expires_in
                .map(|seconds| unix_seconds(SystemTime::now()) + seconds),
            lifetime: answer.expires_in,
            url: server.url.clone(),
            ..record
        };
        self.store(backend, &refreshed)
            .await
            .map_err(|error| expired(error.to_string()))?;
        tracing::info!(backend, "refreshed its access token");
        Ok((refreshed, ()))
    }

    async fn store(&self, backend: &str, record: &TokenRecord) -> Result<(), AuthError> {
        let text = serde_json::to_string(record).expect("a token record serializes");
        let name = keychain_name(backend);
        let tokens = self.tokens.clone();
        tokio::task::spawn_blocking(move || tokens.set(&name, &text))
            .await
            .expect("the keychain call does not panic")?;
        Ok(())
    }

    /// Starts signing in to `backend` at `server`: finds its authorization server, registers
    /// with it if needed, and returns the URL to open in the browser.
    pub async fn begin_sign_in(
        &self,
        backend: &str,
        server: &RemoteServer,
    ) -> Result<String, AuthError> {
        let redirect_uri = self
            .callback
            .lock()
            .expect("callback lock")
            .clone()
            .ok_or(AuthError::NoCallback)?;
        let url = reqwest::Url::parse(&server.url)
            .map_err(|error| AuthError::Metadata(format!("{}: {error}", server.shown_url())))?;
        let challenge = match self
            .challenges
            .lock()
            .expect("challenges lock")
            .get(backend)
        {
            Some(challenge) => challenge.clone(),
            None => Challenge::default(),
        };
        let challenge = match challenge.resource_metadata {
            Some(_) => challenge,
            None => self.probe(server).await.unwrap_or(challenge),
        };
        let resource_metadata = self.resource_metadata(&url, &challenge).await?;
        let resource = canonical_resource(&url, resource_metadata.resource.as_deref())?;
        let issuer = resource_metadata
            .authorization_servers
            .first()
            .cloned()
            .ok_or_else(|| {
                AuthError::Metadata(format!(
                    "{}'s protected resource metadata names no authorization server",
                    server.url
                ))
            })?;
        let metadata = self.server_metadata(&issuer).await?;
        let (client_id, client_secret) = match &server.oauth.client_id {
            Some(client_id) => (client_id.clone(), server.oauth.client_secret.clone()),
            None => self.registration(&metadata, &redirect_uri).await?,
        };
        let mut scopes: Vec<String> = match (&server.oauth.scopes, &challenge.scope) {
            (Some(scopes), _) => scopes.clone(),
            (None, Some(scope)) => scope.split_whitespace().map(str::to_owned).collect(),
            (None, None) => resource_metadata
                .scopes_supported
                .clone()
                .unwrap_or_default(),
        };
        // A refresh token needs offline_access where the server offers it.
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
                .append_pair("client_id", &client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &challenge_code)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state)
                .append_pair("resource", &resource);
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
            issuer: metadata.issuer.clone(),
            iss_supported: metadata.authorization_response_iss_parameter_supported,
            token_endpoint: metadata.token_endpoint.clone(),
            client_id,
            client_secret,
            resource,
            redirect_uri,
            verifier,
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

    /// Finishes the sign-in the browser came back from: checks it, trades the code for tokens
    /// and keeps them. Returns the backend signed in to.
    pub async fn complete_sign_in(&self, query: &CallbackQuery) -> Result<String, AuthError> {
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
        let mut form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code.to_owned()),
            ("redirect_uri", pending.redirect_uri.clone()),
            ("client_id", pending.client_id.clone()),
            ("code_verifier", pending.verifier.clone()),
            ("resource", pending.resource.clone()),
        ];
        if let Some(secret) = &pending.client_secret {
            form.push(("client_secret", secret.clone()));
        }
        let answer = self.token_request(&pending.token_endpoint, &form).await?;
        let record = TokenRecord {
            url: pending.url,
            issuer: pending.issuer,
            token_endpoint: pending.token_endpoint,
            client_id: pending.client_id,
            client_secret: pending.client_secret,
            resource: pending.resource,
            access_token: answer.access_token,
            refresh_token: answer.refresh_token,
            expires_at: answer
                .expires_in
                .map(|seconds| unix_seconds(SystemTime::now()) + seconds),
            lifetime: answer.expires_in,
        };
        self.store(&pending.backend, &record).await?;
        self.keepers.lock().expect("keepers lock").insert(
            pending.backend.clone(),
            Keeper {
                record: Some(Some(record)),
                refreshing: None,
            },
        );
        tracing::info!(backend = pending.backend, "signed in");
        Ok(pending.backend)
    }

    /// POSTs a token request; the answer, or why there is none (never with a token in it).
    async fn token_request(
        &self,
        endpoint: &str,
        form: &[(&str, String)],
    ) -> Result<TokenAnswer, AuthError> {
        let response = self
            .http
            .post(endpoint)
            .header(reqwest::header::ACCEPT, "application/json")
            .form(form)
            .send()
            .await
            .map_err(|error| {
                AuthError::Request(format!(
                    "the token endpoint {endpoint} did not answer: {}",
                    plain_error(&error)
                ))
            })?;
        let status = response.status();
        let body = response.bytes().await.map_err(|error| {
            AuthError::Request(format!("the token endpoint's answer broke off: {error}"))
        })?;
        if !status.is_success() {
            #[derive(Deserialize)]
            struct OAuthError {
                error: String,
                error_description: Option<String>,
            }
            let why = match serde_json::from_slice::<OAuthError>(&body) {
                Ok(error) => match error.error_description {
                    Some(description) => format!("{}: {description}", error.error),
                    None => error.error,
                },
                Err(_) => format!("HTTP {}", status.as_u16()),
            };
            return Err(AuthError::Request(format!(
                "the token endpoint {endpoint} refused: {why}"
            )));
        }
        serde_json::from_slice(&body).map_err(|_| {
            AuthError::Request(format!(
                "the token endpoint {endpoint} answered something other than a token"
            ))
        })
    }

    /// The challenge of an unauthenticated request to the server, if it answers 401 with one.
    async fn probe(&self, server: &RemoteServer) -> Option<Challenge> {
        let probe = serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": crate::wire::era::LEGACY_PROTOCOL_VERSIONS[0],
                "capabilities": {},
                "clientInfo": {"name": "switchboard", "version": env!("CARGO_PKG_VERSION")},
            },
        });
        let response = self
            .http
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

    async fn resource_metadata(
        &self,
        url: &reqwest::Url,
        challenge: &Challenge,
    ) -> Result<ResourceMetadata, AuthError> {
        let candidates = match &challenge.resource_metadata {
            Some(from_challenge) => vec![reqwest::Url::parse(from_challenge).map_err(|_| {
                AuthError::Metadata(format!(
                    "{url} named resource metadata at {from_challenge:?}, which is not a URL"
                ))
            })?],
            None => discovery::resource_metadata_urls(url),
        };
        for candidate in &candidates {
            if let Some(metadata) = self.fetch_json::<ResourceMetadata>(candidate).await? {
                return Ok(metadata);
            }
        }
        Err(AuthError::Metadata(format!(
            "{url} publishes no protected resource metadata (tried {}), so Switchboard cannot \
             tell where to sign in",
            candidates
                .iter()
                .map(reqwest::Url::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        )))
    }

    async fn server_metadata(&self, issuer: &str) -> Result<ServerMetadata, AuthError> {
        let issuer_url = reqwest::Url::parse(issuer).map_err(|_| {
            AuthError::Metadata(format!("the authorization server {issuer:?} is not a URL"))
        })?;
        if !http_url_is_safe(&issuer_url) {
            return Err(AuthError::Metadata(format!(
                "the authorization server {issuer} is not https:// (nor on this machine); refused"
            )));
        }
        for candidate in discovery::server_metadata_urls(&issuer_url) {
            if let Some(metadata) = self.fetch_json::<ServerMetadata>(&candidate).await? {
                return metadata.checked(issuer);
            }
        }
        Err(AuthError::Metadata(format!(
            "the authorization server {issuer} publishes no metadata where OAuth and OpenID \
             Connect say it should"
        )))
    }

    /// The client id (and secret) Switchboard has at this authorization server for this
    /// redirect, registering (RFC 7591) if it has none yet.
    async fn registration(
        &self,
        metadata: &ServerMetadata,
        redirect_uri: &str,
    ) -> Result<(String, Option<String>), AuthError> {
        let name = keychain_name(&format!("{}\n{redirect_uri}", metadata.issuer));
        let clients = self.clients.clone();
        let lookup = name.clone();
        let known = tokio::task::spawn_blocking(move || clients.get(&lookup))
            .await
            .expect("the keychain call does not panic")?;
        if let Some(registration) =
            known.and_then(|text| serde_json::from_str::<Registration>(&text).ok())
        {
            return Ok((registration.client_id, registration.client_secret));
        }
        let endpoint = metadata.registration_endpoint.as_deref().ok_or_else(|| {
            AuthError::Metadata(format!(
                "{} offers no dynamic client registration: register Switchboard with it (redirect \
                 URI {redirect_uri}) and give the client id as `oauth.client_id`",
                metadata.issuer
            ))
        })?;
        let request = serde_json::json!({
            "client_name": "Switchboard",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": "native",
        });
        let response = self
            .http
            .post(endpoint)
            .json(&request)
            .send()
            .await
            .map_err(|error| {
                AuthError::Request(format!(
                    "the registration endpoint {endpoint} did not answer: {}",
                    plain_error(&error)
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
        let text = serde_json::to_string(&registration).expect("a registration serializes");
        let clients = self.clients.clone();
        tokio::task::spawn_blocking(move || clients.set(&name, &text))
            .await
            .expect("the keychain call does not panic")?;
        Ok((registration.client_id, registration.client_secret))
    }

    /// GETs JSON from `url`: `None` if there is none there (404 and the like), an error if
    /// what is there is unusable.
    async fn fetch_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &reqwest::Url,
    ) -> Result<Option<T>, AuthError> {
        let response = self
            .http
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|error| {
                AuthError::Request(format!("{url} did not answer: {}", plain_error(&error)))
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

/// Whether a token should be refreshed before use at `now`.
fn needs_refresh(record: &TokenRecord, now: SystemTime) -> bool {
    let Some(expires_at) = record.expires_at else {
        return false;
    };
    let now = unix_seconds(now);
    let margin = record
        .lifetime
        .map(|lifetime| (lifetime as f64 * REFRESH_SHARE) as u64)
        .unwrap_or(0)
        .max(REFRESH_MARGIN.as_secs());
    now + margin >= expires_at
}

/// The resource indicator for the server at `url`: the resource its metadata names, which must
/// be where the server is (its origin, and a prefix of its path).
fn canonical_resource(url: &reqwest::Url, named: Option<&str>) -> Result<String, AuthError> {
    let Some(named) = named else {
        let mut resource = url.clone();
        resource.set_fragment(None);
        resource.set_query(None);
        return Ok(resource.as_str().trim_end_matches('/').to_owned());
    };
    let resource = reqwest::Url::parse(named).map_err(|_| {
        AuthError::Metadata(format!("the protected resource {named:?} is not a URL"))
    })?;
    let covers = resource.origin() == url.origin()
        && url
            .path()
            .starts_with(resource.path().trim_end_matches('/'));
    if !covers {
        return Err(AuthError::Metadata(format!(
            "the protected resource metadata is for {named}, not for {url}; refused"
        )));
    }
    Ok(named.to_owned())
}

/// Whether `url` may carry codes, tokens and secrets: https, or http to this machine.
fn http_url_is_safe(url: &reqwest::Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => match url.host() {
            Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(address)) => address.is_loopback(),
            Some(url::Host::Ipv6(address)) => address.is_loopback(),
            None => false,
        },
        _ => false,
    }
}

/// A keychain entry name for any key: the first 32 hex digits of its SHA-256.
fn keychain_name(key: &str) -> String {
    let digest = sha2::Sha256::digest(key.as_bytes());
    digest[..16]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// 32 random bytes as base64url: a PKCE verifier, or a `state`.
fn random_text() -> String {
    let bytes: [u8; 32] = rand::random();
    URL_SAFE_NO_PAD.encode(bytes)
}

fn unix_seconds(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// A request error with its causes (they say what failed: refused, DNS, TLS…).
fn plain_error(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(expires_in: Option<u64>, lifetime: Option<u64>, now: SystemTime) -> TokenRecord {
        TokenRecord {
            url: "https://mcp.example/mcp".to_owned(),
            issuer: "https://auth.example".to_owned(),
            token_endpoint: "https://auth.example/token".to_owned(),
            client_id: "c".to_owned(),
            client_secret: None,
            resource: "https://mcp.example/mcp".to_owned(),
            access_token: "a".to_owned(),
            refresh_token: Some("r".to_owned()),
            expires_at: expires_in.map(|seconds| unix_seconds(now) + seconds),
            lifetime,
        }
    }

    #[test]
    fn a_token_is_refreshed_in_the_last_fifth_of_its_life_or_minute() {
        let now = SystemTime::now();
        assert!(!needs_refresh(&record(Some(3000), Some(3600), now), now));
        assert!(needs_refresh(&record(Some(700), Some(3600), now), now));
        assert!(!needs_refresh(&record(Some(100), Some(120), now), now));
        assert!(needs_refresh(&record(Some(59), Some(120), now), now));
        // After a sleep the wall clock has moved on: an expired token is refreshed first.
        let later = now + Duration::from_secs(7200);
        assert!(needs_refresh(&record(Some(3000), Some(3600), now), later));
        assert!(!needs_refresh(&record(None, None, now), later));
    }

    #[test]
    fn the_resource_must_be_where_the_server_is() {
        let url = reqwest::Url::parse("https://mcp.example/api/mcp").expect("a URL");
        assert_eq!(
            canonical_resource(&url, None).as_deref(),
            Ok("https://mcp.example/api/mcp")
        );
        assert_eq!(
            canonical_resource(&url, Some("https://mcp.example")).as_deref(),
            Ok("https://mcp.example")
        );
        assert!(canonical_resource(&url, Some("https://evil.example/api/mcp")).is_err());
        assert!(canonical_resource(&url, Some("https://mcp.example/other")).is_err());
    }

    #[test]
    fn only_https_or_this_machine_may_carry_secrets() {
        let safe = |text: &str| http_url_is_safe(&reqwest::Url::parse(text).expect("a URL"));
        assert!(safe("https://auth.example/token"));
        assert!(safe("http://127.0.0.1:9000/token"));
        assert!(safe("http://localhost:9000/token"));
        assert!(safe("http://[::1]:9000/token"));
        assert!(!safe("http://auth.example/token"));
        assert!(!safe("http://127.0.0.1.evil.example/token"));
        assert!(!safe("ftp://auth.example/token"));
    }

    #[tokio::test]
    async fn a_callback_with_an_unknown_state_is_refused() {
        let auth = Auth::new();
        let refused = auth
            .complete_sign_in(&CallbackQuery {
                code: Some("c".to_owned()),
                state: Some("forged".to_owned()),
                ..CallbackQuery::default()
            })
            .await;
        assert!(
            matches!(&refused, Err(AuthError::Callback(message)) if message.contains("unknown or has expired")),
            "{refused:?}"
        );
    }
}
