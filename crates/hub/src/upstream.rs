//! What backends send on their own, routed to the sessions it concerns: notifications (resource
//! updates, cancellations of their requests, log messages) and requests (sampling, elicitation,
//! roots), which go to the session whose call caused them, under an id of ours.
//!
//! Which call caused a backend's request: the one it was sent during, when the transport tells (a
//! remote server sends it on the stream answering one of our requests); else the one call in
//! flight at that backend; with none in flight, the most recently active editor that can answer
//! it. When calls of several editors are in flight and nothing tells which one the request is
//! for, it is refused rather than shown to a guessed editor. A 2026-07-28 call parked on a
//! backend's question is taken for the cause only when no other call there could be.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard, Weak};
use std::time::Instant;

use serde_json::value::RawValue;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::HubInner;
use super::capabilities::ClientCapabilities;
use super::questions;
use super::reply::{Notification, Reply, Request, SessionEvent};
use super::rewrite::{self, ObjectEntries, json_string};
use super::session::Session;
use super::subscriptions::without_subscription_id;
use super::tasks::held::{self, Answer, ClientTasks};
use config::BackendConfig;
use supervisor::{BackendNotification, ServerRequest};
use wire::jsonrpc::{self, ErrorObject};
use wire::method::Method;

/// A request sent on to a session, waiting for its answer.
pub(super) struct ForwardedRequest {
    session: String,
    reply_to: ReplyTo,
}

/// Who the editor's answer to a request forwarded to it goes to: whoever asked the editor. (Who
/// puts a server's question to a person is [`questions::Asker`].)
pub(super) enum ReplyTo {
    /// A backend of the session era, which sent the request itself.
    Backend(ServerRequest),
    /// The hub, putting a 2026-07-28 backend's `input_required` question to an editor of the
    /// session era.
    Hub(oneshot::Sender<Result<Box<RawValue>, ErrorObject>>),
    /// A task Switchboard holds for a backend of the session era (see [`held`]).
    Task {
        tasks: Arc<ClientTasks>,
        backend: Arc<str>,
        id: String,
    },
}

impl ReplyTo {
    /// Passes the editor's answer on.
    pub(super) fn answer(self, outcome: Result<Box<RawValue>, ErrorObject>) {
        match self {
            ReplyTo::Backend(request) => {
                tokio::spawn(async move {
                    let outcome = outcome.as_deref();
                    let _ = request.connection.respond(&request.id, outcome).await;
                });
            }
            ReplyTo::Hub(waiting) => {
                let _ = waiting.send(outcome);
            }
            ReplyTo::Task { tasks, backend, id } => tasks.complete(&backend, &id, outcome),
        }
    }
}

