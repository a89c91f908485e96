//! L6: one sub-module per capability ("slice"). Slices never import each other; what two of
//! them share lives in a lower layer. This file only assembles the table.

mod admin;
mod briefing;
mod collab;
mod insight;
mod knowledge;
mod planning;
mod team;

use crate::dispatch::Table;

/// The command table: every command dacli has, declared once.
pub fn table() -> Table {
    let mut commands = Vec::new();
    commands.extend(admin::commands());
    commands.extend(team::commands());
    commands.extend(planning::commands());
    commands.extend(collab::commands());
    commands.extend(knowledge::commands());
    commands.extend(insight::commands());
    commands.extend(briefing::commands());
    Table::new(commands)
}
