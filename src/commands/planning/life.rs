//! Task lifecycle: `claim`, `release`, `assign`, `handover`, `block`, `unblock`, `comment`,
//! `reopen`, `depend` (COMMANDS.md §5). Dual commands mutate for the owner and append the
//! matching event for anyone else, which every reader folds in at once.

use serde::{Deserialize, Serialize};
use toml_edit::value;

use super::common::{
    Dual, DualResult, Locked, acts_as_owner, append_event, now_text, own_stamp, reaches, run_dual,
};
use super::task::{cycle_refusal, is_done, not_owner};
use crate::dispatch::one_task::OneTask;
use crate::dispatch::one_task::locate;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Mcp, Outcome, Refusal};
use crate::journal::snapshot::Snapshot;
use crate::journal::wip::{active_for_role_in, agent_roles, guard_role};
use crate::model::Grant;
use crate::model::agent::AgentStatus;
use crate::model::role::Role;
use crate::model::task::{DEP_TYPES, Dependency, Status, TaskRef};
use crate::model::taskdoc::{Change, TaskDoc, one_line};
use crate::objects;
use crate::policy::guard::{out_of_scope, wip_cap};
use crate::policy::scope::Scope;

fn render_dual(r: &DualResult, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    let how = match (r.effect, &r.event) {
        ("proposed", Some(e)) => format!(" (event {e}; visible now, applied at the owner's sync)"),
        ("unchanged", _) => " (already so; nothing written)".to_string(),
        _ => String::new(),
    };
    format!(
        "{}: {}{}{}\n",
        r.task.reference,
        r.status,
        r.assignee
            .as_deref()
            .map(|a| format!(", assigned to {a}"))
            .unwrap_or_default(),
        how
    )
}

/// Take a task: you become its assignee and it moves to active. The owner's claim is applied
/// at once; anyone else's is an event every reader sees immediately.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimRequest {
    #[serde(rename = "ref")]
    #[arg(value_name = "REF")]
    reference: String,
}

impl Classify for ClaimRequest {}

fn claimed_since(doc: &TaskDoc) -> String {
    doc.log()
        .iter()
        .rev()
        .find(|l| l.text == "claimed" || l.text.starts_with("assigned "))
        .map(|l| l.at.clone())
        .unwrap_or_else(|| "earlier".into())
}

/// The role checks of the guard (COMMANDS.md §1.4 step 6) for an agent taking a task: its
/// role's compiled scope and the active tasks, folded, that count against its `wip` cap.
struct RoleGate {
    role: Role,
    scope: Scope,
    active: Vec<String>,
}

impl RoleGate {
    /// The gate for `agent`; `None` for root (exempt) and agents without a (readable) role.
    fn of(ctx: &Ctx, agent: &str) -> Result<Option<RoleGate>, Error> {
        let ws = ctx.ws()?;
        let Some(role) = guard_role(ws, agent)? else {
            return Ok(None);
        };
        let scope = Scope::new(&role.scope, &role.out_of_scope).map_err(|why| {
            Error::new(
                crate::dispatch::ErrorKind::Operational,
                "E_MALFORMED",
                format!(
                    "{} is malformed: schema ({why})",
                    ws.display(&objects::roles::file(ws, &role.name))
                ),
            )
        })?;
        let active = if role.wip > 0 {
            let snap = Snapshot::load(ws, &|f| crate::policy::dod::evaluate(f).passed)?;
            ctx.warn_all(snap.warnings.clone());
            active_for_role_in(&snap, &agent_roles(ws)?, &role.name)
        } else {
            Vec::new()
        };
        Ok(Some(RoleGate {
            role,
            scope,
            active,
        }))
    }

    /// `role.wip_cap`, then `role.out_of_scope` for a task with `traces`; `instead` ends the
    /// scope refusal's `next`.
    fn check(&self, reference: &str, traces: &[String], instead: &str) -> Option<Refusal> {
        wip_cap(&self.role, &self.active)
            .or_else(|| out_of_scope(&self.role, reference, &self.scope.outside(traces), instead))
    }
}

