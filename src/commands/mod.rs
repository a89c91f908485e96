//! L6: one sub-module per capability ("slice"). Slices never import each other; what two of
//! them share lives in a lower layer. This file only assembles the table.

mod admin;
mod briefing;
mod collab;
mod github;
mod insight;
mod knowledge;
mod planning;
mod queues;
mod repo;
mod review;
mod runtimes;
mod shortcuts;
mod team;
mod templates;

use crate::dispatch::Table;

pub use admin::complete_from_env;

/// The command table: every command dacli has, declared once.
pub fn table() -> Table {
    let mut commands = Vec::new();
    commands.extend(admin::commands());
    commands.extend(team::commands());
    commands.extend(planning::commands());
    commands.extend(collab::commands());
    commands.extend(knowledge::commands());
    commands.extend(insight::commands());
    commands.extend(templates::commands());
    commands.extend(shortcuts::commands());
    commands.extend(queues::commands());
    commands.extend(briefing::commands());
    commands.extend(repo::commands());
    commands.extend(runtimes::commands());
    commands.extend(github::commands());
    commands.extend(review::commands());
    Table::new(commands).with_groups(&[
        (
            "agent",
            "Agents: spawn child identities with attenuated grants, list, show, retire",
        ),
        ("project", "Projects: add, list, show, edit"),
        (
            "task",
            "Tasks: add, list, show, claim, check, block, finish, reopen, ...",
        ),
        ("events", "The event log: list, tail, show"),
        (
            "repo",
            "The repository: retire provably dead branches, worktrees and run records",
        ),
        (
            "delivery",
            "Delivery: did each task's work land on the base branch?",
        ),
        ("note", "Notes: decisions, findings, metrics, refs"),
        ("risk", "Risks: add, edit, list"),
        ("glossary", "The project glossary: show, add"),
        (
            "template",
            "Templates: list, show, add (vendor one to edit it)",
        ),
        ("mcp", "The MCP stdio server: serve, config"),
        (
            "github",
            "GitHub: link the repository, record disclosure consent, project tasks as issues",
        ),
        ("pr", "Pull requests: diagnose why one is not landing"),
        (
            "release-train",
            "Release trains: promote one exact commit from a source to a target branch",
        ),
        (
            "role",
            "Roles: grant ceiling, scope, toolkit, escalation and WIP cap",
        ),
        (
            "shortcut",
            "Shortcuts: named command templates with a declared effect (run them with `dacli run`)",
        ),
        (
            "queue",
            "Queues: ordered steps an owner advances; dacli never runs them",
        ),
        (
            "runtime",
            "Runtimes: adapters for coding-agent CLIs, probed by `runtime doctor`",
        ),
    ])
}
