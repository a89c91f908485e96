//! `dacli version`.

use serde::{Deserialize, Serialize};

use crate::dispatch::tools;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Needs, Outcome};
use crate::workspace::SUPPORTED_FORMAT;

/// Print the dacli version, the commit it was built from and the workspace format it speaks.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    version: &'static str,
    git_sha: &'static str,
    format: i64,
    /// MCP protocol versions `dacli mcp serve` speaks, newest first.
    mcp_protocols: Vec<&'static str>,
}

pub(super) fn command() -> Command {
    Command::new("version", Class::Read, run, render).needs(Needs::Nothing)
}

fn run(_ctx: &Ctx, _req: Request) -> Result<Outcome<Response>, Error> {
    Ok(Outcome::Done(Response {
        version: env!("CARGO_PKG_VERSION"),
        git_sha: env!("DACLI_GIT_SHA"),
        format: SUPPORTED_FORMAT,
        mcp_protocols: tools::protocols(),
    }))
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    format!(
        "dacli {} ({}), workspace format {}\n",
        r.version, r.git_sha, r.format
    )
}
