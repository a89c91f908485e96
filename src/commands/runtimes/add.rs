//! `runtime add`: write an adapter file from a preset.

use serde::{Deserialize, Serialize};
use toml_edit::{Array, DocumentMut, InlineTable, Value, value};

use super::RuntimeView;
use super::presets::{self, Preset};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome, Refusal};
use crate::model::runtime::{DEFAULT_PATTERN, DEFAULT_TIMEOUT_MS, Runtime};
use crate::model::toml_time;
use crate::policy::runtime::{EnvEntry, env_entry};
use crate::store::Document;
use crate::workspace::names::check_slug;

/// Add a runtime adapter (`.dacli/runtimes/NAME.md`) from a preset: how to find the agent's
/// CLI, read its version, and which flags give each capability.
///
/// Presets: claude-code, codex, gemini (written from each tool's documented flags), and
/// generic-exec for any command (needs --binary). Check it with `dacli runtime doctor NAME`.
/// --env takes variable NAMES only; a value that looks like a secret is refused.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The runtime's name (a slug).
    name: String,
    /// The preset to start from.
    #[arg(long, value_parser = presets::NAMES)]
    preset: String,
    /// The program: a name looked up on PATH, or a path (relative to the work-tree root).
    #[arg(long, value_name = "PROGRAM")]
    #[serde(default)]
    binary: Option<String>,
    /// One line for listings (default: the preset's).
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    summary: Option<String>,
    /// A variable NAME to pass through to the runtime (repeatable; added to the preset's).
    #[arg(long = "env", value_name = "NAME")]
    #[serde(default)]
    env: Vec<String>,
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    runtime: RuntimeView,
    effect: &'static str,
    #[serde(skip)]
    path: String,
}

pub(super) fn command() -> Command {
    Command::new("runtime.add", Class::Mutate, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    check_slug(&req.name).map_err(|m| Error::bad_slug(format!("NAME: {m}")))?;
    let preset = presets::preset(&req.preset).ok_or_else(|| {
        Error::usage(format!(
            "--preset `{}` is not one of {}",
            req.preset,
            presets::NAMES.join(", ")
        ))
    })?;
    if let Some(refusal) = secret_refusal(&req.env) {
        return Ok(Outcome::Refused(refusal));
    }
    let env = env_names(preset, &req.env)?;
    let binary = binary(preset, req.binary.as_deref())?;
    let summary = match req.summary.as_deref().map(str::trim) {
        Some(s) if s.is_empty() || s.contains('\n') => {
            return Err(Error::usage("--summary must be one non-empty line"));
        }
        Some(s) => s.to_string(),
        None => preset.summary.to_string(),
    };
    let mut front = DocumentMut::new();
    front["kind"] = value("runtime");
    front["name"] = value(req.name.as_str());
    front["created"] = value(toml_time(ctx.now()));
    front["created_by"] = value(me.as_str());
    front["owner"] = value(me.as_str());
    front["rev"] = value(ctx.new_ulid().to_string());
    front["summary"] = value(summary);
    front["preset"] = value(preset.name);
    front["binary"] = value(binary);
    front["detect"] = value(detect(preset));
    front["invoke"] = value(invoke(preset));
    front["capabilities"] = value(strings(preset.capabilities.iter().copied()));
    front["dangerous"] = value(strings(preset.dangerous.iter().copied()));
    front["env_passthrough"] = value(strings(env.iter().map(String::as_str)));
    if let Some((file, format, key, env)) = preset.mcp {
        let mut t = InlineTable::new();
        t.insert("file", file.into());
        t.insert("format", format.into());
        t.insert("key", key.into());
        t.insert("env", env.into());
        front["mcp_config"] = value(t);
    }
    let doc = Document::new(front, format!("# {}\n\n{}", req.name, preset.notes));
    let runtime = Runtime::from_front(&doc.front, &req.name)
        .map_err(|e| Error::internal(format!("dacli built an invalid runtime adapter: {e}")))?;
    let path = crate::ops::runtimes::create(ws, &req.name, &doc)?;
    Ok(Outcome::Done(Response {
        runtime: RuntimeView::of(&runtime),
        effect: "created",
        path: ws.display(&path),
    }))
}

/// `runtime.secret_in_env` for the first `--env` entry that looks like a secret. The
/// refusal names the entry by position only: the value is never repeated.
fn secret_refusal(entries: &[String]) -> Option<Refusal> {
    entries.iter().enumerate().find_map(|(i, e)| match env_entry(e) {
        EnvEntry::Secret(what) => Some(Refusal::new(
            "runtime.secret_in_env",
            format!(
                "--env entry {} looks like {what}: env_passthrough holds variable names, never values",
                i + 1
            ),
            "Pass the variable's name instead (`--env ANTHROPIC_API_KEY`), and rotate the secret if it was shared.",
        )),
        _ => None,
    })
}

/// The preset's names plus `extra`, without duplicates; an entry that is not a name is a
/// usage error (named by position, since it may be a value).
fn env_names(preset: &Preset, extra: &[String]) -> Result<Vec<String>, Error> {
    let mut out: Vec<String> = preset.env.iter().map(|s| s.to_string()).collect();
    for (i, e) in extra.iter().enumerate() {
        if env_entry(e) != EnvEntry::Name {
            return Err(Error::usage(format!(
                "--env entry {} is not a variable name ([A-Za-z_][A-Za-z0-9_]*)",
                i + 1
            )));
        }
        if !out.contains(e) {
            out.push(e.clone());
        }
    }
    Ok(out)
}

fn binary(preset: &Preset, given: Option<&str>) -> Result<String, Error> {
    let binary = match (given, preset.binary) {
        (Some(b), _) => b,
        (None, Some(b)) => b,
        (None, None) => {
            return Err(Error::usage(format!(
                "--preset {} needs --binary PROGRAM (a name on PATH, or a path)",
                preset.name
            )));
        }
    };
    if binary.is_empty() || binary.chars().any(|c| c.is_whitespace() || c == '\0') {
        return Err(Error::usage(
            "--binary must be one program, without spaces: flags go in the adapter's `invoke`",
        ));
    }
    Ok(binary.to_string())
}

fn strings<'a>(items: impl Iterator<Item = &'a str>) -> Array {
    let mut a = Array::new();
    for s in items {
        a.push(s);
    }
    a
}

fn detect(preset: &Preset) -> InlineTable {
    let mut help = Array::new();
    for probe in preset.help {
        help.push(Value::Array(strings(probe.iter().copied())));
    }
    let mut t = InlineTable::new();
    t.insert("version", Value::Array(strings(["--version"].into_iter())));
    t.insert("pattern", DEFAULT_PATTERN.into());
    t.insert("help", Value::Array(help));
    t.insert("timeout_ms", (DEFAULT_TIMEOUT_MS as i64).into());
    t
}

fn invoke(preset: &Preset) -> InlineTable {
    let mut t = InlineTable::new();
    t.insert("prompt", preset.prompt.into());
    for (key, fragment) in preset.invoke {
        t.insert(*key, Value::Array(strings(fragment.iter().copied())));
    }
    t
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    format!(
        "created runtime {} ({}, binary `{}`)\n  {}\n  check it with: dacli runtime doctor {}\n",
        r.runtime.name,
        r.runtime.preset.as_deref().unwrap_or("custom"),
        r.runtime.binary,
        r.path,
        r.runtime.name
    )
}
