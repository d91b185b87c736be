//! A backend's captured output: stderr lines and stdout noise, in a ring bounded in lines and
//! bytes so that a flood cannot grow memory, with a live feed for followers. Each line is of
//! one run (one start of the process, or of the link to a remote server), written through that
//! run's [`RunOutput`], so that what a run printed is told apart from what earlier runs did,
//! even a line that arrives after the next run began.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

pub use crate::status::{OutputLine, OutputStream};
use platform::clock::unix_millis;

/// The longest line kept; longer lines are cut and marked.
pub(crate) const MAX_LINE_BYTES: usize = 4096;
const LIVE_CAPACITY: usize = 1024;

/// The ring of recent lines of one backend, kept across its restarts.
pub struct OutputLog {
    ring: Mutex<Ring>,
}

struct Ring {
    lines: VecDeque<OutputLine>,
    bytes: usize,
    max_lines: usize,
    max_bytes: usize,
    /// The live feed, while someone follows it. A channel holds room for all its
    /// `LIVE_CAPACITY` lines from the start, which most backends, never followed, would pay
    /// for in vain.
    live: Option<broadcast::Sender<OutputLine>>,
}

impl OutputLog {
    pub(crate) fn new(max_lines: usize, max_bytes: usize) -> OutputLog {
        let ring = Ring {
            lines: VecDeque::new(),
            bytes: 0,
            max_lines,
            max_bytes,
            live: None,
        };
        OutputLog {
            ring: Mutex::new(ring),
        }
    }

    /// Where run `run` (the task's count of starts) writes its lines.
    pub(crate) fn run(self: &Arc<Self>, run: u64) -> RunOutput {
        RunOutput {
            log: self.clone(),
            run,
        }
    }

    /// Records one line of `run` (cut to [`MAX_LINE_BYTES`]) and sends it to followers.
    fn push(&self, run: u64, stream: OutputStream, text: &str) {
        let line = OutputLine {
            at_ms: unix_millis(std::time::SystemTime::now()),
            run,
            stream,
            text: cut(text),
        };
        let mut ring = self
            .ring
            .lock()
            .expect("output ring lock is never poisoned");
        ring.bytes += line.text.len();
        if let Some(live) = &ring.live
            && live.send(line.clone()).is_err()
        {
            // Every follower has gone.
            ring.live = None;
        }
        ring.lines.push_back(line);
        while ring.lines.len() > ring.max_lines || ring.bytes > ring.max_bytes {
            let Some(old) = ring.lines.pop_front() else {
                break;
            };
            ring.bytes -= old.text.len();
        }
    }

    /// The last `n` lines, oldest first.
    pub fn tail(&self, n: usize) -> Vec<OutputLine> {
        let ring = self
            .ring
            .lock()
            .expect("output ring lock is never poisoned");
        ring.lines
            .iter()
            .skip(ring.lines.len().saturating_sub(n))
            .cloned()
            .collect()
    }

    /// The last `n` lines of run `run` still held, oldest first.
    pub(crate) fn tail_of_run(&self, run: u64, n: usize) -> Vec<OutputLine> {
        let ring = self
            .ring
            .lock()
            .expect("output ring lock is never poisoned");
        let mut lines: Vec<OutputLine> = ring
            .lines
            .iter()
            .rev()
            .filter(|line| line.run == run)
            .take(n)
            .cloned()
            .collect();
        lines.reverse();
        lines
    }

    /// Lines as they arrive.
    pub fn follow(&self) -> broadcast::Receiver<OutputLine> {
        self.ring
            .lock()
            .expect("output ring lock is never poisoned")
            .live
            .get_or_insert_with(|| broadcast::channel(LIVE_CAPACITY).0)
            .subscribe()
    }

    /// Bytes of text held now.
    pub fn held_bytes(&self) -> usize {
        self.ring
            .lock()
            .expect("output ring lock is never poisoned")
            .bytes
    }
}

/// Where one run of a backend writes what it prints. Cheap to clone.
#[derive(Clone)]
pub(crate) struct RunOutput {
    log: Arc<OutputLog>,
    run: u64,
}

impl RunOutput {
    /// Records one line of this run (cut to [`MAX_LINE_BYTES`]) and sends it to followers.
    pub(crate) fn push(&self, stream: OutputStream, text: &str) {
        self.log.push(self.run, stream, text);
    }
}

fn cut(text: &str) -> String {
    let text = text.trim_end_matches(['\r', '\n']);
    if text.len() <= MAX_LINE_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_LINE_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes cut]", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_is_bounded_in_lines_and_bytes() {
        let log = OutputLog::new(3, 1_000_000);
        for i in 0..10 {
            log.push(1, OutputStream::Stderr, &format!("line {i}"));
        }
        let texts: Vec<String> = log.tail(10).into_iter().map(|line| line.text).collect();
        assert_eq!(texts, ["line 7", "line 8", "line 9"]);

        let log = OutputLog::new(1000, 10_000);
        for _ in 0..100 {
            log.push(1, OutputStream::Stderr, &"x".repeat(3000));
        }
        assert!(log.held_bytes() <= 10_000);
        assert_eq!(log.tail(1000).len(), 3);
    }

    #[test]
    fn long_lines_are_cut_on_a_char_boundary() {
        let log = OutputLog::new(10, 1_000_000);
        log.push(1, OutputStream::StdoutNoise, &"é".repeat(5000));
        let line = &log.tail(1)[0];
        assert!(line.text.len() < MAX_LINE_BYTES + 40);
        assert!(line.text.ends_with("bytes cut]"));
        assert_eq!(line.stream, OutputStream::StdoutNoise);
    }

    #[test]
    fn a_runs_tail_holds_its_own_lines_even_those_that_come_late() {
        let log = Arc::new(OutputLog::new(100, 1_000_000));
        let (first, second) = (log.run(1), log.run(2));
        first.push(OutputStream::Stderr, "first starts");
        first.push(OutputStream::Stderr, "first fails");
        second.push(OutputStream::Stderr, "second starts");
        first.push(OutputStream::Stderr, "first, late");
        second.push(OutputStream::StdoutNoise, "second's noise");
        let texts = |run, n| -> Vec<String> {
            log.tail_of_run(run, n)
                .into_iter()
                .map(|line| line.text)
                .collect()
        };
        assert_eq!(texts(1, 10), ["first starts", "first fails", "first, late"]);
        assert_eq!(texts(1, 2), ["first fails", "first, late"]);
        assert_eq!(texts(2, 10), ["second starts", "second's noise"]);
        assert!(texts(3, 10).is_empty(), "a run that printed nothing");
        assert_eq!(log.tail(10).len(), 5, "the output page sees every run");
    }
}
