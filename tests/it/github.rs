//! The GitHub tools against a local fake GitHub (wiremock) serving the constructed fixtures of
//! `fixtures/github/`: `github link`, consent, `pr diagnose` (every access problem class, a
//! failing check with its job and annotation, behind vs dirty), `github projection` (withheld
//! items, the issue mirror and a retried timeout), `release-train` (head moved, 409, merge
//! authority) and the three Tier-1 tools over MCP. Every server mounts a catch-all that
//! answers 500 and must see zero hits, so an unexpected request fails the test; previews also
//! assert that no write request reached the server. The fake token must never appear in any
//! output or file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{method, path, query_param, query_param_is_missing};
use wiremock::{Mock, ResponseTemplate};

use crate::github_support::{
    BASE, Fake, HEAD, R, Ran, TOKEN, consent, failing_pr, fixture, green_pr, item, linked, patched,
    projection_workspace, reasons, run, run_with, stub_path, ws_id,
};
use crate::lifecycle::agent;
use crate::support::Repo;

/// Every file under the work tree (the `.git` directory aside) that contains `needle`.
pub(crate) fn files_containing(root: &Path, needle: &str) -> Vec<PathBuf> {
    let mut hits = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let p = entry.path();
            if p.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read(&p)
                .map(|b| String::from_utf8_lossy(&b).contains(needle))
                .unwrap_or(false)
            {
                hits.push(p);
            }
        }
    }
    hits
}

#[test]
fn diagnose_names_the_failing_required_check_its_job_and_the_annotation() {
    let repo = linked();
    let fake = Fake::start();
    failing_pr(&fake);
    let r = run(&repo, &fake, &["pr", "diagnose", "--pr", "7"]);
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    let d = &r.doc["data"];
    assert_eq!(d["pr"]["number"], 7);
    assert_eq!(d["pr"]["head_sha"], HEAD);
    assert_eq!(d["pr"]["base_ref"], "main");
    assert_eq!(d["pr"]["review_decision"], "approved");
    assert_eq!(d["requirements"]["source"], "both");
    assert_eq!(d["requirements"]["required_checks"], json!(["test"]));
    let test = d["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == "test")
        .expect("the test check");
    assert_eq!(test["class"], "fail");
    assert_eq!(test["required"], true);
    assert_eq!(test["workflow"]["run_id"], 9001);
    assert_eq!(
        d["workflows"][0]["failed_jobs"],
        json!([{"name": "test", "step": "cargo test", "conclusion": "failure"}])
    );
    assert_eq!(d["annotations"][0]["path"], "src/money.rs");
    assert_eq!(d["annotations"][0]["start_line"], 42);
    assert_eq!(d["annotations"][0]["level"], "failure");
    let v = &d["verdict"];
    assert_eq!(v["class"], "failing_checks", "{v}");
    let reason = v["reasons"][0].as_str().expect("reason");
    for part in [
        "required check `test` failed",
        "job `test`",
        "step `cargo test`",
        "src/money.rs:42",
    ] {
        assert!(reason.contains(part), "{part} missing from: {reason}");
    }
    assert_eq!(v["next_actions"][0]["action"], "rerun_failed_jobs");
    let next = v["next_actions"][0]["detail"].as_str().expect("detail");
    assert!(
        next.contains("fix src/money.rs:42") && next.contains("gh run rerun 9001 --failed"),
        "{next}"
    );
    assert_eq!(d["access"]["token_source"], "env");
    assert!(d["access"]["problem"].is_null());
    // Read-only: no write reached GitHub, and the token went only into the request header.
    assert!(fake.writes().is_empty(), "{:?}", fake.writes());
    let sent = fake.requests()[0]
        .headers
        .get("authorization")
        .map(|v| v.to_str().unwrap_or_default().to_string())
        .unwrap_or_default();
    assert!(sent.ends_with(TOKEN), "the token authenticates the calls");
    assert!(files_containing(repo.path(), TOKEN).is_empty());
    fake.verify();
    // The human text says the same.
    let out = repo
        .dacli(&["pr", "diagnose", "--pr", "7"])
        .env("DACLI_GITHUB_API_URL", fake.url())
        .env("GH_TOKEN", TOKEN)
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("verdict: failing_checks"), "{text}");
    assert!(text.contains("src/money.rs:42"), "{text}");
    assert!(text.contains("next: rerun_failed_jobs"), "{text}");
}

#[test]
fn behind_and_dirty_are_distinct_verdicts() {
    let repo = linked();
    let fake = Fake::start();
    green_pr(
        &fake,
        patched("pull", &[("/mergeable_state", json!("behind"))]),
    );
    let r = run(&repo, &fake, &["pr", "diagnose", "--pr", "7"]);
    assert_eq!(r.code, 0, "{}", r.doc);
    assert_eq!(r.doc["data"]["verdict"]["class"], "behind_base");
    assert_eq!(
        r.doc["data"]["verdict"]["next_actions"][0]["action"],
        "update_branch"
    );
    fake.verify();

    let fake = Fake::start();
    green_pr(
        &fake,
        patched(
            "pull",
            &[
                ("/mergeable_state", json!("dirty")),
                ("/mergeable", json!(false)),
            ],
        ),
    );
    let r = run(&repo, &fake, &["pr", "diagnose", "--pr", "7"]);
    assert_eq!(r.doc["data"]["verdict"]["class"], "conflict");
    assert_eq!(
        r.doc["data"]["verdict"]["next_actions"][0]["action"],
        "resolve_conflict"
    );
    fake.verify();

    let fake = Fake::start();
    green_pr(
        &fake,
        patched("pull", &[("/mergeable_state", json!("clean"))]),
    );
    let r = run(&repo, &fake, &["pr", "diagnose", "--pr", "7"]);
    assert_eq!(
        r.doc["data"]["verdict"]["class"], "mergeable_now",
        "{}",
        r.doc
    );
    assert_eq!(r.doc["data"]["verdict"]["reasons"], json!([]));
    fake.verify();
}

#[test]
fn no_checks_configured_is_not_no_checks_triggered_and_neither_is_green() {
    let repo = linked();
    for (workflows, class) in [
        ("workflows_none", "no_checks_configured"),
        ("workflows_one", "no_checks_triggered"),
    ] {
        let fake = Fake::start();
        fake.get(
            &format!("{R}/pulls/7"),
            200,
            patched("pull", &[("/mergeable_state", json!("clean"))]),
        );
        fake.get(&format!("{R}/rules/branches/main"), 200, json!([]));
        fake.get(&format!("{R}/branches/main/protection"), 200, json!({}));
        fake.get(&format!("{R}/actions/runs"), 200, fixture("runs_empty"));
        fake.get(
            &format!("{R}/commits/{HEAD}/check-runs"),
            200,
            fixture("check_runs_empty"),
        );
        fake.get(
            &format!("{R}/commits/{HEAD}/status"),
            200,
            fixture("status_empty"),
        );
        fake.get(&format!("{R}/actions/workflows"), 200, fixture(workflows));
        fake.get(&format!("{R}/pulls/7/reviews"), 200, json!([]));
        let r = run(&repo, &fake, &["pr", "diagnose", "--pr", "7"]);
        assert_eq!(r.code, 0, "{}", r.doc);
        assert_eq!(r.doc["data"]["requirements"]["source"], "branch_protection");
        assert_eq!(r.doc["data"]["verdict"]["class"], class, "{}", r.doc);
        fake.verify();
    }
}

#[test]
fn unreadable_branch_protection_is_reported_never_read_as_none() {
    let repo = linked();
    let fake = Fake::start();
    fake.get(
        &format!("{R}/branches/main/protection"),
        404,
        fixture("error_not_found"),
    );
    // Without branch protection, GitHub's own review decision (GraphQL) is asked.
    fake.mount(
        Mock::given(method("POST"))
            .and(path("/graphql"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(fixture("graphql/review_decision_approved")),
            )
            .expect(1),
    );
    failing_pr(&fake);
    let r = run(&repo, &fake, &["pr", "diagnose", "--pr", "7"]);
    assert_eq!(r.code, 0, "{}", r.doc);
    assert_eq!(r.doc["data"]["pr"]["review_decision"], "approved");
    let req = &r.doc["data"]["requirements"];
    assert_eq!(req["source"], "unreadable");
    assert!(
        req["unreadable_reason"]
            .as_str()
            .expect("reason")
            .contains("not_found_or_no_access"),
        "{req}"
    );
    // What the rulesets say is still used.
    assert_eq!(req["required_checks"], json!(["test"]));
    assert_eq!(r.doc["data"]["verdict"]["class"], "failing_checks");
    fake.verify();
}

/// Every access problem class: lasting ones refuse `github.access` (exit 3) with a typed
/// reason and remedy; transient ones are `E_GITHUB_ACCESS` (exit 1).
#[test]
fn every_access_problem_class_is_typed_from_status_and_headers() {
    let repo = linked();
    let pull = format!("{R}/pulls/7");
    let cases: Vec<(&str, ResponseTemplate, i32, &str)> = vec![
        (
            "bad_credentials",
            ResponseTemplate::new(401).set_body_json(fixture("error_bad_credentials")),
            3,
            "Refresh the token",
        ),
        (
            "sso_required",
            ResponseTemplate::new(403)
                .insert_header(
                    "X-GitHub-SSO",
                    "required; url=https://github.com/orgs/acme/sso?authorization_request=A1",
                )
                .set_body_json(fixture("error_forbidden")),
            3,
            "https://github.com/orgs/acme/sso?authorization_request=A1",
        ),
        (
            "insufficient_scope",
            ResponseTemplate::new(403)
                .insert_header("X-OAuth-Scopes", "public_repo")
                .insert_header("X-Accepted-OAuth-Scopes", "repo")
                .set_body_json(fixture("error_forbidden")),
            3,
            "gh auth refresh -s repo",
        ),
        (
            "insufficient_permission",
            ResponseTemplate::new(403)
                .insert_header("X-Accepted-GitHub-Permissions", "pull_requests=read")
                .set_body_json(fixture("error_forbidden")),
            3,
            "pull_requests=read",
        ),
        (
            "not_found_or_no_access",
            ResponseTemplate::new(404).set_body_json(fixture("error_not_found")),
            3,
            "invisible to this token",
        ),
        (
            "rate_limited",
            ResponseTemplate::new(403)
                .insert_header("x-ratelimit-remaining", "0")
                .insert_header("x-ratelimit-reset", "1772442000")
                .set_body_json(fixture("error_forbidden")),
            1,
            "2026-03-02T09:00:00Z",
        ),
        (
            "rate_limited",
            ResponseTemplate::new(429).insert_header("retry-after", "30"),
            1,
            "retry after 30 s",
        ),
        (
            "server_error",
            ResponseTemplate::new(502),
            1,
            "GitHub answered 502",
        ),
        (
            "network_unreachable",
            ResponseTemplate::new(200)
                .set_body_json(fixture("pull"))
                .set_delay(Duration::from_secs(6)),
            1,
            "timed out",
        ),
    ];
    for (kind, response, code, says) in cases {
        let fake = Fake::start();
        fake.mount(
            Mock::given(method("GET"))
                .and(path(pull.as_str()))
                .respond_with(response)
                .expect(1),
        );
        let r = run(&repo, &fake, &["pr", "diagnose", "--pr", "7"]);
        assert_eq!(r.code, code, "{kind}: {}", r.doc);
        let (text, detail) = if code == 3 {
            assert_eq!(r.doc["refused"]["policy"], "github.access", "{kind}");
            (
                r.doc["refused"]["reason"].to_string(),
                r.doc["refused"]["next"].to_string(),
            )
        } else {
            assert_eq!(r.doc["error"]["code"], "E_GITHUB_ACCESS", "{kind}");
            (
                r.doc["error"]["message"].to_string(),
                r.doc["error"].to_string(),
            )
        };
        assert!(text.contains(kind), "{kind} not named: {text}");
        assert!(
            text.contains(says) || detail.contains(says),
            "{kind}: `{says}` missing from {}",
            r.doc
        );
        fake.verify();
    }
    // Nothing listening at all.
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        format!("http://{}", listener.local_addr().expect("addr"))
    };
    let r = run_with(
        &repo,
        &dead,
        &["pr", "diagnose", "--pr", "7"],
        &[("GH_TOKEN", TOKEN)],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.doc);
    assert!(
        r.doc["error"]["message"]
            .as_str()
            .expect("message")
            .contains("network_unreachable")
    );
    // No token anywhere: not in the environment, and `gh auth token` fails.
    let fake = Fake::start();
    let r = run_with(
        &repo,
        &fake.url(),
        &["pr", "diagnose", "--pr", "7"],
        &[],
        None,
    );
    assert_eq!(r.code, 3, "{}", r.doc);
    assert_eq!(r.doc["refused"]["policy"], "github.access");
    assert!(
        r.doc["refused"]["reason"]
            .as_str()
            .expect("reason")
            .contains("missing_token")
    );
    assert!(
        r.doc["refused"]["next"]
            .as_str()
            .expect("next")
            .contains("GH_TOKEN")
    );
    assert!(
        fake.requests().is_empty(),
        "nothing is sent without a token"
    );
    fake.verify();
}

