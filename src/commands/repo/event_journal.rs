//! `events scan | reconcile | archive | restore`: the event journal's own health and its
//! recoverable archival (GIT_GITHUB.md B3, FORMAT §20, COMMANDS.md §12).
//!
//! Scan reports; reconcile pins what it found in an evidence record (never editing, deleting
//! or "fixing" an event); archive moves settled events older than a horizon into a segment,
//! byte for byte, manifest first and seal last; restore moves a sealed segment back.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::common::{self, ApplyArgs, Notice, Run, Start, announce, frozen, refused};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Mcp, Outcome};
use crate::journal::archive::{self, Entry, History, Manifest, SegmentState};
use crate::journal::evidence::{Evidence, EvidenceItem};
use crate::journal::txn::{StepStatus, Txn, TxnOutcome};
use crate::journal::{self, EventState, Journal};
use crate::model::Refusal;
use crate::model::event::EventHead;
use crate::model::id::{ROOT_AGENT, parse_ulid};
use crate::model::task::Status;
use crate::ops;
use crate::policy::apply::{self as contract, ApplyRequest};
use crate::store::{Problem, Reason};
use crate::workspace::Workspace;

const TOOL: &str = "reconcile-events";
/// A pending mailbox event whose target is done or missing for this long is stale.
const STALE_AFTER_DAYS: i64 = 7;

pub(super) fn commands() -> Vec<Command> {
    vec![
        Command::new("events.scan", Class::Read, scan_cmd, render_scan)
            .mcp(Mcp::Tier1("reconcile_event_journal")),
        Command::new(
            "events.reconcile",
            Class::Read,
            reconcile_cmd,
            render_reconcile,
        )
        .mcp(Mcp::Tier1("reconcile_event_journal")),
        Command::new("events.archive", Class::Read, archive_cmd, render_moves)
            .mcp(Mcp::Tier1("reconcile_event_journal")),
        Command::new("events.restore", Class::Read, restore_cmd, render_moves)
            .mcp(Mcp::Tier1("reconcile_event_journal")),
    ]
}

// ----- scan ------------------------------------------------------------------------------

/// Report the event journal's health: states, unreadable files, checksum and filename
/// mismatches, duplicate ids, stale pending events, receipts whose effect is missing, archive
/// segments, and history counts including sealed segments. Reads only.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanRequest {}

impl Classify for ScanRequest {}

