//! `dacli next`: the ready tasks an agent could claim now, best first.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::view::{TaskSummary, estimate_of, project_slug};
use crate::dispatch::text::{
    fit_table, paint_if, priority_style, short_ref, truncate, visible_width,
};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::model::id::ROOT_AGENT;
use crate::model::role::Role;
use crate::model::task::{PlanTask, Status};
use crate::objects::{self, agents, roles};
use crate::policy::plan::{dependents, ready};
use crate::policy::scope::Scope;
use crate::store::{Problem, Reason};
use crate::workspace::Workspace;

/// Show the ready tasks you (or another agent) could claim now, in `task list --ready` order:
/// priority, then how many open tasks each unblocks; an open task assigned to you comes first.
/// WHY says what makes each one next: assigned to you, on the critical path (the longest
/// chain of remaining work in its project), what it unblocks, what unblocked it, or the
/// oldest ready task of its priority. Tasks outside the agent's role scope, and everything
/// once its role is at its WIP cap, are left out and counted.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Only this project (slug or `p-<slug>`).
    #[arg(long, value_name = "PROJECT")]
    #[serde(default)]
    project: Option<String>,
    /// How many tasks to show (0: all).
    #[arg(long, value_name = "N", default_value_t = 5)]
    #[serde(default = "five")]
    limit: usize,
    /// The agent to pick for (default: you).
    #[arg(long = "for", value_name = "AGENT")]
    #[serde(default, rename = "for")]
    for_agent: Option<String>,
}

fn five() -> usize {
    5
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    items: Vec<Item>,
    /// Ready tasks not listed: outside the role scope, over the WIP cap, or beyond `--limit`.
    omitted: usize,
    notices: Vec<Notice>,
    #[serde(skip)]
    left_out: LeftOut,
}

#[derive(Debug, Serialize)]
struct Item {
    rank: usize,
    task: TaskSummary,
    why: Vec<String>,
    /// What puts the task here, in words: what it unblocks, what unblocked it, or that it
    /// is the oldest ready task of its priority.
    reason: String,
}

#[derive(Debug, Serialize)]
struct Notice {
    code: &'static str,
    message: String,
}

/// Why ready tasks were left out, for the text output.
#[derive(Debug, Default)]
struct LeftOut {
    role: Option<String>,
    scope: usize,
    wip: usize,
    limit: usize,
}

