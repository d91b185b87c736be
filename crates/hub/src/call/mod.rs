//! One call an editor makes that a backend answers: finding the owning backend and rewriting the
//! params it receives (its own name for the tool, prompt or reference; a progress token unique to
//! the hub), waiting for the backend to be ready, and sending its progress back under the
//! client's own token. Cancelling the call (by the client, or by closing the session) drops the
//! request, which tells the backend.
//!
//! A 2026-07-28 backend's `input_required` is put to the editor (`input.rs`) and the call made
//! again with the answers, at most eight rounds. What a call does with a task is its `TaskPlan`:
//! await a session-era server's required task, hand it over as the Tasks extension's handle, or
//! poll a 2026-07-28 server's task for a session-era editor (`tasks/poll.rs`, which reaches the
//! call only through the `TaskCall` trait implemented here).

mod input;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::approvals::{self, Asked, Asking};
use super::capabilities::{ClientCapabilities, ready_with};
use super::catalog::skills::{self, SkillFile};
use super::catalog::views::{self, View};
use super::catalog::{MergedCatalog, Route};
use super::cold_start::{self, Waiting};
use super::questions;
use super::recorded::{Named, Recording};
use super::reply::{Notification, Reply, invalid_params};
use super::rewrite::{self, ObjectEntries, json_string};
use super::search::mode::{self, Intercepted};
use super::session::{CallInFlight, Session};
use super::subscriptions::Subscription;
use super::tasks::poll::{self, TaskCall};
use super::tasks::{bridge, ids};
use super::{HubInner, MAX_INPUT_ROUNDS, response};
use input::input_required;
use supervisor::rpc::ClientMeta;
use supervisor::rpc::ProgressSink;
use supervisor::status::BackendState;
use supervisor::{BackendHandle, CallError};
use wire::apps::APP_MIME_TYPE;
use wire::era::TASKS_EXTENSION;
use wire::jsonrpc::{self, ErrorObject};
use wire::meta;
use wire::method::{Method, Subject};

/// What a call does with a task its server may make (see [`bridge`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum TaskPlan {
    /// Nothing: the answer goes back as it came, task ids exposed where the editor expects them.
    AsIs,
    /// A session-era server's tool that runs only as a task, for an editor that holds no task:
    /// make the task, wait on `tasks/result`, answer with the result.
    Await,
    /// The same, for a 2026-07-28 editor with the Tasks extension: answer with its task handle.
    Handle,
    /// A 2026-07-28 server's tool, which may answer with a task, for an editor of the session
    /// era: poll the task to its end, putting its questions to the editor.
    Poll,
}

/// Where a call goes, and what it sends there.
struct RoutedCall {
    backend: BackendHandle,
    /// The params with the names the backend knows and our progress token.
    params: Box<RawValue>,
    progress: Option<ProgressToken>,
    /// Whether the answer may carry task ids, which editors see with their backend in them.
    with_tasks: bool,
    task_plan: TaskPlan,
    client: ClientFacts,
    /// What the activity log keeps of the request, if it keeps anything.
    named: Option<Named>,
    /// For a read of a view of MCP Apps: the view, and the URI the editor knows it by.
    view: Option<(View, String)>,
    /// For a read of a skill's file: the file, and the URI the editor knows it by.
    skill_file: Option<(SkillFile, String)>,
    /// For a call that waits for a person's yes: what they are shown, how long it waits, and
    /// where its tool went when they were asked.
    confirm: Option<Asking>,
}

/// The log level a 2026-07-28 backend is told for an editor of the session era whose session
/// holds none: every message. Under 2025-11-25 a server may log before any `logging/setLevel`, and
/// servers of that era send everything until told a level; a 2026-07-28 server sends nothing
/// for a request that names no level.
const UNSET_LOG_LEVEL: &str = "debug";

/// What a 2026-07-28 backend is told of the editor of a call, and what the hub needs to put a
/// backend's `input_required` questions to that editor.
struct ClientFacts {
    capabilities: ClientCapabilities,
    /// What a 2026-07-28 backend is told the editor can be asked (`None` for a session-era one,
    /// which was told at its start).
    capabilities_json: Option<Box<RawValue>>,
    log_level: Option<Box<RawValue>>,
    /// Whether the editor speaks 2026-07-28 itself (and so answers `input_required` on its own).
    stateless: bool,
}

