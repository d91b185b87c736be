//! The guard in front of every HTTP route, `/mcp` and `/api` alike, and the header and error
//! helpers both use.
//!
//! [`Guard`] refuses requests whose `Host` is not this endpoint's loopback address, browser
//! requests from other sites (`Origin`, else `Sec-Fetch-Site`), and, when a token is set,
//! requests without it. Errors outside JSON-RPC are one shape, [`ErrorResponse`]:
//! `{"code": …, "message": …}`.

use std::fmt;
use std::sync::{Arc, RwLock};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};

use wire::echo;

/// The header in which browsers say which site's page made a request.
const SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");

/// `/mcp`'s bearer token, which a reload may turn on, change or turn off while requests run.
/// Cheap to clone: every clone is the same token.
#[derive(Clone, Default)]
pub struct EndpointToken(Arc<RwLock<Option<Arc<str>>>>);

impl EndpointToken {
    pub fn new(token: Option<String>) -> EndpointToken {
        EndpointToken(Arc::new(RwLock::new(token.map(Arc::from))))
    }

    /// The token now; `None` when `/mcp` takes requests without one.
    pub fn get(&self) -> Option<Arc<str>> {
        self.0
            .read()
            .expect("the token lock is never poisoned")
            .clone()
    }

    /// Makes `token` the one required from now on; whether that changed anything.
    pub fn set(&self, token: Option<String>) -> bool {
        let mut current = self.0.write().expect("the token lock is never poisoned");
        if current.as_deref() == token.as_deref() {
            return false;
        }
        *current = token.map(Arc::from);
        true
    }
}

impl fmt::Debug for EndpointToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = self.0.read().is_ok_and(|token| token.is_some());
        f.write_str(if set {
            "EndpointToken(<redacted>)"
        } else {
            "EndpointToken(none)"
        })
    }
}

/// Checks every request against DNS rebinding and, when a token is configured, for the token.
///
/// The MCP endpoint and the control API share it: wrap a router with [`Guard::protect`], or call
/// the checks directly.
pub struct Guard {
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    token: EndpointToken,
    port: u16,
}

/// Why the guard refused a request.
#[derive(Debug, thiserror::Error)]
pub enum Rejection {
    #[error("{0}")]
    ForbiddenHost(String),
    #[error("{0}")]
    ForbiddenOrigin(String),
    #[error("{0}")]
    Unauthorized(String),
}

impl Guard {
    /// A guard for an endpoint on loopback `port`.
    ///
    /// `Host` must name a loopback address with exactly this port; `Origin`, when present, must
    /// be one of the endpoint's own loopback origins or one of `extra_origins` (never `null`);
    /// without it, `Sec-Fetch-Site`, when present, must not name another site.
    pub fn new(port: u16, token: EndpointToken, extra_origins: Vec<String>) -> Guard {
        let mut allowed_hosts: Vec<String> = ["127.0.0.1", "localhost", "[::1]"]
            .iter()
            .map(|name| format!("{name}:{port}"))
            .collect();
        if port == 80 {
            allowed_hosts.extend(["127.0.0.1", "localhost", "[::1]"].map(str::to_owned));
        }
        let mut allowed_origins: Vec<String> = allowed_hosts
            .iter()
            .map(|host| format!("http://{host}"))
            .collect();
        allowed_origins.extend(
            extra_origins
                .into_iter()
                .filter(|origin| !origin.eq_ignore_ascii_case("null")),
        );
        Guard {
            allowed_hosts,
            allowed_origins,
            token,
            port,
        }
    }

    /// Runs every check: Host and Origin first, so that a foreign page learns nothing about the
    /// token.
    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<(), Rejection> {
        self.check_host_origin(headers)?;
        self.check_token(headers)
    }

