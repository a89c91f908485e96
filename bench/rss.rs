//! `bench rss PROG ARGS...`: runs one command (stdout and stderr discarded) and prints
//! `<exit code> <peak RSS in KiB>`.
//!
//! The peak comes from `getrusage(RUSAGE_CHILDREN)` once the command was waited for: this process
//! has no other child, so the figure is that command's own (with any child it waited for), and no
//! tool such as GNU `time` needs to be installed. The harness runs this subcommand of itself
//! for every figure whose memory it reports, apart from the timed runs.

use std::path::Path;
use std::process::{Command, Stdio};

pub fn main(args: &[String]) -> Result<(), String> {
    let [prog, rest @ ..] = args else {
        return Err(crate::USAGE.to_string());
    };
    let status = Command::new(prog)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("{prog}: {e}"))?;
    let kib = children_peak_kib()?;
    println!("{} {kib}", status.code().unwrap_or(-1));
    Ok(())
}

#[cfg(unix)]
fn children_peak_kib() -> Result<u64, String> {
    use nix::sys::resource::{UsageWho, getrusage};
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).map_err(|e| format!("getrusage: {e}"))?;
    // Linux reports ru_maxrss in KiB.
    Ok(u64::try_from(usage.max_rss()).unwrap_or(0))
}

#[cfg(not(unix))]
fn children_peak_kib() -> Result<u64, String> {
    Err("peak RSS needs getrusage (unix)".into())
}

/// Peak RSS of one run of `dacli argv` in `dir` as `token`, through `bench rss`; `None` when
/// the command fails or memory cannot be read here.
pub fn peak_kib(dacli: &Path, dir: &Path, token: Option<&str>, argv: &[String]) -> Option<u64> {
    let me = std::env::current_exe().ok()?;
    let mut cmd = Command::new(me);
    cmd.current_dir(dir)
        .arg("rss")
        .arg(dacli)
        .args(argv)
        .env_remove("DACLI_AGENT")
        .stderr(Stdio::null());
    if let Some(t) = token {
        cmd.env("DACLI_AGENT", t);
    }
    let out = cmd.output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (code, kib) = text.trim().split_once(' ')?;
    if code != "0" {
        return None;
    }
    kib.parse().ok()
}
