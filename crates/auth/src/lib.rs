//! Signing in to remote servers (the MCP authorization spec, 2026-07-28, with what clients of
//! the 2025-11-25, 2025-06-18 and 2025-03-26 servers need): discovery of the server's
//! authorization server, within bounds ([`reach`]); dynamic client registration, a Client ID
//! Metadata Document, or a client from the config; PKCE (S256), resource indicators, the `iss`
//! of the authorization response; client authentication as the authorization server takes it
//! (none, `client_secret_basic`, `client_secret_post`, `private_key_jwt`); DPoP-bound tokens
//! where the authorization server offers them; step-up to wider scopes on a 403; and grants
//! that need no person (client credentials, a JWT assertion, an enterprise identity assertion).
//! Tokens are kept in the OS keychain, refreshed before they expire and after a 401.
//!
//! A person's sign-in comes back to Switchboard's own loopback endpoint, on a path of its
//! authorization server's own (`http://127.0.0.1:PORT/oauth/callback/ID`), so sign-ins never
//! race for a port and an answer coming back on another authorization server's path is refused
//! (the mix-up defence does not rest on the optional `iss` alone). A sign-in in progress is
//! known by its `state` only, in memory, for ten minutes.
//!
//! A client secret or key goes only to the authorization server `oauth.issuer` pins: metadata
//! naming another is refused.
//!
//! Tokens are read from the keychain once and kept in memory; a refresh is done once however
//! many requests want it at that moment. No token, code or secret is ever logged or put in an
//! error.
//!
//! Floor 4 of the workspace (ARCHITECTURE.md). It stands on `platform`, `wire` and `config`; it
//! never supervises or routes.

mod browser;
mod discovery;
mod dpop;
mod grants;
mod jws;
mod reach;
mod token;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use sha2::Digest as _;
use tokio::sync::watch;

pub use browser::CallbackQuery;
use config::RemoteServer;
pub(crate) use discovery::Challenge;
use dpop::DpopKey;
pub(crate) use jws::KeyError;
use platform::clock::unix_seconds;
use platform::secrets::{Keychain, SecretError};
use reach::Reach;
use token::TokenAuth;

/// The path every sign-in comes back under, followed by its authorization server's id.
pub(crate) const CALLBACK_PATH: &str = "/oauth/callback";
/// The route of the callback, its last segment naming the authorization server.
pub const CALLBACK_ROUTE: &str = "/oauth/callback/{server}";
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
    /// The server's config gets its tokens without a person: nothing to open in a browser.
    #[error("{0}")]
    NoBrowser(String),
    #[error(transparent)]
    Keychain(#[from] SecretError),
    /// The config's `private_key` cannot sign the client's assertion.
    #[error(transparent)]
    PrivateKey(#[from] KeyError),
    /// Switchboard's endpoint is not listening, so the browser cannot come back to it.
    #[error("sign-in needs Switchboard's endpoint to be listening; it is not yet")]
    NoCallback,
}

/// A server refused Switchboard and no token it holds (or can refresh) will do: a person must
/// sign in. The text names the server and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unauthorized(pub String);

/// What a server's 403 for want of a scope (`insufficient_scope`) leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A person must sign in again, for the wider scopes (which the next sign-in asks for).
    SignIn(String),
    /// Signing in again cannot help: the scopes were asked for already.
    Final(String),
}

/// An access token to send, and the DPoP key it is bound to, if any.
#[derive(Clone)]
pub struct Credential {
    token: String,
    proof_key: Option<Arc<DpopKey>>,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("dpop", &self.proof_key.is_some())
            .finish_non_exhaustive()
    }
}

impl Credential {
    /// The access token, to tell which one a server refused.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// `request` (a `method` request to `url`) carrying the token: as a bearer token, or for a
    /// DPoP-bound one with the `DPoP` scheme and a fresh proof, with the server's `nonce` when
    /// it asked for one.
    pub fn authorize(
        &self,
        request: reqwest::RequestBuilder,
        method: &reqwest::Method,
        url: &reqwest::Url,
        nonce: Option<&str>,
    ) -> reqwest::RequestBuilder {
        match &self.proof_key {
            None => request.bearer_auth(&self.token),
            Some(key) => request
                .header(
                    reqwest::header::AUTHORIZATION,
                    format!("DPoP {}", self.token),
                )
                .header(
                    "dpop",
                    key.proof(method.as_str(), url, Some(&self.token), nonce),
                ),
        }
    }
}

