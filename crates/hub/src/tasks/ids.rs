//! Tasks (MCP 2025-11-25): a `tools/call` with a `task` returns at once with a task id; the
//! client then polls `tasks/get`, fetches `tasks/result`, lists with `tasks/list` and stops one
//! with `tasks/cancel`, and backends report with `notifications/tasks/status`.
//!
//! Editors see task ids that carry their backend and are sealed to their owner:
//! `sb1.<backend>.<backend's own id>.<seal>` (server names are letters, digits, `_` and `-`; the
//! seal is URL-safe base64, with no dot). The seal is HMAC-SHA256, cut to 128 bits, under a key
//! drawn at random when the hub starts, over the owner, the backend and the backend's own id.
//! So a later call routes by its id alone, with no table to keep, and an id works for its owner
//! only: for anyone else, as for a guessed or altered id or one from before Switchboard
//! restarted, it is an unknown task, with the same error as a task that never was.
//!
//! Who owns a task ([`TaskOwner`]):
//! - In the session era, the session that made it. All sessions share one connection to each
//!   backend, and so its task space; the seal keeps them apart. A session also keeps the tasks
//!   it made ([`MadeTasks`]): `tasks/list` and a backend's status notifications name tasks by the
//!   backend's own ids, which a seal cannot sort.
//! - In 2026-07-28 there is no session to own anything: each request is one of its own, and
//!   nothing a request carries says who sent it (`clientInfo` is whatever the editor writes, and
//!   every editor holds the same `/mcp` token). What an editor carries from one request to the
//!   next is the id it was handed, so that id is the capability, as a `requestState` is: sealed
//!   to the profile the request was sent to, unguessable, and listed to no one (2026-07-28 has no
//!   `tasks/list`, and a session's list shows its own tasks only). An editor that gives its id
//!   away gives the task with it; no other editor can come by it.
//!
//! Either way a task of a server its owner's profile does not offer (any more) is unknown.

use std::collections::{HashSet, VecDeque};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::value::RawValue;
use sha2::Sha256;

use crate::rewrite::{ObjectEntries, json_string};
use wire::jsonrpc::{self, ErrorObject};
use wire::meta::RELATED_TASK;

const PREFIX: &str = "sb1.";

/// How many bytes of the HMAC a seal keeps.
const SEAL_LEN: usize = 16;

/// How many tasks a session remembers making; the oldest are forgotten first (their ids still
/// work, but they leave its `tasks/list`).
const MAX_MADE_TASKS: usize = 1000;

/// Who a task id is sealed to (see the module's documentation).
#[derive(Clone, Copy)]
pub(crate) enum TaskOwner<'a> {
    /// A session of the session era, by its id.
    Session(&'a str),
    /// The 2026-07-28 editors of a profile, by its name.
    Profile(&'a str),
}

/// Seals task ids to their owners, and opens them, under one random key.
pub(crate) struct TaskSeal {
    key: [u8; 32],
}

impl TaskSeal {
    pub(crate) fn new() -> TaskSeal {
        TaskSeal {
            key: rand::random(),
        }
    }

    /// Exposes the ids of `backend`'s tasks to `owner`.
    pub(crate) fn exposer<'a>(&'a self, owner: TaskOwner<'a>, backend: &'a str) -> Exposer<'a> {
        Exposer {
            seal: self,
            owner,
            backend,
        }
    }

    /// The backend and its own task id, from an id sealed to `owner`; `None` for any other id.
    pub(crate) fn open<'e>(
        &self,
        owner: TaskOwner<'_>,
        exposed: &'e str,
    ) -> Option<(&'e str, &'e str)> {
        let (backend, rest) = exposed.strip_prefix(PREFIX)?.split_once('.')?;
        let (own, seal) = rest.rsplit_once('.')?;
        let seal = URL_SAFE_NO_PAD.decode(seal).ok()?;
        if backend.is_empty() || seal.len() != SEAL_LEN {
            return None;
        }
        self.mac(owner, backend, own)
            .verify_truncated_left(&seal)
            .ok()?;
        Some((backend, own))
    }

    fn mac(&self, owner: TaskOwner<'_>, backend: &str, own: &str) -> Hmac<Sha256> {
        let owner = match owner {
            TaskOwner::Session(id) => ("session", id),
            TaskOwner::Profile(name) => ("profile", name),
        };
        let sealed = serde_json::to_vec(&(owner.0, owner.1, backend, own))
            .expect("strings always serialize");
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes a key of any size");
        mac.update(&sealed);
        mac
    }
}

