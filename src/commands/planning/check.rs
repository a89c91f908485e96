//! `task check`: mark acceptance criteria met, verifying command criteria by running them.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml_edit::{Array, InlineTable, Item, Value, value};

use super::common::{Locked, acts_as_owner, append_event, now_text, own_stamp};
use super::task::is_done;
use crate::dispatch::one_task::locate;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Mcp, Outcome, Refusal};
use crate::journal::view::Acceptance;
use crate::model::Grant;
use crate::model::task::{Status, TaskRef};
use crate::model::taskdoc::{Change, Stamp, Verify};

/// Check acceptance criteria (`--n N`, repeatable, or `--all`). A criterion whose text names a
/// command in backticks needs `--verify`: dacli runs that command (`sh -c`, in the work-tree
/// root) and records the result with the check. One failing item checks nothing.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    #[serde(rename = "ref")]
    #[arg(value_name = "REF")]
    reference: String,
    /// Criterion number (repeatable).
    #[arg(
        long = "n",
        value_name = "N",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    #[serde(default, rename = "items")]
    n: Vec<u32>,
    /// Every unchecked criterion.
    #[arg(long)]
    #[serde(default)]
    all: bool,
    /// Run the command of each command-verified criterion and record its result (rw only).
    #[arg(long)]
    #[serde(default)]
    verify: bool,
    /// One line of evidence, kept with the check.
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    evidence: Option<String>,
    /// Seconds each verification command may run.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    #[serde(default = "default_timeout")]
    timeout: u64,
}

