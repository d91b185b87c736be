//! The dashboard in a real browser: runs the `node:test` suites in `tests/ui/` (playwright-core
//! driving Debian's Chromium) against a real `switchboard serve` with the demo server, the
//! official "everything" server, a server that always fails its start, and one invalid server
//! entry; the Profiles page over a valid config; remote servers (a sign-in through a real
//! authorization server's pages) and secrets (a keychain of its own); and the Activity page over
//! the log of real calls through `/mcp`; with the dashboard's files embedded in the binary. The
//! suites save screenshots of every view to `artifacts/ui/`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::sign_in::{Protected, protected};
use crate::support::*;

/// How long the whole node run may take; it needs well under a minute.
pub(crate) const NODE_LIMIT: Duration = Duration::from_secs(300);

/// The browser the suites drive.
const CHROMIUM: &str = "/usr/bin/chromium";

/// `node --test tests/ui/SUITE` against `serve`'s dashboard in Chromium, with what every suite
/// is given (the dashboard's link, the browser, where screenshots go); the test adds its own.
pub(crate) fn browser_suite(suite: &str, serve: &ServeProcess) -> Command {
    node_module("playwright-core/package.json");
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: apt-get install chromium (scripts/test does)"
    );
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut node = Command::new("node");
    node.arg("--test")
        .arg(Path::new("tests/ui").join(suite))
        .current_dir(&root)
        .env("SWITCHBOARD_URL", serve.dashboard_link())
        .env("SWITCHBOARD_SCREENSHOTS", root.join("artifacts/ui"))
        .env("CHROMIUM", CHROMIUM);
    node
}

#[test]
fn the_dashboard_works_in_a_real_browser() {
    let serve = start_serve();
    let mut node = browser_suite("dashboard.test.mjs", &serve);
    node.env("SWITCHBOARD_TEST_HOME", serve.dir().join("home"));
    run_node_suite(node, NODE_LIMIT, &|| serve.log());
}

#[test]
fn the_profiles_page_switches_tools_in_a_real_browser() {
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
    let mut node = browser_suite("profiles.test.mjs", &serve);
    node.env("SWITCHBOARD_CONFIG", serve.config_path());
    run_node_suite(node, NODE_LIMIT, &|| serve.log());
}

#[test]
fn remote_servers_and_secrets_work_in_a_real_browser() {
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
    let mut node = browser_suite("remote.test.mjs", &serve);
    node.env("SWITCHBOARD_REMOTE_URL", &remote_url)
        .env("SWITCHBOARD_ISSUER", oidc.field("issuer"));
    run_node_suite(node, NODE_LIMIT, &|| serve.log());
}

#[test]
fn the_activity_page_works_in_a_real_browser() {
    let config = format!(
        "[servers.demo]\ncommand = {demo:?}\nargs = [\"demo-server\"]\n\n\
         [activity]\npayloads = true\n",
        demo = switchboard_exe().to_string_lossy(),
    );
    let serve = ServeOptions::new(&config)
        .ready(&["demo"])
        .env_remove("SWITCHBOARD_LOG")
        .env_remove("SWITCHBOARD_TOKEN")
        .start();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(make_recorded_calls(&serve));

    // Another one with the log off, whose file it found unreadable and set aside.
    let options = ServeOptions::new(&format!(
        "[servers.demo]\ncommand = {demo:?}\nargs = [\"demo-server\"]\n\n\
         [activity]\nenabled = false\n",
        demo = switchboard_exe().to_string_lossy(),
    ));
    let data = options.dir().join("data");
    std::fs::create_dir_all(&data).expect("a data folder");
    std::fs::write(data.join("activity.db"), "not a database. ".repeat(100)).expect("a file");
    let off = options
        .ready(&["demo"])
        .env_remove("SWITCHBOARD_LOG")
        .env_remove("SWITCHBOARD_TOKEN")
        .start();

    let mut node = browser_suite("activity.test.mjs", &serve);
    node.env("SWITCHBOARD_MCP_URL", serve.url())
        .env("SWITCHBOARD_OFF_URL", off.dashboard_link())
        .env("SWITCHBOARD_OFF_MCP_URL", off.url());
    run_node_suite(node, NODE_LIMIT, &|| {
        format!("{}\n--- the other serve ---\n{}", serve.log(), off.log())
    });
}

/// The calls `tests/ui/activity.test.mjs` expects to find in the log, newest last: two editors
/// over `/mcp`, every tool of the demo server but `crash`, a tool error, a name no server has,
/// and arguments too long to be kept whole. Returns once the log holds all nine.
async fn make_recorded_calls(serve: &ServeProcess) {
    let mcp = McpHttp::new(&serve.url());
    let ada = mcp.open_session("ada-editor").await.expect("a session");
    for (id, text) in ["hello 1", "hello 2", "hello 3"].into_iter().enumerate() {
        let result = mcp
            .call_tool(&ada, id as u64 + 1, "demo__echo", json!({ "text": text }))
            .await;
        assert_eq!(first_text(&result), text);
    }
    let sum = mcp
        .call_tool(&ada, 4, "demo__add", json!({ "a": 2, "b": 3 }))
        .await;
    assert_eq!(first_text(&sum), "5");
    let failed = mcp
        .call_tool(&ada, 5, "demo__fail", json!({ "message": "no luck" }))
        .await;
    assert_eq!(failed["isError"], true, "{failed}");
    let slept = mcp
        .call_tool(&ada, 6, "demo__sleep", json!({ "ms": 300 }))
        .await;
    assert_eq!(first_text(&slept), "slept 300 ms");

    let bob = mcp.open_session("bob-editor").await.expect("a session");
    mcp.call_tool(&bob, 1, "demo__echo", json!({ "text": "from bob" }))
        .await;
    let unknown = mcp
        .post(
            Some(&bob),
            json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": { "name": "demo__nothing", "arguments": {} } })
            .to_string(),
        )
        .await
        .expect("an answer");
    assert!(unknown.body.contains("\"error\""), "{}", unknown.body);
    // Over the 64 KiB the log keeps of an argument: it is cut, and cannot be tried again.
    let long = "x".repeat(70_000);
    let echoed = mcp
        .call_tool(&bob, 3, "demo__echo", json!({ "text": long }))
        .await;
    assert_eq!(first_text(&echoed).len(), 70_000);

    eventually("the nine calls in the log", EVENT_LIMIT, || async {
        let page = serve.api_get("/api/activity").await;
        match page["records"].as_array().map_or(0, Vec::len) {
            9 => Ok(()),
            _ => Err(page),
        }
    })
    .await;
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
