//! End to end: the real desktop app on a real X server and a real D-Bus session, driven through
//! its tray menu over D-Bus as a panel would, with real backends. Run it as
//! `xvfb-run -a dbus-run-session -- cargo test -p switchboard-desktop` (scripts/test does);
//! without a display it fails, unless `SWITCHBOARD_SKIP_DESKTOP_E2E=1` says not to run it.
//! This file is the harness that drives the app; the tests are in the modules below.

#![allow(clippy::disallowed_methods)] // tests start real processes

mod asking;
mod starting;
mod tray;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use x11rb::connection::Connection as _;
use x11rb::protocol::xproto::{
    AtomEnum, ClientMessageEvent, ConnectionExt as _, EventMask, MapState, Window,
};
use x11rb::rust_connection::RustConnection;

/// Set to anything to skip this test (CI never does).
const SKIP_ENV: &str = "SWITCHBOARD_SKIP_DESKTOP_E2E";
const TOKEN: &str = "desktop-test-token-0123456789";
/// Generous: a first launch once took over 8 s to paint on a busy 2-core machine.
const LIMIT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(100);
const TITLE: &str = "Switchboard";

/// The tests each run an app in the same D-Bus session, where the app is a single instance.
static ONE_APP_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Clicks Quit, then checks that the app exits 0 and that no process it started is left.
fn quit(desktop: &mut Desktop, tray: &Tray) {
    tray.click("Quit Switchboard");
    let status = desktop.wait_for_exit();
    assert!(status.success(), "Quit exited with {status}");
    wait_until("every process the app started to be gone", || {
        desktop.processes_left().is_empty().then_some(())
    });
}

/// An editor speaking to the app through `switchboard connect`.
struct ConnectEditor {
    connect: Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

impl ConnectEditor {
    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("write to connect");
    }

    /// The answer to request `id`, skipping everything else.
    fn answer(&self, id: u64) -> Value {
        loop {
            let line = self.lines.recv_timeout(LIMIT).expect("connect answers");
            let message: Value = serde_json::from_str(&line).expect("JSON from connect");
            if message["id"] == id {
                return message;
            }
        }
    }

    /// Ends the session; connect exits 0.
    fn close(mut self) {
        drop(self.stdin);
        assert!(self.connect.wait().expect("connect exits").success());
    }
}

/// A notification server and a desktop with a config of these backends, while no other test's
/// app runs; `None` when the test is not to run.
fn prepare(backends: &[&str]) -> Option<(MutexGuard<'static, ()>, NotificationServer, Desktop)> {
    if !environment_ready() {
        return None;
    }
    let one_app = ONE_APP_AT_A_TIME
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    let notifications = NotificationServer::start();
    let desktop = Desktop::new();
    desktop.write_config(&desktop.config_with(backends));
    Some((one_app, notifications, desktop))
}

/// Whether the test should run; panics with how to run it when there is no display.
fn environment_ready() -> bool {
    if std::env::var_os(SKIP_ENV).is_some() {
        eprintln!("skipped: {SKIP_ENV} is set");
        return false;
    }
    for needed in ["DISPLAY", "DBUS_SESSION_BUS_ADDRESS"] {
        assert!(
            std::env::var_os(needed).is_some(),
            "the desktop end-to-end test needs an X display and a D-Bus session ({needed} is not \
             set): run `xvfb-run -a dbus-run-session -- cargo test -p switchboard-desktop`, as \
             scripts/test does, or set {SKIP_ENV}=1 to skip it"
        );
    }
    true
}

/// One app with its own home, config, runtime and data directories.
struct Desktop {
    dir: tempfile::TempDir,
    /// The Switchboard this desktop runs: the app, or `switchboard serve`.
    instance: Option<Child>,
}

