//! What an entry becomes in the config: which of its packages or remotes is used, what it asks
//! the person for, and the command line or URL, worked out from the entry alone (never from what
//! a page or prompt sends, which supplies only the inputs' values). Every argument is one argv
//! element: nothing passes through a shell, so `;`, `$(…)` or a quote in an entry is text.

use std::collections::{BTreeMap, BTreeSet};

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

/// How a registry entry's server is run or reached once added: what its entry in the config
/// will say, in the config's own syntax (secrets as `${secret:NAME}`, a literal `${` as `$${`),
/// or a bundle still to be read. (A server of the config, as read, is reached by a
/// `config::Launch`.)
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EntryLaunch {
    /// A program and its arguments and environment.
    Command {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
    },
    /// A server reached over HTTP.
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
pub(crate) struct Derived {
    pub(crate) launch: EntryLaunch,
    /// Secrets to keep in the keychain first: their names and values.
    pub(crate) secrets: Vec<(String, String)>,
    /// The exact version it runs.
    pub(crate) version: String,
    /// The package it runs (registry type, identifier), to check whose it is.
    pub(crate) package: Option<(String, String)>,
}

/// Why an entry cannot be added as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PlanError {
    #[error("{0}")]
    NotInstallable(String),
    #[error("{} required: {}", if .0.len() == 1 { "an input is" } else { "inputs are" }, .0.join(", "))]
    MissingInputs(Vec<String>),
}

/// Why no part of an entry can be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unusable {
    #[error("the entry lists no package and no remote")]
    NothingListed,
    /// What is wrong with each package and remote it lists, in its order.
    #[error("{}", .0.join("; "))]
    Refused(Vec<String>),
}