impl HubInner {
    fn lock_forwarded_requests(&self) -> MutexGuard<'_, HashMap<u64, ForwardedRequest>> {
        self.forwarded_requests
            .lock()
            .expect("forwarded requests lock is never poisoned")
    }

    /// Who waits for the answer to the request `our_id`, if it was sent to `session`;
    /// forgotten once taken.
    pub(super) fn take_forwarded_request(&self, session: &str, our_id: u64) -> Option<ReplyTo> {
        let mut forwarded = self.lock_forwarded_requests();
        match forwarded.get(&our_id) {
            Some(pending) if pending.session == session => {
                forwarded.remove(&our_id).map(|pending| pending.reply_to)
            }
            _ => None,
        }
    }

    /// Sends `method` to `session` under an id of ours, which it returns, on `related` (the
    /// stream of the call it is for) when it is still open, else as a session event; the answer
    /// goes to `reply_to`.
    fn forward(
        &self,
        session: &Session,
        related: Option<&mpsc::UnboundedSender<Reply>>,
        method: &Method,
        params: Option<&RawValue>,
        reply_to: ReplyTo,
    ) -> u64 {
        let our_id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = Request {
            id: our_id,
            method: method.clone(),
            params: params.map(ToOwned::to_owned),
        };
        self.lock_forwarded_requests().insert(
            our_id,
            ForwardedRequest {
                session: session.id().to_owned(),
                reply_to,
            },
        );
        let unsent = match related {
            Some(reply) => reply
                .send(Reply::Request(request))
                .err()
                .and_then(|unsent| unsent.0.into_event()),
            None => Some(SessionEvent::Request(request)),
        };
        if let Some(event) = unsent {
            session.send_event(event);
        }
        our_id
    }

    /// The sessions `backend` asked something that have not answered yet.
    fn asked_by(&self, backend: &str) -> HashSet<String> {
        self.lock_forwarded_requests()
            .values()
            .filter(|pending| match &pending.reply_to {
                ReplyTo::Backend(request) => *request.backend == *backend,
                ReplyTo::Task {
                    backend: of_task, ..
                } => **of_task == *backend,
                ReplyTo::Hub(_) => false,
            })
            .map(|pending| pending.session.clone())
            .collect()
    }

    /// Takes back the request `our_id` sent to an editor, whose answer is no longer wanted, and
    /// tells the editor (`notifications/cancelled`).
    fn withdraw(&self, our_id: u64, reason: &str) {
        let Some(pending) = self.lock_forwarded_requests().remove(&our_id) else {
            return;
        };
        if let Some(session) = self.lock_sessions().get(&pending.session) {
            let params = serde_json::json!({ "requestId": our_id, "reason": reason });
            let params = serde_json::value::to_raw_value(&params).expect("JSON");
            session.send_event(Notification::new(Method::Cancelled, Some(&params)).into());
        }
    }

    /// Sends `method` to `session` (on `related`, the stream of the call it is for) under an
    /// id of ours, and waits for the editor's answer.
    pub(super) async fn ask_session(
        &self,
        session: &Session,
        related: &mpsc::UnboundedSender<Reply>,
        method: &Method,
        params: Option<&RawValue>,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let (waiting, answer) = oneshot::channel();
        self.forward(
            session,
            Some(related),
            method,
            params,
            ReplyTo::Hub(waiting),
        );
        answer.await.unwrap_or_else(|_| {
            Err(ErrorObject::new(
                jsonrpc::INTERNAL_ERROR,
                "the editor session that was asked has closed",
            ))
        })
    }

    /// Answers every request forwarded to `session` with an error: it will not answer them.
    pub(super) fn fail_requests_forwarded_to(&self, session: &str) {
        let abandoned: Vec<ForwardedRequest> = {
            let mut forwarded = self.lock_forwarded_requests();
            let ids: Vec<u64> = forwarded
                .iter()
                .filter(|(_, pending)| pending.session == session)
                .map(|(id, _)| *id)
                .collect();
            ids.into_iter()
                .filter_map(|id| forwarded.remove(&id))
                .collect()
        };
        for pending in abandoned {
            pending.reply_to.answer(Err(ErrorObject::new(
                jsonrpc::INTERNAL_ERROR,
                "the editor session that was asked has closed",
            )));
        }
    }
}

/// Delivers backends' notifications to the sessions they concern.
pub(super) async fn route_notifications(
    hub: Weak<HubInner>,
    mut notifications: broadcast::Receiver<BackendNotification>,
    stop: CancellationToken,
) {
    loop {
        let note = tokio::select! {
            _ = stop.cancelled() => break,
            note = notifications.recv() => note,
        };
        let note = match note {
            Ok(note) => note,
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "notifications from backends were dropped under load"
                );
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => break,
        };
        let Some(hub) = hub.upgrade() else { break };
        route_notification(&hub, &note);
    }
}

