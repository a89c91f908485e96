//! Validation of tool arguments against the published input schemas, before any request is
//! built or any command runs (spec MCP.md §3), with the `jsonschema` crate (JSON Schema
//! 2020-12, no network or file resolution: the schemas reference nothing). Rules across
//! fields, which the portable dialect leaves out of the schemas, are checked next by
//! `requests`. Messages name the field and the expected form and never echo a value.

use std::collections::HashMap;

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

use crate::dispatch::tools;

/// The longest string any field may carry, checked before anything else reads it.
pub const MAX_FIELD: usize = 256 * 1024;

/// Why arguments do not fit their schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The offending field (`target.pr`, `items[1]`), empty for the whole object.
    pub field: String,
    pub message: String,
}

fn invalid(field: &str, message: impl Into<String>) -> Invalid {
    Invalid {
        field: field.to_string(),
        message: message.into(),
    }
}

/// The registry's schemas, compiled once when the server starts (the server keeps one
/// validator for its lifetime); immutable afterwards, so calls may share it.
pub struct Validator {
    /// Each tool's schema and its compiled validator, by tool name.
    compiled: HashMap<&'static str, (Value, jsonschema::Validator)>,
}

impl Default for Validator {
    fn default() -> Self {
        Validator::new()
    }
}

impl Validator {
    pub fn new() -> Validator {
        let compiled = tools::registry()
            .iter()
            .filter_map(|t| {
                let schema = t.input_schema();
                compile(&schema).ok().map(|v| (t.name, (schema, v)))
            })
            .collect();
        Validator { compiled }
    }

    /// Checks the arguments of a call of `tool` against its schema, compiled once.
    pub fn check_tool(&self, tool: &tools::Tool, value: &Value) -> Result<(), Invalid> {
        match self.compiled.get(tool.name) {
            Some((schema, validator)) => self.run(validator, schema, value),
            None => self.check(&tool.input_schema(), value),
        }
    }

    /// Checks `value` against `schema`: strings over [`MAX_FIELD`] first, then the schema;
    /// of several violations, an unknown field first, then a missing one, then the rest in
    /// the order the validator finds them.
    pub fn check(&self, schema: &Value, value: &Value) -> Result<(), Invalid> {
        let validator = compile(schema)
            .map_err(|_| invalid("", "this tool's schema does not compile (a dacli bug)"))?;
        self.run(&validator, schema, value)
    }

    fn run(
        &self,
        validator: &jsonschema::Validator,
        schema: &Value,
        value: &Value,
    ) -> Result<(), Invalid> {
        too_long(value, "")?;
        let mut found: Vec<(u8, Invalid)> = validator
            .iter_errors(value)
            .map(|e| {
                let path = field_of(e.instance_path().as_str());
                describe(e.kind(), &path, e.instance())
            })
            .collect();
        found.sort_by_key(|(rank, _)| *rank);
        match found.into_iter().next() {
            Some((_, first)) => Err(first),
            None => integers(schema, value, ""),
        }
    }
}

/// JSON Schema counts `2.0` as an integer; the commands' requests do not, so an integer
/// field written with a fraction part is refused here rather than failing inside a command.
fn integers(schema: &Value, value: &Value, path: &str) -> Result<(), Invalid> {
    match value {
        Value::Number(n) if n.is_f64() && schema["type"] == "integer" => Err(invalid(
            path,
            format!("{} must be an integer, not a fractional number", name(path)),
        )),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| integers(&schema["items"], v, &format!("{path}[{i}]"))),
        Value::Object(map) => map
            .iter()
            .try_for_each(|(k, v)| integers(&schema["properties"][k.as_str()], v, &join(path, k))),
        _ => Ok(()),
    }
}

fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::draft202012::new(schema).map_err(|e| e.to_string())
}

/// The first string longer than [`MAX_FIELD`], in document order.
fn too_long(value: &Value, path: &str) -> Result<(), Invalid> {
    match value {
        Value::String(s) if s.len() > MAX_FIELD => Err(invalid(
            path,
            format!("{} is longer than {MAX_FIELD} bytes", name(path)),
        )),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| too_long(v, &format!("{path}[{i}]"))),
        Value::Object(map) => map
            .iter()
            .try_for_each(|(k, v)| too_long(v, &join(path, k))),
        _ => Ok(()),
    }
}

/// A JSON Pointer (`/target/pr`, `/items/1`) as the field names read (`target.pr`,
/// `items[1]`).
fn field_of(pointer: &str) -> String {
    let mut out = String::new();
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) && !out.is_empty() {
            out.push_str(&format!("[{segment}]"));
        } else {
            out = join(&out, &segment);
        }
    }
    out
}

