//! A small MCP server on stdio that misbehaves on request, built for Windows and run under Wine
//! by the Windows tests (`tests/wine/`); the Unix tests use `tests/backends/misbehave.py`.
//!
//! Tools: `echo`, `argv` (its own arguments, to see them arrive unchanged), `spawn_grandchild`
//! (a process of its own that outlives the call), `crash` (exits at once, leaving a grandchild),
//! `hang` (never answers), `hold_file` (opens a file without sharing its deletion, as an editor
//! or a virus scanner may, for a while) and `getenv` (a variable of its environment).
//!
//! Modes, by the first argument: `--grandchild TAG` sleeps until killed; a first argument
//! ending in `npx-cli.js` plays npm's `npx` (it runs an install script, a child of its own with
//! `npm_lifecycle_event=postinstall`, for a second and a half, then the server as another child
//! on the same stdio); anything else is the server. Every process it starts carries the same
//! arguments after its mode, so a test finds them all by a tag among them.

// The test server starts its own children; it is not Switchboard.
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("--grandchild") => loop {
            std::thread::sleep(Duration::from_secs(60));
        },
        Some("--install-script") => std::thread::sleep(Duration::from_millis(1500)),
        Some(first) if first.ends_with("npx-cli.js") => play_npx(&args[2..]),
        _ => serve(&args),
    }
}

/// What `npx -y PKG` does on a first run: an install script, then the package's server.
fn play_npx(rest: &[String]) {
    let exe = std::env::current_exe().expect("own path");
    let installed = Command::new(&exe)
        .arg("--install-script")
        .args(rest)
        .env("npm_lifecycle_event", "postinstall")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .expect("the install script runs");
    assert!(installed.success());
    let served = Command::new(&exe)
        .args(rest)
        .status()
        .expect("the server runs");
    std::process::exit(served.code().unwrap_or(1));
}

fn serve(args: &[String]) {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let Ok(request) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = request.get("id").cloned() else {
            continue;
        };
        let method = request["method"].as_str().unwrap_or_default();
        let result = match method {
            "initialize" => Some(json!({
                "protocolVersion": request["params"]["protocolVersion"]
                    .as_str()
                    .unwrap_or("2025-11-25"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "test-server", "version": "1.0.0"}
            })),
            "ping" => Some(json!({})),
            "tools/list" => Some(json!({"tools": tools()})),
            "tools/call" => call(&request["params"], args),
            _ => {
                let error = json!({"code": -32601, "message": format!("no method {method}")});
                write(
                    &mut stdout,
                    &json!({"jsonrpc": "2.0", "id": id, "error": error}),
                );
                continue;
            }
        };
        if let Some(result) = result {
            write(
                &mut stdout,
                &json!({"jsonrpc": "2.0", "id": id, "result": result}),
            );
        }
    }
}

fn write(stdout: &mut std::io::Stdout, message: &Value) {
    let mut line = message.to_string();
    line.push('\n');
    let _ = stdout.write_all(line.as_bytes());
    let _ = stdout.flush();
}

fn tools() -> Value {
    let tool = |name: &str, description: &str, properties: Value| {
        json!({
            "name": name,
            "description": description,
            "inputSchema": {"type": "object", "properties": properties}
        })
    };
    json!([
        tool(
            "echo",
            "Returns its text",
            json!({"text": {"type": "string"}})
        ),
        tool("argv", "Returns the server's own arguments", json!({})),
        tool(
            "spawn_grandchild",
            "Starts a process that outlives the call",
            json!({})
        ),
        tool(
            "crash",
            "Starts a grandchild, then exits at once",
            json!({})
        ),
        tool("hang", "Never answers", json!({})),
        tool(
            "hold_file",
            "Holds a file open without sharing its deletion",
            json!({"path": {"type": "string"}, "ms": {"type": "integer"}})
        ),
        tool(
            "getenv",
            "A variable of the environment",
            json!({"name": {"type": "string"}})
        ),
    ])
}

/// The result of a tool call; `None` for a call never answered.
fn call(params: &Value, args: &[String]) -> Option<Value> {
    let arguments = &params["arguments"];
    let text = |text: String| json!({"content": [{"type": "text", "text": text}]});
    Some(match params["name"].as_str().unwrap_or_default() {
        "echo" => text(arguments["text"].as_str().unwrap_or_default().to_owned()),
        "argv" => text(serde_json::to_string(&args[1..]).expect("strings serialize")),
        "spawn_grandchild" => text(spawn_grandchild(args).to_string()),
        "crash" => {
            spawn_grandchild(args);
            std::process::exit(3);
        }
        "hang" => return None,
        "hold_file" => {
            let path = arguments["path"].as_str().unwrap_or_default().to_owned();
            let ms = arguments["ms"].as_u64().unwrap_or(1000);
            match hold(&path, Duration::from_millis(ms)) {
                Ok(()) => text(format!("holding {path}")),
                Err(error) => {
                    json!({"isError": true, "content": [{"type": "text", "text": error}]})
                }
            }
        }
        "getenv" => {
            let name = arguments["name"].as_str().unwrap_or_default();
            text(std::env::var(name).unwrap_or_default())
        }
        other => {
            json!({"isError": true, "content": [{"type": "text", "text": format!("no tool {other}")}]})
        }
    })
}

/// Starts `--grandchild` with this server's own arguments; its pid.
fn spawn_grandchild(args: &[String]) -> u32 {
    let exe = std::env::current_exe().expect("own path");
    // Never waited for: it is meant to outlive the server, until its tree is killed.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(exe)
        .arg("--grandchild")
        .args(&args[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("a grandchild starts");
    child.id()
}

/// Opens `path` sharing reads only, on a thread that closes it after `duration`.
fn hold(path: &str, duration: Duration) -> Result<(), String> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        const FILE_SHARE_READ: u32 = 1;
        options.share_mode(FILE_SHARE_READ);
    }
    let file = options.open(path).map_err(|error| error.to_string())?;
    std::thread::spawn(move || {
        std::thread::sleep(duration);
        drop(file);
    });
    Ok(())
}
