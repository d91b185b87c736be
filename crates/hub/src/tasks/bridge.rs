//! Tasks across the two eras. A task of a session-era server (MCP 2025-11-25) and one of the
//! Tasks extension (2026-07-28) are one idea in two shapes, and an editor only ever sees the
//! shape it asked for:
//!
//! - A session-era server's tool that runs only as a task (`taskSupport: "required"`), called by
//!   an editor that holds no such task: Switchboard makes the task, waits on `tasks/result` and
//!   answers with the result ([`created_task`], [`without_related_task`]). The server's questions
//!   along the way reach the editor as in any call.
//! - The same tool called by a 2026-07-28 editor that declared the extension: the editor gets the
//!   extension's task handle ([`handle`]), and its `tasks/get`, `tasks/update` and `tasks/cancel`
//!   are translated ([`answer`]). A session-era server delivers a task's questions only while
//!   someone waits on `tasks/result`, so Switchboard waits on it in a session of its own and
//!   shows the questions in `tasks/get` as `inputRequests`; `tasks/update` answers them.
//! - A 2026-07-28 server's task for an editor of the session era is polled to its end by the call
//!   itself (`poll.rs`).
//!
//! Listen streams report tasks by polling [`detailed`], whatever the server's era.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use serde_json::value::RawValue;
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use super::ids::{Exposer, TaskOwner};
use crate::HubInner;
use crate::capabilities::ClientCapabilities;
use crate::reply::{Reply, invalid_params};
use crate::rewrite::{ObjectEntries, json_string};
use crate::session::Session;
use supervisor::BackendHandle;
use supervisor::rpc::ClientMeta;
use wire::jsonrpc::{self, ErrorObject};
use wire::meta::RELATED_TASK;
use wire::method::Method;

/// How long `tasks/get` waits for the first question of a task that needs input.
const QUESTION_WAIT: Duration = Duration::from_secs(2);

/// How many tasks may wait for an editor's input at once, across the hub.
const MAX_WAITING_TASKS: usize = 1000;

fn malformed(backend: &str) -> ErrorObject {
    ErrorObject::new(
        jsonrpc::INTERNAL_ERROR,
        format!("backend {backend} described a task in a malformed result"),
    )
}

fn raw(value: &impl serde::Serialize) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).expect("a JSON value serializes")
}

/// A task of a server as a 2026-07-28 editor of `profile` named it, once its id opened for
/// that profile (see [`ids`](super::ids)).
pub(crate) struct NamedTask {
    pub(crate) backend: BackendHandle,
    /// The id the editor was handed.
    pub(crate) exposed: String,
    /// The server's own id.
    pub(crate) own: String,
    /// The profile the editor's requests go to.
    pub(crate) profile: Arc<str>,
}

impl NamedTask {
    /// The task `exposed` names for an editor of `profile`; `None` when the id is not sealed to
    /// the profile or names a server it does not offer (an unknown task).
    pub(crate) fn open(hub: &HubInner, profile: &Arc<str>, exposed: &str) -> Option<NamedTask> {
        let (backend, own) = hub.task_seal.open(TaskOwner::Profile(profile), exposed)?;
        if !hub.offers(profile, backend) {
            return None;
        }
        Some(NamedTask {
            backend: hub.engine.backend(backend)?,
            exposed: exposed.to_owned(),
            own: own.to_owned(),
            profile: profile.clone(),
        })
    }
}

/// A 2025-11-25 `Task` in the extension's shape: its id exposed, `ttl` and `pollInterval` named
/// `ttlMs` and `pollIntervalMs`, everything else as sent.
fn extension_shape(
    task: &RawValue,
    exposer: &Exposer<'_>,
) -> Result<ObjectEntries<'static>, ErrorObject> {
    let backend = exposer.backend();
    let task = ObjectEntries::parse(task.get()).map_err(|_| malformed(backend))?;
    let id = task.get_str("taskId").ok_or_else(|| malformed(backend))?;
    let mut shaped = ObjectEntries::parse("{}").expect("an empty object");
    for (key, value) in task.iter() {
        match key {
            "taskId" => shaped.set(key, json_string(&exposer.id(&id))),
            "ttl" => shaped.set("ttlMs", value.to_owned()),
            "pollInterval" => shaped.set("pollIntervalMs", value.to_owned()),
            other => shaped.set(other, value.to_owned()),
        }
    }
    Ok(shaped)
}

