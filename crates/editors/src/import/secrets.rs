//! Secrets written out in an editor's config (a token in a server's `env`): found on import, and
//! with `--move-secrets` kept in the OS keychain, the config naming them as `${secret:NAME}`.

use super::{ImportAction, Server, ServerImport};
use platform::secrets::{Keychain, SecretError};

/// Words in an environment variable's name that say its value is a secret.
const SECRET_WORDS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "API_KEY",
    "APIKEY",
    "ACCESS_KEY",
    "PRIVATE_KEY",
    "CREDENTIAL",
    "AUTH",
];

/// How well-known credentials start, whatever their variable is called.
const SECRET_PREFIXES: &[&str] = &[
    "ghp_",
    "gho_",
    "ghu_",
    "github_pat_",
    "glpat-",
    "sk-",
    "sk_live_",
    "xoxb-",
    "xoxp-",
    "AKIA",
];

/// One secret to move: its keychain name and its value.
pub(super) struct Move {
    pub(super) name: String,
    pub(super) value: String,
}

/// Finds the secrets written out in the added servers' environments. With `keep` (the
/// `--move-secrets` choice), each becomes `${secret:NAME}` in the server and is returned to be
/// stored; otherwise each is noted as one that could be. `keychain_names` are the secrets the
/// keychain holds already, whose names are not taken again for another value.
pub(super) fn find(
    added: &mut [(String, Server)],
    outcomes: &mut [ServerImport],
    keep: bool,
    existing: &dyn Fn(&str) -> Result<Option<String>, SecretError>,
) -> Result<Vec<Move>, SecretError> {
    let mut moves: Vec<Move> = Vec::new();
    for (server_name, server) in added.iter_mut() {
        let mut notes = Vec::new();
        for (variable, value) in server.run.values_mut().iter_mut() {
            if !looks_secret(variable, value) {
                continue;
            }
            if !keep {
                notes.push(format!(
                    "`{variable}` looks like a secret written out: `--move-secrets` keeps it in \
                     the keychain instead of the config"
                ));
                continue;
            }
            let name = free_name(&base_name(server_name, variable), value, &moves, existing)?;
            notes.push(format!("`{variable}` is kept in the keychain as `{name}`"));
            moves.push(Move {
                name: name.clone(),
                value: std::mem::replace(value, format!("${{secret:{name}}}")),
            });
        }
        let outcome = outcomes.iter_mut().find(|outcome| {
            matches!(&outcome.action, ImportAction::Added { server, .. } if server == server_name)
        });
        if let Some(ServerImport {
            action: ImportAction::Added { notes: shown, .. },
            ..
        }) = outcome
        {
            shown.extend(notes);
        }
    }
    Ok(moves)
}

/// Stores every moved secret in the keychain; nothing is written to the config before this
/// succeeds.
pub(super) fn store(moves: &[Move]) -> Result<(), SecretError> {
    for secret in moves {
        Keychain::secrets().set(&secret.name, &secret.value)?;
    }
    Ok(())
}

/// Whether a variable holds a secret: by its name, or by how its value starts. References
/// (`${…}`) are not values.
fn looks_secret(variable: &str, value: &str) -> bool {
    if value.is_empty() || value.contains("${") {
        return false;
    }
    let upper = variable.to_ascii_uppercase();
    SECRET_WORDS.iter().any(|word| upper.contains(word))
        || upper.ends_with("_KEY")
        || upper.ends_with("_PAT")
        || SECRET_PREFIXES
            .iter()
            .any(|prefix| value.starts_with(prefix))
}

/// `server_variable`, lowercased, as a keychain name can be.
fn base_name(server: &str, variable: &str) -> String {
    format!("{server}_{variable}")
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '_' | '-' | '.' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '_',
        })
        .take(60)
        .collect()
}

