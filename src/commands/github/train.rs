//! `release-train plan|open|resume|land|status`: promote one exact commit `S` from a source
//! branch to a target branch through one canonical pull request (GIT_GITHUB.md B5,
//! COMMANDS.md §12). Landing is gated by the checks at `S`, fresh approvals, the branch rules
//! and the project's `merge_authority`; it merges only through the API with the SHA guard,
//! refuses squash and rebase (both rewrite commits), and never tags or publishes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toml_edit::{DocumentMut, InlineTable, value};

use super::diagnose::{self, Diagnosis, fresh_approvals, short, str_at, u64_at};
use super::{
    Notice, Session, access_failure, announce, as_problem, call_failure, connect, link_of,
    project_list, project_slug, unlinked,
};
use crate::dispatch::apply::{ApplyArgs, Run, Start, digest_of, frozen, start};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, ErrorKind, Mcp, Outcome};
use crate::github::{CallError, Client, Method, encode};
use crate::journal::evidence::{Evidence, EvidenceItem};
use crate::journal::txn::{StepStatus, Txn, TxnOutcome};
use crate::model::Refusal;
use crate::ops;
use crate::policy::apply::{self as contract, ApplyRequest};
use crate::policy::disclosure;
use crate::policy::train as train_policy;

const TOOL: &str = "release-train";

pub(super) fn commands() -> Vec<Command> {
    let mcp = Mcp::Tier1("release_train");
    vec![
        Command::new("release-train.plan", Class::Read, run_plan, render_plan).mcp(mcp),
        Command::new("release-train.open", Class::Read, run_open, render_train).mcp(mcp),
        Command::new(
            "release-train.resume",
            Class::Apply,
            run_resume,
            render_train,
        )
        .mcp(mcp),
        Command::new("release-train.land", Class::Read, run_land, render_train).mcp(mcp),
        Command::new(
            "release-train.status",
            Class::Read,
            run_status,
            render_status,
        )
        .mcp(mcp),
    ]
}

/// Plan promoting one exact commit from --source to --target (read-only): checks the commit
/// is on the source, compares it with the target (ahead, identical, behind, diverged) and lists
/// the commits it brings. Never tags, never publishes.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanRequest {
    /// The project whose merge authority and landing mode apply.
    #[arg(long, value_name = "P")]
    project: String,
    /// The branch the commit comes from (e.g. main).
    #[arg(long, value_name = "BRANCH")]
    source: String,
    /// The branch it is promoted to (e.g. release).
    #[arg(long, value_name = "BRANCH")]
    target: String,
    /// The exact commit (default: the source's tip).
    #[arg(long, value_name = "SHA")]
    #[serde(default)]
    sha: Option<String>,
    /// `merge` or `fast_forward` (squash and rebase rewrite commits and are refused).
    #[arg(long, value_name = "METHOD", default_value = "merge")]
    #[serde(default = "default_method")]
    method: String,
    /// Refused: a train never tags (train.no_publication).
    #[arg(long, value_name = "NAME")]
    #[serde(default)]
    tag: Option<String>,
    /// At most this many GitHub API calls.
    #[arg(long = "max-api-calls", value_name = "N", default_value_t = 80)]
    #[serde(default = "default_calls")]
    max_api_calls: u32,
}

fn default_method() -> String {
    "merge".into()
}

fn default_calls() -> u32 {
    80
}

impl Classify for PlanRequest {}

/// Open the train's canonical pull request: the branch dacli/train/<target>/<sha12> at the
/// exact commit, and one PR from it to the target, found again by its marker. Previews unless
/// --apply --digest D is given. Give TRAIN, or --project, --source, --target and --sha.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenRequest {
    /// An existing train (`tr-<ULID>`).
    #[arg(value_name = "TRAIN")]
    #[serde(default)]
    train: Option<String>,
    /// The project (without TRAIN).
    #[arg(long, value_name = "P")]
    #[serde(default)]
    project: Option<String>,
    /// The branch the commit comes from (without TRAIN).
    #[arg(long, value_name = "BRANCH")]
    #[serde(default)]
    source: Option<String>,
    /// The branch it is promoted to (without TRAIN).
    #[arg(long, value_name = "BRANCH")]
    #[serde(default)]
    target: Option<String>,
    /// The exact commit (without TRAIN).
    #[arg(long, value_name = "SHA")]
    #[serde(default)]
    sha: Option<String>,
    /// `merge` or `fast_forward`.
    #[arg(long, value_name = "METHOD", default_value = "merge")]
    #[serde(default = "default_method")]
    method: String,
    /// Run the plan whose digest is given.
    #[arg(long, requires = "digest")]
    #[serde(default)]
    apply: bool,
    /// The plan_digest of the reviewed preview.
    #[arg(long, value_name = "DIGEST")]
    #[serde(default)]
    digest: Option<String>,
    /// At most this many GitHub API calls.
    #[arg(long = "max-api-calls", value_name = "N", default_value_t = 80)]
    #[serde(default = "default_calls")]
    max_api_calls: u32,
}

impl Classify for OpenRequest {
    fn class(&self, declared: Class) -> Class {
        if self.apply { Class::Apply } else { declared }
    }
}

/// Land a train: evaluate every gate (head pinned to the commit, target unchanged, checks,
/// fresh approvals, merge authority, landing mode, merge queue) and, with --apply --digest D,
/// merge through the API with the SHA guard. Only principals in the project's merge_authority
/// may land.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LandRequest {
    /// The train (`tr-<ULID>`).
    #[arg(value_name = "TRAIN")]
    train: String,
    /// Merge, after every gate passed again.
    #[arg(long, requires = "digest")]
    #[serde(default)]
    apply: bool,
    /// The plan_digest of the reviewed preview.
    #[arg(long, value_name = "DIGEST")]
    #[serde(default)]
    digest: Option<String>,
    /// At most this many GitHub API calls.
    #[arg(long = "max-api-calls", value_name = "N", default_value_t = 80)]
    #[serde(default = "default_calls")]
    max_api_calls: u32,
}

impl Classify for LandRequest {
    fn class(&self, declared: Class) -> Class {
        if self.apply { Class::Apply } else { declared }
    }
}

/// Finish a train's interrupted transaction (open or land) from its frozen plan; each step
/// re-observes before acting, so nothing is done twice.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeRequest {
    /// The train (`tr-<ULID>`).
    #[arg(value_name = "TRAIN")]
    train: String,
    /// At most this many GitHub API calls.
    #[arg(long = "max-api-calls", value_name = "N", default_value_t = 80)]
    #[serde(default = "default_calls")]
    max_api_calls: u32,
}

impl Classify for ResumeRequest {}

/// Show trains: without TRAIN every train and its state; with TRAIN its record, its
/// transaction's steps and the live state of its pull request.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusRequest {
    /// The train (`tr-<ULID>`); all trains without it.
    #[arg(value_name = "TRAIN")]
    #[serde(default)]
    train: Option<String>,
}

impl Classify for StatusRequest {}

