//! `github pull` and `github sync` (COMMANDS.md §12): what people said on GitHub comes back as
//! events, never as edits. A comment on an issue that carries a task's marker becomes a
//! `comment` event about that task; a person reopening the issue of a done task becomes a
//! `propose-status` to `open`, which waits for the task's owner. Every such event records
//! `origin = "github:<login>"` and `github_ref = "<owner>/<name>#comment-<id>"` (or
//! `#event-<id>`), by which a second pull recognizes what it already brought in. Comments
//! carrying a dacli marker are dacli's own words and never come back.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::diagnose::{str_at, u64_at};
use super::projection::{self, PushRequest, only_projected_project};
use super::{Notice, announce, call_failure, connect, link_of, project_slug, unlinked};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::github::{CallError, Client};
use crate::model::Refusal;
use crate::model::task::Status;
use crate::objects::tasks;
use crate::ops::{self, github::Pulled};

/// Pages of at most 100 items read per list (issues, one issue's comments or events).
const MAX_PAGES: u32 = 10;

/// Bring what people said on GitHub into the workspace as events (rw): comments on the
/// issues that mirror the project's tasks become `comment` events about those tasks, and a
/// person reopening the issue of a done task becomes a request to reopen it (`propose-status`
/// to open, applied only by the task's owner). Each event records `origin = "github:<login>"`
/// and the GitHub id it came from, so a second pull brings nothing twice; comments dacli wrote
/// itself are left out. Canonical files are never edited. PROJECT may be left out when exactly
/// one project has projection classes; --dry-run lists what would be written and writes nothing.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The project (default: the only one with `github_projection.classes`).
    #[arg(value_name = "PROJECT")]
    #[serde(default)]
    project: Option<String>,
    /// Only list what would be written: write nothing.
    #[arg(long = "dry-run")]
    #[serde(default)]
    dry_run: bool,
    /// At most this many GitHub API calls.
    #[arg(long = "max-api-calls", value_name = "N", default_value_t = 300)]
    #[serde(default = "default_calls")]
    max_api_calls: u32,
}

fn default_calls() -> u32 {
    300
}

impl Classify for Request {
    fn class(&self, declared: Class) -> Class {
        if self.dry_run { Class::Read } else { declared }
    }
}

pub(super) fn command() -> Command {
    Command::new("github.pull", Class::Apply, run, render)
}

#[derive(Debug, Serialize)]
pub struct Response {
    /// `preview` (a dry run) or `apply`.
    mode: &'static str,
    repo: String,
    project: String,
    /// The ids of the events written (empty for a dry run).
    events: Vec<String>,
    /// Remote comments and reopens already brought in by an earlier pull.
    skipped_duplicates: usize,
    /// Every event written, or that a dry run would write.
    items: Vec<Pulled>,
    notices: Vec<Notice>,
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let slug = match &req.project {
        Some(p) => project_slug(ctx, p)?,
        None => only_projected_project(ctx)?,
    };
    pull(ctx, &slug, req.dry_run, req.max_api_calls)
}

/// Pulls one project: observe GitHub, then (unless a dry run) append the new events.
fn pull(
    ctx: &Ctx,
    slug: &str,
    dry_run: bool,
    max_api_calls: u32,
) -> Result<Outcome<Response>, Error> {
    let link = link_of(ctx)?;
    let Some(repo) = link.repo.clone() else {
        return Ok(Outcome::Refused(unlinked("github pull")));
    };
    let (client, _source) = connect(ctx, &link.api_url, max_api_calls.max(1))?;
    let client = match client {
        Ok(c) => c,
        Err(p) => return super::access_failure(&p, &format!("pulling {slug} from {repo}")),
    };
    let ws = ctx.ws()?;
    let local = local_tasks(ctx, slug)?;
    let mut notices = Vec::new();
    let found = match observe(
        &client,
        &repo,
        &ws.config.workspace_id,
        &local,
        &mut notices,
    ) {
        Ok(f) => f,
        Err(e) => return call_failure(&e, &format!("reading the issues of {repo}")),
    };
    // Deduplication and the writes happen under the project lock (in `ops`), so two pulls
    // running at once cannot both bring in the same comment.
    let me = if dry_run {
        String::new()
    } else {
        ctx.identity()?.agent.id.clone()
    };
    let pulled = ops::github::pull_events(ws, slug, &me, found, dry_run, &|| ctx.new_ulid())?;
    ctx.warn_all(pulled.warnings);
    let (items, skipped, events) = (pulled.items, pulled.skipped, pulled.events);
    announce(ctx, &notices);
    Ok(Outcome::Done(Response {
        mode: if dry_run { "preview" } else { "apply" },
        repo,
        project: format!("p-{slug}"),
        events,
        skipped_duplicates: skipped,
        items,
        notices,
    }))
}

