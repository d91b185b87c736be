//! What the hub sends an editor, as it travels from the hub to a transport: each message says
//! what it is, so that no transport reads its bytes again to find out. Payloads stay the raw
//! JSON they came as; a message becomes one JSON text only where a transport writes it.

use serde_json::value::RawValue;

use crate::wire::jsonrpc::{self, ErrorObject};
use crate::wire::method::Method;

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
    pub id: u64,
    pub method: Method,
    pub params: Option<Box<RawValue>>,
}

/// A notification for an editor.
pub struct Notification {
    pub method: Method,
    pub params: Option<Box<RawValue>>,
}

/// The answer to an editor's request.
pub struct Response {
    /// The request's id, as the editor wrote it; `null` when it could not be read.
    pub id: Box<RawValue>,
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
    pub fn into_event(self) -> Option<SessionEvent> {
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
    pub fn to_json(&self) -> Vec<u8> {
        let id = self.id.to_string();
        without_newline(jsonrpc::request_line(
            &id,
            self.method.as_str(),
            self.params.as_deref(),
        ))
    }
}

impl Notification {
    pub fn new(method: Method, params: Option<&RawValue>) -> Notification {
        Notification {
            method,
            params: params.map(ToOwned::to_owned),
        }
    }

    pub fn to_json(&self) -> Vec<u8> {
        without_newline(jsonrpc::notification_line(
            self.method.as_str(),
            self.params.as_deref(),
        ))
    }
}

impl Response {
    /// The answer to the request `id`.
    pub fn new(id: &RawValue, outcome: Result<String, ErrorObject>) -> Response {
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
    pub fn error(id: Option<&RawValue>, error: ErrorObject) -> Response {
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
        without_newline(line)
    }
}

/// A line of the stdio framing as JSON text: the transport that writes it adds what it needs.
fn without_newline(mut line: Vec<u8>) -> Vec<u8> {
    line.pop();
    line
}
