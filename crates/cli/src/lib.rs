//! The `switchboard` command line: `serve`, `connect`, `status`, `stop`, `check`, `import`,
//! `install`, `move`, `reload`, `secret`, `search`, `add`, `update`, `remove`, `demo-server`.
//! The `switchboard` program runs [`main`]; so does the desktop app when it is started with one
//! of these commands, so that an installed app is the command too (an editor's entry names it
//! with `connect`).
//!
//! A command's result goes to stdout (`output.rs`), everything else to stderr; the exit codes
//! are [`EXIT_CODES`].
//!
//! Floor 10 of the workspace (ARCHITECTURE.md). It is the top: the `switchboard` program and the
//! desktop app call it, and no crate imports it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub mod app;
mod check;
pub(crate) mod demo;
mod editors_out;
mod instance;
mod output;
mod registry;

use crate::app::{App, AppOptions};
use anyhow::Context;
use clap::{Parser, Subcommand};
use editors::Editor;
use platform::runtime;
use transport::token::Missing;

/// What `switchboard`'s exit status means, shown by `switchboard --help`.
pub const EXIT_CODES: &str = "\
Exit codes:
  0  done (`status`: an instance is running; `stop`: it stopped, or none was running)
  1  the command failed, or `check` found errors
  2  usage error: an unknown command, argument or flag
  3  `status`: no instance is running

Results go to stdout, and with --json as one JSON document; progress, warnings and errors go \
to stderr.";

