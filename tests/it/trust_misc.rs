//! Issue 22, holes 2, 9 and 10, tried as a hostile agent would: a forged event behind a warm
//! cache, ignored files lost to cleanup, task worktrees swept into `git add -A`, locks doctor
//! called orphans, an unusable cache that stopped writes, and a `.dacli` that is a file.

use std::io::Write;
use std::path::Path;
use std::process::Command as Std;
use std::time::Duration;

use serde_json::Value;

use crate::lifecycle::agent;
use crate::support::{Repo, one_json};

fn ok(repo: &Repo, args: &[&str]) -> Value {
    let (code, doc) = repo.json(args);
    assert_eq!(code, 0, "{args:?}: {doc}");
    doc
}

fn as_agent(repo: &Repo, token: &str, args: &[&str]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.push("--json");
    let out = repo.dacli(&all).env("DACLI_AGENT", token).output().unwrap();
    (out.status.code().unwrap_or(-1), one_json(&out.stdout))
}

/// Every run's stdout and stderr together, and its exit code.
fn all_output(repo: &Repo, args: &[&str]) -> (i32, String) {
    let out = repo.dacli(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn has_checksum_warning(doc: &Value, file: &str) -> bool {
    doc["warnings"].as_array().is_some_and(|ws| {
        ws.iter().any(|w| {
            w["reason"] == "checksum" && w["path"].as_str().is_some_and(|p| p.ends_with(file))
        })
    })
}

/// Git in `dir` with a fixed identity and no user configuration.
fn g(dir: &Path, args: &[&str]) -> String {
    let out = Std::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

// ---------------------------------------------------------------------------------------
// Hole 2: a warm cache must not let a rewritten event through.
// ---------------------------------------------------------------------------------------

/// How the attacker rewrites the event file.
#[derive(Clone, Copy, Debug)]
struct Forgery {
    /// The forged text, in place of `a comment`.
    text: &'static str,
    /// Whether the file's modification time is put back afterwards (`touch -r`).
    restore_mtime: bool,
}

/// A non-owner comments; `status` runs twice, 3 s apart, so that the derived cache is warm
/// and trusted; the event file is rewritten in place (same inode); then the owner syncs.
/// Whatever is applied, answered or shown must be the verified content or nothing, and the
/// file must be reported with reason `checksum`, as a cold read reports it.
fn forged_event_is_never_applied_or_shown(f: Forgery) {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    ok(&repo, &["task", "add", "Shim", "--accept", "works"]);
    let (_, ro) = agent(&repo, "reviewer", 31, "ro");
    let (code, said) = as_agent(&repo, &ro, &["task", "comment", "1", "a comment"]);
    assert_eq!(code, 0, "{said}");
    let id = said["data"]["event"].as_str().unwrap().to_string();
    let file = walk_files(&repo.ws("events"))
        .into_iter()
        .find(|p| p.to_string_lossy().contains(&id))
        .expect("the comment's file");
    let name = file.file_name().unwrap().to_string_lossy().into_owned();

    ok(&repo, &["status"]);
    std::thread::sleep(Duration::from_secs(3));
    ok(&repo, &["status"]);
    // The warm cache now holds the verified extract; the pending comment folds in.
    let shown = ok(&repo, &["task", "show", "1"]);
    assert!(shown.to_string().contains("a comment"), "{shown}");

    // The rewrite keeps the inode (an in-place write), and with `restore_mtime` the mtime.
    let before = std::fs::metadata(&file).unwrap();
    let ino = {
        use std::os::unix::fs::MetadataExt;
        before.ino()
    };
    let original = std::fs::read_to_string(&file).unwrap();
    assert!(original.contains("a comment"));
    let forged = original.replace("a comment", f.text);
    {
        let mut w = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&file)
            .unwrap();
        w.write_all(forged.as_bytes()).unwrap();
        if f.restore_mtime {
            w.set_modified(before.modified().unwrap()).unwrap();
        }
    }
    {
        use std::os::unix::fs::MetadataExt;
        let after = std::fs::metadata(&file).unwrap();
        assert_eq!(after.ino(), ino, "rewritten in place");
        if f.restore_mtime {
            assert_eq!(after.modified().unwrap(), before.modified().unwrap());
        }
    }

    // Shown: nowhere, by any reader.
    for args in [
        &["task", "show", "1"][..],
        &["status"][..],
        &["events", "list"][..],
        &["events", "tail"][..],
        &["context", "1"][..],
        &["task", "list"][..],
    ] {
        for json in [true, false] {
            let mut a = args.to_vec();
            if json {
                a.push("--json");
            }
            let (_, text) = all_output(&repo, &a);
            assert!(
                !text.contains(f.text),
                "{a:?} shows the forged text ({f:?}):\n{text}"
            );
        }
    }
    let (_, listed) = repo.json(&["events", "list"]);
    assert!(has_checksum_warning(&listed, &name), "{listed}");
    assert!(
        !listed["data"]["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["id"] == id.as_str()),
        "the forged event is not listed as an event: {listed}"
    );
    let (code, showed) = repo.json(&["events", "show", &id]);
    assert_eq!(code, 1, "{showed}");
    assert_eq!(showed["error"]["code"], "E_MALFORMED", "{showed}");
    assert!(
        showed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("checksum"),
        "{showed}"
    );
    let (_, folded) = repo.json(&["task", "show", "1"]);
    assert!(has_checksum_warning(&folded, &name), "{folded}");

    // Applied: never. The owner's sync reports the file as `checksum` and receipts nothing.
    let synced = ok(&repo, &["sync"]);
    assert!(has_checksum_warning(&synced, &name), "{synced}");
    assert_eq!(synced["data"]["summary"]["applied"], 0, "{synced}");
    let task_file = walk_files(&repo.ws("projects"))
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with("-shim.md"))
        .unwrap();
    let task_text = std::fs::read_to_string(&task_file).unwrap();
    assert!(
        !task_text.contains(f.text) && !task_text.contains(&id),
        "sync wrote the forged event into the task ({f:?}):\n{task_text}"
    );
    for e in walk_files(&repo.ws("events")) {
        let text = std::fs::read_to_string(&e).unwrap();
        if text.contains("event_kind = \"applied\"") {
            assert!(
                !text.contains(&id),
                "a receipt settles the forged event:\n{text}"
            );
        }
    }

    // A cold read (the cache deleted) gives the same answers.
    std::fs::remove_dir_all(repo.ws("cache")).unwrap();
    let cold = ok(&repo, &["sync"]);
    assert!(has_checksum_warning(&cold, &name), "{cold}");
    assert_eq!(cold["data"]["summary"]["applied"], 0);
    let (_, text) = all_output(&repo, &["task", "show", "1"]);
    assert!(!text.contains(f.text), "{text}");
    assert!(
        !std::fs::read_to_string(&task_file)
            .unwrap()
            .contains(f.text)
    );
}

fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk_files(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn forged_event_same_length_mtime_restored_is_rejected_warm() {
    forged_event_is_never_applied_or_shown(Forgery {
        text: "b COMMENT",
        restore_mtime: true,
    });
}

#[test]
fn forged_event_same_length_new_mtime_is_rejected_warm() {
    forged_event_is_never_applied_or_shown(Forgery {
        text: "b COMMENT",
        restore_mtime: false,
    });
}

#[test]
fn forged_event_other_length_is_rejected_warm() {
    forged_event_is_never_applied_or_shown(Forgery {
        text: "b COMMENT, forged and longer",
        restore_mtime: true,
    });
}

// ---------------------------------------------------------------------------------------
// Hole 9: cleanup and ignored files; `worktrees/` in `.dacli/.gitignore`.
// ---------------------------------------------------------------------------------------

/// A workspace committed to git, with a done task whose branch `dacli/001-done-work` is
/// checked out in `.dacli/worktrees/done` and holds an ignored `.env`.
fn done_worktree_with_env() -> Repo {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "Shop", "--slug", "checkout"]);
    ok(&repo, &["task", "add", "Done work", "--accept", "works"]);
    ok(&repo, &["task", "check", "1", "--n", "1"]);
    ok(&repo, &["task", "done", "1"]);
    let d = repo.path();
    g(d, &["add", "-A"]);
    g(d, &["commit", "-qm", "workspace"]);
    g(d, &["checkout", "-q", "-b", "dacli/001-done-work"]);
    std::fs::write(d.join("e.txt"), "work\n").unwrap();
    g(d, &["add", "e.txt"]);
    g(d, &["commit", "-qm", "work"]);
    g(d, &["checkout", "-q", "main"]);
    g(
        d,
        &[
            "worktree",
            "add",
            "-q",
            ".dacli/worktrees/done",
            "dacli/001-done-work",
        ],
    );
    let exclude = d.join(".git/info/exclude");
    let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
    text.push_str(".env\n");
    std::fs::write(&exclude, text).unwrap();
    std::fs::write(d.join(".dacli/worktrees/done/.env"), "SECRET=1\n").unwrap();
    // dacli run inside the worktree leaves its own machine-local data there: derived, never
    // a reason to keep the worktree, and not listed.
    for rel in [
        ".dacli/cache/events.bin",
        ".dacli/.locks/config.lock",
        ".dacli/runs/x.json",
    ] {
        let p = d.join(".dacli/worktrees/done").join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "derived\n").unwrap();
    }
    repo
}

