//! admin: setting up and checking a workspace (COMMANDS.md §3).

mod completions;
mod doctor;
mod init;
mod man;
mod version;

use crate::dispatch::Command;

pub(super) fn commands() -> Vec<Command> {
    vec![
        init::command(),
        version::command(),
        doctor::command(),
        completions::command(),
        man::command(),
    ]
}
