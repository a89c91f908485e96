//! `dacli burndown`: scope, done and remaining effort per UTC day, as a table, JSON or an SVG.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::chart::burndown_svg;
use super::view::{effort_text, estimate_of, project_slug};
use crate::dispatch::text::table;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, ErrorKind, Outcome};
use crate::model::id::{parse_ulid, ulid_time};
use crate::model::task::Status;
use crate::objects::tasks::Located;
use crate::policy::plan::{BurnPoint, BurnTask, burndown, done_periods, parse_time, utc_date};
use crate::workspace::Workspace;

/// A burndown longer than this is a typo, not a plan.
const MAX_DAYS: i32 = 3660;

/// Show a project's burndown: one point per UTC day with `scope` (Te of the tasks that existed),
/// `done` (Te of the tasks in done that day; reopened tasks return) and `remaining`. Done dates
/// come from the Log lines that moved each task to done. Unestimated tasks are counted apart.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The project (slug or `p-<slug>`); default: the only active project.
    #[arg(long, value_name = "PROJECT")]
    #[serde(default)]
    project: Option<String>,
    /// First day: RFC 3339 or a duration back from now (`90d`, `12h`, `30m`); default: the
    /// day the project's first task was created.
    #[arg(long, value_name = "TIME")]
    #[serde(default)]
    since: Option<String>,
    /// Last day, same forms; default: now.
    #[arg(long, value_name = "TIME")]
    #[serde(default)]
    until: Option<String>,
    /// What to print: a table, the JSON data, or a 720×360 SVG chart.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    #[serde(default)]
    format: Format,
    /// Write the output to this file (relative to the current directory; inside the work
    /// tree, outside the workspace) instead of stdout.
    #[arg(long, value_name = "FILE")]
    #[serde(default)]
    out: Option<String>,
}

impl Classify for Request {}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Format {
    #[default]
    Text,
    Json,
    Svg,
}

