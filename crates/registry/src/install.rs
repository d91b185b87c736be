//! A registry's server added to the config, updated to another version, or removed.
//!
//! Adding is two steps, so that nothing runs before a person has seen exactly what runs.
//! [`plan`] finds the entry in the sources (the version asked for, else the newest), works it
//! out (`plan.rs`), downloads an MCPB bundle and checks it against its digest (reading its
//! manifest, unpacking nothing), reads the config as it would be as `serve` reads it (a server
//! `serve` would leave out, its runner not installed say, is refused: [`InstallError::WouldNotRun`]),
//! checks its package's ownership (`verify.rs`), and gives the exact
//! program, arguments and environment (or address and headers) with a digest of it all; it
//! writes and starts nothing. [`commit`] then unpacks a bundle, keeps secret inputs in the
//! keychain (never over a secret that exists), starts the server's pins empty so that
//! everything it offers first waits for review (unless `[registry] review_added` is off), and
//! appends its entry to the config under comments that say where it came from. The config's
//! watcher then starts it. A second request commits only the plan whose digest it names. Removing takes out the entry, its pins, its cached
//! catalog and bundle, and the secrets the person chooses of those no other server names; a
//! keychain that cannot be used does not stop it, and is said in [`Removed`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::entry::{Record, Status};
use super::plan::{Derived, EntryLaunch, PlanError};
use super::{Loaded, Refresh, Registry, source};
use config::Format;

/// What to add.
pub struct AddRequest<'a> {
    pub name: &'a str,
    pub version: Option<&'a str>,
    /// Only this source (a base URL, or `built-in`).
    pub source: Option<&'a str>,
    /// The server's name in the config; made from the entry's name when `None`.
    pub server: Option<&'a str>,
    pub inputs: BTreeMap<String, String>,
    pub config_path: &'a Path,
    pub data_dir: &'a Path,
    /// Whether its pins start empty, so that what the server offers first waits for review
    /// (`[registry] review_added`).
    pub review: bool,
    /// Whether everything new waits for review anyway (`[security] approve_new_tools`).
    pub approve_new_tools: bool,
}

mod add;
pub use add::{LaunchView, Plan, Planned, commit, plan};

/// A server added.
#[derive(Debug, Clone, Serialize)]
pub struct Added {
    pub server: String,
    pub entry: String,
    pub version: String,
    /// What runs (the command line) or is reached (the URL), as the config writes it.
    pub command: String,
    /// Whether its first tools wait for review.
    pub held: bool,
    /// Secrets it keeps in the keychain.
    pub secrets: Vec<String>,
    /// Worth telling: a deprecated entry, an ownership not checked.
    pub notes: Vec<String>,
}

/// Why something could not be done; each names what to do about it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum InstallError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    NotInstallable(String),
    #[error("{} required: {}", if .0.len() == 1 { "an input is" } else { "inputs are" }, .0.join(", "))]
    MissingInputs(Vec<String>),
    #[error("{0}")]
    NameTaken(String),
    /// What adding it would write is not what Switchboard runs: a runner not installed, a field
    /// it refuses.
    #[error("{0}")]
    WouldNotRun(String),
    #[error("{0}")]
    Source(String),
    #[error("{0}")]
    Refused(String),
    #[error(
        "what adding it would do is not the plan that was confirmed (the entry, its source, \
         the config or the keychain changed meanwhile); nothing is written: look at the new \
         plan and confirm that one"
    )]
    PlanChanged,
    #[error("{0}")]
    Write(String),
}

impl From<PlanError> for InstallError {
    fn from(error: PlanError) -> InstallError {
        match error {
            PlanError::NotInstallable(reason) => InstallError::NotInstallable(reason),
            PlanError::MissingInputs(keys) => InstallError::MissingInputs(keys),
        }
    }
}

