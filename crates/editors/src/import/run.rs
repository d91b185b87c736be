//! What a server runs: a local program's command line, environment and folder, or a remote
//! server's URL and headers. An editor's entry is a server Switchboard has only when the two run
//! the same, compared as they would run: each value with its `${env:…}` and `${secret:…}` filled
//! in, so a token the editor writes out and one our config keeps in the keychain are one token.

use std::collections::BTreeMap;

use serde_json::Value;

/// What a server runs, its values in our config's syntax (`${env:NAME}`, `${secret:NAME}`, `$${`
/// for a literal `${`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Run {
    Local {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<String>,
    },
    Remote {
        url: String,
        headers: BTreeMap<String, String>,
        /// `streamable-http` or `sse`, when the entry says which.
        transport: Option<&'static str>,
    },
}

impl Run {
    /// What an entry of our config runs, as written (a TOML table read as JSON, or the JSON
    /// form's entry); `None` for an entry that is neither a local nor a remote server.
    pub(super) fn of_ours(entry: &Value) -> Option<Run> {
        let strings = |key: &str| -> BTreeMap<String, String> {
            entry
                .get(key)
                .and_then(Value::as_object)
                .map(|object| {
                    object
                        .iter()
                        .filter_map(|(name, value)| {
                            Some((name.clone(), value.as_str()?.to_owned()))
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        if let Some(url) = entry.get("url").and_then(Value::as_str) {
            return Some(Run::Remote {
                url: url.to_owned(),
                headers: strings("headers"),
                transport: None,
            });
        }
        let command = entry.get("command")?.as_str()?.to_owned();
        let args = string_list(entry.get("args"));
        Some(Run::Local {
            command,
            args,
            env: strings("env"),
            cwd: entry.get("cwd").and_then(Value::as_str).map(str::to_owned),
        })
    }

    /// Whether `self` and `other` run the same: the same command, arguments, environment and
    /// folder, or the same URL and headers, each value compared as it would be given.
    pub(super) fn same_as(&self, other: &Run) -> bool {
        match (self, other) {
            (
                Run::Local {
                    command,
                    args,
                    env,
                    cwd,
                },
                Run::Local {
                    command: other_command,
                    args: other_args,
                    env: other_env,
                    cwd: other_cwd,
                },
            ) => {
                command == other_command
                    && cwd == other_cwd
                    && args.len() == other_args.len()
                    && args
                        .iter()
                        .zip(other_args)
                        .all(|(one, other)| same_value(one, other))
                    && same_values(env, other_env)
            }
            (
                Run::Remote { url, headers, .. },
                Run::Remote {
                    url: other_url,
                    headers: other_headers,
                    ..
                },
            ) => same_value(url, other_url) && same_values(headers, other_headers),
            _ => false,
        }
    }

    /// The values that may hold secrets: a local server's environment, a remote one's headers.
    pub(super) fn values_mut(&mut self) -> &mut BTreeMap<String, String> {
        match self {
            Run::Local { env, .. } => env,
            Run::Remote { headers, .. } => headers,
        }
    }
}

/// Whether two maps have the same names with the same values (see [`same_value`]).
fn same_values(one: &BTreeMap<String, String>, other: &BTreeMap<String, String>) -> bool {
    one.len() == other.len()
        && one.iter().all(|(name, value)| {
            other
                .get(name)
                .is_some_and(|other| same_value(value, other))
        })
}

/// Whether two values as written give the same text when filled in; a value that cannot be
/// filled in (a secret not kept, a variable not set) is compared as written.
fn same_value(one: &str, other: &str) -> bool {
    one == other || config::filled_in(one).is_some_and(|one| config::filled_in(other) == Some(one))
}

/// The strings of a list such as an entry's `args`; none when it is not a list.
pub(super) fn string_list(list: Option<&Value>) -> Vec<String> {
    list.and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn local(command: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
        Run::Local {
            command: command.to_owned(),
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            env: env
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect(),
            cwd: None,
        }
    }

    #[test]
    fn entries_run_the_same_only_when_every_value_matches() {
        let git = local("uvx", &["mcp-server-git"], &[]);
        assert!(git.same_as(&local("uvx", &["mcp-server-git"], &[])));
        assert!(!git.same_as(&local(
            "uvx",
            &["mcp-server-git"],
            &[("GITHUB_TOKEN", "ghp_1")]
        )));
        assert!(!git.same_as(&local("uvx", &["mcp-server-git", "--repo", "."], &[])));
        assert!(!git.same_as(&local("npx", &["mcp-server-git"], &[])));
        let token = local("x", &[], &[("TOKEN", "a")]);
        assert!(!token.same_as(&local("x", &[], &[("TOKEN", "b")])));
        assert!(!token.same_as(&local("x", &[], &[("OTHER", "a")])));

        let remote = |headers: &[(&str, &str)]| Run::Remote {
            url: "https://mcp.example.com/mcp".to_owned(),
            headers: headers
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect(),
            transport: None,
        };
        assert!(remote(&[]).same_as(&remote(&[])));
        assert!(!remote(&[]).same_as(&remote(&[("Authorization", "Bearer 1")])));
        assert!(!remote(&[]).same_as(&git));
    }

    #[test]
    fn values_compare_as_they_would_be_given() {
        let path = std::env::var("PATH").expect("tests run with a PATH");
        let written = local("x", &[], &[("SEARCH", "${env:PATH}")]);
        assert!(written.same_as(&local("x", &[], &[("SEARCH", &path)])));
        assert!(!written.same_as(&local("x", &[], &[("SEARCH", "/nowhere")])));
        // A literal `${` stays literal; a secret the keychain lacks is compared as written.
        assert!(local("x", &["$${HOME}"], &[]).same_as(&local("x", &["$${HOME}"], &[])));
        let missing = local(
            "x",
            &[],
            &[("T", "${secret:switchboard_editors_no_such_secret}")],
        );
        assert!(missing.same_as(&missing.clone()));
        assert!(!missing.same_as(&local("x", &[], &[("T", "")])));
    }

    #[test]
    fn our_entries_are_read_as_local_or_remote() {
        assert_eq!(
            Run::of_ours(&json!({ "command": "uvx", "args": ["a"], "env": { "K": "v" } })),
            Some(local("uvx", &["a"], &[("K", "v")]))
        );
        assert!(matches!(
            Run::of_ours(&json!({ "url": "https://x.dev/mcp", "headers": { "A": "b" } })),
            Some(Run::Remote { headers, .. }) if headers["A"] == "b"
        ));
        assert_eq!(Run::of_ours(&json!({ "enabled": false })), None);
    }
}
