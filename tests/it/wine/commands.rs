//! Commands as Windows finds them: `PATH` and `PATHEXT`, npm's batch files run as `node` with
//! their script (no `cmd.exe` in between), and other batch files given their arguments quoted
//! for `cmd.exe`.

use serde_json::json;

use super::{
    Place, WineServe, call_tool, tagged, test_server_exe, text, toml_string, toml_strings, win,
};

/// npm's own `npx.cmd`, as npm 10 installs it beside `node.exe`.
const NPX_CMD: &str = "@ECHO OFF\r\n\
SETLOCAL\r\n\
SET \"NODE_EXE=%~dp0\\node.exe\"\r\n\
IF NOT EXIST \"%NODE_EXE%\" (\r\n\
  SET \"NODE_EXE=node\"\r\n\
)\r\n\
SET \"NPM_PREFIX_JS=%~dp0\\node_modules\\npm\\bin\\npm-prefix.js\"\r\n\
SET \"NPX_CLI_JS=%~dp0\\node_modules\\npm\\bin\\npx-cli.js\"\r\n\
FOR /F \"delims=\" %%F IN ('CALL \"%NODE_EXE%\" \"%NPM_PREFIX_JS%\"') DO (\r\n\
  SET \"NPM_PREFIX_NPX_CLI_JS=%%F\\node_modules\\npm\\bin\\npx-cli.js\"\r\n\
)\r\n\
IF EXIST \"%NPM_PREFIX_NPX_CLI_JS%\" (\r\n\
  SET \"NPX_CLI_JS=%NPM_PREFIX_NPX_CLI_JS%\"\r\n\
)\r\n\
\"%NODE_EXE%\" \"%NPX_CLI_JS%\" %*\r\n";

/// A folder laid out as Node.js installs itself, whose `node.exe` is the test server: run with
/// a script ending in `npx-cli.js`, it plays npx (an install script, then the server). It is
/// beside the place's long folder, not in it: programs under paths over 260 characters are not
/// started (Wine refuses them).
fn node_install(place: &Place) -> std::path::PathBuf {
    let bin = place.short_folder("Node JS");
    let scripts = bin.join("node_modules").join("npm").join("bin");
    std::fs::create_dir_all(&scripts).expect("folders");
    std::fs::copy(test_server_exe(), bin.join("node.exe")).expect("node.exe");
    std::fs::write(bin.join("npx.cmd"), NPX_CMD).expect("npx.cmd");
    std::fs::write(scripts.join("npx-cli.js"), "// npx\n").expect("npx-cli.js");
    bin
}

#[tokio::test]
async fn npx_runs_as_node_with_its_script_and_is_seen_installing() {
    let place = Place::new("npx");
    let bin = node_install(&place);
    place.write_config(&format!(
        "[servers.pkg]\ncommand = \"npx\"\nargs = {}\nenv = {{ PATH = {} }}\n",
        toml_strings(&["-y", "@scope/server", "--tag", &place.tag]),
        toml_string(&format!("{};${{env:PATH}}", win(&bin)))
    ));
    let serve = WineServe::start(&place, &[]).await;
    let installing = serve
        .backend_when("pkg", |status| !status["installing"].is_null())
        .await;
    assert_eq!(installing["state"], "starting");
    assert_eq!(installing["installing"]["runner"], "npx");
    assert_eq!(installing["installing"]["package"], "@scope/server");
    serve
        .backend_when("pkg", |status| status["state"] == "ready")
        .await;

    let argv = call_tool(&serve, "pkg__argv", json!({})).await;
    let received: Vec<String> = serde_json::from_str(&text(&argv)).expect("a JSON list");
    assert_eq!(
        received,
        ["-y", "@scope/server", "--tag", place.tag.as_str()]
    );
    let processes = tagged(&place.tag);
    let runner = processes
        .iter()
        .find(|(_, line)| line.contains("npx-cli.js"))
        .unwrap_or_else(|| panic!("npx runs as node with its script: {processes:#?}"));
    assert!(runner.1.contains("node.exe"), "{runner:?}");
    assert!(
        !processes
            .iter()
            .any(|(_, line)| line.to_lowercase().contains("cmd.exe")),
        "no cmd.exe in between: {processes:#?}"
    );
}

#[tokio::test]
async fn a_batch_file_gets_its_arguments_as_written() {
    let place = Place::new("batch");
    let bin = place.short_folder("Zoë's tools");
    std::fs::copy(test_server_exe(), bin.join("server.exe")).expect("server.exe");
    std::fs::write(bin.join("run-server.cmd"), "@\"%~dp0server.exe\" %*\r\n").expect("cmd");
    let args = [
        "--tag",
        place.tag.as_str(),
        "a b",
        "\"quoted\"",
        "x&y",
        "^caret",
    ];
    place.write_config(&format!(
        "[servers.wrapped]\ncommand = \"run-server\"\nargs = {}\nenv = {{ PATH = {} }}\n",
        toml_strings(&args),
        toml_string(&format!("{};${{env:PATH}}", win(&bin)))
    ));
    let serve = WineServe::start(&place, &["wrapped"]).await;
    let argv = call_tool(&serve, "wrapped__argv", json!({})).await;
    let received: Vec<String> = serde_json::from_str(&text(&argv)).expect("a JSON list");
    assert_eq!(
        received, args,
        "cmd.exe passes every argument on as written"
    );
}
