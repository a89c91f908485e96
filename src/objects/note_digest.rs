//! The notes filed by subject (docs/PERFORMANCE.md, "Digests"): the notes a brief can show,
//! without reading every note's extract.
//!
//! `cache/notes.idx` files each note of a listing ([`super::index::notes`]) under `ws` when
//! its scope is the workspace, `p:<slug>` when it belongs to a project and is about the
//! project or nothing, `a:<object>` for the object it is about, and `i:<id>` and `s:<stem>`
//! for lookups by name. Its header holds what a brief needs of every note: the ids some
//! note supersedes, and each project's finding subjects. The layout and the rules that keep
//! it exact are those of [`super::filed`]; it records the stamps of `projects/`, the note
//! folders of each project listed and those of the workspace.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::model::note::NOTE_KINDS;
use crate::workspace::Workspace;

use super::Error;
use super::codec::{Input, Output};
use super::filed::{self, Filed, Filing};
use super::index::{DirStamp, NoteEntry, cache_file_named};
use crate::store::Problem;

const FORMAT: &str = "dacli-note-digest/1";

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
    source: Source,
    /// Every id some note supersedes.
    pub superseded: BTreeSet<String>,
    /// Per project, the objects its findings are about.
    pub finding_subjects: BTreeMap<String, BTreeSet<String>>,
    /// The listing's warnings (none when served from the digest, which is written only
    /// from a listing without any).
    pub warnings: Vec<Problem>,
}

enum Source {
    Filed(Filed),
    /// Every note, sorted by id.
    All(Vec<Arc<NoteEntry>>),
}

impl Notes {
    /// The notes of projects `slugs` and of the workspace: from the digest when it is
    /// current, else from the listing, which writes the digest for the next reader.
    pub fn load(ws: &Workspace, slugs: &[String]) -> Result<Notes, Error> {
        let path = cache_file_named(ws, "notes.idx");
        if let Some(digest) = Filed::open(ws, &path, FORMAT)
            && let Some((slugs_filed, superseded, finding_subjects)) = header(&digest)
            && slugs_filed == slugs
        {
            return Ok(Notes {
                source: Source::Filed(digest),
                superseded,
                finding_subjects,
                warnings: Vec::new(),
            });
        }
        let started = filed::started();
        let before = walk(ws, slugs);
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
        if listing.warnings.is_empty() && walk(ws, slugs) == before {
            let mut extra = Output::default();
            extra.var(slugs.len() as u64);
            for s in slugs {
                extra.str(s);
            }
            extra.var(superseded.len() as u64);
            for s in &superseded {
                extra.str(s);
            }
            extra.var(finding_subjects.len() as u64);
            for (p, subjects) in &finding_subjects {
                extra.str(p);
                extra.var(subjects.len() as u64);
                for s in subjects {
                    extra.str(s);
                }
            }
            let subjects: Vec<Vec<String>> = listing.items.iter().map(|n| filed_under(n)).collect();
            let items: Vec<Filing<'_>> = listing
                .items
                .iter()
                .zip(&subjects)
                .map(|(n, s)| Filing {
                    bytes: n.bytes(),
                    subjects: s.iter().map(String::as_str).collect(),
                    code: 0,
                })
                .collect();
            filed::write(ws, &path, FORMAT, &before, started, &extra.0, &items);
        }
        Ok(Notes {
            source: Source::All(listing.items),
            superseded,
            finding_subjects,
            warnings: listing.warnings,
        })
    }

    /// The notes filed under any of `subjects`, sorted by id: exactly those from the
    /// digest (and any whose subject hash collides), or every note when served from the
    /// listing. Callers filter by the notes' own fields, so either gives the same answer.
    pub fn select(
        &self,
        ws: &Workspace,
        slugs: &[String],
        subjects: &BTreeSet<String>,
    ) -> Result<Vec<Arc<NoteEntry>>, Error> {
        if let Source::Filed(digest) = &self.source {
            let found = digest
                .lookup(subjects.iter().map(String::as_str))
                .and_then(|found| {
                    found
                        .into_values()
                        .map(|(bytes, _)| NoteEntry::from_bytes(bytes).map(Arc::new))
                        .collect::<Option<Vec<_>>>()
                });
            if let Some(mut notes) = found {
                super::sort_by_str_key(&mut notes, |n| n.id());
                notes.dedup_by(|a, b| a.id() == b.id());
                return Ok(notes);
            }
            // A part failed its check: the listing answers.
            return Ok(super::index::notes(ws, slugs)?.items);
        }
        match &self.source {
            Source::All(all) => Ok(all.clone()),
            Source::Filed(_) => Ok(Vec::new()),
        }
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

type Header = (
    Vec<String>,
    BTreeSet<String>,
    BTreeMap<String, BTreeSet<String>>,
);

fn header(digest: &Filed) -> Option<Header> {
    let mut input = Input::new(digest.extra());
    let slugs = (0..input.count()?)
        .map(|_| input.str().map(str::to_string))
        .collect::<Option<Vec<_>>>()?;
    let superseded = (0..input.count()?)
        .map(|_| input.str().map(str::to_string))
        .collect::<Option<BTreeSet<_>>>()?;
    let mut findings = BTreeMap::new();
    for _ in 0..input.count()? {
        let p = input.str()?.to_string();
        let subjects = (0..input.count()?)
            .map(|_| input.str().map(str::to_string))
            .collect::<Option<BTreeSet<_>>>()?;
        findings.insert(p, subjects);
    }
    input.at_end().then_some((slugs, superseded, findings))
}

/// The stamps of the directories the note listing of `slugs` reads, in a fixed order.
fn walk(ws: &Workspace, slugs: &[String]) -> Vec<DirStamp> {
    let mut out = vec![filed::dir_stamp(ws, &ws.path(&["projects"]))];
    let mut bases: Vec<std::path::PathBuf> = slugs
        .iter()
        .map(|s| ws.path(&["projects", s, "notes"]))
        .collect();
    bases.push(ws.path(&["notes"]));
    for base in bases {
        out.push(filed::dir_stamp(ws, &base));
        for (_, dir) in NOTE_KINDS {
            out.push(filed::dir_stamp(ws, &base.join(dir)));
        }
    }
    out
}
