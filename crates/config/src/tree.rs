//! A format-neutral tree of config values that remembers where each key and value starts, so
//! that TOML and the JSON form are checked by the same code and report exact positions.

use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use toml::Spanned;
use toml::de::{DeInteger, DeTable, DeValue};

use super::Format;

pub(super) struct Node {
    /// Byte offset of the value in the file.
    pub(super) offset: usize,
    pub(super) value: NodeValue,
}

/// The payloads that validation reads; other kinds only need a name for error messages.
pub(super) enum NodeValue {
    String(String),
    /// Wide enough for every TOML and JSON integer; the fields that take one check the range.
    Integer(i128),
    Float,
    Boolean(bool),
    Datetime,
    Null,
    Array(Vec<Node>),
    /// Entries in file order; in the JSON form a key may repeat.
    Table(Vec<Entry>),
}

pub(super) struct Entry {
    pub(super) key: String,
    pub(super) key_offset: usize,
    pub(super) value: Node,
}

impl Node {
    /// The kind of value with its article, for messages like "expected a string, found ...".
    pub(super) fn describe(&self, format: Format) -> &'static str {
        match &self.value {
            NodeValue::String(_) => "a string",
            NodeValue::Integer(_) => "an integer",
            NodeValue::Float => "a float",
            NodeValue::Boolean(_) => "a boolean",
            NodeValue::Datetime => "a date-time",
            NodeValue::Null => "null",
            NodeValue::Array(_) => "an array",
            NodeValue::Table(_) => match format {
                Format::Toml => "a table",
                Format::Json => "an object",
            },
        }
    }
}

/// The entries of a parsed TOML table, in file order.
pub(super) fn toml_entries(table: &DeTable<'_>) -> Vec<Entry> {
    let mut entries: Vec<Entry> = table
        .iter()
        .map(|(key, value)| Entry {
            key: key.get_ref().to_string(),
            key_offset: key.span().start,
            value: toml_node(value),
        })
        .collect();
    // The parser keeps keys sorted by name; backends and diagnostics follow the file instead.
    entries.sort_by_key(|entry| entry.key_offset);
    entries
}

fn toml_node(value: &Spanned<DeValue<'_>>) -> Node {
    let node_value = match value.get_ref() {
        DeValue::String(text) => NodeValue::String(text.to_string()),
        DeValue::Integer(integer) => NodeValue::Integer(toml_integer(integer)),
        DeValue::Float(_) => NodeValue::Float,
        DeValue::Boolean(flag) => NodeValue::Boolean(*flag),
        DeValue::Datetime(_) => NodeValue::Datetime,
        DeValue::Array(items) => NodeValue::Array(items.iter().map(toml_node).collect()),
        DeValue::Table(table) => NodeValue::Table(toml_entries(table)),
    };
    Node {
        offset: value.span().start,
        value: node_value,
    }
}

fn toml_integer(integer: &DeInteger<'_>) -> i128 {
    // Digits beyond even i128 are clamped: every field that takes an integer rejects them as
    // out of range anyway.
    i128::from_str_radix(integer.as_str(), integer.radix()).unwrap_or(
        if integer.as_str().starts_with('-') {
            i128::MIN
        } else {
            i128::MAX
        },
    )
}

/// A problem met while reading a JSON value that the syntax check already accepted (for
/// example a lone surrogate escape in a string).
pub(super) struct JsonError {
    pub(super) offset: usize,
    pub(super) message: String,
}

/// One entry of a JSON object, its value left unparsed so that foreign parts of a file
/// (Claude Desktop keeps many other settings) are never looked at.
pub(super) struct JsonEntry<'t> {
    pub(super) key: String,
    pub(super) key_offset: usize,
    pub(super) value: &'t RawValue,
}

