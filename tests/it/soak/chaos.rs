//! The faults, injected at random moments, and when service must have resumed after each.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::support::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use tokio::time::Instant;

use super::calls::{Outcome, Plan};
use super::checks::carries;
use super::clients::{Client, ConnectClient, HttpClient};
use super::figures::{FaultRecord, Recorder};
use super::{BACKENDS, HEALTH_INTERVAL, HEALTH_TIMEOUT, MISBEHAVING, config_text, lock};

/// The kinds of fault injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Fault {
    Kill,
    PauseShort,
    PauseLong,
    HandshakeExit,
    StderrFlood,
    Garbage,
    ConnectKilled,
    SessionDeleted,
}

impl Fault {
    /// Each kind with its weight in the random choice.
    const WEIGHTS: [(Fault, u32); 8] = [
        (Fault::Kill, 20),
        (Fault::PauseShort, 12),
        (Fault::PauseLong, 10),
        (Fault::HandshakeExit, 8),
        (Fault::StderrFlood, 14),
        (Fault::Garbage, 12),
        (Fault::ConnectKilled, 12),
        (Fault::SessionDeleted, 12),
    ];

    pub(super) fn label(self) -> &'static str {
        match self {
            Fault::Kill => "backend SIGKILLed",
            Fault::PauseShort => "backend SIGSTOPped < health_timeout, resumed",
            Fault::PauseLong => "backend SIGSTOPped > health_timeout, resumed",
            Fault::HandshakeExit => "reload: backend exits in handshake, reload back",
            Fault::StderrFlood => "stderr flood",
            Fault::Garbage => "garbage on stdout",
            Fault::ConnectKilled => "connect process SIGKILLed mid-call",
            Fault::SessionDeleted => "HTTP session DELETEd mid-call",
        }
    }

    /// A random kind; only one lane changes the config, so reloads never overlap.
    pub(super) fn random(rng: &mut StdRng, may_reload: bool) -> Fault {
        let weights = Fault::WEIGHTS
            .iter()
            .filter(|(fault, _)| may_reload || *fault != Fault::HandshakeExit);
        let total: u32 = weights.clone().map(|(_, weight)| weight).sum();
        let mut pick = rng.random_range(0..total);
        for &(fault, weight) in weights {
            if pick < weight {
                return fault;
            }
            pick -= weight;
        }
        unreachable!("the pick is below the total weight")
    }
}

/// Where to check that service resumed after a fault.
enum Resumes {
    Backend(&'static str),
    Client(Client),
}

/// What the fault lanes act on.
pub(super) struct Chaos<'a> {
    pub(super) serve: &'a ServeProcess,
    pub(super) marker: &'a str,
    pub(super) recorder: &'a Arc<Recorder>,
    pub(super) http: &'a [Arc<HttpClient>],
    pub(super) connects: &'a [Arc<ConnectClient>],
}

