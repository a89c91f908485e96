//! L1: where the workspace is, what its layout is, and which paths are safe to touch.
//!
//! A workspace is a `.dacli/` directory (or a directory with the same layout, like the bundled
//! `.dacli-example`) plus the git work tree it belongs to. Repository paths are relative to that
//! work tree; every path dacli builds from input goes through [`names`] first.

mod config;
mod discover;
pub mod names;

use std::path::{Path, PathBuf};

pub use config::{Config, OLDEST_FORMAT, SUPPORTED_FORMAT};
pub use discover::{blocking_dacli, find_work_tree, is_workspace_dir, locate_dir};

use crate::store::index::Index;
use crate::store::{self, Fs};

/// The task status folders, in lifecycle order (docs/FORMAT.md §12).
pub const STATUS_FOLDERS: [&str; 4] = ["open", "active", "blocked", "done"];

/// Errors of workspace discovery and configuration.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no dacli workspace at or above {start}")]
    NoWorkspace { start: String },
    /// A `.dacli` that is not a directory (a regular file, a FIFO) where a workspace would be:
    /// neither a workspace nor a place `init` may create one.
    #[error("{path} is a {what}, not a dacli workspace directory")]
    NotADirectory { path: String, what: &'static str },
    #[error("{path} is not inside a git work tree")]
    NotARepo { path: String },
    #[error("{path} already holds a dacli workspace")]
    Exists { path: String },
    #[error("{path} declares format {found}; this dacli supports format {supported} only")]
    FormatUnsupported {
        path: String,
        found: String,
        supported: i64,
    },
    #[error("{0}")]
    Store(#[from] store::Error),
}

/// An open workspace: its directory, the work tree it belongs to, its config and the seam
/// through which all of its files are read and written.
///
/// Invariant: `config.format` is from [`OLDEST_FORMAT`] to [`SUPPORTED_FORMAT`]; a workspace of another format is never
/// opened, so no command can read it on a best-effort basis or write to it.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    dir: PathBuf,
    pub config: Config,
    pub fs: Fs,
    /// The derived index, opened on first use; owned by the call that opened the workspace.
    pub index: Index,
}

impl Workspace {
    /// Opens the workspace directory `dir` (canonical) of the work tree `root`.
    pub fn open(root: PathBuf, dir: PathBuf, fs: Fs) -> Result<Workspace, Error> {
        let config = Config::load(&fs, &dir.join("config.toml"))?;
        Ok(Workspace {
            index: Index::new(&dir, true),
            root,
            dir,
            config,
            fs,
        })
    }

    /// The git work-tree root: the base of every repository path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The workspace directory (`.dacli/` or an equivalent).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A path inside the workspace directory, built from already validated segments.
    pub fn path(&self, segments: &[&str]) -> PathBuf {
        let mut p = self.dir.clone();
        for s in segments {
            p.push(s);
        }
        p
    }

    /// The lock file for `name` (e.g. `task-<ULID>`), under `.locks/`.
    pub fn lock_path(&self, name: &str) -> PathBuf {
        self.path(&[".locks", &format!("{name}.lock")])
    }

    /// A path as users see it: relative to the work-tree root.
    pub fn display(&self, path: &Path) -> String {
        self.fs.display(path)
    }
}
