//! Tasks Switchboard holds for session-era servers (MCP 2025-11-25, client side): a server that
//! sees the `tasks` client capability may send `sampling/createMessage` or `elicitation/create`
//! with a `task`, expecting a task handle at once, then poll `tasks/get`, fetch `tasks/result`,
//! list with `tasks/list` and stop one with `tasks/cancel`.
//!
//! Switchboard answers the handle itself and puts the request, without its `task`, to the editor
//! whose call caused it, as any other request of the server (an editor of 2026-07-28 gets it as
//! `input_required`). The editor's answer completes the task. A server sees only its own tasks.
//! Tasks are forgotten after their ttl (at most an hour), and at most [`MAX_TASKS`] are kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::rewrite::ObjectEntries;
use wire::jsonrpc::{self, ErrorObject};
use wire::meta::RELATED_TASK;
use wire::method::Method;

/// How many tasks Switchboard keeps for servers at once.
pub(crate) const MAX_TASKS: usize = 1000;

/// The longest a task is kept, whatever ttl its server asked for.
const MAX_TTL: Duration = Duration::from_secs(3600);

/// How often a server is told to poll.
const POLL_INTERVAL_MS: u64 = 500;

/// The requests a server may ask Switchboard to run as tasks.
pub(crate) const TASK_REQUESTS: [Method; 2] =
    [Method::SamplingCreateMessage, Method::ElicitationCreate];

/// The methods a server polls its tasks with.
pub(crate) const TASK_METHODS: [Method; 4] = [
    Method::TasksGet,
    Method::TasksResult,
    Method::TasksList,
    Method::TasksCancel,
];

#[derive(Debug, Clone)]
enum Status {
    Working,
    Completed(Box<RawValue>),
    Failed(ErrorObject),
    Cancelled,
}

impl Status {
    fn is_working(&self) -> bool {
        matches!(self, Status::Working)
    }

    fn name(&self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::Completed(_) => "completed",
            Status::Failed(_) => "failed",
            Status::Cancelled => "cancelled",
        }
    }
}

struct Task {
    created: SystemTime,
    updated: SystemTime,
    expires: Instant,
    ttl: Duration,
    status: watch::Sender<Status>,
    /// Our id of the request put to the editor, while it is unanswered.
    forwarded: Option<u64>,
}

/// The tasks of every server, by (server, task id).
#[derive(Default)]
pub(crate) struct ClientTasks {
    tasks: Mutex<HashMap<(Arc<str>, String), Task>>,
}

/// Why a server's task request is refused.
fn not_found(id: &str) -> ErrorObject {
    ErrorObject::new(jsonrpc::INVALID_PARAMS, format!("no task {id}"))
}

/// An ISO 8601 time, as tasks carry them.
fn timestamp(time: SystemTime) -> String {
    jiff::Timestamp::try_from(time).map_or_else(|_| String::new(), |time| time.to_string())
}

