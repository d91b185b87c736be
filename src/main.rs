//! The `switchboard` command line: `serve`, `check`, `demo-server`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use switchboard::config;
use switchboard::hub::{Hub, HubOptions};
use switchboard::serve::{api, http, socket, token, ui};
use tokio_util::sync::CancellationToken;
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
        /// Address of the HTTP endpoint (default: the config's `endpoint.listen`, 127.0.0.1:8765).
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
        /// Serve the dashboard from this folder instead of the copy built in (for UI work).
        #[arg(long)]
        ui_dir: Option<PathBuf>,
    },
    /// Validate a config file and print every problem; exits 1 on errors.
    Check {
        #[arg(long, env = switchboard::dirs::CONFIG_ENV)]
        config: Option<PathBuf>,
    },
    /// Attach an editor's stdio to the running Switchboard (starting one if none runs).
    Connect {
        /// Config file for a headless instance started by this command.
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
        Command::Serve {
            config,
            listen,
            ui_dir,
        } => single_thread_runtime().block_on(serve(config, listen, ui_dir)),
        Command::Check { config } => check(config),
        Command::Connect { config } => runtime().block_on(connect(config)),
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
    let filter = EnvFilter::try_from_env("SWITCHBOARD_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn"));
    // Colours only for a person at a terminal; logs read by programs stay plain.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_target(false)
        .init();
}

async fn serve(
    config_path: Option<PathBuf>,
    listen: Option<SocketAddr>,
    ui_dir: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let path = config_path.unwrap_or_else(switchboard::dirs::default_config_path);
    let config = config::load_or_create_default(&path)?;
    for diagnostic in &config.diagnostics {
        tracing::warn!("{diagnostic}");
    }
    let token_invalid = config.diagnostics.iter().any(|diagnostic| {
        diagnostic.severity == config::Severity::Error
            && diagnostic.field.starts_with("endpoint.token")
    });
    if token_invalid {
        anyhow::bail!(
            "the endpoint token in {} is invalid; refusing to serve without it",
            path.display()
        );
    }
    let endpoint = config.endpoint.clone();
    let listen = listen.unwrap_or(endpoint.listen);
    if !listen.ip().is_loopback() {
        tracing::warn!(%listen, "the MCP endpoint listens beyond this machine");
    }
    tracing::info!(config = %path.display(), backends = config.backends.len(), "starting");

    let exe = std::env::current_exe().context("cannot find the switchboard binary")?;
    let runtime_dir = switchboard::dirs::runtime_dir();
    let groups = switchboard::spawn::GroupRegistry::open(&runtime_dir, Some(&exe))
        .with_context(|| format!("cannot use the runtime directory {}", runtime_dir.display()))?;
    let socket_path = socket::socket_path(&runtime_dir);
    let socket_listener = socket::bind(&socket_path).with_context(|| {
        format!(
            "cannot listen on {} (is another Switchboard running?)",
            socket_path.display()
        )
    })?;
    let tcp_listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| {
            format!("cannot listen on {listen} (set another address with --listen)")
        })?;
    let bound = tcp_listener.local_addr().context("no local address")?;
    let data_dir = switchboard::dirs::data_dir();
    let api_token =
        token::load_or_create(&data_dir).context("cannot set up the dashboard token")?;
    // Kept for a config reloader, which will send each new state through it.
    let (_config_updates, config_state) =
        tokio::sync::watch::channel(api::ConfigState::loaded(&config));

    let options = HubOptions {
        catalog_cache: Some(data_dir.join("catalog")),
    };
    let hub = Hub::start(config.backends, groups, options);
    let stop = CancellationToken::new();
    let http_options = http::HttpOptions {
        port: bound.port(),
        token: endpoint.token.clone(),
        max_body_size: endpoint.max_body_size,
        extra_origins: Vec::new(),
    };
    let api_options = api::ApiOptions {
        address: bound,
        token: api_token,
        mcp_token: endpoint.token.clone(),
        extra_origins: Vec::new(),
        exe: exe.clone(),
    };
    let api_state = api::ApiState::new(hub.clone(), config_state, api_options, stop.clone())
        .with_ui(ui::router(ui_dir));
    let dashboard_url = api_state.dashboard_url();
    let http_server = tokio::spawn(http::serve(
        tcp_listener,
        http::app(hub.clone(), http_options).merge(api::router(api_state)),
        stop.clone(),
    ));
    let socket_server = tokio::spawn(socket::serve_socket(
        socket_listener,
        hub.clone(),
        endpoint.max_body_size,
        stop.clone(),
    ));
    let url = format!("http://{bound}{}", http::MCP_PATH);
    tracing::info!(%url, socket = %socket_path.display(), "listening");
    // Printed, not logged: the link carries the dashboard token.
    eprintln!("dashboard: {dashboard_url}");

    wait_for_signal().await?;
    tracing::info!("shutting down");
    stop.cancel();
    if tokio::time::timeout(SHUTDOWN_LIMIT, hub.shutdown())
        .await
        .is_err()
    {
        tracing::error!(
            "shutdown took longer than {} s; exiting anyway",
            SHUTDOWN_LIMIT.as_secs()
        );
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), socket_server).await;
    let _ = tokio::time::timeout(Duration::from_secs(1), http_server).await;
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

async fn connect(config: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("cannot find the switchboard binary")?;
    let runtime_dir = switchboard::dirs::runtime_dir();
    switchboard::connect::run(switchboard::connect::ConnectOptions {
        runtime_dir,
        exe,
        config,
    })
    .await?;
    Ok(ExitCode::SUCCESS)
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

fn single_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the tokio runtime starts")
}
