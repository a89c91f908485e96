//! Roles (docs/FORMAT.md §7): reading, creating, rewriting and removing role files, and the
//! default toolkit (every read shortcut).

use std::path::PathBuf;

use crate::model::role::{Role, shortcut_effect};
use crate::store::Document;
use crate::workspace::Workspace;
use crate::workspace::names::check_slug;

use super::{Error, Listing, field_problem, read_document, warn_or_fail};

/// The file of role `name` (which must be a slug).
pub fn file(ws: &Workspace, name: &str) -> PathBuf {
    ws.path(&["roles", &format!("{name}.md")])
}

/// The name of the object lock of role `name` (FORMAT §4.3), for `ws.lock_path`.
pub fn lock_name(name: &str) -> String {
    format!("role-{name}")
}

/// Loads role `name` with its document, for a rewrite that keeps unknown keys (re-read it
/// under the role lock).
pub fn load_with_doc(ws: &Workspace, name: &str) -> Result<(Role, Document), Error> {
    let not_found = || Error::NotFound {
        what: "role",
        id: name.to_string(),
    };
    check_slug(name).map_err(|_| not_found())?;
    let path = file(ws, name);
    if std::fs::symlink_metadata(&path).is_err() {
        return Err(not_found());
    }
    let doc = read_document(ws, &path)?;
    let role = Role::from_front(&doc.front, name)
        .map_err(|e| Error::malformed(field_problem(ws, &path, e)))?;
    Ok((role, doc))
}

/// Creates role file `name` with create-new (a taken name is `Exists`). Returns the path.
pub fn create(ws: &Workspace, name: &str, doc: &Document) -> Result<PathBuf, Error> {
    let path = file(ws, name);
    ws.fs.create_new(&path, doc.render().as_bytes())?;
    Ok(path)
}

/// Rewrites role file `name` by atomic replace (the caller holds the role lock and has set a
/// fresh `rev`). Returns the path.
pub fn write(ws: &Workspace, name: &str, doc: &Document) -> Result<PathBuf, Error> {
    let path = file(ws, name);
    ws.fs.replace(&path, doc.render().as_bytes())?;
    Ok(path)
}

/// Deletes role file `name` (the caller holds the role lock).
pub fn remove(ws: &Workspace, name: &str) -> Result<(), Error> {
    Ok(ws.fs.remove(&file(ws, name))?)
}

/// Loads role `name`.
pub fn load(ws: &Workspace, name: &str) -> Result<Role, Error> {
    let not_found = || Error::NotFound {
        what: "role",
        id: name.to_string(),
    };
    check_slug(name).map_err(|_| not_found())?;
    let path = ws.path(&["roles", &format!("{name}.md")]);
    if !path.exists() {
        return Err(not_found());
    }
    let doc = read_document(ws, &path)?;
    Role::from_front(&doc.front, name).map_err(|e| Error::malformed(field_problem(ws, &path, e)))
}

/// Names of shortcuts whose `effect` is `read` (the default toolkit), sorted.
pub fn read_shortcuts(ws: &Workspace) -> Result<Listing<String>, Error> {
    let mut out = Listing::default();
    for (name, path) in ws.fs.list_dir(&ws.path(&["shortcuts"]))? {
        let Some(stem) = name.strip_suffix(".md") else {
            continue;
        };
        if check_slug(stem).is_err() {
            continue;
        }
        let Some(doc) = warn_or_fail(&mut out.warnings, read_document(ws, &path))? else {
            continue;
        };
        if shortcut_effect(&doc.front) == Some("read") {
            out.items.push(stem.to_string());
        }
    }
    Ok(out)
}

/// Every role, sorted by name; unreadable role files are skipped and reported.
pub fn list(ws: &Workspace) -> Result<Listing<Role>, Error> {
    let mut out = Listing::default();
    for (name, path) in ws.fs.list_dir(&ws.path(&["roles"]))? {
        let Some(stem) = name.strip_suffix(".md") else {
            continue;
        };
        if check_slug(stem).is_err() {
            continue;
        }
        let Some(doc) = warn_or_fail(&mut out.warnings, read_document(ws, &path))? else {
            continue;
        };
        match Role::from_front(&doc.front, stem) {
            Ok(r) => out.items.push(r),
            Err(e) => out.warnings.push(field_problem(ws, &path, e)),
        }
    }
    Ok(out)
}
