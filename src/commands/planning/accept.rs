//! `accept`: the owner's verification of proposed work — apply pending events, run the
//! verifications nobody recorded and the test shortcut when its latest run is missing or
//! failing, optionally check the remaining plain criteria, then close as `task done` would.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::check::verify_all;
use super::common::{Locked, acts_as_owner, now_text, own_stamp};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, ErrorKind, Outcome, Refusal};
use crate::exec::{DirError, Spawn, resolve_dir, run_captured};
use crate::journal::runs::Run;
use crate::journal::snapshot::Snapshot;
use crate::journal::wip::guard_role;
use crate::model::id::ROOT_AGENT;
use crate::model::task::{Status, TaskRef};
use crate::model::taskdoc::Change;
use crate::objects::shortcuts;
use crate::ops;
use crate::policy::dod::{evaluate, refusal};
use crate::policy::guard::{Runner, in_toolkit, shortcut_gate};
use crate::policy::shortcut::Template;
use crate::workspace::names::check_repo_path;

/// Accept proposed work on tasks you own (or `--all` with a pending finish request): apply
/// their pending events, run `--verify` for command criteria that lack a verification record,
/// run the definition of done's test shortcut when its latest run for the task is missing or
/// failing, and close them through the definition of done. With one REF a refusal is the
/// answer; with several, outcomes are per task.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Task references.
    #[arg(value_name = "REF", required_unless_present = "all")]
    #[serde(default, rename = "refs")]
    references: Vec<String>,
    /// Every task you own with a pending finish request.
    #[arg(long, conflicts_with = "references")]
    #[serde(default)]
    all: bool,
    /// Check the remaining plain criteria as your own assertion.
    #[arg(long)]
    #[serde(default)]
    check_remaining: bool,
    /// One line of evidence logged with what you check.
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    evidence: Option<String>,
    /// Do not run verification commands.
    #[arg(long)]
    #[serde(default)]
    no_verify: bool,
    /// Do not run the definition of done's test shortcut when its latest run for the task is
    /// missing or failing.
    #[arg(long)]
    #[serde(default)]
    no_test: bool,
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct RefusedTask {
    task: TaskRef,
    refused: Refusal,
}

#[derive(Debug, Serialize)]
pub struct Ran {
    task: String,
    command: String,
    exit_code: i64,
}

#[derive(Debug, Serialize)]
pub struct Response {
    accepted: Vec<TaskRef>,
    refused: Vec<RefusedTask>,
    ran: Vec<Ran>,
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let me = ctx.identity()?.agent.id.clone();
    if let Some(e) = &req.evidence
        && (e.contains('\n') || e.trim().is_empty())
    {
        return Err(Error::usage("--evidence must be one non-empty line"));
    }
    let ws = ctx.ws()?;
    let snap = Snapshot::load(ws, &|f| crate::policy::dod::evaluate(f).passed)?;
    ctx.warn_all(snap.warnings.clone());
    let ids: Vec<String> = if req.all {
        snap.tasks
            .iter()
            .filter(|t| {
                snap.owner(t) == me
                    && snap
                        .folded
                        .get(t.id())
                        .is_some_and(|(_, f)| f.finish_requested())
            })
            .map(|t| t.id().to_string())
            .collect()
    } else {
        let mut v = Vec::new();
        for r in &req.references {
            v.push(snap.resolve_reported(r)?.id().to_string());
        }
        v
    };
    let single = !req.all && ids.len() == 1;
    let mut out = Response {
        accepted: Vec::new(),
        refused: Vec::new(),
        ran: Vec::new(),
    };
    for id in ids {
        let Some(t) = snap.task(&id) else { continue };
        let r = t.reference();
        let task_ref = snap.task_ref(t);
        let owner = snap.owner(t);
        if !acts_as_owner(ctx, owner)? {
            let refused = Refusal::new(
                "task.not_owner",
                format!("{r} belongs to {owner}; only its owner accepts it"),
                format!("To request completion run `dacli task done {r}`; {owner} accepts it."),
            );
            if single {
                return Ok(Outcome::Refused(refused));
            }
            out.refused.push(RefusedTask {
                task: task_ref,
                refused,
            });
            continue;
        }
        match accept_one(ctx, (t.project(), t.id()), &req, &me, &mut out.ran)? {
            Ok(()) => out.accepted.push(task_ref),
            Err(refused) if single => return Ok(Outcome::Refused(refused)),
            Err(refused) => out.refused.push(RefusedTask {
                task: task_ref,
                refused,
            }),
        }
    }
    Ok(Outcome::Done(out))
}

