//! Large messages without page faults. glibc's allocator serves a block of 128 KiB or more as a
//! fresh mapping (later, as it adjusts, from the top of its heap, which it gives back as soon as
//! 128 KiB lie free there), so every large message (a result of 1 MB, a long tool list) is
//! written into pages the kernel must map and zero again: for results of 1 MB through `/mcp`,
//! a quarter of `serve`'s time went to page faults. [`keep_freed_memory`] has the heap serve
//! such blocks and keep up to [`KEPT`] of freed memory while messages pass; each place a large
//! message enters or leaves says so ([`passed`]), and a thread of its own gives what is free
//! back to the system once a second has passed without one.
//!
//! Only with glibc on Linux; elsewhere both leave the system's allocator as it is.

/// A message at least this large wakes the trimming thread.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
const LARGE: usize = 128 * 1024;

/// The most freed memory the heap keeps at its top before it gives any back by itself.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
const KEPT: usize = 16 << 20;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod glibc {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::thread::Thread;
    use std::time::Duration;

    use super::{KEPT, LARGE};

    /// How long without a large message before what is free is given back.
    const QUIET: Duration = Duration::from_secs(1);

    /// The trimming thread, once started (`None` if it could not be).
    static TRIMMER: OnceLock<Option<Thread>> = OnceLock::new();
    /// Set while the trimming thread waits for a large message.
    static ARMED: AtomicBool = AtomicBool::new(false);
    /// Large messages so far.
    static LARGE_PASSED: AtomicU64 = AtomicU64::new(0);

    pub(super) fn keep_freed_memory() {
        let mut started = false;
        let trimmer = TRIMMER.get_or_init(|| {
            started = true;
            // SAFETY: `mallopt` only sets the allocator's parameters; both values are in range.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
                libc::mallopt(libc::M_TRIM_THRESHOLD, KEPT as libc::c_int);
            }
            let spawned = std::thread::Builder::new()
                .name("memory-trim".to_owned())
                .spawn(trim_when_quiet);
            match spawned {
                Ok(handle) => Some(handle.thread().clone()),
                Err(error) => {
                    tracing::debug!(%error, "no thread to give freed memory back");
                    None
                }
            }
        });
        if let (true, Some(trimmer)) = (started, trimmer) {
            // It waits for this: only now can a large message reach it.
            trimmer.unpark();
        }
    }

    fn trim_when_quiet() {
        while TRIMMER.get().is_none() {
            std::thread::park();
        }
        loop {
            ARMED.store(true, Ordering::Release);
            std::thread::park();
            if ARMED.load(Ordering::Acquire) {
                continue; // woken for nothing
            }
            loop {
                let seen = LARGE_PASSED.load(Ordering::Relaxed);
                std::thread::sleep(QUIET);
                if LARGE_PASSED.load(Ordering::Relaxed) == seen {
                    break;
                }
            }
            // SAFETY: gives free memory back to the system; takes the allocator's own locks.
            unsafe { libc::malloc_trim(0) };
        }
    }

    pub(super) fn passed(size: usize) {
        if size < LARGE {
            return;
        }
        LARGE_PASSED.fetch_add(1, Ordering::Relaxed);
        if ARMED.swap(false, Ordering::AcqRel)
            && let Some(Some(trimmer)) = TRIMMER.get()
        {
            trimmer.unpark();
        }
    }
}

/// Has the heap keep freed memory while large messages pass, and give it back a second after
/// the last (see the module's documentation). Once per process; later calls do nothing.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    glibc::keep_freed_memory();
}

/// Says that a message of `size` bytes entered or is leaving: a large one keeps the freed memory
/// kept until a second after it.
pub fn passed(size: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    glibc::passed(size);
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = size;
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    /// Minor page faults of the calling thread so far.
    fn faults_of_this_thread() -> i64 {
        // SAFETY: `getrusage` writes into the struct it is given.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let result = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
        assert_eq!(result, 0, "getrusage");
        usage.ru_minflt
    }

    /// Allocates `size` bytes, writes every page, and frees them.
    fn pass_a_message(size: usize) {
        let mut message = Vec::<u8>::with_capacity(size);
        message.resize(size, b'x');
        std::hint::black_box(&message);
    }

    #[test]
    fn large_messages_after_the_first_take_no_page_faults() {
        super::keep_freed_memory();
        pass_a_message(1 << 20);
        let before = faults_of_this_thread();
        for _ in 0..20 {
            pass_a_message(1 << 20);
        }
        let faults = faults_of_this_thread() - before;
        // Fresh pages each time would be 256 faults per message.
        assert!(
            faults < 100,
            "{faults} page faults for 20 messages of 1 MiB"
        );
    }
}