fn default_timeout() -> u64 {
    600
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Verified {
    n: u32,
    command: String,
    exit_code: i64,
    duration_ms: i64,
    output: String,
}

#[derive(Debug, Serialize)]
pub struct Response {
    task: TaskRef,
    checked: Vec<u32>,
    verified: Vec<Verified>,
    acceptance: Acceptance,
    effect: &'static str,
    event: Option<String>,
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.clone();
    if let Some(e) = &req.evidence
        && (e.contains('\n') || e.trim().is_empty())
    {
        return Err(Error::usage("--evidence must be one non-empty line"));
    }
    let (project, id) = locate(ctx, &req.reference)?;
    let mut locked = Locked::take_id(ctx, &project, &id)?;
    let (view, _) = locked.folded(ws);
    let r = locked.task.reference();
    let criteria = view.criteria();
    let wanted: Vec<u32> = if req.all {
        criteria
            .iter()
            .filter(|c| !c.checked)
            .map(|c| c.n)
            .collect()
    } else {
        req.n.clone()
    };
    for n in &wanted {
        if *n == 0 || *n as usize > criteria.len() {
            return Err(Error::usage(format!(
                "--n {n}: {r} has criteria 1..{}",
                criteria.len()
            )));
        }
    }
    if view.status == Status::Done {
        return Ok(Outcome::Refused(is_done(&r, view.resolution())));
    }
    let is_owner = acts_as_owner(ctx, view.owner())?;
    if !is_owner && view.assignee() != Some(me.id.as_str()) {
        let who = view.assignee().unwrap_or("nobody");
        return Ok(Outcome::Refused(Refusal::new(
            "task.not_assignee",
            format!("{r} is assigned to {who}; only its owner or assignee checks criteria"),
            format!(
                "{r} is assigned to {who}; report what you found: `dacli note add finding \"…\" --about {r}`."
            ),
        )));
    }
    let selected: Vec<_> = criteria.iter().filter(|c| wanted.contains(&c.n)).collect();
    let needs_verify: Vec<_> = selected.iter().filter(|c| c.command.is_some()).collect();
    if !needs_verify.is_empty() && !req.verify {
        let c = needs_verify[0];
        return Ok(Outcome::Refused(Refusal::new(
            "dod.verify_required",
            format!(
                "criterion {} of {r} names a command (`{}`); checking it needs a verification run",
                c.n,
                c.command.as_deref().unwrap_or("")
            ),
            format!(
                "Run `dacli task check {r} --n {} --verify` (it runs `{}`).",
                c.n,
                c.command.as_deref().unwrap_or("")
            ),
        )));
    }
    if req.verify && !needs_verify.is_empty() && me.grant != Grant::Rw {
        let c = needs_verify[0];
        return Ok(Outcome::Refused(Refusal::new(
            "grant.read_only",
            "--verify runs a command and needs rw; your grant is ro",
            format!(
                "Ask {} to run `dacli task check {r} --n {} --verify`.",
                view.owner(),
                c.n
            ),
        )));
    }
    // Nothing new: every selected item already checked and no verification asked for.
    let verifying = req.verify && !needs_verify.is_empty();
    if selected.iter().all(|c| c.checked) && !verifying && req.evidence.is_none() {
        return Ok(Outcome::Done(Response {
            task: locked.task.task_ref_folded(),
            checked: Vec::new(),
            verified: Vec::new(),
            acceptance: acceptance(&view),
            effect: "unchanged",
            event: None,
        }));
    }
    // Run every verification first: one failure checks nothing.
    let commands: Vec<(u32, String)> = needs_verify
        .iter()
        .map(|c| (c.n, c.command.clone().unwrap_or_default()))
        .collect();
    let verifications = verify_all(ctx, ws.root(), &commands, req.timeout);
    let verifications = match verifications? {
        Ok(v) => v,
        Err(refused) => return Ok(Outcome::Refused(refused)),
    };
    let plain: Vec<(u32, String)> = selected
        .iter()
        .filter(|c| c.command.is_none())
        .map(|c| (c.n, c.text.clone()))
        .collect();
    let text_of = |n: u32| {
        criteria
            .iter()
            .find(|c| c.n == n)
            .map(|c| c.text.clone())
            .unwrap_or_default()
    };
    let verified_out: Vec<Verified> = verifications
        .iter()
        .map(|(n, v)| Verified {
            n: *n,
            command: v.command.clone(),
            exit_code: v.exit_code,
            duration_ms: v.duration_ms,
            output: v.output.clone(),
        })
        .collect();
    let checked: Vec<u32> = wanted.clone();
    let at = now_text(ctx);
    if is_owner {
        locked.sync_first(ctx)?;
        let mut doc = locked.task.doc.clone();
        let mut changed = false;
        let st = own_stamp(&at, &me.id);
        if !plain.is_empty() {
            changed |= apply(&mut doc, &plain, None, st, &r)? == Change::Applied;
        }
        for (n, v) in &verifications {
            changed |= apply(&mut doc, &[(*n, text_of(*n))], Some(v), st, &r)? == Change::Applied;
        }
        if let Some(e) = &req.evidence {
            for n in &checked {
                doc.comment(&format!("evidence {n}: {}", e.trim()), st);
            }
            changed = true;
        }
        let acc = acceptance(&doc);
        if changed {
            locked.write(ctx, doc)?;
        }
        return Ok(Outcome::Done(Response {
            task: locked.task.task_ref_folded(),
            checked,
            verified: verified_out,
            acceptance: acc,
            effect: if changed { "applied" } else { "unchanged" },
            event: None,
        }));
    }
    // Assignee, not owner: one event for the plain items, one per verified item.
    let body = req
        .evidence
        .clone()
        .map(|e| format!("{}\n", e.trim()))
        .unwrap_or_default();
    let mut last_event = None;
    let mut after = view.clone();
    if !plain.is_empty() {
        let ev = append_event(
            ctx,
            "check",
            &locked.task.task.id,
            vec![("items", items(&plain))],
            body.clone(),
        )?;
        let _ = after.check(
            &plain,
            None,
            Stamp {
                at: &at,
                by: &me.id,
                event: Some(&ev.id),
            },
        );
        last_event = Some(ev.envelope.id);
    }
    for (n, v) in &verifications {
        let one = [(*n, text_of(*n))];
        let ev = append_event(
            ctx,
            "check",
            &locked.task.task.id,
            vec![("items", items(&one)), ("verify", verify_item(v))],
            body.clone(),
        )?;
        let _ = after.check(
            &one,
            Some(v),
            Stamp {
                at: &at,
                by: &me.id,
                event: Some(&ev.id),
            },
        );
        last_event = Some(ev.envelope.id);
    }
    Ok(Outcome::Done(Response {
        task: locked.task.task_ref_folded(),
        checked,
        verified: verified_out,
        acceptance: acceptance(&after),
        effect: "proposed",
        event: last_event,
    }))
}

/// Runs each criterion's own command (`sh -c`, in the work-tree root), reporting progress
/// per criterion; the first failure is the `dod.verify_failed` refusal and nothing is
/// recorded. A cancelled call stops the running command and records nothing either.
pub(super) fn verify_all(
    ctx: &Ctx,
    root: &std::path::Path,
    commands: &[(u32, String)],
    timeout: u64,
) -> Result<Result<Vec<(u32, Verify)>, Refusal>, Error> {
    let commit = crate::git::head_sha(root);
    let mut out = Vec::new();
    let total = commands.len() as u64;
    let progress = ctx.progress_of(format!("verifying {total} criterion(s)"), Some(total));
    let cancel = ctx.cancel_token();
    for (done, (n, command)) in commands.iter().enumerate() {
        progress.advance(
            done as u64,
            format!("verifying criterion {n} ({} of {total})", done + 1),
        );
        let ran =
            crate::exec::run_shell(command, root, Duration::from_secs(timeout), cancel.as_ref())
                .map_err(|e| {
                    Error::new(
                        crate::dispatch::ErrorKind::Operational,
                        "E_COMMAND_FAILED",
                        format!("cannot run `{command}`: {e}"),
                    )
                })?;
        if ran.exit_code != 0 {
            let why = if ran.timed_out {
                format!("timed out after {timeout} s")
            } else {
                ran.last_line.clone()
            };
            return Ok(Err(Refusal::new(
                "dod.verify_failed",
                format!(
                    "`{command}` exited {} for criterion {n}: nothing was checked",
                    ran.exit_code
                ),
                format!(
                    "`{command}` exited {} (`{why}`): fix the cause, then check again.",
                    ran.exit_code
                ),
            )));
        }
        out.push((
            *n,
            Verify {
                command: command.clone(),
                exit_code: ran.exit_code,
                output: ran.output,
                duration_ms: ran.duration_ms,
                commit: commit.clone(),
            },
        ));
    }
    progress.advance(total, format!("verified {total} criterion(s)"));
    Ok(Ok(out))
}

fn apply(
    doc: &mut crate::model::taskdoc::TaskDoc,
    items: &[(u32, String)],
    verify: Option<&Verify>,
    st: Stamp<'_>,
    r: &str,
) -> Result<Change, Error> {
    doc.check(items, verify, st).map_err(|e| {
        Error::new(
            crate::dispatch::ErrorKind::Conflict,
            "E_CONFLICT",
            format!("{r}: cannot check: {}", e.as_str()),
        )
    })
}

fn acceptance(doc: &crate::model::taskdoc::TaskDoc) -> Acceptance {
    let c = doc.criteria();
    Acceptance {
        checked: c.iter().filter(|c| c.checked).count(),
        total: c.len(),
    }
}

fn items(list: &[(u32, String)]) -> Item {
    let mut arr = Array::new();
    for (n, text) in list {
        let mut t = InlineTable::new();
        t.insert("n", Value::from(i64::from(*n)));
        t.insert("text", Value::from(text.as_str()));
        arr.push(Value::InlineTable(t));
    }
    value(arr)
}

fn verify_item(v: &Verify) -> Item {
    let mut t = InlineTable::new();
    t.insert("command", Value::from(v.command.as_str()));
    t.insert("exit_code", Value::from(v.exit_code));
    t.insert("output", Value::from(v.output.as_str()));
    t.insert("duration_ms", Value::from(v.duration_ms));
    if let Some(c) = &v.commit {
        t.insert("commit", Value::from(c.as_str()));
    }
    value(t)
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    let mut out = match r.effect {
        "unchanged" => format!("{}: already checked; nothing written\n", r.task.reference),
        _ => format!(
            "{}: checked {} ({}/{}){}\n",
            r.task.reference,
            r.checked
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            r.acceptance.checked,
            r.acceptance.total,
            r.event
                .as_deref()
                .map(|e| format!(" — event {e}, applied at the owner's sync"))
                .unwrap_or_default()
        ),
    };
    for v in &r.verified {
        out.push_str(&format!(
            "  verified {}: `{}` exit {} in {} ms\n",
            v.n, v.command, v.exit_code, v.duration_ms
        ));
    }
    out
}

pub(super) fn commands() -> Vec<Command> {
    vec![Command::new("task.check", Class::Append, run, render).mcp(Mcp::Tier1("check_task"))]
}
