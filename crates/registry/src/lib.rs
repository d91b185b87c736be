//! Servers from MCP registries: the sources the config lists (`[registry] sources`, base URLs
//! of the v0.1 API) and a reference set built in for use offline, searched from a cache on disk
//! (`source.rs`); what an entry becomes in the config (`plan.rs`); whose package it is
//! (`verify.rs`); and adding, updating and removing such a server (`install.rs`).
//!
//! Floor 7 of the workspace (ARCHITECTURE.md). It stands on `hub` and below (for pins of a new
//! server); it never reaches an editor's file.

mod bundle;
pub mod entry;
pub mod install;
pub mod plan;
pub(crate) mod source;
pub(crate) mod verify;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::SystemTime;

use serde::Serialize;

use entry::{Record, Status};
use source::{BUILT_IN, SourceCache};

/// The official registry, the one source whose word on who published a name is taken: it
/// verifies that a publisher owns the namespace of each name it lists.
pub(crate) const OFFICIAL: &str = "https://registry.modelcontextprotocol.io";
/// An environment variable naming another base URL as the official registry's (a mirror of
/// it, or a test's).
pub(crate) const OFFICIAL_ENV: &str = "SWITCHBOARD_OFFICIAL_REGISTRY";

/// The official registry's base URL: [`OFFICIAL`], unless [`OFFICIAL_ENV`] names another.
pub(crate) fn official_url() -> String {
    std::env::var(OFFICIAL_ENV)
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| OFFICIAL.to_owned())
        .trim_end_matches('/')
        .to_owned()
}

/// The most entries one search answers with.
const MAX_RESULTS: usize = 200;

/// The sources one search reads, and where their caches are.
#[derive(Debug, Clone)]
pub struct Registry {
    /// Base URLs, in the config's order; the built-in set is searched after them.
    pub(crate) sources: Vec<String>,
    pub(crate) cache_dir: PathBuf,
}

/// When a source is read again before its cache is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    /// The cache as it is, however old (what must answer at once).
    Never,
    /// Once the cache is older than [`source::FRESH_FOR`].
    IfStale,
    /// Now, in full.
    Always,
}

/// What a source said at one search.
#[derive(Debug, Clone, Serialize)]
pub struct SourceReport {
    pub url: String,
    pub entries: usize,
    pub(crate) refreshed_at: u64,
    pub error: Option<String>,
}

/// Every source's entries, as read for one search.
pub struct Loaded {
    pub(crate) caches: Vec<SourceCache>,
    pub reports: Vec<SourceReport>,
}

impl Registry {
    /// The registry of the data directory `data_dir` with `sources`.
    pub fn new(sources: Vec<String>, data_dir: &std::path::Path) -> Registry {
        Registry {
            sources,
            cache_dir: data_dir.join("registry"),
        }
    }

