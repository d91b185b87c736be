//! The shim's handoff (Unix): stdin and stdout go to Switchboard over the socket
//! ([`crate::handoff`]), and the shim then only reads the ledger Switchboard keeps on
//! the socket. When the socket closes under a live editor (Switchboard restarted or died), the
//! shim takes its stdio back: it ends a line Switchboard left half-written, fails the calls in
//! flight at once, keeps what the editor writes meanwhile, attaches again, and hands over again
//! with the editor's handshake to replay.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::value::RawValue;

use super::{
    ATTACH_LIMIT, ATTACH_POLL, ConnectOptions, RESTARTED_MESSAGE, START_AFTER, Starter,
    UNANSWERED_MESSAGE, error_lines, request_ids,
};
use crate::handoff::{self, Header, Key, Ledger, Record};
use platform::passing;
use wire::jsonrpc::Envelope;

/// Longest ledger record read; an `initialize` request is the longest there is.
const RECORD_LIMIT: u64 = 64 * 1024 * 1024;
const PIPE_BUFFER: usize = 64 * 1024;

/// Whether this process's stdin and stdout can be handed over: both pipes or sockets (a
/// terminal or a file would be shared with whoever else has it open, so those are relayed).
#[allow(clippy::disallowed_methods)] // the editor's stdout, which carries MCP
pub(super) fn stdio_can_be_handed_over() -> bool {
    passing::is_pipe_or_socket(io::stdin().as_fd())
        && passing::is_pipe_or_socket(io::stdout().as_fd())
}

/// Runs the shim until the editor closes stdin and its answers are delivered.
#[allow(clippy::disallowed_methods)] // the editor's stdout, which carries MCP
pub(super) fn run(options: ConnectOptions) -> anyhow::Result<()> {
    let mut dialer = SocketDialer {
        starter: Starter::new(&options),
    };
    let now = Instant::now();
    let first = dialer
        .dial(now, now + ATTACH_LIMIT, &mut |pause| {
            std::thread::sleep(pause);
            true
        })?
        .expect("attaching only gives up early when the editor is gone");
    let stdio = Stdio {
        input: File::from(io::stdin().as_fd().try_clone_to_owned()?),
        output: File::from(io::stdout().as_fd().try_clone_to_owned()?),
    };
    Shim::new(stdio, options.profile, options.runtime_dir).run(first, &mut dialer)
}

/// Reaches Switchboard's socket: once at start, and again after the connection closed.
trait Dial {
    /// A connected stream, or an error once `deadline` passes. When nothing answers at
    /// `start_at` or later, an instance may be started. Between attempts it calls `pause`,
    /// which waits a little and returns `false` once the editor has left: then it gives up with
    /// `None`, and no instance is started for nobody.
    fn dial(
        &mut self,
        start_at: Instant,
        deadline: Instant,
        pause: &mut dyn FnMut(Duration) -> bool,
    ) -> anyhow::Result<Option<UnixStream>>;

    /// The socket's key, to present in each handoff.
    fn key(&self) -> anyhow::Result<Key>;
}

/// Dials the socket in the runtime directory and starts `<exe> serve` when nothing answers.
struct SocketDialer {
    starter: Starter,
}

impl Dial for SocketDialer {
    fn dial(
        &mut self,
        start_at: Instant,
        deadline: Instant,
        pause: &mut dyn FnMut(Duration) -> bool,
    ) -> anyhow::Result<Option<UnixStream>> {
        let mut started = None;
        loop {
            match UnixStream::connect(&self.starter.socket) {
                Ok(stream) => return Ok(Some(stream)),
                Err(error) if platform::ipc::nothing_listens(&error) => {}
                Err(error) => {
                    return Err(error).with_context(|| {
                        format!("cannot connect to {}", self.starter.socket.display())
                    });
                }
            }
            let now = Instant::now();
            if started.is_none() && now >= start_at {
                started = Some(self.starter.start_instance()?);
            }
            if now >= deadline || Starter::gave_up(started) {
                return Err(self.starter.not_answering(started));
            }
            if !pause(ATTACH_POLL) {
                return Ok(None);
            }
        }
    }

    fn key(&self) -> anyhow::Result<Key> {
        self.starter.key()
    }
}

/// The two descriptors handed to Switchboard: the editor's stdin and stdout.
struct Stdio {
    input: File,
    output: File,
}

