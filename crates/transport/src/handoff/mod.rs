//! How `switchboard connect` hands the editor's stdio to Switchboard, and the ledger Switchboard
//! keeps for it meanwhile; or, where stdio cannot be handed over, how it says what it relays.
//!
//! Copying every line through the shim would cost each call two more process wake-ups. Instead,
//! on Unix, the shim passes its stdin and stdout to Switchboard over the socket (`SCM_RIGHTS`),
//! together with a [`Header`]; Switchboard then reads the editor's requests and writes its
//! answers itself.
//! What the shim would need to finish the session if Switchboard died — which requests are
//! unanswered, and whether either stream was left in the middle of a line — Switchboard keeps in
//! a [`Ledger`] the shim shares with it (a sealed memfd, also passed over the socket), with plain
//! atomic stores: no system call and no wake-up per call. The socket stays open as the shim's
//! lifeline and carries the rare rest as [`Record`]s, one per line: the handoff taken, the
//! editor's `initialize`, the end of stdin, and requests the ledger has no room for. When the
//! socket closes, the shim takes its stdio back, reads the ledger, fails what was in flight, and
//! hands over again to the next instance.
//!
//! Windows cannot pass descriptors, and stdio that is not a pipe or a socket (a terminal, a
//! file) cannot be shared safely: then the shim relays the editor's lines over the connection
//! (`transport::connect::relay`), which it opens with a [`Header`] tagged [`Tag::Relay`] and no
//! prefix.

#[cfg(unix)]
mod ledger;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use wire::method::Method;

#[cfg(unix)]
pub use ledger::{LEDGER_SIZE, Ledger, SLOT_ID_BYTES, SLOTS};

/// The version of this protocol; both sides must speak the same. Version 4 added the
/// [`Header::key`].
pub(crate) const VERSION: u32 = 4;

/// The id under which Switchboard replays the editor's `initialize` after a restart.
pub(crate) const REPLAY_ID: &str = "\"switchboard-connect-replay\"";

/// The most the shim sends ahead of stdin ([`Header::prefix`]); past it, it stops reading the
/// editor until an instance takes over.
pub(crate) const PREFIX_LIMIT: usize = 64 * 1024 * 1024;

/// Writes of at most this many bytes reach a pipe whole (`PIPE_BUF`); longer ones may be split.
pub(crate) const ATOMIC_WRITE: usize = 4096;

/// The socket's key (`token::SOCKET_KEY_FILE`), as a client presents it in its [`Header`]. Its
/// value never appears in `Debug` output.
#[derive(Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Key(String);

impl Key {
    pub fn new(token: &crate::token::Token) -> Key {
        Key(token.expose().to_owned())
    }

    /// Whether this is `expected`, compared in constant time.
    pub(crate) fn is(&self, expected: &crate::token::Token) -> bool {
        expected.matches(&self.0)
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(<redacted>)")
    }
}

/// The first line the shim sends, with its stdin and stdout attached.
#[derive(Debug, Serialize, Deserialize)]
pub struct Header {
    pub(crate) switchboard: Tag,
    pub(crate) version: u32,
    /// The socket's key, read from the data directory: what tells an editor's `connect` (or the
    /// command line) from any other process of the same user, a sandboxed server among them.
    /// Missing or wrong, the connection is refused.
    #[serde(default)]
    pub(crate) key: Key,
    /// The editor's `initialize` request, answered by an instance that has since gone: replayed
    /// under [`REPLAY_ID`], with its answer kept from the editor, and followed by
    /// `notifications/initialized`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) replay: Option<Box<RawValue>>,
    /// How many bytes follow the header: what the editor wrote while no instance had its stdin,
    /// to be read before stdin itself. At most [`PREFIX_LIMIT`].
    pub(crate) prefix: usize,
    /// The profile the editor asked for (`connect --profile`); the default one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) profile: Option<String>,
    /// For [`Tag::Control`]: what the command line asks of the running instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) command: Option<Command>,
}

