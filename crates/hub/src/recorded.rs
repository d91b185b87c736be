//! What the hub tells the activity log of each call it routes: taken when the call starts,
//! finished with how it ended. Building a record is a few small copies; the log takes it
//! without waiting (see `activity`).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde_json::value::RawValue;

use super::catalog::Route;
use super::rewrite::ObjectEntries;
use super::session::Session;
use activity::{ActivityLog, Outcome, Record, is_tool_error};
use platform::clock::unix_millis;
use wire::jsonrpc::{self, ErrorObject};
use wire::method::{Method, Subject};

/// What the log keeps of a call's request, read while the call is routed (whose parse of the
/// params it shares).
pub(super) struct Named {
    /// The name the editor used: a tool's or prompt's exposed name, a URI, a task id.
    name: Option<Arc<str>>,
    /// The server's own name of the tool or prompt.
    original: Option<Arc<str>>,
    /// The arguments, when payloads are kept.
    arguments: Option<String>,
    /// The editor's name, as its `clientInfo` said.
    pub(super) client: Option<Arc<str>>,
}

impl Named {
    /// What `log` wants of a call of `method` with params `entries` as the editor sent them;
    /// `None` when it records nothing. A tool's or prompt's names come from its route (see
    /// [`Named::name`]).
    pub(super) fn of(
        log: Option<&ActivityLog>,
        method: &Method,
        entries: &ObjectEntries<'_>,
    ) -> Option<Named> {
        let (enabled, payloads) = log?.wants();
        if !enabled {
            return None;
        }
        // A tool's or prompt's name is the route's, taken once the call is routed.
        let routed = method.subject() == Some(Subject::Name);
        Some(Named {
            name: (!routed).then(|| subject(method, entries)).flatten(),
            original: None,
            arguments: payloads
                .then(|| {
                    entries
                        .get("arguments")
                        .map(|arguments| arguments.get().to_owned())
                })
                .flatten(),
            client: None,
        })
    }

    /// The names of the tool or prompt the call was routed by.
    pub(super) fn name(&mut self, route: &Route) {
        self.name = Some(route.exposed.clone());
        self.original = Some(route.name.clone());
    }
}

/// What the editor named a call of `method` by: the subject of its params ([`Method::subject`]).
fn subject(method: &Method, entries: &ObjectEntries<'_>) -> Option<Arc<str>> {
    let name = entries.get_str(method.subject()?.field())?;
    Some(Arc::from(&*name))
}

/// A call on its way, to be recorded when it ends.
pub(super) struct Recording {
    log: ActivityLog,
    method: Method,
    started: Instant,
    record: Record,
}

impl Recording {
    /// Starts recording a call of `method` by `session` (`request_bytes` of params), named as
    /// `named` says, to `server`.
    pub(super) fn start(
        log: Option<&ActivityLog>,
        session: &Session,
        method: &Method,
        request_bytes: usize,
        server: Option<Arc<str>>,
        named: Named,
    ) -> Option<Recording> {
        Some(Recording {
            log: log?.clone(),
            method: method.clone(),
            started: Instant::now(),
            record: Record {
                at_ms: unix_millis(SystemTime::now()),
                duration_us: 0,
                session: (!session.is_stateless()).then(|| session.shared_id()),
                client: named.client,
                profile: session.shared_profile(),
                server,
                method: method_name(method),
                name: named.name,
                original: named.original,
                outcome: Outcome::Cancelled,
                error_code: None,
                error: None,
                request_bytes: request_bytes as u64,
                response_bytes: 0,
                arguments: named.arguments,
                result: None,
                decision: None,
            },
        })
    }

    /// Records a call no server could take (an unknown name, say) and why.
    pub(super) fn refused(
        log: Option<&ActivityLog>,
        session: &Session,
        method: &Method,
        params: Option<&RawValue>,
        error: &ErrorObject,
    ) {
        let entries = params.and_then(|params| ObjectEntries::parse(params.get()).ok());
        let named = match &entries {
            Some(entries) => Named::of(log, method, entries).map(|mut named| {
                named.name = subject(method, entries);
                named
            }),
            None => log.is_some_and(|log| log.wants().0).then_some(Named {
                name: None,
                original: None,
                arguments: None,
                client: None,
            }),
        };
        let Some(mut named) = named else { return };
        named.client = session.client_name();
        let request_bytes = params.map_or(0, |params| params.get().len());
        if let Some(recording) = Recording::start(log, session, method, request_bytes, None, named)
        {
            recording.finish(Some(&Err(error.clone())));
        }
    }

    /// Notes who decided a call that waited for a person's yes, and after how long.
    pub(super) fn decided(&mut self, decision: Option<&str>) {
        self.record.decision = decision.map(str::to_owned);
    }

    /// Records how the call ended: its answer, or `None` if it was cancelled. Borrowed, so
    /// that the answer goes on to the editor without a copy when the log keeps no payloads.
    pub(super) fn finish(self, outcome: Option<&Result<String, ErrorObject>>) {
        let Recording {
            log,
            method,
            started,
            mut record,
        } = self;
        record.duration_us = started.elapsed().as_micros() as u64;
        match outcome {
            None => {
                record.outcome = Outcome::Cancelled;
                log.record(record);
            }
            Some(Ok(result)) => {
                record.response_bytes = result.len() as u64;
                record.outcome = match method == Method::ToolsCall && is_tool_error(result) {
                    true => Outcome::ToolError,
                    false => Outcome::Result,
                };
                if log.wants().1 {
                    record.result = Some(result.clone());
                }
                log.record(record);
            }
            Some(Err(error)) => {
                record.response_bytes = error.message.len() as u64;
                record.outcome = match error.code {
                    jsonrpc::REQUEST_TIMEOUT => Outcome::Timeout,
                    _ => Outcome::Error,
                };
                record.error_code = Some(error.code);
                record.error = Some(error.message.clone());
                log.record(record);
            }
        }
    }
}

/// The method's name: a constant for the methods Switchboard knows, so that recording one copies
/// nothing.
fn method_name(method: &Method) -> Cow<'static, str> {
    match method.known_name() {
        Some(name) => Cow::Borrowed(name),
        None => Cow::Owned(method.as_str().to_owned()),
    }
}
