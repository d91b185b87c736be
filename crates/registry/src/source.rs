//! One registry source: a base URL of the v0.1 API, read page by page into a cache on disk, and
//! refreshed with `updated_since` once it is older than [`FRESH_FOR`]. Entries a source marks
//! `deleted` are dropped, from a refresh too. A source that fails is reported with its cache,
//! however old, still searched.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::entry::{self, Page, Record, Status, UnreadableEntry};

/// How long a source's cache is used before it is refreshed (the registry asks for about
/// hourly reads).
pub(crate) const FRESH_FOR: Duration = Duration::from_secs(60 * 60);
/// How long a source that failed is left alone before it is tried again, so that a source that
/// is down or hangs costs one wait, not one per search.
pub(crate) const RETRY_AFTER: Duration = Duration::from_secs(5 * 60);
/// How often a source is read in full, whatever `updated_since` would skip.
pub(crate) const FULL_READ_EVERY: Duration = Duration::from_secs(24 * 60 * 60);
/// How far ahead of this machine's clock a source's clock may be.
const CLOCK_SKEW: Duration = Duration::from_secs(5 * 60);
/// How long one request to a source may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// The most pages read in one refresh (100 entries each).
const MAX_PAGES: usize = 500;
/// The largest page read.
const MAX_PAGE_BYTES: usize = 16 * 1024 * 1024;
/// The name of the set of entries built into the program.
pub(crate) const BUILT_IN: &str = "built-in";

/// What the program knows of one source: its entries, and when it last read them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SourceCache {
    pub url: String,
    /// When it was last read in full or refreshed (ms since 1970); 0: never.
    pub(crate) refreshed_at: u64,
    /// The latest `updatedAt` among its entries, for the next `updated_since`.
    pub(crate) newest: Option<String>,
    /// When reading it last failed (ms since 1970), and why; cleared by a read that works.
    #[serde(default)]
    pub(crate) failed: Option<(u64, String)>,
    /// When it was last read in full (ms since 1970); 0: never.
    #[serde(default)]
    pub(crate) full_read_at: u64,
    pub(crate) records: Vec<Record>,
}

impl SourceCache {
    /// The reference set built into the program, for use offline.
    pub(crate) fn built_in() -> SourceCache {
        let records: Vec<Record> = serde_json::from_str(include_str!("reference.json"))
            .expect("the built-in reference set is valid");
        SourceCache {
            url: BUILT_IN.to_owned(),
            refreshed_at: 0,
            newest: None,
            failed: None,
            full_read_at: 0,
            records,
        }
    }

    /// The cache of `url` in `dir`, or an empty one.
    pub(crate) fn load(dir: &Path, url: &str) -> SourceCache {
        let path = cache_file(dir, url);
        std::fs::read(&path)
            .ok()
            .and_then(
                |bytes| match serde_json::from_slice::<SourceCache>(&bytes) {
                    Ok(cache) => Some(cache),
                    Err(error) => {
                        tracing::warn!(
                            "the cache {} is read again from its source: {error}",
                            path.display()
                        );
                        None
                    }
                },
            )
            .filter(|cache| cache.url == url)
            .unwrap_or_else(|| SourceCache {
                url: url.to_owned(),
                ..SourceCache::default()
            })
    }

    pub(super) fn save(&self, dir: &Path) -> Result<(), SourceError> {
        platform::files::create_private_dir(dir).map_err(|error| SourceError::MakeDir {
            dir: dir.to_owned(),
            error,
        })?;
        let bytes = serde_json::to_vec(self).map_err(SourceError::Encode)?;
        let path = cache_file(dir, &self.url);
        platform::atomic::write_private(&path, &bytes)
            .map_err(|error| SourceError::Write { path, error })
    }

    /// Whether it is read recently enough to be used as it is: read within the hour, or failed
    /// within [`RETRY_AFTER`].
    pub(crate) fn is_fresh(&self, now: SystemTime) -> bool {
        let now = platform::clock::unix_millis(now);
        let within =
            |at: u64, limit: Duration| at > 0 && now.saturating_sub(at) < limit.as_millis() as u64;
        self.url == BUILT_IN
            || within(self.refreshed_at, FRESH_FOR)
            || self
                .failed
                .as_ref()
                .is_some_and(|(at, _)| within(*at, RETRY_AFTER))
    }