/// What the command line may ask of the running instance over the socket, whose peer is known
/// to be this user (no token, no address from a file).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Command {
    /// Read the config file again now; the answer is the reload's outcome.
    Reload,
    /// Say what runs: the instance, its dashboard and its backends.
    Status,
    /// Shut down as on SIGTERM: every backend stopped, then the instance exits.
    Stop,
}

/// Why a header read off the socket is not served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NotAdmitted {
    /// The other side speaks another `version` of this protocol.
    #[error("handoff version {version} is not {VERSION}; the connect and serve binaries differ")]
    Version { version: u32 },
    /// The header's key is not the socket's.
    #[error(
        "the socket's key is missing or wrong: Switchboard admits only clients that read \
         it from its data directory ({}); are `connect` and `serve` using different data \
         directories ({})?",
        crate::token::SOCKET_KEY_FILE,
        platform::dirs::DATA_DIR_ENV
    )]
    Key,
}

/// The value of [`Header::switchboard`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Tag {
    /// Stdio and the ledger come with the header.
    Handoff,
    /// The shim relays the editor's lines over this connection; no prefix, no replay (the shim
    /// replays the handshake itself).
    Relay,
    /// A command of the command line ([`Header::command`]), answered with one line.
    Control,
}

impl Header {
    pub fn new(
        key: Key,
        replay: Option<Box<RawValue>>,
        prefix: usize,
        profile: Option<String>,
    ) -> Header {
        Header {
            switchboard: Tag::Handoff,
            version: VERSION,
            key,
            replay,
            prefix,
            profile,
            command: None,
        }
    }

    /// The first line of a relayed connection.
    pub(crate) fn relay(key: Key, profile: Option<String>) -> Header {
        Header {
            switchboard: Tag::Relay,
            version: VERSION,
            key,
            replay: None,
            prefix: 0,
            profile,
            command: None,
        }
    }

    /// The only line of a command from the command line.
    pub fn control(key: Key, command: Command) -> Header {
        Header {
            switchboard: Tag::Control,
            version: VERSION,
            key,
            replay: None,
            prefix: 0,
            profile: None,
            command: Some(command),
        }
    }

    /// Why a header read off the socket cannot be served, if it cannot: another version of the
    /// protocol, or a key that is not `expected`.
    pub(crate) fn refusal(&self, expected: &crate::token::Token) -> Option<NotAdmitted> {
        if self.version != VERSION {
            return Some(NotAdmitted::Version {
                version: self.version,
            });
        }
        if !self.key.is(expected) {
            return Some(NotAdmitted::Key);
        }
        None
    }

    /// The header as one line.
    pub fn to_line(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(self).expect("a header serializes");
        line.push(b'\n');
        line
    }
}

/// The editor's `initialize` again under [`REPLAY_ID`], then `notifications/initialized`: what
/// a new instance is given before the editor's next lines, its answer kept from the editor.
pub(crate) fn replayed_initialize(initialize: &RawValue) -> [Vec<u8>; 2] {
    let params = wire::jsonrpc::Envelope::parse(initialize.get().as_bytes())
        .ok()
        .and_then(|envelope| envelope.params);
    [
        wire::jsonrpc::request_line(REPLAY_ID, &Method::Initialize, params),
        wire::jsonrpc::notification_line(&Method::Initialized, None),
    ]
}

