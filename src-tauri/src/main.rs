//! Switchboard's desktop app: the core that `switchboard serve` runs, in-process, with a tray
//! icon and a window showing the dashboard. Thin: the core supervises, the shell shows and
//! forwards clicks. Started with one of the `switchboard` commands (`connect`, `serve`…), it is
//! that command instead, so an installed app needs no second program beside it.

// No console window for the app on Windows (release builds; a debug build keeps its console
// for the logs).
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod actions;
mod asking;
mod menu;
mod tray;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use cli::app::{App, AppOptions};
use tauri::{Manager, WebviewUrl, WebviewWindowBuilder, WindowEvent};
use tauri_plugin_autostart::ManagerExt as _;

use crate::actions::Shell;
use crate::menu::Notice;

/// The argument the login item starts the app with: tray only, no window.
const HIDDEN: &str = "--hidden";

#[derive(Parser)]
#[command(
    name = "switchboard-desktop",
    version,
    about = "Switchboard's desktop app: your local MCP servers, in the tray"
)]
struct Options {
    /// Config file (TOML, or a Claude Desktop style JSON file).
    #[arg(long, env = platform::dirs::CONFIG_ENV)]
    config: Option<PathBuf>,
    /// Address of the HTTP endpoint (default: the config's `endpoint.listen`, 127.0.0.1:8765).
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Serve the dashboard from this folder instead of the copy built in (for UI work).
    #[arg(long)]
    ui_dir: Option<PathBuf>,
    /// Start in the tray only, without showing the window (how the login item starts it).
    #[arg(long)]
    hidden: bool,
}

fn main() -> ExitCode {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|first| cli::is_command(&first))
    {
        return cli::main();
    }
    let options = Options::parse();
    cli::app::init_logging();
    // The core's runtime, built to find the next event awake (`platform::runtime`); it lives as
    // long as the app.
    let runtime = platform::runtime::multi_thread();
    tauri::async_runtime::set(runtime.handle().clone());
    let built = tauri::Builder::default()
        // First: a second launch hands over to the first one here and exits.
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            if let Err(error) = actions::show_window(app) {
                tracing::warn!(%error, "cannot show the window");
            }
        }))
        .plugin(
            tauri_plugin_autostart::Builder::new()
                .args([HIDDEN])
                .build(),
        )
        .plugin(tauri_plugin_clipboard_manager::init())
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_opener::init())
        .on_window_event(|window, event| {
            // Closing the window hides it; the tray's Quit ends the app.
            if let WindowEvent::CloseRequested { api, .. } = event {
                api.prevent_close();
                if let Err(error) = window.hide() {
                    tracing::warn!(%error, "cannot hide the window");
                }
            }
        })
        .setup(move |app| Ok(setup(app.handle(), options)?))
        .build(tauri::generate_context!("../tauri.conf.json"));
    match built {
        Ok(app) => {
            app.run(|_, _| {});
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("switchboard-desktop: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn setup(app: &tauri::AppHandle, options: Options) -> anyhow::Result<()> {
    let hidden = options.hidden;
    let core = match tauri::async_runtime::block_on(start_core(options)) {
        Ok(core) => core,
        Err(error) => {
            // Said plainly where a person sees it; `main` prints it and exits non-zero.
            let message = format!("{error:#}");
            tray::notify_now(
                app,
                &Notice {
                    summary: "Switchboard could not start".to_owned(),
                    body: message.clone(),
                },
            );
            anyhow::bail!(message);
        }
    };
    let url = core.dashboard_url().parse().context("the dashboard URL")?;
    let handle = app.clone();
    WebviewWindowBuilder::new(app, actions::WINDOW, WebviewUrl::External(url))
        .title("Switchboard")
        // The dashboard's "Sign in" opens an authorization server's page: in the system
        // browser, where the person's accounts and password manager are, not in this window.
        .on_new_window(move |url, _features| {
            if let Err(error) = actions::open_in_browser(&handle, url.as_str()) {
                tracing::warn!("{error:#}");
            }
            tauri::webview::NewWindowResponse::Deny
        })
        .inner_size(1100.0, 760.0)
        .visible(!hidden)
        .build()?;
    let start_at_login = app.autolaunch().is_enabled().unwrap_or_else(|error| {
        tracing::warn!(%error, "cannot tell whether Switchboard starts at login");
        false
    });
    let statuses = core.statuses();
    let config = core.config_state();
    let pins = core.pins();
    let attention = Box::new(core.attention());
    let stop_asked = core.stop_asked();
    tauri::async_runtime::spawn(asking::follow(app.clone(), core.hub().clone()));
    let shell = Shell::new(core, start_at_login);
    let feeds = tray::Feeds {
        statuses,
        config,
        pins,
        start_at_login: shell.start_at_login(),
        attention,
    };
    app.manage(shell);
    tray::start(app, feeds)?;
    tauri::async_runtime::spawn(quit_on_request(app.clone(), stop_asked));
    Ok(())
}

async fn start_core(options: Options) -> anyhow::Result<App> {
    App::start(AppOptions {
        config_path: options
            .config
            .unwrap_or_else(platform::dirs::default_config_path),
        listen: options.listen,
        ui_dir: options.ui_dir,
        exe: cli_path()?,
    })
    .await
}

/// The `switchboard` command the guardian, the default config's demo server and the editor
/// snippets run: the command line program where it is installed beside this one
/// (`target/<profile>/` in development, `/usr/bin` from the Debian package), else this program,
/// which is that command too (the macOS app bundle and the Windows install hold only it).
fn cli_path() -> anyhow::Result<PathBuf> {
    let app = std::env::current_exe().context("cannot find this program's path")?;
    let cli = app.with_file_name(format!("switchboard{}", std::env::consts::EXE_SUFFIX));
    Ok(if cli.is_file() { cli } else { app })
}

/// The system's requests to stop (SIGTERM and SIGINT on Unix; a logoff or a shutdown on
/// Windows) and `switchboard stop` quit like the tray's Quit.
async fn quit_on_request(app: tauri::AppHandle, stop_asked: impl Future<Output = ()>) {
    let signal = async {
        match platform::shutdown::requested().await {
            Ok(request) => tracing::info!(request, "quitting"),
            Err(error) => {
                tracing::warn!(%error, "cannot listen for the system's requests to stop");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        () = signal => {}
        () = stop_asked => tracing::info!("quitting: `switchboard stop` asked"),
    }
    actions::quit(&app).await;
}