/// A client's progress token and the one the backend sees instead.
struct ProgressToken {
    ours: String,
    original: Box<RawValue>,
}

/// One call routed to a backend.
struct Call {
    method: Method,
    backend: BackendHandle,
    params: Box<RawValue>,
    progress: Option<ProgressToken>,
    subscription: Option<Subscription>,
    /// Whether the answer may carry task ids, which editors see with their backend in them.
    with_tasks: bool,
    task_plan: TaskPlan,
    client: ClientFacts,
    /// What the activity log keeps of the request, if it keeps anything.
    named: Option<Named>,
    /// The call's number at its backend ([`ClientMeta::call`]).
    number: u64,
    /// For a read of a view of MCP Apps: the view, and the URI the editor knows it by.
    view: Option<(View, String)>,
    /// For a read of a skill's file: the file, and the URI the editor knows it by.
    skill_file: Option<(SkillFile, String)>,
    /// For a call that waits for a person's yes: what they are shown, how long it waits, and
    /// where its tool went when they were asked.
    confirm: Option<Asking>,
    /// Who decided such a call, once someone has, for the activity log.
    decision: OnceLock<String>,
}

impl Session {
    /// Routes a call to its owning backend and starts it. A name the catalog does not know yet
    /// waits while a backend that could own it is starting, and for the rebuild that is due
    /// once a backend became ready (see [`cold_start`]).
    pub(super) fn call(
        &self,
        hub: &Arc<HubInner>,
        id: &RawValue,
        method: &Method,
        params: Option<&RawValue>,
        reply: &mpsc::UnboundedSender<Reply>,
    ) -> Option<Result<String, ErrorObject>> {
        let mut instead = None;
        if *method == Method::ToolsCall
            && let Some(params) = params
        {
            match mode::intercept(&hub.catalog(self.profile()), params) {
                Some(Intercepted::Answer(answer)) => return Some(answer),
                Some(Intercepted::Call(params)) => instead = Some(params),
                None => {}
            }
        }
        let params = instead.as_deref().or(params);
        match self.route(hub, method, params) {
            Ok(routed) => {
                let call = Call::new(hub, method, params, routed);
                self.start_call(hub, id, params, call, reply.clone());
                None
            }
            Err(_) if !cold_start::settled(hub, &waiting_for(method, params)) => {
                let starting = cold_start::starting(hub, &waiting_for(method, params));
                let session = self.clone();
                let hub = hub.clone();
                let id = id.to_owned();
                let method = method.clone();
                let params = params.map(ToOwned::to_owned);
                let reply = reply.clone();
                tokio::spawn(async move {
                    cold_start::settle(&hub, starting).await;
                    match session.route(&hub, &method, params.as_deref()) {
                        Ok(routed) => {
                            let call = Call::new(&hub, &method, params.as_deref(), routed);
                            session.start_call(&hub, &id, params.as_deref(), call, reply);
                        }
                        Err(error) => {
                            Recording::refused(
                                hub.activity.as_ref(),
                                &session,
                                &method,
                                params.as_deref(),
                                &error,
                            );
                            let _ = reply.send(response(&id, Err(error)));
                        }
                    }
                });
                None
            }
            Err(error) => {
                Recording::refused(hub.activity.as_ref(), self, method, params, &error);
                Some(Err(error))
            }
        }
    }

