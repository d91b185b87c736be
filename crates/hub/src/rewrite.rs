//! Rewriting a few fields of a JSON object without re-serializing the others.
//!
//! The hub renames tools and remaps ids inside messages whose other fields it must pass on exactly
//! as they came (ARCHITECTURE.md: payloads pass through as raw JSON). [`ObjectEntries`] reads only
//! the top level of an object into an ordered list of keys and raw values; replacing, adding or
//! removing entries touches only those entries, and [`ObjectEntries::to_json`] copies every other
//! value byte for byte.

use std::borrow::Cow;
use std::fmt;

use serde::Deserializer as _;
use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde_json::value::RawValue;

use wire::meta;

/// The top-level entries of one JSON object, in order, duplicates included.
#[derive(Debug, Clone)]
pub struct ObjectEntries<'a> {
    entries: Vec<(Cow<'a, str>, Cow<'a, RawValue>)>,
}

impl<'a> ObjectEntries<'a> {
    /// Fails when `json` is not a JSON object.
    pub fn parse(json: &'a str) -> Result<ObjectEntries<'a>, serde_json::Error> {
        let mut deserializer = serde_json::Deserializer::from_str(json);
        let entries = deserializer.deserialize_map(EntriesVisitor)?;
        deserializer.end()?;
        Ok(ObjectEntries { entries })
    }

    /// The value of `key`; the last one if the key is given more than once, as serde_json
    /// would read it.
    pub fn get(&self, key: &str) -> Option<&RawValue> {
        self.entries
            .iter()
            .rev()
            .find(|(entry_key, _)| entry_key == key)
            .map(|(_, value)| value.as_ref())
    }

    /// The value of `key` as a string, when it is a JSON string: borrowed from the input when
    /// it has no escapes.
    pub fn get_str(&self, key: &str) -> Option<Cow<'a, str>> {
        let (_, value) = self
            .entries
            .iter()
            .rev()
            .find(|(entry_key, _)| entry_key == key)?;
        let text = match value {
            Cow::Borrowed(raw) => raw.get(),
            Cow::Owned(raw) => {
                return serde_json::from_str::<String>(raw.get())
                    .ok()
                    .map(Cow::Owned);
            }
        };
        let inner = text.strip_prefix('"')?.strip_suffix('"')?;
        if inner.contains('\\') {
            serde_json::from_str::<String>(text).ok().map(Cow::Owned)
        } else {
            // A raw value starting with a quote is a valid JSON string: without a backslash
            // its content is exactly the text between the quotes.
            Some(Cow::Borrowed(inner))
        }
    }

    /// Replaces the value of `key`, keeping its position, or appends it. A key given more than
    /// once is left once, at its first position.
    pub fn set(&mut self, key: &str, value: Box<RawValue>) {
        let Some(first) = self
            .entries
            .iter()
            .position(|(entry_key, _)| entry_key == key)
        else {
            self.entries
                .push((Cow::Owned(key.to_owned()), Cow::Owned(value)));
            return;
        };
        self.entries[first].1 = Cow::Owned(value);
        let mut index = 0;
        self.entries.retain(|(entry_key, _)| {
            let keep = index <= first || entry_key != key;
            index += 1;
            keep
        });
    }

    /// The entries in order, duplicates included.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &RawValue)> {
        self.entries
            .iter()
            .map(|(key, value)| (key.as_ref(), value.as_ref()))
    }

    /// Removes every entry of `key`; whether there was one.
    pub(crate) fn remove(&mut self, key: &str) -> bool {
        let before = self.entries.len();
        self.entries.retain(|(entry_key, _)| entry_key != key);
        self.entries.len() != before
    }

    /// Whether the object has no entries.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The object as compact JSON text, except that each value is copied exactly as it was
    /// (with its own whitespace and number spelling).
    pub fn to_json(&self) -> String {
        let capacity = 2 + self
            .entries
            .iter()
            .map(|(key, value)| key.len() + value.get().len() + 4)
            .sum::<usize>();
        let mut json = Vec::with_capacity(capacity);
        json.push(b'{');
        for (index, (key, value)) in self.entries.iter().enumerate() {
            if index > 0 {
                json.push(b',');
            }
            serde_json::to_writer(&mut json, key.as_ref())
                .expect("writing a string into a Vec cannot fail");
            json.push(b':');
            json.extend_from_slice(value.get().as_bytes());
        }
        json.push(b'}');
        String::from_utf8(json).expect("escaped keys and raw JSON values are UTF-8")
    }

    /// [`ObjectEntries::to_json`] as a raw JSON value.
    pub(crate) fn into_raw(self) -> Box<RawValue> {
        RawValue::from_string(self.to_json()).expect("rewritten objects are valid JSON")
    }
}

