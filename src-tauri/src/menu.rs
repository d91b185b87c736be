//! The tray menu as plain data: a pure function of the published status, tested without a
//! display. `tray.rs` turns a [`MenuModel`] into tauri's menu; `actions.rs` runs a [`MenuId`].

use std::fmt;
use std::str::FromStr;

use control::attention::{self, Attention};
use control::reload::ConfigState;
use hub::pins::{HeldReason, PinReport};
use supervisor::status::{BackendAction, BackendState, BackendStatus};

/// The overall health the tray icon shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Nothing is starting or failing (stopped backends were stopped on purpose).
    Ready,
    /// Something is starting or stopping.
    Starting,
    /// Something is failing (it crashed and waits to restart, or is in a crash loop), or a
    /// remote server waits for a sign-in.
    Failing,
}

/// What can be done to one backend from the menu: the same calls the control API makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Start,
    Stop,
    Restart,
    /// Opens the browser to sign in to a remote server.
    SignIn,
}

/// Every item of the menu that does something. Tauri needs string ids; [`MenuId::to_string`]
/// and [`MenuId::from_str`] are the only place that knows how they are spelled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MenuId {
    Backend {
        name: String,
        action: Action,
    },
    OpenDashboard,
    /// The dashboard at its home page, where the "Needs attention" panel is.
    ReviewAttention,
    /// The dashboard's page that adds a server from a registry.
    AddServer,
    CopyEndpoint,
    ReloadConfig,
    StartAtLogin,
    Quit,
}

/// One entry of the menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A line of information that cannot be clicked.
    Text(String),
    Separator,
    Item {
        id: MenuId,
        label: String,
        enabled: bool,
    },
    Toggle {
        id: MenuId,
        label: String,
        checked: bool,
    },
    Submenu {
        label: String,
        entries: Vec<Entry>,
    },
}

/// Everything the tray shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MenuModel {
    pub health: Health,
    pub tooltip: String,
    pub entries: Vec<Entry>,
}

/// The longest error text shown in a menu line; the dashboard shows all of it.
const ERROR_CHARS: usize = 80;

/// The menu for these statuses (in config order), this config state, what needs attention,
/// and whether Switchboard starts at login.
pub fn menu_model(
    statuses: &[BackendStatus],
    config: &ConfigState,
    needs: &[Attention],
    start_at_login: bool,
) -> MenuModel {
    // What needs a person is the first line; else how the servers are.
    let summary = attention::summary(needs).unwrap_or_else(|| summary(statuses));
    let mut entries = vec![Entry::Text(shorten(&summary))];
    if !needs.is_empty() {
        entries.push(item(MenuId::ReviewAttention, "Review on the dashboard…"));
    }
    entries.extend(
        config
            .problem
            .as_deref()
            .map(|problem| Entry::Text(shorten(problem))),
    );
    // What waits for the person comes first, where it is seen.
    entries.extend(
        statuses
            .iter()
            .filter(|status| status.actions().contains(&BackendAction::SignIn))
            .map(|status| Entry::Item {
                id: MenuId::Backend {
                    name: status.name.clone(),
                    action: Action::SignIn,
                },
                label: format!("Sign in to {}…", status.name),
                enabled: true,
            }),
    );
    entries.push(Entry::Separator);
    entries.extend(statuses.iter().map(backend_submenu));
    if !statuses.is_empty() {
        entries.push(Entry::Separator);
    }
    entries.extend([
        item(MenuId::OpenDashboard, "Open dashboard"),
        item(MenuId::AddServer, "Add server…"),
        item(MenuId::CopyEndpoint, "Copy MCP endpoint URL"),
        item(MenuId::ReloadConfig, "Reload config"),
        Entry::Separator,
        Entry::Toggle {
            id: MenuId::StartAtLogin,
            label: "Start at login".to_owned(),
            checked: start_at_login,
        },
        Entry::Separator,
        item(MenuId::Quit, "Quit Switchboard"),
    ]);
    MenuModel {
        health: health(statuses),
        tooltip: format!("Switchboard — {summary}"),
        entries,
    }
}

