//! review: the workspace's changes as a reviewer reads them (`review`), one task's history
//! across commits (`log`), and finding anything (`search`). docs/REVIEW.md documents the
//! output.

mod compare;
mod log;
mod post;
mod render;
mod search;

use crate::dispatch::Command;

pub(super) fn commands() -> Vec<Command> {
    vec![compare::command(), log::command(), search::command()]
}