/// `serve` puts the editor's stdio in non-blocking mode, and whoever shares those descriptions
/// (a wrapper shell, say) would still find them so after we exit: they are put back.
impl Drop for Stdio {
    fn drop(&mut self) {
        for fd in [&self.input, &self.output] {
            let _ = passing::set_nonblocking(fd.as_fd(), false);
        }
    }
}

/// The shim: the stdio it hands over, and what it must remember across instances.
struct Shim {
    stdio: Stdio,
    /// The private folder a system without memfds keeps the ledger's file in.
    runtime_dir: PathBuf,
    /// The profile asked for, named in every handoff.
    profile: Option<String>,
    /// What the editor wrote while no instance had its stdin, to send ahead of it.
    prefix: Vec<u8>,
    /// Skip the editor's bytes up to the next line break: the start of that line went down with
    /// an instance.
    skip_to_line_end: bool,
    /// The editor's `initialize`, to replay on a new instance.
    initialize: Option<Initialize>,
    /// What the current instance's records said.
    book: Book,
    /// The ledger shared with the current instance.
    ledger: Option<Ledger>,
}

struct Initialize {
    /// The request as the editor wrote it.
    line: Box<RawValue>,
    /// Its id (JSON text).
    id: Box<str>,
}

/// What one instance's records said.
#[derive(Default)]
struct Book {
    accepted: bool,
    /// Ids (JSON text) of the editor's requests not answered yet that are not in the ledger:
    /// sent ahead of stdin, or with no room in the ledger.
    in_flight: HashSet<Box<str>>,
    /// The editor closed stdin: the instance delivered the answers it could and ended.
    input_ended: bool,
    /// The instance refused the handoff, for this reason.
    refused: Option<String>,
}

/// How a takeover ended.
enum Takeover {
    /// Stdio is ours and an instance should get it again.
    Carry,
    /// The editor left; nothing is left to do.
    EditorGone,
}

impl Shim {
    fn new(stdio: Stdio, profile: Option<String>, runtime_dir: PathBuf) -> Shim {
        Shim {
            stdio,
            runtime_dir,
            profile,
            prefix: Vec::new(),
            skip_to_line_end: false,
            initialize: None,
            book: Book::default(),
            ledger: None,
        }
    }

    /// Hands stdio to the instance on `stream`, and again to the next one each time an instance
    /// goes, until the editor leaves. Fails when no instance can be reached again, or when one
    /// refuses the handoff (another would refuse it too).
    fn run(mut self, mut stream: UnixStream, dial: &mut dyn Dial) -> anyhow::Result<()> {
        loop {
            self.book = Book::default();
            let followed = self
                .hand_over(&stream, &*dial)
                .and_then(|()| self.follow(&stream));
            if let Err(error) = followed {
                tracing::debug!(%error, "the connection to Switchboard failed");
            }
            drop(stream);
            if self.book.input_ended {
                let unanswered = self.unanswered();
                let _ = self.fail(unanswered, UNANSWERED_MESSAGE);
                return Ok(());
            }
            if let Some(reason) = self.book.refused.take() {
                // Trying again would only be refused again.
                let unsent = request_ids(&std::mem::take(&mut self.prefix));
                let _ = self.fail(
                    unsent,
                    &format!("Switchboard refused this session: {reason}"),
                );
                anyhow::bail!("Switchboard refused to take the editor's stdio: {reason}");
            }
            tracing::warn!("the connection to Switchboard closed; attaching again");
            if let Takeover::EditorGone = self.take_over()? {
                return Ok(());
            }
            match self.reattach(dial)? {
                Some(next) => stream = next,
                None => return Ok(()),
            }
        }
    }

    /// Sends the header (with the handshake to replay), what the editor wrote meanwhile, and
    /// the two descriptors.
    fn hand_over(&mut self, stream: &UnixStream, dial: &dyn Dial) -> io::Result<()> {
        let replay = self
            .initialize
            .as_ref()
            .map(|initialize| initialize.line.clone());
        let key = match dial.key() {
            Ok(key) => key,
            Err(error) => {
                let reason = format!("{error:#}");
                self.book.refused = Some(reason.clone());
                return Err(io::Error::other(reason));
            }
        };
        let mut message =
            Header::new(key, replay, self.prefix.len(), self.profile.clone()).to_line();
        message.extend_from_slice(&self.prefix);
        let (ledger, ledger_fd) = Ledger::create(&self.runtime_dir)?;
        self.ledger = Some(ledger);
        let fds = [
            self.stdio.input.as_raw_fd(),
            self.stdio.output.as_raw_fd(),
            ledger_fd.as_raw_fd(),
        ];
        passing::send_with_fds(stream, &message, &fds)
    }

