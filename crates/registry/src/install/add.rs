//! Adding a registry's server, in two steps so that nothing runs before a person has seen
//! exactly what runs: [`plan`] works out what adding would do and writes and starts nothing;
//! [`commit`] does it, for a plan that was confirmed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use super::{
    AddRequest, Added, InstallError, default_server_name, find_entry, read_config, server_names,
    summary, valid_server_name, with_server,
};
use crate::Registry;
use crate::entry::Status;
use crate::plan::{self, Derived, EntryLaunch};
use config::Format;

/// What adding an entry would do, shown for a yes before anything is written or run: the
/// exact program, arguments and environment (secrets as the `${secret:NAME}` the config will
/// name), or the address and headers of a remote server.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub server: String,
    pub(crate) entry: String,
    pub(crate) version: String,
    /// The source the entry comes from (a base URL, or `built-in`).
    pub source: String,
    pub launch: LaunchView,
    /// What runs (the command line) or is reached (the URL), in one line.
    pub(crate) command: String,
    /// Whether its first tools wait for review.
    pub(crate) held: bool,
    /// Secrets it keeps in the keychain, by name (never their values).
    pub secrets: Vec<String>,
    /// Worth telling: a deprecated entry, an ownership not checked, a secret's name changed.
    pub notes: Vec<String>,
    /// The digest of this plan: the call that commits it names it, so that what is added is
    /// exactly what was shown.
    pub confirm: String,
}

/// What runs, as the config will say it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LaunchView {
    Command {
        program: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
    },
    Remote {
        url: String,
        transport: String,
        headers: BTreeMap<String, String>,
    },
}

/// A plan with what committing it needs.
pub struct Planned {
    pub plan: Plan,
    derived: Derived,
    /// The config's text with the server added.
    merged: String,
    /// The bundle's bytes, checked against its digest, for a bundle.
    bundle: Option<Vec<u8>>,
}

