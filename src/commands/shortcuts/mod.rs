//! shortcuts: named, parameterised commands with a declared effect, and `run`
//! (COMMANDS.md §10). Processes are spawned by `exec` only; every run leaves a `run` event,
//! from which `uses` is derived.

mod add;
mod list;
mod rm;
mod run;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::dispatch::{Command, Ctx, Error, ErrorKind};
use crate::journal::wip::guard_role;
use crate::model::Grant;
use crate::model::id::ROOT_AGENT;
use crate::model::role::Role;
use crate::model::shortcut::{Effect, Param, Shortcut};
use crate::objects::shortcuts::{self, Located};
use crate::policy::guard::{Runner, in_toolkit, shortcut_gate};
use crate::policy::shortcut::Template;

pub(super) fn commands() -> Vec<Command> {
    vec![
        add::add_command(),
        list::list_command(),
        list::show_command(),
        rm::command(),
        add::promote_command(),
        run::command(),
    ]
}

/// The caller as the gates of `run` see it, with its toolkit.
struct Caller {
    id: String,
    grant: Grant,
    role: Option<Role>,
    /// Who to ask instead: the role's first `escalate_to`, else the parent, else root.
    ask: String,
    /// The names the caller may run by toolkit (for refusal texts), sorted.
    toolkit: Vec<String>,
}

impl Caller {
    fn load(ctx: &Ctx, all: &[Located]) -> Result<Caller, Error> {
        let ws = ctx.ws()?;
        let me = &ctx.identity()?.agent;
        let role = guard_role(ws, &me.id)?;
        let ask = role
            .as_ref()
            .and_then(|r| r.escalate_to.first().cloned())
            .or_else(|| me.parent.clone())
            .unwrap_or_else(|| ROOT_AGENT.to_string());
        let mut toolkit: Vec<String> = all
            .iter()
            .filter(|l| me.id == ROOT_AGENT || in_toolkit(role.as_ref(), &l.shortcut))
            .map(|l| l.shortcut.name.clone())
            .collect();
        toolkit.sort();
        Ok(Caller {
            id: me.id.clone(),
            grant: me.grant,
            role,
            ask,
            toolkit,
        })
    }

    fn runner(&self) -> Runner<'_> {
        Runner {
            is_root: self.id == ROOT_AGENT,
            grant: self.grant,
            role: self.role.as_ref(),
            ask: &self.ask,
        }
    }

    /// The refusal `run` would meet for `shortcut` (parameters aside).
    fn gate(&self, shortcut: &Shortcut, confirmed: bool) -> Option<crate::model::Refusal> {
        shortcut_gate(&self.runner(), shortcut, &self.toolkit, confirmed)
    }

    /// Whether the caller may run `shortcut` at all (a destructive one with `--confirmed`).
    fn may_run(&self, shortcut: &Shortcut) -> bool {
        self.gate(shortcut, true).is_none()
    }
}

/// Every shortcut, with skipped files reported.
fn all_shortcuts(ctx: &Ctx) -> Result<Vec<Located>, Error> {
    let listing = shortcuts::list(ctx.ws()?)?;
    ctx.warn_all(listing.warnings);
    Ok(listing.items)
}

/// `uses` of every shortcut: its `run` events (never stored).
fn uses(ctx: &Ctx) -> Result<BTreeMap<String, usize>, Error> {
    let journal = crate::journal::read(ctx.ws()?)?;
    ctx.warn_all(journal.warnings.iter().cloned());
    Ok(crate::journal::runs::uses(&journal))
}

/// Orders shortcuts as every catalogue does: by uses, descending, then by name.
fn rank(items: &mut [&Located], uses: &BTreeMap<String, usize>) {
    items.sort_by(|a, b| {
        let ua = uses.get(&a.shortcut.name).copied().unwrap_or(0);
        let ub = uses.get(&b.shortcut.name).copied().unwrap_or(0);
        ub.cmp(&ua).then(a.shortcut.name.cmp(&b.shortcut.name))
    });
}

/// The stored template, parsed; a stored template that fails validation names the file.
fn template(l: &Located) -> Result<Template, Error> {
    let declared: Vec<&str> = l.shortcut.params.iter().map(|p| p.name.as_str()).collect();
    Template::parse(&l.shortcut.command, &declared).map_err(|e| {
        Error::new(
            ErrorKind::Operational,
            "E_MALFORMED",
            format!("{} is malformed: schema (`command`: {e})", l.path),
        )
        .hint(format!(
            "ask {} to fix the template of {}",
            l.shortcut.owner, l.shortcut.name
        ))
    })
}

/// The `shortcut` object of COMMANDS.md §10 (`shortcut add` data).
#[derive(Debug, Clone, Serialize)]
struct ShortcutView {
    name: String,
    summary: String,
    command: String,
    effect: Option<Effect>,
    params: Vec<Param>,
    roles: Vec<String>,
    dir: Option<String>,
    owner: String,
}

impl ShortcutView {
    fn of(s: &Shortcut) -> ShortcutView {
        ShortcutView {
            name: s.name.clone(),
            summary: s.summary.clone(),
            command: s.command.clone(),
            effect: s.effect,
            params: s.params.clone(),
            roles: s.roles.clone(),
            dir: s.dir.clone(),
            owner: s.owner.clone(),
        }
    }
}