#[test]
fn the_token_may_come_from_gh_and_only_its_source_is_reported() {
    let repo = linked();
    let fake = Fake::start();
    failing_pr(&fake);
    let mut cmd = repo.dacli(&["pr", "diagnose", "--pr", "7", "--json"]);
    cmd.env("DACLI_GITHUB_API_URL", fake.url()).env(
        "PATH",
        stub_path(
            repo.path(),
            &format!("[ \"$1 $2 $3 $4\" = \"auth token --hostname 127.0.0.1\" ] && echo {TOKEN}"),
        ),
    );
    let out = cmd.output().expect("runs");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(TOKEN));
    let doc = crate::support::one_json(&out.stdout);
    assert_eq!(doc["data"]["access"]["token_source"], "gh_cli", "{doc}");
    fake.verify();
}

#[test]
fn a_task_branch_or_commit_finds_its_pull_request() {
    let repo = linked();
    let (code, _) = repo.json(&["project", "add", "Checkout", "--slug", "checkout"]);
    assert_eq!(code, 0);
    let (code, _) = repo.json(&[
        "task",
        "add",
        "Round once",
        "--project",
        "checkout",
        "--accept",
        "works",
    ]);
    assert_eq!(code, 0);
    let fake = Fake::start();
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/pulls")))
            .and(query_param("head", "acme:dacli/001-round-once"))
            .and(query_param("state", "all"))
            .respond_with(ResponseTemplate::new(200).set_body_json(fixture("pulls_by_head")))
            .expect(2),
    );
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/commits/{HEAD}/pulls")))
            .respond_with(ResponseTemplate::new(200).set_body_json(fixture("pulls_by_head")))
            .expect(1),
    );
    failing_pr(&fake);
    for target in [
        vec!["--task", "checkout/1"],
        vec!["--branch", "dacli/001-round-once"],
        vec!["--sha", HEAD],
    ] {
        let mut args = vec!["pr", "diagnose"];
        args.extend(target);
        let r = run(&repo, &fake, &args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.doc);
        assert_eq!(
            r.doc["data"]["pr"]["number"], 7,
            "the open PR wins over the closed one"
        );
    }
    fake.verify();
    let r = run(
        &repo,
        &fake,
        &["pr", "diagnose", "--pr", "7", "--sha", HEAD],
    );
    assert_eq!(r.code, 2, "exactly one target");
}

#[test]
fn record_writes_evidence_and_needs_rw() {
    let repo = linked();
    let fake = Fake::start();
    failing_pr(&fake);
    let r = run(&repo, &fake, &["pr", "diagnose", "--pr", "7", "--record"]);
    assert_eq!(r.code, 0, "{}", r.doc);
    let ev = r.doc["data"]["evidence"][0]
        .as_str()
        .expect("evidence path");
    assert!(ev.starts_with(".dacli/evidence/diagnose-pr/"), "{ev}");
    let text = std::fs::read_to_string(repo.path().join(ev)).expect("evidence");
    assert!(text.contains("tool = \"diagnose-pr\""), "{text}");
    assert!(text.contains("failing_checks"), "{text}");
    assert!(
        !text.contains("assertion"),
        "no annotation text in evidence: {text}"
    );
    let (_, ro) = agent(&repo, "reviewer", 1, "ro");
    let r = run_with(
        &repo,
        &fake.url(),
        &["pr", "diagnose", "--pr", "7", "--record"],
        &[("GH_TOKEN", TOKEN)],
        Some(&ro),
    );
    assert_eq!(r.code, 3);
    assert_eq!(r.doc["refused"]["policy"], "grant.read_only");
    // Without --record an ro agent diagnoses freely.
    let r = run_with(
        &repo,
        &fake.url(),
        &["pr", "diagnose", "--pr", "7"],
        &[("GH_TOKEN", TOKEN)],
        Some(&ro),
    );
    assert_eq!(r.code, 0, "{}", r.doc);
    fake.verify();
}

#[test]
fn unlinked_workspaces_are_refused_before_any_request() {
    let repo = Repo::initialized();
    let fake = Fake::start();
    let r = run(&repo, &fake, &["pr", "diagnose", "--pr", "7"]);
    assert_eq!(r.code, 3);
    assert_eq!(r.doc["refused"]["policy"], "github.unlinked");
    assert!(
        r.doc["refused"]["next"]
            .as_str()
            .expect("next")
            .contains("dacli github link")
    );
    assert!(fake.requests().is_empty());
    fake.verify();
}

#[test]
fn link_reads_the_visibility_and_consent_is_roots_append_only_record() {
    let repo = Repo::initialized();
    let (code, _) = repo.json(&["project", "add", "Checkout", "--slug", "checkout"]);
    assert_eq!(code, 0);
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    let r = run(&repo, &fake, &["github", "link", "acme/widget"]);
    assert_eq!(r.code, 0, "{}", r.doc);
    let d = &r.doc["data"];
    assert_eq!(d["repo"], "acme/widget");
    assert_eq!(d["visibility"], "public");
    assert_eq!(d["effect"], "applied");
    assert_eq!(d["notices"][0]["code"], "consent_missing");
    let config = std::fs::read_to_string(repo.ws("config.toml")).expect("config");
    assert!(
        config.contains("[github]\nrepo = \"acme/widget\"\napi_url = \"https://api.github.com\""),
        "{config}"
    );
    assert!(
        !config.contains("127.0.0.1"),
        "the test override is never stored: {config}"
    );
    let r = run(&repo, &fake, &["github", "link", "acme/widget"]);
    assert_eq!(r.doc["data"]["effect"], "unchanged");
    let r = run(&repo, &fake, &["github", "link", "acme/other"]);
    assert_eq!(r.code, 5, "{}", r.doc);
    assert_eq!(r.doc["error"]["code"], "E_EXISTS");
    let r = run(&repo, &fake, &["github", "link", "not a repo"]);
    assert_eq!(r.code, 2);

    // Only root records consent; the record is append-only and holds the live visibility.
    let (_, builder) = agent(&repo, "builder", 2, "rw");
    let mut grant = crate::github_support::GRANT.to_vec();
    grant.extend(["--classes", "tasks"]);
    let r = run_with(
        &repo,
        &fake.url(),
        &grant,
        &[("GH_TOKEN", TOKEN)],
        Some(&builder),
    );
    assert_eq!(r.code, 3);
    assert_eq!(r.doc["refused"]["policy"], "grant.root_required");
    let r = run(&repo, &fake, &grant);
    assert_eq!(r.code, 0, "{}", r.doc);
    let c = &r.doc["data"]["consent"];
    assert_eq!(c["action"], "grant");
    assert_eq!(c["visibility"], "public");
    assert_eq!(c["classes"], json!(["tasks"]));
    let text = std::fs::read_to_string(repo.path().join(c["path"].as_str().expect("path")))
        .expect("record");
    let id = c["id"].as_str().expect("id");
    assert!(
        text.starts_with(&format!("id = \"{id}\"\nkind = \"consent\"\ncreated = ")),
        "{text}"
    );
    assert!(text.contains("created_by = \"a-root\"\ngranted_by = \"human:mkoenig\"\naction = \"grant\"\nproject = \"p-checkout\"\nrepo = \"acme/widget\"\nvisibility = \"public\"\nclasses = [\"tasks\"]\n"), "{text}");
    let r = run(
        &repo,
        &fake,
        &[
            "github",
            "consent",
            "revoke",
            "--project",
            "checkout",
            "--granted-by",
            "human:mkoenig",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.doc);
    assert_eq!(r.doc["data"]["consent"]["action"], "revoke");
    assert_eq!(r.doc["data"]["consent"]["classes"], json!([]));
    let mut secrets = crate::github_support::GRANT.to_vec();
    secrets.extend(["--classes", "secrets"]);
    let r = run(&repo, &fake, &secrets);
    assert_eq!(r.code, 2);
    assert!(fake.writes().is_empty());
    fake.verify();
}

#[test]
fn a_public_repo_without_consent_withholds_everything_and_apply_is_refused() {
    let (repo, task) = projection_workspace();
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    let r = run(&repo, &fake, &["github", "projection", "checkout"]);
    assert_eq!(r.code, 0, "{}", r.doc);
    let d = &r.doc["data"];
    assert_eq!(d["visibility"], "public");
    assert_eq!(d["consent"]["covers_live_repo"], false);
    assert_eq!(item(&r.doc, &task)["action"], "withhold");
    assert_eq!(reasons(item(&r.doc, &task)), ["consent_missing"]);
    assert_eq!(d["blast_radius"]["create"], 0);
    assert_eq!(d["blast_radius"]["withhold"], 4);
    let digest = d["plan_digest"].as_str().expect("digest").to_string();
    let r = run(
        &repo,
        &fake,
        &[
            "github",
            "projection",
            "checkout",
            "--apply",
            "--digest",
            &digest,
        ],
    );
    assert_eq!(r.code, 3, "{}", r.doc);
    assert_eq!(r.doc["refused"]["policy"], "github.no_consent");
    assert!(
        r.doc["refused"]["next"]
            .as_str()
            .expect("next")
            .contains("dacli github consent grant --project checkout")
    );
    assert!(fake.writes().is_empty(), "{:?}", fake.writes());
    assert!(
        !repo.ws("txn").exists() && !repo.ws("evidence").exists(),
        "a refusal writes nothing"
    );
    fake.verify();
}

#[test]
fn preview_lists_withheld_items_with_typed_reasons_and_writes_nothing() {
    let (repo, task) = projection_workspace();
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    fake.get(&format!("{R}/issues"), 200, json!([]));
    consent(&repo, &fake);
    let before = files_under(&repo.ws(""));
    let r = run(&repo, &fake, &["github", "projection", "checkout"]);
    assert_eq!(r.code, 0, "{}", r.doc);
    assert_eq!(r.doc["data"]["consent"]["covers_live_repo"], true);
    assert_eq!(item(&r.doc, &task)["action"], "create");
    assert_eq!(
        item(&r.doc, &task)["fields"],
        json!(["title", "acceptance", "status"])
    );
    let items = r.doc["data"]["items"].as_array().expect("items");
    let by_reason = |reason: &str| {
        items
            .iter()
            .filter(|i| reasons(i).iter().any(|r| r == reason))
            .count()
    };
    assert_eq!(
        by_reason("secret_pattern"),
        1,
        "the task with a token in its title"
    );
    assert_eq!(
        by_reason("class_not_consented"),
        2,
        "the decision (not consented) and the finding"
    );
    assert_eq!(by_reason("note_private"), 1);
    let finding = items
        .iter()
        .find(|i| i["object"]["kind"] == "finding")
        .expect("finding");
    assert_eq!(
        finding["withheld"][0]["detail"],
        "findings is not in the project's github_projection.classes"
    );
    let secret = items
        .iter()
        .find(|i| reasons(i).iter().any(|r| r == "secret_pattern"))
        .expect("secret item");
    assert_eq!(secret["withheld"][0]["detail"], "github_token");
    assert!(
        !r.doc.to_string().contains("ghp_0123456789"),
        "withheld content is not echoed"
    );
    // The same world gives the same digest; nothing was written anywhere.
    let again = run(&repo, &fake, &["github", "projection", "checkout"]);
    assert_eq!(
        again.doc["data"]["plan_digest"],
        r.doc["data"]["plan_digest"]
    );
    assert_eq!(files_under(&repo.ws("")), before);
    assert!(fake.writes().is_empty(), "{:?}", fake.writes());
    fake.verify();
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.file_name().is_some_and(|n| n == ".locks") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn an_apply_cut_by_a_timeout_resumes_without_a_duplicate_issue() {
    let (repo, task) = projection_workspace();
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    let ws_id = {
        let config = std::fs::read_to_string(repo.ws("config.toml")).expect("config");
        config
            .lines()
            .find_map(|l| l.strip_prefix("workspace_id = \""))
            .map(|s| s.trim_end_matches('"').to_string())
            .expect("workspace id")
    };
    // The preview and the apply's observation see no issue; the create times out on our side
    // although GitHub created #12; from then on the list shows it.
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/issues")))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
            .up_to_n_times(2),
    );
    fake.get(
        &format!("{R}/issues"),
        200,
        json!([{"number": 12, "state": "open", "title": "Round once at the boundary",
                "html_url": "https://github.com/acme/widget/issues/12",
                "body": format!("<!-- dacli:{task} ws:{ws_id} -->\n## Acceptance\n")}]),
    );
    fake.mount(
        Mock::given(method("POST"))
            .and(path(format!("{R}/issues")))
            .respond_with(
                ResponseTemplate::new(201)
                    .set_body_json(json!({"number": 12}))
                    .set_delay(Duration::from_secs(6)),
            )
            .expect(1),
    );
    consent(&repo, &fake);
    let p = run(&repo, &fake, &["github", "projection", "checkout", &task]);
    assert_eq!(item(&p.doc, &task)["action"], "create", "{}", p.doc);
    let digest = p.doc["data"]["plan_digest"]
        .as_str()
        .expect("digest")
        .to_string();
    let apply = [
        "github",
        "projection",
        "checkout",
        task.as_str(),
        "--apply",
        "--digest",
        digest.as_str(),
    ];
    let first = run(&repo, &fake, &apply);
    assert_eq!(first.code, 0, "{}", first.doc);
    assert_eq!(first.doc["data"]["outcome"], "partial", "{}", first.doc);
    assert_eq!(first.doc["data"]["refusals"][0]["policy"], "github.access");
    assert!(
        first.doc["data"]["refusals"][0]["reason"]
            .as_str()
            .expect("reason")
            .contains("network_unreachable")
    );
    let txn = first.doc["data"]["txn"].as_str().expect("txn").to_string();
    // Run again: the open transaction resumes, finds #12 by its marker and creates nothing.
    let second = run(&repo, &fake, &apply);
    assert_eq!(second.code, 0, "{}", second.doc);
    assert_eq!(second.doc["data"]["outcome"], "completed", "{}", second.doc);
    assert_eq!(second.doc["data"]["txn"], txn.as_str());
    assert_eq!(item(&second.doc, &task)["remote"]["number"], 12);
    let task_file = files_under(&repo.ws("projects/checkout/tasks"))
        .into_iter()
        .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(&task)))
        .expect("task file");
    let text = std::fs::read_to_string(task_file).expect("task");
    assert!(
        text.contains("github = { issue = 12, synced_at = "),
        "{text}"
    );
    let ev = second.doc["data"]["evidence"][0]
        .as_str()
        .expect("evidence");
    let ev_text = std::fs::read_to_string(repo.path().join(ev)).expect("evidence file");
    assert!(
        ev_text.contains(&format!("subject = \"{task}\""))
            && ev_text.contains("after = \"issue-12\""),
        "{ev_text}"
    );
    assert!(
        !ev_text.contains("Round once"),
        "evidence holds no content: {ev_text}"
    );
    // A third run is the completed record, nothing more.
    let third = run(&repo, &fake, &apply);
    assert_eq!(third.doc["data"]["already_applied"], true, "{}", third.doc);
    let posts = fake
        .requests()
        .iter()
        .filter(|r| r.method.as_str() == "POST")
        .count();
    assert_eq!(posts, 1, "exactly one create was ever sent");
    assert!(files_containing(repo.path(), TOKEN).is_empty());
    fake.verify();
}

