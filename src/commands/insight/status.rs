//! `dacli status`: projects, task counts, active work, open questions, pending events.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::dispatch::text::{
    CYAN, DIM, GREEN, YELLOW, agent_short, ago, ago_text, fit_table, paint_if, short_ref,
    status_style, table,
};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Mcp, Outcome};
use crate::journal::EventState;
use crate::journal::index::Events;
use crate::journal::snapshot::{Folds, Snapshot};
use crate::model::task::Status;
use crate::model::task::TaskRef;
use crate::objects::WorkspaceInfo;
use crate::objects::index::TaskEntry;
use crate::objects::projects;
use crate::workspace::STATUS_FOLDERS;
use crate::workspace::names::check_slug;

/// Show the workspace at a glance: projects with task counts per status, active tasks,
/// open questions, pending events and recent activity.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Only this project (slug or `p-<slug>`).
    #[arg(long, value_name = "PROJECT")]
    #[serde(default)]
    project: Option<String>,
    /// How many recent events to show.
    #[arg(long, value_name = "N", default_value_t = 10)]
    #[serde(default = "ten")]
    recent: usize,
    /// List at most N active tasks, 0 for all; `active_total` and `active_truncated` say how
    /// many there are (the counts per project have them all).
    #[arg(long, value_name = "N", default_value_t = ACTIVE_LIMIT)]
    #[serde(default = "active_limit")]
    active_limit: usize,
    /// List the active tasks after this task id (the last one of the previous page).
    #[arg(long, value_name = "TASK_ID")]
    #[serde(default)]
    after: Option<String>,
    /// Add `mine`: your own unfinished tasks (the first ten), the open questions waiting for
    /// you and the pending events you must apply. The active tasks are then not listed, only
    /// counted.
    #[arg(long)]
    #[serde(default)]
    mine: bool,
}

/// Tasks `mine` lists at most; `total` counts them all.
const MINE_LIMIT: usize = 10;

fn ten() -> usize {
    10
}

/// Active tasks listed by default. Status is a glance, not an enumeration (as the MCP
/// summary, spec MCP.md §4): at 10,000 tasks a workspace has a thousand or more active,
/// 400 KB of output nobody reads; `task list --status active` pages through them all.
const ACTIVE_LIMIT: usize = 20;

fn active_limit() -> usize {
    ACTIVE_LIMIT
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    workspace: WorkspaceInfo,
    projects: Vec<ProjectStatus>,
    active: Vec<Active>,
    /// How many tasks are active in all.
    active_total: usize,
    /// Whether `active` lists fewer than that (`--active-limit`).
    active_truncated: bool,
    questions: Questions,
    pending: Pending,
    recent: Vec<EventRef>,
    warnings: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    mine: Option<Mine>,
}

/// What is the caller's: its unfinished tasks, the questions waiting for it, the pending
/// events it must apply.
#[derive(Debug, Serialize)]
struct Mine {
    agent: String,
    tasks: Vec<MyTask>,
    /// Unfinished tasks assigned to the caller, in all.
    total: usize,
    /// Open questions routed to the caller (its id or role), or about its tasks with no route.
    questions: Vec<String>,
    /// Pending events about objects the caller owns.
    pending_events: usize,
}

#[derive(Debug, Serialize)]
struct MyTask {
    #[serde(flatten)]
    task: TaskRef,
    status: &'static str,
}

#[derive(Debug, Serialize)]
struct ProjectStatus {
    id: String,
    title: String,
    status: String,
    stage: String,
    counts: BTreeMap<&'static str, usize>,
}

#[derive(Debug, Serialize)]
struct Active {
    task: TaskRef,
    assignee: Option<String>,
    since: Option<String>,
}

#[derive(Debug, Serialize)]
struct Questions {
    open: usize,
    items: Vec<Question>,
}

#[derive(Debug, Serialize)]
struct Question {
    question: String,
    about: Option<TaskRef>,
    to: Option<String>,
    age_s: i64,
}

#[derive(Debug, Serialize)]
struct Pending {
    events: usize,
    finish_requests: usize,
    by_owner: BTreeMap<String, usize>,
    oldest: Option<String>,
}

