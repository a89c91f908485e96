//! The glossary transaction: add (or replace) a term under the glossary's lock.

use std::path::PathBuf;

use toml_edit::{DocumentMut, value};

use super::owner::acts_as_owner;
use super::{Decided, Error};
use crate::model::Refusal;
use crate::model::glossary::{Added, Duplicate, add, new_body};
use crate::model::project::ProjectHead;
use crate::objects::glossary;
use crate::store::Document;
use crate::workspace::Workspace;

/// A term to add to the glossary of a project.
pub struct NewTerm<'a> {
    pub term: &'a str,
    pub definition: &'a str,
    /// Replace the definition of a term already there.
    pub replace: bool,
}

/// Adds `t` to the glossary of `project` as `me` under `glossary-<slug>.lock`, re-reading the
/// glossary under the lock. A missing glossary is created with `new_front`; a changed one is
/// written with the new `rev`. Returns the file and the effect (`applied`, `unchanged`).
pub fn add_term(
    ws: &Workspace,
    project: &ProjectHead,
    me: &str,
    t: &NewTerm<'_>,
    new_front: DocumentMut,
    rev: ulid::Ulid,
) -> Result<Decided<(PathBuf, &'static str)>, Error> {
    let _lock = ws
        .fs
        .lock(&ws.lock_path(&format!("glossary-{}", project.slug)))?;
    // Re-read under the lock: another writer may have created or changed it meanwhile.
    let current = glossary::load(ws, &project.slug)?;
    Ok(Decided::Done(match current {
        None => {
            let doc = Document::new(new_front, new_body(t.term, t.definition));
            let file = glossary::file(ws, &project.slug);
            ws.fs.create_new(&file, doc.render().as_bytes())?;
            (file, "applied")
        }
        Some(g) => {
            if !acts_as_owner(ws, me, &g.head.owner) {
                return Ok(Decided::Refused(not_owner(project, &g.head.owner)));
            }
            match add(&g.doc.body, t.term, t.definition, t.replace) {
                Err(d) => return Ok(Decided::Refused(duplicate(project, &d))),
                Ok(Added::Unchanged) => (g.file, "unchanged"),
                Ok(Added::Appended(body) | Added::Replaced(body)) => {
                    let mut doc = g.doc;
                    doc.body = body;
                    doc.front["rev"] = value(rev.to_string());
                    ws.fs.replace(&g.file, doc.render().as_bytes())?;
                    (g.file, "applied")
                }
            }
        }
    }))
}

/// The refusal of a write to the glossary of `project`, owned by `owner`.
pub fn not_owner(project: &ProjectHead, owner: &str) -> Refusal {
    Refusal::new(
        "glossary.not_owner",
        format!(
            "the glossary of {} belongs to {owner}, the project's owner",
            project.id
        ),
        format!(
            "Ask {owner}: `dacli ask {} \"…\"` (an ro agent may also record a finding).",
            project.id
        ),
    )
}

fn duplicate(project: &ProjectHead, d: &Duplicate) -> Refusal {
    Refusal::new(
        "glossary.duplicate_term",
        format!(
            "the glossary of {} already defines \"{}\" (terms are compared case-insensitively)",
            project.id, d.term
        ),
        format!(
            "\"{}\" is defined as \"{}\"; pass `--replace` to change it.",
            d.term, d.definition
        ),
    )
}
