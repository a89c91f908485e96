//! From validated tool arguments to the request of the command the tool wraps: the same
//! request type the CLI fills from argv, with the tool's defaults passed explicitly. Field
//! names are the commands' long flags in snake_case; where a Tier-1 field differs (`blocks`
//! for `--no-block`, `close_as` for `--allow-unverified`/`--abandon` ...) it is mapped here.
//! Rules the portable schemas leave out (formats, and rules across fields: exactly one of
//! two fields, a field another one's value requires) are checked here, before anything runs,
//! and fail as `E_SCHEMA` naming the fields; the property descriptions state them.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::{Map, Value, json};

use super::schema::{Invalid, name, what};

/// Items a `status` section lists per page unless `limit` says otherwise.
pub(super) const STATUS_PAGE: usize = 20;

/// The command to run and its JSON request.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    pub command: &'static str,
    pub request: Value,
}

type Args = Map<String, Value>;

/// Builds the request for `tool` from arguments that passed its schema.
pub fn build(tool: &str, args: &Args) -> Result<Built, Invalid> {
    formats(args)?;
    across_fields(tool, args)?;
    let mut req = Map::new();
    let command = match tool {
        "whoami" => "whoami",
        "status" => {
            status(args, &mut req)?;
            "status"
        }
        "get_context" => {
            copy(args, &mut req, &["ref", "budget"]);
            req.insert("format".into(), or(args, "format", json!("markdown")));
            "context"
        }
        "add_task" => {
            copy(
                args,
                &mut req,
                &[
                    "title",
                    "project",
                    "so_that",
                    "context",
                    "accept",
                    "parent",
                    "traces",
                    "allow_duplicate",
                ],
            );
            req.insert("priority".into(), or(args, "priority", json!("should")));
            "task.add"
        }
        "list_tasks" => {
            copy(
                args,
                &mut req,
                &["project", "status", "all", "mine", "ready", "cursor"],
            );
            req.insert("limit".into(), or(args, "limit", json!(50)));
            "task.list"
        }
        "claim_task" => {
            copy(args, &mut req, &["ref"]);
            "task.claim"
        }
        "check_task" => {
            copy(
                args,
                &mut req,
                &["ref", "items", "all", "verify", "evidence"],
            );
            req.insert("timeout".into(), json!(600));
            "task.check"
        }
        "finish_task" => {
            copy(args, &mut req, &["ref", "summary", "reason"]);
            match args.get("close_as").and_then(Value::as_str) {
                Some("unverified") => req.insert("allow_unverified".into(), json!(true)),
                Some(_) => req.insert("abandon".into(), json!(true)),
                None => None,
            };
            "task.done"
        }
        "block_task" => {
            copy(args, &mut req, &["ref", "reason", "on"]);
            "task.block"
        }
        "add_note" => {
            note_fields_fit_kind(args)?;
            copy(
                args,
                &mut req,
                &[
                    "kind",
                    "title",
                    "body",
                    "project",
                    "about",
                    "scope",
                    "severity",
                    "chose",
                    "rejected",
                    "because",
                    "goal",
                    "question",
                    "metric",
                    "supersedes",
                ],
            );
            "note.add"
        }
        "ask" => {
            copy(args, &mut req, &["ref", "question", "to", "need"]);
            let blocks = args.get("blocks").and_then(Value::as_bool).unwrap_or(true);
            req.insert("no_block".into(), json!(!blocks));
            "ask"
        }
        "answer" => {
            copy(
                args,
                &mut req,
                &["question", "text", "chose", "rejected", "because"],
            );
            req.insert("as".into(), or(args, "as", json!("finding")));
            "answer"
        }
        "run_shortcut" => {
            shortcut(args, &mut req)?;
            "run"
        }
        "queue_next" => {
            rename(args, &mut req, "queue", "slug");
            "queue.next"
        }
        "queue_advance" => {
            rename(args, &mut req, "queue", "slug");
            copy(args, &mut req, &["key"]);
            match args.get("outcome").and_then(Value::as_str) {
                Some("failed") => rename(args, &mut req, "reason", "fail"),
                Some("dead") => rename(args, &mut req, "reason", "dead"),
                _ => no_reason(args, "an outcome of `failed` or `dead`")?,
            }
            "queue.advance"
        }
        "cleanup_repository" => {
            copy(args, &mut req, &["project"]);
            apply(args, &mut req)?;
            "repo.cleanup"
        }
        "reconcile_delivery" => {
            rename(args, &mut req, "tasks", "task");
            copy(args, &mut req, &["project"]);
            apply(args, &mut req)?;
            "delivery.reconcile"
        }
        "reconcile_event_journal" => journal(args, &mut req)?,
        "diagnose_pr" => {
            if let Some(target) = args.get("target").and_then(Value::as_object) {
                copy(target, &mut req, &["task", "pr", "branch", "sha"]);
            }
            copy(args, &mut req, &["repo", "record"]);
            "pr.diagnose"
        }
        "release_train" => train(args, &mut req)?,
        "github_projection" => {
            copy(args, &mut req, &["project", "refs"]);
            apply(args, &mut req)?;
            "github.projection"
        }
        other => {
            return Err(Invalid {
                field: String::new(),
                message: format!("`{other}` has no request builder"),
            });
        }
    };
    Ok(Built {
        command,
        request: Value::Object(req),
    })
}

