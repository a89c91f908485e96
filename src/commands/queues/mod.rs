//! queues: ordered steps an owner works through (COMMANDS.md §11). dacli serves the step at
//! the cursor and records each outcome; it never executes a step.

mod advance;

use serde::{Deserialize, Serialize};
use toml_edit::{DocumentMut, value};

use crate::dispatch::text::table;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Mcp, Outcome};
use crate::model::queue::{Halted, Queue, render_steps};
use crate::model::toml_time;
use crate::objects::queues;
use crate::ops::{self, Decided};
use crate::policy::queue::halted_refusal;
use crate::store::Document;
use crate::workspace::names::check_slug;

pub(super) fn commands() -> Vec<Command> {
    vec![
        Command::new("queue.add", Class::Mutate, add, render_add),
        Command::new("queue.list", Class::Read, list, render_list),
        Command::new("queue.next", Class::Read, next, render_next).mcp(Mcp::Tier1("queue_next")),
        advance::advance_command(),
        advance::resume_command(),
        Command::new("queue.rm", Class::Mutate, rm, render_rm),
    ]
}

/// Loads a queue named on the command line, with a hint when there is none.
fn load(ctx: &Ctx, slug: &str) -> Result<queues::Located, Error> {
    queues::load(ctx.ws()?, slug)
        .map_err(|e| Error::from(e).hint("list queues with `dacli queue list`"))
}

/// A step as output shows it: 1-based number and text.
#[derive(Debug, Clone, Serialize)]
struct Step {
    n: u64,
    text: String,
}

fn step_at(q: &Queue) -> Option<Step> {
    q.current().map(|(n, text)| Step {
        n,
        text: text.to_string(),
    })
}

/// The `queue` object of `queue add`.
#[derive(Debug, Serialize)]
struct QueueView {
    id: String,
    title: String,
    owner: String,
    cursor: u64,
    steps: usize,
    halted: Option<Halted>,
}

impl QueueView {
    fn of(q: &Queue) -> QueueView {
        QueueView {
            id: q.id.clone(),
            title: q.title.clone(),
            owner: q.owner.clone(),
            cursor: q.cursor,
            steps: q.steps.len(),
            halted: q.halted.clone(),
        }
    }
}

/// Create a queue of steps (`--step`, repeatable, in order). You own it: only you advance it.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddRequest {
    /// The queue's slug (its id is `q-<slug>`).
    slug: String,
    /// A step, in order (repeatable; at least one). Further lines continue the step.
    #[arg(long = "step", value_name = "TEXT", required = true)]
    #[serde(default)]
    steps: Vec<String>,
    /// The title (default: made from the slug).
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    title: Option<String>,
}

impl Classify for AddRequest {}

#[derive(Debug, Serialize)]
pub struct AddResponse {
    queue: QueueView,
    effect: &'static str,
    #[serde(skip)]
    path: String,
}

fn add(ctx: &Ctx, req: AddRequest) -> Result<Outcome<AddResponse>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    let slug = req.slug.strip_prefix("q-").unwrap_or(&req.slug);
    check_slug(slug).map_err(|m| Error::bad_slug(format!("SLUG: {m}")))?;
    if req.steps.is_empty() {
        return Err(Error::usage("a queue needs at least one --step"));
    }
    let mut steps = Vec::new();
    for (i, s) in req.steps.iter().enumerate() {
        let text = s.trim_end();
        if text.trim().is_empty() || text.contains('\0') {
            return Err(Error::usage(format!("--step {} is empty", i + 1)));
        }
        steps.push(text.trim_start_matches('\n').to_string());
    }
    let title = match &req.title {
        Some(t) if t.trim().is_empty() || t.contains('\n') => {
            return Err(Error::usage("--title must be one non-empty line"));
        }
        Some(t) => t.trim().to_string(),
        None => title_of(slug),
    };
    let mut front = DocumentMut::new();
    front["id"] = value(format!("q-{slug}"));
    front["kind"] = value("queue");
    front["created"] = value(toml_time(ctx.now()));
    front["created_by"] = value(me.as_str());
    front["owner"] = value(me.as_str());
    front["rev"] = value(ctx.new_ulid().to_string());
    front["cursor"] = value(0);
    let body = format!("# {title}\n\n## Steps\n{}", render_steps(&steps));
    let doc = Document::new(front, body);
    let queue = Queue::from_doc(&doc.front, &doc.body, slug)
        .map_err(|e| Error::internal(format!("dacli built an invalid queue: {e}")))?;
    if queue.steps != steps {
        return Err(Error::usage(
            "a --step would not read back as written (check its first line)",
        ));
    }
    let path = ops::queues::create(ws, slug, &doc)?;
    Ok(Outcome::Done(AddResponse {
        queue: QueueView::of(&queue),
        effect: "created",
        path: ws.display(&path),
    }))
}

