//! The shim's relay: the editor's lines are copied to Switchboard over the connection and its
//! answers back, where stdio cannot be handed over (on Windows always; on Unix for a terminal or
//! a file). The shim sees every line go by, so it keeps the ledger itself: the requests sent and
//! not answered yet, and the editor's `initialize`. It only ever writes whole lines, either way.
//!
//! When the connection ends under a live editor (Switchboard restarted or died), every request
//! sent and not answered fails at once with -32001 (an `initialize` not answered yet is sent
//! again instead), what the editor writes meanwhile is kept, and the next instance gets the
//! editor's `initialize` again under an id of our own (its answer kept from the editor), then
//! `notifications/initialized`, then what was kept. When the editor closes stdin, the answers
//! still due are awaited (up to [`DRAIN_LIMIT`]), then the shim ends.

use std::collections::HashSet;
use std::io;
use std::time::Duration;

use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::time::Instant;

use super::{
    ATTACH_LIMIT, ATTACH_POLL, ConnectOptions, RESTARTED_MESSAGE, START_AFTER, Starter,
    UNANSWERED_MESSAGE, error_lines, request_ids,
};
use crate::handoff::{self, Header, Record};
use platform::ipc;
use wire::framing::{Frame, LineReader};
use wire::jsonrpc::{self, Envelope, Kind};
use wire::method::Method;

/// The longest line relayed either way; a longer one from the editor is answered with an error.
const LINE_LIMIT: usize = handoff::PREFIX_LIMIT;
/// After the editor closed stdin, how long the answers still due may take.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// Runs the relay on this process's stdio until the editor leaves.
pub(super) fn run(options: ConnectOptions) -> anyhow::Result<()> {
    let runtime = platform::runtime::current_thread();
    let dialer = EndpointDialer {
        starter: Starter::new(&options),
    };
    let relay = Relay::new(options.profile);
    let result = runtime.block_on(relay.run(tokio::io::stdin(), tokio::io::stdout(), &dialer));
    // Reading stdin blocks a thread that cannot be interrupted; it ends with the process.
    runtime.shutdown_background();
    result
}

/// Reaches Switchboard: the local socket of the runtime directory, starting an instance there
/// when none answers.
pub(super) trait Dial {
    type Stream: AsyncRead + AsyncWrite + Unpin;

    /// A connection, or `None` when nothing listens (yet).
    async fn connect(&self) -> io::Result<Option<Self::Stream>>;

    /// Starts an instance; its pid.
    fn start(&self) -> anyhow::Result<u32>;

    /// Why nothing answered, after an instance started here (if any) gave up or the time ran out.
    fn not_answering(&self, started: Option<u32>) -> anyhow::Error;

    /// The socket's key, to present in the opening line.
    fn key(&self) -> anyhow::Result<handoff::Key>;
}

struct EndpointDialer {
    starter: Starter,
}

impl Dial for EndpointDialer {
    type Stream = ipc::Stream;

    async fn connect(&self) -> io::Result<Option<ipc::Stream>> {
        match ipc::connect(&self.starter.socket).await {
            Ok(stream) => Ok(Some(stream)),
            Err(error) if ipc::nothing_listens(&error) => Ok(None),
            Err(error) => Err(io::Error::new(
                error.kind(),
                format!(
                    "cannot connect to {}: {error}",
                    self.starter.socket.display()
                ),
            )),
        }
    }

    fn start(&self) -> anyhow::Result<u32> {
        self.starter.start_instance()
    }

    fn not_answering(&self, started: Option<u32>) -> anyhow::Error {
        self.starter.not_answering(started)
    }

    fn key(&self) -> anyhow::Result<handoff::Key> {
        self.starter.key()
    }
}

/// What the relay remembers across instances.
pub(super) struct Relay {
    profile: Option<String>,
    /// The editor's `initialize` request as it wrote it, and its id, once sent.
    initialize: Option<(Box<RawValue>, Box<str>)>,
    /// Ids (JSON text) of the requests sent to the current instance and not answered yet.
    in_flight: HashSet<Box<str>>,
    /// Whole lines from the editor not sent yet: what it wrote while no instance was there.
    waiting: Vec<u8>,
    /// The editor closed stdin.
    input_ended: bool,
}

