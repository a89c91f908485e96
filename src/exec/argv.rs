//! Running a program without a shell ([`run_argv`]) and finding one on `PATH` ([`which`]),
//! for the probes of `runtime doctor`: the program is started by path with an argument
//! vector, so nothing in an adapter file is ever read as shell syntax.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Bytes kept of each stream of a [`run_argv`] run; the rest is read and dropped, so a
/// program printing without end can neither fill memory nor block on a full pipe.
pub const ARGV_CAP: usize = 256 * 1024;

/// What a program run with [`run_argv`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgvRun {
    /// The exit code; `None` when killed (at the timeout, or by a signal).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
    /// The first [`ARGV_CAP`] bytes of stdout.
    pub stdout: Vec<u8>,
    /// The first [`ARGV_CAP`] bytes of stderr.
    pub stderr: Vec<u8>,
    /// Whether either stream was longer than what was kept.
    pub truncated: bool,
}

/// Runs `program` (a path, not looked up) with `args`, no shell, stdin closed, in its own
/// process group, with every secret dacli reads removed from its environment (a probed
/// program never sees the caller's token). At `timeout` the whole group is killed; processes the program
/// left behind that still hold its pipes are killed at the same deadline, so the call never
/// outlives its timeout by more than the kill itself.
pub fn run_argv(program: &Path, args: &[String], timeout: Duration) -> std::io::Result<ArgvRun> {
    #[allow(clippy::disallowed_methods, reason = "exec owns process spawning")]
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    super::scrub(&mut cmd);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = cmd.spawn()?;
    #[allow(
        clippy::disallowed_methods,
        reason = "a timeout needs a monotonic clock"
    )]
    let start = Instant::now();
    let (tx, rx) = mpsc::channel::<(bool, Vec<u8>, bool)>();
    let err_tx = tx.clone();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    std::thread::spawn(move || {
        let (kept, cut) = stdout.map(read_capped).unwrap_or_default();
        let _ = tx.send((true, kept, cut));
    });
    std::thread::spawn(move || {
        let (kept, cut) = stderr.map(read_capped).unwrap_or_default();
        let _ = err_tx.send((false, kept, cut));
    });
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if start.elapsed() >= timeout {
            super::kill_group(child.id());
            let _ = child.kill();
            let _ = child.wait();
            timed_out = true;
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let (mut out, mut err, mut truncated) = (Vec::new(), Vec::new(), false);
    for _ in 0..2 {
        let left = timeout.saturating_sub(start.elapsed());
        let got = match rx.recv_timeout(left) {
            Ok(got) => Some(got),
            Err(_) => {
                super::kill_group(child.id());
                timed_out = true;
                rx.recv_timeout(Duration::from_secs(5)).ok()
            }
        };
        match got {
            Some((is_out, kept, cut)) => {
                truncated |= cut;
                if is_out {
                    out = kept;
                } else {
                    err = kept;
                }
            }
            None => break,
        }
    }
    Ok(ArgvRun {
        exit_code: if timed_out {
            None
        } else {
            status.and_then(|s| s.code())
        },
        timed_out,
        duration_ms: start.elapsed().as_millis() as u64,
        stdout: super::redact::redact_bytes(&out),
        stderr: super::redact::redact_bytes(&err),
        truncated,
    })
}

/// Reads a pipe to its end, keeping the first [`ARGV_CAP`] bytes; true when more came.
fn read_capped(mut pipe: impl Read) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut cut = false;
    let mut buf = [0u8; 8192];
    loop {
        let n = match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let room = ARGV_CAP - kept.len();
        if n > room {
            cut = true;
        }
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
    (kept, cut)
}

/// A program found by [`which`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Where it was found (a `PATH` entry joined with the name, or the given path).
    pub path: PathBuf,
    /// The 1-based index of the `PATH` entry it was found in; `None` for a path given with a
    /// `/`.
    pub path_entry: Option<usize>,
}