impl Desktop {
    fn new() -> Desktop {
        use std::os::unix::fs::DirBuilderExt;
        let dir = tempfile::tempdir().expect("temp dir");
        for private in ["run", "xdg-run"] {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(dir.path().join(private))
                .expect("runtime dir");
        }
        std::fs::create_dir_all(dir.path().join("home")).expect("home");
        Desktop {
            dir,
            instance: None,
        }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    fn app_exe() -> PathBuf {
        PathBuf::from(env!("CARGO_BIN_EXE_switchboard-desktop"))
    }

    /// The `switchboard` command line binary the app runs, beside the app's binary.
    fn cli(&self) -> PathBuf {
        let cli = Self::app_exe().with_file_name("switchboard");
        assert!(
            cli.is_file(),
            "{} is missing: build it first with `cargo build --bin switchboard`",
            cli.display()
        );
        cli
    }

    /// A config with these backends: `demo` (the built-in demo server), `tree` (a server that
    /// forks a grandchild), `flaky` (dies in every handshake, so it ends in a crash loop), `late`.
    fn config_with(&self, names: &[&str]) -> String {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/backends/misbehave.py");
        let script = script.display();
        let mut config = String::from(
            "[endpoint]\nlisten = \"127.0.0.1:0\"\nrequire_token = false\n\n[desktop]\nnotify_crash_loop = true\n",
        );
        for name in names {
            let entry = match *name {
                "demo" | "late" => format!(
                    "command = {:?}\nargs = [\"demo-server\"]\n",
                    self.cli().display().to_string()
                ),
                "tree" => format!(
                    "command = \"python3\"\nargs = [\"{script}\", \"--grandchild\", \"--pidfile\", {:?}]\n",
                    self.path("tree.pid").display().to_string()
                ),
                "flaky" => format!(
                    "command = \"python3\"\nargs = [\"{script}\", \"--exit-during-handshake\", \"3\"]\n\
                     [servers.flaky.restart]\nbackoff_base = \"10ms\"\nbackoff_cap = \"20ms\"\nmax_restarts = 2\n"
                ),
                other => panic!("no backend {other} in this test"),
            };
            config.push_str(&format!("\n[servers.{name}]\n{entry}"));
        }
        config
    }

    fn write_config(&self, text: &str) {
        std::fs::write(self.path("config.toml"), text).expect("write the config");
    }

    /// A command with this desktop's environment.
    fn command_for(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("home/.config"))
            .env("XDG_DATA_HOME", self.path("home/.local/share"))
            .env("XDG_CACHE_HOME", self.path("home/.cache"))
            .env("XDG_RUNTIME_DIR", self.path("xdg-run"))
            .env("SWITCHBOARD_CONFIG", self.path("config.toml"))
            .env("SWITCHBOARD_RUNTIME_DIR", self.path("run"))
            .env("SWITCHBOARD_DATA_DIR", self.path("data"))
            .env("SWITCHBOARD_TOKEN", TOKEN)
            .env("SWITCHBOARD_LOG", "info")
            .env("NO_AT_BRIDGE", "1")
            .stdin(Stdio::null());
        command
    }

    fn command(&self) -> Command {
        self.command_for(&Self::app_exe())
    }

    fn launch(&mut self, args: &[&str]) {
        self.start(self.command().args(args));
    }

    fn launch_serve(&mut self) {
        self.start(self.command_for(&self.cli()).arg("serve"));
    }

    fn start(&mut self, command: &mut Command) {
        let log = std::fs::File::create(self.path("app.log")).expect("app log");
        let instance = command
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("switchboard starts");
        self.instance = Some(instance);
    }

    fn pid(&self) -> u32 {
        self.instance.as_ref().expect("launched").id()
    }

    fn running(&mut self) -> bool {
        let instance = self.instance.as_mut().expect("launched");
        instance.try_wait().expect("its status").is_none()
    }