    /// Each source's cache, refreshed first as `refresh` says, all at once; only `only` when
    /// given (a URL of the list, or any other: it is read as a source of its own). A source that
    /// failed within [`source::RETRY_AFTER`] is reported with that failure without a new try
    /// (unless `Refresh::Always`).
    pub async fn load(&self, only: Option<&str>, refresh: Refresh) -> Loaded {
        let urls: Vec<String> = match only {
            Some(url) => vec![url.trim_end_matches('/').to_owned()],
            None => self.sources.clone(),
        };
        // Every source is read at once, so one that hangs delays a search by one timeout.
        let client = source::client();
        let mut reads = tokio::task::JoinSet::new();
        for (index, url) in urls.into_iter().enumerate() {
            if url == BUILT_IN {
                continue;
            }
            let (dir, client) = (self.cache_dir.clone(), client.clone());
            reads.spawn(async move {
                let mut cache = SourceCache::load(&dir, &url);
                let read = match refresh {
                    Refresh::Never => false,
                    Refresh::IfStale => !cache.is_fresh(SystemTime::now()),
                    Refresh::Always => true,
                };
                let error = match read {
                    true => cache
                        .refresh_or_note(&dir, &client, refresh == Refresh::Always)
                        .await
                        .err()
                        .map(|error| error.to_string()),
                    false => cache.failed.as_ref().map(|(_, error)| error.clone()),
                };
                (index, cache, error)
            });
        }
        let mut read = Vec::new();
        while let Some(done) = reads.join_next().await {
            read.push(done.expect("reading a source does not panic"));
        }
        read.sort_by_key(|(index, _, _)| *index);
        let mut caches = Vec::new();
        let mut reports = Vec::new();
        for (_, cache, error) in read {
            reports.push(SourceReport {
                url: cache.url.clone(),
                entries: cache.records.len(),
                refreshed_at: cache.refreshed_at,
                error,
            });
            caches.push(cache);
        }
        if only.is_none_or(|url| url == BUILT_IN) {
            let built_in = SourceCache::built_in();
            reports.push(SourceReport {
                url: BUILT_IN.to_owned(),
                entries: built_in.records.len(),
                refreshed_at: 0,
                error: None,
            });
            caches.push(built_in);
        }
        Loaded { caches, reports }
    }
}

impl Registry {
    /// Whether `url` names one of the config's sources, or the set built in.
    pub fn is_source(&self, url: &str) -> bool {
        let url = url.trim_end_matches('/');
        url == BUILT_IN || self.sources.iter().any(|source| source == url)
    }
}

impl Loaded {
    /// The newest version of each server matching `query` (every word in its name, title,
    /// description or a package's identifier, any case), best first: the first source listing
    /// a name wins.
    pub fn search(&self, query: &str) -> Vec<(&SourceCache, &Record)> {
        let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        let mut found: Vec<(u32, usize, &SourceCache, &Record)> = Vec::new();
        let mut seen: HashSet<&str> = HashSet::new();
        for cache in &self.caches {
            for record in latest_of_each(&cache.records) {
                if !seen.insert(&record.server.name) {
                    continue;
                }
                if let Some(score) = score(record, &words) {
                    found.push((score, found.len(), cache, record));
                }
            }
        }
        found.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        found
            .into_iter()
            .take(MAX_RESULTS)
            .map(|(_, _, cache, record)| (cache, record))
            .collect()
    }

    /// Whether `record`'s name is verified, as `cache` lists it: the official registry (or the
    /// set built in, copied from it) lists it with its metadata, or, from another source, the
    /// official registry's cache lists the same name with each of its packages and remotes.
    /// What an entry says of itself (`_meta`) counts only as the official registry serves it.
    pub fn is_verified(&self, cache: &SourceCache, record: &Record) -> bool {
        let official = official_url();
        if cache.url == official || cache.url == BUILT_IN {
            return record.has_official_meta();
        }
        let Some(official) = self.caches.iter().find(|each| each.url == official) else {
            return false;
        };
        let listed: Vec<&Record> = official
            .records
            .iter()
            .filter(|each| each.server.name == record.server.name && each.has_official_meta())
            .collect();
        let server = &record.server;
        let package_listed = |kind: &str, identifier: &str| {
            listed.iter().any(|each| {
                each.server
                    .packages
                    .iter()
                    .any(|p| p.registry_type == kind && p.identifier == identifier)
            })
        };
        let remote_listed = |url: &str| {
            listed
                .iter()
                .any(|each| each.server.remotes.iter().any(|r| r.url == url))
        };
        !(server.packages.is_empty() && server.remotes.is_empty())
            && server
                .packages
                .iter()
                .all(|p| package_listed(&p.registry_type, &p.identifier))
            && server.remotes.iter().all(|r| remote_listed(&r.url))
    }

