//! What differs between Linux, macOS and Windows, one module per concern, each with the same
//! interface on every system. Outside this folder, `cfg` on the target system appears only
//! where `transport/` chooses the Unix-only handoff of an editor's stdio (see ARCHITECTURE.md).

pub mod command;
pub mod files;
pub mod ipc;
pub mod keychain;
pub mod memory;
#[cfg(unix)]
pub mod passing;
pub mod pipes;
pub mod priority;
pub mod process;
pub mod runtime;
pub mod sandbox;
pub mod shutdown;
mod system;
pub mod terminal;
#[cfg(windows)]
mod windows_registry;
#[cfg(windows)]
mod windows_security;

pub use system::{CURRENT, System};

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// The files outside `src/platform/` that may name a target system in a `cfg`: where
    /// `transport/` declares the Unix-only handoff of an editor's stdio.
    const HANDOFF_SEAMS: &[&str] = &[
        "src/transport/connect/mod.rs",
        "src/transport/handoff/mod.rs",
        "src/transport/socket/mod.rs",
    ];

    fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("a source folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                rust_files(&path, found);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                found.push(path);
            }
        }
    }

    #[test]
    fn only_the_platform_folder_names_a_target_system() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        rust_files(&root.join("src"), &mut files);
        let mut found = Vec::new();
        for file in files {
            let relative = file.strip_prefix(root).expect("under the crate");
            let name = relative.to_string_lossy().replace('\\', "/");
            if name.starts_with("src/platform/") || HANDOFF_SEAMS.contains(&name.as_str()) {
                continue;
            }
            let text = std::fs::read_to_string(&file).expect("a source file");
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                let names_one = ["windows", "unix", "target_os", "target_family"]
                    .iter()
                    .any(|system| code.contains("cfg") && code.contains(system));
                if names_one {
                    found.push(format!("{name}:{}: {}", number + 1, line.trim()));
                }
            }
        }
        assert!(
            found.is_empty(),
            "cfg on a target system outside src/platform/: {found:#?}"
        );
    }
}
