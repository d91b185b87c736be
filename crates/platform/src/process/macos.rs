//! Other processes as macOS shows them: `libproc` for a process's group, start time and
//! children, and the `KERN_PROCARGS2` sysctl for its command line and environment (readable for
//! processes of the same user). Each answer is `None` (or empty) where the system cannot tell.

use std::ffi::c_void;

/// The start time of a process, in microseconds since the epoch.
pub fn start_time(pid: u32) -> Option<u64> {
    let info = bsd_info(pid)?;
    Some(info.pbi_start_tvsec * 1_000_000 + info.pbi_start_tvusec)
}

fn bsd_info(pid: u32) -> Option<libc::proc_bsdinfo> {
    // SAFETY: all-zero is a valid proc_bsdinfo (plain integers and arrays of them).
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
    // SAFETY: the buffer is a proc_bsdinfo of the size given.
    let written = unsafe {
        libc::proc_pidinfo(
            pid as libc::c_int,
            libc::PROC_PIDTBSDINFO,
            0,
            (&raw mut info).cast::<c_void>(),
            size,
        )
    };
    (written == size).then_some(info)
}

/// A list of pids from a libproc call that fills a buffer and says how many bytes it used.
fn pid_list(list: impl Fn(*mut c_void, libc::c_int) -> libc::c_int) -> Option<Vec<u32>> {
    let mut pids: Vec<libc::pid_t> = vec![0; 256];
    loop {
        let capacity = (pids.len() * std::mem::size_of::<libc::pid_t>()) as libc::c_int;
        let used = list(pids.as_mut_ptr().cast(), capacity);
        if used < 0 {
            return None;
        }
        let count = used as usize / std::mem::size_of::<libc::pid_t>();
        if count < pids.len() {
            pids.truncate(count);
            return Some(
                pids.into_iter()
                    .filter(|&pid| pid > 0)
                    .map(|pid| pid as u32)
                    .collect(),
            );
        }
        pids.resize(pids.len() * 2, 0);
    }
}

/// Every live process whose process group is `pgid`.
pub(crate) fn processes_in_group(pgid: i32) -> Vec<u32> {
    // SAFETY: libproc writes at most `size` bytes of pids into the buffer.
    let members = pid_list(|buffer, size| unsafe { libc::proc_listpgrppids(pgid, buffer, size) });
    members
        .unwrap_or_default()
        .into_iter()
        .filter(|&pid| bsd_info(pid).is_some_and(|info| info.pbi_status != libc::SZOMB))
        .collect()
}

/// The direct children of a process.
pub fn children(pid: u32) -> Option<Vec<u32>> {
    bsd_info(pid)?;
    // SAFETY: libproc writes at most `size` bytes of pids into the buffer.
    pid_list(|buffer, size| unsafe { libc::proc_listchildpids(pid as libc::pid_t, buffer, size) })
}

/// A process's command line (program and arguments).
pub fn command_line(pid: u32) -> Option<Vec<String>> {
    procargs(pid)
        .map(|(arguments, _)| arguments)
        .filter(|arguments| !arguments.is_empty())
}

/// A process's environment (`NAME=value` entries).
pub fn environment(pid: u32) -> Option<Vec<String>> {
    procargs(pid).map(|(_, environment)| environment)
}

/// `KERN_PROCARGS2`: the argument count, the executable's path, padding, the arguments and
/// then the environment, each ended by a NUL.
fn procargs(pid: u32) -> Option<(Vec<String>, Vec<String>)> {
    let mut size: libc::size_t = 0;
    let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, pid as libc::c_int];
    // SAFETY: asks only for the size.
    let sized = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            3,
            std::ptr::null_mut(),
            &mut size,
            std::ptr::null_mut(),
            0,
        )
    };
    if sized != 0 || size < std::mem::size_of::<libc::c_int>() {
        return None;
    }
    let mut buffer = vec![0u8; size];
    // SAFETY: the buffer holds `size` bytes, and sysctl writes at most that many.
    let read = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            3,
            buffer.as_mut_ptr().cast(),
            &mut size,
            std::ptr::null_mut(),
            0,
        )
    };
    if read != 0 {
        return None;
    }
    buffer.truncate(size);
    parse_procargs(&buffer)
}

fn parse_procargs(buffer: &[u8]) -> Option<(Vec<String>, Vec<String>)> {
    let (count, rest) = buffer.split_at_checked(std::mem::size_of::<libc::c_int>())?;
    let argc = libc::c_int::from_ne_bytes(count.try_into().ok()?).max(0) as usize;
    let mut strings = rest
        .split(|&byte| byte == 0)
        .map(|text| String::from_utf8_lossy(text).into_owned());
    // The executable's path, then the NULs that pad it.
    strings.next()?;
    let mut strings = strings.skip_while(String::is_empty);
    let arguments: Vec<String> = strings.by_ref().take(argc).collect();
    let environment = strings.take_while(|entry| !entry.is_empty()).collect();
    Some((arguments, environment))
}
