//! `switchboard search`, `add`, `update` and `remove`: servers from the registry sources, added
//! to the config with what the entry asks for typed at the terminal (a secret without echo).

use std::collections::BTreeMap;
use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use platform::runtime;
use registry::install::{self, AddRequest, InstallError};
use registry::plan::{self, InputSpec};
use registry::{Refresh, Registry, entry::Status};

/// The registry of the config at `path` (its sources, and whether added servers wait for
/// review), the defaults when it cannot be read.
fn registry_of(path: &Path) -> (Registry, bool) {
    let settings = config::load(path)
        .map(|config| config.registry)
        .unwrap_or_default();
    (
        Registry::new(settings.sources, &platform::dirs::data_dir()),
        settings.review_added,
    )
}

pub(crate) fn search(
    query: &[String],
    source: Option<String>,
    refresh: bool,
    config: &Path,
) -> anyhow::Result<ExitCode> {
    let (registry, _) = registry_of(config);
    let loaded = runtime::current_thread().block_on(registry.load(
        source.as_deref(),
        if refresh {
            Refresh::Always
        } else {
            Refresh::IfStale
        },
    ));
    for report in &loaded.reports {
        if let Some(error) = &report.error {
            eprintln!(
                "warning: {}: {error} (its cache of {} entries is searched)",
                report.url, report.entries
            );
        }
    }
    let found = loaded.search(&query.join(" "));
    if found.is_empty() {
        eprintln!("no entry matches {:?}", query.join(" "));
        return Ok(ExitCode::FAILURE);
    }
    for (cache, record) in found {
        let server = &record.server;
        let mut marks = Vec::new();
        if record.status() == Status::Deprecated {
            marks.push("deprecated".to_owned());
        }
        if !loaded.is_verified(cache, record) {
            marks.push("name not verified".to_owned());
        }
        if let Err(why) = plan::choose(server) {
            marks.push(format!("cannot be added: {why}"));
        }
        let marks = match marks.is_empty() {
            true => String::new(),
            false => format!(" [{}]", marks.join("; ")),
        };
        let kinds: Vec<String> = server
            .packages
            .iter()
            .map(|p| format!("{} {}", p.registry_type, p.identifier))
            .chain(
                server
                    .remotes
                    .iter()
                    .map(|r| format!("{} {}", r.kind, r.url)),
            )
            .collect();
        eprintln!("{}@{}{marks}", server.name, server.version);
        if let Some(title) = &server.title {
            eprintln!("  {title}");
        }
        if !server.description.is_empty() {
            eprintln!("  {}", server.description);
        }
        eprintln!("  {} (from {})", kinds.join(", "), cache.url);
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) struct AddOptions {
    pub(crate) entry: String,
    pub(crate) source: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) inputs: Vec<String>,
    pub(crate) yes: bool,
    pub(crate) config: PathBuf,
}

pub(crate) fn add(options: AddOptions) -> anyhow::Result<ExitCode> {
    let (name, version) = match options.entry.rsplit_once('@') {
        Some((name, version)) if !name.is_empty() => (name.to_owned(), Some(version.to_owned())),
        _ => (options.entry.clone(), None),
    };
    let (registry, review) = registry_of(&options.config);
    let mut given = BTreeMap::new();
    for input in &options.inputs {
        let (key, value) = input
            .split_once('=')
            .with_context(|| format!("--input {input:?}: write KEY=VALUE"))?;
        given.insert(key.to_owned(), value.to_owned());
    }
    let runtime = runtime::current_thread();
    if let Some(version) = &version
        && !registry::entry::is_exact_version(version)
    {
        anyhow::bail!(
            "{version:?} is not an exact version: name one release (as `switchboard search` \
             shows), or none for the newest"
        );
    }
    let (_, record) = runtime
        .block_on(install::find_entry(
            &registry,
            &name,
            version.as_deref(),
            options.source.as_deref(),
        ))
        .map_err(anyhow::Error::from)?;
    let choice = plan::choose(&record.server)
        .map_err(|why| anyhow::anyhow!("{} cannot be added: {why}", record.server.name))?;
    eprintln!("{} {}", record.server.name, record.server.version);
    if !record.server.description.is_empty() {
        eprintln!("  {}", record.server.description);
    }
    if record.status() == Status::Deprecated {
        eprintln!(
            "  deprecated{}",
            record
                .status_message()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        );
    }
    // Without a terminal nobody can say yes: nothing is asked, and the plan is only shown.
    let at_terminal = std::io::stdin().is_terminal();
    for spec in plan::inputs(&record.server, choice) {
        if given.contains_key(&spec.key) {
            continue;
        }
        if options.yes || !at_terminal {
            if spec.required && spec.default.is_none() {
                anyhow::bail!(
                    "{} is required (--input {}=VALUE); nothing was added",
                    spec.key,
                    spec.key
                );
            }
            continue;
        }
        if let Some(value) = ask(&spec)? {
            given.insert(spec.key.clone(), value);
        }
    }
    let data_dir = platform::dirs::data_dir();
    let request = AddRequest {
        name: &record.server.name,
        version: Some(&record.server.version),
        source: options.source.as_deref(),
        server: options.name.as_deref(),
        inputs: given,
        config_path: &options.config,
        data_dir: &data_dir,
        review,
    };
    let planned = match runtime.block_on(install::plan(&registry, &request)) {
        Ok(planned) => planned,
        Err(InstallError::MissingInputs(keys)) => {
            anyhow::bail!(
                "required and not given: {}; nothing was added",
                keys.join(", ")
            )
        }
        Err(error) => return Err(error.into()),
    };
    show_plan(&planned.plan);
    if !options.yes {
        if !at_terminal {
            eprintln!(
                "nothing was added: no terminal to say yes at; run it again with --yes to add \
                 exactly this"
            );
            return Ok(ExitCode::FAILURE);
        }
        if !confirm("Add it and start it? [y/N] ")? {
            eprintln!("nothing was added");
            return Ok(ExitCode::FAILURE);
        }
    }
    let added = runtime.block_on(install::commit(planned, &request))?;
    eprintln!(
        "Added `{}` ({} {}) to {}:\n  {}",
        added.server,
        added.entry,
        added.version,
        options.config.display(),
        added.command
    );
    for secret in &added.secrets {
        eprintln!("  its secret {secret} is in the keychain");
    }
    for note in &added.notes {
        eprintln!("  note: {note}");
    }
    if added.held {
        eprintln!(
            "  its tools wait for your review before editors see them: the dashboard's Review page"
        );
    }
    super::tell_running_instance();
    Ok(ExitCode::SUCCESS)
}

