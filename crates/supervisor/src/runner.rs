//! Package runners: `npx`, `uvx` and the like, which install a package before they start the
//! server in it. Which command lines go through one, the package each names, and whether the
//! runner has started the server yet, as the system shows it (`platform::process::inspect`).
//!
//! Runners are known by the command's file name: `npx`, `npm exec`, `pnpm dlx`, `bunx`, `uvx`,
//! `pipx run` and their other spellings. While one installs, the backend's status says what it
//! installs, for up to [`INSTALL_TIMEOUT`]; once the server runs, [`PackageRun::version`] reads
//! the version it runs.

use std::time::Duration;

use platform::process::inspect;

/// How long a package runner may install its package before it starts the server. A first
/// `npx -y` or `uvx` downloads the package and its dependencies, which takes minutes on a slow
/// link; the handshake's own timeout counts from when the server starts.
pub(crate) const INSTALL_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// The events under which npm, pnpm and Bun run a package's install scripts
/// (`npm_lifecycle_event`); a child running one of them is installing, not the server.
const INSTALL_EVENTS: &[&str] = &[
    "preinstall",
    "install",
    "postinstall",
    "preprepare",
    "prepare",
    "postprepare",
];

/// How a runner is seen to have started the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handover {
    /// It starts the server as a child process (npm, pnpm, Bun, uv), and waits for it.
    Child,
    /// It replaces itself with the server (`exec`, as pipx does): its command line changes.
    Exec,
}

/// A package runner, known by its program's file name and the words that follow it.
struct Runner {
    words: &'static [&'static str],
    /// Options whose value names the package (`npx --package`, `uvx --from`).
    package_options: &'static [&'static str],
    /// Other options that take the next argument as their value.
    value_options: &'static [&'static str],
    handover: Handover,
}

const NPM_PACKAGE: &[&str] = &["-p", "--package"];
const NPM_VALUES: &[&str] = &[
    "-c",
    "--call",
    "-w",
    "--workspace",
    "--cache",
    "--prefix",
    "--registry",
    "--userconfig",
    "--loglevel",
];
const PNPM_VALUES: &[&str] = &["-C", "--dir", "--registry", "--reporter"];
const UV_PACKAGE: &[&str] = &["--from"];
const UV_VALUES: &[&str] = &[
    "-w",
    "--with",
    "--with-editable",
    "--with-requirements",
    "-p",
    "--python",
    "-c",
    "--constraints",
    "--overrides",
    "--build-constraints",
    "--index",
    "--default-index",
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "--index-strategy",
    "--keyring-provider",
    "--resolution",
    "--prerelease",
    "--exclude-newer",
    "-C",
    "--config-setting",
    "--link-mode",
    "-P",
    "--upgrade-package",
    "--reinstall-package",
    "--refresh-package",
    "--no-build-package",
    "--no-binary-package",
    "--python-preference",
    "--cache-dir",
    "--directory",
    "--project",
    "--config-file",
    "--env-file",
    "--allow-insecure-host",
    "--color",
];
const PIPX_PACKAGE: &[&str] = &["--spec"];
const PIPX_VALUES: &[&str] = &["--python", "--pip-args", "--index-url", "--backend"];