/// The overall health of these backends.
pub fn health(statuses: &[BackendStatus]) -> Health {
    let any_in =
        |states: &[BackendState]| statuses.iter().any(|status| states.contains(&status.state));
    let failing_or_waiting = |status: &BackendStatus| {
        status.state.is_failing() || status.state == BackendState::NeedsSignIn
    };
    if statuses.iter().any(failing_or_waiting) {
        Health::Failing
    } else if any_in(&[BackendState::Starting, BackendState::Stopping]) {
        Health::Starting
    } else {
        Health::Ready
    }
}

/// The backends that are in `state` now and were not in the previous statuses.
pub fn entered<'a>(
    state: BackendState,
    previous: &[BackendStatus],
    current: &'a [BackendStatus],
) -> Vec<&'a BackendStatus> {
    current
        .iter()
        .filter(|status| status.state == state)
        .filter(|status| {
            !previous
                .iter()
                .any(|before| before.name == status.name && before.state == state)
        })
        .collect()
}

/// A desktop notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub summary: String,
    pub body: String,
}

/// The notification for a backend that has just entered a crash loop.
pub fn crash_loop_notice(status: &BackendStatus) -> Notice {
    let mut body = format!(
        "{} keeps crashing ({} restarts) and is not restarted again until you start it.",
        status.name, status.restarts
    );
    if let Some(error) = &status.last_error {
        body.push_str(&format!(" Last error: {}.", shorten(error)));
    }
    body.push_str(" Its output is in the dashboard.");
    Notice {
        summary: format!("Switchboard: {} is in a crash loop", status.name),
        body,
    }
}

/// The notification for a remote server that has just asked for a sign-in.
pub fn sign_in_notice(status: &BackendStatus) -> Notice {
    let mut body = format!("{} wants you to sign in again", status.name);
    if let Some(error) = &status.last_error {
        body.push_str(&format!(" ({})", shorten(error)));
    }
    body.push_str(&format!(
        ". Choose \"Sign in to {}\" in this menu or the dashboard; the other servers carry on.",
        status.name
    ));
    Notice {
        summary: format!("Switchboard: sign in to {}", status.name),
        body,
    }
}

/// The notifications for tools newly held back since `previous`: one per server.
pub fn held_notices(previous: &PinReport, current: &PinReport) -> Vec<Notice> {
    // (server, tools, whether any of them changed rather than being new)
    let mut by_server: Vec<(&str, Vec<&str>, bool)> = Vec::new();
    for held in &current.held {
        let known = previous
            .held
            .iter()
            .any(|before| before.server == held.server && before.key == held.key);
        if known || held.reason == HeldReason::Unreadable {
            continue;
        }
        let changed = held.reason == HeldReason::Changed;
        match by_server
            .iter_mut()
            .find(|(server, ..)| *server == held.server)
        {
            Some((_, names, any_changed)) => {
                names.push(&held.key);
                *any_changed |= changed;
            }
            None => by_server.push((&held.server, vec![&held.key], changed)),
        }
    }
    by_server
        .into_iter()
        .map(|(server, names, changed)| Notice {
            summary: if changed {
                format!("Switchboard: {server} changed its tools")
            } else {
                format!("Switchboard: {server} offers new tools")
            },
            body: format!(
                "{} of {server} {} held back from your editors until you approve {} on the \
                 dashboard, which shows what changed.",
                names.join(", "),
                if names.len() == 1 { "is" } else { "are" },
                if names.len() == 1 { "it" } else { "them" },
            ),
        })
        .collect()
}

/// A menu label as tauri's menus want it: `&` marks a keyboard accelerator there, so a literal
/// one (in a backend's name, say) is doubled.
pub fn menu_label(text: &str) -> String {
    text.replace('&', "&&")
}

/// How a state reads in the menu.
fn state_text(state: BackendState) -> &'static str {
    match state {
        BackendState::Stopped => "stopped",
        BackendState::Starting => "starting",
        BackendState::Ready => "ready",
        BackendState::Backoff => "restarting",
        BackendState::CrashLoop => "crash loop",
        BackendState::Stopping => "stopping",
        BackendState::NeedsSignIn => "needs sign-in",
    }
}

