//! The small value languages inside the config: durations, sizes, `${env:NAME}`,
//! `${secret:NAME}` and `~`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use platform::secrets::SecretError;

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum ValueError {
    #[error("expected a duration like \"250ms\", \"30s\", \"5m\", \"1h\" or \"7d\", found {0:?}")]
    BadDuration(String),
    #[error(
        "expected a size like \"64MiB\" (units B, KiB, MiB, GiB) or a number of bytes, found {0:?}"
    )]
    BadSize(String),
    #[error("{0:?} is too large")]
    TooLarge(String),
    #[error("environment variable `{0}` is not set in Switchboard's environment")]
    UnknownVariable(String),
    #[error("environment variable `{0}` is not valid UTF-8")]
    NotUnicode(String),
    #[error("unterminated `${{`; write `$${{` for a literal `${{`")]
    Unterminated,
    #[error(
        "unsupported reference `${{{0}}}`; write `${{env:NAME}}` or `${{secret:NAME}}`, or `$${{` \
         for a literal `${{`"
    )]
    UnsupportedReference(String),
    #[error("`${{secret:…}}` cannot be used here; write the value, or `${{env:NAME}}`")]
    SecretNotAllowed,
    #[error(
        "secret `{0}` is not in the keychain; set it with `switchboard secret set {0}` or on the \
         dashboard's Secrets page"
    )]
    SecretMissing(String),
    /// What to do about a keychain that cannot be reached is said once, where the secrets are
    /// (the Secrets page, `switchboard secret`); the config's error says what went wrong.
    #[error("cannot read secret `{0}`: {summary}", summary = .1.summary())]
    SecretUnreadable(String, SecretError),
    #[error("cannot expand `~`: the home directory is unknown")]
    NoHome,
}

/// Parses "250ms", "30s", "5m" or "1h"; a number without a unit means seconds.
pub(super) fn parse_duration(text: &str) -> Result<Duration, ValueError> {
    let (amount, unit) =
        split_amount(text).ok_or_else(|| ValueError::BadDuration(text.to_owned()))?;
    let millis_per_unit: u64 = match unit {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(ValueError::BadDuration(text.to_owned())),
    };
    amount
        .parse::<u64>()
        .ok()
        .and_then(|amount| amount.checked_mul(millis_per_unit))
        .map(Duration::from_millis)
        .ok_or_else(|| ValueError::TooLarge(text.to_owned()))
}

/// Parses "64MiB" and the like (units B, KiB, MiB, GiB); a number without a unit means bytes.
pub(super) fn parse_size(text: &str) -> Result<usize, ValueError> {
    let (amount, unit) = split_amount(text).ok_or_else(|| ValueError::BadSize(text.to_owned()))?;
    let bytes_per_unit: u64 = match unit {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return Err(ValueError::BadSize(text.to_owned())),
    };
    amount
        .parse::<u64>()
        .ok()
        .and_then(|amount| amount.checked_mul(bytes_per_unit))
        .and_then(|bytes| usize::try_from(bytes).ok())
        .ok_or_else(|| ValueError::TooLarge(text.to_owned()))
}

/// Splits "30 s" into ("30", "s"); `None` without leading digits.
fn split_amount(text: &str) -> Option<(&str, &str)> {
    let text = text.trim();
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    if digits_end == 0 {
        return None;
    }
    let (amount, unit) = text.split_at(digits_end);
    Some((amount, unit.trim_start()))
}

/// The shortest exact spelling of `duration` that [`parse_duration`] reads back.
pub(super) fn format_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    match millis {
        0 => "0s".to_owned(),
        _ if millis.is_multiple_of(3_600_000) => format!("{}h", millis / 3_600_000),
        // Minutes read worse than seconds below an hour ("60s" rather than "1m").
        _ if millis.is_multiple_of(1_000) => format!("{}s", millis / 1_000),
        _ => format!("{millis}ms"),
    }
}

/// The shortest exact spelling of `bytes` that [`parse_size`] reads back.
pub(super) fn format_size(bytes: usize) -> String {
    const UNITS: [(usize, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (bytes_per_unit, unit) in UNITS {
        if bytes != 0 && bytes.is_multiple_of(bytes_per_unit) {
            return format!("{}{unit}", bytes / bytes_per_unit);
        }
    }
    format!("{bytes}B")
}

/// Reads one secret by name: `None` if there is no such secret.
pub(super) type SecretLookup = dyn Fn(&str) -> Result<Option<String>, SecretError>;

/// Where the references of a value get their text: `${env:NAME}` from `env`, and
/// `${secret:NAME}` from `secret` (the keychain) where a secret may stand.
pub(super) struct Lookups<'a> {
    pub(super) env: &'a dyn Fn(&str) -> Option<OsString>,
    pub(super) secret: Option<&'a SecretLookup>,
}

/// What becomes of a `${…}` that is neither `${env:NAME}` nor `${secret:NAME}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Other {
    /// It is an error (environment values, headers, tokens: no program would read it).
    Refused,
    /// It stays as written (arguments: the program may read it itself).
    Kept,
}

