//! Wall-clock time as records, tokens and the wire write it: since the Unix epoch, 0 before it.

use std::time::SystemTime;

/// Milliseconds since the Unix epoch.
pub fn unix_millis(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as u64)
}

/// Seconds since the Unix epoch.
pub fn unix_seconds(time: SystemTime) -> u64 {
    unix_millis(time) / 1000
}
