//! `pr diagnose`: why a pull request is not landing, and what to do (GIT_GITHUB.md B4).
//!
//! Read-only and bounded: one PR read, then check runs, legacy statuses, workflow runs with the
//! jobs and annotations of failed ones, reviews, rulesets and branch protection, each a single
//! page within `--max-api-calls`. What could not be read is never read as "nothing there":
//! unreadable branch protection is `requirements.source: unreadable`, and a failed read of
//! checks or reviews makes the verdict `access_problem`. Absent checks are never green.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    Access, Notice, access_failure, announce, as_problem, call_failure, connect, link_of, unlinked,
};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Mcp, Outcome};
use crate::github::{AccessProblem, CallError, Client, RateKind, encode};
use crate::journal::evidence::{Evidence, EvidenceItem};
use crate::objects::tasks;

/// Parts of the diagnosis (`--include`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Include {
    Pr,
    Checks,
    Statuses,
    Workflows,
    Jobs,
    Annotations,
    Reviews,
    Requirements,
}

/// Diagnose a pull request: state, mergeability, required checks against check runs and
/// statuses, failing workflow runs with their jobs and annotations (file:line), reviews and the
/// branch's rules; ends in a verdict with blockers and next actions. Read-only; at most
/// --max-api-calls requests. Give exactly one of --task, --pr, --branch, --sha.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The task whose delivery (recorded PR, else its branch) to diagnose.
    #[arg(long, value_name = "REF")]
    #[serde(default)]
    task: Option<String>,
    /// The pull request number.
    #[arg(long, value_name = "N")]
    #[serde(default)]
    pr: Option<u64>,
    /// The PR whose head is this branch (an open one first, else the newest).
    #[arg(long, value_name = "NAME")]
    #[serde(default)]
    branch: Option<String>,
    /// The PR that contains this commit (an open one first).
    #[arg(long, value_name = "SHA")]
    #[serde(default)]
    sha: Option<String>,
    /// The repository (default: the linked one).
    #[arg(long, value_name = "OWNER/NAME")]
    #[serde(default)]
    repo: Option<String>,
    /// Parts to read, comma-separated [default: all].
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LIST")]
    #[serde(default)]
    include: Vec<Include>,
    /// At most this many annotations in total.
    #[arg(long = "annotation-limit", value_name = "N", default_value_t = 50)]
    #[serde(default = "default_annotations")]
    annotation_limit: u32,
    /// At most this many GitHub API calls.
    #[arg(long = "max-api-calls", value_name = "N", default_value_t = 60)]
    #[serde(default = "default_calls")]
    max_api_calls: u32,
    /// Also write the diagnosis as evidence (needs rw).
    #[arg(long)]
    #[serde(default)]
    record: bool,
}

fn default_annotations() -> u32 {
    50
}

fn default_calls() -> u32 {
    60
}

impl Classify for Request {
    fn class(&self, declared: Class) -> Class {
        if self.record { Class::Apply } else { declared }
    }

    fn display_path(&self, path: &str) -> String {
        if self.record {
            format!("{path} --record")
        } else {
            path.to_string()
        }
    }
}

pub(super) fn command() -> Command {
    Command::new("pr.diagnose", Class::Read, run, render).mcp(Mcp::Tier1("diagnose_pr"))
}

