//! Sandboxes for backends: what a server may read, write and connect to, enforced by the system
//! rather than asked of the server.
//!
//! On Linux (`linux.rs`) a sandboxed server runs under a Landlock ruleset (the files it may read
//! and write, the TCP ports it may connect to, and no signals or abstract Unix sockets beyond its
//! own processes) and in a mount namespace of its own where Switchboard's runtime directory (its
//! socket) and, unless it may reach the session bus, the user's runtime directory are empty,
//! read-only folders; without a network, in a network namespace of its own too. Elsewhere no sandbox
//! is built yet (`elsewhere.rs`): the assessment says so, and a server that requires its sandbox
//! does not start.

use std::ffi::OsStr;
use std::path::PathBuf;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::{Confinement, assess, program_roots, system_grants};

#[cfg(not(target_os = "linux"))]
mod elsewhere;
#[cfg(not(target_os = "linux"))]
pub use elsewhere::{Confinement, assess, program_roots, system_grants};

/// What one sandboxed server may reach, beyond what it needs to run at all.
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    /// Files and folders it may read, and run programs from.
    pub read: &'a [PathBuf],
    /// Files and folders it may read and change.
    pub write: &'a [PathBuf],
    /// TCP ports it may connect to, on any host.
    pub connect: &'a [u16],
    /// Whether it has a network at all.
    pub network: bool,
    /// Whether it may reach the desktop session's bus and the rest of the user's runtime
    /// directory (`$XDG_RUNTIME_DIR`). Switchboard's own runtime directory, where its socket is,
    /// it never reaches.
    pub bus: bool,
}

/// How much of a sandbox this system can enforce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assessment {
    /// The Landlock ABI the kernel offers, on Linux with Landlock.
    pub landlock_abi: Option<u32>,
    /// What cannot be enforced here, each with why; empty when all of it is.
    pub shortfalls: Vec<String>,
    /// Whether any of it can be applied on this system (not where no sandbox is built).
    pub applicable: bool,
}

/// What becomes of a server whose sandbox was assessed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enforcement {
    /// It runs with every rule enforced.
    Full,
    /// It runs with the rules this system can enforce; its config allows that.
    Partial,
    /// It runs with no sandbox at all (none is built for this system); its config allows that.
    Unenforced,
    /// It does not start: its config requires what this system cannot enforce.
    Refused,
}

impl Assessment {
    /// What becomes of a server with this sandbox, `required` in full or not.
    pub fn enforcement(&self, required: bool) -> Enforcement {
        match (self.shortfalls.is_empty(), required, self.applicable) {
            (true, _, _) => Enforcement::Full,
            (false, true, _) => Enforcement::Refused,
            (false, false, true) => Enforcement::Partial,
            (false, false, false) => Enforcement::Unenforced,
        }
    }
}

impl Enforcement {
    /// How the API and the dashboard name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Enforcement::Full => "enforced",
            Enforcement::Partial => "partial",
            Enforcement::Unenforced => "unenforced",
            Enforcement::Refused => "refused",
        }
    }
}

/// Whether a sandboxed server keeps this variable of Switchboard's environment: only `PATH`,
/// `HOME` and the locale (`LANG`, `LC_*`), and the session bus's address where its sandbox
/// lets it reach the bus (`bus`). Tokens and sockets that Switchboard's own environment carries
/// (an agent's, a desktop session's) stay out; the server's `env` adds what it needs.
pub fn kept_variable(name: &OsStr, bus: bool) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    matches!(name, "PATH" | "HOME" | "LANG")
        || name.starts_with("LC_")
        || (bus && name == "DBUS_SESSION_BUS_ADDRESS")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_path_the_home_and_the_locale_are_kept() {
        for kept in ["PATH", "HOME", "LANG", "LC_ALL", "LC_TIME"] {
            assert!(kept_variable(OsStr::new(kept), false), "{kept}");
        }
        let bus = OsStr::new("DBUS_SESSION_BUS_ADDRESS");
        assert!(
            kept_variable(bus, true),
            "kept where the bus may be reached"
        );
        for dropped in [
            "SSH_AUTH_SOCK",
            "DBUS_SESSION_BUS_ADDRESS",
            "GITHUB_TOKEN",
            "SWITCHBOARD_TOKEN",
            "LANGUAGE_MODEL_KEY",
            "path",
        ] {
            assert!(!kept_variable(OsStr::new(dropped), false), "{dropped}");
        }
    }

    #[test]
    fn a_shortfall_refuses_a_required_sandbox_and_not_another() {
        let shortfall = Assessment {
            landlock_abi: Some(3),
            shortfalls: vec!["ports need ABI 4".to_owned()],
            applicable: true,
        };
        assert_eq!(shortfall.enforcement(true), Enforcement::Refused);
        assert_eq!(shortfall.enforcement(false), Enforcement::Partial);
        let none_built = Assessment {
            applicable: false,
            ..shortfall
        };
        assert_eq!(none_built.enforcement(false), Enforcement::Unenforced);
        let full = Assessment {
            landlock_abi: Some(7),
            shortfalls: Vec::new(),
            applicable: true,
        };
        assert_eq!(full.enforcement(true), Enforcement::Full);
    }
}
