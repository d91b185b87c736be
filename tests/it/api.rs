//! The control API over real HTTP, against a real `switchboard serve` with real backends.

use std::io::BufRead;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use crate::support::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOKEN: &str = "api-test-token-0123456789abcdef";
const SECRET: &str = "sk-secret-value";

/// `switchboard serve` on a free port with its own directories, and a client for its API.
struct Serve {
    child: Child,
    /// `http://127.0.0.1:PORT`
    base: String,
    /// The link printed at startup.
    dashboard: String,
    log: Arc<Mutex<Vec<String>>>,
    dir: tempfile::TempDir,
    client: reqwest::Client,
}

impl Serve {
    /// Starts serve over `config` (TOML), with `token` as `SWITCHBOARD_TOKEN` if given, and waits
    /// until it listens and every backend in `ready` is ready.
    fn start(config: &str, token: Option<&str>, ready: &[&str]) -> Serve {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("config.toml"), config).expect("write config");
        let mut command = Command::new(switchboard_exe());
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(dir.path().join("config.toml"))
            .env("SWITCHBOARD_RUNTIME_DIR", dir.path().join("run"))
            .env("SWITCHBOARD_DATA_DIR", dir.path().join("data"))
            .env("SWITCHBOARD_LOG", "debug")
            .env("NO_COLOR", "1")
            .env_remove("SWITCHBOARD_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(token) = token {
            command.env("SWITCHBOARD_TOKEN", token);
        }
        let mut child = command.spawn().expect("switchboard serve starts");

        let log = Arc::new(Mutex::new(Vec::new()));
        let (lines_tx, lines) = std::sync::mpsc::channel::<String>();
        let stderr = child.stderr.take().expect("stderr piped");
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let line = strip_ansi(&line);
                kept.lock().expect("log lock").push(line.clone());
                let _ = lines_tx.send(line);
            }
        });

        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        let mut serve = Serve {
            child,
            base: String::new(),
            dashboard: String::new(),
            log,
            dir,
            client,
        };
        let mut waiting_for: Vec<String> = ready
            .iter()
            .map(|name| format!("backend{{name={name}}}: ready"))
            .collect();
        let deadline = std::time::Instant::now() + EVENT_LIMIT;
        while serve.dashboard.is_empty() || !waiting_for.is_empty() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let Ok(line) = lines.recv_timeout(left) else {
                panic!("serve did not come up; log:\n{}", serve.log());
            };
            if let Some(link) = line.strip_prefix("dashboard: ") {
                serve.dashboard = link.trim().to_owned();
                let (base, _) = link.split_once("/?").expect("a dashboard link");
                serve.base = base.to_owned();
            }
            waiting_for.retain(|needle| !line.contains(needle.as_str()));
        }
        serve
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn port(&self) -> u16 {
        self.base
            .rsplit(':')
            .next()
            .and_then(|port| port.parse().ok())
            .expect("a port")
    }

    fn log(&self) -> String {
        self.log.lock().expect("log lock").join("\n")
    }

    async fn get(&self, path: &str, token: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .bearer_auth(token)
            .send()
            .await
            .expect("a response")
    }

    async fn get_json(&self, path: &str) -> Value {
        let response = self.get(path, TOKEN).await;
        assert_eq!(response.status(), 200, "GET {path}");
        response.json().await.expect("JSON")
    }

    async fn post(&self, path: &str, body: &str) -> reqwest::Response {
        self.client
            .post(self.url(path))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .await
            .expect("a response")
    }

    async fn post_json(&self, path: &str, body: &str) -> (u16, Value) {
        let response = self.post(path, body).await;
        let status = response.status().as_u16();
        (status, response.json().await.expect("JSON"))
    }

    /// The `/api/events` stream.
    async fn events(&self, token: &str) -> Events {
        let response = self.get("/api/events", token).await;
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
}

impl Drop for Serve {
    fn drop(&mut self) {
        terminate(&mut self.child);
    }
}

/// Server-Sent Events read from a live response.
struct Events {
    response: reqwest::Response,
    buffer: String,
    /// Everything received so far, for checks on the raw text.
    seen: String,
}

