//! What a file would do if applied: each kind of fault in a server or a profile leaves only that
//! one out; a syntax error or an error in a settings table or the `default` profile refuses it.

use std::path::Path;

use super::*;

const GOOD: &str = "[servers.good]\ncommand = \"sh\"\n\n";
/// One server of each kind of fault, and a profile naming a server nowhere in the file.
const FAULTS: &str = "[servers.missing]\ncommand = \"switchboard-test-no-such-command\"\n\n\
                      [servers.unknown_field]\ncommand = \"sh\"\ncolour = \"blue\"\n\n\
                      [servers.bad_url]\nurl = \"ftp://example.com/mcp\"\n\n\
                      [profiles.work]\nservers = [\"good\", \"nowhere\"]\n";

fn judged(text: &str) -> Verdict {
    judge(Path::new("/tmp/config.toml"), Ok(text.as_bytes().to_vec()))
}

fn applies(text: &str) -> (Config, Vec<LeftOut>) {
    match judged(text) {
        Verdict::Applies { config, left_out } => (*config, left_out),
        other => panic!("the file does not apply: {other:?}"),
    }
}

fn refused(text: &str) -> (String, Vec<Diagnostic>) {
    match judged(text) {
        Verdict::Refused {
            reason,
            diagnostics,
        } => (reason, diagnostics),
        other => panic!("the file is not refused: {other:?}"),
    }
}

#[test]
fn each_faulty_server_and_profile_is_left_out_with_its_reason_and_the_rest_applies() {
    let (config, left_out) = applies(&format!("{GOOD}{FAULTS}"));
    let running: Vec<&str> = config.backends.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(running, ["good"]);
    let named: Vec<(LeftOutKind, &str)> = left_out
        .iter()
        .map(|part| (part.kind, part.name.as_str()))
        .collect();
    assert_eq!(
        named,
        [
            (LeftOutKind::Server, "missing"),
            (LeftOutKind::Server, "unknown_field"),
            (LeftOutKind::Server, "bad_url"),
            (LeftOutKind::Profile, "work"),
        ]
    );
    assert!(
        left_out[0].reasons[0]
            .starts_with("`switchboard-test-no-such-command` was not found on PATH"),
        "{:?}",
        left_out[0]
    );
    assert!(left_out[1].reasons[0].contains("`colour`"), "{left_out:?}");
    assert!(
        left_out[2].reasons[0].contains("expected an http:// or https:// URL"),
        "{left_out:?}"
    );
    assert_eq!(
        left_out[3].to_string(),
        "the profile `work` is left out: unknown server `nowhere`: no [servers.nowhere] is \
         configured"
    );
    let state = ConfigState::applied(&config, left_out);
    assert_eq!(state.status, ConfigStatus::AppliedInPart);
    assert_eq!(
        state.problem.as_deref(),
        Some(
            "The config file has 4 errors; `missing`, `unknown_field`, `bad_url` and the \
             profile `work` are left out"
        )
    );
}

#[test]
fn a_file_without_errors_applies_whole() {
    let (config, left_out) = applies(GOOD);
    assert!(left_out.is_empty());
    let state = ConfigState::applied(&config, left_out);
    assert_eq!((state.status, state.problem), (ConfigStatus::Applied, None));
}

#[test]
fn a_profile_naming_a_server_left_out_applies_and_only_the_server_is_left_out() {
    let (config, left_out) = applies(&format!(
        "{GOOD}[servers.time]\ncommand = \"switchboard-test-no-such-command\"\n\n\
         [profiles.work]\nservers = [\"good\", \"time\"]\n"
    ));
    assert!(config.profiles.iter().any(|profile| profile.name == "work"));
    assert_eq!(left_out.len(), 1);
    assert_eq!(
        (left_out[0].kind, left_out[0].name.as_str()),
        (LeftOutKind::Server, "time")
    );
}

#[test]
fn a_syntax_error_refuses_the_file() {
    let (reason, diagnostics) = refused(&format!("{GOOD}[servers.next\n"));
    assert_eq!(reason, "the config file has 1 error");
    assert_eq!(diagnostics[0].line, 4);
    assert_eq!(
        Verdict::refused_problem(&reason),
        "The config file has 1 error; the last valid config keeps running"
    );
}

#[test]
fn an_error_in_a_settings_table_refuses_the_file_rather_than_take_a_default() {
    // `approve_new_tools` in error would be `false`: new tools no longer held for review.
    let (reason, diagnostics) = refused(&format!(
        "[security]\napprove_new_tools = \"yes\"\n\n[endpoint]\nrequire_token = 1\n\n{GOOD}{FAULTS}"
    ));
    assert_eq!(
        reason,
        "the config file has 2 errors in [security] and [endpoint]"
    );
    assert!(
        diagnostics
            .iter()
            .any(|diagnostic| diagnostic.field == "security.approve_new_tools")
    );
    for table in ["activity", "registry", "desktop"] {
        let (reason, _) = refused(&format!("[{table}]\nno_such_setting = 1\n\n{GOOD}"));
        assert_eq!(reason, format!("the config file has 1 error in [{table}]"));
    }
}

#[test]
fn an_error_in_the_default_profile_refuses_the_file_rather_than_offer_everything() {
    let (reason, _) = refused(&format!(
        "{GOOD}[profiles.default]\ntier = \"read-only\"\nservers = [\"nowhere\"]\n"
    ));
    assert_eq!(reason, "the config file has 1 error in [profiles.default]");
}

#[test]
fn an_empty_gone_or_undecodable_file_is_unread_or_refused() {
    assert!(matches!(judged(""), Verdict::Unread { problem, .. }
        if problem == "The config file is empty; the last config keeps running"));
    let gone = judge(
        Path::new("/tmp/config.toml"),
        Err(std::io::ErrorKind::NotFound.into()),
    );
    assert!(matches!(gone, Verdict::Unread { problem, .. }
        if problem == "The config file is gone; the last config keeps running"));
    let undecodable = judge(
        Path::new("/tmp/config.toml"),
        Ok(b"[servers.a]\xff".to_vec()),
    );
    assert!(
        matches!(undecodable, Verdict::Refused { .. }),
        "{undecodable:?}"
    );
}

#[test]
fn an_outcome_says_what_applied_and_what_is_left_out() {
    let outcome = ReloadOutcome::Applied {
        report: ApplyReport::default(),
        notes: vec!["/mcp now requires its token".to_owned()],
        left_out: vec![LeftOut {
            kind: LeftOutKind::Server,
            name: "time".to_owned(),
            reasons: vec!["`uvx` was not found on PATH".to_owned()],
        }],
    };
    assert_eq!(
        outcome.to_string(),
        "Applied: nothing changed. `time` is left out: `uvx` was not found on PATH. /mcp now \
         requires its token."
    );
    let json = serde_json::to_value(&outcome).expect("serializes");
    assert_eq!(json["outcome"], "applied");
    assert_eq!(json["left_out"][0]["kind"], "server");
    assert_eq!(
        serde_json::from_value::<ReloadOutcome>(json).expect("reads back"),
        outcome
    );
}

#[test]
fn at_startup_a_setting_in_error_is_said_to_keep_its_default() {
    let path = Path::new("/tmp/config.toml");
    let config = config::parse(path, &format!("[desktop]\nnotify_crash_loop = 1\n\n{GOOD}"))
        .expect("parsed");
    let state = ConfigState::loaded(&config);
    assert_eq!(state.status, ConfigStatus::AppliedInPart);
    assert_eq!(
        state.problem.as_deref(),
        Some("The config file has 1 error; settings with errors in [desktop] keep their defaults")
    );
}
