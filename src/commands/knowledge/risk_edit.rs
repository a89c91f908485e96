//! `dacli risk edit`: the owner rewrites a risk under its lock, changing only the keys and
//! sections asked for.

use serde::{Deserialize, Serialize};
use toml_edit::value;

use super::risk_add::check_indicators;
use super::risks::{Level, RiskView, find, summary};
use super::{acts_as_owner, gated_in_body, rw_gate, section_flag};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::model::Refusal;
use crate::model::risk::{ACTION, INDICATORS, RiskHead, indicators_text, set_section};
use crate::objects::risks;
use crate::ops::{self, Decided};
use crate::policy::risk::action_refusal;
use crate::store::{Document, Problem};

/// Risk status values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Status {
    Open,
    Closed,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Open => "open",
            Status::Closed => "closed",
        }
    }
}

/// Change a risk you own: impact, likelihood, status, indicators (the given ones replace the
/// list) or action. RISK is a risk id (`r-<ULID>`, or the short `r~<last 4>` that `risk
/// list` shows on a terminal) or `<project>/<slug>`.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The risk: `r-<ULID>`, its short `r~<last 4>`, or `<project>/<slug>`.
    #[arg(value_name = "RISK")]
    risk: String,
    /// New impact.
    #[arg(long, value_enum)]
    #[serde(default)]
    impact: Option<Level>,
    /// New likelihood.
    #[arg(long, value_enum)]
    #[serde(default)]
    likelihood: Option<Level>,
    /// Open or close the risk.
    #[arg(long, value_enum)]
    #[serde(default)]
    status: Option<Status>,
    /// The indicators (one line each); repeatable; replaces the whole list.
    #[arg(long = "indicator", value_name = "TEXT")]
    #[serde(default)]
    indicators: Vec<String>,
    /// The new action.
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    action: Option<String>,
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
    Command::new("risk.edit", Class::Mutate, run, render)
}

/// The checked changes.
struct Changes {
    impact: Option<Level>,
    likelihood: Option<Level>,
    status: Option<Status>,
    indicators: Option<Vec<String>>,
    action: Option<String>,
}

fn check(req: &Request) -> Result<Changes, Error> {
    let indicators = if req.indicators.is_empty() {
        None
    } else {
        let list = check_indicators(&req.indicators)?;
        if list.is_empty() {
            return Err(Error::usage("--indicator is empty"));
        }
        Some(list)
    };
    let action = match &req.action {
        Some(a) => Some(
            section_flag("--action", Some(a))?.ok_or_else(|| Error::usage("--action is empty"))?,
        ),
        None => None,
    };
    let c = Changes {
        impact: req.impact,
        likelihood: req.likelihood,
        status: req.status,
        indicators,
        action,
    };
    let nothing = c.impact.is_none()
        && c.likelihood.is_none()
        && c.status.is_none()
        && c.indicators.is_none()
        && c.action.is_none();
    if nothing {
        return Err(Error::usage(
            "nothing to change: give --impact, --likelihood, --status, --indicator or --action",
        ));
    }
    Ok(c)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let changes = check(&req)?;
    let ws = ctx.ws()?;
    let all = risks::list_all(ws)?;
    let found =
        find(&all.items, &req.risk).map_err(|e| unusable(&all.warnings, &req.risk).unwrap_or(e))?;
    ctx.warn_all(all.warnings.iter().cloned());
    let owner = found.risk.owner.clone();
    if let Some(r) = rw_gate(ctx, "risk edit", &owner, None)? {
        return Ok(Outcome::Refused(r));
    }
    let me = ctx.identity()?.agent.id.clone();
    if !acts_as_owner(ws, &me, &owner) {
        return Ok(Outcome::Refused(not_owner(found, &owner)));
    }
    let decided = ops::risks::edit(
        ws,
        &found.project,
        &found.risk.id,
        |current| -> Result<_, Error> {
            if !acts_as_owner(ws, &me, &current.risk.owner) {
                return Ok(Decided::Refused(not_owner(current, &current.risk.owner)));
            }
            let edited = apply(&current.doc, &changes);
            let head = RiskHead::parse(&edited.front, &edited.body)
                .map_err(|e| Error::internal(format!("dacli built an invalid risk: {e}")))?;
            if let Some(r) = action_refusal(
                &head.impact,
                &head.likelihood,
                head.has_indicators(),
                head.has_action(),
            ) {
                return Ok(Decided::Refused(r));
            }
            let response = Response {
                risk: RiskView::of(&current.project, &head),
                effect: "unchanged",
                path: current.path.clone(),
            };
            if edited.render() == current.doc.render() {
                return Ok(Decided::Done((None, response)));
            }
            let mut out = edited;
            out.front["rev"] = value(ctx.new_ulid().to_string());
            Ok(Decided::Done((
                Some(out),
                Response {
                    effect: "applied",
                    ..response
                },
            )))
        },
    )?;
    Ok(match decided {
        Decided::Done(response) => Outcome::Done(response),
        Decided::Refused(refusal) => Outcome::Refused(refusal),
    })
}

/// When `<project>/<slug>` names a risk file the listing skipped, the error names that file
/// and why (FORMAT §4.4: a command needing that very object fails with exit 1).
fn unusable(warnings: &[Problem], reference: &str) -> Option<Error> {
    let (project, slug) = reference.trim().split_once('/')?;
    let project = project.strip_prefix("p-").unwrap_or(project);
    let slug = slug.strip_suffix(".md").unwrap_or(slug);
    let tail = format!("projects/{project}/risks/{slug}.md");
    warnings
        .iter()
        .find(|w| w.path.ends_with(&tail))
        .map(|w| crate::store::Error::Malformed(w.clone()).into())
}

/// The edited document: only the keys and sections asked for change, and only when their
/// value differs, so unknown keys, comments and the rest of the body keep their bytes.
fn apply(doc: &Document, c: &Changes) -> Document {
    let mut out = doc.clone();
    let mut set = |key: &str, v: Option<&str>| {
        if let Some(v) = v
            && out.front.get(key).and_then(|i| i.as_str()) != Some(v)
        {
            out.front[key] = value(v);
        }
    };
    set("impact", c.impact.map(Level::as_str));
    set("likelihood", c.likelihood.map(Level::as_str));
    set("status", c.status.map(Status::as_str));
    if let Some(list) = &c.indicators {
        let wanted = indicators_text(list);
        if crate::model::body::section_text(&out.body, INDICATORS) != Some(wanted.as_str()) {
            out.body = set_section(&out.body, INDICATORS, &wanted, Some(ACTION));
        }
    }
    if let Some(a) = &c.action
        && crate::model::body::section_text(&out.body, ACTION) != Some(a.as_str())
    {
        out.body = set_section(&out.body, ACTION, a, None);
    }
    out
}

fn not_owner(r: &risks::Located, owner: &str) -> Refusal {
    Refusal::new(
        "risk.not_owner",
        format!(
            "risk {} ({}) belongs to {owner}; only its owner rewrites it",
            r.reference(),
            r.risk.id
        ),
        format!(
            "Ask {owner}: `dacli ask p-{} \"…\"` (an ro agent may also record a finding).",
            r.project
        ),
    )
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    let verb = if r.effect == "unchanged" {
        "unchanged"
    } else {
        "updated"
    };
    format!("{verb} risk {}\n  {}\n", summary(&r.risk), r.path)
}
