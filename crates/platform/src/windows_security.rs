//! Windows security: the current user's SID, another process's, and DACLs that grant the
//! current user alone access to a file, a folder or a named pipe.

use std::ffi::OsStr;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::path::Path;
use std::ptr::null_mut;
use std::sync::{Arc, OnceLock};

use windows_sys::Win32::Foundation::{
    CloseHandle, ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION, HANDLE, LocalFree,
};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW,
    GetNamedSecurityInfoW, SDDL_REVISION_1, SE_FILE_OBJECT, SetNamedSecurityInfoW,
};
use windows_sys::Win32::Security::{
    ACCESS_ALLOWED_ACE, ACE_HEADER, ACL, DACL_SECURITY_INFORMATION, EqualSid, GetAce,
    GetSecurityDescriptorDacl, GetTokenInformation, PROTECTED_DACL_SECURITY_INFORMATION,
    PSECURITY_DESCRIPTOR, PSID, SECURITY_ATTRIBUTES, TOKEN_QUERY, TOKEN_USER, TokenUser,
};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, OpenProcess, OpenProcessToken, PROCESS_QUERY_LIMITED_INFORMATION,
};

/// A UTF-16 string ended by a NUL, for the W functions.
pub(super) fn wide(text: impl AsRef<OsStr>) -> Vec<u16> {
    text.as_ref().encode_wide().chain(Some(0)).collect()
}

/// A handle closed on drop.
pub(super) struct Handle(pub(super) HANDLE);

impl Handle {
    /// `handle`, or the last error when it is null or invalid.
    pub(super) fn checked(handle: HANDLE) -> io::Result<Handle> {
        if handle.is_null() || handle == windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE {
            Err(io::Error::last_os_error())
        } else {
            Ok(Handle(handle))
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle is ours and closed once.
        unsafe { CloseHandle(self.0) };
    }
}

/// The `TOKEN_USER` of a process's token, in a buffer that owns the SID it points to.
struct TokenUserBuffer(Vec<u64>);

impl TokenUserBuffer {
    fn of_process(process: HANDLE) -> io::Result<TokenUserBuffer> {
        let mut token = null_mut();
        // SAFETY: `token` receives a new handle, closed by `Handle`.
        if unsafe { OpenProcessToken(process, TOKEN_QUERY, &mut token) } == 0 {
            return Err(io::Error::last_os_error());
        }
        let token = Handle(token);
        let mut needed = 0u32;
        // SAFETY: asks for the size only.
        unsafe { GetTokenInformation(token.0, TokenUser, null_mut(), 0, &mut needed) };
        // u64 cells keep the TOKEN_USER aligned.
        let mut buffer = vec![0u64; (needed as usize).div_ceil(8).max(1)];
        // SAFETY: the buffer holds at least `needed` bytes.
        let read = unsafe {
            GetTokenInformation(
                token.0,
                TokenUser,
                buffer.as_mut_ptr().cast(),
                (buffer.len() * 8) as u32,
                &mut needed,
            )
        };
        if read == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(TokenUserBuffer(buffer))
    }

    fn sid(&self) -> PSID {
        // SAFETY: the buffer starts with a TOKEN_USER filled by GetTokenInformation.
        unsafe { (*self.0.as_ptr().cast::<TOKEN_USER>()).User.Sid }
    }
}

/// Why the current user could not be told: the system's error, kept so that every later ask
/// says the same.
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot tell the current user: {0}")]
struct UnknownUser(Arc<io::Error>);

/// The current user's SID as a string (`S-1-5-21-…`).
pub(super) fn current_user_sid() -> io::Result<&'static str> {
    static SID: OnceLock<Result<String, UnknownUser>> = OnceLock::new();
    SID.get_or_init(|| {
        let unknown = |error| UnknownUser(Arc::new(error));
        // SAFETY: the pseudo-handle of the current process is always valid.
        let user = TokenUserBuffer::of_process(unsafe { GetCurrentProcess() }).map_err(unknown)?;
        sid_string(user.sid()).map_err(unknown)
    })
    .as_deref()
    .map_err(|unknown| io::Error::other(unknown.clone()))
}

fn sid_string(sid: PSID) -> io::Result<String> {
    let mut text = null_mut();
    // SAFETY: `text` receives a LocalAlloc'ed string, freed below.
    if unsafe { ConvertSidToStringSidW(sid, &mut text) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a NUL-ended UTF-16 string from ConvertSidToStringSidW.
    let result = unsafe { read_wide(text) };
    // SAFETY: allocated by ConvertSidToStringSidW.
    unsafe { LocalFree(text.cast()) };
    Ok(result)
}

/// Reads a NUL-ended UTF-16 string.
///
/// # Safety
/// `text` must point to a readable, NUL-ended UTF-16 string.
unsafe fn read_wide(text: *const u16) -> String {
    let mut len = 0;
    // SAFETY: the caller promises a NUL within the string.
    while unsafe { *text.add(len) } != 0 {
        len += 1;
    }
    // SAFETY: `len` cells were just read.
    String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(text, len) })
}

/// Whether the process `pid` runs as the current user.
pub(super) fn process_is_current_user(pid: u32) -> io::Result<bool> {
    // SAFETY: a new handle or null; wrapped at once.
    let process =
        Handle::checked(unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) })?;
    let theirs = TokenUserBuffer::of_process(process.0)?;
    // SAFETY: the pseudo-handle of the current process is always valid.
    let ours = TokenUserBuffer::of_process(unsafe { GetCurrentProcess() })?;
    // SAFETY: both SIDs live in their buffers.
    Ok(unsafe { EqualSid(theirs.sid(), ours.sid()) } != 0)
}

