//! The control API over real HTTP, against a real `switchboard serve` with real backends.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::*;
use serde_json::{Value, json};

const SECRET: &str = "sk-secret-value";

/// Serve over `config` (TOML) with a debug log, ready once every backend in `ready` is.
fn options(config: &str, ready: &[&str]) -> ServeOptions {
    ServeOptions::new(config)
        .ready(ready)
        .env("SWITCHBOARD_LOG", "debug")
}

async fn get(serve: &ServeProcess, path: &str, token: &str) -> reqwest::Response {
    serve
        .client()
        .get(serve.http_url(path))
        .bearer_auth(token)
        .send()
        .await
        .expect("a response")
}

/// The `/api/events` stream.
pub(crate) async fn events(serve: &ServeProcess, token: &str) -> Events {
    let response = get(serve, "/api/events", token).await;
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().expect("ASCII");
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    Events {
        response,
        buffer: String::new(),
        seen: String::new(),
    }
}

/// Server-Sent Events read from a live response.
pub(crate) struct Events {
    response: reqwest::Response,
    buffer: String,
    /// Everything received so far, for checks on the raw text.
    seen: String,
}

impl Events {
    pub(crate) async fn next(&mut self) -> (String, Value) {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut name = None;
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("event:") {
                        name = Some(value.trim().to_owned());
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push_str(value.trim_start());
                    }
                }
                if let Some(name) = name {
                    return (name, serde_json::from_str(&data).expect("JSON data"));
                }
                continue;
            }
            let chunk = tokio::time::timeout(EVENT_LIMIT, self.response.chunk())
                .await
                .expect("an event in time")
                .expect("a readable stream")
                .expect("the stream stays open");
            let text = std::str::from_utf8(&chunk).expect("UTF-8");
            self.buffer.push_str(text);
            self.seen.push_str(text);
        }
    }

    async fn until(&mut self, check: impl Fn(&str, &Value) -> bool) -> Value {
        loop {
            let (name, data) = self.next().await;
            if check(&name, &data) {
                return data;
            }
        }
    }
}

fn demo_config(name: &str, env: Option<(&str, &str)>) -> String {
    let mut text = format!(
        "[servers.{name}]\ncommand = {command:?}\nargs = [\"demo-server\"]\nstop_grace = \"300ms\"\n",
        command = switchboard_exe().to_string_lossy(),
    );
    if let Some((key, value)) = env {
        text.push_str(&format!("env = {{ {key} = {value:?} }}\n"));
    }
    text.push_str("[servers.demo.restart]\nbackoff_base = \"50ms\"\n\n");
    text.replace(
        "[servers.demo.restart]",
        &format!("[servers.{name}.restart]"),
    )
}

fn pid_of(backend: &Value) -> u32 {
    backend["pid"].as_u64().expect("a pid") as u32
}

