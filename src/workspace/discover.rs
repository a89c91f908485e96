//! Finding the workspace from a starting directory (docs/FORMAT.md preamble, §4.4).

use std::fs;
use std::path::{Path, PathBuf};

use super::{Error, Workspace};
use crate::store::Fs;

/// True when `dir` itself is a workspace directory: it is named `.dacli`, or it holds a
/// `config.toml` file next to an `agents/` directory (the layout `init` creates). The second
/// form is what lets `-C .dacli-example` open the bundled example, while a project's own
/// unrelated `config.toml` is not mistaken for a workspace.
pub fn is_workspace_dir(dir: &Path) -> bool {
    let has_config = dir.join("config.toml").is_file();
    has_config && (dir.file_name().is_some_and(|n| n == ".dacli") || dir.join("agents").is_dir())
}

/// The root of the git work tree containing `start`: the nearest ancestor holding `.git` (a
/// directory, or a file in a linked worktree).
pub fn find_work_tree(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|d| fs::symlink_metadata(d.join(".git")).is_ok())
        .map(Path::to_path_buf)
}

impl Workspace {
    /// Finds and opens the workspace for `start` (already absolute). `start` may be a workspace
    /// directory itself; otherwise the walk goes up looking for `.dacli/`, and from a linked git
    /// worktree that has no `.dacli/` of its own it falls back to the main worktree's.
    ///
    /// `make_fs` builds the seam once the work-tree root and the jail are known.
    pub fn discover(
        start: &Path,
        make_fs: impl FnOnce(PathBuf, PathBuf) -> Fs,
    ) -> Result<Workspace, Error> {
        let no_workspace = || Error::NoWorkspace {
            start: start.to_string_lossy().into_owned(),
        };
        let start = fs::canonicalize(start).map_err(|_| no_workspace())?;
        let Some((root, dir)) = locate(&start) else {
            // A `.dacli` that is a file where the workspace would be gets the answer `init`
            // gives there, not a plain "no workspace".
            return Err(start
                .ancestors()
                .find_map(blocking_dacli)
                .unwrap_or_else(no_workspace));
        };
        let fs = make_fs(root.clone(), dir.clone());
        Workspace::open(root, dir, fs)
    }
}

/// The error for `dir/.dacli` when it exists but is neither a directory nor a symlink: a
/// regular file, a FIFO, a socket or a device. (A symlink that leads out of the work tree
/// means "no workspace", FORMAT §4.4.)
pub fn blocking_dacli(dir: &Path) -> Option<Error> {
    let candidate = dir.join(".dacli");
    let kind = fs::symlink_metadata(&candidate).ok()?.file_type();
    if kind.is_dir() || kind.is_symlink() {
        return None;
    }
    let what = if kind.is_file() {
        "regular file"
    } else {
        "special file"
    };
    Some(Error::NotADirectory {
        path: candidate.to_string_lossy().into_owned(),
        what,
    })
}

/// The workspace directory [`Workspace::discover`] opens for `start`, without opening it.
pub fn locate_dir(start: &Path) -> Option<PathBuf> {
    locate(&fs::canonicalize(start).ok()?).map(|(_, dir)| dir)
}

fn locate(start: &Path) -> Option<(PathBuf, PathBuf)> {
    if is_workspace_dir(start) {
        let root = start.parent().unwrap_or(start).to_path_buf();
        return Some((root, start.to_path_buf()));
    }
    for dir in start.ancestors() {
        if let Some(ws) = contained_dacli(dir) {
            return Some((dir.to_path_buf(), ws));
        }
        if let Some(main) = main_worktree_of_linked(dir)
            && let Some(ws) = contained_dacli(&main)
        {
            return Some((main, ws));
        }
    }
    None
}

/// `dir/.dacli` when it is a directory that resolves inside `dir` (a `.dacli` symlink leading
/// out of the work tree means "no workspace", FORMAT §4.4).
fn contained_dacli(dir: &Path) -> Option<PathBuf> {
    let candidate = dir.join(".dacli");
    let meta = fs::symlink_metadata(&candidate).ok()?;
    if meta.is_dir() {
        return Some(candidate);
    }
    if meta.file_type().is_symlink() {
        let target = fs::canonicalize(&candidate).ok()?;
        if target.starts_with(dir) && target.is_dir() {
            return Some(target);
        }
    }
    None
}

/// For a linked worktree (`dir/.git` is a file `gitdir: <common>/worktrees/<name>`), the main
/// worktree's root, read from the `commondir` file git keeps there.
fn main_worktree_of_linked(dir: &Path) -> Option<PathBuf> {
    let dotgit = dir.join(".git");
    if !fs::symlink_metadata(&dotgit).ok()?.is_file() {
        return None;
    }
    let text = fs::read_to_string(&dotgit).ok()?;
    let gitdir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let gitdir = dir.join(gitdir);
    let common = fs::read_to_string(gitdir.join("commondir")).ok()?;
    let common = fs::canonicalize(gitdir.join(common.trim())).ok()?;
    let main = common.parent()?.to_path_buf();
    (main != dir).then_some(main)
}
