//! Pipes wide enough for a large message. Linux gives a pipe 64 KiB, so a result of 1 MB
//! crosses one in sixteen turns, each waking the reader and then the writer again; a call
//! through Switchboard crosses two pipes where a direct one crosses one. Widened to 1 MiB (the
//! most an unprivileged process may ask, by default), such a message crosses each in one turn.
//! The kernel allocates a pipe's pages only as data is written, so a wide idle pipe costs
//! nothing. Elsewhere pipes are left as the system makes them.

/// What a pipe is widened to.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
const WIDTH: i32 = 1 << 20;

/// Widens the pipe a backend writes its messages into.
pub fn widen_output(stdout: &tokio::process::ChildStdout) {
    #[cfg(unix)]
    widen(std::os::fd::AsFd::as_fd(stdout));
    #[cfg(not(unix))]
    let _ = stdout;
}

/// Widens the pipe `fd` is an end of; anything else (a socket, a file) is left as it is, and so
/// is a pipe the system will not widen.
#[cfg(unix)]
pub fn widen(fd: std::os::fd::BorrowedFd<'_>) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: `fcntl` on a descriptor we hold, with an integer argument; it fails on
        // anything that is not a pipe, which is left as it is.
        let _ = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, WIDTH) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = fd;
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::os::fd::{AsFd, AsRawFd};

    #[test]
    fn a_pipe_is_widened_to_hold_a_large_message() {
        let (reader, _writer) = std::io::pipe().expect("a pipe");
        super::widen(reader.as_fd());
        // SAFETY: reads the pipe's size of a descriptor we hold.
        let size = unsafe { libc::fcntl(reader.as_raw_fd(), libc::F_GETPIPE_SZ) };
        assert_eq!(size, super::WIDTH, "the pipe holds 1 MiB");
    }
}
