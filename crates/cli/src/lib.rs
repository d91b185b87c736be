//! The `switchboard` command line: `serve`, `connect`, `check`, `import`, `install`, `move`,
//! `reload`, `secret`, `search`, `add`, `update`, `remove`, `demo-server`. The `switchboard` program runs [`main`]; so does the
//! desktop app when it is started with one of these commands, so that an installed app is the
//! command too (an editor's entry names it with `connect`).
//!
//! Floor 10 of the workspace (ARCHITECTURE.md). It is the top: the `switchboard` program and the
//! desktop app call it, and no crate imports it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub mod app;
pub(crate) mod demo;
mod registry;

use crate::app::{App, AppOptions};
use anyhow::Context;
use clap::{Parser, Subcommand};
use editors::Editor;
use platform::runtime;
use transport::token::Missing;

#[derive(Parser)]
#[command(
    name = "switchboard",
    version,
    about = "Runs your local MCP servers and offers them to every editor"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the engine in the foreground until SIGTERM or Ctrl-C (on Windows: Ctrl-C, a closed
    /// console, a logoff or a shutdown).
    Serve {
        /// Config file (TOML, or a Claude Desktop style JSON file).
        #[arg(long, env = platform::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
        /// Address of the HTTP endpoint (default: the config's `endpoint.listen`, 127.0.0.1:8765).
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
        /// Serve the dashboard from this folder instead of the copy built in (for UI work).
        #[arg(long)]
        ui_dir: Option<PathBuf>,
    },
    /// Validate a config file and print every problem; exits 1 on errors.
    Check {
        #[arg(long, env = platform::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
    },
    /// Copy the local MCP servers of an editor's config into Switchboard's config.
    Import {
        /// The editor whose config is read.
        editor: Editor,
        /// Read this file instead of the editor's usual one.
        #[arg(long)]
        from: Option<PathBuf>,
        /// Show what would be added, and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Keep secrets written out in the editor's config (tokens in `env`) in the OS keychain,
        /// and name them in Switchboard's config as `${secret:NAME}`.
        #[arg(long)]
        move_secrets: bool,
        /// Give each server a sandbox: only the folders its command line names (and a package
        /// runner's cache and registry port) besides what it needs to run. Edit it to taste.
        #[arg(long)]
        sandbox: bool,
        /// Switchboard's config file, which gets the servers.
        #[arg(long, env = platform::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
    },
    /// Point an editor at Switchboard: add its entry to the editor's config, after a backup.
    Install {
        /// The editor to point at Switchboard.
        editor: Editor,
        /// Write into this file instead of the editor's usual one.
        #[arg(long)]
        to: Option<PathBuf>,
        /// Show the change, and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Switchboard's config file, whose [endpoint] the editor is given.
        #[arg(long, env = platform::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
        /// Give the editor this profile ([profiles.NAME]): `/mcp/NAME`, or `connect --profile`.
        #[arg(long)]
        profile: Option<String>,
    },
    /// Move an editor over: import its local servers, point it at Switchboard, and take the
    /// moved entries out of its file (one backup, one atomic replacement).
    Move {
        /// The editor to move over.
        editor: Editor,
        /// The editor's file, instead of its usual one.
        #[arg(long)]
        from: Option<PathBuf>,
        /// Show the whole change, and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Leave the moved entries in the editor's file.
        #[arg(long, conflicts_with = "undo")]
        keep_originals: bool,
        /// Move only if the editor's file is still the one a dry run showed (the fingerprint it
        /// printed).
        #[arg(long, conflicts_with_all = ["undo", "dry_run"])]
        expect: Option<String>,
        /// Keep secrets written out in the editor's config in the OS keychain instead.
        #[arg(long, conflicts_with = "undo")]
        move_secrets: bool,
        /// Give each server moved a sandbox (as `import --sandbox` does).
        #[arg(long, conflicts_with = "undo")]
        sandbox: bool,
        /// Give the editor this profile ([profiles.NAME]).
        #[arg(long, conflicts_with = "undo")]
        profile: Option<String>,
        /// Put the editor's file back as it was before its last move, and take the servers that
        /// move added out of Switchboard's config (those changed since stay).
        #[arg(long, conflicts_with = "dry_run")]
        undo: bool,
        /// With --undo: put the old file back even if the editor's file changed since the move.
        #[arg(long, requires = "undo")]
        force: bool,
        /// Switchboard's config file.
        #[arg(long, env = platform::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
    },
    /// Attach an editor's stdio to the running Switchboard (starting one if none runs).
    Connect {
        /// Config file for a headless instance started by this command.
        #[arg(long, env = platform::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
        /// The profile to serve (a [profiles.NAME] of the config); the default one otherwise.
        #[arg(long)]
        profile: Option<String>,
    },
    /// Make the running Switchboard read its config file again now (it also does on every save).
    Reload,
    /// Keep, remove or list the secrets the config names as `${secret:NAME}`, in the OS keychain.
    Secret {
        #[command(subcommand)]
        action: SecretAction,
    },
    /// Find servers in the registry sources (`[registry] sources`, and the set built in).
    Search {
        /// Words to find in a server's name, title, description or package.
        query: Vec<String>,
        /// Only this source (a base URL of the v0.1 registry API, or `built-in`).
        #[arg(long)]
        source: Option<String>,
        /// Read the sources again now, not from a cache younger than an hour.
        #[arg(long)]
        refresh: bool,
        #[arg(long, env = platform::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
    },
    /// Add a server from a registry entry, pinned to an exact version: NAME or NAME@VERSION.
    /// What it asks for is prompted for (a secret goes to the keychain); its first tools wait
    /// for review.
    Add {
        entry: String,
        /// Only this source.
        #[arg(long)]
        source: Option<String>,
        /// Its name in the config (by default the last part of the entry's name).
        #[arg(long)]
        name: Option<String>,
        /// A value the entry asks for, as KEY=VALUE (repeat for each).
        #[arg(long = "input")]
        inputs: Vec<String>,
        /// Ask nothing: fail on a required input not given with --input.
        #[arg(long)]
        yes: bool,
        #[arg(long, env = platform::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
    },
    /// Move a server's pinned version to the newest its source lists (or --version).
    Update {
        server: String,
        #[arg(long)]
        version: Option<String>,
        #[arg(long, env = platform::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
    },
    /// Take a server out of the config, with its pins and cached tools; its secrets are offered
    /// for deletion.
    Remove {
        server: String,
        /// Delete the secrets it uses from the keychain, without asking.
        #[arg(long, conflicts_with = "keep_secrets")]
        delete_secrets: bool,
        /// Keep the secrets it uses, without asking.
        #[arg(long)]
        keep_secrets: bool,
        #[arg(long, env = platform::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
    },
    /// Run the built-in demo MCP server on stdio.
    DemoServer,
    #[command(name = "__guardian", hide = true)]
    Guardian,
}

