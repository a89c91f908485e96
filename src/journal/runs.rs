//! `run` events (docs/FORMAT.md §14.2): recording a shortcut or ad-hoc run, and the `uses`
//! every catalogue derives from them (never stored).

use std::collections::BTreeMap;

use toml_edit::value;

use crate::model::event::EventHead;
use crate::objects;
use crate::workspace::Workspace;

use super::{Journal, NewEvent, append};

/// The shortcut name an ad-hoc `run --cmd` records.
pub const ADHOC: &str = "adhoc";

/// One finished run, as its event records it.
#[derive(Debug, Clone)]
pub struct Run<'a> {
    /// A shortcut name, or [`ADHOC`].
    pub shortcut: &'a str,
    pub exit_code: i64,
    pub duration_ms: i64,
    /// The task the run was for (`t-<ULID>`).
    pub task: Option<&'a str>,
    /// The working directory, as a repository path (absent: the work-tree root).
    pub dir: Option<&'a str>,
    /// The expanded command: the event's body.
    pub command: &'a str,
}

/// Appends the `run` event of `run`, authored by `by`, with fields in FORMAT §14.2 order.
pub fn append_run(
    ws: &Workspace,
    id: ulid::Ulid,
    by: &str,
    run: &Run<'_>,
) -> Result<EventHead, objects::Error> {
    let mut fields = vec![
        ("shortcut", value(run.shortcut)),
        ("exit_code", value(run.exit_code)),
        ("duration_ms", value(run.duration_ms)),
    ];
    if let Some(task) = run.task {
        fields.push(("task", value(task)));
    }
    if let Some(dir) = run.dir {
        fields.push(("dir", value(dir)));
    }
    append(
        ws,
        NewEvent {
            id,
            kind: "run",
            created_by: by,
            about: None,
            fields,
            body: format!("{}\n", run.command.trim_end_matches('\n')),
        },
    )
}

/// How many `run` events name each shortcut (ad-hoc runs under [`ADHOC`]), archived ones
/// included: `uses` is history, and history survives archival (FORMAT §20).
pub fn uses(journal: &Journal) -> BTreeMap<String, usize> {
    let mut out = journal.archived_runs().clone();
    for ev in runs(journal) {
        if let Some(name) = ev.field_str("shortcut") {
            *out.entry(name.to_string()).or_insert(0) += 1;
        }
    }
    out
}

/// Every `run` event, in ULID order.
pub fn runs(journal: &Journal) -> impl Iterator<Item = &EventHead> {
    journal.events.iter().filter(|e| e.kind == "run")
}

/// The command an ad-hoc or shortcut run executed: its body without the final newline.
pub fn command_of(ev: &EventHead) -> &str {
    ev.body.strip_suffix('\n').unwrap_or(&ev.body)
}
