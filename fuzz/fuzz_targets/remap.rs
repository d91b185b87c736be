//! The rewriting the hub does on the data path (`crates/hub/src/rewrite.rs`): the tool name and the
//! progress token of a client's request, the progress token of a backend's progress
//! notification, and the request id of a backend's cancellation. The input is the JSON text of
//! the params.
//!
//! Invariants: nothing panics; a rewrite changes only the field it rewrites, and every other
//! value is copied byte for byte; putting the client's progress token back restores its `_meta`;
//! reading a string field agrees with serde_json.

#![no_main]

use hub::rewrite::{self, ObjectEntries, json_string};
use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The hub's own progress token for a call (`switchboard-<session>-<n>`).
const OUR_TOKEN: &str = "switchboard-0123456789abcdef0123456789abcdef-7";

fuzz_target!(|params: &str| {
    let Ok(entries) = ObjectEntries::parse(params) else {
        let raw = RawValue::from_string(params.to_owned()).ok();
        if let Some(raw) = raw {
            assert!(rewrite::replace_field(&raw, "requestId", number(1)).is_none());
        }
        return;
    };
    // serde_json refuses numbers beyond f64 (`1e400`) that the raw reading passes on as they
    // are; for those only the absence of panics is checked.
    let Ok(object) = serde_json::from_str::<Map<String, Value>>(params) else {
        let mut rewritten = entries.clone();
        rewrite::replace_progress_token(&mut rewritten, || OUR_TOKEN.to_owned());
        return;
    };
    check_string_fields(&entries, &object);

    // tools/call and prompts/get: the exposed name becomes the backend's own.
    let name = json_string("read_file \"ü\u{2028}");
    let mut renamed = entries.clone();
    renamed.set("name", name.clone());
    check_only_changed(params, &renamed.to_json(), "name", &name);

    check_progress_token(params, &entries, &object);

    // A backend's progress notification gets the client's token back, and a backend's
    // cancellation of a request it sent the client gets the hub's id for it.
    let raw = RawValue::from_string(params.to_owned()).expect("a JSON object");
    for (key, value) in [
        ("progressToken", json_string("client token \"1\"")),
        ("progressToken", number(u64::MAX)),
        ("requestId", number(42)),
    ] {
        let rewritten = rewrite::replace_field(&raw, key, value.clone()).expect("an object");
        check_only_changed(params, rewritten.get(), key, &value);
    }
});

/// The client's progress token is replaced by ours only when it sent one, and nothing else in
/// the params or their `_meta` changes; putting its token back gives its `_meta` again.
fn check_progress_token(params: &str, entries: &ObjectEntries<'_>, object: &Map<String, Value>) {
    let mut rewritten = entries.clone();
    let sent = object
        .get("_meta")
        .and_then(Value::as_object)
        .and_then(|meta| meta.get("progressToken"));
    let Some((ours, original)) =
        rewrite::replace_progress_token(&mut rewritten, || OUR_TOKEN.to_owned())
    else {
        assert!(
            sent.is_none(),
            "a progress token {sent:?} was sent but not replaced"
        );
        assert_eq!(
            rewritten.to_json(),
            entries.to_json(),
            "nothing changes without a token"
        );
        return;
    };
    assert_eq!(ours, OUR_TOKEN);
    assert_eq!(
        Some(&parse(original.get())),
        sent,
        "the client's token is kept as it was"
    );
    let old_meta = entries.get("_meta").expect("a _meta");
    let rewritten_json = rewritten.to_json();
    let rewritten_object = ObjectEntries::parse(&rewritten_json).expect("an object");
    let new_meta = rewritten_object.get("_meta").expect("a _meta");
    check_only_changed(params, &rewritten_json, "_meta", new_meta);
    check_only_changed(
        old_meta.get(),
        new_meta.get(),
        "progressToken",
        &json_string(OUR_TOKEN),
    );

    let restored = rewrite::replace_field(new_meta, "progressToken", original).expect("an object");
    assert_eq!(
        parse(restored.get()),
        parse(old_meta.get()),
        "the client's _meta again"
    );
}

/// `after` is `before` with `key` set to `value`: the same other keys, each with the same raw
/// text as the one serde_json reads from `before`.
fn check_only_changed(before: &str, after: &str, key: &str, value: &RawValue) {
    let before_entries = ObjectEntries::parse(before).expect("an object");
    let after_entries = ObjectEntries::parse(after).expect("a rewrite gives an object");
    let mut expected: Map<String, Value> = serde_json::from_str(before).expect("an object");
    expected.insert(key.to_owned(), parse(value.get()));
    let got: Map<String, Value> = serde_json::from_str(after).expect("valid JSON");
    assert_eq!(got, expected, "rewriting {key} in {before}");
    for other in expected.keys().filter(|other| *other != key) {
        assert_eq!(
            after_entries.get(other).map(RawValue::get),
            before_entries.get(other).map(RawValue::get),
            "{other} is copied byte for byte"
        );
    }
    assert_eq!(after_entries.get(key).map(RawValue::get), Some(value.get()));
}

/// `get_str` reads what serde_json reads, for every key.
fn check_string_fields(entries: &ObjectEntries<'_>, object: &Map<String, Value>) {
    for (key, value) in object {
        assert_eq!(
            entries.get_str(key).as_deref(),
            value.as_str(),
            "the string value of {key}"
        );
    }
}

fn parse(json: &str) -> Value {
    serde_json::from_str(json).expect("valid JSON")
}

fn number(n: u64) -> Box<RawValue> {
    RawValue::from_string(n.to_string()).expect("a number is valid JSON")
}
