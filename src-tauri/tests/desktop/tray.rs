//! The tray: its menu starts, stops and restarts backends, copies the endpoint, opens the
//! window, and Quit leaves no process behind.

use super::{
    X11, alive, artifacts, clipboard, colours, group_members, prepare, quit, same_pixels,
    wait_until,
};

#[test]
fn the_tray_controls_backends_and_quit_leaves_no_process() {
    let Some((_one_app, notifications, mut desktop)) = prepare(&["demo", "tree", "flaky"]) else {
        return;
    };
    desktop.launch(&[]);

    // The tray menu appears on D-Bus and follows the backends' states.
    let tray = desktop.wait_for_tray();
    // What needs a person is the first line, with a way to the dashboard.
    let root = tray.wait_for_layout("the crash loop and two ready backends", |root| {
        root.label_starting("Needs attention: flaky keeps crashing")
            .is_some()
            && root.label("Review on the dashboard…").is_some()
            && root.label_starting("demo: ready").is_some()
            && root.label_starting("tree: ready").is_some()
            && root.label_starting("flaky: crash loop").is_some()
    });
    for label in [
        "Open dashboard",
        "Add server…",
        "Copy MCP endpoint URL",
        "Reload config",
        "Start at login",
        "Quit Switchboard",
    ] {
        assert!(root.label(label).is_some(), "no {label:?} in {root:#?}");
    }
    let tree = root.label_starting("tree: ready").expect("tree's submenu");
    assert!(!tree.child("Start").enabled, "Start is offered while ready");
    assert!(tree.child("Stop").enabled && tree.child("Restart").enabled);
    wait_until("the tray icon to show failing", || {
        tray.icon_is("tray-failing.png").then_some(())
    });

    // A crash loop raises one notification naming the backend.
    let notice = notifications.wait_for("the crash-loop notification", |(summary, _)| {
        summary.contains("flaky")
    });
    assert_eq!(notice.0, "Switchboard: flaky is in a crash loop");
    assert!(notice.1.contains("keeps crashing"), "{notice:?}");

    // Stop: the backend's process and its whole group are gone.
    let (tree_pid, grandchild) = desktop.tree_pids();
    assert!(alive(tree_pid) && alive(grandchild));
    tray.click_in("tree: ready", "Stop");
    wait_until("tree's process group to be gone", || {
        (!alive(tree_pid) && !alive(grandchild) && group_members(tree_pid).is_empty()).then_some(())
    });
    desktop.wait_for_state("tree", "stopped");

    // Start: ready again, with a new process; the menu follows both changes.
    std::fs::remove_file(desktop.path("tree.pid")).expect("remove the old pidfile");
    tray.click_in("tree: stopped", "Start");
    desktop.wait_for_state("tree", "ready");
    let (new_pid, _) = desktop.tree_pids();
    assert_ne!(new_pid, tree_pid);
    assert!(alive(new_pid));
    tray.wait_for_layout("tree ready again", |root| {
        root.label_starting("tree: ready").is_some()
    });

    // With the crash-looping backend stopped nothing fails: the icon turns to ready.
    tray.click_in("flaky: crash loop", "Stop");
    tray.wait_for_layout("flaky stopped", |root| {
        root.label_starting("2 ready, 1 stopped").is_some()
    });
    wait_until("the tray icon to show ready", || {
        tray.icon_is("tray-ready.png").then_some(())
    });

    let x11 = X11::connect();
    let window = wait_until("the dashboard window to be shown", || x11.visible_window());

    // Closing the window hides it; the app and its backends go on.
    x11.close(window);
    wait_until("the window to hide", || {
        x11.visible_window().is_none().then_some(())
    });
    assert!(desktop.running(), "closing the window ended the app");
    assert!(alive(new_pid), "closing the window stopped a backend");

    // A second launch shows the first one's window and exits 0.
    let second = desktop.command().output().expect("second launch");
    assert!(
        second.status.success(),
        "the second launch exited with {}: {}",
        second.status,
        String::from_utf8_lossy(&second.stderr)
    );
    wait_until("the second launch to show the window", || {
        x11.visible_window()
    });
    assert!(desktop.running());

    // Open dashboard shows the window again after it was closed.
    x11.close(window);
    wait_until("the window to hide", || {
        x11.visible_window().is_none().then_some(())
    });
    tray.click("Open dashboard");
    wait_until("Open dashboard to show the window", || x11.visible_window());

    // Copy MCP endpoint URL puts the endpoint on the clipboard.
    let endpoint = format!("http://{}/mcp", desktop.address());
    tray.click("Copy MCP endpoint URL");
    wait_until("the endpoint on the clipboard", || {
        (clipboard().as_deref() == Some(endpoint.as_str())).then_some(())
    });

    // Start at login writes the login item and checks the item; a second click undoes both.
    let login_item = desktop.path("home/.config/autostart/Switchboard.desktop");
    tray.click("Start at login");
    tray.wait_for_layout("Start at login checked", |root| {
        root.label("Start at login")
            .is_some_and(|item| item.toggled == Some(true))
    });
    let entry = std::fs::read_to_string(&login_item).expect("the login item");
    assert!(entry.contains("switchboard-desktop --hidden"), "{entry}");
    tray.click("Start at login");
    tray.wait_for_layout("Start at login unchecked", |root| {
        root.label("Start at login")
            .is_some_and(|item| item.toggled == Some(false))
    });
    assert!(!login_item.exists(), "the login item stayed");

    // Reload config reads the file even when nothing changed; an added backend gets a submenu.
    let checked = desktop.api("/api/config")["checked_at_ms"].clone();
    tray.click("Reload config");
    wait_until("the reload", || {
        (desktop.api("/api/config")["checked_at_ms"] != checked).then_some(())
    });
    desktop.write_config(&desktop.config_with(&["demo", "tree", "flaky", "late"]));
    tray.click("Reload config");
    desktop.wait_for_state("late", "ready");
    tray.wait_for_layout("the added backend", |root| {
        root.label_starting("late: ready").is_some()
    });

    // `switchboard connect` attaches to the app as it does to `serve`.
    let tools = desktop.tools_through_connect();
    assert!(
        tools.iter().any(|tool| tool == "demo__echo")
            && tools.iter().any(|tool| tool == "tree__pid"),
        "{tools:?}"
    );

    // The window shows the dashboard, not a blank page, and repaints as it changes (uptimes
    // tick every second); the last picture is kept for a person to look at.
    let painted = wait_until("the dashboard to paint", || {
        let shot = desktop.screenshot(window, "window-first.png");
        (colours(&shot) > 50).then_some(shot)
    });
    let kept = wait_until("the window to repaint", || {
        let shot = desktop.screenshot(window, "window.png");
        (!same_pixels(&shot, &painted)).then_some(shot)
    });
    std::fs::copy(&kept, artifacts().join("window.png")).expect("keep the screenshot");
    eprintln!(
        "screenshot of the window: {}",
        artifacts().join("window.png").display()
    );

    // Quit: the app exits 0 and no process it started is left.
    let pids: Vec<u32> = desktop
        .api("/api/backends")
        .as_array()
        .expect("backends")
        .iter()
        .filter_map(|backend| backend["pid"].as_u64())
        .map(|pid| pid as u32)
        .collect();
    assert_eq!(pids.len(), 3, "demo, tree and late run");
    quit(&mut desktop, &tray);
    let groups: Vec<u32> = pids.iter().flat_map(|pid| group_members(*pid)).collect();
    assert!(
        groups.is_empty(),
        "processes left in the backends' groups: {groups:?}"
    );
}
