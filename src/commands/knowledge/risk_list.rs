//! `dacli risk list`: risks by rank, then age.

use serde::{Deserialize, Serialize};

use super::risks::RiskView;
use super::{all_projects, find_project};
use crate::dispatch::text::{fit_table, risk_short};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::objects::risks;

/// Which risks by status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Which {
    #[default]
    Open,
    Closed,
    All,
}

/// List risks, most serious first: by rank (1 = high impact and high likelihood), then by
/// creation time.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Only this project (slug or `p-<slug>`).
    #[arg(long, value_name = "PROJECT")]
    #[serde(default)]
    project: Option<String>,
    /// Which risks by status.
    #[arg(long, value_enum, default_value_t)]
    #[serde(default)]
    status: Which,
    /// Only this rank.
    #[arg(long, value_name = "1|2|3", value_parser = clap::value_parser!(u8).range(1..=3))]
    #[serde(default)]
    rank: Option<u8>,
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    risks: Vec<Item>,
}

#[derive(Debug, Serialize)]
struct Item {
    #[serde(flatten)]
    risk: RiskView,
    /// `## Action` is present and not empty.
    has_action: bool,
}

pub(super) fn command() -> Command {
    Command::new("risk.list", Class::Read, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    if req.rank.is_some_and(|r| !(1..=3).contains(&r)) {
        return Err(Error::usage("--rank must be 1, 2 or 3"));
    }
    let ws = ctx.ws()?;
    let listing = match &req.project {
        Some(p) => {
            let projects = all_projects(ctx, ws)?;
            let slug = find_project(&projects, "--project", p)?.slug.clone();
            risks::list(ws, &slug)?
        }
        None => risks::list_all(ws)?,
    };
    ctx.warn_all(listing.warnings);
    let mut found: Vec<risks::Located> = listing
        .items
        .into_iter()
        .filter(|r| match req.status {
            Which::All => true,
            Which::Open => r.risk.status == "open",
            Which::Closed => r.risk.status == "closed",
        })
        .filter(|r| req.rank.is_none_or(|n| r.risk.rank() == n))
        .collect();
    found.sort_by(|a, b| {
        (a.risk.rank(), a.risk.created, &a.risk.id).cmp(&(
            b.risk.rank(),
            b.risk.created,
            &b.risk.id,
        ))
    });
    Ok(Outcome::Done(Response {
        risks: found
            .iter()
            .map(|r| Item {
                risk: RiskView::of(&r.project, &r.risk),
                has_action: r.risk.has_action(),
            })
            .collect(),
    }))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if r.risks.is_empty() {
        return "no risks\n".to_string();
    }
    let mut rows = vec![
        [
            "RANK",
            "ID",
            "PROJECT",
            "IMPACT",
            "LIKELIHOOD",
            "STATUS",
            "ACTION",
            "TITLE",
        ]
        .map(String::from)
        .to_vec(),
    ];
    // On a terminal a row fits 80 columns: the short id (`r~AV0H`, which `risk edit` takes)
    // and the project's slug; `--wide`, pipes and JSON keep the whole id and `p-<slug>`.
    let short = ctx.width().is_some();
    for i in &r.risks {
        let v = &i.risk;
        rows.push(vec![
            v.rank.to_string(),
            if short {
                risk_short(&v.id)
            } else {
                v.id.clone()
            },
            if short {
                v.project
                    .strip_prefix("p-")
                    .unwrap_or(&v.project)
                    .to_string()
            } else {
                v.project.clone()
            },
            v.impact.clone(),
            v.likelihood.clone(),
            v.status.clone(),
            if i.has_action { "yes" } else { "no" }.to_string(),
            v.title.clone(),
        ]);
    }
    fit_table(&rows, &[0], ctx.width(), 7)
}