#[derive(Debug, Serialize)]
pub struct Response {
    project: String,
    series: Vec<Point>,
    unestimated: usize,
    svg: Option<String>,
    #[serde(skip)]
    format: Format,
    /// Where the output went (`--out`), relative to the work-tree root.
    #[serde(skip)]
    written: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
struct Point {
    date: String,
    scope: f64,
    done: f64,
    remaining: f64,
}

impl From<&BurnPoint> for Point {
    fn from(p: &BurnPoint) -> Point {
        Point {
            date: p.date.to_string(),
            scope: p.scope,
            done: p.done,
            remaining: p.remaining,
        }
    }
}

pub(super) fn command() -> Command {
    Command::new("burndown", Class::Read, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let slug = match &req.project {
        Some(p) => project_slug(ctx, Some(p))?.unwrap_or_default(),
        None => {
            let listing = crate::objects::projects::list(ws)?;
            ctx.warn_all(listing.warnings.clone());
            crate::dispatch::project::only_active(&listing.items, "burndown")?
                .slug
                .clone()
        }
    };
    let now = ctx.now();
    let time = |flag: &str, v: &str| {
        parse_time(v, now).map_err(|why| Error::usage(format!("--{flag}: {why}")))
    };
    let until = match &req.until {
        Some(v) => time("until", v)?,
        None => now,
    };
    let out_file = req
        .out
        .as_deref()
        .map(|o| out_path(ctx, ws, o))
        .transpose()?;
    let view = super::view::load(ctx)?;
    let tasks: Vec<BurnTask> = view
        .tasks
        .iter()
        .filter(|t| t.project == slug)
        .map(burn_task)
        .collect();
    let since = match &req.since {
        Some(v) => time("since", v)?,
        None => tasks.iter().map(|t| t.created).min().unwrap_or(until),
    };
    if since > until {
        return Err(Error::usage(format!(
            "--since ({since}) is after --until ({until})"
        )));
    }
    let days = utc_date(since)
        .until(utc_date(until))
        .map_or(i32::MAX, |s| s.get_days());
    if days > MAX_DAYS {
        return Err(Error::usage(format!(
            "the burndown would span {days} days; give a --since within {MAX_DAYS} days of --until"
        )));
    }
    let series = burndown(&tasks, since, until);
    let unestimated = tasks
        .iter()
        .filter(|t| t.created <= until && t.expected.is_none())
        .count();
    let project = format!("p-{slug}");
    let svg = (req.format == Format::Svg).then(|| burndown_svg(&project, &series));
    let mut resp = Response {
        project,
        series: series.iter().map(Point::from).collect(),
        unestimated,
        svg,
        format: req.format,
        written: None,
    };
    if let Some(file) = out_file {
        crate::ops::reports::write(ws, &file, &product(&resp))?;
        resp.written = Some(ws.display(&file));
    }
    Ok(Outcome::Done(resp))
}

/// One task as the burndown needs it. A task in done/ whose Log never says how it got there
/// (a hand-written file) counts as done since its last Log line.
fn burn_task(t: &Located) -> BurnTask {
    let created = t
        .doc
        .front
        .get("created")
        .and_then(|c| c.as_datetime())
        .and_then(|d| d.to_string().parse::<jiff::Timestamp>().ok())
        .or_else(|| {
            t.task
                .id
                .strip_prefix("t-")
                .and_then(parse_ulid)
                .map(ulid_time)
        })
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let log = t.doc.log();
    let mut done = done_periods(&log);
    if t.doc.status == Status::Done && done.last().is_none_or(|(_, end)| end.is_some()) {
        let since = log
            .last()
            .and_then(|l| l.at.parse::<jiff::Timestamp>().ok())
            .unwrap_or(created);
        done.push((since, None));
    }
    BurnTask {
        created,
        expected: estimate_of(t).map(|e| e.expected()),
        done,
    }
}

/// Resolves `--out`: relative to the current directory, and it must stay inside the work tree
/// (symlinks resolved) and outside the workspace directory, which holds only dacli's files.
pub(super) fn out_path(ctx: &Ctx, ws: &Workspace, arg: &str) -> Result<PathBuf, Error> {
    let escape = || {
        Error::new(
            ErrorKind::Usage,
            "E_PATH_ESCAPE",
            format!("--out `{arg}` must name a file inside the work tree and outside the workspace directory"),
        )
        .hint("write the chart next to your docs, e.g. `--out docs/burndown.svg`")
    };
    let given = Path::new(arg);
    let joined = if given.is_absolute() {
        given.to_path_buf()
    } else {
        ctx.env().cwd.join(given)
    };
    let mut lexical = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                if !lexical.pop() {
                    return Err(escape());
                }
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    if lexical.file_name().is_none() {
        return Err(escape());
    }
    // Resolve the longest existing prefix, so a symlinked directory cannot lead outside.
    let mut existing = lexical.clone();
    let mut rest = Vec::new();
    while std::fs::symlink_metadata(&existing).is_err() {
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return Err(escape()),
        }
    }
    let mut resolved = std::fs::canonicalize(&existing).map_err(|_| escape())?;
    for name in rest.into_iter().rev() {
        resolved.push(name);
    }
    if !resolved.starts_with(ws.root()) || resolved.starts_with(ws.dir()) || resolved.is_dir() {
        return Err(escape());
    }
    Ok(resolved)
}

/// The output itself, in the chosen format.
fn product(r: &Response) -> String {
    match r.format {
        Format::Svg => r.svg.clone().unwrap_or_default(),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(r).unwrap_or_default();
            s.push('\n');
            s
        }
        Format::Text => text_table(r),
    }
}

/// Days longer than this are shown a week a row.
const DAILY_SPAN: usize = 42;