/// A session-era server's created task (`{"task": {…}}`) as the extension's task handle, its id
/// exposed by `exposer`; a result that created no task (the server ran the call at once) is
/// kept.
pub(crate) fn handle(result: &RawValue, exposer: &Exposer<'_>) -> Result<String, ErrorObject> {
    let Some(task) = ObjectEntries::parse(result.get())
        .ok()
        .and_then(|result| result.get("task").map(ToOwned::to_owned))
    else {
        return Ok(result.get().to_owned());
    };
    let mut handle = extension_shape(&task, exposer)?;
    handle.set("resultType", json_string("task"));
    Ok(handle.to_json())
}

/// The server's own id of the task a session-era result created, if it created one.
pub(crate) fn created_task(result: &RawValue) -> Option<String> {
    let result = ObjectEntries::parse(result.get()).ok()?;
    let task = ObjectEntries::parse(result.get("task")?.get()).ok()?;
    Some(task.get_str("taskId")?.into_owned())
}

/// A task's result without the `_meta` entry naming the task, for an editor that never saw it;
/// everything else as the server wrote it.
pub(crate) fn without_related_task(result: &str) -> String {
    let Ok(mut entries) = ObjectEntries::parse(result) else {
        return result.to_owned();
    };
    let Some(meta) = entries.get("_meta").map(|meta| meta.get().to_owned()) else {
        return result.to_owned();
    };
    let Ok(mut meta) = ObjectEntries::parse(&meta) else {
        return result.to_owned();
    };
    if !meta.remove(RELATED_TASK) {
        return result.to_owned();
    }
    if meta.is_empty() {
        entries.remove("_meta");
    } else {
        entries.set("_meta", meta.into_raw());
    }
    entries.to_json()
}

/// What a 2026-07-28 server is told an editor can be asked when Switchboard itself holds the
/// editor's task: the editor's capabilities and the Tasks extension.
pub(crate) fn capabilities_with_tasks(capabilities: ClientCapabilities) -> Box<RawValue> {
    let mut capabilities = capabilities;
    capabilities.tasks_extension = true;
    raw(&capabilities.to_json())
}

/// Answers a 2026-07-28 editor's `tasks/get`, `tasks/update` or `tasks/cancel` for `task`, a
/// session-era server's, in the extension's shapes.
pub(crate) async fn answer(
    hub: &Arc<HubInner>,
    task: &NamedTask,
    method: &Method,
    input_responses: Option<&RawValue>,
    capabilities: ClientCapabilities,
) -> Result<String, ErrorObject> {
    match method {
        Method::TasksGet => detailed(hub, task, capabilities)
            .await
            .map(|task| task.get().to_owned()),
        Method::TasksUpdate => {
            let responses = input_responses
                .ok_or_else(|| invalid_params(format!("{method} needs inputResponses")))?;
            let responses: BTreeMap<String, Box<RawValue>> = serde_json::from_str(responses.get())
                .map_err(|_| invalid_params("inputResponses must be an object"))?;
            let waiting = hub.lock_task_inputs().get(&task.exposed).cloned();
            if let Some(waiting) = waiting {
                waiting.answer(hub, responses);
            }
            Ok("{}".to_owned())
        }
        Method::TasksCancel => {
            let params = raw(&json!({ "taskId": task.own }));
            task.backend
                .request(method, Some(&params))
                .await
                .map_err(|error| error.to_error_object())?;
            let waiting = hub.lock_task_inputs().remove(&task.exposed);
            if let Some(waiting) = waiting {
                waiting.session.close();
            }
            Ok("{}".to_owned())
        }
        other => Err(invalid_params(format!("{other} is no task method"))),
    }
}

