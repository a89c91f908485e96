//! `dacli wbs`: the work breakdown, the `parent` tree of each project with PERT rollups.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::chart::{fit_text, text_width};
use super::view::{TaskSummary, View, effort_text, estimate_of, project_slug};
use crate::dispatch::text::{pad, paint_if, priority_style, status_style, truncate, visible_width};
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
    /// What to print: the indented tree, an SVG chart, or a Graphviz DOT graph.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    #[serde(default)]
    format: Format,
    /// Write the chart to this file (relative to the current directory; inside the work tree,
    /// outside the workspace) instead of stdout.
    #[arg(long, value_name = "FILE")]
    #[serde(default)]
    out: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Format {
    #[default]
    Text,
    Svg,
    Dot,
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    projects: Vec<ProjectTree>,
    /// The chart (`--format svg|dot` with `--json`), else null.
    chart: Option<String>,
    #[serde(skip)]
    format: Format,
    /// Where the chart went (`--out`), relative to the work-tree root.
    #[serde(skip)]
    written: Option<String>,
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
    let ws = ctx.ws()?;
    let out_file = req
        .out
        .as_deref()
        .map(|o| super::burndown::out_path(ctx, ws, o))
        .transpose()?;
    if out_file.is_some() && req.format == Format::Text {
        return Err(Error::usage(
            "--out writes a chart: add --format svg or --format dot",
        ));
    }
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
    let chart = match req.format {
        Format::Text => None,
        Format::Svg => Some(svg(&out)),
        Format::Dot => Some(dot(&out)),
    };
    let mut written = None;
    if let (Some(path), Some(c)) = (&out_file, &chart) {
        crate::ops::reports::write(ws, path, c)?;
        written = Some(ws.display(path));
    }
    Ok(Outcome::Done(Response {
        projects: out,
        chart: if written.is_some() { None } else { chart },
        format: req.format,
        written,
    }))
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

fn render(r: &Response, ctx: &Ctx) -> String {
    if let Some(path) = &r.written {
        return format!("wrote {path}\n");
    }
    if r.format != Format::Text {
        return r.chart.clone().unwrap_or_default();
    }
    let mut out = String::new();
    for p in &r.projects {
        out.push_str(&format!("{}  {}\n", p.id, rollup_text(&p.rollup)));
        for n in &p.nodes {
            render_node(n, 1, (ctx.color(), ctx.width()), &mut out);
        }
    }
    if r.projects.is_empty() {
        out.push_str("No projects yet.\n");
    }
    out
}

/// One line per task, indented by level; with a terminal `width` the title is cut to fit.
fn render_node(n: &Node, level: usize, term: (bool, Option<usize>), out: &mut String) {
    let (color, width) = term;
    let own = match (n.expected, n.sigma) {
        (Some(e), Some(s)) => format!("Te {} ± {}", effort_text(e), effort_text(s)),
        _ => "Te -".to_string(),
    };
    let total = if n.children.is_empty() && n.rollup.tasks == 1 {
        String::new()
    } else {
        format!("  [{}]", rollup_text(&n.rollup))
    };
    let status = n.task.status.to_string();
    let head = format!(
        "{}{:03} {} {} ",
        "  ".repeat(level),
        n.task.task.number,
        paint_if(color, status_style(&status), &pad(&status, 7, false)),
        paint_if(
            color,
            priority_style(&n.task.priority),
            &pad(&n.task.priority, 6, false)
        ),
    );
    let tail = format!("{own}{total}");
    match width {
        // On a terminal the title keeps at least TITLE_MIN characters: the figures give way
        // first, whole parts at a time (the rollup's details, then the rollup, then the
        // task's own Te), and the title is cut only to fit what is left.
        Some(w) => {
            const TITLE_MIN: usize = 24;
            let avail = w.saturating_sub(visible_width(&head));
            let title_len = n.task.task.title.chars().count();
            let short_total = if total.is_empty() {
                String::new()
            } else {
                format!(
                    "  [Σ {} ± {}]",
                    effort_text(n.rollup.expected),
                    effort_text(n.rollup.sigma)
                )
            };
            let choices = [
                tail.clone(),
                format!("{own}{short_total}"),
                own,
                String::new(),
            ];
            let tail = choices
                .iter()
                .find(|c| {
                    let room = avail.saturating_sub(c.chars().count() + 2);
                    c.is_empty() || room >= title_len.min(TITLE_MIN)
                })
                .cloned()
                .unwrap_or_default();
            let room = if tail.is_empty() {
                avail
            } else {
                avail.saturating_sub(tail.chars().count() + 2)
            };
            let title = truncate(&n.task.task.title, room.max(8));
            if tail.is_empty() {
                out.push_str(&format!("{head}{title}\n"));
            } else {
                out.push_str(&format!("{head}{title}  {tail}\n"));
            }
        }
        None => out.push_str(&format!("{head}{tail}  {}\n", n.task.task.title)),
    }
    for c in &n.children {
        render_node(c, level + 1, term, out);
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

/// One row of a chart: its level (0 for the project line), the project, and the task node.
type Row<'a> = (usize, &'a ProjectTree, Option<&'a Node>);

/// Rows of the tree in display order.
fn rows(projects: &[ProjectTree]) -> Vec<Row<'_>> {
    fn walk<'a>(n: &'a Node, level: usize, p: &'a ProjectTree, out: &mut Vec<Row<'a>>) {
        out.push((level, p, Some(n)));
        for c in &n.children {
            walk(c, level + 1, p, out);
        }
    }
    let mut out = Vec::new();
    for p in projects {
        out.push((0, p, None));
        for n in &p.nodes {
            walk(n, 1, p, &mut out);
        }
    }
    out
}

fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A deterministic SVG of the breakdown: one row per task, indented by level, with elbow
/// connectors to its parent and a bar whose length is the task's expected effort relative to
/// the largest; done tasks are filled, others outlined. No scripts, fonts or timestamps.
fn svg(projects: &[ProjectTree]) -> String {
    const ROW: usize = 26;
    const MAX_INDENT: usize = 8;
    /// Where labels end: 8 px before the bar column.
    const LABEL_END: f64 = 532.0;
    /// Bold text is about this much wider.
    const BOLD: f64 = 1.1;
    const WIDTH: usize = 720;
    let rows = rows(projects);
    let height = 24 + rows.len() * ROW + 8;
    let max_te = rows
        .iter()
        .filter_map(|(_, _, n)| {
            n.and_then(|n| {
                n.rollup
                    .expected
                    .partial_cmp(&0.0)
                    .map(|_| n.rollup.expected)
            })
        })
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\">\n<rect width=\"{WIDTH}\" height=\"{height}\" fill=\"#ffffff\"/>\n"
    );
    let mut parents: Vec<usize> = Vec::new();
    for (i, (level, p, node)) in rows.iter().enumerate() {
        let y = 24 + i * ROW;
        // Indentation stops deepening at MAX_INDENT levels so deep titles keep room.
        let x = 12 + (*level).min(MAX_INDENT) * 22;
        match node {
            None => {
                // A long project id is cut to end before the bar column, the sums kept.
                let sums = format!(
                    " — Σ {} ± {}",
                    effort_text(p.rollup.expected),
                    effort_text(p.rollup.sigma)
                );
                let room = LABEL_END - 12.0 - text_width(&sums, 13.0 * BOLD);
                let id = fit_text(&p.id, room, 13.0 * BOLD);
                let tooltip = if id == p.id {
                    String::new()
                } else {
                    format!("<title>{}</title>", xml(&p.id))
                };
                s.push_str(&format!(
                    "<text x=\"12\" y=\"{}\" font-size=\"13\" font-weight=\"bold\" fill=\"#222222\">{tooltip}{}{}</text>\n",
                    y + 4,
                    xml(&id),
                    xml(&sums)
                ));
                if i == 0 {
                    s.push_str(&format!(
                        "<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#57606a\">bar: Σ Te · filled: done</text>\n",
                        LABEL_END + 8.0,
                        y + 4
                    ));
                }
                parents.clear();
                parents.push(y);
            }
            Some(n) => {
                parents.truncate(*level);
                if let Some(&py) = parents.last() {
                    let px = x - 12;
                    s.push_str(&format!(
                        "<path d=\"M{px} {} V{y} H{x}\" fill=\"none\" stroke=\"#999999\"/>\n",
                        py + 6
                    ));
                }
                parents.push(y);
                let done = n.task.status == Status::Done;
                let bar = ((n.rollup.expected / max_te) * 160.0).round() as usize;
                let (fill, stroke) = if done {
                    ("#4c9a2a", "#4c9a2a")
                } else {
                    ("#ffffff", "#3b6ea8")
                };
                s.push_str(&format!(
                    "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"10\" fill=\"{fill}\" stroke=\"{stroke}\"/>\n",
                    WIDTH - 180,
                    y - 8,
                    bar.max(2)
                ));
                let te = n.expected.map_or("-".to_string(), effort_text);
                let number = format!("{:03} ", n.task.task.number);
                let suffix = format!(" · {} · Te {te}", n.task.status);
                // The label ends before the bar column; a title cut to fit keeps its whole
                // text as the tooltip.
                let room = LABEL_END
                    - (x + 4) as f64
                    - text_width(&number, 12.0)
                    - text_width(&suffix, 12.0);
                let title = &n.task.task.title;
                let shown = fit_text(title, room.max(text_width("Wwwwwww…", 12.0)), 12.0);
                let tooltip = if shown == *title {
                    String::new()
                } else {
                    format!("<title>{}</title>", xml(title))
                };
                s.push_str(&format!(
                    "<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#222222\">{tooltip}{number}{}{}</text>\n",
                    x + 4,
                    y + 2,
                    xml(&shown),
                    xml(&suffix),
                ));
            }
        }
    }
    s.push_str("</svg>\n");
    s
}

