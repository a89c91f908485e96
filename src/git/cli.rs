//! The `git` binary, for what gix does not do the way the user's git does: fetch (credential
//! helpers, ssh config, `insteadOf`), `worktree remove` (never with `--force`),
//! `worktree prune`, and the list of ignored files `worktree remove` would delete (asked of
//! the same git that deletes them). Every child runs with `LC_ALL=C`, no prompt, no pager and
//! a deadline; `--` precedes refs; only exit codes and `-z` porcelain output are interpreted,
//! never English text.

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

/// An ignored file in a work tree: what `git worktree remove` deletes without a word.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ignored {
    /// Relative to the work tree, `/`-separated.
    pub path: String,
    /// Its size in bytes when listed (`None` when it could not be read).
    pub bytes: Option<u64>,
    /// `sha256:<hex>` of a regular file's content up to [`IGNORED_HASHED_MOST`] bytes, so
    /// that an edit which keeps the size is drift too; larger files and others are judged by
    /// their size and modification time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Modification time in nanoseconds since the epoch, when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_ns: Option<i128>,
}

/// Ignored files up to this size are listed with a digest of their content.
pub const IGNORED_HASHED_MOST: u64 = 1 << 20;

fn ignored(root: &Path, rel: String) -> Ignored {
    use sha2::{Digest, Sha256};
    let full = root.join(&rel);
    let meta = std::fs::symlink_metadata(&full).ok();
    let modified_ns = meta
        .as_ref()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i128);
    let sha256 = meta
        .as_ref()
        .filter(|m| m.is_file() && m.len() <= IGNORED_HASHED_MOST)
        .and_then(|_| std::fs::read(&full).ok())
        .map(|bytes| format!("sha256:{}", hex::encode(Sha256::digest(&bytes))));
    Ignored {
        path: rel,
        bytes: meta.map(|m| m.len()),
        sha256,
        modified_ns,
    }
}

/// Most ignored files listed; a tree with more is reported as having at least this many.
pub const IGNORED_MOST: usize = 10_000;

/// Every ignored file of the work tree at `path`, each file inside an ignored directory
/// named on its own, sorted: `git status --ignored --untracked-files=all`, the same git that
/// `git worktree remove` asks. A nested repository inside an ignored directory is listed as
/// its directory.
pub fn ignored_files(path: &Path) -> Result<Vec<Ignored>, Error> {
    let out = output(
        path,
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--ignored=traditional",
            "--untracked-files=all",
            "--no-renames",
        ],
        LOCAL_DEADLINE,
    )?;
    let mut found = Vec::new();
    for record in out.split(|b| *b == 0) {
        let Some(rel) = record.strip_prefix(b"!! ") else {
            continue;
        };
        let rel = String::from_utf8_lossy(rel).into_owned();
        found.push(ignored(path, rel));
        if found.len() >= IGNORED_MOST {
            break;
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// `git -C root <args>` with the adapter's environment: no prompts, no pager, C locale, and
/// no agent token, since hooks, fsmonitor and credential helpers are repository code.
pub(super) fn git(root: &Path, args: &[&str]) -> Command {
    #[allow(
        clippy::disallowed_methods,
        reason = "the git module owns git subprocesses"
    )]
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(root)
        .args(args)
        .env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GCM_INTERACTIVE", "never")
        .env("GIT_PAGER", "cat")
        .env_remove("DACLI_AGENT")
        .stdin(Stdio::null());
    cmd
}

/// Runs `git -C root <args>` like [`run`] and returns its stdout (at most 64 MiB), read on a
/// thread of its own so that a full pipe never stalls the child.
pub(super) fn output(root: &Path, args: &[&str], deadline: Duration) -> Result<Vec<u8>, Error> {
    const MOST: u64 = 64 << 20;
    let shown = args.join(" ");
    let mut child = git(root, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::Unavailable(e.to_string()))?;
    let reader = child.stdout.take().map(|out| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut out = out;
            let _ = out.by_ref().take(MOST).read_to_end(&mut buf);
            // Drain the rest so the child can finish; it is not kept.
            let _ = std::io::copy(&mut out, &mut std::io::sink());
            buf
        })
    });
    let status = wait(&mut child, &shown, deadline)?;
    let stdout = reader.and_then(|r| r.join().ok()).unwrap_or_default();
    finish(&mut child, status, shown)?;
    Ok(stdout)
}

/// Waits for `child` until `deadline`, killing it past that.
fn wait(
    child: &mut std::process::Child,
    shown: &str,
    deadline: Duration,
) -> Result<std::process::ExitStatus, Error> {
    #[allow(
        clippy::disallowed_methods,
        reason = "a child deadline needs a monotonic clock"
    )]
    let start = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if start.elapsed() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::Timeout {
                    args: shown.to_string(),
                    seconds: deadline.as_secs(),
                });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(Error::Unavailable(e.to_string())),
        }
    }
}

/// The child's exit status as a result, with the last line of its stderr on failure.
fn finish(
    child: &mut std::process::Child,
    status: std::process::ExitStatus,
    shown: String,
) -> Result<(), Error> {
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

/// Runs `git -C root <args>` with the adapter's environment and deadline. Its stdout is not
/// read (nothing here parses it), so a chatty child can never fill a pipe and stall.
pub(super) fn run(root: &Path, args: &[&str], deadline: Duration) -> Result<(), Error> {
    let shown = args.join(" ");
    let mut child = git(root, args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::Unavailable(e.to_string()))?;
    let status = wait(&mut child, &shown, deadline)?;
    finish(&mut child, status, shown)
}

/// Fetches pull request `n` from `remote` into dacli's private refs, as `git` fetches it:
/// its head (`refs/pull/<n>/head`) and, when the host offers one, its test merge with the base
/// (`refs/pull/<n>/merge`, whose first parent is the base branch's tip). No user ref moves.
/// Returns the two private refs (`None`: no test merge, e.g. a conflicting pull request).
pub fn fetch_pull(root: &Path, remote: &str, n: u64) -> Result<(String, Option<String>), Error> {
    let fetch = |from: &str, to: &str| {
        let refspec = format!("+{from}:{to}");
        run(
            root,
            &[
                "fetch",
                "-q",
                "--no-tags",
                "--no-write-fetch-head",
                "--no-recurse-submodules",
                "--refmap=",
                remote,
                "--",
                &refspec,
            ],
            FETCH_DEADLINE,
        )
    };
    let head = format!("refs/dacli/review/pr-{n}/head");
    let merge = format!("refs/dacli/review/pr-{n}/merge");
    fetch(&format!("refs/pull/{n}/head"), &head)?;
    let merged = fetch(&format!("refs/pull/{n}/merge"), &merge).is_ok();
    Ok((head, merged.then_some(merge)))
}