/// "2 ready, 1 crash loop": how many backends are in each state, in the order of the states.
fn summary(statuses: &[BackendStatus]) -> String {
    if statuses.is_empty() {
        return "No servers configured".to_owned();
    }
    let order = [
        BackendState::Ready,
        BackendState::Starting,
        BackendState::Backoff,
        BackendState::CrashLoop,
        BackendState::NeedsSignIn,
        BackendState::Stopping,
        BackendState::Stopped,
    ];
    let parts: Vec<String> = order
        .iter()
        .filter_map(|state| {
            let n_backends = statuses
                .iter()
                .filter(|status| status.state == *state)
                .count();
            (n_backends > 0).then(|| format!("{n_backends} {}", state_text(*state)))
        })
        .collect();
    parts.join(", ")
}

fn backend_submenu(status: &BackendStatus) -> Entry {
    let mut details = Vec::new();
    if let Some(pid) = status.pid {
        details.push(format!("PID {pid}"));
    }
    if status.restarts > 0 {
        details.push(format!("{} restarts", status.restarts));
    }
    let mut entries = Vec::new();
    if !details.is_empty() {
        entries.push(Entry::Text(details.join(" · ")));
    }
    if let Some(error) = &status.last_error {
        entries.push(Entry::Text(shorten(error)));
    }
    if !entries.is_empty() {
        entries.push(Entry::Separator);
    }
    // What the core offers, as the dashboard's buttons show it: a sign-in only when offered,
    // the other actions always, enabled when offered.
    let offered = status.actions();
    let backend_item = |action: Action, label: &str, enabled: bool| Entry::Item {
        id: MenuId::Backend {
            name: status.name.clone(),
            action,
        },
        label: label.to_owned(),
        enabled,
    };
    if offered.contains(&BackendAction::SignIn) {
        entries.push(backend_item(Action::SignIn, "Sign in…", true));
    }
    entries.extend(
        [
            (Action::Start, BackendAction::Start, "Start"),
            (Action::Stop, BackendAction::Stop, "Stop"),
            (Action::Restart, BackendAction::Restart, "Restart"),
        ]
        .map(|(action, core, label)| backend_item(action, label, offered.contains(&core))),
    );
    Entry::Submenu {
        label: format!("{}: {}", status.name, state_text(status.state)),
        entries,
    }
}

fn item(id: MenuId, label: &str) -> Entry {
    Entry::Item {
        id,
        label: label.to_owned(),
        enabled: true,
    }
}

/// The first line of `text`, at most [`ERROR_CHARS`] characters.
pub fn shorten(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() <= ERROR_CHARS {
        return line.to_owned();
    }
    let kept: String = line.chars().take(ERROR_CHARS - 1).collect();
    format!("{kept}…")
}

impl Action {
    fn as_str(self) -> &'static str {
        match self {
            Action::Start => "start",
            Action::Stop => "stop",
            Action::Restart => "restart",
            Action::SignIn => "sign-in",
        }
    }
}

/// The prefix of a backend item's id; the action and the backend's name follow, in that order,
/// so that a name may hold any character.
const BACKEND_PREFIX: &str = "backend:";

impl fmt::Display for MenuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MenuId::Backend { name, action } => {
                write!(f, "{BACKEND_PREFIX}{}:{name}", action.as_str())
            }
            MenuId::OpenDashboard => f.write_str("open-dashboard"),
            MenuId::ReviewAttention => f.write_str("review-attention"),
            MenuId::AddServer => f.write_str("add-server"),
            MenuId::CopyEndpoint => f.write_str("copy-endpoint"),
            MenuId::ReloadConfig => f.write_str("reload-config"),
            MenuId::StartAtLogin => f.write_str("start-at-login"),
            MenuId::Quit => f.write_str("quit"),
        }
    }
}

/// A menu id that none of ours is spelled as (tauri's own ids for items that do nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownMenuId;

impl FromStr for MenuId {
    type Err = UnknownMenuId;

    fn from_str(id: &str) -> Result<MenuId, UnknownMenuId> {
        if let Some(rest) = id.strip_prefix(BACKEND_PREFIX) {
            let (action, name) = rest.split_once(':').ok_or(UnknownMenuId)?;
            let action = [Action::Start, Action::Stop, Action::Restart, Action::SignIn]
                .into_iter()
                .find(|known| known.as_str() == action)
                .ok_or(UnknownMenuId)?;
            return Ok(MenuId::Backend {
                name: name.to_owned(),
                action,
            });
        }
        match id {
            "open-dashboard" => Ok(MenuId::OpenDashboard),
            "review-attention" => Ok(MenuId::ReviewAttention),
            "add-server" => Ok(MenuId::AddServer),
            "copy-endpoint" => Ok(MenuId::CopyEndpoint),
            "reload-config" => Ok(MenuId::ReloadConfig),
            "start-at-login" => Ok(MenuId::StartAtLogin),
            "quit" => Ok(MenuId::Quit),
            _ => Err(UnknownMenuId),
        }
    }
}

