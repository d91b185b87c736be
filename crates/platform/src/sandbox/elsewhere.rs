//! macOS and Windows: no sandbox is built for them yet. What each offers is in docs/platforms.md
//! (sandbox-exec profiles on macOS, deprecated but working; AppContainer and Job Object limits on
//! Windows); until one is built, a server that requires its sandbox does not start, and one that
//! does not runs as if it had none.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

use super::{Assessment, Rules};

/// Nothing of `rules` can be enforced here.
pub fn assess(_rules: &Rules<'_>) -> Assessment {
    Assessment {
        landlock_abi: None,
        shortfalls: vec![format!(
            "Switchboard builds sandboxes on Linux only, not yet on {}",
            match crate::CURRENT {
                crate::System::Windows => "Windows",
                _ => "macOS",
            }
        )],
        applicable: false,
    }
}

/// No sandbox here grants anything.
pub fn system_grants() -> (Vec<PathBuf>, Vec<PathBuf>) {
    (Vec::new(), Vec::new())
}

/// No sandbox here grants anything.
pub fn program_roots(_program: &Path, _search_path: &OsStr) -> Vec<PathBuf> {
    Vec::new()
}

/// A sandbox ready to enter, which cannot be made here.
pub enum Confinement {}

impl Confinement {
    /// Always refused: see [`assess`].
    pub fn prepare(
        _rules: &Rules<'_>,
        _assessment: &Assessment,
        _program: &Path,
        _search_path: &OsStr,
        _own_runtime: &Path,
    ) -> io::Result<Confinement> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "no sandbox is built for this system",
        ))
    }

    pub fn install(self, _command: &mut tokio::process::Command) {
        match self {}
    }
}
