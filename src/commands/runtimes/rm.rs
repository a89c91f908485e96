//! `runtime rm`: the owner deletes an adapter no role routes to.

use serde::{Deserialize, Serialize};

use super::{all_routes, routed_by};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome, Refusal};
use crate::objects::{agents, runtimes};

/// Delete a runtime adapter you own. An adapter a role routes to (the role's `runtime` key)
/// stays until those roles name another runtime or none.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The runtime's name.
    name: String,
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    runtime: String,
    effect: &'static str,
}

pub(super) fn command() -> Command {
    Command::new("runtime.rm", Class::Mutate, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    let name = req.name.as_str();
    // Loading first checks the name, so the lock path is built from a slug.
    runtimes::load(ws, name)?;
    let _lock = ws.fs.lock(&ws.lock_path(&runtimes::lock_name(name)))?;
    let located = runtimes::load(ws, name)?;
    let owner = &located.runtime.owner;
    if !agents::acts_as_owner(ws, &me, owner)? {
        return Ok(Outcome::Refused(Refusal::new(
            "runtime.not_owner",
            format!("runtime {name} belongs to {owner}"),
            format!("Ask {owner} to remove runtime {name}."),
        )));
    }
    let roles = routed_by(&all_routes(ctx)?, name);
    if !roles.is_empty() {
        let flags: Vec<String> = roles.iter().map(|r| format!("--role {r}")).collect();
        return Ok(Outcome::Refused(Refusal::new(
            "runtime.in_use",
            format!(
                "runtime {name} is routed to by roles {} (their `runtime` key)",
                roles.join(", ")
            ),
            format!(
                "Clear the routes first: `dacli runtime route --clear {}` (or route those roles to another runtime).",
                flags.join(" ")
            ),
        )));
    }
    runtimes::remove(ws, name)?;
    Ok(Outcome::Done(Response {
        runtime: name.to_string(),
        effect: "applied",
    }))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    format!("removed runtime {}\n", r.runtime)
}
