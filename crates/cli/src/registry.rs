//! `switchboard search`, `add`, `update` and `remove`: servers from the registry sources, added
//! to the config with what the entry asks for typed at the terminal (a secret without echo).
//! Search hits, the plan of an add and what was done are the result, on stdout; prompts,
//! warnings and errors go to stderr.

use std::collections::BTreeMap;
use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use serde::Serialize;

use crate::output;
use platform::runtime;
use registry::install::{self, AddRequest, InstallError};
use registry::plan::{self, InputSpec};
use registry::{Refresh, Registry, entry::Status};

/// The shape of `search --json`, shown by `switchboard search --help`.
pub(crate) const SEARCH_JSON_HELP: &str = "\
With --json, stdout has one JSON document:
  {\"entries\": [{\"name\", \"version\", \"title\", \"description\", \"source\",
                \"packages\": [{\"registry_type\", \"identifier\"}], \"remotes\": [{\"type\", \"url\"}],
                \"deprecated\": BOOL, \"verified\": BOOL, \"cannot_add\": REASON|null}],
   \"failed_sources\": [{\"url\", \"error\", \"cached_entries\"}]}
No entry found is not a failure: \"entries\" is empty, and the exit status 0.";

/// The shape of `add --json`, shown by `switchboard add --help`.
pub(crate) const ADD_JSON_HELP: &str = "\
With --json, nothing is asked, and stdout has one JSON document:
  {\"plan\": {\"server\", \"entry\", \"version\", \"source\",
            \"launch\": {\"kind\": \"command\", \"program\", \"args\", \"env\"}
                    | {\"kind\": \"remote\", \"url\", \"transport\", \"headers\"},
            \"command\", \"held\": BOOL, \"secrets\": [NAME], \"notes\": [TEXT], \"confirm\"},
   \"added\": null | {\"server\", \"entry\", \"version\", \"command\", \"held\", \"secrets\",
                     \"notes\"}}
Without --yes it is only the plan (\"added\" is null) and nothing is written. \"held\": what the
server offers waits on the dashboard's Review page until approved.";

/// The registry of the config at `path` (its sources), and whether what an added server offers
/// first waits for review; the defaults when the config cannot be read.
fn registry_of(path: &Path) -> (Registry, Review) {
    let config = config::load(path).ok();
    let settings = config
        .as_ref()
        .map(|config| config.registry.clone())
        .unwrap_or_default();
    let review = Review {
        added: settings.review_added,
        new_tools: config.is_some_and(|config| config.security.approve_new_tools),
    };
    (
        Registry::new(settings.sources, &platform::dirs::data_dir()),
        review,
    )
}

/// The settings that hold what a new server offers for review.
#[derive(Clone, Copy)]
struct Review {
    /// `[registry] review_added`: an added server's pins start empty.
    added: bool,
    /// `[security] approve_new_tools`: everything new waits, from any server.
    new_tools: bool,
}

/// One entry of `search --json`.
#[derive(Serialize)]
struct Found<'a> {
    name: &'a str,
    version: &'a str,
    title: Option<&'a str>,
    description: &'a str,
    source: &'a str,
    packages: Vec<FoundPackage<'a>>,
    remotes: Vec<FoundRemote<'a>>,
    deprecated: bool,
    /// Whether the entry's name is proved to be its publisher's.
    verified: bool,
    /// Why it cannot be added, when it cannot.
    cannot_add: Option<String>,
}

#[derive(Serialize)]
struct FoundPackage<'a> {
    registry_type: &'a str,
    identifier: &'a str,
}

#[derive(Serialize)]
struct FoundRemote<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    url: &'a str,
}

/// A source that could not be read now, whose cache was searched.
#[derive(Serialize)]
struct FailedSource<'a> {
    url: &'a str,
    error: String,
    cached_entries: usize,
}