#[tokio::test]
async fn backends_are_listed_stopped_started_restarted_and_called() {
    let serve = options(&demo_config("demo", None), &["demo"]).start();

    let list = serve.api_get("/api/backends").await;
    assert_eq!(list.as_array().expect("an array").len(), 1);
    let demo = &list[0];
    assert_eq!(demo["name"], "demo");
    assert_eq!(demo["state"], "ready");
    assert!(demo["tools"].as_u64().expect("a count") >= 5);
    assert_eq!(demo["transport"], Value::Null, "a local server has no link");
    assert_eq!(demo["actions"], json!(["stop", "restart"]));
    assert_eq!(demo["failing"], false);
    assert_eq!(
        demo["pending"], 0,
        "nothing is waiting for the idle backend"
    );
    let first = pid_of(demo);
    assert!(alive(first), "the listed pid is a live process");

    let (status, stopped) = serve.api_post_body("/api/backends/demo/stop", "").await;
    assert_eq!(status, 200, "{stopped}");
    assert_eq!(stopped["ok"], true);
    assert_eq!(stopped["backend"]["state"], "stopped");
    assert_eq!(stopped["backend"]["pid"], Value::Null);
    assert_eq!(stopped["backend"]["actions"], json!(["start", "restart"]));
    assert!(!alive(first), "acknowledged only once the process is gone");
    let list = serve.api_get("/api/backends").await;
    assert_eq!(list[0]["state"], "stopped");
    assert_eq!(list[0]["last_exit"]["reason"], "stopped_by_user");

    let (status, started) = serve.api_post_body("/api/backends/demo/start", "{}").await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["backend"]["state"], "ready");
    let second = pid_of(&started["backend"]);
    assert!(alive(second) && second != first);

    let (status, restarted) = serve.api_post_body("/api/backends/demo/restart", "").await;
    assert_eq!(status, 200, "{restarted}");
    let third = pid_of(&restarted["backend"]);
    assert!(alive(third) && third != second);
    assert!(!alive(second), "the old process is gone after a restart");

    let (status, result) = serve
        .api_post_body(
            "/api/backends/demo/tools/echo/call",
            r#"{"text":"hello over HTTP"}"#,
        )
        .await;
    assert_eq!(status, 200, "{result}");
    assert_eq!(first_text(&result), "hello over HTTP");

    let (status, error) = serve
        .api_post_body("/api/backends/demo/tools/crash/call", r#"{"code":5}"#)
        .await;
    assert_eq!(status, 502, "{error}");
    assert_eq!(error["code"], "backend_error");
    let detail = serve.api_get("/api/backends/demo").await;
    let last = detail["history"]
        .as_array()
        .expect("history")
        .last()
        .expect("an entry")
        .clone();
    assert_eq!(last["reason"], "crash", "{last}");
    assert_eq!(last["exit"]["code"], 5);
    assert!(last["output_tail"].is_array());
    assert!(wait_gone(third).await, "the crashed process is gone");

    let (status, error) = serve
        .api_post_body("/api/backends/demo/tools/nothing/call", "{}")
        .await;
    assert_eq!((status, &error["code"]), (404, &json!("not_found")));
    let (status, error) = serve.api_post_body("/api/backends/nobody/stop", "").await;
    assert_eq!((status, &error["code"]), (404, &json!("not_found")));
}

#[tokio::test]
async fn the_event_stream_delivers_a_status_event_after_a_stop() {
    let serve = options(&demo_config("demo", None), &["demo"]).start();
    let mut events = events(&serve, SERVE_TOKEN).await;
    let (name, first) = events.next().await;
    assert_eq!(name, "status");
    assert_eq!(first["state"], "ready");

    let (status, _) = serve.api_post_body("/api/backends/demo/stop", "").await;
    assert_eq!(status, 200);
    let stopped = events
        .until(|name, data| name == "status" && data["state"] == "stopped")
        .await;
    assert_eq!(stopped["name"], "demo");
    assert_eq!(stopped["pid"], Value::Null);
    assert_eq!(stopped["last_exit"]["reason"], "stopped_by_user");

    let (status, _) = serve.api_post_body("/api/backends/demo/start", "").await;
    assert_eq!(status, 200);
    let ready = events
        .until(|name, data| name == "status" && data["state"] == "ready")
        .await;
    assert!(ready["pid"].is_u64());
}

