//! `repo cleanup`: retire only provably dead task branches, worktrees, worktree registrations
//! and run records, keeping the evidence (GIT_GITHUB.md B1, COMMANDS.md §12).
//!
//! Every candidate carries its proofs; it is retired only when each is `proven`, and any
//! `unknown` keeps it. A retired branch is first pinned under `refs/dacli/retired/<branch>/<txn>`
//! and then deleted only if it still points where the plan saw it; a worktree is removed only
//! by `git worktree remove` without `--force`, after its cleanliness (untracked files
//! included) is proven again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::common::{
    self, ApplyArgs, Base, BranchTasks, Notice, Run, Start, TRAILERS, announce, digest_of, frozen,
    normalise_task_id, observe_base, project_slug, refused, relative, root_refusal, state_owner,
};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Mcp, Outcome};
use crate::git::{self, Head, Repo};
use crate::journal::evidence::{Evidence, EvidenceItem};
use crate::journal::snapshot::Snapshot;
use crate::journal::txn::{StepStatus, Txn, TxnOutcome};
use crate::model::task::Status;
use crate::objects::index::TaskEntry;
use crate::ops;
use crate::policy::apply::{self as contract, ApplyRequest};

const TOOL: &str = "cleanup";
/// Branches proven between two progress steps.
const PROGRESS_EVERY: usize = 250;
const COMMAND: &str = "repo cleanup";

/// A kind of cleanup candidate (`--include`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Include {
    #[value(name = "worktrees")]
    Worktrees,
    #[value(name = "local_branches")]
    LocalBranches,
    #[value(name = "remote_branches")]
    RemoteBranches,
    #[value(name = "runs")]
    Runs,
    #[value(name = "registrations")]
    Registrations,
}

impl Include {
    fn as_str(self) -> &'static str {
        match self {
            Include::Worktrees => "worktrees",
            Include::LocalBranches => "local_branches",
            Include::RemoteBranches => "remote_branches",
            Include::Runs => "runs",
            Include::Registrations => "registrations",
        }
    }
}

/// Retire provably dead task branches, task worktrees, stale worktree registrations and old
/// run records. Without --apply this previews: it writes nothing (a fetch of the base into
/// refs/dacli/observed/ is observation) and prints the plan with its plan_digest. With
/// --apply --digest D it observes again and runs exactly that plan, or refuses plan.drifted.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Only candidates of this project's tasks.
    #[arg(long, value_name = "P")]
    #[serde(default)]
    project: Option<String>,
    /// The branch delivery is proven against (default: landing.base, else the default branch).
    #[arg(long, value_name = "BRANCH")]
    #[serde(default)]
    base: Option<String>,
    /// Candidate kinds, comma-separated [default: worktrees,local_branches,registrations].
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LIST")]
    #[serde(default)]
    include: Vec<Include>,
    /// Prove against the local base branch instead of fetching it from origin.
    #[arg(long)]
    #[serde(default)]
    no_fetch: bool,
    /// Run records to keep, newest first.
    #[arg(long, value_name = "N", default_value_t = 20)]
    #[serde(default = "default_keep_runs")]
    keep_runs: usize,
    /// Never touch a worktree at or below this repo path (repeatable).
    #[arg(long = "protect", value_name = "PATH")]
    #[serde(default)]
    protect: Vec<String>,
    /// At most this many retirements in the plan, counted after proof (kept candidates are
    /// always listed); run again for the rest.
    #[arg(long, value_name = "N", default_value_t = 200)]
    #[serde(default = "default_limit")]
    limit: usize,
    /// Run the previewed plan (needs --digest; rw, root for other identities' state).
    #[arg(long)]
    #[serde(default)]
    apply: bool,
    /// The plan_digest of the preview being applied.
    #[arg(long, value_name = "DIGEST")]
    #[serde(default)]
    digest: Option<String>,
    /// Retire worktrees that hold ignored files (`.env`, build output) too: the plan lists each
    /// file, and applying it deletes exactly those; without this such a worktree is kept.
    #[arg(long)]
    #[serde(default)]
    discard_ignored: bool,
    /// Resume this transaction.
    #[arg(long, value_name = "ID")]
    #[serde(default)]
    txn: Option<String>,
}

fn default_keep_runs() -> usize {
    20
}

fn default_limit() -> usize {
    200
}

impl Classify for Request {
    fn class(&self, declared: Class) -> Class {
        if self.apply { Class::Apply } else { declared }
    }

    fn display_path(&self, path: &str) -> String {
        if self.apply {
            format!("{path} --apply")
        } else {
            path.to_string()
        }
    }
}

pub(super) fn command() -> Command {
    Command::new("repo.cleanup", Class::Read, run, render).mcp(Mcp::Tier1("cleanup_repository"))
}

/// One predicate of a candidate's proof.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Proof {
    pub predicate: String,
    /// `proven`, `failed` or `unknown`.
    pub result: String,
    #[serde(default)]
    pub detail: String,
    /// The keep reason this proof gives when it is not proven.
    #[serde(skip)]
    keep: &'static str,
}

impl Proof {
    fn new(
        predicate: &str,
        result: Result<bool, String>,
        detail: impl Into<String>,
        keep: &'static str,
    ) -> Proof {
        let detail = detail.into();
        match result {
            Ok(true) => Proof {
                predicate: predicate.into(),
                result: "proven".into(),
                detail,
                keep,
            },
            Ok(false) => Proof {
                predicate: predicate.into(),
                result: "failed".into(),
                detail,
                keep,
            },
            Err(why) => Proof {
                predicate: predicate.into(),
                result: "unknown".into(),
                detail: why,
                keep: "unproven",
            },
        }
    }

    fn proven(&self) -> bool {
        self.result == "proven"
    }
}

/// A candidate as planned (the digest covers all of it).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Candidate {
    /// `worktree`, `local_branch`, `remote_branch`, `registration` or `run_dir`.
    pub kind: String,
    /// Stable identity: the ref name, the worktree's administrative id, the run id.
    pub id: String,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(rename = "ref", default)]
    pub reference: Option<String>,
    #[serde(default)]
    pub tip: Option<String>,
    #[serde(default)]
    pub task: Option<String>,
    /// The identity whose state this is (the task's assignee, else its owner).
    #[serde(default)]
    pub owner: Option<String>,
    /// `delivered`, `branch_gone`, `run_finished`, `prunable` or `expired_run`.
    #[serde(default)]
    pub reason: Option<String>,
    pub proofs: Vec<Proof>,
    /// `retire` or `keep`.
    pub action: String,
    #[serde(default)]
    pub keep_reason: Option<String>,
    /// A worktree's ignored files, each with its size: removing the worktree deletes them, so
    /// the plan (and its digest) names every one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_files: Vec<git::cli::Ignored>,
}

/// The plan: what was observed and what will be done. Its canonical JSON is digested.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    pub tool: String,
    pub base: Base,
    pub include: Vec<String>,
    #[serde(default)]
    pub project: Option<String>,
    #[serde(default)]
    pub protect: Vec<String>,
    pub candidates: Vec<Candidate>,
    /// Proven candidates beyond `--limit`, left for a later run.
    #[serde(default)]
    pub omitted: u64,
}

