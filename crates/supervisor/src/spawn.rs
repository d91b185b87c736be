//! The only place that creates backend processes.
//!
//! Every backend runs as a process tree of its own (`platform::process::Tree`: a process group
//! on Unix, a Job Object on Windows). A stop closes stdin, waits a grace period, asks the whole
//! tree to stop (SIGTERM on Unix; Windows has no such request for a windowless process), waits
//! again, then kills the tree and reaps the leader. On Unix, trees are recorded in the runtime
//! directory so that a later run can reap what a run that died left behind, and a guardian
//! process kills every recorded tree the moment Switchboard itself disappears; on Windows the
//! system does both, closing each job (and so killing its processes) when Switchboard ends.
//!
//! A backend with a sandbox starts in it (`platform::sandbox`), with only `PATH`, `HOME`, the
//! locale and its own `env` for an environment; one whose sandbox this system cannot enforce in
//! full does not start, unless its config allows it to run with what can be enforced.

// This module is the one place allowed to create processes (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::Duration;

use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use crate::status::ExitDescription;
use platform::process::{self as os, Guardian, Tree};
use platform::sandbox::{self, Confinement, Enforcement, Rules};

/// Environment variable set on every backend so that a later run can tell our orphans apart.
pub const RUN_ID_ENV: &str = "SWITCHBOARD_RUN_ID";

/// What to start for one backend.
pub(crate) struct SpawnSpec<'a> {
    pub(crate) backend: &'a str,
    pub(crate) command: &'a str,
    pub(crate) args: &'a [String],
    pub(crate) env: &'a BTreeMap<String, String>,
    pub(crate) cwd: Option<&'a Path>,
    pub(crate) sandbox: Option<SandboxSpec<'a>>,
}

/// The sandbox a backend starts in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SandboxSpec<'a> {
    pub(crate) rules: Rules<'a>,
    /// Whether a sandbox this system cannot enforce in full keeps the backend from starting.
    pub(crate) required: bool,
}

/// A backend's pipes, handed to the connection and the stderr reader.
pub(crate) struct Pipes {
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
    pub(crate) stderr: ChildStderr,
}

/// Why a backend could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpawnError {
    #[error(
        "command `{command}` was not found on PATH ({path}){}",
        platform::command::install_advice(command)
    )]
    NotFound { command: String, path: String },
    #[error("could not start `{command}`: {source}")]
    Io {
        command: String,
        source: std::io::Error,
    },
    #[error(
        "not started: its sandbox cannot be enforced here, because {shortfalls}; run it on a \
         system that can, or set `required = false` in its sandbox to run it with what this one \
         can enforce"
    )]
    SandboxUnavailable { shortfalls: String },
    #[error("could not start `{command}` in its sandbox: {source}")]
    Sandbox {
        command: String,
        source: std::io::Error,
    },
    #[error("switchboard is shutting down")]
    ShuttingDown,
}

/// A running backend process and its tree.
///
/// Dropping it without [`BackendProcess::shut_down`] kills the whole tree at once, so a task
/// that panics still leaves nothing behind.
pub(crate) struct BackendProcess {
    child: Child,
    pid: u32,
    tree: Tree,
    groups: Arc<ProcessGroups>,
    exit: Option<ExitDescription>,
}

