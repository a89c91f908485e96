//! The folded view of the whole workspace, as every read presents it: tasks with their pending
//! events applied in memory, the journal, and the notes.

use std::collections::BTreeMap;

use crate::model::dod::DodFacts;
use crate::objects::{self, Listing, notes, tasks};
use crate::store::Problem;
use crate::workspace::Workspace;

use super::Journal;
use super::fold::{Folded, fold_all};

/// Everything a read needs, loaded once per call.
pub struct World {
    /// Every task, folded.
    pub tasks: Vec<tasks::Located>,
    /// What folding did, by task id (only tasks with pending events).
    pub folds: BTreeMap<String, Folded>,
    pub journal: Journal,
    pub notes: Vec<notes::Located>,
    /// Files skipped while loading.
    pub warnings: Vec<Problem>,
}

impl World {
    /// Loads and folds. `passes` is the definition-of-done verdict used for finish requests.
    pub fn load(
        ws: &Workspace,
        passes: &dyn Fn(&DodFacts) -> bool,
    ) -> Result<World, objects::Error> {
        let Listing {
            items: mut tasks,
            mut warnings,
        } = tasks::list_all(ws)?;
        let journal = super::read(ws)?;
        let notes = notes::list(ws)?;
        warnings.extend(notes.warnings);
        warnings.extend(journal.warnings.iter().cloned());
        let folds = fold_all(ws, &journal, &notes.items, &mut tasks, passes);
        Ok(World {
            tasks,
            folds,
            journal,
            notes: notes.items,
            warnings,
        })
    }

    /// The folded task with this id.
    pub fn task(&self, id: &str) -> Option<&tasks::Located> {
        tasks::by_id(&self.tasks, id)
    }

    /// Resolves a task reference in any FORMAT §3.3 form.
    /// A reference that only an unreadable task file answers is that file's problem
    /// ([`tasks::ResolveError::Malformed`]), not "not found".
    pub fn resolve(&self, reference: &str) -> Result<&tasks::Located, tasks::ResolveError> {
        match tasks::resolve(&self.tasks, reference) {
            Err(tasks::ResolveError::NotFound { .. } | tasks::ResolveError::NoProject { .. })
                if let Some(p) = tasks::unreadable_match(&self.warnings, reference) =>
            {
                Err(tasks::ResolveError::Malformed(p))
            }
            other => other,
        }
    }

    /// Pending event ids about a task (after folding: those still waiting, plus any the fold
    /// applied or rejected, which a sync would settle).
    pub fn pending_ids(&self, id: &str) -> Vec<String> {
        self.journal
            .pending_about(id)
            .map(|e| e.id.clone())
            .collect()
    }
}

/// The `TaskSummary` shape of COMMANDS.md §1.7: a task reference plus its folded state.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TaskSummary {
    #[serde(flatten)]
    pub task: crate::model::task::TaskRef,
    pub status: crate::model::task::Status,
    pub priority: String,
    pub owner: String,
    pub assignee: Option<String>,
    pub acceptance: Acceptance,
    pub estimate: Option<EstimateView>,
    pub tags: Vec<String>,
    pub pending: usize,
    pub finish_requested: bool,
}

/// Checked and total acceptance criteria.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Acceptance {
    pub checked: usize,
    pub total: usize,
}

/// An estimate as printed: the three points as written (whole values as integers, `2` not
/// `2.0`), and `Te` to two decimals.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EstimateView {
    pub optimistic: serde_json::Number,
    pub probable: serde_json::Number,
    pub pessimistic: serde_json::Number,
    pub expected: f64,
}

impl EstimateView {
    /// The printed form of an estimate.
    pub fn of(e: crate::model::task::Estimate) -> EstimateView {
        EstimateView {
            optimistic: number(e.optimistic),
            probable: number(e.probable),
            pessimistic: number(e.pessimistic),
            expected: round2(e.expected()),
        }
    }
}

/// A JSON number that prints whole values as integers, as they were written.
pub fn number(v: f64) -> serde_json::Number {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        serde_json::Number::from(v as i64)
    } else {
        serde_json::Number::from_f64(v).unwrap_or_else(|| serde_json::Number::from(0))
    }
}

impl World {
    /// The planning view of every task, index for index with `tasks`.
    pub fn plan_tasks(&self) -> Vec<crate::model::task::PlanTask> {
        self.tasks
            .iter()
            .map(|t| crate::model::task::PlanTask {
                id: t.task.id.clone(),
                project: t.project.clone(),
                number: t.task.number,
                status: t.doc.status,
                assignee: t.doc.assignee().map(str::to_string),
                priority: t.doc.priority().to_string(),
                parent: t.doc.parent().map(str::to_string),
                depends_on: t.doc.depends_on(),
                estimate: t.doc.estimate().ok().flatten(),
            })
            .collect()
    }

    /// The summary of a (folded) task.
    pub fn summary(&self, t: &tasks::Located) -> TaskSummary {
        summary_of(
            t,
            self.folds.get(&t.task.id),
            self.journal.pending_about(&t.task.id).count(),
        )
    }
}

/// The summary of a folded task, given what its fold did and how many events are pending
/// about it.
pub fn summary_of(t: &tasks::Located, fold: Option<&Folded>, pending: usize) -> TaskSummary {
    let criteria = t.doc.criteria();
    TaskSummary {
        task: t.task_ref_folded(),
        status: t.doc.status,
        priority: t.doc.priority().to_string(),
        owner: t.doc.owner().to_string(),
        assignee: t.doc.assignee().map(str::to_string),
        acceptance: Acceptance {
            checked: criteria.iter().filter(|c| c.checked).count(),
            total: criteria.len(),
        },
        estimate: t.doc.estimate().ok().flatten().map(EstimateView::of),
        tags: t.doc.tags(),
        pending,
        finish_requested: fold.is_some_and(Folded::finish_requested),
    }
}

/// Rounds to two decimals, as every effort figure is printed.
pub fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
