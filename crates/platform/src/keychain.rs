//! The OS keychain's store, through `keyring-core`: the Secret Service on Linux, Keychain
//! Services on macOS, Credential Manager on Windows; and what differs in using them.

#[cfg(unix)]
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use keyring_core::CredentialStore;

/// This system's keychain.
#[cfg(target_os = "linux")]
pub(crate) fn store() -> keyring_core::Result<Arc<CredentialStore>> {
    Ok(zbus_secret_service_keyring_store::Store::new()?)
}

/// This system's keychain.
#[cfg(target_os = "macos")]
pub(crate) fn store() -> keyring_core::Result<Arc<CredentialStore>> {
    Ok(apple_native_keyring_store::keychain::Store::new()?)
}

/// This system's keychain.
#[cfg(windows)]
pub(crate) fn store() -> keyring_core::Result<Arc<CredentialStore>> {
    Ok(windows_native_keyring_store::Store::new()?)
}

/// The names (users) of the entries `store` keeps under `service`, by the store's own search:
/// the Secret Service and Keychain Services search by attribute.
#[cfg(unix)]
pub(crate) fn names(
    store: &Arc<CredentialStore>,
    service: &str,
) -> keyring_core::Result<Vec<String>> {
    let spec = HashMap::from([("service", service)]);
    let entries = keyring_core::Entry::search_in_store(store, &spec)?;
    Ok(entries
        .iter()
        .filter_map(|entry| entry.get_specifiers())
        .filter(|(found, _)| found == service)
        .map(|(_, name)| name)
        .collect())
}

/// The names (users) of the generic credentials kept under `service`: Credential Manager names
/// each `USER.SERVICE`. Read here with `CredEnumerateW` rather than the store's search, whose
/// reading of the returned array assumes an alignment not every implementation of the call
/// gives.
#[cfg(windows)]
pub(crate) fn names(
    _store: &Arc<CredentialStore>,
    service: &str,
) -> keyring_core::Result<Vec<String>> {
    use windows_sys::Win32::Security::Credentials::{
        CRED_TYPE_GENERIC, CREDENTIALW, CredEnumerateW, CredFree,
    };
    let mut count = 0u32;
    let mut list: *mut *mut CREDENTIALW = std::ptr::null_mut();
    // SAFETY: `list` receives an array of `count` pointers, freed with CredFree below.
    if unsafe { CredEnumerateW(std::ptr::null(), 0, &mut count, &mut list) } == 0 {
        let error = std::io::Error::last_os_error();
        // ERROR_NOT_FOUND: there is no credential at all.
        return match error.raw_os_error() {
            Some(1168) => Ok(Vec::new()),
            _ => Err(keyring_core::Error::PlatformFailure(Box::new(error))),
        };
    }
    let suffix = format!(".{service}");
    let mut names = Vec::new();
    for index in 0..count as usize {
        // SAFETY: the array holds `count` pointers to credentials, read without assuming their
        // alignment.
        let credential = unsafe {
            let pointer = std::ptr::read_unaligned(list.add(index));
            std::ptr::read_unaligned(pointer)
        };
        if credential.Type != CRED_TYPE_GENERIC {
            continue;
        }
        // SAFETY: a NUL-ended UTF-16 string of the credential, valid until CredFree.
        let target = unsafe { unaligned_wide(credential.TargetName) };
        if let Some(name) = target.strip_suffix(&suffix).filter(|name| !name.is_empty()) {
            names.push(name.to_owned());
        }
    }
    // SAFETY: the array CredEnumerateW allocated, freed once.
    unsafe { CredFree(list.cast()) };
    Ok(names)
}

/// A NUL-ended UTF-16 string at any alignment.
///
/// # Safety
/// `text` must be null or point to a readable, NUL-ended UTF-16 string.
#[cfg(windows)]
unsafe fn unaligned_wide(text: *const u16) -> String {
    if text.is_null() {
        return String::new();
    }
    let mut units = Vec::new();
    loop {
        // SAFETY: the caller promises the string goes on up to its NUL.
        let unit = unsafe { std::ptr::read_unaligned(text.add(units.len())) };
        if unit == 0 {
            return String::from_utf16_lossy(&units);
        }
        units.push(unit);
    }
}

/// What Switchboard needs of this system to keep secrets, said when it cannot reach it.
#[cfg(target_os = "linux")]
pub(crate) const NEEDED: &str =
    "a Secret Service such as GNOME Keyring or KWallet running in your session";

/// What Switchboard needs of this system to keep secrets, said when it cannot reach it.
#[cfg(target_os = "macos")]
pub(crate) const NEEDED: &str = "your login keychain (Keychain Access shows it)";

/// What Switchboard needs of this system to keep secrets, said when it cannot reach it.
#[cfg(windows)]
pub(crate) const NEEDED: &str = "Windows Credential Manager, which this session cannot reach";

/// How many times a read is tried before its failure counts: Credential Manager shows an entry
/// that another process is replacing as missing or torn for a moment.
pub(crate) const READ_ATTEMPTS: usize = if cfg!(windows) { 3 } else { 1 };

/// The pause between two attempts at a read.
pub(crate) const READ_RETRY: Duration = Duration::from_millis(15);
