//! Progress on stderr for work that can take more than a second (verification commands,
//! later fetches and GitHub calls): a spinner with a label, only on a terminal, never with
//! `--json` or `--quiet`, and only once the work has taken a second, so fast calls print
//! nothing. The line is cleared when the work ends.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// A running spinner; dropping it stops and clears it.
pub struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts a spinner labelled `label` when `enabled` and stderr is a terminal.
    pub(super) fn start(label: String, enabled: bool) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        if !enabled || !std::io::stderr().is_terminal() {
            return Progress { stop, thread: None };
        }
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            const FRAMES: [&str; 4] = ["|", "/", "-", "\\"];
            let tick = Duration::from_millis(100);
            // Stay silent for the first second.
            for _ in 0..10 {
                if flag.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(tick);
            }
            let mut n = 0usize;
            let mut err = std::io::stderr();
            while !flag.load(Ordering::Relaxed) {
                let _ = write!(err, "\r{} {label}", FRAMES[n % FRAMES.len()]);
                let _ = err.flush();
                n += 1;
                std::thread::sleep(tick);
            }
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        });
        Progress {
            stop,
            thread: Some(thread),
        }
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
