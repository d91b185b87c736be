//! What needs a person: one list computed from what runs (servers in a crash loop or waiting
//! for a sign-in, tools held back, the config's errors, `/mcp` open to every local program,
//! profiles past the limits of a client that uses them, activity records lost), each entry with
//! the action that resolves it. The dashboard shows it, and the tray's first line sums it up.
//!
//! A client's limit counts only for the editors whose files point at this Switchboard (the
//! entries `install` and `move` write, or a person's), through the profile they reach: a limit of
//! an editor nobody uses here needs nobody. Those files are read at most every [`IN_USE_FRESH`],
//! since the list is asked for on every change of state.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::reload::ConfigState;
use activity::{ActivityLog, LogHealth};
use editors::InUse;
use hub::Hub;
use hub::budget::Budget;
use hub::pins::{Held, HeldReason, PinReport, PinnedKind};
use supervisor::Engine;
use supervisor::status::{BackendState, BackendStatus};

/// What kind of thing needs attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    CrashLoop,
    NeedsSignIn,
    HeldTools,
    PinStore,
    Config,
    /// `/mcp` takes requests without a token because the config predates it.
    OpenEndpoint,
    Profile,
    Activity,
}

/// One thing that needs a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attention {
    pub(crate) kind: Kind,
    /// The server or profile it concerns, if one.
    pub(crate) subject: Option<String>,
    pub(crate) message: String,
    pub(crate) action: Action,
}

/// What resolves it: a request of the control API when one does, and the dashboard's page that
/// shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Action {
    pub(crate) label: String,
    /// `POST` to this path of the control API, when one request resolves it.
    pub(crate) post: Option<String>,
    /// The dashboard's page (a `#/…` route).
    pub(crate) page: String,
}

/// Everything that makes up the list.
pub struct Inputs<'a> {
    pub statuses: &'a [BackendStatus],
    pub config: &'a ConfigState,
    pub pins: &'a PinReport,
    pub budgets: &'a [Budget],
    /// The editors that use this Switchboard, and through which profile.
    pub in_use: &'a [InUse],
    pub activity: Option<&'a LogHealth>,
}

/// How long what the editors' files say is taken as true.
const IN_USE_FRESH: Duration = Duration::from_secs(30);

/// The editors that use the Switchboard that `exe` runs at `address`, read from their files at
/// most every [`IN_USE_FRESH`]. Cheap to clone; clones share what was read.
#[derive(Clone)]
pub struct EditorsInUse {
    exe: PathBuf,
    port: u16,
    read: Arc<Mutex<Option<ReadAt>>>,
}

/// What the editors' files said, and when they were read.
type ReadAt = (Instant, Arc<Vec<InUse>>);

impl EditorsInUse {
    pub fn new(exe: PathBuf, address: SocketAddr) -> EditorsInUse {
        EditorsInUse {
            exe,
            port: address.port(),
            read: Arc::default(),
        }
    }

    /// What the editors' files say, read again when older than [`IN_USE_FRESH`].
    pub fn now(&self) -> Arc<Vec<InUse>> {
        let mut read = self
            .read
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match &*read {
            Some((at, list)) if at.elapsed() < IN_USE_FRESH => list.clone(),
            _ => {
                let list = Arc::new(editors::in_use(&self.exe, self.port));
                *read = Some((Instant::now(), list.clone()));
                list
            }
        }
    }
}

