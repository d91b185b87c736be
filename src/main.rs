//! The `switchboard` command line: `serve`, `check`, `demo-server`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use switchboard::config;
use switchboard::supervisor::{Engine, EngineOptions};
use tracing_subscriber::EnvFilter;

/// How long shutdown may take before Switchboard exits anyway (the guardian then kills leftovers).
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(15);

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
    /// Run the engine in the foreground until SIGTERM or Ctrl-C.
    Serve {
        /// Config file (TOML, or a Claude Desktop style JSON file).
        #[arg(long, env = switchboard::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
    },
    /// Validate a config file and print every problem; exits 1 on errors.
    Check {
        #[arg(long, env = switchboard::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
    },
    /// Run the built-in demo MCP server on stdio.
    DemoServer,
    #[command(name = "__guardian", hide = true)]
    Guardian,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    let result = match cli.command {
        Command::Serve { config } => runtime().block_on(serve(config)),
        Command::Check { config } => check(config),
        Command::DemoServer => runtime()
            .block_on(switchboard::demo::run())
            .map(|()| ExitCode::SUCCESS),
        Command::Guardian => {
            switchboard::spawn::run_guardian();
            Ok(ExitCode::SUCCESS)
        }
    };
    result.unwrap_or_else(|error| {
        eprintln!("switchboard: {error:#}");
        ExitCode::FAILURE
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the tokio runtime starts")
}

fn init_logging() {
    let filter =
        EnvFilter::try_from_env("SWITCHBOARD_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}

async fn serve(config_path: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let path = config_path.unwrap_or_else(switchboard::dirs::default_config_path);
    let config = config::load_or_create_default(&path)?;
    for diagnostic in &config.diagnostics {
        tracing::warn!("{diagnostic}");
    }
    tracing::info!(config = %path.display(), backends = config.backends.len(), "starting");
    let exe = std::env::current_exe().context("cannot find the switchboard binary")?;
    let runtime_dir = switchboard::dirs::runtime_dir();
    let groups = switchboard::spawn::GroupRegistry::open(&runtime_dir, Some(&exe))
        .with_context(|| format!("cannot use the runtime directory {}", runtime_dir.display()))?;
    let engine = Engine::start(
        config.backends,
        EngineOptions {
            groups,
            server_requests: None,
        },
    );

    wait_for_signal().await?;
    tracing::info!("shutting down");
    if tokio::time::timeout(SHUTDOWN_LIMIT, engine.shutdown())
        .await
        .is_err()
    {
        tracing::error!(
            "shutdown took longer than {} s; exiting anyway",
            SHUTDOWN_LIMIT.as_secs()
        );
    }
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

async fn wait_for_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
    tokio::select! {
        _ = terminate.recv() => {}
        _ = interrupt.recv() => {}
    }
    Ok(())
}

fn check(config_path: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let path = config_path.unwrap_or_else(switchboard::dirs::default_config_path);
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
    if config.has_errors() {
        Ok(ExitCode::FAILURE)
    } else {
        Ok(ExitCode::SUCCESS)
    }
}
