//! Progress of work that can take more than a second (verification commands, shortcuts,
//! cleanup and reconciliation applies, GitHub calls), reported two ways:
//!
//! - to a terminal: a spinner with a label on stderr, only when stderr is a terminal, never
//!   with `--json` or `--quiet`, and only once the work has taken a second, so fast calls
//!   print nothing; the line is cleared when the work ends;
//! - to a [`ProgressSink`] the front end put in the context for this call (the MCP server's,
//!   for a call carrying `_meta.progressToken`): one [`Step`] at the start, one each second
//!   while the work runs, and one per [`Progress::advance`].
//!
//! Every step's `progress` is larger than the one before (MCP requires it): with a total
//! given at the start it is `done + beats/(beats+1)` (`beats` counting seconds since the last
//! advance), so it stays below the next part; without one it counts the seconds.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// One progress report.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: String,
}

/// Where the steps of one call go; called from the work's thread and from the heartbeat.
pub type ProgressSink = Arc<dyn Fn(Step) + Send + Sync>;

/// Running progress; dropping it stops the spinner and the heartbeat.
pub struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    reporter: Option<Arc<Reporter>>,
}

struct Reporter {
    sink: ProgressSink,
    state: Mutex<State>,
}

struct State {
    done: u64,
    total: Option<u64>,
    beats: u64,
    label: String,
    last: Option<f64>,
}

impl Reporter {
    /// Sends the current state as a step, unless it would not rise above the last one.
    fn send(&self, with_seconds: Option<u64>) {
        let step = {
            let Ok(mut s) = self.state.lock() else { return };
            let (done, beats) = (s.done as f64, s.beats as f64);
            let progress = match s.total {
                Some(_) => done + beats / (beats + 1.0),
                None => done + beats,
            };
            if s.last.is_some_and(|last| progress <= last) {
                return;
            }
            s.last = Some(progress);
            let message = match with_seconds {
                Some(secs) => format!("{} ({secs} s)", s.label),
                None => s.label.clone(),
            };
            Step {
                progress,
                total: s.total.map(|t| t as f64),
                message,
            }
        };
        (self.sink)(step);
    }
}

impl Progress {
    /// Starts progress labelled `label`, of `total` parts when that is known: a spinner when
    /// `spinner` and stderr is a terminal, steps to `sink` when there is one.
    pub(super) fn start(
        label: String,
        total: Option<u64>,
        spinner: bool,
        sink: Option<ProgressSink>,
    ) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let spinner = spinner && std::io::stderr().is_terminal();
        let reporter = sink.map(|sink| {
            Arc::new(Reporter {
                sink,
                state: Mutex::new(State {
                    done: 0,
                    total,
                    beats: 0,
                    label: label.clone(),
                    last: None,
                }),
            })
        });
        if let Some(r) = &reporter {
            r.send(None);
        }
        if !spinner && reporter.is_none() {
            return Progress {
                stop,
                thread: None,
                reporter,
            };
        }
        let flag = stop.clone();
        let beat = reporter.clone();
        let thread = std::thread::spawn(move || {
            const FRAMES: [&str; 4] = ["|", "/", "-", "\\"];
            let tick = Duration::from_millis(100);
            let mut err = std::io::stderr();
            let mut n = 0u64;
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(tick);
                n += 1;
                if flag.load(Ordering::Relaxed) {
                    break;
                }
                if n.is_multiple_of(10)
                    && let Some(r) = &beat
                {
                    if let Ok(mut s) = r.state.lock() {
                        s.beats += 1;
                    }
                    r.send(Some(n / 10));
                }
                // The spinner stays silent for the first second.
                if spinner && n >= 10 {
                    let label = beat
                        .as_ref()
                        .and_then(|r| r.state.lock().ok().map(|s| s.label.clone()))
                        .unwrap_or_else(|| label.clone());
                    let _ = write!(err, "\r{} {label}", FRAMES[(n % 4) as usize]);
                    let _ = err.flush();
                }
            }
            if spinner && n >= 10 {
                let _ = write!(err, "\r\x1b[2K");
                let _ = err.flush();
            }
        });
        Progress {
            stop,
            thread: Some(thread),
            reporter,
        }
    }

    /// `done` parts of the total given at the start are finished; `message` says what runs
    /// now. Without a total it only relabels.
    pub fn advance(&self, done: u64, message: impl Into<String>) {
        let Some(r) = &self.reporter else { return };
        if let Ok(mut s) = r.state.lock() {
            if s.total.is_some() && done > s.done {
                s.done = done;
                s.beats = 0;
            }
            s.label = message.into();
        }
        r.send(None);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_rise_strictly_and_carry_the_total_once_known() {
        let seen = Arc::new(Mutex::new(Vec::<Step>::new()));
        let into = seen.clone();
        let sink: ProgressSink = Arc::new(move |s| into.lock().expect("lock").push(s));
        let p = Progress::start("verifying".into(), Some(2), false, Some(sink));
        std::thread::sleep(Duration::from_millis(1_150));
        p.advance(1, "criterion 2 of 2");
        p.advance(1, "the same again");
        drop(p);
        let steps = seen.lock().expect("lock").clone();
        let shown: Vec<(f64, &str)> = steps
            .iter()
            .map(|s| (s.progress, s.message.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                (0.0, "verifying"),
                (0.5, "verifying (1 s)"),
                (1.0, "criterion 2 of 2")
            ]
        );
        assert!(steps.iter().all(|s| s.total == Some(2.0)));
    }

    #[test]
    fn without_a_total_the_steps_count_seconds() {
        let seen = Arc::new(Mutex::new(Vec::<Step>::new()));
        let into = seen.clone();
        let sink: ProgressSink = Arc::new(move |s| into.lock().expect("lock").push(s));
        let p = Progress::start("running".into(), None, false, Some(sink));
        std::thread::sleep(Duration::from_millis(2_150));
        drop(p);
        let steps = seen.lock().expect("lock").clone();
        let values: Vec<f64> = steps.iter().map(|s| s.progress).collect();
        assert_eq!(values, [0.0, 1.0, 2.0]);
        assert!(steps.iter().all(|s| s.total.is_none()));
    }
}
