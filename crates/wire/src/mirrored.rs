//! Tool arguments a 2026-07-28 server wants mirrored into `Mcp-Param-*` headers (`x-mcp-header`
//! in a tool's input schema), and how a value is written into a header: what editors send
//! Switchboard (checked in `hub::stateless::headers`) and what Switchboard sends a remote server
//! (`supervisor::remote`).

use base64::Engine as _;
use serde_json::Value;

/// One argument a tool's schema mirrors into a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The header's name after `Mcp-Param-`, lowercased.
    pub header: String,
    /// The chain of `properties` keys from the schema root to the argument.
    pub path: Vec<String>,
}

/// The arguments `tool` (a tool definition) mirrors into headers. Annotations that are not
/// statically reachable from the root through `properties` are not the client's to send, and
/// are left out.
pub fn header_params(tool: &str) -> Vec<HeaderParam> {
    let Ok(tool) = serde_json::from_str::<Value>(tool) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    if let Some(schema) = tool.get("inputSchema") {
        collect(schema, &mut Vec::new(), &mut found);
    }
    found
}

fn collect(schema: &Value, path: &mut Vec<String>, found: &mut Vec<HeaderParam>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, property) in properties {
        path.push(key.clone());
        if let Some(header) = property.get("x-mcp-header").and_then(Value::as_str) {
            found.push(HeaderParam {
                header: header.to_ascii_lowercase(),
                path: path.clone(),
            });
        }
        collect(property, path, found);
        path.pop();
    }
}

/// How `value`, an argument a header mirrors, is written in it: a string as it is, a number or a
/// boolean as its JSON text; `None` for other values, which no header mirrors.
pub fn argument_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(_) | Value::Bool(_) => Some(value.to_string()),
        _ => None,
    }
}

/// `text` as a header value: as it is when it is plain visible ASCII, else `=?base64?…?=`.
pub fn header_safe(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|byte| byte.is_ascii_graphic() || byte == b' ')
        && !text.starts_with(' ')
        && !text.ends_with(' ');
    match plain {
        true => text.to_owned(),
        false => format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(text)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_written_plain_or_in_base64() {
        assert_eq!(header_safe("us-east-1"), "us-east-1");
        assert_eq!(header_safe("Zürich"), "=?base64?WsO8cmljaA==?=");
        assert_eq!(header_safe(" padded"), "=?base64?IHBhZGRlZA==?=");
        assert_eq!(argument_text(&serde_json::json!(42)).as_deref(), Some("42"));
        assert_eq!(
            argument_text(&serde_json::json!(true)).as_deref(),
            Some("true")
        );
        assert_eq!(argument_text(&serde_json::json!({"a": 1})), None);
    }
}
