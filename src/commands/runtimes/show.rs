//! `runtime list` and `runtime show`.

use serde::{Deserialize, Serialize};

use super::{RuntimeView, all_routes, all_runtimes, routed_by};
use crate::dispatch::text::table;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::objects::runtimes;

/// List the runtime adapters: preset, binary, declared capabilities and the roles routed to
/// each. Declarations only; `dacli runtime doctor` checks them.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListRequest {}

impl Classify for ListRequest {}

#[derive(Debug, Serialize)]
struct Item {
    name: String,
    summary: String,
    preset: Option<String>,
    binary: String,
    capabilities: Vec<String>,
    routed_by: Vec<String>,
    owner: String,
}

#[derive(Debug, Serialize)]
pub struct ListResponse {
    runtimes: Vec<Item>,
}

/// Show one runtime adapter: every declared key, the roles routed to it, and its notes.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShowRequest {
    /// The runtime's name.
    name: String,
}

impl Classify for ShowRequest {}

#[derive(Debug, Serialize)]
pub struct ShowResponse {
    runtime: RuntimeView,
    routed_by: Vec<String>,
    path: String,
    body: String,
}

pub(super) fn list_command() -> Command {
    Command::new("runtime.list", Class::Read, list, render_list)
}

pub(super) fn show_command() -> Command {
    Command::new("runtime.show", Class::Read, show, render_show)
}

fn list(ctx: &Ctx, _req: ListRequest) -> Result<Outcome<ListResponse>, Error> {
    let routes = all_routes(ctx)?;
    let runtimes = all_runtimes(ctx)?
        .into_iter()
        .map(|l| Item {
            routed_by: routed_by(&routes, &l.runtime.name),
            name: l.runtime.name,
            summary: l.runtime.summary,
            preset: l.runtime.preset,
            binary: l.runtime.binary,
            capabilities: l.runtime.capabilities,
            owner: l.runtime.owner,
        })
        .collect();
    Ok(Outcome::Done(ListResponse { runtimes }))
}

fn show(ctx: &Ctx, req: ShowRequest) -> Result<Outcome<ShowResponse>, Error> {
    let located = runtimes::load(ctx.ws()?, &req.name)
        .map_err(|e| Error::from(e).hint("list runtimes with `dacli runtime list`"))?;
    let routes = all_routes(ctx)?;
    Ok(Outcome::Done(ShowResponse {
        routed_by: routed_by(&routes, &located.runtime.name),
        runtime: RuntimeView::of(&located.runtime),
        path: located.path,
        body: located.doc.body,
    }))
}

fn or_dash(list: &[String]) -> String {
    if list.is_empty() {
        "-".into()
    } else {
        list.join(", ")
    }
}

fn render_list(r: &ListResponse, _ctx: &Ctx) -> String {
    if r.runtimes.is_empty() {
        return "no runtimes (add one: dacli runtime add NAME --preset claude-code|codex|gemini|generic-exec)\n".into();
    }
    let mut rows = vec![vec![
        "NAME".to_string(),
        "PRESET".into(),
        "BINARY".into(),
        "CAPABILITIES".into(),
        "ROLES".into(),
    ]];
    for i in &r.runtimes {
        rows.push(vec![
            i.name.clone(),
            i.preset.clone().unwrap_or_else(|| "-".into()),
            i.binary.clone(),
            or_dash(&i.capabilities),
            or_dash(&i.routed_by),
        ]);
    }
    table(&rows, &[])
}

fn render_show(r: &ShowResponse, _ctx: &Ctx) -> String {
    let rt = &r.runtime;
    let mut out = format!("{} — {}\n  {}\n", rt.name, rt.summary, r.path);
    out.push_str(&format!(
        "  binary: {}   preset: {}   prompt: {}\n",
        rt.binary,
        rt.preset.as_deref().unwrap_or("-"),
        rt.prompt
    ));
    let probe = |args: &[String]| {
        let mut words = vec![rt.binary.as_str()];
        words.extend(args.iter().map(String::as_str));
        format!("`{}`", words.join(" "))
    };
    let mut probes = vec![probe(&rt.detect.version)];
    probes.extend(rt.detect.help.iter().map(|h| probe(h)));
    out.push_str(&format!(
        "  probes: {} (timeout {} ms; version pattern `{}`)\n",
        probes.join(", "),
        rt.detect.timeout_ms,
        rt.detect.pattern
    ));
    for (key, frag) in &rt.invoke {
        let words: Vec<&str> = frag
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        out.push_str(&format!("  invoke.{key}: {}\n", words.join(" ")));
    }
    out.push_str(&format!(
        "  capabilities (declared): {}\n  dangerous (never passed): {}\n  env_passthrough: {}\n",
        or_dash(&rt.capabilities),
        or_dash(&rt.dangerous),
        or_dash(&rt.env_passthrough)
    ));
    if let Some(m) = &rt.mcp_config {
        out.push_str(&format!(
            "  mcp_config: {} ({}, `{}`)\n",
            m.file, m.format, m.key
        ));
    }
    out.push_str(&format!("  routed by roles: {}\n", or_dash(&r.routed_by)));
    // The body is the owner's text: shown indented under an attribution line.
    let body = r.body.trim_end();
    if !body.is_empty() {
        out.push_str(&format!("\nnotes by {}:\n", rt.owner));
        for line in body.lines() {
            out.push_str(format!("  {line}").trim_end());
            out.push('\n');
        }
    }
    out
}
