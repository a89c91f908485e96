//! Exchanging the workspace through a git remote (`dacli sync --remote`) and installing the
//! record merge driver: every step is the `git` program, so credentials, hooks, ssh config
//! and `insteadOf` behave exactly as the user's git. Only exit codes, `-z` output and
//! `--porcelain` flags are interpreted, never English text. Nothing here force-pushes,
//! and no commit takes a path outside the pathspec it is given.

use std::path::Path;

use super::Error;
use super::cli::{LOCAL_DEADLINE, git, output, run};

/// How long a push may take before it is stopped.
pub const PUSH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

/// The identity of the commits dacli makes.
const AUTHOR_NAME: &str = "dacli";
const AUTHOR_EMAIL: &str = "dacli@localhost";

fn text(root: &Path, args: &[&str]) -> Result<String, Error> {
    let out = output(root, args, LOCAL_DEADLINE)?;
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

/// True when `root` lies inside a git work tree (a repository's own configuration exists).
pub fn in_repository(root: &Path) -> bool {
    gix::discover(root).is_ok()
}

/// `git config --get <key>`; `None` when unset.
pub fn config_get(root: &Path, key: &str) -> Result<Option<String>, Error> {
    match text(root, &["config", "--get", key]) {
        Ok(v) => Ok(Some(v)),
        Err(Error::Command { code: 1, .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// `git config --local <key> <value>`: the repository's own configuration only.
pub fn config_set(root: &Path, key: &str, value: &str) -> Result<(), Error> {
    run(root, &["config", "--local", key, value], LOCAL_DEADLINE)
}

/// The current branch, `None` on a detached `HEAD`.
pub fn current_branch(root: &Path) -> Result<Option<String>, Error> {
    match text(root, &["symbolic-ref", "-q", "--short", "HEAD"]) {
        Ok(b) if !b.is_empty() => Ok(Some(b)),
        Ok(_) | Err(Error::Command { code: 1, .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether `git pull` would rebase here: `branch.<b>.rebase`, else `pull.rebase`.
pub fn pull_rebases(root: &Path, branch: &str) -> Result<bool, Error> {
    let v = match config_get(root, &format!("branch.{branch}.rebase"))? {
        Some(v) => Some(v),
        None => config_get(root, "pull.rebase")?,
    };
    Ok(matches!(
        v.as_deref(),
        Some("true" | "interactive" | "merges" | "i" | "m")
    ))
}

/// Paths under `pathspec` that differ from `HEAD` or are untracked (`git status -z`).
pub fn changed(root: &Path, pathspec: &str) -> Result<Vec<String>, Error> {
    let out = output(
        root,
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--",
            pathspec,
        ],
        LOCAL_DEADLINE,
    )?;
    Ok(out
        .split(|b| *b == 0)
        .filter(|r| r.len() > 3)
        .map(|r| String::from_utf8_lossy(&r[3..]).into_owned())
        .collect())
}

/// Commits every change under `pathspec` (and nothing staged elsewhere: `--only`) as dacli,
/// with `message`. `Ok(false)` when there was nothing to commit.
pub fn commit_only(root: &Path, pathspec: &str, message: &str) -> Result<bool, Error> {
    if changed(root, pathspec)?.is_empty() {
        return Ok(false);
    }
    run(root, &["add", "-A", "--", pathspec], LOCAL_DEADLINE)?;
    let author = format!("{AUTHOR_NAME} <{AUTHOR_EMAIL}>");
    run(
        root,
        &[
            "-c",
            &format!("user.name={AUTHOR_NAME}"),
            "-c",
            &format!("user.email={AUTHOR_EMAIL}"),
            "commit",
            "-q",
            "--only",
            "--author",
            &author,
            "-m",
            message,
            "--",
            pathspec,
        ],
        LOCAL_DEADLINE,
    )?;
    Ok(true)
}

/// `git fetch <remote> <branch>` into `refs/remotes/<remote>/<branch>`, as `git pull` does;
/// returns that ref, or `None` when the remote has no such branch yet.
pub fn fetch(root: &Path, remote: &str, branch: &str) -> Result<Option<String>, Error> {
    let target = format!("refs/remotes/{remote}/{branch}");
    let refspec = format!("+refs/heads/{branch}:{target}");
    let listed = output(
        root,
        &[
            "ls-remote",
            "--heads",
            remote,
            &format!("refs/heads/{branch}"),
        ],
        super::cli::FETCH_DEADLINE,
    )?;
    if listed.is_empty() {
        return Ok(None);
    }
    run(
        root,
        &["fetch", "-q", "--no-tags", remote, "--", &refspec],
        super::cli::FETCH_DEADLINE,
    )?;
    Ok(Some(target))
}

/// Whether `a` is an ancestor of (or equal to) `b`.
pub fn is_ancestor(root: &Path, a: &str, b: &str) -> Result<bool, Error> {
    match run(root, &["merge-base", "--is-ancestor", a, b], LOCAL_DEADLINE) {
        Ok(()) => Ok(true),
        Err(Error::Command { code: 1, .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// What an integration left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Integrated {
    /// Done: nothing to do, fast-forwarded, merged or rebased.
    Clean,
    /// Stopped with these unmerged paths (a merge or rebase is in progress).
    Conflicts(Vec<String>),
}

/// The configuration every git command of an exchange runs with: dacli's identity, and no
/// directory-rename detection. A status folder is no renamed directory: when one side moves
/// the only task of `open/` to `active/`, git would otherwise take `open/` for renamed and
/// put the other side's new `open/` task under `active/` as a conflict.
fn dacli_identity() -> [String; 6] {
    [
        "-c".into(),
        format!("user.name={AUTHOR_NAME}"),
        "-c".into(),
        format!("user.email={AUTHOR_EMAIL}"),
        "-c".into(),
        "merge.directoryRenames=false".into(),
    ]
}

fn run_as_dacli(root: &Path, args: &[&str]) -> Result<(), Error> {
    let id = dacli_identity();
    let mut all: Vec<&str> = id.iter().map(String::as_str).collect();
    all.extend_from_slice(args);
    run(root, &all, LOCAL_DEADLINE)
}

/// Merges or rebases onto `upstream` (`rebase` as the repository's `pull.rebase` says).
pub fn integrate(
    root: &Path,
    upstream: &str,
    rebase: bool,
    message: &str,
) -> Result<Integrated, Error> {
    if is_ancestor(root, upstream, "HEAD")? {
        return Ok(Integrated::Clean);
    }
    let result = if rebase {
        run_as_dacli(root, &["rebase", "-q", upstream])
    } else {
        run_as_dacli(root, &["merge", "-q", "--no-edit", "-m", message, upstream])
    };
    match result {
        Ok(()) => Ok(Integrated::Clean),
        Err(Error::Command { .. }) => {
            let unmerged = unmerged(root)?;
            if unmerged.is_empty() && in_progress(root)?.is_none() {
                // Refused before it started (local changes in the way): nothing to resolve.
                return Err(Error::Command {
                    args: if rebase { "rebase" } else { "merge" }.into(),
                    code: 1,
                    stderr: "git refused to integrate (uncommitted changes in the way?)".into(),
                });
            }
            Ok(Integrated::Conflicts(unmerged))
        }
        Err(e) => Err(e),
    }
}

/// The unmerged paths of the index.
pub fn unmerged(root: &Path) -> Result<Vec<String>, Error> {
    let out = output(
        root,
        &["diff", "--name-only", "--diff-filter=U", "-z"],
        LOCAL_DEADLINE,
    )?;
    let mut v: Vec<String> = out
        .split(|b| *b == 0)
        .filter(|r| !r.is_empty())
        .map(|r| String::from_utf8_lossy(r).into_owned())
        .collect();
    v.dedup();
    Ok(v)
}

/// The content of `path` at merge stage `stage` (1 base, 2 ours, 3 theirs), if it has one.
pub fn stage(root: &Path, stage: u8, path: &str) -> Result<Option<Vec<u8>>, Error> {
    match output(root, &["show", &format!(":{stage}:{path}")], LOCAL_DEADLINE) {
        Ok(b) => Ok(Some(b)),
        Err(Error::Command { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Marks `path` resolved as the work tree has it (`git add`, or `git rm` when it is gone).
pub fn resolve_as_is(root: &Path, path: &str, exists: bool) -> Result<(), Error> {
    if exists {
        run(root, &["add", "--", path], LOCAL_DEADLINE)
    } else {
        run(
            root,
            &["rm", "-q", "--cached", "--ignore-unmatch", "--", path],
            LOCAL_DEADLINE,
        )
    }
}

/// A merge or rebase in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InProgress {
    Merge,
    Rebase,
}

/// Whether a merge or a rebase is in progress.
pub fn in_progress(root: &Path) -> Result<Option<InProgress>, Error> {
    let path = |p: &str| -> Result<bool, Error> {
        let rel = text(root, &["rev-parse", "--git-path", p])?;
        Ok(root.join(rel).exists())
    };
    if path("rebase-merge")? || path("rebase-apply")? {
        return Ok(Some(InProgress::Rebase));
    }
    if path("MERGE_HEAD")? {
        return Ok(Some(InProgress::Merge));
    }
    Ok(None)
}

/// Concludes the merge or rebase in progress once nothing is unmerged. A rebase may stop
/// again at a later commit: the new conflicts are returned.
pub fn conclude(root: &Path, op: InProgress) -> Result<Integrated, Error> {
    match op {
        InProgress::Merge => {
            run_as_dacli(root, &["commit", "-q", "--no-edit"])?;
            Ok(Integrated::Clean)
        }
        InProgress::Rebase => {
            let id = dacli_identity();
            let mut all: Vec<&str> = id.iter().map(String::as_str).collect();
            all.extend_from_slice(&["-c", "core.editor=true", "rebase", "--continue"]);
            match run(root, &all, LOCAL_DEADLINE) {
                Ok(()) => Ok(Integrated::Clean),
                Err(Error::Command { .. }) if in_progress(root)?.is_some() => {
                    Ok(Integrated::Conflicts(unmerged(root)?))
                }
                Err(e) => Err(e),
            }
        }
    }
}

/// Abandons the merge or rebase in progress (`--abort`), back to where it started.
pub fn abort(root: &Path, op: InProgress) -> Result<(), Error> {
    match op {
        InProgress::Merge => run(root, &["merge", "--abort"], LOCAL_DEADLINE),
        InProgress::Rebase => run(root, &["rebase", "--abort"], LOCAL_DEADLINE),
    }
}

/// What a push did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pushed {
    Done,
    /// The remote moved on (not a fast-forward): fetch, integrate and try again.
    Rejected,
}

/// `git push --porcelain <remote> HEAD:refs/heads/<branch>`, never forced.
pub fn push(root: &Path, remote: &str, branch: &str) -> Result<Pushed, Error> {
    let spec = format!("HEAD:refs/heads/{branch}");
    let shown = format!("push {remote} {spec}");
    let out = git(root, &["push", "--porcelain", remote, &spec])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(|e| Error::Unavailable(e.to_string()))?;
    if out.status.success() {
        return Ok(Pushed::Done);
    }
    // `--porcelain`: one line per ref, `!` flags a rejected one.
    let stdout = String::from_utf8_lossy(&out.stdout);
    if stdout.lines().any(|l| l.starts_with('!')) {
        return Ok(Pushed::Rejected);
    }
    Err(Error::Command {
        args: shown,
        code: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("")
            .trim()
            .to_string(),
    })
}

/// The remote `sync --remote` uses when none is named: the branch's upstream remote, else
/// `origin`.
pub fn default_remote(root: &Path, branch: &str) -> Result<String, Error> {
    Ok(config_get(root, &format!("branch.{branch}.remote"))?.unwrap_or_else(|| "origin".into()))
}
