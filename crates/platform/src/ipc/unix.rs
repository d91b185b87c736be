//! The local endpoint on Unix: a socket file in the runtime directory (0700), itself 0600; a
//! peer of another user is refused anyway (`SO_PEERCRED` on Linux, `LOCAL_PEERCRED` on macOS).

use std::io;
use std::path::{Path, PathBuf};

use tokio::net::{UnixListener, UnixStream};

/// The socket's file name in the runtime directory.
const SOCKET_NAME: &str = "switchboard.sock";

/// The longest socket path the system takes (`sun_path`, less its final NUL).
#[cfg(target_os = "linux")]
const MAX_PATH: usize = 107;
#[cfg(target_os = "macos")]
const MAX_PATH: usize = 103;

/// Where the endpoint of the instance using `runtime_dir` is.
pub fn endpoint(runtime_dir: &Path) -> PathBuf {
    runtime_dir.join(SOCKET_NAME)
}

/// A bound endpoint.
#[derive(Debug)]
pub struct Listener {
    listener: UnixListener,
    path: PathBuf,
    own_uid: u32,
}

/// One accepted connection, from a process of this user.
pub type Connection = UnixStream;

impl Listener {
    /// Binds `path`, replacing a stale socket file left by an instance that died.
    ///
    /// Fails with [`io::ErrorKind::AddrInUse`] when a live instance answers on `path`. The check
    /// and the bind happen under a lock file next to the socket, so two instances starting at
    /// the same moment cannot both decide the socket is stale. Must be called inside a tokio
    /// runtime.
    pub fn bind(path: &Path) -> io::Result<Listener> {
        if path.as_os_str().len() > MAX_PATH {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the socket path {} is longer than the {MAX_PATH} bytes this system allows; \
                     set {} to a shorter folder",
                    path.display(),
                    crate::dirs::RUNTIME_DIR_ENV
                ),
            ));
        }
        let lock_file = crate::files::private_options(&mut std::fs::OpenOptions::new())
            .create(true)
            .truncate(false)
            .write(true)
            .open(path.with_extension("sock.lock"))?;
        lock_file.lock()?;
        match std::os::unix::net::UnixStream::connect(path) {
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!(
                        "another Switchboard is already listening on {}",
                        path.display()
                    ),
                ));
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) if error.kind() == io::ErrorKind::ConnectionRefused => {
                remove_stale_socket(path)?
            }
            Err(error) => return Err(error),
        }
        let listener = UnixListener::bind(path)?;
        // The directory is 0700 already, so the moment between bind and chmod exposes nothing.
        crate::files::restrict_to_owner(path)?;
        Ok(Listener {
            listener,
            path: path.to_path_buf(),
            own_uid: nix::unistd::getuid().as_raw(),
        })
    }

    /// The next connection of a process of this user; a peer of another user is refused (and
    /// logged) without being handed out.
    pub async fn accept(&mut self) -> io::Result<Connection> {
        loop {
            let (stream, _) = self.listener.accept().await?;
            let peer_uid = stream.peer_cred().map(|cred| cred.uid());
            if peer_uid.as_ref().ok() == Some(&self.own_uid) {
                return Ok(stream);
            }
            match peer_uid {
                Ok(uid) => tracing::warn!(uid, "refused a socket connection from another user"),
                Err(error) => tracing::warn!(
                    %error,
                    "refused a socket connection whose user cannot be told"
                ),
            }
        }
    }

    /// Stops listening: the socket file is removed first, so a new instance can bind at once.
    pub fn close(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Removes a socket file nobody listens on; refuses to remove anything that is not a socket.
fn remove_stale_socket(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let file_type = std::fs::symlink_metadata(path)?.file_type();
    if !file_type.is_socket() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} exists and is not a socket", path.display()),
        ));
    }
    tracing::debug!(path = %path.display(), "removing a stale socket");
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// A connection to the endpoint, from the client's side.
pub type Stream = UnixStream;

/// Connects to the endpoint at `path`.
pub async fn connect(path: &Path) -> io::Result<Stream> {
    UnixStream::connect(path).await
}

/// Whether a failed connect means that nothing listens there (yet).
pub fn nothing_listens(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
    )
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[tokio::test]
    async fn bind_replaces_a_stale_socket_and_refuses_a_live_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = endpoint(dir.path());

        let first = Listener::bind(&path).expect("binds a fresh path");
        let mode = std::fs::metadata(&path)
            .expect("socket exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let error = Listener::bind(&path).expect_err("a live socket is not replaced");
        assert_eq!(error.kind(), io::ErrorKind::AddrInUse);

        drop(first);
        assert!(path.exists(), "a dropped listener leaves its file behind");
        let mut second = Listener::bind(&path).expect("a stale socket is replaced");
        let (client, server) = tokio::join!(UnixStream::connect(&path), second.accept());
        client.expect("the new socket answers");
        server.expect("and accepts");
    }

    #[tokio::test]
    async fn bind_does_not_remove_a_file_that_is_not_a_socket() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = endpoint(dir.path());
        std::fs::write(&path, "precious").expect("write file");
        let error = Listener::bind(&path).expect_err("a regular file is not a stale socket");
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&path).expect("kept"), "precious");
    }
}
