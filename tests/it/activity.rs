//! The activity log: calls from an official SDK client and raw HTTP through a real serve, read
//! back from its database over `/api/activity`, with every way a call can end, payloads kept and
//! redacted, filters, paging, figures, exports, live events, bad queries, and a log that is
//! corrupt, locked or over its size.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use serde_json::{Value, json};

use crate::api::events;
use crate::sdk_clients::run_python_client;
use crate::support::*;

/// The value of an environment variable of the demo server: a secret the log never stores.
const SECRET: &str = "sk-activity-secret-4242";

fn config(activity: &str) -> String {
    format!(
        "[servers.demo]\ncommand = {exe:?}\nargs = [\"demo-server\"]\nrequest_timeout = \"1s\"\n\
         env = {{ DEMO_API_KEY = {SECRET:?} }}\n\n\
         [servers.everything]\ncommand = {everything:?}\nargs = [\"stdio\"]\n\n{activity}",
        exe = switchboard_exe().to_string_lossy(),
        everything = everything_server().to_string_lossy(),
    )
}

/// The log's records for `query` (`/api/activity?…`) once there are at least `count`.
async fn records(serve: &ServeProcess, query: &str, count: usize) -> Vec<Value> {
    eventually(
        &format!("{count} records for {query:?}"),
        EVENT_LIMIT,
        || async {
            let page = serve.api_get(&format!("/api/activity{query}")).await;
            let records = page["records"].as_array().cloned().unwrap_or_default();
            match records.len() >= count {
                true => Ok(records),
                false => Err(page),
            }
        },
    )
    .await
}

/// The record whose exposed name is `name`; panics naming what there is.
fn named<'a>(records: &'a [Value], name: &str) -> &'a Value {
    records
        .iter()
        .find(|record| record["name"] == name)
        .unwrap_or_else(|| panic!("no record of {name}: {records:#?}"))
}

async fn get_status(serve: &ServeProcess, path: &str) -> (u16, String) {
    let response = serve
        .client()
        .get(serve.http_url(path))
        .bearer_auth(SERVE_TOKEN)
        .send()
        .await
        .expect("the API answers");
    let status = response.status().as_u16();
    (status, response.text().await.expect("a body"))
}