/// Convenience: the JSON text of a string.
pub fn json_string(text: &str) -> Box<RawValue> {
    serde_json::value::to_raw_value(text).expect("a string always serializes to JSON")
}

/// `object` with the value of `key` replaced by `value` (or added), every other entry copied
/// byte for byte; `None` when `object` is not a JSON object.
///
/// The hub puts a client's own progress token back into a backend's progress notification, and
/// its own request id into a backend's cancellation, this way.
pub fn replace_field(object: &RawValue, key: &str, value: Box<RawValue>) -> Option<Box<RawValue>> {
    let mut entries = ObjectEntries::parse(object.get()).ok()?;
    entries.set(key, value);
    Some(entries.into_raw())
}

/// In a request's params, replaces the client's progress token (`_meta.progressToken`), only if
/// it sent one, with the JSON string `make_token` gives. Returns that token and the client's own.
pub fn replace_progress_token(
    params: &mut ObjectEntries<'_>,
    make_token: impl FnOnce() -> String,
) -> Option<(String, Box<RawValue>)> {
    let meta = params.get("_meta")?;
    let mut meta_entries = ObjectEntries::parse(meta.get()).ok()?;
    let original = meta_entries.get(meta::PROGRESS_TOKEN)?.to_owned();
    let token = make_token();
    meta_entries.set(meta::PROGRESS_TOKEN, json_string(&token));
    params.set("_meta", meta_entries.into_raw());
    Some((token, original))
}

struct EntriesVisitor;

impl<'de> Visitor<'de> for EntriesVisitor {
    type Value = Vec<(Cow<'de, str>, Cow<'de, RawValue>)>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let value: &'de RawValue = map.next_value()?;
            entries.push((key, Cow::Borrowed(value)));
        }
        Ok(entries)
    }
}

