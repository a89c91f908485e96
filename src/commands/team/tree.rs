//! `dacli agent tree`.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::model::agent::{Agent, AgentStatus, AgentView};
use crate::model::id::ROOT_AGENT;
use crate::objects::agents;

use crate::ops::lineage::Roster;

/// Show the lineage of agents by parent, children sorted by id.
///
/// Retired agents are left out unless `--all` is given (or a live agent sits below one).
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The agent at the top of the tree.
    #[arg(value_name = "AGENT", default_value = ROOT_AGENT)]
    #[serde(default = "root_agent")]
    agent: String,
    /// Include retired agents.
    #[arg(long)]
    #[serde(default)]
    all: bool,
}

fn root_agent() -> String {
    ROOT_AGENT.to_string()
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    root: Node,
}

#[derive(Debug, Serialize)]
struct Node {
    agent: AgentView,
    children: Vec<Node>,
}

pub(super) fn command() -> Command {
    Command::new("agent.tree", Class::Read, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let top = agents::load(ws, &req.agent)?;
    let listing = agents::list(ws)?;
    ctx.warn_all(listing.warnings);
    let roster = Roster::new(listing.items);
    let mut seen = BTreeSet::from([top.id.clone()]);
    let root = node(&roster, &top, req.all, &mut seen);
    Ok(Outcome::Done(Response { root }))
}

/// The subtree under `agent`. A retired child is kept with `--all`, or when a live agent
/// sits below it, so a live agent is never hidden; `seen` cuts parent cycles.
fn node(roster: &Roster, agent: &Agent, all: bool, seen: &mut BTreeSet<String>) -> Node {
    let mut children = Vec::new();
    for child in roster.children(&agent.id) {
        if !seen.insert(child.id.clone()) {
            continue;
        }
        let sub = node(roster, child, all, seen);
        if all || child.status == AgentStatus::Live || !sub.children.is_empty() {
            children.push(sub);
        }
    }
    Node {
        agent: agent.view(),
        children,
    }
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    let mut out = format!("{}\n", label(&r.root.agent));
    draw(&r.root.children, "", &mut out);
    out
}

fn draw(children: &[Node], prefix: &str, out: &mut String) {
    for (i, child) in children.iter().enumerate() {
        let last = i + 1 == children.len();
        let (branch, indent) = if last {
            ("└── ", "    ")
        } else {
            ("├── ", "│   ")
        };
        out.push_str(&format!("{prefix}{branch}{}\n", label(&child.agent)));
        draw(&child.children, &format!("{prefix}{indent}"), out);
    }
}

fn label(a: &AgentView) -> String {
    let retired = if a.status == AgentStatus::Retired {
        ", retired"
    } else {
        ""
    };
    format!(
        "{} ({}, {}{retired})",
        a.id,
        a.role.as_deref().unwrap_or("no role"),
        a.grant
    )
}
