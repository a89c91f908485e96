//! Queue advances (docs/FORMAT.md §10): what an `advance` or `resume` request does, given the
//! queue and the `advance` events already recorded for it.
//!
//! Every change of `cursor` or `halted` has exactly one `advance` event, written before the
//! queue is rewritten. A request whose idempotency key was already recorded is a replay: with
//! the same outcome it moves nothing, except that it brings a queue the event never reached
//! (a crash between event and rewrite) up to date; with another outcome it is a conflict.

use crate::model::Refusal;
use crate::model::queue::{Halted, Queue};

/// The outcome an `advance` event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The step is done: the cursor moves by one.
    Done,
    /// A retryable failure: the cursor stays.
    Failed,
    /// A terminal failure: the queue halts at the cursor.
    Dead,
    /// The owner lifted a halt.
    Resumed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Done => "done",
            Outcome::Failed => "failed",
            Outcome::Dead => "dead",
            Outcome::Resumed => "resumed",
        }
    }

    /// Parses a stored outcome.
    pub fn parse(s: &str) -> Option<Outcome> {
        match s {
            "done" => Some(Outcome::Done),
            "failed" => Some(Outcome::Failed),
            "dead" => Some(Outcome::Dead),
            "resumed" => Some(Outcome::Resumed),
            _ => None,
        }
    }
}

/// An `advance` event already recorded for the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advance {
    pub id: String,
    pub key: String,
    pub outcome: Outcome,
    pub cursor_before: u64,
    pub reason: Option<String>,
}

/// The state a queue is (or is to be) written with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub cursor: u64,
    pub halted: Option<Halted>,
}

/// What a request does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Record a new event with `key`, then write the queue with the state `after` returns for
    /// the new event's id (unchanged state for `failed`).
    Record {
        key: String,
    },
    /// The key was recorded with the same outcome: nothing moves. `repair` is the state the
    /// queue must be written with when it does not yet reflect that event.
    Replay {
        event: Advance,
        repair: Option<State>,
    },
    /// The key was recorded with another outcome (`E_CONFLICT`).
    Conflict {
        event: Advance,
    },
    /// `resume` on a queue that is not halted: nothing to do.
    Unchanged,
    Refused(Refusal),
}

/// The default idempotency key of a request (FORMAT §10): `<cursor>:done`, `<cursor>:dead`,
/// `<cursor>:failed:<n>` (n: failures already recorded at that cursor) or
/// `<cursor>:resumed:<halted event>`.
pub fn default_key(queue: &Queue, outcome: Outcome, history: &[Advance]) -> String {
    let c = queue.cursor;
    match outcome {
        Outcome::Done => format!("{c}:done"),
        Outcome::Dead => format!("{c}:dead"),
        Outcome::Failed => {
            let n = history
                .iter()
                .filter(|a| a.outcome == Outcome::Failed && a.cursor_before == c)
                .count();
            format!("{c}:failed:{n}")
        }
        Outcome::Resumed => format!(
            "{c}:resumed:{}",
            queue.halted.as_ref().map_or("", |h| h.event.as_str())
        ),
    }
}

/// Decides a request with `outcome` and the given (or default) key.
pub fn plan(queue: &Queue, outcome: Outcome, key: Option<&str>, history: &[Advance]) -> Plan {
    if outcome == Outcome::Resumed && queue.halted.is_none() {
        return Plan::Unchanged;
    }
    let key = key.map_or_else(|| default_key(queue, outcome, history), str::to_string);
    if let Some(event) = history.iter().find(|a| a.key == key) {
        if event.outcome != outcome {
            return Plan::Conflict {
                event: event.clone(),
            };
        }
        return Plan::Replay {
            repair: repair(queue, event),
            event: event.clone(),
        };
    }
    if outcome != Outcome::Resumed {
        if let Some(r) = halted_refusal(queue) {
            return Plan::Refused(r);
        }
        if queue.complete() {
            return Plan::Refused(Refusal::new(
                "queue.complete",
                format!("{} has no step left to advance", queue.id),
                format!(
                    "All {} steps are done; nothing to advance.",
                    queue.steps.len()
                ),
            ));
        }
    }
    Plan::Record { key }
}

/// The state after recording `outcome` as event `event` with `reason`.
pub fn after(queue: &Queue, outcome: Outcome, event: &str, reason: Option<&str>) -> State {
    match outcome {
        Outcome::Done => State {
            cursor: queue.cursor + 1,
            halted: None,
        },
        Outcome::Failed => State {
            cursor: queue.cursor,
            halted: queue.halted.clone(),
        },
        Outcome::Dead => State {
            cursor: queue.cursor,
            halted: Some(Halted {
                step: queue.cursor,
                reason: reason.unwrap_or_default().to_string(),
                event: event.to_string(),
            }),
        },
        Outcome::Resumed => State {
            cursor: queue.cursor,
            halted: None,
        },
    }
}

