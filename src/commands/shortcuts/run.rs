//! `run`: run a shortcut (`run NAME`), list what you may run (`run --list`) or run and record
//! an ad-hoc command (`run --cmd`). The gate is by the shortcut's effect, never by the class
//! of `run`: an ro agent runs read shortcuts.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Caller, all_shortcuts, rank, template, uses};
use crate::dispatch::text::table;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, ErrorKind, Mcp, Outcome, Refusal};
use crate::exec::{Captured, DirError, Spawn, resolve_dir, run_captured};
use crate::journal::runs::{ADHOC, Run};
use crate::journal::snapshot::Snapshot;
use crate::model::Grant;
use crate::model::shortcut::Effect;
use crate::model::task::{Status, TaskRef};
use crate::objects::shortcuts;
use crate::policy::shortcut::{CATALOG_LIMIT, param_signature};
use crate::workspace::names::check_repo_path;

/// Run a shortcut: `dacli run NAME [--param KEY=VALUE]...`. Each value reaches the command as
/// data, in a `DACLI_P_<name>` variable; the command inherits no token. `--list` shows what you may run; `--cmd` runs and records an ad-hoc
/// command (rw), which `shortcut promote` can turn into a shortcut once it recurs.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The shortcut to run.
    #[arg(
        value_name = "NAME",
        required_unless_present_any = ["list", "cmd"],
        conflicts_with_all = ["list", "cmd"]
    )]
    #[serde(default)]
    name: Option<String>,
    /// A parameter value (repeatable).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    #[serde(default)]
    param: Vec<String>,
    /// The task this run is for (default: your single active task, if you have exactly one).
    #[arg(long, value_name = "REF")]
    #[serde(default)]
    task: Option<String>,
    /// Show the expansion and whether the gates pass; run nothing, write nothing.
    #[arg(long)]
    #[serde(default)]
    dry_run: bool,
    /// Confirm a destructive shortcut (only when the task or a human asks for it).
    #[arg(long)]
    #[serde(default)]
    confirmed: bool,
    /// Kill the command's process group after this many seconds (exit 124).
    #[arg(long, value_name = "SECS", default_value_t = 1800)]
    #[serde(default = "default_timeout")]
    timeout: u64,
    /// List the shortcuts you may run, most used first.
    #[arg(long, conflicts_with = "cmd")]
    #[serde(default)]
    list: bool,
    /// With `--list`: show every one, not only the first 12.
    #[arg(long, requires = "list")]
    #[serde(default)]
    all: bool,
    /// Run this literal command in the work-tree root and record it (rw).
    #[arg(long, value_name = "COMMAND")]
    #[serde(default)]
    cmd: Option<String>,
}

fn default_timeout() -> u64 {
    1800
}

// `run` is classed by the shortcut's effect in the body (COMMANDS.md §10), so the dispatcher's
// class gate sees an append.
impl Classify for Request {}

#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Response {
    Ran(Box<Ran>),
    DryRun(DryRun),
    List(List),
}

/// A finished run (COMMANDS.md §10 `run` data).
#[derive(Debug, Serialize)]
pub struct Ran {
    shortcut: String,
    effect: Option<Effect>,
    command: String,
    dir: Option<String>,
    task: Option<TaskRef>,
    exit_code: i64,
    duration_ms: i64,
    event: String,
    output: Output,
}

#[derive(Debug, Serialize)]
struct Output {
    stdout_tail: String,
    stderr_tail: String,
    bytes: u64,
    digest: String,
}

#[derive(Debug, Serialize)]
pub struct DryRun {
    dry_run: bool,
    shortcut: String,
    command: String,
    dir: Option<String>,
    task: Option<TaskRef>,
    gate: Gate,
}

