//! What waits for the person: a call that needs their yes, or a server's question their editor
//! cannot ask. Each new one is announced with a desktop notification and brings up the window,
//! whose dashboard shows it over every page with its answers (Allow, Allow for this session and
//! Deny; a form, or a page to open). The notification says what waits; the answer is given in
//! the window, where the arguments, the form or the page's site can be seen first.

use std::collections::HashSet;

use hub::Hub;
use hub::approvals::Asked;
use hub::questions::{Asks, Question};
use tauri::AppHandle;

use crate::actions;
use crate::menu::{Notice, shorten};
use crate::tray::notify_now;

/// Announces what comes to wait for the person until the hub stops.
pub async fn follow(app: AppHandle, hub: Hub) {
    let mut approvals = hub.approvals().subscribe();
    let mut questions = hub.questions().subscribe();
    let (mut seen_approvals, mut seen_questions) = (HashSet::new(), HashSet::new());
    loop {
        let asked = hub.approvals().waiting();
        let ids: Vec<u64> = asked.iter().map(|asked| asked.id).collect();
        let mut notices: Vec<Notice> = newly_waiting(&mut seen_approvals, &ids)
            .into_iter()
            .filter_map(|id| asked.iter().find(|asked| asked.id == id))
            .map(approval_notice)
            .collect();
        let waiting = hub.questions().waiting();
        let ids: Vec<u64> = waiting.iter().map(|question| question.id).collect();
        notices.extend(
            newly_waiting(&mut seen_questions, &ids)
                .into_iter()
                .filter_map(|id| waiting.iter().find(|question| question.id == id))
                .map(question_notice),
        );
        if !notices.is_empty() {
            for notice in &notices {
                notify_now(&app, notice);
            }
            if let Err(error) = actions::show_window(&app) {
                tracing::warn!(%error, "cannot show the window for what waits for an answer");
            }
        }
        let changed = tokio::select! {
            changed = approvals.changed() => changed,
            changed = questions.changed() => changed,
        };
        if changed.is_err() {
            return;
        }
    }
}

/// The notification for a call that waits for the person's yes.
pub fn approval_notice(asked: &Asked) -> Notice {
    let who = asked.editor.as_deref().unwrap_or("An editor");
    let seconds = asked.deadline.saturating_sub(asked.asked_at) / 1000;
    Notice {
        summary: format!("Switchboard: {who} wants to run {}", asked.tool),
        body: format!(
            "{} of {} waits for your yes: Allow or Deny it in Switchboard's window. Without an \
             answer within {seconds} s it is denied.",
            asked.own, asked.server
        ),
    }
}

/// The notification for a server's question the person answers through Switchboard.
pub fn question_notice(question: &Question) -> Notice {
    let how = match &question.asks {
        Asks::Form { .. } => "Answer it in Switchboard's window.".to_owned(),
        Asks::Url { host, .. } => {
            format!("It asks you to open a page on {host}: see Switchboard's window first.")
        }
    };
    Notice {
        summary: format!("Switchboard: {} asks you something", question.server),
        body: format!("{} {how}", shorten(&question.message)),
    }
}

/// The ids in `current` not in `seen`, which becomes `current`'s: what is new since last time.
fn newly_waiting(seen: &mut HashSet<u64>, current: &[u64]) -> Vec<u64> {
    let new = current
        .iter()
        .copied()
        .filter(|id| !seen.contains(id))
        .collect();
    *seen = current.iter().copied().collect();
    new
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_is_new_is_announced_and_an_answered_id_is_forgotten() {
        let mut seen = HashSet::new();
        assert_eq!(newly_waiting(&mut seen, &[1, 2]), [1, 2]);
        assert_eq!(newly_waiting(&mut seen, &[1, 2, 3]), [3]);
        assert_eq!(newly_waiting(&mut seen, &[3]), Vec::<u64>::new());
        assert_eq!(newly_waiting(&mut seen, &[]), Vec::<u64>::new());
        assert_eq!(newly_waiting(&mut seen, &[4]), [4]);
    }

    #[test]
    fn a_notice_says_who_asks_what_and_where_to_answer() {
        let asked = Asked {
            id: 1,
            server: "git".to_owned(),
            tool: "git__push".to_owned(),
            own: "push".to_owned(),
            profile: "default".to_owned(),
            editor: Some("Claude".to_owned()),
            arguments_text: None,
            session_lasts: true,
            asked_at: 1_000,
            deadline: 61_000,
        };
        let notice = approval_notice(&asked);
        assert_eq!(notice.summary, "Switchboard: Claude wants to run git__push");
        assert!(
            notice.body.contains("push of git waits for your yes"),
            "{}",
            notice.body
        );
        assert!(
            notice.body.contains("within 60 s it is denied"),
            "{}",
            notice.body
        );

        let question = Question {
            id: 2,
            server: "shop".to_owned(),
            editors: Vec::new(),
            profile: None,
            message: "Pay for the pro plan\nwith your card".to_owned(),
            asks: Asks::Url {
                url: "https://pay.example.com/".to_owned(),
                host: "pay.example.com".to_owned(),
                warning: None,
            },
            asked_at: 0,
            deadline: 0,
        };
        let notice = question_notice(&question);
        assert_eq!(notice.summary, "Switchboard: shop asks you something");
        assert_eq!(
            notice.body,
            "Pay for the pro plan It asks you to open a page on pay.example.com: see \
             Switchboard's window first."
        );
    }
}