#[derive(Debug, Serialize)]
struct EventRef {
    id: String,
    kind: String,
    author: String,
    about: Option<String>,
    created: String,
    state: &'static str,
    rejected: Option<String>,
    /// How the text output names `about`: a task's reference, else the id itself.
    #[serde(skip)]
    about_shown: Option<String>,
}

fn zero_counts() -> BTreeMap<&'static str, usize> {
    STATUS_FOLDERS.iter().map(|f| (*f, 0)).collect()
}

/// The objects the workspace-wide status names from the event log: the subjects of open
/// questions, of pending events and of the `recent` latest events. (Each is an entry read:
/// answered questions are not shown.)
fn named_by_events(events: &Events, recent: usize) -> BTreeSet<String> {
    let answered = answered(events);
    let notable = notable(events);
    let notable = || notable.0.iter().map(|&at| &events.entries[at]);
    let questions = notable().filter(|e| e.kind() == "help" && !answered.0.contains(e.id()));
    let pending = notable().filter(|e| events.is_pending(e));
    let latest = events.entries.iter().rev().take(recent);
    questions
        .chain(pending)
        .chain(latest)
        .filter_map(|e| e.about().map(str::to_string))
        .collect()
}

/// The questions an `answer` event answers: asked twice a call (the tasks to look up, the
/// open questions), made once per settled log ([`Events::derived`]).
fn answered(events: &Events) -> std::sync::Arc<Answered> {
    events.derived(|events| {
        Answered(
            events
                .entries
                .iter()
                .filter(|e| e.kind() == "answer")
                .filter_map(|e| e.question().map(str::to_string))
                .collect(),
        )
    })
}

/// The ids of the questions answered ([`answered`]).
struct Answered(BTreeSet<String>);

/// Where the log's questions (`help`) and pending events are, in log order: the only events
/// status looks at one by one besides the latest, a few hundred among many thousands. Made
/// once per settled log ([`Events::derived`]).
struct Notable(Vec<usize>);

fn notable(events: &Events) -> std::sync::Arc<Notable> {
    events.derived(|events| {
        Notable(
            events
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.kind() == "help" || events.is_pending(e))
                .map(|(at, _)| at)
                .collect(),
        )
    })
}

