//! How `switchboard connect` hands the editor's stdio to Switchboard, and the ledger Switchboard
//! keeps for it meanwhile.
//!
//! Copying every line through the shim would cost each call two more process wake-ups. Instead
//! the shim passes its stdin and stdout to Switchboard over the socket (`SCM_RIGHTS`), together
//! with a [`Header`]; Switchboard then reads the editor's requests and writes its answers itself.
//! What the shim would need to finish the session if Switchboard died — which requests are
//! unanswered, and whether either stream was left in the middle of a line — Switchboard keeps in
//! a [`Ledger`] the shim shares with it (a sealed memfd, also passed over the socket), with plain
//! atomic stores: no system call and no wake-up per call. The socket stays open as the shim's
//! lifeline and carries the rare rest as [`Record`]s, one per line: the handoff taken, the
//! editor's `initialize`, the end of stdin, and requests the ledger has no room for. When the
//! socket closes, the shim takes its stdio back, reads the ledger, fails what was in flight, and
//! hands over again to the next instance.

use std::io::{self, IoSlice, IoSliceMut, Write};
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering, fence};

use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The version of this protocol; both sides must speak the same.
pub const VERSION: u32 = 3;

/// The id under which Switchboard replays the editor's `initialize` after a restart.
pub const REPLAY_ID: &str = "\"switchboard-connect-replay\"";

/// The most the shim sends ahead of stdin ([`Header::prefix`]); past it, it stops reading the
/// editor until an instance takes over.
pub const PREFIX_LIMIT: usize = 64 * 1024 * 1024;

/// Writes of at most this many bytes reach a pipe whole (`PIPE_BUF`); longer ones may be split.
pub const ATOMIC_WRITE: usize = 4096;

/// The first line the shim sends, with its stdin and stdout attached.
#[derive(Debug, Serialize, Deserialize)]
pub struct Header {
    pub switchboard: Tag,
    pub version: u32,
    /// The editor's `initialize` request, answered by an instance that has since gone: replayed
    /// under [`REPLAY_ID`], with its answer kept from the editor, and followed by
    /// `notifications/initialized`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<Box<RawValue>>,
    /// How many bytes follow the header: what the editor wrote while no instance had its stdin,
    /// to be read before stdin itself. At most [`PREFIX_LIMIT`].
    pub prefix: usize,
    /// The profile the editor asked for (`connect --profile`); the default one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

/// The value of [`Header::switchboard`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Tag {
    Handoff,
}

impl Header {
    pub fn new(replay: Option<Box<RawValue>>, prefix: usize, profile: Option<String>) -> Header {
        Header {
            switchboard: Tag::Handoff,
            version: VERSION,
            replay,
            prefix,
            profile,
        }
    }

    /// The header as one line.
    pub fn to_line(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(self).expect("a header serializes");
        line.push(b'\n');
        line
    }
}

