//! `ask`, `answer`, `threads`: questions that block work until someone answers them.

use serde::{Deserialize, Serialize};
use toml_edit::value;

use crate::dispatch::one_task::OneTask;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, ErrorKind, Mcp, Outcome, Refusal};
use crate::journal;
use crate::journal::index::{EventEntry, Events};
use crate::journal::snapshot::Snapshot;
use crate::model::format_time;
use crate::model::task::{Status, TaskRef};
use crate::model::taskdoc::one_line;
use crate::objects;
use crate::ops;

/// Ask a question about a task, a project (`p-<slug>`) or the `workspace`. A question about a
/// task blocks it (unless `--no-block`) for every reader at once, until it is answered.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AskRequest {
    /// A task reference, `p-<slug>` or `workspace`.
    #[serde(rename = "ref")]
    #[arg(value_name = "REF")]
    reference: String,
    /// The question.
    question: String,
    /// Route to a role, or `human`.
    #[arg(long, value_name = "ROLE|human")]
    #[serde(default)]
    to: Option<String>,
    /// The repository path you need help with.
    #[arg(long, value_name = "PATH")]
    #[serde(default)]
    need: Option<String>,
    /// Do not block the task while waiting.
    #[arg(long)]
    #[serde(default)]
    no_block: bool,
}

impl Classify for AskRequest {}

#[derive(Debug, Serialize)]
pub struct AskResponse {
    question: String,
    about: Option<TaskRef>,
    about_id: String,
    to: Option<String>,
    blocks: bool,
    effect: &'static str,
    /// `missing_edge` and `route_dead_end` when escalation could not follow `escalate_to`.
    notices: Vec<Notice>,
}

fn ask(ctx: &Ctx, req: AskRequest) -> Result<Outcome<AskResponse>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.clone();
    if req.question.trim().is_empty() {
        return Err(Error::usage("QUESTION must not be empty"));
    }
    if let Some(n) = &req.need {
        crate::workspace::names::check_repo_path(n)
            .map_err(|m| Error::new(ErrorKind::Usage, "E_PATH_ESCAPE", format!("--need: {m}")))?;
    }
    if let Some(to) = &req.to
        && to != "human"
    {
        objects::roles::load(ws, to)?;
    }
    // A question about one task needs that task, folded, not the whole workspace.
    let (about_id, one) = match req.reference.as_str() {
        "workspace" => ("workspace".to_string(), None),
        p if p.starts_with("p-") => {
            let slug = &p[2..];
            if !objects::projects::list(ws)?
                .items
                .iter()
                .any(|x| x.slug == slug)
            {
                return Err(Error::not_found(format!("no project `{slug}`")));
            }
            (p.to_string(), None)
        }
        r => {
            let one = OneTask::load(ctx, r)?;
            (one.task.task.id.clone(), Some(one))
        }
    };
    let task = one.as_ref().map(|o| &o.task);
    if let Some(t) = task
        && t.doc.status == Status::Done
    {
        let r = t.reference();
        return Ok(Outcome::Refused(Refusal::new(
            "task.is_done",
            format!("{r} is done; its questions are closed"),
            format!("{r} is done; request a reopen: `dacli task reopen {r} --reason \"…\"`."),
        )));
    }
    // Routing: --to; else the role whose scope most specifically covers --need; else the
    // caller's role's first escalation target; else none (the owner of REF).
    let by_need = match &req.need {
        Some(path) => {
            let roles = objects::roles::list(ws)?;
            ctx.warn_all(roles.warnings);
            let table: Vec<(String, Vec<String>, Vec<String>)> = roles
                .items
                .into_iter()
                .map(|r| (r.name, r.scope, r.out_of_scope))
                .collect();
            crate::policy::scope::route(&table, path).map(str::to_string)
        }
        None => None,
    };
    let mut notices = Vec::new();
    let to = match (&req.to, by_need) {
        (Some(t), _) => Some(t.clone()),
        (None, Some(role)) => Some(role),
        (None, None) => {
            let shown = task.map_or_else(|| about_id.clone(), |t| t.reference());
            escalate(ctx, me.role.as_deref(), &shown, &mut notices)?
        }
    };
    for n in &notices {
        ctx.notice(n.message.clone());
    }
    let blocks = task.is_some() && !req.no_block;
    let mut fields = Vec::new();
    if let Some(n) = &req.need {
        fields.push(("need", value(n.as_str())));
    }
    if let Some(t) = &to {
        fields.push(("to", value(t.as_str())));
    }
    fields.push(("blocks", value(blocks)));
    let blocks_own_task = task
        .filter(|t| blocks && t.doc.owner() == me.id)
        .map(|t| (t.project.as_str(), t.task.id.as_str()));
    let (ev, applied) = ops::collab::ask(
        ws,
        &me.id,
        ops::collab::Question {
            id: ctx.new_ulid(),
            about: &about_id,
            fields,
            body: format!("{}\n", req.question.trim_end()),
            blocks_own_task,
            rev: ctx.new_ulid(),
        },
    )?;
    // The owner's own blocking question moves the task at once.
    let effect = if applied { "applied" } else { "proposed" };
    Ok(Outcome::Done(AskResponse {
        question: ev.envelope.id,
        about: task.map(|t| t.task_ref_folded()),
        about_id,
        to,
        blocks,
        effect,
        notices,
    }))
}

