//! Roles and the shortcut catalogue, as far as identity needs them.

use crate::model::role::{Role, shortcut_effect};
use crate::workspace::Workspace;
use crate::workspace::names::check_slug;

use super::{Error, Listing, field_problem, read_document, warn_or_fail};

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
