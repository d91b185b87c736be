//! The checks after the load: every backend ready, no pending request, no zombie or stray
//! process, the activity log settled, and file descriptors and memory back near where they were.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use serde_json::Value;
use tokio::time::Instant;

use super::calls::{Outcome, Plan};
use super::figures::Recorder;
use super::{BACKENDS, FD_SLACK, RSS_SLACK_KIB, fresh_clients, lock};

/// What the end of the run measured.
pub(super) struct End {
    pub(super) fds: usize,
    pub(super) rss_kib: u64,
    pub(super) hwm_kib: u64,
    /// Requests awaiting an answer per backend, if `/api/backends` reports them.
    pub(super) pending: Option<u64>,
    pub(super) activity: LogFigures,
    pub(super) restarts: BTreeMap<String, u64>,
}

/// What the activity log says it did.
#[derive(Debug, Clone, Copy)]
pub(super) struct LogFigures {
    pub(super) recorded: u64,
    pub(super) dropped: u64,
    pub(super) failed: u64,
}

/// The activity log's figures once it has kept at least `answered` records (or the limit
/// passes): its writer stores a batch every 50 ms.
async fn settled_activity(serve: &ServeProcess, answered: u64) -> LogFigures {
    let reading = poll(EVENT_LIMIT, || async {
        let health = &serve.api_get("/api/activity?limit=1").await["health"];
        let figure = |name: &str| health[name].as_u64().unwrap_or(0);
        let figures = LogFigures {
            recorded: figure("recorded"),
            dropped: figure("dropped"),
            failed: figure("failed"),
        };
        if figures.recorded >= answered {
            Ok(figures)
        } else {
            Err(figures)
        }
    })
    .await;
    reading.unwrap_or_else(|last| last)
}

/// After the load: every backend ready and answering through fresh sessions of both kinds, no
/// pending request, no zombie, no process of the run outside the backends' groups, the run's
/// record of its process groups matching the backends, and serve's file descriptors and memory
/// back to about where they were after the warm-up (`start`).
pub(super) async fn end_checks(
    serve: &ServeProcess,
    recorder: &Arc<Recorder>,
    marker: &str,
    (fds_start, rss_start): (usize, u64),
    problems: &mut Vec<String>,
) -> End {
    let serve_pid = serve.pid();
    let list = match all_ready(serve).await {
        Ok(list) => list,
        Err(list) => {
            problems.push(format!("not every backend is ready again: {list:#}"));
            list
        }
    };
    for client in fresh_clients(serve, recorder, "final") {
        for backend in BACKENDS {
            let plan = Plan::echo(backend, format!("{}-{backend}", client.label()));
            let outcome = recorder.call(&client, &plan).await;
            if outcome != Outcome::Ok {
                problems.push(format!(
                    "{}: {backend} did not answer: {outcome:?}",
                    client.label()
                ));
            }
        }
        client.close().await;
    }

    let pending = settled_pending(serve).await;
    if pending.is_some_and(|pending| pending > 0) {
        problems.push(format!("{pending:?} requests still pending"));
    }
    let answered = lock(&recorder.calls)
        .iter()
        .filter(|call| call.outcome == Outcome::Ok)
        .count() as u64;
    let activity = settled_activity(serve, answered).await;
    if activity.recorded < answered || activity.dropped + activity.failed > 0 {
        problems.push(format!(
            "the activity log kept {} records for {answered} answered calls, dropped {}, failed {}",
            activity.recorded, activity.dropped, activity.failed
        ));
    }
    let zombies = settled(|| zombie_children(serve_pid), Vec::is_empty).await;
    if !zombies.is_empty() {
        problems.push(format!("zombie children of serve: {zombies:?}"));
    }
    let groups: HashSet<i32> = list
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|summary| summary["pid"].as_i64())
        .map(|pid| pid as i32)
        .collect();
    check_processes(serve, marker, &groups, problems);

    let fds = settled(|| fd_count(serve_pid), |&fds| fds <= fds_start).await;
    if fds > fds_start + FD_SLACK {
        problems.push(format!(
            "serve holds {fds} file descriptors, {fds_start} after the warm-up"
        ));
    }
    let rss_kib = status_kib(serve_pid, "VmRSS");
    if rss_kib > rss_start + RSS_SLACK_KIB {
        problems.push(format!(
            "serve's RSS grew from {rss_start} KiB to {rss_kib} KiB"
        ));
    }
    End {
        fds,
        rss_kib,
        hwm_kib: status_kib(serve_pid, "VmHWM"),
        pending,
        activity,
        restarts: list
            .as_array()
            .into_iter()
            .flatten()
            .map(|summary| {
                let name = summary["name"].as_str().unwrap_or("?").to_owned();
                (name, summary["restarts"].as_u64().unwrap_or(0))
            })
            .collect(),
    }
}

