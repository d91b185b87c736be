//! The local socket that `switchboard connect` attaches to.
//!
//! Each connection is one hub session speaking newline-delimited JSON-RPC both ways, exactly like
//! MCP over stdio; or, when `switchboard connect` hands over the editor's stdio with its first
//! bytes ([`handoff`]), the session reads and writes those directly and the socket carries the
//! ledger. The socket lives in the runtime directory
//! (0700) and is itself 0600; a peer of another user is refused anyway.

mod ledger;
mod session;

use std::io::{self, Cursor};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::fcntl::{Flock, FlockArg};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader, Interest};
use tokio::net::unix::OwnedReadHalf;
use tokio::net::{UnixListener, UnixStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use self::ledger::{ShimSocket, accept_handoff};
use self::session::LineSession;
use crate::config::DEFAULT_PROFILE;
use crate::hub::Hub;
use crate::transport::handoff;

/// The socket's file name in the runtime directory.
pub const SOCKET_NAME: &str = "switchboard.sock";

/// How many outgoing messages of one connection may wait for its writer before the producers
/// (the hub's reply and event streams) wait in turn.
const OUTGOING_CAPACITY: usize = 256;
const SOCKET_BUFFER: usize = 64 * 1024;
/// After a client closes its side, how long its unanswered requests may still finish.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);
/// How long shutdown waits for the connections to close their sessions.
const CLOSE_LIMIT: Duration = Duration::from_secs(2);
/// How long `switchboard connect` may take to send its handoff header and prefix.
const HANDOFF_LIMIT: Duration = Duration::from_secs(10);
/// Pause after a failed accept (for example, out of file descriptors) before trying again.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// The socket's reading side, behind the bytes read with the descriptors.
type SocketReader = BufReader<tokio::io::Chain<Cursor<Vec<u8>>, OwnedReadHalf>>;

/// Where the socket of the instance using `runtime_dir` lives.
pub fn socket_path(runtime_dir: &Path) -> PathBuf {
    runtime_dir.join(SOCKET_NAME)
}

/// Binds the socket at `path`, replacing a stale socket file left by an instance that died.
///
/// Fails with [`io::ErrorKind::AddrInUse`] when a live instance answers on `path`. The check
/// and the bind happen under a lock file next to the socket, so two instances starting at the
/// same moment cannot both decide the socket is stale. Must be called inside a tokio runtime.
pub fn bind(path: &Path) -> io::Result<UnixListener> {
    let lock_path = path.with_extension("sock.lock");
    let lock_file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&lock_path)?;
    let _lock = Flock::lock(lock_file, FlockArg::LockExclusive)
        .map_err(|(_, errno)| io::Error::from(errno))?;
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
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Removes a socket file nobody listens on; refuses to remove anything that is not a socket.
fn remove_stale_socket(path: &Path) -> io::Result<()> {
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

/// Accepts connections until `shutdown` is cancelled; each one is a hub session.
///
/// On shutdown the socket file is removed before the listener closes (so a new instance can
/// bind at once), and every connection closes its session, which cancels its calls.
pub async fn serve_socket(
    listener: UnixListener,
    hub: Hub,
    max_message_size: usize,
    shutdown: CancellationToken,
) {
    let own_uid = nix::unistd::getuid().as_raw();
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let peer_uid = stream.peer_cred().map(|cred| cred.uid());
                    if peer_uid.as_ref().ok() != Some(&own_uid) {
                        tracing::warn!(?peer_uid, "refused a socket connection from another user");
                        continue;
                    }
                    let connection = serve_connection(
                        stream,
                        hub.clone(),
                        max_message_size,
                        shutdown.child_token(),
                    );
                    connections.spawn(connection);
                }
                Err(error) => {
                    tracing::warn!(%error, "accepting a socket connection failed");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                }
            },
            Some(finished) = connections.join_next(), if !connections.is_empty() => {
                if let Err(error) = finished {
                    tracing::error!(%error, "a socket connection task failed");
                }
            }
        }
    }
    if let Some(path) = listener
        .local_addr()
        .ok()
        .and_then(|addr| addr.as_pathname().map(Path::to_path_buf))
    {
        let _ = std::fs::remove_file(path);
    }
    drop(listener);
    let closed = tokio::time::timeout(CLOSE_LIMIT, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if closed.is_err() {
        tracing::warn!("socket connections did not close in time");
    }
}