fn candidate<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["data"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no candidate {id} in {doc}"))
}

#[test]
fn cleanup_keeps_a_worktree_holding_ignored_files() {
    let repo = done_worktree_with_env();
    let env = repo.at(".dacli/worktrees/done/.env");
    let preview = ok(&repo, &["repo", "cleanup", "--no-fetch"]);
    let wt = candidate(&preview, "done");
    assert_eq!(wt["action"], "keep", "{wt}");
    assert_eq!(wt["keep_reason"], "ignored_files", "{wt}");
    assert_eq!(wt["ignored_files"][0]["path"], ".env", "{wt}");
    // Applying that plan keeps the worktree and the file.
    if let Some(digest) = preview["data"]["plan_digest"].as_str() {
        let (code, applied) = repo.json(&[
            "repo",
            "cleanup",
            "--no-fetch",
            "--apply",
            "--digest",
            digest,
        ]);
        assert!(code == 0 || code == 3, "{applied}");
    }
    assert_eq!(std::fs::read_to_string(&env).unwrap(), "SECRET=1\n");
    let list = g(repo.path(), &["worktree", "list", "--porcelain"]);
    assert!(list.contains("worktrees/done"), "{list}");
}

#[test]
fn cleanup_deletes_ignored_files_only_as_a_plan_that_lists_them() {
    let repo = done_worktree_with_env();
    let d = repo.path();
    let env = d.join(".dacli/worktrees/done/.env");
    let preview = ok(
        &repo,
        &["repo", "cleanup", "--no-fetch", "--discard-ignored"],
    );
    let wt = candidate(&preview, "done");
    assert_eq!(wt["action"], "retire", "{wt}");
    assert_eq!(wt["ignored_files"][0]["path"], ".env", "{wt}");
    assert_eq!(wt["ignored_files"][0]["bytes"], 9, "{wt}");
    assert!(
        wt["ignored_files"][0]["sha256"]
            .as_str()
            .is_some_and(|h| h.starts_with("sha256:")),
        "{wt}"
    );
    let digest = preview["data"]["plan_digest"].as_str().unwrap().to_string();

    // The set changes between preview and apply: a second ignored file. Refused as drift,
    // nothing removed.
    std::fs::write(d.join(".dacli/worktrees/done/.env.local"), "TOKEN=2\n").unwrap();
    let mut exclude = std::fs::read_to_string(d.join(".git/info/exclude")).unwrap();
    exclude.push_str(".env.local\n");
    std::fs::write(d.join(".git/info/exclude"), exclude).unwrap();
    let (code, drifted) = repo.json(&[
        "repo",
        "cleanup",
        "--no-fetch",
        "--discard-ignored",
        "--apply",
        "--digest",
        &digest,
    ]);
    assert_eq!(code, 3, "{drifted}");
    assert_eq!(drifted["refused"]["policy"], "plan.drifted", "{drifted}");
    assert!(env.exists() && d.join(".dacli/worktrees/done/.env.local").exists());

    // A listed file rewritten in place with the same size and its old modification time is
    // drift too: its content digest changed.
    std::fs::remove_file(d.join(".dacli/worktrees/done/.env.local")).unwrap();
    let old = std::fs::metadata(&env).unwrap().modified().unwrap();
    std::fs::write(&env, "SECRET=2\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&env)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let (code, drifted) = repo.json(&[
        "repo",
        "cleanup",
        "--no-fetch",
        "--discard-ignored",
        "--apply",
        "--digest",
        &digest,
    ]);
    assert_eq!(code, 3, "{drifted}");
    assert_eq!(std::fs::read_to_string(&env).unwrap(), "SECRET=2\n");

    // A changed size of a listed file is drift too.
    std::fs::write(&env, "SECRET=12\n").unwrap();
    let (code, drifted) = repo.json(&[
        "repo",
        "cleanup",
        "--no-fetch",
        "--discard-ignored",
        "--apply",
        "--digest",
        &digest,
    ]);
    assert_eq!(code, 3, "{drifted}");
    assert!(env.exists());

    // The plan that lists exactly what is there is applied: the worktree goes, with it.
    let preview = ok(
        &repo,
        &["repo", "cleanup", "--no-fetch", "--discard-ignored"],
    );
    let digest = preview["data"]["plan_digest"].as_str().unwrap();
    assert_eq!(candidate(&preview, "done")["ignored_files"][0]["bytes"], 10);
    let applied = ok(
        &repo,
        &[
            "repo",
            "cleanup",
            "--no-fetch",
            "--discard-ignored",
            "--apply",
            "--digest",
            digest,
        ],
    );
    assert_eq!(candidate(&applied, "done")["result"], "done", "{applied}");
    assert!(!env.exists());
}

