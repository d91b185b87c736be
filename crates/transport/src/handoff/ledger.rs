//! The ledger's memory: a table both the shim and Switchboard map (`platform::passing`), written
//! by Switchboard with plain atomic stores, read by the shim once Switchboard is gone.

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering, fence};

use super::VERSION;
use platform::passing::SharedMemory;

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

/// The size of a ledger's memory.
pub const LEDGER_SIZE: usize = std::mem::size_of::<Layout>();

/// A table in memory shared by the shim and Switchboard: the requests in flight and whether a
/// line is half-read or half-written. Switchboard writes it; the shim reads it once Switchboard
/// is gone.
pub struct Ledger {
    memory: SharedMemory,
}

impl Ledger {
    /// A new, empty ledger, and the descriptor to hand over; `private_dir` is where a system
    /// without memfds keeps its (unlinked) file.
    pub fn create(private_dir: &Path) -> io::Result<(Ledger, OwnedFd)> {
        let (memory, fd) = SharedMemory::create(LEDGER_SIZE, private_dir)?;
        let ledger = Ledger { memory };
        ledger.layout().version.store(VERSION, Ordering::Relaxed);
        ledger.layout().magic.store(MAGIC, Ordering::Release);
        Ok((ledger, fd))
    }

    /// Maps a ledger a shim handed over, after checking that it cannot shrink under us and is
    /// one of ours.
    pub(crate) fn open(fd: &OwnedFd) -> io::Result<Ledger> {
        let ledger = Ledger {
            memory: SharedMemory::open(fd, LEDGER_SIZE)?,
        };
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

    fn layout(&self) -> &Layout {
        // SAFETY: the mapping is page-aligned, LEDGER_SIZE long, zero-filled at creation, and
        // lives as long as `self`; every field is an atomic valid for any bit pattern.
        unsafe { self.memory.as_ptr().cast::<Layout>().as_ref() }
    }

    /// Records the request with `id` (JSON text) as unanswered in `slot`. `false` when the id is
    /// too long for a slot.
    pub(crate) fn claim(&self, slot: usize, id: &str) -> bool {
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
    pub(crate) fn release(&self, slot: usize) {
        if let Some(slot) = self.layout().slots.get(slot) {
            slot.used.store(0, Ordering::Release);
        }
    }

    /// The ids (JSON text) of the requests recorded as unanswered.
    pub(crate) fn in_flight(&self) -> Vec<Box<str>> {
        self.layout()
            .slots
            .iter()
            .filter(|slot| slot.used.load(Ordering::Acquire) == 1)
            .filter_map(|slot| slot.id.load())
            .collect()
    }

    pub(crate) fn set_partial_output(&self, partial: bool) {
        self.layout()
            .partial_output
            .store(u32::from(partial), Ordering::Release);
    }

    pub(crate) fn partial_output(&self) -> bool {
        self.layout().partial_output.load(Ordering::Acquire) == 1
    }

    /// `None`: the input read so far ends with a whole line; `Some(id)`: part of a line was
    /// read, with the id (JSON text) its first bytes showed.
    pub(crate) fn set_partial_input(&self, partial: Option<Option<&[u8]>>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ledger_is_shared_through_its_memfd_and_checked_when_opened() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (shim, fd) = Ledger::create(dir.path()).expect("a ledger");
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

        let (_, other) = SharedMemory::create(LEDGER_SIZE, dir.path()).expect("memory");
        let refused = Ledger::open(&other)
            .err()
            .expect("memory that is not a ledger is refused");
        assert_eq!(refused.kind(), io::ErrorKind::InvalidInput);
    }
}