/// One file the scan could not use.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BadFile {
    path: String,
    reason: String,
    #[serde(default)]
    detail: String,
    /// `sha256:` of the bytes as found (absent when they cannot be read).
    #[serde(default)]
    sha256: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Duplicate {
    id: String,
    paths: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Stale {
    id: String,
    kind: String,
    about: String,
    /// `target_done` or `target_missing`.
    reason: String,
    age_days: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Unmaterialized {
    id: String,
    receipt: String,
    about: String,
    /// `log_line_missing` or `note_missing`.
    missing: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SegmentView {
    id: String,
    state: String,
    events: u64,
    root: String,
}

/// What a scan finds (GIT_GITHUB.md B3 "scan").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Scan {
    /// Event files read from the live log (unreadable ones excluded).
    total: u64,
    by_state: BTreeMap<String, u64>,
    unreadable: Vec<BadFile>,
    checksum_mismatch: Vec<BadFile>,
    path_mismatch: Vec<BadFile>,
    duplicate_id: Vec<Duplicate>,
    stale_pending: Vec<Stale>,
    receipted_unmaterialized: Vec<Unmaterialized>,
}

#[derive(Debug, Serialize)]
pub struct ScanResponse {
    scan: Scan,
    segments: Vec<SegmentView>,
    history: History,
}

fn scan_cmd(ctx: &Ctx, _req: ScanRequest) -> Result<Outcome<ScanResponse>, Error> {
    let ws = ctx.ws()?;
    let journal = journal::read(ws)?;
    let scan = scan(ctx, ws, &journal)?;
    let (history, problems) = archive::history(ws, &journal)?;
    ctx.warn_all(problems);
    let segments = archive::segments(ws)?
        .items
        .into_iter()
        .map(|s| SegmentView {
            root: s.manifest.root(),
            events: s.manifest.entries.len() as u64,
            id: s.manifest.id,
            state: s.state.as_str().into(),
        })
        .collect();
    Ok(Outcome::Done(ScanResponse {
        scan,
        segments,
        history,
    }))
}

fn scan(ctx: &Ctx, ws: &Workspace, journal: &Journal) -> Result<Scan, Error> {
    let mut s = Scan {
        total: journal.events.len() as u64,
        by_state: BTreeMap::new(),
        unreadable: Vec::new(),
        checksum_mismatch: Vec::new(),
        path_mismatch: Vec::new(),
        duplicate_id: Vec::new(),
        stale_pending: Vec::new(),
        receipted_unmaterialized: Vec::new(),
    };
    for w in &journal.warnings {
        let bad = bad_file(ws, w);
        match w.reason {
            Reason::Checksum => s.checksum_mismatch.push(bad),
            Reason::IdMismatch => s.path_mismatch.push(bad),
            _ => s.unreadable.push(bad),
        }
    }
    let tasks = crate::objects::tasks::list_all(ws)?;
    let notes = crate::objects::notes::list(ws)?;
    let note_ids: BTreeSet<&str> = notes.items.iter().map(|n| n.note.id.as_str()).collect();
    let mut paths: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for ev in &journal.events {
        paths.entry(&ev.id).or_default().push(ev.path.clone());
        let state = journal.state(ev);
        let task = ev
            .about
            .as_deref()
            .filter(|a| a.starts_with("t-"))
            .map(|a| crate::objects::tasks::by_id(&tasks.items, a));
        let name = match (&state, task) {
            (EventState::Pending, Some(None)) => "unresolved",
            _ => state.as_str(),
        };
        *s.by_state.entry(name.to_string()).or_default() += 1;
        if state == EventState::Pending
            && let Some(t) = task
        {
            let age = (ctx.now().as_second() - ev.created.as_second()) / 86_400;
            let reason = match t {
                None => Some("target_missing"),
                Some(t) if t.doc.status == Status::Done => Some("target_done"),
                Some(_) => None,
            };
            if let Some(reason) = reason
                && age >= STALE_AFTER_DAYS
            {
                s.stale_pending.push(Stale {
                    id: ev.id.clone(),
                    kind: ev.kind.clone(),
                    about: ev.about.clone().unwrap_or_default(),
                    reason: reason.into(),
                    age_days: age,
                });
            }
        }
    }
    for (id, p) in paths {
        if p.len() > 1 {
            s.duplicate_id.push(Duplicate {
                id: id.to_string(),
                paths: p,
            });
        }
    }
    // A receipt's effect must be in the object: a Log line naming the event, or its note.
    for receipt in journal.events.iter().filter(|e| e.kind == "applied") {
        if journal.state(receipt) != EventState::Journal {
            continue;
        }
        for id in &receipt.applied {
            let Some(ev) = journal.get(id) else { continue };
            let Some(about) = ev.about.as_deref() else {
                continue;
            };
            let missing = if ev.kind == "finding"
                || (ev.kind == "answer" && ev.field_str("as") != Some("none"))
            {
                (!note_ids.contains(format!("n-{}", ev.id).as_str())).then_some("note_missing")
            } else {
                None
            };
            let log_missing = about.starts_with("t-")
                && leaves_log_line(ev)
                && crate::objects::tasks::by_id(&tasks.items, about)
                    .is_some_and(|t| !t.doc.has_event(&ev.id));
            let missing = missing.or(log_missing.then_some("log_line_missing"));
            if let Some(m) = missing {
                s.receipted_unmaterialized.push(Unmaterialized {
                    id: ev.id.clone(),
                    receipt: receipt.id.clone(),
                    about: about.into(),
                    missing: m.into(),
                });
            }
        }
    }
    Ok(s)
}

/// Whether applying this event writes a Log line naming it (FORMAT §14.2): a non-blocking
/// question and anything about a non-task do not.
fn leaves_log_line(ev: &EventHead) -> bool {
    match ev.kind.as_str() {
        "help" => ev.field_bool("blocks") != Some(false),
        "claim" | "release" | "check" | "finish" | "block" | "unblock" | "comment" | "finding"
        | "propose-status" | "answer" => true,
        _ => false,
    }
}

fn bad_file(ws: &Workspace, w: &Problem) -> BadFile {
    let sha256 = ops::archive::file_sha256(ws, &w.path);
    BadFile {
        path: w.path.clone(),
        reason: w.reason.as_str().into(),
        detail: w.detail.clone(),
        sha256,
    }
}

fn render_scan(r: &ScanResponse, _ctx: &Ctx) -> String {
    let s = &r.scan;
    let mut out = format!("{} events in the live log", s.total);
    let states: Vec<String> = s.by_state.iter().map(|(k, v)| format!("{v} {k}")).collect();
    if !states.is_empty() {
        out.push_str(&format!(" ({})", states.join(", ")));
    }
    out.push('\n');
    for (label, list) in [
        ("unreadable", &s.unreadable),
        ("checksum mismatch", &s.checksum_mismatch),
        ("path mismatch", &s.path_mismatch),
    ] {
        for b in list {
            out.push_str(&format!("{label}: {} ({})\n", b.path, b.reason));
        }
    }
    for d in &s.duplicate_id {
        out.push_str(&format!("duplicate id {}: {}\n", d.id, d.paths.join(", ")));
    }
    for st in &s.stale_pending {
        out.push_str(&format!(
            "stale pending {} {} about {} ({}, {} days)\n",
            st.kind, st.id, st.about, st.reason, st.age_days
        ));
    }
    for u in &s.receipted_unmaterialized {
        out.push_str(&format!(
            "receipted but unmaterialized: {} (receipt {}, {})\n",
            u.id, u.receipt, u.missing
        ));
    }
    for seg in &r.segments {
        out.push_str(&format!(
            "segment {}: {} events, {}\n",
            seg.id, seg.events, seg.state
        ));
    }
    out.push_str(&format!(
        "history: {} events ({} archived)\n",
        r.history.events, r.history.archived
    ));
    out
}

// ----- reconcile -------------------------------------------------------------------------

/// Find what is wrong in the event journal and, with --apply, pin it in an evidence record
/// (evidence/reconcile-events/): holes, checksum and filename mismatches and duplicate ids
/// are quarantined; stale pending events and receipts whose effect is missing are reported
/// for their owners. Nothing is ever edited or deleted.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconcileRequest {
    /// Record the previewed corrections (needs --digest; rw).
    #[arg(long)]
    #[serde(default)]
    apply: bool,
    /// The plan_digest of the preview being applied.
    #[arg(long, value_name = "DIGEST")]
    #[serde(default)]
    digest: Option<String>,
    /// Resume this transaction.
    #[arg(long, value_name = "ID")]
    #[serde(default)]
    txn: Option<String>,
}

impl Classify for ReconcileRequest {
    fn class(&self, declared: Class) -> Class {
        if self.apply { Class::Apply } else { declared }
    }
}

/// One correction: what the anomaly is and what reconcile does about it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Correction {
    /// The event id, when it is known.
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    path: Option<String>,
    /// `unreadable`, `checksum_mismatch`, `path_mismatch`, `duplicate_id`, `stale_pending`,
    /// `receipted_unmaterialized`.
    class: String,
    /// `quarantine` (pinned so no applier trusts it) or `report` (for the owner to act on).
    action: String,
    #[serde(default)]
    sha256: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReconcilePlan {
    tool: String,
    operation: String,
    corrections: Vec<Correction>,
}

#[derive(Debug, Serialize)]
pub struct ReconcileResponse {
    mode: &'static str,
    plan_digest: String,
    txn: Option<String>,
    outcome: Option<String>,
    already_applied: bool,
    scan: Scan,
    corrections: Vec<Correction>,
    evidence: Vec<String>,
}

fn corrections(s: &Scan) -> Vec<Correction> {
    let mut out = Vec::new();
    for (class, list) in [
        ("unreadable", &s.unreadable),
        ("checksum_mismatch", &s.checksum_mismatch),
        ("path_mismatch", &s.path_mismatch),
    ] {
        for b in list {
            out.push(Correction {
                id: None,
                path: Some(b.path.clone()),
                class: class.into(),
                action: "quarantine".into(),
                sha256: b.sha256.clone(),
            });
        }
    }
    for d in &s.duplicate_id {
        for p in &d.paths {
            out.push(Correction {
                id: Some(d.id.clone()),
                path: Some(p.clone()),
                class: "duplicate_id".into(),
                action: "quarantine".into(),
                sha256: None,
            });
        }
    }
    for st in &s.stale_pending {
        out.push(Correction {
            id: Some(st.id.clone()),
            path: None,
            class: "stale_pending".into(),
            action: "report".into(),
            sha256: None,
        });
    }
    for u in &s.receipted_unmaterialized {
        out.push(Correction {
            id: Some(u.id.clone()),
            path: None,
            class: "receipted_unmaterialized".into(),
            action: "report".into(),
            sha256: None,
        });
    }
    out
}

fn reconcile_cmd(ctx: &Ctx, req: ReconcileRequest) -> Result<Outcome<ReconcileResponse>, Error> {
    let ws = ctx.ws()?;
    let args = ApplyArgs {
        command: "events reconcile",
        tool: TOOL,
        apply: req.apply,
        digest: req.digest.as_deref(),
        txn: req.txn.as_deref(),
    };
    let journal = journal::read(ws)?;
    let found = scan(ctx, ws, &journal)?;
    let plan = ReconcilePlan {
        tool: TOOL.into(),
        operation: "reconcile".into(),
        corrections: corrections(&found),
    };
    let digest = digest_of(&plan, &[])?;
    let respond =
        |mode, txn: Option<&Txn>, evidence: Vec<String>, plan: ReconcilePlan| ReconcileResponse {
            mode,
            plan_digest: txn.map_or(digest.clone(), |t| t.plan_digest().to_string()),
            txn: txn.map(|t| t.id().to_string()),
            outcome: txn
                .and_then(|t| t.outcome())
                .map(str::to_string)
                .or((mode == "apply").then(|| "completed".into())),
            already_applied: false,
            scan: found.clone(),
            corrections: plan.corrections,
            evidence,
        };
    let (mut run, plan) = match common::start(ctx, args)? {
        Start::Preview => return Ok(Outcome::Done(respond("preview", None, Vec::new(), plan))),
        Start::Refused(r) => return refused(r),
        Start::Completed(txn) => {
            let plan: ReconcilePlan = frozen(&txn)?;
            let mut resp = respond("apply", Some(&txn), recorded_evidence(&txn), plan);
            resp.already_applied = true;
            return Ok(Outcome::Done(resp));
        }
        Start::Resume(txn) => {
            let run = Run::resume(ctx, &txn)?;
            let plan: ReconcilePlan = frozen(&run.txn)?;
            (run, plan)
        }
        Start::Fresh { digest: expected } => {
            let gate = ApplyRequest {
                command: "events reconcile",
                digest: Some(&expected),
            };
            if let Some(r) = contract::drift(gate, &digest, "the event journal") {
                return refused(r);
            }
            (Run::begin(ctx, TOOL, &digest, to_value(&plan)?)?, plan)
        }
    };
    if run.txn.outcome().is_some() {
        let mut resp = respond("apply", Some(&run.txn), recorded_evidence(&run.txn), plan);
        resp.already_applied = true;
        return Ok(Outcome::Done(resp));
    }
    let items = plan
        .corrections
        .iter()
        .map(|c| EvidenceItem {
            subject: c.path.clone().or(c.id.clone()).unwrap_or_default(),
            action: c.action.clone(),
            result: "done".into(),
            before: c.sha256.clone(),
            after: None,
            reasons: vec![c.class.clone()],
        })
        .collect();
    let path = write_evidence(
        ctx,
        &run.txn,
        "completed",
        items,
        vec![("corrections", plan.corrections.len() as i64)],
    )?;
    run.step(
        "record",
        StepStatus::Done,
        json!({"subject": "corrections", "count": plan.corrections.len()}),
        json!({"evidence": path}),
    )?;
    run.finish(TxnOutcome::Completed, json!({"evidence": path}))?;
    Ok(Outcome::Done(respond(
        "apply",
        Some(&run.txn),
        vec![path],
        plan,
    )))
}

fn render_reconcile(r: &ReconcileResponse, ctx: &Ctx) -> String {
    // An apply's text is success text (`-q` drops it); a preview's plan is the product.
    if ctx.quiet() && r.mode == "apply" {
        return String::new();
    }
    let mut out = String::new();
    if r.corrections.is_empty() {
        out.push_str("the event journal is consistent\n");
    }
    for c in &r.corrections {
        out.push_str(&format!(
            "{} {}: {}\n",
            c.action,
            c.class,
            c.path.as_deref().or(c.id.as_deref()).unwrap_or("-")
        ));
    }
    match r.mode {
        "preview" if !r.corrections.is_empty() => out.push_str(&format!(
            "plan_digest: {}\nrecord with: dacli events reconcile --apply --digest {}\n",
            r.plan_digest, r.plan_digest
        )),
        "apply" => {
            for e in &r.evidence {
                out.push_str(&format!("evidence: {e}\n"));
            }
        }
        _ => {}
    }
    out
}

// ----- archive and restore ---------------------------------------------------------------

/// Move settled events created before TIME out of events/ into a new archive segment,
/// byte for byte, with a manifest of every file's SHA-256 written first and a seal last.
/// Pending events, events a pending one refers to, events about tasks not done, bad files
/// and duplicates stay; a receipt goes with every event it settles. Preview reads; apply is
/// root's.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveRequest {
    /// Only events created before this time (RFC 3339, or `90d`, `12h`, `30m` back from now).
    #[arg(long, value_name = "TIME")]
    before: String,
    /// Also archive settled events about tasks that are not done.
    #[arg(long)]
    #[serde(default)]
    include_open_task_history: bool,
    /// At most this many events (and at most 2000, one segment).
    #[arg(long, value_name = "N", default_value_t = 50_000)]
    #[serde(default = "default_max_events")]
    max_events: usize,
    /// Run the previewed plan (needs --digest; root).
    #[arg(long)]
    #[serde(default)]
    apply: bool,
    /// The plan_digest of the preview being applied.
    #[arg(long, value_name = "DIGEST")]
    #[serde(default)]
    digest: Option<String>,
    /// Resume this transaction.
    #[arg(long, value_name = "ID")]
    #[serde(default)]
    txn: Option<String>,
}

