//! The OS keychain: secrets the config names as `${secret:NAME}`, and what sign-in keeps (tokens,
//! client registrations). Secret Service on Linux, Keychain on macOS, Credential Manager on
//! Windows, each through its `keyring-core` store (`platform::keychain`).
//!
//! Nothing here ever falls back to a file: with no keychain to reach (no Secret Service running,
//! say), every call fails with [`SecretError::Unavailable`] saying so in plain words, what this
//! system needs; the platform's own words for the failure go to the log.
//! Values never appear in an error, a log line or a `Debug` output.
//!
//! Calls block (the Secret Service is a D-Bus round trip): async code runs them with
//! `tokio::task::spawn_blocking`.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock};

use keyring_core::{CredentialStore, Entry};

use crate::keychain;

/// The keychain service Switchboard's own secrets are kept under; sign-in's records use it with
/// a suffix. `SWITCHBOARD_KEYCHAIN_SERVICE` names another one (tests keep theirs apart with it).
pub(crate) const DEFAULT_SERVICE: &str = "switchboard";

const SERVICE_ENV: &str = "SWITCHBOARD_KEYCHAIN_SERVICE";

/// Why the keychain could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// There is no keychain to use, or it refused access (locked, no Secret Service running).
    #[error("{0}; secrets are kept nowhere else, never in a file")]
    Unavailable(Unreachable),
    /// The name cannot name a secret.
    #[error("{0:?} cannot name a secret: use 1 to 64 ASCII letters, digits, `_`, `-` or `.`")]
    BadName(String),
    /// The keychain holds something under that name that is not text.
    #[error("the keychain's entry for {0} is not text")]
    NotText(String),
}

/// Why the keychain cannot be reached: in plain words what this system needs (its `Display`),
/// and the platform's own words, which are for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreachable {
    /// Whether a keychain is there but refused access: locked, or its prompt dismissed.
    pub locked: bool,
    /// The platform's failure, as it said it.
    pub cause: String,
}

impl Unreachable {
    /// What went wrong in a few words, for where what to do is said apart (the Secrets page).
    pub fn summary(&self) -> &'static str {
        match self.locked {
            true => "the keychain is locked",
            false => "no keychain is available",
        }
    }

    /// Logs the platform's words, as a warning, the first time they come: for a log a person
    /// reads beside a page that says the failure plainly, once, not at every call that meets it.
    pub fn log_cause(&self) {
        static LOGGED: Mutex<Option<String>> = Mutex::new(None);
        let mut logged = LOGGED.lock().expect("the log's lock is never poisoned");
        if logged.as_deref() != Some(self.cause.as_str()) {
            tracing::warn!(error = %self.cause, "the keychain cannot be used");
            *logged = Some(self.cause.clone());
        }
    }
}

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.locked {
            true => f.write_str(
                "the keychain is locked, or its prompt to unlock it was dismissed: unlock it and \
                 try again",
            ),
            false => write!(
                f,
                "no keychain is available: Switchboard needs {}",
                keychain::NEEDED
            ),
        }
    }
}

impl SecretError {
    /// The error in a few words: for a keychain that cannot be reached, what went wrong alone,
    /// where what to do is said apart (the Secrets page).
    pub fn summary(&self) -> String {
        match self {
            SecretError::Unavailable(unreachable) => unreachable.summary().to_owned(),
            other => other.to_string(),
        }
    }
}

/// One part of the keychain: the entries of one service.
pub struct Keychain {
    service: String,
    /// Made at first use; a failure is not kept, so a keychain that starts later is found.
    store: Mutex<Option<Arc<CredentialStore>>>,
}

impl std::fmt::Debug for Keychain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keychain")
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
}

