//! Calls that wait for a person's yes (the `confirm` settings of profiles and servers, worked out
//! per tool in `catalog::confirmed`). Each waits here, listed for the dashboard and the desktop app
//! (`GET /api/approvals`), until a person allows or denies it (`POST /api/approvals/{id}`), its
//! editor gives it up (it leaves the list), or its time runs out, which is a no. The person is
//! shown the arguments as the exact JSON text the server will receive. "Allow for this session"
//! lets the same tool of the same server, as it is pinned, run in the same session without
//! asking again. After a yes the call runs only if its tool still goes where it went when it was
//! asked: the same server, its run and config unchanged, the same pinned definition.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::json;
use tokio::sync::watch;

use super::HubInner;
use super::pins::PinnedKind;
use super::session::{Allowance, Session};
use super::waitlist::{Unanswered, Waitlist};
use config::BackendConfig;
use platform::clock::unix_millis;
use supervisor::BackendHandle;
use supervisor::status::{BackendState, BackendStatus};

/// One call waiting for a yes, as the person is shown it.
#[derive(Debug, Clone, Serialize)]
pub struct Asked {
    pub id: u64,
    pub server: String,
    /// The tool's name as editors call it.
    pub tool: String,
    /// The server's own name for it.
    pub own: String,
    pub profile: String,
    /// The editor's name, as its `clientInfo` says.
    pub editor: Option<String>,
    /// The call's arguments as the exact JSON text its server will receive, never re-rendered
    /// (so `1e400` and integers beyond 2^53 read as sent); `None` when the call has none.
    pub arguments_text: Option<String>,
    /// Whether "Allow for this session" outlasts this call: not for an editor of 2026-07-28,
    /// whose every request is a session of its own.
    pub session_lasts: bool,
    /// When it was asked, and when no answer becomes a no (Unix milliseconds).
    pub asked_at: u64,
    pub deadline: u64,
}

/// A person's answer, and who gave it (`"the dashboard"`, `"the desktop app"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow { for_session: bool, by: String },
    Deny { by: String },
}

impl std::fmt::Display for Decision {
    /// `allowed by the dashboard`, `allowed for the session by …`, `denied by …`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Decision::Allow {
                for_session: false,
                by,
            } => write!(f, "allowed by {by}"),
            Decision::Allow {
                for_session: true,
                by,
            } => write!(f, "allowed for the session by {by}"),
            Decision::Deny { by } => write!(f, "denied by {by}"),
        }
    }
}

/// How a call's wait for a person's yes was resolved: allowed, or denied (by a person, by time
/// running out, or by Switchboard stopping).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resolution {
    Allowed {
        for_session: bool,
        by: String,
    },
    /// Why, in words for the editor (and through it the model) and the activity log.
    Denied(String),
}

/// The call is not waiting (any more): decided already, given up by its editor, or timed out.
#[derive(Debug)]
pub struct NotWaiting;

/// The calls waiting for a person's yes.
#[derive(Default)]
pub struct Approvals(Waitlist<Asked, Decision>);

impl Approvals {
    /// Waits for a person's answer to `asked` (its `id`, `asked_at` and `deadline` are set here),
    /// at most `timeout`. Dropping the future takes the call off the list.
    pub(crate) async fn ask(&self, asked: Asked, timeout: Duration) -> Resolution {
        let now = unix_millis(SystemTime::now());
        tracing::info!(server = %asked.server, tool = %asked.tool, "a call waits for a person's yes");
        let listed = |id| Asked {
            id,
            asked_at: now,
            deadline: now + u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            ..asked
        };
        match self.0.wait(listed, timeout).await {
            Ok(Decision::Allow { for_session, by }) => Resolution::Allowed { for_session, by },
            Ok(Decision::Deny { by }) => Resolution::Denied(format!("{by} denied this call")),
            Err(Unanswered::Stopped) => {
                Resolution::Denied("Switchboard stopped before anyone answered".to_owned())
            }
            Err(Unanswered::TimedOut) => Resolution::Denied(format!(
                "nobody allowed this call within {} s, so it was denied",
                timeout.as_secs()
            )),
        }
    }

    /// The calls waiting, oldest first.
    pub fn waiting(&self) -> Vec<Asked> {
        self.0.waiting()
    }

