//! What Unix lets two processes share that Windows does not, for `switchboard connect`'s
//! handoff (`transport::handoff`): descriptors passed over a Unix socket (`SCM_RIGHTS`), and
//! memory both map.
//!
//! The shared memory is a memfd sealed against resizing on Linux, so the receiver can map it
//! without fear of a fault. macOS has no memfd: there it is a file created (exclusively, owner
//! only) in the private runtime directory and unlinked at once, so that only the descriptors
//! passed around reach it, and the receiver checks that it is an unlinked regular file of the
//! right size owned by its own user.

use std::io::{self, IoSlice, IoSliceMut, Write};
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::ptr::NonNull;

use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags};

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

/// One non-blocking `recvmsg` on a socket ready to read: the bytes read into `buf`, and the
/// descriptors that came with them (close-on-exec).
pub fn recv_with_fds(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut space = nix::cmsg_space!([RawFd; 4]);
    let mut iov = [IoSliceMut::new(buf)];
    let message = nix::sys::socket::recvmsg::<()>(
        fd,
        &mut iov,
        Some(&mut space),
        receive_flags() | MsgFlags::MSG_DONTWAIT,
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
    if !cfg!(target_os = "linux") {
        // No MSG_CMSG_CLOEXEC here: marked right after, before anything is spawned with them
        // (Switchboard spawns only from its own tasks, never between these two steps).
        for fd in &fds {
            nix::fcntl::fcntl(
                fd,
                nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
            )?;
        }
    }
    Ok((message.bytes, fds))
}

#[cfg(target_os = "linux")]
fn receive_flags() -> MsgFlags {
    MsgFlags::MSG_CMSG_CLOEXEC
}

#[cfg(not(target_os = "linux"))]
fn receive_flags() -> MsgFlags {
    MsgFlags::empty()
}

/// Puts a descriptor in or out of non-blocking mode.
pub fn set_nonblocking(fd: BorrowedFd<'_>, nonblocking: bool) -> io::Result<()> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL).map_err(io::Error::from)?);
    let flags = if nonblocking {
        flags | OFlag::O_NONBLOCK
    } else {
        flags - OFlag::O_NONBLOCK
    };
    fcntl(fd, FcntlArg::F_SETFL(flags)).map_err(io::Error::from)?;
    Ok(())
}

/// Whether another process can read or write `fd` itself once it is passed: a pipe or a socket
/// (a terminal or a file would be shared with whoever else has it open).
pub fn is_pipe_or_socket(fd: BorrowedFd<'_>) -> bool {
    use nix::sys::stat::SFlag;
    nix::sys::stat::fstat(fd).is_ok_and(|stat| {
        let kind = SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits());
        kind == SFlag::S_IFIFO || kind == SFlag::S_IFSOCK
    })
}

/// Memory mapped by two processes, zero-filled at creation, unmapped on drop.
pub struct SharedMemory {
    map: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is only handed out as a pointer; its users access it through atomics.
unsafe impl Send for SharedMemory {}
// SAFETY: as above.
unsafe impl Sync for SharedMemory {}

impl SharedMemory {
    /// New shared memory of `len` bytes, and the descriptor to pass to the other process.
    /// `private_dir` (owner only) is where macOS makes its file.
    pub fn create(len: usize, private_dir: &Path) -> io::Result<(SharedMemory, OwnedFd)> {
        let fd = new_memory(len, private_dir)?;
        let memory = SharedMemory::map(&fd, len)?;
        Ok((memory, fd))
    }

    /// Maps memory another process made with [`SharedMemory::create`], after checking it cannot
    /// shrink under us and is `len` bytes long.
    pub fn open(fd: &OwnedFd, len: usize) -> io::Result<SharedMemory> {
        check_received(fd, len)?;
        SharedMemory::map(fd, len)
    }

    fn map(fd: &impl AsFd, len: usize) -> io::Result<SharedMemory> {
        use nix::sys::mman::{MapFlags, ProtFlags, mmap};
        let size = NonZeroUsize::new(len)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty shared memory"))?;
        // SAFETY: a fresh shared mapping of a file of exactly this size that cannot shrink;
        // unmapped once, on drop.
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
        Ok(SharedMemory {
            map: map.cast(),
            len,
        })
    }