/// Every process of the run is in the group of a running backend, the run's record of its
/// process groups on disk names exactly those groups, and the grandchild of `alpha` is among
/// them (so the final check that none outlives serve covers a grandchild).
fn check_processes(
    serve: &ServeProcess,
    marker: &str,
    groups: &HashSet<i32>,
    problems: &mut Vec<String>,
) {
    let members = run_processes(marker);
    for &pid in &members {
        let group = stat(pid).and_then(|fields| fields.get(2)?.parse::<i32>().ok());
        if !group.is_some_and(|group| groups.contains(&group)) {
            problems.push(format!(
                "process {pid} of the run is outside every backend's group (group {group:?}): {:?}",
                std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default()
            ));
        }
    }
    let grandchildren = members
        .iter()
        .filter(|pid| !groups.contains(&(**pid as i32)))
        .count();
    if grandchildren == 0 {
        problems.push("alpha's grandchild is not running".to_owned());
    }
    let run_id = marker
        .split_once('=')
        .map_or("", |(_, run_id)| run_id)
        .to_owned();
    let runtime_dir = serve
        .env()
        .into_iter()
        .find(|(name, _)| *name == "SWITCHBOARD_RUNTIME_DIR")
        .map(|(_, dir)| dir)
        .expect("serve has a runtime directory");
    let record =
        std::fs::read_to_string(runtime_dir.join("groups").join(run_id)).unwrap_or_default();
    let recorded: HashSet<i32> = record
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect();
    if &recorded != groups {
        problems.push(format!(
            "the record of process groups names {recorded:?}, the backends run {groups:?}"
        ));
    }
}

/// Waits until every backend is ready; the last list either way.
async fn all_ready(serve: &ServeProcess) -> Result<Value, Value> {
    poll(EVENT_LIMIT, || async {
        let list = serve.api_get("/api/backends").await;
        let ready = list.as_array().is_some_and(|list| {
            list.len() == BACKENDS.len() && list.iter().all(|summary| summary["state"] == "ready")
        });
        if ready { Ok(list) } else { Err(list) }
    })
    .await
}

/// The requests pending at all backends once health pings in flight are answered, if
/// `/api/backends` reports them.
async fn settled_pending(serve: &ServeProcess) -> Option<u64> {
    let settled = poll(EVENT_LIMIT, || async {
        let list = serve.api_get("/api/backends").await;
        let counts: Option<Vec<u64>> = list.as_array().and_then(|list| {
            list.iter()
                .map(|summary| summary.get("pending").and_then(Value::as_u64))
                .collect()
        });
        match counts.map(|counts| counts.iter().sum()) {
            Some(0) => Ok(Some(0)),
            Some(total) => Err(total),
            None => Ok(None),
        }
    })
    .await;
    settled.unwrap_or_else(Some)
}

/// Polls `read` until `done` holds for its reading (or the limit passes); the last reading.
async fn settled<T>(read: impl Fn() -> T, done: impl Fn(&T) -> bool) -> T {
    let reading = poll(EVENT_LIMIT, || async {
        let value = read();
        if done(&value) { Ok(value) } else { Err(value) }
    })
    .await;
    reading.unwrap_or_else(|last| last)
}

/// serve's file descriptors once their count has held still for a second.
pub(super) async fn settled_fds(pid: u32) -> usize {
    let deadline = Instant::now() + EVENT_LIMIT;
    let mut count = fd_count(pid);
    let mut still_since = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = fd_count(pid);
        if now != count {
            (count, still_since) = (now, Instant::now());
        } else if still_since.elapsed() >= Duration::from_secs(1) || Instant::now() > deadline {
            return count;
        }
    }
}

/// `SWITCHBOARD_RUN_ID=<run id>`, as every backend process of this serve carries it.
pub(super) fn run_marker(serve_pid: u32) -> String {
    let started = stat(serve_pid)
        .and_then(|fields| fields.get(19).cloned())
        .expect("serve's start time");
    format!("{}={serve_pid}-{started}", supervisor::spawn::RUN_ID_ENV)
}

/// The fields of `/proc/PID/stat` after the command name: 0 is the state, 1 the parent, 2 the
/// process group, 19 the start time.
fn stat(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, fields) = stat.rsplit_once(')')?;
    Some(fields.split_whitespace().map(str::to_owned).collect())
}

fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .expect("/proc lists")
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .collect()
}

/// Whether `pid` is alive and its environment carries `marker`.
pub(super) fn carries(pid: u32, marker: &str) -> bool {
    alive(pid)
        && std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
            environ
                .split(|&byte| byte == 0)
                .any(|entry| entry == marker.as_bytes())
        })
}

/// Every live process of the run: backends and whatever they started.
pub(super) fn run_processes(marker: &str) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|&pid| carries(pid, marker))
        .collect()
}

fn zombie_children(parent: u32) -> Vec<u32> {
    let parent = parent.to_string();
    all_pids()
        .into_iter()
        .filter(|&pid| stat(pid).is_some_and(|fields| fields[0] == "Z" && fields[1] == parent))
        .collect()
}

fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|entries| entries.count())
        .unwrap_or(0)
}

/// A `kB` field of `/proc/PID/status` (`VmRSS`, `VmHWM`).
pub(super) fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
