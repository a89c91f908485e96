//! Validation of tool arguments against the published input schemas, before any request is
//! built or any command runs (spec MCP.md §3). It covers the subset of JSON Schema 2020-12 the
//! registry uses; `schema::tests` keeps the registry inside that subset. Messages name the
//! field and the expected form and never echo a value.

use std::cell::RefCell;
use std::collections::HashMap;

use regex::Regex;
use serde_json::{Map, Value};

/// The longest string any field may carry, checked before anything else reads it.
pub const MAX_FIELD: usize = 256 * 1024;

/// Why arguments do not fit their schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The offending field (`estimate.probable`, `items[1]`), empty for the whole object.
    pub field: String,
    pub message: String,
}

fn invalid(field: &str, message: impl Into<String>) -> Invalid {
    Invalid {
        field: field.to_string(),
        message: message.into(),
    }
}

/// The keywords the validator understands; anything else in a schema is a registry bug.
#[cfg(test)]
const KEYWORDS: [&str; 19] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "enum",
    "const",
    "pattern",
    "minimum",
    "maximum",
    "minItems",
    "items",
    "oneOf",
    "anyOf",
    "allOf",
    "if",
    "then",
    "default",
    "description",
    "title",
];

/// A validator with a cache of compiled patterns (the server keeps one for its lifetime).
#[derive(Default)]
pub struct Validator {
    patterns: RefCell<HashMap<String, Regex>>,
}

impl Validator {
    pub fn new() -> Validator {
        Validator::default()
    }

    /// Checks `value` against `schema`; the first violation found, in schema order.
    pub fn check(&self, schema: &Value, value: &Value) -> Result<(), Invalid> {
        self.at(schema, value, "")
    }

    fn matches(&self, schema: &Value, value: &Value) -> bool {
        self.at(schema, value, "").is_ok()
    }

    fn at(&self, schema: &Value, value: &Value, path: &str) -> Result<(), Invalid> {
        let Some(s) = schema.as_object() else {
            return Ok(());
        };
        if let Some(t) = s.get("type").and_then(Value::as_str) {
            check_type(t, value, path)?;
        }
        if let Some(c) = s.get("const")
            && value != c
        {
            return Err(invalid(path, format!("{} must be {c}", name(path))));
        }
        if let Some(values) = s.get("enum").and_then(Value::as_array)
            && !values.contains(value)
        {
            let list: Vec<String> = values.iter().map(plain).collect();
            return Err(invalid(
                path,
                format!("{} must be one of: {}", name(path), list.join(", ")),
            ));
        }
        match value {
            Value::String(text) => self.string(s, text, path)?,
            Value::Number(n) => number(s, n.as_f64().unwrap_or(f64::NAN), path)?,
            Value::Array(items) => self.array(s, items, path)?,
            Value::Object(map) => self.object(s, map, path)?,
            _ => {}
        }
        self.combinators(s, value, path)
    }

    fn string(&self, s: &Map<String, Value>, text: &str, path: &str) -> Result<(), Invalid> {
        if text.len() > MAX_FIELD {
            return Err(invalid(
                path,
                format!("{} is longer than {MAX_FIELD} bytes", name(path)),
            ));
        }
        if let Some(p) = s.get("pattern").and_then(Value::as_str)
            && !self.pattern_matches(p, text)
        {
            return Err(invalid(path, format!("{} must match {p}", name(path))));
        }
        Ok(())
    }

    fn pattern_matches(&self, pattern: &str, text: &str) -> bool {
        let mut cache = self.patterns.borrow_mut();
        if !cache.contains_key(pattern) {
            match Regex::new(pattern) {
                Ok(re) => {
                    cache.insert(pattern.to_string(), re);
                }
                // A pattern that does not compile is a registry bug the tests catch; fail
                // closed rather than accept anything.
                Err(_) => return false,
            }
        }
        cache.get(pattern).is_some_and(|re| re.is_match(text))
    }

    fn array(&self, s: &Map<String, Value>, items: &[Value], path: &str) -> Result<(), Invalid> {
        if let Some(min) = s.get("minItems").and_then(Value::as_u64)
            && (items.len() as u64) < min
        {
            return Err(invalid(
                path,
                format!(
                    "{} needs at least {min} item{}",
                    name(path),
                    if min == 1 { "" } else { "s" }
                ),
            ));
        }
        if let Some(item) = s.get("items") {
            for (i, v) in items.iter().enumerate() {
                self.at(item, v, &format!("{path}[{}]", i))?;
            }
        }
        Ok(())
    }

