use super::*;
use entry::Record;

fn records() -> Vec<Record> {
    serde_json::from_str(include_str!("../../../tests/registry/entries.json")).unwrap()
}

fn loaded(records: Vec<Record>) -> Loaded {
    Loaded {
        caches: vec![
            SourceCache {
                url: "http://127.0.0.1:1".into(),
                refreshed_at: 1,
                newest: None,
                failed: None,
                full_read_at: 1,
                records,
            },
            SourceCache::built_in(),
        ],
        reports: Vec::new(),
    }
}

#[test]
fn search_finds_the_newest_of_each_server_and_never_a_deleted_one() {
    let loaded = loaded(records());
    let found: Vec<(&str, &str)> = loaded
        .search("everything")
        .into_iter()
        .map(|(_, r)| (r.server.name.as_str(), r.server.version.as_str()))
        .collect();
    assert_eq!(
        found[0],
        (
            "io.github.modelcontextprotocol/server-everything",
            "2026.8.31"
        ),
        "{found:?}"
    );
    assert!(
        loaded.search("taken-down").is_empty(),
        "a deleted entry is never found"
    );
    let time: Vec<&str> = loaded
        .search("TIME zone")
        .into_iter()
        .map(|(_, r)| r.server.name.as_str())
        .collect();
    assert_eq!(time, ["io.github.modelcontextprotocol/server-time"]);
    // The built-in set fills in what the source lacks, after it.
    let fetch = loaded.search("fetch");
    assert_eq!(fetch[0].0.url, source::BUILT_IN);
}

#[test]
fn an_entry_is_found_by_version_or_as_its_newest() {
    let loaded = loaded(records());
    let name = "io.github.modelcontextprotocol/server-time";
    assert_eq!(
        loaded.find(name, None).unwrap().1.server.version,
        "2026.10.19"
    );
    assert_eq!(
        loaded
            .find(name, Some("2026.8.18"))
            .unwrap()
            .1
            .server
            .version,
        "2026.8.18"
    );
    assert!(loaded.find(name, Some("9.9.9")).is_none());
    let latest = loaded
        .latest_for(None, Some(("pypi", "mcp-server-time")))
        .unwrap();
    assert_eq!(latest.server.version, "2026.10.19");
}

#[test]
fn versions_compare_part_by_part() {
    use std::cmp::Ordering::*;
    assert_eq!(compare_versions("2026.10.1", "2026.9.30"), Greater);
    assert_eq!(compare_versions("1.7.2", "1.7.3"), Less);
    assert_eq!(compare_versions("1.0.0-rc1", "1.0.0"), Less);
    assert_eq!(compare_versions("1.0", "1.0.0"), Equal);
}

#[test]
fn the_built_in_set_reads_and_every_entry_can_be_added() {
    let built_in = SourceCache::built_in();
    assert!(built_in.records.len() >= 5);
    for record in &built_in.records {
        assert!(
            plan::choose(&record.server).is_ok(),
            "{}",
            record.server.name
        );
        assert!(record.is_latest());
    }
}

#[test]
fn a_cache_on_disk_reads_back_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let url = "http://127.0.0.1:1";
    let cache = SourceCache {
        url: url.into(),
        refreshed_at: platform::clock::unix_millis(SystemTime::now()),
        newest: Some("2026-10-19T00:00:00Z".into()),
        failed: None,
        full_read_at: 1,
        records: records(),
    };
    cache.save(dir.path()).unwrap();
    let read = SourceCache::load(dir.path(), url);
    assert_eq!(read.records.len(), cache.records.len());
    assert!(read.is_fresh(SystemTime::now()));
    assert_eq!(
        serde_json::to_value(&read.records).unwrap(),
        serde_json::to_value(&cache.records).unwrap()
    );
    assert!(
        SourceCache::load(dir.path(), "http://127.0.0.1:2")
            .records
            .is_empty()
    );
}

#[test]
fn a_source_that_failed_is_left_alone_for_a_while_then_tried_again() {
    let now = SystemTime::now();
    let millis = platform::clock::unix_millis(now);
    let mut cache = SourceCache {
        url: "http://127.0.0.1:1".into(),
        ..SourceCache::default()
    };
    assert!(!cache.is_fresh(now), "never read");
    cache.failed = Some((millis - 1_000, "down".into()));
    assert!(
        cache.is_fresh(now),
        "failed a second ago: not tried again yet"
    );
    cache.failed = Some((
        millis - source::RETRY_AFTER.as_millis() as u64 - 1,
        "down".into(),
    ));
    assert!(!cache.is_fresh(now), "failed long enough ago: tried again");
}

#[test]
fn a_name_is_verified_only_by_the_official_registry() {
    let official = official_url();
    let record = |name: &str, package: &str, meta: bool| -> Record {
        let mut value = serde_json::json!({"server": {"name": name, "version": "1.0.0",
            "packages": [{"registryType": "npm", "identifier": package, "version": "1.0.0"}]}});
        if meta {
            value["_meta"] = serde_json::json!({"io.modelcontextprotocol.registry/official":
                {"status": "active", "isLatest": true}});
        }
        serde_json::from_value(value).unwrap()
    };
    let cache = |url: &str, records: Vec<Record>| SourceCache {
        url: url.into(),
        records,
        ..SourceCache::default()
    };
    let loaded = Loaded {
        caches: vec![
            cache(
                "http://127.0.0.1:1",
                vec![
                    record("io.github.a/real", "real-pkg", true),
                    record("io.github.a/forged", "evil-pkg", true),
                    record("io.github.a/unlisted", "x", true),
                ],
            ),
            cache(
                &official,
                vec![
                    record("io.github.a/real", "real-pkg", true),
                    record("io.github.a/forged", "real-pkg", true),
                ],
            ),
        ],
        reports: Vec::new(),
    };
    let other = &loaded.caches[0];
    // Another source's `_meta` says nothing: only the official registry listing the same name
    // with the same package does.
    assert!(loaded.is_verified(other, &other.records[0]));
    assert!(
        !loaded.is_verified(other, &other.records[1]),
        "another package under the name"
    );
    assert!(
        !loaded.is_verified(other, &other.records[2]),
        "a name the official one lacks"
    );
    let official_cache = &loaded.caches[1];
    assert!(loaded.is_verified(official_cache, &official_cache.records[0]));
    let alone = Loaded {
        caches: vec![cache(
            "http://127.0.0.1:1",
            vec![record("io.github.a/real", "real-pkg", true)],
        )],
        reports: Vec::new(),
    };
    assert!(!alone.is_verified(&alone.caches[0], &alone.caches[0].records[0]));
}
