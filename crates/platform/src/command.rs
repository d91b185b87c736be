//! Finding the program a command names, the way the system's shell would.
//!
//! Unix: a name with a slash is a path; any other is looked up in `PATH` for an executable file.
//! Windows: a name is looked up in `PATH`, trying each extension of `PATHEXT` (`.COM;.EXE;.BAT;
//! .CMD` by default) unless it has one already. `npx`, `npm` and the commands npm installs are
//! batch files there (`npx.cmd`), which can only run through `cmd.exe`: that costs a process and
//! parses the arguments once more, by rules of its own. So a batch file that npm wrote (its own
//! `npx.cmd`/`npm.cmd`, or a `cmd-shim` for a package's command) is read, and the command runs
//! as `node SCRIPT ARGS…` directly; any other batch file runs through `cmd.exe` with Rust's
//! standard library quoting each argument for it (or refusing one it cannot quote safely).
//!
//! Programs started from a desktop (Finder, the Start menu, a login item) do not get the `PATH`
//! a terminal has: [`session_path`] asks the login shell once on Unix, and reads the user's and
//! the machine's `Path` from the registry on Windows.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// How to start a command: the program, and the arguments that go before the command's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub program: PathBuf,
    pub leading_args: Vec<OsString>,
}

/// Finds what `command` names in `path` (see the module's comment); `None` when nothing is
/// found.
pub fn resolve(command: &str, path: &OsStr) -> Option<Resolved> {
    let program = find(command, path)?;
    #[cfg(windows)]
    if let Some(resolved) = npm_shim_target(&program, path) {
        return Some(resolved);
    }
    Some(Resolved {
        program,
        leading_args: Vec::new(),
    })
}

/// The file `command` names, looked up in `path` when it is a bare name.
pub fn find(command: &str, path: &OsStr) -> Option<PathBuf> {
    if command.is_empty() {
        return None;
    }
    if is_path(command) {
        return with_extensions(Path::new(command)).find(|candidate| is_executable(candidate));
    }
    std::env::split_paths(path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .flat_map(|dir| with_extensions(&dir.join(command)).collect::<Vec<_>>())
        .find(|candidate| is_executable(candidate))
}

/// Whether a command is written as a path rather than a name to look up.
fn is_path(command: &str) -> bool {
    command.contains('/') || (cfg!(windows) && (command.contains('\\') || command.contains(':')))
}

/// The files a command written as `base` may be: `base` itself on Unix.
#[cfg(unix)]
fn with_extensions(base: &Path) -> impl Iterator<Item = PathBuf> + use<> {
    std::iter::once(base.to_path_buf())
}

/// The files a command written as `base` may be: on Windows, which only runs files with an
/// extension of `PATHEXT`, `base` if it has one, else `base` with each of them.
#[cfg(windows)]
fn with_extensions(base: &Path) -> impl Iterator<Item = PathBuf> + use<> {
    let extensions = path_extensions();
    let has_one = base.extension().and_then(OsStr::to_str).is_some_and(|ext| {
        extensions
            .iter()
            .any(|known| known.eq_ignore_ascii_case(&format!(".{ext}")))
    });
    let candidates: Vec<PathBuf> = match has_one {
        true => vec![base.to_path_buf()],
        false => extensions
            .iter()
            .map(|extension| {
                let mut name = base.as_os_str().to_owned();
                name.push(extension);
                PathBuf::from(name)
            })
            .collect(),
    };
    candidates.into_iter()
}

/// The extensions of executable files, from `PATHEXT`.
#[cfg(windows)]
fn path_extensions() -> Vec<String> {
    let listed = std::env::var("PATHEXT").unwrap_or_default();
    let extensions: Vec<String> = listed
        .split(';')
        .map(str::trim)
        .filter(|extension| extension.starts_with('.') && extension.len() > 1)
        .map(str::to_owned)
        .collect();
    if extensions.is_empty() {
        [".COM", ".EXE", ".BAT", ".CMD"].map(str::to_owned).to_vec()
    } else {
        extensions
    }
}

fn is_executable(path: &Path) -> bool {
    let Ok(metadata) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
    }
    #[cfg(windows)]
    {
        metadata.is_file()
    }
}