fn default_max_events() -> usize {
    50_000
}

impl Classify for ArchiveRequest {
    fn class(&self, declared: Class) -> Class {
        if self.apply { Class::Apply } else { declared }
    }
}

/// Move an archive segment's events back into events/ after checking each file's SHA-256.
/// The manifest stays, and a restore record is added. Preview reads; apply is root's.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestoreRequest {
    /// The segment id (a ULID under archive/events/).
    #[arg(value_name = "SEGMENT")]
    segment: String,
    /// Run the previewed plan (needs --digest; root).
    #[arg(long)]
    #[serde(default)]
    apply: bool,
    /// The plan_digest of the preview being applied.
    #[arg(long, value_name = "DIGEST")]
    #[serde(default)]
    digest: Option<String>,
    /// Resume this transaction.
    #[arg(long, value_name = "ID")]
    #[serde(default)]
    txn: Option<String>,
}

impl Classify for RestoreRequest {
    fn class(&self, declared: Class) -> Class {
        if self.apply { Class::Apply } else { declared }
    }
}

/// One file to move.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Move {
    id: String,
    /// Relative to `events/` and to the segment.
    path: String,
    event_kind: String,
    created_by: String,
    bytes: u64,
    sha256: String,
    /// A `run` event's shortcut, kept in the manifest so `uses` survives archival.
    #[serde(default)]
    shortcut: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Excluded {
    id: String,
    /// `pending`, `referenced`, `duplicate`, `open_task`, `limit`.
    reason: String,
}

