//! `dacli agent list`.

use serde::{Deserialize, Serialize};

use crate::dispatch::text::table;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::model::agent::{AgentStatus, AgentView};
use crate::objects::agents;

/// List agents, sorted by id: the live ones unless `--status` says otherwise.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Which agents to show.
    #[arg(long, value_enum, default_value = "live")]
    #[serde(default)]
    status: StatusFilter,
    /// Only agents holding this role.
    #[arg(long, value_name = "NAME")]
    #[serde(default)]
    role: Option<String>,
    /// Only the direct children of this agent.
    #[arg(long, value_name = "AGENT")]
    #[serde(default)]
    parent: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
enum StatusFilter {
    #[default]
    Live,
    Retired,
    All,
}

impl StatusFilter {
    fn admits(self, status: AgentStatus) -> bool {
        match self {
            StatusFilter::Live => status == AgentStatus::Live,
            StatusFilter::Retired => status == AgentStatus::Retired,
            StatusFilter::All => true,
        }
    }
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    agents: Vec<AgentView>,
}

pub(super) fn command() -> Command {
    Command::new("agent.list", Class::Read, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let listing = agents::list(ws)?;
    ctx.warn_all(listing.warnings);
    let agents = listing
        .items
        .iter()
        .filter(|a| req.status.admits(a.status))
        .filter(|a| req.role.is_none() || a.role == req.role)
        .filter(|a| req.parent.is_none() || a.parent == req.parent)
        .map(|a| a.view())
        .collect();
    Ok(Outcome::Done(Response { agents }))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    if r.agents.is_empty() {
        return "no agents match\n".to_string();
    }
    let mut rows = vec![
        ["ID", "ROLE", "GRANT", "STATUS", "PARENT"]
            .map(String::from)
            .to_vec(),
    ];
    for a in &r.agents {
        rows.push(vec![
            a.id.clone(),
            a.role.clone().unwrap_or_else(|| "-".into()),
            a.grant.to_string(),
            status_word(a.status).to_string(),
            a.parent.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    table(&rows, &[])
}

fn status_word(s: AgentStatus) -> &'static str {
    match s {
        AgentStatus::Live => "live",
        AgentStatus::Retired => "retired",
    }
}