/// Replaces each `${env:NAME}` and `${secret:NAME}` with what `lookups` give for NAME; `$${` is a
/// literal `${`, and any other `$` stays as it is.
pub(super) fn expand_references(
    value: &str,
    lookups: &Lookups<'_>,
    other: Other,
) -> Result<String, ValueError> {
    let mut expanded = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(dollar) = rest.find('$') {
        expanded.push_str(&rest[..dollar]);
        let from_dollar = &rest[dollar..];
        if let Some(after) = from_dollar.strip_prefix("$${") {
            expanded.push_str("${");
            rest = after;
            continue;
        }
        let Some(after) = from_dollar.strip_prefix("${") else {
            expanded.push('$');
            rest = &from_dollar[1..];
            continue;
        };
        let end = after.find('}').ok_or(ValueError::Unterminated)?;
        let reference = &after[..end];
        if let Some(name) = reference
            .strip_prefix("env:")
            .filter(|name| !name.is_empty())
        {
            let variable =
                (lookups.env)(name).ok_or_else(|| ValueError::UnknownVariable(name.to_owned()))?;
            let variable = variable
                .into_string()
                .map_err(|_| ValueError::NotUnicode(name.to_owned()))?;
            expanded.push_str(&variable);
        } else if let Some(name) = reference
            .strip_prefix("secret:")
            .filter(|name| !name.is_empty())
        {
            let secret = lookups.secret.ok_or(ValueError::SecretNotAllowed)?;
            let value = secret(name)
                .map_err(|error| ValueError::SecretUnreadable(name.to_owned(), error))?
                .ok_or_else(|| ValueError::SecretMissing(name.to_owned()))?;
            expanded.push_str(&value);
        } else if other == Other::Kept {
            expanded.push_str(&from_dollar[..end + 3]);
        } else {
            return Err(ValueError::UnsupportedReference(reference.to_owned()));
        }
        rest = &after[end + 1..];
    }
    expanded.push_str(rest);
    Ok(expanded)
}

/// A server's value as the config writes it (`${env:NAME}`, `${secret:NAME}`, `$${`), filled in
/// as a start of the server fills it: what the server would be given. `None` when it cannot be
/// (a variable not set, a secret the keychain does not hold or cannot give).
pub fn filled_in(written: &str) -> Option<String> {
    let lookups = Lookups {
        env: &|name| std::env::var_os(name),
        secret: Some(&|name| platform::secrets::Keychain::secrets().get(name)),
    };
    expand_references(written, &lookups, Other::Kept).ok()
}

