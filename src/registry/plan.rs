//! What an entry becomes in the config: which of its packages or remotes is used, what it asks
//! the person for, and the command line or URL, worked out from the entry alone (never from what
//! a page or prompt sends, which supplies only the inputs' values). Every argument is one argv
//! element: nothing passes through a shell, so `;`, `$(…)` or a quote in an entry is text.

use std::collections::BTreeMap;

use serde::Serialize;

use super::entry::{Argument, Input, Package, Remote, ServerJson, is_exact_version};

/// The package registries whose servers Switchboard runs, with the runner and its hint.
const RUNNABLE: &[&str] = &["npm", "pypi", "oci", "mcpb"];

/// Which part of an entry is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Package(usize),
    Remote(usize),
}

/// Something the person is asked for when the entry is added.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputSpec {
    pub key: String,
    pub description: Option<String>,
    pub required: bool,
    pub secret: bool,
    pub default: Option<String>,
    pub choices: Vec<String>,
}

/// What an entry becomes, in the config's own syntax (secrets as `${secret:NAME}`, a literal
/// `${` as `$${`).
#[derive(Debug, Clone, PartialEq)]
pub enum Launch {
    Command {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
    },
    Remote {
        url: String,
        transport: String,
        headers: BTreeMap<String, String>,
    },
    /// An MCPB bundle: downloaded and checked against its digest before anything runs.
    Bundle { url: String, sha256: String },
}

/// An entry worked out for one server of the config.
#[derive(Debug, Clone, PartialEq)]
pub struct Derived {
    pub launch: Launch,
    /// Secrets to keep in the keychain first: their names and values.
    pub secrets: Vec<(String, String)>,
    /// The exact version it runs.
    pub version: String,
    /// The package it runs (registry type, identifier), to check whose it is.
    pub package: Option<(String, String)>,
}

/// Why an entry cannot be added as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("{0}")]
    NotInstallable(String),
    #[error("{} required: {}", if .0.len() == 1 { "an input is" } else { "inputs are" }, .0.join(", "))]
    MissingInputs(Vec<String>),
}

/// The part of `server` Switchboard would use: the first stdio package of a registry it runs,
/// else the first remote it speaks to; or why none can be used, naming each that was offered.
pub fn choose(server: &ServerJson) -> Result<Choice, String> {
    let mut reasons = Vec::new();
    for (index, package) in server.packages.iter().enumerate() {
        match package_problem(package) {
            None => return Ok(Choice::Package(index)),
            Some(reason) => reasons.push(reason),
        }
    }
    for (index, remote) in server.remotes.iter().enumerate() {
        match remote_problem(remote) {
            None => return Ok(Choice::Remote(index)),
            Some(reason) => reasons.push(reason),
        }
    }
    if reasons.is_empty() {
        reasons.push("the entry lists no package and no remote".to_owned());
    }
    Err(reasons.join("; "))
}

fn package_problem(package: &Package) -> Option<String> {
    let kind = package.registry_type.as_str();
    if !RUNNABLE.contains(&kind) {
        return Some(match kind {
            "nuget" => format!(
                "{} is a NuGet package, run by .NET's `dnx`, which Switchboard does not run",
                package.identifier
            ),
            other => format!(
                "{} is a package of `{other}`, a registry Switchboard does not know",
                package.identifier
            ),
        });
    }
    if package.transport.kind != "stdio" {
        return Some(format!(
            "the {kind} package {} serves over `{}`; Switchboard runs packages that speak stdio",
            package.identifier, package.transport.kind
        ));
    }
    if matches!(kind, "npm" | "pypi") {
        let version = package.version.as_deref().unwrap_or("");
        if !is_exact_version(version) {
            return Some(format!(
                "the {kind} package {} names no exact version ({version:?}); Switchboard runs \
                 only an exact release",
                package.identifier
            ));
        }
        if !is_package_name(kind, &package.identifier) {
            return Some(format!(
                "{:?} is not an {kind} package name",
                package.identifier
            ));
        }
    }
    if kind == "oci" && oci_pin(&package.identifier).is_none() {
        return Some(format!(
            "the image {} is not pinned to a digest or an exact tag",
            package.identifier
        ));
    }
    if kind == "mcpb" {
        let digest_ok = package.file_sha256.as_deref().is_some_and(|digest| {
            digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit())
        });
        if !digest_ok {
            return Some(format!(
                "the bundle {} gives no `fileSha256` to check it against",
                package.identifier
            ));
        }
        if !package.identifier.starts_with("https://") && !is_loopback_http(&package.identifier) {
            return Some(format!("the bundle {} is not on https", package.identifier));
        }
    }
    None
}

fn remote_problem(remote: &Remote) -> Option<String> {
    if !matches!(remote.kind.as_str(), "streamable-http" | "sse") {
        return Some(format!(
            "the remote {} speaks `{}`, a transport Switchboard does not know",
            remote.url, remote.kind
        ));
    }
    if !remote.url.starts_with("https://") && !is_loopback_http(&remote.url) {
        return Some(format!("the remote {} is not on https", remote.url));
    }
    None
}

