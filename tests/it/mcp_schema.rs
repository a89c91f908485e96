//! Schemas every model provider accepts, a `tools/list` within its context budget, and a
//! `status` answer that stays small at any workspace size: checked on the live output of the
//! real server (docs/MCP.md, "Schemas every provider accepts").

use std::io::Write;
use std::path::Path;
use std::process::{Command as Std, Stdio};

use dacli::brief::tokens::Tokenizer;
use serde_json::{Value, json};

use crate::support::Repo;

// The benchmark's generator, as perf.rs includes it: a second copy of a test-only module.
#[path = "../../bench/mkws.rs"]
#[allow(dead_code, clippy::duplicate_mod)]
mod mkws;

/// Runs one `mcp serve` over `calls` (legacy handshake first) and returns each answer's
/// `result`, in order.
fn serve(dir: &Path, token: Option<&str>, calls: &[(&str, Value)]) -> Vec<Value> {
    let mut cmd = Std::new(assert_cmd::cargo::cargo_bin("dacli"));
    cmd.current_dir(dir)
        .args(["mcp", "serve"])
        .env_remove("DACLI_AGENT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(t) = token {
        cmd.env("DACLI_AGENT", t);
    }
    let mut lines = vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    for (i, (method, params)) in calls.iter().enumerate() {
        lines.push(json!({"jsonrpc": "2.0", "id": 10 + i, "method": method, "params": params}));
    }
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let mut child = cmd.spawn().expect("server starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("exits");
    // Reads run beside writes, so answers come in any order: put them back in request order.
    let mut answered = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if let Some(id) = v["id"].as_i64().filter(|id| *id >= 10) {
            answered.push((id, v["result"].clone()));
        }
    }
    answered.sort_by_key(|(id, _)| *id);
    let results: Vec<Value> = answered.into_iter().map(|(_, r)| r).collect();
    assert_eq!(
        results.len(),
        calls.len(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    results
}

fn tools_list() -> Value {
    let repo = Repo::initialized();
    serve(repo.path(), None, &[("tools/list", json!({}))]).remove(0)
}

/// Keywords no node may carry: composition and conditionals (Anthropic rejects them at the
/// root, Claude Code drops the tool, Codex flattens them to strings) and `const` (Gemini).
const BANNED: [&str; 10] = [
    "oneOf", "anyOf", "allOf", "if", "then", "else", "not", "const", "$ref", "$defs",
];

/// Everything wrong with `node` (at `path`) under the portable dialect.
fn dialect(node: &Value, path: &str, root: bool, out: &mut Vec<String>) {
    let Some(map) = node.as_object() else {
        out.push(format!("{path}: not a schema object"));
        return;
    };
    for k in map.keys() {
        if BANNED.contains(&k.as_str()) {
            out.push(format!("{path}: `{k}`"));
        }
    }
    if root {
        let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
        keys.sort_unstable();
        if keys != ["additionalProperties", "properties", "required", "type"] {
            out.push(format!("{path}: root keys {keys:?}"));
        }
        if map.get("additionalProperties") != Some(&json!(false)) {
            out.push(format!("{path}: root additionalProperties is not false"));
        }
    } else if map.contains_key("additionalProperties") {
        // Codex's converter takes only a boolean, Gemini's `parameters` none at all.
        out.push(format!("{path}: additionalProperties below the root"));
    }
    let Some(Value::String(t)) = map.get("type") else {
        out.push(format!("{path}: needs exactly one `type` string"));
        return;
    };
    if let Some(values) = map.get("enum") {
        let strings = values.as_array().is_some_and(|a| {
            !a.is_empty() && a.iter().all(|v| v.as_str().is_some_and(|s| !s.is_empty()))
        });
        if t != "string" || !strings {
            out.push(format!(
                "{path}: enum of non-empty strings on a string only"
            ));
        }
    }
    if let Some(p) = map.get("pattern").and_then(Value::as_str)
        && p.contains("(?")
    {
        out.push(format!("{path}: lookaround or flags in a pattern"));
    }
    match t.as_str() {
        "object" => match map.get("properties").and_then(Value::as_object) {
            Some(props) => {
                for (k, v) in props {
                    dialect(v, &format!("{path}.{k}"), false, out);
                }
                for r in map
                    .get("required")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if !r.as_str().is_some_and(|r| props.contains_key(r)) {
                        out.push(format!("{path}: required {r} is not a property"));
                    }
                }
            }
            None => out.push(format!("{path}: object without properties")),
        },
        "array" => match map.get("items") {
            Some(items) => dialect(items, &format!("{path}[]"), false, out),
            None => out.push(format!("{path}: array without items")),
        },
        "string" | "integer" | "number" | "boolean" => {}
        other => out.push(format!("{path}: type {other}")),
    }
}

#[test]
fn every_published_schema_is_in_the_portable_dialect() {
    let list = tools_list();
    let tools = list["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 22);
    let mut problems = Vec::new();
    for tool in tools {
        let name = tool["name"].as_str().expect("name");
        let schema = &tool["inputSchema"];
        dialect(schema, name, true, &mut problems);
        assert_eq!(
            schema["properties"]["schema_version"],
            json!({"type": "integer", "minimum": 1, "maximum": 1}),
            "{name}"
        );
        assert_eq!(schema["required"][0], "schema_version", "{name}");
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_dialect_check_catches_what_providers_reject() {
    let mut found = Vec::new();
    let bad = json!({"type": "object", "properties": {
        "a": {"type": ["string", "null"]},
        "b": {"type": "integer", "enum": [1, 2]},
        "c": {"type": "array"},
        "d": {"type": "object"},
        "e": {"type": "boolean", "const": true},
        "f": {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}}},
        "required": [], "additionalProperties": false, "oneOf": [{"required": ["a"]}]});
    dialect(&bad, "t", true, &mut found);
    for what in [
        "t: `oneOf`",
        "t: root keys",
        "t.a: needs exactly one",
        "t.b: enum",
        "t.c: array without items",
        "t.d: object without properties",
        "t.e: `const`",
        "t.f: additionalProperties below the root",
    ] {
        assert!(
            found.iter().any(|f| f.starts_with(what)),
            "{what}: {found:#?}"
        );
    }
}

/// Names whose meaning the name makes plain; every other property carries a description.
const PLAIN: [&str; 24] = [
    "schema_version",
    "title",
    "project",
    "body",
    "summary",
    "reason",
    "question",
    "text",
    "name",
    "format",
    "priority",
    "status",
    "kind",
    "queue",
    "outcome",
    "mode",
    "operation",
    "action",
    "dry_run",
    "confirmed",
    "limit",
    "task",
    "pr",
    "branch",
];

#[test]
fn every_property_whose_name_is_not_plain_is_described() {
    let list = tools_list();
    let mut missing = Vec::new();
    let mut described = 0;
    for tool in list["tools"].as_array().expect("tools") {
        let name = tool["name"].as_str().expect("name");
        let props = tool["inputSchema"]["properties"]
            .as_object()
            .expect("props");
        for (k, v) in props {
            if v["description"].as_str().is_some_and(|d| !d.is_empty()) {
                described += 1;
            } else if !PLAIN.contains(&k.as_str()) {
                missing.push(format!("{name}.{k}"));
            }
        }
    }
    assert!(missing.is_empty(), "undescribed: {missing:?}");
    // The examples, by name, wherever they appear.
    for (tool, field) in [
        ("get_context", "ref"),
        ("ask", "to"),
        ("ask", "need"),
        ("add_note", "about"),
        ("add_note", "scope"),
        ("add_task", "traces"),
        ("diagnose_pr", "target"),
        ("check_task", "all"),
        ("cleanup_repository", "expect_digest"),
    ] {
        let t = list["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .find(|t| t["name"] == tool)
            .expect("tool");
        assert!(
            t["inputSchema"]["properties"][field]["description"].is_string(),
            "{tool}.{field}"
        );
    }
    assert!(described >= 60, "{described} described properties");
}

/// The per-agent context tax (spec QUALITY.md): the whole compact `tools/list` result at or
/// under 4,000 tokens in both encodings agents' models use, counted with the real BPE
/// vocabularies dacli ships.
#[test]
fn tools_list_fits_4000_tokens_in_cl100k_and_o200k() {
    let text = tools_list().to_string();
    let cl = Tokenizer::Cl100kBase.count(&text);
    let o = Tokenizer::O200kBase.count(&text);
    eprintln!(
        "tools/list: {} bytes, {cl} cl100k_base, {o} o200k_base tokens",
        text.len()
    );
    assert!(cl <= 4000 && o <= 4000, "cl100k {cl}, o200k {o}");
}

fn status_text(result: &Value) -> String {
    assert_eq!(result["isError"], false, "{result}");
    result["content"][0]["text"]
        .as_str()
        .expect("text")
        .to_string()
}

fn call(tool: &str, mut args: Value) -> (&'static str, Value) {
    args["schema_version"] = json!(1);
    let _ = tool;
    ("tools/call", json!({"name": tool, "arguments": args}))
}

/// At a few thousand tasks (the benchmark's generator: builders with many tasks each, pending
/// events, questions) the default `status` stays within 400 tokens in both encodings and
/// still names the caller's work; `detail` pages through a section with `next_cursor`.
#[test]
fn status_by_default_is_at_most_400_tokens_at_a_large_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let dacli = assert_cmd::cargo::cargo_bin("dacli");
    let built =
        mkws::build(&dacli, &dir.path().join("ws"), 3000, None).expect("built and verified");
    let (_, builder) = &built.agents.builders[0];
    let ask = |n: usize| {
        call(
            "ask",
            json!({"ref": "workspace", "question": format!("Question {n} for the builders, long enough to cost tokens?"), "to": "builder", "blocks": false}),
        )
    };
    // A read may run before an earlier write has answered: the questions are asked in one
    // session, then read in the next.
    serve(&built.dir, Some(builder), &[ask(1), ask(2), ask(3), ask(4)]);
    let calls = vec![
        call("status", json!({})),
        call("status", json!({"detail": ["active"], "limit": 5})),
    ];
    let results = serve(&built.dir, Some(builder), &calls);
    let text = status_text(&results[0]);
    let cl = Tokenizer::Cl100kBase.count(&text);
    let o = Tokenizer::O200kBase.count(&text);
    eprintln!(
        "status: {} bytes, {cl} cl100k, {o} o200k tokens: {text}",
        text.len()
    );
    assert!(cl <= 400 && o <= 400, "cl100k {cl}, o200k {o}");
    let s: Value = serde_json::from_str(&text).expect("json");
    let c = &built.counts;
    assert_eq!(
        s["tasks"],
        json!({"open": c.open, "active": c.active, "blocked": c.blocked, "done": c.done})
    );
    let you = &s["you"];
    assert!(you["tasks_total"].as_u64().is_some_and(|n| n > 5), "{you}");
    assert_eq!(you["tasks"].as_array().expect("tasks").len(), 5);
    assert_eq!(you["questions_total"], 4, "routed to the builder role");
    assert_eq!(you["questions"].as_array().expect("q").len(), 3);
    assert!(s["more"].as_str().is_some_and(|m| m.contains("detail")));

    let page: Value = serde_json::from_str(&status_text(&results[1])).expect("json");
    let items = page["active"]["items"].as_array().expect("items");
    assert_eq!(items.len(), 5);
    assert_eq!(page["active"]["total"], json!(c.active));
    let cursor = page["active"]["next_cursor"].as_str().expect("cursor");
    let next = serve(
        &built.dir,
        Some(builder),
        &[call(
            "status",
            json!({"detail": ["active"], "limit": 5, "cursor": cursor}),
        )],
    );
    let next: Value = serde_json::from_str(&status_text(&next[0])).expect("json");
    let second = next["active"]["items"].as_array().expect("items");
    assert_eq!(second.len(), 5);
    assert!(
        second.iter().all(|t| !items.contains(t)),
        "the second page starts after the first"
    );
}

#[test]
fn cross_field_rules_are_schema_errors_naming_the_fields_and_nothing_runs() {
    let repo = Repo::initialized();
    let (code, doc) = repo.json(&["project", "add", "Checkout", "--slug", "checkout"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = repo.json(&["task", "add", "Add the shim", "--accept", "it works"]);
    assert_eq!(code, 0, "{doc}");
    let cases = [
        (
            call("check_task", json!({"ref": "1"})),
            "give `items` or `all`",
        ),
        (
            call("check_task", json!({"ref": "1", "items": [1], "all": true})),
            "give only one of `items` or `all`",
        ),
        (
            call("finish_task", json!({"ref": "1", "close_as": "abandoned"})),
            "`reason` is required when `close_as` is given",
        ),
        (
            call("cleanup_repository", json!({"mode": "apply"})),
            "`expect_digest` is required when `mode` is `apply`",
        ),
        (
            call("run_shortcut", json!({"name": "test", "list": true})),
            "give only one of `name` or `list`",
        ),
        (
            call("diagnose_pr", json!({"target": {"pr": 1, "branch": "b"}})),
            "give exactly one of `target.task`, `target.pr`, `target.branch` or `target.sha`",
        ),
        (
            call("status", json!({"project": "Not A Slug"})),
            "`project` must be a slug or p-<slug>",
        ),
        (
            call("status", json!({"detail": ["active"], "cursor": "garbage"})),
            "`cursor` must be the `next_cursor` this section returned",
        ),
        (
            call("list_tasks", json!({"limit": "ten"})),
            "`limit` must be an integer, not a string",
        ),
    ];
    let calls: Vec<(&str, Value)> = cases.iter().map(|(c, _)| c.clone()).collect();
    let results = serve(repo.path(), None, &calls);
    for (result, (_, message)) in results.iter().zip(&cases) {
        assert_eq!(result["isError"], true, "{result}");
        let body: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().expect("text"))
                .expect("json");
        assert_eq!(body["error"]["code"], "E_SCHEMA", "{body}");
        assert_eq!(body["error"]["message"], *message);
    }
    // Nothing ran: the task is still open and unchecked.
    let (_, shown) = repo.json(&["task", "show", "1"]);
    assert_eq!(shown["data"]["status"], "open", "{shown}");
    assert_eq!(shown["data"]["acceptance"]["checked"], 0, "{shown}");
}
