//! Trust: text at the boundary (issue 22, holes 3, 4, 7 and 8). Every text field of every
//! Tier-1 tool and of every CLI command that writes is sent hostile text (NUL, C0, C1, ESC
//! sequences, CR, LF in one-line fields, section-forging lines); each refusal must be
//! `E_USAGE` (or `E_SCHEMA` for a field whose form the MCP server checks first) naming the field, and leave
//! every file of `.dacli` as it was. What is accepted reads back as written.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dacli::dispatch::{CallResult, Class, Ctx, Env, Input, Mcp, Outcome, Output, Table, shape_of};
use dacli::model::text::{MAX_TEXT, Shape};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::mcp::Server;
use crate::support::{CLOCK, Repo};

/// The hostile values, by name.
const HOSTILE: [(&str, &str); 9] = [
    ("nul", "n\u{0}ul"),
    ("bell", "bel\u{7}l"),
    ("c1", "next\u{85}line"),
    ("del", "del\u{7f}"),
    ("esc", "Evil \u{1b}]2;PWNED\u{7}\u{1b}[2J"),
    ("cr", "ok\r- [x] forged"),
    ("lf", "ok\n- [x] forged"),
    ("heading", "hi\n\n## Acceptance\n- [x] forged"),
    ("fence", "hi\n```\nthe rest of the body"),
];

/// Whether `hostile` must be refused in a field of `shape`.
fn refused(hostile: &str, shape: Shape) -> bool {
    match hostile {
        "lf" => shape == Shape::OneLine,
        "heading" | "fence" => shape != Shape::Lines,
        _ => true,
    }
}

/// Every file under `.dacli` with its bytes, but the lock files (taken by any call, never
/// content), the derived cache (rebuilt by reads) and the usage record (one line per MCP
/// call, by design).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, at: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(rd) = std::fs::read_dir(at) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            let skip = [".locks", "cache", "runs/usage"]
                .iter()
                .any(|s| rel.starts_with(s));
            if skip {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    let root = dir.join(".dacli");
    let mut out = BTreeMap::new();
    walk(&root, &root, &mut out);
    out
}

/// A workspace with project `checkout`, task 1 (one plain criterion) and a shortcut.
fn workspace() -> Repo {
    let repo = Repo::initialized();
    for args in [
        &["project", "add", "Checkout", "--slug", "checkout"][..],
        &["task", "add", "Add the shim", "--accept", "it works"],
        &[
            "shortcut",
            "add",
            "hello",
            "--command",
            "echo hello",
            "--effect",
            "read",
            "--summary",
            "greets",
        ],
    ] {
        let (code, doc) = repo.json(args);
        assert_eq!(code, 0, "{args:?}: {doc}");
    }
    repo
}

fn env(dir: &Path) -> Env {
    Env::from_pairs(
        &[("DACLI_TEST_CLOCK", CLOCK), ("DACLI_TEST_SEED", "99")],
        dir.to_path_buf(),
    )
}

/// Runs argv (without the program name) in-process through the same table and runner the
/// binary uses; `None` when argv does not parse.
fn call(table: &Table, dir: &Path, argv: &[String]) -> Option<CallResult> {
    let mut all = vec!["dacli".to_string()];
    all.extend(argv.iter().cloned());
    let m = table.clap_root().try_get_matches_from(all).ok()?;
    let mut leaf = &m;
    let mut words = Vec::new();
    while let Some((n, s)) = leaf.subcommand() {
        words.push(n.to_string());
        leaf = s;
    }
    let cmd = table.get(&words.join("."))?;
    let ctx = Ctx::new(
        table,
        env(dir),
        None,
        Output {
            json: true,
            quiet: true,
            color: false,
            ..Default::default()
        },
    );
    Some(table.call(&ctx, cmd, Input::Cli(leaf)))
}

const GLOBAL: [&str; 6] = [
    "json",
    "workspace",
    "quiet",
    "no_color",
    "version_flag",
    "help",
];

/// Every multi-line field the boundary knows is a real argument of a real command: a typo
/// there would silently make a prose field one line.
#[test]
fn every_multi_line_field_names_an_argument_of_its_command() {
    let table = dacli::commands::table();
    let root = table.clap_root();
    for (command, field, _) in dacli::dispatch::MULTI_LINE {
        assert!(table.get(command).is_some(), "{command}");
        let mut leaf = root.clone();
        for w in command.split('.') {
            leaf = leaf.find_subcommand(w).expect("word").clone();
        }
        assert!(
            leaf.get_arguments().any(|a| a.get_id() == *field),
            "{command} has no argument `{field}`"
        );
    }
}