    /// Reads the source again as [`SourceCache::refresh`] does; a failure is kept (with the
    /// cache as it was) so that the next searches within [`RETRY_AFTER`] say it without waiting.
    pub(crate) async fn refresh_or_note(
        &mut self,
        dir: &Path,
        client: &reqwest::Client,
        full: bool,
    ) -> Result<(), SourceError> {
        match self.refresh(dir, client, full).await {
            Ok(()) => Ok(()),
            Err(error) => {
                self.failed = Some((
                    platform::clock::unix_millis(SystemTime::now()),
                    error.to_string(),
                ));
                if let Err(unsaved) = self.save(dir) {
                    tracing::warn!("{unsaved}");
                }
                Err(error)
            }
        }
    }

    /// Reads the source again and keeps the result in `dir`: in full when `full` says so or
    /// the last full read is older than [`FULL_READ_EVERY`], else only what changed since the
    /// newest entry it has. A full read replaces every entry, so that what a source no longer
    /// lists goes too.
    pub(crate) async fn refresh(
        &mut self,
        dir: &Path,
        client: &reqwest::Client,
        full: bool,
    ) -> Result<(), SourceError> {
        let now = SystemTime::now();
        let now_ms = platform::clock::unix_millis(now);
        let full = full
            || self.records.is_empty()
            || now_ms.saturating_sub(self.full_read_at) >= FULL_READ_EVERY.as_millis() as u64;
        let since = self.newest.clone().filter(|_| !full);
        let fetched = fetch_all(client, &self.url, since.as_deref()).await?;
        if full {
            self.records.clear();
            self.full_read_at = now_ms;
        }
        for record in fetched {
            self.records.retain(|kept| {
                kept.server.name != record.server.name
                    || kept.server.version != record.server.version
            });
            // A newer latest version makes the others not the latest.
            if record.is_latest() {
                for kept in self
                    .records
                    .iter_mut()
                    .filter(|kept| kept.server.name == record.server.name)
                {
                    if let Some(official) = kept.meta.official.as_mut() {
                        official.is_latest = false;
                    }
                }
            }
            if record.status() != Status::Deleted {
                self.records.push(record);
            }
        }
        self.newest = newest_read(&self.records, now).or(since);
        self.refreshed_at = now_ms;
        self.failed = None;
        self.save(dir)
    }
}

/// The `updated_since` of the next refresh after reading `records` at `now`: their latest
/// `updatedAt`, but never later than now (and a little skew): an entry dated in the future
/// would otherwise hide every change made before that date, takedowns too.
fn newest_read(records: &[Record], now: SystemTime) -> Option<String> {
    let limit = jiff::Timestamp::try_from(now + CLOCK_SKEW).ok()?;
    records
        .iter()
        .filter_map(|record| record.updated_at()?.parse::<jiff::Timestamp>().ok())
        .max()
        .map(|newest| newest.min(limit).to_string())
}

/// Where the cache of `url` is kept.
fn cache_file(dir: &Path, url: &str) -> PathBuf {
    let digest = platform::hex::encode(&Sha256::digest(url.as_bytes()));
    dir.join(format!("{}.json", &digest[..16]))
}

/// The most redirects one request follows.
const MAX_REDIRECTS: usize = 3;

/// An HTTP client for sources and bundles: bounded in time, redirects followed only to https
/// (so that an address elsewhere cannot send Switchboard to one on this machine or in plain
/// text).
pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::custom(
            |attempt| match redirect_problem(attempt.url(), attempt.previous().len()) {
                Some(problem) => attempt.error(problem),
                None => attempt.follow(),
            },
        ))
        .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("an HTTP client with no unusual settings builds")
}

/// Why a redirect to `to`, after `followed` others, is not followed.
fn redirect_problem(to: &reqwest::Url, followed: usize) -> Option<RedirectRefused> {
    if followed > MAX_REDIRECTS {
        return Some(RedirectRefused::TooMany);
    }
    (to.scheme() != "https").then(|| RedirectRefused::NotHttps(to.to_string()))
}

/// A redirect not followed.
#[derive(Debug, thiserror::Error)]
enum RedirectRefused {
    #[error("it redirects more than {MAX_REDIRECTS} times")]
    TooMany,
    #[error("it redirects to {0}, which is not https; only https redirects are followed")]
    NotHttps(String),
}