    /// The requests the instance took and did not answer, by its ledger and its records.
    fn unanswered(&mut self) -> HashSet<Box<str>> {
        let mut unanswered = std::mem::take(&mut self.book.in_flight);
        if let Some(ledger) = &self.ledger {
            unanswered.extend(ledger.in_flight());
        }
        unanswered
    }

    /// Reads the ledger until the socket ends.
    fn follow(&mut self, stream: &UnixStream) -> io::Result<()> {
        let mut reader = BufReader::with_capacity(PIPE_BUFFER, stream).take(RECORD_LIMIT);
        let mut line = Vec::new();
        loop {
            line.clear();
            reader.set_limit(RECORD_LIMIT);
            if reader.read_until(b'\n', &mut line)? == 0 {
                return Ok(());
            }
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            match Record::parse(text) {
                Some(record) => self.note(record),
                None => tracing::warn!(
                    record = %String::from_utf8_lossy(text),
                    "Switchboard wrote a ledger record this connect does not know"
                ),
            }
        }
    }

    fn note(&mut self, record: Record<'_>) {
        let book = &mut self.book;
        match record {
            Record::Accepted => {
                book.accepted = true;
                // What was sent ahead of stdin is the instance's now, and so are its requests.
                let prefix = std::mem::take(&mut self.prefix);
                book.in_flight.extend(request_ids(&prefix));
            }
            Record::Request(id) => {
                book.in_flight.insert(id.into());
            }
            Record::Answered(id) => {
                book.in_flight.remove(id);
            }
            Record::Initialize(line) => {
                let parsed = std::str::from_utf8(line)
                    .ok()
                    .and_then(|text| RawValue::from_string(text.to_owned()).ok());
                let id = Envelope::parse(line)
                    .ok()
                    .and_then(|envelope| envelope.id.map(|id| Box::from(id.get())));
                if let (Some(line), Some(id)) = (parsed, id) {
                    self.initialize = Some(Initialize { line, id });
                }
            }
            Record::InputEnded => book.input_ended = true,
            Record::Refused(reason) => book.refused = Some(reason.to_owned()),
        }
    }

    /// Takes stdio back from an instance that went: ends a line it left half-written, fails the
    /// calls it took with it, and notes a line it held the start of.
    fn take_over(&mut self) -> anyhow::Result<Takeover> {
        for fd in [&self.stdio.input, &self.stdio.output] {
            passing::set_nonblocking(fd.as_fd(), false)
                .context("cannot take the editor's stdio back")?;
        }
        if !self.book.accepted {
            // It went before taking anything: the prefix is still ours to send.
            return Ok(Takeover::Carry);
        }
        let mut lost = self.unanswered();
        let ledger = self
            .ledger
            .take()
            .expect("an accepted handoff has a ledger");
        if ledger.partial_output() && self.write_editor(b"\n").is_err() {
            return Ok(Takeover::EditorGone);
        }
        // An `initialize` not answered yet is not lost: the next instance gets it as it was.
        if let Some(initialize) = &self.initialize
            && lost.remove(&initialize.id)
        {
            self.prefix
                .extend_from_slice(initialize.line.get().as_bytes());
            self.prefix.push(b'\n');
            self.initialize = None;
        }
        if let Some(partial) = ledger.partial_input() {
            self.skip_to_line_end = true;
            lost.extend(partial);
        }
        if self.fail(lost, RESTARTED_MESSAGE).is_err() {
            return Ok(Takeover::EditorGone);
        }
        Ok(Takeover::Carry)
    }

    /// Dials until an instance answers, keeping what the editor writes meanwhile. `None` when
    /// the editor left first.
    fn reattach(&mut self, dial: &mut dyn Dial) -> anyhow::Result<Option<UnixStream>> {
        let started = Instant::now();
        let dialed = dial.dial(
            started + START_AFTER,
            started + ATTACH_LIMIT,
            &mut |pause| self.read_editor(pause).unwrap_or(false),
        );
        let waiting = match dialed {
            Ok(Some(stream)) => {
                tracing::info!("attached to Switchboard again");
                return Ok(Some(stream));
            }
            Ok(None) => {
                tracing::info!("the editor left while Switchboard was away");
                Ok(None)
            }
            Err(error) => Err(error.context("cannot attach to Switchboard again")),
        };
        let unsent = request_ids(&std::mem::take(&mut self.prefix));
        let _ = self.fail(unsent, RESTARTED_MESSAGE);
        waiting
    }