fn claim(ctx: &Ctx, req: ClaimRequest) -> Result<Outcome<DualResult>, Error> {
    let me = ctx.identity()?.agent.id.clone();
    let me2 = me.clone();
    let gate = RoleGate::of(ctx, &me)?;
    run_dual(
        ctx,
        &req.reference,
        true,
        Dual {
            kind: "claim",
            fields: vec![],
            body: String::new(),
        },
        &|view, t| {
            let r = t.reference();
            if view.status == Status::Done {
                return Some(Err(is_done(&r, view.resolution())));
            }
            if view.assignee() == Some(me.as_str()) {
                return Some(Ok(()));
            }
            let instead = format!("ask {} to assign a covering role", view.owner());
            if let Some(refused) = gate
                .as_ref()
                .and_then(|g| g.check(&r, &view.traces(), &instead))
            {
                return Some(Err(refused));
            }
            view.assignee().map(|a| {
                Err(Refusal::new(
                    "task.already_claimed",
                    format!("{r} is taken by {a}"),
                    format!(
                        "{r} is taken by {a} since {}; pick another with `dacli task list --ready`, or ask them.",
                        claimed_since(view)
                    ),
                ))
            })
        },
        &|doc, st| doc.claim(&me2, st),
    )
}

/// Give a task back: the assignee is removed and an active task returns to open.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseRequest {
    #[serde(rename = "ref")]
    #[arg(value_name = "REF")]
    reference: String,
    /// Why (kept in the event).
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    reason: Option<String>,
}

impl Classify for ReleaseRequest {}

fn not_assignee(r: &str, assignee: Option<&str>) -> Refusal {
    let who = assignee.unwrap_or("nobody");
    Refusal::new(
        "task.not_assignee",
        format!("{r} is assigned to {who}, not to you"),
        format!(
            "{r} is assigned to {who}; report what you found: `dacli note add finding \"…\" --about {r}`."
        ),
    )
}

fn release(ctx: &Ctx, req: ReleaseRequest) -> Result<Outcome<DualResult>, Error> {
    let me = ctx.identity()?.agent.id.clone();
    let me2 = me.clone();
    run_dual(
        ctx,
        &req.reference,
        true,
        Dual {
            kind: "release",
            fields: vec![],
            body: req.reason.clone().unwrap_or_default(),
        },
        &|view, t| {
            let r = t.reference();
            if view.status == Status::Done {
                return Some(Err(is_done(&r, view.resolution())));
            }
            if view.assignee() != Some(me.as_str()) {
                return Some(Err(not_assignee(&r, view.assignee())));
            }
            None
        },
        &|doc, st| doc.release(&me2, st),
    )
}

/// Move a task to blocked, saying why. Open and active tasks can be blocked.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockRequest {
    #[serde(rename = "ref")]
    #[arg(value_name = "REF")]
    reference: String,
    /// What blocks it (one line).
    #[arg(long, value_name = "TEXT")]
    reason: String,
    /// The task or event it waits on.
    #[arg(long, value_name = "REF|EVENT")]
    #[serde(default)]
    on: Option<String>,
}

impl Classify for BlockRequest {}

fn block(ctx: &Ctx, req: BlockRequest) -> Result<Outcome<DualResult>, Error> {
    let reason = one_line(&req.reason).to_string();
    if reason.is_empty() {
        return Err(Error::usage("--reason must not be empty"));
    }
    let by = match &req.on {
        None => None,
        // A task, or else an event (a question, say) by its ULID.
        Some(on) => match locate(ctx, on) {
            Ok((_, id)) => Some(id),
            Err(e) => match crate::model::id::parse_ulid(on) {
                Some(u)
                    if crate::journal::index::read(ctx.ws()?)?
                        .entries
                        .binary_search_by(|x| x.id().cmp(&u.to_string()))
                        .is_ok() =>
                {
                    Some(u.to_string())
                }
                _ => return Err(e),
            },
        },
    };
    let mut fields = vec![("reason", value(reason.as_str()))];
    if let Some(b) = &by {
        fields.push(("by", value(b.as_str())));
    }
    let reason2 = reason.clone();
    run_dual(
        ctx,
        &req.reference,
        true,
        Dual {
            kind: "block",
            fields,
            body: String::new(),
        },
        &|view, t| {
            if view.status == Status::Done {
                return Some(Err(is_done(&t.reference(), view.resolution())));
            }
            (view.status == Status::Blocked).then_some(Ok(()))
        },
        &|doc, st| doc.block(&reason2, st),
    )
}

/// Move a blocked task back: to active if it has an assignee, else to open.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnblockRequest {
    #[serde(rename = "ref")]
    #[arg(value_name = "REF")]
    reference: String,
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    reason: Option<String>,
}

impl Classify for UnblockRequest {}

fn unblock(ctx: &Ctx, req: UnblockRequest) -> Result<Outcome<DualResult>, Error> {
    run_dual(
        ctx,
        &req.reference,
        true,
        Dual {
            kind: "unblock",
            fields: vec![],
            body: req.reason.clone().unwrap_or_default(),
        },
        &|view, t| {
            if view.status == Status::Done {
                return Some(Err(is_done(&t.reference(), view.resolution())));
            }
            (view.status != Status::Blocked).then_some(Ok(()))
        },
        &|doc, st| doc.unblock(st),
    )
}

