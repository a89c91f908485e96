//! briefing: the brief of a task (COMMANDS.md §8, spec/BRIEF.md).

mod context;

use crate::dispatch::Command;

pub(super) fn commands() -> Vec<Command> {
    vec![context::command()]
}
