//! A task belongs to whoever was handed it, through a real `switchboard serve` with the real
//! server-everything behind it: a client of another profile, or another session of the same
//! one, cannot list, read, cancel or answer a task, in either era, however it names it; and the
//! log levels and messages of a profile's sessions and servers stay within that profile.

use serde_json::{Value, json};

use crate::stateless::{Listen, about_task, call, only_question, post_to};
use crate::support::*;

/// What the task's result carries, which no one but its owner may read.
const SECRET: &str = "SECRET-OF-beta";

const RESEARCH: &str = "beta__simulate-research-query";

/// `alpha` (the misbehaving server) is all profiles `a` and `default` offer; `beta`
/// (server-everything, whose research tool runs as a task) is only in profile `b`.
fn config() -> String {
    format!(
        "[servers.alpha]\ncommand = \"python3\"\nargs = [{script:?}]\n\n\
         [servers.beta]\ncommand = {everything:?}\nargs = [\"stdio\"]\n\n\
         [profiles.default]\nservers = [\"alpha\"]\n\n\
         [profiles.a]\nservers = [\"alpha\"]\n\n\
         [profiles.b]\nservers = [\"beta\"]\n",
        script = misbehave_script(),
        everything = everything_server().to_string_lossy(),
    )
}

/// The whole JSON-RPC answer to request `id` in `session`.
async fn answer(mcp: &McpHttp, session: &str, id: u64, method: &str, params: Value) -> Value {
    let request = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    let reply = mcp
        .post(Some(session), request.to_string())
        .await
        .expect("an answer");
    let messages = reply.messages().expect("JSON-RPC messages");
    messages
        .into_iter()
        .find(|message| message["id"] == id)
        .unwrap_or_else(|| panic!("no answer to {method}: {}", reply.body))
}

/// The error an editor gets for a task that is not its own: the one a task that never was gets.
fn assert_unknown(answer: &Value, task: &str) {
    assert_eq!(
        answer["error"],
        json!({"code": -32602, "message": format!("unknown task: {task:?}")}),
        "{answer}"
    );
    assert!(!answer.to_string().contains(SECRET), "{answer}");
}

