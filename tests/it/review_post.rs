//! `dacli review --pr N --post` against the local fake GitHub (every unexpected request fails
//! the test): a preview writes nothing; an apply creates the one marked comment; after the pull
//! request changes, an apply updates that same comment (found on the second page of comments);
//! an unchanged review writes nothing; a public repository without consent and a 403 are
//! refused with their typed policies.

use std::path::Path;

use serde_json::{Value, json};
use wiremock::matchers::{method, path, query_param, query_param_is_missing};
use wiremock::{Mock, ResponseTemplate};

use crate::github_support::{Fake, R, Ran, fixture, linked, run};
use crate::review_support::{commit, ok, origin, push_test_merge, task};
use crate::support::{Repo, git};

const MARKER: &str = "<!-- dacli-review -->";
const COMMENT_ID: u64 = 4242;

/// Pushes the current `feature` as pull request 7: its head and a test merge into `main`.
fn publish_pull(root: &Path) {
    git(
        root,
        &["push", "-q", "-f", "origin", "feature:refs/pull/7/head"],
    );
    push_test_merge(root);
    git(root, &["checkout", "-q", "feature"]);
}

/// A linked workspace (acme/widget) whose `origin` holds pull request 7: task 1 claimed.
fn pull_request() -> (Repo, tempfile::TempDir) {
    let repo = linked();
    let root = repo.path().to_path_buf();
    ok(&repo, &["project", "add", "Shop"]);
    task(&repo, "shop", "First", "done");
    task(&repo, "shop", "Second", "done");
    commit(&root, "plan");
    let remote = origin(&root);
    git(&root, &["checkout", "-q", "-b", "feature"]);
    ok(&repo, &["task", "claim", "1"]);
    commit(&root, "claim");
    publish_pull(&root);
    (repo, remote)
}

/// A fake serving the repository (public) and the pull request's comments on two pages; the
/// marked comment, when given, is on the second.
fn fake_with_comments(ours: Option<&str>) -> Fake {
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    let comments = format!("{R}/issues/7/comments");
    let next = format!(
        "<{}{comments}?per_page=100&page=2>; rel=\"next\"",
        fake.url()
    );
    fake.mount(
        Mock::given(method("GET"))
            .and(path(comments.clone()))
            .and(query_param_is_missing("page"))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("link", next.as_str())
                    .set_body_json(json!([
                        {"id": 1, "body": "Looks good to me", "html_url": "https://github.com/acme/widget/pull/7#issuecomment-1"},
                        {"id": 2, "body": format!("> {MARKER}\n> quoting the bot"), "html_url": "https://github.com/acme/widget/pull/7#issuecomment-2"}
                    ])),
            ),
    );
    let mut second = vec![json!({"id": 3, "body": "ship it"})];
    if let Some(body) = ours {
        second.push(json!({
            "id": COMMENT_ID,
            "body": body,
            "html_url": format!("https://github.com/acme/widget/pull/7#issuecomment-{COMMENT_ID}")
        }));
    }
    fake.mount(
        Mock::given(method("GET"))
            .and(path(comments))
            .and(query_param("page", "2"))
            .respond_with(ResponseTemplate::new(200).set_body_json(Value::Array(second))),
    );
    fake
}