fn accept_one(
    ctx: &Ctx,
    (project, id): (&str, &str),
    req: &Request,
    me: &str,
    ran: &mut Vec<Ran>,
) -> Result<Result<(), Refusal>, Error> {
    let ws = ctx.ws()?;
    let mut locked = Locked::take_id(ctx, project, id)?;
    locked.sync_first(ctx)?;
    if locked.task.doc.status == Status::Done {
        return Ok(Ok(()));
    }
    let mut doc = locked.task.doc.clone();
    let at = now_text(ctx);
    let st = own_stamp(&at, me);
    let facts = locked.facts(ws, &doc);
    if !req.no_verify {
        let commands: Vec<(u32, String)> = facts
            .criteria
            .iter()
            .filter(|c| c.command.is_some() && !(c.checked && c.verified))
            .map(|c| (c.n, c.command.clone().unwrap_or_default()))
            .collect();
        let verified = verify_all(ctx, ws.root(), &commands, 600);
        let verified = match verified? {
            Ok(v) => v,
            Err(refused) => return Ok(Err(refused)),
        };
        for (n, v) in &verified {
            ran.push(Ran {
                task: locked.task.task.id.clone(),
                command: v.command.clone(),
                exit_code: v.exit_code,
            });
            let text = facts
                .criteria
                .iter()
                .find(|c| c.n == *n)
                .map(|c| c.text.clone())
                .unwrap_or_default();
            let _ = doc.check(&[(*n, text)], Some(v), st);
        }
    }
    if !req.no_test
        && let Some(test) = &facts.test
        && test.latest.as_ref().is_none_or(|(_, code)| *code != 0)
    {
        match run_test(ctx, &locked.task.task.id, &test.shortcut)? {
            Ok(r) => ran.push(r),
            Err(refused) => return Ok(Err(refused)),
        }
        // The definition of done reads the run just recorded.
        locked.reread_events(ws)?;
    }
    if req.check_remaining {
        let plain: Vec<(u32, String)> = doc
            .criteria()
            .into_iter()
            .filter(|c| !c.checked && c.command.is_none())
            .map(|c| (c.n, c.text))
            .collect();
        if !plain.is_empty() {
            let _ = doc.check(&plain, None, st);
            if let Some(e) = &req.evidence {
                for (n, _) in &plain {
                    doc.comment(&format!("evidence {n}: {}", e.trim()), st);
                }
            }
        }
    }
    let facts = locked.facts(ws, &doc);
    let report = evaluate(&facts);
    if let Some(refused) = refusal(&report) {
        // Keep what was verified or checked: that work is real even if the task cannot close.
        if doc.body != locked.task.doc.body {
            locked.write(ctx, doc)?;
        }
        return Ok(Err(refused));
    }
    if doc.finish(st).unwrap_or(Change::Unchanged) == Change::Applied {
        locked.write(ctx, doc)?;
    }
    drop(locked);
    // The finish requests this acceptance answers are now settled by a receipt.
    let mint = || ctx.new_ulid();
    ops::tasks::sync_about(ws, me, &mint, id)?;
    Ok(Ok(()))
}

