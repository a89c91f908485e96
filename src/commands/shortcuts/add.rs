//! `shortcut add` and `shortcut promote`: create a shortcut file, validated first (effect,
//! declared and closed placeholders, closed groups, parameter names, `dir` inside the work
//! tree), so that a stored shortcut can always be expanded.

use serde::{Deserialize, Serialize};
use toml_edit::{Array, DocumentMut, InlineTable, Value, value};

use super::ShortcutView;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, ErrorKind, Outcome, Refusal};
use crate::journal::runs::{ADHOC, command_of, runs};
use crate::model::id::parse_ulid;
use crate::model::shortcut::{Effect, Param, Shortcut, is_param_name};
use crate::model::toml_time;
use crate::objects::roles;
use crate::policy::shortcut::Template;
use crate::store::Document;
use crate::workspace::names::{check_repo_path, check_slug};

const EFFECTS: [&str; 3] = ["read", "write", "destructive"];

/// Add a shortcut: a named command template agents run with `dacli run NAME`.
///
/// A value never becomes shell code: `{{param}}` becomes `"${DACLI_P_param}"` and the value
/// travels in that variable of the shell (`--raw`: unquoted, so it splits into words). A
/// placeholder is refused where its value could still run as code or name the program:
/// inside single quotes, backticks, `$( )`, `$(( ))`, `${ }` or a here-document, after `\`
/// or `$`, in an assignment, as the program, in the code of `sh -c`, `eval`, `python -c`,
/// `ssh`, `git -c` and the like, or piped into a shell (`echo {{v}} | sh`). A value starting
/// with `-` is refused at the run where it starts a word with no `--` before it. `[[ … ]]` is
/// dropped whole when a placeholder inside it is empty. `--effect` is mandatory: `read` shortcuts are open to ro agents, `destructive` ones
/// need `--confirmed`.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddRequest {
    /// The shortcut's name (a slug).
    name: String,
    /// The command template, run with `sh -c`.
    #[arg(long, value_name = "TEMPLATE")]
    command: String,
    /// What running it does to the work tree.
    #[arg(long, value_parser = EFFECTS)]
    effect: String,
    /// One line for catalogs.
    #[arg(long, value_name = "TEXT")]
    summary: String,
    /// Declare a parameter, optionally with a default (repeatable).
    #[arg(long = "param", value_name = "NAME[=DEFAULT]")]
    #[serde(default)]
    param: Vec<String>,
    /// Make a declared parameter required (repeatable).
    #[arg(long = "required", value_name = "NAME")]
    #[serde(default)]
    required: Vec<String>,
    /// Insert a declared parameter's value unquoted (repeatable; only for trusted values).
    #[arg(long = "raw", value_name = "NAME")]
    #[serde(default)]
    raw: Vec<String>,
    /// Describe a declared parameter (repeatable).
    #[arg(long = "describe", value_name = "NAME=TEXT")]
    #[serde(default)]
    describe: Vec<String>,
    /// A role allowed to run it (repeatable; none: any role).
    #[arg(long = "role", value_name = "ROLE")]
    #[serde(default)]
    roles: Vec<String>,
    /// The working directory, a repository path (default: the work-tree root).
    #[arg(long, value_name = "PATH")]
    #[serde(default)]
    dir: Option<String>,
    /// Why the command has its shape (the file's body).
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    why: Option<String>,
}

impl Classify for AddRequest {}

/// The parameter flags `add` and `promote` share.
struct ParamFlags<'a> {
    param: &'a [String],
    required: &'a [String],
    raw: &'a [String],
    describe: &'a [String],
}