pub(crate) const S: &str = "77330bdbd7210dff076ce2ef87b0b125ec1d7da0";
const MERGED: &str = "e5bd3914e2e596debea16f433f57875b5b90bcd6";

/// A linked workspace whose project `checkout` lands by PR, a-root holding merge authority
/// and consent recorded for the public repository.
pub(crate) fn train_workspace() -> Repo {
    let repo = linked();
    let ok = |args: &[&str]| {
        let (code, doc) = repo.json(args);
        assert_eq!(code, 0, "{args:?}: {doc}");
    };
    ok(&[
        "project",
        "add",
        "Checkout",
        "--slug",
        "checkout",
        "--landing-mode",
        "pr",
    ]);
    ok(&[
        "project",
        "edit",
        "checkout",
        "--merge-authority",
        "a-root",
        "--projection-classes",
        "tasks",
    ]);
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    crate::github_support::consent_to(&repo, &fake, None);
    repo
}

/// The apply step of a preview: `args --apply --digest <the preview's plan digest>`.
pub(crate) fn apply_previewed(repo: &Repo, fake: &Fake, preview: &Ran, args: &[&str]) -> Ran {
    let digest = preview.doc["data"]["plan_digest"]
        .as_str()
        .expect("digest")
        .to_string();
    let mut all = args.to_vec();
    all.extend(["--apply", "--digest", &digest]);
    run(repo, fake, &all)
}

pub(crate) fn branch(sha: &str) -> Value {
    json!({"name": "x", "commit": {"sha": sha}})
}

/// What `plan` and `open` read: S is main's tip, release is BASE, two commits ahead.
pub(crate) fn promotion(fake: &Fake) {
    fake.get(
        &format!("{R}/compare/main...{S}"),
        200,
        json!({"status": "identical", "ahead_by": 0, "behind_by": 0}),
    );
    fake.get(&format!("{R}/branches/release"), 200, branch(BASE));
    fake.get(
        &format!("{R}/compare/release...{S}"),
        200,
        json!({"status": "ahead", "ahead_by": 2, "behind_by": 0,
               "merge_base_commit": {"sha": BASE},
               "commits": [
                   {"sha": HEAD, "commit": {"message": "Round once at the boundary (#7)\n\nbody"}},
                   {"sha": S, "commit": {"message": "Merge pull request #9 from acme/refunds\n\nRefunds"}}]}),
    );
}

/// What `land` reads for PR 31 with head `head`: green checks and an approval of S.
pub(crate) fn landing(fake: &Fake, head: &str) {
    let pull = patched(
        "pull",
        &[
            ("/number", json!(31)),
            ("/mergeable_state", json!("clean")),
            ("/head/sha", json!(head)),
            (
                "/head/ref",
                json!(format!("dacli/train/release/{}", &S[..12])),
            ),
            ("/base/ref", json!("release")),
            ("/base/sha", json!(BASE)),
        ],
    );
    fake.get(&format!("{R}/pulls/31"), 200, pull);
    fake.get(
        &format!("{R}/rules/branches/release"),
        200,
        fixture("rules_main"),
    );
    fake.get(
        &format!("{R}/branches/release/protection"),
        200,
        fixture("protection_main"),
    );
    fake.get(&format!("{R}/actions/runs"), 200, fixture("runs_green"));
    fake.get(
        &format!("{R}/commits/{head}/check-runs"),
        200,
        fixture("check_runs_green"),
    );
    fake.get(
        &format!("{R}/commits/{head}/status"),
        200,
        fixture("status_empty"),
    );
    fake.get(
        &format!("{R}/pulls/31/reviews"),
        200,
        json!([{"id": 1, "user": {"login": "ada"}, "state": "APPROVED", "commit_id": S}]),
    );
}

/// `release-train VERB` of `S` from main to release in `checkout`.
pub(crate) fn train_args(verb: &str) -> [&str; 10] {
    [
        "release-train",
        verb,
        "--project",
        "checkout",
        "--source",
        "main",
        "--target",
        "release",
        "--sha",
        S,
    ]
}

/// The fake as an open of `S` finds it: the promotion allowed, no train branch and no pull
/// request yet; the train branch's name.
fn before_open(fake: &Fake) -> String {
    promotion(fake);
    let branch_name = format!("dacli/train/release/{}", &S[..12]);
    fake.get(
        &format!("{R}/git/ref/heads/{branch_name}"),
        404,
        fixture("error_not_found"),
    );
    fake.get(&format!("{R}/pulls"), 200, json!([]));
    fake.get(R, 200, fixture("repo"));
    branch_name
}

/// A train record with PR 31 open, written the way `open` writes it.
pub(crate) fn write_train(repo: &Repo) -> String {
    let id = "tr-01KKBC511GDR08DRQGVNXCA1RA";
    repo.write(
        &format!(".dacli/trains/{id}.toml"),
        format!(
            "id = \"{id}\"\nkind = \"train\"\ncreated = 2026-03-02T08:00:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KKBC511GDR08DRQGVNXCA1RA\"\nproject = \"p-checkout\"\nrepo = \"acme/widget\"\nsource = \"main\"\ntarget = \"release\"\nsha = \"{S}\"\nmethod = \"merge\"\nstate = \"pr_open\"\ntarget_before = \"{BASE}\"\npr = {{ number = 31, head_sha = \"{S}\" }}\n"
        ),
    );
    id.to_string()
}