/// One line of the ledger Switchboard writes to the shim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Record<'a> {
    /// The handoff is taken; the shim no longer touches its stdio.
    Accepted,
    /// A request with this id (JSON text) was read from the editor; only for requests the
    /// [`Ledger`] has no room for.
    Request(&'a str),
    /// The answer to the request with this id was written to the editor; likewise.
    Answered(&'a str),
    /// The editor's `initialize` request, as it wrote it.
    Initialize(&'a [u8]),
    /// The editor closed stdin; the answers still due follow, then the socket closes.
    InputEnded,
    /// The handoff is refused, for this reason (one line); the socket closes.
    Refused(&'a str),
}

impl<'a> Record<'a> {
    /// Appends the record as one line.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Record::Accepted => out.push(b'H'),
            Record::Request(id) => {
                out.push(b'+');
                out.extend_from_slice(id.as_bytes());
            }
            Record::Answered(id) => {
                out.push(b'-');
                out.extend_from_slice(id.as_bytes());
            }
            Record::Initialize(line) => {
                out.push(b'I');
                out.extend_from_slice(line);
            }
            Record::InputEnded => out.push(b'E'),
            Record::Refused(reason) => {
                out.push(b'R');
                out.extend(reason.bytes().map(|byte| match byte {
                    b'\n' | b'\r' => b' ',
                    byte => byte,
                }));
            }
        }
        out.push(b'\n');
    }

    /// Reads one line (without its `\n`); `None` for anything else.
    pub(crate) fn parse(line: &'a [u8]) -> Option<Record<'a>> {
        let (&kind, rest) = line.split_first()?;
        let text = || {
            std::str::from_utf8(rest)
                .ok()
                .filter(|text| !text.is_empty())
        };
        Some(match kind {
            b'H' if rest.is_empty() => Record::Accepted,
            b'+' => Record::Request(text()?),
            b'-' => Record::Answered(text()?),
            b'I' if !rest.is_empty() => Record::Initialize(rest),
            b'E' if rest.is_empty() => Record::InputEnded,
            b'R' => Record::Refused(std::str::from_utf8(rest).ok()?),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_as_written() {
        let records = [
            Record::Accepted,
            Record::Request("1"),
            Record::Answered("\"a b\""),
            Record::Initialize(br#"{"jsonrpc":"2.0","id":0,"method":"initialize"}"#),
            Record::InputEnded,
            Record::Refused("a reason"),
        ];
        let mut out = Vec::new();
        for record in &records {
            record.encode(&mut out);
        }
        let lines: Vec<&[u8]> = out
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        let read: Vec<Record> = lines
            .iter()
            .map(|line| Record::parse(line).expect("a record"))
            .collect();
        assert_eq!(read, records);
        for garbage in [&b""[..], b"+", b"Hx", b"E1", b"?1"] {
            assert_eq!(Record::parse(garbage), None, "{garbage:?}");
        }
    }

    #[test]
    fn a_header_reads_back_as_written() {
        let token = crate::token::Token::generate();
        for header in [
            Header::new(Key::new(&token), None, 3, Some("work".to_owned())),
            Header::relay(Key::new(&token), None),
        ] {
            let line = header.to_line();
            assert_eq!(line.last(), Some(&b'\n'));
            let parsed: Header = serde_json::from_slice(&line).expect("a header");
            assert_eq!(parsed.switchboard, header.switchboard);
            assert_eq!(parsed.version, VERSION);
            assert_eq!(parsed.prefix, header.prefix);
            assert_eq!(parsed.profile, header.profile);
            assert_eq!(parsed.refusal(&token), None);
            let other = crate::token::Token::generate();
            let refused = parsed
                .refusal(&other)
                .expect("another key is refused")
                .to_string();
            assert!(refused.contains("key"), "{refused}");
            assert!(
                !format!("{parsed:?}").contains(token.expose()),
                "Debug hides the key"
            );
        }
        let keyless: Header =
            serde_json::from_str(r#"{"switchboard":"relay","version":4,"prefix":0}"#)
                .expect("read");
        assert!(keyless.refusal(&token).is_some(), "no key is refused");
        let old: Header = serde_json::from_str(r#"{"switchboard":"relay","version":3,"prefix":0}"#)
            .expect("read");
        let refused = old
            .refusal(&token)
            .expect("another version is refused")
            .to_string();
        assert!(refused.contains("version 3"), "{refused}");
    }
}
