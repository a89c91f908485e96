//! `dacli capabilities`: the manifest of spec MCP.md §6, read from the tool registry that
//! serves `tools/list`, plus one entry per command of the table.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::dispatch::tools::{self, PREFERRED_PROTOCOL, SCHEMA_VERSION, SERVER_NAME};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Mcp, Needs, Outcome};

/// Print what this dacli offers an MCP client: every tool with its schema version and digest,
/// the protocol versions, and how each command is reached (a Tier-1 tool, `cli`, or never).
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    server: Value,
    protocol: Value,
    capabilities: Map<String, Value>,
}

pub(super) fn command() -> Command {
    Command::new("capabilities", Class::Read, run, render).needs(Needs::Nothing)
}

fn run(ctx: &Ctx, _req: Request) -> Result<Outcome<Response>, Error> {
    let version = env!("CARGO_PKG_VERSION");
    let table = ctx.table();
    let mut caps = Map::new();
    for tool in tools::registry() {
        // `available` says whether the tool's command is in this build's table (a missing
        // one would be a build bug, answered E_INTERNAL; the MCP suite checks every tool).
        let available =
            tool.commands.is_empty() || tool.commands.iter().any(|c| table.get(c).is_some());
        caps.insert(
            format!("mcp.tool.{}", tool.name),
            json!({
                "tier": tool.tier,
                "schema_version": SCHEMA_VERSION,
                "schema_sha256": tools::digest(&tool.input_schema()),
                "protocol_version": PREFERRED_PROTOCOL,
                "server_version": version,
                "wraps": tool.wraps,
                "class": tool.class,
                "available": available,
            }),
        );
    }
    for cmd in table.commands() {
        let mcp = match cmd.mcp {
            Mcp::Tier1(tool) => format!("tier1:{tool}"),
            Mcp::EscapeHatch => "cli".into(),
            Mcp::Never => "never".into(),
        };
        caps.insert(
            format!("cli.command.{}", cmd.name),
            json!({"class": cmd.class, "mcp": mcp}),
        );
    }
    Ok(Outcome::Done(Response {
        server: json!({"name": SERVER_NAME, "version": version}),
        protocol: json!({"supported": tools::protocols(), "preferred": PREFERRED_PROTOCOL}),
        capabilities: caps,
    }))
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    let mut out = format!(
        "{} {} · MCP {}\n",
        r.server["name"].as_str().unwrap_or_default(),
        r.server["version"].as_str().unwrap_or_default(),
        PREFERRED_PROTOCOL
    );
    for (name, cap) in &r.capabilities {
        let how = cap
            .get("mcp")
            .or_else(|| cap.get("wraps"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        out.push_str(&format!("{name}  {how}\n"));
    }
    out
}
