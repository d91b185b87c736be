//! Skills (SEP-2640) from two servers through a real `serve` over real HTTP, in both eras:
//! `tests/backends/skills_server.py` serves skills as the extension's spec says, two instances
//! list one skill each under the same URI (each offered under its server's name, its files too),
//! `skills/list` merges them in config order, `skills/get` answers from the merged list (-32602
//! for a skill nobody offers), `resources/read` of a skill's files reaches the server that has
//! them with its own URI, and a file whose bytes do not match the digest its skill lists is
//! refused while the rest of that skill reads as ever. A server that lists a file without a
//! digest has that skill held as unchecked, and its files, listed as plain resources or not, are
//! not read; a file its skill does not list, and a read with a text and a blob, are refused; in
//! both eras. An entry reaches the editor as its server wrote it, numbers no double holds too.

use serde_json::{Value, json};

use crate::stateless::{post, request, send_to};
use crate::support::{
    EVENT_LIMIT, McpHttp, ServeProcess, backend_script, eventually, run_node_suite,
};
use crate::ui::{NODE_LIMIT, browser_suite};

/// The config's entry of a server `name` running `skills_server.py` with `args`.
fn entry(name: &str, args: &[&str]) -> String {
    let script = backend_script("skills_server.py")
        .to_string_lossy()
        .into_owned();
    let mut all = vec![script.as_str(), "--server", name];
    all.extend(args);
    format!("[servers.{name}]\ncommand = \"python3\"\nargs = {all:?}\n\n")
}

fn config() -> String {
    [
        entry(
            "alpha",
            &[
                "--skill",
                "pdf-processing",
                "--skill",
                "shared-notes",
                "--list-resources",
            ],
        ),
        entry(
            "beta",
            &[
                "--skill",
                "shared-notes",
                "--skill",
                "git-hygiene",
                "--tamper",
                "git-hygiene",
            ],
        ),
    ]
    .concat()
}

/// The answer to `method` with `params` in `session`: its result, or its error.
async fn ask(mcp: &McpHttp, session: &str, id: u64, method: &str, params: Value) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    let reply = mcp
        .post(Some(session), body.to_string())
        .await
        .expect("an answer");
    let messages = reply.messages().expect("JSON-RPC messages");
    messages
        .into_iter()
        .find(|message| message["id"] == id)
        .unwrap_or_else(|| panic!("no answer to {method}"))
}

