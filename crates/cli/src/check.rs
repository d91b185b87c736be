//! `switchboard check`: the config file read as `serve` reads it, with every problem at its line
//! and column, what each profile's tool list costs a client (from the catalogs of the last run),
//! and editors' entries that run a server Switchboard runs too. The report is the command's
//! result, on stdout, as text or as one JSON document.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;

use crate::output;
use config::{Config, Diagnostic};
use editors::Editor;
use transport::token::Missing;

/// The shape of `check --json`, shown by `switchboard check --help`.
pub(crate) const JSON_HELP: &str = "\
With --json, stdout has one JSON document:
  {\"config\": PATH, \"valid\": BOOL,
   \"diagnostics\": [{\"severity\": \"error\"|\"warning\", \"file\", \"line\", \"column\", \"field\",
                    \"message\"}],
   \"warnings\": [TEXT], \"servers\": [NAME],
   \"profiles\": [{\"name\", \"endpoint\", \"tools\", \"bytes\", \"tokens\",
                 \"servers\": [{\"server\", \"tools\", \"bytes\", \"tokens\"}], \"warnings\": [TEXT],
                 \"unmatched\": [{\"glob\", \"line\", \"column\"}]}],
   \"not_counted\": [NAME], \"not_read\": [{\"file\", \"editor\"}],
   \"duplicates\": [{\"file\", \"editor\", \"entry\", \"server\"}]}
\"valid\" is false when the file has errors (exit status 1). Without a config file nothing is
printed on stdout, and stderr says where `serve` writes its default one.";

/// What `check` found.
#[derive(Serialize)]
struct Report {
    config: PathBuf,
    /// No errors: every server of the file runs.
    valid: bool,
    /// Every problem, at its line and column.
    diagnostics: Vec<Diagnostic>,
    /// Problems of no one line.
    warnings: Vec<String>,
    /// The servers `serve` would run.
    servers: Vec<String>,
    profiles: Vec<ProfileCost>,
    /// Servers never run yet, whose tools are not counted.
    not_counted: Vec<String>,
    /// Editors' files that macOS keeps from being read without asking.
    not_read: Vec<NotRead>,
    duplicates: Vec<Duplicate>,
    /// A syntax error or a wrong structure: nothing of the file can be used.
    #[serde(skip)]
    unusable: bool,
}

/// What a profile's tool list costs a client on every turn.
#[derive(Serialize)]
struct ProfileCost {
    name: String,
    /// Where editors reach it: `/mcp` or `/mcp/NAME`.
    endpoint: String,
    tools: usize,
    bytes: usize,
    tokens: usize,
    servers: Vec<hub::budget::Cost>,
    warnings: Vec<String>,
    /// The profile's tool patterns that match none of its servers' tools.
    unmatched: Vec<hub::budget::Unmatched>,
    /// Where the profile is written, for the warnings' positions.
    #[serde(skip)]
    written_at: Option<(usize, usize)>,
}

/// An editor's file `check` may not read.
#[derive(Serialize)]
struct NotRead {
    file: PathBuf,
    editor: &'static str,
    #[serde(skip)]
    cli_name: String,
}

/// An editor's entry that runs a server Switchboard runs too: the editor runs it twice.
#[derive(Serialize)]
struct Duplicate {
    file: PathBuf,
    editor: &'static str,
    entry: String,
    server: String,
    #[serde(skip)]
    cli_name: String,
}

/// `switchboard check`: exits 1 when the file has errors or cannot be read.
pub(crate) fn check(path: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let report = match config::load(path) {
        Ok(config) => report(path, &config),
        Err(config::ConfigError::Invalid { diagnostics, .. }) => Report {
            config: path.to_owned(),
            valid: false,
            diagnostics,
            warnings: Vec::new(),
            servers: Vec::new(),
            profiles: Vec::new(),
            not_counted: Vec::new(),
            not_read: Vec::new(),
            duplicates: Vec::new(),
            unusable: true,
        },
        Err(config::ConfigError::Read { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            eprintln!(
                "switchboard: there is no config file at {}; `switchboard serve` writes a \
                 default one there when it starts, or check another with --config PATH",
                path.display()
            );
            return Ok(ExitCode::FAILURE);
        }
        // Said once: the error's own text names the cause.
        Err(error) => anyhow::bail!("{error}"),
    };
    match json {
        true => output::json(&report),
        false => print(&report),
    }
    Ok(match report.valid {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    })
}

fn report(path: &Path, config: &Config) -> Report {
    let mut warnings = Vec::new();
    if config.endpoint_open_by_default() {
        warnings.push(format!(
            "endpoint.require_token: {}",
            config::OPEN_ENDPOINT_WARNING
        ));
    }
    let (profiles, not_counted) = budgets(config);
    let (not_read, duplicates) = duplicates(path);
    Report {
        config: path.to_owned(),
        valid: !config.has_errors(),
        diagnostics: config.diagnostics.clone(),
        warnings,
        servers: config
            .backends
            .iter()
            .map(|backend| backend.name.clone())
            .collect(),
        profiles,
        not_counted,
        not_read,
        duplicates,
        unusable: false,
    }
}

/// The report as text, one finding a line, positions first as a compiler writes them.
fn print(report: &Report) {
    let path = report.config.display();
    for diagnostic in &report.diagnostics {
        output::line(diagnostic);
    }
    if report.unusable {
        output::line(format_args!("{path}: invalid, nothing can run from it"));
        return;
    }
    for warning in &report.warnings {
        output::line(format_args!("{path}: warning: {warning}"));
    }
    output::line(format_args!(
        "{path}: {} valid backend(s): {}",
        report.servers.len(),
        report.servers.join(", ")
    ));
    for profile in &report.profiles {
        output::line(format_args!(
            "profile {} ({}): {} tools, {} bytes, about {} tokens on every turn",
            profile.name, profile.endpoint, profile.tools, profile.bytes, profile.tokens
        ));
        for server in &profile.servers {
            output::line(format_args!(
                "  {}: {} tools, {} bytes, about {} tokens",
                server.server, server.tools, server.bytes, server.tokens
            ));
        }
        for warning in &profile.warnings {
            match profile.written_at {
                Some((line, column)) => output::line(format_args!(
                    "{path}:{line}:{column}: warning: profiles.{}: {warning}",
                    profile.name
                )),
                None => output::line(format_args!("  warning: {warning}")),
            }
        }
        for pattern in &profile.unmatched {
            output::line(format_args!(
                "{path}:{}:{}: warning: profiles.{}: `{}` matches no tool the servers offer",
                pattern.line, pattern.column, profile.name, pattern.glob
            ));
        }
    }
    if !report.not_counted.is_empty() {
        output::line(format_args!(
            "not counted, never run yet (start Switchboard once to see their tools): {}",
            report.not_counted.join(", ")
        ));
    }
    for not_read in &report.not_read {
        output::line(format_args!(
            "{}: not read: macOS asks you before Switchboard reads another app's files; see \
             what it holds with `switchboard move {} --dry-run`",
            not_read.file.display(),
            not_read.cli_name
        ));
    }
    for duplicate in &report.duplicates {
        output::line(format_args!(
            "{}: warning: {} runs \"{}\", which Switchboard runs as `{}`: the editor runs it \
             twice; take it out with `switchboard move {}` or on the dashboard",
            duplicate.file.display(),
            duplicate.editor,
            duplicate.entry,
            duplicate.server,
            duplicate.cli_name
        ));
    }
}

/// What each profile's tool list costs a client, from the servers' last known catalogs, and
/// the servers never run yet, which are not counted.
fn budgets(config: &Config) -> (Vec<ProfileCost>, Vec<String>) {
    use hub::budget;
    use hub::catalog::CatalogCache;
    let cache = CatalogCache::new(Some(platform::dirs::data_dir().join("catalog")));
    let not_counted = config
        .backends
        .iter()
        .filter(|backend| cache.load(&backend.name).is_none())
        .map(|backend| backend.name.clone())
        .collect();
    let profiles = budget::cached(config, &cache)
        .into_iter()
        .map(|budget| ProfileCost {
            endpoint: match budget.profile.as_str() {
                config::DEFAULT_PROFILE => "/mcp".to_owned(),
                name => format!("/mcp/{name}"),
            },
            written_at: config
                .profiles
                .iter()
                .find(|profile| profile.name == budget.profile)
                .and_then(|profile| profile.written_at),
            name: budget.profile,
            tools: budget.tools,
            bytes: budget.bytes,
            tokens: budget.tokens,
            servers: budget.servers,
            // Every known client's limits, whichever editors use this Switchboard: `check`
            // describes the profile.
            warnings: budget
                .warnings
                .into_iter()
                .chain(
                    budget
                        .client_warnings
                        .into_iter()
                        .map(|warning| warning.message),
                )
                .collect(),
            unmatched: budget.unmatched,
        })
        .collect();
    (profiles, not_counted)
}

/// The entries of editors found on this machine that run a server Switchboard runs too (the
/// editor would run it twice), and the editors' files that could not be read.
fn duplicates(path: &Path) -> (Vec<NotRead>, Vec<Duplicate>) {
    let (mut not_read, mut found) = (Vec::new(), Vec::new());
    let Ok(exe) = std::env::current_exe() else {
        return (not_read, found);
    };
    let Ok(destination) = editors::Destination::for_config_file(
        path,
        exe.clone(),
        &platform::dirs::data_dir(),
        Missing::Show,
    ) else {
        return (not_read, found);
    };
    for editor in Editor::ALL.into_iter().filter(|editor| editor.detected()) {
        if let Ok(location) = editor.location()
            && location.guarded
        {
            not_read.push(NotRead {
                file: location.path,
                editor: editor.title(),
                cli_name: editor.cli_name(),
            });
            continue;
        }
        let preview = editors::move_editor(editors::MoveRequest {
            editor,
            from: None,
            config_path: path,
            exe: &exe,
            destination: &destination,
            dry_run: true,
            keep_originals: false,
            move_secrets: false,
            sandbox: false,
            only_duplicates: true,
            records: &platform::dirs::data_dir().join("moves"),
            expect: None,
        });
        let Ok(preview) = preview else { continue };
        for entry in &preview.entries {
            if let editors::Fate::Duplicate { server } = &entry.fate {
                found.push(Duplicate {
                    file: preview.path.clone(),
                    editor: editor.title(),
                    entry: entry.name.clone(),
                    server: server.clone(),
                    cli_name: editor.cli_name(),
                });
            }
        }
    }
    (not_read, found)
}
