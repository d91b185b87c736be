//! `switchboard serve` as a child of a benchmark, with its own runtime and data directories.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use control::instance::Instance;

use super::SWITCHBOARD;

/// The dashboard token `serve` is given, so that the benchmark can ask its control API.
const BENCH_TOKEN: &str = "endpoint-bench-token-0123456789";

/// A `switchboard serve` child with its own runtime and data directories.
pub struct Serve {
    pub child: Child,
    /// The endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    pub runtime_dir: PathBuf,
    dir: tempfile::TempDir,
}

impl Serve {
    /// Starts serve over the config `text` (TOML) and waits until it lists `backends` servers,
    /// all ready.
    pub fn start(text: &str, backends: usize) -> Serve {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("config.toml");
        std::fs::write(&config, text).expect("write config");
        let runtime_dir = dir.path().join("run");
        let child = Command::new(SWITCHBOARD)
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&config)
            .env("SWITCHBOARD_RUNTIME_DIR", &runtime_dir)
            .env("SWITCHBOARD_DATA_DIR", dir.path().join("data"))
            .env("SWITCHBOARD_TOKEN", BENCH_TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve starts");
        let address = until_ready(child.id(), &runtime_dir, backends);
        Serve {
            child,
            url: format!("http://{address}/mcp"),
            runtime_dir,
            dir,
        }
    }

    /// Serve's data directory (the activity log's database is there).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn rss_kib(&self) -> u64 {
        rss_kib(self.child.id())
    }
}

/// Waits until serve's instance record names it and its control API lists `backends` backends,
/// all ready; returns where it listens.
fn until_ready(pid: u32, runtime_dir: &Path, backends: usize) -> SocketAddr {
    let instance_file = Instance::path(runtime_dir);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "serve was not ready within 60 s");
        if let Ok(instance) = Instance::read(&instance_file)
            && instance.pid == pid
            && let Ok(list) = api_backends(instance.address)
            && list.len() == backends
            && list.iter().all(|backend| backend["state"] == "ready")
        {
            return instance.address;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `GET /api/backends`, over a plain connection.
fn api_backends(address: SocketAddr) -> std::io::Result<Vec<serde_json::Value>> {
    let mut stream = std::net::TcpStream::connect(address)?;
    write!(
        stream,
        "GET /api/backends HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {BENCH_TOKEN}\r\n\
         Connection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    serde_json::from_str(body).map_err(std::io::Error::other)
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.child.wait();
    }
}

/// The resident memory of process `pid`.
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}