/// One line of the ledger Switchboard writes to the shim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record<'a> {
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
    pub fn encode(&self, out: &mut Vec<u8>) {
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
    pub fn parse(line: &'a [u8]) -> Option<Record<'a>> {
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

/// How many requests in flight the [`Ledger`] has room for; more are recorded on the socket.
pub const SLOTS: usize = 1023;
/// The longest id (JSON text) a slot holds; longer ones are recorded on the socket.
pub const SLOT_ID_BYTES: usize = 56;
const MAGIC: u32 = u32::from_le_bytes(*b"SBLG");

/// The ledger's bytes. Every field is atomic: the two processes never share anything else.
#[repr(C)]
struct Layout {
    magic: AtomicU32,
    version: AtomicU32,
    /// 1 while a write to the editor that may be split is under way.
    partial_output: AtomicU32,
    /// 0: what was read from the editor ends with a whole line; 1: part of a line was read;
    /// 2: likewise, and its first bytes showed the id in `partial_input_id`.
    partial_input: AtomicU32,
    partial_input_id: IdText,
    _reserved: [AtomicU64; 5],
    slots: [Slot; SLOTS],
}

#[repr(C)]
struct Slot {
    /// 1 while the request whose id is below is unanswered.
    used: AtomicU32,
    id: IdText,
}

/// The JSON text of a request id.
#[repr(C)]
struct IdText {
    len: AtomicU32,
    bytes: [AtomicU8; SLOT_ID_BYTES],
}

impl IdText {
    /// `false` when `id` is too long to be kept.
    fn store(&self, id: &[u8]) -> bool {
        if id.len() > SLOT_ID_BYTES {
            return false;
        }
        for (cell, byte) in self.bytes.iter().zip(id) {
            cell.store(*byte, Ordering::Relaxed);
        }
        self.len.store(id.len() as u32, Ordering::Relaxed);
        true
    }

    fn load(&self) -> Option<Box<str>> {
        let len = (self.len.load(Ordering::Relaxed) as usize).min(SLOT_ID_BYTES);
        let bytes: Vec<u8> = self.bytes[..len]
            .iter()
            .map(|cell| cell.load(Ordering::Relaxed))
            .collect();
        String::from_utf8(bytes).ok().map(String::into_boxed_str)
    }
}

/// The size of a ledger's memfd.
pub const LEDGER_SIZE: usize = std::mem::size_of::<Layout>();

/// A table in memory shared by the shim and Switchboard: the requests in flight and whether a
/// line is half-read or half-written. Switchboard writes it; the shim reads it once Switchboard
/// is gone.
pub struct Ledger {
    map: NonNull<Layout>,
}

// SAFETY: the mapping is only ever accessed through atomics, so any thread may use it.
unsafe impl Send for Ledger {}
// SAFETY: as above.
unsafe impl Sync for Ledger {}

impl Ledger {
    /// A new, empty ledger in a memfd sealed against resizing (so that Switchboard can map it
    /// without fear of a fault), and the memfd to hand over.
    pub fn create() -> io::Result<(Ledger, OwnedFd)> {
        use nix::fcntl::{FcntlArg, SealFlag, fcntl};
        use nix::sys::memfd::{MFdFlags, memfd_create};
        let fd = memfd_create(
            c"switchboard-ledger",
            MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING,
        )?;
        nix::unistd::ftruncate(&fd, LEDGER_SIZE as i64)?;
        fcntl(
            &fd,
            FcntlArg::F_ADD_SEALS(
                SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW | SealFlag::F_SEAL_SEAL,
            ),
        )?;
        let ledger = Ledger::map(&fd)?;
        ledger.layout().version.store(VERSION, Ordering::Relaxed);
        ledger.layout().magic.store(MAGIC, Ordering::Release);
        Ok((ledger, fd))
    }

    /// Maps a ledger a shim handed over, after checking that it cannot shrink under us and is
    /// one of ours.
    pub fn open(fd: &OwnedFd) -> io::Result<Ledger> {
        use nix::fcntl::{FcntlArg, SealFlag, fcntl};
        let seals = SealFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GET_SEALS)?);
        let size = nix::sys::stat::fstat(fd)?.st_size;
        if !seals.contains(SealFlag::F_SEAL_SHRINK) || size != LEDGER_SIZE as i64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the ledger is not a sealed memfd of the right size",
            ));
        }
        let ledger = Ledger::map(fd)?;
        let layout = ledger.layout();
        if layout.magic.load(Ordering::Acquire) != MAGIC
            || layout.version.load(Ordering::Relaxed) != VERSION
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the ledger was not made by this version of switchboard connect",
            ));
        }
        Ok(ledger)
    }

    fn map(fd: &impl AsFd) -> io::Result<Ledger> {
        use nix::sys::mman::{MapFlags, ProtFlags, mmap};
        let size = NonZeroUsize::new(LEDGER_SIZE).expect("the layout is not empty");
        // SAFETY: a fresh shared mapping of a memfd sealed at exactly this size; it is only
        // accessed through atomics, and unmapped once, on drop.
        let map = unsafe {
            mmap(
                None,
                size,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                fd,
                0,
            )?
        };
        Ok(Ledger { map: map.cast() })
    }

    fn layout(&self) -> &Layout {
        // SAFETY: the mapping is page-aligned, LEDGER_SIZE long, zero-filled at creation, and
        // lives as long as `self`; every field is an atomic valid for any bit pattern.
        unsafe { self.map.as_ref() }
    }

    /// Records the request with `id` (JSON text) as unanswered in `slot`. `false` when the id is
    /// too long for a slot.
    pub fn claim(&self, slot: usize, id: &str) -> bool {
        let Some(slot) = self.layout().slots.get(slot) else {
            return false;
        };
        if !slot.id.store(id.as_bytes()) {
            return false;
        }
        slot.used.store(1, Ordering::Release);
        true
    }

    /// Records the request in `slot` as answered.
    pub fn release(&self, slot: usize) {
        if let Some(slot) = self.layout().slots.get(slot) {
            slot.used.store(0, Ordering::Release);
        }
    }

    /// The ids (JSON text) of the requests recorded as unanswered.
    pub fn in_flight(&self) -> Vec<Box<str>> {
        self.layout()
            .slots
            .iter()
            .filter(|slot| slot.used.load(Ordering::Acquire) == 1)
            .filter_map(|slot| slot.id.load())
            .collect()
    }

    pub fn set_partial_output(&self, partial: bool) {
        self.layout()
            .partial_output
            .store(u32::from(partial), Ordering::Release);
    }

    pub fn partial_output(&self) -> bool {
        self.layout().partial_output.load(Ordering::Acquire) == 1
    }

    /// `None`: the input read so far ends with a whole line; `Some(id)`: part of a line was
    /// read, with the id (JSON text) its first bytes showed.
    pub fn set_partial_input(&self, partial: Option<Option<&[u8]>>) {
        let layout = self.layout();
        let state = match partial {
            None => 0,
            Some(None) => 1,
            Some(Some(id)) => {
                // "No id" while the id changes: Switchboard may die between any two stores.
                layout.partial_input.store(1, Ordering::Relaxed);
                fence(Ordering::Release);
                if layout.partial_input_id.store(id) {
                    2
                } else {
                    1
                }
            }
        };
        layout.partial_input.store(state, Ordering::Release);
    }

    pub fn partial_input(&self) -> Option<Option<Box<str>>> {
        let layout = self.layout();
        match layout.partial_input.load(Ordering::Acquire) {
            0 => None,
            2 => Some(layout.partial_input_id.load()),
            _ => Some(None),
        }
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        // SAFETY: mapped in `map` with this length, and no reference into it outlives `self`.
        let _ = unsafe { nix::sys::mman::munmap(self.map.cast(), LEDGER_SIZE) };
    }
}

