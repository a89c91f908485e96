//! planning: projects and tasks (COMMANDS.md §5).

use crate::dispatch::Command;

pub(super) fn commands() -> Vec<Command> {
    vec![]
}
