//! Servers started through a package runner, behind a real serve: real `npx` from the npm that
//! is installed, offline, shows what it installs until it starts the server, and a first install
//! longer than the handshake timeout still starts; a runner that is not installed (`uvx`) is
//! named with what to install and where.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::api::{Events, events};
use crate::support::*;

const UV_INSTALL: &str = "install uv: https://docs.astral.sh/uv/getting-started/installation/";

/// A disabled server `name` run by `npx` with `args` (started by hand, so that its whole start
/// is seen), in `cwd`, with `extra` settings.
fn npx_server(name: &str, args: &[&str], cwd: &Path, extra: &str) -> String {
    format!(
        "[servers.{name}]\ncommand = \"npx\"\nargs = {args:?}\ncwd = {cwd:?}\nenabled = false\n\
         {extra}\n",
        cwd = cwd.to_string_lossy(),
    )
}

/// Starts `name` through the control API and returns the statuses the event stream gave for
/// it from then until it was ready (failing if it failed instead).
async fn start_and_follow(serve: &ServeProcess, stream: &mut Events, name: &str) -> Vec<Value> {
    let follow = async {
        let mut statuses = Vec::new();
        loop {
            let (event, data) = stream.next().await;
            if event != "status" || data["name"] != name {
                continue;
            }
            let state = data["state"].as_str().expect("a state").to_owned();
            statuses.push(data);
            match state.as_str() {
                "ready" => return statuses,
                "starting" | "stopped" => {}
                _ => panic!("{name} did not start: {statuses:#?}\nlog:\n{}", serve.log()),
            }
        }
    };
    let start = format!("/api/backends/{name}/start");
    let (_, statuses) = tokio::join!(serve.api_post(&start), follow);
    statuses
}

/// Now, in milliseconds since the Unix epoch.
fn unix_ms() -> u64 {
    platform::clock::unix_millis(std::time::SystemTime::now())
}

/// The statuses that said the backend was installing.
fn installing(statuses: &[Value]) -> Vec<&Value> {
    statuses
        .iter()
        .filter(|status| status["state"] == "starting" && !status["installing"].is_null())
        .collect()
}

#[tokio::test]
async fn a_server_from_npx_says_it_is_installing_until_npx_starts_it() {
    let package = "@modelcontextprotocol/server-everything";
    // npx finds the package in the repository's node_modules, as in a project that depends on
    // it; `--offline` keeps it from asking the registry about anything.
    node_module(package);
    let config = npx_server(
        "everything",
        &["--offline", "-y", package, "stdio"],
        Path::new(env!("CARGO_MANIFEST_DIR")),
        "",
    );
    let serve = ServeOptions::new(&config).start();
    let mut stream = events(&serve, SERVE_TOKEN).await;

    let statuses = start_and_follow(&serve, &mut stream, "everything").await;
    let said = installing(&statuses);
    assert!(!said.is_empty(), "never said installing: {statuses:#?}");
    for status in &said {
        assert_eq!(status["installing"]["runner"], "npx", "{status}");
        assert_eq!(status["installing"]["package"], package, "{status}");
        assert!(
            status["installing"]["since_ms"].as_u64().is_some(),
            "{status}"
        );
        assert!(status["pid"].as_u64().is_some(), "{status}");
    }
    let ready = statuses.last().expect("a ready status");
    assert!(ready["installing"].is_null(), "{ready}");

    // The server npx started is the one editors reach.
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp.open_session("npx-test").await.expect("a session");
    let echoed = mcp
        .call_tool(
            &session,
            1,
            "everything__echo",
            json!({"message": "through npx"}),
        )
        .await;
    assert_eq!(first_text(&echoed), "Echo: through npx");
    let summary = serve.backend_summary("everything").await;
    assert_eq!(summary["state"], "ready");
    assert!(summary["installing"].is_null(), "{summary}");
}

