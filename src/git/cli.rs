//! The `git` binary, for what gix does not do the way the user's git does: fetch (credential
//! helpers, ssh config, `insteadOf`), `worktree remove` (never with `--force`) and
//! `worktree prune`. Every child runs with `LC_ALL=C`, no prompt, no pager and a deadline;
//! `--` precedes refs; only exit codes are interpreted, never English text.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::Error;

/// How long a fetch may take before it is stopped.
pub const FETCH_DEADLINE: Duration = Duration::from_secs(120);
/// How long a local porcelain command may take.
pub const LOCAL_DEADLINE: Duration = Duration::from_secs(60);

/// The private namespace an observed base is fetched into; the user's `refs/remotes/*` never
/// move (GIT_GITHUB.md B0).
pub fn observed_ref(base: &str) -> String {
    format!("refs/dacli/observed/{base}")
}

/// `git fetch` of one branch of `remote` into [`observed_ref`]; returns that ref's name.
pub fn fetch_base(root: &Path, remote: &str, base: &str) -> Result<String, Error> {
    let target = observed_ref(base);
    let refspec = format!("+refs/heads/{base}:{target}");
    run(
        root,
        &[
            "fetch",
            "-q",
            "--no-tags",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
            // Without an empty refmap git also updates `refs/remotes/<remote>/<base>`
            // ("opportunistic" update); the user's remote-tracking refs must never move.
            "--refmap=",
            remote,
            "--",
            &refspec,
        ],
        FETCH_DEADLINE,
    )?;
    Ok(target)
}

/// `git worktree remove` without `--force`: git itself refuses a modified, untracked or
/// locked tree, a second guard behind the proofs.
pub fn worktree_remove(root: &Path, path: &Path) -> Result<(), Error> {
    let p = path.to_string_lossy();
    run(root, &["worktree", "remove", "--", &p], LOCAL_DEADLINE)
}

/// `git worktree prune --expire now`: drops administrative entries whose checkout is gone.
pub fn worktree_prune(root: &Path) -> Result<(), Error> {
    run(
        root,
        &["worktree", "prune", "--expire", "now"],
        LOCAL_DEADLINE,
    )
}

/// Runs `git -C root <args>` with the adapter's environment and deadline. Its stdout is not
/// read (nothing here parses it), so a chatty child can never fill a pipe and stall.
fn run(root: &Path, args: &[&str], deadline: Duration) -> Result<(), Error> {
    let shown = args.join(" ");
    #[allow(
        clippy::disallowed_methods,
        reason = "the git module owns git subprocesses"
    )]
    let mut child = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GCM_INTERACTIVE", "never")
        .env("GIT_PAGER", "cat")
        // Hooks and credential helpers are repository code: they never see the agent token.
        .env_remove("DACLI_AGENT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::Unavailable(e.to_string()))?;
    #[allow(
        clippy::disallowed_methods,
        reason = "a child deadline needs a monotonic clock"
    )]
    let start = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::Timeout {
                    args: shown,
                    seconds: deadline.as_secs(),
                });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(Error::Unavailable(e.to_string())),
        }
    };
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.by_ref().take(1 << 16).read_to_string(&mut stderr);
    }
    if status.success() {
        Ok(())
    } else {
        Err(Error::Command {
            args: shown,
            code: status.code().unwrap_or(-1),
            stderr: stderr.lines().last().unwrap_or("").trim().to_string(),
        })
    }
}
