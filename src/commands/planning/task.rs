//! `task add | list | show | edit` (COMMANDS.md §5).

use serde::{Deserialize, Serialize};
use toml_edit::{Array, DocumentMut, InlineTable, Value, value};

use super::common::{Locked, acts_as_owner, cycle_text, project_slug, reaches};
use crate::dispatch::editor::Checked;
use crate::dispatch::one_task::OneTask;
use crate::dispatch::text::{
    BOLD, GREEN, RED, YELLOW, agent_short, fit_table, paint_if, priority_style, short_ref,
    status_style, wrap_lines,
};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, ErrorKind, Mcp, Outcome, Refusal};
use crate::journal::snapshot::{Folds, Snapshot};
use crate::journal::view::{TaskSummary, summary_of};
use crate::model::body::{
    append_to_section, replace_section, replace_title, section_items, section_text,
};
use crate::model::dod::DodReport;
use crate::model::format_time;
use crate::model::id::ulid_time;
use crate::model::task::{DEP_TYPES, Dependency, Estimate, Status, TaskRef};
use crate::model::taskdoc::TaskDoc;
use crate::model::toml_time;
use crate::objects::index::TaskEntry;
use crate::objects::{projects, tasks};
use crate::workspace::names::{check_repo_path, check_slug, slugify};
use std::sync::Arc;
use ulid::Ulid;

/// MoSCoW priority.
#[derive(Debug, Clone, Copy, clap::ValueEnum, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Must,
    Should,
    Could,
    Wont,
}

impl Priority {
    fn as_str(self) -> &'static str {
        match self {
            Priority::Must => "must",
            Priority::Should => "should",
            Priority::Could => "could",
            Priority::Wont => "wont",
        }
    }
}

/// Create a task in `open/` of a project; you become its owner.
///
/// Give it acceptance criteria (`--accept`, repeatable): a criterion naming a command in
/// backticks must be verified with `task check --verify` before the task can be done.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddRequest {
    /// One-line title (with -e, the editor's template starts from it).
    #[arg(default_value = "")]
    title: String,
    /// Write the task in $VISUAL/$EDITOR: a template of its fields and sections, checked on
    /// save (the editor reopens with the error on top), kept under `.dacli/runs/drafts/` until
    /// it is added.
    #[arg(short = 'e', long = "edit")]
    #[serde(skip)]
    edit: bool,
    /// The project (default: the only active project).
    #[arg(long, value_name = "PROJECT")]
    #[serde(default)]
    project: Option<String>,
    /// The outcome this task serves.
    #[arg(long = "so-that", value_name = "TEXT")]
    #[serde(default)]
    so_that: Option<String>,
    /// Background a worker needs.
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    context: Option<String>,
    /// An acceptance criterion (repeatable).
    #[arg(long = "accept", value_name = "TEXT")]
    #[serde(default)]
    accept: Vec<String>,
    /// Something explicitly not part of this task (repeatable).
    #[arg(long = "out-of-scope", value_name = "TEXT")]
    #[serde(default)]
    out_of_scope: Vec<String>,
    /// Three-point estimate `O,P,Q` (optimistic ≤ probable ≤ pessimistic); a single number is
    /// refused.
    #[arg(long, value_name = "O,P,Q")]
    #[serde(default)]
    estimate: Option<String>,
    #[arg(long, value_enum, default_value = "should")]
    #[serde(default = "should")]
    priority: Priority,
    /// Parent task (same project).
    #[arg(long, value_name = "REF")]
    #[serde(default)]
    parent: Option<String>,
    /// A dependency `REF[:FS|SS|FF|SF]` (repeatable; default FS).
    #[arg(long = "depends-on", value_name = "REF[:TYPE]")]
    #[serde(default)]
    depends_on: Vec<String>,
    /// A repository path this task touches (repeatable).
    #[arg(long = "trace", value_name = "PATH")]
    #[serde(default)]
    traces: Vec<String>,
    /// A tag (repeatable).
    #[arg(long = "tag", value_name = "TAG")]
    #[serde(default)]
    tags: Vec<String>,
    /// Create it even when a not-done task has the same title.
    #[arg(long)]
    #[serde(default)]
    allow_duplicate: bool,
}

fn should() -> Priority {
    Priority::Should
}

impl Classify for AddRequest {}

#[derive(Debug, Serialize)]
pub struct Notice {
    code: &'static str,
    message: String,
}

#[derive(Debug, Serialize)]
pub struct AddResponse {
    /// `None` only when `-e` ended without a change (`effect` "unchanged").
    #[serde(skip_serializing_if = "Option::is_none")]
    task: Option<TaskSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    notices: Vec<Notice>,
    effect: &'static str,
}

fn line(flag: &str, text: &str) -> Result<(), Error> {
    if text.contains('\n') || text.trim().is_empty() {
        Err(Error::usage(format!("{flag} must be one non-empty line")))
    } else {
        Ok(())
    }
}

/// Parses `REF[:TYPE]`.
fn parse_dep(spec: &str) -> Result<(&str, &str), Error> {
    match spec.rsplit_once(':') {
        Some((r, t)) if DEP_TYPES.contains(&t) => Ok((r, t)),
        Some((_, t)) if t.chars().all(|c| c.is_ascii_uppercase()) && !t.is_empty() => {
            Err(Error::usage(format!(
                "--depends-on `{spec}`: type `{t}` is not one of FS, SS, FF, SF"
            )))
        }
        _ => Ok((spec, "FS")),
    }
}

