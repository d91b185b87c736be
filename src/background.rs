//! Background work: threads whose work can wait for the rest (the activity log's writer) ask
//! the OS to run them only after everything else. On Linux a thread's nice value is its own;
//! other systems keep the normal priority until their port gives them the same.

/// Lowers the calling thread's priority to the least the OS gives (Linux: nice 19). A refusal
/// leaves the priority as it was: the work still gets done, only sooner than it needs to.
#[cfg(target_os = "linux")]
pub fn lower_this_thread() {
    // SAFETY: `gettid` has no preconditions; `setpriority` on our own thread id changes only
    // this thread's nice value.
    let result = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19) };
    if result != 0 {
        tracing::debug!(
            "could not lower a background thread's priority: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(not(target_os = "linux"))]
pub fn lower_this_thread() {}
