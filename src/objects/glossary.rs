//! The glossary of a project (docs/FORMAT.md §17): `projects/<slug>/glossary.md`, created on
//! first use. An absent file is an empty glossary.

use std::path::PathBuf;

use crate::model::glossary::GlossaryHead;
use crate::store::Document;
use crate::workspace::Workspace;

use super::{Error, field_problem, read_document};

/// A glossary as found on disk.
#[derive(Debug, Clone)]
pub struct Located {
    pub file: PathBuf,
    /// Path relative to the work-tree root, for output.
    pub path: String,
    pub head: GlossaryHead,
    pub doc: Document,
}

/// Where the glossary of project `slug` lives. `slug` must be a checked slug.
pub fn file(ws: &Workspace, slug: &str) -> PathBuf {
    ws.path(&["projects", slug, "glossary.md"])
}

/// Loads the glossary of project `slug`: `None` when the project has none yet; a file that
/// exists but is unusable is an error naming it (the caller needs that very object).
pub fn load(ws: &Workspace, slug: &str) -> Result<Option<Located>, Error> {
    let path = file(ws, slug);
    let present = ws
        .fs
        .list_dir(&ws.path(&["projects", slug]))?
        .iter()
        .any(|(name, _)| name == "glossary.md");
    if !present {
        return Ok(None);
    }
    let doc = read_document(ws, &path)?;
    let head = GlossaryHead::parse(&doc.front, slug)
        .map_err(|e| Error::malformed(field_problem(ws, &path, e)))?;
    Ok(Some(Located {
        path: ws.display(&path),
        file: path,
        head,
        doc,
    }))
}