/// An archive or restore plan. `before_at` (an archive's horizon resolved against the clock)
/// is kept with the frozen plan but left out of the digest, or a relative `--before` would
/// drift every second.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MovePlan {
    tool: String,
    operation: String,
    #[serde(default)]
    before: Option<String>,
    #[serde(default)]
    before_at: Option<String>,
    #[serde(default)]
    include_open_task_history: bool,
    #[serde(default)]
    segment: Option<String>,
    root: String,
    moves: Vec<Move>,
    #[serde(default)]
    excluded: Vec<Excluded>,
    /// Eligible by state but younger than `before`.
    #[serde(default)]
    too_recent: u64,
}

#[derive(Debug, Serialize)]
pub struct MoveResponse {
    mode: &'static str,
    operation: String,
    plan_digest: String,
    txn: Option<String>,
    outcome: Option<String>,
    already_applied: bool,
    segment: Option<String>,
    count: u64,
    bytes: u64,
    root: String,
    moves: Vec<Move>,
    excluded: Vec<Excluded>,
    too_recent: u64,
    evidence: Vec<String>,
    notices: Vec<Notice>,
}

fn archive_cmd(ctx: &Ctx, req: ArchiveRequest) -> Result<Outcome<MoveResponse>, Error> {
    let args = ApplyArgs {
        command: "events archive",
        tool: TOOL,
        apply: req.apply,
        digest: req.digest.as_deref(),
        txn: req.txn.as_deref(),
    };
    let observe = |ctx: &Ctx| archive_plan(ctx, &req);
    moves(ctx, args, "the event log", observe, &req.before)
}

fn restore_cmd(ctx: &Ctx, req: RestoreRequest) -> Result<Outcome<MoveResponse>, Error> {
    if parse_ulid(&req.segment).is_none() {
        return Err(Error::usage(format!(
            "`{}` is not a segment id (a ULID)",
            req.segment
        )));
    }
    let args = ApplyArgs {
        command: "events restore",
        tool: TOOL,
        apply: req.apply,
        digest: req.digest.as_deref(),
        txn: req.txn.as_deref(),
    };
    let observe = |ctx: &Ctx| restore_plan(ctx, &req.segment);
    moves(ctx, args, "the segment", observe, &req.segment)
}

