//! Questions, answers and sync: the events they append and the owner's own application of
//! them to its objects.

use toml_edit::{Item, value};
use ulid::Ulid;

use super::Error;
use crate::journal::sync::{Mint, Scope, Synced, sync_all};
use crate::journal::{self, NewEvent};
use crate::model::event::EventHead;
use crate::model::format_time;
use crate::model::id::ROOT_AGENT;
use crate::model::taskdoc::Stamp;
use crate::objects::{self, tasks};
use crate::workspace::Workspace;

/// A question to record.
pub struct Question<'a> {
    pub id: Ulid,
    /// A task id, `p-<slug>` or `workspace`.
    pub about: &'a str,
    pub fields: Vec<(&'a str, Item)>,
    pub body: String,
    /// The task (project, id) the caller owns and the question blocks: the owner's own
    /// blocking question moves it at once.
    pub blocks_own_task: Option<(&'a str, &'a str)>,
    /// The task file's new `rev`, if it is rewritten.
    pub rev: Ulid,
}

/// Appends the `help` event of a question; when it blocks a task the caller owns, blocks
/// the task under its lock (its Log line carries the event id, so no later fold applies it
/// twice). Returns the event and whether the task was written.
pub fn ask(ws: &Workspace, me: &str, q: Question<'_>) -> Result<(EventHead, bool), Error> {
    let ev = journal::append(
        ws,
        NewEvent {
            id: q.id,
            kind: "help",
            created_by: me,
            about: Some(q.about),
            fields: q.fields,
            body: q.body,
        },
    )?;
    let mut applied = false;
    if let Some((project, task_id)) = q.blocks_own_task {
        let ulid = task_id.trim_start_matches("t-");
        let _lock = ws.fs.lock(&ws.lock_path(&format!("task-{ulid}")))?;
        let fresh = tasks::reload(ws, project, task_id)?;
        let mut doc = fresh.doc.clone();
        let at = format_time(ev.created);
        if doc
            .question(
                &ev.id,
                true,
                Stamp {
                    at: &at,
                    by: me,
                    event: Some(&ev.id),
                },
            )
            .is_ok()
        {
            doc.front["rev"] = value(q.rev.to_string());
            tasks::write(ws, &fresh, &doc)?;
            applied = true;
        }
    }
    Ok((ev, applied))
}

/// An answer to record.
pub struct Answer<'a> {
    pub id: Ulid,
    /// What the question is about: a task id, `p-<slug>` or `workspace`.
    pub about: &'a str,
    pub fields: Vec<(&'a str, Item)>,
    pub body: String,
    /// The owner of the task the question is about, when it is about a task.
    pub task_owner: Option<&'a str>,
}

/// Appends the `answer` event; when the caller owns the question's object (root owns the
/// workspace), applies it at once with a sync of that object. Returns the event and whether
/// it was applied.
pub fn answer(
    ws: &Workspace,
    me: &str,
    a: Answer<'_>,
    mint: Mint<'_>,
) -> Result<(EventHead, bool), Error> {
    let ev = journal::append(
        ws,
        NewEvent {
            id: a.id,
            kind: "answer",
            created_by: me,
            about: Some(a.about),
            fields: a.fields,
            body: a.body,
        },
    )?;
    let owner = match a.task_owner {
        Some(o) => Some(o.to_string()),
        None if a.about == "workspace" => Some(ROOT_AGENT.to_string()),
        None => objects::projects::list(ws)?
            .items
            .into_iter()
            .find(|p| format!("p-{}", p.slug) == a.about)
            .map(|p| p.owner),
    };
    if owner.as_deref() != Some(me) {
        return Ok((ev, false));
    }
    sync(
        ws,
        me,
        mint,
        &Scope {
            about: Some(a.about.to_string()),
            decline: Vec::new(),
            dry_run: false,
        },
    )?;
    Ok((ev, true))
}

/// The owner applies pending events to the objects in `scope`, materialises notes and
/// writes receipts; the definition of done is policy's. Returns each object's result and
/// how many pending events belong to objects `me` does not own.
pub fn sync(
    ws: &Workspace,
    me: &str,
    mint: Mint<'_>,
    scope: &Scope,
) -> Result<(Vec<Synced>, usize), Error> {
    Ok(sync_all(
        ws,
        me,
        mint,
        &|f| crate::policy::dod::evaluate(f).passed,
        scope,
    )?)
}