#[tokio::test(flavor = "multi_thread")]
async fn every_call_is_recorded_with_who_made_it_and_how_it_ended() {
    let serve = ServeOptions::new(&config("[activity]\npayloads = true\n"))
        .ready(&["demo", "everything"])
        .start();
    let mut live = events(&serve, SERVE_TOKEN).await;

    // The official Python SDK, 2026-07-28 era: a tool, a prompt, a completion, a resource.
    let url = serve.url();
    let transcript = tokio::task::spawn_blocking(move || {
        run_python_client(
            "auto",
            &[
                "--url",
                &url,
                "--steps",
                "call:everything__echo,prompt:everything__simple-prompt,\
                 complete:everything__completable-prompt:department:En,\
                 read:demo://resource/static/document/architecture.md",
                "--tool-args",
                r#"everything__echo={"message":"from the sdk"}"#,
            ],
            &[],
        )
    })
    .await
    .expect("the client ran");
    assert_eq!(transcript["error"], Value::Null, "{transcript}");

    // A session-era editor over raw HTTP: a tool error, an unknown tool, a timeout, the
    // secret in an argument, a huge argument, and a call it walks away from.
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp.open_session("raw-editor").await.expect("a session");
    let failed = mcp
        .call_tool(&session, 1, "demo__fail", json!({ "message": "no luck" }))
        .await;
    assert_eq!(failed["isError"], true, "{failed}");
    let unknown = mcp
        .post(
            Some(&session),
            json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": { "name": "demo__nothing", "arguments": {} } })
            .to_string(),
        )
        .await
        .expect("an answer");
    assert!(unknown.body.contains("\"error\""), "{}", unknown.body);
    let slow = mcp
        .post(
            Some(&session),
            json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": { "name": "demo__sleep", "arguments": { "ms": 5000 } } })
            .to_string(),
        )
        .await
        .expect("an answer");
    assert!(slow.body.contains("\"error\""), "{}", slow.body);
    let echoed = mcp
        .call_tool(
            &session,
            4,
            "demo__echo",
            json!({ "text": format!("key={SECRET}") }),
        )
        .await;
    assert_eq!(first_text(&echoed), format!("key={SECRET}"));
    let huge = "x".repeat(200_000);
    let echoed = mcp
        .call_tool(&session, 5, "demo__echo", json!({ "text": huge }))
        .await;
    assert_eq!(first_text(&echoed).len(), 200_000);
    let walked_away = tokio::time::timeout(
        Duration::from_millis(300),
        mcp.post(
            Some(&session),
            json!({ "jsonrpc": "2.0", "id": 6, "method": "tools/call",
                    "params": { "name": "demo__sleep", "arguments": { "ms": 800 } } })
            .to_string(),
        ),
    )
    .await;
    assert!(walked_away.is_err(), "the sleep answered within 300 ms");

    let all = records(&serve, "?limit=1000", 10).await;
    // Newest first, ids falling.
    let ids: Vec<i64> = all
        .iter()
        .map(|record| record["id"].as_i64().unwrap())
        .collect();
    assert!(ids.windows(2).all(|pair| pair[0] > pair[1]), "{ids:?}");

    let sdk_echo = named(&all, "everything__echo");
    assert_eq!(sdk_echo["client"], "switchboard-test-py-client");
    assert_eq!(sdk_echo["server"], "everything");
    assert_eq!(sdk_echo["original"], "echo");
    assert_eq!(sdk_echo["method"], "tools/call");
    assert_eq!(sdk_echo["outcome"], "result");
    assert_eq!(sdk_echo["profile"], "default");
    assert_eq!(sdk_echo["arguments"], r#"{"message":"from the sdk"}"#);
    assert!(
        sdk_echo["result"]
            .as_str()
            .unwrap()
            .contains("from the sdk"),
        "{sdk_echo}"
    );
    assert!(sdk_echo["request_bytes"].as_u64().unwrap() > 0);
    assert!(sdk_echo["response_bytes"].as_u64().unwrap() > 0);
    let prompt = named(&all, "everything__simple-prompt");
    assert_eq!(prompt["method"], "prompts/get");
    assert_eq!(prompt["outcome"], "result");
    let read = named(&all, "demo://resource/static/document/architecture.md");
    assert_eq!(read["method"], "resources/read");
    assert_eq!(read["server"], "everything");
    assert!(
        all.iter()
            .any(|record| record["method"] == "completion/complete"
                && record["server"] == "everything"
                && record["outcome"] == "result"),
        "{all:#?}"
    );

    let raw: Vec<&Value> = all
        .iter()
        .filter(|record| record["client"] == "raw-editor")
        .collect();
    assert!(
        raw.iter()
            .all(|record| record["session"] == session.as_str())
    );
    let fail = named(&all, "demo__fail");
    assert_eq!(fail["outcome"], "tool_error");
    let nothing = named(&all, "demo__nothing");
    assert_eq!(nothing["outcome"], "error");
    assert_eq!(nothing["server"], Value::Null);
    assert!(nothing["error_code"].is_i64(), "{nothing}");
    assert!(
        nothing["error"].as_str().unwrap().contains("demo__nothing"),
        "{nothing}"
    );
    let sleeps: Vec<&Value> = all
        .iter()
        .filter(|record| record["name"] == "demo__sleep")
        .collect();
    assert_eq!(sleeps.len(), 2, "{sleeps:#?}");
    let outcomes: Vec<&str> = sleeps
        .iter()
        .map(|record| record["outcome"].as_str().unwrap())
        .collect();
    assert!(outcomes.contains(&"timeout"), "{outcomes:?}");
    assert!(outcomes.contains(&"cancelled"), "{outcomes:?}");
    let timed_out = sleeps
        .iter()
        .find(|record| record["outcome"] == "timeout")
        .unwrap();
    assert!(timed_out["duration_us"].as_u64().unwrap() >= 1_000_000);

    let echoes: Vec<&Value> = all
        .iter()
        .filter(|record| record["name"] == "demo__echo")
        .collect();
    let huge_record = echoes
        .iter()
        .find(|record| record["request_bytes"].as_u64().unwrap() > 200_000)
        .expect("the huge call");
    let kept = huge_record["arguments"].as_str().unwrap();
    assert!(kept.len() < 70_000, "{} bytes kept", kept.len());
    assert!(
        kept.ends_with("bytes in all]"),
        "{}",
        &kept[kept.len() - 40..]
    );
    assert!(huge_record["result"].as_str().unwrap().len() < 70_000);
    let secret_record = echoes
        .iter()
        .find(|record| record["arguments"].as_str().unwrap().contains("key="))
        .expect("the call with the secret");
    assert_eq!(secret_record["arguments"], r#"{"text":"key=[redacted]"}"#);
    assert!(!secret_record["result"].as_str().unwrap().contains(SECRET));
    let file = std::fs::read(serve.dir().join("data/activity.db")).expect("the database");
    assert!(
        !file
            .windows(SECRET.len())
            .any(|window| window == SECRET.as_bytes()),
        "the secret is in the database file"
    );
    let mode = std::fs::metadata(serve.dir().join("data/activity.db"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");

    // The live feed carried the records too.
    let (_, live_record) = loop {
        let (name, data) = live.next().await;
        if name == "activity" && data["name"] == "demo__fail" {
            break (name, data);
        }
    };
    assert_eq!(live_record["outcome"], "tool_error");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_log_filters_pages_sums_up_and_exports() {
    let serve = ServeOptions::new(&config(""))
        .ready(&["demo", "everything"])
        .start();
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let first = mcp.open_session("first-editor").await.expect("a session");
    let second = mcp.open_session("second-editor").await.expect("a session");
    for id in 0..30 {
        mcp.call_tool(&first, id, "demo__add", json!({ "a": id, "b": 1 }))
            .await;
    }
    for id in 0..5 {
        mcp.call_tool(&second, id, "demo__fail", json!({ "message": "no" }))
            .await;
    }
    mcp.call_tool(&second, 9, "everything__echo", json!({ "message": "hi" }))
        .await;
    records(&serve, "?limit=1000", 36).await;

    // Payloads are off unless asked for.
    let all = records(&serve, "?limit=1000", 36).await;
    assert!(all.iter().all(|record| record["arguments"].is_null()));

    let by_client = records(&serve, "?client=second-editor", 6).await;
    assert_eq!(by_client.len(), 6);
    let by_server = records(&serve, "?server=everything", 1).await;
    assert_eq!(by_server.len(), 1);
    let by_outcome = records(&serve, "?outcome=tool_error", 5).await;
    assert_eq!(by_outcome.len(), 5);
    let by_tool = records(&serve, "?tool=demo__add", 30).await;
    assert_eq!(by_tool.len(), 30);
    let newest = all[0]["at_ms"].as_u64().unwrap();
    let future = records(&serve, &format!("?since={}", newest + 60_000), 0).await;
    assert!(future.is_empty(), "{future:#?}");

    // Pages of 10 walk the 30 additions without overlap.
    let mut seen = Vec::new();
    let mut before = String::new();
    loop {
        let page = serve
            .api_get(&format!("/api/activity?tool=demo__add&limit=10{before}"))
            .await;
        let ids: Vec<i64> = page["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|record| record["id"].as_i64().unwrap())
            .collect();
        seen.extend(ids);
        match page["next_before"].as_i64() {
            Some(next) => before = format!("&before={next}"),
            None => break,
        }
    }
    seen.dedup();
    assert_eq!(seen.len(), 30, "{seen:?}");

    let stats = serve.api_get("/api/activity/stats").await;
    let tools = stats["tools"].as_array().unwrap();
    let figures = |name: &str| {
        tools
            .iter()
            .find(|tool| tool["name"] == name)
            .unwrap_or_else(|| panic!("no figures of {name}: {stats}"))
            .clone()
    };
    let add = figures("demo__add");
    assert_eq!(
        (add["calls"].as_u64(), add["errors"].as_u64()),
        (Some(30), Some(0))
    );
    assert!(add["p50_us"].as_u64().unwrap() <= add["p99_us"].as_u64().unwrap());
    assert!(add["p50_us"].as_u64().unwrap() > 0);
    let fail = figures("demo__fail");
    assert_eq!(
        (fail["calls"].as_u64(), fail["errors"].as_u64()),
        (Some(5), Some(5))
    );

    let (status, jsonl) = get_status(&serve, "/api/activity/export?format=jsonl").await;
    assert_eq!(status, 200);
    let lines: Vec<Value> = jsonl
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 36);
    assert_eq!(lines[0]["id"], all[0]["id"]);
    let (status, csv) = get_status(
        &serve,
        "/api/activity/export?format=csv&client=first-editor",
    )
    .await;
    assert_eq!(status, 200);
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 31, "{csv}");
    assert!(rows[0].starts_with("id,at_ms,duration_us,session,client"));
    assert!(
        rows[1..]
            .iter()
            .all(|row| row.contains(",\"first-editor\","))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_text_kept_is_redacted_in_every_form_a_secret_takes() {
    // A value a JSON writer escapes: a quote, a slash, a letter outside ASCII.
    let secret = "pa\"ss/wörd-7731";
    let config = format!(
        "[servers.demo]\ncommand = {exe:?}\nargs = [\"demo-server\"]\n\
         env = {{ DEMO_API_KEY = {secret:?} }}\n\n[activity]\npayloads = true\n",
        exe = switchboard_exe().to_string_lossy(),
    );
    let serve = ServeOptions::new(&config).ready(&["demo"]).start();
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp
        .open_session(&format!("editor {secret}"))
        .await
        .expect("a session");
    // As a JSON writer escapes it, as an ASCII-only one does, and raw in an error's text.
    let ascii = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo__echo","arguments":{"text":"pa\"ss\/w\u00f6rd-7731"}}}"#;
    let reply = mcp
        .post(Some(&session), ascii.to_owned())
        .await
        .expect("an answer");
    assert_eq!(reply.status, 200, "{}", reply.body);
    mcp.call_tool(&session, 2, "demo__echo", json!({ "text": secret }))
        .await;
    let unknown = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": format!("demo__{secret}"), "arguments": {} } });
    let reply = mcp
        .post(Some(&session), unknown.to_string())
        .await
        .expect("an answer");
    assert!(reply.body.contains("unknown tool"), "{}", reply.body);
    let kept = records(&serve, "?limit=10", 3).await;
    let text = serde_json::to_string(&kept).unwrap();
    for form in [secret, r#"pa\"ss"#, r"\u00f6rd-7731", "wörd-7731"] {
        assert!(!text.contains(form), "{form} is kept: {text}");
    }
    let error = kept
        .iter()
        .find(|record| record["outcome"] == "error")
        .expect("the unknown tool's record");
    assert!(
        error["error"].as_str().unwrap().contains("[redacted]"),
        "{error}"
    );
    assert!(
        error["name"].as_str().unwrap().contains("[redacted]"),
        "{error}"
    );
    assert!(
        kept.iter()
            .all(|record| record["client"] == "editor [redacted]")
    );
    let file = std::fs::read(serve.dir().join("data/activity.db")).expect("the database");
    for form in ["wörd-7731", r"w\u00f6rd-7731"] {
        assert!(
            !file
                .windows(form.len())
                .any(|window| window == form.as_bytes()),
            "{form} is in the database file"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_csv_export_never_hands_a_spreadsheet_a_formula() {
    let serve = ServeOptions::new(&config("")).ready(&["demo"]).start();
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let client = r#"=HYPERLINK("http://evil.example","open")"#;
    let session = mcp.open_session(client).await.expect("a session");
    mcp.call_tool(&session, 1, "@SUM(A1:A9)", json!({})).await;
    mcp.call_tool(&session, 2, "demo__add", json!({ "a": 1, "b": 1 }))
        .await;
    records(&serve, "?limit=10", 2).await;
    let (status, csv) = get_status(&serve, "/api/activity/export?format=csv").await;
    assert_eq!(status, 200);
    assert!(
        csv.contains(r#""'=HYPERLINK(""http://evil.example"",""open"")""#),
        "{csv}"
    );
    assert!(csv.contains(r#""'@SUM(A1:A9)""#), "{csv}");
    for row in csv.lines() {
        for cell in row.split(",\"").skip(1) {
            assert!(
                !cell.starts_with(['=', '+', '-', '@', '\t', '\r']),
                "a cell a spreadsheet would run: {row}"
            );
        }
    }
    // The JSON export is data, not a sheet: it keeps the names as they were.
    let (_, jsonl) = get_status(&serve, "/api/activity/export?format=jsonl").await;
    assert!(
        jsonl.contains(r#""client":"=HYPERLINK(\"http://evil.example\",\"open\")""#),
        "{jsonl}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_queries_are_refused_with_the_reason() {
    let serve = ServeOptions::new(&config("")).ready(&["demo"]).start();
    for (query, reason) in [
        ("/api/activity?outcome=maybe", "outcome must be"),
        (
            "/api/activity?since=yesterday",
            "since must be a whole number",
        ),
        ("/api/activity?limit=0", "limit must be 1 to 1000"),
        ("/api/activity?limit=5000", "limit must be 1 to 1000"),
        ("/api/activity?since=20&until=10", "is after until"),
        (
            "/api/activity?colour=red",
            "unknown parameter \\\"colour\\\"",
        ),
        (
            "/api/activity/stats?limit=5",
            "unknown parameter \\\"limit\\\"",
        ),
        (
            "/api/activity/stats?until=x",
            "until must be a whole number",
        ),
        (
            "/api/activity/export?format=xml",
            "format must be jsonl or csv",
        ),
    ] {
        let (status, body) = get_status(&serve, query).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert!(body.contains(reason), "{query}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_log_turned_off_records_nothing_until_turned_on() {
    let serve = ServeOptions::new(&config("[activity]\nenabled = false\n"))
        .ready(&["demo"])
        .start();
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp.open_session("editor").await.expect("a session");
    mcp.call_tool(&session, 1, "demo__echo", json!({ "text": "unseen" }))
        .await;
    let health = &serve.api_get("/api/activity").await["health"];
    assert_eq!(
        (&health["enabled"], &health["payloads"]),
        (&json!(false), &json!(false))
    );
    std::fs::write(
        serve.config_path(),
        config("[activity]\nenabled = true\npayloads = true\n"),
    )
    .unwrap();
    serve.wait_for_log("config reloaded");
    let health = &serve.api_get("/api/activity").await["health"];
    assert_eq!(
        (&health["enabled"], &health["payloads"]),
        (&json!(true), &json!(true))
    );
    mcp.call_tool(&session, 2, "demo__echo", json!({ "text": "seen" }))
        .await;
    let all = records(&serve, "", 1).await;
    assert_eq!(all.len(), 1, "{all:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupt_log_is_set_aside_and_a_new_one_started() {
    let options = ServeOptions::new(&config("")).ready(&["demo"]);
    let data = options.dir().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(
        data.join("activity.db"),
        "this is not a database, not at all. ".repeat(200),
    )
    .unwrap();
    let serve = options.start();
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp.open_session("editor").await.expect("a session");
    let echoed = mcp
        .call_tool(&session, 1, "demo__echo", json!({ "text": "still works" }))
        .await;
    assert_eq!(first_text(&echoed), "still works");
    records(&serve, "", 1).await;
    let page = serve.api_get("/api/activity").await;
    let problem = page["health"]["problem"].as_str().unwrap_or_default();
    assert!(problem.contains("set aside"), "{page}");
    let aside: Vec<String> = std::fs::read_dir(&data)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("activity.db.unreadable-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert!(
        std::fs::read_to_string(data.join(&aside[0]))
            .unwrap()
            .starts_with("this is not a database")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_locked_log_loses_records_counted_and_never_a_call() {
    let serve = ServeOptions::new(&config("")).ready(&["demo"]).start();
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp.open_session("editor").await.expect("a session");
    mcp.call_tool(&session, 0, "demo__echo", json!({ "text": "before" }))
        .await;
    records(&serve, "", 1).await;

    // Another program holds the database's write lock for three seconds.
    let database = serve.dir().join("data/activity.db");
    let mut locker = std::process::Command::new(python())
        .args([
            "-c",
            "import sqlite3, sys, time\n\
             db = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
             db.execute('BEGIN EXCLUSIVE')\n\
             print('locked', flush=True)\n\
             time.sleep(3)\n\
             db.execute('COMMIT')\n",
        ])
        .arg(&database)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python runs");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(locker.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");
    for id in 1..=20 {
        let started = std::time::Instant::now();
        let echoed = mcp
            .call_tool(&session, id, "demo__echo", json!({ "text": "during" }))
            .await;
        assert_eq!(first_text(&echoed), "during");
        // Not a timing check: a call never waits for the log's lock (1 s).
        assert!(started.elapsed() < Duration::from_millis(900));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(locker.wait().unwrap().success());

    // Once the lock is gone, records are kept again; every call is accounted for, kept or lost.
    mcp.call_tool(&session, 99, "demo__echo", json!({ "text": "after" }))
        .await;
    let health = eventually("every call is accounted for", EVENT_LIMIT, || async {
        let page = serve.api_get("/api/activity").await;
        let health = page["health"].clone();
        let counted = health["recorded"].as_u64().unwrap() + health["failed"].as_u64().unwrap();
        match counted {
            22 => Ok(health),
            _ => Err(health),
        }
    })
    .await;
    assert!(health["failed"].as_u64().unwrap() > 0, "{health}");
    assert!(
        health["problem"].as_str().unwrap().contains("locked"),
        "{health}"
    );
    let kept = records(&serve, "", 2).await;
    assert_eq!(
        kept.len() as u64,
        health["recorded"].as_u64().unwrap(),
        "{kept:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_log_stays_under_its_size_oldest_records_first_out() {
    let serve = ServeOptions::new(&config(
        "[activity]\npayloads = true\nmax_size = \"256KiB\"\n",
    ))
    .ready(&["demo"])
    .start();
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp.open_session("editor").await.expect("a session");
    let text = "y".repeat(4096);
    for id in 0..300 {
        mcp.call_tool(&session, id, "demo__echo", json!({ "text": text }))
            .await;
    }
    let page = eventually("every call is taken", EVENT_LIMIT, || async {
        let page = serve.api_get("/api/activity?limit=1000").await;
        match page["health"]["recorded"].as_u64() {
            Some(300) => Ok(page),
            _ => Err(page["health"].clone()),
        }
    })
    .await;
    let records = page["records"].as_array().unwrap();
    // 300 calls of 8 KiB each went through; the file holds what fits in 256 KiB, newest kept.
    assert!(records.len() < 300, "{} records kept", records.len());
    assert!(!records.is_empty());
    let newest = records[0]["id"].as_i64().unwrap();
    let oldest = records.last().unwrap()["id"].as_i64().unwrap();
    assert!(newest >= 300 && oldest > 1, "{newest}..{oldest}");
    // Retention runs right after the batch that went over; the file comes back under.
    let path = serve.dir().join("data/activity.db");
    eventually("the file shrinks under its limit", EVENT_LIMIT, || async {
        let size = std::fs::metadata(&path).unwrap().len();
        if size <= 300 * 1024 {
            Ok(())
        } else {
            Err(size)
        }
    })
    .await;
}