/// A diagnostic that travels in the result (and is printed on stderr).
#[derive(Debug, Serialize)]
pub struct Notice {
    code: &'static str,
    message: String,
}

/// Routes along the caller's role's `escalate_to`: the first entry that is `human` or names
/// an existing role. An entry naming no role is a missing edge: it is skipped with a notice
/// naming the owning role and the edge. When no entry is usable the route dead-ends: the
/// notice says so, and the question goes to the owner of `about` (no `to`).
fn escalate(
    ctx: &Ctx,
    role: Option<&str>,
    about: &str,
    notices: &mut Vec<Notice>,
) -> Result<Option<String>, Error> {
    let ws = ctx.ws()?;
    let Some(name) = role.filter(|r| *r != "root") else {
        return Ok(None);
    };
    let role = match objects::roles::load(ws, name) {
        Ok(r) => r,
        Err(objects::Error::NotFound { .. }) => {
            notices.push(Notice {
                code: "route_dead_end",
                message: format!(
                    "your role {name} has no role file, so the question cannot escalate; it goes to the owner of {about} (add the role: `dacli role add {name} …`)"
                ),
            });
            return Ok(None);
        }
        Err(e) => return Err(e.into()),
    };
    let roles = objects::roles::list(ws)?;
    ctx.warn_all(roles.warnings);
    let known: Vec<String> = roles.items.into_iter().map(|r| r.name).collect();
    let mut missing = Vec::new();
    for to in &role.escalate_to {
        if to == "human" || known.contains(to) {
            return Ok(Some(to.clone()));
        }
        notices.push(Notice {
            code: "missing_edge",
            message: format!(
                "role {name} escalates to `{to}`, which is not a role: the edge {name} → {to} leads nowhere, so it was skipped (fix it: `dacli role edit {name} --escalate-to …`, or `dacli role add {to} …`)"
            ),
        });
        missing.push(to.as_str());
    }
    let why = if missing.is_empty() {
        "it has no `escalate_to` edge".to_string()
    } else {
        format!(
            "every edge of its `escalate_to` ({}) is missing",
            missing.join(", ")
        )
    };
    notices.push(Notice {
        code: "route_dead_end",
        message: format!(
            "the escalation route of role {name} dead-ends: {why}; the question goes to the owner of {about} (add an edge: `dacli role edit {name} --escalate-to human`)"
        ),
    });
    Ok(None)
}

fn render_ask(r: &AskResponse, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return format!("{}\n", r.question);
    }
    let about = r
        .about
        .as_ref()
        .map_or(r.about_id.clone(), |t| t.reference.clone());
    format!(
        "asked {} about {about}{}{}\nanswer with: dacli answer {} \"…\"\n",
        r.question,
        r.to.as_deref()
            .map(|t| format!(", routed to {t}"))
            .unwrap_or_default(),
        if r.blocks {
            "; the task is blocked until it is answered"
        } else {
            ""
        },
        &r.question[..8]
    )
}

