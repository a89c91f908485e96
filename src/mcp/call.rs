//! `tools/call`: validate, build the command's request, run it through the table, map the
//! outcome to an MCP result (spec MCP.md §4), and record one usage line. Refusals are normal
//! results; failures are `isError` results; protocol errors are the caller's business.

use std::io::Write;

use serde_json::{Map, Value, json};

use super::requests;

mod escape;
use super::schema::{Invalid, Validator};
use crate::dispatch::tools::{self, SCHEMA_VERSION, Tool};
use crate::dispatch::usage::{UsageLine, UsageLog};
use crate::dispatch::{CallResult, Ctx, Error, ErrorKind, Input, Outcome, Table};
use crate::model::Refusal;

/// The long-lived state of one server process, shared by its call threads; each thread runs
/// calls with its own [`Ctx`].
pub struct Server<'t> {
    pub table: &'t Table,
    /// Shared by the call threads; a check takes microseconds.
    validator: std::sync::Mutex<Validator>,
    usage: UsageLog,
    /// The `tools/list` array, built once: identical for every connection and identity.
    listing: Value,
    /// The CLI grammar, for the `cli` tool.
    pub grammar: clap::Command,
}

/// A tool call's MCP result and how it ended, for the usage record.
pub struct Answer {
    pub result: Value,
    pub outcome: &'static str,
    /// For `cli`: the command words it ran.
    pub argv: Option<String>,
}

impl<'t> Server<'t> {
    pub fn new(table: &'t Table) -> Server<'t> {
        let listing = Value::Array(tools::registry().iter().map(Tool::listing).collect());
        Server {
            table,
            validator: std::sync::Mutex::new(Validator::new()),
            usage: UsageLog::new(),
            listing,
            grammar: table.clap_root(),
        }
    }

    /// Every tool, as `tools/list` serves them.
    pub fn listing(&self) -> &Value {
        &self.listing
    }

    /// Runs one call of a known tool. A panic anywhere inside becomes an `E_INTERNAL` result
    /// and the server keeps serving.
    pub fn call(&self, ctx: &Ctx, tool: &'static Tool, arguments: Option<&Value>) -> Value {
        let started = ctx.now();
        let guarded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if ctx.env().get("DACLI_TEST_PANIC") == Some(tool.name) {
                panic!("DACLI_TEST_PANIC asked for a panic in `{}`", tool.name);
            }
            self.answer(ctx, tool, arguments)
        }));
        let answer = guarded.unwrap_or_else(|_| Answer {
            result: failure(
                &Error::internal(format!("dacli hit a bug in the `{}` tool", tool.name))
                    .hint("please report it with the call you made; nothing was half-written"),
            ),
            outcome: "error",
            argv: None,
        });
        // Warnings and notices belong to the call that raised them.
        let _ = ctx.take_warnings();
        log_notices(ctx);
        self.record(ctx, tool, &answer, started);
        answer.result
    }

    fn answer(&self, ctx: &Ctx, tool: &'static Tool, arguments: Option<&Value>) -> Answer {
        let checked = match self.validator.lock() {
            Ok(validator) => check(&validator, tool, arguments),
            Err(_) => Err(Invalid {
                field: String::new(),
                message:
                    "the schema validator is unusable after an earlier failure; restart the server"
                        .into(),
            }),
        };
        let args = match checked {
            Ok(args) => args,
            Err(invalid) => return schema_failure(&invalid),
        };
        if carries_token(ctx, &args) {
            return schema_failure(&Invalid {
                field: String::new(),
                message: "an argument carries an agent token of this workspace (your DACLI_AGENT or another agent's): identity is bound when the server starts and is never a parameter".into(),
            });
        }
        if tool.name == "cli" {
            return escape::run(self, ctx, &args);
        }
        let built = match requests::build(tool.name, &args) {
            Ok(b) => b,
            Err(invalid) => return schema_failure(&invalid),
        };
        let Some(cmd) = self.table.get(built.command) else {
            return unmapped(tool, built.command);
        };
        let result = match ctx.recheck_identity() {
            Ok(Some(refusal)) => Ok(Outcome::Refused(refusal)),
            Ok(None) => self
                .table
                .call(ctx, cmd, Input::Json(built.request.clone())),
            Err(e) => Err(e),
        };
        let warnings = ctx.take_warnings();
        let (result, outcome) = match result {
            Ok(Outcome::Done(reply)) => {
                let mut content = vec![text(&shape(
                    tool.name,
                    &args,
                    &built.request,
                    reply.data.into_value(),
                ))];
                if let Some(w) = crate::dispatch::warning_list(&warnings) {
                    content.push(text(&json!({"warnings": w}).to_string()));
                }
                (json!({"content": content, "isError": false}), "done")
            }
            Ok(Outcome::Refused(r)) => (refused(&r), "refused"),
            Err(e) => (failure(&e), "error"),
        };
        Answer {
            result,
            outcome,
            argv: None,
        }
    }

    fn record(&self, ctx: &Ctx, tool: &Tool, answer: &Answer, started: jiff::Timestamp) {
        let now = ctx.now();
        let ms = now
            .duration_since(started)
            .as_millis()
            .clamp(0, i128::from(u64::MAX)) as u64;
        let line = UsageLine {
            at: crate::model::format_time(now),
            tool: tool.name.to_string(),
            argv: answer.argv.clone(),
            outcome: answer.outcome.to_string(),
            ms,
        };
        if let Err(e) = self.usage.record(ctx, &line) {
            eprintln!("dacli mcp serve: usage record not written: {}", e.message);
        }
    }
}