/// The part of `server` Switchboard would use: the first stdio package of a registry it runs,
/// else the first remote it speaks to; or why none can be used, naming each that was offered.
pub fn choose(server: &ServerJson) -> Result<Choice, Unusable> {
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
    match reasons.is_empty() {
        true => Err(Unusable::NothingListed),
        false => Err(Unusable::Refused(reasons)),
    }
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
    if kind == "oci" && package.identifier.starts_with('-') {
        return Some(format!(
            "{:?} is not an image name: it would be read as an option of docker",
            package.identifier
        ));
    }
    if kind == "oci" && oci_pin(&package.identifier).is_none() {
        return Some(format!(
            "the image {} is not pinned to a digest or an exact tag",
            package.identifier
        ));
    }
    if let Some(problem) = runtime_problem(package) {
        return Some(problem);
    }
    for variable in &package.environment_variables {
        let name = variable.name.as_deref().unwrap_or("");
        if let Some(problem) = env_name_problem(name) {
            return Some(format!(
                "the {kind} package {}: {problem}",
                package.identifier
            ));
        }
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
        if let Some(problem) = address_problem(&package.identifier) {
            return Some(format!("the bundle {}: {problem}", package.identifier));
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
    // Its variables are filled in later; any value stands for them here, and the URL they make
    // is checked again once they are.
    let mut example = remote.url.clone();
    for name in remote.variables.keys() {
        example = example.replace(&format!("{{{name}}}"), "1");
    }
    if let Some(problem) = address_problem(&example) {
        return Some(format!("the remote {}: {problem}", remote.url));
    }
    None
}

/// Why `url` is not an address Switchboard fetches or speaks to: it must parse, be `https`
/// (or `http` on this machine, which needs no TLS) and name no user or password, which would
/// otherwise hide the host that is really reached (`http://localhost:1@host/`).
pub(crate) fn address_problem(url: &str) -> Option<String> {
    let parsed = match url::Url::parse(url) {
        Ok(parsed) => parsed,
        Err(error) => return Some(format!("not an address ({error})")),
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Some(
            "the address names a user or password before its host, which hides where it \
             really goes"
                .to_owned(),
        );
    }
    match parsed.scheme() {
        "https" if parsed.host().is_some() => None,
        "http" if is_loopback(&parsed) => None,
        _ => Some("not on https".to_owned()),
    }
}

/// Whether `url` is on this machine: its host is `localhost` or a loopback address.
pub(crate) fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Docker's options an entry may pass before its image: an environment variable it names,
/// `--init`, and a volume whose folder on this machine the person chooses. Everything else
/// (`--privileged`, `--network`, `--pid`, `--ipc`, `--cap-add`, `--device`, `--entrypoint`,
/// `--security-opt`, a fixed host folder…) would let an entry take the machine.
const DOCKER_ENV: &[&str] = &["-e", "--env"];
const DOCKER_VOLUME: &[&str] = &["-v", "--volume"];
const DOCKER_INIT: &str = "--init";

/// Why `package`'s runtime arguments (the runner's own options, before the package) cannot be
/// passed. `npx` and `uvx` take none from an entry: an option there (`--registry`,
/// `--index-url`, `--with`) or a word (another package) would change what runs, whatever the
/// pin and the ownership check said.
fn runtime_problem(package: &Package) -> Option<String> {
    let kind = package.registry_type.as_str();
    let runner = match kind {
        "npm" => "npx",
        "pypi" => "uvx",
        "oci" => "docker",
        _ => return None,
    };
    for argument in &package.runtime_arguments {
        let shown = argument
            .input
            .name
            .clone()
            .or_else(|| argument.input.value.clone())
            .unwrap_or_else(|| argument_key(argument));
        let refused = |why: &str| {
            Some(format!(
                "the {kind} package {} passes {shown:?} to {runner}: {why}",
                package.identifier
            ))
        };
        if runner != "docker" {
            return refused(
                "Switchboard passes no option or argument of the runner from an entry, since \
                 it would change what runs",
            );
        }
        let flag = argument.input.name.as_deref().unwrap_or("");
        if argument.kind != "named" || flag.is_empty() {
            return refused(
                "an argument before the image would be read as one of docker's options",
            );
        }
        if DOCKER_ENV.contains(&flag) {
            let Some(fixed) = &argument.input.value else {
                return refused("an environment variable's name must be the entry's own");
            };
            let name = fixed.split('=').next().unwrap_or("");
            if let Some(problem) = env_name_problem(name) {
                return refused(&problem);
            }
        } else if DOCKER_VOLUME.contains(&flag) {
            if !is_chosen_folder(&argument.input) {
                return refused(
                    "a volume's folder on this machine must be one you choose, not the entry",
                );
            }
        } else if flag != DOCKER_INIT {
            return refused(
                "of docker's options an entry may pass only -e, --init and a -v whose folder \
                 you choose",
            );
        }
    }
    None
}

/// Whether a volume's host side is the person's to choose: the whole value asked, with no
/// default, or a fixed value that starts with a variable asked so (`{folder}:/data`).
fn is_chosen_folder(input: &Input) -> bool {
    let asked = |input: &Input| input.value.is_none() && input.default.is_none();
    match &input.value {
        None => input.default.is_none(),
        Some(fixed) => {
            let host = fixed.split(':').next().unwrap_or("");
            host.strip_prefix('{')
                .and_then(|rest| rest.strip_suffix('}'))
                .and_then(|name| input.variables.get(name))
                .is_some_and(asked)
        }
    }
}

/// Environment variables that steer a loader, a runtime or a runner rather than the server:
/// set by an entry, they run other code (`LD_PRELOAD`, `NODE_OPTIONS`), fetch from elsewhere
/// (`npm_config_registry`, `UV_DEFAULT_INDEX`, `PIP_INDEX_URL`) or reach another daemon
/// (`DOCKER_HOST`). Compared without regard to case, as npm and Windows read them.
const STEERING_PREFIXES: &[&str] = &[
    "LD_",
    "DYLD_",
    "NPM_CONFIG_",
    "UV_",
    "PIP_",
    "PYTHON",
    "DOCKER_",
    "BUN_",
    "DENO_",
    "YARN_",
    "PNPM_",
    "COREPACK_",
    "CONDA_",
    "PERL5",
    "RUBY",
    "GIT_",
    "JAVA_",
    "_JAVA_",
    "JDK_JAVA_",
    "DOTNET_",
    "GCONV_",
    "GLIBC_",
    "MALLOC_",
    "BUILDKIT_",
    "SWITCHBOARD_",
];
const STEERING_NAMES: &[&str] = &[
    "NODE_OPTIONS",
    "NODE_PATH",
    "NODE_EXTRA_CA_CERTS",
    "NODE_TLS_REJECT_UNAUTHORIZED",
    "PATH",
    "HOME",
    "SHELL",
    "BASH_ENV",
    "ENV",
    "IFS",
    "PS4",
    "PROMPT_COMMAND",
    "TMPDIR",
    "CLASSPATH",
    "VIRTUAL_ENV",
    "CONTAINER_HOST",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
];

/// Why an entry may not set the environment variable `name`: not a plain name, or one that
/// steers a loader or runner.
pub(crate) fn env_name_problem(name: &str) -> Option<String> {
    let plain = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !plain {
        return Some(format!(
            "{name:?} is not an environment variable's name (letters, digits and `_`)"
        ));
    }
    let upper = name.to_ascii_uppercase();
    let steers = STEERING_NAMES.contains(&upper.as_str())
        || STEERING_PREFIXES
            .iter()
            .any(|prefix| upper.starts_with(prefix));
    steers.then(|| {
        format!(
            "the environment variable {name} steers a loader or a runner (what it loads, runs \
             or fetches), so an entry may not set it"
        )
    })
}

/// Whether an input's name says it holds a credential, so that it is kept in the keychain
/// whatever the entry's `isSecret` says.
pub(crate) fn is_credential_name(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "AUTH",
        "CREDENTIAL",
        "COOKIE",
        "PRIVATE",
        "SESSION",
    ];
    let upper = name.to_ascii_uppercase();
    WORDS.iter().any(|word| upper.contains(word))
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
    let mut add = |key: String, input: &Input, credential: bool| {
        if !specs.iter().any(|spec| spec.key == key) {
            specs.push(InputSpec {
                secret: is_secret(&key, input, credential),
                key,
                description: input.description.clone(),
                required: input.is_required,
                default: input.default.clone(),
                choices: input.choices.clone(),
            });
        }
    };
    let asked = |key: String, input: &Input, add: &mut dyn FnMut(String, &Input, bool)| {
        match &input.value {
            // A fixed value asks only for its variables, secret when what they fill is.
            Some(_) => {
                for (name, variable) in &input.variables {
                    add(name.clone(), variable, is_credential_name(&key));
                }
            }
            None => add(key, input, false),
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
                if is_docker_init(package, argument) {
                    continue;
                }
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
                add(name.clone(), variable, false);
            }
            for header in &remote.headers {
                let key = header.name.clone().unwrap_or_default();
                asked(key, header, &mut add);
            }
        }
    }
    specs
}