fn route_notification(hub: &HubInner, note: &BackendNotification) {
    let params = note.params.as_deref();
    let entries = params.and_then(|params| ObjectEntries::parse(params.get()).ok());
    match note.method {
        // Progress of a call in flight goes straight to its caller (see `Call::run`); what
        // arrives here belongs to no call any more.
        Method::Progress => {}
        Method::ResourcesUpdated => {
            let Some(uri) = entries.as_ref().and_then(|entries| entries.get_str("uri")) else {
                return;
            };
            let unstamped = params.and_then(without_subscription_id);
            let params = unstamped.as_deref().or(params);
            for session in hub.sessions() {
                if session.lock_state().subscriptions.contains(&*uri) {
                    session.send_event(Notification::new(note.method.clone(), params).into());
                }
            }
        }
        Method::ToolsListChanged | Method::PromptsListChanged | Method::ResourcesListChanged => {}
        Method::Cancelled => {
            let Some(request_id) = entries
                .as_ref()
                .and_then(|entries| entries.get("requestId"))
            else {
                return;
            };
            let forwarded = hub.lock_forwarded_requests();
            let found = forwarded
                .iter()
                .find(|(_, pending)| match &pending.reply_to {
                    ReplyTo::Backend(request) => {
                        request.backend == note.backend && request.id.get() == request_id.get()
                    }
                    ReplyTo::Hub(_) | ReplyTo::Task { .. } => false,
                });
            let Some((our_id, pending)) = found else {
                return;
            };
            // Only the id changes: the reason and anything else go to the client as they came.
            let our_id = RawValue::from_string(our_id.to_string()).expect("a number is valid JSON");
            let Some(params) =
                params.and_then(|params| rewrite::replace_field(params, "requestId", our_id))
            else {
                return;
            };
            if let Some(session) = hub.lock_sessions().get(&pending.session) {
                session.send_event(Notification::new(note.method.clone(), Some(&params)).into());
            }
        }
        // A task's news go to the session that made it alone, with the id it was handed.
        Method::TasksStatus => {
            let Some((params, own)) = params.and_then(|params| {
                let own = ObjectEntries::parse(params.get())
                    .ok()?
                    .get_str("taskId")?
                    .into_owned();
                Some((params, own))
            }) else {
                return;
            };
            for session in hub.sessions() {
                let made = session
                    .lock_state()
                    .made_tasks
                    .contains(&note.backend, &own);
                if !made || !hub.offers(session.profile(), &note.backend) {
                    continue;
                }
                let exposed = hub
                    .task_seal
                    .exposer(session.task_owner(), &note.backend)
                    .id(&own);
                if let Some(params) =
                    rewrite::replace_field(params, "taskId", json_string(&exposed))
                {
                    session
                        .send_event(Notification::new(note.method.clone(), Some(&params)).into());
                }
            }
        }
        _ => send_to_concerned(hub, note, params),
    }
}

/// Log messages and anything newer: to the sessions waiting on this backend, else to all whose
/// profile offers it.
fn send_to_concerned(hub: &HubInner, note: &BackendNotification, params: Option<&RawValue>) {
    let sessions: Vec<Session> = hub
        .sessions()
        .into_iter()
        .filter(|session| hub.offers(session.profile(), &note.backend))
        .collect();
    let waiting: Vec<&Session> = sessions
        .iter()
        .filter(|session| {
            session
                .lock_state()
                .in_flight
                .values()
                .any(|call| call.backend == note.backend)
        })
        .collect();
    let targets: Vec<&Session> = if waiting.is_empty() {
        sessions.iter().collect()
    } else {
        waiting
    };
    for session in targets {
        session.send_event(Notification::new(note.method.clone(), params).into());
    }
}

/// Sends backends' requests (sampling, elicitation, roots) to the session best placed to answer.
pub(super) async fn route_server_requests(
    hub: Weak<HubInner>,
    mut requests: mpsc::UnboundedReceiver<ServerRequest>,
    stop: CancellationToken,
) {
    loop {
        let request = tokio::select! {
            _ = stop.cancelled() => break,
            request = requests.recv() => match request {
                Some(request) => request,
                None => break,
            },
        };
        let Some(hub) = hub.upgrade() else { break };
        route_server_request(&hub, request);
    }
}

/// The sessions that may have caused a backend's request.
enum Callers {
    /// The one: the session whose call the request was sent during, or with none in flight, the
    /// session best placed to answer it.
    One(Caller),
    /// Sessions with calls in flight at the backend, when nothing tells which one the request
    /// is for.
    Several(Vec<Caller>),
    /// No session can answer it.
    Nobody,
}

