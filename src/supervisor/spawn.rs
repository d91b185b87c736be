//! The only place that creates processes.
//!
//! Every backend runs in its own process group. A stop closes stdin, waits a grace period,
//! sends SIGTERM to the whole group, then SIGKILL, and reaps the leader. Groups are recorded in the
//! runtime directory so that a later run can reap what a run that died left behind, and a guardian
//! process kills every recorded group the moment Switchboard itself disappears.

// This module is the one place allowed to create processes (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::io::{BufRead, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use crate::supervisor::status::ExitDescription;

/// The PATH used to find backend commands: the user's login-shell PATH followed by our own.
///
/// GUI apps do not inherit the login shell's PATH, so `npx`, `uvx` or a `node` installed by a
/// version manager would not be found without asking the shell once.
pub fn search_path() -> &'static OsStr {
    static SEARCH_PATH: OnceLock<OsString> = OnceLock::new();
    SEARCH_PATH.get_or_init(|| {
        let own = std::env::var_os("PATH").unwrap_or_default();
        let login = login_shell_path().unwrap_or_default();
        merge_paths(&login, &own)
    })
}

/// Finds `command` the way a shell would: a path with a slash is taken as it is, anything else
/// is looked up in `path`.
pub fn find_command(command: &str, path: &OsStr) -> Option<PathBuf> {
    if command.is_empty() {
        return None;
    }
    if command.contains('/') {
        let candidate = PathBuf::from(command);
        return is_executable(&candidate).then_some(candidate);
    }
    std::env::split_paths(path)
        .map(|dir| dir.join(command))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    match std::fs::metadata(path) {
        Ok(meta) => meta.is_file() && meta.permissions().mode() & 0o111 != 0,
        Err(_) => false,
    }
}

fn merge_paths(first: &OsStr, second: &OsStr) -> OsString {
    let mut seen = Vec::new();
    for dir in std::env::split_paths(first).chain(std::env::split_paths(second)) {
        if !dir.as_os_str().is_empty() && !seen.contains(&dir) {
            seen.push(dir);
        }
    }
    std::env::join_paths(seen).unwrap_or_default()
}

/// Asks the user's login shell for its PATH, bounded in time so a slow profile cannot stall start.
fn login_shell_path() -> Option<OsString> {
    let shell = std::env::var_os("SHELL").filter(|s| !s.is_empty())?;
    let mut child = std::process::Command::new(&shell)
        .args(["-l", "-c", "printf '%s' \"$PATH\""])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut out = Vec::new();
    std::io::Read::read_to_end(child.stdout.as_mut()?, &mut out).ok()?;
    let text = String::from_utf8(out).ok()?;
    let line = text.lines().last()?.trim();
    (!line.is_empty()).then(|| OsString::from(line))
}

/// Environment variable set on every backend so that a later run can tell our orphans apart.
pub const RUN_ID_ENV: &str = "SWITCHBOARD_RUN_ID";

/// What to start for one backend.
pub struct SpawnSpec<'a> {
    pub backend: &'a str,
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a BTreeMap<String, String>,
    pub cwd: Option<&'a Path>,
}

/// A backend's pipes, handed to the connection and the stderr reader.
pub struct Pipes {
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
}

/// What provides a well-known command, and the official page on installing it.
struct InstallHint {
    /// The commands it provides, by file name.
    commands: &'static [&'static str],
    /// What to install: `Node.js`, `uv`…
    provider: &'static str,
    url: &'static str,
}

/// The commands MCP servers are most often started with, and what to install to have them.
const INSTALL_HINTS: &[InstallHint] = &[
    InstallHint {
        commands: &["npx", "npm", "node"],
        provider: "Node.js",
        url: "https://nodejs.org/en/download",
    },
    InstallHint {
        commands: &["uvx", "uv"],
        provider: "uv",
        url: "https://docs.astral.sh/uv/getting-started/installation/",
    },
    InstallHint {
        commands: &["bunx", "bun"],
        provider: "Bun",
        url: "https://bun.sh/docs/installation",
    },
    InstallHint {
        commands: &["pnpm", "pnpx"],
        provider: "pnpm",
        url: "https://pnpm.io/installation",
    },
    InstallHint {
        commands: &["pipx"],
        provider: "pipx",
        url: "https://pipx.pypa.io/stable/installation/",
    },
    InstallHint {
        commands: &["docker"],
        provider: "Docker",
        url: "https://docs.docker.com/get-started/get-docker/",
    },
    InstallHint {
        commands: &["deno"],
        provider: "Deno",
        url: "https://docs.deno.com/runtime/getting_started/installation/",
    },
    InstallHint {
        commands: &["python3", "python"],
        provider: "Python",
        url: "https://www.python.org/downloads/",
    },
];