/// Whether the value of `key` is a secret: the entry says so, its name says it holds a
/// credential, or it fills one (`credential`: a variable of an `Authorization` header).
fn is_secret(key: &str, input: &Input, credential: bool) -> bool {
    input.is_secret || credential || is_credential_name(key)
}

/// Whether `argument` is docker's `--init`, a flag that takes no value.
fn is_docker_init(package: &Package, argument: &Argument) -> bool {
    package.registry_type == "oci"
        && argument.kind == "named"
        && argument.input.name.as_deref() == Some(DOCKER_INIT)
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
pub(crate) struct Values<'a> {
    pub(crate) given: &'a BTreeMap<String, String>,
    /// The config's server name, which secrets' names start with.
    pub(crate) server: &'a str,
    /// Secret names in use already (in the keychain, or named by the config), which a new
    /// secret never takes.
    pub(crate) taken: &'a BTreeSet<String>,
}

impl Values<'_> {
    /// The value of `key` in config syntax, keeping a secret one aside; `None` when it is not
    /// given and has no default.
    fn value(
        &self,
        key: &str,
        input: &Input,
        credential: bool,
        secrets: &mut Vec<(String, String)>,
    ) -> Option<String> {
        let value = self
            .given
            .get(key)
            .filter(|value| !value.is_empty())
            .cloned()
            .or_else(|| input.default.clone())?;
        if is_secret(key, input, credential) {
            let base = secret_name(self.server, key);
            // The same value under the same name is one secret; a name in use already (here
            // for another value, in the keychain, or by another server) is never written
            // over: the next free one is taken instead.
            let name = (1..)
                .map(|n| numbered(&base, n))
                .find(|name| match secrets.iter().find(|(kept, _)| kept == name) {
                    Some((_, kept)) => *kept == value,
                    None => !self.taken.contains(name),
                })
                .expect("some numbered name is free");
            if !secrets.iter().any(|(kept, _)| *kept == name) {
                secrets.push((name.clone(), value));
            }
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
                    match self.value(name, variable, is_credential_name(key), secrets) {
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
                let value = self.value(key, input, false, secrets);
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
pub(crate) fn secret_name(server: &str, key: &str) -> String {
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

/// `base`, or `base_N` from the second on, in the 64 characters a secret's name takes.
fn numbered(base: &str, n: u32) -> String {
    if n == 1 {
        return base.to_owned();
    }
    let suffix = format!("_{n}");
    let kept: String = base.chars().take(64 - suffix.len()).collect();
    format!("{kept}{suffix}")
}

/// `choice` of `server` as a server of the config, with `values` for its inputs.
pub(crate) fn derive(
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
                    if is_docker_init(package, argument) {
                        out.push(DOCKER_INIT.to_owned());
                        continue;
                    }
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
            // A value the person typed for docker's own options (a volume's folder) cannot
            // become an option itself.
            if let Some(option) = runtime.windows(2).find(|pair| {
                (DOCKER_VOLUME.contains(&pair[0].as_str())
                    || DOCKER_ENV.contains(&pair[0].as_str()))
                    && pair[1].starts_with('-')
            }) {
                return Err(PlanError::NotInstallable(format!(
                    "the value of {} may not start with `-` ({:?})",
                    option[0], option[1]
                )));
            }
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
                    EntryLaunch::Bundle {
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
            if missing.is_empty()
                && let Some(problem) = address_problem(&url.replace("$${", "${"))
            {
                return Err(PlanError::NotInstallable(format!(
                    "the remote's address {url}: {problem}"
                )));
            }
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
                launch: EntryLaunch::Remote {
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

fn command(program: &str, args: Vec<String>, env: BTreeMap<String, String>) -> EntryLaunch {
    EntryLaunch::Command {
        command: program.to_owned(),
        args,
        env,
    }
}

#[cfg(test)]
mod tests;
