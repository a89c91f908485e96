//! A task file as an editable value, and its lifecycle (docs/FORMAT.md §12–§13).
//!
//! Every transition is one method here, used three ways with identical effects: the owner's
//! direct rewrite, the in-memory fold of pending events every reader sees, and the owner's
//! sync. Log lines produced from an event carry `(event <ULID>)`, and an event whose id is
//! already in the Log is never applied twice, which makes sync idempotent.

use toml_edit::{DocumentMut, Item, Value, value};

use super::body::{self, Criterion};
use super::fields::{FieldError, Fields};
use super::task::{Dependency, Estimate, LogLine, Status, parse_log};

/// Who does a transition, when, and from which event (none for the owner's direct act).
#[derive(Debug, Clone, Copy)]
pub struct Stamp<'a> {
    /// Formatted timestamp (`2026-03-03T10:02:44Z`).
    pub at: &'a str,
    pub by: &'a str,
    pub event: Option<&'a str>,
}

/// Why an event or an action cannot apply in the state it meets (FORMAT §13.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    Claimed,
    NotAssignee,
    TaskDone,
    CriterionChanged,
    NoAssignee,
    BadTransition,
    WrongTarget,
}

impl Reject {
    /// The reason string of a receipt's `rejected` entry.
    pub fn as_str(self) -> &'static str {
        match self {
            Reject::Claimed => "claimed",
            Reject::NotAssignee => "not_assignee",
            Reject::TaskDone => "task_done",
            Reject::CriterionChanged => "criterion_changed",
            Reject::NoAssignee => "no_assignee",
            Reject::BadTransition => "bad_transition",
            Reject::WrongTarget => "wrong_target",
        }
    }
}

/// Whether a transition changed anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Applied,
    /// Already in that state: nothing written, no Log line.
    Unchanged,
}

/// A verification record carried by a check (FORMAT §14.2 `check.verify`).
#[derive(Debug, Clone, PartialEq)]
pub struct Verify {
    pub command: String,
    pub exit_code: i64,
    pub output: String,
    pub duration_ms: i64,
    pub commit: Option<String>,
}

/// One agent's latest claim event about a task: its id, its time (as Log lines write
/// times), and whether the owner's sync refused it or would (reason `claimed`).
#[derive(Debug, Clone, Copy)]
pub struct ClaimTry<'a> {
    pub event: &'a str,
    pub at: &'a str,
    pub refused: bool,
}

/// The recorded delivery of a task (FORMAT §12 `delivery`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Delivery {
    pub branch: Option<String>,
    pub pr: Option<i64>,
    /// Full SHA-1s, lower-case.
    pub commits: Vec<String>,
}

/// The fields of a task's frontmatter that its index entry needs, read from any table: the
/// editable one of a [`TaskDoc`], or the read-only one of a file parsed only to be indexed
/// ([`crate::store::ReadDocument`]).
#[derive(Debug, Clone, Copy)]
pub struct TaskFront<'a>(pub &'a toml_edit::Table);

