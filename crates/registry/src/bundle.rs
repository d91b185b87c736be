//! MCPB bundles (a zip with a `manifest.json`): downloaded (over https, or from this machine for
//! a source on it), checked against the digest the entry gives (`fileSha256`) before a byte of
//! it is unpacked, read for how it runs (the manifest's `server.mcp_config`, with
//! `${__dirname}` the bundle's folder) so that the plan can show it, and only once that plan is
//! confirmed unpacked into the data directory's `bundles/SERVER/`: streamed file by file under
//! limits on entries, size and ratio, into a folder of its own that is moved into place whole
//! or removed whole. A bundle whose manifest asks for settings (`${user_config.…}`) is not
//! added: Switchboard does not ask for them yet.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::plan::EntryLaunch;

/// The largest bundle downloaded.
const MAX_BUNDLE_BYTES: usize = 256 * 1024 * 1024;

#[derive(Deserialize)]
struct Manifest {
    server: ManifestServer,
}

#[derive(Deserialize)]
struct ManifestServer {
    mcp_config: McpConfig,
}

#[derive(Deserialize)]
struct McpConfig {
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

/// The most bytes a bundle unpacks to, all its files together.
const MAX_UNPACKED_BYTES: u64 = 1024 * 1024 * 1024;
/// The most entries (files and folders) a bundle holds.
const MAX_ENTRIES: usize = 10_000;
/// How many times its packed size a file may unpack to, past [`RATIO_FREE_BYTES`]: text packs
/// to a tenth or so, a zip bomb to a thousandth.
const MAX_RATIO: u64 = 200;
const RATIO_FREE_BYTES: u64 = 1024 * 1024;
/// The largest manifest read.
const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

/// Why a bundle is not added; each says what was found.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum BundleError {
    #[error("cannot download {url}: {reason}")]
    Download { url: String, reason: String },
    #[error(
        "the bundle {url} is not the one its entry names: its SHA-256 is {found}, the entry \
         says {expected}; nothing is unpacked or run"
    )]
    Digest {
        url: String,
        found: String,
        expected: String,
    },
    #[error("the bundle is refused: {0}; nothing of it is kept")]
    Archive(String),
    #[error("the bundle's manifest.json {0}")]
    Manifest(String),
    #[error("cannot unpack the bundle: {0}")]
    Io(String),
}

/// Why the bundle at `url`, listed by the source `source`, is not downloaded: an address on
/// this machine is fetched only for a source on this machine (else any source could make
/// Switchboard send requests to services that listen only locally).
pub(crate) fn origin_problem(url: &str, source: &str) -> Option<String> {
    let bundle = url::Url::parse(url).ok()?;
    let local_source =
        url::Url::parse(source).is_ok_and(|source| super::plan::is_loopback(&source));
    (super::plan::is_loopback(&bundle) && !local_source).then(|| {
        format!(
            "the bundle {url} is on this machine, but its source {source} is not: a source \
             elsewhere may not make Switchboard fetch local addresses"
        )
    })
}

/// Downloads the bundle at `url` and checks it against `sha256`.
pub(crate) async fn download(url: &str, sha256: &str) -> Result<Vec<u8>, BundleError> {
    let failed = |reason: String| BundleError::Download {
        url: url.to_owned(),
        reason,
    };
    let bytes = super::source::get_body(&super::source::client(), url, None, MAX_BUNDLE_BYTES)
        .await
        .map_err(|error| failed(error.to_string()))?;
    let digest = platform::hex::encode(&Sha256::digest(&bytes));
    if digest != sha256 {
        return Err(BundleError::Digest {
            url: url.to_owned(),
            found: digest,
            expected: sha256.to_owned(),
        });
    }
    Ok(bytes)
}