#[derive(Serialize)]
struct SearchDocument<'a> {
    entries: Vec<Found<'a>>,
    failed_sources: Vec<FailedSource<'a>>,
}

pub(crate) fn search(
    query: &[String],
    source: Option<String>,
    refresh: bool,
    json: bool,
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
    let failed_sources: Vec<FailedSource> = loaded
        .reports
        .iter()
        .filter_map(|report| {
            Some(FailedSource {
                url: &report.url,
                error: report.error.clone()?,
                cached_entries: report.entries,
            })
        })
        .collect();
    for failed in &failed_sources {
        eprintln!(
            "warning: {}: {} (its cache of {} entries is searched)",
            failed.url, failed.error, failed.cached_entries
        );
    }
    let entries: Vec<Found> = loaded
        .search(&query.join(" "))
        .into_iter()
        .map(|(cache, record)| {
            let server = &record.server;
            Found {
                name: &server.name,
                version: &server.version,
                title: server.title.as_deref(),
                description: &server.description,
                source: &cache.url,
                packages: server
                    .packages
                    .iter()
                    .map(|package| FoundPackage {
                        registry_type: &package.registry_type,
                        identifier: &package.identifier,
                    })
                    .collect(),
                remotes: server
                    .remotes
                    .iter()
                    .map(|remote| FoundRemote {
                        kind: &remote.kind,
                        url: &remote.url,
                    })
                    .collect(),
                deprecated: record.status() == Status::Deprecated,
                verified: loaded.is_verified(cache, record),
                cannot_add: plan::choose(server).err().map(|why| why.to_string()),
            }
        })
        .collect();
    if entries.is_empty() {
        eprintln!("no entry matches {:?}", query.join(" "));
    }
    if json {
        output::json(&SearchDocument {
            entries,
            failed_sources,
        });
        return Ok(ExitCode::SUCCESS);
    }
    for found in &entries {
        let mut marks = Vec::new();
        if found.deprecated {
            marks.push("deprecated".to_owned());
        }
        if !found.verified {
            marks.push("name not verified".to_owned());
        }
        if let Some(why) = &found.cannot_add {
            marks.push(format!("cannot be added: {why}"));
        }
        let marks = match marks.is_empty() {
            true => String::new(),
            false => format!(" [{}]", marks.join("; ")),
        };
        let kinds: Vec<String> = found
            .packages
            .iter()
            .map(|p| format!("{} {}", p.registry_type, p.identifier))
            .chain(
                found
                    .remotes
                    .iter()
                    .map(|r| format!("{} {}", r.kind, r.url)),
            )
            .collect();
        output::line(format_args!("{}@{}{marks}", found.name, found.version));
        if let Some(title) = found.title {
            output::line(format_args!("  {title}"));
        }
        if !found.description.is_empty() {
            output::line(format_args!("  {}", found.description));
        }
        output::line(format_args!(
            "  {} (from {})",
            kinds.join(", "),
            found.source
        ));
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) struct AddOptions {
    pub(crate) entry: String,
    pub(crate) source: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) inputs: Vec<String>,
    pub(crate) yes: bool,
    pub(crate) json: bool,
    pub(crate) config: PathBuf,
}

