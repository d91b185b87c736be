//! The local endpoint on Windows: a named pipe (see the parent module for why a pipe).
//!
//! Its name is derived from the runtime directory, so two instances with their own runtime
//! directories (tests, or two users) never meet. The server's instances carry a DACL granting
//! the current user (and the AppContainer identity of Claude Desktop's package) read and write
//! and nobody else anything; remote clients are refused; the first instance is created with
//! `FILE_FLAG_FIRST_PIPE_INSTANCE`, so a name someone else already holds fails the bind instead
//! of sharing it. Then each side asks the system which process is at the other end and checks
//! that it runs as the same user.

use std::ffi::c_void;
use std::io;
use std::os::windows::io::AsRawHandle;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::net::windows::named_pipe::{
    ClientOptions, NamedPipeClient, NamedPipeServer, ServerOptions,
};
use windows_sys::Win32::Foundation::{ERROR_ACCESS_DENIED, ERROR_PIPE_BUSY};
use windows_sys::Win32::System::Pipes::{GetNamedPipeClientProcessId, GetNamedPipeServerProcessId};

use crate::windows_security::{SecurityDescriptor, current_user_sid, process_is_current_user};

/// Package families whose AppContainer identity may connect too: Claude Desktop's MSIX package
/// runs the `switchboard connect` it starts inside its package.
const ADMITTED_PACKAGES: &[&str] = &["Claude_pzs8sxrjxfjjc"];

/// How long a client waits for a free instance of a busy pipe.
const BUSY_WAIT: Duration = Duration::from_secs(2);
const BUSY_POLL: Duration = Duration::from_millis(20);

/// Where the endpoint of the instance using `runtime_dir` is: `\\.\pipe\switchboard-HASH`.
pub fn endpoint(runtime_dir: &Path) -> PathBuf {
    let folder = runtime_dir.to_string_lossy().to_lowercase();
    let digest = Sha256::digest(folder.as_bytes());
    let hash = crate::hex::encode(&digest[..12]);
    PathBuf::from(format!(r"\\.\pipe\switchboard-{hash}"))
}

/// A bound endpoint: the pipe instance the next client will connect to.
pub struct Listener {
    name: PathBuf,
    security: SecurityDescriptor,
    next: NamedPipeServer,
}

/// One accepted connection, from a process of this user.
pub type Connection = NamedPipeServer;

/// A connection to the endpoint, from the client's side.
pub type Stream = NamedPipeClient;

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("name", &self.name)
            .finish()
    }
}

impl Listener {
    /// Creates the pipe's first instance; fails with [`io::ErrorKind::AddrInUse`] when the name
    /// is taken (another instance runs). Must be called inside a tokio runtime.
    pub fn bind(name: &Path) -> io::Result<Listener> {
        let security = SecurityDescriptor::from_sddl(&pipe_sddl()?)?;
        let next = create(name, &security, true).map_err(|error| {
            if error.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32) {
                io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!(
                        "another Switchboard is already listening on {}",
                        name.display()
                    ),
                )
            } else {
                error
            }
        })?;
        Ok(Listener {
            name: name.to_path_buf(),
            security,
            next,
        })
    }

    /// The next connection of a process of this user; one of another user is refused (and
    /// logged) without being handed out.
    pub async fn accept(&mut self) -> io::Result<Connection> {
        loop {
            self.next.connect().await?;
            let fresh = create(&self.name, &self.security, false)?;
            let connected = std::mem::replace(&mut self.next, fresh);
            match peer_is_current_user(&connected, GetNamedPipeClientProcessId) {
                Ok(true) => return Ok(connected),
                Ok(false) => tracing::warn!("refused a pipe connection from another user"),
                Err(error) => tracing::warn!(
                    %error,
                    "refused a pipe connection whose user cannot be told"
                ),
            }
        }
    }

    /// Stops listening: the name is free once the last instance closes.
    pub fn close(self) {}
}

/// Connects to the endpoint named `name`, waiting a little for a free instance when all are
/// busy, and refuses a server that does not run as this user.
pub async fn connect(name: &Path) -> io::Result<Stream> {
    let deadline = tokio::time::Instant::now() + BUSY_WAIT;
    let client = loop {
        match ClientOptions::new().open(name) {
            Ok(client) => break client,
            Err(error)
                if error.raw_os_error() == Some(ERROR_PIPE_BUSY as i32)
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(BUSY_POLL).await;
            }
            Err(error) => return Err(error),
        }
    };
    match peer_is_current_user(&client, GetNamedPipeServerProcessId) {
        Ok(true) => Ok(client),
        Ok(false) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is held by a process of another user; it is not this user's Switchboard",
                name.display()
            ),
        )),
        Err(error) => Err(error),
    }
}

/// Whether a failed connect means that nothing listens there (yet).
pub fn nothing_listens(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::NotFound
}

fn create(name: &Path, security: &SecurityDescriptor, first: bool) -> io::Result<NamedPipeServer> {
    let mut attributes = security.attributes();
    let mut options = ServerOptions::new();
    options
        .first_pipe_instance(first)
        .reject_remote_clients(true)
        .access_inbound(true)
        .access_outbound(true);
    // SAFETY: the attributes point to a descriptor that lives across the call.
    unsafe {
        options.create_with_security_attributes_raw(name, (&raw mut attributes).cast::<c_void>())
    }
}

/// The pipe's DACL: full access for the current user, read and write for the AppContainer
/// identities of [`ADMITTED_PACKAGES`], nothing for others.
fn pipe_sddl() -> io::Result<String> {
    let mut sddl = format!("D:P(A;;GA;;;{})", current_user_sid()?);
    for package in ADMITTED_PACKAGES {
        sddl.push_str(&format!(
            "(A;;GRGW;;;{})",
            super::app_container_sid(package)
        ));
    }
    Ok(sddl)
}

/// Whether the process at the other end of a pipe runs as the current user.
fn peer_is_current_user(
    pipe: &impl AsRawHandle,
    peer_pid: unsafe extern "system" fn(*mut c_void, *mut u32) -> i32,
) -> io::Result<bool> {
    let mut pid = 0;
    // SAFETY: an open pipe handle and a place for the pid.
    if unsafe { peer_pid(pipe.as_raw_handle(), &mut pid) } == 0 {
        return Err(io::Error::last_os_error());
    }
    process_is_current_user(pid)
}
