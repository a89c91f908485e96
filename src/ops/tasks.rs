//! Transactions on task files: the lock of one task with the task and its records re-read
//! under it, the owner's sync before a transition, the write of the new state, events about
//! a task, and the creation of a task.

use std::path::PathBuf;
use std::sync::Arc;

use toml_edit::Item;

use super::error::Kind;
use super::{Decided, Error};
use crate::journal::fold::{Folded, fold_task};
use crate::journal::sync::{Synced, sync_task};
use crate::journal::{self, Journal, NewEvent};
use crate::model::dod::DodFacts;
use crate::model::event::EventHead;
use crate::model::task::{Status, TaskRef};
use crate::model::taskdoc::{Change, Reject, Stamp, TaskDoc};
use crate::objects::index::NoteEntry;
use crate::objects::{self, tasks};
use crate::store::LockGuard;
use crate::workspace::Workspace;

/// How the caller computes the definition-of-done facts of a task in a given state (it reads
/// the evidence the caller's read model knows).
pub type Facts<'a> = &'a dyn Fn(&Journal, &[Arc<NoteEntry>], &tasks::Located, &TaskDoc) -> DodFacts;

/// A task re-read under its lock, with a journal read after the lock was taken. The lock is
/// held until this is dropped.
pub struct Locked {
    _guard: LockGuard,
    pub task: tasks::Located,
    pub journal: Journal,
    /// The notes as the index knows them (what the definition of done asks of notes).
    pub notes: Vec<Arc<NoteEntry>>,
}

impl Locked {
    /// Takes `task-<ULID>.lock` for the task `id` of project `project` (a directory name) and
    /// re-reads the task and the journal.
    pub fn take(ws: &Workspace, project: &str, id: &str) -> Result<Locked, Error> {
        let ulid = id.trim_start_matches("t-");
        let guard = ws.fs.lock(&ws.lock_path(&format!("task-{ulid}")))?;
        let task = tasks::reload(ws, project, id)?;
        let (journal, notes) = records(ws, id)?;
        Ok(Locked {
            _guard: guard,
            task,
            journal,
            notes,
        })
    }

    /// Reads the task's events again (after the caller appended some).
    pub fn reread_events(&mut self, ws: &Workspace) -> Result<(), Error> {
        (self.journal, self.notes) = records(ws, &self.task.task.id)?;
        Ok(())
    }

    /// The folded view of the locked task: its pending events applied in memory; `facts`
    /// judges whether a fold may finish the task.
    pub fn folded(&self, facts: Facts<'_>) -> (TaskDoc, Folded) {
        let mut doc = self.task.doc.clone();
        let pending: Vec<&EventHead> = self.journal.pending_about(&self.task.task.id).collect();
        let folded = fold_task(&mut doc, &pending, &self.journal, &mut |d: &TaskDoc| {
            crate::policy::dod::evaluate(&facts(&self.journal, &self.notes, &self.task, d)).passed
        });
        (doc, folded)
    }

    /// As owner `me`: applies the pending events for real (with a receipt) and re-reads the
    /// task, so the owner's own transition lands on top of everything that came before it.
    /// `mint` gives fresh ULIDs; `facts` judges whether a fold may finish the task.
    pub fn sync_first(
        &mut self,
        ws: &Workspace,
        me: &str,
        mint: &dyn Fn() -> ulid::Ulid,
        facts: Facts<'_>,
    ) -> Result<Synced, Error> {
        let (journal, notes, task) = (&self.journal, &self.notes, &self.task);
        let (_, synced) = sync_task(
            ws,
            journal,
            task,
            me,
            mint,
            &mut |d: &TaskDoc| crate::policy::dod::evaluate(&facts(journal, notes, task, d)).passed,
            &[],
            false,
        )?;
        if synced.receipt.is_some() || !synced.applied.is_empty() {
            self.task = tasks::reload(ws, &self.task.project, &self.task.task.id)?;
            self.reread_events(ws)?;
        }
        Ok(synced)
    }

