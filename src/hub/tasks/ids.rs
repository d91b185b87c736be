//! Tasks (MCP 2025-11-25): a `tools/call` with a `task` returns at once with a task id; the
//! client then polls `tasks/get`, fetches `tasks/result`, lists with `tasks/list` and stops one
//! with `tasks/cancel`, and backends report with `notifications/tasks/status`.
//!
//! Editors see task ids that carry their backend, `sb1.<backend>.<backend's own id>` (server
//! names are letters, digits, `_` and `-`), so every later call routes by its id alone, with no
//! table to keep, and still does after Switchboard restarts.

use serde_json::value::RawValue;

use crate::hub::rewrite::{ObjectEntries, json_string};

const PREFIX: &str = "sb1.";

/// The key of a result's `_meta` that names the task it belongs to.
pub(in crate::hub) const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The id editors see for `backend`'s task `id`.
pub(in crate::hub) fn exposed_id(backend: &str, id: &str) -> String {
    format!("{PREFIX}{backend}.{id}")
}

/// The backend and its own task id, from an id [`exposed_id`] made.
pub(in crate::hub) fn backend_id(exposed: &str) -> Option<(&str, &str)> {
    let (backend, id) = exposed.strip_prefix(PREFIX)?.split_once('.')?;
    (!backend.is_empty()).then_some((backend, id))
}

/// `object` with its string field `key` made an exposed id of `backend`'s; `None` when there is
/// no such field (or `object` is no object).
fn expose_field(object: &str, key: &str, backend: &str) -> Option<String> {
    let mut entries = ObjectEntries::parse(object).ok()?;
    let id = entries.get_str(key)?;
    let exposed = json_string(&exposed_id(backend, &id));
    entries.set(key, exposed);
    Some(entries.to_json())
}

/// The tasks of a `tasks` array, each with its id exposed; `None` when it is no array.
pub(in crate::hub) fn exposed_list(tasks: &str, backend: &str) -> Option<Vec<String>> {
    let tasks: Vec<&RawValue> = serde_json::from_str(tasks).ok()?;
    Some(
        tasks
            .iter()
            .map(|task| {
                expose_field(task.get(), "taskId", backend).unwrap_or_else(|| task.get().to_owned())
            })
            .collect(),
    )
}

/// A backend's result with every task id in it exposed: a created task (`task.taskId`), a task
/// (`taskId`, from `tasks/get` and `tasks/cancel`), a list (`tasks[].taskId`) and the result of a
/// task (`_meta["io.modelcontextprotocol/related-task"].taskId`). Anything else is kept as sent.
pub(in crate::hub) fn expose_ids(result: &str, backend: &str) -> String {
    let Ok(mut entries) = ObjectEntries::parse(result) else {
        return result.to_owned();
    };
    let inner = |key: &str| entries.get(key).map(|inner| inner.get().to_owned());
    let changed = [
        (
            "task",
            inner("task").and_then(|task| expose_field(&task, "taskId", backend)),
        ),
        (
            "_meta",
            inner("_meta").and_then(|meta| {
                let mut meta = ObjectEntries::parse(&meta).ok()?;
                let related = meta.get(RELATED_TASK)?.get().to_owned();
                let related = expose_field(&related, "taskId", backend)?;
                meta.set(RELATED_TASK, RawValue::from_string(related).ok()?);
                Some(meta.to_json())
            }),
        ),
        (
            "tasks",
            inner("tasks")
                .and_then(|tasks| exposed_list(&tasks, backend))
                .map(|tasks| format!("[{}]", tasks.join(","))),
        ),
    ];
    if let Some(id) = entries.get_str("taskId") {
        let exposed = json_string(&exposed_id(backend, &id));
        entries.set("taskId", exposed);
    }
    for (key, value) in changed {
        if let Some(value) = value.and_then(|value| RawValue::from_string(value).ok()) {
            entries.set(key, value);
        }
    }
    entries.to_json()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn ids_carry_their_backend_both_ways() {
        let exposed = exposed_id("everything", "a.b-c");
        assert_eq!(exposed, "sb1.everything.a.b-c");
        assert_eq!(backend_id(&exposed), Some(("everything", "a.b-c")));
        assert_eq!(backend_id("abc"), None);
        assert_eq!(backend_id("sb1.nodot"), None);
        assert_eq!(backend_id("sb1..x"), None);
    }

    #[test]
    fn every_place_of_a_task_id_in_a_result_is_exposed() {
        let exposed = |result: Value| -> Value {
            serde_json::from_str(&expose_ids(&result.to_string(), "b")).expect("JSON")
        };
        assert_eq!(
            exposed(json!({"task": {"taskId": "1", "status": "working"}})),
            json!({"task": {"taskId": "sb1.b.1", "status": "working"}})
        );
        assert_eq!(
            exposed(json!({"taskId": "2", "status": "completed"})),
            json!({"taskId": "sb1.b.2", "status": "completed"})
        );
        assert_eq!(
            exposed(json!({"tasks": [{"taskId": "3"}, {"taskId": "4"}], "nextCursor": "c"})),
            json!({"tasks": [{"taskId": "sb1.b.3"}, {"taskId": "sb1.b.4"}], "nextCursor": "c"})
        );
        assert_eq!(
            exposed(
                json!({"content": [], "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "5"}, "x": 1}})
            ),
            json!({"content": [], "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "sb1.b.5"}, "x": 1}})
        );
        let plain = json!({"content": [{"type": "text", "text": "taskId"}]});
        assert_eq!(exposed(plain.clone()), plain);
    }
}