    fn wait_for_exit(&mut self) -> ExitStatus {
        let instance = self.instance.as_mut().expect("launched");
        let status = wait_until("switchboard to exit", || {
            instance.try_wait().expect("its status")
        });
        self.instance = None;
        status
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.path("app.log")).unwrap_or_default()
    }

    /// Where the running instance's HTTP endpoint listens, from the file it writes.
    fn address(&self) -> String {
        wait_until("the instance file", || {
            let text = std::fs::read_to_string(self.path("run/instance.json")).ok()?;
            let instance: Value = serde_json::from_str(&text).ok()?;
            instance["address"].as_str().map(str::to_owned)
        })
    }

    /// GET `path` of the control API; `Value::Null` when it does not answer 200.
    fn api(&self, path: &str) -> Value {
        match self.api_request("GET", path, None) {
            Some((200, body)) => body,
            _ => Value::Null,
        }
    }

    /// POSTs `body` to `path` of the control API; its status.
    fn api_post(&self, path: &str, body: &Value) -> u16 {
        self.api_request("POST", path, Some(body))
            .map_or(0, |(status, _)| status)
    }

    /// `method` `path` of the control API with `body`: the status and the body (`Value::Null`
    /// when it is not JSON); `None` when the API does not answer.
    fn api_request(&self, method: &str, path: &str, body: Option<&Value>) -> Option<(u16, Value)> {
        let address = self.address();
        let mut stream = std::net::TcpStream::connect(&address).ok()?;
        let body = body.map(Value::to_string).unwrap_or_default();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let mut response = String::new();
        stream.write_all(request.as_bytes()).ok()?;
        stream.read_to_string(&mut response).ok()?;
        let (head, body) = response.split_once("\r\n\r\n")?;
        let status = head.split_whitespace().nth(1)?.parse().ok()?;
        Some((status, serde_json::from_str(body).unwrap_or(Value::Null)))
    }

    fn wait_for_state(&self, name: &str, state: &str) {
        wait_until(&format!("{name} to be {state} in /api/backends"), || {
            let backends = self.api("/api/backends");
            let found = backends
                .as_array()?
                .iter()
                .any(|backend| backend["name"] == name && backend["state"] == state);
            found.then_some(())
        });
    }

    /// `tree`'s pid and its grandchild's, from its pidfile.
    fn tree_pids(&self) -> (u32, u32) {
        wait_until("tree's pidfile", || {
            let text = std::fs::read_to_string(self.path("tree.pid")).ok()?;
            let mut pids = text.split_whitespace().map(|pid| pid.parse::<u32>().ok());
            Some((pids.next()??, pids.next()??))
        })
    }

    fn wait_for_tray(&self) -> Tray {
        let pid = self.pid();
        wait_until("the tray menu on D-Bus", || Tray::find(pid))
    }

    fn screenshot(&self, window: Window, name: &str) -> PathBuf {
        let shot = self.path(name);
        let status = Command::new("import")
            .args(["-window", &window.to_string()])
            .arg(&shot)
            .status()
            .expect("imagemagick's import runs");
        assert!(status.success(), "import failed: {status}");
        shot
    }

    /// The tools `switchboard connect` offers an editor, by name.
    fn tools_through_connect(&self) -> Vec<String> {
        let mut editor = self.connect_editor();
        editor.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
        let tools = editor.answer(2)["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
            .collect();
        editor.close();
        tools
    }

    /// An editor over `switchboard connect`, initialized.
    fn connect_editor(&self) -> ConnectEditor {
        let mut connect = self
            .command_for(&self.cli())
            .arg("connect")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("switchboard connect starts");
        let stdin = connect.stdin.take().expect("stdin");
        let (lines_tx, lines) = std::sync::mpsc::channel();
        let stdout = connect.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = lines_tx.send(line);
            }
        });
        let mut editor = ConnectEditor {
            connect,
            stdin,
            lines,
        };
        editor.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "desktop-test", "version": "1"},
            }}),
        );
        editor.answer(1);
        editor.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        editor
    }

    /// Processes still running with this desktop's runtime directory in their environment:
    /// the app, its guardian and every backend (and their children) inherit it.
    fn processes_left(&self) -> Vec<u32> {
        let marker = format!("SWITCHBOARD_RUNTIME_DIR={}\0", self.path("run").display());
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| *pid != std::process::id() && alive(*pid))
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                    environ
                        .windows(marker.len())
                        .any(|window| window == marker.as_bytes())
                })
            })
            .collect()
    }
}

