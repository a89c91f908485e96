//! Projects (docs/FORMAT.md §11).

use crate::model::project::ProjectHead;
use crate::store::{DirEntryKind, Problem, Reason};
use crate::workspace::Workspace;
use crate::workspace::names::check_slug;

use super::{Error, Listing, field_problem, read_document, warn_or_fail};

/// Every project, sorted by slug; a directory whose `project.md` is unreadable is skipped
/// and reported.
pub fn list(ws: &Workspace) -> Result<Listing<ProjectHead>, Error> {
    list_from(ws, &ws.path(&["projects"]))
}

fn list_from(ws: &Workspace, dir: &std::path::Path) -> Result<Listing<ProjectHead>, Error> {
    let mut out = Listing::default();
    for (name, path) in ws.fs.list_dir(dir)? {
        if name.starts_with('.') {
            continue;
        }
        match ws.fs.entry_kind(&path)? {
            DirEntryKind::Dir | DirEntryKind::SymlinkInside if path.is_dir() => {}
            DirEntryKind::SymlinkEscape => {
                out.warnings.push(Problem {
                    path: ws.display(&path),
                    reason: Reason::SymlinkEscape,
                    detail: "symlink resolves outside .dacli/; not followed".into(),
                });
                continue;
            }
            _ => continue,
        }
        if check_slug(&name).is_err() {
            continue;
        }
        let file = path.join("project.md");
        let Some(doc) = warn_or_fail(&mut out.warnings, read_document(ws, &file))? else {
            continue;
        };
        match ProjectHead::from_front(&doc.front, &name, doc.title()) {
            Ok(p) => out.items.push(p),
            Err(e) => out.warnings.push(field_problem(ws, &file, e)),
        }
    }
    Ok(out)
}