#[derive(Debug, Serialize)]
struct Gate {
    allowed: bool,
    policy: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct List {
    shortcuts: Vec<ListEntry>,
    omitted: usize,
    /// `null` with `--all`.
    limit: Option<usize>,
}

#[derive(Debug, Serialize)]
struct ListEntry {
    name: String,
    summary: String,
    effect: Option<Effect>,
    uses: usize,
    params: Vec<String>,
}

pub(super) fn command() -> Command {
    Command::new("run", Class::Append, run, render).mcp(Mcp::Tier1("run_shortcut"))
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    if req.timeout == 0 {
        return Err(Error::usage("--timeout must be at least 1 second"));
    }
    if req.list {
        if !req.param.is_empty() || req.task.is_some() || req.dry_run || req.confirmed {
            return Err(Error::usage(
                "--list takes only --all; --param, --task, --dry-run and --confirmed go with a run",
            ));
        }
        return list(ctx, req.all);
    }
    if req.all {
        return Err(Error::usage("--all goes with --list"));
    }
    match (&req.name, &req.cmd) {
        (Some(name), None) => named(ctx, name, &req),
        (None, Some(cmd)) => {
            if !req.param.is_empty() || req.confirmed {
                return Err(Error::usage(
                    "--param and --confirmed go with a shortcut, not with --cmd",
                ));
            }
            adhoc(ctx, cmd, &req)
        }
        _ => Err(Error::usage(
            "give a shortcut NAME, --list or --cmd COMMAND",
        )),
    }
}

fn list(ctx: &Ctx, all: bool) -> Result<Outcome<Response>, Error> {
    let shortcuts = all_shortcuts(ctx)?;
    let caller = Caller::load(ctx, &shortcuts)?;
    let uses = uses(ctx)?;
    let mut runnable: Vec<_> = shortcuts
        .iter()
        .filter(|l| caller.may_run(&l.shortcut))
        .collect();
    rank(&mut runnable, &uses);
    let limit = (!all).then_some(CATALOG_LIMIT);
    let shown = limit.unwrap_or(usize::MAX).min(runnable.len());
    let omitted = runnable.len() - shown;
    let entries = runnable[..shown]
        .iter()
        .map(|l| ListEntry {
            name: l.shortcut.name.clone(),
            summary: l.shortcut.summary.clone(),
            effect: l.shortcut.effect,
            uses: uses.get(&l.shortcut.name).copied().unwrap_or(0),
            params: param_signature(&l.shortcut.params),
        })
        .collect();
    Ok(Outcome::Done(Response::List(List {
        shortcuts: entries,
        omitted,
        limit,
    })))
}

/// Parses `KEY=VALUE` words; a repeated key is a usage error.
fn values(words: &[String]) -> Result<BTreeMap<String, String>, Error> {
    let mut out = BTreeMap::new();
    for w in words {
        let (k, v) = w
            .split_once('=')
            .ok_or_else(|| Error::usage(format!("--param `{w}` is not KEY=VALUE")))?;
        if out.insert(k.to_string(), v.to_string()).is_some() {
            return Err(Error::usage(format!("--param `{k}` is given twice")));
        }
    }
    Ok(out)
}

fn named(ctx: &Ctx, name: &str, req: &Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let located = shortcuts::load(ws, name)
        .map_err(|e| Error::from(e).hint("list what you may run with `dacli run --list`"))?;
    let all = all_shortcuts(ctx)?;
    let caller = Caller::load(ctx, &all)?;
    let refusal = caller.gate(&located.shortcut, req.confirmed);
    if let Some(r) = refusal.clone()
        && !req.dry_run
    {
        return Ok(Outcome::Refused(r));
    }
    let expansion = template(&located)?
        .expand(&located.shortcut.params, &values(&req.param)?)
        .map_err(|e| Error::usage(format!("{name}: {e}")))?;
    // What is shown and recorded is the exact command line that runs: the values travel in
    // `DACLI_P_*` variables of the shell, never inside its code.
    let command = expansion.display();
    let dir = located.shortcut.dir.clone();
    let snap = Snapshot::load(ws, &|f| crate::policy::dod::evaluate(f).passed)?;
    ctx.warn_all(snap.warnings.clone());
    let task = task_for(ctx, &snap, req.task.as_deref())?;
    if req.dry_run {
        // A dry run needs no directory yet, but never one that leaves the work tree.
        if let Some(d) = dir.as_deref() {
            check_repo_path(d)
                .ok()
                .filter(|()| !crate::exec::dir_escapes(ws.root(), d))
                .ok_or_else(|| escapes(&located.path, d))?;
        }
        return Ok(Outcome::Done(Response::DryRun(DryRun {
            dry_run: true,
            shortcut: name.to_string(),
            command,
            dir,
            task: task.map(|(_, r)| r),
            gate: Gate {
                allowed: refusal.is_none(),
                policy: refusal.map(|r| r.policy),
            },
        })));
    }
    let cwd = working_dir(ctx, &located.path, dir.as_deref())?;
    let (id, task_ref) = task.unzip();
    let ran = spawn(
        ctx,
        &expansion.command,
        &expansion.env,
        &cwd,
        req.timeout,
        name,
        id.as_deref(),
    )?;
    record(
        ctx,
        Record {
            shortcut: name,
            effect: located.shortcut.effect,
            command,
            dir,
            task: task_ref,
            task_id: id,
            ran,
        },
    )
}

fn adhoc(ctx: &Ctx, cmd: &str, req: &Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    if cmd.trim().is_empty() {
        return Err(Error::usage("--cmd must not be empty"));
    }
    if cmd.contains('\0') {
        return Err(Error::usage("--cmd contains a NUL byte"));
    }
    let me = &ctx.identity()?.agent;
    let refusal = (me.grant == Grant::Ro).then(|| {
        Refusal::new(
            "grant.read_only",
            "`dacli run --cmd` runs an arbitrary command and your grant is ro",
            "Use a shortcut from `dacli run --list`, or ask an rw agent to promote this command.",
        )
    });
    if let Some(r) = refusal.clone()
        && !req.dry_run
    {
        return Ok(Outcome::Refused(r));
    }
    let cwd = working_dir(ctx, "--cmd", None)?;
    let snap = Snapshot::load(ws, &|f| crate::policy::dod::evaluate(f).passed)?;
    ctx.warn_all(snap.warnings.clone());
    let task = task_for(ctx, &snap, req.task.as_deref())?;
    if req.dry_run {
        return Ok(Outcome::Done(Response::DryRun(DryRun {
            dry_run: true,
            shortcut: ADHOC.to_string(),
            command: cmd.to_string(),
            dir: None,
            task: task.map(|(_, r)| r),
            gate: Gate {
                allowed: refusal.is_none(),
                policy: refusal.map(|r| r.policy),
            },
        })));
    }
    let (id, task_ref) = task.unzip();
    let ran = spawn(ctx, cmd, &[], &cwd, req.timeout, ADHOC, id.as_deref())?;
    record(
        ctx,
        Record {
            shortcut: ADHOC,
            effect: None,
            command: cmd.to_string(),
            dir: None,
            task: task_ref,
            task_id: id,
            ran,
        },
    )
}

fn escapes(file: &str, dir: &str) -> Error {
    Error::new(
        ErrorKind::Usage,
        "E_PATH_ESCAPE",
        format!(
            "{file}: `dir` `{dir}` is not a repository path inside the work tree; it is never run"
        ),
    )
}

/// The resolved working directory: `dir` (a repository path) inside the work tree, symlinks
/// resolved, or the work-tree root. `file` names the shortcut for messages.
fn working_dir(ctx: &Ctx, file: &str, dir: Option<&str>) -> Result<std::path::PathBuf, Error> {
    let ws = ctx.ws()?;
    if let Some(d) = dir {
        check_repo_path(d).map_err(|_| escapes(file, d))?;
    }
    resolve_dir(ws.root(), dir).map_err(|e| match e {
        DirError::Escapes => escapes(file, dir.unwrap_or(".")),
        DirError::Missing => Error::not_found(format!(
            "{file}: `dir` `{}` is not a directory of this work tree",
            dir.unwrap_or(".")
        )),
    })
}

/// The task of the run: `--task`, else the caller's single active task (folded), else none.
fn task_for(
    ctx: &Ctx,
    snap: &Snapshot,
    reference: Option<&str>,
) -> Result<Option<(String, TaskRef)>, Error> {
    if let Some(r) = reference {
        let t = snap.resolve_reported(r)?;
        return Ok(Some((t.id().to_string(), snap.task_ref(t))));
    }
    let me = &ctx.identity()?.agent.id;
    let mine: Vec<_> = snap
        .tasks
        .iter()
        .filter(|t| snap.status(t) == Status::Active && snap.assignee(t) == Some(me.as_str()))
        .collect();
    Ok(match mine.as_slice() {
        [one] => Some((one.id().to_string(), snap.task_ref(one))),
        _ => None,
    })
}

fn spawn(
    ctx: &Ctx,
    command: &str,
    params: &[(String, String)],
    cwd: &std::path::Path,
    timeout: u64,
    shortcut: &str,
    task: Option<&str>,
) -> Result<Captured, Error> {
    let _progress = ctx.progress_unseen(format!("running shortcut `{shortcut}`"));
    let mut env = vec![
        ("DACLI_SHORTCUT", Some(shortcut.to_string())),
        ("DACLI_TASK", task.map(str::to_string)),
    ];
    env.extend(params.iter().map(|(k, v)| (k.as_str(), Some(v.clone()))));
    run_captured(&Spawn {
        command,
        dir: cwd,
        timeout: Duration::from_secs(timeout),
        env,
        stream: !ctx.json(),
        cancel: ctx.cancel_token(),
    })
    .map_err(|e| {
        Error::new(
            ErrorKind::Operational,
            "E_IO",
            format!("cannot start `sh` for {shortcut}: {e}"),
        )
    })
}

/// What a finished run leaves behind.
struct Record<'a> {
    shortcut: &'a str,
    effect: Option<Effect>,
    command: String,
    dir: Option<String>,
    task: Option<TaskRef>,
    task_id: Option<String>,
    ran: Captured,
}

