//! `repo cleanup` and `delivery reconcile` on histories with many branches (issue 27): the
//! limit counts retirements after proof, squash merges named by a trailer are deliveries, a
//! reopened task's old merge is not, a partial cleanup says so by its exit code. Histories
//! are written by `git fast-import` in one process, so even dozens of branches cost one spawn;
//! the 5,000-branch figures are the benchmark's (`bench/run --sections git`).

use std::io::Write;
use std::path::Path;
use std::process::{Command as Std, Stdio};

use serde_json::Value;

use crate::support::Repo;

/// Runs git with a fixed identity and fixed dates; trimmed stdout; panics on failure.
fn g(dir: &Path, args: &[&str]) -> String {
    g_at(dir, args, "2026-03-01T10:00:00Z")
}

/// [`g`] with the author and committer date `date`.
fn g_at(dir: &Path, args: &[&str], date: &str) -> String {
    let out = Std::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Feeds `stream` to `git fast-import` (refs it names are created or moved).
fn fast_import(dir: &Path, stream: &str) {
    let mut child = Std::new("git")
        .current_dir(dir)
        .args(["fast-import", "--quiet", "--force"])
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::piped())
        .spawn()
        .expect("git fast-import runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stream.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success(), "fast-import failed");
}

/// A fast-import stream under construction: commits with one file each, at increasing times.
struct Stream {
    text: String,
    mark: u64,
    time: u64,
}

impl Stream {
    fn new() -> Stream {
        Stream {
            text: String::new(),
            mark: 0,
            // 2026-03-01T10:00:00Z, like the fixtures' git dates.
            time: 1_772_359_200,
        }
    }

    /// A commit on `branch` with parents `from` (and `merge`), writing `file`; its mark.
    fn commit(
        &mut self,
        branch: &str,
        from: &str,
        merge: Option<&str>,
        file: &str,
        message: &str,
    ) -> String {
        self.mark += 1;
        self.time += 60;
        let content = format!("{file}\n");
        self.text.push_str(&format!(
            "commit {branch}\nmark :{}\ncommitter t <t@example.com> {} +0000\ndata {}\n{message}\nfrom {from}\n",
            self.mark,
            self.time,
            message.len()
        ));
        if let Some(m) = merge {
            self.text.push_str(&format!("merge {m}\n"));
        }
        self.text.push_str(&format!(
            "M 100644 inline {file}\ndata {}\n{content}\n",
            content.len()
        ));
        format!(":{}", self.mark)
    }

    /// Task branches `dacli/<NNN>-work-<n>` for `n` in `numbers`, each with one commit merged
    /// into main with `--no-ff`, starting from `main`; main's new tip.
    fn merged(&mut self, main: &str, numbers: std::ops::RangeInclusive<usize>) -> String {
        let mut main = main.to_string();
        for n in numbers {
            let work = self.commit(
                &format!("refs/heads/dacli/{n:03}-work-{n}"),
                &main,
                None,
                &format!("work/{n}.txt"),
                &format!("work {n}"),
            );
            main = self.commit(
                "refs/heads/main",
                &main,
                Some(&work),
                &format!("work/{n}.txt"),
                &format!("merge {n}"),
            );
        }
        main
    }

    /// Writes the stream into `dir`'s repository and checks main out again.
    fn import(&self, dir: &Path) {
        fast_import(dir, &self.text);
        g(dir, &["reset", "-q", "--hard", "main"]);
    }
}

fn ok(repo: &Repo, args: &[&str]) -> Value {
    let (code, doc) = repo.json(args);
    assert_eq!(code, 0, "{args:?}: {doc}");
    doc
}

/// A workspace with project `checkout` and `n` tasks titled `Work <i>`, committed; their ids.
fn workspace(n: usize) -> (Repo, Vec<String>) {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "Shop", "--slug", "checkout"]);
    let mut ids = Vec::new();
    for i in 1..=n {
        let doc = ok(
            &repo,
            &["task", "add", &format!("Work {i}"), "--accept", "works"],
        );
        ids.push(doc["data"]["task"]["id"].as_str().unwrap().to_string());
    }
    g(repo.path(), &["add", "-A"]);
    g(repo.path(), &["commit", "-qm", "workspace"]);
    (repo, ids)
}

/// A cleanup preview of the local branches.
const CLEANUP: [&str; 5] = [
    "repo",
    "cleanup",
    "--no-fetch",
    "--include",
    "local_branches",
];