/// Finds `program` as a shell would, without running one: a name containing `/` is a path
/// (relative ones against `base`, the work-tree root); any other name is looked up in the
/// entries of `path_var` in order. Empty and relative `PATH` entries are skipped: they would
/// make the answer depend on the directory dacli happens to run in. Only a regular file
/// (symlinks followed) with an execute bit counts.
pub fn which(program: &str, path_var: Option<&str>, base: &Path) -> Option<Found> {
    if program.is_empty() || program.contains('\0') {
        return None;
    }
    if program.contains('/') {
        let path = base.join(program);
        return is_executable(&path).then_some(Found {
            path,
            path_entry: None,
        });
    }
    let path_var = path_var?;
    std::env::split_paths(path_var)
        .enumerate()
        .filter(|(_, dir)| dir.is_absolute())
        .map(|(i, dir)| (i + 1, dir.join(program)))
        .find(|(_, path)| is_executable(path))
        .map(|(i, path)| Found {
            path,
            path_entry: Some(i),
        })
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    true
}

/// What identifies one installed version of a binary on this machine: its real path (every
/// symlink resolved), size and modification time. A new install changes at least one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    pub real_path: PathBuf,
    pub size: u64,
    /// Nanoseconds since the Unix epoch (negative before it).
    pub mtime_ns: i64,
}

/// The stamp of the file at `path`; `None` when it cannot be read.
pub fn stamp(path: &Path) -> Option<Stamp> {
    let real_path = std::fs::canonicalize(path).ok()?;
    let meta = std::fs::metadata(&real_path).ok()?;
    let modified = meta.modified().ok()?;
    let mtime_ns = match modified.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_nanos()).map_or(i64::MIN, |n| -n),
    };
    Some(Stamp {
        real_path,
        size: meta.len(),
        mtime_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout_ms: u64) -> ArgvRun {
        run_argv(
            Path::new("/bin/sh"),
            &["-c".to_string(), script.to_string()],
            Duration::from_millis(timeout_ms),
        )
        .expect("sh runs")
    }

    #[test]
    fn arguments_are_passed_as_words_and_the_output_is_bounded() {
        let ran = run_argv(
            Path::new("/bin/echo"),
            &["a b; c".to_string(), "$HOME".to_string()],
            Duration::from_secs(10),
        )
        .expect("echo runs");
        assert_eq!(ran.stdout, b"a b; c $HOME\n");
        assert_eq!(ran.exit_code, Some(0));
        let ran = sh("head -c 600000 /dev/zero; echo oops >&2; exit 3", 20_000);
        assert_eq!(ran.stdout.len(), ARGV_CAP);
        assert!(ran.truncated);
        assert_eq!(ran.stderr, b"oops\n");
        assert_eq!(ran.exit_code, Some(3));
    }

    #[test]
    fn a_timeout_kills_the_group() {
        let ran = sh("sleep 30 & sleep 30", 300);
        assert!(ran.timed_out);
        assert_eq!(ran.exit_code, None);
        assert!(ran.duration_ms < 10_000, "{}", ran.duration_ms);
        let ran = sh("sleep 30 &", 300);
        assert!(ran.timed_out && ran.duration_ms < 10_000);
    }

    #[test]
    fn which_follows_path_order_and_skips_relative_entries() {
        let dir = tempfile::tempdir().expect("dir");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        for d in [&a, &b] {
            #[allow(clippy::disallowed_methods, reason = "test setup")]
            std::fs::create_dir(d).expect("mkdir");
        }
        #[allow(clippy::disallowed_methods, reason = "test setup")]
        std::fs::write(b.join("tool"), "#!/bin/sh\n").expect("write");
        #[allow(clippy::disallowed_methods, reason = "test setup")]
        std::fs::write(a.join("tool"), "not executable").expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(b.join("tool"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        let path = format!("rel:{}:{}", a.display(), b.display());
        let found = which("tool", Some(&path), dir.path()).expect("found");
        assert_eq!(found.path, b.join("tool"));
        assert_eq!(found.path_entry, Some(3));
        assert_eq!(which("nope", Some(&path), dir.path()), None);
        assert_eq!(which("tool", None, dir.path()), None);
        let found = which("b/tool", None, dir.path()).expect("a path");
        assert_eq!(found.path_entry, None);
        assert!(stamp(&found.path).is_some_and(|s| s.size == 10));
    }
}