/// A session to ask: during one of its calls at the backend that asks, when there is one.
struct Caller {
    session: Session,
    /// What it did not declare that the request needs, in words.
    missing: Option<&'static str>,
    /// Where the messages of its call go, and its cancellation.
    call: Option<(mpsc::UnboundedSender<Reply>, CancellationToken)>,
}

/// Finds the session that should answer a backend's request, or the sessions that may have
/// caused it.
///
/// When the transport tells during which of our requests the backend asked (a remote server
/// sends it on the stream of that request's POST), the session whose call that request is part
/// of is asked. Otherwise (over stdio nothing in the request says) the callers are the sessions
/// with calls in flight at that backend, but for a 2026-07-28 call parked on a question of that
/// backend: it waits for its editor to come back with the answer to the question it has. If
/// exactly one caller is left, its call caused the request. If several are, the hub cannot tell
/// which, and guessing could show one editor's prompt to another: the backend gets an error
/// instead (see [`Callers::chosen`]); a question the person answers names each of their editors.
/// With none left, the parked calls are the callers: one of them may ask again, and is
/// asked once its editor is back. With no call in flight at all (roots/list after a start, say),
/// any session that declared the capability answers, the most recently active first.
fn find_callers(hub: &HubInner, request: &ServerRequest) -> Callers {
    let lacks = |capabilities: ClientCapabilities| {
        capabilities.lacks(&request.method, request.params.as_deref())
    };
    let asking = hub.asked_by(&request.backend);
    let mut running = Vec::new();
    let mut parked = Vec::new();
    let mut idle: Option<(Instant, Session)> = None;
    for session in hub.sessions() {
        let state = session.lock_state();
        let calls = || {
            state
                .in_flight
                .values()
                .filter(|call| call.backend == request.backend)
        };
        let of = |call: &super::session::CallInFlight| (call.reply.clone(), call.cancel.clone());
        let caused = request
            .call
            .and_then(|number| calls().find(|call| call.number == number))
            .map(of);
        let latest = calls().max_by_key(|call| call.started).map(of);
        let active = state.last_active;
        // A 2026-07-28 request's session is asked only during its call, and decides there
        // what to do with a question it lacks the capability for.
        let missing = if session.is_stateless() {
            None
        } else {
            lacks(state.capabilities)
        };
        drop(state);
        if let Some(call) = caused {
            return Callers::One(Caller {
                session,
                missing,
                call: Some(call),
            });
        }
        match latest {
            Some(call) => {
                let waits = session.is_stateless() && asking.contains(session.id());
                let caller = Caller {
                    session,
                    missing,
                    call: Some(call),
                };
                match waits {
                    true => parked.push(caller),
                    false => running.push(caller),
                }
            }
            None if missing.is_none() && !session.is_stateless() => {
                let active = active.unwrap_or_else(Instant::now);
                if idle.as_ref().is_none_or(|(best, _)| active > *best) {
                    idle = Some((active, session));
                }
            }
            None => {}
        }
    }
    let mut callers = if running.is_empty() { parked } else { running };
    match callers.len() {
        0 => match idle {
            Some((_, session)) => Callers::One(Caller {
                session,
                missing: None,
                call: None,
            }),
            None => Callers::Nobody,
        },
        1 => Callers::One(callers.pop().expect("one caller")),
        _ => Callers::Several(callers),
    }
}

impl Callers {
    /// The session to send `request` to: the one caller. Several are refused, since guessing
    /// could show one editor's prompt to another.
    fn chosen(self, request: &ServerRequest) -> Result<Caller, ErrorObject> {
        match self {
            Callers::One(caller) => Ok(caller),
            Callers::Nobody => Err(ErrorObject::new(
                jsonrpc::METHOD_NOT_FOUND,
                format!(
                    "no connected editor supports {} (asked by backend {})",
                    request.method, request.backend
                ),
            )),
            Callers::Several(callers) => {
                let n = callers.len();
                tracing::warn!(backend = %request.backend, method = %request.method, editors = n,
                    "cannot tell which editor's call caused this request; refusing it");
                Err(ErrorObject::new(
                    jsonrpc::INTERNAL_ERROR,
                    format!(
                        "{n} editors have calls in flight at backend {}, and nothing tells which one {} is for",
                        request.backend, request.method
                    ),
                ))
            }
        }
    }

