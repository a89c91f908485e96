//! `events list | tail | show`: the event log, in ULID order, with each event's state.

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::journal::{self, EventState, Journal};
use crate::model::event::EventHead;
use crate::model::format_time;
use crate::model::id::parse_ulid;

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

fn view(journal: &Journal, e: &EventHead, tasks: &[crate::objects::tasks::Located]) -> EventView {
    let state = journal.state(e);
    let unresolved = state == EventState::Pending
        && e.about.as_deref().is_some_and(|a| {
            a.starts_with("t-") && crate::objects::tasks::by_id(tasks, a).is_none()
        });
    EventView {
        id: e.id.clone(),
        kind: e.kind.clone(),
        author: e.created_by.clone(),
        about: e.about.clone(),
        created: format_time(e.created),
        state: if unresolved {
            "unresolved"
        } else {
            state.as_str()
        },
        rejected: match state {
            EventState::Rejected(r) => Some(r),
            _ => None,
        },
        summary: e.summary(),
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

fn about_id(tasks: &[crate::objects::tasks::Located], about: &str) -> Result<String, Error> {
    if about == "workspace" || about.starts_with("p-") {
        return Ok(about.to_string());
    }
    Ok(crate::objects::tasks::resolve(tasks, about)?
        .task
        .id
        .clone())
}

fn list(ctx: &Ctx, req: ListRequest) -> Result<Outcome<ListResponse>, Error> {
    let ws = ctx.ws()?;
    let journal = journal::read(ws)?;
    ctx.warn_all(journal.warnings.clone());
    let tasks = crate::objects::tasks::list_all(ws)?;
    ctx.warn_all(tasks.warnings);
    let about = req
        .about
        .as_deref()
        .map(|a| about_id(&tasks.items, a))
        .transpose()?;
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
    let mut out: Vec<EventView> = journal
        .events
        .iter()
        .filter(|e| req.kind.is_empty() || req.kind.contains(&e.kind))
        .filter(|e| req.author.as_ref().is_none_or(|a| &e.created_by == a))
        .filter(|e| about.as_ref().is_none_or(|a| e.about.as_ref() == Some(a)))
        .filter(|e| since.is_none_or(|s| e.created >= s))
        .filter(|e| until.is_none_or(|u| e.created <= u))
        .map(|e| view(&journal, e, &tasks.items))
        .filter(|v| req.state.is_none_or(|s| v.state == s.as_str()))
        .collect();
    let truncated = out.len() > req.limit;
    out.truncate(req.limit);
    Ok(Outcome::Done(ListResponse {
        events: out,
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
    let journal = journal::read(ws)?;
    ctx.warn_all(journal.warnings.clone());
    let tasks = crate::objects::tasks::list_all(ws)?;
    ctx.warn_all(tasks.warnings);
    let about = req
        .about
        .as_deref()
        .map(|a| about_id(&tasks.items, a))
        .transpose()?;
    let matching: Vec<&EventHead> = journal
        .events
        .iter()
        .filter(|e| req.kind.is_empty() || req.kind.contains(&e.kind))
        .filter(|e| about.as_ref().is_none_or(|a| e.about.as_ref() == Some(a)))
        .collect();
    let skip = matching.len().saturating_sub(req.n);
    Ok(Outcome::Done(ListResponse {
        truncated: skip > 0,
        events: matching[skip..]
            .iter()
            .map(|e| view(&journal, e, &tasks.items))
            .collect(),
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
    let journal = journal::read(ws)?;
    let tasks = crate::objects::tasks::list_all(ws)?;
    let Some(e) = journal.get(&id) else {
        // A file with a bad checksum is not in the journal; say so instead of "not found".
        if let Some(w) = journal.warnings.iter().find(|w| w.path.contains(&id)) {
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
        event: view(&journal, e, &tasks.items),
        fields: serde_json::Value::Object(fields),
        body: e.body.clone(),
        receipt: journal.receipt_of(&id).map(str::to_string),
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
