//! Live config: a real `switchboard serve`, a real config file on disk and the real watcher.
//! Edits are made the ways editors save (in place, by renaming a temporary file, deleting and
//! re-creating) and their effect is read back through the control API and the MCP endpoint.

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::*;
use rmcp::model::ClientConfig;
use rmcp::service::{NotificationContext, RoleClient};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::Value;
use tokio::sync::mpsc;

/// A `[servers.NAME]` table running the built-in demo server, with `extra` lines appended.
fn demo_table(name: &str, extra: &str) -> String {
    format!(
        "[servers.{name}]\ncommand = {command:?}\nargs = [\"demo-server\"]\n{extra}\n",
        command = switchboard_exe().to_string_lossy()
    )
}

/// `/api/backends` as name → summary.
async fn backends(serve: &ServeProcess) -> BTreeMap<String, Value> {
    let list = serve.api_get("/api/backends").await;
    list.as_array()
        .expect("an array")
        .iter()
        .map(|summary| {
            let name = summary["name"].as_str().expect("a name").to_owned();
            (name, summary.clone())
        })
        .collect()
}

/// Polls `/api/backends` until `check` holds; fails with the last list and serve's log after a
/// generous bound.
async fn until_backends(
    serve: &ServeProcess,
    what: &str,
    check: impl Fn(&BTreeMap<String, Value>) -> bool,
) -> BTreeMap<String, Value> {
    eventually(what, EVENT_LIMIT, || async {
        let list = backends(serve).await;
        match check(&list) {
            true => Ok(list),
            false => Err(format!("backends: {list:#?}\nlog:\n{}", serve.log())),
        }
    })
    .await
}

/// Polls `/api/config` until `check` holds.
async fn until_config(serve: &ServeProcess, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    eventually(what, EVENT_LIMIT, || async {
        let config = serve.api_get("/api/config").await;
        match check(&config) {
            true => Ok(config),
            false => Err(format!("config: {config:#}\nlog:\n{}", serve.log())),
        }
    })
    .await
}

fn is_ready(list: &BTreeMap<String, Value>, name: &str) -> bool {
    list.get(name)
        .is_some_and(|summary| summary["state"] == "ready")
}

fn pid(list: &BTreeMap<String, Value>, name: &str) -> u64 {
    list[name]["pid"]
        .as_u64()
        .expect("a running backend has a pid")
}

/// Writes `text` the way many editors save: to a temporary file beside it, then renamed over.
fn save_by_rename(path: &Path, text: &str) {
    let temporary = path.with_file_name(".config.toml.swp");
    std::fs::write(&temporary, text).expect("the temporary file is written");
    std::fs::rename(&temporary, path).expect("the rename succeeds");
}

#[tokio::test]
async fn an_edit_applies_as_a_diff_and_unchanged_backends_keep_their_process() {
    let before = [
        demo_table("keep", ""),
        demo_table("change", ""),
        demo_table("gone", ""),
    ]
    .concat();
    let serve = ServeProcess::with_config(&before, &["keep", "change", "gone"]);
    let start = backends(&serve).await;
    let (keep_pid, change_pid, gone_pid) = (
        pid(&start, "keep"),
        pid(&start, "change"),
        pid(&start, "gone"),
    );

    let after = [
        "# a comment that changes nothing\n".to_owned(),
        demo_table("keep", ""),
        demo_table("change", "env = { GREETING = \"hello\" }"),
        demo_table("added", ""),
    ]
    .concat();
    std::fs::write(serve.config_path(), after).expect("the config is saved");

    let list = until_backends(&serve, "the edit applied", |list| {
        is_ready(list, "added")
            && !list.contains_key("gone")
            && is_ready(list, "change")
            && list["change"]["pid"].as_u64() != Some(change_pid)
    })
    .await;
    assert_eq!(
        pid(&list, "keep"),
        keep_pid,
        "an unchanged backend keeps its process"
    );
    assert_eq!(list["keep"]["restarts"], 0);
    assert!(alive(keep_pid as u32));
    assert!(
        wait_gone(change_pid as u32).await,
        "the changed backend's old process ended"
    );
    assert!(
        wait_gone(gone_pid as u32).await,
        "the removed backend's process ended"
    );
    let order: Vec<&String> = list.keys().collect();
    assert_eq!(order, ["added", "change", "keep"]);
    let detail = serve.api_get("/api/backends/change").await;
    assert_eq!(detail["history"][0]["reason"], "config_changed");
    let config = serve.api_get("/api/config").await;
    assert_eq!(config["status"], "applied");
    assert_eq!(config["problem"], serde_json::Value::Null);
    assert!(
        serve
            .log()
            .contains("config reloaded: added added; removed gone; restarted change")
    );
}

