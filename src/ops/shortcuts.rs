//! Shortcuts' transactions: create and remove under the shortcut's lock.

use std::path::PathBuf;

use super::{Decided, Error};
use crate::model::Refusal;
use crate::objects::{agents, roles, shortcuts};
use crate::store::{Document, Problem};
use crate::workspace::Workspace;

/// Creates shortcut `name` from `doc` (built and checked by the caller) under its lock;
/// returns the file written.
pub fn create(ws: &Workspace, name: &str, doc: &Document) -> Result<PathBuf, Error> {
    let _lock = ws.fs.lock(&ws.lock_path(&shortcuts::lock_name(name)))?;
    Ok(shortcuts::create(ws, name, doc)?)
}

/// Removes shortcut `name` under its lock, if `me` acts as its owner and neither a role's
/// toolkit nor the definition of done names it. Skipped role files go to `warnings`.
pub fn remove(
    ws: &Workspace,
    me: &str,
    name: &str,
    warnings: &mut Vec<Problem>,
) -> Result<Decided<()>, Error> {
    let _lock = ws.fs.lock(&ws.lock_path(&shortcuts::lock_name(name)))?;
    let located = shortcuts::load(ws, name)?;
    let owner = &located.shortcut.owner;
    if !agents::acts_as_owner(ws, me, owner)? {
        return Ok(Decided::Refused(Refusal::new(
            "shortcut.not_owner",
            format!("shortcut {name} belongs to {owner}"),
            format!("Ask {owner} to remove shortcut {name}."),
        )));
    }
    let listing = roles::list(ws)?;
    warnings.extend(listing.warnings);
    let in_toolkits: Vec<String> = listing
        .items
        .iter()
        .filter(|r| r.shortcuts.iter().any(|s| s == name))
        .map(|r| r.name.clone())
        .collect();
    let is_test = ws
        .config
        .doc
        .get("definition_of_done")
        .and_then(|d| d.get("test_shortcut"))
        .and_then(|v| v.as_str())
        == Some(name);
    if !in_toolkits.is_empty() || is_test {
        let mut users = Vec::new();
        let mut steps = Vec::new();
        if !in_toolkits.is_empty() {
            users.push(format!("the toolkit of roles {}", in_toolkits.join(", ")));
            steps.push(format!(
                "remove it from `shortcuts` of {} (`dacli role edit <role> --shortcut …`)",
                in_toolkits.join(", ")
            ));
        }
        if is_test {
            users.push("`definition_of_done.test_shortcut`".to_string());
            steps
                .push("from `definition_of_done.test_shortcut` in config.toml (ask a-root)".into());
        }
        let mut next = steps.join(", and ");
        if let Some(first) = next.get(..1) {
            next = format!("{}{}", first.to_uppercase(), &next[1..]);
        }
        return Ok(Decided::Refused(Refusal::new(
            "shortcut.in_use",
            format!("shortcut {name} is named by {}", users.join(" and ")),
            format!("{next} first."),
        )));
    }
    shortcuts::remove(ws, name)?;
    Ok(Decided::Done(()))
}

/// Appends the `run` event of a finished run (failed runs included).
pub fn record_run(
    ws: &Workspace,
    id: ulid::Ulid,
    by: &str,
    run: &crate::journal::runs::Run<'_>,
) -> Result<crate::model::event::EventHead, Error> {
    Ok(crate::journal::runs::append_run(ws, id, by, run)?)
}
