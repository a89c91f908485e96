//! What `note list`, `note show` and `note add --supersedes` share: every note of the
//! workspace as one list, files and pending `finding` events alike, and `<NOTE>` resolution.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::dispatch::{Ctx, Error};
use crate::journal;
use crate::model::event::EventHead;
use crate::model::id::parse_ulid;
use crate::model::note::materialise;
use crate::objects::{notes, tasks};
use crate::workspace::Workspace;

/// The `NoteRef` shape of COMMANDS.md §1.7. A finding still in an event has `pending: true`
/// and `path: null`.
#[derive(Debug, Clone, Serialize)]
pub(super) struct NoteRef {
    pub id: String,
    pub kind: String,
    pub title: String,
    pub scope: String,
    pub about: Option<String>,
    pub severity: Option<String>,
    pub path: Option<String>,
    pub pending: bool,
}

/// One note, from its file or from the pending event that will become it.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub note: NoteRef,
    /// The project directory it is (or will be) in; `None` for workspace scope.
    pub project: Option<String>,
    /// The file stem, for resolution by slug; `None` while pending.
    pub slug: Option<String>,
    pub created: jiff::Timestamp,
    pub created_by: String,
    pub source_event: Option<String>,
    pub supersedes: Option<String>,
    pub private: bool,
    pub tags: Vec<String>,
    pub body: String,
}

/// Every note file of the workspace plus every pending `finding` event (as the note it will
/// materialise into), sorted by id. Skipped files are reported as warnings.
pub(super) fn gather(ctx: &Ctx, ws: &Workspace) -> Result<Vec<Entry>, Error> {
    let listing = notes::list(ws)?;
    ctx.warn_all(listing.warnings);
    let mut out: Vec<Entry> = listing.items.into_iter().map(from_file).collect();
    let journal = journal::read(ws)?;
    ctx.warn_all(journal.warnings.iter().cloned());
    let pending: Vec<&EventHead> = journal.pending().filter(|e| e.kind == "finding").collect();
    if !pending.is_empty() {
        let task_projects = task_projects(ctx, ws)?;
        // A crash between materialising and the receipt leaves both; the file wins.
        let files: BTreeSet<String> = out.iter().map(|e| e.note.id.clone()).collect();
        for ev in pending {
            if let Some(entry) = from_event(ev, &task_projects)
                && !files.contains(&entry.note.id)
            {
                out.push(entry);
            }
        }
    }
    out.sort_by(|a, b| a.note.id.cmp(&b.note.id));
    Ok(out)
}

/// Task id → project directory, to place pending findings about tasks.
fn task_projects(ctx: &Ctx, ws: &Workspace) -> Result<BTreeMap<String, String>, Error> {
    let listing = tasks::list_all(ws)?;
    ctx.warn_all(listing.warnings);
    Ok(listing
        .items
        .into_iter()
        .map(|t| (t.task.id, t.project))
        .collect())
}

fn from_file(l: notes::Located) -> Entry {
    let n = l.note;
    // A format-2 name is `<ULID>-<slug>.md`: the slug is what a person types.
    let slug = l.file.file_name().map(|s| {
        let name = s.to_string_lossy();
        crate::model::task::parse_keyed_filename(&name)
            .map(|(_, slug)| slug.to_string())
            .unwrap_or_else(|| name.trim_end_matches(".md").to_string())
    });
    Entry {
        note: NoteRef {
            // Severity means something for findings only; elsewhere lint reports it.
            severity: n.severity.filter(|_| n.kind == "finding"),
            id: n.id,
            kind: n.kind,
            title: n.title,
            scope: n.scope,
            about: n.about,
            path: Some(l.path),
            pending: false,
        },
        project: l.project,
        slug,
        created: n.created,
        created_by: n.created_by,
        source_event: n.source_event,
        supersedes: n.supersedes,
        private: n.private,
        tags: n.tags,
        body: l.body,
    }
}

fn from_event(ev: &EventHead, task_projects: &BTreeMap<String, String>) -> Option<Entry> {
    let m = materialise(ev)?;
    let project = match (m.scope.as_str(), m.about.as_deref()) {
        ("project", Some(about)) => match about.strip_prefix("p-") {
            Some(slug) => Some(slug.to_string()),
            None => task_projects.get(about).cloned(),
        },
        _ => None,
    };
    Some(Entry {
        note: NoteRef {
            id: m.id,
            kind: m.kind,
            title: m.title,
            scope: m.scope,
            about: m.about,
            severity: ev.field_str("severity").map(str::to_string),
            path: None,
            pending: true,
        },
        project,
        slug: None,
        created: ev.created,
        created_by: ev.created_by.clone(),
        source_event: Some(ev.id.clone()),
        supersedes: None,
        private: ev.field_bool("private") == Some(true),
        tags: Vec::new(),
        body: ev.body.clone(),
    })
}

/// Note id → the ids of the notes that supersede it, oldest first.
pub(super) fn superseded_by(entries: &[Entry]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in entries {
        if let Some(old) = &e.supersedes {
            out.entry(old.clone()).or_default().push(e.note.id.clone());
        }
    }
    out
}

/// Resolves a `<NOTE>`: a note id (`n-<ULID>` or the bare ULID, any case), a path (relative
/// to the work-tree root or to the workspace directory), or a file slug unique in the
/// workspace. `flag` names the argument in errors.
pub(super) fn find<'a>(entries: &'a [Entry], flag: &str, input: &str) -> Result<&'a Entry, Error> {
    let input = input.trim();
    let bare = input
        .get(..2)
        .filter(|p| p.eq_ignore_ascii_case("n-"))
        .map_or(input, |_| &input[2..]);
    let matches: Vec<&Entry> = if let Some(u) = parse_ulid(bare) {
        let id = format!("n-{u}");
        entries.iter().filter(|e| e.note.id == id).collect()
    } else if input.contains('/') || input.ends_with(".md") {
        let path = input.trim_start_matches("./");
        let tail = format!("/{path}");
        entries
            .iter()
            .filter(|e| {
                e.note
                    .path
                    .as_deref()
                    .is_some_and(|p| p == path || p.ends_with(&tail))
            })
            .collect()
    } else {
        entries
            .iter()
            .filter(|e| e.slug.as_deref() == Some(input))
            .collect()
    };
    match matches.as_slice() {
        [one] => Ok(one),
        [] => Err(Error::not_found(format!(
            "{flag} `{input}`: no note with that id, path or slug"
        ))
        .hint("`dacli note list` shows ids and paths")),
        many => Err(super::ambiguous(format!(
            "{flag} `{input}` matches several notes: {}",
            many.iter()
                .map(|e| e.note.path.clone().unwrap_or_else(|| e.note.id.clone()))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .hint("pass the note's id (`n-<ULID>`) or its path")),
    }
}
