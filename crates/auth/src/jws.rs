//! Signed JSON Web Tokens (RFC 7515's compact form) from the keys sign-in holds: a client's
//! private key, for its assertions (`private_key_jwt`, RFC 7523), and Switchboard's own key for
//! DPoP proofs (RFC 9449).

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _, RsaKeyPair};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Map, Value, json};

/// A private key that signs JWTs.
pub(super) enum SigningKey {
    /// ES256 (P-256) or ES384 (P-384).
    Ecdsa {
        pair: EcdsaKeyPair,
        algorithm: &'static str,
    },
    /// RS256.
    Rsa(RsaKeyPair),
    /// EdDSA (Ed25519).
    Ed25519(Ed25519KeyPair),
}

/// Why a private key cannot sign. It never quotes the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error(
        "the private key is not PEM (`-----BEGIN PRIVATE KEY-----` … `-----END PRIVATE \
         KEY-----`)"
    )]
    NotPem,
    /// A PEM block (`label` is what its `BEGIN` line names) of no key Switchboard signs with.
    #[error(
        "the private key ({label}) is not an EC P-256 or P-384, RSA or Ed25519 key \
         Switchboard can sign with"
    )]
    Unsupported { label: String },
}

impl SigningKey {
    /// Reads a PEM private key: PKCS#8 (`BEGIN PRIVATE KEY`) of an EC (P-256 or P-384), RSA or
    /// Ed25519 key, or SEC 1 (`BEGIN EC PRIVATE KEY`).
    pub(super) fn from_pem(pem: &str) -> Result<SigningKey, KeyError> {
        let (label, der) = pem_block(pem).ok_or(KeyError::NotPem)?;
        let curves: [(&'static signature::EcdsaSigningAlgorithm, &'static str); 2] = [
            (&signature::ECDSA_P256_SHA256_FIXED_SIGNING, "ES256"),
            (&signature::ECDSA_P384_SHA384_FIXED_SIGNING, "ES384"),
        ];
        let key = match label.as_str() {
            "PRIVATE KEY" => curves
                .iter()
                .find_map(|&(curve, algorithm)| {
                    let pair = EcdsaKeyPair::from_pkcs8(curve, &der).ok()?;
                    Some(SigningKey::Ecdsa { pair, algorithm })
                })
                .or_else(|| RsaKeyPair::from_pkcs8(&der).ok().map(SigningKey::Rsa))
                .or_else(|| {
                    Ed25519KeyPair::from_pkcs8_maybe_unchecked(&der)
                        .ok()
                        .map(SigningKey::Ed25519)
                }),
            "EC PRIVATE KEY" => curves.iter().find_map(|&(curve, algorithm)| {
                let pair = EcdsaKeyPair::from_private_key_der(curve, &der).ok()?;
                Some(SigningKey::Ecdsa { pair, algorithm })
            }),
            _ => None,
        };
        key.ok_or(KeyError::Unsupported { label })
    }

    /// A new P-256 key, and its PKCS#8 form to keep.
    pub(super) fn generate_p256() -> (SigningKey, Vec<u8>) {
        let curve = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(curve, &SystemRandom::new())
            .expect("the system can make a P-256 key");
        let pair = EcdsaKeyPair::from_pkcs8(curve, pkcs8.as_ref())
            .expect("a key just made is a valid key");
        (
            SigningKey::Ecdsa {
                pair,
                algorithm: "ES256",
            },
            pkcs8.as_ref().to_vec(),
        )
    }