#[test]
fn a_train_is_planned_opened_and_landed_only_with_merge_authority() {
    let repo = train_workspace();
    // plan: read-only, names the commits and the PRs they bring.
    let fake = Fake::start();
    promotion(&fake);
    let r = run(&repo, &fake, &train_args("plan"));
    assert_eq!(r.code, 0, "{}", r.doc);
    let d = &r.doc["data"];
    assert_eq!(d["compare"]["status"], "ahead");
    assert_eq!(d["compare"]["ahead_by"], 2);
    assert_eq!(d["target_before"], BASE);
    assert_eq!(d["included_prs"], json!([7, 9]));
    assert_eq!(d["status"], "ready");
    assert!(fake.writes().is_empty());
    fake.verify();

    // open: preview writes nothing; apply creates the ref at S and one PR.
    let fake = Fake::start();
    let branch_name = before_open(&fake);
    let open = train_args("open");
    let p = run(&repo, &fake, &open);
    assert_eq!(p.code, 0, "{}", p.doc);
    assert_eq!(p.doc["data"]["mode"], "preview");
    assert!(fake.writes().is_empty());
    assert!(!repo.ws("trains").exists());
    fake.mount(
        Mock::given(method("POST"))
            .and(path(format!("{R}/git/refs")))
            .and(wiremock::matchers::body_partial_json(
                json!({"ref": format!("refs/heads/{branch_name}"), "sha": S}),
            ))
            .respond_with(ResponseTemplate::new(201).set_body_json(
                json!({"ref": format!("refs/heads/{branch_name}"), "object": {"sha": S}}),
            ))
            .expect(1),
    );
    fake.mount(
        Mock::given(method("POST"))
            .and(path(format!("{R}/pulls")))
            .and(wiremock::matchers::body_partial_json(json!({"head": branch_name, "base": "release"})))
            .respond_with(ResponseTemplate::new(201).set_body_json(json!({"number": 31, "html_url": "https://github.com/acme/widget/pull/31", "head": {"sha": S}})))
            .expect(1),
    );
    let o = apply_previewed(&repo, &fake, &p, &open);
    assert_eq!(o.code, 0, "{}", o.doc);
    assert_eq!(o.doc["data"]["state"], "pr_open");
    assert_eq!(o.doc["data"]["canonical_pr"]["number"], 31);
    let train = o.doc["data"]["train_id"]
        .as_str()
        .expect("train id")
        .to_string();
    let body = fake
        .requests()
        .into_iter()
        .find(|r| r.method.as_str() == "POST" && r.url.path().ends_with("/pulls"))
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .expect("the PR request");
    assert!(
        body.contains(&format!("<!-- dacli-train:release:{S} ws:")),
        "{body}"
    );
    let text =
        std::fs::read_to_string(repo.ws(&format!("trains/{train}.toml"))).expect("train file");
    assert!(
        text.contains("state = \"pr_open\"") && text.contains("pr = { number = 31"),
        "{text}"
    );
    fake.verify();

    // land: someone outside merge_authority is refused before anything is sent (with the
    // open step's digest: the refusal comes before any digest is compared).
    let digest = p.doc["data"]["plan_digest"]
        .as_str()
        .expect("digest")
        .to_string();
    let (_, builder) = agent(&repo, "builder", 3, "rw");
    let fake = Fake::start();
    let r = run_with(
        &repo,
        &fake.url(),
        &[
            "release-train",
            "land",
            &train,
            "--apply",
            "--digest",
            &digest,
        ],
        &[("GH_TOKEN", TOKEN)],
        Some(&builder),
    );
    assert_eq!(r.code, 3, "{}", r.doc);
    assert_eq!(r.doc["refused"]["policy"], "merge.no_authority");
    assert!(
        r.doc["refused"]["next"]
            .as_str()
            .expect("next")
            .contains("a-root")
    );
    assert!(fake.requests().is_empty());
    fake.verify();

    // a-root previews the gates, then lands with the SHA guard.
    let fake = Fake::start();
    landing(&fake, S);
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/branches/release")))
            .respond_with(ResponseTemplate::new(200).set_body_json(branch(BASE)))
            .up_to_n_times(2),
    );
    fake.get(&format!("{R}/branches/release"), 200, branch(MERGED));
    fake.get(
        &format!("{R}/compare/{S}...release"),
        200,
        json!({"status": "ahead", "ahead_by": 1, "behind_by": 0}),
    );
    let pv = run(&repo, &fake, &["release-train", "land", &train]);
    assert_eq!(pv.code, 0, "{}", pv.doc);
    let gates = pv.doc["data"]["gates"].as_array().expect("gates");
    assert!(gates.iter().all(|g| g["result"] == "pass"), "{gates:?}");
    let names: Vec<&str> = gates
        .iter()
        .map(|g| g["gate"].as_str().expect("gate"))
        .collect();
    assert_eq!(
        names,
        [
            "head_pinned",
            "target_unchanged",
            "checks",
            "reviews",
            "merge_authority",
            "landing_policy",
            "merge_queue"
        ]
    );
    let land_digest = pv.doc["data"]["plan_digest"]
        .as_str()
        .expect("digest")
        .to_string();
    assert!(fake.writes().is_empty());
    fake.mount(
        Mock::given(method("PUT"))
            .and(path(format!("{R}/pulls/31/merge")))
            .and(wiremock::matchers::body_json(json!({"sha": S, "merge_method": "merge"})))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"sha": MERGED, "merged": true, "message": "Pull Request successfully merged"})))
            .expect(1),
    );
    let l = run(
        &repo,
        &fake,
        &[
            "release-train",
            "land",
            &train,
            "--apply",
            "--digest",
            &land_digest,
        ],
    );
    assert_eq!(l.code, 0, "{}", l.doc);
    assert_eq!(l.doc["data"]["state"], "verified", "{}", l.doc);
    assert_eq!(l.doc["data"]["outcome"]["merge_commit_sha"], MERGED);
    let text =
        std::fs::read_to_string(repo.ws(&format!("trains/{train}.toml"))).expect("train file");
    assert!(
        text.contains(&format!("merge_commit = \"{MERGED}\""))
            && text.contains("state = \"verified\""),
        "{text}"
    );
    let ev = l.doc["data"]["evidence"][0].as_str().expect("evidence");
    assert!(ev.starts_with(".dacli/evidence/release-train/"), "{ev}");
    assert!(!text.contains("tag"), "a train never records tags: {text}");
    fake.verify();

    // status shows it.
    let (code, doc) = repo.json(&["release-train", "status"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["trains"][0]["state"], "verified");
}

#[test]
fn a_train_whose_head_moved_is_refused_and_a_409_merge_is_head_moved() {
    let repo = train_workspace();
    let train = write_train(&repo);
    // The PR head is no longer S: the gate fails and apply sends no merge.
    let fake = Fake::start();
    landing(&fake, HEAD);
    fake.get(&format!("{R}/branches/release"), 200, branch(BASE));
    let pv = run(&repo, &fake, &["release-train", "land", &train]);
    assert_eq!(pv.code, 0, "{}", pv.doc);
    let head = &pv.doc["data"]["gates"][0];
    assert_eq!(head["gate"], "head_pinned");
    assert_eq!(head["result"], "fail");
    let r = apply_previewed(&repo, &fake, &pv, &["release-train", "land", &train]);
    assert_eq!(r.code, 3, "{}", r.doc);
    assert_eq!(r.doc["refused"]["policy"], "train.head_moved");
    assert!(fake.writes().is_empty(), "{:?}", fake.writes());
    fake.verify();

    // Everything passes, but GitHub answers 409 to the guarded merge.
    let fake = Fake::start();
    landing(&fake, S);
    fake.get(&format!("{R}/branches/release"), 200, branch(BASE));
    fake.mount(
        Mock::given(method("PUT"))
            .and(path(format!("{R}/pulls/31/merge")))
            .respond_with(ResponseTemplate::new(409).set_body_json(
                json!({"message": "Head branch was modified. Review and try the merge again."}),
            ))
            .expect(1),
    );
    let pv = run(&repo, &fake, &["release-train", "land", &train]);
    let r = apply_previewed(&repo, &fake, &pv, &["release-train", "land", &train]);
    assert_eq!(r.code, 3, "{}", r.doc);
    assert_eq!(r.doc["refused"]["policy"], "train.head_moved");
    assert!(
        r.doc["refused"]["reason"]
            .as_str()
            .expect("reason")
            .contains("409")
    );
    let text = std::fs::read_to_string(repo.ws(&format!("trains/{train}.toml"))).expect("train");
    assert!(text.contains("state = \"failed\""), "{text}");
    fake.verify();
}

#[test]
fn squash_rebase_and_tags_are_refused_before_any_request() {
    let repo = train_workspace();
    let fake = Fake::start();
    for (extra, policy) in [
        (vec!["--method", "squash"], "train.method_rewrites_sha"),
        (vec!["--method", "rebase"], "train.method_rewrites_sha"),
        (vec!["--tag", "v1.0.0"], "train.no_publication"),
    ] {
        let mut args = train_args("plan")[..8].to_vec();
        args.extend(extra);
        let r = run(&repo, &fake, &args);
        assert_eq!(r.code, 3, "{}", r.doc);
        assert_eq!(r.doc["refused"]["policy"], policy);
    }
    assert!(fake.requests().is_empty());
    fake.verify();
}

/// Sends `calls` to `dacli mcp serve` (legacy handshake first) and returns each tools/call
/// result's parsed text content.
fn mcp(repo: &Repo, fake: &Fake, calls: &[(&str, Value)]) -> Vec<Value> {
    mcp_as(repo, fake, None, calls)
}

/// As [`mcp`], the server running as the agent whose token is given (else a-root).
fn mcp_as(
    repo: &Repo,
    fake: &Fake,
    agent_token: Option<&str>,
    calls: &[(&str, Value)],
) -> Vec<Value> {
    use std::io::Write as _;
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("dacli"));
    cmd.current_dir(repo.path())
        .args(["mcp", "serve"])
        .env_remove("DACLI_AGENT")
        .env_remove("GITHUB_TOKEN")
        .env("DACLI_TEST_CLOCK", "2026-03-02T10:00:00Z")
        .env("DACLI_TEST_SEED", "4242")
        .env("DACLI_GITHUB_API_URL", fake.url())
        .env("GH_TOKEN", TOKEN)
        .env("PATH", stub_path(repo.path(), "exit 1"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(t) = agent_token {
        cmd.env("DACLI_AGENT", t);
    }
    let mut child = cmd.spawn().expect("server starts");
    let mut input = String::new();
    input.push_str(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}}).to_string());
    input.push('\n');
    input.push_str(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    input.push('\n');
    for (i, (tool, args)) in calls.iter().enumerate() {
        let mut args = args.clone();
        args["schema_version"] = json!(1);
        input.push_str(&json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": {"name": tool, "arguments": args}}).to_string());
        input.push('\n');
    }
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("exits");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!stdout.contains(TOKEN) && !String::from_utf8_lossy(&out.stderr).contains(TOKEN));
    // Reads run beside writes, so answers may arrive out of request order: match by id.
    let mut results = Vec::new();
    for line in stdout.lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if let Some(id) = v["id"].as_i64().filter(|id| *id >= 10) {
            assert_eq!(v["result"]["isError"], false, "{v}");
            let text = v["result"]["content"][0]["text"].as_str().expect("text");
            let parsed: Value =
                serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
            results.push((id, parsed));
        }
    }
    results.sort_by_key(|(id, _)| *id);
    let results: Vec<Value> = results.into_iter().map(|(_, v)| v).collect();
    assert_eq!(results.len(), calls.len(), "{stdout}");
    results
}

