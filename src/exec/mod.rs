//! L5: the only module that spawns processes other than git: verification commands of
//! acceptance criteria ([`run_shell`]: the combined output is kept only as a digest) and
//! shortcuts ([`run_captured`]: bounded tails of the output go back to the caller). Commands run
//! with `sh -c` in a given directory, with a timeout. Runtime probes ([`run_argv`]) start a
//! program by path with an argument vector and no shell.

mod argv;
mod redact;

pub use argv::{ARGV_CAP, ArgvRun, Found, Stamp, run_argv, stamp, which};
pub use redact::{REDACTED, Redactor, SECRET_VARS, redact, token_spans};

/// Removes every secret dacli reads ([`SECRET_VARS`]) from a child's environment.
fn scrub(cmd: &mut Command) {
    for var in SECRET_VARS {
        cmd.env_remove(var);
    }
}

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// A caller's request to stop a running command (an MCP client's `notifications/cancelled`):
/// set from any thread, polled by the wait loops, which then kill the command's whole process
/// group and return [`cancelled`].
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Asks every command waited on with this token to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The error a cancelled run returns: nothing it would have produced is reported.
pub fn cancelled() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Interrupted,
        "cancelled by the caller; the command's process group was killed",
    )
}

fn is_cancelled(cancel: Option<&Cancel>) -> bool {
    cancel.is_some_and(Cancel::is_cancelled)
}

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

