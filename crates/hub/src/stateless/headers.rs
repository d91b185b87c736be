//! The request headers of 2026-07-28 Streamable HTTP (`MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`, `Mcp-Param-*`), checked against the body they mirror.
//!
//! A gateway may route on these headers, so a header that disagrees with the body is refused
//! (-32020, HTTP 400) rather than trusted. `Mcp-Name` carries the name the editor sees (with
//! the server's prefix); `Mcp-Param-{Name}` mirrors each argument whose schema property is
//! annotated with `x-mcp-header`. Values that are not plain visible ASCII come as
//! `=?base64?…?=`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use wire::era::code::HEADER_MISMATCH;
use wire::jsonrpc::ErrorObject;
use wire::mirrored::HeaderParam;

/// The `Mcp-*` headers of one POST, as they came (values not yet decoded).
#[derive(Debug, Default, Clone)]
pub struct RequestHeaders {
    pub protocol_version: Option<Vec<u8>>,
    pub method: Option<Vec<u8>>,
    pub name: Option<Vec<u8>>,
    /// `Mcp-Param-{Name}`: the name after the prefix, lowercased, and the value.
    pub params: Vec<(String, Vec<u8>)>,
}

/// Checks the `MCP-Protocol-Version` header against the version the body names: a mismatch is
/// told as one (`-32020`) even when the body's version is one Switchboard does not speak.
pub(crate) fn check_version(headers: &RequestHeaders, version: &str) -> Result<(), ErrorObject> {
    expect_equal(
        "MCP-Protocol-Version",
        headers.protocol_version.as_deref(),
        version,
        false,
    )
}

/// Checks `headers` against the request: its version, method, `name` (or `uri`) and, for a
/// tool that mirrors arguments, `arguments`.
pub(crate) fn check(
    headers: &RequestHeaders,
    version: &str,
    method: &str,
    target: Option<&str>,
    mirrored: &[HeaderParam],
    arguments: Option<&Value>,
) -> Result<(), ErrorObject> {
    check_version(headers, version)?;
    expect_equal("Mcp-Method", headers.method.as_deref(), method, false)?;
    if let Some(target) = target {
        expect_equal("Mcp-Name", headers.name.as_deref(), target, true)?;
    }
    for param in mirrored {
        let value = arguments.and_then(|arguments| {
            param
                .path
                .iter()
                .try_fold(arguments, |value, key| value.get(key))
        });
        let sent = headers
            .params
            .iter()
            .find(|(name, _)| *name == param.header)
            .map(|(_, value)| value.as_slice());
        let header = format!("Mcp-Param-{}", param.header);
        match (value, sent) {
            (None | Some(Value::Null), _) => {}
            (Some(_), None) => {
                return Err(mismatch(format!(
                    "{header} is missing; the argument {} it mirrors is in the body",
                    param.path.join(".")
                )));
            }
            (Some(value), Some(sent)) => {
                let sent = decode(&header, sent)?;
                if !same_value(value, &sent) {
                    return Err(mismatch(format!(
                        "{header} does not match the argument {} in the body",
                        param.path.join(".")
                    )));
                }
            }
        }
    }
    Ok(())
}

fn expect_equal(
    header: &str,
    sent: Option<&[u8]>,
    body: &str,
    encoded: bool,
) -> Result<(), ErrorObject> {
    let Some(sent) = sent else {
        return Err(mismatch(format!("the {header} header is missing")));
    };
    let sent = if encoded {
        decode(header, sent)?
    } else {
        plain(header, sent)?.to_owned()
    };
    if sent != body {
        return Err(mismatch(format!(
            "the {header} header ({}) does not match the body ({})",
            wire::echo(&sent),
            wire::echo(body)
        )));
    }
    Ok(())
}

/// A header value in visible ASCII, spaces and tabs, as RFC 9110 allows.
fn plain<'a>(header: &str, value: &'a [u8]) -> Result<&'a str, ErrorObject> {
    let valid = value
        .iter()
        .all(|&byte| byte == b'\t' || (0x20..0x7f).contains(&byte));
    match std::str::from_utf8(value) {
        Ok(text) if valid => Ok(text),
        _ => Err(mismatch(format!(
            "the {header} header has invalid characters"
        ))),
    }
}

/// A header value with its `=?base64?…?=` encoding undone.
fn decode(header: &str, value: &[u8]) -> Result<String, ErrorObject> {
    let text = plain(header, value)?;
    match text
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| mismatch(format!("the {header} header is not valid base64 UTF-8"))),
        None => Ok(text.to_owned()),
    }
}

/// Whether a header's text stands for the argument `value`: a string as is, an integer by its
/// number (`42.0` is 42), a boolean as `true` or `false`.
fn same_value(value: &Value, sent: &str) -> bool {
    match value {
        Value::String(text) => text == sent,
        Value::Bool(flag) => sent == if *flag { "true" } else { "false" },
        Value::Number(number) => sent
            .parse::<f64>()
            .is_ok_and(|sent| number.as_f64() == Some(sent)),
        _ => false,
    }
}

