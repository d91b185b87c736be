use super::*;
use crate::entry::Record;

/// The entries of the test source (real `server.json` entries; see tests/registry/README.md).
fn entry(name: &str, version: &str) -> ServerJson {
    let records: Vec<Record> =
        serde_json::from_str(include_str!("../../../../tests/registry/entries.json")).unwrap();
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
            taken: &BTreeSet::new(),
        },
    )
    .unwrap();
    assert_eq!(
        derived.launch,
        EntryLaunch::Command {
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
            taken: &BTreeSet::new(),
        },
    )
    .unwrap();
    let EntryLaunch::Command { command, args, .. } = derived.launch else {
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
                server: "airtable",
                taken: &BTreeSet::new(),
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
            taken: &BTreeSet::new(),
        },
    )
    .unwrap();
    let EntryLaunch::Command { env, .. } = &derived.launch else {
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
            taken: &BTreeSet::new(),
        },
    )
    .unwrap();
    assert_eq!(
        derived.launch,
        EntryLaunch::Remote {
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
                server: "echo",
                taken: &BTreeSet::new(),
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
            taken: &BTreeSet::new(),
        },
    )
    .unwrap();
    let EntryLaunch::Command { args, .. } = derived.launch else {
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
        choose(&nuget)
            .unwrap_err()
            .to_string()
            .contains("NuGet package"),
        "{:?}",
        choose(&nuget)
    );
    let smithery = entry("kbag", "1.0.0");
    assert!(
        choose(&smithery)
            .unwrap_err()
            .to_string()
            .contains("`smithery`, a registry Switchboard does not know")
    );
    let mut loose = entry("io.github.modelcontextprotocol/server-time", "2026.10.19");
    for version in ["latest", "^2026.10.0", ">=1", ""] {
        loose.packages[0].version = Some(version.to_owned());
        let why = choose(&loose).unwrap_err().to_string();
        assert!(why.contains("names no exact version"), "{why}");
    }
    loose.packages[0].version = Some("1.0.0".into());
    loose.packages[0].identifier = "--index-url=https://evil.example".into();
    assert!(
        choose(&loose)
            .unwrap_err()
            .to_string()
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
            .to_string()
            .contains("serves over `streamable-http`")
    );
    let mut remote = entry("io.decisionrules/mcp-server", "1.0.0");
    assert_eq!(choose(&remote), Ok(Choice::Remote(0)));
    remote.remotes[0].url = "http://api.decisionrules.io/mcp".into();
    assert!(
        choose(&remote)
            .unwrap_err()
            .to_string()
            .contains("not on https")
    );
    remote.remotes[0].kind = "websocket".into();
    assert!(
        choose(&remote)
            .unwrap_err()
            .to_string()
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
            taken: &BTreeSet::new(),
        },
    )
    .unwrap();
    let EntryLaunch::Command { command, args, env } = derived.launch else {
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
    assert!(
        choose(&airtable)
            .unwrap_err()
            .to_string()
            .contains("not pinned")
    );
    airtable.packages[0].identifier = format!("ghcr.io/x/y@sha256:{}", "a".repeat(64));
    assert!(choose(&airtable).is_ok());
}

#[test]
fn secret_names_keep_to_the_characters_the_keychain_takes() {
    assert_eq!(
        secret_name("everything", "API KEY/1"),
        "everything_API_KEY_1"
    );
    assert!(platform::secrets::is_valid_name(&secret_name(
        &"s".repeat(64),
        "k"
    )));
}

/// server-everything's npm entry with `edit` made to its stdio package.
fn everything_with(edit: impl FnOnce(&mut Package)) -> ServerJson {
    let mut server = entry(
        "io.github.modelcontextprotocol/server-everything",
        "2026.8.31",
    );
    server.packages.truncate(1);
    edit(&mut server.packages[0]);
    server
}

fn named(flag: &str, value: Option<&str>) -> Argument {
    serde_json::from_value(serde_json::json!({"type": "named", "name": flag, "value": value}))
        .unwrap()
}

#[test]
fn runner_options_from_an_entry_are_refused_for_npx_and_uvx() {
    let registry = everything_with(|package| {
        package.runtime_arguments = vec![named("--registry", Some("http://127.0.0.1:9/evil/"))];
    });
    let why = choose(&registry).unwrap_err().to_string();
    assert!(
        why.contains("passes \"--registry\" to npx")
            && why.contains("passes no option or argument of the runner"),
        "{why}"
    );
    // A word there would be the package npx runs: refused as well.
    let word = everything_with(|package| {
        package.runtime_arguments = vec![
            serde_json::from_value(
                serde_json::json!({"type": "positional", "value": "evil-package"}),
            )
            .unwrap(),
        ];
    });
    assert!(
        choose(&word)
            .unwrap_err()
            .to_string()
            .contains("\"evil-package\" to npx")
    );
    let mut time = entry("io.github.modelcontextprotocol/server-time", "2026.10.19");
    time.packages[0].runtime_arguments = vec![named("--index-url", Some("http://evil/"))];
    assert!(
        choose(&time)
            .unwrap_err()
            .to_string()
            .contains("\"--index-url\" to uvx")
    );
}