/// Runs `command` with `sh -c` in `dir`, killing it after `timeout`. With a `cancel` token it
/// runs in its own process group, and the timeout or the cancel (then the result is
/// [`cancelled`]) kills the whole group; without one it stays in the caller's group, so a
/// terminal's Ctrl-C reaches it together with dacli. The command inherits no secret
/// ([`SECRET_VARS`]), and its last line is redacted of tokens.
pub fn run_shell(
    command: &str,
    dir: &Path,
    timeout: Duration,
    cancel: Option<&Cancel>,
) -> std::io::Result<Ran> {
    #[allow(clippy::disallowed_methods, reason = "exec owns process spawning")]
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    scrub(&mut cmd);
    let grouped = cancel.is_some();
    if grouped {
        own_group(&mut cmd);
    }
    let mut child = cmd.spawn()?;
    let stop = |child: &mut std::process::Child| {
        if grouped {
            kill_group(child.id());
        }
        let _ = child.kill();
        let _ = child.wait();
    };
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
        if is_cancelled(cancel) {
            stop(&mut child);
            return Err(cancelled());
        }
        if start.elapsed() >= timeout {
            stop(&mut child);
            timed_out = true;
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut output = out_thread.join().unwrap_or_default();
    output.extend(err_thread.join().unwrap_or_default());
    let digest = Sha256::digest(&output);
    let hex = hex::encode(digest);
    let text = redact(&String::from_utf8_lossy(&output));
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

/// Bytes of each stream kept for the caller (`stdout_tail`, `stderr_tail`).
pub const STREAM_TAIL: usize = 16 * 1024;
/// Bytes of the combined output kept for the last lines of an error message.
pub const COMBINED_TAIL: usize = 64 * 1024;
/// The exit code reported for a command killed at its timeout (as `timeout(1)` does).
pub const TIMEOUT_EXIT: i64 = 124;

/// A command to run with [`run_captured`].
#[derive(Debug, Clone)]
pub struct Spawn<'a> {
    /// Run with `sh -c`.
    pub command: &'a str,
    /// The working directory (already resolved, see [`resolve_dir`]).
    pub dir: &'a Path,
    pub timeout: Duration,
    /// Variables to set (`Some`) or remove (`None`) on top of the inherited environment.
    pub env: Vec<(&'a str, Option<String>)>,
    /// Also copy the output to this process's stdout and stderr as it arrives.
    pub stream: bool,
    /// Set by the caller to stop the run: the process group is killed, the result is
    /// [`cancelled`].
    pub cancel: Option<Cancel>,
}

/// What a command run with [`run_captured`] did. Memory stays bounded whatever it prints:
/// only the tails are kept, the digest and byte count are computed on the way.
#[derive(Debug, Clone)]
pub struct Captured {
    /// The exit code; [`TIMEOUT_EXIT`] when killed at the timeout, 128 + the signal number
    /// when killed by a signal.
    pub exit_code: i64,
    pub duration_ms: i64,
    pub timed_out: bool,
    /// The last [`STREAM_TAIL`] bytes of stdout (lossy UTF-8, cut at a character boundary).
    pub stdout_tail: String,
    /// The last [`STREAM_TAIL`] bytes of stderr.
    pub stderr_tail: String,
    /// Total bytes written to stdout and stderr.
    pub bytes: u64,
    /// `sha256:` digest of the whole output, stdout and stderr in the order they arrived.
    pub digest: String,
    /// The last lines of the combined output (at most [`COMBINED_TAIL`] bytes of it).
    pub combined_tail: String,
}

impl Captured {
    /// The last `n` non-empty lines of the combined output.
    pub fn last_lines(&self, n: usize) -> Vec<&str> {
        let mut lines: Vec<&str> = self
            .combined_tail
            .lines()
            .rev()
            .filter(|l| !l.trim().is_empty())
            .take(n)
            .collect();
        lines.reverse();
        lines
    }
}

/// The shared sink both pipe readers feed: the combined tail, the digest and the byte count.
struct Combined {
    tail: std::collections::VecDeque<u8>,
    hasher: Sha256,
    bytes: u64,
}

fn push_tail(tail: &mut std::collections::VecDeque<u8>, chunk: &[u8], cap: usize) {
    tail.extend(chunk);
    let excess = tail.len().saturating_sub(cap);
    tail.drain(..excess);
}

fn lossy_tail(bytes: &[u8]) -> String {
    // A cut tail may start inside a UTF-8 sequence: skip continuation bytes.
    let start = bytes
        .iter()
        .position(|b| (*b & 0b1100_0000) != 0b1000_0000)
        .unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// Drains one pipe: redacts tokens ([`Redactor`]), keeps the tail, feeds the shared sink and,
/// when streaming, copies each chunk to `echo`. Everything downstream (tails, digest, byte
/// count, the terminal) sees the redacted stream only.
fn drain(
    mut pipe: impl Read,
    combined: &std::sync::Mutex<Combined>,
    mut echo: Option<Box<dyn std::io::Write + Send>>,
) -> Vec<u8> {
    let mut tail = std::collections::VecDeque::new();
    let mut redactor = Redactor::default();
    let mut buf = [0u8; 8192];
    let mut pass = |chunk: &[u8], echo: &mut Option<Box<dyn std::io::Write + Send>>| {
        if chunk.is_empty() {
            return;
        }
        push_tail(&mut tail, chunk, STREAM_TAIL);
        if let Ok(mut c) = combined.lock() {
            push_tail(&mut c.tail, chunk, COMBINED_TAIL);
            c.hasher.update(chunk);
            c.bytes += chunk.len() as u64;
        }
        if let Some(out) = echo.as_mut() {
            // A closed terminal must not stop the command; the output is still captured.
            if out.write_all(chunk).and_then(|()| out.flush()).is_err() {
                *echo = None;
            }
        }
    };
    loop {
        let n = match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let ready = redactor.push(&buf[..n]);
        pass(&ready, &mut echo);
    }
    let rest = redactor.finish();
    pass(&rest, &mut echo);
    tail.into_iter().collect()
}

/// Runs `spawn.command` with `sh -c` in its own process group, stdin closed, capturing both
/// streams (bounded). At the timeout the whole process group is killed and the exit code is
/// [`TIMEOUT_EXIT`].
pub fn run_captured(spawn: &Spawn<'_>) -> std::io::Result<Captured> {
    #[allow(clippy::disallowed_methods, reason = "exec owns process spawning")]
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(spawn.command)
        .current_dir(spawn.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    scrub(&mut cmd);
    for (k, v) in &spawn.env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    own_group(&mut cmd);
    let mut child = cmd.spawn()?;
    #[allow(
        clippy::disallowed_methods,
        reason = "a timeout needs a monotonic clock"
    )]
    let start = Instant::now();
    let combined = std::sync::Arc::new(std::sync::Mutex::new(Combined {
        tail: std::collections::VecDeque::new(),
        hasher: Sha256::new(),
        bytes: 0,
    }));
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let (c1, c2) = (combined.clone(), combined.clone());
    let stream = spawn.stream;
    // Each reader reports its stream's tail when its pipe closes.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<(bool, Vec<u8>)>();
    let err_tx = done_tx.clone();
    std::thread::spawn(move || {
        let echo: Option<Box<dyn std::io::Write + Send>> =
            stream.then(|| Box::new(std::io::stdout()) as _);
        let tail = stdout.map(|p| drain(p, &c1, echo)).unwrap_or_default();
        let _ = done_tx.send((true, tail));
    });
    std::thread::spawn(move || {
        let echo: Option<Box<dyn std::io::Write + Send>> =
            stream.then(|| Box::new(std::io::stderr()) as _);
        let tail = stderr.map(|p| drain(p, &c2, echo)).unwrap_or_default();
        let _ = err_tx.send((false, tail));
    });
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if is_cancelled(spawn.cancel.as_ref()) {
            kill_group(child.id());
            let _ = child.kill();
            let _ = child.wait();
            return Err(cancelled());
        }
        if start.elapsed() >= spawn.timeout {
            kill_group(child.id());
            let _ = child.kill();
            let _ = child.wait();
            timed_out = true;
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // Processes the command left behind may still hold the pipes open: wait for them until
    // the deadline, then kill the group, so a run never outlives its timeout.
    let (mut stdout_tail, mut stderr_tail) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        let left = spawn.timeout.saturating_sub(start.elapsed());
        let got = match done_rx.recv_timeout(left) {
            Ok(got) => Some(got),
            Err(_) => {
                kill_group(child.id());
                timed_out = true;
                done_rx.recv_timeout(Duration::from_secs(5)).ok()
            }
        };
        match got {
            Some((true, tail)) => stdout_tail = tail,
            Some((false, tail)) => stderr_tail = tail,
            None => break,
        }
    }
    let duration_ms = start.elapsed().as_millis() as i64;
    let (combined_tail, digest, bytes) = match combined.lock() {
        Ok(c) => {
            let tail: Vec<u8> = c.tail.iter().copied().collect();
            let hex = hex::encode(c.hasher.clone().finalize());
            (lossy_tail(&tail), format!("sha256:{hex}"), c.bytes)
        }
        Err(_) => (String::new(), String::new(), 0),
    };
    Ok(Captured {
        exit_code: if timed_out {
            TIMEOUT_EXIT
        } else {
            status.map_or(-1, exit_code_of)
        },
        duration_ms,
        timed_out,
        stdout_tail: lossy_tail(&stdout_tail),
        stderr_tail: lossy_tail(&stderr_tail),
        bytes,
        digest,
        combined_tail,
    })
}

fn exit_code_of(status: std::process::ExitStatus) -> i64 {
    if let Some(code) = status.code() {
        return i64::from(code);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return 128 + i64::from(signal);
        }
    }
    -1
}

/// Starts the command as the leader of a new process group, so that [`kill_group`] reaches
/// everything it starts (a background `sleep` included) and nothing else.
fn own_group(cmd: &mut Command) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    #[cfg(not(unix))]
    let _ = cmd;
}

