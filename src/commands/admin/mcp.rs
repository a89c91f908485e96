//! `dacli mcp serve` (declared here; the MCP front end runs it) and `dacli mcp config`
//! (COMMANDS.md §3).

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Mcp, Needs, Outcome};
use crate::model::runtime::McpConfig;
use crate::objects::{self, runtimes};
use crate::policy::runtime::mcp_snippet;
use crate::store;

/// Serve this workspace over the Model Context Protocol on stdin/stdout (no network, ever).
///
/// One server per agent: identity is bound at launch from DACLI_AGENT, and a refused token or
/// a missing workspace ends it before stdin is read. Register it with `dacli mcp config`.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeRequest {}

impl Classify for ServeRequest {}

/// The command is a front end: the composition root hands `mcp serve` to the MCP server
/// before any command runs, and the `cli` tool refuses it (`Mcp::Never`). Reaching this body
/// means something called the table directly.
fn serve(_ctx: &Ctx, _req: ServeRequest) -> Result<Outcome<()>, Error> {
    Err(Error::usage(
        "`mcp serve` speaks MCP on stdin/stdout and runs as its own process: `dacli mcp serve`",
    ))
}

fn render_nothing(_: &(), _: &Ctx) -> String {
    String::new()
}

/// Print the snippet that registers `dacli mcp serve` with an MCP client; writes nothing.
///
/// The token is forwarded by name (DACLI_AGENT) and never embedded. With -C DIR the server is
/// started on that workspace.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigRequest {
    /// The client to configure.
    #[arg(long, value_enum)]
    client: Client,
    /// The server's name in the client's configuration.
    #[arg(long, value_name = "NAME", default_value = "dacli")]
    #[serde(default = "dacli")]
    name: String,
    /// How the client starts dacli (a command on PATH, or a path).
    #[arg(long, value_name = "PATH", default_value = "dacli")]
    #[serde(default = "dacli")]
    command: String,
}

fn dacli() -> String {
    "dacli".into()
}

#[derive(Debug, Clone, Copy, clap::ValueEnum, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum Client {
    ClaudeCode,
    Cursor,
    Codex,
}

impl Classify for ConfigRequest {}

#[derive(Debug, Serialize)]
pub struct ConfigResponse {
    client: Client,
    file: String,
    format: String,
    snippet: String,
    /// The runtime adapter whose `mcp_config` shaped the snippet, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    adapter: Option<String>,
}

pub(super) fn commands() -> Vec<Command> {
    vec![
        Command::new("mcp.serve", Class::Read, serve, render_nothing).mcp(Mcp::Never),
        Command::new("mcp.config", Class::Read, config, render_config).needs(Needs::Nothing),
    ]
}

fn config(ctx: &Ctx, req: ConfigRequest) -> Result<Outcome<ConfigResponse>, Error> {
    let name_ok = !req.name.is_empty()
        && req
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !name_ok {
        return Err(Error::usage(format!(
            "--name `{}` must be letters, digits, `-` or `_` (it becomes a key in the client's config)",
            req.name
        )));
    }
    if req.command.is_empty() {
        return Err(Error::usage("--command must not be empty"));
    }
    let mut args: Vec<String> = Vec::new();
    if let Some(dir) = ctx.start_arg() {
        args.push("-C".into());
        args.push(dir.to_string_lossy().into_owned());
    }
    args.extend(["mcp".to_string(), "serve".to_string()]);
    let (file, format, snippet) = match req.client {
        Client::ClaudeCode => (
            ".mcp.json",
            "json",
            json_snippet(&req, &args, "${DACLI_AGENT}"),
        ),
        Client::Cursor => (
            ".cursor/mcp.json",
            "json",
            json_snippet(&req, &args, "${env:DACLI_AGENT}"),
        ),
        Client::Codex => (".codex/config.toml", "toml", toml_snippet(&req, &args)),
    };
    let (file, format, snippet, adapter) = match adapter_config(ctx, req.client) {
        Some((path, cfg)) => {
            let snippet = mcp_snippet(&cfg, &req.name, &req.command, &args, "DACLI_AGENT");
            (cfg.file, cfg.format, snippet, Some(path))
        }
        None => (file.to_string(), format.to_string(), snippet, None),
    };
    Ok(Outcome::Done(ConfigResponse {
        client: req.client,
        file,
        format,
        snippet,
        adapter,
    }))
}

/// The `mcp_config` of the workspace's adapter for `client` (docs/FORMAT.md §25), with the
/// adapter's path. Without a workspace, an adapter or its `mcp_config`, the built-in snippet
/// is used; a malformed adapter is reported as a warning and skipped.
fn adapter_config(ctx: &Ctx, client: Client) -> Option<(String, McpConfig)> {
    let name = match client {
        Client::ClaudeCode => "claude-code",
        Client::Cursor => "cursor",
        Client::Codex => "codex",
    };
    let ws = ctx.ws().ok()?;
    match runtimes::for_client(ws, name) {
        Ok(found) => {
            let l = found?;
            Some((l.path, l.runtime.mcp_config?))
        }
        Err(objects::Error::Store(store::Error::Malformed(problem))) => {
            ctx.warn(problem);
            None
        }
        Err(_) => None,
    }
}

fn json_snippet(req: &ConfigRequest, args: &[String], token: &str) -> String {
    let mut servers = serde_json::Map::new();
    servers.insert(
        req.name.clone(),
        serde_json::json!({"command": req.command, "args": args, "env": {"DACLI_AGENT": token}}),
    );
    let doc = serde_json::json!({"mcpServers": servers});
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| doc.to_string());
    text.push('\n');
    text
}

fn toml_snippet(req: &ConfigRequest, args: &[String]) -> String {
    let quoted: Vec<String> = args.iter().map(|a| toml_string(a)).collect();
    format!(
        "[mcp_servers.{}]\ncommand = {}\nargs = [{}]\nenv_vars = [\"DACLI_AGENT\"]\n",
        req.name,
        toml_string(&req.command),
        quoted.join(", ")
    )
}

/// A TOML basic string: the same escapes as JSON for everything a path can hold.
fn toml_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn render_config(r: &ConfigResponse, ctx: &Ctx) -> String {
    if !ctx.quiet() {
        let from = r
            .adapter
            .as_ref()
            .map(|a| format!("; shaped by {a}"))
            .unwrap_or_default();
        ctx.notice(format!(
            "paste into {} (it forwards DACLI_AGENT by name{from})",
            r.file
        ));
    }
    r.snippet.clone()
}
