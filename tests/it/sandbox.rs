//! Sandboxed servers, against a real `switchboard serve`: `tests/backends/sandbox_probe.py` tries
//! to read `~/.ssh` (of a fake home), to write outside its folders, to connect to a listener the
//! test runs, to reach an abstract Unix socket and to signal Switchboard, and is refused each time
//! while it keeps answering; the official `server-filesystem` works in its folder and is refused
//! beyond it; a sandbox this kernel cannot enforce (a Landlock ABI capped with
//! `SWITCHBOARD_LANDLOCK_ABI`) keeps its server from starting, with the reason, unless the config
//! allows it to run without all of it; `switchboard check` points at each mistake.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::fd::FromRawFd as _;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// A home folder of the test's own, with a key where an SSH key would be, a folder the server
/// may write (`work`, with a note in it) and one it may not (`outside`).
struct FakeHome {
    dir: tempfile::TempDir,
}

impl FakeHome {
    fn new() -> FakeHome {
        let dir = tempfile::tempdir().expect("a folder");
        let home = dir.path();
        std::fs::create_dir_all(home.join(".ssh")).expect(".ssh");
        std::fs::write(home.join(".ssh/id_rsa"), "FAKE PRIVATE KEY").expect("a key");
        std::fs::create_dir_all(home.join("work")).expect("work");
        std::fs::write(home.join("work/note.txt"), "a note").expect("a note");
        std::fs::create_dir_all(home.join("outside")).expect("outside");
        FakeHome { dir }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    fn text(&self, relative: &str) -> String {
        self.path(relative).to_string_lossy().into_owned()
    }
}

/// `[servers.NAME]` running the probe, with `sandbox` (TOML lines) as its sandbox table, or
/// none.
fn probe_entry(name: &str, sandbox: Option<&str>) -> String {
    let script = backend_script("sandbox_probe.py");
    let mut entry = format!(
        "[servers.{name}]\ncommand = {python:?}\nargs = [{script:?}]\n\
         env = {{ PROBE_GIVEN = \"given\" }}\n\n",
        python = python().to_string_lossy(),
        script = script.to_string_lossy(),
    );
    if let Some(sandbox) = sandbox {
        let folder = script.parent().expect("tests/backends");
        entry.push_str(&format!(
            "[servers.{name}.sandbox]\nread = [{folder:?}]\n{sandbox}\n\n",
            folder = folder.to_string_lossy()
        ));
    }
    entry
}

/// Serve over `config` with `home` as its home folder and a canary in its environment.
fn serve_in(home: &FakeHome, config: &str, ready: &[&str]) -> ServeProcess {
    ServeOptions::new(config)
        .env("HOME", home.dir.path())
        .env("SANDBOX_CANARY", "switchboard's own secret")
        .ready(ready)
        .start()
}

/// Calls `tool` of `backend` through the control API; the text of its answer.
async fn call(serve: &ServeProcess, backend: &str, tool: &str, arguments: Value) -> String {
    let (status, result) = serve
        .api_post_body(
            &format!("/api/backends/{backend}/tools/{tool}/call"),
            &arguments.to_string(),
        )
        .await;
    assert_eq!(status, 200, "{backend} {tool}: {result}");
    first_text(&result)
}

/// Asserts that `answer` is a refusal by the system.
fn assert_refused(answer: &str, what: &str) {
    assert!(answer.starts_with("refused: "), "{what}: {answer}");
}

/// A loopback TCP listener that never accepts on its own: whether anyone connected is read with
/// [`connected`].
fn tcp_listener() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.set_nonblocking(true).expect("non-blocking");
    let port = listener.local_addr().expect("an address").port();
    (listener, port)
}

fn connected(listener: &TcpListener) -> bool {
    match listener.accept() {
        Ok(_) => true,
        Err(error) if error.kind() == ErrorKind::WouldBlock => false,
        Err(error) => panic!("accept: {error}"),
    }
}

