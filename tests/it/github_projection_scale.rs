//! Projection at real scale (issue 27): a repository with more than 1,000 issues hides no
//! marker (no duplicate issue), and a close GitHub answered with 502 is sent again by the
//! next push, because each push compares the desired and the observed state of every
//! projected issue.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

use crate::github::{Fake, R, fixture, item, projection_workspace, run, ws_id};
use crate::github_scale::paged;

/// Consent for the tasks of `checkout` on the public `acme/widget`.
fn consent(repo: &crate::support::Repo, fake: &Fake) {
    let r = run(
        repo,
        fake,
        &[
            "github",
            "consent",
            "grant",
            "--project",
            "checkout",
            "--granted-by",
            "human:mkoenig",
            "--classes",
            "tasks",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.doc);
}

/// Issue `number` as GitHub lists it (the validated fixture `issues_page`, renumbered).
fn issue(number: u64, body: String, state: &str) -> Value {
    let mut i = fixture("issues_page")[0].clone();
    i["number"] = json!(number);
    i["id"] = json!(10_000 + number);
    i["state"] = json!(state);
    i["title"] = json!(format!("issue {number}"));
    i["html_url"] = json!(format!("https://github.com/acme/widget/issues/{number}"));
    i["url"] = json!(format!(
        "https://api.github.com/repos/acme/widget/issues/{number}"
    ));
    i["body"] = json!(body);
    i
}

#[test]
fn a_marker_on_page_eleven_of_1050_issues_is_found_and_nothing_is_duplicated() {
    let (repo, task) = projection_workspace();
    let ws = ws_id(&repo);
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    consent(&repo, &fake);
    let issues: Vec<Value> = (1..=1050u64)
        .map(|n| {
            if n == 1021 {
                issue(n, format!("<!-- dacli:{task} ws:{ws} -->\n"), "open")
            } else {
                issue(n, format!("someone else's issue {n}"), "open")
            }
        })
        .collect();
    // Read twice: by the dry run and by the push.
    paged(&fake, &format!("{R}/issues"), None, &issues, 100, Some(2));
    let dry = run(&repo, &fake, &["github", "push", "--dry-run"]);
    assert_eq!(dry.code, 0, "{}\n{}", dry.doc, dry.stderr);
    assert_eq!(
        item(&dry.doc, &task)["action"],
        "adopt_by_marker",
        "{}",
        dry.doc
    );
    assert_eq!(item(&dry.doc, &task)["remote"]["number"], 1021);
    let r = run(&repo, &fake, &["github", "push"]);
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    assert_eq!(r.doc["data"]["outcome"], "completed", "{}", r.doc);
    assert_eq!(item(&r.doc, &task)["remote"]["number"], 1021);
    assert!(
        fake.writes().is_empty(),
        "no issue was created: {:?}",
        fake.writes()
    );
    fake.verify();
}

#[test]
fn a_budget_too_small_for_every_issue_page_creates_nothing() {
    let (repo, _task) = projection_workspace();
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    consent(&repo, &fake);
    let issues: Vec<Value> = (1..=1050u64)
        .map(|n| issue(n, format!("someone else's issue {n}"), "open"))
        .collect();
    // The visibility and three pages fit in the budget; the rest of the list does not.
    paged(&fake, &format!("{R}/issues"), None, &issues, 100, None);
    let r = run(&repo, &fake, &["github", "push", "--max-api-calls", "4"]);
    let pages = fake
        .requests()
        .iter()
        .filter(|q| q.url.path() == format!("{R}/issues"))
        .count();
    assert_eq!(pages, 3);
    assert_eq!(r.code, 1, "{}\n{}", r.doc, r.stderr);
    let message = r.doc["error"]["message"].to_string();
    assert!(message.contains("budget of 4 API calls"), "{message}");
    assert!(fake.writes().is_empty(), "{:?}", fake.writes());
}

/// The fake's `/issues`: issue #40 mirrors the task, open until a PATCH closing it succeeded.
struct Listed {
    closed: Arc<AtomicBool>,
    body: String,
}

impl wiremock::Respond for Listed {
    fn respond(&self, _: &wiremock::Request) -> ResponseTemplate {
        let state = if self.closed.load(Ordering::SeqCst) {
            "closed"
        } else {
            "open"
        };
        ResponseTemplate::new(200).set_body_json(json!([issue(40, self.body.clone(), state)]))
    }
}

/// The close: 502 the first time, then done.
struct FlakyClose {
    closed: Arc<AtomicBool>,
    calls: Arc<AtomicUsize>,
}

impl wiremock::Respond for FlakyClose {
    fn respond(&self, _: &wiremock::Request) -> ResponseTemplate {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            return ResponseTemplate::new(502);
        }
        self.closed.store(true, Ordering::SeqCst);
        ResponseTemplate::new(200).set_body_json(json!({"number": 40, "state": "closed"}))
    }
}

#[test]
fn a_close_answered_502_is_sent_again_by_the_next_push() {
    let (repo, task) = projection_workspace();
    let ws = ws_id(&repo);
    let ok = |args: &[&str]| {
        let (code, doc) = repo.json(args);
        assert_eq!(code, 0, "{args:?}: {doc}");
    };
    ok(&["task", "check", &task, "--n", "1"]);
    ok(&["task", "done", &task]);
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    consent(&repo, &fake);
    let closed = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicUsize::new(0));
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/issues")))
            .respond_with(Listed {
                closed: closed.clone(),
                body: format!("<!-- dacli:{task} ws:{ws} -->\n"),
            }),
    );
    fake.mount(
        Mock::given(method("PATCH"))
            .and(path(format!("{R}/issues/40")))
            .respond_with(FlakyClose {
                closed: closed.clone(),
                calls: calls.clone(),
            })
            .expect(2),
    );
    let first = run(&repo, &fake, &["github", "push"]);
    assert_eq!(item(&first.doc, &task)["action"], "close", "{}", first.doc);
    assert_eq!(first.doc["data"]["outcome"], "partial", "{}", first.doc);
    assert!(!closed.load(Ordering::SeqCst));
    let second = run(&repo, &fake, &["github", "push"]);
    assert_eq!(second.code, 0, "{}\n{}", second.doc, second.stderr);
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the close was sent again");
    assert!(closed.load(Ordering::SeqCst));
    assert_eq!(second.doc["data"]["outcome"], "completed", "{}", second.doc);
    let third = run(&repo, &fake, &["github", "push"]);
    assert_eq!(third.code, 0, "{}", third.doc);
    assert_eq!(item(&third.doc, &task)["action"], "none", "{}", third.doc);
    assert_eq!(third.doc["data"]["outcome"], "completed");
    fake.verify();
}