    /// Answers call `id`.
    pub fn decide(&self, id: u64, decision: Decision) -> Result<(), NotWaiting> {
        tracing::info!(id, %decision, "a person answered a call that waited");
        self.0
            .answer(id, |_| Ok::<_, std::convert::Infallible>(decision))
            .map_err(|_| NotWaiting)
    }

    /// Told whenever the calls waiting change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.0.subscribe()
    }
}

/// A call that waits for a yes: what the person is shown, how long it waits, and what its tool
/// went to when it was asked.
pub(super) struct Asking {
    pub(super) asked: Asked,
    pub(super) timeout: Duration,
    allowance: Allowance,
    /// The server's config when asked.
    config: Arc<BackendConfig>,
    /// The server's run when asked, if one was ready.
    run: Option<Run>,
}

/// One run of a server: a process (or a remote link) from when it became ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    pid: Option<u32>,
    ready_since_ms: u64,
}

impl Run {
    fn of(status: &BackendStatus) -> Option<Run> {
        match status.state {
            BackendState::Ready => Some(Run {
                pid: status.pid,
                ready_since_ms: status.ready_since_ms?,
            }),
            _ => None,
        }
    }
}

/// Why a call a person allowed did not run: its tool is not what they were asked about any more.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum Changed {
    #[error("{tool} is no longer offered")]
    Gone { tool: String },
    #[error("{tool} is now {own} of {server}, not the tool of {asked} you were asked about")]
    Rerouted {
        tool: String,
        own: String,
        server: String,
        asked: String,
    },
    #[error("{server} was reconfigured or removed while the call waited")]
    Reconfigured { server: String },
    #[error("{server} restarted or stopped while the call waited")]
    Restarted { server: String },
    #[error(
        "the definition of {own} of {server} changed, or is held for review, while the call waited"
    )]
    Repinned { own: String, server: String },
}

impl Asking {
    /// A call of the tool `own` of `backend` that waits for a yes.
    pub(super) fn new(
        hub: &HubInner,
        backend: &BackendHandle,
        own: &str,
        asked: Asked,
        timeout: Duration,
    ) -> Asking {
        Asking {
            allowance: Allowance {
                backend: backend.shared_name(),
                own: Arc::from(own),
                pin: hub.pins.offered_pin(backend.name(), PinnedKind::Tool, own),
            },
            config: backend.config(),
            run: Run::of(&backend.status()),
            asked,
            timeout,
        }
    }

    /// Whether the call's tool (in `profile`, by its exposed name) still goes where it went when
    /// the person was asked: the same tool of the same backend, whose config and run are the
    /// same, and whose pinned definition is the same and not held.
    fn unchanged(
        &self,
        hub: &HubInner,
        profile: &str,
        backend: &BackendHandle,
    ) -> Result<(), Changed> {
        let tool = &self.asked.tool;
        let server = || self.allowance.backend.to_string();
        let catalog = hub.catalog(profile);
        let route = catalog
            .tools
            .get(tool)
            .or_else(|| catalog.unlisted_tools.get(tool))
            .ok_or_else(|| Changed::Gone { tool: tool.clone() })?;
        if route.backend != self.allowance.backend || route.name != self.allowance.own {
            return Err(Changed::Rerouted {
                tool: tool.clone(),
                own: route.name.to_string(),
                server: route.backend.to_string(),
                asked: server(),
            });
        }
        let now = hub.engine.backend(backend.name());
        if !now.is_some_and(|now| now.same_backend(backend) && *now.config() == *self.config) {
            return Err(Changed::Reconfigured { server: server() });
        }
        if self
            .run
            .is_some_and(|run| Run::of(&backend.status()) != Some(run))
        {
            return Err(Changed::Restarted { server: server() });
        }
        let pin = hub
            .pins
            .offered_pin(backend.name(), PinnedKind::Tool, &self.allowance.own);
        if pin != self.allowance.pin {
            return Err(Changed::Repinned {
                own: self.allowance.own.to_string(),
                server: server(),
            });
        }
        Ok(())
    }
}

/// How a wait for a person's yes ended.
pub(super) struct Waited {
    /// Who decided and after how long, in words, for the activity log.
    pub(super) decision: String,
    /// The tool error its editor gets when the call may not run.
    pub(super) denied: Option<String>,
}

