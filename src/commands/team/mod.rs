//! team: agents, identities and roles (COMMANDS.md §4).

mod whoami;

use crate::dispatch::Command;

pub(super) fn commands() -> Vec<Command> {
    vec![whoami::command()]
}