/// Whether any argument holds a token of this workspace: the one the server was launched with,
/// or any other agent's (a leaked token of another agent is just as secret). Results echo
/// arguments (a reference that matches nothing is quoted back), and results land in
/// transcripts: such a call is stopped before anything can repeat it.
fn carries_token(ctx: &Ctx, args: &Map<String, Value>) -> bool {
    let text = Value::Object(args.clone()).to_string();
    let own = ctx.env().get("DACLI_AGENT");
    if own.is_some_and(|t| !t.is_empty() && text.contains(t)) {
        return true;
    }
    match ctx.ws() {
        Ok(ws) => crate::dispatch::holds_workspace_token(ws, own, &text),
        Err(_) => false,
    }
}

fn log_notices(ctx: &Ctx) {
    let mut err = std::io::stderr().lock();
    for n in ctx.take_notices() {
        let _ = writeln!(err, "note: {n}");
    }
}

/// The argument object of a call, checked against the tool's schema: the version first,
/// then the rest. Nothing has run yet when this fails.
fn check(
    validator: &Validator,
    tool: &Tool,
    arguments: Option<&Value>,
) -> Result<Map<String, Value>, Invalid> {
    let args = match arguments {
        None => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => {
            return Err(Invalid {
                field: String::new(),
                message: "the arguments must be a JSON object".into(),
            });
        }
    };
    match args.get("schema_version") {
        None => {
            return Err(Invalid {
                field: "schema_version".into(),
                message: format!(
                    "`schema_version` is required: send {SCHEMA_VERSION}, the version tools/list advertises"
                ),
            });
        }
        Some(v) if v.as_u64() != Some(SCHEMA_VERSION) => {
            return Err(Invalid {
                field: "schema_version".into(),
                message: format!(
                    "`schema_version` must be the integer {SCHEMA_VERSION}: this server speaks input schema version {SCHEMA_VERSION} only"
                ),
            });
        }
        Some(_) => {}
    }
    validator.check_tool(tool, &Value::Object(args.clone()))?;
    Ok(args)
}

