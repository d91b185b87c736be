//! Where Switchboard keeps its files: config, data and runtime directories.

use std::fs::File;
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use directories::ProjectDirs;

/// Environment variable that overrides the config file location.
pub const CONFIG_ENV: &str = "SWITCHBOARD_CONFIG";

/// Environment variable that overrides the runtime directory (process-group records, sockets).
pub const RUNTIME_DIR_ENV: &str = "SWITCHBOARD_RUNTIME_DIR";

fn project_dirs() -> Option<ProjectDirs> {
    ProjectDirs::from("", "", "switchboard")
}

/// The default config file: `~/.config/switchboard/config.toml` on Linux.
pub fn default_config_path() -> PathBuf {
    if let Some(path) = std::env::var_os(CONFIG_ENV) {
        return PathBuf::from(path);
    }
    match project_dirs() {
        Some(dirs) => dirs.config_dir().join("config.toml"),
        None => PathBuf::from("switchboard.toml"),
    }
}

/// The runtime directory: `$XDG_RUNTIME_DIR/switchboard`, else a per-user folder in the data dir.
pub fn runtime_dir() -> PathBuf {
    if let Some(path) = std::env::var_os(RUNTIME_DIR_ENV) {
        return PathBuf::from(path);
    }
    match project_dirs() {
        Some(dirs) => match dirs.runtime_dir() {
            Some(runtime) => runtime.to_path_buf(),
            None => dirs.data_local_dir().join("run"),
        },
        None => std::env::temp_dir().join(format!("switchboard-{}", nix::unistd::getuid())),
    }
}

/// Environment variable that overrides the data directory (token, cached catalogs).
pub const DATA_DIR_ENV: &str = "SWITCHBOARD_DATA_DIR";

/// The data directory: `~/.local/share/switchboard` on Linux.
pub fn data_dir() -> PathBuf {
    if let Some(path) = std::env::var_os(DATA_DIR_ENV) {
        return PathBuf::from(path);
    }
    match project_dirs() {
        Some(dirs) => dirs.data_local_dir().to_path_buf(),
        None => std::env::temp_dir().join(format!("switchboard-data-{}", nix::unistd::getuid())),
    }
}

/// Makes `dir` and its missing parents, each for its owner only (0700); one that exists is left
/// as it is.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Opens `path` for writing from its start, created for its owner only (0600) if it is new.
pub fn create_private_file(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

/// Writes a file readable by its owner only, atomically; missing directories are made for the
/// owner only too.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    if let Some(parent) = path.parent() {
        create_private_dir(parent)?;
    }
    let temporary = path.with_extension("tmp");
    let mut file = create_private_file(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temporary, path)
}
