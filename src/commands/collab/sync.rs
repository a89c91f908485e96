//! `dacli sync`: the owner applies pending events, materialises notes, writes receipts.

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::journal::sync::{Scope, Synced};

/// Apply the pending events about everything you own (root: also what retired or missing
/// owners left, and `workspace`): each object is rewritten once, notes are materialised, and
/// one receipt per object records what was applied or rejected. Finish requests whose
/// definition of done is unmet, reopen requests and open questions stay pending.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Only this object: a task reference, `p-<slug>` or `workspace`.
    #[arg(long, value_name = "REF|PROJECT|workspace")]
    #[serde(default)]
    about: Option<String>,
    /// Report what would happen; write nothing.
    #[arg(long)]
    #[serde(default)]
    dry_run: bool,
    /// Also exchange the workspace through a git remote (default: the branch's upstream
    /// remote, else `origin`): commit `.dacli/` changes as dacli, fetch, merge or rebase as
    /// `pull.rebase` says, apply what you own, push (retried when the remote moved on; never
    /// forced, nothing outside `.dacli/` committed).
    #[arg(long, value_name = "NAME", num_args = 0..=1, default_missing_value = "")]
    #[serde(default)]
    remote: Option<String>,
    /// Reject this pending event (reason `declined`); repeatable.
    #[arg(long = "decline", value_name = "EVENT")]
    #[serde(default)]
    decline: Vec<String>,
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Summary {
    applied: usize,
    rejected: usize,
    pending: usize,
    not_owned: usize,
}

