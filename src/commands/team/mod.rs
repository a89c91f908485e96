//! team: agents, identities and roles (COMMANDS.md §4).

mod list;
mod retire;
mod roles;
mod show;
mod spawn;
mod tree;
mod whoami;

use crate::dispatch::Command;

pub(super) fn commands() -> Vec<Command> {
    vec![
        whoami::command(),
        spawn::command(),
        list::command(),
        show::command(),
        retire::command(),
        tree::command(),
    ]
    .into_iter()
    .chain(roles::commands())
    .collect()
}