/// The same task id in the form Switchboard gave before ids were sealed, `sb1.SERVER.ID`: what an
/// intruder who guesses the server's own id would send.
fn unsealed(task: &str) -> String {
    let (unsealed, _seal) = task.rsplit_once('.').expect("a sealed id");
    unsealed.to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_profile_or_session_cannot_list_read_cancel_or_guess_a_sessions_task() {
    let serve = ServeProcess::with_config(&config(), &["alpha", "beta"]);
    let at = |path: &str| McpHttp::new(&serve.http_url(path)).with_token(SERVE_TOKEN);
    let (owner_mcp, a_mcp, default_mcp) = (at("/mcp/b"), at("/mcp/a"), at("/mcp"));
    let owner = owner_mcp.open_session("owner").await.expect("a session");
    let mut owner_events = owner_mcp.stream(&owner).await.expect("a stream");
    let started = owner_mcp
        .result(
            &owner,
            1,
            "tools/call",
            json!({"name": RESEARCH, "arguments": {"topic": SECRET}, "task": {"ttl": 60000}}),
        )
        .await;
    let task = started["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {started}"))
        .to_owned();
    assert!(task.starts_with("sb1.beta."), "{task}");

    let on_a = a_mcp
        .open_session("intruder on a")
        .await
        .expect("a session");
    let on_default = default_mcp
        .open_session("intruder on default")
        .await
        .expect("a session");
    let on_b = owner_mcp
        .open_session("intruder on b")
        .await
        .expect("a session");
    let mut on_b_events = owner_mcp.stream(&on_b).await.expect("a stream");
    let intruders = [
        (&a_mcp, &on_a),
        (&default_mcp, &on_default),
        (&owner_mcp, &on_b),
    ];
    for (mcp, session) in intruders {
        let listed = answer(mcp, session, 2, "tasks/list", json!({})).await;
        assert_eq!(listed["result"], json!({"tasks": []}), "{listed}");
        for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
            for named in [task.clone(), unsealed(&task)] {
                let refused = answer(mcp, session, 3, method, json!({"taskId": named})).await;
                assert_unknown(&refused, &named);
            }
        }
    }
    let never_was = answer(
        &owner_mcp,
        &on_b,
        4,
        "tasks/get",
        json!({"taskId": "sb1.beta.nothing.AAAAAAAAAAAAAAAAAAAAAA"}),
    )
    .await;
    assert_unknown(&never_was, "sb1.beta.nothing.AAAAAAAAAAAAAAAAAAAAAA");

    // The owner still has it all: the task in its list, not cancelled by anyone, and its result.
    let listed = owner_mcp.result(&owner, 5, "tasks/list", json!({})).await;
    let ids: Vec<&str> = listed["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("a list: {listed}"))
        .iter()
        .filter_map(|task| task["taskId"].as_str())
        .collect();
    assert_eq!(ids, [task.as_str()], "{listed}");
    eventually("the task completes", EVENT_LIMIT, || async {
        let state = owner_mcp
            .result(&owner, 6, "tasks/get", json!({"taskId": task}))
            .await;
        match state["status"].as_str() {
            Some("completed") => Ok(state),
            _ => Err(state),
        }
    })
    .await;
    let result = owner_mcp
        .result(&owner, 7, "tasks/result", json!({"taskId": task}))
        .await;
    assert!(first_text(&result).contains(SECRET), "{result}");

    // The server's news of the task reach its owner, by the id it was handed, and no one else:
    // once the owner has been told it completed, so would everyone else have been.
    loop {
        let event = owner_events.next_message().await.expect("an event");
        if event["method"] == "notifications/tasks/status" {
            assert_eq!(event["params"]["taskId"], task.as_str(), "{event}");
            if event["params"]["status"] == "completed" {
                break;
            }
        }
    }
    while let Ok(event) = tokio::time::timeout(
        std::time::Duration::from_millis(500),
        on_b_events.next_message(),
    )
    .await
    {
        let event = event.expect("an event");
        assert_ne!(event["method"], "notifications/tasks/status", "{event}");
    }

    let second = owner_mcp
        .result(
            &owner,
            8,
            "tools/call",
            json!({"name": RESEARCH, "arguments": {"topic": "waves"}, "task": {"ttl": 60000}}),
        )
        .await;
    let second = second["task"]["taskId"].as_str().expect("a task id");
    let cancelled = owner_mcp
        .result(&owner, 9, "tasks/cancel", json!({"taskId": second}))
        .await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_clients_task_is_unknown_to_other_profiles_and_to_sessions() {
    let serve = ServeProcess::with_config(&config(), &["alpha", "beta"]);
    let with_tasks =
        json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    let created = post_to(
        &serve,
        "/mcp/b",
        &call(
            1,
            RESEARCH,
            json!({"topic": SECRET, "ambiguous": true}),
            with_tasks.clone(),
        ),
        &[],
    )
    .await;
    let handle = &created.last()["result"];
    assert_eq!(handle["resultType"], "task", "{handle}");
    let task = handle["taskId"].as_str().expect("a task id").to_owned();
    let about = |id: u64, method: &str, named: &str, extra: Value| {
        about_task(id, method, named, extra, &with_tasks)
    };
    let answers = |interpretation: &str| json!({"inputResponses": {"anything": {"action": "accept", "content": {"interpretation": interpretation}}}});

    // Profiles that do not offer beta: its task is unknown to their 2026-07-28 clients.
    for path in ["/mcp/a", "/mcp"] {
        for named in [task.clone(), unsealed(&task)] {
            for (method, extra) in [
                ("tasks/get", json!({})),
                ("tasks/update", answers("tragedy")),
                ("tasks/cancel", json!({})),
            ] {
                let refused = post_to(&serve, path, &about(2, method, &named, extra), &[]).await;
                assert_unknown(refused.last(), &named);
            }
        }
        let listen = crate::stateless::request(
            3,
            "subscriptions/listen",
            json!({"notifications": {"taskIds": [task, unsealed(&task)]}}),
            with_tasks.clone(),
        );
        let mut stream = Listen::open_at(&serve, path, &listen).await;
        let acknowledged = stream.next().await;
        assert_eq!(
            acknowledged["params"]["notifications"]["taskIds"],
            json!([]),
            "{acknowledged}"
        );
    }
    // Nor is it any session's, of its own profile either.
    let session_mcp = McpHttp::new(&serve.http_url("/mcp/b")).with_token(SERVE_TOKEN);
    let session = session_mcp
        .open_session("a session")
        .await
        .expect("a session");
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let refused = answer(&session_mcp, &session, 4, method, json!({"taskId": task})).await;
        assert_unknown(&refused, &task);
    }

    // The owner's profile answers the question, in a session of that profile (default does not
    // offer beta), and no one else's answer or cancel came through.
    let mut asked = None;
    for id in 5..300 {
        let state = post_to(
            &serve,
            "/mcp/b",
            &about(id, "tasks/get", &task, json!({})),
            &[],
        )
        .await;
        let state = state.last()["result"].clone();
        assert_eq!(state["taskId"], task.as_str(), "{state}");
        match state["status"].as_str() {
            Some("working") => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
            Some("input_required") => {
                asked = Some(only_question(&state));
                break;
            }
            _ => panic!("a task that asks before it ends: {state}"),
        }
    }
    let (key, _question) = asked.expect("the task asked");
    let answered = json!({"inputResponses": {key: {"action": "accept", "content": {"interpretation": "comedy"}}}});
    let updated = post_to(
        &serve,
        "/mcp/b",
        &about(300, "tasks/update", &task, answered),
        &[],
    )
    .await;
    assert_eq!(
        updated.last()["result"]["resultType"],
        "complete",
        "{}",
        updated.last()
    );
    let done = eventually("the task completes", EVENT_LIMIT, || async {
        let state = post_to(
            &serve,
            "/mcp/b",
            &about(301, "tasks/get", &task, json!({})),
            &[],
        )
        .await;
        let state = state.last()["result"].clone();
        match state["status"].as_str() {
            Some("completed") => Ok(state),
            _ => Err(state),
        }
    })
    .await;
    let report = first_text(&done["result"]);
    assert!(report.contains(&format!("{SECRET} (comedy)")), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_level_set_in_one_profile_reaches_only_its_servers() {
    let script = misbehave_script();
    let config = format!(
        "[servers.alpha]\ncommand = \"python3\"\nargs = [{script:?}]\n\n\
         [servers.beta]\ncommand = \"python3\"\nargs = [{script:?}]\n\n\
         [profiles.a]\nservers = [\"alpha\"]\n",
    );
    let serve = ServeProcess::with_config(&config, &["alpha", "beta"]);
    let on_a = McpHttp::new(&serve.http_url("/mcp/a")).with_token(SERVE_TOKEN);
    let a = on_a.open_session("on a").await.expect("a session");
    let set = on_a
        .result(&a, 1, "logging/setLevel", json!({"level": "critical"}))
        .await;
    assert_eq!(set, json!({}));
    let level = on_a.call_tool(&a, 2, "alpha__log_level", json!({})).await;
    assert_eq!(first_text(&level), "critical", "alpha is a's server");

    let everything = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let default = everything
        .open_session("on default")
        .await
        .expect("a session");
    let level = everything
        .call_tool(&default, 3, "beta__log_level", json!({}))
        .await;
    assert_eq!(first_text(&level), "None", "beta was told no level");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_of_a_server_that_left_the_profile_is_unknown_to_its_session() {
    let serve = ServeProcess::with_config(&config(), &["alpha", "beta"]);
    let mcp = McpHttp::new(&serve.http_url("/mcp/b")).with_token(SERVE_TOKEN);
    let owner = mcp.open_session("owner").await.expect("a session");
    let started = mcp
        .result(
            &owner,
            1,
            "tools/call",
            json!({"name": RESEARCH, "arguments": {"topic": SECRET}, "task": {"ttl": 60000}}),
        )
        .await;
    let task = started["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {started}"))
        .to_owned();

    // Profile b now offers alpha instead; beta keeps running, for no profile.
    let edited = config().replace(
        "[profiles.b]\nservers = [\"beta\"]",
        "[profiles.b]\nservers = [\"alpha\"]",
    );
    std::fs::write(serve.config_path(), edited).expect("the config is saved");
    eventually("profile b offers alpha", EVENT_LIMIT, || async {
        let tools = mcp.result(&owner, 2, "tools/list", json!({})).await;
        let names = sorted_tool_names(&tools);
        match names.iter().any(|name| name.starts_with("alpha__")) {
            true => Ok(()),
            false => Err(names),
        }
    })
    .await;
    let listed = mcp.result(&owner, 3, "tasks/list", json!({})).await;
    assert_eq!(listed, json!({"tasks": []}));
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let refused = answer(&mcp, &owner, 4, method, json!({"taskId": task})).await;
        assert_unknown(&refused, &task);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_log_messages_reach_only_the_sessions_of_profiles_that_offer_it() {
    let serve = ServeProcess::with_config(&config(), &["alpha", "beta"]);
    let on_b = McpHttp::new(&serve.http_url("/mcp/b")).with_token(SERVE_TOKEN);
    let on_a = McpHttp::new(&serve.http_url("/mcp/a")).with_token(SERVE_TOKEN);
    let b = on_b.open_session("on b").await.expect("a session");
    let a = on_a.open_session("on a").await.expect("a session");
    let mut b_events = on_b.stream(&b).await.expect("a stream");
    let mut a_events = on_a.stream(&a).await.expect("a stream");
    on_b.call_tool(&b, 1, "beta__toggle-simulated-logging", json!({}))
        .await;

    // The first message is sent during the call, to its caller; the next, five seconds on, while
    // no one's call waits on beta.
    let mut told = 0;
    while told < 2 {
        let event = b_events.next_message().await.expect("an event");
        if event["method"] == "notifications/message" {
            told += 1;
        }
    }
    while let Ok(event) = tokio::time::timeout(
        std::time::Duration::from_millis(500),
        a_events.next_message(),
    )
    .await
    {
        let event = event.expect("an event");
        assert_ne!(event["method"], "notifications/message", "{event}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_profile_with_a_server_of_the_tasks_extension_offers_it() {
    let config = format!(
        "[servers.alpha]\ncommand = \"python3\"\nargs = [{alpha:?}]\n\n\
         [servers.tasks]\ncommand = \"python3\"\nargs = [{tasks:?}]\n\n\
         [profiles.a]\nservers = [\"alpha\"]\n\n\
         [profiles.b]\nservers = [\"tasks\"]\n",
        alpha = misbehave_script(),
        tasks = backend_script("tasks_server.py"),
    );
    let serve = ServeProcess::with_config(&config, &["alpha", "tasks"]);
    let discover = crate::stateless::request(1, "server/discover", json!({}), json!({}));
    let extension = |path: &'static str| {
        let (serve, discover) = (&serve, &discover);
        async move {
            let answer = post_to(serve, path, discover, &[]).await;
            answer.last()["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"]
                .clone()
        }
    };
    assert_eq!(extension("/mcp/b").await, json!({}));
    assert_eq!(extension("/mcp/a").await, Value::Null);
}
