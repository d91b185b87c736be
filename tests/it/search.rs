//! Search mode over a catalog of real servers from npm and PyPI (server-everything,
//! server-filesystem, server-memory, mcp-server-time, mcp-server-git): a profile with
//! `discovery = "search"` lists two tools of Switchboard's own; `search_tools` finds the right
//! tool for what an editor would ask, and `call_tool` calls it.

use std::path::PathBuf;
use std::process::Command;

use config::{BackendConfig, Discovery, Pattern, Profile};
use hub::{HubOptions, Inbound, Session};
use serde_json::{Value, json};
use supervisor::spawn::ProcessGroups;
use supervisor::status::BackendState;

use crate::support::*;

fn python_server(name: &str, script: &str, args: Vec<String>) -> BackendConfig {
    let exe = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/py/bin")
        .join(script);
    assert!(
        exe.exists(),
        "{} is missing: scripts/test installs it",
        exe.display()
    );
    BackendConfig::new(name, exe.to_string_lossy(), args)
}

fn npm_server(name: &str, bin: &str, args: Vec<String>) -> BackendConfig {
    BackendConfig::new(
        name,
        node_module(&format!(".bin/{bin}")).to_string_lossy(),
        args,
    )
}

async fn request(session: &Session, id: u64, method: &str, params: Value) -> Value {
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    raw_request(session, &message.to_string()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_mode_finds_the_right_tool_among_real_servers_and_calls_it() {
    let dir = tempfile::tempdir().expect("a folder");
    let repository = dir.path().join("repo");
    std::fs::create_dir(&repository).expect("a folder");
    let git = Command::new("git")
        .args(["init", "--quiet"])
        .current_dir(&repository)
        .status()
        .expect("git runs");
    assert!(git.success());
    let mut memory = npm_server("memory", "mcp-server-memory", Vec::new());
    memory.process_mut().expect("local").env.insert(
        "MEMORY_FILE_PATH".to_owned(),
        dir.path()
            .join("memory.jsonl")
            .to_string_lossy()
            .into_owned(),
    );
    let configs = vec![
        everything("everything"),
        npm_server(
            "files",
            "mcp-server-filesystem",
            vec![dir.path().to_string_lossy().into_owned()],
        ),
        memory,
        python_server("time", "mcp-server-time", Vec::new()),
        python_server(
            "git",
            "mcp-server-git",
            vec![
                "--repository".to_owned(),
                repository.to_string_lossy().into_owned(),
            ],
        ),
    ];
    let names: Vec<String> = configs.iter().map(|config| config.name.clone()).collect();
    let mut search = Profile::everything("search");
    search.discovery = Discovery::Search;
    search.always_listed = vec![Pattern {
        glob: "get_current_time".to_owned(),
        line: 1,
        column: 1,
    }];
    let (engine, hub) = hub::start(
        configs,
        ProcessGroups::in_memory(),
        HubOptions {
            profiles: vec![search],
            ..HubOptions::default()
        },
    );
    for name in &names {
        wait_state(
            &engine.backend(name).expect("configured"),
            BackendState::Ready,
        )
        .await;
    }
    let (session, _events) = hub.open_session_in("search").expect("a served profile");
    // The catalogs are rebuilt just after servers become ready: wait until every server's tools
    // are in (the default profile is built in the same rebuild as the search one).
    eventually(
        "every server's tools are catalogued",
        EVENT_LIMIT,
        || async {
            let budgets = hub.budgets();
            let catalogued: Vec<&str> = budgets[0]
                .servers
                .iter()
                .map(|cost| cost.server.as_str())
                .collect();
            if catalogued.len() == names.len() {
                Ok(())
            } else {
                Err(format!("{catalogued:?}"))
            }
        },
    )
    .await;
    let listed = request(&session, 1, "tools/list", json!({})).await;
    let tools: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| tool["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(
        tools,
        ["search_tools", "call_tool", "time__get_current_time"],
        "the two tools, and the one the profile always lists"
    );
    assert_eq!(
        listed["result"]["tools"][2]["_meta"]["anthropic/alwaysLoad"],
        true
    );

    // What an editor would ask, and the tool it should find first.
    let cases = [
        ("the current time in Tokyo", "time__get_current_time"),
        ("convert a time between timezones", "time__convert_time"),
        ("read the contents of a text file", "files__read_text_file"),
        ("list the files in a directory", "files__list_directory"),
        (
            "commit the staged changes with a message",
            "git__git_commit",
        ),
        ("show the working tree status", "git__git_status"),
        (
            "create new entities in the knowledge graph",
            "memory__create_entities",
        ),
        ("echo a message back", "everything__echo"),
        ("the sum of two numbers", "everything__get-sum"),
        ("move or rename a file", "files__move_file"),
    ];
    let mut wrong = Vec::new();
    for (id, (query, expected)) in (2..).zip(cases) {
        let found = request(
            &session,
            id,
            "tools/call",
            json!({"name": "search_tools", "arguments": {"query": query, "limit": 3}}),
        )
        .await;
        let hits = found["result"]["structuredContent"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{query}: {found}"));
        let names: Vec<&str> = hits
            .iter()
            .filter_map(|tool| tool["name"].as_str())
            .collect();
        if names.first() != Some(&expected) {
            wrong.push(format!("{query:?} found {names:?}, not {expected} first"));
        }
        assert!(
            hits.iter().all(|tool| tool["inputSchema"].is_object()),
            "definitions come whole"
        );
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));

    let called = request(
        &session,
        100,
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}}),
    )
    .await;
    assert!(
        first_text(&called["result"]).contains("Asia/Tokyo"),
        "call_tool reached the time server: {called}"
    );
    let direct = request(
        &session,
        101,
        "tools/call",
        json!({"name": "everything__echo", "arguments": {"message": "still callable by name"}}),
    )
    .await;
    assert_eq!(
        first_text(&direct["result"]),
        "Echo: still callable by name"
    );
    let unknown = request(
        &session,
        102,
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "nobody__nothing"}}),
    )
    .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    hub.shutdown();
    engine.shutdown().await;
}

