//! Secrets written out in an editor's file, moved to the keychain on request, and brought
//! back by the undo.

use super::{Home, arg, read};
use crate::support::keychain_service;

#[test]
fn secrets_written_out_in_an_editor_are_moved_to_the_keychain_on_request() {
    let home = Home::new();
    home.place(
        "claude_desktop_tokens.json",
        ".config/Claude/claude_desktop_config.json",
    );
    let config_path = home.path("config.toml");
    let service = keychain_service();
    let keychain = [("SWITCHBOARD_KEYCHAIN_SERVICE", service.as_str())];
    let token = "ghp_sample0123456789abcdef";

    let suggested = home.succeed(
        &[
            "import",
            "claude",
            "--dry-run",
            "--config",
            arg(&config_path),
        ],
        &keychain,
    );
    assert!(
        suggested.contains(
            "`GITHUB_PERSONAL_ACCESS_TOKEN` looks like a secret written out: `--move-secrets` \
             keeps it in the keychain instead of the config"
        ),
        "{suggested}"
    );
    let dry = home.succeed(
        &[
            "import",
            "claude",
            "--move-secrets",
            "--dry-run",
            "--config",
            arg(&config_path),
        ],
        &keychain,
    );
    assert!(
        dry.contains(
            "`GITHUB_PERSONAL_ACCESS_TOKEN` is kept in the keychain as \
             `github_github_personal_access_token`"
        ),
        "{dry}"
    );
    assert!(!dry.contains("is not in the keychain"), "{dry}");
    assert!(!config_path.exists(), "a dry run writes nothing");
    let listed = home.run(&["secret", "list"], &keychain);
    assert!(listed.status.success());
    assert!(listed.stdout.is_empty(), "nor stores anything");

    let moved = home.succeed(
        &[
            "import",
            "claude",
            "--move-secrets",
            "--config",
            arg(&config_path),
        ],
        &keychain,
    );
    assert!(moved.contains("4 server(s) added"), "{moved}");
    let written = read(&config_path);
    assert!(
        written.contains(
            "env = { GITHUB_PERSONAL_ACCESS_TOKEN = \"${secret:github_github_personal_access_token}\" }"
        ),
        "{written}"
    );
    assert!(
        !written.contains(token),
        "the token is not in the config: {written}"
    );
    let listed = home.run(&["secret", "list"], &keychain);
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout),
        "github_github_personal_access_token\n"
    );
    let checked = home.run(&["check", "--config", arg(&config_path)], &keychain);
    let said = String::from_utf8_lossy(&checked.stdout);
    assert!(
        !said.contains("secret"),
        "the config reads the secret back: {said}"
    );

    // Without a keychain, moving is refused and nothing is written.
    let other = home.path("other.toml");
    let refused = home.fail(
        &[
            "import",
            "claude",
            "--move-secrets",
            "--config",
            arg(&other),
        ],
        &[
            ("SWITCHBOARD_KEYCHAIN_SERVICE", service.as_str()),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent"),
        ],
    );
    assert!(
        refused.contains("no keychain is available") && refused.contains("nothing was written"),
        "{refused}"
    );
    assert!(!other.exists());
}

#[test]
fn a_move_of_secrets_leaves_no_plain_value_behind_and_its_undo_brings_them_back() {
    let home = Home::new();
    let (editor_file, original) = home.place(
        "claude_desktop_tokens.json",
        ".config/Claude/claude_desktop_config.json",
    );
    let config_path = home.path("config.toml");
    let service = keychain_service();
    let keychain = [("SWITCHBOARD_KEYCHAIN_SERVICE", service.as_str())];
    let token = "ghp_sample0123456789abcdef";
    let secret = "github_github_personal_access_token";
    let move_args = [
        "move",
        "claude",
        "--move-secrets",
        "--config",
        arg(&config_path),
    ];

    let preview = home.succeed(&[&move_args[..], &["--dry-run"]].concat(), &keychain);
    assert!(!preview.contains(token), "the preview masks it: {preview}");
    assert!(
        preview.contains("GITHUB_PERSONAL_ACCESS_TOKEN"),
        "{preview}"
    );
    assert!(preview.contains("••••••"), "{preview}");

    let moved = home.succeed(&move_args, &keychain);
    assert!(
        moved.contains(&format!(
            "It names the secrets moved to the keychain ({secret}) instead of holding their values"
        )),
        "{moved}"
    );
    assert!(!moved.contains(token), "{moved}");
    // Nowhere on disk: not the editor's file, not its backup, not our config or records.
    let mut pending = vec![home.dir.path().to_path_buf()];
    let mut files = 0;
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            pending.extend(
                std::fs::read_dir(&path)
                    .unwrap()
                    .map(|entry| entry.unwrap().path()),
            );
        } else {
            files += 1;
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes
                    .windows(token.len())
                    .any(|window| window == token.as_bytes()),
                "{} holds the token",
                path.display()
            );
        }
    }
    assert!(
        files >= 4,
        "the editor's file, its backup, our config, the move's record"
    );
    let backup = std::fs::read_dir(editor_file.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.to_string_lossy().contains(".switchboard-backup-"))
        .expect("a backup");
    assert!(read(&backup).contains(&format!("${{secret:{secret}}}")));

    // The undo puts the file back as it was, the value read back from the keychain.
    home.succeed(
        &["move", "claude", "--undo", "--config", arg(&config_path)],
        &keychain,
    );
    assert_eq!(std::fs::read(&editor_file).unwrap(), original);
    home.succeed(&["secret", "delete", secret], &keychain);
}