/// What `task add` reads before writing, under the project's sequence lock: the folded
/// snapshot (only the tasks pending events change), the reference of the first task of
/// `project` that is not done and whose folded title makes `title_slug` (`task.duplicate`),
/// and the new task's number.
fn add_snapshot(
    ctx: &Ctx,
    project: &str,
    title_slug: &str,
) -> Result<(Snapshot, Option<String>, u32), Error> {
    let ws = ctx.ws()?;
    let passes = |f: &crate::model::dod::DodFacts| crate::policy::dod::evaluate(f).passed;
    let same = |snap: &Snapshot, t: &TaskEntry| {
        t.project() == project
            && snap.status(t) != Status::Done
            && slugify(&snap.task_ref(t).title) == title_slug
    };
    let none = |_: &crate::journal::index::Events| std::collections::BTreeSet::new();
    let Some(picked) =
        Snapshot::load_picked(ws, &passes, None, None, Some(0), &none, Folds::DoneOnly)?
    else {
        let snap = snapshot(ctx)?;
        let dup = snap
            .tasks
            .iter()
            .find(|t| same(&snap, t))
            .map(|t| t.reference());
        let numbers = snap.tasks.iter().filter(|t| t.project() == project);
        let number =
            crate::ops::tasks::number_after(project, numbers.map(|t| t.number()), &snap.warnings);
        return Ok((snap, dup, number));
    };
    ctx.warn_all(picked.snap.warnings.clone());
    let snap = picked.snap;
    let mut numbers = Vec::new();
    for (_, tasks) in picked.projects.iter().filter(|(slug, _)| slug == project) {
        tasks.each(|n, _, _| numbers.push(n));
    }
    let number = crate::ops::tasks::number_after(project, numbers.into_iter(), &snap.warnings);
    // Tasks the fold changed are judged by their folded fields; the rest by their files,
    // found through the hash of their title's slug.
    let mut found: Vec<Arc<TaskEntry>> = picked
        .by_id
        .values()
        .filter(|t| snap.is_folded(t.id()))
        .cloned()
        .collect();
    for (slug, tasks) in &picked.projects {
        if slug != project {
            continue;
        }
        let titled = tasks.open_titled(title_slug);
        found.extend(titled.into_iter().filter(|t| !snap.is_folded(t.id())));
    }
    let dup = found
        .iter()
        .filter(|t| same(&snap, t))
        .min_by(|a, b| (a.number(), a.id()).cmp(&(b.number(), b.id())))
        .map(|t| t.reference());
    Ok((snap, dup, number))
}

/// Resolves a reference for `--parent`/`--depends-on` through the rows: short forms within
/// `project` first, then ids and qualified forms as given (a bare id or number may live in
/// another project).
fn resolve_among_rows(
    ctx: &Ctx,
    slugs: &[String],
    project: &str,
    reference: &str,
) -> Result<Arc<TaskEntry>, Error> {
    let ws = ctx.ws()?;
    let scoped = if reference.contains('/') {
        reference.to_string()
    } else {
        format!("{project}/{reference}")
    };
    let (found, warnings) = crate::objects::lookup::resolve(ws, slugs, &scoped)?;
    ctx.warn_all(warnings);
    if let Ok(t) = found {
        return Ok(t);
    }
    let (found, warnings) = crate::objects::lookup::resolve(ws, slugs, reference)?;
    ctx.warn_all(warnings);
    Ok(found?)
}

/// Loads the folded snapshot and reports skipped files.
fn snapshot(ctx: &Ctx) -> Result<Snapshot, Error> {
    let _building = ctx.index_progress();
    let snap = Snapshot::load(ctx.ws()?, &|f| crate::policy::dod::evaluate(f).passed)?;
    ctx.warn_all(snap.warnings.clone());
    Ok(snap)
}

/// The summary of a task just created: nothing can be pending about a fresh id, so the file
/// written is the folded view; should an event name it already, the workspace is folded again.
fn created_summary(
    ctx: &Ctx,
    before: &Snapshot,
    created: &tasks::Located,
) -> Result<TaskSummary, Error> {
    let id = &created.task.id;
    if before.pending_count(id) > 0 {
        let one = OneTask::load(ctx, id)?;
        return Ok(summary_of(
            &one.task,
            Some(&one.fold),
            one.journal.pending_about(id).count(),
        ));
    }
    Ok(summary_of(created, None, 0))
}

fn dep_array(deps: &[Dependency]) -> Array {
    let mut arr = Array::new();
    for d in deps {
        let mut t = InlineTable::new();
        t.insert("on", Value::from(d.on.as_str()));
        t.insert("type", Value::from(d.kind.as_str()));
        arr.push(Value::InlineTable(t));
    }
    arr
}

fn str_array(items: &[String]) -> Array {
    let mut a = Array::new();
    for i in items {
        a.push(i.as_str());
    }
    a
}