#[test]
fn the_three_tools_work_over_mcp() {
    let (repo, task) = projection_workspace();
    let (code, _) = repo.json(&["project", "edit", "checkout", "--landing-mode", "pr"]);
    assert_eq!(code, 0);
    let fake = Fake::start();
    failing_pr(&fake);
    promotion(&fake);
    fake.get(R, 200, fixture("repo"));
    let results = mcp(
        &repo,
        &fake,
        &[
            ("diagnose_pr", json!({"target": {"pr": 7}})),
            (
                "release_train",
                json!({"action": "plan", "project": "checkout", "source": "main", "target": "release", "sha": S}),
            ),
            ("github_projection", json!({"project": "checkout"})),
            ("release_train", json!({"action": "status"})),
        ],
    );
    let diag = &results[0];
    assert_eq!(diag["verdict"]["class"], "failing_checks", "{diag}");
    assert_eq!(diag["annotations"][0]["path"], "src/money.rs");
    assert_eq!(results[1]["compare"]["status"], "ahead", "{}", results[1]);
    let proj = &results[2];
    assert_eq!(proj["mode"], "preview", "{proj}");
    let item = proj["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["object"]["id"] == task.as_str())
        .expect("task item");
    assert_eq!(item["withheld"][0]["reason"], "consent_missing");
    assert_eq!(results[3]["trains"], json!([]));
    assert!(fake.writes().is_empty(), "{:?}", fake.writes());
    fake.verify();
    // The capabilities manifest now says the three are served.
    let (code, doc) = repo.json(&["capabilities"]);
    assert_eq!(code, 0);
    for tool in ["diagnose_pr", "release_train", "github_projection"] {
        assert_eq!(
            doc["data"]["capabilities"][format!("mcp.tool.{tool}")]["available"],
            true,
            "{tool}"
        );
    }
}

#[test]
fn an_interrupted_open_is_resumed_without_repeating_a_step() {
    let repo = train_workspace();
    let fake = Fake::start();
    before_open(&fake);
    let open = train_args("open");
    let p = run(&repo, &fake, &open);
    fake.mount(
        Mock::given(method("POST"))
            .and(path(format!("{R}/git/refs")))
            .respond_with(ResponseTemplate::new(201).set_body_json(json!({"object": {"sha": S}})))
            .expect(1),
    );
    fake.mount(
        Mock::given(method("POST"))
            .and(path(format!("{R}/pulls")))
            .respond_with(ResponseTemplate::new(502))
            .expect(1),
    );
    let r = apply_previewed(&repo, &fake, &p, &open);
    assert_eq!(r.code, 1, "{}", r.doc);
    assert_eq!(r.doc["error"]["code"], "E_GITHUB_ACCESS");
    assert!(
        r.doc["error"]["message"]
            .as_str()
            .expect("message")
            .contains("pr_opened"),
        "{}",
        r.doc
    );
    fake.verify();
    let (_, status) = repo.json(&["release-train", "status"]);
    let train = status["data"]["trains"][0]["id"]
        .as_str()
        .expect("a train")
        .to_string();
    assert_eq!(status["data"]["trains"][0]["state"], "planned");

    // The ref exists already: resume opens the PR and creates no second ref.
    let fake = Fake::start();
    fake.get(&format!("{R}/pulls"), 200, json!([]));
    fake.mount(
        Mock::given(method("POST"))
            .and(path(format!("{R}/pulls")))
            .respond_with(
                ResponseTemplate::new(201).set_body_json(json!({"number": 31, "head": {"sha": S}})),
            )
            .expect(1),
    );
    let r = run(&repo, &fake, &["release-train", "resume", &train]);
    assert_eq!(r.code, 0, "{}", r.doc);
    assert_eq!(r.doc["data"]["state"], "pr_open");
    assert_eq!(r.doc["data"]["canonical_pr"]["number"], 31);
    let steps: Vec<String> = r.doc["data"]["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| {
            format!(
                "{}:{}",
                s["step"].as_str().expect("step"),
                s["status"].as_str().expect("status")
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            "plan:done",
            "train_ref_created:started",
            "train_ref_created:done",
            "pr_opened:started",
            "pr_opened:failed",
            "pr_opened:started",
            "pr_opened:done",
            "outcome:done"
        ]
    );
    fake.verify();
}

#[test]
fn push_previews_and_applies_in_one_step_and_a_second_push_changes_nothing() {
    let (repo, task) = projection_workspace();
    let ws_id = std::fs::read_to_string(repo.ws("config.toml"))
        .expect("config")
        .lines()
        .find_map(|l| {
            l.strip_prefix("workspace_id = \"")
                .map(|s| s.trim_end_matches('"').to_string())
        })
        .expect("workspace id");
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    // Without consent a public repository gets nothing.
    let r = run(&repo, &fake, &["github", "push", "checkout"]);
    assert_eq!(r.code, 3, "{}", r.doc);
    assert_eq!(r.doc["refused"]["policy"], "github.no_consent");
    consent(&repo, &fake);
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/issues")))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
            .up_to_n_times(2),
    );
    fake.get(
        &format!("{R}/issues"),
        200,
        json!([{"number": 40, "state": "open", "body": format!("<!-- dacli:{task} ws:{ws_id} -->\n")}]),
    );
    fake.mount(
        Mock::given(method("POST"))
            .and(path(format!("{R}/issues")))
            .and(wiremock::matchers::body_partial_json(
                json!({"title": "Round once at the boundary"}),
            ))
            .respond_with(ResponseTemplate::new(201).set_body_json(json!({"number": 40})))
            .expect(1),
    );
    let dry = run(&repo, &fake, &["github", "push", "--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.doc);
    assert_eq!(dry.doc["data"]["mode"], "preview");
    assert!(fake.writes().is_empty());
    let r = run(&repo, &fake, &["github", "push", "checkout"]);
    assert_eq!(r.code, 0, "{}", r.doc);
    assert_eq!(r.doc["data"]["outcome"], "completed", "{}", r.doc);
    assert_eq!(item(&r.doc, &task)["remote"]["number"], 40);
    let body = fake
        .requests()
        .into_iter()
        .find(|r| r.method.as_str() == "POST")
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .expect("the create");
    assert!(
        body.contains(&format!("<!-- dacli:{task} ws:{ws_id} -->")),
        "{body}"
    );
    assert!(
        !body.contains("ghp_"),
        "the withheld task was not sent: {body}"
    );
    let again = run(&repo, &fake, &["github", "push"]);
    assert_eq!(again.code, 0, "{}", again.doc);
    assert_eq!(item(&again.doc, &task)["action"], "none", "{}", again.doc);
    assert!(again.doc["data"]["txn"].is_null());
    assert_eq!(fake.writes().len(), 1, "{:?}", fake.writes());
    fake.verify();
    let (_, ro) = agent(&repo, "reviewer", 4, "ro");
    let r = run_with(
        &repo,
        &fake.url(),
        &["github", "push", "checkout"],
        &[("GH_TOKEN", TOKEN)],
        Some(&ro),
    );
    assert_eq!(r.code, 3);
    assert_eq!(r.doc["refused"]["policy"], "grant.read_only");
}

/// Every event file under `.dacli/events/`, parsed loosely: (path, text).
fn event_files(repo: &Repo) -> Vec<(PathBuf, String)> {
    files_under(&repo.ws("events"))
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("event");
            (p, text)
        })
        .collect()
}

/// The pull workspace: `projection_workspace` plus a third task that is done. Returns the
/// repo, the open task's id and the done task's id.
fn pull_workspace() -> (Repo, String, String) {
    let (repo, open) = projection_workspace();
    let ok = |args: &[&str]| {
        let (code, doc) = repo.json(args);
        assert_eq!(code, 0, "{args:?}: {doc}");
        doc
    };
    let t = ok(&[
        "task",
        "add",
        "Refund shim",
        "--project",
        "checkout",
        "--accept",
        "refunds round once",
    ]);
    let done = t["data"]["task"]["id"].as_str().expect("id").to_string();
    ok(&["task", "check", &done, "--n", "1"]);
    ok(&["task", "done", &done]);
    (repo, open, done)
}

/// Issues as GitHub lists them: #12 mirrors the open task (three comments), #13 the done task
/// (reopened by a person), #14 a pull request and #15 another workspace's mirror, both of
/// which carry markers and must be ignored.
fn mapped_issues(fake: &Fake, ws: &str, open: &str, done: &str) {
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/issues")))
            .and(query_param("state", "all"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([
                {"number": 12, "state": "open", "comments": 3,
                 "body": format!("<!-- dacli:{open} ws:{ws} -->\n## Acceptance\n")},
                {"number": 13, "state": "open", "comments": 0,
                 "body": format!("<!-- dacli:{done} ws:{ws} -->\nStatus: done\n")},
                {"number": 14, "state": "open", "comments": 5,
                 "pull_request": {"url": "https://api.github.com/repos/acme/widget/pulls/14"},
                 "body": format!("<!-- dacli:{open} ws:{ws} -->")},
                {"number": 15, "state": "open", "comments": 2,
                 "body": format!("<!-- dacli:{open} ws:01KJOTHERWORKSPACE00000000 -->")},
            ]))),
    );
    fake.get(
        &format!("{R}/issues/12/comments"),
        200,
        fixture("issue_comments"),
    );
    fake.get(
        &format!("{R}/issues/13/events"),
        200,
        fixture("issue_events_reopened"),
    );
}

#[test]
fn pull_brings_comments_and_a_reopen_in_as_events_once() {
    let (repo, open, done) = pull_workspace();
    let ws = ws_id(&repo);
    let fake = Fake::start();
    mapped_issues(&fake, &ws, &open, &done);
    let canonical = files_under(&repo.ws("projects"))
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).expect("read");
            (p, bytes)
        })
        .collect::<Vec<_>>();
    let before = event_files(&repo).len();

    // A dry run lists what would be written and writes nothing.
    let dry = run(&repo, &fake, &["github", "pull", "checkout", "--dry-run"]);
    assert_eq!(dry.code, 0, "{}\n{}", dry.doc, dry.stderr);
    let d = &dry.doc["data"];
    assert_eq!(d["mode"], "preview");
    assert_eq!(d["events"], json!([]));
    assert_eq!(d["skipped_duplicates"], 0);
    let refs: Vec<&str> = d["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["github_ref"].as_str().expect("ref"))
        .collect();
    assert_eq!(
        refs,
        [
            "acme/widget#comment-501",
            "acme/widget#comment-503",
            "acme/widget#event-901"
        ],
        "dacli's own comment (502), the PR and the other workspace's issue stay out; only the reopen after the close counts"
    );
    assert_eq!(event_files(&repo).len(), before);

    let r = run(&repo, &fake, &["github", "pull", "checkout"]);
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    let d = &r.doc["data"];
    assert_eq!(d["mode"], "apply");
    assert_eq!(d["skipped_duplicates"], 0);
    let ids: Vec<String> = d["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e.as_str().expect("id").to_string())
        .collect();
    assert_eq!(ids.len(), 3, "{d}");
    let written = event_files(&repo);
    assert_eq!(written.len(), before + 3);
    let file_of = |id: &str| {
        written
            .iter()
            .find(|(p, _)| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(id))
            })
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| panic!("no event file for {id}"))
    };
    let first = file_of(&ids[0]);
    assert!(first.contains("event_kind = \"comment\""), "{first}");
    assert!(first.contains(&format!("about = \"{open}\"")), "{first}");
    assert!(first.contains("origin = \"github:mkoenig\""), "{first}");
    assert!(
        first.contains("github_ref = \"acme/widget#comment-501\""),
        "{first}"
    );
    assert!(
        first.contains("Please cover refunds too.\nThey round the same way.\n"),
        "{first}"
    );
    let reopen = file_of(&ids[2]);
    assert!(
        reopen.contains("event_kind = \"propose-status\""),
        "{reopen}"
    );
    assert!(reopen.contains(&format!("about = \"{done}\"")), "{reopen}");
    assert!(reopen.contains("to = \"open\""), "{reopen}");
    assert!(reopen.contains("origin = \"github:mkoenig\""), "{reopen}");
    assert!(
        reopen.contains("github_ref = \"acme/widget#event-901\""),
        "{reopen}"
    );
    assert!(
        !written.iter().any(|(_, t)| t.contains("Status: active")),
        "dacli's own comment never comes back"
    );
    // The events are what every reader folds in: the comment waits on the open task, the
    // reopen request on the done one, which stays done until its owner acts.
    let (_, show) = repo.json(&["task", "show", &open]);
    let pending = show["data"]["pending_events"].to_string();
    assert!(
        pending.contains(&ids[0]) && pending.contains(&ids[1]),
        "{show}"
    );
    let (_, show) = repo.json(&["task", "show", &done]);
    assert_eq!(show["data"]["status"], "done");
    assert!(
        show["data"]["pending_events"].to_string().contains(&ids[2]),
        "{show}"
    );
    // No canonical file was touched.
    for (p, bytes) in &canonical {
        assert_eq!(
            &std::fs::read(p).expect("read"),
            bytes,
            "{} changed",
            p.display()
        );
    }

    // A second pull brings nothing twice.
    let again = run(&repo, &fake, &["github", "pull"]);
    assert_eq!(again.code, 0, "{}", again.doc);
    assert_eq!(again.doc["data"]["events"], json!([]));
    assert_eq!(again.doc["data"]["skipped_duplicates"], 3);
    assert_eq!(event_files(&repo).len(), before + 3);
    assert!(
        fake.writes().is_empty(),
        "pull never writes to GitHub: {:?}",
        fake.writes()
    );

    // Archived comments do not come back either.
    let (code, doc) = repo.json(&["sync"]);
    assert_eq!(code, 0, "{doc}");
    let archive = [
        "events",
        "archive",
        "--before",
        "2100-01-01T00:00:00Z",
        "--include-open-task-history",
    ];
    let (code, preview) = repo.json(&archive);
    assert_eq!(code, 0, "{preview}");
    let digest = preview["data"]["plan_digest"].as_str().expect("digest");
    let mut apply = archive.to_vec();
    apply.extend(["--apply", "--digest", digest]);
    let (code, doc) = repo.json(&apply);
    assert_eq!(code, 0, "{doc}");
    let live = event_files(&repo);
    assert!(
        !live
            .iter()
            .any(|(_, t)| t.contains("acme/widget#comment-501")),
        "the comment was archived: {doc}"
    );
    let after = run(&repo, &fake, &["github", "pull", "checkout"]);
    assert_eq!(after.code, 0, "{}", after.doc);
    assert_eq!(after.doc["data"]["events"], json!([]), "{}", after.doc);
    assert_eq!(after.doc["data"]["skipped_duplicates"], 3);
    assert_eq!(event_files(&repo).len(), live.len());
    assert!(files_containing(repo.path(), TOKEN).is_empty());
    fake.verify();
}

