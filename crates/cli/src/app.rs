//! The running application: engine, hub, `/mcp`, the control API and the local socket, started
//! from one config file. `switchboard serve` and the desktop shell both run exactly this.
//!
//! [`App::start`] binds the socket and the TCP listener before anything else, so that a second
//! instance fails before it starts anything. The engine that `hub::start` makes beside the hub
//! goes to the control API and the reloader as it is, not through the hub. [`App::shutdown`]
//! stops it all, and gives up waiting after a bound.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use activity::ActivityLog;
use auth::Auth;
use config::{Config, EndpointConfig};
use control::attention::{self, Attention, EditorsInUse};
use control::instance::{Instance, Running, RunningBackend};
use control::reload::{ConfigState, ReloadOutcome, Reloader};
use control::{api, ui};
use hub::pins::PinReport;
use hub::{Hub, HubOptions};
use supervisor::Engine;
use supervisor::spawn::ProcessGroups;
use supervisor::status::BackendStatus;
use transport::guard::EndpointToken;
use transport::handoff::Command;
use transport::token;
use transport::{http, socket};

/// How long shutdown may take before it gives up waiting (the guardian then kills leftovers).
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(15);

/// What to start.
#[derive(Debug, Clone)]
pub struct AppOptions {
    pub config_path: PathBuf,
    /// Overrides the config's `endpoint.listen`.
    pub listen: Option<SocketAddr>,
    /// Serve the dashboard from this folder instead of the embedded copy.
    pub ui_dir: Option<PathBuf>,
    /// The `switchboard` binary: the guardian and the editor setup snippets name it.
    pub exe: PathBuf,
}

/// A running Switchboard. Dropping it does not stop anything: call [`App::shutdown`].
pub struct App {
    engine: Arc<Engine>,
    auth: Arc<Auth>,
    hub: Hub,
    reloader: Reloader,
    stop: CancellationToken,
    /// Cancelled when `switchboard stop` asks this instance to shut down.
    stop_asked: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
    dashboard_url: String,
    mcp_url: String,
    socket_path: PathBuf,
    instance_file: PathBuf,
    statuses: watch::Receiver<Vec<BackendStatus>>,
    /// The editors whose files point at this Switchboard, shared with the dashboard's API.
    in_use: EditorsInUse,
}

