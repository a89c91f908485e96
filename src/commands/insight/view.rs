//! The folded view every insight command reads (FORMAT §14.3 "Fold"): every task with its
//! pending events applied in memory, and the shapes the commands share (`TaskSummary`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::dispatch::{Ctx, Error};
use crate::journal::fold::{Folded, fold_all};
use crate::journal::{self, Journal};
use crate::model::task::{Estimate, TaskRef};
use crate::objects::tasks::Located;
use crate::objects::{notes, projects, tasks};
use crate::policy::plan::{PlanTask, round2};
use crate::workspace::names::check_slug;

/// Every task of the workspace, folded, with what each fold did and the journal it read.
pub(super) struct View {
    /// Projects by slug, then tasks by number. State is in `doc`; `task` holds identity.
    pub tasks: Vec<Located>,
    pub folded: BTreeMap<String, Folded>,
    pub journal: Journal,
}

impl View {
    /// Reads tasks, events and notes and folds the pending events into every task. Skipped
    /// files become the envelope's warnings.
    pub fn load(ctx: &Ctx) -> Result<View, Error> {
        let ws = ctx.ws()?;
        let mut listing = tasks::list_all(ws)?;
        let journal = journal::read(ws)?;
        let notes = notes::list(ws)?;
        let folded = fold_all(ws, &journal, &notes.items, &mut listing.items, &|f| {
            crate::policy::dod::evaluate(f).passed
        });
        ctx.warn_all(listing.warnings);
        ctx.warn_all(journal.warnings.iter().cloned());
        ctx.warn_all(notes.warnings);
        Ok(View {
            tasks: listing.items,
            folded,
            journal,
        })
    }

    /// The `TaskSummary` of one task of this view.
    pub fn summary(&self, t: &Located) -> TaskSummary {
        let criteria = t.doc.criteria();
        TaskSummary {
            task: t.task_ref(),
            status: t.doc.status.as_str(),
            priority: t.doc.priority().to_string(),
            owner: t.doc.owner().to_string(),
            assignee: t.doc.assignee().map(str::to_string),
            acceptance: Acceptance {
                checked: criteria.iter().filter(|c| c.checked).count(),
                total: criteria.len(),
            },
            estimate: estimate_of(t).map(EstimateView::of),
            tags: t.doc.tags(),
            pending: self.journal.pending_about(&t.task.id).count(),
            finish_requested: self
                .folded
                .get(&t.task.id)
                .is_some_and(Folded::finish_requested),
        }
    }

    /// The planning view of every task, index for index with `tasks`.
    pub fn plan_tasks(&self) -> Vec<PlanTask> {
        self.tasks
            .iter()
            .map(|t| PlanTask {
                id: t.task.id.clone(),
                project: t.project.clone(),
                number: t.task.number,
                status: t.doc.status,
                assignee: t.doc.assignee().map(str::to_string),
                priority: t.doc.priority().to_string(),
                parent: t.doc.parent().map(str::to_string),
                depends_on: t.doc.depends_on(),
                estimate: estimate_of(t),
            })
            .collect()
    }
}

/// A task's estimate; the listing already skipped files whose estimate is invalid.
pub(super) fn estimate_of(t: &Located) -> Option<Estimate> {
    t.doc.estimate().ok().flatten()
}

/// Resolves `--project` (a slug or `p-<slug>`) to an existing project's slug.
pub(super) fn project_slug(ctx: &Ctx, arg: Option<&str>) -> Result<Option<String>, Error> {
    let Some(p) = arg else {
        return Ok(None);
    };
    let slug = p.strip_prefix("p-").unwrap_or(p);
    check_slug(slug).map_err(Error::bad_slug)?;
    let listing = projects::list(ctx.ws()?)?;
    ctx.warn_all(listing.warnings);
    if !listing.items.iter().any(|x| x.slug == slug) {
        return Err(
            Error::not_found(format!("no project `{slug}` in this workspace"))
                .hint("list projects with `dacli status`"),
        );
    }
    Ok(Some(slug.to_string()))
}

/// The `TaskSummary` shape of COMMANDS.md §1.7.
#[derive(Debug, Clone, Serialize)]
pub(super) struct TaskSummary {
    #[serde(flatten)]
    pub task: TaskRef,
    pub status: &'static str,
    pub priority: String,
    pub owner: String,
    pub assignee: Option<String>,
    pub acceptance: Acceptance,
    pub estimate: Option<EstimateView>,
    pub tags: Vec<String>,
    pub pending: usize,
    pub finish_requested: bool,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct Acceptance {
    pub checked: usize,
    pub total: usize,
}

/// An estimate as printed: the three points as written, and `Te` to two decimals.
#[derive(Debug, Clone, Serialize)]
pub(super) struct EstimateView {
    pub optimistic: serde_json::Number,
    pub probable: serde_json::Number,
    pub pessimistic: serde_json::Number,
    pub expected: f64,
}

impl EstimateView {
    fn of(e: Estimate) -> EstimateView {
        EstimateView {
            optimistic: number(e.optimistic),
            probable: number(e.probable),
            pessimistic: number(e.pessimistic),
            expected: round2(e.expected()),
        }
    }
}

/// A JSON number that prints whole values as integers (`2`, not `2.0`), as they were written.
pub(super) fn number(v: f64) -> serde_json::Number {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        serde_json::Number::from(v as i64)
    } else {
        serde_json::Number::from_f64(v).unwrap_or_else(|| serde_json::Number::from(0))
    }
}

/// An effort figure for text output: two decimals, trailing zeros dropped.
pub(super) fn effort_text(v: f64) -> String {
    let s = format!("{:.2}", round2(v));
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
