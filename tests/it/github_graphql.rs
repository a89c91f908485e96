//! The GraphQL dacli sends and the answers the suite serves for it are what GitHub's
//! published schema allows (`@octokit/graphql-schema`, pinned in
//! `tests/github-graphql/package.json`, installed by `npm ci` there): the review-decision
//! query is captured from a real `pr diagnose` run and validated, and every fixture of
//! `fixtures/github/graphql/` must be exactly what executing that query can return. A field
//! GitHub does not have, in the query or in a fixture, fails here.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command as Std, Stdio};

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

use crate::github_support::{Fake, R, fixture, green_pr, linked, npm_dir, run};
use crate::support::repo_root;

/// The checker's directory with its packages installed.
fn checker() -> Option<std::path::PathBuf> {
    npm_dir(
        "github-graphql",
        "node_modules/@octokit/graphql-schema/schema.json",
    )
}

/// Runs `check.mjs` on a query, its variables and named answers.
fn check(
    dir: &std::path::Path,
    query: &str,
    variables: &Value,
    answers: &BTreeMap<String, Value>,
) -> Value {
    let mut child = Std::new("node")
        .arg("check.mjs")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node runs");
    let input = json!({"query": query, "variables": variables, "answers": answers});
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.to_string().as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("node ends");
    assert!(
        out.status.success(),
        "check.mjs failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("check.mjs prints JSON")
}

/// Every fixture of `fixtures/github/graphql/`, by name.
fn answers() -> BTreeMap<String, Value> {
    let dir = repo_root().join("fixtures/github/graphql");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("graphql fixtures") {
        let p = entry.expect("entry").path();
        if p.extension().is_some_and(|e| e == "json") {
            let name = p.file_stem().expect("stem").to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).expect("read");
            out.insert(name, serde_json::from_str(&text).expect("fixture JSON"));
        }
    }
    out
}

/// The GraphQL request `pr diagnose` sends when branch protection is unreadable.
fn sent_query() -> Value {
    let repo = linked();
    let fake = Fake::start();
    fake.get(
        &format!("{R}/branches/main/protection"),
        403,
        fixture("error_forbidden"),
    );
    fake.mount(
        Mock::given(method("POST"))
            .and(path("/graphql"))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(
                    answers()
                        .remove("review_decision_review_required")
                        .expect("fixture"),
                ),
            )
            .expect(1),
    );
    green_pr(&fake, fixture("pull"));
    let r = run(&repo, &fake, &["pr", "diagnose", "--pr", "7"]);
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    assert_eq!(r.doc["data"]["pr"]["review_decision"], "review_required");
    fake.verify();
    let posted = fake
        .requests()
        .into_iter()
        .find(|q| q.url.path() == "/graphql")
        .expect("a GraphQL request");
    serde_json::from_slice(&posted.body).expect("a JSON body")
}

#[test]
fn the_review_decision_query_and_its_fixtures_are_what_github_serves() {
    let Some(dir) = checker() else { return };
    let sent = sent_query();
    let query = sent["query"].as_str().expect("query");
    let variables = &sent["variables"];
    let all = answers();
    assert!(all.len() >= 4, "{:?}", all.keys());
    let found = check(&dir, query, variables, &all);
    assert_eq!(found["query"], json!([]), "the query: {found}");
    for (name, errors) in found["answers"].as_object().expect("answers") {
        assert_eq!(errors, &json!([]), "fixtures/github/graphql/{name}.json");
    }

    // The check is real: a field GitHub does not have fails, in the query or in an answer,
    // and so does a value its enum lacks.
    let bogus = query.replace("reviewDecision", "reviewVerdict");
    let found = check(&dir, &bogus, variables, &BTreeMap::new());
    assert!(
        found["query"].to_string().contains("reviewVerdict"),
        "{found}"
    );
    let mut broken = BTreeMap::new();
    let mut extra = all["review_decision_approved"].clone();
    extra["data"]["repository"]["pullRequest"]["reviewDecisionReason"] = json!("OWNERS");
    broken.insert("extra".to_string(), extra);
    let mut value = all["review_decision_approved"].clone();
    value["data"]["repository"]["pullRequest"]["reviewDecision"] = json!("MAYBE");
    broken.insert("value".to_string(), value);
    let found = check(&dir, query, variables, &broken);
    assert!(
        found["answers"]["extra"]
            .to_string()
            .contains("reviewDecisionReason"),
        "{found}"
    );
    assert!(
        found["answers"]["value"].to_string().contains("MAYBE"),
        "{found}"
    );
}