/// `task` as the extension's `tasks/get` shows it: with its result or error once it has ended,
/// and with the questions it waits on while it needs input. The result and the questions are as
/// the server wrote them.
pub(crate) async fn detailed(
    hub: &Arc<HubInner>,
    task: &NamedTask,
    capabilities: ClientCapabilities,
) -> Result<Box<RawValue>, ErrorObject> {
    let backend = &task.backend;
    let params = raw(&json!({ "taskId": task.own }));
    let timeout = backend.config().request_timeout;
    if backend.is_stateless_era() {
        let capabilities = capabilities_with_tasks(capabilities);
        let client = ClientMeta {
            capabilities: Some(&capabilities),
            log_level: None,
            call: None,
        };
        let answer = backend
            .request_for_client(&Method::TasksGet, Some(&params), timeout, None, client)
            .await
            .map_err(|error| error.to_error_object())?;
        let mut state =
            ObjectEntries::parse(answer.get()).map_err(|_| malformed(backend.name()))?;
        state.set("taskId", json_string(&task.exposed));
        state.remove("resultType");
        return Ok(state.into_raw());
    }
    let state = backend
        .request(&Method::TasksGet, Some(&params))
        .await
        .map_err(|error| error.to_error_object())?;
    let exposer = hub
        .task_seal
        .exposer(TaskOwner::Profile(&task.profile), backend.name());
    let mut shown = extension_shape(&state, &exposer)?;
    match shown.get_str("status").as_deref() {
        Some("completed" | "failed") => {
            match backend.request(&Method::TasksResult, Some(&params)).await {
                Ok(result) => {
                    let result = without_related_task(result.get());
                    shown.set(
                        "result",
                        RawValue::from_string(result).expect("a result is JSON"),
                    );
                }
                Err(error) => shown.set("error", raw(&error.to_error_object())),
            }
        }
        Some("input_required") => {
            let questions = questions(hub, task, capabilities).await?;
            shown.set("inputRequests", questions);
        }
        _ => {}
    }
    Ok(shown.into_raw())
}

/// The questions the session-era `task` waits on, as `inputRequests`: asked for by waiting on
/// its `tasks/result`, which the first call starts.
async fn questions(
    hub: &Arc<HubInner>,
    task: &NamedTask,
    capabilities: ClientCapabilities,
) -> Result<Box<RawValue>, ErrorObject> {
    let waiting = {
        let mut inputs = hub.lock_task_inputs();
        match inputs.get(&task.exposed) {
            Some(waiting) => waiting.clone(),
            None if inputs.len() >= MAX_WAITING_TASKS => {
                return Err(ErrorObject::new(
                    jsonrpc::INTERNAL_ERROR,
                    format!("{MAX_WAITING_TASKS} tasks wait for input already; answer one first"),
                ));
            }
            None => {
                let waiting = TaskInputs::start(hub, task, capabilities);
                inputs.insert(task.exposed.clone(), waiting.clone());
                waiting
            }
        }
    };
    let deadline = Instant::now() + QUESTION_WAIT;
    loop {
        let changed = waiting.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if waiting.ended.load(Ordering::Acquire) || !waiting.lock_questions().is_empty() {
            break;
        }
        if tokio::time::timeout_at(deadline, changed).await.is_err() {
            break;
        }
    }
    let questions = raw(&*waiting.lock_questions());
    Ok(questions)
}

/// One session-era task whose `tasks/result` Switchboard waits on for a 2026-07-28 editor, and
/// the questions its server asked meanwhile, by key (our id of the request sent on).
pub(crate) struct TaskInputs {
    session: Session,
    /// Each as `{"method": …, "params": …}`, its params as the server wrote them.
    questions: Mutex<BTreeMap<String, Box<RawValue>>>,
    changed: Notify,
    ended: AtomicBool,
}

impl TaskInputs {
    /// Starts waiting on `tasks/result` of `task` in a session of its own, of the editor's
    /// profile, which can be asked what the editor declared.
    fn start(
        hub: &Arc<HubInner>,
        task: &NamedTask,
        capabilities: ClientCapabilities,
    ) -> Arc<TaskInputs> {
        let (session, mut events) = hub.open_session(false, task.profile.clone());
        session.mark_initialized();
        session.lock_state().capabilities = capabilities;
        let waiting = Arc::new(TaskInputs {
            session: session.clone(),
            questions: Mutex::new(BTreeMap::new()),
            changed: Notify::new(),
            ended: AtomicBool::new(false),
        });
        let (reply, mut messages) = mpsc::unbounded_channel();
        let id = RawValue::from_string("1".into()).expect("JSON");
        // The session's own id of the task, as any session's call names it.
        let own_id = hub
            .task_seal
            .exposer(session.task_owner(), task.backend.name())
            .id(&task.own);
        let params = raw(&json!({ "taskId": own_id }));
        if session
            .call(hub, &id, &Method::TasksResult, Some(&params), &reply)
            .is_some()
        {
            drop(reply);
        }
        let hub = Arc::downgrade(hub);
        let exposed = task.exposed.clone();
        let task = waiting.clone();
        tokio::spawn(async move {
            loop {
                let message = tokio::select! {
                    message = messages.recv() => message,
                    event = events.recv() => event.map(Reply::from),
                };
                let Some(message) = message else { break };
                match message {
                    Reply::Request(request) => {
                        let mut question = ObjectEntries::parse("{}").expect("an empty object");
                        question.set("method", json_string(request.method.as_str()));
                        if let Some(params) = request.params {
                            question.set("params", params);
                        }
                        let question = question.into_raw();
                        task.lock_questions()
                            .insert(request.id.to_string(), question);
                        task.changed.notify_waiters();
                    }
                    Reply::Response(_) => break,
                    Reply::Notification(_) => {}
                }
            }
            task.ended.store(true, Ordering::Release);
            task.changed.notify_waiters();
            task.session.close();
            if let Some(hub) = hub.upgrade() {
                let mut inputs = hub.lock_task_inputs();
                if inputs
                    .get(&exposed)
                    .is_some_and(|current| Arc::ptr_eq(current, &task))
                {
                    inputs.remove(&exposed);
                }
            }
        });
        waiting
    }

