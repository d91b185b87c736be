//! The multi-round-trip relay: a call whose session-era backend asks the editor something is
//! parked, the editor gets `input_required` with the question and a sealed `requestState`, and
//! its retry answers the backend and resumes the same call.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

use super::request_state::Binding;
use super::{Envelope2026, LOG_LEVELS, stamp};
use crate::answers::server_info;
use crate::capabilities::ClientCapabilities;
use crate::reply::{Reply, Request, SessionEvent, invalid_params};
use crate::rewrite::{ObjectEntries, json_string};
use crate::session::Session;
use crate::{HubInner, MAX_INPUT_ROUNDS, SessionEvents, random_id, response};
use platform::clock::unix_millis;
use wire::era::code;
use wire::jsonrpc::{self, ErrorObject};
use wire::meta;
use wire::method::Method;

/// How long a parked call waits for the editor's retry.
const PARK_TTL: Duration = Duration::from_secs(300);
/// How many calls may be parked at once: each holds a backend's request until it ends.
const MAX_PARKED: usize = 1000;

/// A parked call, waiting for the editor to retry its request with the answers.
pub(crate) struct Parked {
    resume: oneshot::Sender<Resume>,
}

/// The retry of a parked call's request.
struct Resume {
    id: Box<RawValue>,
    reply: mpsc::UnboundedSender<Reply>,
    responses: Option<Box<RawValue>>,
}

/// Starts a call in a session of its own and relays its messages.
pub(super) fn call(
    hub: &Arc<HubInner>,
    request: &Envelope2026<'_>,
    reply: mpsc::UnboundedSender<Reply>,
) {
    let (session, events) = hub.open_session(true, request.profile.clone());
    {
        let mut state = session.lock_state();
        state.capabilities = request.capabilities;
        state.client = request.client.clone();
        state.log_level = request
            .log_level
            .map(|level| json_string(LOG_LEVELS[level]));
    }
    let (inner, messages) = mpsc::unbounded_channel();
    let params = request.forwarded_params();
    if let Some(result) = session.call(hub, request.id, &request.method, Some(&params), &inner) {
        let _ = inner.send(response(request.id, result));
    }
    let binding = request.target().and_then(|target| {
        matches!(
            request.method,
            Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead
        )
        .then(|| {
            let arguments = request.params.get("arguments").map(RawValue::get);
            Binding::new(&request.method, &target, arguments)
        })
    });
    let relay = Relay {
        hub: hub.clone(),
        session,
        events,
        messages,
        capabilities: request.capabilities,
        binding,
        log_level: request.log_level,
        cacheable: request.method == Method::ResourcesRead,
        rounds: 0,
    };
    tokio::spawn(relay.run(request.id.to_owned(), reply));
}

/// Takes the retry of a parked call's request: checks its `requestState` and hands the call
/// the retry's answers and reply.
pub(super) fn resume(
    hub: &Arc<HubInner>,
    request: &Envelope2026<'_>,
    sealed: &str,
    reply: mpsc::UnboundedSender<Reply>,
) -> Result<(), ErrorObject> {
    let target = request
        .target()
        .ok_or_else(|| invalid_params(format!("{} takes no requestState", request.method)))?;
    let arguments = request.params.get("arguments").map(RawValue::get);
    let binding = Binding::new(&request.method, &target, arguments);
    let call = hub
        .sealer
        .open(sealed, &binding, unix_millis(SystemTime::now()))
        .map_err(|refusal| invalid_params(refusal.to_string()))?;
    if call == RERUN {
        let mut again = request.clone();
        again.params.remove("requestState");
        again.params.remove("inputResponses");
        self::call(hub, &again, reply);
        return Ok(());
    }
    let ended = || {
        invalid_params(
            "requestState was already used, or its call has ended (it waited too long, or the \
             server stopped); send the request again without it",
        )
    };
    let parked = hub
        .parked
        .lock()
        .expect("parked calls lock is never poisoned")
        .remove(&call)
        .ok_or_else(ended)?;
    parked
        .resume
        .send(Resume {
            id: request.id.to_owned(),
            reply,
            responses: request.params.get("inputResponses").map(ToOwned::to_owned),
        })
        .map_err(|_| ended())
}

/// Relays one call's messages to the editor's current request, parking the call while the
/// editor answers a question of its backend.
struct Relay {
    hub: Arc<HubInner>,
    session: Session,
    events: SessionEvents,
    messages: mpsc::UnboundedReceiver<Reply>,
    capabilities: ClientCapabilities,
    /// The request a parked call must come back with; `None` for methods that cannot ask.
    binding: Option<Binding>,
    log_level: Option<usize>,
    cacheable: bool,
    rounds: u32,
}

