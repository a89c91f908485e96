//! What to do next, said in the caller's own front end. Hints (a refusal's `next`, an error's
//! hints, the brief's Shortcuts) are written once, as `dacli …` commands in backticks; over
//! MCP an agent cannot run a shell command, so [`render`] rewrites each such span into the
//! tool call that does the same (`check_task {"ref":"shop/1","items":[2],"verify":true}`),
//! or into the `cli` tool's `argv` when no Tier-1 tool takes every argument. Over the CLI the
//! text is left as it is.

use serde_json::{Map, Value, json};

use super::tools;

/// Which front end a context serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Front {
    #[default]
    Cli,
    Mcp,
}

/// `text` with its `dacli …` code spans said for `front`.
pub fn render(text: &str, front: Front) -> String {
    match front {
        Front::Cli => text.to_string(),
        Front::Mcp => for_mcp(text),
    }
}

/// [`render`] for MCP, as a plain function (the brief takes it as its command renderer).
pub fn for_mcp(text: &str) -> String {
    let parts: Vec<&str> = text.split('`').collect();
    let mut out = String::with_capacity(text.len());
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push('`');
        }
        // Odd parts are code spans, when their closing backtick exists.
        let closed = i % 2 == 1 && i + 1 < parts.len();
        match part.strip_prefix("dacli ") {
            Some(command) if closed => out.push_str(&tool_call(command)),
            _ if closed && part.starts_with("--") => out.push_str(&argument(part)),
            _ => out.push_str(part),
        }
    }
    out
}