/// One hostile CLI case: the command, the argument's id and spelling, and the argv.
struct CliCase {
    command: &'static str,
    id: String,
    spelled: String,
    hostile: &'static str,
    argv: Vec<String>,
    mcp: Mcp,
}

/// Every text argument of every command that writes, with each hostile value it must refuse,
/// as argv that parses: the required arguments are filled with the first of a few plain
/// values clap takes.
fn cli_cases(table: &Table) -> (Vec<CliCase>, Vec<String>) {
    let root = table.clap_root();
    let mut cases = Vec::new();
    let mut unparsed = Vec::new();
    for cmd in table.commands() {
        if cmd.class == Class::Read {
            continue;
        }
        let words: Vec<&str> = cmd.words().collect();
        let mut leaf = root.clone();
        for w in &words {
            leaf = leaf.find_subcommand(w).expect("word").clone();
        }
        let args: Vec<clap::Arg> = leaf
            .get_arguments()
            .filter(|a| !GLOBAL.contains(&a.get_id().as_str()))
            .cloned()
            .collect();
        let text_args: Vec<&clap::Arg> = args
            .iter()
            .filter(|a| a.get_action().takes_values() && a.get_possible_values().is_empty())
            .collect();
        for target in &text_args {
            let id = target.get_id().to_string();
            let shape = shape_of(cmd.name, &id);
            let spelled = match target.get_long() {
                Some(l) => format!("--{l}"),
                None => target
                    .get_value_names()
                    .and_then(|n| n.first())
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| id.to_uppercase()),
            };
            for (hostile, value) in HOSTILE {
                if !refused(hostile, shape) {
                    continue;
                }
                let built = ["x", "1", "k=v", "1,2,3", "a-root"]
                    .iter()
                    .find_map(|filler| parsing_argv(&root, &words, &args, target, value, filler));
                // A typed argument (a number, `N=M`) that takes a plain value but not text:
                // the parser refuses the hostile value before any command runs.
                let typed = built.is_none()
                    && ["1", "x=1"].iter().any(|plain| {
                        parsing_argv(&root, &words, &args, target, plain, "1").is_some()
                    });
                if typed {
                    continue;
                }
                match built {
                    Some(argv) => cases.push(CliCase {
                        command: cmd.name,
                        id: id.clone(),
                        spelled: spelled.clone(),
                        hostile,
                        argv,
                        mcp: cmd.mcp,
                    }),
                    None => unparsed.push(format!("{} {spelled} ({hostile})", cmd.name)),
                }
            }
        }
    }
    (cases, unparsed)
}

/// argv that parses with `target` holding `value`, the required arguments (and those clap
/// says another one requires) holding `filler`; `None` when none does.
fn parsing_argv(
    root: &clap::Command,
    words: &[&str],
    args: &[clap::Arg],
    target: &clap::Arg,
    value: &str,
    filler: &str,
) -> Option<Vec<String>> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let mut forced: Vec<String> = Vec::new();
    for _ in 0..4 {
        let argv = build_argv(words, args, target, value, filler, &forced);
        let mut all = vec!["dacli".to_string()];
        all.extend(argv.iter().cloned());
        let e = match root.clone().try_get_matches_from(all) {
            Ok(_) => return Some(argv),
            Err(e) => e,
        };
        if e.kind() != ErrorKind::MissingRequiredArgument {
            return None;
        }
        let Some(ContextValue::Strings(missing)) = e.get(ContextKind::InvalidArg) else {
            return None;
        };
        for m in missing {
            let word = m.split([' ', '.']).next().unwrap_or("");
            let found = args.iter().find(|a| {
                let long = a.get_long().map(|l| format!("--{l}"));
                let name = a
                    .get_value_names()
                    .and_then(|n| n.first())
                    .map(|n| format!("<{n}>"))
                    .unwrap_or_else(|| format!("<{}>", a.get_id().as_str().to_uppercase()));
                long.as_deref() == Some(word) || (a.is_positional() && name == word)
            });
            match found {
                Some(a) => forced.push(a.get_id().to_string()),
                None => return None,
            }
        }
    }
    None
}

