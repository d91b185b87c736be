//! Servers added, updated and removed: from the dashboard and the command line, from npm, PyPI,
//! a remote server and a bundle, and servers written by hand that can be pinned.

use std::path::PathBuf;
use std::process::Command;

use serde_json::json;

use super::{
    add_confirmed, approve_all, cli, listed_tools, path_with_uv, remove_server, serve_with_source,
    source, wait_version,
};
use crate::support::*;

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
    assert!(stdout.contains("Added `server-time`"), "{stdout}");
    assert!(
        stdout.contains("uvx mcp-server-time==2026.10.19"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "what it offers waits for your review on the dashboard's Review page, listed there \
             once Switchboard has started it"
        ),
        "{stdout}"
    );
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
        !ok && stderr.contains(
            "a server named `server-time` exists already; give another name with --name NAME; \
             nothing was added"
        ),
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
    let (ok, stdout, stderr) = cli(&serve, &service, &["remove", "echo"], "y\n");
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("`echo` uses the secrets echo_X-Api-Key"),
        "{stderr}"
    );
    assert!(
        stdout.contains("its secret echo_X-Api-Key is deleted"),
        "{stdout}"
    );
    let (listed_ok, listed, _) = cli(&serve, &service, &["secret", "list"], "");
    assert!(listed_ok && !listed.contains("echo_X-Api-Key"), "{listed}");
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
