//! `dacli velocity`: effort completed per ISO week.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::view::{effort_text, estimate_of, project_slug};
use crate::dispatch::text::table;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::model::task::Status;
use crate::objects::agents;
use crate::objects::tasks::Located;
use crate::policy::plan::{WeekPoint, done_periods, velocity};

/// Show velocity: the expected effort (Te) of the tasks completed in each of the last N ISO
/// weeks (resolution `completed` only; abandoned and unverified closes do not count), task
/// counts, and the mean points per week, optionally split by agent or role.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Only this project (slug or `p-<slug>`).
    #[arg(long, value_name = "PROJECT")]
    #[serde(default)]
    project: Option<String>,
    /// How many ISO weeks, ending with the current one.
    #[arg(long, value_name = "N", default_value_t = 6)]
    #[serde(default = "six")]
    weeks: u32,
    /// Also split the figures by the agent who did the work, or by its role.
    #[arg(long, value_enum, value_name = "agent|role")]
    #[serde(default)]
    by: Option<By>,
}

fn six() -> u32 {
    6
}

impl Classify for Request {}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
enum By {
    Agent,
    Role,
}

#[derive(Debug, Serialize)]
pub struct Response {
    project: Option<String>,
    weeks: Vec<Week>,
    mean_points: f64,
    by: Option<Vec<Group>>,
}

#[derive(Debug, Serialize)]
struct Week {
    week: String,
    points: f64,
    tasks: usize,
}

impl From<WeekPoint> for Week {
    fn from(p: WeekPoint) -> Week {
        Week {
            week: p.week,
            points: p.points,
            tasks: p.tasks,
        }
    }
}

/// The series of one agent or role (`none`: an agent without a role).
#[derive(Debug, Serialize)]
struct Group {
    key: String,
    weeks: Vec<Week>,
    mean_points: f64,
}

pub(super) fn command() -> Command {
    Command::new("velocity", Class::Read, run, render)
}

/// A completed task: when it was completed, its Te and who did it.
struct Completion {
    at: jiff::Timestamp,
    expected: Option<f64>,
    agent: String,
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    if req.weeks == 0 {
        return Err(Error::usage("--weeks must be at least 1"));
    }
    if req.weeks > 520 {
        return Err(Error::usage("--weeks is at most 520 (ten years)"));
    }
    let ws = ctx.ws()?;
    let only = project_slug(ctx, req.project.as_deref())?;
    let view = super::view::load(ctx)?;
    let done: Vec<Completion> = view
        .tasks
        .iter()
        .filter(|t| only.as_ref().is_none_or(|p| &t.project == p))
        .filter_map(completion)
        .collect();
    let now = ctx.now();
    let pairs = |items: &[&Completion]| -> Vec<(jiff::Timestamp, Option<f64>)> {
        items.iter().map(|c| (c.at, c.expected)).collect()
    };
    let all: Vec<&Completion> = done.iter().collect();
    let (series, mean) = velocity(&pairs(&all), now, req.weeks);
    let by = req.by.map(|by| {
        let mut roles: BTreeMap<String, String> = BTreeMap::new();
        let mut groups: BTreeMap<String, Vec<&Completion>> = BTreeMap::new();
        for c in &done {
            let key = match by {
                By::Agent => c.agent.clone(),
                By::Role => roles
                    .entry(c.agent.clone())
                    .or_insert_with(|| {
                        agents::load(ws, &c.agent)
                            .ok()
                            .and_then(|a| a.role)
                            .unwrap_or_else(|| "none".to_string())
                    })
                    .clone(),
            };
            groups.entry(key).or_default().push(c);
        }
        groups
            .into_iter()
            .map(|(key, items)| {
                let (weeks, mean_points) = velocity(&pairs(&items), now, req.weeks);
                Group {
                    key,
                    weeks: weeks.into_iter().map(Week::from).collect(),
                    mean_points,
                }
            })
            .filter(|g| g.weeks.iter().any(|w| w.tasks > 0))
            .collect()
    });
    Ok(Outcome::Done(Response {
        project: only.map(|s| format!("p-{s}")),
        weeks: series.into_iter().map(Week::from).collect(),
        mean_points: mean,
        by,
    }))
}

/// The completion of a task done with resolution `completed`: the start of its current stay
/// in done/ (the last `finished` line), credited to its assignee, else to whoever finished it.
fn completion(t: &Located) -> Option<Completion> {
    if t.doc.status != Status::Done || t.doc.resolution() != Some("completed") {
        return None;
    }
    let log = t.doc.log();
    let (at, _) = *done_periods(&log).last()?;
    let finisher = log
        .iter()
        .rev()
        .find(|l| l.text == "finished" || l.text.starts_with("closed "))
        .map(|l| l.agent.clone());
    let agent = t
        .doc
        .assignee()
        .map(str::to_string)
        .or(finisher)
        .unwrap_or_else(|| t.doc.owner().to_string());
    Some(Completion {
        at,
        expected: estimate_of(t).map(|e| e.expected()),
        agent,
    })
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    let mut out = format!(
        "Velocity of {}: mean {} points per week\n\n",
        r.project.as_deref().unwrap_or("every project"),
        effort_text(r.mean_points)
    );
    out.push_str(&weeks_table(&r.weeks));
    for g in r.by.iter().flatten() {
        out.push_str(&format!(
            "\n{}: mean {} points per week\n",
            g.key,
            effort_text(g.mean_points)
        ));
        out.push_str(&weeks_table(&g.weeks));
    }
    out
}

fn weeks_table(weeks: &[Week]) -> String {
    let mut rows = vec![vec!["WEEK".to_string(), "POINTS".into(), "TASKS".into()]];
    for w in weeks {
        rows.push(vec![
            w.week.clone(),
            effort_text(w.points),
            w.tasks.to_string(),
        ]);
    }
    table(&rows, &[1, 2])
}
