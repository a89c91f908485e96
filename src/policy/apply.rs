//! The preview/apply contract shared by every tool that changes git, the workspace or GitHub
//! (GIT_GITHUB.md B0): a plan is digested over its canonical JSON, and an apply runs only the
//! plan whose digest the caller reviewed.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::model::Refusal;

/// A plan value that has no canonical form: floats are refused, so a digest never depends on
/// how a number happens to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotCanonical(pub String);

/// The canonical JSON of `value`: object keys sorted by their UTF-8 bytes at every depth, no
/// insignificant whitespace, integers only (RFC 8785 for the values plans hold). Independent of
/// how `serde_json` orders maps, which feature unification can change for the whole build.
pub fn canonical_json(value: &Value) -> Result<String, NotCanonical> {
    let mut out = String::new();
    write_canonical(value, &mut out)?;
    Ok(out)
}

fn write_canonical(value: &Value, out: &mut String) -> Result<(), NotCanonical> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if n.is_f64() {
                return Err(NotCanonical(format!("the float {n} has no canonical form")));
            }
            out.push_str(&n.to_string());
        }
        Value::String(s) => out.push_str(&Value::String(s.clone()).to_string()),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key.as_str()], out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// `sha256:` and the lower-case hex SHA-256 of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(bytes))
}

/// The lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The digest of a plan: `sha256:` + hex of the SHA-256 of its canonical JSON.
pub fn plan_digest(plan: &Value) -> Result<String, NotCanonical> {
    Ok(sha256_digest(canonical_json(plan)?.as_bytes()))
}

/// [`plan_digest`] of a plan not yet made a [`Value`]: the same digest, computed from the
/// plan's compact JSON text, which is read once and canonicalised member by member. Large
/// plans stay small in memory this way: a `Value` of ten thousand observations takes about
/// six times the memory of their text.
pub fn plan_digest_of<T: serde::Serialize>(plan: &T) -> Result<String, NotCanonical> {
    let text = serde_json::to_string(plan)
        .map_err(|e| NotCanonical(format!("cannot serialize the plan: {e}")))?;
    let mut hasher = Sha256::new();
    let mut de = serde_json::Deserializer::from_str(&text);
    serde::de::DeserializeSeed::deserialize(Canon(&mut hasher), &mut de)
        .and_then(|()| de.end())
        .map_err(|e| NotCanonical(e.to_string()))?;
    Ok(format!("sha256:{}", hex::encode(hasher.finalize())))
}

/// Where canonical JSON is written: a string for a nested value, the hasher at the top.
trait Sink {
    fn put(&mut self, s: &str);
}

impl Sink for String {
    fn put(&mut self, s: &str) {
        self.push_str(s);
    }
}

impl Sink for Sha256 {
    fn put(&mut self, s: &str) {
        self.update(s.as_bytes());
    }
}

/// Writes the canonical form of the JSON value it is handed to its sink, as
/// [`write_canonical`] writes a `Value`'s.
struct Canon<'o, O: Sink>(&'o mut O);

impl<'de, O: Sink> serde::de::DeserializeSeed<'de> for Canon<'_, O> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, O: Sink> serde::de::Visitor<'de> for Canon<'_, O> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.put("null");
        Ok(())
    }

    fn visit_bool<E>(self, b: bool) -> Result<(), E> {
        self.0.put(if b { "true" } else { "false" });
        Ok(())
    }

    fn visit_i64<E>(self, n: i64) -> Result<(), E> {
        self.0.put(&n.to_string());
        Ok(())
    }

    fn visit_u64<E>(self, n: u64) -> Result<(), E> {
        self.0.put(&n.to_string());
        Ok(())
    }

    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<(), E> {
        Err(E::custom(format!("the float {n} has no canonical form")))
    }

    fn visit_str<E>(self, s: &str) -> Result<(), E> {
        self.0.put(&Value::String(s.to_string()).to_string());
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.put("[");
        let mut item = String::new();
        let mut first = true;
        while seq.next_element_seed(Canon(&mut item))?.is_some() {
            if !first {
                self.0.put(",");
            }
            first = false;
            self.0.put(&item);
            item.clear();
        }
        self.0.put("]");
        Ok(())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut members: Vec<(String, String)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let mut value = String::new();
            map.next_value_seed(Canon(&mut value))?;
            members.push((key, value));
        }
        // Sorted by key, stably: of a repeated key the last value stands, as in a `Value`.
        members.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        self.0.put("{");
        let mut first = true;
        for (i, (key, value)) in members.iter().enumerate() {
            if members.get(i + 1).is_some_and(|next| &next.0 == key) {
                continue;
            }
            if !first {
                self.0.put(",");
            }
            first = false;
            self.0.put(&Value::String(key.clone()).to_string());
            self.0.put(":");
            self.0.put(value);
        }
        self.0.put("}");
        Ok(())
    }
}