/// What to add to a message saying `command` cannot be found: `; install uv: https://…` for a
/// well-known command (known by its file name, so `/opt/bin/uvx` is one too), nothing otherwise.
pub fn install_advice(command: &str) -> String {
    let name = Path::new(command)
        .file_name()
        .and_then(OsStr::to_str)
        .unwrap_or(command);
    INSTALL_HINTS
        .iter()
        .find(|hint| hint.commands.contains(&name))
        .map_or_else(String::new, |hint| {
            format!("; install {}: {}", hint.provider, hint.url)
        })
}

/// Why a backend could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error(
        "command `{command}` was not found on PATH ({path}){}",
        install_advice(command)
    )]
    NotFound { command: String, path: String },
    #[error("could not start `{command}`: {source}")]
    Io {
        command: String,
        source: std::io::Error,
    },
    #[error("switchboard is shutting down")]
    ShuttingDown,
}

/// A running backend process, leader of its own process group.
///
/// Dropping it without [`BackendProcess::shut_down`] kills the whole group at once, so a task
/// that panics still leaves nothing behind.
pub struct BackendProcess {
    child: Child,
    pid: u32,
    pgid: Pid,
    groups: Arc<GroupRegistry>,
    exit: Option<ExitDescription>,
}

/// Starts a backend in a new process group with piped stdio.
pub fn spawn_backend(
    spec: &SpawnSpec<'_>,
    groups: &Arc<GroupRegistry>,
) -> Result<(BackendProcess, Pipes), SpawnError> {
    if groups.is_closed() {
        return Err(SpawnError::ShuttingDown);
    }
    let path = spec
        .env
        .get("PATH")
        .map(OsString::from)
        .unwrap_or_else(|| search_path().to_owned());
    let program = find_command(spec.command, &path).ok_or_else(|| SpawnError::NotFound {
        command: spec.command.to_owned(),
        path: path.to_string_lossy().into_owned(),
    })?;
    let mut command = tokio::process::Command::new(&program);
    command
        .args(spec.args)
        .env("PATH", &path)
        .envs(spec.env)
        .env(RUN_ID_ENV, groups.run_id())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(false);
    if let Some(cwd) = spec.cwd {
        command.current_dir(cwd);
    }
    let parent = std::process::id();
    // SAFETY: the closure runs between fork and exec and only makes async-signal-safe calls.
    unsafe {
        command.pre_exec(move || die_with_parent(parent));
    }
    let io_error = |source| SpawnError::Io {
        command: spec.command.to_owned(),
        source,
    };
    let mut child = command.spawn().map_err(io_error)?;
    let pid = child.id().expect("a child that was just spawned has a pid");
    let pgid = Pid::from_raw(pid as i32);
    groups.add(pgid);
    let pipes = Pipes {
        stdin: child.stdin.take().expect("stdin was piped"),
        stdout: child.stdout.take().expect("stdout was piped"),
        stderr: child.stderr.take().expect("stderr was piped"),
    };
    tracing::debug!(backend = spec.backend, pid, program = %program.display(), "spawned");
    Ok((
        BackendProcess {
            child,
            pid,
            pgid,
            groups: groups.clone(),
            exit: None,
        },
        pipes,
    ))
}

/// Asks the kernel to SIGKILL this process when the thread that spawned it dies.
fn die_with_parent(parent: u32) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl and getppid are async-signal-safe and take no pointers.
        let result = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
        if result != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // The parent may have died between fork and prctl; then nobody would ever kill us.
        if nix::unistd::getppid().as_raw() as u32 != parent {
            return Err(std::io::Error::other("parent exited during spawn"));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = parent;
    Ok(())
}