/// Answer a question (its full id, or a unique prefix of at least 8 characters). The answer
/// unblocks the task it blocked and becomes a note (a finding by default, or a decision).
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    /// The question's event id or a unique prefix (≥ 8 characters).
    question: String,
    /// The answer.
    text: String,
    /// What the answer becomes.
    #[arg(long = "as", value_enum, default_value = "finding")]
    #[serde(default = "finding", rename = "as")]
    as_: AnswerAs,
    /// Title of the note (default: `Answer: <first line of the question>`).
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    title: Option<String>,
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    chose: Option<String>,
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    rejected: Option<String>,
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    because: Option<String>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AnswerAs {
    Finding,
    Decision,
    None,
}

fn finding() -> AnswerAs {
    AnswerAs::Finding
}

impl AnswerAs {
    fn as_str(self) -> &'static str {
        match self {
            AnswerAs::Finding => "finding",
            AnswerAs::Decision => "decision",
            AnswerAs::None => "none",
        }
    }
}

impl Classify for AnswerRequest {}

#[derive(Debug, Serialize)]
pub struct AnswerResponse {
    question: String,
    answer: String,
    about: Option<TaskRef>,
    unblocked: bool,
    note: Option<String>,
    effect: &'static str,
}

/// Finds a help event by full id or unique prefix of at least 8 characters, in the event
/// index (no event parsed).
fn find_question<'e>(events: &'e Events, input: &str) -> Result<&'e EventEntry, Error> {
    let want = input.trim().to_ascii_uppercase();
    let helps: Vec<&EventEntry> = events
        .entries
        .iter()
        .filter(|e| e.kind() == "help")
        .collect();
    if want.len() == 26
        && let Some(e) = helps.iter().find(|e| e.id() == want)
    {
        return Ok(e);
    }
    let matches: Vec<&&EventEntry> = helps.iter().filter(|e| e.id().starts_with(&want)).collect();
    let ambiguous = |cands: Vec<String>| {
        let mut err = Error::new(
            ErrorKind::Usage,
            "E_AMBIGUOUS",
            format!(
                "question `{input}` matches {} questions: {}",
                cands.len(),
                cands.join(", ")
            ),
        );
        for c in cands {
            err = err.hint(format!("use `{c}`"));
        }
        err
    };
    if want.len() < 8 {
        let cands: Vec<String> = matches.iter().map(|e| e.id().to_string()).collect();
        if cands.is_empty() {
            return Err(Error::not_found(format!(
                "no question starts with `{input}`"
            )));
        }
        return Err(ambiguous(cands).hint("give at least 8 characters of the question id"));
    }
    match matches.as_slice() {
        [one] => Ok(one),
        [] => Err(Error::not_found(format!("no question `{input}`"))
            .hint("list open questions with `dacli threads --open`")),
        many => Err(ambiguous(many.iter().map(|e| e.id().to_string()).collect())),
    }
}