/// Sends `bytes` with `fds` attached to their first byte.
pub fn send_with_fds(stream: &UnixStream, bytes: &[u8], fds: &[RawFd]) -> io::Result<()> {
    let rights = [ControlMessage::ScmRights(fds)];
    let sent = loop {
        match nix::sys::socket::sendmsg::<()>(
            stream.as_raw_fd(),
            &[IoSlice::new(bytes)],
            &rights,
            MsgFlags::empty(),
            None,
        ) {
            Err(nix::errno::Errno::EINTR) => continue,
            result => break result.map_err(io::Error::from)?,
        }
    };
    let mut stream = stream;
    stream.write_all(&bytes[sent..])
}

/// One `recvmsg` on a socket ready to read: the bytes read into `buf`, and the descriptors that
/// came with them.
pub fn recv_with_fds(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut space = nix::cmsg_space!([RawFd; 4]);
    let mut iov = [IoSliceMut::new(buf)];
    let message = nix::sys::socket::recvmsg::<()>(
        fd,
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC | MsgFlags::MSG_DONTWAIT,
    )
    .map_err(io::Error::from)?;
    let mut fds = Vec::new();
    for control in message.cmsgs().map_err(io::Error::from)? {
        if let ControlMessageOwned::ScmRights(received) = control {
            // SAFETY: descriptors received with SCM_RIGHTS are new, open and ours alone.
            fds.extend(
                received
                    .into_iter()
                    .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
            );
        }
    }
    Ok((message.bytes, fds))
}