impl BackendProcess {
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Waits until the leader exits. Cancel-safe.
    pub async fn wait(&mut self) -> ExitDescription {
        if let Some(exit) = &self.exit {
            return exit.clone();
        }
        let exit = match self.child.wait().await {
            Ok(status) => ExitDescription::from_status(status),
            Err(error) => {
                tracing::warn!(pid = self.pid, %error, "waiting for a backend failed");
                ExitDescription {
                    code: None,
                    signal: None,
                    disconnected: None,
                }
            }
        };
        self.exit = Some(exit.clone());
        exit
    }

    /// Ends the whole group: waits `grace` for the leader to exit on its own (its stdin should be
    /// closed already), sends SIGTERM to the group, waits `grace` again, then SIGKILL, and reaps.
    pub async fn shut_down(mut self, grace: Duration) -> ExitDescription {
        let leader_exited = tokio::time::timeout(grace, self.wait()).await.is_ok();
        if group_alive(self.pgid) {
            let _ = killpg(self.pgid, Signal::SIGTERM);
            let deadline = tokio::time::Instant::now() + grace;
            if !leader_exited {
                let _ = tokio::time::timeout_at(deadline, self.wait()).await;
            }
            while group_alive(self.pgid) && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(GROUP_POLL).await;
            }
            if group_alive(self.pgid) {
                let _ = killpg(self.pgid, Signal::SIGKILL);
            }
        }
        let exit = self.wait().await;
        self.groups.remove(self.pgid);
        exit
    }
}

impl Drop for BackendProcess {
    fn drop(&mut self) {
        if self.groups.contains(self.pgid) {
            let _ = killpg(self.pgid, Signal::SIGKILL);
            let _ = self.child.start_kill();
            self.groups.remove(self.pgid);
        }
    }
}

const GROUP_POLL: Duration = Duration::from_millis(10);

fn group_alive(pgid: Pid) -> bool {
    killpg(pgid, None).is_ok()
}

/// The process groups this run has started, recorded in the runtime directory and mirrored to a
/// guardian process that kills them if Switchboard dies without stopping them.
pub struct GroupRegistry {
    run_id: String,
    record: Option<PathBuf>,
    inner: Mutex<RegistryInner>,
}

struct RegistryInner {
    groups: BTreeSet<i32>,
    guardian: Option<std::process::ChildStdin>,
    closed: bool,
}

impl GroupRegistry {
    /// Reaps groups left by earlier runs that died, then records this run in `runtime_dir`.
    ///
    /// With `guardian_exe` (a Switchboard binary), also starts `<exe> __guardian`, which holds
    /// the other end of a pipe and kills every recorded group when that pipe closes.
    pub fn open(
        runtime_dir: &Path,
        guardian_exe: Option<&Path>,
    ) -> std::io::Result<Arc<GroupRegistry>> {
        let records = runtime_dir.join("groups");
        crate::dirs::create_private_dir(&records)?;
        std::fs::set_permissions(runtime_dir, std::fs::Permissions::from_mode(0o700))?;
        let reaped = reap_stale_groups(&records);
        if !reaped.is_empty() {
            tracing::warn!(
                ?reaped,
                "killed backend processes left behind by an earlier run"
            );
        }
        let own_pid = std::process::id();
        let run_id = format!("{own_pid}-{}", process_start_time(own_pid).unwrap_or(0));
        let guardian = guardian_exe.map(start_guardian).transpose()?;
        let registry = GroupRegistry {
            record: Some(records.join(&run_id)),
            run_id,
            inner: Mutex::new(RegistryInner {
                groups: BTreeSet::new(),
                guardian,
                closed: false,
            }),
        };
        registry.write_record(&BTreeSet::new());
        Ok(Arc::new(registry))
    }

    /// A registry that records nothing on disk and starts no guardian (tests, benchmarks).
    pub fn in_memory() -> Arc<GroupRegistry> {
        Arc::new(GroupRegistry {
            run_id: format!("{}-memory", std::process::id()),
            record: None,
            inner: Mutex::new(RegistryInner {
                groups: BTreeSet::new(),
                guardian: None,
                closed: false,
            }),
        })
    }

    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Refuses every later spawn; called when shutdown begins.
    pub fn close(&self) {
        self.lock().closed = true;
    }

    fn is_closed(&self) -> bool {
        self.lock().closed
    }

