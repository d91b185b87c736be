//! Process trees on Windows: each backend in a Job Object of its own, created with
//! `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`. The backend is started suspended and without a console
//! window (`CREATE_NO_WINDOW`), put in its job, and only then resumed, so that nothing it starts
//! escapes the job. Stopping the job ends every process in it; so does the end of Switchboard,
//! however it ends, since the system then closes the last handle to each job. That is why
//! Windows needs neither a guardian nor records of what a dead run left behind.

use std::ffi::OsString;
use std::io;
use std::os::windows::process::CommandExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};

use windows_sys::Win32::Foundation::STILL_ACTIVE;
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JobObjectBasicAccountingInformation, JobObjectExtendedLimitInformation,
    QueryInformationJobObject, SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::{
    CREATE_BREAKAWAY_FROM_JOB, CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW, CREATE_SUSPENDED,
    GetExitCodeProcess, OpenProcess, OpenThread, PROCESS_QUERY_LIMITED_INFORMATION, ResumeThread,
    THREAD_SUSPEND_RESUME,
};

use crate::windows_security::Handle;

/// The exit code a tree's processes get when it is killed.
const KILLED: u32 = 1;

/// A backend's process tree: its Job Object.
pub struct Tree {
    job: Handle,
    pid: u32,
}

// SAFETY: a job handle may be used from any thread.
unsafe impl Send for Tree {}
// SAFETY: as above; every use is a single system call.
unsafe impl Sync for Tree {}

/// Readies `command` to start suspended (until [`Tree::adopt`] has put it in its job) and with
/// no console window.
pub fn prepare(command: &mut tokio::process::Command) {
    command.creation_flags(CREATE_NO_WINDOW | CREATE_SUSPENDED);
}

impl Tree {
    /// Puts a child started after [`prepare`] in a job of its own, then lets it run.
    pub fn adopt(child: &tokio::process::Child) -> io::Result<Tree> {
        let pid = child
            .id()
            .ok_or_else(|| io::Error::other("the child has already been reaped"))?;
        let process = child
            .raw_handle()
            .ok_or_else(|| io::Error::other("the child has no handle"))?;
        // SAFETY: a new, unnamed job with default security; wrapped at once.
        let job = Handle::checked(unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) })?;
        // SAFETY: all-zero is a valid JOBOBJECT_EXTENDED_LIMIT_INFORMATION.
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: the structure and its size match the class.
        let set = unsafe {
            SetInformationJobObject(
                job.0,
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if set == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both handles are open.
        if unsafe { AssignProcessToJobObject(job.0, process.cast()) } == 0 {
            return Err(io::Error::last_os_error());
        }
        resume_threads(pid)?;
        Ok(Tree { job, pid })
    }

    /// The number the records know the tree by: its leader's pid.
    pub fn id(&self) -> i32 {
        self.pid as i32
    }

    /// Windows has no request to stop for a process without a window or console: `false`, so
    /// the caller kills after the grace period it already gave.
    pub fn ask_to_stop(&self) -> bool {
        false
    }

    /// Kills every process in the job at once.
    pub fn kill(&self) {
        // SAFETY: the job handle is open.
        unsafe { TerminateJobObject(self.job.0, KILLED) };
    }

    /// Whether any process of the job is still running.
    pub fn is_alive(&self) -> bool {
        // SAFETY: all-zero is a valid JOBOBJECT_BASIC_ACCOUNTING_INFORMATION.
        let mut accounting: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { std::mem::zeroed() };
        // SAFETY: the structure and its size match the class.
        let read = unsafe {
            QueryInformationJobObject(
                self.job.0,
                JobObjectBasicAccountingInformation,
                (&raw mut accounting).cast(),
                std::mem::size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        };
        read != 0 && accounting.ActiveProcesses > 0
    }
}

/// Resumes every thread of the process `pid` (started suspended: its one main thread).
fn resume_threads(pid: u32) -> io::Result<()> {
    // SAFETY: a snapshot of every thread; wrapped at once.
    let snapshot = Handle::checked(unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) })?;
    // SAFETY: all-zero is a valid THREADENTRY32 once its size is set.
    let mut entry: THREADENTRY32 = unsafe { std::mem::zeroed() };
    entry.dwSize = std::mem::size_of::<THREADENTRY32>() as u32;
    let mut resumed = 0;
    // SAFETY: `entry` is a THREADENTRY32 with its size set.
    let mut more = unsafe { Thread32First(snapshot.0, &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: a new handle or null; wrapped at once.
            let thread = Handle::checked(unsafe {
                OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID)
            })?;
            // SAFETY: the thread handle is open with the right to resume it.
            if unsafe { ResumeThread(thread.0) } == u32::MAX {
                return Err(io::Error::last_os_error());
            }
            resumed += 1;
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snapshot.0, &mut entry) } != 0;
    }
    match resumed {
        0 => Err(io::Error::other(format!(
            "no thread of process {pid} to resume"
        ))),
        _ => Ok(()),
    }
}

