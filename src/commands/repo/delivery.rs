//! `delivery reconcile`: one canonical delivery observation per task, from the recorded
//! delivery, commit trailers naming the task and ancestry against a freshly fetched base; the
//! drift between what the task says and what git shows; and safe repairs, each append-only or
//! done by the owner, otherwise written as a proposal (GIT_GITHUB.md B2, COMMANDS.md §12).
//!
//! Unknown dominates: a state is claimed only when git proves it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::common::{
    self, ApplyArgs, Base, BranchTasks, Notice, Run, Start, TRAILERS, announce, digest_of, frozen,
    normalise_task_id, observe_base, project_slug, refused,
};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Mcp, Outcome};
use crate::git::{Ancestry, Repo};
use crate::journal::evidence::{self, Evidence, EvidenceItem};
use crate::journal::snapshot::Snapshot;
use crate::journal::txn::{StepStatus, Txn, TxnOutcome};
use crate::model::agent::AgentStatus;
use crate::model::id::ROOT_AGENT;
use crate::model::task::Status;
use crate::objects::index::TaskEntry;
use crate::ops;
use crate::policy::apply::{self as contract, ApplyRequest};

const TOOL: &str = "reconcile-delivery";
const COMMAND: &str = "delivery reconcile";
/// Tasks observed between two progress steps.
const PROGRESS_EVERY: usize = 250;

/// A repair class (`--repair`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepairClass {
    #[value(name = "record_delivery_evidence")]
    RecordDeliveryEvidence,
    #[value(name = "correct_landing_certificate")]
    CorrectLandingCertificate,
    #[value(name = "close_delivered_task")]
    CloseDeliveredTask,
    #[value(name = "flag_undelivered_done")]
    FlagUndeliveredDone,
    #[value(name = "queue_cleanup")]
    QueueCleanup,
}

/// Did each task's work land? Observes every task of a project (or the named tasks): its
/// recorded delivery, commits whose trailer names it (`Dacli-Task: t-<ULID>`), and its
/// branches' ancestry against the base fetched into refs/dacli/observed/. Lists the drift
/// between the task and git, and the repairs that would fix it; --apply --digest D makes them
/// (evidence, proposals, the owner's close), never a merge, push or ref change.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// A task to observe (repeatable).
    #[arg(long = "task", value_name = "REF", conflicts_with = "project")]
    #[serde(default)]
    task: Vec<String>,
    /// Every task of this project.
    #[arg(long, value_name = "P")]
    #[serde(default)]
    project: Option<String>,
    /// The branch delivery is proven against (default: landing.base, else the default branch).
    #[arg(long, value_name = "BRANCH")]
    #[serde(default)]
    base: Option<String>,
    /// Use git sources only (pull-request states stay unknown).
    #[arg(long)]
    #[serde(default)]
    offline: bool,
    /// Prove against the local base branch instead of fetching it from origin.
    #[arg(long)]
    #[serde(default)]
    no_fetch: bool,
    /// Repair classes allowed (repeatable; default: all).
    #[arg(long = "repair", value_enum, value_name = "CLASS")]
    #[serde(default)]
    repair: Vec<RepairClass>,
    /// GitHub call budget (no GitHub call is made by git sources).
    #[arg(long, value_name = "N", default_value_t = 200)]
    #[serde(default = "default_calls")]
    max_api_calls: u32,
    /// Make the previewed repairs (needs --digest; rw).
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

fn default_calls() -> u32 {
    200
}

impl Classify for Request {
    fn class(&self, declared: Class) -> Class {
        if self.apply { Class::Apply } else { declared }
    }
}

pub(super) fn command() -> Command {
    Command::new("delivery.reconcile", Class::Read, run, render)
        .mcp(Mcp::Tier1("reconcile_delivery"))
}

/// One ref carrying the task's work.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Tip {
    #[serde(rename = "ref")]
    reference: String,
    sha: String,
    /// Every commit of the tip is on the base (`null`: not provable).
    #[serde(default)]
    on_base: Option<bool>,
    /// The tip is a mainline commit: a branch without work of its own.
    #[serde(default)]
    bare: Option<bool>,
    /// The commit on the base that squash-merged this tip: it names the task by trailer and
    /// holds exactly the branch's changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    squashed: Option<String>,
}

