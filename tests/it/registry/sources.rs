//! What a source may and may not do: one that fails is reported while its cache still answers,
//! a hostile one's entries are refused with nothing left behind, and a name is proved only by
//! the official registry.

use serde_json::{Value, json};

use super::{add_confirmed, backend_names, cli, hostile_source, serve_with_source, source};
use crate::support::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_source_is_reported_and_the_cache_still_answers() {
    let good = source(&[]);
    let service = keychain_service();
    let serve = serve_with_source(&good.field("url"), &service);
    let (ok, stdout, _) = cli(&serve, &service, &["search", "time"], "");
    assert!(
        ok && stdout.contains("io.github.modelcontextprotocol/server-time@2026.10.19"),
        "{stdout}"
    );
    let stats = |fixture: &Fixture| {
        let url = format!("{}/_stats", fixture.field("url"));
        async move {
            let stats: Value = reqwest::get(url).await.unwrap().json().await.unwrap();
            stats["requests"]["/v0.1/servers"].as_u64().unwrap_or(0)
        }
    };
    let served = stats(&good).await;
    let (ok, stdout, _) = cli(&serve, &service, &["search", "everything"], "");
    assert!(
        ok && stdout.contains("server-everything@2026.8.31"),
        "{stdout}"
    );
    assert_eq!(
        stats(&good).await,
        served,
        "a search within the hour is answered from the cache"
    );

    // Taken down at the source: a refresh (`updated_since`) drops it.
    let client = reqwest::Client::new();
    let set = client
        .post(format!("{}/_set_status", good.field("url")))
        .json(&json!({"name": "io.github.modelcontextprotocol/server-time", "version": "2026.10.19", "status": "deleted"}))
        .send()
        .await
        .unwrap();
    assert!(set.status().is_success());
    let (_, stdout, _) = cli(&serve, &service, &["search", "time", "--refresh"], "");
    assert!(
        stdout.contains("server-time@2026.8.18"),
        "the older release is the newest now: {stdout}"
    );
    assert!(!stdout.contains("2026.10.19"), "{stdout}");

    // The source now answers garbage, then errors: said, and its cache still searched.
    for mode in ["garbage", "fail"] {
        client
            .post(format!("{}/_mode", good.field("url")))
            .json(&json!({"mode": mode}))
            .send()
            .await
            .unwrap();
        let (ok, stdout, stderr) =
            cli(&serve, &service, &["search", "everything", "--refresh"], "");
        assert!(
            ok && stdout.contains("server-everything@2026.8.31"),
            "{stdout}"
        );
        let said = match mode {
            "garbage" => "answered something that is not the registry API",
            _ => "answered 500",
        };
        assert!(stderr.contains(said), "{mode}: {stderr}");
        assert!(
            !stdout.contains(said),
            "a warning is not a result: {stdout}"
        );
    }
    // A source the config does not list is never read at a request's word.
    let unlisted = serve
        .client()
        .get(serve.http_url("/api/registry/search?q=x&source=http://127.0.0.1:9"))
        .bearer_auth(SERVE_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(unlisted.status(), 400);
    assert!(
        unlisted
            .text()
            .await
            .unwrap()
            .contains("is not one of the config's registry sources")
    );
    drop(serve);

    // A source that never answers is given up on and said, the others answer, and it is left
    // alone for a while: the next search does not wait for it again.
    let hanging = source(&["--mode", "hang"]);
    let serve = ServeOptions::new(&format!(
        "[registry]\nsources = [{:?}, {:?}]\n",
        good.field("url"),
        hanging.field("url")
    ))
    .env("SWITCHBOARD_KEYCHAIN_SERVICE", &service)
    .start();
    let found = serve.api_get("/api/registry/search?q=fetch").await;
    assert!(
        found["sources"][1]["error"]
            .as_str()
            .unwrap()
            .contains("did not answer within"),
        "{found}"
    );
    assert_eq!(found["entries"][0]["source"], "built-in", "{found}");
    let tried = stats(&hanging).await;
    assert_eq!(tried, 1, "it was asked once");
    let again = serve.api_get("/api/registry/search?q=fetch").await;
    assert_eq!(stats(&hanging).await, tried, "not tried again at once");
    assert!(
        again["sources"][1]["error"]
            .as_str()
            .unwrap()
            .contains("did not answer within"),
        "still said: {again}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_sources_runner_options_loader_env_and_bundles_are_refused_and_nothing_is_left() {
    let marker = tempfile::tempdir().unwrap();
    let source = hostile_source(&marker.path().join("ran"));
    let service = keychain_service();
    let serve = serve_with_source(&source.field("url"), &service);
    let before = std::fs::read_to_string(serve.config_path()).unwrap();
    let hostile = |name: &str| format!("io.github.switchboard-tests/hostile-{name}");
    let cases: &[(&str, u16, &str, &str)] = &[
        (
            "npm-registry",
            400,
            "not_installable",
            "passes \"--registry\" to npx",
        ),
        (
            "uvx-index",
            400,
            "not_installable",
            "passes \"--index-url\" to uvx",
        ),
        (
            "docker-host",
            400,
            "not_installable",
            "passes \"--privileged\" to docker",
        ),
        (
            "loader-env",
            400,
            "not_installable",
            "LD_PRELOAD steers a loader or a runner",
        ),
        (
            "userinfo",
            400,
            "not_installable",
            "names a user or password before its host",
        ),
        (
            "redirect",
            400,
            "refused",
            "which is not https; only https redirects are followed",
        ),
    ];
    for (name, status, code, said) in cases {
        let body = json!({"name": hostile(name)}).to_string();
        let (got, answer) = serve.api_post_body("/api/registry/add", &body).await;
        assert_eq!(
            (got, answer["code"].as_str().unwrap_or("")),
            (*status, *code),
            "{name}: {answer}"
        );
        assert!(
            answer["message"].as_str().unwrap().contains(said),
            "{name}: {answer}"
        );
        // Said the same way on the Add page, before anyone tries.
        let found = serve
            .api_get(&format!("/api/registry/search?q={}", hostile(name)))
            .await;
        if *code == "not_installable" {
            assert_eq!(found["entries"][0]["installable"], false, "{found}");
            assert!(
                found["entries"][0]["why_not"]
                    .as_str()
                    .unwrap()
                    .contains(said),
                "{found}"
            );
        }
    }
    // The bomb and the 20,000 files pass the plan (their digests match, their manifests read)
    // and are refused as they unpack, leaving nothing.
    for (name, said) in [
        ("bomb", "unpacks to more than 200 times its packed size"),
        (
            "many",
            "it holds 20001 entries; a bundle may hold 10000 at most",
        ),
    ] {
        let (plan, status, answer) = add_confirmed(&serve, json!({"name": hostile(name)})).await;
        assert_eq!(plan["launch"]["kind"], "command", "{plan}");
        assert_eq!(
            (status, answer["code"].as_str().unwrap()),
            (400, "refused"),
            "{answer}"
        );
        assert!(
            answer["message"].as_str().unwrap().contains(said),
            "{answer}"
        );
        let bundles = serve.dir().join("data/bundles");
        let left: Vec<String> = std::fs::read_dir(&bundles)
            .map(|entries| {
                entries
                    .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        assert!(left.is_empty(), "nothing half-unpacked: {left:?}");
    }
    assert_eq!(
        std::fs::read_to_string(serve.config_path()).unwrap(),
        before,
        "nothing written"
    );
    assert!(backend_names(&serve).await.is_empty(), "nothing started");
    assert!(!marker.path().join("ran").exists());

    // The entries dated in the future do not become the next refresh's `updated_since`.
    let cache_dir = serve.dir().join("data/registry");
    let caches: Vec<Value> = std::fs::read_dir(&cache_dir)
        .unwrap()
        .map(|entry| {
            serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap()
        })
        .collect();
    let cache = caches
        .iter()
        .find(|cache| cache["url"] == source.field("url"))
        .unwrap_or_else(|| panic!("{caches:?}"));
    let newest = cache["newest"].as_str().unwrap();
    let year: u32 = newest[..4].parse().unwrap();
    assert!(year < 2100, "not the future: {newest}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_name_is_verified_only_by_the_official_registry_whatever_a_source_says() {
    let official = source(&[]);
    let marker = tempfile::tempdir().unwrap();
    let other = hostile_source(&marker.path().join("ran"));
    let service = keychain_service();
    // The other source comes first, so its entries are the ones shown.
    let serve = ServeOptions::new(&format!(
        "[registry]\nsources = [{:?}, {:?}]\n",
        other.field("url"),
        official.field("url")
    ))
    .env("SWITCHBOARD_KEYCHAIN_SERVICE", &service)
    .env("SWITCHBOARD_OFFICIAL_REGISTRY", official.field("url"))
    .start();
    let found = serve.api_get("/api/registry/search?q=").await;
    let entry = |name: &str| {
        found["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|entry| entry["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name}: {found}"))
    };
    // Its own `_meta` forged: the official registry does not list the name.
    let forged = entry("io.github.modelcontextprotocol/server-filesystem");
    assert_eq!(forged["source"], other.field("url"));
    assert_eq!(forged["verified"], false, "{forged}");
    // The official registry lists the same package under the same name.
    let time = entry("io.github.modelcontextprotocol/server-time");
    assert_eq!(time["source"], other.field("url"));
    assert_eq!(time["verified"], true, "{time}");
    let hostile = entry("io.github.switchboard-tests/hostile-npm-registry");
    assert_eq!(hostile["verified"], false, "{hostile}");
    // The CLI says the same.
    let (_, stdout, _) = cli(&serve, &service, &["search", "server-filesystem"], "");
    assert!(
        stdout
            .contains("io.github.modelcontextprotocol/server-filesystem@1.0.0 [name not verified]"),
        "{stdout}"
    );
}