/// Whether `s` is a digest as FORMAT §2 spells it.
pub fn is_digest(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// What an apply was asked to run.
#[derive(Debug, Clone, Copy)]
pub struct ApplyRequest<'a> {
    /// The command that previews the same plan, e.g. `repo cleanup`.
    pub command: &'a str,
    /// `--digest`, when given.
    pub digest: Option<&'a str>,
}

/// `plan.digest_required`: an apply without the digest of a reviewed preview.
pub fn digest_required(req: ApplyRequest<'_>) -> Option<Refusal> {
    if req.digest.is_some() {
        return None;
    }
    Some(Refusal::new(
        "plan.digest_required",
        format!(
            "`dacli {} --apply` runs only a plan you reviewed, and no `--digest` was given",
            req.command
        ),
        format!(
            "Preview with `dacli {}`, review the plan, then run `dacli {} --apply --digest <plan_digest>`.",
            req.command, req.command
        ),
    ))
}

/// `plan.drifted`: the re-observed plan is not the one previewed. `what` names what the plan
/// covers (`refs, worktrees and tasks`), so the reason says where to look.
pub fn drift(req: ApplyRequest<'_>, observed: &str, what: &str) -> Option<Refusal> {
    let expected = req.digest?;
    if expected == observed {
        return None;
    }
    Some(Refusal::new(
        "plan.drifted",
        format!(
            "the plan digest is now {observed}, not {expected}: {what} changed since the preview"
        ),
        format!(
            "Preview again with `dacli {}`, review the new plan, and apply it with its digest.",
            req.command
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_at_every_depth() {
        let v = json!({"b": 1, "a": {"d": [true, null], "c": "x\"y"}});
        assert_eq!(
            canonical_json(&v).expect("canonical"),
            r#"{"a":{"c":"x\"y","d":[true,null]},"b":1}"#
        );
    }

    #[test]
    fn floats_have_no_canonical_form() {
        assert!(canonical_json(&json!({"x": 1.5})).is_err());
    }

    #[test]
    fn digest_is_stable_and_key_order_free() {
        let a = plan_digest(&json!({"x": 1, "y": [1, 2]})).expect("digest");
        let b = plan_digest(&json!({"y": [1, 2], "x": 1})).expect("digest");
        assert_eq!(a, b);
        assert!(is_digest(&a), "{a}");
        assert_ne!(
            a,
            plan_digest(&json!({"x": 1, "y": [2, 1]})).expect("digest")
        );
    }

    #[test]
    fn a_plan_digested_from_its_text_matches_its_value_digest() {
        #[derive(serde::Serialize)]
        struct Plan {
            tool: &'static str,
            zeta: Vec<Option<i64>>,
            alpha: std::collections::BTreeMap<String, Value>,
        }
        let plan = Plan {
            tool: "delivery \u{1b}\"quoted\"\n",
            zeta: vec![Some(-3), None, Some(i64::MAX)],
            alpha: [
                ("b".to_string(), json!({"z": [], "y": {}, "é": u64::MAX})),
                ("a".to_string(), json!([true, false, null, "x"])),
            ]
            .into(),
        };
        let value = serde_json::to_value(&plan).expect("value");
        assert_eq!(
            plan_digest_of(&plan).expect("from text"),
            plan_digest(&value).expect("from value")
        );
        assert!(plan_digest_of(&json!({"x": [1.5]})).is_err());
    }

    #[test]
    fn the_gate_refuses_a_missing_or_different_digest() {
        let req = ApplyRequest {
            command: "repo cleanup",
            digest: None,
        };
        assert_eq!(
            digest_required(req).expect("refused").policy,
            "plan.digest_required"
        );
        let d = sha256_digest(b"a");
        let req = ApplyRequest {
            command: "repo cleanup",
            digest: Some(&d),
        };
        assert!(digest_required(req).is_none());
        assert!(drift(req, &d, "refs").is_none());
        let r = drift(req, &sha256_digest(b"b"), "refs").expect("refused");
        assert_eq!(r.policy, "plan.drifted");
        assert!(r.next.contains("dacli repo cleanup"), "{}", r.next);
    }
}