/// The error for a task id that is not its sender's, or names no task: one answer for both, so
/// that an id tells nothing of tasks that are not the sender's.
pub(crate) fn unknown_task(exposed: &str) -> ErrorObject {
    ErrorObject::new(
        jsonrpc::INVALID_PARAMS,
        format!("unknown task: {}", wire::echo(exposed)),
    )
}

/// The tasks a session made, by backend and the backend's own id: what its `tasks/list` shows
/// and its backends' status notifications about tasks reach. At most [`MAX_MADE_TASKS`], the
/// oldest forgotten first.
#[derive(Default)]
pub(crate) struct MadeTasks {
    /// Each as `backend.own` (a backend's name has no dot).
    known: HashSet<String>,
    order: VecDeque<String>,
}

impl MadeTasks {
    pub(crate) fn insert(&mut self, backend: &str, own: &str) {
        let key = format!("{backend}.{own}");
        if !self.known.insert(key.clone()) {
            return;
        }
        self.order.push_back(key);
        if self.order.len() > MAX_MADE_TASKS
            && let Some(oldest) = self.order.pop_front()
        {
            self.known.remove(&oldest);
        }
    }

    pub(crate) fn contains(&self, backend: &str, own: &str) -> bool {
        self.known.contains(&format!("{backend}.{own}"))
    }
}

/// Exposes the ids of one backend's tasks to one owner.
pub(crate) struct Exposer<'a> {
    seal: &'a TaskSeal,
    owner: TaskOwner<'a>,
    backend: &'a str,
}

