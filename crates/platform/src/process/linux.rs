//! Other processes as Linux shows them, in `/proc`: their group, start time, children,
//! command line and environment. Each answer is `None` (or empty) where `/proc` cannot tell.

use std::path::PathBuf;

/// The start time of a process in clock ticks since boot (field 22 of `/proc/PID/stat`).
pub fn start_time(pid: u32) -> Option<u64> {
    stat_fields(pid)?.get(19)?.parse().ok()
}

/// The fields of `/proc/PID/stat` after the command name (so index 0 is the state, field 3).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    Some(after_name.split_whitespace().map(str::to_owned).collect())
}

/// Every live process whose process group is `pgid`.
pub(crate) fn processes_in_group(pgid: i32) -> Vec<u32> {
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

/// The direct children of a process (of every one of its threads); `None` where that cannot
/// be read (a kernel without `CONFIG_PROC_CHILDREN`, or the process is gone).
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

/// A process's command line (program and arguments); `None` where it cannot be read or is
/// empty (a process that has exited).
pub fn command_line(pid: u32) -> Option<Vec<String>> {
    nul_separated(&std::fs::read(format!("/proc/{pid}/cmdline")).ok()?)
}

/// A process's environment (`NAME=value` entries); `None` where it cannot be read or is empty.
pub fn environment(pid: u32) -> Option<Vec<String>> {
    nul_separated(&std::fs::read(format!("/proc/{pid}/environ")).ok()?)
}

/// Entries each ended by a NUL.
fn nul_separated(bytes: &[u8]) -> Option<Vec<String>> {
    let entries = bytes.strip_suffix(&[0])?;
    Some(
        entries
            .split(|&b| b == 0)
            .map(|entry| String::from_utf8_lossy(entry).into_owned())
            .collect(),
    )
}
