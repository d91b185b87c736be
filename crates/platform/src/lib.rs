//! What differs between Linux, macOS and Windows, one module per concern, each with the same
//! interface on every system; and [`System`], for code that differs only in data (an editor's
//! paths), which takes the system as a value and is tested for all three anywhere.
//!
//! Floor 1 of the workspace (ARCHITECTURE.md). It imports no other crate of Switchboard, and it is
//! the only crate that names a target system in a `cfg`, but for the three files where
//! `transport` declares the Unix-only handoff of an editor's stdio (`HANDOFF_SEAMS` in
//! `tests/layout.rs`).

pub mod atomic;
pub mod clock;
pub mod command;
pub mod dirs;
pub mod files;
pub mod hex;
pub mod ipc;
pub(crate) mod keychain;
pub mod memory;
#[cfg(unix)]
pub mod passing;
pub mod pipes;
pub mod priority;
pub mod process;
pub mod runtime;
pub mod sandbox;
pub mod secrets;
pub mod shutdown;
mod system;
pub mod terminal;
#[cfg(windows)]
mod windows_registry;
#[cfg(windows)]
mod windows_security;

pub use system::{CURRENT, System};