/// The text a successful call returns: the command's JSON `data`, compact; `get_context`'s
/// Markdown brief as the brief itself; `list_tasks` as a table and `status` summarized (spec
/// MCP.md §4: every byte of a result enters the agent's context).
fn shape(tool: &str, args: &Map<String, Value>, request: &Value, data: Value) -> String {
    match tool {
        "get_context" if request["format"] == "markdown" => match data.get("brief") {
            Some(Value::String(brief)) => brief.clone(),
            _ => data.to_string(),
        },
        "list_tasks" => compact_rows(data).to_string(),
        "status" => summarized_status(&requests::StatusPage::of(args), &data).to_string(),
        _ => data.to_string(),
    }
}

/// The caller's tasks and questions the default `status` names; the totals count them all.
const STATUS_MINE: usize = 5;
const STATUS_QUESTIONS: usize = 3;
/// Characters of a task title the default `status` shows.
const STATUS_TITLE: usize = 48;

/// `status` summarizes rather than enumerates (spec MCP.md §4): by default the task counts,
/// the caller's own unfinished tasks, the questions waiting for it and the pending events it
/// must apply, a few hundred tokens at any workspace size (at 10,000 tasks the command's
/// whole answer is 3k tokens and more). `detail` adds whole sections, a page each.
fn summarized_status(page: &requests::StatusPage, data: &Value) -> Value {
    let mut counts = Map::new();
    for p in data["projects"].as_array().into_iter().flatten() {
        for (status, n) in p["counts"].as_object().into_iter().flatten() {
            let sum =
                counts.get(status).and_then(Value::as_u64).unwrap_or(0) + n.as_u64().unwrap_or(0);
            counts.insert(status.clone(), json!(sum));
        }
    }
    let mut out = Map::new();
    out.insert("tasks".into(), Value::Object(counts));
    out.insert(
        "projects".into(),
        json!(data["projects"].as_array().map_or(0, Vec::len)),
    );
    if let Some(mine) = data.get("mine").filter(|m| m.is_object()) {
        let tasks: Vec<Value> = mine["tasks"]
            .as_array()
            .into_iter()
            .flatten()
            .take(STATUS_MINE)
            .map(|t| {
                json!([
                    t["ref"],
                    t["status"],
                    clipped(t["title"].as_str().unwrap_or_default())
                ])
            })
            .collect();
        let questions: Vec<&Value> = mine["questions"].as_array().into_iter().flatten().collect();
        out.insert(
            "you".into(),
            json!({
                "agent": mine["agent"],
                "tasks": tasks,
                "tasks_total": mine["total"],
                "questions": questions.iter().take(STATUS_QUESTIONS).collect::<Vec<_>>(),
                "questions_total": questions.len(),
                "pending_events": mine["pending_events"],
            }),
        );
    }
    out.insert("open_questions".into(), data["questions"]["open"].clone());
    out.insert("pending_events".into(), data["pending"]["events"].clone());
    out.insert(
        "finish_requests".into(),
        data["pending"]["finish_requests"].clone(),
    );
    if data["warnings"].as_u64().is_some_and(|n| n > 0) {
        out.insert("warnings".into(), data["warnings"].clone());
    }
    for section in &page.sections {
        out.insert(section.clone(), status_section(page, section, data));
    }
    if page.sections.is_empty() {
        out.insert(
            "more".into(),
            json!("detail: projects, active, questions, pending, recent"),
        );
    }
    Value::Object(out)
}