/// Carries one connection. A client that sends its stdio with the first bytes ([`handoff`]) is
/// read and answered through those; any other speaks newline-delimited JSON-RPC on the socket.
async fn serve_connection(
    stream: UnixStream,
    hub: Hub,
    max_message_size: usize,
    cancel: CancellationToken,
) {
    let mut opening = vec![0; SOCKET_BUFFER];
    let received = tokio::select! {
        _ = cancel.cancelled() => return,
        received = stream.async_io(Interest::READABLE, || {
            handoff::recv_with_fds(stream.as_raw_fd(), &mut opening)
        }) => received,
    };
    let (n_read, fds) = match received {
        Ok(received) => received,
        Err(error) => {
            tracing::debug!(%error, "reading the socket failed");
            return;
        }
    };
    opening.truncate(n_read);
    let (read_half, write_half) = stream.into_split();
    let socket = BufReader::with_capacity(SOCKET_BUFFER, Cursor::new(opening).chain(read_half));
    if fds.is_empty() {
        let session = LineSession::new(hub, DEFAULT_PROFILE, max_message_size, cancel)
            .expect("the default profile is always served");
        session.run(socket, write_half, None).await;
        return;
    }
    let accepted =
        tokio::time::timeout(HANDOFF_LIMIT, accept_handoff(socket, fds, max_message_size))
            .await
            .unwrap_or_else(|_| {
                Err(anyhow::anyhow!(
                    "the handoff did not arrive within {HANDOFF_LIMIT:?}"
                ))
            })
            .and_then(|accepted| {
                let profile = accepted.profile.as_deref().unwrap_or(DEFAULT_PROFILE);
                match LineSession::new(hub, profile, max_message_size, cancel) {
                    Some(session) => Ok((accepted, session)),
                    None => Err(anyhow::anyhow!(
                        "no profile {profile} is configured; add [profiles.{profile}] to the \
                         config or drop --profile"
                    )),
                }
            });
    match accepted {
        Ok((accepted, session)) => {
            let mut write_half = write_half;
            let mut accepted_line = Vec::new();
            handoff::Record::Accepted.encode(&mut accepted_line);
            // Said before stdin is read: from here on, what the editor wrote is ours to answer.
            if let Err(error) = write_half.write_all(&accepted_line).await {
                tracing::debug!(%error, "switchboard connect left during the handoff");
                return;
            }
            if let Some(replay) = &accepted.replay {
                session.replay_initialize(replay);
            }
            let ledger = ShimSocket {
                socket: write_half,
                lifeline: accepted.lifeline,
                shared: accepted.shared,
                records: accepted.records,
            };
            session
                .run(accepted.input, accepted.output, Some(ledger))
                .await;
        }
        Err(error) => {
            tracing::warn!(%error, "refused a handoff from switchboard connect");
            let mut refused = Vec::new();
            handoff::Record::Refused(&format!("{error:#}")).encode(&mut refused);
            let mut write_half = write_half;
            let _ = write_half.write_all(&refused).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::net::unix::OwnedWriteHalf;
    use tokio::sync::mpsc;

    use super::ledger::{MarkingReader, SharedLedger};
    use super::*;
    use crate::wire::jsonrpc;

    #[tokio::test]
    async fn bind_replaces_a_stale_socket_and_refuses_a_live_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = socket_path(dir.path());

        let first = bind(&path).expect("binds a fresh path");
        let mode = std::fs::metadata(&path)
            .expect("socket exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let error = bind(&path).expect_err("a live socket is not replaced");
        assert_eq!(error.kind(), io::ErrorKind::AddrInUse);

        drop(first);
        assert!(path.exists(), "a dropped listener leaves its file behind");
        let second = bind(&path).expect("a stale socket is replaced");
        let (client, server) = tokio::join!(UnixStream::connect(&path), second.accept());
        client.expect("the new socket answers");
        server.expect("and accepts");
    }

    /// A client of the socket, reading answers line by line.
    struct Client {
        lines: tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
        writer: OwnedWriteHalf,
    }

    impl Client {
        async fn connect(path: &Path) -> Client {
            let stream = UnixStream::connect(path).await.expect("the socket answers");
            let (read_half, writer) = stream.into_split();
            Client {
                lines: tokio::io::AsyncBufReadExt::lines(BufReader::new(read_half)),
                writer,
            }
        }

        async fn send(&mut self, line: &[u8]) {
            self.writer.write_all(line).await.expect("write");
            self.writer.write_all(b"\n").await.expect("write");
        }

        async fn next(&mut self) -> Option<serde_json::Value> {
            let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
                .await
                .expect("an answer in time")
                .expect("read");
            line.map(|line| serde_json::from_str(&line).expect("a JSON line"))
        }

        /// Pings with `id` and checks that the answer carries it.
        async fn ping(&mut self, id: u64) {
            let ping = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            self.send(ping.as_bytes()).await;
            assert_eq!(self.next().await.expect("an answer")["id"], id);
        }
    }

    /// `serve_socket` on a socket in a temporary directory, over a hub without backends.
    struct Served {
        _dir: tempfile::TempDir,
        path: PathBuf,
        hub: Hub,
        shutdown: CancellationToken,
        server: tokio::task::JoinHandle<()>,
    }

    impl Served {
        fn start(max_message_size: usize) -> Served {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = socket_path(dir.path());
            let listener = bind(&path).expect("binds");
            let (_, hub) = crate::hub::start(
                Vec::new(),
                crate::supervisor::spawn::GroupRegistry::in_memory(),
                Default::default(),
            );
            let shutdown = CancellationToken::new();
            let server = tokio::spawn(serve_socket(
                listener,
                hub.clone(),
                max_message_size,
                shutdown.clone(),
            ));
            Served {
                _dir: dir,
                path,
                hub,
                shutdown,
                server,
            }
        }
    }

    #[tokio::test]
    async fn each_line_is_one_message_and_bad_lines_get_errors_without_closing() {
        let served = Served::start(256);
        let path = served.path.clone();
        let mut client = Client::connect(&path).await;

        client
            .send(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#)
            .await;
        let batch = client.next().await.expect("an answer");
        assert_eq!(batch["error"]["code"], jsonrpc::INVALID_REQUEST);
        assert!(
            batch["error"]["message"]
                .as_str()
                .expect("text")
                .contains("batches")
        );

        let padding = "x".repeat(300);
        let long =
            format!(r#"{{"jsonrpc":"2.0","id":2,"method":"ping","params":{{"p":"{padding}"}}}}"#);
        client.send(long.as_bytes()).await;
        let oversized = client.next().await.expect("an answer");
        assert_eq!(oversized["error"]["code"], jsonrpc::INVALID_REQUEST);
        assert_eq!(oversized["id"], serde_json::Value::Null);
        assert!(
            oversized["error"]["message"]
                .as_str()
                .expect("text")
                .contains("256 bytes")
        );

        client.send(b"").await;
        client
            .send(br#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
            .await;
        let initialized = client.next().await.expect("an answer");
        assert_eq!(initialized["id"], 3, "{initialized}");
        assert!(initialized["result"]["protocolVersion"].is_string());
        client
            .send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        client.ping(4).await;

        // Two connections are two sessions, so the same ids do not collide.
        let mut other = Client::connect(&path).await;
        other.ping(4).await;

        served.shutdown.cancel();
        assert_eq!(
            client.next().await,
            None,
            "shutdown closes every connection"
        );
        assert_eq!(other.next().await, None);
        served.server.await.expect("serve_socket ends");
        assert!(!path.exists(), "the socket file is removed on shutdown");
        served.hub.shutdown();
    }

    #[test]
    fn the_ledger_says_when_stdin_stops_mid_line_and_which_id_that_line_has() {
        let (shim_side, fd) = handoff::Ledger::create().expect("a ledger");
        let (records, _records) = mpsc::unbounded_channel();
        let shared = Arc::new(SharedLedger::new(
            handoff::Ledger::open(&fd).expect("maps"),
            records,
        ));
        let mut reader = MarkingReader::new(
            tokio::io::empty(),
            br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"a":""#,
            shared,
        );
        assert_eq!(shim_side.partial_input(), Some(Some(Box::from("12"))));
        reader.observe(b"\"}}\n");
        assert_eq!(shim_side.partial_input(), None, "the line is whole again");
        reader.observe(b"{\"jsonrpc\":\"2.0\",");
        assert_eq!(shim_side.partial_input(), Some(None), "no id seen yet");
        reader.observe(b"\"id\":\"a str");
        assert_eq!(
            shim_side.partial_input(),
            Some(None),
            "a string not closed yet is not taken"
        );
        reader.observe(b"ing\",");
        assert_eq!(
            shim_side.partial_input(),
            Some(Some(Box::from("\"a string\"")))
        );
        reader.observe(b"\"method\":\"ping\"}\n{\"id\":3");
        assert_eq!(
            shim_side.partial_input(),
            Some(None),
            "a number that may go on is not taken"
        );
        reader.observe(b"4,");
        assert_eq!(shim_side.partial_input(), Some(Some(Box::from("34"))));
    }

    #[tokio::test]
    async fn a_bad_handoff_is_refused_with_its_reason_and_others_are_served() {
        let served = Served::start(1024);
        let path = served.path.clone();

        let cases = [
            (
                handoff::Header::new(None, handoff::PREFIX_LIMIT + 1, None).to_line(),
                "over the limit",
            ),
            (
                br#"{"switchboard":"handoff","version":99,"prefix":0}"#.to_vec(),
                &format!("handoff version 99 is not {}", handoff::VERSION),
            ),
            (b"{\"jsonrpc\":\"2.0\"}\n".to_vec(), "not a handoff header"),
        ];
        for (mut header, reason) in cases {
            if header.last() != Some(&b'\n') {
                header.push(b'\n');
            }
            let path = path.clone();
            let answer = tokio::task::spawn_blocking(move || {
                let stream = std::os::unix::net::UnixStream::connect(&path).expect("connects");
                let (input, output) = std::io::pipe().expect("a pipe");
                let (_ledger, ledger_fd) = handoff::Ledger::create().expect("a ledger");
                let fds = [input.as_raw_fd(), output.as_raw_fd(), ledger_fd.as_raw_fd()];
                handoff::send_with_fds(&stream, &header, &fds).expect("sent");
                stream
                    .set_read_timeout(Some(Duration::from_secs(10)))
                    .expect("timeout");
                let mut answer = String::new();
                std::io::Read::read_to_string(&mut &stream, &mut answer).expect("read");
                answer
            })
            .await
            .expect("the client ran");
            assert!(answer.starts_with('R'), "refused: {answer:?}");
            assert!(answer.contains(reason), "{answer:?} says {reason:?}");
        }

        let mut client = Client::connect(&path).await;
        client.ping(1).await;
        served.shutdown.cancel();
        served.server.await.expect("serve_socket ends");
        served.hub.shutdown();
    }

    #[tokio::test]
    async fn bind_does_not_remove_a_file_that_is_not_a_socket() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = socket_path(dir.path());
        std::fs::write(&path, "precious").expect("write file");
        let error = bind(&path).expect_err("a regular file is not a stale socket");
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&path).expect("kept"), "precious");
    }
}
