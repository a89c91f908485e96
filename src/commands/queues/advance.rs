//! `queue advance` and `queue resume`: the owner records a step's outcome as an `advance`
//! event, then rewrites the queue, under the queue lock (FORMAT §10). A repeated key replays.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use toml_edit::{InlineTable, Value, value};

use super::{Step, load, owner_gate, step_at};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, ErrorKind, Mcp, Outcome};
use crate::journal::{self, Journal, NewEvent};
use crate::model::queue::{Halted, Queue};
use crate::objects::{queues, set_keeping_decor};
use crate::policy::queue::{Advance, Outcome as StepOutcome, Plan, State, after, plan};

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

/// The `advance` events recorded for queue `id`, in ULID order.
fn history(journal: &Journal, id: &str) -> Vec<Advance> {
    journal
        .events
        .iter()
        .filter(|e| e.kind == "advance" && e.field_str("queue") == Some(id))
        .filter_map(|e| {
            Some(Advance {
                id: e.id.clone(),
                key: e.field_str("key")?.to_string(),
                outcome: StepOutcome::parse(e.field_str("outcome")?)?,
                cursor_before: u64::try_from(e.field_int("cursor_before")?).ok()?,
                reason: e.field_str("reason").map(str::to_string),
            })
        })
        .collect()
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
    let _lock = ws.fs.lock(&ws.lock_path(&queues::lock_name(&slug)))?;
    let located = load(ctx, &slug)?;
    let q = &located.queue;
    if let Some(r) = owner_gate(ctx, q)? {
        return Ok(Outcome::Refused(r));
    }
    let journal = journal::read(ws)?;
    ctx.warn_all(journal.warnings.iter().cloned());
    let history = history(&journal, &q.id);
    match plan(q, outcome, key, &history) {
        Plan::Refused(r) => Ok(Outcome::Refused(r)),
        Plan::Conflict { event } => Err(Error::new(
            ErrorKind::Conflict,
            "E_CONFLICT",
            format!(
                "key `{}` of {} was recorded with outcome {} (event {}); this request says {}",
                event.key,
                q.id,
                event.outcome.as_str(),
                event.id,
                outcome.as_str()
            ),
        )
        .hint("pass another --key, or repeat the recorded outcome")),
        Plan::Unchanged => Ok(Outcome::Done(response(
            q,
            q,
            outcome,
            None,
            None,
            false,
            "unchanged",
        ))),
        Plan::Replay { event, repair } => {
            let mut effect = "unchanged";
            let mut now = q.clone();
            if let Some(state) = repair {
                now = rewrite(ctx, &located, &state)?;
                effect = "applied";
            }
            let mut r = response(
                q,
                &now,
                outcome,
                Some(event.key),
                Some(event.id),
                true,
                effect,
            );
            r.cursor_before = event.cursor_before;
            Ok(Outcome::Done(r))
        }
        Plan::Record { key } => {
            let step_text = q.current().map_or("", |(_, t)| t);
            let mut fields = vec![
                ("queue", value(q.id.as_str())),
                ("key", value(key.as_str())),
                ("outcome", value(outcome.as_str())),
                ("cursor_before", value(q.cursor as i64)),
                ("step_sha256", value(sha256_hex(step_text))),
            ];
            if let Some(w) = why {
                fields.push(("reason", value(w)));
            }
            // The event comes first: a crash before the rewrite is repaired by a replay.
            let ev = journal::append(
                ws,
                NewEvent {
                    id: ctx.new_ulid(),
                    kind: "advance",
                    created_by: &me,
                    about: None,
                    fields,
                    body: String::new(),
                },
            )?;
            let state = after(q, outcome, &ev.id, why);
            let now = if state.cursor != q.cursor || state.halted != q.halted {
                rewrite(ctx, &located, &state)?
            } else {
                q.clone()
            };
            Ok(Outcome::Done(response(
                q,
                &now,
                outcome,
                Some(key),
                Some(ev.id),
                false,
                "applied",
            )))
        }
    }
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Writes `state` into the queue file (only `cursor`, `halted` and `rev` change) and returns
/// the queue as written.
fn rewrite(ctx: &Ctx, located: &queues::Located, state: &State) -> Result<Queue, Error> {
    let ws = ctx.ws()?;
    let mut front = located.doc.front.clone();
    set_keeping_decor(&mut front, "cursor", Value::from(state.cursor as i64));
    match &state.halted {
        Some(h) => {
            let mut t = InlineTable::new();
            t.insert("step", Value::from(h.step as i64));
            t.insert("reason", Value::from(h.reason.as_str()));
            t.insert("event", Value::from(h.event.as_str()));
            set_keeping_decor(&mut front, "halted", Value::InlineTable(t));
        }
        None => {
            front.remove("halted");
        }
    }
    set_keeping_decor(&mut front, "rev", Value::from(ctx.new_ulid().to_string()));
    let doc = crate::store::Document::new(front, located.doc.body.clone());
    queues::write(ws, &located.queue.slug, &doc)?;
    Ok(Queue {
        cursor: state.cursor,
        halted: state.halted.clone(),
        ..located.queue.clone()
    })
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
