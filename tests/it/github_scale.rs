//! GitHub at real scale (issue 27), against the local fake GitHub of `github.rs`: lists that
//! span pages are followed along `Link` to the end, what could not be read is `unknown` with
//! its cause (never "missing" with a `dispatch_workflow`), a rate limit stops the run, and the
//! timeout bounds a whole request, a body dripping one byte a second included.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wiremock::matchers::{method, path, query_param_is_missing};
use wiremock::{Mock, ResponseTemplate};

use crate::github_support::{
    Fake, HEAD, R, TOKEN, failing_pr, fixture, green_pr, linked, paged, patched, run, run_with,
};

/// 152 check runs on the head, all green but `matrix (140)`, which failed.
pub(crate) fn matrix_runs() -> Vec<Value> {
    let template = fixture("check_runs_green")["check_runs"][0].clone();
    (0..152)
        .map(|i| {
            let mut c = template.clone();
            c["id"] = json!(50_000 + i);
            c["name"] = json!(format!("matrix ({i})"));
            c["details_url"] = json!(format!(
                "https://github.com/acme/widget/actions/runs/9002/job/{}",
                50_000 + i
            ));
            if i == 140 {
                c["conclusion"] = json!("failure");
            }
            c
        })
        .collect()
}

/// Branch rules requiring `matrix (140)` (and one approval).
fn rules_requiring_matrix(fake: &Fake) {
    fake.get(
        &format!("{R}/rules/branches/main"),
        200,
        patched(
            "rules_main",
            &[(
                "/0/parameters/required_status_checks",
                json!([{"context": "matrix (140)"}]),
            )],
        ),
    );
    fake.get(
        &format!("{R}/branches/main/protection"),
        200,
        patched(
            "protection_main",
            &[
                ("/required_status_checks/contexts", json!(["matrix (140)"])),
                (
                    "/required_status_checks/checks",
                    json!([{"context": "matrix (140)", "app_id": 15368}]),
                ),
            ],
        ),
    );
}

fn actions(doc: &Value) -> Vec<String> {
    doc["data"]["verdict"]["next_actions"]
        .as_array()
        .expect("next actions")
        .iter()
        .map(|a| a["action"].as_str().expect("action").to_string())
        .collect()
}

fn reasons_text(doc: &Value) -> String {
    doc["data"]["verdict"]["reasons"].to_string()
}

#[test]
fn a_failing_required_check_on_page_two_of_152_is_found() {
    let repo = linked();
    let fake = Fake::start();
    rules_requiring_matrix(&fake);
    paged(
        &fake,
        &format!("{R}/commits/{HEAD}/check-runs"),
        Some("check_runs"),
        &matrix_runs(),
        100,
        Some(1),
    );
    green_pr(&fake, fixture("pull"));
    let r = run(&repo, &fake, &["pr", "diagnose", "--pr", "7"]);
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    let d = &r.doc["data"];
    assert_eq!(d["checks"].as_array().expect("checks").len(), 152);
    assert_eq!(d["missing_required"], json!([]));
    assert_eq!(d["verdict"]["class"], "failing_checks", "{}", d["verdict"]);
    let reasons = reasons_text(&r.doc);
    assert!(
        reasons.contains("required check `matrix (140)` failed"),
        "{reasons}"
    );
    assert!(!reasons.contains("has not reported"), "{reasons}");
    assert!(!actions(&r.doc).contains(&"dispatch_workflow".to_string()));
    fake.verify();
}

