//! A call that waits for a person's yes raises a notification and brings up the hidden
//! window.

use serde_json::json;

use super::{X11, artifacts, colours, prepare, quit, wait_until};

#[test]
fn a_call_waiting_for_a_yes_brings_up_the_window_with_a_notification() {
    let Some((_one_app, notifications, mut desktop)) = prepare(&["demo"]) else {
        return;
    };
    let config = desktop.config_with(&["demo"]);
    desktop.write_config(&format!(
        "{config}\n[profiles.default]\nconfirm = [\"demo__add\"]\n"
    ));
    desktop.launch(&["--hidden"]);
    desktop.wait_for_state("demo", "ready");
    let tray = desktop.wait_for_tray();
    let x11 = X11::connect();
    assert!(x11.visible_window().is_none(), "it starts hidden");

    // The call waits: a notification says who wants to run what, and the window comes up.
    let mut editor = desktop.connect_editor();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "demo__add", "arguments": {"a": 2, "b": 3}}});
    editor.send(call);
    let notice = notifications.wait_for("the notification of the call waiting", |(summary, _)| {
        summary.contains("demo__add")
    });
    assert_eq!(notice.0, "Switchboard: desktop-test wants to run demo__add");
    assert!(
        notice.1.contains("add of demo waits for your yes"),
        "{notice:?}"
    );
    let window = wait_until("the window to come up", || x11.visible_window());

    // Its card is in the window; allowed, the call runs.
    // The dashboard painted with its data (the sidebar alone has a few hundred colours).
    let shot = wait_until("the dashboard with the card to paint", || {
        let shot = desktop.screenshot(window, "approval.png");
        (colours(&shot) > 1000).then_some(shot)
    });
    std::fs::copy(&shot, artifacts().join("window-approval.png")).expect("keep the screenshot");
    let id = wait_until("the call in /api/approvals", || {
        desktop.api("/api/approvals")[0]["id"].as_u64()
    });
    let allow = json!({"decision": "allow"});
    assert_eq!(
        desktop.api_post(&format!("/api/approvals/{id}"), &allow),
        200
    );
    let answer = editor.answer(2);
    assert_eq!(answer["result"]["content"][0]["text"], "5", "{answer}");
    editor.close();
    quit(&mut desktop, &tray);
}
