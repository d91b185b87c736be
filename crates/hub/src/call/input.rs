//! A 2026-07-28 backend's `input_required` during a call: each question put to the editor, or to
//! the person when the editor cannot ask it (see [`questions`]), and the params of the retry.

use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::Call;
use crate::HubInner;
use crate::questions::{self, Asker};
use crate::reply::Reply;
use crate::rewrite::ObjectEntries;
use crate::session::Session;
use wire::jsonrpc::{self, ErrorObject};
use wire::method::Method;

/// Whether a backend's result asks for input (2026-07-28 multi-round-trip requests).
pub(super) fn input_required(result: &RawValue) -> bool {
    result.get().contains("input_required")
        && ObjectEntries::parse(result.get())
            .is_ok_and(|result| result.get_str("resultType").as_deref() == Some("input_required"))
}

impl Call {
    /// Whether a question of a 2026-07-28 backend's `input_required` is one the person answers
    /// through Switchboard: then the hub answers it and retries, even for an editor of
    /// 2026-07-28 (which otherwise answers `input_required` itself).
    pub(super) fn asks_the_person(&self, result: &RawValue) -> bool {
        let Some(asked) = ObjectEntries::parse(result.get())
            .ok()
            .and_then(|result| result.get("inputRequests").map(ToOwned::to_owned))
        else {
            return false;
        };
        let Ok(questions) = ObjectEntries::parse(asked.get()) else {
            return false;
        };
        questions
            .iter()
            .any(|(_, question)| self.for_the_person(question))
    }

    /// Whether one question of an `input_required` is put to the person.
    fn for_the_person(&self, question: &RawValue) -> bool {
        let Ok(question) = ObjectEntries::parse(question.get()) else {
            return false;
        };
        let method = question.get_str("method").map(|name| Method::parse(&name));
        let params = question.get("params");
        let editor_can = self
            .client
            .capabilities
            .lacks(&Method::ElicitationCreate, params)
            .is_none();
        method == Some(Method::ElicitationCreate)
            && questions::asker(self.backend.config().ask, editor_can) == Asker::Switchboard
    }

    /// Puts each question of an `input_required` result to the editor or the person, and returns
    /// the params of the retry: the call's own with the answers and the backend's `requestState`.
    pub(super) async fn answered(
        &self,
        hub: &HubInner,
        session: &Session,
        reply: &mpsc::UnboundedSender<Reply>,
        params: &RawValue,
        result: &RawValue,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let malformed = || {
            ErrorObject::new(
                jsonrpc::INTERNAL_ERROR,
                format!(
                    "backend {} asked for input in a malformed result",
                    self.backend.name()
                ),
            )
        };
        let result = ObjectEntries::parse(result.get()).map_err(|_| malformed())?;
        let mut answers = ObjectEntries::parse("{}").expect("an empty object");
        if let Some(questions) = result.get("inputRequests") {
            let questions = ObjectEntries::parse(questions.get()).map_err(|_| malformed())?;
            for (key, question) in questions.iter() {
                // A 2026-07-28 editor answers its own questions: the retry carries the person's
                // answers alone, and the server asks the rest again, which reaches the editor.
                if self.client.stateless && !self.for_the_person(question) {
                    continue;
                }
                let question = ObjectEntries::parse(question.get()).map_err(|_| malformed())?;
                let method = Method::parse(&question.get_str("method").ok_or_else(malformed)?);
                let answer = self
                    .ask(hub, session, reply, &method, question.get("params"))
                    .await?;
                answers.set(key, answer);
            }
        }
        let mut retry = ObjectEntries::parse(params.get()).map_err(|_| malformed())?;
        retry.set("inputResponses", answers.into_raw());
        match result.get("requestState") {
            Some(state) => retry.set("requestState", state.to_owned()),
            None => {
                retry.remove("requestState");
            }
        }
        Ok(retry.into_raw())
    }

    /// For a session-era server's "URL elicitation required" (`error`): when the person answers
    /// URL questions for this editor (it did not declare URL mode, or the server's `ask` says
    /// so), puts each page to them; whether they accepted every one, so that the call is made
    /// again. `false` leaves the error to the editor.
    pub(super) async fn person_opened(
        &self,
        hub: &HubInner,
        session: &Session,
        error: &ErrorObject,
    ) -> bool {
        let server = self.backend.config();
        let editor_can = self.client.capabilities.elicitation_url;
        if questions::asker(server.ask, editor_can) != Asker::Switchboard {
            return false;
        }
        let Some(pages) = error
            .data
            .as_ref()
            .and_then(|data| data.get("elicitations"))
            .and_then(serde_json::Value::as_array)
            .filter(|pages| !pages.is_empty())
        else {
            return false;
        };
        for page in pages {
            let Ok(params) = serde_json::value::to_raw_value(page) else {
                return false;
            };
            let profile = Some(session.profile().to_owned());
            let answer = hub
                .questions
                .ask(&server, editors_of(session), profile, Some(&params))
                .await;
            let accepted = answer.is_ok_and(|answer| {
                ObjectEntries::parse(answer.get())
                    .is_ok_and(|answer| answer.get_str("action").as_deref() == Some("accept"))
            });
            if !accepted {
                return false;
            }
        }
        true
    }

    /// Puts the backend's question (`method` with `params`) to the editor, or to the person
    /// when it is a question the editor cannot (or the server's `ask` says must not) put; the
    /// answer. Refused when the editor did not declare what it needs and nobody else can ask.
    pub(super) async fn ask(
        &self,
        hub: &HubInner,
        session: &Session,
        reply: &mpsc::UnboundedSender<Reply>,
        method: &Method,
        params: Option<&RawValue>,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let missing = self.client.capabilities.lacks(method, params);
        if *method == Method::ElicitationCreate {
            let server = self.backend.config();
            match questions::asker(server.ask, missing.is_none()) {
                Asker::Editor => {}
                Asker::Nobody => return Err(questions::turned_off(&server.name)),
                Asker::Switchboard => {
                    let profile = Some(session.profile().to_owned());
                    let editors = editors_of(session);
                    return hub.questions.ask(&server, editors, profile, params).await;
                }
            }
        }
        if let Some(missing) = missing {
            return Err(ErrorObject::new(
                jsonrpc::INTERNAL_ERROR,
                format!(
                    "backend {} asked the editor for {missing}, which it did not declare",
                    self.backend.name()
                ),
            ));
        }
        hub.ask_session(session, reply, method, params).await
    }
}

/// The editor of `session`'s call, for a question put to the person during it.
fn editors_of(session: &Session) -> Vec<String> {
    session
        .client_name()
        .map(|name| name.to_string())
        .into_iter()
        .collect()
}
