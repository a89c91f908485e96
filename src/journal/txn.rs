//! Transactions (FORMAT §18.2): `txn/<txn-id>/<step-ULID>.toml`, one new file per step, never
//! rewritten. The first file holds the frozen plan and its digest, the last the outcome; a
//! step's state is the `status` of its latest file, so an interrupted apply can be resumed by
//! reading the directory back.

use std::path::PathBuf;

use serde_json::Value;
use toml_edit::{DocumentMut, Item, value};
use ulid::Ulid;

use super::record::{to_inline, to_json, write_table};
use crate::model::id::{parse_ulid, ulid_time};
use crate::model::toml_time;
use crate::objects::{self, Listing};
use crate::store::{Problem, Reason, TEMP_PREFIX, TomlRecord};
use crate::workspace::Workspace;

/// The status of one step file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepStatus {
    Started,
    Done,
    Failed,
    Skipped,
}

impl StepStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Started => "started",
            StepStatus::Done => "done",
            StepStatus::Failed => "failed",
            StepStatus::Skipped => "skipped",
        }
    }

    fn parse(s: &str) -> Option<StepStatus> {
        Some(match s {
            "started" => StepStatus::Started,
            "done" => StepStatus::Done,
            "failed" => StepStatus::Failed,
            "skipped" => StepStatus::Skipped,
            _ => return None,
        })
    }
}

/// How a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnOutcome {
    Completed,
    Refused,
    Partial,
    Abandoned,
}

impl TxnOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            TxnOutcome::Completed => "completed",
            TxnOutcome::Refused => "refused",
            TxnOutcome::Partial => "partial",
            TxnOutcome::Abandoned => "abandoned",
        }
    }
}

/// One step file as read back.
#[derive(Debug, Clone)]
pub struct Step {
    pub id: String,
    pub seq: i64,
    pub step: String,
    pub status: StepStatus,
    pub guard: Value,
    pub observed: Value,
    /// The outcome step's `outcome`.
    pub outcome: Option<String>,
}

/// A transaction: its frozen plan and every step file written so far, in `seq` order.
///
/// Invariants: the plan file is `txn/<id>/<id>.toml` with `seq = 1`; step ids strictly
/// increase with `seq`; at most one outcome step exists and nothing follows it.
#[derive(Debug, Clone)]
pub struct Txn {
    id: Ulid,
    tool: String,
    created_by: String,
    plan_digest: String,
    /// The plan as read back by [`Txn::load`]; a transaction just begun does not keep it (its
    /// caller holds the plan, typed, and at 5,000 branches the JSON is about 17 MB).
    plan: Option<Value>,
    steps: Vec<Step>,
}

/// A new step to record.
#[derive(Debug, Clone)]
pub struct NewStep<'a> {
    /// A fresh ULID; the record uses the next id after the last step when this one does not
    /// sort after it.
    pub fresh: Ulid,
    pub step: &'a str,
    pub status: StepStatus,
    /// What was expected before acting (a SHA, `absent`, a digest).
    pub guard: Value,
    /// What was found or done.
    pub observed: Value,
}

impl Txn {
    /// Opens a transaction: creates its plan file with the frozen `plan` and its digest.
    /// `id` is the transaction id and the plan step's id.
    pub fn begin(
        ws: &Workspace,
        tool: &str,
        id: Ulid,
        created_by: &str,
        plan_digest: &str,
        plan: Value,
    ) -> Result<Txn, objects::Error> {
        let mut txn = Txn {
            id,
            tool: tool.to_string(),
            created_by: created_by.to_string(),
            plan_digest: plan_digest.to_string(),
            plan: None,
            steps: Vec::new(),
        };
        let mut doc = txn.header(id, 1, "plan", StepStatus::Done);
        doc["plan_digest"] = value(plan_digest);
        let mut text = doc.to_string();
        let empty = serde_json::Map::new();
        write_table(&mut text, "plan", plan.as_object().unwrap_or(&empty));
        ws.fs.create_new(&txn.step_path(ws, id), text.as_bytes())?;
        txn.steps.push(Step {
            id: id.to_string(),
            seq: 1,
            step: "plan".into(),
            status: StepStatus::Done,
            guard: Value::Null,
            observed: Value::Null,
            outcome: None,
        });
        Ok(txn)
    }

    /// The transaction id.
    pub fn id(&self) -> Ulid {
        self.id
    }

    pub fn tool(&self) -> &str {
        &self.tool
    }

    pub fn plan_digest(&self) -> &str {
        &self.plan_digest
    }

