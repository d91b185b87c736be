//! The record a running instance keeps in the runtime directory (`instance.json`, 0600): which
//! process it is and where its HTTP endpoint listens, for the person and their tools (its port
//! may have been chosen by the system). Switchboard's own commands do not trust it: they talk to
//! the instance over its socket, which checks that the peer is the same user. What the instance
//! says of itself there (`switchboard status`) is [`Running`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use supervisor::status::{BackendState, BackendStatus};

/// What a running instance says of itself over its socket: `switchboard status`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Running {
    pub pid: u32,
    /// The dashboard's address with the key that logs a browser in.
    pub dashboard: String,
    /// The Streamable HTTP endpoint editors connect to.
    pub mcp: String,
    /// The config file it runs.
    pub config: PathBuf,
    /// Every backend, in config order.
    pub backends: Vec<RunningBackend>,
}

/// A backend as `switchboard status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunningBackend {
    pub name: String,
    pub state: BackendState,
    /// It crashed and waits to restart, or is in a crash loop.
    pub failing: bool,
    pub pid: Option<u32>,
    pub last_error: Option<String>,
}

impl RunningBackend {
    pub fn new(status: &BackendStatus) -> RunningBackend {
        RunningBackend {
            name: status.name.clone(),
            state: status.state,
            failing: status.state.is_failing(),
            pid: status.pid,
            last_error: status.last_error.clone(),
        }
    }
}

/// What a running instance records in the runtime directory.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Instance {
    pub pid: u32,
    /// Where its HTTP endpoint and control API listen.
    pub address: SocketAddr,
}

impl Instance {
    const FILE: &'static str = "instance.json";

    pub fn path(runtime_dir: &Path) -> PathBuf {
        runtime_dir.join(Self::FILE)
    }

    pub fn read(path: &Path) -> std::io::Result<Instance> {
        let text = std::fs::read(path)?;
        serde_json::from_slice(&text).map_err(std::io::Error::other)
    }

    /// Records this process, listening at `address`, in the runtime directory; returns the
    /// file's path. A failure is logged: nothing of Switchboard's own needs the file.
    pub fn record(runtime_dir: &Path, address: SocketAddr) -> PathBuf {
        let path = Instance::path(runtime_dir);
        let instance = Instance {
            pid: std::process::id(),
            address,
        };
        if let Err(error) = instance.write(&path) {
            tracing::warn!(%error, "cannot record this instance; `switchboard reload` will not find it");
        }
        path
    }

    /// Writes the file (owner-only) by renaming a complete temporary file into place.
    fn write(&self, path: &Path) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(self).map_err(std::io::Error::other)?;
        platform::atomic::write_private_record(path, &bytes)
    }
}
