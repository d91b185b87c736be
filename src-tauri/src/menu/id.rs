//! The items of the menu that do something, and how their ids are spelled: tauri needs string
//! ids, and this file is the only place that knows them.

use std::fmt;
use std::str::FromStr;

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
    use super::*;

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
}