    fn contains(&self, pgid: Pid) -> bool {
        self.lock().groups.contains(&pgid.as_raw())
    }

    fn add(&self, pgid: Pid) {
        self.change(pgid, '+');
    }

    fn remove(&self, pgid: Pid) {
        self.change(pgid, '-');
    }

    fn change(&self, pgid: Pid, sign: char) {
        let groups = {
            let mut inner = self.lock();
            let changed = match sign {
                '+' => inner.groups.insert(pgid.as_raw()),
                _ => inner.groups.remove(&pgid.as_raw()),
            };
            if !changed {
                return;
            }
            if let Some(guardian) = inner.guardian.as_mut() {
                let _ = writeln!(guardian, "{sign}{}", pgid.as_raw());
            }
            inner.groups.clone()
        };
        self.write_record(&groups);
    }

    fn write_record(&self, groups: &BTreeSet<i32>) {
        let Some(record) = &self.record else { return };
        let mut text = String::new();
        for pgid in groups {
            text.push_str(&pgid.to_string());
            text.push('\n');
        }
        let temporary = record.with_extension("tmp");
        let written = crate::dirs::create_private_file(&temporary)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .and_then(|()| std::fs::rename(&temporary, record));
        if let Err(error) = written {
            tracing::warn!(%error, path = %record.display(), "could not record process groups");
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RegistryInner> {
        self.inner
            .lock()
            .expect("group registry lock is never poisoned")
    }
}

impl Drop for GroupRegistry {
    fn drop(&mut self) {
        if let Some(record) = &self.record {
            let _ = std::fs::remove_file(record);
        }
    }
}

fn start_guardian(exe: &Path) -> std::io::Result<std::process::ChildStdin> {
    let mut child = std::process::Command::new(exe)
        .arg(GUARDIAN_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .process_group(0)
        .spawn()?;
    let stdin = child.stdin.take().expect("stdin was piped");
    // The guardian outlives us by design; it exits on its own when our end of the pipe closes.
    std::thread::spawn(move || child.wait());
    Ok(stdin)
}

/// The hidden command line argument that runs [`run_guardian`].
pub const GUARDIAN_ARG: &str = "__guardian";

/// The guardian's main loop: reads `+PGID`/`-PGID` lines until end of input, then kills every
/// group still listed (SIGTERM, a short grace, SIGKILL).
pub fn run_guardian() {
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: ignoring a signal installs no handler code.
        let _ = unsafe { nix::sys::signal::signal(signal, nix::sys::signal::SigHandler::SigIgn) };
    }
    let mut groups = BTreeSet::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let (sign, number) = line.split_at(line.len().min(1));
        match (sign, number.parse::<i32>()) {
            ("+", Ok(pgid)) if pgid > 1 => groups.insert(pgid),
            ("-", Ok(pgid)) => groups.remove(&pgid),
            _ => false,
        };
    }
    let groups: Vec<Pid> = groups.into_iter().map(Pid::from_raw).collect();
    for &pgid in &groups {
        let _ = killpg(pgid, Signal::SIGTERM);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    while groups.iter().any(|&pgid| group_alive(pgid)) && std::time::Instant::now() < deadline {
        std::thread::sleep(GROUP_POLL);
    }
    for &pgid in &groups {
        let _ = killpg(pgid, Signal::SIGKILL);
    }
}

/// Kills the processes of groups recorded by runs that are no longer alive, and removes their
/// records. Only processes carrying that run's id in their environment are touched, so a reused
/// process-group number never hits a stranger.
pub fn reap_stale_groups(records: &Path) -> Vec<u32> {
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
        if process_start_time(pid) == Some(start) {
            continue;
        }
        let marker = format!("{RUN_ID_ENV}={name}");
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        for pgid in text
            .lines()
            .filter_map(|line| line.trim().parse::<i32>().ok())
        {
            for member in processes_in_group(pgid) {
                if process_has_env(member, &marker)
                    && kill(Pid::from_raw(member as i32), Signal::SIGKILL).is_ok()
                {
                    killed.push(member);
                }
            }
        }
        let _ = std::fs::remove_file(entry.path());
    }
    killed
}

/// The start time of a process in clock ticks since boot (field 22 of `/proc/PID/stat`).
fn process_start_time(pid: u32) -> Option<u64> {
    stat_fields(pid)?.get(19)?.parse().ok()
}

/// The fields of `/proc/PID/stat` after the command name (so index 0 is the state, field 3).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    Some(after_name.split_whitespace().map(str::to_owned).collect())
}

