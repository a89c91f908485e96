//! L5: the only module that spawns processes other than git: verification commands of
//! acceptance criteria (and, later, shortcuts). Commands run with `sh -c` in a given directory,
//! with a timeout; their combined output is kept only as a digest.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// What a finished command did.
#[derive(Debug, Clone)]
pub struct Ran {
    /// The exit code; -1 when killed by a signal or the timeout.
    pub exit_code: i64,
    /// `sha256:` digest of stdout followed by stderr.
    pub output: String,
    /// The last non-empty line of the output, for messages.
    pub last_line: String,
    pub duration_ms: i64,
    pub timed_out: bool,
}

/// Runs `command` with `sh -c` in `dir`, killing it after `timeout`.
pub fn run_shell(command: &str, dir: &Path, timeout: Duration) -> std::io::Result<Ran> {
    #[allow(clippy::disallowed_methods, reason = "exec owns process spawning")]
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    #[allow(
        clippy::disallowed_methods,
        reason = "a timeout needs a monotonic clock"
    )]
    let start = Instant::now();
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    // Drain both pipes on threads so a chatty command cannot block on a full pipe.
    let out_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.read_to_end(&mut buf);
        }
        buf
    });
    let err_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stderr.as_mut() {
            let _ = s.read_to_end(&mut buf);
        }
        buf
    });
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if start.elapsed() >= timeout {
            let _ = child.kill();
            let _ = child.wait();
            timed_out = true;
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut output = out_thread.join().unwrap_or_default();
    output.extend(err_thread.join().unwrap_or_default());
    let digest = Sha256::digest(&output);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let text = String::from_utf8_lossy(&output);
    let last_line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string();
    Ok(Ran {
        exit_code: status.and_then(|s| s.code()).map_or(-1, i64::from),
        output: format!("sha256:{hex}"),
        last_line,
        duration_ms: start.elapsed().as_millis() as i64,
        timed_out,
    })
}