#[tokio::test]
async fn a_rename_save_applies() {
    let serve = ServeProcess::with_config(&demo_table("first", ""), &["first"]);
    let first_pid = pid(&backends(&serve).await, "first");
    save_by_rename(
        &serve.config_path(),
        &[demo_table("first", ""), demo_table("second", "")].concat(),
    );
    let list = until_backends(&serve, "the renamed file applied", |list| {
        is_ready(list, "second")
    })
    .await;
    assert_eq!(pid(&list, "first"), first_pid);
    assert!(
        std::fs::read_dir(serve.config_path().parent().expect("a folder"))
            .expect("the folder lists")
            .all(|entry| !entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .ends_with(".swp")),
        "the temporary file was renamed away"
    );
}

#[tokio::test]
async fn fifty_rapid_edits_end_in_the_final_state_and_start_no_backend_twice() {
    let mut text = demo_table("base", "");
    let serve = ServeProcess::with_config(&text, &["base"]);
    let base_pid = pid(&backends(&serve).await, "base");
    for index in 0..50 {
        text.push_str(&demo_table(&format!("n{index:02}"), ""));
        if index % 2 == 0 {
            std::fs::write(serve.config_path(), &text).expect("saved in place");
        } else {
            save_by_rename(&serve.config_path(), &text);
        }
    }
    let list = until_backends(&serve, "all fifty added and ready", |list| {
        list.len() == 51 && list.keys().all(|name| is_ready(list, name))
    })
    .await;
    assert_eq!(pid(&list, "base"), base_pid);
    let log = serve.log();
    for (name, summary) in &list {
        assert_eq!(summary["restarts"], 0, "{name} was restarted");
        let starts = log
            .lines()
            .filter(|line| line.contains(&format!("backend{{name={name}}}: started")))
            .count();
        assert_eq!(starts, 1, "{name} was started {starts} times; log:\n{log}");
    }
}

#[tokio::test]
async fn a_syntax_error_changes_nothing_and_reports_the_line_then_a_valid_save_applies() {
    let valid = demo_table("steady", "");
    let serve = ServeProcess::with_config(&valid, &["steady"]);
    let steady_pid = pid(&backends(&serve).await, "steady");

    // Line 5 opens a table it never closes; the new server after it must not start either.
    let invalid = format!("{valid}[servers.half\n{}", demo_table("newcomer", ""));
    std::fs::write(serve.config_path(), &invalid).expect("saved");
    let config = until_config(&serve, "the unreadable file reported", |config| {
        config["status"] == "refused"
    })
    .await;
    let diagnostic = &config["diagnostics"][0];
    assert_eq!(diagnostic["line"], 5, "{config:#}");
    assert_eq!(diagnostic["severity"], "error");
    assert_eq!(
        config["problem"], "The config file has 1 error; the last valid config keeps running",
        "the refused file is not what runs"
    );
    let list = backends(&serve).await;
    assert_eq!(list.keys().collect::<Vec<_>>(), ["steady"]);
    assert_eq!(pid(&list, "steady"), steady_pid);
    assert!(serve.log().contains("config.toml:5:"), "{}", serve.log());

    let forced = std::process::Command::new(switchboard_exe())
        .arg("reload")
        .envs(serve.env())
        .output()
        .expect("switchboard reload runs");
    let printed = String::from_utf8_lossy(&forced.stderr);
    assert_eq!(forced.status.code(), Some(1), "{printed}");
    assert!(printed.contains("config.toml:5:"), "{printed}");
    assert!(
        printed.contains("the last valid config keeps running"),
        "{printed}"
    );

    let fixed = [valid.clone(), demo_table("newcomer", "")].concat();
    std::fs::write(serve.config_path(), &fixed).expect("saved");
    let list = until_backends(&serve, "the fixed file applied", |list| {
        is_ready(list, "newcomer")
    })
    .await;
    assert_eq!(pid(&list, "steady"), steady_pid);
    let config = serve.api_get("/api/config").await;
    assert_eq!(config["status"], "applied");
    assert_eq!(config["problem"], serde_json::Value::Null);
    assert_eq!(config["diagnostics"], serde_json::json!([]));
    assert_eq!(config["left_out"], serde_json::json!([]));
    assert_eq!(config["notes"], serde_json::json!([]));
}