impl Drop for Desktop {
    fn drop(&mut self) {
        if let Some(mut instance) = self.instance.take() {
            let _ = instance.kill();
            let _ = instance.wait();
        }
        if std::thread::panicking() {
            eprintln!("--- the app's log ---\n{}", self.log());
        }
    }
}

/// The app's tray menu, exported by the indicator library (com.canonical.dbusmenu).
struct Tray {
    owner: String,
    item_path: String,
    menu_path: String,
}

/// One item of the tray menu as D-Bus shows it.
#[derive(Debug, Clone)]
struct Item {
    id: i64,
    label: String,
    enabled: bool,
    toggled: Option<bool>,
    children: Vec<Item>,
}

impl Tray {
    /// The connection of process `pid` that exports a tray menu, if any does yet.
    fn find(pid: u32) -> Option<Tray> {
        let names: Value = serde_json::from_str(&busctl(&["list"]).ok()?).ok()?;
        names.as_array()?.iter().find_map(|name| {
            let owner = name["name"].as_str()?;
            if name["pid"].as_u64() != Some(u64::from(pid)) || !owner.starts_with(':') {
                return None;
            }
            let paths = busctl(&["tree", "--list", owner]).ok()?;
            let menu_path = paths.lines().find(|path| {
                path.starts_with("/org/ayatana/NotificationItem/") && path.ends_with("/Menu")
            })?;
            Some(Tray {
                owner: owner.to_owned(),
                item_path: menu_path.strip_suffix("/Menu")?.to_owned(),
                menu_path: menu_path.to_owned(),
            })
        })
    }

    /// The menu as D-Bus shows it now; `None` when the call fails (the app is busy or gone).
    fn layout(&self) -> Option<Item> {
        let text = busctl(&[
            "--",
            "call",
            &self.owner,
            &self.menu_path,
            "com.canonical.dbusmenu",
            "GetLayout",
            "iias",
            "0",
            "-1",
            "0",
        ])
        .ok()?;
        let reply: Value = serde_json::from_str(&text).ok()?;
        Some(Item::from_layout(&reply["data"][1]))
    }

    /// The first whole layout that passes `check`.
    fn wait_for_layout(&self, what: &str, check: impl Fn(&Item) -> bool) -> Item {
        wait_until(&format!("the tray menu to show {what}"), || {
            self.layout()
                .filter(|layout| layout.is_whole() && check(layout))
        })
    }

    /// Clicks the item labelled `label`, as a panel does when a person clicks it.
    fn click(&self, label: &str) {
        self.click_found(label, |root| root.label(label));
    }

    /// Clicks `label` in the submenu whose label starts with `submenu`.
    fn click_in(&self, submenu: &str, label: &str) {
        self.click_found(&format!("{submenu} > {label}"), |root| {
            root.label_starting(submenu)?
                .children
                .iter()
                .find(|child| child.label == label)
        });
    }

    /// Clicks the item `find` picks in the menu as it is now. The menu is rebuilt when a state
    /// changes, so an id can go between reading the menu and clicking; then nothing was clicked,
    /// and the click is tried again on the new menu.
    fn click_found(&self, what: &str, find: impl Fn(&Item) -> Option<&Item>) {
        wait_until(&format!("a click on {what}"), || {
            let layout = self.layout()?;
            let item = find(&layout)?;
            assert!(item.enabled, "{what} is disabled");
            let id = item.id.to_string();
            let clicked = busctl(&[
                "call",
                &self.owner,
                &self.menu_path,
                "com.canonical.dbusmenu",
                "Event",
                "isvu",
                &id,
                "clicked",
                "i",
                "0",
                "0",
            ]);
            match clicked {
                Ok(_) => Some(()),
                Err(error) if error.contains("does not refer to a menu item") => None,
                Err(error) => panic!("clicking {what} failed: {error}"),
            }
        });
    }