    /// Refuses requests whose `Host` is not this endpoint's loopback address, and browser
    /// requests from foreign pages (DNS rebinding, cross-site requests).
    pub fn check_host_origin(&self, headers: &HeaderMap) -> Result<(), Rejection> {
        self.check_host(headers)?;
        self.check_origin(headers)
    }

    /// Refuses a `Host` other than this endpoint's loopback address (DNS rebinding).
    pub fn check_host(&self, headers: &HeaderMap) -> Result<(), Rejection> {
        let expected = || {
            format!(
                "only 127.0.0.1:{port}, localhost:{port} and [::1]:{port} are served",
                port = self.port
            )
        };
        let host = match single_value(headers, &header::HOST) {
            Single::Absent => {
                return Err(Rejection::ForbiddenHost(format!(
                    "the request has no Host header; {}",
                    expected()
                )));
            }
            Single::Several => {
                return Err(Rejection::ForbiddenHost(format!(
                    "the request has several Host headers; {}",
                    expected()
                )));
            }
            Single::One(host) => host,
        };
        if !matches_any(host, &self.allowed_hosts) {
            return Err(Rejection::ForbiddenHost(format!(
                "Host {} is not this endpoint; {} (DNS rebinding protection)",
                echo(host),
                expected()
            )));
        }
        Ok(())
    }

    fn check_origin(&self, headers: &HeaderMap) -> Result<(), Rejection> {
        match single_value(headers, &header::ORIGIN) {
            Single::Absent => check_fetch_site(headers),
            Single::Several => Err(Rejection::ForbiddenOrigin(
                "the request has several Origin headers".to_owned(),
            )),
            Single::One(origin) if matches_any(origin, &self.allowed_origins) => Ok(()),
            Single::One(origin) => Err(Rejection::ForbiddenOrigin(format!(
                "requests from Origin {} are refused; only pages of this endpoint may call it",
                echo(origin)
            ))),
        }
    }

    /// Refuses requests without the configured bearer token; passes everything when none is set.
    pub(crate) fn check_token(&self, headers: &HeaderMap) -> Result<(), Rejection> {
        let token = self
            .token
            .0
            .read()
            .expect("the token lock is never poisoned");
        let Some(expected) = token.as_deref() else {
            return Ok(());
        };
        match bearer_tokens(headers).next() {
            None => Err(Rejection::Unauthorized(
                "this endpoint needs `Authorization: Bearer <token>`".to_owned(),
            )),
            Some(token) if constant_time_eq(token.as_bytes(), expected.as_bytes()) => Ok(()),
            Some(_) => Err(Rejection::Unauthorized(
                "the bearer token does not match".to_owned(),
            )),
        }
    }

    /// Puts every route of `router` behind this guard.
    pub(crate) fn protect<S>(self: Arc<Self>, router: Router<S>) -> Router<S>
    where
        S: Clone + Send + Sync + 'static,
    {
        router.layer(middleware::from_fn_with_state(self, guard_requests))
    }
}

/// Without an `Origin` (a link followed, an image, a script or a frame loaded), a browser still
/// says in `Sec-Fetch-Site` whether another site's page made the request; such requests are
/// refused like a foreign `Origin`. Clients other than browsers send neither header.
fn check_fetch_site(headers: &HeaderMap) -> Result<(), Rejection> {
    match single_value(headers, &SEC_FETCH_SITE) {
        Single::Absent => Ok(()),
        Single::One(site)
            if site.eq_ignore_ascii_case("same-origin") || site.eq_ignore_ascii_case("none") =>
        {
            Ok(())
        }
        Single::One(site) => Err(Rejection::ForbiddenOrigin(format!(
            "requests from another site's page (Sec-Fetch-Site: {}) are refused; only pages of \
             this endpoint may call it",
            echo(site)
        ))),
        Single::Several => Err(Rejection::ForbiddenOrigin(
            "the request has several Sec-Fetch-Site headers".to_owned(),
        )),
    }
}

