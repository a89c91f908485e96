//! `dacli usage`: what the MCP usage record (spec MCP.md §7) says about how agents call the
//! tools, so the data can tell whether a tool is mis-tiered.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::dispatch::usage::{self, UsageLine};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};

/// How many calls the MCP server answered, per tool and outcome, and which commands agents
/// reached through the `cli` escape hatch (read from the machine-local record in .dacli/runs/).
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Only calls since TIME (RFC 3339, or a duration back from now: 30d, 12h, 30m).
    #[arg(long, value_name = "TIME", default_value = "30d")]
    #[serde(default = "thirty_days")]
    since: String,
    /// Only calls of this tool.
    #[arg(long, value_name = "NAME")]
    #[serde(default)]
    tool: Option<String>,
}

fn thirty_days() -> String {
    "30d".into()
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    since: String,
    calls: usize,
    by_tool: BTreeMap<String, usize>,
    outcomes: Outcomes,
    cli_share: f64,
    cli_top: Vec<CliCount>,
}

#[derive(Debug, Default, Serialize)]
struct Outcomes {
    done: usize,
    refused: usize,
    error: usize,
}

#[derive(Debug, Serialize)]
struct CliCount {
    argv: String,
    calls: usize,
}

/// How many `cli` commands `cli_top` lists.
const TOP: usize = 10;

pub(super) fn command() -> Command {
    Command::new("usage", Class::Read, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let since = crate::policy::plan::parse_time(&req.since, ctx.now())
        .map_err(|m| Error::usage(format!("--since: {m}")))?;
    let lines: Vec<UsageLine> = usage::read(ctx)?
        .into_iter()
        .filter(|l| l.at.parse::<jiff::Timestamp>().is_ok_and(|at| at >= since))
        .filter(|l| req.tool.as_deref().is_none_or(|t| l.tool == t))
        .collect();
    let mut by_tool = BTreeMap::new();
    let mut outcomes = Outcomes::default();
    let mut cli = BTreeMap::<String, usize>::new();
    for l in &lines {
        *by_tool.entry(l.tool.clone()).or_insert(0) += 1;
        match l.outcome.as_str() {
            "done" => outcomes.done += 1,
            "refused" => outcomes.refused += 1,
            _ => outcomes.error += 1,
        }
        if l.tool == "cli" {
            // Written by a server that recorded no words for a rejected argv.
            let argv = l
                .argv
                .clone()
                .unwrap_or_else(|| "(argv not recorded)".into());
            *cli.entry(argv).or_insert(0) += 1;
        }
    }
    let cli_calls: usize = cli.values().sum();
    let cli_share = if lines.is_empty() {
        0.0
    } else {
        (cli_calls as f64 / lines.len() as f64 * 100.0).round() / 100.0
    };
    let mut cli_top: Vec<CliCount> = cli
        .into_iter()
        .map(|(argv, calls)| CliCount { argv, calls })
        .collect();
    cli_top.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.argv.cmp(&b.argv)));
    cli_top.truncate(TOP);
    Ok(Outcome::Done(Response {
        since: crate::model::format_time(since),
        calls: lines.len(),
        by_tool,
        outcomes,
        cli_share,
        cli_top,
    }))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    let mut out = format!(
        "{} MCP calls since {} ({} done, {} refused, {} error); {:.0}% through cli\n",
        r.calls,
        r.since,
        r.outcomes.done,
        r.outcomes.refused,
        r.outcomes.error,
        r.cli_share * 100.0
    );
    if !r.by_tool.is_empty() {
        let mut tools: Vec<(&String, &usize)> = r.by_tool.iter().collect();
        tools.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        let mut rows = vec![vec!["TOOL".to_string(), "CALLS".to_string()]];
        rows.extend(tools.iter().map(|(t, n)| vec![(*t).clone(), n.to_string()]));
        out.push('\n');
        out.push_str(&crate::dispatch::text::table(&rows, &[1]));
    }
    if !r.cli_top.is_empty() {
        let mut rows = vec![vec!["CLI COMMAND".to_string(), "CALLS".to_string()]];
        rows.extend(
            r.cli_top
                .iter()
                .map(|c| vec![c.argv.clone(), c.calls.to_string()]),
        );
        out.push('\n');
        out.push_str(&crate::dispatch::text::table(&rows, &[1]));
    }
    out
}
