//! runtimes: adapters for the coding agents' CLIs (docs/FORMAT.md §25). `runtime add` writes
//! one from a preset, `list`/`show`/`rm` manage them, and `runtime doctor` probes the installed
//! binaries through `exec` (no shell, with timeouts) instead of trusting the declarations.

mod add;
mod doctor;
mod presets;
mod rm;
mod route;
mod show;

use serde::Serialize;

use crate::dispatch::{Command, Ctx, Error};
use crate::model::runtime::{Detect, McpConfig, Runtime};
use crate::objects::runtimes::{self, Located, Route};

pub(super) fn commands() -> Vec<Command> {
    vec![
        add::command(),
        show::list_command(),
        show::show_command(),
        rm::command(),
        route::command(),
        doctor::command(),
    ]
}

/// The `runtime` object of `runtime add` and `runtime show`.
#[derive(Debug, Clone, Serialize)]
struct RuntimeView {
    name: String,
    summary: String,
    preset: Option<String>,
    binary: String,
    detect: Detect,
    prompt: String,
    /// `invoke` without `prompt`, in file order.
    invoke: serde_json::Map<String, serde_json::Value>,
    capabilities: Vec<String>,
    dangerous: Vec<String>,
    env_passthrough: Vec<String>,
    mcp_config: Option<McpConfig>,
    owner: String,
}

impl RuntimeView {
    fn of(r: &Runtime) -> RuntimeView {
        RuntimeView {
            name: r.name.clone(),
            summary: r.summary.clone(),
            preset: r.preset.clone(),
            binary: r.binary.clone(),
            detect: r.detect.clone(),
            prompt: r.prompt.clone(),
            invoke: r
                .invoke
                .iter()
                .map(|(k, v)| (k.clone(), v.clone().into()))
                .collect(),
            capabilities: r.capabilities.clone(),
            dangerous: r.dangerous.clone(),
            env_passthrough: r.env_passthrough.clone(),
            mcp_config: r.mcp_config.clone(),
            owner: r.owner.clone(),
        }
    }
}

/// Every runtime, with skipped files reported.
fn all_runtimes(ctx: &Ctx) -> Result<Vec<Located>, Error> {
    let listing = runtimes::list(ctx.ws()?)?;
    ctx.warn_all(listing.warnings);
    Ok(listing.items)
}

/// Every role's `runtime`, with skipped role files reported.
fn all_routes(ctx: &Ctx) -> Result<Vec<Route>, Error> {
    let listing = runtimes::routes(ctx.ws()?)?;
    ctx.warn_all(listing.warnings);
    Ok(listing.items)
}

/// The roles routing to `name`, sorted.
fn routed_by(routes: &[Route], name: &str) -> Vec<String> {
    routes
        .iter()
        .filter(|r| r.runtime == name)
        .map(|r| r.role.clone())
        .collect()
}
