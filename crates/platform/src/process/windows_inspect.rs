//! Other processes as Windows shows them: a Tool Help snapshot for children, the process's
//! times for its start, and its process parameters (read from its memory, as Task Manager and
//! Process Explorer do) for its environment. Each answer is `None` where the
//! system cannot tell (the process is gone, or belongs to another user).

use std::ffi::c_void;

use windows_sys::Wdk::System::Threading::{NtQueryInformationProcess, ProcessBasicInformation};
use windows_sys::Win32::Foundation::FILETIME;
use windows_sys::Win32::System::Diagnostics::Debug::ReadProcessMemory;
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, PROCESSENTRY32W, Process32FirstW, Process32NextW, TH32CS_SNAPPROCESS,
};
use windows_sys::Win32::System::Threading::{
    GetProcessTimes, OpenProcess, PROCESS_BASIC_INFORMATION, PROCESS_QUERY_LIMITED_INFORMATION,
    PROCESS_VM_READ,
};

use crate::windows_security::Handle;

/// Where the process parameters are in a 64-bit process (`PEB.ProcessParameters`), and where
/// the environment block and its size are in them.
const PEB_PROCESS_PARAMETERS: usize = 0x20;
const PARAMETERS_ENVIRONMENT: usize = 0x80;
const PARAMETERS_ENVIRONMENT_SIZE: usize = 0x3f0;
/// The most of an environment block read when its size is not recorded.
const ENVIRONMENT_LIMIT: usize = 1024 * 1024;

/// The creation time of a process, in 100 ns units since 1601.
pub fn start_time(pid: u32) -> Option<u64> {
    let process = open(pid, PROCESS_QUERY_LIMITED_INFORMATION)?;
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: four FILETIMEs to fill, and an open handle.
    let read =
        unsafe { GetProcessTimes(process.0, &mut created, &mut exited, &mut kernel, &mut user) };
    (read != 0)
        .then(|| (u64::from(created.dwHighDateTime) << 32) | u64::from(created.dwLowDateTime))
}

/// The processes whose parent is `pid`, but for the console host Windows gives every console
/// program (`conhost.exe`), which is no child of its own making.
pub fn children(pid: u32) -> Option<Vec<u32>> {
    start_time(pid)?;
    // SAFETY: a snapshot of every process; wrapped at once.
    let snapshot =
        Handle::checked(unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0) }).ok()?;
    // SAFETY: all-zero is a valid PROCESSENTRY32W once its size is set.
    let mut entry: PROCESSENTRY32W = unsafe { std::mem::zeroed() };
    entry.dwSize = std::mem::size_of::<PROCESSENTRY32W>() as u32;
    let mut children = Vec::new();
    // SAFETY: `entry` is a PROCESSENTRY32W with its size set.
    let mut more = unsafe { Process32FirstW(snapshot.0, &mut entry) } != 0;
    while more {
        if entry.th32ParentProcessID == pid
            && entry.th32ProcessID != pid
            && !is_console_host(&entry.szExeFile)
        {
            children.push(entry.th32ProcessID);
        }
        // SAFETY: as for Process32FirstW.
        more = unsafe { Process32NextW(snapshot.0, &mut entry) } != 0;
    }
    Some(children)
}

/// A process's command line: not read on Windows, where no runner replaces itself with the
/// server (`exec`), the one case that needs it.
pub fn command_line(_pid: u32) -> Option<Vec<String>> {
    None
}

/// A process's environment (`NAME=value` entries).
pub fn environment(pid: u32) -> Option<Vec<String>> {
    let process = open(pid, PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_VM_READ)?;
    let parameters = process_parameters(&process)?;
    let block: usize = read(&process, parameters + PARAMETERS_ENVIRONMENT)?;
    let size: usize = read(&process, parameters + PARAMETERS_ENVIRONMENT_SIZE).unwrap_or(0);
    let size = if size == 0 || size > ENVIRONMENT_LIMIT {
        ENVIRONMENT_LIMIT
    } else {
        size
    };
    let units = read_units_until_double_nul(&process, block, size / 2)?;
    Some(
        units
            .split(|&unit| unit == 0)
            .take_while(|entry| !entry.is_empty())
            .map(String::from_utf16_lossy)
            .collect(),
    )
}

/// Whether a snapshot's executable name is the console host's.
fn is_console_host(name: &[u16]) -> bool {
    let len = name
        .iter()
        .position(|&unit| unit == 0)
        .unwrap_or(name.len());
    String::from_utf16_lossy(&name[..len]).eq_ignore_ascii_case("conhost.exe")
}

fn open(pid: u32, access: u32) -> Option<Handle> {
    // SAFETY: a new handle or null; wrapped at once.
    Handle::checked(unsafe { OpenProcess(access, 0, pid) }).ok()
}

/// The address of a 64-bit process's `RTL_USER_PROCESS_PARAMETERS`.
fn process_parameters(process: &Handle) -> Option<usize> {
    if std::mem::size_of::<usize>() != 8 {
        return None;
    }
    // SAFETY: all-zero is a valid PROCESS_BASIC_INFORMATION.
    let mut basic: PROCESS_BASIC_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: the structure and its size match the class.
    let status = unsafe {
        NtQueryInformationProcess(
            process.0,
            ProcessBasicInformation,
            (&raw mut basic).cast(),
            std::mem::size_of::<PROCESS_BASIC_INFORMATION>() as u32,
            std::ptr::null_mut(),
        )
    };
    if status < 0 || basic.PebBaseAddress.is_null() {
        return None;
    }
    read(
        process,
        basic.PebBaseAddress as usize + PEB_PROCESS_PARAMETERS,
    )
}

/// One plain value at `address` in another process.
fn read<T: Copy + Default>(process: &Handle, address: usize) -> Option<T> {
    let mut value = T::default();
    let mut done = 0;
    // SAFETY: reads size_of::<T>() bytes into `value`, a plain integer.
    let read = unsafe {
        ReadProcessMemory(
            process.0,
            address as *const c_void,
            (&raw mut value).cast(),
            std::mem::size_of::<T>(),
            &mut done,
        )
    };
    (read != 0 && done == std::mem::size_of::<T>()).then_some(value)
}

fn read_units(process: &Handle, address: usize, count: usize) -> Option<Vec<u16>> {
    let mut units = vec![0u16; count];
    let mut done = 0;
    // SAFETY: the buffer holds `count` units.
    let read = unsafe {
        ReadProcessMemory(
            process.0,
            address as *const c_void,
            units.as_mut_ptr().cast(),
            count * 2,
            &mut done,
        )
    };
    (read != 0).then(|| {
        units.truncate(done / 2);
        units
    })
}

/// Up to `count` units, read a page at a time, ending at the first double NUL.
fn read_units_until_double_nul(process: &Handle, address: usize, count: usize) -> Option<Vec<u16>> {
    const CHUNK: usize = 2048;
    let mut units = Vec::new();
    while units.len() < count {
        let next = read_units(
            process,
            address + units.len() * 2,
            CHUNK.min(count - units.len()),
        )?;
        if next.is_empty() {
            break;
        }
        units.extend_from_slice(&next);
        if let Some(end) = units.windows(2).position(|pair| pair == [0, 0]) {
            units.truncate(end + 1);
            return Some(units);
        }
    }
    Some(units)
}