/// A task of the project, as far as pulling needs it.
struct Local {
    id: String,
    /// `Some` when the task is done: when it last became done, if its Log says.
    done_since: Option<Option<jiff::Timestamp>>,
}

/// The project's tasks, read before any request is sent.
fn local_tasks(ctx: &Ctx, slug: &str) -> Result<Vec<Local>, Error> {
    let listing = tasks::list(ctx.ws()?, slug)?;
    ctx.warn_all(listing.warnings);
    Ok(listing
        .items
        .iter()
        .map(|t| Local {
            id: t.task.id.clone(),
            done_since: (t.doc.status == Status::Done).then(|| {
                t.doc
                    .log()
                    .iter()
                    .rev()
                    .find(|l| l.text == "finished" || l.text.starts_with("closed "))
                    .and_then(|l| l.at.parse::<jiff::Timestamp>().ok())
            }),
        })
        .collect())
}

/// A task whose issue was found by its marker.
struct Mapped<'a> {
    task: &'a Local,
    issue: u64,
    state: String,
    comments: u64,
}

/// Reads the issues, finds those that carry a marker of one of the project's tasks (never by
/// title), and turns their comments and reopens into events to write. Calls: the issue pages,
/// then one comment list per issue that has comments and one event list per open issue of a
/// done task.
fn observe(
    client: &Client,
    repo: &str,
    ws_id: &str,
    local: &[Local],
    notices: &mut Vec<Notice>,
) -> Result<Vec<Pulled>, CallError> {
    if local.is_empty() {
        return Ok(Vec::new());
    }
    let (issues, more) = client.get_pages(
        &format!("/repos/{repo}/issues?state=all&sort=created&direction=asc"),
        None,
        MAX_PAGES,
    )?;
    if more {
        notices.push(Notice::new(
            "issues_truncated",
            format!(
                "more than {} issues: the comments of issues beyond them are not read",
                MAX_PAGES * 100
            ),
        ));
    }
    let mapped = issues
        .iter()
        .filter(|i| i.get("pull_request").is_none())
        .filter_map(|issue| {
            let id = str_at(issue, &["body"]).and_then(|b| marked_id(b, ws_id))?;
            let task = local.iter().find(|t| t.id == id)?;
            Some(Mapped {
                task,
                issue: u64_at(issue, &["number"])?,
                state: str_at(issue, &["state"]).unwrap_or("open").to_string(),
                comments: u64_at(issue, &["comments"]).unwrap_or(0),
            })
        });
    let mut out = Vec::new();
    for m in mapped {
        if m.comments > 0 {
            out.extend(comments(client, repo, &m, notices)?);
        }
        if m.state == "open"
            && let Some(done_since) = m.task.done_since
            && let Some(p) = reopen(client, repo, &m, done_since, notices)?
        {
            out.push(p);
        }
    }
    Ok(out)
}

/// The object id of a marker `<!-- dacli:<id> ws:<workspace-id> -->` of this workspace.
fn marked_id<'a>(body: &'a str, ws_id: &str) -> Option<&'a str> {
    let rest = &body[body.find("<!-- dacli:")? + "<!-- dacli:".len()..];
    let (id, tail) = rest.split_once(' ')?;
    tail.starts_with(&format!("ws:{ws_id} -->")).then_some(id)
}

/// Whether a remote text is dacli's own: it carries one of dacli's markers.
fn written_by_dacli(body: &str) -> bool {
    body.contains("<!-- dacli:") || body.contains("<!-- dacli-train:")
}

fn comments(
    client: &Client,
    repo: &str,
    m: &Mapped,
    notices: &mut Vec<Notice>,
) -> Result<Vec<Pulled>, CallError> {
    let (list, more) = client.get_pages(
        &format!("/repos/{repo}/issues/{}/comments", m.issue),
        None,
        MAX_PAGES,
    )?;
    if more {
        notices.push(Notice::new(
            "comments_truncated",
            format!(
                "#{} has more than {} comments: the newer ones come with the next pull",
                m.issue,
                MAX_PAGES * 100
            ),
        ));
    }
    Ok(list
        .iter()
        .filter_map(|c| {
            let id = u64_at(c, &["id"])?;
            let body = str_at(c, &["body"])?.replace("\r\n", "\n");
            if body.trim().is_empty() || written_by_dacli(&body) {
                return None;
            }
            Some(Pulled {
                kind: "comment",
                about: m.task.id.clone(),
                issue: m.issue,
                github_ref: format!("{repo}#comment-{id}"),
                origin: format!(
                    "github:{}",
                    str_at(c, &["user", "login"]).unwrap_or("ghost")
                ),
                event: None,
                body,
            })
        })
        .collect())
}

