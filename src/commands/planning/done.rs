//! `task done`: finish through the definition of done, or close without it (owner only).

use super::common::{Locked, acts_as_owner, append_event, now_text, own_stamp};
use crate::dispatch::one_task::locate;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Mcp, Outcome, Refusal};
use crate::model::Grant;
use crate::model::dod::DodReport;
use crate::model::task::{Status, TaskRef};
use crate::model::taskdoc::{Change, one_line};
use crate::policy::dod::{evaluate, refusal};
use serde::{Deserialize, Serialize};

/// Finish a task: every acceptance criterion checked (command criteria verified), the test
/// shortcut's latest run for it passed, lint clean, the required note present — whatever the
/// workspace's definition of done asks. A refusal lists every unmet condition. The owner may
/// instead close it as unverified or abandoned, with a reason.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    #[serde(rename = "ref")]
    #[arg(value_name = "REF")]
    reference: String,
    /// What was done (kept in the finish event).
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    summary: Option<String>,
    /// Close as `unverified` without the definition of done (owner only; needs --reason).
    #[arg(long, requires = "reason", conflicts_with = "abandon")]
    #[serde(default)]
    allow_unverified: bool,
    /// Close as `abandoned` (owner only; needs --reason).
    #[arg(long, requires = "reason")]
    #[serde(default)]
    abandon: bool,
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    reason: Option<String>,
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    task: TaskRef,
    status: Status,
    resolution: Option<String>,
    dod: DodReport,
    applied_events: Vec<String>,
    effect: &'static str,
    event: Option<String>,
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.clone();
    let (project, id) = locate(ctx, &req.reference)?;
    let mut locked = Locked::take_id(ctx, &project, &id)?;
    let (view, _) = locked.folded(ws);
    let r = locked.task.reference();
    let facts = locked.facts(ws, &view);
    let report = evaluate(&facts);
    if view.status == Status::Done {
        return Ok(Outcome::Done(Response {
            task: locked.task.task_ref_folded(),
            status: Status::Done,
            resolution: view.resolution().map(str::to_string),
            dod: report,
            applied_events: Vec::new(),
            effect: "unchanged",
            event: None,
        }));
    }
    let owner = view.owner().to_string();
    let is_owner = acts_as_owner(ctx, &owner)?;
    let closing = req.allow_unverified || req.abandon;
    if closing && !is_owner {
        return Ok(Outcome::Refused(Refusal::new(
            "task.not_owner",
            format!("only {owner} may close {r} without the definition of done"),
            format!(
                "Only {owner} may close {r}: `dacli ask {r} \"…\"`, or finish it with `dacli task done {r}`."
            ),
        )));
    }
    let at = now_text(ctx);
    if is_owner {
        let synced = locked.sync_first(ctx)?;
        let mut doc = locked.task.doc.clone();
        let st = own_stamp(&at, &me.id);
        let (change, dod) = if closing {
            let reason = one_line(req.reason.as_deref().unwrap_or(""));
            if reason.is_empty() {
                return Err(Error::usage("--reason must not be empty"));
            }
            let resolution = if req.abandon {
                "abandoned"
            } else {
                "unverified"
            };
            (
                doc.close(resolution, reason, st)
                    .unwrap_or(Change::Unchanged),
                report,
            )
        } else {
            let facts = locked.facts(ws, &doc);
            let report = evaluate(&facts);
            if let Some(refused) = refusal(&report) {
                return Ok(Outcome::Refused(refused));
            }
            (doc.finish(st).unwrap_or(Change::Unchanged), report)
        };
        let resolution = doc.resolution().map(str::to_string);
        if change == Change::Applied {
            locked.write(ctx, doc)?;
        }
        return Ok(Outcome::Done(Response {
            task: locked.task.task_ref_folded(),
            status: Status::Done,
            resolution,
            dod,
            applied_events: synced.applied,
            effect: if change == Change::Applied {
                "applied"
            } else {
                "unchanged"
            },
            event: None,
        }));
    }
    if view.assignee() != Some(me.id.as_str()) {
        let who = view.assignee().unwrap_or("nobody");
        return Ok(Outcome::Refused(Refusal::new(
            "task.not_assignee",
            format!("{r} is assigned to {who}; only its owner or assignee finishes it"),
            format!(
                "{r} is assigned to {who}; report what you found: `dacli note add finding \"…\" --about {r}`."
            ),
        )));
    }
    // The assignee: what it could satisfy itself refuses; what only the owner (or an rw agent)
    // can satisfy travels with the finish event, and the owner's sync completes it.
    let mut report = report;
    let command_criterion = |item: &str| {
        facts
            .criteria
            .iter()
            .any(|c| c.n.to_string() == item && c.command.is_some())
    };
    // Whether the caller could run the test shortcut itself (its toolkit, the shortcut's
    // roles, and its grant against the shortcut's effect).
    let may_run_test = |name: &str| -> Result<bool, Error> {
        let shortcut = match crate::objects::shortcuts::load(ws, name) {
            Ok(s) => s.shortcut,
            Err(crate::objects::Error::NotFound { .. }) => return Ok(false),
            Err(e) => return Err(e.into()),
        };
        let role = match me.role.as_deref() {
            Some(r) if r != "root" => crate::objects::roles::load(ws, r).ok(),
            _ => None,
        };
        let effect_ok =
            me.grant == Grant::Rw || shortcut.effect == Some(crate::model::shortcut::Effect::Read);
        Ok(crate::policy::guard::in_toolkit(role.as_ref(), &shortcut) && effect_ok)
    };
    let test_owner_only = match &facts.test {
        Some(t) => !may_run_test(&t.shortcut)?,
        None => false,
    };
    for u in &mut report.unmet {
        u.owner_only = match u.policy.as_str() {
            "dod.test_not_run" | "dod.test_failed" => test_owner_only,
            // Checking a command criterion needs --verify, which needs rw.
            "dod.unchecked_acceptance" => me.grant != Grant::Rw && command_criterion(&u.item),
            "dod.unverified_criterion" => me.grant != Grant::Rw,
            "dod.lint_failed" => true,
            "dod.note_required" => me.grant != Grant::Rw && u.item != "finding" && u.item != "any",
            _ => false,
        };
    }
    let own: Vec<_> = report
        .unmet
        .iter()
        .filter(|u| !u.owner_only)
        .cloned()
        .collect();
    if !own.is_empty() {
        let mine = DodReport {
            passed: false,
            unmet: own,
        };
        if let Some(refused) = refusal(&mine) {
            return Ok(Outcome::Refused(refused));
        }
    }
    let body = req
        .summary
        .as_deref()
        .map(|s| format!("{}\n", s.trim()))
        .unwrap_or_default();
    let ev = append_event(ctx, "finish", &locked.task.task.id, vec![], body)?;
    Ok(Outcome::Done(Response {
        task: locked.task.task_ref_folded(),
        status: if report.passed {
            Status::Done
        } else {
            view.status
        },
        resolution: report.passed.then(|| "completed".to_string()),
        dod: report,
        applied_events: Vec::new(),
        effect: "proposed",
        event: Some(ev.envelope.id),
    }))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    let mut out = match r.effect {
        "unchanged" => format!(
            "{}: already done ({})\n",
            r.task.reference,
            r.resolution.as_deref().unwrap_or("completed")
        ),
        "proposed" => format!(
            "{}: finish requested (event {}); the owner's sync completes it\n",
            r.task.reference,
            r.event.as_deref().unwrap_or("")
        ),
        _ => format!(
            "{}: done ({})\n",
            r.task.reference,
            r.resolution.as_deref().unwrap_or("completed")
        ),
    };
    for u in r.dod.unmet.iter().filter(|u| u.owner_only) {
        out.push_str(&format!(
            "  waiting on the owner: {} {}\n",
            u.policy, u.detail
        ));
    }
    out
}

pub(super) fn commands() -> Vec<Command> {
    vec![Command::new("task.done", Class::Append, run, render).mcp(Mcp::Tier1("finish_task"))]
}
