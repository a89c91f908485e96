//! `github projection`: what of a project may go to GitHub, what is withheld and why, and the
//! issue mirror (GIT_GITHUB.md B6). Tasks become issues, decisions become issues created
//! closed, findings become issues only with `--findings-as-issues`; metrics, refs, risks and
//! escalations (questions to a human) become issues with their allowlisted fields; every
//! object of a class the project lists gets a verdict. Every issue carries the
//! marker `<!-- dacli:<object-id> ws:<workspace-id> -->` in its body, and is found again by it,
//! never by title. Preview writes nothing anywhere; apply re-observes, refuses drift, and runs
//! each remote write as one transaction step, so an apply cut by a timeout is resumed by
//! running it again and never creates a second issue.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::consent::{self, visibility_of};
use super::diagnose::{str_at, u64_at};
use super::{
    Notice, announce, as_problem, call_failure, connect, link_of, project_list, project_slug,
    unlinked,
};
use crate::dispatch::apply::{ApplyArgs, Run, Start, frozen, start};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Mcp, Outcome};
use crate::github::{Client, Method};
use crate::journal::evidence::{self, Evidence, EvidenceItem};
use crate::journal::txn::{StepStatus, Txn, TxnOutcome};
use crate::model::Refusal;
use crate::objects::{notes, tasks};
use crate::policy::apply::{self as contract, ApplyRequest};
use crate::policy::disclosure::{self, CLASSES, Consent};

const TOOL: &str = "github-projection";

/// Preview what of a project may be published to the linked repository: per item, the
/// action (create, adopt_by_marker, close, none) or withhold with typed reasons (consent,
/// private note, class not allowed, secret-looking content, absolute path, size, closure
/// without authority). Without --apply nothing is written locally or remotely; with
/// --apply --digest D the same plan is re-observed and run, or refused plan.drifted.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The project.
    #[arg(value_name = "PROJECT")]
    project: String,
    /// Only these objects: task references, note (`n-…`) or risk (`r-…`) ids, or the event id
    /// of an escalation.
    #[arg(value_name = "REF")]
    #[serde(default)]
    refs: Vec<String>,
    /// Only objects created at or after TIME (RFC 3339); older ones are withheld out_of_window.
    #[arg(long, value_name = "TIME")]
    #[serde(default)]
    since: Option<String>,
    /// Only these classes, comma-separated (tasks, decisions, findings, metrics, refs, risks,
    /// escalations).
    #[arg(long = "classes", value_delimiter = ',', value_name = "LIST")]
    #[serde(default, alias = "classes_requested")]
    classes: Vec<String>,
    /// Publish findings as issues too (they still need the findings class and consent).
    #[arg(long = "findings-as-issues")]
    #[serde(default)]
    findings_as_issues: bool,
    /// At most this many GitHub API calls.
    #[arg(long = "max-api-calls", value_name = "N", default_value_t = 300)]
    #[serde(default = "default_calls")]
    max_api_calls: u32,
    /// Run the plan whose digest is given.
    #[arg(long, requires = "digest")]
    #[serde(default)]
    apply: bool,
    /// The plan_digest of the reviewed preview.
    #[arg(long, value_name = "DIGEST")]
    #[serde(default)]
    digest: Option<String>,
    /// Resume this transaction.
    #[arg(long, value_name = "ID")]
    #[serde(default)]
    txn: Option<String>,
}

fn default_calls() -> u32 {
    300
}

impl Classify for Request {
    fn class(&self, declared: Class) -> Class {
        if self.apply { Class::Apply } else { declared }
    }

    fn display_path(&self, path: &str) -> String {
        if self.apply {
            format!("{path} {} --apply", self.project)
        } else {
            format!("{path} {}", self.project)
        }
    }
}

pub(super) fn command() -> Command {
    Command::new("github.projection", Class::Read, run, render).mcp(Mcp::Tier1("github_projection"))
}

/// Mirror a project to GitHub in one step: preview and apply in one transaction, with the
/// same gates, marker protocol and evidence as `github projection --apply`. --dry-run stops
/// at the preview. PROJECT may be left out when exactly one project has projection classes.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushRequest {
    /// The project (default: the only one with `github_projection.classes`).
    #[arg(value_name = "PROJECT")]
    #[serde(default)]
    project: Option<String>,
    /// Only preview: write nothing, locally or remotely.
    #[arg(long = "dry-run")]
    #[serde(default)]
    dry_run: bool,
    /// At most this many GitHub API calls.
    #[arg(long = "max-api-calls", value_name = "N", default_value_t = 300)]
    #[serde(default = "default_calls")]
    max_api_calls: u32,
}

impl PushRequest {
    /// A push of one project, as `github sync` runs it.
    pub(super) fn new(project: String, dry_run: bool, max_api_calls: u32) -> PushRequest {
        PushRequest {
            project: Some(project),
            dry_run,
            max_api_calls,
        }
    }
}

impl Classify for PushRequest {
    fn class(&self, declared: Class) -> Class {
        if self.dry_run { Class::Read } else { declared }
    }
}

pub(super) fn push_command() -> Command {
    Command::new("github.push", Class::Apply, run_push, render)
}