/// How one instance's connection ended.
enum Ended {
    /// The editor is gone, or finished and got its answers.
    EditorDone,
    /// The connection ended under a live editor.
    Lost,
    /// The instance refused the session, for this reason.
    Refused(String),
}

impl Relay {
    pub(super) fn new(profile: Option<String>) -> Relay {
        Relay {
            profile,
            initialize: None,
            in_flight: HashSet::new(),
            waiting: Vec::new(),
            input_ended: false,
        }
    }

    /// Relays between the editor (`input`, `output`) and one instance after another, until the
    /// editor leaves. Fails when no instance can be reached, or when one refuses the session.
    pub(super) async fn run<R, W, D>(
        mut self,
        input: R,
        mut output: W,
        dial: &D,
    ) -> anyhow::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
        D: Dial,
    {
        let mut editor = LineReader::new(BufReader::new(input), LINE_LIMIT);
        let mut first = true;
        loop {
            let stream = match self.attach(dial, &mut editor, &mut output, first).await {
                Ok(Some(stream)) => stream,
                Ok(None) => return Ok(()),
                Err(error) => {
                    let unsent = request_ids(&std::mem::take(&mut self.waiting));
                    let _ = write_all(&mut output, &error_lines(unsent, RESTARTED_MESSAGE)).await;
                    return Err(error);
                }
            };
            first = false;
            match self
                .carry(stream, dial.key(), &mut editor, &mut output)
                .await
            {
                Ended::EditorDone => return Ok(()),
                Ended::Refused(reason) => {
                    let unsent = request_ids(&std::mem::take(&mut self.waiting));
                    let failed = error_lines(
                        self.in_flight.drain().chain(unsent),
                        &format!("Switchboard refused this session: {reason}"),
                    );
                    let _ = write_all(&mut output, &failed).await;
                    anyhow::bail!("Switchboard refused the session: {reason}");
                }
                Ended::Lost if self.input_ended => {
                    let unanswered = error_lines(self.in_flight.drain(), UNANSWERED_MESSAGE);
                    let _ = write_all(&mut output, &unanswered).await;
                    return Ok(());
                }
                Ended::Lost => {
                    tracing::warn!("the connection to Switchboard closed; attaching again");
                    if self.take_over(&mut output).await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Fails what the lost instance took with it; an `initialize` it never answered is sent
    /// again as it was instead.
    async fn take_over<W: AsyncWrite + Unpin>(&mut self, output: &mut W) -> io::Result<()> {
        let mut lost: Vec<Box<str>> = self.in_flight.drain().collect();
        if let Some((line, id)) = &self.initialize
            && let Some(at) = lost.iter().position(|lost| lost == id)
        {
            lost.swap_remove(at);
            let mut again = line.get().as_bytes().to_vec();
            again.push(b'\n');
            again.append(&mut self.waiting);
            self.waiting = again;
            self.initialize = None;
        }
        write_all(output, &error_lines(lost, RESTARTED_MESSAGE)).await
    }

    /// Dials until an instance answers, keeping what the editor writes meanwhile (whole lines,
    /// up to [`handoff::PREFIX_LIMIT`]). The first time, an instance is started at once when
    /// none answers; afterwards only after [`START_AFTER`], to give a restarting one its chance.
    /// `None` when the editor left first.
    async fn attach<R, W, D>(
        &mut self,
        dial: &D,
        editor: &mut LineReader<BufReader<R>>,
        output: &mut W,
        first: bool,
    ) -> anyhow::Result<Option<D::Stream>>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
        D: Dial,
    {
        let began = Instant::now();
        let start_at = if first { began } else { began + START_AFTER };
        let deadline = began + ATTACH_LIMIT;
        let mut started = None;
        loop {
            if let Some(stream) = dial.connect().await? {
                if !first {
                    tracing::info!("attached to Switchboard again");
                }
                return Ok(Some(stream));
            }
            let now = Instant::now();
            if started.is_none() && now >= start_at {
                started = Some(dial.start()?);
            }
            if now >= deadline || Starter::gave_up(started) {
                return Err(dial.not_answering(started));
            }
            let pause = tokio::time::sleep(ATTACH_POLL);
            tokio::pin!(pause);
            loop {
                let reading = self.waiting.len() < handoff::PREFIX_LIMIT && !self.input_ended;
                tokio::select! {
                    _ = &mut pause => break,
                    frame = editor.next_frame(), if reading => match frame {
                        Ok(Some(Frame::Line(line))) => {
                            self.waiting.extend_from_slice(&line);
                            self.waiting.push(b'\n');
                        }
                        Ok(Some(Frame::Oversized { len, .. })) => {
                            if write_all(output, &oversized(len)).await.is_err() {
                                return Ok(None);
                            }
                        }
                        Ok(None) | Err(_) => {
                            tracing::info!("the editor left while Switchboard was away");
                            let unsent = request_ids(&std::mem::take(&mut self.waiting));
                            let _ = write_all(output, &error_lines(unsent, RESTARTED_MESSAGE)).await;
                            return Ok(None);
                        }
                    },
                }
            }
        }
    }

    /// Relays over one instance's connection until it ends.
    async fn carry<R, W, S>(
        &mut self,
        stream: S,
        key: anyhow::Result<handoff::Key>,
        editor: &mut LineReader<BufReader<R>>,
        output: &mut W,
    ) -> Ended
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let (from_instance, mut to_instance) = tokio::io::split(stream);
        let mut instance = LineReader::new(BufReader::new(from_instance), LINE_LIMIT);
        let key = match key {
            Ok(key) => key,
            Err(error) => return Ended::Refused(format!("{error:#}")),
        };
        let mut opening = Header::relay(key, self.profile.clone()).to_line();
        if let Some((line, _)) = &self.initialize {
            for replayed in handoff::replayed_initialize(line) {
                opening.extend_from_slice(&replayed);
            }
        }
        let waiting = std::mem::take(&mut self.waiting);
        for line in waiting.split_inclusive(|&byte| byte == b'\n') {
            self.note_sent(line);
        }
        opening.extend_from_slice(&waiting);
        if write_all(&mut to_instance, &opening).await.is_err() {
            return Ended::Lost;
        }
        let drain = tokio::time::sleep(DRAIN_LIMIT);
        tokio::pin!(drain);
        // Whether the instance took the session; until it says so it may still refuse it.
        let mut accepted = false;
        loop {
            if accepted && self.input_ended && self.in_flight.is_empty() {
                return Ended::EditorDone;
            }
            tokio::select! {
                _ = &mut drain, if self.input_ended => return Ended::Lost,
                frame = editor.next_frame(), if !self.input_ended => match frame {
                    Ok(Some(Frame::Line(mut line))) => {
                        line.push(b'\n');
                        self.note_sent(&line);
                        if write_all(&mut to_instance, &line).await.is_err() {
                            return Ended::Lost;
                        }
                    }
                    Ok(Some(Frame::Oversized { len, .. })) => {
                        if write_all(output, &oversized(len)).await.is_err() {
                            return Ended::EditorDone;
                        }
                    }
                    Ok(None) | Err(_) => {
                        self.input_ended = true;
                        drain.as_mut().reset(Instant::now() + DRAIN_LIMIT);
                    }
                },
                frame = instance.next_frame() => match frame {
                    Ok(Some(Frame::Line(mut line))) => {
                        match Record::parse(&line) {
                            Some(Record::Refused(reason)) => return Ended::Refused(reason.to_owned()),
                            Some(Record::Accepted) => {
                                accepted = true;
                                continue;
                            }
                            _ => {}
                        }
                        if !self.note_received(&line) {
                            continue;
                        }
                        line.push(b'\n');
                        if write_all(output, &line).await.is_err() {
                            return Ended::EditorDone;
                        }
                    }
                    Ok(Some(Frame::Oversized { len, .. })) => {
                        tracing::warn!(len, "Switchboard sent a line too long to relay");
                    }
                    Ok(None) | Err(_) => return Ended::Lost,
                },
            }
        }
    }

    /// Notes a line sent to the instance: a request is in flight; an `initialize` is kept to
    /// replay.
    fn note_sent(&mut self, line: &[u8]) {
        let Ok(envelope) = Envelope::parse(line) else {
            return;
        };
        let (Kind::Request, Some(id)) = (envelope.kind(), envelope.id) else {
            return;
        };
        if envelope.method == Some(Method::Initialize) {
            let text = std::str::from_utf8(line).map(str::trim_end);
            if let Ok(Ok(line)) = text.map(|text| RawValue::from_string(text.to_owned())) {
                self.initialize = Some((line, Box::from(id.get())));
            }
        }
        self.in_flight.insert(Box::from(id.get()));
    }

    /// Notes a line from the instance; `false` for the answer to our replayed `initialize`,
    /// which the editor must not see.
    fn note_received(&mut self, line: &[u8]) -> bool {
        let Ok(envelope) = Envelope::parse(line) else {
            return true;
        };
        let (Kind::Response, Some(id)) = (envelope.kind(), envelope.id) else {
            return true;
        };
        if id.get() == handoff::REPLAY_ID {
            return false;
        }
        self.in_flight.remove(id.get());
        true
    }
}

fn oversized(len: usize) -> Vec<u8> {
    jsonrpc::error_line(
        None,
        &jsonrpc::ErrorObject::new(
            jsonrpc::INVALID_REQUEST,
            format!(
                "a message of {len} bytes was dropped: the limit is {LINE_LIMIT} bytes per message"
            ),
        ),
    )
}

async fn write_all<W: AsyncWrite + Unpin>(to: &mut W, bytes: &[u8]) -> io::Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    to.write_all(bytes).await?;
    to.flush().await
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, DuplexStream};

    use super::*;

    /// Dials the endpoint at a path; never starts an instance (the test plays the instance).
    struct TestDial {
        path: std::path::PathBuf,
    }

    impl Dial for TestDial {
        type Stream = ipc::Stream;

        async fn connect(&self) -> io::Result<Option<ipc::Stream>> {
            match ipc::connect(&self.path).await {
                Ok(stream) => Ok(Some(stream)),
                Err(error) if ipc::nothing_listens(&error) => Ok(None),
                Err(error) => Err(error),
            }
        }

        fn start(&self) -> anyhow::Result<u32> {
            anyhow::bail!("the test plays the instance")
        }

        fn not_answering(&self, _started: Option<u32>) -> anyhow::Error {
            anyhow::anyhow!("nothing answered")
        }

        fn key(&self) -> anyhow::Result<handoff::Key> {
            Ok(handoff::Key::default())
        }
    }

    /// One side of a line-by-line conversation.
    struct Lines<R, W> {
        reader: tokio::io::Lines<tokio::io::BufReader<R>>,
        writer: W,
    }

    impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Lines<R, W> {
        async fn send(&mut self, message: Value) {
            let mut line = message.to_string().into_bytes();
            line.push(b'\n');
            self.writer.write_all(&line).await.expect("write");
        }

        /// Says the session is taken, as an instance does after the header.
        async fn take_session(&mut self) {
            let mut line = Vec::new();
            Record::Accepted.encode(&mut line);
            self.writer.write_all(&line).await.expect("write");
        }

        async fn next(&mut self) -> Value {
            let line = tokio::time::timeout(Duration::from_secs(10), self.reader.next_line())
                .await
                .expect("a line in time")
                .expect("read")
                .expect("not the end");
            serde_json::from_str(&line).expect("JSON")
        }
    }

    fn editor_side(
        editor: DuplexStream,
    ) -> Lines<tokio::io::ReadHalf<DuplexStream>, tokio::io::WriteHalf<DuplexStream>> {
        let (reader, writer) = tokio::io::split(editor);
        Lines {
            reader: tokio::io::BufReader::new(reader).lines(),
            writer,
        }
    }

    async fn accept(
        listener: &mut ipc::Listener,
    ) -> Lines<tokio::io::ReadHalf<ipc::Connection>, tokio::io::WriteHalf<ipc::Connection>> {
        let connection = listener.accept().await.expect("the relay connects");
        let (reader, writer) = tokio::io::split(connection);
        Lines {
            reader: tokio::io::BufReader::new(reader).lines(),
            writer,
        }
    }

    #[tokio::test]
    async fn a_lost_instance_fails_what_it_held_and_the_next_gets_the_handshake_replayed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = ipc::endpoint(dir.path());
        let mut listener = ipc::Listener::bind(&path).expect("binds");
        let (editor, relay_side) = tokio::io::duplex(64 * 1024);
        let (relay_in, relay_out) = tokio::io::split(relay_side);
        let dial = TestDial { path: path.clone() };
        let relay = tokio::spawn(async move {
            Relay::new(Some("work".to_owned()))
                .run(relay_in, relay_out, &dial)
                .await
        });
        let mut editor = editor_side(editor);
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}}});
        editor.send(initialize.clone()).await;

        let mut first = accept(&mut listener).await;
        let header = first.next().await;
        assert_eq!(header["switchboard"], "relay");
        assert_eq!(header["profile"], "work");
        first.take_session().await;
        assert_eq!(
            first.next().await,
            initialize,
            "the editor's lines pass as they are"
        );
        first
            .send(json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25"}}))
            .await;
        assert_eq!(editor.next().await["id"], 0);
        editor
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        editor
            .send(json!({"jsonrpc": "2.0", "id": "held", "method": "tools/call"}))
            .await;
        editor
            .send(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}))
            .await;
        assert_eq!(first.next().await["method"], "notifications/initialized");
        assert_eq!(first.next().await["id"], "held");
        assert_eq!(first.next().await["id"], 7);
        first
            .send(json!({"jsonrpc": "2.0", "id": 7, "result": {}}))
            .await;
        assert_eq!(editor.next().await["id"], 7);

        drop(first);
        let failed = editor.next().await;
        assert_eq!(failed["id"], "held", "{failed}");
        assert_eq!(failed["error"]["code"], jsonrpc::BACKEND_UNAVAILABLE);
        assert_eq!(failed["error"]["message"], RESTARTED_MESSAGE);
        editor
            .send(json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}))
            .await;

        let mut second = accept(&mut listener).await;
        assert_eq!(second.next().await["switchboard"], "relay");
        second.take_session().await;
        let replayed = second.next().await;
        assert_eq!(replayed["method"], "initialize");
        assert_eq!(replayed["id"], "switchboard-connect-replay");
        assert_eq!(replayed["params"], initialize["params"]);
        second
            .send(json!({"jsonrpc": "2.0", "id": "switchboard-connect-replay", "result": {}}))
            .await;
        assert_eq!(second.next().await["method"], "notifications/initialized");
        assert_eq!(
            second.next().await["id"],
            8,
            "what the editor wrote meanwhile follows"
        );
        second
            .send(json!({"jsonrpc": "2.0", "id": 8, "result": {"tools": []}}))
            .await;
        let answer = editor.next().await;
        assert_eq!(
            answer["id"], 8,
            "the replayed handshake's answer is not the editor's"
        );

        drop(editor);
        let ended = tokio::time::timeout(Duration::from_secs(10), relay)
            .await
            .expect("the relay ends with the editor")
            .expect("the relay ran");
        assert!(ended.is_ok(), "{ended:?}");
    }

    #[tokio::test]
    async fn a_refused_session_fails_its_requests_with_the_reason() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = ipc::endpoint(dir.path());
        let mut listener = ipc::Listener::bind(&path).expect("binds");
        let (editor, relay_side) = tokio::io::duplex(64 * 1024);
        let (relay_in, relay_out) = tokio::io::split(relay_side);
        let dial = TestDial { path };
        let relay =
            tokio::spawn(async move { Relay::new(None).run(relay_in, relay_out, &dial).await });
        let mut editor = editor_side(editor);
        editor
            .send(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .await;
        let mut instance = accept(&mut listener).await;
        assert_eq!(instance.next().await["switchboard"], "relay");
        assert_eq!(instance.next().await["id"], 1);
        instance
            .writer
            .write_all(b"Rno profile x is configured\n")
            .await
            .expect("write");
        let failed = editor.next().await;
        assert_eq!(failed["id"], 1);
        assert_eq!(
            failed["error"]["message"],
            "Switchboard refused this session: no profile x is configured"
        );
        let ended = relay.await.expect("the relay ran");
        assert!(ended.is_err(), "a refusal ends the shim with an error");
    }

    #[tokio::test]
    async fn an_editor_that_leaves_at_once_still_learns_of_a_refusal() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = ipc::endpoint(dir.path());
        let mut listener = ipc::Listener::bind(&path).expect("binds");
        let dial = TestDial { path };
        let relay = tokio::spawn(async move {
            Relay::new(Some("nope".to_owned()))
                .run(tokio::io::empty(), tokio::io::sink(), &dial)
                .await
        });
        let mut instance = accept(&mut listener).await;
        assert_eq!(instance.next().await["profile"], "nope");
        tokio::task::yield_now().await;
        instance
            .writer
            .write_all(b"Rno profile nope is configured\n")
            .await
            .expect("write");
        let ended = relay.await.expect("the relay ran");
        let error = ended.expect_err("the refusal is the shim's error");
        assert!(error.to_string().contains("no profile nope"), "{error}");
    }
}
