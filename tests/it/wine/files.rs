//! Files on Windows: an editor's file held open by another program while it is replaced, and
//! secrets in Credential Manager. (Wine 8 keeps no DACL on files, so that private files are the
//! current user's alone is not shown here.)

use std::process::Stdio;

use serde_json::json;

use super::{Place, WineServe, call_tool, switchboard_exe, text, win, wine};

/// `switchboard.exe install cursor --to FILE`: its exit status and what it said.
fn install_into(place: &Place, file: &std::path::Path) -> (bool, String) {
    let mut command = wine(&switchboard_exe());
    place.env(&mut command);
    let output = command
        .args(["install", "cursor", "--config"])
        .arg(win(&place.config()))
        .arg("--to")
        .arg(win(file))
        .stdin(Stdio::null())
        .output()
        .expect("wine runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn an_editor_file_held_open_is_waited_for_then_refused_unharmed() {
    let place = Place::new("held");
    place.write_config(&place.test_server("test", &[]));
    let serve = WineServe::start(&place, &["test"]).await;
    let file = place.root.join("mcp.json");
    let before = "{ \"mcpServers\": {} }\n";
    std::fs::write(&file, before).expect("the editor's file");

    let held = call_tool(
        &serve,
        "test__hold_file",
        json!({"path": win(&file), "ms": 20000}),
    )
    .await;
    assert!(text(&held).starts_with("holding"), "{held}");
    let (installed, said) = install_into(&place, &file);
    assert!(!installed, "{said}");
    assert!(said.contains("held open by another program"), "{said}");
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        before,
        "unharmed"
    );
    let leftovers: Vec<_> = std::fs::read_dir(&place.root)
        .expect("list")
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".tmp"))
        .map(|entry| entry.file_name())
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let other = place.root.join("other.json");
    std::fs::write(&other, before).expect("another editor file");
    let held = call_tool(
        &serve,
        "test__hold_file",
        json!({"path": win(&other), "ms": 500}),
    )
    .await;
    assert!(text(&held).starts_with("holding"), "{held}");
    let (installed, said) = install_into(&place, &other);
    assert!(
        installed,
        "a file let go within the retries is replaced: {said}"
    );
    let written = std::fs::read_to_string(&other).expect("read");
    assert!(written.contains("switchboard"), "{written}");
}

#[tokio::test]
async fn secrets_live_in_credential_manager_and_reach_only_their_server() {
    let place = Place::new("secrets");
    let name = format!("wine_secret_{}", std::process::id());
    let secret = |args: &[&str], input: Option<&str>| {
        let mut command = wine(&switchboard_exe());
        place.env(&mut command);
        command
            .env(
                "SWITCHBOARD_KEYCHAIN_SERVICE",
                format!("switchboard-wine-{}", place.tag),
            )
            .arg("secret")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("wine runs");
        if let Some(input) = input {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(input.as_bytes())
                .expect("write");
        } else {
            drop(child.stdin.take());
        }
        let output = child.wait_with_output().expect("wait");
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        // A result (the names `list` gives) on stdout, what was done on stderr.
        String::from_utf8_lossy(&[output.stdout, output.stderr].concat()).into_owned()
    };
    secret(&["set", &name], Some("s3cr3t value"));
    let listed = secret(&["list"], None);
    assert!(listed.lines().any(|line| line == name), "{listed}");

    place.write_config(&format!(
        "{}env = {{ GIVEN = \"${{secret:{name}}}\" }}\n",
        place.test_server("test", &[])
    ));
    let service = (
        "SWITCHBOARD_KEYCHAIN_SERVICE",
        format!("switchboard-wine-{}", place.tag),
    );
    let serve = WineServe::start_with(&place, &["test"], &[service]).await;
    let given = call_tool(&serve, "test__getenv", json!({"name": "GIVEN"})).await;
    assert_eq!(text(&given), "s3cr3t value");
    drop(serve);
    secret(&["delete", &name], None);
    let listed = secret(&["list"], None);
    assert!(!listed.lines().any(|line| line == name), "{listed}");
}

/// The Windows user folders of the tests' Wine prefix.
fn app_data() -> (std::path::PathBuf, std::path::PathBuf) {
    let user = std::env::var("USER").unwrap_or_else(|_| "root".to_owned());
    let data = super::prefix()
        .join("drive_c")
        .join("users")
        .join(user)
        .join("AppData");
    (data.join("Roaming"), data.join("Local"))
}

#[test]
fn claude_desktop_in_both_windows_places_is_named_for_what_the_app_reads() {
    let place = Place::new("claude");
    let (roaming, local) = app_data();
    let classic = roaming.join("Claude").join("claude_desktop_config.json");
    let package = local.join("Packages").join("Claude_pzs8sxrjxfjjc");
    let packaged = package
        .join("LocalCache")
        .join("Roaming")
        .join("Claude")
        .join("claude_desktop_config.json");
    let classic_app = local.join("AnthropicClaude");
    for file in [&classic, &packaged] {
        std::fs::create_dir_all(file.parent().expect("a folder")).expect("folders");
        std::fs::write(file, "{ \"mcpServers\": {} }\n").expect("a config");
    }
    let install = || {
        let mut command = wine(&switchboard_exe());
        place.env(&mut command);
        let output = command
            .args(["install", "claude", "--dry-run", "--config"])
            .arg(win(&place.config()))
            .stdin(Stdio::null())
            .output()
            .expect("wine runs");
        assert!(output.status.success(), "{output:?}");
        // The change on stdout, the notes about it on stderr.
        String::from_utf8_lossy(&[output.stdout, output.stderr].concat()).into_owned()
    };
    let said = install();
    assert!(
        said.contains("the installed Claude Desktop (its Microsoft package) reads")
            && said.contains("is left from a classic install and is not read"),
        "{said}"
    );
    assert!(said.contains("LocalCache\\Roaming\\Claude"), "{said}");

    std::fs::create_dir_all(&classic_app).expect("a classic install too");
    let said = install();
    assert!(
        said.contains("it is not certain which one you run"),
        "{said}"
    );

    for folder in [roaming.join("Claude"), package, classic_app] {
        std::fs::remove_dir_all(folder).expect("cleaned up");
    }
    let said = install();
    assert!(!said.contains("note:"), "{said}");
    assert!(said.contains("AppData\\Roaming\\Claude"), "{said}");
}