    /// The frozen plan as read back from its file (without the `null`s TOML cannot hold);
    /// `None` for a transaction this process began.
    pub fn plan(&self) -> Option<&Value> {
        self.plan.as_ref()
    }

    /// Every step file, in `seq` order, the plan first.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The latest status recorded for the step named `step`.
    pub fn status_of(&self, step: &str) -> Option<StepStatus> {
        self.steps
            .iter()
            .rev()
            .find(|s| s.step == step)
            .map(|s| s.status)
    }

    /// The latest file of the step named `step`.
    pub fn latest(&self, step: &str) -> Option<&Step> {
        self.steps.iter().rev().find(|s| s.step == step)
    }

    /// The outcome, once the transaction is closed.
    pub fn outcome(&self) -> Option<&str> {
        self.steps
            .iter()
            .find(|s| s.step == "outcome")
            .and_then(|s| s.outcome.as_deref())
    }

    /// The outcome step, once the transaction is closed.
    pub fn outcome_step(&self) -> Option<&Step> {
        self.steps.iter().find(|s| s.step == "outcome")
    }

    /// Appends one step file. Returns its `seq`.
    pub fn record(&mut self, ws: &Workspace, step: NewStep<'_>) -> Result<i64, objects::Error> {
        self.write(ws, step, None)
    }

    /// Closes the transaction with its outcome step (`observed` may name the evidence).
    pub fn finish(
        &mut self,
        ws: &Workspace,
        fresh: Ulid,
        outcome: TxnOutcome,
        observed: Value,
    ) -> Result<i64, objects::Error> {
        let step = NewStep {
            fresh,
            step: "outcome",
            status: StepStatus::Done,
            guard: Value::Null,
            observed,
        };
        self.write(ws, step, Some(outcome))
    }

    fn write(
        &mut self,
        ws: &Workspace,
        step: NewStep<'_>,
        outcome: Option<TxnOutcome>,
    ) -> Result<i64, objects::Error> {
        let last = self
            .steps
            .last()
            .and_then(|s| parse_ulid(&s.id))
            .unwrap_or(self.id);
        let id = if step.fresh > last {
            step.fresh
        } else {
            last.increment().unwrap_or(step.fresh)
        };
        let seq = self.steps.last().map_or(1, |s| s.seq + 1);
        let mut doc = self.header(id, seq, step.step, step.status);
        if let Some(o) = outcome {
            doc["outcome"] = value(o.as_str());
        }
        if let Some(g) = to_inline(&step.guard) {
            doc["guard"] = Item::Value(g);
        }
        if let Some(o) = to_inline(&step.observed) {
            doc["observed"] = Item::Value(o);
        }
        ws.fs
            .create_new(&self.step_path(ws, id), doc.to_string().as_bytes())?;
        self.steps.push(Step {
            id: id.to_string(),
            seq,
            step: step.step.to_string(),
            status: step.status,
            guard: step.guard,
            observed: step.observed,
            outcome: outcome.map(|o| o.as_str().to_string()),
        });
        Ok(seq)
    }

    fn header(&self, id: Ulid, seq: i64, step: &str, status: StepStatus) -> DocumentMut {
        let mut doc = DocumentMut::new();
        doc["id"] = value(id.to_string());
        doc["kind"] = value("txn-step");
        doc["txn"] = value(self.id.to_string());
        doc["tool"] = value(self.tool.as_str());
        doc["created"] = value(toml_time(ulid_time(id)));
        doc["created_by"] = value(self.created_by.as_str());
        doc["seq"] = value(seq);
        doc["step"] = value(step);
        doc["status"] = value(status.as_str());
        doc
    }

    fn step_path(&self, ws: &Workspace, step: Ulid) -> PathBuf {
        ws.path(&["txn", &self.id.to_string(), &format!("{step}.toml")])
    }

