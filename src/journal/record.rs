//! JSON values in TOML records: transaction plans, step guards and observations are JSON in
//! memory (they are digested as canonical JSON) and TOML on disk (FORMAT §18).

use serde_json::{Map, Number, Value};
use toml_edit::{Array, InlineTable, Item};

/// A JSON value as an inline TOML value; `null` has no TOML form and is dropped (from objects
/// and arrays alike), so `None` means "absent".
pub fn to_inline(value: &Value) -> Option<toml_edit::Value> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.to_string().into(),
        },
        Value::String(s) => s.as_str().into(),
        Value::Array(items) => {
            let mut arr = Array::new();
            for item in items.iter().filter_map(to_inline) {
                arr.push(item);
            }
            toml_edit::Value::Array(arr)
        }
        Value::Object(map) => {
            let mut t = InlineTable::new();
            for (k, v) in map {
                if let Some(v) = to_inline(v) {
                    t.insert(k, v);
                }
            }
            toml_edit::Value::InlineTable(t)
        }
    })
}

/// The table `[path]` of `map` written as TOML text straight onto `out`: a non-empty array of
/// objects becomes `[[...]]` blocks of inline values (so a long plan is one block per entry,
/// not one endless line), an object a subtable, `null` nothing. Byte for byte what `toml_edit`
/// prints for the same table built as a document when it follows other content (each header
/// after a blank line, then its values, then its subtables in key order); the tests hold the
/// two equal.
///
/// Why not `toml_edit`: its document of a plan of 5,000 branches takes about 60 MB to print a
/// 4 MB text; here only one entry's value is built at a time.
pub fn write_table(out: &mut String, path: &str, map: &Map<String, Value>) {
    out.push_str("\n[");
    out.push_str(path);
    out.push_str("]\n");
    for (k, v) in map {
        if !is_table_of_tables(v) && !v.is_object() {
            write_entry(out, k, v);
        }
    }
    let child = |k: &str| format!("{path}.{}", toml_edit::Key::new(k));
    for (k, v) in map {
        match v {
            Value::Array(items) if is_table_of_tables(v) => {
                let child = child(k);
                for m in items.iter().filter_map(Value::as_object) {
                    out.push_str("\n[[");
                    out.push_str(&child);
                    out.push_str("]]\n");
                    for (k, v) in m {
                        write_entry(out, k, v);
                    }
                }
            }
            Value::Object(m) => write_table(out, &child(k), m),
            _ => {}
        }
    }
}

/// True for what is written as `[[...]]` blocks: a non-empty array of objects.
fn is_table_of_tables(v: &Value) -> bool {
    matches!(v, Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object))
}

/// `key = value` and a newline, for a value TOML can hold (`null` is dropped).
fn write_entry(out: &mut String, key: &str, v: &Value) {
    use std::fmt::Write as _;
    if let Some(v) = to_inline(v) {
        let _ = writeln!(out, "{} = {v}", toml_edit::Key::new(key));
    }
}

/// A TOML item as JSON: tables become objects, date-times their RFC 3339 text.
pub fn to_json(item: &Item) -> Value {
    match item {
        Item::None => Value::Null,
        Item::Value(v) => value_to_json(v),
        Item::Table(t) => {
            Value::Object(t.iter().map(|(k, v)| (k.to_string(), to_json(v))).collect())
        }
        Item::ArrayOfTables(a) => {
            Value::Array(a.iter().map(|t| to_json(&Item::Table(t.clone()))).collect())
        }
    }
}

fn value_to_json(v: &toml_edit::Value) -> Value {
    match v {
        toml_edit::Value::String(s) => Value::String(s.value().clone()),
        toml_edit::Value::Integer(i) => Value::Number(Number::from(*i.value())),
        toml_edit::Value::Float(f) => {
            Number::from_f64(*f.value()).map_or(Value::Null, Value::Number)
        }
        toml_edit::Value::Boolean(b) => Value::Bool(*b.value()),
        toml_edit::Value::Datetime(d) => Value::String(d.value().to_string()),
        toml_edit::Value::Array(a) => Value::Array(a.iter().map(value_to_json).collect()),
        toml_edit::Value::InlineTable(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.to_string(), value_to_json(v)))
                .collect(),
        ),
    }
}