pub(super) fn command() -> Command {
    Command::new("status", Class::Read, run, render).mcp(Mcp::Tier1("status"))
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let _building = ctx.index_progress();
    let only = match req.project.as_deref() {
        None => None,
        Some(p) => {
            let slug = p.strip_prefix("p-").unwrap_or(p);
            check_slug(slug).map_err(Error::bad_slug)?;
            Some(slug.to_string())
        }
    };
    let listing = projects::list(ws)?;
    ctx.warn_all(listing.warnings);
    if let Some(slug) = &only
        && !listing.items.iter().any(|p| &p.slug == slug)
    {
        return Err(
            Error::not_found(format!("no project `{slug}` in this workspace"))
                .hint("list projects with `dacli project list --status all`"),
        );
    }
    // Every read is folded: a pending claim or block shows as its effect at once. Only the
    // tasks pending events change are read in full; the rest come from the index, and for
    // the whole workspace from its rows: only active tasks and those events name are read.
    let passes = |f: &crate::model::dod::DodFacts| crate::policy::dod::evaluate(f).passed;
    let me = match req.mine {
        true => Some(ctx.identity()?.agent.clone()),
        false => None,
    };
    let me_id = me.as_ref().map(|a| a.id.clone());
    let is_mine = |assignee: Option<&str>, status: Status| {
        me_id.is_some() && assignee == me_id.as_deref() && status != Status::Done
    };
    let limit = match &me {
        Some(_) => Some(MINE_LIMIT),
        None => (req.active_limit > 0).then_some(req.active_limit),
    };
    // Per project (in walking order), tasks per status folder: the walk visits every task.
    let mut counted: Vec<(String, [usize; 4])> = Vec::new();
    let picked = match only {
        Some(_) => None,
        None => Snapshot::load_picked(
            ws,
            &passes,
            Some(&mut |p, status, assignee| {
                // Called for every task, a project's tasks one after the other.
                if counted.last().is_none_or(|(slug, _)| slug != p) {
                    counted.push((p.to_string(), [0; 4]));
                }
                if let (Some((_, counts)), Some(at)) = (
                    counted.last_mut(),
                    Status::ALL.iter().position(|s| *s == status),
                ) {
                    counts[at] += 1;
                }
                match &me {
                    Some(_) => is_mine(assignee, status),
                    None => status == Status::Active,
                }
            }),
            if me.is_some() {
                None
            } else {
                req.after.as_deref()
            },
            limit,
            &|events| named_by_events(events, req.recent),
            Folds::All,
        )?,
    };
    // Active tasks in all: the rows counted them; the general path counts what it lists.
    let mut active_total = None;
    let mut mine_total = None;
    let (snap, by_id) = match picked {
        Some(p) => {
            if me.is_some() {
                mine_total = Some(p.total);
                let at = Status::ALL.iter().position(|s| *s == Status::Active);
                active_total = Some(counted.iter().map(|(_, n)| at.map_or(0, |at| n[at])).sum());
            } else {
                active_total = Some(p.total);
            }
            (p.snap, Some(p.by_id))
        }
        None => (Snapshot::load(ws, &passes)?, None),
    };
    ctx.warn_all(snap.warnings.clone());
    let mut out_projects = Vec::new();
    let mut active = Vec::new();
    // Tasks by id: events name their object by id.
    let task_index: BTreeMap<&str, &TaskEntry> = match &by_id {
        Some(found) => found.iter().map(|(id, t)| (id.as_str(), &**t)).collect(),
        None => snap.tasks.iter().map(|t| (t.id(), &**t)).collect(),
    };
    let mut project_owner: BTreeMap<String, String> = BTreeMap::new();
    let mut my_tasks = Vec::new();
    let mut my_count = 0;
    // On the project path every task is loaded: the first page is cut here.
    let mut after_seen = req.after.is_none() || by_id.is_some();
    for p in &listing.items {
        project_owner.insert(p.id.clone(), p.owner.clone());
        let in_scope = only.as_ref().is_none_or(|s| s == &p.slug);
        let mut counts = zero_counts();
        if by_id.is_some()
            && let Some((_, n)) = counted.iter().find(|(slug, _)| *slug == p.slug)
        {
            counts = STATUS_FOLDERS.iter().copied().zip(*n).collect();
        }
        for t in snap.tasks.iter().filter(|t| t.project() == p.slug) {
            let status = snap.status(t);
            if by_id.is_none() {
                *counts.entry(status.as_str()).or_default() += 1;
            }
            if in_scope && is_mine(snap.assignee(t), status) {
                my_count += 1;
                if my_tasks.len() < MINE_LIMIT {
                    my_tasks.push(MyTask {
                        task: snap.task_ref(t),
                        status: status.as_str(),
                    });
                }
            }
            if in_scope && status == Status::Active && me.is_none() {
                if !after_seen {
                    after_seen = req.after.as_deref() == Some(t.id());
                    continue;
                }
                active.push(Active {
                    task: snap.task_ref(t),
                    assignee: snap.assignee(t).map(str::to_string),
                    since: snap.active_since(t),
                });
            }
        }
        if in_scope {
            out_projects.push(ProjectStatus {
                id: p.id.clone(),
                title: p.title.clone(),
                status: p.status.clone(),
                stage: p.stage.clone(),
                counts,
            });
        }
    }

    let active_total = match (active_total, &me) {
        (Some(n), _) => n,
        // The project path with `mine`: the counts have the active tasks.
        (None, Some(_)) => out_projects
            .iter()
            .map(|p: &ProjectStatus| p.counts.get("active").copied().unwrap_or(0))
            .sum(),
        (None, None) => active.len(),
    };
    if let Some(n) = limit.filter(|_| me.is_none()) {
        active.truncate(n);
    }
    // With `mine` the active tasks are only counted; a page (`after`) is cut when full.
    let active_truncated = match &me {
        Some(_) => active_total > 0,
        None => limit.is_some_and(|n| active.len() >= n && active_total > active.len()),
    };
    let events = &snap.events;
    let in_scope_event = |about: Option<&str>| match (&only, about) {
        (None, _) => true,
        (Some(slug), Some(id)) => {
            task_index.get(id).is_some_and(|t| t.project() == slug) || id == format!("p-{slug}")
        }
        (Some(_), None) => false,
    };
    let now = ctx.now();
    let answered = answered(events);
    let mut questions = Vec::new();
    let mut pending = Pending {
        events: 0,
        finish_requests: 0,
        by_owner: BTreeMap::new(),
        oldest: None,
    };
    let notable = notable(events);
    let mut my_questions = Vec::new();
    let mut my_pending = 0;
    for ev in notable
        .0
        .iter()
        .map(|&at| &events.entries[at])
        .filter(|e| in_scope_event(e.about()))
    {
        if ev.kind() == "help" && !answered.0.contains(ev.id()) {
            if let Some(agent) = &me {
                let routed = match ev.to() {
                    Some(to) => to == agent.id || agent.role.as_deref() == Some(to),
                    None => ev
                        .about()
                        .and_then(|a| task_index.get(a))
                        .is_some_and(|t| snap.owner(t) == agent.id),
                };
                if routed {
                    my_questions.push(ev.id().to_string());
                }
            }
            let created = ev.created().parse::<jiff::Timestamp>().unwrap_or(now);
            questions.push(Question {
                question: ev.id().to_string(),
                about: ev
                    .about()
                    .and_then(|a| task_index.get(a))
                    .map(|t| snap.task_ref(t)),
                to: ev.to().map(str::to_string),
                age_s: (now.as_second() - created.as_second()).max(0),
            });
        }
        if !events.is_pending(ev) {
            continue;
        }
        pending.events += 1;
        if ev.kind() == "finish" {
            pending.finish_requests += 1;
        }
        let owner = match ev.about() {
            Some("workspace") | None => Some(crate::model::id::ROOT_AGENT.to_string()),
            Some(id) => task_index
                .get(id)
                .map(|t| snap.owner(t).to_string())
                .or_else(|| project_owner.get(id).cloned()),
        };
        let owner = owner.unwrap_or_else(|| "unresolved".to_string());
        if me_id.as_deref() == Some(owner.as_str()) {
            my_pending += 1;
        }
        *pending.by_owner.entry(owner).or_default() += 1;
        if pending.oldest.is_none() {
            pending.oldest = Some(ev.created().to_string());
        }
    }
    let recent = events
        .entries
        .iter()
        .rev()
        .filter(|e| in_scope_event(e.about()))
        .take(req.recent)
        .map(|e| {
            let state = events.state(e);
            EventRef {
                id: e.id().to_string(),
                kind: e.kind().to_string(),
                author: e.created_by().to_string(),
                about: e.about().map(str::to_string),
                about_shown: e.about().map(|a| {
                    task_index
                        .get(a)
                        .map_or_else(|| a.to_string(), |t| t.reference())
                }),
                created: e.created().to_string(),
                state: state.as_str(),
                rejected: match state {
                    EventState::Rejected(r) => Some(r),
                    _ => None,
                },
            }
        })
        .collect();
    let warnings = ctx.warning_count();
    Ok(Outcome::Done(Response {
        workspace: WorkspaceInfo::of(ws),
        projects: out_projects,
        active,
        active_total,
        active_truncated,
        questions: Questions {
            open: questions.len(),
            items: questions,
        },
        pending,
        recent,
        warnings,
        mine: me.map(|agent| Mine {
            agent: agent.id,
            total: mine_total.unwrap_or(my_count),
            tasks: my_tasks,
            questions: my_questions,
            pending_events: my_pending,
        }),
    }))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    let now = ctx.now();
    let (color, width) = (ctx.color(), ctx.width());
    let agent = |a: &str| {
        if width.is_some() {
            agent_short(a)
        } else {
            a.to_string()
        }
    };
    let task_ref = |t: &str| {
        if width.is_some() {
            short_ref(t)
        } else {
            t.to_string()
        }
    };
    let mut out = String::new();
    let name = r.workspace.name.as_deref().unwrap_or("workspace");
    out.push_str(&format!("{name} (format {})\n\n", r.workspace.format));
    if r.projects.is_empty() {
        out.push_str("No projects yet.\n");
    } else {
        let mut rows = vec![vec![
            "PROJECT".to_string(),
            "STATUS".into(),
            "STAGE".into(),
            "OPEN".into(),
            "ACTIVE".into(),
            "BLOCKED".into(),
            "DONE".into(),
            "".into(),
        ]];
        for p in &r.projects {
            let c = |k| p.counts.get(k).copied().unwrap_or(0);
            rows.push(vec![
                p.id.clone(),
                paint_if(color, project_style(&p.status), &p.status),
                p.stage.clone(),
                c("open").to_string(),
                c("active").to_string(),
                c("blocked").to_string(),
                c("done").to_string(),
                bar(color, c("open"), c("active"), c("blocked"), c("done")),
            ]);
        }
        out.push_str(&table(&rows, &[3, 4, 5, 6]));
        out.push_str(&format!(
            "{}\n",
            [
                ("#", "done"),
                ("=", "active"),
                ("!", "blocked"),
                (".", "open")
            ]
            .iter()
            .map(|(cell, name)| format!("{} {name}", paint_if(color, status_style(name), cell)))
            .collect::<Vec<_>>()
            .join("  ")
        ));
    }
    if !r.active.is_empty() {
        out.push_str("\nActive:\n");
        let mut rows = vec![vec![String::new(); 4]];
        for a in &r.active {
            rows.push(vec![
                task_ref(&a.task.reference),
                a.assignee.as_deref().map_or_else(|| "-".to_string(), agent),
                a.task.title.clone(),
                a.since
                    .as_deref()
                    .map(|s| format!("(since {})", ago_text(now, s)))
                    .unwrap_or_default(),
            ]);
        }
        // Two leading spaces indent the rows; the header row is empty.
        let fitted = fit_table(&rows, &[], width.map(|w| w.saturating_sub(2)), 2);
        for line in fitted.lines().skip(1) {
            out.push_str(&format!("  {line}\n"));
        }
        if r.active_truncated {
            out.push_str(&format!(
                "  … {} more (dacli task list --status active)\n",
                r.active_total - r.active.len()
            ));
        }
    }
    if r.questions.open > 0 {
        out.push_str(&format!("\nOpen questions: {}\n", r.questions.open));
        for q in &r.questions.items {
            let about = q
                .about
                .as_ref()
                .map_or_else(|| "-".to_string(), |t| task_ref(&t.reference));
            let to = q.to.as_deref().map_or_else(|| "-".to_string(), agent);
            let asked = jiff::Timestamp::from_second(now.as_second() - q.age_s)
                .map(|t| ago(now, t))
                .unwrap_or_default();
            out.push_str(&format!(
                "  {}  {about}  to {to}  (asked {asked})\n",
                q.question
            ));
        }
    }
    out.push_str(&format!(
        "\nPending events: {} ({} finish requests)\n",
        r.pending.events, r.pending.finish_requests
    ));
    for (owner, n) in &r.pending.by_owner {
        out.push_str(&format!("  {}: {n}\n", agent(owner)));
    }
    if !r.recent.is_empty() {
        out.push_str("\nRecent:\n");
        let mut rows = vec![vec![String::new(); 5]];
        for e in &r.recent {
            rows.push(vec![
                ago_text(now, &e.created),
                e.kind.clone(),
                agent(&e.author),
                e.about_shown
                    .as_deref()
                    .map_or_else(|| "-".to_string(), task_ref),
                e.state.to_string(),
            ]);
        }
        for line in table(&rows, &[0]).lines().skip(1) {
            out.push_str(&format!("  {line}\n"));
        }
    }
    if r.warnings > 0 {
        out.push_str(&format!(
            "\n{} {} file(s) skipped; see the warnings above or run `dacli doctor`\n",
            paint_if(color, YELLOW, "warning:"),
            r.warnings
        ));
    }
    out
}

/// The colour of a project status.
fn project_style(status: &str) -> &'static str {
    match status {
        "active" => CYAN,
        "done" => GREEN,
        "paused" => YELLOW,
        _ => DIM,
    }
}

/// A 20-cell bar of open/active/blocked/done, made of distinct characters so it reads
/// without colour (the legend under the table names them); coloured by status when `color`.
fn bar(color: bool, open: usize, active: usize, blocked: usize, done: usize) -> String {
    let total = open + active + blocked + done;
    if total == 0 {
        return String::new();
    }
    let width = 20usize;
    let cells = |n: usize| (n * width + total / 2) / total;
    let (d, a, b) = (cells(done), cells(active), cells(blocked));
    let o = width.saturating_sub(d + a + b);
    format!(
        "[{}{}{}{}]",
        paint_if(color, status_style("done"), &"#".repeat(d)),
        paint_if(color, status_style("active"), &"=".repeat(a)),
        paint_if(color, status_style("blocked"), &"!".repeat(b)),
        ".".repeat(o)
    )
}