/// One server of each kind of fault (a command not installed, an unknown field, a URL that is
/// not http), and a profile naming a server the file does not describe.
fn faults() -> String {
    [
        "[servers.missing]\ncommand = \"switchboard-test-no-such-command\"\n\n".to_owned(),
        demo_table("unknown_field", "colour = \"blue\""),
        "[servers.bad_url]\nurl = \"ftp://127.0.0.1/mcp\"\n\n".to_owned(),
        "[profiles.work]\nservers = [\"good\", \"nowhere\"]\n\n".to_owned(),
    ]
    .concat()
}

/// `left_out` of `/api/config` or of a reload's outcome, as `kind name: first reason`.
fn left_out(value: &Value) -> Vec<String> {
    value["left_out"]
        .as_array()
        .expect("a list of what is left out")
        .iter()
        .map(|part| format!("{} {}: {}", part["kind"], part["name"], part["reasons"][0]))
        .map(|line| line.replace('"', ""))
        .collect()
}

fn profile_names(budgets: &Value) -> Vec<String> {
    budgets
        .as_array()
        .expect("a list of profiles")
        .iter()
        .map(|budget| budget["profile"].as_str().expect("a name").to_owned())
        .collect()
}

#[tokio::test]
async fn each_fault_leaves_out_only_its_server_or_profile_at_start_and_at_each_reload() {
    let start = [demo_table("good", ""), faults()].concat();
    let serve = ServeProcess::with_config(&start, &["good"]);
    let expected = [
        "server missing: `switchboard-test-no-such-command` was not found on PATH",
        "server unknown_field: unknown field `colour`",
        "server bad_url: expected an http:// or https:// URL",
        "profile work: unknown server `nowhere`: no [servers.nowhere] is configured",
    ];
    let said = |value: &Value| {
        let listed = left_out(value);
        listed.len() == expected.len()
            && listed
                .iter()
                .zip(expected)
                .all(|(line, start)| line.starts_with(start))
    };
    let config = serve.api_get("/api/config").await;
    assert_eq!(config["status"], "applied_in_part");
    assert!(said(&config), "{config:#}");
    assert_eq!(
        config["problem"],
        "The config file has 4 errors; `missing`, `unknown_field`, `bad_url` and the profile \
         `work` are left out"
    );
    assert_eq!(backends(&serve).await.keys().collect::<Vec<_>>(), ["good"]);
    let good_pid = pid(&backends(&serve).await, "good");

    // A save with every fault still in it, and a new server: the new one starts.
    std::fs::write(
        serve.config_path(),
        [start.clone(), demo_table("added", "")].concat(),
    )
    .expect("saved");
    let list = until_backends(&serve, "the new server started", |list| {
        is_ready(list, "added")
    })
    .await;
    assert_eq!(list.keys().collect::<Vec<_>>(), ["added", "good"]);
    assert_eq!(
        pid(&list, "good"),
        good_pid,
        "the good server kept its process"
    );
    let config = serve.api_get("/api/config").await;
    assert_eq!(config["status"], "applied_in_part");
    assert!(said(&config), "{config:#}");
    assert_eq!(
        profile_names(&serve.api_get("/api/profiles").await),
        ["default"],
        "the profile in error is not served"
    );

    // A forced reload says the same, in its outcome.
    let outcome = serve.api_post("/api/config/reload").await;
    assert_eq!(outcome["outcome"], "applied", "{outcome:#}");
    assert!(said(&outcome), "{outcome:#}");
    let printed = std::process::Command::new(switchboard_exe())
        .arg("reload")
        .envs(serve.env())
        .output()
        .expect("switchboard reload runs");
    let printed_text = String::from_utf8_lossy(&printed.stderr);
    assert!(printed.status.success(), "{printed_text}");
    assert!(
        printed_text.contains(
            "note: `missing` is left out: `switchboard-test-no-such-command` was not found on PATH"
        ),
        "{printed_text}"
    );
}