/// The entry `name` (at `version`) and the source it comes from: from the sources' caches,
/// else asked of each source.
pub async fn find_entry(
    registry: &Registry,
    name: &str,
    version: Option<&str>,
    only: Option<&str>,
) -> Result<(String, Record), InstallError> {
    let loaded = registry.load(only, Refresh::IfStale).await;
    if let Some((cache, record)) = loaded.find(name, version) {
        return Ok((cache.url.clone(), record.clone()));
    }
    let client = source::client();
    let mut failures = Vec::new();
    for report in &loaded.reports {
        if report.url == source::BUILT_IN {
            continue;
        }
        match source::fetch_version(&client, &report.url, name, version.unwrap_or("latest")).await {
            Ok(record) if record.status() != Status::Deleted => {
                return Ok((report.url.clone(), record));
            }
            Ok(_) => failures.push(format!("{}: taken down (deleted)", report.url)),
            Err(error) => failures.push(error.to_string()),
        }
    }
    let what = match version {
        Some(version) => format!("{name}@{version}"),
        None => name.to_owned(),
    };
    Err(InstallError::NotFound(match failures.is_empty() {
        true => format!("no source lists {what}"),
        false => format!("no source lists {what} ({})", failures.join("; ")),
    }))
}

/// The config's text, or what a new config starts as.
fn read_config(path: &Path) -> Result<String, InstallError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(error) => Err(InstallError::Write(format!(
            "cannot read {}: {error}",
            path.display()
        ))),
    }
}

/// The names of the config's servers.
fn server_names(text: &str, format: Format) -> Result<Vec<String>, InstallError> {
    Ok(entries(text, format)?.into_keys().collect())
}

/// Each server's entry as JSON, by name.
fn entries(
    text: &str,
    format: Format,
) -> Result<BTreeMap<String, serde_json::Value>, InstallError> {
    let unreadable =
        |error: String| InstallError::Write(format!("the config cannot be read: {error}"));
    let servers = match format {
        Format::Toml => {
            let value: toml::Table = toml::from_str(text).map_err(|e| unreadable(e.to_string()))?;
            serde_json::to_value(
                value
                    .get("servers")
                    .cloned()
                    .unwrap_or(toml::Value::Table(Default::default())),
            )
            .map_err(|e| unreadable(e.to_string()))?
        }
        Format::Json if text.trim().is_empty() => serde_json::Value::Null,
        Format::Json => {
            let value: serde_json::Value =
                serde_json::from_str(text).map_err(|e| unreadable(e.to_string()))?;
            value.get("mcpServers").cloned().unwrap_or_default()
        }
    };
    Ok(match servers {
        serde_json::Value::Object(map) => map.into_iter().collect(),
        _ => BTreeMap::new(),
    })
}

/// A server name from an entry's: its last part (`io.github.x/server-time` → `server-time`).
fn default_server_name(entry: &str) -> String {
    let last = entry.rsplit('/').next().unwrap_or(entry);
    let name: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(config::MAX_SERVER_NAME_LEN)
        .collect();
    if name.is_empty() {
        "server".to_owned()
    } else {
        name
    }
}

fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= config::MAX_SERVER_NAME_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// What runs or is reached, in one line.
fn summary(launch: &EntryLaunch) -> String {
    match launch {
        EntryLaunch::Command { command, args, .. } => std::iter::once(command.as_str())
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        EntryLaunch::Remote { url, .. } | EntryLaunch::Bundle { url, .. } => url.clone(),
    }
}

/// `text` with the server appended, under comments saying where it came from.
fn with_server(
    text: &str,
    format: Format,
    server: &str,
    record: &Record,
    derived: &Derived,
) -> Result<String, InstallError> {
    let mut entry = serde_json::Map::new();
    match &derived.launch {
        EntryLaunch::Command { command, args, env } => {
            entry.insert("command".into(), command.clone().into());
            entry.insert("args".into(), serde_json::json!(args));
            if !env.is_empty() {
                entry.insert("env".into(), serde_json::json!(env));
            }
        }
        EntryLaunch::Remote {
            url,
            transport,
            headers,
        } => {
            entry.insert("url".into(), url.clone().into());
            entry.insert("transport".into(), transport.clone().into());
            if !headers.is_empty() {
                entry.insert("headers".into(), serde_json::json!(headers));
            }
        }
        EntryLaunch::Bundle { .. } => unreachable!("a bundle is unpacked before it is written"),
    }
    entry.insert(
        "registry".into(),
        format!("{}@{}", record.server.name, record.server.version).into(),
    );
    let edit = |error: config::edit::EditError| InstallError::Write(error.to_string());
    let comment = format!(
        "Added from the MCP Registry: {} {}.{}",
        record.server.name,
        record.server.version,
        record
            .server
            .repository
            .as_ref()
            .filter(|r| !r.url.is_empty())
            .map(|r| format!(" Source code: {}", r.url))
            .unwrap_or_default()
    );
    config::edit::add_server(text, format, server, &entry, &comment).map_err(edit)
}

