//! Memory a Switchboard holds without need, given back.
//!
//! Large messages without page faults. glibc's allocator serves a block of 128 KiB or more as a
//! fresh mapping (later, as it adjusts, from the top of its heap, which it gives back as soon as
//! 128 KiB lie free there), so every large message (a result of 1 MB, a long tool list) is
//! written into pages the kernel must map and zero again: for results of 1 MB through `/mcp`,
//! a quarter of `serve`'s time went to page faults. [`keep_freed_memory`] has the heap serve
//! such blocks and keep up to [`KEPT`] of freed memory while messages pass; each place a large
//! message enters or leaves says so ([`passed`]), and a thread of its own gives what is free
//! back to the system once a second has passed without one. Only with glibc on Linux; elsewhere
//! both leave the system's allocator as it is.
//!
//! Code, once idle. Most of the memory an idle Switchboard holds is its own program: the pages
//! of code it ran to start, read the config and answer its last calls, which the kernel keeps
//! mapped (in blocks of 64 KiB around each page first used) until memory runs short. Once the
//! process has been idle for a while ([`trim_when_idle`]), it lets the system take them back:
//! on Linux its own code's pages are unmapped (they stay in the page cache, so the next call
//! maps them again without reading the disk), on Windows its working set is emptied, as
//! browsers do for a tab in the background. Not on macOS, which has no such call.

use std::time::Duration;

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

/// How often the idle watch looks at the process's CPU time.
const WINDOW: Duration = Duration::from_secs(5);

/// Less CPU than this in a [`WINDOW`] is idle (timers and keep-alives, no calls); as much since
/// the last trim has brought pages back worth trimming again.
const IDLE_CPU: Duration = Duration::from_millis(1);

/// Starts a thread that gives the process's code pages back to the system whenever it has been
/// idle for a [`WINDOW`] after being busy (see the module's documentation). Once per process;
/// later calls do nothing.
pub fn trim_when_idle() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        if os::cpu_time().is_none() {
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("memory-idle".to_owned())
            .spawn(|| {
                let mut watch = IdleWatch::default();
                let mut before = os::cpu_time().unwrap_or_default();
                loop {
                    std::thread::sleep(WINDOW);
                    let now = os::cpu_time().unwrap_or_default();
                    if watch.trim_after(now.saturating_sub(before)) {
                        os::trim_code();
                    }
                    before = os::cpu_time().unwrap_or(now);
                }
            });
        if let Err(error) = spawned {
            tracing::debug!(%error, "no thread to give idle memory back");
        }
    });
}

/// Whether a window of idleness follows work: the first idle window after work trims, the next
/// ones do not until there has been work again (nothing has come back since).
#[derive(Default)]
struct IdleWatch {
    /// CPU time used since the last trim.
    since_trim: Duration,
}

impl IdleWatch {
    /// Given the CPU time the last window used, whether to trim now.
    fn trim_after(&mut self, used: Duration) -> bool {
        self.since_trim += used;
        if used >= IDLE_CPU || self.since_trim < IDLE_CPU {
            return false;
        }
        self.since_trim = Duration::ZERO;
        true
    }
}

#[cfg(target_os = "linux")]
mod os {
    use std::time::Duration;

    pub(super) fn cpu_time() -> Option<Duration> {
        // SAFETY: `clock_gettime` writes into the struct it is given.
        let mut time: libc::timespec = unsafe { std::mem::zeroed() };
        let result = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut time) };
        (result == 0).then(|| {
            Duration::new(
                u64::try_from(time.tv_sec).unwrap_or_default(),
                u32::try_from(time.tv_nsec).unwrap_or_default(),
            )
        })
    }

    /// Unmaps the pages of this program's own code. Code is never written (the binary is
    /// position-independent, without text relocations), so each page is the file's as the page
    /// cache holds it, and the next use maps it again from there. Nothing else is touched: the
    /// program's data, the libraries' code and anything anonymous stay as they are.
    pub(super) fn trim_code() {
        let (Ok(exe), Ok(maps)) = (
            std::fs::read_link("/proc/self/exe"),
            std::fs::read_to_string("/proc/self/maps"),
        ) else {
            return;
        };
        for (start, end) in code_of(&maps, &exe.to_string_lossy()) {
            // SAFETY: [start, end) is a private, read-only, executable mapping of the program's
            // own file; dropping its pages only makes the next use read them from the file again.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
        }
    }

    /// The address ranges `/proc/self/maps` gives for the executable mappings of `exe`.
    pub(super) fn code_of(maps: &str, exe: &str) -> Vec<(usize, usize)> {
        maps.lines()
            .filter_map(|line| {
                let mut fields = line.splitn(6, ' ');
                let range = fields.next()?;
                let perms = fields.next()?;
                let path = fields.nth(3)?.trim_start();
                if perms != "r-xp" || path != exe {
                    return None;
                }
                let (start, end) = range.split_once('-')?;
                Some((
                    usize::from_str_radix(start, 16).ok()?,
                    usize::from_str_radix(end, 16).ok()?,
                ))
            })
            .collect()
    }
}