/// The shared driver of archive and restore: preview, or apply under `archive.lock` as root.
fn moves(
    ctx: &Ctx,
    args: ApplyArgs<'_>,
    what: &str,
    observe: impl Fn(&Ctx) -> Result<Result<(MovePlan, Vec<Notice>), Refusal>, Error>,
    subject: &str,
) -> Result<Outcome<MoveResponse>, Error> {
    let ws = ctx.ws()?;
    let start = common::start(ctx, args)?;
    if !matches!(start, Start::Preview) && ctx.identity()?.agent.id != ROOT_AGENT {
        if let Start::Refused(r) = start {
            return refused(r);
        }
        let cmd = if args.command == "events restore" {
            format!(
                "dacli events restore {subject} --apply --digest {}",
                args.digest.unwrap_or("<plan_digest>")
            )
        } else {
            format!(
                "dacli events archive --before {subject} --apply --digest {}",
                args.digest.unwrap_or("<plan_digest>")
            )
        };
        return refused(Refusal::new(
            "grant.root_required",
            format!(
                "`{}` moves every author's events; only a-root applies it",
                args.command
            ),
            format!("Ask a-root or the human to run `{cmd}`."),
        ));
    }
    match start {
        Start::Preview => {
            let (plan, notices) = match observe(ctx)? {
                Ok(p) => p,
                Err(r) => return refused(r),
            };
            let digest = digest_of(&plan, &["before_at"])?;
            announce(ctx, &notices);
            Ok(Outcome::Done(move_response(
                "preview", &plan, digest, None, notices,
            )))
        }
        Start::Refused(r) => refused(r),
        Start::Completed(txn) => {
            let plan: MovePlan = frozen(&txn)?;
            let mut resp = move_response(
                "apply",
                &plan,
                txn.plan_digest().into(),
                Some(&txn),
                Vec::new(),
            );
            resp.already_applied = true;
            resp.evidence = recorded_evidence(&txn);
            Ok(Outcome::Done(resp))
        }
        Start::Resume(txn) => {
            let mut run = Run::resume(ctx, &txn)?;
            let _lock = ops::archive::lock(ws)?;
            let plan: MovePlan = frozen(&run.txn)?;
            if run.txn.outcome().is_some() {
                let mut resp = move_response(
                    "apply",
                    &plan,
                    run.txn.plan_digest().into(),
                    Some(&run.txn),
                    Vec::new(),
                );
                resp.already_applied = true;
                resp.evidence = recorded_evidence(&run.txn);
                return Ok(Outcome::Done(resp));
            }
            execute_moves(ctx, &mut run, plan, Vec::new())
        }
        Start::Fresh { digest: expected } => {
            let reserved = Run::reserve(ctx)?;
            let _lock = ops::archive::lock(ws)?;
            let (plan, notices) = match observe(ctx)? {
                Ok(p) => p,
                Err(r) => return refused(r),
            };
            let digest = digest_of(&plan, &["before_at"])?;
            let gate = ApplyRequest {
                command: args.command,
                digest: Some(&expected),
            };
            if let Some(r) = contract::drift(gate, &digest, what) {
                return refused(r);
            }
            let mut run = reserved.begin(ctx, TOOL, &digest, to_value(&plan)?)?;
            execute_moves(ctx, &mut run, plan, notices)
        }
    }
}

fn archive_plan(
    ctx: &Ctx,
    req: &ArchiveRequest,
) -> Result<Result<(MovePlan, Vec<Notice>), Refusal>, Error> {
    let ws = ctx.ws()?;
    let before_at = crate::policy::plan::parse_time(&req.before, ctx.now())
        .map_err(|m| Error::usage(format!("--before: {m}")))?;
    let segments = archive::segments(ws)?;
    ctx.warn_all(segments.warnings);
    if let Some(open) = segments
        .items
        .iter()
        .find(|s| s.state == SegmentState::Unsealed)
    {
        return Ok(Err(unsealed_refusal(ws, &open.manifest.id)?));
    }
    let journal = journal::read(ws)?;
    ctx.warn_all(journal.warnings.iter().cloned());
    let tasks = crate::objects::tasks::list_all(ws)?;
    let done: BTreeSet<&str> = tasks
        .items
        .iter()
        .filter(|t| t.doc.status == Status::Done)
        .map(|t| t.task.id.as_str())
        .collect();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &journal.events {
        *counts.entry(&e.id).or_default() += 1;
    }
    // Ids a pending event points at (a pending answer's question, a block's `by`).
    let mut referenced: BTreeSet<String> = BTreeSet::new();
    for e in journal.pending() {
        referenced.extend(e.question.clone());
        if let Some(by) = e.field_str("by") {
            referenced.insert(by.to_string());
        }
    }
    let mut verdict: BTreeMap<&str, Option<&'static str>> = BTreeMap::new();
    let mut too_recent = 0u64;
    for e in &journal.events {
        let state = journal.state(e);
        let reason = if counts[e.id.as_str()] > 1 {
            Some("duplicate")
        } else if matches!(state, EventState::Pending) {
            Some("pending")
        } else if referenced.contains(&e.id) {
            Some("referenced")
        } else if e.created >= before_at {
            too_recent += 1;
            Some("too_recent")
        } else if !req.include_open_task_history
            && e.about
                .as_deref()
                .is_some_and(|a| a.starts_with("t-") && !done.contains(a))
        {
            Some("open_task")
        } else {
            None
        };
        verdict.insert(&e.id, reason);
    }
    // A receipt goes with every event it settles, and with every other receipt settling one
    // of them: group them, and keep a group only when all of its live members may go.
    let mut group = UnionFind::default();
    for r in journal.events.iter().filter(|e| e.kind == "applied") {
        for id in r.applied.iter().chain(r.rejected.iter().map(|(id, _)| id)) {
            if verdict.contains_key(id.as_str()) {
                group.join(&r.id, id);
            }
        }
    }
    let mut members: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for e in &journal.events {
        members.entry(group.find(&e.id)).or_default().push(&e.id);
    }
    let mut excluded = Vec::new();
    let mut eligible: Vec<Vec<&str>> = Vec::new();
    for ids in members.values() {
        let blocked = ids.iter().any(|id| verdict[id].is_some());
        if blocked {
            for id in ids {
                match verdict[id] {
                    Some("too_recent") => {}
                    Some(reason) => excluded.push(Excluded {
                        id: id.to_string(),
                        reason: reason.into(),
                    }),
                    None => excluded.push(Excluded {
                        id: id.to_string(),
                        reason: "referenced".into(),
                    }),
                }
            }
        } else {
            eligible.push(ids.clone());
        }
    }
    eligible.sort_by(|a, b| a.iter().min().cmp(&b.iter().min()));
    let cap = req.max_events.min(archive::MAX_SEGMENT_EVENTS);
    let mut moves = Vec::new();
    let mut notices = Vec::new();
    for ids in eligible {
        if moves.len() + ids.len() > cap {
            for id in ids {
                excluded.push(Excluded {
                    id: id.to_string(),
                    reason: "limit".into(),
                });
            }
            continue;
        }
        for id in ids {
            let ev = journal
                .get(id)
                .expect("the group was built from the journal");
            moves.push(move_of(ws, ev)?);
        }
    }
    if excluded.iter().any(|e| e.reason == "limit") {
        notices.push(Notice::new(
            "limit",
            format!("a segment holds at most {cap} events here; archive again for the rest"),
        ));
    }
    moves.sort_by(|a, b| a.id.cmp(&b.id));
    excluded.sort_by(|a, b| a.id.cmp(&b.id));
    let entries: Vec<Entry> = moves.iter().map(entry_of).collect();
    Ok(Ok((
        MovePlan {
            tool: TOOL.into(),
            operation: "archive".into(),
            before: Some(req.before.clone()),
            before_at: Some(crate::model::format_time(before_at)),
            include_open_task_history: req.include_open_task_history,
            segment: None,
            root: archive::root_of(&entries),
            moves,
            excluded,
            too_recent,
        },
        notices,
    )))
}

