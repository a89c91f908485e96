//! admin: setting up and checking a workspace, and what it offers MCP clients (COMMANDS.md §3).

mod capabilities;
mod completions;
mod doctor;
mod init;
mod man;
mod mcp;
mod merge_driver;
mod usage;
mod version;

use crate::dispatch::Command;

pub use completions::complete_from_env;

pub(super) fn commands() -> Vec<Command> {
    vec![
        init::command(),
        version::command(),
        doctor::command(),
        completions::command(),
        man::command(),
        capabilities::command(),
        usage::command(),
        merge_driver::command(),
    ]
    .into_iter()
    .chain(mcp::commands())
    .collect()
}
