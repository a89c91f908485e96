//! What the risk commands share: the level enumeration and the JSON view of a risk.

use serde::{Deserialize, Serialize};

use crate::dispatch::Error;
use crate::model::risk::RiskHead;
use crate::objects::risks::{self, Located};

/// Impact and likelihood levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Level {
    High,
    Medium,
    Low,
}

impl Level {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Level::High => "high",
            Level::Medium => "medium",
            Level::Low => "low",
        }
    }
}

/// The risk object of `risk add`, `risk edit` and `risk list` (COMMANDS.md §6). The rank is
/// computed from impact and likelihood, never read from the file.
#[derive(Debug, Clone, Serialize)]
pub(super) struct RiskView {
    pub id: String,
    pub title: String,
    pub project: String,
    pub impact: String,
    pub likelihood: String,
    pub rank: u8,
    pub status: String,
    pub about: Option<String>,
}

impl RiskView {
    pub(super) fn of(project: &str, r: &RiskHead) -> RiskView {
        RiskView {
            id: r.id.clone(),
            title: r.title.clone(),
            project: format!("p-{project}"),
            impact: r.impact.clone(),
            likelihood: r.likelihood.clone(),
            rank: r.rank(),
            status: r.status.clone(),
            about: r.about.clone(),
        }
    }
}

/// Resolves a `<RISK>` (id, or `<project>/<slug>`) with the errors COMMANDS.md §1.6 gives.
pub(super) fn find<'a>(all: &'a [Located], input: &str) -> Result<&'a Located, Error> {
    risks::resolve(all, input).map_err(|e| match e {
        risks::ResolveError::NotFound { reference } => Error::not_found(format!(
            "no risk `{reference}` in this workspace"
        ))
        .hint("`dacli risk list --status all` lists every risk with an id `risk edit` takes"),
        risks::ResolveError::Ambiguous {
            reference,
            candidates,
        } => super::ambiguous(format!(
            "`{reference}` matches several risks: {}",
            candidates.join(", ")
        ))
        .hint("qualify it as <project>/<slug>, or pass the risk's id"),
    })
}

/// A one-line summary for human text.
pub(super) fn summary(r: &RiskView) -> String {
    format!(
        "{} rank {} (impact {}, likelihood {}, {})  {}",
        r.id, r.rank, r.impact, r.likelihood, r.status, r.title
    )
}