/// A commit known to be the task's (recorded in `delivery`, or by trailer).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Known {
    sha: String,
    /// `recorded` or `trailer`.
    source: String,
    #[serde(default)]
    on_base: Option<bool>,
    /// The object is in this repository.
    present: bool,
}

/// The canonical delivery observation of one task.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Observation {
    task: String,
    #[serde(rename = "ref")]
    reference: String,
    generation: i64,
    /// The task's folded status.
    status: String,
    #[serde(default)]
    branch: Option<String>,
    /// `delivered`, `pending`, `orphaned`, `no_branch` or `unknown`.
    state: String,
    /// Why, as an enumeration value: `all_work_on_base`, `unlanded_commits`,
    /// `commits_without_branch`, `nothing_recorded`, `base_unknown`, `bare_tip`,
    /// `recorded_branch_gone`, `recorded_commit_missing`, `work_before_reopen` (all that git
    /// shows predates the task's reopening).
    why: String,
    tips: Vec<Tip>,
    commits: Vec<Known>,
    #[serde(default)]
    pr: Option<i64>,
    sources: Vec<String>,
}

/// A disagreement between the task and git.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Drift {
    task: String,
    /// `done_not_delivered`, `delivered_task_open`, `delivered_not_recorded`, `cleanup_debt`,
    /// `unlanded_tip`.
    class: String,
}

/// One repair of the plan.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Repair {
    task: String,
    class: String,
    /// `append_only`, `owner`, `proposal` or `delegated`.
    authority: String,
    /// What apply does: `record_evidence`, `close` (a `finish` event the owner's sync applies at
    /// once), `propose_done` (the same event, left for the owner), `flag_and_propose_reopen`,
    /// `queue_cleanup`.
    action: String,
    /// What must still hold (the observed state, tip and base).
    guard: Value,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    tool: String,
    base: Base,
    observations: Vec<Observation>,
    drift: Vec<Drift>,
    repairs: Vec<Repair>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ItemRefusal {
    subject: String,
    policy: String,
    reason: String,
    next: String,
}