impl App {
    /// Loads the config (writing the default one if there is none), then starts the backends and
    /// every listener. Fails when the listeners cannot be bound (another instance runs) or the
    /// endpoint token in the config is invalid.
    pub async fn start(options: AppOptions) -> anyhow::Result<App> {
        platform::memory::keep_freed_memory();
        platform::memory::trim_when_idle();
        let (path, config) = load_config(&options.config_path, &options.exe)?;
        let endpoint = config.endpoint.clone();
        let listen = options.listen.unwrap_or(endpoint.listen);
        if !listen.ip().is_loopback() {
            tracing::warn!(%listen, "the MCP endpoint listens beyond this machine");
        }
        tracing::info!(config = %path.display(), backends = config.backends.len(), "starting");

        let runtime_dir = platform::dirs::runtime_dir();
        let unusable = || format!("cannot use the runtime directory {}", runtime_dir.display());
        platform::files::create_private_dir(&runtime_dir)
            .and_then(|()| platform::files::restrict_to_owner(&runtime_dir))
            .with_context(unusable)?;
        let data_dir = platform::dirs::data_dir();
        // Made before the socket listens: a client reads it as soon as it is connected.
        let socket_key = token::socket_key(&data_dir).context("cannot set up the socket's key")?;
        // Listening comes first, so an editor that connects while the rest starts waits in the
        // backlog instead of being refused.
        let listeners = Listeners::bind(&runtime_dir, listen).await?;
        let groups =
            ProcessGroups::open(&runtime_dir, Some(&options.exe)).with_context(unusable)?;
        let api_token = token::api_token(&data_dir).context("cannot set up the API token")?;
        let mcp_token = EndpointToken::new(
            token::endpoint_token(&endpoint, &data_dir, token::Missing::Make)
                .context("cannot set up /mcp's token")?,
        );
        let activity = ActivityLog::open(&data_dir.join("activity.db"), config.activity.clone());
        activity.configure(config.activity.clone(), config.secret_values());
        let auth = Auth::new();
        let signed_in = auth.clone();
        let endpoint_token = mcp_token.clone();
        activity.redact_also(Arc::new(move || {
            let mut values = signed_in.secret_values();
            values.extend(endpoint_token.get().map(|token| token.to_string()));
            values
        }));
        auth.set_callback_base(&transport::http::local_base_url(listeners.address));
        let (engine, hub) = hub::start(
            config.backends.clone(),
            groups,
            HubOptions {
                catalog_cache: Some(data_dir.join("catalog")),
                profiles: config.profiles.clone(),
                auth: Some(auth.clone()),
                activity: Some(activity.clone()),
                pins_dir: Some(data_dir.join("pins")),
                approve_new_tools: config.security.approve_new_tools,
            },
        );
        let reloader = Reloader::new(
            engine.clone(),
            hub.clone(),
            &config,
            endpoint.clone(),
            options.listen.is_some(),
            mcp_token.clone(),
            data_dir.clone(),
        );
        let stop = CancellationToken::new();
        let mut tasks = Vec::new();
        match reloader.watch(stop.clone()) {
            Ok(watcher) => tasks.push(watcher),
            Err(error) => tracing::warn!(
                %error,
                "cannot watch the config file; edits apply on `switchboard reload` only"
            ),
        }
        let api_options = api::ApiOptions {
            address: listeners.address,
            token: api_token,
            mcp_token: mcp_token.clone(),
            extra_origins: Vec::new(),
            exe: options.exe,
            auth: auth.clone(),
        };
        let api_state = api::ApiState::new(
            hub.clone(),
            engine.clone(),
            reloader.clone(),
            api_options,
            stop.clone(),
        )
        .with_ui(ui::router(options.ui_dir));
        let dashboard_url = api_state.dashboard_url();
        let in_use = api_state.in_use().clone();
        let stop_asked = CancellationToken::new();
        let control = Control {
            reloader: reloader.clone(),
            engine: engine.clone(),
            dashboard_url: dashboard_url.clone(),
            mcp_url: format!("http://{}{}", listeners.address, http::MCP_PATH),
            address: listeners.address,
            stop_asked: stop_asked.clone(),
        };
        let served = listeners.serve(
            &hub,
            control,
            api_state,
            &endpoint,
            (mcp_token, socket_key),
            &stop,
        );
        tasks.extend(served.tasks);
        tracing::info!(url = %served.mcp_url, socket = %served.socket_path.display(), "listening");
        let instance_file = Instance::record(&runtime_dir, served.address);
        let (statuses, publisher) = publish_statuses(&engine, reloader.state(), stop.clone());
        tasks.push(publisher);
        Ok(App {
            engine,
            auth,
            hub,
            reloader,
            stop,
            stop_asked,
            tasks,
            dashboard_url,
            mcp_url: served.mcp_url,
            socket_path: served.socket_path,
            instance_file,
            statuses,
            in_use,
        })
    }

    /// Every backend: their handles, statuses and commands.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The hub: sessions, catalogs, and what waits for the person (calls for a yes, servers'
    /// questions), which the desktop app announces.
    pub fn hub(&self) -> &Hub {
        &self.hub
    }

    /// Sign-in to remote servers (the desktop app's "Sign in to NAME").
    pub fn auth(&self) -> &Arc<Auth> {
        &self.auth
    }

    /// The dashboard's address with the one-time token that logs a browser in.
    pub fn dashboard_url(&self) -> &str {
        &self.dashboard_url
    }

    /// The Streamable HTTP endpoint editors connect to.
    pub fn mcp_url(&self) -> &str {
        &self.mcp_url
    }

    /// The local socket `switchboard connect` attaches to.
    pub fn socket_path(&self) -> &Path {
        &self.socket_path
    }

    pub fn config_path(&self) -> &Path {
        self.reloader.path()
    }

    /// The config as last read: when, whether it is valid, its diagnostics, and what runs.
    pub fn config_state(&self) -> watch::Receiver<ConfigState> {
        self.reloader.state()
    }

