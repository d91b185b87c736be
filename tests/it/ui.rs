//! The dashboard in a real browser: runs the `node:test` suites in `tests/ui/` (playwright-core
//! driving Debian's Chromium) against a real `switchboard serve` with the demo server, the
//! official "everything" server, a server that always fails its start, and one invalid server
//! entry, with the dashboard's files embedded in the binary. The suites save screenshots of every
//! view to `artifacts/ui/`.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::*;

/// How long the whole node run may take; it needs well under a minute.
const NODE_LIMIT: Duration = Duration::from_secs(300);

/// The browser the suites drive.
const CHROMIUM: &str = "/usr/bin/chromium";

#[test]
fn the_dashboard_works_in_a_real_browser() {
    let playwright = node_modules().join("playwright-core/package.json");
    assert!(
        playwright.exists(),
        "{} is missing: run `npm ci` in {} first",
        playwright.display(),
        env!("CARGO_MANIFEST_DIR")
    );
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: apt-get install chromium (scripts/test does)"
    );
    let serve = DashboardServe::start();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let screenshots = root.join("artifacts/ui");

    let mut node = Command::new("node");
    node.arg("--test")
        .arg("tests/ui/")
        .current_dir(&root)
        .env("SWITCHBOARD_URL", &serve.dashboard)
        .env("SWITCHBOARD_SCREENSHOTS", &screenshots)
        .env("SWITCHBOARD_TEST_HOME", serve.home())
        .env("CHROMIUM", CHROMIUM);
    run_node_suite(node, NODE_LIMIT, &|| serve.log());
}

/// `switchboard serve` on a free port with its own directories, over a config with the demo
/// server, the "everything" server (one of its tools denied), a server that exits during its handshake (so there is a
/// failing backend to show), and an entry whose command does not exist (so the config is invalid
/// and the dashboard shows why).
struct DashboardServe {
    child: Child,
    /// The link printed at startup, `http://127.0.0.1:PORT/?token=…`.
    dashboard: String,
    log: Arc<Mutex<Vec<String>>>,
    dir: tempfile::TempDir,
}

impl DashboardServe {
    fn start() -> DashboardServe {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = format!(
            "[servers.demo]\ncommand = {demo:?}\nargs = [\"demo-server\"]\n\n\
             [servers.everything]\ncommand = {everything:?}\nargs = [\"stdio\"]\ntools_deny = [\"get-tiny-image\"]\n\n\
             [servers.flaky]\ncommand = \"python3\"\nargs = [\"-c\", {flaky:?}]\n\n\
             [servers.broken]\ncommand = \"/nonexistent/switchboard-ui-test-server\"\n",
            demo = switchboard_exe().to_string_lossy(),
            everything = everything_server().to_string_lossy(),
            flaky = "import sys; print('flaky: FLAKY_API_KEY is not set', file=sys.stderr); sys.exit(2)",
        );
        let config_path = dir.path().join("config.toml");
        std::fs::write(&config_path, config).expect("write config");
        let mut child = Command::new(switchboard_exe())
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&config_path)
            .env("SWITCHBOARD_RUNTIME_DIR", dir.path().join("run"))
            .env("SWITCHBOARD_DATA_DIR", dir.path().join("data"))
            // The dashboard's Install buttons write editors' configs into this home only.
            .env("HOME", dir.path().join("home"))
            .env("XDG_CONFIG_HOME", dir.path().join("home/.config"))
            .env("APPDATA", dir.path().join("home/AppData/Roaming"))
            // The default log level: the readiness lines this waits for, and backends (which
            // inherit the environment) without debug chatter on their stderr.
            .env_remove("SWITCHBOARD_LOG")
            .env("NO_COLOR", "1")
            .env_remove("SWITCHBOARD_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("switchboard serve starts");

        // A thread reads the log for as long as serve runs, so serve never blocks on a full pipe
        // and a failing test can show what serve said.
        let log = Arc::new(Mutex::new(Vec::new()));
        let (lines_tx, lines) = std::sync::mpsc::channel::<String>();
        let stderr = child.stderr.take().expect("stderr piped");
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let line = strip_ansi(&line);
                kept.lock().expect("log lock").push(line.clone());
                let _ = lines_tx.send(line);
            }
        });

        let mut serve = DashboardServe {
            child,
            dashboard: String::new(),
            log,
            dir,
        };
        let mut waiting_for = vec![
            "backend{name=demo}: ready".to_owned(),
            "backend{name=everything}: ready".to_owned(),
        ];
        let deadline = std::time::Instant::now() + EVENT_LIMIT;
        while serve.dashboard.is_empty() || !waiting_for.is_empty() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let Ok(line) = lines.recv_timeout(left) else {
                panic!(
                    "serve did not print its dashboard link with {waiting_for:?} ready within \
                     {EVENT_LIMIT:?}; log:\n{}",
                    serve.log()
                );
            };
            if let Some(link) = line.strip_prefix("dashboard: ") {
                serve.dashboard = link.trim().to_owned();
            }
            waiting_for.retain(|needle| !line.contains(needle.as_str()));
        }
        serve
    }

    fn log(&self) -> String {
        self.log.lock().expect("log lock").join("\n")
    }

    /// The home folder serve runs with, where editors' configs are installed.
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
}

impl Drop for DashboardServe {
    fn drop(&mut self) {
        terminate(&mut self.child);
    }
}
