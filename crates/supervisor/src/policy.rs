//! The restart policy as a pure function of time: exponential backoff with jitter, a restart
//! budget per window, and a reset after a stable period. Time and randomness are passed in.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use config::RestartPolicy;

/// What to do after a backend's process ended on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Start again after this delay.
    RestartAfter(Duration),
    /// The budget is spent: stay down until started by hand or reconfigured.
    CrashLoop,
}

/// Restarts counted against one backend's budget.
#[derive(Debug, Clone)]
pub(crate) struct RestartBudget {
    policy: RestartPolicy,
    /// When each restart within the current window was granted.
    granted: VecDeque<Instant>,
    /// Restarts since the backend last ran for `stable_after`: the backoff exponent.
    consecutive: u32,
}

impl RestartBudget {
    pub(crate) fn new(policy: RestartPolicy) -> RestartBudget {
        RestartBudget {
            policy,
            granted: VecDeque::new(),
            consecutive: 0,
        }
    }

    /// Decides what follows an unplanned exit at `now` after running for `uptime`.
    ///
    /// `jitter` is a number in `[0, 1)`; the delay is drawn from the upper half of the
    /// exponential step so that restarts of many backends spread out but never come early.
    pub(crate) fn on_exit(&mut self, now: Instant, uptime: Duration, jitter: f64) -> Decision {
        if uptime >= self.policy.stable_after {
            self.reset();
        }
        while self
            .granted
            .front()
            .is_some_and(|&at| now.duration_since(at) >= self.policy.window)
        {
            self.granted.pop_front();
        }
        if self.granted.len() >= self.policy.max_restarts as usize {
            return Decision::CrashLoop;
        }
        self.granted.push_back(now);
        let step = self.step_delay();
        self.consecutive = self.consecutive.saturating_add(1);
        let jitter = jitter.clamp(0.0, 1.0);
        Decision::RestartAfter(step.mul_f64(0.5 + 0.5 * jitter))
    }

    /// Forgets past restarts: after a manual start or a config change.
    pub(crate) fn reset(&mut self) {
        self.granted.clear();
        self.consecutive = 0;
    }

    fn step_delay(&self) -> Duration {
        let factor = 2u32.saturating_pow(self.consecutive.min(31));
        self.policy
            .backoff_base
            .saturating_mul(factor)
            .min(self.policy.backoff_cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults: base 1 s, cap 60 s, 5 restarts per 60 s, stable after 30 s.
    fn policy() -> RestartPolicy {
        RestartPolicy::default()
    }

    fn delays(budget: &mut RestartBudget, start: Instant, n: usize, jitter: f64) -> Vec<Decision> {
        (0..n)
            .map(|i| {
                budget.on_exit(
                    start + Duration::from_millis(i as u64),
                    Duration::ZERO,
                    jitter,
                )
            })
            .collect()
    }

    #[test]
    fn doubles_up_to_the_cap_with_full_jitter_at_the_top_of_the_step() {
        let mut policy = policy();
        policy.max_restarts = 100;
        let mut budget = RestartBudget::new(policy);
        let got = delays(&mut budget, Instant::now(), 9, 1.0);
        let seconds: Vec<u64> = got
            .iter()
            .map(|decision| match decision {
                Decision::RestartAfter(delay) => delay.as_secs(),
                Decision::CrashLoop => panic!("budget of 100 is not spent after 9"),
            })
            .collect();
        assert_eq!(seconds, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }

    #[test]
    fn jitter_stays_within_the_upper_half_of_the_step() {
        let mut low = RestartBudget::new(policy());
        let mut high = RestartBudget::new(policy());
        let now = Instant::now();
        for step_secs in [1u64, 2, 4, 8] {
            let step = Duration::from_secs(step_secs);
            let (Decision::RestartAfter(a), Decision::RestartAfter(b)) = (
                low.on_exit(now, Duration::ZERO, 0.0),
                high.on_exit(now, Duration::ZERO, 0.999),
            ) else {
                panic!("within budget");
            };
            assert_eq!(a, step / 2);
            assert!(b > a && b < step, "{b:?} not within ({a:?}, {step:?})");
        }
    }

    #[test]
    fn budget_per_window_then_crash_loop() {
        let mut budget = RestartBudget::new(policy());
        let now = Instant::now();
        let got = delays(&mut budget, now, 6, 0.5);
        assert!(
            got[..5]
                .iter()
                .all(|d| matches!(d, Decision::RestartAfter(_)))
        );
        assert_eq!(got[5], Decision::CrashLoop);
        // Once the window has passed, the oldest restarts no longer count.
        let later = now + Duration::from_secs(61);
        assert!(matches!(
            budget.on_exit(later, Duration::ZERO, 0.5),
            Decision::RestartAfter(_)
        ));
    }

    #[test]
    fn a_stable_run_resets_backoff_and_budget() {
        let mut budget = RestartBudget::new(policy());
        let now = Instant::now();
        delays(&mut budget, now, 5, 1.0);
        let after_stable =
            budget.on_exit(now + Duration::from_secs(40), Duration::from_secs(35), 1.0);
        assert_eq!(after_stable, Decision::RestartAfter(Duration::from_secs(1)));
    }

    #[test]
    fn reset_after_manual_start() {
        let mut budget = RestartBudget::new(policy());
        let now = Instant::now();
        assert_eq!(delays(&mut budget, now, 6, 1.0)[5], Decision::CrashLoop);
        budget.reset();
        assert_eq!(
            budget.on_exit(now, Duration::ZERO, 1.0),
            Decision::RestartAfter(Duration::from_secs(1))
        );
    }
}