/// Drops every `null` from a JSON value, as writing it to TOML does; comparing a plan with its
/// frozen copy goes through this.
pub fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(
            items
                .iter()
                .filter(|v| !v.is_null())
                .map(without_nulls)
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;
    use toml_edit::{ArrayOfTables, Table};

    // The document-building layout the streamed text must equal.
    /// A JSON object as a TOML table whose arrays of objects become `[[...]]` tables, so a long
    /// plan is one entry per block rather than one endless line.
    pub fn to_table(map: &Map<String, Value>) -> Table {
        let mut table = Table::new();
        for (k, v) in map {
            match v {
                Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object) => {
                    let mut aot = ArrayOfTables::new();
                    for item in items {
                        if let Value::Object(m) = item {
                            aot.push(inline_table(m));
                        }
                    }
                    table.insert(k, Item::ArrayOfTables(aot));
                }
                Value::Object(m) => {
                    table.insert(k, Item::Table(to_table(m)));
                }
                other => {
                    if let Some(v) = to_inline(other) {
                        table.insert(k, Item::Value(v));
                    }
                }
            }
        }
        table
    }

    /// A table whose values are all inline (the body of one `[[...]]` block).
    fn inline_table(map: &Map<String, Value>) -> Table {
        let mut table = Table::new();
        for (k, v) in map {
            if let Some(v) = to_inline(v) {
                table.insert(k, Item::Value(v));
            }
        }
        table
    }

    /// What `toml_edit` prints for `doc` with `[plan]` from [`to_table`] after a first key.
    fn printed_by_toml_edit(plan: &Map<String, Value>) -> String {
        let mut doc = toml_edit::DocumentMut::new();
        doc["id"] = toml_edit::value("x");
        doc["plan"] = Item::Table(to_table(plan));
        doc.to_string()
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let key = prop_oneof![
            "[a-z_]{1,8}",
            Just("with space".to_string()),
            Just("dotted.key".to_string()),
            Just("nul\0 cr\r esc\u{1b}[1m # $(rm -rf /) ]]".to_string()),
            "\\PC{0,6}",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|i| json!(i)),
            "\\PC{0,12}".prop_map(Value::String),
            Just(json!(
                "quote \" and \\ and ' and\nnewline, \r\n, \0, \u{7f}, \u{1b}[31m, `$(id)`, ## heading"
            )),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((key.clone(), inner), 0..5)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_streamed_plan_is_what_toml_edit_prints(
            plan in prop::collection::vec(("[a-z]{1,6}", json_value()), 0..6)
        ) {
            let plan: Map<String, Value> = plan.into_iter().collect();
            let mut streamed = "id = \"x\"\n".to_string();
            write_table(&mut streamed, "plan", &plan);
            prop_assert_eq!(&streamed, &printed_by_toml_edit(&plan));
            let back: toml_edit::DocumentMut = streamed.parse().expect("valid TOML");
            prop_assert_eq!(to_json(&back["plan"]), without_nulls(&Value::Object(plan)));
        }
    }

    #[test]
    fn a_plan_of_candidates_streams_as_blocks() {
        let plan = json!({
            "base": {"name": "main"},
            "candidates": [{"ref": "refs/heads/a", "proofs": [{"p": 1}]}, {"ref": "b"}],
            "count": 2,
        });
        let mut out = String::new();
        write_table(&mut out, "plan", plan.as_object().expect("object"));
        assert_eq!(
            out,
            "\n[plan]\ncount = 2\n\n[plan.base]\nname = \"main\"\n\n[[plan.candidates]]\nref = \"refs/heads/a\"\nproofs = [{ p = 1 }]\n\n[[plan.candidates]]\nref = \"b\"\n"
        );
    }

    #[test]
    fn a_plan_survives_the_round_trip_without_its_nulls() {
        let plan = json!({
            "base": {"name": "main", "sha": "a".repeat(40)},
            "candidates": [
                {"ref": "refs/heads/dacli/002-x", "keep_reason": null, "proofs": [{"predicate": "p", "result": "proven"}]},
                {"ref": "refs/heads/dacli/003-y", "keep_reason": "unique_commits", "proofs": []}
            ],
            "count": 2,
            "empty": []
        });
        let mut doc = toml_edit::DocumentMut::new();
        doc["plan"] = Item::Table(to_table(plan.as_object().expect("object")));
        let text = doc.to_string();
        let back: toml_edit::DocumentMut = text.parse().expect("valid TOML");
        assert_eq!(to_json(&back["plan"]), without_nulls(&plan), "{text}");
    }
}