fn unsealed_refusal(ws: &Workspace, segment: &str) -> Result<Refusal, Error> {
    let open = crate::journal::txn::open(ws)?;
    let resume = open
        .items
        .iter()
        .find(|t| t.tool() == TOOL && t.steps().iter().any(|s| s.observed.get("segment").and_then(Value::as_str) == Some(segment)))
        .map(|t| {
            let before = t.plan().and_then(|p| p.get("before")).and_then(Value::as_str).unwrap_or("<TIME>");
            format!(
                "Resume the interrupted archival: `dacli events archive --before {before} --apply --digest {} --txn {}`.",
                t.plan_digest(),
                t.id()
            )
        })
        .unwrap_or_else(|| "Run `dacli events reconcile` and resolve the listed files first.".into());
    Ok(Refusal::new(
        "archive.integrity",
        format!(
            "segment {segment} is not sealed: an archival was interrupted, and its files still count as live"
        ),
        resume,
    ))
}

fn move_of(ws: &Workspace, ev: &EventHead) -> Result<Move, Error> {
    let (bytes, sha256) = ops::archive::event_bytes(ws, ev)?;
    let rel = ev
        .path
        .split('/')
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("/");
    Ok(Move {
        id: ev.id.clone(),
        path: rel,
        event_kind: ev.kind.clone(),
        created_by: ev.created_by.clone(),
        bytes,
        sha256,
        shortcut: (ev.kind == "run")
            .then(|| ev.field_str("shortcut").map(str::to_string))
            .flatten(),
    })
}

fn entry_of(m: &Move) -> Entry {
    Entry {
        id: m.id.clone(),
        path: m.path.clone(),
        event_kind: m.event_kind.clone(),
        created_by: m.created_by.clone(),
        bytes: m.bytes,
        sha256: m.sha256.clone(),
        shortcut: m.shortcut.clone(),
    }
}

fn restore_plan(
    ctx: &Ctx,
    segment: &str,
) -> Result<Result<(MovePlan, Vec<Notice>), Refusal>, Error> {
    let ws = ctx.ws()?;
    let Some(seg) = archive::load(ws, segment)? else {
        return Err(Error::not_found(format!(
            "no archive segment `{segment}` under archive/events/"
        ))
        .hint("list segments with `dacli events scan`"));
    };
    let mut notices = Vec::new();
    match seg.state {
        SegmentState::Unsealed => return Ok(Err(unsealed_refusal(ws, segment)?)),
        SegmentState::Restored => notices.push(Notice::new(
            "already_restored",
            format!("segment {segment} was restored before; its events are live"),
        )),
        SegmentState::Sealed => {}
    }
    let mut moves = Vec::new();
    if seg.state == SegmentState::Sealed {
        for e in &seg.manifest.entries {
            let place = archive::place(ws, segment, e)?;
            let ok = matches!(
                (place.archived, place.live),
                (Some(true), None) | (_, Some(true))
            );
            if !ok {
                return Ok(Err(Refusal::new(
                    "archive.integrity",
                    format!(
                        "{} of segment {segment} {}",
                        e.path,
                        match (place.archived, place.live) {
                            (_, Some(false)) => "exists in events/ with other bytes",
                            (Some(false), _) => "does not match its manifest SHA-256",
                            _ => "is neither in the segment nor in events/",
                        }
                    ),
                    "Run `dacli events reconcile` and resolve the listed files first.",
                )));
            }
            moves.push(Move {
                id: e.id.clone(),
                path: e.path.clone(),
                event_kind: e.event_kind.clone(),
                created_by: e.created_by.clone(),
                bytes: e.bytes,
                sha256: e.sha256.clone(),
                shortcut: e.shortcut.clone(),
            });
        }
    }
    Ok(Ok((
        MovePlan {
            tool: TOOL.into(),
            operation: "restore".into(),
            before: None,
            before_at: None,
            include_open_task_history: false,
            segment: Some(segment.into()),
            root: seg.manifest.root(),
            moves,
            excluded: Vec::new(),
            too_recent: 0,
        },
        notices,
    )))
}

