//! The fold (docs/FORMAT.md §13.2, §14.3): pending events applied to an object in ULID order
//! by the same transitions the owner uses, in memory for every reader and for real at sync.

use std::collections::BTreeMap;

use crate::model::dod::{CriterionFact, DodFacts, NoteFact, TestFact};
use crate::model::event::EventHead;
use crate::model::format_time;
use crate::model::task::Status;
use crate::model::taskdoc::{Change, Reject, Stamp, TaskDoc, Verify, one_line};
use crate::objects::{notes, tasks};
use crate::workspace::Workspace;

use super::Journal;

/// What folding the pending events of one object did.
#[derive(Debug, Clone, Default)]
pub struct Folded {
    /// Events whose effects are now in the object (a receipt lists them).
    pub applied: Vec<String>,
    /// Events declined, with the §13.2 reason (a receipt lists them).
    pub rejected: Vec<(String, String)>,
    /// Events that stay pending, with why: `dod_unmet` (a finish request),
    /// `open_question` (a help event not yet answered), `reopen_request`, `unknown_kind`.
    pub waiting: Vec<(String, &'static str)>,
    /// Events whose note must be materialised (`finding`, `answer` unless `as = "none"`).
    pub notes: Vec<String>,
}

impl Folded {
    /// True when a finish request is waiting on the definition of done.
    pub fn finish_requested(&self) -> bool {
        self.waiting.iter().any(|(_, why)| *why == "dod_unmet")
    }
}

fn stamp(ev: &EventHead) -> (String, String, String) {
    (
        format_time(ev.created),
        ev.created_by.clone(),
        ev.id.clone(),
    )
}

/// Applies `pending` (events about this task, ULID order) to `doc`. `can_finish` decides
/// whether a finish request meets the definition of done on the state reached so far.
pub fn fold_task(
    doc: &mut TaskDoc,
    pending: &[&EventHead],
    journal: &Journal,
    can_finish: &mut dyn FnMut(&TaskDoc) -> bool,
) -> Folded {
    let mut out = Folded::default();
    for ev in pending {
        let (at, by, id) = stamp(ev);
        let st = Stamp {
            at: &at,
            by: &by,
            event: Some(&id),
        };
        // Already materialised (a crash between rewrite and receipt, or a second clone):
        // settle without applying twice. Questions stay open until answered.
        if doc.has_event(&id) && ev.kind != "help" {
            out.applied.push(id.clone());
            if matches!(ev.kind.as_str(), "finding" | "answer") {
                out.notes.push(id);
            }
            continue;
        }
        let result: Result<Change, Reject> = match ev.kind.as_str() {
            "claim" => doc.claim(&by, st),
            "release" => doc.release(&by, st),
            "check" => {
                let items = check_items(ev);
                let verify = check_verify(ev);
                doc.check(&items, verify.as_ref(), st)
            }
            "finish" => {
                if doc.status == Status::Done {
                    Ok(Change::Unchanged)
                } else if can_finish(doc) {
                    doc.finish(st)
                } else {
                    out.waiting.push((id, "dod_unmet"));
                    continue;
                }
            }
            "block" => doc.block(ev.field_str("reason").unwrap_or("blocked"), st),
            "unblock" => doc.unblock(st),
            "comment" => Ok(doc.comment(one_line(&ev.body), st)),
            "finding" => {
                out.notes.push(id.clone());
                Ok(doc.finding(&format!("n-{id}"), st))
            }
            // A proposal to `done` is a `finish` (FORMAT §13.1): it waits, neither applied nor
            // rejected, while the definition of done is unmet.
            "propose-status"
                if ev.field_str("to") == Some("done")
                    && doc.status != Status::Done
                    && !can_finish(doc) =>
            {
                out.waiting.push((id, "dod_unmet"));
                continue;
            }
            "propose-status" => match propose(doc, ev, st, &by) {
                Some(r) => r,
                None => {
                    out.waiting.push((id, "reopen_request"));
                    continue;
                }
            },
            "help" => {
                let blocks = ev.field_bool("blocks").unwrap_or(true);
                let r = if doc.has_event(&id) {
                    Ok(Change::Unchanged)
                } else {
                    doc.question(&id, blocks, st)
                };
                if r.is_ok() && !is_answered(journal, &id) {
                    out.waiting.push((id, "open_question"));
                    continue;
                }
                r
            }
            "answer" => {
                let question = ev.field_str("question").unwrap_or("");
                doc.answered(question, st);
                if ev.field_str("as") != Some("none") {
                    out.notes.push(id.clone());
                }
                // The answer's receipt also settles its question.
                if let Some(pos) = out.waiting.iter().position(|(w, _)| w == question) {
                    let (q, _) = out.waiting.remove(pos);
                    out.applied.push(q);
                }
                Ok(Change::Applied)
            }
            _ => {
                out.waiting.push((id, "unknown_kind"));
                continue;
            }
        };
        match result {
            Ok(_) => out.applied.push(id),
            Err(r) => out.rejected.push((id, r.as_str().to_string())),
        }
    }
    out
}

/// A `propose-status` applied as the event its target stands for (FORMAT §13.1); `None` for
/// a reopen request, which waits for the owner.
fn propose(
    doc: &mut TaskDoc,
    ev: &EventHead,
    st: Stamp<'_>,
    by: &str,
) -> Option<Result<Change, Reject>> {
    let to = ev.field_str("to").and_then(Status::parse);
    let reason = ev.field_str("reason").unwrap_or("proposed");
    Some(match (to, doc.status) {
        (Some(t), s) if t == s => Err(Reject::BadTransition),
        (Some(Status::Blocked), _) => doc.block(reason, st),
        (Some(Status::Active), Status::Open) => doc.claim(by, st),
        (Some(Status::Active), Status::Blocked) => {
            if doc.assignee().is_none() {
                Err(Reject::NoAssignee)
            } else {
                doc.unblock(st)
            }
        }
        (Some(Status::Open), Status::Active) => {
            let who = doc.assignee().unwrap_or("").to_string();
            doc.release(&who, st)
        }
        (Some(Status::Open), Status::Blocked) => {
            let r = doc.unblock(st);
            doc.set_opt("assignee", None);
            doc.status = Status::Open;
            r
        }
        (Some(Status::Open), Status::Done) => return None,
        (Some(Status::Done), _) => doc.finish(st),
        _ => Err(Reject::BadTransition),
    })
}

fn is_answered(journal: &Journal, help: &str) -> bool {
    journal
        .events
        .iter()
        .any(|e| e.kind == "answer" && e.field_str("question") == Some(help))
}

fn check_items(ev: &EventHead) -> Vec<(u32, String)> {
    ev.front
        .get("items")
        .and_then(|i| i.as_array())
        .map(|arr| {
            arr.iter()
                .filter_map(|v| v.as_inline_table())
                .filter_map(|t| {
                    let n = t.get("n")?.as_integer()?;
                    let text = t.get("text")?.as_str()?;
                    Some((u32::try_from(n).ok()?, text.to_string()))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn check_verify(ev: &EventHead) -> Option<Verify> {
    let t = ev.front.get("verify")?.as_inline_table()?;
    Some(Verify {
        command: t.get("command")?.as_str()?.to_string(),
        exit_code: t.get("exit_code")?.as_integer()?,
        output: t.get("output")?.as_str()?.to_string(),
        duration_ms: t
            .get("duration_ms")
            .and_then(|v| v.as_integer())
            .unwrap_or(0),
        commit: t.get("commit").and_then(|v| v.as_str()).map(str::to_string),
    })
}

/// Gathers the definition-of-done facts for a (folded) task.
pub fn dod_facts(
    ws: &Workspace,
    journal: &Journal,
    notes: &[notes::Located],
    task: &tasks::Located,
    doc: &TaskDoc,
) -> DodFacts {
    let has_note = |about: &str, kind: &str| {
        notes.iter().any(|n| {
            n.note.about.as_deref() == Some(about) && (kind == "any" || n.note.kind == kind)
        })
    };
    dod_facts_with(ws, journal, &has_note, task, doc)
}

/// [`dod_facts`] with the notes asked through `has_note(about, kind)` (`kind` may be `any`),
/// for readers that know the notes from the index rather than from parsed files.
pub fn dod_facts_with(
    ws: &Workspace,
    journal: &Journal,
    has_note: &dyn Fn(&str, &str) -> bool,
    task: &tasks::Located,
    doc: &TaskDoc,
) -> DodFacts {
    let dod = ws.config.doc.get("definition_of_done");
    let get_str = |k: &str| dod.and_then(|d| d.get(k)).and_then(|v| v.as_str());
    let log = doc.log();
    let criteria = doc
        .criteria()
        .into_iter()
        .map(|c| {
            let prefix = format!("checked {}", c.n);
            let verified = log
                .iter()
                .rev()
                .find(|l| l.text == prefix || l.text.starts_with(&format!("{prefix} ")))
                .is_some_and(|l| l.text.contains(" verify="));
            CriterionFact {
                n: c.n,
                text: c.text,
                checked: c.checked,
                command: c.command,
                verified,
            }
        })
        .collect();
    let id = &task.task.id;
    let test = get_str("test_shortcut").map(|shortcut| TestFact {
        shortcut: shortcut.to_string(),
        latest: journal
            .events
            .iter()
            .rev()
            .find(|e| {
                e.kind == "run"
                    && e.field_str("shortcut") == Some(shortcut)
                    && e.field_str("task") == Some(id.as_str())
            })
            .map(|e| (e.id.clone(), e.field_int("exit_code").unwrap_or(-1))),
    });
    let lint = dod
        .and_then(|d| d.get("lint"))
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let note = get_str("require_note").map(|kind| NoteFact {
        kind: kind.to_string(),
        present: has_note(id, kind)
            || ((kind == "finding" || kind == "any")
                && journal.pending_about(id).any(|e| e.kind == "finding")),
    });
    DodFacts {
        reference: task.reference(),
        path: task.path.clone(),
        criteria,
        test,
        lint_errors: lint.then(|| crate::model::lint::task_errors(doc)),
        note,
    }
}

/// Every task's folded view: pending events applied in memory. Returns what each fold did,
/// keyed by task id. A finish request applies when `passes` (the definition-of-done verdict,
/// `policy::dod::evaluate(..).passed` in practice) accepts the facts of the state reached.
pub fn fold_all(
    ws: &Workspace,
    journal: &Journal,
    notes: &[notes::Located],
    tasks: &mut [tasks::Located],
    passes: &dyn Fn(&DodFacts) -> bool,
) -> BTreeMap<String, Folded> {
    let mut out = BTreeMap::new();
    // One pass over the log: asking the journal per task would walk every event once per task.
    let mut by_about: BTreeMap<&str, Vec<&EventHead>> = BTreeMap::new();
    for e in journal.pending() {
        if let Some(about) = e.about.as_deref() {
            by_about.entry(about).or_default().push(e);
        }
    }
    for task in tasks.iter_mut() {
        let id = task.task.id.clone();
        let Some(pending) = by_about.get(id.as_str()).cloned() else {
            continue;
        };
        let snapshot = task.clone();
        let mut doc = task.doc.clone();
        let folded = fold_task(&mut doc, &pending, journal, &mut |d: &TaskDoc| {
            passes(&dod_facts(ws, journal, notes, &snapshot, d))
        });
        task.doc = doc;
        out.insert(id, folded);
    }
    out
}
