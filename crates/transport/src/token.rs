//! The tokens Switchboard makes: 32 random bytes as hex, made on first use and kept in the data
//! directory (0600, in a 0700 directory), one file each:
//!
//! - `token`, the control API's, which scripts present (`SWITCHBOARD_TOKEN` overrides it);
//! - `mcp-token`, `/mcp`'s when the config says `require_token = true` without a token of its
//!   own, which `install` and `move` write into editors' configs;
//! - `socket-key`, which every client of the local socket (`connect`, the command line's
//!   commands) presents in its first line: the socket admits processes of this user, and the
//!   key narrows that to those that can read the data directory, which a sandboxed server
//!   cannot (see `transport::socket`).
//!
//! They are different tokens on purpose: an editor's config is read by the editor and its
//! plugins, and what it holds must not open the control API. A token goes into headers, so one
//! given in the environment must be made of URL-safe characters (`A-Z a-z 0-9 - . _ ~`) and be
//! at least [`MIN_TOKEN_LEN`] long. No value ever appears in a log or in `Debug` output.

use std::ffi::OsString;
use std::fmt;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use config::EndpointConfig;

/// Environment variable whose value, when set, is the token (the file is then not looked at).
pub(crate) const TOKEN_ENV: &str = "SWITCHBOARD_TOKEN";

/// The control API's token file, in the data directory.
pub(crate) const TOKEN_FILE: &str = "token";

/// `/mcp`'s generated token file, in the data directory.
pub const MCP_TOKEN_FILE: &str = "mcp-token";

/// The local socket's key file, in the data directory.
pub(crate) const SOCKET_KEY_FILE: &str = "socket-key";

/// The shortest token accepted.
pub(crate) const MIN_TOKEN_LEN: usize = 16;

/// Random bytes in a generated token.
const TOKEN_BYTES: usize = 32;

/// A secret that opens something: the control API, `/mcp`, or a run's dashboard.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

/// Why a value cannot be a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidToken {
    #[error("it must be at least {MIN_TOKEN_LEN} characters long")]
    TooShort,
    #[error("only letters, digits, `-`, `.`, `_` and `~` may be used")]
    UnsafeCharacters,
    #[error("it is not valid UTF-8")]
    NotUtf8,
}

/// Why no token could be had.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("{TOKEN_ENV} is not usable: {reason}")]
    InvalidEnv { reason: InvalidToken },
    #[error("the token in {} is not usable: {reason}", path.display())]
    InvalidFile { path: PathBuf, reason: InvalidToken },
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

impl Token {
    /// Takes `text` as a token if it is long enough and made of safe characters.
    pub fn new(text: &str) -> Result<Token, InvalidToken> {
        if text.len() < MIN_TOKEN_LEN {
            return Err(InvalidToken::TooShort);
        }
        let safe = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~');
        if !text.chars().all(safe) {
            return Err(InvalidToken::UnsafeCharacters);
        }
        Ok(Token(text.to_owned()))
    }

    /// A new random token: 32 bytes from the thread's cryptographically secure generator, as hex.
    pub fn generate() -> Token {
        let bytes: [u8; TOKEN_BYTES] = rand::random();
        Token(platform::hex::encode(&bytes))
    }