fn add(ctx: &Ctx, req: AddRequest) -> Result<Outcome<AddResponse>, Error> {
    if req.edit {
        return add_in_editor(ctx, &req);
    }
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    line("TITLE", &req.title)?;
    for (flag, items) in [
        ("--accept", &req.accept),
        ("--out-of-scope", &req.out_of_scope),
    ] {
        for i in items {
            line(flag, i)?;
        }
    }
    let estimate = match &req.estimate {
        Some(e) => Some(Estimate::parse(e).map_err(|m| Error::usage(format!("--estimate: {m}")))?),
        None => None,
    };
    for t in &req.traces {
        check_repo_path(t)
            .map_err(|m| Error::new(ErrorKind::Usage, "E_PATH_ESCAPE", format!("--trace: {m}")))?;
    }
    for t in &req.tags {
        check_slug(t).map_err(|m| Error::bad_slug(format!("--tag: {m}")))?;
    }
    let listing = projects::list(ws)?;
    ctx.warn_all(listing.warnings.clone());
    let project = match &req.project {
        Some(p) => project_slug(ws, p)?,
        None => crate::dispatch::project::only_active(&listing.items, "task add")?
            .slug
            .clone(),
    };
    let head = listing
        .items
        .iter()
        .find(|p| p.slug == project)
        .ok_or_else(|| Error::not_found(format!("no project `{project}`")))?;
    if head.status != "active" {
        return Ok(Outcome::Refused(Refusal::new(
            "project.not_active",
            format!(
                "project {project} is {}; tasks are created in active projects only",
                head.status
            ),
            format!(
                "{project} is {}; ask {}: `dacli project edit {project} --status active`.",
                head.status, head.owner
            ),
        )));
    }
    let title_slug = slugify(&req.title);
    let id = ctx.new_ulid();
    // Without references to resolve, the task's file is written and flushed while the
    // project's rows are being proven (a listing, after another process's add).
    let early = if req.parent.is_none() && req.depends_on.is_empty() {
        Some(crate::ops::tasks::stage(
            ws,
            &new_doc(&req, &me, id, estimate.as_ref(), None, &[]),
        )?)
    } else {
        None
    };
    // One proof of the project's files serves the duplicate check and the number: the
    // sequence lock is held from before the listing until the file exists.
    let numbering = crate::ops::tasks::numbering(ws, &project)?;
    let (snap, dup, number) = add_snapshot(ctx, &project, &title_slug)?;
    if !req.allow_duplicate
        && let Some(dup) = dup
    {
        return Ok(Outcome::Refused(Refusal::new(
            "task.duplicate",
            format!("{dup} already has this title and is not done"),
            format!(
                "{dup} has this title: update it, or pass `--allow-duplicate` if the work differs."
            ),
        )));
    }
    let slugs: Vec<String> = listing.items.iter().map(|p| p.slug.clone()).collect();
    let parent = match &req.parent {
        Some(r) => {
            let p = resolve_among_rows(ctx, &slugs, &project, r)?;
            if p.project() != project {
                return Err(Error::usage(format!(
                    "--parent {} is in project {}, not {project}: a parent must be in the same project",
                    p.reference(),
                    p.project()
                )));
            }
            Some(p.id().to_string())
        }
        None => None,
    };
    let mut deps = Vec::new();
    for spec in &req.depends_on {
        let (r, kind) = parse_dep(spec)?;
        let t = resolve_among_rows(ctx, &slugs, &project, r)?;
        if !deps.iter().any(|d: &Dependency| d.on == t.id()) {
            deps.push(Dependency {
                on: t.id().to_string(),
                kind: kind.to_string(),
            });
        }
    }
    let new = match early {
        Some(new) => new,
        None => crate::ops::tasks::stage(
            ws,
            &new_doc(&req, &me, id, estimate.as_ref(), parent.as_deref(), &deps),
        )?,
    };
    ctx.warn_all(new.warning());
    let created = crate::ops::tasks::create(ws, &numbering, &title_slug, new, number)?;
    drop(numbering);
    let mut notices = Vec::new();
    if req.accept.is_empty() {
        notices.push(Notice {
            code: "no_acceptance",
            message: format!(
                "{} has no acceptance criteria; it cannot be done until it has some (`dacli task edit {} --accept \"…\"`)",
                created.reference(),
                created.reference()
            ),
        });
    }
    let summary = created_summary(ctx, &snap, &created)?;
    Ok(Outcome::Done(AddResponse {
        task: Some(summary),
        path: Some(created.path),
        notices,
        effect: "created",
    }))
}

/// `task add -e`: the task written in the editor, from a template that starts from the
/// command line's title, priority and project.
fn add_in_editor(ctx: &Ctx, req: &AddRequest) -> Result<Outcome<AddResponse>, Error> {
    let template =
        super::task_editor::add_template(&req.title, req.priority.as_str(), req.project.as_deref());
    let added = crate::dispatch::editor::edit_until_valid(ctx, "task-add", &template, |text| {
        let fields = match super::task_editor::parse_add(text) {
            Ok(f) => f,
            Err(why) => return Ok(Checked::Again(why)),
        };
        let req: AddRequest = match serde_json::from_value(fields) {
            Ok(r) => r,
            Err(e) => return Ok(Checked::Again(e.to_string())),
        };
        match add(ctx, req) {
            Ok(done) => Ok(Checked::Done(done)),
            Err(e) => match crate::dispatch::editor::as_retry(&e) {
                Some(why) => Ok(Checked::Again(why)),
                None => Err(e),
            },
        }
    })?;
    Ok(added.unwrap_or(Outcome::Done(AddResponse {
        task: None,
        path: None,
        notices: Vec::new(),
        effect: "unchanged",
    })))
}

/// The document of a new task made by `me` as `req` asks, with id `id`.
fn new_doc(
    req: &AddRequest,
    me: &str,
    id: Ulid,
    estimate: Option<&Estimate>,
    parent: Option<&str>,
    deps: &[Dependency],
) -> TaskDoc {
    let created = ulid_time(id);
    let mut front = DocumentMut::new();
    front["id"] = value(format!("t-{id}"));
    front["kind"] = value("task");
    front["created"] = value(toml_time(created));
    front["created_by"] = value(me);
    front["owner"] = value(me);
    front["rev"] = value(id.to_string());
    if let Some(p) = parent {
        front["parent"] = value(p);
    }
    front["priority"] = value(req.priority.as_str());
    if let Some(e) = estimate {
        let mut t = InlineTable::new();
        for (k, v) in [
            ("optimistic", e.optimistic),
            ("probable", e.probable),
            ("pessimistic", e.pessimistic),
        ] {
            t.insert(k, number(v));
        }
        front["estimate"] = value(t);
    }
    if !deps.is_empty() {
        front["depends_on"] = value(dep_array(deps));
    }
    if !req.traces.is_empty() {
        front["traces"] = value(str_array(&req.traces));
    }
    if !req.tags.is_empty() {
        front["tags"] = value(str_array(&req.tags));
    }
    let mut body = format!("# {}\n", req.title.trim());
    if let Some(s) = &req.so_that {
        body.push_str(&format!("\n## So that\n{}\n", s.trim()));
    }
    if let Some(c) = &req.context {
        body.push_str(&format!("\n## Context\n{}\n", c.trim()));
    }
    body.push_str("\n## Acceptance\n");
    for a in &req.accept {
        body.push_str(&format!("- [ ] {}\n", a.trim()));
    }
    if !req.out_of_scope.is_empty() {
        body.push_str("\n## Out of scope\n");
        for o in &req.out_of_scope {
            body.push_str(&format!("- {}\n", o.trim()));
        }
    }
    body.push_str(&format!(
        "\n## Log\n- {} {me} created\n",
        format_time(created)
    ));
    TaskDoc {
        front,
        body,
        status: Status::Open,
    }
}

/// An effort number as TOML: integers stay integers (`2`, not `2.0`).
fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        Value::from(v as i64)
    } else {
        Value::from(v)
    }
}

fn render_add(r: &AddResponse, ctx: &Ctx) -> String {
    let mut out = String::new();
    if !ctx.quiet()
        && let Some(t) = &r.task
    {
        out.push_str(&format!("created {}  {}\n", t.task.reference, t.task.title));
    }
    for n in &r.notices {
        out.push_str(&format!("note: {}\n", n.message));
    }
    out
}

