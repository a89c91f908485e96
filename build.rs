//! Records the commit dacli is built from, for `dacli version`, by reading the git directory
//! directly (no process spawn, so a build without git still works and says "unknown").
//!
//! Cargo treats a `rerun-if-changed` path that does not exist as changed on every build, so
//! only paths that exist are named: a missing `packed-refs` (a repository that never packed its
//! refs) or a worktree's `.git` file would otherwise rerun this script, and rebuild and relink
//! the crate, on every `cargo build`.

use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let sha = git_dirs(Path::new(".git"))
        .and_then(|(git, common)| resolve(&git, &common))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=DACLI_GIT_SHA={sha}");
}

/// Watches `path` when it exists.
fn watch(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// Watches a loose ref, or while it does not exist the folder it would appear in (a small one:
/// `refs/heads` or below), so that a commit that writes it is seen.
fn watch_ref(path: &Path) {
    let mut p = path;
    while !p.exists() {
        match p.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => p = parent,
            _ => return,
        }
    }
    println!("cargo:rerun-if-changed={}", p.display());
}

/// The git directory holding `HEAD` and the common directory holding refs: both `.git` in a
/// plain checkout; in a linked worktree, `.git` is a file naming the worktree's own directory,
/// whose `commondir` names the main one.
fn git_dirs(dot_git: &Path) -> Option<(PathBuf, PathBuf)> {
    if dot_git.is_dir() {
        return Some((dot_git.to_path_buf(), dot_git.to_path_buf()));
    }
    watch(dot_git);
    let pointer = fs::read_to_string(dot_git).ok()?;
    let git = PathBuf::from(pointer.trim().strip_prefix("gitdir:")?.trim());
    let common = match fs::read_to_string(git.join("commondir")) {
        Ok(rel) => git.join(rel.trim()),
        Err(_) => git.clone(),
    };
    Some((git, common))
}

fn resolve(git: &Path, common: &Path) -> Option<String> {
    let head_path = git.join("HEAD");
    watch(&head_path);
    let head = fs::read_to_string(head_path).ok()?;
    let head = head.trim();
    let full = match head.strip_prefix("ref: ") {
        None => head.to_string(),
        Some(name) => {
            let loose = common.join(name);
            watch_ref(&loose);
            watch(&common.join("packed-refs"));
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
