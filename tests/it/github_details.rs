//! Smaller GitHub findings of issue 27, each as a user meets it: `github push --dry-run` advises
//! the command that applies it, a 300-commit train lists every commit or says it was cut,
//! `github link` names the API it read, and `pr diagnose` text shows each failing check's link
//! with the failing lines of its annotation (a Rust panic keeps its assertion).

use serde_json::{Value, json};
use wiremock::matchers::{method, path, query_param, query_param_is_missing};
use wiremock::{Mock, ResponseTemplate};

use crate::github::{S, train_workspace};
use crate::github_support::{
    BASE, Fake, R, TOKEN, consent, failing_pr, fixture, projection_workspace, run, text,
};
use crate::support::Repo;

#[test]
fn push_dry_run_advises_push_not_flags_push_rejects() {
    let (repo, _task) = projection_workspace();
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    consent(&repo, &fake);
    fake.get(&format!("{R}/issues"), 200, json!([]));
    let out = text(&repo, &fake, &["github", "push", "--dry-run"]);
    assert!(!out.contains("--apply"), "{out}");
    assert!(
        out.contains("apply with `dacli github push checkout`"),
        "{out}"
    );
    assert!(fake.writes().is_empty());
    fake.verify();
}

/// Commit `i` of the comparison, from the validated fixture's commit.
fn commit(template: &Value, i: usize) -> Value {
    let mut c = template.clone();
    c["sha"] = json!(format!("{i:040x}"));
    c["commit"]["message"] = json!(format!("change {i}\n\nbody"));
    c
}

/// `compare/release...S`: 300 commits ahead (the fixture `compare_ahead`), 100 a page along
/// `Link`.
fn three_hundred(fake: &Fake) {
    let route = format!("{R}/compare/release...{S}");
    for page in 1..=3usize {
        let mut body = fixture("compare_ahead");
        let template = body["commits"][0].clone();
        body["commits"] = ((page - 1) * 100..page * 100)
            .map(|i| commit(&template, i))
            .collect();
        body["merge_base_commit"]["sha"] = json!(BASE);
        let mut answer = ResponseTemplate::new(200).set_body_json(body);
        if page < 3 {
            answer = answer.insert_header(
                "link",
                format!(
                    "<{}{route}?per_page=100&page={}>; rel=\"next\"",
                    fake.url(),
                    page + 1
                )
                .as_str(),
            );
        }
        let mock = Mock::given(method("GET")).and(path(route.as_str()));
        let mock = if page == 1 {
            mock.and(query_param_is_missing("page"))
        } else {
            mock.and(query_param("page", page.to_string().as_str()))
        };
        fake.mount(mock.respond_with(answer));
    }
    fake.get(
        &format!("{R}/compare/main...{S}"),
        200,
        json!({"status": "identical", "ahead_by": 0, "behind_by": 0}),
    );
    fake.get(
        &format!("{R}/branches/release"),
        200,
        json!({"name": "release", "commit": {"sha": BASE}}),
    );
}

#[test]
fn a_300_commit_train_lists_every_commit_or_says_it_was_cut() {
    let repo = train_workspace();
    let fake = Fake::start();
    three_hundred(&fake);
    let plan = crate::github::train_args("plan");
    let r = run(&repo, &fake, &plan);
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    let d = &r.doc["data"];
    assert_eq!(d["commits"].as_array().expect("commits").len(), 300);
    assert_eq!(d["commits"][299]["subject"], "change 299");
    assert_eq!(d["notices"], json!([]));
    // Two calls for the source and the target, then two of the three pages.
    let mut cut = plan.to_vec();
    cut.extend(["--max-api-calls", "4"]);
    let r = run(&repo, &fake, &cut);
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    let d = &r.doc["data"];
    assert_eq!(d["commits"].as_array().expect("commits").len(), 200);
    assert_eq!(d["notices"][0]["code"], "commits_cut", "{d}");
    assert!(
        d["notices"][0]["message"]
            .as_str()
            .expect("message")
            .contains("200 of 300 commits listed"),
        "{d}"
    );
    fake.verify();
}

