//! The async runtimes, built to find the next event awake. Between a request and its answer (a
//! backend's reply, an editor's next call) the runtime has nothing to do, and its thread would
//! sleep in the kernel at once; waking it again costs an idle core tens of microseconds, as
//! much as the work of a whole call through Switchboard, and each call crosses `serve` twice.
//! So before a runtime's thread sleeps it stays awake for at most [`STAY_AWAKE`], asking the
//! kernel without blocking whether an event has arrived (docs/performance.md has the numbers).
//! An idle Switchboard spends this once per burst of work, never while nothing happens.
//!
//! Only on Linux, where the runtime's event queue is an epoll descriptor that can be polled
//! without taking its events. Elsewhere the runtimes sleep at once, as Tokio's do by default.

use std::time::Duration;

use tokio::runtime::{Builder, Runtime};

/// How long a runtime's thread stays awake for the next event before it sleeps: longer than an
/// editor takes to send its next call after an answer, or a quick backend to answer.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
const STAY_AWAKE: Duration = Duration::from_micros(60);

/// A runtime on the calling thread alone, as `serve` and the CLI run.
pub fn current_thread() -> Runtime {
    build(Builder::new_current_thread())
}

/// A runtime with a thread per core, as the desktop app runs.
pub fn multi_thread() -> Runtime {
    build(Builder::new_multi_thread())
}

#[cfg(target_os = "linux")]
fn build(mut builder: Builder) -> Runtime {
    use std::sync::{Arc, OnceLock};

    let queues = Arc::new(OnceLock::<Vec<i32>>::new());
    let before = linux::event_queues();
    let runtime = builder
        .enable_all()
        .on_thread_park({
            let queues = Arc::clone(&queues);
            move || linux::stay_awake(queues.get().map_or(&[], Vec::as_slice), STAY_AWAKE)
        })
        .build()
        .expect("the tokio runtime starts");
    // The epoll descriptors opened while the runtime was built: its event queue and the copies
    // of it its drivers keep. Should another thread have opened one meanwhile, watching it too
    // only ends some waits early.
    let created = linux::event_queues()
        .into_iter()
        .filter(|fd| !before.contains(fd))
        .collect();
    let _ = queues.set(created);
    runtime
}

#[cfg(not(target_os = "linux"))]
fn build(mut builder: Builder) -> Runtime {
    builder
        .enable_all()
        .build()
        .expect("the tokio runtime starts")
}

#[cfg(target_os = "linux")]
mod linux {
    use std::time::{Duration, Instant};

    /// The epoll descriptors this process has open.
    pub(super) fn event_queues() -> Vec<i32> {
        let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter(|entry| {
                std::fs::read_link(entry.path())
                    .is_ok_and(|target| target.as_os_str() == "anon_inode:[eventpoll]")
            })
            .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
            .collect()
    }

    /// The most descriptors [`stay_awake`] watches.
    const WATCHED: usize = 4;

    /// Returns as soon as one of `queues` (epoll descriptors) has an event, or after `limit`;
    /// at once without any. Polling an epoll descriptor says whether it has events without
    /// taking them, so the runtime finds them when it waits next, at once.
    pub(super) fn stay_awake(queues: &[i32], limit: Duration) {
        let mut polls = [libc::pollfd {
            fd: -1,
            events: libc::POLLIN,
            revents: 0,
        }; WATCHED];
        let count = queues.len().min(WATCHED);
        if count == 0 {
            return;
        }
        for (poll, &fd) in polls.iter_mut().zip(queues) {
            poll.fd = fd;
        }
        let start = Instant::now();
        while start.elapsed() < limit {
            // SAFETY: `count` valid `pollfd`s, no timeout: only asks whether any is ready.
            if unsafe { libc::poll(polls.as_mut_ptr(), count as libc::nfds_t, 0) } != 0 {
                return;
            }
            // Lets a process that is ready to run on this core (often the one that will answer)
            // have it meanwhile.
            std::thread::yield_now();
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::time::Duration;

    #[test]
    fn a_runtime_finds_its_own_event_queue_and_still_runs() {
        let before = super::linux::event_queues();
        let runtime = super::current_thread();
        let created: Vec<i32> = super::linux::event_queues()
            .into_iter()
            .filter(|fd| !before.contains(fd))
            .collect();
        assert!(!created.is_empty(), "the runtime's event queue is found");
        let answer = runtime.block_on(async {
            let (sender, receiver) = tokio::sync::oneshot::channel();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                sender.send(7)
            });
            receiver.await
        });
        assert_eq!(
            answer,
            Ok(7),
            "a wake-up from another thread reaches the runtime"
        );
    }

    /// An epoll descriptor watching an eventfd, and the eventfd.
    fn queue_with_one_source() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
        use std::os::fd::FromRawFd;
        // SAFETY: plain descriptor-creating calls; each result is checked before it is owned.
        unsafe {
            let queue = libc::epoll_create1(libc::EPOLL_CLOEXEC);
            let source = libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK);
            assert!(queue >= 0 && source >= 0, "epoll and eventfd");
            let mut event = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: 1,
            };
            assert_eq!(
                libc::epoll_ctl(queue, libc::EPOLL_CTL_ADD, source, &mut event),
                0
            );
            (
                std::os::fd::OwnedFd::from_raw_fd(queue),
                std::os::fd::OwnedFd::from_raw_fd(source),
            )
        }
    }

    #[test]
    fn staying_awake_ends_at_an_event_and_leaves_it_for_the_runtime() {
        use std::os::fd::AsRawFd;
        let (queue, source) = queue_with_one_source();
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live buffer to our own eventfd.
        assert_eq!(
            unsafe { libc::write(source.as_raw_fd(), one.as_ptr().cast(), 8) },
            8
        );
        // With an hour to stay awake, only the pending event lets this return.
        super::linux::stay_awake(&[queue.as_raw_fd()], Duration::from_secs(3600));
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 1];
        // SAFETY: room for one event in a live buffer; no timeout.
        let ready = unsafe { libc::epoll_wait(queue.as_raw_fd(), events.as_mut_ptr(), 1, 0) };
        assert_eq!(ready, 1, "the event is still there for the runtime to take");
    }
}
