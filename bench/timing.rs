//! What the sections that build their own git history share: running git with a fixed
//! identity, and timing one dacli run in wall and CPU time.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Instant;

use crate::run::command;

/// `git args` in `dir` with a fixed author and committer; its trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .current_dir(dir)
        // No background `gc --auto` after a big commit: it holds gc's lock when the bench
        // packs the history itself, and it would compete with what is being timed.
        .args(["-c", "gc.auto=0", "-c", "maintenance.auto=false"])
        .args(args)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// CPU time (user and system, ms) of every child this process has waited for.
#[cfg(unix)]
fn children_cpu_ms() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0.0, |u| {
        let ms =
            |t: nix::sys::time::TimeVal| t.tv_sec() as f64 * 1000.0 + t.tv_usec() as f64 / 1000.0;
        ms(u.user_time()) + ms(u.system_time())
    })
}

#[cfg(not(unix))]
fn children_cpu_ms() -> f64 {
    0.0
}

/// One run of `dacli argv` in `dir`, which must succeed: wall-clock ms, CPU ms (user and
/// system: on a loaded shared machine the wall time mostly measures the other processes) and
/// what it printed.
pub fn timed(dacli: &Path, dir: &Path, argv: &[&str]) -> Result<(f64, f64, Output), String> {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let cpu = children_cpu_ms();
    let started = Instant::now();
    let out = command(dacli, dir, None, &argv)
        .output()
        .map_err(|e| e.to_string())?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let cpu = children_cpu_ms() - cpu;
    if !out.status.success() {
        return Err(format!(
            "dacli {argv:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok((ms, cpu, out))
}
