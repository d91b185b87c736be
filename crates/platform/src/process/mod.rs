//! Process trees and other processes.
//!
//! A backend and everything it starts form one [`Tree`], stopped and killed as one: a process
//! group on Linux and macOS, a Job Object that kills on close on Windows. What a run leaves
//! behind if it dies is covered too: on Unix by a [`Guardian`] process and the records
//! [`reap_stale`] reads at the next start; on Windows by the job itself, which the system closes
//! (killing every process in it) when the process holding it ends however it ends.
//!
//! [`inspect`] reads other processes (group, start time, children, command line, environment)
//! from `/proc` on Linux, `libproc` on macOS and the Tool Help snapshot on Windows.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::{
    Guardian, Tree, app_package, exists, exit_of, prepare, reap_stale, run_guardian, signal_name,
    start_detached,
};

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::{
    Guardian, Tree, app_package, exists, exit_of, prepare, reap_stale, run_guardian, signal_name,
    start_detached,
};

#[cfg(target_os = "linux")]
#[path = "linux.rs"]
pub mod inspect;
#[cfg(target_os = "macos")]
#[path = "macos.rs"]
pub mod inspect;
#[cfg(windows)]
#[path = "windows_inspect.rs"]
pub mod inspect;