const RUNNERS: &[Runner] = &[
    Runner {
        words: &["npx"],
        package_options: NPM_PACKAGE,
        value_options: NPM_VALUES,
        handover: Handover::Child,
    },
    Runner {
        words: &["npm", "exec"],
        package_options: NPM_PACKAGE,
        value_options: NPM_VALUES,
        handover: Handover::Child,
    },
    Runner {
        words: &["npm", "x"],
        package_options: NPM_PACKAGE,
        value_options: NPM_VALUES,
        handover: Handover::Child,
    },
    Runner {
        words: &["pnpx"],
        package_options: &["--package"],
        value_options: PNPM_VALUES,
        handover: Handover::Child,
    },
    Runner {
        words: &["pnpm", "dlx"],
        package_options: &["--package"],
        value_options: PNPM_VALUES,
        handover: Handover::Child,
    },
    Runner {
        words: &["bunx"],
        package_options: NPM_PACKAGE,
        value_options: &["--cwd"],
        handover: Handover::Child,
    },
    Runner {
        words: &["bun", "x"],
        package_options: NPM_PACKAGE,
        value_options: &["--cwd"],
        handover: Handover::Child,
    },
    Runner {
        words: &["uvx"],
        package_options: UV_PACKAGE,
        value_options: UV_VALUES,
        handover: Handover::Child,
    },
    Runner {
        words: &["uv", "tool", "run"],
        package_options: UV_PACKAGE,
        value_options: UV_VALUES,
        handover: Handover::Child,
    },
    Runner {
        words: &["pipx", "run"],
        package_options: PIPX_PACKAGE,
        value_options: PIPX_VALUES,
        handover: Handover::Exec,
    },
];

/// A backend's command line that goes through a package runner.
#[derive(Debug, Clone)]
pub struct PackageRun {
    /// The runner, as the command line names it: `npx`, `pnpm dlx`, `uv tool run`…
    pub runner: String,
    /// The package, as the command line names it (with its version or source, if given).
    pub package: String,
    handover: Handover,
    /// The arguments the runner was given, which its command line ends with until it `exec`s.
    args: Vec<String>,
}

/// The package runner `command args` goes through and the package it names, if it is one.
pub fn package_run(command: &str, args: &[String]) -> Option<PackageRun> {
    let program = program_name(command)?;
    RUNNERS.iter().find_map(|runner| {
        let (first, subcommand) = runner.words.split_first()?;
        let follows = *first == program
            && args.len() >= subcommand.len()
            && subcommand.iter().zip(args).all(|(word, arg)| word == arg);
        if !follows {
            return None;
        }
        Some(PackageRun {
            runner: runner.words.join(" "),
            package: named_package(runner, &args[subcommand.len()..])?,
            handover: runner.handover,
            args: args.to_vec(),
        })
    })
}

/// A command's program as runners are known by: its file name, without the extension Windows
/// gives programs (`C:\\nodejs\\npx.cmd` is `npx`), in lower case.
fn program_name(command: &str) -> Option<String> {
    let name = command.rsplit(['/', '\\']).next()?.to_ascii_lowercase();
    let stem = [".exe", ".cmd", ".bat", ".com"]
        .into_iter()
        .find_map(|extension| name.strip_suffix(extension))
        .unwrap_or(&name);
    (!stem.is_empty()).then(|| stem.to_owned())
}

/// The package a runner's arguments name: the value of a package option, else the first
/// argument that is not an option (nor an option's value).
fn named_package(runner: &Runner, args: &[String]) -> Option<String> {
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--" {
            return args.next().cloned();
        }
        if !arg.starts_with('-') {
            return Some(arg.clone());
        }
        let (option, inline_value) = match arg.split_once('=') {
            Some((option, value)) => (option, Some(value)),
            None => (arg.as_str(), None),
        };
        if runner.package_options.contains(&option) {
            return match inline_value {
                Some(value) => Some(value.to_owned()),
                None => args.next().cloned(),
            };
        }
        if inline_value.is_none() && runner.value_options.contains(&option) {
            args.next();
        }
    }
    None
}

impl PackageRun {
    /// Whether the runner, the process `pid`, has started the server yet; `None` when the
    /// system cannot tell (the process is gone).
    pub(crate) fn server_started(&self, pid: u32) -> Option<bool> {
        match self.handover {
            Handover::Exec if platform::CURRENT != platform::System::Windows => {
                Some(!inspect::command_line(pid)?.ends_with(&self.args))
            }
            // Windows has no `exec`: a runner that would use it there starts a child instead.
            Handover::Exec | Handover::Child => {
                Some(inspect::children(pid)?.into_iter().any(runs_server))
            }
        }
    }
}

