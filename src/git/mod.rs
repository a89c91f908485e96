//! L5: the only module that touches git. For now it only asks the `git` binary whether paths
//! are tracked (for `doctor`); history, refs and worktrees arrive with gix.

use std::path::Path;
use std::process::Command;

/// Whether git tracks `path` (relative to the work tree `root`): `None` when git cannot tell
/// (no git binary, or not a repository).
pub fn is_tracked(root: &Path, path: &str) -> Option<bool> {
    #[allow(
        clippy::disallowed_methods,
        reason = "the git module owns git subprocesses"
    )]
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["ls-files", "-z", "--", path])
        .output()
        .ok()?;
    out.status.success().then_some(!out.stdout.is_empty())
}

/// The SHA of `HEAD` in the work tree `root`, when there is one.
pub fn head_sha(root: &Path) -> Option<String> {
    #[allow(
        clippy::disallowed_methods,
        reason = "the git module owns git subprocesses"
    )]
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "--verify", "-q", "HEAD"])
        .output()
        .ok()?;
    let sha = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && sha.len() == 40).then_some(sha)
}
