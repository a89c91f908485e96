//! knowledge: notes, risks and the glossary (COMMANDS.md §6).

use crate::dispatch::Command;

pub(super) fn commands() -> Vec<Command> {
    vec![]
}