impl Exposer<'_> {
    /// The backend whose tasks these are.
    pub(crate) fn backend(&self) -> &str {
        self.backend
    }

    /// The id the owner sees for the backend's task `own`.
    pub(crate) fn id(&self, own: &str) -> String {
        let tag = self.seal.mac(self.owner, self.backend, own).finalize();
        let seal = URL_SAFE_NO_PAD.encode(&tag.into_bytes()[..SEAL_LEN]);
        format!("{PREFIX}{}.{own}.{seal}", self.backend)
    }

    /// `object` with its string field `key` made an exposed id; `None` when there is no such
    /// field (or `object` is no object).
    fn expose_field(&self, object: &str, key: &str) -> Option<String> {
        let mut entries = ObjectEntries::parse(object).ok()?;
        let id = entries.get_str(key)?;
        let exposed = json_string(&self.id(&id));
        entries.set(key, exposed);
        Some(entries.to_json())
    }

    /// Of a `tasks` array, the tasks in `made`, each with its id exposed; `None` when it is no
    /// array.
    pub(crate) fn made_list(&self, tasks: &str, made: &MadeTasks) -> Option<Vec<String>> {
        let tasks: Vec<&RawValue> = serde_json::from_str(tasks).ok()?;
        Some(
            tasks
                .iter()
                .filter(|task| {
                    ObjectEntries::parse(task.get())
                        .ok()
                        .and_then(|task| task.get_str("taskId"))
                        .is_some_and(|own| made.contains(self.backend, &own))
                })
                .filter_map(|task| self.expose_field(task.get(), "taskId"))
                .collect(),
        )
    }

    /// A backend's result with every task id in it exposed: a created task (`task.taskId`), a
    /// task (`taskId`, from `tasks/get` and `tasks/cancel`) and the result of a task
    /// (`_meta["io.modelcontextprotocol/related-task"].taskId`). Anything else is kept as sent.
    pub(crate) fn expose_ids(&self, result: &str) -> String {
        let Ok(mut entries) = ObjectEntries::parse(result) else {
            return result.to_owned();
        };
        let inner = |key: &str| entries.get(key).map(|inner| inner.get().to_owned());
        let changed = [
            (
                "task",
                inner("task").and_then(|task| self.expose_field(&task, "taskId")),
            ),
            (
                "_meta",
                inner("_meta").and_then(|meta| {
                    let mut meta = ObjectEntries::parse(&meta).ok()?;
                    let related = meta.get(RELATED_TASK)?.get().to_owned();
                    let related = self.expose_field(&related, "taskId")?;
                    meta.set(RELATED_TASK, RawValue::from_string(related).ok()?);
                    Some(meta.to_json())
                }),
            ),
        ];
        if let Some(id) = entries.get_str("taskId") {
            let exposed = json_string(&self.id(&id));
            entries.set("taskId", exposed);
        }
        for (key, value) in changed {
            if let Some(value) = value.and_then(|value| RawValue::from_string(value).ok()) {
                entries.set(key, value);
            }
        }
        entries.to_json()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn ids_carry_their_backend_and_open_for_their_owner_only() {
        let seal = TaskSeal::new();
        let mine = TaskOwner::Session("s1");
        let exposed = seal.exposer(mine, "everything").id("a.b-c");
        assert!(exposed.starts_with("sb1.everything.a.b-c."), "{exposed}");
        assert_eq!(seal.open(mine, &exposed), Some(("everything", "a.b-c")));
        assert_eq!(
            seal.exposer(mine, "everything").id("a.b-c"),
            exposed,
            "the same task is the same id each time"
        );

        for other in [
            TaskOwner::Session("s2"),
            TaskOwner::Profile("s1"),
            TaskOwner::Profile("default"),
        ] {
            assert_eq!(seal.open(other, &exposed), None);
        }
        assert_eq!(TaskSeal::new().open(mine, &exposed), None, "another run");
        let (sealed, tag) = exposed.rsplit_once('.').expect("a seal");
        let moved = exposed.replace("sb1.everything.", "sb1.other.");
        let renamed = format!("{}d.{tag}", &sealed[..sealed.len() - 1]);
        for altered in [moved.as_str(), renamed.as_str(), sealed] {
            assert_eq!(seal.open(mine, altered), None, "{altered}");
        }
        for garbage in [
            "abc",
            "sb1.nodot",
            "sb1..x.AAAA",
            "sb1.everything.1",
            "sb1.a.b.!!",
        ] {
            assert_eq!(seal.open(mine, garbage), None, "{garbage}");
        }
    }

    #[test]
    fn a_list_shows_only_the_tasks_made() {
        let seal = TaskSeal::new();
        let owner = TaskOwner::Session("s1");
        let exposer = seal.exposer(owner, "b");
        let mut made = MadeTasks::default();
        made.insert("b", "3");
        made.insert("other", "4");
        let listed = exposer
            .made_list(r#"[{"taskId":"3"},{"taskId":"4"},{"taskId":5},{}]"#, &made)
            .expect("a list");
        assert_eq!(listed, [json!({"taskId": exposer.id("3")}).to_string()]);
        assert_eq!(exposer.made_list("{}", &made), None);

        for own in 0..=MAX_MADE_TASKS {
            made.insert("many", &own.to_string());
        }
        assert!(!made.contains("b", "3"), "the oldest is forgotten first");
        assert!(made.contains("many", "1") && made.contains("many", &MAX_MADE_TASKS.to_string()));
    }

    #[test]
    fn every_place_of_a_task_id_in_a_result_is_exposed() {
        let seal = TaskSeal::new();
        let exposer = seal.exposer(TaskOwner::Profile("default"), "b");
        let exposed = |result: Value| -> Value {
            serde_json::from_str(&exposer.expose_ids(&result.to_string())).expect("JSON")
        };
        assert_eq!(
            exposed(json!({"task": {"taskId": "1", "status": "working"}})),
            json!({"task": {"taskId": exposer.id("1"), "status": "working"}})
        );
        assert_eq!(
            exposed(json!({"taskId": "2", "status": "completed"})),
            json!({"taskId": exposer.id("2"), "status": "completed"})
        );
        assert_eq!(
            exposed(
                json!({"content": [], "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "5"}, "x": 1}})
            ),
            json!({"content": [], "_meta": {"io.modelcontextprotocol/related-task": {"taskId": exposer.id("5")}, "x": 1}})
        );
        let plain = json!({"content": [{"type": "text", "text": "taskId"}]});
        assert_eq!(exposed(plain.clone()), plain);
        let listed = json!({"tasks": [{"taskId": "3"}]});
        assert_eq!(
            exposed(listed.clone()),
            listed,
            "a list in a result names tasks no one was handed"
        );
    }
}
