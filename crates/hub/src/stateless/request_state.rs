//! The `requestState` of a call parked while a 2026-07-28 editor answers what its backend asked
//! (multi-round-trip requests, MRTR).
//!
//! An editor holds the state between its two requests, so it is hostile input: it is sealed
//! with HMAC-SHA256 under a key drawn at random when the hub starts, and bound to the parked
//! call, the request that parked it (method, name or URI, a digest of its arguments) and an
//! expiry. A state from an earlier run of Switchboard fails as a forged one does. Single use is
//! enforced by the parked call itself, which only one retry can take.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use wire::method::Method;

type HmacSha256 = Hmac<Sha256>;

/// The largest state worth opening; a sealed state is under 400 bytes.
const MAX_SEALED_LEN: usize = 4096;

/// How every state Switchboard seals begins; a state without it is a backend's own.
const PREFIX: &str = "sb1.";

/// Whether `state` is one Switchboard sealed (or claims to be), rather than a backend's.
pub(crate) fn is_ours(state: &str) -> bool {
    state.starts_with(PREFIX)
}

/// Seals and opens states under one random key.
pub(crate) struct Sealer {
    key: [u8; 32],
}

/// What a sealed state says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Payload {
    /// The parked call.
    #[serde(rename = "c")]
    call: String,
    #[serde(rename = "m")]
    method: String,
    /// The tool or prompt name, or the resource URI, as the editor sent it.
    #[serde(rename = "t")]
    target: String,
    /// SHA-256 of the arguments in canonical form (keys sorted), hex.
    #[serde(rename = "a")]
    arguments: String,
    /// Unix time in milliseconds after which the state is refused.
    #[serde(rename = "e")]
    expires: u64,
}

/// The request a state must come back with: its method, target and arguments.
#[derive(Debug, Clone)]
pub(crate) struct Binding {
    pub(crate) method: String,
    pub(crate) target: String,
    /// The request's `arguments` as sent; digested only when a state is sealed or opened, which
    /// few requests ever need.
    arguments: Option<Box<str>>,
}

impl Binding {
    /// `arguments` is the request's `arguments` value, if any.
    pub(crate) fn new(method: &Method, target: &str, arguments: Option<&str>) -> Binding {
        Binding {
            method: method.as_str().to_owned(),
            target: target.to_owned(),
            arguments: arguments.map(Box::from),
        }
    }

    /// SHA-256 of the arguments in canonical form (keys sorted), hex: equal JSON with keys in
    /// another order binds alike.
    fn arguments_digest(&self) -> String {
        let canonical = self
            .arguments
            .as_deref()
            .and_then(|text| serde_json::from_str::<Value>(text).ok())
            .map(|value| {
                let mut text = String::new();
                canonical_json(&value, &mut text);
                text
            })
            .unwrap_or_default();
        platform::hex::encode(&Sha256::digest(canonical.as_bytes()))
    }
}

/// Why a state was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    Malformed,
    Forged,
    Expired,
    OtherRequest,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Refusal::Malformed => "requestState is not one Switchboard issued",
            Refusal::Forged => {
                "requestState does not verify: it was altered, or issued before Switchboard \
                 restarted"
            }
            Refusal::Expired => "requestState has expired; send the request again without it",
            Refusal::OtherRequest => {
                "requestState belongs to another request: repeat the original method, name and \
                 arguments"
            }
        })
    }
}

impl Sealer {
    pub(crate) fn new() -> Sealer {
        Sealer {
            key: rand::random(),
        }
    }

