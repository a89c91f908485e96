//! The git-side tools (`repo cleanup`, `delivery reconcile`, `events scan|reconcile|archive|
//! restore`) on real repositories built with the `git` binary, with gix's answers cross-checked
//! against git's.

use std::path::Path;
use std::process::Command as Std;

use serde_json::Value;

use crate::lifecycle::agent;
use crate::support::Repo;

/// Runs git with a fixed identity and fixed dates (so SHAs are the same in every run of the
/// test), returning trimmed stdout; panics on failure.
fn g(dir: &Path, args: &[&str]) -> String {
    let out = git_cmd(dir, args).output().expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Whether a git command succeeds (for predicates such as `merge-base --is-ancestor`).
fn g_ok(dir: &Path, args: &[&str]) -> bool {
    git_cmd(dir, args)
        .output()
        .expect("git runs")
        .status
        .success()
}

fn git_cmd(dir: &Path, args: &[&str]) -> Std {
    let mut cmd = Std::new("git");
    cmd.current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("GIT_AUTHOR_DATE", "2026-03-01T10:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-03-01T10:00:00Z");
    cmd
}

fn ok(repo: &Repo, args: &[&str]) -> Value {
    let (code, doc) = repo.json(args);
    assert_eq!(code, 0, "{args:?}: {doc}");
    doc
}

fn as_agent(repo: &Repo, token: &str, args: &[&str]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.push("--json");
    let out = repo.dacli(&all).env("DACLI_AGENT", token).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        crate::support::one_json(&out.stdout),
    )
}

/// A commit on a new branch `name` (from the current HEAD), then back to main.
fn branch_with_commit(dir: &Path, name: &str, file: &str) {
    g(dir, &["checkout", "-q", "-b", name]);
    std::fs::write(dir.join(file), format!("{file}\n")).unwrap();
    g(dir, &["add", file]);
    g(dir, &["commit", "-qm", &format!("work on {file}")]);
    g(dir, &["checkout", "-q", "main"]);
}

/// The cleanup fixture: a project with five tasks and their branches:
/// 1 merged with `--no-ff`, 2 unmerged, 3 squash-merged, 4 merged (a commit is added later),
/// 5 done, checked out in a clean worktree under `.dacli/worktrees/`.
fn cleanup_fixture() -> Repo {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "Shop", "--slug", "checkout"]);
    for title in [
        "Merged work",
        "Unmerged work",
        "Squashed work",
        "Moving work",
        "Done work",
    ] {
        ok(&repo, &["task", "add", title, "--accept", "works"]);
    }
    ok(&repo, &["task", "check", "5", "--n", "1"]);
    ok(&repo, &["task", "done", "5"]);
    let d = repo.path();
    name_workspace(&repo);
    g(d, &["add", "-A"]);
    g(d, &["commit", "-qm", "workspace"]);
    branch_with_commit(d, "dacli/001-merged-work", "a.txt");
    g(
        d,
        &[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "merge 1",
            "dacli/001-merged-work",
        ],
    );
    branch_with_commit(d, "dacli/002-unmerged-work", "b.txt");
    branch_with_commit(d, "dacli/003-squashed-work", "c.txt");
    g(d, &["merge", "-q", "--squash", "dacli/003-squashed-work"]);
    g(d, &["commit", "-qm", "squash 3"]);
    branch_with_commit(d, "dacli/004-moving-work", "d.txt");
    g(
        d,
        &[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "merge 4",
            "dacli/004-moving-work",
        ],
    );
    branch_with_commit(d, "dacli/005-done-work", "e.txt");
    g(
        d,
        &[
            "worktree",
            "add",
            "-q",
            ".dacli/worktrees/done",
            "dacli/005-done-work",
        ],
    );
    repo
}