/// A server of the config that came from a registry, or runs a package a source knows.
#[derive(Debug, Clone, Serialize)]
pub struct Installed {
    pub server: String,
    /// The registry entry it came from, or whose package it runs.
    pub entry: Option<String>,
    /// The version its command line pins (or the entry's, for a remote server).
    pub(crate) version: Option<String>,
    pub(crate) latest: Option<String>,
    pub(crate) update_available: bool,
    /// The secrets its entry names and no other server's does, which removing it may delete
    /// too.
    pub(crate) secrets: Vec<String>,
}

/// Every server of the config, with what the sources know of it; `running` tells the version a
/// server's runner resolved, for a command line that pins none.
pub fn installed(
    config_path: &Path,
    loaded: &Loaded,
    running: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Installed>, InstallError> {
    let text = read_config(config_path)?;
    let format = Format::of(config_path);
    let mut list = Vec::new();
    let all = entries(&text, format)?;
    for (name, entry) in &all {
        let server = name.clone();
        let origin = entry.get("registry").and_then(|v| v.as_str());
        let (origin_name, origin_version) = match origin.and_then(|o| o.rsplit_once('@')) {
            Some((name, version)) => (Some(name), Some(version)),
            None => (origin, None),
        };
        let pinned = pinned_package(entry);
        let latest = loaded.latest_for(
            origin_name,
            pinned
                .as_ref()
                .map(|p| (p.registry_type, p.identifier.as_str())),
        );
        let version = pinned
            .as_ref()
            .and_then(|p| p.version.clone())
            .or_else(|| pinned.as_ref().and_then(|_| running(&server)))
            .or(origin_version.map(str::to_owned));
        let entry_name = origin_name
            .map(str::to_owned)
            .or_else(|| latest.map(|r| r.server.name.clone()));
        let latest_version = latest.map(|record| latest_pin(record, pinned.as_ref()));
        let update_available = match (&version, &latest_version) {
            (Some(version), Some(latest)) => super::compare_versions(latest, version).is_gt(),
            _ => false,
        };
        list.push(Installed {
            server,
            entry: entry_name,
            version,
            latest: latest_version,
            update_available,
            secrets: own_secrets(entry, name, &all),
        });
    }
    Ok(list)
}

/// The version the package of `record` has (its entry's when it names none).
fn latest_pin(record: &Record, pinned: Option<&PinnedPackage>) -> String {
    pinned
        .and_then(|p| {
            record
                .server
                .packages
                .iter()
                .find(|q| q.registry_type == p.registry_type && q.identifier == p.identifier)
        })
        .and_then(|package| package.version.clone())
        .unwrap_or_else(|| record.server.version.clone())
}

/// A package a runner in a server's command line runs, and the version it pins.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PinnedPackage {
    pub(crate) registry_type: &'static str,
    pub(crate) identifier: String,
    pub(crate) version: Option<String>,
    /// Its argument's index in `args`.
    pub(crate) at: usize,
}

/// The package `npx`/`uvx` (and the other runners) run in `entry`, with its pin.
fn pinned_package(entry: &serde_json::Value) -> Option<PinnedPackage> {
    let command = entry.get("command")?.as_str()?;
    let args: Vec<String> = entry
        .get("args")
        .and_then(|a| a.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    pinned_in(command, &args)
}

/// The package a runner's command line runs, and the version it pins.
pub(crate) fn pinned_in(command: &str, args: &[String]) -> Option<PinnedPackage> {
    let run = supervisor::runner::package_run(command, args)?;
    let at = args.iter().position(|arg| *arg == run.package)?;
    let python = ["uvx", "uv tool run", "pipx run"].contains(&run.runner.as_str());
    let (registry_type, identifier, version) = if python {
        match run.package.split_once("==") {
            Some((name, version)) => ("pypi", name.to_owned(), Some(version.to_owned())),
            None => ("pypi", run.package.clone(), None),
        }
    } else {
        // `@scope/name@1.2.3`: the version follows the last `@` that is not the first character.
        match run.package[1..].rfind('@') {
            Some(index) => (
                "npm",
                run.package[..index + 1].to_owned(),
                Some(run.package[index + 2..].to_owned()),
            ),
            None => ("npm", run.package.clone(), None),
        }
    };
    let version = version.filter(|v| super::entry::is_exact_version(v));
    Some(PinnedPackage {
        registry_type,
        identifier,
        version,
        at,
    })
}

/// The secrets `server`'s entry in the config names and no other server's does: those that
/// removing it may delete.
pub fn secrets_of(config_path: &Path, server: &str) -> Result<Vec<String>, InstallError> {
    let text = read_config(config_path)?;
    let entries = entries(&text, Format::of(config_path))?;
    let entry = entries
        .get(server)
        .ok_or_else(|| InstallError::NotFound(format!("the config has no server `{server}`")))?;
    Ok(own_secrets(entry, server, &entries))
}

/// The secrets `entry` (of `server`) names that no other of `entries` does.
fn own_secrets(
    entry: &serde_json::Value,
    server: &str,
    entries: &BTreeMap<String, serde_json::Value>,
) -> Vec<String> {
    secret_names(entry)
        .into_iter()
        .filter(|name| sharer(name, server, entries).is_none())
        .collect()
}

/// Another server of `entries` than `server` that names the secret `name`.
fn sharer<'a>(
    name: &str,
    server: &str,
    entries: &'a BTreeMap<String, serde_json::Value>,
) -> Option<&'a str> {
    entries
        .iter()
        .find(|(other, entry)| *other != server && secret_names(entry).iter().any(|n| n == name))
        .map(|(other, _)| other.as_str())
}