    fn lock_questions(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Box<RawValue>>> {
        self.questions
            .lock()
            .expect("task questions lock is never poisoned")
    }

    /// Passes each answer to the question of its key; keys not outstanding are ignored.
    fn answer(&self, hub: &HubInner, responses: BTreeMap<String, Box<RawValue>>) {
        for (key, answer) in responses {
            if self.lock_questions().remove(&key).is_none() {
                continue;
            }
            if let Ok(our_id) = key.parse() {
                self.session.answered(hub, our_id, Ok(answer));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::tasks::ids::TaskSeal;

    #[test]
    fn a_created_task_becomes_the_extensions_handle() {
        let created = raw(&json!({"task": {
            "taskId": "t1", "status": "working", "statusMessage": "started",
            "createdAt": "2026-11-24T10:00:00Z", "lastUpdatedAt": "2026-11-24T10:00:00Z",
            "ttl": 300000, "pollInterval": 1000
        }}));
        let seal = TaskSeal::new();
        let exposer = seal.exposer(TaskOwner::Profile("default"), "everything");
        let shown: Value = serde_json::from_str(&handle(&created, &exposer).unwrap()).unwrap();
        assert_eq!(
            shown,
            json!({
                "resultType": "task", "taskId": exposer.id("t1"), "status": "working",
                "statusMessage": "started", "createdAt": "2026-11-24T10:00:00Z",
                "lastUpdatedAt": "2026-11-24T10:00:00Z", "ttlMs": 300000, "pollIntervalMs": 1000
            })
        );
        assert_eq!(created_task(&created).as_deref(), Some("t1"));
        let plain = raw(&json!({"content": [], "task": "no object"}));
        assert!(
            handle(&plain, &exposer).is_err(),
            "a malformed task is refused"
        );
        let at_once = raw(&json!({"content": [{"type": "text", "text": "done"}]}));
        assert_eq!(handle(&at_once, &exposer).unwrap(), at_once.get());
        assert_eq!(created_task(&at_once), None);
    }

    #[test]
    fn only_the_related_task_leaves_a_result() {
        let result = json!({"content": [], "_meta": {RELATED_TASK: {"taskId": "t1"}}});
        assert_eq!(
            without_related_task(&result.to_string()),
            json!({"content": []}).to_string()
        );
        let result = json!({"content": [], "_meta": {RELATED_TASK: {"taskId": "t1"}, "x": 1}});
        assert_eq!(
            without_related_task(&result.to_string()),
            json!({"content": [], "_meta": {"x": 1}}).to_string()
        );
        let untouched = r#"{"content":[],"_meta":{"x":1}}"#;
        assert_eq!(without_related_task(untouched), untouched);
    }

    #[test]
    fn a_result_and_a_task_keep_the_numbers_their_server_wrote() {
        let result = format!(
            r#"{{"structuredContent":{{"total":1.50,"huge":1e400}},"_meta":{{"{RELATED_TASK}":{{"taskId":"t1"}}}}}}"#
        );
        assert_eq!(
            without_related_task(&result),
            r#"{"structuredContent":{"total":1.50,"huge":1e400}}"#
        );
        let created = r#"{"task":{"taskId":"t1","status":"working","ttl":3.0e5,"x":1e400}}"#;
        let created = RawValue::from_string(created.to_owned()).unwrap();
        let seal = TaskSeal::new();
        let exposer = seal.exposer(TaskOwner::Profile("default"), "everything");
        assert_eq!(
            handle(&created, &exposer).unwrap(),
            format!(
                r#"{{"taskId":"{}","status":"working","ttlMs":3.0e5,"x":1e400,"resultType":"task"}}"#,
                exposer.id("t1")
            )
        );
    }
}