/// Turn an ad-hoc command that was run at least twice (`dacli run --cmd`) into a shortcut.
/// Its command becomes the template unless `--command` parameterises it.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromoteRequest {
    /// The new shortcut's name (a slug).
    name: String,
    /// A `run` event of the ad-hoc command (full ULID).
    #[arg(long = "from-event", value_name = "EVENT")]
    from_event: String,
    /// What running it does to the work tree.
    #[arg(long, value_parser = EFFECTS)]
    effect: String,
    /// One line for catalogs.
    #[arg(long, value_name = "TEXT")]
    summary: String,
    /// A template to use instead of the literal command.
    #[arg(long, value_name = "TEMPLATE")]
    #[serde(default)]
    command: Option<String>,
    /// Declare a parameter, optionally with a default (repeatable).
    #[arg(long = "param", value_name = "NAME[=DEFAULT]")]
    #[serde(default)]
    param: Vec<String>,
    /// Make a declared parameter required (repeatable).
    #[arg(long = "required", value_name = "NAME")]
    #[serde(default)]
    required: Vec<String>,
    /// Insert a declared parameter's value unquoted (repeatable; only for trusted values).
    #[arg(long = "raw", value_name = "NAME")]
    #[serde(default)]
    raw: Vec<String>,
    /// Describe a declared parameter (repeatable).
    #[arg(long = "describe", value_name = "NAME=TEXT")]
    #[serde(default)]
    describe: Vec<String>,
    /// A role allowed to run it (repeatable; none: any role).
    #[arg(long = "role", value_name = "ROLE")]
    #[serde(default)]
    roles: Vec<String>,
    /// Why the command has its shape (the file's body).
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    why: Option<String>,
}

impl Classify for PromoteRequest {}

#[derive(Debug, Serialize)]
pub struct Response {
    shortcut: ShortcutView,
    effect: &'static str,
    /// `promote`: how many ad-hoc runs had this command.
    #[serde(skip_serializing_if = "Option::is_none")]
    runs: Option<usize>,
    #[serde(skip)]
    path: String,
}

pub(super) fn add_command() -> Command {
    Command::new("shortcut.add", Class::Mutate, add, render)
}

pub(super) fn promote_command() -> Command {
    Command::new("shortcut.promote", Class::Mutate, promote, render)
}

/// Everything a new shortcut file says.
struct Spec<'a> {
    name: &'a str,
    summary: &'a str,
    command: &'a str,
    effect: &'a str,
    flags: ParamFlags<'a>,
    roles: &'a [String],
    dir: Option<&'a str>,
    why: Option<&'a str>,
}

fn add(ctx: &Ctx, req: AddRequest) -> Result<Outcome<Response>, Error> {
    let (view, path) = create(
        ctx,
        &Spec {
            name: &req.name,
            summary: &req.summary,
            command: &req.command,
            effect: &req.effect,
            flags: ParamFlags {
                param: &req.param,
                required: &req.required,
                raw: &req.raw,
                describe: &req.describe,
            },
            roles: &req.roles,
            dir: req.dir.as_deref(),
            why: req.why.as_deref(),
        },
    )?;
    Ok(Outcome::Done(Response {
        shortcut: view,
        effect: "created",
        runs: None,
        path,
    }))
}

