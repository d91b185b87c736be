//! Tasks, in both eras: their ids as editors see them (`ids.rs`), the tasks Switchboard holds for
//! session-era servers that ask it to run their requests as tasks (`held.rs`), and the bridge
//! between a session-era server's tasks and a 2026-07-28 editor's Tasks extension (`bridge.rs`).

pub(super) mod bridge;
pub(super) mod held;
pub(super) mod ids;