#[test]
fn a_budget_that_cuts_the_list_makes_the_rest_unknown_not_missing() {
    let repo = linked();
    let fake = Fake::start();
    rules_requiring_matrix(&fake);
    // Page 2 exists but the budget stops before it: it must not be requested.
    let runs = matrix_runs();
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/commits/{HEAD}/check-runs")))
            .and(query_param_is_missing("page"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(json!({"total_count": 152, "check_runs": runs[..100]}))
                    .insert_header(
                        "link",
                        format!(
                            "<{}{R}/commits/{HEAD}/check-runs?per_page=100&page=2>; rel=\"next\"",
                            fake.url()
                        )
                        .as_str(),
                    ),
            )
            .expect(1),
    );
    green_pr(&fake, fixture("pull"));
    // The PR, the rulesets, branch protection, the workflow runs, page 1 of the check runs.
    let r = run(
        &repo,
        &fake,
        &["pr", "diagnose", "--pr", "7", "--max-api-calls", "5"],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    let d = &r.doc["data"];
    assert_eq!(d["access"]["calls"], 5);
    assert_eq!(d["access"]["problem"]["kind"], "budget_spent", "{d}");
    assert_eq!(d["verdict"]["class"], "access_problem");
    assert_eq!(d["missing_required"], json!([]), "unread is not missing");
    let unknown = &d["unknown"][0];
    assert_eq!(unknown["part"], "checks", "{d}");
    assert_eq!(unknown["cause"], "budget_spent");
    assert_eq!(unknown["read"], 100);
    assert_eq!(unknown["required_unseen"], json!(["matrix (140)"]));
    let reasons = reasons_text(&r.doc);
    assert!(reasons.contains("budget of 5 API calls"), "{reasons}");
    assert!(
        reasons.contains("required check `matrix (140)` is unknown"),
        "{reasons}"
    );
    assert!(!reasons.contains("has not reported"), "{reasons}");
    assert!(!reasons.contains("not reached"), "{reasons}");
    assert_eq!(actions(&r.doc), ["raise_max_api_calls"]);
    fake.verify();
}

#[test]
fn checks_unreadable_for_the_token_are_unknown_with_their_cause() {
    let repo = linked();
    let cases: Vec<(&str, ResponseTemplate)> = vec![
        (
            "insufficient_permission",
            ResponseTemplate::new(403)
                .insert_header("X-Accepted-GitHub-Permissions", "checks=read")
                .set_body_json(fixture("error_forbidden")),
        ),
        (
            "network_unreachable",
            ResponseTemplate::new(200)
                .set_body_json(fixture("check_runs_green"))
                .set_delay(Duration::from_secs(4)),
        ),
    ];
    for (cause, answer) in cases {
        let fake = Fake::start();
        fake.mount(
            Mock::given(method("GET"))
                .and(path(format!("{R}/commits/{HEAD}/check-runs")))
                .respond_with(answer)
                .expect(1),
        );
        green_pr(&fake, fixture("pull"));
        let r = run_with(
            &repo,
            &fake.url(),
            &["pr", "diagnose", "--pr", "7"],
            &[("GH_TOKEN", TOKEN), ("DACLI_GITHUB_TIMEOUT_MS", "1500")],
            None,
        );
        assert_eq!(r.code, 0, "{cause}: {}\n{}", r.doc, r.stderr);
        let d = &r.doc["data"];
        assert_eq!(d["verdict"]["class"], "access_problem", "{cause}: {d}");
        assert_eq!(d["missing_required"], json!([]), "{cause}");
        assert_eq!(d["unknown"][0]["part"], "checks", "{cause}");
        assert_eq!(d["unknown"][0]["cause"], cause);
        assert_eq!(d["unknown"][0]["required_unseen"], json!(["test"]));
        let reasons = reasons_text(&r.doc);
        assert!(!reasons.contains("has not reported"), "{cause}: {reasons}");
        assert!(
            !actions(&r.doc).contains(&"dispatch_workflow".to_string()),
            "{cause}"
        );
        fake.verify();
    }
}

#[test]
fn a_rate_limit_stops_the_run_and_says_when_to_resume() {
    let repo = linked();
    let limits = [
        ResponseTemplate::new(403)
            .insert_header("x-ratelimit-remaining", "0")
            .insert_header("x-ratelimit-reset", "1772442000")
            .set_body_json(fixture("error_forbidden")),
        ResponseTemplate::new(403)
            .insert_header("retry-after", "60")
            .set_body_json(fixture("error_forbidden")),
    ];
    for (i, answer) in limits.into_iter().enumerate() {
        let fake = Fake::start();
        fake.mount(
            Mock::given(method("GET"))
                .and(path(format!("{R}/actions/runs")))
                .respond_with(answer)
                .expect(1),
        );
        green_pr(&fake, fixture("pull"));
        let r = run(&repo, &fake, &["pr", "diagnose", "--pr", "7"]);
        assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
        let sent: Vec<String> = fake
            .requests()
            .iter()
            .map(|q| q.url.path().to_string())
            .collect();
        assert_eq!(
            sent.last().map(String::as_str),
            Some(format!("{R}/actions/runs").as_str()),
            "no request after the rate limit: {sent:?}"
        );
        let d = &r.doc["data"];
        assert_eq!(d["access"]["problem"]["kind"], "rate_limited");
        assert_eq!(d["verdict"]["class"], "access_problem");
        assert_eq!(d["missing_required"], json!([]));
        let next = d["verdict"]["next_actions"][0].clone();
        assert_eq!(next["action"], "wait_rate_limit_reset");
        let when = if i == 0 {
            "2026-03-02T09:00:00Z"
        } else {
            "Wait 60 s"
        };
        assert!(
            next["detail"].as_str().expect("detail").contains(when),
            "{next}"
        );
        fake.verify();
    }
}

/// A server that answers every request with a 200 whose body arrives one byte a second.
fn dripping_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let body = serde_json::to_string(&fixture("pull")).expect("json");
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                if s.write_all(head.as_bytes()).is_err() {
                    return;
                }
                for b in body.bytes() {
                    if s.write_all(&[b]).and_then(|()| s.flush()).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_secs(1));
                }
            });
        }
    });
    url
}