/// Starts a backend as a process tree of its own with piped stdio (and, on Windows, no console
/// window).
pub(crate) async fn spawn_backend(
    spec: &SpawnSpec<'_>,
    groups: &Arc<ProcessGroups>,
) -> Result<(BackendProcess, Pipes), SpawnError> {
    if groups.is_closed() {
        return Err(SpawnError::ShuttingDown);
    }
    let path = spec
        .env
        .get("PATH")
        .map(OsString::from)
        .unwrap_or_else(platform::command::search_path);
    let resolved =
        platform::command::resolve(spec.command, &path).ok_or_else(|| SpawnError::NotFound {
            command: spec.command.to_owned(),
            path: path.to_string_lossy().into_owned(),
        })?;
    let confinement = match &spec.sandbox {
        Some(sandbox) => confine(spec, sandbox, &resolved.program, &path)?,
        None => None,
    };
    let bus = spec
        .sandbox
        .as_ref()
        .is_some_and(|sandbox| sandbox.rules.bus);
    let sandboxed = confinement.is_some();
    let mut command = tokio::process::Command::new(&resolved.program);
    if let Some(confinement) = confinement {
        // Only PATH, HOME and the locale of our own environment; the config's `env` (below) gives
        // the server what else it needs.
        command
            .env_clear()
            .envs(std::env::vars_os().filter(|(name, _)| sandbox::kept_variable(name, bus)));
        confinement.install(&mut command);
    }
    command
        .args(&resolved.leading_args)
        .args(spec.args)
        .env("PATH", &path)
        .envs(spec.env)
        .env(RUN_ID_ENV, groups.run_id())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(false);
    if let Some(cwd) = spec.cwd {
        command.current_dir(cwd);
    }
    os::prepare(&mut command);
    let io_error = |source| match sandboxed {
        true => SpawnError::Sandbox {
            command: spec.command.to_owned(),
            source,
        },
        false => SpawnError::Io {
            command: spec.command.to_owned(),
            source,
        },
    };
    let groups = groups.clone();
    let started = on_fork_thread(move || start(command, &groups))
        .await
        .map_err(io_error)?;
    let (process, pipes) = started.ok_or(SpawnError::ShuttingDown)?;
    tracing::debug!(
        backend = spec.backend,
        pid = process.pid,
        program = %resolved.program.display(),
        "spawned"
    );
    Ok((process, pipes))
}

/// Starts `command` and takes its tree into `groups` at once, so that no moment passes in which
/// the guardian does not know it; `None` once `groups` is closed.
fn start(
    mut command: tokio::process::Command,
    groups: &Arc<ProcessGroups>,
) -> io::Result<Option<(BackendProcess, Pipes)>> {
    if groups.is_closed() {
        return Ok(None);
    }
    let mut child = command.spawn()?;
    let tree = match Tree::adopt(&child) {
        Ok(tree) => tree,
        Err(error) => {
            let _ = child.start_kill();
            return Err(error);
        }
    };
    let pid = child.id().expect("a child that was just spawned has a pid");
    groups.add(tree.id());
    let stdout = child.stdout.take().expect("stdout was piped");
    platform::pipes::widen_output(&stdout);
    let pipes = Pipes {
        stdin: child.stdin.take().expect("stdin was piped"),
        stdout,
        stderr: child.stderr.take().expect("stderr was piped"),
    };
    let process = BackendProcess {
        child,
        pid,
        tree,
        groups: groups.clone(),
        exit: None,
    };
    Ok(Some((process, pipes)))
}

/// Runs `job`, which starts a process, on one of the threads that start every backend, in the
/// caller's runtime; the caller waits without holding up its thread.
///
/// A start waits until the child has called `exec`, a millisecond or more: on the runtime's
/// thread, where every other backend's handshake runs, starting ten backends would hold up all
/// their handshakes until the last one had started. And the threads live as long as Switchboard
/// does, because a child's parent-death signal (Linux) fires when the thread that started it
/// ends, not the process: an idle pool thread that ended would kill what it started. If the
/// threads cannot be had, `job` runs here.
async fn on_fork_thread<T: Send + 'static>(
    job: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    let runtime = tokio::runtime::Handle::current();
    let (answer, answered) = tokio::sync::oneshot::channel();
    // A start given up by its caller drops what it started, which kills it.
    let job: ForkJob = Box::new(move || {
        let _runtime = runtime.enter();
        let _ = answer.send(job());
    });
    match fork_threads() {
        Some(jobs) => {
            if let Err(mpsc::SendError(job)) = jobs.send(job) {
                job();
            }
        }
        None => job(),
    }
    answered
        .await
        .unwrap_or_else(|_| Err(io::Error::other("the thread starting it failed")))
}

type ForkJob = Box<dyn FnOnce() + Send>;