/// Puts a descriptor in or out of non-blocking mode.
pub fn set_nonblocking(fd: RawFd, nonblocking: bool) -> io::Result<()> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    // SAFETY: the caller owns or borrows `fd` for the duration of the call.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL).map_err(io::Error::from)?);
    let flags = if nonblocking {
        flags | OFlag::O_NONBLOCK
    } else {
        flags - OFlag::O_NONBLOCK
    };
    fcntl(fd, FcntlArg::F_SETFL(flags)).map_err(io::Error::from)?;
    Ok(())
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
    fn a_ledger_is_shared_through_its_memfd_and_checked_when_opened() {
        let (shim, fd) = Ledger::create().expect("a ledger");
        let serve = Ledger::open(&fd).expect("opens");
        assert!(serve.claim(0, "1"));
        assert!(serve.claim(SLOTS - 1, "\"a-string-id\""));
        assert!(!serve.claim(3, &"9".repeat(SLOT_ID_BYTES + 1)));
        assert!(!serve.claim(SLOTS, "2"), "no slot past the end");
        serve.set_partial_output(true);
        serve.set_partial_input(Some(Some(b"\"half-read\"")));
        let mut in_flight = shim.in_flight();
        in_flight.sort();
        assert_eq!(in_flight, [Box::from("\"a-string-id\""), Box::from("1")]);
        assert!(shim.partial_output());
        assert_eq!(shim.partial_input(), Some(Some(Box::from("\"half-read\""))));
        serve.set_partial_input(Some(Some("9".repeat(SLOT_ID_BYTES + 1).as_bytes())));
        assert_eq!(shim.partial_input(), Some(None), "too long to keep");
        serve.release(0);
        serve.set_partial_input(None);
        assert_eq!(shim.in_flight(), [Box::from("\"a-string-id\"")]);
        assert_eq!(shim.partial_input(), None);

        let plain = nix::sys::memfd::memfd_create(c"plain", nix::sys::memfd::MFdFlags::empty())
            .expect("a memfd");
        nix::unistd::ftruncate(&plain, LEDGER_SIZE as i64).expect("sized");
        let refused = Ledger::open(&plain)
            .err()
            .expect("an unsealed memfd is refused");
        assert_eq!(refused.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn descriptors_travel_with_the_header() {
        let (shim, serve) = UnixStream::pair().expect("a socket pair");
        let (reader, writer) = std::io::pipe().expect("a pipe");
        let header = Header::new(None, 3, None).to_line();
        let mut bytes = header.clone();
        bytes.extend_from_slice(b"abc");
        send_with_fds(&shim, &bytes, &[reader.as_raw_fd()]).expect("sent");
        drop(reader);
        let mut buf = vec![0; 4096];
        let (n, fds) = recv_with_fds(serve.as_raw_fd(), &mut buf).expect("received");
        assert_eq!(&buf[..n], &bytes[..]);
        assert_eq!(fds.len(), 1);
        let parsed: Header = serde_json::from_slice(&header).expect("a header");
        assert_eq!(parsed.switchboard, Tag::Handoff);
        assert_eq!(parsed.prefix, 3);

        let mut writer = writer;
        writer.write_all(b"through").expect("write");
        drop(writer);
        let mut passed = std::fs::File::from(fds.into_iter().next().expect("one fd"));
        let mut read = String::new();
        std::io::Read::read_to_string(&mut passed, &mut read).expect("read");
        assert_eq!(
            read, "through",
            "the passed descriptor is the pipe's read end"
        );
    }
}
