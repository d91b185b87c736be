//! What differs between Linux, macOS and Windows, one module per concern, each with the same
//! interface on every system. Outside this folder, `cfg` on the target system appears only
//! where `transport/` chooses the Unix-only handoff of an editor's stdio (see ARCHITECTURE.md).

pub mod command;
pub mod files;
pub mod ipc;
pub mod keychain;
#[cfg(unix)]
pub mod passing;
pub mod priority;
pub mod process;
pub mod shutdown;
mod system;
pub mod terminal;
#[cfg(windows)]
mod windows_registry;
#[cfg(windows)]
mod windows_security;

pub use system::{CURRENT, System};