#[derive(Debug, Serialize)]
pub struct RepairView {
    #[serde(flatten)]
    repair: Repair,
    /// `done` or `failed` after an apply; `null` in a preview.
    result: Option<String>,
    /// Events written by the repair.
    events: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct PlanView {
    repairs: Vec<RepairView>,
}

#[derive(Debug, Serialize)]
pub struct Response {
    mode: &'static str,
    plan_digest: String,
    txn: Option<String>,
    outcome: Option<String>,
    already_applied: bool,
    base: Base,
    observations: Vec<Observation>,
    drift: Vec<Drift>,
    plan: PlanView,
    evidence: Vec<String>,
    refusals: Vec<ItemRefusal>,
    notices: Vec<Notice>,
    /// GitHub access; git sources need none.
    access: Option<Value>,
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    if req.max_api_calls == 0 {
        return Err(Error::usage("--max-api-calls must be at least 1"));
    }
    if req.task.is_empty() && req.project.is_none() {
        return Err(Error::usage(
            "name the tasks with `--task REF` or a project with `--project P`",
        ));
    }
    let args = ApplyArgs {
        command: COMMAND,
        tool: TOOL,
        apply: req.apply,
        digest: req.digest.as_deref(),
        txn: req.txn.as_deref(),
    };
    match common::start(ctx, args)? {
        Start::Refused(r) => refused(r),
        Start::Completed(txn) => recorded(ctx, &txn),
        Start::Resume(txn) => {
            let mut run = Run::resume(ctx, &txn)?;
            if run.txn.outcome().is_some() {
                return recorded(ctx, &run.txn);
            }
            let plan = frozen(&run.txn)?;
            execute(ctx, &mut run, plan, Vec::new())
        }
        Start::Preview => {
            let mut notices = Vec::new();
            let snapshot = snapshot(ctx)?;
            let plan = observe(ctx, &snapshot, &req, &mut notices)?;
            let digest = digest_of(&plan)?;
            announce(ctx, &notices);
            let refusals = item_refusals(&snapshot, &plan);
            Ok(Outcome::Done(response(
                "preview", plan, digest, None, notices, refusals,
            )))
        }
        Start::Fresh { digest: expected } => {
            let mut notices = Vec::new();
            let plan = observe(ctx, &snapshot(ctx)?, &req, &mut notices)?;
            let digest = digest_of(&plan)?;
            let gate = ApplyRequest {
                command: COMMAND,
                digest: Some(&expected),
            };
            if let Some(r) = contract::drift(gate, &digest, "refs, recorded deliveries or tasks") {
                return refused(r);
            }
            announce(ctx, &notices);
            let frozen = serde_json::to_value(&plan)
                .map_err(|e| Error::internal(format!("cannot freeze the plan: {e}")))?;
            let mut run = Run::begin(ctx, TOOL, &digest, frozen)?;
            execute(ctx, &mut run, plan, notices)
        }
    }
}

// ----- observation -----------------------------------------------------------------------

/// Every task, through the index, with what pending events change folded in.
fn snapshot(ctx: &Ctx) -> Result<Snapshot, Error> {
    let snapshot = Snapshot::load(ctx.ws()?, &|f| crate::policy::dod::evaluate(f).passed)?;
    ctx.warn_all(snapshot.warnings.iter().cloned());
    Ok(snapshot)
}

fn observe(
    ctx: &Ctx,
    snapshot: &Snapshot,
    req: &Request,
    notices: &mut Vec<Notice>,
) -> Result<Plan, Error> {
    let ws = ctx.ws()?;
    let project = project_slug(ctx, req.project.as_deref())?;
    let mut chosen: Vec<&TaskEntry> = Vec::new();
    for r in &req.task {
        let t = snapshot.shown(snapshot.resolve_reported(r)?);
        if !chosen.iter().any(|c| c.id() == t.id()) {
            chosen.push(t);
        }
    }
    if let Some(p) = &project {
        chosen.extend(
            snapshot
                .tasks
                .iter()
                .filter(|t| t.project() == p)
                .map(|t| snapshot.shown(t)),
        );
    }
    chosen.sort_by(|a, b| (a.project(), a.number()).cmp(&(b.project(), b.number())));
    let base_project = project
        .clone()
        .or_else(|| chosen.first().map(|t| t.project().to_string()));
    let repo = Repo::open(ws.root())?;
    let base = observe_base(
        ctx,
        &repo,
        req.base.as_deref(),
        base_project.as_deref(),
        !req.no_fetch,
        notices,
    )?;
    let repo = Repo::open(ws.root())?;
    if !req.offline && chosen.iter().any(|t| t.delivery().pr.is_some()) {
        notices.push(Notice::new(
            "git_sources_only",
            "pull-request states are not read: delivery is judged from git alone, so a recorded PR proves nothing by itself",
        ));
    }
    // Every task branch, local and on origin, by the task it belongs to.
    let branch_tasks = BranchTasks::new(snapshot);
    let mut branches: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut all_tips: Vec<String> = Vec::new();
    for prefix in ["refs/heads/dacli/", "refs/remotes/origin/dacli/"] {
        for (name, sha) in repo.refs_with_prefix(prefix)? {
            all_tips.push(sha.clone());
            let short = name
                .strip_prefix("refs/heads/")
                .or_else(|| name.strip_prefix("refs/remotes/origin/"))
                .unwrap_or(&name);
            if let Ok(t) = branch_tasks.task_of(short) {
                branches
                    .entry(t.id().to_string())
                    .or_default()
                    .push((name, sha));
            }
        }
    }
    // Commits whose trailer names a task, reachable from the base or any task branch.
    let mut trailer_commits: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut scan_from = all_tips.clone();
    scan_from.extend(base.sha.clone());
    for (sha, values) in repo.trailers(&scan_from, &TRAILERS)? {
        for v in values {
            let list = trailer_commits.entry(normalise_task_id(&v)).or_default();
            if !list.contains(&sha) {
                list.push(sha.clone());
            }
        }
    }
    let ancestry = match base.provable() {
        Some(sha) => Some(repo.ancestry(sha)?),
        None => None,
    };
    let recorded = evidence::items(ws, TOOL)?;
    ctx.warn_all(recorded.warnings);
    let recorded: BTreeSet<(String, String)> = recorded
        .items
        .into_iter()
        .filter(|(_, i)| i.action == "record_delivery" && i.result == "done")
        .map(|(_, i)| (i.subject, i.after.unwrap_or_default()))
        .collect();
    let allowed: BTreeSet<RepairClass> = if req.repair.is_empty() {
        [
            RepairClass::RecordDeliveryEvidence,
            RepairClass::CloseDeliveredTask,
            RepairClass::FlagUndeliveredDone,
            RepairClass::QueueCleanup,
        ]
        .into()
    } else {
        req.repair.iter().copied().collect()
    };
    let me = ctx.identity()?.agent.id.clone();
    let mut observations = Vec::new();
    let mut drift = Vec::new();
    let mut repairs = Vec::new();
    let mut closers = HashMap::new();
    // Observing thousands of tasks takes seconds: a terminal shows how far it got.
    let total = chosen.len() as u64;
    let progress = ctx.progress_of(format!("observing {total} task(s)"), Some(total));
    for (n, t) in chosen.into_iter().enumerate() {
        if n % PROGRESS_EVERY == 0 {
            progress.advance(n as u64, format!("observing task {} of {total}", n + 1));
        }
        let obs = observe_task(
            &repo,
            &base,
            ancestry.as_ref(),
            t,
            branches.get(t.id()).map(Vec::as_slice).unwrap_or(&[]),
            trailer_commits
                .get(&t.id().to_ascii_lowercase())
                .map(Vec::as_slice)
                .unwrap_or(&[]),
        )?;
        let key = delivery_key(&obs);
        let d = drift_of(&obs, &key, &recorded);
        repairs.extend(repairs_of(
            ws,
            &obs,
            &d,
            &key,
            &base,
            &allowed,
            &me,
            t,
            &mut closers,
        ));
        drift.extend(d);
        observations.push(obs);
    }
    Ok(Plan {
        tool: TOOL.into(),
        base,
        observations,
        drift,
        repairs,
    })
}

fn observe_task(
    repo: &Repo,
    base: &Base,
    ancestry: Option<&Ancestry<'_>>,
    t: &TaskEntry,
    branches: &[(String, String)],
    trailers: &[String],
) -> Result<Observation, Error> {
    let delivery = t.delivery();
    let mut sources = Vec::new();
    let mut tips: Vec<Tip> = Vec::new();
    let mut refs: Vec<(String, String)> = branches.to_vec();
    if let Some(b) = &delivery.branch {
        sources.push("recorded_delivery".to_string());
        for full in [
            format!("refs/heads/{b}"),
            format!("refs/remotes/origin/{b}"),
        ] {
            if let Some(sha) = repo.resolve(&full)?
                && !refs.iter().any(|(n, _)| n == &full)
            {
                refs.push((full, sha));
            }
        }
    }
    refs.sort();
    let mut commits = Vec::new();
    for sha in &delivery.commits {
        if !sources.contains(&"recorded_delivery".to_string()) {
            sources.push("recorded_delivery".into());
        }
        commits.push(known(repo, ancestry, sha, "recorded"));
    }
    if !trailers.is_empty() {
        sources.push("trailers".into());
    }
    for sha in trailers {
        if !commits.iter().any(|c: &Known| &c.sha == sha) {
            commits.push(known(repo, ancestry, sha, "trailer"));
        }
    }
    // A reopened task is judged by the work after its reopening: what git shows from before
    // it is the delivery that was reopened, and proves nothing about the new one.
    let reopened_at = reopened_at(t);
    let before_reopen =
        |sha: &str| reopened_at.is_some_and(|at| repo.commit_time(sha).is_some_and(|c| c <= at));
    let mut earlier = 0usize;
    commits.retain(|c| {
        let old = c.present && before_reopen(&c.sha);
        earlier += usize::from(old);
        !old
    });
    for (name, sha) in refs {
        if before_reopen(&sha) {
            earlier += 1;
            continue;
        }
        let on_base = ancestry.map(|a| a.contains(&sha));
        // A squash (or rebase) merge puts the branch's work on the base as a new commit: a
        // commit on the base that names the task by trailer and holds exactly the branch's
        // changes delivers it.
        let squashed = match (ancestry, on_base) {
            (Some(a), Some(false)) => squash_of(a, &sha, &commits)?,
            _ => None,
        };
        tips.push(Tip {
            reference: name,
            bare: ancestry.map(|a| a.on_mainline(&sha)),
            sha,
            on_base,
            squashed,
        });
    }
    if !tips.is_empty() {
        sources.push("git".into());
    }
    let (state, why) = if tips.is_empty() && commits.is_empty() && earlier > 0 {
        ("no_branch", "work_before_reopen")
    } else {
        classify(base, &tips, &commits, delivery.branch.is_some())
    };
    Ok(Observation {
        task: t.id().to_string(),
        reference: t.reference(),
        generation: t.generation(),
        status: t.status().as_str().into(),
        branch: delivery
            .branch
            .clone()
            .or_else(|| branches.first().map(|(n, _)| short_branch(n))),
        state: state.into(),
        why: why.into(),
        tips,
        commits,
        pr: delivery.pr,
        sources,
    })
}

/// When the task was last reopened (seconds since the epoch), from its Log.
fn reopened_at(t: &TaskEntry) -> Option<i64> {
    if t.generation() == 0 {
        return None;
    }
    t.reopened_at()
        .and_then(|at| at.parse::<jiff::Timestamp>().ok())
        .map(|at| at.as_second())
}

/// The trailer commit on the base that holds the work of the off-base tip `sha`, if any.
fn squash_of(
    ancestry: &Ancestry<'_>,
    sha: &str,
    commits: &[Known],
) -> Result<Option<String>, Error> {
    for c in commits {
        if c.source == "trailer"
            && c.on_base == Some(true)
            && ancestry.holds_work_of(sha, &c.sha)?
        {
            return Ok(Some(c.sha.clone()));
        }
    }
    Ok(None)
}

fn short_branch(full: &str) -> String {
    full.strip_prefix("refs/heads/")
        .or_else(|| full.strip_prefix("refs/remotes/origin/"))
        .unwrap_or(full)
        .to_string()
}

fn known(repo: &Repo, ancestry: Option<&Ancestry<'_>>, sha: &str, source: &str) -> Known {
    let present = repo.has_commit(sha);
    let on_base = ancestry.filter(|_| present).map(|a| a.contains(sha));
    Known {
        sha: sha.into(),
        source: source.into(),
        on_base,
        present,
    }
}

/// The state, conservatively: `unknown` whenever a needed fact is missing.
fn classify(
    base: &Base,
    tips: &[Tip],
    commits: &[Known],
    recorded_branch: bool,
) -> (&'static str, &'static str) {
    if tips.is_empty() && commits.is_empty() {
        return if recorded_branch {
            ("unknown", "recorded_branch_gone")
        } else {
            ("no_branch", "nothing_recorded")
        };
    }
    if base.provable().is_none() {
        return ("unknown", "base_unknown");
    }
    if commits.iter().any(|c| !c.present) {
        return ("unknown", "recorded_commit_missing");
    }
    let unlanded_tip = tips
        .iter()
        .any(|t| t.on_base == Some(false) && t.squashed.is_none());
    let unlanded_commit = commits.iter().any(|c| c.on_base == Some(false));
    if unlanded_tip {
        return ("pending", "unlanded_commits");
    }
    if unlanded_commit {
        return ("orphaned", "commits_without_branch");
    }
    // Everything known is on the base. Work of its own shows as a tip off the mainline or as
    // a commit that names the task; a bare tip alone cannot tell "no work" from a
    // fast-forward merge.
    let work_seen = tips
        .iter()
        .any(|t| t.bare == Some(false) || t.squashed.is_some())
        || !commits.is_empty();
    if work_seen {
        ("delivered", "all_work_on_base")
    } else {
        ("unknown", "bare_tip")
    }
}

/// What identifies one delivery, for deduplicating its evidence: the work (every tip and known
/// commit), not the base commit it was proven against (a later base still contains it).
fn delivery_key(obs: &Observation) -> String {
    let mut parts: Vec<&str> = obs.tips.iter().map(|t| t.sha.as_str()).collect();
    parts.extend(obs.commits.iter().map(|c| c.sha.as_str()));
    parts.sort();
    parts.dedup();
    contract::sha256_digest(parts.join("\n").as_bytes())
}

fn drift_of(obs: &Observation, key: &str, recorded: &BTreeSet<(String, String)>) -> Vec<Drift> {
    let mut out = Vec::new();
    let d = |class: &str| Drift {
        task: obs.task.clone(),
        class: class.into(),
    };
    let done = obs.status == Status::Done.as_str();
    match obs.state.as_str() {
        "delivered" => {
            if !done {
                out.push(d("delivered_task_open"));
            }
            if !recorded.contains(&(obs.task.clone(), key.to_string())) {
                out.push(d("delivered_not_recorded"));
            }
            if obs
                .tips
                .iter()
                .any(|t| t.reference.starts_with("refs/heads/"))
            {
                out.push(d("cleanup_debt"));
            }
        }
        "pending" | "orphaned" if done => out.push(d("done_not_delivered")),
        _ => {}
    }
    if obs.state == "pending"
        && obs
            .tips
            .iter()
            .any(|t| t.on_base == Some(true) && t.bare == Some(false))
    {
        out.push(d("unlanded_tip"));
    }
    out
}

/// Who may close the task directly: its owner, or root for a retired or missing owner. Each
/// owner's agent file is read once per observation (`known`), however many tasks it owns.
fn may_close(
    ws: &crate::workspace::Workspace,
    me: &str,
    t: &TaskEntry,
    known: &mut HashMap<String, bool>,
) -> bool {
    let owner = t.owner();
    if owner == me {
        return true;
    }
    if me != ROOT_AGENT {
        return false;
    }
    *known.entry(owner.to_string()).or_insert_with(|| {
        crate::objects::agents::load(ws, owner).map_or(true, |a| a.status == AgentStatus::Retired)
    })
}

#[allow(
    clippy::too_many_arguments,
    reason = "one call site; the facts of one task"
)]
fn repairs_of(
    ws: &crate::workspace::Workspace,
    obs: &Observation,
    drift: &[Drift],
    key: &str,
    base: &Base,
    allowed: &BTreeSet<RepairClass>,
    me: &str,
    t: &TaskEntry,
    closers: &mut HashMap<String, bool>,
) -> Vec<Repair> {
    let has = |c: &str| drift.iter().any(|d| d.class == c);
    let guard = json!({"state": obs.state, "key": key, "base": base.sha});
    let mut out = Vec::new();
    let mut add = |class: &str, authority: &str, action: &str| {
        out.push(Repair {
            task: obs.task.clone(),
            class: class.into(),
            authority: authority.into(),
            action: action.into(),
            guard: guard.clone(),
        })
    };
    if has("delivered_not_recorded") && allowed.contains(&RepairClass::RecordDeliveryEvidence) {
        add("record_delivery_evidence", "append_only", "record_evidence");
    }
    if has("delivered_task_open") && allowed.contains(&RepairClass::CloseDeliveredTask) {
        if may_close(ws, me, t, closers) {
            add("close_delivered_task", "owner", "close");
        } else {
            add("close_delivered_task", "proposal", "propose_done");
        }
    }
    if has("done_not_delivered") && allowed.contains(&RepairClass::FlagUndeliveredDone) {
        add(
            "flag_undelivered_done",
            "append_only",
            "flag_and_propose_reopen",
        );
    }
    if has("cleanup_debt") && allowed.contains(&RepairClass::QueueCleanup) {
        add("queue_cleanup", "delegated", "queue_cleanup");
    }
    out
}