    /// Whether the tray icon shows `icons/<name>`, pixel for pixel.
    fn icon_is(&self, name: &str) -> bool {
        let property = |property: &str| -> Option<String> {
            let text = busctl(&[
                "get-property",
                &self.owner,
                &self.item_path,
                "org.kde.StatusNotifierItem",
                property,
            ])
            .ok()?;
            let value: Value = serde_json::from_str(&text).ok()?;
            value["data"].as_str().map(str::to_owned)
        };
        let Some(icon_name) = property("IconName") else {
            return false;
        };
        let shown = if Path::new(&icon_name).is_absolute() {
            PathBuf::from(&icon_name)
        } else {
            let Some(theme_path) = property("IconThemePath") else {
                return false;
            };
            Path::new(&theme_path).join(format!("{icon_name}.png"))
        };
        same_pixels(
            &shown,
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../icons")
                .join(name),
        )
    }
}

impl Item {
    /// Whether this menu has all its items. The app empties the menu and fills it again on
    /// every change, front to back, so a layout read meanwhile lacks its first or last items.
    fn is_whole(&self) -> bool {
        let summary_first = self
            .children
            .first()
            .is_some_and(|item| !item.enabled && !item.label.is_empty());
        let quit_last = self
            .children
            .last()
            .is_some_and(|item| item.label == "Quit Switchboard");
        summary_first && quit_last
    }

    fn from_layout(node: &Value) -> Item {
        let properties = &node[1];
        let property = |name: &str| &properties[name]["data"];
        Item {
            id: node[0].as_i64().expect("an item id"),
            label: property("label").as_str().unwrap_or_default().to_owned(),
            enabled: property("enabled").as_bool().unwrap_or(true),
            toggled: property("toggle-state").as_i64().map(|state| state == 1),
            children: node[2]
                .as_array()
                .map(|children| {
                    children
                        .iter()
                        .map(|child| Item::from_layout(&child["data"]))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// The first item, at any depth, whose label satisfies `matches`.
    fn find(&self, matches: &dyn Fn(&str) -> bool) -> Option<&Item> {
        if matches(&self.label) {
            return Some(self);
        }
        self.children.iter().find_map(|child| child.find(matches))
    }

    fn label(&self, label: &str) -> Option<&Item> {
        self.find(&|found| found == label)
    }

    fn label_starting(&self, prefix: &str) -> Option<&Item> {
        self.find(&|found| found.starts_with(prefix))
    }

    fn child(&self, label: &str) -> &Item {
        self.children
            .iter()
            .find(|child| child.label == label)
            .unwrap_or_else(|| panic!("no {label:?} under {self:#?}"))
    }
}

/// Runs `busctl --user --json=short ARGS`: its output, or what it said on stderr.
fn busctl(args: &[&str]) -> Result<String, String> {
    let output = Command::new("busctl")
        .args(["--user", "--json=short"])
        .args(args)
        .output()
        .expect("busctl runs");
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// The X server, to find, close and photograph the dashboard window.
struct X11 {
    connection: RustConnection,
    root: Window,
}

impl X11 {
    fn connect() -> X11 {
        let (connection, screen) = x11rb::connect(None).expect("the X display");
        let root = connection.setup().roots[screen].root;
        X11 { connection, root }
    }

    fn atom(&self, name: &str) -> u32 {
        self.connection
            .intern_atom(false, name.as_bytes())
            .expect("intern_atom")
            .reply()
            .expect("an atom")
            .atom
    }

    /// The window titled "Switchboard", when it is shown. (There is no window manager: the
    /// app's windows are the root's children.)
    fn visible_window(&self) -> Option<Window> {
        let children = self
            .connection
            .query_tree(self.root)
            .ok()?
            .reply()
            .ok()?
            .children;
        children.into_iter().find(|window| {
            let title = self
                .connection
                .get_property(false, *window, AtomEnum::WM_NAME, AtomEnum::ANY, 0, 256)
                .ok()
                .and_then(|cookie| cookie.reply().ok())
                .map(|reply| reply.value);
            let viewable = self
                .connection
                .get_window_attributes(*window)
                .ok()
                .and_then(|cookie| cookie.reply().ok())
                .is_some_and(|attributes| attributes.map_state == MapState::VIEWABLE);
            viewable && title.as_deref() == Some(TITLE.as_bytes())
        })
    }

    /// Asks the window to close, as a window manager does when a person clicks its close button.
    fn close(&self, window: Window) {
        let event = ClientMessageEvent::new(
            32,
            window,
            self.atom("WM_PROTOCOLS"),
            [self.atom("WM_DELETE_WINDOW"), 0, 0, 0, 0],
        );
        self.connection
            .send_event(false, window, EventMask::NO_EVENT, event)
            .expect("send WM_DELETE_WINDOW");
        self.connection.flush().expect("flush");
    }
}

/// A notification server on the session bus that records what it is asked to show.
struct NotificationServer {
    received: Arc<Mutex<Vec<(String, String)>>>,
    _connection: zbus::Connection,
}

struct Notifications {
    received: Arc<Mutex<Vec<(String, String)>>>,
}

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl Notifications {
    #[allow(clippy::too_many_arguments)] // the specification's signature
    fn notify(
        &self,
        _app_name: String,
        _replaces_id: u32,
        _app_icon: String,
        summary: String,
        body: String,
        _actions: Vec<String>,
        _hints: HashMap<String, zbus::OwnedVariant>,
        _expire_timeout: i32,
    ) -> u32 {
        let mut received = self.received.lock().expect("notifications lock");
        received.push((summary, body));
        received.len() as u32
    }

    fn get_capabilities(&self) -> Vec<String> {
        vec!["body".to_owned()]
    }

    fn get_server_information(&self) -> (String, String, String, String) {
        let field = |text: &str| text.to_owned();
        (
            field("desktop-test"),
            field("switchboard"),
            field("1"),
            field("1.2"),
        )
    }

    fn close_notification(&self, _id: u32) {}
}

impl NotificationServer {
    fn start() -> NotificationServer {
        let received = Arc::new(Mutex::new(Vec::new()));
        let connection = zbus::block_on(async {
            zbus::connection::Builder::session()
                .name("org.freedesktop.Notifications")
                .serve_at(
                    "/org/freedesktop/Notifications",
                    Notifications {
                        received: received.clone(),
                    },
                )
                .build()
                .await
        })
        .expect("serve org.freedesktop.Notifications on the session bus");
        NotificationServer {
            received,
            _connection: connection,
        }
    }

    fn wait_for(&self, what: &str, check: impl Fn(&(String, String)) -> bool) -> (String, String) {
        wait_until(what, || {
            let received = self.received.lock().expect("notifications lock");
            received.iter().find(|notice| check(notice)).cloned()
        })
    }
}

/// Polls `check` until it gives a value; panics naming `what` after [`LIMIT`].
fn wait_until<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {LIMIT:?} waiting for {what}"
        );
        std::thread::sleep(POLL);
    }
}

/// Whether a process exists and is not a zombie.
fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|(state, _)| state != 'Z')
}