    /// Writes `doc` over the locked task with the new `rev`; returns the new path.
    pub fn write(
        &self,
        ws: &Workspace,
        mut doc: TaskDoc,
        rev: ulid::Ulid,
    ) -> Result<PathBuf, Error> {
        doc.front["rev"] = toml_edit::value(rev.to_string());
        Ok(tasks::write(ws, &self.task, &doc)?)
    }
}

/// The events and notes a fold of task `id` and its definition of done look at: read through
/// the index, only the task's own events in full (not the whole log).
fn records(ws: &Workspace, id: &str) -> Result<(Journal, Vec<Arc<NoteEntry>>), Error> {
    let events = journal::index::read(ws)?;
    let journal = journal::snapshot::task_journal(ws, &events, id)?;
    let slugs: Vec<String> = objects::projects::list(ws)?
        .items
        .into_iter()
        .map(|p| p.slug)
        .collect();
    let notes = objects::index::notes(ws, &slugs)?.items;
    Ok((journal, notes))
}

/// Appends event `id` of `kind` by `me` about `about`.
pub fn append_event(
    ws: &Workspace,
    id: ulid::Ulid,
    me: &str,
    kind: &str,
    about: &str,
    fields: Vec<(&str, Item)>,
    body: String,
) -> Result<EventHead, Error> {
    Ok(journal::append(
        ws,
        NewEvent {
            id,
            kind,
            created_by: me,
            about: Some(about),
            fields,
            body,
        },
    )?)
}

/// A new task's file, written and flushed before its number is known.
pub type Staged = tasks::NewTask;

/// Writes and flushes the file of a new task (`doc`) before its number is known.
pub fn stage(ws: &Workspace, doc: &TaskDoc) -> Result<Staged, Error> {
    Ok(tasks::stage(ws, doc)?)
}

/// Project `project`'s sequence lock: take it before reading the listing a new task's number
/// comes from ([`number_after`]), and hold it until [`create`] returns.
pub type Numbering = tasks::Numbering;

/// Takes project `project`'s sequence lock ([`Numbering`]).
pub fn numbering(ws: &Workspace, project: &str) -> Result<Numbering, Error> {
    Ok(tasks::numbering(ws, project)?)
}

pub use tasks::number_after;

/// Places the staged task in its status folder of the project `numbering` locks, with display
/// number `number` (read under that lock); returns the task as created.
pub fn create(
    ws: &Workspace,
    numbering: &Numbering,
    title_slug: &str,
    staged: Staged,
    number: u32,
) -> Result<tasks::Located, Error> {
    Ok(tasks::create(ws, numbering, title_slug, staged, number)?)
}

/// Syncs the pending events about task `id` that `me` may settle (each object under its own
/// lock, re-read after locking): what answers a request once its task changed.
pub fn sync_about(
    ws: &Workspace,
    me: &str,
    mint: &dyn Fn() -> ulid::Ulid,
    id: &str,
) -> Result<Vec<Synced>, Error> {
    let (synced, _) = crate::journal::sync::sync_all(
        ws,
        me,
        mint,
        &|f| crate::policy::dod::evaluate(f).passed,
        &crate::journal::sync::Scope {
            about: Some(id.to_string()),
            decline: Vec::new(),
            dry_run: false,
        },
    )?;
    Ok(synced)
}

/// Records a finished run of a shortcut (or an ad-hoc command) as event `id` by `by`.
pub fn record_run(
    ws: &Workspace,
    id: ulid::Ulid,
    by: &str,
    run: &crate::journal::runs::Run<'_>,
) -> Result<EventHead, Error> {
    Ok(crate::journal::runs::append_run(ws, id, by, run)?)
}

/// Who acts in a transaction, and when.
pub struct Actor<'a> {
    /// The acting agent's id.
    pub me: &'a str,
    /// The formatted time for Log lines.
    pub at: &'a str,
    /// Fresh ULIDs (events, `rev`s, receipts).
    pub mint: &'a dyn Fn() -> ulid::Ulid,
}