    /// Finds the owning backend and rewrites the params it will receive.
    fn route(
        &self,
        hub: &Arc<HubInner>,
        method: &Method,
        params: Option<&RawValue>,
    ) -> Result<RoutedCall, ErrorObject> {
        let params = params.ok_or_else(|| invalid_params(format!("{method} needs params")))?;
        let mut entries = ObjectEntries::parse(params.get())
            .map_err(|_| invalid_params("params must be an object"))?;
        let mut named = Named::of(hub.activity.as_ref(), method, &entries);
        let mut view = None;
        let mut skill_file = None;
        let catalog = hub.catalog(self.profile());
        let requires_task = *method == Method::ToolsCall
            && entries.get("task").is_none()
            && entries
                .get_str("name")
                .is_some_and(|name| catalog.task_required.contains(&*name));
        let mut by_name = |entries: &mut ObjectEntries<'_>, kind, listed, unlisted| {
            route_by_name(method, entries, kind, listed, unlisted).inspect(|route| {
                if let Some(named) = &mut named {
                    named.name(route);
                }
            })
        };
        if *method == Method::ToolsCall {
            views::call_by_own_name(&catalog, &mut entries);
        }
        // The tool called, listed or not, when its calls wait for a yes, with how long.
        let mut confirm = None;
        let backend_name = match method {
            Method::ToolsCall => {
                let route = by_name(
                    &mut entries,
                    "tool",
                    &catalog.tools,
                    &catalog.unlisted_tools,
                )?;
                if let Some(timeout) = catalog.confirm.get(&*route.exposed) {
                    confirm = Some((route.clone(), *timeout));
                }
                route.backend.clone()
            }
            Method::PromptsGet => by_name(
                &mut entries,
                "prompt",
                &catalog.prompts,
                &catalog.unlisted_prompts,
            )?
            .backend
            .clone(),
            Method::CompletionComplete => route_completion(&catalog, &mut entries)?,
            Method::TasksGet | Method::TasksResult | Method::TasksUpdate | Method::TasksCancel => {
                self.route_by_task(hub, method, &mut entries)?
            }
            _ => {
                let backend = route_by_uri(&catalog, method, &entries)?;
                view = views::of_request(&catalog, &mut entries);
                skill_file = skills::of_request(&catalog.skills, &mut entries);
                backend
            }
        };
        let backend = hub.engine.backend(&backend_name).ok_or_else(|| {
            ErrorObject::new(
                jsonrpc::BACKEND_UNAVAILABLE,
                format!("backend {backend_name} is not configured"),
            )
        })?;
        let confirm = confirm.map(|(route, timeout)| {
            let asked = Asked {
                id: 0,
                server: backend_name.to_string(),
                own: route.name.to_string(),
                tool: route.exposed.to_string(),
                profile: self.profile().to_owned(),
                editor: self.lock_state().client.as_deref().map(str::to_owned),
                arguments_text: entries.get("arguments").map(|text| text.get().to_owned()),
                session_lasts: !self.is_stateless(),
                asked_at: 0,
                deadline: 0,
            };
            Asking::new(hub, &backend, &route.name, asked, timeout)
        });
        let stateless_backend = backend.is_stateless_era();
        if !stateless_backend && entries.get("requestState").is_some() {
            return Err(invalid_params(
                "requestState is not one Switchboard issued; send the request again without it",
            ));
        }
        let progress = self.rewrite_progress_token(hub, &mut entries);
        let stateless = self.is_stateless();
        let capabilities = self.lock_state().capabilities;
        let task_plan = if requires_task && !stateless_backend {
            entries.set("task", RawValue::from_string("{}".into()).expect("JSON"));
            if stateless && capabilities.tasks_extension {
                TaskPlan::Handle
            } else {
                TaskPlan::Await
            }
        } else if *method == Method::ToolsCall
            && stateless_backend
            && !stateless
            && ready_with(&backend, &["extensions", TASKS_EXTENSION])
        {
            TaskPlan::Poll
        } else {
            TaskPlan::AsIs
        };
        let client = {
            let state = self.lock_state();
            if let Some(named) = &mut named {
                named.client = state.client.clone();
            }
            ClientFacts {
                capabilities,
                capabilities_json: stateless_backend.then(|| {
                    let told = questions::told(capabilities, backend.config().ask);
                    match task_plan {
                        TaskPlan::Poll => bridge::capabilities_with_tasks(told),
                        _ => serde_json::value::to_raw_value(&told.to_json())
                            .expect("capabilities serialize"),
                    }
                }),
                log_level: match &state.log_level {
                    Some(level) => Some(level.clone()),
                    None if !stateless => Some(json_string(UNSET_LOG_LEVEL)),
                    None => None,
                },
                stateless,
            }
        };
        let with_tasks = task_plan == TaskPlan::AsIs
            && (method.is_task()
                || (*method == Method::ToolsCall
                    && (entries.get("task").is_some() || client.capabilities.tasks_extension)));
        Ok(RoutedCall {
            backend,
            params: entries.into_raw(),
            progress,
            with_tasks,
            task_plan,
            client,
            named,
            view: view.filter(|_| *method == Method::ResourcesRead),
            skill_file: skill_file.filter(|_| *method == Method::ResourcesRead),
            confirm,
        })
    }

    /// Replaces the client's progress token (only if it sent one) with one unique to the hub.
    fn rewrite_progress_token(
        &self,
        hub: &Arc<HubInner>,
        entries: &mut ObjectEntries<'_>,
    ) -> Option<ProgressToken> {
        let (ours, original) = rewrite::replace_progress_token(entries, || {
            format!(
                "switchboard-{}-{}",
                self.id(),
                hub.next_id.fetch_add(1, Ordering::Relaxed)
            )
        })?;
        Some(ProgressToken { ours, original })
    }

    /// Records the call as in flight under the client's id and runs it; its answer goes to
    /// `reply`, unless the call is cancelled first. The activity log gets the call, whose
    /// params the editor sent as `sent`, and how it ended.
    fn start_call(
        &self,
        hub: &Arc<HubInner>,
        id: &RawValue,
        sent: Option<&RawValue>,
        mut call: Call,
        reply: mpsc::UnboundedSender<Reply>,
    ) {
        let recording = call.named.take().and_then(|named| {
            Recording::start(
                hub.activity.as_ref(),
                self,
                &call.method,
                sent.map_or(0, |sent| sent.get().len()),
                Some(call.backend.shared_name()),
                named,
            )
        });
        let id_key = id.get().to_owned();
        let cancel = self.call_token();
        {
            let mut state = self.lock_state();
            if state.in_flight.contains_key(&id_key) {
                let error = ErrorObject::new(
                    jsonrpc::INVALID_REQUEST,
                    format!("request id {id_key} is already in use"),
                );
                let _ = reply.send(response(id, Err(error)));
                return;
            }
            state.in_flight.insert(
                id_key.clone(),
                CallInFlight {
                    cancel: cancel.clone(),
                    backend: Arc::from(call.backend.name()),
                    started: Instant::now(),
                    number: call.number,
                    reply: reply.clone(),
                },
            );
        }
        let id = id.to_owned();
        let session = self.clone();
        let hub = hub.clone();
        tokio::spawn(async move {
            let outcome = tokio::select! {
                biased;
                _ = cancel.cancelled() => None,
                _ = reply.closed() => None,
                result = call.run(&hub, &session, &reply) => Some(result),
            };
            {
                let mut state = session.lock_state();
                state.in_flight.remove(&id_key);
                if let (Some(Ok(_)), Some(subscription)) = (&outcome, &call.subscription) {
                    subscription.apply(&mut state);
                }
            }
            if let Some(mut recording) = recording {
                recording.decided(call.decision.get().map(String::as_str));
                recording.finish(outcome.as_ref());
            }
            if let Some(result) = outcome {
                let _ = reply.send(response(&id, result));
            }
        });
    }
}