/// Waits for a person's yes to a call of `backend`, unless they allowed its tool for the
/// session already; after a yes, the call may run only if its tool is [unchanged].
///
/// [unchanged]: Asking::unchanged
pub(super) async fn wait_for_yes(
    hub: &HubInner,
    session: &Session,
    asking: &Asking,
    backend: &BackendHandle,
) -> Waited {
    let asked = &asking.asked;
    if session.lock_state().allowed.contains(&asking.allowance) {
        return Waited {
            decision: "allowed for this session earlier".to_owned(),
            denied: None,
        };
    }
    let started = Instant::now();
    let resolution = hub.approvals.ask(asked.clone(), asking.timeout).await;
    let after = format!("after {:.1} s", started.elapsed().as_secs_f64());
    let denied = |why: &str| {
        let text = format!("{} did not run: {why}.", asked.tool);
        json!({ "content": [{ "type": "text", "text": text }], "isError": true }).to_string()
    };
    match resolution {
        Resolution::Allowed { for_session, by } => {
            let scope = if for_session { " for this session" } else { "" };
            if let Err(changed) = asking.unchanged(hub, session.profile(), backend) {
                tracing::warn!(tool = %asked.tool, %changed, "an allowed call did not run");
                let why = format!(
                    "{by} allowed it, but {changed}; nothing was sent, and calling it again asks anew"
                );
                return Waited {
                    decision: format!("allowed{scope} by {by} {after}, but {changed}"),
                    denied: Some(denied(&why)),
                };
            }
            if for_session {
                session
                    .lock_state()
                    .allowed
                    .insert(asking.allowance.clone());
            }
            Waited {
                decision: format!("allowed{scope} by {by} {after}"),
                denied: None,
            }
        }
        Resolution::Denied(why) => Waited {
            decision: format!("{why} ({after})"),
            denied: Some(denied(&why)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(tool: &str) -> Asked {
        Asked {
            id: 0,
            server: "git".to_owned(),
            tool: format!("git__{tool}"),
            own: tool.to_owned(),
            profile: "default".to_owned(),
            editor: Some("editor".to_owned()),
            arguments_text: None,
            session_lasts: true,
            asked_at: 0,
            deadline: 0,
        }
    }

    #[tokio::test]
    async fn a_waiting_call_is_listed_until_answered_and_an_answer_counts_once() {
        let approvals = Approvals::default();
        let mut changes = approvals.subscribe();
        let wait = approvals.ask(asked("push"), Duration::from_secs(60));
        let decide = async {
            changes.changed().await.expect("told");
            let waiting = approvals.waiting();
            assert_eq!(waiting.len(), 1);
            assert_eq!(waiting[0].tool, "git__push");
            assert_eq!(waiting[0].deadline - waiting[0].asked_at, 60_000);
            let id = waiting[0].id;
            let allow = Decision::Allow {
                for_session: true,
                by: "the dashboard".to_owned(),
            };
            approvals.decide(id, allow).expect("waiting");
            let again = Decision::Deny {
                by: "the dashboard".to_owned(),
            };
            assert!(approvals.decide(id, again).is_err(), "answered twice");
        };
        let (resolution, ()) = tokio::join!(wait, decide);
        assert_eq!(
            resolution,
            Resolution::Allowed {
                for_session: true,
                by: "the dashboard".to_owned()
            }
        );
        assert!(approvals.waiting().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn no_answer_in_time_is_a_no_and_a_call_given_up_leaves_the_list() {
        let approvals = Approvals::default();
        let resolution = approvals.ask(asked("push"), Duration::from_secs(5)).await;
        assert_eq!(
            resolution,
            Resolution::Denied("nobody allowed this call within 5 s, so it was denied".to_owned())
        );
        assert!(approvals.waiting().is_empty());

        let given_up = tokio::time::timeout(
            Duration::from_secs(1),
            approvals.ask(asked("delete"), Duration::from_secs(60)),
        )
        .await;
        assert!(given_up.is_err());
        assert!(approvals.waiting().is_empty(), "its editor gave it up");
        let late = Decision::Allow {
            for_session: false,
            by: "the dashboard".to_owned(),
        };
        assert!(approvals.decide(2, late).is_err());
    }
}
