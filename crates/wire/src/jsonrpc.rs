//! The JSON-RPC 2.0 envelope, read without touching the payload.
//!
//! Only `id`, `method`, `params`, `result` and `error` are located; each stays a borrowed slice of
//! the original bytes, so unknown fields and future protocol features pass through untouched.
//! The method is read from its name as the message is parsed, once, and carried as a [`Method`]
//! wherever the parsed message goes.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::method::Method;

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// The backend that owns the request is down, stopping or gone (implementation-defined range).
pub const BACKEND_UNAVAILABLE: i64 = -32001;
/// MCP's code (up to 2025-11-25) for a resource that does not exist. Nothing else uses it.
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// MCP's code (2025-11-25) for "URL elicitation required": the call needs the person to open
/// the URLs its `data.elicitations` name, then to be made again.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;
/// The message was larger than the configured limit.
pub const MESSAGE_TOO_LARGE: i64 = -32003;
/// The request ran past its deadline (implementation-defined range; not -32002, which MCP gives
/// to a missing resource).
pub const REQUEST_TIMEOUT: i64 = -32004;

/// The top-level fields of one JSON-RPC message, borrowed from its bytes.
#[derive(Debug, Deserialize)]
pub struct Envelope<'a> {
    #[serde(borrow, default)]
    pub jsonrpc: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub id: Option<&'a RawValue>,
    /// The message's method, read from its name while the message is parsed.
    #[serde(default)]
    pub method: Option<Method>,
    #[serde(borrow, default)]
    pub params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub error: Option<&'a RawValue>,
}

/// What a message is, judged from its envelope.
#[derive(Debug, PartialEq, Eq)]
pub enum Kind {
    Request,
    Notification,
    Response,
    Invalid,
}

impl<'a> Envelope<'a> {
    /// Parses the envelope of one message. Fails on invalid JSON or a non-object.
    pub fn parse(bytes: &'a [u8]) -> Result<Envelope<'a>, serde_json::Error> {
        serde_json::from_slice(bytes)
    }

    pub fn kind(&self) -> Kind {
        match (
            &self.method,
            self.id,
            self.result.is_some() || self.error.is_some(),
        ) {
            (Some(_), Some(_), false) => Kind::Request,
            (Some(_), None, false) => Kind::Notification,
            (None, Some(_), true) => Kind::Response,
            _ => Kind::Invalid,
        }
    }
}

/// A JSON-RPC error object, as sent on the wire.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    /// Boxed: a JSON value is large, and errors travel in `Result`s on every call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<serde_json::Value>>,
}

impl ErrorObject {
    pub fn new(code: i64, message: impl Into<String>) -> ErrorObject {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }
}

/// Builds `{"jsonrpc":"2.0","id":ID,"method":M,"params":P}` followed by a newline.
pub fn request_line(id: &str, method: &Method, params: Option<&RawValue>) -> Vec<u8> {
    let method = method.as_str();
    let mut line = Vec::with_capacity(64 + method.len() + params.map_or(0, |p| p.get().len()));
    line.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    push_raw(&mut line, id);
    push_method_and_params(&mut line, method, params);
    line
}

/// Builds `{"jsonrpc":"2.0","method":M,"params":P}` followed by a newline.
pub fn notification_line(method: &Method, params: Option<&RawValue>) -> Vec<u8> {
    let method = method.as_str();
    let mut line = Vec::with_capacity(64 + method.len() + params.map_or(0, |p| p.get().len()));
    line.extend_from_slice(b"{\"jsonrpc\":\"2.0\"");
    push_method_and_params(&mut line, method, params);
    line
}

/// Builds a response carrying `result` (raw) for `id` (raw), followed by a newline.
pub fn result_line(id: &RawValue, result: &RawValue) -> Vec<u8> {
    result_text_line(id, result.get())
}

