//! `dacli agent show`.

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::journal::{self, fold};
use crate::model::agent::AgentView;
use crate::model::format_time;
use crate::model::task::{Status, TaskRef};
use crate::objects::{agents, notes, tasks};
use crate::policy;

/// Show one agent: its record, children, assigned tasks and what it owns.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The agent id (`a-root`, `a-<ULID>` or `a-<role>-<ULID>`).
    #[arg(value_name = "AGENT")]
    agent: String,
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    agent: AgentView,
    owner: String,
    created: String,
    created_by: String,
    retired_at: Option<String>,
    retired_by: Option<String>,
    /// Direct children, live and retired, sorted by id.
    children: Vec<String>,
    /// Tasks not done whose assignee (pending events folded in) is this agent.
    assigned: Vec<TaskRef>,
    owns: Owns,
}

#[derive(Debug, Serialize)]
struct Owns {
    tasks: usize,
    queues: usize,
}

pub(super) fn command() -> Command {
    Command::new("agent.show", Class::Read, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let agent = agents::load(ws, &req.agent)?;
    let listing = agents::list(ws)?;
    ctx.warn_all(listing.warnings);
    let children = listing
        .items
        .iter()
        .filter(|a| a.parent.as_deref() == Some(agent.id.as_str()) && a.id != agent.id)
        .map(|a| a.id.clone())
        .collect();

    let journal = journal::read(ws)?;
    ctx.warn_all(journal.warnings.iter().cloned());
    let note_list = notes::list(ws)?;
    ctx.warn_all(note_list.warnings);
    let mut task_list = tasks::list_all(ws)?;
    ctx.warn_all(std::mem::take(&mut task_list.warnings));
    fold::fold_all(
        ws,
        &journal,
        &note_list.items,
        &mut task_list.items,
        &|facts| policy::dod::evaluate(facts).passed,
    );
    let assigned = task_list
        .items
        .iter()
        .filter(|t| t.doc.status != Status::Done && t.doc.assignee() == Some(agent.id.as_str()))
        .map(|t| t.task_ref())
        .collect();
    let owned_tasks = task_list
        .items
        .iter()
        .filter(|t| t.doc.owner() == agent.id)
        .count();
    let queues = agents::owned_queues(ws, &agent.id)?;
    ctx.warn_all(queues.warnings);

    Ok(Outcome::Done(Response {
        agent: agent.view(),
        owner: agent.owner.clone(),
        created: format_time(agent.created),
        created_by: agent.created_by.clone(),
        retired_at: agent.retired_at.map(format_time),
        retired_by: agent.retired_by.clone(),
        children,
        assigned,
        owns: Owns {
            tasks: owned_tasks,
            queues: queues.items.len(),
        },
    }))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    let a = &r.agent;
    let mut out = format!(
        "{}  {}, {}, {}\n",
        a.id,
        a.role.as_deref().unwrap_or("no role"),
        a.grant,
        match (&r.retired_at, &r.retired_by) {
            (Some(at), Some(by)) => format!("retired at {at} by {by}"),
            _ => "live".to_string(),
        }
    );
    out.push_str(&format!(
        "parent: {}\nowner: {}\ncreated: {} by {}\n",
        a.parent.as_deref().unwrap_or("-"),
        r.owner,
        r.created,
        r.created_by
    ));
    out.push_str(&format!(
        "owns: {} tasks, {} queues\n",
        r.owns.tasks, r.owns.queues
    ));
    if r.children.is_empty() {
        out.push_str("children: none\n");
    } else {
        out.push_str("children:\n");
        for c in &r.children {
            out.push_str(&format!("  {c}\n"));
        }
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