/// A slug (FORMAT §2).
const SLUG: &str = "^[a-z0-9][a-z0-9-]{0,63}$";
/// A project: a slug, or `p-<slug>`.
const PROJECT: &str = "^(p-)?[a-z0-9][a-z0-9-]{0,63}$";
const DIGEST: &str = "^sha256:[0-9a-f]{64}$";
const SHA: &str = "^[0-9a-f]{40}$";
const REPO: &str = "^[^/]+/[^/]+$";

/// The form of each field that has one, by name (a name means the same thing in every tool),
/// with how a message states it.
const FORMATS: [(&str, &str, &str); 6] = [
    ("project", PROJECT, "a slug or p-<slug>"),
    ("queue", SLUG, "a queue slug"),
    (
        "expect_digest",
        DIGEST,
        "sha256:<64 hex>, the preview's plan_digest",
    ),
    ("sha", SHA, "a full commit sha (40 hex)"),
    ("repo", REPO, "owner/name"),
    ("target.sha", SHA, "a full commit sha (40 hex)"),
];

fn format_regexes() -> &'static [Regex] {
    static COMPILED: OnceLock<Vec<Regex>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        FORMATS
            .iter()
            .filter_map(|(_, re, _)| Regex::new(re).ok())
            .collect()
    })
}

fn formats(args: &Args) -> Result<(), Invalid> {
    for ((field, _, form), re) in FORMATS.iter().zip(format_regexes()) {
        let value = match field.split_once('.') {
            Some((outer, inner)) => args.get(outer).and_then(|o| o.get(inner)),
            None => args.get(*field),
        };
        if let Some(Value::String(text)) = value
            && !re.is_match(text)
        {
            return Err(schema_error(
                field,
                format!("{} must be {form}", name(field)),
            ));
        }
    }
    Ok(())
}

/// "give `a` or `b`" when neither is given, "give only one of `a` or `b`" when both are.
fn exactly_one(args: &Args, a: &str, b: &str) -> Result<(), Invalid> {
    match (args.contains_key(a), args.contains_key(b)) {
        (false, false) => Err(schema_error("", format!("give `{a}` or `{b}`"))),
        (true, true) => Err(schema_error(b, format!("give only one of `{a}` or `{b}`"))),
        _ => Ok(()),
    }
}

/// `field`, when given, must be `true` (a flag that is either set or left out).
fn only_true(args: &Args, field: &str) -> Result<(), Invalid> {
    match args.get(field) {
        Some(Value::Bool(false)) => Err(schema_error(
            field,
            format!("`{field}` takes only true; leave it out instead"),
        )),
        _ => Ok(()),
    }
}