/// The reopen that made the open issue of a done task open again: the last `reopened` event
/// after a `closed` one, and after the task became done (an older reopen was answered by the
/// task's later work).
fn reopen(
    client: &Client,
    repo: &str,
    m: &Mapped,
    done_since: Option<jiff::Timestamp>,
    notices: &mut Vec<Notice>,
) -> Result<Option<Pulled>, CallError> {
    let (events, more) = client.get_pages(
        &format!("/repos/{repo}/issues/{}/events", m.issue),
        None,
        MAX_PAGES,
    )?;
    if more {
        notices.push(Notice::new(
            "events_truncated",
            format!(
                "#{} has more than {} events: a reopen beyond them is not seen",
                m.issue,
                MAX_PAGES * 100
            ),
        ));
    }
    let Some(reopened) = human_reopen(&events, done_since) else {
        return Ok(None);
    };
    let Some(id) = u64_at(reopened, &["id"]) else {
        return Ok(None);
    };
    let login = str_at(reopened, &["actor", "login"]).unwrap_or("ghost");
    Ok(Some(Pulled {
        kind: "propose-status",
        about: m.task.id.clone(),
        issue: m.issue,
        github_ref: format!("{repo}#event-{id}"),
        origin: format!("github:{login}"),
        event: None,
        body: format!("{login} reopened {repo}#{} on GitHub", m.issue),
    }))
}

/// Of an issue's events (oldest first), the `reopened` event that made it open now: the last
/// one after the last `closed`, unless it is older than `done_since` (the task became done
/// after it, so later work answered it).
fn human_reopen(events: &[Value], done_since: Option<jiff::Timestamp>) -> Option<&Value> {
    let kind = |e: &Value| str_at(e, &["event"]).unwrap_or_default().to_string();
    let closed = events.iter().rposition(|e| kind(e) == "closed")?;
    let reopened = events[closed..]
        .iter()
        .rev()
        .find(|e| kind(e) == "reopened")?;
    let at = str_at(reopened, &["created_at"]).and_then(|s| s.parse::<jiff::Timestamp>().ok());
    match (done_since, at) {
        (Some(since), Some(when)) if when < since => None,
        _ => Some(reopened),
    }
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    let mut out = format!(
        "{} -> {}: {} new, {} already pulled{}\n",
        r.repo,
        r.project,
        r.items.len(),
        r.skipped_duplicates,
        if r.mode == "preview" {
            " (dry run: nothing written)"
        } else {
            ""
        }
    );
    for p in &r.items {
        out.push_str(&format!(
            "  {:<14} {} #{} {} {}",
            p.kind, p.about, p.issue, p.origin, p.github_ref
        ));
        if let Some(e) = &p.event {
            out.push_str(&format!("  event {e}"));
        }
        out.push('\n');
    }
    out
}

/// Pull, then push (rw): bring people's comments and reopens in as events, then mirror the
/// project to GitHub as `github push` does. Both halves run; what either refused is listed in
/// refusals, and the whole sync is refused only when both are. PROJECT may be left out when
/// exactly one project has projection classes; --dry-run writes nothing, locally or remotely.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncRequest {
    /// The project (default: the only one with `github_projection.classes`).
    #[arg(value_name = "PROJECT")]
    #[serde(default)]
    project: Option<String>,
    /// Only preview both halves: write nothing.
    #[arg(long = "dry-run")]
    #[serde(default)]
    dry_run: bool,
    /// At most this many GitHub API calls for each half.
    #[arg(long = "max-api-calls", value_name = "N", default_value_t = 300)]
    #[serde(default = "default_calls")]
    max_api_calls: u32,
}

impl Classify for SyncRequest {
    fn class(&self, declared: Class) -> Class {
        if self.dry_run { Class::Read } else { declared }
    }
}

pub(super) fn sync_command() -> Command {
    Command::new("github.sync", Class::Apply, run_sync, render_sync)
}

#[derive(Debug, Serialize)]
pub struct SyncResponse {
    /// `preview` (a dry run) or `apply`.
    mode: &'static str,
    /// The pull's result; null when it was refused.
    pull: Option<Response>,
    /// The push's result; null when it was refused.
    push: Option<projection::Response>,
    /// What either half refused: `{subject: "pull"|"push", policy, reason, next}`.
    refusals: Vec<HalfRefusal>,
}