/// `init` names the workspace after its (random) temp directory; a fixed name keeps the
/// committed tree, and so every SHA, the same in every run.
fn name_workspace(repo: &Repo) {
    let path = repo.ws("config.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let fixed: Vec<String> = text
        .lines()
        .map(|l| {
            if l.starts_with("name = ") {
                "name = \"shop\"".to_string()
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(&path, fixed.join("\n") + "\n").unwrap();
}

fn candidate<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["data"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no candidate {id} in {doc}"))
}

fn proof<'a>(c: &'a Value, predicate: &str) -> &'a str {
    c["proofs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["predicate"] == predicate)
        .unwrap_or_else(|| panic!("no proof {predicate} in {c}"))["result"]
        .as_str()
        .unwrap()
}

fn refs(dir: &Path) -> String {
    g(dir, &["for-each-ref", "--format=%(refname) %(objectname)"])
}

#[test]
fn cleanup_retires_only_the_merged_branch_and_keeps_the_others_with_reasons() {
    let repo = cleanup_fixture();
    let d = repo.path();
    let (code, preview) = repo.json(&["repo", "cleanup"]);
    assert_eq!(code, 0, "{preview}");
    let data = &preview["data"];
    assert_eq!(data["mode"], "preview");
    assert_eq!(data["base"]["name"], "main");
    assert_eq!(data["base"]["sha"], g(d, &["rev-parse", "main"]));

    let merged = candidate(&preview, "refs/heads/dacli/001-merged-work");
    assert_eq!(merged["action"], "retire", "{merged}");
    let unmerged = candidate(&preview, "refs/heads/dacli/002-unmerged-work");
    assert_eq!(unmerged["action"], "keep");
    assert_eq!(unmerged["keep_reason"], "unique_commits");
    let squashed = candidate(&preview, "refs/heads/dacli/003-squashed-work");
    assert_eq!(squashed["action"], "keep");
    assert_eq!(squashed["keep_reason"], "unique_commits");
    // The branch checked out in the retired worktree is freed by the same plan.
    let done = candidate(&preview, "refs/heads/dacli/005-done-work");
    assert_eq!(proof(done, "not_checked_out_anywhere"), "proven", "{done}");
    let wt = candidate(&preview, "done");
    assert_eq!(wt["kind"], "worktree");
    assert_eq!(wt["path"], ".dacli/worktrees/done");
    assert_eq!(wt["action"], "retire", "{wt}");

    // gix's ancestry agrees with git's on every branch.
    for c in data["candidates"].as_array().unwrap() {
        if c["kind"] != "local_branch" {
            continue;
        }
        let tip = c["tip"].as_str().unwrap();
        let git_says = g_ok(d, &["merge-base", "--is-ancestor", tip, "main"]);
        assert_eq!(
            proof(c, "ancestor_of_fresh_base") == "proven",
            git_says,
            "{c}"
        );
        let mainline = g(d, &["rev-list", "--first-parent", "main"]);
        let on_line = mainline.lines().any(|l| l == tip);
        assert_eq!(
            proof(c, "tip_not_on_base_first_parent") == "failed",
            on_line,
            "{c}"
        );
    }

    // Previewing twice gives the same digest, and a preview writes nothing.
    let (_, again) = repo.json(&["repo", "cleanup"]);
    assert_eq!(again["data"]["plan_digest"], data["plan_digest"]);
    assert!(!repo.ws("txn").exists() && !repo.ws("evidence").exists());

    // A commit lands on branch 4 between preview and apply: the stale digest is refused.
    g(d, &["checkout", "-q", "dacli/004-moving-work"]);
    std::fs::write(d.join("late.txt"), "late\n").unwrap();
    g(d, &["add", "late.txt"]);
    g(d, &["commit", "-qm", "late work"]);
    g(d, &["checkout", "-q", "main"]);
    let before = refs(d);
    let digest = data["plan_digest"].as_str().unwrap();
    let (code, refused) = repo.json(&["repo", "cleanup", "--apply", "--digest", digest]);
    assert_eq!(code, 3, "{refused}");
    assert_eq!(refused["refused"]["policy"], "plan.drifted");
    assert!(
        refused["refused"]["next"]
            .as_str()
            .unwrap()
            .contains("dacli repo cleanup")
    );
    assert_eq!(refs(d), before, "a refused apply changes nothing");
    assert!(!repo.ws("txn").exists());

    // Preview again: branch 4 is now kept for its new commit.
    let fresh = ok(&repo, &["repo", "cleanup"]);
    let moving = candidate(&fresh, "refs/heads/dacli/004-moving-work");
    assert_eq!(moving["keep_reason"], "unique_commits", "{moving}");
    let digest = fresh["data"]["plan_digest"].as_str().unwrap().to_string();
    let applied = ok(&repo, &["repo", "cleanup", "--apply", "--digest", &digest]);
    let a = &applied["data"];
    assert_eq!(a["outcome"], "completed", "{a}");
    assert_eq!(a["already_applied"], false);
    let txn = a["txn"].as_str().unwrap().to_string();
    let merged_tip = merged["tip"].as_str().unwrap();
    let pinned = format!("refs/dacli/retired/dacli/001-merged-work/{txn}");
    assert_eq!(
        g(d, &["rev-parse", &pinned]),
        merged_tip,
        "pinned ref exists"
    );
    assert!(!g_ok(
        d,
        &[
            "rev-parse",
            "--verify",
            "-q",
            "refs/heads/dacli/001-merged-work"
        ]
    ));
    for kept in ["002-unmerged-work", "003-squashed-work", "004-moving-work"] {
        assert!(g_ok(
            d,
            &[
                "rev-parse",
                "--verify",
                "-q",
                &format!("refs/heads/dacli/{kept}")
            ]
        ));
    }
    assert!(
        !d.join(".dacli/worktrees/done").exists(),
        "the clean worktree is removed"
    );
    assert!(
        g_ok(
            d,
            &[
                "rev-parse",
                "--verify",
                "-q",
                "refs/heads/dacli/005-done-work"
            ]
        ) || g_ok(
            d,
            &[
                "rev-parse",
                "--verify",
                "-q",
                &format!("refs/dacli/retired/dacli/005-done-work/{txn}")
            ]
        )
    );

    // One evidence record, holding ids, SHAs and enumeration values only.
    let evidence = a["evidence"][0].as_str().unwrap();
    let text = std::fs::read_to_string(d.join(evidence)).unwrap();
    assert!(text.contains("tool = \"cleanup\""), "{text}");
    assert!(text.contains(merged_tip));
    assert!(
        !text.contains(d.to_str().unwrap()),
        "no absolute path: {text}"
    );
    let steps = std::fs::read_dir(repo.ws(&format!("txn/{txn}")))
        .unwrap()
        .count();
    assert!(steps >= 6, "one file per step");

    // Applying the completed digest again returns the record and does nothing.
    let before = refs(d);
    let again = ok(&repo, &["repo", "cleanup", "--apply", "--digest", &digest]);
    assert_eq!(again["data"]["already_applied"], true);
    assert_eq!(again["data"]["txn"], txn.as_str());
    assert_eq!(refs(d), before);
    assert_eq!(
        std::fs::read_dir(repo.ws(&format!("txn/{txn}")))
            .unwrap()
            .count(),
        steps
    );
}

#[test]
fn worktrees_with_untracked_files_are_dirty_and_registrations_are_pruned() {
    let repo = cleanup_fixture();
    let d = repo.path();
    std::fs::write(d.join(".dacli/worktrees/done/scratch.txt"), "mine\n").unwrap();
    g(
        d,
        &["worktree", "add", "-q", "--detach", ".dacli/worktrees/gone"],
    );
    std::fs::remove_dir_all(d.join(".dacli/worktrees/gone")).unwrap();
    let preview = ok(&repo, &["repo", "cleanup"]);
    let wt = candidate(&preview, "done");
    assert_eq!(wt["action"], "keep");
    assert_eq!(wt["keep_reason"], "dirty");
    assert_eq!(proof(wt, "clean_including_untracked"), "failed");
    // Still checked out there, so the branch stays too.
    let branch = candidate(&preview, "refs/heads/dacli/005-done-work");
    assert_eq!(
        proof(branch, "not_checked_out_anywhere"),
        "failed",
        "{branch}"
    );
    let reg = candidate(&preview, "gone");
    assert_eq!(reg["kind"], "registration");
    assert_eq!(reg["action"], "retire");
    let digest = preview["data"]["plan_digest"].as_str().unwrap();
    ok(&repo, &["repo", "cleanup", "--apply", "--digest", digest]);
    assert!(d.join(".dacli/worktrees/done/scratch.txt").exists());
    let list = g(d, &["worktree", "list", "--porcelain"]);
    assert!(list.contains("worktrees/done"), "{list}");
    assert!(!list.contains("worktrees/gone"), "{list}");
}

#[test]
fn ro_previews_and_only_root_applies_for_other_identities() {
    let repo = cleanup_fixture();
    let (_, ro) = agent(&repo, "reviewer", 21, "ro");
    let (_, rw) = agent(&repo, "builder", 22, "rw");
    let (code, preview) = as_agent(&repo, &ro, &["repo", "cleanup"]);
    assert_eq!(code, 0, "{preview}");
    let digest = preview["data"]["plan_digest"].as_str().unwrap();
    let (code, refused) = as_agent(
        &repo,
        &ro,
        &["repo", "cleanup", "--apply", "--digest", digest],
    );
    assert_eq!(
        (code, refused["refused"]["policy"].as_str()),
        (3, Some("grant.read_only"))
    );
    let (code, preview) = as_agent(&repo, &rw, &["repo", "cleanup"]);
    assert_eq!(code, 0);
    assert_eq!(
        preview["data"]["refusals"][0]["policy"], "grant.root_required",
        "{preview}"
    );
    let digest = preview["data"]["plan_digest"].as_str().unwrap();
    let before = refs(repo.path());
    let (code, refused) = as_agent(
        &repo,
        &rw,
        &["repo", "cleanup", "--apply", "--digest", digest],
    );
    assert_eq!(code, 3, "{refused}");
    assert_eq!(refused["refused"]["policy"], "grant.root_required");
    assert_eq!(refs(repo.path()), before);
    let (code, refused) = repo.json(&["repo", "cleanup", "--apply"]);
    assert_eq!(
        (code, refused["refused"]["policy"].as_str()),
        (3, Some("plan.digest_required"))
    );
}

#[test]
fn bad_repositories_get_precise_answers_and_lose_nothing() {
    // No commits at all: nothing to retire, and no error.
    let empty = Repo::initialized();
    let (code, doc) = empty.json(&["repo", "cleanup"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["candidates"].as_array().unwrap().len(), 0);

    // A missing base: every ancestry proof is unknown, so nothing is provable.
    let repo = cleanup_fixture();
    let d = repo.path();
    let before = refs(d);
    let (code, doc) = repo.json(&[
        "repo",
        "cleanup",
        "--base",
        "nope",
        "--include",
        "local_branches",
    ]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["refused"]["policy"], "git.cannot_prove");
    assert!(doc["refused"]["next"].as_str().unwrap().contains("--base"));

    // A detached HEAD with no base configured: refused with the fix named.
    g(d, &["checkout", "-q", "--detach", "main"]);
    let (code, doc) = repo.json(&["repo", "cleanup", "--include", "local_branches"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["refused"]["policy"], "git.cannot_prove");
    assert!(
        doc["refused"]["reason"]
            .as_str()
            .unwrap()
            .contains("detached")
    );
    // ... and with `--base main` it works as usual.
    let doc = ok(
        &repo,
        &[
            "repo",
            "cleanup",
            "--base",
            "main",
            "--include",
            "local_branches",
        ],
    );
    assert_eq!(
        candidate(&doc, "refs/heads/dacli/001-merged-work")["action"],
        "retire"
    );
    assert_eq!(refs(d), before);
}

#[test]
fn a_shallow_clone_proves_no_ancestry() {
    let origin = cleanup_fixture();
    let clone = tempfile::tempdir().unwrap();
    let url = format!("file://{}", origin.path().display());
    g(
        clone.path(),
        &[
            "clone",
            "-q",
            "--depth",
            "1",
            "--no-single-branch",
            &url,
            "c",
        ],
    );
    let c = clone.path().join("c");
    for b in ["dacli/001-merged-work", "dacli/002-unmerged-work"] {
        g(&c, &["branch", "-q", b, &format!("origin/{b}")]);
    }
    let out = crate::support::dacli()
        .current_dir(&c)
        .args(["repo", "cleanup", "--include", "local_branches", "--json"])
        .output()
        .unwrap();
    let doc = crate::support::one_json(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{doc}");
    assert_eq!(doc["refused"]["policy"], "git.cannot_prove");
    assert!(
        doc["refused"]["reason"]
            .as_str()
            .unwrap()
            .contains("shallow"),
        "{doc}"
    );
}

/// Builds the fixture, previews, and returns (repo, digest).
fn previewed() -> (Repo, String) {
    let repo = cleanup_fixture();
    let d = repo.path();
    g(
        d,
        &["worktree", "add", "-q", "--detach", ".dacli/worktrees/gone"],
    );
    std::fs::remove_dir_all(d.join(".dacli/worktrees/gone")).unwrap();
    let preview = ok(&repo, &["repo", "cleanup", "--no-fetch"]);
    let digest = preview["data"]["plan_digest"].as_str().unwrap().to_string();
    (repo, digest)
}

/// What a cleanup leaves behind: every ref, the worktree registrations, and the checkouts.
fn end_state(repo: &Repo) -> String {
    let d = repo.path();
    let list = g(d, &["worktree", "list", "--porcelain"]);
    let worktrees: Vec<&str> = list
        .lines()
        .filter(|l| l.starts_with("worktree "))
        .collect();
    format!(
        "{}\n{}\n{}",
        refs(d),
        worktrees.len(),
        d.join(".dacli/worktrees/done").exists()
    )
}

#[test]
fn kill_9_during_apply_then_resume_ends_like_an_uninterrupted_run() {
    let (clean, digest) = previewed();
    let done = ok(
        &clean,
        &[
            "repo",
            "cleanup",
            "--no-fetch",
            "--apply",
            "--digest",
            &digest,
        ],
    );
    assert_eq!(done["data"]["outcome"], "completed");
    let steps =
        std::fs::read_dir(clean.ws(&format!("txn/{}", done["data"]["txn"].as_str().unwrap())))
            .unwrap()
            .count();
    let expected = end_state(&clean);
    for n in 1..steps {
        let (repo, d2) = previewed();
        assert_eq!(d2, digest, "the fixture is deterministic");
        let mut child = repo
            .std_command(&[
                "repo",
                "cleanup",
                "--no-fetch",
                "--apply",
                "--digest",
                &digest,
                "--json",
            ])
            .env("DACLI_TEST_PAUSE_AFTER_STEP", n.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let txn_root = repo.ws("txn");
        let mut waited = 0;
        loop {
            let files: usize = std::fs::read_dir(&txn_root)
                .map(|rd| {
                    rd.flatten()
                        .map(|e| {
                            std::fs::read_dir(e.path())
                                .map(|x| {
                                    x.flatten()
                                        .filter(|f| {
                                            !f.file_name().to_string_lossy().starts_with('.')
                                        })
                                        .count()
                                })
                                .unwrap_or(0)
                        })
                        .sum()
                })
                .unwrap_or(0);
            if files >= n {
                break;
            }
            assert!(waited < 3000, "step {n} never came");
            std::thread::sleep(std::time::Duration::from_millis(10));
            waited += 1;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let txn = std::fs::read_dir(&txn_root)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .file_name()
            .to_string_lossy()
            .to_string();
        // Resume by id, or (every other time) by applying the same digest again, which finds
        // the open transaction.
        let mut args = vec![
            "repo",
            "cleanup",
            "--no-fetch",
            "--apply",
            "--digest",
            &digest,
        ];
        if n % 2 == 1 {
            args.extend(["--txn", &txn]);
        }
        let resumed = ok(&repo, &args);
        assert_eq!(
            resumed["data"]["txn"],
            txn.as_str(),
            "the same transaction finishes"
        );
        assert_eq!(
            resumed["data"]["outcome"], "completed",
            "after step {n}: {resumed}"
        );
        assert_eq!(end_state(&repo), expected, "killed after step {n}");
    }
}

// ----- the event journal -----------------------------------------------------------------

/// A workspace with history: task 1 claimed, checked and finished by a builder and synced by
/// root (settled events and receipts); task 2 claimed but not synced (a pending event).
fn journal_fixture() -> (Repo, String) {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "Shop", "--slug", "checkout"]);
    ok(&repo, &["task", "add", "First", "--accept", "works"]);
    ok(&repo, &["task", "add", "Second", "--accept", "works"]);
    let (_, builder) = agent(&repo, "builder", 31, "rw");
    for args in [
        &["task", "claim", "1"][..],
        &["task", "check", "1", "--n", "1"],
        &["task", "done", "1"],
    ] {
        let (code, doc) = as_agent(&repo, &builder, args);
        assert_eq!(code, 0, "{args:?}: {doc}");
    }
    ok(&repo, &["sync"]);
    let (code, doc) = as_agent(&repo, &builder, &["task", "claim", "2"]);
    assert_eq!(code, 0, "{doc}");
    (repo, builder)
}

/// Every file under `dir`, by path relative to it, with its bytes.
fn tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

#[test]
fn archive_then_restore_is_byte_identical_and_history_counts_agree() {
    let (repo, _) = journal_fixture();
    ok(
        &repo,
        &[
            "shortcut",
            "add",
            "hello",
            "--command",
            "true",
            "--effect",
            "read",
            "--summary",
            "hi",
        ],
    );
    ok(&repo, &["run", "hello"]);
    ok(&repo, &["run", "hello"]);
    let uses = || ok(&repo, &["run", "--list"])["data"]["shortcuts"][0]["uses"].clone();
    assert_eq!(uses(), 2);
    let events = repo.ws("events");
    let original = tree(&events);
    let scan = ok(&repo, &["events", "scan"]);
    let history = scan["data"]["history"].clone();
    let status = ok(&repo, &["status"])["data"]["pending"].clone();
    let live_before = scan["data"]["scan"]["total"].as_u64().unwrap();
    assert!(
        scan["data"]["scan"]["by_state"]["pending"]
            .as_u64()
            .unwrap()
            >= 1,
        "{scan}"
    );

    let preview = ok(
        &repo,
        &["events", "archive", "--before", "2026-03-03T00:00:00Z"],
    );
    let p = &preview["data"];
    let count = p["count"].as_u64().unwrap();
    assert!(
        count >= 4,
        "settled events of the done task and their receipt: {p}"
    );
    assert!(
        p["excluded"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["reason"] == "pending"),
        "the pending claim stays: {p}"
    );
    assert!(!repo.ws("archive").exists(), "a preview writes nothing");
    let digest = p["plan_digest"].as_str().unwrap().to_string();
    // The horizon, not the clock, is in the digest: a later preview agrees.
    let again = ok(
        &repo,
        &["events", "archive", "--before", "2026-03-03T00:00:00Z"],
    );
    assert_eq!(again["data"]["plan_digest"], digest.as_str());

    let applied = ok(
        &repo,
        &[
            "events",
            "archive",
            "--before",
            "2026-03-03T00:00:00Z",
            "--apply",
            "--digest",
            &digest,
        ],
    );
    let a = &applied["data"];
    assert_eq!(a["outcome"], "completed", "{a}");
    let segment = a["segment"].as_str().unwrap().to_string();
    let seg_dir = repo.ws(&format!("archive/events/{segment}"));
    assert!(seg_dir.join("manifest.toml").is_file() && seg_dir.join("sealed.toml").is_file());
    let archived = tree(&seg_dir);
    let mut moved = 0;
    for (path, bytes) in &original {
        match archived.get(path) {
            Some(copy) => {
                assert_eq!(copy, bytes, "{path} is byte-identical in the segment");
                assert!(!events.join(path).exists(), "{path} left the live log");
                moved += 1;
            }
            None => assert!(events.join(path).exists(), "{path} stays live"),
        }
    }
    assert_eq!(moved as u64, count);
    // The manifest's hashes are the files' hashes, and its root is over them.
    let manifest: toml_edit::DocumentMut = std::fs::read_to_string(seg_dir.join("manifest.toml"))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(manifest["kind"].as_str(), Some("archive-segment"));
    let entries = manifest["entry"].as_array_of_tables().unwrap();
    assert_eq!(entries.len() as u64, count);
    let mut lines = Vec::new();
    for e in entries.iter() {
        let path = e["path"].as_str().unwrap();
        let sha = dacli::journal::archive::sha256_hex(&archived[path]);
        assert_eq!(e["sha256"].as_str(), Some(sha.as_str()), "{path}");
        lines.push(format!("{sha} {path}\n"));
    }
    lines.sort_by(|a, b| {
        a.split_once(' ')
            .unwrap()
            .1
            .cmp(b.split_once(' ').unwrap().1)
    });
    let root = format!(
        "sha256:{}",
        dacli::journal::archive::sha256_hex(lines.concat().as_bytes())
    );
    assert_eq!(manifest["root"].as_str(), Some(root.as_str()));

    // History counts the sealed segment; the live log and the fold are unchanged in meaning.
    let after = ok(&repo, &["events", "scan"]);
    for key in ["events", "by_kind", "by_agent"] {
        assert_eq!(
            after["data"]["history"][key], history[key],
            "history counts agree"
        );
    }
    assert_eq!(
        after["data"]["history"]["archived"].as_u64().unwrap(),
        count
    );
    assert_eq!(
        after["data"]["scan"]["total"].as_u64().unwrap(),
        live_before - count
    );
    assert_eq!(ok(&repo, &["status"])["data"]["pending"], status);
    assert_eq!(uses(), 2, "archived runs still count as uses");

    // Applying the completed digest again does nothing.
    let again = ok(
        &repo,
        &[
            "events",
            "archive",
            "--before",
            "2026-03-03T00:00:00Z",
            "--apply",
            "--digest",
            &digest,
        ],
    );
    assert_eq!(again["data"]["already_applied"], true);

    let restore = ok(&repo, &["events", "restore", &segment]);
    let rd = restore["data"]["plan_digest"].as_str().unwrap().to_string();
    assert_eq!(restore["data"]["count"].as_u64().unwrap(), count);
    let restored = ok(
        &repo,
        &["events", "restore", &segment, "--apply", "--digest", &rd],
    );
    assert_eq!(restored["data"]["outcome"], "completed", "{restored}");
    assert_eq!(
        tree(&events),
        original,
        "restore puts every file back exactly"
    );
    assert!(
        seg_dir.join("manifest.toml").is_file(),
        "the manifest is never deleted"
    );
    let last = ok(&repo, &["events", "scan"]);
    assert_eq!(last["data"]["history"]["events"], history["events"]);
    assert_eq!(last["data"]["history"]["by_kind"], history["by_kind"]);
    assert_eq!(last["data"]["history"]["archived"], 0);
    assert_eq!(last["data"]["segments"][0]["state"], "restored");
}

#[test]
fn an_interrupted_archival_stays_live_and_resumes() {
    let (repo, _) = journal_fixture();
    let events = repo.ws("events");
    let original = tree(&events);
    let history = ok(&repo, &["events", "scan"])["data"]["history"].clone();
    let pending = ok(&repo, &["status"])["data"]["pending"].clone();
    let preview = ok(
        &repo,
        &["events", "archive", "--before", "2026-03-03T00:00:00Z"],
    );
    let digest = preview["data"]["plan_digest"].as_str().unwrap().to_string();
    // Links: the plan, the manifest step, the manifest, its done step, the move step, then
    // one per file: the seventh is the second file, so one file is moved and then it fails.
    let out = repo
        .dacli(&[
            "events",
            "archive",
            "--before",
            "2026-03-03T00:00:00Z",
            "--apply",
            "--digest",
            &digest,
            "--json",
        ])
        .env("DACLI_TEST_FAULT", "link:7")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let seg = std::fs::read_dir(repo.ws("archive/events"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let in_segment = tree(&seg).keys().filter(|k| k.ends_with(".md")).count();
    let still_live = tree(&events).len();
    assert_eq!(in_segment, 1, "one file moved before the failure");
    assert_eq!(in_segment + still_live, original.len());
    // The unsealed segment's files are live: nothing is lost or counted twice.
    let scan = ok(&repo, &["events", "scan"]);
    assert_eq!(scan["data"]["segments"][0]["state"], "unsealed");
    assert_eq!(scan["data"]["history"], history, "{scan}");
    assert_eq!(ok(&repo, &["status"])["data"]["pending"], pending);
    // A new archival is refused and names the resume command.
    let (code, doc) = repo.json(&["events", "archive", "--before", "2026-03-03T00:00:00Z"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["refused"]["policy"], "archive.integrity");
    let next = doc["refused"]["next"].as_str().unwrap();
    assert!(next.contains("--txn"), "{next}");
    let txn = next
        .split("--txn ")
        .nth(1)
        .unwrap()
        .trim_end_matches(['`', '.'])
        .to_string();
    let resumed = ok(
        &repo,
        &[
            "events",
            "archive",
            "--before",
            "2026-03-03T00:00:00Z",
            "--apply",
            "--digest",
            &digest,
            "--txn",
            &txn,
        ],
    );
    assert_eq!(resumed["data"]["outcome"], "completed", "{resumed}");
    let segment = resumed["data"]["segment"].as_str().unwrap();
    let archived = tree(&repo.ws(&format!("archive/events/{segment}")));
    for (path, bytes) in &original {
        if let Some(copy) = archived.get(path) {
            assert_eq!(copy, bytes);
            assert!(!events.join(path).exists());
        }
    }
    let last = ok(&repo, &["events", "scan"])["data"]["history"].clone();
    for key in ["events", "by_kind", "by_agent"] {
        assert_eq!(last[key], history[key]);
    }
}

#[test]
fn a_corrupted_event_is_reported_quarantined_and_never_touched() {
    let (repo, builder) = journal_fixture();
    let events = repo.ws("events");
    let (path, bytes) = tree(&events).into_iter().next().unwrap();
    let mut bad = bytes.clone();
    bad.extend_from_slice(b"tampered\n");
    std::fs::write(events.join(&path), &bad).unwrap();
    let scan = ok(&repo, &["events", "scan"]);
    let mismatch = &scan["data"]["scan"]["checksum_mismatch"];
    assert_eq!(mismatch.as_array().unwrap().len(), 1, "{scan}");
    assert!(mismatch[0]["path"].as_str().unwrap().ends_with(&path));

    let (code, preview) = as_agent(&repo, &builder, &["events", "reconcile"]);
    assert_eq!(code, 0, "{preview}");
    let c = &preview["data"]["corrections"][0];
    assert_eq!(
        (c["class"].as_str(), c["action"].as_str()),
        (Some("checksum_mismatch"), Some("quarantine"))
    );
    let digest = preview["data"]["plan_digest"].as_str().unwrap();
    let (code, applied) = as_agent(
        &repo,
        &builder,
        &["events", "reconcile", "--apply", "--digest", digest],
    );
    assert_eq!(code, 0, "{applied}");
    let evidence = applied["data"]["evidence"][0].as_str().unwrap();
    assert!(
        evidence.starts_with(".dacli/evidence/reconcile-events/"),
        "{evidence}"
    );
    let record = std::fs::read_to_string(repo.path().join(evidence)).unwrap();
    assert!(
        record.contains("checksum_mismatch") && !record.contains("tampered"),
        "{record}"
    );
    assert_eq!(
        std::fs::read(events.join(&path)).unwrap(),
        bad,
        "the file is never edited"
    );

    // The corrupted file is never archived; only root archives.
    let preview = ok(
        &repo,
        &["events", "archive", "--before", "2026-03-03T00:00:00Z"],
    );
    assert!(
        !preview["data"]["moves"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| path.ends_with(m["path"].as_str().unwrap()))
    );
    let digest = preview["data"]["plan_digest"].as_str().unwrap();
    let (code, refused) = as_agent(
        &repo,
        &builder,
        &[
            "events",
            "archive",
            "--before",
            "2026-03-03T00:00:00Z",
            "--apply",
            "--digest",
            digest,
        ],
    );
    assert_eq!(
        (code, refused["refused"]["policy"].as_str()),
        (3, Some("grant.root_required"))
    );
}

// ----- delivery --------------------------------------------------------------------------

/// Tasks 1–5 with: 1 merged with `--no-ff` (open, criterion checked), 2 an unmerged branch,
/// 3 a recorded commit whose branch was deleted, 4 a commit on main naming it by trailer,
/// 5 done but its branch unmerged. Returns the repo and the task ids.
fn delivery_fixture() -> (Repo, Vec<String>) {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "Shop", "--slug", "checkout"]);
    let mut ids = Vec::new();
    for title in [
        "Merged work",
        "Pending work",
        "Orphaned work",
        "Trailer work",
        "Done work",
    ] {
        let doc = ok(&repo, &["task", "add", title, "--accept", "works"]);
        ids.push(doc["data"]["task"]["id"].as_str().unwrap().to_string());
    }
    ok(&repo, &["task", "check", "1", "--n", "1"]);
    ok(&repo, &["task", "check", "5", "--n", "1"]);
    ok(&repo, &["task", "done", "5"]);
    let d = repo.path();
    name_workspace(&repo);
    g(d, &["add", "-A"]);
    g(d, &["commit", "-qm", "workspace"]);
    branch_with_commit(d, "dacli/001-merged-work", "a.txt");
    g(
        d,
        &[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "merge 1",
            "dacli/001-merged-work",
        ],
    );
    branch_with_commit(d, "dacli/002-pending-work", "b.txt");
    branch_with_commit(d, "dacli/003-orphaned-work", "c.txt");
    let orphan = g(d, &["rev-parse", "dacli/003-orphaned-work"]);
    g(d, &["branch", "-q", "-D", "dacli/003-orphaned-work"]);
    let task3 = repo.ws("projects/checkout/tasks/open/003-orphaned-work.md");
    let text = std::fs::read_to_string(&task3).unwrap().replacen(
        "priority = \"should\"\n",
        &format!("priority = \"should\"\ndelivery = {{ branch = \"dacli/003-orphaned-work\", commits = [\"{orphan}\"] }}\n"),
        1,
    );
    std::fs::write(&task3, text).unwrap();
    std::fs::write(d.join("t.txt"), "t\n").unwrap();
    g(d, &["add", "t.txt"]);
    g(
        d,
        &[
            "commit",
            "-qm",
            &format!("trailer work\n\nDacli-Task: {}", ids[3]),
        ],
    );
    branch_with_commit(d, "dacli/005-done-work", "e.txt");
    (repo, ids)
}

/// Reconcile reads each task's recorded delivery through the derived index: a hand edit of
/// the `delivery` table in place (same inode, as an editor saves) shows at once, and the
/// answer with the index deleted is the same.
#[test]
fn delivery_reconcile_sees_a_hand_edit_of_a_recorded_delivery_warm_and_cold() {
    let (repo, ids) = delivery_fixture();
    let args = ["delivery", "reconcile", "--project", "checkout"];
    let state = |doc: &Value, n: usize| observation(doc, &ids[n])["state"].clone();
    let warm = ok(&repo, &args);
    assert_eq!(state(&warm, 2), "orphaned", "{warm}");
    assert_eq!(
        observation(&warm, &ids[2])["branch"],
        "dacli/003-orphaned-work"
    );

    // Task 2 records a delivery by hand; task 3's record is taken out. Both in place.
    let task2 = repo.ws("projects/checkout/tasks/open/002-pending-work.md");
    let task3 = repo.ws("projects/checkout/tasks/open/003-orphaned-work.md");
    let text3 = std::fs::read_to_string(&task3).unwrap();
    let line = text3
        .lines()
        .find(|l| l.starts_with("delivery = "))
        .unwrap()
        .to_string();
    let rewrite = |path: &Path, text: &str| {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    };
    rewrite(&task3, &text3.replacen(&format!("{line}\n"), "", 1));
    let text2 = std::fs::read_to_string(&task2).unwrap().replacen(
        "priority = \"should\"\n",
        "priority = \"should\"\ndelivery = { branch = \"dacli/renamed-by-hand\", pr = 41 }\n",
        1,
    );
    rewrite(&task2, &text2);

    let edited = ok(&repo, &args);
    assert_eq!(
        observation(&edited, &ids[1])["branch"],
        "dacli/renamed-by-hand",
        "{edited}"
    );
    assert_eq!(observation(&edited, &ids[1])["pr"], 41);
    assert_ne!(state(&edited, 2), "orphaned", "{edited}");
    assert_eq!(
        observation(&edited, &ids[2])["branch"],
        Value::Null,
        "{edited}"
    );

    std::fs::remove_dir_all(repo.ws("cache")).unwrap();
    let cold = ok(&repo, &args);
    assert_eq!(
        cold["data"]["observations"], edited["data"]["observations"],
        "the same answer without the index"
    );
    assert_eq!(cold["data"]["plan_digest"], edited["data"]["plan_digest"]);

    // A branch name git would refuse (ESC, CR, a space, shell text) names no ref: the
    // observation goes on and reports the name exactly.
    let hostile = "dacli/x\u{1b}[31m\r $(id) `id`";
    let text2 = std::fs::read_to_string(&task2).unwrap().replacen(
        "branch = \"dacli/renamed-by-hand\"",
        "branch = \"dacli/x\\u001b[31m\\r $(id) `id`\"",
        1,
    );
    rewrite(&task2, &text2);
    let odd = ok(&repo, &args);
    assert_eq!(observation(&odd, &ids[1])["branch"], hostile, "{odd}");
    let tips: Vec<&str> = observation(&odd, &ids[1])["tips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["ref"].as_str().unwrap())
        .collect();
    assert_eq!(tips, ["refs/heads/dacli/002-pending-work"], "{odd}");
}

fn observation<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["data"]["observations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["task"] == id)
        .unwrap_or_else(|| panic!("no observation of {id}: {doc}"))
}

fn has_drift(doc: &Value, id: &str, class: &str) -> bool {
    doc["data"]["drift"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["task"] == id && d["class"] == class)
}

#[test]
fn delivery_reconcile_classifies_merged_pending_and_orphaned_tasks() {
    let (repo, ids) = delivery_fixture();
    let d = repo.path();
    let events_before = tree(&repo.ws("events"));
    let preview = ok(&repo, &["delivery", "reconcile", "--project", "checkout"]);
    let state = |n: usize| {
        observation(&preview, &ids[n])["state"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(state(0), "delivered", "{preview}");
    assert_eq!(state(1), "pending");
    assert_eq!(state(2), "orphaned");
    assert_eq!(state(3), "delivered");
    assert_eq!(state(4), "pending");
    assert!(
        observation(&preview, &ids[3])["sources"]
            .as_array()
            .unwrap()
            .contains(&"trailers".into())
    );
    assert!(has_drift(&preview, &ids[0], "delivered_task_open"));
    assert!(has_drift(&preview, &ids[4], "done_not_delivered"));
    assert!(has_drift(&preview, &ids[0], "delivered_not_recorded"));
    // gix's ancestry agrees with git's for every tip.
    for o in preview["data"]["observations"].as_array().unwrap() {
        for tip in o["tips"].as_array().unwrap() {
            let git_says = g_ok(
                d,
                &[
                    "merge-base",
                    "--is-ancestor",
                    tip["sha"].as_str().unwrap(),
                    "main",
                ],
            );
            assert_eq!(tip["on_base"].as_bool(), Some(git_says), "{tip}");
        }
    }
    assert_eq!(
        tree(&repo.ws("events")),
        events_before,
        "a preview writes nothing"
    );
    assert!(!repo.ws("txn").exists());

    let digest = preview["data"]["plan_digest"].as_str().unwrap().to_string();
    let applied = ok(
        &repo,
        &[
            "delivery",
            "reconcile",
            "--project",
            "checkout",
            "--apply",
            "--digest",
            &digest,
        ],
    );
    assert_eq!(applied["data"]["outcome"], "completed", "{applied}");
    // The owner (root) closed the delivered task; the done-but-unmerged one got a finding
    // and a reopen proposal, never a forced reopen.
    assert!(
        repo.ws("projects/checkout/tasks/done/001-merged-work.md")
            .is_file()
    );
    assert!(
        repo.ws("projects/checkout/tasks/done/005-done-work.md")
            .is_file()
    );
    let events: Vec<String> = tree(&repo.ws("events")).into_keys().collect();
    assert!(
        events.iter().any(|e| e.ends_with("-a-root-finding.md")),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.ends_with("-a-root-propose-status.md"))
    );
    let evidence = applied["data"]["evidence"][0].as_str().unwrap();
    let record = std::fs::read_to_string(d.join(evidence)).unwrap();
    assert!(
        record.contains("tool = \"reconcile-delivery\"") && record.contains("record_delivery"),
        "{record}"
    );

    // Everything recorded is not recorded again, and nothing is left to close.
    let again = ok(&repo, &["delivery", "reconcile", "--project", "checkout"]);
    assert!(
        !has_drift(&again, &ids[0], "delivered_not_recorded"),
        "{again}"
    );
    assert!(!has_drift(&again, &ids[0], "delivered_task_open"));
    let classes: Vec<&str> = again["data"]["plan"]["repairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["class"].as_str().unwrap())
        .collect();
    assert!(
        !classes.contains(&"record_delivery_evidence"),
        "{classes:?}"
    );
}

#[test]
fn delivery_repairs_by_others_are_proposals() {
    let (repo, ids) = delivery_fixture();
    let (_, builder) = agent(&repo, "builder", 41, "rw");
    let (code, preview) = as_agent(&repo, &builder, &["delivery", "reconcile", "--task", "1"]);
    assert_eq!(code, 0, "{preview}");
    let repair = &preview["data"]["plan"]["repairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["class"] == "close_delivered_task")
        .unwrap()
        .clone();
    assert_eq!(repair["authority"], "proposal");
    assert_eq!(preview["data"]["refusals"][0]["policy"], "task.not_owner");
    let digest = preview["data"]["plan_digest"].as_str().unwrap();
    let (code, applied) = as_agent(
        &repo,
        &builder,
        &[
            "delivery",
            "reconcile",
            "--task",
            "1",
            "--apply",
            "--digest",
            digest,
        ],
    );
    assert_eq!(code, 0, "{applied}");
    assert!(
        repo.ws("projects/checkout/tasks/open/001-merged-work.md")
            .is_file(),
        "not closed by a non-owner"
    );
    // The builder's `finish` event waits for the owner's sync, and every reader folds it.
    let shown = ok(&repo, &["task", "show", &ids[0]]);
    assert_eq!(shown["data"]["status"], "done", "{shown}");
    assert_eq!(shown["data"]["pending_events"][0]["kind"], "finish");
    // A second apply of the same digest does nothing.
    let events = tree(&repo.ws("events")).len();
    let (_, again) = as_agent(
        &repo,
        &builder,
        &[
            "delivery",
            "reconcile",
            "--task",
            "1",
            "--apply",
            "--digest",
            digest,
        ],
    );
    assert_eq!(again["data"]["already_applied"], true);
    assert_eq!(tree(&repo.ws("events")).len(), events);
}

#[test]
fn old_run_records_move_to_the_archive_with_a_manifest() {
    let repo = cleanup_fixture();
    let old = "01KJPW0000000000000000000A";
    let new = "01KJPW0000000000000000000B";
    for id in [old, new] {
        repo.write(
            &format!(".dacli/runs/briefs/{id}/run.toml"),
            format!("kind = \"brief\"\nid = \"{id}\"\ncreated_by = \"a-root\"\n"),
        );
        repo.write(
            &format!(".dacli/runs/briefs/{id}/brief.md"),
            format!("# brief {id}\n"),
        );
    }
    let brief = std::fs::read(repo.ws(&format!("runs/briefs/{old}/brief.md"))).unwrap();
    let preview = ok(
        &repo,
        &["repo", "cleanup", "--include", "runs", "--keep-runs", "1"],
    );
    assert_eq!(
        candidate(&preview, new)["keep_reason"],
        "protected",
        "the newest is kept"
    );
    assert_eq!(candidate(&preview, old)["action"], "retire", "{preview}");
    let digest = preview["data"]["plan_digest"].as_str().unwrap();
    ok(
        &repo,
        &[
            "repo",
            "cleanup",
            "--include",
            "runs",
            "--keep-runs",
            "1",
            "--apply",
            "--digest",
            digest,
        ],
    );
    let archived = repo.ws(&format!("archive/runs/{old}"));
    assert_eq!(
        std::fs::read(archived.join("brief.md")).unwrap(),
        brief,
        "moved byte for byte"
    );
    let manifest = std::fs::read_to_string(archived.join("manifest.toml")).unwrap();
    assert!(
        manifest.contains(&dacli::journal::archive::sha256_hex(&brief)),
        "{manifest}"
    );
    assert!(!repo.ws(&format!("runs/briefs/{old}")).exists());
    assert!(repo.ws(&format!("runs/briefs/{new}/brief.md")).exists());
}

#[test]
fn the_base_is_fetched_into_a_private_ref_and_remote_tracking_refs_never_move() {
    let origin = cleanup_fixture();
    let bare = tempfile::tempdir().unwrap();
    let url = format!("file://{}", bare.path().join("o.git").display());
    g(
        bare.path(),
        &[
            "clone",
            "-q",
            "--bare",
            origin.path().to_str().unwrap(),
            "o.git",
        ],
    );
    let work = tempfile::tempdir().unwrap();
    g(work.path(), &["clone", "-q", &url, "c"]);
    let c = work.path().join("c");
    g(
        &c,
        &[
            "branch",
            "-q",
            "dacli/002-unmerged-work",
            "origin/dacli/002-unmerged-work",
        ],
    );
    let tracking = g(&c, &["rev-parse", "refs/remotes/origin/main"]);
    // Branch 2 is merged on origin after the clone.
    let d = origin.path();
    g(
        d,
        &[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "merge 2",
            "dacli/002-unmerged-work",
        ],
    );
    g(d, &["push", "-q", &url, "main"]);
    let out = crate::support::dacli()
        .current_dir(&c)
        .args(["repo", "cleanup", "--include", "local_branches", "--json"])
        .output()
        .unwrap();
    let doc = crate::support::one_json(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    let base = &doc["data"]["base"];
    assert_eq!(base["source"], "fetched");
    assert_eq!(base["sha"], g(d, &["rev-parse", "main"]));
    assert_eq!(
        g(&c, &["rev-parse", "refs/dacli/observed/main"]),
        g(d, &["rev-parse", "main"])
    );
    assert_eq!(
        g(&c, &["rev-parse", "refs/remotes/origin/main"]),
        tracking,
        "untouched"
    );
    assert_eq!(
        candidate(&doc, "refs/heads/dacli/002-unmerged-work")["action"],
        "retire",
        "{doc}"
    );
    // Without fetching, the stale local base proves nothing new.
    let out = crate::support::dacli()
        .current_dir(&c)
        .args([
            "repo",
            "cleanup",
            "--include",
            "local_branches",
            "--no-fetch",
            "--json",
        ])
        .output()
        .unwrap();
    let doc = crate::support::one_json(&out.stdout);
    assert_eq!(doc["data"]["base"]["source"], "local");
    assert_eq!(
        candidate(&doc, "refs/heads/dacli/002-unmerged-work")["action"],
        "keep"
    );
}

#[test]
fn archiving_nothing_makes_no_segment() {
    let repo = Repo::initialized();
    let preview = ok(&repo, &["events", "archive", "--before", "0m"]);
    assert_eq!(preview["data"]["count"], 0);
    let digest = preview["data"]["plan_digest"].as_str().unwrap();
    let applied = ok(
        &repo,
        &[
            "events", "archive", "--before", "0m", "--apply", "--digest", digest,
        ],
    );
    assert_eq!(applied["data"]["outcome"], "completed");
    assert_eq!(applied["data"]["segment"], Value::Null);
    assert!(!repo.ws("archive").exists());
}
