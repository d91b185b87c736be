//! Process trees on Linux and macOS: each backend leads a process group of its own, and the
//! group is signalled as one. A guardian process, holding a pipe from us, kills every recorded
//! group the moment this process disappears; on Linux each leader also gets a parent-death
//! signal, and on macOS, which has none, the guardian watches our pid with kqueue as well.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::{self, BufRead, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use super::inspect;

/// How often a group is looked at while it is given time to end.
const GROUP_POLL: Duration = Duration::from_millis(10);

/// A backend's process tree: its process group.
#[derive(Debug)]
pub struct Tree {
    pgid: Pid,
}

/// Readies `command` to lead a process group of its own, to start with no descriptor but its
/// standard three (none that Switchboard itself inherited or opened without `O_CLOEXEC`), and
/// on Linux to be killed when the thread that spawns it dies.
pub fn prepare(command: &mut tokio::process::Command) {
    command.process_group(0);
    let parent = std::process::id();
    // SAFETY: the closure runs between fork and exec and only makes async-signal-safe calls.
    unsafe {
        command.pre_exec(move || {
            close_on_exec_beyond_stdio()?;
            die_with_parent(parent)
        });
    }
}

/// Marks every descriptor above the standard three to close when the program runs: they stay
/// usable until then (a sandbox's ruleset is entered from one).
#[cfg(target_os = "linux")]
fn close_on_exec_beyond_stdio() -> io::Result<()> {
    // SAFETY: close_range takes integers only.
    let marked = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    match marked {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// macOS has no `close_range`: each descriptor up to the table's size is marked in turn (one
/// that is not open answers `EBADF`, which is left alone).
#[cfg(target_os = "macos")]
fn close_on_exec_beyond_stdio() -> io::Result<()> {
    // SAFETY: getdtablesize takes no arguments.
    let table = unsafe { libc::getdtablesize() }.clamp(3, 65_536);
    for fd in 3..table {
        // SAFETY: fcntl with integer arguments only.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn die_with_parent(parent: u32) -> io::Result<()> {
    // SAFETY: prctl and getppid are async-signal-safe and take no pointers.
    let result = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    // The parent may have died between fork and prctl; then nobody would ever kill us.
    if nix::unistd::getppid().as_raw() as u32 != parent {
        return Err(io::Error::other("parent exited during spawn"));
    }
    Ok(())
}

/// macOS has no parent-death signal: the guardian stands in for it.
#[cfg(target_os = "macos")]
fn die_with_parent(_parent: u32) -> io::Result<()> {
    Ok(())
}

impl Tree {
    /// The tree of a child started after [`prepare`]: the group it leads.
    pub fn adopt(child: &tokio::process::Child) -> io::Result<Tree> {
        let pid = child
            .id()
            .ok_or_else(|| io::Error::other("the child has already been reaped"))?;
        Ok(Tree {
            pgid: Pid::from_raw(pid as i32),
        })
    }

    /// The number the guardian and the records on disk know the tree by.
    pub fn id(&self) -> i32 {
        self.pgid.as_raw()
    }

    /// Asks every process of the tree to stop (SIGTERM). `true`: asked, so give it a grace
    /// period before [`Tree::kill`].
    pub fn ask_to_stop(&self) -> bool {
        killpg(self.pgid, Signal::SIGTERM).is_ok()
    }

    /// Kills every process of the tree at once (SIGKILL).
    pub fn kill(&self) {
        let _ = killpg(self.pgid, Signal::SIGKILL);
    }

    /// Whether any process of the tree is still there (zombies included).
    pub fn is_alive(&self) -> bool {
        killpg(self.pgid, None).is_ok()
    }
}

/// How a process ended: its exit code, or the signal that ended it.
pub fn exit_of(status: ExitStatus) -> (Option<i32>, Option<i32>) {
    (status.code(), status.signal())
}

/// The name of a signal number (`SIGKILL`), where it has one.
pub fn signal_name(signal: i32) -> Option<&'static str> {
    Signal::try_from(signal).ok().map(Signal::as_str)
}

/// Whether a process with this pid exists.
pub fn exists(pid: u32) -> bool {
    kill(Pid::from_raw(pid as i32), None).is_ok()
}

/// Starts `program args` detached from us: in a new session (so the terminal or editor that
/// started us cannot signal it), with stdin from `/dev/null`, stdout and stderr appended to
/// `log` (created owner-only), and `env` added to our environment. It is meant to outlive us: no
/// parent-death signal, and a thread reaps it should it exit first. Returns its pid.
pub fn start_detached(
    program: &Path,
    args: &[OsString],
    env: &[(OsString, OsString)],
    log: &Path,
) -> io::Result<u32> {
    let log_file = crate::files::append_private(log)?;
    #[allow(clippy::disallowed_methods)] // a detached `serve` is started here, not by a backend
    let mut command = std::process::Command::new(program);
    command
        .args(args)
        .envs(env.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file);
    // SAFETY: the closure runs between fork and exec and only calls setsid, which is
    // async-signal-safe.
    unsafe {
        command.pre_exec(|| nix::unistd::setsid().map(drop).map_err(io::Error::from));
    }
    let mut child = command.spawn()?;
    let pid = child.id();
    std::thread::spawn(move || child.wait());
    Ok(pid)
}

/// App packages with redirected files are a Windows matter: never in one here.
pub fn app_package() -> Option<String> {
    None
}

/// The guardian's pipe: the groups of this run, one line each as they come and go.
pub struct Guardian {
    pipe: std::process::ChildStdin,
}

impl Guardian {
    /// Starts `<exe> <arg>`, which holds the other end of a pipe and kills every group it was
    /// told of when that pipe closes (or, on macOS, when this process exits).
    pub fn start(exe: &Path, arg: &str) -> io::Result<Guardian> {
        #[allow(clippy::disallowed_methods)] // the guardian is ours, not a backend
        let mut child = std::process::Command::new(exe)
            .arg(arg)
            .env(PARENT_ENV, std::process::id().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .process_group(0)
            .spawn()?;
        let pipe = child.stdin.take().expect("stdin was piped");
        // The guardian outlives us by design; it exits on its own when our end of the pipe
        // closes.
        std::thread::spawn(move || child.wait());
        Ok(Guardian { pipe })
    }

    /// Tells the guardian a tree was added (`true`) or is gone.
    pub fn tell(&mut self, tree: i32, added: bool) {
        let sign = if added { '+' } else { '-' };
        let _ = writeln!(self.pipe, "{sign}{tree}");
    }
}

/// The pid of the process a guardian watches, in its environment.
const PARENT_ENV: &str = "SWITCHBOARD_GUARDED_PID";

/// The guardian's main loop: reads `+PGID`/`-PGID` lines until end of input (or, on macOS, until
/// the process it guards exits), then kills every group still listed (SIGTERM, a short grace,
/// SIGKILL).
pub fn run_guardian() {
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: ignoring a signal installs no handler code.
        let _ = unsafe { nix::sys::signal::signal(signal, nix::sys::signal::SigHandler::SigIgn) };
    }
    let groups = std::sync::Arc::new(std::sync::Mutex::new(BTreeSet::new()));
    let (ended, end) = std::sync::mpsc::channel::<()>();
    let reader = {
        let (groups, ended) = (groups.clone(), ended.clone());
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                let (sign, number) = line.split_at(line.len().min(1));
                let mut groups = groups
                    .lock()
                    .expect("the guardian's lock is never poisoned");
                match (sign, number.parse::<i32>()) {
                    ("+", Ok(pgid)) if pgid > 1 => groups.insert(pgid),
                    ("-", Ok(pgid)) => groups.remove(&pgid),
                    _ => false,
                };
            }
            let _ = ended.send(());
        })
    };
    if let Some(parent) = std::env::var(PARENT_ENV)
        .ok()
        .and_then(|pid| pid.parse().ok())
    {
        watch_parent(parent, ended);
    }
    let _ = end.recv();
    drop(reader);
    let groups: Vec<Pid> = groups
        .lock()
        .expect("the guardian's lock is never poisoned")
        .iter()
        .map(|&pgid| Pid::from_raw(pgid))
        .collect();
    for &pgid in &groups {
        let _ = killpg(pgid, Signal::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    while groups.iter().any(|&pgid| killpg(pgid, None).is_ok()) && Instant::now() < deadline {
        std::thread::sleep(GROUP_POLL);
    }
    for &pgid in &groups {
        let _ = killpg(pgid, Signal::SIGKILL);
    }
}

/// Linux: the pipe's end is the parent's death (the leaders also have their parent-death
/// signal).
#[cfg(target_os = "linux")]
fn watch_parent(_parent: u32, _ended: std::sync::mpsc::Sender<()>) {}

/// macOS: a kqueue `NOTE_EXIT` on the parent ends the guardian's wait too, should the pipe's
/// end be held open by some other process.
#[cfg(target_os = "macos")]
fn watch_parent(parent: u32, ended: std::sync::mpsc::Sender<()>) {
    use nix::sys::event::{EvFlags, EventFilter, FilterFlag, KEvent, Kqueue};
    let Ok(queue) = Kqueue::new() else { return };
    let watch = KEvent::new(
        parent as usize,
        EventFilter::EVFILT_PROC,
        EvFlags::EV_ADD | EvFlags::EV_ONESHOT,
        FilterFlag::NOTE_EXIT,
        0,
        0,
    );
    if queue.kevent(&[watch], &mut [], None).is_err() {
        // The parent is gone already (ESRCH): the guard's work is due now.
        let _ = ended.send(());
        return;
    }
    std::thread::spawn(move || {
        let mut events = [KEvent::new(
            0,
            EventFilter::EVFILT_PROC,
            EvFlags::empty(),
            FilterFlag::empty(),
            0,
            0,
        )];
        if queue.kevent(&[], &mut events, None).is_ok() {
            let _ = ended.send(());
        }
    });
}

/// Kills the processes of trees recorded by runs that are no longer alive, listed in the
/// record files of `records`, and removes those records. A record's name is `PID-START` of the
/// run that wrote it; only processes whose environment carries `marker_env=<that name>` are
/// touched, so a reused group number never hits a stranger.
pub fn reap_stale(records: &Path, marker_env: &str) -> Vec<u32> {
    let mut killed = Vec::new();
    let Ok(entries) = std::fs::read_dir(records) else {
        return killed;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((pid, start)) = name.split_once('-') else {
            continue;
        };
        let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else {
            continue;
        };
        if inspect::start_time(pid) == Some(start) {
            continue;
        }
        let marker = format!("{marker_env}={name}");
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        for pgid in text
            .lines()
            .filter_map(|line| line.trim().parse::<i32>().ok())
        {
            for member in inspect::processes_in_group(pgid) {
                let marked = inspect::environment(member)
                    .is_some_and(|environment| environment.contains(&marker));
                if marked && kill(Pid::from_raw(member as i32), Signal::SIGKILL).is_ok() {
                    killed.push(member);
                }
            }
        }
        let _ = std::fs::remove_file(entry.path());
    }
    killed
}