/// Kills the process group `pgid` (the command and everything it started). Only a group this
/// module created is ever named: its leader's pid, never 0 or 1 (which would reach this
/// process's own group or every process).
fn kill_group(pgid: u32) {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, Signal, kill_process_group};
        if pgid > 1
            && let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw)
        {
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }
    #[cfg(not(unix))]
    let _ = pgid;
}

/// Why a working directory was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirError {
    /// It does not exist (or is not a directory).
    Missing,
    /// Once symlinks are resolved it lies outside the work tree.
    Escapes,
}

/// Resolves the repository path `rel` (already checked syntactically) against the work-tree
/// `root`: it must exist, be a directory and, with every symlink resolved, stay inside the
/// work tree. `None` is the root itself. Returns the resolved path.
pub fn resolve_dir(root: &Path, rel: Option<&str>) -> Result<std::path::PathBuf, DirError> {
    let root = std::fs::canonicalize(root).map_err(|_| DirError::Missing)?;
    let Some(rel) = rel else {
        return Ok(root);
    };
    let dir = std::fs::canonicalize(root.join(rel)).map_err(|_| DirError::Missing)?;
    if !dir.starts_with(&root) {
        return Err(DirError::Escapes);
    }
    if !dir.is_dir() {
        return Err(DirError::Missing);
    }
    Ok(dir)
}