/// `base`, or `base_2`, `base_3`… : the first name neither this import nor the keychain uses
/// for another value (the same value reuses its name).
fn free_name(
    base: &str,
    value: &str,
    moves: &[Move],
    existing: &dyn Fn(&str) -> Result<Option<String>, SecretError>,
) -> Result<String, SecretError> {
    for n in 1u32.. {
        let name = match n {
            1 => base.to_owned(),
            n => format!("{base}_{n}"),
        };
        if moves.iter().any(|secret| secret.name == name) {
            continue;
        }
        match existing(&name)? {
            Some(kept) if kept != value => continue,
            _ => return Ok(name),
        }
    }
    unreachable!("some number is free")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::run::Run;
    use super::*;

    #[test]
    fn secrets_are_known_by_their_names_or_their_values() {
        assert!(looks_secret("GITHUB_TOKEN", "x"));
        assert!(looks_secret("openai_api_key", "x"));
        assert!(looks_secret("DB_PASSWORD", "hunter2"));
        assert!(looks_secret("LINEAR_KEY", "x"));
        assert!(looks_secret("GH", "ghp_abc123"));
        assert!(!looks_secret("NOTES_DIR", "/home/ada/notes"));
        assert!(!looks_secret("GITHUB_TOKEN", "${env:GITHUB_TOKEN}"));
        assert!(!looks_secret("GITHUB_TOKEN", ""));
    }

    fn server(env: &[(&str, &str)]) -> Server {
        Server {
            run: Run::Local {
                command: "npx".to_owned(),
                args: Vec::new(),
                env: env
                    .iter()
                    .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                    .collect::<BTreeMap<_, _>>(),
                cwd: None,
            },
            sandbox: None,
            notes: Vec::new(),
        }
    }

    fn env(server: &mut Server) -> &BTreeMap<String, String> {
        server.run.values_mut()
    }

    fn outcome(name: &str) -> ServerImport {
        ServerImport {
            name: name.to_owned(),
            action: ImportAction::Added {
                server: name.to_owned(),
                taken: None,
                notes: Vec::new(),
            },
        }
    }

    #[test]
    fn moved_secrets_become_references_under_free_names() {
        let mut added = vec![
            (
                "GitHub".to_owned(),
                server(&[("GITHUB_TOKEN", "ghp_1"), ("ORG", "acme")]),
            ),
            ("gitlab".to_owned(), server(&[("TOKEN", "glpat-2")])),
        ];
        let mut outcomes = vec![outcome("GitHub"), outcome("gitlab")];
        // The keychain holds another value under the first name already.
        let existing = |name: &str| -> Result<Option<String>, SecretError> {
            Ok((name == "github_github_token").then(|| "older".to_owned()))
        };
        let moves = find(&mut added, &mut outcomes, true, &existing).expect("found");
        let moved: Vec<(&str, &str)> = moves
            .iter()
            .map(|secret| (secret.name.as_str(), secret.value.as_str()))
            .collect();
        assert_eq!(
            moved,
            [
                ("github_github_token_2", "ghp_1"),
                ("gitlab_token", "glpat-2")
            ]
        );
        assert_eq!(
            env(&mut added[0].1)["GITHUB_TOKEN"],
            "${secret:github_github_token_2}"
        );
        assert_eq!(env(&mut added[0].1)["ORG"], "acme");
        let ImportAction::Added { notes, .. } = &outcomes[1].action else {
            unreachable!("added above")
        };
        assert_eq!(
            notes,
            &["`TOKEN` is kept in the keychain as `gitlab_token`"]
        );

        let mut added = vec![("gitlab".to_owned(), server(&[("TOKEN", "glpat-2")]))];
        let mut outcomes = vec![outcome("gitlab")];
        let none = |_: &str| -> Result<Option<String>, SecretError> { Ok(None) };
        assert!(
            find(&mut added, &mut outcomes, false, &none)
                .expect("found")
                .is_empty()
        );
        assert_eq!(env(&mut added[0].1)["TOKEN"], "glpat-2", "left as it was");
        let ImportAction::Added { notes, .. } = &outcomes[0].action else {
            unreachable!("added above")
        };
        assert!(notes[0].contains("`--move-secrets` keeps it in the keychain"));
    }
}