/// A listener on the abstract Unix socket `name` (a Linux thing: a name that starts with a NUL
/// byte and lives in the network namespace, not in a folder). Made with the system's calls, as
/// the standard library offers it on Linux alone and this file is built on every system.
fn abstract_listener(name: &str) -> UnixListener {
    // SAFETY: a socket is made and checked; the address is zeroed, then its family and the path
    // (a NUL then `name`, shorter than `sun_path`) set within its bounds; its length counts only
    // what was set; the descriptor is owned by the listener once bound and listening.
    unsafe {
        let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let listener = UnixListener::from_raw_fd(fd);
        let mut address: libc::sockaddr_un = std::mem::zeroed();
        address.sun_family = libc::AF_UNIX as libc::sa_family_t;
        assert!(name.len() < address.sun_path.len() - 1, "a short name");
        for (slot, byte) in address.sun_path[1..].iter_mut().zip(name.bytes()) {
            *slot = byte as libc::c_char;
        }
        let length = std::mem::offset_of!(libc::sockaddr_un, sun_path) + 1 + name.len();
        let bound = libc::bind(fd, (&raw const address).cast(), length as libc::socklen_t);
        assert_eq!(bound, 0, "bind: {}", std::io::Error::last_os_error());
        assert_eq!(
            libc::listen(fd, 16),
            0,
            "listen: {}",
            std::io::Error::last_os_error()
        );
        listener.set_nonblocking(true).expect("non-blocking");
        listener
    }
}

