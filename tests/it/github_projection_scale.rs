//! Projection at real scale (issue 27): in a repository with more than 1,000 issues a marker
//! on page 11 is found without reading every page (the newest page, then the issue recorded
//! for the object or a search by its marker), a recorded issue that is gone, moved or
//! unmarked is looked up again, no issue is ever created twice, and a close GitHub answered with 502 is sent again by the
//! next push, because each push compares the desired and the observed state of every
//! projected issue.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::{Value, json};
use wiremock::matchers::{method, path, query_param, query_param_is_missing};
use wiremock::{Mock, ResponseTemplate};

use crate::github_support::{
    Fake, R, consent, fixture, issue, item, projection_workspace, run, ws_id,
};

/// The first page (the 100 newest) of 1,050 issues, as GitHub lists them newest first, its
/// `Link` naming page 2 and the last, page 11; no other page is mounted, so reading one fails
/// the test. `marked` is the issue at position 1,021 (page 11) that carries `marker`.
fn first_of_1050(fake: &Fake, marker: &str, times: u64) -> Value {
    let issues: Vec<Value> = (1..=1050u64)
        .map(|n| issue(1051 - n, format!("someone else's issue {n}"), "open"))
        .collect();
    let link = format!(
        "<{url}{R}/issues?state=all&sort=created&direction=desc&per_page=100&page=2>; rel=\"next\", <{url}{R}/issues?state=all&sort=created&direction=desc&per_page=100&page=11>; rel=\"last\"",
        url = fake.url()
    );
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/issues")))
            .and(query_param_is_missing("page"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(Value::Array(issues[..100].to_vec()))
                    .insert_header("link", link.as_str()),
            )
            .expect(times),
    );
    let mut marked = issues[1020].clone();
    marked["body"] = json!(format!("{marker}\n## Acceptance\n- [ ] totals agree\n"));
    marked
}

/// `GET /search/issues` for `task`'s id in acme/widget, answering `found`.
fn search(fake: &Fake, task: &str, found: Vec<Value>, times: u64) {
    let body = crate::github_support::search_result(found);
    fake.mount(
        Mock::given(method("GET"))
            .and(path("/search/issues"))
            .and(query_param(
                "q",
                format!("repo:acme/widget in:body \"{task}\"").as_str(),
            ))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .expect(times),
    );
}

/// `GET /repos/acme/widget/issues/{n}` answers `status` with `body`, `times` times.
fn issue_by_number(fake: &Fake, n: u64, status: u16, body: Value, times: u64) {
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/issues/{n}")))
            .respond_with(ResponseTemplate::new(status).set_body_json(body))
            .expect(times),
    );
}

#[test]
fn a_marker_on_page_eleven_of_1050_issues_is_found_without_reading_every_page() {
    let (repo, task) = projection_workspace();
    let marker = format!("<!-- dacli:{task} ws:{} -->", ws_id(&repo));
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    consent(&repo, &fake);
    // The dry run and the push each read the newest page, then search for the marker.
    let marked = first_of_1050(&fake, &marker, 2);
    assert_eq!(
        marked["number"], 30,
        "position 1,021 of 1,050, newest first"
    );
    search(&fake, &task, vec![marked.clone()], 2);
    let dry = run(&repo, &fake, &["github", "push", "--dry-run"]);
    assert_eq!(dry.code, 0, "{}\n{}", dry.doc, dry.stderr);
    let it = item(&dry.doc, &task);
    assert_eq!(it["action"], "adopt_by_marker", "{}", dry.doc);
    assert_eq!(it["remote"]["number"], 30);
    let r = run(&repo, &fake, &["github", "push"]);
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    assert_eq!(r.doc["data"]["outcome"], "completed", "{}", r.doc);
    assert_eq!(item(&r.doc, &task)["remote"]["number"], 30);
    assert!(
        fake.writes().is_empty(),
        "no issue was created: {:?}",
        fake.writes()
    );
    // Consent read the visibility; then three requests a run over 1,050 issues: the
    // visibility, the newest page, a search.
    fake.verify();
    assert_eq!(fake.requests().len(), 1 + 2 * 3);

    // The next push reads the issue it recorded, by number, and searches no more.
    let again = Fake::start();
    again.get(R, 200, fixture("repo"));
    first_of_1050(&again, &marker, 1);
    issue_by_number(&again, 30, 200, marked, 1);
    let it = pushed(&repo, &again, &task, "none");
    assert_eq!(it["remote"]["number"], 30);
    assert!(again.writes().is_empty(), "{:?}", again.writes());
    again.verify();
    assert_eq!(again.requests().len(), 3);
}

