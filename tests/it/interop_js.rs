//! Interoperability with the official TypeScript MCP SDK: runs the `node:test` suites in
//! `tests/js/` against a real `switchboard serve` in front of the demo server, the official
//! "everything" server and the misbehaving test server.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::support::*;

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
    node_module("@modelcontextprotocol/sdk/package.json");
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
        .envs(serve.env());
    run_node_suite(node, NODE_LIMIT, &|| serve.log());
}