fn promote(ctx: &Ctx, req: PromoteRequest) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let id = parse_ulid(&req.from_event)
        .filter(|_| req.from_event.trim().len() == 26)
        .ok_or_else(|| {
            Error::usage(format!(
                "--from-event `{}` is not a full event id (26 characters)",
                req.from_event
            ))
            .hint("list ad-hoc runs with `dacli events list --kind run`")
        })?
        .to_string();
    let journal = crate::journal::read(ws)?;
    ctx.warn_all(journal.warnings.iter().cloned());
    let ev = journal
        .get(&id)
        .ok_or_else(|| Error::not_found(format!("no event `{id}` in this workspace")))?;
    if ev.kind != "run" {
        return Err(Error::usage(format!(
            "event {id} is a `{}` event, not a run",
            ev.kind
        )));
    }
    if ev.field_str("shortcut") != Some(ADHOC) {
        let named = ev.field_str("shortcut").unwrap_or("?");
        return Ok(Outcome::Refused(Refusal::new(
            "shortcut.not_adhoc",
            format!("event {id} is a run of shortcut {named}, not an ad-hoc command"),
            "Promote an ad-hoc `run` event (`dacli events list --kind run`); this one already is a shortcut.",
        )));
    }
    let literal = command_of(ev);
    let count = runs(&journal)
        .filter(|e| e.field_str("shortcut") == Some(ADHOC) && command_of(e) == literal)
        .count();
    if count < 2 {
        return Ok(Outcome::Refused(Refusal::new(
            "shortcut.not_repeated",
            format!("`{literal}` was run once"),
            format!(
                "Run it again when it recurs (`dacli run --cmd {}`); promotion is for repeats.",
                crate::policy::shortcut::quote(literal)
            ),
        )));
    }
    let command = req.command.as_deref().unwrap_or(literal);
    let (view, path) = create(
        ctx,
        &Spec {
            name: &req.name,
            summary: &req.summary,
            command,
            effect: &req.effect,
            flags: ParamFlags {
                param: &req.param,
                required: &req.required,
                raw: &req.raw,
                describe: &req.describe,
            },
            roles: &req.roles,
            dir: None,
            why: req.why.as_deref(),
        },
    )?;
    Ok(Outcome::Done(Response {
        shortcut: view,
        effect: "created",
        runs: Some(count),
        path,
    }))
}

/// Validates `spec` and creates the file under the shortcut lock; returns the view and path.
fn create(ctx: &Ctx, spec: &Spec<'_>) -> Result<(ShortcutView, String), Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    check_slug(spec.name).map_err(|m| Error::bad_slug(format!("NAME: {m}")))?;
    let summary = one_line("--summary", spec.summary)?;
    if spec.command.trim().is_empty() {
        return Err(Error::usage("--command must not be empty"));
    }
    let effect = Effect::parse(spec.effect).ok_or_else(|| {
        Error::usage(format!(
            "--effect `{}` is not one of read, write, destructive",
            spec.effect
        ))
    })?;
    let params = params(&spec.flags)?;
    let declared: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
    Template::parse(spec.command, &declared)
        .map_err(|e| Error::usage(format!("--command: {e}")))?;
    if let Some(dir) = spec.dir {
        let escape =
            |m: String| Error::new(ErrorKind::Usage, "E_PATH_ESCAPE", format!("--dir: {m}"));
        check_repo_path(dir).map_err(escape)?;
        if crate::exec::dir_escapes(ws.root(), dir) {
            return Err(escape(format!(
                "`{dir}` resolves outside the work tree (through a symlink)"
            )));
        }
    }
    for r in spec.roles {
        roles::load(ws, r)?;
    }
    let why = spec.why.map(str::trim).filter(|w| !w.is_empty());
    if why.is_some_and(|w| w.len() > 64 * 1024) {
        return Err(Error::usage("--why is longer than 64 KiB"));
    }
    let mut front = DocumentMut::new();
    front["kind"] = value("shortcut");
    front["name"] = value(spec.name);
    front["created"] = value(toml_time(ctx.now()));
    front["created_by"] = value(me.as_str());
    front["owner"] = value(me.as_str());
    front["rev"] = value(ctx.new_ulid().to_string());
    front["summary"] = value(summary);
    front["command"] = value(spec.command);
    front["effect"] = value(effect.as_str());
    if !params.is_empty() {
        front["params"] = value(params_array(&params));
    }
    if !spec.roles.is_empty() {
        let mut list = Array::new();
        for r in spec.roles {
            list.push(r.as_str());
        }
        front["roles"] = value(list);
    }
    if let Some(dir) = spec.dir {
        front["dir"] = value(dir);
    }
    let body = match why {
        Some(w) => format!("# {}\n\n{w}\n", spec.name),
        None => format!("# {}\n", spec.name),
    };
    let doc = Document::new(front, body);
    let shortcut = Shortcut::from_front(&doc.front, spec.name)
        .map_err(|e| Error::internal(format!("dacli built an invalid shortcut: {e}")))?;
    let path = crate::ops::shortcuts::create(ws, spec.name, &doc)?;
    Ok((ShortcutView::of(&shortcut), ws.display(&path)))
}