#[derive(Subcommand)]
enum SecretAction {
    /// Keep a secret in the keychain: its value is read from standard input (typed without
    /// echo at a terminal), never from the command line.
    Set { name: String },
    /// Remove a secret from the keychain.
    Delete { name: String },
    /// List the names of the secrets kept (never their values).
    List,
}

/// Whether `first`, a program's first argument, names one of the commands.
pub fn is_command(first: &std::ffi::OsStr) -> bool {
    use clap::CommandFactory;
    Cli::command()
        .get_subcommands()
        .any(|command| std::ffi::OsStr::new(command.get_name()) == first)
}

/// Runs the command the process's arguments name, and says how it ended.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    crate::app::init_logging();
    let result = match cli.command {
        Command::Serve {
            config,
            listen,
            ui_dir,
        } => runtime::current_thread().block_on(serve(config, listen, ui_dir)),
        Command::Check { config } => check(config),
        Command::Import {
            editor,
            from,
            dry_run,
            move_secrets,
            sandbox,
            config,
        } => import(editor, from, dry_run, move_secrets, sandbox, config),
        Command::Install {
            editor,
            to,
            dry_run,
            config,
            profile,
        } => install(editor, to, dry_run, config, profile),
        Command::Move {
            editor,
            from,
            dry_run,
            keep_originals,
            expect,
            move_secrets,
            sandbox,
            profile,
            undo,
            force,
            config,
        } => {
            let config = config.unwrap_or_else(platform::dirs::default_config_path);
            match undo {
                true => undo_move(editor, &config, force),
                false => move_editor(MoveOptions {
                    editor,
                    from,
                    dry_run,
                    keep_originals,
                    expect,
                    move_secrets,
                    sandbox,
                    profile,
                    config,
                }),
            }
        }
        Command::Connect { config, profile } => connect(config, profile),
        Command::Reload => runtime::current_thread().block_on(reload()),
        Command::Secret { action } => secret(action),
        Command::Search {
            query,
            source,
            refresh,
            config,
        } => registry::search(&query, source, refresh, &config_path(config)),
        Command::Add {
            entry,
            source,
            name,
            inputs,
            yes,
            config,
        } => registry::add(registry::AddOptions {
            entry,
            source,
            name,
            inputs,
            yes,
            config: config_path(config),
        }),
        Command::Update {
            server,
            version,
            config,
        } => registry::update(&server, version, &config_path(config)),
        Command::Remove {
            server,
            delete_secrets,
            keep_secrets,
            config,
        } => {
            let choice = match (delete_secrets, keep_secrets) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            };
            registry::remove(&server, choice, &config_path(config))
        }
        Command::DemoServer => runtime::multi_thread()
            .block_on(crate::demo::run())
            .map(|()| ExitCode::SUCCESS),
        Command::Guardian => {
            supervisor::spawn::run_guardian();
            Ok(ExitCode::SUCCESS)
        }
    };
    result.unwrap_or_else(|error| {
        eprintln!("switchboard: {error:#}");
        ExitCode::FAILURE
    })
}

