//! The brief says everything in force (issue 23 §4): dependencies with their state and what
//! was decided and found about them, an answer's own words, the project scope of a note
//! without `--about`, and "no cap" said as such by `whoami`.

use crate::support::Repo;

fn context(repo: &Repo, task: &str) -> String {
    let out = repo.dacli(&["context", task]).output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn ok(repo: &Repo, args: &[&str]) {
    let out = repo.dacli(args).output().expect("runs");
    assert!(
        out.status.success(),
        "dacli {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn shop() -> Repo {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "Shop", "--goal", "Sell things"]);
    ok(
        &repo,
        &["task", "add", "Totals", "--accept", "sums in cents"],
    );
    ok(
        &repo,
        &["task", "add", "Refunds", "--accept", "refund rounds once"],
    );
    ok(&repo, &["task", "depend", "2", "--on", "1"]);
    repo
}

#[test]
fn the_brief_carries_dependencies_with_their_state_and_what_was_decided_about_them() {
    let repo = shop();
    ok(
        &repo,
        &[
            "note",
            "add",
            "decision",
            "Amounts in integer cents",
            "--about",
            "1",
            "--chose",
            "integer cents",
            "--rejected",
            "floats",
            "--because",
            "rounding drift",
        ],
    );
    let brief = context(&repo, "2");
    assert!(
        brief.contains("## Depends on\n- 001-totals (FS): open, not yet satisfied"),
        "{brief}"
    );
    assert!(brief.contains("Amounts in integer cents"), "{brief}");
    assert!(brief.contains("Rejected: floats"), "{brief}");
    // The predecessor's decision ranks after the task's own, before the project's.
    ok(
        &repo,
        &[
            "note",
            "add",
            "decision",
            "No ORM",
            "--chose",
            "SQL",
            "--rejected",
            "an ORM",
            "--because",
            "speed",
        ],
    );
    let brief = context(&repo, "2");
    let dep = brief
        .find("Amounts in integer cents")
        .expect("dependency decision");
    let project = brief.find("No ORM").expect("project decision");
    assert!(dep < project, "{brief}");

    ok(&repo, &["task", "claim", "1"]);
    ok(&repo, &["task", "check", "1", "--all"]);
    ok(
        &repo,
        &[
            "task",
            "done",
            "1",
            "--allow-unverified",
            "--reason",
            "test",
        ],
    );
    let brief = context(&repo, "2");
    assert!(
        brief.contains("- 001-totals (FS): done, satisfied"),
        "{brief}"
    );
}

#[test]
fn a_finding_about_a_predecessor_in_another_branch_of_the_tree_reaches_the_brief() {
    let repo = shop();
    ok(&repo, &["task", "add", "Parent", "--accept", "x"]);
    ok(
        &repo,
        &["task", "add", "Child", "--parent", "3", "--accept", "y"],
    );
    ok(&repo, &["task", "depend", "4", "--on", "1"]);
    ok(
        &repo,
        &[
            "note",
            "add",
            "finding",
            "The batch job bypasses the service",
            "--about",
            "1",
            "--severity",
            "major",
            "--body",
            "Nightly batch writes balances directly.",
        ],
    );
    let brief = context(&repo, "4");
    assert!(
        brief.contains("The batch job bypasses the service"),
        "{brief}"
    );
    assert!(brief.contains("on 001-totals, major"), "{brief}");
}

#[test]
fn an_answer_given_as_a_decision_shows_its_own_words() {
    let repo = shop();
    let (_, asked) = repo.json(&["ask", "2", "Half-even or half-up?"]);
    let question = asked["data"]["question"]
        .as_str()
        .unwrap_or_else(|| panic!("question id in {asked}"))
        .to_string();
    ok(
        &repo,
        &[
            "answer",
            &question,
            "Use half-even: banker's rounding matches the ledger.",
            "--as",
            "decision",
            "--chose",
            "half-even",
            "--rejected",
            "half-up",
            "--because",
            "ledger parity",
        ],
    );
    let brief = context(&repo, "2");
    let answers = &brief[brief.find("## Answers").expect("answers section")..];
    assert!(
        answers.contains("banker's rounding matches the ledger"),
        "{brief}"
    );
    assert!(answers.contains("Rejected: half-up"), "{brief}");
}

#[test]
fn a_decision_without_about_is_labelled_with_its_project() {
    let repo = shop();
    ok(
        &repo,
        &[
            "note",
            "add",
            "decision",
            "No ORM",
            "--chose",
            "SQL",
            "--rejected",
            "an ORM",
            "--because",
            "speed",
        ],
    );
    let brief = context(&repo, "1");
    assert!(brief.contains(", on project shop):"), "{brief}");
    assert!(!brief.contains("on workspace"), "{brief}");
}

#[test]
fn whoami_says_no_cap_as_null_not_zero() {
    let repo = Repo::initialized();
    let (code, me) = repo.json(&["whoami"]);
    assert_eq!(code, 0);
    assert!(me["data"]["wip"]["cap"].is_null(), "{me}");
    let out = repo.dacli(&["whoami"]).output().expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("cap none"), "{text}");
}

#[test]
fn roles_say_no_cap_as_null_not_zero() {
    let repo = Repo::initialized();
    let (code, doc) = repo.json(&[
        "role",
        "add",
        "builder",
        "--grant",
        "rw",
        "--summary",
        "Builds",
    ]);
    assert_eq!(code, 0, "{doc}");
    let (_, shown) = repo.json(&["role", "show", "builder"]);
    assert!(shown["data"]["role"]["wip"].is_null(), "{shown}");
    assert!(!shown.to_string().contains("\"wip\":0"), "{shown}");
    let (_, listed) = repo.json(&["role", "list"]);
    let builder = listed["data"]["roles"]
        .as_array()
        .expect("roles")
        .iter()
        .find(|r| r["name"] == "builder")
        .expect("builder listed")
        .clone();
    assert!(builder["wip"]["cap"].is_null(), "{builder}");
}
