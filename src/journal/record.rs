//! JSON values in TOML records: transaction plans, step guards and observations are JSON in
//! memory (they are digested as canonical JSON) and TOML on disk (FORMAT §18).

use serde_json::{Map, Number, Value};
use toml_edit::{Array, ArrayOfTables, InlineTable, Item, Table};

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
    use serde_json::json;

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