fn item_refusals(snapshot: &Snapshot, plan: &Plan) -> Vec<ItemRefusal> {
    let by_id: HashMap<&str, &TaskEntry> = snapshot
        .tasks
        .iter()
        .map(|t| (t.id(), snapshot.shown(t)))
        .collect();
    plan.repairs
        .iter()
        .filter(|r| r.authority == "proposal")
        .filter_map(|r| {
            let t = by_id.get(r.task.as_str())?;
            let reference = t.reference();
            Some(ItemRefusal {
                subject: r.task.clone(),
                policy: "task.not_owner".into(),
                reason: format!("only {} may close {reference}; apply writes a `finish` event for the owner's sync instead", t.owner()),
                next: format!("Only {} may close {reference}: apply to propose it, or `dacli ask {reference} \"…\"`.", t.owner()),
            })
        })
        .collect()
}

// ----- apply -----------------------------------------------------------------------------

fn subject(r: &Repair) -> String {
    format!("{}:{}", r.task, r.class)
}

fn execute(
    ctx: &Ctx,
    run: &mut Run<'_, '_>,
    plan: Plan,
    notices: Vec<Notice>,
) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.clone();
    let mut results: Vec<(Option<String>, Vec<String>)> = Vec::new();
    let mut items = Vec::new();
    let total = plan.repairs.len() as u64;
    let progress = ctx.progress_of(format!("applying {total} repair(s)"), Some(total));
    for (done, r) in plan.repairs.iter().enumerate() {
        progress.advance(done as u64, format!("repair {} of {total}", done + 1));
        let subj = subject(r);
        let done_before = run
            .txn
            .steps()
            .iter()
            .rev()
            .find(|s| {
                s.step == "repair"
                    && s.guard.get("subject").and_then(Value::as_str) == Some(subj.as_str())
            })
            .filter(|s| s.status == StepStatus::Done)
            .map(|s| strings(&s.observed, "events"));
        let obs = plan.observations.iter().find(|o| o.task == r.task);
        let events = match done_before {
            Some(events) => events,
            None => {
                let guard = json!({"subject": subj, "expect": r.guard});
                run.step("repair", StepStatus::Started, guard.clone(), Value::Null)?;
                let events = perform(ctx, r, obs, &plan.base)?;
                run.step("repair", StepStatus::Done, guard, json!({"events": events}))?;
                events
            }
        };
        items.push(EvidenceItem {
            subject: r.task.clone(),
            action: match r.class.as_str() {
                "record_delivery_evidence" => "record_delivery".into(),
                other => other.to_string(),
            },
            result: "done".into(),
            before: None,
            after: r
                .guard
                .get("key")
                .and_then(Value::as_str)
                .map(str::to_string),
            reasons: vec![obs.map_or("unknown".into(), |o| o.state.clone())],
        });
        results.push((Some("done".into()), events));
    }
    for o in &plan.observations {
        if !plan.repairs.iter().any(|r| r.task == o.task) {
            items.push(EvidenceItem {
                subject: o.task.clone(),
                action: "observe".into(),
                result: "done".into(),
                before: None,
                after: None,
                reasons: vec![o.state.clone()],
            });
        }
    }
    let txn_id = run.txn.id().to_string();
    let head = crate::git::head_sha(ws.root());
    let path = crate::ops::evidence::write(
        ws,
        &Evidence {
            id: ctx.new_ulid(),
            tool: TOOL,
            created_by: &me.id,
            grant: me.grant,
            outcome: "completed",
            txn: Some(&txn_id),
            plan_digest: Some(run.txn.plan_digest()),
            git_head: head.as_deref(),
            summary: vec![
                ("tasks", plan.observations.len() as i64),
                ("repairs", plan.repairs.len() as i64),
            ],
            items,
        },
    )?;
    let shown = ws.display(&path);
    run.finish(TxnOutcome::Completed, json!({"evidence": shown}))?;
    announce(ctx, &notices);
    let digest = run.txn.plan_digest().to_string();
    let mut resp = response("apply", plan, digest, Some(txn_id), notices, Vec::new());
    for (view, (result, events)) in resp.plan.repairs.iter_mut().zip(results) {
        view.result = result;
        view.events = events;
    }
    resp.outcome = Some("completed".into());
    resp.evidence = vec![shown];
    Ok(Outcome::Done(resp))
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Makes one repair; returns the events it wrote. Events are deduplicated by their content
/// (the observation is in the reason), so a resumed repair never writes one twice.
fn perform(
    ctx: &Ctx,
    r: &Repair,
    obs: Option<&Observation>,
    base: &Base,
) -> Result<Vec<String>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    let where_ = format!("{} at {}", base.name, base.sha.as_deref().unwrap_or("?"));
    let key = r
        .guard
        .get("key")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match r.action.as_str() {
        "record_evidence" | "queue_cleanup" => Ok(Vec::new()),
        "close" | "propose_done" => {
            // A `finish` event (FORMAT §13.1 lets anyone append one): it moves the task to
            // done only when the definition of done passes, and waits otherwise.
            let summary = format!("Delivered: all work ({key}) is on {where_}.\n");
            let id = event_once(ctx, &r.task, "finish", Vec::new(), summary)?;
            if r.action == "close" {
                ops::delivery::settle(ws, &me, &r.task, &|| ctx.new_ulid())?;
            }
            Ok(vec![id])
        }
        "flag_and_propose_reopen" => {
            let state = obs.map_or("unknown", |o| o.state.as_str());
            let title = format!("Done, but its work is not on {}", base.name);
            let body = format!(
                "# {title}\n\n`dacli delivery reconcile` observed the task as `{state}`: work {key} is not on {where_}.\n"
            );
            let finding = event_once(
                ctx,
                &r.task,
                "finding",
                vec![
                    ("title", &title),
                    ("severity", "major"),
                    ("scope", "project"),
                ],
                body,
            )?;
            let reason = format!("not delivered: work {key} is not on {where_}");
            let reopen = event_once(
                ctx,
                &r.task,
                "propose-status",
                vec![("to", "open"), ("reason", &reason)],
                String::new(),
            )?;
            Ok(vec![finding, reopen])
        }
        other => Err(Error::internal(format!("no repair action `{other}`"))),
    }
}

