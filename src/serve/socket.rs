//! The local socket that `switchboard connect` attaches to.
//!
//! Each connection is one hub session speaking newline-delimited JSON-RPC both ways, exactly like
//! MCP over stdio, so the shim only has to copy lines. The socket lives in the runtime directory
//! (0700) and is itself 0600; a peer of another user is refused anyway.

use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::fcntl::{Flock, FlockArg};
use tokio::io::{AsyncWriteExt, BufReader, BufWriter};
use tokio::net::unix::OwnedWriteHalf;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::framing::{Frame, LineReader};
use crate::hub::{Hub, Inbound, RequestReply, Session, SessionEvents};
use crate::jsonrpc::{self, ErrorObject};

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
/// Pause after a failed accept (for example, out of file descriptors) before trying again.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

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

/// Carries one connection: reads lines into the session, and a writer task sends everything the
/// session answers or emits.
async fn serve_connection(
    stream: UnixStream,
    hub: Hub,
    max_message_size: usize,
    cancel: CancellationToken,
) {
    let (read_half, write_half) = stream.into_split();
    let (session, events) = hub.open_session();
    tracing::debug!(session = session.id(), "socket connection opened");
    let (outgoing, outgoing_rx) = mpsc::channel(OUTGOING_CAPACITY);
    let writer = tokio::spawn(write_loop(write_half, outgoing_rx, cancel.clone()));
    let forward_events = tokio::spawn(forward_events(events, outgoing.clone()));
    let mut replies = JoinSet::new();
    let mut lines = LineReader::new(
        BufReader::with_capacity(SOCKET_BUFFER, read_half),
        max_message_size,
    );

    let client_finished = loop {
        let frame = tokio::select! {
            _ = cancel.cancelled() => break false,
            Some(_) = replies.join_next(), if !replies.is_empty() => continue,
            frame = lines.next_frame() => frame,
        };
        let answer = match frame {
            Ok(Some(Frame::Line(line))) => receive_line(&session, &line, &mut replies, &outgoing),
            Ok(Some(Frame::Oversized { len, .. })) => Some(oversized_error(len, max_message_size)),
            Ok(None) => break true,
            Err(error) => {
                tracing::debug!(session = session.id(), %error, "reading the socket failed");
                break false;
            }
        };
        if let Some(answer) = answer
            && outgoing.send(answer).await.is_err()
        {
            break false;
        }
    };

    // A client that only closed its sending side still gets the answers to what it asked.
    if client_finished {
        let drained = tokio::time::timeout(DRAIN_LIMIT, async {
            while replies.join_next().await.is_some() {}
        });
        tokio::select! {
            _ = cancel.cancelled() => {}
            _ = drained => {}
        }
    }
    replies.abort_all();
    hub.close_session(session.id());
    forward_events.abort();
    drop(outgoing);
    // A client that stopped reading must not keep this task forever.
    let mut writer = writer;
    if tokio::time::timeout(CLOSE_LIMIT, &mut writer)
        .await
        .is_err()
    {
        cancel.cancel();
        let _ = writer.await;
    }
    tracing::debug!(session = session.id(), "socket connection closed");
}

/// Hands one line to the session; returns what must be written back at once, if anything.
fn receive_line(
    session: &Session,
    line: &[u8],
    replies: &mut JoinSet<()>,
    outgoing: &mpsc::Sender<Vec<u8>>,
) -> Option<Vec<u8>> {
    let first = line.iter().find(|byte| !byte.is_ascii_whitespace())?;
    if *first == b'[' {
        return Some(jsonrpc::error_line(
            None,
            &ErrorObject::new(
                jsonrpc::INVALID_REQUEST,
                "batches are not supported on stdio; send one message per line",
            ),
        ));
    }
    match session.receive(line) {
        Inbound::Request(reply) => {
            replies.spawn(forward_reply(reply, outgoing.clone()));
            None
        }
        Inbound::Accepted => None,
        Inbound::Rejected(error) => Some(error),
    }
}

fn oversized_error(len: usize, limit: usize) -> Vec<u8> {
    jsonrpc::error_line(
        None,
        &ErrorObject::new(
            jsonrpc::INVALID_REQUEST,
            format!("a message of {len} bytes was dropped: the limit is {limit} bytes per message"),
        ),
    )
}

/// Forwards everything belonging to one request, ending after its response.
async fn forward_reply(mut reply: RequestReply, outgoing: mpsc::Sender<Vec<u8>>) {
    while let Some(message) = reply.messages.recv().await {
        if outgoing.send(message).await.is_err() {
            return;
        }
    }
}

async fn forward_events(mut events: SessionEvents, outgoing: mpsc::Sender<Vec<u8>>) {
    while let Some(message) = events.recv().await {
        if outgoing.send(message).await.is_err() {
            return;
        }
    }
}

/// Owns the write half: one message per line, batching whatever is queued before a flush. Stops
/// at once when the connection is cancelled, and cancels it when writing fails.
async fn write_loop(
    write_half: OwnedWriteHalf,
    mut outgoing: mpsc::Receiver<Vec<u8>>,
    cancel: CancellationToken,
) {
    let mut writer = BufWriter::with_capacity(SOCKET_BUFFER, write_half);
    loop {
        let message = tokio::select! {
            biased;
            _ = cancel.cancelled() => break,
            message = outgoing.recv() => match message {
                Some(message) => message,
                None => break,
            },
        };
        let written = async {
            write_message(&mut writer, &message).await?;
            while let Ok(message) = outgoing.try_recv() {
                write_message(&mut writer, &message).await?;
            }
            writer.flush().await
        };
        let result = tokio::select! {
            biased;
            _ = cancel.cancelled() => break,
            result = written => result,
        };
        if let Err(error) = result {
            tracing::debug!(%error, "writing to the socket failed");
            cancel.cancel();
            break;
        }
    }
    let _ = writer.shutdown().await;
}

async fn write_message(writer: &mut BufWriter<OwnedWriteHalf>, message: &[u8]) -> io::Result<()> {
    writer.write_all(message).await?;
    if message.last() != Some(&b'\n') {
        writer.write_all(b"\n").await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[tokio::test]
    async fn each_line_is_one_message_and_bad_lines_get_errors_without_closing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = socket_path(dir.path());
        let listener = bind(&path).expect("binds");
        let hub = Hub::start(
            Vec::new(),
            crate::spawn::GroupRegistry::in_memory(),
            crate::hub::HubOptions::default(),
        );
        let shutdown = CancellationToken::new();
        let server = tokio::spawn(serve_socket(listener, hub.clone(), 256, shutdown.clone()));
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
        client
            .send(br#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#)
            .await;
        assert_eq!(client.next().await.expect("an answer")["id"], 4);

        // Two connections are two sessions, so the same ids do not collide.
        let mut other = Client::connect(&path).await;
        other
            .send(br#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#)
            .await;
        assert_eq!(other.next().await.expect("an answer")["id"], 4);

        shutdown.cancel();
        assert_eq!(
            client.next().await,
            None,
            "shutdown closes every connection"
        );
        assert_eq!(other.next().await, None);
        server.await.expect("serve_socket ends");
        assert!(!path.exists(), "the socket file is removed on shutdown");
        hub.shutdown().await;
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