#[test]
fn docker_takes_from_an_entry_only_env_init_and_a_volume_the_person_chooses() {
    let mut airtable = entry("io.github.domdomegg/airtable-mcp-server", "1.7.3");
    airtable.packages.retain(|p| p.registry_type == "oci");
    for (flag, value) in [
        ("--privileged", None),
        ("--network", Some("host")),
        ("--pid", Some("host")),
        ("--ipc", Some("host")),
        ("--cap-add", Some("ALL")),
        ("--device", Some("/dev/sda")),
        ("--entrypoint", Some("/bin/sh")),
        ("--security-opt", Some("seccomp=unconfined")),
        ("-v", Some("/:/host")),
        ("--volume", Some("/home:/h")),
        ("-e", Some("LD_PRELOAD=/x.so")),
        ("-e", Some("DOCKER_HOST")),
    ] {
        let mut hostile = airtable.clone();
        hostile.packages[0].runtime_arguments = vec![named(flag, value)];
        let why = choose(&hostile).unwrap_err().to_string();
        assert!(
            why.contains(&format!("passes \"{flag}\" to docker")),
            "{flag}: {why}"
        );
    }
    let mut image = airtable.clone();
    image.packages[0].identifier = "--privileged".into();
    assert!(
        choose(&image)
            .unwrap_err()
            .to_string()
            .contains("would be read as an option of docker")
    );

    // What is allowed runs as written, the volume's folder as the person typed it.
    let mut allowed = airtable.clone();
    allowed.packages[0].runtime_arguments = vec![
        named("--init", None),
        named("-e", Some("LOG_LEVEL=debug")),
        serde_json::from_value(serde_json::json!({
            "type": "named", "name": "-v", "value": "{folder}:/data",
            "variables": {"folder": {"description": "A folder to share", "isRequired": true}}
        }))
        .unwrap(),
    ];
    let choice = choose(&allowed).unwrap();
    let keys: Vec<String> = inputs(&allowed, choice)
        .into_iter()
        .map(|s| s.key)
        .collect();
    assert_eq!(keys, ["folder", "AIRTABLE_API_KEY"], "--init asks nothing");
    let values = given(&[("folder", "/home/me/notes"), ("AIRTABLE_API_KEY", "k")]);
    let derived = derive(
        &allowed,
        choice,
        &Values {
            given: &values,
            server: "a",
            taken: &BTreeSet::new(),
        },
    )
    .unwrap();
    let EntryLaunch::Command { args, .. } = derived.launch else {
        panic!()
    };
    assert_eq!(
        args[..9],
        [
            "run",
            "-i",
            "--rm",
            "--init",
            "-e",
            "LOG_LEVEL=debug",
            "-v",
            "/home/me/notes:/data",
            "-e"
        ]
    );
    let option = given(&[("folder", "--privileged"), ("AIRTABLE_API_KEY", "k")]);
    let refused = derive(
        &allowed,
        choice,
        &Values {
            given: &option,
            server: "a",
            taken: &BTreeSet::new(),
        },
    )
    .unwrap_err();
    assert!(
        refused.to_string().contains("may not start with `-`"),
        "{refused}"
    );
}

#[test]
fn environment_names_that_steer_a_loader_or_runner_are_refused() {
    for name in [
        "LD_PRELOAD",
        "ld_library_path",
        "DYLD_INSERT_LIBRARIES",
        "NODE_OPTIONS",
        "npm_config_registry",
        "NPM_CONFIG_REGISTRY",
        "UV_DEFAULT_INDEX",
        "UV_INDEX_URL",
        "PIP_INDEX_URL",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "DOCKER_HOST",
        "PATH",
        "BASH_ENV",
        "HTTPS_PROXY",
        "SWITCHBOARD_CONFIG",
    ] {
        let why = env_name_problem(name).unwrap_or_else(|| panic!("{name} accepted"));
        assert!(why.contains("steers a loader or a runner"), "{name}: {why}");
    }
    for name in ["-e", "A=B", "1X", ""] {
        assert!(
            env_name_problem(name)
                .unwrap()
                .contains("not an environment variable's name")
        );
    }
    for name in ["AIRTABLE_API_KEY", "NODE_ENV", "LOG_LEVEL", "PORT"] {
        assert_eq!(env_name_problem(name), None, "{name}");
    }
    let steering = everything_with(|package| {
        package.environment_variables = vec![Input {
            name: Some("NODE_OPTIONS".into()),
            value: Some("--require /tmp/x.js".into()),
            ..Input::default()
        }];
    });
    assert!(
        choose(&steering)
            .unwrap_err()
            .to_string()
            .contains("NODE_OPTIONS steers")
    );
}

