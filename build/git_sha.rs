//! The commit a checkout is at, read from its git directory without running git, and the
//! paths a build must watch to see that commit move. `build.rs` prints them as
//! `rerun-if-changed`; `tests/it/build_script.rs` checks them against real repositories.
//!
//! Cargo treats a watched path that does not exist as changed on every build, so only paths
//! that exist are named: a missing `packed-refs` (a repository that never packed its refs) or
//! a loose ref not written yet would otherwise rerun the build script, and rebuild and relink
//! the crate, on every `cargo build`.

use std::fs;
use std::path::{Path, PathBuf};

/// The short (7-digit) commit of the checkout whose `.git` is `dot_git`, when it can be read,
/// and the existing paths whose change may move it.
pub fn head_commit(dot_git: &Path) -> (Option<String>, Vec<PathBuf>) {
    let mut watched = Vec::new();
    let sha = git_dirs(dot_git, &mut watched)
        .and_then(|(git, common)| resolve(&git, &common, &mut watched));
    (sha, watched)
}

/// Watches `path` when it exists.
fn watch(path: &Path, watched: &mut Vec<PathBuf>) {
    if path.exists() {
        watched.push(path.to_path_buf());
    }
}

/// Watches a loose ref, or while it does not exist the folder it would appear in (a small one:
/// `refs/heads` or below), so that a commit that writes it is seen.
fn watch_ref(path: &Path, watched: &mut Vec<PathBuf>) {
    let mut p = path;
    while !p.exists() {
        match p.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => p = parent,
            _ => return,
        }
    }
    watched.push(p.to_path_buf());
}

/// The git directory holding `HEAD` and the common directory holding refs: both `.git` in a
/// plain checkout; in a linked worktree, `.git` is a file naming the worktree's own directory,
/// whose `commondir` names the main one.
fn git_dirs(dot_git: &Path, watched: &mut Vec<PathBuf>) -> Option<(PathBuf, PathBuf)> {
    if dot_git.is_dir() {
        return Some((dot_git.to_path_buf(), dot_git.to_path_buf()));
    }
    watch(dot_git, watched);
    let pointer = fs::read_to_string(dot_git).ok()?;
    let git = PathBuf::from(pointer.trim().strip_prefix("gitdir:")?.trim());
    let git = match dot_git.parent() {
        Some(dir) if git.is_relative() => dir.join(git),
        _ => git,
    };
    let common = match fs::read_to_string(git.join("commondir")) {
        Ok(rel) => git.join(rel.trim()),
        Err(_) => git.clone(),
    };
    Some((git, common))
}

fn resolve(git: &Path, common: &Path, watched: &mut Vec<PathBuf>) -> Option<String> {
    let head_path = git.join("HEAD");
    watch(&head_path, watched);
    let head = fs::read_to_string(head_path).ok()?;
    let head = head.trim();
    let full = match head.strip_prefix("ref: ") {
        None => head.to_string(),
        Some(name) => {
            let loose = common.join(name);
            watch_ref(&loose, watched);
            watch(&common.join("packed-refs"), watched);
            match fs::read_to_string(&loose) {
                Ok(s) => s.trim().to_string(),
                Err(_) => fs::read_to_string(common.join("packed-refs"))
                    .ok()?
                    .lines()
                    .find_map(|l| l.strip_suffix(name).map(|s| s.trim().to_string()))?,
            }
        }
    };
    (full.len() >= 7 && full.bytes().all(|b| b.is_ascii_hexdigit())).then(|| full[..7].to_string())
}