fn one_line<'a>(flag: &str, text: &'a str) -> Result<&'a str, Error> {
    let t = text.trim();
    if t.is_empty() || t.contains('\n') {
        return Err(Error::usage(format!("{flag} must be one non-empty line")));
    }
    Ok(t)
}

/// Builds the declared parameters from the flags; every name the flags mention must be
/// declared with `--param`.
fn params(flags: &ParamFlags<'_>) -> Result<Vec<Param>, Error> {
    let mut out: Vec<Param> = Vec::new();
    for spec in flags.param {
        let (name, default) = match spec.split_once('=') {
            Some((n, d)) => (n, Some(d)),
            None => (spec.as_str(), None),
        };
        if !is_param_name(name) {
            return Err(Error::usage(format!(
                "--param `{name}` is not a parameter name: use [a-z][a-z0-9_]{{0,31}}"
            )));
        }
        if out.iter().any(|p| p.name == name) {
            return Err(Error::usage(format!("--param `{name}` is declared twice")));
        }
        if default.is_some_and(|d| d.contains('\0')) {
            return Err(Error::usage(format!(
                "--param `{name}`: the default contains a NUL byte"
            )));
        }
        out.push(Param {
            name: name.to_string(),
            required: false,
            raw: false,
            default: default.filter(|d| !d.is_empty()).map(str::to_string),
            description: None,
        });
    }
    let find = |flag: &str, name: &str| -> Result<usize, Error> {
        out.iter().position(|p| p.name == name).ok_or_else(|| {
            Error::usage(format!(
                "{flag} `{name}` names no declared parameter (declare it with `--param {name}`)"
            ))
        })
    };
    let mut required = Vec::new();
    for name in flags.required {
        required.push(find("--required", name)?);
    }
    let mut raw = Vec::new();
    for name in flags.raw {
        raw.push(find("--raw", name)?);
    }
    let mut described = Vec::new();
    for spec in flags.describe {
        let (name, text) = spec
            .split_once('=')
            .ok_or_else(|| Error::usage(format!("--describe `{spec}` is not NAME=TEXT")))?;
        described.push((
            find("--describe", name)?,
            one_line("--describe", text)?.to_string(),
        ));
    }
    for i in required {
        out[i].required = true;
    }
    for i in raw {
        out[i].raw = true;
    }
    for (i, text) in described {
        out[i].description = Some(text);
    }
    Ok(out)
}

/// `params` as FORMAT §8 writes them: one inline table per line, keys in field order.
fn params_array(params: &[Param]) -> Array {
    let mut array = Array::new();
    for p in params {
        let mut t = InlineTable::new();
        t.insert("name", p.name.as_str().into());
        t.insert("required", p.required.into());
        t.insert("raw", p.raw.into());
        if let Some(d) = &p.description {
            t.insert("description", d.as_str().into());
        }
        if let Some(d) = &p.default {
            t.insert("default", d.as_str().into());
        }
        let mut v = Value::InlineTable(t);
        v.decor_mut().set_prefix("\n  ");
        array.push_formatted(v);
    }
    array.set_trailing_comma(true);
    array.set_trailing("\n");
    array
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    let effect = r.shortcut.effect.map_or("none", Effect::as_str);
    let from = r
        .runs
        .map(|n| format!(" from {n} ad-hoc runs"))
        .unwrap_or_default();
    format!(
        "created shortcut {} ({effect}){from}\n  {}\n  run it with: dacli run {}\n",
        r.shortcut.name, r.path, r.shortcut.name
    )
}
