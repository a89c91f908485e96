//! What a reader of many tasks sees of a task pending events change: its folded fields as
//! the index would extract them from the folded file.

use std::sync::Arc;

use crate::model::taskdoc::TaskDoc;
use crate::objects::index::TaskEntry;

use super::fold::Folded;

/// What a reader of many tasks sees of a task pending events change: its folded fields as
/// the index would extract them from the folded file, and whether a finish request waits.
#[derive(Clone, Debug)]
pub struct View {
    pub entry: Arc<TaskEntry>,
    pub finish_requested: bool,
}

impl View {
    /// The view of `doc`, the fold of the task indexed as `t`, with what folding did. The
    /// entry keeps `t`'s place (project, number, file); `folder` holds the folded status.
    pub fn of(t: &TaskEntry, doc: &TaskDoc, folded: &Folded) -> View {
        let mut f = t.fields();
        f.folder = doc.status.as_str().to_string();
        if !doc.title().is_empty() {
            f.title = doc.title().to_string();
        }
        f.owner = doc.owner().to_string();
        f.assignee = doc.assignee().map(str::to_string);
        f.priority = doc.priority().to_string();
        let criteria = doc.criteria();
        f.checked = criteria.iter().filter(|c| c.checked).count();
        f.criteria = criteria.len();
        f.estimate = doc
            .estimate()
            .ok()
            .flatten()
            .map(|e| [e.optimistic, e.probable, e.pessimistic]);
        f.tags = doc.tags();
        f.parent = doc.parent().map(str::to_string);
        f.depends_on = doc
            .depends_on()
            .into_iter()
            .map(|d| (d.on, d.kind))
            .collect();
        let log = doc.log();
        f.last_log_at = log.last().map(|l| l.at.clone());
        f.active_since = crate::model::task::active_since(&log);
        f.generation = doc.generation();
        f.reopened_at = crate::model::task::reopened_at(&log);
        f.delivery = doc.view().delivery();
        View {
            entry: Arc::new(TaskEntry::new(&f)),
            finish_requested: folded.finish_requested(),
        }
    }
}