/// Which starting backends a call waits for: those whose prefix its name carries, or, for a
/// call by URI or completion reference, every one.
fn waiting_for<'a>(method: &Method, params: Option<&'a RawValue>) -> Waiting<'a> {
    let name = match method.subject() {
        Some(Subject::Name) => params
            .and_then(|params| ObjectEntries::parse(params.get()).ok())
            .and_then(|entries| entries.get_str(Subject::Name.field())),
        _ => None,
    };
    name.map_or(Waiting::All, Waiting::Owners)
}

fn route_by_name<'c>(
    method: &Method,
    entries: &mut ObjectEntries<'_>,
    kind: &str,
    listed: &'c HashMap<String, Route>,
    unlisted: &'c HashMap<String, Route>,
) -> Result<&'c Route, ErrorObject> {
    let name = entries
        .get_str("name")
        .ok_or_else(|| invalid_params(format!("{method} needs a name")))?;
    let route = listed
        .get(&*name)
        .or_else(|| unlisted.get(&*name))
        .ok_or_else(|| invalid_params(format!("unknown {kind}: {name}")))?;
    entries.set("name", json_string(&route.name));
    Ok(route)
}

impl Session {
    /// For `tasks/get`, `tasks/result`, `tasks/update` and `tasks/cancel`: the backend the task
    /// id names, with the id replaced by the backend's own. An id not sealed to this session, or
    /// of a server its profile does not offer, is an unknown task (see [`ids`]).
    fn route_by_task(
        &self,
        hub: &HubInner,
        method: &Method,
        entries: &mut ObjectEntries<'_>,
    ) -> Result<Arc<str>, ErrorObject> {
        let exposed = entries
            .get_str("taskId")
            .ok_or_else(|| invalid_params(format!("{method} needs a taskId")))?;
        let (backend, id) = hub
            .task_seal
            .open(self.task_owner(), &exposed)
            .filter(|(backend, _)| hub.offers(self.profile(), backend))
            .ok_or_else(|| ids::unknown_task(&exposed))?;
        let backend: Arc<str> = Arc::from(backend);
        let id = json_string(id);
        entries.set("taskId", id);
        Ok(backend)
    }
}

