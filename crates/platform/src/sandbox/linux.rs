//! Sandboxes on Linux: a Landlock ruleset built before the server starts and entered between
//! fork and exec, and namespaces of its own (in a user namespace of its own when Switchboard may
//! not make them directly, as an unprivileged user): a mount namespace in which Switchboard's
//! runtime directory and, unless the server may reach the session bus, `$XDG_RUNTIME_DIR` are
//! covered by empty read-only folders, so that no socket there (Switchboard's own, the session
//! bus, which Landlock below ABI 9 cannot refuse a `connect` to) can be reached; and for a
//! server without a network, a network namespace.

use std::ffi::{CStr, OsStr};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
    RulesetAttr, RulesetCreatedAttr, RulesetError, Scope,
};

use super::{Assessment, Rules};

/// Caps the Landlock ABI Switchboard uses, to see what a kernel that offers less would do
/// (`0`: as if it had no Landlock). Unset, the kernel's own ABI is used.
pub(crate) const ABI_CEILING_ENV: &str = "SWITCHBOARD_LANDLOCK_ABI";

/// The newest Landlock ABI whose rights the rules use: files (ABI 1 to 5), TCP ports (4), and
/// scoped signals and abstract Unix sockets (6). A newer kernel enforces them just the same.
const NEWEST_USED: u32 = 6;

/// What every sandboxed server may read, and run programs from, to run at all: the system's
/// programs and libraries, its configuration (certificates, name service, time zones, locales),
/// what the kernel tells about the machine, and the sources of randomness. Not the rest of
/// `/proc`, where the environment of every process of the same user can be read (Landlock keeps
/// a sandboxed process from tracing others, not from reading that); the server's own entry there
/// is granted as it starts (see [`enter`]).
const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/loadavg",
    "/proc/uptime",
    "/proc/version",
    "/proc/filesystems",
    "/proc/sys",
    "/sys/devices/system/cpu",
    "/sys/fs/cgroup",
    "/run/systemd/resolve",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
];

/// What every sandboxed server may write: the null device, which programs write to routinely.
const SYSTEM_WRITE: &[&str] = &["/dev/null"];

/// `landlock_create_ruleset`'s flag that asks for the ABI version instead of a ruleset.
const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;

/// What this kernel can enforce of `rules`.
pub fn assess(rules: &Rules<'_>) -> Assessment {
    let abi = landlock_abi();
    let mut shortfalls = Vec::new();
    if abi == 0 {
        shortfalls.push(
            "this kernel offers no Landlock (it needs Linux 5.13 or later with Landlock among its \
             security modules, `lsm=landlock,…`), so no rule on files, ports or signals can be \
             enforced"
                .to_owned(),
        );
    } else {
        if abi < 3 {
            shortfalls.push(format!(
                "refusing to truncate files outside `write` needs Landlock ABI 3 (Linux 6.2); this \
                 kernel offers ABI {abi}"
            ));
        }
        if rules.network && abi < 4 {
            shortfalls.push(format!(
                "limiting TCP connections to `connect` needs Landlock ABI 4 (Linux 6.7); this \
                 kernel offers ABI {abi}"
            ));
        }
        if abi < 6 {
            shortfalls.push(format!(
                "keeping signals and abstract Unix sockets within the server's own processes \
                 needs Landlock ABI 6 (Linux 6.12); this kernel offers ABI {abi}"
            ));
        }
    }
    if let Some(why) = network_namespace_unavailable() {
        if !rules.network {
            shortfalls.push(format!(
                "`network = false` needs a network namespace of its own, and {why}"
            ));
        }
        shortfalls.push(format!(
            "keeping Switchboard's socket{} out of reach needs a mount namespace of its own, \
             and {why}",
            if rules.bus {
                ""
            } else {
                " and the session bus"
            }
        ));
    }
    Assessment {
        landlock_abi: (abi > 0).then_some(abi),
        shortfalls,
        applicable: true,
    }
}

/// What every sandboxed server may read and may write on this system, to run at all.
pub fn system_grants() -> (Vec<PathBuf>, Vec<PathBuf>) {
    let paths = |list: &[&str]| -> Vec<PathBuf> { list.iter().map(PathBuf::from).collect() };
    (paths(SYSTEM_READ), paths(SYSTEM_WRITE))
}