    /// Reads the config file now and applies it if it is valid (the file is also watched).
    pub async fn reload(&self) -> ReloadOutcome {
        self.reloader.reload().await
    }

    /// A way to ask, at any moment, what needs a person (see [`attention`]): for the tray,
    /// which asks whenever something it follows changes.
    pub fn attention(&self) -> impl Fn() -> Vec<Attention> + Send + 'static {
        let (hub, engine, config) = (self.hub.clone(), self.engine.clone(), self.config_state());
        let in_use = self.in_use.clone();
        move || attention::now(&hub, &engine, &config.borrow(), &in_use)
    }

    /// What the tool pins hold back, republished on every change.
    pub fn pins(&self) -> watch::Receiver<Arc<PinReport>> {
        self.hub.pins().watch_report()
    }

    /// Every backend's status, in config order, republished on every change.
    pub fn statuses(&self) -> watch::Receiver<Vec<BackendStatus>> {
        self.statuses.clone()
    }

    /// Resolves when `switchboard stop` asks this instance to shut down: its runner then calls
    /// [`App::shutdown`] as it would on SIGTERM.
    pub fn stop_asked(&self) -> tokio_util::sync::WaitForCancellationFutureOwned {
        self.stop_asked.clone().cancelled_owned()
    }

    /// Stops every listener and every backend, and waits (bounded) until they are down.
    pub async fn shutdown(self) {
        tracing::info!("shutting down");
        self.stop.cancel();
        self.hub.shutdown();
        if tokio::time::timeout(SHUTDOWN_LIMIT, self.engine.shutdown())
            .await
            .is_err()
        {
            tracing::error!(
                "shutdown took longer than {} s; exiting anyway",
                SHUTDOWN_LIMIT.as_secs()
            );
        }
        for task in self.tasks {
            let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
        }
        if Instance::read(&self.instance_file)
            .is_ok_and(|instance| instance.pid == std::process::id())
        {
            let _ = std::fs::remove_file(&self.instance_file);
        }
        tracing::info!("stopped");
    }
}

/// Reads the config file at `path` (written with the defaults when there is none) and logs its
/// diagnostics; refuses a config whose endpoint token is invalid.
fn load_config(path: &Path, exe: &Path) -> anyhow::Result<(PathBuf, Config)> {
    // Absolute, so that what the dashboard shows and what the watcher watches stay right.
    let path =
        std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))?;
    let config = config::load_or_create_default(&path, exe)?;
    for diagnostic in &config.diagnostics {
        tracing::warn!("{diagnostic}");
    }
    if config.endpoint_open_by_default() {
        tracing::warn!("{}", config::OPEN_ENDPOINT_WARNING);
    }
    refuse_invalid_token(&config, &path)?;
    Ok((path, config))
}

/// The socket and the TCP listener, bound before anything starts so that a second instance
/// fails early and leaves the first one alone.
struct Listeners {
    socket_path: PathBuf,
    socket: platform::ipc::Listener,
    tcp: tokio::net::TcpListener,
    /// Where the TCP listener is bound (its port, when 0 was asked for).
    address: SocketAddr,
}

/// What [`Listeners::serve`] started.
struct Served {
    tasks: Vec<JoinHandle<()>>,
    address: SocketAddr,
    mcp_url: String,
    socket_path: PathBuf,
}

