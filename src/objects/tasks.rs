//! Tasks (docs/FORMAT.md §12): listing a project's status folders.

use std::collections::BTreeMap;

use crate::model::task::TaskHead;
use crate::store::{DirEntryKind, Problem, Reason, TEMP_PREFIX};
use crate::workspace::{STATUS_FOLDERS, Workspace};

use super::{Error, Listing, field_problem, read_document, warn_or_fail};

/// A task and the status folder it is in (the folder is the status).
#[derive(Debug, Clone)]
pub struct Located {
    pub folder: &'static str,
    pub path: String,
    pub task: TaskHead,
}

/// Every task of the project `slug`, sorted by number then id. A file that is not a usable
/// task is skipped and reported; of two copies of one id (a crash mid-move, or a merge) the
/// greater `rev` is used and both paths are reported as `duplicate_id`.
pub fn list(ws: &Workspace, slug: &str) -> Result<Listing<Located>, Error> {
    let mut out = Listing::default();
    let tasks_dir = ws.path(&["projects", slug, "tasks"]);
    for (name, path) in ws.fs.list_dir(&tasks_dir)? {
        if name.starts_with('.') || STATUS_FOLDERS.contains(&name.as_str()) {
            continue;
        }
        if ws.fs.entry_kind(&path)? == DirEntryKind::Dir {
            for (inner, p) in ws.fs.list_dir(&path)? {
                if inner.ends_with(".md") && !inner.starts_with('.') {
                    out.warnings.push(Problem {
                        path: ws.display(&p),
                        reason: Reason::UnknownFolder,
                        detail: format!("`{name}` is not one of open, active, blocked, done"),
                    });
                }
            }
        }
    }
    let mut by_id: BTreeMap<String, Vec<Located>> = BTreeMap::new();
    for folder in STATUS_FOLDERS {
        for (name, path) in ws.fs.list_dir(&tasks_dir.join(folder))? {
            if name.starts_with('.') || name.starts_with(TEMP_PREFIX) || !name.ends_with(".md") {
                continue;
            }
            let Some(doc) = warn_or_fail(&mut out.warnings, read_document(ws, &path))? else {
                continue;
            };
            match TaskHead::parse(&doc.front, &doc.body, &name, folder, doc.title()) {
                Ok(task) => by_id.entry(task.id.clone()).or_default().push(Located {
                    folder,
                    path: ws.display(&path),
                    task,
                }),
                Err(e) => out.warnings.push(field_problem(ws, &path, e)),
            }
        }
    }
    for (id, mut copies) in by_id {
        if copies.len() > 1 {
            copies.sort_by(|a, b| b.task.rev.cmp(&a.task.rev).then(a.path.cmp(&b.path)));
            let paths: Vec<_> = copies.iter().map(|c| c.path.clone()).collect();
            for c in &copies {
                out.warnings.push(Problem {
                    path: c.path.clone(),
                    reason: Reason::DuplicateId,
                    detail: format!("{id} is also at {}", {
                        let others: Vec<_> =
                            paths.iter().filter(|p| **p != c.path).cloned().collect();
                        others.join(", ")
                    }),
                });
            }
        }
        out.items.extend(copies.into_iter().next());
    }
    out.items
        .sort_by(|a, b| (a.task.number, &a.task.id).cmp(&(b.task.number, &b.task.id)));
    Ok(out)
}
