//! `pr diagnose`: why a pull request is not landing, and what to do (GIT_GITHUB.md B4).
//!
//! Read-only and bounded: one PR read, then check runs, legacy statuses, workflow runs with the
//! jobs and annotations of failed ones, reviews, rulesets and branch protection, each a single
//! page within `--max-api-calls`. What could not be read is never read as "nothing there":
//! unreadable branch protection is `requirements.source: unreadable`, and a failed read of
//! checks or reviews makes the verdict `access_problem`. Absent checks are never green.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    Access, Notice, access_failure, announce, as_problem, call_failure, connect, link_of, unlinked,
};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Mcp, Outcome};
use crate::github::types as gh;
use crate::github::{AccessProblem, CallError, Client, RateKind, decode, encode};
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
    /// Follow the checks until none is pending: look again after 10 s, then half as long
    /// again each time up to 60 s, waiting out rate limits (retry-after, the reset) and 5xx
    /// answers; stops at the run's deadline or a problem waiting cannot fix. Each look has
    /// its own --max-api-calls.
    #[arg(long)]
    #[serde(default)]
    watch: bool,
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
    /// Parts that could not be read, each with its cause: unknown, never empty.
    unknown: Vec<Unknown>,
    workflows: Vec<Workflow>,
    annotations: Vec<Annotation>,
    reviews: Vec<Review>,
    verdict: Verdict,
    /// With `--watch`: how the watch ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    watch: Option<Watch>,
    evidence: Vec<String>,
    notices: Vec<Notice>,
}

/// How `--watch` ended: after how many further looks, and whether every check finished.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Watch {
    pub polls: u32,
    pub finished: bool,
    /// Why it stopped with checks still pending (an access problem, the poll limit).
    pub stopped_by: Option<String>,
}

/// The first pause of `--watch`; each next one is half as long again, up to
/// [`MAX_POLL_INTERVAL`]. The test hook `DACLI_TEST_WATCH_POLL_MS` shortens it.
const POLL_INTERVAL: Duration = Duration::from_secs(10);
const MAX_POLL_INTERVAL: Duration = Duration::from_secs(60);
/// Looks after the first before `--watch` gives up (at least an hour at the longest pause).
const MAX_POLLS: u32 = 90;

fn poll_interval(ctx: &Ctx) -> Duration {
    ctx.env()
        .get("DACLI_TEST_WATCH_POLL_MS")
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(POLL_INTERVAL, Duration::from_millis)
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
    /// Why branch protection could not be read (most often: the token is not an admin's).
    #[serde(skip)]
    pub protection_problem: Option<AccessProblem>,
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

/// A closed set of names: the enum, `ALL` (every member, in order) and each one's name.
macro_rules! named {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(super) enum $name {
            $($(#[$vm])* $v),+
        }

        impl $name {
            #[allow(dead_code, reason = "read by the test that compares them with the docs")]
            pub(super) const ALL: &'static [$name] = &[$($name::$v),+];

            pub(super) fn as_str(self) -> &'static str {
                match self {
                    $($name::$v => $s),+
                }
            }
        }
    };
}

named! {
    /// Every verdict `pr diagnose` can reach (docs/GITHUB.md lists the same names).
    VerdictClass {
        MergeableNow = "mergeable_now",
        WaitingOnChecks = "waiting_on_checks",
        FailingChecks = "failing_checks",
        MissingRequiredChecks = "missing_required_checks",
        NoChecksConfigured = "no_checks_configured",
        NoChecksTriggered = "no_checks_triggered",
        NeedsWorkflowApproval = "needs_workflow_approval",
        NeedsReview = "needs_review",
        ChangesRequested = "changes_requested",
        Conflict = "conflict",
        BehindBase = "behind_base",
        Draft = "draft",
        MergeQueue = "merge_queue",
        ComputingMergeability = "computing_mergeability",
        BlockedUnknown = "blocked_unknown",
        Merged = "merged",
        Closed = "closed",
        AccessProblem = "access_problem",
    }
}

named! {
    /// Every next action a verdict can advise (docs/GITHUB.md lists the same names).
    NextStep {
        ApproveWorkflowRun = "approve_workflow_run",
        AuthorizeSso = "authorize_sso",
        DispatchWorkflow = "dispatch_workflow",
        MarkReady = "mark_ready",
        PushNewHead = "push_new_head",
        RaiseMaxApiCalls = "raise_max_api_calls",
        RefreshTokenPermissions = "refresh_token_permissions",
        RequestReview = "request_review",
        RerunFailedJobs = "rerun_failed_jobs",
        ResolveConflict = "resolve_conflict",
        RetryLater = "retry_later",
        UpdateBranch = "update_branch",
        WaitRateLimitReset = "wait_rate_limit_reset",
    }
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
    let include: BTreeSet<&'static str> = if req.include.is_empty() {
        ALL.iter().copied().collect()
    } else {
        req.include.iter().map(|i| include_name(*i)).collect()
    };
    let client = client;
    let mut polls: u32 = 0;
    let mut wait = poll_interval(ctx);
    let (mut d, verdict, access, watch) = loop {
        let pr_json = match client.get(&format!("/repos/{repo}/pulls/{number}")) {
            Ok(v) => v,
            Err(e) => {
                // A later look cut by a transient problem is followed by another after a pause;
                // the first look's failure, or one with no time left, is the answer.
                let problem = as_problem(&e);
                let pause = backoff(&problem, &client, wait);
                if req.watch
                    && polls > 0
                    && polls < MAX_POLLS
                    && retryable(&problem)
                    && pause < client.time_left()
                {
                    pause_watch(ctx, &client, number, problem.kind(), pause);
                    wait = (wait * 3 / 2).min(MAX_POLL_INTERVAL);
                    polls += 1;
                    client.renew();
                    continue;
                }
                return call_failure(&e, &format!("reading pull request #{number} of {repo}"));
            }
        };
        let d = observe(&client, &repo, &pr_json, &include, req.annotation_limit);
        let verdict = verdict(&d);
        let access = Access::of(Some(&client), source, d.problem.clone());
        let pending = d.checks.iter().filter(|c| c.class == "pending").count();
        let open = d.pr.state == "open";
        let finished = !open || (pending == 0 && d.problem.is_none());
        let again = d.problem.as_ref().is_none_or(retryable);
        let pause = match &d.problem {
            Some(p) => backoff(p, &client, wait),
            None => rate_pause(&client, wait),
        };
        let out_of_time = pause >= client.time_left();
        if !req.watch || finished || !again || polls >= MAX_POLLS || out_of_time {
            let watch = req.watch.then(|| Watch {
                polls,
                finished,
                stopped_by: if finished {
                    None
                } else if !again || (out_of_time && d.problem.is_some()) {
                    d.problem.as_ref().map(|p| p.kind().to_string())
                } else if out_of_time {
                    Some("deadline_passed".to_string())
                } else {
                    Some(format!("{MAX_POLLS} polls"))
                },
            });
            break (d, verdict, access, watch);
        }
        match &d.problem {
            Some(p) => pause_watch(ctx, &client, number, p.kind(), pause),
            None => {
                let line = format!(
                    "watching #{number}: {pending} check(s) pending; looking again in {} s",
                    pause.as_millis().div_ceil(1000)
                );
                ctx.notice(line.clone());
                client.phase(line);
                std::thread::sleep(pause);
            }
        }
        client.phase(format!("watching #{number}: look {}", polls + 2));
        wait = (wait * 3 / 2).min(MAX_POLL_INTERVAL);
        polls += 1;
        client.renew();
    };
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
        unknown: d.unknown,
        workflows: d.workflows,
        annotations: d.annotations,
        reviews: d.reviews,
        verdict,
        watch,
        evidence: Vec::new(),
        notices,
    };
    if req.record {
        resp.evidence.push(record(ctx, &resp)?);
    }
    Ok(Outcome::Done(resp))
}