impl Keychain {
    /// The keychain of secrets the config names (`${secret:NAME}`).
    pub fn secrets() -> &'static Keychain {
        static SECRETS: OnceLock<Keychain> = OnceLock::new();
        SECRETS.get_or_init(|| Keychain::new(&base_service()))
    }

    /// The keychain of what sign-in keeps, under `kind` (`tokens`, `clients`).
    pub fn of_sign_in(kind: &str) -> Keychain {
        Keychain::new(&format!("{}-{kind}", base_service()))
    }

    fn new(service: &str) -> Keychain {
        Keychain {
            service: service.to_owned(),
            store: Mutex::new(None),
        }
    }

    /// The secret `name`; `None` if the keychain has no such entry. Where the keychain shows
    /// an entry being replaced as missing or torn for a moment (Windows), a failed read is tried
    /// again a few times first.
    pub fn get(&self, name: &str) -> Result<Option<String>, SecretError> {
        let entry = self.entry(name)?;
        let mut attempts = 1;
        loop {
            match entry.get_password() {
                Ok(value) => return Ok(Some(value)),
                Err(_) if attempts < keychain::READ_ATTEMPTS => {
                    attempts += 1;
                    std::thread::sleep(keychain::READ_RETRY);
                }
                Err(keyring_core::Error::NoEntry) => return Ok(None),
                Err(keyring_core::Error::BadEncoding(_)) => {
                    return Err(SecretError::NotText(name.to_owned()));
                }
                Err(error) => return Err(unavailable(&error)),
            }
        }
    }

    /// Keeps `value` as the secret `name`, replacing any earlier one.
    pub fn set(&self, name: &str, value: &str) -> Result<(), SecretError> {
        self.entry(name)?
            .set_password(value)
            .map_err(|error| unavailable(&error))
    }

    /// Removes the secret `name`; whether there was one.
    pub fn delete(&self, name: &str) -> Result<bool, SecretError> {
        match self.entry(name)?.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring_core::Error::NoEntry) => Ok(false),
            Err(error) => Err(unavailable(&error)),
        }
    }

    /// The names of every secret kept under this keychain's service, sorted.
    pub fn names(&self) -> Result<BTreeSet<String>, SecretError> {
        let names = keychain::names(&self.store()?, &self.service);
        Ok(names
            .map_err(|error| unavailable(&error))?
            .into_iter()
            .collect())
    }

    fn entry(&self, name: &str) -> Result<Entry, SecretError> {
        if !is_valid_name(name) {
            return Err(SecretError::BadName(name.to_owned()));
        }
        Entry::new_in_store(&self.store()?, &self.service, name)
            .map_err(|error| unavailable(&error))
    }

    fn store(&self) -> Result<Arc<CredentialStore>, SecretError> {
        let mut store = self
            .store
            .lock()
            .expect("the keychain's lock is never poisoned");
        if let Some(store) = &*store {
            return Ok(store.clone());
        }
        let made = keychain::store().map_err(|error| unavailable(&error))?;
        *store = Some(made.clone());
        Ok(made)
    }
}

/// Whether `name` can name a secret: what `${secret:NAME}` accepts.
pub fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.'))
}

/// The names of the `${secret:NAME}` references in a config file's text (`$${` is a literal).
pub fn referenced_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find("${secret:") {
        let escaped = rest[..start].ends_with('$');
        let after = &rest[start + "${secret:".len()..];
        let Some(end) = after.find('}') else { break };
        if !escaped && is_valid_name(&after[..end]) {
            names.insert(after[..end].to_owned());
        }
        rest = &after[end..];
    }
    names
}

fn base_service() -> String {
    std::env::var(SERVICE_ENV)
        .ok()
        .filter(|service| !service.is_empty())
        .unwrap_or_else(|| DEFAULT_SERVICE.to_owned())
}

/// A failure of the keychain, in words that never carry a secret (keyring-core's errors name
/// the platform's failure, not values); the platform's words are logged at debug, for a
/// command's stderr (see [`Unreachable::log_cause`]).
fn unavailable(error: &keyring_core::Error) -> SecretError {
    let cause = error.to_string();
    tracing::debug!(error = %cause, "the keychain failed");
    SecretError::Unavailable(Unreachable {
        locked: matches!(error, keyring_core::Error::NoStorageAccess(_)),
        cause,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_found_in_any_value_and_escapes_are_not() {
        let text = "[servers.a]\nenv = { K = \"${secret:github_token}\" }\n\
                    args = [\"--key=${secret:linear.key}\", \"$${secret:literal}\"]\n\
                    [servers.b.headers]\nX = \"Bearer ${secret:github_token}\"\n# ${secret:bad name}\n";
        assert_eq!(
            referenced_names(text).into_iter().collect::<Vec<_>>(),
            ["github_token", "linear.key"]
        );
    }

    #[test]
    fn names_are_short_plain_words() {
        for name in ["github_token", "a", "linear-api.key", &"x".repeat(64)] {
            assert!(is_valid_name(name), "{name}");
        }
        for name in ["", "with space", "slash/name", "ünïcode", &"x".repeat(65)] {
            assert!(!is_valid_name(name), "{name}");
        }
    }

    #[test]
    fn a_bad_name_is_refused_before_the_keychain_is_asked() {
        let keychain = Keychain::new("switchboard-unit-test");
        assert_eq!(
            keychain.get("no such/name"),
            Err(SecretError::BadName("no such/name".to_owned()))
        );
    }
}