/// A security descriptor made from SDDL, freed on drop.
pub(super) struct SecurityDescriptor(PSECURITY_DESCRIPTOR);

// SAFETY: the descriptor is memory of its own, never changed after it is made.
unsafe impl Send for SecurityDescriptor {}
// SAFETY: as above.
unsafe impl Sync for SecurityDescriptor {}

impl SecurityDescriptor {
    pub(super) fn from_sddl(sddl: &str) -> io::Result<SecurityDescriptor> {
        let text = wide(sddl);
        let mut descriptor = null_mut();
        // SAFETY: `descriptor` receives a LocalAlloc'ed descriptor, freed on drop.
        let made = unsafe {
            ConvertStringSecurityDescriptorToSecurityDescriptorW(
                text.as_ptr(),
                SDDL_REVISION_1,
                &mut descriptor,
                null_mut(),
            )
        };
        if made == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(SecurityDescriptor(descriptor))
    }

    /// The descriptor's DACL.
    fn dacl(&self) -> io::Result<*mut ACL> {
        let (mut present, mut dacl, mut defaulted) = (0, null_mut(), 0);
        // SAFETY: reads the DACL pointer out of a valid descriptor.
        if unsafe { GetSecurityDescriptorDacl(self.0, &mut present, &mut dacl, &mut defaulted) }
            == 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(dacl)
    }

    /// Attributes that create an object with this descriptor, valid while `self` is.
    pub(super) fn attributes(&self) -> SECURITY_ATTRIBUTES {
        SECURITY_ATTRIBUTES {
            nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32,
            lpSecurityDescriptor: self.0,
            bInheritHandle: 0,
        }
    }
}

impl Drop for SecurityDescriptor {
    fn drop(&mut self) {
        // SAFETY: allocated by ConvertStringSecurityDescriptorToSecurityDescriptorW.
        unsafe { LocalFree(self.0) };
    }
}

/// A protected DACL granting the current user alone full access (inherited by what a folder
/// holds).
fn owner_only(dir: bool) -> io::Result<SecurityDescriptor> {
    let inherit = if dir { "OICI" } else { "" };
    SecurityDescriptor::from_sddl(&format!("D:P(A;{inherit};FA;;;{})", current_user_sid()?))
}

const PRIVATE: u32 = DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION;

/// Gives what is at `path` a DACL for the current user alone.
pub(super) fn restrict_path(path: &Path, dir: bool) -> io::Result<()> {
    let descriptor = owner_only(dir)?;
    let name = wide(path);
    // SAFETY: a valid path and DACL; the descriptor lives across the call.
    let status = unsafe {
        SetNamedSecurityInfoW(
            name.as_ptr(),
            SE_FILE_OBJECT,
            PRIVATE,
            null_mut(),
            null_mut(),
            descriptor.dacl()?,
            null_mut(),
        )
    };
    win32_result(status)
}

/// Whether the DACL of what is at `path` lets anyone but the current user in.
pub(super) fn open_to_others(path: &Path) -> io::Result<bool> {
    let name = wide(path);
    let (mut dacl, mut descriptor) = (null_mut(), null_mut());
    // SAFETY: `descriptor` receives a LocalAlloc'ed descriptor holding `dacl`, freed below.
    let status = unsafe {
        GetNamedSecurityInfoW(
            name.as_ptr(),
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION,
            null_mut(),
            null_mut(),
            &mut dacl,
            null_mut(),
            &mut descriptor,
        )
    };
    win32_result(status)?;
    let result = others_allowed(dacl);
    // SAFETY: allocated by GetNamedSecurityInfoW.
    unsafe { LocalFree(descriptor) };
    result
}

/// Whether a DACL allows any SID but the current user's (a missing DACL allows everyone).
fn others_allowed(dacl: *mut ACL) -> io::Result<bool> {
    if dacl.is_null() {
        return Ok(true);
    }
    // SAFETY: the pseudo-handle of the current process is always valid.
    let user = TokenUserBuffer::of_process(unsafe { GetCurrentProcess() })?;
    // SAFETY: a valid ACL from GetNamedSecurityInfoW.
    let count = unsafe { (*dacl).AceCount };
    for index in 0..u32::from(count) {
        let mut ace = null_mut();
        // SAFETY: `index` is below the ACL's count.
        if unsafe { GetAce(dacl, index, &mut ace) } == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: every ACE starts with its header.
        let header = unsafe { &*ace.cast::<ACE_HEADER>() };
        if u32::from(header.AceType)
            != windows_sys::Win32::System::SystemServices::ACCESS_ALLOWED_ACE_TYPE
        {
            continue;
        }
        // SAFETY: an ACCESS_ALLOWED_ACE, whose SID starts at SidStart.
        let sid = unsafe { (&raw mut (*ace.cast::<ACCESS_ALLOWED_ACE>()).SidStart).cast() };
        // SAFETY: both SIDs are valid.
        if unsafe { EqualSid(sid, user.sid()) } == 0 {
            return Ok(true);
        }
    }
    Ok(false)
}

fn win32_result(status: u32) -> io::Result<()> {
    match status {
        0 => Ok(()),
        error => Err(io::Error::from_raw_os_error(error as i32)),
    }
}

/// Whether an error is another process holding the file open (Windows refuses to replace or
/// delete a file opened without sharing its deletion).
pub(super) fn is_sharing_violation(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error().map(|code| code as u32),
        Some(ERROR_SHARING_VIOLATION | ERROR_ACCESS_DENIED)
    )
}
