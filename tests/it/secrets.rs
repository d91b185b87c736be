//! Secrets in the OS keychain, through the real Secret Service (gnome-keyring in the D-Bus
//! session `scripts/with-keyring` gives the tests): `switchboard secret set|list|delete`,
//! `${secret:NAME}` reaching a real server's environment (server-everything's `get-env`) and
//! nothing else, a change applied to a running Switchboard, and a missing secret or keychain
//! reported clearly while the other servers run.

use std::io::Write as _;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::*;

/// Runs `switchboard secret ARGS` with `stdin` and `env`; its status and what it printed.
fn secret_command(args: &[&str], stdin: &str, env: &[(&str, String)]) -> (bool, String) {
    assert!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "the keychain tests need a Secret Service: run them through scripts/with-keyring (as \
         scripts/test does)"
    );
    let mut child = Command::new(switchboard_exe())
        .arg("secret")
        .args(args)
        .envs(env.iter().map(|(name, value)| (*name, value)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("switchboard runs");
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(stdin.as_bytes())
        .expect("write the value");
    let output = child.wait_with_output().expect("switchboard ends");
    let stdout = String::from_utf8_lossy(&output.stdout);
    // Only `list` has a result, on stdout; the others say what they did on stderr.
    if args != ["list"] {
        assert!(stdout.is_empty(), "nothing on stdout: {stdout}");
    }
    (
        output.status.success(),
        format!("{stdout}{}", String::from_utf8_lossy(&output.stderr)),
    )
}

fn config_with_secret(reference: &str) -> String {
    format!(
        "[servers.demo]\ncommand = {demo:?}\nargs = [\"demo-server\"]\n\n\
         [servers.everything]\ncommand = {everything:?}\nargs = [\"stdio\"]\n\
         env = {{ API_KEY = \"${{secret:{reference}}}\" }}\n",
        demo = switchboard_exe().to_string_lossy(),
        everything = everything_server().to_string_lossy(),
    )
}

/// The value of `API_KEY` in the environment server-everything runs with.
async fn api_key_seen(serve: &ServeProcess, id: u64) -> Value {
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp.open_session("secrets-test").await.expect("a session");
    let result = mcp
        .call_tool(&session, id, "everything__get-env", json!({}))
        .await;
    let text = first_text(&result);
    let env: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("JSON: {text}"));
    env["API_KEY"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_reaches_the_servers_environment_and_nowhere_else() {
    let service = keychain_service();
    let env = [("SWITCHBOARD_KEYCHAIN_SERVICE", service.clone())];
    let value = "sk-live-7f3a9c1e55d2";
    let (stored, said) = secret_command(&["set", "api_key"], value, &env);
    assert!(stored, "{said}");
    assert!(!said.contains(value), "{said}");
    let (listed, names) = secret_command(&["list"], "", &env);
    assert!(
        listed && names.lines().any(|line| line == "api_key"),
        "{names}"
    );

    let serve = ServeOptions::new(&config_with_secret("api_key"))
        .env("SWITCHBOARD_KEYCHAIN_SERVICE", &service)
        .ready(&["demo", "everything"])
        .start();
    assert_eq!(api_key_seen(&serve, 1).await, value);
    let detail = serve.api_get("/api/backends/everything").await;
    assert!(!detail.to_string().contains(value), "{detail}");
    assert!(
        detail.to_string().contains("API_KEY"),
        "its name is shown: {detail}"
    );
    assert!(!serve.log().contains(value), "the log never has it");

    // A new value applies to the running Switchboard: `secret set` makes it reload, and the
    // server whose environment changed restarts with it.
    let newer = "sk-live-rotated-0001";
    let instance_env = [
        ("SWITCHBOARD_KEYCHAIN_SERVICE", service.clone()),
        (
            "SWITCHBOARD_RUNTIME_DIR",
            serve.dir().join("run").to_string_lossy().into_owned(),
        ),
        (
            "SWITCHBOARD_DATA_DIR",
            serve.dir().join("data").to_string_lossy().into_owned(),
        ),
        ("SWITCHBOARD_TOKEN", SERVE_TOKEN.to_owned()),
    ];
    let (stored, said) = secret_command(&["set", "api_key"], newer, &instance_env);
    assert!(stored, "{said}");
    assert!(said.contains("restarted everything"), "{said}");
    eventually(
        "the server runs with the new value",
        EVENT_LIMIT,
        || async {
            match api_key_seen(&serve, 2).await {
                seen if seen == newer => Ok(()),
                seen => Err(seen),
            }
        },
    )
    .await;

    let (deleted, said) = secret_command(&["delete", "api_key"], "", &env);
    assert!(deleted, "{said}");
    let (again, said) = secret_command(&["delete", "api_key"], "", &env);
    assert!(!again && said.contains("holds no secret api_key"), "{said}");
}

#[test]
fn a_missing_secret_or_keychain_is_named_and_the_other_servers_run() {
    let service = keychain_service();
    let serve = ServeOptions::new(&config_with_secret("never_set"))
        .env("SWITCHBOARD_KEYCHAIN_SERVICE", &service)
        .ready(&["demo"])
        .start();
    let check = |extra: &[(&str, &str)]| {
        let output = Command::new(switchboard_exe())
            .args(["check", "--config"])
            .arg(serve.config_path())
            .env("SWITCHBOARD_KEYCHAIN_SERVICE", &service)
            .envs(extra.iter().copied())
            .output()
            .expect("check runs");
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    let (valid, said) = check(&[]);
    assert!(!valid, "{said}");
    assert!(
        said.contains(
            ":8:19: error: servers.everything.env.API_KEY: secret `never_set` is not in the \
             keychain; set it with `switchboard secret set never_set`"
        ),
        "{said}"
    );
    assert!(said.contains("1 valid backend(s): demo"), "{said}");
    assert!(
        serve
            .log()
            .contains("secret `never_set` is not in the keychain")
    );

    let (valid, said) = check(&[("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent")]);
    assert!(!valid, "{said}");
    assert!(
        said.contains("cannot read secret `never_set`: no keychain is available\n"),
        "{said}"
    );
    let (stored, said) = secret_command(
        &["set", "api_key"],
        "x",
        &[
            ("SWITCHBOARD_KEYCHAIN_SERVICE", service),
            (
                "DBUS_SESSION_BUS_ADDRESS",
                "unix:path=/nonexistent".to_owned(),
            ),
        ],
    );
    assert!(!stored, "{said}");
    assert!(
        said.contains(
            "no keychain is available: Switchboard needs a Secret Service such as GNOME Keyring \
             or KWallet running in your session; secrets are kept nowhere else, never in a file"
        ),
        "{said}"
    );
}

/// Without a D-Bus session there is no keychain: `GET /api/secrets` says so in one plain
/// sentence, what this system needs, which the config's error for the server whose secret
/// cannot be read does not repeat; the platform's own words (zbus's) are in the log alone, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_keychain_the_secrets_api_says_plainly_what_is_needed() {
    let serve = ServeOptions::new(&config_with_secret("api_key"))
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent")
        .ready(&["demo"])
        .start();
    let needed = "No keychain is available: Switchboard needs a Secret Service such as GNOME \
                  Keyring or KWallet running in your session.";
    for _ in 0..2 {
        let secrets = serve.api_get("/api/secrets").await;
        assert_eq!(secrets["unavailable"], needed, "{secrets}");
        assert_eq!(
            secrets["secrets"],
            json!([{"name": "api_key", "set": false, "used": true}])
        );
    }
    let config = serve.api_get("/api/config").await.to_string();
    assert!(
        config.contains("cannot read secret `api_key`: no keychain is available\""),
        "{config}"
    );
    assert!(!config.contains("zbus"), "{config}");
    let log = serve.log();
    let logged: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("the keychain cannot be used"))
        .collect();
    assert_eq!(logged.len(), 1, "{log}");
    assert!(logged[0].contains("zbus"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_in_arguments_urls_and_headers_come_back_as_written() {
    let service = keychain_service();
    let env = [("SWITCHBOARD_KEYCHAIN_SERVICE", service.clone())];
    let value = "sk-in-args-5b1f0e77";
    let (stored, said) = secret_command(&["set", "api_key"], value, &env);
    assert!(stored, "{said}");
    let config = format!(
        "[servers.demo]\ncommand = {demo:?}\nargs = [\"demo-server\"]\n\n\
         [servers.labelled]\ncommand = \"python3\"\n\
         args = [{script:?}, \"--label\", \"key=${{secret:api_key}}\"]\n\n\
         [servers.hosted]\nurl = \"https://hosted.invalid/mcp?api_key=${{secret:api_key}}&plan=pro\"\n\
         headers = {{ Authorization = \"Bearer ${{secret:api_key}}\" }}\n",
        demo = switchboard_exe().to_string_lossy(),
        script = misbehave_script().to_string_lossy(),
    );
    let serve = ServeOptions::new(&config)
        .env("SWITCHBOARD_KEYCHAIN_SERVICE", &service)
        .ready(&["demo", "labelled"])
        .start();

    let labelled = serve.api_get("/api/backends/labelled").await;
    assert_eq!(
        labelled["config"]["args"][2], "key=${secret:api_key}",
        "as written: {labelled}"
    );
    let hosted = eventually("hosted has tried to connect", EVENT_LIMIT, || async {
        let hosted = serve.api_get("/api/backends/hosted").await;
        match hosted["last_error"].is_string() {
            true => Ok(hosted),
            false => Err(hosted),
        }
    })
    .await;
    assert_eq!(
        hosted["config"]["url"],
        "https://hosted.invalid/mcp?api_key=***&plan=***"
    );
    assert_eq!(
        hosted["config"]["headers"]["Authorization"],
        "Bearer ${secret:api_key}"
    );
    for path in [
        "/api/backends",
        "/api/backends/labelled",
        "/api/backends/hosted",
    ] {
        let answer = serve.api_get(path).await.to_string();
        assert!(!answer.contains(value), "{path}: {answer}");
    }
    let (_, events) = events_until_config(&serve).await;
    assert!(!events.contains(value), "{events}");
    let log = serve.log();
    let logged: Vec<&str> = log.lines().filter(|line| line.contains(value)).collect();
    assert!(logged.is_empty(), "the log never has it: {logged:?}");

    // `check` says where the secret in `args` can be seen, and where it belongs.
    let output = Command::new(switchboard_exe())
        .args(["check", "--config"])
        .arg(serve.config_path())
        .env("SWITCHBOARD_KEYCHAIN_SERVICE", &service)
        .output()
        .expect("check runs");
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        said.contains(
            "warning: servers.labelled.args: a secret in `args` is visible to every user of \
             this machine in the process list; give it to the server in `env` instead"
        ),
        "{said}"
    );
    assert!(!said.contains(value), "{said}");
    let (deleted, said) = secret_command(&["delete", "api_key"], "", &env);
    assert!(deleted, "{said}");
}

/// The event stream's text up to its first `config` event, which follows every `status`.
async fn events_until_config(serve: &ServeProcess) -> (u16, String) {
    let mut response = serve
        .client()
        .get(serve.http_url("/api/events"))
        .bearer_auth(SERVE_TOKEN)
        .send()
        .await
        .expect("the stream opens");
    let status = response.status().as_u16();
    let mut seen = String::new();
    while !seen.contains("event: config") {
        let chunk = tokio::time::timeout(EVENT_LIMIT, response.chunk())
            .await
            .expect("events in time")
            .expect("a chunk")
            .expect("the stream stays open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    (status, seen)
}