/// The installations `program` runs from, beyond the system's folders: for the program as found
/// and as its links resolve, and for the interpreter its `#!` line names (found in
/// `search_path` when that is `env NAME`), the Node.js package folder it is in, or the prefix of
/// its `bin` folder when that prefix holds a `lib` (a virtual environment, a version manager's
/// Node.js or Python), else its own folder.
pub fn program_roots(program: &Path, search_path: &OsStr) -> Vec<PathBuf> {
    let mut programs = vec![program.to_path_buf()];
    if let Some(interpreter) = interpreter(program, search_path) {
        programs.push(interpreter);
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    for program in programs {
        let resolved = std::fs::canonicalize(&program).ok();
        for path in std::iter::once(program).chain(resolved) {
            let Some(root) = installation(&path) else {
                continue;
            };
            // A program that sits in a folder holding far more than one installation (the
            // home folder, the root, an ancestor of either, Switchboard's own) is granted alone.
            let root = match holds_more_than_an_installation(&root) {
                true => path,
                false => root,
            };
            let granted = SYSTEM_READ.iter().any(|system| root.starts_with(system));
            if !granted && !roots.contains(&root) {
                roots.push(root);
            }
        }
    }
    roots
}

/// A Landlock ruleset and a network namespace, made ready before a server starts and entered by
/// it between fork and exec.
pub struct Confinement {
    ruleset: Option<Ruleset>,
    namespaces: Option<Namespaces>,
}

/// The namespaces a sandboxed server enters, made ready before the fork.
struct Namespaces {
    /// Its user and group, mapped to themselves in a user namespace, should one be needed.
    maps: IdentityMaps,
    /// Whether it gets a network namespace (no network) too.
    network: bool,
    /// The folders covered with an empty, read-only one, as paths for the system calls.
    hidden: Vec<std::ffi::CString>,
}

/// A Landlock ruleset's descriptor, and the rights the process that enters it gets on its own
/// entry in `/proc`.
struct Ruleset {
    fd: OwnedFd,
    own_proc: u64,
}

impl Confinement {
    /// Builds what `rules` need, as far as `assessment` found this kernel able to enforce them,
    /// with read access to what `program` (found in `search_path`) needs to run.
    /// Switchboard's runtime directory, `own_runtime`, is hidden from it.
    pub fn prepare(
        rules: &Rules<'_>,
        assessment: &Assessment,
        program: &Path,
        search_path: &OsStr,
        own_runtime: &Path,
    ) -> io::Result<Confinement> {
        let ruleset = match assessment.landlock_abi {
            Some(abi) => Some(build_ruleset(rules, abi, program, search_path)?),
            None => None,
        };
        let namespaces = network_namespace_unavailable()
            .is_none()
            .then(|| Namespaces {
                maps: IdentityMaps::current(),
                network: !rules.network,
                hidden: hidden_folders(rules, own_runtime),
            });
        Ok(Confinement {
            ruleset,
            namespaces,
        })
    }

    /// Makes `command`'s process enter the sandbox before it runs the program.
    pub fn install(self, command: &mut tokio::process::Command) {
        let Confinement {
            ruleset,
            namespaces,
        } = self;
        // SAFETY: the closure runs between fork and exec and makes only async-signal-safe system
        // calls (unshare, mount, open, write, close, prctl, landlock_restrict_self) on memory
        // made before the fork; it allocates nothing.
        unsafe {
            command.pre_exec(move || enter(ruleset.as_ref(), namespaces.as_ref()));
        }
    }
}

/// The Landlock ABI this kernel offers (0: none), capped by [`ABI_CEILING_ENV`] when it is set.
fn landlock_abi() -> u32 {
    static ABI_OFFERED: OnceLock<u32> = OnceLock::new();
    *ABI_OFFERED.get_or_init(|| {
        // SAFETY: with no attributes, a size of zero and the version flag, the call reads no
        // memory and only returns the ABI version (or -1).
        let answer = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        let offered = u32::try_from(answer).unwrap_or(0);
        let ceiling = std::env::var(ABI_CEILING_ENV)
            .ok()
            .and_then(|value| value.trim().parse::<u32>().ok());
        ceiling.map_or(offered, |ceiling| offered.min(ceiling))
    })
}

/// Why this process cannot give a server a network namespace, if it cannot: an unprivileged one
/// needs a user namespace first, which some systems turn off.
fn network_namespace_unavailable() -> Option<String> {
    // SAFETY: geteuid cannot fail and takes no arguments.
    if unsafe { libc::geteuid() } == 0 {
        return None;
    }
    let setting = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|text| text.trim().to_owned())
    };
    if setting("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return Some("this system turns user namespaces off (user.max_user_namespaces = 0)".into());
    }
    if setting("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return Some(
            "this system keeps unprivileged users from making user namespaces \
             (kernel.unprivileged_userns_clone = 0)"
                .into(),
        );
    }
    if setting("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return Some(
            "AppArmor keeps unprivileged programs from using user namespaces \
             (kernel.apparmor_restrict_unprivileged_userns = 1)"
                .into(),
        );
    }
    None
}

