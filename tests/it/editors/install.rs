//! `switchboard install`: each editor pointed at Switchboard in its own file, with a backup,
//! and the editors whose files are both imported from and installed into.

use super::{Home, arg, exe, fixture, names_in, read};

#[test]
fn install_points_claude_desktop_at_this_binary_with_a_backup_keeping_bom_and_crlf() {
    let home = Home::new();
    let (claude_file, original) = home.place(
        "claude_desktop_config.json",
        ".config/Claude/claude_desktop_config.json",
    );
    let folder = claude_file.parent().expect("a folder").to_path_buf();
    let installed = String::from_utf8(original.clone())
        .expect("UTF-8")
        .replace("/usr/local/bin/switchboard", &exe());
    assert_ne!(installed.as_bytes(), original);

    let dry_run = home.succeed(&["install", "claude", "--dry-run"], &[]);
    assert_eq!(
        dry_run,
        format!(
            "Dry run: nothing is written.\nClaude Desktop: would update the \"switchboard\" entry \
             in {path}:\n--- {path}\n+++ {path}\n@@ -17,5 +17,5 @@\n     \"demo\": {{ \"type\": \
             \"websocket\", \"url\": \"ws://127.0.0.1:9000/demo\" }},\n     \"switchboard\": {{\n-      \"command\": \
             \"/usr/local/bin/switchboard\",\n+      \"command\": \"{exe}\",\n       \"args\": \
             [\"connect\"]\n     }}\n",
            path = claude_file.display(),
            exe = exe()
        )
    );
    assert_eq!(std::fs::read(&claude_file).expect("read"), original);
    assert_eq!(names_in(&folder), ["claude_desktop_config.json"]);

    let report = home.succeed(&["install", "claude"], &[]);
    let names = names_in(&folder);
    assert_eq!(names.len(), 2, "{names:?}");
    let backup = folder.join(&names[1]);
    assert!(
        names[1].starts_with("claude_desktop_config.json.switchboard-backup-"),
        "{names:?}"
    );
    assert_eq!(
        report,
        format!(
            "Claude Desktop: updated the \"switchboard\" entry in {}.\nThe file as it was is in \
             {}.\nRestart Claude Desktop (or reload its MCP servers) to connect it to Switchboard.\n",
            claude_file.display(),
            backup.display()
        )
    );
    // The byte order mark, the CRLF line ends and every other key are as they were.
    assert_eq!(
        std::fs::read(&claude_file).expect("read"),
        installed.as_bytes()
    );
    assert_eq!(std::fs::read(&backup).expect("read"), original);

    let again = home.succeed(&["install", "claude"], &[]);
    assert_eq!(
        again,
        format!(
            "Claude Desktop already points at Switchboard (entry \"switchboard\" in {}); nothing \
             to do.\n",
            claude_file.display()
        )
    );
    assert_eq!(names_in(&folder), names);
    assert_eq!(
        std::fs::read(&claude_file).expect("read"),
        installed.as_bytes()
    );
}

#[test]
fn install_gives_cursor_and_vscode_our_url_and_token() {
    let home = Home::new();
    let config_path = home.path("config.toml");
    std::fs::write(
        &config_path,
        "[endpoint]\nlisten = \"127.0.0.1:18765\"\ntoken = \"${env:SB_EDITORS_TEST_TOKEN}\"\n",
    )
    .expect("write");
    let token = [("SB_EDITORS_TEST_TOKEN", "s3cret")];
    let url = "http://127.0.0.1:18765/mcp";

    // Cursor's entry for the default endpoint is replaced; comments and trailing commas stay.
    let (cursor_file, original) = home.place("cursor-mcp.json", ".cursor/mcp.json");
    let report = home.succeed(
        &["install", "cursor", "--config", arg(&config_path)],
        &token,
    );
    assert!(
        report.starts_with(&format!(
            "Cursor: updated the \"switchboard\" entry in {}.\n",
            cursor_file.display()
        )),
        "{report}"
    );
    assert_eq!(
        read(&cursor_file),
        String::from_utf8(original)
            .expect("UTF-8")
            .replace(
                "    \"switchboard\": { \"url\": \"http://127.0.0.1:8765/mcp\" },\n",
                &format!(
                    "    \"switchboard\": {{\n      \"url\": \"{url}\",\n      \"headers\": {{\n        \
                     \"Authorization\": \"Bearer s3cret\"\n      }}\n    }},\n"
                )
            )
    );

    // VS Code has no file yet: it is made, folders and all, readable by its owner only.
    let vscode_file = home.home().join(".config/Code/User/mcp.json");
    let report = home.succeed(
        &["install", "vscode", "--config", arg(&config_path)],
        &token,
    );
    assert_eq!(
        report,
        format!(
            "VS Code: added the \"switchboard\" entry in {} (a new file).\nRestart VS Code (or \
             reload its MCP servers) to connect it to Switchboard.\n",
            vscode_file.display()
        )
    );
    assert_eq!(
        read(&vscode_file),
        format!(
            "{{\n  \"servers\": {{\n    \"switchboard\": {{\n      \"type\": \"http\",\n      \
             \"url\": \"{url}\",\n      \"headers\": {{\n        \"Authorization\": \
             \"Bearer s3cret\"\n      }}\n    }}\n  }}\n}}\n"
        )
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&vscode_file).expect("stat").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);

    // A UTF-16 file stays UTF-16 with its byte order mark and CRLF line ends.
    let utf16_file = home.path("vscode-mcp.utf16.json");
    std::fs::copy(fixture("vscode-mcp.utf16.json"), &utf16_file).expect("copy");
    home.succeed(
        &[
            "install",
            "vscode",
            "--to",
            arg(&utf16_file),
            "--config",
            arg(&config_path),
        ],
        &token,
    );
    let bytes = std::fs::read(&utf16_file).expect("read");
    let units: Vec<u16> = bytes[2..]
        .chunks(2)
        .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
        .collect();
    let text = String::from_utf16(&units).expect("UTF-16");
    assert_eq!(&bytes[..2], b"\xFF\xFE");
    assert!(
        text.contains(&format!(
            "\t\t\"switchboard\": {{\r\n\t\t\t\"type\": \"http\",\r\n\t\t\t\"url\": \"{url}\",\r\n"
        )),
        "{text}"
    );
    assert!(text.contains("\t\"inputs\": [\r\n"), "{text}");

    // Without its variable the token is invalid: nothing is written rather than no token.
    let before = read(&cursor_file);
    let error = home.fail(&["install", "cursor", "--config", arg(&config_path)], &[]);
    assert!(
        error.contains("the [endpoint] table of") && error.contains("switchboard check"),
        "{error}"
    );
    assert_eq!(read(&cursor_file), before);
}

