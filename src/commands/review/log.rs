//! `dacli log <task>`: one task's history across commits, newest first.

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::objects::{lookup::Lookup, projects};
use crate::ops::review::{self as model, Change, EventItem};

/// One task's history across commits, newest first: each commit's author, date and what it
/// changed of the task (status, assignee, criteria, edits, ...) and the events about it it
/// added. Commits that did not touch the task are left out; a merge shows only what differs
/// from every parent (a resolved conflict).
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The task (any reference form `task show` takes; a `t-<ULID>` also finds a task the
    /// working tree no longer has).
    #[arg(value_name = "TASK")]
    task: String,
    /// At most this many commits.
    #[arg(long, value_name = "N", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..))]
    #[serde(default = "twenty")]
    limit: u32,
}

fn twenty() -> u32 {
    20
}

impl Classify for Request {}

/// What one commit did to the task.
#[derive(Debug, Serialize)]
pub struct Entry {
    pub commit: String,
    pub author: String,
    pub email: String,
    pub date: String,
    pub subject: String,
    pub changes: Vec<Change>,
    pub events: Vec<EventItem>,
}

/// The task the log is about.
#[derive(Debug, Serialize)]
pub struct TaskInfo {
    pub id: String,
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    pub title: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Response {
    pub task: TaskInfo,
    pub commits: Vec<Entry>,
    /// More commits touched the task than `--limit` shows.
    pub truncated: bool,
}

pub(super) fn command() -> Command {
    Command::new("log", Class::Read, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let slugs: Vec<String> = {
        let listing = projects::list(ws)?;
        ctx.warn_all(listing.warnings);
        listing.items.into_iter().map(|p| p.slug).collect()
    };
    let (lookup, warnings) = Lookup::load(ws, &slugs)?;
    ctx.warn_all(warnings);
    let mut at = None;
    let task = match lookup.resolve(ws, &req.task)? {
        Ok(entry) => {
            at = model::TaskFile::of_path(entry.file());
            TaskInfo {
                id: entry.id().to_string(),
                reference: Some(entry.reference()),
                title: Some(entry.title().to_string()),
            }
        }
        Err(e) => {
            let id = req.task.trim();
            let ulid = id.strip_prefix("t-").and_then(crate::model::id::parse_ulid);
            match ulid {
                Some(u) => TaskInfo {
                    id: format!("t-{u}"),
                    reference: None,
                    title: None,
                },
                None => return Err(e.into()),
            }
        }
    };
    let repo = model::open_repo(ws)?;
    let limit = req.limit as usize;
    let name = task.reference.clone().unwrap_or_else(|| task.id.clone());
    let progress = ctx.progress(format!("reading the history of {name}"));
    let walked = |n: usize| {
        if n > 0 && n.is_multiple_of(25) {
            progress.relabel(format!("reading the history of {name}: {n} commit(s) read"));
        }
    };
    let (found, truncated) = model::task_history(ws, &repo, &task.id, at, limit, &walked)?;
    drop(progress);
    let commits = found
        .into_iter()
        .map(|h| Entry {
            commit: h.commit.sha,
            author: h.commit.author,
            email: h.commit.email,
            date: jiff::Timestamp::from_second(h.commit.time)
                .map(crate::model::format_time)
                .unwrap_or_default(),
            subject: h.commit.summary,
            changes: h.changes,
            events: h.events,
        })
        .collect();
    Ok(Outcome::Done(Response {
        task,
        commits,
        truncated,
    }))
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    let mut out = String::new();
    let name = r.task.reference.as_deref().unwrap_or(&r.task.id);
    match &r.task.title {
        Some(t) => out.push_str(&format!("log {name} — {t}\n")),
        None => out.push_str(&format!("log {name}\n")),
    }
    if r.commits.is_empty() {
        out.push_str("no commit touches this task\n");
        return out;
    }
    for e in &r.commits {
        out.push_str(&format!(
            "\ncommit {} {} <{}> {}\n  {}\n",
            &e.commit[..e.commit.len().min(10)],
            e.author,
            e.email,
            e.date,
            e.subject
        ));
        for c in &e.changes {
            out.push_str(&format!("  {}\n", super::render::change_line(c)));
        }
        for ev in &e.events {
            out.push_str(&format!(
                "  event {} {} ({}){}\n",
                ev.kind,
                ev.id,
                ev.state,
                if ev.summary.is_empty() {
                    String::new()
                } else {
                    format!(": {}", ev.summary)
                }
            ));
        }
    }
    if r.truncated {
        out.push_str("\nolder commits touch this task; raise --limit to see them\n");
    }
    out
}
