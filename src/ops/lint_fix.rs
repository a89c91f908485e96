//! What `lint --fix` repairs, and who may: the owner rewrites its non-canonical objects and
//! renumbers its duplicate task numbers (root acting for a retired or missing owner); any rw
//! caller removes stale temp files and byte-identical copies of a note. Every rewrite takes the
//! object's lock, re-reads the file and mints a new `rev`.

use std::path::PathBuf;

use toml_edit::{DocumentMut, value};

use super::Error;
use crate::model::agent::AgentStatus;
use crate::model::id::ROOT_AGENT;
use crate::model::taskdoc::Stamp;
use crate::objects::{self, agents, tasks};
use crate::store::{self, Document, TomlRecord};
use crate::workspace::Workspace;

/// One repair `lint --fix` can make.
#[derive(Debug, Clone)]
pub enum Fix {
    /// Rewrite a canonical object in canonical form, under `lock`, with a new `rev`.
    Canonicalize {
        file: PathBuf,
        shown: String,
        lock: String,
        /// A plain TOML record (`config.toml`, trains) rather than a Markdown document.
        toml: bool,
        /// `config.toml` has no `rev`.
        has_rev: bool,
    },
    /// Remove a stale temp file.
    RemoveTemp(PathBuf),
    /// Remove a byte-identical copy of a note (FORMAT §22: the first path in byte order stays).
    RemoveCopy(PathBuf),
    /// Move a task whose number another task of the project also has to the next free number.
    Renumber { project: String, id: String },
}

/// Who applies a fix, and when.
pub struct Fixer<'a> {
    /// The acting agent.
    pub me: &'a str,
    /// The formatted time for Log lines.
    pub at: &'a str,
    /// Fresh ULIDs for new `rev`s.
    pub mint: &'a dyn Fn() -> ulid::Ulid,
}

/// Applies `fix`; `Ok(false)` when the caller may not touch the object (`not_owner`).
pub fn apply(by: &Fixer<'_>, ws: &Workspace, fix: &Fix) -> Result<bool, Error> {
    match fix {
        Fix::Canonicalize {
            file,
            shown,
            lock,
            toml,
            has_rev,
        } => {
            let _guard = ws.fs.lock(&ws.lock_path(lock))?;
            let bytes = ws.fs.read(file)?;
            if store::is_canonical(&bytes) {
                return Ok(true);
            }
            let malformed = store::Error::Malformed;
            let (mut front, body) = if *toml {
                let r = TomlRecord::parse(shown, &bytes).map_err(malformed)?;
                (r.doc, None)
            } else {
                let d = Document::parse(shown, &bytes).map_err(malformed)?;
                (d.front, Some(d.body))
            };
            let owner = match (*has_rev, front.get("owner").and_then(|o| o.as_str())) {
                (false, _) => ROOT_AGENT.to_string(),
                (true, Some(o)) => o.to_string(),
                (true, None) => return Ok(false),
            };
            if !may_write(by, ws, &owner)? {
                return Ok(false);
            }
            if *has_rev {
                front["rev"] = value((by.mint)().to_string());
            }
            ws.fs.replace(file, render(front, body).as_bytes())?;
            Ok(true)
        }
        Fix::RemoveTemp(path) | Fix::RemoveCopy(path) => {
            ws.fs.remove(path)?;
            Ok(true)
        }
        Fix::Renumber { project, id } => renumber(by, ws, project, id),
    }
}

fn render(front: DocumentMut, body: Option<String>) -> String {
    match body {
        Some(body) => Document::new(front, body).render(),
        None => TomlRecord { doc: front }.render(),
    }
}

/// FORMAT §22: the owner of the task with the greater ULID moves it to the next free number
/// and logs the change. Under `seq-<slug>.lock`, then the task's lock (the §4.3 order).
fn renumber(by: &Fixer<'_>, ws: &Workspace, project: &str, id: &str) -> Result<bool, Error> {
    let before = tasks::list(ws, project)?;
    let Some(t) = tasks::by_id(&before.items, id) else {
        return Ok(true);
    };
    if !may_write(by, ws, t.doc.owner())? {
        return Ok(false);
    }
    let ulid = id.strip_prefix("t-").unwrap_or(id);
    let _seq = ws.fs.lock(&ws.lock_path(&format!("seq-{project}")))?;
    let _task = ws.fs.lock(&ws.lock_path(&format!("task-{ulid}")))?;
    let t = tasks::reload(ws, project, id)?;
    let listing = tasks::list(ws, project)?;
    let still_shared = listing
        .items
        .iter()
        .any(|o| o.task.number == t.task.number && o.task.id < t.task.id);
    if !still_shared {
        return Ok(true);
    }
    let number = tasks::next_number(ws, project)?;
    let mut doc = t.doc.clone();
    doc.front["rev"] = value((by.mint)().to_string());
    doc.log_line(
        Stamp {
            at: by.at,
            by: by.me,
            event: None,
        },
        &format!("renumbered {:03} -> {number:03}", t.task.number),
    );
    tasks::set_seq(&mut doc.front, number);
    let dest = tasks::file_for(ws, project, doc.status, &t.task.id, &t.task.slug);
    let rendered = Document::new(doc.front, doc.body).render();
    if dest == t.file {
        ws.fs.replace(&dest, rendered.as_bytes())?;
    } else {
        // A format-1 file takes its format-2 name on the way.
        ws.fs.create_new(&dest, rendered.as_bytes())?;
        ws.fs.remove(&t.file)?;
    }
    Ok(true)
}

/// The owner writes its objects; root also writes those of a retired or missing owner.
pub(super) fn may_write(by: &Fixer<'_>, ws: &Workspace, owner: &str) -> Result<bool, Error> {
    let me = by.me;
    if me == owner {
        return Ok(true);
    }
    if me != ROOT_AGENT {
        return Ok(false);
    }
    match agents::load(ws, owner) {
        Ok(a) => Ok(a.status == AgentStatus::Retired),
        Err(objects::Error::NotFound { .. }) => Ok(true),
        Err(e) => Err(e.into()),
    }
}