/// The list, most pressing first: servers that do not run, then what is held back, then the
/// config, the profiles and the log.
pub fn list(inputs: &Inputs<'_>) -> Vec<Attention> {
    let mut list = Vec::new();
    for status in inputs.statuses {
        let name = &status.name;
        let page = format!("#/backend/{}", url_segment(name));
        match status.state {
            BackendState::CrashLoop => list.push(Attention {
                kind: Kind::CrashLoop,
                subject: Some(name.clone()),
                message: match &status.last_error {
                    Some(error) => format!("{name} keeps crashing: {error}"),
                    None => format!("{name} keeps crashing"),
                },
                action: Action {
                    label: "Restart".to_owned(),
                    post: Some(format!("/api/backends/{}/restart", url_segment(name))),
                    page: format!("{page}/history"),
                },
            }),
            BackendState::NeedsSignIn => list.push(Attention {
                kind: Kind::NeedsSignIn,
                subject: Some(name.clone()),
                message: format!("{name} needs a sign-in"),
                action: Action {
                    label: "Sign in".to_owned(),
                    post: Some(format!("/api/backends/{}/sign-in", url_segment(name))),
                    page,
                },
            }),
            _ => {}
        }
    }
    let mut servers: Vec<&str> = inputs
        .pins
        .held
        .iter()
        .map(|held| held.server.as_str())
        .collect();
    servers.dedup();
    for server in servers {
        if inputs.pins.problems.contains_key(server)
            && inputs
                .pins
                .held
                .iter()
                .any(|held| held.server == server && held.reason == HeldReason::Unreadable)
        {
            // Said once below, with the reason.
            continue;
        }
        let of_server: Vec<&Held> = inputs
            .pins
            .held
            .iter()
            .filter(|held| held.server == server)
            .collect();
        let held: Vec<&str> = of_server.iter().map(|held| held.key.as_str()).collect();
        let reasons = |reason| of_server.iter().any(|held| held.reason == reason);
        let what = if reasons(HeldReason::Changed) {
            "changed since approved"
        } else if reasons(HeldReason::Unchecked) {
            "that cannot be checked"
        } else {
            "new"
        };
        let noun = match of_server.iter().all(|held| held.kind == PinnedKind::Tool) {
            true => "tool(s)",
            false => "definition(s)",
        };
        list.push(Attention {
            kind: Kind::HeldTools,
            subject: Some(server.to_owned()),
            message: format!(
                "{} {noun} of {server} {what}, held back from editors: {}",
                held.len(),
                held.join(", ")
            ),
            action: Action {
                label: "Review".to_owned(),
                post: None,
                page: "#/review".to_owned(),
            },
        });
    }
    for (server, problem) in &inputs.pins.problems {
        list.push(Attention {
            kind: Kind::PinStore,
            subject: Some(server.clone()),
            message: problem.clone(),
            action: Action {
                label: "Review".to_owned(),
                post: None,
                page: "#/review".to_owned(),
            },
        });
    }
    let config = inputs.config;
    if let Some(problem) = &config.problem {
        list.push(Attention {
            kind: Kind::Config,
            subject: None,
            message: problem.clone(),
            action: Action {
                label: "Show the errors".to_owned(),
                post: None,
                page: "#/".to_owned(),
            },
        });
    }
    if config.endpoint_open {
        list.push(Attention {
            kind: Kind::OpenEndpoint,
            subject: None,
            message: "/mcp takes requests from any program on this machine".to_owned(),
            action: Action {
                label: "Require a token".to_owned(),
                post: Some("/api/endpoint/require-token".to_owned()),
                page: "#/connect".to_owned(),
            },
        });
    }
    for budget in inputs.budgets {
        // An older version's limit is not said: an editor's file does not tell its version.
        let used = budget.client_warnings.iter().filter(|warning| {
            !warning.older_versions
                && inputs.in_use.iter().any(|in_use| {
                    in_use.editor.client_id() == warning.client && in_use.profile == budget.profile
                })
        });
        let warnings = budget
            .warnings
            .iter()
            .chain(used.map(|warning| &warning.message));
        for warning in warnings {
            list.push(Attention {
                kind: Kind::Profile,
                subject: Some(budget.profile.clone()),
                message: format!("profile {}: {warning}", budget.profile),
                action: Action {
                    label: "Open the profile".to_owned(),
                    post: None,
                    page: "#/profiles".to_owned(),
                },
            });
        }
    }
    if let Some(health) = inputs.activity {
        let lost = health.dropped + health.failed;
        let message = match (&health.problem, lost) {
            (_, 0) => None,
            (Some(problem), lost) => {
                Some(format!("{lost} activity record(s) were lost: {problem}"))
            }
            (None, lost) => Some(format!(
                "{lost} activity record(s) were lost: the log could not keep up"
            )),
        };
        if let Some(message) = message {
            list.push(Attention {
                kind: Kind::Activity,
                subject: None,
                message,
                action: Action {
                    label: "Open the activity log".to_owned(),
                    post: None,
                    page: "#/activity".to_owned(),
                },
            });
        }
    }
    list
}

