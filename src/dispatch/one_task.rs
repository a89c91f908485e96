//! One task read in full and folded with its own events, beside every other task as the
//! index knows it: what a command about one task needs, without parsing the workspace
//! (docs/PERFORMANCE.md, "Per-task commands"). Shared by the slices that act on one task.

use std::sync::Arc;

use crate::journal::fold::{Folded, dod_facts_with, fold_task};
use crate::journal::snapshot::Snapshot;
use crate::journal::{self, Journal};
use crate::model::dod::DodFacts;
use crate::model::event::EventHead;
use crate::model::taskdoc::TaskDoc;
use crate::objects::{self, tasks};
use crate::workspace::Workspace;

use super::{Ctx, Error};

/// Resolves a task reference (any FORMAT §3.3 form) to its project directory and id through
/// the index, parsing no task: what a command that then locks and re-reads the one task needs.
/// It answers as [`World::resolve`] does, an unreadable file included, and reports the
/// listing's skipped files.
pub fn locate(ctx: &Ctx, reference: &str) -> Result<(String, String), Error> {
    let ws = ctx.ws()?;
    let listing = objects::projects::list(ws)?;
    let mut warnings = listing.warnings;
    let slugs: Vec<String> = listing.items.iter().map(|p| p.slug.clone()).collect();
    let (found, listed) = objects::lookup::resolve(ws, &slugs, reference)?;
    warnings.extend(listed);
    ctx.warn_all(warnings.clone());
    match found {
        Ok(t) => Ok((t.project().to_string(), t.id().to_string())),
        Err(tasks::ResolveError::NotFound { .. } | tasks::ResolveError::NoProject { .. })
            if let Some(p) = tasks::unreadable_match(&warnings, reference) =>
        {
            Err(crate::store::Error::Malformed(p).into())
        }
        Err(e) => Err(e.into()),
    }
}

/// One task read in full and folded with its own events, beside every other task as the
/// index knows it: what a read about one task needs, without parsing the workspace.
pub struct OneTask {
    /// Every task as index entries (folded where pending events change them), the event
    /// listing and the notes.
    pub snap: Snapshot,
    /// The task, folded.
    pub task: tasks::Located,
    /// What folding its pending events did.
    pub fold: Folded,
    /// Its events ([`journal::snapshot::task_journal`]).
    pub journal: Journal,
}

impl OneTask {
    /// Resolves `reference` (any FORMAT §3.3 form, answering as [`World::resolve`] does) and
    /// folds that task; reports skipped files. A task moved by a writer between the listing
    /// and its read is looked up again.
    pub fn load(ctx: &Ctx, reference: &str) -> Result<OneTask, Error> {
        const ATTEMPTS: usize = 5;
        let ws = ctx.ws()?;
        let passes = |f: &DodFacts| crate::policy::dod::evaluate(f).passed;
        let mut attempt = 1;
        loop {
            let mut snap = Snapshot::load(ws, &passes)?;
            // The definition-of-done facts of this task look at its notes.
            snap.load_notes(ws)?;
            let entry = Arc::clone(snap.resolve_reported(reference)?);
            let file = ws.dir().join(entry.file());
            let mut task = match tasks::read_one(ws, entry.project(), entry.folder(), file) {
                Err(e) if e.is_vanished() && attempt < ATTEMPTS => {
                    attempt += 1;
                    continue;
                }
                other => other?,
            };
            ctx.warn_all(snap.warnings.clone());
            if let Some(detail) = snap.resolve_notice(reference) {
                ctx.warn_all(vec![crate::store::Problem {
                    path: ws.display(&ws.dir().join(entry.file())),
                    reason: crate::store::Reason::Renumbered,
                    detail,
                }]);
            }
            let journal = journal::snapshot::task_journal(ws, &snap.events, entry.id())?;
            ctx.warn_all(journal.warnings.clone());
            let pending: Vec<&EventHead> = journal.pending_about(entry.id()).collect();
            let before = task.clone();
            let mut doc = task.doc.clone();
            let fold = fold_task(&mut doc, &pending, &journal, &mut |d: &TaskDoc| {
                passes(&facts_of(ws, &journal, &snap.notes, &before, d))
            });
            task.doc = doc;
            return Ok(OneTask {
                snap,
                task,
                fold,
                journal,
            });
        }
    }

    /// The definition-of-done facts of the folded task.
    pub fn facts(&self, ws: &Workspace) -> DodFacts {
        facts_of(
            ws,
            &self.journal,
            &self.snap.notes,
            &self.task,
            &self.task.doc,
        )
    }
}

/// The definition-of-done facts of `task` in the state `doc`, notes known from the index.
pub fn facts_of(
    ws: &Workspace,
    journal: &Journal,
    notes: &[std::sync::Arc<objects::index::NoteEntry>],
    task: &tasks::Located,
    doc: &TaskDoc,
) -> DodFacts {
    let has_note = |about: &str, kind: &str| {
        notes
            .iter()
            .any(|n| n.about() == Some(about) && (kind == "any" || n.kind() == kind))
    };
    dod_facts_with(ws, journal, &has_note, task, doc)
}
