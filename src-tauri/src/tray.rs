//! The tray icon and its menu, rebuilt from the core's published status, and the crash-loop,
//! sign-in and held-tool notifications. What the menu says is decided in `menu/`; this file only
//! draws it.

use std::sync::Arc;

use control::attention::Attention;
use control::reload::ConfigState;
use hub::pins::PinReport;
use supervisor::status::{BackendState, BackendStatus};
use tauri::image::Image;
use tauri::menu::{
    CheckMenuItem, IsMenuItem, Menu, MenuItem, MenuItemKind, PredefinedMenuItem, Submenu,
};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Wry};
use tauri_plugin_notification::NotificationExt as _;
use tokio::sync::watch;

use crate::menu::{self, Entry, Health, MenuModel, Notice};

/// The channels the tray follows: no polling, every change arrives on one of them.
pub struct Feeds {
    pub statuses: watch::Receiver<Vec<BackendStatus>>,
    pub config: watch::Receiver<ConfigState>,
    pub pins: watch::Receiver<Arc<PinReport>>,
    pub start_at_login: watch::Receiver<bool>,
    /// What needs a person, asked again on every change of the others.
    pub attention: Box<dyn Fn() -> Vec<Attention> + Send>,
}

/// Builds the tray, then keeps it (and the notifications) following `feeds` until the core stops
/// publishing.
pub fn start(app: &AppHandle, mut feeds: Feeds) -> tauri::Result<()> {
    let model = feeds.model();
    let menu = Menu::new(app)?;
    fill(app, &menu, &model.entries)?;
    let tray = TrayIconBuilder::with_id("switchboard")
        .icon(icon(model.health))
        .tooltip(&model.tooltip)
        .menu(&menu)
        .on_menu_event(|app, event| crate::actions::on_menu_event(app, event.id().as_ref()))
        .build(app)?;
    tauri::async_runtime::spawn(follow(app.clone(), tray, menu, model, feeds));
    Ok(())
}

impl Feeds {
    fn model(&mut self) -> MenuModel {
        self.pins.mark_unchanged();
        menu::menu_model(
            &self.statuses.borrow_and_update(),
            &self.config.borrow_and_update(),
            &(self.attention)(),
            *self.start_at_login.borrow_and_update(),
        )
    }

    /// Waits for the next change; false once the core is gone.
    async fn changed(&mut self) -> bool {
        tokio::select! {
            changed = self.statuses.changed() => changed.is_ok(),
            changed = self.config.changed() => changed.is_ok(),
            changed = self.pins.changed() => changed.is_ok(),
            changed = self.start_at_login.changed() => changed.is_ok(),
        }
    }
}

async fn follow(
    app: AppHandle,
    tray: TrayIcon,
    menu: Menu<Wry>,
    mut shown: MenuModel,
    mut feeds: Feeds,
) {
    let mut previous: Vec<BackendStatus> = Vec::new();
    let mut previous_pins = Arc::new(PinReport::default());
    loop {
        let pins = feeds.pins.borrow().clone();
        for notice in menu::held_notices(&previous_pins, &pins) {
            notify_now(&app, &notice);
        }
        previous_pins = pins;
        let current = feeds.statuses.borrow().clone();
        if feeds.config.borrow().desktop.notify_crash_loop {
            for status in menu::entered(BackendState::CrashLoop, &previous, &current) {
                notify_now(&app, &menu::crash_loop_notice(status));
            }
        }
        // A sign-in can only come from the person: always said.
        for status in menu::entered(BackendState::NeedsSignIn, &previous, &current) {
            notify_now(&app, &menu::sign_in_notice(status));
        }
        previous = current;
        if !feeds.changed().await {
            return;
        }
        let model = feeds.model();
        if model == shown {
            continue;
        }
        tracing::debug!(summary = %model.tooltip, "redrawing the tray");
        if let Err(error) = redraw(&app, &tray, &menu, &shown, &model) {
            tracing::warn!(%error, "cannot update the tray");
        }
        shown = model;
    }
}

fn redraw(
    app: &AppHandle,
    tray: &TrayIcon,
    menu: &Menu<Wry>,
    shown: &MenuModel,
    model: &MenuModel,
) -> tauri::Result<()> {
    if model.health != shown.health {
        tray.set_icon(Some(icon(model.health)))?;
    }
    tray.set_tooltip(Some(&model.tooltip))?;
    // Linux cannot replace a tray's menu, only its content.
    for item in menu.items()? {
        menu.remove(&item)?;
    }
    fill(app, menu, &model.entries)
}

fn fill(app: &AppHandle, menu: &Menu<Wry>, entries: &[Entry]) -> tauri::Result<()> {
    let items = items(app, entries)?;
    menu.append_items(&as_refs(&items))
}

fn items(app: &AppHandle, entries: &[Entry]) -> tauri::Result<Vec<MenuItemKind<Wry>>> {
    let none = None::<&str>;
    entries
        .iter()
        .map(|entry| {
            Ok(match entry {
                Entry::Text(text) => {
                    MenuItemKind::MenuItem(MenuItem::new(app, menu::menu_label(text), false, none)?)
                }
                Entry::Separator => MenuItemKind::Predefined(PredefinedMenuItem::separator(app)?),
                Entry::Item { id, label, enabled } => MenuItemKind::MenuItem(MenuItem::with_id(
                    app,
                    id.to_string(),
                    menu::menu_label(label),
                    *enabled,
                    none,
                )?),
                Entry::Toggle { id, label, checked } => {
                    MenuItemKind::Check(CheckMenuItem::with_id(
                        app,
                        id.to_string(),
                        menu::menu_label(label),
                        true,
                        *checked,
                        none,
                    )?)
                }
                Entry::Submenu { label, entries } => {
                    let children = items(app, entries)?;
                    MenuItemKind::Submenu(Submenu::with_items(
                        app,
                        menu::menu_label(label),
                        true,
                        &as_refs(&children),
                    )?)
                }
            })
        })
        .collect()
}

fn as_refs(items: &[MenuItemKind<Wry>]) -> Vec<&dyn IsMenuItem<Wry>> {
    items
        .iter()
        .map(|item| item as &dyn IsMenuItem<Wry>)
        .collect()
}

fn icon(health: Health) -> Image<'static> {
    let png: &[u8] = match health {
        Health::Ready => include_bytes!("../../icons/tray-ready.png"),
        Health::Starting => include_bytes!("../../icons/tray-starting.png"),
        Health::Failing => include_bytes!("../../icons/tray-failing.png"),
    };
    Image::from_bytes(png).expect("the tray icons are valid PNG files")
}

/// Shows a desktop notification through the system's notification service (Tauri's plugin).
pub fn notify_now(app: &AppHandle, notice: &Notice) {
    let shown = app
        .notification()
        .builder()
        .title(&notice.summary)
        .body(&notice.body)
        .show();
    if let Err(error) = shown {
        tracing::warn!(%error, summary = %notice.summary, "cannot show a desktop notification");
    }
}
