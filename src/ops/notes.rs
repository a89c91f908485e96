//! Writing notes: a note file (rw agents) or a `finding` event that its owner materialises
//! on sync (ro agents).

use std::path::PathBuf;

use toml_edit::Item;

use super::Error;
use crate::journal::{self, NewEvent};
use crate::model::event::EventHead;
use crate::objects::notes;
use crate::store::Document;
use crate::workspace::Workspace;

/// Creates the note `doc` (id `note_id`, titled `title`) in `kind_dir` of `project` (or the
/// workspace), named from its title; see [`notes::create`]. Returns its path.
pub fn create(
    ws: &Workspace,
    project: Option<&str>,
    kind_dir: &str,
    note_id: &str,
    title: &str,
    doc: &Document,
) -> Result<PathBuf, Error> {
    Ok(notes::create(ws, project, kind_dir, note_id, title, doc)?)
}

/// Records a finding by `me` about `about` as event `id`, for the owner of `about` to
/// materialise into a note.
pub fn record_finding(
    ws: &Workspace,
    id: ulid::Ulid,
    me: &str,
    about: &str,
    fields: Vec<(&str, Item)>,
    body: String,
) -> Result<EventHead, Error> {
    Ok(journal::append(
        ws,
        NewEvent {
            id,
            kind: "finding",
            created_by: me,
            about: Some(about),
            fields,
            body,
        },
    )?)
}
