//! `/mcp`'s token: a new config requires the one Switchboard generates, which `install` writes
//! into editors' configs and the dashboard's snippets carry, and which `connect` does without; a
//! config from before keeps working without one, `check` and Needs attention say so, and one
//! action gives the editors' entries the token and turns it on, live.

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::*;

/// serve's options in `dir`, with the editors' files under `dir/home`.
fn in_dir(dir: &Path, config: &Path) -> ServeOptions {
    let home = dir.join("home");
    std::fs::create_dir_all(home.join(".config")).unwrap();
    ServeOptions::in_dir(dir, config)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
}

/// Runs `switchboard ARGS` as serve's user would, in `dir`; whether it succeeded, and what it
/// printed (its result on stdout, then stderr).
fn switchboard(dir: &Path, args: &[&str]) -> (bool, String) {
    let home = dir.join("home");
    let output = Command::new(switchboard_exe())
        .args(args)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("SWITCHBOARD_DATA_DIR", dir.join("data"))
        .env("SWITCHBOARD_RUNTIME_DIR", dir.join("run"))
        .output()
        .expect("switchboard runs");
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

/// The HTTP status of an `initialize` to `/mcp` with `token`, if any.
async fn initialize_status(serve: &ServeProcess, token: Option<&str>) -> u16 {
    let mut mcp = McpHttp::new(&serve.url());
    if let Some(token) = token {
        mcp = mcp.with_token(token);
    }
    mcp.post(None, initialize(1, "token-test").to_string())
        .await
        .expect("an answer")
        .status
}

/// VS Code's entries in the home of `dir`.
fn vscode_servers(dir: &Path) -> Value {
    let file = dir.join("home/.config/Code/User/mcp.json");
    let text = std::fs::read_to_string(&file).expect("VS Code's file");
    serde_json::from_str::<Value>(&text).expect("JSON")["servers"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_config_requires_the_token_everywhere_but_connect() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("config.toml");
    let serve = in_dir(dir.path(), &config).ready(&["demo"]).start();
    assert!(
        std::fs::read_to_string(&config)
            .unwrap()
            .contains("\nrequire_token = true\n"),
        "the config serve writes asks for the token"
    );
    let token_file = dir.path().join("data/mcp-token");
    let token = std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_owned();
    assert_eq!(token.len(), 64);
    assert_eq!(
        std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777,
        0o600
    );

    assert_eq!(initialize_status(&serve, None).await, 401);
    assert_eq!(
        initialize_status(&serve, Some(SERVE_TOKEN)).await,
        401,
        "the API token does not open /mcp"
    );
    assert_eq!(initialize_status(&serve, Some(&token)).await, 200);
    assert!(!serve.log().contains(&token), "the token is never logged");

    // The dashboard's snippets carry it.
    let clients = serve.api_get("/api/clients").await.to_string();
    assert!(clients.contains(&format!("Bearer {token}")), "{clients}");

    // `install` writes it into the editor's entry.
    let (installed, said) = switchboard(
        dir.path(),
        &["install", "vscode", "--config", config.to_str().unwrap()],
    );
    assert!(installed, "{said}");
    let entry = &vscode_servers(dir.path())["switchboard"];
    assert_eq!(
        entry["headers"],
        json!({ "Authorization": format!("Bearer {token}") }),
        "{entry}"
    );

    // `connect` needs no token: the socket admits only this user.
    let mut connect = Command::new(switchboard_exe())
        .args(["connect", "--config", config.to_str().unwrap()])
        .env("SWITCHBOARD_RUNTIME_DIR", dir.path().join("run"))
        .env("SWITCHBOARD_DATA_DIR", dir.path().join("data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("connect starts");
    let mut stdin = connect.stdin.take().expect("piped");
    writeln!(stdin, "{}", initialize(1, "token-test")).unwrap();
    let mut line = String::new();
    BufReader::new(connect.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("an answer");
    let answer: Value = serde_json::from_str(&line).expect("JSON");
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
    drop(stdin);
    connect.wait().expect("connect ends");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_config_from_before_is_told_and_one_action_turns_the_token_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "# My servers.\n[servers.demo]\ncommand = {:?}\nargs = [\"demo-server\"]\n",
            switchboard_exe().to_string_lossy()
        ),
    )
    .unwrap();
    let serve = in_dir(dir.path(), &config).ready(&["demo"]).start();
    assert_eq!(
        initialize_status(&serve, None).await,
        200,
        "it works as it did"
    );
    let (_, said) = switchboard(dir.path(), &["check", "--config", config.to_str().unwrap()]);
    assert!(
        said.contains(
            "warning: endpoint.require_token: /mcp takes requests from any program on this \
             machine"
        ),
        "{said}"
    );

    // Two editors already point at /mcp (one at a profile); a third entry is another server's.
    let vscode = dir.path().join("home/.config/Code/User/mcp.json");
    std::fs::create_dir_all(vscode.parent().unwrap()).unwrap();
    let url = serve.url();
    std::fs::write(
        &vscode,
        json!({ "servers": {
            "switchboard": { "type": "http", "url": url },
            "other": { "type": "http", "url": "http://127.0.0.1:1/mcp" } } })
        .to_string(),
    )
    .unwrap();
    let cursor = dir.path().join("home/.cursor/mcp.json");
    std::fs::create_dir_all(cursor.parent().unwrap()).unwrap();
    std::fs::write(
        &cursor,
        json!({ "mcpServers": { "reading": { "url": format!("{url}/reading") } } }).to_string(),
    )
    .unwrap();

    let needs = serve.api_get("/api/attention").await;
    let entry = needs
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["kind"] == "open_endpoint")
        .unwrap_or_else(|| panic!("{needs}"))
        .clone();
    assert_eq!(entry["action"]["label"], "Require a token");
    let post = entry["action"]["post"].as_str().unwrap();
    let outcome = serve.api_post(post).await;
    assert_eq!(outcome["reload"]["outcome"], "applied", "{outcome}");
    let titles: Vec<&str> = outcome["updated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|update| update["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Cursor", "VS Code"], "{outcome}");
    assert_eq!(outcome["failed"], json!([]));

    let token = std::fs::read_to_string(dir.path().join("data/mcp-token"))
        .unwrap()
        .trim()
        .to_owned();
    let bearer = json!({ "Authorization": format!("Bearer {token}") });
    let servers = vscode_servers(dir.path());
    assert_eq!(servers["switchboard"]["headers"], bearer);
    assert_eq!(servers["other"].get("headers"), None, "not ours: untouched");
    let cursor_servers: Value =
        serde_json::from_str(&std::fs::read_to_string(&cursor).unwrap()).unwrap();
    assert_eq!(
        cursor_servers["mcpServers"]["reading"],
        json!({ "url": format!("{url}/reading"), "headers": bearer })
    );
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.starts_with("# My servers.\n"), "{text}");
    assert!(
        text.ends_with("[endpoint]\nrequire_token = true\n"),
        "{text}"
    );

    // Live: no restart.
    assert_eq!(initialize_status(&serve, None).await, 401);
    assert_eq!(initialize_status(&serve, Some(&token)).await, 200);
    let needs = serve.api_get("/api/attention").await;
    assert!(
        !needs.to_string().contains("open_endpoint"),
        "resolved: {needs}"
    );
}
