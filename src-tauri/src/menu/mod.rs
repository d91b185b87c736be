//! The tray menu as plain data: a pure function of the published status, tested without a
//! display. `tray.rs` turns a [`MenuModel`] into tauri's menu; `actions.rs` runs a [`MenuId`].
//! This file builds the menu; [`id`] spells its items' ids for tauri, [`text`] words the
//! servers' states, and [`notice`] says what a change of status notifies.

mod id;
mod notice;
mod text;

#[cfg(test)]
mod fixtures;

use control::attention::{self, Attention};
use control::reload::ConfigState;
use supervisor::status::{BackendAction, BackendState, BackendStatus};

pub use id::{Action, MenuId};
pub use notice::{Notice, crash_loop_notice, entered, held_notices, sign_in_notice};
pub use text::{menu_label, shorten};
use text::{state_text, summary};

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

#[cfg(test)]
mod tests {
    use control::reload::ConfigStatus;
    use hub::pins::{HeldReason, PinReport};

    use super::fixtures::{config, held, status};
    use super::text::ERROR_CHARS;
    use super::*;

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
                "The config file has 1 error; `files` is left out"
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
            in_use: &[],
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
}
