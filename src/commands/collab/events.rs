//! `events list | tail | show`: the event log, in ULID order, with each event's state.

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use std::cell::OnceCell;
use std::collections::HashSet;

use crate::journal::index::{EventEntry, Events};
use crate::journal::{self, EventState};
use crate::model::event::EventHead;
use crate::model::format_time;
use crate::model::id::parse_ulid;
use crate::workspace::Workspace;

#[derive(Debug, Serialize)]
pub struct EventView {
    id: String,
    kind: String,
    author: String,
    about: Option<String>,
    created: String,
    state: &'static str,
    rejected: Option<String>,
    summary: String,
}

/// What a listing of the log reads: the index's entries with their states, and the ids of the
/// workspace's tasks (read only when a pending event's `about` must be checked against them).
struct Log<'w> {
    ws: &'w Workspace,
    events: Events,
    task_ids: OnceCell<HashSet<String>>,
}

impl<'w> Log<'w> {
    fn read(ctx: &Ctx, ws: &'w Workspace) -> Result<Log<'w>, Error> {
        let events = journal::index::read(ws)?;
        ctx.warn_all(events.warnings.iter().cloned());
        Ok(Log {
            ws,
            events,
            task_ids: OnceCell::new(),
        })
    }

    fn has_task(&self, id: &str) -> Result<bool, Error> {
        if self.task_ids.get().is_none() {
            let tasks = crate::objects::index::all_tasks(self.ws)?;
            let ids = tasks.items.iter().map(|t| t.id().to_string()).collect();
            let _ = self.task_ids.set(ids);
        }
        Ok(self.task_ids.get().is_some_and(|ids| ids.contains(id)))
    }

    /// The state a reader is shown: a pending event about a task that does not exist is
    /// `unresolved`.
    fn shown_state(&self, e: &EventEntry) -> Result<(&'static str, Option<String>), Error> {
        let state = self.events.state(e);
        let unresolved = state == EventState::Pending
            && match e.about() {
                Some(a) if a.starts_with("t-") => !self.has_task(a)?,
                _ => false,
            };
        Ok(match state {
            _ if unresolved => ("unresolved", None),
            EventState::Rejected(r) => ("rejected", Some(r)),
            other => (other.as_str(), None),
        })
    }

    /// The view of `e`; its summary comes from its file, verified against its checksum.
    fn view(&self, e: &EventEntry, head: &EventHead) -> Result<EventView, Error> {
        let (state, rejected) = self.shown_state(e)?;
        Ok(EventView {
            id: head.id.clone(),
            kind: head.kind.clone(),
            author: head.created_by.clone(),
            about: head.about.clone(),
            created: format_time(head.created),
            state,
            rejected,
            summary: head.summary(),
        })
    }

    /// The views of `entries`; an event whose file no longer verifies is a warning, not a row.
    fn views(&self, ctx: &Ctx, entries: &[&EventEntry]) -> Result<Vec<EventView>, Error> {
        let mut out = Vec::with_capacity(entries.len());
        for e in entries {
            match self.events.load(self.ws, e) {
                Ok(head) => out.push(self.view(e, &head)?),
                Err(crate::objects::Error::Store(crate::store::Error::Malformed(p))) => {
                    ctx.warn_all([p]);
                }
                // Archived since it was listed: it is no longer part of the live log.
                Err(gone) if gone.is_vanished() => {}
                Err(other) => return Err(other.into()),
            }
        }
        Ok(out)
    }

    /// `about` as the id events carry: a task reference resolves against the tasks.
    fn about_id(&self, about: &str) -> Result<String, Error> {
        if about == "workspace" || about.starts_with("p-") {
            return Ok(about.to_string());
        }
        let tasks = crate::objects::index::all_tasks(self.ws)?;
        Ok(crate::objects::tasks::resolve_keys(&tasks.items, about)?
            .id()
            .to_string())
    }
}

#[derive(Debug, Clone, Copy, clap::ValueEnum, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StateArg {
    Pending,
    Settled,
    Rejected,
    Journal,
    Unresolved,
}