/// `github push` succeeds and plans `action` for `task`; its item.
fn pushed(repo: &crate::support::Repo, fake: &Fake, task: &str, action: &str) -> Value {
    let r = run(repo, fake, &["github", "push"]);
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    let it = item(&r.doc, task).clone();
    assert_eq!(it["action"], action, "{}", r.doc);
    it
}

#[test]
fn a_recorded_issue_deleted_transferred_or_unmarked_is_looked_up_again() {
    let (repo, task) = projection_workspace();
    let marker = format!("<!-- dacli:{task} ws:{} -->", ws_id(&repo));
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    consent(&repo, &fake);
    let marked = first_of_1050(&fake, &marker, 1);
    search(&fake, &task, vec![marked.clone()], 1);
    pushed(&repo, &fake, &task, "adopt_by_marker");
    fake.verify();

    // #30 was transferred to another repository (GitHub answers 301) and nothing in
    // acme/widget carries the marker: the task gets a new issue, #1051, recorded in its place.
    let moved = Fake::start();
    moved.get(R, 200, fixture("repo"));
    first_of_1050(&moved, &marker, 1);
    issue_by_number(&moved, 30, 301, json!({"message": "Moved Permanently"}), 1);
    search(&moved, &task, Vec::new(), 1);
    let created = issue(1051, format!("{marker}\n"), "open");
    moved.mount(
        Mock::given(method("POST"))
            .and(path(format!("{R}/issues")))
            .respond_with(ResponseTemplate::new(201).set_body_json(created.clone()))
            .expect(1),
    );
    let it = pushed(&repo, &moved, &task, "create");
    assert_eq!(it["remote"]["number"], 1051);
    moved.verify();

    // #1051 was deleted (410) and someone re-created the mirror by hand as #1052: the search
    // finds it by its marker and nothing is created. Then #1052 loses its marker (edited):
    // the search finds nothing else, and a new issue is created.
    let gone = Fake::start();
    gone.get(R, 200, fixture("repo"));
    first_of_1050(&gone, &marker, 1);
    issue_by_number(
        &gone,
        1051,
        410,
        json!({"message": "This issue was deleted"}),
        1,
    );
    let mut by_hand = created.clone();
    by_hand["number"] = json!(1052);
    search(&gone, &task, vec![by_hand.clone()], 1);
    let it = pushed(&repo, &gone, &task, "adopt_by_marker");
    assert_eq!(it["remote"]["number"], 1052);
    assert!(gone.writes().is_empty(), "{:?}", gone.writes());
    gone.verify();

    let edited = Fake::start();
    edited.get(R, 200, fixture("repo"));
    first_of_1050(&edited, &marker, 1);
    let mut unmarked = by_hand;
    unmarked["body"] = json!("the marker was edited away");
    issue_by_number(&edited, 1052, 200, unmarked, 1);
    search(&edited, &task, Vec::new(), 1);
    edited.mount(
        Mock::given(method("POST"))
            .and(path(format!("{R}/issues")))
            .respond_with(ResponseTemplate::new(201).set_body_json(issue(
                1053,
                format!("{marker}\n"),
                "open",
            )))
            .expect(1),
    );
    let it = pushed(&repo, &edited, &task, "create");
    assert_eq!(it["remote"]["number"], 1053);
    edited.verify();
}

#[test]
fn a_budget_too_small_for_the_lookup_creates_nothing() {
    let (repo, task) = projection_workspace();
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    consent(&repo, &fake);
    first_of_1050(&fake, "", 1);
    // The visibility and the newest page fit in the budget; the search does not.
    let r = run(&repo, &fake, &["github", "push", "--max-api-calls", "2"]);
    assert_eq!(r.code, 1, "{}\n{}", r.doc, r.stderr);
    let message = r.doc["error"]["message"].to_string();
    assert!(message.contains("budget of 2 API calls"), "{message}");
    assert!(
        message.contains(&task),
        "names the search it could not send: {message}"
    );
    assert!(fake.writes().is_empty(), "{:?}", fake.writes());
    fake.verify();
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