    /// The callers whose call may be the one the request came during.
    fn calling(&self) -> Vec<&Caller> {
        let callers = match self {
            Callers::One(caller) => std::slice::from_ref(caller),
            Callers::Several(callers) => callers.as_slice(),
            Callers::Nobody => &[],
        };
        callers
            .iter()
            .filter(|caller| caller.call.is_some())
            .collect()
    }
}

/// The caller's session and its call's reply channel, if it can answer `request`.
fn answerable(
    caller: Caller,
    request: &ServerRequest,
) -> Result<(Session, Option<mpsc::UnboundedSender<Reply>>), ErrorObject> {
    match caller.missing {
        None => Ok((caller.session, caller.call.map(|(reply, _)| reply))),
        Some(missing) => Err(ErrorObject::new(
            jsonrpc::METHOD_NOT_FOUND,
            format!(
                "the editor calling backend {} does not support {missing} ({})",
                request.backend, request.method
            ),
        )),
    }
}

fn route_server_request(hub: &Arc<HubInner>, request: ServerRequest) {
    if held::TASK_METHODS.contains(&request.method) {
        answer_task_request(hub, request);
        return;
    }
    let callers = find_callers(hub, &request);
    if request.method == Method::ElicitationCreate
        && let Some(backend) = hub.engine.backend(&request.backend)
    {
        let server = backend.config();
        let editor_can = match &callers {
            Callers::One(caller) => {
                let capabilities = caller.session.lock_state().capabilities;
                caller.missing.is_none() && lacks_nothing(capabilities, &request)
            }
            Callers::Several(_) | Callers::Nobody => false,
        };
        match questions::asker(server.ask, editor_can) {
            questions::Asker::Editor => {}
            questions::Asker::Nobody => {
                respond(request, Err(questions::turned_off(&server.name)));
                return;
            }
            questions::Asker::Switchboard => {
                ask_person(hub, request, server, &callers);
                return;
            }
        }
    }
    let chosen = callers.chosen(&request);
    let (session, related) = match chosen.and_then(|caller| answerable(caller, &request)) {
        Ok(chosen) => chosen,
        Err(error) => {
            respond(request, Err(error));
            return;
        }
    };
    let (method, params) = (request.method.clone(), request.params.clone());
    if let Some((task, params)) = task_of(&method, params.as_deref()) {
        let (id, handle) = match hub.client_tasks.create(&request.backend, task) {
            Ok(created) => created,
            Err(error) => {
                respond(request, Err(error));
                return;
            }
        };
        let reply_to = ReplyTo::Task {
            tasks: hub.client_tasks.clone(),
            backend: request.backend.clone(),
            id: id.clone(),
        };
        let our_id = hub.forward(&session, related.as_ref(), &method, Some(&params), reply_to);
        hub.client_tasks.forwarded(&request.backend, &id, our_id);
        respond(request, Ok(handle));
        return;
    }
    hub.forward(
        &session,
        related.as_ref(),
        &method,
        params.as_deref(),
        ReplyTo::Backend(request),
    );
}

fn lacks_nothing(capabilities: ClientCapabilities, request: &ServerRequest) -> bool {
    capabilities
        .lacks(&request.method, request.params.as_deref())
        .is_none()
}

