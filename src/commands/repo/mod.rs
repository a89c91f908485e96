//! repo: the git-side tools of GIT_GITHUB.md B1–B3 (COMMANDS.md §12): `repo cleanup`,
//! `delivery reconcile`, `events scan | reconcile | archive | restore`. Each previews without
//! writing and applies only the plan whose digest was reviewed, as a journaled transaction.

mod cleanup;
mod common;
mod delivery;
mod event_journal;

use crate::dispatch::Command;

pub(super) fn commands() -> Vec<Command> {
    let mut out = vec![cleanup::command(), delivery::command()];
    out.extend(event_journal::commands());
    out
}
