//! The one way Switchboard replaces a file: the new content goes to a temporary file beside it,
//! which is synced and renamed over the old one, so no reader (an editor, the config watcher,
//! another Switchboard) ever sees half of it.
//!
//! The temporary file has an unpredictable name and is created only if nothing is there, not
//! even a symlink (`O_CREAT | O_EXCL`, and `O_NOFOLLOW` on Unix), for its owner only: a local
//! user who guesses the name or plants a link gets an error, never a file of ours written
//! through their link.

use std::fs::{self, File, Permissions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

/// Replaces `path` with `bytes` for its owner only; missing folders are made for the owner only
/// too. For Switchboard's own files: pins, cached catalogs, records, tokens.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(parent) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        crate::files::create_private_dir(parent)?;
    }
    replace(path, bytes, None, Durability::Synced)
}

/// Like [`write_private`], for a record that means something only while the system runs (the
/// runtime directory's): no reader sees half of it and it survives Switchboard crashing, but it
/// is not synced to disk first, which would cost milliseconds each time, for a power loss that
/// the processes it records do not survive either.
pub fn write_private_record(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(parent) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        crate::files::create_private_dir(parent)?;
    }
    replace(path, bytes, None, Durability::UntilShutdown)
}

/// Whether a replacement is synced to disk before it is put in place.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Durability {
    Synced,
    UntilShutdown,
}

/// Replaces the file at `path` with `bytes`, keeping the permissions of the file it replaces
/// (its owner's only if there was none, since it may hold a token). A symlink is followed, so
/// the file it points to is the one replaced. For files that are the person's: editors' configs,
/// Switchboard's config. On Windows a file another program holds open is retried a short while
/// (`platform::files::replace`).
pub fn write_keeping_permissions(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let target = match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => fs::canonicalize(path)?,
        _ => path.to_path_buf(),
    };
    let permissions = crate::files::permissions_for_replacement(&target)?;
    if let Some(dir) = target.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        fs::create_dir_all(dir)?;
    }
    replace(&target, bytes, permissions, Durability::Synced)
}

/// A new file beside `path`, for its owner only, under a name no one can guess; for a caller
/// that puts it in place by other means (a hard link that must not replace anything).
pub fn temporary_beside(path: &Path) -> io::Result<(PathBuf, File)> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    loop {
        let nonce: u64 = rand::random();
        let temporary = path.with_file_name(format!(".{name}.{nonce:016x}.tmp"));
        match crate::files::create_new_private_file(&temporary) {
            Ok(file) => return Ok((temporary, file)),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(error),
        }
    }
}

fn replace(
    target: &Path,
    bytes: &[u8],
    permissions: Option<Permissions>,
    durability: Durability,
) -> io::Result<()> {
    let (temporary, mut file) = temporary_beside(target)?;
    let result = (|| {
        file.write_all(bytes)?;
        if let Some(permissions) = permissions {
            file.set_permissions(permissions)?;
        }
        if durability == Durability::Synced {
            file.sync_all()?;
        }
        drop(file);
        crate::files::replace(&temporary, target)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    result
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).expect("stat").permissions().mode() & 0o777
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .expect("list")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .filter(|name| name.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn private_files_are_the_owners_and_replace_what_was_there() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("made/here/pins.json");
        write_private(&path, b"first").expect("write");
        write_private(&path, b"second").expect("write again");
        assert_eq!(fs::read(&path).expect("read"), b"second");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir.path().join("made/here")), 0o700);
        assert_eq!(
            leftovers(&dir.path().join("made/here")),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_planted_symlink_is_never_written_through() {
        let dir = tempfile::tempdir().expect("temp dir");
        let victim = dir.path().join("victim");
        fs::write(&victim, "theirs").expect("write");
        // Every name the old helpers used, planted as a link to another file.
        let path = dir.path().join("catalog.json");
        for planted in ["catalog.tmp", ".catalog.json.tmp", "catalog.json.tmp"] {
            std::os::unix::fs::symlink(&victim, dir.path().join(planted)).expect("symlink");
        }
        write_private(&path, b"ours").expect("write");
        assert_eq!(fs::read(&victim).expect("read"), b"theirs");
        assert_eq!(fs::read(&path).expect("read"), b"ours");
    }

    #[test]
    fn temporary_names_differ_and_refuse_what_exists() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("token");
        let (first, _) = temporary_beside(&path).expect("one");
        let (second, _) = temporary_beside(&path).expect("two");
        assert_ne!(first, second);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).expect("symlink");
        let error = crate::files::create_new_private_file(&link).expect_err("refused");
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert!(
            !dir.path().join("nowhere").exists(),
            "nothing made through the link"
        );
    }

    #[test]
    fn kept_permissions_follow_links_and_new_files_are_private() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("config.json");
        fs::write(&path, "old").expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).expect("chmod");
        write_keeping_permissions(&path, b"new").expect("write");
        assert_eq!(fs::read(&path).expect("read"), b"new");
        assert_eq!(mode(&path), 0o640);

        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&path, &link).expect("symlink");
        write_keeping_permissions(&link, b"through the link").expect("write");
        assert!(
            fs::symlink_metadata(&link)
                .expect("stat")
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read(&path).expect("read"), b"through the link");

        let fresh = dir.path().join("new/folder/mcp.json");
        write_keeping_permissions(&fresh, b"{}").expect("write");
        assert_eq!(mode(&fresh), 0o600);
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }
}