#[test]
fn the_timeout_bounds_a_whole_request_even_a_dripping_body() {
    let repo = linked();
    let url = dripping_server();
    let started = Instant::now();
    let r = run_with(
        &repo,
        &url,
        &["pr", "diagnose", "--pr", "7"],
        &[("GH_TOKEN", TOKEN), ("DACLI_GITHUB_TIMEOUT_MS", "2000")],
        None,
    );
    let took = started.elapsed();
    assert_eq!(r.code, 1, "{}", r.doc);
    let message = r.doc["error"]["message"].as_str().expect("message");
    assert!(
        message.contains("network_unreachable") && message.contains("timed out"),
        "{message}"
    );
    assert!(took < Duration::from_secs(8), "took {took:?}");
}

#[test]
fn a_run_stops_at_its_overall_deadline() {
    let repo = linked();
    let fake = Fake::start();
    // Each answer takes 1.5 s; the run may take 2.5 s in all.
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/pulls/7")))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(fixture("pull"))
                    .set_delay(Duration::from_millis(1500)),
            ),
    );
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/rules/branches/main")))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(fixture("rules_main"))
                    .set_delay(Duration::from_millis(1500)),
            ),
    );
    let started = Instant::now();
    let r = run_with(
        &repo,
        &fake.url(),
        &["pr", "diagnose", "--pr", "7"],
        &[("GH_TOKEN", TOKEN), ("DACLI_GITHUB_DEADLINE_MS", "2500")],
        None,
    );
    assert!(started.elapsed() < Duration::from_secs(6));
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    let d = &r.doc["data"];
    assert_eq!(d["access"]["problem"]["kind"], "deadline_passed", "{d}");
    assert_eq!(d["verdict"]["class"], "access_problem");
    assert_eq!(d["missing_required"], json!([]));
    fake.verify();
}

#[test]
fn reviews_required_by_unreadable_branch_protection_are_review_required() {
    let repo = linked();
    let fake = Fake::start();
    // The rulesets require only the check; branch protection (admin only) is unreadable.
    let rules = fixture("rules_main");
    fake.get(
        &format!("{R}/rules/branches/main"),
        200,
        json!([rules[0].clone()]),
    );
    fake.get(
        &format!("{R}/branches/main/protection"),
        403,
        fixture("error_forbidden"),
    );
    fake.get(&format!("{R}/pulls/7/reviews"), 200, json!([]));
    fake.mount(
        Mock::given(method("POST"))
            .and(path("/graphql"))
            .and(wiremock::matchers::body_partial_json(
                json!({"variables": {"owner": "acme", "name": "widget", "number": 7}}),
            ))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(fixture("graphql/review_decision_review_required")),
            )
            .expect(1),
    );
    green_pr(&fake, fixture("pull"));
    let r = run(&repo, &fake, &["pr", "diagnose", "--pr", "7"]);
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    let d = &r.doc["data"];
    assert_eq!(d["requirements"]["source"], "unreadable");
    assert_eq!(d["pr"]["review_decision"], "review_required");
    assert_eq!(d["verdict"]["class"], "needs_review", "{}", d["verdict"]);
    assert!(reasons_text(&r.doc).contains("REVIEW_REQUIRED"));
    assert_eq!(actions(&r.doc), ["request_review"]);
    fake.verify();
}

