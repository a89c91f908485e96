//! L5: the only module that touches git. History, refs, ancestry, worktree listing and status
//! go through gix ([`Repo`]); the network (fetch) and the porcelain gix does not have (worktree
//! remove and prune, and the ignored files a removal deletes) go through the `git` binary
//! ([`cli`]), so credentials, ssh config and worktree safety checks behave exactly like the
//! user's git.

pub mod cli;
pub mod remote;
mod repo;
mod tree;

use std::path::Path;

pub use repo::{Ancestry, Cleanliness, Head, Repo, Worktree, cleanliness};
pub use tree::{Changed, CommitInfo, blob_id};

/// A git failure, classified once for the dispatcher.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The path is not inside a git repository.
    #[error("{path} is not a git repository")]
    NotARepo { path: String },
    /// gix could not read or write something it should have.
    #[error("git: {0}")]
    Git(String),
    /// The `git` program is missing or does not run.
    #[error("the `git` program is not usable: {0}")]
    Unavailable(String),
    /// A `git` subprocess failed.
    #[error("`git {args}` failed with exit code {code}: {stderr}")]
    Command {
        args: String,
        code: i32,
        stderr: String,
    },
    /// A `git` subprocess ran past its deadline and was killed.
    #[error("`git {args}` did not finish within {seconds} s and was stopped")]
    Timeout { args: String, seconds: u64 },
}

impl Error {
    pub(crate) fn gix(e: impl std::fmt::Display) -> Error {
        Error::Git(e.to_string())
    }
}

/// Whether git tracks `path` (relative to the work tree `root`; a directory counts when it
/// holds a tracked file): `None` when git cannot tell (not a repository, unreadable index).
pub fn is_tracked(root: &Path, path: &str) -> Option<bool> {
    Repo::open(root).ok()?.is_tracked(path).ok()
}

/// The SHA of `HEAD` in the work tree `root`, when there is one.
pub fn head_sha(root: &Path) -> Option<String> {
    match Repo::open(root).ok()?.head().ok()? {
        Head::Branch { sha, .. } | Head::Detached { sha } => Some(sha),
        Head::Unborn { .. } => None,
    }
}
