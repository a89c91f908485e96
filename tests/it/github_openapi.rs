//! Every fixture of `fixtures/github/` is a body GitHub could send: each is validated against
//! its operation's response schema in GitHub's published REST description (`@octokit/openapi`,
//! pinned in `tests/github-openapi/package.json`, installed by `npm ci` there). A fixture with
//! a field GitHub documents as required missing, or a value of the wrong type, fails here.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::github_support::npm_dir;
use crate::support::repo_root;

/// Each fixture's operation (path template) and status. Every fixture must be listed.
const OPERATIONS: [(&str, &str, &str); 26] = [
    ("pull", "/repos/{owner}/{repo}/pulls/{pull_number}", "200"),
    ("pulls_by_head", "/repos/{owner}/{repo}/pulls", "200"),
    (
        "check_runs_empty",
        "/repos/{owner}/{repo}/commits/{ref}/check-runs",
        "200",
    ),
    (
        "check_runs_failing",
        "/repos/{owner}/{repo}/commits/{ref}/check-runs",
        "200",
    ),
    (
        "check_runs_green",
        "/repos/{owner}/{repo}/commits/{ref}/check-runs",
        "200",
    ),
    (
        "annotations_test",
        "/repos/{owner}/{repo}/check-runs/{check_run_id}/annotations",
        "200",
    ),
    (
        "jobs_failing",
        "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs",
        "200",
    ),
    ("runs_empty", "/repos/{owner}/{repo}/actions/runs", "200"),
    ("runs_failing", "/repos/{owner}/{repo}/actions/runs", "200"),
    ("runs_green", "/repos/{owner}/{repo}/actions/runs", "200"),
    (
        "status_empty",
        "/repos/{owner}/{repo}/commits/{ref}/status",
        "200",
    ),
    (
        "reviews_approved",
        "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
        "200",
    ),
    (
        "rules_main",
        "/repos/{owner}/{repo}/rules/branches/{branch}",
        "200",
    ),
    (
        "protection_main",
        "/repos/{owner}/{repo}/branches/{branch}/protection",
        "200",
    ),
    (
        "workflows_none",
        "/repos/{owner}/{repo}/actions/workflows",
        "200",
    ),
    (
        "workflows_one",
        "/repos/{owner}/{repo}/actions/workflows",
        "200",
    ),
    ("repo", "/repos/{owner}/{repo}", "200"),
    ("issues_page", "/repos/{owner}/{repo}/issues", "200"),
    (
        "issue",
        "/repos/{owner}/{repo}/issues/{issue_number}",
        "200",
    ),
    ("search_issues", "/search/issues", "200"),
    (
        "compare_ahead",
        "/repos/{owner}/{repo}/compare/{basehead}",
        "200",
    ),
    (
        "issue_comments",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        "200",
    ),
    (
        "issue_events_reopened",
        "/repos/{owner}/{repo}/issues/{issue_number}/events",
        "200",
    ),
    ("error_bad_credentials", "/repos/{owner}/{repo}", "404"),
    ("error_forbidden", "/repos/{owner}/{repo}", "403"),
    ("error_not_found", "/repos/{owner}/{repo}", "404"),
];

/// GitHub's REST description, installing the pinned package when it is missing; `None` (the
/// test skips, saying so) without npm.
fn description() -> Option<Value> {
    let dir = npm_dir(
        "github-openapi",
        "node_modules/@octokit/openapi/generated/api.github.com.json",
    )?;
    let file = dir.join("node_modules/@octokit/openapi/generated/api.github.com.json");
    let text = std::fs::read_to_string(&file).expect("the description");
    Some(serde_json::from_str(&text).expect("the description is JSON"))
}

/// Follows `$ref`s inside the description itself.
fn resolve<'v>(doc: &'v Value, mut v: &'v Value) -> &'v Value {
    while let Some(r) = v.get("$ref").and_then(Value::as_str) {
        let pointer = r.strip_prefix('#').expect("a local $ref");
        v = doc.pointer(pointer).unwrap_or_else(|| panic!("no {r}"));
    }
    v
}

/// OpenAPI 3.0's `nullable: true` as JSON Schema: `null` joins the types (and the enum).
fn nullable_to_json_schema(v: &Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(nullable_to_json_schema).collect()),
        Value::Object(map) => {
            let mut out: Map<String, Value> = map
                .iter()
                .filter(|(k, _)| k.as_str() != "nullable")
                .map(|(k, v)| (k.clone(), nullable_to_json_schema(v)))
                .collect();
            if map.get("nullable") != Some(&Value::Bool(true)) {
                return Value::Object(out);
            }
            let composite = ["$ref", "allOf", "anyOf", "oneOf"]
                .iter()
                .any(|k| out.contains_key(*k));
            match out.get("type").cloned() {
                Some(Value::String(t)) if !composite => {
                    out.insert("type".into(), json!([t, "null"]));
                    if let Some(Value::Array(e)) = out.get_mut("enum")
                        && !e.contains(&Value::Null)
                    {
                        e.push(Value::Null);
                    }
                    Value::Object(out)
                }
                _ => json!({"anyOf": [Value::Object(out), {"type": "null"}]}),
            }
        }
        other => other.clone(),
    }
}

