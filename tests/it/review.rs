//! `dacli review` and `dacli log` on real repositories with several commits of workspace
//! changes: dacli writes, a second clone merged back, a hand edit, a broken file and a stray.

use std::path::Path;
use std::process::Command as Std;

use crate::review_support::{
    commit, decision, glossary, ok, pr_7_claims_first, push_test_merge, risk, shop_with_first, task,
};
use crate::support::{Repo, dacli, git, one_json};

/// Runs git in `dir` and returns its stdout.
fn git_out(dir: &Path, args: &[&str]) -> String {
    let out = Std::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

/// dacli in another clone, with its own clock and seed so its ids never collide with the
/// first clone's.
fn in_clone(dir: &Path, step: i64, args: &[&str]) -> std::process::Output {
    let clock: jiff::Timestamp = "2026-03-05T12:00:00Z".parse().expect("clock");
    let now = jiff::Timestamp::from_second(clock.as_second() + step).expect("in range");
    dacli()
        .current_dir(dir)
        .args(args)
        .env("DACLI_TEST_CLOCK", now.to_string())
        .env("DACLI_TEST_SEED", (1000 + step).to_string())
        .output()
        .expect("runs")
}

fn text(repo: &Repo, args: &[&str]) -> String {
    let out = repo.dacli(args).output().expect("runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Commit SHAs depend on commit times; snapshots show them as `<sha>`.
fn redact_shas(s: &str) -> String {
    let re = regex::Regex::new(r"\b[0-9a-f]{10,40}\b").expect("regex");
    re.replace_all(s, "<sha>").into_owned()
}

/// A project with three tasks, committed and tagged `base`; then a history on top of it:
/// dacli edits, an agent's pending claim and root's sync, a second clone's work merged back,
/// a hand edit, a broken file and a stray.
fn history() -> (Repo, tempfile::TempDir) {
    let repo = Repo::initialized();
    let root = repo.path().to_path_buf();
    ok(&repo, &["project", "add", "Shop"]);
    ok(
        &repo,
        &[
            "task",
            "add",
            "Add the rounding shim",
            "--project",
            "shop",
            "--accept",
            "Every caller goes through the shim",
            "--accept",
            "`make test` passes",
            "--estimate",
            "2,4,9",
        ],
    );
    ok(
        &repo,
        &[
            "task",
            "add",
            "Write docs",
            "--project",
            "shop",
            "--accept",
            "A page exists",
        ],
    );
    ok(
        &repo,
        &[
            "task",
            "add",
            "Refund path",
            "--project",
            "shop",
            "--accept",
            "Refunds round once",
        ],
    );
    let spawn = ok(&repo, &["agent", "spawn", "--grant", "rw"]);
    let token = spawn["data"]["token"].as_str().expect("token").to_string();
    commit(&root, "plan the shop");
    git(&root, &["tag", "base"]);

    // Commit 2: root works on task 1 and edits task 2; a decision and a risk are recorded.
    ok(&repo, &["task", "claim", "1"]);
    ok(&repo, &["task", "check", "1", "--n", "1"]);
    ok(
        &repo,
        &[
            "task",
            "edit",
            "2",
            "--title",
            "Write the user docs",
            "--priority",
            "must",
            "--estimate",
            "1,2,3",
            "--context",
            "Users ask how rounding works.",
        ],
    );
    ok(&repo, &["task", "depend", "2", "--on", "1"]);
    decision(
        &repo,
        "shop",
        "Round once at the boundary",
        "Round half-even once",
        "An async queue of rounding jobs",
    );
    risk(&repo, "shop", "Refunds may round twice", "high", "low");
    glossary(
        &repo,
        "shop",
        "minor unit",
        "the smallest unit of a currency",
    );
    commit(&root, "work on the shim");

    // Commit 3: another agent claims task 3 (an event, pending until root syncs) and asks.
    let out = repo
        .dacli(&["task", "claim", "3", "--json"])
        .env("DACLI_AGENT", &token)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = repo
        .dacli(&["ask", "3", "Which currency table?", "--json"])
        .env("DACLI_AGENT", &token)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    commit(&root, "agent claims the refund path");

    // A second clone works on task 2 while the first syncs; the merge brings both together.
    let clone = tempfile::tempdir().expect("temp dir");
    git(
        clone.path(),
        &["clone", "-q", &root.display().to_string(), "."],
    );
    let out = in_clone(clone.path(), 0, &["task", "claim", "2", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = in_clone(
        clone.path(),
        1,
        &[
            "note",
            "add",
            "finding",
            "Docs lack examples",
            "--project",
            "shop",
            "--severity",
            "minor",
            "--body",
            "No page shows a rounded total.",
            "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    commit(clone.path(), "clone: claim the docs");

    ok(&repo, &["sync"]);
    commit(&root, "root syncs");
    git(
        &root,
        &[
            "pull",
            "-q",
            "--no-rebase",
            "--no-edit",
            &clone.path().display().to_string(),
            "main",
        ],
    );

    // A hand edit, a file that does not parse, a stray and derived data.
    let shown = ok(&repo, &["task", "show", "shop/1"]);
    assert_eq!(
        shown["data"]["status"], "active",
        "task 1 is active: {shown}"
    );
    let shim = repo
        .path()
        .join(shown["data"]["path"].as_str().expect("path"));
    let body = std::fs::read_to_string(&shim).expect("read");
    std::fs::write(
        &shim,
        body.replace(
            "Every caller goes through the shim",
            "Every caller goes through the one shim",
        ),
    )
    .expect("write");
    repo.write(
        ".dacli/projects/shop/tasks/open/009-broken.md",
        "+++\nkind = \"task\"\n",
    );
    repo.write(".dacli/projects/shop/scratch.txt", "notes to self\n");
    commit(&root, "hand edits");
    repo.write(".dacli/cache/derived.bin", "derived");
    (repo, clone)
}

#[test]
fn review_names_every_change_of_a_range_in_text_markdown_and_json() {
    let (repo, _clone) = history();
    let text_out = redact_shas(&text(&repo, &["review", "base..HEAD"]));
    insta::assert_snapshot!("review_range_text", text_out);
    let md = redact_shas(&text(
        &repo,
        &["review", "base..HEAD", "--format", "markdown"],
    ));
    assert!(md.starts_with("<!-- dacli-review -->\n"), "{md}");
    insta::assert_snapshot!("review_range_markdown", md);
    let json = ok(&repo, &["review", "base..HEAD"]);
    insta::assert_json_snapshot!("review_range_json", json["data"], {
        ".base.commit" => "<sha>",
        ".head.commit" => "<sha>",
    });

    // What a reviewer checks by eye, stated once more without the snapshot.
    assert!(text_out.contains("status open → active"), "{text_out}");
    assert!(text_out.contains("criterion 1 checked"), "{text_out}");
    assert!(
        text_out.contains("rejected: An async queue of rounding jobs"),
        "{text_out}"
    );
    assert!(
        text_out.contains("{+one +}"),
        "hand edit as a word diff: {text_out}"
    );
    assert!(text_out.contains("009-broken.md"), "{text_out}");
    assert!(text_out.contains("scratch.txt"), "{text_out}");
    assert!(
        !text_out.contains("cache/"),
        "derived files never show: {text_out}"
    );
}

#[test]
fn review_defaults_to_the_working_tree_against_head() {
    let repo = Repo::initialized();
    shop_with_first(&repo, "one");
    // Clean: nothing to review, though reads wrote the derived index.
    let clean = text(&repo, &["review"]);
    assert!(clean.contains("no workspace changes"), "{clean}");
    assert!(!clean.contains("cache"), "{clean}");

    ok(&repo, &["task", "claim", "1"]);
    let v = ok(&repo, &["review"]);
    let data = &v["data"];
    assert_eq!(data["base"]["rev"], "HEAD");
    assert_eq!(data["head"]["rev"], "working tree");
    assert!(data["head"]["commit"].is_null());
    let changes = &data["projects"][0]["tasks"][0]["changes"];
    assert_eq!(changes[0]["change"], "status", "{changes}");
    assert_eq!(changes[0]["from"], "open");
    assert_eq!(changes[0]["to"], "active");

    // `<rev>` alone compares the working tree with that commit: the same here.
    let v2 = ok(&repo, &["review", "HEAD"]);
    assert_eq!(v2["data"]["projects"], data["projects"]);
    // After the commit, `HEAD~1..HEAD` shows what the working tree showed.
    commit(repo.path(), "claim");
    let v3 = ok(&repo, &["review", "HEAD~1..HEAD"]);
    assert_eq!(v3["data"]["projects"], data["projects"]);
    assert_eq!(v3["data"]["counts"]["files"], data["counts"]["files"]);
}

#[test]
fn review_refuses_a_revision_that_names_no_commit() {
    let repo = Repo::initialized();
    commit(repo.path(), "init");
    let (code, v) = repo.json(&["review", "nope..HEAD"]);
    assert_eq!(code, 4, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("nope"),
        "{v}"
    );
    let (code, v) = repo.json(&["review", ".."]);
    assert_eq!(code, 2, "{v}");
}

#[test]
fn review_on_a_repository_without_commits_shows_everything_as_added() {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "Shop"]);
    let v = ok(&repo, &["review"]);
    assert!(v["data"]["base"]["commit"].is_null(), "{v}");
    assert_eq!(
        v["data"]["projects"][0]["changes"][0]["change"], "created",
        "{v}"
    );
}

#[test]
fn log_shows_a_tasks_history_newest_first_with_authors() {
    let (repo, _clone) = history();
    let v = ok(&repo, &["log", "shop/2"]);
    let data = &v["data"];
    assert_eq!(data["task"]["ref"], "shop/002-write-docs");
    let commits = data["commits"].as_array().expect("commits");
    let subjects: Vec<&str> = commits
        .iter()
        .map(|c| c["subject"].as_str().unwrap_or(""))
        .collect();
    // Newest first; the merge itself adds nothing the clone's commit did not.
    assert_eq!(
        subjects,
        ["clone: claim the docs", "work on the shim", "plan the shop"],
        "{data}"
    );
    assert_eq!(commits[0]["author"], "t");
    assert_eq!(commits[0]["email"], "t@example.com");
    assert!(commits[0]["date"].as_str().unwrap_or("").ends_with('Z'));
    // The clone's claim is an event (the clone's root is not the owner? it is root: a write).
    let kinds: Vec<&str> = commits[1]["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| c["change"].as_str().unwrap_or(""))
        .collect();
    assert!(kinds.contains(&"title"), "{kinds:?}");
    assert!(kinds.contains(&"priority"), "{kinds:?}");
    assert!(kinds.contains(&"dependency_added"), "{kinds:?}");
    assert_eq!(commits[2]["changes"][0]["change"], "created");
    assert_eq!(data["truncated"], false);

    // Task 3's pending claim and its settling show as events and as the owner's sync.
    let v = ok(&repo, &["log", "shop/3"]);
    let commits = v["data"]["commits"].as_array().expect("commits");
    let events: Vec<(&str, &str)> = commits
        .iter()
        .flat_map(|c| c["events"].as_array().into_iter().flatten())
        .map(|e| {
            (
                e["kind"].as_str().unwrap_or(""),
                e["state"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(events.contains(&("claim", "pending")), "{events:?}");
    assert!(events.contains(&("help", "pending")), "{events:?}");
}

#[test]
fn log_limit_truncates_and_says_so() {
    let (repo, _clone) = history();
    let v = ok(&repo, &["log", "shop/2", "--limit", "1"]);
    assert_eq!(v["data"]["commits"].as_array().map(Vec::len), Some(1));
    assert_eq!(v["data"]["commits"][0]["subject"], "clone: claim the docs");
    assert_eq!(v["data"]["truncated"], true);
    let t = text(&repo, &["log", "shop/2", "--limit", "1"]);
    assert!(t.contains("raise --limit"), "{t}");
    assert!(t.contains("commit <sha>") || t.contains("commit "), "{t}");
    let (code, _) = repo.json(&["log", "shop/2", "--limit", "0"]);
    assert_eq!(code, 2);
}

#[test]
fn log_text_names_author_date_and_change() {
    let (repo, _clone) = history();
    let t = text(&repo, &["log", "shop/1"]);
    assert!(
        t.starts_with("log shop/001-add-the-rounding-shim — Add the rounding shim\n"),
        "{t}"
    );
    assert!(t.contains("t <t@example.com>"), "{t}");
    assert!(
        t.contains("criterion 1 edited: Every caller goes through the {+one +}shim"),
        "{t}"
    );
    assert!(t.contains("status open → active"), "{t}");
    // Hand edit first (newest), creation last.
    let hand = t.find("hand edits").expect("hand edit");
    let plan = t.find("plan the shop").expect("plan");
    assert!(hand < plan, "{t}");
}

#[test]
fn log_refuses_an_unknown_task_and_finds_a_removed_one_by_id() {
    let (repo, _clone) = history();
    let (code, v) = repo.json(&["log", "shop/77"]);
    assert_eq!(code, 4, "{v}");
    // Remove task 2 from the working tree and commit: its id still finds its history.
    let v = ok(&repo, &["log", "shop/2"]);
    let id = v["data"]["task"]["id"].as_str().expect("id").to_string();
    let shown = ok(&repo, &["task", "show", "shop/2"]);
    std::fs::remove_file(
        repo.path()
            .join(shown["data"]["path"].as_str().expect("path")),
    )
    .expect("rm");
    commit(repo.path(), "drop docs task");
    let v = ok(&repo, &["log", &id]);
    let commits = v["data"]["commits"].as_array().expect("commits");
    assert_eq!(commits[0]["subject"], "drop docs task");
    assert_eq!(commits[0]["changes"][0]["change"], "removed");
    let _ = one_json;
    let _ = git_out;
}

#[test]
fn the_parent_of_a_root_commit_is_the_empty_tree() {
    let repo = Repo::initialized();
    shop_with_first(&repo, "one");
    let v = ok(&repo, &["review", "HEAD^..HEAD"]);
    assert!(v["data"]["base"]["commit"].is_null(), "{v}");
    assert_eq!(v["data"]["base"]["rev"], "HEAD^");
    let task = &v["data"]["projects"][0]["tasks"][0];
    assert_eq!(task["changes"][0]["change"], "created", "{v}");
    assert_eq!(task["changes"][0]["status"], "open");
    // Config and the root agent are records of their own, not outside the format.
    let kinds: Vec<&str> = v["data"]["other"]
        .as_array()
        .expect("other")
        .iter()
        .map(|o| o["kind"].as_str().unwrap_or(""))
        .collect();
    assert!(
        kinds.contains(&"config") && kinds.contains(&"agent"),
        "{kinds:?}"
    );
    assert_eq!(v["data"]["counts"]["outside_format"], 0);
    // A second commit has a parent: `HEAD^` is that commit again.
    ok(&repo, &["task", "claim", "1"]);
    commit(repo.path(), "two");
    let v = ok(&repo, &["review", "HEAD^..HEAD"]);
    assert!(v["data"]["base"]["commit"].is_string(), "{v}");
}

/// Every ref of `dir` but dacli's private ones, with what it points to.
fn user_refs(dir: &Path) -> String {
    git_out(dir, &["for-each-ref", "--format=%(refname) %(objectname)"])
        .lines()
        .filter(|l| !l.starts_with("refs/dacli/"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn review_pr_fetches_into_private_refs_and_compares_the_head_with_its_base() {
    let repo = Repo::initialized();
    let root = repo.path().to_path_buf();
    // A bare "GitHub" remote holding the pull request's refs as GitHub does.
    let _remote = pr_7_claims_first(&repo);
    // Meanwhile the base moves on; the test merge is made on its new tip.
    git(&root, &["checkout", "-q", "main"]);
    task(&repo, "shop", "Second", "done");
    commit(&root, "base moves");
    git(&root, &["push", "-q", "origin", "main"]);
    push_test_merge(&root);
    git(&root, &["checkout", "-q", "main"]);
    git(&root, &["branch", "-q", "-D", "feature", "merge-test"]);

    let before = user_refs(&root);
    let v = ok(&repo, &["review", "--pr", "7"]);
    assert_eq!(user_refs(&root), before, "no user ref moves");
    let data = &v["data"];
    assert_eq!(data["head"]["rev"], "pr 7");
    let private = git_out(&root, &["rev-parse", "refs/dacli/review/pr-7/head"]);
    assert_eq!(data["head"]["commit"], private.trim());
    // Only the pull request's own change: the claim, not the base's new task.
    let tasks = data["projects"][0]["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 1, "{data}");
    assert_eq!(tasks[0]["ref"], "shop/001-first");
    assert_eq!(tasks[0]["changes"][0]["change"], "status");
    let md = text(&repo, &["review", "--pr", "7", "--format", "markdown"]);
    assert!(
        md.starts_with("<!-- dacli-review -->\n## dacli review: pr 7 base"),
        "{md}"
    );

    // A pull request without a test merge (a conflict) is named, with a way out.
    git(&root, &["push", "-q", "origin", "main:refs/pull/8/head"]);
    let (code, v) = repo.json(&["review", "--pr", "8"]);
    assert_eq!(code, 4, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("test merge"),
        "{v}"
    );
    let (code, _) = repo.json(&["review", "--pr", "7", "HEAD"]);
    assert_eq!(code, 2);
}

/// The one file under `dir` (relative to the work tree), by its path.
fn only_file(repo: &Repo, dir: &str) -> String {
    let files: Vec<_> = std::fs::read_dir(repo.path().join(dir))
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    format!("{dir}/{}", files[0])
}

#[test]
fn renamed_notes_and_risks_are_one_object_not_an_addition_and_a_removal() {
    let repo = Repo::initialized();
    let root = repo.path().to_path_buf();
    ok(&repo, &["project", "add", "Shop"]);
    ok(
        &repo,
        &[
            "note",
            "add",
            "decision",
            "Round once",
            "--project",
            "shop",
            "--chose",
            "half-even",
            "--rejected",
            "half-up",
            "--because",
            "fair",
        ],
    );
    risk(&repo, "shop", "Refunds round twice", "low", "low");
    commit(&root, "plan");
    // A hand rename of both files, and an edit of the risk in the same commit.
    let note = only_file(&repo, ".dacli/projects/shop/notes/decisions");
    let risk = only_file(&repo, ".dacli/projects/shop/risks");
    git(&root, &["mv", &note, &note.replace(".md", "-renamed.md")]);
    let text = std::fs::read_to_string(root.join(&risk)).expect("risk");
    std::fs::write(
        root.join(&risk),
        text.replace("impact = \"low\"", "impact = \"high\""),
    )
    .expect("write");
    git(&root, &["mv", &risk, &risk.replace(".md", "-renamed.md")]);
    commit(&root, "rename");
    let v = ok(&repo, &["review", "HEAD^..HEAD"]);
    let project = &v["data"]["projects"][0];
    assert_eq!(project["notes"], serde_json::json!([]), "{v}");
    let risks = project["risks"].as_array().expect("risks");
    assert_eq!(risks.len(), 1, "{v}");
    assert_eq!(
        risks[0]["changes"],
        serde_json::json!([{"change": "field", "field": "impact", "from": "low", "to": "high"}]),
        "{v}"
    );
}

#[test]
fn log_follows_a_task_file_across_status_folders_and_a_hand_rename() {
    let repo = Repo::initialized();
    let root = repo.path().to_path_buf();
    ok(&repo, &["project", "add", "Shop"]);
    for title in ["First", "Second"] {
        task(&repo, "shop", title, "done");
    }
    commit(&root, "plan");
    ok(&repo, &["task", "claim", "1"]);
    commit(&root, "claim");
    let shown = ok(&repo, &["task", "show", "shop/1"]);
    let path = shown["data"]["path"].as_str().expect("path").to_string();
    git(
        &root,
        &["mv", &path, &path.replace(".md", "-renamed-by-hand.md")],
    );
    commit(&root, "rename by hand");
    ok(&repo, &["task", "check", "shop/1", "--n", "1"]);
    ok(&repo, &["task", "claim", "2"]);
    commit(&root, "check");
    let v = ok(&repo, &["log", "shop/1"]);
    let subjects: Vec<&str> = v["data"]["commits"]
        .as_array()
        .expect("commits")
        .iter()
        .map(|c| c["subject"].as_str().unwrap_or(""))
        .collect();
    // The rename changes nothing a reviewer reads; the creation before it is still found.
    assert_eq!(subjects, ["check", "claim", "plan"], "{v}");
    let last = &v["data"]["commits"][2]["changes"][0];
    assert_eq!(last["change"], "created", "{v}");
    assert_eq!(v["data"]["commits"][1]["changes"][0]["change"], "status");
}