/// Runs the definition of done's test shortcut for task `id` as the caller, through the same
/// gates as `dacli run` (effect, toolkit, grant, confirmation; no parameters given), and
/// records the `run` event with `task` set. A failing run is recorded and reported through
/// the definition of done (`dod.test_failed`), not as an error.
fn run_test(ctx: &Ctx, id: &str, name: &str) -> Result<Result<Ran, Refusal>, Error> {
    let ws = ctx.ws()?;
    let me = &ctx.identity()?.agent;
    let located = shortcuts::load(ws, name).map_err(|e| {
        Error::from(e).hint(format!(
            "`definition_of_done.test_shortcut` names `{name}`; add it with `dacli shortcut add {name} …` or pass `--no-test`"
        ))
    })?;
    let all = shortcuts::list(ws)?;
    ctx.warn_all(all.warnings);
    let role = guard_role(ws, &me.id)?;
    let is_root = me.id == ROOT_AGENT;
    let mut toolkit: Vec<String> = all
        .items
        .iter()
        .filter(|l| is_root || in_toolkit(role.as_ref(), &l.shortcut))
        .map(|l| l.shortcut.name.clone())
        .collect();
    toolkit.sort();
    let ask = role
        .as_ref()
        .and_then(|r| r.escalate_to.first().cloned())
        .or_else(|| me.parent.clone())
        .unwrap_or_else(|| ROOT_AGENT.to_string());
    let runner = Runner {
        is_root,
        grant: me.grant,
        role: role.as_ref(),
        ask: &ask,
    };
    if let Some(refused) = shortcut_gate(&runner, &located.shortcut, &toolkit, false) {
        return Ok(Err(refused));
    }
    let s = &located.shortcut;
    let declared: Vec<&str> = s.params.iter().map(|p| p.name.as_str()).collect();
    let command = Template::parse(&s.command, &declared)
        .map_err(|e| {
            Error::new(
                ErrorKind::Operational,
                "E_MALFORMED",
                format!("{} is malformed: schema (`command`: {e})", located.path),
            )
        })?
        .expand(&s.params, &Default::default())
        .map_err(|e| Error::usage(format!("test shortcut {name}: {e}")))?;
    let bad_dir = |why: &str| {
        Error::new(
            ErrorKind::Usage,
            "E_PATH_ESCAPE",
            format!("{}: `dir` {why}", located.path),
        )
    };
    if let Some(d) = &s.dir {
        check_repo_path(d).map_err(|m| bad_dir(&m))?;
    }
    let cwd = resolve_dir(ws.root(), s.dir.as_deref()).map_err(|e| match e {
        DirError::Escapes => bad_dir("resolves outside the work tree"),
        DirError::Missing => Error::not_found(format!(
            "{}: `dir` is not a directory of this work tree",
            located.path
        )),
    })?;
    let mut env = vec![
        ("DACLI_SHORTCUT", Some(name.to_string())),
        ("DACLI_TASK", Some(id.to_string())),
    ];
    env.extend(
        command
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), Some(v.clone()))),
    );
    let captured = run_captured(&Spawn {
        command: &command.command,
        dir: &cwd,
        timeout: Duration::from_secs(1800),
        env,
        stream: false,
        cancel: ctx.cancel_token(),
    })
    .map_err(|e| {
        Error::new(
            ErrorKind::Operational,
            "E_IO",
            format!("cannot start `sh` for {name}: {e}"),
        )
    })?;
    ops::tasks::record_run(
        ws,
        ctx.new_ulid(),
        &me.id,
        &Run {
            shortcut: name,
            exit_code: captured.exit_code,
            duration_ms: captured.duration_ms,
            task: Some(id),
            dir: s.dir.as_deref(),
            command: &command.display(),
        },
    )?;
    Ok(Ok(Ran {
        task: id.to_string(),
        command: command.display(),
        exit_code: captured.exit_code,
    }))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    let mut out = String::new();
    if !ctx.quiet() {
        for t in &r.accepted {
            out.push_str(&format!("accepted {}\n", t.reference));
        }
    }
    for x in &r.ran {
        out.push_str(&format!(
            "  ran `{}` for {}: exit {}\n",
            x.command, x.task, x.exit_code
        ));
    }
    for f in &r.refused {
        out.push_str(&format!(
            "refused {} [{}]: {}\n  next: {}\n",
            f.task.reference, f.refused.policy, f.refused.reason, f.refused.next
        ));
    }
    out
}

pub(super) fn commands() -> Vec<Command> {
    vec![Command::new("accept", Class::Mutate, run, render)]
}