    /// The entry `name` at `version` (its newest when `None`), from the first source with it.
    pub(crate) fn find(
        &self,
        name: &str,
        version: Option<&str>,
    ) -> Option<(&SourceCache, &Record)> {
        self.caches.iter().find_map(|cache| {
            let record = match version {
                Some(version) => cache
                    .records
                    .iter()
                    .find(|r| r.server.name == name && r.server.version == version),
                None => latest_of_each(&cache.records)
                    .into_iter()
                    .find(|r| r.server.name == name),
            }?;
            Some((cache, record))
        })
    }

    /// The newest version any source has of the server that runs `package` of `registry_type`
    /// (or is named `name`).
    pub(crate) fn latest_for(
        &self,
        name: Option<&str>,
        package: Option<(&str, &str)>,
    ) -> Option<&Record> {
        self.caches.iter().find_map(|cache| {
            latest_of_each(&cache.records)
                .into_iter()
                .find(|record| match (name, package) {
                    (Some(name), _) => record.server.name == name,
                    (None, Some((kind, identifier))) => record
                        .server
                        .packages
                        .iter()
                        .any(|p| p.registry_type == kind && p.identifier == identifier),
                    (None, None) => false,
                })
        })
    }
}

/// Each server's newest version in `records`: the one marked latest, else the highest; in the
/// order the source lists them.
fn latest_of_each(records: &[Record]) -> Vec<&Record> {
    let mut at: HashMap<&str, usize> = HashMap::new();
    let mut latest: Vec<&Record> = Vec::new();
    for record in records.iter().filter(|r| r.status() != Status::Deleted) {
        match at.get(record.server.name.as_str()) {
            Some(&index) => {
                if newer(record, latest[index]) {
                    latest[index] = record;
                }
            }
            None => {
                at.insert(&record.server.name, latest.len());
                latest.push(record);
            }
        }
    }
    latest
}

/// Whether `a` is a newer version than `b` of one server.
fn newer(a: &Record, b: &Record) -> bool {
    match (a.is_latest(), b.is_latest()) {
        (true, false) => true,
        (false, true) => false,
        _ => compare_versions(&a.server.version, &b.server.version).is_gt(),
    }
}

/// Versions compared part by part, numbers as numbers (`2026.10.1` after `2026.9.30`).
pub(crate) fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |v: &str| -> Vec<(u64, String)> {
        v.split(['.', '-', '+'])
            .map(|part| {
                let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
                (digits.parse().unwrap_or(0), part[digits.len()..].to_owned())
            })
            .collect()
    };
    let (a, b) = (parts(a), parts(b));
    for index in 0..a.len().max(b.len()) {
        let x = a.get(index).cloned().unwrap_or((0, String::new()));
        let y = b.get(index).cloned().unwrap_or((0, String::new()));
        // A pre-release suffix (`1.0.0-rc1`, `2.0b1`) sorts before the release.
        let order =
            x.0.cmp(&y.0)
                .then_with(|| match (x.1.is_empty(), y.1.is_empty()) {
                    (true, false) => std::cmp::Ordering::Greater,
                    (false, true) => std::cmp::Ordering::Less,
                    _ => x.1.cmp(&y.1),
                });
        if order.is_ne() {
            return order;
        }
    }
    std::cmp::Ordering::Equal
}

/// How well `record` matches `words` (higher is better), or `None` when a word is missing.
fn score(record: &Record, words: &[String]) -> Option<u32> {
    let server = &record.server;
    let name = server.name.to_lowercase();
    let title = server.title.as_deref().unwrap_or("").to_lowercase();
    let description = server.description.to_lowercase();
    let mut total = 1;
    for word in words {
        let in_package = server
            .packages
            .iter()
            .any(|p| p.identifier.to_lowercase().contains(word.as_str()));
        let points = if name.rsplit('/').next() == Some(word.as_str()) {
            8
        } else if name.contains(word.as_str()) {
            4
        } else if title.contains(word.as_str()) || in_package {
            3
        } else if description.contains(word.as_str()) {
            1
        } else {
            return None;
        };
        total += points;
    }
    Some(total)
}

#[cfg(test)]
mod tests;