/// The guard as middleware (see [`Guard::protect`]).
pub(crate) async fn guard_requests(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    if let Err(rejection) = guard.check(request.headers()) {
        tracing::debug!(
            code = rejection.code(),
            "refused an HTTP request: {rejection}"
        );
        return rejection.into_response();
    }
    next.run(request).await
}

impl Rejection {
    /// The stable error code of the `{code, message}` body.
    pub fn code(&self) -> &'static str {
        match self {
            Rejection::ForbiddenHost(_) => "forbidden_host",
            Rejection::ForbiddenOrigin(_) => "forbidden_origin",
            Rejection::Unauthorized(_) => "unauthorized",
        }
    }

    pub(crate) fn status(&self) -> StatusCode {
        match self {
            Rejection::ForbiddenHost(_) | Rejection::ForbiddenOrigin(_) => StatusCode::FORBIDDEN,
            Rejection::Unauthorized(_) => StatusCode::UNAUTHORIZED,
        }
    }
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        ErrorResponse::new(self.status(), self.code(), self.to_string()).into_response()
    }
}

/// The one error body of the HTTP surfaces outside JSON-RPC: `{"code": …, "message": …}` with
/// a stable code, a sentence for people, and `WWW-Authenticate: Bearer` on a 401.
#[derive(Debug)]
pub struct ErrorResponse {
    pub(crate) status: StatusCode,
    pub(crate) code: &'static str,
    pub(crate) message: String,
}

impl ErrorResponse {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ErrorResponse {
            status,
            code,
            message: message.into(),
        }
    }
}

impl IntoResponse for ErrorResponse {
    fn into_response(self) -> Response {
        #[derive(serde::Serialize)]
        struct Body<'a> {
            code: &'a str,
            message: &'a str,
        }
        let body = serde_json::to_vec(&Body {
            code: self.code,
            message: &self.message,
        })
        .expect("an error body always serializes");
        let mut response = json_response(self.status, body);
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// A response with a JSON body that no cache keeps.
pub fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    platform::memory::passed(body.len());
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// What a request's `Content-Type` says of its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentType {
    /// No `Content-Type` header.
    Absent,
    /// `application/json`, with or without parameters.
    Json,
    /// Anything else, several headers, or a value that is not visible ASCII.
    Other,
}

/// Reads the `Content-Type` of a request. `/mcp` tolerates an absent one (some MCP clients send
/// none); the control API, which browsers reach, requires JSON on requests that change something,
/// because a cross-site form cannot send it.
pub fn content_type(headers: &HeaderMap) -> ContentType {
    match single_value(headers, &header::CONTENT_TYPE) {
        Single::Absent => ContentType::Absent,
        Single::One(value) if essence(value).eq_ignore_ascii_case("application/json") => {
            ContentType::Json
        }
        Single::One(_) | Single::Several => ContentType::Other,
    }
}

/// A media type without its parameters.
pub(crate) fn essence(media_type: &str) -> &str {
    media_type.split(';').next().unwrap_or("").trim()
}

/// Every bearer token in the request's `Authorization` headers.
pub fn bearer_tokens(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .filter_map(bearer_token)
}

enum Single<'a> {
    Absent,
    One(&'a str),
    Several,
}

/// The one value of a header; a value that is not visible ASCII reads as empty.
fn single_value<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Single<'a> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (None, _) => Single::Absent,
        (Some(value), None) => Single::One(value.to_str().unwrap_or("")),
        (Some(_), Some(_)) => Single::Several,
    }
}

fn matches_any(value: &str, allowed: &[String]) -> bool {
    allowed
        .iter()
        .any(|allowed| allowed.eq_ignore_ascii_case(value))
}

fn bearer_token(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// Compares without stopping at the first difference, so timing does not reveal a prefix of the
/// token. (A token's length is not treated as a secret.)
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut difference = 0u8;
    for (x, y) in a.iter().zip(b) {
        difference = std::hint::black_box(difference | (x ^ y));
    }
    difference == 0
}