/// Comment on a task: an event whose first line the owner's sync logs.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommentRequest {
    #[serde(rename = "ref")]
    #[arg(value_name = "REF")]
    reference: String,
    /// The comment.
    text: String,
}

impl Classify for CommentRequest {}

fn comment(ctx: &Ctx, req: CommentRequest) -> Result<Outcome<DualResult>, Error> {
    if req.text.trim().is_empty() {
        return Err(Error::usage("TEXT must not be empty"));
    }
    let text = req.text.clone();
    run_dual(
        ctx,
        &req.reference,
        false,
        Dual {
            kind: "comment",
            fields: vec![],
            body: format!("{}\n", req.text.trim_end()),
        },
        &|_, _| None,
        &|doc, st| Ok(doc.comment(&text, st)),
    )
}

/// Reopen a done task (owner), or request a reopen (anyone else; it waits for the owner).
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReopenRequest {
    #[serde(rename = "ref")]
    #[arg(value_name = "REF")]
    reference: String,
    #[arg(long, value_name = "TEXT")]
    reason: String,
}

impl Classify for ReopenRequest {}

fn reopen(ctx: &Ctx, req: ReopenRequest) -> Result<Outcome<DualResult>, Error> {
    let reason = one_line(&req.reason).to_string();
    if reason.is_empty() {
        return Err(Error::usage("--reason must not be empty"));
    }
    let reason2 = reason.clone();
    let out = run_dual(
        ctx,
        &req.reference,
        true,
        Dual {
            kind: "propose-status",
            fields: vec![("to", value("open")), ("reason", value(reason.as_str()))],
            body: String::new(),
        },
        &|view, t| {
            (view.status != Status::Done).then(|| {
                let r = t.reference();
                Err(Refusal::new(
                    "task.not_done",
                    format!("{r} is {}, not done", view.status),
                    format!(
                        "{r} is {}, not done; there is nothing to reopen.",
                        view.status
                    ),
                ))
            })
        },
        &|doc, st| {
            if st.event.is_some() {
                // A reopen request waits for the owner; the folded view stays done.
                Ok(Change::Unchanged)
            } else {
                doc.reopen(&reason2, st)
            }
        },
    )?;
    // The owner's reopen settles pending reopen requests with a receipt.
    if let Outcome::Done(r) = &out
        && r.effect == "applied"
    {
        settle_reopen_requests(ctx, &r.task.id)?;
    }
    Ok(out)
}

fn settle_reopen_requests(ctx: &Ctx, id: &str) -> Result<(), Error> {
    let ws = ctx.ws()?;
    let journal = crate::journal::read(ws)?;
    let requests: Vec<String> = journal
        .pending_about(id)
        .filter(|e| e.kind == "propose-status" && e.field_str("to") == Some("open"))
        .map(|e| e.id.clone())
        .collect();
    if requests.is_empty() {
        return Ok(());
    }
    let mut applied = toml_edit::Array::new();
    for r in &requests {
        applied.push(r.as_str());
    }
    append_event(
        ctx,
        "applied",
        id,
        vec![
            ("applied", value(applied)),
            ("rejected", value(toml_edit::Array::new())),
        ],
        String::new(),
    )?;
    Ok(())
}

/// Set or clear a task's assignee (owner only). Replacing another live assignee needs
/// `--replace`.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssignRequest {
    #[serde(rename = "ref")]
    #[arg(value_name = "REF")]
    reference: String,
    /// The agent to assign.
    #[arg(
        value_name = "AGENT",
        required_unless_present = "clear",
        conflicts_with = "clear"
    )]
    #[serde(default)]
    agent: Option<String>,
    /// Remove the assignee.
    #[arg(long)]
    #[serde(default)]
    clear: bool,
    /// Replace a live assignee.
    #[arg(long)]
    #[serde(default)]
    replace: bool,
}

impl Classify for AssignRequest {}

#[derive(Debug, Serialize)]
pub struct AssignResponse {
    task: TaskRef,
    assignee: Option<String>,
    previous: Option<String>,
    effect: &'static str,
}