/// A violation as words, with its rank: unknown fields first, then missing ones.
fn describe(kind: &ValidationErrorKind, path: &str, instance: &Value) -> (u8, Invalid) {
    match kind {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let field = join(path, unexpected.first().map_or("", String::as_str));
            (
                0,
                invalid(&field, format!("{} is not a parameter here", name(&field))),
            )
        }
        ValidationErrorKind::Required { property } => {
            let field = join(path, &plain(property));
            (1, invalid(&field, format!("{} is required", name(&field))))
        }
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                jsonschema::error::TypeKind::Single(t) => expected(&t.to_string()),
                jsonschema::error::TypeKind::Multiple(_) => "another type",
            };
            (
                2,
                invalid(
                    path,
                    format!("{} must be {expected}, not {}", name(path), what(instance)),
                ),
            )
        }
        ValidationErrorKind::Enum { options } => {
            let list: Vec<String> = options
                .as_array()
                .map(|a| a.iter().map(plain).collect())
                .unwrap_or_default();
            (
                2,
                invalid(
                    path,
                    format!("{} must be one of: {}", name(path), list.join(", ")),
                ),
            )
        }
        ValidationErrorKind::Minimum { limit } => (
            2,
            invalid(path, format!("{} must be at least {limit}", name(path))),
        ),
        ValidationErrorKind::Maximum { limit } => (
            2,
            invalid(path, format!("{} must be at most {limit}", name(path))),
        ),
        ValidationErrorKind::MinItems { limit } => (
            2,
            invalid(
                path,
                format!(
                    "{} needs at least {limit} item{}",
                    name(path),
                    if *limit == 1 { "" } else { "s" }
                ),
            ),
        ),
        ValidationErrorKind::Pattern { pattern } => (
            2,
            invalid(path, format!("{} must match {pattern}", name(path))),
        ),
        // The registry uses no other keyword (the dialect test keeps it so); the value is
        // never quoted back.
        _ => (
            2,
            invalid(path, format!("{} does not fit its schema", name(path))),
        ),
    }
}

fn expected(t: &str) -> &'static str {
    match t {
        "object" => "an object",
        "array" => "an array",
        "string" => "a string",
        "boolean" => "a boolean (true or false)",
        "integer" => "an integer",
        "null" => "null",
        _ => "a number",
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

pub(super) fn name(path: &str) -> String {
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

/// What kind of value a field holds, as the messages name it.
pub(super) fn what(v: &Value) -> &'static str {
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
    use serde_json::json;

    fn check(tool: &str, args: Value) -> Result<(), Invalid> {
        Validator::new().check_tool(tools::find(tool).expect("tool"), &args)
    }

    #[test]
    fn every_published_schema_compiles() {
        let v = Validator::new();
        assert_eq!(v.compiled.len(), tools::registry().len());
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
        assert_eq!(e.message, "`items[0]` must be at least 1");
        let e = check("list_tasks", json!({"schema_version": 1, "limit": 2.0}))
            .expect_err("2.0 is not an integer to the commands");
        assert_eq!(e.field, "limit");
        let e = check(
            "check_task",
            json!({"schema_version": 1, "ref": "x", "items": [1, 2.0]}),
        )
        .expect_err("nested");
        assert_eq!(e.field, "items[1]");
        let e = check(
            "diagnose_pr",
            json!({"schema_version": 1, "target": {"pr": "12"}}),
        )
        .expect_err("nested");
        assert_eq!(e.field, "target.pr");
        let e = check("claim_task", json!({"schema_version": 1})).expect_err("required");
        assert_eq!(e.message, "`ref` is required");
    }

    #[test]
    fn long_strings_are_refused_before_anything_reads_them() {
        let long = "x".repeat(MAX_FIELD + 1);
        let e = check("claim_task", json!({"schema_version": 1, "ref": long})).expect_err("long");
        assert_eq!(e.message, format!("`ref` is longer than {MAX_FIELD} bytes"));
        let e = check("cli", json!({"schema_version": 1, "argv": ["a", long]})).expect_err("long");
        assert_eq!(e.field, "argv[1]");
    }

    #[test]
    fn pointers_read_as_field_names() {
        assert_eq!(field_of(""), "");
        assert_eq!(field_of("/target/pr"), "target.pr");
        assert_eq!(field_of("/items/1"), "items[1]");
        assert_eq!(field_of("/params/a~1b"), "params.a/b");
    }
}