impl Relay {
    async fn run(mut self, mut id: Box<RawValue>, mut reply: mpsc::UnboundedSender<Reply>) {
        loop {
            // Events first: a log message the backend wrote before its answer is routed before
            // the answer arrives, and must go out before it.
            let message = tokio::select! {
                biased;
                _ = reply.closed() => break,
                Some(event) = self.events.recv() => {
                    self.relay_event(event, &reply);
                    continue;
                }
                message = self.messages.recv() => match message {
                    Some(message) => message,
                    None => break,
                },
            };
            match message {
                Reply::Response(response) => {
                    let _ = reply.send(self.final_response(response.outcome, &id));
                    break;
                }
                Reply::Request(question) => match self.ask(question, &id, reply).await {
                    Some((next_id, next_reply)) => {
                        id = next_id;
                        reply = next_reply;
                    }
                    None => break,
                },
                notification @ Reply::Notification(_) => {
                    let _ = reply.send(notification);
                }
            }
        }
        self.session.close();
    }

    /// The backend's answer as the editor's current request's response: its id, the result
    /// stamped, and codes of the session era replaced by this revision's.
    fn final_response(&self, outcome: Result<String, ErrorObject>, id: &RawValue) -> Reply {
        match outcome {
            Ok(result) => response(id, Ok(stamp(&result, self.cacheable))),
            Err(error) if error.code == jsonrpc::URL_ELICITATION_REQUIRED => {
                match self.url_elicitation(&error, id) {
                    Some(asked) => asked,
                    None => response(id, Err(this_revision(error))),
                }
            }
            Err(error) => response(id, Err(this_revision(error))),
        }
    }

