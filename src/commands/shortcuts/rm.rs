//! `shortcut rm`: the owner deletes a shortcut nothing refers to.

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::objects::shortcuts;
use crate::ops::{self, Decided};

/// Delete a shortcut you own. A shortcut a role's toolkit or the definition of done names
/// stays until those references are removed.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The shortcut's name.
    name: String,
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    shortcut: String,
    effect: &'static str,
}

pub(super) fn command() -> Command {
    Command::new("shortcut.rm", Class::Mutate, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    let name = req.name.as_str();
    // Loading first checks the name, so the lock path is built from a slug.
    shortcuts::load(ws, name)?;
    let mut warnings = Vec::new();
    let removed = ops::shortcuts::remove(ws, &me, name, &mut warnings);
    ctx.warn_all(warnings);
    match removed? {
        Decided::Done(()) => Ok(Outcome::Done(Response {
            shortcut: name.to_string(),
            effect: "applied",
        })),
        Decided::Refused(r) => Ok(Outcome::Refused(r)),
    }
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    format!("removed shortcut {}\n", r.shortcut)
}
