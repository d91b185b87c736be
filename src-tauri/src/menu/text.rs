//! How the menu words what it shows: a server's state, the count of servers per state, an
//! error cut to one short line, and a label that tauri shows as it is.

use supervisor::status::{BackendState, BackendStatus};

/// The longest error text shown in a menu line; the dashboard shows all of it.
pub const ERROR_CHARS: usize = 80;

/// A menu label as tauri's menus want it: `&` marks a keyboard accelerator there, so a literal
/// one (in a backend's name, say) is doubled.
pub fn menu_label(text: &str) -> String {
    text.replace('&', "&&")
}

/// How a state reads in the menu.
pub fn state_text(state: BackendState) -> &'static str {
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
pub fn summary(statuses: &[BackendStatus]) -> String {
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

/// The first line of `text`, at most [`ERROR_CHARS`] characters.
pub fn shorten(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() <= ERROR_CHARS {
        return line.to_owned();
    }
    let kept: String = line.chars().take(ERROR_CHARS - 1).collect();
    format!("{kept}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ampersands_in_labels_stay_literal() {
        assert_eq!(menu_label("R&D tools"), "R&&D tools");
        assert_eq!(menu_label("plain"), "plain");
    }
}