/// What adding would do, exactly: each argument on a line of its own (quoted, so that spaces
/// and empty ones show), the environment with secrets as the names the config gives them.
fn show_plan(plan: &install::Plan) {
    eprintln!(
        "Adding it as `{}` (from {}) writes this to the config; nothing is written or started \
         before you say yes:",
        plan.server, plan.source
    );
    match &plan.launch {
        install::LaunchView::Command { program, args, env } => {
            eprintln!("  runs      {program:?}");
            for arg in args {
                eprintln!("  argument  {arg:?}");
            }
            for (name, value) in env {
                eprintln!("  env       {name}={value:?}");
            }
        }
        install::LaunchView::Remote {
            url,
            transport,
            headers,
        } => {
            eprintln!("  connects  {url} ({transport})");
            for (name, value) in headers {
                eprintln!("  header    {name}: {value:?}");
            }
        }
    }
    for secret in &plan.secrets {
        eprintln!("  secret    {secret}, kept in the keychain");
    }
    for note in &plan.notes {
        eprintln!("  note: {note}");
    }
}

/// Asks for one input at the terminal; `None` when it is left empty and not required.
fn ask(spec: &InputSpec) -> anyhow::Result<Option<String>> {
    let mut prompt = spec.key.clone();
    if let Some(description) = &spec.description {
        prompt.push_str(&format!(" ({description})"));
    }
    if !spec.choices.is_empty() {
        prompt.push_str(&format!(" [{}]", spec.choices.join("|")));
    }
    if let Some(default) = &spec.default {
        prompt.push_str(&format!(" [default: {default}]"));
    }
    if spec.secret {
        prompt.push_str(" (kept in the keychain)");
    }
    prompt.push_str(if spec.required { " (required): " } else { ": " });
    loop {
        let value = if spec.secret && std::io::stdin().is_terminal() {
            platform::terminal::read_secret(&prompt)?
        } else {
            eprint!("{prompt}");
            std::io::stderr().flush()?;
            let mut line = String::new();
            if std::io::stdin().lock().read_line(&mut line)? == 0 {
                anyhow::bail!("standard input ended before {} was given", spec.key);
            }
            line.trim_end_matches(['\n', '\r']).to_owned()
        };
        if value.is_empty() {
            if spec.default.is_some() || !spec.required {
                return Ok(None);
            }
            eprintln!("{} is required", spec.key);
            continue;
        }
        if !spec.choices.is_empty() && !spec.choices.contains(&value) {
            eprintln!("choose one of {}", spec.choices.join(", "));
            continue;
        }
        return Ok(Some(value));
    }
}

fn confirm(prompt: &str) -> anyhow::Result<bool> {
    eprint!("{prompt}");
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}

pub(crate) fn update(
    server: &str,
    version: Option<String>,
    config: &Path,
) -> anyhow::Result<ExitCode> {
    let (registry, _) = registry_of(config);
    let updated = runtime::current_thread().block_on(install::update(
        &registry,
        config,
        server,
        version.as_deref(),
    ))?;
    eprintln!(
        "`{}` moves from {} to {}; changed tools wait for your review",
        updated.server, updated.from, updated.to
    );
    super::tell_running_instance();
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn remove(
    server: &str,
    delete_secrets: Option<bool>,
    config: &Path,
) -> anyhow::Result<ExitCode> {
    let runtime = runtime::current_thread();
    let secrets = install::secrets_of(config, server)?;
    let delete = match (delete_secrets, secrets.is_empty()) {
        (_, true) => Vec::new(),
        (Some(true), false) => secrets.clone(),
        (Some(false), false) => Vec::new(),
        (None, false) => {
            eprintln!("`{server}` uses the secrets {}", secrets.join(", "));
            match confirm("Delete them from the keychain too? [y/N] ")? {
                true => secrets.clone(),
                false => Vec::new(),
            }
        }
    };
    let removed = runtime.block_on(install::remove(
        config,
        &platform::dirs::data_dir(),
        server,
        &delete,
    ))?;
    eprintln!(
        "`{}` is removed, with its pins and cached tools",
        removed.server
    );
    for name in &removed.deleted_secrets {
        eprintln!("  its secret {name} is deleted");
    }
    for name in &removed.kept_secrets {
        eprintln!("  its secret {name} stays in the keychain");
    }
    super::tell_running_instance();
    Ok(ExitCode::SUCCESS)
}