impl StateArg {
    fn as_str(self) -> &'static str {
        match self {
            StateArg::Pending => "pending",
            StateArg::Settled => "settled",
            StateArg::Rejected => "rejected",
            StateArg::Journal => "journal",
            StateArg::Unresolved => "unresolved",
        }
    }
}

/// List events in ULID order, filtered.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListRequest {
    /// Only this kind (repeatable).
    #[arg(long = "kind", value_name = "KIND")]
    #[serde(default)]
    kind: Vec<String>,
    #[arg(long, value_name = "AGENT")]
    #[serde(default)]
    author: Option<String>,
    /// Only events about this task, `p-<slug>` or `workspace`.
    #[arg(long, value_name = "REF")]
    #[serde(default)]
    about: Option<String>,
    #[arg(long, value_enum)]
    #[serde(default)]
    state: Option<StateArg>,
    /// RFC 3339 time or a duration back from now (`90d`, `12h`, `30m`).
    #[arg(long, value_name = "TIME")]
    #[serde(default)]
    since: Option<String>,
    #[arg(long, value_name = "TIME")]
    #[serde(default)]
    until: Option<String>,
    #[arg(long, value_name = "N", default_value_t = 100)]
    #[serde(default = "hundred")]
    limit: usize,
}

fn hundred() -> usize {
    100
}

impl Classify for ListRequest {}

#[derive(Debug, Serialize)]
pub struct ListResponse {
    events: Vec<EventView>,
    truncated: bool,
}

/// Parses `<TIME>`: RFC 3339, or a duration back from now.
fn parse_time(ctx: &Ctx, flag: &str, s: &str) -> Result<jiff::Timestamp, Error> {
    crate::policy::plan::parse_time(s, ctx.now()).map_err(|m| Error::usage(format!("{flag}: {m}")))
}

fn list(ctx: &Ctx, req: ListRequest) -> Result<Outcome<ListResponse>, Error> {
    let ws = ctx.ws()?;
    let log = Log::read(ctx, ws)?;
    let about = req.about.as_deref().map(|a| log.about_id(a)).transpose()?;
    let since = req
        .since
        .as_deref()
        .map(|s| parse_time(ctx, "--since", s))
        .transpose()?;
    let until = req
        .until
        .as_deref()
        .map(|s| parse_time(ctx, "--until", s))
        .transpose()?;
    let created = |e: &EventEntry| e.created().parse::<jiff::Timestamp>().ok();
    let mut kept: Vec<&EventEntry> = Vec::new();
    let mut truncated = false;
    for e in &log.events.entries {
        let matches = (req.kind.is_empty() || req.kind.iter().any(|k| k == e.kind()))
            && req.author.as_ref().is_none_or(|a| e.created_by() == a)
            && about.as_ref().is_none_or(|a| e.about() == Some(a))
            && since.is_none_or(|s| created(e).is_some_and(|c| c >= s))
            && until.is_none_or(|u| created(e).is_some_and(|c| c <= u))
            && req
                .state
                .is_none_or(|s| log.shown_state(e).is_ok_and(|(st, _)| st == s.as_str()));
        if !matches {
            continue;
        }
        if kept.len() == req.limit {
            truncated = true;
            break;
        }
        kept.push(e);
    }
    Ok(Outcome::Done(ListResponse {
        events: log.views(ctx, &kept)?,
        truncated,
    }))
}

fn render_list(r: &ListResponse, _ctx: &Ctx) -> String {
    let mut out = String::new();
    for e in &r.events {
        out.push_str(&format!(
            "{}  {}  {:<14}  {}  {}  {}\n",
            e.created, e.id, e.kind, e.author, e.state, e.summary
        ));
    }
    if r.truncated {
        out.push_str("… more events; narrow with filters or raise --limit\n");
    }
    out
}

/// The last N events, in ULID order.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TailRequest {
    #[arg(short = 'n', value_name = "N", default_value_t = 20)]
    #[serde(default = "twenty")]
    n: usize,
    #[arg(long = "kind", value_name = "KIND")]
    #[serde(default)]
    kind: Vec<String>,
    #[arg(long, value_name = "REF")]
    #[serde(default)]
    about: Option<String>,
}

fn twenty() -> usize {
    20
}

impl Classify for TailRequest {}