#[test]
fn task_worktrees_are_ignored_by_the_workspace_repository() {
    let repo = done_worktree_with_env();
    let d = repo.path();
    // `git add -A` must not add the worktree as an embedded repository.
    g(d, &["add", "-A"]);
    let staged = g(d, &["diff", "--cached", "--name-only"]);
    assert!(
        !staged.contains("worktrees"),
        "a task worktree was staged: {staged}"
    );
    let ignored = Std::new("git")
        .current_dir(d)
        .args(["check-ignore", "-q", ".dacli/worktrees/done"])
        .status()
        .unwrap();
    assert!(ignored.success(), "worktrees/ is ignored");
}

#[test]
fn doctor_warns_and_fix_adds_the_worktrees_line() {
    let repo = Repo::initialized();
    let gi = repo.ws(".gitignore");
    // A workspace written before the line existed, with a line of the user's own.
    std::fs::write(
        &gi,
        "# written by dacli init\nruns/\n.locks/\ncache/\n.dacli-tmp-*\nmine/\n",
    )
    .unwrap();
    let doc = ok(&repo, &["doctor"]);
    let check = doc["data"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "gitignore")
        .unwrap()
        .clone();
    assert_eq!(check["status"], "warn", "{check}");
    assert!(check.to_string().contains("worktrees/"), "{check}");
    assert!(!std::fs::read_to_string(&gi).unwrap().contains("worktrees/"));
    let fixed = ok(&repo, &["doctor", "--fix"]);
    assert!(fixed["data"]["fixed"].as_u64().unwrap() >= 1, "{fixed}");
    assert_eq!(
        std::fs::read_to_string(&gi).unwrap(),
        "# written by dacli init\nruns/\n.locks/\ncache/\n.dacli-tmp-*\nmine/\nworktrees/\n"
    );
    let again = ok(&repo, &["doctor"]);
    let check = again["data"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "gitignore")
        .unwrap()
        .clone();
    assert_eq!(check["status"], "ok", "{check}");
}