#[test]
fn pull_needs_rw_and_a_link_and_types_access_problems() {
    let (repo, _open, _done) = pull_workspace();
    let fake = Fake::start();
    let (_, ro) = agent(&repo, "reviewer", 4, "ro");
    let r = run_with(
        &repo,
        &fake.url(),
        &["github", "pull", "checkout"],
        &[("GH_TOKEN", TOKEN)],
        Some(&ro),
    );
    assert_eq!(r.code, 3, "{}", r.doc);
    assert_eq!(r.doc["refused"]["policy"], "grant.read_only");
    // A bad token is a lasting problem: refused, typed, nothing written.
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/issues")))
            .respond_with(
                ResponseTemplate::new(401).set_body_json(fixture("error_bad_credentials")),
            ),
    );
    let before = event_files(&repo).len();
    let r = run(&repo, &fake, &["github", "pull", "checkout"]);
    assert_eq!(r.code, 3, "{}", r.doc);
    assert_eq!(r.doc["refused"]["policy"], "github.access");
    assert!(
        r.doc["refused"]["reason"]
            .as_str()
            .expect("reason")
            .contains("bad_credentials"),
        "{}",
        r.doc
    );
    assert_eq!(event_files(&repo).len(), before);
    // The budget bounds the calls: one list page is all that fits.
    let fake2 = Fake::start();
    mapped_issues(&fake2, &ws_id(&repo), &_open, &_done);
    let r = run(
        &repo,
        &fake2,
        &["github", "pull", "checkout", "--max-api-calls", "1"],
    );
    assert_eq!(r.code, 1, "{}", r.doc);
    assert_eq!(r.doc["error"]["code"], "E_GITHUB_ACCESS");
    assert_eq!(fake2.requests().len(), 1);
    assert_eq!(event_files(&repo).len(), before);
    fake.verify();
    fake2.verify();
    // Unlinked: refused before any request.
    let plain = Repo::initialized();
    let (code, _) = plain.json(&["project", "add", "Checkout", "--slug", "checkout"]);
    assert_eq!(code, 0);
    let fake3 = Fake::start();
    let r = run(&plain, &fake3, &["github", "pull", "checkout"]);
    assert_eq!(r.code, 3, "{}", r.doc);
    assert_eq!(r.doc["refused"]["policy"], "github.unlinked");
    assert!(fake3.requests().is_empty());
}

#[test]
fn sync_pulls_then_pushes_and_lists_what_either_refused() {
    let (repo, open, done) = pull_workspace();
    let ws = ws_id(&repo);
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    mapped_issues(&fake, &ws, &open, &done);
    let before = event_files(&repo).len();
    // A dry run previews both halves and writes nothing anywhere.
    let dry = run(&repo, &fake, &["github", "sync", "checkout", "--dry-run"]);
    assert_eq!(dry.code, 0, "{}\n{}", dry.doc, dry.stderr);
    assert_eq!(dry.doc["data"]["pull"]["mode"], "preview");
    assert_eq!(
        dry.doc["data"]["pull"]["items"]
            .as_array()
            .expect("items")
            .len(),
        3
    );
    assert_eq!(dry.doc["data"]["push"]["mode"], "preview");
    assert_eq!(dry.doc["data"]["refusals"], json!([]));
    assert_eq!(event_files(&repo).len(), before);
    // The public repository has no consent: the push half is refused, the pull half runs.
    let r = run(&repo, &fake, &["github", "sync", "checkout"]);
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    let d = &r.doc["data"];
    assert_eq!(d["pull"]["events"].as_array().expect("events").len(), 3);
    assert!(d["push"].is_null(), "{d}");
    assert_eq!(d["refusals"][0]["subject"], "push");
    assert_eq!(d["refusals"][0]["policy"], "github.no_consent");
    assert_eq!(event_files(&repo).len(), before + 3);
    assert!(fake.writes().is_empty(), "{:?}", fake.writes());
    assert!(files_containing(repo.path(), TOKEN).is_empty());
    fake.verify();
    // Both halves refused: the sync is refused.
    let plain = Repo::initialized();
    let (code, _) = plain.json(&["project", "add", "Checkout", "--slug", "checkout"]);
    assert_eq!(code, 0);
    let fake = Fake::start();
    let r = run(&plain, &fake, &["github", "sync", "checkout"]);
    assert_eq!(r.code, 3, "{}", r.doc);
    assert_eq!(r.doc["refused"]["policy"], "github.unlinked");
    let reason = r.doc["refused"]["reason"].as_str().expect("reason");
    assert!(
        reason.contains("pull:") && reason.contains("push:"),
        "{reason}"
    );
    assert!(fake.requests().is_empty());
}

/// Every projection class gets a per-item verdict: tasks, decisions, findings, metrics, refs,
/// risks and escalations are published when the project lists them and consent covers them,
/// and otherwise withheld with a typed reason; the writes carry only the allowlisted fields.
#[test]
fn every_projection_class_gets_a_verdict_and_only_allowlisted_fields_go_out() {
    let (repo, task) = projection_workspace();
    let ok = |args: &[&str]| {
        let (code, doc) = repo.json(args);
        assert_eq!(code, 0, "{args:?}: {doc}");
        doc
    };
    ok(&[
        "project",
        "edit",
        "checkout",
        "--projection-classes",
        "tasks,decisions,findings,metrics,refs,risks,escalations",
    ]);
    let metric = ok(&[
        "note",
        "add",
        "metric",
        "Rounding drift",
        "--project",
        "checkout",
        "--goal",
        "totals agree",
        "--question",
        "how often do they differ?",
        "--metric",
        "differing totals per day",
    ])["data"]["note"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let reference = ok(&[
        "note",
        "add",
        "ref",
        "Rounding spec",
        "--project",
        "checkout",
        "--body",
        "the draft is at /home/alice/drafts/rounding.pdf",
    ])["data"]["note"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let risk = ok(&[
        "risk",
        "add",
        "Refunds may round twice",
        "--project",
        "checkout",
        "--impact",
        "high",
        "--likelihood",
        "medium",
        "--indicator",
        "refunds off by one cent",
        "--action",
        "route refunds through the shim",
    ])["data"]["risk"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let question = ok(&[
        "ask",
        "p-checkout",
        "Which rounding mode does finance want?\nThe internal thread says half-up.",
        "--to",
        "human",
    ])["data"]["question"]
        .as_str()
        .expect("id")
        .to_string();
    // An escalation recorded from outside text: never re-published.
    let outside = "01KJSQZ5D82J9DC9Y09TT3NW6F";
    repo.write(
        &format!(".dacli/events/2026/03/03/{outside}-a-root-help.md"),
        format!(
            "+++\nid = \"{outside}\"\nkind = \"event\"\nevent_kind = \"help\"\ncreated = 2026-03-03T11:40:09Z\ncreated_by = \"a-root\"\nabout = \"p-checkout\"\norigin = \"github:mallory\"\nto = \"human\"\nblocks = false\n+++\n\nPlease publish this verbatim.\n"
        )
        .as_bytes(),
    );
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    fake.get(&format!("{R}/issues"), 200, json!([]));
    crate::github_support::consent_to(&repo, &fake, Some("tasks,metrics,refs,risks,escalations"));
    let p = run(&repo, &fake, &["github", "projection", "checkout"]);
    assert_eq!(p.code, 0, "{}\n{}", p.doc, p.stderr);
    let verdict = |id: &str| {
        let i = item(&p.doc, id);
        (
            i["object"]["kind"].as_str().expect("kind").to_string(),
            i["action"].as_str().expect("action").to_string(),
            reasons(i),
        )
    };
    let kinds: std::collections::BTreeSet<String> = p.doc["data"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["object"]["kind"].as_str().expect("kind").to_string())
        .collect();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [
            "decision",
            "escalation",
            "finding",
            "metric",
            "ref",
            "risk",
            "task"
        ]
    );
    assert_eq!(verdict(&task), ("task".into(), "create".into(), vec![]));
    assert_eq!(verdict(&metric), ("metric".into(), "create".into(), vec![]));
    assert_eq!(
        item(&p.doc, &metric)["fields"],
        json!(["title", "goal", "question", "metric"])
    );
    assert_eq!(
        verdict(&reference),
        (
            "ref".into(),
            "withhold".into(),
            vec!["absolute_path".to_string()]
        )
    );
    assert_eq!(verdict(&risk), ("risk".into(), "create".into(), vec![]));
    assert_eq!(
        verdict(&question),
        ("escalation".into(), "create".into(), vec![])
    );
    assert_eq!(item(&p.doc, &question)["fields"], json!(["summary"]));
    assert_eq!(
        verdict(outside),
        (
            "escalation".into(),
            "withhold".into(),
            vec!["untrusted_origin".to_string()]
        )
    );
    let decision = p.doc["data"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["object"]["kind"] == "decision")
        .expect("decision");
    assert_eq!(reasons(decision), ["class_not_consented"]);
    assert_eq!(
        decision["withheld"][0]["detail"],
        "decisions is not among the classes consented to"
    );
    let finding = p.doc["data"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["object"]["kind"] == "finding")
        .expect("finding");
    assert!(
        reasons(finding).contains(&"note_private".to_string()),
        "{finding}"
    );
    assert!(
        reasons(finding).contains(&"class_not_consented".to_string()),
        "{finding}"
    );
    assert_eq!(p.doc["data"]["blast_radius"]["create"], 4);
    assert!(fake.writes().is_empty());

    // Apply: exactly the four creates, each with only its allowlisted fields.
    let mut n = 100;
    for title in [
        "Round once at the boundary",
        "Rounding drift",
        "Refunds may round twice",
        "Which rounding mode does finance want?",
    ] {
        n += 1;
        fake.mount(
            Mock::given(method("POST"))
                .and(path(format!("{R}/issues")))
                .and(wiremock::matchers::body_partial_json(
                    json!({"title": title}),
                ))
                .respond_with(ResponseTemplate::new(201).set_body_json(json!({"number": n})))
                .expect(1),
        );
    }
    let a = apply_previewed(&repo, &fake, &p, &["github", "projection", "checkout"]);
    assert_eq!(a.code, 0, "{}\n{}", a.doc, a.stderr);
    assert_eq!(a.doc["data"]["outcome"], "completed", "{}", a.doc);
    let bodies: Vec<String> = fake
        .requests()
        .into_iter()
        .filter(|r| r.method.as_str() == "POST")
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert_eq!(bodies.len(), 4, "{bodies:?}");
    let all = bodies.join("\n");
    for never in [
        "/home/alice",
        "The internal thread",
        "publish this verbatim",
        "half-even",
        "Refund rounds twice",
    ] {
        assert!(!all.contains(never), "`{never}` went out: {all}");
    }
    let risk_body = bodies
        .iter()
        .find(|b| b.contains("Refunds may round twice"))
        .expect("risk");
    assert!(
        risk_body.contains("Impact: high") && risk_body.contains("route refunds through the shim"),
        "{risk_body}"
    );
    fake.verify();
}

/// Required checks come from rulesets as well as classic branch protection: a check only a
/// ruleset requires is required, and absent on the head it is missing, never green.
#[test]
fn a_check_required_only_by_a_ruleset_is_required_and_missing_is_not_green() {
    let repo = linked();
    let fake = Fake::start();
    fake.get(
        &format!("{R}/rules/branches/main"),
        200,
        patched(
            "rules_main",
            &[(
                "/0/parameters/required_status_checks",
                json!([{"context": "test"}, {"context": "e2e"}]),
            )],
        ),
    );
    fake.get(
        &format!("{R}/branches/main/protection"),
        200,
        patched(
            "protection_main",
            &[("/required_status_checks", Value::Null)],
        ),
    );
    green_pr(
        &fake,
        patched("pull", &[("/mergeable_state", json!("blocked"))]),
    );
    let r = run(&repo, &fake, &["pr", "diagnose", "--pr", "7"]);
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    let d = &r.doc["data"];
    assert_eq!(d["requirements"]["source"], "both");
    assert_eq!(d["requirements"]["required_checks"], json!(["e2e", "test"]));
    assert_eq!(d["missing_required"], json!(["e2e"]));
    assert_eq!(d["verdict"]["class"], "missing_required_checks", "{d}");
    assert!(
        d["verdict"]["reasons"][0]
            .as_str()
            .expect("reason")
            .contains("`e2e`"),
        "{d}"
    );
    assert_eq!(
        d["verdict"]["next_actions"][0]["action"],
        "dispatch_workflow"
    );
    let requests: Vec<String> = fake
        .requests()
        .iter()
        .map(|r| r.url.path().to_string())
        .collect();
    assert!(
        requests.contains(&format!("{R}/rules/branches/main")),
        "the rulesets were read: {requests:?}"
    );
    fake.verify();
}

/// `release_train` over MCP: `land` is refused for an agent outside the project's merge
/// authority before any request, previews its gates for a-root, and lands with the SHA guard.
#[test]
fn release_train_lands_over_mcp_only_with_merge_authority() {
    let repo = train_workspace();
    let train = write_train(&repo);
    let (_, builder) = agent(&repo, "builder", 3, "rw");
    let fake = Fake::start();
    let zero = format!("sha256:{}", "0".repeat(64));
    let refused = mcp_as(
        &repo,
        &fake,
        Some(&builder),
        &[(
            "release_train",
            json!({"action": "land", "train_id": train, "mode": "apply", "expect_digest": zero}),
        )],
    );
    assert_eq!(
        refused[0]["refused"]["policy"], "merge.no_authority",
        "{}",
        refused[0]
    );
    assert!(fake.requests().is_empty());
    fake.verify();

    let fake = Fake::start();
    landing(&fake, S);
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/branches/release")))
            .respond_with(ResponseTemplate::new(200).set_body_json(branch(BASE)))
            .up_to_n_times(2),
    );
    fake.get(&format!("{R}/branches/release"), 200, branch(MERGED));
    fake.get(
        &format!("{R}/compare/{S}...release"),
        200,
        json!({"status": "ahead", "ahead_by": 1, "behind_by": 0}),
    );
    let preview = mcp(
        &repo,
        &fake,
        &[(
            "release_train",
            json!({"action": "land", "train_id": train}),
        )],
    );
    let gates = preview[0]["gates"].as_array().expect("gates");
    assert!(gates.iter().all(|g| g["result"] == "pass"), "{gates:?}");
    assert!(fake.writes().is_empty());
    let digest = preview[0]["plan_digest"]
        .as_str()
        .expect("digest")
        .to_string();
    fake.mount(
        Mock::given(method("PUT"))
            .and(path(format!("{R}/pulls/31/merge")))
            .and(wiremock::matchers::body_json(
                json!({"sha": S, "merge_method": "merge"}),
            ))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(json!({"sha": MERGED, "merged": true})),
            )
            .expect(1),
    );
    let landed = mcp(
        &repo,
        &fake,
        &[(
            "release_train",
            json!({"action": "land", "train_id": train, "mode": "apply", "expect_digest": digest}),
        )],
    );
    assert_eq!(landed[0]["state"], "verified", "{}", landed[0]);
    assert_eq!(landed[0]["outcome"]["merge_commit_sha"], MERGED);
    fake.verify();
}