/// List tasks (open, active and blocked by default; `--all` adds done), folded with every
/// pending event.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListRequest {
    #[arg(long, value_name = "PROJECT")]
    #[serde(default)]
    project: Option<String>,
    /// Only these statuses (repeatable).
    #[arg(long = "status", value_enum)]
    #[serde(default)]
    status: Vec<StatusArg>,
    /// Include done tasks.
    #[arg(long)]
    #[serde(default)]
    all: bool,
    #[arg(long, value_name = "AGENT")]
    #[serde(default)]
    assignee: Option<String>,
    #[arg(long, value_name = "AGENT")]
    #[serde(default)]
    owner: Option<String>,
    /// Only tasks assigned to you.
    #[arg(long)]
    #[serde(default)]
    mine: bool,
    /// Only tasks ready to start, best first.
    #[arg(long)]
    #[serde(default)]
    ready: bool,
    #[arg(long, value_name = "TAG")]
    #[serde(default)]
    tag: Option<String>,
    /// Only children of this task.
    #[arg(long, value_name = "REF")]
    #[serde(default)]
    parent: Option<String>,
    /// At most N tasks (0: all).
    #[arg(long, value_name = "N", default_value_t = 0)]
    #[serde(default)]
    limit: usize,
    /// Continue after this cursor (the `next_cursor` of the previous page).
    #[arg(long, value_name = "CURSOR")]
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StatusArg {
    Open,
    Active,
    Blocked,
    Done,
}

impl StatusArg {
    fn status(self) -> Status {
        match self {
            StatusArg::Open => Status::Open,
            StatusArg::Active => Status::Active,
            StatusArg::Blocked => Status::Blocked,
            StatusArg::Done => Status::Done,
        }
    }
}

impl Classify for ListRequest {}

#[derive(Debug, Serialize)]
pub struct ListResponse {
    tasks: Vec<TaskSummary>,
    total: usize,
    truncated: bool,
    next_cursor: Option<String>,
}

fn list(ctx: &Ctx, req: ListRequest) -> Result<Outcome<ListResponse>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    let project = req
        .project
        .as_deref()
        .map(|p| project_slug(ws, p))
        .transpose()?;
    if !req.ready
        && req.owner.is_none()
        && req.tag.is_none()
        && req.parent.is_none()
        && let Some(page) = list_page(ctx, &req, project.as_deref(), &me)?
    {
        return Ok(Outcome::Done(page));
    }
    let snap = snapshot(ctx)?;
    let parent = match &req.parent {
        Some(r) => Some(snap.resolve(r)?.id().to_string()),
        None => None,
    };
    let statuses = listed_statuses(&req);
    // Owner, tags and parent are never changed by a fold; status and assignee are.
    let mut selected: Vec<&Arc<TaskEntry>> = snap
        .tasks
        .iter()
        .filter(|t| project.as_ref().is_none_or(|p| t.project() == p))
        .filter(|t| statuses.contains(&snap.status(t)))
        .filter(|t| {
            req.assignee
                .as_deref()
                .is_none_or(|a| snap.assignee(t) == Some(a))
        })
        .filter(|t| req.owner.as_deref().is_none_or(|o| t.owner() == o))
        .filter(|t| !req.mine || snap.assignee(t) == Some(me.as_str()))
        .filter(|t| {
            req.tag
                .as_ref()
                .is_none_or(|g| t.tags().contains(&g.as_str()))
        })
        .filter(|t| parent.as_deref().is_none_or(|p| t.parent() == Some(p)))
        .collect();
    selected.sort_by(|a, b| {
        (&a.project(), a.number(), &a.id()).cmp(&(&b.project(), b.number(), &b.id()))
    });
    if req.ready {
        selected = ready_order(&snap, selected);
    }
    let total = selected.len();
    if let Some(c) = &req.cursor {
        let at = selected
            .iter()
            .position(|t| t.id() == c)
            .ok_or_else(|| Error::usage(format!("--cursor `{c}` is not a task of this listing")))?;
        selected.drain(..=at);
    }
    let truncated = req.limit > 0 && selected.len() > req.limit;
    if truncated {
        selected.truncate(req.limit);
    }
    let next_cursor = truncated
        .then(|| selected.last().map(|t| t.id().to_string()))
        .flatten();
    Ok(Outcome::Done(ListResponse {
        tasks: selected.iter().map(|t| snap.summary(t)).collect(),
        total,
        truncated,
        next_cursor,
    }))
}

/// The statuses a listing shows: those asked for, all with `--all`, else all but done.
fn listed_statuses(req: &ListRequest) -> Vec<Status> {
    if !req.status.is_empty() {
        req.status.iter().map(|s| s.status()).collect()
    } else if req.all {
        Status::ALL.to_vec()
    } else {
        vec![Status::Open, Status::Active, Status::Blocked]
    }
}

/// A listing filtered by project, status and assignee only, read through the rows
/// (docs/PERFORMANCE.md): only the page's tasks are read. The same answer as the general
/// path; `None` when a rows file failed a check and that path must answer instead.
fn list_page(
    ctx: &Ctx,
    req: &ListRequest,
    project: Option<&str>,
    me: &str,
) -> Result<Option<ListResponse>, Error> {
    let statuses = listed_statuses(req);
    let mut pick = |p: &str, status: Status, assignee: Option<&str>| {
        project.is_none_or(|want| p == want)
            && statuses.contains(&status)
            && req.assignee.as_deref().is_none_or(|a| assignee == Some(a))
            && (!req.mine || assignee == Some(me))
    };
    // One more than the page: whether it was truncated.
    let limit = (req.limit > 0).then(|| req.limit + 1);
    let Some(picked) = Snapshot::load_picked(
        ctx.ws()?,
        &|f| crate::policy::dod::evaluate(f).passed,
        Some(&mut pick),
        req.cursor.as_deref(),
        limit,
        &|_| std::collections::BTreeSet::new(),
        Folds::All,
    )?
    else {
        return Ok(None);
    };
    ctx.warn_all(picked.snap.warnings.clone());
    if let Some(c) = &req.cursor
        && !picked.after_found
    {
        return Err(Error::usage(format!(
            "--cursor `{c}` is not a task of this listing"
        )));
    }
    let snap = &picked.snap;
    let mut page: Vec<&Arc<TaskEntry>> = snap.tasks.iter().collect();
    let truncated = req.limit > 0 && page.len() > req.limit;
    if truncated {
        page.truncate(req.limit);
    }
    let next_cursor = truncated
        .then(|| page.last().map(|t| t.id().to_string()))
        .flatten();
    Ok(Some(ListResponse {
        tasks: page.iter().map(|t| snap.summary(t)).collect(),
        total: picked.total,
        truncated,
        next_cursor,
    }))
}