/// For `completion/complete`: the backend owning the prompt or resource in `ref`, with a
/// prompt's name replaced by the backend's own.
fn route_completion(
    catalog: &MergedCatalog,
    entries: &mut ObjectEntries<'_>,
) -> Result<Arc<str>, ErrorObject> {
    let reference = entries
        .get("ref")
        .ok_or_else(|| invalid_params(format!("{} needs a ref", Method::CompletionComplete)))?;
    let mut reference = ObjectEntries::parse(reference.get())
        .map_err(|_| invalid_params("ref must be an object"))?;
    let backend = match reference.get_str("type").as_deref() {
        Some("ref/prompt") => {
            let name = reference
                .get_str("name")
                .ok_or_else(|| invalid_params("ref/prompt needs a name"))?;
            let route = catalog
                .prompts
                .get(&*name)
                .ok_or_else(|| invalid_params(format!("unknown prompt: {name}")))?;
            let backend = route.backend.clone();
            reference.set("name", json_string(&route.name));
            backend
        }
        Some("ref/resource") => {
            let uri = reference
                .get_str("uri")
                .ok_or_else(|| invalid_params("ref/resource needs a uri"))?;
            catalog.resource_owner(&uri).map_err(|no_owner| {
                ErrorObject::new(jsonrpc::RESOURCE_NOT_FOUND, no_owner.to_string())
            })?
        }
        _ => {
            return Err(invalid_params(
                "ref.type must be ref/prompt or ref/resource",
            ));
        }
    };
    entries.set("ref", reference.into_raw());
    Ok(backend)
}

/// For the resource methods: the backend owning `uri`.
fn route_by_uri(
    catalog: &MergedCatalog,
    method: &Method,
    entries: &ObjectEntries<'_>,
) -> Result<Arc<str>, ErrorObject> {
    let uri = entries
        .get_str("uri")
        .ok_or_else(|| invalid_params(format!("{method} needs a uri")))?;
    catalog
        .resource_owner(&uri)
        .map_err(|no_owner| ErrorObject::new(jsonrpc::RESOURCE_NOT_FOUND, no_owner.to_string()))
}

impl Call {
    fn new(hub: &HubInner, method: &Method, params: Option<&RawValue>, routed: RoutedCall) -> Call {
        Call {
            method: method.clone(),
            backend: routed.backend,
            params: routed.params,
            progress: routed.progress,
            subscription: Subscription::of(method, params),
            with_tasks: routed.with_tasks,
            task_plan: routed.task_plan,
            client: routed.client,
            named: routed.named,
            number: hub.next_id.fetch_add(1, Ordering::Relaxed),
            view: routed.view,
            skill_file: routed.skill_file,
            confirm: routed.confirm,
            decision: OnceLock::new(),
        }
    }

    /// Sends the call once the backend is ready, starting it on demand, within its deadline.
    /// Its progress notifications go to `reply` with the client's own token, all before the
    /// answer. A 2026-07-28 backend's `input_required` is put to an editor of the session era
    /// as real requests, and the call retried with the answers.
    async fn run(
        &self,
        hub: &HubInner,
        session: &Session,
        reply: &mpsc::UnboundedSender<Reply>,
    ) -> Result<String, ErrorObject> {
        if let Some(asking) = &self.confirm {
            let waited = approvals::wait_for_yes(hub, session, asking, &self.backend).await;
            let _ = self.decision.set(waited.decision);
            if let Some(denied) = waited.denied {
                return Ok(denied);
            }
        }
        let outcome = match self.run_ready(hub, session, reply).await {
            // The pages a session-era server needs opened, for an editor that cannot open them:
            // the person opens them through Switchboard, and the call is made once more.
            Err(error)
                if error.code == jsonrpc::URL_ELICITATION_REQUIRED
                    && self.person_opened(hub, session, &error).await =>
            {
                self.run_ready(hub, session, reply).await
            }
            outcome => outcome,
        };
        // A remote server that wants a sign-in fails a tool call as a tool error the model can
        // read and pass on, never as its upstream 401.
        match outcome {
            Err(_)
                if self.method == Method::ToolsCall
                    && self.backend.status().state == BackendState::NeedsSignIn =>
            {
                let message =
                    supervisor::unavailable_message(self.backend.name(), BackendState::NeedsSignIn);
                Ok(
                    json!({ "content": [{ "type": "text", "text": message }], "isError": true })
                        .to_string(),
                )
            }
            outcome => outcome,
        }
    }