/// Signs Switchboard in to remote servers and keeps their tokens.
pub struct Auth {
    /// One HTTP client per [`Reach`] of the servers signed in to, made when first needed.
    http: [OnceLock<reqwest::Client>; 3],
    tokens: Arc<Keychain>,
    clients: Arc<Keychain>,
    /// `http://127.0.0.1:PORT`, once the endpoint listens.
    callback_base: Mutex<Option<String>>,
    pending: Mutex<HashMap<String, browser::PendingSignIn>>,
    keepers: Mutex<HashMap<String, Keeper>>,
    /// The last challenge each server sent, to sign in where (and for what) it says.
    challenges: Mutex<HashMap<String, Challenge>>,
    /// The DPoP nonce each token endpoint last gave.
    token_nonces: Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("callback_base", &self.callback_base)
            .finish_non_exhaustive()
    }
}

/// One server's token, as read from the keychain (once), and a renewal under way.
#[derive(Default)]
struct Keeper {
    /// `None` until read; `Some(None)` when there is none.
    record: Option<Option<TokenRecord>>,
    renewing: Option<watch::Receiver<Option<Result<Credential, Unauthorized>>>>,
}

/// What a sign-in leaves in the keychain for one server. Fields added since the first version
/// have defaults, so records written before them still read.
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
    /// How the client proves itself at the token endpoint.
    #[serde(default)]
    token_auth: Option<TokenAuth>,
    /// The scopes asked for.
    #[serde(default)]
    scopes: Vec<String>,
    /// The DPoP key (PKCS#8, base64url) the tokens are bound to.
    #[serde(default)]
    dpop_key: Option<String>,
    #[serde(skip)]
    proof_key: Option<Arc<DpopKey>>,
}

/// Where a token comes from, as its record keeps it: the server's URL, the authorization
/// server, the client, and the resource and scopes it was asked for.
struct TokenOrigin {
    url: String,
    issuer: String,
    token_endpoint: String,
    client: token::ClientIdentity,
    resource: String,
    scopes: Vec<String>,
}

impl TokenRecord {
    /// The record of the token `answer` gives, newly issued (by a sign-in or a grant that needs
    /// no person) for `origin`. `dpop` is the key the request offered, kept only if the server
    /// bound the token to it.
    fn issued(
        origin: TokenOrigin,
        answer: token::TokenAnswer,
        dpop: Option<DpopKey>,
    ) -> TokenRecord {
        let dpop = dpop.filter(|_| answer.is_dpop());
        TokenRecord {
            url: origin.url,
            issuer: origin.issuer,
            token_endpoint: origin.token_endpoint,
            client_id: origin.client.id,
            client_secret: origin.client.secret,
            resource: origin.resource,
            access_token: String::new(),
            refresh_token: None,
            expires_at: None,
            lifetime: None,
            token_auth: Some(origin.client.auth),
            scopes: origin.scopes,
            dpop_key: dpop.as_ref().map(DpopKey::kept),
            proof_key: dpop.map(Arc::new),
        }
        .with_token(answer)
    }

    /// This record holding the token `answer` gives, with its expiry from now. The refresh
    /// token stays when the answer brings no new one (as a refresh's answer may).
    fn with_token(self, answer: token::TokenAnswer) -> TokenRecord {
        TokenRecord {
            expires_at: answer
                .expires_in
                .map(|seconds| unix_seconds(SystemTime::now()) + seconds),
            lifetime: answer.expires_in,
            access_token: answer.access_token,
            refresh_token: answer.refresh_token.or(self.refresh_token),
            ..self
        }
    }

    /// The record with its DPoP key read, once, from its kept form.
    fn with_proof_key(mut self) -> TokenRecord {
        self.proof_key = self
            .dpop_key
            .as_deref()
            .and_then(DpopKey::from_kept)
            .map(Arc::new);
        self
    }

    fn credential(&self) -> Credential {
        Credential {
            token: self.access_token.clone(),
            proof_key: self.proof_key.clone(),
        }
    }

