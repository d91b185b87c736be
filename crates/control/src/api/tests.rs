use std::time::Duration;

use axum::http::Request as HttpRequest;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use super::*;
use config::{BackendConfig, MASKED};
use hub::HubOptions;
use supervisor::status::{BackendState, BackendStatus, StopReason};

/// Generous bound for an event that should come within milliseconds.
const EVENT_LIMIT: Duration = Duration::from_secs(20);
const PORT: u16 = 4242;
const TOKEN: &str = "test-token-0123456789abcdef";
const SECRET: &str = "sk-secret-value";

struct Fixture {
    app: Router,
    /// This run's dashboard key, from the dashboard link.
    dashboard_key: String,
    engine: Arc<Engine>,
    /// Holds the config file, which starts out missing.
    folder: tempfile::TempDir,
}

fn misbehave(name: &str) -> BackendConfig {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/backends/misbehave.py"
    );
    let mut config = BackendConfig::new(name, "python3", vec![script.to_owned()]);
    config.handshake_timeout = Duration::from_secs(10);
    config.stop_grace = Duration::from_millis(500);
    config.restart.backoff_base = Duration::from_millis(20);
    config.restart.backoff_cap = Duration::from_millis(200);
    config
}

fn fixture(backends: Vec<BackendConfig>, mcp_token: Option<&str>) -> Fixture {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let config = config::Config {
        path: folder.path().join("config.toml"),
        backends: backends.clone(),
        endpoint: Default::default(),
        desktop: Default::default(),
        security: Default::default(),
        registry: Default::default(),
        activity: Default::default(),
        secrets: Default::default(),
        profiles: Vec::new(),
        diagnostics: Vec::new(),
    };
    let (engine, hub) = hub::start(
        backends,
        supervisor::spawn::ProcessGroups::in_memory(),
        HubOptions::default(),
    );
    let mcp_token = EndpointToken::new(mcp_token.map(str::to_owned));
    let reloader = Reloader::new(
        engine.clone(),
        hub.clone(),
        &config,
        config.endpoint.clone(),
        false,
        mcp_token.clone(),
        folder.path().join("data"),
    );
    let options = ApiOptions {
        address: SocketAddr::from(([127, 0, 0, 1], PORT)),
        token: Token::new(TOKEN).expect("a valid token"),
        mcp_token,
        extra_origins: Vec::new(),
        exe: PathBuf::from("/opt/switchboard/bin/switchboard"),
        auth: auth::Auth::new(),
    };
    let ui = Router::new().fallback(|| async { "the dashboard's files" });
    let state = ApiState::new(
        hub,
        engine.clone(),
        reloader,
        options,
        CancellationToken::new(),
    )
    .with_ui(ui);
    let link = state.dashboard_url();
    let (base, dashboard_key) = link.split_once("/#key=").expect("the key in the fragment");
    assert_eq!(base, format!("http://127.0.0.1:{PORT}"));
    Fixture {
        dashboard_key: dashboard_key.to_owned(),
        app: router(state),
        engine,
        folder,
    }
}

async fn ready(fixture: &Fixture, name: &str) -> BackendStatus {
    let mut status = fixture
        .engine
        .backend(name)
        .expect("configured")
        .watch_status();
    tokio::time::timeout(
        EVENT_LIMIT,
        status.wait_for(|status| status.state == BackendState::Ready),
    )
    .await
    .expect("the backend is ready in time")
    .expect("the backend task lives")
    .clone()
}

fn request(method: Method, uri: &str, headers: &[(&str, &str)], body: &str) -> Request {
    let mut builder = HttpRequest::builder().method(method).uri(uri);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder
        .body(Body::from(body.to_owned()))
        .expect("a valid request")
}

fn host() -> String {
    format!("127.0.0.1:{PORT}")
}

fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

/// A request as the dashboard's own script sends it.
fn api(method: Method, uri: &str, body: &str) -> Request {
    let (host, bearer) = (host(), bearer());
    let mut headers = vec![("host", host.as_str()), ("authorization", bearer.as_str())];
    if method == Method::POST {
        headers.push(("content-type", "application/json"));
    }
    request(method, uri, &headers, body)
}