/// Runs `github push` (also the second half of `github sync`).
pub(super) fn run_push(ctx: &Ctx, req: PushRequest) -> Result<Outcome<Response>, Error> {
    let slug = match &req.project {
        Some(p) => project_slug(ctx, p)?,
        None => only_projected_project(ctx)?,
    };
    let link = link_of(ctx)?;
    let Some(repo) = link.repo.clone() else {
        return Ok(Outcome::Refused(unlinked("github push")));
    };
    let (client, _source) = connect(ctx, &link.api_url, req.max_api_calls.max(1))?;
    let client = match client {
        Ok(c) => c,
        Err(p) => return super::access_failure(&p, &format!("pushing {slug} to {repo}")),
    };
    let all = Request {
        project: slug.clone(),
        refs: Vec::new(),
        since: None,
        classes: Vec::new(),
        findings_as_issues: false,
        max_api_calls: req.max_api_calls,
        apply: !req.dry_run,
        digest: None,
        txn: None,
    };
    let observed = match observe(ctx, &client, &slug, &repo, &all, None)? {
        Ok(o) => o,
        Err(out) => return Ok(out),
    };
    let digest = contract::plan_digest(&serde_json::to_value(&observed.plan).map_err(internal)?)
        .map_err(|e| Error::internal(e.0))?;
    let writes = observed
        .plan
        .items
        .iter()
        .any(|i| matches!(i.action.as_str(), "create" | "adopt_by_marker" | "close"));
    if !req.dry_run && observed.plan.visibility == "unknown" {
        return Ok(Outcome::Refused(Refusal::new(
            "github.access",
            format!("the visibility of {repo} could not be read, so nothing may be published"),
            "Fix the access problem the notices name, then push again.",
        )));
    }
    if !req.dry_run
        && let Some(gap) =
            disclosure::consent_gap(observed.consent.as_ref(), &repo, &observed.plan.visibility)
    {
        return Ok(Outcome::Refused(no_consent(
            &slug,
            &repo,
            &observed.plan.visibility,
            gap,
        )));
    }
    if !req.dry_run
        && let Some(txn) = interrupted(ctx, &repo, &observed.plan)?
    {
        let mut observed = observed;
        observed.notices.push(Notice::new(
            "resumed",
            format!(
                "finished the interrupted transaction {} from its frozen plan; push again for anything changed since",
                txn.id()
            ),
        ));
        return apply_plan(
            ctx,
            &client,
            &slug,
            frozen::<Plan>(&txn)?,
            &observed,
            Some(txn),
        );
    }
    if req.dry_run || !writes {
        announce(ctx, &observed.notices);
        let forget = observed.forget.clone();
        let mut r = preview(observed, digest);
        // `github push` applies without a digest; `--apply --digest` is `projection`'s.
        r.apply_with = Some(format!("dacli github push {slug}"));
        if !req.dry_run {
            remember(ctx, &observed_plan_numbers(&r.items), &r.repo, &forget)?;
            r.mode = "apply";
            r.outcome = Some("completed".into());
        }
        return Ok(Outcome::Done(r));
    }
    apply_plan(ctx, &client, &slug, observed.plan.clone(), &observed, None)
}

/// An open transaction that an earlier push or apply to `repo` left for objects of this plan
/// (cut by a timeout, say). A push finishes it first, from its frozen plan, so a create whose
/// answer was lost is found again by its marker instead of being sent twice.
fn interrupted(ctx: &Ctx, repo: &str, plan: &Plan) -> Result<Option<Txn>, Error> {
    let ws = ctx.ws()?;
    let open = crate::journal::txn::open(ws)?;
    ctx.warn_all(open.warnings);
    Ok(open
        .items
        .into_iter()
        .filter(|t| t.tool() == TOOL)
        .find(|t| {
            frozen::<Plan>(t).is_ok_and(|p| {
                p.repo == repo
                    && p.items
                        .iter()
                        .any(|i| plan.items.iter().any(|o| o.object.id == i.object.id))
            })
        }))
}

/// The one project with projection classes, for `github push` without PROJECT.
pub(super) fn only_projected_project(ctx: &Ctx) -> Result<String, Error> {
    let ws = ctx.ws()?;
    let listing = crate::objects::projects::list(ws)?;
    ctx.warn_all(listing.warnings);
    let mut with: Vec<String> = Vec::new();
    for p in &listing.items {
        if !project_list(ctx, &p.slug, &["github_projection", "classes"])?.is_empty() {
            with.push(p.slug.clone());
        }
    }
    match with.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(Error::usage(
            "no project has `github_projection.classes`; name one, or have a-root set them with `dacli project edit <p> --projection-classes …`",
        )),
        many => Err(Error::usage(format!(
            "several projects may be projected ({}): name one",
            many.join(", ")
        ))),
    }
}

