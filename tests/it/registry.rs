//! Servers added from a registry: a real source of the v0.1 API (`tests/registry/source.py`)
//! serving real `server.json` entries (`tests/registry/entries.json`), a real `serve`, the real
//! packages from npm (`@modelcontextprotocol/server-everything`) and PyPI (`mcp-server-time`,
//! run by `uvx`), the real keychain (gnome-keyring, through `scripts/with-keyring`) and a real
//! remote server that wants a secret header. Adding pins an exact version and holds the first
//! tools for review; updating moves the pin; removing leaves nothing behind; every bad entry or
//! source is refused saying why.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// How long a first `npx`/`uvx` install may take.
const INSTALL_LIMIT: Duration = Duration::from_secs(240);

fn source(args: &[&str]) -> Fixture {
    let mut command = Command::new(python());
    command
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/registry/source.py"))
        .args(args);
    Fixture::start(command)
}

/// `target/py/bin` (where `uv` is installed) first on a PATH.
fn path_with_uv() -> String {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/py/bin");
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A serve whose only registry source is `url` (and the built-in set), with a keychain service
/// of its own.
fn serve_with_source(url: &str, service: &str) -> ServeProcess {
    ServeOptions::new(&format!("[registry]\nsources = [{url:?}]\n"))
        .env("SWITCHBOARD_KEYCHAIN_SERVICE", service)
        .env("PATH", path_with_uv())
        .start()
}

/// Runs `switchboard ARGS` beside `serve` with `stdin`; whether it succeeded, its stdout and
/// its stderr.
fn cli(serve: &ServeProcess, service: &str, args: &[&str], stdin: &str) -> (bool, String, String) {
    use std::io::Write as _;
    let mut child = Command::new(switchboard_exe())
        .args(args)
        .envs(serve.env())
        .env("SWITCHBOARD_KEYCHAIN_SERVICE", service)
        .env("PATH", path_with_uv())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("switchboard runs");
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(stdin.as_bytes())
        .expect("stdin");
    let output = child.wait_with_output().expect("switchboard ends");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `POST /api/registry/add` as the dashboard makes it: first without `confirm`, which answers
/// the plan and writes nothing (checked here), then with the plan's `confirm`. The plan, and
/// the status and answer of the confirmation.
async fn add_confirmed(serve: &ServeProcess, body: Value) -> (Value, u16, Value) {
    let before = std::fs::read_to_string(serve.config_path()).unwrap();
    let (status, plan) = serve
        .api_post_body("/api/registry/add", &body.to_string())
        .await;
    assert_eq!(status, 200, "{body}: {plan}");
    assert!(plan["confirm"].is_string(), "{plan}");
    assert_eq!(
        std::fs::read_to_string(serve.config_path()).unwrap(),
        before,
        "a plan writes nothing"
    );
    let mut confirmed = body;
    confirmed["confirm"] = plan["confirm"].clone();
    let (status, added) = serve
        .api_post_body("/api/registry/add", &confirmed.to_string())
        .await;
    (plan, status, added)
}

/// Approves everything of `server` that is held (as the Review page's "approve all" would),
/// once something is.
async fn approve_all(serve: &ServeProcess, server: &str) -> Vec<String> {
    let keys = eventually(&format!("{server}'s tools held"), INSTALL_LIMIT, || async {
        let report = serve.api_get("/api/pins").await;
        let keys: Vec<String> = report["held"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|one| one["server"] == server)
            .filter_map(|one| one["key"].as_str().map(str::to_owned))
            .collect();
        if keys
            .iter()
            .any(|key| !key.contains(':') && key != "instructions")
        {
            Ok(keys)
        } else {
            Err(report)
        }
    })
    .await;
    let body = json!({ "tools": keys }).to_string();
    let (status, answer) = serve
        .api_post_body(&format!("/api/pins/{server}/approve"), &body)
        .await;
    assert_eq!(status, 200, "{answer}");
    keys
}

/// The exposed names `/mcp`'s `tools/list` gives a new session.
async fn listed_tools(serve: &ServeProcess) -> Vec<String> {
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp.open_session("registry-test").await.expect("a session");
    let list = mcp.result(&session, 2, "tools/list", json!({})).await;
    sorted_tool_names(&list)
}

/// `DELETE /api/servers/NAME`, as the dashboard's Remove does; panics unless it is done.
async fn remove_server(serve: &ServeProcess, name: &str) {
    let response = serve
        .client()
        .delete(serve.http_url(&format!("/api/servers/{name}")))
        .bearer_auth(SERVE_TOKEN)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

async fn wait_version(serve: &ServeProcess, server: &str, version: &str) -> Value {
    eventually(
        &format!("{server} ready at {version}"),
        INSTALL_LIMIT,
        || async {
            let summary = serve.backend_summary(server).await;
            if summary["state"] == "ready" && summary["version"] == version {
                Ok(summary)
            } else {
                Err(summary)
            }
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn an_entry_added_from_the_dashboard_runs_pinned_waits_for_review_updates_and_goes() {
    let source = source(&["--page-size", "4"]);
    let url = source.field("url");
    let service = keychain_service();
    let serve = serve_with_source(&url, &service);

    // Search pages through the source and never shows the deleted entry.
    let found = serve.api_get("/api/registry/search?q=").await;
    let names: Vec<&str> = found["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"kbag") && names.contains(&"io.decisionrules/mcp-server"),
        "{found}"
    );
    assert!(
        !names.contains(&"io.github.example/taken-down"),
        "{names:?}"
    );
    let airtable = found["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["name"] == "io.github.domdomegg/airtable-mcp-server")
        .unwrap();
    assert_eq!(airtable["version"], "1.7.3", "the newest version is shown");
    assert_eq!(airtable["inputs"][0]["key"], "AIRTABLE_API_KEY");
    assert_eq!(airtable["inputs"][0]["secret"], true);

    // Added at an older version: the exact pin, the comment, the first tools held.
    let (plan, status, added) = add_confirmed(
        &serve,
        json!({"name": "io.github.modelcontextprotocol/server-everything", "version": "2026.8.18", "server": "everything"}),
    )
    .await;
    assert_eq!(
        plan["launch"],
        json!({"kind": "command", "program": "npx", "args": ["-y", "@modelcontextprotocol/server-everything@2026.8.18", "stdio"], "env": {}}),
        "the plan shows exactly what runs: {plan}"
    );
    assert_eq!(status, 200, "{added}");
    assert_eq!(added["held"], true);
    assert_eq!(
        added["command"],
        "npx -y @modelcontextprotocol/server-everything@2026.8.18 stdio"
    );
    let config = std::fs::read_to_string(serve.config_path()).unwrap();
    assert!(
        config.contains("# Added from the MCP Registry: io.github.modelcontextprotocol/server-everything 2026.8.18."),
        "{config}"
    );
    wait_version(&serve, "everything", "2026.8.18").await;
    assert!(
        !listed_tools(&serve)
            .await
            .iter()
            .any(|name| name.starts_with("everything__")),
        "nothing of a new server reaches editors before its review"
    );
    let approved = approve_all(&serve, "everything").await;
    assert!(approved.contains(&"echo".to_owned()), "{approved:?}");
    eventually("its tools listed once approved", EVENT_LIMIT, || async {
        let tools = listed_tools(&serve).await;
        if tools.contains(&"everything__echo".to_owned()) {
            Ok(())
        } else {
            Err(tools)
        }
    })
    .await;

    // Its source has a newer release: shown, and an update moves the pin.
    let installed = serve.api_get("/api/registry/installed").await;
    let everything = installed
        .as_array()
        .unwrap()
        .iter()
        .find(|one| one["server"] == "everything")
        .unwrap();
    assert_eq!(everything["version"], "2026.8.18");
    assert_eq!(everything["latest"], "2026.8.31");
    assert_eq!(everything["update_available"], true);
    let searched = serve.api_get("/api/registry/search?q=everything").await;
    assert_eq!(
        searched["entries"][0]["added_as"], "everything",
        "{searched}"
    );
    let updated = serve.api_post("/api/registry/update/everything").await;
    assert_eq!(
        updated,
        json!({"server": "everything", "from": "2026.8.18", "to": "2026.8.31"})
    );
    let config = std::fs::read_to_string(serve.config_path()).unwrap();
    assert!(
        config.contains("\"@modelcontextprotocol/server-everything@2026.8.31\""),
        "{config}"
    );
    assert!(
        config
            .contains("registry = \"io.github.modelcontextprotocol/server-everything@2026.8.31\"")
    );
    wait_version(&serve, "everything", "2026.8.31").await;
    let installed = serve.api_get("/api/registry/installed").await;
    assert_eq!(installed[0]["update_available"], false, "{installed}");

    // Removed: no entry, no pins, no cached tools, no backend.
    let data = serve.dir().join("data");
    assert!(data.join("pins/everything.json").exists());
    remove_server(&serve, "everything").await;
    let config = std::fs::read_to_string(serve.config_path()).unwrap();
    assert!(!config.contains("everything"), "{config}");
    assert!(!data.join("pins/everything.json").exists());
    assert!(!data.join("catalog/everything.json").exists());
    eventually("the backend gone", EVENT_LIMIT, || async {
        let list = serve.api_get("/api/backends").await;
        if list.as_array().unwrap().is_empty() {
            Ok(())
        } else {
            Err(list)
        }
    })
    .await;
    drop(source);
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_server_time_is_added_from_pypi_with_the_cli_and_runs_through_uvx() {
    let source = source(&[]);
    let service = keychain_service();
    let serve = serve_with_source(&source.field("url"), &service);
    let (ok, stdout, stderr) = cli(
        &serve,
        &service,
        &["add", "io.github.modelcontextprotocol/server-time", "--yes"],
        "",
    );
    assert!(ok, "{stderr}");
    assert!(stdout.is_empty(), "nothing on stdout: {stdout}");
    assert!(stderr.contains("Added `server-time`"), "{stderr}");
    assert!(
        stderr.contains("uvx mcp-server-time==2026.10.19"),
        "{stderr}"
    );
    assert!(stderr.contains("wait for your review"), "{stderr}");
    wait_version(&serve, "server-time", "2026.10.19").await;
    approve_all(&serve, "server-time").await;
    eventually("its tools listed", EVENT_LIMIT, || async {
        let tools = listed_tools(&serve).await;
        if tools.contains(&"server-time__get_current_time".to_owned()) {
            Ok(())
        } else {
            Err(tools)
        }
    })
    .await;
    // Already there: refused, the config unchanged.
    let before = std::fs::read_to_string(serve.config_path()).unwrap();
    let (ok, _, stderr) = cli(
        &serve,
        &service,
        &["add", "io.github.modelcontextprotocol/server-time", "--yes"],
        "",
    );
    assert!(
        !ok && stderr.contains("a server named `server-time` exists already"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(serve.config_path()).unwrap(),
        before
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_entry_asks_at_the_terminal_and_its_secret_header_reaches_the_server() {
    let remote = remote_server(&["--require-header", "X-Api-Key=k-7f3"]);
    let port = remote
        .field("url")
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/mcp")
        .to_owned();
    let source = source(&[]);
    let service = keychain_service();
    let serve = serve_with_source(&source.field("url"), &service);
    // The prompts, answered the way a person at a terminal would (`tests/registry/prompts.py`).
    let driver = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/registry/prompts.py");
    let output = Command::new(python())
        .arg(driver)
        .arg(switchboard_exe())
        .args([
            "add",
            "io.github.switchboard-tests/remote-echo",
            "--name",
            "echo",
        ])
        .envs(serve.env())
        .env("SWITCHBOARD_KEYCHAIN_SERVICE", &service)
        .env("ANSWERS", json!(["", &port, "k-7f3", "y"]).to_string())
        .output()
        .expect("the terminal driver runs");
    let screen = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{screen}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        screen.contains("port (Port of the test server) (required): "),
        "{screen}"
    );
    assert!(
        screen.contains("port is required"),
        "an empty answer is asked again: {screen}"
    );
    assert!(
        screen.contains("X-Api-Key (API key) (kept in the keychain) (required): "),
        "{screen}"
    );
    assert!(
        !screen.contains("k-7f3"),
        "the secret is never echoed: {screen}"
    );
    assert!(
        screen.contains("its secret echo_X-Api-Key is in the keychain"),
        "{screen}"
    );
    let config = std::fs::read_to_string(serve.config_path()).unwrap();
    assert!(
        config.contains("headers = { X-Api-Key = \"${secret:echo_X-Api-Key}\" }"),
        "{config}"
    );
    assert!(!config.contains("k-7f3"), "{config}");
    approve_all(&serve, "echo").await;
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let answer = eventually("the remote's echo answers", EVENT_LIMIT, || async {
        let session = mcp.open_session("registry-test").await?;
        let result = mcp
            .call_tool(&session, 3, "echo__echo", json!({"text": "hi"}))
            .await;
        if first_text(&result) == "hi" {
            Ok(result)
        } else {
            Err(result.to_string())
        }
    })
    .await;
    assert_ne!(answer["isError"], true, "{answer}");

    // Removing it offers its secret; deleted on request, gone from the keychain.
    let (ok, _, stderr) = cli(&serve, &service, &["remove", "echo"], "y\n");
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("`echo` uses the secrets echo_X-Api-Key"),
        "{stderr}"
    );
    assert!(
        stderr.contains("its secret echo_X-Api-Key is deleted"),
        "{stderr}"
    );
    let (_, _, listed) = cli(&serve, &service, &["secret", "list"], "");
    assert!(!listed.contains("echo_X-Api-Key"), "{listed}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_entries_are_refused_saying_why_and_nothing_is_written() {
    let source = source(&[]);
    let service = keychain_service();
    let serve = serve_with_source(&source.field("url"), &service);
    let before = std::fs::read_to_string(serve.config_path()).unwrap();
    let cases: &[(&str, u16, &str, &str)] = &[
        (
            r#"{"name": "io.github.domdomegg/time-mcp-nuget"}"#,
            400,
            "not_installable",
            "NuGet package",
        ),
        (
            r#"{"name": "kbag"}"#,
            400,
            "not_installable",
            "`smithery`, a registry Switchboard does not know",
        ),
        (
            r#"{"name": "io.github.example/taken-down"}"#,
            404,
            "not_found",
            "taken down",
        ),
        (
            r#"{"name": "io.github.modelcontextprotocol/server-time", "version": "latest"}"#,
            400,
            "not_installable",
            "not an exact version",
        ),
        (
            r#"{"name": "io.github.modelcontextprotocol/server-time", "version": "^2026.8"}"#,
            400,
            "not_installable",
            "not an exact version",
        ),
        (
            r#"{"name": "io.github.modelcontextprotocol/server-memory"}"#,
            400,
            "refused",
            "belongs to \"io.github.modelcontextprotocol/server-everything\"",
        ),
        (
            r#"{"name": "io.github.switchboard-tests/bad-digest"}"#,
            400,
            "refused",
            "is not the one its entry names",
        ),
        (
            r#"{"name": "io.github.domdomegg/airtable-mcp-server"}"#,
            400,
            "missing_required_input",
            "AIRTABLE_API_KEY",
        ),
        (
            r#"{"name": "io.github.modelcontextprotocol/server-time", "server": "a b"}"#,
            400,
            "refused",
            "cannot name a server",
        ),
        (
            r#"{"name": "nobody/none"}"#,
            404,
            "not_found",
            "no source lists nobody/none",
        ),
        (
            r#"{"name": "x", "command": "rm -rf ~"}"#,
            400,
            "bad_request",
            "unknown field `command`",
        ),
    ];
    for (body, status, code, said) in cases {
        let (got, answer) = serve.api_post_body("/api/registry/add", body).await;
        assert_eq!(
            (got, answer["code"].as_str().unwrap()),
            (*status, *code),
            "{body}: {answer}"
        );
        assert!(
            answer["message"].as_str().unwrap().contains(said),
            "{body}: {answer}"
        );
    }
    let (_, missing) = serve
        .api_post_body(
            "/api/registry/add",
            r#"{"name": "io.github.domdomegg/airtable-mcp-server"}"#,
        )
        .await;
    assert_eq!(missing["missing"], json!(["AIRTABLE_API_KEY"]));
    assert_eq!(
        std::fs::read_to_string(serve.config_path()).unwrap(),
        before,
        "nothing written"
    );
    assert!(
        !serve.dir().join("data/bundles/bad-digest").exists(),
        "nothing unpacked"
    );

    // Shell metacharacters in an entry's arguments reach the server's argv as one literal
    // argument each: no shell ever reads them.
    let (_, status, added) = add_confirmed(
        &serve,
        json!({"name": "io.github.modelcontextprotocol/server-everything", "version": "2026.7.4", "server": "meta"}),
    )
    .await;
    assert_eq!(status, 200, "{added}");
    wait_version(&serve, "meta", "2026.7.4").await;
    let literal = "a; rm -rf ~ && $(id) `x` | y > z";
    let server_argv = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .map(|bytes| {
            bytes
                .split(|byte| *byte == 0)
                .map(|arg| String::from_utf8_lossy(arg).into_owned())
                .collect::<Vec<String>>()
        })
        .find(|argv| {
            argv.iter()
                .any(|arg| arg.ends_with("mcp-server-everything"))
                && argv.windows(2).any(|pair| pair[0] == "--label")
        });
    let argv = server_argv.expect("the server runs with its arguments");
    assert!(
        argv.windows(2)
            .any(|pair| pair[0] == "--label" && pair[1] == literal),
        "{argv:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_source_is_reported_and_the_cache_still_answers() {
    let good = source(&[]);
    let service = keychain_service();
    let serve = serve_with_source(&good.field("url"), &service);
    let (ok, _, stdout) = cli(&serve, &service, &["search", "time"], "");
    assert!(
        ok && stdout.contains("io.github.modelcontextprotocol/server-time@2026.10.19"),
        "{stdout}"
    );
    let stats = |fixture: &Fixture| {
        let url = format!("{}/_stats", fixture.field("url"));
        async move {
            let stats: Value = reqwest::get(url).await.unwrap().json().await.unwrap();
            stats["requests"]["/v0.1/servers"].as_u64().unwrap_or(0)
        }
    };
    let served = stats(&good).await;
    let (ok, _, stdout) = cli(&serve, &service, &["search", "everything"], "");
    assert!(
        ok && stdout.contains("server-everything@2026.8.31"),
        "{stdout}"
    );
    assert_eq!(
        stats(&good).await,
        served,
        "a search within the hour is answered from the cache"
    );

    // Taken down at the source: a refresh (`updated_since`) drops it.
    let client = reqwest::Client::new();
    let set = client
        .post(format!("{}/_set_status", good.field("url")))
        .json(&json!({"name": "io.github.modelcontextprotocol/server-time", "version": "2026.10.19", "status": "deleted"}))
        .send()
        .await
        .unwrap();
    assert!(set.status().is_success());
    let (_, _, stdout) = cli(&serve, &service, &["search", "time", "--refresh"], "");
    assert!(
        stdout.contains("server-time@2026.8.18"),
        "the older release is the newest now: {stdout}"
    );
    assert!(!stdout.contains("2026.10.19"), "{stdout}");

    // The source now answers garbage, then errors: said, and its cache still searched.
    for mode in ["garbage", "fail"] {
        client
            .post(format!("{}/_mode", good.field("url")))
            .json(&json!({"mode": mode}))
            .send()
            .await
            .unwrap();
        let (ok, _, stdout) = cli(&serve, &service, &["search", "everything", "--refresh"], "");
        assert!(
            ok && stdout.contains("server-everything@2026.8.31"),
            "{stdout}"
        );
        let said = match mode {
            "garbage" => "answered something that is not the registry API",
            _ => "answered 500",
        };
        assert!(stdout.contains(said), "{mode}: {stdout}");
    }
    // A source the config does not list is never read at a request's word.
    let unlisted = serve
        .client()
        .get(serve.http_url("/api/registry/search?q=x&source=http://127.0.0.1:9"))
        .bearer_auth(SERVE_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(unlisted.status(), 400);
    assert!(
        unlisted
            .text()
            .await
            .unwrap()
            .contains("is not one of the config's registry sources")
    );
    drop(serve);

    // A source that never answers is given up on and said, the others answer, and it is left
    // alone for a while: the next search does not wait for it again.
    let hanging = source(&["--mode", "hang"]);
    let serve = ServeOptions::new(&format!(
        "[registry]\nsources = [{:?}, {:?}]\n",
        good.field("url"),
        hanging.field("url")
    ))
    .env("SWITCHBOARD_KEYCHAIN_SERVICE", &service)
    .start();
    let found = serve.api_get("/api/registry/search?q=fetch").await;
    assert!(
        found["sources"][1]["error"]
            .as_str()
            .unwrap()
            .contains("did not answer within"),
        "{found}"
    );
    assert_eq!(found["entries"][0]["source"], "built-in", "{found}");
    let tried = stats(&hanging).await;
    assert_eq!(tried, 1, "it was asked once");
    let again = serve.api_get("/api/registry/search?q=fetch").await;
    assert_eq!(stats(&hanging).await, tried, "not tried again at once");
    assert!(
        again["sources"][1]["error"]
            .as_str()
            .unwrap()
            .contains("did not answer within"),
        "still said: {again}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bundle_is_checked_against_its_digest_unpacked_and_run() {
    let source = source(&[]);
    let service = keychain_service();
    let serve = serve_with_source(&source.field("url"), &service);
    let (_, status, added) = add_confirmed(
        &serve,
        json!({"name": "io.github.switchboard-tests/bundle"}),
    )
    .await;
    assert_eq!(status, 200, "{added}");
    let folder = serve.dir().join("data/bundles/bundle");
    assert!(folder.join("server/main.py").exists() && folder.join("manifest.json").exists());
    let config = std::fs::read_to_string(serve.config_path()).unwrap();
    assert!(
        config.contains(&format!(
            "{:?}",
            folder.join("server/main.py").display().to_string()
        )),
        "`${{__dirname}}` is the bundle's folder: {config}"
    );
    assert!(
        config.contains("BUNDLED_BY = \"switchboard-tests\""),
        "{config}"
    );
    approve_all(&serve, "bundle").await;
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp.open_session("registry-test").await.unwrap();
    let result = mcp
        .call_tool(
            &session,
            3,
            "bundle__echo",
            json!({"text": "from a bundle"}),
        )
        .await;
    assert_eq!(first_text(&result), "from a bundle", "{result}");
    remove_server(&serve, "bundle").await;
    assert!(!folder.exists(), "its bundle is removed with it");
}

/// The Add page, a server's version and its update, and removing a server, in a real browser
/// (`tests/ui/add.test.mjs`, playwright-core driving Debian's Chromium): the official source's
/// entries with their badges, two servers added through the form, each shown as its exact plan
/// and confirmed (a remote one whose secret goes to the keychain), an older release updated from its page, and a removal with its secret.
#[test]
fn servers_are_added_updated_and_removed_from_the_dashboard_in_a_real_browser() {
    let registry = source(&[]);
    let url = registry.field("url");
    // A source that cannot be read: the page says so above the results.
    let failing = "http://127.0.0.1:1";
    let service = keychain_service();
    // The test source stands for the official registry here, whose word on names is taken.
    let serve = ServeOptions::new(&format!("[registry]\nsources = [{url:?}, {failing:?}]\n"))
        .env("SWITCHBOARD_OFFICIAL_REGISTRY", &url)
        .env("SWITCHBOARD_KEYCHAIN_SERVICE", &service)
        .env("PATH", path_with_uv())
        .env_remove("SWITCHBOARD_LOG")
        .env_remove("SWITCHBOARD_TOKEN")
        .start();
    let mut node = crate::ui::browser_suite("add.test.mjs", &serve);
    node.env("SWITCHBOARD_REGISTRY_URL", &url)
        .env("SWITCHBOARD_FAILING_SOURCE", failing);
    run_node_suite(node, crate::ui::NODE_LIMIT, &|| serve.log());
}

#[tokio::test(flavor = "multi_thread")]
async fn servers_written_by_hand_show_what_their_runner_resolved_and_can_be_pinned() {
    let source = source(&[]);
    let service = keychain_service();
    let config = format!(
        "[registry]\nsources = [{:?}]\n\n\
         [servers.everything]\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-everything\", \"stdio\"]\n\n\
         [servers.time]\ncommand = \"uvx\"\nargs = [\"mcp-server-time\"]\n",
        source.field("url")
    );
    let serve = ServeOptions::new(&config)
        .env("SWITCHBOARD_KEYCHAIN_SERVICE", &service)
        .env("PATH", path_with_uv())
        .ready(&["everything", "time"])
        .start();
    // Unpinned, each runs whatever its runner resolved; the version shown is read from what
    // was installed, not guessed.
    for name in ["everything", "time"] {
        let summary = serve.backend_summary(name).await;
        let version = summary["version"]
            .as_str()
            .unwrap_or_else(|| panic!("{summary}"));
        assert!(
            version.split('.').count() == 3
                && version.split('.').all(|part| part.parse::<u32>().is_ok()),
            "{name}: {version}"
        );
    }
    let installed = serve.api_get("/api/registry/installed").await;
    let everything = installed
        .as_array()
        .unwrap()
        .iter()
        .find(|one| one["server"] == "everything")
        .unwrap();
    assert_eq!(
        everything["entry"],
        "io.github.modelcontextprotocol/server-everything"
    );
    assert_eq!(everything["latest"], "2026.8.31");
    // Updating pins it: the exact release goes into the command line.
    let updated = serve.api_post("/api/registry/update/everything").await;
    assert_eq!(updated["to"], "2026.8.31", "{updated}");
    let written = std::fs::read_to_string(serve.config_path()).unwrap();
    assert!(
        written.contains(
            "args = [\"-y\", \"@modelcontextprotocol/server-everything@2026.8.31\", \"stdio\"]"
        ),
        "{written}"
    );
    wait_version(&serve, "everything", "2026.8.31").await;
}

/// A source with the hostile entries (`tests/registry/hostile.json` and the bundles
/// `source.py --hostile` makes), whose marker bundle writes `marker` when it runs.
fn hostile_source(marker: &std::path::Path) -> Fixture {
    source(&["--hostile", "--marker", &marker.display().to_string()])
}

/// The names of the backends serve runs.
async fn backend_names(serve: &ServeProcess) -> Vec<String> {
    serve
        .api_get("/api/backends")
        .await
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|backend| backend["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_sources_runner_options_loader_env_and_bundles_are_refused_and_nothing_is_left() {
    let marker = tempfile::tempdir().unwrap();
    let source = hostile_source(&marker.path().join("ran"));
    let service = keychain_service();
    let serve = serve_with_source(&source.field("url"), &service);
    let before = std::fs::read_to_string(serve.config_path()).unwrap();
    let hostile = |name: &str| format!("io.github.switchboard-tests/hostile-{name}");
    let cases: &[(&str, u16, &str, &str)] = &[
        (
            "npm-registry",
            400,
            "not_installable",
            "passes \"--registry\" to npx",
        ),
        (
            "uvx-index",
            400,
            "not_installable",
            "passes \"--index-url\" to uvx",
        ),
        (
            "docker-host",
            400,
            "not_installable",
            "passes \"--privileged\" to docker",
        ),
        (
            "loader-env",
            400,
            "not_installable",
            "LD_PRELOAD steers a loader or a runner",
        ),
        (
            "userinfo",
            400,
            "not_installable",
            "names a user or password before its host",
        ),
        (
            "redirect",
            400,
            "refused",
            "which is not https; only https redirects are followed",
        ),
    ];
    for (name, status, code, said) in cases {
        let body = json!({"name": hostile(name)}).to_string();
        let (got, answer) = serve.api_post_body("/api/registry/add", &body).await;
        assert_eq!(
            (got, answer["code"].as_str().unwrap_or("")),
            (*status, *code),
            "{name}: {answer}"
        );
        assert!(
            answer["message"].as_str().unwrap().contains(said),
            "{name}: {answer}"
        );
        // Said the same way on the Add page, before anyone tries.
        let found = serve
            .api_get(&format!("/api/registry/search?q={}", hostile(name)))
            .await;
        if *code == "not_installable" {
            assert_eq!(found["entries"][0]["installable"], false, "{found}");
            assert!(
                found["entries"][0]["why_not"]
                    .as_str()
                    .unwrap()
                    .contains(said),
                "{found}"
            );
        }
    }
    // The bomb and the 20,000 files pass the plan (their digests match, their manifests read)
    // and are refused as they unpack, leaving nothing.
    for (name, said) in [
        ("bomb", "unpacks to more than 200 times its packed size"),
        (
            "many",
            "it holds 20001 entries; a bundle may hold 10000 at most",
        ),
    ] {
        let (plan, status, answer) = add_confirmed(&serve, json!({"name": hostile(name)})).await;
        assert_eq!(plan["launch"]["kind"], "command", "{plan}");
        assert_eq!(
            (status, answer["code"].as_str().unwrap()),
            (400, "refused"),
            "{answer}"
        );
        assert!(
            answer["message"].as_str().unwrap().contains(said),
            "{answer}"
        );
        let bundles = serve.dir().join("data/bundles");
        let left: Vec<String> = std::fs::read_dir(&bundles)
            .map(|entries| {
                entries
                    .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        assert!(left.is_empty(), "nothing half-unpacked: {left:?}");
    }
    assert_eq!(
        std::fs::read_to_string(serve.config_path()).unwrap(),
        before,
        "nothing written"
    );
    assert!(backend_names(&serve).await.is_empty(), "nothing started");
    assert!(!marker.path().join("ran").exists());

    // The entries dated in the future do not become the next refresh's `updated_since`.
    let cache_dir = serve.dir().join("data/registry");
    let caches: Vec<Value> = std::fs::read_dir(&cache_dir)
        .unwrap()
        .map(|entry| {
            serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap()
        })
        .collect();
    let cache = caches
        .iter()
        .find(|cache| cache["url"] == source.field("url"))
        .unwrap_or_else(|| panic!("{caches:?}"));
    let newest = cache["newest"].as_str().unwrap();
    let year: u32 = newest[..4].parse().unwrap();
    assert!(year < 2100, "not the future: {newest}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_registry_add_starts_and_writes_nothing_before_its_plan_is_confirmed() {
    let marker_dir = tempfile::tempdir().unwrap();
    let marker = marker_dir.path().join("ran");
    let source = hostile_source(&marker);
    let service = keychain_service();
    let serve = serve_with_source(&source.field("url"), &service);
    let before = std::fs::read_to_string(serve.config_path()).unwrap();
    let body = json!({"name": "io.github.switchboard-tests/hostile-marker", "server": "marker"});

    // The plan: exactly what runs, and nothing written, unpacked or started.
    let (status, plan) = serve
        .api_post_body("/api/registry/add", &body.to_string())
        .await;
    assert_eq!(status, 200, "{plan}");
    let folder = serve.dir().join("data/bundles/marker");
    assert_eq!(plan["server"], "marker");
    assert_eq!(plan["launch"]["kind"], "command");
    assert_eq!(
        plan["launch"]["args"],
        json!([folder.join("server/main.py").display().to_string()]),
        "{plan}"
    );
    assert_eq!(
        plan["launch"]["env"]["MARKER_FILE"],
        marker.display().to_string()
    );
    let confirm = plan["confirm"].as_str().unwrap().to_owned();
    assert_eq!(confirm.len(), 64, "{plan}");
    // A second look gives the same plan, and still does nothing.
    let (_, again) = serve
        .api_post_body("/api/registry/add", &body.to_string())
        .await;
    assert_eq!(again["confirm"], confirm.as_str());
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!marker.exists(), "nothing ran");
    assert!(!folder.exists(), "nothing unpacked");
    assert!(backend_names(&serve).await.is_empty(), "nothing started");
    assert_eq!(
        std::fs::read_to_string(serve.config_path()).unwrap(),
        before
    );

    // The CLI without a terminal and without --yes shows the plan and adds nothing.
    let (ok, _, stderr) = cli(
        &serve,
        &service,
        &[
            "add",
            "io.github.switchboard-tests/hostile-marker",
            "--name",
            "marker",
        ],
        "y\n",
    );
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "  argument  {:?}",
            folder.join("server/main.py").display().to_string()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("nothing was added: no terminal to say yes at"),
        "{stderr}"
    );
    assert!(!marker.exists() && !folder.exists());
    assert_eq!(
        std::fs::read_to_string(serve.config_path()).unwrap(),
        before
    );

    // A confirmation of another plan commits nothing.
    let mut forged = body.clone();
    forged["confirm"] = json!("0".repeat(64));
    let (status, answer) = serve
        .api_post_body("/api/registry/add", &forged.to_string())
        .await;
    assert_eq!(
        (status, answer["code"].as_str().unwrap()),
        (409, "plan_changed"),
        "{answer}"
    );
    assert_eq!(
        std::fs::read_to_string(serve.config_path()).unwrap(),
        before
    );
    assert!(!folder.exists());

    // The plan's own confirmation adds it, and then it runs.
    let mut confirmed = body;
    confirmed["confirm"] = json!(confirm);
    let (status, added) = serve
        .api_post_body("/api/registry/add", &confirmed.to_string())
        .await;
    assert_eq!(status, 200, "{added}");
    assert_eq!(added["server"], "marker");
    eventually("the bundle to run", INSTALL_LIMIT, || async {
        match marker.exists() {
            true => Ok(()),
            false => Err("no marker yet"),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_name_is_verified_only_by_the_official_registry_whatever_a_source_says() {
    let official = source(&[]);
    let marker = tempfile::tempdir().unwrap();
    let other = hostile_source(&marker.path().join("ran"));
    let service = keychain_service();
    // The other source comes first, so its entries are the ones shown.
    let serve = ServeOptions::new(&format!(
        "[registry]\nsources = [{:?}, {:?}]\n",
        other.field("url"),
        official.field("url")
    ))
    .env("SWITCHBOARD_KEYCHAIN_SERVICE", &service)
    .env("SWITCHBOARD_OFFICIAL_REGISTRY", official.field("url"))
    .start();
    let found = serve.api_get("/api/registry/search?q=").await;
    let entry = |name: &str| {
        found["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|entry| entry["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name}: {found}"))
    };
    // Its own `_meta` forged: the official registry does not list the name.
    let forged = entry("io.github.modelcontextprotocol/server-filesystem");
    assert_eq!(forged["source"], other.field("url"));
    assert_eq!(forged["verified"], false, "{forged}");
    // The official registry lists the same package under the same name.
    let time = entry("io.github.modelcontextprotocol/server-time");
    assert_eq!(time["source"], other.field("url"));
    assert_eq!(time["verified"], true, "{time}");
    let hostile = entry("io.github.switchboard-tests/hostile-npm-registry");
    assert_eq!(hostile["verified"], false, "{hostile}");
    // The CLI says the same.
    let (_, _, stderr) = cli(&serve, &service, &["search", "server-filesystem"], "");
    assert!(
        stderr
            .contains("io.github.modelcontextprotocol/server-filesystem@1.0.0 [name not verified]"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_stay_in_the_keychain_and_a_secret_in_use_is_never_written_over() {
    let marker = tempfile::tempdir().unwrap();
    let source = hostile_source(&marker.path().join("ran"));
    let service = keychain_service();
    let serve = serve_with_source(&source.field("url"), &service);

    // The entry calls its API key not secret: it is one all the same.
    let (plan, status, added) = add_confirmed(
        &serve,
        json!({"name": "io.github.switchboard-tests/hostile-plain-key", "server": "plain",
               "inputs": {"X-Api-Key": "sk-live-SECRET123"}}),
    )
    .await;
    assert_eq!(
        plan["launch"]["headers"]["X-Api-Key"], "${secret:plain_X-Api-Key}",
        "{plan}"
    );
    assert!(!plan.to_string().contains("sk-live"), "{plan}");
    assert_eq!(status, 200, "{added}");
    let config = std::fs::read_to_string(serve.config_path()).unwrap();
    assert!(!config.contains("sk-live-SECRET123"), "{config}");

    // `a` with `b_c` and `a_b` with `c` would both be a_b_c: the second gets another name, and
    // says so.
    let (_, status, first) = add_confirmed(
        &serve,
        json!({"name": "io.github.switchboard-tests/hostile-collide-one", "server": "a",
               "inputs": {"b_c": "one"}}),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["secrets"], json!(["a_b_c"]));
    let (plan, status, second) = add_confirmed(
        &serve,
        json!({"name": "io.github.switchboard-tests/hostile-collide-two", "server": "a_b",
               "inputs": {"c": "two"}}),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["secrets"], json!(["a_b_c_2"]), "{second}");
    assert!(
        plan["notes"].as_array().unwrap().iter().any(|note| note
            .as_str()
            .unwrap()
            .contains("the secret a_b_c exists already")),
        "{plan}"
    );
    let secrets = serve.api_get("/api/secrets").await;
    for name in ["a_b_c", "a_b_c_2"] {
        assert!(
            secrets["secrets"]
                .as_array()
                .unwrap()
                .iter()
                .any(|secret| secret["name"] == name && secret["set"] == true),
            "{name}: {secrets}"
        );
    }

    // A secret another server names too is neither offered nor deleted with one of them.
    let mut config = std::fs::read_to_string(serve.config_path()).unwrap();
    config.push_str(
        "\n[servers.z]\nurl = \"http://127.0.0.1:9/mcp\"\nheaders = { K = \"${secret:a_b_c}\" }\n",
    );
    std::fs::write(serve.config_path(), &config).unwrap();
    let installed = eventually("z in the config", EVENT_LIMIT, || async {
        let installed = serve.api_get("/api/registry/installed").await;
        let listed = installed.as_array().unwrap();
        match listed.iter().any(|one| one["server"] == "z") {
            true => Ok(installed),
            false => Err(installed),
        }
    })
    .await;
    let a = installed
        .as_array()
        .unwrap()
        .iter()
        .find(|one| one["server"] == "a")
        .unwrap();
    assert_eq!(a["secrets"], json!([]), "shared with z: {a}");
    let response = serve
        .client()
        .delete(serve.http_url("/api/servers/a"))
        .bearer_auth(SERVE_TOKEN)
        .header("content-type", "application/json")
        .body(r#"{"delete_secrets": ["a_b_c"]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let answer: Value = response.json().await.unwrap();
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("the secret a_b_c is named by `z` too"),
        "{answer}"
    );
    assert_eq!(
        std::fs::read_to_string(serve.config_path()).unwrap(),
        config
    );
}