/// A package npm must really install: a tarball whose install script takes six seconds (as
/// packages that download or build something on install do), and whose command runs
/// server-everything. npm runs that script as a child of `npx`, which must not be taken for the
/// server; and the handshake timeout of three seconds counts from when npx starts the server.
#[tokio::test]
async fn a_first_install_longer_than_the_handshake_timeout_still_starts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = dir.path().join("source");
    std::fs::create_dir(&source).expect("a package directory");
    std::fs::write(
        source.join("package.json"),
        json!({
            "name": "slow-install-everything",
            "version": "1.0.0",
            "bin": { "slow-install-everything": "server.mjs" },
            "scripts": { "postinstall": "node -e \"setTimeout(() => {}, 6000)\"" },
        })
        .to_string(),
    )
    .expect("write package.json");
    let everything = node_module("@modelcontextprotocol/server-everything/dist/index.js");
    std::fs::write(
        source.join("server.mjs"),
        format!(
            "#!/usr/bin/env node\nawait import({:?});\n",
            format!("file://{}", everything.display())
        ),
    )
    .expect("write server.mjs");
    let packed = Command::new("npm")
        .args(["pack", "--pack-destination"])
        .arg(dir.path())
        .current_dir(&source)
        .output()
        .expect("npm runs");
    assert!(packed.status.success(), "npm pack: {packed:?}");
    let tarball = dir.path().join("slow-install-everything-1.0.0.tgz");
    let package = format!("--package={}", tarball.display());
    // Its own npm cache, so that npx installs it afresh and nothing is left behind.
    let extra = format!(
        "handshake_timeout = \"3s\"\nenv = {{ npm_config_cache = {:?}, \
         npm_config_update_notifier = \"false\" }}",
        dir.path().join("npm-cache").to_string_lossy()
    );
    let config = npx_server(
        "slow",
        &[
            "--offline",
            "-y",
            &package,
            "slow-install-everything",
            "stdio",
        ],
        dir.path(),
        &extra,
    );
    let serve = ServeOptions::new(&config).start();
    let mut stream = events(&serve, SERVE_TOKEN).await;

    let statuses = start_and_follow(&serve, &mut stream, "slow").await;
    let said = installing(&statuses);
    let first = said.first().expect("said installing");
    assert_eq!(first["installing"]["runner"], "npx");
    assert_eq!(
        first["installing"]["package"],
        tarball.to_string_lossy().as_ref()
    );
    let since_ms = first["installing"]["since_ms"].as_u64().expect("a time");
    let detail = serve.api_get("/api/backends/slow").await;
    let ready_since_ms = detail["uptime_ms"]
        .as_u64()
        .map(|uptime| unix_ms() - uptime)
        .expect("ready, with an uptime");
    assert!(
        ready_since_ms >= since_ms + 6000,
        "ready {} ms after installing began, before the install script could end",
        ready_since_ms.saturating_sub(since_ms)
    );
    assert_eq!(
        detail["history"].as_array().map(Vec::len),
        Some(0),
        "the first start succeeded: {detail:#}"
    );
    assert!(detail["last_error"].is_null(), "{detail:#}");

    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp
        .open_session("slow-install-test")
        .await
        .expect("a session");
    let echoed = mcp
        .call_tool(&session, 1, "slow__echo", json!({"message": "installed"}))
        .await;
    assert_eq!(first_text(&echoed), "Echo: installed");
}

#[tokio::test]
async fn a_missing_uvx_names_uv_and_where_to_install_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let empty_bin = dir.path().join("bin");
    std::fs::create_dir(&empty_bin).expect("an empty PATH directory");

    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[servers.time]\ncommand = \"uvx\"\nargs = [\"mcp-server-time\"]\nenv = {{ PATH = {:?} }}\n",
            empty_bin.to_string_lossy()
        ),
    )
    .expect("write config");
    let output = Command::new(switchboard_exe())
        .args(["check", "--config"])
        .arg(&config)
        .output()
        .expect("runs");
    // `check`'s report is its result: on stdout.
    let report = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{report}");
    assert!(
        report.contains(&format!(
            "error: servers.time.command: `uvx` was not found in the PATH set in `env`; {UV_INSTALL}"
        )),
        "{report}"
    );

    // A backend started all the same (by the engine, which serve runs) fails the same way.
    let mut backend = config::BackendConfig::new("time", "uvx", vec!["mcp-server-time".to_owned()]);
    backend.restart = fast_restarts();
    backend
        .process_mut()
        .expect("a local server")
        .env
        .insert("PATH".to_owned(), empty_bin.to_string_lossy().into_owned());
    let engine = engine(vec![backend]);
    let handle = engine.backend("time").expect("configured");
    let status = wait_status(&handle, |status| status.last_error.is_some()).await;
    assert_eq!(
        status.last_error.as_deref(),
        Some(
            format!(
                "command `uvx` was not found on PATH ({}); {UV_INSTALL}",
                empty_bin.display()
            )
            .as_str()
        )
    );
    assert!(status.installing.is_none());
    engine.shutdown().await;
}