    /// The token itself, for the places that must carry it: the dashboard link, editors'
    /// configs, a request's header.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `presented` is this token, compared in constant time (its length is no secret).
    pub fn matches(&self, presented: &str) -> bool {
        crate::guard::constant_time_eq(self.0.as_bytes(), presented.as_bytes())
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// The API token: from `SWITCHBOARD_TOKEN`, else from `data_dir/token`, made there if absent.
pub fn api_token(data_dir: &Path) -> Result<Token, TokenError> {
    resolve(std::env::var_os(TOKEN_ENV), data_dir)
}

/// What stands for the generated `/mcp` token where it is only shown and not made yet (a dry
/// run, `check`).
pub(crate) const TOKEN_NOT_MADE: &str = "<the token Switchboard makes when this is written>";

/// Whether the generated `/mcp` token may be made when it has no file yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// Made there and then: it is about to be used.
    Make,
    /// Left unmade, and shown as [`TOKEN_NOT_MADE`]: nothing is to be written.
    Show,
}

/// The token `/mcp` requires under `endpoint`, if any: the config's own `token`, else with
/// `require_token` the generated one from `data_dir/mcp-token` (made there if absent and
/// `missing` allows it).
pub fn endpoint_token(
    endpoint: &EndpointConfig,
    data_dir: &Path,
    missing: Missing,
) -> Result<Option<String>, TokenError> {
    if let Some(token) = &endpoint.token {
        return Ok(Some(token.clone()));
    }
    if endpoint.require_token != Some(true) {
        return Ok(None);
    }
    if missing == Missing::Show {
        return match read_token_file(&data_dir.join(MCP_TOKEN_FILE)) {
            Ok(token) => Ok(Some(token.0)),
            Err(TokenError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                Ok(Some(TOKEN_NOT_MADE.to_owned()))
            }
            Err(error) => Err(error),
        };
    }
    let token = load_or_create(data_dir, MCP_TOKEN_FILE)?;
    Ok(Some(token.0))
}

/// The local socket's key, made in `data_dir` if absent: what `serve` checks every client of its
/// socket against.
pub fn socket_key(data_dir: &Path) -> Result<Token, TokenError> {
    load_or_create(data_dir, SOCKET_KEY_FILE)
}

/// The local socket's key as a client reads it: never made here (an instance that answers on
/// the socket has made it), so that a client with another data directory is told so instead of
/// making a key nobody checks.
pub fn read_socket_key(data_dir: &Path) -> Result<Token, TokenError> {
    read_token_file(&data_dir.join(SOCKET_KEY_FILE))
}

/// [`api_token`] with the environment variable's value given (for tests).
pub(crate) fn resolve(env_value: Option<OsString>, data_dir: &Path) -> Result<Token, TokenError> {
    if let Some(value) = env_value {
        let text = value.into_string().map_err(|_| TokenError::InvalidEnv {
            reason: InvalidToken::NotUtf8,
        })?;
        return Token::new(&text).map_err(|reason| TokenError::InvalidEnv { reason });
    }
    load_or_create(data_dir, TOKEN_FILE)
}

/// The token in `data_dir/file`, made there if absent.
fn load_or_create(data_dir: &Path, file: &str) -> Result<Token, TokenError> {
    private_dir(data_dir)?;
    let path = data_dir.join(file);
    match read_token_file(&path) {
        Ok(token) => return Ok(token),
        Err(TokenError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    create_token_file(&path)
}

/// Makes `dir` (0700) or narrows an existing one to its owner.
fn private_dir(dir: &Path) -> Result<(), TokenError> {
    let io_error = |action, source| TokenError::Io {
        action,
        path: dir.to_path_buf(),
        source,
    };
    platform::dirs::create_private_dir(dir).map_err(|source| io_error("create", source))?;
    let open =
        platform::files::open_to_others(dir).map_err(|source| io_error("inspect", source))?;
    if open {
        platform::files::restrict_to_owner(dir)
            .map_err(|source| io_error("restrict the permissions of", source))?;
    }
    Ok(())
}

fn read_token_file(path: &Path) -> Result<Token, TokenError> {
    let io_error = |action, source| TokenError::Io {
        action,
        path: path.to_path_buf(),
        source,
    };
    let text = std::fs::read_to_string(path).map_err(|source| io_error("read", source))?;
    let open =
        platform::files::open_to_others(path).map_err(|source| io_error("inspect", source))?;
    if open {
        tracing::warn!(
            path = %path.display(),
            "the token file was readable by others; narrowing it to its owner"
        );
        platform::files::restrict_to_owner(path)
            .map_err(|source| io_error("restrict the permissions of", source))?;
    }
    Token::new(text.trim()).map_err(|reason| TokenError::InvalidFile {
        path: path.to_path_buf(),
        reason,
    })
}

/// Writes a new token to a private temporary file and links it into place, so that two
/// Switchboards starting at once agree on one token and neither reads a half-written file.
fn create_token_file(path: &Path) -> Result<Token, TokenError> {
    let token = Token::generate();
    let io_error = |action, path: &Path, source| TokenError::Io {
        action,
        path: path.to_path_buf(),
        source,
    };
    let (temporary, mut file) = platform::atomic::temporary_beside(path)
        .map_err(|source| io_error("write", path, source))?;
    let written = (|| {
        file.write_all(token.0.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()
    })();
    drop(file);
    if let Err(source) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(io_error("write", &temporary, source));
    }
    let linked = std::fs::hard_link(&temporary, path);
    let _ = std::fs::remove_file(&temporary);
    match linked {
        Ok(()) => {
            tracing::debug!(path = %path.display(), "made a new token");
            Ok(token)
        }
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => read_token_file(path),
        Err(source) => Err(io_error("create", path, source)),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path)
            .expect("metadata")
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn first_run_makes_a_private_token_that_later_runs_reuse() {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let token = resolve(None, &data).expect("token made");
        assert_eq!(token.expose().len(), 64);
        assert!(token.expose().chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(mode(&data.join(TOKEN_FILE)), 0o600);
        assert_eq!(mode(&data), 0o700);
        assert_eq!(resolve(None, &data).expect("token read"), token);
        assert_ne!(Token::generate(), token);
        let leftovers: Vec<_> = std::fs::read_dir(&data).expect("list").collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left behind");
    }

    #[test]
    fn mcp_gets_a_token_of_its_own_only_when_the_config_asks() {
        use Missing::{Make, Show};
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let mut endpoint = EndpointConfig::default();
        assert_eq!(endpoint_token(&endpoint, &data, Make).expect("none"), None);
        assert!(!data.join(MCP_TOKEN_FILE).exists());
        endpoint.require_token = Some(false);
        assert_eq!(endpoint_token(&endpoint, &data, Make).expect("none"), None);
        endpoint.require_token = Some(true);
        assert_eq!(
            endpoint_token(&endpoint, &data, Show).expect("shown"),
            Some(TOKEN_NOT_MADE.to_owned())
        );
        assert!(!data.join(MCP_TOKEN_FILE).exists(), "only shown, not made");
        let generated = endpoint_token(&endpoint, &data, Make)
            .expect("made")
            .expect("a token");
        assert_eq!(mode(&data.join(MCP_TOKEN_FILE)), 0o600);
        for missing in [Make, Show] {
            assert_eq!(
                endpoint_token(&endpoint, &data, missing).expect("read"),
                Some(generated.clone())
            );
        }
        let api = resolve(None, &data).expect("the API's");
        assert_ne!(api.expose(), generated, "never the API token");
        endpoint.token = Some("written-in-the-config".to_owned());
        assert_eq!(
            endpoint_token(&endpoint, &data, Show).expect("the config's"),
            Some("written-in-the-config".to_owned())
        );
    }

    #[test]
    fn the_socket_key_is_made_by_serve_and_only_read_by_clients() {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let error = read_socket_key(&data).expect_err("a client makes no key");
        assert!(
            matches!(&error, TokenError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound),
            "{error}"
        );
        assert!(!data.join(SOCKET_KEY_FILE).exists());
        let key = socket_key(&data).expect("made");
        assert_eq!(mode(&data.join(SOCKET_KEY_FILE)), 0o600);
        assert_eq!(read_socket_key(&data).expect("read"), key);
        assert_eq!(socket_key(&data).expect("kept"), key);
        let api = resolve(None, &data).expect("the API's");
        assert_ne!(api, key, "never the API token");
    }

    #[test]
    fn the_environment_overrides_the_file_and_is_checked() {
        let dir = tempfile::tempdir().expect("temp dir");
        let token = resolve(Some("fixed-token-0123456789".into()), dir.path()).expect("taken");
        assert_eq!(token.expose(), "fixed-token-0123456789");
        assert!(!dir.path().join(TOKEN_FILE).exists());
        for bad in [
            "short",
            "has space in it 0123456789",
            "semi;colon;0123456789",
        ] {
            let error = resolve(Some(bad.into()), dir.path()).expect_err(bad);
            assert!(matches!(error, TokenError::InvalidEnv { .. }), "{error}");
            assert!(
                !error.to_string().contains(bad),
                "the value is not repeated"
            );
        }
    }

    #[test]
    fn a_token_file_readable_by_others_is_narrowed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(TOKEN_FILE);
        std::fs::write(&path, "abcdefabcdefabcdef\n").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let token = resolve(None, dir.path()).expect("read");
        assert_eq!(token.expose(), "abcdefabcdefabcdef");
        assert_eq!(mode(&path), 0o600);
    }

    #[test]
    fn matching_is_exact_and_debug_hides_the_value() {
        let token = Token::new("0123456789abcdef").expect("valid");
        assert!(token.matches("0123456789abcdef"));
        assert!(!token.matches("0123456789abcdeF"));
        assert!(!token.matches("0123456789abcde"));
        assert!(!format!("{token:?}").contains("0123"));
    }
}