/// Ready tasks (COMMANDS.md §5 `--ready`) among `selected`, best first, judged on the whole
/// workspace (dependencies cross projects).
fn ready_order<'s>(
    snap: &'s Snapshot,
    selected: Vec<&'s Arc<TaskEntry>>,
) -> Vec<&'s Arc<TaskEntry>> {
    let plan = snap.plan_tasks();
    let keep: std::collections::BTreeSet<&str> = selected.iter().map(|t| t.id()).collect();
    crate::policy::plan::ready(&plan)
        .into_iter()
        .map(|i| &snap.tasks[i])
        .filter(|t| keep.contains(t.id()))
        .collect()
}

fn render_list(r: &ListResponse, ctx: &Ctx) -> String {
    if r.tasks.is_empty() {
        return "no tasks\n".into();
    }
    let (color, short) = (ctx.color(), ctx.width().is_some());
    let mut rows = vec![
        ["TASK", "STATUS", "PRIO", "ASSIGNEE", "DONE", "TITLE"]
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>(),
    ];
    for t in &r.tasks {
        let status = format!("{}{}", t.status, if t.pending > 0 { "*" } else { "" });
        rows.push(vec![
            if short {
                short_ref(&t.task.reference)
            } else {
                t.task.reference.clone()
            },
            paint_if(color, status_style(&status), &status),
            paint_if(color, priority_style(&t.priority), &t.priority),
            match &t.assignee {
                Some(a) if short => agent_short(a),
                Some(a) => a.clone(),
                None => "-".into(),
            },
            format!("{}/{}", t.acceptance.checked, t.acceptance.total),
            t.task.title.clone(),
        ]);
    }
    let mut out = fit_table(&rows, &[], ctx.width(), 5);
    if r.truncated {
        out.push_str(&format!(
            "… {} more (continue with --cursor {})\n",
            r.total - r.tasks.len(),
            r.next_cursor.as_deref().unwrap_or("")
        ));
    }
    if r.tasks.iter().any(|t| t.pending > 0) {
        out.push_str("* pending events folded in; the owner's `dacli sync` applies them\n");
    }
    out
}

/// Show one task, folded: fields, sections, criteria, Log, pending events and the
/// definition-of-done verdict.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShowRequest {
    /// Task reference: id, number, slug, `<NNN>-<slug>`, optionally `<project>/…`.
    reference: String,
}

impl Classify for ShowRequest {}

#[derive(Debug, Serialize)]
pub struct DepView {
    on: TaskRef,
    #[serde(rename = "type")]
    kind: String,
    satisfied: bool,
}