/// `github push` retried after a timeout: the first push leaves its transaction partial; the
/// retry finishes that transaction, finds the issue the lost request created by its marker,
/// and sends no second create.
#[test]
fn a_push_retried_after_a_timeout_creates_no_duplicate_issue() {
    let (repo, task) = projection_workspace();
    let ws = ws_id(&repo);
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    consent(&repo, &fake);
    // The first push sees no issue; its create times out on our side although GitHub made #12.
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/issues")))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
            .up_to_n_times(1),
    );
    fake.get(
        &format!("{R}/issues"),
        200,
        json!([{"number": 12, "state": "open", "title": "Round once at the boundary",
                "body": format!("<!-- dacli:{task} ws:{ws} -->\n## Acceptance\n")}]),
    );
    fake.mount(
        Mock::given(method("POST"))
            .and(path(format!("{R}/issues")))
            .respond_with(
                ResponseTemplate::new(201)
                    .set_body_json(json!({"number": 12}))
                    .set_delay(Duration::from_secs(6)),
            )
            .expect(1),
    );
    let first = run(&repo, &fake, &["github", "push", "checkout"]);
    assert_eq!(first.code, 0, "{}", first.doc);
    assert_eq!(first.doc["data"]["outcome"], "partial", "{}", first.doc);
    let txn = first.doc["data"]["txn"].as_str().expect("txn").to_string();
    let second = run(&repo, &fake, &["github", "push", "checkout"]);
    assert_eq!(second.code, 0, "{}\n{}", second.doc, second.stderr);
    assert_eq!(second.doc["data"]["outcome"], "completed", "{}", second.doc);
    assert_eq!(
        second.doc["data"]["txn"],
        txn.as_str(),
        "the same transaction"
    );
    assert_eq!(item(&second.doc, &task)["remote"]["number"], 12);
    // A third push has nothing to do.
    let third = run(&repo, &fake, &["github", "push", "checkout"]);
    assert_eq!(third.code, 0, "{}", third.doc);
    assert_eq!(item(&third.doc, &task)["action"], "none", "{}", third.doc);
    let posts = fake
        .requests()
        .iter()
        .filter(|r| r.method.as_str() == "POST")
        .count();
    assert_eq!(posts, 1, "exactly one create was ever sent");
    fake.verify();
}

/// A 200 whose `X-GitHub-SSO: partial-results` says SAML organizations were left out is a
/// warning in `access.sso_partial`, never silently complete.
#[test]
fn partial_sso_results_are_named_in_the_access_block() {
    let repo = linked();
    let fake = Fake::start();
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/pulls/7")))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(fixture("pull"))
                    .insert_header("x-github-sso", "partial-results; organizations=21955855"),
            ),
    );
    failing_pr(&fake);
    let r = run(&repo, &fake, &["pr", "diagnose", "--pr", "7"]);
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    assert_eq!(r.doc["data"]["access"]["sso_partial"], json!(["21955855"]));
    assert!(r.doc["data"]["access"]["problem"].is_null());
    assert_eq!(r.doc["data"]["verdict"]["class"], "failing_checks");
    fake.verify();
}

/// Comments are read page by page (100 a page) until a short page: 101 comments are two
/// requests and 101 events, not 100.
#[test]
fn pull_pages_through_the_comments_of_an_issue() {
    let (repo, open, _done) = pull_workspace();
    let ws = ws_id(&repo);
    let fake = Fake::start();
    fake.get(
        &format!("{R}/issues"),
        200,
        json!([{"number": 12, "state": "open", "comments": 101,
                "body": format!("<!-- dacli:{open} ws:{ws} -->\n")}]),
    );
    let comment = |id: u64| {
        json!({"id": id, "user": {"login": "grace"}, "body": format!("note {id}"),
               "created_at": "2026-03-03T08:00:00Z"})
    };
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/issues/12/comments")))
            .and(query_param_is_missing("page"))
            .and(query_param("per_page", "100"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(Value::Array((1..=100).map(comment).collect()))
                    .insert_header(
                        "link",
                        format!(
                            "<{}{R}/issues/12/comments?per_page=100&page=2>; rel=\"next\"",
                            fake.url()
                        )
                        .as_str(),
                    ),
            )
            .expect(1),
    );
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/issues/12/comments")))
            .and(query_param("page", "2"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([comment(101)])))
            .expect(1),
    );
    let r = run(&repo, &fake, &["github", "pull", "checkout", "--dry-run"]);
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    let items = r.doc["data"]["items"].as_array().expect("items");
    assert_eq!(items.len(), 101);
    assert_eq!(items[100]["github_ref"], "acme/widget#comment-101");
    fake.verify();
}

/// The fake's `/issues` for K4: empty until GitHub has received the create, then the issue it
/// made, carrying dacli's marker (GitHub made it even though dacli never saw the answer).
struct IssuesAfterCreate {
    created: std::sync::Arc<std::sync::atomic::AtomicBool>,
    issue: Value,
}

impl wiremock::Respond for IssuesAfterCreate {
    fn respond(&self, _: &wiremock::Request) -> ResponseTemplate {
        if self.created.load(std::sync::atomic::Ordering::SeqCst) {
            ResponseTemplate::new(200).set_body_json(json!([self.issue.clone()]))
        } else {
            ResponseTemplate::new(200).set_body_json(json!([]))
        }
    }
}

/// The create: noted at once, answered slowly, so a test can kill dacli while it waits.
struct SlowCreate {
    created: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl wiremock::Respond for SlowCreate {
    fn respond(&self, _: &wiremock::Request) -> ResponseTemplate {
        self.created
            .store(true, std::sync::atomic::Ordering::SeqCst);
        ResponseTemplate::new(201)
            .set_body_json(json!({"number": 12}))
            .set_delay(Duration::from_secs(8))
    }
}

/// RELIABILITY K4 and G1. `github sync` is SIGKILLed while GitHub is creating an issue (the
/// request arrived, the answer never did); the next sync converges on that issue without a
/// second create, and a third changes nothing. Over every run, the dry run included: each
/// request is on the endpoint allowlist, the dry run only reads, and the token travels only
/// in the `Authorization` header.
#[test]
fn k4_a_sync_killed_mid_create_converges_and_g1_every_request_is_allowlisted() {
    let (repo, task) = projection_workspace();
    let ws = ws_id(&repo);
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    consent(&repo, &fake);
    let created = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/issues")))
            .respond_with(IssuesAfterCreate {
                created: created.clone(),
                issue: json!({"number": 12, "state": "open", "comments": 0,
                    "title": "Round once at the boundary",
                    "body": format!("<!-- dacli:{task} ws:{ws} -->\n## Acceptance\n")}),
            }),
    );
    for tail in ["comments", "events"] {
        fake.get(&format!("{R}/issues/12/{tail}"), 200, json!([]));
    }
    fake.mount(
        Mock::given(method("POST"))
            .and(path(format!("{R}/issues")))
            .respond_with(SlowCreate {
                created: created.clone(),
            })
            .expect(1),
    );

    let dry = run(&repo, &fake, &["github", "sync", "checkout", "--dry-run"]);
    assert_eq!(dry.code, 0, "{}\n{}", dry.doc, dry.stderr);
    assert!(
        fake.writes().is_empty(),
        "a dry run only reads: {:?}",
        fake.writes()
    );