fn execute_moves(
    ctx: &Ctx,
    run: &mut Run<'_, '_>,
    mut plan: MovePlan,
    notices: Vec<Notice>,
) -> Result<Outcome<MoveResponse>, Error> {
    let ws = ctx.ws()?;
    let who = ctx.identity()?.agent.id.clone();
    let restoring = plan.operation == "restore";
    let _progress = ctx.progress(format!(
        "{} {} event file(s)",
        if restoring { "restoring" } else { "moving" },
        plan.moves.len()
    ));
    let entries: Vec<Entry> = plan.moves.iter().map(entry_of).collect();
    if !restoring && plan.moves.is_empty() {
        // Nothing is eligible: no segment is made (an empty one would be noise forever).
        let evidence = write_evidence(ctx, &run.txn, "completed", Vec::new(), vec![("events", 0)])?;
        run.finish(TxnOutcome::Completed, json!({"evidence": evidence}))?;
        announce(ctx, &notices);
        let digest = run.txn.plan_digest().to_string();
        let mut resp = move_response("apply", &plan, digest, Some(&run.txn), notices);
        resp.evidence = vec![evidence];
        return Ok(Outcome::Done(resp));
    }
    let segment = if restoring {
        plan.segment.clone().unwrap_or_default()
    } else {
        manifest_step(ctx, run, &plan, &entries, &who)?
    };
    plan.segment = Some(segment.clone());
    let manifest = Manifest {
        id: segment.clone(),
        created_by: who.clone(),
        before: plan
            .before_at
            .as_deref()
            .and_then(|b| b.parse().ok())
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH),
        entries: entries.clone(),
    };
    let step = if restoring { "restore" } else { "move" };
    if run.txn.status_of(step) != Some(StepStatus::Done) && !plan.moves.is_empty() {
        let guard = json!({"subject": segment, "count": plan.moves.len(), "root": plan.root});
        run.step(step, StepStatus::Started, guard.clone(), Value::Null)?;
        // Archive: events before receipts, so no receipt leaves while an event it settles is
        // still live. Restore: receipts first, for the same reason the other way round.
        let mut order: Vec<&Entry> = entries.iter().collect();
        order.sort_by_key(|e| (e.event_kind == "applied") != restoring);
        for e in order {
            if let Err(why) = ops::archive::move_one(ws, &segment, e, restoring)? {
                run.step(
                    step,
                    StepStatus::Failed,
                    guard,
                    json!({"state": "archive_integrity"}),
                )?;
                return refused(Refusal::new(
                    "archive.integrity",
                    format!(
                        "{}: {why}; the transaction {} stays open",
                        e.path,
                        run.txn.id()
                    ),
                    "Run `dacli events reconcile` and resolve the listed files first.",
                ));
            }
        }
        run.step(
            step,
            StepStatus::Done,
            guard,
            json!({"segment": segment, "moved": plan.moves.len()}),
        )?;
    }
    if restoring {
        if run.txn.status_of("mark_restored") != Some(StepStatus::Done) && !plan.moves.is_empty() {
            ops::archive::mark_restored(ws, &manifest, ctx.new_ulid(), &who)?;
            run.step(
                "mark_restored",
                StepStatus::Done,
                json!({"subject": segment}),
                json!({"segment": segment}),
            )?;
        }
    } else if run.txn.status_of("seal") != Some(StepStatus::Done) {
        ops::archive::seal(ws, &manifest, &|| ctx.new_ulid(), &who)?;
        run.step(
            "seal",
            StepStatus::Done,
            json!({"subject": segment}),
            json!({"segment": segment, "root": plan.root}),
        )?;
    }
    let items = plan
        .moves
        .iter()
        .map(|m| EvidenceItem {
            subject: m.id.clone(),
            action: if restoring {
                "restore_event"
            } else {
                "archive_event"
            }
            .into(),
            result: "done".into(),
            before: Some(format!("sha256:{}", m.sha256)),
            after: Some(format!("sha256:{}", m.sha256)),
            reasons: vec![m.event_kind.clone()],
        })
        .collect();
    let evidence = write_evidence(
        ctx,
        &run.txn,
        "completed",
        items,
        vec![("events", plan.moves.len() as i64)],
    )?;
    run.finish(
        TxnOutcome::Completed,
        json!({"evidence": evidence, "segment": segment}),
    )?;
    announce(ctx, &notices);
    let digest = run.txn.plan_digest().to_string();
    let mut resp = move_response("apply", &plan, digest, Some(&run.txn), notices);
    resp.evidence = vec![evidence];
    Ok(Outcome::Done(resp))
}