#[derive(Debug, Serialize)]
pub struct CriterionView {
    n: u32,
    text: String,
    checked: bool,
    command: Option<String>,
    verified: bool,
    pending_check: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct LogView {
    at: String,
    by: String,
    text: String,
    event: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct PendingView {
    id: String,
    kind: String,
    author: String,
    created: String,
    state: &'static str,
    why: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct ShowResponse {
    #[serde(flatten)]
    summary: TaskSummary,
    path: String,
    parent: Option<TaskRef>,
    depends_on: Vec<DepView>,
    traces: Vec<String>,
    so_that: Option<String>,
    context: Option<String>,
    out_of_scope: Vec<String>,
    criteria: Vec<CriterionView>,
    log: Vec<LogView>,
    pending_events: Vec<PendingView>,
    generation: i64,
    resolution: Option<String>,
    delivery: Option<serde_json::Value>,
    github: Option<serde_json::Value>,
    dod: DodReport,
    /// What the reader must know before acting on the task (`claim_lost`: its claim lost to
    /// an earlier one made in another clone).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notices: Vec<Notice>,
}

fn show(ctx: &Ctx, req: ShowRequest) -> Result<Outcome<ShowResponse>, Error> {
    let ws = ctx.ws()?;
    let one = OneTask::load(ctx, &req.reference)?;
    let (snap, t) = (&one.snap, &one.task);
    let doc = &t.doc;
    let status_of = |id: &str| snap.task(id).map(|x| snap.status(x));
    let facts = one.facts(ws);
    let dod = crate::policy::dod::evaluate(&facts);
    let fold = Some(&one.fold);
    let waiting_why = |id: &str| {
        fold.and_then(|f| {
            f.waiting
                .iter()
                .find(|(w, _)| w == id)
                .map(|(_, why)| why.to_string())
        })
        .or_else(|| {
            fold.and_then(|f| {
                f.rejected
                    .iter()
                    .find(|(r, _)| r == id)
                    .map(|(_, r)| format!("would be rejected: {r}"))
            })
        })
    };
    let pending_events: Vec<PendingView> = one
        .journal
        .pending_about(&t.task.id)
        .map(|e| PendingView {
            id: e.id.clone(),
            kind: e.kind.clone(),
            author: e.created_by.clone(),
            created: format_time(e.created),
            state: "pending",
            why: waiting_why(&e.id),
        })
        .collect();
    let pending_checks: Vec<(u32, String)> = one
        .journal
        .pending_about(&t.task.id)
        .filter(|e| e.kind == "check")
        .flat_map(|e| {
            e.front
                .get("items")
                .and_then(|i| i.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_inline_table()?.get("n")?.as_integer())
                        .map(|n| (n as u32, e.id.clone()))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .collect();
    let criteria = facts
        .criteria
        .iter()
        .map(|c| CriterionView {
            n: c.n,
            text: c.text.clone(),
            checked: c.checked,
            command: c.command.clone(),
            verified: c.verified,
            pending_check: pending_checks
                .iter()
                .find(|(n, _)| *n == c.n)
                .map(|(_, e)| e.clone()),
        })
        .collect();
    let mut notices = Vec::new();
    if let Ok(me) = ctx.identity()
        && crate::ops::machines::claim_lost_indexed(
            doc,
            &t.task.id,
            &me.agent.id,
            &snap.events,
            Some(&one.fold),
        )
    {
        let reference = format!("{}/{}", t.project, t.task.number);
        notices.push(Notice {
            code: "claim_lost",
            message: crate::ops::machines::claim_lost_message(&reference, doc),
        });
    }
    let to_json = |key: &str| {
        doc.front.get(key).and_then(|i| {
            let text = format!("v = {}", i.to_string().trim());
            toml_edit::de::from_str::<std::collections::BTreeMap<String, serde_json::Value>>(&text)
                .ok()
                .and_then(|m| m.get("v").cloned())
        })
    };
    Ok(Outcome::Done(ShowResponse {
        summary: summary_of(t, fold, pending_events.len()),
        path: t.path.clone(),
        parent: doc
            .parent()
            .and_then(|p| snap.task(p))
            .map(|p| snap.task_ref(p)),
        depends_on: doc
            .depends_on()
            .into_iter()
            .map(|d| {
                let satisfied = match d.kind.as_str() {
                    "FS" | "FF" => status_of(&d.on) == Some(Status::Done),
                    _ => matches!(status_of(&d.on), Some(Status::Active | Status::Done)),
                };
                DepView {
                    on: snap
                        .task(&d.on)
                        .map(|x| snap.task_ref(x))
                        .unwrap_or(TaskRef {
                            id: d.on.clone(),
                            reference: d.on.clone(),
                            project: String::new(),
                            number: 0,
                            title: "(missing task)".into(),
                        }),
                    kind: d.kind,
                    satisfied,
                }
            })
            .collect(),
        traces: doc.traces(),
        so_that: section_text(&doc.body, "So that").map(str::to_string),
        context: section_text(&doc.body, "Context").map(str::to_string),
        out_of_scope: section_items(&doc.body, "Out of scope"),
        criteria,
        log: doc
            .log()
            .into_iter()
            .map(|l| LogView {
                at: l.at,
                by: l.agent,
                text: l.text,
                event: l.event,
            })
            .collect(),
        pending_events,
        generation: doc.generation(),
        resolution: doc.resolution().map(str::to_string),
        delivery: to_json("delivery"),
        github: to_json("github"),
        dod,
        notices,
    }))
}

fn render_show(r: &ShowResponse, ctx: &Ctx) -> String {
    let s = &r.summary;
    let color = ctx.color();
    let agent = |a: &str| {
        if ctx.width().is_some() {
            agent_short(a)
        } else {
            a.to_string()
        }
    };
    let mut out = String::new();
    for n in &r.notices {
        out.push_str(&format!("note: {}\n", n.message));
    }
    out.push_str(&format!(
        "{}  {}\n",
        paint_if(color, BOLD, &s.task.reference),
        paint_if(color, BOLD, &s.task.title)
    ));
    out.push_str(&format!(
        "{} · {} · owner {} · assignee {}\n",
        paint_if(color, status_style(s.status.as_str()), s.status.as_str()),
        paint_if(color, priority_style(&s.priority), &s.priority),
        agent(&s.owner),
        s.assignee.as_deref().map_or_else(|| "-".to_string(), agent)
    ));
    if let Some(e) = &s.estimate {
        out.push_str(&format!(
            "estimate {}/{}/{} (expected {})\n",
            e.optimistic, e.probable, e.pessimistic, e.expected
        ));
    }
    if let Some(p) = &r.parent {
        out.push_str(&format!("parent {}\n", p.reference));
    }
    let not_yet = paint_if(color, YELLOW, " — not yet satisfied");
    for d in &r.depends_on {
        out.push_str(&format!(
            "depends on {} ({}){}\n",
            d.on.reference,
            d.kind,
            if d.satisfied { "" } else { &not_yet }
        ));
    }
    if let Some(so) = &r.so_that {
        out.push_str(&format!("\nSo that: {so}\n"));
    }
    out.push_str("\nAcceptance:\n");
    for c in &r.criteria {
        out.push_str(&format!(
            "  {}. [{}] {}{}\n",
            c.n,
            if c.checked { "x" } else { " " },
            c.text,
            if c.command.is_some() && c.checked && !c.verified {
                "  (unverified)"
            } else {
                ""
            }
        ));
    }
    if !r.pending_events.is_empty() {
        out.push_str("\nPending events (folded in above):\n");
        for p in &r.pending_events {
            out.push_str(&format!(
                "  {} {} by {}{}\n",
                p.id,
                p.kind,
                agent(&p.author),
                p.why
                    .as_deref()
                    .map(|w| format!(" — {w}"))
                    .unwrap_or_default()
            ));
        }
    }
    out.push_str("\nLog:\n");
    for l in &r.log {
        out.push_str(&format!("  {} {} {}\n", l.at, agent(&l.by), l.text));
    }
    if r.dod.passed {
        out.push_str(&format!(
            "\ndefinition of done: {}\n",
            paint_if(color, GREEN, "met")
        ));
    } else {
        out.push_str(&format!(
            "\ndefinition of done: {}\n",
            paint_if(color, RED, "not met")
        ));
        for u in &r.dod.unmet {
            out.push_str(&format!("  - {}: {} {}\n", u.policy, u.item, u.detail));
        }
    }
    // On a terminal, long lines (log comments, unmet items) wrap to its width.
    match ctx.width() {
        Some(w) => wrap_lines(&out, w),
        None => out,
    }
}

/// Edit a task you own. `--accept` appends criteria (existing ones are never reworded);
/// retitling keeps the number and filename.
///
/// With no flags (or `-e`) on a terminal, the task opens in $VISUAL/$EDITOR: its fields and
/// sections, checked on save (the editor reopens with the error on top), kept under
/// `.dacli/runs/drafts/` until applied. Without a terminal, give flags.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditRequest {
    reference: String,
    /// Edit in $VISUAL/$EDITOR (the default when no other flag is given).
    #[arg(short = 'e', long = "edit")]
    #[serde(skip)]
    edit: bool,
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    title: Option<String>,
    #[arg(long, value_enum)]
    #[serde(default)]
    priority: Option<Priority>,
    #[arg(long, value_name = "O,P,Q")]
    #[serde(default)]
    estimate: Option<String>,
    /// New parent, or `none`.
    #[arg(long, value_name = "REF|none")]
    #[serde(default)]
    parent: Option<String>,
    #[arg(long = "so-that", value_name = "TEXT")]
    #[serde(default)]
    so_that: Option<String>,
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    context: Option<String>,
    #[arg(long = "accept", value_name = "TEXT")]
    #[serde(default)]
    accept: Vec<String>,
    #[arg(long = "out-of-scope", value_name = "TEXT")]
    #[serde(default)]
    out_of_scope: Vec<String>,
    #[arg(long = "trace", value_name = "PATH")]
    #[serde(default)]
    trace: Vec<String>,
    #[arg(long = "untrace", value_name = "PATH")]
    #[serde(default)]
    untrace: Vec<String>,
    #[arg(long = "tag", value_name = "TAG")]
    #[serde(default)]
    tag: Vec<String>,
    #[arg(long = "untag", value_name = "TAG")]
    #[serde(default)]
    untag: Vec<String>,
}

impl Classify for EditRequest {}

impl EditRequest {
    /// No change is asked for by flags.
    fn asks_nothing(&self) -> bool {
        self.title.is_none()
            && self.priority.is_none()
            && self.estimate.is_none()
            && self.parent.is_none()
            && self.so_that.is_none()
            && self.context.is_none()
            && self.accept.is_empty()
            && self.out_of_scope.is_empty()
            && self.trace.is_empty()
            && self.untrace.is_empty()
            && self.tag.is_empty()
            && self.untag.is_empty()
    }
}

#[derive(Debug, Serialize)]
pub struct EditResponse {
    task: TaskSummary,
    changed: Vec<&'static str>,
    effect: &'static str,
}

fn edit(ctx: &Ctx, req: EditRequest) -> Result<Outcome<EditResponse>, Error> {
    if req.edit && !req.asks_nothing() {
        return Err(Error::usage(
            "give -e or the change as flags, not both: -e opens the whole task in $EDITOR",
        ));
    }
    if req.asks_nothing() {
        if !crate::dispatch::editor::has_terminal(ctx) {
            return Err(crate::dispatch::editor::needs_terminal(
                ctx,
                &format!("task edit {}", req.reference),
                &format!(
                    "`dacli task edit {} --title \"…\"` (`dacli task edit --help` lists the rest)",
                    req.reference
                ),
            ));
        }
        return edit_in_editor(ctx, &req.reference);
    }
    let one = OneTask::load(ctx, &req.reference)?;
    let (snap, t) = (&one.snap, &one.task);
    let reference = t.reference();
    if !acts_as_owner(ctx, t.doc.owner())? {
        return Ok(Outcome::Refused(not_owner(
            &reference,
            t.doc.owner(),
            "edit it",
        )));
    }
    if t.doc.status == Status::Done {
        return Ok(Outcome::Refused(is_done(&reference, t.doc.resolution())));
    }
    let new_parent = match req.parent.as_deref() {
        None => None,
        Some("none") => Some(None),
        Some(r) => {
            let p = snap.resolve(r)?;
            if p.project() != t.project {
                return Err(Error::usage(format!(
                    "--parent {} is in project {}: a parent must be in the same project",
                    p.reference(),
                    p.project()
                )));
            }
            if let Some(path) = reaches(snap, p.id(), &t.task.id)
                .or_else(|| (p.id() == t.task.id).then(|| vec![t.task.id.clone()]))
            {
                let mut cycle = vec![t.task.id.clone()];
                cycle.extend(path);
                return Ok(Outcome::Refused(cycle_refusal(snap, &cycle)));
            }
            Some(Some(p.id().to_string()))
        }
    };
    let estimate = match &req.estimate {
        Some(e) => Some(Estimate::parse(e).map_err(|m| Error::usage(format!("--estimate: {m}")))?),
        None => None,
    };
    for p in &req.trace {
        check_repo_path(p)
            .map_err(|m| Error::new(ErrorKind::Usage, "E_PATH_ESCAPE", format!("--trace: {m}")))?;
    }
    for g in &req.tag {
        check_slug(g).map_err(|m| Error::bad_slug(format!("--tag: {m}")))?;
    }
    let mut locked = Locked::take(ctx, t)?;
    locked.sync_first(ctx)?;
    let mut doc = locked.task.doc.clone();
    let mut changed = Vec::new();
    if let Some(title) = &req.title {
        line("--title", title)?;
        doc.body = replace_title(&doc.body, title.trim());
        changed.push("title");
    }
    if let Some(p) = req.priority {
        doc.front["priority"] = value(p.as_str());
        changed.push("priority");
    }
    if let Some(e) = estimate {
        let mut tbl = InlineTable::new();
        for (k, v) in [
            ("optimistic", e.optimistic),
            ("probable", e.probable),
            ("pessimistic", e.pessimistic),
        ] {
            tbl.insert(k, number(v));
        }
        doc.front["estimate"] = value(tbl);
        changed.push("estimate");
    }
    if let Some(p) = new_parent {
        doc.set_opt("parent", p.as_deref());
        changed.push("parent");
    }
    if let Some(s) = &req.so_that {
        doc.body = replace_section(&doc.body, "So that", s.trim());
        changed.push("so_that");
    }
    if let Some(c) = &req.context {
        doc.body = replace_section(&doc.body, "Context", c.trim());
        changed.push("context");
    }
    for a in &req.accept {
        line("--accept", a)?;
        doc.body = append_to_section(&doc.body, "Acceptance", &format!("- [ ] {}", a.trim()));
    }
    if !req.accept.is_empty() {
        changed.push("acceptance");
    }
    for o in &req.out_of_scope {
        line("--out-of-scope", o)?;
        doc.body = append_to_section(&doc.body, "Out of scope", &format!("- {}", o.trim()));
    }
    if !req.out_of_scope.is_empty() {
        changed.push("out_of_scope");
    }
    if !req.trace.is_empty() || !req.untrace.is_empty() {
        let mut traces = doc.traces();
        traces.retain(|x| !req.untrace.contains(x));
        for p in &req.trace {
            if !traces.contains(p) {
                traces.push(p.clone());
            }
        }
        set_list(&mut doc, "traces", &traces);
        changed.push("traces");
    }
    if !req.tag.is_empty() || !req.untag.is_empty() {
        let mut tags = doc.tags();
        tags.retain(|x| !req.untag.contains(x));
        for g in &req.tag {
            if !tags.contains(g) {
                tags.push(g.clone());
            }
        }
        set_list(&mut doc, "tags", &tags);
        changed.push("tags");
    }
    if !changed.is_empty() {
        locked.write(ctx, doc)?;
    }
    let id = locked.task.task.id.clone();
    drop(locked);
    let after = OneTask::load(ctx, &id)?;
    let task = summary_of(
        &after.task,
        Some(&after.fold),
        after.journal.pending_about(&id).count(),
    );
    Ok(Outcome::Done(EditResponse {
        task,
        effect: if changed.is_empty() {
            "unchanged"
        } else {
            "applied"
        },
        changed,
    }))
}

/// `task edit REF` on a terminal: the task in the editor; what the save changes is applied as
/// the flags that make the same change would be, so owner rules and events are the same.
fn edit_in_editor(ctx: &Ctx, reference: &str) -> Result<Outcome<EditResponse>, Error> {
    let one = OneTask::load(ctx, reference)?;
    let t = &one.task;
    let reference = t.reference();
    if !acts_as_owner(ctx, t.doc.owner())? {
        return Ok(Outcome::Refused(not_owner(
            &reference,
            t.doc.owner(),
            "edit it",
        )));
    }
    if t.doc.status == Status::Done {
        return Ok(Outcome::Refused(is_done(&reference, t.doc.resolution())));
    }
    let doc = &t.doc;
    let estimate = doc
        .estimate()
        .ok()
        .flatten()
        .map(|e| format!("{},{},{}", e.optimistic, e.probable, e.pessimistic))
        .unwrap_or_default();
    let current = super::task_editor::Current {
        reference: reference.clone(),
        title: doc.title().to_string(),
        priority: doc.priority().to_string(),
        estimate,
        parent: doc
            .parent()
            .map(|p| {
                one.snap
                    .task(p)
                    .map_or_else(|| p.to_string(), |x| x.reference())
            })
            .unwrap_or_default(),
        tags: doc.tags(),
        traces: doc.traces(),
        so_that: section_text(&doc.body, "So that")
            .unwrap_or_default()
            .to_string(),
        context: section_text(&doc.body, "Context")
            .unwrap_or_default()
            .to_string(),
        criteria: doc
            .criteria()
            .into_iter()
            .map(|c| (c.checked, c.text))
            .collect(),
        out_of_scope: section_items(&doc.body, "Out of scope"),
    };
    let unchanged = EditResponse {
        task: summary_of(
            t,
            Some(&one.fold),
            one.journal.pending_about(&t.task.id).count(),
        ),
        changed: Vec::new(),
        effect: "unchanged",
    };
    let template = super::task_editor::edit_template(&current);
    let done = crate::dispatch::editor::edit_until_valid(ctx, "task-edit", &template, |text| {
        let fields = match super::task_editor::parse_edit(text, &current) {
            Ok(f) => f,
            Err(why) => return Ok(Checked::Again(why)),
        };
        let req: EditRequest = match serde_json::from_value(fields) {
            Ok(r) => r,
            Err(e) => return Ok(Checked::Again(e.to_string())),
        };
        if req.asks_nothing() {
            return Ok(Checked::Done(None));
        }
        match edit(ctx, req) {
            Ok(Outcome::Refused(r)) if r.policy == "task.cycle" => {
                Ok(Checked::Again(format!("{} ({})", r.reason, r.next)))
            }
            Ok(done) => Ok(Checked::Done(Some(done))),
            Err(e) => match crate::dispatch::editor::as_retry(&e) {
                Some(why) => Ok(Checked::Again(why)),
                None => Err(e),
            },
        }
    })?;
    Ok(done.flatten().unwrap_or(Outcome::Done(unchanged)))
}

fn set_list(doc: &mut TaskDoc, key: &str, items: &[String]) {
    if items.is_empty() {
        doc.front.remove(key);
    } else {
        doc.front[key] = value(str_array(items));
    }
}

fn render_edit(r: &EditResponse, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    if r.changed.is_empty() {
        format!("{}: nothing to change\n", r.task.task.reference)
    } else {
        format!(
            "{}: changed {}\n",
            r.task.task.reference,
            r.changed.join(", ")
        )
    }
}

/// `task.not_owner` for an owner-only action.
pub(super) fn not_owner(reference: &str, owner: &str, action: &str) -> Refusal {
    Refusal::new(
        "task.not_owner",
        format!("{reference} belongs to {owner}; only its owner may {action}"),
        format!("Only {owner} may {action}: `dacli ask {reference} \"…\"`."),
    )
}

/// `task.is_done` for a change to a done task.
pub(super) fn is_done(reference: &str, resolution: Option<&str>) -> Refusal {
    Refusal::new(
        "task.is_done",
        format!(
            "{reference} is done ({})",
            resolution.unwrap_or("completed")
        ),
        format!(
            "{reference} is done ({}); request a reopen: `dacli task reopen {reference} --reason \"…\"`.",
            resolution.unwrap_or("completed")
        ),
    )
}

/// `task.cycle` naming the loop.
pub(super) fn cycle_refusal(snap: &Snapshot, cycle: &[String]) -> Refusal {
    let text = cycle_text(snap, cycle);
    Refusal::new(
        "task.cycle",
        format!("{text} would be a cycle"),
        format!("{text} would be a cycle; drop one edge."),
    )
}

pub(super) fn commands() -> Vec<Command> {
    vec![
        Command::new("task.add", Class::Mutate, add, render_add)
            .mcp(Mcp::Tier1("add_task"))
            .ro_alternative(
                "record the missing work as `dacli note add finding \"…\" --about <ref>` or `dacli ask`; an rw agent files tasks",
            ),
        Command::new("task.list", Class::Read, list, render_list).mcp(Mcp::Tier1("list_tasks")),
        Command::new("task.show", Class::Read, show, render_show),
        Command::new("task.edit", Class::Mutate, edit, render_edit),
    ]
}