fn grant(repo: &Repo) {
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    let r = run(
        repo,
        &fake,
        &[
            "github",
            "consent",
            "grant",
            "--project",
            "shop",
            "--granted-by",
            "human:mkoenig",
            "--classes",
            "tasks",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.doc);
}

/// The body of the one write request of `method`.
fn sent_body(fake: &Fake, method: &str) -> String {
    let bodies: Vec<Value> = fake
        .requests()
        .into_iter()
        .filter(|r| r.method.as_str() == method)
        .map(|r| serde_json::from_slice(&r.body).expect("a JSON body"))
        .collect();
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    bodies[0]["body"].as_str().expect("body").to_string()
}

fn post(repo: &Repo, fake: &Fake, apply: bool) -> Ran {
    let mut args = vec!["review", "--pr", "7", "--post"];
    if apply {
        args.push("--apply");
    }
    run(repo, fake, &args)
}

#[test]
fn post_previews_then_creates_one_comment_and_later_updates_it() {
    let (repo, _remote) = pull_request();
    let root = repo.path().to_path_buf();
    grant(&repo);

    // Preview: the action and the body, and no write.
    let fake = fake_with_comments(None);
    let preview = post(&repo, &fake, false);
    assert_eq!(preview.code, 0, "{}", preview.doc);
    let p = &preview.doc["data"]["post"];
    assert_eq!(p["mode"], "preview", "{p}");
    assert_eq!(p["action"], "create", "{p}");
    assert_eq!(p["visibility"], "public");
    assert!(p["outcome"].is_null());
    let body = p["body"].as_str().expect("body").to_string();
    assert!(body.starts_with(MARKER), "{body}");
    assert!(body.contains("shop/001-first"), "{body}");
    assert!(fake.writes().is_empty(), "{:?}", fake.writes());
    fake.verify();

    // Apply: one POST with the previewed body; a quoted marker is not the comment.
    let fake = fake_with_comments(None);
    fake.mount(
        Mock::given(method("POST"))
            .and(path(format!("{R}/issues/7/comments")))
            .respond_with(ResponseTemplate::new(201).set_body_json(json!({
                "id": COMMENT_ID,
                "html_url": format!("https://github.com/acme/widget/pull/7#issuecomment-{COMMENT_ID}")
            })))
            .expect(1),
    );
    let digest = p["plan_digest"].as_str().expect("digest").to_string();
    let applied = run(
        &repo,
        &fake,
        &[
            "review", "--pr", "7", "--post", "--apply", "--digest", &digest,
        ],
    );
    assert_eq!(applied.code, 0, "{}", applied.doc);
    let a = &applied.doc["data"]["post"];
    assert_eq!(a["outcome"], "completed", "{a}");
    assert_eq!(a["comment_id"], COMMENT_ID);
    assert_eq!(fake.writes(), [format!("POST {R}/issues/7/comments")]);
    let created = sent_body(&fake, "POST");
    assert_eq!(created, body);
    fake.verify();

    // The pull request changes: the same comment is updated, none added.
    ok(&repo, &["task", "claim", "2"]);
    commit(&root, "claim the second");
    publish_pull(&root);
    let fake = fake_with_comments(Some(&created));
    fake.mount(
        Mock::given(method("PATCH"))
            .and(path(format!("{R}/issues/comments/{COMMENT_ID}")))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"id": COMMENT_ID})))
            .expect(1),
    );
    let preview = post(&repo, &fake, false);
    assert_eq!(preview.doc["data"]["post"]["action"], "update");
    assert_eq!(preview.doc["data"]["post"]["comment_id"], COMMENT_ID);
    // A digest of the earlier preview no longer matches: refused, nothing written.
    let stale = run(
        &repo,
        &fake,
        &[
            "review", "--pr", "7", "--post", "--apply", "--digest", &digest,
        ],
    );
    assert_eq!(stale.code, 3, "{}", stale.doc);
    assert_eq!(stale.doc["refused"]["policy"], "plan.drifted");
    assert!(fake.writes().is_empty(), "{:?}", fake.writes());
    let updated = post(&repo, &fake, true);
    assert_eq!(updated.code, 0, "{}", updated.doc);
    assert_eq!(updated.doc["data"]["post"]["action"], "update");
    assert_eq!(
        fake.writes(),
        [format!("PATCH {R}/issues/comments/{COMMENT_ID}")]
    );
    let patched = sent_body(&fake, "PATCH");
    assert!(patched.starts_with(MARKER), "{patched}");
    assert!(patched.contains("shop/002-second"), "{patched}");
    assert_ne!(patched, created);
    fake.verify();

    // Nothing changed since: nothing is written.
    let fake = fake_with_comments(Some(&patched));
    let again = post(&repo, &fake, true);
    assert_eq!(again.code, 0, "{}", again.doc);
    assert_eq!(again.doc["data"]["post"]["action"], "none");
    assert!(fake.writes().is_empty(), "{:?}", fake.writes());
    fake.verify();
}

#[test]
fn post_is_refused_without_consent_and_on_a_403() {
    let (repo, _remote) = pull_request();
    // A public repository and no consent: refused before any comment is read.
    let fake = Fake::start();
    fake.get(R, 200, fixture("repo"));
    let r = post(&repo, &fake, true);
    assert_eq!(r.code, 3, "{}", r.doc);
    assert_eq!(r.doc["refused"]["policy"], "github.no_consent");
    assert!(
        r.doc["refused"]["next"]
            .as_str()
            .unwrap_or("")
            .contains("github consent grant --project shop"),
        "{}",
        r.doc
    );
    assert!(fake.writes().is_empty());
    fake.verify();

    // The token may not write comments: a typed refusal, exit 3.
    grant(&repo);
    let fake = fake_with_comments(None);
    fake.mount(
        Mock::given(method("POST"))
            .and(path(format!("{R}/issues/7/comments")))
            .respond_with(
                ResponseTemplate::new(403)
                    .set_body_json(json!({"message": "Resource not accessible by integration"})),
            )
            .expect(1),
    );
    let r = post(&repo, &fake, true);
    assert_eq!(r.code, 3, "{}", r.doc);
    assert_eq!(r.doc["refused"]["policy"], "github.access", "{}", r.doc);
    assert!(
        r.doc["refused"]["reason"]
            .as_str()
            .unwrap_or("")
            .contains("insufficient_permission"),
        "{}",
        r.doc
    );
    fake.verify();

    // Without a token nothing is asked of GitHub at all.
    let fake = Fake::start();
    let r = crate::github_support::run_with(
        &repo,
        &fake.url(),
        &["review", "--pr", "7", "--post"],
        &[("GH_TOKEN", ""), ("GITHUB_TOKEN", "")],
        None,
    );
    assert_eq!(r.code, 3, "{}", r.doc);
    assert_eq!(r.doc["refused"]["policy"], "github.access");
    assert!(fake.requests().is_empty());
}