impl ClientTasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(Arc<str>, String), Task>> {
        self.tasks
            .lock()
            .expect("client tasks lock is never poisoned")
    }

    /// Makes a task for `backend`'s request whose `task` asked for `ttl`; answers the handle,
    /// or an error when too many tasks are kept.
    pub(crate) fn create(
        &self,
        backend: &Arc<str>,
        requested_ttl: Option<u64>,
    ) -> Result<(String, Box<RawValue>), ErrorObject> {
        let mut tasks = self.lock();
        let now = Instant::now();
        tasks.retain(|_, task| task.expires > now);
        if tasks.len() >= MAX_TASKS {
            return Err(ErrorObject::new(
                jsonrpc::INTERNAL_ERROR,
                format!("Switchboard holds {MAX_TASKS} tasks for servers already; try again later"),
            ));
        }
        let ttl = requested_ttl
            .map_or(MAX_TTL, Duration::from_millis)
            .min(MAX_TTL);
        let id = crate::random_id();
        let created = SystemTime::now();
        let task = Task {
            created,
            updated: created,
            expires: now + ttl,
            ttl,
            status: watch::channel(Status::Working).0,
            forwarded: None,
        };
        let handle = json!({ "task": describe(&id, &task) });
        tasks.insert((backend.clone(), id.clone()), task);
        Ok((id, serde_json::value::to_raw_value(&handle).expect("JSON")))
    }

    /// Notes which forwarded request runs the task.
    pub(crate) fn forwarded(&self, backend: &Arc<str>, id: &str, our_id: u64) {
        if let Some(task) = self.lock().get_mut(&(backend.clone(), id.to_owned())) {
            task.forwarded = Some(our_id);
        }
    }

    /// Ends the task with the editor's answer, unless it was cancelled meanwhile.
    pub(crate) fn complete(
        &self,
        backend: &Arc<str>,
        id: &str,
        outcome: Result<Box<RawValue>, ErrorObject>,
    ) {
        if let Some(task) = self.lock().get_mut(&(backend.clone(), id.to_owned()))
            && task.status.borrow().is_working()
        {
            task.updated = SystemTime::now();
            task.forwarded = None;
            task.status.send_replace(match outcome {
                Ok(result) => Status::Completed(result),
                Err(error) => Status::Failed(error),
            });
        }
    }

    /// Answers `backend`'s `tasks/get`, `tasks/list` or `tasks/cancel` at once; for
    /// `tasks/result`, what to wait on. `cancel` gets our id of a request to drop when a task is
    /// cancelled while the editor still has it.
    pub(crate) fn answer(
        &self,
        backend: &Arc<str>,
        method: &Method,
        params: Option<&RawValue>,
        cancel: impl FnOnce(u64),
    ) -> Answer {
        let id = params
            .and_then(|params| ObjectEntries::parse(params.get()).ok())
            .and_then(|params| params.get_str("taskId").map(|id| id.into_owned()));
        let mut tasks = self.lock();
        let now = Instant::now();
        tasks.retain(|_, task| task.expires > now);
        if *method == Method::TasksList {
            let list: Vec<Value> = tasks
                .iter()
                .filter(|((owner, _), _)| owner == backend)
                .map(|((_, id), task)| describe(id, task))
                .collect();
            return Answer::Now(Ok(json!({ "tasks": list }).to_string()));
        }
        let Some(id) = id else {
            return Answer::Now(Err(ErrorObject::new(
                jsonrpc::INVALID_PARAMS,
                format!("{method} needs a taskId"),
            )));
        };
        let Some(task) = tasks.get_mut(&(backend.clone(), id.clone())) else {
            return Answer::Now(Err(not_found(&id)));
        };
        match method {
            Method::TasksGet => Answer::Now(Ok(describe(&id, task).to_string())),
            Method::TasksCancel => {
                if !task.status.borrow().is_working() {
                    return Answer::Now(Err(ErrorObject::new(
                        jsonrpc::INVALID_PARAMS,
                        format!(
                            "task {id} has already ended ({})",
                            task.status.borrow().name()
                        ),
                    )));
                }
                task.updated = SystemTime::now();
                task.status.send_replace(Status::Cancelled);
                if let Some(our_id) = task.forwarded.take() {
                    cancel(our_id);
                }
                Answer::Now(Ok(describe(&id, task).to_string()))
            }
            _ => Answer::Wait(Wait {
                id,
                status: task.status.subscribe(),
                until: task.expires,
            }),
        }
    }
}

/// What a server's task request gets.
pub(crate) enum Answer {
    Now(Result<String, ErrorObject>),
    /// `tasks/result` of a task that may still be working.
    Wait(Wait),
}

pub(crate) struct Wait {
    id: String,
    status: watch::Receiver<Status>,
    until: Instant,
}

impl Wait {
    /// The task's result once it ends (its ttl bounds the wait): the editor's answer with the
    /// task named in `_meta`, or its error.
    pub(crate) async fn result(mut self) -> Result<String, ErrorObject> {
        let ended = tokio::time::timeout_at(
            self.until.into(),
            self.status.wait_for(|status| !status.is_working()),
        )
        .await;
        let status = match ended {
            Ok(Ok(status)) => status.clone(),
            _ => {
                return Err(ErrorObject::new(
                    jsonrpc::INTERNAL_ERROR,
                    format!("task {} ended without a result (its ttl passed)", self.id),
                ));
            }
        };
        match status {
            Status::Completed(result) => {
                let mut result = ObjectEntries::parse(result.get()).map_err(|_| {
                    ErrorObject::new(
                        jsonrpc::INTERNAL_ERROR,
                        "the editor's answer is not an object",
                    )
                })?;
                let meta = json!({ RELATED_TASK: { "taskId": self.id } });
                result.set(
                    "_meta",
                    serde_json::value::to_raw_value(&meta).expect("JSON"),
                );
                Ok(result.to_json())
            }
            Status::Failed(error) => Err(error),
            Status::Cancelled => Err(ErrorObject::new(
                jsonrpc::INTERNAL_ERROR,
                format!("task {} was cancelled", self.id),
            )),
            Status::Working => unreachable!("waited until the task ended"),
        }
    }
}