#[derive(Debug, Clone, Serialize)]
pub struct Response {
    repo: String,
    access: Access,
    pr: Pr,
    requirements: Option<Requirements>,
    checks: Vec<Check>,
    missing_required: Vec<String>,
    workflows: Vec<Workflow>,
    annotations: Vec<Annotation>,
    reviews: Vec<Review>,
    verdict: Verdict,
    evidence: Vec<String>,
    notices: Vec<Notice>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct Pr {
    pub number: u64,
    pub url: String,
    /// `open`, `closed` or `merged`.
    pub state: String,
    pub draft: bool,
    pub head_sha: String,
    pub head_ref: String,
    pub head_is_fork: bool,
    pub base_ref: String,
    pub base_sha: String,
    pub mergeable: Option<bool>,
    /// `clean`, `behind`, `blocked`, `dirty`, `draft`, `has_hooks`, `unknown`, `unstable`.
    pub merge_state: String,
    /// `approved`, `changes_requested`, `review_required`, `none`.
    pub review_decision: String,
    pub auto_merge: Option<AutoMerge>,
    pub merge_commit_sha: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct AutoMerge {
    pub method: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct Requirements {
    /// `rulesets`, `branch_protection`, `both`, `none` or `unreadable`.
    pub source: String,
    pub required_checks: Vec<String>,
    pub strict_up_to_date: bool,
    pub required_approvals: u64,
    pub code_owner_review: bool,
    pub last_push_approval: bool,
    pub conversation_resolution: bool,
    pub merge_queue: bool,
    pub unreadable_reason: Option<String>,
    /// Why the rulesets could not be read. They need only `metadata:read`, so this is a real
    /// access problem: a landing gate that depends on them is `unknown`, never `pass`.
    #[serde(skip)]
    pub rulesets_problem: Option<AccessProblem>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct Check {
    /// `check_run` or `status_context`.
    pub kind: &'static str,
    pub name: String,
    pub app: Option<String>,
    pub workflow: Option<WorkflowRef>,
    pub status: String,
    pub conclusion: Option<String>,
    /// `pass`, `fail`, `pending`, `skipped`, `neutral`, `needs_human`, `infra`, `stale`.
    pub class: &'static str,
    pub required: bool,
    pub on_head: bool,
    pub details_url: Option<String>,
    pub annotations_count: Option<u64>,
    #[serde(skip)]
    pub id: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct WorkflowRef {
    pub name: String,
    pub run_id: u64,
    pub attempt: u64,
    pub event: String,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct Workflow {
    pub run_id: u64,
    pub name: String,
    pub path: String,
    pub event: String,
    pub status: String,
    pub conclusion: Option<String>,
    pub attempt: u64,
    pub failed_jobs: Vec<FailedJob>,
    pub needs_approval: bool,
    pub startup_failure: bool,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct FailedJob {
    pub name: String,
    pub step: Option<String>,
    pub conclusion: String,
    #[serde(skip)]
    pub id: u64,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct Annotation {
    pub check: String,
    pub path: String,
    pub start_line: u64,
    pub end_line: u64,
    /// `notice`, `warning` or `failure`.
    pub level: String,
    pub title: Option<String>,
    /// At most 500 characters.
    pub message: String,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct Review {
    pub login: String,
    /// `approved`, `changes_requested`, `commented`, `dismissed`, `pending`.
    pub state: String,
    pub commit_id: String,
    pub stale: bool,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct Verdict {
    pub class: &'static str,
    pub reasons: Vec<String>,
    pub next_actions: Vec<NextAction>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct NextAction {
    pub action: &'static str,
    pub detail: String,
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let targets = [
        req.task.is_some(),
        req.pr.is_some(),
        req.branch.is_some(),
        req.sha.is_some(),
    ];
    if targets.iter().filter(|t| **t).count() != 1 {
        return Err(Error::usage(
            "give exactly one of `--task`, `--pr`, `--branch`, `--sha`",
        ));
    }
    if let Some(sha) = &req.sha
        && !is_sha(sha)
    {
        return Err(Error::usage(format!(
            "`--sha {sha}` is not a 40-hex commit SHA"
        )));
    }
    let link = link_of(ctx)?;
    let repo = match req.repo.clone().or(link.repo.clone()) {
        Some(r) if crate::github::is_repo_name(&r) => r,
        Some(r) => {
            return Err(Error::usage(format!(
                "`{r}` is not a repository name (`owner/name`)"
            )));
        }
        None => return Ok(Outcome::Refused(unlinked("pr diagnose"))),
    };
    let branch_of_task = match &req.task {
        Some(reference) => Some(task_target(ctx, reference)?),
        None => None,
    };
    let (client, source) = connect(ctx, &link.api_url, req.max_api_calls.max(1))?;
    let client = match client {
        Ok(c) => c,
        Err(problem) => return access_failure(&problem, &format!("diagnosing a PR of {repo}")),
    };
    let number = match find_pr(&client, &repo, &req, branch_of_task.as_ref()) {
        Ok(Some(n)) => n,
        Ok(None) => {
            return Err(Error::not_found(format!(
                "no pull request of {repo} matches {}",
                describe_target(&req)
            ))
            .hint("open one, or pass `--pr N`"));
        }
        Err(e) => return call_failure(&e, &format!("finding the pull request in {repo}")),
    };
    let pr_json = match client.get(&format!("/repos/{repo}/pulls/{number}")) {
        Ok(v) => v,
        Err(e) => return call_failure(&e, &format!("reading pull request #{number} of {repo}")),
    };
    let include: BTreeSet<&'static str> = if req.include.is_empty() {
        ALL.iter().copied().collect()
    } else {
        req.include.iter().map(|i| include_name(*i)).collect()
    };
    let mut d = observe(&client, &repo, &pr_json, &include, req.annotation_limit);
    let verdict = verdict(&d);
    let access = Access::of(Some(&client), source, d.problem.clone());
    let mut notices = std::mem::take(&mut d.notices);
    if !client.sso_partial().is_empty() {
        notices.push(Notice::new(
            "sso_partial",
            "GitHub left out results of organizations that require SAML SSO for this token",
        ));
    }
    announce(ctx, &notices);
    let mut resp = Response {
        repo,
        access,
        pr: d.pr,
        requirements: d.requirements,
        checks: d.checks,
        missing_required: d.missing_required,
        workflows: d.workflows,
        annotations: d.annotations,
        reviews: d.reviews,
        verdict,
        evidence: Vec::new(),
        notices,
    };
    if req.record {
        resp.evidence.push(record(ctx, &resp)?);
    }
    Ok(Outcome::Done(resp))
}

const ALL: [&str; 8] = [
    "pr",
    "checks",
    "statuses",
    "workflows",
    "jobs",
    "annotations",
    "reviews",
    "requirements",
];

fn include_name(i: Include) -> &'static str {
    match i {
        Include::Pr => "pr",
        Include::Checks => "checks",
        Include::Statuses => "statuses",
        Include::Workflows => "workflows",
        Include::Jobs => "jobs",
        Include::Annotations => "annotations",
        Include::Reviews => "reviews",
        Include::Requirements => "requirements",
    }
}

fn is_sha(s: &str) -> bool {
    s.len() == 40
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn describe_target(req: &Request) -> String {
    if let Some(b) = &req.branch {
        format!("head branch `{b}`")
    } else if let Some(s) = &req.sha {
        format!("commit {s}")
    } else if let Some(t) = &req.task {
        format!("task `{t}`")
    } else {
        "the target".into()
    }
}

/// What a task says about its PR: the recorded number, else its branch.
enum TaskTarget {
    Pr(u64),
    Branch(String),
}

fn task_target(ctx: &Ctx, reference: &str) -> Result<TaskTarget, Error> {
    let ws = ctx.ws()?;
    let listing = tasks::list_all(ws)?;
    ctx.warn_all(listing.warnings);
    let t = tasks::resolve(&listing.items, reference)?;
    let delivery = t.doc.front.get("delivery");
    if let Some(n) = delivery
        .and_then(|d| d.get("pr"))
        .and_then(|p| p.as_integer())
        .filter(|n| *n > 0)
    {
        return Ok(TaskTarget::Pr(n as u64));
    }
    if let Some(b) = delivery
        .and_then(|d| d.get("branch"))
        .and_then(|b| b.as_str())
    {
        return Ok(TaskTarget::Branch(b.to_string()));
    }
    // The branch a task worktree gets: `dacli/<NNN>-<slug>`, whatever the file is named.
    Ok(TaskTarget::Branch(format!(
        "dacli/{:03}-{}",
        t.task.number, t.task.slug
    )))
}

/// The PR number the target names, `None` when no PR matches.
fn find_pr(
    client: &Client,
    repo: &str,
    req: &Request,
    task: Option<&TaskTarget>,
) -> Result<Option<u64>, CallError> {
    if let Some(n) = req.pr {
        return Ok(Some(n));
    }
    let branch = match task {
        Some(TaskTarget::Pr(n)) => return Ok(Some(*n)),
        Some(TaskTarget::Branch(b)) => Some(b.clone()),
        None => req.branch.clone(),
    };
    let list = if let Some(b) = branch {
        let owner = repo.split('/').next().unwrap_or_default();
        client.get(&format!(
            "/repos/{repo}/pulls?head={}&state=all&per_page=100",
            encode(&format!("{owner}:{b}"))
        ))?
    } else {
        let sha = req.sha.as_deref().unwrap_or_default();
        client.get(&format!("/repos/{repo}/commits/{sha}/pulls?per_page=100"))?
    };
    let prs = list.as_array().cloned().unwrap_or_default();
    let open = prs
        .iter()
        .filter(|p| str_at(p, &["state"]) == Some("open"))
        .filter_map(|p| u64_at(p, &["number"]))
        .max();
    Ok(open.or_else(|| prs.iter().filter_map(|p| u64_at(p, &["number"])).max()))
}

/// Everything observed about one PR.
#[derive(Debug, Clone)]
pub(super) struct Diagnosis {
    pub pr: Pr,
    pub requirements: Option<Requirements>,
    pub checks: Vec<Check>,
    pub missing_required: Vec<String>,
    pub workflows: Vec<Workflow>,
    pub annotations: Vec<Annotation>,
    pub reviews: Vec<Review>,
    /// Whether workflows exist at all (`None`: not asked or unreadable).
    pub workflows_exist: Option<bool>,
    /// Whether checks and reviews were read (unread parts are unknown, never empty).
    pub checks_read: bool,
    pub reviews_read: bool,
    /// The first access problem of a part that matters for the verdict.
    pub problem: Option<AccessProblem>,
    pub notices: Vec<Notice>,
}

pub(super) fn str_at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str()
}

pub(super) fn u64_at(v: &Value, path: &[&str]) -> Option<u64> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_u64()
}

fn bool_at(v: &Value, path: &[&str]) -> Option<bool> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_bool()
}

/// The PR object of a REST `pulls/{n}` answer.
pub(super) fn parse_pr(v: &Value) -> Pr {
    let merged = bool_at(v, &["merged"]).unwrap_or(false) || str_at(v, &["merged_at"]).is_some();
    let state = if merged {
        "merged"
    } else if str_at(v, &["state"]) == Some("closed") {
        "closed"
    } else {
        "open"
    };
    let head_repo = str_at(v, &["head", "repo", "full_name"]);
    let base_repo = str_at(v, &["base", "repo", "full_name"]);
    const MERGE_STATES: [&str; 7] = [
        "clean",
        "behind",
        "blocked",
        "dirty",
        "draft",
        "has_hooks",
        "unstable",
    ];
    let merge_state = str_at(v, &["mergeable_state"])
        .filter(|s| MERGE_STATES.contains(s))
        .unwrap_or("unknown");
    Pr {
        number: u64_at(v, &["number"]).unwrap_or(0),
        url: str_at(v, &["html_url"]).unwrap_or_default().to_string(),
        state: state.into(),
        draft: bool_at(v, &["draft"]).unwrap_or(false),
        head_sha: str_at(v, &["head", "sha"]).unwrap_or_default().to_string(),
        head_ref: str_at(v, &["head", "ref"]).unwrap_or_default().to_string(),
        head_is_fork: head_repo.is_some() && head_repo != base_repo,
        base_ref: str_at(v, &["base", "ref"]).unwrap_or_default().to_string(),
        base_sha: str_at(v, &["base", "sha"]).unwrap_or_default().to_string(),
        mergeable: bool_at(v, &["mergeable"]),
        merge_state: merge_state.into(),
        review_decision: "none".into(),
        auto_merge: v
            .get("auto_merge")
            .filter(|a| !a.is_null())
            .map(|a| AutoMerge {
                method: str_at(a, &["merge_method"]).unwrap_or("merge").to_string(),
            }),
        merge_commit_sha: if merged {
            str_at(v, &["merge_commit_sha"]).map(str::to_string)
        } else {
            None
        },
    }
}

/// Reads every included part of the diagnosis of `pr_json`. Failures are recorded, never
/// raised: the verdict decides what an unknown part means.
pub(super) fn observe(
    client: &Client,
    repo: &str,
    pr_json: &Value,
    include: &BTreeSet<&str>,
    annotation_limit: u32,
) -> Diagnosis {
    let pr = parse_pr(pr_json);
    let mut d = Diagnosis {
        pr,
        requirements: None,
        checks: Vec::new(),
        missing_required: Vec::new(),
        workflows: Vec::new(),
        annotations: Vec::new(),
        reviews: Vec::new(),
        workflows_exist: None,
        checks_read: false,
        reviews_read: false,
        problem: None,
        notices: Vec::new(),
    };
    let head = d.pr.head_sha.clone();
    let base = d.pr.base_ref.clone();
    if include.contains("requirements") {
        d.requirements = Some(requirements(client, repo, &base, &mut d.notices));
    }
    let required: Vec<String> = d
        .requirements
        .as_ref()
        .map(|r| r.required_checks.clone())
        .unwrap_or_default();
    let mut problem: Option<AccessProblem> = None;
    let note = |e: &CallError, problem: &mut Option<AccessProblem>| {
        if problem.is_none() {
            *problem = Some(as_problem(e));
        }
    };
    // Workflow runs first: check runs name their suite, and runs name the workflow.
    let mut runs: Vec<Value> = Vec::new();
    if include.contains("workflows") || include.contains("jobs") {
        match client.get(&format!(
            "/repos/{repo}/actions/runs?head_sha={head}&per_page=100"
        )) {
            Ok(v) => {
                runs = v
                    .get("workflow_runs")
                    .and_then(|r| r.as_array())
                    .cloned()
                    .unwrap_or_default()
            }
            Err(e) => note(&e, &mut problem),
        }
    }
    let mut checks_ok = true;
    if include.contains("checks") {
        match client.get(&format!(
            "/repos/{repo}/commits/{head}/check-runs?filter=latest&per_page=100"
        )) {
            Ok(v) => {
                for cr in v
                    .get("check_runs")
                    .and_then(|c| c.as_array())
                    .into_iter()
                    .flatten()
                {
                    d.checks.push(check_run(cr, &runs, &required));
                }
            }
            Err(e) => {
                checks_ok = false;
                note(&e, &mut problem);
            }
        }
    }
    if include.contains("statuses") {
        match client.get(&format!("/repos/{repo}/commits/{head}/status?per_page=100")) {
            Ok(v) => {
                for s in v
                    .get("statuses")
                    .and_then(|c| c.as_array())
                    .into_iter()
                    .flatten()
                {
                    d.checks.push(status_context(s, &required));
                }
            }
            Err(e) => {
                checks_ok = false;
                note(&e, &mut problem);
            }
        }
    }
    d.checks_read = checks_ok && include.contains("checks");
    d.checks
        .sort_by(|a, b| (a.name.as_str(), a.kind).cmp(&(b.name.as_str(), b.kind)));
    let present: BTreeSet<&str> = d.checks.iter().map(|c| c.name.as_str()).collect();
    d.missing_required = required
        .iter()
        .filter(|r| !present.contains(r.as_str()))
        .cloned()
        .collect();
    for run in &runs {
        let mut w = workflow(run);
        let failed = matches!(
            w.conclusion.as_deref(),
            Some("failure" | "timed_out" | "cancelled")
        );
        if failed && include.contains("jobs") {
            match client.get(&format!(
                "/repos/{repo}/actions/runs/{}/jobs?per_page=100",
                w.run_id
            )) {
                Ok(v) => w.failed_jobs = failed_jobs(&v),
                Err(e) => note(&e, &mut problem),
            }
        }
        d.workflows.push(w);
    }
    if include.contains("annotations") {
        let mut left = annotation_limit as usize;
        let failing: Vec<(u64, String)> = d
            .checks
            .iter()
            .filter(|c| c.class == "fail" && c.annotations_count != Some(0))
            .filter_map(|c| Some((c.id?, c.name.clone())))
            .collect();
        for (id, name) in failing {
            if left == 0 {
                d.notices.push(Notice::new(
                    "annotations_truncated",
                    format!(
                        "more annotations exist than --annotation-limit {annotation_limit} allows"
                    ),
                ));
                break;
            }
            match client.get(&format!(
                "/repos/{repo}/check-runs/{id}/annotations?per_page=100"
            )) {
                Ok(v) => {
                    for a in v.as_array().into_iter().flatten().take(left) {
                        d.annotations.push(annotation(a, &name));
                        left -= 1;
                    }
                }
                Err(CallError::Budget { .. }) => {
                    d.notices.push(Notice::new(
                        "budget_spent",
                        "--max-api-calls was reached before every annotation was read",
                    ));
                    break;
                }
                Err(e) => note(&e, &mut problem),
            }
        }
    }
    if d.checks_read && d.checks.is_empty() && runs.is_empty() {
        match client.get(&format!("/repos/{repo}/actions/workflows?per_page=1")) {
            Ok(v) => d.workflows_exist = Some(u64_at(&v, &["total_count"]).unwrap_or(0) > 0),
            Err(e) => note(&e, &mut problem),
        }
    }
    if include.contains("reviews") {
        match client.get(&format!(
            "/repos/{repo}/pulls/{}/reviews?per_page=100",
            d.pr.number
        )) {
            Ok(v) => {
                d.reviews = v
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|r| review(r, &head))
                    .collect();
                d.reviews_read = true;
            }
            Err(e) => note(&e, &mut problem),
        }
    }
    let required_approvals = d.requirements.as_ref().map_or(0, |r| r.required_approvals);
    d.pr.review_decision = review_decision(&d.reviews, required_approvals).into();
    d.problem = problem;
    d
}

/// Rulesets (readable with `metadata:read`) and classic branch protection (usually admin
/// only). Unreadable protection is reported as such, never as "no protection".
fn requirements(
    client: &Client,
    repo: &str,
    base: &str,
    notices: &mut Vec<Notice>,
) -> Requirements {
    let mut r = Requirements::default();
    let mut from_rules = false;
    let mut from_protection = false;
    let mut unreadable: Vec<String> = Vec::new();
    let mut checks: BTreeSet<String> = BTreeSet::new();
    match client.get(&format!("/repos/{repo}/rules/branches/{base}?per_page=100")) {
        Ok(v) => {
            for rule in v.as_array().into_iter().flatten() {
                let params = rule.get("parameters").cloned().unwrap_or(Value::Null);
                match str_at(rule, &["type"]) {
                    Some("required_status_checks") => {
                        from_rules = true;
                        r.strict_up_to_date |=
                            bool_at(&params, &["strict_required_status_checks_policy"])
                                .unwrap_or(false);
                        for c in params
                            .get("required_status_checks")
                            .and_then(|c| c.as_array())
                            .into_iter()
                            .flatten()
                        {
                            if let Some(name) = str_at(c, &["context"]) {
                                checks.insert(name.to_string());
                            }
                        }
                    }
                    Some("pull_request") => {
                        from_rules = true;
                        r.required_approvals = r.required_approvals.max(
                            u64_at(&params, &["required_approving_review_count"]).unwrap_or(0),
                        );
                        r.code_owner_review |=
                            bool_at(&params, &["require_code_owner_review"]).unwrap_or(false);
                        r.last_push_approval |=
                            bool_at(&params, &["require_last_push_approval"]).unwrap_or(false);
                        r.conversation_resolution |=
                            bool_at(&params, &["required_review_thread_resolution"])
                                .unwrap_or(false);
                    }
                    Some("merge_queue") => {
                        from_rules = true;
                        r.merge_queue = true;
                    }
                    Some(_) => from_rules = true,
                    None => {}
                }
            }
        }
        Err(e) => {
            let p = as_problem(&e);
            unreadable.push(format!("rulesets: {}", p.kind()));
            r.rulesets_problem = Some(p);
        }
    }
    match client.get(&format!("/repos/{repo}/branches/{base}/protection")) {
        Ok(p) => {
            from_protection = true;
            if let Some(rsc) = p.get("required_status_checks").filter(|v| !v.is_null()) {
                r.strict_up_to_date |= bool_at(rsc, &["strict"]).unwrap_or(false);
                for c in rsc
                    .get("contexts")
                    .and_then(|c| c.as_array())
                    .into_iter()
                    .flatten()
                {
                    if let Some(name) = c.as_str() {
                        checks.insert(name.to_string());
                    }
                }
                for c in rsc
                    .get("checks")
                    .and_then(|c| c.as_array())
                    .into_iter()
                    .flatten()
                {
                    if let Some(name) = str_at(c, &["context"]) {
                        checks.insert(name.to_string());
                    }
                }
            }
            if let Some(prr) = p
                .get("required_pull_request_reviews")
                .filter(|v| !v.is_null())
            {
                r.required_approvals = r
                    .required_approvals
                    .max(u64_at(prr, &["required_approving_review_count"]).unwrap_or(0));
                r.code_owner_review |=
                    bool_at(prr, &["require_code_owner_reviews"]).unwrap_or(false);
                r.last_push_approval |=
                    bool_at(prr, &["require_last_push_approval"]).unwrap_or(false);
            }
            r.conversation_resolution |=
                bool_at(&p, &["required_conversation_resolution", "enabled"]).unwrap_or(false);
        }
        Err(e) => {
            let p = as_problem(&e);
            unreadable.push(format!(
                "branch protection of `{base}`: {} (it may be unprotected, or this token may lack administration:read)",
                p.kind()
            ));
        }
    }
    r.required_checks = checks.into_iter().collect();
    r.source = match (unreadable.is_empty(), from_rules, from_protection) {
        (false, _, _) => "unreadable",
        (true, true, true) => "both",
        (true, true, false) => "rulesets",
        (true, false, true) => "branch_protection",
        (true, false, false) => "none",
    }
    .into();
    if !unreadable.is_empty() {
        let reason = unreadable.join("; ");
        notices.push(Notice::new("requirements_unreadable", reason.clone()));
        r.unreadable_reason = Some(reason);
    }
    r
}

/// GIT_GITHUB.md B4's class of a check-run status and conclusion.
pub(super) fn class_of_run(status: &str, conclusion: Option<&str>) -> &'static str {
    if status != "completed" {
        return "pending";
    }
    match conclusion {
        Some("success") => "pass",
        Some("failure" | "timed_out" | "cancelled") => "fail",
        Some("skipped") => "skipped",
        Some("neutral") => "neutral",
        Some("action_required") => "needs_human",
        Some("stale") => "stale",
        Some("startup_failure") => "infra",
        // An unknown conclusion is never read as a pass.
        _ => "pending",
    }
}

/// The class of a legacy commit status.
pub(super) fn class_of_status(state: &str) -> &'static str {
    match state {
        "success" => "pass",
        "failure" => "fail",
        "error" => "infra",
        _ => "pending",
    }
}

fn check_run(cr: &Value, runs: &[Value], required: &[String]) -> Check {
    let name = str_at(cr, &["name"]).unwrap_or_default().to_string();
    let status = str_at(cr, &["status"]).unwrap_or("queued").to_string();
    let conclusion = str_at(cr, &["conclusion"]).map(str::to_string);
    let suite = u64_at(cr, &["check_suite", "id"]);
    let workflow = suite.and_then(|s| {
        runs.iter()
            .find(|r| u64_at(r, &["check_suite_id"]) == Some(s))
            .map(|r| WorkflowRef {
                name: str_at(r, &["name"]).unwrap_or_default().to_string(),
                run_id: u64_at(r, &["id"]).unwrap_or(0),
                attempt: u64_at(r, &["run_attempt"]).unwrap_or(1),
                event: str_at(r, &["event"]).unwrap_or_default().to_string(),
            })
    });
    Check {
        kind: "check_run",
        class: class_of_run(&status, conclusion.as_deref()),
        required: required.contains(&name),
        name,
        app: str_at(cr, &["app", "slug"]).map(str::to_string),
        workflow,
        status,
        conclusion,
        on_head: true,
        details_url: str_at(cr, &["details_url"]).map(str::to_string),
        annotations_count: u64_at(cr, &["output", "annotations_count"]),
        id: u64_at(cr, &["id"]),
    }
}

fn status_context(s: &Value, required: &[String]) -> Check {
    let name = str_at(s, &["context"]).unwrap_or_default().to_string();
    let state = str_at(s, &["state"]).unwrap_or("pending").to_string();
    Check {
        kind: "status_context",
        class: class_of_status(&state),
        required: required.contains(&name),
        name,
        app: None,
        workflow: None,
        status: if state == "pending" {
            "pending"
        } else {
            "completed"
        }
        .into(),
        conclusion: Some(state),
        on_head: true,
        details_url: str_at(s, &["target_url"]).map(str::to_string),
        annotations_count: None,
        id: None,
    }
}

fn workflow(run: &Value) -> Workflow {
    let conclusion = str_at(run, &["conclusion"]).map(str::to_string);
    let status = str_at(run, &["status"]).unwrap_or("queued").to_string();
    Workflow {
        run_id: u64_at(run, &["id"]).unwrap_or(0),
        name: str_at(run, &["name"]).unwrap_or_default().to_string(),
        path: str_at(run, &["path"]).unwrap_or_default().to_string(),
        event: str_at(run, &["event"]).unwrap_or_default().to_string(),
        needs_approval: conclusion.as_deref() == Some("action_required")
            || status == "action_required"
            || status == "waiting",
        startup_failure: conclusion.as_deref() == Some("startup_failure"),
        status,
        conclusion,
        attempt: u64_at(run, &["run_attempt"]).unwrap_or(1),
        failed_jobs: Vec::new(),
    }
}

fn failed_jobs(v: &Value) -> Vec<FailedJob> {
    v.get("jobs")
        .and_then(|j| j.as_array())
        .into_iter()
        .flatten()
        .filter(|j| {
            matches!(
                str_at(j, &["conclusion"]),
                Some("failure" | "timed_out" | "cancelled")
            )
        })
        .map(|j| FailedJob {
            name: str_at(j, &["name"]).unwrap_or_default().to_string(),
            step: j
                .get("steps")
                .and_then(|s| s.as_array())
                .into_iter()
                .flatten()
                .find(|s| {
                    matches!(
                        str_at(s, &["conclusion"]),
                        Some("failure" | "timed_out" | "cancelled")
                    )
                })
                .and_then(|s| str_at(s, &["name"]))
                .map(str::to_string),
            conclusion: str_at(j, &["conclusion"]).unwrap_or_default().to_string(),
            id: u64_at(j, &["id"]).unwrap_or(0),
        })
        .collect()
}

fn annotation(a: &Value, check: &str) -> Annotation {
    let message: String = str_at(a, &["message"])
        .unwrap_or_default()
        .chars()
        .take(500)
        .collect();
    Annotation {
        check: check.to_string(),
        path: str_at(a, &["path"]).unwrap_or_default().to_string(),
        start_line: u64_at(a, &["start_line"]).unwrap_or(0),
        end_line: u64_at(a, &["end_line"]).unwrap_or(0),
        level: match str_at(a, &["annotation_level"]) {
            Some(l @ ("notice" | "warning" | "failure")) => l.to_string(),
            _ => "notice".into(),
        },
        title: str_at(a, &["title"])
            .filter(|t| !t.is_empty())
            .map(str::to_string),
        message,
    }
}

fn review(r: &Value, head: &str) -> Review {
    let commit_id = str_at(r, &["commit_id"]).unwrap_or_default().to_string();
    Review {
        login: str_at(r, &["user", "login"]).unwrap_or("ghost").to_string(),
        state: match str_at(r, &["state"]) {
            Some("APPROVED") => "approved",
            Some("CHANGES_REQUESTED") => "changes_requested",
            Some("DISMISSED") => "dismissed",
            Some("PENDING") => "pending",
            _ => "commented",
        }
        .into(),
        stale: commit_id != head,
        commit_id,
    }
}

/// The latest deciding review per person (comments do not decide).
fn latest_by_login(reviews: &[Review]) -> BTreeMap<&str, &Review> {
    let mut by: BTreeMap<&str, &Review> = BTreeMap::new();
    for r in reviews {
        if matches!(
            r.state.as_str(),
            "approved" | "changes_requested" | "dismissed"
        ) {
            by.insert(r.login.as_str(), r);
        }
    }
    by
}

/// `approved`, `changes_requested`, `review_required` or `none`, as GitHub decides it.
pub(super) fn review_decision(reviews: &[Review], required: u64) -> &'static str {
    let latest = latest_by_login(reviews);
    if latest.values().any(|r| r.state == "changes_requested") {
        return "changes_requested";
    }
    let approvals = latest.values().filter(|r| r.state == "approved").count() as u64;
    if approvals > 0 && approvals >= required {
        "approved"
    } else if required > 0 {
        "review_required"
    } else {
        "none"
    }
}

/// Approvals by distinct people whose review is of `sha` (not stale).
pub(super) fn fresh_approvals(reviews: &[Review], sha: &str) -> u64 {
    latest_by_login(reviews)
        .values()
        .filter(|r| r.state == "approved" && r.commit_id == sha)
        .count() as u64
}

/// The verdict: every blocker as a reason with its next action; the class is the first
/// blocker in the order a person would fix them.
pub(super) fn verdict(d: &Diagnosis) -> Verdict {
    let mut b = Blockers::default();
    let pr = &d.pr;
    if let Some(p) = &d.problem {
        b.add("access_problem", p.describe(), access_action(p));
    }
    if pr.state == "merged" {
        b.add(
            "merged",
            format!(
                "#{} is merged{}",
                pr.number,
                pr.merge_commit_sha
                    .as_deref()
                    .map(|s| format!(" as {}", short(s)))
                    .unwrap_or_default()
            ),
            None,
        );
        return b.finish();
    }
    if pr.state == "closed" {
        b.add(
            "closed",
            format!("#{} is closed without merging", pr.number),
            None,
        );
        return b.finish();
    }
    if pr.draft {
        b.add(
            "draft",
            format!("#{} is a draft", pr.number),
            Some((
                "mark_ready",
                "mark it ready for review (`gh pr ready`)".to_string(),
            )),
        );
    }
    if pr.merge_state == "dirty" || pr.mergeable == Some(false) {
        b.add(
            "conflict",
            format!("`{}` conflicts with `{}`", pr.head_ref, pr.base_ref),
            Some((
                "resolve_conflict",
                format!(
                    "merge or rebase `{}` onto `{}`, resolve the conflicts and push",
                    pr.head_ref, pr.base_ref
                ),
            )),
        );
    }
    let unreadable = d
        .requirements
        .as_ref()
        .is_none_or(|r| r.source == "unreadable");
    // With unknown requirements every check counts: nothing proves a failing one optional.
    let counts = |c: &Check| c.required || unreadable;
    for c in d
        .checks
        .iter()
        .filter(|c| matches!(c.class, "fail" | "infra"))
    {
        let job = d
            .workflows
            .iter()
            .find(|w| c.workflow.as_ref().is_some_and(|r| r.run_id == w.run_id))
            .and_then(|w| {
                w.failed_jobs
                    .iter()
                    .find(|j| Some(j.id) == c.id || j.name == c.name)
                    .map(|j| (w, j))
            });
        let label = if c.required {
            "required check"
        } else if unreadable {
            "check"
        } else {
            "optional check"
        };
        let mut reason = format!(
            "{label} `{}` {}",
            c.name,
            if c.class == "infra" {
                "could not run"
            } else {
                "failed"
            },
        );
        if let Some((w, j)) = job {
            reason.push_str(&format!(
                " in workflow `{}` (run {}, attempt {}), job `{}`{}",
                w.name,
                w.run_id,
                w.attempt,
                j.name,
                j.step
                    .as_deref()
                    .map(|s| format!(", step `{s}`"))
                    .unwrap_or_default()
            ));
        }
        let places: Vec<String> = d
            .annotations
            .iter()
            .filter(|a| a.check == c.name && a.level == "failure")
            .map(|a| format!("{}:{}: {}", a.path, a.start_line, first_line(&a.message)))
            .collect();
        if !places.is_empty() {
            reason.push_str(&format!(" at {}", places.join("; ")));
        }
        if !counts(c) {
            b.note(reason);
            continue;
        }
        let run = c.workflow.as_ref().map(|w| w.run_id);
        let detail = match (places.first(), run) {
            (Some(p), Some(id)) => format!(
                "fix {} and push a new head; if it was flaky, rerun the failed jobs of run {id} (`gh run rerun {id} --failed`)",
                p.split(": ").next().unwrap_or(p)
            ),
            (None, Some(id)) => format!(
                "read the log of run {id}, fix the cause and push, or rerun its failed jobs (`gh run rerun {id} --failed`)"
            ),
            _ => format!("fix what `{}` reports and push a new head", c.name),
        };
        b.add(
            "failing_checks",
            reason,
            Some(("rerun_failed_jobs", detail)),
        );
    }
    for w in d.workflows.iter().filter(|w| w.startup_failure) {
        b.add(
            "failing_checks",
            format!("workflow `{}` (run {}) failed at startup: GitHub exposes no reason; check `{}` at the head", w.name, w.run_id, w.path),
            Some(("push_new_head", format!("fix `{}` and push a new head", w.path))),
        );
    }
    let approval_runs: Vec<&Workflow> = d.workflows.iter().filter(|w| w.needs_approval).collect();
    for w in &approval_runs {
        b.add(
            "needs_workflow_approval",
            format!(
                "workflow run {} (`{}`) waits for a maintainer's approval",
                w.run_id, w.name
            ),
            Some((
                "approve_workflow_run",
                format!(
                    "a maintainer approves run {} in the Actions tab (dacli never approves runs)",
                    w.run_id
                ),
            )),
        );
    }
    for c in d
        .checks
        .iter()
        .filter(|c| c.class == "needs_human" && counts(c))
    {
        if approval_runs.is_empty() {
            b.add(
                "needs_workflow_approval",
                format!("check `{}` needs a person's action", c.name),
                Some((
                    "approve_workflow_run",
                    format!(
                        "open {} and act on it",
                        c.details_url.as_deref().unwrap_or("the check")
                    ),
                )),
            );
        }
    }
    for m in &d.missing_required {
        b.add(
            "missing_required_checks",
            format!("required check `{m}` has not reported on the head {}", short(&pr.head_sha)),
            Some((
                "dispatch_workflow",
                format!("run the workflow that reports `{m}` on this head, or push a new head to trigger it"),
            )),
        );
    }
    let pending: Vec<&Check> = d
        .checks
        .iter()
        .filter(|c| c.class == "pending" && counts(c))
        .collect();
    if !pending.is_empty() {
        let names: Vec<String> = pending.iter().map(|c| format!("`{}`", c.name)).collect();
        b.add(
            "waiting_on_checks",
            format!("waiting for {} to finish", names.join(", ")),
            None,
        );
    }
    if d.checks_read
        && d.checks.is_empty()
        && d.workflows.is_empty()
        && d.missing_required.is_empty()
    {
        match d.workflows_exist {
            Some(true) => b.add(
                "no_checks_triggered",
                format!("workflows exist, but nothing ran on the head {}", short(&pr.head_sha)),
                Some((
                    "push_new_head",
                    "check the workflows' `on:` triggers and branch filters, then push a new head or dispatch the workflow".to_string(),
                )),
            ),
            Some(false) => b.add(
                "no_checks_configured",
                "no workflows and no required checks: nothing verifies this change".to_string(),
                None,
            ),
            None => {}
        }
    }
    if pr.merge_state == "behind" {
        b.add(
            "behind_base",
            format!(
                "`{}` is behind `{}`, and the branch rules require it to be up to date",
                pr.head_ref, pr.base_ref
            ),
            Some((
                "update_branch",
                "update the branch (`gh pr update-branch`), then let the checks run again"
                    .to_string(),
            )),
        );
    }
    let latest = latest_by_login(&d.reviews);
    for r in latest.values().filter(|r| r.state == "changes_requested") {
        b.add(
            "changes_requested",
            format!("{} requested changes", r.login),
            Some((
                "request_review",
                format!("address {}'s review and ask them to review again", r.login),
            )),
        );
    }
    let required = d.requirements.as_ref().map_or(0, |r| r.required_approvals);
    let approvals = latest.values().filter(|r| r.state == "approved").count() as u64;
    if d.reviews_read && approvals < required {
        b.add(
            "needs_review",
            format!("{approvals} of {required} required approvals"),
            Some((
                "request_review",
                "request a review from someone who may approve".to_string(),
            )),
        );
    }
    if d.requirements.as_ref().is_some_and(|r| r.merge_queue) {
        b.add(
            "merge_queue",
            format!("`{}` requires a merge queue", pr.base_ref),
            None,
        );
    }
    if b.classes.is_empty() && matches!(pr.merge_state.as_str(), "blocked" | "unknown") {
        b.add(
            "blocked_unknown",
            format!(
                "GitHub reports the merge state `{}` and nothing read here explains it",
                pr.merge_state
            ),
            None,
        );
    }
    b.finish()
}

fn access_action(p: &AccessProblem) -> Option<(&'static str, String)> {
    let action = match p {
        AccessProblem::SsoRequired { .. } => "authorize_sso",
        AccessProblem::RateLimited {
            limit: RateKind::Primary | RateKind::Secondary,
            ..
        } => "wait_rate_limit_reset",
        AccessProblem::ServerError { .. } | AccessProblem::NetworkUnreachable { .. } => {
            return None;
        }
        _ => "refresh_token_permissions",
    };
    Some((action, p.remedy()))
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

pub(super) fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

#[derive(Default)]
struct Blockers {
    classes: Vec<&'static str>,
    reasons: Vec<String>,
    next: Vec<NextAction>,
}

impl Blockers {
    fn add(&mut self, class: &'static str, reason: String, action: Option<(&'static str, String)>) {
        self.classes.push(class);
        self.reasons.push(reason);
        if let Some((action, detail)) = action {
            let n = NextAction { action, detail };
            if !self.next.contains(&n) {
                self.next.push(n);
            }
        }
    }

    /// A reason that blocks nothing (an optional check failed).
    fn note(&mut self, reason: String) {
        self.reasons.push(reason);
    }

    fn finish(self) -> Verdict {
        Verdict {
            class: self.classes.first().copied().unwrap_or("mergeable_now"),
            reasons: self.reasons,
            next_actions: self.next,
        }
    }
}

/// Writes the diagnosis as evidence: ids, SHAs and classes only.
fn record(ctx: &Ctx, r: &Response) -> Result<String, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?;
    let mut items = vec![EvidenceItem {
        subject: format!("{}#{}", r.repo, r.pr.number),
        action: "diagnose".into(),
        result: "done".into(),
        before: Some(r.pr.base_sha.clone()).filter(|s| !s.is_empty()),
        after: Some(r.pr.head_sha.clone()).filter(|s| !s.is_empty()),
        reasons: vec![r.verdict.class.to_string()],
    }];
    for c in &r.checks {
        items.push(EvidenceItem {
            subject: c.name.clone(),
            action: c.kind.into(),
            result: "done".into(),
            before: None,
            after: Some(r.pr.head_sha.clone()).filter(|s| !s.is_empty()),
            reasons: vec![
                c.class.to_string(),
                if c.required { "required" } else { "optional" }.to_string(),
            ],
        });
    }
    let count = |class: &str| r.checks.iter().filter(|c| c.class == class).count() as i64;
    let path = crate::ops::evidence::write(
        ws,
        &Evidence {
            id: ctx.new_ulid(),
            tool: "diagnose-pr",
            created_by: &me.agent.id,
            grant: me.agent.grant,
            outcome: "completed",
            txn: None,
            plan_digest: None,
            git_head: None,
            summary: vec![
                ("checks", r.checks.len() as i64),
                ("failing", count("fail") + count("infra")),
                ("pending", count("pending")),
                ("missing", r.missing_required.len() as i64),
                ("annotations", r.annotations.len() as i64),
                ("api_calls", i64::from(r.access.calls)),
            ],
            items,
        },
    )?;
    Ok(ws.display(&path))
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    let pr = &r.pr;
    let mut out = format!(
        "{} #{} {}{}  {} → {}  merge state: {}  reviews: {}\n",
        r.repo,
        pr.number,
        pr.state,
        if pr.draft { " (draft)" } else { "" },
        short(&pr.head_sha),
        pr.base_ref,
        pr.merge_state,
        pr.review_decision,
    );
    for c in &r.checks {
        out.push_str(&format!(
            "  {:<8}  {}{}\n",
            c.class,
            c.name,
            if c.required { "  (required)" } else { "" }
        ));
    }
    for m in &r.missing_required {
        out.push_str(&format!("  {:<8}  {m}  (required)\n", "missing"));
    }
    for a in &r.annotations {
        out.push_str(&format!(
            "  {}:{}  {}  {}\n",
            a.path,
            a.start_line,
            a.level,
            first_line(&a.message)
        ));
    }
    out.push_str(&format!("verdict: {}\n", r.verdict.class));
    for reason in &r.verdict.reasons {
        out.push_str(&format!("  - {reason}\n"));
    }
    for n in &r.verdict.next_actions {
        out.push_str(&format!("next: {}: {}\n", n.action, n.detail));
    }
    for e in &r.evidence {
        out.push_str(&format!("evidence: {e}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn diagnosis(pr: Value) -> Diagnosis {
        Diagnosis {
            pr: parse_pr(&pr),
            requirements: Some(Requirements {
                source: "rulesets".into(),
                required_checks: vec!["test".into()],
                required_approvals: 1,
                ..Requirements::default()
            }),
            checks: Vec::new(),
            missing_required: Vec::new(),
            workflows: Vec::new(),
            annotations: Vec::new(),
            reviews: Vec::new(),
            workflows_exist: Some(true),
            checks_read: true,
            reviews_read: true,
            problem: None,
            notices: Vec::new(),
        }
    }

    fn pr(state: &str) -> Value {
        json!({"number": 7, "state": "open", "draft": false, "mergeable": true,
               "mergeable_state": state, "head": {"sha": "a".repeat(40), "ref": "feat"},
               "base": {"sha": "b".repeat(40), "ref": "main"}})
    }

    #[test]
    fn conclusions_map_conservatively() {
        assert_eq!(class_of_run("completed", Some("success")), "pass");
        assert_eq!(class_of_run("completed", Some("timed_out")), "fail");
        assert_eq!(class_of_run("completed", Some("startup_failure")), "infra");
        assert_eq!(
            class_of_run("completed", Some("action_required")),
            "needs_human"
        );
        assert_eq!(
            class_of_run("completed", Some("brand_new_value")),
            "pending"
        );
        assert_eq!(class_of_run("in_progress", None), "pending");
        assert_eq!(class_of_status("error"), "infra");
    }

    #[test]
    fn behind_and_dirty_stay_distinct_and_absent_checks_are_never_green() {
        let mut d = diagnosis(pr("behind"));
        d.missing_required = vec!["test".into()];
        let v = verdict(&d);
        assert_eq!(v.class, "missing_required_checks");
        assert!(v.next_actions.iter().any(|a| a.action == "update_branch"));
        let mut d = diagnosis(pr("dirty"));
        d.checks.clear();
        d.requirements
            .as_mut()
            .expect("set")
            .required_checks
            .clear();
        assert_eq!(verdict(&d).class, "conflict");
        let mut d = diagnosis(pr("clean"));
        d.requirements = Some(Requirements {
            source: "none".into(),
            ..Requirements::default()
        });
        d.workflows_exist = Some(false);
        assert_eq!(verdict(&d).class, "no_checks_configured");
        d.workflows_exist = Some(true);
        assert_eq!(verdict(&d).class, "no_checks_triggered");
    }

    #[test]
    fn reviews_decide_per_person_and_staleness_is_by_commit() {
        let head = "a".repeat(40);
        let rv = |login: &str, state: &str, sha: &str| Review {
            login: login.into(),
            state: state.into(),
            commit_id: sha.into(),
            stale: sha != head,
        };
        let reviews = vec![
            rv("ada", "changes_requested", &head),
            rv("ada", "approved", &head),
            rv("bob", "approved", &"c".repeat(40)),
        ];
        assert_eq!(review_decision(&reviews, 1), "approved");
        assert_eq!(fresh_approvals(&reviews, &head), 1);
        assert_eq!(review_decision(&reviews[..1], 1), "changes_requested");
        assert_eq!(review_decision(&[], 1), "review_required");
    }
}