/// `add --json`'s document.
#[derive(Serialize)]
struct AddDocument<'a> {
    plan: &'a install::Plan,
    added: Option<&'a install::Added>,
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
    // Without a terminal nobody can say yes: nothing is asked, and the plan is only shown.
    let at_terminal = std::io::stdin().is_terminal();
    let ask_nothing = options.yes || options.json || !at_terminal;
    for spec in plan::inputs(&record.server, choice) {
        if given.contains_key(&spec.key) {
            continue;
        }
        if ask_nothing {
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
        review: review.added,
        approve_new_tools: review.new_tools,
    };
    let planned = match runtime.block_on(install::plan(&registry, &request)) {
        Ok(planned) => planned,
        Err(InstallError::MissingInputs(keys)) => {
            anyhow::bail!(
                "required and not given: {}; nothing was added",
                keys.join(", ")
            )
        }
        Err(InstallError::NameTaken(message)) => {
            anyhow::bail!("{message} with --name NAME; nothing was added")
        }
        Err(error) => anyhow::bail!("{error}; nothing was added"),
    };
    if options.json && !options.yes {
        output::json(&AddDocument {
            plan: &planned.plan,
            added: None,
        });
        return Ok(ExitCode::SUCCESS);
    }
    if !options.json {
        show_plan(&record, &planned.plan);
    }
    for note in &planned.plan.notes {
        eprintln!("note: {note}");
    }
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
    let plan = planned.plan.clone();
    let added = runtime.block_on(install::commit(planned, &request))?;
    match options.json {
        true => output::json(&AddDocument {
            plan: &plan,
            added: Some(&added),
        }),
        false => show_added(&added, &options.config),
    }
    super::tell_running_instance();
    Ok(ExitCode::SUCCESS)
}

/// What adding did, and when editors see what the server offers.
fn show_added(added: &install::Added, config: &Path) {
    output::line(format_args!(
        "Added `{}` ({} {}) to {}:\n  {}",
        added.server,
        added.entry,
        added.version,
        config.display(),
        added.command
    ));
    for secret in &added.secrets {
        output::line(format_args!("  its secret {secret} is in the keychain"));
    }
    output::line(match added.held {
        true => {
            "  what it offers waits for your review on the dashboard's Review page, listed \
             there once Switchboard has started it"
        }
        false => "  editors see its tools as soon as Switchboard has started it",
    });
}

/// What adding would do, exactly: each argument on a line of its own (quoted, so that spaces
/// and empty ones show), the environment with secrets as the names the config gives them.
fn show_plan(record: &registry::entry::Record, plan: &install::Plan) {
    output::line(format_args!(
        "{} {}",
        record.server.name, record.server.version
    ));
    if !record.server.description.is_empty() {
        output::line(format_args!("  {}", record.server.description));
    }
    output::line(format_args!(
        "Adding it as `{}` (from {}) writes this to the config; nothing is written or started \
         before you say yes:",
        plan.server, plan.source
    ));
    match &plan.launch {
        install::LaunchView::Command { program, args, env } => {
            output::line(format_args!("  runs      {program:?}"));
            for arg in args {
                output::line(format_args!("  argument  {arg:?}"));
            }
            for (name, value) in env {
                output::line(format_args!("  env       {name}={value:?}"));
            }
        }
        install::LaunchView::Remote {
            url,
            transport,
            headers,
        } => {
            output::line(format_args!("  connects  {url} ({transport})"));
            for (name, value) in headers {
                output::line(format_args!("  header    {name}: {value:?}"));
            }
        }
    }
    for secret in &plan.secrets {
        output::line(format_args!("  secret    {secret}, kept in the keychain"));
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
    output::line(format_args!(
        "`{}` moves from {} to {}; changed tools wait for your review",
        updated.server, updated.from, updated.to
    ));
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
    output::line(format_args!(
        "`{}` is removed, with its pins and cached tools",
        removed.server
    ));
    for name in &removed.deleted_secrets {
        output::line(format_args!("  its secret {name} is deleted"));
    }
    for name in &removed.kept_secrets {
        output::line(format_args!("  its secret {name} stays in the keychain"));
    }
    super::tell_running_instance();
    if let Some(problem) = &removed.keychain_problem {
        let names = removed.undeleted_secrets.join(", ");
        match removed.undeleted_secrets.is_empty() {
            true => eprintln!("note: its sign-in tokens, if any, are not deleted: {problem}"),
            false => eprintln!(
                "its secrets {names} are not deleted: {problem}; delete them later, once the \
                 keychain can be used, with `switchboard secret delete NAME` for each"
            ),
        }
    }
    Ok(match removed.undeleted_secrets.is_empty() {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    })
}
