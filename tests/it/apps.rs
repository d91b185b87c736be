//! MCP Apps through `/mcp`, with the official example servers from npm: a tool's view (`ui://`)
//! is read through Switchboard, the tools only a view may call are kept from every editor that
//! does not render views (its model would see them) and reach the ones that do, still callable;
//! servers are told that Switchboard passes views on, in both protocol eras; and a view renders
//! in Chromium with the official host bridge and calls its tool back (`tests/ui/apps.test.mjs`).

use serde_json::{Value, json};

use crate::stateless::{post, request};
use crate::support::{
    EVENT_LIMIT, McpHttp, ServeProcess, eventually, misbehave_script, node_module, run_node_suite,
    sdk_server_script, sorted_tool_names, switchboard_exe,
};
use crate::ui::{NODE_LIMIT, browser_suite};

/// What an editor that renders MCP Apps' views declares.
fn renders_views() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}})
}

/// The `monitor` (`@modelcontextprotocol/server-system-monitor`: a tool with a view, and
/// `poll-system-stats` for the view alone) and `clock` (`server-basic-vanillajs`) servers.
/// The error message of the answer to `request` in `session`.
async fn error_message(mcp: &McpHttp, session: &str, request: &Value) -> String {
    let reply = mcp
        .post(Some(session), request.to_string())
        .await
        .expect("an answer");
    let answer = &reply.messages().expect("JSON-RPC")[0];
    answer["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("an error: {answer}"))
        .to_owned()
}

fn app_servers() -> String {
    let server = |name: &str, bin: &str| {
        format!(
            "[servers.{name}]\ncommand = {:?}\nargs = [\"--stdio\"]\n\n",
            node_module(&format!(".bin/{bin}")).to_string_lossy()
        )
    };
    server("monitor", "mcp-system-monitor-server") + &server("clock", "mcp-server-basic-vanillajs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_are_read_through_switchboard_and_their_own_tools_reach_only_editors_that_render_them()
 {
    let serve = ServeProcess::with_config(&app_servers(), &["monitor", "clock"]);
    let mcp = McpHttp::new(&serve.url());
    let for_the_model = ["clock__get-time", "monitor__get-system-info"];
    let with_views = [
        "clock__get-time",
        "monitor__get-system-info",
        "monitor__poll-system-stats",
    ];

    // The session era.
    let plain = mcp.open_session("plain editor").await.expect("a session");
    let host = mcp
        .open_session_declaring("app host", renders_views())
        .await
        .expect("a session");
    let listed = mcp.result(&plain, 1, "tools/list", json!({})).await;
    assert_eq!(sorted_tool_names(&listed), for_the_model);
    let listed = mcp.result(&host, 1, "tools/list", json!({})).await;
    assert_eq!(sorted_tool_names(&listed), with_views);
    let get_time = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|tool| tool["name"] == "clock__get-time")
        .expect("get-time");
    let view = get_time["_meta"]["ui"]["resourceUri"]
        .as_str()
        .expect("the tool names its view")
        .to_owned();
    let read = mcp
        .result(&host, 2, "resources/read", json!({"uri": view}))
        .await;
    let contents = &read["contents"][0];
    assert_eq!(contents["uri"], view.as_str());
    assert_eq!(contents["mimeType"], "text/html;profile=mcp-app");
    assert!(
        contents["text"]
            .as_str()
            .is_some_and(|html| html.contains("<html")),
        "{contents}"
    );
    // What only the view calls, the view (through its host) can call; so can a plain editor
    // that knows the name, which its model was never shown.
    for (session, id) in [(&host, 3), (&plain, 4)] {
        let stats = mcp
            .call_tool(session, id, "monitor__poll-system-stats", json!({}))
            .await;
        assert!(stats["structuredContent"].is_object(), "{stats}");
        assert_ne!(stats["isError"], true, "{stats}");
    }

    // A view calls its server's tools by the server's own names, knowing no prefix.
    let by_own_name = mcp
        .call_tool(&host, 5, "poll-system-stats", json!({}))
        .await;
    assert!(
        by_own_name["structuredContent"].is_object(),
        "{by_own_name}"
    );

    // The 2026-07-28 era: each request declares what its editor renders.
    let plain = post(&serve, &request(5, "tools/list", json!({}), json!({})), &[]).await;
    assert_eq!(plain.status, 200);
    assert_eq!(sorted_tool_names(&plain.last()["result"]), for_the_model);
    let host = post(
        &serve,
        &request(6, "tools/list", json!({}), renders_views()),
        &[],
    )
    .await;
    assert_eq!(sorted_tool_names(&host.last()["result"]), with_views);
    let read = post(
        &serve,
        &request(7, "resources/read", json!({"uri": view}), renders_views()),
        &[],
    )
    .await;
    assert_eq!(
        read.last()["result"]["contents"][0]["mimeType"],
        "text/html;profile=mcp-app"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_are_told_switchboard_passes_views_on_in_both_eras() {
    let sdk = sdk_server_script().to_string_lossy().into_owned();
    let config = format!(
        "[servers.dual]\ncommand = \"node\"\nargs = [{sdk:?}]\n\n\
         [servers.modern]\ncommand = \"node\"\nargs = [{sdk:?}, \"--modern-only\"]\n"
    );
    let serve = ServeProcess::with_config(&config, &["dual", "modern"]);
    let declared = |name: &'static str, method: &'static str| {
        let serve = &serve;
        async move {
            let prefix = format!("{method} declares extensions:");
            serve.last_output(name, &prefix).await
        }
    };
    let ui = "io.modelcontextprotocol/ui";
    // A session-era server hears it once, when Switchboard opens its session.
    assert_eq!(declared("dual", "initialize").await.as_deref(), Some(ui));
    // A 2026-07-28 server hears it with Switchboard's own requests, and with an editor's
    // requests what that editor declared.
    assert_eq!(declared("modern", "tools/list").await.as_deref(), Some(ui));
    for (capabilities, expected) in [(renders_views(), ui), (json!({}), "")] {
        let call = request(
            8,
            "tools/call",
            json!({"name": "modern__echo", "arguments": {"text": "hi"}}),
            capabilities,
        );
        let answer = post(&serve, &call, &[]).await;
        assert_eq!(answer.status, 200, "{:?}", answer.messages);
        eventually("the call's declaration", EVENT_LIMIT, || async {
            match declared("modern", "tools/call").await {
                Some(extensions) if extensions == expected => Ok(()),
                other => Err(other),
            }
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_mode_never_finds_or_calls_a_tool_only_a_view_may_call() {
    let config = app_servers() + "[profiles.found]\ndiscovery = \"search\"\n";
    let serve = ServeProcess::with_config(&config, &["monitor", "clock"]);
    let mcp = McpHttp::new(&serve.http_url("/mcp/found"));
    let session = mcp.open_session("plain editor").await.expect("a session");
    let found = mcp
        .call_tool(
            &session,
            1,
            "search_tools",
            json!({"query": "poll system stats cpu memory uptime", "limit": 10}),
        )
        .await;
    let names: Vec<&str> = found["structuredContent"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{found}"))
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(names.contains(&"monitor__get-system-info"), "{names:?}");
    assert!(!names.contains(&"monitor__poll-system-stats"), "{names:?}");

    let through_call_tool = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "call_tool",
        "arguments": {"name": "monitor__poll-system-stats", "arguments": {}},
    }});
    let refused = error_message(&mcp, &session, &through_call_tool).await;
    assert!(refused.contains("view"), "{refused}");
    // The view itself calls it by name, as in list mode.
    let stats = mcp
        .call_tool(&session, 3, "monitor__poll-system-stats", json!({}))
        .await;
    assert!(stats["structuredContent"].is_object(), "{stats}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_naming_one_view_each_offer_it_under_their_own_name() {
    let clock = node_module(".bin/mcp-server-basic-vanillajs");
    let config = format!(
        "{}[servers.clock2]\ncommand = {:?}\nargs = [\"--stdio\"]\n",
        app_servers(),
        clock.to_string_lossy()
    );
    let serve = ServeProcess::with_config(&config, &["monitor", "clock", "clock2"]);
    let mcp = McpHttp::new(&serve.url());
    let session = mcp
        .open_session_declaring("app host", renders_views())
        .await
        .expect("a session");
    let own = "ui://get-time/mcp-app.html";

    let listed = mcp.result(&session, 1, "tools/list", json!({})).await;
    let view_of = |name: &str| {
        let tool = listed["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .find(|tool| tool["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {listed}"));
        let meta = &tool["_meta"];
        assert_eq!(meta["ui"]["resourceUri"], meta["ui/resourceUri"], "{tool}");
        meta["ui"]["resourceUri"]
            .as_str()
            .expect("a view")
            .to_owned()
    };
    let (first, second) = (view_of("clock__get-time"), view_of("clock2__get-time"));
    assert_eq!(first, "ui://clock/get-time/mcp-app.html");
    assert_eq!(second, "ui://clock2/get-time/mcp-app.html");
    assert_eq!(
        view_of("monitor__get-system-info"),
        "ui://system-monitor/mcp-app.html",
        "a view only one server names keeps its URI"
    );

    let resources = mcp.result(&session, 2, "resources/list", json!({})).await;
    let mut uris: Vec<&str> = resources["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|resource| resource["uri"].as_str())
        .collect();
    uris.sort_unstable();
    assert_eq!(
        uris,
        [
            first.as_str(),
            second.as_str(),
            "ui://system-monitor/mcp-app.html"
        ]
    );

    for (id, view) in [(3, &first), (4, &second)] {
        let read = mcp
            .result(&session, id, "resources/read", json!({"uri": view}))
            .await;
        let contents = &read["contents"][0];
        assert_eq!(contents["uri"], view.as_str(), "{read}");
        assert_eq!(contents["mimeType"], "text/html;profile=mcp-app");
        assert!(
            contents["text"]
                .as_str()
                .is_some_and(|html| html.contains("<html"))
        );
    }
    let ambiguous =
        json!({"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": own}});
    let refused = error_message(&mcp, &session, &ambiguous).await;
    assert!(
        refused.contains("ambiguous") || refused.contains("no backend"),
        "the server's own URI names neither: {refused}"
    );

    let get_time =
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "get-time"}});
    let refused = error_message(&mcp, &session, &get_time).await;
    assert!(
        refused.contains("unknown tool"),
        "two servers call their tool get-time: {refused}"
    );

    let read = post(
        &serve,
        &request(6, "resources/read", json!({"uri": second}), renders_views()),
        &[],
    )
    .await;
    assert_eq!(read.last()["result"]["contents"][0]["uri"], second.as_str());
}

#[test]
fn an_app_renders_and_calls_its_tool_back_in_a_real_browser() {
    let clock = node_module(".bin/mcp-server-basic-vanillajs");
    let config = format!(
        "[servers.clock]\ncommand = {:?}\nargs = [\"--stdio\"]\n",
        clock.to_string_lossy()
    );
    let serve = ServeProcess::with_config(&config, &["clock"]);
    let mut node = browser_suite("apps.test.mjs", &serve);
    node.env("SWITCHBOARD_MCP_URL", serve.url())
        .env("SWITCHBOARD_EXE", switchboard_exe())
        .envs(serve.env());
    run_node_suite(node, NODE_LIMIT, &|| serve.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_that_is_not_an_app_s_html_is_refused_and_the_rest_goes_on() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        r#"[{"name":"show","inputSchema":{"type":"object"},"_meta":{"ui":{"resourceUri":"ui://mis/view"}}}]"#,
    )
    .expect("write the tools");
    let config = format!(
        "{}[servers.mis]\ncommand = \"python3\"\nargs = [{:?}, \"--tools-from\", {:?}]\n",
        app_servers(),
        misbehave_script().to_string_lossy(),
        tools.to_string_lossy()
    );
    let serve = ServeProcess::with_config(&config, &["monitor", "clock", "mis"]);
    let mcp = McpHttp::new(&serve.url());
    let session = mcp
        .open_session_declaring("app host", renders_views())
        .await
        .expect("a session");
    let read = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "ui://mis/view"}});
    let refused = error_message(&mcp, &session, &read).await;
    assert!(
        refused.contains("text/plain") && refused.contains("not an MCP App"),
        "{refused}"
    );
    // The same server's other resources, and the other servers' views, are read as ever.
    let plain = mcp
        .result(&session, 2, "resources/read", json!({"uri": "test://a"}))
        .await;
    assert_eq!(plain["contents"][0]["text"], "content of test://a");
    let view = mcp
        .result(
            &session,
            3,
            "resources/read",
            json!({"uri": "ui://get-time/mcp-app.html"}),
        )
        .await;
    assert_eq!(view["contents"][0]["mimeType"], "text/html;profile=mcp-app");
}