/// The entries of `object` in file order, duplicates included; `None` if it is not an object.
///
/// `object` must borrow from `text`, as every `RawValue` parsed from `text` does.
pub(super) fn json_entries<'t>(
    text: &'t str,
    object: &'t RawValue,
) -> Result<Option<Vec<JsonEntry<'t>>>, JsonError> {
    let source = object.get();
    let object_offset = offset_in(text, source);
    if !source.starts_with('{') {
        return Ok(None);
    }
    let OrderedObject(pairs) = serde_json::from_str(source).map_err(|error| JsonError {
        offset: object_offset,
        message: json_error_message(&error),
    })?;
    // Only whitespace and commas separate one value's end from the next key's opening quote,
    // so the first quote after it is where the next key starts.
    let mut cursor = object_offset + 1;
    let mut entries = Vec::with_capacity(pairs.len());
    for (key, value) in pairs {
        let key_offset = cursor
            + text[cursor..]
                .find('"')
                .expect("every key of a JSON object starts with a quote");
        let value_offset = offset_in(text, value.get());
        cursor = value_offset + value.get().len();
        entries.push(JsonEntry {
            key,
            key_offset,
            value,
        });
    }
    Ok(Some(entries))
}

/// The whole tree under `raw`, which must borrow from `text`.
pub(super) fn json_node(text: &str, raw: &RawValue) -> Result<Node, JsonError> {
    let source = raw.get();
    let offset = offset_in(text, source);
    let error = |error: serde_json::Error| JsonError {
        offset,
        message: json_error_message(&error),
    };
    let value = match source.as_bytes().first() {
        Some(b'{') => {
            let entries =
                json_entries(text, raw)?.expect("a JSON value starting with `{` is an object");
            let mut nodes = Vec::with_capacity(entries.len());
            for entry in entries {
                nodes.push(Entry {
                    key: entry.key,
                    key_offset: entry.key_offset,
                    value: json_node(text, entry.value)?,
                });
            }
            NodeValue::Table(nodes)
        }
        Some(b'[') => {
            let items: Vec<&RawValue> = serde_json::from_str(source).map_err(error)?;
            let nodes = items
                .into_iter()
                .map(|item| json_node(text, item))
                .collect::<Result<_, _>>()?;
            NodeValue::Array(nodes)
        }
        Some(b'"') => NodeValue::String(serde_json::from_str(source).map_err(error)?),
        Some(b't' | b'f') => NodeValue::Boolean(serde_json::from_str(source).map_err(error)?),
        Some(b'n') => NodeValue::Null,
        _ => {
            let number: serde_json::Number = serde_json::from_str(source).map_err(error)?;
            match (number.as_i64(), number.as_u64()) {
                (Some(integer), _) => NodeValue::Integer(integer.into()),
                (None, Some(integer)) => NodeValue::Integer(integer.into()),
                (None, None) => NodeValue::Float,
            }
        }
    };
    Ok(Node { offset, value })
}

/// serde_json's message without its " at line L column C", which would be wrong for a value
/// parsed on its own; the caller reports the position in the file instead.
pub(super) fn json_error_message(error: &serde_json::Error) -> String {
    let message = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    match message.strip_suffix(&position) {
        Some(stripped) => stripped.to_owned(),
        None => message,
    }
}

/// Byte offset of `part` within `text`; `part` must be a slice of `text`.
pub(super) fn offset_in(text: &str, part: &str) -> usize {
    let offset = part
        .as_ptr()
        .addr()
        .checked_sub(text.as_ptr().addr())
        .expect("raw JSON values borrow from the text they were parsed from");
    debug_assert!(offset + part.len() <= text.len());
    offset
}

/// A JSON object's entries in file order with duplicates kept, which a map would lose.
struct OrderedObject<'t>(Vec<(String, &'t RawValue)>);

impl<'de> Deserialize<'de> for OrderedObject<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;

        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = OrderedObject<'de>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut pairs = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value: &'de RawValue = map.next_value()?;
                    pairs.push((key, value));
                }
                Ok(OrderedObject(pairs))
            }
        }

        deserializer.deserialize_map(ObjectVisitor)
    }
}
