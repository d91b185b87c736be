//! Calls that wait for a person's yes (the `confirm` settings of profiles and servers, worked out
//! per tool in `catalog::confirmed`). Each waits here, listed for the dashboard and the desktop app
//! (`GET /api/approvals`), until a person allows or denies it (`POST /api/approvals/{id}`), its
//! editor gives it up (it leaves the list), or its time runs out, which is a no. "Allow for this
//! session" lets the same tool run in the same session without asking again.

use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::json;
use serde_json::value::RawValue;
use tokio::sync::watch;

use super::HubInner;
use super::session::Session;
use super::waitlist::{Unanswered, Waitlist};
use crate::clock::unix_millis;

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
    /// The call's arguments, as the editor sent them.
    pub arguments: Option<Box<RawValue>>,
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

/// How a wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
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
    pub async fn ask(&self, asked: Asked, timeout: Duration) -> Outcome {
        let now = unix_millis(SystemTime::now());
        tracing::info!(server = %asked.server, tool = %asked.tool, "a call waits for a person's yes");
        let listed = |id| Asked {
            id,
            asked_at: now,
            deadline: now + u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            ..asked
        };
        match self.0.wait(listed, timeout).await {
            Ok(Decision::Allow { for_session, by }) => Outcome::Allowed { for_session, by },
            Ok(Decision::Deny { by }) => Outcome::Denied(format!("{by} denied this call")),
            Err(Unanswered::Stopped) => {
                Outcome::Denied("Switchboard stopped before anyone answered".to_owned())
            }
            Err(Unanswered::TimedOut) => Outcome::Denied(format!(
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
        tracing::info!(id, ?decision, "a person answered a call that waited");
        self.0
            .answer(id, |_| Ok::<_, std::convert::Infallible>(decision))
            .map_err(|_| NotWaiting)
    }

    /// Told whenever the calls waiting change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.0.subscribe()
    }
}

/// How a wait for a person's yes ended.
pub(super) struct Waited {
    /// Who decided and after how long, in words, for the activity log.
    pub(super) decision: String,
    /// The tool error its editor gets when the call may not run.
    pub(super) denied: Option<String>,
}

/// Waits for a person's yes to a call, unless they allowed its tool for the session already.
pub(super) async fn wait_for_yes(
    hub: &HubInner,
    session: &Session,
    asked: &Asked,
    timeout: Duration,
) -> Waited {
    if session.lock_state().allowed.contains(&asked.tool) {
        return Waited {
            decision: "allowed for this session earlier".to_owned(),
            denied: None,
        };
    }
    let started = Instant::now();
    let outcome = hub.approvals.ask(asked.clone(), timeout).await;
    let after = format!("after {:.1} s", started.elapsed().as_secs_f64());
    match outcome {
        Outcome::Allowed { for_session, by } => {
            if for_session {
                session.lock_state().allowed.insert(asked.tool.clone());
            }
            let scope = if for_session { " for this session" } else { "" };
            Waited {
                decision: format!("allowed{scope} by {by} {after}"),
                denied: None,
            }
        }
        Outcome::Denied(why) => {
            let text = format!("{} did not run: {why}.", asked.tool);
            let error = json!({ "content": [{ "type": "text", "text": text }], "isError": true });
            Waited {
                decision: format!("{why} ({after})"),
                denied: Some(error.to_string()),
            }
        }
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
            arguments: None,
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
        let (outcome, ()) = tokio::join!(wait, decide);
        assert_eq!(
            outcome,
            Outcome::Allowed {
                for_session: true,
                by: "the dashboard".to_owned()
            }
        );
        assert!(approvals.waiting().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn no_answer_in_time_is_a_no_and_a_call_given_up_leaves_the_list() {
        let approvals = Approvals::default();
        let outcome = approvals.ask(asked("push"), Duration::from_secs(5)).await;
        assert_eq!(
            outcome,
            Outcome::Denied("nobody allowed this call within 5 s, so it was denied".to_owned())
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