/// A key borrowed from the input when it has no escapes. (`Cow<str>`'s own `Deserialize`
/// always copies.)
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string key")
    }

    fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(key))
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(key.to_owned()))
    }

    fn visit_string<E: de::Error>(self, key: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).expect("valid JSON")
    }

    fn keys<'e>(entries: &'e ObjectEntries<'_>) -> Vec<&'e str> {
        entries
            .entries
            .iter()
            .map(|(key, _)| key.as_ref())
            .collect()
    }

    #[test]
    fn order_and_values_are_kept_byte_for_byte() {
        let json = r#" { "z" : 1.0e3 , "a":12345678901234567890123,
            "m": "\u00e9\n", "n": { "deep" : [ 1 , 2.50 ] , "x":null } , "t":true } "#;
        let entries = ObjectEntries::parse(json).expect("an object");

        assert_eq!(keys(&entries), ["z", "a", "m", "n", "t"]);
        assert_eq!(entries.get("z").map(RawValue::get), Some("1.0e3"));
        assert_eq!(
            entries.get("a").map(RawValue::get),
            Some("12345678901234567890123")
        );
        assert_eq!(
            entries.to_json(),
            r#"{"z":1.0e3,"a":12345678901234567890123,"m":"\u00e9\n","n":{ "deep" : [ 1 , 2.50 ] , "x":null },"t":true}"#
        );
    }

    #[test]
    fn strings_are_borrowed_unless_escaped() {
        let json = r#"{"plain": "read_file", "escaped": "caf\u00e9 \"x\"", "number": 1}"#;
        let entries = ObjectEntries::parse(json).expect("an object");

        assert!(matches!(
            entries.get_str("plain"),
            Some(Cow::Borrowed("read_file"))
        ));
        assert_eq!(
            entries.get_str("escaped"),
            Some(Cow::Owned("caf\u{e9} \"x\"".to_owned()))
        );
        assert_eq!(entries.get_str("number"), None);
        assert_eq!(entries.get_str("absent"), None);
    }

    #[test]
    fn set_replaces_in_place_or_appends() {
        let json = r#"{"name":"fs__read","arguments":{"path" : "/tmp"}}"#;
        let mut entries = ObjectEntries::parse(json).expect("an object");

        entries.set("name", json_string("read"));
        entries.set("_meta", raw(r#"{"progressToken":7}"#));
        assert_eq!(entries.get_str("name").as_deref(), Some("read"));
        assert_eq!(
            entries.to_json(),
            r#"{"name":"read","arguments":{"path" : "/tmp"},"_meta":{"progressToken":7}}"#
        );
    }

    #[test]
    fn duplicate_keys_read_last_and_set_once_at_the_first_place() {
        let json = r#"{"id":1,"x":"a","id":2,"y":0,"id":3}"#;
        let mut entries = ObjectEntries::parse(json).expect("an object");

        assert_eq!(entries.to_json(), json);
        assert_eq!(entries.get("id").map(RawValue::get), Some("3"));
        entries.set("id", raw("\"s-1\""));
        assert_eq!(entries.to_json(), r#"{"id":"s-1","x":"a","y":0}"#);
        assert_eq!(entries.get_str("id").as_deref(), Some("s-1"));
    }

    #[test]
    fn keys_are_escaped_again() {
        let json = r#"{"qu\"ote": 1, "caf\u00e9": 2, "tab\t": 3, "\u2028": 4}"#;
        let entries = ObjectEntries::parse(json).expect("an object");

        assert_eq!(
            keys(&entries),
            ["qu\"ote", "caf\u{e9}", "tab\t", "\u{2028}"]
        );
        assert!(matches!(entries.entries[0].0, Cow::Owned(_)));
        let out = entries.to_json();
        assert_eq!(
            out,
            "{\"qu\\\"ote\":1,\"caf\u{e9}\":2,\"tab\\t\":3,\"\u{2028}\":4}"
        );
        let reread: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
        assert_eq!(reread["tab\t"], 3);
    }

    #[test]
    fn plain_keys_are_borrowed() {
        let entries = ObjectEntries::parse(r#"{"method":"tools/call"}"#).expect("an object");
        assert!(matches!(entries.entries[0].0, Cow::Borrowed("method")));
    }

    #[test]
    fn anything_but_one_object_is_an_error() {
        for json in [
            "[1]",
            "\"text\"",
            "1",
            "null",
            "",
            "{",
            r#"{"a":1} x"#,
            r#"{"a":}"#,
            "{} {}",
        ] {
            assert!(ObjectEntries::parse(json).is_err(), "{json:?}");
        }
        let entries = ObjectEntries::parse(" {} ").expect("an empty object");
        assert_eq!(entries.to_json(), "{}");
    }

    #[test]
    fn replace_field_keeps_every_other_entry_byte_for_byte() {
        let params = raw(r#"{"requestId": "abc", "reason" : "user \"stop\"", "_meta":{"x": 1}}"#);
        let replaced = replace_field(&params, "requestId", raw("17")).expect("an object");
        assert_eq!(
            replaced.get(),
            r#"{"requestId":17,"reason":"user \"stop\"","_meta":{"x": 1}}"#
        );
        assert!(replace_field(&raw("[1]"), "requestId", raw("1")).is_none());
    }

    #[test]
    fn a_progress_token_is_replaced_only_when_the_client_sent_one() {
        let json = r#"{"name":"echo","_meta":{"progressToken" : "c-1","n":[1, 2]},"arguments":{}}"#;
        let mut entries = ObjectEntries::parse(json).expect("an object");
        let (ours, original) =
            replace_progress_token(&mut entries, || "ours-1".to_owned()).expect("a token");
        assert_eq!(ours, "ours-1");
        assert_eq!(original.get(), r#""c-1""#);
        assert_eq!(
            entries.to_json(),
            r#"{"name":"echo","_meta":{"progressToken":"ours-1","n":[1, 2]},"arguments":{}}"#
        );

        for json in [
            r#"{"name":"echo"}"#,
            r#"{"_meta":{"n":1}}"#,
            r#"{"_meta":"c-1"}"#,
        ] {
            let mut entries = ObjectEntries::parse(json).expect("an object");
            let token = replace_progress_token(&mut entries, || unreachable!("no token is made"));
            assert!(token.is_none(), "{json}");
            assert_eq!(entries.to_json(), json);
        }
    }

    #[test]
    fn json_string_escapes() {
        assert_eq!(json_string("a\"b\\c\n").get(), r#""a\"b\\c\n""#);
        assert_eq!(json_string("").get(), r#""""#);
    }
}