    /// A session-era server's "URL elicitation required" (-32042) as this revision puts it:
    /// `input_required` with the URL elicitations, and a sealed state whose retry runs the call
    /// again (nothing is parked: the server ended the call). `None` when the error carries no
    /// elicitations or the request cannot take input.
    fn url_elicitation(&self, error: &ErrorObject, id: &RawValue) -> Option<Reply> {
        let binding = self.binding.as_ref()?;
        let elicitations = error.data.as_ref()?.get("elicitations")?.as_array()?;
        if !self.capabilities.elicitation_url {
            return Some(missing_capability(
                id,
                "URL-mode elicitation",
                &Method::ElicitationCreate,
            ));
        }
        let requests: serde_json::Map<String, serde_json::Value> = elicitations
            .iter()
            .enumerate()
            .map(|(index, elicitation)| {
                let request = serde_json::json!({
                    "method": Method::ElicitationCreate,
                    "params": elicitation,
                });
                (format!("switchboard-url-{index}"), request)
            })
            .collect();
        let expires = unix_millis(SystemTime::now()) + PARK_TTL.as_millis() as u64;
        let result = serde_json::json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": self.hub.sealer.seal(RERUN, binding, expires),
            "_meta": { meta::SERVER_INFO: server_info() },
        });
        Some(response(id, Ok(result.to_string())))
    }

    /// Log messages the request asked for, at or above its level; nothing else of the
    /// session's events concerns a single request.
    fn relay_event(&self, event: SessionEvent, reply: &mpsc::UnboundedSender<Reply>) {
        let Some(minimum) = self.log_level else {
            return;
        };
        let SessionEvent::Notification(notification) = event else {
            return;
        };
        if notification.method != Method::Message {
            return;
        }
        let level = notification
            .params
            .as_deref()
            .and_then(|params| ObjectEntries::parse(params.get()).ok())
            .and_then(|params| params.get_str("level").map(|level| level.into_owned()))
            .and_then(|level| LOG_LEVELS.iter().position(|known| *known == level));
        if level.is_some_and(|level| level >= minimum) {
            let _ = reply.send(Reply::Notification(notification));
        }
    }

    /// Puts a backend's question to the editor as `input_required`, parks the call until the
    /// editor retries, and answers the backend with what the retry brings. Returns the retry's
    /// id and reply, or `None` once the call is over.
    async fn ask(
        &mut self,
        question: Request,
        id: &RawValue,
        reply: mpsc::UnboundedSender<Reply>,
    ) -> Option<(Box<RawValue>, mpsc::UnboundedSender<Reply>)> {
        let Some(binding) = self.binding.clone() else {
            self.refuse(
                &question,
                "the editor's request cannot carry questions (only tools/call, prompts/get and \
                 resources/read can)",
            );
            return Some((id.to_owned(), reply));
        };
        if let Some(missing) = self
            .capabilities
            .lacks(&question.method, question.params.as_deref())
        {
            self.refuse(&question, "the editor did not declare the capability");
            // Roots are context a server asks for on its own schedule (server-everything does
            // after it starts), not input the call needs: the server hears no, the call goes on.
            if question.method == Method::RootsList {
                return Some((id.to_owned(), reply));
            }
            let _ = reply.send(missing_capability(id, missing, &question.method));
            return None;
        }
        let key = format!("switchboard-{}", question.id);
        let input_request = serde_json::json!({
            "method": question.method,
            "params": question.params.as_deref(),
        });
        let (mut id, mut reply) = (id.to_owned(), reply);
        loop {
            if self.rounds >= MAX_INPUT_ROUNDS {
                self.refuse(&question, "the call asked the editor too many times");
                let error = ErrorObject::new(
                    jsonrpc::INTERNAL_ERROR,
                    format!(
                        "the call asked for input more than {MAX_INPUT_ROUNDS} times; it was ended"
                    ),
                );
                let _ = reply.send(response(&id, Err(error)));
                return None;
            }
            self.rounds += 1;
            let call = random_id();
            let (resume, resumed) = oneshot::channel();
            {
                let mut parked = self
                    .hub
                    .parked
                    .lock()
                    .expect("parked calls lock is never poisoned");
                if parked.len() >= MAX_PARKED {
                    drop(parked);
                    self.refuse(&question, "too many calls are waiting for editors' answers");
                    let error = ErrorObject::new(
                        jsonrpc::INTERNAL_ERROR,
                        format!(
                            "{MAX_PARKED} calls are waiting for answers already; this one was ended"
                        ),
                    );
                    let _ = reply.send(response(&id, Err(error)));
                    return None;
                }
                parked.insert(call.clone(), Parked { resume });
            }
            let expires = unix_millis(SystemTime::now()) + PARK_TTL.as_millis() as u64;
            let result = serde_json::json!({
                "resultType": "input_required",
                "inputRequests": { key.clone(): input_request },
                "requestState": self.hub.sealer.seal(&call, &binding, expires),
                "_meta": { meta::SERVER_INFO: server_info() },
            });
            let _ = reply.send(response(&id, Ok(result.to_string())));
            drop(reply);
            let retry = self.wait_for_retry(resumed).await;
            self.hub
                .parked
                .lock()
                .expect("parked calls lock is never poisoned")
                .remove(&call);
            let retry = retry?;
            (id, reply) = (retry.id, retry.reply);
            let answer = retry.responses.as_deref().and_then(|responses| {
                ObjectEntries::parse(responses.get())
                    .ok()?
                    .get(&key)
                    .map(ToOwned::to_owned)
            });
            if let Some(answer) = answer {
                self.answer(&question, Ok(&answer));
                return Some((id, reply));
            }
        }
    }

    /// Waits for the retry of a parked call, while the backend is still on it.
    async fn wait_for_retry(&mut self, resumed: oneshot::Receiver<Resume>) -> Option<Resume> {
        let closed = self.session.call_token();
        tokio::select! {
            retry = resumed => retry.ok(),
            _ = tokio::time::sleep(PARK_TTL) => None,
            _ = closed.cancelled() => None,
        }
    }

    /// Tells the backend its question will not be answered.
    fn refuse(&self, question: &Request, why: &str) {
        let error = ErrorObject::new(
            jsonrpc::INTERNAL_ERROR,
            format!("{} cannot be put to the editor: {why}", question.method),
        );
        self.answer(question, Err(&error));
    }

    fn answer(&self, question: &Request, outcome: Result<&RawValue, &ErrorObject>) {
        if let Some(reply_to) = self
            .hub
            .take_forwarded_request(self.session.id(), question.id)
        {
            reply_to.answer(outcome.map(ToOwned::to_owned).map_err(Clone::clone));
        }
    }
}

/// The call a sealed state names when nothing is parked and its retry runs the call again.
const RERUN: &str = "rerun";

/// A session-era error as this revision gives it: a missing resource is invalid params, and a
/// URL elicitation this request cannot carry is an internal error.
fn this_revision(mut error: ErrorObject) -> ErrorObject {
    error.code = match error.code {
        jsonrpc::RESOURCE_NOT_FOUND => jsonrpc::INVALID_PARAMS,
        jsonrpc::URL_ELICITATION_REQUIRED => jsonrpc::INTERNAL_ERROR,
        other => other,
    };
    error
}

/// The -32021 answer to a request whose backend asked what the editor did not declare.
fn missing_capability(id: &RawValue, missing: &str, method: &Method) -> Reply {
    let required = match method {
        Method::SamplingCreateMessage => serde_json::json!({ "sampling": {} }),
        _ if missing.starts_with("URL") => serde_json::json!({ "elicitation": { "url": {} } }),
        _ => serde_json::json!({ "elicitation": { "form": {} } }),
    };
    let error = ErrorObject {
        code: code::MISSING_CLIENT_CAPABILITY,
        message: format!("the server asked for {missing}, which this request did not declare"),
        data: Some(Box::new(
            serde_json::json!({ "requiredCapabilities": required }),
        )),
    };
    response(id, Err(error))
}
