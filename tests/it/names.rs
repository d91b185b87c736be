//! Exposed names through a real `switchboard serve`: a server with `prefix = ""` listed and
//! called over `/mcp` by its own names beside a prefixed one, and a name two servers would both
//! have told apart, routed right, and reported.

use serde_json::{Value, json};

use crate::support::*;

/// `switchboard demo-server` as the server `name`, with `extra` lines in its table.
fn demo_entry(name: &str, extra: &str) -> String {
    format!(
        "[servers.{name}]\ncommand = {exe:?}\nargs = [\"demo-server\"]\n{extra}\n",
        exe = switchboard_exe().to_string_lossy(),
    )
}

/// The names `tools/list` (or `prompts/list`, with `list` "prompts") answers in `session`.
async fn listed(mcp: &McpHttp, session: &str, list: &str) -> Vec<String> {
    let result = mcp
        .result(session, 1, &format!("{list}/list"), json!({}))
        .await;
    result[list]
        .as_array()
        .unwrap_or_else(|| panic!("{list}: {result}"))
        .iter()
        .map(|item| item["name"].as_str().expect("a name").to_owned())
        .collect()
}

/// The activity log's record of the call to the exposed `name`, once it is there.
async fn recorded(serve: &ServeProcess, name: &str) -> Value {
    eventually(&format!("a record of {name}"), EVENT_LIMIT, || async {
        let page = serve.api_get(&format!("/api/activity?tool={name}")).await;
        page["records"]
            .as_array()
            .and_then(|records| records.first().cloned())
            .ok_or(page)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_a_prefix_is_listed_and_called_by_its_own_names() {
    let config = format!(
        "{}\n{}\n[endpoint]\nrequire_token = false\n",
        demo_entry("plain", "prefix = \"\""),
        demo_entry("demo", "")
    );
    let serve = ServeOptions::new(&config).ready(&["plain", "demo"]).start();
    let mcp = McpHttp::new(&serve.url());

    let reply = mcp
        .post(None, initialize(0, "names-test").to_string())
        .await
        .expect("initialize");
    let messages = reply.messages().expect("JSON-RPC");
    let instructions = messages[0]["result"]["instructions"]
        .as_str()
        .unwrap_or_else(|| panic!("instructions: {messages:?}"));
    assert!(
        instructions.contains("but those of plain keep their own names.")
            && instructions.contains("## plain\nFrom the server plain, whose names are its own:")
            && instructions
                .contains("## demo\nFrom the server demo, whose names start with `demo__`:"),
        "{instructions}"
    );

    let session = mcp.open_session("names-test").await.expect("a session");
    let mut tools = listed(&mcp, &session, "tools").await;
    tools.sort();
    assert_eq!(
        tools,
        [
            "add",
            "crash",
            "demo__add",
            "demo__crash",
            "demo__echo",
            "demo__fail",
            "demo__sleep",
            "echo",
            "fail",
            "sleep"
        ]
    );
    let mut prompts = listed(&mcp, &session, "prompts").await;
    prompts.sort();
    assert_eq!(prompts, ["demo__greet", "greet"]);

    let sum = mcp
        .call_tool(&session, 2, "add", json!({"a": 2, "b": 3}))
        .await;
    assert_eq!(first_text(&sum), "5", "{sum}");
    let echoed = mcp
        .call_tool(&session, 3, "demo__echo", json!({"text": "prefixed"}))
        .await;
    assert_eq!(first_text(&echoed), "prefixed", "{echoed}");
    let prompt = mcp
        .result(
            &session,
            4,
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "Ada"}}),
        )
        .await;
    assert_eq!(
        prompt["messages"][0]["content"]["text"], "Say hello to Ada.",
        "{prompt}"
    );

    // Both servers are the demo server: the log says which one each call reached, and by what.
    let own = recorded(&serve, "add").await;
    assert_eq!(
        (&own["server"], &own["original"]),
        (&json!("plain"), &json!("add"))
    );
    let prefixed = recorded(&serve, "demo__echo").await;
    assert_eq!(
        (&prefixed["server"], &prefixed["original"]),
        (&json!("demo"), &json!("echo"))
    );
    let attention = serve.api_get("/api/attention").await;
    assert_eq!(attention, json!([]), "nothing clashes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_two_servers_would_have_is_told_apart_and_reported() {
    // `conformance` offers its echo under its own name `demo__add`, the name `demo`'s add has.
    let config = format!(
        "[servers.conformance]\ncommand = \"python3\"\nargs = [{script:?}, \"--echo-as\", \
         \"demo__add\"]\nprefix = \"\"\n\n{demo}\n[endpoint]\nrequire_token = false\n",
        script = misbehave_script().to_string_lossy(),
        demo = demo_entry("demo", ""),
    );
    let serve = ServeOptions::new(&config)
        .ready(&["conformance", "demo"])
        .start();
    let mcp = McpHttp::new(&serve.url());
    let session = mcp.open_session("names-test").await.expect("a session");

    let tools = listed(&mcp, &session, "tools").await;
    assert!(!tools.contains(&"demo__add".to_owned()), "{tools:?}");
    // Fixed names: FNV-1a of "\0demo__add" and of "demo\0add", the same on every run.
    let (theirs, ours) = ("demo__add_5cb6a699", "demo__add_55d23ba8");
    for name in [theirs, ours] {
        assert!(tools.contains(&name.to_owned()), "{name} in {tools:?}");
    }

    let echoed = mcp
        .call_tool(&session, 2, theirs, json!({"text": "unprefixed"}))
        .await;
    assert_eq!(first_text(&echoed), "unprefixed", "{echoed}");
    let sum = mcp
        .call_tool(&session, 3, ours, json!({"a": 2, "b": 3}))
        .await;
    assert_eq!(first_text(&sum), "5", "{sum}");
    let record = recorded(&serve, theirs).await;
    assert_eq!(
        (&record["server"], &record["original"]),
        (&json!("conformance"), &json!("demo__add"))
    );

    let expected = format!(
        "profile default: the tool name `demo__add` clashes between servers, so none keeps it: \
         conformance offers `demo__add` as `{theirs}`, demo offers `add` as `{ours}`"
    );
    let attention = serve.api_get("/api/attention").await;
    let told: Vec<&Value> = attention
        .as_array()
        .expect("a list")
        .iter()
        .filter(|item| item["message"] == expected.as_str())
        .collect();
    assert_eq!(told.len(), 1, "{attention:#}");
    assert_eq!(told[0]["kind"], "profile");
    assert_eq!(told[0]["subject"], "default");
    let logged = serve.wait_for_log("clashes between servers");
    assert!(
        logged.contains(&format!("demo offers `add` as `{ours}`")),
        "{logged}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_name_limit_is_told_only_once_that_editors_file_points_at_switchboard() {
    // Names of 53 characters and more pass Claude Code's room (46) and Cursor's (49).
    let config = format!(
        "{}\n[profiles.default]\nmax_name_length = 64\n\n[endpoint]\nrequire_token = false\n",
        demo_entry("demo", &format!("prefix = \"{}\"", "p".repeat(48)))
    );
    let home = tempfile::tempdir().expect("a home");
    let serve = ServeOptions::new(&config)
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .ready(&["demo"])
        .start();
    let said = |attention: &Value| -> Vec<String> {
        attention
            .as_array()
            .expect("a list")
            .iter()
            .map(|item| item["message"].as_str().expect("a message").to_owned())
            .collect()
    };
    let attention = serve.api_get("/api/attention").await;
    assert_eq!(said(&attention), Vec::<String>::new(), "no editor uses it");

    // Cursor's file points at another Switchboard, which reads it on its first list.
    let again = ServeOptions::new(&config)
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .ready(&["demo"])
        .start();
    let cursor = home.path().join(".cursor");
    std::fs::create_dir_all(&cursor).expect("Cursor's folder");
    std::fs::write(
        cursor.join("mcp.json"),
        json!({"mcpServers": {"switchboard": {"url": again.url()}}}).to_string(),
    )
    .expect("Cursor's file");
    let told = said(&again.api_get("/api/attention").await);
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(
        told[0].starts_with("profile default: ") && told[0].contains("characters Cursor leaves"),
        "Cursor's limit, not Claude Code's: {told:?}"
    );
}