#[tokio::test]
async fn with_a_server_whose_command_is_missing_adding_a_server_starts_it() {
    let start = [
        demo_table("good", ""),
        "[servers.time]\ncommand = \"switchboard-test-no-such-command\"\n\n".to_owned(),
    ]
    .concat();
    let serve = ServeProcess::with_config(&start, &["good"]);
    std::fs::write(
        serve.config_path(),
        [start, demo_table("arrival", "")].concat(),
    )
    .expect("saved");
    until_backends(&serve, "the added server started", |list| {
        is_ready(list, "arrival")
    })
    .await;
    let config = serve.api_get("/api/config").await;
    assert_eq!(config["status"], "applied_in_part");
    assert_eq!(config["left_out"][0]["name"], "time");
}

#[tokio::test]
async fn an_error_in_a_settings_table_keeps_the_last_valid_config_whole() {
    let valid = format!(
        "[security]\napprove_new_tools = true\n\n{}",
        demo_table("steady", "")
    );
    let serve = ServeProcess::with_config(&valid, &["steady"]);
    // In error, the setting would take its default, `false`: new tools trusted on sight.
    let weakened = format!(
        "[security]\napprove_new_tools = \"yes\"\n\n{}{}",
        demo_table("steady", ""),
        demo_table("newcomer", "")
    );
    std::fs::write(serve.config_path(), &weakened).expect("saved");
    let config = until_config(&serve, "the settings error reported", |config| {
        config["status"] == "refused"
    })
    .await;
    assert_eq!(
        config["problem"],
        "The config file has 1 error in [security]; the last valid config keeps running"
    );
    assert_eq!(
        config["diagnostics"][0]["field"],
        "security.approve_new_tools"
    );
    let outcome = serve.api_post("/api/config/reload").await;
    assert_eq!(outcome["outcome"], "refused", "{outcome:#}");
    assert_eq!(
        backends(&serve).await.keys().collect::<Vec<_>>(),
        ["steady"],
        "the new server waits until the file applies"
    );
}

#[tokio::test]
async fn a_profile_switch_with_a_faulty_server_applies_and_writes_the_file_once() {
    let start = [
        demo_table("demo", ""),
        demo_table("other", ""),
        "[servers.time]\ncommand = \"switchboard-test-no-such-command\"\n\n".to_owned(),
    ]
    .concat();
    let serve = ServeProcess::with_config(&start, &["demo", "other"]);
    let reloads_before = serve.log().matches("config reloaded:").count();

    let (status, answer) = serve
        .api_post_body(
            "/api/profiles/default/switch",
            r#"{"server": "other", "on": false}"#,
        )
        .await;
    assert_eq!(status, 200, "{answer:#}");
    assert_eq!(answer["outcome"], "applied");
    assert_eq!(
        answer["message"],
        "Applied: nothing changed. `time` is left out: `switchboard-test-no-such-command` was \
         not found on PATH."
    );
    assert_eq!(
        std::fs::read_to_string(serve.config_path()).expect("read"),
        format!("{start}[profiles.default]\nservers = [\"demo\", \"time\"]\n\n"),
        "the file gains the list, which keeps the server left out"
    );
    eventually(
        "the profile no longer offers other",
        EVENT_LIMIT,
        || async {
            let budgets = serve.api_get("/api/profiles").await;
            let switches: Vec<(String, bool)> = budgets[0]["server_switches"]
                .as_array()
                .expect("switches")
                .iter()
                .map(|switch| {
                    let name = switch["name"].as_str().expect("a name").to_owned();
                    (name, switch["on"] == true)
                })
                .collect();
            match switches == [("demo".to_owned(), true), ("other".to_owned(), false)] {
                true => Ok(()),
                false => Err(format!("{budgets:#}")),
            }
        },
    )
    .await;

    // A save by hand after it: the watcher applies that one, and never the switch's write
    // again, so exactly two reloads happened.
    let by_hand = [
        std::fs::read_to_string(serve.config_path()).expect("read"),
        demo_table("later", ""),
    ]
    .concat();
    std::fs::write(serve.config_path(), by_hand).expect("saved");
    until_backends(&serve, "the save by hand applied", |list| {
        is_ready(list, "later")
    })
    .await;
    let reloads = serve.log().matches("config reloaded:").count() - reloads_before;
    assert_eq!(reloads, 2, "{}", serve.log());
}