fn tail(ctx: &Ctx, req: TailRequest) -> Result<Outcome<ListResponse>, Error> {
    let ws = ctx.ws()?;
    let log = Log::read(ctx, ws)?;
    let about = req.about.as_deref().map(|a| log.about_id(a)).transpose()?;
    let matching: Vec<&EventEntry> = log
        .events
        .entries
        .iter()
        .filter(|e| req.kind.is_empty() || req.kind.iter().any(|k| k == e.kind()))
        .filter(|e| about.as_ref().is_none_or(|a| e.about() == Some(a)))
        .collect();
    let skip = matching.len().saturating_sub(req.n);
    Ok(Outcome::Done(ListResponse {
        truncated: skip > 0,
        events: log.views(ctx, &matching[skip..])?,
    }))
}

/// One event: envelope, kind fields, body, the receipt that settled it, checksum status.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShowRequest {
    /// The event's full ULID.
    event: String,
}

impl Classify for ShowRequest {}

#[derive(Debug, Serialize)]
pub struct ShowResponse {
    #[serde(flatten)]
    event: EventView,
    fields: serde_json::Value,
    body: String,
    receipt: Option<String>,
    checksum_ok: bool,
    path: String,
}

fn show(ctx: &Ctx, req: ShowRequest) -> Result<Outcome<ShowResponse>, Error> {
    let ws = ctx.ws()?;
    let id = parse_ulid(&req.event)
        .ok_or_else(|| {
            Error::usage(format!(
                "`{}` is not an event id (a 26-character ULID)",
                req.event
            ))
        })?
        .to_string();
    let log = Log::read(ctx, ws)?;
    let entries = &log.events.entries;
    let found = entries
        .binary_search_by(|e| e.id().cmp(id.as_str()))
        .ok()
        .map(|at| &entries[at]);
    let Some(entry) = found else {
        // A file with a bad checksum is not in the journal; say so instead of "not found".
        if let Some(w) = log.events.warnings.iter().find(|w| w.path.contains(&id)) {
            return Err(Error::new(
                crate::dispatch::ErrorKind::Operational,
                "E_MALFORMED",
                format!(
                    "event {id} is not read: {} was rejected ({}: {})",
                    w.path, w.reason, w.detail
                ),
            ));
        }
        return Err(Error::not_found(format!("no event {id}")));
    };
    let e = &log.events.load(ws, entry)?;
    let skip = [
        "id",
        "kind",
        "event_kind",
        "created",
        "created_by",
        "about",
        "checksum",
    ];
    let mut fields = serde_json::Map::new();
    for (k, v) in e.front.iter() {
        if skip.contains(&k) {
            continue;
        }
        let text = format!("v = {}", v.to_string().trim());
        if let Ok(m) =
            toml_edit::de::from_str::<std::collections::BTreeMap<String, serde_json::Value>>(&text)
            && let Some(j) = m.get("v")
        {
            fields.insert(k.to_string(), j.clone());
        }
    }
    Ok(Outcome::Done(ShowResponse {
        event: log.view(entry, e)?,
        fields: serde_json::Value::Object(fields),
        body: e.body.clone(),
        receipt: log.events.receipt_of(&id).map(str::to_string),
        checksum_ok: e.front.get("checksum").is_some(),
        path: e.path.clone(),
    }))
}

fn render_show(r: &ShowResponse, _ctx: &Ctx) -> String {
    let e = &r.event;
    let mut out = format!(
        "{} {} by {} at {} ({})\n",
        e.id, e.kind, e.author, e.created, e.state
    );
    if let Some(a) = &e.about {
        out.push_str(&format!("about {a}\n"));
    }
    if let Some(rc) = &r.receipt {
        out.push_str(&format!("settled by receipt {rc}\n"));
    }
    if !r.body.trim().is_empty() {
        out.push_str(&format!("{} wrote:\n", e.author));
        for l in r.body.lines() {
            out.push_str(&format!("    {l}\n"));
        }
    }
    out
}

pub(super) fn commands() -> Vec<Command> {
    vec![
        Command::new("events.list", Class::Read, list, render_list),
        Command::new("events.tail", Class::Read, tail, render_list),
        Command::new("events.show", Class::Read, show, render_show),
    ]
}
