//! `runtime route`: set (or clear) the `runtime` key of roles, which names the adapter their
//! agents run in. The role's owner rewrites the role; the runtime's lock is held while it
//! does, so a concurrent `runtime rm` either sees the route or the route sees no runtime.

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::objects::{roles, runtimes};
use crate::ops::{self, Decided};
use serde::{Deserialize, Serialize};

/// Route roles to a runtime adapter: sets each role's `runtime` key, naming the coding-agent
/// CLI its agents run in. `runtime rm` is refused while a role routes to the runtime.
///
/// With --clear (and no NAME) the roles' `runtime` key is removed instead.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The runtime to route to (omit it with --clear).
    name: Option<String>,
    /// A role to route (repeatable).
    #[arg(long = "role", value_name = "ROLE", required = true)]
    #[serde(default)]
    roles: Vec<String>,
    /// Remove the roles' `runtime` key instead of setting it.
    #[arg(long, conflicts_with = "name")]
    #[serde(default)]
    clear: bool,
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
struct Change {
    role: String,
    before: Option<String>,
    after: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Response {
    runtime: Option<String>,
    roles: Vec<Change>,
    effect: &'static str,
}

pub(super) fn command() -> Command {
    Command::new("runtime.route", Class::Mutate, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    let target = match (&req.name, req.clear) {
        (Some(name), false) => Some(name.clone()),
        (None, true) => None,
        (Some(_), true) => return Err(Error::usage("give NAME or --clear, not both")),
        (None, false) => {
            return Err(Error::usage(
                "give the runtime to route to (NAME), or --clear to remove the route",
            ));
        }
    };
    let mut names = req.roles.clone();
    names.sort();
    names.dedup();
    if names.is_empty() {
        return Err(Error::usage("give at least one --role"));
    }
    // Loading first checks the names, so the lock paths are built from slugs.
    for r in &names {
        roles::load(ws, r)?;
    }
    if let Some(t) = &target {
        runtimes::load(ws, t)
            .map_err(|e| Error::from(e).hint("list runtimes with `dacli runtime list`"))?;
    }
    let revs: Vec<_> = names.iter().map(|_| ctx.new_ulid()).collect();
    let (changes, wrote) = match ops::runtimes::route(ws, &me, &names, target.as_deref(), &revs)? {
        Decided::Done(done) => done,
        Decided::Refused(r) => return Ok(Outcome::Refused(r)),
    };
    Ok(Outcome::Done(Response {
        runtime: target,
        roles: changes
            .into_iter()
            .map(|c| Change {
                role: c.role,
                before: c.before,
                after: c.after,
            })
            .collect(),
        effect: if wrote { "applied" } else { "unchanged" },
    }))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    let mut out = String::new();
    for c in &r.roles {
        let line = match (&c.before, &c.after) {
            (b, a) if b == a => format!("role {}: unchanged\n", c.role),
            (_, Some(a)) => format!("role {} -> runtime {a}\n", c.role),
            (_, None) => format!("role {}: route removed\n", c.role),
        };
        out.push_str(&line);
    }
    out
}