/// `release-checks` → `Release checks`.
fn title_of(slug: &str) -> String {
    let words = slug.replace('-', " ");
    let mut chars = words.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => words,
    }
}

fn render_add(r: &AddResponse, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    format!(
        "created queue {} ({} steps)\n  {}\n",
        r.queue.id, r.queue.steps, r.path
    )
}

/// List the queues, with where each stands.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListRequest {}

impl Classify for ListRequest {}

#[derive(Debug, Serialize)]
pub struct ListResponse {
    queues: Vec<ListEntry>,
}

#[derive(Debug, Serialize)]
struct ListEntry {
    id: String,
    title: String,
    owner: String,
    cursor: u64,
    steps: usize,
    halted: Option<Halted>,
    complete: bool,
}

fn list(ctx: &Ctx, _req: ListRequest) -> Result<Outcome<ListResponse>, Error> {
    let listing = queues::list(ctx.ws()?)?;
    ctx.warn_all(listing.warnings);
    Ok(Outcome::Done(ListResponse {
        queues: listing
            .items
            .iter()
            .map(|l| ListEntry {
                id: l.queue.id.clone(),
                title: l.queue.title.clone(),
                owner: l.queue.owner.clone(),
                cursor: l.queue.cursor,
                steps: l.queue.steps.len(),
                halted: l.queue.halted.clone(),
                complete: l.queue.complete(),
            })
            .collect(),
    }))
}

fn render_list(r: &ListResponse, _ctx: &Ctx) -> String {
    if r.queues.is_empty() {
        return "no queues (add one with `dacli queue add`)\n".into();
    }
    let mut rows = vec![vec![
        "QUEUE".to_string(),
        "DONE".into(),
        "STATE".into(),
        "OWNER".into(),
        "TITLE".into(),
    ]];
    for q in &r.queues {
        let state = match (&q.halted, q.complete) {
            (Some(h), _) => format!("halted at step {}", h.step + 1),
            (None, true) => "complete".into(),
            (None, false) => format!("at step {}", q.cursor + 1),
        };
        rows.push(vec![
            q.id.clone(),
            format!("{}/{}", q.cursor, q.steps),
            state,
            q.owner.clone(),
            q.title.clone(),
        ]);
    }
    table(&rows, &[1])
}

/// Show the step at a queue's cursor. dacli never executes it; its owner advances the queue
/// with the outcome (`dacli queue advance`).
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NextRequest {
    /// The queue (slug or `q-<slug>`).
    #[arg(value_name = "SLUG")]
    slug: String,
}

impl Classify for NextRequest {}

#[derive(Debug, Serialize)]
pub struct NextResponse {
    queue: String,
    cursor: u64,
    steps: usize,
    step: Option<Step>,
    complete: bool,
}

fn next(ctx: &Ctx, req: NextRequest) -> Result<Outcome<NextResponse>, Error> {
    let q = load(ctx, &req.slug)?.queue;
    if let Some(r) = halted_refusal(&q) {
        return Ok(Outcome::Refused(r));
    }
    Ok(Outcome::Done(NextResponse {
        step: step_at(&q),
        complete: q.complete(),
        queue: q.id,
        cursor: q.cursor,
        steps: q.steps.len(),
    }))
}

fn render_next(r: &NextResponse, _ctx: &Ctx) -> String {
    match &r.step {
        None => format!("{}: all {} steps are done\n", r.queue, r.steps),
        Some(s) => {
            let mut out = format!("{} step {}/{}:\n", r.queue, s.n, r.steps);
            for line in s.text.lines() {
                out.push_str(&format!("  {line}\n"));
            }
            out
        }
    }
}

/// Delete a queue you own (its `advance` events stay in the log).
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RmRequest {
    /// The queue (slug or `q-<slug>`).
    #[arg(value_name = "SLUG")]
    slug: String,
}

impl Classify for RmRequest {}

#[derive(Debug, Serialize)]
pub struct RmResponse {
    queue: String,
    effect: &'static str,
}

fn rm(ctx: &Ctx, req: RmRequest) -> Result<Outcome<RmResponse>, Error> {
    let ws = ctx.ws()?;
    let slug = load(ctx, &req.slug)?.queue.slug;
    let me = &ctx.identity()?.agent.id;
    match ops::queues::remove(ws, me, &slug)? {
        Decided::Done(queue) => Ok(Outcome::Done(RmResponse {
            queue,
            effect: "applied",
        })),
        Decided::Refused(r) => Ok(Outcome::Refused(r)),
    }
}

fn render_rm(r: &RmResponse, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    format!("removed queue {} (its events stay)\n", r.queue)
}