/// Problems a later look may not meet: a rate limit (after its reset), a 5xx, the network.
/// A spent budget or the run's deadline would only recur; the others need a person.
fn retryable(p: &AccessProblem) -> bool {
    matches!(
        p,
        AccessProblem::RateLimited { .. }
            | AccessProblem::ServerError { .. }
            | AccessProblem::NetworkUnreachable { .. }
    )
}

/// The pause before the next look after `problem`: at least `wait`, and for a rate limit
/// until GitHub's `retry-after` has passed or its `x-ratelimit-reset` has come (by GitHub's
/// clock; a minute when its answer did not say).
fn backoff(problem: &AccessProblem, client: &Client, wait: Duration) -> Duration {
    match problem {
        AccessProblem::RateLimited {
            retry_after_s: Some(s),
            ..
        } => wait.max(Duration::from_secs(*s)),
        AccessProblem::RateLimited { .. } => wait.max(
            client
                .reset_in()
                .map_or(MAX_POLL_INTERVAL, |r| r + Duration::from_secs(1)),
        ),
        _ => rate_pause(client, wait),
    }
}

/// `wait`, or longer when fewer requests are left than one look took: until the reset.
fn rate_pause(client: &Client, wait: Duration) -> Duration {
    match (client.rate().remaining, client.reset_in()) {
        (Some(left), Some(reset)) if left < i64::from(client.calls()) => wait.max(reset),
        _ => wait,
    }
}

/// Says why the watch pauses, and for how long, then pauses.
fn pause_watch(ctx: &Ctx, client: &super::Session<'_>, number: u64, why: &str, pause: Duration) {
    let line = format!(
        "watching #{number}: GitHub could not be read ({why}); looking again in {} s",
        pause.as_millis().div_ceil(1000)
    );
    ctx.notice(line.clone());
    client.phase(line);
    std::thread::sleep(pause);
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
    let prs: Vec<gh::PullSummary> = decode(list, "the pull requests of a head or commit")?;
    let open = prs
        .iter()
        .filter(|p| p.state == "open")
        .map(|p| p.number)
        .max();
    Ok(open.or_else(|| prs.iter().map(|p| p.number).max()))
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
    /// Whether checks and reviews were read completely (unread parts are unknown, never
    /// empty).
    pub checks_read: bool,
    pub reviews_read: bool,
    /// The parts that could not be read, each with its cause.
    pub unknown: Vec<Unknown>,
    /// GitHub's own review decision (GraphQL `reviewDecision`), read when branch protection
    /// is not readable with this token: `APPROVED`, `CHANGES_REQUESTED`, `REVIEW_REQUIRED`.
    pub github_review_decision: Option<String>,
    /// The first access problem of a part that matters for the verdict.
    pub problem: Option<AccessProblem>,
    pub notices: Vec<Notice>,
}

