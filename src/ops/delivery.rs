//! `delivery reconcile`'s writes: the events a repair appends (once: a resumed repair finds
//! the one it wrote) and the sync that settles a task the repair closed.

use toml_edit::value;
use ulid::Ulid;

use super::Error;
use crate::journal::sync::{Scope, sync_all};
use crate::journal::{self, NewEvent};
use crate::workspace::Workspace;

/// Appends an event by `me` about `about` unless one with the same kind, fields and body
/// already exists; returns its id.
pub fn event_once(
    ws: &Workspace,
    me: &str,
    about: &str,
    kind: &str,
    fields: Vec<(&str, &str)>,
    body: String,
    fresh: &dyn Fn() -> Ulid,
) -> Result<String, Error> {
    let journal = journal::read(ws)?;
    let existing = journal.events.iter().find(|e| {
        e.kind == kind
            && e.created_by == me
            && e.about.as_deref() == Some(about)
            && fields.iter().all(|(k, v)| e.field_str(k) == Some(*v))
            && e.body == body
    });
    if let Some(e) = existing {
        return Ok(e.id.clone());
    }
    let ev = journal::append(
        ws,
        NewEvent {
            id: fresh(),
            kind,
            created_by: me,
            about: Some(about),
            fields: fields.into_iter().map(|(k, v)| (k, value(v))).collect(),
            body,
        },
    )?;
    Ok(ev.envelope.id)
}

/// Syncs task `task` as `me`: its pending events apply (a `finish` moves it to done only
/// when its definition of done passes).
pub fn settle(ws: &Workspace, me: &str, task: &str, fresh: &dyn Fn() -> Ulid) -> Result<(), Error> {
    sync_all(
        ws,
        me,
        fresh,
        &|f| crate::policy::dod::evaluate(f).passed,
        &Scope {
            about: Some(task.to_string()),
            decline: Vec::new(),
            dry_run: false,
        },
    )?;
    Ok(())
}
