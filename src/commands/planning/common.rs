//! What the planning commands share: resolving references through the index, the locked task
//! of [`ops::tasks`] with its facts and folded view, acting as owner (sync first, then the
//! transition, one write), and appending events.

use std::collections::BTreeSet;

use toml_edit::Item;

use crate::dispatch::one_task::{facts_of, locate};
use crate::dispatch::{Ctx, Error};
use crate::journal::Journal;
use crate::journal::fold::Folded;
use crate::journal::snapshot::Snapshot;
use crate::journal::sync::Synced;
use crate::model::agent::AgentStatus;
use crate::model::dod::DodFacts;
use crate::model::event::EventHead;
use crate::model::format_time;
use crate::model::id::ROOT_AGENT;
use crate::model::taskdoc::{Stamp, TaskDoc};
use crate::objects::{self, tasks};
use crate::ops;
use crate::workspace::Workspace;

/// The formatted "now" for Log lines.
pub(super) fn now_text(ctx: &Ctx) -> String {
    format_time(ctx.now())
}

/// Whether the caller rewrites this object as its owner: it is the owner, or it is root and
/// the owner is retired or missing (root acts for them, FORMAT §13.1).
pub(super) fn acts_as_owner(ctx: &Ctx, owner: &str) -> Result<bool, Error> {
    let me = &ctx.identity()?.agent.id;
    if me == owner {
        return Ok(true);
    }
    if me != ROOT_AGENT {
        return Ok(false);
    }
    let ws = ctx.ws()?;
    Ok(match objects::agents::load(ws, owner) {
        Ok(a) => a.status == AgentStatus::Retired,
        Err(objects::Error::NotFound { .. }) => true,
        Err(e) => return Err(e.into()),
    })
}

/// A task re-read under its lock ([`ops::tasks::Locked`]), with what the planning commands
/// read of it through the call's context.
pub(super) struct Locked(ops::tasks::Locked);

impl std::ops::Deref for Locked {
    type Target = ops::tasks::Locked;
    fn deref(&self) -> &ops::tasks::Locked {
        &self.0
    }
}

impl Locked {
    /// Takes `task-<ULID>.lock` and re-reads the task and the journal.
    pub(super) fn take(ctx: &Ctx, t: &tasks::Located) -> Result<Locked, Error> {
        Locked::take_id(ctx, &t.project, &t.task.id)
    }

    /// [`Locked::take`] for the task `id` of project `project` (a directory name).
    pub(super) fn take_id(ctx: &Ctx, project: &str, id: &str) -> Result<Locked, Error> {
        Ok(Locked(ops::tasks::Locked::take(ctx.ws()?, project, id)?))
    }

    /// Reads the task's events again (after the caller appended some).
    pub(super) fn reread_events(&mut self, ws: &Workspace) -> Result<(), Error> {
        Ok(self.0.reread_events(ws)?)
    }

    /// The definition-of-done facts of the locked task in the state `doc`.
    pub(super) fn facts(&self, ws: &Workspace, doc: &TaskDoc) -> DodFacts {
        facts_of(ws, &self.journal, &self.notes, &self.task, doc)
    }

    /// The folded view of the locked task.
    pub(super) fn folded(&self, ws: &Workspace) -> (TaskDoc, Folded) {
        self.0
            .folded(&|journal, notes, task, d| facts_of(ws, journal, notes, task, d))
    }

    /// As owner: applies the pending events for real (with a receipt) and re-reads the task,
    /// so the owner's own transition lands on top of everything that came before it.
    pub(super) fn sync_first(&mut self, ctx: &Ctx) -> Result<Synced, Error> {
        let ws = ctx.ws()?;
        let me = ctx.identity()?.agent.id.clone();
        let mint = || ctx.new_ulid();
        let facts = |journal: &Journal,
                     notes: &[std::sync::Arc<objects::index::NoteEntry>],
                     task: &tasks::Located,
                     d: &TaskDoc| facts_of(ws, journal, notes, task, d);
        Ok(self.0.sync_first(ws, &me, &mint, &facts)?)
    }

    /// Writes `doc` over the locked task with a fresh `rev`; returns the new path.
    pub(super) fn write(&self, ctx: &Ctx, doc: TaskDoc) -> Result<String, Error> {
        let ws = ctx.ws()?;
        let path = self.0.write(ws, doc, ctx.new_ulid())?;
        Ok(ws.display(&path))
    }
}

/// A stamp for the caller's own direct act (no event).
pub(super) fn own_stamp<'a>(at: &'a str, me: &'a str) -> Stamp<'a> {
    Stamp {
        at,
        by: me,
        event: None,
    }
}