impl PackageRun {
    /// The version of the package the runner runs: the one its command line pins exactly
    /// (`pkg@1.2.3`, `pkg==1.2.3`), else what the runner resolved, read from the running server
    /// `pid`'s process tree: for npm's runners the `package.json` of the package in the
    /// `node_modules` its child's `PATH` starts with, for uv and pipx the `.dist-info` of the
    /// environment its interpreter runs from. `None` when neither tells.
    pub(crate) fn version(&self, pid: u32) -> Option<String> {
        if let Some(pinned) = pinned_version(&self.package) {
            return Some(pinned.to_owned());
        }
        let name = package_name(&self.package);
        let mut processes = vec![pid];
        for _ in 0..3 {
            let mut next = Vec::new();
            for process in &processes {
                if let Some(version) = installed_version(*process, name) {
                    return Some(version);
                }
                next.extend(inspect::children(*process).unwrap_or_default());
            }
            processes = next;
        }
        None
    }
}

/// The exact version a package spec pins: `@scope/name@1.2.3` or `name==1.2.3`.
fn pinned_version(spec: &str) -> Option<&str> {
    let version = match spec.split_once("==") {
        Some((_, version)) => version,
        None => &spec[spec.get(1..)?.rfind('@')? + 2..],
    };
    let exact = version.starts_with(|c: char| c.is_ascii_digit())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
    exact.then_some(version)
}

/// A package spec's name, without its version.
fn package_name(spec: &str) -> &str {
    if let Some((name, _)) = spec.split_once(['=', '<', '>', '~', '!']) {
        return name;
    }
    match spec.get(1..).and_then(|rest| rest.rfind('@')) {
        Some(index) => &spec[..index + 1],
        None => spec,
    }
}

