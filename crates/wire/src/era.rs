//! The two eras of MCP: the session era (`initialize`, up to 2025-11-25) and the stateless era
//! (2026-07-28 on), where every request carries its protocol version and the client's
//! capabilities in `params._meta`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

/// The protocol era a backend speaks, or a request is in. The HTTP+SSE transport of 2024-11-05
/// is a transport, not an era: its messages are of the session era.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Era {
    /// The session era (2024-11-05 to 2025-11-25): an `initialize` handshake opens a session,
    /// then requests follow in it.
    Session,
    /// The stateless era (2026-07-28 on): every request carries its protocol version and the
    /// client's capabilities in its `_meta` envelope.
    Stateless,
}

impl std::fmt::Display for Era {
    /// `session` or `stateless`, as the status's JSON names it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Era::Session => "session",
            Era::Stateless => "stateless",
        })
    }
}

/// The stateless revision Switchboard speaks, on both sides.
pub const STATELESS_PROTOCOL_VERSION: &str = "2026-07-28";

/// The session-era versions Switchboard speaks, newest first.
pub const SESSION_PROTOCOL_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The Tasks extension of the stateless era (`tools/call` answered with a task handle, then
/// `tasks/get`, `tasks/update` and `tasks/cancel`), as named in `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The names of the `Mcp-*` HTTP headers, lowercase as HTTP/2 sends them (HTTP/1.1 compares them
/// without case).
pub mod header {
    /// The session of the session era's Streamable HTTP.
    pub const SESSION_ID: &str = "mcp-session-id";
    /// The protocol version a request speaks.
    pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
    /// A 2026-07-28 request's method, mirrored from its body.
    pub const METHOD: &str = "mcp-method";
    /// A 2026-07-28 request's tool or prompt name, or resource URI, mirrored from its body.
    pub const NAME: &str = "mcp-name";
    /// What starts the headers that mirror a tool's arguments (`x-mcp-header`).
    pub const PARAM_PREFIX: &str = "mcp-param-";
}

/// The stateless era's error codes (answered with HTTP 400 over Streamable HTTP).
pub mod code {
    /// An `Mcp-*` header disagrees with the body, or a required one is missing.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability its `_meta` did not declare.
    pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
    /// The request's protocol version is one the server does not speak.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// `params` with `entries` added to its `_meta` (made when absent), each only where `_meta`
/// does not have that key yet; of equal keys in `entries`, the first wins. Every byte of
/// `params` is kept: the new entries go at the start of `_meta`, nothing else is rewritten.
/// `None` when `params` is not a JSON object or its `_meta` is not one.
pub fn add_meta_entries(
    params: Option<&RawValue>,
    entries: &[(&str, &RawValue)],
) -> Option<Box<RawValue>> {
    let Some(params) = params else {
        let meta = meta_entries_text(entries, |_| false, false);
        return Some(raw(format!("{{\"_meta\":{{{meta}}}}}")));
    };
    let text = params.get();
    let fields: BTreeMap<String, &RawValue> = serde_json::from_str(text).ok()?;
    let (object, keys_after) = match fields.get("_meta") {
        Some(meta) => {
            let keys: BTreeMap<String, IgnoredAny> = serde_json::from_str(meta.get()).ok()?;
            let existing = |key: &str| keys.contains_key(key);
            let added = meta_entries_text(entries, existing, !keys.is_empty());
            (meta.get(), added)
        }
        None => {
            let meta = meta_entries_text(entries, |_| false, false);
            let comma = if fields.is_empty() { "" } else { "," };
            (text, format!("\"_meta\":{{{meta}}}{comma}"))
        }
    };
    // `object` is `params` itself or a slice of it: the new text goes right after its `{`.
    let open = object.as_ptr() as usize - text.as_ptr() as usize + object.find('{')? + 1;
    let mut filled = String::with_capacity(text.len() + keys_after.len());
    filled.push_str(&text[..open]);
    filled.push_str(&keys_after);
    filled.push_str(&text[open..]);
    Some(raw(filled))
}

/// `"key":value` for each of `entries` that `existing` does not name, comma-separated, with a
/// trailing comma when `more_follow`, and nothing at all when no entry is left.
fn meta_entries_text(
    entries: &[(&str, &RawValue)],
    existing: impl Fn(&str) -> bool,
    more_follow: bool,
) -> String {
    let mut seen: Vec<&str> = Vec::with_capacity(entries.len());
    let mut text = String::new();
    for (key, value) in entries {
        if existing(key) || seen.contains(key) {
            continue;
        }
        seen.push(key);
        if !text.is_empty() {
            text.push(',');
        }
        text.push_str(&serde_json::to_string(key).expect("a string always serializes"));
        text.push(':');
        text.push_str(value.get());
    }
    if more_follow && !text.is_empty() {
        text.push(',');
    }
    text
}

fn raw(json: String) -> Box<RawValue> {
    RawValue::from_string(json).expect("entries spliced into an object keep it valid JSON")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta;

    fn raw_value(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).expect("valid JSON")
    }

    fn filled(params: Option<&str>) -> Option<String> {
        let version = raw_value(r#""2026-07-28""#);
        let capabilities = raw_value(r#"{"roots":{}}"#);
        let entries = [
            (meta::PROTOCOL_VERSION, &*version),
            (meta::CLIENT_CAPABILITIES, &*capabilities),
        ];
        let params = params.map(raw_value);
        add_meta_entries(params.as_deref(), &entries).map(|json| json.get().to_owned())
    }

    #[test]
    fn entries_go_into_an_existing_meta_and_every_other_byte_is_kept() {
        let params =
            r#"{ "name" : "echo", "_meta" : { "progressToken" : 7 }, "arguments":{"n": 1.50} }"#;
        assert_eq!(
            filled(Some(params)).as_deref(),
            Some(
                r#"{ "name" : "echo", "_meta" : {"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}}, "progressToken" : 7 }, "arguments":{"n": 1.50} }"#
            )
        );
    }

    #[test]
    fn keys_the_caller_gave_are_kept_and_not_repeated() {
        let params = r#"{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}},"cursor":"c"}"#;
        assert_eq!(
            filled(Some(params)).as_deref(),
            Some(
                r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}},"cursor":"c"}"#
            )
        );
        let complete = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"x","io.modelcontextprotocol/clientCapabilities":{}}}"#;
        assert_eq!(filled(Some(complete)).as_deref(), Some(complete));
    }

    #[test]
    fn the_first_of_equal_entries_wins() {
        let ours = raw_value(r#""ours""#);
        let default = raw_value(r#""default""#);
        let entries = [(meta::LOG_LEVEL, &*ours), (meta::LOG_LEVEL, &*default)];
        let params = raw_value("{}");
        let filled = add_meta_entries(Some(&params), &entries).expect("an object");
        assert_eq!(
            filled.get(),
            r#"{"_meta":{"io.modelcontextprotocol/logLevel":"ours"}}"#
        );
    }

    #[test]
    fn a_meta_is_made_when_there_is_none() {
        let expected_meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}}}"#;
        assert_eq!(filled(None), Some(format!("{{{expected_meta}}}")));
        assert_eq!(filled(Some("{ }")), Some(format!("{{{expected_meta} }}")));
        assert_eq!(
            filled(Some(r#"{"cursor" : "abc"}"#)),
            Some(format!(r#"{{{expected_meta},"cursor" : "abc"}}"#))
        );
        assert_eq!(
            filled(Some(r#"{"_meta":{}}"#)),
            Some(format!("{{{expected_meta}}}"))
        );
    }

    #[test]
    fn params_or_a_meta_that_is_not_an_object_are_left_alone() {
        for params in ["[1]", "null", r#"{"_meta":null}"#, r#"{"_meta":[]}"#] {
            assert_eq!(filled(Some(params)), None, "{params}");
        }
    }
}