    /// The start of the mapping: page-aligned, `len` bytes, valid as long as `self` is.
    pub fn as_ptr(&self) -> NonNull<u8> {
        self.map
    }
}

impl Drop for SharedMemory {
    fn drop(&mut self) {
        // SAFETY: mapped in `map` with this length; no pointer into it outlives `self`.
        let _ = unsafe { nix::sys::mman::munmap(self.map.cast(), self.len) };
    }
}

/// A memfd of `len` bytes, sealed against resizing.
#[cfg(target_os = "linux")]
fn new_memory(len: usize, _private_dir: &Path) -> io::Result<OwnedFd> {
    use nix::fcntl::{FcntlArg, SealFlag, fcntl};
    use nix::sys::memfd::{MFdFlags, memfd_create};
    let fd = memfd_create(
        c"switchboard-ledger",
        MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING,
    )?;
    nix::unistd::ftruncate(&fd, len as i64)?;
    fcntl(
        &fd,
        FcntlArg::F_ADD_SEALS(
            SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW | SealFlag::F_SEAL_SEAL,
        ),
    )?;
    Ok(fd)
}

/// Memory from another process must be a memfd sealed at `len` bytes.
#[cfg(target_os = "linux")]
fn check_received(fd: &OwnedFd, len: usize) -> io::Result<()> {
    use nix::fcntl::{FcntlArg, SealFlag, fcntl};
    let seals = SealFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GET_SEALS)?);
    let size = nix::sys::stat::fstat(fd)?.st_size;
    if !seals.contains(SealFlag::F_SEAL_SHRINK) || size != len as i64 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the shared memory is not a sealed memfd of the right size",
        ));
    }
    Ok(())
}

/// A file of `len` bytes in `private_dir`, created exclusively and unlinked at once.
#[cfg(target_os = "macos")]
fn new_memory(len: usize, private_dir: &Path) -> io::Result<OwnedFd> {
    let name = format!(
        "ledger-{}-{:016x}",
        std::process::id(),
        rand::random::<u64>()
    );
    let path = private_dir.join(name);
    let file = crate::files::create_new_private_file(&path)?;
    let _ = std::fs::remove_file(&path);
    file.set_len(len as u64)?;
    let fd = OwnedFd::from(file);
    nix::fcntl::fcntl(
        &fd,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    )?;
    Ok(fd)
}

/// Memory from another process must be an unlinked regular file of `len` bytes of our own user,
/// so that no process but the two holding it can open it and shrink it.
#[cfg(target_os = "macos")]
fn check_received(fd: &OwnedFd, len: usize) -> io::Result<()> {
    use nix::sys::stat::SFlag;
    let stat = nix::sys::stat::fstat(fd)?;
    let kind = SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits());
    if kind != SFlag::S_IFREG
        || stat.st_nlink != 0
        || stat.st_uid != nix::unistd::getuid().as_raw()
        || stat.st_size != len as i64
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the shared memory is not an unlinked file of ours of the right size",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_memory_is_seen_by_both_mappings_and_checked_when_opened() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (mine, fd) = SharedMemory::create(4096, dir.path()).expect("created");
        let theirs = SharedMemory::open(&fd, 4096).expect("opened");
        // SAFETY: both pointers are valid for 4096 bytes; single-threaded test.
        unsafe {
            mine.as_ptr().as_ptr().add(100).write_volatile(42);
            assert_eq!(theirs.as_ptr().as_ptr().add(100).read_volatile(), 42);
        }
        let refused = SharedMemory::open(&fd, 8192).err().expect("the wrong size");
        assert_eq!(refused.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(
            std::fs::read_dir(dir.path()).expect("list").count(),
            0,
            "nothing is left in the folder"
        );
    }

    #[test]
    fn descriptors_travel_with_the_bytes() {
        let (one, other) = UnixStream::pair().expect("a socket pair");
        let (reader, writer) = std::io::pipe().expect("a pipe");
        send_with_fds(&one, b"header", &[reader.as_raw_fd()]).expect("sent");
        drop(reader);
        let mut buf = vec![0; 64];
        let (n, fds) = recv_with_fds(other.as_raw_fd(), &mut buf).expect("received");
        assert_eq!(&buf[..n], b"header");
        assert_eq!(fds.len(), 1);
        assert!(is_pipe_or_socket(fds[0].as_fd()));
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
