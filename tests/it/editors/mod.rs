//! `switchboard import` and `switchboard install` against sample configs of Claude Desktop, Claude
//! Code, Cursor, VS Code, Zed, Windsurf, Gemini CLI and Codex CLI (`tests/fixtures/editors/`:
//! comments, trailing commas, unknown keys, a UTF-8 byte order mark, UTF-16, CRLF, TOML, remote
//! servers, entries pointing at Switchboard, duplicates). The real
//! binary runs with its home folder (`HOME`, `XDG_CONFIG_HOME`, `APPDATA`) in a temporary folder,
//! so editors' files are found where the editors keep them, and nothing outside is touched.
//! This file holds the temporary home and the readers the tests share; the tests are in the
//! modules below, by what the binary does.

mod import;
mod install;
mod moving;
mod secrets;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::switchboard_exe;
use config::Config;

/// A temporary home folder for the binary.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// A file outside the home folder (our configs given with `--config`, say).
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs `switchboard ARGS` with this home and `extra_env`.
    fn run(&self, args: &[&str], extra_env: &[(&str, &str)]) -> Output {
        let home = self.home();
        Command::new(switchboard_exe())
            .args(args)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("APPDATA", home.join("AppData/Roaming"))
            .env_remove("SWITCHBOARD_CONFIG")
            .env_remove("CODEX_HOME")
            .envs(extra_env.iter().copied())
            .output()
            .expect("switchboard runs")
    }

    /// Runs `switchboard ARGS`, asserts that it succeeded, and returns its result: what it
    /// printed on stdout (notes go to stderr).
    fn succeed(&self, args: &[&str], extra_env: &[(&str, &str)]) -> String {
        let output = self.run(args, extra_env);
        let stderr = String::from_utf8(output.stderr).expect("UTF-8");
        assert!(output.status.success(), "{args:?} failed:\n{stderr}");
        String::from_utf8(output.stdout).expect("UTF-8")
    }

    /// Runs `switchboard ARGS --json`, asserts that it succeeded, and returns the one JSON
    /// document it printed on stdout.
    fn succeed_json(&self, args: &[&str], extra_env: &[(&str, &str)]) -> serde_json::Value {
        let args = [args, &["--json"]].concat();
        let stdout = self.succeed(&args, extra_env);
        serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("{error}: {stdout}"))
    }

    /// Runs `switchboard ARGS`, asserts that it failed, and returns what it printed.
    fn fail(&self, args: &[&str], extra_env: &[(&str, &str)]) -> String {
        let output = self.run(args, extra_env);
        let stderr = String::from_utf8(output.stderr).expect("UTF-8");
        assert_eq!(output.status.code(), Some(1), "{args:?}:\n{stderr}");
        stderr
    }

    /// Copies a sample into the home folder at `relative` and returns its bytes.
    fn place(&self, sample: &str, relative: &str) -> (PathBuf, Vec<u8>) {
        let path = self.home().join(relative);
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
        let bytes = std::fs::read(fixture(sample)).expect("read the sample");
        std::fs::write(&path, &bytes).expect("write");
        (path, bytes)
    }
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/editors")
        .join(name)
}

fn exe() -> String {
    switchboard_exe().to_string_lossy().into_owned()
}

fn arg(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("read")
}

/// The names in a folder, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

fn backend_names(config: &Config) -> Vec<&str> {
    config
        .backends
        .iter()
        .map(|backend| backend.name.as_str())
        .collect()
}

/// Diagnostics as `field: message`, positions left out (they move as a file grows).
fn problems(config: &Config) -> Vec<String> {
    config
        .diagnostics
        .iter()
        .map(|diagnostic| format!("{}: {}", diagnostic.field, diagnostic.message))
        .collect()
}