fn assign(ctx: &Ctx, req: AssignRequest) -> Result<Outcome<AssignResponse>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    let (project, id) = locate(ctx, &req.reference)?;
    let mut locked = Locked::take_id(ctx, &project, &id)?;
    let (view, _) = locked.folded(ws);
    let r = locked.task.reference();
    if !acts_as_owner(ctx, view.owner())? {
        let mut refusal = not_owner(&r, view.owner(), "assign it");
        refusal.next = format!("Claim it yourself with `dacli task claim {r}`.");
        return Ok(Outcome::Refused(refusal));
    }
    if let Some(a) = &req.agent {
        match objects::agents::load(ws, a) {
            Ok(agent) if agent.status == AgentStatus::Live => {}
            Ok(_) => {
                return Err(Error::usage(format!(
                    "agent {a} is retired; assign a live agent"
                )));
            }
            Err(e) => return Err(e.into()),
        }
    }
    // The target's role applies (its WIP cap and scope), unless it already holds the task.
    let gate = match &req.agent {
        Some(a) if view.assignee() != Some(a.as_str()) => RoleGate::of(ctx, a)?,
        _ => None,
    };
    if view.status == Status::Done {
        return Ok(Outcome::Refused(is_done(&r, view.resolution())));
    }
    if let (Some(g), Some(a)) = (&gate, &req.agent)
        && view.assignee() != Some(a.as_str())
        && let Some(refused) = g.check(
            &r,
            &view.traces(),
            "assign it to an agent whose role covers them (`dacli role list`)",
        )
    {
        return Ok(Outcome::Refused(refused));
    }
    let previous = view.assignee().map(str::to_string);
    if let (Some(prev), Some(new)) = (&previous, &req.agent)
        && prev != new
        && !req.replace
    {
        return Ok(Outcome::Refused(Refusal::new(
            "task.already_claimed",
            format!("{r} is assigned to {prev}"),
            format!(
                "{r} is taken by {prev} since {}; pass `--replace` to reassign it, or ask them.",
                claimed_since(&view)
            ),
        )));
    }
    locked.sync_first(ctx)?;
    let mut doc = locked.task.doc.clone();
    let at = now_text(ctx);
    let change = doc
        .assign(req.agent.as_deref(), own_stamp(&at, &me))
        .map_err(|e| {
            Error::new(
                crate::dispatch::ErrorKind::Conflict,
                "E_CONFLICT",
                e.as_str(),
            )
        })?;
    if change == Change::Applied {
        locked.write(ctx, doc)?;
    }
    Ok(Outcome::Done(AssignResponse {
        task: locked.task.task_ref_folded(),
        assignee: req.agent,
        previous,
        effect: if change == Change::Applied {
            "applied"
        } else {
            "unchanged"
        },
    }))
}

fn render_assign(r: &AssignResponse, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    match &r.assignee {
        Some(a) => format!("{}: assigned to {a}\n", r.task.reference),
        None => format!("{}: unassigned\n", r.task.reference),
    }
}

/// Hand a task you own to another rw agent (root adopts the tasks of retired or missing owners).
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandoverRequest {
    #[serde(rename = "ref")]
    #[arg(value_name = "REF")]
    reference: String,
    /// The new owner (a live rw agent).
    #[arg(long, value_name = "AGENT")]
    to: String,
}

impl Classify for HandoverRequest {}

#[derive(Debug, Serialize)]
pub struct HandoverResponse {
    task: TaskRef,
    owner: String,
    previous: String,
    effect: &'static str,
}

fn handover(ctx: &Ctx, req: HandoverRequest) -> Result<Outcome<HandoverResponse>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    let (project, id) = locate(ctx, &req.reference)?;
    let mut locked = Locked::take_id(ctx, &project, &id)?;
    let r = locked.task.reference();
    let previous = locked.folded(ws).0.owner().to_string();
    if !acts_as_owner(ctx, &previous)? {
        return Ok(Outcome::Refused(not_owner(&r, &previous, "hand it over")));
    }
    let target = objects::agents::load(ws, &req.to)?;
    if target.status != AgentStatus::Live {
        return Err(Error::usage(format!(
            "agent {} is retired; hand over to a live agent",
            req.to
        )));
    }
    if target.grant != Grant::Rw {
        return Ok(Outcome::Refused(Refusal::new(
            "grant.read_only",
            format!("{} is ro; an owner must be rw", req.to),
            format!(
                "Hand {r} to an rw agent; {} can still work on it as assignee (`dacli task assign {r} {}`).",
                req.to, req.to
            ),
        )));
    }
    locked.sync_first(ctx)?;
    let mut doc = locked.task.doc.clone();
    let at = now_text(ctx);
    let adoption = me == crate::model::id::ROOT_AGENT && req.to == me && previous != me;
    let change = doc.handover(&req.to, own_stamp(&at, &me), adoption);
    if change == Change::Applied {
        locked.write(ctx, doc)?;
    }
    Ok(Outcome::Done(HandoverResponse {
        task: locked.task.task_ref_folded(),
        owner: req.to,
        previous,
        effect: if change == Change::Applied {
            "applied"
        } else {
            "unchanged"
        },
    }))
}

