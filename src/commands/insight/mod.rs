//! insight: what is going on in the workspace (COMMANDS.md §9).

mod burndown;
mod chart;
mod lint;
mod lint_scan;
mod next;
mod status;
mod velocity;
mod view;
mod wbs;

use crate::dispatch::Command;

pub(super) fn commands() -> Vec<Command> {
    vec![
        status::command(),
        next::command(),
        wbs::command(),
        burndown::command(),
        velocity::command(),
        lint::command(),
    ]
}
