//! Projects (docs/FORMAT.md §11).

use std::collections::HashMap;

use crate::model::project::ProjectHead;
use crate::store::{DirEntryKind, Problem, Reason};
use crate::workspace::Workspace;
use crate::workspace::names::check_slug;

use super::index::Stamp;
use super::{Error, Listing, field_problem, read_document, warn_or_fail};

/// Every project, sorted by slug; a directory whose `project.md` is unreadable is skipped
/// and reported. A command asks several times (to resolve its project, then to read each
/// project's tasks): while the `projects/` directory and every `project.md` keep the stamps
/// they had, the listing this process made is the answer.
pub fn list(ws: &Workspace) -> Result<Listing<ProjectHead>, Error> {
    let dir = ws.path(&["projects"]);
    let dir_stamp = Stamp::of_dir(&dir);
    if let Ok(memos) = memos().lock()
        && let Some(m) = memos.get(ws.dir())
        && dir_stamp.is_some()
        && m.dir == dir_stamp
        && m.files
            .iter()
            .all(|(p, s)| Stamp::of(p).as_ref() == Some(s))
    {
        return Ok(Listing {
            items: m.items.clone(),
            warnings: m.warnings.clone(),
        });
    }
    let mut files = Vec::new();
    let out = list_from(ws, &dir, &mut files)?;
    if let (Some(files), Ok(mut memos)) = (
        files
            .into_iter()
            .map(|(p, s)| s.map(|s| (p, s)))
            .collect::<Option<Vec<_>>>(),
        memos().lock(),
    ) {
        memos.insert(
            ws.dir().to_path_buf(),
            Memo {
                dir: dir_stamp,
                files,
                items: out.items.clone(),
                warnings: out.warnings.clone(),
            },
        );
    }
    Ok(out)
}

/// A listing of `projects/` this process made, and the stamps it was made from (each taken
/// before the file was read).
struct Memo {
    dir: Option<Stamp>,
    files: Vec<(std::path::PathBuf, Stamp)>,
    items: Vec<ProjectHead>,
    warnings: Vec<Problem>,
}

fn memos() -> &'static std::sync::Mutex<HashMap<std::path::PathBuf, Memo>> {
    static MEMOS: std::sync::OnceLock<std::sync::Mutex<HashMap<std::path::PathBuf, Memo>>> =
        std::sync::OnceLock::new();
    MEMOS.get_or_init(|| std::sync::Mutex::new(HashMap::new()))
}

fn list_from(
    ws: &Workspace,
    dir: &std::path::Path,
    files: &mut Vec<(std::path::PathBuf, Option<Stamp>)>,
) -> Result<Listing<ProjectHead>, Error> {
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
        files.push((file.clone(), Stamp::of(&file)));
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