/// How the bundle `bytes` runs once unpacked into `folder`, read from its manifest without
/// unpacking anything.
pub(crate) fn launch_of(bytes: &[u8], folder: &Path) -> Result<EntryLaunch, BundleError> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|error| BundleError::Archive(format!("it is not a zip archive ({error})")))?;
    let mut manifest = Vec::new();
    archive
        .by_name("manifest.json")
        .map_err(|error| BundleError::Manifest(format!("is missing ({error})")))?
        .take(MAX_MANIFEST_BYTES)
        .read_to_end(&mut manifest)
        .map_err(|error| BundleError::Manifest(format!("cannot be read: {error}")))?;
    let manifest: Manifest = serde_json::from_slice(&manifest)
        .map_err(|error| BundleError::Manifest(format!("cannot be read: {error}")))?;
    let config = manifest.server.mcp_config;
    let folder = folder.display().to_string().replace("${", "$${");
    let fill = |text: &str| -> Result<String, BundleError> {
        if text.contains("${user_config.") {
            return Err(BundleError::Manifest(format!(
                "asks for settings ({text}), which Switchboard does not ask for yet"
            )));
        }
        Ok(text.replace("${", "$${").replace("$${__dirname}", &folder))
    };
    for name in config.env.keys() {
        if let Some(problem) = super::plan::env_name_problem(name) {
            return Err(BundleError::Manifest(problem));
        }
    }
    Ok(EntryLaunch::Command {
        command: fill(&config.command)?,
        args: config
            .args
            .iter()
            .map(|arg| fill(arg))
            .collect::<Result<_, _>>()?,
        env: config
            .env
            .iter()
            .map(|(key, value)| Ok((key.clone(), fill(value)?)))
            .collect::<Result<_, BundleError>>()?,
    })
}

/// Unpacks the zip `bytes` into `bundles/server` (made afresh): first into a folder of its own
/// beside it, streamed file by file under the limits on entries, size and ratio, then moved into
/// place; on any failure that folder is removed whole, and nothing is left.
pub(crate) fn extract(bytes: &[u8], bundles: &Path, server: &str) -> Result<(), BundleError> {
    let io = |what: &Path, error: std::io::Error| {
        BundleError::Io(format!("{}: {error}", what.display()))
    };
    platform::files::create_private_dir(bundles).map_err(|error| io(bundles, error))?;
    let target = bundles.join(server);
    let partial = bundles.join(format!(".{server}.unpacking"));
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(|error| io(&partial, error))?;
    }
    let unpacked = unpack_into(bytes, &partial).and_then(|()| {
        if target.exists() {
            std::fs::remove_dir_all(&target).map_err(|error| io(&target, error))?;
        }
        std::fs::rename(&partial, &target).map_err(|error| io(&target, error))
    });
    if unpacked.is_err()
        && let Err(error) = std::fs::remove_dir_all(&partial)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!("cannot remove {}: {error}", partial.display());
    }
    unpacked
}

/// Unpacks the zip `bytes` into `target`, refusing a path that leaves it and an archive past
/// the limits.
fn unpack_into(bytes: &[u8], target: &Path) -> Result<(), BundleError> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|error| BundleError::Archive(format!("it is not a zip archive ({error})")))?;
    if archive.len() > MAX_ENTRIES {
        return Err(BundleError::Archive(format!(
            "it holds {} entries; a bundle may hold {MAX_ENTRIES} at most",
            archive.len()
        )));
    }
    let io = |what: &Path, error: std::io::Error| {
        BundleError::Io(format!("{}: {error}", what.display()))
    };
    platform::files::create_private_dir(target).map_err(|error| io(target, error))?;
    let mut total: u64 = 0;
    for index in 0..archive.len() {
        let file = archive
            .by_index(index)
            .map_err(|error| BundleError::Archive(error.to_string()))?;
        let Some(relative) = file.enclosed_name() else {
            return Err(BundleError::Archive(format!(
                "it holds a path outside itself: {:?}",
                file.name()
            )));
        };
        let path = target.join(relative);
        if file.is_dir() {
            platform::files::create_private_dir(&path).map_err(|error| io(&path, error))?;
            continue;
        }
        if let Some(parent) = path.parent() {
            platform::files::create_private_dir(parent).map_err(|error| io(parent, error))?;
        }
        let executable = file.unix_mode().is_some_and(|mode| mode & 0o111 != 0);
        let name = file.name().to_owned();
        let by_ratio = file
            .compressed_size()
            .saturating_mul(MAX_RATIO)
            .max(RATIO_FREE_BYTES);
        let allowed = by_ratio.min(MAX_UNPACKED_BYTES - total);
        let mut out =
            platform::files::create_new_private_file(&path).map_err(|error| io(&path, error))?;
        let written = std::io::copy(&mut file.take(allowed + 1), &mut out)
            .map_err(|error| io(&path, error))?;
        if written > allowed {
            return Err(BundleError::Archive(match allowed == by_ratio {
                true => format!(
                    "{name} unpacks to more than {MAX_RATIO} times its packed size, as a zip \
                     bomb does"
                ),
                false => format!(
                    "it unpacks to more than {} MiB",
                    MAX_UNPACKED_BYTES / (1024 * 1024)
                ),
            }));
        }
        out.sync_all().map_err(|error| io(&path, error))?;
        total += written;
        if executable {
            platform::files::make_executable(&path).map_err(|error| io(&path, error))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
