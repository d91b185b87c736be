//! The dashboard in a real browser: runs the `node:test` suites in `tests/ui/` (playwright-core
//! driving Debian's Chromium) against a real `switchboard serve` with the demo server, the
//! official "everything" server, a server that always fails its start, and one invalid server
//! entry; the Profiles page over a valid config; and remote servers (a sign-in through a real
//! authorization server's pages) and secrets (a keychain of its own), with the dashboard's files
//! embedded in the binary. The suites save screenshots of every view to `artifacts/ui/`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::sign_in::{Protected, protected};
use crate::support::*;

/// How long the whole node run may take; it needs well under a minute.
const NODE_LIMIT: Duration = Duration::from_secs(300);

/// The browser the suites drive.
const CHROMIUM: &str = "/usr/bin/chromium";

#[test]
fn the_dashboard_works_in_a_real_browser() {
    node_module("playwright-core/package.json");
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: apt-get install chromium (scripts/test does)"
    );
    let serve = start_serve();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let screenshots = root.join("artifacts/ui");

    let mut node = Command::new("node");
    node.arg("--test")
        .arg("tests/ui/dashboard.test.mjs")
        .current_dir(&root)
        .env("SWITCHBOARD_URL", serve.dashboard_link())
        .env("SWITCHBOARD_SCREENSHOTS", &screenshots)
        .env("SWITCHBOARD_TEST_HOME", serve.dir().join("home"))
        .env("CHROMIUM", CHROMIUM);
    run_node_suite(node, NODE_LIMIT, &|| serve.log());
}

#[test]
fn the_profiles_page_switches_tools_in_a_real_browser() {
    node_module("playwright-core/package.json");
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: apt-get install chromium (scripts/test does)"
    );
    let config = format!(
        "[servers.demo]\ncommand = {demo:?}\nargs = [\"demo-server\"]\n\n\
         [servers.everything]\ncommand = {everything:?}\nargs = [\"stdio\"]\n\n\
         # Reviewers see the read-only tools.\n[profiles.review]\nservers = [\"everything\"]\n",
        demo = switchboard_exe().to_string_lossy(),
        everything = everything_server().to_string_lossy(),
    );
    let serve = ServeOptions::new(&config)
        .ready(&["demo", "everything"])
        .env_remove("SWITCHBOARD_LOG")
        .env_remove("SWITCHBOARD_TOKEN")
        .start();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut node = Command::new("node");
    node.arg("--test")
        .arg("tests/ui/profiles.test.mjs")
        .current_dir(&root)
        .env("SWITCHBOARD_URL", serve.dashboard_link())
        .env("SWITCHBOARD_SCREENSHOTS", root.join("artifacts/ui"))
        .env("SWITCHBOARD_CONFIG", serve.config_path())
        .env("CHROMIUM", CHROMIUM);
    run_node_suite(node, NODE_LIMIT, &|| serve.log());
}

#[test]
fn remote_servers_and_secrets_work_in_a_real_browser() {
    node_module("playwright-core/package.json");
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: apt-get install chromium (scripts/test does)"
    );
    let service = keychain_service();
    let Protected { oidc, remote, .. } = protected("3600");
    let remote_url = remote.field("url");
    let demo = switchboard_exe().to_string_lossy().into_owned();
    // `notes` names a secret the keychain does not hold yet: the config has that error, and
    // notes is left out until the dashboard sets it; demo, which names none, runs meanwhile.
    let config = format!(
        "[servers.demo]\ncommand = {demo:?}\nargs = [\"demo-server\"]\n\n\
         [servers.remote]\nurl = {remote_url:?}\nheaders = {{ \"X-Team\" = \"core-team-header-value\" }}\n\n\
         [servers.notes]\ncommand = {demo:?}\nargs = [\"demo-server\"]\n\
         env = {{ NOTES_TOKEN = \"${{secret:notes_token}}\" }}\n",
    );
    let serve = ServeOptions::new(&config)
        .ready(&["demo"])
        .env("SWITCHBOARD_KEYCHAIN_SERVICE", &service)
        .env_remove("SWITCHBOARD_LOG")
        .env_remove("SWITCHBOARD_TOKEN")
        .start();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut node = Command::new("node");
    node.arg("--test")
        .arg("tests/ui/remote.test.mjs")
        .current_dir(&root)
        .env("SWITCHBOARD_URL", serve.dashboard_link())
        .env("SWITCHBOARD_SCREENSHOTS", root.join("artifacts/ui"))
        .env("SWITCHBOARD_REMOTE_URL", &remote_url)
        .env("SWITCHBOARD_ISSUER", oidc.field("issuer"))
        .env("CHROMIUM", CHROMIUM);
    run_node_suite(node, NODE_LIMIT, &|| serve.log());
}

/// `switchboard serve` over a config with the demo server, the "everything" server (one of its
/// tools denied), a server that exits during its handshake (so there is a failing backend to
/// show), and an entry whose command does not exist (so the config is invalid and the dashboard
/// shows why). Its home folder is `home/` in its directory.
fn start_serve() -> ServeProcess {
    let config = format!(
        "[servers.demo]\ncommand = {demo:?}\nargs = [\"demo-server\"]\n\n\
         [servers.everything]\ncommand = {everything:?}\nargs = [\"stdio\"]\ntools_deny = [\"get-tiny-image\"]\n\n\
         [servers.flaky]\ncommand = \"python3\"\nargs = [\"-c\", {flaky:?}]\n\n\
         [servers.broken]\ncommand = \"/nonexistent/switchboard-ui-test-server\"\n",
        demo = switchboard_exe().to_string_lossy(),
        everything = everything_server().to_string_lossy(),
        flaky =
            "import sys; print('flaky: FLAKY_API_KEY is not set', file=sys.stderr); sys.exit(2)",
    );
    let options = ServeOptions::new(&config).ready(&["demo", "everything"]);
    let home = options.dir().join("home");
    options
        // The dashboard's Install buttons write editors' configs into this home only.
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("APPDATA", home.join("AppData/Roaming"))
        // The default log level: backends (which inherit the environment) without debug chatter
        // on their stderr.
        .env_remove("SWITCHBOARD_LOG")
        .env_remove("SWITCHBOARD_TOKEN")
        .start()
}
