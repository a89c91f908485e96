//! Queues' transactions under the queue's lock: create, remove, and record a step's outcome
//! (the `advance` event first, then the queue file).

use std::path::PathBuf;

use sha2::{Digest, Sha256};
use toml_edit::{InlineTable, Value, value};
use ulid::Ulid;

use super::error::Kind;
use super::{Decided, Error};
use crate::journal::{self, Journal, NewEvent};
use crate::model::Refusal;
use crate::model::queue::Queue;
use crate::objects::{agents, queues, set_keeping_decor};
use crate::policy::queue::{Advance, Outcome as StepOutcome, Plan, State, after, plan};
use crate::store::{Document, Problem};
use crate::workspace::Workspace;

/// Creates queue `slug` from `doc` (built and checked by the caller) under its lock;
/// returns the file written.
pub fn create(ws: &Workspace, slug: &str, doc: &Document) -> Result<PathBuf, Error> {
    let _lock = ws.fs.lock(&ws.lock_path(&queues::lock_name(slug)))?;
    Ok(queues::create(ws, slug, doc)?)
}

/// Removes queue `slug` under its lock if `me` acts as its owner; returns its id.
pub fn remove(ws: &Workspace, me: &str, slug: &str) -> Result<Decided<String>, Error> {
    let _lock = ws.fs.lock(&ws.lock_path(&queues::lock_name(slug)))?;
    let q = queues::load(ws, slug)?.queue;
    if let Some(r) = owner_gate(ws, me, &q)? {
        return Ok(Decided::Refused(r));
    }
    queues::remove(ws, slug)?;
    Ok(Decided::Done(q.id))
}

/// `queue.not_owner` unless `me` acts as the queue's owner (root acts for a retired or
/// missing one).
fn owner_gate(ws: &Workspace, me: &str, q: &Queue) -> Result<Option<Refusal>, Error> {
    if agents::acts_as_owner(ws, me, &q.owner)? {
        return Ok(None);
    }
    let n = q.cursor + 1;
    Ok(Some(Refusal::new(
        "queue.not_owner",
        format!("{} belongs to {}", q.id, q.owner),
        format!(
            "{} belongs to {}: report the step's outcome with `dacli ask workspace \"{} step {n}: …\"`.",
            q.id, q.owner, q.id
        ),
    )))
}

/// What recording an outcome asks for.
pub struct Step<'a> {
    pub slug: &'a str,
    pub outcome: StepOutcome,
    pub key: Option<&'a str>,
    pub reason: Option<&'a str>,
    /// The id of the `advance` event, if one is recorded.
    pub event_id: Ulid,
    /// The queue file's new `rev`, if it is rewritten.
    pub rev: Ulid,
}

/// The queue before and after a recorded (or replayed) outcome.
pub struct Advanced {
    pub before: Queue,
    pub now: Queue,
    pub key: Option<String>,
    pub event: Option<String>,
    pub replayed: bool,
    /// The cursor the recorded event was taken at (a replay's, else the queue's before).
    pub cursor_before: u64,
    /// `applied` when the queue or the log changed, `unchanged` otherwise.
    pub effect: &'static str,
}

/// Records `step.outcome` for the step at the cursor of queue `step.slug`, under its lock,
/// if `me` acts as its owner. A key recorded before replays (repairing a queue file a crash
/// left behind its event); a key recorded with another outcome is a conflict. Skipped event
/// files go to `warnings`.
pub fn advance(
    ws: &Workspace,
    me: &str,
    step: Step<'_>,
    warnings: &mut Vec<Problem>,
) -> Result<Decided<Advanced>, Error> {
    let _lock = ws.fs.lock(&ws.lock_path(&queues::lock_name(step.slug)))?;
    let located = queues::load(ws, step.slug)?;
    let q = &located.queue;
    if let Some(r) = owner_gate(ws, me, q)? {
        return Ok(Decided::Refused(r));
    }
    let journal = journal::read(ws)?;
    warnings.extend(journal.warnings.iter().cloned());
    let history = history(&journal, &q.id);
    let outcome = step.outcome;
    let done = |now: Queue, key, event, replayed, effect| Advanced {
        cursor_before: q.cursor,
        before: q.clone(),
        now,
        key,
        event,
        replayed,
        effect,
    };
    match plan(q, outcome, step.key, &history) {
        Plan::Refused(r) => Ok(Decided::Refused(r)),
        Plan::Conflict { event } => Err(Error::rejected(
            Kind::Conflict,
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
        Plan::Unchanged => Ok(Decided::Done(done(
            q.clone(),
            None,
            None,
            false,
            "unchanged",
        ))),
        Plan::Replay { event, repair } => {
            let mut effect = "unchanged";
            let mut now = q.clone();
            if let Some(state) = repair {
                now = rewrite(ws, &located, &state, step.rev)?;
                effect = "applied";
            }
            let mut r = done(now, Some(event.key), Some(event.id), true, effect);
            r.cursor_before = event.cursor_before;
            Ok(Decided::Done(r))
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
            if let Some(w) = step.reason {
                fields.push(("reason", value(w)));
            }
            // The event comes first: a crash before the rewrite is repaired by a replay.
            let ev = journal::append(
                ws,
                NewEvent {
                    id: step.event_id,
                    kind: "advance",
                    created_by: me,
                    about: None,
                    fields,
                    body: String::new(),
                },
            )?;
            let state = after(q, outcome, &ev.id, step.reason);
            let now = if state.cursor != q.cursor || state.halted != q.halted {
                rewrite(ws, &located, &state, step.rev)?
            } else {
                q.clone()
            };
            Ok(Decided::Done(done(
                now,
                Some(key),
                Some(ev.envelope.id),
                false,
                "applied",
            )))
        }
    }
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

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Writes `state` into the queue file (only `cursor`, `halted` and `rev` change) and returns
/// the queue as written.
fn rewrite(
    ws: &Workspace,
    located: &queues::Located,
    state: &State,
    rev: Ulid,
) -> Result<Queue, Error> {
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
    set_keeping_decor(&mut front, "rev", Value::from(rev.to_string()));
    let doc = Document::new(front, located.doc.body.clone());
    queues::write(ws, &located.queue.slug, &doc)?;
    Ok(Queue {
        cursor: state.cursor,
        halted: state.halted.clone(),
        ..located.queue.clone()
    })
}
