//! `queue advance` and `queue resume`: the owner records a step's outcome as an `advance`
//! event, then rewrites the queue, under the queue lock (FORMAT §10). A repeated key replays.

use serde::{Deserialize, Serialize};

use super::{Step, load, step_at};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Mcp, Outcome};
use crate::model::queue::{Halted, Queue};
use crate::ops::{self, Decided};
use crate::policy::queue::Outcome as StepOutcome;

/// Record the outcome of the step at the cursor of a queue you own: done (the cursor moves
/// on), `--fail REASON` (retryable: the cursor stays) or `--dead REASON` (the queue halts
/// until `dacli queue resume`). Repeating a key (`--key`, or the default one) changes nothing.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdvanceRequest {
    /// The queue (slug or `q-<slug>`).
    #[arg(value_name = "SLUG")]
    slug: String,
    /// The idempotency key (default `<cursor>:<outcome>`, `<cursor>:failed:<n>` for failures).
    #[arg(long, value_name = "KEY")]
    #[serde(default)]
    key: Option<String>,
    /// A retryable failure; the cursor stays.
    #[arg(long, value_name = "REASON", conflicts_with = "dead")]
    #[serde(default)]
    fail: Option<String>,
    /// A terminal failure; the queue halts at this step.
    #[arg(long, value_name = "REASON")]
    #[serde(default)]
    dead: Option<String>,
}

impl Classify for AdvanceRequest {}

/// Lift the halt of a queue you own (a `dead` outcome), so its step is served again.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeRequest {
    /// The queue (slug or `q-<slug>`).
    #[arg(value_name = "SLUG")]
    slug: String,
    /// Why it can go on (kept in the event).
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    reason: Option<String>,
}

impl Classify for ResumeRequest {}

#[derive(Debug, Serialize)]
pub struct Response {
    queue: String,
    key: Option<String>,
    outcome: StepOutcome,
    /// The key was recorded before: nothing moved (beyond repairing an interrupted rewrite).
    replayed: bool,
    event: Option<String>,
    cursor_before: u64,
    cursor: u64,
    next: Option<Step>,
    halted: Option<Halted>,
    /// `applied` when the queue or the log changed, `unchanged` otherwise.
    effect: &'static str,
}

pub(super) fn advance_command() -> Command {
    Command::new("queue.advance", Class::Mutate, advance, render).mcp(Mcp::Tier1("queue_advance"))
}

pub(super) fn resume_command() -> Command {
    Command::new("queue.resume", Class::Mutate, resume, render)
}

fn reason(flag: &str, text: &str) -> Result<String, Error> {
    let t = text.trim();
    if t.is_empty() || t.contains('\n') {
        return Err(Error::usage(format!("{flag} must be one non-empty line")));
    }
    Ok(t.to_string())
}

fn advance(ctx: &Ctx, req: AdvanceRequest) -> Result<Outcome<Response>, Error> {
    let (outcome, why) = match (&req.fail, &req.dead) {
        (Some(_), Some(_)) => return Err(Error::usage("give --fail or --dead, not both")),
        (Some(r), None) => (StepOutcome::Failed, Some(reason("--fail", r)?)),
        (None, Some(r)) => (StepOutcome::Dead, Some(reason("--dead", r)?)),
        (None, None) => (StepOutcome::Done, None),
    };
    if let Some(k) = &req.key
        && (k.trim().is_empty() || k.contains('\n'))
    {
        return Err(Error::usage("--key must be one non-empty line"));
    }
    apply(ctx, &req.slug, outcome, req.key.as_deref(), why.as_deref())
}

fn resume(ctx: &Ctx, req: ResumeRequest) -> Result<Outcome<Response>, Error> {
    let why = req
        .reason
        .as_deref()
        .map(|r| reason("--reason", r))
        .transpose()?;
    apply(ctx, &req.slug, StepOutcome::Resumed, None, why.as_deref())
}

fn apply(
    ctx: &Ctx,
    slug: &str,
    outcome: StepOutcome,
    key: Option<&str>,
    why: Option<&str>,
) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    let slug = load(ctx, slug)?.queue.slug;
    let step = ops::queues::Step {
        slug: &slug,
        outcome,
        key,
        reason: why,
        event_id: ctx.new_ulid(),
        rev: ctx.new_ulid(),
    };
    let mut warnings = Vec::new();
    let advanced = ops::queues::advance(ws, &me, step, &mut warnings);
    ctx.warn_all(warnings);
    let a = match advanced? {
        Decided::Done(a) => a,
        Decided::Refused(r) => return Ok(Outcome::Refused(r)),
    };
    let mut r = response(
        &a.before, &a.now, outcome, a.key, a.event, a.replayed, a.effect,
    );
    r.cursor_before = a.cursor_before;
    Ok(Outcome::Done(r))
}

fn response(
    before: &Queue,
    now: &Queue,
    outcome: StepOutcome,
    key: Option<String>,
    event: Option<String>,
    replayed: bool,
    effect: &'static str,
) -> Response {
    Response {
        queue: now.id.clone(),
        key,
        outcome,
        replayed,
        event,
        cursor_before: before.cursor,
        cursor: now.cursor,
        next: step_at(now),
        halted: now.halted.clone(),
        effect,
    }
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    let what = match (r.replayed, r.effect) {
        (true, "applied") => "replayed (the queue was brought up to date)".to_string(),
        (true, _) => "replayed: already recorded, nothing moved".to_string(),
        (false, "unchanged") => "not halted; nothing to resume".to_string(),
        _ => format!("recorded {}", r.outcome.as_str()),
    };
    let mut out = format!("{}: {what}\n", r.queue);
    match (&r.halted, &r.next) {
        (Some(h), _) => out.push_str(&format!(
            "  halted at step {}: {} (resume with `dacli queue resume {}`)\n",
            h.step + 1,
            h.reason,
            r.queue.trim_start_matches("q-")
        )),
        (None, Some(s)) => {
            out.push_str(&format!("  next: step {}: {}\n", s.n, first_line(&s.text)))
        }
        (None, None) => out.push_str("  every step is done\n"),
    }
    out
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}
