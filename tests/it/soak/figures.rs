//! What the run records of each call and fault, and the figures printed at the end.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use super::calls::{ErrorKind, Outcome, Plan};
use super::chaos::Fault;
use super::checks::LogFigures;
use super::clients::Client;
use super::{AFTERGLOW, CALL_LIMIT, Settings, lock};

/// Everything the soak records, shared by callers and fault lanes.
pub(super) struct Recorder {
    start: Instant,
    pub(super) calls: Mutex<Vec<CallRecord>>,
    pub(super) faults: Mutex<Vec<FaultRecord>>,
    violations: Mutex<Vec<String>>,
    /// The first message of each kind of error, to show what callers saw.
    error_samples: Mutex<BTreeMap<ErrorKind, String>>,
    pub(super) http_sessions: AtomicU64,
    pub(super) connect_processes: AtomicU64,
    /// Makes the texts of calls that are not random unique.
    pub(super) serial: AtomicU64,
}

pub(super) struct CallRecord {
    echo: bool,
    started: Instant,
    ended: Instant,
    pub(super) outcome: Outcome,
}

pub(super) struct FaultRecord {
    pub(super) fault: Fault,
    pub(super) injected: Instant,
    pub(super) resumed: Instant,
}

impl Recorder {
    pub(super) fn new() -> Recorder {
        Recorder {
            start: Instant::now(),
            calls: Mutex::new(Vec::new()),
            faults: Mutex::new(Vec::new()),
            violations: Mutex::new(Vec::new()),
            error_samples: Mutex::new(BTreeMap::new()),
            http_sessions: AtomicU64::new(0),
            connect_processes: AtomicU64::new(0),
            serial: AtomicU64::new(0),
        }
    }

    /// Makes one call through `client` within [`CALL_LIMIT`], and records how it ended.
    pub(super) async fn call(&self, client: &Client, plan: &Plan) -> Outcome {
        let started = Instant::now();
        let outcome = match tokio::time::timeout(CALL_LIMIT, client.call(plan)).await {
            Ok(Ok((outcome, message))) => {
                if let (Outcome::Failed(kind), Some(message)) = (outcome, message) {
                    lock(&self.error_samples).entry(kind).or_insert(message);
                }
                outcome
            }
            Ok(Err(problem)) => {
                self.violation(format!("{} {plan:?}: {problem}", client.label()));
                Outcome::Violation
            }
            Err(_) => {
                self.violation(format!(
                    "{} {plan:?}: no answer within {CALL_LIMIT:?}",
                    client.label()
                ));
                Outcome::Violation
            }
        };
        lock(&self.calls).push(CallRecord {
            echo: plan.tool == "echo",
            started,
            ended: Instant::now(),
            outcome,
        });
        outcome
    }

    pub(super) fn violation(&self, text: String) {
        let at = self.start.elapsed().as_secs_f64();
        lock(&self.violations).push(format!("[{at:8.3} s] {text}"));
    }

    /// The violations and the error samples so far, for a failure message.
    pub(super) fn explain(&self) -> String {
        format!(
            "violations: {:?}; errors: {:?}",
            lock(&self.violations),
            lock(&self.error_samples)
        )
    }

    pub(super) fn violations(&self) -> Vec<String> {
        lock(&self.violations).clone()
    }

    pub(super) fn fault_timeline(&self) -> String {
        let mut timeline = String::new();
        for record in lock(&self.faults).iter() {
            let _ = writeln!(
                timeline,
                "[{:8.3} s → {:8.3} s] {}",
                (record.injected - self.start).as_secs_f64(),
                (record.resumed - self.start).as_secs_f64(),
                record.fault.label()
            );
        }
        timeline
    }
}

/// The figures printed at the end.
pub(super) struct Figures<'a> {
    pub(super) settings: &'a Settings,
    pub(super) load_time: Duration,
    pub(super) fds: (usize, usize),
    pub(super) rss_kib: (u64, u64, u64),
    pub(super) pending: Option<u64>,
    pub(super) activity: LogFigures,
    pub(super) restarts: BTreeMap<String, u64>,
}

