//! Which system this is, as a value: code that differs only in data (where an editor keeps its
//! config, what a path looks like) takes a [`System`] and is tested for all three anywhere.

/// An operating system Switchboard runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum System {
    Linux,
    #[serde(rename = "macos")]
    MacOs,
    Windows,
}

/// The system this build runs on.
#[cfg(target_os = "linux")]
pub const CURRENT: System = System::Linux;
#[cfg(target_os = "macos")]
pub const CURRENT: System = System::MacOs;
#[cfg(windows)]
pub const CURRENT: System = System::Windows;
