//! A 2026-07-28 server's task, for an editor of the session era, which knows no such tasks: the
//! call that made it polls it to its end ([`poll`]), puts its questions to the editor, and
//! answers with its result or error. The result passes on as the server wrote it.

use std::collections::HashSet;
use std::time::Duration;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::rewrite::{ObjectEntries, json_string};
use supervisor::BackendHandle;
use wire::jsonrpc::{self, ErrorObject};
use wire::method::Method;

/// Longest and shortest wait between two polls of a 2026-07-28 server's task.
const POLL_BOUNDS: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(5));

/// What polling a task needs of the call that made it.
pub(crate) trait TaskCall {
    /// The backend whose task it is.
    fn backend(&self) -> &BackendHandle;

    /// How long the call may take in all.
    fn deadline(&self) -> Duration;

    /// What is left of the call's deadline.
    fn left(&self) -> Duration;

    /// Sends `method` with `params` to the backend within what is left of the call's deadline.
    async fn send(&self, method: &Method, params: &RawValue) -> Result<Box<RawValue>, ErrorObject>;

    /// Puts the backend's question (`method` with `params`) to the editor; its answer.
    async fn ask(
        &self,
        method: &Method,
        params: Option<&RawValue>,
    ) -> Result<Box<RawValue>, ErrorObject>;
}

/// A task as its server describes it (`tasks/get`, or the answer that made it); its result,
/// error and questions are kept as the server wrote them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskState {
    #[serde(default)]
    task_id: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    status_message: Option<String>,
    #[serde(default)]
    poll_interval_ms: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Box<RawValue>>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Box<RawValue>>,
    #[serde(default, deserialize_with = "present")]
    input_requests: Option<Box<RawValue>>,
}

/// One question of a task, its params as the server wrote them.
#[derive(Deserialize)]
struct Question {
    method: String,
    #[serde(default, deserialize_with = "present")]
    params: Option<Box<RawValue>>,
}

/// A field that is there, `null` included.
fn present<'de, D: Deserializer<'de>>(field: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(field).map(Some)
}

/// Polls the task `created` describes to its end within the call's deadline, and answers with
/// its result or error. Its questions go to the editor and their answers back with
/// `tasks/update`; a task left unfinished (the deadline passed, the editor went away) is
/// cancelled at the server.
pub(crate) async fn poll(call: &impl TaskCall, created: &RawValue) -> Result<String, ErrorObject> {
    let backend = call.backend().name();
    let malformed = || {
        ErrorObject::new(
            jsonrpc::INTERNAL_ERROR,
            format!("backend {backend} described its task in a malformed result"),
        )
    };
    let parse =
        |state: &RawValue| serde_json::from_str::<TaskState>(state.get()).map_err(|_| malformed());
    let mut state = parse(created)?;
    let own = state.task_id.take().ok_or_else(malformed)?;
    let task = RawValue::from_string(format!(r#"{{"taskId":{}}}"#, json_string(&own).get()))
        .expect("an object with a string is JSON");
    let mut unfinished = Unfinished {
        backend: Some(call.backend().clone()),
        task: task.clone(),
    };
    let mut answered = HashSet::new();
    loop {
        let status = state.status.as_deref().unwrap_or_default();
        let ended = |error: String| {
            let message = state.status_message.as_deref().unwrap_or("no reason given");
            ErrorObject::new(jsonrpc::INTERNAL_ERROR, format!("{error}: {message}"))
        };
        match status {
            "completed" => {
                unfinished.backend = None;
                let result = state.result.as_deref().ok_or_else(malformed)?;
                return Ok(result.get().to_owned());
            }
            "failed" => {
                unfinished.backend = None;
                return Err(state
                    .error
                    .as_deref()
                    .and_then(|error| serde_json::from_str(error.get()).ok())
                    .unwrap_or_else(|| ended(format!("backend {backend}'s task failed"))));
            }
            "cancelled" => {
                unfinished.backend = None;
                return Err(ended(format!("backend {backend} cancelled its task")));
            }
            _ => {}
        }
        let mut answers = ObjectEntries::parse("{}").expect("an empty object");
        let questions = state
            .input_requests
            .as_deref()
            .filter(|_| status == "input_required")
            .and_then(|questions| ObjectEntries::parse(questions.get()).ok());
        for (key, question) in questions.iter().flat_map(ObjectEntries::iter) {
            if !answered.insert(key.to_owned()) {
                continue;
            }
            let question: Question =
                serde_json::from_str(question.get()).map_err(|_| malformed())?;
            let method = Method::parse(&question.method);
            let answer = call.ask(&method, question.params.as_deref()).await?;
            answers.set(key, answer);
        }
        if answers.is_empty() {
            let wait = state
                .poll_interval_ms
                .map_or(POLL_BOUNDS.0 * 10, Duration::from_millis)
                .clamp(POLL_BOUNDS.0, POLL_BOUNDS.1);
            let left = call.left();
            if left.is_zero() {
                return Err(ErrorObject::new(
                    jsonrpc::REQUEST_TIMEOUT,
                    format!(
                        "backend {backend}'s task did not end within {} ms; it was cancelled",
                        call.deadline().as_millis()
                    ),
                ));
            }
            tokio::time::sleep(wait.min(left)).await;
        } else {
            let mut update = ObjectEntries::parse(task.get()).expect("the task is an object");
            update.set("inputResponses", answers.into_raw());
            call.send(&Method::TasksUpdate, &update.into_raw()).await?;
        }
        let next = call.send(&Method::TasksGet, &task).await?;
        state = parse(&next)?;
    }
}

/// A 2026-07-28 server's task that a call polls, cancelled at the server if the call ends
/// before the task does.
struct Unfinished {
    /// `None` once the task has ended.
    backend: Option<BackendHandle>,
    task: Box<RawValue>,
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        let Some(backend) = self.backend.take() else {
            return;
        };
        let task = self.task.clone();
        tokio::spawn(async move {
            let cancel = Method::TasksCancel;
            if let Err(error) = backend.request(&cancel, Some(&task)).await {
                tracing::debug!(backend = backend.name(), %error, "cancelling an unfinished task");
            }
        });
    }
}