#[test]
fn the_bundled_example_ignores_worktrees() {
    let text =
        std::fs::read_to_string(crate::support::repo_root().join(".dacli-example/.gitignore"))
            .unwrap();
    assert!(text.lines().any(|l| l == "worktrees/"), "{text}");
}

// ---------------------------------------------------------------------------------------
// Hole 10: lock kinds, an unusable cache, `.dacli` as a file.
// ---------------------------------------------------------------------------------------

#[test]
fn doctor_knows_every_lock_kind_dacli_creates() {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    ok(&repo, &["task", "add", "One", "--accept", "ok"]);
    let (id, _) = agent(&repo, "builder", 41, "rw");
    // The kinds the code takes; each names something that exists.
    for stem in [
        "config".to_string(),
        "archive".to_string(),
        "project-checkout".into(),
        "seq-checkout".into(),
        "glossary-checkout".into(),
        "moves-checkout".into(),
        format!("agent-{id}"),
        format!("mcp-{id}"),
        "mcp-a-root".into(),
    ] {
        std::fs::write(repo.ws(&format!(".locks/{stem}.lock")), "").unwrap();
    }
    let doc = ok(&repo, &["doctor"]);
    let orphans = doc["data"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "orphan_locks")
        .unwrap()
        .clone();
    assert_eq!(orphans["status"], "ok", "{orphans}");
    // A lock naming something gone is still an orphan.
    std::fs::write(repo.ws(".locks/moves-gone.lock"), "").unwrap();
    std::fs::write(
        repo.ws(".locks/mcp-a-gone-01KJPX6ZT81TTNRTABC9KB0099.lock"),
        "",
    )
    .unwrap();
    let doc = ok(&repo, &["doctor"]);
    let orphans = doc["data"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "orphan_locks")
        .unwrap()
        .clone();
    assert_eq!(orphans["count"], 2, "{orphans}");
}