#[tokio::test]
async fn a_switch_that_would_not_apply_leaves_the_file_and_what_runs_as_they_were() {
    let valid = demo_table("demo", "");
    let serve = ServeProcess::with_config(&valid, &["demo"]);
    let saved = format!("[activity]\nmax_age = \"forever\"\n\n{valid}");
    std::fs::write(serve.config_path(), &saved).expect("saved");
    until_config(&serve, "the settings error reported", |config| {
        config["status"] == "refused"
    })
    .await;
    let (status, answer) = serve
        .api_post_body(
            "/api/profiles/default/switch",
            r#"{"server": "demo", "on": false}"#,
        )
        .await;
    assert_eq!(status, 409, "{answer:#}");
    let message = answer["message"].as_str().expect("a message");
    assert!(
        message.starts_with(
            "the change was not written: with it, the config file has 1 error in [activity]: "
        ),
        "{message}"
    );
    assert!(message.contains("activity.max_age"), "{message}");
    assert_eq!(
        std::fs::read_to_string(serve.config_path()).expect("read"),
        saved
    );
    let budgets = serve.api_get("/api/profiles").await;
    assert_eq!(budgets[0]["server_switches"][0]["on"], true);
}

#[tokio::test]
async fn a_deleted_file_keeps_the_running_config_until_it_is_back() {
    let text = demo_table("survivor", "");
    let serve = ServeProcess::with_config(&text, &["survivor"]);
    let survivor_pid = pid(&backends(&serve).await, "survivor");
    std::fs::remove_file(serve.config_path()).expect("deleted");
    let config = until_config(&serve, "the deletion reported", |config| {
        config["status"] == "unread"
    })
    .await;
    assert_eq!(
        config["problem"],
        "The config file is gone; the last config keeps running"
    );
    assert!(
        config["notes"][0]
            .as_str()
            .expect("a note")
            .contains("is gone")
    );
    assert_eq!(pid(&backends(&serve).await, "survivor"), survivor_pid);

    std::fs::write(
        serve.config_path(),
        [text, demo_table("returned", "")].concat(),
    )
    .expect("re-created");
    let list = until_backends(&serve, "the re-created file applied", |list| {
        is_ready(list, "returned")
    })
    .await;
    assert_eq!(pid(&list, "survivor"), survivor_pid);
    assert_eq!(serve.api_get("/api/config").await["status"], "applied");
}

#[tokio::test]
async fn an_emptied_file_is_a_save_under_way_and_changes_nothing() {
    let text = demo_table("survivor", "");
    let serve = ServeProcess::with_config(&text, &["survivor"]);
    let survivor_pid = pid(&backends(&serve).await, "survivor");
    // An editor that saves in place truncates the file first; it may pause before it writes.
    std::fs::write(serve.config_path(), "").expect("emptied");
    let config = until_config(&serve, "the empty file reported", |config| {
        config["status"] == "unread"
    })
    .await;
    assert_eq!(
        config["problem"],
        "The config file is empty; the last config keeps running"
    );
    assert_eq!(pid(&backends(&serve).await, "survivor"), survivor_pid);

    std::fs::write(
        serve.config_path(),
        [text, demo_table("second", "")].concat(),
    )
    .expect("written");
    let list = until_backends(&serve, "the written file applied", |list| {
        is_ready(list, "second")
    })
    .await;
    assert_eq!(pid(&list, "survivor"), survivor_pid, "never stopped");
    assert_eq!(serve.api_get("/api/config").await["status"], "applied");
}

