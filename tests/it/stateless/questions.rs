//! Multi-round-trip requests: a server's question becomes `input_required`, and the retry
//! that carries the answer resumes the call (or runs it again).

use serde_json::{Value, json};

use super::{call, only_question, post};
use crate::support::{EVENT_LIMIT, McpHttp, ServeProcess, ServedBackend, eventually, first_text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_question_becomes_input_required_and_the_retry_resumes_the_same_call() {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let tool = "everything__trigger-elicitation-request";
    let form = json!({"elicitation": {"form": {}}});

    let first = post(&serve, &call(1, tool, json!({}), form.clone()), &[]).await;
    assert_eq!(first.status, 200);
    let result = &first.last()["result"];
    assert_eq!(result["resultType"], "input_required", "{result}");
    let requests = result["inputRequests"].as_object().expect("input requests");
    assert_eq!(requests.len(), 1);
    let (key, asked) = requests.iter().next().expect("one request");
    assert_eq!(asked["method"], "elicitation/create");
    assert!(asked["params"]["requestedSchema"]["properties"]["name"].is_object());
    let state = result["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned();

    let mut retry = call(2, tool, json!({}), form.clone());
    retry["params"]["requestState"] = json!(state);
    retry["params"]["inputResponses"] = json!({
        key: {"action": "accept", "content": {"name": "Ada Lovelace", "check": true}},
    });
    let resumed = post(&serve, &retry, &[]).await;
    assert_eq!(resumed.status, 200);
    assert_eq!(resumed.last()["id"], 2);
    let result = &resumed.last()["result"];
    assert_eq!(result["resultType"], "complete");
    assert!(result.to_string().contains("Ada Lovelace"), "{result}");

    let replayed = post(&serve, &retry, &[]).await;
    let error = &replayed.last()["error"];
    assert_eq!((replayed.status, &error["code"]), (400, &json!(-32602)));
    assert!(
        error["message"]
            .as_str()
            .expect("message")
            .contains("already used"),
        "{error}"
    );

    let other = post(&serve, &call(3, tool, json!({}), form.clone()), &[]).await;
    let state = other.last()["result"]["requestState"]
        .as_str()
        .expect("a second call parks too")
        .to_owned();
    let mut elsewhere = call(4, "everything__echo", json!({"message": "x"}), form.clone());
    elsewhere["params"]["requestState"] = json!(state);
    let answer = post(&serve, &elsewhere, &[]).await;
    assert!(
        answer.last()["error"]["message"]
            .as_str()
            .expect("message")
            .contains("another request"),
        "{}",
        answer.last()
    );
    // An answer to a question not asked (the first call's key) leaves the question open: it
    // is asked again, under a new state.
    let mut unanswered = call(5, tool, json!({}), form.clone());
    unanswered["params"]["requestState"] = json!(state);
    unanswered["params"]["inputResponses"] = json!({ key: {"action": "decline"} });
    let answer = post(&serve, &unanswered, &[]).await;
    let result = &answer.last()["result"];
    assert_eq!(result["resultType"], "input_required", "{result}");
    let (open_key, _) = result["inputRequests"]
        .as_object()
        .expect("input requests")
        .iter()
        .next()
        .expect("the question again");
    let mut declined = call(6, tool, json!({}), form.clone());
    declined["params"]["requestState"] = result["requestState"].clone();
    declined["params"]["inputResponses"] = json!({ open_key: {"action": "decline"} });
    let answer = post(&serve, &declined, &[]).await;
    assert_eq!(
        answer.last()["result"]["resultType"],
        "complete",
        "{}",
        answer.last()
    );

    // An editor that declared no elicitation: the person answers through Switchboard instead
    // (`ask = "auto"`), and the same call ends with what they said.
    let body = call(7, tool, json!({}), json!({}));
    let undeclared = post(&serve, &body, &[]);
    let person = async {
        let asked = eventually("the question for the person", EVENT_LIMIT, || async {
            let list = serve.api_get("/api/questions").await;
            match list[0]["id"].as_u64() {
                Some(id) => Ok(id),
                None => Err(list),
            }
        })
        .await;
        let answer = json!({"action": "accept", "content": {"name": "Grace Hopper"}});
        let (status, _) = serve
            .api_post_body(&format!("/api/questions/{asked}"), &answer.to_string())
            .await;
        assert_eq!(status, 200);
    };
    let (undeclared, ()) = tokio::join!(undeclared, person);
    let said = undeclared.last().to_string();
    assert!(said.contains("Name: Grace Hopper"), "{said}");

    let answer = post(
        &serve,
        &call(
            8,
            "everything__echo",
            json!({"message": "still here"}),
            json!({}),
        ),
        &[],
    )
    .await;
    assert_eq!(
        answer.last()["result"]["content"][0]["text"],
        "Echo: still here"
    );
}

/// The arguments of misbehave's `ask` that ask for a name with `message` (form elicitation).
fn name_question(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
    }})
}

