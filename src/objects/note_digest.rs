//! The notes by subject: what a brief asks of the note listing ([`super::index::notes`]),
//! named the way it asks (the workspace's notes, a project's, those about an object, by id
//! or file stem).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::workspace::Workspace;

use super::Error;
use super::index::NoteEntry;
use crate::store::Problem;
/// The subject of the notes of workspace scope.
pub fn workspace() -> String {
    "ws".to_string()
}

/// The subject of project `slug`'s notes about the project or nothing.
pub fn project(slug: &str) -> String {
    format!("p:{slug}")
}

/// The subject of the notes about object `id`.
pub fn about(id: &str) -> String {
    format!("a:{id}")
}

/// The subject of the note with id `id`.
pub fn id(id: &str) -> String {
    format!("i:{id}")
}

/// The subject of the notes whose file stem is `stem`.
pub fn stem(stem: &str) -> String {
    format!("s:{stem}")
}

/// The notes of some projects, for a reader that needs a few of them.
pub struct Notes {
    /// Every note, sorted by id.
    all: Vec<Arc<NoteEntry>>,
    /// Every id some note supersedes.
    pub superseded: BTreeSet<String>,
    /// Per project, the objects its findings are about.
    pub finding_subjects: BTreeMap<String, BTreeSet<String>>,
    /// The listing's warnings.
    pub warnings: Vec<Problem>,
}

impl Notes {
    /// The notes of projects `slugs` and of the workspace.
    pub fn load(ws: &Workspace, slugs: &[String]) -> Result<Notes, Error> {
        let listing = super::index::notes(ws, slugs)?;
        let superseded: BTreeSet<String> = listing
            .items
            .iter()
            .filter_map(|n| n.supersedes().map(str::to_string))
            .collect();
        let mut finding_subjects: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for n in listing.items.iter().filter(|n| n.kind() == "finding") {
            if let (Some(p), Some(a)) = (n.project(), n.about()) {
                finding_subjects
                    .entry(p.to_string())
                    .or_default()
                    .insert(a.to_string());
            }
        }
        Ok(Notes {
            all: listing.items,
            superseded,
            finding_subjects,
            warnings: listing.warnings,
        })
    }

    /// The notes filed under any of `subjects`, sorted by id.
    pub fn select(
        &self,
        _ws: &Workspace,
        _slugs: &[String],
        subjects: &BTreeSet<String>,
    ) -> Result<Vec<Arc<NoteEntry>>, Error> {
        Ok(self
            .all
            .iter()
            .filter(|n| filed_under(n).iter().any(|s| subjects.contains(s)))
            .cloned()
            .collect())
    }
}

/// The subjects a note is filed under.
fn filed_under(n: &NoteEntry) -> Vec<String> {
    let mut out = vec![id(n.id()), stem(n.stem())];
    if n.scope() == "workspace" {
        out.push(workspace());
    }
    if let Some(p) = n.project()
        && n.about().is_none_or(|a| a == format!("p-{p}"))
    {
        out.push(project(p));
    }
    if let Some(a) = n.about() {
        out.push(about(a));
    }
    out
}