/// Appends an event by the caller about `about` unless one with the same kind, fields and
/// body already exists; returns its id.
fn event_once(
    ctx: &Ctx,
    about: &str,
    kind: &str,
    fields: Vec<(&str, &str)>,
    body: String,
) -> Result<String, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    Ok(ops::delivery::event_once(
        ws,
        &me,
        about,
        kind,
        fields,
        body,
        &|| ctx.new_ulid(),
    )?)
}

// ----- output ----------------------------------------------------------------------------

fn response(
    mode: &'static str,
    plan: Plan,
    digest: String,
    txn: Option<String>,
    notices: Vec<Notice>,
    refusals: Vec<ItemRefusal>,
) -> Response {
    Response {
        mode,
        plan_digest: digest,
        txn,
        outcome: None,
        already_applied: false,
        base: plan.base,
        observations: plan.observations,
        drift: plan.drift,
        plan: PlanView {
            repairs: plan
                .repairs
                .into_iter()
                .map(|repair| RepairView {
                    repair,
                    result: None,
                    events: Vec::new(),
                })
                .collect(),
        },
        evidence: Vec::new(),
        refusals,
        notices,
        access: None,
    }
}

fn recorded(_ctx: &Ctx, txn: &Txn) -> Result<Outcome<Response>, Error> {
    let plan = frozen(txn)?;
    let mut resp = response(
        "apply",
        plan,
        txn.plan_digest().into(),
        Some(txn.id().to_string()),
        Vec::new(),
        Vec::new(),
    );
    for view in resp.plan.repairs.iter_mut() {
        let subj = subject(&view.repair);
        if let Some(s) = txn.steps().iter().rev().find(|s| {
            s.step == "repair"
                && s.guard.get("subject").and_then(Value::as_str) == Some(subj.as_str())
        }) {
            view.result = Some(s.status.as_str().into());
            view.events = strings(&s.observed, "events");
        }
    }
    resp.outcome = txn.outcome().map(str::to_string);
    resp.already_applied = true;
    resp.evidence = txn
        .outcome_step()
        .and_then(|s| s.observed.get("evidence"))
        .and_then(Value::as_str)
        .map(|e| vec![e.to_string()])
        .unwrap_or_default();
    Ok(Outcome::Done(resp))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    // An apply's text is success text (`-q` drops it); a preview's plan is the product.
    if ctx.quiet() && r.mode == "apply" {
        return String::new();
    }
    let mut out = String::new();
    let mut rows = vec![vec![
        "TASK".to_string(),
        "STATUS".into(),
        "STATE".into(),
        "WHY".into(),
    ]];
    for o in &r.observations {
        rows.push(vec![
            o.reference.clone(),
            o.status.clone(),
            o.state.clone(),
            o.why.clone(),
        ]);
    }
    out.push_str(&crate::dispatch::text::table(&rows, &[]));
    for d in &r.drift {
        out.push_str(&format!("drift {}: {}\n", d.class, d.task));
    }
    for v in &r.plan.repairs {
        let res = v
            .result
            .as_deref()
            .map(|x| format!(" {x}"))
            .unwrap_or_default();
        out.push_str(&format!(
            "repair {} ({}): {}{res}\n",
            v.repair.class, v.repair.authority, v.repair.task
        ));
    }
    match (r.mode, &r.outcome) {
        ("preview", _) if !r.plan.repairs.is_empty() => out.push_str(&format!(
            "plan_digest: {}\napply with: dacli {COMMAND} … --apply --digest {}\n",
            r.plan_digest, r.plan_digest
        )),
        (_, Some(o)) => {
            out.push_str(&common::applied_text(
                o,
                r.txn.as_deref(),
                r.already_applied,
                &r.evidence,
            ));
        }
        _ => {}
    }
    out
}