/// Works out what adding the entry `request` names would do, writing and running nothing: the
/// entry found and worked out, its package's owner checked, a bundle downloaded and checked
/// against its digest (not unpacked), and the config as it would be.
pub async fn plan(registry: &Registry, request: &AddRequest<'_>) -> Result<Planned, InstallError> {
    if let Some(version) = request.version
        && !crate::entry::is_exact_version(version)
    {
        return Err(InstallError::NotInstallable(format!(
            "{version:?} is not an exact version: name one release (as `search` shows), or none \
             for the newest"
        )));
    }
    let (source_url, record) =
        find_entry(registry, request.name, request.version, request.source).await?;
    let mut notes = Vec::new();
    if record.status() == Status::Deprecated {
        notes.push(format!(
            "the entry is deprecated{}",
            record
                .status_message()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        ));
    }
    let choice = plan::choose(&record.server)
        .map_err(|unusable| InstallError::NotInstallable(unusable.to_string()))?;
    let text = read_config(request.config_path)?;
    let format = Format::of(request.config_path);
    let taken = server_names(&text, format)?;
    let server = match request.server {
        Some(server) => server.to_owned(),
        None => default_server_name(&record.server.name),
    };
    if !valid_server_name(&server) {
        return Err(InstallError::Refused(format!(
            "{server:?} cannot name a server: use letters, digits, `_` and `-`"
        )));
    }
    if taken.iter().any(|name| name.eq_ignore_ascii_case(&server)) {
        return Err(InstallError::NameTaken(format!(
            "a server named `{server}` exists already; give another name"
        )));
    }
    let secret_names = secrets_in_use(&text).await;
    let values = plan::Values {
        given: &request.inputs,
        server: &server,
        taken: &secret_names,
    };
    let mut derived = plan::derive(&record.server, choice, &values)?;
    for (name, _) in &derived.secrets {
        if let Some(base) = renamed_from(name, &secret_names) {
            notes.push(format!(
                "the secret {base} exists already (in the keychain or named by another server), \
                 so this server's is kept as {name} and {base} is left as it is"
            ));
        }
    }
    let mut bundle = None;
    let bundle_folder = request.data_dir.join("bundles").join(&server);
    if let EntryLaunch::Bundle { url, sha256 } = &derived.launch {
        if let Some(problem) = crate::bundle::origin_problem(url, &source_url) {
            return Err(InstallError::Refused(problem));
        }
        let refused = |error: crate::bundle::BundleError| InstallError::Refused(error.to_string());
        let bytes = crate::bundle::download(url, sha256)
            .await
            .map_err(refused)?;
        derived.launch = crate::bundle::launch_of(&bytes, &bundle_folder).map_err(refused)?;
        bundle = Some(bytes);
    }
    let secrets: Vec<String> = derived
        .secrets
        .iter()
        .map(|(name, _)| name.clone())
        .collect();
    let merged = with_server(&text, format, &server, &record, &derived)?;
    let checked = config::parse(request.config_path, &merged).map_err(|error| {
        InstallError::Write(format!(
            "adding it would make the config unusable; nothing is written:\n{error}"
        ))
    })?;
    // What `serve` would say of it (a runner that is not installed, say), but for its secrets,
    // which are not in the keychain until the config is written. An error would leave the
    // server out: refused, and nothing is written.
    let field = format!("{}.{server}", format.servers_key());
    let (errors, warnings): (Vec<_>, Vec<_>) = checked
        .diagnostics
        .iter()
        .filter(|d| d.field == field || d.field.starts_with(&format!("{field}.")))
        .filter(|d| !d.message.contains("is not in the keychain"))
        .filter(|d| {
            !(bundle.is_some()
                && d.field == format!("{field}.command")
                && runs_from(&derived.launch, &bundle_folder))
        })
        .partition(|d| d.severity == config::Severity::Error);
    if !errors.is_empty() {
        let reasons: Vec<String> = errors
            .iter()
            .map(|d| format!("{}: {}", d.field, d.message))
            .collect();
        return Err(InstallError::WouldNotRun(format!(
            "Switchboard would not run `{server}` as written: {}",
            reasons.join("; ")
        )));
    }
    notes.extend(
        warnings
            .iter()
            .map(|d| format!("{}: {}", d.severity, d.message)),
    );
    // Asked of npm or PyPI last, once what it would write is known to run.
    if let Some((kind, identifier)) = &derived.package {
        match crate::verify::check(kind, identifier, &derived.version, &record.server.name)
            .await
            .map_err(|refused| InstallError::Refused(refused.to_string()))?
        {
            crate::verify::Ownership::Proved => {}
            crate::verify::Ownership::NotChecked(why) => {
                notes.push(format!("whose package it is was not checked: {why}"));
            }
        }
    }
    let launch = match &derived.launch {
        EntryLaunch::Command { command, args, env } => LaunchView::Command {
            program: command.clone(),
            args: args.clone(),
            env: env.clone(),
        },
        EntryLaunch::Remote {
            url,
            transport,
            headers,
        } => LaunchView::Remote {
            url: url.clone(),
            transport: transport.clone(),
            headers: headers.clone(),
        },
        EntryLaunch::Bundle { .. } => unreachable!("a bundle's launch is read from its manifest"),
    };
    let mut plan = Plan {
        server,
        entry: record.server.name.clone(),
        version: derived.version.clone(),
        source: source_url,
        command: summary(&derived.launch),
        launch,
        held: request.review || request.approve_new_tools,
        secrets,
        notes,
        confirm: String::new(),
    };
    plan.confirm = digest_of(&plan, &merged);
    Ok(Planned {
        plan,
        derived,
        merged,
        bundle,
    })
}

/// Whether `launch` runs a program from `folder` (a bundle's own, which is not unpacked until the
/// plan is confirmed, so it cannot be looked for before).
fn runs_from(launch: &EntryLaunch, folder: &Path) -> bool {
    matches!(launch, EntryLaunch::Command { command, .. } if Path::new(command).starts_with(folder))
}

/// The digest a plan is confirmed by: of what it shows (all but its notes) and the config it
/// writes.
fn digest_of(plan: &Plan, merged: &str) -> String {
    use sha2::{Digest as _, Sha256};
    let shown = serde_json::json!([
        plan.server,
        plan.entry,
        plan.version,
        plan.source,
        plan.launch,
        plan.held,
        plan.secrets,
        merged,
    ]);
    platform::hex::encode(&Sha256::digest(shown.to_string().as_bytes()))
}

