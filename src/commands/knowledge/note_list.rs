//! `dacli note list`: notes, newest first, with pending findings folded in.

use serde::{Deserialize, Serialize};

use super::note_add::{Kind, Scope, Severity};
use super::notes::{self, NoteRef};
use super::{all_projects, find_project, resolve_about};
use crate::dispatch::text::fit_table;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::model::format_time;

/// List notes, newest first: files and findings still pending in events. Superseded notes
/// are left out unless --include-superseded.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Only notes stored in this project (slug or `p-<slug>`).
    #[arg(long, value_name = "PROJECT")]
    #[serde(default)]
    project: Option<String>,
    /// Only these kinds; repeatable.
    #[arg(long = "kind", value_enum, value_name = "K")]
    #[serde(default)]
    kinds: Vec<Kind>,
    /// Only notes about this task or project.
    #[arg(long, value_name = "REF")]
    #[serde(default)]
    about: Option<String>,
    /// Only findings of this severity.
    #[arg(long, value_enum, value_name = "S")]
    #[serde(default)]
    severity: Option<Severity>,
    /// Only notes of this scope.
    #[arg(long, value_enum, value_name = "S")]
    #[serde(default)]
    scope: Option<Scope>,
    /// Also list notes another note supersedes.
    #[arg(long)]
    #[serde(default)]
    include_superseded: bool,
    /// At most this many notes.
    #[arg(long, value_name = "N", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..))]
    #[serde(default = "hundred")]
    limit: u32,
}

fn hundred() -> u32 {
    100
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    notes: Vec<NoteRef>,
    total: usize,
    truncated: bool,
    /// Creation times, parallel to `notes`, for the text table only.
    #[serde(skip)]
    created: Vec<String>,
}

pub(super) fn command() -> Command {
    Command::new("note.list", Class::Read, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    if req.limit == 0 {
        return Err(Error::usage("--limit must be at least 1"));
    }
    let ws = ctx.ws()?;
    let projects = all_projects(ctx, ws)?;
    let project = req
        .project
        .as_deref()
        .map(|p| find_project(&projects, "--project", p).map(|p| p.slug.clone()))
        .transpose()?;
    let about = req
        .about
        .as_deref()
        .map(|a| resolve_about(ctx, ws, &projects, a).map(|a| a.id()))
        .transpose()?;
    let entries = notes::gather(ctx, ws)?;
    let superseded = notes::superseded_by(&entries);
    let mut kept: Vec<&notes::Entry> = entries
        .iter()
        .filter(|e| project.is_none() || e.project == project)
        .filter(|e| req.kinds.is_empty() || req.kinds.iter().any(|k| k.as_str() == e.note.kind))
        .filter(|e| about.is_none() || e.note.about == about)
        .filter(|e| {
            req.severity
                .is_none_or(|s| e.note.severity.as_deref() == Some(s.as_str()))
        })
        .filter(|e| req.scope.is_none_or(|s| e.note.scope == s.as_str()))
        .filter(|e| req.include_superseded || !superseded.contains_key(&e.note.id))
        .collect();
    kept.sort_by(|a, b| (b.created, &b.note.id).cmp(&(a.created, &a.note.id)));
    let total = kept.len();
    kept.truncate(req.limit as usize);
    Ok(Outcome::Done(Response {
        created: kept.iter().map(|e| format_time(e.created)).collect(),
        notes: kept.into_iter().map(|e| e.note.clone()).collect(),
        total,
        truncated: total > req.limit as usize,
    }))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if r.notes.is_empty() {
        return "no notes\n".to_string();
    }
    let mut rows = vec![vec![
        "ID".to_string(),
        "KIND".to_string(),
        "SEVERITY".to_string(),
        "CREATED".to_string(),
        "TITLE".to_string(),
    ]];
    for (n, created) in r.notes.iter().zip(&r.created) {
        rows.push(vec![
            n.id.clone(),
            if n.pending {
                format!("{} (pending)", n.kind)
            } else {
                n.kind.clone()
            },
            n.severity.clone().unwrap_or_else(|| "-".into()),
            // On a terminal the day is enough; pipes and --wide keep the instant.
            if ctx.width().is_some() {
                created.chars().take(10).collect()
            } else {
                created.clone()
            },
            n.title.clone(),
        ]);
    }
    let mut out = fit_table(&rows, &[], ctx.width(), 4);
    if r.truncated {
        out.push_str(&format!(
            "{} of {} notes shown; raise --limit for more\n",
            r.notes.len(),
            r.total
        ));
    }
    out
}