/// The queue of the threads that start backends (see [`on_fork_thread`]): one per core, up to
/// four, since a start mostly waits for the child's `exec`.
fn fork_threads() -> Option<&'static mpsc::Sender<ForkJob>> {
    static JOBS: OnceLock<Option<mpsc::Sender<ForkJob>>> = OnceLock::new();
    JOBS.get_or_init(|| {
        let (jobs, queue) = mpsc::channel::<ForkJob>();
        let queue = Arc::new(Mutex::new(queue));
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        let mut started = 0;
        for _ in 0..threads {
            let queue = queue.clone();
            let thread = std::thread::Builder::new()
                .name("backend-start".to_owned())
                .spawn(move || {
                    loop {
                        let job = queue.lock().expect("the start queue's lock").recv();
                        // The sender lives in a static: the queue never closes.
                        let Ok(job) = job else { return };
                        // A panic must not end the thread, and with it what it started.
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    }
                });
            started += usize::from(thread.is_ok());
        }
        (started > 0).then_some(jobs)
    })
    .as_ref()
}

/// The sandbox `spec` starts in, made ready for `program`; `None` when it runs without one (none
/// is built for this system and its config allows that). Refused when this system cannot
/// enforce all of a required sandbox.
fn confine(
    spec: &SpawnSpec<'_>,
    sandbox: &SandboxSpec<'_>,
    program: &Path,
    search_path: &OsStr,
) -> Result<Option<Confinement>, SpawnError> {
    let assessment = sandbox::assess(&sandbox.rules);
    match assessment.enforcement(sandbox.required) {
        Enforcement::Full => {}
        Enforcement::Refused => {
            return Err(SpawnError::SandboxUnavailable {
                shortfalls: assessment.shortfalls.join("; "),
            });
        }
        Enforcement::Partial | Enforcement::Unenforced => tracing::warn!(
            backend = spec.backend,
            shortfalls = %assessment.shortfalls.join("; "),
            "starting without all of its sandbox, as its config allows"
        ),
    }
    if !assessment.applicable {
        return Ok(None);
    }
    let own_runtime = platform::dirs::runtime_dir();
    Confinement::prepare(
        &sandbox.rules,
        &assessment,
        program,
        search_path,
        &own_runtime,
    )
    .map(Some)
    .map_err(|source| SpawnError::Sandbox {
        command: spec.command.to_owned(),
        source,
    })
}

impl BackendProcess {
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Waits until the leader exits. Cancel-safe.
    pub(crate) async fn wait(&mut self) -> ExitDescription {
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

    /// Ends the whole tree: waits `grace` for the leader to exit on its own (its stdin should
    /// be closed already), asks the tree to stop and waits `grace` again where the system has
    /// such a request (SIGTERM), then kills what is left, and reaps.
    pub(crate) async fn shut_down(mut self, grace: Duration) -> ExitDescription {
        let leader_exited = tokio::time::timeout(grace, self.wait()).await.is_ok();
        if self.tree.is_alive() {
            if self.tree.ask_to_stop() {
                let deadline = tokio::time::Instant::now() + grace;
                if !leader_exited {
                    let _ = tokio::time::timeout_at(deadline, self.wait()).await;
                }
                while self.tree.is_alive() && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(TREE_POLL).await;
                }
            }
            if self.tree.is_alive() {
                self.tree.kill();
            }
        }
        let exit = self.wait().await;
        self.groups.remove(self.tree.id());
        exit
    }
}

impl Drop for BackendProcess {
    fn drop(&mut self) {
        if self.groups.contains(self.tree.id()) {
            self.tree.kill();
            let _ = self.child.start_kill();
            self.groups.remove(self.tree.id());
        }
    }
}

const TREE_POLL: Duration = Duration::from_millis(10);

/// The process trees this run has started (each a process group where the system has them),
/// recorded in the runtime directory's `groups` and told to a guardian that kills them if
/// Switchboard dies without stopping them (see `platform::process`).
pub struct ProcessGroups {
    run_id: String,
    record: Option<PathBuf>,
    inner: Mutex<GroupsInner>,
}

struct GroupsInner {
    groups: BTreeSet<i32>,
    guardian: Option<Guardian>,
    closed: bool,
}