/// `args` applied with the digest of `plan`: the exit code and the document.
fn apply(repo: &Repo, args: &[&str], plan: &Value) -> (i32, Value) {
    let digest = plan["data"]["plan_digest"].as_str().unwrap();
    let mut apply = args.to_vec();
    apply.extend(["--apply", "--digest", digest]);
    repo.json(&apply)
}

fn retiring(doc: &Value) -> Vec<String> {
    doc["data"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["action"] == "retire")
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

fn branch_exists(dir: &Path, name: &str) -> bool {
    Std::new("git")
        .current_dir(dir)
        .args(["rev-parse", "--verify", "-q", name])
        .output()
        .unwrap()
        .status
        .success()
}

#[test]
fn the_limit_counts_retirements_after_proof_so_cleanup_always_moves_on() {
    let (repo, _) = workspace(12);
    let d = repo.path();
    let base = g(d, &["rev-parse", "main"]);
    let mut s = Stream::new();
    // Twenty unmerged branches whose names sort before every task branch.
    for i in 0..20 {
        s.commit(
            &format!("refs/heads/dacli/000-wip-{i:02}"),
            &base,
            None,
            &format!("wip/{i}.txt"),
            "unfinished",
        );
    }
    // Twelve task branches, each merged with --no-ff.
    s.merged(&base, 1..=12);
    s.import(d);
    let mut args = CLEANUP.to_vec();
    args.extend(["--limit", "10"]);

    let first = ok(&repo, &args);
    let retire = retiring(&first);
    assert_eq!(retire.len(), 10, "{first}");
    assert_eq!(
        retire[0], "refs/heads/dacli/001-work-1",
        "in the plan's order"
    );
    assert_eq!(first["data"]["omitted"], 2, "{first}");
    let kept = first["data"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["action"] == "keep")
        .count();
    assert_eq!(kept, 20, "kept candidates are all listed: {first}");
    assert!(
        first["data"]["notices"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["code"] == "limit"),
        "{first}"
    );

    let (code, applied) = apply(&repo, &args, &first);
    assert_eq!(code, 0, "{applied}");
    assert_eq!(applied["data"]["outcome"], "completed", "{applied}");
    assert!(!branch_exists(d, "refs/heads/dacli/001-work-1"));
    assert!(branch_exists(d, "refs/heads/dacli/011-work-11"));

    // The next run retires the rest, and then there is nothing left to retire.
    let second = ok(&repo, &args);
    assert_eq!(
        retiring(&second),
        [
            "refs/heads/dacli/011-work-11",
            "refs/heads/dacli/012-work-12"
        ],
        "{second}"
    );
    assert_eq!(second["data"]["omitted"], 0);
    assert_eq!(apply(&repo, &args, &second).0, 0);
    let third = ok(&repo, &args);
    assert!(retiring(&third).is_empty(), "{third}");
    for i in 0..20 {
        assert!(branch_exists(
            d,
            &format!("refs/heads/dacli/000-wip-{i:02}")
        ));
    }

    // A limit of zero could never retire anything.
    let mut zero = CLEANUP.to_vec();
    zero.extend(["--limit", "0"]);
    let (code, doc) = repo.json(&zero);
    assert_eq!(code, 2, "{doc}");
}

fn observation<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["data"]["observations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["task"] == id)
        .unwrap_or_else(|| panic!("no observation of {id}: {doc}"))
}

fn repairs_of(doc: &Value, id: &str) -> Vec<String> {
    doc["data"]["plan"]["repairs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["task"] == id)
        .map(|r| r["class"].as_str().unwrap().to_string())
        .collect()
}

fn candidate<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["data"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no candidate {id} in {doc}"))
}

const RECONCILE: [&str; 5] = [
    "delivery",
    "reconcile",
    "--project",
    "checkout",
    "--no-fetch",
];

#[test]
fn a_squash_merge_named_by_its_trailer_is_delivered_and_its_branch_retired() {
    let (repo, ids) = workspace(3);
    let d = repo.path();
    let base = g(d, &["rev-parse", "main"]);
    let mut s = Stream::new();
    // 1: squash-merged with `Dacli-Task:`; 2: squash-merged without a trailer; 3: squash-merged
    // with the trailer, then the branch moved on.
    let mut main = base.clone();
    for (i, id) in ids.iter().enumerate() {
        let n = i + 1;
        let branch = format!("refs/heads/dacli/{n:03}-work-{n}");
        let work = s.commit(&branch, &main, None, &format!("w/{n}.txt"), "work");
        let message = if n == 2 {
            "squashed work 2".to_string()
        } else {
            format!("squashed work {n}\n\nDacli-Task: {id}")
        };
        main = s.commit(
            "refs/heads/main",
            &main,
            None,
            &format!("w/{n}.txt"),
            &message,
        );
        if n == 3 {
            s.commit(&branch, &work, None, "w/3-more.txt", "more work");
        }
    }
    s.import(d);
    let squash1 = g(d, &["rev-parse", "main~2"]);
    assert!(g(d, &["log", "-1", "--format=%B", &squash1]).contains(&ids[0]));

    let report = ok(&repo, &RECONCILE);
    let one = observation(&report, &ids[0]);
    assert_eq!(one["state"], "delivered", "{one}");
    assert_eq!(one["tips"][0]["on_base"], false, "{one}");
    assert_eq!(one["tips"][0]["squashed"], squash1.as_str(), "{one}");
    assert!(repairs_of(&report, &ids[0]).contains(&"close_delivered_task".to_string()));
    assert_eq!(observation(&report, &ids[1])["state"], "pending");
    assert_eq!(
        observation(&report, &ids[2])["state"],
        "pending",
        "a branch that moved on after the squash is not delivered"
    );

    let plan = ok(&repo, &CLEANUP);
    let c1 = candidate(&plan, "refs/heads/dacli/001-work-1");
    assert_eq!(c1["action"], "retire", "{c1}");
    for kept in ["refs/heads/dacli/002-work-2", "refs/heads/dacli/003-work-3"] {
        assert_eq!(candidate(&plan, kept)["keep_reason"], "unique_commits");
    }
    let (code, applied) = apply(&repo, &CLEANUP, &plan);
    assert_eq!(code, 0, "{applied}");
    assert_eq!(applied["data"]["outcome"], "completed");
    assert!(!branch_exists(d, "refs/heads/dacli/001-work-1"));
    assert!(branch_exists(d, "refs/heads/dacli/003-work-3"));
}

#[test]
fn a_reopened_task_is_judged_by_the_work_after_its_reopening() {
    let (repo, ids) = workspace(1);
    let d = repo.path();
    let base = g(d, &["rev-parse", "main"]);
    let mut s = Stream::new();
    let branch = "refs/heads/dacli/001-work-1";
    let work = s.commit(branch, &base, None, "w/1.txt", "work");
    s.commit("refs/heads/main", &base, Some(&work), "w/1.txt", "merge 1");
    s.import(d);
    ok(&repo, &["task", "check", "1", "--n", "1"]);
    ok(&repo, &["task", "done", "1"]);
    let first = ok(&repo, &RECONCILE);
    assert_eq!(observation(&first, &ids[0])["state"], "delivered");

    ok(
        &repo,
        &["task", "reopen", "1", "--reason", "the fix was incomplete"],
    );
    let reopened = ok(&repo, &RECONCILE);
    let o = observation(&reopened, &ids[0]);
    assert_eq!(o["status"], "open", "{o}");
    assert_eq!(
        (o["state"].as_str(), o["why"].as_str()),
        (Some("no_branch"), Some("work_before_reopen")),
        "{o}"
    );
    assert!(
        repairs_of(&reopened, &ids[0]).is_empty(),
        "no `finish` is queued for the old merge: {reopened}"
    );

    // New work after the reopening (the pinned clock is 2026-03-02), merged: delivered again.
    let date = "2026-03-03T10:00:00Z";
    g_at(d, &["checkout", "-q", "dacli/001-work-1"], date);
    std::fs::write(d.join("w/1.txt"), "fixed\n").unwrap();
    g_at(d, &["commit", "-qam", "the rest of the fix"], date);
    g_at(d, &["checkout", "-q", "main"], date);
    g_at(
        d,
        &[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "merge 1 again",
            "dacli/001-work-1",
        ],
        date,
    );
    let again = ok(&repo, &RECONCILE);
    let o = observation(&again, &ids[0]);
    assert_eq!(o["state"], "delivered", "{o}");
    assert!(repairs_of(&again, &ids[0]).contains(&"close_delivered_task".to_string()));
}

fn evidence_files(repo: &Repo) -> usize {
    std::fs::read_dir(repo.ws("evidence/cleanup"))
        .map(|rd| rd.count())
        .unwrap_or(0)
}

#[test]
fn a_partial_cleanup_fails_as_a_conflict_and_a_retry_writes_no_new_evidence() {
    let (repo, _) = workspace(2);
    let d = repo.path();
    let base = g(d, &["rev-parse", "main"]);
    let mut s = Stream::new();
    s.merged(&base, 1..=2);
    s.import(d);
    let args = CLEANUP;
    let plan = ok(&repo, &args);
    assert_eq!(retiring(&plan).len(), 2, "{plan}");
    let digest = plan["data"]["plan_digest"].as_str().unwrap().to_string();
    let mut applying: Vec<&str> = args.to_vec();
    applying.extend(["--apply", "--digest", &digest]);

    // The apply stops after its plan file; meanwhile branch 2 moves, then the apply resumes.
    let mut paused = applying.clone();
    paused.push("--json");
    let mut child = repo
        .std_command(&paused)
        .env("DACLI_TEST_PAUSE_AFTER_STEP", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut waited = 0;
    while std::fs::read_dir(repo.ws("txn"))
        .map(|rd| rd.count())
        .unwrap_or(0)
        == 0
    {
        assert!(waited < 3000, "the apply never started");
        std::thread::sleep(std::time::Duration::from_millis(10));
        waited += 1;
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    child.kill().unwrap();
    child.wait().unwrap();
    g(d, &["checkout", "-q", "dacli/002-work-2"]);
    std::fs::write(d.join("late.txt"), "late\n").unwrap();
    g(d, &["add", "late.txt"]);
    g(d, &["commit", "-qm", "late work"]);
    g(d, &["checkout", "-q", "main"]);

    let (code, doc) = repo.json(&applying);
    assert_eq!(code, 5, "a partial apply is a conflict: {doc}");
    assert_eq!(doc["error"]["code"], "E_PARTIAL", "{doc}");
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(message.contains("refs/heads/dacli/002-work-2"), "{message}");
    assert!(
        doc["error"]["hints"][0].as_str().unwrap().contains("--txn"),
        "{doc}"
    );
    assert!(!branch_exists(d, "refs/heads/dacli/001-work-1"));
    assert!(branch_exists(d, "refs/heads/dacli/002-work-2"));
    assert_eq!(evidence_files(&repo), 1);

    // Retrying changes nothing and writes no second evidence record.
    for _ in 0..2 {
        let (code, again) = repo.json(&applying);
        assert_eq!(code, 5, "{again}");
        assert_eq!(evidence_files(&repo), 1);
    }
}

#[test]
fn remote_branches_without_a_linked_github_repository_are_listed_and_kept() {
    let (repo, _) = workspace(1);
    let d = repo.path();
    let base = g(d, &["rev-parse", "main"]);
    let mut s = Stream::new();
    let work = s.commit(
        "refs/remotes/origin/dacli/001-work-1",
        &base,
        None,
        "w/1.txt",
        "work",
    );
    s.commit("refs/heads/main", &base, Some(&work), "w/1.txt", "merge");
    s.import(d);
    let plan = ok(
        &repo,
        &[
            "repo",
            "cleanup",
            "--no-fetch",
            "--include",
            "remote_branches",
        ],
    );
    let c = candidate(&plan, "refs/remotes/origin/dacli/001-work-1");
    assert_eq!(c["kind"], "remote_branch");
    assert_eq!(c["action"], "keep", "{c}");
    let pr = c["proofs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["predicate"] == "no_open_pr_uses_it")
        .unwrap();
    assert_eq!(pr["result"], "unknown");
    assert!(
        pr["detail"]
            .as_str()
            .unwrap()
            .contains("no GitHub repository is linked"),
        "{pr}"
    );
}

/// Progress of a long observation is for a terminal only: through a pipe (a script, an
/// agent, CI) neither the cleanup preview over thousands of branches nor a reconcile writes
/// a spinner or a progress line to stderr, in text or JSON.
#[test]
fn observing_many_branches_shows_no_progress_through_a_pipe() {
    let (repo, _) = workspace(2);
    let d = repo.path();
    let base = g(d, &["rev-parse", "main"]);
    let mut s = Stream::new();
    let work = s.commit(
        "refs/heads/dacli/001-work-1",
        &base,
        None,
        "w/1.txt",
        "work",
    );
    for i in 0..2_000 {
        s.text
            .push_str(&format!("reset refs/heads/dacli/x-{i:04}\nfrom {work}\n\n"));
    }
    fast_import(d, &s.text);
    let mut json = CLEANUP.to_vec();
    json.push("--json");
    for args in [CLEANUP.to_vec(), json, RECONCILE.to_vec()] {
        let out = repo.dacli(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains('\r') && !err.contains("proving") && !err.contains("observing"),
            "{args:?} wrote progress to a pipe: {err:?}"
        );
    }
    let plan = ok(&repo, &CLEANUP);
    assert_eq!(
        plan["data"]["candidates"].as_array().unwrap().len(),
        2_001,
        "every branch is observed"
    );
}