impl<'a> TaskFront<'a> {
    pub fn priority(self) -> &'a str {
        self.0
            .get("priority")
            .and_then(Item::as_str)
            .unwrap_or("should")
    }

    pub fn tags(self) -> Vec<String> {
        Fields(self.0)
            .str_list("tags")
            .unwrap_or_default()
            .into_iter()
            .map(String::from)
            .collect()
    }

    /// The estimate, if present and valid.
    pub fn estimate(self) -> Result<Option<Estimate>, FieldError> {
        let Some(item) = self.0.get("estimate") else {
            return Ok(None);
        };
        let bad = |why: String| FieldError::schema(format!("`estimate`: {why}"));
        // Read in place, inline or not: no copy of the table per task the index parses.
        let Some(t) = item.as_table_like() else {
            return Err(bad(
                "must be {optimistic, probable, pessimistic}; a scalar is not an estimate".into(),
            ));
        };
        let num = |k: &str| -> Result<f64, FieldError> {
            match t.get(k) {
                Some(v) => v
                    .as_float()
                    .or_else(|| v.as_integer().map(|i| i as f64))
                    .ok_or_else(|| bad(format!("`{k}` must be a number"))),
                None => Err(bad(format!("`{k}` is missing"))),
            }
        };
        Estimate::new(num("optimistic")?, num("probable")?, num("pessimistic")?)
            .map(Some)
            .map_err(bad)
    }

    /// The recorded delivery (FORMAT §12 `delivery`); commits that are not a full
    /// hexadecimal SHA-1 are left out, the rest lower-cased.
    pub fn delivery(self) -> Delivery {
        let Some(d) = self.0.get("delivery") else {
            return Delivery::default();
        };
        Delivery {
            branch: d.get("branch").and_then(|b| b.as_str()).map(str::to_string),
            pr: d.get("pr").and_then(|p| p.as_integer()),
            commits: d
                .get("commits")
                .and_then(|c| c.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str())
                        .filter(|s| s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit()))
                        .map(str::to_ascii_lowercase)
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// How many times the task was reopened (FORMAT §12 `generation`; 0 when absent).
    pub fn generation(self) -> i64 {
        self.0
            .get("generation")
            .and_then(Item::as_integer)
            .unwrap_or(0)
    }

    /// The `depends_on` edges (type defaults to FS).
    pub fn depends_on(self) -> Vec<Dependency> {
        let Some(arr) = self.0.get("depends_on").and_then(Item::as_array) else {
            return Vec::new();
        };
        arr.iter()
            .filter_map(|v| v.as_inline_table())
            .filter_map(|t| {
                let on = t.get("on")?.as_str()?;
                let kind = t.get("type").and_then(|k| k.as_str()).unwrap_or("FS");
                Some(Dependency {
                    on: strip_wikilink(on).to_string(),
                    kind: kind.to_string(),
                })
            })
            .collect()
    }
}

/// A task file: frontmatter, body, and the folder (status) it is in or will be written to.
#[derive(Debug, Clone)]
pub struct TaskDoc {
    pub front: DocumentMut,
    pub body: String,
    pub status: Status,
}