async fn serve(
    config_path: Option<PathBuf>,
    listen: Option<SocketAddr>,
    ui_dir: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let app = App::start(AppOptions {
        config_path: config_path.unwrap_or_else(platform::dirs::default_config_path),
        listen,
        ui_dir,
        exe: std::env::current_exe().context("cannot find the switchboard binary")?,
    })
    .await?;
    // Printed, not logged: the link carries the dashboard token.
    eprintln!("dashboard: {}", app.dashboard_url());
    let signal = wait_for_signal().await;
    app.shutdown().await;
    signal?;
    Ok(ExitCode::SUCCESS)
}

async fn wait_for_signal() -> anyhow::Result<()> {
    let request = platform::shutdown::requested()
        .await
        .context("cannot listen for the system's requests to stop")?;
    tracing::info!(request, "stopping");
    Ok(())
}

fn connect(config: Option<PathBuf>, profile: Option<String>) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("cannot find the switchboard binary")?;
    let runtime_dir = platform::dirs::runtime_dir();
    platform::memory::keep_freed_memory();
    transport::connect::run(transport::connect::ConnectOptions {
        runtime_dir,
        data_dir: platform::dirs::data_dir(),
        exe,
        config,
        profile,
    })?;
    Ok(ExitCode::SUCCESS)
}

async fn reload() -> anyhow::Result<ExitCode> {
    use control::reload::ReloadOutcome;
    let outcome =
        control::client::reload(&platform::dirs::runtime_dir(), &platform::dirs::data_dir())
            .await?;
    match outcome {
        ReloadOutcome::Applied { report, notes } => {
            eprintln!("reloaded: {report}");
            for note in notes {
                eprintln!("note: {note}");
            }
            Ok(ExitCode::SUCCESS)
        }
        ReloadOutcome::Invalid { diagnostics } => {
            for diagnostic in &diagnostics {
                eprintln!("{diagnostic}");
            }
            eprintln!("the config file has errors; nothing was changed");
            Ok(ExitCode::FAILURE)
        }
        ReloadOutcome::Missing { message } => {
            eprintln!("{message}");
            Ok(ExitCode::FAILURE)
        }
    }
}

fn secret(action: SecretAction) -> anyhow::Result<ExitCode> {
    use platform::secrets::Keychain;
    let keychain = Keychain::secrets();
    match action {
        SecretAction::Set { name } => {
            if !platform::secrets::is_valid_name(&name) {
                return Err(platform::secrets::SecretError::BadName(name).into());
            }
            let value = platform::terminal::read_secret(&format!("Value of {name}: "))
                .context("cannot read the value from standard input")?;
            if value.is_empty() {
                anyhow::bail!("the value is empty; nothing was stored");
            }
            keychain.set(&name, &value)?;
            eprintln!("{name} is in the keychain.");
        }
        SecretAction::Delete { name } => match keychain.delete(&name)? {
            true => eprintln!("{name} is no longer in the keychain."),
            false => {
                eprintln!("the keychain holds no secret {name}");
                return Ok(ExitCode::FAILURE);
            }
        },
        SecretAction::List => {
            for name in keychain.names()? {
                eprintln!("{name}");
            }
            return Ok(ExitCode::SUCCESS);
        }
    }
    // A running Switchboard reads secrets when it reads its config: make it read it now, so
    // that the servers using this secret restart with its new value.
    tell_running_instance();
    Ok(ExitCode::SUCCESS)
}