#[test]
fn mcp_session_lock_is_not_an_orphan() {
    // The lock a real MCP session takes (`mcp serve`), not one written by hand.
    let repo = Repo::initialized();
    let mut child = repo
        .std_command(&["mcp", "serve"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut waited = 0;
    while waited < 100
        && !std::fs::read_dir(repo.ws(".locks"))
            .map(|rd| {
                rd.flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with("mcp-"))
            })
            .unwrap_or(false)
    {
        std::thread::sleep(Duration::from_millis(50));
        waited += 1;
    }
    drop(child.stdin.take());
    let _ = child.wait();
    let locks: Vec<String> = std::fs::read_dir(repo.ws(".locks"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if !locks.iter().any(|l| l.starts_with("mcp-")) {
        // This build takes the session lock on the first call, not at start: nothing to judge.
        return;
    }
    let doc = ok(&repo, &["doctor"]);
    let orphans = doc["data"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "orphan_locks")
        .unwrap()
        .clone();
    assert_eq!(orphans["status"], "ok", "{locks:?} {orphans}");
}

/// `task add` with `cache/` made unusable by `break_it`: it succeeds with a warning naming
/// the cache, and every listing gives what it gives with a healthy cache.
fn task_add_survives(break_it: impl FnOnce(&Path)) {
    let broken = Repo::initialized();
    let healthy = Repo::initialized();
    for repo in [&broken, &healthy] {
        ok(repo, &["project", "add", "P", "--slug", "checkout"]);
        ok(repo, &["task", "add", "First", "--accept", "ok"]);
    }
    let _ = std::fs::remove_dir_all(broken.ws("cache"));
    break_it(&broken.ws("cache"));
    let (code, added) = broken.json(&["task", "add", "Second", "--accept", "ok"]);
    assert_eq!(code, 0, "{added}");
    assert!(
        added["warnings"]
            .as_array()
            .is_some_and(|w| w.iter().any(|w| w["path"] == ".dacli/cache")),
        "a warning names the cache: {added}"
    );
    let out = broken
        .dacli(&["task", "add", "Third", "--accept", "ok"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(".dacli/cache"),
        "the warning is on stderr"
    );
    for t in ["Second", "Third"] {
        ok(&healthy, &["task", "add", t, "--accept", "ok"]);
    }
    for args in [&["task", "list"][..], &["status"][..], &["next"][..]] {
        let pick = |repo: &Repo| -> Vec<String> {
            let (_, text) = all_output(repo, args);
            let mut lines: Vec<String> = text
                .lines()
                .filter(|l| !l.starts_with("warning:") && !l.contains("cache"))
                .map(str::to_string)
                .collect();
            lines.sort();
            lines
        };
        if args == ["status"] {
            // The workspace name is the temp directory's.
            let (_, b) = broken.json(args);
            let (_, h) = healthy.json(args);
            assert_eq!(b["data"]["projects"], h["data"]["projects"]);
            continue;
        }
        assert_eq!(pick(&broken), pick(&healthy), "{args:?}");
    }
    // No temporary file is left behind by the staging.
    let leftovers: Vec<_> = walk_files(&broken.ws(""))
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".dacli-tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn task_add_survives_a_cache_that_is_a_file() {
    task_add_survives(|cache| std::fs::write(cache, "not a directory\n").unwrap());
}

#[test]
fn task_add_survives_a_cache_that_is_a_dangling_symlink() {
    task_add_survives(|cache| {
        std::os::unix::fs::symlink("/nonexistent/dacli-cache", cache).unwrap();
    });
}

#[test]
fn task_add_survives_a_read_only_cache() {
    // Root writes into a read-only directory anyway; the case is only real for other users.
    let probe = tempfile::tempdir().unwrap();
    let dir = probe.path().join("ro");
    std::fs::create_dir(&dir).unwrap();
    set_mode(&dir, 0o555);
    let root_like = std::fs::write(dir.join("x"), "").is_ok();
    set_mode(&dir, 0o755);
    if root_like {
        return;
    }
    task_add_survives(|cache| {
        std::fs::create_dir(cache).unwrap();
        set_mode(cache, 0o555);
    });
}

fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_dacli_file_gets_one_answer_from_status_and_init() {
    let repo = Repo::new();
    std::fs::write(repo.path().join(".dacli"), "a file, not a workspace\n").unwrap();
    let (s_code, status) = repo.json(&["status"]);
    let (i_code, init) = repo.json(&["init"]);
    assert_eq!(s_code, i_code, "{status} {init}");
    assert_eq!(status["error"], init["error"], "the same answer");
    assert_eq!(status["error"]["code"], "E_NOT_A_WORKSPACE", "{status}");
    let message = status["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(".dacli") && message.contains("regular file"),
        "{message}"
    );
    assert!(
        status["error"]["hints"][0]
            .as_str()
            .unwrap()
            .contains("dacli init"),
        "says what to do: {status}"
    );
    // From a subdirectory too, and nothing was written.
    std::fs::create_dir(repo.path().join("sub")).unwrap();
    let out = crate::support::dacli()
        .current_dir(repo.path().join("sub"))
        .args(["status", "--json"])
        .output()
        .unwrap();
    assert_eq!(one_json(&out.stdout)["error"]["code"], "E_NOT_A_WORKSPACE");
    assert_eq!(
        std::fs::read_to_string(repo.path().join(".dacli")).unwrap(),
        "a file, not a workspace\n"
    );
}

/// The MCP server is the long-lived reader: it keeps what it parsed between calls. A comment
/// it has already shown, rewritten in place with its mtime put back, is neither shown by the
/// next call nor applied by `sync` through the `cli` tool.
#[test]
fn forged_event_is_never_shown_or_applied_by_a_warm_mcp_server() {
    use serde_json::json;
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    ok(&repo, &["task", "add", "Shim", "--accept", "works"]);
    let (_, ro) = agent(&repo, "reviewer", 32, "ro");
    let (_, said) = as_agent(&repo, &ro, &["task", "comment", "1", "a comment"]);
    let id = said["data"]["event"].as_str().unwrap().to_string();
    let file = walk_files(&repo.ws("events"))
        .into_iter()
        .find(|p| p.to_string_lossy().contains(&id))
        .unwrap();
    ok(&repo, &["status"]);
    std::thread::sleep(Duration::from_secs(3));
    ok(&repo, &["status"]);

    let mut s = crate::mcp::Server::start_with(repo.path(), None, &[]);
    s.initialize("2025-06-18");
    s.call("get_context", json!({"ref": "1"}));
    let shown = s.call("cli", json!({"argv": ["task", "show", "1"]}));
    assert!(shown.to_string().contains("a comment"), "{shown}");

    let before = std::fs::metadata(&file).unwrap();
    let forged = std::fs::read_to_string(&file)
        .unwrap()
        .replace("a comment", "b COMMENT");
    {
        let mut w = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&file)
            .unwrap();
        w.write_all(forged.as_bytes()).unwrap();
        w.set_modified(before.modified().unwrap()).unwrap();
    }
    for (tool, args) in [
        ("get_context", json!({"ref": "1"})),
        ("status", json!({})),
        ("list_tasks", json!({})),
        ("cli", json!({"argv": ["task", "show", "1"]})),
        ("cli", json!({"argv": ["events", "list"]})),
        ("cli", json!({"argv": ["sync"]})),
        ("cli", json!({"argv": ["task", "show", "1"]})),
    ] {
        let r = s.call(tool, args.clone());
        assert!(
            !r.to_string().contains("b COMMENT"),
            "{tool} {args} shows or applies the forged text: {r}"
        );
    }
    let synced = s.call("cli", json!({"argv": ["sync"]}));
    assert!(synced.to_string().contains("checksum"), "{synced}");
    let _ = s.finish();
    let task_file = walk_files(&repo.ws("projects"))
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with("-shim.md"))
        .unwrap();
    assert!(
        !std::fs::read_to_string(task_file)
            .unwrap()
            .contains("COMMENT")
    );
}

/// The listing of ignored files runs `git status`, which runs repository code (an fsmonitor
/// hook): it never sees the agent's token.
#[test]
fn the_ignored_files_listing_hands_git_hooks_no_token() {
    let repo = done_worktree_with_env();
    let d = repo.path();
    let spy = d.join("spy.sh");
    let seen = d.join("seen.txt");
    std::fs::write(
        &spy,
        format!(
            "#!/bin/sh\necho \"[$DACLI_AGENT]\" >> '{}'\n",
            seen.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&spy, std::fs::Permissions::from_mode(0o755)).unwrap();
    g(d, &["config", "core.fsmonitor", &spy.to_string_lossy()]);
    let out = repo
        .dacli(&["agent", "spawn", "--grant", "rw", "--json"])
        .output()
        .unwrap();
    let spawned: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let token = spawned["data"]["token"]
        .as_str()
        .expect("token")
        .to_string();
    let out = repo
        .dacli(&["repo", "cleanup", "--no-fetch", "--json"])
        .env("DACLI_AGENT", &token)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let seen = std::fs::read_to_string(&seen).expect("git ran the fsmonitor hook");
    assert!(!seen.contains(&token), "{seen}");
    assert!(seen.contains("[]"), "{seen}");
}