/// The task a question is about, folded; `None` when it is about a project, the workspace
/// or a task that no longer exists.
fn about_task(ctx: &Ctx, about: &str) -> Result<Option<OneTask>, Error> {
    if !about.starts_with("t-") {
        return Ok(None);
    }
    match OneTask::load(ctx, about) {
        Ok(one) => Ok(Some(one)),
        Err(e) if e.kind == crate::dispatch::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn answer(ctx: &Ctx, req: AnswerRequest) -> Result<Outcome<AnswerResponse>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.clone();
    if req.text.trim().is_empty() {
        return Err(Error::usage("TEXT must not be empty"));
    }
    let events = journal::index::read(ws)?;
    ctx.warn_all(events.warnings.clone());
    let q = events.load(ws, find_question(&events, &req.question)?)?;
    let about = q.about.clone().unwrap_or_else(|| "workspace".into());
    let before = about_task(ctx, &about)?;
    let task = before.as_ref().map(|o| &o.task);
    if let Some(prev) = events
        .entries
        .iter()
        .find(|e| e.kind() == "answer" && e.question() == Some(q.id.as_str()))
    {
        let r = task.map_or(about.clone(), |t| t.reference());
        let note = if prev.answer_as() == Some("none") {
            "no note".to_string()
        } else {
            format!("note n-{}", prev.id())
        };
        return Ok(Outcome::Refused(Refusal::new(
            "question.answered",
            format!(
                "question {} was answered by {} ({note})",
                q.id,
                prev.created_by()
            ),
            format!(
                "Answered by {} ({note}); add to it with `dacli note add finding \"…\" --about {r}`.",
                prev.created_by()
            ),
        )));
    }
    let title = match &req.title {
        Some(t) => one_line(t).to_string(),
        None => format!("Answer: {}", one_line(&q.body)),
    };
    let body = match req.as_ {
        AnswerAs::Decision => {
            let (Some(chose), Some(rejected), Some(because)) =
                (&req.chose, &req.rejected, &req.because)
            else {
                let missing: Vec<&str> = [
                    ("--chose", &req.chose),
                    ("--rejected", &req.rejected),
                    ("--because", &req.because),
                ]
                .iter()
                .filter(|(_, v)| v.is_none())
                .map(|(f, _)| *f)
                .collect();
                return Ok(Outcome::Refused(Refusal::new(
                    "note.decision_incomplete",
                    format!(
                        "an answer as a decision needs --chose, --rejected and --because; missing {}",
                        missing.join(", ")
                    ),
                    "Add `--rejected`: what you considered and did not choose, and why; it is what makes the decision safe to revisit.",
                )));
            };
            format!(
                "# {title}\n\n{}\n\n## Chose\n{}\n\n## Rejected\n{}\n\n## Because\n{}\n",
                req.text.trim(),
                chose.trim(),
                rejected.trim(),
                because.trim()
            )
        }
        _ => format!("# {title}\n\n{}\n", req.text.trim()),
    };
    let mint = || ctx.new_ulid();
    // The owner of the question's object applies the answer at once.
    let (ev, applied) = ops::collab::answer(
        ws,
        &me.id,
        ops::collab::Answer {
            id: ctx.new_ulid(),
            about: &about,
            fields: vec![
                ("question", value(q.id.as_str())),
                ("as", value(req.as_.as_str())),
            ],
            body,
            task_owner: task.map(|t| t.doc.owner()),
        },
        &mint,
    )?;
    let effect = if applied { "applied" } else { "proposed" };
    let after = about_task(ctx, &about)?;
    let now = after.as_ref().map(|o| &o.task);
    let unblocked = match (task, now) {
        (Some(before), Some(now)) => {
            before.doc.status == Status::Blocked && now.doc.status != Status::Blocked
        }
        _ => false,
    };
    Ok(Outcome::Done(AnswerResponse {
        question: q.id.clone(),
        answer: ev.id.clone(),
        about: now.map(|t| t.task_ref_folded()),
        unblocked,
        note: (req.as_ != AnswerAs::None).then(|| format!("n-{}", ev.id)),
        effect,
    }))
}

fn render_answer(r: &AnswerResponse, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    format!(
        "answered {} (event {}){}{}\n",
        r.question,
        r.answer,
        if r.unblocked {
            "; the task is unblocked"
        } else {
            ""
        },
        r.note
            .as_deref()
            .map(|n| format!("; note {n}"))
            .unwrap_or_default()
    )
}

/// Questions and their answers: open ones first (oldest first), then answered (newest first).
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadsRequest {
    /// Only questions about this task, `p-<slug>` or `workspace`.
    #[arg(long, value_name = "REF")]
    #[serde(default)]
    about: Option<String>,
    /// Only open questions.
    #[arg(long)]
    #[serde(default)]
    open: bool,
    /// Only questions routed to this role (or `human`).
    #[arg(long, value_name = "ROLE")]
    #[serde(default)]
    to: Option<String>,
    /// Only questions you asked or that are routed to your role.
    #[arg(long)]
    #[serde(default)]
    mine: bool,
    #[arg(long, value_name = "N", default_value_t = 50)]
    #[serde(default = "fifty")]
    limit: usize,
}

fn fifty() -> usize {
    50
}

impl Classify for ThreadsRequest {}

#[derive(Debug, Serialize)]
pub struct AnswerView {
    event: String,
    by: String,
    #[serde(rename = "as")]
    as_: String,
    note: Option<String>,
    text: String,
    at: String,
}

#[derive(Debug, Serialize)]
pub struct Thread {
    question: String,
    about: Option<TaskRef>,
    about_id: Option<String>,
    asked_by: String,
    to: Option<String>,
    blocks: bool,
    state: &'static str,
    asked_at: String,
    text: String,
    answers: Vec<AnswerView>,
}

#[derive(Debug, Serialize)]
pub struct ThreadsResponse {
    threads: Vec<Thread>,
    open: usize,
    truncated: bool,
}

fn threads(ctx: &Ctx, req: ThreadsRequest) -> Result<Outcome<ThreadsResponse>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.clone();
    let snap = Snapshot::load(ws, &|f| crate::policy::dod::evaluate(f).passed)?;
    ctx.warn_all(snap.warnings.clone());
    let about = match req.about.as_deref() {
        None => None,
        Some(a) if a == "workspace" || a.starts_with("p-") => Some(a.to_string()),
        Some(r) => Some(snap.resolve_reported(r)?.id().to_string()),
    };
    let events = &snap.events;
    // Chosen, ordered and cut from the event index; only the questions shown, and their
    // answers, are read in full.
    let mut picked: Vec<(&EventEntry, bool)> = events
        .entries
        .iter()
        .filter(|e| e.kind() == "help")
        .filter(|e| about.as_ref().is_none_or(|a| e.about() == Some(a.as_str())))
        .filter(|e| req.to.as_ref().is_none_or(|t| e.to() == Some(t.as_str())))
        .filter(|e| {
            !req.mine
                || e.created_by() == me.id
                || (e.to().is_some() && e.to() == me.role.as_deref())
        })
        .map(|e| (e, answers_to(events, e.id()).next().is_none()))
        .filter(|(_, open)| !req.open || *open)
        .collect();
    let open = picked.iter().filter(|(_, open)| *open).count();
    picked.sort_by(|(a, a_open), (b, b_open)| match (a_open, b_open) {
        (true, true) => a.id().cmp(b.id()),
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        (false, false) => b.id().cmp(a.id()),
    });
    let truncated = picked.len() > req.limit;
    picked.truncate(req.limit);
    let mut list = Vec::new();
    for (entry, is_open) in picked {
        let e = events.load(ws, entry)?;
        let mut answers = Vec::new();
        for a in answers_to(events, entry.id()) {
            let a = events.load(ws, a)?;
            answers.push(AnswerView {
                event: a.id.clone(),
                by: a.created_by.clone(),
                as_: a.field_str("as").unwrap_or("finding").to_string(),
                note: (a.field_str("as") != Some("none")).then(|| format!("n-{}", a.id)),
                text: a.body.trim().to_string(),
                at: format_time(a.created),
            });
        }
        list.push(Thread {
            question: e.id.clone(),
            about: e
                .about
                .as_deref()
                .and_then(|a| snap.task(a))
                .map(|t| snap.task_ref(t)),
            about_id: e.about.clone(),
            asked_by: e.created_by.clone(),
            to: e.to.clone(),
            blocks: e.field_bool("blocks").unwrap_or(true),
            state: if is_open { "open" } else { "answered" },
            asked_at: format_time(e.created),
            text: e.body.trim().to_string(),
            answers,
        });
    }
    Ok(Outcome::Done(ThreadsResponse {
        threads: list,
        open,
        truncated,
    }))
}