/// An `http` URL of this machine (a server on it needs no TLS).
fn is_loopback_http(url: &str) -> bool {
    [
        "http://127.0.0.1:",
        "http://127.0.0.1/",
        "http://localhost:",
        "http://localhost/",
        "http://[::1]:",
    ]
    .iter()
    .any(|prefix| url.starts_with(prefix))
}

/// Whether `name` can be a package name of `registry` (so it cannot smuggle an option or a
/// version range into the runner's command line).
fn is_package_name(registry: &str, name: &str) -> bool {
    let bare = match registry {
        "npm" => match name.strip_prefix('@') {
            Some(scoped) => match scoped.split_once('/') {
                Some((scope, rest)) if !scope.is_empty() => {
                    valid_part(scope, "-._~") && valid_part(rest, "-._~")
                }
                _ => return false,
            },
            None => valid_part(name, "-._~"),
        },
        _ => valid_part(name, "-._"),
    };
    bare && !name.starts_with(['-', '.'])
}

fn valid_part(part: &str, extra: &str) -> bool {
    !part.is_empty()
        && part.len() <= 214
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
}

/// An OCI reference as pinned: by digest (`…@sha256:HEX`) or an exact tag (`…:1.2.3`).
fn oci_pin(identifier: &str) -> Option<&str> {
    if let Some((_, digest)) = identifier.split_once("@sha256:") {
        return (digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()))
            .then_some(identifier);
    }
    let (_, tag) = identifier.rsplit_once(':')?;
    (!tag.contains('/') && is_exact_version(tag)).then_some(identifier)
}

/// What adding `choice` of `server` asks the person for, in order, each key once.
pub fn inputs(server: &ServerJson, choice: Choice) -> Vec<InputSpec> {
    let mut specs: Vec<InputSpec> = Vec::new();
    let mut add = |key: String, input: &Input| {
        if !specs.iter().any(|spec| spec.key == key) {
            specs.push(InputSpec {
                key,
                description: input.description.clone(),
                required: input.is_required,
                secret: input.is_secret,
                default: input.default.clone(),
                choices: input.choices.clone(),
            });
        }
    };
    let asked = |key: String, input: &Input, add: &mut dyn FnMut(String, &Input)| {
        match &input.value {
            // A fixed value asks only for its variables.
            Some(_) => {
                for (name, variable) in &input.variables {
                    add(name.clone(), variable);
                }
            }
            None => add(key, input),
        }
    };
    match choice {
        Choice::Package(index) => {
            let package = &server.packages[index];
            for argument in package
                .runtime_arguments
                .iter()
                .chain(&package.package_arguments)
            {
                asked(argument_key(argument), &argument.input, &mut add);
            }
            for variable in &package.environment_variables {
                let key = variable.name.clone().unwrap_or_default();
                asked(key, variable, &mut add);
            }
        }
        Choice::Remote(index) => {
            let remote = &server.remotes[index];
            for (name, variable) in &remote.variables {
                add(name.clone(), variable);
            }
            for header in &remote.headers {
                let key = header.name.clone().unwrap_or_default();
                asked(key, header, &mut add);
            }
        }
    }
    specs
}

/// What an argument without a value is asked for as.
fn argument_key(argument: &Argument) -> String {
    argument
        .value_hint
        .clone()
        .or_else(|| {
            argument
                .input
                .name
                .as_deref()
                .map(|name| name.trim_start_matches('-').to_owned())
        })
        .unwrap_or_else(|| "argument".to_owned())
}

/// The values the person gave, and how a secret one is named in the keychain.
pub struct Values<'a> {
    pub given: &'a BTreeMap<String, String>,
    /// The config's server name, which secrets' names start with.
    pub server: &'a str,
}

impl Values<'_> {
    /// The value of `key` in config syntax, keeping a secret one aside; `None` when it is not
    /// given and has no default.
    fn value(
        &self,
        key: &str,
        input: &Input,
        secrets: &mut Vec<(String, String)>,
    ) -> Option<String> {
        let value = self
            .given
            .get(key)
            .filter(|value| !value.is_empty())
            .cloned()
            .or_else(|| input.default.clone())?;
        if input.is_secret {
            let name = secret_name(self.server, key);
            secrets.retain(|(kept, _)| *kept != name);
            secrets.push((name.clone(), value));
            Some(format!("${{secret:{name}}}"))
        } else {
            Some(value.replace("${", "$${"))
        }
    }

    /// `input`'s value: its fixed value with its variables filled in, or the person's.
    fn resolve(
        &self,
        key: &str,
        input: &Input,
        secrets: &mut Vec<(String, String)>,
        missing: &mut Vec<String>,
    ) -> Option<String> {
        match &input.value {
            Some(fixed) => {
                let mut text = fixed.replace("${", "$${");
                for (name, variable) in &input.variables {
                    let placeholder = format!("{{{name}}}");
                    if !text.contains(&placeholder) {
                        continue;
                    }
                    match self.value(name, variable, secrets) {
                        Some(value) => text = text.replace(&placeholder, &value),
                        None if variable.is_required => {
                            missing.push(name.clone());
                            return None;
                        }
                        None => text = text.replace(&placeholder, ""),
                    }
                }
                Some(text)
            }
            None => {
                let value = self.value(key, input, secrets);
                if value.is_none() && input.is_required {
                    missing.push(key.to_owned());
                }
                value
            }
        }
    }
}