/// One `detail` section: a page of `items`, its `total` and, when more follow, the
/// `next_cursor` to pass back.
fn status_section(page: &requests::StatusPage, section: &str, data: &Value) -> Value {
    let limit = page.limit;
    let slice = |all: Vec<Value>, total: usize| {
        let from = page.offset().min(all.len());
        let items: Vec<Value> = all[from..].iter().take(limit).cloned().collect();
        let next = (from + items.len() < total).then(|| (from + items.len()).to_string());
        json!({"items": items, "total": total, "next_cursor": next})
    };
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    match section {
        "active" => {
            // The command read one more than the page after `cursor`: a full page means more.
            let all = list(&data["active"]);
            let more = all.len() > limit;
            let items: Vec<Value> = all
                .into_iter()
                .take(limit)
                .map(|a| {
                    json!({"id": a["task"]["id"], "ref": a["task"]["ref"], "title": a["task"]["title"],
                           "assignee": a["assignee"], "since": a["since"]})
                })
                .collect();
            let next = items.last().filter(|_| more).map(|a| a["id"].clone());
            json!({"items": items, "total": data["active_total"], "next_cursor": next})
        }
        "projects" => {
            let all = list(&data["projects"]);
            let total = all.len();
            slice(all, total)
        }
        "questions" => {
            let all = list(&data["questions"]["items"]);
            let total = all.len();
            slice(all, total)
        }
        "pending" => {
            let owners: Vec<Value> = data["pending"]["by_owner"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(owner, n)| json!([owner, n]))
                .collect();
            let total = owners.len();
            let mut page_of = slice(owners, total);
            page_of["oldest"] = data["pending"]["oldest"].clone();
            page_of
        }
        _ => {
            // `recent`: the command read `offset + limit + 1` events.
            let all = list(&data["recent"]);
            let total = match all.len() > page.offset() + limit {
                true => page.offset() + limit + 1,
                false => all.len(),
            };
            let mut page_of = slice(all, total);
            page_of.as_object_mut().map(|m| m.remove("total"));
            page_of
        }
    }
}

/// A title cut to [`STATUS_TITLE`] characters, marked with `…` when cut.
fn clipped(title: &str) -> String {
    match title.char_indices().nth(STATUS_TITLE) {
        Some((at, _)) => format!("{}…", &title[..at]),
        None => title.to_string(),
    }
}

/// The columns of a `list_tasks` row (spec MCP.md §4: id, display name, title, status,
/// priority, assignee; `TaskSummary` has no blocked-by count).
const ROW_COLUMNS: [&str; 6] = ["id", "ref", "title", "status", "priority", "assignee"];

/// `list_tasks` as a table: the column names once, then one array per task, so that the
/// default page of 50 rows fits QUALITY §2's 8 KB (named fields repeat 50 bytes a row).
fn compact_rows(mut data: Value) -> Value {
    if let Some(Value::Array(tasks)) = data.get_mut("tasks") {
        for t in tasks.iter_mut() {
            *t = Value::Array(
                ROW_COLUMNS
                    .iter()
                    .map(|key| t.get(*key).cloned().unwrap_or(Value::Null))
                    .collect(),
            );
        }
    }
    if let Value::Object(map) = &mut data {
        let mut shaped = Map::new();
        shaped.insert("columns".into(), json!(ROW_COLUMNS));
        shaped.extend(std::mem::take(map));
        *map = shaped;
    }
    data
}

pub fn text(s: &str) -> Value {
    json!({"type": "text", "text": s})
}

/// A refusal: a normal result, because refusals are answers (seed MCP.md §3).
pub fn refused(r: &Refusal) -> Value {
    let body = json!({"refused": {"policy": r.policy, "reason": r.reason, "next": r.next}});
    json!({"content": [text(&body.to_string())], "isError": false})
}

/// A failure: an `isError` result carrying the error as the CLI's JSON shows it.
pub fn failure(e: &Error) -> Value {
    let body = json!({"error": {"code": e.code, "message": e.message, "hints": e.hints}});
    json!({"content": [text(&body.to_string())], "isError": true})
}

fn schema_failure(invalid: &Invalid) -> Answer {
    let e = Error::new(ErrorKind::Usage, "E_SCHEMA", invalid.message.clone())
        .hint("the tool's input schema is in tools/list; nothing ran");
    Answer {
        result: failure(&e),
        outcome: "error",
        argv: None,
    }
}

/// A tool whose command is not in the table: a bug of this build (the registry and the
/// table are meant to agree, and a test checks that they do), never a user's mistake.
fn unmapped(tool: &Tool, command: &str) -> Answer {
    let e = Error::internal(format!(
        "`{}` maps to `{command}`, which the command table does not have",
        tool.name
    ));
    Answer {
        result: failure(&e),
        outcome: "error",
        argv: None,
    }
}