impl TaskDoc {
    fn f(&self) -> Fields<'_> {
        Fields(self.front.as_table())
    }

    /// The frontmatter's read-only fields.
    pub fn view(&self) -> TaskFront<'_> {
        TaskFront(self.front.as_table())
    }

    fn get_str(&self, key: &str) -> Option<&str> {
        self.front.get(key).and_then(Item::as_str)
    }

    pub fn id(&self) -> &str {
        self.get_str("id").unwrap_or("")
    }

    pub fn owner(&self) -> &str {
        self.get_str("owner").unwrap_or("")
    }

    pub fn rev(&self) -> &str {
        self.get_str("rev").unwrap_or("")
    }

    pub fn assignee(&self) -> Option<&str> {
        self.get_str("assignee")
    }

    pub fn parent(&self) -> Option<&str> {
        self.get_str("parent").map(strip_wikilink)
    }

    pub fn priority(&self) -> &str {
        self.view().priority()
    }

    pub fn resolution(&self) -> Option<&str> {
        self.get_str("resolution")
    }

    pub fn generation(&self) -> i64 {
        self.view().generation()
    }

    /// The title: the first level-1 heading of the body.
    pub fn title(&self) -> &str {
        crate::model::taskdoc::title_of(&self.body).unwrap_or("")
    }

    pub fn traces(&self) -> Vec<String> {
        self.f()
            .str_list("traces")
            .unwrap_or_default()
            .into_iter()
            .map(String::from)
            .collect()
    }

    pub fn tags(&self) -> Vec<String> {
        self.view().tags()
    }

    /// The estimate, if present and valid.
    pub fn estimate(&self) -> Result<Option<Estimate>, FieldError> {
        self.view().estimate()
    }

    /// The `depends_on` edges (type defaults to FS).
    pub fn depends_on(&self) -> Vec<Dependency> {
        self.view().depends_on()
    }

    pub fn criteria(&self) -> Vec<Criterion> {
        body::criteria(&self.body)
    }

    pub fn log(&self) -> Vec<LogLine> {
        parse_log(&self.body)
    }

    /// True when `who`'s last word on holding this task is a claim (or a claim the Log says
    /// lost), yet someone else holds it or nobody does: an earlier claim made in another
    /// clone won, and the merge or the owner's sync moved the task on. A release by `who`,
    /// or an owner's assignment to `who`, ends the question.
    pub fn claim_lost_by(&self, who: &str) -> bool {
        if self.assignee() == Some(who) || self.status == Status::Done {
            return false;
        }
        let lost = format!("claim lost by {who}:");
        let assigned = format!("assigned {who}");
        self.log()
            .iter()
            .rev()
            .find_map(|l| {
                if l.text.starts_with(&lost) || (l.agent == who && l.text == "claimed") {
                    Some(true)
                } else if (l.agent == who && l.text == "released") || l.text == assigned {
                    Some(false)
                } else {
                    None
                }
            })
            .unwrap_or(false)
    }

    /// [`TaskDoc::claim_lost_by`], or `who`'s latest claim of this task (`latest`) was
    /// refused by the owner's sync, or would be: another agent held the task by an earlier
    /// claim. A later Log line that settles who holds it for `who` (its own claim or
    /// release, an owner's assignment to it) ends the question.
    pub fn claim_lost(&self, who: &str, latest: Option<ClaimTry<'_>>) -> bool {
        if self.claim_lost_by(who) {
            return true;
        }
        let Some(c) = latest.filter(|c| c.refused) else {
            return false;
        };
        if self.assignee() == Some(who) || self.status == Status::Done {
            return false;
        }
        let assigned = format!("assigned {who}");
        !self.log().iter().any(|l| {
            let later = l
                .event
                .as_deref()
                .map_or(l.at.as_str() >= c.at, |e| e > c.event);
            later
                && (l.text == assigned
                    || (l.agent == who && (l.text == "claimed" || l.text == "released")))
        })
    }

    /// True when the Log already holds a line produced by event `id`.
    pub fn has_event(&self, id: &str) -> bool {
        self.log().iter().any(|l| l.event.as_deref() == Some(id))
    }

    /// Appends one Log line.
    pub fn log_line(&mut self, stamp: Stamp<'_>, text: &str) {
        let line = match stamp.event {
            Some(id) => format!("- {} {} {text} (event {id})", stamp.at, stamp.by),
            None => format!("- {} {} {text}", stamp.at, stamp.by),
        };
        self.body = body::append_to_section(&self.body, "Log", &line);
    }

    fn set_str(&mut self, key: &str, v: &str) {
        self.front[key] = value(v);
    }

    fn remove(&mut self, key: &str) {
        self.front.remove(key);
    }

    fn done_guard(&self) -> Result<(), Reject> {
        if self.status == Status::Done {
            Err(Reject::TaskDone)
        } else {
            Ok(())
        }
    }

    /// `claim`: assignee := `who`; open → active; a blocked task stays blocked.
    pub fn claim(&mut self, who: &str, stamp: Stamp<'_>) -> Result<Change, Reject> {
        self.done_guard()?;
        match self.assignee().map(str::to_string) {
            Some(a) if a == who => return Ok(Change::Unchanged),
            Some(a) if !self.displaces(&a, stamp.event) => return Err(Reject::Claimed),
            // The loser reads it in the Log: its claim, applied first in its clone, lost.
            Some(a) => self.log_line(
                Stamp {
                    at: stamp.at,
                    by: stamp.by,
                    event: None,
                },
                &format!("claim lost by {a}: the earlier claim wins"),
            ),
            None => {}
        }
        self.set_str("assignee", who);
        if self.status == Status::Open {
            self.status = Status::Active;
        }
        self.log_line(stamp, "claimed");
        Ok(Change::Applied)
    }

    /// Whether claim event `event` is older than the claim event that made `assignee` the
    /// assignee: two clones that each applied a claim first, before they exchanged, then
    /// agree on the earliest claim (FORMAT §13.2), whichever arrived first.
    fn displaces(&self, assignee: &str, event: Option<&str>) -> bool {
        let Some(event) = event else {
            return false;
        };
        // The line that made `assignee` the assignee: its latest `claimed` line. A merged Log
        // holds both clones' lines in time order, so other agents' claims may follow it.
        let log = super::task::parse_log(&self.body);
        let Some(at) = log
            .iter()
            .rposition(|l| l.text == "claimed" && l.agent == assignee)
        else {
            return false;
        };
        // An owner's assignment, or the assignee's own release, after it: no claim to beat.
        if log[at + 1..].iter().any(|l| {
            l.text.starts_with("assigned ") || (l.text == "released" && l.agent == assignee)
        }) {
            return false;
        }
        log[at]
            .event
            .as_deref()
            .is_some_and(|current| event < current)
    }

    /// `release` by the assignee `who`: assignee removed; active → open.
    pub fn release(&mut self, who: &str, stamp: Stamp<'_>) -> Result<Change, Reject> {
        self.done_guard()?;
        match self.assignee() {
            Some(a) if a == who => {}
            _ => return Err(Reject::NotAssignee),
        }
        self.remove("assignee");
        if self.status == Status::Active {
            self.status = Status::Open;
        }
        self.log_line(stamp, "released");
        Ok(Change::Applied)
    }

    /// The owner sets or clears the assignee directly (`task assign`).
    pub fn assign(&mut self, who: Option<&str>, stamp: Stamp<'_>) -> Result<Change, Reject> {
        self.done_guard()?;
        if self.assignee() == who {
            return Ok(Change::Unchanged);
        }
        let previous = self.assignee().map(str::to_string);
        match who {
            Some(w) => {
                self.set_str("assignee", w);
                if self.status == Status::Open {
                    self.status = Status::Active;
                }
                self.log_line(stamp, &format!("assigned {w}"));
            }
            None => {
                self.remove("assignee");
                if self.status == Status::Active {
                    self.status = Status::Open;
                }
                let prev = previous.unwrap_or_default();
                self.log_line(stamp, &format!("unassigned {prev}"));
            }
        }
        Ok(Change::Applied)
    }

    /// `check`: each `(n, text)` becomes `[x]` if criterion `n` still has that text; otherwise
    /// nothing changes (`criterion_changed`). One Log line per item, with the verification.
    pub fn check(
        &mut self,
        items: &[(u32, String)],
        verify: Option<&Verify>,
        stamp: Stamp<'_>,
    ) -> Result<Change, Reject> {
        self.done_guard()?;
        let criteria = self.criteria();
        for (n, text) in items {
            match criteria.iter().find(|c| c.n == *n) {
                Some(c) if &c.text == text => {}
                _ => return Err(Reject::CriterionChanged),
            }
        }
        let all_checked = items
            .iter()
            .all(|(n, _)| criteria.iter().any(|c| c.n == *n && c.checked));
        if all_checked && verify.is_none() {
            return Ok(Change::Unchanged);
        }
        for (n, _) in items {
            if let Some(b) = body::set_checked(&self.body, *n, true) {
                self.body = b;
            }
            let text = match verify {
                Some(v) => format!(
                    "checked {n} verify=`{}` exit={} output={}",
                    v.command, v.exit_code, v.output
                ),
                None => format!("checked {n}"),
            };
            self.log_line(stamp, &text);
        }
        Ok(Change::Applied)
    }

    /// `block`: open or active → blocked, Log `blocked: <reason>`.
    pub fn block(&mut self, reason: &str, stamp: Stamp<'_>) -> Result<Change, Reject> {
        self.done_guard()?;
        if self.status == Status::Blocked {
            return Ok(Change::Unchanged);
        }
        self.status = Status::Blocked;
        self.log_line(stamp, &format!("blocked: {}", one_line(reason)));
        Ok(Change::Applied)
    }

    /// `unblock`: blocked → active if assigned, else open.
    pub fn unblock(&mut self, stamp: Stamp<'_>) -> Result<Change, Reject> {
        self.done_guard()?;
        if self.status != Status::Blocked {
            return Ok(Change::Unchanged);
        }
        self.status = self.unblocked_status();
        self.log_line(stamp, "unblocked");
        Ok(Change::Applied)
    }

    fn unblocked_status(&self) -> Status {
        if self.assignee().is_some() {
            Status::Active
        } else {
            Status::Open
        }
    }

    /// `finish` (the definition of done already passed): → done, `resolution = "completed"`.
    pub fn finish(&mut self, stamp: Stamp<'_>) -> Result<Change, Reject> {
        if self.status == Status::Done {
            return Ok(Change::Unchanged);
        }
        self.status = Status::Done;
        self.set_str("resolution", "completed");
        self.log_line(stamp, "finished");
        Ok(Change::Applied)
    }

    /// Owner closes without the definition of done: `unverified` or `abandoned`.
    pub fn close(
        &mut self,
        resolution: &str,
        reason: &str,
        stamp: Stamp<'_>,
    ) -> Result<Change, Reject> {
        if self.status == Status::Done {
            return Ok(Change::Unchanged);
        }
        self.status = Status::Done;
        self.set_str("resolution", resolution);
        self.log_line(stamp, &format!("closed {resolution}: {}", one_line(reason)));
        Ok(Change::Applied)
    }

    /// Owner reopens a done task: every criterion unchecked, `generation` + 1, assignee and
    /// resolution removed, → open.
    pub fn reopen(&mut self, reason: &str, stamp: Stamp<'_>) -> Result<Change, Reject> {
        if self.status != Status::Done {
            return Err(Reject::BadTransition);
        }
        for c in self.criteria() {
            if c.checked
                && let Some(b) = body::set_checked(&self.body, c.n, false)
            {
                self.body = b;
            }
        }
        let generation = self.generation() + 1;
        self.front["generation"] = value(generation);
        self.remove("assignee");
        self.remove("resolution");
        self.status = Status::Open;
        self.log_line(stamp, &format!("reopened: {}", one_line(reason)));
        Ok(Change::Applied)
    }

    /// `comment`: Log `comment: <first line>`.
    pub fn comment(&mut self, text: &str, stamp: Stamp<'_>) -> Change {
        self.log_line(stamp, &format!("comment: {}", one_line(text)));
        Change::Applied
    }

    /// A finding about the task: Log `finding <note-id>`.
    pub fn finding(&mut self, note_id: &str, stamp: Stamp<'_>) -> Change {
        self.log_line(stamp, &format!("finding {note_id}"));
        Change::Applied
    }

    /// A `help` question about the task. A blocking one moves it to blocked with Log
    /// `question <id>`; a non-blocking one leaves the task as it is (no Log line), so every
    /// `question` line in a Log is one that blocked.
    pub fn question(
        &mut self,
        question: &str,
        blocks: bool,
        stamp: Stamp<'_>,
    ) -> Result<Change, Reject> {
        self.done_guard()?;
        if !blocks {
            return Ok(Change::Applied);
        }
        self.status = Status::Blocked;
        self.log_line(stamp, &format!("question {question}"));
        Ok(Change::Applied)
    }

    /// The Log line that moved the task into blocked, found by replaying the Log: `blocked:`,
    /// `question` and `status … -> blocked` lines move it there when it was not blocked yet.
    pub fn blocked_by(&self) -> Option<LogLine> {
        let mut mover: Option<LogLine> = None;
        for line in self.log() {
            let t = line.text.as_str();
            let enters = t.starts_with("blocked: ")
                || t.starts_with("question ")
                || (t.starts_with("status ") && t.ends_with("-> blocked"));
            let leaves = t == "unblocked"
                || t.starts_with("status blocked ->")
                || t.starts_with("reopened")
                || t == "finished"
                || t.starts_with("closed ");
            if enters {
                if mover.is_none() {
                    mover = Some(line.clone());
                }
            } else if leaves {
                mover = None;
            } else if let Some(q) = t.strip_prefix("answered ")
                && mover
                    .as_ref()
                    .is_some_and(|m| m.text == format!("question {q}"))
            {
                mover = None;
            }
        }
        mover
    }

    /// An answer: Log `answered <question>`; unblocks when the question is what blocked it.
    /// Returns whether it unblocked.
    pub fn answered(&mut self, question: &str, stamp: Stamp<'_>) -> bool {
        let blocked_by_it = self.status == Status::Blocked
            && self
                .blocked_by()
                .is_some_and(|l| l.text == format!("question {question}"));
        self.log_line(stamp, &format!("answered {question}"));
        if blocked_by_it {
            self.status = self.unblocked_status();
        }
        blocked_by_it
    }

    /// The owner hands the task to another rw agent.
    pub fn handover(&mut self, to: &str, stamp: Stamp<'_>, adoption: bool) -> Change {
        if self.owner() == to {
            return Change::Unchanged;
        }
        self.set_str("owner", to);
        let text = if adoption {
            "adopted by a-root".to_string()
        } else {
            format!("handed over to {to}")
        };
        self.log_line(stamp, &text);
        Change::Applied
    }

    /// Sets or clears an optional string key (owner edits).
    pub fn set_opt(&mut self, key: &str, v: Option<&str>) {
        match v {
            Some(v) => self.set_str(key, v),
            None => self.remove(key),
        }
    }

    /// Replaces `depends_on`.
    pub fn set_depends_on(&mut self, deps: &[Dependency]) {
        if deps.is_empty() {
            self.remove("depends_on");
            return;
        }
        let mut arr = toml_edit::Array::new();
        for d in deps {
            let mut t = toml_edit::InlineTable::new();
            t.insert("on", Value::from(d.on.as_str()));
            t.insert("type", Value::from(d.kind.as_str()));
            arr.push(Value::InlineTable(t));
        }
        self.front["depends_on"] = value(arr);
    }
}