async fn send(fixture: &Fixture, request: Request) -> Response {
    fixture
        .app
        .clone()
        .oneshot(request)
        .await
        .expect("infallible")
}

async fn body_text(response: Response) -> String {
    let bytes = tokio::time::timeout(EVENT_LIMIT, response.into_body().collect())
        .await
        .expect("the body ends in time")
        .expect("a readable body")
        .to_bytes();
    String::from_utf8(bytes.to_vec()).expect("UTF-8")
}

async fn body_json(response: Response) -> Value {
    let text = body_text(response).await;
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("JSON body: {text}"))
}

async fn expect_error(response: Response, status: StatusCode, code: &str) -> String {
    assert_eq!(response.status(), status);
    let body = body_json(response).await;
    assert_eq!(body["code"], code, "{body}");
    body["message"].as_str().expect("a message").to_owned()
}

fn header(response: &Response, name: header::HeaderName) -> &str {
    response
        .headers()
        .get(name)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
}

#[tokio::test]
async fn requests_without_the_token_or_the_key_are_refused() {
    let fixture = fixture(Vec::new(), None);
    let host = host();
    let key = fixture.dashboard_key.clone();
    let cookies = [
        format!("switchboard_token={TOKEN}"),
        format!("switchboard_key={key}"),
    ];
    let cases: [&[(&str, &str)]; 6] = [
        &[("host", &host)],
        &[
            ("host", &host),
            ("authorization", "Bearer wrong-token-0123456789"),
        ],
        &[("host", &host), ("authorization", TOKEN)],
        &[("host", &host), ("authorization", &key)],
        &[("host", &host), ("cookie", &cookies[0])],
        &[("host", &host), ("cookie", &cookies[1])],
    ];
    for headers in cases {
        let response = send(&fixture, request(Method::GET, "/api/backends", headers, "")).await;
        assert_eq!(header(&response, header::WWW_AUTHENTICATE), "Bearer");
        let message = expect_error(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
        assert!(!message.contains(TOKEN) && !message.contains(&key));
    }
    for credential in [TOKEN, key.as_str()] {
        let bearer = format!("Bearer {credential}");
        let headers = [("host", host.as_str()), ("authorization", &bearer)];
        let response = send(
            &fixture,
            request(Method::GET, "/api/backends", &headers, ""),
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK);
        assert!(response.headers().get(header::SET_COOKIE).is_none());
        assert_eq!(body_json(response).await, json!([]));
    }
}

#[tokio::test]
async fn each_run_has_a_dashboard_key_of_its_own() {
    let first = fixture(Vec::new(), None);
    let second = fixture(Vec::new(), None);
    assert_ne!(first.dashboard_key, second.dashboard_key);
    assert_ne!(first.dashboard_key, TOKEN);
    assert!(first.dashboard_key.len() >= 64, "{}", first.dashboard_key);
    let bearer = format!("Bearer {}", first.dashboard_key);
    let headers = [("host", host()), ("authorization", bearer)];
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let response = send(&second, request(Method::GET, "/api/backends", &headers, "")).await;
    expect_error(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused_even_with_the_token() {
    let fixture = fixture(Vec::new(), None);
    let bearer = bearer();
    for bad_host in [
        "localhost.evil.com:4242",
        "127.0.0.10:4242",
        "evil.example",
        "127.0.0.1:4243",
        "127.0.0.1",
    ] {
        for path in ["/api/backends", "/", "/app.js"] {
            let headers = [("host", bad_host), ("authorization", &bearer)];
            let response = send(&fixture, request(Method::GET, path, &headers, "")).await;
            expect_error(response, StatusCode::FORBIDDEN, "forbidden_host").await;
        }
    }
    for origin in ["http://evil.example", "null", "http://localhost:4243"] {
        let headers = [
            ("host", host()),
            ("authorization", bearer.clone()),
            ("origin", origin.to_owned()),
        ];
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(name, value)| (*name, value.as_str()))
            .collect();
        let response = send(
            &fixture,
            request(Method::GET, "/api/backends", &headers, ""),
        )
        .await;
        expect_error(response, StatusCode::FORBIDDEN, "forbidden_origin").await;
    }
    let own_origin = format!("http://{}", host());
    let headers = [
        ("host", host()),
        ("authorization", bearer.clone()),
        ("origin", own_origin),
    ];
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect();
    let response = send(
        &fixture,
        request(Method::GET, "/api/backends", &headers, ""),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
}

#[tokio::test]
async fn a_cross_site_form_post_changes_nothing() {
    let fixture = fixture(vec![misbehave("mis")], None);
    let pid = ready(&fixture, "mis").await.pid.expect("a pid");
    let host = host();
    let bearer = bearer();
    let form = "application/x-www-form-urlencoded";
    let cross_site = [
        ("host", host.as_str()),
        ("authorization", &bearer),
        ("origin", "http://evil.example"),
        ("content-type", form),
    ];
    let response = send(
        &fixture,
        request(Method::POST, "/api/backends/mis/stop", &cross_site, "a=b"),
    )
    .await;
    expect_error(response, StatusCode::FORBIDDEN, "forbidden_origin").await;
    // Even with the credential, a request without Origin cannot say it sends JSON.
    for content_type in [form, "multipart/form-data; boundary=x", "text/plain", ""] {
        let mut headers = vec![("host", host.as_str()), ("authorization", bearer.as_str())];
        if !content_type.is_empty() {
            headers.push(("content-type", content_type));
        }
        let response = send(
            &fixture,
            request(Method::POST, "/api/backends/mis/stop", &headers, "a=b"),
        )
        .await;
        expect_error(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "bad_request").await;
    }
    let status = fixture.engine.backend("mis").expect("configured").status();
    assert_eq!(status.state, BackendState::Ready);
    assert_eq!(status.pid, Some(pid));
}

#[tokio::test]
async fn the_dashboards_files_need_no_credential_and_set_none() {
    let fixture = fixture(Vec::new(), None);
    let host = host();
    for path in ["/", "/app.js", "/index.html", &format!("/?token={TOKEN}")] {
        let response = send(&fixture, request(Method::GET, path, &[("host", &host)], "")).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert!(response.headers().get(header::SET_COOKIE).is_none());
        assert_eq!(body_text(response).await, "the dashboard's files");
    }
}

#[tokio::test]
async fn unknown_routes_get_json_errors() {
    let fixture = fixture(Vec::new(), None);
    for path in ["/api", "/api/nothing", "/api/backends/nobody"] {
        let response = send(&fixture, api(Method::GET, path, "")).await;
        expect_error(response, StatusCode::NOT_FOUND, "not_found").await;
    }
    for path in [
        "/api/backends/nobody/start",
        "/api/backends/nobody/tools/echo/call",
    ] {
        let response = send(&fixture, api(Method::POST, path, "")).await;
        expect_error(response, StatusCode::NOT_FOUND, "not_found").await;
    }
}

#[tokio::test]
async fn list_detail_and_commands_follow_the_engine() {
    let fixture = fixture(vec![misbehave("mis"), misbehave("alpha")], None);
    let first = ready(&fixture, "mis").await.pid.expect("a pid");
    ready(&fixture, "alpha").await;

    let list = body_json(send(&fixture, api(Method::GET, "/api/backends", "")).await).await;
    let names: Vec<&str> = list
        .as_array()
        .expect("an array")
        .iter()
        .map(|backend| backend["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(names, ["mis", "alpha"], "config order, not name order");
    let mis = &list[0];
    assert_eq!(mis["state"], "ready");
    assert_eq!(mis["pid"], first);
    assert!(mis["uptime_ms"].is_u64());
    assert!(mis["tools"].as_u64().expect("a count") > 5);
    assert_eq!(mis["enabled"], true);
    assert_eq!(mis["last_exit"], Value::Null);
    assert_eq!(mis["restart_at_ms"], Value::Null);

    let stopped = send(&fixture, api(Method::POST, "/api/backends/mis/stop", "")).await;
    assert_eq!(stopped.status(), StatusCode::OK);
    let stopped = body_json(stopped).await;
    assert_eq!(stopped["ok"], true);
    assert_eq!(stopped["backend"]["state"], "stopped");
    assert_eq!(stopped["backend"]["pid"], Value::Null);
    assert_eq!(stopped["backend"]["uptime_ms"], Value::Null);
    assert_eq!(stopped["backend"]["last_exit"]["reason"], "stopped_by_user");

    let started =
        body_json(send(&fixture, api(Method::POST, "/api/backends/mis/start", "{}")).await).await;
    assert_eq!(started["backend"]["state"], "ready");
    let second = started["backend"]["pid"].as_u64().expect("a pid");
    assert_ne!(second, u64::from(first));

    let restarted =
        body_json(send(&fixture, api(Method::POST, "/api/backends/mis/restart", "")).await).await;
    assert_eq!(restarted["backend"]["state"], "ready");
    assert_ne!(restarted["backend"]["pid"], second);
    assert_eq!(
        restarted["backend"]["last_exit"]["reason"],
        "restarted_by_user"
    );

    let response = send(&fixture, api(Method::POST, "/api/backends/mis/explode", "")).await;
    expect_error(response, StatusCode::NOT_FOUND, "not_found").await;

    let detail = body_json(send(&fixture, api(Method::GET, "/api/backends/mis", "")).await).await;
    assert_eq!(detail["state"], "ready");
    let reasons: Vec<&str> = detail["history"]
        .as_array()
        .expect("history")
        .iter()
        .map(|entry| entry["reason"].as_str().expect("a reason"))
        .collect();
    assert_eq!(
        reasons,
        ["stopped_by_user", "restarted_by_user"],
        "newest last"
    );
    let tools = detail["tools"].as_array().expect("raw tools");
    assert!(tools.iter().any(|tool| tool["name"] == "echo"));
    assert_eq!(detail["exposed_tools"]["echo"], "mis__echo");
    assert!(detail["server"]["protocol_version"].is_string());
    assert!(detail["output"].is_array());
    assert_eq!(detail["config"]["command"], "python3");
    assert_eq!(detail["config"]["prefix"], "mis");
}

#[tokio::test]
async fn tools_are_called_by_their_own_names() {
    let fixture = fixture(vec![misbehave("mis")], None);
    ready(&fixture, "mis").await;
    let call = |tool: &str, body: &str| {
        api(
            Method::POST,
            &format!("/api/backends/mis/tools/{tool}/call"),
            body,
        )
    };
    let response = send(&fixture, call("echo", r#"{"text":"hello"}"#)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let result = body_json(response).await;
    assert_eq!(result["content"][0]["text"], "hello");
    assert_eq!(
        result["x-extra"], 1,
        "the result is passed on as the backend sent it"
    );

    let result = body_json(send(&fixture, call("fail", "")).await).await;
    assert_eq!(result["isError"], true, "a tool's own error is a result");

    let stopped = send(&fixture, api(Method::POST, "/api/backends/mis/stop", "")).await;
    assert_eq!(stopped.status(), StatusCode::OK);
    let response = send(&fixture, call("echo", r#"{"text":"on demand"}"#)).await;
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "a call starts a stopped backend"
    );
    assert_eq!(body_json(response).await["content"][0]["text"], "on demand");

    let response = send(&fixture, call("mis__echo", "{}")).await;
    expect_error(response, StatusCode::NOT_FOUND, "not_found").await;
    for body in ["[1]", "\"text\"", "{not json"] {
        let response = send(&fixture, call("echo", body)).await;
        expect_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
    }
    let huge = format!(r#"{{"text":"{}"}}"#, "x".repeat(3 * 1024 * 1024));
    let response = send(&fixture, call("echo", &huge)).await;
    expect_error(response, StatusCode::PAYLOAD_TOO_LARGE, "too_large").await;

    let message = expect_error(
        send(&fixture, call("crash", "{}")).await,
        StatusCode::BAD_GATEWAY,
        "backend_error",
    )
    .await;
    assert!(message.contains("mis"), "{message}");
    let status = fixture.engine.backend("mis").expect("configured").status();
    let last = status.history.last().expect("the crash is in the history");
    assert_eq!(last.reason, StopReason::Crash);
    assert_eq!(last.exit.as_ref().and_then(|exit| exit.code), Some(3));
}

#[tokio::test]
async fn environment_values_never_leave() {
    let mut backend = misbehave("mis");
    backend
        .process_mut()
        .expect("a local server")
        .env
        .insert("API_KEY".to_owned(), SECRET.to_owned());
    let fixture = fixture(vec![backend], None);
    ready(&fixture, "mis").await;
    let detail = body_text(send(&fixture, api(Method::GET, "/api/backends/mis", "")).await).await;
    assert!(!detail.contains(SECRET));
    let detail: Value = serde_json::from_str(&detail).expect("JSON");
    assert_eq!(detail["config"]["env"], json!({ "API_KEY": MASKED }));
    for path in ["/api/backends", "/api/config", "/api/clients"] {
        let body = body_text(send(&fixture, api(Method::GET, path, "")).await).await;
        assert!(!body.contains(SECRET), "{path}");
    }
}

#[tokio::test]
async fn config_and_client_snippets() {
    let fixture = fixture(Vec::new(), Some("mcp-secret"));
    let config = body_json(send(&fixture, api(Method::GET, "/api/config", "")).await).await;
    let path = fixture.folder.path().join("config.toml");
    assert_eq!(config["path"], path.to_str().expect("a UTF-8 path"));
    assert_eq!(config["status"], "applied");
    assert_eq!(config["problem"], Value::Null);
    assert_eq!(config["desktop"]["notify_crash_loop"], true);
    assert_eq!(config["diagnostics"], json!([]));
    assert!(config["loaded_at_ms"].as_u64().expect("a time") > 0);
    assert!(config.get("backend_order").is_none());

    let clients = body_json(send(&fixture, api(Method::GET, "/api/clients", "")).await).await;
    let clients = clients.as_array().expect("an array");
    let ids: Vec<&str> = clients
        .iter()
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    assert_eq!(
        ids,
        [
            "claude-desktop",
            "claude-code",
            "cursor",
            "vscode",
            "zed",
            "windsurf",
            "gemini-cli",
            "codex"
        ]
    );
    let snippet = |index: usize| -> Value {
        serde_json::from_str(clients[index]["snippet"].as_str().expect("a string"))
            .expect("the snippet is JSON")
    };
    let url = "http://127.0.0.1:4242/mcp";
    assert_eq!(clients[0]["transport"], "stdio");
    assert_eq!(
        snippet(0),
        json!({ "mcpServers": { "switchboard": {
            "command": "/opt/switchboard/bin/switchboard", "args": ["connect"] } } })
    );
    let headers = json!({ "Authorization": "Bearer mcp-secret" });
    assert_eq!(
        snippet(2),
        json!({ "mcpServers": { "switchboard": { "url": url, "headers": headers } } })
    );
    assert_eq!(
        snippet(3),
        json!({ "servers": { "switchboard": { "type": "http", "url": url, "headers": headers } } })
    );
    assert_eq!(
        snippet(4),
        json!({ "context_servers": { "switchboard": { "url": url, "headers": headers } } })
    );
    assert!(clients.iter().all(|client| client["detected"].is_boolean()));
    for client in clients {
        assert!(
            !client["config_path_hint"]
                .as_str()
                .expect("a hint")
                .is_empty()
        );
        assert!(client["title"].is_string());
    }

    let without_token = editors::client_setups(&Destination {
        exe: "/sb".into(),
        url: url.to_owned(),
        token: None,
        profile: None,
    });
    assert!(!without_token[2].snippet.contains("headers"));
}

/// Reads Server-Sent Events from a response body.
struct EventReader {
    body: Body,
    buffer: String,
}

impl EventReader {
    fn new(response: Response) -> EventReader {
        assert_eq!(response.status(), StatusCode::OK);
        assert!(header(&response, header::CONTENT_TYPE).starts_with("text/event-stream"));
        EventReader {
            body: response.into_body(),
            buffer: String::new(),
        }
    }

    /// The next event (name and JSON data), skipping comments.
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
                    let data = serde_json::from_str(&data).expect("JSON data");
                    return (name, data);
                }
                continue;
            }
            let frame = tokio::time::timeout(EVENT_LIMIT, self.body.frame())
                .await
                .expect("an event in time")
                .expect("the stream is open")
                .expect("a readable frame");
            if let Ok(data) = frame.into_data() {
                self.buffer
                    .push_str(std::str::from_utf8(&data).expect("UTF-8"));
            }
        }
    }

    /// Skips events until one matches.
    async fn until(&mut self, check: impl Fn(&str, &Value) -> bool) -> Value {
        loop {
            let (name, data) = self.next().await;
            if check(&name, &data) {
                return data;
            }
        }
    }
}

#[tokio::test]
async fn the_event_stream_starts_with_the_state_and_follows_every_change() {
    let fixture = fixture(vec![misbehave("mis")], None);
    ready(&fixture, "mis").await;
    let mut events = EventReader::new(send(&fixture, api(Method::GET, "/api/events", "")).await);
    let (name, first) = events.next().await;
    assert_eq!(
        (name.as_str(), &first["name"], &first["state"]),
        ("status", &json!("mis"), &json!("ready"))
    );
    let (name, config) = events.next().await;
    assert_eq!(name, "config");
    assert_eq!(config["status"], "applied");

    let response = send(&fixture, api(Method::POST, "/api/backends/mis/stop", "")).await;
    assert_eq!(response.status(), StatusCode::OK);
    events
        .until(|name, data| name == "status" && data["state"] == "stopped")
        .await;

    let response = send(&fixture, api(Method::POST, "/api/backends/mis/start", "")).await;
    assert_eq!(response.status(), StatusCode::OK);
    events
        .until(|name, data| name == "status" && data["state"] == "ready")
        .await;
    let call = api(
        Method::POST,
        "/api/backends/mis/tools/stderr/call",
        r#"{"lines":3}"#,
    );
    assert_eq!(send(&fixture, call).await.status(), StatusCode::OK);
    let output = events.until(|name, _| name == "output").await;
    assert_eq!(output["backend"], "mis");
    assert_eq!(output["line"]["stream"], "stderr");
    assert!(output["line"]["text"].is_string());

    let call = api(
        Method::POST,
        "/api/backends/mis/tools/change_tools/call",
        "{}",
    );
    assert_eq!(send(&fixture, call).await.status(), StatusCode::OK);
    let catalog = events.until(|name, _| name == "catalog").await;
    assert_eq!(catalog, json!({ "backend": "mis" }));

    std::fs::write(
        fixture.folder.path().join("config.toml"),
        "[servers.broken]\nargs = []\n",
    )
    .expect("the config file is written");
    let reload = body_json(send(&fixture, api(Method::POST, "/api/config/reload", "")).await).await;
    assert_eq!(reload["outcome"], "applied", "{reload:#}");
    assert_eq!(reload["backends"]["mis"], "removed");
    assert_eq!(reload["left_out"][0]["name"], "broken");
    let config = events.until(|name, _| name == "config").await;
    assert_eq!(config["status"], "applied_in_part");
    assert_eq!(config["diagnostics"][0]["field"], "servers.broken");
    assert_eq!(config["diagnostics"][0]["line"], 1);

    std::fs::write(
        fixture.folder.path().join("config.toml"),
        "[servers.broken
",
    )
    .expect("the config file is written");
    let reload = body_json(send(&fixture, api(Method::POST, "/api/config/reload", "")).await).await;
    assert_eq!(reload["outcome"], "refused", "{reload:#}");
    assert_eq!(
        reload["problem"],
        "The config file has 1 error; the last valid config keeps running"
    );
    let config = events.until(|name, _| name == "config").await;
    assert_eq!(config["status"], "refused");
    assert_eq!(
        config["left_out"][0]["name"], "broken",
        "what runs is unchanged"
    );
}
