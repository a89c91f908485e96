//! insight: what is going on in the workspace (COMMANDS.md §9).

mod status;

use crate::dispatch::Command;

pub(super) fn commands() -> Vec<Command> {
    vec![status::command()]
}