#[derive(Debug, Serialize)]
pub struct Response {
    objects: Vec<Synced>,
    /// Tasks of yours given a new number because a merge made theirs shared (FORMAT §22).
    renumbered: Vec<crate::ops::machines::Renumbered>,
    summary: Summary,
    dry_run: bool,
    /// What `--remote` exchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    remote: Option<crate::ops::machines::RemoteReport>,
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    if let Some(remote) = &req.remote {
        if req.about.is_some() || !req.decline.is_empty() {
            return Err(Error::usage(
                "--remote syncs everything you own: it takes no --about or --decline",
            ));
        }
        let mint = || ctx.new_ulid();
        let at = crate::model::format_time(ctx.now());
        let exe = std::env::current_exe()
            .map(|e| {
                crate::ops::admin::canonical_or_same(&e)
                    .to_string_lossy()
                    .into_owned()
            })
            .unwrap_or_else(|_| "dacli".into());
        let wait = |attempt: u32, jitter: u64| {
            // Backoff: 100 ms doubled per attempt (at most 3.2 s), plus up to 255 ms of jitter
            // so clones that collided do not collide again in step.
            let ms = (100u64 << attempt.min(5)) + (jitter % 256);
            std::thread::sleep(std::time::Duration::from_millis(ms));
        };
        let report = crate::ops::machines::sync_remote(
            &crate::ops::lint_fix::Fixer {
                me: &me,
                at: &at,
                mint: &mint,
            },
            ws,
            &crate::ops::machines::RemoteSync {
                remote: (!remote.is_empty()).then_some(remote.as_str()),
                dry_run: req.dry_run,
                exe: &exe,
                attempts: 8,
                wait: &wait,
            },
        )?;
        return Ok(Outcome::Done(Response {
            objects: Vec::new(),
            renumbered: Vec::new(),
            summary: Summary {
                applied: report.applied,
                rejected: 0,
                pending: 0,
                not_owned: 0,
            },
            dry_run: req.dry_run,
            remote: Some(report),
        }));
    }
    let about = match req.about.as_deref() {
        None => None,
        Some("workspace") => Some("workspace".to_string()),
        Some(p) if p.starts_with("p-") => Some(p.to_string()),
        // Resolving reports the task listing's skipped files.
        Some(r) => Some(crate::dispatch::one_task::locate(ctx, r)?.1),
    };
    // A hole in the log or an unreadable task is skipped, never silently (FORMAT §4.4).
    ctx.warn_all(crate::journal::index::read(ws)?.warnings);
    if about.is_none() {
        let projects = crate::objects::projects::list(ws)?;
        ctx.warn_all(projects.warnings);
        for p in &projects.items {
            ctx.warn_all(crate::objects::index::tasks(ws, &p.slug)?.warnings);
        }
    }
    // `sync` takes the clone's writing lock itself: `--remote` needs it exclusive.
    let _writing = crate::ops::machines::writing(ws)?;
    let decline = req.decline.iter().map(|d| d.to_ascii_uppercase()).collect();
    let mint = || ctx.new_ulid();
    let (objects, not_owned) = crate::ops::collab::sync(
        ws,
        &me,
        &mint,
        &Scope {
            about,
            decline,
            dry_run: req.dry_run,
        },
    )?;
    let at = crate::model::format_time(ctx.now());
    let renumbered = if req.about.is_none() {
        crate::ops::machines::renumber_owned(
            &crate::ops::lint_fix::Fixer {
                me: &me,
                at: &at,
                mint: &mint,
            },
            ws,
            req.dry_run,
        )?
    } else {
        Vec::new()
    };
    // An event whose file fails its checksum is left out of the fold, exactly as a cold
    // read leaves it out; the reader hears about it.
    for o in &objects {
        ctx.warn_all(o.warnings.clone());
    }
    let summary = Summary {
        applied: objects.iter().map(|o| o.applied.len()).sum(),
        rejected: objects.iter().map(|o| o.rejected.len()).sum(),
        pending: objects.iter().map(|o| o.pending.len()).sum(),
        not_owned,
    };
    Ok(Outcome::Done(Response {
        objects,
        renumbered,
        summary,
        dry_run: req.dry_run,
        remote: None,
    }))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    let mut out = String::new();
    if let Some(x) = &r.remote {
        let verb = if x.dry_run {
            "would commit"
        } else {
            "committed"
        };
        out.push_str(&format!(
            "{} {}/{} ({}): {verb} {} workspace file(s), resolved {}, applied {}, {}\n",
            if x.dry_run {
                "dry run:"
            } else {
                "sync --remote"
            },
            x.remote,
            x.branch,
            x.integrate,
            x.committed.len(),
            x.resolved.len(),
            x.applied,
            if x.pushed {
                format!("pushed after {} attempt(s)", x.attempts)
            } else {
                "nothing pushed".to_string()
            }
        ));
        return out;
    }
    for o in &r.objects {
        out.push_str(&format!(
            "{}: {} applied, {} rejected, {} pending{}\n",
            o.about,
            o.applied.len(),
            o.rejected.len(),
            o.pending.len(),
            o.receipt
                .as_deref()
                .map(|r| format!(" (receipt {r})"))
                .unwrap_or_default()
        ));
        for rej in &o.rejected {
            out.push_str(&format!("  rejected {}: {}\n", rej.id, rej.reason));
        }
        for p in &o.pending {
            out.push_str(&format!("  pending {}: {}\n", p.id, p.why));
        }
        for n in &o.notes {
            out.push_str(&format!("  note {n}\n"));
        }
    }
    for r in &r.renumbered {
        out.push_str(&format!(
            "{}: number {:03} -> {:03} (shared after a merge)\n",
            r.id, r.from, r.to
        ));
    }
    out.push_str(&format!(
        "{}{} applied, {} rejected, {} pending; {} object(s) with pending events belong to others\n",
        if r.dry_run { "dry run: " } else { "" },
        r.summary.applied,
        r.summary.rejected,
        r.summary.pending,
        r.summary.not_owned
    ));
    out
}

pub(super) fn commands() -> Vec<Command> {
    vec![
        Command::new("sync", Class::Mutate, run, render)
            .ro_alternative(
                "leave it: your events are already visible to every reader, and each object's owner applies them at its sync",
            )
            .locks_itself(),
    ]
}
