//! MCPB bundles (a zip with a `manifest.json`): downloaded, checked against the digest the entry
//! gives (`fileSha256`) before a byte of it is unpacked, unpacked into the data directory's
//! `bundles/SERVER/`, and run as the manifest's `server.mcp_config` says, with `${__dirname}`
//! the bundle's folder. A bundle whose manifest asks for settings (`${user_config.…}`) is not
//! added: Switchboard does not ask for them yet.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::plan::Launch;

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

/// Downloads the bundle at `url`, checks it against `sha256`, unpacks it into `dir/server` and
/// returns how it runs.
pub async fn unpack(url: &str, sha256: &str, dir: &Path, server: &str) -> Result<Launch, String> {
    let response = super::source::client()
        .get(url)
        .send()
        .await
        .map_err(|error| {
            format!(
                "cannot download {url}: {}",
                crate::wire::http_error::describe(&error)
            )
        })?;
    if !response.status().is_success() {
        return Err(format!(
            "cannot download {url}: it answered {}",
            response.status()
        ));
    }
    let bytes = super::source::read_bounded(response, MAX_BUNDLE_BYTES)
        .await
        .map_err(|error| format!("cannot download {url}: {error}"))?;
    let digest = crate::hex::encode(&Sha256::digest(&bytes));
    if digest != sha256 {
        return Err(format!(
            "the bundle {url} is not the one its entry names: its SHA-256 is {digest}, the entry \
             says {sha256}; nothing is unpacked or run"
        ));
    }
    let target = dir.join(server);
    let unpacked = target.clone();
    tokio::task::spawn_blocking(move || extract(&bytes, &unpacked))
        .await
        .map_err(|error| error.to_string())??;
    let manifest = std::fs::read(target.join("manifest.json"))
        .map_err(|error| format!("the bundle has no manifest.json: {error}"))?;
    let manifest: Manifest = serde_json::from_slice(&manifest)
        .map_err(|error| format!("the bundle's manifest.json cannot be read: {error}"))?;
    let config = manifest.server.mcp_config;
    let folder = target.display().to_string().replace("${", "$${");
    let fill = |text: &str| -> Result<String, String> {
        if text.contains("${user_config.") {
            return Err(format!(
                "the bundle asks for settings ({text}), which Switchboard does not ask for yet"
            ));
        }
        Ok(text.replace("${", "$${").replace("$${__dirname}", &folder))
    };
    Ok(Launch::Command {
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
            .collect::<Result<_, String>>()?,
    })
}

/// Unpacks the zip `bytes` into `target` (made afresh), refusing a path that leaves it.
fn extract(bytes: &[u8], target: &Path) -> Result<(), String> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|error| format!("the bundle is not a zip archive: {error}"))?;
    if target.exists() {
        std::fs::remove_dir_all(target)
            .map_err(|error| format!("cannot clear {}: {error}", target.display()))?;
    }
    crate::platform::files::create_private_dir(target)
        .map_err(|error| format!("cannot make {}: {error}", target.display()))?;
    for index in 0..archive.len() {
        let mut file = archive.by_index(index).map_err(|error| error.to_string())?;
        let Some(relative) = file.enclosed_name() else {
            return Err(format!(
                "the bundle holds a path outside itself: {:?}",
                file.name()
            ));
        };
        let path = target.join(relative);
        if file.is_dir() {
            crate::platform::files::create_private_dir(&path).map_err(|error| error.to_string())?;
            continue;
        }
        if let Some(parent) = path.parent() {
            crate::platform::files::create_private_dir(parent)
                .map_err(|error| error.to_string())?;
        }
        let mut content = Vec::new();
        file.read_to_end(&mut content)
            .map_err(|error| error.to_string())?;
        crate::atomic::write_private(&path, &content)
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
        if file.unix_mode().is_some_and(|mode| mode & 0o111 != 0) {
            crate::platform::files::make_executable(&path)
                .map_err(|error| format!("cannot make {} runnable: {error}", path.display()))?;
        }
    }
    Ok(())
}
