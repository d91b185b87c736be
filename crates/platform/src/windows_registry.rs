//! The `Path` a Windows session starts programs with, from the registry: the machine's, then
//! the user's, as Explorer builds it at logon, each with its `%VARIABLES%` expanded. A program
//! started by another (an editor started before Node.js was installed) may carry an older
//! `PATH` than this.

use std::ffi::OsString;
use std::os::windows::ffi::OsStringExt;
use std::ptr::null_mut;

use windows_sys::Win32::System::Registry::{
    HKEY, HKEY_CURRENT_USER, HKEY_LOCAL_MACHINE, RRF_RT_REG_EXPAND_SZ, RRF_RT_REG_SZ, RegGetValueW,
};

use super::windows_security::wide;

/// The machine's `Path` followed by the user's; `None` when neither can be read.
pub(super) fn session_path() -> Option<OsString> {
    let machine = read_string(
        HKEY_LOCAL_MACHINE,
        r"SYSTEM\CurrentControlSet\Control\Session Manager\Environment",
        "Path",
    );
    let user = read_string(HKEY_CURRENT_USER, "Environment", "Path");
    let parts: Vec<OsString> = [machine, user].into_iter().flatten().collect();
    if parts.is_empty() {
        return None;
    }
    let mut path = OsString::new();
    for (index, part) in parts.iter().enumerate() {
        if index > 0 {
            path.push(";");
        }
        path.push(part);
    }
    Some(path)
}

/// A string value, expanded if it is `REG_EXPAND_SZ`.
fn read_string(root: HKEY, key: &str, value: &str) -> Option<OsString> {
    let (key, value) = (wide(key), wide(value));
    let flags = RRF_RT_REG_SZ | RRF_RT_REG_EXPAND_SZ;
    let mut size = 0u32;
    // SAFETY: asks for the size only.
    let status = unsafe {
        RegGetValueW(
            root,
            key.as_ptr(),
            value.as_ptr(),
            flags,
            null_mut(),
            null_mut(),
            &mut size,
        )
    };
    if status != 0 || size == 0 {
        return None;
    }
    let mut buffer = vec![0u16; (size as usize).div_ceil(2)];
    let mut written = (buffer.len() * 2) as u32;
    // SAFETY: the buffer holds `written` bytes.
    let status = unsafe {
        RegGetValueW(
            root,
            key.as_ptr(),
            value.as_ptr(),
            flags,
            null_mut(),
            buffer.as_mut_ptr().cast(),
            &mut written,
        )
    };
    if status != 0 {
        return None;
    }
    let len = buffer
        .iter()
        .position(|&unit| unit == 0)
        .unwrap_or(buffer.len());
    (len > 0).then(|| OsString::from_wide(&buffer[..len]))
}