impl Listeners {
    async fn bind(runtime_dir: &Path, listen: SocketAddr) -> anyhow::Result<Listeners> {
        let socket_path = socket::socket_path(runtime_dir);
        let socket = socket::bind(&socket_path).with_context(|| {
            format!(
                "cannot listen on {} (is another Switchboard running?)",
                socket_path.display()
            )
        })?;
        let tcp = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| {
                format!("cannot listen on {listen} (set another address with --listen)")
            })?;
        let address = tcp.local_addr().context("no local address")?;
        Ok(Listeners {
            socket_path,
            socket,
            tcp,
            address,
        })
    }

    /// Serves `/mcp` and the control API on the TCP listener and the hub on the socket, until
    /// `stop` is cancelled.
    fn serve(
        self,
        hub: &Hub,
        control: Control,
        api_state: api::ApiState,
        endpoint: &EndpointConfig,
        (mcp_token, socket_key): (EndpointToken, token::Token),
        stop: &CancellationToken,
    ) -> Served {
        let http_options = http::HttpOptions {
            port: self.address.port(),
            token: mcp_token,
            max_body_size: endpoint.max_body_size,
            extra_origins: Vec::new(),
        };
        let mcp_url = control.mcp_url.clone();
        let router = http::app(hub.clone(), http_options).merge(api::router(api_state));
        let http_server = tokio::spawn({
            let stop = stop.clone();
            let tcp = self.tcp;
            async move {
                if let Err(error) = http::serve(tcp, router, stop).await {
                    tracing::error!(%error, "the HTTP endpoint stopped");
                }
            }
        });
        let socket_server = tokio::spawn(socket::serve_socket(
            self.socket,
            hub.clone(),
            commands(control),
            socket_key,
            endpoint.max_body_size,
            stop.clone(),
        ));
        Served {
            tasks: vec![http_server, socket_server],
            address: self.address,
            mcp_url,
            socket_path: self.socket_path,
        }
    }
}

/// What the command line's commands over the socket act on.
#[derive(Clone)]
struct Control {
    reloader: Reloader,
    engine: Arc<Engine>,
    dashboard_url: String,
    mcp_url: String,
    address: SocketAddr,
    stop_asked: CancellationToken,
}

impl Control {
    /// What this instance says of itself: `switchboard status`.
    fn running(&self) -> Running {
        let order = self.reloader.state().borrow().backend_order.clone();
        let mut backends = self.engine.backends();
        let position = |name: &str| order.iter().position(|ordered| ordered == name);
        backends.sort_by_key(|backend| position(backend.name()).unwrap_or(usize::MAX));
        Running {
            pid: std::process::id(),
            dashboard: self.dashboard_url.clone(),
            mcp: self.mcp_url.clone(),
            config: self.reloader.path().to_owned(),
            backends: backends
                .iter()
                .map(|backend| RunningBackend::new(&backend.status()))
                .collect(),
        }
    }
}

/// What the command line asks over the socket, carried out by the control plane.
fn commands(control: Control) -> socket::Commands {
    Arc::new(move |command| {
        let control = control.clone();
        Box::pin(async move {
            match command {
                Command::Reload => serde_json::to_value(control.reloader.reload().await)
                    .expect("a reload's outcome serializes"),
                Command::Status => {
                    serde_json::to_value(control.running()).expect("a status serializes")
                }
                Command::Stop => {
                    tracing::info!("`switchboard stop` asks this instance to shut down");
                    control.stop_asked.cancel();
                    serde_json::to_value(Instance {
                        pid: std::process::id(),
                        address: control.address,
                    })
                    .expect("an instance record serializes")
                }
            }
        })
    })
}

fn refuse_invalid_token(config: &Config, path: &Path) -> anyhow::Result<()> {
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
    Ok(())
}

/// Keeps a list of every backend's status, in config order, up to date.
fn publish_statuses(
    engine: &Arc<Engine>,
    mut config: watch::Receiver<ConfigState>,
    stop: CancellationToken,
) -> (watch::Receiver<Vec<BackendStatus>>, JoinHandle<()>) {
    let mut changes = engine.changes();
    let engine = engine.clone();
    let snapshot = move |order: &[String]| -> Vec<BackendStatus> {
        let mut backends = engine.backends();
        let position = |name: &str| order.iter().position(|ordered| ordered == name);
        backends.sort_by_key(|backend| position(backend.name()).unwrap_or(usize::MAX));
        backends.iter().map(|backend| backend.status()).collect()
    };
    let (sender, receiver) = watch::channel(snapshot(&config.borrow().backend_order));
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                changed = changes.changed() => if changed.is_err() { return },
                changed = config.changed() => if changed.is_err() { return },
            }
            let order = config.borrow_and_update().backend_order.clone();
            sender.send_replace(snapshot(&order));
        }
    });
    (receiver, task)
}

/// Logs to stderr, as `switchboard serve` and the desktop app both do: `SWITCHBOARD_LOG` filters
/// (default `info,rmcp=warn`); colours only for a person at a terminal, plain for programs.
pub fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("SWITCHBOARD_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_target(false)
        .init();
}