/// Appends an event by the caller about `about`.
pub(super) fn append_event(
    ctx: &Ctx,
    kind: &str,
    about: &str,
    fields: Vec<(&str, Item)>,
    body: String,
) -> Result<EventHead, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    Ok(ops::tasks::append_event(
        ws,
        ctx.new_ulid(),
        &me,
        kind,
        about,
        fields,
        body,
    )?)
}

/// Resolves a project given as slug or `p-<slug>` among the existing ones.
pub(super) fn project_slug(ws: &Workspace, input: &str) -> Result<String, Error> {
    let slug = input.strip_prefix("p-").unwrap_or(input);
    crate::workspace::names::check_slug(slug).map_err(Error::bad_slug)?;
    let listing = objects::projects::list(ws)?;
    // A project whose file is unreadable is that file's problem, not "no project" (FORMAT §4.4).
    let dir = ws.display(&ws.path(&["projects", slug]));
    let unreadable = listing
        .warnings
        .iter()
        .find(|w| w.path == dir || w.path == format!("{dir}/project.md"));
    if listing.items.iter().any(|p| p.slug == slug) {
        Ok(slug.to_string())
    } else if let Some(problem) = unreadable {
        Err(crate::store::Error::Malformed(problem.clone()).into())
    } else {
        Err(
            Error::not_found(format!("no project `{slug}` in this workspace"))
                .hint("list projects with `dacli project list --status all`"),
        )
    }
}

/// Ids of every task that (transitively) has `id` as parent or dependency target, used for
/// cycle checks: adding an edge `from -> to` closes a cycle when `from` is reachable from `to`.
pub(super) fn reaches(snap: &Snapshot, from: &str, target: &str) -> Option<Vec<String>> {
    // Depth-first over parent and dependency edges from `from`, looking for `target`.
    let mut stack = vec![(from.to_string(), vec![from.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((id, path)) = stack.pop() {
        if id == target {
            return Some(path);
        }
        if !seen.insert(id.clone()) {
            continue;
        }
        let Some(t) = snap.task(&id) else { continue };
        // Folded edges where pending events change the task, else the index's.
        let next: Vec<String> = match snap.doc(&id) {
            Some(doc) => doc
                .depends_on()
                .into_iter()
                .map(|d| d.on)
                .chain(doc.parent().map(str::to_string))
                .collect(),
            None => t
                .depends_on()
                .iter()
                .map(|(on, _)| on.to_string())
                .chain(t.parent().map(str::to_string))
                .collect(),
        };
        for n in next {
            let mut p = path.clone();
            p.push(n.clone());
            stack.push((n, p));
        }
    }
    None
}

/// The refusal text for a cycle `a → … → a`, with task references.
pub(super) fn cycle_text(snap: &Snapshot, path: &[String]) -> String {
    path.iter()
        .map(|id| snap.task(id).map_or(id.clone(), |t| t.reference()))
        .collect::<Vec<_>>()
        .join(" → ")
}

pub(super) use crate::ops::tasks::{Dual, DualResult};

/// Runs a dual command ([`ops::tasks::dual`]) on the task `reference` names, as the caller.
/// `precheck` sees the folded view under the lock and may refuse or declare the request a
/// no-op; `apply` performs the transition, on the owner's file or, for others, in memory to
/// report the folded result.
pub(super) fn run_dual(
    ctx: &Ctx,
    reference: &str,
    owner_path: bool,
    spec: Dual<'_>,
    precheck: &ops::tasks::Precheck<'_>,
    apply: &ops::tasks::Transition<'_>,
) -> Result<crate::dispatch::Outcome<DualResult>, Error> {
    use crate::dispatch::Outcome;
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    let (project, id) = locate(ctx, reference)?;
    let at = now_text(ctx);
    let mint = || ctx.new_ulid();
    let by = ops::tasks::Actor {
        me: &me,
        at: &at,
        mint: &mint,
    };
    let facts = |journal: &Journal,
                 notes: &[std::sync::Arc<objects::index::NoteEntry>],
                 task: &tasks::Located,
                 d: &TaskDoc| facts_of(ws, journal, notes, task, d);
    Ok(
        match ops::tasks::dual(
            ws,
            &by,
            (&project, &id),
            owner_path,
            spec,
            &facts,
            precheck,
            apply,
        )? {
            ops::Decided::Done(done) => Outcome::Done(done),
            ops::Decided::Refused(refusal) => Outcome::Refused(refusal),
        },
    )
}