/// [`result_line`] for a result held as JSON text: one the hub made, or a backend's kept as it
/// came, which nothing needs to check again.
pub fn result_text_line(id: &RawValue, result: &str) -> Vec<u8> {
    let mut line = Vec::with_capacity(48 + id.get().len() + result.len());
    line.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    push_raw(&mut line, id.get());
    line.extend_from_slice(b",\"result\":");
    push_raw(&mut line, result);
    line.extend_from_slice(b"}\n");
    line
}

/// A line these builders made, as one JSON text without its newline: what a transport that
/// frames messages its own way (an HTTP body, an SSE event) writes.
pub fn without_newline(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    line
}

/// Builds an error response for `id` (raw; `null` when the request's id is unknown).
pub fn error_line(id: Option<&RawValue>, error: &ErrorObject) -> Vec<u8> {
    let id = id.map_or("null", RawValue::get);
    let error = serde_json::to_string(error).expect("an error object always serializes");
    let mut line = Vec::with_capacity(48 + id.len() + error.len());
    line.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    push_raw(&mut line, id);
    line.extend_from_slice(b",\"error\":");
    line.extend_from_slice(error.as_bytes());
    line.extend_from_slice(b"}\n");
    line
}

fn push_method_and_params(line: &mut Vec<u8>, method: &str, params: Option<&RawValue>) {
    line.extend_from_slice(b",\"method\":");
    serde_json::to_writer(&mut *line, method).expect("writing a string to a Vec cannot fail");
    if let Some(params) = params {
        line.extend_from_slice(b",\"params\":");
        push_raw(line, params.get());
    }
    line.extend_from_slice(b"}\n");
}

/// Appends raw JSON to a line. JSON may hold line breaks only as whitespace between tokens (a
/// pretty-printed body posted over HTTP, say; strings escape theirs), so they become spaces,
/// which mean the same, and the line stays one line for the newline framing of stdio.
fn push_raw(line: &mut Vec<u8>, json: &str) {
    let start = line.len();
    line.extend_from_slice(json.as_bytes());
    if memchr::memchr2(b'\n', b'\r', json.as_bytes()).is_some() {
        for byte in &mut line[start..] {
            if matches!(*byte, b'\n' | b'\r') {
                *byte = b' ';
            }
        }
    }
}

/// Finds the top-level numeric `"id"` in the first bytes of a message too large to parse.
pub fn sniff_numeric_id(head: &[u8]) -> Option<u64> {
    std::str::from_utf8(sniff_id(head)?).ok()?.parse().ok()
}

