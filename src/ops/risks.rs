//! Transactions on risk files: creating a risk and editing one under its lock.

use std::path::PathBuf;

use super::{Decided, Error};
use crate::objects::risks::{self, Located};
use crate::store::Document;
use crate::workspace::Workspace;

/// Creates the risk `doc` (id `id`, titled `title`) in project `slug`; returns its path.
pub fn create(
    ws: &Workspace,
    slug: &str,
    id: &str,
    title: &str,
    doc: &Document,
) -> Result<PathBuf, Error> {
    Ok(risks::create(ws, slug, id, title, doc)?)
}

/// Edits risk `id` of project `project` under `risk-<ULID>.lock`: `decide` sees the risk
/// re-read under the lock and returns the document to write (with its new `rev`) if anything
/// changed, with its answer, or a refusal.
pub fn edit<T, E: From<Error>>(
    ws: &Workspace,
    project: &str,
    id: &str,
    decide: impl FnOnce(&Located) -> Result<Decided<(Option<Document>, T)>, E>,
) -> Result<Decided<T>, E> {
    let ulid = id.strip_prefix("r-").unwrap_or(id);
    let _lock = ws
        .fs
        .lock(&ws.lock_path(&format!("risk-{ulid}")))
        .map_err(Error::from)?;
    // Re-read under the lock: the owner may have changed it since the caller's listing.
    let current = risks::reload(ws, project, id).map_err(Error::from)?;
    let (doc, answer) = match decide(&current)? {
        Decided::Done(done) => done,
        Decided::Refused(refusal) => return Ok(Decided::Refused(refusal)),
    };
    if let Some(doc) = doc {
        ws.fs
            .replace(&current.file, doc.render().as_bytes())
            .map_err(Error::from)?;
    }
    Ok(Decided::Done(answer))
}