/// For a batch file npm wrote, `node` and the script it runs.
#[cfg(windows)]
fn npm_shim_target(program: &Path, path: &OsStr) -> Option<Resolved> {
    let is_batch = program
        .extension()
        .and_then(OsStr::to_str)
        .is_some_and(|ext| ext.eq_ignore_ascii_case("cmd") || ext.eq_ignore_ascii_case("bat"));
    if !is_batch {
        return None;
    }
    // npm's shims are a few hundred bytes; anything much larger is something else.
    let metadata = std::fs::metadata(program).ok()?;
    if metadata.len() > 16 * 1024 {
        return None;
    }
    let text = std::fs::read_to_string(program).ok()?;
    let dir = program.parent()?;
    let script = npm_shim_script(&text, dir, global_npm_prefix().as_deref())?;
    let node = [dir.join("node.exe")]
        .into_iter()
        .find(|candidate| candidate.is_file())
        .or_else(|| find("node", path))?;
    Some(Resolved {
        program: node,
        leading_args: vec![script.into_os_string()],
    })
}

/// Where `npm install -g` puts packages on Windows: `%APPDATA%\npm`.
#[cfg(windows)]
fn global_npm_prefix() -> Option<PathBuf> {
    std::env::var_os("APPDATA").map(|appdata| PathBuf::from(appdata).join("npm"))
}

/// The script a batch file written by npm runs with `node`, from its text: npm's own `npx.cmd`
/// and `npm.cmd` (which prefer the copy of npm a global `npm install -g npm` put under
/// `global_prefix`), or a `cmd-shim` for a package's command, whose last line runs
/// `"%_prog%" "%dp0%\…\script.js" %*`. `None` for any other batch file.
pub fn npm_shim_script(text: &str, dir: &Path, global_prefix: Option<&Path>) -> Option<PathBuf> {
    for (variable, script) in [("NPX_CLI_JS", "npx-cli.js"), ("NPM_CLI_JS", "npm-cli.js")] {
        if text.contains(&format!("\"%NODE_EXE%\" \"%{variable}%\" %*")) {
            let updated = global_prefix
                .map(|prefix| npm_script(prefix, script))
                .filter(|path| path.is_file());
            return Some(updated.unwrap_or_else(|| npm_script(dir, script)));
        }
    }
    let line = text
        .lines()
        .rev()
        .find(|line| line.contains("\"%_prog%\""))?;
    let after = &line[line.find("\"%_prog%\"")? + "\"%_prog%\"".len()..];
    let quoted = after.trim_start().strip_prefix("\"%dp0%\\")?;
    let (relative, rest) = quoted.split_once('"')?;
    if rest.trim() != "%*" || relative.contains('%') || relative.contains("..") {
        return None;
    }
    let mut script = dir.to_path_buf();
    script.extend(relative.split('\\').filter(|part| !part.is_empty()));
    Some(script)
}

fn npm_script(prefix: &Path, script: &str) -> PathBuf {
    prefix
        .join("node_modules")
        .join("npm")
        .join("bin")
        .join(script)
}

/// The `PATH` of the person's session: on Unix what their login shell sets (waited for at most
/// `patience`), on Windows the `Path` values of the registry (the user's after the machine's,
/// with `%VARIABLES%` expanded). `None` when it cannot be had.
pub(crate) fn session_path(patience: std::time::Duration) -> Option<OsString> {
    #[cfg(unix)]
    {
        login_shell_path(patience)
    }
    #[cfg(windows)]
    {
        let _ = patience;
        super::windows_registry::session_path()
    }
}

