//! `dacli wbs`: the work breakdown, the `parent` tree of each project with PERT rollups.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::view::{TaskSummary, View, effort_text, estimate_of, project_slug};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::model::task::Status;
use crate::objects::projects;
use crate::policy::plan::{Rollup, round2};

/// Show the work breakdown: each project's tasks as the tree their `parent` links make, roots
/// by number, with expected effort `Te = (o + 4p + q) / 6`, `σ = (q − o) / 6`, and rollups that
/// sum `Te` and combine `σ` as the root of the sum of squares.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Only this project (slug or `p-<slug>`).
    #[arg(long, value_name = "PROJECT")]
    #[serde(default)]
    project: Option<String>,
    /// Show this many levels (1: roots only); rollups still cover every level.
    #[arg(long, value_name = "N")]
    #[serde(default)]
    depth: Option<usize>,
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    projects: Vec<ProjectTree>,
}

#[derive(Debug, Serialize)]
struct ProjectTree {
    id: String,
    rollup: RollupView,
    nodes: Vec<Node>,
}

#[derive(Debug, Serialize)]
struct Node {
    task: TaskSummary,
    expected: Option<f64>,
    sigma: Option<f64>,
    rollup: RollupView,
    children: Vec<Node>,
}

#[derive(Debug, Clone, Copy, Serialize)]
struct RollupView {
    expected: f64,
    sigma: f64,
    done: f64,
    tasks: usize,
    unestimated: usize,
}

impl From<&Rollup> for RollupView {
    fn from(r: &Rollup) -> RollupView {
        RollupView {
            expected: round2(r.expected),
            sigma: round2(r.sigma()),
            done: round2(r.done),
            tasks: r.tasks,
            unestimated: r.unestimated,
        }
    }
}

pub(super) fn command() -> Command {
    Command::new("wbs", Class::Read, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    if req.depth == Some(0) {
        return Err(Error::usage(
            "--depth must be at least 1 (1 shows the roots only)",
        ));
    }
    let only = project_slug(ctx, req.project.as_deref())?;
    let view = super::view::load(ctx)?;
    let listing = projects::list(ctx.ws()?)?;
    ctx.warn_all(listing.warnings);
    let mut out = Vec::new();
    for p in &listing.items {
        if only.as_ref().is_some_and(|s| s != &p.slug) {
            continue;
        }
        let members: Vec<usize> = (0..view.tasks.len())
            .filter(|&i| view.tasks[i].project == p.slug)
            .collect();
        let tree = Tree::new(&view, &members);
        let mut rollup = Rollup::default();
        let mut nodes = Vec::new();
        for &root in &tree.roots {
            let node = tree.node(&view, root, 1, req.depth);
            rollup.merge(&node.1);
            nodes.push(node.0);
        }
        out.push(ProjectTree {
            id: p.id.clone(),
            rollup: RollupView::from(&rollup),
            nodes,
        });
    }
    Ok(Outcome::Done(Response { projects: out }))
}

/// The parent links of one project's tasks (indices into the view).
struct Tree {
    roots: Vec<usize>,
    children: BTreeMap<usize, Vec<usize>>,
}

impl Tree {
    /// Roots are tasks without a parent in the project (no `parent`, or one that names no task
    /// of the project). Members of a parent cycle, which no root reaches, become roots at the
    /// lowest number of the cycle, so every task appears exactly once.
    fn new(view: &View, members: &[usize]) -> Tree {
        let by_id: BTreeMap<&str, usize> = members
            .iter()
            .map(|&i| (view.tasks[i].task.id.as_str(), i))
            .collect();
        let mut roots = Vec::new();
        let mut children: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &i in members {
            match view.tasks[i].doc.parent().and_then(|p| by_id.get(p)) {
                Some(&parent) if parent != i => children.entry(parent).or_default().push(i),
                _ => roots.push(i),
            }
        }
        let mut tree = Tree { roots, children };
        let mut seen: BTreeSet<usize> = BTreeSet::new();
        let mut stack: Vec<usize> = tree.roots.clone();
        loop {
            while let Some(i) = stack.pop() {
                if seen.insert(i) {
                    stack.extend(tree.children.get(&i).into_iter().flatten());
                }
            }
            match members.iter().find(|i| !seen.contains(i)) {
                Some(&orphan) => {
                    // Break the cycle above `orphan`: it becomes a root.
                    for kids in tree.children.values_mut() {
                        kids.retain(|k| *k != orphan);
                    }
                    tree.roots.push(orphan);
                    stack.push(orphan);
                }
                None => break,
            }
        }
        tree.roots.sort_by_key(|&i| (view.tasks[i].task.number, i));
        tree
    }

    /// The node of task `i` at `level` (1 for roots) and the rollup of its whole subtree.
    fn node(&self, view: &View, i: usize, level: usize, depth: Option<usize>) -> (Node, Rollup) {
        let t = &view.tasks[i];
        let estimate = estimate_of(t);
        let mut rollup = Rollup::default();
        rollup.add(estimate.as_ref(), t.doc.status == Status::Done);
        let mut children = Vec::new();
        for &c in self.children.get(&i).into_iter().flatten() {
            let (node, sub) = self.node(view, c, level + 1, depth);
            rollup.merge(&sub);
            if depth.is_none_or(|d| level < d) {
                children.push(node);
            }
        }
        let node = Node {
            task: view.summary(t),
            expected: estimate.map(|e| round2(e.expected())),
            sigma: estimate.map(|e| round2(e.sigma())),
            rollup: RollupView::from(&rollup),
            children,
        };
        (node, rollup)
    }
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    let mut out = String::new();
    for p in &r.projects {
        out.push_str(&format!("{}  {}\n", p.id, rollup_text(&p.rollup)));
        for n in &p.nodes {
            render_node(n, 1, &mut out);
        }
    }
    if r.projects.is_empty() {
        out.push_str("No projects yet.\n");
    }
    out
}

fn render_node(n: &Node, level: usize, out: &mut String) {
    let own = match (n.expected, n.sigma) {
        (Some(e), Some(s)) => format!("Te {} ± {}", effort_text(e), effort_text(s)),
        _ => "Te -".to_string(),
    };
    let total = if n.children.is_empty() && n.rollup.tasks == 1 {
        String::new()
    } else {
        format!("  [{}]", rollup_text(&n.rollup))
    };
    out.push_str(&format!(
        "{}{:03} {:<7} {:<6} {own}{total}  {}\n",
        "  ".repeat(level),
        n.task.task.number,
        n.task.status,
        n.task.priority,
        n.task.task.title
    ));
    for c in &n.children {
        render_node(c, level + 1, out);
    }
}

fn rollup_text(r: &RollupView) -> String {
    let mut s = format!(
        "Σ {} ± {}, done {}, {} task(s)",
        effort_text(r.expected),
        effort_text(r.sigma),
        effort_text(r.done),
        r.tasks
    );
    if r.unestimated > 0 {
        s.push_str(&format!(", {} unestimated", r.unestimated));
    }
    s
}