/// The answers to question `q`, in log order.
fn answers_to<'a>(events: &'a Events, q: &'a str) -> impl Iterator<Item = &'a EventEntry> {
    events
        .entries
        .iter()
        .filter(move |a| a.kind() == "answer" && a.question() == Some(q))
}

fn render_threads(r: &ThreadsResponse, _ctx: &Ctx) -> String {
    if r.threads.is_empty() {
        return "no questions\n".into();
    }
    let mut out = String::new();
    for t in &r.threads {
        let about = t
            .about
            .as_ref()
            .map(|x| x.reference.clone())
            .or(t.about_id.clone())
            .unwrap_or_default();
        out.push_str(&format!(
            "{} [{}] about {about}{}\n{} wrote:\n",
            t.question,
            t.state,
            t.to.as_deref()
                .map(|x| format!(", to {x}"))
                .unwrap_or_default(),
            t.asked_by
        ));
        for l in t.text.lines() {
            out.push_str(&format!("    {l}\n"));
        }
        for a in &t.answers {
            out.push_str(&format!("  {} answered ({}):\n", a.by, a.as_));
            for l in a.text.lines() {
                out.push_str(&format!("    {l}\n"));
            }
        }
    }
    out
}

pub(super) fn commands() -> Vec<Command> {
    vec![
        Command::new("ask", Class::Append, ask, render_ask).mcp(Mcp::Tier1("ask")),
        Command::new("answer", Class::Append, answer, render_answer).mcp(Mcp::Tier1("answer")),
        Command::new("threads", Class::Read, threads, render_threads),
    ]
}