/// The state a replayed event should have produced, when the queue does not show it yet.
fn repair(queue: &Queue, event: &Advance) -> Option<State> {
    let here = queue.cursor == event.cursor_before;
    match event.outcome {
        Outcome::Done if here && queue.halted.is_none() && !queue.complete() => {
            Some(after(queue, Outcome::Done, &event.id, None))
        }
        Outcome::Dead if here && queue.halted.is_none() && !queue.complete() => Some(after(
            queue,
            Outcome::Dead,
            &event.id,
            event.reason.as_deref(),
        )),
        Outcome::Resumed
            if queue
                .halted
                .as_ref()
                .is_some_and(|h| event.key.ends_with(&format!(":resumed:{}", h.event))) =>
        {
            Some(after(queue, Outcome::Resumed, &event.id, None))
        }
        _ => None,
    }
}

/// `queue.halted` for a halted queue (for `next` and `advance`).
pub fn halted_refusal(queue: &Queue) -> Option<Refusal> {
    let h = queue.halted.as_ref()?;
    let n = h.step + 1;
    Some(Refusal::new(
        "queue.halted",
        format!("{} is halted at step {n}: {}", queue.id, h.reason),
        format!(
            "Halted at step {n}: {} (event {}); {} resumes with `dacli queue resume {}`.",
            h.reason, h.event, queue.owner, queue.slug
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(cursor: u64, halted: Option<&str>) -> Queue {
        Queue {
            id: "q-r".into(),
            slug: "r".into(),
            owner: "a-root".into(),
            cursor,
            halted: halted.map(|e| Halted {
                step: cursor,
                reason: "broken".into(),
                event: e.into(),
            }),
            title: "R".into(),
            steps: vec!["a".into(), "b".into()],
        }
    }

    fn adv(id: &str, key: &str, outcome: Outcome, before: u64) -> Advance {
        Advance {
            id: id.into(),
            key: key.into(),
            outcome,
            cursor_before: before,
            reason: Some("broken".into()),
        }
    }

    #[test]
    fn default_keys_count_failures_at_the_cursor() {
        let q = queue(1, None);
        let history = [
            adv("E1", "1:failed:0", Outcome::Failed, 1),
            adv("E2", "0:failed:0", Outcome::Failed, 0),
        ];
        assert_eq!(default_key(&q, Outcome::Failed, &history), "1:failed:1");
        assert_eq!(default_key(&q, Outcome::Done, &history), "1:done");
        assert_eq!(
            default_key(&queue(1, Some("EV")), Outcome::Resumed, &[]),
            "1:resumed:EV"
        );
    }

    #[test]
    fn a_repeated_key_moves_nothing_and_repairs_a_crash() {
        let history = [adv("E1", "k", Outcome::Done, 0)];
        // The queue already moved: a pure no-op.
        assert_eq!(
            plan(&queue(1, None), Outcome::Done, Some("k"), &history),
            Plan::Replay {
                event: history[0].clone(),
                repair: None
            }
        );
        // The event exists but the rewrite never happened: bring the queue up to date.
        let Plan::Replay { repair, .. } = plan(&queue(0, None), Outcome::Done, Some("k"), &history)
        else {
            panic!("replay");
        };
        assert_eq!(repair.map(|s| s.cursor), Some(1));
        assert!(matches!(
            plan(&queue(1, None), Outcome::Dead, Some("k"), &history),
            Plan::Conflict { .. }
        ));
    }

    #[test]
    fn halted_and_complete_queues_refuse() {
        let Plan::Refused(r) = plan(&queue(1, Some("EV")), Outcome::Done, None, &[]) else {
            panic!("refused");
        };
        assert_eq!(r.policy, "queue.halted");
        assert!(r.next.contains("dacli queue resume r") && r.next.contains("step 2"));
        let Plan::Refused(r) = plan(&queue(2, None), Outcome::Done, None, &[]) else {
            panic!("refused");
        };
        assert_eq!(r.policy, "queue.complete");
        assert_eq!(
            plan(&queue(0, None), Outcome::Resumed, None, &[]),
            Plan::Unchanged
        );
        assert_eq!(
            plan(&queue(1, Some("EV")), Outcome::Resumed, None, &[]),
            Plan::Record {
                key: "1:resumed:EV".into()
            }
        );
    }

    #[test]
    fn outcomes_move_the_state() {
        let q = queue(0, None);
        assert_eq!(after(&q, Outcome::Done, "E", None).cursor, 1);
        assert_eq!(
            after(&q, Outcome::Failed, "E", None),
            State {
                cursor: 0,
                halted: None
            }
        );
        let dead = after(&q, Outcome::Dead, "E", Some("why"));
        assert_eq!(
            dead.halted.map(|h| (h.step, h.event)),
            Some((0, "E".to_string()))
        );
    }
}