/// What a plan observed: everything in the digest.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Observed {
    project: String,
    repo: String,
    source: String,
    target: String,
    sha: String,
    method: String,
    compare: Compare,
    target_before: String,
    commits: Vec<CommitLine>,
    /// Why `commits` lists fewer than `compare.ahead_by` (the budget cut the pages short).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    commits_cut: Option<String>,
    included_prs: Vec<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Compare {
    status: String,
    ahead_by: u64,
    behind_by: u64,
    merge_base: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct CommitLine {
    sha: String,
    subject: String,
}

#[derive(Debug, Serialize)]
pub struct PlanResponse {
    train_id: Option<String>,
    #[serde(flatten)]
    observed: Observed,
    /// `ready` or `noop` (the target already is the commit).
    status: &'static str,
    next_action: String,
    plan_digest: String,
    notices: Vec<Notice>,
}

/// A train's view, for open, land, resume.
#[derive(Debug, Serialize)]
pub struct TrainResponse {
    mode: &'static str,
    train_id: Option<String>,
    project: String,
    repo: String,
    source: String,
    target: String,
    sha: String,
    method: String,
    state: String,
    canonical_pr: Option<CanonicalPr>,
    gates: Vec<Gate>,
    steps: Vec<StepView>,
    outcome: Option<LandOutcome>,
    next_action: String,
    plan_digest: Option<String>,
    txn: Option<String>,
    evidence: Vec<String>,
    already_applied: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct CanonicalPr {
    number: Option<u64>,
    url: Option<String>,
    state: Option<String>,
    head_sha: Option<String>,
    branch: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Gate {
    gate: String,
    /// `pass`, `fail`, `pending` or `unknown`.
    result: String,
    detail: String,
}

#[derive(Debug, Clone, Serialize)]
struct StepView {
    step: String,
    status: String,
}

#[derive(Debug, Clone, Serialize)]
struct LandOutcome {
    target_before: String,
    target_after: Option<String>,
    merge_commit_sha: Option<String>,
}

/// The frozen plan of `open` and `land` transactions.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct TxnPlan {
    action: String,
    train: String,
    observed: Observed,
    branch: String,
    #[serde(default)]
    ref_state: Option<String>,
    #[serde(default)]
    pr: Option<u64>,
    #[serde(default)]
    head_sha: Option<String>,
    #[serde(default)]
    gates: Vec<Gate>,
    #[serde(default)]
    body_digest: Option<String>,
}

// ---------------------------------------------------------------------------------------
// plan

fn run_plan(ctx: &Ctx, req: PlanRequest) -> Result<Outcome<PlanResponse>, Error> {
    if let Some(r) = train_policy::publication(req.tag.as_deref()) {
        return Ok(Outcome::Refused(r));
    }
    let slug = project_slug(ctx, &req.project)?;
    if let Some(r) = method_refusal(&req.method)? {
        return Ok(Outcome::Refused(r));
    }
    let (client, repo) = match github_for(ctx, "release-train plan", req.max_api_calls)? {
        Ok(x) => x,
        Err(out) => return Ok(out),
    };
    if let Some(r) = landing_refusal(ctx, &slug)? {
        return Ok(Outcome::Refused(r));
    }
    let observed = match observe(
        &client,
        &slug,
        &repo,
        &req.source,
        &req.target,
        req.sha.as_deref(),
        &req.method,
    ) {
        Ok(Ok(o)) => o,
        Ok(Err(r)) => return Ok(Outcome::Refused(r)),
        Err(e) => return call_failure(&e, &format!("planning a train in {repo}")),
    };
    let digest = digest_of(&observed)?;
    let noop = observed.compare.status == "identical";
    Ok(Outcome::Done(PlanResponse {
        train_id: None,
        status: if noop { "noop" } else { "ready" },
        next_action: if noop {
            format!(
                "nothing to do: `{}` already is {}",
                observed.target,
                short(&observed.sha)
            )
        } else {
            format!(
                "dacli release-train open --project {slug} --source {} --target {} --sha {}",
                observed.source, observed.target, observed.sha
            )
        },
        notices: observed
            .commits_cut
            .iter()
            .map(|why| {
                Notice::new(
                    "commits_cut",
                    format!(
                        "{} of {} commits listed: {why}",
                        observed.commits.len(),
                        observed.compare.ahead_by
                    ),
                )
            })
            .collect(),
        observed,
        plan_digest: digest,
    }))
}

/// The linked repository and a client, or the outcome that stops the command.
fn github_for<'c, T>(
    ctx: &'c Ctx<'c>,
    command: &str,
    calls: u32,
) -> Result<Result<(Session<'c>, String), Outcome<T>>, Error> {
    let link = link_of(ctx)?;
    let Some(repo) = link.repo.clone() else {
        return Ok(Err(Outcome::Refused(unlinked(command))));
    };
    let (client, _) = connect(ctx, &link.api_url, calls.max(1))?;
    match client {
        Ok(c) => Ok(Ok((c, repo))),
        Err(p) => access_failure(&p, &format!("{command} on {repo}")).map(Err),
    }
}

/// `train.landing_local`: a train is a GitHub landing, so the project must land by PR.
fn landing_refusal(ctx: &Ctx, slug: &str) -> Result<Option<Refusal>, Error> {
    let ws = ctx.ws()?;
    let doc = crate::objects::read_document(ws, &ws.path(&["projects", slug, "project.md"]))?;
    let mode = doc
        .front
        .get("landing")
        .and_then(|l| l.get("mode"))
        .and_then(|m| m.as_str())
        .map(str::to_string)
        .or_else(|| {
            ws.config
                .doc
                .get("landing")
                .and_then(|l| l.get("mode"))
                .and_then(|m| m.as_str())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "local".into());
    if mode == "pr" {
        return Ok(None);
    }
    Ok(Some(Refusal::new(
        "train.landing_local",
        format!(
            "project {slug} lands locally (landing mode `{mode}`), and a release train is a GitHub landing"
        ),
        format!(
            "Ask the project's owner to switch it: `dacli project edit {slug} --landing-mode pr`, or promote the commit by hand."
        ),
    )))
}

/// Observes a promotion: the commit, that it is on the source, and how the target relates.
fn observe(
    client: &Client,
    slug: &str,
    repo: &str,
    source: &str,
    target: &str,
    sha: Option<&str>,
    method: &str,
) -> Result<Result<Observed, Refusal>, CallError> {
    let sha = match sha {
        Some(s) => s.to_string(),
        None => {
            let b = client.get(&format!("/repos/{repo}/branches/{}", encode(source)))?;
            str_at(&b, &["commit", "sha"])
                .unwrap_or_default()
                .to_string()
        }
    };
    let on_source = client.get(&format!("/repos/{repo}/compare/{source}...{sha}"))?;
    if !matches!(
        str_at(&on_source, &["status"]),
        Some("behind" | "identical")
    ) {
        return Ok(Err(Refusal::new(
            "train.sha_not_on_source",
            format!(
                "{sha} is not on `{source}` (compare says `{}`)",
                str_at(&on_source, &["status"]).unwrap_or("unknown")
            ),
            format!(
                "Pick a commit of `{source}`: `dacli release-train plan --project {slug} --source {source} --target {target}` takes its tip."
            ),
        )));
    }
    let target_branch = client.get(&format!("/repos/{repo}/branches/{}", encode(target)))?;
    let target_before = str_at(&target_branch, &["commit", "sha"])
        .unwrap_or_default()
        .to_string();
    // The comparison lists its commits 100 a page along `Link` (without paging parameters
    // GitHub stops at 250 silently); every page is read within the budget.
    let route = format!("/repos/{repo}/compare/{target}...{sha}?per_page=100");
    let first = client.send(Method::Get, &route, None)?;
    if !first.is_success() {
        return Err(crate::github::failure(&first, &format!("GET {route}")));
    }
    let mut listed: Vec<Value> = first
        .body
        .get("commits")
        .and_then(|c| c.as_array())
        .cloned()
        .unwrap_or_default();
    let mut commits_cut = None;
    let mut page = first.clone();
    while let Some(next) = client.next_page(&page) {
        match next {
            Ok(r) => {
                listed.extend(
                    r.body
                        .get("commits")
                        .and_then(|c| c.as_array())
                        .cloned()
                        .unwrap_or_default(),
                );
                page = r;
            }
            Err(e) => {
                commits_cut = Some(e.to_string());
                break;
            }
        }
    }
    let cmp = first.body;
    let ahead_by = u64_at(&cmp, &["ahead_by"]).unwrap_or(0);
    if commits_cut.is_none() && (listed.len() as u64) < ahead_by {
        commits_cut = Some(format!(
            "GitHub listed {} of the {ahead_by} commits",
            listed.len()
        ));
    }
    let status = str_at(&cmp, &["status"]).unwrap_or("unknown").to_string();
    if status == "behind" {
        return Ok(Err(Refusal::new(
            "train.sha_on_target",
            format!("`{target}` already contains {sha}"),
            format!("Nothing to promote; plan a newer commit of `{source}`."),
        )));
    }
    if status == "diverged" && method == "fast_forward" {
        return Ok(Err(Refusal::new(
            "train.ff_rejected",
            format!(
                "`{target}` has commits {} lacks, so it cannot fast-forward to it",
                short(&sha)
            ),
            "Use `--method merge`.",
        )));
    }
    let commits: Vec<CommitLine> = listed
        .iter()
        .map(|c| CommitLine {
            sha: str_at(c, &["sha"]).unwrap_or_default().to_string(),
            subject: str_at(c, &["commit", "message"])
                .unwrap_or_default()
                .lines()
                .next()
                .unwrap_or_default()
                .to_string(),
        })
        .collect();
    let mut included_prs: Vec<u64> = commits
        .iter()
        .filter_map(|c| train_policy::pr_number(&c.subject))
        .collect();
    included_prs.sort_unstable();
    included_prs.dedup();
    Ok(Ok(Observed {
        project: format!("p-{slug}"),
        repo: repo.to_string(),
        source: source.to_string(),
        target: target.to_string(),
        sha,
        method: method.to_string(),
        compare: Compare {
            status,
            ahead_by,
            behind_by: u64_at(&cmp, &["behind_by"]).unwrap_or(0),
            merge_base: str_at(&cmp, &["merge_base_commit", "sha"]).map(str::to_string),
        },
        target_before,
        commits,
        commits_cut,
        included_prs,
    }))
}

// ---------------------------------------------------------------------------------------
// the train file (FORMAT §19.1)

use crate::ops::train::TrainFile;

fn load_train(ctx: &Ctx, id: &str) -> Result<TrainFile, Error> {
    Ok(ops::train::load(ctx.ws()?, id)?)
}

/// Creates a train record (create-new, keys in field-table order).
fn create_train(ctx: &Ctx, o: &Observed, txn: &str) -> Result<TrainFile, Error> {
    let ws = ctx.ws()?;
    let ulid = ctx.new_ulid();
    let me = ctx.identity()?.agent.id.clone();
    let new = ops::train::NewTrain {
        project: &o.project,
        repo: &o.repo,
        source: &o.source,
        target: &o.target,
        sha: &o.sha,
        method: &o.method,
        target_before: &o.target_before,
        txn,
    };
    ops::train::create(ws, ulid, &me, &new)?
        .ok_or_else(|| Error::internal("a created train does not parse"))
}

/// Rewrites a train under its lock with a fresh `rev` (only the owner's runs get here).
fn update_train(
    ctx: &Ctx,
    id: &str,
    edit: impl FnOnce(&mut DocumentMut),
) -> Result<TrainFile, Error> {
    ops::train::update(ctx.ws()?, id, &|| ctx.new_ulid(), edit)?
        .ok_or_else(|| Error::internal("an updated train does not parse"))
}

fn train_observed(t: &TrainFile) -> Observed {
    Observed {
        project: t.project.clone(),
        repo: t.repo.clone(),
        source: t.source.clone(),
        target: t.target.clone(),
        sha: t.sha.clone(),
        method: t.method.clone(),
        compare: Compare {
            status: String::new(),
            ahead_by: 0,
            behind_by: 0,
            merge_base: None,
        },
        target_before: t.target_before.clone().unwrap_or_default(),
        commits: Vec::new(),
        commits_cut: None,
        included_prs: Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------
// open

fn branch_of(target: &str, sha: &str) -> String {
    format!("dacli/train/{target}/{}", short(sha))
}

fn run_open(ctx: &Ctx, req: OpenRequest) -> Result<Outcome<TrainResponse>, Error> {
    if let Some(r) = method_refusal(&req.method)? {
        return Ok(Outcome::Refused(r));
    }
    let existing = match &req.train {
        Some(id) => Some(load_train(ctx, id)?),
        None => None,
    };
    let (slug, source, target, sha, method) = match &existing {
        Some(t) => (
            t.project.trim_start_matches("p-").to_string(),
            t.source.clone(),
            t.target.clone(),
            t.sha.clone(),
            t.method.clone(),
        ),
        None => {
            let (Some(p), Some(s), Some(t), Some(sha)) =
                (&req.project, &req.source, &req.target, &req.sha)
            else {
                return Err(Error::usage(
                    "give TRAIN, or all of `--project`, `--source`, `--target` and `--sha`",
                ));
            };
            (
                project_slug(ctx, p)?,
                s.clone(),
                t.clone(),
                sha.clone(),
                req.method.clone(),
            )
        }
    };
    let command = match &req.train {
        Some(id) => format!("release-train open {id}"),
        None => format!(
            "release-train open --project {slug} --source {source} --target {target} --sha {sha}"
        ),
    };
    let how = start(
        ctx,
        ApplyArgs {
            command: &command,
            tool: TOOL,
            apply: req.apply,
            digest: req.digest.as_deref(),
            txn: None,
        },
    )?;
    if let Start::Refused(r) = how {
        return Ok(Outcome::Refused(r));
    }
    let (client, repo) = match github_for(ctx, "release-train open", req.max_api_calls)? {
        Ok(x) => x,
        Err(out) => return Ok(out),
    };
    if let Some(r) = landing_refusal(ctx, &slug)? {
        return Ok(Outcome::Refused(r));
    }
    if let Start::Completed(txn) | Start::Resume(txn) = &how
        && let Some(out) = finish_existing(ctx, &client, txn)?
    {
        return Ok(out);
    }
    let observed = match observe(&client, &slug, &repo, &source, &target, Some(&sha), &method) {
        Ok(Ok(o)) => o,
        Ok(Err(r)) => return Ok(Outcome::Refused(r)),
        Err(e) => return call_failure(&e, &format!("observing the train in {repo}")),
    };
    let branch = branch_of(&target, &sha);
    let ref_state = match client.send(
        Method::Get,
        &format!("/repos/{repo}/git/ref/heads/{branch}"),
        None,
    ) {
        Ok(r) if r.is_success() => {
            if str_at(&r.body, &["object", "sha"]) == Some(sha.as_str()) {
                "at_sha"
            } else {
                "conflict"
            }
        }
        Ok(r) if r.status == 404 => "absent",
        Ok(r) => {
            return call_failure(
                &crate::github::failure(&r, "GET git/ref"),
                "reading the train branch",
            );
        }
        Err(e) => return call_failure(&e, "reading the train branch"),
    };
    if ref_state == "conflict" {
        return Ok(Outcome::Refused(train_policy::ref_conflict(&branch, &sha)));
    }
    let found = match find_pr(&client, &repo, &branch) {
        Ok(p) => p,
        Err(e) => return call_failure(&e, "finding the train's pull request"),
    };
    let consent = super::consent::in_effect(ctx, &slug, &repo)?;
    let visibility = match client.get(&format!("/repos/{repo}")) {
        Ok(v) => super::consent::visibility_of(&v),
        Err(e) => return call_failure(&e, &format!("reading the visibility of {repo}")),
    };
    if found.is_none()
        && let Some(gap) = disclosure::consent_gap(consent.as_ref(), &repo, &visibility)
    {
        return Ok(Outcome::Refused(Refusal::new(
            "github.no_consent",
            format!(
                "the train's PR body would go to {repo}, which is {visibility}, and no consent covers p-{slug} ({gap})"
            ),
            format!(
                "Ask the human; a-root records it: `dacli github consent grant --project {slug} --classes tasks --granted-by human:<login>`."
            ),
        )));
    }
    let ws_id = ctx.ws()?.config.workspace_id.clone();
    let body = pr_body(&observed, &ws_id);
    let plan = TxnPlan {
        action: "open_pr".into(),
        train: existing.as_ref().map(|t| t.id.clone()).unwrap_or_default(),
        branch: branch.clone(),
        ref_state: Some(ref_state.into()),
        pr: found.as_ref().and_then(|p| p.number),
        head_sha: None,
        gates: Vec::new(),
        body_digest: Some(contract::sha256_digest(body.as_bytes())),
        observed,
    };
    let digest = digest_of(&plan)?;
    if matches!(how, Start::Preview) {
        return Ok(Outcome::Done(view(
            "preview",
            &plan,
            existing.as_ref(),
            found.clone(),
            Vec::new(),
            Some(digest.clone()),
            None,
            format!("{command} --apply --digest {digest}"),
        )));
    }
    if let Some(r) = contract::drift(
        ApplyRequest {
            command: &command,
            digest: req.digest.as_deref(),
        },
        &digest,
        "the branches, the train branch or its pull request",
    ) {
        return Ok(Outcome::Refused(r));
    }
    let frozen = serde_json::to_value(&plan).map_err(|e| Error::internal(e.to_string()))?;
    let mut run = Run::begin(ctx, TOOL, &digest, frozen)?;
    let txn_id = run.txn.id().to_string();
    let train = match &existing {
        Some(t) => update_train(ctx, &t.id, |d| d["txn"] = value(txn_id.as_str()))?,
        None => create_train(ctx, &plan.observed, &txn_id)?,
    };
    open_steps(ctx, &client, &mut run, &plan, &train, &body)
}

fn pr_body(o: &Observed, ws_id: &str) -> String {
    let mut body = format!(
        "<!-- dacli-train:{}:{} ws:{ws_id} -->\nPromotes `{}` from `{}` to `{}` with a {} (never squashed, rebased, tagged or published).\n\nCommits:\n",
        o.target,
        o.sha,
        o.sha,
        o.source,
        o.target,
        if o.method == "merge" {
            "merge commit"
        } else {
            "fast-forward"
        }
    );
    for c in &o.commits {
        let subject = if disclosure::guard(&c.subject).is_empty() {
            c.subject.clone()
        } else {
            "(subject withheld)".into()
        };
        body.push_str(&format!("- {} {subject}\n", short(&c.sha)));
    }
    body
}

fn find_pr(client: &Client, repo: &str, branch: &str) -> Result<Option<CanonicalPr>, CallError> {
    let owner = repo.split('/').next().unwrap_or_default();
    let list = client.get(&format!(
        "/repos/{repo}/pulls?head={}&state=all&per_page=100",
        encode(&format!("{owner}:{branch}"))
    ))?;
    Ok(list
        .as_array()
        .into_iter()
        .flatten()
        .max_by_key(|p| {
            (
                str_at(p, &["state"]) == Some("open"),
                u64_at(p, &["number"]),
            )
        })
        .map(|p| CanonicalPr {
            number: u64_at(p, &["number"]),
            url: str_at(p, &["html_url"]).map(str::to_string),
            state: Some(if p.get("merged_at").is_some_and(|m| !m.is_null()) {
                "merged".to_string()
            } else {
                str_at(p, &["state"]).unwrap_or("open").to_string()
            }),
            head_sha: str_at(p, &["head", "sha"]).map(str::to_string),
            branch: branch.to_string(),
        }))
}

/// `train_ref_created → pr_opened`, each re-observing before it acts.
fn open_steps(
    ctx: &Ctx,
    client: &super::Session<'_>,
    run: &mut Run<'_, '_>,
    plan: &TxnPlan,
    train: &TrainFile,
    body: &str,
) -> Result<Outcome<TrainResponse>, Error> {
    let repo = &plan.observed.repo;
    let sha = &plan.observed.sha;
    let branch = &plan.branch;
    if run.txn.status_of("train_ref_created") != Some(StepStatus::Done) {
        client.phase(format!("{repo}: creating the train's branch {branch}"));
        run.step(
            "train_ref_created",
            StepStatus::Started,
            json!({"ref": format!("refs/heads/{branch}"), "expect": "absent"}),
            Value::Null,
        )?;
        let created = client.send(
            Method::Post,
            &format!("/repos/{repo}/git/refs"),
            Some(&json!({"ref": format!("refs/heads/{branch}"), "sha": sha})),
        );
        let ok = match created {
            Ok(r) if r.is_success() => true,
            Ok(r) if r.status == 422 => {
                match client.get(&format!("/repos/{repo}/git/ref/heads/{branch}")) {
                    Ok(v) => str_at(&v, &["object", "sha"]) == Some(sha.as_str()),
                    Err(e) => return stop(run, "train_ref_created", &e),
                }
            }
            Ok(r) => {
                return stop(
                    run,
                    "train_ref_created",
                    &crate::github::failure(&r, "POST git/refs"),
                );
            }
            Err(e) => return stop(run, "train_ref_created", &e),
        };
        if !ok {
            run.step(
                "train_ref_created",
                StepStatus::Failed,
                Value::Null,
                json!({"conflict": true}),
            )?;
            run.finish(TxnOutcome::Refused, Value::Null)?;
            return Ok(Outcome::Refused(train_policy::ref_conflict(branch, sha)));
        }
        run.step(
            "train_ref_created",
            StepStatus::Done,
            Value::Null,
            json!({"sha": sha}),
        )?;
    }
    let pr = if let Some(found) = find_pr(client, repo, branch).map_err(|e| call_err(&e))? {
        found
    } else {
        client.phase(format!("{repo}: opening the train's pull request"));
        run.step(
            "pr_opened",
            StepStatus::Started,
            json!({"head": branch}),
            Value::Null,
        )?;
        let title = format!(
            "Release train: {} → {} at {}",
            plan.observed.source,
            plan.observed.target,
            short(sha)
        );
        match client.send(
            Method::Post,
            &format!("/repos/{repo}/pulls"),
            Some(&json!({"title": title, "head": branch, "base": plan.observed.target, "body": body})),
        ) {
            Ok(r) if r.is_success() => CanonicalPr {
                number: u64_at(&r.body, &["number"]),
                url: str_at(&r.body, &["html_url"]).map(str::to_string),
                state: Some("open".into()),
                head_sha: str_at(&r.body, &["head", "sha"]).map(str::to_string).or(Some(sha.clone())),
                branch: branch.clone(),
            },
            Ok(r) if r.status == 422 => match find_pr(client, repo, branch) {
                Ok(Some(p)) => p,
                Ok(None) => return stop(run, "pr_opened", &crate::github::failure(&r, "POST pulls")),
                Err(e) => return stop(run, "pr_opened", &e),
            },
            Ok(r) => return stop(run, "pr_opened", &crate::github::failure(&r, "POST pulls")),
            Err(e) => return stop(run, "pr_opened", &e),
        }
    };
    let number = pr.number.unwrap_or(0);
    let head = pr.head_sha.clone().unwrap_or_default();
    run.step(
        "pr_opened",
        StepStatus::Done,
        Value::Null,
        json!({"number": number, "head_sha": head}),
    )?;
    let t = update_train(ctx, &train.id, |d| {
        d["state"] = value("pr_open");
        let mut p = InlineTable::new();
        p.insert("number", (number as i64).into());
        p.insert("head_sha", head.as_str().into());
        d["pr"] = value(p);
    })?;
    run.finish(TxnOutcome::Completed, json!({"pr": number}))?;
    let steps = steps_of(&run.txn);
    let digest = run.txn.plan_digest().to_string();
    Ok(Outcome::Done(view(
        "apply",
        plan,
        Some(&t),
        Some(pr),
        steps,
        Some(digest),
        Some(run.txn.id().to_string()),
        format!(
            "dacli release-train land {} (preview the gates first)",
            t.id
        ),
    )))
}

fn call_err(e: &CallError) -> Error {
    Error::new(ErrorKind::Operational, "E_GITHUB_ACCESS", e.to_string())
}

/// A remote step failed: record it, leave the transaction open for `resume`, and report.
fn stop<T>(run: &mut Run<'_, '_>, step: &str, e: &CallError) -> Result<Outcome<T>, Error> {
    run.step(
        step,
        StepStatus::Failed,
        Value::Null,
        json!({"problem": as_problem(e).kind()}),
    )?;
    call_failure(
        e,
        &format!(
            "step `{step}` of transaction {} (resume it with `dacli release-train resume`)",
            run.txn.id()
        ),
    )
}

fn steps_of(txn: &Txn) -> Vec<StepView> {
    txn.steps()
        .iter()
        .map(|s| StepView {
            step: s.step.clone(),
            status: s.status.as_str().into(),
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn view(
    mode: &'static str,
    plan: &TxnPlan,
    train: Option<&TrainFile>,
    pr: Option<CanonicalPr>,
    steps: Vec<StepView>,
    digest: Option<String>,
    txn: Option<String>,
    next_action: String,
) -> TrainResponse {
    let o = &plan.observed;
    TrainResponse {
        mode,
        train_id: train.map(|t| t.id.clone()),
        project: o.project.clone(),
        repo: o.repo.clone(),
        source: o.source.clone(),
        target: o.target.clone(),
        sha: o.sha.clone(),
        method: o.method.clone(),
        state: train.map_or("planned".into(), |t| t.state.clone()),
        canonical_pr: pr.or_else(|| {
            Some(CanonicalPr {
                number: plan.pr,
                url: None,
                state: None,
                head_sha: plan.head_sha.clone(),
                branch: plan.branch.clone(),
            })
        }),
        gates: plan.gates.clone(),
        steps,
        outcome: train.and_then(|t| {
            t.merge_commit.as_ref().map(|m| LandOutcome {
                target_before: t.target_before.clone().unwrap_or_default(),
                target_after: t.target_after.clone(),
                merge_commit_sha: Some(m.clone()),
            })
        }),
        next_action,
        plan_digest: digest,
        txn,
        evidence: Vec::new(),
        already_applied: false,
    }
}

/// A transaction of this digest already exists: return it when completed, finish it when
/// open (the same as `resume`).
fn finish_existing(
    ctx: &Ctx,
    client: &super::Session<'_>,
    txn: &Txn,
) -> Result<Option<Outcome<TrainResponse>>, Error> {
    let plan: TxnPlan = frozen(txn)?;
    let train_id = train_of_txn(ctx, &txn.id().to_string())?;
    let train = match &train_id {
        Some(id) => Some(load_train(ctx, id)?),
        None => None,
    };
    if txn.outcome().is_some() {
        let mut v = view(
            "apply",
            &plan,
            train.as_ref(),
            None,
            steps_of(txn),
            Some(txn.plan_digest().to_string()),
            Some(txn.id().to_string()),
            "nothing: this plan was applied already".into(),
        );
        v.already_applied = true;
        return Ok(Some(Outcome::Done(v)));
    }
    let Some(train) = train else {
        return Ok(None);
    };
    let mut run = Run::resume(ctx, txn)?;
    Ok(Some(match plan.action.as_str() {
        "land" => land_steps(ctx, client, &mut run, &plan, &train)?,
        _ => {
            let body = pr_body(&plan.observed, &ctx.ws()?.config.workspace_id);
            open_steps(ctx, client, &mut run, &plan, &train, &body)?
        }
    }))
}

fn train_of_txn(ctx: &Ctx, txn: &str) -> Result<Option<String>, Error> {
    Ok(list_trains(ctx)?
        .into_iter()
        .find(|t| t.txn.as_deref() == Some(txn))
        .map(|t| t.id))
}

fn list_trains(ctx: &Ctx) -> Result<Vec<TrainFile>, Error> {
    let (trains, warnings) = ops::train::list(ctx.ws()?)?;
    ctx.warn_all(warnings);
    Ok(trains)
}

// ---------------------------------------------------------------------------------------
// land

fn run_land(ctx: &Ctx, req: LandRequest) -> Result<Outcome<TrainResponse>, Error> {
    let train = load_train(ctx, &req.train)?;
    let slug = train.project.trim_start_matches("p-").to_string();
    let command = format!("release-train land {}", train.id);
    let how = start(
        ctx,
        ApplyArgs {
            command: &command,
            tool: TOOL,
            apply: req.apply,
            digest: req.digest.as_deref(),
            txn: None,
        },
    )?;
    if let Start::Refused(r) = how {
        return Ok(Outcome::Refused(r));
    }
    if let Some(r) = method_refusal(&train.method)? {
        return Ok(Outcome::Refused(r));
    }
    if let Some(r) = landing_refusal(ctx, &slug)? {
        return Ok(Outcome::Refused(r));
    }
    if req.apply
        && let Some(r) = authority_refusal(ctx, &slug)?
    {
        return Ok(Outcome::Refused(r));
    }
    let (client, repo) = match github_for(ctx, "release-train land", req.max_api_calls)? {
        Ok(x) => x,
        Err(out) => return Ok(out),
    };
    if let Start::Completed(txn) | Start::Resume(txn) = &how
        && let Some(out) = finish_existing(ctx, &client, txn)?
    {
        return Ok(out);
    }
    let Some((number, _)) = train.pr.clone() else {
        return Err(
            Error::usage(format!("train {} has no pull request yet", train.id)).hint(format!(
                "open it first: `dacli release-train open {}`",
                train.id
            )),
        );
    };
    let pr_json = match client.get(&format!("/repos/{repo}/pulls/{number}")) {
        Ok(v) => v,
        Err(e) => return call_failure(&e, &format!("reading the train's pull request #{number}")),
    };
    let target_now = match client.get(&format!("/repos/{repo}/branches/{}", encode(&train.target)))
    {
        Ok(b) => str_at(&b, &["commit", "sha"])
            .unwrap_or_default()
            .to_string(),
        Err(e) => return call_failure(&e, "reading the target branch"),
    };
    let include = [
        "checks",
        "statuses",
        "workflows",
        "jobs",
        "reviews",
        "requirements",
    ]
    .into_iter()
    .collect();
    let d = diagnose::observe(&client, &repo, &pr_json, &include, 0);
    let gates = gates(ctx, &slug, &train, &d, &target_now)?;
    let mut observed = train_observed(&train);
    observed.target_before = train.target_before.clone().unwrap_or_default();
    let plan = TxnPlan {
        action: "land".into(),
        train: train.id.clone(),
        observed,
        branch: branch_of(&train.target, &train.sha),
        ref_state: None,
        pr: Some(number),
        head_sha: Some(d.pr.head_sha.clone()),
        gates: gates.clone(),
        body_digest: None,
    };
    let digest = digest_of(&plan)?;
    let pr_view = CanonicalPr {
        number: Some(number),
        url: Some(d.pr.url.clone()),
        state: Some(d.pr.state.clone()),
        head_sha: Some(d.pr.head_sha.clone()),
        branch: plan.branch.clone(),
    };
    let failing = gates.iter().find(|g| g.result != "pass");
    if matches!(how, Start::Preview) {
        let next = match failing {
            Some(g) => format!("gate `{}` is {}: {}", g.gate, g.result, g.detail),
            None => format!("{command} --apply --digest {digest}"),
        };
        return Ok(Outcome::Done(view(
            "preview",
            &plan,
            Some(&train),
            Some(pr_view),
            Vec::new(),
            Some(digest),
            None,
            next,
        )));
    }
    if let Some(r) = contract::drift(
        ApplyRequest {
            command: &command,
            digest: req.digest.as_deref(),
        },
        &digest,
        "the pull request, its checks or reviews, or the target branch",
    ) {
        return Ok(Outcome::Refused(r));
    }
    if let Some(g) = failing {
        return Ok(Outcome::Refused(gate_refusal(g, number, &d)));
    }
    let frozen = serde_json::to_value(&plan).map_err(|e| Error::internal(e.to_string()))?;
    let mut run = Run::begin(ctx, TOOL, &digest, frozen)?;
    let txn_id = run.txn.id().to_string();
    let train = update_train(ctx, &train.id, |d| {
        d["txn"] = toml_edit::value(txn_id.as_str())
    })?;
    run.step(
        "gates_evaluated",
        StepStatus::Done,
        Value::Null,
        json!({"gates": gates.len()}),
    )?;
    land_steps(ctx, &client, &mut run, &plan, &train)
}

/// The merge-authority gate: the caller must be listed in the project's `merge_authority`.
fn authority_refusal(ctx: &Ctx, slug: &str) -> Result<Option<Refusal>, Error> {
    let me = ctx.identity()?.agent.id.clone();
    let list = project_list(ctx, slug, &["merge_authority"])?;
    Ok(train_policy::authority(&me, slug, &list))
}

/// A merge method the train may use; one it does not know is a usage error.
fn method_refusal(method: &str) -> Result<Option<Refusal>, Error> {
    train_policy::method(method).map_err(Error::usage)
}

fn gates(
    ctx: &Ctx,
    slug: &str,
    train: &TrainFile,
    d: &Diagnosis,
    target_now: &str,
) -> Result<Vec<Gate>, Error> {
    let g = |gate: &str, result: &str, detail: String| Gate {
        gate: gate.into(),
        result: result.into(),
        detail,
    };
    let mut out = Vec::new();
    out.push(if d.pr.head_sha == train.sha {
        g(
            "head_pinned",
            "pass",
            format!("the PR head is {}", short(&train.sha)),
        )
    } else {
        g(
            "head_pinned",
            "fail",
            format!(
                "the PR head moved to {}, the train promotes {}",
                short(&d.pr.head_sha),
                short(&train.sha)
            ),
        )
    });
    let before = train.target_before.clone().unwrap_or_default();
    out.push(if target_now == before {
        g(
            "target_unchanged",
            "pass",
            format!("`{}` is still {}", train.target, short(&before)),
        )
    } else {
        g(
            "target_unchanged",
            "fail",
            format!(
                "`{}` moved from {} to {}",
                train.target,
                short(&before),
                short(target_now)
            ),
        )
    });
    out.push(checks_gate(d));
    let required = d
        .requirements
        .as_ref()
        .map_or(0, |r| r.required_approvals)
        .max(1);
    let fresh = fresh_approvals(&d.reviews, &train.sha);
    let changes = d.pr.review_decision == "changes_requested";
    out.push(if d.problem.is_some() && !d.reviews_read {
        g("reviews", "unknown", "the reviews could not be read".into())
    } else if changes {
        g("reviews", "fail", "changes are requested".into())
    } else if fresh >= required {
        g(
            "reviews",
            "pass",
            format!("{fresh} approval(s) of {} ≥ {required}", short(&train.sha)),
        )
    } else {
        g(
            "reviews",
            "fail",
            format!(
                "{fresh} fresh approval(s) of {}, {required} needed",
                short(&train.sha)
            ),
        )
    });
    let authority = project_list(ctx, slug, &["merge_authority"])?;
    let me = ctx.identity()?.agent.id.clone();
    out.push(if authority.contains(&me) {
        g(
            "merge_authority",
            "pass",
            format!("{me} is in merge_authority"),
        )
    } else {
        g(
            "merge_authority",
            "fail",
            format!("{me} is not in merge_authority"),
        )
    });
    out.push(g(
        "landing_policy",
        "pass",
        "the project lands by pull request".into(),
    ));
    out.push(match &d.requirements {
        Some(r) if r.merge_queue => g(
            "merge_queue",
            "fail",
            format!("`{}` requires a merge queue", train.target),
        ),
        Some(r) if r.rulesets_problem.is_some() => g(
            "merge_queue",
            "unknown",
            format!(
                "the rulesets of `{}` could not be read, so a merge queue cannot be ruled out",
                train.target
            ),
        ),
        Some(r) if r.source == "unreadable" => g(
            "merge_queue",
            "pass",
            "the rulesets name no merge queue".into(),
        ),
        Some(_) => g("merge_queue", "pass", "no merge queue".into()),
        None => g(
            "merge_queue",
            "unknown",
            "the branch rules could not be read".into(),
        ),
    });
    Ok(out)
}

fn checks_gate(d: &Diagnosis) -> Gate {
    let g = |result: &str, detail: String| Gate {
        gate: "checks".into(),
        result: result.into(),
        detail,
    };
    if d.problem.is_some() && !d.checks_read {
        return g("unknown", "the checks could not be read".into());
    }
    let Some(req) = &d.requirements else {
        return g("unknown", "the branch rules could not be read".into());
    };
    let failing: Vec<&str> = d
        .checks
        .iter()
        .filter(|c| {
            (c.required || req.source == "unreadable")
                && matches!(c.class, "fail" | "infra" | "needs_human" | "stale")
        })
        .map(|c| c.name.as_str())
        .collect();
    if !failing.is_empty() {
        return g("fail", format!("failing: {}", failing.join(", ")));
    }
    if req.rulesets_problem.is_some() {
        return g(
            "unknown",
            "the rulesets could not be read, so a check only they require may be missing".into(),
        );
    }
    if !d.missing_required.is_empty() {
        return g(
            "fail",
            format!("missing: {}", d.missing_required.join(", ")),
        );
    }
    let pending: Vec<&str> = d
        .checks
        .iter()
        .filter(|c| (c.required || req.source == "unreadable") && c.class == "pending")
        .map(|c| c.name.as_str())
        .collect();
    if !pending.is_empty() {
        return g("pending", format!("pending: {}", pending.join(", ")));
    }
    if d.checks.is_empty() {
        return g(
            "fail",
            "no check ran on the commit: absent checks are never green".into(),
        );
    }
    g(
        "pass",
        format!("{} check(s) green at the commit", d.checks.len()),
    )
}

fn gate_refusal(gate: &Gate, number: u64, d: &Diagnosis) -> Refusal {
    let diag = format!("the next_actions of `dacli pr diagnose --pr {number}`");
    let (policy, next) = match (gate.gate.as_str(), gate.result.as_str()) {
        (_, "unknown") => (
            "github.access",
            d.problem
                .as_ref()
                .or(d.requirements.as_ref().and_then(|r| r.rulesets_problem.as_ref()))
                .map_or("Fix GitHub access and preview again.".into(), |p| p.remedy()),
        ),
        ("head_pinned", _) => ("train.head_moved", "The train promotes its commit only: close this PR or open a new train for the new head (`dacli release-train plan`).".to_string()),
        ("target_unchanged", _) => ("plan.drifted", "Preview the landing again and review the new plan.".to_string()),
        ("checks", "pending") => ("gate.checks_pending", format!("Wait for the checks, then preview again; see {diag}.")),
        ("checks", _) if gate.detail.starts_with("missing") || gate.detail.starts_with("no check") => {
            ("gate.checks_missing", format!("Trigger the missing checks; see {diag}."))
        }
        ("checks", _) => ("gate.checks_failing", format!("Fix or rerun the failing checks; see {diag}.")),
        ("reviews", _) if gate.detail.contains("requested") => ("gate.reviews_insufficient", format!("Address the requested changes; see {diag}.")),
        ("reviews", _) => ("gate.review_stale", format!("Request a review of the exact commit; see {diag}.")),
        ("merge_authority", _) => ("merge.no_authority", "Ask one of the project's merge_authority to land it.".to_string()),
        ("merge_queue", _) => ("gate.merge_queue_required", "Land it through the merge queue; dacli does not enqueue in v1.".to_string()),
        _ => ("gate.not_mergeable", format!("See {diag}.")),
    };
    Refusal::new(
        policy,
        format!("gate `{}` is {}: {}", gate.gate, gate.result, gate.detail),
        next,
    )
}

/// `merged → verified`: merge with the SHA guard (or fast-forward), then prove the commit is
/// on the target.
fn land_steps(
    ctx: &Ctx,
    client: &super::Session<'_>,
    run: &mut Run<'_, '_>,
    plan: &TxnPlan,
    train: &TrainFile,
) -> Result<Outcome<TrainResponse>, Error> {
    let repo = &plan.observed.repo;
    let sha = &plan.observed.sha;
    let target = &plan.observed.target;
    let number = plan.pr.unwrap_or(0);
    let mut merge_commit = run
        .txn
        .latest("merged")
        .filter(|s| s.status == StepStatus::Done)
        .and_then(|s| {
            s.observed
                .get("merge_commit")
                .and_then(|m| m.as_str())
                .map(str::to_string)
        });
    if merge_commit.is_none() {
        client.phase(format!(
            "{repo}: landing #{number} at {}",
            &sha[..sha.len().min(12)]
        ));
        // Re-observe: an interrupted merge may have happened.
        if let Ok(p) = client.get(&format!("/repos/{repo}/pulls/{number}"))
            && p.get("merged").and_then(|m| m.as_bool()) == Some(true)
        {
            merge_commit = str_at(&p, &["merge_commit_sha"]).map(str::to_string);
        }
    }
    if merge_commit.is_none() {
        run.step(
            "merged",
            StepStatus::Started,
            json!({"sha": sha}),
            Value::Null,
        )?;
        let answer = if plan.observed.method == "fast_forward" {
            client.send(
                Method::Patch,
                &format!("/repos/{repo}/git/refs/heads/{target}"),
                Some(&json!({"sha": sha, "force": false})),
            )
        } else {
            client.send(
                Method::Put,
                &format!("/repos/{repo}/pulls/{number}/merge"),
                Some(&json!({"sha": sha, "merge_method": "merge"})),
            )
        };
        let reply = match answer {
            Ok(r) => r,
            Err(e) => return stop(run, "merged", &e),
        };
        if !reply.is_success() {
            let refusal = match reply.status {
                409 => Some(Refusal::new(
                    "train.head_moved",
                    format!(
                        "GitHub refused the merge of #{number} with 409: its head is no longer {}",
                        short(sha)
                    ),
                    "The train promotes its commit only: plan a new train for the new head (`dacli release-train plan`).",
                )),
                405 => Some(Refusal::new(
                    "gate.not_mergeable",
                    format!("GitHub refused the merge of #{number} with 405: not mergeable"),
                    format!("Follow the next_actions of `dacli pr diagnose --pr {number}`."),
                )),
                422 if plan.observed.method == "fast_forward" => Some(Refusal::new(
                    "train.ff_rejected",
                    format!(
                        "GitHub refused to fast-forward `{target}` to {}",
                        short(sha)
                    ),
                    "Land with `--method merge` in a new train.",
                )),
                _ => None,
            };
            let Some(r) = refusal else {
                return stop(run, "merged", &crate::github::failure(&reply, "merge"));
            };
            run.step(
                "merged",
                StepStatus::Failed,
                Value::Null,
                json!({"status": reply.status}),
            )?;
            run.finish(TxnOutcome::Refused, json!({"policy": r.policy}))?;
            update_train(ctx, &train.id, |d| d["state"] = value("failed"))?;
            return Ok(Outcome::Refused(r));
        }
        merge_commit = str_at(&reply.body, &["sha"])
            .map(str::to_string)
            .or_else(|| str_at(&reply.body, &["object", "sha"]).map(str::to_string));
        run.step(
            "merged",
            StepStatus::Done,
            Value::Null,
            json!({"merge_commit": merge_commit.clone().unwrap_or_default()}),
        )?;
    }
    let after = client
        .get(&format!("/repos/{repo}/branches/{}", encode(target)))
        .ok()
        .and_then(|b| str_at(&b, &["commit", "sha"]).map(str::to_string));
    let verified = match client.get(&format!("/repos/{repo}/compare/{sha}...{target}")) {
        Ok(c) => matches!(str_at(&c, &["status"]), Some("ahead" | "identical")),
        Err(_) => false,
    };
    run.step(
        "verified",
        if verified {
            StepStatus::Done
        } else {
            StepStatus::Failed
        },
        json!({"contains": sha}),
        json!({"target_after": after.clone().unwrap_or_default()}),
    )?;
    let state = if verified { "verified" } else { "merged" };
    let t = update_train(ctx, &train.id, |d| {
        d["state"] = value(state);
        if let Some(a) = &after {
            d["target_after"] = value(a.as_str());
        }
        if let Some(m) = &merge_commit {
            d["merge_commit"] = value(m.as_str());
        }
    })?;
    let ev = write_evidence(ctx, run, plan, &t, verified)?;
    run.finish(
        if verified {
            TxnOutcome::Completed
        } else {
            TxnOutcome::Partial
        },
        json!({"evidence": ev}),
    )?;
    let mut v = view(
        "apply",
        plan,
        Some(&t),
        None,
        steps_of(&run.txn),
        Some(run.txn.plan_digest().to_string()),
        Some(run.txn.id().to_string()),
        if verified {
            "nothing: the commit is on the target (dacli never tags or publishes)".into()
        } else {
            format!(
                "the merge happened but {} is not yet seen on `{target}`: `dacli release-train status {}`",
                short(sha),
                t.id
            )
        },
    );
    v.evidence.push(ev);
    Ok(Outcome::Done(v))
}

fn write_evidence(
    ctx: &Ctx,
    run: &Run<'_, '_>,
    plan: &TxnPlan,
    t: &TrainFile,
    verified: bool,
) -> Result<String, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?;
    let mut items: Vec<EvidenceItem> = plan
        .gates
        .iter()
        .map(|g| EvidenceItem {
            subject: g.gate.clone(),
            action: "gate".into(),
            result: "done".into(),
            before: None,
            after: None,
            reasons: vec![g.result.clone()],
        })
        .collect();
    items.push(EvidenceItem {
        subject: format!("refs/heads/{}", t.target),
        action: "land".into(),
        result: if verified { "done" } else { "failed" }.into(),
        before: t.target_before.clone(),
        after: t.target_after.clone(),
        reasons: vec![t.method.clone()],
    });
    let path = crate::ops::evidence::write(
        ws,
        &Evidence {
            id: ctx.new_ulid(),
            tool: TOOL,
            created_by: &me.agent.id,
            grant: me.agent.grant,
            outcome: if verified { "completed" } else { "partial" },
            txn: Some(&run.txn.id().to_string()),
            plan_digest: Some(run.txn.plan_digest()),
            git_head: t.merge_commit.as_deref(),
            summary: vec![
                ("gates", plan.gates.len() as i64),
                ("pr", plan.pr.unwrap_or(0) as i64),
            ],
            items,
        },
    )?;
    Ok(ws.display(&path))
}

// ---------------------------------------------------------------------------------------
// resume and status

fn run_resume(ctx: &Ctx, req: ResumeRequest) -> Result<Outcome<TrainResponse>, Error> {
    let train = load_train(ctx, &req.train)?;
    let me = ctx.identity()?.agent.id.clone();
    if me != train.owner && me != crate::model::id::ROOT_AGENT {
        return Ok(Outcome::Refused(Refusal::new(
            "grant.root_required",
            format!("train {} belongs to {}", train.id, train.owner),
            format!(
                "Ask {} or a-root to run `dacli release-train resume {}`.",
                train.owner, train.id
            ),
        )));
    }
    let Some(txn_id) = train.txn.clone() else {
        return Err(Error::usage(format!(
            "train {} has no transaction to resume",
            train.id
        )));
    };
    let txn = Txn::load(ctx.ws()?, &txn_id)?.ok_or_else(|| {
        Error::not_found(format!(
            "transaction `{txn_id}` of train {} is missing",
            train.id
        ))
    })?;
    let (client, _) = match github_for(ctx, "release-train resume", req.max_api_calls)? {
        Ok(x) => x,
        Err(out) => return Ok(out),
    };
    match finish_existing(ctx, &client, &txn)? {
        Some(out) => Ok(out),
        None => Err(Error::internal("a train's transaction has no train")),
    }
}

#[derive(Debug, Serialize)]
pub struct StatusResponse {
    trains: Vec<TrainRow>,
    /// With TRAIN: its transaction's steps and the live pull request.
    steps: Vec<StepView>,
    live: Option<CanonicalPr>,
    notices: Vec<Notice>,
}

#[derive(Debug, Serialize)]
struct TrainRow {
    id: String,
    project: String,
    repo: String,
    source: String,
    target: String,
    sha: String,
    method: String,
    state: String,
    pr: Option<u64>,
    txn: Option<String>,
    merge_commit: Option<String>,
}

fn row(t: &TrainFile) -> TrainRow {
    TrainRow {
        id: t.id.clone(),
        project: t.project.clone(),
        repo: t.repo.clone(),
        source: t.source.clone(),
        target: t.target.clone(),
        sha: t.sha.clone(),
        method: t.method.clone(),
        state: t.state.clone(),
        pr: t.pr.as_ref().map(|p| p.0),
        txn: t.txn.clone(),
        merge_commit: t.merge_commit.clone(),
    }
}

fn run_status(ctx: &Ctx, req: StatusRequest) -> Result<Outcome<StatusResponse>, Error> {
    let Some(id) = req.train else {
        let trains = list_trains(ctx)?.iter().map(row).collect();
        return Ok(Outcome::Done(StatusResponse {
            trains,
            steps: Vec::new(),
            live: None,
            notices: Vec::new(),
        }));
    };
    let t = load_train(ctx, &id)?;
    let steps = match &t.txn {
        Some(x) => Txn::load(ctx.ws()?, x)?
            .map(|txn| steps_of(&txn))
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let mut notices = Vec::new();
    let mut live = None;
    if let Some((number, _)) = &t.pr {
        let link = link_of(ctx)?;
        let (client, _) = connect(ctx, &link.api_url, 2)?;
        match client.map_err(|p| p.kind().to_string()).and_then(|c| {
            c.get(&format!("/repos/{}/pulls/{number}", t.repo))
                .map_err(|e| as_problem(&e).kind().to_string())
        }) {
            Ok(p) => {
                let pr = diagnose::parse_pr(&p);
                live = Some(CanonicalPr {
                    number: Some(pr.number),
                    url: Some(pr.url),
                    state: Some(pr.state),
                    head_sha: Some(pr.head_sha),
                    branch: branch_of(&t.target, &t.sha),
                });
            }
            Err(kind) => notices.push(Notice::new(
                "live_unknown",
                format!("the pull request's live state could not be read ({kind})"),
            )),
        }
    }
    announce(ctx, &notices);
    Ok(Outcome::Done(StatusResponse {
        trains: vec![row(&t)],
        steps,
        live,
        notices,
    }))
}

// ---------------------------------------------------------------------------------------
// text

fn render_plan(r: &PlanResponse, _ctx: &Ctx) -> String {
    let o = &r.observed;
    let mut out = format!(
        "{} → {} at {} ({}): {} ahead, {} behind; status {}\n",
        o.source,
        o.target,
        short(&o.sha),
        o.compare.status,
        o.compare.ahead_by,
        o.compare.behind_by,
        r.status
    );
    for c in &o.commits {
        out.push_str(&format!("  {} {}\n", short(&c.sha), c.subject));
    }
    if let Some(why) = &o.commits_cut {
        out.push_str(&format!(
            "  … only {} of {} commits are listed: {why}\n",
            o.commits.len(),
            o.compare.ahead_by
        ));
    }
    out.push_str(&format!(
        "plan_digest: {}\nnext: {}\n",
        r.plan_digest, r.next_action
    ));
    out
}

fn render_train(r: &TrainResponse, _ctx: &Ctx) -> String {
    let mut out = format!(
        "train {}: {} → {} at {} ({}), state {}\n",
        r.train_id.as_deref().unwrap_or("(new)"),
        r.source,
        r.target,
        short(&r.sha),
        r.method,
        r.state
    );
    if let Some(pr) = &r.canonical_pr
        && let Some(n) = pr.number
    {
        out.push_str(&format!("  PR #{n} from {}\n", pr.branch));
    }
    for g in &r.gates {
        out.push_str(&format!("  {:<8} {}  {}\n", g.result, g.gate, g.detail));
    }
    if let Some(o) = &r.outcome {
        out.push_str(&format!(
            "  merged as {}\n",
            o.merge_commit_sha.as_deref().unwrap_or("?")
        ));
    }
    if let Some(d) = &r.plan_digest {
        out.push_str(&format!("plan_digest: {d}\n"));
    }
    out.push_str(&format!("next: {}\n", r.next_action));
    out
}

fn render_status(r: &StatusResponse, _ctx: &Ctx) -> String {
    if r.trains.is_empty() {
        return "no trains\n".into();
    }
    let mut out = String::new();
    for t in &r.trains {
        out.push_str(&format!(
            "{}  {}  {} → {}  {}  {}\n",
            t.id,
            t.state,
            t.source,
            t.target,
            short(&t.sha),
            t.pr.map(|n| format!("#{n}")).unwrap_or_default()
        ));
    }
    for s in &r.steps {
        out.push_str(&format!("  {:<18} {}\n", s.step, s.status));
    }
    out
}
