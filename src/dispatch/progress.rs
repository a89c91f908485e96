//! Progress of work that can take more than a second (verification commands, shortcuts,
//! cleanup and reconciliation applies, GitHub calls), reported two ways:
//!
//! - to a terminal: a spinner with a label on stderr, only when stderr is a terminal, never
//!   with `--json` or `--quiet`, and only once the work has taken a second, so fast calls
//!   print nothing; each [`Progress::advance`] relabels it (the phase, the part counted), the
//!   line is cut to the terminal's width so it redraws in place, and it is cleared when the
//!   work ends;
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
    reporter: Arc<Reporter>,
}

/// The state both the spinner and the sink read; `sink` is absent on a plain terminal.
struct Reporter {
    sink: Option<ProgressSink>,
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
        let Some(sink) = &self.sink else { return };
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
        sink(step);
    }

    /// What the spinner shows now: the latest label.
    fn label(&self) -> String {
        self.state
            .lock()
            .map(|s| s.label.clone())
            .unwrap_or_default()
    }
}

/// `label` cut to fit `width` columns after the spinner's frame and space, with an ellipsis.
fn fit(label: &str, width: usize) -> String {
    let room = width.saturating_sub(3).max(10);
    if label.chars().count() <= room {
        return label.to_string();
    }
    let mut cut: String = label.chars().take(room - 1).collect();
    cut.push('…');
    cut
}

impl Progress {
    /// Starts progress labelled `label`, of `total` parts when that is known: a spinner
    /// `width` columns wide at most when `spinner` and stderr is a terminal, steps to `sink`
    /// when there is one.
    pub(super) fn start(
        label: String,
        total: Option<u64>,
        spinner: bool,
        width: usize,
        sink: Option<ProgressSink>,
    ) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let spinner = spinner && std::io::stderr().is_terminal();
        let has_sink = sink.is_some();
        let reporter = Arc::new(Reporter {
            sink,
            state: Mutex::new(State {
                done: 0,
                total,
                beats: 0,
                label,
                last: None,
            }),
        });
        reporter.send(None);
        if !spinner && !has_sink {
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
                if n.is_multiple_of(10) && has_sink {
                    if let Ok(mut s) = beat.state.lock() {
                        s.beats += 1;
                    }
                    beat.send(Some(n / 10));
                }
                // The spinner stays silent for the first second; the whole line is redrawn
                // each frame, so a shorter label leaves nothing of the one before.
                if spinner && n >= 10 {
                    let label = fit(&beat.label(), width);
                    let _ = write!(err, "\r\x1b[2K{} {label}", FRAMES[(n % 4) as usize]);
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
        let r = &self.reporter;
        if let Ok(mut s) = r.state.lock() {
            if s.total.is_some() && done > s.done {
                s.done = done;
                s.beats = 0;
            }
            s.label = message.into();
        }
        r.send(None);
    }

    /// Names what runs now (a phase) without counting a part done.
    pub fn relabel(&self, message: impl Into<String>) {
        let done = self.reporter.state.lock().map(|s| s.done).unwrap_or(0);
        self.advance(done, message);
    }
}

impl super::Ctx<'_> {
    /// A spinner saying the index is being built, when the workspace's index database does
    /// not exist yet (a fresh clone, or a deleted `cache/`): the first read then parses every
    /// file, which takes seconds in a large workspace. Held across a command's first load;
    /// `None` once the index exists, and silent for a load that takes under a second.
    pub fn index_progress(&self) -> Option<Progress> {
        let ws = self.ws().ok()?;
        if ws.index.path().exists() {
            return None;
        }
        Some(
            self.progress(
                "building the index (the first read in this clone; later reads reuse it)",
            ),
        )
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
        let p = Progress::start("verifying".into(), Some(2), false, 80, Some(sink));
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
        let p = Progress::start("running".into(), None, false, 80, Some(sink));
        std::thread::sleep(Duration::from_millis(2_150));
        drop(p);
        let steps = seen.lock().expect("lock").clone();
        let values: Vec<f64> = steps.iter().map(|s| s.progress).collect();
        assert_eq!(values, [0.0, 1.0, 2.0]);
        assert!(steps.iter().all(|s| s.total.is_none()));
    }

    #[test]
    fn a_long_label_is_cut_to_the_width_with_an_ellipsis() {
        assert_eq!(fit("short", 80), "short");
        let cut = fit(&"x".repeat(100), 40);
        assert_eq!(cut.chars().count(), 37);
        assert!(cut.ends_with('…'));
    }
}