/// `needed` is required when `field` holds one of `values` (any value when `values` is empty).
fn required_when(args: &Args, field: &str, values: &[&str], needed: &str) -> Result<(), Invalid> {
    let Some(v) = args.get(field) else {
        return Ok(());
    };
    let hit = values.is_empty() || v.as_str().is_some_and(|s| values.contains(&s));
    if !hit || args.contains_key(needed) {
        return Ok(());
    }
    let when = match values {
        [] => format!("`{field}` is given"),
        _ => {
            let v: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
            format!("`{field}` is {}", v.join(" or "))
        }
    };
    Err(schema_error(
        needed,
        format!("`{needed}` is required when {when}"),
    ))
}

/// The rules across fields of each tool.
fn across_fields(tool: &str, args: &Args) -> Result<(), Invalid> {
    match tool {
        "check_task" => {
            only_true(args, "all")?;
            exactly_one(args, "items", "all")
        }
        "finish_task" => required_when(args, "close_as", &[], "reason"),
        "queue_advance" => required_when(args, "outcome", &["failed", "dead"], "reason"),
        "run_shortcut" => {
            only_true(args, "list")?;
            exactly_one(args, "name", "list")?;
            if let Some(Value::Object(params)) = args.get("params")
                && let Some((k, v)) = params.iter().find(|(_, v)| !v.is_string())
            {
                let field = format!("params.{k}");
                return Err(schema_error(
                    &field,
                    format!("{} must be a string, not {}", name(&field), what(v)),
                ));
            }
            Ok(())
        }
        "cleanup_repository" | "github_projection" => {
            required_when(args, "mode", &["apply"], "expect_digest")
        }
        "reconcile_delivery" => {
            exactly_one(args, "tasks", "project")?;
            required_when(args, "mode", &["apply"], "expect_digest")
        }
        "reconcile_event_journal" => {
            required_when(args, "operation", &["archive"], "before")?;
            required_when(args, "operation", &["restore"], "segment_id")?;
            required_when(args, "mode", &["apply"], "expect_digest")
        }
        "release_train" => {
            required_when(args, "action", &["resume", "land"], "train_id")?;
            required_when(args, "mode", &["apply"], "expect_digest")
        }
        "diagnose_pr" => {
            let Some(Value::Object(target)) = args.get("target") else {
                return Ok(());
            };
            const FORMS: [&str; 4] = ["task", "pr", "branch", "sha"];
            if let Some(k) = target.keys().find(|k| !FORMS.contains(&k.as_str())) {
                let field = format!("target.{k}");
                return Err(schema_error(
                    &field,
                    format!("{} is not a parameter here", name(&field)),
                ));
            }
            if target.len() != 1 {
                return Err(schema_error(
                    "target",
                    "give exactly one of `target.task`, `target.pr`, `target.branch` or `target.sha`",
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn copy(args: &Args, req: &mut Args, fields: &[&str]) {
    for f in fields {
        if let Some(v) = args.get(*f) {
            req.insert((*f).into(), v.clone());
        }
    }
}

fn rename(args: &Args, req: &mut Args, from: &str, to: &str) {
    if let Some(v) = args.get(from) {
        req.insert(to.into(), v.clone());
    }
}

fn or(args: &Args, field: &str, default: Value) -> Value {
    args.get(field).cloned().unwrap_or(default)
}

fn schema_error(field: &str, message: impl Into<String>) -> Invalid {
    Invalid {
        field: field.into(),
        message: message.into(),
    }
}

fn no_reason(args: &Args, what: &str) -> Result<(), Invalid> {
    if args.contains_key("reason") {
        return Err(schema_error(
            "reason",
            format!("`reason` is only taken with {what}"),
        ));
    }
    Ok(())
}

/// The section fields of another kind are refused, never dropped (`note add` rejects them).
fn note_fields_fit_kind(args: &Args) -> Result<(), Invalid> {
    let kind = args.get("kind").and_then(Value::as_str).unwrap_or_default();
    let owners: [(&str, &[&str]); 3] = [
        ("decision", &["chose", "rejected", "because"]),
        ("metric", &["goal", "question", "metric"]),
        ("finding", &["severity"]),
    ];
    for (owner, fields) in owners {
        if owner == kind {
            continue;
        }
        if let Some(f) = fields.iter().find(|f| args.contains_key(**f)) {
            return Err(schema_error(
                f,
                format!("`{f}` belongs to a {owner}, not to a {kind}"),
            ));
        }
    }
    Ok(())
}

/// The sections `status` lists in full on request (`detail`), each paged by `limit`.
pub(super) struct StatusPage {
    pub sections: Vec<String>,
    pub limit: usize,
    /// Where the one section asked for resumes: a task id for `active`, else an offset.
    pub cursor: Option<String>,
}

impl StatusPage {
    pub fn of(args: &Args) -> StatusPage {
        StatusPage {
            sections: args
                .get("detail")
                .and_then(Value::as_array)
                .map(|d| {
                    d.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            limit: args
                .get("limit")
                .and_then(Value::as_u64)
                .map_or(STATUS_PAGE, |n| n as usize),
            cursor: args
                .get("cursor")
                .and_then(Value::as_str)
                .map(str::to_string),
        }
    }

    pub fn has(&self, section: &str) -> bool {
        self.sections.iter().any(|s| s == section)
    }

    /// The offset a non-`active` section starts at.
    pub fn offset(&self) -> usize {
        self.cursor
            .as_deref()
            .and_then(|c| c.parse().ok())
            .unwrap_or(0)
    }
}

/// By default the command reads only what the summary shows: the caller's own work
/// (`mine`), no recent events, no active list. A `detail` section reads its page.
fn status(args: &Args, req: &mut Args) -> Result<(), Invalid> {
    copy(args, req, &["project"]);
    let page = StatusPage::of(args);
    if page.cursor.is_some() && page.sections.len() != 1 {
        return Err(schema_error(
            "cursor",
            "`cursor` pages one section: give exactly one `detail` section with it",
        ));
    }
    // The active list pages by task id (`t-<ULID>`), the others by position.
    let well_formed = |c: &str| {
        if page.has("active") {
            c.strip_prefix("t-").is_some_and(|u| {
                u.len() == 26
                    && u.bytes()
                        .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
            })
        } else {
            c.parse::<usize>().is_ok()
        }
    };
    if let Some(c) = &page.cursor
        && !well_formed(c)
    {
        return Err(schema_error(
            "cursor",
            "`cursor` must be the `next_cursor` this section returned",
        ));
    }
    if page.sections.is_empty() {
        req.insert("recent".into(), json!(0));
        req.insert("mine".into(), json!(true));
        return Ok(());
    }
    // One more than the page, to know whether another follows.
    let recent = if page.has("recent") {
        page.offset() + page.limit + 1
    } else {
        0
    };
    req.insert("recent".into(), json!(recent));
    if page.has("active") {
        req.insert("active_limit".into(), json!(page.limit + 1));
        if let Some(c) = &page.cursor {
            req.insert("after".into(), json!(c));
        }
    } else {
        // 0 would list every active task; one is the least the command reads.
        req.insert("active_limit".into(), json!(1));
    }
    Ok(())
}

fn shortcut(args: &Args, req: &mut Args) -> Result<(), Invalid> {
    if args.contains_key("list") {
        if let Some(f) = ["params", "task", "dry_run", "confirmed"]
            .iter()
            .find(|f| args.contains_key(**f))
        {
            return Err(schema_error(f, format!("`{f}` is not taken with `list`")));
        }
        copy(args, req, &["list", "all"]);
        return Ok(());
    }
    if args.contains_key("all") {
        return Err(schema_error("all", "`all` is only taken with `list`"));
    }
    copy(args, req, &["name", "task", "dry_run", "confirmed"]);
    let params: Vec<Value> = args
        .get("params")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .map(|(k, v)| json!(format!("{k}={}", v.as_str().unwrap_or_default())))
                .collect()
        })
        .unwrap_or_default();
    if let Some(bad) = args
        .get("params")
        .and_then(Value::as_object)
        .and_then(|p| p.keys().find(|k| k.is_empty() || k.contains('=')))
    {
        return Err(schema_error(
            "params",
            format!("parameter name `{bad}` must be non-empty and contain no `=`"),
        ));
    }
    req.insert("param".into(), Value::Array(params));
    req.insert("timeout".into(), json!(1800));
    Ok(())
}

/// `mode: apply` becomes `--apply --digest`; a digest without apply is refused, not ignored.
fn apply(args: &Args, req: &mut Args) -> Result<(), Invalid> {
    let applying = args.get("mode").and_then(Value::as_str) == Some("apply");
    if applying {
        req.insert("apply".into(), json!(true));
        rename(args, req, "expect_digest", "digest");
    } else if args.contains_key("expect_digest") {
        return Err(schema_error(
            "expect_digest",
            "`expect_digest` is only taken with `mode: apply`",
        ));
    }
    rename(args, req, "txn_id", "txn");
    Ok(())
}

fn journal(args: &Args, req: &mut Args) -> Result<&'static str, Invalid> {
    let op = args
        .get("operation")
        .and_then(Value::as_str)
        .unwrap_or("scan");
    let command = match op {
        "scan" => {
            if args.contains_key("mode") || args.contains_key("expect_digest") {
                return Err(schema_error("mode", "`scan` only reads; it has no apply"));
            }
            return Ok("events.scan");
        }
        "reconcile" => "events.reconcile",
        "archive" => {
            copy(args, req, &["before"]);
            "events.archive"
        }
        _ => {
            rename(args, req, "segment_id", "segment");
            "events.restore"
        }
    };
    apply(args, req)?;
    Ok(command)
}

fn train(args: &Args, req: &mut Args) -> Result<&'static str, Invalid> {
    let action = args
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or("status");
    let has = |f: &str| args.contains_key(f);
    let missing = |fields: &[&str]| fields.iter().find(|f| !has(f)).map(|f| f.to_string());
    let command = match action {
        "plan" => {
            if let Some(f) = missing(&["project", "source", "target"]) {
                return Err(schema_error(
                    &f,
                    format!("`{f}` is required when `action` is `plan`"),
                ));
            }
            copy(args, req, &["project", "source", "target", "sha"]);
            return Ok("release-train.plan");
        }
        "open_pr" => {
            if !has("train_id")
                && let Some(f) = missing(&["project", "source", "target", "sha"])
            {
                return Err(schema_error(
                    &f,
                    "when `action` is `open_pr`, give `train_id`, or `project`, `source`, `target` and `sha`",
                ));
            }
            "release-train.open"
        }
        "resume" => "release-train.resume",
        "land" => "release-train.land",
        _ => "release-train.status",
    };
    rename(args, req, "train_id", "train");
    if command == "release-train.open" {
        copy(args, req, &["project", "source", "target", "sha"]);
    } else if let Some(f) = ["project", "source", "target", "sha"]
        .iter()
        .find(|f| has(f))
    {
        // A train named by `train_id` carries its own project, branches and commit.
        return Err(schema_error(
            f,
            format!("`{f}` is not taken with `{action}`; the train names it"),
        ));
    }
    if matches!(command, "release-train.open" | "release-train.land") {
        apply(args, req)?;
    } else if has("mode") || has("expect_digest") {
        return Err(schema_error(
            "mode",
            format!("`{action}` has no apply step"),
        ));
    }
    Ok(command)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built(tool: &str, args: Value) -> Built {
        build(tool, args.as_object().expect("object")).expect("builds")
    }

    #[test]
    fn defaults_are_passed_explicitly_and_fields_mapped() {
        assert_eq!(
            built("list_tasks", json!({"schema_version": 1, "ready": true})),
            Built {
                command: "task.list",
                request: json!({"ready": true, "limit": 50})
            }
        );
        assert_eq!(
            built("ask", json!({"ref": "t", "question": "q", "blocks": false})).request,
            json!({"ref": "t", "question": "q", "no_block": true})
        );
        assert_eq!(
            built(
                "finish_task",
                json!({"ref": "t", "close_as": "unverified", "reason": "r"})
            )
            .request,
            json!({"ref": "t", "reason": "r", "allow_unverified": true})
        );
        assert_eq!(
            built(
                "queue_advance",
                json!({"queue": "q", "outcome": "dead", "reason": "r"})
            )
            .request,
            json!({"slug": "q", "dead": "r"})
        );
        assert_eq!(
            built(
                "run_shortcut",
                json!({"name": "test", "params": {"filter": "a b"}})
            )
            .request,
            json!({"name": "test", "param": ["filter=a b"], "timeout": 1800})
        );
    }

    fn refused(tool: &str, args: Value) -> Invalid {
        build(tool, args.as_object().expect("object")).expect_err("refused")
    }

    #[test]
    fn rules_across_fields_read_as_sentences_and_name_the_fields() {
        let e = refused("check_task", json!({"ref": "x"}));
        assert_eq!(e.message, "give `items` or `all`");
        let e = refused("check_task", json!({"ref": "x", "items": [1], "all": true}));
        assert_eq!(e.message, "give only one of `items` or `all`");
        let e = refused("check_task", json!({"ref": "x", "all": false}));
        assert_eq!(e.field, "all");
        let e = refused("finish_task", json!({"ref": "x", "close_as": "abandoned"}));
        assert_eq!(e.message, "`reason` is required when `close_as` is given");
        assert_eq!(e.field, "reason");
        let e = refused("queue_advance", json!({"queue": "q", "outcome": "dead"}));
        assert_eq!(
            e.message,
            "`reason` is required when `outcome` is `failed` or `dead`"
        );
        let e = refused(
            "reconcile_event_journal",
            json!({"operation": "scan", "mode": "apply"}),
        );
        assert_eq!(
            e.message,
            "`expect_digest` is required when `mode` is `apply`"
        );
        let e = refused("reconcile_event_journal", json!({"operation": "archive"}));
        assert_eq!(e.field, "before");
        let e = refused("release_train", json!({"action": "land"}));
        assert_eq!(
            e.message,
            "`train_id` is required when `action` is `resume` or `land`"
        );
        let e = refused("reconcile_delivery", json!({}));
        assert_eq!(e.message, "give `tasks` or `project`");
        let e = refused("run_shortcut", json!({"name": "t", "list": true}));
        assert_eq!(e.message, "give only one of `name` or `list`");
        let e = refused("run_shortcut", json!({"name": "t", "params": {"n": 3}}));
        assert_eq!(e.message, "`params.n` must be a string, not a number");
        assert!(
            build(
                "diagnose_pr",
                json!({"target": {"pr": 12}}).as_object().expect("o")
            )
            .is_ok()
        );
        let e = refused("diagnose_pr", json!({"target": {"pr": 12, "branch": "b"}}));
        assert_eq!(e.field, "target");
        let e = refused("diagnose_pr", json!({"target": {"tag": "v1"}}));
        assert_eq!(e.field, "target.tag");
    }

    #[test]
    fn formats_are_checked_by_field_name() {
        let e = refused("status", json!({"project": "Bad Slug"}));
        assert_eq!(e.field, "project");
        assert_eq!(e.message, "`project` must be a slug or p-<slug>");
        assert!(
            build(
                "status",
                json!({"project": "p-checkout"}).as_object().expect("o")
            )
            .is_ok()
        );
        let e = refused(
            "cleanup_repository",
            json!({"mode": "apply", "expect_digest": "sha256:xyz"}),
        );
        assert_eq!(e.field, "expect_digest");
        let e = refused("diagnose_pr", json!({"target": {"sha": "abc"}}));
        assert_eq!(e.field, "target.sha");
    }

    #[test]
    fn rules_beyond_the_schema_fail_as_schema_errors() {
        let args = json!({"kind": "ref", "title": "t", "severity": "major"});
        let e = build("add_note", args.as_object().expect("object")).expect_err("kind");
        assert_eq!(e.message, "`severity` belongs to a finding, not to a ref");
        let args = json!({"action": "plan", "project": "p"});
        let e = build("release_train", args.as_object().expect("object")).expect_err("plan");
        assert_eq!(e.field, "source");
        let args = json!({"mode": "preview", "expect_digest": "sha256:00"});
        assert!(build("cleanup_repository", args.as_object().expect("object")).is_err());
    }
}
