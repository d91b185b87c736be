//! Waiting for a condition that no channel announces: poll it with a short backoff, and on
//! timeout fail naming what was awaited and what was seen last.

use std::fmt::Debug;
use std::time::{Duration, Instant};

/// The pauses between polls: 5 ms, doubling up to 100 ms.
struct Backoff {
    pause: Duration,
}

impl Backoff {
    fn new() -> Backoff {
        Backoff {
            pause: Duration::from_millis(5),
        }
    }

    fn next(&mut self) -> Duration {
        let pause = self.pause;
        self.pause = (self.pause * 2).min(Duration::from_millis(100));
        pause
    }
}

fn timed_out(what: &str, limit: Duration, last: &dyn Debug) -> ! {
    panic!("{what}: not within {limit:?}; last seen: {last:#?}")
}

/// Polls `probe` until it returns `Ok`, and returns that value. `Err` carries what the probe saw
/// instead; after `limit` the test fails naming `what` and the last thing seen.
pub async fn eventually<T, E: Debug, F: Future<Output = Result<T, E>>>(
    what: &str,
    limit: Duration,
    probe: impl FnMut() -> F,
) -> T {
    poll(limit, probe)
        .await
        .unwrap_or_else(|last| timed_out(what, limit, &last))
}

/// Polls `probe` like [`eventually`], and returns its last `Err` after `limit` instead of failing:
/// for callers that report the failure themselves.
pub async fn poll<T, E, F: Future<Output = Result<T, E>>>(
    limit: Duration,
    mut probe: impl FnMut() -> F,
) -> Result<T, E> {
    let deadline = Instant::now() + limit;
    let mut backoff = Backoff::new();
    loop {
        match probe().await {
            Ok(value) => return Ok(value),
            Err(last) if Instant::now() >= deadline => return Err(last),
            Err(_) => tokio::time::sleep(backoff.next()).await,
        }
    }
}

/// [`eventually`] for code without a runtime: the thread sleeps between polls.
pub fn eventually_blocking<T, E: Debug>(
    what: &str,
    limit: Duration,
    probe: impl FnMut() -> Result<T, E>,
) -> T {
    poll_blocking(limit, probe).unwrap_or_else(|last| timed_out(what, limit, &last))
}

/// Polls `probe` like [`eventually_blocking`], and returns its last `Err` after `limit` instead
/// of failing: for cleanup, which must not panic.
pub fn poll_blocking<T, E>(
    limit: Duration,
    mut probe: impl FnMut() -> Result<T, E>,
) -> Result<T, E> {
    let deadline = Instant::now() + limit;
    let mut backoff = Backoff::new();
    loop {
        match probe() {
            Ok(value) => return Ok(value),
            Err(last) if Instant::now() >= deadline => return Err(last),
            Err(_) => std::thread::sleep(backoff.next()),
        }
    }
}
