//! Server-everything's features, each reaching a 2026-07-28 client, the roots it asks for
//! answered along the way.

use serde_json::{Value, json};

use super::{call, only_question, post, request};
use crate::support::{ServeProcess, ServedBackend};

/// The roots server-everything is given.
fn project_roots() -> Value {
    json!({"roots": [{"uri": "file:///work/project", "name": "project"}]})
}

/// Posts `request` and, while the server's only questions are for the roots (server-everything
/// asks for them when it starts, and its question comes with whatever call is open then), answers
/// them and goes on; the completed result.
async fn settled(serve: &ServeProcess, mut request: Value) -> Value {
    for _ in 0..3 {
        let answer = post(serve, &request, &[]).await;
        let last = answer.last().clone();
        let result = &last["result"];
        let questions = result["inputRequests"].as_object();
        let only_roots = questions.is_some_and(|questions| {
            questions
                .values()
                .all(|asked| asked["method"] == "roots/list")
        });
        if result["resultType"] != "input_required" || !only_roots {
            assert_eq!(result["resultType"], "complete", "{last}");
            return result.clone();
        }
        let answers: serde_json::Map<String, Value> = questions
            .into_iter()
            .flatten()
            .map(|(key, _)| (key.clone(), project_roots()))
            .collect();
        request["params"]["requestState"] = result["requestState"].clone();
        request["params"]["inputResponses"] = Value::Object(answers);
    }
    panic!("the roots were asked for again and again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everythings_features_reach_a_2026_client() {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let all = json!({"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {}});

    let image = settled(
        &serve,
        call(1, "everything__get-tiny-image", json!({}), all.clone()),
    )
    .await;
    assert!(
        image["content"]
            .as_array()
            .expect("content")
            .iter()
            .any(|block| block["type"] == "image"),
        "{image}"
    );
    let structured = settled(
        &serve,
        call(
            2,
            "everything__get-structured-content",
            json!({"location": "New York"}),
            all.clone(),
        ),
    )
    .await;
    assert!(structured["structuredContent"].is_object(), "{structured}");
    let annotated = settled(
        &serve,
        call(
            3,
            "everything__get-annotated-message",
            json!({"messageType": "error", "includeImage": false}),
            all.clone(),
        ),
    )
    .await;
    assert!(
        annotated["content"][0]["annotations"].is_object(),
        "{annotated}"
    );
    let links = settled(
        &serve,
        call(
            4,
            "everything__get-resource-links",
            json!({"count": 2}),
            all.clone(),
        ),
    )
    .await;
    let link = links["content"]
        .as_array()
        .expect("content")
        .iter()
        .find(|block| block["type"] == "resource_link")
        .unwrap_or_else(|| panic!("a resource link in {links}"))["uri"]
        .as_str()
        .expect("a URI")
        .to_owned();
    let read = settled(
        &serve,
        request(5, "resources/read", json!({"uri": link}), all.clone()),
    )
    .await;
    assert_eq!(read["contents"][0]["uri"], link.as_str(), "{read}");
    assert_eq!(read["ttlMs"], 0, "a read carries caching hints: {read}");

    let templates = settled(
        &serve,
        request(6, "resources/templates/list", json!({}), all.clone()),
    )
    .await;
    assert!(
        !templates["resourceTemplates"]
            .as_array()
            .expect("templates")
            .is_empty()
    );
    let prompt = settled(
        &serve,
        request(
            7,
            "prompts/get",
            json!({"name": "everything__simple-prompt"}),
            all.clone(),
        ),
    )
    .await;
    assert!(
        !prompt["messages"].as_array().expect("messages").is_empty(),
        "{prompt}"
    );
    let completion = settled(&serve, request(
                8,
                "completion/complete",
                json!({"ref": {"type": "ref/prompt", "name": "everything__completable-prompt"}, "argument": {"name": "department", "value": "En"}}),
                all.clone(),
            )).await;
    assert_eq!(
        completion["completion"]["values"],
        json!(["Engineering"]),
        "{completion}"
    );

    // Sampling and roots, asked by a session-era server, come back as questions. The roots
    // server-everything asks for when it starts may come first, in a round of their own, or in
    // the same round as the sampling (see `settled`): an editor answers each round as it comes.
    let arguments = json!({"prompt": "Say hi", "maxTokens": 10});
    let mut request = call(
        9,
        "everything__trigger-sampling-request",
        arguments.clone(),
        all.clone(),
    );
    let mut sampling_asked = false;
    let mut sampled = Value::Null;
    for round in 20..24 {
        let answer = post(&serve, &request, &[]).await;
        let result = answer.last()["result"].clone();
        if result["resultType"] != "input_required" {
            sampled = result;
            break;
        }
        let mut answers = serde_json::Map::new();
        let questions = result["inputRequests"].as_object().expect("questions");
        for (key, question) in questions {
            let answer = match question["method"].as_str() {
                Some("sampling/createMessage") => {
                    sampling_asked = true;
                    json!({
                        "role": "assistant", "content": {"type": "text", "text": "hi from the model"},
                        "model": "test-model", "stopReason": "endTurn",
                    })
                }
                Some("roots/list") => project_roots(),
                _ => panic!("an unexpected question: {question}"),
            };
            answers.insert(key.clone(), answer);
        }
        request = call(
            round,
            "everything__trigger-sampling-request",
            arguments.clone(),
            all.clone(),
        );
        request["params"]["requestState"] = result["requestState"].clone();
        request["params"]["inputResponses"] = Value::Object(answers);
    }
    assert!(sampling_asked, "the server's sampling came as a question");
    assert_eq!(sampled["resultType"], "complete", "{sampled}");
    assert!(
        sampled.to_string().contains("hi from the model"),
        "{sampled}"
    );

    let asked = post(
        &serve,
        &call(11, "everything__get-roots-list", json!({}), all.clone()),
        &[],
    )
    .await;
    // server-everything asks for the roots when it starts and again from the tool while it has
    // none: when its first question is still open as the call comes, the call carries both, one
    // round after the other. An editor answers each round, as the protocol allows.
    let mut answer = asked;
    for round in 12..15 {
        let last = answer.last()["result"].clone();
        if last["resultType"] != "input_required" {
            break;
        }
        let (key, question) = only_question(&last);
        assert_eq!(question["method"], "roots/list", "{question}");
        let mut retry = call(round, "everything__get-roots-list", json!({}), all.clone());
        retry["params"]["requestState"] = last["requestState"].clone();
        retry["params"]["inputResponses"] = json!({ key: project_roots() });
        answer = post(&serve, &retry, &[]).await;
    }
    let rooted = answer.last()["result"].clone();
    assert_eq!(rooted["resultType"], "complete", "{rooted}");
    assert!(
        rooted.to_string().contains("file:///work/project"),
        "{rooted}"
    );
}