impl Events {
    async fn next(&mut self) -> (String, Value) {
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

/// Sends `request` as raw HTTP/1.1 and returns the status code and the body.
async fn raw_request(port: u16, request: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    tokio::time::timeout(EVENT_LIMIT, stream.read_to_end(&mut answer))
        .await
        .expect("an answer in time")
        .expect("read");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {answer}"));
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

fn pid_of(backend: &Value) -> u32 {
    backend["pid"].as_u64().expect("a pid") as u32
}

#[tokio::test]
async fn backends_are_listed_stopped_started_restarted_and_called() {
    let serve = Serve::start(&demo_config("demo", None), Some(TOKEN), &["demo"]);

    let list = serve.get_json("/api/backends").await;
    assert_eq!(list.as_array().expect("an array").len(), 1);
    let demo = &list[0];
    assert_eq!(demo["name"], "demo");
    assert_eq!(demo["state"], "ready");
    assert!(demo["tools"].as_u64().expect("a count") >= 5);
    assert_eq!(
        demo["pending"], 0,
        "nothing is waiting for the idle backend"
    );
    let first = pid_of(demo);
    assert!(alive(first), "the listed pid is a live process");

    let (status, stopped) = serve.post_json("/api/backends/demo/stop", "").await;
    assert_eq!(status, 200, "{stopped}");
    assert_eq!(stopped["ok"], true);
    assert_eq!(stopped["backend"]["state"], "stopped");
    assert_eq!(stopped["backend"]["pid"], Value::Null);
    assert!(!alive(first), "acknowledged only once the process is gone");
    let list = serve.get_json("/api/backends").await;
    assert_eq!(list[0]["state"], "stopped");
    assert_eq!(list[0]["last_exit"]["reason"], "stopped_by_user");

    let (status, started) = serve.post_json("/api/backends/demo/start", "{}").await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["backend"]["state"], "ready");
    let second = pid_of(&started["backend"]);
    assert!(alive(second) && second != first);

    let (status, restarted) = serve.post_json("/api/backends/demo/restart", "").await;
    assert_eq!(status, 200, "{restarted}");
    let third = pid_of(&restarted["backend"]);
    assert!(alive(third) && third != second);
    assert!(!alive(second), "the old process is gone after a restart");

    let (status, result) = serve
        .post_json(
            "/api/backends/demo/tools/echo/call",
            r#"{"text":"hello over HTTP"}"#,
        )
        .await;
    assert_eq!(status, 200, "{result}");
    assert_eq!(first_text(&result), "hello over HTTP");

    let (status, error) = serve
        .post_json("/api/backends/demo/tools/crash/call", r#"{"code":5}"#)
        .await;
    assert_eq!(status, 502, "{error}");
    assert_eq!(error["code"], "backend_error");
    let detail = serve.get_json("/api/backends/demo").await;
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
        .post_json("/api/backends/demo/tools/nothing/call", "{}")
        .await;
    assert_eq!((status, &error["code"]), (404, &json!("not_found")));
    let (status, error) = serve.post_json("/api/backends/nobody/stop", "").await;
    assert_eq!((status, &error["code"]), (404, &json!("not_found")));
}

#[tokio::test]
async fn the_event_stream_delivers_a_status_event_after_a_stop() {
    let serve = Serve::start(&demo_config("demo", None), Some(TOKEN), &["demo"]);
    let mut events = serve.events(TOKEN).await;
    let (name, first) = events.next().await;
    assert_eq!(name, "status");
    assert_eq!(first["state"], "ready");

    let (status, _) = serve.post_json("/api/backends/demo/stop", "").await;
    assert_eq!(status, 200);
    let stopped = events
        .until(|name, data| name == "status" && data["state"] == "stopped")
        .await;
    assert_eq!(stopped["name"], "demo");
    assert_eq!(stopped["pid"], Value::Null);
    assert_eq!(stopped["last_exit"]["reason"], "stopped_by_user");

    let (status, _) = serve.post_json("/api/backends/demo/start", "").await;
    assert_eq!(status, 200);
    let ready = events
        .until(|name, data| name == "status" && data["state"] == "ready")
        .await;
    assert!(ready["pid"].is_u64());
}

#[tokio::test]
async fn strangers_are_refused() {
    let serve = Serve::start(&demo_config("demo", None), Some(TOKEN), &["demo"]);
    let pid = pid_of(&serve.get_json("/api/backends").await[0]);

    let response = serve
        .client
        .get(serve.url("/api/backends"))
        .send()
        .await
        .expect("a response");
    assert_eq!(response.status(), 401, "no token");
    let response = serve
        .get("/api/backends", "wrong-token-0123456789abcdef")
        .await;
    assert_eq!(response.status(), 401, "wrong token");
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body["code"], "unauthorized");
    let response = serve
        .get("/api/events", "wrong-token-0123456789abcdef")
        .await;
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
        let (status, body) = raw_request(
            port,
            &format!(
                "GET /api/backends HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\n\
                 Connection: close\r\n\r\n"
            ),
        )
        .await;
        assert_eq!(status, 403, "Host {host}: {body}");
        assert!(body.contains("forbidden_host"), "{body}");
    }
    let response = serve
        .client
        .get(serve.url("/api/backends"))
        .bearer_auth(TOKEN)
        .header("origin", "http://evil.example")
        .send()
        .await
        .expect("a response");
    assert_eq!(response.status(), 403, "foreign Origin");

    // The cookie as the dashboard link sets it.
    let response = serve
        .client
        .get(&serve.dashboard)
        .send()
        .await
        .expect("a response");
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()["location"], "/");
    let cookie = response.headers()["set-cookie"]
        .to_str()
        .expect("ASCII")
        .to_owned();
    assert_eq!(
        cookie,
        format!("switchboard_token={TOKEN}; HttpOnly; SameSite=Strict; Path=/")
    );
    let cookie_pair = cookie.split(';').next().expect("name=value").to_owned();
    let response = serve
        .client
        .get(serve.url("/api/backends"))
        .header("cookie", &cookie_pair)
        .send()
        .await
        .expect("a response");
    assert_eq!(response.status(), 200, "the cookie opens the API");

