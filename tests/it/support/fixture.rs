//! Helper servers a test starts beside Switchboard (a remote MCP server, an OAuth server): real
//! processes that print one line of JSON once they listen, and are killed when dropped.

use std::io::BufRead as _;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// How long a helper server may take to say it listens (a cold `node` or Python start).
const READY_LIMIT: Duration = Duration::from_secs(60);

/// A running helper server.
pub struct Fixture {
    child: Child,
    /// The JSON line it printed once it listened.
    pub ready: Value,
}

impl Fixture {
    /// Starts `command` and waits for its line of JSON on stdout; its stderr is the test's.
    pub fn start(mut command: Command) -> Fixture {
        let described = format!("{command:?}");
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|error| panic!("{described} starts: {error}"));
        let stdout = child.stdout.take().expect("piped");
        let (line_tx, line_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::BufReader::new(stdout).read_line(&mut line);
            let _ = line_tx.send(line);
        });
        let line = line_rx
            .recv_timeout(READY_LIMIT)
            .unwrap_or_else(|_| panic!("{described} said nothing within {READY_LIMIT:?}"));
        let ready = serde_json::from_str(line.trim())
            .unwrap_or_else(|_| panic!("{described} printed {line:?}, not JSON"));
        Fixture { child, ready }
    }

    /// A string field of its line, such as `url` or `issuer`.
    pub fn field(&self, name: &str) -> String {
        self.ready[name]
            .as_str()
            .unwrap_or_else(|| panic!("no {name} in {}", self.ready))
            .to_owned()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Python of `target/py`, where `scripts/test` installs the official Python SDK.
pub fn python() -> std::path::PathBuf {
    let python = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/py/bin/python");
    assert!(
        python.exists(),
        "{} is missing: scripts/test makes it (python3 -m venv target/py; target/py/bin/pip \
         install -r tests/requirements.txt)",
        python.display()
    );
    python
}

/// `tests/backends/remote_server.py` with `args`: a remote MCP server on the official Python SDK.
pub fn remote_server(args: &[&str]) -> Fixture {
    let mut command = Command::new(python());
    command
        .arg(super::backend_script("remote_server.py"))
        .args(args);
    Fixture::start(command)
}

/// `tests/auth/oidc_server.mjs` with `args`: a real OAuth server (oidc-provider).
pub fn oidc_server(args: &[&str]) -> Fixture {
    let mut command = Command::new("node");
    command
        .arg(
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/auth/oidc_server.mjs"),
        )
        .args(args);
    Fixture::start(command)
}

/// A keychain service of the test's own (for `SWITCHBOARD_KEYCHAIN_SERVICE`), so that tests
/// running at once never meet, and no test touches the secrets of the person running them.
pub fn keychain_service() -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    assert!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "the keychain tests need a Secret Service: run them through scripts/with-keyring (as \
         scripts/test does)"
    );
    format!(
        "switchboard-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}