    /// Reads a transaction back; `Ok(None)` when there is no `txn/<id>/` plan file. A step
    /// file that does not parse makes the whole transaction unreadable (a hole in a
    /// transaction is never skipped over).
    pub fn load(ws: &Workspace, id: &str) -> Result<Option<Txn>, objects::Error> {
        let Some(txn_id) = parse_ulid(id) else {
            return Ok(None);
        };
        let dir = ws.path(&["txn", &txn_id.to_string()]);
        let mut steps: Vec<(Step, DocumentMut)> = Vec::new();
        for (name, path) in ws.fs.list_dir(&dir)? {
            if name.starts_with(TEMP_PREFIX) || !name.ends_with(".toml") {
                continue;
            }
            let bytes = ws.fs.read(&path)?;
            let record =
                TomlRecord::parse(&ws.display(&path), &bytes).map_err(objects::Error::malformed)?;
            let step = parse_step(&record.doc).ok_or_else(|| {
                objects::Error::malformed(Problem {
                    path: ws.display(&path),
                    reason: Reason::Schema,
                    detail: "not a txn-step record (`kind`, `seq`, `step`, `status`)".into(),
                })
            })?;
            steps.push((step, record.doc));
        }
        steps.sort_by_key(|(s, _)| s.seq);
        let Some((first, doc)) = steps.first() else {
            return Ok(None);
        };
        if first.step != "plan" || first.id != txn_id.to_string() {
            return Err(objects::Error::malformed(Problem {
                path: ws.display(&dir),
                reason: Reason::Schema,
                detail: "the first step is not the plan".into(),
            }));
        }
        let txn = Txn {
            id: txn_id,
            tool: str_of(doc, "tool"),
            created_by: str_of(doc, "created_by"),
            plan_digest: str_of(doc, "plan_digest"),
            plan: Some(doc.get("plan").map_or(Value::Null, to_json)),
            steps: steps.into_iter().map(|(s, _)| s).collect(),
        };
        Ok(Some(txn))
    }
}

fn str_of(doc: &DocumentMut, key: &str) -> String {
    doc.get(key)
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string()
}

fn parse_step(doc: &DocumentMut) -> Option<Step> {
    if doc.get("kind")?.as_str()? != "txn-step" {
        return None;
    }
    Some(Step {
        id: doc.get("id")?.as_str()?.to_string(),
        seq: doc.get("seq")?.as_integer()?,
        step: doc.get("step")?.as_str()?.to_string(),
        status: StepStatus::parse(doc.get("status")?.as_str()?)?,
        guard: doc.get("guard").map_or(Value::Null, to_json),
        observed: doc.get("observed").map_or(Value::Null, to_json),
        outcome: doc
            .get("outcome")
            .and_then(|v| v.as_str())
            .map(str::to_string),
    })
}

/// The plan files of every transaction of `tool` whose frozen plan has `digest`, oldest
/// first. Unreadable transactions are reported as warnings and skipped.
pub fn with_digest(
    ws: &Workspace,
    tool: &str,
    digest: &str,
) -> Result<Listing<Txn>, objects::Error> {
    let mut listing = Listing::default();
    for (name, _) in ws.fs.list_dir(&ws.path(&["txn"]))? {
        let Some(id) = parse_ulid(&name) else {
            continue;
        };
        let plan_path = ws.path(&["txn", &name, &format!("{id}.toml")]);
        if !plan_path.is_file() {
            continue;
        }
        let head = match ws.fs.read(&plan_path) {
            Ok(bytes) => TomlRecord::parse(&ws.display(&plan_path), &bytes)
                .map_err(crate::store::Error::Malformed),
            Err(e) => Err(e),
        };
        let Some(head) = warn_or_fail_record(&mut listing.warnings, head)? else {
            continue;
        };
        if head.doc.get("tool").and_then(|v| v.as_str()) != Some(tool)
            || head.doc.get("plan_digest").and_then(|v| v.as_str()) != Some(digest)
        {
            continue;
        }
        match Txn::load(ws, &name) {
            Ok(Some(txn)) => listing.items.push(txn),
            Ok(None) => {}
            Err(objects::Error::Store(crate::store::Error::Malformed(p))) => {
                listing.warnings.push(p)
            }
            Err(e) => return Err(e),
        }
    }
    Ok(listing)
}

/// Every transaction without an outcome step, of any tool (open ones pin what they touch).
pub fn open(ws: &Workspace) -> Result<Listing<Txn>, objects::Error> {
    let mut listing = Listing::default();
    for (name, _) in ws.fs.list_dir(&ws.path(&["txn"]))? {
        if parse_ulid(&name).is_none() {
            continue;
        }
        match Txn::load(ws, &name) {
            Ok(Some(txn)) if txn.outcome().is_none() => listing.items.push(txn),
            Ok(_) => {}
            Err(objects::Error::Store(crate::store::Error::Malformed(p))) => {
                listing.warnings.push(p)
            }
            Err(e) => return Err(e),
        }
    }
    Ok(listing)
}

fn warn_or_fail_record(
    warnings: &mut Vec<Problem>,
    result: Result<TomlRecord, crate::store::Error>,
) -> Result<Option<TomlRecord>, objects::Error> {
    match result {
        Ok(r) => Ok(Some(r)),
        Err(crate::store::Error::Malformed(p)) => {
            warnings.push(p);
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}