fn build_argv(
    words: &[&str],
    args: &[clap::Arg],
    target: &clap::Arg,
    value: &str,
    filler: &str,
    forced: &[String],
) -> Vec<String> {
    let mut argv: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    let is_target = |a: &clap::Arg| a.get_id() == target.get_id();
    let needed =
        |a: &clap::Arg| a.is_required_set() || forced.iter().any(|f| f == a.get_id().as_str());
    let fill = |a: &clap::Arg| -> String {
        a.get_possible_values()
            .first()
            .map(|p| p.get_name().to_string())
            .unwrap_or_else(|| filler.to_string())
    };
    let mut positionals: Vec<&clap::Arg> = args.iter().filter(|a| a.is_positional()).collect();
    positionals.sort_by_key(|a| a.get_index());
    let last_needed = positionals.iter().rposition(|a| needed(a) || is_target(a));
    let mut flags = Vec::new();
    for a in args.iter().filter(|a| !a.is_positional()) {
        let long = format!("--{}", a.get_long().unwrap_or(a.get_id().as_str()));
        if is_target(a) {
            flags.push(format!("{long}={value}"));
        } else if needed(a) && a.get_action().takes_values() {
            flags.push(long);
            flags.push(fill(a));
        } else if needed(a) {
            flags.push(long);
        }
    }
    // Flags first: a hostile positional may start a line with `-`.
    argv.extend(flags);
    if let Some(last) = last_needed {
        for a in &positionals[..=last] {
            argv.push(if is_target(a) {
                value.to_string()
            } else {
                fill(a)
            });
        }
    }
    argv
}

fn assert_names_field(message: &str, names: &[&str], case: &str) {
    assert!(
        names.iter().any(|n| message.contains(n)),
        "{case}: the refusal names the field ({names:?}): {message}"
    );
}

/// The hostile-input table over the CLI: every text argument of every command that writes,
/// each refused with `E_USAGE` naming it, nothing written. The same argv through the MCP
/// `cli` tool gets the same refusal.
#[test]
fn every_text_argument_of_every_writing_command_refuses_hostile_text() {
    let repo = workspace();
    let table = dacli::commands::table();
    let (cases, unparsed) = cli_cases(&table);
    assert!(
        unparsed.is_empty(),
        "argv the table could not build: {unparsed:#?}"
    );
    assert!(cases.len() > 300, "{} cases", cases.len());
    let commands: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.command).collect();
    for named in [
        "task.add",
        "task.edit",
        "note.add",
        "task.comment",
        "ask",
        "answer",
    ] {
        assert!(commands.contains(named), "{named} is in the table");
    }
    let before = snapshot(repo.path());
    for case in &cases {
        let label = format!("{} {} ({})", case.command, case.spelled, case.hostile);
        let result = call(&table, repo.path(), &case.argv).expect("parses");
        match result {
            Err(e) => {
                assert_eq!(e.code, "E_USAGE", "{label}: {e:?}");
                assert_names_field(&e.message, &[&case.spelled], &label);
            }
            Ok(Outcome::Done(r)) => panic!("{label}: accepted: {}", r.data),
            Ok(Outcome::Refused(r)) => panic!("{label}: refused by policy: {r:?}"),
        }
        assert!(snapshot(repo.path()) == before, "{label}: wrote something");
    }
    // The same argv through the MCP `cli` tool.
    let mut s = Server::start_with(repo.path(), None, &[]);
    s.initialize("2025-11-25");
    let mut through_mcp = 0;
    for case in cases.iter().filter(|c| c.mcp != Mcp::Never) {
        let label = format!("cli {} {} ({})", case.command, case.spelled, case.hostile);
        let r = s.call("cli", json!({"argv": case.argv}));
        let text = r["content"][0]["text"].as_str().expect("text");
        let doc: Value = serde_json::from_str(text).expect("json");
        if doc["error"]["code"] == "E_NOT_ALLOWED_VIA_MCP" {
            continue;
        }
        assert_eq!(doc["error"]["code"], "E_USAGE", "{label}: {doc}");
        let message = doc["error"]["message"].as_str().unwrap_or_default();
        assert_names_field(message, &[&case.spelled, &case.id], &label);
        assert!(snapshot(repo.path()) == before, "{label}: wrote something");
        through_mcp += 1;
    }
    eprintln!(
        "hostile CLI table: {} cases over {} commands, {through_mcp} again through `cli`",
        cases.len(),
        commands.len()
    );
    assert!(through_mcp > 200, "{through_mcp} cases through `cli`");
    s.finish();
}

