//! `runtime route`: set (or clear) the `runtime` key of roles, which names the adapter their
//! agents run in. The role's owner rewrites the role; the runtime's lock is held while it
//! does, so a concurrent `runtime rm` either sees the route or the route sees no runtime.

use serde::{Deserialize, Serialize};
use toml_edit::Value;

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome, Refusal};
use crate::model::runtime::role_runtime;
use crate::objects::{self, agents, field_problem, roles, runtimes, set_keeping_decor};
use crate::store::Document;

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
    // Role locks in name order, then the runtime's (the order `runtime rm` agrees with).
    let mut locks = Vec::new();
    for r in &names {
        locks.push(ws.fs.lock(&ws.lock_path(&roles::lock_name(r)))?);
    }
    if let Some(t) = &target {
        locks.push(ws.fs.lock(&ws.lock_path(&runtimes::lock_name(t)))?);
        runtimes::load(ws, t)?;
    }
    let mut loaded = Vec::new();
    for r in &names {
        let (role, doc) = roles::load_with_doc(ws, r)?;
        if !agents::acts_as_owner(ws, &me, &role.owner)? {
            return Ok(Outcome::Refused(Refusal::new(
                "role.not_owner",
                format!("role {} belongs to {}", role.name, role.owner),
                format!(
                    "Ask {} to route role {} (`dacli runtime route …`).",
                    role.owner, role.name
                ),
            )));
        }
        let before = role_runtime(&doc.front)
            .map_err(|e| {
                Error::from(objects::Error::malformed(field_problem(
                    ws,
                    &roles::file(ws, r),
                    e,
                )))
            })?
            .map(String::from);
        loaded.push((r.clone(), doc, before));
    }
    let mut changes = Vec::new();
    let mut wrote = false;
    for (name, doc, before) in loaded {
        if before != target {
            let mut front = doc.front.clone();
            match &target {
                Some(t) => set_keeping_decor(&mut front, "runtime", Value::from(t.as_str())),
                None => {
                    front.remove("runtime");
                }
            }
            set_keeping_decor(&mut front, "rev", Value::from(ctx.new_ulid().to_string()));
            roles::write(ws, &name, &Document::new(front, doc.body))?;
            wrote = true;
        }
        changes.push(Change {
            role: name,
            before,
            after: target.clone(),
        });
    }
    drop(locks);
    Ok(Outcome::Done(Response {
        runtime: target,
        roles: changes,
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
