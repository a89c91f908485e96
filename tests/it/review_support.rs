//! What the review, review --post and search suites share: workspace steps and the git
//! setups of a pull request.

use std::path::Path;

use serde_json::Value;

use crate::support::{Repo, git};

/// Runs dacli with `--json` and returns its answer, which must succeed.
pub fn ok(repo: &Repo, args: &[&str]) -> Value {
    let (code, v) = repo.json(args);
    assert_eq!(code, 0, "{args:?}: {v}");
    v
}

/// Commits everything in the work tree of `dir`.
pub fn commit(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
}

/// Adds the task `title` to `project` with the one criterion `accept`.
pub fn task(repo: &Repo, project: &str, title: &str, accept: &str) -> Value {
    ok(
        repo,
        &[
            "task",
            "add",
            title,
            "--project",
            project,
            "--accept",
            accept,
        ],
    )
}

/// Adds the risk `title` to `project`.
pub fn risk(repo: &Repo, project: &str, title: &str, impact: &str, likelihood: &str) {
    ok(
        repo,
        &[
            "risk",
            "add",
            title,
            "--project",
            project,
            "--impact",
            impact,
            "--likelihood",
            likelihood,
        ],
    );
}

/// Adds the glossary term `term` to `project`.
pub fn glossary(repo: &Repo, project: &str, term: &str, definition: &str) {
    ok(
        repo,
        &["glossary", "add", "--project", project, term, definition],
    );
}

/// Project Shop with task 1 "First", committed as `message`.
pub fn shop_with_first(repo: &Repo, message: &str) {
    ok(repo, &["project", "add", "Shop"]);
    task(repo, "shop", "First", "done");
    commit(repo.path(), message);
}

/// A bare repository made `origin` of `root`, holding its `main`.
pub fn origin(root: &Path) -> tempfile::TempDir {
    let remote = tempfile::tempdir().expect("temp dir");
    git(remote.path(), &["init", "-q", "--bare"]);
    git(
        root,
        &[
            "remote",
            "add",
            "origin",
            &remote.path().display().to_string(),
        ],
    );
    git(root, &["push", "-q", "origin", "main"]);
    remote
}

/// A workspace with task 1 of Shop, `origin` a bare "GitHub" remote, and pull request 7 on it:
/// branch `feature` (checked out) claims the task. Returns the remote, which lives as long as it.
pub fn pr_7_claims_first(repo: &Repo) -> tempfile::TempDir {
    let root = repo.path();
    shop_with_first(repo, "plan");
    let remote = origin(root);
    git(root, &["checkout", "-q", "-b", "feature"]);
    ok(repo, &["task", "claim", "1"]);
    commit(root, "claim");
    git(root, &["push", "-q", "origin", "feature:refs/pull/7/head"]);
    remote
}

/// Merges `feature` into branch `merge-test` (made from `main`) and pushes it as pull request
/// 7's test merge, as GitHub does.
pub fn push_test_merge(root: &Path) {
    git(root, &["checkout", "-q", "-B", "merge-test", "main"]);
    // git would take one task file moving open/ → active/ for a directory rename.
    git(
        root,
        &[
            "-c",
            "merge.directoryRenames=false",
            "merge",
            "-q",
            "--no-ff",
            "--no-edit",
            "feature",
        ],
    );
    git(
        root,
        &["push", "-q", "-f", "origin", "merge-test:refs/pull/7/merge"],
    );
}

/// Records the decision `title` in `project`.
pub fn decision(repo: &Repo, project: &str, title: &str, chose: &str, rejected: &str) {
    ok(
        repo,
        &[
            "note",
            "add",
            "decision",
            title,
            "--project",
            project,
            "--chose",
            chose,
            "--rejected",
            rejected,
            "--because",
            "One place to test",
        ],
    );
}