#[derive(Debug, Serialize)]
struct HalfRefusal {
    subject: &'static str,
    policy: String,
    reason: String,
    next: String,
}

impl HalfRefusal {
    fn of(subject: &'static str, r: Refusal) -> HalfRefusal {
        HalfRefusal {
            subject,
            policy: r.policy,
            reason: r.reason,
            next: r.next,
        }
    }
}

fn run_sync(ctx: &Ctx, req: SyncRequest) -> Result<Outcome<SyncResponse>, Error> {
    let slug = match &req.project {
        Some(p) => project_slug(ctx, p)?,
        None => only_projected_project(ctx)?,
    };
    let mut refusals = Vec::new();
    let pull = match pull(ctx, &slug, req.dry_run, req.max_api_calls)? {
        Outcome::Done(r) => Some(r),
        Outcome::Refused(r) => {
            refusals.push(HalfRefusal::of("pull", r));
            None
        }
    };
    let push = match projection::run_push(
        ctx,
        PushRequest::new(slug.clone(), req.dry_run, req.max_api_calls),
    )? {
        Outcome::Done(r) => Some(r),
        Outcome::Refused(r) => {
            refusals.push(HalfRefusal::of("push", r));
            None
        }
    };
    if pull.is_none() && push.is_none() {
        return Ok(Outcome::Refused(both_refused(&refusals)));
    }
    Ok(Outcome::Done(SyncResponse {
        mode: if req.dry_run { "preview" } else { "apply" },
        pull,
        push,
        refusals,
    }))
}

/// One refusal for a sync whose halves were both refused: the pull's policy and next (it
/// runs first), with both reasons.
fn both_refused(refusals: &[HalfRefusal]) -> Refusal {
    let reason = refusals
        .iter()
        .map(|r| format!("{}: {} ({})", r.subject, r.reason, r.policy))
        .collect::<Vec<_>>()
        .join("; ");
    let first = &refusals[0];
    Refusal::new(first.policy.clone(), reason, first.next.clone())
}

fn render_sync(r: &SyncResponse, ctx: &Ctx) -> String {
    let mut out = String::new();
    if let Some(p) = &r.pull {
        out.push_str("pull: ");
        out.push_str(&render(p, ctx));
    }
    if let Some(p) = &r.push {
        out.push_str("push: ");
        out.push_str(&projection::render(p, ctx));
    }
    for f in &r.refusals {
        out.push_str(&format!(
            "{} refused [{}]: {}\nnext: {}\n",
            f.subject, f.policy, f.reason, f.next
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reopen_that_counts_is_the_last_after_the_last_close_and_after_done() {
        let ev = |id: u64, kind: &str, at: &str| serde_json::json!({"id": id, "event": kind, "created_at": at});
        let events = vec![
            ev(1, "reopened", "2026-03-01T00:00:00Z"),
            ev(2, "closed", "2026-03-02T00:00:00Z"),
            ev(3, "labeled", "2026-03-03T00:00:00Z"),
            ev(4, "reopened", "2026-03-04T00:00:00Z"),
        ];
        let since = |s: &str| s.parse::<jiff::Timestamp>().ok();
        let id = |v: Option<&Value>| v.and_then(|v| u64_at(v, &["id"]));
        assert_eq!(id(human_reopen(&events, None)), Some(4));
        assert_eq!(
            id(human_reopen(&events, since("2026-03-03T00:00:00Z"))),
            Some(4)
        );
        assert_eq!(
            id(human_reopen(&events, since("2026-03-05T00:00:00Z"))),
            None,
            "the task became done after the reopen"
        );
        assert_eq!(id(human_reopen(&events[..2], None)), None, "closed now");
        assert_eq!(id(human_reopen(&events[..1], None)), None, "never closed");
    }

    #[test]
    fn markers_of_this_workspace_only() {
        let body = "<!-- dacli:t-01KJ ws:01WS -->\n## Acceptance\n";
        assert_eq!(marked_id(body, "01WS"), Some("t-01KJ"));
        assert_eq!(marked_id(body, "01OTHER"), None);
        assert_eq!(marked_id("no marker", "01WS"), None);
        assert!(written_by_dacli(body));
        assert!(written_by_dacli("<!-- dacli-train:release:abc ws:1 -->"));
        assert!(!written_by_dacli("looks good to me"));
    }
}
