//! `shortcut rm`: the owner deletes a shortcut nothing refers to.

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome, Refusal};
use crate::objects::{agents, roles, shortcuts};

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
    let _lock = ws.fs.lock(&ws.lock_path(&shortcuts::lock_name(name)))?;
    let located = shortcuts::load(ws, name)?;
    let owner = &located.shortcut.owner;
    if !agents::acts_as_owner(ws, &me, owner)? {
        return Ok(Outcome::Refused(Refusal::new(
            "shortcut.not_owner",
            format!("shortcut {name} belongs to {owner}"),
            format!("Ask {owner} to remove shortcut {name}."),
        )));
    }
    let listing = roles::list(ws)?;
    ctx.warn_all(listing.warnings);
    let in_toolkits: Vec<String> = listing
        .items
        .iter()
        .filter(|r| r.shortcuts.iter().any(|s| s == name))
        .map(|r| r.name.clone())
        .collect();
    let is_test = ws
        .config
        .doc
        .get("definition_of_done")
        .and_then(|d| d.get("test_shortcut"))
        .and_then(|v| v.as_str())
        == Some(name);
    if !in_toolkits.is_empty() || is_test {
        let mut users = Vec::new();
        let mut steps = Vec::new();
        if !in_toolkits.is_empty() {
            users.push(format!("the toolkit of roles {}", in_toolkits.join(", ")));
            steps.push(format!(
                "remove it from `shortcuts` of {} (`dacli role edit <role> --shortcut …`)",
                in_toolkits.join(", ")
            ));
        }
        if is_test {
            users.push("`definition_of_done.test_shortcut`".to_string());
            steps
                .push("from `definition_of_done.test_shortcut` in config.toml (ask a-root)".into());
        }
        let mut next = steps.join(", and ");
        if let Some(first) = next.get(..1) {
            next = format!("{}{}", first.to_uppercase(), &next[1..]);
        }
        return Ok(Outcome::Refused(Refusal::new(
            "shortcut.in_use",
            format!("shortcut {name} is named by {}", users.join(" and ")),
            format!("{next} first."),
        )));
    }
    shortcuts::remove(ws, name)?;
    Ok(Outcome::Done(Response {
        shortcut: name.to_string(),
        effect: "applied",
    }))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    format!("removed shortcut {}\n", r.shortcut)
}