fn render_handover(r: &HandoverResponse, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    format!(
        "{}: owner {} (was {})\n",
        r.task.reference, r.owner, r.previous
    )
}

/// Add or remove dependencies of a task you own.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DependRequest {
    #[serde(rename = "ref")]
    #[arg(value_name = "REF")]
    reference: String,
    /// A predecessor `REF[:FS|SS|FF|SF]` (repeatable).
    #[arg(long = "on", value_name = "REF[:TYPE]")]
    #[serde(default)]
    on: Vec<String>,
    /// Drop the dependency on REF (repeatable).
    #[arg(long = "remove", value_name = "REF")]
    #[serde(default)]
    remove: Vec<String>,
}

impl Classify for DependRequest {}

#[derive(Debug, Serialize)]
pub struct DependResponse {
    task: TaskRef,
    depends_on: Vec<Dependency>,
    effect: &'static str,
}

fn depend(ctx: &Ctx, req: DependRequest) -> Result<Outcome<DependResponse>, Error> {
    let one = OneTask::load(ctx, &req.reference)?;
    let (snap, t) = (&one.snap, &one.task);
    let r = t.reference();
    if !acts_as_owner(ctx, t.doc.owner())? {
        let mut refusal = not_owner(&r, t.doc.owner(), "change its dependencies");
        refusal.next = format!("Ask {}: `dacli ask {r} \"depends on …?\"`.", t.doc.owner());
        return Ok(Outcome::Refused(refusal));
    }
    if t.doc.status == Status::Done {
        return Ok(Outcome::Refused(is_done(&r, t.doc.resolution())));
    }
    let mut deps = t.doc.depends_on();
    for rm in &req.remove {
        let target = snap.resolve(rm)?;
        deps.retain(|d| d.on != target.id());
    }
    for spec in &req.on {
        let (dref, kind) = match spec.rsplit_once(':') {
            Some((a, k)) if DEP_TYPES.contains(&k) => (a, k),
            Some((_, k)) if !k.is_empty() && k.chars().all(|c| c.is_ascii_uppercase()) => {
                return Err(Error::usage(format!(
                    "--on `{spec}`: type `{k}` is not one of FS, SS, FF, SF"
                )));
            }
            _ => (spec.as_str(), "FS"),
        };
        let target = snap.resolve(dref)?;
        if target.id() == t.task.id {
            return Ok(Outcome::Refused(cycle_refusal(
                snap,
                &[t.task.id.clone(), t.task.id.clone()],
            )));
        }
        if let Some(path) = reaches(snap, target.id(), &t.task.id) {
            let mut cycle = vec![t.task.id.clone()];
            cycle.extend(path);
            return Ok(Outcome::Refused(cycle_refusal(snap, &cycle)));
        }
        deps.retain(|d| d.on != target.id());
        deps.push(Dependency {
            on: target.id().to_string(),
            kind: kind.to_string(),
        });
    }
    let mut locked = Locked::take(ctx, t)?;
    locked.sync_first(ctx)?;
    let mut doc = locked.task.doc.clone();
    let before = doc.depends_on();
    let effect = if before == deps {
        "unchanged"
    } else {
        doc.set_depends_on(&deps);
        locked.write(ctx, doc)?;
        "applied"
    };
    Ok(Outcome::Done(DependResponse {
        task: locked.task.task_ref_folded(),
        depends_on: deps,
        effect,
    }))
}

fn render_depend(r: &DependResponse, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    if r.depends_on.is_empty() {
        return format!("{}: no dependencies\n", r.task.reference);
    }
    let list: Vec<String> = r
        .depends_on
        .iter()
        .map(|d| format!("{} ({})", d.on, d.kind))
        .collect();
    format!("{}: depends on {}\n", r.task.reference, list.join(", "))
}

pub(super) fn commands() -> Vec<Command> {
    vec![
        Command::new("task.claim", Class::Append, claim, render_dual).mcp(Mcp::Tier1("claim_task")),
        Command::new("task.release", Class::Append, release, render_dual),
        Command::new("task.assign", Class::Mutate, assign, render_assign),
        Command::new("task.handover", Class::Mutate, handover, render_handover),
        Command::new("task.block", Class::Append, block, render_dual).mcp(Mcp::Tier1("block_task")),
        Command::new("task.unblock", Class::Append, unblock, render_dual),
        Command::new("task.comment", Class::Append, comment, render_dual),
        Command::new("task.reopen", Class::Append, reopen, render_dual),
        Command::new("task.depend", Class::Mutate, depend, render_depend),
    ]
}
