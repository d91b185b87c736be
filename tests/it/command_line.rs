//! The command line as a program other programs run: results on stdout (so that they can be
//! piped), diagnostics on stderr, `--json` that parses, and the exit codes `--help` lists.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::*;

/// Runs `switchboard ARGS` with its directories in `dir`.
fn switchboard(dir: &Path, args: &[&str]) -> Output {
    Command::new(switchboard_exe())
        .args(args)
        .env("SWITCHBOARD_RUNTIME_DIR", dir.join("run"))
        .env("SWITCHBOARD_DATA_DIR", dir.join("data"))
        .env("HOME", dir.join("home"))
        .env("XDG_CONFIG_HOME", dir.join("home/.config"))
        .env_remove("SWITCHBOARD_CONFIG")
        .output()
        .expect("switchboard runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn check_without_a_config_file_says_once_where_serve_writes_one() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere/config.toml");
    let checked = switchboard(
        dir.path(),
        &["check", "--config", missing.to_str().unwrap()],
    );
    let stderr = text(&checked.stderr);
    assert_eq!(checked.status.code(), Some(1), "{stderr}");
    assert!(checked.stdout.is_empty(), "{}", text(&checked.stdout));
    assert_eq!(
        stderr,
        format!(
            "switchboard: there is no config file at {}; `switchboard serve` writes a default \
             one there when it starts, or check another with --config PATH\n",
            missing.display()
        )
    );
    assert!(!stderr.contains("No such file"), "{stderr}");
}

#[test]
fn check_reports_on_stdout_and_as_json_and_exits_1_on_errors() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "[servers.good]\ncommand = \"python3\"\n\n[servers.missing]\ncommand = \"surely-not-a-command-xyz\"\n",
    )
    .unwrap();
    let path = config.to_str().unwrap();
    let checked = switchboard(dir.path(), &["check", "--config", path]);
    let stdout = text(&checked.stdout);
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked.stderr));
    assert!(
        stdout.contains(&format!("{path}:5:11: error: servers.missing.command")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("{path}: 1 valid backend(s): good")),
        "{stdout}"
    );

    let checked = switchboard(dir.path(), &["check", "--config", path, "--json"]);
    assert_eq!(checked.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&checked.stdout).expect("one JSON document");
    assert_eq!(report["config"], path);
    assert_eq!(report["valid"], false);
    assert_eq!(report["servers"], serde_json::json!(["good"]));
    let diagnostic = &report["diagnostics"][0];
    assert_eq!(diagnostic["severity"], "error", "{report}");
    assert_eq!(diagnostic["field"], "servers.missing.command", "{report}");
    assert_eq!(
        (&diagnostic["line"], &diagnostic["column"]),
        (&5.into(), &11.into())
    );
    assert!(
        diagnostic["message"]
            .as_str()
            .unwrap()
            .contains("surely-not-a-command-xyz"),
        "{report}"
    );

    // Fixed: valid, exit 0, still one document.
    std::fs::write(&config, "[servers.good]\ncommand = \"python3\"\n").unwrap();
    let checked = switchboard(dir.path(), &["check", "--config", path, "--json"]);
    assert_eq!(checked.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&checked.stdout).expect("one JSON document");
    assert_eq!(report["valid"], true);
    assert_eq!(report["not_counted"], serde_json::json!(["good"]));
}

#[test]
fn the_help_lists_the_exit_codes_and_a_usage_error_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let help = switchboard(dir.path(), &["--help"]);
    assert_eq!(help.status.code(), Some(0));
    let stdout = text(&help.stdout);
    for line in [
        "Exit codes:",
        "  1  the command failed, or `check` found errors",
        "  2  usage error: an unknown command, argument or flag",
        "  3  `status`: no instance is running",
    ] {
        assert!(stdout.contains(line), "{line:?} in {stdout}");
    }
    let wrong = switchboard(dir.path(), &["check", "--no-such-flag"]);
    assert_eq!(wrong.status.code(), Some(2), "{}", text(&wrong.stderr));
}
