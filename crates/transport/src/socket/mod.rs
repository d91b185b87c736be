//! The local socket that `switchboard connect` attaches to: a Unix socket, or a named pipe on
//! Windows (`platform::ipc`), open to this user's processes only.
//!
//! Each connection is one hub session speaking newline-delimited JSON-RPC both ways, exactly like
//! MCP over stdio, after a [`handoff::Header`] naming the profile (`connect` relaying an editor's
//! lines sends one); or, on Unix, when `switchboard connect` hands over the editor's stdio with
//! its first bytes ([`handoff`]), the session reads and writes those directly and the socket
//! carries the ledger; or one command of the command line ([`handoff::Command`]), whose answer is
//! one line. Every opening carries the socket's key from the data directory
//! ([`token::socket_key`](crate::token::socket_key)); a connection without it is refused, with
//! the reason.

#[cfg(unix)]
mod accept;
#[cfg(windows)]
#[path = "no_accept.rs"]
mod accept;
#[cfg(unix)]
mod ledger;
#[cfg(windows)]
#[path = "no_ledger.rs"]
mod ledger;
mod session;

use std::future::Future;
use std::io::{self, Cursor};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use self::accept::{read_opening, serve_handoff};
use self::session::LineSession;
use crate::handoff;
use crate::token::Token;
use config::DEFAULT_PROFILE;
use hub::Hub;
use platform::ipc::{self, Connection, Listener};

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

/// Carries out a command of the command line and gives its answer (the control plane's, above
/// this layer, supplies it).
pub type Commands = Arc<
    dyn Fn(handoff::Command) -> Pin<Box<dyn Future<Output = serde_json::Value> + Send>>
        + Send
        + Sync,
>;

/// A connection's reading and writing halves.
type ReadHalf = tokio::io::ReadHalf<Connection>;
type WriteHalf = tokio::io::WriteHalf<Connection>;

/// The socket's reading side, behind the bytes read first.
type SocketReader = BufReader<tokio::io::Chain<Cursor<Vec<u8>>, ReadHalf>>;

/// Where the socket of the instance using `runtime_dir` is.
pub fn socket_path(runtime_dir: &Path) -> PathBuf {
    ipc::endpoint(runtime_dir)
}

/// Binds the socket at `path`; fails with [`io::ErrorKind::AddrInUse`] when a live instance
/// answers there. Must be called inside a tokio runtime.
pub fn bind(path: &Path) -> io::Result<Listener> {
    Listener::bind(path)
}