/// `server`'s entry in the config `text`.
fn entry_of(text: &str, format: Format, server: &str) -> Result<serde_json::Value, InstallError> {
    entries(text, format)?
        .remove(server)
        .ok_or_else(|| InstallError::NotFound(format!("the config has no server `{server}`")))
}

/// The secrets (`${secret:NAME}`) an entry names anywhere.
fn secret_names(entry: &serde_json::Value) -> Vec<String> {
    platform::secrets::referenced_names(&entry.to_string())
        .into_iter()
        .collect()
}

/// What an update did.
#[derive(Debug, Clone, Serialize)]
pub struct Updated {
    pub server: String,
    pub from: String,
    pub to: String,
}

/// Moves `server`'s pin to `version` (the newest the sources have when `None`), after checking
/// the new release is its entry's own package.
pub async fn update(
    registry: &Registry,
    config_path: &Path,
    server: &str,
    version: Option<&str>,
) -> Result<Updated, InstallError> {
    let text = read_config(config_path)?;
    let format = Format::of(config_path);
    let entry = entry_of(&text, format, server)?;
    let pinned = pinned_package(&entry).ok_or_else(|| {
        InstallError::NotInstallable(format!(
            "`{server}` runs no package of npm or PyPI whose version can be moved"
        ))
    })?;
    let from = pinned
        .version
        .clone()
        .unwrap_or_else(|| "(unpinned)".to_owned());
    let origin = entry
        .get("registry")
        .and_then(|v| v.as_str())
        .map(|o| o.rsplit_once('@').map_or(o, |(name, _)| name).to_owned());
    let loaded = registry.load(None, Refresh::IfStale).await;
    let record = match version {
        Some(version) => match &origin {
            Some(name) => find_entry(registry, name, Some(version), None).await?.1,
            None => loaded
                .latest_for(None, Some((pinned.registry_type, &pinned.identifier)))
                .cloned()
                .ok_or_else(|| {
                    InstallError::NotFound(format!("no source knows {}", pinned.identifier))
                })?,
        },
        None => loaded
            .latest_for(
                origin.as_deref(),
                Some((pinned.registry_type, &pinned.identifier)),
            )
            .cloned()
            .ok_or_else(|| {
                InstallError::NotFound(format!(
                    "no source lists {}",
                    origin.as_deref().unwrap_or(&pinned.identifier)
                ))
            })?,
    };
    let to = version
        .map(str::to_owned)
        .unwrap_or_else(|| latest_pin(&record, Some(&pinned)));
    if !super::entry::is_exact_version(&to) {
        return Err(InstallError::NotInstallable(format!(
            "{to:?} is not an exact version"
        )));
    }
    if let Some(name) = &origin {
        super::verify::check(pinned.registry_type, &pinned.identifier, &to, name)
            .await
            .map_err(|refused| InstallError::Refused(refused.to_string()))?;
    }
    let argument = match pinned.registry_type {
        "pypi" => format!("{}=={to}", pinned.identifier),
        _ => format!("{}@{to}", pinned.identifier),
    };
    let origin_value = origin.map(|name| format!("{name}@{}", record.server.version));
    let changed = config::edit::set_server_arg(
        &text,
        format,
        server,
        pinned.at,
        &argument,
        origin_value.as_deref(),
    )
    .map_err(|error| InstallError::Write(error.to_string()))?;
    platform::atomic::write_keeping_permissions(config_path, changed.as_bytes()).map_err(
        |error| InstallError::Write(format!("cannot write {}: {error}", config_path.display())),
    )?;
    Ok(Updated {
        server: server.to_owned(),
        from,
        to,
    })
}