/// Creates the segment's manifest (the intent record) once: a resumed archival finds the
/// segment it started, by the transaction's step or by the plan's root.
fn manifest_step(
    ctx: &Ctx,
    run: &mut Run<'_, '_>,
    plan: &MovePlan,
    entries: &[Entry],
    who: &str,
) -> Result<String, Error> {
    let ws = ctx.ws()?;
    if let Some(seg) = run
        .txn
        .latest("manifest")
        .filter(|s| s.status == StepStatus::Done)
        .and_then(|s| {
            s.observed
                .get("segment")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
    {
        return Ok(seg);
    }
    if run.txn.status_of("manifest") == Some(StepStatus::Started) {
        let found = archive::segments(ws)?
            .items
            .into_iter()
            .find(|s| s.state == SegmentState::Unsealed && s.manifest.root() == plan.root);
        if let Some(seg) = found {
            let id = seg.manifest.id;
            run.step(
                "manifest",
                StepStatus::Done,
                json!({"subject": "manifest", "root": plan.root}),
                json!({"segment": id}),
            )?;
            return Ok(id);
        }
    }
    let id = ctx.new_ulid();
    let guard = json!({"subject": "manifest", "root": plan.root});
    run.step("manifest", StepStatus::Started, guard.clone(), Value::Null)?;
    let manifest = Manifest {
        id: id.to_string(),
        created_by: who.into(),
        before: plan
            .before_at
            .as_deref()
            .and_then(|b| b.parse().ok())
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH),
        entries: entries.to_vec(),
    };
    ops::archive::create_manifest(ws, &manifest, id)?;
    run.step(
        "manifest",
        StepStatus::Done,
        guard,
        json!({"segment": id.to_string()}),
    )?;
    Ok(id.to_string())
}

fn move_response(
    mode: &'static str,
    plan: &MovePlan,
    digest: String,
    txn: Option<&Txn>,
    notices: Vec<Notice>,
) -> MoveResponse {
    MoveResponse {
        mode,
        operation: plan.operation.clone(),
        plan_digest: digest,
        txn: txn.map(|t| t.id().to_string()),
        outcome: txn.and_then(|t| t.outcome()).map(str::to_string),
        already_applied: false,
        segment: plan.segment.clone(),
        count: plan.moves.len() as u64,
        bytes: plan.moves.iter().map(|m| m.bytes).sum(),
        root: plan.root.clone(),
        moves: plan.moves.clone(),
        excluded: plan.excluded.clone(),
        too_recent: plan.too_recent,
        evidence: Vec::new(),
        notices,
    }
}

fn render_moves(r: &MoveResponse, ctx: &Ctx) -> String {
    // An apply's text is success text (`-q` drops it); a preview's plan is the product.
    if ctx.quiet() && r.mode == "apply" {
        return String::new();
    }
    let verb = if r.operation == "restore" {
        "restore"
    } else {
        "archive"
    };
    let mut out = format!("{} events ({} bytes) to {verb}", r.count, r.bytes);
    if let Some(s) = &r.segment {
        out.push_str(&format!(", segment {s}"));
    }
    out.push('\n');
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &r.excluded {
        *reasons.entry(&e.reason).or_default() += 1;
    }
    if r.too_recent > 0 {
        out.push_str(&format!("kept: {} too recent\n", r.too_recent));
    }
    for (reason, n) in reasons {
        out.push_str(&format!("kept: {n} {reason}\n"));
    }
    if r.mode == "preview" {
        out.push_str(&format!("plan_digest: {}\n", r.plan_digest));
    } else if let Some(o) = &r.outcome {
        out.push_str(&common::applied_text(
            o,
            r.txn.as_deref(),
            r.already_applied,
            &r.evidence,
        ));
    }
    out
}

// ----- shared ----------------------------------------------------------------------------

fn to_value<T: Serialize>(plan: &T) -> Result<Value, Error> {
    serde_json::to_value(plan)
        .map_err(|e| Error::internal(format!("cannot serialize the plan: {e}")))
}

/// The digest of a plan without its volatile keys.
fn digest_of<T: Serialize>(plan: &T, volatile: &[&str]) -> Result<String, Error> {
    let mut v = to_value(plan)?;
    if let Value::Object(map) = &mut v {
        for k in volatile {
            map.remove(*k);
        }
    }
    contract::plan_digest(&v).map_err(|e| Error::internal(e.0))
}

fn recorded_evidence(txn: &Txn) -> Vec<String> {
    txn.outcome_step()
        .and_then(|s| s.observed.get("evidence"))
        .and_then(Value::as_str)
        .map(|e| vec![e.to_string()])
        .unwrap_or_default()
}

fn write_evidence(
    ctx: &Ctx,
    txn: &Txn,
    outcome: &str,
    items: Vec<EvidenceItem>,
    summary: Vec<(&str, i64)>,
) -> Result<String, Error> {
    let ws = ctx.ws()?;
    let who = ctx.identity()?.agent.clone();
    let txn_id = txn.id().to_string();
    let head = crate::git::head_sha(ws.root());
    let path = crate::ops::evidence::write(
        ws,
        &Evidence {
            id: ctx.new_ulid(),
            tool: TOOL,
            created_by: &who.id,
            grant: who.grant,
            outcome,
            txn: Some(&txn_id),
            plan_digest: Some(txn.plan_digest()),
            git_head: head.as_deref(),
            summary,
            items,
        },
    )?;
    Ok(ws.display(&path))
}

/// Groups ids (a receipt and what it settles) so that they move together.
#[derive(Default)]
struct UnionFind {
    parent: BTreeMap<String, String>,
}

impl UnionFind {
    fn find(&mut self, id: &str) -> String {
        let mut cur = id.to_string();
        while let Some(p) = self.parent.get(&cur) {
            if p == &cur {
                break;
            }
            cur = p.clone();
        }
        cur
    }

    fn join(&mut self, a: &str, b: &str) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent.insert(ra.clone(), rb.clone());
            self.parent.entry(rb.clone()).or_insert(rb);
        }
    }
}