/// Asks the user's login shell for its PATH, interactive so that what its rc files add (nvm,
/// Homebrew, pyenv) is there, bounded in time so a slow or hanging profile cannot stall start.
#[cfg(unix)]
fn login_shell_path(patience: std::time::Duration) -> Option<OsString> {
    use std::io::Read;
    const MARKER: &str = "__switchboard_path__";
    let shell = std::env::var_os("SHELL").filter(|s| !s.is_empty())?;
    #[allow(clippy::disallowed_methods)] // the person's own shell, asked once, not a backend
    let mut child = std::process::Command::new(&shell)
        .args([
            "-l",
            "-i",
            "-c",
            &format!("printf '\\n{MARKER}%s\\n' \"$PATH\""),
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let deadline = std::time::Instant::now() + patience;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut out = Vec::new();
    child.stdout.as_mut()?.read_to_end(&mut out).ok()?;
    let text = String::from_utf8(out).ok()?;
    let line = text
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix(MARKER))?;
    let line = line.trim();
    (!line.is_empty()).then(|| OsString::from(line))
}

/// The PATH used to find backend commands: the session's PATH (the login shell's on Unix, the
/// registry's on Windows) followed by our own.
///
/// Apps started from a desktop do not inherit the PATH a terminal has, so `npx`, `uvx` or a
/// `node` installed by a version manager would not be found without asking. Asking a login shell
/// takes from a few hundred milliseconds to seconds, so the answer is kept in the data directory
/// (`session-path`): a start that finds it uses it at once and asks again in the background a
/// few seconds later, for the starts after it; only the first start ever waits for the shell.
pub fn search_path() -> OsString {
    static SEARCH_PATH: OnceLock<SearchPath> = OnceLock::new();
    SEARCH_PATH
        .get_or_init(|| SearchPath::start(crate::dirs::data_dir().join(SESSION_PATH_FILE)))
        .current()
}

/// The file in the data directory that keeps the session's PATH between runs.
const SESSION_PATH_FILE: &str = "session-path";

struct SearchPath {
    value: Arc<Mutex<OsString>>,
}

impl SearchPath {
    fn start(kept: PathBuf) -> SearchPath {
        let own = std::env::var_os("PATH").unwrap_or_default();
        let Some(known) = read_session_path(&kept) else {
            let session = session_path(WAITED_FOR).unwrap_or_default();
            keep_session_path(&kept, &session);
            return SearchPath {
                value: Arc::new(Mutex::new(merge_paths(&session, &own))),
            };
        };
        let value = Arc::new(Mutex::new(merge_paths(&known, &own)));
        let later = value.clone();
        let asked = std::thread::Builder::new()
            .name("session-path".to_owned())
            .spawn(move || {
                std::thread::sleep(ASK_AGAIN_AFTER);
                if let Some(session) = session_path(ASKED_LATER).filter(|session| *session != known)
                {
                    keep_session_path(&kept, &session);
                    tracing::info!(
                        "the login shell's PATH changed; backends started from now on use it"
                    );
                    *later
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner()) =
                        merge_paths(&session, &own);
                }
            });
        if let Err(error) = asked {
            tracing::warn!(%error, "cannot ask the login shell for its PATH again");
        }
        SearchPath { value }
    }

    fn current(&self) -> OsString {
        self.value
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

/// The session's PATH as a run before this one kept it.
fn read_session_path(kept: &Path) -> Option<OsString> {
    let text = std::fs::read_to_string(kept).ok()?;
    Some(OsString::from(text.trim_end_matches('\n')))
}

/// How long a start that has no session PATH kept waits for the login shell.
const WAITED_FOR: Duration = Duration::from_secs(3);
/// How long the login shell may take to answer while a start goes on without it.
const ASKED_LATER: Duration = Duration::from_secs(60);
/// How long a start waits before it asks again, so that the shell (a heavy profile runs for
/// seconds) does not take the CPU from the backends starting.
const ASK_AGAIN_AFTER: Duration = Duration::from_secs(5);

/// Keeps the session's PATH in `kept` for the starts after this one (nothing when there is none).
fn keep_session_path(kept: &Path, session: &OsStr) {
    if let Some(text) = session.to_str().filter(|text| !text.is_empty())
        && let Err(error) = crate::atomic::write_private(kept, format!("{text}\n").as_bytes())
    {
        tracing::debug!(%error, path = %kept.display(), "cannot keep the session's PATH");
    }
}

fn merge_paths(first: &OsStr, second: &OsStr) -> OsString {
    let mut seen = Vec::new();
    for dir in std::env::split_paths(first).chain(std::env::split_paths(second)) {
        if !dir.as_os_str().is_empty() && !seen.contains(&dir) {
            seen.push(dir);
        }
    }
    std::env::join_paths(seen).unwrap_or_default()
}

/// What provides a well-known command, and the official page on installing it.
struct InstallHint {
    /// The commands it provides, by file name.
    commands: &'static [&'static str],
    /// What to install: `Node.js`, `uv`…
    provider: &'static str,
    url: &'static str,
}

/// The commands MCP servers are most often started with, and what to install to have them.
const INSTALL_HINTS: &[InstallHint] = &[
    InstallHint {
        commands: &["npx", "npm", "node"],
        provider: "Node.js",
        url: "https://nodejs.org/en/download",
    },
    InstallHint {
        commands: &["uvx", "uv"],
        provider: "uv",
        url: "https://docs.astral.sh/uv/getting-started/installation/",
    },
    InstallHint {
        commands: &["bunx", "bun"],
        provider: "Bun",
        url: "https://bun.sh/docs/installation",
    },
    InstallHint {
        commands: &["pnpm", "pnpx"],
        provider: "pnpm",
        url: "https://pnpm.io/installation",
    },
    InstallHint {
        commands: &["pipx"],
        provider: "pipx",
        url: "https://pipx.pypa.io/stable/installation/",
    },
    InstallHint {
        commands: &["docker"],
        provider: "Docker",
        url: "https://docs.docker.com/get-started/get-docker/",
    },
    InstallHint {
        commands: &["deno"],
        provider: "Deno",
        url: "https://docs.deno.com/runtime/getting_started/installation/",
    },
    InstallHint {
        commands: &["python3", "python"],
        provider: "Python",
        url: "https://www.python.org/downloads/",
    },
];

/// What to add to a message saying `command` cannot be found: `; install uv: https://…` for a
/// well-known command (known by its file name, so `/opt/bin/uvx` is one too), nothing otherwise.
pub fn install_advice(command: &str) -> String {
    let name = Path::new(command)
        .file_name()
        .and_then(OsStr::to_str)
        .unwrap_or(command);
    INSTALL_HINTS
        .iter()
        .find(|hint| hint.commands.contains(&name))
        .map_or_else(String::new, |hint| {
            format!("; install {}: {}", hint.provider, hint.url)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_well_known_command_says_what_to_install() {
        assert_eq!(
            install_advice("npx"),
            "; install Node.js: https://nodejs.org/en/download"
        );
        assert_eq!(
            install_advice("/opt/homebrew/bin/uvx"),
            "; install uv: https://docs.astral.sh/uv/getting-started/installation/"
        );
        assert_eq!(
            install_advice("python3"),
            "; install Python: https://www.python.org/downloads/"
        );
        assert_eq!(install_advice("mcp-server-of-my-own"), "");
    }

    #[test]
    fn npm_batch_files_are_read_for_the_script_node_runs() {
        let dir = Path::new("C:/Program Files/nodejs");
        let npx = "@ECHO OFF\nSETLOCAL\nSET \"NODE_EXE=%~dp0\\node.exe\"\n\
                   SET \"NPX_CLI_JS=%~dp0\\node_modules\\npm\\bin\\npx-cli.js\"\n\
                   \"%NODE_EXE%\" \"%NPX_CLI_JS%\" %*\n";
        assert_eq!(
            npm_shim_script(npx, dir, None),
            Some(
                dir.join("node_modules")
                    .join("npm")
                    .join("bin")
                    .join("npx-cli.js")
            )
        );
        let package = "@ECHO off\nGOTO start\n:find_dp0\nSET dp0=%~dp0\nEXIT /b\n:start\n\
                       SETLOCAL\nCALL :find_dp0\n\n\
                       endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\"  \
                       \"%dp0%\\node_modules\\@scope\\server\\dist\\index.js\" %*\r\n";
        assert_eq!(
            npm_shim_script(package, dir, None),
            Some(
                dir.join("node_modules")
                    .join("@scope")
                    .join("server")
                    .join("dist")
                    .join("index.js")
            )
        );
        for other in [
            "@echo off\r\npython server.py %*\r\n",
            "\"%_prog%\" \"%dp0%\\..\\outside.js\" %*",
            "\"%_prog%\" \"%dp0%\\x.js\" %* & calc",
            "\"%_prog%\" \"%OTHER%\\x.js\" %*",
        ] {
            assert_eq!(npm_shim_script(other, dir, None), None, "{other}");
        }
    }

    #[test]
    fn a_command_is_found_on_the_path_given() {
        let dir = tempfile::tempdir().expect("temp dir");
        let program = dir
            .path()
            .join(if cfg!(windows) { "tool.exe" } else { "tool" });
        std::fs::write(&program, "").expect("write");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755))
                .expect("chmod");
        }
        let path = std::env::join_paths([dir.path()]).expect("a path");
        let found = find("tool", &path).expect("found on the path");
        // Windows tries the extensions of PATHEXT as PATHEXT spells them.
        assert!(
            found
                .to_string_lossy()
                .eq_ignore_ascii_case(&program.to_string_lossy())
        );
        assert_eq!(find("missing", &path), None);
        assert_eq!(find("", &path), None);
        let written = program.to_str().expect("utf-8").to_owned();
        let found = find(&written, OsStr::new("")).expect("a path is taken as it is");
        assert!(found.to_string_lossy().eq_ignore_ascii_case(&written));
    }
}
