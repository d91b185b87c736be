//! What the hub sends an editor, as it travels from the hub to a transport: each message says
//! what it is, so that no transport reads its bytes again to find out. Payloads stay the raw
//! JSON they came as; a message becomes one JSON text only where a transport writes it. With
//! them, the errors any part of the hub answers with, and the ids worth echoing.

use serde_json::value::RawValue;

use super::Inbound;
use wire::jsonrpc::{self, ErrorObject};
use wire::method::Method;

/// One message of a request's reply: the requests and notifications that belong to the request
/// (a backend's question, progress, log messages), then its response, last.
pub enum Reply {
    Request(Request),
    Notification(Notification),
    Response(Response),
}

/// A message for a session that belongs to none of its requests (list changes, resource
/// updates, log messages, a backend's question no call explains). Never a response.
pub enum SessionEvent {
    Request(Request),
    Notification(Notification),
}

/// A request the hub puts to an editor, under an id of its own.
pub struct Request {
    pub(crate) id: u64,
    pub(crate) method: Method,
    pub(crate) params: Option<Box<RawValue>>,
}

/// A notification for an editor.
pub struct Notification {
    pub(crate) method: Method,
    pub(crate) params: Option<Box<RawValue>>,
}

/// The answer to an editor's request.
pub struct Response {
    /// The request's id, as the editor wrote it; `null` when it could not be read.
    pub(crate) id: Box<RawValue>,
    /// The result (JSON text, as the backend wrote it or the hub made it), or the error.
    pub outcome: Result<String, ErrorObject>,
}

impl Reply {
    /// The message as one JSON text, without a newline.
    pub fn to_json(&self) -> Vec<u8> {
        match self {
            Reply::Request(request) => request.to_json(),
            Reply::Notification(notification) => notification.to_json(),
            Reply::Response(response) => response.to_json(),
        }
    }

    /// The message as a session event: a request or a notification whose request's reply has
    /// closed can still reach the session. `None` for a response, which belongs to its request.
    pub(crate) fn into_event(self) -> Option<SessionEvent> {
        match self {
            Reply::Request(request) => Some(SessionEvent::Request(request)),
            Reply::Notification(notification) => Some(SessionEvent::Notification(notification)),
            Reply::Response(_) => None,
        }
    }
}

impl SessionEvent {
    /// The message as one JSON text, without a newline.
    pub fn to_json(&self) -> Vec<u8> {
        match self {
            SessionEvent::Request(request) => request.to_json(),
            SessionEvent::Notification(notification) => notification.to_json(),
        }
    }
}

impl From<SessionEvent> for Reply {
    fn from(event: SessionEvent) -> Reply {
        match event {
            SessionEvent::Request(request) => Reply::Request(request),
            SessionEvent::Notification(notification) => Reply::Notification(notification),
        }
    }
}

impl From<Notification> for Reply {
    fn from(notification: Notification) -> Reply {
        Reply::Notification(notification)
    }
}

impl From<Notification> for SessionEvent {
    fn from(notification: Notification) -> SessionEvent {
        SessionEvent::Notification(notification)
    }
}

impl Request {
    pub(crate) fn to_json(&self) -> Vec<u8> {
        let id = self.id.to_string();
        jsonrpc::without_newline(jsonrpc::request_line(
            &id,
            &self.method,
            self.params.as_deref(),
        ))
    }
}

impl Notification {
    pub(crate) fn new(method: Method, params: Option<&RawValue>) -> Notification {
        Notification {
            method,
            params: params.map(ToOwned::to_owned),
        }
    }

    pub(crate) fn to_json(&self) -> Vec<u8> {
        jsonrpc::without_newline(jsonrpc::notification_line(
            &self.method,
            self.params.as_deref(),
        ))
    }
}

impl Response {
    /// The answer to the request `id`.
    pub(crate) fn new(id: &RawValue, outcome: Result<String, ErrorObject>) -> Response {
        Response {
            id: id.to_owned(),
            outcome,
        }
    }

    /// The answer to a message that is not JSON.
    pub fn parse_error(error: &serde_json::Error) -> Response {
        let error = ErrorObject::new(jsonrpc::PARSE_ERROR, format!("parse error: {error}"));
        Response::error(None, error)
    }

    /// The error answering a message whose id could not be read (or was not one to echo).
    pub(crate) fn error(id: Option<&RawValue>, error: ErrorObject) -> Response {
        let id = match id {
            Some(id) => id.to_owned(),
            None => RawValue::from_string("null".to_owned()).expect("null is JSON"),
        };
        Response {
            id,
            outcome: Err(error),
        }
    }

    /// The error's code, when the request failed.
    pub fn error_code(&self) -> Option<i64> {
        self.outcome.as_ref().err().map(|error| error.code)
    }

    pub fn to_json(&self) -> Vec<u8> {
        let line = match &self.outcome {
            Ok(result) => jsonrpc::result_text_line(&self.id, result),
            Err(error) => jsonrpc::error_line(Some(&self.id), error),
        };
        jsonrpc::without_newline(line)
    }
}

/// The error for params a request cannot be taken with.
pub(super) fn invalid_params(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(jsonrpc::INVALID_PARAMS, message)
}

/// A request id worth echoing: a string or a number.
pub(super) fn valid_id(id: Option<&RawValue>) -> Option<&RawValue> {
    id.filter(|id| {
        let text = id.get();
        text.starts_with('"')
            || text.starts_with('-')
            || text.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// The answer to a message that cannot be taken: this error response.
pub(super) fn rejected(id: Option<&RawValue>, error: ErrorObject) -> Inbound {
    Inbound::Rejected(Response::error(id, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_carries_its_result_exactly_as_it_came() {
        let id = RawValue::from_string("\"a\"".to_owned()).expect("JSON");
        let result = r#"{"total": 1.50, "huge": 1e400, "x-new": {}}"#;
        let response = Response::new(&id, Ok(result.to_owned()));
        assert_eq!(response.error_code(), None);
        assert_eq!(
            String::from_utf8(response.to_json()).expect("UTF-8"),
            format!(r#"{{"jsonrpc":"2.0","id":"a","result":{result}}}"#)
        );
    }

    #[test]
    fn a_refusal_without_an_id_answers_null_and_names_its_code() {
        let refused = Response::error(None, ErrorObject::new(jsonrpc::INVALID_REQUEST, "no"));
        assert_eq!(refused.error_code(), Some(jsonrpc::INVALID_REQUEST));
        let value: serde_json::Value = serde_json::from_slice(&refused.to_json()).expect("JSON");
        assert_eq!(value["id"], serde_json::Value::Null);
        assert_eq!(value["error"]["code"], jsonrpc::INVALID_REQUEST);
    }

    #[test]
    fn what_a_closed_reply_could_not_take_goes_on_as_an_event_unless_it_is_the_response() {
        let asked = Reply::Request(Request {
            id: 7,
            method: Method::RootsList,
            params: None,
        });
        let event = asked.into_event().expect("a request is an event");
        assert_eq!(
            String::from_utf8(event.to_json()).expect("UTF-8"),
            format!(
                r#"{{"jsonrpc":"2.0","id":7,"method":"{}"}}"#,
                Method::RootsList.as_str()
            )
        );
        let id = RawValue::from_string("1".to_owned()).expect("JSON");
        let answered = Reply::Response(Response::new(&id, Ok("{}".to_owned())));
        assert!(answered.into_event().is_none());
    }
}