impl Figures<'_> {
    pub(super) fn render(&self, recorder: &Recorder) -> String {
        let calls = lock(&recorder.calls);
        let faults = lock(&recorder.faults);
        let mut outcomes: BTreeMap<Outcome, u64> = BTreeMap::new();
        for call in calls.iter() {
            *outcomes.entry(call.outcome).or_default() += 1;
        }
        let count = |outcome: Outcome| outcomes.get(&outcome).copied().unwrap_or(0);
        let errors: u64 = outcomes
            .iter()
            .filter(|(outcome, _)| matches!(outcome, Outcome::Failed(_)))
            .map(|(_, n)| n)
            .sum();
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.settings);
        let _ = writeln!(
            out,
            "duration     {:.1} s of load",
            self.load_time.as_secs_f64()
        );
        let _ = writeln!(
            out,
            "calls        {} — ok {}, errors {errors}, abandoned by their client {}, lost with a \
             killed connect {}, violations {}",
            calls.len(),
            count(Outcome::Ok),
            count(Outcome::Abandoned),
            count(Outcome::Disconnected),
            count(Outcome::Violation),
        );
        let samples = lock(&recorder.error_samples);
        for (outcome, n) in &outcomes {
            if let Outcome::Failed(kind) = outcome {
                let sample = samples.get(kind).map_or("", String::as_str);
                let _ = writeln!(out, "  {:>7}  {:<34} e.g. {sample}", n, kind.label());
            }
        }
        let mut by_fault: BTreeMap<Fault, Vec<Duration>> = BTreeMap::new();
        for record in faults.iter() {
            by_fault
                .entry(record.fault)
                .or_default()
                .push(record.resumed - record.injected);
        }
        let _ = writeln!(
            out,
            "faults       {} injected (kind: count, time until service resumed p50 / max)",
            faults.len()
        );
        for (fault, mut times) in by_fault {
            times.sort();
            let _ = writeln!(
                out,
                "  {:>7}  {:<48} {:>8} / {:>8}",
                times.len(),
                fault.label(),
                millis(percentile(&times, 0.5)),
                millis(times.last().copied()),
            );
        }
        let windows = fault_windows(&faults);
        let (mut all, mut during, mut outside) = (Vec::new(), Vec::new(), Vec::new());
        for call in calls.iter().filter(|call| call.echo) {
            let latency = call.ended - call.started;
            all.push(latency);
            if overlaps(&windows, call.started, call.ended) {
                during.push(latency);
            } else {
                outside.push(latency);
            }
        }
        let _ = writeln!(
            out,
            "echo latency (sent → answered, ok or error); a call is during faults when it \
             overlaps a fault's window (injection until service resumed) or the {} s after it",
            AFTERGLOW.as_secs()
        );
        for (name, mut latencies) in [
            ("all", all),
            ("during faults", during),
            ("outside", outside),
        ] {
            latencies.sort();
            let _ = writeln!(
                out,
                "  {name:<14} p50 {:>9} p99 {:>9} (n = {})",
                millis(percentile(&latencies, 0.5)),
                millis(percentile(&latencies, 0.99)),
                latencies.len()
            );
        }
        let (rss_start, rss_end, hwm) = self.rss_kib;
        let _ = writeln!(
            out,
            "serve        fds {} → {}; RSS {:.1} MiB → {:.1} MiB, max {:.1} MiB (VmHWM)",
            self.fds.0,
            self.fds.1,
            rss_start as f64 / 1024.0,
            rss_end as f64 / 1024.0,
            hwm as f64 / 1024.0
        );
        let _ = writeln!(
            out,
            "sessions     {} HTTP sessions opened, {} connect processes started",
            recorder.http_sessions.load(Ordering::Relaxed),
            recorder.connect_processes.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "activity     {} records kept, {} dropped, {} failed",
            self.activity.recorded, self.activity.dropped, self.activity.failed
        );
        let _ = writeln!(out, "restarts     {:?}", self.restarts);
        let _ = write!(
            out,
            "pending      {}",
            match self.pending {
                Some(pending) => format!("{pending} at the end"),
                None => "not reported by /api/backends".to_owned(),
            }
        );
        out
    }
}

/// The faults' windows, widened by [`AFTERGLOW`], merged and in order.
fn fault_windows(faults: &[FaultRecord]) -> Vec<(Instant, Instant)> {
    let mut windows: Vec<(Instant, Instant)> = faults
        .iter()
        .map(|record| (record.injected, record.resumed + AFTERGLOW))
        .collect();
    windows.sort();
    let mut merged: Vec<(Instant, Instant)> = Vec::new();
    for (start, end) in windows {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// Whether `[start, end]` overlaps one of the merged, ordered `windows`.
fn overlaps(windows: &[(Instant, Instant)], start: Instant, end: Instant) -> bool {
    let before = windows.partition_point(|window| window.0 <= end);
    before > 0 && windows[before - 1].1 >= start
}

fn percentile(sorted: &[Duration], quantile: f64) -> Option<Duration> {
    let rank = (quantile * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len().max(1)) - 1).copied()
}

fn millis(duration: Option<Duration>) -> String {
    duration.map_or("-".to_owned(), |duration| {
        format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
    })
}
