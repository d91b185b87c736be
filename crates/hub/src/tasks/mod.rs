//! Tasks, in both eras: their ids as editors see them (`ids.rs`), the tasks Switchboard holds for
//! session-era servers that ask it to run their requests as tasks (`held.rs`), the bridge
//! between a session-era server's tasks and a 2026-07-28 editor's Tasks extension (`bridge.rs`),
//! and a 2026-07-28 server's task polled to its end for a session-era editor (`poll.rs`).

pub(super) mod bridge;
pub(super) mod held;
pub(super) mod ids;
pub(super) mod poll;