/// A task as `tasks/get` shows it.
fn describe(id: &str, task: &Task) -> Value {
    let status = task.status.borrow();
    let mut described = json!({
        "taskId": id,
        "status": status.name(),
        "createdAt": timestamp(task.created),
        "lastUpdatedAt": timestamp(task.updated),
        "ttl": task.ttl.as_millis() as u64,
        "pollInterval": POLL_INTERVAL_MS,
    });
    if let Status::Failed(error) = &*status {
        described["statusMessage"] = Value::String(error.message.clone());
    }
    described
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now(answer: Answer) -> Result<Value, ErrorObject> {
        match answer {
            Answer::Now(answer) => answer.map(|text| serde_json::from_str(&text).expect("JSON")),
            Answer::Wait(_) => panic!("an answer at once"),
        }
    }

    fn params(id: &str) -> Box<RawValue> {
        serde_json::value::to_raw_value(&json!({ "taskId": id })).expect("JSON")
    }

    #[tokio::test]
    async fn a_task_runs_to_its_result_and_only_its_server_sees_it() {
        let tasks = ClientTasks::default();
        let (mine, other): (Arc<str>, Arc<str>) = (Arc::from("mine"), Arc::from("other"));
        let (id, handle) = tasks.create(&mine, Some(60_000)).expect("made");
        let handle: Value = serde_json::from_str(handle.get()).expect("JSON");
        assert_eq!(handle["task"]["status"], "working");
        assert_eq!(handle["task"]["ttl"], 60_000);
        let got =
            now(tasks.answer(&mine, &Method::TasksGet, Some(&params(&id)), |_| {})).expect("known");
        assert_eq!(got["taskId"], id.as_str());
        let foreign = now(tasks.answer(&other, &Method::TasksGet, Some(&params(&id)), |_| {}));
        assert_eq!(
            foreign.expect_err("not its task").code,
            jsonrpc::INVALID_PARAMS
        );
        let listed = now(tasks.answer(&other, &Method::TasksList, None, |_| {})).expect("a list");
        assert_eq!(listed["tasks"], json!([]));

        let Answer::Wait(wait) =
            tasks.answer(&mine, &Method::TasksResult, Some(&params(&id)), |_| {})
        else {
            panic!("a wait");
        };
        let answer = serde_json::value::to_raw_value(&json!({"action": "accept"})).expect("JSON");
        tasks.complete(&mine, &id, Ok(answer));
        let result: Value =
            serde_json::from_str(&wait.result().await.expect("a result")).expect("JSON");
        assert_eq!(result["action"], "accept");
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
            id.as_str()
        );
        let got =
            now(tasks.answer(&mine, &Method::TasksGet, Some(&params(&id)), |_| {})).expect("known");
        assert_eq!(got["status"], "completed");
        let cancelled = now(tasks.answer(&mine, &Method::TasksCancel, Some(&params(&id)), |_| {}));
        assert!(cancelled.is_err(), "an ended task cannot be cancelled");
    }

    #[tokio::test]
    async fn cancelling_drops_the_editors_request_and_ends_the_wait() {
        let tasks = ClientTasks::default();
        let server: Arc<str> = Arc::from("s");
        let (id, _) = tasks.create(&server, None).expect("made");
        tasks.forwarded(&server, &id, 7);
        let Answer::Wait(wait) =
            tasks.answer(&server, &Method::TasksResult, Some(&params(&id)), |_| {})
        else {
            panic!("a wait");
        };
        let mut dropped = None;
        let cancelled = now(tasks.answer(
            &server,
            &Method::TasksCancel,
            Some(&params(&id)),
            |our_id| dropped = Some(our_id),
        ))
        .expect("cancelled");
        assert_eq!(cancelled["status"], "cancelled");
        assert_eq!(dropped, Some(7));
        assert!(wait.result().await.is_err());
        let late = serde_json::value::to_raw_value(&json!({})).expect("JSON");
        tasks.complete(&server, &id, Ok(late));
        let got = now(tasks.answer(&server, &Method::TasksGet, Some(&params(&id)), |_| {}))
            .expect("known");
        assert_eq!(got["status"], "cancelled", "a late answer changes nothing");
    }

    #[test]
    fn the_number_of_tasks_is_bounded() {
        let tasks = ClientTasks::default();
        let server: Arc<str> = Arc::from("s");
        for _ in 0..MAX_TASKS {
            tasks.create(&server, Some(60_000)).expect("room");
        }
        assert!(tasks.create(&server, Some(60_000)).is_err());
    }
}