#[tokio::test]
async fn strangers_are_refused() {
    let serve = options(&demo_config("demo", None), &["demo"]).start();
    let pid = pid_of(&serve.api_get("/api/backends").await[0]);

    let response = serve
        .client()
        .get(serve.http_url("/api/backends"))
        .send()
        .await
        .expect("a response");
    assert_eq!(response.status(), 401, "no token");
    let response = get(&serve, "/api/backends", "wrong-token-0123456789abcdef").await;
    assert_eq!(response.status(), 401, "wrong token");
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body["code"], "unauthorized");
    let response = get(&serve, "/api/events", "wrong-token-0123456789abcdef").await;
    assert_eq!(
        response.status(),
        401,
        "the event stream needs the token too"
    );

    let port = serve.port();
    for host in [
        format!("evil.example:{port}"),
        format!("localhost.evil.com:{port}"),
        format!("127.0.0.10:{port}"),
    ] {
        let request = format!(
            "GET /api/backends HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {SERVE_TOKEN}"
        );
        let Reply { status, body, .. } = exchange(port, &request, "").await;
        assert_eq!(status, 403, "Host {host}: {body}");
        assert!(body.contains("forbidden_host"), "{body}");
    }
    let response = serve
        .client()
        .get(serve.http_url("/api/backends"))
        .bearer_auth(SERVE_TOKEN)
        .header("origin", "http://evil.example")
        .send()
        .await
        .expect("a response");
    assert_eq!(response.status(), 403, "foreign Origin");

    // The dashboard link carries this run's key in its fragment, which no browser sends.
    let link = serve.dashboard_link();
    let (base, key) = link.split_once("/#key=").expect("the key in the fragment");
    assert_eq!(base, serve.http_url(""));
    assert_ne!(key, SERVE_TOKEN, "the dashboard key is not the API token");
    let response = serve
        .client()
        .get(serve.http_url("/"))
        .send()
        .await
        .expect("a response");
    assert_eq!(response.status(), 200, "the dashboard's page needs nothing");
    assert!(response.headers().get("set-cookie").is_none());
    assert!(
        response
            .text()
            .await
            .expect("a page")
            .contains("Switchboard")
    );
    let response = get(&serve, "/api/backends", key).await;
    assert_eq!(response.status(), 200, "the key opens the API");
    for cookie in [
        format!("switchboard_token={SERVE_TOKEN}"),
        format!("switchboard_key={key}"),
    ] {
        let response = serve
            .client()
            .get(serve.http_url("/api/backends"))
            .header("cookie", &cookie)
            .send()
            .await
            .expect("a response");
        assert_eq!(response.status(), 401, "no cookie opens the API: {cookie}");
    }

    // A foreign page's script that somehow had the key still cannot use it.
    let response = serve
        .client()
        .post(serve.http_url("/api/backends/demo/stop"))
        .bearer_auth(key)
        .header("origin", "http://evil.example")
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .expect("a response");
    assert_eq!(response.status(), 403);
    let demo = &serve.api_get("/api/backends").await[0];
    assert_eq!(demo["state"], "ready");
    assert_eq!(pid_of(demo), pid, "nothing was stopped or restarted");
}

#[tokio::test]
async fn secrets_never_leave_and_the_token_file_is_private() {
    let config = format!(
        "{}{}",
        demo_config("demo", None),
        demo_config("vault", Some(("API_KEY", SECRET)))
    );
    // Without SWITCHBOARD_TOKEN, so that serve makes its own.
    let serve = options(&config, &["demo", "vault"])
        .env_remove("SWITCHBOARD_TOKEN")
        .start();

    let data = serve.dir().join("data");
    let token_file = data.join("token");
    let token = std::fs::read_to_string(&token_file)
        .expect("the token file")
        .trim()
        .to_owned();
    assert_eq!(token.len(), 64);
    assert!(token.chars().all(|c| c.is_ascii_hexdigit()));
    let mode = |path: &Path| {
        std::fs::metadata(path)
            .expect("metadata")
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(&token_file), 0o600);
    assert_eq!(mode(&data), 0o700);
    let dashboard = serve.dashboard_link();
    assert!(!dashboard.contains(&token), "{dashboard}");

    let mut events = events(&serve, &token).await;
    let detail = get(&serve, "/api/backends/vault", &token).await;
    assert_eq!(detail.status(), 200);
    let detail = detail.text().await.expect("a body");
    assert!(!detail.contains(SECRET), "{detail}");
    let detail: Value = serde_json::from_str(&detail).expect("JSON");
    assert_eq!(detail["config"]["env"], json!({ "API_KEY": "••••••" }));
    for path in ["/api/backends", "/api/config", "/api/clients"] {
        let body = get(&serve, path, &token)
            .await
            .text()
            .await
            .expect("a body");
        assert!(!body.contains(SECRET), "{path}: {body}");
    }

    let restarted = serve
        .client()
        .post(serve.http_url("/api/backends/vault/restart"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .send()
        .await
        .expect("a response");
    assert_eq!(restarted.status(), 200);
    events
        .until(|name, data| name == "status" && data["name"] == "vault" && data["state"] == "ready")
        .await;
    assert!(!events.seen.contains(SECRET), "{}", events.seen);

    let log = serve.log();
    assert!(!log.contains(SECRET), "{log}");
    assert!(
        !log.contains(&token),
        "the API token is never printed: {log}"
    );
    let (_, key) = dashboard.split_once("#key=").expect("the key");
    let mentions: Vec<&str> = log.lines().filter(|line| line.contains(key)).collect();
    assert_eq!(
        mentions,
        [format!("dashboard: {dashboard}")],
        "the dashboard key is printed once, in the link, and never logged"
    );
}