/// Appends the `run` event (always, failed runs included), then answers: a non-zero exit is
/// `E_COMMAND_FAILED` with the exit code, the event and the last 20 output lines.
fn record(ctx: &Ctx, r: Record<'_>) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    let ev = crate::ops::shortcuts::record_run(
        ws,
        ctx.new_ulid(),
        &me,
        &Run {
            shortcut: r.shortcut,
            exit_code: r.ran.exit_code,
            duration_ms: r.ran.duration_ms,
            task: r.task_id.as_deref(),
            dir: r.dir.as_deref(),
            command: &r.command,
        },
    )?;
    if r.ran.exit_code != 0 {
        let why = if r.ran.timed_out {
            format!(
                "was killed at its timeout after {} ms (exit {})",
                r.ran.duration_ms, r.ran.exit_code
            )
        } else {
            format!("exited {}", r.ran.exit_code)
        };
        let what = if r.shortcut == ADHOC {
            format!("the ad-hoc command `{}`", r.command)
        } else {
            format!("shortcut {}", r.shortcut)
        };
        let mut message = format!("{what} {why} (event {})", ev.id);
        let lines = r.ran.last_lines(20);
        if !lines.is_empty() {
            message.push_str("; last output:\n");
            message.push_str(&lines.join("\n"));
        }
        return Err(
            Error::new(ErrorKind::Operational, "E_COMMAND_FAILED", message).hint(format!(
                "the run is recorded as event {}; fix the cause and run it again",
                ev.id
            )),
        );
    }
    if !ctx.quiet() {
        ctx.notice(format!(
            "{} exited 0 in {} ms (event {})",
            r.shortcut, r.ran.duration_ms, ev.id
        ));
    }
    Ok(Outcome::Done(Response::Ran(Box::new(Ran {
        shortcut: r.shortcut.to_string(),
        effect: r.effect,
        command: r.command,
        dir: r.dir,
        task: r.task,
        exit_code: r.ran.exit_code,
        duration_ms: r.ran.duration_ms,
        event: ev.envelope.id,
        output: Output {
            stdout_tail: r.ran.stdout_tail,
            stderr_tail: r.ran.stderr_tail,
            bytes: r.ran.bytes,
            digest: r.ran.digest,
        },
    }))))
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    match r {
        // The command's own output was streamed as it ran; the summary went to stderr.
        Response::Ran(_) => String::new(),
        Response::DryRun(d) => {
            let gate = match &d.gate.policy {
                None => "the gates pass".to_string(),
                Some(p) => format!("refused by {p}"),
            };
            format!(
                "would run in {}: {}\n{gate}; nothing was run\n",
                d.dir.as_deref().unwrap_or("the work-tree root"),
                d.command
            )
        }
        Response::List(l) => {
            if l.shortcuts.is_empty() {
                return "no shortcut you may run\n".into();
            }
            let mut rows = vec![vec![
                "NAME".to_string(),
                "USES".into(),
                "EFFECT".into(),
                "PARAMS".into(),
                "SUMMARY".into(),
            ]];
            for e in &l.shortcuts {
                rows.push(vec![
                    e.name.clone(),
                    e.uses.to_string(),
                    e.effect.map_or("none", Effect::as_str).to_string(),
                    e.params.join(" "),
                    e.summary.clone(),
                ]);
            }
            let mut out = table(&rows, &[1]);
            if l.omitted > 0 {
                out.push_str(&format!("… {} more: dacli run --list --all\n", l.omitted));
            }
            out
        }
    }
}
