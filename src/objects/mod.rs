//! L2: reading (and later writing) the canonical objects of a workspace, with the warnings
//! contract of docs/FORMAT.md §4.4: a listing skips a bad file and reports it; a command that
//! needs that very object fails naming the file and the reason.

pub mod agents;
pub mod client_files;
pub mod codec;
pub mod folders;
pub mod gitignore;
pub mod glossary;
pub mod index;
pub mod lookup;
pub mod note_digest;
pub mod notes;
pub mod projects;
pub mod queues;
pub mod risks;
pub mod roles;
pub mod runtimes;
pub mod shortcuts;
pub mod tasks;
pub mod templates;

use std::path::Path;

use crate::model::{FieldError, FieldErrorKind};
use crate::store::{self, Document, Problem, Reason};
use crate::workspace::Workspace;

/// Errors of object access.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No object with that id or name.
    #[error("no {what} `{id}`")]
    NotFound { what: &'static str, id: String },
    #[error("{0}")]
    Store(#[from] store::Error),
    /// Two copies of one object that no rule can order (FORMAT §4.4 `duplicate_id` with equal
    /// `rev`): reads pick one, a mutation is refused until a human keeps one.
    #[error("{path}: {detail}")]
    Conflict { path: String, detail: String },
}

impl Error {
    /// Wraps a problem with a file the caller needed.
    pub fn malformed(problem: Problem) -> Error {
        Error::Store(store::Error::Malformed(problem))
    }

    /// True for a file that was gone when opened: one a writer moved or removed after a
    /// reader listed it, which the reader answers by looking again.
    pub fn is_vanished(&self) -> bool {
        matches!(self, Error::Store(store::Error::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// The result of a listing: every good object, and one problem per file that was skipped.
#[derive(Debug)]
pub struct Listing<T> {
    pub items: Vec<T>,
    pub warnings: Vec<Problem>,
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Listing {
            items: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

/// Sorts `items` by a string each one holds, stably, reading each key once.
///
/// Index extracts decode a field on every access; a comparison sort reads two keys per
/// comparison, which made sorting 2,000 notes a tenth of a brief. Already sorted input (the
/// common case for a listing served from a settled cache) costs one pass.
pub fn sort_by_str_key<T>(items: &mut Vec<T>, key: impl Fn(&T) -> &str) {
    let order: Vec<usize> = {
        let mut keys: Vec<(&str, usize)> = items.iter().map(&key).zip(0..).collect();
        if keys.is_sorted_by(|a, b| a.0 <= b.0) {
            return;
        }
        // (key, position) pairs are distinct, so an unstable sort is stable on the items.
        keys.sort_unstable();
        keys.into_iter().map(|(_, i)| i).collect()
    };
    let mut slots: Vec<Option<T>> = items.drain(..).map(Some).collect();
    items.extend(order.into_iter().filter_map(|i| slots[i].take()));
}

/// The `workspace` block several commands return: id, display name, format.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WorkspaceInfo {
    pub id: String,
    pub name: Option<String>,
    pub format: i64,
}

impl WorkspaceInfo {
    /// The block for `ws`.
    pub fn of(ws: &Workspace) -> WorkspaceInfo {
        WorkspaceInfo {
            id: ws.config.workspace_id.clone(),
            name: ws.config.name.clone(),
            format: ws.config.format,
        }
    }
}

/// Reads and parses one `.md` object file.
pub fn read_document(ws: &Workspace, path: &Path) -> Result<Document, store::Error> {
    let bytes = ws.fs.read(path)?;
    Document::parse(&ws.display(path), &bytes).map_err(store::Error::Malformed)
}

/// Turns a field error of the file at `path` into a problem report.
pub fn field_problem(ws: &Workspace, path: &Path, e: FieldError) -> Problem {
    Problem {
        path: ws.display(path),
        reason: match e.kind {
            FieldErrorKind::Schema => Reason::Schema,
            FieldErrorKind::WrongKind => Reason::WrongKind,
            FieldErrorKind::IdMismatch => Reason::IdMismatch,
        },
        detail: e.detail,
    }
}

/// Sets `key` to `new` (or appends the key), keeping the whitespace and comments around an
/// existing value so that only the value's own bytes change (FORMAT §2 "Preservation").
pub fn set_keeping_decor(front: &mut toml_edit::DocumentMut, key: &str, mut new: toml_edit::Value) {
    if let Some(old) = front.get(key).and_then(toml_edit::Item::as_value) {
        *new.decor_mut() = old.decor().clone();
    }
    front[key] = toml_edit::Item::Value(new);
}

/// A listing helper: splits a store error into a warning when it is about the file itself,
/// and passes real I/O failures up.
pub(crate) fn warn_or_fail(
    warnings: &mut Vec<Problem>,
    result: Result<Document, store::Error>,
) -> Result<Option<Document>, Error> {
    match result {
        Ok(doc) => Ok(Some(doc)),
        Err(store::Error::Malformed(p)) => {
            warnings.push(p);
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}
