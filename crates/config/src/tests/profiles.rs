//! Reading `[profiles.NAME]` (and `"profiles"` in the JSON form): every field, the default
//! profile, and each mistake where it is.

use super::*;

const SERVERS: &str = "[servers.fs]\ncommand = \"sh\"\n\n[servers.git]\ncommand = \"sh\"\n\n";

#[test]
fn without_profiles_the_default_one_offers_everything() {
    let config = parse_toml(SERVERS);
    assert_eq!(config.profiles, vec![Profile::everything(DEFAULT_PROFILE)]);
    let default = &config.profiles[0];
    assert!(default.offers_server("fs") && default.offers_server("git"));
    assert_eq!(default.max_name_length, DEFAULT_NAME_BUDGET);
    assert_eq!(
        DEFAULT_NAME_BUDGET,
        64 - "mcp__switchboard__".len(),
        "the default fits Claude Code behind the entry install writes"
    );
}

#[test]
fn every_profile_field_is_read() {
    let text = format!(
        "{SERVERS}[profiles.review]\nservers = [\"git\"]\ntools = [\"git__*\", \"status\"]\n\
         exclude_tools = [\"*push*\"]\ntier = \"read-only\"\nmax_name_length = 30\n\
         confirm = [\"*commit*\"]\nconfirm_destructive = true\nconfirm_timeout = \"45s\"\n\n\
         [profiles.default]\ntier = \"non-destructive\"\n"
    );
    let config = parse_toml(&text);
    assert_eq!(config.diagnostics, vec![]);
    let names: Vec<&str> = config.profiles.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["review", "default"],
        "file order; no second default"
    );
    let review = &config.profiles[0];
    assert_eq!(review.servers, Some(strings(&["git"])));
    assert!(!review.offers_server("fs"));
    let globs: Vec<&str> = review.tools.iter().map(|p| p.glob.as_str()).collect();
    assert_eq!(globs, ["git__*", "status"]);
    assert_eq!((review.tools[1].line, review.tools[1].column), (9, 20));
    assert_eq!(review.exclude_tools[0].glob, "*push*");
    assert_eq!(review.tier, Tier::ReadOnly);
    assert_eq!(review.max_name_length, 30);
    assert_eq!(review.confirm.tools[0].glob, "*commit*");
    assert!(review.confirm.destructive);
    assert_eq!(review.confirm.timeout, Some(Duration::from_secs(45)));
    assert_eq!(config.profiles[1].tier, Tier::NonDestructive);
    assert!(config.profiles[1].confirm.is_off());
    assert_eq!(config.profiles[1].servers, None);
}

#[test]
fn each_profile_mistake_is_reported_where_it_is_and_leaves_the_profile_out() {
    let text = format!(
        "{SERVERS}[profiles.a]\nservers = [\"fs\", \"nope\"]\n\n\
         [profiles.b]\ntier = \"safe\"\n\n\
         [profiles.c]\nmax_name_length = 12\n\n\
         [profiles.d]\ncolour = \"red\"\n\n\
         [profiles.\"e f\"]\n\n\
         [profiles.ok]\ntools = [\"fs__*\"]\n"
    );
    let config = parse_toml(&text);
    let names: Vec<&str> = config.profiles.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["default", "ok"],
        "each profile with a mistake is left out"
    );
    let diagnostics = config.diagnostics;
    assert_eq!(
        positions(&diagnostics),
        [
            (Severity::Error, 8, 18, "profiles.a.servers"),
            (Severity::Error, 11, 8, "profiles.b.tier"),
            (Severity::Error, 14, 19, "profiles.c.max_name_length"),
            (Severity::Error, 17, 1, "profiles.d.colour"),
            (Severity::Error, 19, 11, "profiles.e f"),
        ]
    );
    assert_eq!(
        diagnostics[0].message,
        "unknown server `nope`: no [servers.nope] is configured"
    );
    assert!(
        diagnostics[2].message.contains("use 16 to 64"),
        "{}",
        diagnostics[2]
    );
}

#[test]
fn a_profile_may_name_a_server_left_out_for_its_own_errors() {
    let text = "[servers.fs]\ncommand = \"sh\"\n\n[servers.broken]\nargs = []\n\n\
                [profiles.work]\nservers = [\"fs\", \"broken\"]\n";
    let config = parse_toml(text);
    let names: Vec<&str> = config.backends.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["fs"]);
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Error, 4, 10, "servers.broken")],
        "the server's error is its own, not the profile's"
    );
    let work = config
        .profiles
        .iter()
        .find(|profile| profile.name == "work")
        .expect("the profile is kept");
    assert_eq!(work.servers, Some(strings(&["fs", "broken"])));
}

#[test]
fn the_json_form_holds_profiles_under_profiles() {
    let text = "{\n  \"mcpServers\": {\n    \"fs\": {\"command\": \"sh\"},\n    \"git\": {\"command\": \"sh\"}\n  },\n  \
                \"profiles\": {\n    \"review\": {\"servers\": [\"git\"], \"tools\": [\"git__*\"]},\n    \
                \"bad\": {\"servers\": [\"nope\"]}\n  },\n  \"globalShortcut\": \"\"\n}\n";
    let config = parse_json(text);
    let names: Vec<&str> = config.profiles.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["default", "review"]);
    assert_eq!(config.profiles[1].servers, Some(strings(&["git"])));
    assert_eq!(config.profiles[1].tools[0].glob, "git__*");
    assert_eq!(
        positions(&config.diagnostics),
        [(Severity::Error, 8, 25, "profiles.bad.servers")]
    );
    assert_eq!(
        config.diagnostics[0].message,
        "unknown server `nope`: \"mcpServers\" has no \"nope\""
    );
    let twice = "{\"mcpServers\": {}, \"profiles\": {}, \"profiles\": {}}";
    let diagnostics = invalid_diagnostics(parse(Path::new("c.json"), twice));
    assert_eq!(diagnostics[0].message, "\"profiles\" is given twice");
}
