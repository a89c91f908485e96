//! collab: questions, answers, sync and the event log (COMMANDS.md §7).

mod ask;
mod events;
mod sync;

use crate::dispatch::Command;

pub(super) fn commands() -> Vec<Command> {
    let mut out = ask::commands();
    out.extend(sync::commands());
    out.extend(events::commands());
    out
}