/// The ruleset of `rules` at `abi` (the kernel's, capped to what the rules use), as the
/// descriptor the server's process restricts itself with.
fn build_ruleset(
    rules: &Rules<'_>,
    abi: u32,
    program: &Path,
    search_path: &OsStr,
) -> io::Result<Ruleset> {
    let abi = ABI::from(abi.min(NEWEST_USED) as i32);
    let failed = |error: RulesetError| io::Error::other(format!("Landlock: {error}"));
    let mut ruleset = landlock::Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(failed)?;
    let limit_ports = rules.network && abi >= ABI::V4;
    if limit_ports {
        ruleset = ruleset
            .handle_access(AccessNet::ConnectTcp)
            .map_err(failed)?;
    }
    if abi >= ABI::V6 {
        ruleset = ruleset.scope(Scope::from_all(ABI::V6)).map_err(failed)?;
    }
    let mut created = ruleset.create().map_err(failed)?;
    let roots = program_roots(program, search_path);
    let reads = SYSTEM_READ
        .iter()
        .map(Path::new)
        .chain(roots.iter().map(PathBuf::as_path))
        .chain(rules.read.iter().map(PathBuf::as_path));
    let writes = SYSTEM_WRITE
        .iter()
        .map(Path::new)
        .chain(rules.write.iter().map(PathBuf::as_path));
    let grants = reads
        .map(|path| (path, AccessFs::from_read(abi)))
        .chain(writes.map(|path| (path, AccessFs::from_all(abi))));
    // A folder to write that is not there yet (a package runner's cache before its first
    // install) is made, as the server would make it.
    for path in rules.write {
        if !path.exists() {
            std::fs::create_dir_all(path).map_err(|error| {
                io::Error::other(format!("cannot make {} to write: {error}", path.display()))
            })?;
        }
    }
    for (path, access) in grants {
        // A folder to read that is not there (no /lib32 here) grants nothing.
        let Ok(metadata) = std::fs::metadata(path) else {
            continue;
        };
        let access = match metadata.is_dir() {
            true => access,
            false => access & AccessFs::from_file(abi),
        };
        let opened = PathFd::new(path).map_err(|error| {
            io::Error::other(format!(
                "cannot open {} for the sandbox: {error}",
                path.display()
            ))
        })?;
        created = created
            .add_rule(PathBeneath::new(opened, access))
            .map_err(failed)?;
    }
    if limit_ports {
        for &port in rules.connect {
            created = created
                .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
                .map_err(failed)?;
        }
    }
    let fd = Option::<OwnedFd>::from(created)
        .ok_or_else(|| io::Error::other("Landlock made no ruleset although it is offered"))?;
    Ok(Ruleset {
        fd,
        own_proc: (AccessFs::ReadFile | AccessFs::ReadDir).bits(),
    })
}