    let mut sync = repo.std_command(&["github", "sync", "checkout", "--json"]);
    sync.env("DACLI_GITHUB_API_URL", fake.url())
        .env("PATH", stub_path(repo.path(), "exit 1"))
        .env("DACLI_GITHUB_TIMEOUT_MS", "30000")
        .env("GH_TOKEN", TOKEN)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = sync.spawn().expect("sync starts");
    let waited = std::time::Instant::now();
    while !created.load(std::sync::atomic::Ordering::SeqCst) {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "the sync never sent its create"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");

    let second = run(&repo, &fake, &["github", "sync", "checkout"]);
    assert_eq!(second.code, 0, "{}\n{}", second.doc, second.stderr);
    let push = &second.doc["data"]["push"];
    assert_eq!(push["outcome"], "completed", "{}", second.doc);
    let mapped = push["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["object"]["id"] == task.as_str())
        .expect("the task's item");
    assert_eq!(mapped["remote"]["number"], 12, "{mapped}");
    let third = run(&repo, &fake, &["github", "sync", "checkout"]);
    assert_eq!(third.code, 0, "{}", third.doc);
    let again = third.doc["data"]["push"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["object"]["id"] == task.as_str())
        .expect("the task's item")
        .clone();
    assert_eq!(again["action"], "none", "{}", third.doc);
    let (code, doctor) = repo.json(&["doctor"]);
    assert_eq!(code, 0, "{doctor}");

    // G1: the allowlist, and the token's only place.
    let allowed = [
        ("GET", format!("^{R}$")),
        ("GET", format!("^{R}/issues$")),
        ("GET", format!("^{R}/issues/[0-9]+/(comments|events)$")),
        ("POST", format!("^{R}/issues$")),
        ("PATCH", format!("^{R}/issues/[0-9]+$")),
    ];
    let requests = fake.requests();
    assert!(requests.len() > 4, "{} requests", requests.len());
    for req in &requests {
        let (m, p) = (req.method.as_str(), req.url.path());
        assert!(
            allowed
                .iter()
                .any(|(am, ap)| *am == m && regex::Regex::new(ap).unwrap().is_match(p)),
            "{m} {p} is not on the allowlist"
        );
        assert!(!req.url.as_str().contains(TOKEN), "token in {}", req.url);
        assert!(
            !String::from_utf8_lossy(&req.body).contains(TOKEN),
            "token in a body"
        );
        for (name, value) in req.headers.iter() {
            let carries = value.to_str().unwrap_or("").contains(TOKEN);
            assert_eq!(
                carries,
                name.as_str() == "authorization",
                "{name} and the token"
            );
        }
    }
    let posts = requests
        .iter()
        .filter(|r| r.method.as_str() == "POST")
        .count();
    assert_eq!(posts, 1, "exactly one create was ever sent");
    fake.verify();
}

/// The branch rules of the target cannot be read (a lasting 403): neither a merge queue nor a
/// check that only a ruleset requires can be ruled out, so the `merge_queue` and `checks`
/// gates are `unknown`, and `unknown` refuses `github.access` with no merge sent. An access
/// problem never reads as "no rules".
#[test]
fn unreadable_rules_make_the_train_gates_unknown_and_unknown_refuses() {
    let repo = train_workspace();
    let train = write_train(&repo);
    let fake = Fake::start();
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/rules/branches/release")))
            .respond_with(
                ResponseTemplate::new(403)
                    .insert_header("X-Accepted-GitHub-Permissions", "metadata=read")
                    .set_body_json(fixture("error_forbidden")),
            ),
    );
    landing(&fake, S);
    fake.get(&format!("{R}/branches/release"), 200, branch(BASE));
    let pv = run(&repo, &fake, &["release-train", "land", &train]);
    assert_eq!(pv.code, 0, "{}", pv.doc);
    let gates = pv.doc["data"]["gates"].as_array().expect("gates");
    let result = |name: &str| {
        gates
            .iter()
            .find(|g| g["gate"] == name)
            .map(|g| g["result"].as_str().expect("result").to_string())
            .unwrap_or_else(|| panic!("no gate {name} in {gates:?}"))
    };
    assert_eq!(result("merge_queue"), "unknown", "{gates:?}");
    assert_eq!(result("checks"), "unknown", "{gates:?}");
    assert_eq!(result("head_pinned"), "pass", "{gates:?}");
    let r = apply_previewed(&repo, &fake, &pv, &["release-train", "land", &train]);
    assert_eq!(r.code, 3, "{}", r.doc);
    assert_eq!(r.doc["refused"]["policy"], "github.access", "{}", r.doc);
    assert!(
        r.doc["refused"]["next"]
            .as_str()
            .expect("next")
            .contains("metadata=read"),
        "the remedy names the permission: {}",
        r.doc
    );
    assert!(fake.writes().is_empty(), "{:?}", fake.writes());
    let text = std::fs::read_to_string(repo.ws(&format!("trains/{train}.toml"))).expect("train");
    assert!(text.contains("state = \"pr_open\""), "{text}");
    fake.verify();
}

/// GitHub answers 405 to the guarded merge (not mergeable): refused `gate.not_mergeable`, the
/// train is marked failed and nothing else is sent.
#[test]
fn a_405_merge_is_not_mergeable() {
    let repo = train_workspace();
    let train = write_train(&repo);
    let fake = Fake::start();
    landing(&fake, S);
    fake.get(&format!("{R}/branches/release"), 200, branch(BASE));
    fake.mount(
        Mock::given(method("PUT"))
            .and(path(format!("{R}/pulls/31/merge")))
            .respond_with(
                ResponseTemplate::new(405)
                    .set_body_json(json!({"message": "Pull Request is not mergeable"})),
            )
            .expect(1),
    );
    let pv = run(&repo, &fake, &["release-train", "land", &train]);
    let r = apply_previewed(&repo, &fake, &pv, &["release-train", "land", &train]);
    assert_eq!(r.code, 3, "{}", r.doc);
    assert_eq!(r.doc["refused"]["policy"], "gate.not_mergeable");
    assert!(
        r.doc["refused"]["next"]
            .as_str()
            .expect("next")
            .contains("dacli pr diagnose --pr 31")
    );
    let text = std::fs::read_to_string(repo.ws(&format!("trains/{train}.toml"))).expect("train");
    assert!(text.contains("state = \"failed\""), "{text}");
    assert_eq!(fake.writes(), [format!("PUT {R}/pulls/31/merge")]);
    fake.verify();
}

/// Closing an issue needs its named authority: a done task's issue in `pr` landing mode
/// without delivery evidence is withheld `closure_unauthorized` (nothing is sent); in `local`
/// mode it closes as `dacli_owned_done` (`completed`), and an abandoned task's issue closes as
/// `task_abandoned` (`not_planned`). An issue without our marker is never touched.
#[test]
fn an_issue_is_closed_only_with_its_named_authority() {
    let (repo, _open, done) = pull_workspace();
    let ws = ws_id(&repo);
    let ok = |args: &[&str]| {
        let (code, doc) = repo.json(args);
        assert_eq!(code, 0, "{args:?}: {doc}");
        doc
    };
    let t = ok(&[
        "task",
        "add",
        "Drop the legacy rounding",
        "--project",
        "checkout",
        "--accept",
        "gone",
    ]);
    let dropped = t["data"]["task"]["id"].as_str().expect("id").to_string();
    ok(&[
        "task",
        "done",
        &dropped,
        "--abandon",
        "--reason",
        "superseded by half-even",
    ]);
    ok(&["project", "edit", "checkout", "--landing-mode", "pr"]);
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    consent(&repo, &fake);
    fake.get(
        &format!("{R}/issues"),
        200,
        json!([
            {"number": 13, "state": "open", "body": format!("<!-- dacli:{done} ws:{ws} -->\n")},
            {"number": 16, "state": "open", "body": format!("<!-- dacli:{dropped} ws:{ws} -->\n")},
            {"number": 17, "state": "open", "title": "Round once at the boundary",
             "body": "a person's issue about the same thing"},
        ]),
    );
    let refs = [
        "github",
        "projection",
        "checkout",
        done.as_str(),
        dropped.as_str(),
    ];
    let pr_mode = run(&repo, &fake, &refs);
    assert_eq!(pr_mode.code, 0, "{}", pr_mode.doc);
    let d = item(&pr_mode.doc, &done);
    assert_eq!(d["action"], "withhold", "{d}");
    assert_eq!(reasons(d), ["closure_unauthorized"]);
    assert!(
        d["withheld"][0]["detail"]
            .as_str()
            .expect("detail")
            .contains("dacli delivery reconcile")
    );
    let a = item(&pr_mode.doc, &dropped);
    assert_eq!(a["action"], "close", "{a}");
    assert_eq!(
        a["closure"],
        json!({"authority": "task_abandoned", "state_reason": "not_planned"})
    );
    assert!(fake.writes().is_empty(), "{:?}", fake.writes());

    ok(&["project", "edit", "checkout", "--landing-mode", "local"]);
    let local = run(&repo, &fake, &refs);
    let d = item(&local.doc, &done);
    assert_eq!(d["action"], "close", "{d}");
    assert_eq!(
        d["closure"],
        json!({"authority": "dacli_owned_done", "state_reason": "completed"})
    );
    assert_eq!(local.doc["data"]["blast_radius"]["close"], 2);
    for (n, reason) in [(13, "completed"), (16, "not_planned")] {
        fake.mount(
            Mock::given(method("PATCH"))
                .and(path(format!("{R}/issues/{n}")))
                .and(wiremock::matchers::body_json(
                    json!({"state": "closed", "state_reason": reason}),
                ))
                .respond_with(
                    ResponseTemplate::new(200)
                        .set_body_json(json!({"number": n, "state": "closed"})),
                )
                .expect(1),
        );
    }
    let r = apply_previewed(&repo, &fake, &local, &refs);
    assert_eq!(r.code, 0, "{}", r.doc);
    assert_eq!(r.doc["data"]["outcome"], "completed", "{}", r.doc);
    let mut writes = fake.writes();
    writes.sort();
    assert_eq!(
        writes,
        [
            format!("PATCH {R}/issues/13"),
            format!("PATCH {R}/issues/16")
        ]
    );
    fake.verify();
}

/// Without GH_TOKEN the token comes from GITHUB_TOKEN (before `gh`), reported only as `env`.
#[test]
fn github_token_is_the_second_source() {
    let repo = linked();
    let fake = Fake::start();
    failing_pr(&fake);
    let r = run_with(
        &repo,
        &fake.url(),
        &["pr", "diagnose", "--pr", "7"],
        &[("GITHUB_TOKEN", TOKEN)],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.doc);
    assert_eq!(r.doc["data"]["access"]["token_source"], "env");
    let sent = fake.requests()[0]
        .headers
        .get("authorization")
        .map(|v| v.to_str().unwrap_or_default().to_string())
        .unwrap_or_default();
    assert!(sent.ends_with(TOKEN));
    assert!(!r.doc.to_string().contains(TOKEN));
    fake.verify();
}

/// `--max-api-calls` bounds the diagnosis: no more requests are sent than the budget allows,
/// and a diagnosis cut short by it is never read as green.
#[test]
fn the_diagnosis_sends_no_more_requests_than_its_budget() {
    let repo = linked();
    let fake = Fake::start();
    green_pr(
        &fake,
        patched("pull", &[("/mergeable_state", json!("clean"))]),
    );
    let r = run(
        &repo,
        &fake,
        &["pr", "diagnose", "--pr", "7", "--max-api-calls", "3"],
    );
    assert!(
        fake.requests().len() <= 3,
        "{} requests",
        fake.requests().len()
    );
    assert_eq!(r.code, 0, "{}", r.doc);
    assert_eq!(r.doc["data"]["access"]["calls"], 3);
    assert_eq!(
        r.doc["data"]["verdict"]["class"], "access_problem",
        "{}",
        r.doc
    );
    fake.verify();
}
