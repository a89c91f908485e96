//! Queues (docs/FORMAT.md §10): listing, loading, creating, rewriting and removing queue files.

use std::path::PathBuf;

use crate::model::queue::Queue;
use crate::store::Document;
use crate::workspace::Workspace;
use crate::workspace::names::check_slug;

use super::{Error, Listing, field_problem, read_document, warn_or_fail};

/// A queue as found on disk.
#[derive(Debug, Clone)]
pub struct Located {
    pub queue: Queue,
    pub doc: Document,
    /// Path relative to the work-tree root, for output.
    pub path: String,
}

/// The file of queue `slug` (which must be a slug).
pub fn file(ws: &Workspace, slug: &str) -> PathBuf {
    ws.path(&["queues", &format!("{slug}.md")])
}

/// The name of the object lock of queue `slug` (FORMAT §4.3), for `ws.lock_path`.
pub fn lock_name(slug: &str) -> String {
    format!("queue-{slug}")
}

/// Loads queue `slug` (given as slug or `q-<slug>`); anything else, or no file, is not found.
pub fn load(ws: &Workspace, slug: &str) -> Result<Located, Error> {
    let slug = slug.strip_prefix("q-").unwrap_or(slug);
    let not_found = || Error::NotFound {
        what: "queue",
        id: slug.to_string(),
    };
    check_slug(slug).map_err(|_| not_found())?;
    let path = file(ws, slug);
    if std::fs::symlink_metadata(&path).is_err() {
        return Err(not_found());
    }
    let doc = read_document(ws, &path)?;
    parse(ws, &path, doc, slug).map_err(Error::malformed)
}

fn parse(
    ws: &Workspace,
    path: &std::path::Path,
    doc: Document,
    slug: &str,
) -> Result<Located, crate::store::Problem> {
    let queue =
        Queue::from_doc(&doc.front, &doc.body, slug).map_err(|e| field_problem(ws, path, e))?;
    Ok(Located {
        queue,
        doc,
        path: ws.display(path),
    })
}

/// Every queue, sorted by slug; unreadable files are skipped and reported.
pub fn list(ws: &Workspace) -> Result<Listing<Located>, Error> {
    let mut out = Listing::default();
    for (name, path) in ws.fs.list_dir(&ws.path(&["queues"]))? {
        let Some(stem) = name.strip_suffix(".md") else {
            continue;
        };
        if check_slug(stem).is_err() {
            continue;
        }
        let Some(doc) = warn_or_fail(&mut out.warnings, read_document(ws, &path))? else {
            continue;
        };
        match parse(ws, &path, doc, stem) {
            Ok(q) => out.items.push(q),
            Err(p) => out.warnings.push(p),
        }
    }
    Ok(out)
}

/// Creates queue file `slug` with create-new (a taken slug is `Exists`). Returns the path.
pub fn create(ws: &Workspace, slug: &str, doc: &Document) -> Result<PathBuf, Error> {
    let path = file(ws, slug);
    ws.fs.create_new(&path, doc.render().as_bytes())?;
    Ok(path)
}

/// Rewrites queue file `slug` by atomic replace (the caller holds the queue lock and has set
/// a fresh `rev`).
pub fn write(ws: &Workspace, slug: &str, doc: &Document) -> Result<PathBuf, Error> {
    let path = file(ws, slug);
    ws.fs.replace(&path, doc.render().as_bytes())?;
    Ok(path)
}

/// Deletes queue file `slug` (the caller holds the queue lock); its events stay.
pub fn remove(ws: &Workspace, slug: &str) -> Result<(), Error> {
    Ok(ws.fs.remove(&file(ws, slug))?)
}
