//! `dacli risk add`: a new canonical risk file, owned by its creator.

use serde::{Deserialize, Serialize};
use toml_edit::{DocumentMut, value};

use super::risks::{Level, RiskView, summary};
use super::{
    About, all_projects, check_tags, find_project, gated_in_body, only_active, parent_of,
    required_line, resolve_about, rw_gate, text, toml_list, toml_time,
};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::model::id::ulid_time;
use crate::model::risk::{RiskHead, new_body};
use crate::ops;
use crate::policy::risk::action_refusal;
use crate::store::Document;

/// Record a risk in a project. Rank 1 (high impact, high likelihood) and rank 2 (no `low`)
/// need at least one --indicator and an --action.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The title (one line).
    title: String,
    /// The project (slug or `p-<slug>`); default: the only active project.
    #[arg(long, value_name = "PROJECT")]
    #[serde(default)]
    project: Option<String>,
    /// How bad it would be.
    #[arg(long, value_enum)]
    impact: Level,
    /// How likely it is.
    #[arg(long, value_enum)]
    likelihood: Level,
    /// A sign that the risk is turning into a problem (one line); repeatable.
    #[arg(long = "indicator", value_name = "TEXT")]
    #[serde(default)]
    indicators: Vec<String>,
    /// What is done about it.
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    action: Option<String>,
    /// The task or project it threatens.
    #[arg(long, value_name = "REF")]
    #[serde(default)]
    about: Option<String>,
    /// A label (a slug); repeatable.
    #[arg(long = "tag", value_name = "TAG")]
    #[serde(default)]
    tags: Vec<String>,
}

impl Classify for Request {
    fn class(&self, _declared: Class) -> Class {
        gated_in_body()
    }
}

#[derive(Debug, Serialize)]
pub struct Response {
    risk: RiskView,
    effect: &'static str,
    #[serde(skip)]
    path: String,
}

pub(super) fn command() -> Command {
    Command::new("risk.add", Class::Mutate, run, render)
}

/// Checks one-line indicators; empty ones are dropped.
pub(super) fn check_indicators(indicators: &[String]) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    for i in indicators {
        out.extend(text("--indicator", i, true)?);
    }
    Ok(out)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let title = required_line("TITLE", &req.title)?;
    let indicators = check_indicators(&req.indicators)?;
    let action = req
        .action
        .as_deref()
        .map(|a| super::section_flag("--action", Some(a)))
        .transpose()?
        .flatten();
    let tags = check_tags(&req.tags)?;
    let ws = ctx.ws()?;
    let projects = all_projects(ctx, ws)?;
    let project = match &req.project {
        Some(p) => find_project(&projects, "--project", p)?,
        None => only_active(&projects, "risk add")?,
    }
    .clone();
    let alternative = format!(
        "record it as a finding with severity major: `dacli note add finding \"{title}\" --severity major --project {}`",
        project.slug
    );
    if let Some(r) = rw_gate(ctx, "risk add", &parent_of(ctx)?, Some(&alternative))? {
        return Ok(Outcome::Refused(r));
    }
    let about = req
        .about
        .as_deref()
        .map(|a| resolve_about(ctx, ws, &projects, a))
        .transpose()?;
    if let Some(a) = &about
        && a.project() != project.slug
    {
        return Err(about_elsewhere(a, &project.slug));
    }
    if let Some(r) = action_refusal(
        req.impact.as_str(),
        req.likelihood.as_str(),
        !indicators.is_empty(),
        action.is_some(),
    ) {
        return Ok(Outcome::Refused(r));
    }
    let me = ctx.identity()?;
    let ulid = ctx.new_ulid();
    let id = format!("r-{ulid}");
    let mut front = DocumentMut::new();
    front["id"] = value(id.as_str());
    front["kind"] = value("risk");
    front["created"] = toml_time(ulid_time(ulid))?;
    front["created_by"] = value(me.agent.id.as_str());
    front["owner"] = value(me.agent.id.as_str());
    // Creation uses the id's ULID as the first `rev` (FORMAT §4.1).
    front["rev"] = value(ulid.to_string());
    front["impact"] = value(req.impact.as_str());
    front["likelihood"] = value(req.likelihood.as_str());
    front["status"] = value("open");
    if let Some(a) = &about {
        front["about"] = value(a.id());
    }
    if !tags.is_empty() {
        front["tags"] = toml_list(&tags);
    }
    let doc = Document::new(front, new_body(&title, &indicators, action.as_deref()));
    let head = RiskHead::parse(&doc.front, &doc.body)
        .map_err(|e| Error::internal(format!("dacli built an invalid risk: {e}")))?;
    let path = ops::risks::create(ws, &project.slug, &id, &title, &doc)?;
    Ok(Outcome::Done(Response {
        risk: RiskView::of(&project.slug, &head),
        effect: "created",
        path: ws.display(&path),
    }))
}

/// `--about` names an object of another project.
fn about_elsewhere(a: &About, project: &str) -> Error {
    Error::usage(format!(
        "--about {} belongs to project {}, but the risk is in {project}: a risk lives in the project it threatens",
        a.id(),
        a.project()
    ))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    format!("created risk {}\n  {}\n", summary(&r.risk), r.path)
}