/// A Tier-1 tool's text fields, from its published schema: string-valued properties (or
/// arrays or objects of strings) that are not enumerations.
fn text_fields(schema: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (k, v) in schema["properties"].as_object().expect("properties") {
        if k == "schema_version" || v.get("enum").is_some() || v.get("const").is_some() {
            continue;
        }
        match v["type"].as_str() {
            Some("string") => out.push((k.clone(), v.clone())),
            Some("array") if v["items"]["type"] == "string" && v["items"].get("enum").is_none() => {
                out.push((k.clone(), v.clone()))
            }
            Some("object") => out.push((k.clone(), v.clone())),
            _ => {}
        }
    }
    out
}

/// The arguments of a `tool` call whose field `field` holds `value`: the schema's required
/// fields filled plainly, and what the tool's conditions ask beside `field`.
fn tool_args(tool: &str, schema: &Value, field: &str, value: &str) -> Value {
    let mut args = serde_json::Map::new();
    for r in schema["required"].as_array().expect("required") {
        let r = r.as_str().expect("str");
        let p = &schema["properties"][r];
        let v = if let Some(e) = p.get("enum") {
            e[0].clone()
        } else if let Some(c) = p.get("const") {
            c.clone()
        } else {
            match p["type"].as_str() {
                Some("integer") => json!(1),
                Some("boolean") => json!(false),
                Some("array") => json!(["x"]),
                Some("object") => json!({"task": "1"}),
                _ => json!("1"),
            }
        };
        args.insert(r.to_string(), v);
    }
    let extra: Value = match (tool, field) {
        ("add_note", "chose" | "rejected" | "because") => json!({"kind": "decision"}),
        ("add_note", "goal" | "question" | "metric") => json!({"kind": "metric"}),
        ("check_task", _) => json!({"all": true}),
        ("finish_task", "reason") => json!({"close_as": "abandoned"}),
        ("queue_advance", "reason") => json!({"outcome": "failed"}),
        ("reconcile_event_journal", "before") => json!({"operation": "archive"}),
        ("reconcile_event_journal", "segment_id") => json!({"operation": "restore"}),
        ("reconcile_delivery", "tasks" | "project") => json!({}),
        ("reconcile_delivery", _) => json!({"project": "checkout"}),
        ("run_shortcut", "name") => json!({}),
        ("run_shortcut", _) => json!({"name": "hello"}),
        ("release_train", "train_id") => json!({"action": "status"}),
        ("release_train", "source") => json!({"project": "checkout", "target": "release"}),
        ("release_train", "target") => json!({"project": "checkout", "source": "main"}),
        _ => json!({}),
    };
    for (k, v) in extra.as_object().expect("object") {
        args.insert(k.clone(), v.clone());
    }
    let p = &schema["properties"][field];
    let hostile = match p["type"].as_str() {
        Some("array") => json!([value]),
        Some("object") if field == "target" => json!({"task": value}),
        Some("object") => json!({"k": value}),
        _ => json!(value),
    };
    args.insert(field.to_string(), hostile);
    Value::Object(args)
}

/// The request field a Tier-1 field becomes, where the tool renames it.
fn aliases(tool: &str, field: &str) -> Vec<String> {
    let mut names = vec![field.to_string()];
    names.extend(
        match (tool, field) {
            ("queue_next" | "queue_advance", "queue") => &["slug"][..],
            ("queue_advance", "reason") => &["fail", "dead"],
            ("reconcile_delivery", "tasks") => &["task"],
            ("run_shortcut", "params") => &["param"],
            ("diagnose_pr", "target") => &["task"],
            ("reconcile_event_journal", "segment_id") => &["segment"],
            ("release_train", "train_id") => &["train"],
            _ => &[],
        }
        .iter()
        .map(|s| s.to_string()),
    );
    names
}