/// Renders, for MCP, every hint a result carries: the strings under `next`, `hint` and
/// `hints` keys at any depth (a per-item refusal inside a preview, say).
pub fn render_fields(data: &mut Value) {
    match data {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match (key.as_str(), value) {
                    ("next" | "hint" | "hints", Value::String(s)) => *s = for_mcp(s),
                    ("hints", Value::Array(items)) => {
                        for item in items.iter_mut() {
                            if let Value::String(s) = item {
                                *s = for_mcp(s);
                            }
                        }
                    }
                    (_, v) => render_fields(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(render_fields),
        _ => {}
    }
}

/// A flag span (`--severity major`, `--rejected`) as the tool argument it is over MCP
/// (`"severity":"major"`, `rejected`): the Tier-1 tools name their fields as the flags do.
fn argument(span: &str) -> String {
    let mut words = span.splitn(2, ' ');
    let flag = words.next().unwrap_or_default().trim_start_matches('-');
    let name = flag.replace('-', "_");
    match words.next() {
        Some(value) => format!(
            "{}:{}",
            Value::String(name),
            Value::String(value.to_string())
        ),
        None => name,
    }
}

/// [`render`] for the CLI.
pub fn for_cli(text: &str) -> String {
    text.to_string()
}

/// One command line (without `dacli`) as a tool call.
fn tool_call(command: &str) -> String {
    let argv: Vec<String> = words(command)
        .into_iter()
        .filter(|w| w != "--json")
        .collect();
    match tier1(&argv) {
        Some((name, args)) if args.is_empty() => name.to_string(),
        Some((name, args)) => format!("{name} {}", Value::Object(args)),
        None => format!("cli {}", json!({ "argv": argv })),
    }
}

/// The positional arguments of the Tier-1 tools whose commands take any, in order.
const POSITIONAL: &[(&str, &[&str])] = &[
    ("get_context", &["ref"]),
    ("claim_task", &["ref"]),
    ("check_task", &["ref"]),
    ("finish_task", &["ref"]),
    ("block_task", &["ref"]),
    ("add_task", &["title"]),
    ("add_note", &["kind", "title"]),
    ("ask", &["ref", "question"]),
    ("answer", &["question", "text"]),
    ("run_shortcut", &["name"]),
    ("queue_next", &["queue"]),
    ("queue_advance", &["queue"]),
];

/// The Tier-1 tool wrapping the longest command prefix of `argv`, with the arguments the rest
/// of `argv` means; `None` when a word has no field in the tool's schema.
fn tier1(argv: &[String]) -> Option<(&'static str, Map<String, Value>)> {
    let tool = tools::registry()
        .iter()
        .filter(|t| t.tier == 1)
        .filter(|t| {
            let words: Vec<&str> = t.wraps.split_whitespace().collect();
            argv.len() >= words.len() && words.iter().zip(argv).all(|(w, a)| w == a)
        })
        .max_by_key(|t| t.wraps.split_whitespace().count())?;
    let skip = tool.wraps.split_whitespace().count();
    let schema = tool.input_schema();
    let props = schema.get("properties")?.as_object()?;
    let positional = POSITIONAL
        .iter()
        .find(|(n, _)| *n == tool.name)
        .map_or(&[][..], |(_, p)| *p);
    let mut args = Map::new();
    let mut next_positional = positional.iter();
    let mut rest = argv[skip..].iter();
    while let Some(word) = rest.next() {
        let Some(flag) = word.strip_prefix("--") else {
            let key = next_positional.next()?;
            args.insert((*key).to_string(), typed(props.get(*key)?, word));
            continue;
        };
        let (flag, inline) = match flag.split_once('=') {
            Some((f, v)) => (f, Some(v.to_string())),
            None => (flag, None),
        };
        match flag {
            "no-block" => {
                args.insert("blocks".into(), json!(false));
                continue;
            }
            "allow-unverified" => {
                args.insert("close_as".into(), json!("unverified"));
                continue;
            }
            "abandon" => {
                args.insert("close_as".into(), json!("abandoned"));
                continue;
            }
            _ => {}
        }
        let key = if flag == "n" {
            "items".to_string()
        } else {
            flag.replace('-', "_")
        };
        let prop = props.get(&key)?;
        let kind = prop.get("type").and_then(Value::as_str).unwrap_or("string");
        if kind == "boolean" {
            args.insert(key, json!(true));
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => rest.next()?.clone(),
        };
        if kind == "array" {
            let item = prop.get("items").cloned().unwrap_or(Value::Null);
            let entry = args.entry(key).or_insert_with(|| json!([]));
            entry.as_array_mut()?.push(typed(&item, &value));
        } else {
            args.insert(key, typed(prop, &value));
        }
    }
    Some((tool.name, args))
}

/// `word` as the schema node `prop` types it (an integer stays text when it is a placeholder).
fn typed(prop: &Value, word: &str) -> Value {
    match prop.get("type").and_then(Value::as_str) {
        Some("integer") => word
            .parse::<i64>()
            .map_or_else(|_| json!(word), |n| json!(n)),
        _ => json!(word),
    }
}

/// The words of a command line as a shell would split it: blanks separate, double and single
/// quotes group.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_spans_become_arguments_over_mcp() {
        assert_eq!(
            for_mcp("Add `--severity major` (fix not obvious) or `--rejected`."),
            "Add `\"severity\":\"major\"` (fix not obvious) or `rejected`."
        );
        assert_eq!(
            for_cli("Add `--severity major`."),
            "Add `--severity major`."
        );
    }

    #[test]
    fn commands_become_tool_calls_over_mcp_and_stay_commands_over_the_cli() {
        let next = "Check 2 with `dacli task check shop/004-x --n 2 --verify` once it holds; if it is wrong, `dacli ask`.";
        assert_eq!(render(next, Front::Cli), next);
        assert_eq!(
            render(next, Front::Mcp),
            "Check 2 with `check_task {\"ref\":\"shop/004-x\",\"items\":[2],\"verify\":true}` once it holds; if it is wrong, `ask`."
        );
        assert_eq!(
            for_mcp("`dacli run test` — tests"),
            "`run_shortcut {\"name\":\"test\"}` — tests"
        );
        assert_eq!(
            for_mcp("`dacli run --list`"),
            "`run_shortcut {\"list\":true}`"
        );
        assert_eq!(
            for_mcp("record it as `dacli note add finding \"…\" --about <ref>`"),
            "record it as `add_note {\"kind\":\"finding\",\"title\":\"…\",\"about\":\"<ref>\"}`"
        );
        // No Tier-1 tool takes it: the `cli` tool does.
        assert_eq!(
            for_mcp("`dacli role show builder`"),
            "`cli {\"argv\":[\"role\",\"show\",\"builder\"]}`"
        );
        let mut data = json!({"items": [{"refused": {"next": "`dacli ask 1 \"…\"`"}}], "title": "`dacli ask`"});
        render_fields(&mut data);
        assert_eq!(
            data["items"][0]["refused"]["next"],
            "`ask {\"ref\":\"1\",\"question\":\"…\"}`"
        );
        assert_eq!(data["title"], "`dacli ask`");
        // A span that is not a dacli command, and an unclosed backtick, are left alone.
        assert_eq!(
            for_mcp("`cargo test` and `dacli"),
            "`cargo test` and `dacli"
        );
    }
}