/// `name` as [`plan::Values`] numbers a secret whose name was in use (`BASE_2`…): its base,
/// when that is in `taken`.
fn renamed_from(name: &str, taken: &BTreeSet<String>) -> Option<String> {
    let (base, number) = name.rsplit_once('_')?;
    (number.parse::<u32>().is_ok_and(|n| n >= 2) && taken.contains(base)).then(|| base.to_owned())
}

/// The secret names in use: those the config `text` names, and those in the keychain (when it
/// can be read; a secret found there at commit time still refuses the add).
async fn secrets_in_use(text: &str) -> BTreeSet<String> {
    let mut names = platform::secrets::referenced_names(text);
    let kept = tokio::task::spawn_blocking(|| platform::secrets::Keychain::secrets().names()).await;
    match kept {
        Ok(Ok(kept)) => names.extend(kept),
        // Not worth a warning: a secret found there when the plan is committed still refuses it.
        Ok(Err(error)) => tracing::debug!("the keychain's names cannot be read: {error}"),
        Err(error) => tracing::warn!("the keychain's names cannot be read: {error}"),
    }
    names
}

/// Adds what `planned` shows to the config: a bundle unpacked, secrets kept in the keychain
/// (never over one that exists), pins started empty, the config written. The config's watcher
/// then starts it.
pub async fn commit(planned: Planned, request: &AddRequest<'_>) -> Result<Added, InstallError> {
    let Planned {
        plan,
        derived,
        merged,
        bundle,
    } = planned;
    // The config may have changed since it was read: the plan is made again by the caller for
    // a second request, and here only a server of the same name is looked for once more.
    let now = read_config(request.config_path)?;
    if server_names(&now, Format::of(request.config_path))?
        .iter()
        .any(|name| name.eq_ignore_ascii_case(&plan.server))
    {
        return Err(InstallError::NameTaken(format!(
            "a server named `{}` exists already; give another name",
            plan.server
        )));
    }
    if let Some(bytes) = bundle {
        let folder = request.data_dir.join("bundles");
        let server = plan.server.clone();
        tokio::task::spawn_blocking(move || crate::bundle::extract(&bytes, &folder, &server))
            .await
            .map_err(|error| InstallError::Write(error.to_string()))?
            .map_err(|error| InstallError::Refused(error.to_string()))?;
    }
    // The keychain first: a config naming secrets that are not there would not run.
    let kept = derived.secrets.clone();
    let stored = tokio::task::spawn_blocking(move || -> Result<(), InstallError> {
        let keychain = platform::secrets::Keychain::secrets();
        let keychain_error = |error: platform::secrets::SecretError| {
            InstallError::Write(format!("cannot keep its secrets: {error}"))
        };
        for (name, _) in &kept {
            if keychain.get(name).map_err(keychain_error)?.is_some() {
                return Err(InstallError::Refused(format!(
                    "the keychain has a secret named {name} already; it is not written over \
                     and nothing is added (remove it, or give the server another name)"
                )));
            }
        }
        kept.iter()
            .try_for_each(|(name, value)| keychain.set(name, value))
            .map_err(keychain_error)
    })
    .await
    .map_err(|error| InstallError::Write(error.to_string()))?;
    if let Err(error) = stored {
        remove_bundle(request.data_dir, &plan.server);
        return Err(error);
    }
    if request.review {
        hub::pins::start_empty(&request.data_dir.join("pins"), &plan.server)
            .map_err(|error| InstallError::Write(format!("cannot start its pins: {error}")))?;
    }
    platform::atomic::write_keeping_permissions(request.config_path, merged.as_bytes()).map_err(
        |error| {
            InstallError::Write(format!(
                "cannot write {}: {error}",
                request.config_path.display()
            ))
        },
    )?;
    Ok(Added {
        server: plan.server,
        entry: plan.entry,
        version: plan.version,
        command: plan.command,
        held: plan.held,
        secrets: plan.secrets,
        notes: plan.notes,
    })
}

/// Takes out the bundle unpacked for `server`, after an add that failed.
fn remove_bundle(data_dir: &Path, server: &str) {
    let folder = data_dir.join("bundles").join(server);
    if let Err(error) = std::fs::remove_dir_all(&folder)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!("cannot remove {}: {error}", folder.display());
    }
}
