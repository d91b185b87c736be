//! Background threads (the activity log's writer) ask the system to run them only after
//! everything else: nice 19 for the thread on Linux, the background QoS class on macOS, the
//! lowest thread priority on Windows. A refusal leaves the priority as it was: the work still
//! gets done, only sooner than it needs to.

/// Lowers the calling thread's priority to the least the system gives.
pub fn lower_this_thread() {
    if let Err(error) = lower() {
        tracing::debug!("could not lower a background thread's priority: {error}");
    }
}

#[cfg(target_os = "linux")]
fn lower() -> std::io::Result<()> {
    // SAFETY: `gettid` has no preconditions; `setpriority` on our own thread id changes only
    // this thread's nice value.
    let result = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19) };
    match result {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

#[cfg(target_os = "macos")]
fn lower() -> std::io::Result<()> {
    // SAFETY: changes only the calling thread's QoS class.
    let result =
        unsafe { libc::pthread_set_qos_class_self_np(libc::qos_class_t::QOS_CLASS_BACKGROUND, 0) };
    match result {
        0 => Ok(()),
        error => Err(std::io::Error::from_raw_os_error(error)),
    }
}

#[cfg(windows)]
fn lower() -> std::io::Result<()> {
    use windows_sys::Win32::System::Threading::{
        GetCurrentThread, SetThreadPriority, THREAD_PRIORITY_LOWEST,
    };
    // SAFETY: the pseudo-handle of the calling thread is always valid.
    match unsafe { SetThreadPriority(GetCurrentThread(), THREAD_PRIORITY_LOWEST) } {
        0 => Err(std::io::Error::last_os_error()),
        _ => Ok(()),
    }
}