/// How a process ended: its exit code (Windows has no signals).
pub fn exit_of(status: ExitStatus) -> (Option<i32>, Option<i32>) {
    (status.code(), None)
}

/// Windows has no signals.
pub fn signal_name(_signal: i32) -> Option<&'static str> {
    None
}

/// Whether a process with this pid is running.
pub fn exists(pid: u32) -> bool {
    // SAFETY: a new handle or null; wrapped at once.
    let Ok(process) =
        Handle::checked(unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) })
    else {
        return false;
    };
    let mut code = 0;
    // SAFETY: the handle is open with the right to query it.
    let read = unsafe { GetExitCodeProcess(process.0, &mut code) };
    read != 0 && code == STILL_ACTIVE as u32
}

/// Starts `program args` detached from us: no console window, a process group of its own, out
/// of any job we are in where the job allows it (an editor's job must not end it with us), its
/// output appended to `log`, and `env` added to our environment. Returns its pid.
pub fn start_detached(
    program: &Path,
    args: &[OsString],
    env: &[(OsString, OsString)],
    log: &Path,
) -> io::Result<u32> {
    let log_file = crate::files::append_private(log)?;
    let start = |flags: u32| -> io::Result<std::process::Child> {
        #[allow(clippy::disallowed_methods)] // a detached `serve` is started here, not a backend
        let mut command = std::process::Command::new(program);
        command
            .args(args)
            .envs(env.iter().map(|(key, value)| (key, value)))
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file.try_clone()?)
            .creation_flags(flags);
        command.spawn()
    };
    let flags = CREATE_NO_WINDOW | CREATE_NEW_PROCESS_GROUP;
    let mut child = match start(flags | CREATE_BREAKAWAY_FROM_JOB) {
        Ok(child) => child,
        // A job that does not allow breaking away refuses the flag: start inside it then.
        Err(error) if error.raw_os_error() == Some(5) => start(flags)?,
        Err(error) => return Err(error),
    };
    let pid = child.id();
    std::thread::spawn(move || child.wait());
    Ok(pid)
}

/// The family name of the app package this process runs in (a program an MSIX-installed app
/// such as Claude Desktop started runs in that app's package, where writes under `%APPDATA%` are
/// redirected); `None` outside any.
pub fn app_package() -> Option<String> {
    use windows_sys::Win32::Storage::Packaging::Appx::GetCurrentPackageFamilyName;
    let mut len = 0u32;
    // SAFETY: asks for the length only; fails with APPMODEL_ERROR_NO_PACKAGE outside a package.
    let status = unsafe { GetCurrentPackageFamilyName(&mut len, std::ptr::null_mut()) };
    // ERROR_INSUFFICIENT_BUFFER: there is a package, and its name is `len` units long.
    if status != 122 || len == 0 {
        return None;
    }
    let mut name = vec![0u16; len as usize];
    // SAFETY: the buffer holds `len` units.
    let status = unsafe { GetCurrentPackageFamilyName(&mut len, name.as_mut_ptr()) };
    if status != 0 {
        return None;
    }
    let end = name
        .iter()
        .position(|&unit| unit == 0)
        .unwrap_or(name.len());
    Some(String::from_utf16_lossy(&name[..end]))
}

/// On Windows the jobs stand guard: nothing to start.
pub struct Guardian;

impl Guardian {
    pub fn start(_exe: &Path, _arg: &str) -> io::Result<Guardian> {
        Ok(Guardian)
    }

    pub fn tell(&mut self, _tree: i32, _added: bool) {}
}

/// Nothing to guard on Windows (see the module's comment).
pub fn run_guardian() {}

/// Nothing is left behind on Windows (see the module's comment).
pub fn reap_stale(_records: &Path, _marker_env: &str) -> Vec<u32> {
    Vec::new()
}
