//! Tasks: routed by their ids alone, polled to their end for an editor of the session era, and
//! the tasks a server asks Switchboard to run.

use crate::support::*;
use hub::Inbound;
use serde_json::json;
use wire::method::Method;

use super::{
    accept, editor_asks, hub, initialized, listed_tools, next_message, ready, request, start_call,
};

#[tokio::test]
async fn tasks_route_by_their_ids_alone() {
    let hub = hub(vec![everything("everything")]);
    ready(&hub, "everything").await;
    let (session, _) = initialized(&hub, json!({})).await;
    let started = request(
        &session,
        json!(1),
        "tools/call",
        json!({"name": "everything__simulate-research-query", "arguments": {"topic": "tides"}, "task": {"ttl": 60000}}),
    )
    .await;
    let task_id = started["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task was created: {started}"))
        .to_owned();
    assert!(
        task_id.starts_with("sb1.everything."),
        "the id names its backend: {task_id}"
    );

    let listed = request(&session, json!(2), "tasks/list", json!({})).await;
    let ids: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("a list: {listed}"))
        .iter()
        .filter_map(|task| task["taskId"].as_str())
        .collect();
    assert!(ids.contains(&task_id.as_str()), "{listed}");

    eventually("the task completes", EVENT_LIMIT, || async {
        let task = request(&session, json!(3), "tasks/get", json!({"taskId": task_id})).await;
        match task["result"]["status"].as_str() {
            Some("completed") => Ok(task),
            _ => Err(task),
        }
    })
    .await;
    let result = request(
        &session,
        json!(4),
        "tasks/result",
        json!({"taskId": task_id}),
    )
    .await;
    assert!(
        result["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("tides")),
        "{result}"
    );
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        json!(task_id),
        "ids in results are exposed too"
    );

    // A second task is cancelled through its exposed id.
    let second = request(
        &session,
        json!(5),
        "tools/call",
        json!({"name": "everything__simulate-research-query", "arguments": {"topic": "waves"}, "task": {"ttl": 60000}}),
    )
    .await;
    let second_id = second["result"]["task"]["taskId"]
        .as_str()
        .expect("a task id");
    let cancelled = request(
        &session,
        json!(6),
        "tasks/cancel",
        json!({"taskId": second_id}),
    )
    .await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["result"]["taskId"], second_id);

    // Ids Switchboard did not make get clear errors.
    let forged = request(
        &session,
        json!(7),
        "tasks/get",
        json!({"taskId": "made-up"}),
    )
    .await;
    assert_eq!(forged["error"]["code"], -32602, "{forged}");
    let elsewhere = request(
        &session,
        json!(8),
        "tasks/get",
        json!({"taskId": "sb1.nobody.1"}),
    )
    .await;
    assert_eq!(elsewhere["error"]["code"], -32602, "{elsewhere}");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_tool_that_runs_only_as_a_task_answers_an_editor_that_holds_no_task() {
    let hub = hub(vec![everything("everything")]);
    ready(&hub, "everything").await;
    let (editor, _) = initialized(&hub, json!({"elicitation": {}})).await;
    // No `task` in the call: Switchboard makes the task and waits for its result. The server's
    // question, asked during the task, reaches the editor as a request of the call.
    let (asked, mut rest) = start_call(
        &editor,
        1,
        "everything__simulate-research-query",
        json!({"topic": "python", "ambiguous": true}),
    )
    .await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert!(
        asked["params"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("python")),
        "{asked}"
    );
    accept(&editor, &asked, json!({"interpretation": "snake"}));
    let result = next_message(&mut rest).await;
    assert_eq!(result["id"], 1, "{result}");
    let report = first_text(&result["result"]);
    assert!(
        report.contains("# Research Report: python (snake)"),
        "the answer reached the task: {report}"
    );
    assert!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"].is_null(),
        "the editor never saw the task, so the result does not name it: {result}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_modern_servers_task_is_polled_to_its_end_for_an_editor_of_the_session_era() {
    let hub = hub(vec![editor_asks(tasks_server("tasks"))]);
    ready(&hub, "tasks").await;
    let (editor, _) = initialized(&hub, json!({"elicitation": {}})).await;
    // The server makes a task, as the call now declares the extension; the task needs input,
    // which reaches the editor as a request, and its result is the call's answer.
    let (asked, mut rest) = start_call(&editor, 1, "tasks__report", json!({"title": "Q4"})).await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["message"], "Approve report Q4?");
    accept(&editor, &asked, json!({"name": "Ada"}));
    let result = next_message(&mut rest).await;
    assert_eq!(result["id"], 1, "{result}");
    assert_eq!(first_text(&result["result"]), "report Q4 approved by Ada");

    // An editor that cannot be asked gets a clear error, and the task is cancelled.
    let (mute, _) = initialized(&hub, json!({})).await;
    let answer = request(
        &mute,
        json!(2),
        "tools/call",
        json!({"name": "tasks__report", "arguments": {"title": "Q1"}}),
    )
    .await;
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("form elicitation")),
        "{answer}"
    );
    let backend = hub.engine().backend("tasks").expect("configured");
    let params = serde_json::value::to_raw_value(&json!({"taskId": "task-2"})).expect("JSON");
    eventually("the abandoned task is cancelled", EVENT_LIMIT, || async {
        let state = backend
            .request(&Method::TasksGet, Some(&params))
            .await
            .map(|state| json(&state));
        match &state {
            Ok(state) if state["status"] == "cancelled" => Ok(()),
            _ => Err(format!("{state:?}")),
        }
    })
    .await;
    hub.shutdown().await;
}

