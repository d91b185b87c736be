//! Whose package an entry runs: the proof the registry asks its publishers for, checked again
//! here, since a source other than the official registry may list any package under any name.
//! npm: the release's `package.json` names the server in `mcpName`; PyPI: its description says
//! `mcp-name: NAME`. An OCI image's label and an MCPB bundle (checked by its digest instead) are
//! not looked at.

use std::time::Duration;

use super::source::{BodyError, GetError, get_body};

/// npm's and PyPI's public registries, where packages are looked up.
const NPM: &str = "https://registry.npmjs.org";
const PYPI: &str = "https://pypi.org";
/// Environment variables that point the lookups elsewhere (a mirror, or a test's registry).
pub(crate) const NPM_ENV: &str = "SWITCHBOARD_NPM_REGISTRY";
pub(crate) const PYPI_ENV: &str = "SWITCHBOARD_PYPI_INDEX";

/// What the check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ownership {
    /// The package names the server as its own.
    Proved,
    /// Not checked for this kind of package.
    NotChecked(&'static str),
}

/// The package does not say it is the entry's, by what `place` of it names its server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Disowned {
    /// It names another server.
    #[error(
        "{identifier} belongs to {claimed:?} by {place}, not to {name:?}: the entry \
         names a package that is not its own, so it is not added"
    )]
    Foreign {
        identifier: String,
        claimed: String,
        name: String,
        place: &'static str,
    },
    /// It names none.
    #[error(
        "{identifier} does not say it belongs to {name:?} ({place} is missing): the \
         entry's name is not proved, so it is not added"
    )]
    Unclaimed {
        identifier: String,
        name: String,
        place: &'static str,
    },
}

/// Why whose package an entry runs was not proved: the package says otherwise, or it could not
/// be looked up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OwnershipError {
    #[error(transparent)]
    Disowned(#[from] Disowned),
    #[error("PyPI has no release {version} of {identifier}")]
    NoRelease { identifier: String, version: String },
    #[error(transparent)]
    Client(reqwest::Error),
    #[error(
        "cannot look the package up at {url}: {}",
        wire::http_error::describe(error)
    )]
    Unreachable {
        url: String,
        #[source]
        error: reqwest::Error,
    },
    #[error("cannot look the package up: {url} answered {status}")]
    Status {
        url: String,
        status: reqwest::StatusCode,
    },
    #[error("{url}: {error}")]
    Body {
        url: String,
        #[source]
        error: BodyError,
    },
    #[error("{url} answered no JSON: {error}")]
    NotJson {
        url: String,
        #[source]
        error: serde_json::Error,
    },
}

/// Checks that `identifier` at `version` of `registry_type` says it is the package of `name`.
pub(crate) async fn check(
    registry_type: &str,
    identifier: &str,
    version: &str,
    name: &str,
) -> Result<Ownership, OwnershipError> {
    match registry_type {
        "npm" => {
            let base = base(NPM_ENV, NPM);
            let url = format!("{base}/{}/{}", identifier.replace('/', "%2F"), version);
            let release: serde_json::Value = get(&url).await?;
            let claimed = release.get("mcpName").and_then(|v| v.as_str());
            Ok(judge(
                claimed,
                name,
                identifier,
                "its package.json's `mcpName`",
            )?)
        }
        "pypi" => {
            let base = base(PYPI_ENV, PYPI);
            // The release's own page, or (where a mirror serves only projects) the project's,
            // which must list the release.
            let release: serde_json::Value =
                match get(&format!("{base}/pypi/{identifier}/{version}/json")).await {
                    Ok(release) => release,
                    Err(_) => {
                        let project: serde_json::Value =
                            get(&format!("{base}/pypi/{identifier}/json")).await?;
                        if project.pointer(&format!("/releases/{version}")).is_none() {
                            return Err(OwnershipError::NoRelease {
                                identifier: identifier.to_owned(),
                                version: version.to_owned(),
                            });
                        }
                        project
                    }
                };
            let description = release
                .pointer("/info/description")
                .and_then(|v| v.as_str())
                .unwrap_or("");
            let claimed = description
                .split("mcp-name:")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next());
            Ok(judge(
                claimed,
                name,
                identifier,
                "the `mcp-name:` of its description",
            )?)
        }
        "oci" => Ok(Ownership::NotChecked(
            "an image's label is not read before it is pulled",
        )),
        _ => Ok(Ownership::NotChecked("checked by its digest instead")),
    }
}

fn base(variable: &str, default: &str) -> String {
    std::env::var(variable)
        .ok()
        .filter(|value| !value.is_empty())
        .unwrap_or_else(|| default.to_owned())
        .trim_end_matches('/')
        .to_owned()
}

fn judge(
    claimed: Option<&str>,
    name: &str,
    identifier: &str,
    place: &'static str,
) -> Result<Ownership, Disowned> {
    match claimed {
        Some(claimed) if claimed == name => Ok(Ownership::Proved),
        Some(claimed) => Err(Disowned::Foreign {
            identifier: identifier.to_owned(),
            claimed: claimed.to_owned(),
            name: name.to_owned(),
            place,
        }),
        None => Err(Disowned::Unclaimed {
            identifier: identifier.to_owned(),
            name: name.to_owned(),
            place,
        }),
    }
}

async fn get(url: &str) -> Result<serde_json::Value, OwnershipError> {
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(20))
        .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(OwnershipError::Client)?;
    let bytes = get_body(&client, url, Some("application/json"), 32 * 1024 * 1024)
        .await
        .map_err(|error| match error {
            GetError::Unanswered(error) => OwnershipError::Unreachable {
                url: url.to_owned(),
                error,
            },
            GetError::Status(status) => OwnershipError::Status {
                url: url.to_owned(),
                status,
            },
            GetError::Body(error) => OwnershipError::Body {
                url: url.to_owned(),
                error,
            },
        })?;
    serde_json::from_slice(&bytes).map_err(|error| OwnershipError::NotJson {
        url: url.to_owned(),
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_is_judged_against_the_entrys_name() {
        assert_eq!(
            judge(Some("io.github.a/b"), "io.github.a/b", "b", "x"),
            Ok(Ownership::Proved)
        );
        let forged = judge(Some("io.github.a/b"), "io.github.c/d", "b", "x")
            .unwrap_err()
            .to_string();
        assert!(forged.contains("belongs to \"io.github.a/b\""), "{forged}");
        let silent = judge(None, "io.github.c/d", "b", "x")
            .unwrap_err()
            .to_string();
        assert!(silent.contains("does not say"), "{silent}");
    }
}
