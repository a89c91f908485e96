//! planning: projects and tasks (COMMANDS.md §5).

mod accept;
mod check;
mod common;
mod done;
mod life;
mod project;
mod task;
mod task_editor;

use crate::dispatch::Command;

pub(super) fn commands() -> Vec<Command> {
    let mut out = project::commands();
    out.extend(task::commands());
    out.extend(life::commands());
    out.extend(check::commands());
    out.extend(done::commands());
    out.extend(accept::commands());
    out
}