    fn object(
        &self,
        s: &Map<String, Value>,
        map: &Map<String, Value>,
        path: &str,
    ) -> Result<(), Invalid> {
        let props = s.get("properties").and_then(Value::as_object);
        let extra = s.get("additionalProperties");
        for (key, v) in map {
            let field = join(path, key);
            match props.and_then(|p| p.get(key)) {
                Some(_) => {}
                None => match extra {
                    Some(Value::Bool(false)) => {
                        return Err(invalid(
                            &field,
                            format!("{} is not a parameter here", name(&field)),
                        ));
                    }
                    Some(schema @ Value::Object(_)) => self.at(schema, v, &field)?,
                    _ => {}
                },
            }
        }
        if let Some(required) = s.get("required").and_then(Value::as_array) {
            for r in required.iter().filter_map(Value::as_str) {
                if !map.contains_key(r) {
                    let field = join(path, r);
                    return Err(invalid(&field, format!("{} is required", name(&field))));
                }
            }
        }
        if let Some(props) = props {
            for (key, schema) in props {
                if let Some(v) = map.get(key) {
                    self.at(schema, v, &join(path, key))?;
                }
            }
        }
        Ok(())
    }

    fn combinators(
        &self,
        s: &Map<String, Value>,
        value: &Value,
        path: &str,
    ) -> Result<(), Invalid> {
        if let Some(branches) = s.get("oneOf").and_then(Value::as_array) {
            let hits = branches.iter().filter(|b| self.matches(b, value)).count();
            if hits != 1 {
                let forms = forms(branches, " or ");
                let message = match (hits, forms) {
                    (0, Some(f)) => format!("give {f}"),
                    (_, Some(f)) => format!("give only one of {f}"),
                    (_, None) => format!("{} must match exactly one allowed form", name(path)),
                };
                return Err(invalid(path, message));
            }
        }
        if let Some(branches) = s.get("anyOf").and_then(Value::as_array)
            && !branches.iter().any(|b| self.matches(b, value))
        {
            let message = match forms(branches, ", or ") {
                Some(f) => format!("give {f}"),
                None => format!("{} matches none of the allowed forms", name(path)),
            };
            return Err(invalid(path, message));
        }
        if let Some(all) = s.get("allOf").and_then(Value::as_array) {
            for rule in all {
                self.at(rule, value, path)?;
            }
        }
        if let (Some(cond), Some(then)) = (s.get("if"), s.get("then"))
            && self.matches(cond, value)
            && let Err(e) = self.at(then, value, path)
        {
            return Err(Invalid {
                message: format!("{} {}", e.message, condition(cond)),
                field: e.field,
            });
        }
        Ok(())
    }
}

fn check_type(t: &str, value: &Value, path: &str) -> Result<(), Invalid> {
    let ok = match t {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        _ => true,
    };
    if ok {
        return Ok(());
    }
    let expected = match t {
        "object" => "an object",
        "array" => "an array",
        "string" => "a string",
        "boolean" => "a boolean (true or false)",
        "integer" => "an integer",
        _ => "a number",
    };
    Err(invalid(
        path,
        format!("{} must be {expected}, not {}", name(path), kind(value)),
    ))
}

fn number(s: &Map<String, Value>, n: f64, path: &str) -> Result<(), Invalid> {
    if let Some(min) = s.get("minimum").and_then(Value::as_f64)
        && n < min
    {
        return Err(invalid(
            path,
            format!("{} must be at least {min}", name(path)),
        ));
    }
    if let Some(max) = s.get("maximum").and_then(Value::as_f64)
        && n > max
    {
        return Err(invalid(
            path,
            format!("{} must be at most {max}", name(path)),
        ));
    }
    Ok(())
}

/// Branches that only require fields, described as "`a`", "`b` and `c`" joined by `sep`.
fn forms(branches: &[Value], sep: &str) -> Option<String> {
    let mut out = Vec::new();
    for b in branches {
        let map = b.as_object()?;
        if map.len() != 1 {
            return None;
        }
        let fields: Vec<String> = map
            .get("required")?
            .as_array()?
            .iter()
            .map(|f| format!("`{}`", plain(f)))
            .collect();
        out.push(match fields.as_slice() {
            [one] => one.clone(),
            [init @ .., last] => format!("{} and {last}", init.join(", ")),
            [] => return None,
        });
    }
    Some(out.join(sep))
}

/// An `if` schema as words: "when `mode` is `apply`", "when `close_as` is given".
fn condition(cond: &Value) -> String {
    let props = cond.get("properties").and_then(Value::as_object);
    let required: Vec<String> = cond
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().map(plain).collect())
        .unwrap_or_default();
    let parts: Vec<String> = required
        .iter()
        .map(|field| {
            let spec = props.and_then(|p| p.get(field));
            match (
                spec.and_then(|s| s.get("const")),
                spec.and_then(|s| s.get("enum")).and_then(Value::as_array),
            ) {
                (Some(c), _) => format!("`{field}` is `{}`", plain(c)),
                (None, Some(values)) => {
                    let v: Vec<String> = values.iter().map(|v| format!("`{}`", plain(v))).collect();
                    format!("`{field}` is {}", v.join(" or "))
                }
                _ => format!("`{field}` is given"),
            }
        })
        .collect();
    format!("when {}", parts.join(" and "))
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn name(path: &str) -> String {
    if path.is_empty() {
        "the arguments".into()
    } else {
        format!("`{path}`")
    }
}

fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a fractional number",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::tools;
    use serde_json::json;

    fn keywords_of(schema: &Value, out: &mut Vec<String>) {
        let Some(map) = schema.as_object() else {
            return;
        };
        for (k, v) in map {
            out.push(k.clone());
            match k.as_str() {
                "properties" => {
                    for sub in v.as_object().into_iter().flat_map(|m| m.values()) {
                        keywords_of(sub, out);
                    }
                }
                "oneOf" | "anyOf" | "allOf" => {
                    for sub in v.as_array().into_iter().flatten() {
                        keywords_of(sub, out);
                    }
                }
                "items" | "if" | "then" | "additionalProperties" => keywords_of(v, out),
                _ => {}
            }
        }
    }

    #[test]
    fn the_registry_uses_only_keywords_the_validator_knows_and_patterns_compile() {
        for tool in tools::registry() {
            let mut found = Vec::new();
            let schema = tool.input_schema();
            keywords_of(&schema, &mut found);
            for k in found {
                assert!(KEYWORDS.contains(&k.as_str()), "{}: `{k}`", tool.name);
            }
            let text = schema.to_string();
            for p in text.split("\"pattern\":\"").skip(1) {
                let p = p.split('"').next().expect("closed");
                assert!(Regex::new(p).is_ok(), "{}: {p}", tool.name);
            }
        }
    }

    fn check(tool: &str, args: Value) -> Result<(), Invalid> {
        let schema = tools::find(tool).expect("tool").input_schema();
        Validator::new().check(&schema, &args)
    }

    #[test]
    fn names_the_field_and_the_expected_form() {
        let e = check(
            "list_tasks",
            json!({"schema_version": 1, "ready": "yes please"}),
        )
        .expect_err("wrong type");
        assert_eq!(e.field, "ready");
        assert_eq!(
            e.message,
            "`ready` must be a boolean (true or false), not a string"
        );
        let e = check(
            "add_note",
            json!({"schema_version": 1, "kind": "idea", "title": "t"}),
        )
        .expect_err("enum");
        assert_eq!(
            e.message,
            "`kind` must be one of: decision, finding, metric, ref"
        );
        let e = check(
            "claim_task",
            json!({"schema_version": 1, "ref": "x", "token": "s3cret"}),
        )
        .expect_err("unknown");
        assert_eq!(e.field, "token");
        assert!(!e.message.contains("s3cret"));
        let e =
            check("list_tasks", json!({"schema_version": 1, "limit": 1.5})).expect_err("integer");
        assert_eq!(
            e.message,
            "`limit` must be an integer, not a fractional number"
        );
        let e = check(
            "check_task",
            json!({"schema_version": 1, "ref": "x", "items": [0]}),
        )
        .expect_err("minimum");
        assert_eq!(e.field, "items[0]");
    }

    #[test]
    fn conditional_requirements_read_as_sentences() {
        let e = check("check_task", json!({"schema_version": 1, "ref": "x"})).expect_err("none");
        assert_eq!(e.message, "give `items` or `all`");
        let e = check(
            "check_task",
            json!({"schema_version": 1, "ref": "x", "items": [1], "all": true}),
        )
        .expect_err("both");
        assert_eq!(e.message, "give only one of `items` or `all`");
        let e = check(
            "finish_task",
            json!({"schema_version": 1, "ref": "x", "close_as": "abandoned"}),
        )
        .expect_err("reason");
        assert_eq!(e.message, "`reason` is required when `close_as` is given");
        let e = check(
            "queue_advance",
            json!({"schema_version": 1, "queue": "q", "outcome": "dead"}),
        )
        .expect_err("reason");
        assert_eq!(
            e.message,
            "`reason` is required when `outcome` is `failed` or `dead`"
        );
        let e = check(
            "reconcile_event_journal",
            json!({"schema_version": 1, "operation": "scan", "mode": "apply"}),
        )
        .expect_err("digest");
        assert_eq!(
            e.message,
            "`expect_digest` is required when `mode` is `apply`"
        );
        assert!(
            check(
                "diagnose_pr",
                json!({"schema_version": 1, "target": {"pr": 12}})
            )
            .is_ok()
        );
        let e = check(
            "diagnose_pr",
            json!({"schema_version": 1, "target": {"pr": 12, "branch": "b"}}),
        )
        .expect_err("two targets");
        assert_eq!(e.field, "target");
    }

    #[test]
    fn patterns_and_long_strings_are_checked() {
        let e = check(
            "status",
            json!({"schema_version": 1, "project": "Bad Slug"}),
        )
        .expect_err("pattern");
        assert_eq!(e.field, "project");
        assert!(
            check(
                "status",
                json!({"schema_version": 1, "project": "p-checkout"})
            )
            .is_ok()
        );
        let long = "x".repeat(MAX_FIELD + 1);
        let e = check("claim_task", json!({"schema_version": 1, "ref": long})).expect_err("long");
        assert_eq!(e.message, format!("`ref` is longer than {MAX_FIELD} bytes"));
    }
}