/// The version of `name` as installed where the process `pid` runs it from.
fn installed_version(pid: u32, name: &str) -> Option<String> {
    let environment = inspect::environment(pid).unwrap_or_default();
    let path = environment.iter().find_map(|entry| {
        entry
            .strip_prefix("PATH=")
            .or_else(|| entry.strip_prefix("Path="))
    });
    if let Some(path) = path {
        for folder in std::env::split_paths(path) {
            let Some(modules) = node_modules_of(&folder) else {
                continue;
            };
            let manifest = modules.join(name).join("package.json");
            if let Ok(bytes) = std::fs::read(&manifest) {
                let version = serde_json::from_slice::<serde_json::Value>(&bytes).ok()?;
                return version.get("version")?.as_str().map(str::to_owned);
            }
        }
    }
    let program = inspect::command_line(pid)?.into_iter().next()?;
    let root = std::path::Path::new(&program).parent()?.parent()?;
    let wanted = name.to_ascii_lowercase().replace(['-', '.'], "_");
    // `lib/pythonX.Y/site-packages` on Unix, `Lib/site-packages` on Windows.
    let sites = std::fs::read_dir(root.join("lib"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| python.path().join("site-packages"))
        .chain(std::iter::once(root.join("Lib").join("site-packages")));
    for site in sites {
        for entry in std::fs::read_dir(&site).into_iter().flatten().flatten() {
            let file = entry.file_name().to_string_lossy().to_ascii_lowercase();
            if let Some(stem) = file.strip_suffix(".dist-info")
                && let Some((dist, version)) = stem.rsplit_once('-')
                && dist.replace('.', "_") == wanted
            {
                return Some(version.to_owned());
            }
        }
    }
    None
}

/// `…/node_modules/.bin` as its `node_modules`.
fn node_modules_of(folder: &std::path::Path) -> Option<&std::path::Path> {
    let parent = folder.parent()?;
    (folder.file_name()? == ".bin" && parent.file_name()? == "node_modules").then_some(parent)
}

/// Whether a runner's child is the server: neither a package's install script nor a process
/// that has already exited.
fn runs_server(child: u32) -> bool {
    inspect::environment(child).is_some_and(|environment| {
        !environment.iter().any(|entry| {
            entry
                .strip_prefix("npm_lifecycle_event=")
                .is_some_and(|event| INSTALL_EVENTS.contains(&event))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(command: &str, args: &[&str]) -> Option<(String, String)> {
        let args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
        package_run(command, &args).map(|run| (run.runner, run.package))
    }

    fn named(runner: &str, package: &str) -> Option<(String, String)> {
        Some((runner.to_owned(), package.to_owned()))
    }

    #[test]
    fn runners_are_known_by_file_name_and_subcommand() {
        assert_eq!(
            run(
                "npx",
                &["-y", "@modelcontextprotocol/server-everything", "stdio"]
            ),
            named("npx", "@modelcontextprotocol/server-everything")
        );
        assert_eq!(
            run(
                "/usr/local/bin/uvx",
                &["mcp-server-time", "--local-timezone=UTC"]
            ),
            named("uvx", "mcp-server-time")
        );
        assert_eq!(
            run("pnpm", &["dlx", "@playwright/mcp@latest"]),
            named("pnpm dlx", "@playwright/mcp@latest")
        );
        assert_eq!(
            run("uv", &["tool", "run", "mcp-server-git"]),
            named("uv tool run", "mcp-server-git")
        );
        assert_eq!(
            run("pipx", &["run", "mcp-server-fetch"]),
            named("pipx run", "mcp-server-fetch")
        );
        assert_eq!(run("bunx", &["some-server"]), named("bunx", "some-server"));
        assert_eq!(
            run(r"C:\Program Files\nodejs\npx.cmd", &["-y", "pkg"]),
            named("npx", "pkg")
        );
        assert_eq!(
            run(r"C:\Users\Zoë\.local\bin\UVX.EXE", &["mcp-server-time"]),
            named("uvx", "mcp-server-time")
        );
        assert_eq!(run("npm", &["install", "some-server"]), None);
        assert_eq!(run("uv", &["run", "server.py"]), None);
        assert_eq!(run("node", &["server.js"]), None);
        assert_eq!(run("npx", &["-y"]), None);
    }

    #[test]
    fn options_and_their_values_are_not_taken_for_the_package() {
        assert_eq!(
            run(
                "npx",
                &[
                    "--registry",
                    "https://npm.example",
                    "-y",
                    "pkg",
                    "--port",
                    "1"
                ]
            ),
            named("npx", "pkg")
        );
        assert_eq!(
            run("npx", &["--package=@scope/pkg@2", "-y", "pkg-bin"]),
            named("npx", "@scope/pkg@2")
        );
        assert_eq!(
            run("npx", &["-p", "@scope/pkg", "pkg-bin"]),
            named("npx", "@scope/pkg")
        );
        assert_eq!(
            run(
                "uvx",
                &[
                    "--python",
                    "3.12",
                    "--from",
                    "git+https://example.com/x",
                    "x"
                ]
            ),
            named("uvx", "git+https://example.com/x")
        );
        assert_eq!(
            run("uvx", &["--with=extra", "mcp-server-time"]),
            named("uvx", "mcp-server-time")
        );
        assert_eq!(run("npx", &["--", "pkg"]), named("npx", "pkg"));
        assert_eq!(
            run(
                "pipx",
                &["run", "--spec", "mcp-fetch==1.0", "mcp-server-fetch"]
            ),
            named("pipx run", "mcp-fetch==1.0")
        );
    }

    /// This test process stands for a runner that `exec`s: its command line ends with its own
    /// arguments, and not with others. Runners with children are checked by the integration
    /// tests, with real `npx` processes.
    #[test]
    fn a_runner_that_execs_is_seen_by_its_command_line() {
        let pid = std::process::id();
        let this = PackageRun {
            runner: "pipx run".to_owned(),
            package: "pkg".to_owned(),
            handover: Handover::Exec,
            args: std::env::args().skip(1).collect(),
        };
        assert_eq!(this.server_started(pid), Some(false));
        let replaced = PackageRun {
            args: vec!["an argument this process was not given".to_owned()],
            ..this.clone()
        };
        assert_eq!(replaced.server_started(pid), Some(true));
        let gone = PackageRun {
            handover: Handover::Child,
            ..this
        };
        assert_eq!(gone.server_started(u32::MAX), None);
    }
}