/// Why a source could not be read, or its cache not kept.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SourceError {
    #[error("cannot make {}: {error}", dir.display())]
    MakeDir {
        dir: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error(transparent)]
    Encode(serde_json::Error),
    #[error("cannot write {}: {error}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("{base} is not a URL: {error}")]
    BaseNotUrl {
        base: String,
        #[source]
        error: url::ParseError,
    },
    #[error("{base} lists more than {MAX_PAGES} pages; read the first ones only")]
    TooManyPages { base: String },
    /// The address of one version of one server does not parse.
    #[error("{address}: {error}")]
    VersionNotUrl {
        address: String,
        #[source]
        error: url::ParseError,
    },
    #[error("{url} did not answer within {} s", REQUEST_TIMEOUT.as_secs())]
    Timeout { url: String },
    #[error("{url}: {}", wire::http_error::describe(error))]
    Unreachable {
        url: String,
        #[source]
        error: reqwest::Error,
    },
    #[error("{url} answered 404: not found")]
    NotFound { url: String },
    #[error("{url} answered {status}")]
    Status {
        url: String,
        status: reqwest::StatusCode,
    },
    #[error("{url}: {error}")]
    Body {
        url: String,
        #[source]
        error: BodyError,
    },
    /// The answer is not JSON of the registry's API; `start` is how it begins.
    #[error(
        "{url} answered something that is not the registry API ({error}); it starts with \
         {start:?}"
    )]
    NotTheApi {
        url: String,
        #[source]
        error: serde_json::Error,
        start: String,
    },
    #[error(transparent)]
    Entry(#[from] UnreadableEntry),
}

/// Why a response's body could not be read whole.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    #[error("the answer stopped coming")]
    Stopped(#[source] reqwest::Error),
    #[error("{}", wire::http_error::describe(.0))]
    Broken(#[source] reqwest::Error),
    #[error("the answer is larger than {} MiB", limit / (1024 * 1024))]
    TooLarge { limit: usize },
}

/// Every entry `base` lists (changed since `since`), page by page; the deleted ones too, so
/// that a refresh can drop them.
async fn fetch_all(
    client: &reqwest::Client,
    base: &str,
    since: Option<&str>,
) -> Result<Vec<Record>, SourceError> {
    let mut records = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut url = reqwest::Url::parse(&format!("{}/v0.1/servers", base.trim_end_matches('/')))
            .map_err(|error| SourceError::BaseNotUrl {
                base: base.to_owned(),
                error,
            })?;
        {
            let mut query = url.query_pairs_mut();
            query.append_pair("limit", "100");
            if let Some(cursor) = &cursor {
                query.append_pair("cursor", cursor);
            }
            if let Some(since) = since {
                query.append_pair("updated_since", since);
            }
        }
        let page: Page = get_json(client, &url).await?;
        for value in page.servers {
            match entry::record(value) {
                Ok(record) => records.push(record),
                Err(error) => tracing::warn!(source = base, "an entry is skipped: {error}"),
            }
        }
        match page.metadata.next_cursor.filter(|next| !next.is_empty()) {
            Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
            _ => return Ok(records),
        }
    }
    Err(SourceError::TooManyPages {
        base: base.to_owned(),
    })
}

/// One version of one server, asked of the source itself.
pub(crate) async fn fetch_version(
    client: &reqwest::Client,
    base: &str,
    name: &str,
    version: &str,
) -> Result<Record, SourceError> {
    let encode =
        |part: &str| url::form_urlencoded::byte_serialize(part.as_bytes()).collect::<String>();
    let text = format!(
        "{}/v0.1/servers/{}/versions/{}",
        base.trim_end_matches('/'),
        encode(name),
        encode(version)
    );
    let url = reqwest::Url::parse(&text).map_err(|error| SourceError::VersionNotUrl {
        address: text.clone(),
        error,
    })?;
    let value: serde_json::Value = get_json(client, &url).await?;
    Ok(entry::record(value)?)
}