#[test]
fn link_reports_the_api_it_read() {
    let repo = Repo::initialized();
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    let r = run(&repo, &fake, &["github", "link", "acme/widget"]);
    assert_eq!(r.code, 0, "{}", r.doc);
    assert_eq!(r.doc["data"]["api_url"], fake.url());
    assert_eq!(
        r.doc["data"]["configured_api_url"],
        "https://api.github.com"
    );
    let out = text(&repo, &fake, &["github", "link", "acme/widget"]);
    assert!(out.contains(&format!("via {}", fake.url())), "{out}");
    assert!(!out.contains("via https://api.github.com"), "{out}");
    fake.verify();
}

#[test]
fn diagnose_text_shows_each_failing_check_with_its_link_and_assertion() {
    let repo = crate::github_support::linked();
    let fake = Fake::start();
    let mut annotations = fixture("annotations_test");
    annotations[0]["message"] = json!(
        "thread 'money::tests::rounds_once' panicked at src/money.rs:42:5:\nassertion `left == right` failed\n  left: 101\n right: 100\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
    );
    fake.get(
        &format!("{R}/check-runs/4101/annotations"),
        200,
        annotations,
    );
    failing_pr(&fake);
    let out = text(&repo, &fake, &["pr", "diagnose", "--pr", "7"]);
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("fail") && l.contains("test  (required)"))
        .unwrap_or_else(|| panic!("no failing check line in\n{out}"));
    assert!(
        lines[at].contains("https://github.com/acme/widget/actions/runs/9001/job/4101"),
        "{out}"
    );
    assert!(
        lines[at + 1].contains("src/money.rs:42")
            && lines[at + 1].contains("assertion `left == right` failed"),
        "{out}"
    );
    assert!(lines[at + 2].contains("left: 101"), "{out}");
    assert!(lines[at + 3].contains("right: 100"), "{out}");
    let reason = out
        .lines()
        .find(|l| l.contains("required check `test` failed"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        reason.contains("assertion `left == right` failed"),
        "{reason}"
    );
    assert!(!reason.contains("panicked at"), "{reason}");
    fake.verify();
}

/// Check runs at the head: `test` in progress for the first `pending` looks, then green.
struct Finishing {
    looks: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    pending: usize,
}

impl wiremock::Respond for Finishing {
    fn respond(&self, _: &wiremock::Request) -> ResponseTemplate {
        let n = self.looks.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut body = fixture("check_runs_green");
        if n < self.pending {
            body["check_runs"][0]["status"] = json!("in_progress");
            body["check_runs"][0]["conclusion"] = Value::Null;
        }
        ResponseTemplate::new(200).set_body_json(body)
    }
}

#[test]
fn watch_follows_the_checks_until_they_finish() {
    let repo = crate::github_support::linked();
    let fake = Fake::start();
    let looks = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!(
                "{R}/commits/{}/check-runs",
                crate::github_support::HEAD
            )))
            .respond_with(Finishing {
                looks: looks.clone(),
                pending: 2,
            })
            .expect(3),
    );
    crate::github_support::green_pr(
        &fake,
        crate::github_support::patched("pull", &[("/mergeable_state", json!("clean"))]),
    );
    // Without --watch: one look, still waiting.
    let r = run(&repo, &fake, &["pr", "diagnose", "--pr", "7"]);
    assert_eq!(
        r.doc["data"]["verdict"]["class"], "waiting_on_checks",
        "{}",
        r.doc
    );
    assert!(r.doc["data"]["watch"].is_null());
    let r = crate::github_support::run_with(
        &repo,
        &fake.url(),
        &["pr", "diagnose", "--pr", "7", "--watch"],
        &[("GH_TOKEN", TOKEN), ("DACLI_TEST_WATCH_POLL_MS", "50")],
        None,
    );
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    let d = &r.doc["data"];
    assert_eq!(d["watch"]["polls"], 1, "{d}");
    assert_eq!(d["watch"]["finished"], true);
    assert_eq!(d["verdict"]["class"], "mergeable_now", "{}", d["verdict"]);
    assert!(r.stderr.contains("1 check(s) pending"), "{}", r.stderr);
    assert_eq!(looks.load(std::sync::atomic::Ordering::SeqCst), 3);
    fake.verify();
}