#[test]
fn addresses_are_parsed_and_their_hosts_compared() {
    for good in [
        "https://example.com/mcp",
        "http://127.0.0.1:4100/mcp",
        "http://localhost/mcp",
        "http://[::1]:9/mcp",
        "http://127.0.0.2:9/",
    ] {
        assert_eq!(address_problem(good), None, "{good}");
    }
    for (bad, said) in [
        (
            "http://localhost:1@192.0.2.2:18903/mcp",
            "names a user or password",
        ),
        (
            "http://127.0.0.1:80@evil.example/",
            "names a user or password",
        ),
        ("https://user:pass@example.com/", "names a user or password"),
        ("http://localhost.evil.example/mcp", "not on https"),
        ("http://192.0.2.2/mcp", "not on https"),
        ("file:///etc/passwd", "not on https"),
        ("not a url", "not an address"),
    ] {
        let why = address_problem(bad).unwrap_or_else(|| panic!("{bad} accepted"));
        assert!(why.contains(said), "{bad}: {why}");
    }
    let mut remote = entry("io.decisionrules/mcp-server", "1.0.0");
    remote.remotes[0].url = "http://localhost:1@192.0.2.2:18903/mcp".into();
    assert!(
        choose(&remote)
            .unwrap_err()
            .to_string()
            .contains("names a user or password")
    );
    // A variable filled in later cannot smuggle a user in either.
    let server = entry("io.github.switchboard-tests/remote-echo", "1.0.0");
    let choice = choose(&server).unwrap();
    let values = given(&[("port", "1@192.0.2.2:9"), ("X-Api-Key", "k")]);
    let refused = derive(
        &server,
        choice,
        &Values {
            given: &values,
            server: "echo",
            taken: &BTreeSet::new(),
        },
    )
    .unwrap_err();
    assert!(
        refused.to_string().contains("names a user or password"),
        "{refused}"
    );
}

#[test]
fn a_credential_is_a_secret_whatever_the_entry_says() {
    let mut remote = entry("io.decisionrules/mcp-server", "1.0.0");
    remote.remotes[0].headers = vec![
        Input {
            name: Some("Authorization".into()),
            value: Some("Bearer {token}".into()),
            variables: [(
                "token".to_owned(),
                Input {
                    is_required: true,
                    ..Input::default()
                },
            )]
            .into(),
            ..Input::default()
        },
        Input {
            name: Some("X-Api-Key".into()),
            is_secret: false,
            is_required: true,
            ..Input::default()
        },
        Input {
            name: Some("X-Region".into()),
            ..Input::default()
        },
    ];
    let choice = choose(&remote).unwrap();
    let secret: Vec<(String, bool)> = inputs(&remote, choice)
        .into_iter()
        .map(|spec| (spec.key, spec.secret))
        .collect();
    assert_eq!(
        secret,
        [
            ("token".to_owned(), true),
            ("X-Api-Key".to_owned(), true),
            ("X-Region".to_owned(), false)
        ]
    );
    let values = given(&[
        ("token", "sk-live-SECRET123"),
        ("X-Api-Key", "k-1"),
        ("X-Region", "eu"),
    ]);
    let derived = derive(
        &remote,
        choice,
        &Values {
            given: &values,
            server: "d",
            taken: &BTreeSet::new(),
        },
    )
    .unwrap();
    let EntryLaunch::Remote { headers, .. } = &derived.launch else {
        panic!()
    };
    assert_eq!(headers["Authorization"], "Bearer ${secret:d_token}");
    assert_eq!(headers["X-Api-Key"], "${secret:d_X-Api-Key}");
    assert_eq!(headers["X-Region"], "eu");
    assert!(
        !format!("{:?}", derived.launch).contains("sk-live"),
        "{:?}",
        derived.launch
    );
}

#[test]
fn a_secret_name_in_use_is_never_taken_again() {
    let server = entry("io.github.domdomegg/airtable-mcp-server", "1.7.3");
    let choice = choose(&server).unwrap();
    let key = given(&[("AIRTABLE_API_KEY", "new")]);
    let taken: BTreeSet<String> = [
        "a_AIRTABLE_API_KEY".to_owned(),
        "a_AIRTABLE_API_KEY_2".to_owned(),
    ]
    .into();
    let derived = derive(
        &server,
        choice,
        &Values {
            given: &key,
            server: "a",
            taken: &taken,
        },
    )
    .unwrap();
    assert_eq!(
        derived.secrets,
        [("a_AIRTABLE_API_KEY_3".to_owned(), "new".to_owned())]
    );
    assert_eq!(numbered(&"s".repeat(64), 2).len(), 64);
    assert!(numbered(&"s".repeat(64), 2).ends_with("s_2"));
}