/// Every process whose process group is `pgid`.
pub fn processes_in_group(pgid: i32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            stat_fields(pid).is_some_and(|fields| {
                fields.get(2).and_then(|pgrp| pgrp.parse::<i32>().ok()) == Some(pgid)
                    && fields[0] != "Z"
            })
        })
        .collect()
}

/// The direct children of a process (of every one of its threads), from `/proc`; `None` where
/// that cannot be read (no `/proc`, or a kernel without `CONFIG_PROC_CHILDREN`).
pub fn children(pid: u32) -> Option<Vec<u32>> {
    let tasks = PathBuf::from(format!("/proc/{pid}/task"));
    let main_thread = pid.to_string();
    // The main thread's list is there for as long as the process is; another thread's may
    // vanish as that thread ends.
    let mut listed = std::fs::read_to_string(tasks.join(&main_thread).join("children")).ok()?;
    for thread in std::fs::read_dir(&tasks).ok()?.flatten() {
        if thread.file_name() != *main_thread {
            listed.push(' ');
            listed.push_str(
                &std::fs::read_to_string(thread.path().join("children")).unwrap_or_default(),
            );
        }
    }
    Some(
        listed
            .split_whitespace()
            .filter_map(|child| child.parse().ok())
            .collect(),
    )
}

/// A process's command line (program and arguments), from `/proc`; `None` where that cannot
/// be read or is empty (a process that has exited).
pub fn command_line(pid: u32) -> Option<Vec<String>> {
    let bytes = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    // Each argument ends with a NUL.
    let arguments = bytes.strip_suffix(&[0])?;
    Some(
        arguments
            .split(|&b| b == 0)
            .map(|argument| String::from_utf8_lossy(argument).into_owned())
            .collect(),
    )
}

/// A process's environment (`NAME=value` entries), from `/proc`; `None` where that cannot be
/// read or is empty (a process that has exited).
pub fn environment(pid: u32) -> Option<Vec<String>> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let entries = environ.strip_suffix(&[0])?;
    Some(
        entries
            .split(|&b| b == 0)
            .map(|entry| String::from_utf8_lossy(entry).into_owned())
            .collect(),
    )
}

fn process_has_env(pid: u32, entry: &str) -> bool {
    environment(pid).is_some_and(|environment| environment.iter().any(|item| item == entry))
}

/// Starts `program args` detached from us: in a new session (so the terminal or editor that
/// started us cannot signal it), with stdin from `/dev/null`, stdout and stderr appended to `log`
/// (created 0600), and `env` added to our environment. It is meant to outlive us: no parent-death
/// signal, and a thread reaps it should it exit first. Returns its pid.
pub fn spawn_detached(
    program: &Path,
    args: &[OsString],
    env: &[(OsString, OsString)],
    log: &Path,
) -> std::io::Result<u32> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let log_file = options.open(log)?;
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
        command.pre_exec(|| {
            nix::unistd::setsid()
                .map(drop)
                .map_err(std::io::Error::from)
        });
    }
    let mut child = command.spawn()?;
    let pid = child.id();
    std::thread::spawn(move || child.wait());
    Ok(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_well_known_command_says_what_to_install() {
        assert_eq!(
            install_advice("npx"),
            "; install Node.js: https://nodejs.org/en/download"
        );
        assert_eq!(
            install_advice("/opt/homebrew/bin/uvx"),
            "; install uv: https://docs.astral.sh/uv/getting-started/installation/"
        );
        assert_eq!(
            install_advice("python3"),
            "; install Python: https://www.python.org/downloads/"
        );
        assert_eq!(install_advice("mcp-server-of-my-own"), "");
        let missing = SpawnError::NotFound {
            command: "docker".to_owned(),
            path: "/usr/bin".to_owned(),
        };
        assert_eq!(
            missing.to_string(),
            "command `docker` was not found on PATH (/usr/bin); install Docker: \
             https://docs.docker.com/get-started/get-docker/"
        );
    }
}
