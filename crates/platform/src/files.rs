//! Files and folders for their owner only, and replacing a file in one step.
//!
//! Unix: folders 0700 and files 0600, set as they are created. Windows: a protected DACL that
//! grants the current user alone full access (no inherited entries), set on the handle right
//! after creation; files made inside a private folder inherit its DACL anyway. Replacing a file
//! is a rename over it; on Windows a rename is refused while another process has the target
//! open without sharing its deletion (an editor saving, an indexer, a virus scanner), so it is
//! retried for a short while before the error is returned, the target untouched.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
#[cfg(windows)]
use std::time::Duration;

/// Makes `dir` and its missing parents, each for its owner only; one that exists is left as it
/// is.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
    #[cfg(windows)]
    {
        let mut missing = Vec::new();
        let mut next = Some(dir);
        while let Some(path) = next.filter(|path| !path.as_os_str().is_empty() && !path.exists()) {
            missing.push(path);
            next = path.parent();
        }
        for path in missing.into_iter().rev() {
            match std::fs::create_dir(path) {
                Ok(()) => super::windows_security::restrict_path(path, true)?,
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}

/// Sets `options` to create a file for its owner only (the mode it is created with on Unix;
/// see [`made_private`] for Windows), and on Unix never to open a symlink in its place.
pub fn private_options(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW)
    }
    #[cfg(windows)]
    {
        options
    }
}

/// A file just opened at `path` with [`private_options`], made its owner's only where the
/// system could not do it at creation (Windows).
fn made_private(file: File, path: &Path) -> io::Result<File> {
    #[cfg(windows)]
    super::windows_security::restrict_path(path, false)?;
    #[cfg(unix)]
    let _ = path;
    Ok(file)
}

/// Lets the owner run the file at `path` (a program unpacked from a bundle): 0700 on Unix;
/// nothing on Windows, where whether a file runs is not a permission.
pub fn make_executable(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
    }
    #[cfg(windows)]
    {
        let _ = path;
        Ok(())
    }
}

/// Creates `path`, which must not exist yet (not even as a symlink), for its owner only.
pub fn create_new_private_file(path: &Path) -> io::Result<File> {
    let file = private_options(&mut OpenOptions::new())
        .write(true)
        .create_new(true)
        .open(path)?;
    made_private(file, path)
}

/// Opens `path` to append to it, created for its owner only if it is new.
pub(crate) fn append_private(path: &Path) -> io::Result<File> {
    let file = private_options(&mut OpenOptions::new())
        .create(true)
        .append(true)
        .open(path)?;
    made_private(file, path)
}

/// Whether anyone but the owner may read or change what is at `path`.
pub fn open_to_others(path: &Path) -> io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        Ok(std::fs::metadata(path)?.permissions().mode() & 0o077 != 0)
    }
    #[cfg(windows)]
    {
        super::windows_security::open_to_others(path)
    }
}

/// Narrows what is at `path` (a file or a folder) to its owner.
pub fn restrict_to_owner(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = if std::fs::metadata(path)?.is_dir() {
            0o700
        } else {
            0o600
        };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(windows)]
    {
        super::windows_security::restrict_path(path, std::fs::metadata(path)?.is_dir())
    }
}

/// The permissions a new file made to replace `existing` should get: those of `existing`, or
/// the owner's only when there is none.
pub(crate) fn permissions_for_replacement(
    existing: &Path,
) -> io::Result<Option<std::fs::Permissions>> {
    match std::fs::metadata(existing) {
        Ok(metadata) => Ok(Some(metadata.permissions())),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// Puts `from` in the place of `to` in one step (a rename over it).
///
/// On Windows a sharing violation (another process has `to` open without sharing its deletion)
/// is retried for up to two seconds; then the error names the file, which was not touched.
pub(crate) fn replace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        std::fs::rename(from, to)
    }
    #[cfg(windows)]
    {
        const RETRY_FOR: Duration = Duration::from_secs(2);
        const PAUSE: Duration = Duration::from_millis(50);
        let deadline = std::time::Instant::now() + RETRY_FOR;
        loop {
            match std::fs::rename(from, to) {
                Ok(()) => return Ok(()),
                Err(error)
                    if super::windows_security::is_sharing_violation(&error)
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(PAUSE);
                }
                Err(error) if super::windows_security::is_sharing_violation(&error) => {
                    return Err(io::Error::new(
                        error.kind(),
                        format!(
                            "{} is held open by another program, which does not let it be \
                             replaced; close that program and try again ({error})",
                            to.display()
                        ),
                    ));
                }
                Err(error) => return Err(error),
            }
        }
    }
}