/// The JSON text of the top-level `"id"` (a number or a string) in the first bytes of a
/// message, when it shows there whole.
///
/// Scans only outside strings and at nesting depth one, so an `"id"` inside the payload is
/// never mistaken for the message's own; a number that runs to the end of `head` may go on
/// beyond it and is not taken, nor is a string whose closing quote is not there yet.
pub fn sniff_id(head: &[u8]) -> Option<&[u8]> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < head.len() {
        match head[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let end = string_end(head, i)?;
                // A string followed by a colon is a key; `"id"` may also be a value.
                if depth == 1
                    && &head[i..=end] == b"\"id\""
                    && let Some(value) = head[end + 1..].trim_ascii_start().strip_prefix(b":")
                {
                    return leading_id(value.trim_ascii_start());
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Finds a numeric `"id"` that closes a message too large to parse (`..., "id":42}`).
pub fn sniff_trailing_numeric_id(tail: &[u8]) -> Option<u64> {
    let rest = tail.trim_ascii_end().strip_suffix(b"}")?.trim_ascii_end();
    let n_digits = rest.iter().rev().take_while(|c| c.is_ascii_digit()).count();
    let (rest, digits) = rest.split_at(rest.len() - n_digits);
    let before_key = rest
        .trim_ascii_end()
        .strip_suffix(b":")?
        .trim_ascii_end()
        .strip_suffix(b"\"id\"")?
        .trim_ascii_end();
    // Only a key starts right after `,` or `{`; after anything else the quote is escaped,
    // inside a longer key.
    if !before_key.ends_with(b",") && !before_key.ends_with(b"{") {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The whole string, or the whole integer (digits ended by what may follow a value), at the
/// start of `value`.
fn leading_id(value: &[u8]) -> Option<&[u8]> {
    if value.first() == Some(&b'"') {
        return string_end(value, 0).map(|end| &value[..=end]);
    }
    let sign = usize::from(value.first() == Some(&b'-'));
    let n_digits = value[sign..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    match value.get(sign + n_digits) {
        Some(b',' | b'}' | b' ' | b'\t' | b'\n' | b'\r') if n_digits > 0 => {
            Some(&value[..sign + n_digits])
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_kinds() {
        let request = br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"x":1}}"#;
        let envelope = Envelope::parse(request).expect("valid JSON");
        assert_eq!(envelope.kind(), Kind::Request);
        assert_eq!(envelope.id.expect("has id").get(), "\"a\"");
        assert_eq!(envelope.params.expect("has params").get(), "{\"x\":1}");

        let note = br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#;
        assert_eq!(
            Envelope::parse(note).expect("valid").kind(),
            Kind::Notification
        );

        let response = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[],"x-new":true}}"#;
        let envelope = Envelope::parse(response).expect("valid");
        assert_eq!(envelope.kind(), Kind::Response);
        assert_eq!(
            envelope.result.expect("has result").get(),
            r#"{"content":[],"x-new":true}"#
        );

        assert_eq!(
            Envelope::parse(br#"{"id":1}"#).expect("valid").kind(),
            Kind::Invalid
        );
        assert!(Envelope::parse(b"[1,2]").is_err());
        assert!(Envelope::parse(b"not json").is_err());
    }

    #[test]
    fn the_method_is_read_as_the_message_is_parsed() {
        let request = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#;
        let envelope = Envelope::parse(request).expect("valid JSON");
        assert_eq!(envelope.method, Some(Method::ToolsCall));
        let escaped = br#"{"jsonrpc":"2.0","method":"notifications\/progress"}"#;
        let envelope = Envelope::parse(escaped).expect("valid JSON");
        assert_eq!(envelope.method, Some(Method::Progress));
        let unknown = br#"{"jsonrpc":"2.0","method":"x/y"}"#;
        let envelope = Envelope::parse(unknown).expect("valid JSON");
        assert_eq!(envelope.method, Some(Method::Other("x/y".to_owned())));
        let null = br#"{"jsonrpc":"2.0","id":1,"method":null,"result":{}}"#;
        let envelope = Envelope::parse(null).expect("valid JSON");
        assert_eq!(envelope.kind(), Kind::Response);
        assert_eq!(envelope.method, None);
        assert!(Envelope::parse(br#"{"method":7}"#).is_err());
    }

    #[test]
    fn lines_carry_raw_payloads_unchanged() {
        let params = RawValue::from_string(r#"{"b": 2, "a" : [1,2]}"#.into()).expect("valid");
        let line = request_line("17", &Method::ToolsCall, Some(&params));
        assert_eq!(
            String::from_utf8(line).expect("utf-8"),
            "{\"jsonrpc\":\"2.0\",\"id\":17,\"method\":\"tools/call\",\"params\":{\"b\": 2, \"a\" : [1,2]}}\n"
        );
        let note = notification_line(&Method::Initialized, None);
        assert_eq!(
            note,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
        );
        let error = error_line(None, &ErrorObject::new(PARSE_ERROR, "bad \"json\""));
        let parsed: serde_json::Value = serde_json::from_slice(&error).expect("valid JSON");
        assert_eq!(parsed["error"]["code"], PARSE_ERROR);
        assert_eq!(parsed["id"], serde_json::Value::Null);
    }

    #[test]
    fn sniffs_the_top_level_id_only() {
        assert_eq!(
            sniff_numeric_id(br#"{"jsonrpc":"2.0","id": 42,"result":{"te"#),
            Some(42)
        );
        assert_eq!(
            sniff_numeric_id(br#"{"result":{"id":5,"text":"\"id\":6"},"id":9,"#),
            Some(9)
        );
        assert_eq!(
            sniff_numeric_id(br#"{"result":{"content":[{"text":"xxxxx"#),
            None
        );
        assert_eq!(sniff_trailing_numeric_id(br#"xxxx"}]},"id":12}"#), Some(12));
        assert_eq!(
            sniff_trailing_numeric_id(br#"xxxx"}]},"id" : 12 }  "#),
            Some(12)
        );
        assert_eq!(sniff_trailing_numeric_id(br#"xxxx"}]},"other":12}"#), None);
    }

    /// Found by the `jsonrpc_envelope` fuzz target: a payload posted over HTTP may be
    /// pretty-printed, and its line breaks must not split the line sent to a backend.
    #[test]
    fn line_breaks_between_tokens_become_spaces() {
        let params = RawValue::from_string("{\r\n  \"name\": \"a\\nb\",\n  \"n\": 1\n}".into())
            .expect("valid JSON");
        let id = RawValue::from_string("[\n7\n]".into()).expect("valid JSON");
        for line in [
            request_line(id.get(), &Method::ToolsCall, Some(&params)),
            notification_line(&Method::Progress, Some(&params)),
            result_line(&id, &params),
            error_line(Some(&id), &ErrorObject::new(INTERNAL_ERROR, "a\nb")),
        ] {
            let text = std::str::from_utf8(&line).expect("UTF-8");
            let body = text.strip_suffix('\n').expect("one line");
            assert!(!body.contains(['\n', '\r']), "{text:?}");
            let parsed: serde_json::Value = serde_json::from_str(body).expect("valid JSON");
            if let Some(params) = parsed.get("params").or(parsed.get("result")) {
                assert_eq!(
                    params["name"], "a\nb",
                    "strings keep their escaped line breaks"
                );
            }
        }
    }

    /// Found by the `jsonrpc_envelope` fuzz target: the first bytes of a message can end inside
    /// its id, and a value or an escaped key can look like `"id"`.
    #[test]
    fn sniffing_never_takes_part_of_another_token_for_the_id() {
        assert_eq!(sniff_numeric_id(br#"{"id":184467440"#), None, "cut short");
        assert_eq!(sniff_numeric_id(br#"{"id":1.5,"result":{}}"#), None);
        assert_eq!(sniff_numeric_id(br#"{"id":1e3,"result":{}}"#), None);
        assert_eq!(sniff_numeric_id(br#"{"id":"12","result":{}}"#), None);
        assert_eq!(
            sniff_id(br#"{"id" : "a \"quoted\" id","method":"#),
            Some(&br#""a \"quoted\" id""#[..])
        );
        assert_eq!(sniff_id(br#"{"id":"cut \"short"#), None);
        assert_eq!(sniff_id(br#"{"id":-4,"method":"#), Some(&b"-4"[..]));
        assert_eq!(sniff_id(br#"{"id":-,"method":"#), None);
        assert_eq!(sniff_id(br#"{"id":null,"method":"#), None);
        assert_eq!(
            sniff_numeric_id(br#"{"jsonrpc":"id","method":"ping","id" : 77 }"#),
            Some(77),
            "a value \"id\" is not the key"
        );
        assert_eq!(sniff_trailing_numeric_id(br#"{"id":1,"a\"id":12}"#), None);
        assert_eq!(
            sniff_trailing_numeric_id(br#"{"id":1,"r":{"id":12}}"#),
            None
        );
        assert_eq!(
            sniff_trailing_numeric_id(br#"{"r":{"id":12},"id":1}"#),
            Some(1)
        );
    }
}
