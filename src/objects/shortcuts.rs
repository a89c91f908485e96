//! Shortcuts (docs/FORMAT.md §8): listing, loading, creating and removing shortcut files.

use std::path::PathBuf;

use crate::model::shortcut::Shortcut;
use crate::store::Document;
use crate::workspace::Workspace;
use crate::workspace::names::check_slug;

use super::{Error, Listing, field_problem, read_document, warn_or_fail};

/// A shortcut as found on disk.
#[derive(Debug, Clone)]
pub struct Located {
    pub shortcut: Shortcut,
    pub doc: Document,
    /// Path relative to the work-tree root, for output.
    pub path: String,
}

/// The file of shortcut `name` (which must be a slug).
pub fn file(ws: &Workspace, name: &str) -> PathBuf {
    ws.path(&["shortcuts", &format!("{name}.md")])
}

/// The name of the object lock of shortcut `name` (FORMAT §4.3), for `ws.lock_path`.
pub fn lock_name(name: &str) -> String {
    format!("shortcut-{name}")
}

/// Loads shortcut `name`; a name that is not a slug, or no file, is not found.
pub fn load(ws: &Workspace, name: &str) -> Result<Located, Error> {
    let not_found = || Error::NotFound {
        what: "shortcut",
        id: name.to_string(),
    };
    check_slug(name).map_err(|_| not_found())?;
    let path = file(ws, name);
    if std::fs::symlink_metadata(&path).is_err() {
        return Err(not_found());
    }
    let doc = read_document(ws, &path)?;
    let shortcut = Shortcut::from_front(&doc.front, name)
        .map_err(|e| Error::malformed(field_problem(ws, &path, e)))?;
    Ok(Located {
        shortcut,
        doc,
        path: ws.display(&path),
    })
}

/// Every shortcut, sorted by name; unreadable files are skipped and reported. A shortcut with
/// a missing or unknown `effect` is listed (it never runs).
pub fn list(ws: &Workspace) -> Result<Listing<Located>, Error> {
    let mut out = Listing::default();
    for (name, path) in ws.fs.list_dir(&ws.path(&["shortcuts"]))? {
        let Some(stem) = name.strip_suffix(".md") else {
            continue;
        };
        if check_slug(stem).is_err() {
            continue;
        }
        let Some(doc) = warn_or_fail(&mut out.warnings, read_document(ws, &path))? else {
            continue;
        };
        match Shortcut::from_front(&doc.front, stem) {
            Ok(shortcut) => out.items.push(Located {
                shortcut,
                doc,
                path: ws.display(&path),
            }),
            Err(e) => out.warnings.push(field_problem(ws, &path, e)),
        }
    }
    Ok(out)
}

/// Creates shortcut file `name` with create-new (a taken name is `Exists`). Returns the path.
pub fn create(ws: &Workspace, name: &str, doc: &Document) -> Result<PathBuf, Error> {
    let path = file(ws, name);
    ws.fs.create_new(&path, doc.render().as_bytes())?;
    Ok(path)
}

/// Deletes shortcut file `name` (the caller holds the shortcut lock).
pub fn remove(ws: &Workspace, name: &str) -> Result<(), Error> {
    Ok(ws.fs.remove(&file(ws, name))?)
}
