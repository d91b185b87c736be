//! The system's requests that a running Switchboard stop: SIGTERM, SIGINT and SIGHUP on Unix
//! (`kill`, Ctrl-C, a closed terminal, a logout); Ctrl-C, Ctrl-Break, a closed console, a logoff
//! and a shutdown on Windows. Whatever the request, every backend is stopped before exit; on
//! Windows, should the system end the process before that is done (it allows a few seconds
//! after a close, logoff or shutdown), the backends' Job Objects end them with it.

use std::io;

/// Waits for the first request to stop and says which it was.
pub async fn requested() -> io::Result<&'static str> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut hangup = signal(SignalKind::hangup())?;
        Ok(tokio::select! {
            _ = terminate.recv() => "SIGTERM",
            _ = interrupt.recv() => "SIGINT",
            _ = hangup.recv() => "SIGHUP",
        })
    }
    #[cfg(windows)]
    {
        use tokio::signal::windows;
        let mut interrupt = windows::ctrl_c()?;
        let mut brk = windows::ctrl_break()?;
        let mut close = windows::ctrl_close()?;
        let mut logoff = windows::ctrl_logoff()?;
        let mut shutdown = windows::ctrl_shutdown()?;
        Ok(tokio::select! {
            _ = interrupt.recv() => "Ctrl-C",
            _ = brk.recv() => "Ctrl-Break",
            _ = close.recv() => "console closed",
            _ = logoff.recv() => "logoff",
            _ = shutdown.recv() => "shutdown",
        })
    }
}