/// A candidate with what an apply did to it.
#[derive(Debug, Serialize)]
pub struct CandidateView {
    #[serde(flatten)]
    candidate: Candidate,
    /// `done`, `failed` or `null` (preview, or kept).
    result: Option<String>,
    retained_ref: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Summary {
    retire: u64,
    keep: u64,
}

/// A per-item refusal (COMMANDS.md §12).
#[derive(Debug, Clone, Serialize)]
pub struct ItemRefusal {
    subject: String,
    policy: String,
    reason: String,
    next: String,
}

#[derive(Debug, Serialize)]
pub struct Observation {
    observed_at: String,
}

#[derive(Debug, Serialize)]
pub struct Response {
    mode: &'static str,
    plan_digest: String,
    txn: Option<String>,
    outcome: Option<String>,
    already_applied: bool,
    base: Base,
    candidates: Vec<CandidateView>,
    summary: Summary,
    omitted: u64,
    evidence: Vec<String>,
    refusals: Vec<ItemRefusal>,
    notices: Vec<Notice>,
    observation: Observation,
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
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
            let plan: Plan = frozen(&txn)?;
            if let Some(r) = root_refusal(ctx, COMMAND, &others(ctx, &plan)?)? {
                return refused(r);
            }
            let mut run = Run::resume(ctx, &txn)?;
            if run.txn.outcome().is_some() {
                return recorded(ctx, &run.txn);
            }
            execute(ctx, &mut run, plan, Vec::new())
        }
        Start::Preview => {
            let mut notices = Vec::new();
            let plan = observe(ctx, &req, &mut notices)?;
            if let Some(r) = nothing_provable(&plan) {
                return refused(r);
            }
            let digest = digest_of(&plan)?;
            announce(ctx, &notices);
            let refusals = item_refusals(ctx, &plan, &digest)?;
            Ok(Outcome::Done(response(
                ctx, "preview", plan, digest, None, notices, refusals,
            )))
        }
        Start::Fresh { digest: expected } => {
            let mut notices = Vec::new();
            let plan = observe(ctx, &req, &mut notices)?;
            if let Some(r) = root_refusal(ctx, COMMAND, &others(ctx, &plan)?)? {
                return refused(r);
            }
            let digest = digest_of(&plan)?;
            let gate = ApplyRequest {
                command: COMMAND,
                digest: Some(&expected),
            };
            if let Some(r) = contract::drift(gate, &digest, "refs, worktrees, run records or tasks")
            {
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

/// Identities other than the caller whose state a retire action of the plan touches.
fn others(ctx: &Ctx, plan: &Plan) -> Result<Vec<String>, Error> {
    let me = &ctx.identity()?.agent.id;
    let set: BTreeSet<String> = plan
        .candidates
        .iter()
        .filter(|c| c.action == "retire")
        .filter_map(|c| c.owner.clone())
        .filter(|o| o != me)
        .collect();
    Ok(set.into_iter().collect())
}

fn item_refusals(ctx: &Ctx, plan: &Plan, digest: &str) -> Result<Vec<ItemRefusal>, Error> {
    let me = ctx.identity()?.agent.id.clone();
    if me == crate::model::id::ROOT_AGENT {
        return Ok(Vec::new());
    }
    Ok(plan
        .candidates
        .iter()
        .filter(|c| c.action == "retire")
        .filter_map(|c| {
            let owner = c.owner.as_ref()?;
            (owner != &me).then(|| ItemRefusal {
                subject: c.id.clone(),
                policy: "grant.root_required".into(),
                reason: format!("{} belongs to {owner}", c.id),
                next: format!(
                    "Ask a-root or the human to run `dacli {COMMAND} --apply --digest {digest}`."
                ),
            })
        })
        .collect())
}

/// `git.cannot_prove`: the base could not be observed and nothing else is retire-able.
fn nothing_provable(plan: &Plan) -> Option<crate::model::Refusal> {
    if plan.base.provable().is_some() || plan.candidates.iter().any(|c| c.action == "retire") {
        return None;
    }
    let needs_base = plan
        .candidates
        .iter()
        .any(|c| c.kind == "local_branch" || c.kind == "remote_branch" || c.kind == "worktree");
    if !needs_base {
        return None;
    }
    let (reason, next) = match plan.base.source.as_str() {
        "fetch_failed" => (
            format!("fetching `{}` from origin failed, so no delivery can be proven", plan.base.name),
            "Fix the remote (`git fetch origin` shows why) and preview again, or pass `--no-fetch` to prove against the local branch.".to_string(),
        ),
        _ if plan.base.shallow => (
            "this is a shallow clone, so no ancestry can be proven".to_string(),
            "Run `git fetch --unshallow` and preview again.".to_string(),
        ),
        _ if plan.base.name.is_empty() => (
            "no base branch is known (HEAD is detached or the repository has no commits), so no delivery can be proven".to_string(),
            "Pass `--base <branch>`, or set `[landing] base` in .dacli/config.toml.".to_string(),
        ),
        _ => (
            format!("the base branch `{}` does not exist, so no delivery can be proven", plan.base.name),
            "Pass `--base <branch>` naming an existing branch.".to_string(),
        ),
    };
    Some(crate::model::Refusal::new("git.cannot_prove", reason, next))
}

// ----- observation -----------------------------------------------------------------------

/// Everything the plan is made of, observed now.
fn observe(ctx: &Ctx, req: &Request, notices: &mut Vec<Notice>) -> Result<Plan, Error> {
    let ws = ctx.ws()?;
    if req.limit == 0 {
        return Err(Error::usage(
            "--limit must be at least 1: it is how many proven candidates one run retires",
        ));
    }
    let project = project_slug(ctx, req.project.as_deref())?;
    let mut include: Vec<Include> = if req.include.is_empty() {
        vec![
            Include::Worktrees,
            Include::LocalBranches,
            Include::Registrations,
        ]
    } else {
        req.include.clone()
    };
    include.sort();
    include.dedup();
    for p in &req.protect {
        crate::workspace::names::check_repo_path(p).map_err(|e| {
            Error::new(
                crate::dispatch::ErrorKind::Usage,
                "E_PATH_ESCAPE",
                format!("--protect: {e}"),
            )
        })?;
    }
    let repo = Repo::open(ws.root())?;
    let base = observe_base(
        ctx,
        &repo,
        req.base.as_deref(),
        project.as_deref(),
        !req.no_fetch,
        notices,
    )?;
    let repo = Repo::open(ws.root())?;
    let snapshot = Snapshot::load(ws, &|facts| crate::policy::dod::evaluate(facts).passed)?;
    ctx.warn_all(snapshot.warnings.iter().cloned());
    let ancestry = match base.provable() {
        Some(sha) => Some(repo.ancestry(sha)?),
        None => None,
    };
    // Commits on the base that name a task by trailer: a squash merge of its branch.
    let mut squashes: HashMap<String, Vec<String>> = HashMap::new();
    if let Some(sha) = base.provable() {
        for (commit, values) in repo.trailers(&[sha.to_string()], &TRAILERS)? {
            for v in values {
                squashes
                    .entry(normalise_task_id(&v))
                    .or_default()
                    .push(commit.clone());
            }
        }
    }
    let branch_tasks = BranchTasks::new(&snapshot);
    let env = Env {
        ctx,
        branch_tasks: &branch_tasks,
        base: &base,
        ancestry: ancestry.as_ref(),
        squashes: &squashes,
        project: project.as_deref(),
        discard_ignored: req.discard_ignored,
    };
    let checked_out = repo.checked_out()?;
    // `--limit` bounds what the plan retires, counted after proof in the plan's order (kind,
    // then id): kept candidates never use it up, so a run always retires the next proven ones.
    let mut budget = Budget {
        left: req.limit,
        omitted: 0,
    };
    let mut candidates = Vec::new();
    let mut retired_worktrees: Vec<(String, PathBuf)> = Vec::new();
    if include.contains(&Include::Worktrees) {
        for wt in repo.worktrees()? {
            if wt.prunable {
                continue;
            }
            if let Some(c) = worktree_candidate(&env, &wt, &req.protect)?
                && let Some(c) = budget.admit(c)
            {
                if c.action == "retire"
                    && let Some(r) = &c.reference
                {
                    retired_worktrees.push((r.clone(), wt.path.clone()));
                }
                candidates.push(c);
            }
        }
    }
    // Proving thousands of branches takes seconds: a terminal shows how far it got.
    let mut branch_refs = Vec::new();
    if include.contains(&Include::LocalBranches) {
        branch_refs.extend(repo.refs_with_prefix("refs/heads/dacli/")?);
    }
    let local = branch_refs.len();
    if include.contains(&Include::RemoteBranches) {
        branch_refs.extend(repo.refs_with_prefix("refs/remotes/origin/dacli/")?);
    }
    let total = branch_refs.len() as u64;
    let progress = ctx.progress_of(format!("proving {total} branch(es)"), Some(total));
    for (n, (name, tip)) in branch_refs.iter().enumerate() {
        if n % PROGRESS_EVERY == 0 {
            progress.advance(n as u64, format!("proving branch {} of {total}", n + 1));
        }
        if n < local {
            let holders: Vec<&PathBuf> = checked_out
                .get(name)
                .map(|v| v.iter().collect())
                .unwrap_or_default();
            let freed = holders.iter().all(|h| {
                retired_worktrees
                    .iter()
                    .any(|(r, p)| r == name && same_dir(p, h))
            });
            if let Some(c) = branch_candidate(&env, "local_branch", name, tip, &holders, freed)?
                && let Some(c) = budget.admit(c)
            {
                candidates.push(c);
            }
        } else if let Some(c) = branch_candidate(&env, "remote_branch", name, tip, &[], true)?
            && let Some(c) = budget.admit(c)
        {
            candidates.push(c);
        }
    }
    drop(progress);
    if include.contains(&Include::Registrations) {
        for wt in repo.worktrees()?.into_iter().filter(|w| w.prunable) {
            if let Some(c) = budget.admit(registration_candidate(ctx, &wt)) {
                candidates.push(c);
            }
        }
    }
    if include.contains(&Include::Runs) {
        let mut runs = run_candidates(ctx, req.keep_runs)?;
        runs.sort_by(|a, b| a.id.cmp(&b.id));
        candidates.extend(runs.into_iter().filter_map(|c| budget.admit(c)));
    }
    let order = |k: &str| match k {
        "worktree" => 0,
        "local_branch" => 1,
        "remote_branch" => 2,
        "registration" => 3,
        _ => 4,
    };
    candidates.sort_by(|a, b| (order(&a.kind), &a.id).cmp(&(order(&b.kind), &b.id)));
    let omitted = budget.omitted;
    if omitted > 0 {
        notices.push(Notice::new(
            "limit",
            format!(
                "{omitted} more proven candidate{} left for the next run (--limit {}); apply this plan, then preview again",
                if omitted == 1 { " is" } else { "s are" },
                req.limit
            ),
        ));
    }
    Ok(Plan {
        tool: TOOL.into(),
        base,
        include: include.iter().map(|i| i.as_str().to_string()).collect(),
        project,
        protect: req.protect.clone(),
        candidates,
        omitted,
    })
}

/// How many more retirements the plan may hold (`--limit`), and how many proven ones it left
/// out.
struct Budget {
    left: usize,
    omitted: u64,
}

impl Budget {
    /// The candidate as the plan holds it: a kept one always, a retired one while the limit
    /// allows; `None` when it is left for a later run.
    fn admit(&mut self, c: Candidate) -> Option<Candidate> {
        if c.action != "retire" {
            return Some(c);
        }
        if self.left == 0 {
            self.omitted += 1;
            return None;
        }
        self.left -= 1;
        Some(c)
    }
}

struct Env<'a> {
    ctx: &'a Ctx<'a>,
    base: &'a Base,
    /// Reachability from the base (`None`: the base cannot be proven against).
    ancestry: Option<&'a git::Ancestry<'a>>,
    /// Commits on the base naming a task by trailer, by lower-case task id.
    squashes: &'a HashMap<String, Vec<String>>,
    branch_tasks: &'a BranchTasks<'a>,
    project: Option<&'a str>,
    discard_ignored: bool,
}

impl Env<'_> {
    /// `ancestor_of_fresh_base`: every commit of the tip is on the base, or a commit on the
    /// base that names the task by trailer holds exactly the branch's changes (a squash merge).
    fn ancestor(&self, tip: &str, task: Option<&TaskEntry>) -> Result<Proof, Error> {
        let Some(ancestry) = self.ancestry else {
            return Ok(Proof::new(
                "ancestor_of_fresh_base",
                Err(self.base_unknown()),
                "",
                "unproven",
            ));
        };
        if ancestry.contains(tip) {
            return Ok(Proof::new(
                "ancestor_of_fresh_base",
                Ok(true),
                "",
                "unique_commits",
            ));
        }
        if let Some(t) = task {
            for commit in self
                .squashes
                .get(&t.id().to_ascii_lowercase())
                .into_iter()
                .flatten()
            {
                if ancestry.holds_work_of(tip, commit)? {
                    return Ok(Proof::new(
                        "ancestor_of_fresh_base",
                        Ok(true),
                        format!(
                            "squash-merged: {} on {} names {} and holds the branch's changes",
                            &commit[..commit.len().min(12)],
                            self.base.name,
                            t.id()
                        ),
                        "unique_commits",
                    ));
                }
            }
        }
        let unique = ancestry.unique_count(tip)?;
        Ok(Proof::new(
            "ancestor_of_fresh_base",
            Ok(false),
            format!(
                "{unique} commit{} not on {} (a squash or rebase merge is proven only by a commit on the base naming the task in a `Dacli-Task:` trailer)",
                if unique == 1 { "" } else { "s" },
                self.base.name
            ),
            "unique_commits",
        ))
    }

    /// `tip_not_on_base_first_parent`: the tip is not a mainline commit (a branch created
    /// at the base without work looks merged by ancestry alone).
    fn not_on_mainline(&self, tip: &str) -> Proof {
        match self.ancestry {
            None => Proof::new(
                "tip_not_on_base_first_parent",
                Err(self.base_unknown()),
                "",
                "unproven",
            ),
            Some(a) if a.on_mainline(tip) => Proof::new(
                "tip_not_on_base_first_parent",
                Ok(false),
                format!(
                    "the tip is on {}'s first-parent line: a branch without work of its own, or a fast-forward merge, which ancestry cannot tell apart",
                    self.base.name
                ),
                "unproven",
            ),
            Some(_) => Proof::new("tip_not_on_base_first_parent", Ok(true), "", "unproven"),
        }
    }

    fn base_unknown(&self) -> String {
        if self.base.shallow {
            "shallow clone: ancestry cannot be proven".into()
        } else if self.base.name.is_empty() {
            "no base branch is known".into()
        } else {
            format!(
                "the base `{}` could not be observed ({})",
                self.base.name, self.base.source
            )
        }
    }

    /// `task_known` and the task.
    fn task(&self, short: &str) -> (Proof, Option<&TaskEntry>) {
        match self.branch_tasks.task_of(short) {
            Ok(t) => (
                Proof::new("task_known", Ok(true), t.id().to_string(), "unproven"),
                Some(t),
            ),
            Err(why) => (Proof::new("task_known", Err(why), "", "unproven"), None),
        }
    }

    fn in_scope(&self, task: Option<&TaskEntry>) -> bool {
        match self.project {
            None => true,
            Some(p) => task.is_some_and(|t| t.project() == p),
        }
    }
}

/// `not_reopened`: a done task, or one never reopened. A reopened task still in progress may
/// be using its branch again.
fn not_reopened(task: Option<&TaskEntry>) -> Proof {
    match task {
        None => Proof::new(
            "not_reopened",
            Err("the task is not known".into()),
            "",
            "reopened",
        ),
        Some(t) if t.status() == Status::Done || t.generation() == 0 => {
            Proof::new("not_reopened", Ok(true), "", "reopened")
        }
        Some(t) => Proof::new(
            "not_reopened",
            Ok(false),
            format!(
                "the task was reopened (generation {}) and is {}",
                t.generation(),
                t.status().as_str()
            ),
            "reopened",
        ),
    }
}

fn decide(mut c: Candidate) -> Candidate {
    match c.proofs.iter().find(|p| !p.proven()) {
        None => {
            c.action = "retire".into();
            c.keep_reason = None;
        }
        Some(p) => {
            c.action = "keep".into();
            c.keep_reason = Some(p.keep.to_string());
        }
    }
    c
}

fn branch_candidate(
    env: &Env<'_>,
    kind: &str,
    name: &str,
    tip: &str,
    holders: &[&PathBuf],
    freed: bool,
) -> Result<Option<Candidate>, Error> {
    let short = name
        .strip_prefix("refs/heads/")
        .or_else(|| name.strip_prefix("refs/remotes/origin/"))
        .unwrap_or(name);
    let (known, task) = env.task(short);
    if !env.in_scope(task) {
        return Ok(None);
    }
    let mut proofs = vec![known, env.ancestor(tip, task)?, env.not_on_mainline(tip)];
    if kind == "local_branch" {
        let root = env.ctx.ws()?.root();
        let shown: Vec<String> = holders.iter().map(|h| relative(root, h)).collect();
        proofs.push(if holders.is_empty() {
            Proof::new("not_checked_out_anywhere", Ok(true), "", "live_owner")
        } else if freed {
            Proof::new(
                "not_checked_out_anywhere",
                Ok(true),
                format!(
                    "checked out only in {}, which this plan retires first",
                    shown.join(", ")
                ),
                "live_owner",
            )
        } else {
            Proof::new(
                "not_checked_out_anywhere",
                Ok(false),
                format!("checked out in {}", shown.join(", ")),
                "live_owner",
            )
        });
    } else {
        let linked = env
            .ctx
            .ws()?
            .config
            .doc
            .get("github")
            .and_then(|g| g.get("repo"))
            .is_some();
        let why = if linked {
            "GitHub was not consulted; an open pull request may use this branch"
        } else {
            "no GitHub repository is linked, so no pull request can be checked; remote branches are listed and kept"
        };
        proofs.push(Proof::new(
            "no_open_pr_uses_it",
            Err(why.into()),
            "",
            "unproven",
        ));
    }
    proofs.push(not_reopened(task));
    Ok(Some(decide(Candidate {
        kind: kind.into(),
        id: name.into(),
        path: None,
        reference: Some(name.into()),
        tip: Some(tip.into()),
        task: task.map(|t| t.id().to_string()),
        owner: task.map(state_owner),
        reason: Some("delivered".into()),
        proofs,
        action: String::new(),
        keep_reason: None,
        ignored_files: Vec::new(),
    })))
}

/// A linked worktree is a candidate when it lies under `.dacli/worktrees/` or has a task
/// branch (`refs/heads/dacli/...`) checked out; anything else is the user's own.
fn worktree_candidate(
    env: &Env<'_>,
    wt: &git::Worktree,
    protect: &[String],
) -> Result<Option<Candidate>, Error> {
    let ws = env.ctx.ws()?;
    let root = ws.root();
    let under_workspace = wt.path.starts_with(ws.path(&["worktrees"]));
    let branch = match &wt.head {
        Some(Head::Branch { name, .. }) => Some(name.clone()),
        Some(Head::Unborn { branch }) => Some(format!("refs/heads/{branch}")),
        _ => None,
    };
    let task_branch = branch
        .as_deref()
        .is_some_and(|b| b.starts_with("refs/heads/dacli/"));
    if !under_workspace && !task_branch {
        return Ok(None);
    }
    let shown = relative(root, &wt.path);
    let tip = match &wt.head {
        Some(Head::Branch { sha, .. }) | Some(Head::Detached { sha }) => Some(sha.clone()),
        _ => None,
    };
    let (known, task) = match branch
        .as_deref()
        .and_then(|b| b.strip_prefix("refs/heads/"))
    {
        Some(short) => env.task(short),
        None => (
            Proof::new(
                "task_known",
                Err("the worktree has no branch".into()),
                "",
                "unproven",
            ),
            None,
        ),
    };
    if !env.in_scope(task) {
        return Ok(None);
    }
    let cwd = &env.ctx.env().cwd;
    let mut proofs = vec![known];
    let holds_cwd = cwd.starts_with(&wt.path) || canonical(cwd).starts_with(canonical(&wt.path));
    proofs.push(Proof::new(
        "not_main_or_cwd",
        Ok(!holds_cwd),
        if holds_cwd {
            "the current directory is inside it"
        } else {
            ""
        },
        "protected",
    ));
    let protected = protect.iter().find(|p| {
        let p = root.join(p);
        wt.path.starts_with(&p)
    });
    proofs.push(Proof::new(
        "not_protected",
        Ok(protected.is_none()),
        protected
            .map(|p| format!("--protect {p}"))
            .unwrap_or_default(),
        "protected",
    ));
    proofs.push(Proof::new(
        "not_locked",
        Ok(!wt.locked),
        if wt.locked { "locked" } else { "" },
        "locked",
    ));
    proofs.push(match git::cleanliness(&wt.path) {
        Ok(c) if c.is_clean() => Proof::new("clean_including_untracked", Ok(true), "", "dirty"),
        Ok(c) => Proof::new(
            "clean_including_untracked",
            Ok(false),
            format!("{} modified, {} untracked", c.modified, c.untracked),
            "dirty",
        ),
        Err(e) => Proof::new("clean_including_untracked", Err(e.to_string()), "", "dirty"),
    });
    // `git worktree remove` deletes ignored files without a word; a `.env` or a local config
    // is content a person may need. Such a tree is kept unless the caller asked for a plan
    // that names each file, and applies that plan.
    let mut ignored_files = Vec::new();
    proofs.push(match git::cli::ignored_files(&wt.path).map(person_files) {
        Ok(files) if files.is_empty() => {
            Proof::new("no_unlisted_ignored_files", Ok(true), "", "ignored_files")
        }
        Ok(files) => {
            let n = files.len();
            let first = files[0].path.clone();
            ignored_files = files;
            let more = if n > 1 {
                format!(" and {} more", n - 1)
            } else {
                String::new()
            };
            if env.discard_ignored {
                Proof::new(
                    "no_unlisted_ignored_files",
                    Ok(true),
                    format!("{first}{more} listed; applying deletes them"),
                    "ignored_files",
                )
            } else {
                Proof::new(
                    "no_unlisted_ignored_files",
                    Ok(false),
                    format!("{first}{more} ignored; preview with --discard-ignored to list and delete them"),
                    "ignored_files",
                )
            }
        }
        Err(e) => Proof::new(
            "no_unlisted_ignored_files",
            Err(e.to_string()),
            "",
            "ignored_files",
        ),
    });
    let (reason, dead) = dead_reason(env, wt, task, tip.as_deref())?;
    proofs.extend(dead);
    Ok(Some(decide(Candidate {
        kind: "worktree".into(),
        id: wt.id.clone(),
        path: Some(shown),
        reference: branch,
        tip,
        task: task.map(|t| t.id().to_string()),
        owner: task.map(state_owner),
        reason: Some(reason.into()),
        proofs,
        action: String::new(),
        keep_reason: None,
        ignored_files,
    })))
}

/// The ignored files of a worktree that a person may need: all but dacli's own machine-local
/// data in the worktree's `.dacli/` (`cache/`, `.locks/`, `runs/` and temporary files), which
/// is derived or runtime state (FORMAT §21) and changes whenever dacli runs there.
fn person_files(files: Vec<git::cli::Ignored>) -> Vec<git::cli::Ignored> {
    files
        .into_iter()
        .filter(|f| {
            let Some(inner) = f.path.strip_prefix(".dacli/") else {
                return true;
            };
            let runtime = ["cache/", ".locks/", "runs/"]
                .iter()
                .any(|d| inner.starts_with(d));
            let temp = inner
                .rsplit('/')
                .next()
                .is_some_and(|name| name.starts_with(crate::store::TEMP_PREFIX));
            !(runtime || temp)
        })
        .collect()
}

/// Why a worktree is dead: its branch is gone (nothing but the clean checkout is lost), or
/// its task is done (the branch ref stays), or its work is delivered.
fn dead_reason(
    env: &Env<'_>,
    wt: &git::Worktree,
    task: Option<&TaskEntry>,
    tip: Option<&str>,
) -> Result<(&'static str, Vec<Proof>), Error> {
    if matches!(wt.head, Some(Head::Unborn { .. })) {
        return Ok((
            "branch_gone",
            vec![Proof::new("branch_gone", Ok(true), "", "unproven")],
        ));
    }
    if let Some(t) = task
        && t.status() == Status::Done
    {
        return Ok((
            "run_finished",
            vec![Proof::new(
                "owner_terminal",
                Ok(true),
                format!("{} is done; its branch stays", t.id()),
                "live_owner",
            )],
        ));
    }
    let Some(tip) = tip else {
        return Ok((
            "delivered",
            vec![Proof::new(
                "delivered",
                Err("the worktree's HEAD cannot be read".into()),
                "",
                "unproven",
            )],
        ));
    };
    let mut proofs = vec![env.ancestor(tip, task)?, env.not_on_mainline(tip)];
    proofs.push(match task {
        Some(t) => Proof::new(
            "owner_terminal",
            Ok(false),
            format!(
                "{} is {}; its assignee may still work here",
                t.id(),
                t.status().as_str()
            ),
            "live_owner",
        ),
        None => Proof::new(
            "owner_terminal",
            Ok(true),
            "detached at a commit, no task",
            "live_owner",
        ),
    });
    Ok(("delivered", proofs))
}

fn registration_candidate(ctx: &Ctx, wt: &git::Worktree) -> Candidate {
    let root = ctx.ws().map(|w| w.root().to_path_buf()).unwrap_or_default();
    decide(Candidate {
        kind: "registration".into(),
        id: wt.id.clone(),
        path: Some(relative(&root, &wt.path)),
        reference: match &wt.head {
            Some(Head::Branch { name, .. }) => Some(name.clone()),
            _ => None,
        },
        tip: None,
        task: None,
        owner: None,
        reason: Some("prunable".into()),
        proofs: vec![
            Proof::new(
                "prunable",
                Ok(wt.prunable),
                "its checkout directory is gone",
                "unproven",
            ),
            Proof::new(
                "not_locked",
                Ok(!wt.locked),
                if wt.locked { "locked" } else { "" },
                "locked",
            ),
        ],
        action: String::new(),
        keep_reason: None,
        ignored_files: Vec::new(),
    })
}

/// Run records (`runs/<id>/` or `runs/<group>/<id>/` with a `run.toml`), newest first.
fn run_candidates(ctx: &Ctx, keep: usize) -> Result<Vec<Candidate>, Error> {
    let ws = ctx.ws()?;
    let found = ops::cleanup::run_records(ws)?;
    let open = crate::journal::txn::open(ws)?;
    ctx.warn_all(open.warnings);
    let referenced: Vec<String> = open
        .items
        .iter()
        .map(|t| t.plan().map(Value::to_string).unwrap_or_default())
        .collect();
    let mut out = Vec::new();
    for (n, ops::cleanup::RunRecord { id, dir, meta }) in found.into_iter().enumerate() {
        let get = |k: &str| {
            meta.as_ref()
                .and_then(|m| m.doc.get(k))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        };
        let terminal = match (get("kind").as_deref(), get("outcome").as_deref()) {
            (Some("brief"), _) => Ok(true),
            (_, Some("completed" | "failed" | "abandoned" | "done" | "refused")) => Ok(true),
            (_, Some(_)) => Ok(false),
            _ => Err("run.toml records no outcome".to_string()),
        };
        let has_pid = meta.as_ref().is_some_and(|m| m.doc.get("pid").is_some());
        let mut proofs = vec![
            Proof::new(
                "outside_newest_kept",
                Ok(n >= keep),
                format!("the newest {keep} run records are kept"),
                "protected",
            ),
            Proof::new("terminal_outcome", terminal, "", "live_owner"),
            if has_pid {
                Proof::new(
                    "process_not_alive",
                    Err("run.toml names a process; dacli does not probe processes".into()),
                    "",
                    "live_owner",
                )
            } else {
                Proof::new(
                    "process_not_alive",
                    Ok(true),
                    "no process recorded",
                    "live_owner",
                )
            },
            Proof::new(
                "not_in_open_txn",
                Ok(!referenced.iter().any(|p| p.contains(&id))),
                "",
                "protected",
            ),
        ];
        if meta.is_none() {
            proofs.push(Proof::new(
                "readable",
                Err("run.toml does not parse".into()),
                "",
                "unproven",
            ));
        }
        out.push(decide(Candidate {
            kind: "run_dir".into(),
            id: id.clone(),
            path: Some(ws.display(&dir)),
            reference: None,
            tip: None,
            task: get("task"),
            owner: get("created_by"),
            reason: Some("expired_run".into()),
            proofs,
            action: String::new(),
            keep_reason: None,
            ignored_files: Vec::new(),
        }));
    }
    Ok(out)
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

fn same_dir(a: &Path, b: &Path) -> bool {
    a == b || canonical(a) == canonical(b)
}

// ----- apply -----------------------------------------------------------------------------

/// What happened to one retire action.
struct Done {
    result: &'static str,
    retained: Option<String>,
    item: EvidenceItem,
}

fn execute(
    ctx: &Ctx,
    run: &mut Run<'_, '_>,
    plan: Plan,
    notices: Vec<Notice>,
) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let root = ws.root().to_path_buf();
    let txn_id = run.txn.id().to_string();
    let mut results: Vec<Option<Done>> = Vec::new();
    let mut pruned = false;
    let mut branches: Option<HashMap<String, Done>> = None;
    let retiring = plan
        .candidates
        .iter()
        .filter(|c| c.action == "retire")
        .count() as u64;
    let progress = ctx.progress_of(format!("retiring {retiring} candidate(s)"), Some(retiring));
    let mut started = 0u64;
    for c in &plan.candidates {
        if c.action != "retire" {
            results.push(None);
            continue;
        }
        progress.advance(
            started,
            format!("retiring {} {}", c.kind, c.path.as_deref().unwrap_or(&c.id)),
        );
        started += 1;
        let done = match c.kind.as_str() {
            "worktree" => retire_worktree(run, &root, c)?,
            "local_branch" => {
                if branches.is_none() {
                    let all: Vec<&Candidate> = plan
                        .candidates
                        .iter()
                        .filter(|b| b.kind == "local_branch" && b.action == "retire")
                        .collect();
                    branches = Some(retire_branches(run, &root, &all, &txn_id)?);
                }
                branches
                    .as_mut()
                    .and_then(|b| b.remove(&c.id))
                    .ok_or_else(|| Error::internal(format!("no result for {}", c.id)))?
            }
            "registration" => {
                let d = prune(run, &root, c, pruned)?;
                pruned = true;
                d
            }
            "run_dir" => retire_run(ctx, run, c)?,
            other => return Err(Error::internal(format!("no retire action for `{other}`"))),
        };
        results.push(Some(done));
    }
    let failed = results
        .iter()
        .flatten()
        .filter(|d| d.result == "failed")
        .count();
    let retired = results
        .iter()
        .flatten()
        .filter(|d| d.result == "done")
        .count();
    let kept = plan
        .candidates
        .iter()
        .filter(|c| c.action == "keep")
        .count();
    let outcome = if failed == 0 {
        TxnOutcome::Completed
    } else {
        TxnOutcome::Partial
    };
    let who = ctx.identity()?.agent.clone();
    let head = crate::git::head_sha(&root);
    let items: Vec<EvidenceItem> = results
        .iter()
        .flatten()
        .map(|d| d.item.clone())
        .chain(
            plan.candidates
                .iter()
                .filter(|c| c.action == "keep")
                .map(|c| EvidenceItem {
                    subject: c.path.clone().unwrap_or_else(|| c.id.clone()),
                    action: format!("keep_{}", c.kind),
                    result: "kept".into(),
                    before: c.tip.clone(),
                    after: c.tip.clone(),
                    reasons: c.keep_reason.iter().cloned().collect(),
                }),
        )
        .collect();
    // A retry of a partial transaction that ends as the last one did proves nothing new: the
    // evidence it wrote then stands, and no second record is made.
    let items_digest =
        crate::policy::apply::sha256_digest(format!("{outcome:?}{items:?}").as_bytes());
    let earlier = last(&run.txn, "evidence", "evidence")
        .filter(|(s, o)| {
            *s == StepStatus::Done && o.get("items").and_then(Value::as_str) == Some(&items_digest)
        })
        .and_then(|(_, o)| {
            o.get("evidence")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
    let shown = match earlier {
        Some(path) => path,
        None => {
            let path = crate::ops::evidence::write(
                ws,
                &Evidence {
                    id: ctx.new_ulid(),
                    tool: TOOL,
                    created_by: &who.id,
                    grant: who.grant,
                    outcome: outcome.as_str(),
                    txn: Some(&txn_id),
                    plan_digest: Some(run.txn.plan_digest()),
                    git_head: head.as_deref(),
                    summary: vec![
                        ("retired", retired as i64),
                        ("kept", kept as i64),
                        ("failed", failed as i64),
                    ],
                    items,
                },
            )?;
            let shown = ws.display(&path);
            if outcome != TxnOutcome::Completed {
                run.step(
                    "evidence",
                    StepStatus::Done,
                    json!({"subject": "evidence"}),
                    json!({"evidence": shown, "items": items_digest}),
                )?;
            }
            shown
        }
    };
    if outcome == TxnOutcome::Completed {
        run.finish(
            outcome,
            json!({"evidence": shown, "retired": retired, "kept": kept}),
        )?;
    } else {
        // Some guard no longer held (a branch moved, a worktree changed): a lost
        // compare-and-swap, so the call fails as a conflict (exit 5) and says what to do.
        let subjects: Vec<String> = plan
            .candidates
            .iter()
            .zip(&results)
            .filter(|(_, d)| d.as_ref().is_some_and(|d| d.result == "failed"))
            .map(|(c, _)| c.path.clone().unwrap_or_else(|| c.id.clone()))
            .collect();
        announce(ctx, &notices);
        return Err(Error::new(
            crate::dispatch::ErrorKind::Conflict,
            "E_PARTIAL",
            format!(
                "cleanup applied in part: {retired} retired, {failed} failed because {} changed after the preview ({}); transaction {txn_id} stays open; evidence: {shown}",
                if failed == 1 { "its subject" } else { "their subjects" },
                subjects.join(", ")
            ),
        )
        .hint(format!(
            "retry with `dacli {COMMAND} --apply --digest {} --txn {txn_id}` once the change is undone, or preview again for a new plan",
            run.txn.plan_digest()
        )));
    }
    announce(ctx, &notices);
    let digest = run.txn.plan_digest().to_string();
    let mut resp = response(
        ctx,
        "apply",
        plan,
        digest,
        Some(txn_id),
        notices,
        Vec::new(),
    );
    for (view, done) in resp.candidates.iter_mut().zip(results) {
        if let Some(d) = done {
            view.result = Some(d.result.into());
            view.retained_ref = d.retained;
        }
    }
    resp.outcome = Some(outcome.as_str().into());
    resp.evidence = vec![shown];
    Ok(Outcome::Done(resp))
}

/// The latest status of `step` for `subject` in this transaction.
fn last(txn: &Txn, step: &str, subject: &str) -> Option<(StepStatus, Value)> {
    txn.steps()
        .iter()
        .rev()
        .find(|s| s.step == step && s.guard.get("subject").and_then(Value::as_str) == Some(subject))
        .map(|s| (s.status, s.observed.clone()))
}

fn retained_name(c: &Candidate, txn: &str) -> String {
    let branch = c
        .reference
        .as_deref()
        .unwrap_or(&c.id)
        .trim_start_matches("refs/heads/");
    format!("refs/dacli/retired/{branch}/{txn}")
}

/// Retires every branch of the plan in two batches, each one ref transaction and one pair of
/// step files whatever the number of branches: first each is pinned as
/// `refs/dacli/retired/<branch>/<txn>` at its tip (created only if absent), then each still at
/// that tip is deleted (compare-and-swap). Both are safe to repeat, so a resumed or retried
/// transaction runs them again for whatever is not done.
fn retire_branches(
    run: &mut Run<'_, '_>,
    root: &Path,
    cs: &[&Candidate],
    txn: &str,
) -> Result<HashMap<String, Done>, Error> {
    let item = |c: &Candidate, result: &str, after: &str| EvidenceItem {
        subject: c.reference.clone().unwrap_or_else(|| c.id.clone()),
        action: "retire_branch".into(),
        result: result.into(),
        before: c.tip.clone(),
        after: Some(after.into()),
        reasons: c.reason.iter().cloned().collect(),
    };
    let mut out: HashMap<String, Done> = HashMap::new();
    let repo = Repo::open(root)?;
    // Pins: each absent one is created; one already at the tip is a repeated step.
    let mut pins: Vec<(String, String)> = Vec::new();
    let mut pinned: Vec<&Candidate> = Vec::new();
    for c in cs {
        let tip = c.tip.clone().unwrap_or_default();
        let retained = retained_name(c, txn);
        match repo.resolve(&retained)? {
            None => {
                pins.push((retained, tip));
                pinned.push(c);
            }
            Some(sha) if sha == tip => pinned.push(c),
            Some(_) => {
                out.insert(
                    c.id.clone(),
                    Done {
                        result: "failed",
                        retained: Some(retained),
                        item: item(c, "failed", &tip),
                    },
                );
            }
        }
    }
    let guard = json!({"subject": "branches", "pins": pins.len()});
    run.step(
        "pin_branches",
        StepStatus::Started,
        guard.clone(),
        Value::Null,
    )?;
    if let Err(e) = repo.create_refs(&pins, &format!("dacli: retire ({txn})")) {
        run.step(
            "pin_branches",
            StepStatus::Failed,
            guard,
            json!({"error": "retained_ref_taken"}),
        )?;
        return Err(e.into());
    }
    run.step(
        "pin_branches",
        StepStatus::Done,
        guard,
        json!({"pinned": pinned.len()}),
    )?;
    // Deletions: a branch gone is done; one that moved fails; the rest go in one transaction.
    let mut deletions: Vec<(String, String)> = Vec::new();
    let mut failed: BTreeMap<String, String> = BTreeMap::new();
    let mut deleted: Vec<String> = Vec::new();
    for c in &pinned {
        let name = c.reference.clone().unwrap_or_else(|| c.id.clone());
        let tip = c.tip.clone().unwrap_or_default();
        match repo.resolve(&name)? {
            None => deleted.push(name),
            Some(sha) if sha != tip => {
                failed.insert(name, sha);
            }
            Some(_) => deletions.push((name, tip)),
        }
    }
    let guard = json!({"subject": "branches", "delete": deletions.len()});
    run.step(
        "delete_branches",
        StepStatus::Started,
        guard.clone(),
        Value::Null,
    )?;
    let mut repo = Repo::open(root)?;
    if repo.delete_branches_if_unchanged(&deletions).is_ok() {
        deleted.extend(deletions.into_iter().map(|(n, _)| n));
    } else {
        // One guard failed and the batch with it: each branch on its own, so that only the
        // changed ones stay.
        for (name, tip) in deletions {
            match repo.delete_branch_if_unchanged(&name, &tip) {
                Ok(_) => deleted.push(name),
                Err(_) => {
                    let now = repo.resolve(&name)?.unwrap_or_else(|| "none".into());
                    failed.insert(name, now);
                }
            }
        }
    }
    run.step(
        "delete_branches",
        StepStatus::Done,
        guard,
        json!({"deleted": deleted, "failed": failed}),
    )?;
    for c in pinned {
        let name = c.reference.clone().unwrap_or_else(|| c.id.clone());
        let retained = Some(retained_name(c, txn));
        let done = match failed.get(&name) {
            Some(sha) => Done {
                result: "failed",
                retained,
                item: item(c, "failed", sha),
            },
            None => Done {
                result: "done",
                retained,
                item: item(c, "done", "none"),
            },
        };
        out.insert(c.id.clone(), done);
    }
    Ok(out)
}

fn retire_worktree(run: &mut Run<'_, '_>, root: &Path, c: &Candidate) -> Result<Done, Error> {
    let subject = c.id.clone();
    let shown = c.path.clone().unwrap_or_default();
    let item = |result: &str| EvidenceItem {
        subject: shown.clone(),
        action: "remove_worktree".into(),
        result: result.into(),
        before: c.tip.clone(),
        after: Some("none".into()),
        reasons: c.reason.iter().cloned().collect(),
    };
    if last(&run.txn, "remove_worktree", &subject).is_some_and(|(s, _)| s == StepStatus::Done) {
        return Ok(Done {
            result: "done",
            retained: None,
            item: item("done"),
        });
    }
    let guard = json!({"subject": subject, "path": shown, "head": c.tip, "expect": "clean"});
    run.step(
        "remove_worktree",
        StepStatus::Started,
        guard.clone(),
        Value::Null,
    )?;
    let repo = Repo::open(root)?;
    let Some(wt) = repo.worktrees()?.into_iter().find(|w| w.id == c.id) else {
        run.step(
            "remove_worktree",
            StepStatus::Done,
            guard,
            json!({"state": "absent"}),
        )?;
        return Ok(Done {
            result: "done",
            retained: None,
            item: item("done"),
        });
    };
    let head_now = match &wt.head {
        Some(Head::Branch { sha, .. }) | Some(Head::Detached { sha }) => Some(sha.clone()),
        _ => None,
    };
    let clean = git::cleanliness(&wt.path).is_ok_and(|c| c.is_clean());
    // The ignored files now must be exactly those the plan listed (and the caller accepted):
    // one created or changed since the observation is not the caller's to lose.
    let ignored_same = git::cli::ignored_files(&wt.path)
        .map(person_files)
        .is_ok_and(|now| now == c.ignored_files);
    if wt.locked || !clean || !ignored_same || head_now != c.tip {
        let state = if wt.locked {
            "locked"
        } else if !clean {
            "dirty"
        } else if !ignored_same {
            "ignored_files_changed"
        } else {
            "moved"
        };
        run.step(
            "remove_worktree",
            StepStatus::Failed,
            guard,
            json!({"state": state}),
        )?;
        return Ok(Done {
            result: "failed",
            retained: None,
            item: item("failed"),
        });
    }
    match git::cli::worktree_remove(root, &wt.path) {
        Ok(()) => {
            run.step(
                "remove_worktree",
                StepStatus::Done,
                guard,
                json!({"state": "removed", "status": "clean"}),
            )?;
            Ok(Done {
                result: "done",
                retained: None,
                item: item("done"),
            })
        }
        Err(_) => {
            run.step(
                "remove_worktree",
                StepStatus::Failed,
                guard,
                json!({"state": "refused_by_git"}),
            )?;
            Ok(Done {
                result: "failed",
                retained: None,
                item: item("failed"),
            })
        }
    }
}

/// One `git worktree prune --expire now` covers every proven registration of the plan.
fn prune(run: &mut Run<'_, '_>, root: &Path, c: &Candidate, already: bool) -> Result<Done, Error> {
    let item = |result: &str| EvidenceItem {
        subject: c.path.clone().unwrap_or_else(|| c.id.clone()),
        action: "prune_registration".into(),
        result: result.into(),
        before: None,
        after: Some("none".into()),
        reasons: vec!["prunable".into()],
    };
    if already
        || last(&run.txn, "prune_registrations", "worktrees")
            .is_some_and(|(s, _)| s == StepStatus::Done)
    {
        return Ok(Done {
            result: "done",
            retained: None,
            item: item("done"),
        });
    }
    let guard = json!({"subject": "worktrees", "expect": "prunable"});
    run.step(
        "prune_registrations",
        StepStatus::Started,
        guard.clone(),
        Value::Null,
    )?;
    match git::cli::worktree_prune(root) {
        Ok(()) => {
            run.step(
                "prune_registrations",
                StepStatus::Done,
                guard,
                json!({"state": "pruned"}),
            )?;
            Ok(Done {
                result: "done",
                retained: None,
                item: item("done"),
            })
        }
        Err(_) => {
            run.step(
                "prune_registrations",
                StepStatus::Failed,
                guard,
                json!({"state": "refused_by_git"}),
            )?;
            Ok(Done {
                result: "failed",
                retained: None,
                item: item("failed"),
            })
        }
    }
}

/// Moves a run record to `archive/runs/<id>/` byte for byte, with a manifest of each file's
/// SHA-256 written first; a resumed move finishes file by file.
fn retire_run(ctx: &Ctx, run: &mut Run<'_, '_>, c: &Candidate) -> Result<Done, Error> {
    let ws = ctx.ws()?;
    let src = ws.root().join(c.path.clone().unwrap_or_default());
    let dst = ws.path(&["archive", "runs", &c.id]);
    let shown = ws.display(&dst);
    let item = |result: &str, after: Option<String>| EvidenceItem {
        subject: c.path.clone().unwrap_or_default(),
        action: "archive_run".into(),
        result: result.into(),
        before: None,
        after,
        reasons: vec!["expired_run".into()],
    };
    if let Some((StepStatus::Done, observed)) = last(&run.txn, "archive_run", &c.id) {
        let root = observed
            .get("root")
            .and_then(Value::as_str)
            .map(str::to_string);
        return Ok(Done {
            result: "done",
            retained: Some(shown),
            item: item("done", root),
        });
    }
    let guard = json!({"subject": c.id, "path": c.path, "to": shown});
    run.step(
        "archive_run",
        StepStatus::Started,
        guard.clone(),
        Value::Null,
    )?;
    let who = ctx.identity()?.agent.id.clone();
    let files =
        ops::cleanup::run_files(ws, &src, &dst.join("manifest.toml"), &c.id, &who, ctx.now())?;
    for (name, sha, _) in &files {
        if !ops::cleanup::move_run_file(ws, &src.join(name), &dst.join(name), sha)? {
            run.step(
                "archive_run",
                StepStatus::Failed,
                guard,
                json!({"state": "archive_integrity", "file": name}),
            )?;
            return Ok(Done {
                result: "failed",
                retained: Some(shown),
                item: item("failed", None),
            });
        }
    }
    ops::cleanup::remove_run_dir(ws, &src)?;
    let root_digest = ops::cleanup::run_root(&files);
    run.step(
        "archive_run",
        StepStatus::Done,
        guard,
        json!({"root": root_digest}),
    )?;
    Ok(Done {
        result: "done",
        retained: Some(shown),
        item: item("done", Some(root_digest)),
    })
}

// ----- output ----------------------------------------------------------------------------

fn response(
    ctx: &Ctx,
    mode: &'static str,
    plan: Plan,
    digest: String,
    txn: Option<String>,
    notices: Vec<Notice>,
    refusals: Vec<ItemRefusal>,
) -> Response {
    let retire = plan
        .candidates
        .iter()
        .filter(|c| c.action == "retire")
        .count() as u64;
    let keep = plan.candidates.len() as u64 - retire;
    Response {
        mode,
        plan_digest: digest,
        txn,
        outcome: None,
        already_applied: false,
        base: plan.base,
        candidates: plan
            .candidates
            .into_iter()
            .map(|candidate| CandidateView {
                candidate,
                result: None,
                retained_ref: None,
            })
            .collect(),
        summary: Summary { retire, keep },
        omitted: plan.omitted,
        evidence: Vec::new(),
        refusals,
        notices,
        observation: Observation {
            observed_at: crate::model::format_time(ctx.now()),
        },
    }
}

/// The recorded outcome of a completed transaction: nothing is observed or done again.
fn recorded(ctx: &Ctx, txn: &Txn) -> Result<Outcome<Response>, Error> {
    let plan = frozen(txn)?;
    let id = txn.id().to_string();
    let digest = txn.plan_digest().to_string();
    let evidence: Vec<String> = txn
        .outcome_step()
        .and_then(|s| s.observed.get("evidence"))
        .and_then(Value::as_str)
        .map(|e| vec![e.to_string()])
        .unwrap_or_default();
    let mut resp = response(
        ctx,
        "apply",
        plan,
        digest,
        Some(id.clone()),
        Vec::new(),
        Vec::new(),
    );
    for view in resp.candidates.iter_mut() {
        let c = &view.candidate;
        if c.action != "retire" {
            continue;
        }
        let (step, subject) = match c.kind.as_str() {
            "worktree" => ("remove_worktree", c.id.clone()),
            "local_branch" => ("delete_branches", c.reference.clone().unwrap_or_default()),
            "registration" => ("prune_registrations", "worktrees".to_string()),
            _ => ("archive_run", c.id.clone()),
        };
        if c.kind == "local_branch" {
            view.result = last(txn, "delete_branches", "branches").map(|(s, observed)| {
                let failed = observed
                    .get("failed")
                    .and_then(|f| f.get(subject.as_str()))
                    .is_some();
                match s {
                    StepStatus::Done if !failed => "done".to_string(),
                    StepStatus::Done => "failed".to_string(),
                    other => other.as_str().to_string(),
                }
            });
            view.retained_ref = Some(retained_name(c, &id));
            continue;
        }
        view.result = last(txn, step, &subject).map(|(s, _)| match s {
            StepStatus::Done => "done".to_string(),
            other => other.as_str().to_string(),
        });
    }
    resp.outcome = txn.outcome().map(str::to_string);
    resp.already_applied = true;
    resp.evidence = evidence;
    Ok(Outcome::Done(resp))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    // An apply's text is success text (`-q` drops it); a preview's plan is the product.
    if ctx.quiet() && r.mode == "apply" {
        return String::new();
    }
    let mut out = String::new();
    let base = match &r.base.sha {
        Some(sha) => format!(
            "{} at {} ({})",
            r.base.name,
            &sha[..sha.len().min(12)],
            r.base.source
        ),
        None if r.base.name.is_empty() => "unknown".to_string(),
        None => format!("{} ({})", r.base.name, r.base.source),
    };
    out.push_str(&format!("base: {base}\n"));
    if r.candidates.is_empty() {
        out.push_str("no candidates\n");
    } else {
        let mut rows = vec![vec![
            "KIND".to_string(),
            "CANDIDATE".into(),
            "ACTION".into(),
            "WHY".into(),
        ]];
        for v in &r.candidates {
            let c = &v.candidate;
            let why = match (&c.keep_reason, c.proofs.iter().find(|p| !p.proven())) {
                (Some(k), Some(p)) if !p.detail.is_empty() => {
                    format!("{k}: {} ({})", p.predicate, p.detail)
                }
                (Some(k), Some(p)) => format!("{k}: {} {}", p.predicate, p.result),
                _ => c.reason.clone().unwrap_or_default(),
            };
            let action = match &v.result {
                Some(res) => format!("{} {res}", c.action),
                None => c.action.clone(),
            };
            rows.push(vec![
                c.kind.clone(),
                c.path.clone().unwrap_or_else(|| c.id.clone()),
                action,
                why,
            ]);
        }
        out.push_str(&crate::dispatch::text::table(&rows, &[]));
    }
    out.push_str(&format!(
        "{} to retire, {} to keep\n",
        r.summary.retire, r.summary.keep
    ));
    for f in &r.refusals {
        out.push_str(&format!("refused [{}]: {}\n", f.policy, f.reason));
    }
    match (r.mode, &r.outcome) {
        ("preview", _) if r.summary.retire == 0 => {
            out.push_str("nothing to retire; no apply needed\n")
        }
        ("preview", _) => out.push_str(&format!(
            "plan_digest: {}\napply with: dacli {COMMAND} --apply --digest {}\n",
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
