//! The JSON-RPC envelope (`crates/wire/src/jsonrpc.rs`): parsing any bytes, the kinds, the id
//! sniffers of oversized messages, and the line builders.
//!
//! Invariants: nothing panics; the kind agrees with the fields; a line built from a parsed id,
//! method and params is one line and parses back to the same raw id, method and params (their
//! line breaks, whitespace between tokens, turned into spaces); a sniffed id is never another id
//! than the one the message carries.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;
use wire::jsonrpc::{self, Envelope, ErrorObject, Kind};
use wire::method::Method;

fuzz_target!(|message: &[u8]| {
    let Ok(envelope) = Envelope::parse(message) else {
        // Oversized lines are sniffed whatever they hold.
        let _ = jsonrpc::sniff_numeric_id(message);
        let _ = jsonrpc::sniff_trailing_numeric_id(message);
        return;
    };
    check_kind(&envelope);
    check_sniffed_ids(message, envelope.id);
    if let Some(id) = envelope.id {
        check_responses(id, message);
    }
    if let Some(method) = &envelope.method {
        check_requests(method, envelope.id, envelope.params);
    }
});

fn check_kind(envelope: &Envelope<'_>) {
    let answers = envelope.result.is_some() || envelope.error.is_some();
    let expected = match (envelope.method.is_some(), envelope.id.is_some(), answers) {
        (true, true, false) => Kind::Request,
        (true, false, false) => Kind::Notification,
        (false, true, true) => Kind::Response,
        _ => Kind::Invalid,
    };
    assert_eq!(envelope.kind(), expected);
}

/// The sniffers read the id of a message too large to parse, from its first or last bytes. On a
/// message that does parse, and on the first bytes of it, they may find nothing, but never
/// another id than the message's own.
fn check_sniffed_ids(message: &[u8], id: Option<&RawValue>) {
    let own = id.and_then(plain_number);
    let head_cuts = [message.len(), message.len() / 2, message.len() / 3];
    for cut in head_cuts {
        let sniffed = jsonrpc::sniff_numeric_id(&message[..cut]);
        assert!(
            sniffed.is_none() || sniffed == own,
            "sniffed id {sniffed:?} from the first {cut} bytes, but the message's id is {:?}",
            id.map(RawValue::get)
        );
        let sniffed = jsonrpc::sniff_id(&message[..cut]);
        assert!(
            sniffed.is_none() || sniffed == id.map(|id| id.get().as_bytes()),
            "sniffed id text {:?} from the first {cut} bytes, but the message's id is {:?}",
            sniffed.map(String::from_utf8_lossy),
            id.map(RawValue::get)
        );
    }
    let sniffed = jsonrpc::sniff_trailing_numeric_id(message);
    assert!(
        sniffed.is_none() || sniffed == own,
        "sniffed id {sniffed:?} from the end, but the message's id is {:?}",
        id.map(RawValue::get)
    );
}

/// A response built for a parsed id carries exactly that id, and the sniffer finds it.
fn check_responses(id: &RawValue, message: &[u8]) {
    let result = RawValue::from_string(r#"{"content":[]}"#.to_owned()).expect("valid JSON");
    let line = jsonrpc::result_line(id, &result);
    let response = parse_line(&line);
    assert_eq!(response.kind(), Kind::Response);
    assert_eq!(response.id.map(RawValue::get), Some(one_line(id).as_str()));
    assert_eq!(response.result.map(RawValue::get), Some(result.get()));
    if let Some(number) = plain_number(id) {
        assert_eq!(jsonrpc::sniff_numeric_id(&line), Some(number));
    }

    let error = ErrorObject::new(
        jsonrpc::INVALID_REQUEST,
        String::from_utf8_lossy(message).into_owned(),
    );
    let line = jsonrpc::error_line(Some(id), &error);
    let response = parse_line(&line);
    assert_eq!(response.kind(), Kind::Response);
    assert_eq!(response.id.map(RawValue::get), Some(one_line(id).as_str()));
    let sent: ErrorObject =
        serde_json::from_str(response.error.expect("an error").get()).expect("an error object");
    assert_eq!(sent, error);
}

/// Requests and notifications built from a parsed method and params carry them unchanged.
fn check_requests(method: &Method, id: Option<&RawValue>, params: Option<&RawValue>) {
    let line = jsonrpc::notification_line(method, params);
    let notification = parse_line(&line);
    assert_eq!(notification.kind(), Kind::Notification);
    assert_eq!(
        notification.method.as_ref().map(Method::as_str),
        Some(method.as_str())
    );
    assert_eq!(
        notification.params.map(RawValue::get),
        params.map(one_line).as_deref()
    );

    if let Some(id) = id {
        let line = jsonrpc::request_line(id.get(), method, params);
        let request = parse_line(&line);
        assert_eq!(request.kind(), Kind::Request);
        assert_eq!(request.id.map(RawValue::get), Some(one_line(id).as_str()));
        assert_eq!(
            request.method.as_ref().map(Method::as_str),
            Some(method.as_str())
        );
        assert_eq!(
            request.params.map(RawValue::get),
            params.map(one_line).as_deref()
        );
    }
}

/// A built line: one JSON object and a newline, nothing else.
fn parse_line(line: &[u8]) -> Envelope<'_> {
    let text = line
        .strip_suffix(b"\n")
        .expect("a line ends with a newline");
    assert!(!text.contains(&b'\n'), "a line holds no other newline");
    Envelope::parse(text).expect("a built line is a valid message")
}

/// Raw JSON as a line carries it: line breaks, which JSON allows only between tokens, as spaces.
fn one_line(json: &RawValue) -> String {
    json.get().replace(['\n', '\r'], " ")
}

/// The id as a number when it is written as plain digits that fit a `u64`.
fn plain_number(id: &RawValue) -> Option<u64> {
    let text = id.get();
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}
