//! Where each editor keeps its MCP config, on each system: a pure function of the [`Places`] a
//! machine has (its system, home and per-user folders, and the variables editors honour), so
//! that every system's answers are tested on any of them.
//!
//! Two things need more than a path:
//! - **Claude Desktop on Windows** installs as an MSIX package by default (since early 2026),
//!   whose files live under `%LOCALAPPDATA%\Packages\Claude_*\LocalCache\Roaming\Claude\`; the
//!   classic installer's app reads `%APPDATA%\Claude\`. Which one the installed app reads is told
//!   by which app is installed: the package's folder, or the classic install's
//!   (`%LOCALAPPDATA%\AnthropicClaude`). With both, it is ambiguous, and said so.
//! - **macOS** asks the person ("would like to access data from other apps") the first time an
//!   app reads another app's files under `~/Library`: such a file is [`Location::guarded`], and is
//!   read only when the person asks for it (import, move, a click), never to fill a page.

use std::path::{Path, PathBuf};

use platform::System;

use super::Editor;

/// The folders and settings an editor's config path is made from.
#[derive(Debug, Clone)]
pub struct Places {
    pub(crate) system: System,
    pub(crate) home: PathBuf,
    /// `$XDG_CONFIG_HOME` or `~/.config` on Linux, `~/Library/Application Support` on macOS,
    /// `%APPDATA%` on Windows.
    pub(crate) config_dir: PathBuf,
    /// `%LOCALAPPDATA%` on Windows; unused elsewhere.
    pub local_data_dir: PathBuf,
    /// `CLAUDE_CONFIG_DIR`: Claude Code's folder, where it keeps `.claude.json` instead of home.
    pub(crate) claude_config_dir: Option<PathBuf>,
    /// `CODEX_HOME`: Codex CLI's folder instead of `~/.codex`.
    pub(crate) codex_home: Option<PathBuf>,
    /// Windows: the folders of Claude Desktop's MSIX packages (`Packages\Claude_*`).
    pub(crate) claude_packages: Vec<PathBuf>,
    /// Windows: whether the classic installer's Claude Desktop is installed.
    pub(crate) claude_classic_installed: bool,
}

/// Where an editor's config is, and what a person should know about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub path: PathBuf,
    /// Which of two places the editor reads, when there are two.
    pub note: Option<String>,
    /// Reading it makes macOS ask the person first: only read it when they asked.
    pub guarded: bool,
}

impl Places {
    /// This machine's; `None` without a home directory.
    pub(crate) fn of_this_machine() -> Option<Places> {
        let dirs = directories::BaseDirs::new()?;
        let local_data_dir = dirs.data_local_dir().to_path_buf();
        let system = platform::CURRENT;
        let (claude_packages, claude_classic_installed) = match system {
            System::Windows => (
                claude_packages(&local_data_dir),
                local_data_dir.join("AnthropicClaude").is_dir(),
            ),
            _ => (Vec::new(), false),
        };
        let variable = |name| {
            std::env::var_os(name)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        };
        Some(Places {
            system,
            home: dirs.home_dir().to_path_buf(),
            config_dir: dirs.config_dir().to_path_buf(),
            local_data_dir,
            claude_config_dir: variable("CLAUDE_CONFIG_DIR"),
            codex_home: variable("CODEX_HOME"),
            claude_packages,
            claude_classic_installed,
        })
    }

    /// Where `editor` keeps its config here.
    pub(crate) fn locate(&self, editor: Editor) -> Location {
        let plain = |path: PathBuf| Location {
            guarded: self.guards(&path),
            path,
            note: None,
        };
        match editor {
            Editor::Claude if self.system == System::Windows => self.claude_on_windows(),
            Editor::Claude => plain(
                self.config_dir
                    .join("Claude")
                    .join("claude_desktop_config.json"),
            ),
            Editor::Cursor => plain(self.home.join(".cursor").join("mcp.json")),
            Editor::VsCode => plain(self.config_dir.join("Code").join("User").join("mcp.json")),
            Editor::ClaudeCode => plain(match &self.claude_config_dir {
                Some(dir) => dir.join(".claude.json"),
                None => self.home.join(".claude.json"),
            }),
            // Zed keeps its settings under ~/.config on macOS too, and in %APPDATA%\Zed on
            // Windows.
            Editor::Zed if self.system == System::Windows => {
                plain(self.config_dir.join("Zed").join("settings.json"))
            }
            Editor::Zed => plain(self.home.join(".config").join("zed").join("settings.json")),
            // Windsurf kept its file where it was when it became Devin Desktop.
            Editor::Windsurf => plain(
                self.home
                    .join(".codeium")
                    .join("windsurf")
                    .join("mcp_config.json"),
            ),
            Editor::Gemini => plain(self.home.join(".gemini").join("settings.json")),
            Editor::Codex => plain(match &self.codex_home {
                Some(dir) => dir.join("config.toml"),
                None => self.home.join(".codex").join("config.toml"),
            }),
        }
    }

    /// Whether macOS asks before an app reads `path`: another app's files under `~/Library`.
    pub(crate) fn guards(&self, path: &Path) -> bool {
        self.system == System::MacOs && path.starts_with(self.home.join("Library"))
    }

    fn claude_on_windows(&self) -> Location {
        let classic = self
            .config_dir
            .join("Claude")
            .join("claude_desktop_config.json");
        let Some(package) = self.claude_packages.first() else {
            return Location {
                path: classic,
                note: None,
                guarded: false,
            };
        };
        let packaged = package
            .join("LocalCache")
            .join("Roaming")
            .join("Claude")
            .join("claude_desktop_config.json");
        let note = match self.claude_classic_installed {
            true => format!(
                "Claude Desktop is installed twice, from the Microsoft package and with the \
                 classic installer: it is not certain which one you run. The package's app reads \
                 {}, the classic one {}",
                packaged.display(),
                classic.display()
            ),
            false if classic.exists() => format!(
                "the installed Claude Desktop (its Microsoft package) reads {}; {} is left from \
                 a classic install and is not read",
                packaged.display(),
                classic.display()
            ),
            false => format!(
                "the installed Claude Desktop (its Microsoft package) reads {}",
                packaged.display()
            ),
        };
        Location {
            path: packaged,
            note: Some(note),
            guarded: false,
        }
    }
}