/// Sends `body` as it is, and gives the last message of its answer as its text.
async fn raw_answer(session: &Session, body: &str) -> String {
    let Inbound::Request(mut reply) = session.receive(body.as_bytes()) else {
        panic!("a request: {body}");
    };
    let mut last = Vec::new();
    while let Some(message) = tokio::time::timeout(EVENT_LIMIT, reply.messages.recv())
        .await
        .expect("an answer in time")
    {
        last = message.to_json().to_vec();
    }
    String::from_utf8(last).expect("UTF-8")
}

/// Sends `body` as it is, and gives the last message of its answer.
async fn raw_request(session: &Session, body: &str) -> Value {
    let answer = raw_answer(session, body).await;
    serde_json::from_str(&answer).unwrap_or_else(|error| panic!("{error}: {answer}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbers_no_double_holds_pass_as_written_through_calls_and_search_mode() {
    // raw_args's definition holds numbers no double holds too.
    let dir = tempfile::tempdir().expect("a folder");
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        r#"[{"name":"raw_args","description":"Answer the arguments as received","inputSchema":{"type":"object","properties":{"n":{"type":"number","multipleOf":1.50,"maximum":1e400}}}}]"#,
    )
    .expect("the tools");
    let mut search = Profile::everything("search");
    search.discovery = Discovery::Search;
    let (engine, hub) = hub::start(
        vec![misbehave(
            "mis",
            &["--tools-from", &tools.to_string_lossy()],
        )],
        ProcessGroups::in_memory(),
        HubOptions {
            profiles: vec![search],
            ..HubOptions::default()
        },
    );
    wait_state(
        &engine.backend("mis").expect("configured"),
        BackendState::Ready,
    )
    .await;
    let (session, _events) = hub.open_session_in("search").expect("a served profile");
    // The catalogs are rebuilt just after the server becomes ready.
    eventually("mis's tools are catalogued", EVENT_LIMIT, || async {
        let budgets = hub.budgets();
        match budgets.iter().all(|budget| budget.tools > 0) {
            true => Ok(()),
            false => Err(format!(
                "{:?}",
                budgets.iter().map(|b| b.tools).collect::<Vec<_>>()
            )),
        }
    })
    .await;
    // `1.50` read as a number is `1.5`; no double holds `1e400`, nor `12345678901234567890`
    // exactly.
    let arguments = r#"{"price": 1.50, "huge": 1e400, "id": 12345678901234567890}"#;
    let as_received = r#"{"price": 1.50, "huge": 1e400, "id": 12345678901234567890}"#;
    let direct = raw_request(
        &session,
        &format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"mis__raw_args","arguments":{arguments}}}}}"#
        ),
    )
    .await;
    assert_eq!(first_text(&direct["result"]), as_received, "{direct}");
    let through = raw_request(
        &session,
        &format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"call_tool","arguments":{{"name":"mis__raw_args","arguments":{arguments}}}}}}}"#
        ),
    )
    .await;
    assert_eq!(first_text(&through["result"]), as_received, "{through}");
    // A progress token makes the hub rewrite the params' `_meta`: the rest stays as written.
    let rewritten = raw_request(
        &session,
        &format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"mis__raw_args","arguments":{arguments},"_meta":{{"progressToken":"p-1"}}}}}}"#
        ),
    )
    .await;
    assert_eq!(first_text(&rewritten["result"]), as_received, "{rewritten}");
    // search_tools answers the definition as the server listed it.
    let found = raw_answer(
        &session,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"arguments as received"}}}"#,
    )
    .await;
    assert!(
        found.contains(r#""structuredContent":{"tools":[{"name":"mis__raw_args","#)
            && found.contains(r#""multipleOf":1.50,"maximum":1e400"#),
        "{found}"
    );
    engine.shutdown().await;
}