#[cfg(test)]
mod tests {
    use control::reload::ConfigStatus;
    use hub::pins::{Definition, Held, PinnedKind};

    use super::*;

    fn status(name: &str, state: BackendState) -> BackendStatus {
        BackendStatus {
            state,
            ..BackendStatus::new(name)
        }
    }

    /// The state of a valid config, as the core makes it.
    fn config() -> ConfigState {
        let path = std::path::Path::new("/home/someone/.config/switchboard/config.toml");
        let config = config::parse(path, "[endpoint]\nrequire_token = true\n").expect("valid");
        ConfigState::loaded(&config)
    }

    fn submenu<'a>(model: &'a MenuModel, label: &str) -> &'a [Entry] {
        model
            .entries
            .iter()
            .find_map(|entry| match entry {
                Entry::Submenu {
                    label: found,
                    entries,
                } if found == label => Some(entries.as_slice()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no submenu {label:?} in {model:#?}"))
    }

    /// The enabled state of Start, Stop and Restart in a backend's submenu.
    fn offered(entries: &[Entry]) -> Vec<(Action, bool)> {
        entries
            .iter()
            .filter_map(|entry| match entry {
                Entry::Item {
                    id: MenuId::Backend { action, .. },
                    enabled,
                    ..
                } => Some((*action, *enabled)),
                _ => None,
            })
            .collect()
    }

    fn texts(entries: &[Entry]) -> Vec<&str> {
        entries
            .iter()
            .filter_map(|entry| match entry {
                Entry::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn ids_round_trip_including_odd_backend_names() {
        let names = [
            "files",
            "a:b:c",
            "backend:start:x",
            "with space & ampersand",
            "ünïcødé — 名前",
            "",
            "trailing:",
            "new\nline",
        ];
        let mut ids: Vec<MenuId> = vec![
            MenuId::OpenDashboard,
            MenuId::ReviewAttention,
            MenuId::AddServer,
            MenuId::CopyEndpoint,
            MenuId::ReloadConfig,
            MenuId::StartAtLogin,
            MenuId::Quit,
        ];
        for name in names {
            for action in [Action::Start, Action::Stop, Action::Restart] {
                ids.push(MenuId::Backend {
                    name: name.to_owned(),
                    action,
                });
            }
        }
        for id in ids {
            assert_eq!(id.to_string().parse::<MenuId>(), Ok(id.clone()), "{id:?}");
        }
    }

    #[test]
    fn ids_that_are_not_ours_are_refused() {
        for id in [
            "",
            "quit ",
            "Quit",
            "backend:",
            "backend:start",
            "backend:kill:files",
            "1",
        ] {
            assert_eq!(id.parse::<MenuId>(), Err(UnknownMenuId), "{id:?}");
        }
    }

    #[test]
    fn every_id_is_spelled_differently() {
        let ids: Vec<String> = [
            MenuId::OpenDashboard,
            MenuId::ReviewAttention,
            MenuId::AddServer,
            MenuId::CopyEndpoint,
            MenuId::ReloadConfig,
            MenuId::StartAtLogin,
            MenuId::Quit,
            MenuId::Backend {
                name: "quit".to_owned(),
                action: Action::Stop,
            },
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), ids.len(), "{ids:?}");
    }

    #[test]
    fn health_follows_the_worst_backend() {
        use BackendState::*;
        let cases: &[(&[BackendState], Health)] = &[
            (&[], Health::Ready),
            (&[Ready, Ready], Health::Ready),
            (&[Ready, Stopped], Health::Ready),
            (&[Ready, Starting], Health::Starting),
            (&[Stopping, Ready], Health::Starting),
            (&[Ready, Backoff], Health::Failing),
            (&[Starting, CrashLoop], Health::Failing),
            (&[CrashLoop], Health::Failing),
        ];
        for (states, expected) in cases {
            let statuses: Vec<BackendStatus> = states
                .iter()
                .enumerate()
                .map(|(index, state)| status(&format!("b{index}"), *state))
                .collect();
            assert_eq!(health(&statuses), *expected, "{states:?}");
        }
    }

    #[test]
    fn the_tooltip_and_first_line_count_backends_per_state() {
        let statuses = [
            status("a", BackendState::Ready),
            status("b", BackendState::CrashLoop),
            status("c", BackendState::Ready),
            status("d", BackendState::Stopped),
        ];
        let model = menu_model(&statuses, &config(), &[], false);
        assert_eq!(
            model.tooltip,
            "Switchboard — 2 ready, 1 crash loop, 1 stopped"
        );
        assert_eq!(
            model.entries[0],
            Entry::Text("2 ready, 1 crash loop, 1 stopped".to_owned())
        );
        assert_eq!(model.health, Health::Failing);
        let empty = menu_model(&[], &config(), &[], false);
        assert_eq!(empty.tooltip, "Switchboard — No servers configured");
        assert_eq!(empty.health, Health::Ready);
    }

    #[test]
    fn one_submenu_per_backend_in_config_order_with_its_state() {
        let statuses = [
            status("zeta", BackendState::Ready),
            status("alpha", BackendState::Backoff),
        ];
        let model = menu_model(&statuses, &config(), &[], false);
        let labels: Vec<&str> = model
            .entries
            .iter()
            .filter_map(|entry| match entry {
                Entry::Submenu { label, .. } => Some(label.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(labels, ["zeta: ready", "alpha: restarting"]);
    }

    #[test]
    fn start_stop_and_restart_are_offered_where_they_make_sense() {
        use Action::*;
        let cases = [
            (
                BackendState::Ready,
                [(Start, false), (Stop, true), (Restart, true)],
            ),
            (
                BackendState::Starting,
                [(Start, false), (Stop, true), (Restart, true)],
            ),
            (
                BackendState::Stopped,
                [(Start, true), (Stop, false), (Restart, true)],
            ),
            (
                BackendState::CrashLoop,
                [(Start, true), (Stop, true), (Restart, true)],
            ),
            (
                BackendState::Backoff,
                [(Start, true), (Stop, true), (Restart, true)],
            ),
            (
                BackendState::Stopping,
                [(Start, true), (Stop, true), (Restart, true)],
            ),
        ];
        for (state, expected) in cases {
            let model = menu_model(&[status("files", state)], &config(), &[], false);
            let label = format!("files: {}", state_text(state));
            assert_eq!(offered(submenu(&model, &label)), expected, "{state:?}");
        }
    }

    #[test]
    fn a_backend_item_names_its_backend() {
        let model = menu_model(&[status("a:b", BackendState::Ready)], &config(), &[], false);
        let ids: Vec<String> = submenu(&model, "a:b: ready")
            .iter()
            .filter_map(|entry| match entry {
                Entry::Item { id, .. } => Some(id.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(
            ids,
            [
                "backend:start:a:b",
                "backend:stop:a:b",
                "backend:restart:a:b"
            ]
        );
    }

    #[test]
    fn a_submenu_shows_the_pid_restarts_and_the_last_error_shortened() {
        let mut failing = status("files", BackendState::Backoff);
        failing.restarts = 3;
        failing.last_error = Some(format!("{}\nsecond line", "x".repeat(200)));
        let mut ready = status("notes", BackendState::Ready);
        ready.pid = Some(4242);
        let model = menu_model(&[failing, ready], &config(), &[], false);
        let failing_texts = texts(submenu(&model, "files: restarting"));
        assert_eq!(failing_texts[0], "3 restarts");
        assert_eq!(failing_texts[1].chars().count(), ERROR_CHARS);
        assert!(failing_texts[1].ends_with('…'));
        assert_eq!(texts(submenu(&model, "notes: ready")), ["PID 4242"]);
    }

    #[test]
    fn the_fixed_items_and_the_login_toggle_follow_the_backends() {
        for start_at_login in [false, true] {
            let model = menu_model(
                &[status("files", BackendState::Ready)],
                &config(),
                &[],
                start_at_login,
            );
            let fixed: Vec<(String, bool)> = model
                .entries
                .iter()
                .filter_map(|entry| match entry {
                    Entry::Item { id, enabled, .. } if !matches!(id, MenuId::Backend { .. }) => {
                        Some((id.to_string(), *enabled))
                    }
                    Entry::Toggle { id, checked, .. } => Some((id.to_string(), *checked)),
                    _ => None,
                })
                .collect();
            let expected = [
                ("open-dashboard", true),
                ("add-server", true),
                ("copy-endpoint", true),
                ("reload-config", true),
                ("start-at-login", start_at_login),
                ("quit", true),
            ];
            let expected: Vec<(String, bool)> = expected
                .iter()
                .map(|(id, flag)| (id.to_string(), *flag))
                .collect();
            assert_eq!(fixed, expected);
        }
    }

    #[test]
    fn a_config_with_problems_is_said_under_the_summary_as_the_core_words_it() {
        let path = std::path::Path::new("/home/someone/.config/switchboard/config.toml");
        let partly = ConfigState::loaded(
            &config::parse(path, "[servers.files]\nargs = []\n").expect("parsed"),
        );
        assert_eq!(partly.status, ConfigStatus::AppliedInPart);
        let statuses = [status("files", BackendState::Ready)];
        assert_eq!(
            texts(&menu_model(&statuses, &partly, &[], false).entries),
            [
                "1 ready",
                "The config file has 1 error; servers with errors are left out"
            ]
        );
        let long = ConfigState {
            status: ConfigStatus::Unread,
            problem: Some(format!("The config file is gone{}", " and far".repeat(20))),
            ..config()
        };
        let model = menu_model(&statuses, &long, &[], false);
        let line = texts(&model.entries)[1];
        assert!(
            line.starts_with("The config file is gone and far"),
            "{line}"
        );
        assert_eq!(line.chars().count(), ERROR_CHARS, "{line}");
        assert_eq!(
            texts(&menu_model(&statuses, &config(), &[], false).entries),
            ["1 ready"]
        );
    }

    #[test]
    fn a_crash_loop_is_reported_once_when_it_begins() {
        let before = [
            status("a", BackendState::Backoff),
            status("b", BackendState::CrashLoop),
        ];
        let after = [
            status("a", BackendState::CrashLoop),
            status("b", BackendState::CrashLoop),
            status("new", BackendState::CrashLoop),
        ];
        let names = |found: Vec<&BackendStatus>| -> Vec<String> {
            found.iter().map(|status| status.name.clone()).collect()
        };
        let crash_loop = BackendState::CrashLoop;
        assert_eq!(names(entered(crash_loop, &before, &after)), ["a", "new"]);
        assert!(entered(crash_loop, &after, &after).is_empty());
        let restarted = [status("a", BackendState::Starting)];
        assert!(entered(crash_loop, &after, &restarted).is_empty());
        assert_eq!(names(entered(crash_loop, &restarted, &after[..1])), ["a"]);
    }

    #[test]
    fn a_server_that_needs_a_sign_in_is_offered_first_and_notified_once() {
        let mut waiting = status("linear", BackendState::NeedsSignIn);
        waiting.last_error = Some("the sign-in to linear has expired (invalid_grant)".to_owned());
        let statuses = [status("files", BackendState::Ready), waiting.clone()];
        let model = menu_model(&statuses, &config(), &[], false);
        assert_eq!(model.health, Health::Failing);
        assert_eq!(
            model.entries[..2],
            [
                Entry::Text("1 ready, 1 needs sign-in".to_owned()),
                Entry::Item {
                    id: MenuId::Backend {
                        name: "linear".to_owned(),
                        action: Action::SignIn,
                    },
                    label: "Sign in to linear…".to_owned(),
                    enabled: true,
                },
            ]
        );
        let id = MenuId::Backend {
            name: "linear".to_owned(),
            action: Action::SignIn,
        };
        assert_eq!(id.to_string().parse::<MenuId>(), Ok(id));
        let before = [status("linear", BackendState::Ready)];
        let needs = BackendState::NeedsSignIn;
        assert_eq!(entered(needs, &before, &statuses).len(), 1);
        assert!(entered(needs, &statuses, &statuses).is_empty());
        assert_eq!(
            sign_in_notice(&waiting),
            Notice {
                summary: "Switchboard: sign in to linear".to_owned(),
                body: "linear wants you to sign in again (the sign-in to linear has expired \
                       (invalid_grant)). Choose \"Sign in to linear\" in this menu or the \
                       dashboard; the other servers carry on."
                    .to_owned(),
            }
        );
    }

    #[test]
    fn the_crash_loop_notice_names_the_backend_and_its_last_error() {
        let mut looping = status("files", BackendState::CrashLoop);
        looping.restarts = 5;
        looping.last_error = Some("exit code 3".to_owned());
        assert_eq!(
            crash_loop_notice(&looping),
            Notice {
                summary: "Switchboard: files is in a crash loop".to_owned(),
                body: "files keeps crashing (5 restarts) and is not restarted again until you \
                       start it. Last error: exit code 3. Its output is in the dashboard."
                    .to_owned(),
            }
        );
    }

    #[test]
    fn add_server_is_offered_under_open_dashboard_with_or_without_servers() {
        for statuses in [vec![], vec![status("files", BackendState::Ready)]] {
            let model = menu_model(&statuses, &config(), &[], false);
            let at = model
                .entries
                .iter()
                .position(|entry| {
                    matches!(
                        entry,
                        Entry::Item {
                            id: MenuId::OpenDashboard,
                            ..
                        }
                    )
                })
                .expect("Open dashboard");
            assert_eq!(
                model.entries[at + 1],
                Entry::Item {
                    id: MenuId::AddServer,
                    label: "Add server…".to_owned(),
                    enabled: true,
                },
                "{statuses:?}"
            );
        }
        assert_eq!(MenuId::AddServer.to_string(), "add-server");
        assert_eq!("add-server".parse::<MenuId>(), Ok(MenuId::AddServer));
    }

    #[test]
    fn ampersands_in_labels_stay_literal() {
        assert_eq!(menu_label("R&D tools"), "R&&D tools");
        assert_eq!(menu_label("plain"), "plain");
    }

    #[test]
    fn what_needs_attention_is_the_first_line_with_a_way_to_the_dashboard() {
        let statuses = [status("files", BackendState::Ready)];
        let pins = PinReport {
            held: vec![held("git", "commit", HeldReason::Changed)],
            problems: Default::default(),
        };
        let needs = attention::list(&attention::Inputs {
            statuses: &statuses,
            config: &config(),
            pins: &pins,
            budgets: &[],
            activity: None,
        });
        let model = menu_model(&statuses, &config(), &needs, false);
        assert_eq!(
            model.tooltip,
            "Switchboard — Needs attention: 1 tool(s) of git changed since approved, held back \
             from editors: commit"
        );
        assert!(texts(&model.entries)[0].starts_with("Needs attention: 1 tool(s) of git"));
        assert!(matches!(
            &model.entries[1],
            Entry::Item { id: MenuId::ReviewAttention, label, .. } if label == "Review on the dashboard…"
        ));
    }

    fn held(server: &str, name: &str, reason: HeldReason) -> Held {
        Held {
            server: server.to_owned(),
            kind: PinnedKind::Tool,
            name: name.to_owned(),
            key: name.to_owned(),
            reason,
            detail: None,
            pinned: None,
            current: Definition::new(
                serde_json::value::to_raw_value(&serde_json::json!({ "name": name }))
                    .expect("JSON"),
            ),
            sha256: String::new(),
        }
    }

    #[test]
    fn newly_held_tools_are_notified_once_per_server() {
        let before = PinReport {
            held: vec![held("git", "commit", HeldReason::Changed)],
            problems: Default::default(),
        };
        let after = PinReport {
            held: vec![
                held("git", "commit", HeldReason::Changed),
                held("git", "push", HeldReason::Changed),
                held("fresh", "a", HeldReason::New),
                held("fresh", "b", HeldReason::New),
                held("broken", "x", HeldReason::Unreadable),
            ],
            problems: Default::default(),
        };
        let notices = held_notices(&before, &after);
        assert_eq!(
            notices,
            [
                Notice {
                    summary: "Switchboard: git changed its tools".to_owned(),
                    body: "push of git is held back from your editors until you approve it on \
                           the dashboard, which shows what changed."
                        .to_owned(),
                },
                Notice {
                    summary: "Switchboard: fresh offers new tools".to_owned(),
                    body: "a, b of fresh are held back from your editors until you approve them \
                           on the dashboard, which shows what changed."
                        .to_owned(),
                },
            ]
        );
        assert!(held_notices(&after, &after).is_empty());
    }
}