/// The keychain name of a server's secret input: `SERVER_KEY`, in the characters secret names
/// take.
pub fn secret_name(server: &str, key: &str) -> String {
    format!("{server}_{key}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

/// `choice` of `server` as a server of the config, with `values` for its inputs.
pub fn derive(
    server: &ServerJson,
    choice: Choice,
    values: &Values<'_>,
) -> Result<Derived, PlanError> {
    let mut secrets = Vec::new();
    let mut missing = Vec::new();
    let derived = match choice {
        Choice::Package(index) => {
            let package = &server.packages[index];
            if let Some(problem) = package_problem(package) {
                return Err(PlanError::NotInstallable(problem));
            }
            let mut arguments = |list: &[Argument], out: &mut Vec<String>| {
                for argument in list {
                    let key = argument_key(argument);
                    let value = values.resolve(&key, &argument.input, &mut secrets, &mut missing);
                    match (argument.kind.as_str(), &argument.input.name, value) {
                        ("named", Some(flag), Some(value)) => {
                            out.push(flag.clone());
                            out.push(value);
                        }
                        (_, _, Some(value)) => out.push(value),
                        _ => {}
                    }
                }
            };
            let mut runtime = Vec::new();
            arguments(&package.runtime_arguments, &mut runtime);
            let mut trailing = Vec::new();
            arguments(&package.package_arguments, &mut trailing);
            let mut env = BTreeMap::new();
            for variable in &package.environment_variables {
                let Some(name) = variable.name.clone().filter(|name| !name.is_empty()) else {
                    continue;
                };
                if let Some(value) = values.resolve(&name, variable, &mut secrets, &mut missing) {
                    env.insert(name, value);
                }
            }
            let version = package.version.clone().unwrap_or_default();
            let (launch, version) = match package.registry_type.as_str() {
                "npm" => {
                    let mut args = vec!["-y".to_owned()];
                    args.extend(runtime);
                    args.push(format!("{}@{version}", package.identifier));
                    args.extend(trailing);
                    (command("npx", args, env), version)
                }
                "pypi" => {
                    let mut args = runtime;
                    args.push(format!("{}=={version}", package.identifier));
                    args.extend(trailing);
                    (command("uvx", args, env), version)
                }
                "oci" => {
                    let mut args = vec!["run".to_owned(), "-i".to_owned(), "--rm".to_owned()];
                    args.extend(runtime);
                    for name in env.keys() {
                        args.push("-e".to_owned());
                        args.push(name.clone());
                    }
                    args.push(package.identifier.clone());
                    args.extend(trailing);
                    let pinned = oci_pin(&package.identifier).unwrap_or_default();
                    let tag = pinned
                        .split_once("@sha256:")
                        .map(|(_, digest)| format!("sha256:{digest}"))
                        .or_else(|| pinned.rsplit_once(':').map(|(_, tag)| tag.to_owned()))
                        .unwrap_or_default();
                    (command("docker", args, env), tag)
                }
                _ => (
                    Launch::Bundle {
                        url: package.identifier.clone(),
                        sha256: package
                            .file_sha256
                            .clone()
                            .unwrap_or_default()
                            .to_ascii_lowercase(),
                    },
                    server.version.clone(),
                ),
            };
            Derived {
                launch,
                secrets: Vec::new(),
                version,
                package: Some((package.registry_type.clone(), package.identifier.clone())),
            }
        }
        Choice::Remote(index) => {
            let remote = &server.remotes[index];
            if let Some(problem) = remote_problem(remote) {
                return Err(PlanError::NotInstallable(problem));
            }
            let url_input = Input {
                value: Some(remote.url.clone()),
                variables: remote.variables.clone(),
                ..Input::default()
            };
            let url = values
                .resolve("url", &url_input, &mut secrets, &mut missing)
                .unwrap_or_default();
            let mut headers = BTreeMap::new();
            for header in &remote.headers {
                let Some(name) = header.name.clone().filter(|name| !name.is_empty()) else {
                    continue;
                };
                if let Some(value) = values.resolve(&name, header, &mut secrets, &mut missing) {
                    headers.insert(name, value);
                }
            }
            Derived {
                launch: Launch::Remote {
                    url,
                    transport: remote.kind.clone(),
                    headers,
                },
                secrets: Vec::new(),
                version: server.version.clone(),
                package: None,
            }
        }
    };
    if !missing.is_empty() {
        missing.dedup();
        return Err(PlanError::MissingInputs(missing));
    }
    Ok(Derived { secrets, ..derived })
}

fn command(program: &str, args: Vec<String>, env: BTreeMap<String, String>) -> Launch {
    Launch::Command {
        command: program.to_owned(),
        args,
        env,
    }
}

#[cfg(test)]
mod tests;