    /// Waits up to `pause` for the editor to write, and keeps what it wrote for the next
    /// instance, up to [`handoff::PREFIX_LIMIT`]. `false` once stdin ended.
    fn read_editor(&mut self, pause: Duration) -> io::Result<bool> {
        use nix::poll::{PollFd, PollFlags, PollTimeout};
        if self.prefix.len() >= handoff::PREFIX_LIMIT {
            // Enough waits already; the editor waits too, on a full pipe.
            std::thread::sleep(pause);
            return Ok(true);
        }
        let timeout = PollTimeout::try_from(pause).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(self.stdio.input.as_fd(), PollFlags::POLLIN)];
        match nix::poll::poll(&mut fds, timeout) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => return Ok(true),
            Ok(_) => {}
            Err(errno) => return Err(errno.into()),
        }
        let mut buf = vec![0; PIPE_BUFFER.min(handoff::PREFIX_LIMIT - self.prefix.len())];
        let n = match (&self.stdio.input).read(&mut buf) {
            Ok(0) => return Ok(false),
            Ok(n) => n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => return Ok(true),
            Err(error) => return Err(error),
        };
        let mut read = &buf[..n];
        if self.skip_to_line_end {
            match memchr::memchr(b'\n', read) {
                Some(pos) => {
                    read = &read[pos + 1..];
                    self.skip_to_line_end = false;
                }
                None => read = &[],
            }
        }
        self.prefix.extend_from_slice(read);
        Ok(true)
    }

    /// Answers each of `ids` (JSON text) with an error carrying `message`.
    fn fail(&self, ids: impl IntoIterator<Item = Box<str>>, message: &str) -> io::Result<()> {
        let lines = error_lines(ids, message);
        if lines.is_empty() {
            return Ok(());
        }
        self.write_editor(&lines)
    }

    fn write_editor(&self, bytes: &[u8]) -> io::Result<()> {
        (&self.stdio.output).write_all(bytes)
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::OwnedFd;

    use super::*;

    #[test]
    fn a_takeover_ends_a_half_written_line_fails_what_was_held_and_skips_a_half_read_one() {
        let (editor, shim_end) = UnixStream::pair().expect("a socket pair");
        let stdio = Stdio {
            input: File::from(OwnedFd::from(shim_end.try_clone().expect("clone"))),
            output: File::from(OwnedFd::from(shim_end)),
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let mut shim = Shim::new(stdio, None, dir.path().to_path_buf());
        let (ledger, fd) = Ledger::create(dir.path()).expect("a ledger");
        let instance = Ledger::open(&fd).expect("the instance maps it");
        shim.ledger = Some(ledger);
        shim.note(Record::Accepted);
        shim.note(Record::Initialize(
            br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#,
        ));
        assert!(instance.claim(0, "0"));
        assert!(instance.claim(1, "5"));
        instance.release(0);
        shim.note(Record::Request("\"long-id\""));
        instance.set_partial_output(true);
        instance.set_partial_input(Some(Some(b"\"half\"")));
        drop(instance);

        assert!(matches!(shim.take_over(), Ok(Takeover::Carry)));
        let mut written = vec![0; 4096];
        let n = (&editor).read(&mut written).expect("the shim wrote");
        let written = String::from_utf8(written[..n].to_vec()).expect("text");
        let (ended, errors) = written.split_at(1);
        assert_eq!(ended, "\n", "the half-written line is ended first");
        let mut failed: Vec<serde_json::Value> = errors
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("JSON"))
            .map(|error| {
                assert_eq!(error["error"]["message"], RESTARTED_MESSAGE);
                error["id"].clone()
            })
            .collect();
        failed.sort_by_key(|id| id.to_string());
        assert_eq!(
            failed,
            [
                serde_json::json!("half"),
                serde_json::json!("long-id"),
                serde_json::json!(5),
            ],
            "the answered initialize is not failed"
        );

        (&editor)
            .write_all(
                b"rest of line \"half\"\"}\n{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}\n",
            )
            .expect("write");
        assert!(shim.read_editor(Duration::from_secs(5)).expect("read"));
        assert_eq!(
            shim.prefix, b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}\n",
            "the rest of the half-read line is dropped, the next line kept"
        );
        assert_eq!(request_ids(&shim.prefix), [Box::from("8")]);
        let replay = shim.initialize.as_ref().expect("kept to replay");
        assert_eq!(&*replay.id, "0");
    }
}