#[test]
fn claude_code_zed_windsurf_gemini_and_codex_are_imported_from_and_installed_into_in_place() {
    let home = Home::new();
    let config_path = home.path("config.toml");
    std::fs::write(&config_path, "[endpoint]\nlisten = \"127.0.0.1:18766\"\n").expect("write");
    let url = "http://127.0.0.1:18766/mcp";
    // (editor, sample, where the editor keeps it, its stdio server, its remote one, the key
    // and URL of the entry install writes)
    let editors = [
        (
            "claude-code",
            "claude.json",
            ".claude.json",
            "git",
            "docs",
            "url",
            format!("{url}/review"),
        ),
        (
            "zed",
            "zed-settings.json",
            ".config/zed/settings.json",
            "fetch",
            "linear",
            "url",
            url.to_owned(),
        ),
        (
            "windsurf",
            "windsurf-mcp_config.json",
            ".codeium/windsurf/mcp_config.json",
            "memory",
            "remote",
            "serverUrl",
            url.to_owned(),
        ),
        (
            "gemini",
            "gemini-settings.json",
            ".gemini/settings.json",
            "time",
            "search",
            "httpUrl",
            url.to_owned(),
        ),
        (
            "codex",
            "codex-config.toml",
            ".codex/config.toml",
            "context7",
            "figma",
            "url",
            url.to_owned(),
        ),
    ];
    for (editor, sample, place, stdio, remote, key, entry_url) in editors {
        let (file, original) = home.place(sample, place);
        let original = String::from_utf8(original).expect("UTF-8");
        let report = home.succeed(&["import", editor, "--config", arg(&config_path)], &[]);
        assert!(
            report.contains(&format!("{stdio}: added")),
            "{editor}: {report}"
        );
        // A remote server is imported too, with its URL.
        assert!(
            report.contains(&format!("{remote}: added")),
            "{editor}: {report}"
        );
        for server in [stdio, remote] {
            assert!(
                read(&config_path).contains(&format!("[servers.{server}]")),
                "{editor}: {server}"
            );
        }

        let mut args = vec!["install", editor, "--config", arg(&config_path)];
        if editor == "claude-code" {
            args.extend(["--profile", "review"]);
        }
        home.succeed(&args, &[]);
        let written = read(&file);
        if editor == "codex" {
            // TOML: the new table joins the other servers' tables; every other byte stays.
            let servers_end = original
                .find("[profiles.fast]")
                .expect("the sample's profile");
            assert_eq!(
                written,
                format!(
                    "{}[mcp_servers.switchboard]\n{key} = \"{entry_url}\"\n\n{}",
                    &original[..servers_end],
                    &original[servers_end..]
                ),
                "{editor}"
            );
        } else {
            let entry_start = written
                .find("\"switchboard\"")
                .unwrap_or_else(|| panic!("{editor}: {written}"));
            let entry = &written[entry_start..];
            assert!(
                entry.contains(&format!("\"{key}\": \"{entry_url}\"")),
                "{editor} gets its own shape: {written}"
            );
        }
        // Every line of the editor's file is still there, comments included.
        for line in original.lines().filter(|line| !line.trim().is_empty()) {
            let line = line.trim().trim_end_matches(',');
            assert!(written.contains(line), "{editor} lost {line:?}: {written}");
        }
        let backups: Vec<String> = names_in(file.parent().expect("a folder"))
            .into_iter()
            .filter(|name| name.contains("switchboard-backup"))
            .collect();
        assert_eq!(backups.len(), 1, "{editor}: {backups:?}");
        // A second install changes nothing, and makes no second backup.
        let again = home.succeed(&args, &[]);
        assert!(again.contains("already"), "{editor}: {again}");
        assert_eq!(read(&file), written, "{editor}");
        // What Switchboard imported it does not import again, nor the entry pointing at it.
        let second = home.succeed(&["import", editor, "--config", arg(&config_path)], &[]);
        assert!(!second.contains(": added"), "{editor}: {second}");
    }
    let refused = home.fail(
        &[
            "install",
            "zed",
            "--profile",
            "no/such",
            "--config",
            arg(&config_path),
        ],
        &[],
    );
    assert!(refused.contains("cannot be a profile's name"), "{refused}");
}