    async fn run_ready(
        &self,
        hub: &HubInner,
        session: &Session,
        reply: &mpsc::UnboundedSender<Reply>,
    ) -> Result<String, ErrorObject> {
        let deadline = self.backend.config().request_timeout;
        let started = Instant::now();
        ready_backend(&self.backend, deadline).await?;
        if let Some(subscription) = &self.subscription
            && self.backend.is_stateless_era()
        {
            let remaining = deadline.saturating_sub(started.elapsed());
            return subscription
                .over_listen(session, &self.backend, remaining)
                .await;
        }
        let mut params = self.params.clone();
        let mut result = self
            .send(&self.method, &params, deadline, started, reply)
            .await?;
        let mut rounds = 0;
        // Only a server of 2026-07-28 answers `input_required`: a result of another is not
        // searched for it (a scan of every byte of a large result).
        while self.backend.is_stateless_era()
            && input_required(&result)
            && (!self.client.stateless || self.asks_the_person(&result))
        {
            if rounds == MAX_INPUT_ROUNDS {
                return Err(ErrorObject::new(
                    jsonrpc::INTERNAL_ERROR,
                    format!(
                        "backend {} asked for input more than {MAX_INPUT_ROUNDS} times; the call \
                         was ended",
                        self.backend.name()
                    ),
                ));
            }
            rounds += 1;
            params = self.answered(hub, session, reply, &params, &result).await?;
            result = self
                .send(&self.method, &params, deadline, started, reply)
                .await?;
        }
        match self.task_plan {
            TaskPlan::Await => {
                if let Some(task) = bridge::created_task(&result) {
                    let params = raw(&json!({ "taskId": task }));
                    let result = self
                        .send(&Method::TasksResult, &params, deadline, started, reply)
                        .await?;
                    return Ok(bridge::without_related_task(result.get()));
                }
            }
            TaskPlan::Handle => {
                let exposer = hub
                    .task_seal
                    .exposer(session.task_owner(), self.backend.name());
                return bridge::handle(&result, &exposer);
            }
            TaskPlan::Poll if result_type(&result).as_deref() == Some("task") => {
                let polling = Polling {
                    call: self,
                    hub,
                    session,
                    reply,
                    deadline,
                    started,
                };
                return poll::poll(&polling, &result).await;
            }
            TaskPlan::Poll | TaskPlan::AsIs => {}
        }
        if self.with_tasks {
            if self.method == Method::ToolsCall
                && let Some(own) = bridge::created_task(&result)
            {
                let mut state = session.lock_state();
                state.made_tasks.insert(self.backend.name(), &own);
            }
            let exposer = hub
                .task_seal
                .exposer(session.task_owner(), self.backend.name());
            return Ok(exposer.expose_ids(result.get()));
        }
        if let Some((view, exposed)) = &self.view {
            return views::read_result(result.get(), view, exposed).map_err(|not_a_view| {
                ErrorObject::new(
                    jsonrpc::INTERNAL_ERROR,
                    format!(
                        "{exposed}, the view a tool of {} names, is {not_a_view}, not an MCP \
                         App's view ({APP_MIME_TYPE}); it is not passed on",
                        self.backend.name()
                    ),
                )
            });
        }
        if let Some((file, exposed)) = &self.skill_file {
            return skills::read_result(result.get(), file, exposed).map_err(|mismatch| {
                ErrorObject::new(
                    jsonrpc::INTERNAL_ERROR,
                    format!(
                        "{exposed}, a file of a skill of {}, is not passed on: {mismatch}",
                        self.backend.name()
                    ),
                )
            });
        }
        Ok(Box::<str>::from(result).into_string())
    }