/// The outcome class of a call, for the usage record.
pub fn outcome_of(result: &CallResult) -> &'static str {
    match result {
        Ok(Outcome::Done(_)) => "done",
        Ok(Outcome::Refused(_)) => "refused",
        Err(_) => "error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(args: Value) -> requests::StatusPage {
        requests::StatusPage::of(args.as_object().expect("object"))
    }

    #[test]
    fn status_by_default_is_counts_and_the_callers_own_work() {
        let tasks: Vec<Value> = (0..8)
            .map(|n| json!({"ref": format!("p/{n:03}-x"), "title": "T".repeat(80), "status": "active"}))
            .collect();
        let data = json!({
            "projects": [{"counts": {"open": 2, "active": 1}}, {"counts": {"open": 1, "done": 4}}],
            "active": [], "active_total": 1,
            "questions": {"open": 6, "items": []},
            "pending": {"events": 3, "finish_requests": 1, "by_owner": {}, "oldest": null},
            "recent": [], "warnings": 0,
            "mine": {"agent": "a-1", "tasks": tasks, "total": 12,
                     "questions": ["q1", "q2", "q3", "q4"], "pending_events": 2}
        });
        let s = summarized_status(&page(json!({})), &data);
        assert_eq!(s["tasks"], json!({"open": 3, "active": 1, "done": 4}));
        assert_eq!(
            s["you"]["tasks"].as_array().expect("list").len(),
            STATUS_MINE
        );
        assert_eq!(s["you"]["tasks_total"], 12);
        assert_eq!(s["you"]["questions"], json!(["q1", "q2", "q3"]));
        assert_eq!(s["you"]["questions_total"], 4);
        let title = s["you"]["tasks"][0][2].as_str().expect("title");
        assert_eq!(title.chars().count(), STATUS_TITLE + 1);
        assert!(s.get("active").is_none() && s.get("recent").is_none());
    }

    #[test]
    fn a_detail_section_is_a_page_with_a_cursor_to_the_next() {
        let items: Vec<Value> = (0..5)
            .map(|n| json!({"question": format!("q{n}")}))
            .collect();
        let data = json!({"projects": [], "questions": {"open": 5, "items": items},
                          "pending": {}, "active": [], "recent": []});
        let s = summarized_status(&page(json!({"detail": ["questions"], "limit": 2})), &data);
        assert_eq!(
            s["questions"]["items"],
            json!([{"question": "q0"}, {"question": "q1"}])
        );
        assert_eq!(s["questions"]["next_cursor"], "2");
        let s = summarized_status(
            &page(json!({"detail": ["questions"], "limit": 2, "cursor": "4"})),
            &data,
        );
        assert_eq!(s["questions"]["items"], json!([{"question": "q4"}]));
        assert_eq!(s["questions"]["next_cursor"], Value::Null);
        let active: Vec<Value> = (0..3)
            .map(|n| json!({"task": {"id": format!("t{n}"), "ref": "r", "title": "x"}}))
            .collect();
        let data = json!({"projects": [], "active": active, "active_total": 9});
        let s = summarized_status(&page(json!({"detail": ["active"], "limit": 2})), &data);
        assert_eq!(s["active"]["items"].as_array().expect("items").len(), 2);
        assert_eq!(s["active"]["next_cursor"], "t1");
        assert_eq!(s["active"]["total"], 9);
    }

    #[test]
    fn task_rows_are_a_table_of_the_named_columns() {
        let data = json!({
            "tasks": [{"id": "t-1", "ref": "p/001-x", "title": "X", "status": "open",
                       "priority": "must", "assignee": null, "tags": ["dropped"]}],
            "total": 1,
            "truncated": false
        });
        let shaped = compact_rows(data);
        assert_eq!(shaped["columns"], json!(ROW_COLUMNS));
        assert_eq!(
            shaped["tasks"],
            json!([["t-1", "p/001-x", "X", "open", "must", null]])
        );
        assert_eq!(shaped["total"], 1);
    }
}
