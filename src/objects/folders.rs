//! The task folders of a project (docs/FORMAT.md §12): which folders are status folders, and
//! the lock that keeps a listing from seeing a task mid-move.

use std::path::PathBuf;

use crate::store::{DirEntryKind, Problem, Reason};
use crate::workspace::{STATUS_FOLDERS, Workspace};

use super::Error;

/// Warns of each task file in a folder of `tasks_dir` that is not a status folder (FORMAT
/// §4.4 `unknown_folder`): it is no task of any listing.
pub fn unknown_folders(
    ws: &Workspace,
    tasks_dir: &std::path::Path,
    warnings: &mut Vec<Problem>,
) -> Result<(), Error> {
    for (name, path) in ws.fs.list_dir(tasks_dir)? {
        if name.starts_with('.') || STATUS_FOLDERS.contains(&name.as_str()) {
            continue;
        }
        if ws.fs.entry_kind(&path)? == DirEntryKind::Dir {
            for (inner, p) in ws.fs.list_dir(&path)? {
                if inner.ends_with(".md") && !inner.starts_with('.') {
                    warnings.push(Problem {
                        path: ws.display(&p),
                        reason: Reason::UnknownFolder,
                        detail: format!("`{name}` is not one of open, active, blocked, done"),
                    });
                }
            }
        }
    }
    Ok(())
}

/// The lock a status move of a task of project `slug` holds (exclusively, innermost: after
/// the task's own lock) and a listing of its status folders holds shared, so that a listing
/// never sees a task mid-move. (A move made by anything else, `mv` or git, is caught by the
/// listing's settle checks instead: it changes the folders' stamps and names.)
pub fn moves_lock(ws: &Workspace, slug: &str) -> PathBuf {
    ws.lock_path(&format!("moves-{slug}"))
}