/// The rows the text table shows, and a note saying what was left out: up to
/// [`DAILY_SPAN`] days, the first and last day and each day whose figures changed; beyond
/// that, the last day of each week from the first day, and the last day, leaving out a week
/// whose figures are the week's before (the months before work started, a quiet stretch).
fn shown_days(series: &[Point]) -> (Vec<&Point>, String) {
    let last = series.len().saturating_sub(1);
    if series.len() > DAILY_SPAN {
        let weeks: Vec<&Point> = series
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 7 == 6 || *i == last)
            .map(|(_, p)| p)
            .collect();
        let end = weeks.len().saturating_sub(1);
        let shown: Vec<&Point> = weeks
            .iter()
            .enumerate()
            .filter(|&(i, p)| {
                i == 0 || i == end || weeks[i - 1].scope != p.scope || weeks[i - 1].done != p.done
            })
            .map(|(_, p)| *p)
            .collect();
        let quiet = weeks.len() - shown.len();
        let mut note = format!("weekly, {} days", series.len());
        if quiet > 0 {
            note.push_str(&format!("; {quiet} week(s) without change not shown"));
        }
        return (shown, note);
    }
    let shown: Vec<&Point> = series
        .iter()
        .enumerate()
        .filter(|(i, p)| {
            *i == 0 || *i == last || series[i - 1].scope != p.scope || series[i - 1].done != p.done
        })
        .map(|(_, p)| p)
        .collect();
    let hidden = series.len() - shown.len();
    let note = if hidden > 0 {
        format!("{hidden} day(s) without change not shown")
    } else {
        String::new()
    };
    (shown, note)
}

fn text_table(r: &Response) -> String {
    let mut out = format!("Burndown of {}\n\n", r.project);
    if r.series.is_empty() {
        out.push_str("No days in this period.\n");
    } else {
        let (shown, note) = shown_days(&r.series);
        let mut rows = vec![vec![
            if note.starts_with("weekly") {
                "WEEK ENDING".to_string()
            } else {
                "DATE".to_string()
            },
            "SCOPE".into(),
            "DONE".into(),
            "REMAINING".into(),
        ]];
        for p in shown {
            rows.push(vec![
                p.date.clone(),
                effort_text(p.scope),
                effort_text(p.done),
                effort_text(p.remaining),
            ]);
        }
        out.push_str(&table(&rows, &[1, 2, 3]));
        if !note.is_empty() {
            out.push_str(&format!("({note}; `--format json` has every day)\n"));
        }
    }
    if r.unestimated > 0 {
        out.push_str(&format!(
            "\n{} unestimated task(s) are not in these figures.\n",
            r.unestimated
        ));
    }
    out
}

fn render(r: &Response, ctx: &Ctx) -> String {
    match &r.written {
        Some(_) if ctx.quiet() => String::new(),
        Some(path) => format!("wrote the burndown of {} to {path}\n", r.project),
        None => product(r),
    }
}

#[cfg(test)]
mod tests {
    use super::{Point, shown_days};

    fn day(n: usize, done: f64) -> Point {
        Point {
            date: format!("d{n}"),
            scope: 10.0,
            done,
            remaining: 10.0 - done,
        }
    }

    #[test]
    fn short_spans_show_only_days_with_change_and_long_spans_a_week_a_row() {
        let series: Vec<Point> = (0..10)
            .map(|n| day(n, if n < 4 { 0.0 } else { 3.0 }))
            .collect();
        let (shown, note) = shown_days(&series);
        let dates: Vec<&str> = shown.iter().map(|p| p.date.as_str()).collect();
        assert_eq!(dates, ["d0", "d4", "d9"]);
        assert_eq!(note, "7 day(s) without change not shown");
        let long: Vec<Point> = (0..276).map(|n| day(n, (n / 7) as f64)).collect();
        let (shown, note) = shown_days(&long);
        assert_eq!(shown.len(), 276 / 7 + 1);
        assert_eq!(shown.last().map(|p| p.date.as_str()), Some("d275"));
        assert_eq!(note, "weekly, 276 days");
        // Weeks whose figures repeat the week before are left out, the first and last kept.
        let quiet: Vec<Point> = (0..276)
            .map(|n| day(n, if n < 200 { 0.0 } else { 5.0 }))
            .collect();
        let (shown, note) = shown_days(&quiet);
        let dates: Vec<&str> = shown.iter().map(|p| p.date.as_str()).collect();
        assert_eq!(dates, ["d6", "d202", "d275"]);
        assert_eq!(
            note,
            "weekly, 276 days; 37 week(s) without change not shown"
        );
    }
}
