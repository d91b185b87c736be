//! Where Switchboard keeps its files: config, data and runtime directories.

use std::path::PathBuf;

use directories::ProjectDirs;

pub use crate::files::create_private_dir;

/// Environment variable that overrides the config file location.
pub const CONFIG_ENV: &str = "SWITCHBOARD_CONFIG";

/// Environment variable that overrides the runtime directory (process-group records, sockets).
pub const RUNTIME_DIR_ENV: &str = "SWITCHBOARD_RUNTIME_DIR";

fn project_dirs() -> Option<ProjectDirs> {
    ProjectDirs::from("", "", "switchboard")
}

/// The default config file: `~/.config/switchboard/config.toml` on Linux,
/// `~/Library/Application Support/switchboard/config.toml` on macOS,
/// `%APPDATA%\switchboard\config\config.toml` on Windows.
pub fn default_config_path() -> PathBuf {
    if let Some(path) = std::env::var_os(CONFIG_ENV) {
        return PathBuf::from(path);
    }
    match project_dirs() {
        Some(dirs) => dirs.config_dir().join("config.toml"),
        None => PathBuf::from("switchboard.toml"),
    }
}

/// The runtime directory: `$XDG_RUNTIME_DIR/switchboard` on Linux, else (and on macOS and
/// Windows) `run` in the data directory.
pub fn runtime_dir() -> PathBuf {
    if let Some(path) = std::env::var_os(RUNTIME_DIR_ENV) {
        return PathBuf::from(path);
    }
    match project_dirs() {
        Some(dirs) => match dirs.runtime_dir() {
            Some(runtime) => runtime.to_path_buf(),
            None => dirs.data_local_dir().join("run"),
        },
        None => std::env::temp_dir().join(format!("switchboard-{}", user_name())),
    }
}

/// Environment variable that overrides the data directory (token, cached catalogs).
pub const DATA_DIR_ENV: &str = "SWITCHBOARD_DATA_DIR";

/// The data directory: `~/.local/share/switchboard` on Linux,
/// `~/Library/Application Support/switchboard` on macOS, `%LOCALAPPDATA%\switchboard\data` on
/// Windows.
pub fn data_dir() -> PathBuf {
    if let Some(path) = std::env::var_os(DATA_DIR_ENV) {
        return PathBuf::from(path);
    }
    match project_dirs() {
        Some(dirs) => dirs.data_local_dir().to_path_buf(),
        None => std::env::temp_dir().join(format!("switchboard-data-{}", user_name())),
    }
}

/// The user's name, for the folders of a user without a home directory.
fn user_name() -> String {
    ["USER", "USERNAME"]
        .into_iter()
        .find_map(|name| std::env::var(name).ok().filter(|value| !value.is_empty()))
        .unwrap_or_else(|| "user".to_owned())
}