/// The first level-1 heading of a body.
pub fn title_of(body: &str) -> Option<&str> {
    body.lines()
        .scan(None::<&str>, |fence, line| {
            if let Some(open) = *fence {
                if line.starts_with(open) {
                    *fence = None;
                }
                return Some(None);
            }
            if line.starts_with("```") {
                *fence = Some("```");
                return Some(None);
            }
            if line.starts_with("~~~") {
                *fence = Some("~~~");
                return Some(None);
            }
            Some(line.strip_prefix("# ").map(str::trim))
        })
        .flatten()
        .next()
}

/// Id-typed fields hold bare ids; readers also accept one wikilink (FORMAT §2).
pub fn strip_wikilink(s: &str) -> &str {
    s.strip_prefix("[[")
        .and_then(|r| r.strip_suffix("]]"))
        .map(|r| r.split('|').next().unwrap_or(r))
        .unwrap_or(s)
}

/// The first line of a text, for Log lines.
pub fn one_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(status: Status, extra: &str) -> TaskDoc {
        let front = format!(
            "id = \"t-01KJPXJ57RGDMEE50E5T1E877Q\"\nkind = \"task\"\nowner = \"a-root\"\nrev = \"01KJPXJ57RGDMEE50E5T1E877Q\"\n{extra}"
        );
        TaskDoc {
            front: front.parse().expect("toml"),
            body: "# Shim\n\n## Acceptance\n- [ ] one\n- [ ] `true` passes\n\n## Log\n- 2026-03-02T09:20:11Z a-root created\n".into(),
            status,
        }
    }

    const AT: &str = "2026-03-03T10:02:44Z";

    fn ev(id: &'static str) -> Stamp<'static> {
        Stamp {
            at: AT,
            by: "a-b",
            event: Some(id),
        }
    }

    #[test]
    fn an_estimate_reads_inline_or_as_a_table_and_names_what_is_wrong() {
        let est = |extra: &str| doc(Status::Open, extra).estimate();
        let three = |e: Option<Estimate>| e.map(|e| (e.optimistic, e.probable, e.pessimistic));
        let inline = est("estimate = { optimistic = 1, probable = 2.5, pessimistic = 4 }\n");
        assert_eq!(three(inline.unwrap()), Some((1.0, 2.5, 4.0)));
        let table = est("[estimate]\noptimistic = 2\nprobable = 3\npessimistic = 5\n");
        assert_eq!(three(table.unwrap()), Some((2.0, 3.0, 5.0)));
        assert_eq!(three(est("").unwrap()), None);
        let err = |extra: &str| est(extra).unwrap_err().to_string();
        assert!(err("estimate = 3\n").contains("a scalar is not an estimate"));
        assert!(
            err("estimate = { optimistic = 1, probable = 2 }\n")
                .contains("`pessimistic` is missing")
        );
        assert!(
            err("estimate = { optimistic = 1, probable = \"x\", pessimistic = 3 }\n")
                .contains("`probable` must be a number")
        );
    }

    #[test]
    fn an_earlier_claim_arriving_later_takes_the_task_and_says_so() {
        let mut t = doc(Status::Open, "");
        let later = Stamp {
            at: AT,
            by: "a-late",
            event: Some("01KJSJCSD0D9PPNTSVE6C6J8MT"),
        };
        assert_eq!(t.claim("a-late", later), Ok(Change::Applied));
        let earlier = Stamp {
            at: AT,
            by: "a-early",
            event: Some("01KJSJCSD0D9PPNTSVE6C6J8MS"),
        };
        assert_eq!(t.claim("a-early", earlier), Ok(Change::Applied));
        assert_eq!(t.assignee(), Some("a-early"));
        assert!(
            t.body
                .contains("claim lost by a-late: the earlier claim wins")
        );
        // A claim later than the one in force is still refused.
        let last = Stamp {
            at: AT,
            by: "a-last",
            event: Some("01KJSJCSD0D9PPNTSVE6C6J8MV"),
        };
        assert_eq!(t.claim("a-last", last), Err(Reject::Claimed));
    }

    /// A merged Log (both clones' lines in time order) holds another agent's later claim
    /// after the assignee's: an earlier claim arriving now still displaces the assignee.
    #[test]
    fn an_earlier_claim_displaces_the_assignee_of_a_merged_log() {
        let mut t = doc(Status::Active, "assignee = \"a-x\"\n");
        t.body.push_str(
            "- 2026-03-03T10:00:02Z a-x claimed (event 01KJSJCSD0D9PPNTSVE6C6J8MS)\n\
             - 2026-03-03T10:00:09Z a-y claimed (event 01KJSJCSD0D9PPNTSVE6C6J8MV)\n",
        );
        let earliest = Stamp {
            at: AT,
            by: "a-w",
            event: Some("01KJSJCSD0D9PPNTSVE6C6J8MR"),
        };
        assert_eq!(t.claim("a-w", earliest), Ok(Change::Applied));
        assert_eq!(t.assignee(), Some("a-w"));
        assert!(t.claim_lost_by("a-x"));
    }

    /// A claim the owner's sync refused (another held the task) reads as lost until a later
    /// Log line settles who holds it for the agent.
    #[test]
    fn a_refused_claim_is_lost_until_the_agent_holds_the_task() {
        let mut t = doc(Status::Active, "assignee = \"a-x\"\n");
        t.body
            .push_str("- 2026-03-03T10:00:02Z a-x claimed (event 01KJSJCSD0D9PPNTSVE6C6J8MS)\n");
        let refused = ClaimTry {
            event: "01KJSJCSD0D9PPNTSVE6C6J8MT",
            at: "2026-03-03T10:00:05Z",
            refused: true,
        };
        assert!(!t.claim_lost_by("a-y"));
        assert!(t.claim_lost("a-y", Some(refused)));
        assert!(!t.claim_lost(
            "a-y",
            Some(ClaimTry {
                refused: false,
                ..refused
            })
        ));
        assert!(!t.claim_lost("a-x", Some(refused)));
        t.body
            .push_str("- 2026-03-03T10:00:07Z a-root assigned a-y\n");
        assert!(!t.claim_lost("a-y", Some(refused)));
    }

    #[test]
    fn claim_then_competing_claim() {
        let mut t = doc(Status::Open, "");
        assert_eq!(
            t.claim("a-b", ev("01KJSJCSD0D9PPNTSVE6C6J8MS")),
            Ok(Change::Applied)
        );
        assert_eq!(t.status, Status::Active);
        assert_eq!(t.assignee(), Some("a-b"));
        assert!(t.has_event("01KJSJCSD0D9PPNTSVE6C6J8MS"));
        assert_eq!(
            t.claim("a-c", ev("01KJSJCSD0D9PPNTSVE6C6J8MT")),
            Err(Reject::Claimed)
        );
        assert_eq!(
            t.claim("a-b", ev("01KJSJCSD0D9PPNTSVE6C6J8MV")),
            Ok(Change::Unchanged)
        );
    }

    #[test]
    fn check_requires_the_same_text() {
        let mut t = doc(Status::Active, "assignee = \"a-b\"\n");
        assert_eq!(
            t.check(
                &[(1, "changed".into())],
                None,
                ev("01KJSJCSD0D9PPNTSVE6C6J8MS")
            ),
            Err(Reject::CriterionChanged)
        );
        assert_eq!(
            t.check(&[(1, "one".into())], None, ev("01KJSJCSD0D9PPNTSVE6C6J8MS")),
            Ok(Change::Applied)
        );
        assert!(t.criteria()[0].checked);
        assert_eq!(
            t.check(&[(1, "one".into())], None, ev("01KJSJCSD0D9PPNTSVE6C6J8MT")),
            Ok(Change::Unchanged)
        );
    }

    #[test]
    fn answer_unblocks_only_its_own_question() {
        // Blocked for another reason first: answering the later question leaves it blocked.
        let mut t = doc(Status::Open, "");
        t.block("waiting on infra", ev("01KJSJCSD0D9PPNTSVE6C6J8MT"))
            .expect("blocks");
        t.question("Q1", true, ev("01KJSJCSD0D9PPNTSVE6C6J8MS"))
            .expect("asks");
        assert!(!t.answered("Q1", ev("01KJSJCSD0D9PPNTSVE6C6J8MV")));
        assert_eq!(t.status, Status::Blocked);
        // Blocked by the question itself: the answer unblocks.
        let mut t = doc(Status::Open, "");
        t.question("Q2", true, ev("01KJSJCSD0D9PPNTSVE6C6J8MS"))
            .expect("asks");
        assert_eq!(t.status, Status::Blocked);
        assert!(t.answered("Q2", ev("01KJSJCSD0D9PPNTSVE6C6J8MT")));
        assert_eq!(t.status, Status::Open);
        // A non-blocking question leaves the task where it is.
        let mut t = doc(Status::Open, "");
        assert_eq!(
            t.question("Q0", false, ev("01KJSJCSD0D9PPNTSVE6C6J8MS")),
            Ok(Change::Applied)
        );
        assert_eq!(t.status, Status::Open);
    }

    #[test]
    fn reopen_unchecks_and_counts_generations() {
        let mut t = doc(
            Status::Done,
            "resolution = \"completed\"\nassignee = \"a-b\"\n",
        );
        t.body = body::set_checked(&t.body, 1, true).expect("box");
        t.reopen("regressed", ev("01KJSJCSD0D9PPNTSVE6C6J8MS"))
            .expect("reopens");
        assert_eq!(t.status, Status::Open);
        assert_eq!(t.generation(), 1);
        assert!(t.criteria().iter().all(|c| !c.checked));
        assert!(t.assignee().is_none() && t.resolution().is_none());
    }
}
