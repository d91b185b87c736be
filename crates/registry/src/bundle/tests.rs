use std::io::Write as _;

use super::*;

/// A zip of `files` (name, bytes), deflated.
fn zip_of(files: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in files {
        writer.start_file(*name, options).unwrap();
        writer.write_all(bytes).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

const MANIFEST: &str = r#"{"server": {"mcp_config": {"command": "python3",
    "args": ["${__dirname}/main.py"], "env": {"MODE": "${__dirname}"}}}}"#;

/// What a bundles folder holds, by name.
fn listing(bundles: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(bundles)
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn a_bundle_unpacks_into_its_folder_and_replaces_the_one_before_whole() {
    let dir = tempfile::tempdir().unwrap();
    let bundles = dir.path().join("bundles");
    let first = zip_of(&[
        ("manifest.json", MANIFEST.into()),
        ("old.txt", b"old".to_vec()),
    ]);
    extract(&first, &bundles, "b").unwrap();
    let second = zip_of(&[
        ("manifest.json", MANIFEST.into()),
        ("main.py", b"print()".to_vec()),
    ]);
    extract(&second, &bundles, "b").unwrap();
    assert_eq!(listing(&bundles), ["b"]);
    assert!(bundles.join("b/main.py").exists());
    assert!(!bundles.join("b/old.txt").exists(), "nothing of the first");
}

#[test]
fn a_zip_bomb_is_refused_as_it_unpacks_and_nothing_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let bundles = dir.path().join("bundles");
    // 64 MiB of zeros packs to about 64 KiB: a thousand to one.
    let bomb = zip_of(&[
        ("manifest.json", MANIFEST.into()),
        ("zeros", vec![0; 64 * 1024 * 1024]),
    ]);
    assert!(bomb.len() < 256 * 1024, "{}", bomb.len());
    let error = extract(&bomb, &bundles, "bomb").unwrap_err().to_string();
    assert!(
        error.contains("zeros unpacks to more than 200 times its packed size"),
        "{error}"
    );
    assert!(error.contains("nothing of it is kept"), "{error}");
    assert_eq!(
        listing(&bundles),
        Vec::<String>::new(),
        "no half-unpacked folder"
    );
}

#[test]
fn a_bundle_of_too_many_files_is_refused_before_any_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let bundles = dir.path().join("bundles");
    let files: Vec<(String, Vec<u8>)> = (0..=MAX_ENTRIES)
        .map(|index| (format!("f/{index}"), Vec::new()))
        .collect();
    let borrowed: Vec<(&str, Vec<u8>)> = files
        .iter()
        .map(|(name, bytes)| (name.as_str(), bytes.clone()))
        .collect();
    let many = zip_of(&borrowed);
    let error = extract(&many, &bundles, "many").unwrap_err().to_string();
    assert!(
        error.contains("it holds 10001 entries; a bundle may hold 10000 at most"),
        "{error}"
    );
    assert_eq!(listing(&bundles), Vec::<String>::new());
}

#[test]
fn a_path_outside_the_bundle_is_refused_and_what_was_unpacked_goes() {
    let dir = tempfile::tempdir().unwrap();
    let bundles = dir.path().join("bundles");
    let escaping = zip_of(&[
        ("manifest.json", MANIFEST.into()),
        ("../../escaped", b"x".to_vec()),
    ]);
    let error = extract(&escaping, &bundles, "e").unwrap_err().to_string();
    assert!(error.contains("a path outside itself"), "{error}");
    assert_eq!(listing(&bundles), Vec::<String>::new());
    assert!(!dir.path().join("escaped").exists());
}

#[test]
fn how_a_bundle_runs_is_read_from_its_manifest_without_unpacking() {
    let bytes = zip_of(&[("manifest.json", MANIFEST.into())]);
    let folder = Path::new("/data/bundles/b");
    assert_eq!(
        launch_of(&bytes, folder).unwrap(),
        EntryLaunch::Command {
            command: "python3".into(),
            args: vec!["/data/bundles/b/main.py".into()],
            env: [("MODE".to_owned(), "/data/bundles/b".to_owned())].into(),
        }
    );
    let steering = zip_of(&[(
        "manifest.json",
        r#"{"server": {"mcp_config": {"command": "node", "env": {"NODE_OPTIONS": "--require /x"}}}}"#.into(),
    )]);
    let error = launch_of(&steering, folder).unwrap_err().to_string();
    assert!(error.contains("NODE_OPTIONS steers a loader"), "{error}");
}

#[test]
fn a_bundle_on_this_machine_is_fetched_only_for_a_source_on_it() {
    let local = "http://127.0.0.1:9/files/a.mcpb";
    assert!(origin_problem(local, "http://127.0.0.1:8").is_none());
    assert!(origin_problem(local, "built-in").is_some());
    let refused = origin_problem(local, "https://registry.example.com").unwrap();
    assert!(
        refused.contains("its source https://registry.example.com is not"),
        "{refused}"
    );
    assert!(origin_problem("http://[::1]:9/a.mcpb", "https://registry.example.com").is_some());
    assert!(
        origin_problem(
            "https://cdn.example.com/a.mcpb",
            "https://registry.example.com"
        )
        .is_none()
    );
}