fn uris(list: &Value) -> Vec<&str> {
    list["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .map(|entry| entry["uri"].as_str().expect("a uri"))
        .collect()
}

const MERGED: [&str; 4] = [
    "skill://pdf-processing/SKILL.md",
    "skill://alpha/shared-notes/SKILL.md",
    "skill://beta/shared-notes/SKILL.md",
    "skill://git-hygiene/SKILL.md",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_from_two_servers_are_listed_got_and_read_in_the_session_era() {
    let serve = ServeProcess::with_config(&config(), &["alpha", "beta"]);
    let mcp = McpHttp::new(&serve.url());
    let opening = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "skills editor", "version": "1"}}});
    let reply = mcp
        .post(None, opening.to_string())
        .await
        .expect("initialized");
    let session = reply.session.clone().expect("a session");
    let initialized = &reply.messages().expect("an answer")[0];
    assert_eq!(
        initialized["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/skills"],
        json!({}),
        "{initialized}"
    );

    let list = ask(&mcp, &session, 1, "skills/list", json!({})).await;
    assert_eq!(uris(&list["result"]), MERGED, "{list}");
    let beta_notes = &list["result"]["skills"][2];
    assert_eq!(
        beta_notes["frontmatter"]["name"], "shared-notes",
        "the name is kept"
    );
    assert_eq!(
        beta_notes["frontmatter"]["description"],
        "The shared-notes skill of beta"
    );
    assert_eq!(
        beta_notes["resources"][1]["uri"],
        "skill://beta/shared-notes/references/GUIDE.md"
    );
    assert!(
        beta_notes["resources"][1]["digest"]
            .as_str()
            .is_some_and(|digest| digest.starts_with("sha256:"))
    );

    let got = ask(&mcp, &session, 2, "skills/get", json!({"uri": MERGED[1]})).await;
    assert_eq!(
        got["result"]["skill"]["frontmatter"]["description"],
        "The shared-notes skill of alpha"
    );
    let unknown = ask(
        &mcp,
        &session,
        3,
        "skills/get",
        json!({"uri": "skill://shared-notes/SKILL.md"}),
    )
    .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    // Each file from the server that has it, said to be where the editor asked.
    for (id, uri, says) in [
        (
            4,
            "skill://alpha/shared-notes/SKILL.md",
            "description: The shared-notes skill of alpha",
        ),
        (
            5,
            "skill://beta/shared-notes/references/GUIDE.md",
            "How beta does shared-notes.",
        ),
        (6, "skill://pdf-processing/SKILL.md", "name: pdf-processing"),
        (
            7,
            "skill://git-hygiene/references/GUIDE.md",
            "How beta does git-hygiene.",
        ),
    ] {
        let read = ask(&mcp, &session, id, "resources/read", json!({"uri": uri})).await;
        let content = &read["result"]["contents"][0];
        assert_eq!(content["uri"], uri, "{read}");
        assert!(
            content["text"]
                .as_str()
                .is_some_and(|text| text.contains(says)),
            "{read}"
        );
    }
    // beta serves git-hygiene's SKILL.md with other bytes than its listing's digest.
    let tampered = ask(
        &mcp,
        &session,
        8,
        "resources/read",
        json!({"uri": MERGED[3]}),
    )
    .await;
    let said = tampered["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("is not passed on") && said.contains("not to the sha256:"),
        "{tampered}"
    );

    // What alpha lists as resources is renamed with its skill.
    let resources = mcp.result(&session, 9, "resources/list", json!({})).await;
    let listed: Vec<&str> = resources["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|resource| resource["uri"].as_str())
        .collect();
    assert_eq!(
        listed,
        [
            "skill://pdf-processing/SKILL.md",
            "skill://alpha/shared-notes/SKILL.md"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_are_listed_got_and_read_by_an_editor_of_2026_07_28() {
    let serve = ServeProcess::with_config(&config(), &["alpha", "beta"]);
    let discovered = post(
        &serve,
        &request(1, "server/discover", json!({}), json!({})),
        &[],
    )
    .await;
    assert_eq!(
        discovered.last()["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/skills"],
        json!({}),
        "{:?}",
        discovered.last()
    );
    let list = post(
        &serve,
        &request(2, "skills/list", json!({}), json!({})),
        &[],
    )
    .await;
    let result = &list.last()["result"];
    assert_eq!(uris(result), MERGED, "{result}");
    assert_eq!(result["resultType"], "complete");
    let got = post(
        &serve,
        &request(3, "skills/get", json!({"uri": MERGED[2]}), json!({})),
        &[],
    )
    .await;
    let got = &got.last()["result"];
    assert_eq!(got["skill"]["uri"], MERGED[2], "{got}");
    assert!(
        got["ttlMs"].is_number() && got["cacheScope"].is_string(),
        "{got}"
    );
    let uri = "skill://beta/shared-notes/SKILL.md";
    let read = post(
        &serve,
        &request(4, "resources/read", json!({"uri": uri}), json!({})),
        &[],
    )
    .await;
    let content = &read.last()["result"]["contents"][0];
    assert_eq!(content["uri"], uri);
    assert!(
        content["text"]
            .as_str()
            .is_some_and(|text| text.contains("skill of beta")),
        "{content}"
    );
}

/// The reproduction: `notes` lists its GUIDE.md without a digest (and serves other bytes on every
/// read), `tools` has a file it does not list (other bytes on every read) and one read with a
/// checked text beside an unchecked blob, and every SKILL.md is a plain resource too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_a_skill_does_not_vouch_for_are_never_passed_on_in_either_era() {
    let script = backend_script("skills_server.py")
        .to_string_lossy()
        .into_owned();
    let args = [
        script.as_str(),
        "--skill",
        "notes",
        "--undigested",
        "notes",
        "--skill",
        "tools",
        "--extra",
        "tools",
        "--list-resources",
    ];
    let config = format!("[servers.gamma]\ncommand = \"python3\"\nargs = {args:?}\n");
    let serve = ServeProcess::with_config(&config, &["gamma"]);
    let report = eventually("notes held", EVENT_LIMIT, || async {
        let report = serve.api_get("/api/pins").await;
        match report["held"]
            .as_array()
            .is_some_and(|held| !held.is_empty())
        {
            true => Ok(report),
            false => Err(report),
        }
    })
    .await;
    let held = report["held"].as_array().expect("held");
    assert_eq!(held.len(), 1, "{report}");
    assert_eq!(held[0]["key"], "skill:skill://notes/SKILL.md");
    assert_eq!(held[0]["reason"], "unchecked");
    assert_eq!(
        held[0]["detail"],
        "it lists skill://notes/references/GUIDE.md without a sha256:HEX digest"
    );

    let mcp = McpHttp::new(&serve.url());
    let session = mcp.open_session("skills editor").await.expect("a session");
    let list = ask(&mcp, &session, 1, "skills/list", json!({})).await;
    assert_eq!(uris(&list["result"]), ["skill://tools/SKILL.md"], "{list}");
    let resources = mcp.result(&session, 2, "resources/list", json!({})).await;
    assert_eq!(
        resources["resources"],
        json!([{"uri": "skill://tools/SKILL.md", "name": "tools", "mimeType": "text/markdown"}]),
        "a held skill's SKILL.md is not listed as a plain resource either"
    );

    let refused = [
        (
            "skill://notes/SKILL.md",
            "not a file of a skill offered here",
        ),
        (
            "skill://notes/references/GUIDE.md",
            "not a file of a skill offered here",
        ),
        (
            "skill://tools/scripts/run.sh",
            "whose entry does not list it with a digest",
        ),
        (
            "skill://tools/both.md",
            "a content item has both text and blob",
        ),
    ];
    for (id, (uri, why)) in (3..).zip(refused) {
        for again in [0, 100] {
            let read = ask(
                &mcp,
                &session,
                id + again,
                "resources/read",
                json!({"uri": uri}),
            )
            .await;
            let said = read["error"]["message"].as_str().unwrap_or_default();
            assert!(said.contains(why), "{uri}: {read}");
        }
        let read = post(
            &serve,
            &request(id, "resources/read", json!({"uri": uri}), json!({})),
            &[],
        )
        .await;
        let said = read.last()["error"]["message"].as_str().unwrap_or_default();
        assert!(said.contains(why), "{uri} (2026-07-28): {:?}", read.last());
    }
    let read = ask(
        &mcp,
        &session,
        9,
        "resources/read",
        json!({"uri": "skill://tools/SKILL.md"}),
    )
    .await;
    assert!(
        read["result"]["contents"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("name: tools")),
        "the skill it vouches for reads as ever: {read}"
    );
}

/// `numbers` is alpha's alone, `shared-notes` both servers', so renamed; each entry's frontmatter
/// and `_meta` hold `1.50`, `1e400` and integers past 2^64 as `skills_server.py --numbers`
/// writes them. The bodies are read as text: parsing them would change those numbers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_reach_the_editor_as_their_servers_wrote_them_in_both_eras() {
    let numbers = ["--numbers", "numbers", "--numbers", "shared-notes"];
    let alpha = [
        &["--skill", "numbers", "--skill", "shared-notes"][..],
        &numbers[..],
    ]
    .concat();
    let beta = [&["--skill", "shared-notes"][..], &numbers[..]].concat();
    let config = [entry("alpha", &alpha), entry("beta", &beta)].concat();
    let serve = ServeProcess::with_config(&config, &["alpha", "beta"]);
    let numbers = r#""version": 1.50, "big": 12345678901234567890, "huge": 1e400}"#;
    let meta = r#"{"n": -12345678901234567890, "tiny": 1e-400}"#;
    // Every byte as written, spaces too.
    let alone = format!(
        r#"{{"uri": "skill://numbers/SKILL.md", "frontmatter": {{"name": "numbers", "description": "The numbers skill of alpha", {numbers}, "resources": ["#
    );
    // Only the URIs rewritten; the values beside them as written.
    let renamed = format!(
        r#"{{"uri":"skill://beta/shared-notes/SKILL.md","frontmatter":{{"name": "shared-notes", "description": "The shared-notes skill of beta", {numbers},"resources":[{{"uri":"skill://beta/shared-notes/SKILL.md","#
    );
    let asked = [
        (
            1,
            "skills/list",
            json!({}),
            vec![alone.as_str(), renamed.as_str()],
        ),
        (
            2,
            "skills/get",
            json!({"uri": "skill://numbers/SKILL.md"}),
            vec![alone.as_str()],
        ),
        (
            3,
            "skills/get",
            json!({"uri": "skill://beta/shared-notes/SKILL.md"}),
            vec![renamed.as_str()],
        ),
    ];

    let mcp = McpHttp::new(&serve.url());
    let session = mcp.open_session("skills editor").await.expect("a session");
    for (id, method, params, expected) in &asked {
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let reply = mcp
            .post(Some(&session), body.to_string())
            .await
            .expect("an answer");
        for part in expected.iter().chain([&meta]) {
            assert!(
                reply.body.contains(part),
                "{method}: {part} in {}",
                reply.body
            );
        }
    }
    for (id, method, params, expected) in asked {
        let reply = send_to(&serve, "/mcp", &request(id, method, params, json!({})), &[])
            .await
            .text()
            .await
            .expect("a body");
        for part in expected.iter().chain([&meta]) {
            assert!(
                reply.contains(part),
                "{method} (2026-07-28): {part} in {reply}"
            );
        }
    }
}

#[test]
fn the_server_page_shows_its_skills_in_a_real_browser() {
    let serve = ServeProcess::with_config(&config(), &["alpha", "beta"]);
    let node = browser_suite("skills.test.mjs", &serve);
    run_node_suite(node, NODE_LIMIT, &|| serve.log());
}