/// Whether the repository path `rel` would leave the work tree `root` once resolved: its
/// longest existing prefix is resolved (symlinks included) and must stay inside. A path that
/// does not exist yet passes if its existing part does.
pub fn dir_escapes(root: &Path, rel: &str) -> bool {
    let Ok(root) = std::fs::canonicalize(root) else {
        return true;
    };
    let mut probe = root.join(rel);
    loop {
        if let Ok(real) = std::fs::canonicalize(&probe) {
            return !real.starts_with(&root);
        }
        if !probe.pop() {
            return true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spawn(command: &str, timeout_ms: u64) -> Captured {
        run_captured(&Spawn {
            command,
            dir: Path::new("."),
            timeout: Duration::from_millis(timeout_ms),
            env: vec![("DACLI_SHORTCUT", Some("t".into()))],
            stream: false,
            cancel: None,
        })
        .expect("sh runs")
    }

    #[test]
    fn output_is_bounded_and_counted() {
        let ran = spawn(
            "i=0; while [ $i -lt 2000 ]; do printf '%049d\\n' $i; i=$((i+1)); done; echo oops >&2; exit 3",
            20_000,
        );
        assert_eq!(ran.exit_code, 3);
        assert_eq!(ran.bytes, 2000 * 50 + 5);
        assert!(ran.stdout_tail.len() <= STREAM_TAIL);
        assert!(ran.stdout_tail.ends_with("1999\n"));
        assert_eq!(ran.stderr_tail, "oops\n");
        assert_eq!(ran.last_lines(20).len(), 20);
        assert!(ran.digest.starts_with("sha256:"));
    }

    #[test]
    fn the_environment_is_passed() {
        assert_eq!(
            spawn("printf %s \"$DACLI_SHORTCUT\"", 5_000).stdout_tail,
            "t"
        );
    }

    #[test]
    fn a_timeout_kills_the_group_and_exits_124() {
        let ran = spawn("sleep 30 & sleep 30", 300);
        assert!(ran.timed_out);
        assert_eq!(ran.exit_code, TIMEOUT_EXIT);
        assert!(ran.duration_ms < 10_000, "{}", ran.duration_ms);
        // A finished command whose leftover child holds the pipe cannot outlive the timeout.
        let ran = spawn("sleep 30 &", 300);
        assert!(ran.duration_ms < 10_000 && ran.timed_out);
    }

    #[test]
    fn a_cancel_kills_the_whole_group_and_reports_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let marker = dir.path().join("late");
        let command = format!("(sleep 2; touch '{}') & sleep 30", marker.display());
        let cancel = Cancel::new();
        let setter = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            setter.cancel();
        });
        let got = run_captured(&Spawn {
            command: &command,
            dir: dir.path(),
            timeout: Duration::from_secs(60),
            env: Vec::new(),
            stream: false,
            cancel: Some(cancel.clone()),
        });
        let err = got.expect_err("a cancelled run has no result");
        assert_eq!(err.kind(), std::io::ErrorKind::Interrupted);
        let shell = run_shell(&command, dir.path(), Duration::from_secs(60), Some(&cancel));
        assert!(shell.is_err(), "already cancelled: stopped at once");
        std::thread::sleep(Duration::from_millis(2_500));
        assert!(!marker.exists(), "the background child outlived the cancel");
    }
}

/// What [`run_program`] saw: the exit code (-1 when killed at the timeout or by a signal) and
/// stdout, cut at [`STREAM_TAIL`] bytes.
#[derive(Clone)]
pub struct ProgramOutput {
    pub exit_code: i64,
    pub stdout: String,
}

impl std::fmt::Debug for ProgramOutput {
    // The output may be a credential (`gh auth token`): never shown by `Debug`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgramOutput")
            .field("exit_code", &self.exit_code)
            .field("stdout", &format_args!("[{} bytes]", self.stdout.len()))
            .finish()
    }
}

/// Runs `program` with `args` directly (no shell), stdin and stderr closed, killing it after
/// `timeout`. For helpers whose stdout is the product, such as `gh auth token`: the caller
/// decides what may be shown of it.
pub fn run_program(
    program: &str,
    args: &[&str],
    timeout: Duration,
) -> std::io::Result<ProgramOutput> {
    #[allow(clippy::disallowed_methods, reason = "exec owns process spawning")]
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    scrub(&mut cmd);
    let mut child = cmd.spawn()?;
    #[allow(
        clippy::disallowed_methods,
        reason = "a timeout needs a monotonic clock"
    )]
    let start = Instant::now();
    let mut stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.take(STREAM_TAIL as u64).read_to_end(&mut buf);
        }
        buf
    });
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if start.elapsed() >= timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = reader.join().unwrap_or_default();
    Ok(ProgramOutput {
        exit_code: status.and_then(|s| s.code()).map_or(-1, i64::from),
        stdout: String::from_utf8_lossy(&out).into_owned(),
    })
}

/// Runs the user's editor (`$VISUAL`/`$EDITOR`, which may carry arguments, so through
/// `sh -c`) on `file` in `dir`, on the terminal dacli runs on (stdio inherited), and waits for
/// it. Returns its exit code (-1 when a signal ended it).
pub fn run_editor(editor: &str, file: &Path, dir: &Path) -> std::io::Result<i64> {
    #[allow(clippy::disallowed_methods, reason = "exec owns process spawning")]
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(file)
        .current_dir(dir);
    scrub(&mut cmd);
    let status = cmd.status()?;
    Ok(status.code().map_or(-1, i64::from))
}
