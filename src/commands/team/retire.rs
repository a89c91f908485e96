//! `dacli agent retire`: an agent stops acting; its token is refused from then on.

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome, Refusal};
use crate::model::agent::Agent;
use crate::model::id::{ROOT_AGENT, is_agent_id};
use crate::objects::agents;
use crate::ops::{self, agents::Retire as Step};
use crate::workspace::Workspace;

use crate::ops::lineage::Roster;

/// Retire an agent: its token stops working at once.
///
/// Only the agent's owner (its parent) or a-root may retire it, and only once it has no live
/// children. Its tasks stay assigned to it; a-root acts for it as owner.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The agent to retire.
    #[arg(value_name = "AGENT")]
    agent: String,
    /// Retire its live descendants first, deepest first (a-root only).
    #[arg(long)]
    #[serde(default)]
    cascade: bool,
}

impl Classify for Request {
    fn display_path(&self, path: &str) -> String {
        if self.cascade {
            format!("{path} {} --cascade", self.agent)
        } else {
            format!("{path} {}", self.agent)
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Response {
    /// The agent named on the command line (text output only).
    #[serde(skip)]
    agent: String,
    /// In the order they were retired: descendants deepest first, the named agent last.
    retired: Vec<String>,
    /// `applied`, or `unchanged` when the agent was already retired.
    effect: &'static str,
}

pub(super) fn command() -> Command {
    Command::new("agent.retire", Class::Mutate, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let me = &ctx.identity()?.agent;
    let id = req.agent.as_str();
    // No caller can retire root, so this is said before anything about the caller.
    if id == ROOT_AGENT {
        return Ok(Outcome::Refused(Refusal::new(
            "agent.is_root",
            "a-root is the root of every lineage and cannot be retired",
            "a-root cannot be retired; retire the agents below it.",
        )));
    }
    if req.cascade && me.id != ROOT_AGENT {
        return Ok(Outcome::Refused(Refusal::new(
            "grant.root_required",
            "`--cascade` retires a whole subtree of agents; only a-root may do that",
            format!("Ask a-root or the human to run `dacli agent retire {id} --cascade`."),
        )));
    }
    if !is_agent_id(id) {
        return Err(Error::not_found(format!(
            "no agent `{id}` in this workspace"
        )));
    }
    agents::load(ws, id)?;
    if req.cascade {
        return cascade(ctx, ws, me, id);
    }
    let retired = match retire_one(ctx, ws, me, id)? {
        Step::Retired => vec![id.to_string()],
        Step::AlreadyRetired => Vec::new(),
        Step::NotOwner(owner) => return Ok(Outcome::Refused(not_owner(id, &owner))),
        Step::LiveChildren(children) => {
            return Ok(Outcome::Refused(has_live_children(id, &children)));
        }
    };
    Ok(Outcome::Done(response(id, retired)))
}

/// Root retires `id` and every live descendant, deepest first. Each agent is retired under
/// its own lock once it has no live children; a child spawned meanwhile is picked up by the
/// next pass.
fn cascade(ctx: &Ctx, ws: &Workspace, me: &Agent, id: &str) -> Result<Outcome<Response>, Error> {
    let mut retired = Vec::new();
    loop {
        let listing = agents::list(ws)?;
        ctx.warn_all(listing.warnings);
        let roster = Roster::new(listing.items);
        let mut order = roster.live_descendants_deepest_first(id);
        order.push(id.to_string());
        let mut progress = false;
        let mut blocked = None;
        for agent in &order {
            match retire_one(ctx, ws, me, agent)? {
                Step::Retired => {
                    retired.push(agent.clone());
                    progress = true;
                }
                Step::AlreadyRetired => {}
                Step::LiveChildren(children) if agent == id => blocked = Some(children),
                // A child spawned under a descendant after the listing: the next pass.
                Step::LiveChildren(_) => {}
                Step::NotOwner(owner) => {
                    return Err(Error::internal(format!(
                        "a-root was refused retiring {agent} owned by {owner}"
                    )));
                }
            }
        }
        match blocked {
            None => return Ok(Outcome::Done(response(id, retired))),
            Some(children) if !progress => {
                return Ok(Outcome::Refused(has_live_children(id, &children)));
            }
            Some(_) => {}
        }
    }
}

/// Retires `id` under its lock (ops decides owner and live children there).
fn retire_one(ctx: &Ctx, ws: &Workspace, me: &Agent, id: &str) -> Result<Step, Error> {
    let mut warnings = Vec::new();
    let step = ops::agents::retire(ws, me, id, ctx.now(), ctx.new_ulid(), &mut warnings);
    ctx.warn_all(warnings);
    Ok(step?)
}

fn response(agent: &str, retired: Vec<String>) -> Response {
    let effect = if retired.is_empty() {
        "unchanged"
    } else {
        "applied"
    };
    Response {
        agent: agent.to_string(),
        retired,
        effect,
    }
}

fn not_owner(id: &str, owner: &str) -> Refusal {
    Refusal::new(
        "agent.not_owner",
        format!("{id} is owned by {owner}; only its owner or a-root may retire it"),
        format!("{id} belongs to {owner}; ask it or a-root."),
    )
}

fn has_live_children(id: &str, children: &[String]) -> Refusal {
    let list = children.join(", ");
    Refusal::new(
        "agent.has_live_children",
        format!("{id} still has live children: {list}"),
        format!(
            "Retire {list} first, or ask a-root to use `--cascade` (`dacli agent retire {id} --cascade`)."
        ),
    )
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    if r.retired.is_empty() {
        return format!("{} is already retired; nothing changed\n", r.agent);
    }
    r.retired
        .iter()
        .map(|id| format!("retired {id}\n"))
        .collect()
}