#[derive(Parser)]
#[command(
    name = "switchboard",
    version,
    about = "Runs your local MCP servers and offers them to every editor",
    after_help = EXIT_CODES
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
    /// Validate a config file and print every problem, what each profile's tool list costs, and
    /// editors' entries that run a server Switchboard runs too; exits 1 on errors.
    #[command(after_help = check::JSON_HELP)]
    Check {
        /// The config file to check (default: the one `serve` reads).
        #[arg(long, env = platform::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
        /// Print the report as one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Copy the MCP servers of an editor's config into Switchboard's config: local ones (a
    /// command) and remote ones (a URL). One that runs exactly what a server of Switchboard's
    /// runs is left out as a duplicate; one that differs is added under a free name.
    Import {
        /// The editor whose config is read.
        #[arg(value_parser = editors_out::editor_to_read())]
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
        /// Print the result as one JSON document: each entry with its `kind` (added, duplicate
        /// or skipped) and its server or reason.
        #[arg(long)]
        json: bool,
    },
    /// Point an editor at Switchboard: add its entry to the editor's config, after a backup.
    Install {
        /// The editor to point at Switchboard.
        #[arg(value_parser = editors_out::editor_to_install())]
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
        /// Print the result as one JSON document (the outcome, the file, its backup, the diff).
        #[arg(long)]
        json: bool,
    },
    /// Move an editor over: import its servers, point it at Switchboard, and take the moved
    /// entries, and those that run exactly what a server of Switchboard's runs, out of its file
    /// (one backup, one atomic replacement). An entry that cannot be moved stays, with the reason.
    Move {
        /// The editor to move over.
        #[arg(value_parser = editors_out::editor_to_read())]
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
        /// Print the result as one JSON document: each entry with its `kind` (moved, duplicate,
        /// stays or switchboard), its server or reason, and whether it is taken out.
        #[arg(long)]
        json: bool,
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
    /// Say whether a Switchboard is running: its pid, dashboard link, config file and backends;
    /// exits 3 when none is.
    #[command(after_help = instance::STATUS_JSON_HELP)]
    Status {
        /// Print the status as one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Stop the running Switchboard as Ctrl-C would (every server it runs stopped), and wait
    /// until it is gone; exits 0 too when none was running.
    Stop,
    /// Keep, remove or list the secrets the config names as `${secret:NAME}`, in the OS keychain.
    Secret {
        /// What to do with the keychain.
        #[command(subcommand)]
        action: SecretAction,
    },
    /// Find servers in the registry sources (`[registry] sources`, and the set built in).
    #[command(after_help = registry::SEARCH_JSON_HELP)]
    Search {
        /// Words to find in a server's name, title, description or package.
        query: Vec<String>,
        /// Only this source (a base URL of the v0.1 registry API, or `built-in`).
        #[arg(long)]
        source: Option<String>,
        /// Read the sources again now, not from a cache younger than an hour.
        #[arg(long)]
        refresh: bool,
        /// Print the entries found as one JSON document.
        #[arg(long)]
        json: bool,
        /// Switchboard's config file, whose `[registry] sources` are searched.
        #[arg(long, env = platform::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
    },
    /// Add a server from a registry entry, pinned to an exact version.
    ///
    /// What it asks for is prompted for (a secret goes to the keychain). What it would write is
    /// checked first as `serve` reads it: a runner that is not installed or a name in use is
    /// refused, and nothing is written.
    #[command(after_help = registry::ADD_JSON_HELP)]
    Add {
        /// The registry entry: NAME, or NAME@VERSION for an exact release (as `search` shows).
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
        /// Ask nothing and add it: fail on a required input not given with --input.
        #[arg(long)]
        yes: bool,
        /// Print the plan (and with --yes what was added) as one JSON document; asks nothing,
        /// and without --yes writes nothing.
        #[arg(long)]
        json: bool,
        /// Switchboard's config file, which gets the server.
        #[arg(long, env = platform::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
    },
    /// Move a server's pinned version to the newest its source lists (or --version).
    Update {
        /// The server's name in the config.
        server: String,
        /// This exact release instead of the newest.
        #[arg(long)]
        version: Option<String>,
        /// Switchboard's config file.
        #[arg(long, env = platform::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
    },
    /// Take a server out of the config, with its pins and cached tools; its secrets are offered
    /// for deletion.
    Remove {
        /// The server's name in the config.
        server: String,
        /// Delete the secrets it uses from the keychain, without asking.
        #[arg(long, conflicts_with = "keep_secrets")]
        delete_secrets: bool,
        /// Keep the secrets it uses, without asking.
        #[arg(long)]
        keep_secrets: bool,
        /// Switchboard's config file.
        #[arg(long, env = platform::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
    },
    /// Run the built-in demo MCP server on stdio.
    DemoServer,
    /// Watches a running Switchboard's process groups and kills them should it die (internal).
    #[command(name = "__guardian", hide = true)]
    Guardian,
}

#[derive(Subcommand)]
enum SecretAction {
    /// Keep a secret in the keychain: its value is read from standard input (typed without
    /// echo at a terminal), never from the command line.
    Set {
        /// The secret's name, as `${secret:NAME}` names it.
        name: String,
    },
    /// Remove a secret from the keychain.
    Delete {
        /// The secret's name.
        name: String,
    },
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
        Command::Check { config, json } => check::check(&config_path(config), json),
        Command::Import {
            editor,
            from,
            dry_run,
            move_secrets,
            sandbox,
            config,
            json,
        } => import(editor, from, dry_run, move_secrets, sandbox, config, json),
        Command::Install {
            editor,
            to,
            dry_run,
            config,
            profile,
            json,
        } => install(editor, to, dry_run, config, profile, json),
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
            json,
        } => {
            let config = config.unwrap_or_else(platform::dirs::default_config_path);
            match undo {
                true => undo_move(editor, &config, force, json),
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
                    json,
                }),
            }
        }
        Command::Connect { config, profile } => connect(config, profile),
        Command::Reload => runtime::current_thread().block_on(reload()),
        Command::Status { json } => instance::status(json),
        Command::Stop => instance::stop(),
        Command::Secret { action } => secret(action),
        Command::Search {
            query,
            source,
            refresh,
            json,
            config,
        } => registry::search(&query, source, refresh, json, &config_path(config)),
        Command::Add {
            entry,
            source,
            name,
            inputs,
            yes,
            json,
            config,
        } => registry::add(registry::AddOptions {
            entry,
            source,
            name,
            inputs,
            yes,
            json,
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
    let signal = tokio::select! {
        signal = wait_for_signal() => signal,
        () = app.stop_asked() => Ok(()),
    };
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

/// `switchboard reload`: its outcome on stdout, a file's errors on stderr.
async fn reload() -> anyhow::Result<ExitCode> {
    use control::reload::ReloadOutcome;
    let outcome =
        control::client::reload(&platform::dirs::runtime_dir(), &platform::dirs::data_dir())
            .await?;
    match outcome {
        ReloadOutcome::Applied {
            report,
            notes,
            left_out,
        } => {
            output::line(format_args!("reloaded: {report}"));
            for part in left_out {
                eprintln!("note: {part}");
            }
            for note in notes {
                eprintln!("note: {note}");
            }
            Ok(ExitCode::SUCCESS)
        }
        ReloadOutcome::Refused {
            problem,
            diagnostics,
        } => {
            for diagnostic in &diagnostics {
                eprintln!("{diagnostic}");
            }
            eprintln!("{problem}");
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
                output::line(name);
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

fn import(
    editor: Editor,
    from: Option<PathBuf>,
    dry_run: bool,
    move_secrets: bool,
    sandbox: bool,
    config_path: Option<PathBuf>,
    json: bool,
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
    editors_out::print_result(&report, json);
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
    json: bool,
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
    editors_out::print_result(&report, options.json);
    Ok(ExitCode::SUCCESS)
}

/// A dry run writes nothing, not even the token the entries it shows would carry.
fn missing_token(dry_run: bool) -> Missing {
    match dry_run {
        true => Missing::Show,
        false => Missing::Make,
    }
}

fn undo_move(editor: Editor, config: &Path, force: bool, json: bool) -> anyhow::Result<ExitCode> {
    let report = editors::undo_move(editors::UndoRequest {
        editor,
        config_path: config,
        records: &platform::dirs::data_dir().join("moves"),
        force,
    })?;
    editors_out::print_result(&report, json);
    Ok(ExitCode::SUCCESS)
}

fn install(
    editor: Editor,
    to: Option<PathBuf>,
    dry_run: bool,
    config_path: Option<PathBuf>,
    profile: Option<String>,
    json: bool,
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
    editors_out::print_result(&editors_out::InstallResult::new(&report), json);
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

#[cfg(test)]
mod tests;
