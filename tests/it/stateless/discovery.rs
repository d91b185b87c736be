//! Discovery and calls without a session, and the header and envelope rules with the codes
//! and statuses of their errors.

use serde_json::json;

use super::{VERSION, call, post, request, status_code_id};
use crate::support::{ServeProcess, ServedBackend};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_discovers_lists_and_calls_without_a_session() {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);

    let discover = post(
        &serve,
        &request(1, "server/discover", json!({}), json!({})),
        &[],
    )
    .await;
    assert_eq!(discover.status, 200);
    assert_eq!(discover.session, None, "no session in 2026-07-28");
    let result = &discover.last()["result"];
    assert_eq!(result["supportedVersions"][0], VERSION);
    assert!(
        result["supportedVersions"]
            .as_array()
            .expect("versions")
            .contains(&json!("2025-11-25"))
    );
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["ttlMs"], 0);
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "switchboard"
    );
    assert!(result["capabilities"]["tools"].is_object());
    assert!(
        result["instructions"]
            .as_str()
            .expect("instructions")
            .contains("## everything"),
        "{result}"
    );

    let tools = post(&serve, &request(2, "tools/list", json!({}), json!({})), &[]).await;
    let result = &tools.last()["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["cacheScope"], "private");
    let names: Vec<&str> = result["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(names.contains(&"everything__echo"), "{names:?}");

    let echo = post(
        &serve,
        &call(3, "everything__echo", json!({"message": "hi"}), json!({})),
        &[],
    )
    .await;
    assert_eq!(echo.status, 200);
    let result = &echo.last()["result"];
    assert_eq!(echo.last()["id"], 3);
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["content"][0]["text"], "Echo: hi");
    assert!(
        result.get("ttlMs").is_none(),
        "a call's result is not cached"
    );

    let missing = post(
        &serve,
        &request(
            4,
            "resources/read",
            json!({"uri": "demo://resource/static/document/nothing.md"}),
            json!({}),
        ),
        &[],
    )
    .await;
    let error = &missing.last()["error"];
    assert_ne!(error["code"], -32002, "-32002 is not sent in 2026-07-28");
    assert_eq!(error["code"], -32602, "{error}");

    let ping = post(&serve, &request(5, "ping", json!({}), json!({})), &[]).await;
    assert_eq!(ping.status, 404);
    assert_eq!(ping.last()["error"]["code"], -32601);

    let get = serve
        .client()
        .get(serve.url())
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .send()
        .await
        .expect("GET");
    assert_eq!(get.status().as_u16(), 405);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_envelopes_and_mismatched_headers_get_their_codes_and_ids_and_nothing_breaks() {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let echo = call(1, "everything__echo", json!({"message": "x"}), json!({}));

    let mut no_capabilities = echo.clone();
    no_capabilities["params"]["_meta"]
        .as_object_mut()
        .expect("meta")
        .remove("io.modelcontextprotocol/clientCapabilities");
    let answer = post(&serve, &no_capabilities, &[]).await;
    assert_eq!(status_code_id(&answer), (400, json!(-32602), json!(1)));

    let mut unknown_version = echo.clone();
    unknown_version["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] =
        json!("2099-01-01");
    let answer = post(
        &serve,
        &unknown_version,
        &[("mcp-protocol-version", "2099-01-01")],
    )
    .await;
    let error = &answer.last()["error"];
    assert_eq!(status_code_id(&answer), (400, json!(-32022), json!(1)));
    assert_eq!(error["data"]["requested"], "2099-01-01");
    assert_eq!(error["data"]["supported"][0], VERSION);
    // A header that contradicts the body is a mismatch, whatever version the body names.
    let answer = post(&serve, &unknown_version, &[]).await;
    let error = &answer.last()["error"];
    assert_eq!((answer.status, &error["code"]), (400, &json!(-32020)));
    assert!(
        error["message"]
            .as_str()
            .expect("message")
            .contains("MCP-Protocol-Version"),
        "{error}"
    );

    let answer = post(&serve, &echo, &[("mcp-protocol-version", "1999-01-01")]).await;
    assert_eq!(status_code_id(&answer), (400, json!(-32022), json!(1)));

    let answer = post(&serve, &echo, &[("mcp-name", "everything__other")]).await;
    let error = &answer.last()["error"];
    assert_eq!(status_code_id(&answer), (400, json!(-32020), json!(1)));
    assert!(
        error["message"]
            .as_str()
            .expect("message")
            .contains("Mcp-Name")
    );

    let answer = post(&serve, &echo, &[("mcp-method", "")]).await;
    assert_eq!(status_code_id(&answer), (400, json!(-32020), json!(1)));

    let answer = post(&serve, &echo, &[("mcp-protocol-version", "2025-11-25")]).await;
    assert_eq!(status_code_id(&answer), (400, json!(-32020), json!(1)));

    let answer = post(&serve, &echo, &[("mcp-protocol-version", "")]).await;
    assert_eq!(status_code_id(&answer), (400, json!(-32020), json!(1)));

    let batch = json!([echo.clone()]);
    let answer = post(&serve, &batch, &[]).await;
    assert_eq!(
        (answer.status, &answer.last()["error"]["code"]),
        (400, &json!(-32600))
    );

    let mut forged = echo.clone();
    forged["params"]["requestState"] = json!("sb1.eyJjIjoieCJ9.AAAA");
    let answer = post(&serve, &forged, &[]).await;
    let error = &answer.last()["error"];
    assert_eq!(status_code_id(&answer), (400, json!(-32602), json!(1)));
    assert!(
        error["message"]
            .as_str()
            .expect("message")
            .contains("does not verify"),
        "{error}"
    );

    let answer = post(&serve, &echo, &[]).await;
    assert_eq!(answer.last()["result"]["content"][0]["text"], "Echo: x");
}