#[tokio::test]
async fn the_reload_command_and_route_report_what_changed_and_what_needs_a_restart() {
    let text = demo_table("one", "");
    let serve = ServeProcess::with_config(&text, &["one"]);
    let edited = format!(
        "[endpoint]\nlisten = \"127.0.0.1:9\"\n\n{text}{}",
        demo_table("two", "enabled = false")
    );
    // The watcher may apply the save first; the forced reload then applies the same file again.
    std::fs::write(serve.config_path(), &edited).expect("saved");
    let outcome = serve.api_post("/api/config/reload").await;
    assert_eq!(outcome["outcome"], "applied", "{outcome:#}");
    // `--listen` on the command line wins over the file, so the change is no note.
    assert_eq!(outcome["notes"], serde_json::json!([]));
    let list = until_backends(&serve, "the disabled backend listed", |list| {
        list.contains_key("two")
    })
    .await;
    assert_eq!(list["two"]["state"], "stopped");

    let printed = std::process::Command::new(switchboard_exe())
        .arg("reload")
        .envs(serve.env())
        .output()
        .expect("switchboard reload runs");
    assert!(printed.status.success());
    assert_eq!(
        String::from_utf8_lossy(&printed.stdout),
        "reloaded: nothing changed\n",
        "the outcome is the result"
    );

    std::fs::write(
        serve.config_path(),
        format!(
            "[endpoint]\nmax_body_size = \"1MiB\"\n\n{text}{}",
            demo_table("two", "")
        ),
    )
    .expect("saved");
    let config = until_config(&serve, "the endpoint note", |config| {
        config["notes"]
            .as_array()
            .is_some_and(|notes| !notes.is_empty())
    })
    .await;
    assert!(
        config["notes"][0]
            .as_str()
            .expect("a note")
            .contains("endpoint.max_body_size changed to 1048576 bytes"),
        "{config:#}"
    );
    until_backends(&serve, "the enabled backend started", |list| {
        is_ready(list, "two")
    })
    .await;
}

/// An editor that reports each `tools/list_changed` it receives.
struct Editor {
    changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Editor {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }
}

#[tokio::test]
async fn editors_on_mcp_are_told_when_a_reload_changes_the_tools() {
    let text = demo_table("present", "");
    let serve = ServeProcess::with_config(&text, &["present"]);
    let (changed, mut notices) = mpsc::unbounded_channel();
    let client = tokio::time::timeout(
        EVENT_LIMIT,
        Editor { changed }.serve(StreamableHttpClientTransport::from_uri(serve.url())),
    )
    .await
    .expect("the handshake completes in time")
    .expect("the handshake succeeds");
    let before = client.list_all_tools().await.expect("tools listed");
    assert!(before.iter().all(|tool| tool.name.starts_with("present__")));

    std::fs::write(
        serve.config_path(),
        [text, demo_table("arrival", "")].concat(),
    )
    .expect("saved");
    // A notice may also come from the catalog settling right after the handshake; the editor
    // re-lists after each one, as editors do, until the new backend's tools are there.
    let deadline = tokio::time::Instant::now() + EVENT_LIMIT;
    loop {
        tokio::time::timeout_at(deadline, notices.recv())
            .await
            .expect("a tools/list_changed naming the new tools arrives in time")
            .expect("the client lives");
        let after = client.list_all_tools().await.expect("tools listed");
        if after.iter().any(|tool| tool.name == "arrival__echo") {
            break;
        }
    }
    client.cancel().await.expect("the client closes");
}
