//! What must stay private: secrets out of answers, pages, logs and history, and the files
//! Switchboard writes readable by their owner only.

use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{
    INITIALIZE, MCP_TOKEN, SECRET, api_list, api_text, bearer, config, mcp_initialize, request,
    start, wait_for_backend,
};

/// The dashboard's files below `ui/`, as the paths they are served at.
fn ui_paths() -> Vec<String> {
    fn walk(dir: &Path, base: &Path, paths: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("ui/ is readable") {
            let path = entry.expect("an entry").path();
            let relative = path
                .strip_prefix(base)
                .expect("below ui/")
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                if relative != "dev" {
                    walk(&path, base, paths);
                }
            } else if relative != "tsconfig.json" {
                paths.push(format!("/{relative}"));
            }
        }
    }
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ui");
    let mut paths = Vec::new();
    walk(&base, &base, &mut paths);
    paths
}

#[tokio::test]
async fn secrets_stay_out_of_answers_pages_logs_and_history() {
    let serve = start("debug");
    let port = serve.port();
    let host = format!("Host: 127.0.0.1:{port}");

    // Tokens in headers and cookies, right and wrong.
    let wrong = "wrong-token-in-a-header-5b9e03";
    for headers in [
        vec![host.clone(), bearer(wrong)],
        vec![host.clone(), format!("Cookie: switchboard_token={wrong}")],
    ] {
        assert_eq!(exchange(port, &api_list(&headers), "").await.status, 401);
    }
    for token in [wrong, MCP_TOKEN] {
        let reply = exchange(
            port,
            &mcp_initialize(&[host.clone(), bearer(token)]),
            INITIALIZE,
        )
        .await;
        assert_eq!(reply.status, if token == MCP_TOKEN { 200 } else { 401 });
    }
    // A crash, and handshakes that fail, make history.
    let crash = request(
        "POST /api/backends/mis/tools/crash/call HTTP/1.1",
        &[
            host.clone(),
            bearer(SERVE_TOKEN),
            "Content-Type: application/json".to_owned(),
        ],
    );
    assert_eq!(exchange(port, &crash, r#"{"code":5}"#).await.status, 502);
    let mis = wait_for_backend(port, "mis", |detail| {
        detail["state"] == "ready" && detail["history"].as_array().is_some_and(|h| !h.is_empty())
    })
    .await;
    let quitter = wait_for_backend(port, "quitter", |detail| {
        detail["history"].as_array().is_some_and(|h| h.len() >= 2)
    })
    .await;

    // What the backend prints is its own output, kept verbatim for its owner (it may be the
    // very message that explains a crash); Switchboard's own words never carry the secret.
    let own_line = format!("API_KEY={SECRET}");
    let output = mis["output"].as_array().expect("output lines");
    assert!(
        output.iter().any(|line| line["text"] == own_line.as_str()),
        "the backend printed its secret to its own stderr: {output:?}"
    );
    for detail in [&mis, &quitter] {
        assert_eq!(
            detail["config"]["env"]["API_KEY"], "••••••",
            "masked: {detail}"
        );
        let mut own_words = vec![detail["last_error"].clone()];
        for entry in detail["history"].as_array().expect("history") {
            own_words.extend([
                entry["reason"].clone(),
                entry["detail"].clone(),
                entry["exit"].clone(),
            ]);
            for line in entry["output_tail"].as_array().expect("an output tail") {
                let text = line["text"].as_str().unwrap_or_default();
                assert!(!text.contains(SECRET) || text == own_line, "{text}");
            }
        }
        for words in own_words {
            assert!(!words.to_string().contains(SECRET), "{words}");
        }
        for line in detail["output"].as_array().expect("output") {
            let text = line["text"].as_str().unwrap_or_default();
            assert!(!text.contains(SECRET) || text == own_line, "{text}");
        }
    }

    // Every answer of the API but the backends' output.
    for path in ["/api/backends", "/api/config", "/api/clients"] {
        let (status, body) = api_text(port, path).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert!(!body.contains(SECRET), "{path}: {body}");
        // The one deliberate exception: the snippet an editor needs carries /mcp's token.
        assert_eq!(
            body.contains(MCP_TOKEN),
            path == "/api/clients",
            "{path}: {body}"
        );
    }
    let mut events = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let get_events = request(
        "GET /api/events HTTP/1.1",
        &[host.clone(), bearer(SERVE_TOKEN)],
    );
    events
        .write_all(format!("{get_events}\r\n\r\n").as_bytes())
        .await
        .expect("write");
    let mut seen = String::new();
    while !seen.contains("event: config") {
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout(EVENT_LIMIT, events.read(&mut chunk))
            .await
            .expect("the first events in time")
            .expect("read");
        assert!(n > 0, "the event stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&chunk[..n]));
    }
    assert!(seen.contains("event: status"), "{seen}");
    assert!(
        !seen.contains(SECRET) && !seen.contains(MCP_TOKEN),
        "{seen}"
    );

    // The dashboard's files, which anyone who passes the guard may load.
    for path in ui_paths() {
        let reply = exchange(
            port,
            &request(&format!("GET {path} HTTP/1.1"), std::slice::from_ref(&host)),
            "",
        )
        .await;
        assert_eq!(reply.status, 200, "{path}");
        for secret in [SECRET, MCP_TOKEN, SERVE_TOKEN] {
            assert!(!reply.body.contains(secret), "{path} carries a secret");
        }
    }

    // The log: the backend's stderr is relayed at debug level as it came; nothing else carries
    // a secret, and the API token is never printed.
    let log = serve.log();
    for line in log.lines() {
        if line.contains(SECRET) {
            assert!(line.ends_with(&format!(": {own_line}")), "{line}");
        }
        for token in [MCP_TOKEN, wrong, SERVE_TOKEN] {
            assert!(!line.contains(token), "{line}");
        }
    }
    assert!(
        log.contains(&own_line),
        "the debug log relays the backend's stderr:\n{log}"
    );
}

/// Every directory and file below `roots` whose permissions let anyone but the owner in:
/// directories must be 0700, files and sockets 0600. Also returns what was looked at.
fn exposed_files(roots: &[PathBuf]) -> (Vec<String>, Vec<PathBuf>) {
    let mut exposed = Vec::new();
    let mut seen = Vec::new();
    let mut pending: Vec<PathBuf> = roots.to_vec();
    while let Some(path) = pending.pop() {
        let metadata = std::fs::symlink_metadata(&path).expect("metadata");
        let mode = metadata.permissions().mode() & 0o777;
        let file_type = metadata.file_type();
        let expected = if file_type.is_dir() { 0o700 } else { 0o600 };
        if mode != expected {
            let kind = if file_type.is_socket() {
                "socket"
            } else if file_type.is_dir() {
                "directory"
            } else {
                "file"
            };
            exposed.push(format!(
                "{kind} {} is {mode:o}, not {expected:o}",
                path.display()
            ));
        }
        if file_type.is_dir() {
            for entry in std::fs::read_dir(&path).expect("readable") {
                pending.push(entry.expect("an entry").path());
            }
        }
        seen.push(path);
    }
    (exposed, seen)
}

#[tokio::test]
async fn files_switchboard_writes_are_for_its_owner_only() {
    // Without SWITCHBOARD_TOKEN, so that serve makes the token file.
    let mut serve = ServeOptions::new(&config())
        .ready(&["mis"])
        .env_remove("SWITCHBOARD_TOKEN")
        .start();
    let dir_of = |name: &str| {
        serve
            .env()
            .into_iter()
            .find(|(key, _)| *key == name)
            .expect("a directory")
            .1
    };
    let (data, runtime) = (
        dir_of("SWITCHBOARD_DATA_DIR"),
        dir_of("SWITCHBOARD_RUNTIME_DIR"),
    );
    let catalog = data.join("catalog").join("mis.json");
    eventually("the catalog of mis is cached", EVENT_LIMIT, || async {
        catalog.exists().then_some(()).ok_or("no catalog file")
    })
    .await;

    // A move writes its lock and its record; an old lock open to others is narrowed.
    let editor_file = serve.dir().join("vscode-mcp.json");
    std::fs::write(
        &editor_file,
        r#"{"servers": {"notes": {"command": "python3", "args": ["-V"]}}}"#,
    )
    .unwrap();
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(data.join("moves"))
        .unwrap();
    std::fs::write(data.join("moves/lock"), "").unwrap();
    std::fs::set_permissions(
        data.join("moves/lock"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let moved = std::process::Command::new(switchboard_exe())
        .args(["move", "vscode", "--from"])
        .arg(&editor_file)
        .arg("--config")
        .arg(serve.config_path())
        .env("SWITCHBOARD_DATA_DIR", &data)
        .env("SWITCHBOARD_RUNTIME_DIR", &runtime)
        .output()
        .expect("move runs");
    assert!(
        moved.status.success(),
        "{}",
        String::from_utf8_lossy(&moved.stderr)
    );

    let roots = [data.clone(), runtime.clone()];
    let (exposed, seen) = exposed_files(&roots);
    assert!(exposed.is_empty(), "while serving:\n{}", exposed.join("\n"));
    for expected in [
        data.join("token"),
        catalog.clone(),
        data.join("pins/mis.json"),
        data.join("moves/lock"),
        data.join("moves/vscode.json"),
        runtime.join("switchboard.sock"),
    ] {
        assert!(
            seen.contains(&expected),
            "{} was looked at: {seen:?}",
            expected.display()
        );
    }

    serve.stop();
    let (exposed, _) = exposed_files(&roots);
    assert!(exposed.is_empty(), "after serving:\n{}", exposed.join("\n"));
}