#[tokio::test]
async fn a_polled_tasks_result_reaches_the_editor_as_the_server_wrote_it() {
    let hub = hub(vec![tasks_server("tasks")]);
    ready(&hub, "tasks").await;
    let (editor, _) = initialized(&hub, json!({"elicitation": {}})).await;
    let arguments = json!({"title": "Q2", "figures": true});
    let (asked, mut rest) = start_call(&editor, 1, "tasks__report", arguments).await;
    accept(&editor, &asked, json!({"name": "Ada"}));
    let answer = tokio::time::timeout(EVENT_LIMIT, rest.recv())
        .await
        .expect("in time")
        .expect("the answer");
    let answer = String::from_utf8(answer.to_json()).expect("UTF-8");
    // `1.50` read as a number is `1.5`, and no double holds `1e400`: only the server's bytes
    // carry them.
    assert!(
        answer.contains(r#""structuredContent": {"total": 1.50, "huge": 1e400}"#),
        "{answer}"
    );
    assert!(answer.contains("report Q2 approved by Ada"), "{answer}");
    hub.shutdown().await;
}

#[tokio::test]
async fn switchboard_holds_the_tasks_a_server_asks_it_to_run_and_the_editor_answers_them() {
    let hub = hub(vec![everything("everything")]);
    ready(&hub, "everything").await;
    let (editor, _) = initialized(&hub, json!({"sampling": {}, "elicitation": {}})).await;
    let tools = listed_tools(&request(&editor, json!(1), "tools/list", json!({})).await);
    assert!(
        tools.contains(&"everything__trigger-sampling-request-async".to_owned()),
        "the server offers its task tools, as Switchboard declares tasks: {tools:?}"
    );

    // The server sends sampling with a task; Switchboard answers the handle, asks the editor,
    // and the server polls until the editor's answer is the task's result.
    let (asked, mut rest) = start_call(
        &editor,
        2,
        "everything__trigger-sampling-request-async",
        json!({"prompt": "hi", "maxTokens": 5}),
    )
    .await;
    assert_eq!(asked["method"], "sampling/createMessage", "{asked}");
    assert!(
        asked["params"]["task"].is_null(),
        "the editor is not asked to hold a task: {asked}"
    );
    let sampled = json!({
        "jsonrpc": "2.0", "id": asked["id"],
        "result": {"role": "assistant", "content": {"type": "text", "text": "a sampled answer"}, "model": "m"},
    });
    assert!(matches!(
        editor.receive(sampled.to_string().as_bytes()),
        Inbound::Accepted
    ));
    let result = next_message(&mut rest).await;
    let text = first_text(&result["result"]);
    assert!(
        text.starts_with("[COMPLETED] Async sampling completed!"),
        "{text}"
    );
    assert!(
        text.contains("a sampled answer"),
        "the editor's answer is the result: {text}"
    );
    assert!(text.contains("Task created"), "{text}");

    // The same with elicitation, and an editor that declines.
    let (asked, mut rest) = start_call(
        &editor,
        3,
        "everything__trigger-elicitation-request-async",
        json!({}),
    )
    .await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let declined = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}});
    drop(editor.receive(declined.to_string().as_bytes()));
    let result = next_message(&mut rest).await;
    let text = result["result"]["content"].to_string();
    assert!(text.contains("[DECLINED]"), "{text}");
    assert!(
        !text.contains("[SYNC]"),
        "a task, not an answer at once: {text}"
    );

    // An editor that cannot sample: the server learns at once, and no task is made.
    let (mute, _) = initialized(&hub, json!({})).await;
    let answer = request(
        &mute,
        json!(4),
        "tools/call",
        json!({"name": "everything__trigger-sampling-request-async", "arguments": {"prompt": "x"}}),
    )
    .await;
    assert!(
        answer.to_string().contains("does not support sampling"),
        "the server reports the refusal: {answer}"
    );
    hub.shutdown().await;
}
