use super::*;
use crate::registry::entry::Record;

/// The entries of the test source (real `server.json` entries; see tests/registry/README.md).
fn entry(name: &str, version: &str) -> ServerJson {
    let records: Vec<Record> =
        serde_json::from_str(include_str!("../../../tests/registry/entries.json")).unwrap();
    records
        .into_iter()
        .find(|r| r.server.name == name && r.server.version == version)
        .unwrap_or_else(|| panic!("no entry {name}@{version}"))
        .server
}

fn given(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn an_npm_entry_runs_its_exact_release_through_npx_with_its_arguments() {
    let server = entry(
        "io.github.modelcontextprotocol/server-everything",
        "2026.8.31",
    );
    let choice = choose(&server).unwrap();
    assert_eq!(choice, Choice::Package(0), "the stdio package comes first");
    let values = given(&[]);
    let derived = derive(
        &server,
        choice,
        &Values {
            given: &values,
            server: "everything",
        },
    )
    .unwrap();
    assert_eq!(
        derived.launch,
        Launch::Command {
            command: "npx".into(),
            args: vec![
                "-y".into(),
                "@modelcontextprotocol/server-everything@2026.8.31".into(),
                "stdio".into()
            ],
            env: BTreeMap::new(),
        }
    );
    assert_eq!(derived.version, "2026.8.31");
    assert_eq!(
        derived.package,
        Some((
            "npm".into(),
            "@modelcontextprotocol/server-everything".into()
        ))
    );
}

#[test]
fn a_pypi_entry_runs_through_uvx_pinned_with_double_equals() {
    let server = entry("io.github.modelcontextprotocol/server-time", "2026.10.19");
    let values = given(&[]);
    let derived = derive(
        &server,
        choose(&server).unwrap(),
        &Values {
            given: &values,
            server: "time",
        },
    )
    .unwrap();
    let Launch::Command { command, args, .. } = derived.launch else {
        panic!()
    };
    assert_eq!(
        (command.as_str(), args),
        ("uvx", vec!["mcp-server-time==2026.10.19".to_owned()])
    );
}

#[test]
fn secret_inputs_go_to_the_keychain_and_the_config_names_them() {
    let server = entry("io.github.domdomegg/airtable-mcp-server", "1.7.3");
    let choice = choose(&server).unwrap();
    let specs = inputs(&server, choice);
    assert_eq!(specs.len(), 1);
    assert!(specs[0].required && specs[0].secret, "{specs:?}");
    let none = given(&[]);
    assert_eq!(
        derive(
            &server,
            choice,
            &Values {
                given: &none,
                server: "airtable"
            }
        ),
        Err(PlanError::MissingInputs(vec!["AIRTABLE_API_KEY".into()]))
    );
    let key = given(&[("AIRTABLE_API_KEY", "pat123.${abc}")]);
    let derived = derive(
        &server,
        choice,
        &Values {
            given: &key,
            server: "airtable",
        },
    )
    .unwrap();
    let Launch::Command { env, .. } = &derived.launch else {
        panic!()
    };
    assert_eq!(
        env["AIRTABLE_API_KEY"],
        "${secret:airtable_AIRTABLE_API_KEY}"
    );
    assert_eq!(
        derived.secrets,
        vec![(
            "airtable_AIRTABLE_API_KEY".to_owned(),
            "pat123.${abc}".to_owned()
        )],
        "the value is kept as typed, never in the config"
    );
}

#[test]
fn a_remote_fills_its_url_variables_and_keeps_a_secret_header_in_the_keychain() {
    let server = entry("io.github.switchboard-tests/remote-echo", "1.0.0");
    let choice = choose(&server).unwrap();
    assert_eq!(choice, Choice::Remote(0));
    let keys: Vec<String> = inputs(&server, choice).into_iter().map(|s| s.key).collect();
    assert_eq!(keys, ["port", "X-Api-Key"]);
    let values = given(&[("port", "4100"), ("X-Api-Key", "k-1")]);
    let derived = derive(
        &server,
        choice,
        &Values {
            given: &values,
            server: "echo",
        },
    )
    .unwrap();
    assert_eq!(
        derived.launch,
        Launch::Remote {
            url: "http://127.0.0.1:4100/mcp".into(),
            transport: "streamable-http".into(),
            headers: [(
                "X-Api-Key".to_owned(),
                "${secret:echo_X-Api-Key}".to_owned()
            )]
            .into(),
        }
    );
    let missing = given(&[("X-Api-Key", "k-1")]);
    assert_eq!(
        derive(
            &server,
            choice,
            &Values {
                given: &missing,
                server: "echo"
            }
        ),
        Err(PlanError::MissingInputs(vec!["port".into()]))
    );
}

#[test]
fn shell_metacharacters_stay_one_literal_argument() {
    let server = entry(
        "io.github.modelcontextprotocol/server-everything",
        "2026.7.4",
    );
    let values = given(&[]);
    let derived = derive(
        &server,
        choose(&server).unwrap(),
        &Values {
            given: &values,
            server: "m",
        },
    )
    .unwrap();
    let Launch::Command { args, .. } = derived.launch else {
        panic!()
    };
    assert_eq!(
        args[3..],
        [
            "--label".to_owned(),
            "a; rm -rf ~ && $(id) `x` | y > z".to_owned()
        ]
    );
}

#[test]
fn what_cannot_run_is_said_for_each_package_and_remote() {
    let nuget = entry("io.github.domdomegg/time-mcp-nuget", "1.0.8");
    assert!(
        choose(&nuget).unwrap_err().contains("NuGet package"),
        "{:?}",
        choose(&nuget)
    );
    let smithery = entry("kbag", "1.0.0");
    assert!(
        choose(&smithery)
            .unwrap_err()
            .contains("`smithery`, a registry Switchboard does not know")
    );
    let mut loose = entry("io.github.modelcontextprotocol/server-time", "2026.10.19");
    for version in ["latest", "^2026.10.0", ">=1", ""] {
        loose.packages[0].version = Some(version.to_owned());
        let why = choose(&loose).unwrap_err();
        assert!(why.contains("names no exact version"), "{why}");
    }
    loose.packages[0].version = Some("1.0.0".into());
    loose.packages[0].identifier = "--index-url=https://evil.example".into();
    assert!(
        choose(&loose)
            .unwrap_err()
            .contains("is not an pypi package name")
    );
    let mut http = entry(
        "io.github.modelcontextprotocol/server-everything",
        "2026.8.31",
    );
    http.packages.remove(0);
    assert!(
        choose(&http)
            .unwrap_err()
            .contains("serves over `streamable-http`")
    );
    let mut remote = entry("io.decisionrules/mcp-server", "1.0.0");
    assert_eq!(choose(&remote), Ok(Choice::Remote(0)));
    remote.remotes[0].url = "http://api.decisionrules.io/mcp".into();
    assert!(choose(&remote).unwrap_err().contains("not on https"));
    remote.remotes[0].kind = "websocket".into();
    assert!(
        choose(&remote)
            .unwrap_err()
            .contains("`websocket`, a transport")
    );
}

#[test]
fn an_image_runs_pinned_by_digest_or_exact_tag_only() {
    let mut airtable = entry("io.github.domdomegg/airtable-mcp-server", "1.7.3");
    airtable.packages.retain(|p| p.registry_type == "oci");
    let key = given(&[("AIRTABLE_API_KEY", "k")]);
    let derived = derive(
        &airtable,
        choose(&airtable).unwrap(),
        &Values {
            given: &key,
            server: "a",
        },
    )
    .unwrap();
    let Launch::Command { command, args, env } = derived.launch else {
        panic!()
    };
    assert_eq!(command, "docker");
    assert_eq!(
        args,
        [
            "run",
            "-i",
            "--rm",
            "-e",
            "AIRTABLE_API_KEY",
            "docker.io/domdomegg/airtable-mcp-server:1.7.3"
        ]
    );
    assert_eq!(env["AIRTABLE_API_KEY"], "${secret:a_AIRTABLE_API_KEY}");
    assert_eq!(derived.version, "1.7.3");
    airtable.packages[0].identifier = "docker.io/domdomegg/airtable-mcp-server:latest".into();
    assert!(choose(&airtable).unwrap_err().contains("not pinned"));
    airtable.packages[0].identifier = format!("ghcr.io/x/y@sha256:{}", "a".repeat(64));
    assert!(choose(&airtable).is_ok());
}

#[test]
fn secret_names_keep_to_the_characters_the_keychain_takes() {
    assert_eq!(
        secret_name("everything", "API KEY/1"),
        "everything_API_KEY_1"
    );
    assert!(crate::secrets::is_valid_name(&secret_name(
        &"s".repeat(64),
        "k"
    )));
}