    /// The sealed state of `call`, parked by the request `binding`, valid until `expires`
    /// (Unix milliseconds).
    pub(crate) fn seal(&self, call: &str, binding: &Binding, expires: u64) -> String {
        let payload = Payload {
            call: call.to_owned(),
            method: binding.method.clone(),
            target: binding.target.clone(),
            arguments: binding.arguments_digest(),
            expires,
        };
        let payload = serde_json::to_vec(&payload).expect("a payload always serializes");
        let tag = self.mac(&payload).finalize().into_bytes();
        format!(
            "{PREFIX}{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// The parked call `sealed` names, if it verifies, has not expired at `now` (Unix
    /// milliseconds) and came back with the request that parked it.
    pub(crate) fn open(
        &self,
        sealed: &str,
        binding: &Binding,
        now: u64,
    ) -> Result<String, Refusal> {
        if sealed.len() > MAX_SEALED_LEN {
            return Err(Refusal::Malformed);
        }
        let sealed = sealed.strip_prefix(PREFIX).ok_or(Refusal::Malformed)?;
        let (payload, tag) = sealed.split_once('.').ok_or(Refusal::Malformed)?;
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| Refusal::Malformed)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| Refusal::Malformed)?;
        self.mac(&payload)
            .verify_slice(&tag)
            .map_err(|_| Refusal::Forged)?;
        let payload: Payload = serde_json::from_slice(&payload).map_err(|_| Refusal::Malformed)?;
        if now > payload.expires {
            return Err(Refusal::Expired);
        }
        if payload.method != binding.method
            || payload.target != binding.target
            || payload.arguments != binding.arguments_digest()
        {
            return Err(Refusal::OtherRequest);
        }
        Ok(payload.call)
    }

    fn mac(&self, payload: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes a key of any size");
        mac.update(payload);
        mac
    }
}

/// `value` as JSON with every object's keys sorted, so equal values digest alike.
fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (key, value)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical_json(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding() -> Binding {
        Binding::new(
            &Method::ToolsCall,
            "demo__ask",
            Some(r#"{"b":[1,{"y":2,"x":1}],"a":"z"}"#),
        )
    }

    #[test]
    fn a_state_opens_for_its_own_request_only() {
        let sealer = Sealer::new();
        let sealed = sealer.seal("call-7", &binding(), 2_000);
        assert_eq!(sealer.open(&sealed, &binding(), 1_000), Ok("call-7".into()));
        let reordered = Binding::new(
            &Method::ToolsCall,
            "demo__ask",
            Some(r#"{"a":"z","b":[1,{"x":1,"y":2}]}"#),
        );
        assert_eq!(sealer.open(&sealed, &reordered, 1_000), Ok("call-7".into()));

        let other_arguments = Binding::new(&Method::ToolsCall, "demo__ask", Some(r#"{"a":"y"}"#));
        let other_tool = Binding::new(&Method::ToolsCall, "demo__other", None);
        let other_method = Binding::new(&Method::PromptsGet, "demo__ask", None);
        for other in [other_arguments, other_tool, other_method] {
            assert_eq!(
                sealer.open(&sealed, &other, 1_000),
                Err(Refusal::OtherRequest)
            );
        }
        assert_eq!(
            sealer.open(&sealed, &binding(), 2_001),
            Err(Refusal::Expired)
        );
    }

    #[test]
    fn forged_altered_and_foreign_states_are_refused() {
        let sealer = Sealer::new();
        let sealed = sealer.seal("call-7", &binding(), u64::MAX);
        assert!(is_ours(&sealed));
        let (payload, tag) = sealed[PREFIX.len()..].split_once('.').expect("two parts");

        let mut decoded = URL_SAFE_NO_PAD.decode(payload).expect("base64");
        let text = String::from_utf8(decoded.clone()).expect("JSON");
        decoded = text.replace("call-7", "call-8").into_bytes();
        let altered = format!("{PREFIX}{}.{tag}", URL_SAFE_NO_PAD.encode(&decoded));
        assert_eq!(sealer.open(&altered, &binding(), 0), Err(Refusal::Forged));

        let from_another_run = Sealer::new().seal("call-7", &binding(), u64::MAX);
        assert_eq!(
            sealer.open(&from_another_run, &binding(), 0),
            Err(Refusal::Forged)
        );

        let huge = "a".repeat(MAX_SEALED_LEN + 1);
        for garbage in [
            "",
            "sb1.no-dot",
            "sb1.!!.!!",
            "sb1.e30.!!",
            "e30.AAAA",
            huge.as_str(),
        ] {
            assert_eq!(
                sealer.open(garbage, &binding(), 0),
                Err(Refusal::Malformed),
                "{garbage:.20}"
            );
        }
        for untagged in [format!("{PREFIX}{payload}."), format!("{PREFIX}.")] {
            assert_eq!(sealer.open(&untagged, &binding(), 0), Err(Refusal::Forged));
        }
    }
}