    // A foreign page's form, posted by a browser that attaches the cookie.
    let response = serve
        .client
        .post(serve.url("/api/backends/demo/stop"))
        .header("cookie", &cookie_pair)
        .header("origin", "http://evil.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("x=1")
        .send()
        .await
        .expect("a response");
    assert_eq!(response.status(), 403);
    // The same without Origin (older browsers), and as text/plain.
    for content_type in ["application/x-www-form-urlencoded", "text/plain"] {
        let response = serve
            .client
            .post(serve.url("/api/backends/demo/restart"))
            .header("cookie", &cookie_pair)
            .header("content-type", content_type)
            .body("x=1")
            .send()
            .await
            .expect("a response");
        assert_eq!(response.status(), 415, "{content_type}");
    }
    let demo = &serve.get_json("/api/backends").await[0];
    assert_eq!(demo["state"], "ready");
    assert_eq!(pid_of(demo), pid, "nothing was stopped or restarted");

    let response = serve
        .client
        .get(serve.url("/?token=wrong-token-0123456789abcdef"))
        .send()
        .await
        .expect("a response");
    assert_eq!(response.status(), 401);
    assert!(response.headers().get("set-cookie").is_none());
    let response = serve
        .client
        .get(serve.url("/"))
        .send()
        .await
        .expect("a response");
    assert_eq!(response.status(), 401);
    let page = response.text().await.expect("a page");
    assert!(page.contains("Open the dashboard link"), "{page}");
}

#[tokio::test]
async fn secrets_never_leave_and_the_token_file_is_private() {
    let config = format!(
        "{}{}",
        demo_config("demo", None),
        demo_config("vault", Some(("API_KEY", SECRET)))
    );
    let serve = Serve::start(&config, None, &["demo", "vault"]);

    let data = serve.dir.path().join("data");
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
    assert_eq!(serve.dashboard, format!("{}/?token={token}", serve.base));

    let mut events = serve.events(&token).await;
    let detail = serve.get("/api/backends/vault", &token).await;
    assert_eq!(detail.status(), 200);
    let detail = detail.text().await.expect("a body");
    assert!(!detail.contains(SECRET), "{detail}");
    let detail: Value = serde_json::from_str(&detail).expect("JSON");
    assert_eq!(detail["config"]["env"], json!({ "API_KEY": "••••••" }));
    for path in ["/api/backends", "/api/config", "/api/clients"] {
        let body = serve.get(path, &token).await.text().await.expect("a body");
        assert!(!body.contains(SECRET), "{path}: {body}");
    }

    let restarted = serve
        .client
        .post(serve.url("/api/backends/vault/restart"))
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
    let mentions: Vec<&str> = log.lines().filter(|line| line.contains(&token)).collect();
    assert_eq!(
        mentions,
        [format!("dashboard: {}", serve.dashboard)],
        "the token is printed once, in the dashboard link, and never logged"
    );
}