/// Puts a backend's question to the person instead of an editor (see [`questions`]), and
/// answers the backend with what they say; a question the backend wants run as a task is held
/// as one. The question names the editor whose call it came during, or when that cannot be
/// told, each editor with a call in flight at the backend; it leaves the list when the call it
/// came during ends (when it cannot be told, when all of theirs have).
fn ask_person(
    hub: &Arc<HubInner>,
    request: ServerRequest,
    server: Arc<BackendConfig>,
    callers: &Callers,
) {
    let calling = callers.calling();
    let mut editors: Vec<String> = calling
        .iter()
        .filter_map(|caller| caller.session.client_name())
        .map(|name| name.to_string())
        .collect();
    editors.sort();
    editors.dedup();
    let mut profiles = calling.iter().map(|caller| caller.session.profile());
    let profile = profiles
        .next()
        .filter(|first| profiles.all(|other| other == *first))
        .map(str::to_owned);
    let ended: Vec<CancellationToken> = calling
        .iter()
        .filter_map(|caller| caller.call.as_ref().map(|(_, cancel)| cancel.clone()))
        .collect();
    let (task, params) = match task_of(&request.method, request.params.as_deref()) {
        Some((ttl, params)) => match hub.client_tasks.create(&request.backend, ttl) {
            Ok((id, handle)) => {
                let task = (hub.client_tasks.clone(), request.backend.clone(), id);
                let params = Some(params);
                let connection = request.connection.clone();
                let asked = request.id.clone();
                tokio::spawn(async move {
                    let _ = connection.respond(&asked, Ok(&handle)).await;
                });
                (Some(task), params)
            }
            Err(error) => {
                respond(request, Err(error));
                return;
            }
        },
        None => (None, request.params.clone()),
    };
    let hub = hub.clone();
    tokio::spawn(async move {
        let asked = hub
            .questions
            .ask(&server, editors, profile, params.as_deref());
        let all_ended = async {
            if ended.is_empty() {
                std::future::pending::<()>().await;
            }
            for call in &ended {
                call.cancelled().await;
            }
        };
        let outcome = tokio::select! {
            outcome = asked => outcome,
            () = all_ended => Ok(serde_json::value::to_raw_value(&serde_json::json!({
                "action": "cancel",
                "_meta": { "switchboard/reason": "the editor ended the call the question was for" },
            })).expect("JSON")),
        };
        match task {
            Some((tasks, backend, id)) => tasks.complete(&backend, &id, outcome),
            None => {
                let _ = request
                    .connection
                    .respond(&request.id, outcome.as_deref())
                    .await;
            }
        }
    });
}

/// Answers a backend's request on its connection.
fn respond(request: ServerRequest, outcome: Result<Box<RawValue>, ErrorObject>) {
    tokio::spawn(async move {
        let outcome = outcome.as_deref();
        let _ = request.connection.respond(&request.id, outcome).await;
    });
}

/// For a request a backend asks Switchboard to run as a task: the ttl it asked for, and the
/// params without the `task`. `None` for any other request.
fn task_of(method: &Method, params: Option<&RawValue>) -> Option<(Option<u64>, Box<RawValue>)> {
    if !held::TASK_REQUESTS.contains(method) {
        return None;
    }
    let mut params = ObjectEntries::parse(params?.get()).ok()?;
    let task = params.get("task")?.to_owned();
    params.remove("task");
    let ttl = ObjectEntries::parse(task.get())
        .ok()
        .and_then(|task| task.get("ttl").and_then(|ttl| ttl.get().parse().ok()));
    Some((ttl, params.into_raw()))
}

/// Answers a backend's `tasks/*` about the tasks Switchboard holds for it.
fn answer_task_request(hub: &HubInner, request: ServerRequest) {
    let cancelled = |our_id| hub.withdraw(our_id, "the server cancelled its task");
    match hub.client_tasks.answer(
        &request.backend,
        &request.method,
        request.params.as_deref(),
        cancelled,
    ) {
        Answer::Now(answer) => respond(
            request,
            answer.map(|answer| RawValue::from_string(answer).expect("JSON")),
        ),
        Answer::Wait(wait) => {
            tokio::spawn(async move {
                let answer = wait
                    .result()
                    .await
                    .map(|answer| RawValue::from_string(answer).expect("JSON"));
                let _ = request
                    .connection
                    .respond(&request.id, answer.as_deref())
                    .await;
            });
        }
    }
}