fn unix_connected(listener: &UnixListener) -> bool {
    match listener.accept() {
        Ok(_) => true,
        Err(error) if error.kind() == ErrorKind::WouldBlock => false,
        Err(error) => panic!("accept: {error}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_server_is_refused_everything_it_was_not_given_and_keeps_answering() {
    let home = FakeHome::new();
    let (listener, port) = tcp_listener();
    let (control_listener, control_port) = tcp_listener();
    let socket_name = format!("switchboard-sandbox-test-{}", std::process::id());
    let unix_listener = abstract_listener(&socket_name);
    let config = format!(
        "{}{}",
        probe_entry("probe", Some("write = [\"~/work\"]\nconnect = [443]")),
        probe_entry("open", None),
    );
    let serve = serve_in(&home, &config, &["probe", "open"]);
    let pid_before = serve.backend_summary("probe").await["pid"].clone();

    // What it was given works.
    let note = call(
        &serve,
        "probe",
        "read",
        json!({"path": home.text("work/note.txt")}),
    )
    .await;
    assert_eq!(note, "ok: a note");
    let written = json!({"path": home.text("work/out.txt"), "text": "from the probe"});
    assert_eq!(call(&serve, "probe", "write", written).await, "ok: written");
    assert_eq!(
        std::fs::read_to_string(home.path("work/out.txt")).expect("written"),
        "from the probe"
    );

    // Everything else is refused by the system.
    let key = call(
        &serve,
        "probe",
        "read",
        json!({"path": home.text(".ssh/id_rsa")}),
    )
    .await;
    assert_refused(&key, "reading ~/.ssh/id_rsa");
    assert!(key.contains("PermissionError"), "{key}");
    for outside in [home.path("outside/x.txt"), home.path("x.txt")] {
        let arguments = json!({"path": outside.to_string_lossy(), "text": "escaped"});
        let answer = call(&serve, "probe", "write", arguments).await;
        assert_refused(&answer, &format!("writing {}", outside.display()));
        assert!(!outside.exists(), "{} was written", outside.display());
    }
    let connect = call(&serve, "probe", "connect", json!({"port": port})).await;
    assert_refused(&connect, "connecting to a loopback port not in `connect`");
    assert!(!connected(&listener), "the listener got a connection");
    let reached = call(&serve, "probe", "abstract", json!({"name": socket_name})).await;
    assert_refused(&reached, "connecting to an abstract Unix socket");
    assert!(
        !unix_connected(&unix_listener),
        "the socket got a connection"
    );
    let signalled = call(&serve, "probe", "signal", json!({"pid": serve.pid()})).await;
    assert_refused(&signalled, "signalling Switchboard");
    assert!(alive(serve.pid()), "Switchboard was signalled");
    let environ = format!("/proc/{}/environ", serve.pid());
    let secrets = call(&serve, "probe", "read", json!({"path": environ})).await;
    assert_refused(&secrets, "reading Switchboard's environment");

    // Its environment is PATH, HOME, the locale and its own `env`: Switchboard's is not passed.
    let environment: Vec<String> =
        serde_json::from_str(&call(&serve, "probe", "environment", json!({})).await)
            .expect("a JSON list");
    for name in &environment {
        let kept = ["PATH", "HOME", "LANG", "PROBE_GIVEN", "SWITCHBOARD_RUN_ID"]
            .contains(&name.as_str())
            || name.starts_with("LC_");
        assert!(kept, "{name} reached the server: {environment:?}");
    }
    assert!(environment.contains(&"PROBE_GIVEN".to_owned()));
    assert!(environment.contains(&"HOME".to_owned()));

    // Still answering, in the same process.
    let echo = call(&serve, "probe", "echo", json!({"text": "still here"})).await;
    assert_eq!(echo, "still here");
    let summary = serve.backend_summary("probe").await;
    assert_eq!(summary["state"], "ready");
    assert_eq!(summary["pid"], pid_before, "the server was not restarted");

    // The same server without a sandbox can do all of it but the signal: the refusals above are
    // the sandbox's.
    let key = call(
        &serve,
        "open",
        "read",
        json!({"path": home.text(".ssh/id_rsa")}),
    )
    .await;
    assert_eq!(key, "ok: FAKE PRIVATE KEY");
    let connect = call(&serve, "open", "connect", json!({"port": control_port})).await;
    assert_eq!(connect, "ok: connected");
    assert!(connected(&control_listener));
    let reached = call(&serve, "open", "abstract", json!({"name": socket_name})).await;
    assert_eq!(reached, "ok: connected");
    let environment = call(&serve, "open", "environment", json!({})).await;
    assert!(environment.contains("SANDBOX_CANARY"), "{environment}");
    let secrets = call(&serve, "open", "read", json!({"path": environ})).await;
    assert!(secrets.contains("SANDBOX_CANARY"), "{secrets}");

    // The API says what it may reach, and that all of it is enforced.
    let detail = serve.api_get("/api/backends/probe").await;
    let sandbox = &detail["config"]["sandbox"];
    assert_eq!(sandbox["enforcement"], "enforced", "{sandbox:#}");
    assert!(
        sandbox["landlock_abi"].as_u64().expect("an ABI") >= 6,
        "{sandbox:#}"
    );
    assert_eq!(sandbox["write"], json!([home.text("work")]));
    assert_eq!(sandbox["connect"], json!([443]));
    assert_eq!(sandbox["network"], true);
    assert_eq!(sandbox["shortfalls"], json!([]));
    let also_read = sandbox["also_read"].as_array().expect("a list");
    assert!(also_read.contains(&json!("/usr")), "{sandbox:#}");
    let open = serve.api_get("/api/backends/open").await;
    assert_eq!(open["config"]["sandbox"], Value::Null);
    let suggested = open["config"]["suggested_sandbox"]
        .as_str()
        .expect("a draft");
    assert!(suggested.contains("[servers.open.sandbox]"), "{suggested}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_network_reaches_no_port_and_no_abstract_socket() {
    let home = FakeHome::new();
    let (listener, port) = tcp_listener();
    let socket_name = format!("switchboard-sandbox-netns-{}", std::process::id());
    let unix_listener = abstract_listener(&socket_name);
    let config = probe_entry("offline", Some("write = [\"~/work\"]\nnetwork = false"));
    let serve = serve_in(&home, &config, &["offline"]);

    let connect = call(&serve, "offline", "connect", json!({"port": port})).await;
    assert_refused(&connect, "connecting without a network");
    assert!(!connected(&listener), "the listener got a connection");
    let reached = call(&serve, "offline", "abstract", json!({"name": socket_name})).await;
    assert_refused(&reached, "an abstract socket outside its network namespace");
    assert!(!unix_connected(&unix_listener));
    let note = call(
        &serve,
        "offline",
        "read",
        json!({"path": home.text("work/note.txt")}),
    )
    .await;
    assert_eq!(note, "ok: a note", "its files still work");

    let detail = serve.api_get("/api/backends/offline").await;
    assert_eq!(detail["config"]["sandbox"]["network"], false);
    assert_eq!(detail["config"]["sandbox"]["enforcement"], "enforced");
}

/// A session bus of the test's own: the real `dbus-daemon`, listening where a desktop session's
/// is (`$XDG_RUNTIME_DIR/bus`); stopped when dropped.
struct SessionBus(std::process::Child);

impl SessionBus {
    #[allow(clippy::disallowed_methods)] // the test's own bus, not a backend
    fn start(path: &Path) -> SessionBus {
        let daemon = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--nopidfile"])
            .arg(format!("--address=unix:path={}", path.display()))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("dbus-daemon starts (Debian's dbus package)");
        eventually_blocking("the session bus listens", Duration::from_secs(10), || {
            std::os::unix::net::UnixStream::connect(path).map(drop)
        });
        SessionBus(daemon)
    }
}

impl Drop for SessionBus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Switchboard's own socket is a way to every other server's tools: a sandboxed server finds its
/// folder empty, and so the real session bus's unless its sandbox says `dbus = true`; a server that
/// does reach the socket (one without a sandbox) is refused without the key in the data
/// directory, which no sandbox may read. No server inherits a descriptor serve inherited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_server_reaches_neither_switchboards_socket_nor_the_session_bus() {
    const INHERITED: i32 = 57;
    let home = FakeHome::new();
    let user_runtime = tempfile::tempdir().expect("a runtime folder");
    let bus_path = user_runtime.path().join("bus");
    let _bus = SessionBus::start(&bus_path);
    let config = [
        probe_entry("jail", Some("network = false")),
        probe_entry("busy", Some("dbus = true")),
        probe_entry("open", None),
    ]
    .concat();
    let serve = ServeOptions::new(&config)
        .env("HOME", home.dir.path())
        .env("XDG_RUNTIME_DIR", user_runtime.path())
        .env(
            "DBUS_SESSION_BUS_ADDRESS",
            format!("unix:path={}", bus_path.display()),
        )
        .inherit_descriptor(INHERITED)
        .ready(&["jail", "busy", "open"])
        .start();
    let socket = serve.dir().join("run/switchboard.sock");
    let key = serve.dir().join("data/socket-key");
    assert!(socket.exists() && key.exists(), "serve made both");
    let text = |path: &Path| path.to_string_lossy().into_owned();
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let relay = r#"{"switchboard":"relay","version":4,"prefix":0,"profile":"default"}"#;

    for jailed in ["jail", "busy"] {
        let reached = call(
            &serve,
            jailed,
            "unix",
            json!({"path": text(&socket), "line": relay}),
        )
        .await;
        assert_refused(&reached, &format!("{jailed}: Switchboard's socket"));
        assert!(reached.contains("FileNotFoundError"), "{reached}");
        let read = call(&serve, jailed, "read", json!({"path": text(&key)})).await;
        assert_refused(&read, &format!("{jailed}: the socket's key"));
    }
    let bus_reached = call(&serve, "jail", "unix", json!({"path": text(&bus_path)})).await;
    assert_refused(&bus_reached, "the session bus without dbus = true");
    let bus_allowed = call(&serve, "busy", "unix", json!({"path": text(&bus_path)})).await;
    assert_eq!(bus_allowed, "ok: connected", "dbus = true reaches the bus");
    for (jailed, told) in [("jail", false), ("busy", true)] {
        let environment: Vec<String> =
            serde_json::from_str(&call(&serve, jailed, "environment", json!({})).await)
                .expect("names");
        assert_eq!(
            environment.contains(&"DBUS_SESSION_BUS_ADDRESS".to_owned()),
            told,
            "{jailed} is told where the bus is only with dbus = true: {environment:?}"
        );
    }

    for opening in [ping, relay] {
        let answer = call(
            &serve,
            "open",
            "unix",
            json!({"path": text(&socket), "line": opening}),
        )
        .await;
        assert!(answer.starts_with("ok: R"), "refused: {answer}");
        assert!(answer.contains("key"), "and told why: {answer}");
    }

    for server in ["jail", "open"] {
        let open: Vec<i32> =
            serde_json::from_str(&call(&serve, server, "descriptors", json!({})).await)
                .expect("numbers");
        assert!(
            !open.contains(&INHERITED),
            "{server} inherited serve's descriptor: {open:?}"
        );
    }
    for (jailed, dbus) in [("jail", false), ("busy", true)] {
        let detail = serve.api_get(&format!("/api/backends/{jailed}")).await;
        assert_eq!(detail["config"]["sandbox"]["enforcement"], "enforced");
        assert_eq!(detail["config"]["sandbox"]["dbus"], dbus, "the API says so");
    }
}

/// A program that sits directly in the home folder is granted alone, never its folder: the home
/// folder, with `~/.ssh`, stays out of reach.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_in_the_home_folder_is_granted_alone() {
    use std::os::unix::fs::PermissionsExt as _;
    let home = FakeHome::new();
    let probe = std::fs::read_to_string(backend_script("sandbox_probe.py")).expect("the probe");
    let program = home.path("run-probe");
    let body = probe.split_once('\n').expect("a first line").1;
    std::fs::write(
        &program,
        format!("#!{}\n{body}", python().to_string_lossy()),
    )
    .expect("a program in the home folder");
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let config = format!(
        "[servers.homely]\ncommand = {program:?}\n\n[servers.homely.sandbox]\nnetwork = false\n",
        program = program.to_string_lossy()
    );
    let serve = serve_in(&home, &config, &["homely"]);
    let key = call(
        &serve,
        "homely",
        "read",
        json!({"path": home.text(".ssh/id_rsa")}),
    )
    .await;
    assert_refused(&key, "~/.ssh beside a program in the home folder");
    let echo = call(&serve, "homely", "echo", json!({"text": "runs"})).await;
    assert_eq!(echo, "runs", "the program itself still runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_filesystem_works_in_its_folder_and_is_refused_beyond_it() {
    let home = FakeHome::new();
    // The server is told it may serve ~/.ssh too; the sandbox gives it only ~/work to write,
    // and nothing to read beyond what it needs to run (its package folder, found on its own).
    let config = format!(
        "[servers.files]\ncommand = {command:?}\nargs = [{work:?}, {ssh:?}]\n\n\
         [servers.files.sandbox]\nwrite = [\"~/work\"]\n",
        command = node_module(".bin/mcp-server-filesystem").to_string_lossy(),
        work = home.text("work"),
        ssh = home.text(".ssh"),
    );
    let serve = serve_in(&home, &config, &["files"]);

    let arguments = json!({"path": home.text("work/plan.md"), "content": "# Plan"});
    let written = call(&serve, "files", "write_file", arguments).await;
    assert!(written.contains("Successfully wrote"), "{written}");
    assert_eq!(
        std::fs::read_to_string(home.path("work/plan.md")).expect("written"),
        "# Plan"
    );
    let read = call(
        &serve,
        "files",
        "read_text_file",
        json!({"path": home.text("work/note.txt")}),
    )
    .await;
    assert_eq!(read, "a note");

    // Inside what the server itself allows, the sandbox refuses.
    let key = call(
        &serve,
        "files",
        "read_text_file",
        json!({"path": home.text(".ssh/id_rsa")}),
    )
    .await;
    assert!(key.contains("EACCES"), "the sandbox refuses: {key}");
    assert!(!key.contains("FAKE PRIVATE KEY"), "{key}");
    // Outside it, the server refuses on its own.
    let outside = call(
        &serve,
        "files",
        "read_text_file",
        json!({"path": home.text("outside/x")}),
    )
    .await;
    assert!(outside.contains("Access denied"), "{outside}");

    let read = call(
        &serve,
        "files",
        "read_text_file",
        json!({"path": home.text("work/plan.md")}),
    )
    .await;
    assert_eq!(read, "# Plan", "still answering");
}

/// What docs/security.md tells a person to write for an `npx` server: its cache to write. npx
/// installs a package (a tarball, offline) into `~/.npm` of the fake home and starts it,
/// sandboxed; the server it starts is refused `~/.ssh` as any other would be.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_npx_server_installs_and_runs_in_a_sandbox_that_gives_it_its_cache() {
    let home = FakeHome::new();
    let source = home.path("source");
    std::fs::create_dir(&source).expect("a package folder");
    std::fs::write(
        source.join("package.json"),
        json!({
            "name": "sandboxed-probe",
            "version": "1.0.0",
            "bin": { "sandboxed-probe": "server.mjs" },
        })
        .to_string(),
    )
    .expect("package.json");
    // The package's server is the probe, run by the system's Python, which every sandbox may
    // run.
    let script = backend_script("sandbox_probe.py");
    std::fs::write(
        source.join("server.mjs"),
        format!(
            "#!/usr/bin/env node\nimport {{ spawn }} from \"node:child_process\";\n\
             const probe = spawn(\"/usr/bin/python3\", [{script:?}], {{ stdio: \"inherit\" }});\n\
             probe.on(\"exit\", (code) => process.exit(code ?? 1));\n",
            script = script.to_string_lossy(),
        ),
    )
    .expect("server.mjs");
    let packed = Command::new("npm")
        .args(["pack", "--pack-destination"])
        .arg(&source)
        .current_dir(&source)
        .output()
        .expect("npm runs");
    assert!(packed.status.success(), "npm pack: {packed:?}");
    let tarball = source.join("sandboxed-probe-1.0.0.tgz");
    let config = format!(
        "[servers.npx]\ncommand = \"npx\"\n\
         args = [\"--offline\", \"-y\", \"--package={tarball}\", \"sandboxed-probe\"]\n\
         cwd = {source:?}\nenv = {{ npm_config_update_notifier = \"false\" }}\n\n\
         [servers.npx.sandbox]\nread = [{source:?}, {backends:?}]\nwrite = [\"~/.npm\"]\n",
        tarball = tarball.display(),
        source = source.to_string_lossy(),
        backends = script.parent().expect("tests/backends").to_string_lossy(),
    );
    let serve = serve_in(&home, &config, &["npx"]);
    assert!(
        home.path(".npm/_npx").is_dir(),
        "npx installed into the fake home's cache"
    );
    let echo = call(&serve, "npx", "echo", json!({"text": "through npx"})).await;
    assert_eq!(echo, "through npx");
    let key = call(
        &serve,
        "npx",
        "read",
        json!({"path": home.text(".ssh/id_rsa")}),
    )
    .await;
    assert_refused(&key, "reading ~/.ssh/id_rsa through npx");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_the_kernel_cannot_enforce_refuses_its_server_unless_allowed_to_run_without() {
    let home = FakeHome::new();
    let (listener, port) = tcp_listener();
    let config = format!(
        "{}{}",
        probe_entry("strict", Some("write = [\"~/work\"]")),
        probe_entry("lenient", Some("write = [\"~/work\"]\nrequired = false")),
    );
    // As on Linux 6.2 to 6.6: files, but neither ports nor scopes.
    let serve = ServeOptions::new(&config)
        .env("HOME", home.dir.path())
        .env("SWITCHBOARD_LANDLOCK_ABI", "3")
        .ready(&["lenient"])
        .start();

    let strict = eventually("strict is refused with the reason", EVENT_LIMIT, || async {
        let summary = serve.backend_summary("strict").await;
        match summary["last_error"].as_str() {
            Some(error) => Ok(error.to_owned()),
            None => Err(summary),
        }
    })
    .await;
    assert!(
        strict.contains("its sandbox cannot be enforced here"),
        "{strict}"
    );
    assert!(strict.contains("Landlock ABI 4"), "{strict}");
    assert!(strict.contains("ABI 3"), "{strict}");
    assert!(strict.contains("required = false"), "{strict}");
    let summary = serve.backend_summary("strict").await;
    assert_ne!(summary["state"], "ready");
    assert_eq!(summary["pid"], Value::Null, "no process was started");
    let detail = serve.api_get("/api/backends/strict").await;
    assert_eq!(detail["config"]["sandbox"]["enforcement"], "refused");
    assert_eq!(detail["config"]["sandbox"]["landlock_abi"], 3);

    // Allowed to run without all of it, it runs with the files enforced and ports not.
    let detail = serve.api_get("/api/backends/lenient").await;
    let sandbox = &detail["config"]["sandbox"];
    assert_eq!(sandbox["enforcement"], "partial", "{sandbox:#}");
    assert_eq!(sandbox["shortfalls"].as_array().map(Vec::len), Some(2));
    let key = call(
        &serve,
        "lenient",
        "read",
        json!({"path": home.text(".ssh/id_rsa")}),
    )
    .await;
    assert_refused(&key, "reading ~/.ssh/id_rsa at ABI 3");
    let connect = call(&serve, "lenient", "connect", json!({"port": port})).await;
    assert_eq!(connect, "ok: connected", "ABI 3 cannot limit ports");
    assert!(connected(&listener));

    // `check` says the same before anything runs, at the sandbox's line.
    let config_path = serve.config_path();
    let output = Command::new(switchboard_exe())
        .args(["check", "--config"])
        .arg(&config_path)
        .env("HOME", home.dir.path())
        .env("SWITCHBOARD_LANDLOCK_ABI", "3")
        .output()
        .expect("check runs");
    let report = String::from_utf8_lossy(&output.stdout);
    let warning = report
        .lines()
        .find(|line| line.contains("warning: servers.strict.sandbox: "))
        .unwrap_or_else(|| panic!("no warning about strict's sandbox in:\n{report}"));
    let strict_line = line_of(&config_path, "[servers.strict.sandbox]");
    assert!(
        warning.starts_with(&format!("{}:{strict_line}:", config_path.display())),
        "{warning}"
    );
    assert!(
        warning.contains("this system cannot enforce all of this sandbox"),
        "{warning}"
    );
    assert!(warning.contains("the server will not start"), "{warning}");
}

#[test]
fn check_points_at_each_mistake_in_a_sandbox() {
    let dir = tempfile::tempdir().expect("a folder");
    let config = dir.path().join("config.toml");
    let entry = |name: &str, sandbox: &str| {
        format!(
            "[servers.{name}]\ncommand = \"python3\"\n\n[servers.{name}.sandbox]\n{sandbox}\n\n"
        )
    };
    let text = [
        entry("offline", "network = false\nconnect = [443]"),
        entry("port", "connect = [443, 70000]"),
        entry("typo", "reed = [\"/tmp\"]"),
        entry("kind", "write = \"/tmp\""),
        entry("missing", "read = [\"/surely/not/a/folder\"]"),
    ]
    .concat();
    std::fs::write(&config, &text).expect("a config");
    let output = Command::new(switchboard_exe())
        .args(["check", "--config"])
        .arg(&config)
        .output()
        .expect("check runs");
    let report = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{report}");
    let path = config.display();
    for expected in [
        format!("{path}:6:1: error: servers.offline.sandbox.connect: `connect` names ports"),
        format!(
            "{path}:12:17: error: servers.port.sandbox.connect[1]: expected a TCP port from 1 to \
             65535, found 70000"
        ),
        format!("{path}:18:1: error: servers.typo.sandbox.reed: unknown field `reed`"),
        format!("{path}:24:9: error: servers.kind.sandbox.write: expected an array of strings"),
        format!(
            "{path}:30:9: warning: servers.missing.sandbox.read[0]: /surely/not/a/folder does not \
             exist"
        ),
    ] {
        assert!(
            report.contains(&expected),
            "missing {expected:?} in:\n{report}"
        );
    }
    assert!(report.contains("1 valid backend(s): missing"), "{report}");
}

#[test]
fn the_server_page_shows_each_servers_sandbox_in_a_real_browser() {
    let home = FakeHome::new();
    let config = format!(
        "{}{}",
        probe_entry("probe", Some("write = [\"~/work\"]\nconnect = [443]")),
        probe_entry("open", None),
    );
    let serve = serve_in(&home, &config, &["probe", "open"]);
    let mut node = crate::ui::browser_suite("sandbox.test.mjs", &serve);
    node.env("WORK_FOLDER", home.path("work"));
    run_node_suite(node, crate::ui::NODE_LIMIT, &|| serve.log());
}

/// The 1-based line of the first line of `path` that is `line`.
fn line_of(path: &Path, line: &str) -> usize {
    let text = std::fs::read_to_string(path).expect("the config");
    text.lines()
        .position(|candidate| candidate == line)
        .map(|index| index + 1)
        .unwrap_or_else(|| panic!("no {line:?} in {text}"))
}
