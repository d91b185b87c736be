//! The control API's token: 32 random bytes as hex, made on first run and kept in the data
//! directory (`token`, 0600, in a 0700 directory); `SWITCHBOARD_TOKEN` overrides it.
//!
//! The token goes into a cookie, a header and a URL, so a token given in the environment must be
//! made of URL- and cookie-safe characters (`A-Z a-z 0-9 - . _ ~`) and be at least
//! [`MIN_TOKEN_LEN`] long. Its value never appears in a log or in `Debug` output.

use std::ffi::OsString;
use std::fmt;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

/// Environment variable whose value, when set, is the token (the file is then not looked at).
pub const TOKEN_ENV: &str = "SWITCHBOARD_TOKEN";

/// The token file's name inside the data directory.
pub const TOKEN_FILE: &str = "token";

/// The shortest token accepted.
pub const MIN_TOKEN_LEN: usize = 16;

/// Random bytes in a generated token.
const TOKEN_BYTES: usize = 32;

/// The secret that opens the control API and the dashboard.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiToken(String);

/// Why no token could be had.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("{TOKEN_ENV} is not usable: {reason}")]
    InvalidEnv { reason: String },
    #[error("the token in {} is not usable: {reason}", path.display())]
    InvalidFile { path: PathBuf, reason: String },
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

impl ApiToken {
    /// Takes `text` as a token if it is long enough and made of safe characters.
    pub fn new(text: &str) -> Result<ApiToken, String> {
        if text.len() < MIN_TOKEN_LEN {
            return Err(format!(
                "it must be at least {MIN_TOKEN_LEN} characters long"
            ));
        }
        let safe = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~');
        if !text.chars().all(safe) {
            return Err("only letters, digits, `-`, `.`, `_` and `~` may be used".to_owned());
        }
        Ok(ApiToken(text.to_owned()))
    }

    /// A new random token: 32 bytes from the thread's cryptographically secure generator, as hex.
    pub fn generate() -> ApiToken {
        let bytes: [u8; TOKEN_BYTES] = rand::random();
        ApiToken(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
    }

    /// The token itself, for the one place that shows it: the dashboard link.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `presented` is this token, compared in constant time (its length is no secret).
    pub fn matches(&self, presented: &str) -> bool {
        crate::guard::constant_time_eq(self.0.as_bytes(), presented.as_bytes())
    }
}

impl fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiToken(<redacted>)")
    }
}

/// The token from `SWITCHBOARD_TOKEN`, else from `data_dir/token`, made there if absent.
pub fn load_or_create(data_dir: &Path) -> Result<ApiToken, TokenError> {
    resolve(std::env::var_os(TOKEN_ENV), data_dir)
}

/// [`load_or_create`] with the environment variable's value given (for tests).
pub fn resolve(env_value: Option<OsString>, data_dir: &Path) -> Result<ApiToken, TokenError> {
    if let Some(value) = env_value {
        let text = value.into_string().map_err(|_| TokenError::InvalidEnv {
            reason: "it is not valid UTF-8".to_owned(),
        })?;
        return ApiToken::new(&text).map_err(|reason| TokenError::InvalidEnv { reason });
    }
    private_dir(data_dir)?;
    let path = data_dir.join(TOKEN_FILE);
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
    crate::dirs::create_private_dir(dir).map_err(|source| io_error("create", source))?;
    let open = crate::platform::files::open_to_others(dir)
        .map_err(|source| io_error("inspect", source))?;
    if open {
        crate::platform::files::restrict_to_owner(dir)
            .map_err(|source| io_error("restrict the permissions of", source))?;
    }
    Ok(())
}

fn read_token_file(path: &Path) -> Result<ApiToken, TokenError> {
    let io_error = |action, source| TokenError::Io {
        action,
        path: path.to_path_buf(),
        source,
    };
    let text = std::fs::read_to_string(path).map_err(|source| io_error("read", source))?;
    let open = crate::platform::files::open_to_others(path)
        .map_err(|source| io_error("inspect", source))?;
    if open {
        tracing::warn!(
            path = %path.display(),
            "the token file was readable by others; narrowing it to its owner"
        );
        crate::platform::files::restrict_to_owner(path)
            .map_err(|source| io_error("restrict the permissions of", source))?;
    }
    ApiToken::new(text.trim()).map_err(|reason| TokenError::InvalidFile {
        path: path.to_path_buf(),
        reason,
    })
}

/// Writes a new token to a private temporary file and links it into place, so that two
/// Switchboards starting at once agree on one token and neither reads a half-written file.
fn create_token_file(path: &Path) -> Result<ApiToken, TokenError> {
    let token = ApiToken::generate();
    let temporary = path.with_extension(format!("{}.tmp", std::process::id()));
    let io_error = |action, path: &Path, source| TokenError::Io {
        action,
        path: path.to_path_buf(),
        source,
    };
    let written = crate::dirs::create_private_file(&temporary).and_then(|mut file| {
        file.write_all(token.0.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()
    });
    if let Err(source) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(io_error("write", &temporary, source));
    }
    let linked = std::fs::hard_link(&temporary, path);
    let _ = std::fs::remove_file(&temporary);
    match linked {
        Ok(()) => {
            tracing::info!(path = %path.display(), "made a new dashboard token");
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
        assert_ne!(ApiToken::generate(), token);
        let leftovers: Vec<_> = std::fs::read_dir(&data).expect("list").collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left behind");
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
        let token = ApiToken::new("0123456789abcdef").expect("valid");
        assert!(token.matches("0123456789abcdef"));
        assert!(!token.matches("0123456789abcdeF"));
        assert!(!token.matches("0123456789abcde"));
        assert!(!format!("{token:?}").contains("0123"));
    }
}
