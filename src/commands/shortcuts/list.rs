//! `shortcut list` and `shortcut show`: the catalogue, with what the caller may run.

use serde::{Deserialize, Serialize};

use super::{Caller, ShortcutView, all_shortcuts, rank, uses};
use crate::dispatch::text::fit_table;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::model::format_time;
use crate::model::shortcut::Effect;
use crate::objects::shortcuts;

/// List every shortcut, most used first, with whether you may run it and, if not, the policy
/// that would refuse it.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListRequest {}

impl Classify for ListRequest {}

#[derive(Debug, Serialize)]
pub struct ListResponse {
    shortcuts: Vec<Entry>,
}

#[derive(Debug, Serialize)]
struct Entry {
    name: String,
    summary: String,
    effect: Option<Effect>,
    uses: usize,
    runnable: bool,
    refused_by: Option<String>,
}

pub(super) fn list_command() -> Command {
    Command::new("shortcut.list", Class::Read, list, render_list)
}

fn list(ctx: &Ctx, _req: ListRequest) -> Result<Outcome<ListResponse>, Error> {
    let all = all_shortcuts(ctx)?;
    let caller = Caller::load(ctx, &all)?;
    let uses = uses(ctx)?;
    let mut ranked: Vec<_> = all.iter().collect();
    rank(&mut ranked, &uses);
    let shortcuts = ranked
        .into_iter()
        .map(|l| {
            let refused_by = caller.gate(&l.shortcut, true).map(|r| r.policy);
            Entry {
                name: l.shortcut.name.clone(),
                summary: l.shortcut.summary.clone(),
                effect: l.shortcut.effect,
                uses: uses.get(&l.shortcut.name).copied().unwrap_or(0),
                runnable: refused_by.is_none(),
                refused_by,
            }
        })
        .collect();
    Ok(Outcome::Done(ListResponse { shortcuts }))
}

fn render_list(r: &ListResponse, ctx: &Ctx) -> String {
    if r.shortcuts.is_empty() {
        return "no shortcuts (add one with `dacli shortcut add`)\n".into();
    }
    let mut rows = vec![vec![
        "NAME".to_string(),
        "USES".into(),
        "EFFECT".into(),
        "RUNNABLE".into(),
        "SUMMARY".into(),
    ]];
    for e in &r.shortcuts {
        rows.push(vec![
            e.name.clone(),
            e.uses.to_string(),
            e.effect.map_or("none", Effect::as_str).to_string(),
            match &e.refused_by {
                None => "yes".to_string(),
                Some(p) => format!("no ({p})"),
            },
            e.summary.clone(),
        ]);
    }
    fit_table(&rows, &[1], ctx.width(), 4)
}

/// Show one shortcut: its template, parameters, why it has its shape, how often it ran and
/// whether you may run it.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShowRequest {
    /// The shortcut's name.
    name: String,
}

impl Classify for ShowRequest {}

#[derive(Debug, Serialize)]
pub struct ShowResponse {
    shortcut: ShortcutView,
    why: String,
    uses: usize,
    last_run: Option<LastRun>,
    runnable: bool,
    refused_by: Option<String>,
}

#[derive(Debug, Serialize)]
struct LastRun {
    event: String,
    exit_code: Option<i64>,
    at: String,
}

pub(super) fn show_command() -> Command {
    Command::new("shortcut.show", Class::Read, show, render_show)
}

fn show(ctx: &Ctx, req: ShowRequest) -> Result<Outcome<ShowResponse>, Error> {
    let ws = ctx.ws()?;
    let located = shortcuts::load(ws, &req.name)
        .map_err(|e| Error::from(e).hint("list shortcuts with `dacli shortcut list`"))?;
    let all = all_shortcuts(ctx)?;
    let caller = Caller::load(ctx, &all)?;
    let journal = crate::journal::read(ws)?;
    ctx.warn_all(journal.warnings.iter().cloned());
    let mine: Vec<_> = crate::journal::runs::runs(&journal)
        .filter(|e| e.field_str("shortcut") == Some(req.name.as_str()))
        .collect();
    let last_run = mine.last().map(|e| LastRun {
        event: e.id.clone(),
        exit_code: e.field_int("exit_code"),
        at: format_time(e.created),
    });
    let refused_by = caller.gate(&located.shortcut, true).map(|r| r.policy);
    Ok(Outcome::Done(ShowResponse {
        shortcut: ShortcutView::of(&located.shortcut),
        why: why(&located.doc.body),
        uses: mine.len(),
        last_run,
        runnable: refused_by.is_none(),
        refused_by,
    }))
}

/// The body without its title heading: why the command has its shape.
fn why(body: &str) -> String {
    let mut lines = body.lines().peekable();
    if lines.peek().is_some_and(|l| l.starts_with("# ")) {
        lines.next();
    }
    lines.collect::<Vec<_>>().join("\n").trim().to_string()
}

fn render_show(r: &ShowResponse, _ctx: &Ctx) -> String {
    let s = &r.shortcut;
    let mut out = format!(
        "{}  ({}, owner {})\n  {}\n  command: {}\n",
        s.name,
        s.effect.map_or("no valid effect", Effect::as_str),
        s.owner,
        s.summary,
        s.command
    );
    if let Some(dir) = &s.dir {
        out.push_str(&format!("  dir: {dir}\n"));
    }
    for p in &s.params {
        let mut notes = Vec::new();
        if p.required {
            notes.push("required".to_string());
        }
        if p.raw {
            notes.push("raw".to_string());
        }
        if let Some(d) = &p.default {
            notes.push(format!("default {d:?}"));
        }
        out.push_str(&format!(
            "  param {}{}{}\n",
            p.name,
            if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join(", "))
            },
            p.description
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default()
        ));
    }
    if !s.roles.is_empty() {
        out.push_str(&format!("  roles: {}\n", s.roles.join(", ")));
    }
    out.push_str(&format!("  uses: {}", r.uses));
    if let Some(l) = &r.last_run {
        out.push_str(&format!(
            " (last {} exit {}, event {})",
            l.at,
            l.exit_code.map_or("?".to_string(), |c| c.to_string()),
            l.event
        ));
    }
    out.push('\n');
    match &r.refused_by {
        None => out.push_str("  you may run it\n"),
        Some(p) => out.push_str(&format!("  you may not run it ({p})\n")),
    }
    if !r.why.is_empty() {
        out.push_str(&format!("\n{} wrote:\n", s.owner));
        for line in r.why.lines() {
            if line.trim().is_empty() {
                out.push('\n');
            } else {
                out.push_str(&format!("  {line}\n"));
            }
        }
    }
    out
}