fn mismatch(message: String) -> ErrorObject {
    ErrorObject::new(HEADER_MISMATCH, format!("header mismatch: {message}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::mirrored::header_params;

    fn headers(name: &str, params: &[(&str, &str)]) -> RequestHeaders {
        RequestHeaders {
            protocol_version: Some(b"2026-07-28".to_vec()),
            method: Some(b"tools/call".to_vec()),
            name: Some(name.as_bytes().to_vec()),
            params: params
                .iter()
                .map(|(name, value)| (name.to_string(), value.as_bytes().to_vec()))
                .collect(),
        }
    }

    const TOOL: &str = r#"{"name":"sql","inputSchema":{"type":"object","properties":{
        "region":{"type":"string","x-mcp-header":"Region"},
        "limit":{"type":"integer","x-mcp-header":"Limit"},
        "options":{"type":"object","properties":{"dry":{"type":"boolean","x-mcp-header":"Dry"}}},
        "rows":{"type":"array","items":{"properties":{"id":{"x-mcp-header":"Id"}}}}}}}"#;

    fn check_call(headers: &RequestHeaders, arguments: &str) -> Result<(), ErrorObject> {
        let arguments: Value = serde_json::from_str(arguments).expect("JSON");
        check(
            headers,
            "2026-07-28",
            "tools/call",
            Some("db__sql"),
            &header_params(TOOL),
            Some(&arguments),
        )
    }

    #[test]
    fn annotations_are_found_only_along_properties() {
        let found: Vec<_> = header_params(TOOL)
            .into_iter()
            .map(|param| (param.header, param.path.join(".")))
            .collect();
        assert_eq!(
            found,
            [
                ("region".to_owned(), "region".to_owned()),
                ("limit".to_owned(), "limit".to_owned()),
                ("dry".to_owned(), "options.dry".to_owned()),
            ]
        );
    }

    #[test]
    fn mirrored_arguments_must_match_their_headers() {
        let all = [("region", "us-west1"), ("limit", "42.0"), ("dry", "true")];
        let body = r#"{"region":"us-west1","limit":42,"options":{"dry":true}}"#;
        assert_eq!(check_call(&headers("db__sql", &all), body), Ok(()));

        let wrong = [("region", "eu-west1"), ("limit", "42"), ("dry", "true")];
        let error = check_call(&headers("db__sql", &wrong), body).expect_err("mismatch");
        assert_eq!(error.code, HEADER_MISMATCH);
        assert!(
            error.message.contains("Mcp-Param-region"),
            "{}",
            error.message
        );

        let missing = [("region", "us-west1"), ("limit", "42")];
        let error = check_call(&headers("db__sql", &missing), body).expect_err("missing");
        assert!(error.message.contains("missing"), "{}", error.message);

        let absent_or_null = r#"{"region":"us-west1","limit":null}"#;
        assert_eq!(
            check_call(
                &headers("db__sql", &[("region", "us-west1")]),
                absent_or_null
            ),
            Ok(())
        );
    }

    #[test]
    fn names_and_values_may_come_base64_encoded() {
        let encoded = format!("=?base64?{}?=", STANDARD.encode("Hello, 世界"));
        let params = [("region", encoded.as_str())];
        assert_eq!(
            check_call(&headers("db__sql", &params), r#"{"region":"Hello, 世界"}"#),
            Ok(())
        );
        let name = format!("=?base64?{}?=", STANDARD.encode("db__sql"));
        assert_eq!(check_call(&headers(&name, &[]), "{}"), Ok(()));

        let error = check_call(&headers("=?base64?!!?=", &[]), "{}").expect_err("bad base64");
        assert!(error.message.contains("base64"), "{}", error.message);
        let mut raw = headers("db__sql", &[]);
        raw.name = Some(b"db__sql\n".to_vec());
        let error = check_call(&raw, "{}").expect_err("control character");
        assert!(
            error.message.contains("invalid characters"),
            "{}",
            error.message
        );
    }

    #[test]
    fn standard_headers_must_be_present_and_match() {
        let mut sent = headers("db__other", &[]);
        let error = check_call(&sent, "{}").expect_err("other name");
        assert!(error.message.contains("Mcp-Name"), "{}", error.message);
        sent.name = None;
        assert!(check_call(&sent, "{}").is_err());
        let mut sent = headers("db__sql", &[]);
        sent.method = Some(b"prompts/get".to_vec());
        assert!(check_call(&sent, "{}").is_err());
        let mut sent = headers("db__sql", &[]);
        sent.protocol_version = None;
        let error = check_call(&sent, "{}").expect_err("no version");
        assert!(
            error.message.contains("MCP-Protocol-Version"),
            "{}",
            error.message
        );
    }
}
