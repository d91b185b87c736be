//! What a change of the published status tells the person: which backends have just entered
//! a state, and the desktop notifications for a crash loop, a sign-in and held-back tools.

use hub::pins::{HeldReason, PinReport};
use supervisor::status::{BackendState, BackendStatus};

use super::text::shorten;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::menu::fixtures::{held, status};

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