/// A Graphviz DOT graph of the breakdown: one cluster per project, an edge from each parent to
/// its children.
fn dot(projects: &[ProjectTree]) -> String {
    fn nodes(n: &Node, out: &mut String) {
        let te = n.expected.map_or("-".to_string(), effort_text);
        out.push_str(&format!(
            "    \"{}\" [label=\"{:03} {}\\n{} · Te {}\"{}];\n",
            n.task.task.id,
            n.task.task.number,
            n.task.task.title.replace('\\', "\\\\").replace('"', "\\\""),
            n.task.status,
            te,
            if n.task.status == Status::Done {
                ", style=filled, fillcolor=\"#d8ecd0\""
            } else {
                ""
            }
        ));
        for c in &n.children {
            nodes(c, out);
            out.push_str(&format!(
                "    \"{}\" -> \"{}\";\n",
                n.task.task.id, c.task.task.id
            ));
        }
    }
    let mut out = String::from("digraph wbs {\n  rankdir=LR;\n  node [shape=box, fontsize=11];\n");
    for p in projects {
        out.push_str(&format!(
            "  subgraph \"cluster_{}\" {{\n    label=\"{} (Σ {} ± {})\";\n",
            p.id,
            p.id,
            effort_text(p.rollup.expected),
            effort_text(p.rollup.sigma)
        ));
        for n in &p.nodes {
            nodes(n, &mut out);
        }
        out.push_str("  }\n");
    }
    out.push_str("}\n");
    out
}
