//! Transactions on project files: creating a project (with its template's documents) and
//! editing `project.md` under the project's lock.

use std::path::PathBuf;

use super::{Decided, Error};
use crate::objects::templates;
use crate::store::Document;
use crate::workspace::Workspace;

/// The file of project `slug`.
pub fn file(ws: &Workspace, slug: &str) -> PathBuf {
    ws.path(&["projects", slug, "project.md"])
}

/// Creates `projects/<slug>/project.md` holding `doc` (never over an existing file), then
/// copies the documents of `template` into the project's `docs/`, never overwriting.
/// Returns the path of `project.md`.
pub fn create(
    ws: &Workspace,
    slug: &str,
    doc: &Document,
    template: Option<&str>,
) -> Result<PathBuf, Error> {
    let path = file(ws, slug);
    ws.fs.create_new(&path, doc.render().as_bytes())?;
    if let Some(t) = template {
        let t = templates::load(Some(ws), t)?;
        for (name, bytes) in t.files_in("docs") {
            let target = ws.path(&["projects", slug, "docs", &name]);
            match ws.fs.create_new(&target, &bytes) {
                Ok(()) | Err(crate::store::Error::Exists { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(path)
}

/// Edits project `slug` under `project-<slug>.lock`: `decide` reads the project under the
/// lock and returns the document to write (if anything changed) with its answer, or a
/// refusal; the document is written before the lock is released.
pub fn edit<T, E: From<Error>>(
    ws: &Workspace,
    slug: &str,
    decide: impl FnOnce() -> Result<Decided<(Option<Document>, T)>, E>,
) -> Result<Decided<T>, E> {
    let _lock = ws
        .fs
        .lock(&ws.lock_path(&format!("project-{slug}")))
        .map_err(Error::from)?;
    let (doc, answer) = match decide()? {
        Decided::Done(done) => done,
        Decided::Refused(refusal) => return Ok(Decided::Refused(refusal)),
    };
    if let Some(doc) = doc {
        ws.fs
            .replace(&file(ws, slug), doc.render().as_bytes())
            .map_err(Error::from)?;
    }
    Ok(Decided::Done(answer))
}