/// The frozen plan: everything that must not drift between preview and apply.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Plan {
    repo: String,
    visibility: String,
    #[serde(default)]
    consent: Option<String>,
    items: Vec<Item>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Item {
    object: Object,
    /// `create`, `adopt_by_marker`, `close`, `none` or `withhold`.
    action: String,
    #[serde(default)]
    fields: Vec<String>,
    #[serde(default)]
    withheld: Vec<Withheld>,
    #[serde(default)]
    remote: Option<Remote>,
    #[serde(default)]
    closure: Option<Closure>,
    #[serde(default)]
    content_digest: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Object {
    /// `task`, `decision`, `finding`, `metric`, `ref`, `risk` or `escalation`.
    kind: String,
    id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Withheld {
    reason: String,
    detail: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Remote {
    kind: String,
    number: u64,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    state: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Closure {
    authority: String,
    state_reason: String,
}

#[derive(Debug, Serialize)]
pub struct Response {
    mode: &'static str,
    repo: String,
    visibility: String,
    consent: ConsentView,
    items: Vec<Item>,
    blast_radius: Blast,
    plan_digest: String,
    txn: Option<String>,
    /// `completed`, `partial`, or null for a preview.
    outcome: Option<String>,
    already_applied: bool,
    evidence: Vec<String>,
    refusals: Vec<ItemRefusal>,
    notices: Vec<Notice>,
    /// The command that applies this preview, when it is not `--apply --digest`.
    #[serde(skip)]
    apply_with: Option<String>,
}

#[derive(Debug, Serialize)]
struct ConsentView {
    covers_live_repo: bool,
    id: Option<String>,
    classes: Vec<String>,
    granted_by: Option<String>,
}

#[derive(Debug, Default, Serialize)]
struct Blast {
    create: usize,
    adopt: usize,
    comment: usize,
    close: usize,
    withhold: usize,
}

#[derive(Debug, Serialize)]
struct ItemRefusal {
    subject: String,
    policy: String,
    reason: String,
    next: String,
}

/// What was observed, with the content the plan only digests.
struct Observed {
    plan: Plan,
    consent: Option<Consent>,
    /// Title and body per item id, for the writes.
    content: Vec<(String, String, String)>,
    notices: Vec<Notice>,
    /// Objects whose recorded issue is gone, transferred or lost its marker.
    forget: Vec<String>,
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let slug = project_slug(ctx, &req.project)?;
    let command = format!("github projection {slug}");
    let link = link_of(ctx)?;
    let Some(repo) = link.repo.clone() else {
        return Ok(Outcome::Refused(unlinked("github projection")));
    };
    for c in &req.classes {
        if !CLASSES.contains(&c.as_str()) {
            return Err(Error::usage(format!(
                "`{c}` is not a projection class (one of {})",
                CLASSES.join(", ")
            )));
        }
    }
    let since = match &req.since {
        Some(s) => Some(
            s.parse::<jiff::Timestamp>()
                .map_err(|_| Error::usage(format!("`--since {s}` is not an RFC 3339 time")))?,
        ),
        None => None,
    };
    let how = start(
        ctx,
        ApplyArgs {
            command: &command,
            tool: TOOL,
            apply: req.apply,
            digest: req.digest.as_deref(),
            txn: req.txn.as_deref(),
        },
    )?;
    if let Start::Refused(r) = how {
        return Ok(Outcome::Refused(r));
    }
    let (client, _source) = connect(ctx, &link.api_url, req.max_api_calls.max(1))?;
    let client = match client {
        Ok(c) => c,
        Err(p) => return super::access_failure(&p, &format!("projecting {slug} to {repo}")),
    };
    if let Start::Completed(txn) = &how {
        return Ok(Outcome::Done(completed(ctx, txn, true)?));
    }
    if let Start::Resume(txn) = how {
        let observed = match observe(ctx, &client, &slug, &repo, &req, since)? {
            Ok(o) => o,
            Err(out) => return Ok(out),
        };
        return apply_plan(
            ctx,
            &client,
            &slug,
            frozen::<Plan>(&txn)?,
            &observed,
            Some(txn),
        );
    }
    let observed = match observe(ctx, &client, &slug, &repo, &req, since)? {
        Ok(o) => o,
        Err(out) => return Ok(out),
    };
    let digest = contract::plan_digest(&serde_json::to_value(&observed.plan).map_err(internal)?)
        .map_err(|e| Error::internal(e.0))?;
    match how {
        Start::Fresh { .. } => {
            if let Some(r) = contract::drift(
                ApplyRequest {
                    command: &command,
                    digest: req.digest.as_deref(),
                },
                &digest,
                "the repository's visibility, the consent, the project's objects or the issues",
            ) {
                return Ok(Outcome::Refused(r));
            }
            if let Some(gap) =
                disclosure::consent_gap(observed.consent.as_ref(), &repo, &observed.plan.visibility)
                && observed.plan.items.iter().all(|i| i.action == "withhold")
            {
                return Ok(Outcome::Refused(no_consent(
                    &slug,
                    &repo,
                    &observed.plan.visibility,
                    gap,
                )));
            }
            if observed.plan.visibility == "unknown" {
                return Ok(Outcome::Refused(Refusal::new(
                    "github.access",
                    format!(
                        "the visibility of {repo} could not be read, so nothing may be published"
                    ),
                    "Fix the access problem the preview's notices name, then preview again.",
                )));
            }
            apply_plan(ctx, &client, &slug, observed.plan.clone(), &observed, None)
        }
        _ => {
            announce(ctx, &observed.notices);
            Ok(Outcome::Done(preview(observed, digest)))
        }
    }
}

fn internal(e: serde_json::Error) -> Error {
    Error::internal(format!("the projection plan does not serialize: {e}"))
}

fn no_consent(slug: &str, repo: &str, visibility: &str, gap: &str) -> Refusal {
    Refusal::new(
        "github.no_consent",
        format!("{repo} is {visibility} and no consent covers publishing p-{slug} to it ({gap})"),
        format!(
            "Ask the human; a-root records it: `dacli github consent grant --project {slug} --classes tasks --granted-by human:<login>`."
        ),
    )
}

fn preview(o: Observed, digest: String) -> Response {
    Response {
        mode: "preview",
        repo: o.plan.repo.clone(),
        visibility: o.plan.visibility.clone(),
        consent: consent_view(&o),
        blast_radius: blast(&o.plan.items),
        items: o.plan.items,
        plan_digest: digest,
        txn: None,
        outcome: None,
        already_applied: false,
        evidence: Vec::new(),
        refusals: Vec::new(),
        notices: o.notices,
        apply_with: None,
    }
}

fn consent_view(o: &Observed) -> ConsentView {
    let covers = disclosure::consent_gap(o.consent.as_ref(), &o.plan.repo, &o.plan.visibility)
        .is_none()
        && o.plan.visibility != "unknown";
    ConsentView {
        covers_live_repo: covers,
        id: o.consent.as_ref().map(|c| c.id.clone()),
        classes: o
            .consent
            .as_ref()
            .map(|c| c.classes.clone())
            .unwrap_or_default(),
        granted_by: o.consent.as_ref().map(|c| c.granted_by.clone()),
    }
}

fn blast(items: &[Item]) -> Blast {
    let mut b = Blast::default();
    for i in items {
        match i.action.as_str() {
            "create" => b.create += 1,
            "adopt_by_marker" => b.adopt += 1,
            "close" => b.close += 1,
            "withhold" => b.withhold += 1,
            _ => {}
        }
        if i.action != "withhold" && i.action != "close" && i.closure.is_some() {
            b.close += 1;
        }
    }
    b
}

/// The marker that identifies an issue as the mirror of `id` in this workspace.
fn marker(id: &str, ws_id: &str) -> String {
    format!("<!-- dacli:{id} ws:{ws_id} -->")
}

/// One candidate object before the decision table.
struct Candidate {
    kind: &'static str,
    class: &'static str,
    id: String,
    created: Option<jiff::Timestamp>,
    title: String,
    body: String,
    fields: Vec<String>,
    private: bool,
    /// Where outside text came from (`github:<login>`, `human:<login>`); `None` for agents.
    origin: Option<String>,
    /// Tasks: `done` or `abandoned`; other classes: `settled` (nothing more to publish);
    /// `None` while open.
    done: Option<&'static str>,
    mapped: Option<u64>,
}

fn observe(
    ctx: &Ctx,
    client: &super::Session<'_>,
    slug: &str,
    repo: &str,
    req: &Request,
    since: Option<jiff::Timestamp>,
) -> Result<Result<Observed, Outcome<Response>>, Error> {
    let ws = ctx.ws()?;
    let mut notices = Vec::new();
    let visibility = match client.get(&format!("/repos/{repo}")) {
        Ok(v) => visibility_of(&v),
        Err(e) => {
            notices.push(Notice::new(
                "visibility_unknown",
                format!(
                    "the visibility of {repo} could not be read ({}); everything is withheld",
                    as_problem(&e).kind()
                ),
            ));
            "unknown".into()
        }
    };
    let consent = consent::in_effect(ctx, slug, repo)?;
    let project_classes = project_list(ctx, slug, &["github_projection", "classes"])?;
    let publishable =
        disclosure::publishable_classes(&project_classes, consent.as_ref(), &visibility);
    let gap = if visibility == "unknown" {
        Some("visibility_unknown")
    } else {
        disclosure::consent_gap(consent.as_ref(), repo, &visibility)
    };
    let candidates = candidates(ctx, slug, req)?;
    let ws_id = ws.config.workspace_id.clone();
    let pr_mode = landing_mode(ctx, slug)? == "pr";
    let delivered = if pr_mode {
        let l = evidence::items(ws, "reconcile-delivery")?;
        ctx.warn_all(l.warnings);
        l.items
            .into_iter()
            .filter(|(_, i)| i.reasons.iter().any(|r| r == "delivered"))
            .map(|(_, i)| i.subject)
            .collect::<Vec<String>>()
    } else {
        Vec::new()
    };
    let map = crate::ops::github_map::read_issue_map(ws, repo);
    // First what each object's own content decides, then one lookup of the issues of the
    // objects that may go out: a withheld object costs no request.
    let mut staged = Vec::new();
    for c in candidates {
        if !req.classes.is_empty() && !req.classes.iter().any(|k| k == c.class) {
            continue;
        }
        let mut withheld = Vec::new();
        if let Some(g) = gap {
            withheld.push(Withheld {
                reason: g.into(),
                detail: format!("{repo} is {visibility}"),
            });
        }
        if gap.is_none() && !publishable.iter().any(|k| k == c.class) {
            withheld.push(Withheld {
                reason: "class_not_consented".into(),
                detail: if project_classes.iter().any(|k| k == c.class) {
                    format!("{} is not among the classes consented to", c.class)
                } else {
                    format!(
                        "{} is not in the project's github_projection.classes",
                        c.class
                    )
                },
            });
        }
        if c.private {
            withheld.push(Withheld {
                reason: "note_private".into(),
                detail: "private = true is never published".into(),
            });
        }
        if let Some(origin) = &c.origin {
            withheld.push(Withheld {
                reason: "untrusted_origin".into(),
                detail: format!("recorded from {origin}: outside text is never re-published"),
            });
        }
        if c.kind == "finding" && !req.findings_as_issues {
            withheld.push(Withheld {
                reason: "class_not_consented".into(),
                detail: "findings become issues only with --findings-as-issues".into(),
            });
        }
        if let (Some(s), Some(created)) = (since, c.created)
            && created < s
        {
            withheld.push(Withheld {
                reason: "out_of_window".into(),
                detail: format!("created before {}", s.strftime("%Y-%m-%dT%H:%M:%SZ")),
            });
        }
        for g in disclosure::guard(&format!("{}\n{}", c.title, c.body)) {
            withheld.push(Withheld {
                reason: g.reason.into(),
                detail: g.detail,
            });
        }
        staged.push((c, withheld));
    }
    // The issue this clone last recorded, else the one written back to the task.
    let wanted: Vec<(String, Option<u64>)> = staged
        .iter()
        .filter(|(_, w)| w.is_empty())
        .map(|(c, _)| (c.id.clone(), map.get(&c.id).copied().or(c.mapped)))
        .collect();
    let located = if wanted.is_empty() {
        Located::default()
    } else {
        client.phase(format!(
            "finding the issues of {} object(s) in {repo}",
            wanted.len()
        ));
        match locate(client, repo, &wanted) {
            Ok(l) => l,
            Err(e) => {
                return call_failure(&e, &format!("finding the issues of {repo}")).map(Err);
            }
        }
    };
    let mut items = Vec::new();
    let mut content = Vec::new();
    for (c, mut withheld) in staged {
        let mark = marker(&c.id, &ws_id);
        let body = format!("{mark}\n{}", c.body);
        let digest = contract::sha256_digest(
            contract::canonical_json(&json!({"title": c.title, "body": body}))
                .unwrap_or_default()
                .as_bytes(),
        );
        let remote = located.found.get(&c.id).cloned();
        let (action, closure) = if !withheld.is_empty() {
            ("withhold", None)
        } else {
            decide(&c, remote.as_ref(), pr_mode, &delivered, &mut withheld)
        };
        let action = if withheld.is_empty() {
            action
        } else {
            "withhold"
        };
        content.push((c.id.clone(), c.title.clone(), body));
        items.push(Item {
            object: Object {
                kind: c.kind.into(),
                id: c.id,
            },
            action: action.into(),
            fields: c.fields,
            withheld,
            remote,
            closure,
            content_digest: Some(digest),
        });
    }
    Ok(Ok(Observed {
        plan: Plan {
            repo: repo.to_string(),
            visibility,
            consent: consent.as_ref().map(|c| c.id.clone()),
            items,
        },
        consent,
        content,
        notices,
        forget: located.gone,
    }))
}

/// The decision table for an object that may be published. Only tasks are ever closed, each
/// closure with its authority; decisions are created closed (`decision_record`); every other
/// class is created once and then left alone, and a settled one (an answered escalation, a
/// closed risk) is not published at all.
fn decide(
    c: &Candidate,
    remote: Option<&Remote>,
    pr_mode: bool,
    delivered: &[String],
    withheld: &mut Vec<Withheld>,
) -> (&'static str, Option<Closure>) {
    let open_remote = remote.is_some_and(|r| r.state.as_deref() != Some("closed"));
    if c.kind != "task" {
        return match (remote, c.done) {
            (Some(_), _) | (None, Some(_)) => ("none", None),
            (None, None) if c.kind == "decision" => (
                "create",
                Some(Closure {
                    authority: "decision_record".into(),
                    state_reason: "completed".into(),
                }),
            ),
            (None, None) => ("create", None),
        };
    }
    match (c.done, remote) {
        (Some("abandoned"), Some(_)) if open_remote => (
            "close",
            Some(Closure {
                authority: "task_abandoned".into(),
                state_reason: "not_planned".into(),
            }),
        ),
        (Some("done"), Some(_)) if open_remote => {
            if pr_mode && !delivered.contains(&c.id) {
                withheld.push(Withheld {
                    reason: "closure_unauthorized".into(),
                    detail: "done in pr landing mode without delivery evidence: run `dacli delivery reconcile` first".into(),
                });
                ("withhold", None)
            } else {
                (
                    "close",
                    Some(Closure {
                        authority: "dacli_owned_done".into(),
                        state_reason: "completed".into(),
                    }),
                )
            }
        }
        (Some(_), None) => ("none", None),
        (_, Some(r)) if c.mapped != Some(r.number) => ("adopt_by_marker", None),
        (_, Some(_)) => ("none", None),
        (_, None) => ("create", None),
    }
}

fn landing_mode(ctx: &Ctx, slug: &str) -> Result<String, Error> {
    let ws = ctx.ws()?;
    let doc = crate::objects::read_document(ws, &ws.path(&["projects", slug, "project.md"]))?;
    let from_project = doc
        .front
        .get("landing")
        .and_then(|l| l.get("mode"))
        .and_then(|m| m.as_str())
        .map(str::to_string);
    Ok(from_project
        .or_else(|| {
            ws.config
                .doc
                .get("landing")
                .and_then(|l| l.get("mode"))
                .and_then(|m| m.as_str())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "local".into()))
}

/// Every object of the project in a projection class, filtered by refs, with the fields the
/// allowlist admits (GIT_GITHUB.md B6): tasks title, acceptance and status; decisions chose,
/// rejected and because; findings and refs title and body; metrics goal, question and metric;
/// risks title, impact, likelihood, status, indicators and action; escalations (`help` events
/// to `human` about the project or its tasks) their summary only.
fn candidates(ctx: &Ctx, slug: &str, req: &Request) -> Result<Vec<Candidate>, Error> {
    let ws = ctx.ws()?;
    let listing = tasks::list(ws, slug)?;
    ctx.warn_all(listing.warnings);
    // With refs, only the objects they name: task references resolve; notes (`n-`), risks
    // (`r-`) and escalations (their event ULID) are matched by id.
    let mut wanted: Option<(Vec<String>, Vec<String>)> = None;
    if !req.refs.is_empty() {
        let (mut t, mut other) = (Vec::new(), Vec::new());
        for r in &req.refs {
            if r.starts_with("n-")
                || r.starts_with("r-")
                || crate::model::id::parse_ulid(r).is_some()
            {
                other.push(r.clone());
            } else {
                t.push(tasks::resolve(&listing.items, r)?.task.id.clone());
            }
        }
        wanted = Some((t, other));
    }
    let want_task = |id: &str| {
        wanted
            .as_ref()
            .is_none_or(|(t, _)| t.iter().any(|w| w == id))
    };
    let want_other = |id: &str| {
        wanted
            .as_ref()
            .is_none_or(|(_, o)| o.iter().any(|w| w == id))
    };
    let mut out = Vec::new();
    for t in listing.items.iter().filter(|t| want_task(&t.task.id)) {
        out.push(task_candidate(t));
    }
    if wanted.as_ref().is_some_and(|(_, o)| o.is_empty()) {
        return Ok(out);
    }
    let all_notes = notes::list(ws)?;
    ctx.warn_all(all_notes.warnings);
    for n in all_notes.items {
        if n.project.as_deref() == Some(slug) && want_other(&n.note.id) {
            out.push(note_candidate(&n));
        }
    }
    let risks = crate::objects::risks::list(ws, slug)?;
    ctx.warn_all(risks.warnings);
    for r in risks.items.iter().filter(|r| want_other(&r.risk.id)) {
        out.push(risk_candidate(r));
    }
    let task_ids: Vec<&str> = listing.items.iter().map(|t| t.task.id.as_str()).collect();
    let journal = crate::journal::read(ws)?;
    ctx.warn_all(journal.warnings.clone());
    let project_id = format!("p-{slug}");
    for ev in &journal.events {
        let about = ev.about.as_deref().unwrap_or_default();
        if ev.kind == "help"
            && ev.to.as_deref() == Some("human")
            && (about == project_id || task_ids.contains(&about))
            && want_other(&ev.id)
        {
            out.push(escalation_candidate(ev, &journal));
        }
    }
    Ok(out)
}

fn task_candidate(t: &tasks::Located) -> Candidate {
    let criteria = t.doc.criteria();
    let status = t.doc.status.as_str();
    let mut body = String::new();
    if !criteria.is_empty() {
        body.push_str("## Acceptance\n");
        for c in &criteria {
            body.push_str(&format!(
                "- [{}] {}\n",
                if c.checked { "x" } else { " " },
                c.text
            ));
        }
        body.push('\n');
    }
    body.push_str(&format!("Status: {status}\n"));
    let done = match (status, t.doc.resolution()) {
        ("done", Some("abandoned")) => Some("abandoned"),
        ("done", _) => Some("done"),
        _ => None,
    };
    Candidate {
        kind: "task",
        class: "tasks",
        id: t.task.id.clone(),
        created: crate::model::id::parse_ulid(t.task.id.trim_start_matches("t-"))
            .map(crate::model::id::ulid_time),
        title: t.doc.title().to_string(),
        body,
        fields: strings(&["title", "acceptance", "status"]),
        private: false,
        origin: None,
        done,
        mapped: t
            .doc
            .front
            .get("github")
            .and_then(|g| g.get("issue"))
            .and_then(|i| i.as_integer())
            .map(|n| n as u64),
    }
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The named sections of a note body, each as `## Name` and its trimmed text.
fn sections(body: &str, names: &[&str]) -> String {
    names
        .iter()
        .map(|s| {
            format!(
                "## {s}\n{}\n",
                crate::model::body::section_text(body, s)
                    .unwrap_or_default()
                    .trim()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn note_candidate(n: &notes::Located) -> Candidate {
    let (kind, class, fields, body) = match n.note.kind.as_str() {
        "decision" => (
            "decision",
            "decisions",
            strings(&["chose", "rejected", "because"]),
            sections(&n.body, &["Chose", "Rejected", "Because"]),
        ),
        "metric" => (
            "metric",
            "metrics",
            strings(&["title", "goal", "question", "metric"]),
            sections(&n.body, &["Goal", "Question", "Metric"]),
        ),
        "ref" => ("ref", "refs", strings(&["title", "body"]), n.body.clone()),
        _ => (
            "finding",
            "findings",
            strings(&["title", "body"]),
            n.body.clone(),
        ),
    };
    Candidate {
        kind,
        class,
        id: n.note.id.clone(),
        created: Some(n.note.created),
        title: n.note.title.clone(),
        body,
        fields,
        private: n.note.private,
        origin: None,
        done: None,
        mapped: None,
    }
}

fn risk_candidate(r: &crate::objects::risks::Located) -> Candidate {
    let h = &r.risk;
    let mut body = format!(
        "Impact: {}\nLikelihood: {}\nStatus: {}\n",
        h.impact, h.likelihood, h.status
    );
    for (name, text) in [("Indicators", &h.indicators), ("Action", &h.action)] {
        if let Some(t) = text.as_deref().filter(|t| !t.is_empty()) {
            body.push_str(&format!("\n## {name}\n{t}\n"));
        }
    }
    Candidate {
        kind: "risk",
        class: "risks",
        id: h.id.clone(),
        created: Some(h.created),
        title: h.title.clone(),
        body,
        fields: strings(&[
            "title",
            "impact",
            "likelihood",
            "status",
            "indicators",
            "action",
        ]),
        private: false,
        origin: None,
        // A closed risk is settled: it is not published, and an issue of it is left alone.
        done: (h.status == "closed").then_some("settled"),
        mapped: None,
    }
}

/// An escalation publishes its summary only: the question's first line, as the title and
/// the body. An answered one is settled.
fn escalation_candidate(
    ev: &crate::model::event::EventHead,
    journal: &crate::journal::Journal,
) -> Candidate {
    let summary = ev
        .body
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(no question text)")
        .to_string();
    let answered = journal
        .events
        .iter()
        .any(|a| a.kind == "answer" && a.question.as_deref() == Some(ev.id.as_str()));
    Candidate {
        kind: "escalation",
        class: "escalations",
        id: ev.id.clone(),
        created: Some(ev.created),
        title: summary.clone(),
        body: format!("{summary}\n"),
        fields: strings(&["summary"]),
        private: false,
        origin: ev
            .field_str("origin")
            .filter(|o| *o != "agent")
            .map(str::to_string),
        done: answered.then_some("settled"),
        mapped: None,
    }
}

/// Runs a plan (fresh or resumed): one step per remote write, mapping written back to tasks
/// the caller may write, evidence last.
fn apply_plan(
    ctx: &Ctx,
    client: &super::Session<'_>,
    slug: &str,
    plan: Plan,
    observed: &Observed,
    resume: Option<Txn>,
) -> Result<Outcome<Response>, Error> {
    let value = serde_json::to_value(&plan).map_err(internal)?;
    let digest = contract::plan_digest(&value).map_err(|e| Error::internal(e.0))?;
    let mut run = match &resume {
        Some(txn) => Run::resume(ctx, txn)?,
        None => Run::begin(ctx, TOOL, &digest, value)?,
    };
    if run.txn.outcome().is_some() {
        let txn = run.txn.clone();
        drop(run);
        return Ok(Outcome::Done(completed(ctx, &txn, true)?));
    }
    let digest = run.txn.plan_digest().to_string();
    let repo = plan.repo.clone();
    let mut done: Vec<(Item, Option<u64>, &'static str)> = Vec::new();
    let mut refusals = Vec::new();
    let writes = plan
        .items
        .iter()
        .filter(|i| matches!(i.action.as_str(), "create" | "adopt_by_marker" | "close"))
        .count();
    let mut written = 0;
    for item in &plan.items {
        let step = format!("{}:{}", item.action, item.object.id);
        if !matches!(item.action.as_str(), "create" | "adopt_by_marker" | "close") {
            done.push((
                item.clone(),
                item.remote.as_ref().map(|r| r.number),
                if item.action == "withhold" {
                    "withheld"
                } else {
                    "skipped"
                },
            ));
            continue;
        }
        if run.txn.status_of(&step) == Some(StepStatus::Done) {
            let n = run
                .txn
                .latest(&step)
                .and_then(|s| s.observed.get("number").and_then(|n| n.as_u64()));
            done.push((item.clone(), n, "done"));
            continue;
        }
        let content = observed
            .content
            .iter()
            .find(|(id, _, _)| *id == item.object.id);
        written += 1;
        client.phase(format!(
            "{repo}: {} {} ({written} of {writes})",
            item.action, item.object.id
        ));
        let interrupted = run.txn.status_of(&step).is_some();
        run.step(
            &step,
            StepStatus::Started,
            json!({"marker": "absent"}),
            Value::Null,
        )?;
        match write_item(client, &repo, item, content, interrupted) {
            Ok(number) => {
                run.step(
                    &step,
                    StepStatus::Done,
                    Value::Null,
                    json!({"number": number}),
                )?;
                map_task(ctx, slug, item, number)?;
                done.push((item.clone(), Some(number), "done"));
            }
            Err(e) => {
                let problem = as_problem(&e);
                run.step(
                    &step,
                    StepStatus::Failed,
                    Value::Null,
                    json!({"problem": problem.kind()}),
                )?;
                refusals.push(ItemRefusal {
                    subject: item.object.id.clone(),
                    policy: "github.access".into(),
                    reason: format!("{}: {}", e, problem.kind()),
                    next: format!(
                        "Run `dacli github projection {slug} --apply --digest {digest}` again: the transaction {} resumes and finds an issue created meanwhile by its marker.",
                        run.txn.id()
                    ),
                });
                break;
            }
        }
    }
    let mut numbers = observed_plan_numbers(&plan.items);
    numbers.extend(
        done.iter()
            .filter(|(_, _, result)| *result == "done")
            .filter_map(|(i, n, _)| Some((i.object.id.clone(), (*n)?))),
    );
    remember(ctx, &numbers, &repo, &observed.forget)?;
    let partial = !refusals.is_empty();
    let mut evidence_paths = Vec::new();
    if !partial {
        let path = write_evidence(ctx, &run.txn, &plan, &done)?;
        evidence_paths.push(path.clone());
        run.finish(TxnOutcome::Completed, json!({"evidence": path}))?;
    }
    let items: Vec<Item> = plan
        .items
        .iter()
        .map(|i| {
            let mut i = i.clone();
            if let Some((_, Some(n), "done")) =
                done.iter().find(|(d, _, _)| d.object.id == i.object.id)
            {
                i.remote = Some(Remote {
                    kind: "issue".into(),
                    number: *n,
                    url: i.remote.as_ref().and_then(|r| r.url.clone()),
                    state: None,
                });
            }
            i
        })
        .collect();
    announce(ctx, &observed.notices);
    Ok(Outcome::Done(Response {
        mode: "apply",
        repo,
        visibility: plan.visibility.clone(),
        consent: consent_view(observed),
        blast_radius: blast(&plan.items),
        items,
        plan_digest: digest,
        txn: Some(run.txn.id().to_string()),
        outcome: Some(if partial { "partial" } else { "completed" }.into()),
        already_applied: false,
        evidence: evidence_paths,
        refusals,
        notices: observed.notices.clone(),
        apply_with: None,
    }))
}

/// One remote write. An interrupted create first looks for its marker: the issue may have
/// been created by the request whose answer never arrived.
fn write_item(
    client: &Client,
    repo: &str,
    item: &Item,
    content: Option<&(String, String, String)>,
    interrupted: bool,
) -> Result<u64, crate::github::CallError> {
    match item.action.as_str() {
        "adopt_by_marker" => Ok(item.remote.as_ref().map_or(0, |r| r.number)),
        "close" => {
            let n = item.remote.as_ref().map_or(0, |r| r.number);
            let reason = item
                .closure
                .as_ref()
                .map_or("completed", |c| c.state_reason.as_str());
            client.call(
                Method::Patch,
                &format!("/repos/{repo}/issues/{n}"),
                Some(&json!({"state": "closed", "state_reason": reason})),
            )?;
            Ok(n)
        }
        _ => {
            if interrupted && let Some(n) = find_marker(client, repo, &item.object.id)? {
                return Ok(n);
            }
            let (_, title, body) = content.cloned().unwrap_or_default();
            let created = client.call(
                Method::Post,
                &format!("/repos/{repo}/issues"),
                Some(&json!({"title": title, "body": body})),
            )?;
            let n = u64_at(&created, &["number"]).unwrap_or(0);
            if let Some(c) = &item.closure {
                client.call(
                    Method::Patch,
                    &format!("/repos/{repo}/issues/{n}"),
                    Some(&json!({"state": "closed", "state_reason": c.state_reason})),
                )?;
            }
            Ok(n)
        }
    }
}

/// Each planned object's issue, as observed.
fn observed_plan_numbers(items: &[Item]) -> Vec<(String, u64)> {
    items
        .iter()
        .filter_map(|i| Some((i.object.id.clone(), i.remote.as_ref()?.number)))
        .collect()
}

/// Keeps the issue of each object for the next run's lookup ([`locate`] step 2), and forgets
/// the recorded issues found wanting.
fn remember(
    ctx: &Ctx,
    numbers: &[(String, u64)],
    repo: &str,
    forget: &[String],
) -> Result<(), Error> {
    crate::ops::github_map::record_issue_map(ctx.ws()?, repo, numbers, forget)?;
    Ok(())
}

/// The issue of an interrupted create, if the request whose answer was lost created it.
fn find_marker(
    client: &Client,
    repo: &str,
    id: &str,
) -> Result<Option<u64>, crate::github::CallError> {
    let located = locate(client, repo, &[(id.to_string(), None)])?;
    Ok(located.found.get(id).map(|r| r.number))
}

/// How many objects without a recorded issue are searched for one by one; with more, reading
/// the whole issue list is cheaper than the searches and GitHub's search rate limit allows.
const SEARCH_AT_MOST: usize = 20;

/// The issues found for the objects looked up, and the recorded issues found wanting.
#[derive(Debug, Default)]
struct Located {
    found: std::collections::BTreeMap<String, Remote>,
    /// Objects whose recorded issue is gone (404, 410), moved (301, another repository) or no
    /// longer carries their marker.
    gone: Vec<String>,
}

/// Finds the issue of each `(object id, recorded issue number)` by its marker, at a cost that
/// does not grow with the repository's issues:
///
/// 1. the newest 100 issues (one request): a repository that small is read whole, and an
///    issue just created is there even before GitHub's search has indexed it;
/// 2. each recorded issue, read by number and trusted only when it still carries the marker
///    in this repository;
/// 3. each object still not found, searched by its id (`/search/issues`, whose results are
///    checked for the marker too);
/// 4. the rest of the issue list, page after page, when that costs fewer requests than 2 and 3
///    (the first page's `Link: rel="last"` says how many pages there are), when more than
///    [`SEARCH_AT_MOST`] objects would need a search, or when a search cannot answer for sure.
///
/// Any page or lookup that fails fails the whole lookup: a marker not seen would be a second
/// issue.
fn locate(
    client: &Client,
    repo: &str,
    wanted: &[(String, Option<u64>)],
) -> Result<Located, crate::github::CallError> {
    let mut out = Located::default();
    if wanted.is_empty() {
        return Ok(out);
    }
    let route = format!("/repos/{repo}/issues?state=all&sort=created&direction=desc&per_page=100");
    let first = client.send(Method::Get, &route, None)?;
    if !first.is_success() {
        return Err(crate::github::failure(&first, &format!("GET {route}")));
    }
    take_markers(&first.body, repo, wanted, &mut out)?;
    if crate::github::next_link(&first.headers).is_none() {
        return Ok(out);
    }
    let rest: Vec<&(String, Option<u64>)> = wanted
        .iter()
        .filter(|(id, _)| !out.found.contains_key(id))
        .collect();
    if rest.is_empty() {
        return Ok(out);
    }
    let pages_left = crate::github::last_page(&first.headers).map(|n| n.saturating_sub(1));
    let unmapped = rest.iter().filter(|(_, n)| n.is_none()).count();
    let listing_is_cheaper =
        unmapped > SEARCH_AT_MOST || pages_left.is_some_and(|p| (p as usize) <= rest.len());
    if !listing_is_cheaper && targeted(client, repo, &rest, &mut out)? {
        return Ok(out);
    }
    let mut reply = first;
    while let Some(next) = client.next_page(&reply) {
        reply = next?;
        take_markers(&reply.body, repo, wanted, &mut out)?;
    }
    Ok(out)
}

/// Steps 2 and 3 of [`locate`]; `false` when a search could not answer for sure (its results
/// incomplete, or the search refused with 422), so the whole list must be read.
fn targeted(
    client: &Client,
    repo: &str,
    rest: &[&(String, Option<u64>)],
    out: &mut Located,
) -> Result<bool, crate::github::CallError> {
    for (id, recorded) in rest {
        if let Some(n) = recorded {
            let route = format!("/repos/{repo}/issues/{n}");
            let reply = client.send(Method::Get, &route, None)?;
            match reply.status {
                200 => match remote_of(&reply.body, repo, id) {
                    Some(r) => {
                        out.found.insert(id.clone(), r);
                        continue;
                    }
                    None => out.gone.push(id.clone()),
                },
                301 | 404 | 410 => out.gone.push(id.clone()),
                _ => return Err(crate::github::failure(&reply, &format!("GET {route}"))),
            }
        }
        let q = format!("repo:{repo} in:body \"{id}\"");
        let route = format!(
            "/search/issues?q={}&per_page=100",
            crate::github::encode(&q)
        );
        let reply = client.send(Method::Get, &route, None)?;
        if reply.status == 422 {
            return Ok(false);
        }
        if !reply.is_success() {
            return Err(crate::github::failure(&reply, &format!("GET {route}")));
        }
        let page: crate::github::types::SearchIssues = crate::github::decode(reply.body, &route)?;
        match page.items.iter().find_map(|i| remote_of(i, repo, id)) {
            Some(r) => {
                out.found.insert(id.clone(), r);
            }
            None if page.incomplete_results || page.total_count > page.items.len() as u64 => {
                return Ok(false);
            }
            None => {}
        }
    }
    Ok(true)
}

/// Records, from one page of the issue list, the issue of each wanted object whose marker it
/// carries.
fn take_markers(
    page: &Value,
    repo: &str,
    wanted: &[(String, Option<u64>)],
    out: &mut Located,
) -> Result<(), crate::github::CallError> {
    let Value::Array(issues) = page else {
        return Err(crate::github::CallError::Decode {
            route: format!("GET /repos/{repo}/issues"),
            detail: "expected a list".into(),
        });
    };
    for issue in issues {
        for (id, _) in wanted {
            if !out.found.contains_key(id)
                && let Some(r) = remote_of(issue, repo, id)
            {
                out.found.insert(id.clone(), r);
            }
        }
    }
    Ok(())
}

/// `issue` as the mirror of `id`, when it is an issue (not a pull request) of `repo` whose
/// body carries `id`'s marker.
fn remote_of(issue: &Value, repo: &str, id: &str) -> Option<Remote> {
    if issue.get("pull_request").is_some_and(|p| !p.is_null()) {
        return None;
    }
    let marked = str_at(issue, &["body"]).is_some_and(|b| b.contains(&format!("<!-- dacli:{id} ")));
    let here = str_at(issue, &["repository_url"]).is_none_or(|u| {
        u.to_ascii_lowercase()
            .ends_with(&format!("/repos/{}", repo.to_ascii_lowercase()))
    });
    if !marked || !here {
        return None;
    }
    Some(Remote {
        kind: "issue".into(),
        number: u64_at(issue, &["number"])?,
        url: str_at(issue, &["html_url"]).map(str::to_string),
        state: str_at(issue, &["state"]).map(str::to_string),
    })
}

/// Writes the issue number back to the task (`github = {issue, synced_at}`) when the caller
/// may: the task's owner, or root (FORMAT §12). Others rely on the marker alone.
fn map_task(ctx: &Ctx, slug: &str, item: &Item, number: u64) -> Result<(), Error> {
    if item.object.kind != "task" {
        return Ok(());
    }
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    crate::ops::github::record_issue(ws, slug, &item.object.id, &me, number, ctx.now(), &|| {
        ctx.new_ulid()
    })?;
    Ok(())
}

fn write_evidence(
    ctx: &Ctx,
    txn: &Txn,
    plan: &Plan,
    done: &[(Item, Option<u64>, &'static str)],
) -> Result<String, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?;
    let items = done
        .iter()
        .map(|(i, n, result)| EvidenceItem {
            subject: i.object.id.clone(),
            action: i.action.clone(),
            result: (*result).into(),
            before: i.content_digest.clone(),
            after: n.map(|n| format!("issue-{n}")),
            reasons: i
                .withheld
                .iter()
                .map(|w| w.reason.clone())
                .chain(i.closure.iter().map(|c| c.authority.clone()))
                .collect(),
        })
        .collect();
    let b = blast(&plan.items);
    let path = crate::ops::evidence::write(
        ws,
        &Evidence {
            id: ctx.new_ulid(),
            tool: TOOL,
            created_by: &me.agent.id,
            grant: me.agent.grant,
            outcome: "completed",
            txn: Some(&txn.id().to_string()),
            plan_digest: Some(txn.plan_digest()),
            git_head: None,
            summary: vec![
                ("create", b.create as i64),
                ("adopt", b.adopt as i64),
                ("close", b.close as i64),
                ("withhold", b.withhold as i64),
            ],
            items,
        },
    )?;
    Ok(ws.display(&path))
}

/// The record of a transaction that already completed.
fn completed(ctx: &Ctx, txn: &Txn, already: bool) -> Result<Response, Error> {
    let plan = frozen::<Plan>(txn)?;
    let evidence = txn
        .outcome_step()
        .and_then(|s| {
            s.observed
                .get("evidence")
                .and_then(|e| e.as_str())
                .map(str::to_string)
        })
        .into_iter()
        .collect();
    let _ = ctx;
    Ok(Response {
        mode: "apply",
        repo: plan.repo.clone(),
        visibility: plan.visibility.clone(),
        consent: ConsentView {
            covers_live_repo: true,
            id: plan.consent.clone(),
            classes: Vec::new(),
            granted_by: None,
        },
        blast_radius: blast(&plan.items),
        items: plan.items,
        plan_digest: txn.plan_digest().to_string(),
        txn: Some(txn.id().to_string()),
        outcome: txn.outcome().map(str::to_string),
        already_applied: already,
        evidence,
        refusals: Vec::new(),
        notices: Vec::new(),
        apply_with: None,
    })
}

pub(super) fn render(r: &Response, _ctx: &Ctx) -> String {
    let mut out = format!(
        "{} ({}): {} to create, {} to adopt, {} to close, {} withheld\n",
        r.repo,
        r.visibility,
        r.blast_radius.create,
        r.blast_radius.adopt,
        r.blast_radius.close,
        r.blast_radius.withhold
    );
    for i in &r.items {
        out.push_str(&format!(
            "  {:<16} {} {}",
            i.action, i.object.kind, i.object.id
        ));
        if let Some(rem) = &i.remote {
            out.push_str(&format!("  #{}", rem.number));
        }
        for w in &i.withheld {
            out.push_str(&format!("  [{}: {}]", w.reason, w.detail));
        }
        out.push('\n');
    }
    for f in &r.refusals {
        out.push_str(&format!(
            "refused [{}] {}: {}\nnext: {}\n",
            f.policy, f.subject, f.reason, f.next
        ));
    }
    match &r.outcome {
        None => match &r.apply_with {
            Some(command) => out.push_str(&format!(
                "plan_digest: {}\napply with `{command}`\n",
                r.plan_digest
            )),
            None => out.push_str(&format!(
                "plan_digest: {}\napply with --apply --digest {}\n",
                r.plan_digest, r.plan_digest
            )),
        },
        Some(o) => out.push_str(&format!("outcome: {o}\n")),
    }
    out
}