/// The hostile-input table over MCP: every text field of every Tier-1 tool, read from the
/// schemas the server publishes (a new field is covered without touching this test).
#[test]
fn every_text_field_of_every_tier1_tool_refuses_hostile_text() {
    let repo = workspace();
    let before = snapshot(repo.path());
    let mut s = Server::start_with(repo.path(), None, &[]);
    s.initialize("2025-11-25");
    let mut tried = 0;
    let mut failures = Vec::new();
    for tool in dacli::dispatch::tools::registry() {
        if tool.name == "cli" {
            // Its one field is argv, covered command by command above.
            continue;
        }
        let listing = tool.listing();
        let schema = &listing["inputSchema"];
        let command = tool.commands.first().copied().unwrap_or("");
        for (field, _) in text_fields(schema) {
            for (hostile, value) in HOSTILE {
                let names = aliases(tool.name, &field);
                let shape = names
                    .iter()
                    .map(|n| shape_of(command, n))
                    .find(|s| *s != Shape::OneLine)
                    .unwrap_or(Shape::OneLine);
                if !refused(hostile, shape) {
                    continue;
                }
                let label = format!("{}.{field} ({hostile})", tool.name);
                let args = tool_args(tool.name, schema, &field, value);
                let r = s.call(tool.name, args.clone());
                if r["isError"] != true {
                    failures.push(format!("{label}: {args} → {r}"));
                    continue;
                }
                let text = r["content"][0]["text"].as_str().expect("text");
                let doc: Value = serde_json::from_str(text).expect("json");
                let code = doc["error"]["code"].as_str().unwrap_or_default();
                // A field whose form (slug, digest, cursor, ...) the server checks before the
                // command runs is refused there, as E_SCHEMA naming it; any other reaches the
                // one text check of the command runner, E_USAGE naming it.
                if !["E_USAGE", "E_SCHEMA"].contains(&code) {
                    failures.push(format!("{label}: {args} → {doc}"));
                    continue;
                }
                let message = doc["error"]["message"].as_str().unwrap_or_default();
                let field_of_schema = doc["error"]["field"].as_str().unwrap_or_default();
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                if !refs.contains(&field_of_schema) {
                    assert_names_field(message, &refs, &label);
                }
                assert!(snapshot(repo.path()) == before, "{label}: wrote something");
                tried += 1;
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(tried > 250, "{tried} cases");
    eprintln!("hostile MCP table: {tried} cases");
    s.finish();
}

/// Hole 3: a NUL over MCP neither "creates" a note that then vanishes nor leaves a task file
/// behind; the workspace stays healthy.
#[test]
fn nul_over_mcp_is_refused_naming_the_field_and_writes_nothing() {
    let repo = workspace();
    let before = snapshot(repo.path());
    let mut s = Server::start_with(repo.path(), None, &[]);
    s.initialize("2025-11-25");
    for (tool, args) in [
        (
            "add_note",
            json!({"kind": "finding", "severity": "minor", "title": "n\u{0}ul", "about": "1"}),
        ),
        ("add_task", json!({"title": "n\u{0}ul", "accept": ["ok"]})),
        ("add_task", json!({"title": "ok", "accept": ["n\u{0}ul"]})),
    ] {
        let r = s.call(tool, args.clone());
        assert_eq!(r["isError"], true, "{tool} {args}: {r}");
        let text = r["content"][0]["text"].as_str().expect("text");
        assert!(text.contains("E_USAGE"), "{text}");
        assert!(
            text.contains("`title`") || text.contains("`accept`"),
            "{text}"
        );
    }
    s.finish();
    assert!(snapshot(repo.path()) == before, "nothing written");
    let out = repo.dacli(&["doctor", "--check"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // The real binary: exit 2, E_USAGE, naming the flag.
    let out = repo
        .dacli(&["task", "add", "C", "--accept", "ok\r- [x] forged", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let doc = crate::support::one_json(&out.stdout);
    assert_eq!(doc["error"]["code"], "E_USAGE");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`--accept`")
    );
    assert!(snapshot(repo.path()) == before, "nothing written");
}

/// Hole 4: neither a CR in a criterion nor a heading in the context forges acceptance, and a
/// task that could not be written cannot be done.
#[test]
fn text_cannot_forge_body_structure() {
    let repo = workspace();
    let (code, doc) = repo.json(&["task", "add", "C", "--accept", "ok\r- [x] forged"]);
    assert_eq!(code, 2, "{doc}");
    let (code, doc) = repo.json(&[
        "task",
        "add",
        "C",
        "--accept",
        "real criterion",
        "--context",
        "hi\n\n## Acceptance\n- [x] forged",
    ]);
    assert_eq!(code, 2, "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`--context`")
    );
    let (code, doc) = repo.json(&[
        "task",
        "edit",
        "1",
        "--context",
        "hi\n```\nhides the criteria",
    ]);
    assert_eq!(code, 2, "{doc}");
    // Headings below level 2 and closed fences are prose, and read back exactly.
    let context = "hi\n\n### Details\n```\n## inside code\n- [x] not a criterion\n```\nend";
    let (code, doc) = repo.json(&[
        "task",
        "add",
        "D",
        "--accept",
        "[x] looks checked",
        "--context",
        context,
    ]);
    assert_eq!(code, 0, "{doc}");
    let (_, show) = repo.json(&["task", "show", "2"]);
    assert_eq!(show["data"]["context"], context, "{show}");
    assert_eq!(
        show["data"]["acceptance"],
        json!({"checked": 0, "total": 1})
    );
    assert_eq!(show["data"]["criteria"][0]["text"], "[x] looks checked");
}

const PIECES: [&str; 24] = [
    "a",
    "Zé 漢",
    " ",
    "\t",
    "\n",
    "\r",
    "\u{0}",
    "\u{1b}[2J",
    "\u{85}",
    "# ",
    "## Acceptance",
    "## Log",
    "### sub",
    "- [x] ",
    "- [ ] ",
    "- ",
    "```",
    "~~~",
    "`cmd`",
    "<!-- x -->",
    "+++",
    "---",
    "\\",
    "\"'",
];

/// Pieces no field refuses: what a case made of them must read back exactly.
const PLAIN: [&str; 12] = [
    "a",
    "Zé 漢",
    " ",
    "\t",
    "### sub",
    "- [x] ",
    "- ",
    "`cmd`",
    "<!-- x -->",
    "+++",
    "\\",
    "\"'",
];

/// Mostly text every field takes (so that many cases are written and read back), else a mix
/// of every hostile piece.
fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::collection::vec(proptest::sample::select(&PLAIN[..]), 0..7)
            .prop_map(|v| v.concat()),
        1 => proptest::collection::vec(proptest::sample::select(&PIECES[..]), 0..7)
            .prop_map(|v| v.concat()),
    ]
}

/// What a successful add must read back: each field trimmed, as the writers trim.
fn check_task_round_trip(
    show: &Value,
    title: &str,
    so_that: &str,
    context: &str,
    accept: &[String],
) {
    let d = &show["data"];
    assert_eq!(d["title"], title.trim(), "{show}");
    assert_eq!(d["so_that"], so_that.trim(), "{show}");
    assert_eq!(d["context"], context.trim(), "{show}");
    let texts: Vec<&str> = d["criteria"]
        .as_array()
        .expect("criteria")
        .iter()
        .map(|c| c["text"].as_str().expect("text"))
        .collect();
    let want: Vec<&str> = accept.iter().map(|a| a.trim()).collect();
    assert_eq!(texts, want, "{show}");
    assert_eq!(
        d["acceptance"],
        json!({"checked": 0, "total": accept.len()}),
        "{show}"
    );
}

/// Hole 4, as a property through the binary: whatever the fields hold, `task add` refuses
/// with `E_USAGE` naming a field, or `task show --json` returns exactly what was written
/// (trimmed) with every criterion counted and none checked.
#[test]
fn any_text_round_trips_through_the_cli_or_is_refused_naming_the_field() {
    let repo = workspace();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let accepted = RefCell::new(0);
    let strategy = (
        hostile_text(),
        hostile_text(),
        hostile_text(),
        proptest::collection::vec(hostile_text(), 1..3),
    );
    runner
        .run(&strategy, |(title, so_that, context, accept)| {
            let title = format!("T{title}");
            // argv cannot carry a NUL; MCP sends it (the test below).
            let all = [&title, &so_that, &context].into_iter().chain(&accept);
            prop_assume!(all.into_iter().all(|s| !s.contains('\0')));
            // `--flag=VALUE`: a value may start with `-`.
            let mut args = vec![
                "task".to_string(),
                "add".into(),
                format!("--so-that={so_that}"),
                format!("--context={context}"),
                "--allow-duplicate".into(),
                "--json".into(),
            ];
            for a in &accept {
                args.push(format!("--accept={a}"));
            }
            args.push("--".into());
            args.push(title.clone());
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = repo.dacli(&refs).output().unwrap();
            let doc = crate::support::one_json(&out.stdout);
            if out.status.code() == Some(2) {
                assert_eq!(doc["error"]["code"], "E_USAGE", "{doc}");
                let message = doc["error"]["message"].as_str().unwrap_or_default();
                assert_names_field(
                    message,
                    &["TITLE", "--so-that", "--context", "--accept"],
                    "task add",
                );
                return Ok(());
            }
            assert_eq!(out.status.code(), Some(0), "{doc}");
            *accepted.borrow_mut() += 1;
            let reference = doc["data"]["task"]["ref"]
                .as_str()
                .expect("ref")
                .to_string();
            let (code, show) = repo.json(&["task", "show", &reference]);
            assert_eq!(code, 0, "{show}");
            check_task_round_trip(&show, &title, &so_that, &context, &accept);
            Ok(())
        })
        .unwrap();
    eprintln!(
        "round trip through the CLI: {} of 48 cases written",
        accepted.borrow()
    );
    assert!(*accepted.borrow() > 0, "some cases were accepted");
}

/// Hole 4 through MCP: `add_task` and `add_note` round-trip or refuse naming the field.
#[test]
fn any_text_round_trips_through_mcp_or_is_refused_naming_the_field() {
    let repo = workspace();
    let server = RefCell::new(Server::start_with(repo.path(), None, &[]));
    let written = RefCell::new((0, 0));
    server.borrow_mut().initialize("2025-11-25");
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = (
        hostile_text(),
        hostile_text(),
        proptest::collection::vec(hostile_text(), 1..3),
        hostile_text(),
    );
    runner
        .run(&strategy, |(title, context, accept, body)| {
            let title = format!("T{title}");
            let mut s = server.borrow_mut();
            let r = s.call(
                "add_task",
                json!({"title": title, "so_that": body, "context": context, "accept": accept, "allow_duplicate": true}),
            );
            let text = r["content"][0]["text"].as_str().expect("text").to_string();
            let doc: Value = serde_json::from_str(&text).expect("json");
            if r["isError"] == true {
                assert_eq!(doc["error"]["code"], "E_USAGE", "{doc}");
                let message = doc["error"]["message"].as_str().unwrap_or_default();
                assert_names_field(message, &["title", "so_that", "context", "accept"], "add_task");
            } else {
                let reference = doc["task"]["ref"]
                    .as_str()
                    .or_else(|| doc["ref"].as_str())
                    .unwrap_or_else(|| panic!("a ref in {doc}"))
                    .to_string();
                let (code, show) = repo.json(&["task", "show", &reference]);
                assert_eq!(code, 0, "{show}");
                check_task_round_trip(&show, &title, &body, &context, &accept);
                written.borrow_mut().0 += 1;
            }
            let r = s.call(
                "add_note",
                json!({"kind": "finding", "severity": "minor", "about": "1", "title": title, "body": body}),
            );
            let text = r["content"][0]["text"].as_str().expect("text").to_string();
            let doc: Value = serde_json::from_str(&text).expect("json");
            if r["isError"] == true {
                assert_eq!(doc["error"]["code"], "E_USAGE", "{doc}");
                let message = doc["error"]["message"].as_str().unwrap_or_default();
                assert_names_field(message, &["title", "body"], "add_note");
            } else {
                let id = doc["note"]["id"]
                    .as_str()
                    .or_else(|| doc["id"].as_str())
                    .unwrap_or_else(|| panic!("an id in {doc}"))
                    .to_string();
                let (code, show) = repo.json(&["note", "show", &id]);
                assert_eq!(code, 0, "{show}");
                let note = &show["data"];
                let shown_title = note["title"].as_str().or_else(|| note["note"]["title"].as_str());
                assert_eq!(shown_title, Some(title.trim()), "{show}");
                written.borrow_mut().1 += 1;
                let shown = show.to_string();
                if !body.trim().is_empty() {
                    assert!(
                        shown.contains(&serde_json::to_string(body.trim()).unwrap().trim_matches('"').to_string()),
                        "the body reads back: {show}"
                    );
                }
            }
            Ok(())
        })
        .unwrap();
    server.into_inner().finish();
    let (tasks, notes) = *written.borrow();
    eprintln!("round trip through MCP: {tasks} tasks and {notes} notes of 64 cases written");
    assert!(tasks > 0 && notes > 0, "some cases were written");
}

/// Hole 7: a title at the limit lists everywhere; one byte over is refused; a hand-edited
/// title far over the limit breaks no renderer.
#[test]
fn a_limit_sized_title_breaks_no_listing() {
    let repo = workspace();
    let at_limit = "x".repeat(MAX_TEXT);
    let (code, doc) = repo.json(&["task", "add", &at_limit, "--accept", "ok"]);
    assert_eq!(
        code,
        0,
        "{}",
        doc.to_string().chars().take(300).collect::<String>()
    );
    for args in [&["task", "list"][..], &["task", "list", "--all"], &["next"]] {
        let out = repo.dacli(args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let over = "x".repeat(MAX_TEXT + 1);
    let (code, doc) = repo.json(&["task", "add", &over, "--accept", "ok", "--allow-duplicate"]);
    assert_eq!(code, 2, "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`TITLE`")
    );
    // A hand edit beyond any limit a writer keeps.
    let path = repo.ws("projects/checkout/tasks/open/001-add-the-shim.md");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("# Add the shim", &format!("# {}", "y".repeat(100_000))),
    )
    .unwrap();
    std::fs::remove_dir_all(repo.ws("cache")).unwrap();
    for args in [
        &["task", "list"][..],
        &["task", "list", "--all"],
        &["next"],
        &["wbs"],
        &["status"],
        &["task", "show", "1"],
        &["context", "1"],
        &["context", "1", "--explain"],
    ] {
        let out = repo.dacli(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        // A brief that cannot fit its budget says so (exit 1); nothing is a bug (exit 70).
        let fits =
            out.status.code() == Some(0) || (args[0] == "context" && stderr.contains("E_BUDGET"));
        assert!(fits, "{args:?}: {:?} {stderr}", out.status.code());
    }
}

/// Hole 8: control characters in workspace content (hand-edited files, since no front end
/// writes them any more) reach the terminal visibly, never raw; JSON stays exact.
#[test]
fn terminal_escapes_in_workspace_text_are_shown_not_sent() {
    let repo = workspace();
    let (code, doc) = repo.json(&[
        "note",
        "add",
        "finding",
        "Plain note",
        "--severity",
        "minor",
        "--about",
        "1",
        "--body",
        "plain body",
    ]);
    assert_eq!(code, 0, "{doc}");
    let evil = "Evil \u{1b}]2;PWNED\u{7}\u{1b}[2J";
    let path = repo.ws("projects/checkout/tasks/open/001-add-the-shim.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text
        .replace("# Add the shim", &format!("# {evil}"))
        .replace("- [ ] it works", &format!("- [ ] it works {evil}"))
        .replace(
            "## Acceptance",
            &format!("## Context\n{evil}\n\n## Acceptance"),
        );
    std::fs::write(&path, text).unwrap();
    let mut notes = Vec::new();
    fn find(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                find(&p, out);
            } else if p.extension().is_some_and(|x| x == "md")
                && std::fs::read_to_string(&p).unwrap().contains("Plain note")
            {
                out.push(p);
            }
        }
    }
    find(&repo.ws(""), &mut notes);
    assert_eq!(notes.len(), 1, "{notes:?}");
    let note = std::fs::read_to_string(&notes[0]).unwrap();
    std::fs::write(
        &notes[0],
        note.replace("Plain note", &format!("Plain {evil}"))
            .replace("plain body", evil),
    )
    .unwrap();
    // The derived cache may not notice an in-place edit within the same second (a known hole
    // of the engine issue); the files are what is being rendered here.
    std::fs::remove_dir_all(repo.ws("cache")).unwrap();
    let id = doc["data"]["note"]["id"]
        .as_str()
        .or_else(|| doc["data"]["id"].as_str())
        .expect("note id")
        .to_string();
    for args in [
        &["task", "list"][..],
        &["task", "list", "--all"],
        &["next"],
        &["wbs"],
        &["task", "show", "1"],
        &["context", "1"],
        &["status"],
        &["note", "list"],
        &["note", "show", &id],
        &["lint"],
    ] {
        let out = repo.dacli(args).output().unwrap();
        for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let s = String::from_utf8_lossy(bytes);
            assert!(
                !s.chars().any(|c| c.is_control() && c != '\n' && c != '\t'),
                "{args:?} {stream} holds a raw control character: {s:?}"
            );
        }
    }
    let out = repo.dacli(&["task", "list"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Evil \\u{1b}]2;PWNED\\u{7}\\u{1b}[2J"));
    let (code, show) = repo.json(&["task", "show", "1"]);
    assert_eq!(code, 0);
    assert_eq!(show["data"]["title"], evil, "JSON stays exact");
    assert_eq!(show["data"]["context"], evil);
}