/// Accepts connections until `shutdown` is cancelled; each one is a hub session.
///
/// On shutdown the socket stops listening first (so a new instance can bind at once), and every
/// connection closes its session, which cancels its calls.
pub async fn serve_socket(
    mut listener: Listener,
    hub: Hub,
    commands: Commands,
    key: Token,
    max_message_size: usize,
    shutdown: CancellationToken,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(stream) => {
                    let connection = serve_connection(
                        stream,
                        hub.clone(),
                        commands.clone(),
                        key.clone(),
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
    listener.close();
    let closed = tokio::time::timeout(CLOSE_LIMIT, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if closed.is_err() {
        tracing::warn!("socket connections did not close in time");
    }
}

/// Carries one connection. A client that sends its stdio with the first bytes ([`handoff`]) is
/// read and answered through those; a relay speaks newline-delimited JSON-RPC on the socket
/// after its header. Either header must carry `key`; a connection without one is refused.
async fn serve_connection(
    mut stream: Connection,
    hub: Hub,
    commands: Commands,
    key: Token,
    max_message_size: usize,
    cancel: CancellationToken,
) {
    let mut first_bytes = vec![0; SOCKET_BUFFER];
    let received = tokio::select! {
        _ = cancel.cancelled() => return,
        received = read_opening(&mut stream, &mut first_bytes) => received,
    };
    let (n_read, passed) = match received {
        Ok(received) => received,
        Err(error) => {
            tracing::debug!(%error, "reading the socket failed");
            return;
        }
    };
    first_bytes.truncate(n_read);
    let (read_half, write_half) = tokio::io::split(stream);
    let mut socket =
        BufReader::with_capacity(SOCKET_BUFFER, Cursor::new(first_bytes).chain(read_half));
    let Some(passed) = passed else {
        let profile = match opening(&mut socket, &key, max_message_size).await {
            Ok(Opening::Relay(profile)) => profile,
            Ok(Opening::Command(command)) => {
                let answer = commands(command).await;
                let mut line = serde_json::to_vec(&answer).expect("JSON values serialize");
                line.push(b'\n');
                let mut write_half = write_half;
                let _ = write_half.write_all(&line).await;
                let _ = write_half.shutdown().await;
                return;
            }
            Err(reason) => {
                tracing::warn!(%reason, "refused a connection to the socket");
                refuse(write_half, &reason.to_string()).await;
                return;
            }
        };
        let profile = profile.as_deref().unwrap_or(DEFAULT_PROFILE);
        match LineSession::new(hub, profile, max_message_size, cancel) {
            Some(session) => {
                let mut write_half = write_half;
                // Told before anything else, so that a relay whose editor left at once still
                // learns its session was taken (and not refused).
                let mut accepted = Vec::new();
                handoff::Record::Accepted.encode(&mut accepted);
                if write_half.write_all(&accepted).await.is_err() {
                    return;
                }
                session.run(socket, write_half, None).await
            }
            None => refuse(write_half, &no_profile(profile)).await,
        }
        return;
    };
    serve_handoff(
        socket,
        write_half,
        passed,
        hub,
        &key,
        max_message_size,
        cancel,
    )
    .await;
}

pub(super) fn no_profile(profile: &str) -> String {
    format!(
        "no profile {profile} is configured; add [profiles.{profile}] to the config or drop \
         --profile"
    )
}

/// Says why the connection is refused, in a [`handoff::Record::Refused`] line.
pub(super) async fn refuse(mut write_half: WriteHalf, reason: &str) {
    let mut refused = Vec::new();
    handoff::Record::Refused(reason).encode(&mut refused);
    let _ = write_half.write_all(&refused).await;
    let _ = write_half.shutdown().await;
}

/// What a connection without a handoff starts with.
enum Opening {
    /// A relay's session, of this profile (the default one for `None`), told when it is taken.
    Relay(Option<String>),
    /// One command of the command line.
    Command(handoff::Command),
}

/// Why a connection without a handoff is refused, from what it opens with.
#[derive(Debug, thiserror::Error)]
enum OpeningRefused {
    #[error("the connection could not be read: {0}")]
    Unreadable(#[source] io::Error),
    /// It does not open with a header of Switchboard's (JSON-RPC from the first byte, say).
    #[error(
        "Switchboard's socket serves `switchboard connect` and the command line only, whose \
         first line carries the key in the data directory ({})",
        crate::token::SOCKET_KEY_FILE
    )]
    NotSwitchboard,
    #[error("the first line is not a relay header: {0}")]
    NotAHeader(#[source] serde_json::Error),
    #[error(transparent)]
    NotAdmitted(#[from] handoff::NotAdmitted),
    #[error("a control header without a command")]
    NoCommand,
    #[error("a handoff header came without the editor's stdio")]
    HandoffWithoutStdio,
}

/// What the connection opens with: a relay header naming the profile, or a command, either
/// with the socket's `key`. Anything else (JSON-RPC from the first byte, a header without the
/// key) is the reason to refuse the connection: any process of this user may reach the socket,
/// a sandboxed server among them, and only those that can read the data directory have the key.
async fn opening(
    socket: &mut SocketReader,
    key: &Token,
    max_message_size: usize,
) -> Result<Opening, OpeningRefused> {
    let first = socket
        .fill_buf()
        .await
        .map_err(OpeningRefused::Unreadable)?;
    if !first.starts_with(br#"{"switchboard""#) {
        return Err(OpeningRefused::NotSwitchboard);
    }
    let mut line = Vec::new();
    (&mut *socket)
        .take(max_message_size as u64)
        .read_until(b'\n', &mut line)
        .await
        .map_err(OpeningRefused::Unreadable)?;
    let header: handoff::Header =
        serde_json::from_slice(&line).map_err(OpeningRefused::NotAHeader)?;
    if let Some(refusal) = header.refusal(key) {
        return Err(refusal.into());
    }
    match (header.switchboard, header.command) {
        (handoff::Tag::Relay, _) => Ok(Opening::Relay(header.profile)),
        (handoff::Tag::Control, Some(command)) => Ok(Opening::Command(command)),
        (handoff::Tag::Control, None) => Err(OpeningRefused::NoCommand),
        (handoff::Tag::Handoff, _) => Err(OpeningRefused::HandoffWithoutStdio),
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;
    use std::sync::Arc;

    use tokio::net::UnixStream;
    use tokio::net::unix::OwnedWriteHalf;
    use tokio::sync::mpsc;

    use super::ledger::{MarkingReader, SharedLedger};
    use super::*;
    use wire::jsonrpc;

    /// A client of the socket, reading answers line by line.
    struct Client {
        lines: tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
        writer: OwnedWriteHalf,
    }

    impl Client {
        /// A relay's connection with the socket's `key`, once the session is taken.
        async fn connect(path: &Path, key: &Token) -> Client {
            let mut client = Client::open(path).await;
            let header = handoff::Header::relay(handoff::Key::new(key), None).to_line();
            client.writer.write_all(&header).await.expect("write");
            let taken = client.lines.next_line().await.expect("read");
            assert_eq!(taken.as_deref(), Some("H"), "the session is taken");
            client
        }

        /// A connection that has sent nothing yet.
        async fn open(path: &Path) -> Client {
            let stream = UnixStream::connect(path).await.expect("the socket answers");
            let (read_half, writer) = stream.into_split();
            Client {
                lines: tokio::io::AsyncBufReadExt::lines(BufReader::new(read_half)),
                writer,
            }
        }

        /// The rest of what the socket says, up to its end.
        async fn rest(&mut self) -> String {
            let mut rest = String::new();
            while let Some(line) =
                tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
                    .await
                    .expect("an answer in time")
                    .expect("read")
            {
                rest.push_str(&line);
                rest.push('\n');
            }
            rest
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
        key: Token,
        hub: Hub,
        shutdown: CancellationToken,
        server: tokio::task::JoinHandle<()>,
    }

    impl Served {
        fn start(max_message_size: usize) -> Served {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = socket_path(dir.path());
            let listener = bind(&path).expect("binds");
            let (_, hub) = hub::start(
                Vec::new(),
                supervisor::spawn::ProcessGroups::in_memory(),
                Default::default(),
            );
            let shutdown = CancellationToken::new();
            let commands: Commands = Arc::new(|_| Box::pin(async { serde_json::json!("done") }));
            let key = Token::generate();
            let server = tokio::spawn(serve_socket(
                listener,
                hub.clone(),
                commands,
                key.clone(),
                max_message_size,
                shutdown.clone(),
            ));
            Served {
                _dir: dir,
                path,
                key,
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
        let mut client = Client::connect(&path, &served.key).await;

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
        let mut other = Client::connect(&path, &served.key).await;
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

    /// Any process of this user reaches the socket, a sandboxed server among them: without the
    /// key in the data directory it gets no session, whatever it says.
    #[tokio::test]
    async fn a_client_without_the_key_gets_no_session() {
        let served = Served::start(1024);
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let wrong = handoff::Key::new(&Token::generate());
        let openings = [
            (
                ping.to_vec(),
                "serves `switchboard connect` and the command line only",
            ),
            (
                br#"{"switchboard":"relay","version":4,"prefix":0,"profile":"default"}"#.to_vec(),
                "the socket's key is missing or wrong",
            ),
            (
                handoff::Header::relay(wrong.clone(), None).to_line(),
                "the socket's key is missing or wrong",
            ),
            (
                handoff::Header::control(wrong, handoff::Command::Reload).to_line(),
                "the socket's key is missing or wrong",
            ),
        ];
        for (mut opening, reason) in openings {
            if opening.last() != Some(&b'\n') {
                opening.push(b'\n');
            }
            opening.extend_from_slice(ping);
            opening.push(b'\n');
            let mut client = Client::open(&served.path).await;
            client.writer.write_all(&opening).await.expect("write");
            let said = client.rest().await;
            assert!(said.starts_with('R'), "refused, and nothing else: {said:?}");
            assert_eq!(said.lines().count(), 1, "no answer to the ping: {said:?}");
            assert!(said.contains(reason), "{said:?} says {reason:?}");
        }
        let mut client = Client::connect(&served.path, &served.key).await;
        client.ping(2).await;
        served.shutdown.cancel();
        served.server.await.expect("serve_socket ends");
        served.hub.shutdown();
    }

    #[test]
    fn the_ledger_says_when_stdin_stops_mid_line_and_which_id_that_line_has() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (shim_side, fd) = handoff::Ledger::create(dir.path()).expect("a ledger");
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

        let key = handoff::Key::new(&served.key);
        let cases = [
            (
                handoff::Header::new(key, None, handoff::PREFIX_LIMIT + 1, None).to_line(),
                "over the limit",
            ),
            (
                handoff::Header::new(Default::default(), None, 0, None).to_line(),
                "the socket's key is missing or wrong",
            ),
            (
                handoff::Header::new(handoff::Key::new(&Token::generate()), None, 0, None)
                    .to_line(),
                "the socket's key is missing or wrong",
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
                let dir = tempfile::tempdir().expect("temp dir");
                let (_ledger, ledger_fd) = handoff::Ledger::create(dir.path()).expect("a ledger");
                let fds = [input.as_raw_fd(), output.as_raw_fd(), ledger_fd.as_raw_fd()];
                platform::passing::send_with_fds(&stream, &header, &fds).expect("sent");
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

        let mut client = Client::connect(&path, &served.key).await;
        client.ping(1).await;
        served.shutdown.cancel();
        served.server.await.expect("serve_socket ends");
        served.hub.shutdown();
    }
}