    /// Sends `method` (the call's own, or one about its task) with `params` in what is left of
    /// the call's deadline, relaying its progress.
    async fn send(
        &self,
        method: &Method,
        params: &RawValue,
        deadline: Duration,
        started: Instant,
        reply: &mpsc::UnboundedSender<Reply>,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let remaining = deadline.saturating_sub(started.elapsed());
        let (sink, mut progress) = match &self.progress {
            Some(token) => {
                let (sender, progress) = mpsc::unbounded_channel();
                let token_json = json_string(&token.ours).get().to_owned();
                (
                    Some(ProgressSink {
                        token: token_json,
                        sender,
                    }),
                    Some(progress),
                )
            }
            None => (None, None),
        };
        let client = ClientMeta {
            capabilities: self.client.capabilities_json.as_deref(),
            log_level: self.client.log_level.as_deref(),
            call: Some(self.number),
        };
        let call = self
            .backend
            .request_for_client(method, Some(params), remaining, sink, client);
        tokio::pin!(call);
        let result = loop {
            let next_progress = async {
                match progress.as_mut() {
                    Some(progress) => progress.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                result = &mut call => break result,
                Some(params) = next_progress => self.forward_progress(reply, &params),
            }
        };
        // Progress sent before the answer was queued before it too.
        if let Some(progress) = progress.as_mut() {
            while let Ok(params) = progress.try_recv() {
                self.forward_progress(reply, &params);
            }
        }
        result.map_err(|error| error.to_error_object())
    }

    /// Sends a progress notification on with the client's own token.
    fn forward_progress(&self, reply: &mpsc::UnboundedSender<Reply>, params: &RawValue) {
        let Some(token) = &self.progress else { return };
        let Some(params) =
            rewrite::replace_field(params, meta::PROGRESS_TOKEN, token.original.clone())
        else {
            return;
        };
        let progress = Notification {
            method: Method::Progress,
            params: Some(params),
        };
        let _ = reply.send(progress.into());
    }
}

/// A call that polls its server's task (see [`poll`]), with where the call stands.
struct Polling<'a> {
    call: &'a Call,
    hub: &'a HubInner,
    session: &'a Session,
    reply: &'a mpsc::UnboundedSender<Reply>,
    deadline: Duration,
    started: Instant,
}

impl TaskCall for Polling<'_> {
    fn backend(&self) -> &BackendHandle {
        &self.call.backend
    }

    fn deadline(&self) -> Duration {
        self.deadline
    }

    fn left(&self) -> Duration {
        self.deadline.saturating_sub(self.started.elapsed())
    }

    async fn send(&self, method: &Method, params: &RawValue) -> Result<Box<RawValue>, ErrorObject> {
        let (deadline, started) = (self.deadline, self.started);
        self.call
            .send(method, params, deadline, started, self.reply)
            .await
    }

    async fn ask(
        &self,
        method: &Method,
        params: Option<&RawValue>,
    ) -> Result<Box<RawValue>, ErrorObject> {
        self.call
            .ask(self.hub, self.session, self.reply, method, params)
            .await
    }
}

/// A result's `resultType`, if it has one.
fn result_type(result: &RawValue) -> Option<String> {
    ObjectEntries::parse(result.get())
        .ok()?
        .get_str("resultType")
        .map(|kind| kind.into_owned())
}

fn raw(value: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).expect("a JSON value serializes")
}

/// Waits until `backend` is ready (starting it if it is stopped and may start on demand).
pub(super) async fn ready_backend(
    backend: &BackendHandle,
    deadline: Duration,
) -> Result<(), ErrorObject> {
    let status = backend.status();
    let unavailable = |state: BackendState| {
        CallError::Unavailable {
            backend: backend.name().to_owned(),
            state,
        }
        .to_error_object()
    };
    match status.state {
        BackendState::Ready => return Ok(()),
        BackendState::Stopped if backend.config().start_on_demand => {
            return match tokio::time::timeout(deadline, backend.start()).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(error)) => Err(ErrorObject::new(
                    jsonrpc::BACKEND_UNAVAILABLE,
                    error.to_string(),
                )),
                Err(_) => Err(unavailable(BackendState::Starting)),
            };
        }
        BackendState::Starting | BackendState::Backoff => {}
        other => return Err(unavailable(other)),
    }
    let mut watch = backend.watch_status();
    let ready = watch.wait_for(|status| {
        matches!(
            status.state,
            BackendState::Ready | BackendState::Stopped | BackendState::CrashLoop
        )
    });
    match tokio::time::timeout(deadline, ready).await {
        Ok(Ok(status)) if status.state == BackendState::Ready => Ok(()),
        Ok(Ok(status)) => Err(unavailable(status.state)),
        _ => Err(unavailable(backend.status().state)),
    }
}