    /// A P-256 key kept as PKCS#8 by [`SigningKey::generate_p256`].
    pub(super) fn from_p256_pkcs8(pkcs8: &[u8]) -> Option<SigningKey> {
        let pair =
            EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8).ok()?;
        Some(SigningKey::Ecdsa {
            pair,
            algorithm: "ES256",
        })
    }

    /// The JWS `alg` of this key.
    pub(super) fn algorithm(&self) -> &'static str {
        match self {
            SigningKey::Ecdsa { algorithm, .. } => algorithm,
            SigningKey::Rsa(_) => "RS256",
            SigningKey::Ed25519(_) => "EdDSA",
        }
    }

    /// The public half as a JWK (RFC 7517), for the `jwk` header of a DPoP proof: EC keys only,
    /// the only kind Switchboard makes.
    pub(super) fn public_jwk(&self) -> Option<Value> {
        let SigningKey::Ecdsa { pair, algorithm } = self else {
            return None;
        };
        // An uncompressed point: 0x04, then x and y of equal length.
        let point = pair.public_key().as_ref();
        let coordinates = point.strip_prefix(&[0x04_u8])?;
        let (x, y) = coordinates.split_at(coordinates.len() / 2);
        let curve = match *algorithm {
            "ES256" => "P-256",
            _ => "P-384",
        };
        Some(json!({
            "kty": "EC",
            "crv": curve,
            "x": URL_SAFE_NO_PAD.encode(x),
            "y": URL_SAFE_NO_PAD.encode(y),
        }))
    }

    /// A compact JWT of `claims` whose header has `alg`, then `extra` (`typ`, `jwk`…).
    pub(super) fn sign(&self, extra: Map<String, Value>, claims: &Value) -> String {
        let mut header = Map::new();
        header.insert("alg".to_owned(), Value::from(self.algorithm()));
        header.extend(extra);
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(Value::Object(header).to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = match self {
            SigningKey::Ecdsa { pair, .. } => pair
                .sign(&SystemRandom::new(), input.as_bytes())
                .expect("a valid key signs")
                .as_ref()
                .to_vec(),
            SigningKey::Rsa(pair) => {
                let mut signature = vec![0; pair.public_modulus_len()];
                pair.sign(
                    &signature::RSA_PKCS1_SHA256,
                    &SystemRandom::new(),
                    input.as_bytes(),
                    &mut signature,
                )
                .expect("a valid key signs");
                signature
            }
            SigningKey::Ed25519(pair) => pair.sign(input.as_bytes()).as_ref().to_vec(),
        };
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
    }
}

/// The label and bytes of the first PEM block of `text`.
fn pem_block(text: &str) -> Option<(String, Vec<u8>)> {
    let begin = text.find("-----BEGIN ")?;
    let rest = &text[begin + "-----BEGIN ".len()..];
    let label_end = rest.find("-----")?;
    let label = rest[..label_end].to_owned();
    let body = &rest[label_end + "-----".len()..];
    let end = body.find("-----END ")?;
    let base64: String = body[..end].chars().filter(|c| !c.is_whitespace()).collect();
    Some((label, STANDARD.decode(base64).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parts of a compact JWT, decoded.
    fn parts(jwt: &str) -> (Value, Value, Vec<u8>) {
        let mut parts = jwt.split('.');
        let mut next = || {
            URL_SAFE_NO_PAD
                .decode(parts.next().expect("a part"))
                .expect("base64")
        };
        let header = serde_json::from_slice(&next()).expect("JSON");
        let claims = serde_json::from_slice(&next()).expect("JSON");
        (header, claims, next())
    }

    #[test]
    fn a_generated_key_signs_jwts_its_public_jwk_verifies() {
        let (key, pkcs8) = SigningKey::generate_p256();
        let mut extra = Map::new();
        extra.insert("typ".to_owned(), Value::from("dpop+jwt"));
        let jwt = key.sign(extra, &json!({"jti": "1"}));
        let (header, claims, signature) = parts(&jwt);
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(claims["jti"], "1");
        let jwk = key.public_jwk().expect("an EC key has a JWK");
        let coordinate = |name: &str| {
            URL_SAFE_NO_PAD
                .decode(jwk[name].as_str().expect("a coordinate"))
                .expect("base64")
        };
        let mut point = vec![0x04];
        point.extend(coordinate("x"));
        point.extend(coordinate("y"));
        let signed = &jwt[..jwt.rfind('.').expect("a signature")];
        signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
            .verify(signed.as_bytes(), &signature)
            .expect("the signature verifies with the public JWK");
        // Kept and read back, it is the same key.
        let again = SigningKey::from_p256_pkcs8(&pkcs8).expect("the kept key reads back");
        assert_eq!(again.public_jwk(), Some(jwk));
    }

    #[test]
    fn pem_keys_are_read_and_other_text_is_refused_without_quoting_it() {
        let (_, pkcs8) = SigningKey::generate_p256();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(&pkcs8)
        );
        let key = SigningKey::from_pem(&pem).expect("a PKCS#8 P-256 key");
        assert_eq!(key.algorithm(), "ES256");
        let garbage = SigningKey::from_pem("secret-value")
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(garbage.contains("not PEM"), "{garbage}");
        assert!(!garbage.contains("secret-value"));
        let wrong = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(b"not a key")
        );
        assert!(SigningKey::from_pem(&wrong).is_err());
    }
}
