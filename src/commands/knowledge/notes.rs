//! What `note list`, `note show` and `note add --supersedes` share: every note of the
//! workspace as one list, files and pending `finding` events alike, and `<NOTE>` resolution.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::dispatch::{Ctx, Error};
use crate::journal::{self, index::EventEntry};
use crate::model::event::EventHead;
use crate::model::id::parse_ulid;
use crate::model::note::{NoteHead, materialise};
use crate::objects::index::{self, NoteEntry};
use crate::objects::{self, projects};
use crate::store;
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

/// One note, from its index entry or from the pending event that will become it.
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
    /// Where the rest of the note is: its file, or the pending event already read.
    origin: Origin,
}

#[derive(Debug, Clone)]
enum Origin {
    /// The note's file, relative to the workspace directory.
    File(String),
    Event(Box<EventHead>),
}

/// What a listing leaves out of a note: its flags and body, read by [`details`].
pub(super) struct Details {
    pub private: bool,
    pub tags: Vec<String>,
    pub body: String,
}

/// Every note of the workspace (from the index, each entry proven against its file) plus
/// every pending `finding` event (as the note it will materialise into), sorted by id.
/// Skipped files are reported as warnings.
pub(super) fn gather(ctx: &Ctx, ws: &Workspace) -> Result<Vec<Entry>, Error> {
    let projects = projects::list(ws)?;
    let dirs: Vec<String> = projects.items.into_iter().map(|p| p.slug).collect();
    let listing = index::notes(ws, &dirs)?;
    ctx.warn_all(listing.warnings);
    let mut out: Vec<Entry> = listing.items.iter().map(|n| from_file(ws, n)).collect();
    let events = journal::index::read(ws)?;
    ctx.warn_all(events.warnings.iter().cloned());
    let pending: Vec<&EventEntry> = events
        .entries
        .iter()
        .filter(|e| e.kind() == "finding" && events.is_pending(e))
        .collect();
    if !pending.is_empty() {
        let task_projects = task_projects(ctx, ws)?;
        // A crash between materialising and the receipt leaves both; the file wins.
        let files: BTreeSet<String> = out.iter().map(|e| e.note.id.clone()).collect();
        for ev in pending {
            let head = match events.load(ws, ev) {
                Ok(head) => head,
                Err(objects::Error::Store(store::Error::Malformed(p))) => {
                    ctx.warn_all([p]);
                    continue;
                }
                Err(gone) if gone.is_vanished() => continue,
                Err(other) => return Err(other.into()),
            };
            if let Some(entry) = from_event(head, &task_projects)
                && !files.contains(&entry.note.id)
            {
                out.push(entry);
            }
        }
    }
    out.sort_by(|a, b| a.note.id.cmp(&b.note.id));
    Ok(out)
}

/// The flags and body of `entry`, read from its file (checked to still hold that note) or
/// from its pending event.
pub(super) fn details(ws: &Workspace, entry: &Entry) -> Result<Details, Error> {
    let file = match &entry.origin {
        Origin::Event(ev) => {
            return Ok(Details {
                private: ev.field_bool("private") == Some(true),
                tags: Vec::new(),
                body: ev.body.clone(),
            });
        }
        Origin::File(file) => ws.dir().join(file),
    };
    let doc = objects::read_document(ws, &file)?;
    let dir = file
        .parent()
        .and_then(|d| d.file_name())
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    let head = NoteHead::parse(&doc.front, &doc.body, &dir, &entry.note.scope)
        .map_err(|e| objects::Error::malformed(objects::field_problem(ws, &file, e)))?;
    if head.id != entry.note.id {
        return Err(Error::new(
            crate::dispatch::ErrorKind::Conflict,
            "E_CONFLICT",
            format!(
                "{} changed while it was read: it now holds note {}",
                ws.display(&file),
                head.id
            ),
        )
        .hint("run the command again"));
    }
    Ok(Details {
        private: head.private,
        tags: head.tags,
        body: doc.body,
    })
}

/// Task id → project directory, to place pending findings about tasks.
fn task_projects(ctx: &Ctx, ws: &Workspace) -> Result<BTreeMap<String, String>, Error> {
    let listing = index::all_tasks(ws)?;
    ctx.warn_all(listing.warnings);
    Ok(listing
        .items
        .iter()
        .map(|t| (t.id().to_string(), t.project().to_string()))
        .collect())
}

fn from_file(ws: &Workspace, n: &NoteEntry) -> Entry {
    // A format-2 name is `<ULID>-<slug>.md`: the slug is what a person types.
    let stem = n.stem();
    let slug = crate::model::task::parse_keyed_filename(&format!("{stem}.md"))
        .map(|(_, slug)| slug.to_string())
        .unwrap_or_else(|| stem.to_string());
    let kind = n.kind().to_string();
    Entry {
        note: NoteRef {
            // Severity means something for findings only; elsewhere lint reports it.
            severity: n
                .severity()
                .filter(|_| kind == "finding")
                .map(str::to_string),
            id: n.id().to_string(),
            kind,
            title: n.title().to_string(),
            scope: n.scope().to_string(),
            about: n.about().map(str::to_string),
            path: Some(ws.display(&ws.dir().join(n.file()))),
            pending: false,
        },
        project: n.project().map(str::to_string),
        slug: Some(slug),
        created: n.created().parse().unwrap_or_default(),
        created_by: n.created_by().to_string(),
        source_event: n.source_event().map(str::to_string),
        supersedes: n.supersedes().map(str::to_string),
        origin: Origin::File(n.file().to_string()),
    }
}

fn from_event(ev: EventHead, task_projects: &BTreeMap<String, String>) -> Option<Entry> {
    let m = materialise(&ev)?;
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
        origin: Origin::Event(Box::new(ev)),
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