/// The result of a dual command (COMMANDS.md §1.4): the owner mutates, anyone else appends.
#[derive(Debug, serde::Serialize)]
pub struct DualResult {
    pub task: TaskRef,
    pub status: Status,
    pub assignee: Option<String>,
    pub effect: &'static str,
    pub event: Option<String>,
}

/// What a dual command does once the task is locked and folded.
pub struct Dual<'a> {
    /// The event kind for the non-owner path.
    pub kind: &'a str,
    pub fields: Vec<(&'a str, Item)>,
    pub body: String,
}

/// A dual command's look at the folded view under the lock: `Some(Err)` refuses,
/// `Some(Ok(()))` means already so (unchanged), `None` proceeds.
pub type Precheck<'a> =
    dyn Fn(&TaskDoc, &tasks::Located) -> Option<Result<(), crate::model::Refusal>> + 'a;

/// A dual command's transition, applied to the owner's file or, for anyone else, in memory
/// to report the folded result.
pub type Transition<'a> = dyn Fn(&mut TaskDoc, Stamp<'_>) -> Result<Change, Reject> + 'a;

/// Runs a dual command on task `id` of `project` under its lock. `precheck` sees the folded
/// view and may refuse or declare the request a no-op. When `owner_path` holds and `by` acts
/// as the owner, pending events are synced first and `apply` is written to the file;
/// otherwise the request is appended as a `spec.kind` event and `apply` only shapes the
/// folded result reported.
#[allow(
    clippy::too_many_arguments,
    reason = "each argument is one part of the transaction the caller decides"
)]
pub fn dual(
    ws: &Workspace,
    by: &Actor<'_>,
    (project, id): (&str, &str),
    owner_path: bool,
    spec: Dual<'_>,
    facts: Facts<'_>,
    precheck: &Precheck<'_>,
    apply: &Transition<'_>,
) -> Result<Decided<DualResult>, Error> {
    let mut locked = Locked::take(ws, project, id)?;
    let (view, _) = locked.folded(facts);
    let task_ref = locked.task.task_ref_folded();
    match precheck(&view, &locked.task) {
        Some(Err(refusal)) => return Ok(Decided::Refused(refusal)),
        Some(Ok(())) => {
            return Ok(Decided::Done(DualResult {
                task: task_ref,
                status: view.status,
                assignee: view.assignee().map(str::to_string),
                effect: "unchanged",
                event: None,
            }));
        }
        None => {}
    }
    if owner_path && objects::agents::acts_as_owner(ws, by.me, view.owner())? {
        locked.sync_first(ws, by.me, by.mint, facts)?;
        let mut doc = locked.task.doc.clone();
        let own = Stamp {
            at: by.at,
            by: by.me,
            event: None,
        };
        let change = apply(&mut doc, own).map_err(|r| {
            Error::rejected(
                Kind::Conflict,
                "E_CONFLICT",
                format!("{} cannot apply: {}", task_ref.reference, r.as_str()),
            )
        })?;
        let (status, assignee) = (doc.status, doc.assignee().map(str::to_string));
        if change == Change::Applied {
            locked.write(ws, doc, (by.mint)())?;
        }
        return Ok(Decided::Done(DualResult {
            task: task_ref,
            status,
            assignee,
            effect: if change == Change::Applied {
                "applied"
            } else {
                "unchanged"
            },
            event: None,
        }));
    }
    let ev = append_event(
        ws,
        (by.mint)(),
        by.me,
        spec.kind,
        &locked.task.task.id,
        spec.fields,
        spec.body,
    )?;
    let mut after = view.clone();
    let _ = apply(
        &mut after,
        Stamp {
            at: by.at,
            by: by.me,
            event: Some(&ev.id),
        },
    );
    Ok(Decided::Done(DualResult {
        task: task_ref,
        status: after.status,
        assignee: after.assignee().map(str::to_string),
        effect: "proposed",
        event: Some(ev.envelope.id),
    }))
}
