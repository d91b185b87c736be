//! The pinned part of a definition, read from the very bytes editors receive.
//!
//! A definition is hashed in a canonical form: whitespace dropped, every object's keys in order,
//! strings and numbers written as `serde_json` writes them. Where `serde_json` cannot read a
//! piece that editors' parsers accept (a number such as `1e400`, a lone surrogate in a string,
//! nesting deeper than its limit), that piece is kept as written instead: it is pinned all the
//! same, and a change to it is a change. Nothing an editor would receive escapes the hash.

use serde_json::value::RawValue;

/// Nesting deeper than this is not followed: the definition cannot be checked, and is held.
const DEPTH_LIMIT: usize = 512;

/// Why a definition cannot be checked (and so is held).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unchecked(pub String);

/// The canonical form of one JSON value (valid JSON text).
pub(crate) fn canonical(value: &RawValue) -> Result<String, Unchecked> {
    let mut reader = Reader {
        bytes: value.get().as_bytes(),
        at: 0,
    };
    let mut out = Vec::with_capacity(value.get().len());
    reader.value(&mut out, 0)?;
    Ok(String::from_utf8(out).expect("the canonical form of UTF-8 text is UTF-8"))
}

/// The canonical text of a JSON string given as written (with its quotes), and the key it sorts
/// by: `serde_json`'s reading and writing of it, or the text as written when it cannot be read.
fn string(raw: &str) -> (String, String) {
    match serde_json::from_str::<String>(raw) {
        Ok(text) => (
            serde_json::to_string(&text).expect("a string serializes"),
            text,
        ),
        Err(_) => (raw.to_owned(), raw.to_owned()),
    }
}

fn number(raw: &str) -> String {
    match serde_json::from_str::<serde_json::Number>(raw) {
        Ok(number) => serde_json::to_string(&number).expect("a number serializes"),
        Err(_) => raw.to_owned(),
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn value(&mut self, out: &mut Vec<u8>, depth: usize) -> Result<(), Unchecked> {
        if depth > DEPTH_LIMIT {
            return Err(Unchecked(format!(
                "it is nested more than {DEPTH_LIMIT} levels deep"
            )));
        }
        self.skip_space();
        match self.peek() {
            Some(b'{') => self.object(out, depth),
            Some(b'[') => self.array(out, depth),
            Some(b'"') => {
                let raw = self.string_span()?;
                out.extend_from_slice(string(raw).0.as_bytes());
                Ok(())
            }
            Some(_) => {
                let start = self.at;
                while self.peek().is_some_and(|byte| {
                    !matches!(byte, b',' | b']' | b'}') && !byte.is_ascii_whitespace()
                }) {
                    self.at += 1;
                }
                let token = self.text(start, self.at)?;
                match token {
                    "true" | "false" | "null" => out.extend_from_slice(token.as_bytes()),
                    number_text => out.extend_from_slice(number(number_text).as_bytes()),
                }
                Ok(())
            }
            None => Err(self.broken()),
        }
    }

    fn object(&mut self, out: &mut Vec<u8>, depth: usize) -> Result<(), Unchecked> {
        self.at += 1;
        let mut members: Vec<(String, String, Vec<u8>)> = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                Some(b'}') => {
                    self.at += 1;
                    break;
                }
                Some(b',') => self.at += 1,
                Some(b'"') => {
                    let (key, sort_key) = string(self.string_span()?);
                    self.skip_space();
                    if self.peek() != Some(b':') {
                        return Err(self.broken());
                    }
                    self.at += 1;
                    let mut value = Vec::new();
                    self.value(&mut value, depth + 1)?;
                    members.push((sort_key, key, value));
                }
                _ => return Err(self.broken()),
            }
        }
        members.sort_by(|a, b| a.0.cmp(&b.0));
        out.push(b'{');
        for (index, (_, key, value)) in members.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            out.extend_from_slice(key.as_bytes());
            out.push(b':');
            out.extend_from_slice(value);
        }
        out.push(b'}');
        Ok(())
    }

    fn array(&mut self, out: &mut Vec<u8>, depth: usize) -> Result<(), Unchecked> {
        self.at += 1;
        out.push(b'[');
        let mut first = true;
        loop {
            self.skip_space();
            match self.peek() {
                Some(b']') => {
                    self.at += 1;
                    break;
                }
                Some(b',') => self.at += 1,
                Some(_) => {
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    self.value(out, depth + 1)?;
                }
                None => return Err(self.broken()),
            }
        }
        out.push(b']');
        Ok(())
    }

    /// A string as written, with its quotes; the reader then stands after it.
    fn string_span(&mut self) -> Result<&str, Unchecked> {
        let start = self.at;
        self.at += 1;
        loop {
            match self.peek() {
                Some(b'"') => {
                    self.at += 1;
                    return self.text(start, self.at);
                }
                Some(b'\\') => self.at += 2,
                Some(_) => self.at += 1,
                None => return Err(self.broken()),
            }
        }
    }

    fn text(&self, start: usize, end: usize) -> Result<&str, Unchecked> {
        self.bytes
            .get(start..end)
            .and_then(|bytes| std::str::from_utf8(bytes).ok())
            .ok_or_else(|| self.broken())
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|byte| byte.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn broken(&self) -> Unchecked {
        Unchecked(format!("it is not JSON at byte {}", self.at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(text: &str) -> Result<String, Unchecked> {
        let raw = RawValue::from_string(text.to_owned()).expect("valid JSON");
        canonical(&raw)
    }

    #[test]
    fn the_canonical_form_is_what_serde_json_writes_where_it_can_read() {
        let text = r#" { "b" : [1.50, 1e2, -0, "\u00e9\/", {"z":null,"a":true}], "a": "x" } "#;
        let value: serde_json::Value = serde_json::from_str(text).expect("JSON");
        let sorted = |value: &serde_json::Value| -> serde_json::Value {
            let text = serde_json::to_string(value).expect("JSON");
            serde_json::from_str(&text).expect("JSON")
        };
        assert_eq!(
            canon(text).expect("canonical"),
            r#"{"a":"x","b":[1.5,100.0,-0.0,"é/",{"a":true,"z":null}]}"#
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&canon(text).expect("canonical"))
                .expect("JSON"),
            sorted(&value)
        );
    }

    #[test]
    fn what_serde_json_cannot_read_is_kept_as_written_and_still_counts() {
        for (text, kept) in [
            (r#"{"n": 1e400}"#, r#"{"n":1e400}"#),
            (r#"{"s": "\udead"}"#, r#"{"s":"\udead"}"#),
            (r#"{"\udead": 1, "a": 2}"#, r#"{"\udead":1,"a":2}"#),
        ] {
            assert_eq!(canon(text).expect("canonical"), kept, "{text}");
        }
        assert_ne!(
            canon(r#"{"n": 1e400}"#).expect("canonical"),
            canon(r#"{"n": 1e401}"#).expect("canonical"),
            "a change to what serde_json cannot read is a change"
        );
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(
            canon(&deep).expect("canonical"),
            deep,
            "deeper than serde_json goes"
        );
        let too_deep = format!("{}1{}", "[".repeat(600), "]".repeat(600));
        assert!(canon(&too_deep).is_err());
    }
}