/// `url`'s JSON body as `T`, or what went wrong.
async fn get_json<T: serde::de::DeserializeOwned>(
    client: &reqwest::Client,
    url: &reqwest::Url,
) -> Result<T, SourceError> {
    let bytes = get_body(
        client,
        url.clone(),
        Some("application/json"),
        MAX_PAGE_BYTES,
    )
    .await
    .map_err(|error| match error {
        GetError::Unanswered(error) if error.is_timeout() => SourceError::Timeout {
            url: url.to_string(),
        },
        GetError::Unanswered(error) => SourceError::Unreachable {
            url: url.to_string(),
            error,
        },
        GetError::Status(reqwest::StatusCode::NOT_FOUND) => SourceError::NotFound {
            url: url.to_string(),
        },
        GetError::Status(status) => SourceError::Status {
            url: url.to_string(),
            status,
        },
        GetError::Body(error) => SourceError::Body {
            url: url.to_string(),
            error,
        },
    })?;
    serde_json::from_slice(&bytes).map_err(|error| SourceError::NotTheApi {
        url: url.to_string(),
        error,
        start: String::from_utf8_lossy(&bytes[..bytes.len().min(60)]).into_owned(),
    })
}

/// Why a GET brought no body; each says what happened in words, the URL left to the caller.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GetError {
    /// No answer: the request could not be sent, or none came in time.
    #[error("{}", wire::http_error::describe(.0))]
    Unanswered(reqwest::Error),
    /// An answer other than a success.
    #[error("it answered {0}")]
    Status(reqwest::StatusCode),
    /// The answer's body stopped, or grew past its limit.
    #[error(transparent)]
    Body(BodyError),
}

/// The body of a successful (2xx) answer to a GET of `url` with `client`, at most `limit`
/// bytes, asking for `accept` where given: the one way this crate fetches over HTTP (a
/// source's pages, a package's release, a bundle).
pub(crate) async fn get_body(
    client: &reqwest::Client,
    url: impl reqwest::IntoUrl,
    accept: Option<&str>,
    limit: usize,
) -> Result<Vec<u8>, GetError> {
    let mut request = client.get(url);
    if let Some(accept) = accept {
        request = request.header("Accept", accept);
    }
    let response = request.send().await.map_err(GetError::Unanswered)?;
    let status = response.status();
    if !status.is_success() {
        return Err(GetError::Status(status));
    }
    read_bounded(response, limit).await.map_err(GetError::Body)
}

/// A response's body, refused once it passes `limit` bytes.
async fn read_bounded(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, BodyError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| match error.is_timeout() {
            true => BodyError::Stopped(error),
            false => BodyError::Broken(error),
        })?
    {
        if bytes.len() + chunk.len() > limit {
            return Err(BodyError::TooLarge { limit });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dated(updated_at: &str) -> Record {
        serde_json::from_value(serde_json::json!({
            "server": {"name": "a", "version": "1.0.0"},
            "_meta": {"io.modelcontextprotocol.registry/official": {"updatedAt": updated_at}}
        }))
        .unwrap()
    }

    #[test]
    fn an_entry_dated_in_the_future_does_not_freeze_the_next_refresh() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
        let past = dated("2026-01-01T00:00:00Z");
        assert_eq!(
            newest_read(std::slice::from_ref(&past), now).as_deref(),
            Some("2026-01-01T00:00:00Z")
        );
        let future = dated("9000-12-31T23:59:59Z");
        let newest = newest_read(&[past.clone(), future], now).unwrap();
        let limit = jiff::Timestamp::try_from(now + CLOCK_SKEW).unwrap();
        assert_eq!(newest, limit.to_string(), "now and a little skew at most");
        // A date past what a timestamp holds is no date: the others decide.
        let unreadable = dated("9999-12-31T23:59:59Z");
        assert_eq!(
            newest_read(&[past, unreadable], now).as_deref(),
            Some("2026-01-01T00:00:00Z")
        );
    }

    #[test]
    fn redirects_are_followed_only_to_https() {
        let url = |text: &str| reqwest::Url::parse(text).unwrap();
        assert!(redirect_problem(&url("https://cdn.example.com/a.mcpb"), 0).is_none());
        for to in [
            "http://192.0.2.2:18903/internal-only",
            "http://127.0.0.1:9/admin",
            "file:///etc/passwd",
        ] {
            let refused = redirect_problem(&url(to), 0).unwrap().to_string();
            assert!(refused.contains("which is not https"), "{to}: {refused}");
        }
        assert!(
            redirect_problem(&url("https://a.example/"), MAX_REDIRECTS + 1)
                .unwrap()
                .to_string()
                .contains("more than 3 times")
        );
    }
}
