//! Notes (docs/FORMAT.md §15): listing both scopes, and creating note files (create-new, with
//! the slug collision rule).

use std::path::PathBuf;

use crate::model::note::{NOTE_KINDS, NoteHead};
use crate::store::{Document, TEMP_PREFIX};
use crate::workspace::Workspace;
use crate::workspace::names::{check_slug, slugify};

use super::{Error, Listing, field_problem, projects, read_document, warn_or_fail};

/// A note and where it is.
#[derive(Debug, Clone)]
pub struct Located {
    /// The project directory for project scope; `None` for workspace scope.
    pub project: Option<String>,
    pub file: PathBuf,
    pub path: String,
    pub note: NoteHead,
    pub body: String,
}

/// Every note of every project and of the workspace scope, sorted by id.
pub fn list(ws: &Workspace) -> Result<Listing<Located>, Error> {
    let mut out = Listing::default();
    let p = projects::list(ws)?;
    for project in &p.items {
        read_scope(ws, Some(&project.slug), &mut out)?;
    }
    read_scope(ws, None, &mut out)?;
    out.items.sort_by(|a, b| a.note.id.cmp(&b.note.id));
    Ok(out)
}

fn read_scope(
    ws: &Workspace,
    project: Option<&str>,
    out: &mut Listing<Located>,
) -> Result<(), Error> {
    let scope = if project.is_some() {
        "project"
    } else {
        "workspace"
    };
    for (_, dir) in NOTE_KINDS {
        let base = match project {
            Some(slug) => ws.path(&["projects", slug, "notes", dir]),
            None => ws.path(&["notes", dir]),
        };
        for (name, path) in ws.fs.list_dir(&base)? {
            if name.starts_with('.') || name.starts_with(TEMP_PREFIX) || !name.ends_with(".md") {
                continue;
            }
            let Some(doc) = warn_or_fail(&mut out.warnings, read_document(ws, &path))? else {
                continue;
            };
            match NoteHead::parse(&doc.front, &doc.body, dir, scope) {
                Ok(note) => out.items.push(Located {
                    project: project.map(str::to_string),
                    path: ws.display(&path),
                    file: path,
                    note,
                    body: doc.body,
                }),
                Err(e) => out.warnings.push(field_problem(ws, &path, e)),
            }
        }
    }
    Ok(())
}

/// Creates a note file `<ULID>-<slug>.md` in `dir` (e.g. `notes/decisions`) of `project` (or
/// the workspace scope), the slug made from its title (FORMAT §15). A byte-identical existing
/// file (the same event materialised twice) is success. Returns the path.
pub fn create(
    ws: &Workspace,
    project: Option<&str>,
    kind_dir: &str,
    note_id: &str,
    title: &str,
    doc: &Document,
) -> Result<PathBuf, Error> {
    if let Some(p) = project {
        check_slug(p).map_err(|_| Error::NotFound {
            what: "project",
            id: p.to_string(),
        })?;
    }
    let base = match project {
        Some(slug) => ws.path(&["projects", slug, "notes", kind_dir]),
        None => ws.path(&["notes", kind_dir]),
    };
    let slug = slugify(title);
    // `<ULID>-<slug>.md`: a path no other clone can create, but the same note materialised
    // from one event in two clones, byte-identical (FORMAT §22).
    let ulid = note_id.strip_prefix("n-").unwrap_or(note_id);
    let path = base.join(crate::model::task::keyed_filename(ulid, &slug));
    let bytes = doc.render();
    match ws.fs.create_new(&path, bytes.as_bytes()) {
        Ok(()) => Ok(path),
        Err(crate::store::Error::Exists { .. })
            if ws.fs.read(&path).ok().as_deref() == Some(bytes.as_bytes()) =>
        {
            Ok(path)
        }
        Err(e) => Err(e.into()),
    }
}