pub(super) fn command() -> Command {
    Command::new("next", Class::Read, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let only = project_slug(ctx, req.project.as_deref())?;
    let agent_id = match &req.for_agent {
        Some(id) => {
            agents::load(ws, id).map_err(|e| match e {
                objects::Error::NotFound { .. } => {
                    Error::not_found(format!("no agent `{id}` in this workspace"))
                        .hint("list agents with `dacli agent list`")
                }
                e => e.into(),
            })?;
            id.clone()
        }
        None => ctx.identity()?.agent.id.clone(),
    };
    let mut role_of = RoleCache::default();
    // Root is exempt from role checks (COMMANDS.md §5 `task claim`).
    let role = if agent_id == ROOT_AGENT {
        None
    } else {
        role_of.role_record(ws, &agent_id)?
    };
    let scope = match &role {
        Some(r) => {
            Scope::new(&r.scope, &r.out_of_scope).map_err(|why| malformed_role(ws, r, why))?
        }
        None => Scope::everything(),
    };

    let view = super::view::load(ctx)?;
    let plan = view.plan_tasks();
    // An open task already assigned to the agent (its file names it) is the agent's to start
    // first: it is ready for them when its dependencies are, so `ready` sees it unassigned.
    let mut theirs = plan.clone();
    let mut assigned = std::collections::BTreeSet::new();
    for (i, t) in theirs.iter_mut().enumerate() {
        if t.status == Status::Open && t.assignee.as_deref() == Some(agent_id.as_str()) {
            t.assignee = None;
            assigned.insert(i);
        }
    }
    let mut order: Vec<usize> = ready(&theirs)
        .into_iter()
        .filter(|&i| only.as_ref().is_none_or(|p| &plan[i].project == p))
        .collect();
    order.sort_by_key(|i| !assigned.contains(i));
    let unblocks = dependents(&plan, &order);
    let chain = chain_lengths(&plan);
    let longest = longest_by_project(&plan, &chain);
    let assigned_to = if agent_id == ctx.identity()?.agent.id {
        "assigned to you".to_string()
    } else {
        format!("assigned to {agent_id}")
    };

    let mut notices = Vec::new();
    let at_cap = match &role {
        Some(r) if r.wip > 0 => {
            let active: Vec<String> = view
                .tasks
                .iter()
                .filter(|t| t.doc.status == Status::Active)
                .filter(|t| {
                    t.doc
                        .assignee()
                        .is_some_and(|a| role_of.role_name(ws, a).as_deref() == Some(&r.name))
                })
                .map(|t| t.reference())
                .collect();
            let full = active.len() >= r.wip as usize;
            if full {
                notices.push(Notice {
                    code: "wip_cap",
                    message: format!(
                        "role {} has {}/{} active tasks ({}): finish or `dacli task release` one before claiming another",
                        r.name,
                        active.len(),
                        r.wip,
                        active.join(", ")
                    ),
                });
            }
            full
        }
        _ => false,
    };

    let mut left_out = LeftOut {
        role: role.as_ref().map(|r| r.name.clone()),
        ..LeftOut::default()
    };
    let mut items = Vec::new();
    let by_id: std::collections::HashMap<&str, usize> = plan
        .iter()
        .enumerate()
        .map(|(j, t)| (t.id.as_str(), j))
        .collect();
    let mut seen_priority = std::collections::BTreeSet::new();
    for &i in &order {
        let t = &view.tasks[i];
        if at_cap {
            left_out.wip += 1;
            continue;
        }
        if !scope.outside(&t.doc.traces()).is_empty() {
            left_out.scope += 1;
            continue;
        }
        if req.limit > 0 && items.len() >= req.limit {
            left_out.limit += 1;
            continue;
        }
        let mut why = vec![plan[i].priority.clone()];
        let n = unblocks.get(&i).copied().unwrap_or(0);
        if n > 0 {
            why.push(format!("unblocks {n}"));
        }
        let priority = &plan[i].priority;
        let mut reason = Vec::new();
        if assigned.contains(&i) {
            reason.push(assigned_to.clone());
        }
        if chain[i] > weight(&plan[i]) + 1e-9
            && longest
                .get(plan[i].project.as_str())
                .is_some_and(|&l| chain[i] + 1e-9 >= l)
        {
            reason.push("on the critical path".to_string());
        }
        if n > 0 {
            reason.push(format!("unblocks {n} task(s)"));
        }
        let by: Vec<String> = plan[i]
            .depends_on
            .iter()
            .filter_map(|d| by_id.get(d.on.as_str()))
            .map(|&j| format!("{}/{}", plan[j].project, plan[j].number))
            .collect();
        if !by.is_empty() {
            reason.push(format!("unblocked by {}", by.join(", ")));
        }
        if reason.is_empty() {
            let first = !seen_priority.contains(priority.as_str());
            reason.push(format!(
                "{} ready {}",
                if first { "oldest" } else { "next oldest" },
                priority_words(priority)
            ));
            seen_priority.insert(priority.clone());
        }
        items.push(Item {
            rank: items.len() + 1,
            task: view.summary(t),
            why,
            reason: reason.join(", "),
        });
    }

    // Claims of this agent that lost to earlier ones (in another clone, or refused by the
    // owner's sync): said before it picks again.
    let claimed: std::collections::BTreeSet<&str> = view
        .journal
        .events
        .iter()
        .filter(|e| e.kind == "claim" && e.created_by == agent_id)
        .filter_map(|e| e.about.as_deref())
        .collect();
    for t in view
        .tasks
        .iter()
        .filter(|t| claimed.contains(t.task.id.as_str()))
    {
        let fold = view.folds.get(&t.task.id);
        if crate::ops::machines::claim_lost(&t.doc, &t.task.id, &agent_id, &view.journal, fold) {
            notices.push(Notice {
                code: "claim_lost",
                message: crate::ops::machines::claim_lost_message(&t.reference(), &t.doc),
            });
        }
    }

    let unestimated = order
        .iter()
        .filter(|&&i| estimate_of(&view.tasks[i]).is_none())
        .count();
    if unestimated > 0 {
        notices.push(Notice {
            code: "unestimated",
            message: format!(
                "{unestimated} of {} ready tasks have no estimate; the order ignores effort (add one with `dacli task edit <ref> --estimate O,P,Q`)",
                order.len()
            ),
        });
    }
    for n in &notices {
        ctx.notice(n.message.clone());
    }
    Ok(Outcome::Done(Response {
        omitted: left_out.scope + left_out.wip + left_out.limit,
        items,
        notices,
        left_out,
    }))
}

fn malformed_role(ws: &Workspace, role: &Role, why: String) -> Error {
    crate::store::Error::Malformed(Problem {
        path: ws.display(&ws.path(&["roles", &format!("{}.md", role.name)])),
        reason: Reason::Schema,
        detail: why,
    })
    .into()
}

/// Agents' roles, loaded once each.
#[derive(Default)]
struct RoleCache {
    names: BTreeMap<String, Option<String>>,
}

impl RoleCache {
    /// The role name an agent holds (`None`: no role, or no such agent).
    fn role_name(&mut self, ws: &Workspace, agent: &str) -> Option<String> {
        self.names
            .entry(agent.to_string())
            .or_insert_with(|| agents::load(ws, agent).ok().and_then(|a| a.role))
            .clone()
    }

    /// The role record an agent holds; `None` without a role or when the role file is missing
    /// (no scope and no cap, as `whoami` shows it).
    fn role_record(&mut self, ws: &Workspace, agent: &str) -> Result<Option<Role>, Error> {
        let Some(name) = self.role_name(ws, agent) else {
            return Ok(None);
        };
        match roles::load(ws, &name) {
            Ok(r) => Ok(Some(r)),
            Err(objects::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

/// A task's weight in a chain: its expected effort, or 1 when it has no estimate (so a chain
/// of unestimated tasks is as long as it has tasks).
fn weight(t: &PlanTask) -> f64 {
    t.estimate.as_ref().map_or(1.0, |e| e.expected())
}

/// For each not-done task, the work from its start to the end of the longest chain of
/// not-done tasks that wait on it (its weight plus the longest chain of any task depending on
/// it); 0 for done tasks. A dependency cycle (which `lint` reports) is cut where it closes.
fn chain_lengths(plan: &[PlanTask]) -> Vec<f64> {
    let by_id: std::collections::HashMap<&str, usize> = plan
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    let mut waiting: Vec<Vec<usize>> = vec![Vec::new(); plan.len()];
    for (j, t) in plan.iter().enumerate() {
        for d in &t.depends_on {
            if let Some(&i) = by_id.get(d.on.as_str()) {
                waiting[i].push(j);
            }
        }
    }
    // 0: not visited, 1: on the stack, 2: done.
    let mut state = vec![0u8; plan.len()];
    let mut len = vec![0.0f64; plan.len()];
    for start in 0..plan.len() {
        if state[start] != 0 {
            continue;
        }
        let mut stack = vec![(start, 0usize)];
        state[start] = 1;
        while let Some(&mut (i, ref mut next)) = stack.last_mut() {
            if let Some(&j) = waiting[i].get(*next) {
                *next += 1;
                if state[j] == 0 {
                    state[j] = 1;
                    stack.push((j, 0));
                }
                continue;
            }
            stack.pop();
            state[i] = 2;
            if plan[i].status == Status::Done {
                continue;
            }
            let tail = waiting[i]
                .iter()
                .filter(|&&j| state[j] == 2)
                .map(|&j| len[j])
                .fold(0.0, f64::max);
            len[i] = weight(&plan[i]) + tail;
        }
    }
    len
}

/// The longest chain of not-done work in each project.
fn longest_by_project<'p>(plan: &'p [PlanTask], chain: &[f64]) -> BTreeMap<&'p str, f64> {
    let mut out: BTreeMap<&str, f64> = BTreeMap::new();
    for (t, &l) in plan.iter().zip(chain) {
        let e = out.entry(t.project.as_str()).or_insert(0.0);
        *e = e.max(l);
    }
    out
}

/// A priority as words: `must` is a must-have.
fn priority_words(priority: &str) -> String {
    match priority {
        "must" | "should" | "could" => format!("{priority}-have"),
        other => other.to_string(),
    }
}

/// The fewest columns a title keeps before WHY moves under its row.
const TITLE_ROOM: usize = 30;

/// The table of `rows` (WHY fifth, TITLE last) fitted to `width`: when WHY would leave the
/// title fewer than [`TITLE_ROOM`] columns, WHY leaves the table and is said on a line of its
/// own under each row, cut to the width.
fn next_table(mut rows: Vec<Vec<String>>, width: Option<usize>) -> String {
    let Some(w) = width else {
        return fit_table(&rows, &[0, 3], None, 5);
    };
    let widest = |c: usize| rows.iter().map(|r| visible_width(&r[c])).max().unwrap_or(0);
    let others: usize = (0..5).map(widest).sum::<usize>() + 2 * 5;
    if w.saturating_sub(others) >= TITLE_ROOM {
        return fit_table(&rows, &[0, 3], width, 5);
    }
    let why: Vec<String> = rows.iter_mut().skip(1).map(|r| r.remove(4)).collect();
    rows[0].remove(4);
    let table = fit_table(&rows, &[0, 3], width, 4);
    let mut out = String::new();
    for (n, line) in table.lines().enumerate() {
        out.push_str(line);
        out.push('\n');
        if let Some(reason) = n.checked_sub(1).and_then(|k| why.get(k)) {
            out.push_str(&truncate(&format!("   why: {reason}"), w));
            out.push('\n');
        }
    }
    out
}

fn render(r: &Response, ctx: &Ctx) -> String {
    let mut out = String::new();
    let (color, width) = (ctx.color(), ctx.width());
    if r.items.is_empty() {
        out.push_str("Nothing ready to claim.\n");
    } else {
        let mut rows = vec![vec![
            "#".to_string(),
            "TASK".into(),
            "PRIORITY".into(),
            "TE".into(),
            "WHY".into(),
            "TITLE".into(),
        ]];
        for i in &r.items {
            rows.push(vec![
                i.rank.to_string(),
                if width.is_some() {
                    short_ref(&i.task.task.reference)
                } else {
                    i.task.task.reference.clone()
                },
                paint_if(color, priority_style(&i.task.priority), &i.task.priority),
                i.task
                    .estimate
                    .as_ref()
                    .map_or("-".to_string(), |e| e.expected.to_string()),
                i.reason.clone(),
                i.task.task.title.clone(),
            ]);
        }
        out.push_str(&next_table(rows, width));
    }
    if r.omitted > 0 {
        let l = &r.left_out;
        let role = l.role.as_deref().unwrap_or("-");
        let mut parts = Vec::new();
        if l.scope > 0 {
            parts.push(format!("{} outside role {role}'s scope", l.scope));
        }
        if l.wip > 0 {
            parts.push(format!("{} held back by role {role}'s WIP cap", l.wip));
        }
        if l.limit > 0 {
            parts.push(format!("{} beyond --limit", l.limit));
        }
        out.push_str(&format!(
            "\n{} more ready task(s) not shown: {}\n",
            r.omitted,
            parts.join(", ")
        ));
    }
    out
}
