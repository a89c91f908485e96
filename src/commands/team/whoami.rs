//! `dacli whoami`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, IdentitySource, Mcp, Outcome};
use crate::model::agent::AgentView;
use crate::model::task::TaskRef;
use crate::objects::WorkspaceInfo;
use crate::objects::lookup::ProjectTasks;
use crate::objects::{self, projects, roles};

/// Show who you are in this workspace: identity, grant, role, toolkit, WIP and assigned tasks.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    agent: AgentView,
    source: IdentitySource,
    workspace: WorkspaceInfo,
    toolkit: Vec<String>,
    wip: Wip,
    escalate_to: Vec<String>,
    assigned: Vec<TaskRef>,
}

#[derive(Debug, Serialize)]
struct Wip {
    /// `None` (JSON `null`): no cap. A role's `wip = 0` means no cap too, and an agent
    /// reading 0 would take it for "may not claim".
    cap: Option<u32>,
    active: usize,
}

pub(super) fn command() -> Command {
    Command::new("whoami", Class::Read, run, render).mcp(Mcp::Tier1("whoami"))
}

fn run(ctx: &Ctx, _req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?;
    let role = match me.agent.role.as_deref() {
        Some(name) if name != "root" => match roles::load(ws, name) {
            Ok(role) => Some(role),
            Err(objects::Error::NotFound { .. }) => None,
            Err(e) => return Err(e.into()),
        },
        _ => None,
    };
    // An empty toolkit means every read-effect shortcut (FORMAT §7).
    let toolkit = match &role {
        Some(r) if !r.shortcuts.is_empty() => {
            let mut t = r.shortcuts.clone();
            t.sort();
            t
        }
        _ => {
            let l = roles::read_shortcuts(ws)?;
            ctx.warn_all(l.warnings);
            l.items
        }
    };
    let listing = projects::list(ws)?;
    ctx.warn_all(listing.warnings);
    let mut assigned = Vec::new();
    let mut role_active = 0;
    let mut my_active = 0;
    // Roles of assignees, each agent file read once.
    let mut roles_of: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mine = |who: Option<&str>| who == Some(me.agent.id.as_str());
    for p in &listing.items {
        // Rows where current: the assigned tasks are read, the others only counted.
        let (tasks, warnings) = ProjectTasks::load(ws, &p.slug)?;
        ctx.warn_all(warnings);
        let here = tasks.select(ws, |_, folder, who| folder != "done" && mine(who))?;
        assigned.extend(here.iter().map(|e| e.task_ref()));
        tasks.each(|_, folder, who| {
            if folder != "active" {
                return;
            }
            if mine(who) {
                my_active += 1;
            }
            if let (Some(role), Some(who)) = (&role, who)
                && roles_of
                    .entry(who.to_string())
                    .or_insert_with(|| agent_role(ws, who))
                    .as_deref()
                    == Some(role.name.as_str())
            {
                role_active += 1;
            }
        });
    }
    // The WIP cap counts active tasks by assignee role (COMMANDS.md §14.12); without a role
    // there is no cap, and the figure is the caller's own active tasks.
    let active = if role.is_some() {
        role_active
    } else {
        my_active
    };
    Ok(Outcome::Done(Response {
        agent: me.agent.view(),
        source: me.source,
        workspace: WorkspaceInfo::of(ws),
        toolkit,
        wip: Wip {
            cap: role.as_ref().map(|r| r.wip).filter(|c| *c > 0),
            active,
        },
        escalate_to: role.map(|r| r.escalate_to).unwrap_or_default(),
        assigned,
    }))
}

fn agent_role(ws: &crate::workspace::Workspace, id: &str) -> Option<String> {
    objects::agents::load(ws, id).ok().and_then(|a| a.role)
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    let mut out = format!(
        "{} ({}, {}{})\n",
        r.agent.id,
        r.agent.grant,
        r.agent
            .role
            .as_deref()
            .map_or("no role".into(), |x| format!("role {x}")),
        match r.source {
            IdentitySource::Unset => ", root because DACLI_AGENT is unset",
            IdentitySource::Token => "",
        }
    );
    out.push_str(&format!(
        "workspace {} ({})\n",
        r.workspace.name.as_deref().unwrap_or("-"),
        r.workspace.id
    ));
    let toolkit = if r.toolkit.is_empty() {
        "-".to_string()
    } else {
        r.toolkit.join(", ")
    };
    out.push_str(&format!("toolkit: {toolkit}\n"));
    match r.wip.cap {
        Some(cap) => out.push_str(&format!("wip: {}/{cap}\n", r.wip.active)),
        None => out.push_str(&format!("wip: {} active, cap none\n", r.wip.active)),
    }
    if !r.escalate_to.is_empty() {
        out.push_str(&format!("escalate to: {}\n", r.escalate_to.join(" → ")));
    }
    if r.assigned.is_empty() {
        out.push_str("assigned: none\n");
    } else {
        out.push_str("assigned:\n");
        for t in &r.assigned {
            out.push_str(&format!("  {}  {}\n", t.reference, t.title));
        }
    }
    out
}