/// The interpreter of a script's `#!` line: its path, or for `env NAME` the program `NAME`
/// found in `search_path`.
fn interpreter(program: &Path, search_path: &OsStr) -> Option<PathBuf> {
    use std::io::Read as _;
    let mut start = [0u8; 256];
    let read = std::fs::File::open(program).ok()?.read(&mut start).ok()?;
    let line = start[..read].strip_prefix(b"#!")?;
    let line = line.split(|&byte| byte == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let interpreter = PathBuf::from(words.next()?);
    if interpreter.file_name() != Some(OsStr::new("env")) {
        return Some(interpreter);
    }
    let name = words.find(|word| !word.starts_with('-') && !word.contains('='))?;
    crate::command::find(name, search_path)
}

/// The folder a program is installed in: see [`program_roots`].
fn installation(program: &Path) -> Option<PathBuf> {
    if let Some(packages) = program
        .ancestors()
        .filter(|folder| folder.file_name() == Some(OsStr::new("node_modules")))
        .last()
    {
        return Some(packages.to_path_buf());
    }
    let folder = program.parent()?;
    if folder.file_name() == Some(OsStr::new("bin"))
        && let Some(prefix) = folder.parent()
        && prefix.join("lib").is_dir()
        && !is_shared_prefix(prefix)
    {
        return Some(prefix.to_path_buf());
    }
    Some(folder.to_path_buf())
}

/// Folders never granted as a program's installation: the root, the home folder, an ancestor of
/// either, and a folder that holds Switchboard's own files (its data, config and runtime
/// directories: the socket's key, the tokens). A program found there is granted alone.
fn holds_more_than_an_installation(folder: &Path) -> bool {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let own = [
        crate::dirs::data_dir(),
        crate::dirs::runtime_dir(),
        crate::dirs::default_config_path()
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
    ];
    folder.parent().is_none()
        || home.iter().any(|home| home.starts_with(folder))
        || own
            .iter()
            .any(|own| !own.as_os_str().is_empty() && own.starts_with(folder))
}

/// Prefixes that hold far more than one installation: the root, the home folder and
/// `~/.local`, whose `bin` gets programs of every kind.
fn is_shared_prefix(prefix: &Path) -> bool {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    prefix.parent().is_none()
        || home
            .as_ref()
            .is_some_and(|home| prefix == home || prefix == home.join(".local"))
}

/// The single-line user and group maps that keep a process itself inside a user namespace of
/// its own.
struct IdentityMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl IdentityMaps {
    fn current() -> IdentityMaps {
        // SAFETY: geteuid and getegid cannot fail and take no arguments.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        IdentityMaps {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }
}

/// The folders a server with `rules` finds empty: Switchboard's runtime directory, and the
/// user's (`$XDG_RUNTIME_DIR`, where the session bus is) unless `rules` let it reach the bus or
/// grant a path inside that folder.
fn hidden_folders(rules: &Rules<'_>, own_runtime: &Path) -> Vec<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt as _;
    let mut hidden = vec![own_runtime.to_path_buf()];
    if let Some(user_runtime) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from)
        && user_runtime.is_absolute()
        && !rules.bus
        && !rules
            .read
            .iter()
            .chain(rules.write)
            .any(|granted| granted.starts_with(&user_runtime))
    {
        hidden.push(user_runtime);
    }
    hidden
        .into_iter()
        .filter_map(|path| std::ffi::CString::new(path.as_os_str().as_bytes()).ok())
        .collect()
}

/// Enters the sandbox, in the child between fork and exec: the namespaces first (they may need
/// a user namespace, which a Landlock domain would not keep from it), then the ruleset, with
/// read access to the process's own entry in `/proc`, which only it can name before it runs (it
/// keeps its pid through exec).
fn enter(ruleset: Option<&Ruleset>, namespaces: Option<&Namespaces>) -> io::Result<()> {
    if let Some(namespaces) = namespaces {
        isolate(namespaces)?;
    }
    if let Some(ruleset) = ruleset {
        grant_own_proc(ruleset)?;
        // SAFETY: prctl with integer arguments only.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the descriptor is open (the closure holds it) and the call takes no pointer.
        let restricted = unsafe {
            libc::syscall(
                libc::SYS_landlock_restrict_self,
                ruleset.fd.as_raw_fd(),
                0 as libc::c_uint,
            )
        };
        if restricted != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `landlock_path_beneath_attr` of the kernel's UAPI: packed, as the kernel reads it.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: libc::c_int,
}

/// `LANDLOCK_RULE_PATH_BENEATH`.
const RULE_PATH_BENEATH: libc::c_uint = 1;

/// Adds the calling process's own `/proc/PID` to the ruleset, readable. The ruleset is this
/// spawn's alone: the parent closes its descriptor once the child has started.
fn grant_own_proc(ruleset: &Ruleset) -> io::Result<()> {
    // SAFETY: the path is NUL-terminated and outlives the call.
    let own = unsafe {
        libc::open(
            c"/proc/self".as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if own < 0 {
        return Err(io::Error::last_os_error());
    }
    let attr = PathBeneathAttr {
        allowed_access: ruleset.own_proc,
        parent_fd: own,
    };
    // SAFETY: `attr` is a valid, initialized rule that outlives the call; both descriptors are
    // open.
    let added = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.fd.as_raw_fd(),
            RULE_PATH_BENEATH,
            &raw const attr,
            0 as libc::c_uint,
        )
    };
    let error = io::Error::last_os_error();
    // SAFETY: `own` is ours and closed once.
    unsafe { libc::close(own) };
    match added {
        0 => Ok(()),
        _ => Err(error),
    }
}

/// Moves the calling process into a mount namespace of its own, and a network namespace (which
/// has no interface but a loopback that is down: no network at all) when `namespaces.network`
/// says so. Without the privilege to do so directly it makes a user namespace too, in which it
/// stays itself (its own user and group mapped to themselves). Then it covers each hidden
/// folder with an empty read-only one, seen by it alone.
fn isolate(namespaces: &Namespaces) -> io::Result<()> {
    let mut flags = libc::CLONE_NEWNS;
    if namespaces.network {
        flags |= libc::CLONE_NEWNET;
    }
    // SAFETY: unshare takes flags only.
    if unsafe { libc::unshare(flags) } != 0 {
        let direct = io::Error::last_os_error();
        if direct.raw_os_error() != Some(libc::EPERM) {
            return Err(direct);
        }
        // SAFETY: as above.
        if unsafe { libc::unshare(libc::CLONE_NEWUSER | flags) } != 0 {
            return Err(io::Error::last_os_error());
        }
        write_own(c"/proc/self/setgroups", b"deny")?;
        write_own(c"/proc/self/uid_map", &namespaces.maps.uid_map)?;
        write_own(c"/proc/self/gid_map", &namespaces.maps.gid_map)?;
    }
    // Nothing mounted here may reach the rest of the system.
    // SAFETY: NUL-terminated paths and null pointers where the call takes none.
    let private = unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    };
    if private != 0 {
        return Err(io::Error::last_os_error());
    }
    for folder in &namespaces.hidden {
        // SAFETY: as above; `folder` outlives the call.
        let covered = unsafe {
            libc::mount(
                c"switchboard-hidden".as_ptr(),
                folder.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                c"mode=0500".as_ptr().cast(),
            )
        };
        if covered != 0 {
            let error = io::Error::last_os_error();
            // A folder that is not there hides nothing.
            if !matches!(error.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) {
                return Err(error);
            }
        }
    }
    Ok(())
}

/// Writes `contents` to the file at `path` with system calls alone (no allocation).
fn write_own(path: &CStr, contents: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated and outlives the call.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `contents` is valid for its length and `fd` was just opened.
    let written = unsafe { libc::write(fd, contents.as_ptr().cast(), contents.len()) };
    let error = io::Error::last_os_error();
    // SAFETY: `fd` is ours and closed once.
    unsafe { libc::close(fd) };
    match usize::try_from(written) {
        Ok(written) if written == contents.len() => Ok(()),
        _ => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn a_program_runs_from_its_installation() {
        let dir = tempfile::tempdir().expect("a folder");
        let venv = dir.path().join("venv");
        std::fs::create_dir_all(venv.join("bin")).expect("bin");
        std::fs::create_dir_all(venv.join("lib")).expect("lib");
        assert_eq!(installation(&venv.join("bin/python")), Some(venv.clone()));
        let tools = dir.path().join("tools/bin");
        std::fs::create_dir_all(&tools).expect("bin");
        assert_eq!(installation(&tools.join("uvx")), Some(tools.clone()));
        let package = dir
            .path()
            .join("app/node_modules/@scope/server/node_modules/.bin/server");
        assert_eq!(
            installation(&package),
            Some(dir.path().join("app/node_modules"))
        );
    }

    #[test]
    fn a_program_in_the_home_folder_or_beside_switchboards_files_is_granted_alone() {
        let home = PathBuf::from(std::env::var_os("HOME").expect("a home folder"));
        assert!(holds_more_than_an_installation(&home));
        assert!(holds_more_than_an_installation(Path::new("/")));
        if let Some(parent) = home.parent() {
            assert!(holds_more_than_an_installation(parent));
        }
        let data = crate::dirs::data_dir();
        assert!(holds_more_than_an_installation(&data));
        if let Some(parent) = data.parent() {
            assert!(holds_more_than_an_installation(parent));
        }
        assert!(!holds_more_than_an_installation(&home.join("tools/bin")));
        let dir = tempfile::tempdir().expect("a folder");
        assert!(!holds_more_than_an_installation(dir.path()));
    }

    #[test]
    fn a_script_names_its_interpreter_directly_or_through_env() {
        let dir = tempfile::tempdir().expect("a folder");
        let direct = dir.path().join("direct");
        std::fs::write(&direct, "#!/opt/python/bin/python3 -u\nprint()\n").expect("write");
        assert_eq!(
            interpreter(&direct, OsStr::new("")),
            Some(PathBuf::from("/opt/python/bin/python3"))
        );
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("bin");
        let node = bin.join("node");
        std::fs::write(&node, "").expect("write");
        std::fs::set_permissions(&node, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let through_env = dir.path().join("through-env");
        std::fs::write(&through_env, "#!/usr/bin/env -S node --no-warnings\n").expect("write");
        assert_eq!(interpreter(&through_env, bin.as_os_str()), Some(node));
        let binary = dir.path().join("binary");
        std::fs::write(&binary, b"\x7fELF\x02\x01").expect("write");
        assert_eq!(interpreter(&binary, OsStr::new("")), None);
    }

    /// The path a person's desktop takes: as an unprivileged user (as root, the test first
    /// becomes `nobody`), the network and mount namespaces come with a user namespace of their
    /// own, and a hidden folder is empty to the process alone.
    #[test]
    #[allow(clippy::disallowed_methods)] // the test's own child, not a backend
    fn an_unprivileged_process_gets_a_network_and_hidden_folders_through_a_user_namespace() {
        use std::os::unix::ffi::OsStrExt as _;
        use std::os::unix::process::CommandExt as _;
        const NOBODY: libc::uid_t = 65534;
        let own = std::fs::read_link("/proc/self/ns/net").expect("our network namespace");
        let dir = tempfile::tempdir().expect("a folder");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        let hidden = dir.path().join("run");
        std::fs::create_dir(&hidden).expect("a folder to hide");
        std::fs::write(hidden.join("switchboard.sock"), "").expect("a file in it");
        // SAFETY: geteuid cannot fail and takes no arguments.
        let as_root = unsafe { libc::geteuid() } == 0;
        let maps = match as_root {
            true => IdentityMaps {
                uid_map: format!("{NOBODY} {NOBODY} 1\n").into_bytes(),
                gid_map: format!("{NOBODY} {NOBODY} 1\n").into_bytes(),
            },
            false => IdentityMaps::current(),
        };
        let namespaces = Namespaces {
            maps,
            network: true,
            hidden: vec![
                std::ffi::CString::new(hidden.as_os_str().as_bytes()).expect("a path"),
                std::ffi::CString::new(dir.path().join("absent").as_os_str().as_bytes())
                    .expect("a path"),
            ],
        };
        let mut command = std::process::Command::new("/bin/sh");
        command.args(["-c", "readlink /proc/self/ns/net && ls -A \"$1\"", "sh"]);
        command.arg(&hidden);
        // SAFETY: the closure runs between fork and exec and makes only system calls.
        unsafe {
            command.pre_exec(move || {
                // Changing user makes a process undumpable, which a person's never is: its
                // /proc/self files would stay root's, and its maps unwritable.
                if as_root
                    && (libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setgid(NOBODY) != 0
                        || libc::setuid(NOBODY) != 0
                        || libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) != 0)
                {
                    return Err(io::Error::last_os_error());
                }
                isolate(&namespaces)
            });
        }
        let output = command.output().expect("the shell runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let theirs = String::from_utf8_lossy(&output.stdout);
        let mut lines = theirs.lines();
        let network = lines.next().expect("its network namespace");
        assert!(network.starts_with("net:["), "{theirs}");
        assert_ne!(network, own.to_string_lossy());
        assert_eq!(
            lines.next(),
            None,
            "the hidden folder is empty to it: {theirs}"
        );
        assert!(
            hidden.join("switchboard.sock").exists(),
            "and untouched for everyone else"
        );
    }
}
