//! DPoP (RFC 9449): tokens bound to a key of Switchboard's, each request proven with a fresh
//! proof signed by it, so a token that leaks is useless without the key. Used where the
//! authorization server offers it with ES256; one key per sign-in, kept with its tokens.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};
use sha2::Digest as _;

use super::jws::SigningKey;

/// The signing algorithm Switchboard's DPoP keys use; an authorization server must list it.
pub(super) const DPOP_ALGORITHM: &str = "ES256";

/// A DPoP key and its public JWK.
pub(crate) struct DpopKey {
    key: SigningKey,
    jwk: Value,
    pkcs8: Vec<u8>,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopKey").field("jwk", &self.jwk).finish()
    }
}

impl DpopKey {
    pub(super) fn generate() -> DpopKey {
        let (key, pkcs8) = SigningKey::generate_p256();
        DpopKey::of(key, pkcs8)
    }

    /// A key kept by [`DpopKey::kept`]; `None` if the text is not one.
    pub(super) fn from_kept(text: &str) -> Option<DpopKey> {
        let pkcs8 = URL_SAFE_NO_PAD.decode(text).ok()?;
        let key = SigningKey::from_p256_pkcs8(&pkcs8)?;
        Some(DpopKey::of(key, pkcs8))
    }

    fn of(key: SigningKey, pkcs8: Vec<u8>) -> DpopKey {
        let jwk = key.public_jwk().expect("a P-256 key has a public JWK");
        DpopKey { key, jwk, pkcs8 }
    }

    /// The key as text, to keep with the tokens bound to it.
    pub(super) fn kept(&self) -> String {
        URL_SAFE_NO_PAD.encode(&self.pkcs8)
    }

    /// A fresh proof of a `method` request to `url`: bound to `access_token` when one is sent,
    /// and carrying the server's `nonce` when it asked for one.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &reqwest::Url,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> String {
        let mut target = url.clone();
        target.set_query(None);
        target.set_fragment(None);
        let mut claims = json!({
            "jti": super::random_text(),
            "htm": method,
            "htu": target.as_str(),
            "iat": platform::clock::unix_seconds(std::time::SystemTime::now()),
        });
        if let Some(token) = access_token {
            claims["ath"] = Value::from(URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(token)));
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = Value::from(nonce);
        }
        let mut header = Map::new();
        header.insert("typ".to_owned(), Value::from("dpop+jwt"));
        header.insert("jwk".to_owned(), self.jwk.clone());
        self.key.sign(header, &claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(proof: &str) -> Value {
        let part = proof.split('.').nth(1).expect("claims");
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).expect("base64")).expect("JSON")
    }

    #[test]
    fn each_proof_is_fresh_and_bound_to_the_request_and_token() {
        let key = DpopKey::generate();
        let url = reqwest::Url::parse("https://mcp.example/mcp?x=1#y").expect("a URL");
        let first = claims(&key.proof("POST", &url, Some("token"), Some("n-1")));
        let second = claims(&key.proof("POST", &url, Some("token"), None));
        assert_ne!(first["jti"], second["jti"], "a new jti every time");
        assert_eq!(first["htm"], "POST");
        assert_eq!(
            first["htu"], "https://mcp.example/mcp",
            "no query or fragment"
        );
        assert_eq!(
            first["ath"],
            URL_SAFE_NO_PAD.encode(sha2::Sha256::digest("token"))
        );
        assert_eq!(first["nonce"], "n-1");
        assert!(second.get("nonce").is_none());
        let kept = DpopKey::from_kept(&key.kept()).expect("the key reads back");
        assert_eq!(kept.jwk, key.jwk);
    }
}