#[cfg(windows)]
mod os {
    use std::time::Duration;

    use windows_sys::Win32::Foundation::FILETIME;
    use windows_sys::Win32::System::Threading::{
        GetCurrentProcess, GetProcessTimes, SetProcessWorkingSetSize,
    };

    pub(super) fn cpu_time() -> Option<Duration> {
        let zero = FILETIME {
            dwLowDateTime: 0,
            dwHighDateTime: 0,
        };
        let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
        // SAFETY: the pseudo-handle of this process, and four FILETIMEs to write.
        let ok = unsafe {
            GetProcessTimes(
                GetCurrentProcess(),
                &mut created,
                &mut exited,
                &mut kernel,
                &mut user,
            )
        };
        let ticks =
            |time: FILETIME| u64::from(time.dwHighDateTime) << 32 | u64::from(time.dwLowDateTime);
        (ok != 0).then(|| Duration::from_nanos((ticks(kernel) + ticks(user)) * 100))
    }

    /// Empties the working set: pages leave it for the standby list, and come back on use
    /// without reading the disk.
    pub(super) fn trim_code() {
        // SAFETY: the pseudo-handle of this process; (-1, -1) asks to empty its working set.
        unsafe { SetProcessWorkingSetSize(GetCurrentProcess(), usize::MAX, usize::MAX) };
    }
}

#[cfg(not(any(target_os = "linux", windows)))]
mod os {
    use std::time::Duration;

    /// No trimming here, so no idle watch either.
    pub(super) fn cpu_time() -> Option<Duration> {
        None
    }

    pub(super) fn trim_code() {}
}

#[cfg(test)]
mod idle_tests {
    use super::{IDLE_CPU, IdleWatch};

    #[test]
    fn the_first_idle_window_after_work_trims_and_the_next_do_not() {
        let mut watch = IdleWatch::default();
        let busy = IDLE_CPU * 30;
        let quiet = IDLE_CPU / 10;
        assert!(!watch.trim_after(busy), "starting up is not idle");
        assert!(watch.trim_after(quiet), "idle after starting up");
        for _ in 0..5 {
            assert!(
                !watch.trim_after(quiet),
                "only timers ran: nothing came back to trim"
            );
        }
        assert!(!watch.trim_after(busy));
        assert!(!watch.trim_after(IDLE_CPU * 2), "a few calls");
        assert!(watch.trim_after(quiet), "idle again after calls");
        for _ in 0..20 {
            watch.trim_after(quiet);
        }
        assert!(
            !watch.trim_after(quiet),
            "timers alone trim at most every ten windows"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_program_s_code_leaves_memory_and_still_runs() {
        fn resident_file_kib() -> u64 {
            let status = std::fs::read_to_string("/proc/self/status").expect("status");
            status
                .lines()
                .find_map(|line| line.strip_prefix("RssFile:"))
                .and_then(|value| value.trim().trim_end_matches(" kB").parse().ok())
                .expect("RssFile")
        }
        let exe = std::fs::read_link("/proc/self/exe").expect("exe");
        let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
        let code = super::os::code_of(&maps, &exe.to_string_lossy());
        assert!(!code.is_empty(), "no code mapping of {exe:?} in\n{maps}");

        let before = resident_file_kib();
        super::os::trim_code();
        let after = resident_file_kib();
        assert!(
            after < before,
            "resident file pages {before} -> {after} KiB"
        );
        // What runs next is mapped again from the page cache, at the same places.
        let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
        assert_eq!(super::os::code_of(&maps, &exe.to_string_lossy()), code);
    }
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
