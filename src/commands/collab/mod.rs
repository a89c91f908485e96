//! collab: questions, answers, sync and the event log (COMMANDS.md §7).

use crate::dispatch::Command;

pub(super) fn commands() -> Vec<Command> {
    vec![]
}