/// The folders of Claude Desktop's MSIX packages in `%LOCALAPPDATA%\Packages`, by name.
fn claude_packages(local_data_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(local_data_dir.join("Packages")) else {
        return Vec::new();
    };
    let mut packages: Vec<PathBuf> = entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("Claude_"))
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    packages.sort();
    packages
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linux() -> Places {
        Places {
            system: System::Linux,
            home: PathBuf::from("/home/ada"),
            config_dir: PathBuf::from("/home/ada/.config"),
            local_data_dir: PathBuf::from("/home/ada/.local/share"),
            claude_config_dir: None,
            codex_home: None,
            claude_packages: Vec::new(),
            claude_classic_installed: false,
        }
    }

    fn paths(places: &Places) -> Vec<PathBuf> {
        Editor::ALL
            .into_iter()
            .map(|editor| places.locate(editor).path)
            .collect()
    }

    #[test]
    fn each_editor_keeps_its_config_in_its_own_place_on_linux() {
        assert_eq!(
            paths(&linux()),
            [
                "/home/ada/.config/Claude/claude_desktop_config.json",
                "/home/ada/.claude.json",
                "/home/ada/.cursor/mcp.json",
                "/home/ada/.config/Code/User/mcp.json",
                "/home/ada/.config/zed/settings.json",
                "/home/ada/.codeium/windsurf/mcp_config.json",
                "/home/ada/.gemini/settings.json",
                "/home/ada/.codex/config.toml",
            ]
            .map(PathBuf::from)
        );
        assert!(
            Editor::ALL
                .into_iter()
                .all(|editor| !linux().locate(editor).guarded)
        );
    }

    #[test]
    fn on_macos_the_files_under_library_are_read_only_when_asked() {
        let mac = Places {
            system: System::MacOs,
            home: PathBuf::from("/Users/ada"),
            config_dir: PathBuf::from("/Users/ada/Library/Application Support"),
            local_data_dir: PathBuf::from("/Users/ada/Library/Application Support"),
            ..linux()
        };
        let claude = mac.locate(Editor::Claude);
        assert_eq!(
            claude.path,
            PathBuf::from(
                "/Users/ada/Library/Application Support/Claude/claude_desktop_config.json"
            )
        );
        assert!(claude.guarded);
        assert!(mac.locate(Editor::VsCode).guarded);
        for editor in [
            Editor::Cursor,
            Editor::ClaudeCode,
            Editor::Zed,
            Editor::Codex,
        ] {
            assert!(!mac.locate(editor).guarded, "{editor:?}");
        }
        assert_eq!(
            mac.locate(Editor::Zed).path,
            PathBuf::from("/Users/ada/.config/zed/settings.json")
        );
    }

    #[test]
    fn on_windows_claude_desktop_is_found_where_the_installed_app_reads() {
        let dir = tempfile::tempdir().expect("temp dir");
        let roaming = dir.path().join("Roaming");
        let local = dir.path().join("Local");
        let mut windows = Places {
            system: System::Windows,
            home: dir.path().join("ada"),
            config_dir: roaming.clone(),
            local_data_dir: local.clone(),
            ..linux()
        };
        let classic = roaming.join("Claude").join("claude_desktop_config.json");
        assert_eq!(windows.locate(Editor::Claude).path, classic);
        assert_eq!(windows.locate(Editor::Claude).note, None);
        assert_eq!(
            windows.locate(Editor::Zed).path,
            roaming.join("Zed").join("settings.json")
        );

        let package = local.join("Packages").join("Claude_pzs8sxrjxfjjc");
        std::fs::create_dir_all(&package).expect("the package's folder");
        windows.claude_packages = claude_packages(&local);
        let packaged = package
            .join("LocalCache")
            .join("Roaming")
            .join("Claude")
            .join("claude_desktop_config.json");
        let found = windows.locate(Editor::Claude);
        assert_eq!(found.path, packaged);
        let note = found.note.expect("says which file is read");
        assert!(note.contains("Microsoft package"), "{note}");
        assert!(!note.contains("not read"), "{note}");

        std::fs::create_dir_all(classic.parent().expect("a folder")).expect("folder");
        std::fs::write(&classic, "{}").expect("an old classic file");
        let note = windows.locate(Editor::Claude).note.expect("a note");
        assert!(
            note.contains(&format!(
                "{} is left from a classic install",
                classic.display()
            )),
            "{note}"
        );

        windows.claude_classic_installed = true;
        let both = windows.locate(Editor::Claude);
        assert_eq!(both.path, packaged);
        assert!(
            both.note
                .as_deref()
                .is_some_and(|note| note.contains("not certain which one you run")),
            "{both:?}"
        );
    }

    #[test]
    fn claude_code_and_codex_follow_their_variables() {
        let places = Places {
            claude_config_dir: Some(PathBuf::from("/home/ada/.claude-work")),
            codex_home: Some(PathBuf::from("/srv/codex")),
            ..linux()
        };
        assert_eq!(
            places.locate(Editor::ClaudeCode).path,
            PathBuf::from("/home/ada/.claude-work/.claude.json")
        );
        assert_eq!(
            places.locate(Editor::Codex).path,
            PathBuf::from("/srv/codex/config.toml")
        );
    }
}
