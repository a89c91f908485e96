//! `dacli search QUERY`: ranked full-text search over the workspace.

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::ops::search::{self, Query};
use crate::store::search::Filter;
use crate::workspace::names::check_slug;

/// Search titles, bodies, acceptance criteria, notes, risks, glossary terms, questions,
/// answers and event text. Every word must match; `"two words"` is a phrase and `roun*` a
/// prefix. Title matches come first, then the most relevant. Each hit has its reference, kind
/// and one line around the match, matched words in [brackets].
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// What to find.
    #[arg(value_name = "QUERY")]
    query: String,
    /// Only this kind; repeatable.
    #[arg(long = "kind", value_enum, value_name = "K")]
    #[serde(default)]
    kinds: Vec<Kind>,
    /// Only this project (slug or `p-<slug>`).
    #[arg(long, value_name = "P")]
    #[serde(default)]
    project: Option<String>,
    /// Only this status: a task's folder (`open`, `active`, `blocked`, `done`), a risk's
    /// (`open`, `closed`), a note's kind (`decision` ...) or an event's kind (`claim` ...).
    #[arg(long, value_name = "S")]
    #[serde(default)]
    status: Option<String>,
    /// At most this many hits.
    #[arg(long, value_name = "N", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    #[serde(default = "twenty")]
    limit: u32,
}

fn twenty() -> u32 {
    20
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Task,
    Note,
    Risk,
    Glossary,
    Question,
    Event,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Task => "task",
            Kind::Note => "note",
            Kind::Risk => "risk",
            Kind::Glossary => "glossary",
            Kind::Question => "question",
            Kind::Event => "event",
        }
    }
}

impl Classify for Request {}

/// One hit.
#[derive(Debug, Serialize)]
pub struct HitOut {
    #[serde(rename = "ref")]
    pub reference: String,
    pub kind: String,
    pub title: String,
    pub project: Option<String>,
    pub status: Option<String>,
    /// Relative to the work-tree root.
    pub path: String,
    /// One line around the first match; matched words in `[` `]`.
    pub excerpt: String,
    /// Whether the title matched (those hits come first).
    pub in_title: bool,
}

#[derive(Debug, Serialize)]
pub struct Response {
    pub query: String,
    pub hits: Vec<HitOut>,
    /// More hits exist than `--limit` shows.
    pub truncated: bool,
}

pub(super) fn command() -> Command {
    Command::new("search", Class::Read, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    if search::fts_expr(&req.query).is_none() {
        return Err(Error::usage("QUERY: give at least one word to search for"));
    }
    let project = req
        .project
        .as_deref()
        .map(|p| {
            let slug = p.strip_prefix("p-").unwrap_or(p);
            check_slug(slug)
                .map(|_| slug.to_string())
                .map_err(|why| Error::usage(format!("--project: {why}")))
        })
        .transpose()?;
    let limit = req.limit as usize;
    let prefix = crate::ops::review::ws_prefix(ws);
    let mut hits = search::search(
        ws,
        &Query {
            text: req.query.clone(),
            filter: Filter {
                kinds: req.kinds.iter().map(|k| k.as_str().to_string()).collect(),
                project,
                status: req.status.clone(),
            },
            limit,
        },
    )?;
    let truncated = hits.len() > limit;
    hits.truncate(limit);
    let some = |s: String| (!s.is_empty()).then_some(s);
    Ok(Outcome::Done(Response {
        query: req.query,
        hits: hits
            .into_iter()
            .map(|h| HitOut {
                reference: h.doc.reference,
                kind: h.doc.kind,
                title: h.doc.title,
                project: some(h.doc.project),
                status: some(h.doc.status),
                path: format!("{prefix}/{}", h.path),
                excerpt: one_line(&h.excerpt),
                in_title: h.in_title,
            })
            .collect(),
        truncated,
    }))
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    if r.hits.is_empty() {
        return format!("no match for `{}`\n", r.query);
    }
    let mut out = String::new();
    for h in &r.hits {
        out.push_str(&format!(
            "{}  {}  {}\n    {}\n",
            h.reference, h.kind, h.title, h.excerpt
        ));
    }
    if r.truncated {
        out.push_str(&format!(
            "{} hits shown; raise --limit for more\n",
            r.hits.len()
        ));
    }
    out
}