/// The list as it stands now for this hub, its engine's backends, this config and the editors
/// that use them.
pub fn now(
    hub: &Hub,
    engine: &Engine,
    config: &ConfigState,
    in_use: &EditorsInUse,
) -> Vec<Attention> {
    let statuses: Vec<BackendStatus> = engine
        .backends()
        .iter()
        .map(|backend| backend.status())
        .collect();
    list(&Inputs {
        statuses: &statuses,
        config,
        pins: &hub.pins().report(),
        budgets: &hub.budgets(),
        in_use: &in_use.now(),
        activity: hub.activity().map(ActivityLog::health).as_ref(),
    })
}

/// The tray's first line for this list, or `None` when nothing needs attention.
pub fn summary(list: &[Attention]) -> Option<String> {
    let first = list.first()?;
    Some(match list.len() {
        1 => format!("Needs attention: {}", first.message),
        n => format!("{n} things need attention: {}, …", first.message),
    })
}

/// `name` as one segment of a path: letters, digits and `-._~` as they are, the rest escaped.
fn url_segment(name: &str) -> String {
    name.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (byte as char).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use hub::pins::Definition;
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;
    use hub::pins::Held;

    fn status(name: &str, state: BackendState) -> BackendStatus {
        let mut status = BackendStatus::new(name);
        status.state = state;
        status
    }

    /// A config of this version: `/mcp` requires its token.
    fn config() -> ConfigState {
        config_of("[endpoint]\nrequire_token = true\n")
    }

    fn config_of(text: &str) -> ConfigState {
        let path = std::path::Path::new("config.toml");
        ConfigState::loaded(&config::parse(path, text).expect("a valid config"))
    }

    #[test]
    fn every_kind_is_listed_with_its_action_most_pressing_first() {
        let mut crashing = status("files", BackendState::CrashLoop);
        crashing.last_error = Some("exited with code 1".to_owned());
        let statuses = [
            status("ok", BackendState::Ready),
            crashing,
            status("linear", BackendState::NeedsSignIn),
        ];
        let held = |server: &str, name: &str, reason| Held {
            server: server.to_owned(),
            kind: PinnedKind::Tool,
            name: name.to_owned(),
            key: name.to_owned(),
            reason,
            detail: None,
            pinned: None,
            current: Definition::new(
                serde_json::value::to_raw_value(&json!({"name": name})).expect("JSON"),
            ),
            sha256: String::new(),
        };
        let pins = PinReport {
            held: vec![
                held("git", "commit", HeldReason::Changed),
                held("git", "push", HeldReason::New),
                held("broken", "a", HeldReason::Unreadable),
            ],
            problems: BTreeMap::from([(
                "broken".to_owned(),
                "the tool pins … are not valid".to_owned(),
            )]),
        };
        let health = LogHealth {
            dropped: 3,
            ..LogHealth::default()
        };
        let list = list(&Inputs {
            statuses: &statuses,
            config: &config(),
            pins: &pins,
            budgets: &[],
            in_use: &[],
            activity: Some(&health),
        });
        let kinds: Vec<Kind> = list.iter().map(|entry| entry.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::CrashLoop,
                Kind::NeedsSignIn,
                Kind::HeldTools,
                Kind::PinStore,
                Kind::Activity
            ]
        );
        assert_eq!(list[0].message, "files keeps crashing: exited with code 1");
        assert_eq!(
            list[0].action.post.as_deref(),
            Some("/api/backends/files/restart")
        );
        assert_eq!(
            list[1].action.post.as_deref(),
            Some("/api/backends/linear/sign-in")
        );
        assert_eq!(
            list[2].message,
            "2 tool(s) of git changed since approved, held back from editors: commit, push"
        );
        assert_eq!(list[3].message, "the tool pins … are not valid");
        assert_eq!(
            list[4].message,
            "3 activity record(s) were lost: the log could not keep up"
        );
        assert_eq!(
            summary(&list).as_deref(),
            Some("5 things need attention: files keeps crashing: exited with code 1, …")
        );
    }

    #[test]
    fn a_clients_limit_is_told_only_for_an_editor_that_uses_that_profile() {
        use hub::budget::ClientWarning;
        let warning = |client, older_versions, message: &str| ClientWarning {
            client,
            older_versions,
            message: message.to_owned(),
        };
        let budget = |profile: &str| Budget {
            profile: profile.to_owned(),
            tools: 90,
            bytes: 0,
            tokens: 0,
            servers: Vec::new(),
            tool_costs: Vec::new(),
            warnings: vec!["names alike".to_owned()],
            client_warnings: vec![
                warning("cursor", true, "over old Cursor"),
                warning("windsurf", false, "over Windsurf"),
                warning("cursor", false, "over Cursor"),
            ],
            unmatched: Vec::new(),
            server_switches: Vec::new(),
            filtered_out: Vec::new(),
        };
        let told = |in_use: &[InUse]| -> Vec<String> {
            list(&Inputs {
                statuses: &[],
                config: &config(),
                pins: &PinReport::default(),
                budgets: &[budget("default"), budget("work")],
                in_use,
                activity: None,
            })
            .into_iter()
            .map(|attention| attention.message)
            .collect()
        };
        assert_eq!(
            told(&[]),
            ["profile default: names alike", "profile work: names alike"],
            "no editor uses Switchboard: no client's limit"
        );
        let cursor_on_work = InUse {
            editor: editors::Editor::Cursor,
            profile: "work".to_owned(),
        };
        assert_eq!(
            told(&[cursor_on_work]),
            [
                "profile default: names alike",
                "profile work: names alike",
                "profile work: over Cursor",
            ],
            "Cursor's own limit on the profile it reaches; not an older version's, nor Windsurf's"
        );
    }

    #[test]
    fn nothing_to_say_is_an_empty_list() {
        let list = list(&Inputs {
            statuses: &[status("ok", BackendState::Ready)],
            config: &config(),
            pins: &PinReport::default(),
            budgets: &[],
            in_use: &[],
            activity: Some(&LogHealth::default()),
        });
        assert!(list.is_empty());
        assert_eq!(summary(&list), None);
    }

    #[test]
    fn a_config_from_before_the_token_is_told_to_require_one() {
        let told = list(&Inputs {
            statuses: &[status("ok", BackendState::Ready)],
            config: &config_of(""),
            pins: &PinReport::default(),
            budgets: &[],
            in_use: &[],
            activity: None,
        });
        assert_eq!(told.len(), 1);
        assert_eq!(told[0].kind, Kind::OpenEndpoint);
        assert_eq!(
            told[0].message,
            "/mcp takes requests from any program on this machine"
        );
        assert_eq!(
            told[0].action.post.as_deref(),
            Some("/api/endpoint/require-token")
        );
        for chosen in [
            "[endpoint]\nrequire_token = false\n",
            "[endpoint]\ntoken = \"own-token\"\n",
        ] {
            let quiet = list(&Inputs {
                statuses: &[],
                config: &config_of(chosen),
                pins: &PinReport::default(),
                budgets: &[],
                in_use: &[],
                activity: None,
            });
            assert!(quiet.is_empty(), "a choice is not told again: {chosen}");
        }
    }

    #[test]
    fn odd_server_names_are_escaped_in_paths() {
        assert_eq!(url_segment("a b/c"), "a%20b%2Fc");
    }
}