/// Live processes in process group `group`.
fn group_members(group: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| stat(*pid).is_some_and(|(state, pgrp)| state != 'Z' && pgrp == group))
        .collect()
}

/// A process's state letter and process group, from `/proc/PID/stat`.
fn stat(pid: u32) -> Option<(char, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _parent = fields.next()?;
    Some((state, fields.next()?.parse().ok()?))
}

fn send_signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

/// Whether two pictures have the same pixels.
fn same_pixels(one: &Path, other: &Path) -> bool {
    Command::new("compare")
        .args(["-metric", "AE"])
        .arg(one)
        .arg(other)
        .arg("null:")
        .output()
        .expect("imagemagick's compare runs")
        .status
        .success()
}

/// How many different colours the picture has.
fn colours(png: &Path) -> usize {
    let output = Command::new("identify")
        .args(["-format", "%k"])
        .arg(png)
        .output()
        .expect("imagemagick's identify runs");
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

/// What the X clipboard holds.
fn clipboard() -> Option<String> {
    let output = Command::new("xclip")
        .args(["-selection", "clipboard", "-o"])
        .output()
        .expect("xclip runs");
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Where screenshots are kept for a person to look at.
fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../artifacts/desktop");
    std::fs::create_dir_all(&dir).expect("artifacts dir");
    dir
}
