//! `runtime rm`: the owner deletes an adapter no role routes to.

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::objects::runtimes;
use crate::ops::{self, Decided};

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
    let mut warnings = Vec::new();
    let removed = ops::runtimes::remove(ws, &me, name, &mut warnings);
    ctx.warn_all(warnings);
    match removed? {
        Decided::Done(()) => Ok(Outcome::Done(Response {
            runtime: name.to_string(),
            effect: "applied",
        })),
        Decided::Refused(r) => Ok(Outcome::Refused(r)),
    }
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    format!("removed runtime {}\n", r.runtime)
}