impl Chaos<'_> {
    /// Injects random faults one after another until `until`, checking after each that service
    /// resumed. Two lanes run at once, so faults overlap. Lane 0 begins with every kind once, in
    /// random order, so that every run has all of them; only it reloads the config.
    pub(super) async fn lane(&self, lane: usize, seed: u64, until: Instant) {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut first: Vec<Fault> = match lane {
            0 => Fault::WEIGHTS.iter().map(|(fault, _)| *fault).collect(),
            _ => Vec::new(),
        };
        first.shuffle(&mut rng);
        let client = Client::Http(HttpClient::new(
            format!("lane{lane}"),
            &self.serve.url(),
            self.recorder,
        ));
        while Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(rng.random_range(300..2500))).await;
            let fault = first
                .pop()
                .unwrap_or_else(|| Fault::random(&mut rng, lane == 0));
            let injected = Instant::now();
            let Some(resumes) = self.inject(fault, &mut rng, &client).await else {
                continue;
            };
            self.resume(fault, resumes, &client).await;
            lock(&self.recorder.faults).push(FaultRecord {
                fault,
                injected,
                resumed: Instant::now(),
            });
        }
        client.close().await;
    }

    /// Injects `fault`; `None` when there was nothing to inject it into.
    async fn inject(&self, fault: Fault, rng: &mut StdRng, client: &Client) -> Option<Resumes> {
        let any_backend = BACKENDS[rng.random_range(0..BACKENDS.len())];
        let misbehaving = MISBEHAVING[rng.random_range(0..MISBEHAVING.len())];
        match fault {
            Fault::Kill => {
                let pid = self.backend_pid(any_backend).await?;
                self.signal(pid, Signal::SIGKILL);
                Some(Resumes::Backend(any_backend))
            }
            Fault::PauseShort | Fault::PauseLong => {
                let pid = self.backend_pid(any_backend).await?;
                let paused = if fault == Fault::PauseShort {
                    rng.random_range(50..HEALTH_TIMEOUT.as_millis() as u64 / 2)
                } else {
                    let detected = HEALTH_TIMEOUT + HEALTH_INTERVAL;
                    detected.as_millis() as u64 + rng.random_range(300..1500)
                };
                self.signal(pid, Signal::SIGSTOP);
                tokio::time::sleep(Duration::from_millis(paused)).await;
                self.signal(pid, Signal::SIGCONT);
                Some(Resumes::Backend(any_backend))
            }
            Fault::HandshakeExit => {
                self.reload(&config_text(true)).await;
                tokio::time::sleep(Duration::from_millis(rng.random_range(1000..3000))).await;
                self.reload(&config_text(false)).await;
                Some(Resumes::Backend("beta"))
            }
            Fault::StderrFlood => {
                let plan = Plan::stderr_flood(misbehaving, rng.random_range(2000..20_000));
                self.recorder.call(client, &plan).await;
                Some(Resumes::Backend(misbehaving))
            }
            Fault::Garbage => {
                self.recorder
                    .call(client, &Plan::garbage(misbehaving))
                    .await;
                Some(Resumes::Backend(misbehaving))
            }
            Fault::ConnectKilled => {
                let connects = self.connects;
                let chosen = connects.get(rng.random_range(0..connects.len().max(1)))?;
                let killed = chosen.kill().await;
                killed.then(|| Resumes::Client(Client::Connect(chosen.clone())))
            }
            Fault::SessionDeleted => {
                let http = self.http;
                let chosen = http.get(rng.random_range(0..http.len().max(1)))?;
                match chosen.delete_session().await {
                    Ok(deleted) => deleted.then(|| Resumes::Client(Client::Http(chosen.clone()))),
                    Err(problem) => {
                        self.recorder
                            .violation(format!("{}: {problem}", chosen.label));
                        None
                    }
                }
            }
        }
    }

    /// Waits until service resumed after `fault`: the backend answers an echo again, or the
    /// client gets an answer (any: the backend it asks may be down for another fault).
    async fn resume(&self, fault: Fault, resumes: Resumes, lane_client: &Client) {
        let (client, backend, any_answer) = match resumes {
            Resumes::Backend(backend) => (lane_client.clone(), backend, false),
            Resumes::Client(client) => (client, "demo", true),
        };
        let resumed = poll(EVENT_LIMIT, || async {
            let list = self.serve.api_get("/api/backends").await;
            let ready = list.as_array().is_some_and(|list| {
                list.iter()
                    .any(|summary| summary["name"] == backend && summary["state"] == "ready")
            });
            if !ready {
                return Err(());
            }
            let serial = self.recorder.serial.fetch_add(1, Ordering::Relaxed);
            let plan = Plan::echo(backend, format!("{}-again-{serial}", client.label()));
            match self.recorder.call(&client, &plan).await {
                Outcome::Ok => Ok(()),
                Outcome::Failed(_) if any_answer => Ok(()),
                _ => Err(()),
            }
        })
        .await;
        if resumed.is_err() {
            self.recorder.violation(format!(
                "service did not resume within {EVENT_LIMIT:?} after: {} ({})",
                fault.label(),
                client.label()
            ));
        }
    }

    /// The pid of `backend`'s process, if it has one that belongs to this run.
    async fn backend_pid(&self, backend: &str) -> Option<u32> {
        let list = self.serve.api_get("/api/backends").await;
        let pid = list
            .as_array()?
            .iter()
            .find(|summary| summary["name"] == backend)?["pid"]
            .as_u64()? as u32;
        carries(pid, self.marker).then_some(pid)
    }

    /// Signals `pid` if it is still a process of this run (never a stranger that reused it).
    fn signal(&self, pid: u32, signal: Signal) {
        if carries(pid, self.marker) {
            let _ = kill(Pid::from_raw(pid as i32), signal);
        }
    }

    /// Saves `text` as the config, the way editors do (a temporary file renamed over it), and
    /// has serve reload it now.
    async fn reload(&self, text: &str) {
        let path = self.serve.config_path();
        let temporary = path.with_extension("toml.tmp");
        std::fs::write(&temporary, text).expect("the temporary config is written");
        std::fs::rename(&temporary, &path).expect("the config is replaced");
        let outcome = self.serve.api_post("/api/config/reload").await;
        if outcome["outcome"] != "applied" {
            self.recorder
                .violation(format!("a valid config did not apply: {outcome}"));
        }
    }
}