/// What removing did.
#[derive(Debug, Clone, Serialize)]
pub struct Removed {
    pub server: String,
    pub deleted_secrets: Vec<String>,
    pub kept_secrets: Vec<String>,
    /// Secrets it was asked to delete that the keychain could not: they may still be there.
    pub undeleted_secrets: Vec<String>,
    /// Why the keychain could not be used, when it was needed and could not be (its secrets
    /// or a remote server's sign-in tokens not deleted), in a few words.
    pub keychain_problem: Option<String>,
}

/// Takes `server` out of the config and its profiles, with its pins, cached catalog, bundle and
/// sign-in tokens; deletes those of its secrets that `delete_secrets` names.
pub async fn remove(
    config_path: &Path,
    data_dir: &Path,
    server: &str,
    delete_secrets: &[String],
) -> Result<Removed, InstallError> {
    let text = read_config(config_path)?;
    let format = Format::of(config_path);
    let all = entries(&text, format)?;
    let entry = all
        .get(server)
        .ok_or_else(|| InstallError::NotFound(format!("the config has no server `{server}`")))?;
    let named = secret_names(entry);
    if let Some(stranger) = delete_secrets.iter().find(|name| !named.contains(name)) {
        return Err(InstallError::Refused(format!(
            "`{server}` does not use the secret {stranger}; only its own secrets are deleted with it"
        )));
    }
    if let Some((name, other)) = delete_secrets
        .iter()
        .find_map(|name| Some((name, sharer(name, server, &all)?)))
    {
        return Err(InstallError::Refused(format!(
            "the secret {name} is named by `{other}` too, so it is not deleted with `{server}`; \
             nothing is removed"
        )));
    }
    let changed = config::edit::remove_server(&text, format, server)
        .map_err(|error| InstallError::Write(error.to_string()))?;
    platform::atomic::write_keeping_permissions(config_path, changed.as_bytes()).map_err(
        |error| InstallError::Write(format!("cannot write {}: {error}", config_path.display())),
    )?;
    let leftovers: [PathBuf; 3] = [
        data_dir.join("pins").join(format!("{server}.json")),
        data_dir.join("catalog").join(format!("{server}.json")),
        data_dir.join("bundles").join(server),
    ];
    for path in leftovers {
        let removed = match path.is_dir() {
            true => std::fs::remove_dir_all(&path),
            false => std::fs::remove_file(&path),
        };
        if let Err(error) = removed
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!("cannot remove {}: {error}", path.display());
        }
    }
    // A remote server's sign-in tokens are Switchboard's own credential for it: gone with it.
    // A local server has none, and needs no keychain to be removed.
    let remote = entry.get("url").is_some();
    let to_delete = delete_secrets.to_vec();
    let backend = server.to_owned();
    let (deleted, problem) = tokio::task::spawn_blocking(move || {
        let mut problem = None;
        if remote && let Err(error) = auth::delete_stored_tokens(&backend) {
            problem = Some(error);
        }
        let keychain = platform::secrets::Keychain::secrets();
        let mut deleted = Vec::new();
        for name in to_delete {
            match keychain.delete(&name) {
                Ok(_) => deleted.push(name),
                Err(error) => problem = Some(error),
            }
        }
        (deleted, problem)
    })
    .await
    .map_err(|error| InstallError::Write(error.to_string()))?;
    let undeleted: Vec<String> = delete_secrets
        .iter()
        .filter(|name| !deleted.contains(name))
        .cloned()
        .collect();
    Ok(Removed {
        server: server.to_owned(),
        kept_secrets: named
            .into_iter()
            .filter(|name| !deleted.contains(name) && !undeleted.contains(name))
            .collect(),
        deleted_secrets: deleted,
        undeleted_secrets: undeleted,
        // In a few words: the platform logs what the system said.
        keychain_problem: problem.map(|error| error.summary()),
    })
}

#[cfg(test)]
mod tests;