impl ProcessGroups {
    /// Reaps trees left by earlier runs that died, then records this run in `runtime_dir`.
    ///
    /// With `guardian_exe` (a Switchboard binary), also starts `<exe> __guardian`, which kills
    /// every recorded tree when this process ends.
    pub fn open(
        runtime_dir: &Path,
        guardian_exe: Option<&Path>,
    ) -> std::io::Result<Arc<ProcessGroups>> {
        let records = runtime_dir.join("groups");
        platform::files::create_private_dir(&records)?;
        platform::files::restrict_to_owner(runtime_dir)?;
        let reaped = os::reap_stale(&records, RUN_ID_ENV);
        if !reaped.is_empty() {
            let pids: Vec<String> = reaped.iter().map(u32::to_string).collect();
            tracing::warn!(
                pids = %pids.join(", "),
                "killed backend processes left behind by an earlier run"
            );
        }
        let own_pid = std::process::id();
        let run_id = format!(
            "{own_pid}-{}",
            os::inspect::start_time(own_pid).unwrap_or(0)
        );
        let guardian = guardian_exe
            .map(|exe| Guardian::start(exe, GUARDIAN_ARG))
            .transpose()?;
        let groups = ProcessGroups {
            record: Some(records.join(&run_id)),
            run_id,
            inner: Mutex::new(GroupsInner {
                groups: BTreeSet::new(),
                guardian,
                closed: false,
            }),
        };
        groups.write_record(&BTreeSet::new());
        Ok(Arc::new(groups))
    }

    /// Process groups recorded nowhere on disk and told to no guardian (tests, benchmarks).
    pub fn in_memory() -> Arc<ProcessGroups> {
        Arc::new(ProcessGroups {
            run_id: format!("{}-memory", std::process::id()),
            record: None,
            inner: Mutex::new(GroupsInner {
                groups: BTreeSet::new(),
                guardian: None,
                closed: false,
            }),
        })
    }

    pub(crate) fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Refuses every later spawn; called when shutdown begins.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
    }

    fn is_closed(&self) -> bool {
        self.lock().closed
    }

    fn contains(&self, tree: i32) -> bool {
        self.lock().groups.contains(&tree)
    }

    fn add(&self, tree: i32) {
        self.change(tree, true);
    }

    fn remove(&self, tree: i32) {
        self.change(tree, false);
    }

    fn change(&self, tree: i32, added: bool) {
        let groups = {
            let mut inner = self.lock();
            let changed = match added {
                true => inner.groups.insert(tree),
                false => inner.groups.remove(&tree),
            };
            if !changed {
                return;
            }
            if let Some(guardian) = inner.guardian.as_mut() {
                guardian.tell(tree, added);
            }
            inner.groups.clone()
        };
        self.write_record(&groups);
    }

    fn write_record(&self, groups: &BTreeSet<i32>) {
        let Some(record) = &self.record else { return };
        let mut text = String::new();
        for tree in groups {
            text.push_str(&tree.to_string());
            text.push('\n');
        }
        if let Err(error) = platform::atomic::write_private_record(record, text.as_bytes()) {
            tracing::warn!(%error, path = %record.display(), "could not record process groups");
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GroupsInner> {
        self.inner
            .lock()
            .expect("process groups lock is never poisoned")
    }
}

impl Drop for ProcessGroups {
    fn drop(&mut self) {
        if let Some(record) = &self.record {
            let _ = std::fs::remove_file(record);
        }
    }
}

/// The hidden command line argument that runs the guardian.
pub(crate) const GUARDIAN_ARG: &str = "__guardian";

/// The guardian's main loop (see `platform::process`).
pub fn run_guardian() {
    os::run_guardian();
}

/// Starts `program args` detached from us, meant to outlive us, its output appended to `log`
/// (see `platform::process::start_detached`). Returns its pid.
pub fn spawn_detached(
    program: &Path,
    args: &[OsString],
    env: &[(OsString, OsString)],
    log: &Path,
) -> std::io::Result<u32> {
    os::start_detached(program, args, env, log)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_well_known_command_says_what_to_install() {
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