    /// The client that proves itself at the token endpoint; records from before
    /// `token_auth` sent their secret in the form.
    fn client(&self) -> token::ClientIdentity {
        let auth = self.token_auth.unwrap_or(match self.client_secret {
            Some(_) => TokenAuth::ClientSecretPost,
            None => TokenAuth::None,
        });
        token::ClientIdentity {
            id: self.client_id.clone(),
            secret: self.client_secret.clone(),
            auth,
        }
    }
}

impl Auth {
    pub fn new() -> Arc<Auth> {
        Arc::new(Auth {
            http: Default::default(),
            tokens: Arc::new(Keychain::of_sign_in("tokens")),
            clients: Arc::new(Keychain::of_sign_in("clients")),
            callback_base: Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
            keepers: Mutex::new(HashMap::new()),
            challenges: Mutex::new(HashMap::new()),
            token_nonces: Mutex::new(HashMap::new()),
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
        *self.callback_base.lock().expect("callback lock") = Some(base.to_owned());
    }

    /// The HTTP client for sign-in requests of a server at `nearest`.
    fn http(&self, nearest: Reach) -> &reqwest::Client {
        let slot = match nearest {
            Reach::Machine => &self.http[0],
            Reach::Private => &self.http[1],
            Reach::Public => &self.http[2],
        };
        slot.get_or_init(|| reach::client(nearest))
    }

    /// Whether Switchboard holds a token for `backend` at `server` (read from the keychain once).
    pub async fn is_signed_in(&self, backend: &str, server: &RemoteServer) -> bool {
        self.record(backend, server).await.is_some()
    }

    /// The credential to send to `server`, renewed first when it is about to expire; `None` if
    /// Switchboard holds none (the server may need none).
    pub async fn token(
        &self,
        backend: &str,
        server: &RemoteServer,
    ) -> Result<Option<Credential>, Unauthorized> {
        let Some(record) = self.record(backend, server).await else {
            return Ok(None);
        };
        if !needs_refresh(&record, SystemTime::now()) {
            return Ok(Some(record.credential()));
        }
        self.renew(backend, server, Some(record)).await.map(Some)
    }

    /// After `server` refused `sent` (401, with the `challenge` it gave): a fresh token if a
    /// refresh (or, for a grant that needs no person, a new token) gives one, else what the
    /// person must do.
    pub async fn after_refusal(
        &self,
        backend: &str,
        server: &RemoteServer,
        sent: Option<&str>,
        challenge: Option<&str>,
    ) -> Result<Credential, Unauthorized> {
        if let Some(challenge) = challenge {
            self.remember_challenge(backend, Challenge::parse(challenge));
        }
        let Some(record) = self.record(backend, server).await else {
            if server.oauth.grant.needs_a_person() {
                return Err(Unauthorized(format!(
                    "{backend} asks for a sign-in: open Switchboard's dashboard (or its tray \
                     menu) and choose \"Sign in to {backend}\""
                )));
            }
            return self.renew(backend, server, None).await;
        };
        // Another request may have refreshed it already.
        if sent != Some(record.access_token.as_str()) && !needs_refresh(&record, SystemTime::now())
        {
            return Ok(record.credential());
        }
        self.renew(backend, server, Some(record)).await
    }

    /// After `server` answered 403 with `challenge`: for want of a scope, whether a new sign-in
    /// for the wider scopes (the granted ones and those asked for) can help; `None` for any
    /// other 403, which is the server's answer to pass on.
    pub async fn after_forbidden(
        &self,
        backend: &str,
        server: &RemoteServer,
        challenge: &str,
    ) -> Option<Refusal> {
        let challenge = Challenge::parse(challenge);
        if challenge.error.as_deref() != Some("insufficient_scope") {
            return None;
        }
        let granted = self
            .record(backend, server)
            .await
            .map(|record| record.scopes)
            .unwrap_or_default();
        let missing: Vec<String> = challenge
            .scopes()
            .into_iter()
            .filter(|scope| !granted.contains(scope))
            .collect();
        let asked = challenge.scope.clone().unwrap_or_default();
        if missing.is_empty() {
            return Some(Refusal::Final(format!(
                "{backend} refused the request for want of the scope \"{asked}\", which its \
                 sign-in asked for already: signing in again cannot help; the authorization \
                 server does not grant it"
            )));
        }
        if !server.oauth.grant.needs_a_person() {
            return Some(Refusal::Final(format!(
                "{backend} refused the request for want of the scope \"{}\", which the {} \
                 grant did not ask for: add it to `oauth.scopes`",
                missing.join(" "),
                server.oauth.grant.name()
            )));
        }
        let mut wider = granted;
        wider.extend(missing.iter().cloned());
        self.remember_challenge(
            backend,
            Challenge {
                scope: Some(wider.join(" ")),
                ..challenge
            },
        );
        Some(Refusal::SignIn(format!(
            "{backend} asks for more permission (\"{}\") than its sign-in gave: open \
             Switchboard's dashboard (or its tray menu) and choose \"Sign in to {backend}\"",
            missing.join(" ")
        )))
    }

    /// Forgets the token of `backend` (the server refused even a fresh one), in memory and in
    /// the keychain.
    pub async fn forget_token(&self, backend: &str, challenge: Option<&str>) {
        if let Some(challenge) = challenge {
            self.remember_challenge(backend, Challenge::parse(challenge));
        }
        let _ = self.sign_out(backend).await;
    }

    /// Removes what sign-in holds for `backend`.
    pub async fn sign_out(&self, backend: &str) -> Result<(), AuthError> {
        self.keepers.lock().expect("keepers lock").insert(
            backend.to_owned(),
            Keeper {
                record: Some(None),
                renewing: None,
            },
        );
        let name = keychain_name(backend);
        let tokens = self.tokens.clone();
        tokio::task::spawn_blocking(move || tokens.delete(&name))
            .await
            .expect("the keychain call does not panic")?;
        Ok(())
    }

    /// Keeps `challenge` for the next sign-in of `backend`; a step-up's scopes stay until
    /// someone signs in again.
    fn remember_challenge(&self, backend: &str, challenge: Challenge) {
        let mut challenges = self.challenges.lock().expect("challenges lock");
        let stepping_up = challenges
            .get(backend)
            .is_some_and(|kept| kept.error.as_deref() == Some("insufficient_scope"));
        if stepping_up && challenge.error.as_deref() != Some("insufficient_scope") {
            return;
        }
        challenges.insert(backend.to_owned(), challenge);
    }

    /// The token record of `backend`, read from the keychain the first time; `None` if there is
    /// none, or it was issued for another URL or by another authorization server than the one
    /// the config pins.
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
                    Ok(Some(text)) => serde_json::from_str::<TokenRecord>(&text)
                        .ok()
                        .map(TokenRecord::with_proof_key),
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
        let pinned = server.oauth.issuer.as_deref();
        record.filter(|record| {
            record.url == server.url
                && pinned.is_none_or(|pinned| same_issuer(pinned, &record.issuer))
        })
    }

    /// Renews `record`'s token (or gets a first one, for a grant that needs no person), once
    /// for everyone asking at the same time.
    async fn renew(
        &self,
        backend: &str,
        server: &RemoteServer,
        record: Option<TokenRecord>,
    ) -> Result<Credential, Unauthorized> {
        let (sender, receiver) = watch::channel(None);
        let waiting = {
            let mut keepers = self.keepers.lock().expect("keepers lock");
            let keeper = keepers.entry(backend.to_owned()).or_default();
            match &keeper.renewing {
                Some(renewing) => Some(renewing.clone()),
                None => {
                    keeper.renewing = Some(receiver);
                    None
                }
            }
        };
        if let Some(mut renewing) = waiting {
            let answer = renewing
                .wait_for(Option::is_some)
                .await
                .map(|answer| answer.clone());
            return match answer {
                Ok(Some(result)) => result,
                _ => Err(Unauthorized(format!(
                    "the renewal of {backend}'s token stopped"
                ))),
            };
        }
        let result = self.renew_now(backend, server, record).await;
        {
            let mut keepers = self.keepers.lock().expect("keepers lock");
            let keeper = keepers.entry(backend.to_owned()).or_default();
            keeper.renewing = None;
            match &result {
                Ok(stored) => keeper.record = Some(Some(stored.clone())),
                Err(_) => keeper.record = Some(None),
            }
        }
        let result = result.map(|record| record.credential());
        sender.send_replace(Some(result.clone()));
        result
    }

    async fn renew_now(
        &self,
        backend: &str,
        server: &RemoteServer,
        record: Option<TokenRecord>,
    ) -> Result<TokenRecord, Unauthorized> {
        let grant = server.oauth.grant;
        let first = record.is_none();
        let renewed = match record {
            Some(record) if record.refresh_token.is_some() => {
                match self.refresh(server, record).await {
                    Ok(refreshed) => Ok(refreshed),
                    // A grant that needs no person just asks again.
                    Err(_) if !grant.needs_a_person() => self.acquire(backend, server).await,
                    Err(error) => Err(error),
                }
            }
            _ if !grant.needs_a_person() => self.acquire(backend, server).await,
            _ => Err(AuthError::Request("no refresh token was issued".to_owned())),
        };
        let renewed = match renewed {
            Ok(record) => self.store(backend, &record).await.map(|()| record),
            Err(error) => Err(error),
        };
        match renewed {
            Ok(record) => {
                match first {
                    true => tracing::info!(backend, grant = grant.name(), "got an access token"),
                    false => tracing::info!(backend, "refreshed its access token"),
                }
                Ok(record)
            }
            Err(error) if grant.needs_a_person() => Err(Unauthorized(format!(
                "the sign-in to {backend} has expired ({error}): open Switchboard's dashboard (or \
                 its tray menu) and choose \"Sign in to {backend}\""
            ))),
            Err(error) => Err(Unauthorized(format!(
                "Switchboard could not get a token for {backend} with the {} grant ({error}); \
                 fix its `oauth` settings (or the file they name) and start {backend} again",
                grant.name()
            ))),
        }
    }

    /// The refresh grant for `record`'s tokens.
    async fn refresh(
        &self,
        server: &RemoteServer,
        record: TokenRecord,
    ) -> Result<TokenRecord, AuthError> {
        let refresh_token = record
            .refresh_token
            .clone()
            .expect("only a record with a refresh token is refreshed");
        let url = reqwest::Url::parse(&server.url)
            .map_err(|error| AuthError::Metadata(format!("{}: {error}", server.shown_url())))?;
        let reach = reach::Bounds::of(&url).await.reach();
        let client = record.client();
        let answer = self
            .token_request(
                self.http(reach),
                token::TokenRequest {
                    endpoint: &record.token_endpoint,
                    issuer: &record.issuer,
                    client: &client,
                    private_key: server.oauth.private_key.as_deref(),
                    form: vec![
                        ("grant_type", "refresh_token".to_owned()),
                        ("refresh_token", refresh_token.clone()),
                        ("resource", record.resource.clone()),
                    ],
                    dpop: record.proof_key.as_deref(),
                },
            )
            .await?;
        Ok(TokenRecord {
            url: server.url.clone(),
            ..record
        }
        .with_token(answer))
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

    /// Keeps `record` as the token of `backend`, in the keychain and in memory.
    async fn keep(&self, backend: &str, record: TokenRecord) -> Result<(), AuthError> {
        self.store(backend, &record).await?;
        self.keepers.lock().expect("keepers lock").insert(
            backend.to_owned(),
            Keeper {
                record: Some(Some(record)),
                renewing: None,
            },
        );
        // A sign-in for the scopes a step-up asked for is done.
        self.challenges
            .lock()
            .expect("challenges lock")
            .remove(backend);
        Ok(())
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

/// Whether two issuer identifiers name the same authorization server: the same text, but for
/// a trailing slash a person may or may not type.
fn same_issuer(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// The id of an authorization server in its callback path: 16 hex digits of its issuer's
/// SHA-256.
fn callback_id(issuer: &str) -> String {
    keychain_name(issuer)[..16].to_owned()
}

/// Whether `path` is a sign-in's callback, which the browser reaches without the dashboard's
/// cookie.
pub fn is_callback_path(path: &str) -> bool {
    path.strip_prefix(CALLBACK_PATH)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|id| !id.is_empty() && !id.contains('/'))
}

/// A keychain entry name for any key: the first 32 hex digits of its SHA-256.
/// Deletes the tokens a sign-in kept for `backend` from the keychain (a server taken out of the
/// config); whether there were any. Blocking, as every keychain call is.
pub fn delete_stored_tokens(backend: &str) -> Result<bool, SecretError> {
    Keychain::of_sign_in("tokens").delete(&keychain_name(backend))
}

fn keychain_name(key: &str) -> String {
    platform::hex::encode(&sha2::Sha256::digest(key.as_bytes())[..16])
}

/// 32 random bytes as base64url: a PKCE verifier, a `state`, a JWT id.
fn random_text() -> String {
    let bytes: [u8; 32] = rand::random();
    URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests;