/// A call of misbehave's `ask` that asks for a name with `message`, by a 2026-07-28 editor that
/// can answer it.
fn asking_for_a_name(id: u64, message: &str) -> Value {
    let form = json!({"elicitation": {"form": {}}});
    call(id, "mis__ask", name_question(message), form)
}

/// The `input_required` result `request` is answered with.
async fn parked(serve: &ServeProcess, request: &Value) -> Value {
    let answer = post(serve, request, &[]).await;
    let result = answer.last()["result"].clone();
    assert_eq!(result["resultType"], "input_required", "{result}");
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_call_its_editor_walked_away_from_leaves_the_next_question_to_its_own_editor() {
    let serve = ServeProcess::start(&[ServedBackend::Misbehave]);

    // A 2026-07-28 editor's call asks; the editor is told, and never comes back.
    parked(&serve, &asking_for_a_name(1, "Who walked away?")).await;

    // The backend asks again during a session-era editor's call: that editor is the one asked.
    let mcp = McpHttp::new(&serve.url());
    let session = mcp
        .open_session_declaring("session-editor", json!({"elicitation": {}}))
        .await
        .expect("a session");
    let asking = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "mis__ask", "arguments": name_question("Who stayed?"),
    }});
    let mut reply = mcp
        .post_streamed(&session, &asking)
        .await
        .expect("a stream");
    let accepted = json!({"action": "accept", "content": {"name": "Ada"}});
    let (asked, done) = mcp
        .answer_on(&session, &mut reply, "elicitation/create", accepted)
        .await
        .expect("a question, then the answer");
    assert_eq!(asked["params"]["message"], "Who stayed?", "{asked}");
    assert_eq!(done["id"], 2, "{done}");
    let relayed: Value = serde_json::from_str(&first_text(&done["result"])).expect("JSON text");
    assert_eq!(relayed["content"]["name"], "Ada", "{done}");

    // So does another 2026-07-28 editor's call: its question comes back as its own.
    let mut retry = asking_for_a_name(3, "Who else?");
    let result = parked(&serve, &retry).await;
    let (key, asked) = only_question(&result);
    assert_eq!(asked["params"]["message"], "Who else?", "{result}");
    retry["id"] = json!(4);
    retry["params"]["requestState"] = result["requestState"].clone();
    retry["params"]["inputResponses"] =
        json!({ key: {"action": "accept", "content": {"name": "Grace"}} });
    let resumed = post(&serve, &retry, &[]).await;
    let text = first_text(&resumed.last()["result"]);
    let relayed: Value = serde_json::from_str(&text).expect("JSON text");
    assert_eq!(relayed["content"]["name"], "Grace", "{}", resumed.last());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_servers_own_input_required_passes_through_with_its_state() {
    let serve = ServeProcess::start(&[ServedBackend::SdkModernOnly, ServedBackend::Everything]);
    let form = json!({"elicitation": {"form": {}}});
    let arguments = json!({"action": "deploy"});

    let first = post(
        &serve,
        &call(1, "modern__confirm", arguments.clone(), form.clone()),
        &[],
    )
    .await;
    let result = &first.last()["result"];
    assert_eq!(result["resultType"], "input_required", "{result}");
    assert_eq!(
        result["requestState"], "asked:deploy",
        "the server's state, untouched"
    );
    assert_eq!(
        result["inputRequests"]["ok"]["method"],
        "elicitation/create"
    );

    let mut retry = call(2, "modern__confirm", arguments, form.clone());
    retry["params"]["requestState"] = json!("asked:deploy");
    retry["params"]["inputResponses"] =
        json!({"ok": {"action": "accept", "content": {"ok": true}}});
    let done = post(&serve, &retry, &[]).await;
    let result = &done.last()["result"];
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(
        result["content"][0]["text"],
        "confirmed deploy (state asked:deploy)"
    );

    let mut foreign = call(3, "everything__echo", json!({"message": "x"}), json!({}));
    foreign["params"]["requestState"] = json!("asked:deploy");
    let answer = post(&serve, &foreign, &[]).await;
    assert!(
        answer.last()["error"]["message"]
            .as_str()
            .expect("message")
            .contains("not one Switchboard issued"),
        "a session-era server has no state of its own to take back: {}",
        answer.last()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_elicitation_required_becomes_input_required_and_the_retry_runs_the_call_again() {
    // Only the editor asks: a question it cannot take is refused at once rather than put to a
    // person on the dashboard until the server's request timeout (questions.rs tests that).
    let config = format!(
        "{}ask = \"editor\"\n",
        ServedBackend::Everything.config_entry()
    );
    let serve = ServeProcess::with_config(&config, &["everything"]);
    let tool = "everything__trigger-url-elicitation";
    let url = json!({"elicitation": {"form": {}, "url": {}}});
    let arguments = json!({"url": "https://example.com/sign-in", "errorPath": true});

    let first = post(&serve, &call(1, tool, arguments.clone(), url.clone()), &[]).await;
    let result = &first.last()["result"];
    assert_eq!(result["resultType"], "input_required", "{}", first.last());
    let (key, asked) = result["inputRequests"]
        .as_object()
        .expect("input requests")
        .iter()
        .next()
        .expect("one");
    assert_eq!(asked["method"], "elicitation/create");
    assert_eq!(asked["params"]["mode"], "url");
    assert!(asked["params"]["url"].is_string(), "{asked}");
    assert!(asked["params"]["elicitationId"].is_string(), "{asked}");

    // The retry runs the call again; the server now asks on the request path, which parks it.
    let mut retry = call(2, tool, arguments.clone(), url.clone());
    retry["params"]["requestState"] = result["requestState"].clone();
    retry["params"]["inputResponses"] = json!({ key: {"action": "accept"} });
    let second = post(&serve, &retry, &[]).await;
    let result = &second.last()["result"];
    assert_eq!(result["resultType"], "input_required", "{}", second.last());
    let (key, asked) = result["inputRequests"]
        .as_object()
        .expect("input requests")
        .iter()
        .next()
        .expect("one");
    assert_eq!(asked["params"]["mode"], "url");
    assert_eq!(asked["params"]["url"], "https://example.com/sign-in");
    let mut last = call(3, tool, arguments.clone(), url.clone());
    last["params"]["requestState"] = result["requestState"].clone();
    last["params"]["inputResponses"] = json!({ key: {"action": "accept"} });
    let done = post(&serve, &last, &[]).await;
    assert_eq!(
        done.last()["result"]["resultType"],
        "complete",
        "{}",
        done.last()
    );
    assert_ne!(done.last()["result"]["isError"], true, "{}", done.last());

    let form_only = json!({"elicitation": {"form": {}}});
    let refused = post(&serve, &call(4, tool, arguments, form_only), &[]).await;
    let error = &refused.last()["error"];
    assert_eq!(
        (refused.status, &error["code"]),
        (400, &json!(-32021)),
        "{error}"
    );
    assert!(error["data"]["requiredCapabilities"]["elicitation"]["url"].is_object());
}
