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