/// A part of the diagnosis that could not be read (completely): what it is and why. What is
/// unknown is never read as "nothing there".
#[derive(Debug, Clone, Serialize)]
pub(super) struct Unknown {
    /// `checks`, `statuses`, `workflows`, `jobs`, `annotations`, `reviews`.
    pub part: &'static str,
    /// The access problem's kind (`insufficient_permission`, `budget_spent`, ...).
    pub cause: &'static str,
    pub reason: String,
    /// Items read before the list was cut (0 when nothing was read).
    pub read: usize,
    /// Required checks not seen among what was read: neither present nor missing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub required_unseen: Vec<String>,
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

/// The PR object of a REST `pulls/{n}` answer, or why it is not one.
pub(super) fn decode_pr(v: &Value) -> Result<Pr, CallError> {
    let p: gh::PullRequest = decode(v.clone(), "GET /repos/{owner}/{repo}/pulls/{number}")?;
    Ok(pr_of(&p))
}

/// The PR object of a REST `pulls/{n}` answer; an undecodable one leaves every field empty
/// (its number 0), which no gate reads as a pass.
pub(super) fn parse_pr(v: &Value) -> Pr {
    decode_pr(v).unwrap_or_else(|_| Pr {
        number: 0,
        url: String::new(),
        state: "open".into(),
        draft: false,
        head_sha: String::new(),
        head_ref: String::new(),
        head_is_fork: false,
        base_ref: String::new(),
        base_sha: String::new(),
        mergeable: None,
        merge_state: "unknown".into(),
        review_decision: "none".into(),
        auto_merge: None,
        merge_commit_sha: None,
    })
}

fn pr_of(p: &gh::PullRequest) -> Pr {
    let merged = p.merged.unwrap_or(false) || p.merged_at.is_some();
    let state = if merged {
        "merged"
    } else if p.state == "closed" {
        "closed"
    } else {
        "open"
    };
    let head_repo = p.head.repo.as_ref().map(|r| r.full_name.as_str());
    let base_repo = p.base.repo.as_ref().map(|r| r.full_name.as_str());
    const MERGE_STATES: [&str; 7] = [
        "clean",
        "behind",
        "blocked",
        "dirty",
        "draft",
        "has_hooks",
        "unstable",
    ];
    let merge_state = p
        .mergeable_state
        .as_deref()
        .filter(|s| MERGE_STATES.contains(s))
        .unwrap_or("unknown");
    Pr {
        number: p.number,
        url: p.html_url.clone(),
        state: state.into(),
        draft: p.draft.unwrap_or(false),
        head_sha: p.head.sha.clone(),
        head_ref: p.head.name.clone(),
        head_is_fork: head_repo.is_some() && head_repo != base_repo,
        base_ref: p.base.name.clone(),
        base_sha: p.base.sha.clone(),
        mergeable: p.mergeable,
        merge_state: merge_state.into(),
        review_decision: "none".into(),
        auto_merge: p.auto_merge.as_ref().map(|a| AutoMerge {
            method: a.merge_method.clone().unwrap_or_else(|| "merge".into()),
        }),
        merge_commit_sha: if merged {
            p.merge_commit_sha.clone()
        } else {
            None
        },
    }
}

/// Pages a list may span; the call budget and the deadline bound it first.
const MAX_PAGES: u32 = 1000;

/// One list of the diagnosis, typed: every item read, and the cause when it is incomplete.
struct Read<T> {
    items: Vec<T>,
    cut: Option<CallError>,
}

/// Reads a paginated list as `T`. A failed first page, a cut later page or an undecodable item
/// all leave the list incomplete with their cause.
fn read_list<T: serde::de::DeserializeOwned>(
    client: &Client,
    route: &str,
    key: Option<&str>,
    max_pages: u32,
) -> Read<T> {
    let listing = match client.list(route, key, max_pages) {
        Ok(l) => l,
        Err(e) => {
            return Read {
                items: Vec::new(),
                cut: Some(e),
            };
        }
    };
    match decode::<Vec<T>>(Value::Array(listing.items), route) {
        Ok(items) => Read {
            items,
            cut: listing.cut,
        },
        Err(e) => Read {
            items: Vec::new(),
            cut: Some(e),
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
        unknown: Vec::new(),
        github_review_decision: None,
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
    // Workflow runs first: check runs name their suite, and runs name the workflow.
    let mut runs: Vec<gh::WorkflowRun> = Vec::new();
    if include.contains("workflows") || include.contains("jobs") {
        let read = read_list::<gh::WorkflowRun>(
            client,
            &format!("/repos/{repo}/actions/runs?head_sha={head}"),
            Some("workflow_runs"),
            MAX_PAGES,
        );
        runs = read.items;
        if let Some(e) = read.cut {
            d.unread("workflows", &e, runs.len(), Vec::new());
        }
    }
    let mut checks_complete = include.contains("checks");
    let mut unread_checks: Vec<(&'static str, CallError, usize)> = Vec::new();
    if include.contains("checks") {
        let read = read_list::<gh::CheckRun>(
            client,
            &format!("/repos/{repo}/commits/{head}/check-runs?filter=latest"),
            Some("check_runs"),
            MAX_PAGES,
        );
        for cr in &read.items {
            d.checks.push(check_run(cr, &runs, &required));
        }
        if let Some(e) = read.cut {
            checks_complete = false;
            unread_checks.push(("checks", e, read.items.len()));
        }
    }
    if include.contains("statuses") {
        let read = read_list::<gh::Status>(
            client,
            &format!("/repos/{repo}/commits/{head}/status"),
            Some("statuses"),
            MAX_PAGES,
        );
        for s in &read.items {
            d.checks.push(status_context(s, &required));
        }
        if let Some(e) = read.cut {
            checks_complete = false;
            unread_checks.push(("statuses", e, read.items.len()));
        }
    }
    d.checks_read = checks_complete;
    d.checks
        .sort_by(|a, b| (a.name.as_str(), a.kind).cmp(&(b.name.as_str(), b.kind)));
    let present: BTreeSet<&str> = d.checks.iter().map(|c| c.name.as_str()).collect();
    let unseen: Vec<String> = required
        .iter()
        .filter(|r| !present.contains(r.as_str()))
        .cloned()
        .collect();
    // A required check is missing only when every check on the head was read; otherwise it
    // may be on a page that was never read, and it is unknown.
    if checks_complete {
        d.missing_required = unseen;
    } else {
        let mut unseen = Some(unseen);
        for (part, e, read) in unread_checks {
            d.unread(part, &e, read, unseen.take().unwrap_or_default());
        }
    }
    for run in &runs {
        let mut w = workflow(run);
        let failed = matches!(
            w.conclusion.as_deref(),
            Some("failure" | "timed_out" | "cancelled")
        );
        if failed && include.contains("jobs") {
            let read = read_list::<gh::Job>(
                client,
                &format!("/repos/{repo}/actions/runs/{}/jobs", w.run_id),
                Some("jobs"),
                MAX_PAGES,
            );
            w.failed_jobs = failed_jobs(&read.items);
            if let Some(e) = read.cut {
                d.unread("jobs", &e, read.items.len(), Vec::new());
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
            let read = read_list::<gh::CheckAnnotation>(
                client,
                &format!("/repos/{repo}/check-runs/{id}/annotations"),
                None,
                (left as u32).div_ceil(100),
            );
            let over = read.items.len() > left;
            for a in read.items.iter().take(left) {
                d.annotations.push(annotation(a, &name));
            }
            left = left.saturating_sub(read.items.len());
            match read.cut {
                Some(CallError::PageLimit { .. }) => d.notices.push(Notice::new(
                    "annotations_truncated",
                    format!(
                        "more annotations exist than --annotation-limit {annotation_limit} allows"
                    ),
                )),
                Some(e) => d.unread("annotations", &e, read.items.len(), Vec::new()),
                None if over => d.notices.push(Notice::new(
                    "annotations_truncated",
                    format!(
                        "more annotations exist than --annotation-limit {annotation_limit} allows"
                    ),
                )),
                None => {}
            }
        }
    }
    if d.checks_read && d.checks.is_empty() && runs.is_empty() {
        let route = format!("/repos/{repo}/actions/workflows?per_page=1");
        match client
            .get(&route)
            .and_then(|v| decode::<gh::Workflows>(v, &route))
        {
            Ok(w) => d.workflows_exist = Some(w.total_count > 0),
            Err(e) => d.unread("workflows", &e, 0, Vec::new()),
        }
    }
    if include.contains("reviews") {
        let read = read_list::<gh::Review>(
            client,
            &format!("/repos/{repo}/pulls/{}/reviews", d.pr.number),
            None,
            MAX_PAGES,
        );
        d.reviews = read.items.iter().map(|r| review(r, &head)).collect();
        match read.cut {
            None => d.reviews_read = true,
            Some(e) => d.unread("reviews", &e, read.items.len(), Vec::new()),
        }
    }
    let required_approvals = d.requirements.as_ref().map_or(0, |r| r.required_approvals);
    d.pr.review_decision = review_decision(&d.reviews, required_approvals).into();
    // Classic branch protection is readable only by admins, so the approvals it requires may
    // be unknown here; GitHub's own decision says whether a review is still required.
    let protection_unread = d
        .requirements
        .as_ref()
        .is_some_and(|r| r.protection_problem.is_some());
    if protection_unread && include.contains("reviews") && d.pr.state == "open" {
        match github_review_decision(client, repo, d.pr.number) {
            Ok(Some(decision)) => {
                d.pr.review_decision = match decision.as_str() {
                    "APPROVED" => "approved",
                    "CHANGES_REQUESTED" => "changes_requested",
                    "REVIEW_REQUIRED" => "review_required",
                    _ => "none",
                }
                .into();
                d.github_review_decision = Some(decision);
            }
            Ok(None) => {}
            Err(e) => d.notices.push(Notice::new(
                "review_decision_unread",
                format!("GitHub's review decision could not be read: {e}"),
            )),
        }
    }
    d
}

/// GitHub's review decision for a pull request (GraphQL; needs only read access to pull
/// requests), `None` when no review is required.
fn github_review_decision(
    client: &Client,
    repo: &str,
    number: u64,
) -> Result<Option<String>, CallError> {
    let (owner, name) = repo.split_once('/').unwrap_or((repo, ""));
    let answer = client.graphql(
        "query($owner: String!, $name: String!, $number: Int!) { repository(owner: $owner, name: $name) { pullRequest(number: $number) { reviewDecision } } }",
        serde_json::json!({"owner": owner, "name": name, "number": number}),
    )?;
    let typed: gh::ReviewDecisionAnswer = decode(answer, "POST /graphql")?;
    Ok(typed
        .data
        .and_then(|d| d.repository)
        .and_then(|r| r.pull_request)
        .and_then(|p| p.review_decision))
}

impl Diagnosis {
    /// Records a part that could not be read completely, and its cause.
    fn unread(&mut self, part: &'static str, e: &CallError, read: usize, unseen: Vec<String>) {
        let problem = as_problem(e);
        let reason = if read == 0 {
            format!("{part} could not be read: {}", problem.describe())
        } else {
            format!(
                "{part}: only {read} were read before the list was cut: {}",
                problem.describe()
            )
        };
        self.unknown.push(Unknown {
            part,
            cause: problem.kind(),
            reason,
            read,
            required_unseen: unseen,
        });
        if self.problem.is_none() {
            self.problem = Some(problem);
        }
    }
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
    let rules = read_list::<gh::BranchRule>(
        client,
        &format!("/repos/{repo}/rules/branches/{}", encode(base)),
        None,
        MAX_PAGES,
    );
    for rule in &rules.items {
        let params = rule.parameters.clone().unwrap_or_default();
        from_rules = true;
        match rule.kind.as_str() {
            "required_status_checks" => {
                r.strict_up_to_date |= params.strict_required_status_checks_policy == Some(true);
                for c in params.required_status_checks.iter().flatten() {
                    checks.insert(c.context.clone());
                }
            }
            "pull_request" => {
                r.required_approvals = r
                    .required_approvals
                    .max(params.required_approving_review_count.unwrap_or(0));
                r.code_owner_review |= params.require_code_owner_review == Some(true);
                r.last_push_approval |= params.require_last_push_approval == Some(true);
                r.conversation_resolution |= params.required_review_thread_resolution == Some(true);
            }
            "merge_queue" => r.merge_queue = true,
            _ => {}
        }
    }
    if let Some(e) = &rules.cut {
        let p = as_problem(e);
        unreadable.push(format!("rulesets: {}", p.kind()));
        r.rulesets_problem = Some(p);
    }
    let route = format!("/repos/{repo}/branches/{}/protection", encode(base));
    match client
        .get(&route)
        .and_then(|v| decode::<gh::BranchProtection>(v, &route))
    {
        Ok(p) => {
            from_protection = true;
            if let Some(rsc) = &p.required_status_checks {
                r.strict_up_to_date |= rsc.strict == Some(true);
                checks.extend(rsc.contexts.iter().cloned());
                checks.extend(rsc.checks.iter().map(|c| c.context.clone()));
            }
            if let Some(prr) = &p.required_pull_request_reviews {
                r.required_approvals = r
                    .required_approvals
                    .max(prr.required_approving_review_count.unwrap_or(0));
                r.code_owner_review |= prr.require_code_owner_reviews == Some(true);
                r.last_push_approval |= prr.require_last_push_approval == Some(true);
            }
            r.conversation_resolution |= p
                .required_conversation_resolution
                .as_ref()
                .is_some_and(|c| c.enabled == Some(true));
        }
        Err(e) => {
            let p = as_problem(&e);
            unreadable.push(format!(
                "branch protection of `{base}`: {} (it may be unprotected, or this token may lack administration:read)",
                p.kind()
            ));
            r.protection_problem = Some(p);
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

fn check_run(cr: &gh::CheckRun, runs: &[gh::WorkflowRun], required: &[String]) -> Check {
    let suite = cr.check_suite.as_ref().map(|s| s.id);
    let workflow = suite.and_then(|s| {
        runs.iter()
            .find(|r| r.check_suite_id == Some(s))
            .map(|r| WorkflowRef {
                name: r.name.clone().unwrap_or_default(),
                run_id: r.id,
                attempt: r.run_attempt.unwrap_or(1),
                event: r.event.clone(),
            })
    });
    Check {
        kind: "check_run",
        class: class_of_run(&cr.status, cr.conclusion.as_deref()),
        required: required.contains(&cr.name),
        name: cr.name.clone(),
        app: cr.app.as_ref().and_then(|a| a.slug.clone()),
        workflow,
        status: cr.status.clone(),
        conclusion: cr.conclusion.clone(),
        on_head: true,
        details_url: cr.details_url.clone().or_else(|| cr.html_url.clone()),
        annotations_count: cr.output.as_ref().map(|o| o.annotations_count),
        id: Some(cr.id),
    }
}

fn status_context(s: &gh::Status, required: &[String]) -> Check {
    Check {
        kind: "status_context",
        class: class_of_status(&s.state),
        required: required.contains(&s.context),
        name: s.context.clone(),
        app: None,
        workflow: None,
        status: if s.state == "pending" {
            "pending"
        } else {
            "completed"
        }
        .into(),
        conclusion: Some(s.state.clone()),
        on_head: true,
        details_url: s.target_url.clone(),
        annotations_count: None,
        id: None,
    }
}

fn workflow(run: &gh::WorkflowRun) -> Workflow {
    let conclusion = run.conclusion.clone();
    let status = run.status.clone().unwrap_or_else(|| "queued".into());
    Workflow {
        run_id: run.id,
        name: run.name.clone().unwrap_or_default(),
        path: run.path.clone(),
        event: run.event.clone(),
        needs_approval: conclusion.as_deref() == Some("action_required")
            || status == "action_required"
            || status == "waiting",
        startup_failure: conclusion.as_deref() == Some("startup_failure"),
        status,
        conclusion,
        attempt: run.run_attempt.unwrap_or(1),
        failed_jobs: Vec::new(),
    }
}

fn is_failure(conclusion: Option<&str>) -> bool {
    matches!(conclusion, Some("failure" | "timed_out" | "cancelled"))
}

fn failed_jobs(jobs: &[gh::Job]) -> Vec<FailedJob> {
    jobs.iter()
        .filter(|j| is_failure(j.conclusion.as_deref()))
        .map(|j| FailedJob {
            name: j.name.clone(),
            step: j
                .steps
                .iter()
                .find(|s| is_failure(s.conclusion.as_deref()))
                .map(|s| s.name.clone()),
            conclusion: j.conclusion.clone().unwrap_or_default(),
            id: j.id,
        })
        .collect()
}

fn annotation(a: &gh::CheckAnnotation, check: &str) -> Annotation {
    let message: String = a
        .message
        .as_deref()
        .unwrap_or_default()
        .chars()
        .take(500)
        .collect();
    Annotation {
        check: check.to_string(),
        path: a.path.clone(),
        start_line: a.start_line,
        end_line: a.end_line,
        level: match a.annotation_level.as_deref() {
            Some(l @ ("notice" | "warning" | "failure")) => l.to_string(),
            _ => "notice".into(),
        },
        title: a.title.clone().filter(|t| !t.is_empty()),
        message,
    }
}

fn review(r: &gh::Review, head: &str) -> Review {
    let commit_id = r.commit_id.clone().unwrap_or_default();
    Review {
        login: r
            .user
            .as_ref()
            .map_or_else(|| "ghost".to_string(), |u| u.login.clone()),
        state: match r.state.as_str() {
            "APPROVED" => "approved",
            "CHANGES_REQUESTED" => "changes_requested",
            "DISMISSED" => "dismissed",
            "PENDING" => "pending",
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
        b.add(VerdictClass::AccessProblem, p.describe(), access_action(p));
    }
    for u in &d.unknown {
        b.note(u.reason.clone());
        for r in &u.required_unseen {
            b.note(format!(
                "required check `{r}` is unknown: it is not among the {} {} read",
                u.read, u.part
            ));
        }
    }
    if pr.state == "merged" {
        b.add(
            VerdictClass::Merged,
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
            VerdictClass::Closed,
            format!("#{} is closed without merging", pr.number),
            None,
        );
        return b.finish();
    }
    if pr.draft {
        b.add(
            VerdictClass::Draft,
            format!("#{} is a draft", pr.number),
            Some((
                NextStep::MarkReady,
                "mark it ready for review (`gh pr ready`)".to_string(),
            )),
        );
    }
    if pr.merge_state == "dirty" || pr.mergeable == Some(false) {
        b.add(
            VerdictClass::Conflict,
            format!("`{}` conflicts with `{}`", pr.head_ref, pr.base_ref),
            Some((
                NextStep::ResolveConflict,
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
            .map(|a| {
                format!(
                    "{}:{}: {}",
                    a.path,
                    a.start_line,
                    failing_lines(&a.message).join(" / ")
                )
            })
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
            VerdictClass::FailingChecks,
            reason,
            Some((NextStep::RerunFailedJobs, detail)),
        );
    }
    for w in d.workflows.iter().filter(|w| w.startup_failure) {
        b.add(
            VerdictClass::FailingChecks,
            format!("workflow `{}` (run {}) failed at startup: GitHub exposes no reason; check `{}` at the head", w.name, w.run_id, w.path),
            Some((NextStep::PushNewHead, format!("fix `{}` and push a new head", w.path))),
        );
    }
    let approval_runs: Vec<&Workflow> = d.workflows.iter().filter(|w| w.needs_approval).collect();
    for w in &approval_runs {
        b.add(
            VerdictClass::NeedsWorkflowApproval,
            format!(
                "workflow run {} (`{}`) waits for a maintainer's approval",
                w.run_id, w.name
            ),
            Some((
                NextStep::ApproveWorkflowRun,
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
                VerdictClass::NeedsWorkflowApproval,
                format!("check `{}` needs a person's action", c.name),
                Some((
                    NextStep::ApproveWorkflowRun,
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
            VerdictClass::MissingRequiredChecks,
            format!("required check `{m}` has not reported on the head {}", short(&pr.head_sha)),
            Some((
                NextStep::DispatchWorkflow,
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
            VerdictClass::WaitingOnChecks,
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
                VerdictClass::NoChecksTriggered,
                format!("workflows exist, but nothing ran on the head {}", short(&pr.head_sha)),
                Some((
                    NextStep::PushNewHead,
                    "check the workflows' `on:` triggers and branch filters, then push a new head or dispatch the workflow".to_string(),
                )),
            ),
            Some(false) => b.add(
                VerdictClass::NoChecksConfigured,
                "no workflows and no required checks: nothing verifies this change".to_string(),
                None,
            ),
            None => {}
        }
    }
    if pr.merge_state == "behind" {
        b.add(
            VerdictClass::BehindBase,
            format!(
                "`{}` is behind `{}`, and the branch rules require it to be up to date",
                pr.head_ref, pr.base_ref
            ),
            Some((
                NextStep::UpdateBranch,
                "update the branch (`gh pr update-branch`), then let the checks run again"
                    .to_string(),
            )),
        );
    }
    let latest = latest_by_login(&d.reviews);
    for r in latest.values().filter(|r| r.state == "changes_requested") {
        b.add(
            VerdictClass::ChangesRequested,
            format!("{} requested changes", r.login),
            Some((
                NextStep::RequestReview,
                format!("address {}'s review and ask them to review again", r.login),
            )),
        );
    }
    let required = d.requirements.as_ref().map_or(0, |r| r.required_approvals);
    let approvals = latest.values().filter(|r| r.state == "approved").count() as u64;
    if d.github_review_decision.as_deref() == Some("REVIEW_REQUIRED") && approvals >= required {
        b.add(
            VerdictClass::NeedsReview,
            format!(
                "GitHub reports a review is required (REVIEW_REQUIRED); {approvals} approvals on record, and the branch protection that sets how many is not readable with this token"
            ),
            Some((
                NextStep::RequestReview,
                "request a review from someone who may approve".to_string(),
            )),
        );
    } else if d.reviews_read && approvals < required {
        b.add(
            VerdictClass::NeedsReview,
            format!("{approvals} of {required} required approvals"),
            Some((
                NextStep::RequestReview,
                "request a review from someone who may approve".to_string(),
            )),
        );
    }
    if d.requirements.as_ref().is_some_and(|r| r.merge_queue) {
        b.add(
            VerdictClass::MergeQueue,
            format!("`{}` requires a merge queue", pr.base_ref),
            None,
        );
    }
    if b.classes.is_empty() && pr.mergeable.is_none() && pr.merge_state == "unknown" {
        b.add(
            VerdictClass::ComputingMergeability,
            "GitHub is still computing whether the PR can merge (`mergeable: null`)".to_string(),
            Some((
                NextStep::RetryLater,
                "run the diagnosis again in a few seconds".to_string(),
            )),
        );
    }
    if b.classes.is_empty() && matches!(pr.merge_state.as_str(), "blocked" | "unknown") {
        b.add(
            VerdictClass::BlockedUnknown,
            format!(
                "GitHub reports the merge state `{}` and nothing read here explains it",
                pr.merge_state
            ),
            None,
        );
    }
    b.finish()
}

fn access_action(p: &AccessProblem) -> Option<(NextStep, String)> {
    let action = match p {
        AccessProblem::SsoRequired { .. } => NextStep::AuthorizeSso,
        AccessProblem::RateLimited {
            limit: RateKind::Primary | RateKind::Secondary,
            ..
        } => NextStep::WaitRateLimitReset,
        AccessProblem::BudgetSpent { .. } => NextStep::RaiseMaxApiCalls,
        AccessProblem::ServerError { .. }
        | AccessProblem::NetworkUnreachable { .. }
        | AccessProblem::DeadlinePassed { .. } => {
            return None;
        }
        _ => NextStep::RefreshTokenPermissions,
    };
    Some((action, p.remedy()))
}

/// The lines of an annotation that say what failed: a Rust panic's `thread '…' panicked at
/// …:` header and its backtrace hint carry nothing, the assertion lines after them do.
fn failing_lines(message: &str) -> Vec<&str> {
    let lines: Vec<&str> = message
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .filter(|l| !(l.starts_with("thread '") && l.contains("panicked at")))
        .filter(|l| !l.starts_with("note: run with `RUST_BACKTRACE"))
        .take(6)
        .collect();
    if lines.is_empty() {
        message.lines().take(1).collect()
    } else {
        lines
    }
}

pub(super) fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

#[derive(Default)]
struct Blockers {
    classes: Vec<VerdictClass>,
    reasons: Vec<String>,
    next: Vec<NextAction>,
}

impl Blockers {
    fn add(&mut self, class: VerdictClass, reason: String, action: Option<(NextStep, String)>) {
        self.classes.push(class);
        self.reasons.push(reason);
        if let Some((action, detail)) = action {
            let n = NextAction {
                action: action.as_str(),
                detail,
            };
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
            class: self
                .classes
                .first()
                .copied()
                .unwrap_or(VerdictClass::MergeableNow)
                .as_str(),
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
        let failing = matches!(c.class, "fail" | "infra");
        out.push_str(&format!(
            "  {:<8}  {}{}{}\n",
            c.class,
            c.name,
            if c.required { "  (required)" } else { "" },
            match (&c.details_url, failing) {
                (Some(url), true) => format!("  {url}"),
                _ => String::new(),
            }
        ));
        if !failing {
            continue;
        }
        for a in r.annotations.iter().filter(|a| a.check == c.name) {
            let mut lines = failing_lines(&a.message).into_iter();
            out.push_str(&format!(
                "            {}:{}  {}  {}\n",
                a.path,
                a.start_line,
                a.level,
                lines.next().unwrap_or_default()
            ));
            for more in lines {
                out.push_str(&format!("              {}\n", more.trim()));
            }
        }
    }
    for m in &r.missing_required {
        out.push_str(&format!("  {:<8}  {m}  (required)\n", "missing"));
    }
    for u in &r.unknown {
        for name in &u.required_unseen {
            out.push_str(&format!("  {:<8}  {name}  (required)\n", "unknown"));
        }
        out.push_str(&format!("  unknown: {} ({})\n", u.reason, u.cause));
    }
    // Annotations of checks that did not fail (warnings on a passing check), on their own.
    for a in r.annotations.iter().filter(|a| {
        !r.checks
            .iter()
            .any(|c| c.name == a.check && matches!(c.class, "fail" | "infra"))
    }) {
        out.push_str(&format!(
            "  {}:{}  {}  {}\n",
            a.path,
            a.start_line,
            a.level,
            failing_lines(&a.message).join(" / ")
        ));
    }
    out.push_str(&format!("verdict: {}\n", r.verdict.class));
    for reason in &r.verdict.reasons {
        out.push_str(&format!("  - {reason}\n"));
    }
    for n in &r.verdict.next_actions {
        out.push_str(&format!("next: {}: {}\n", n.action, n.detail));
    }
    if let Some(w) = &r.watch {
        out.push_str(&match &w.stopped_by {
            None => format!(
                "watch: every check finished after {} more look(s)\n",
                w.polls
            ),
            Some(why) => format!(
                "watch: stopped after {} more look(s) with checks pending: {why}\n",
                w.polls
            ),
        });
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
            unknown: Vec::new(),
            github_review_decision: None,
            problem: None,
            notices: Vec::new(),
        }
    }

    fn pr(state: &str) -> Value {
        json!({"number": 7, "html_url": "https://github.com/acme/widget/pull/7",
               "state": "open", "draft": false, "mergeable": true,
               "mergeable_state": state, "head": {"sha": "a".repeat(40), "ref": "feat"},
               "base": {"sha": "b".repeat(40), "ref": "main"}})
    }

    #[test]
    fn a_panic_annotation_keeps_its_assertion_lines() {
        let msg = "thread 'money::tests::rounds_once' panicked at src/money.rs:42:5:\nassertion `left == right` failed\n  left: 101\n right: 100\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace";
        assert_eq!(
            failing_lines(msg),
            [
                "assertion `left == right` failed",
                "  left: 101",
                " right: 100"
            ]
        );
        assert_eq!(failing_lines("one line"), ["one line"]);
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

#[cfg(test)]
mod names_tests {
    use super::{NextStep, VerdictClass};

    /// The backticked names in the first column of the docs table headed `| {head} |`.
    fn documented(docs: &str, head: &str) -> Vec<String> {
        let start = docs
            .find(&format!("| {head} |"))
            .unwrap_or_else(|| panic!("docs/GITHUB.md has no `{head}` table"));
        docs[start..]
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .filter_map(|l| {
                let cell = l.trim_start_matches('|').split('|').next()?.trim();
                Some(cell.trim_matches('`').to_string())
            })
            .collect()
    }

    #[test]
    fn every_verdict_and_next_action_is_documented_and_nothing_else() {
        let docs = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/GITHUB.md"),
        )
        .expect("docs/GITHUB.md");
        let mut code: Vec<String> = VerdictClass::ALL
            .iter()
            .map(|v| v.as_str().to_string())
            .collect();
        let mut doc = documented(&docs, "verdict");
        code.sort();
        doc.sort();
        assert_eq!(doc, code, "the verdicts of docs/GITHUB.md and of the code");
        let mut code: Vec<String> = NextStep::ALL
            .iter()
            .map(|a| a.as_str().to_string())
            .collect();
        let mut doc = documented(&docs, "next action");
        code.sort();
        doc.sort();
        assert_eq!(
            doc, code,
            "the next actions of docs/GITHUB.md and of the code"
        );
    }
}