/// Expands a leading `~` (alone or followed by `/`) to `home`.
pub(super) fn expand_home(path: &str, home: Option<&Path>) -> Result<PathBuf, ValueError> {
    let rest = match path.strip_prefix('~') {
        Some("") => "",
        Some(rest) if rest.starts_with('/') => rest.trim_start_matches('/'),
        _ => return Ok(PathBuf::from(path)),
    };
    let home = home.ok_or(ValueError::NoHome)?;
    Ok(if rest.is_empty() {
        home.to_path_buf()
    } else {
        home.join(rest)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use platform::secrets::Unreachable;

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration(" 10 s "), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
    }

    #[test]
    fn malformed_durations_are_rejected() {
        for text in ["", "s", "1.5s", "-1s", "10 sec", "1w", "5M", "ms10"] {
            assert_eq!(
                parse_duration(text),
                Err(ValueError::BadDuration(text.to_owned())),
                "{text:?}"
            );
        }
        assert_eq!(
            parse_duration("99999999999999999999h"),
            Err(ValueError::TooLarge("99999999999999999999h".to_owned()))
        );
        assert_eq!(
            parse_duration("18446744073709551615h"),
            Err(ValueError::TooLarge("18446744073709551615h".to_owned()))
        );
    }

    #[test]
    fn sizes_in_every_unit() {
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("512B"), Ok(512));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("2 GiB"), Ok(2 << 30));
    }

    #[test]
    fn malformed_sizes_are_rejected() {
        for text in ["", "MiB", "64MB", "64mib", "1.5GiB", "-1", "64 MiB extra"] {
            assert_eq!(
                parse_size(text),
                Err(ValueError::BadSize(text.to_owned())),
                "{text:?}"
            );
        }
        assert_eq!(
            parse_size("99999999999GiB"),
            Err(ValueError::TooLarge("99999999999GiB".to_owned()))
        );
    }

    #[test]
    fn formatted_values_read_back() {
        for duration in [
            Duration::ZERO,
            Duration::from_millis(250),
            Duration::from_secs(2),
            Duration::from_secs(60),
            Duration::from_secs(7200),
        ] {
            assert_eq!(parse_duration(&format_duration(duration)), Ok(duration));
        }
        assert_eq!(format_duration(Duration::from_secs(60)), "60s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
        for bytes in [0, 1, 1000, 1024, 3 << 20, 128 << 20, 1 << 30] {
            assert_eq!(parse_size(&format_size(bytes)), Ok(bytes));
        }
        assert_eq!(format_size(128 << 20), "128MiB");
    }

    fn lookup(name: &str) -> Option<OsString> {
        match name {
            "KEY" => Some("secret".into()),
            "EMPTY" => Some("".into()),
            _ => None,
        }
    }

    fn keychain(name: &str) -> Result<Option<String>, SecretError> {
        match name {
            "token" => Ok(Some("t0k3n".to_owned())),
            "locked" => Err(SecretError::Unavailable(Unreachable {
                locked: true,
                cause: "the collection is locked".to_owned(),
            })),
            _ => Ok(None),
        }
    }

    fn expand(value: &str) -> Result<String, ValueError> {
        let lookups = Lookups {
            env: &lookup,
            secret: Some(&keychain),
        };
        expand_references(value, &lookups, Other::Refused)
    }

    #[test]
    fn env_and_secret_references_are_expanded() {
        assert_eq!(expand("plain"), Ok("plain".to_owned()));
        assert_eq!(expand("${env:KEY}"), Ok("secret".to_owned()));
        assert_eq!(
            expand("a-${env:KEY}-${env:EMPTY}-b"),
            Ok("a-secret--b".to_owned())
        );
        assert_eq!(
            expand("Bearer ${secret:token}"),
            Ok("Bearer t0k3n".to_owned())
        );
        assert_eq!(expand("$${env:KEY}"), Ok("${env:KEY}".to_owned()));
        assert_eq!(
            expand("cost: $5, $$ and $"),
            Ok("cost: $5, $$ and $".to_owned())
        );
    }

    #[test]
    fn bad_references_are_errors() {
        assert_eq!(
            expand("${env:NOPE}"),
            Err(ValueError::UnknownVariable("NOPE".to_owned()))
        );
        assert_eq!(expand("x ${env:KEY"), Err(ValueError::Unterminated));
        assert_eq!(
            expand("${HOME}"),
            Err(ValueError::UnsupportedReference("HOME".to_owned()))
        );
        assert_eq!(
            expand("${env:}"),
            Err(ValueError::UnsupportedReference("env:".to_owned()))
        );
        assert_eq!(
            expand("${secret:}"),
            Err(ValueError::UnsupportedReference("secret:".to_owned()))
        );
        assert_eq!(
            expand("${secret:gone}").map_err(|error| error.to_string()),
            Err(
                "secret `gone` is not in the keychain; set it with `switchboard secret set \
                 gone` or on the dashboard's Secrets page"
                    .to_owned()
            )
        );
        assert_eq!(
            expand("${secret:locked}").map_err(|error| error.to_string()),
            Err("cannot read secret `locked`: the keychain is locked".to_owned())
        );
        assert_eq!(
            ValueError::UnsupportedReference("HOME".to_owned()).to_string(),
            "unsupported reference `${HOME}`; write `${env:NAME}` or `${secret:NAME}`, or `$${` \
             for a literal `${`"
        );
    }

    #[test]
    fn arguments_keep_other_references_and_tokens_take_no_secret() {
        let lookups = Lookups {
            env: &lookup,
            secret: Some(&keychain),
        };
        assert_eq!(
            expand_references("--key=${secret:token} ${HOME}/x", &lookups, Other::Kept),
            Ok("--key=t0k3n ${HOME}/x".to_owned())
        );
        let env_only = Lookups {
            env: &lookup,
            secret: None,
        };
        assert_eq!(
            expand_references("${secret:token}", &env_only, Other::Refused),
            Err(ValueError::SecretNotAllowed)
        );
    }

    #[test]
    fn home_is_expanded_only_at_the_start() {
        let home = Path::new("/home/ada");
        assert_eq!(expand_home("~", Some(home)), Ok(PathBuf::from("/home/ada")));
        assert_eq!(
            expand_home("~/projects", Some(home)),
            Ok(PathBuf::from("/home/ada/projects"))
        );
        assert_eq!(
            expand_home("~bob/x", Some(home)),
            Ok(PathBuf::from("~bob/x"))
        );
        assert_eq!(
            expand_home("/tmp/~", Some(home)),
            Ok(PathBuf::from("/tmp/~"))
        );
        assert_eq!(expand_home("~/x", None), Err(ValueError::NoHome));
    }
}
