//! The part of the event log a brief needs: the events pending or about some subjects, with
//! the states the whole log gives them, and the run counts of every shortcut.

use crate::objects;
use crate::workspace::Workspace;
use std::collections::{BTreeMap, BTreeSet};

use super::EventState;
use super::index::{EventEntry, Events};

/// The subject every pending event is also filed under.
const PENDING: &str = "\0pending";

/// What [`about`] selects: the events of the log about some subjects, with their states,
/// and the run counts of every shortcut over the whole log.
#[derive(Debug, Default)]
pub struct Selection {
    /// The selected events, sorted by id; [`Events::state`] gives each its state in the
    /// whole log. Warnings are those of the whole log's read.
    pub events: Events,
    /// Runs of each shortcut, in the whole log.
    pub runs: BTreeMap<String, usize>,
}

/// The events of the log (receipts aside) that are pending, or about one of `subjects`
/// (their `about`, or a run's task), and the answers to the questions among them.
pub fn about(ws: &Workspace, subjects: &BTreeSet<String>) -> Result<Selection, objects::Error> {
    Ok(select(&super::index::read(ws)?, subjects))
}

/// The selection of [`about`], made from the whole log.
pub fn select(events: &Events, subjects: &BTreeSet<String>) -> Selection {
    let candidates = || {
        events
            .entries
            .iter()
            .filter(|e| e.kind() != "applied")
            .map(|e| (e, events.state(e)))
    };
    let none = BTreeSet::new();
    let questions = questions_among(
        candidates()
            .filter(|(e, state)| chosen(e, state, subjects, &none))
            .map(|(e, _)| e),
    );
    let (picked, states): (Vec<EventEntry>, Vec<EventState>) = candidates()
        .filter(|(e, state)| chosen(e, state, subjects, &questions))
        .map(|(e, state)| (e.clone(), state))
        .unzip();
    let mut part = Events::part(picked, states);
    part.warnings = events.warnings.clone();
    Selection {
        events: part,
        runs: run_counts(events),
    }
}

/// The rule of a selection: an event (not a receipt) in state `state` is chosen when it is
/// pending or filed under one of `subjects`, or answers one of `questions`.
fn chosen(
    e: &EventEntry,
    state: &EventState,
    subjects: &BTreeSet<String>,
    questions: &BTreeSet<String>,
) -> bool {
    filed_under(e, *state == EventState::Pending)
        .iter()
        .any(|s| *s == PENDING || subjects.contains(*s) || questions.contains(*s))
}

/// The ids of the questions (`help` events) among `events`.
fn questions_among<'e>(events: impl Iterator<Item = &'e EventEntry>) -> BTreeSet<String> {
    events
        .filter(|e| e.kind() == "help")
        .map(|e| e.id().to_string())
        .collect()
}

/// The subjects an event is filed under.
fn filed_under(e: &EventEntry, pending: bool) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::with_capacity(3);
    out.extend(e.about());
    if e.kind() == "run" {
        out.extend(e.task());
    }
    if e.kind() == "answer" {
        out.extend(e.question());
    }
    if pending {
        out.push(PENDING);
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn run_counts(events: &Events) -> BTreeMap<String, usize> {
    let mut runs: BTreeMap<String, usize> = BTreeMap::new();
    for e in events.entries.iter().filter(|e| e.kind() == "run") {
        if let Some(name) = e.shortcut() {
            *runs.entry(name.to_string()).or_default() += 1;
        }
    }
    runs
}