/// One validator for all fixtures: an object whose property `name` is the response schema of
/// that fixture's operation, beside the description's components its `$ref`s point into.
fn validator(doc: &Value) -> jsonschema::Validator {
    let mut properties = Map::new();
    for (name, route, status) in OPERATIONS {
        let response = resolve(doc, &doc["paths"][route]["get"]["responses"][status]);
        let schema = &response["content"]["application/json"]["schema"];
        assert!(!schema.is_null(), "{route} {status} has no JSON schema");
        properties.insert(name.to_string(), nullable_to_json_schema(schema));
    }
    let root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": properties,
        "components": nullable_to_json_schema(&doc["components"]),
    });
    jsonschema::draft202012::new(&root).expect("the schemas compile")
}

fn fixtures() -> BTreeMap<String, Value> {
    let dir = repo_root().join("fixtures/github");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("fixtures") {
        let p = entry.expect("entry").path();
        if p.extension().is_some_and(|e| e == "json") {
            let name = p.file_stem().expect("stem").to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).expect("read");
            out.insert(name, serde_json::from_str(&text).expect("fixture JSON"));
        }
    }
    out
}

fn errors(v: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    v.iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn every_fixture_is_a_body_github_could_send() {
    let Some(doc) = description() else { return };
    let all = fixtures();
    let listed: Vec<&str> = OPERATIONS.iter().map(|(n, _, _)| *n).collect();
    for name in all.keys() {
        assert!(
            listed.contains(&name.as_str()),
            "fixtures/github/{name}.json names no operation in OPERATIONS"
        );
    }
    let v = validator(&doc);
    let instance = Value::Object(all.clone().into_iter().collect());
    let found = errors(&v, &instance);
    assert!(found.is_empty(), "{}", found.join("\n"));
    // The check is real: a field GitHub requires, taken away, and a number sent as a string
    // both fail.
    let mut broken = all.clone();
    broken
        .get_mut("pull")
        .and_then(Value::as_object_mut)
        .expect("pull")
        .remove("head");
    broken.get_mut("check_runs_failing").expect("check runs")["check_runs"][0]["id"] =
        json!("4101");
    let found = errors(&v, &Value::Object(broken.into_iter().collect()));
    assert!(
        found
            .iter()
            .any(|e| e.starts_with("/pull") && e.contains("head")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|e| e.starts_with("/check_runs_failing/check_runs/0/id")),
        "{found:?}"
    );
}

/// The bodies the scale tests derive from the fixtures (renumbered, patched, multiplied) are
/// bodies GitHub could send too: each is validated as its fixture's operation answers.
#[test]
fn every_derived_body_is_a_body_github_could_send() {
    let Some(doc) = description() else { return };
    let v = validator(&doc);
    let issues: Vec<Value> = (1..=1050u64)
        .map(|n| crate::github_support::issue(n, format!("issue {n}"), "open"))
        .collect();
    // As the projection's scale tests answer a search: the issues found, as `issue` makes them.
    let search = crate::github_support::search_result(vec![crate::github_support::issue(
        1021,
        "<!-- dacli:t-01 ws:w-01 -->\n".into(),
        "open",
    )]);
    let mut annotations = crate::github_support::fixture("annotations_test");
    annotations[0]["message"] = json!(
        "thread 'money::tests::rounds_once' panicked at src/money.rs:42:5:\nassertion `left == right` failed"
    );
    let derived = json!({
        "check_runs_failing": {"total_count": 152, "check_runs": crate::github_scale::matrix_runs()},
        "issues_page": issues,
        "issue": crate::github_support::issue(1051, "<!-- dacli:t-01 ws:w-01 -->\n".into(), "closed"),
        "search_issues": search,
        "annotations_test": annotations,
        "pull": crate::github_support::patched(
            "pull",
            &[("/mergeable", Value::Null), ("/mergeable_state", json!("unknown"))],
        ),
    });
    let found = errors(&v, &derived);
    assert!(found.is_empty(), "{}", found.join("\n"));
    // A derived body that breaks the description fails: a check run without its name.
    let mut runs = crate::github_scale::matrix_runs();
    runs[140]
        .as_object_mut()
        .expect("a check run")
        .remove("name");
    let found = errors(
        &v,
        &json!({"check_runs_failing": {"total_count": 152, "check_runs": runs}}),
    );
    assert!(
        found
            .iter()
            .any(|e| e.starts_with("/check_runs_failing/check_runs/140")),
        "{found:?}"
    );
}