/// Makes a running Switchboard read its config now, and says what it did.
fn tell_running_instance() {
    let runtime_dir = platform::dirs::runtime_dir();
    if !control::instance::Instance::path(&runtime_dir).exists() {
        return;
    }
    let reloaded = runtime::current_thread().block_on(control::client::reload(
        &runtime_dir,
        &platform::dirs::data_dir(),
    ));
    match reloaded {
        Ok(control::reload::ReloadOutcome::Applied { report, .. }) => {
            eprintln!("Switchboard reloaded its config: {report}");
        }
        Ok(_) => eprintln!("Switchboard's config has errors; run `switchboard check`"),
        Err(error) => eprintln!("Switchboard was not told: {error:#}"),
    }
}

fn config_path(config: Option<PathBuf>) -> PathBuf {
    config.unwrap_or_else(platform::dirs::default_config_path)
}

fn check(config_path: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let path = config_path.unwrap_or_else(platform::dirs::default_config_path);
    let config = match config::load(&path) {
        Ok(config) => config,
        Err(config::ConfigError::Invalid { diagnostics, .. }) => {
            for diagnostic in &diagnostics {
                eprintln!("{diagnostic}");
            }
            eprintln!("{}: invalid, nothing can run from it", path.display());
            return Ok(ExitCode::FAILURE);
        }
        Err(error) => return Err(error.into()),
    };
    for diagnostic in &config.diagnostics {
        eprintln!("{diagnostic}");
    }
    if config.endpoint_open_by_default() {
        eprintln!(
            "{}: warning: endpoint.require_token: {}",
            path.display(),
            config::OPEN_ENDPOINT_WARNING
        );
    }
    let names: Vec<&str> = config
        .backends
        .iter()
        .map(|backend| backend.name.as_str())
        .collect();
    eprintln!(
        "{}: {} valid backend(s): {}",
        path.display(),
        names.len(),
        names.join(", ")
    );
    print_budgets(&config, &path);
    print_duplicates(&path);
    if config.has_errors() {
        Ok(ExitCode::FAILURE)
    } else {
        Ok(ExitCode::SUCCESS)
    }
}

/// The entries of editors found on this machine that run a server Switchboard runs too: the
/// editor would run it twice.
fn print_duplicates(path: &Path) {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let Ok(destination) = editors::Destination::for_config_file(
        path,
        exe.clone(),
        &platform::dirs::data_dir(),
        Missing::Show,
    ) else {
        return;
    };
    for editor in Editor::ALL.into_iter().filter(|editor| editor.detected()) {
        if let Ok(location) = editor.location()
            && location.guarded
        {
            eprintln!(
                "{}: not read: macOS asks you before Switchboard reads another app's files; see \
                 what it holds with `switchboard move {} --dry-run`",
                location.path.display(),
                editor.cli_name()
            );
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
                eprintln!(
                    "{}: warning: {} runs \"{}\", which Switchboard runs as `{server}`: the \
                     editor runs it twice; take it out with `switchboard move {}` or on the \
                     dashboard",
                    preview.path.display(),
                    editor.title(),
                    entry.name,
                    editor.cli_name()
                );
            }
        }
    }
}

/// What each profile's tool list costs a client, from the servers' last known catalogs, and the
/// profiles' tool patterns that match none of their tools.
fn print_budgets(config: &config::Config, path: &std::path::Path) {
    use hub::budget;
    use hub::catalog::CatalogCache;
    let cache = CatalogCache::new(Some(platform::dirs::data_dir().join("catalog")));
    let unseen: Vec<&str> = config
        .backends
        .iter()
        .filter(|backend| cache.load(&backend.name).is_none())
        .map(|backend| backend.name.as_str())
        .collect();
    for budget in budget::cached(config, &cache) {
        let endpoint = match budget.profile.as_str() {
            config::DEFAULT_PROFILE => "/mcp".to_owned(),
            name => format!("/mcp/{name}"),
        };
        eprintln!(
            "profile {} ({endpoint}): {} tools, {} bytes, about {} tokens on every turn",
            budget.profile, budget.tools, budget.bytes, budget.tokens
        );
        for server in &budget.servers {
            eprintln!(
                "  {}: {} tools, {} bytes, about {} tokens",
                server.server, server.tools, server.bytes, server.tokens
            );
        }
        let written_at = config
            .profiles
            .iter()
            .find(|profile| profile.name == budget.profile)
            .and_then(|profile| profile.written_at);
        for warning in &budget.warnings {
            match written_at {
                Some((line, column)) => eprintln!(
                    "{}:{line}:{column}: warning: profiles.{}: {warning}",
                    path.display(),
                    budget.profile
                ),
                None => eprintln!("  warning: {warning}"),
            }
        }
        for pattern in &budget.unmatched {
            eprintln!(
                "{}:{}:{}: warning: profiles.{}: `{}` matches no tool the servers offer",
                path.display(),
                pattern.line,
                pattern.column,
                budget.profile,
                pattern.glob
            );
        }
    }
    if !unseen.is_empty() {
        eprintln!(
            "not counted, never run yet (start Switchboard once to see their tools): {}",
            unseen.join(", ")
        );
    }
}

