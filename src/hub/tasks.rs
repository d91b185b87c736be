//! Tasks (MCP 2025-11-25): a `tools/call` with a `task` returns at once with a task id; the
//! client then polls `tasks/get`, fetches `tasks/result`, lists with `tasks/list` and stops one
//! with `tasks/cancel`, and backends report with `notifications/tasks/status`.
//!
//! Editors see task ids that carry their backend, `sb1.<backend>.<backend's own id>` (server
//! names are letters, digits, `_` and `-`), so every later call routes by its id alone, with no
//! table to keep, and still does after Switchboard restarts.

use serde_json::value::RawValue;

use super::rewrite::{ObjectEntries, json_string};

const PREFIX: &str = "sb1.";

/// The key of a result's `_meta` that names the task it belongs to.
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The id editors see for `backend`'s task `id`.
pub(super) fn exposed_id(backend: &str, id: &str) -> String {
    format!("{PREFIX}{backend}.{id}")
}

/// The backend and its own task id, from an id [`exposed_id`] made.
pub(super) fn backend_id(exposed: &str) -> Option<(&str, &str)> {
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

/// `object` with `key` (an object) replaced by what `change` makes of it, when it does.
fn change_object(
    object: &str,
    key: &str,
    change: impl FnOnce(&str) -> Option<String>,
) -> Option<String> {
    let mut entries = ObjectEntries::parse(object).ok()?;
    let inner = change(entries.get(key)?.get())?;
    entries.set(key, RawValue::from_string(inner).ok()?);
    Some(entries.to_json())
}

/// A backend's result with every task id in it exposed: a created task (`task.taskId`), a task
/// (`taskId`, from `tasks/get` and `tasks/cancel`), a list (`tasks[].taskId`) and the result of a
/// task (`_meta["io.modelcontextprotocol/related-task"].taskId`). Anything else is kept as sent.
pub(super) fn expose_ids(result: &str, backend: &str) -> String {
    let mut result = result.to_owned();
    if let Some(changed) = expose_field(&result, "taskId", backend) {
        result = changed;
    }
    if let Some(changed) = change_object(&result, "task", |task| {
        expose_field(task, "taskId", backend)
    }) {
        result = changed;
    }
    if let Some(changed) = change_object(&result, "_meta", |meta| {
        change_object(meta, RELATED_TASK, |related| {
            expose_field(related, "taskId", backend)
        })
    }) {
        result = changed;
    }
    if let Some(list) = ObjectEntries::parse(&result)
        .ok()
        .and_then(|entries| entries.get("tasks").map(|tasks| tasks.get().to_owned()))
        && let Ok(tasks) = serde_json::from_str::<Vec<&RawValue>>(&list)
    {
        let exposed: Vec<String> = tasks
            .iter()
            .map(|task| {
                expose_field(task.get(), "taskId", backend).unwrap_or_else(|| task.get().to_owned())
            })
            .collect();
        let array = format!("[{}]", exposed.join(","));
        if let Some(changed) = change_object(&result, "tasks", |_| Some(array)) {
            result = changed;
        }
    }
    result
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
