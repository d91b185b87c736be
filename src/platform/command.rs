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
pub fn session_path(patience: std::time::Duration) -> Option<OsString> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