fn import(
    editor: Editor,
    from: Option<PathBuf>,
    dry_run: bool,
    move_secrets: bool,
    sandbox: bool,
    config_path: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let config_path = config_path.unwrap_or_else(platform::dirs::default_config_path);
    let exe = std::env::current_exe().context("cannot find the switchboard binary")?;
    if from.is_none() {
        say_where(editor);
    }
    let report = editors::import(editors::ImportRequest {
        editor,
        from: from.as_deref(),
        config_path: &config_path,
        exe: &exe,
        dry_run,
        move_secrets,
        sandbox,
    })?;
    eprint!("{report}");
    Ok(ExitCode::SUCCESS)
}

/// What `switchboard move` was asked.
struct MoveOptions {
    editor: Editor,
    from: Option<PathBuf>,
    dry_run: bool,
    keep_originals: bool,
    expect: Option<String>,
    move_secrets: bool,
    sandbox: bool,
    profile: Option<String>,
    config: PathBuf,
}

fn move_editor(options: MoveOptions) -> anyhow::Result<ExitCode> {
    if options.from.is_none() {
        say_where(options.editor);
    }
    let exe = std::env::current_exe().context("cannot find the switchboard binary")?;
    let mut destination = editors::Destination::for_config_file(
        &options.config,
        exe.clone(),
        &platform::dirs::data_dir(),
        missing_token(options.dry_run),
    )?;
    if let Some(profile) = &options.profile {
        destination = destination.for_profile(profile)?;
    }
    let report = editors::move_editor(editors::MoveRequest {
        editor: options.editor,
        from: options.from.as_deref(),
        config_path: &options.config,
        exe: &exe,
        destination: &destination,
        dry_run: options.dry_run,
        keep_originals: options.keep_originals,
        move_secrets: options.move_secrets,
        sandbox: options.sandbox,
        only_duplicates: false,
        records: &platform::dirs::data_dir().join("moves"),
        expect: options.expect.as_deref(),
    })?;
    eprint!("{report}");
    Ok(ExitCode::SUCCESS)
}

/// A dry run writes nothing, not even the token the entries it shows would carry.
fn missing_token(dry_run: bool) -> Missing {
    match dry_run {
        true => Missing::Show,
        false => Missing::Make,
    }
}

fn undo_move(editor: Editor, config: &Path, force: bool) -> anyhow::Result<ExitCode> {
    let report = editors::undo_move(editors::UndoRequest {
        editor,
        config_path: config,
        records: &platform::dirs::data_dir().join("moves"),
        force,
    })?;
    eprint!("{report}");
    Ok(ExitCode::SUCCESS)
}

fn install(
    editor: Editor,
    to: Option<PathBuf>,
    dry_run: bool,
    config_path: Option<PathBuf>,
    profile: Option<String>,
) -> anyhow::Result<ExitCode> {
    let config_path = config_path.unwrap_or_else(platform::dirs::default_config_path);
    let exe = std::env::current_exe().context("cannot find the switchboard binary")?;
    let mut destination = editors::Destination::for_config_file(
        &config_path,
        exe,
        &platform::dirs::data_dir(),
        missing_token(dry_run),
    )?;
    if let Some(profile) = &profile {
        destination = destination.for_profile(profile)?;
    }
    if to.is_none() {
        say_where(editor);
    }
    let report = editors::install(editors::InstallRequest {
        editor,
        to: to.as_deref(),
        destination: &destination,
        dry_run,
    })?;
    eprint!("{report}");
    Ok(ExitCode::SUCCESS)
}

/// Which file of an editor's is used, when the editor could read one of two.
fn say_where(editor: Editor) {
    if let Ok(editors::Location {
        note: Some(note), ..
    }) = editor.location()
    {
        eprintln!("note: {note}");
    }
}
