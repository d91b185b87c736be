//! Tasks of the 2026-07-28 extension: routed by their ids, with input along the way, and a
//! session-era server's tasks in the extension's shapes.

use serde_json::{Value, json};

use super::{Listen, about_task, call, only_question, post, request};
use crate::support::{ServeProcess, ServedBackend, first_text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_of_the_2026_extension_route_by_their_ids_with_input_along_the_way() {
    let serve = ServeProcess::start(&[ServedBackend::Tasks, ServedBackend::Everything]);
    let with_tasks =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}});

    let discover = post(
        &serve,
        &request(1, "server/discover", json!({}), json!({})),
        &[],
    )
    .await;
    let extensions = &discover.last()["result"]["capabilities"]["extensions"];
    assert!(
        extensions["io.modelcontextprotocol/tasks"].is_object(),
        "a server offers the extension, so the endpoint does: {}",
        discover.last()
    );

    let refused = post(
        &serve,
        &call(2, "tasks__report", json!({"title": "Q3"}), json!({})),
        &[],
    )
    .await;
    let error = &refused.last()["error"];
    assert_eq!(
        (refused.status, &error["code"]),
        (400, &json!(-32021)),
        "{error}"
    );
    assert!(
        error["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"]
            .is_object()
    );

    let created = post(
        &serve,
        &call(
            3,
            "tasks__report",
            json!({"title": "Q3"}),
            with_tasks.clone(),
        ),
        &[],
    )
    .await;
    let result = &created.last()["result"];
    assert_eq!(result["resultType"], "task", "{result}");
    let task = result["taskId"].as_str().expect("a task id").to_owned();
    assert!(
        task.starts_with("sb1.tasks.task-1."),
        "the id names its server and task, sealed: {task}"
    );

    let task_request =
        |id: u64, method: &str, extra: Value| about_task(id, method, &task, extra, &with_tasks);
    let pending = post(
        &serve,
        &task_request(4, "tasks/get", json!({})),
        &[("mcp-name", &task)],
    )
    .await;
    let state = &pending.last()["result"];
    assert_eq!(state["status"], "input_required", "{state}");
    assert_eq!(state["taskId"], task.as_str());
    assert_eq!(
        state["inputRequests"]["approve"]["method"],
        "elicitation/create"
    );

    let wrong_name = post(
        &serve,
        &task_request(5, "tasks/get", json!({})),
        &[("mcp-name", "sb1.tasks.other")],
    )
    .await;
    assert_eq!(
        (wrong_name.status, &wrong_name.last()["error"]["code"]),
        (400, &json!(-32020))
    );

    let answers =
        json!({"inputResponses": {"approve": {"action": "accept", "content": {"name": "Grace"}}}});
    let updated = post(
        &serve,
        &task_request(6, "tasks/update", answers),
        &[("mcp-name", &task)],
    )
    .await;
    assert_eq!(
        updated.last()["result"]["resultType"],
        "complete",
        "{}",
        updated.last()
    );
    let done = post(
        &serve,
        &task_request(7, "tasks/get", json!({})),
        &[("mcp-name", &task)],
    )
    .await;
    let state = &done.last()["result"];
    assert_eq!(state["status"], "completed", "{state}");
    assert_eq!(
        state["result"]["content"][0]["text"],
        "report Q3 approved by Grace"
    );

    let mut unknown = task_request(8, "tasks/cancel", json!({}));
    unknown["params"]["taskId"] = json!("sb1.nowhere.1");
    let answer = post(&serve, &unknown, &[]).await;
    assert_eq!(answer.last()["error"]["code"], -32602, "{}", answer.last());
    let mut foreign = task_request(9, "tasks/get", json!({}));
    foreign["params"]["taskId"] = json!("task-1");
    let answer = post(&serve, &foreign, &[]).await;
    assert_eq!(answer.last()["error"]["code"], -32602, "{}", answer.last());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_era_servers_task_reaches_a_2026_client_in_the_extensions_shapes() {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let tool = "everything__simulate-research-query";
    let with_tasks =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {"form": {}}});

    // A client without the extension cannot hold the task: Switchboard waits for its result.
    let plain = post(
        &serve,
        &call(1, tool, json!({"topic": "tides"}), json!({})),
        &[],
    )
    .await;
    let result = &plain.last()["result"];
    assert_eq!(result["resultType"], "complete", "{}", plain.last());
    assert!(
        first_text(result).contains("# Research Report: tides"),
        "{result}"
    );

    let created = post(
        &serve,
        &call(
            2,
            tool,
            json!({"topic": "python", "ambiguous": true}),
            with_tasks.clone(),
        ),
        &[],
    )
    .await;
    let handle = &created.last()["result"];
    assert_eq!(handle["resultType"], "task", "{handle}");
    let task = handle["taskId"].as_str().expect("a task id").to_owned();
    assert!(task.starts_with("sb1.everything."), "{task}");
    assert_eq!(handle["status"], "working");
    assert!(
        handle["ttlMs"].is_u64() && handle["pollIntervalMs"].is_u64(),
        "{handle}"
    );
    assert!(
        handle["ttl"].is_null() && handle["task"].is_null(),
        "{handle}"
    );

    let task_request = |id: u64, method: &str, extra: Value, capabilities: &Value| {
        about_task(id, method, &task, extra, capabilities)
    };
    let undeclared = post(
        &serve,
        &task_request(3, "tasks/get", json!({}), &json!({})),
        &[],
    )
    .await;
    assert_eq!(
        (undeclared.status, &undeclared.last()["error"]["code"]),
        (400, &json!(-32021)),
        "{}",
        undeclared.last()
    );

    let listen = request(
        4,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [task, "sb1.nowhere.1"]}}),
        with_tasks.clone(),
    );
    let mut stream = Listen::open(&serve, &listen).await;
    let acknowledged = stream.next().await;
    assert_eq!(
        acknowledged["params"]["notifications"]["taskIds"],
        json!([task]),
        "a task of no configured server is not honoured: {acknowledged}"
    );

    let mut asked = None;
    for id in 5.. {
        let state = post(
            &serve,
            &task_request(id, "tasks/get", json!({}), &with_tasks),
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
        assert!(id < 300, "the task never asked");
    }
    let (key, question) = asked.expect("a question");
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert!(
        question["params"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("python")),
        "{question}"
    );
    // The stream tells of the question too, before anyone answers it.
    let mut statuses = Vec::new();
    let mut told_of = |notice: &Value| {
        assert_eq!(notice["method"], "notifications/tasks", "{notice}");
        assert_eq!(
            notice["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            4
        );
        assert_eq!(notice["params"]["taskId"], task.as_str());
        let status = notice["params"]["status"]
            .as_str()
            .expect("a status")
            .to_owned();
        statuses.push(status.clone());
        status
    };
    loop {
        let notice = stream.next().await;
        match told_of(&notice).as_str() {
            "input_required" => break,
            "working" => {}
            other => panic!("the stream told of {other} before the question: {notice}"),
        }
    }
    let answers = json!({"inputResponses": {
        key: {"action": "accept", "content": {"interpretation": "comedy"}},
    }});
    let updated = post(
        &serve,
        &task_request(400, "tasks/update", answers, &with_tasks),
        &[],
    )
    .await;
    assert_eq!(
        updated.last()["result"]["resultType"],
        "complete",
        "{}",
        updated.last()
    );

    let completed = loop {
        let notice = stream.next().await;
        if told_of(&notice) == "completed" {
            break notice["params"].clone();
        }
    };
    assert_eq!(
        statuses.last().map(String::as_str),
        Some("completed"),
        "{statuses:?}"
    );
    let report = first_text(&completed["result"]);
    assert!(
        report.contains("# Research Report: python (comedy)"),
        "{report}"
    );
    let done = post(
        &serve,
        &task_request(401, "tasks/get", json!({}), &with_tasks),
        &[],
    )
    .await;
    let done = &done.last()["result"];
    assert_eq!(
        (&done["status"], &done["result"]["content"]),
        (&json!("completed"), &completed["result"]["content"]),
        "{done}"
    );
    assert!(done["result"]["_meta"]["io.modelcontextprotocol/related-task"].is_null());

    // Cancelling is acknowledged, and the server's task ends cancelled.
    let second = post(
        &serve,
        &call(402, tool, json!({"topic": "waves"}), with_tasks.clone()),
        &[],
    )
    .await;
    let second = second.last()["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let mut cancel = task_request(403, "tasks/cancel", json!({}), &with_tasks);
    cancel["params"]["taskId"] = json!(second);
    let cancelled = post(&serve, &cancel, &[]).await;
    assert_eq!(
        cancelled.last()["result"]["resultType"],
        "complete",
        "{}",
        cancelled.last()
    );
    let mut get = task_request(404, "tasks/get", json!({}), &with_tasks);
    get["params"]["taskId"] = json!(second);
    let state = post(&serve, &get, &[]).await;
    assert_eq!(
        state.last()["result"]["status"],
        "cancelled",
        "{}",
        state.last()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_a_session_era_server_asks_switchboard_to_run_is_answered_by_a_2026_client() {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let tool = "everything__trigger-sampling-request-async";
    let sampling = json!({"sampling": {}});
    let arguments = json!({"prompt": "hi", "maxTokens": 5});

    // The server's task-augmented sampling reaches the client as input_required, like any
    // question; its retry completes the task Switchboard holds, and the server's polling ends.
    let first = post(
        &serve,
        &call(1, tool, arguments.clone(), sampling.clone()),
        &[],
    )
    .await;
    let result = &first.last()["result"];
    assert_eq!(result["resultType"], "input_required", "{result}");
    let (key, asked) = only_question(result);
    assert_eq!(asked["method"], "sampling/createMessage");
    assert!(asked["params"]["task"].is_null(), "{asked}");
    let mut retry = call(2, tool, arguments, sampling);
    retry["params"]["requestState"] = result["requestState"].clone();
    retry["params"]["inputResponses"] = json!({
        key: {"role": "assistant", "content": {"type": "text", "text": "sampled for 2026"}, "model": "m"},
    });
    let resumed = post(&serve, &retry, &[]).await;
    let result = &resumed.last()["result"];
    assert_eq!(result["resultType"], "complete", "{}", resumed.last());
    let text = first_text(result);
    assert!(
        text.starts_with("[COMPLETED] Async sampling completed!"),
        "{text}"
    );
    assert!(text.contains("sampled for 2026"), "{text}");
}
