//! What an add never does: take a bad entry, start or write anything before its plan is
//! confirmed, or write a secret anywhere but the keychain.

use std::time::Duration;

use serde_json::{Value, json};

use super::{
    INSTALL_LIMIT, add_confirmed, backend_names, cli, hostile_source, serve_with_source, source,
    wait_version,
};
use crate::support::*;

#[tokio::test(flavor = "multi_thread")]
async fn bad_entries_are_refused_saying_why_and_nothing_is_written() {
    let source = source(&[]);
    let service = keychain_service();
    let serve = serve_with_source(&source.field("url"), &service);
    let before = std::fs::read_to_string(serve.config_path()).unwrap();
    let cases: &[(&str, u16, &str, &str)] = &[
        (
            r#"{"name": "io.github.domdomegg/time-mcp-nuget"}"#,
            400,
            "not_installable",
            "NuGet package",
        ),
        (
            r#"{"name": "kbag"}"#,
            400,
            "not_installable",
            "`smithery`, a registry Switchboard does not know",
        ),
        (
            r#"{"name": "io.github.example/taken-down"}"#,
            404,
            "not_found",
            "taken down",
        ),
        (
            r#"{"name": "io.github.modelcontextprotocol/server-time", "version": "latest"}"#,
            400,
            "not_installable",
            "not an exact version",
        ),
        (
            r#"{"name": "io.github.modelcontextprotocol/server-time", "version": "^2026.8"}"#,
            400,
            "not_installable",
            "not an exact version",
        ),
        (
            r#"{"name": "io.github.modelcontextprotocol/server-memory"}"#,
            400,
            "refused",
            "belongs to \"io.github.modelcontextprotocol/server-everything\"",
        ),
        (
            r#"{"name": "io.github.switchboard-tests/bad-digest"}"#,
            400,
            "refused",
            "is not the one its entry names",
        ),
        (
            r#"{"name": "io.github.domdomegg/airtable-mcp-server"}"#,
            400,
            "missing_required_input",
            "AIRTABLE_API_KEY",
        ),
        (
            r#"{"name": "io.github.modelcontextprotocol/server-time", "server": "a b"}"#,
            400,
            "refused",
            "cannot name a server",
        ),
        (
            r#"{"name": "nobody/none"}"#,
            404,
            "not_found",
            "no source lists nobody/none",
        ),
        (
            r#"{"name": "x", "command": "rm -rf ~"}"#,
            400,
            "bad_request",
            "unknown field `command`",
        ),
    ];
    for (body, status, code, said) in cases {
        let (got, answer) = serve.api_post_body("/api/registry/add", body).await;
        assert_eq!(
            (got, answer["code"].as_str().unwrap()),
            (*status, *code),
            "{body}: {answer}"
        );
        assert!(
            answer["message"].as_str().unwrap().contains(said),
            "{body}: {answer}"
        );
    }
    let (_, missing) = serve
        .api_post_body(
            "/api/registry/add",
            r#"{"name": "io.github.domdomegg/airtable-mcp-server"}"#,
        )
        .await;
    assert_eq!(missing["missing"], json!(["AIRTABLE_API_KEY"]));
    assert_eq!(
        std::fs::read_to_string(serve.config_path()).unwrap(),
        before,
        "nothing written"
    );
    assert!(
        !serve.dir().join("data/bundles/bad-digest").exists(),
        "nothing unpacked"
    );

    // Shell metacharacters in an entry's arguments reach the server's argv as one literal
    // argument each: no shell ever reads them.
    let (_, status, added) = add_confirmed(
        &serve,
        json!({"name": "io.github.modelcontextprotocol/server-everything", "version": "2026.7.4", "server": "meta"}),
    )
    .await;
    assert_eq!(status, 200, "{added}");
    wait_version(&serve, "meta", "2026.7.4").await;
    let literal = "a; rm -rf ~ && $(id) `x` | y > z";
    let server_argv = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .map(|bytes| {
            bytes
                .split(|byte| *byte == 0)
                .map(|arg| String::from_utf8_lossy(arg).into_owned())
                .collect::<Vec<String>>()
        })
        .find(|argv| {
            argv.iter()
                .any(|arg| arg.ends_with("mcp-server-everything"))
                && argv.windows(2).any(|pair| pair[0] == "--label")
        });
    let argv = server_argv.expect("the server runs with its arguments");
    assert!(
        argv.windows(2)
            .any(|pair| pair[0] == "--label" && pair[1] == literal),
        "{argv:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_registry_add_starts_and_writes_nothing_before_its_plan_is_confirmed() {
    let marker_dir = tempfile::tempdir().unwrap();
    let marker = marker_dir.path().join("ran");
    let source = hostile_source(&marker);
    let service = keychain_service();
    let serve = serve_with_source(&source.field("url"), &service);
    let before = std::fs::read_to_string(serve.config_path()).unwrap();
    let body = json!({"name": "io.github.switchboard-tests/hostile-marker", "server": "marker"});

    // The plan: exactly what runs, and nothing written, unpacked or started.
    let (status, plan) = serve
        .api_post_body("/api/registry/add", &body.to_string())
        .await;
    assert_eq!(status, 200, "{plan}");
    let folder = serve.dir().join("data/bundles/marker");
    assert_eq!(plan["server"], "marker");
    assert_eq!(plan["launch"]["kind"], "command");
    assert_eq!(
        plan["launch"]["args"],
        json!([folder.join("server/main.py").display().to_string()]),
        "{plan}"
    );
    assert_eq!(
        plan["launch"]["env"]["MARKER_FILE"],
        marker.display().to_string()
    );
    let confirm = plan["confirm"].as_str().unwrap().to_owned();
    assert_eq!(confirm.len(), 64, "{plan}");
    // A second look gives the same plan, and still does nothing.
    let (_, again) = serve
        .api_post_body("/api/registry/add", &body.to_string())
        .await;
    assert_eq!(again["confirm"], confirm.as_str());
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!marker.exists(), "nothing ran");
    assert!(!folder.exists(), "nothing unpacked");
    assert!(backend_names(&serve).await.is_empty(), "nothing started");
    assert_eq!(
        std::fs::read_to_string(serve.config_path()).unwrap(),
        before
    );

    // The CLI without a terminal and without --yes shows the plan and adds nothing.
    let (ok, stdout, stderr) = cli(
        &serve,
        &service,
        &[
            "add",
            "io.github.switchboard-tests/hostile-marker",
            "--name",
            "marker",
        ],
        "y\n",
    );
    assert!(!ok, "{stderr}");
    assert!(
        stdout.contains(&format!(
            "  argument  {:?}",
            folder.join("server/main.py").display().to_string()
        )),
        "the plan is the result: {stdout}"
    );
    assert!(
        stderr.contains("nothing was added: no terminal to say yes at"),
        "{stderr}"
    );
    assert!(!marker.exists() && !folder.exists());
    assert_eq!(
        std::fs::read_to_string(serve.config_path()).unwrap(),
        before
    );

    // A confirmation of another plan commits nothing.
    let mut forged = body.clone();
    forged["confirm"] = json!("0".repeat(64));
    let (status, answer) = serve
        .api_post_body("/api/registry/add", &forged.to_string())
        .await;
    assert_eq!(
        (status, answer["code"].as_str().unwrap()),
        (409, "plan_changed"),
        "{answer}"
    );
    assert_eq!(
        std::fs::read_to_string(serve.config_path()).unwrap(),
        before
    );
    assert!(!folder.exists());

    // The plan's own confirmation adds it, and then it runs.
    let mut confirmed = body;
    confirmed["confirm"] = json!(confirm);
    let (status, added) = serve
        .api_post_body("/api/registry/add", &confirmed.to_string())
        .await;
    assert_eq!(status, 200, "{added}");
    assert_eq!(added["server"], "marker");
    eventually("the bundle to run", INSTALL_LIMIT, || async {
        match marker.exists() {
            true => Ok(()),
            false => Err("no marker yet"),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_stay_in_the_keychain_and_a_secret_in_use_is_never_written_over() {
    let marker = tempfile::tempdir().unwrap();
    let source = hostile_source(&marker.path().join("ran"));
    let service = keychain_service();
    let serve = serve_with_source(&source.field("url"), &service);

    // The entry calls its API key not secret: it is one all the same.
    let (plan, status, added) = add_confirmed(
        &serve,
        json!({"name": "io.github.switchboard-tests/hostile-plain-key", "server": "plain",
               "inputs": {"X-Api-Key": "sk-live-SECRET123"}}),
    )
    .await;
    assert_eq!(
        plan["launch"]["headers"]["X-Api-Key"], "${secret:plain_X-Api-Key}",
        "{plan}"
    );
    assert!(!plan.to_string().contains("sk-live"), "{plan}");
    assert_eq!(status, 200, "{added}");
    let config = std::fs::read_to_string(serve.config_path()).unwrap();
    assert!(!config.contains("sk-live-SECRET123"), "{config}");

    // `a` with `b_c` and `a_b` with `c` would both be a_b_c: the second gets another name, and
    // says so.
    let (_, status, first) = add_confirmed(
        &serve,
        json!({"name": "io.github.switchboard-tests/hostile-collide-one", "server": "a",
               "inputs": {"b_c": "one"}}),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["secrets"], json!(["a_b_c"]));
    let (plan, status, second) = add_confirmed(
        &serve,
        json!({"name": "io.github.switchboard-tests/hostile-collide-two", "server": "a_b",
               "inputs": {"c": "two"}}),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["secrets"], json!(["a_b_c_2"]), "{second}");
    assert!(
        plan["notes"].as_array().unwrap().iter().any(|note| note
            .as_str()
            .unwrap()
            .contains("the secret a_b_c exists already")),
        "{plan}"
    );
    let secrets = serve.api_get("/api/secrets").await;
    for name in ["a_b_c", "a_b_c_2"] {
        assert!(
            secrets["secrets"]
                .as_array()
                .unwrap()
                .iter()
                .any(|secret| secret["name"] == name && secret["set"] == true),
            "{name}: {secrets}"
        );
    }

    // A secret another server names too is neither offered nor deleted with one of them.
    let mut config = std::fs::read_to_string(serve.config_path()).unwrap();
    config.push_str(
        "\n[servers.z]\nurl = \"http://127.0.0.1:9/mcp\"\nheaders = { K = \"${secret:a_b_c}\" }\n",
    );
    std::fs::write(serve.config_path(), &config).unwrap();
    let installed = eventually("z in the config", EVENT_LIMIT, || async {
        let installed = serve.api_get("/api/registry/installed").await;
        let listed = installed.as_array().unwrap();
        match listed.iter().any(|one| one["server"] == "z") {
            true => Ok(installed),
            false => Err(installed),
        }
    })
    .await;
    let a = installed
        .as_array()
        .unwrap()
        .iter()
        .find(|one| one["server"] == "a")
        .unwrap();
    assert_eq!(a["secrets"], json!([]), "shared with z: {a}");
    let response = serve
        .client()
        .delete(serve.http_url("/api/servers/a"))
        .bearer_auth(SERVE_TOKEN)
        .header("content-type", "application/json")
        .body(r#"{"delete_secrets": ["a_b_c"]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let answer: Value = response.json().await.unwrap();
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("the secret a_b_c is named by `z` too"),
        "{answer}"
    );
    assert_eq!(
        std::fs::read_to_string(serve.config_path()).unwrap(),
        config
    );
}