#[test]
fn mergeability_still_computing_says_retry_in_a_few_seconds() {
    let repo = linked();
    let fake = Fake::start();
    green_pr(
        &fake,
        patched(
            "pull",
            &[
                ("/mergeable", Value::Null),
                ("/mergeable_state", json!("unknown")),
            ],
        ),
    );
    let r = run(&repo, &fake, &["pr", "diagnose", "--pr", "7"]);
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    let v = &r.doc["data"]["verdict"];
    assert_eq!(v["class"], "computing_mergeability", "{v}");
    assert_eq!(v["next_actions"][0]["action"], "retry_later");
    assert!(
        v["next_actions"][0]["detail"]
            .as_str()
            .expect("detail")
            .contains("a few seconds")
    );
    fake.verify();
}

/// Jobs, annotations and reviews are lists too: each is read past its first page. The failed
/// job, the annotation with the assertion and the approval are all on page 2.
#[test]
fn jobs_annotations_and_reviews_are_read_past_their_first_page() {
    let repo = linked();
    let fake = Fake::start();
    let template = fixture("jobs_failing")["jobs"].clone();
    let jobs: Vec<Value> = (0..120u64)
        .map(|i| {
            let mut j = template[if i == 110 { 0 } else { 1 }].clone();
            if i != 110 {
                j["id"] = json!(5_000 + i);
                j["name"] = json!(format!("shard {i}"));
            }
            j
        })
        .collect();
    paged(
        &fake,
        &format!("{R}/actions/runs/9001/jobs"),
        Some("jobs"),
        &jobs,
        100,
        Some(1),
    );
    let note = fixture("annotations_test")[0].clone();
    let annotations: Vec<Value> = (0..105u64)
        .map(|i| {
            let mut a = note.clone();
            a["message"] = json!(if i == 104 {
                "assertion `left == right` failed on page two".to_string()
            } else {
                format!("warning {i}")
            });
            a
        })
        .collect();
    paged(
        &fake,
        &format!("{R}/check-runs/4101/annotations"),
        None,
        &annotations,
        100,
        Some(1),
    );
    let comment = fixture("reviews_approved")[0].clone();
    let approval = fixture("reviews_approved")[1].clone();
    let mut reviews: Vec<Value> = (0..100u64)
        .map(|i| {
            let mut r = comment.clone();
            r["id"] = json!(1_000 + i);
            r
        })
        .collect();
    reviews.push(approval);
    paged(
        &fake,
        &format!("{R}/pulls/7/reviews"),
        None,
        &reviews,
        100,
        Some(1),
    );
    failing_pr(&fake);
    let r = run(
        &repo,
        &fake,
        &["pr", "diagnose", "--pr", "7", "--annotation-limit", "200"],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    let d = &r.doc["data"];
    assert_eq!(
        d["unknown"].as_array().map_or(0, Vec::len),
        0,
        "every page was read: {}",
        d["unknown"]
    );
    let failed: Vec<&str> = d["workflows"][0]["failed_jobs"]
        .as_array()
        .expect("failed jobs")
        .iter()
        .filter_map(|j| j["name"].as_str())
        .collect();
    assert_eq!(failed, ["test"], "{}", d["workflows"]);
    let annotations = d["annotations"].as_array().expect("annotations");
    assert_eq!(annotations.len(), 105);
    assert!(
        annotations
            .iter()
            .any(|a| a.to_string().contains("failed on page two")),
        "{}",
        d["annotations"]
    );
    assert_eq!(d["pr"]["review_decision"], "approved", "{}", d["pr"]);
    fake.verify();
}
