//! `dacli note show`: one note with its sections and body.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::notes::{self, NoteRef};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::model::body::section_text;
use crate::model::format_time;

/// Show one note: its fields, its structural sections and its body. NOTE is a note id, a
/// slug unique in the workspace, or a path.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The note: `n-<ULID>`, a unique slug, or its path.
    #[arg(value_name = "NOTE")]
    note: String,
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    #[serde(flatten)]
    note: NoteRef,
    created: String,
    created_by: String,
    source_event: Option<String>,
    supersedes: Option<String>,
    superseded_by: Option<String>,
    private: bool,
    tags: Vec<String>,
    /// The structural sections of the kind (decision: chose, rejected, because; metric:
    /// goal, question, metric), in order; `null` for one that is missing.
    sections: Map<String, Value>,
    body: String,
}

pub(super) fn command() -> Command {
    Command::new("note.show", Class::Read, run, render)
}

/// The structural sections of a note kind, as (JSON key, heading).
fn structural(kind: &str) -> &'static [(&'static str, &'static str)] {
    match kind {
        "decision" => &[
            ("chose", "Chose"),
            ("rejected", "Rejected"),
            ("because", "Because"),
        ],
        "metric" => &[
            ("goal", "Goal"),
            ("question", "Question"),
            ("metric", "Metric"),
        ],
        _ => &[],
    }
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let entries = notes::gather(ctx, ws)?;
    let e = notes::find(&entries, "NOTE", &req.note)?;
    // The newest note that replaces this one, if any.
    let superseded_by = notes::superseded_by(&entries)
        .remove(&e.note.id)
        .and_then(|ids| ids.into_iter().max());
    let details = notes::details(ws, e)?;
    let sections = structural(&e.note.kind)
        .iter()
        .map(|(key, heading)| {
            let v = section_text(&details.body, heading).map_or(Value::Null, |t| t.into());
            (key.to_string(), v)
        })
        .collect();
    Ok(Outcome::Done(Response {
        note: e.note.clone(),
        created: format_time(e.created),
        created_by: e.created_by.clone(),
        source_event: e.source_event.clone(),
        supersedes: e.supersedes.clone(),
        superseded_by,
        private: details.private,
        tags: details.tags,
        sections,
        body: details.body,
    }))
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    let n = &r.note;
    let mut out = format!("{} {}", n.kind, n.id);
    if let Some(s) = &n.severity {
        out.push_str(&format!(" ({s})"));
    }
    out.push('\n');
    let mut line = |k: &str, v: &str| out.push_str(&format!("{k:<14}{v}\n"));
    line("title", &n.title);
    line("scope", &n.scope);
    line("about", n.about.as_deref().unwrap_or("-"));
    line(
        "path",
        n.path
            .as_deref()
            .unwrap_or("- (pending: still a finding event)"),
    );
    line("created", &r.created);
    if let Some(s) = &r.supersedes {
        line("supersedes", s);
    }
    if let Some(s) = &r.superseded_by {
        line("superseded by", s);
    }
    if r.private {
        line("private", "yes");
    }
    if !r.tags.is_empty() {
        line("tags", &r.tags.join(", "));
    }
    // Text written by other agents is quoted under an attribution line, never inline.
    out.push_str(&format!("\n{} wrote:\n", r.created_by));
    for l in r.body.lines() {
        if l.is_empty() {
            out.push('\n');
        } else {
            out.push_str(&format!("    {l}\n"));
        }
    }
    out
}
