//! Interoperability with the official TypeScript MCP SDK: runs the `node:test` suites in
//! `tests/js/` against a real `switchboard serve` in front of the demo server, the official
//! "everything" server and the misbehaving test server.
#![allow(clippy::disallowed_methods)]

mod support;

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::*;

/// How long the whole node run may take; it needs a few seconds.
const NODE_LIMIT: Duration = Duration::from_secs(300);

/// The suites to run. They are named explicitly: `node --test tests/js/` only picks files named
/// like `*.test.mjs` in a directory, so it would find nothing here and still exit 0.
fn suites() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/js");
    let mut suites: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "mjs"))
        .collect();
    suites.sort();
    assert!(!suites.is_empty(), "no .mjs suites in {}", dir.display());
    suites
}

#[test]
fn typescript_sdk_clients_work_against_switchboard() {
    let sdk = node_modules().join("@modelcontextprotocol/sdk/package.json");
    assert!(
        sdk.exists(),
        "{} is missing: run `npm ci` in {} first",
        sdk.display(),
        env!("CARGO_MANIFEST_DIR")
    );
    let serve = ServeProcess::start(&[
        ServedBackend::Demo,
        ServedBackend::Everything,
        ServedBackend::Misbehave,
    ]);

    let mut node = Command::new("node");
    node.arg("--test")
        .args(suites())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("SWITCHBOARD_URL", serve.url())
        .env("SWITCHBOARD_EXE", switchboard_exe())
        .envs(serve.env())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so that a run that overstays can be stopped whole.
        .process_group(0);
    let child = match node.spawn() {
        Ok(child) => child,
        Err(error) => panic!("cannot run node ({error}); install Node.js (see README.md)"),
    };
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let (done_tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(child.wait_with_output());
    });
    let output = match done.recv_timeout(NODE_LIMIT) {
        Ok(output) => output.expect("node's output is readable"),
        Err(_) => {
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
            panic!(
                "node --test did not finish within {NODE_LIMIT:?}; serve log:\n{}",
                serve.log()
            );
        }
    };

    // Whatever node left in its group (a `switchboard connect` of a client that was never
    // closed) goes before serve does: a shim that loses its Switchboard would start another.
    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);

    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let passed = stdout
        .lines()
        .find_map(|line| line.strip_prefix("# pass "))
        .and_then(|count| count.trim().parse::<u32>().ok())
        .unwrap_or(0);
    assert!(
        output.status.success() && passed > 0,
        "node --test failed ({status}, {passed} passed)\n\
         --- node stdout ---\n{stdout}\n--- node stderr ---\n{stderr}\n--- serve log ---\n{log}",
        status = output.status,
        log = serve.log(),
    );
}
