//! Whose package an entry runs: the proof the registry asks its publishers for, checked again
//! here, since a source other than the official registry may list any package under any name.
//! npm: the release's `package.json` names the server in `mcpName`; PyPI: its description says
//! `mcp-name: NAME`. An OCI image's label and an MCPB bundle (checked by its digest instead) are
//! not looked at.

use std::time::Duration;

/// npm's and PyPI's public registries, where packages are looked up.
const NPM: &str = "https://registry.npmjs.org";
const PYPI: &str = "https://pypi.org";
/// Environment variables that point the lookups elsewhere (a mirror, or a test's registry).
pub const NPM_ENV: &str = "SWITCHBOARD_NPM_REGISTRY";
pub const PYPI_ENV: &str = "SWITCHBOARD_PYPI_INDEX";

/// What the check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ownership {
    /// The package names the server as its own.
    Proved,
    /// Not checked for this kind of package.
    NotChecked(&'static str),
}

/// Checks that `identifier` at `version` of `registry_type` says it is the package of `name`.
pub async fn check(
    registry_type: &str,
    identifier: &str,
    version: &str,
    name: &str,
) -> Result<Ownership, String> {
    match registry_type {
        "npm" => {
            let base = base(NPM_ENV, NPM);
            let url = format!("{base}/{}/{}", identifier.replace('/', "%2F"), version);
            let release: serde_json::Value = get(&url).await?;
            let claimed = release.get("mcpName").and_then(|v| v.as_str());
            judge(claimed, name, identifier, "its package.json's `mcpName`")
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
                            return Err(format!("PyPI has no release {version} of {identifier}"));
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
            judge(
                claimed,
                name,
                identifier,
                "the `mcp-name:` of its description",
            )
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
    where_: &str,
) -> Result<Ownership, String> {
    match claimed {
        Some(claimed) if claimed == name => Ok(Ownership::Proved),
        Some(claimed) => Err(format!(
            "{identifier} belongs to {claimed:?} by {where_}, not to {name:?}: the entry \
             names a package that is not its own, so it is not added"
        )),
        None => Err(format!(
            "{identifier} does not say it belongs to {name:?} ({where_} is missing): the \
             entry's name is not proved, so it is not added"
        )),
    }
}

async fn get(url: &str) -> Result<serde_json::Value, String> {
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(20))
        .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|error| error.to_string())?;
    let response = client
        .get(url)
        .header("Accept", "application/json")
        .send()
        .await
        .map_err(|error| {
            format!(
                "cannot look the package up at {url}: {}",
                wire::http_error::describe(&error)
            )
        })?;
    if !response.status().is_success() {
        return Err(format!(
            "cannot look the package up: {url} answered {}",
            response.status()
        ));
    }
    let bytes = super::source::read_bounded(response, 32 * 1024 * 1024)
        .await
        .map_err(|error| format!("{url}: {error}"))?;
    serde_json::from_slice(&bytes).map_err(|error| format!("{url} answered no JSON: {error}"))
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
        let forged = judge(Some("io.github.a/b"), "io.github.c/d", "b", "x").unwrap_err();
        assert!(forged.contains("belongs to \"io.github.a/b\""), "{forged}");
        let silent = judge(None, "io.github.c/d", "b", "x").unwrap_err();
        assert!(silent.contains("does not say"), "{silent}");
    }
}
