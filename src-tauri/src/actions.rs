//! What the tray's items and the window do: each a call into the core (the same calls the
//! control API makes) or into tauri.

use anyhow::Context;
use cli::app::App;
use tauri::{AppHandle, Manager};
use tauri_plugin_autostart::ManagerExt as _;
use tauri_plugin_clipboard_manager::ClipboardExt as _;
use tauri_plugin_opener::OpenerExt as _;
use tokio::sync::{RwLock, watch};

use crate::menu::{Action, MenuId};

/// The label of the dashboard window.
pub const WINDOW: &str = "main";

/// The running core and what the shell keeps beside it, managed by tauri.
pub struct Shell {
    /// `None` once Quit has taken it to shut it down.
    core: RwLock<Option<App>>,
    mcp_url: String,
    start_at_login: watch::Sender<bool>,
}

impl Shell {
    pub fn new(core: App, start_at_login: bool) -> Shell {
        Shell {
            mcp_url: core.mcp_url().to_owned(),
            core: RwLock::new(Some(core)),
            start_at_login: watch::channel(start_at_login).0,
        }
    }

    pub fn start_at_login(&self) -> watch::Receiver<bool> {
        self.start_at_login.subscribe()
    }
}

/// Runs a clicked menu item (tauri calls this on the main thread; the work goes to a task).
pub fn on_menu_event(app: &AppHandle, id: &str) {
    let Ok(id) = id.parse::<MenuId>() else {
        return;
    };
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        if let Err(error) = perform(&app, &id).await {
            tracing::warn!(item = %id, "{error:#}");
        }
    });
}

/// Maps a menu item to the core call (or window, clipboard, login item) it stands for.
async fn perform(app: &AppHandle, id: &MenuId) -> anyhow::Result<()> {
    let shell = app.state::<Shell>();
    match id {
        MenuId::Backend { name, action } => {
            let backend = match shell.core.read().await.as_ref() {
                Some(core) => core.engine().backend(name),
                None => return Ok(()),
            }
            .with_context(|| format!("there is no backend {name}"))?;
            match action {
                Action::Start => backend.start().await?,
                Action::Stop => backend.stop().await?,
                Action::Restart => backend.restart().await?,
                Action::SignIn => sign_in(app, name).await?,
            }
        }
        MenuId::OpenDashboard => show_window(app)?,
        MenuId::ReviewAttention => show_page(app, "#/")?,
        MenuId::AddServer => show_page(app, "#/add")?,
        MenuId::CopyEndpoint => app.clipboard().write_text(shell.mcp_url.clone())?,
        MenuId::ReloadConfig => {
            if let Some(core) = shell.core.read().await.as_ref() {
                // The reload logs what it did.
                core.reload().await;
                tracing::info!("config reloaded from the tray");
            }
        }
        MenuId::StartAtLogin => {
            let login = app.autolaunch();
            if login.is_enabled()? {
                login.disable()?;
            } else {
                login.enable()?;
            }
            shell.start_at_login.send_replace(login.is_enabled()?);
        }
        MenuId::Quit => quit(app).await,
    }
    Ok(())
}

/// Starts signing in to the remote server `name` and opens the page in the system browser.
async fn sign_in(app: &AppHandle, name: &str) -> anyhow::Result<()> {
    let shell = app.state::<Shell>();
    let url = {
        let core = shell.core.read().await;
        let Some(core) = core.as_ref() else {
            return Ok(());
        };
        let backend = core
            .engine()
            .backend(name)
            .with_context(|| format!("there is no backend {name}"))?;
        let config = backend.config();
        let config::Launch::Remote(server) = &config.launch else {
            anyhow::bail!("{name} is a local server; there is nothing to sign in to");
        };
        core.auth().begin_sign_in(name, server).await?
    };
    open_in_browser(app, &url)
}

/// Opens `url` in the system browser (never in the app's own window).
pub fn open_in_browser(app: &AppHandle, url: &str) -> anyhow::Result<()> {
    app.opener()
        .open_url(url, None::<&str>)
        .with_context(|| format!("cannot open {url} in the browser"))
}

/// Shows the dashboard window at `route`, a fragment of the dashboard's address (`#/add`).
fn show_page(app: &AppHandle, route: &'static str) -> tauri::Result<()> {
    show_window(app)?;
    if let Some(window) = app.get_webview_window(WINDOW) {
        window.eval(format!("location.hash = '{route}'"))?;
    }
    Ok(())
}

/// Shows the dashboard window and gives it the focus.
pub fn show_window(app: &AppHandle) -> tauri::Result<()> {
    let Some(window) = app.get_webview_window(WINDOW) else {
        return Ok(());
    };
    window.unminimize()?;
    window.show()?;
    window.set_focus()
}

/// Stops the core (every backend process) and then exits. A second call does nothing.
pub async fn quit(app: &AppHandle) {
    let core = app.state::<Shell>().core.write().await.take();
    if let Some(core) = core {
        core.shutdown().await;
        app.exit(0);
    }
}
